// cairn — the goal tree as Graphviz DOT: one box per goal (gloss, predicate, status, reason), coloured by status,
// and an edge from each composite goal to its children labelled AND or OR (`dot -Tsvg goals.dot > goals.svg`).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

#include "cairn/detail/text.hpp"
#include "cairn/goals/goal.hpp"
#include "cairn/goals/goal_stack.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

namespace detail {

/// `s` as the inside of a DOT double-quoted string: quotes and backslashes escaped, line breaks as `\n`.
std::string dot_escape(std::string_view s);

std::string_view dot_color(GoalStatus s);

}  // namespace detail

/// The goal tree of `stack` in DOT. Goals on the stack are drawn with a bold border, the top one doubly so.
std::string to_dot(const GoalStack& stack, std::string_view graph_name = "goals");

CAIRN_END_NAMESPACE

#ifndef CAIRN_COMPILED_LIB
#include "cairn/goals/dot-inl.hpp"
#endif
