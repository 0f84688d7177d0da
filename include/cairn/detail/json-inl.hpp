// cairn — the body of detail::parse_json (cairn/detail/json.hpp): the one place that instantiates nlohmann's parser
// for the headers. Header-only, json.hpp includes this file and CAIRN_INLINE is `inline`; with CAIRN_COMPILED_LIB it is
// compiled once into cairn::compiled (src/compiled/artifact.cpp), so a host's file that only includes cairn's headers
// does not instantiate the parser.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

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

}  // namespace detail
CAIRN_END_NAMESPACE
