// cairn — the function bodies of cairn/context/resolve.hpp (docs/api.md, "Compiled mode"). Header-only, the
// default, that header includes this file and CAIRN_INLINE is `inline`; with CAIRN_COMPILED_LIB they are
// compiled once, into cairn::compiled (src/compiled/), and the header only declares them.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/context/resolve.hpp"
#include "cairn/detail/json.hpp"
#include "cairn/detail/text.hpp"
#include "cairn/error.hpp"
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

// The walk of ExecutionContext::resolve (execution_context-inl.hpp), the only user of these templates: they live
// here, with the bodies, so that an includer of resolve.hpp in compiled mode does not parse them.

/// What the references of one resolve call have inserted so far, against ResolveOptions::max_resolved_bytes. The
/// size of each inserted value is measured once per call (values are immutable while the call runs).
struct ResolveBudget {
  std::size_t limit = 0;  // 0: no limit
  std::size_t used = 0;
  std::unordered_map<const nlohmann::json*, std::size_t> sizes;
};

/// One container being walked: the source, the copy being built, and the child being visited.
struct WalkFrame {
  const nlohmann::json* src;
  nlohmann::json* dst;
  nlohmann::json::const_iterator next;  // objects: the member after the current one
  const std::string* key = nullptr;     // objects: the current member's key
  std::size_t index = 0;                // arrays: one past the current element
};

/// One container of a copy being resolved in place, and the child being visited.
struct EditFrame {
  const nlohmann::json* src;  // the container (walk_pointer reads it)
  nlohmann::json::object_t::iterator next, end;
  const std::string* key = nullptr;
  std::size_t index = 0;
};

/// The JSON pointer of the element the walk is at (the current child of every frame).
template <typename Frame>
std::string walk_pointer(const std::vector<Frame>& frames) {
  std::string out;
  for (const Frame& f : frames) {
    if (f.src->is_object()) {
      append_pointer_token(out, *f.key);
    } else {
      out.push_back('/');
      out += std::to_string(f.index - 1);
    }
  }
  return out;
}

/// What one string stands for (itself, itself minus an escaping `@`, or an artifact's value). `lookup(name)`
/// returns the artifact's value or null.
template <typename Lookup, typename Frame>
nlohmann::json resolve_string(const std::string& s, Lookup& lookup, const std::vector<Frame>& frames,
                              ResolveBudget& budget) {
  // Charges what a reference inserts to the budget before it is copied.
  auto charge = [&budget, &frames](std::string_view name, const nlohmann::json& inserted) {
    if (budget.limit == 0) return;
    auto [it, fresh] = budget.sizes.try_emplace(&inserted, 0);
    if (fresh) it->second = json_text_size(inserted);
    if (it->second > budget.limit - budget.used) {
      throw limit_exceeded(fmt::format(
          "resolve: @{} at {} would make the resolved input larger than the limit of {} bytes ({} more bytes on top "
          "of {})",
          name, where_text(walk_pointer(frames)), budget.limit, it->second, budget.used));
    }
    budget.used += it->second;
  };
  if (s.size() < 2 || s[0] != '@') return s;
  if (s[1] == '@') return s.substr(1);
  const auto ref = parse_reference(s);
  if (!ref) return s;
  const nlohmann::json* value = lookup(ref->name);
  if (!value) {
    throw artifact_not_found(fmt::format("Artifact not found: @{} at {}", ref->name, where_text(walk_pointer(frames))));
  }
  if (!ref->pointer) {
    charge(ref->name, *value);
    return *value;
  }
  nlohmann::json::json_pointer pointer;
  try {
    pointer = nlohmann::json::json_pointer(std::string(*ref->pointer));
  } catch (const nlohmann::json::exception& e) {
    std::string why = e.what();
    if (const auto pos = why.find("] "); pos != std::string::npos) why = why.substr(pos + 2);
    throw parse_error(
        fmt::format("Malformed JSON pointer in {} at {}: {}", excerpt(s, 300), where_text(walk_pointer(frames)), why));
  }
  const nlohmann::json* part = nullptr;
  try {
    part = &value->at(pointer);
  } catch (const nlohmann::json::exception&) {
    part = nullptr;  // absent key, index out of range, "-", or a token into a scalar: all "nothing there"
  }
  if (!part) {
    throw not_found(
        fmt::format("Artifact part not found: {} at {}", excerpt(s, 300), where_text(walk_pointer(frames))));
  }
  charge(ref->name, *part);
  return *part;
}

