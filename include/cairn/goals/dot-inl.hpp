// cairn — the function bodies of cairn/goals/dot.hpp (docs/api.md, "Compiled mode"). Header-only, the
// default, that header includes this file and CAIRN_INLINE is `inline`; with CAIRN_COMPILED_LIB they are
// compiled once, into cairn::compiled (src/compiled/), and the header only declares them.
#pragma once

#include "cairn/goals/dot.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

namespace detail {
CAIRN_INLINE std::string dot_escape(std::string_view s) {
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

CAIRN_INLINE std::string_view dot_color(GoalStatus s) {
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

CAIRN_INLINE std::string to_dot(const GoalStack& stack, std::string_view graph_name) {
  std::string out = fmt::format(
      "digraph \"{}\" {{\n  rankdir=TB;\n  node [shape=box, style=\"rounded,filled\", "
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
