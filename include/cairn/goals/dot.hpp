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
inline std::string dot_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': break;
      default: out.push_back(c);
    }
  }
  return out;
}

inline std::string_view dot_color(GoalStatus s) {
  switch (s) {
    case GoalStatus::pending: return "white";
    case GoalStatus::active: return "lightblue";
    case GoalStatus::achieved: return "palegreen";
    case GoalStatus::abandoned: return "lightpink";
    case GoalStatus::blocked: return "khaki";
  }
  return "white";
}

}  // namespace detail

/// The goal tree of `stack` in DOT. Goals on the stack are drawn with a bold border, the top one doubly so.
inline std::string to_dot(const GoalStack& stack, std::string_view graph_name = "goals") {
  std::string out = fmt::format("digraph \"{}\" {{\n  rankdir=TB;\n  node [shape=box, style=\"rounded,filled\", "
                                "fontname=\"Helvetica\"];\n",
                                detail::dot_escape(graph_name));
  const auto& ids = stack.ids();
  std::unordered_map<std::string_view, std::size_t> position;
  for (std::size_t i = 0; i < ids.size(); ++i) position.emplace(ids[i], i);
  for (const Goal& g : stack.goals()) {
    std::string label = fmt::format("{}\n{} · {}", g.gloss, g.predicate.name, to_string(g.status));
    if (!g.reason.empty()) label += "\n" + detail::excerpt(g.reason, 80);
    std::string extra;
    if (const auto it = position.find(g.id); it != position.end()) {
      extra = it->second + 1 == ids.size() ? ", penwidth=3" : ", penwidth=2";
    }
    out += fmt::format("  \"{}\" [label=\"{}\", fillcolor=\"{}\"{}];\n", detail::dot_escape(g.id),
                       detail::dot_escape(label), detail::dot_color(g.status), extra);
  }
  for (const Goal& g : stack.goals()) {
    if (!g.decomposition) continue;
    for (const std::string& c : g.decomposition->children) {
      out += fmt::format("  \"{}\" -> \"{}\" [label=\"{}\"];\n", detail::dot_escape(g.id), detail::dot_escape(c),
                         to_string(g.decomposition->kind));
    }
  }
  out += "}\n";
  return out;
}

CAIRN_END_NAMESPACE