/// Builds the resolved copy member by member with an explicit stack: no recursion at any depth. Used when the
/// depth limit is too high for nlohmann::json's recursive copy to be safe.
template <typename Lookup>
nlohmann::json build_resolved(const nlohmann::json& inputs, Lookup& lookup, const ResolveOptions& options,
                              ResolveBudget& budget) {
  std::vector<WalkFrame> frames;

  auto open = [&frames](const nlohmann::json& src, nlohmann::json& dst) {
    if (src.is_array()) dst.get_ref<nlohmann::json::array_t&>().reserve(src.size());  // elements stay put
    frames.push_back(WalkFrame{&src, &dst, src.cbegin()});
  };
  nlohmann::json out(inputs.type());
  open(inputs, out);
  while (!frames.empty()) {
    WalkFrame& f = frames.back();
    const nlohmann::json* child = nullptr;
    if (f.src->is_object()) {
      if (f.next == f.src->cend()) {
        frames.pop_back();
        continue;
      }
      f.key = &f.next.key();
      child = &f.next.value();
      ++f.next;
    } else {
      const auto& arr = f.src->get_ref<const nlohmann::json::array_t&>();
      if (f.index == arr.size()) {
        frames.pop_back();
        continue;
      }
      child = &arr[f.index++];
    }
    // Build each member in place: a scalar copied, a string resolved, a container opened empty and filled later.
    auto place = [&f](auto&& value) -> nlohmann::json& {
      if (f.dst->is_object()) {
        auto& obj = f.dst->get_ref<nlohmann::json::object_t&>();
        return obj.emplace_hint(obj.end(), *f.key, std::forward<decltype(value)>(value))->second;
      }
      return f.dst->get_ref<nlohmann::json::array_t&>().emplace_back(std::forward<decltype(value)>(value));
    };
    if (child->is_string()) {
      const std::string& s = child->get_ref<const std::string&>();
      if (s.empty() || s[0] != '@') {
        place(*child);
      } else {
        place(resolve_string(s, lookup, frames, budget));
      }
    } else if (child->is_structured()) {
      if (static_cast<int>(frames.size()) >= options.max_depth) throw too_deep(options.max_depth);
      nlohmann::json& slot = place(nlohmann::json(child->type()));
      open(*child, slot);
    } else {
      place(*child);
    }
  }
  return out;
}

/// Replaces the references in `out` (a copy of the input) where they are, with an explicit stack.
template <typename Lookup>
void resolve_in_place(nlohmann::json& out, Lookup& lookup, ResolveBudget& budget) {
  std::vector<EditFrame> frames;
  std::vector<nlohmann::json*> nodes;  // frames[i].src, writable
  auto open = [&](nlohmann::json& node) {
    if (node.is_object()) {
      auto& obj = node.get_ref<nlohmann::json::object_t&>();
      frames.push_back(EditFrame{&node, obj.begin(), obj.end()});
    } else {
      frames.push_back(EditFrame{&node, {}, {}});
    }
    nodes.push_back(&node);
  };
  open(out);
  while (!frames.empty()) {
    EditFrame& f = frames.back();
    nlohmann::json* child = nullptr;
    if (f.src->is_object()) {
      if (f.next == f.end) {
        frames.pop_back();
        nodes.pop_back();
        continue;
      }
      f.key = &f.next->first;
      child = &f.next->second;
      ++f.next;
    } else {
      auto& arr = nodes.back()->get_ref<nlohmann::json::array_t&>();
      if (f.index == arr.size()) {
        frames.pop_back();
        nodes.pop_back();
        continue;
      }
      child = &arr[f.index++];
    }
    if (child->is_string()) {
      const std::string& s = child->get_ref<const std::string&>();
      if (!s.empty() && s[0] == '@') *child = resolve_string(s, lookup, frames, budget);
    } else if (child->is_structured()) {
      open(*child);
    }
  }
}

/// Copies `inputs`, replacing every reference by `lookup(name)` (a `const nlohmann::json*`, null when absent).
/// Nothing recurses deeper than the depth limit allows, and input deeper than the limit is rejected before any
/// copying.
template <typename Lookup>
[[nodiscard]] nlohmann::json resolve_with(const nlohmann::json& inputs, Lookup&& lookup,
                                          const ResolveOptions& options = {}) {
  ResolveBudget budget;
  budget.limit = options.max_resolved_bytes;
  if (inputs.is_string()) {
    return resolve_string(inputs.get_ref<const std::string&>(), lookup, std::vector<WalkFrame>{}, budget);
  }
  if (!inputs.is_structured()) return inputs;
  if (options.max_depth < 1) throw too_deep(options.max_depth);
  // nlohmann::json copies recursively: cheap and safe for the usual limits, so copy and then patch the references
  // in place (about the cost of the copy alone). Above this depth, build the copy iteratively instead.
  constexpr int recursive_copy_limit = 1000;
  if (options.max_depth > recursive_copy_limit) return build_resolved(inputs, lookup, options, budget);
  if (deeper_than(inputs, options.max_depth)) throw too_deep(options.max_depth);
  nlohmann::json out = inputs;
  resolve_in_place(out, lookup, budget);
  return out;
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
