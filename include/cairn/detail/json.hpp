// cairn::detail — parsing JSON from outside with size and depth limits, iterative depth checks, and the size of a
// value's compact text without building it.
//
// nlohmann::json parses without recursion, but copying, comparing and dumping a value recurse once per level, so a
// value nested 100,000 deep would overflow the stack later. Every parser of outside input goes through parse_json,
// which stops at the limit with a clear error instead.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
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
CAIRN_INLINE nlohmann::json parse_json(std::string_view text, const JsonLimits& limits, std::string_view what);

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

/// The size of `value`'s compact JSON text (`dump()`), computed without building it: strings and keys exactly
/// (escapes included), floating-point numbers with the shortest digits that read back (nlohmann's Grisu2 can write
/// one digit more for rare values).
inline std::size_t json_text_size(const nlohmann::json& value) {
  auto string_size = [](const std::string& str) {
    std::size_t n = str.size() + 2;
    for (const char ch : str) {
      const auto c = static_cast<unsigned char>(ch);
      if (c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t') {
        n += 1;
      } else if (c < 0x20) {
        n += 5;  // \u00XX
      }
    }
    return n;
  };
  std::size_t total = 0;
  std::vector<const nlohmann::json*> todo{&value};
  while (!todo.empty()) {
    const nlohmann::json* node = todo.back();
    todo.pop_back();
    switch (node->type()) {
      case nlohmann::json::value_t::object: {
        const auto& obj = node->get_ref<const nlohmann::json::object_t&>();
        total += 2 + (obj.empty() ? 0 : obj.size() - 1);  // braces and commas
        for (const auto& [key, child] : obj) {
          total += string_size(key) + 1;  // and the colon
          todo.push_back(&child);
        }
        break;
      }
      case nlohmann::json::value_t::array: {
        const auto& arr = node->get_ref<const nlohmann::json::array_t&>();
        total += 2 + (arr.empty() ? 0 : arr.size() - 1);
        for (const auto& child : arr) todo.push_back(&child);
        break;
      }
      case nlohmann::json::value_t::string: total += string_size(node->get_ref<const std::string&>()); break;
      // format_int and fmt::format go through code libfmt compiled once; fmt::formatted_size would instantiate
      // fmt's whole formatting engine in every translation unit (about a second of g++ time, docs/performance.md).
      case nlohmann::json::value_t::number_integer: total += fmt::format_int(node->get<std::int64_t>()).size(); break;
      case nlohmann::json::value_t::number_unsigned: total += fmt::format_int(node->get<std::uint64_t>()).size(); break;
      case nlohmann::json::value_t::number_float: {
        // The shortest text that reads back as the same double, as nlohmann writes it (".0" added to a number
        // that would read back as an integer), without building a string.
        char buf[32];
        const auto r = std::to_chars(buf, buf + sizeof buf, node->get<double>());
        const std::string_view text(buf, static_cast<std::size_t>(r.ptr - buf));
        total += text.size() + (text.find_first_of(".e") == std::string_view::npos ? 2 : 0);
        break;
      }
      case nlohmann::json::value_t::boolean: total += node->get<bool>() ? 4u : 5u; break;
      case nlohmann::json::value_t::binary: total += node->get_binary().size(); break;
      case nlohmann::json::value_t::null:
      case nlohmann::json::value_t::discarded: total += 4; break;
    }
  }
  return total;
}

}  // namespace detail
CAIRN_END_NAMESPACE

#ifndef CAIRN_COMPILED_LIB
#include "cairn/detail/json-inl.hpp"
#endif
