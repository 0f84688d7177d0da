// cairn::detail — parsing JSON from outside with size and depth limits, and iterative depth checks.
//
// nlohmann::json parses without recursion, but copying, comparing and dumping a value recurse once per level, so a
// value nested 100,000 deep would overflow the stack later. Every parser of outside input goes through parse_json,
// which stops at the limit with a clear error instead.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/error.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

/// Limits applied to JSON that comes from outside the program (a model's reply, a file, a message).
struct JsonLimits {
  std::size_t max_bytes = 64u * 1024u * 1024u;  ///< longest accepted text
  int max_depth = 256;                          ///< deepest accepted nesting of arrays and objects
};

namespace detail {

/// Parses `text` as JSON within `limits`. `what` names the input in error messages ("tool call", "state file").
/// Throws cairn::limit_exceeded for oversized or too-deep input, cairn::parse_error for malformed input.
inline nlohmann::json parse_json(std::string_view text, const JsonLimits& limits, std::string_view what) {
  if (text.size() > limits.max_bytes) {
    throw limit_exceeded(
        fmt::format("{}: input is {} bytes, more than the limit of {} bytes", what, text.size(), limits.max_bytes));
  }
  // The callback sees the depth of every container start; stopping there keeps the partial value shallow.
  const int max_depth = limits.max_depth;
  auto guard = [max_depth, what](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
    if ((event == nlohmann::json::parse_event_t::object_start ||
         event == nlohmann::json::parse_event_t::array_start) &&
        depth >= max_depth) {
      throw limit_exceeded(fmt::format("{}: JSON nesting is deeper than the limit of {} levels", what, max_depth));
    }
    return true;
  };
  try {
    return nlohmann::json::parse(text.begin(), text.end(), guard);
  } catch (const nlohmann::json::exception& e) {
    // Malformed text (parse_error) and numbers too large for a double (out_of_range 406) both land here.
    // e.what() reads "[json.exception.parse_error.101] parse error at line 1, column 5: ..."; keep the tail.
    std::string msg = e.what();
    const auto pos = msg.find("] ");
    if (pos != std::string::npos) msg = msg.substr(pos + 2);
    throw parse_error(fmt::format("{}: invalid JSON: {}", what, msg));
  }
}

/// Depth of the deepest container in `value` (a scalar is 0, `[]` is 1), computed without recursion. Stops
/// counting once `stop_at` is exceeded, so a hostile value costs no more than needed to reject it.
inline int json_depth(const nlohmann::json& value, int stop_at = 1 << 30) {
  int deepest = 0;
  std::vector<std::pair<const nlohmann::json*, int>> todo{{&value, 0}};
  while (!todo.empty()) {
    auto [node, depth] = todo.back();
    todo.pop_back();
    if (!node->is_structured()) continue;
    const int here = depth + 1;
    if (here > deepest) deepest = here;
    if (deepest > stop_at) return deepest;
    for (const auto& child : *node) todo.emplace_back(&child, here);
  }
  return deepest;
}

}  // namespace detail
CAIRN_END_NAMESPACE
