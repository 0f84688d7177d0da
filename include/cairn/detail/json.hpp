// cairn::detail — parsing JSON from outside with size and depth limits, iterative depth checks, and the size of a
// value's compact text without building it.
//
// nlohmann::json parses without recursion, but copying, comparing and dumping a value recurse once per level, so a
// value nested 100,000 deep would overflow the stack later. Every parser of outside input goes through parse_json,
// which stops at the limit with a clear error instead.
#pragma once

#include <algorithm>
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
int json_depth(const nlohmann::json& value, int stop_at = 1 << 30);

/// The size of `value`'s compact JSON text (`dump()`), computed without building it: strings and keys exactly
/// (escapes included), floating-point numbers with the shortest digits that read back (nlohmann's Grisu2 can write
/// one digit more for rare values).
std::size_t json_text_size(const nlohmann::json& value);

}  // namespace detail
CAIRN_END_NAMESPACE

#ifndef CAIRN_COMPILED_LIB
#include "cairn/detail/json-inl.hpp"
#endif
