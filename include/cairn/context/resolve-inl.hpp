// cairn — the function bodies of cairn/context/resolve.hpp (docs/api.md, "Compiled mode"). Header-only, the
// default, that header includes this file and CAIRN_INLINE is `inline`; with CAIRN_COMPILED_LIB they are
// compiled once, into cairn::compiled (src/compiled/), and the header only declares them.
#pragma once

#include "cairn/context/resolve.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

CAIRN_INLINE bool is_valid_artifact_name(std::string_view name) noexcept {
  if (name.empty() || name.size() > max_artifact_name_length) return false;
  if (!detail::is_ascii_alpha(name[0]) && name[0] != '_') return false;
  for (char c : name) {
    if (!detail::is_ascii_alpha(c) && !detail::is_ascii_digit(c) && c != '_' && c != '-') return false;
  }
  return true;
}

CAIRN_INLINE std::optional<Reference> parse_reference(std::string_view text) noexcept {
  if (text.size() < 2 || text[0] != '@' || text[1] == '@') return std::nullopt;
  const std::size_t hash = text.find('#');
  const std::string_view name = text.substr(1, hash == std::string_view::npos ? std::string_view::npos : hash - 1);
  if (!is_valid_artifact_name(name)) return std::nullopt;
  Reference ref{name, std::nullopt};
  if (hash != std::string_view::npos) ref.pointer = text.substr(hash + 1);
  return ref;
}

namespace detail {
CAIRN_INLINE std::string where_text(const std::string& pointer) {
  return pointer.empty() ? std::string("the top level") : excerpt(pointer, 500);
}

CAIRN_INLINE limit_exceeded too_deep(int max_depth) {
  return limit_exceeded(fmt::format("resolve: input nesting is deeper than the limit of {} levels", max_depth));
}

CAIRN_INLINE bool deeper_than(const nlohmann::json& value, int max_depth) {
  struct Level {
    const nlohmann::json* node;
    std::size_t index;                                   // arrays: next element
    nlohmann::json::object_t::const_iterator next, end;  // objects: next member
  };
  std::vector<Level> levels;
  auto open = [&levels](const nlohmann::json& node) {
    if (node.is_object()) {
      const auto& obj = node.get_ref<const nlohmann::json::object_t&>();
      levels.push_back(Level{&node, 0, obj.begin(), obj.end()});
    } else {
      levels.push_back(Level{&node, 0, {}, {}});
    }
  };
  open(value);
  while (!levels.empty()) {
    Level& l = levels.back();
    const nlohmann::json* child = nullptr;
    if (l.node->is_object()) {
      if (l.next != l.end) child = &(l.next++)->second;
    } else {
      const auto& arr = l.node->get_ref<const nlohmann::json::array_t&>();
      if (l.index < arr.size()) child = &arr[l.index++];
    }
    if (!child) {
      levels.pop_back();
    } else if (child->is_structured()) {
      if (static_cast<int>(levels.size()) >= max_depth) return true;
      open(*child);
    }
  }
  return false;
}

}  // namespace detail

CAIRN_INLINE std::vector<std::string> references(const nlohmann::json& inputs, const ResolveOptions& options) {
  std::vector<std::string> names;
  std::unordered_set<std::string_view> seen;
  std::vector<std::pair<const nlohmann::json*, int>> todo{{&inputs, 0}};
  while (!todo.empty()) {
    const auto [node, depth] = todo.back();
    todo.pop_back();
    if (node->is_string()) {
      if (const auto ref = parse_reference(node->get_ref<const std::string&>())) {
        if (seen.insert(ref->name).second) names.emplace_back(ref->name);
      }
      continue;
    }
    if (!node->is_structured()) continue;
    if (depth >= options.max_depth) throw detail::too_deep(options.max_depth);
    // Pushed in reverse so that the walk visits children in order.
    if (node->is_object()) {
      const auto& obj = node->get_ref<const nlohmann::json::object_t&>();
      for (auto it = obj.rbegin(); it != obj.rend(); ++it) todo.emplace_back(&it->second, depth + 1);
    } else {
      const auto& arr = node->get_ref<const nlohmann::json::array_t&>();
      for (auto it = arr.rbegin(); it != arr.rend(); ++it) todo.emplace_back(&*it, depth + 1);
    }
  }
  return names;
}

CAIRN_END_NAMESPACE
