// cairn — the bodies of cairn/detail/json.hpp: parse_json (the one place that instantiates nlohmann's parser for the
// headers), json_depth and json_text_size. Header-only, json.hpp includes this file and CAIRN_INLINE is `inline`;
// with CAIRN_COMPILED_LIB they are compiled once into cairn::compiled (src/compiled/artifact.cpp), so a host's file
// that only includes cairn's headers does not instantiate the parser.
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

#include "cairn/detail/json.hpp"
#include "cairn/error.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace detail {

CAIRN_INLINE nlohmann::json parse_json(std::string_view text, const JsonLimits& limits, std::string_view what) {
  if (text.size() > limits.max_bytes) {
    throw limit_exceeded(
        fmt::format("{}: input is {} bytes, more than the limit of {} bytes", what, text.size(), limits.max_bytes));
  }
  const int max_depth = limits.max_depth;
  // Text with fewer '[' and '{' bytes than the limit (in strings too) cannot nest that deep: parsed without the
  // callback, which costs a call per value (most of what a journal or a store reads: small objects).
  std::size_t opens = 0;
  for (const char c : text) opens += (c == '[' || c == '{') ? 1 : 0;
  if (opens < static_cast<std::size_t>(std::max(max_depth, 0))) {
    try {
      return nlohmann::json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::exception&) {
      // the same text again, below, for the same error as ever
    }
  }
  // The callback sees the depth of every container start; stopping there keeps the partial value shallow.
  auto guard = [max_depth, what](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
    if ((event == nlohmann::json::parse_event_t::object_start || event == nlohmann::json::parse_event_t::array_start) &&
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

CAIRN_INLINE int json_depth(const nlohmann::json& value, int stop_at) {
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

CAIRN_INLINE std::size_t json_text_size(const nlohmann::json& value) {
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
