// cairn — JSON Schema checks for tool inputs and outputs: a schema compiled once, values checked against it.
//
// With CAIRN_WITH_SCHEMA (the CMake option, ON when valijson's headers are found) a schema is checked as a whole by
// valijson (JSON Schema draft 7, draft 4 keywords included); without it only the top-level `required` keys are
// checked, as cairn did before. docs/context.md ("Schema validation") lists what is and is not checked.
#pragma once

#include <algorithm>
#include <cstddef>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/detail/schema_regex_reach.hpp"
#include "cairn/detail/text.hpp"
#include "cairn/error.hpp"
#include "cairn/version.hpp"

#ifndef CAIRN_WITH_SCHEMA
#define CAIRN_WITH_SCHEMA 0
#endif

CAIRN_BEGIN_NAMESPACE

/// True when this build checks whole JSON Schemas (valijson); false when it checks only top-level `required`.
inline constexpr bool full_schema_validation = CAIRN_WITH_SCHEMA != 0;

/// One way a value breaks its schema.
struct SchemaViolation {
  std::string pointer;  ///< RFC 6901 pointer of the offending value; "" is the value itself
  std::string rule;     ///< the schema keyword that failed: type, required, enum, minimum, additionalProperties, ...
  std::string message;  ///< what is wrong: "expected integer, got string"
};

/// `<label> <pointer>: <rule>: <message>` for each violation, joined by "; ", with "; and N more" when `total` is
/// larger than what is listed. The top level is written `(top level)`.
inline std::string describe_violations(std::string_view label, const std::vector<SchemaViolation>& violations,
                                       std::size_t total) {
  std::string out;
  for (const SchemaViolation& v : violations) {
    if (!out.empty()) out += "; ";
    out += fmt::format("{} {}: {}: {}", label, v.pointer.empty() ? "(top level)" : detail::excerpt(v.pointer),
                       v.rule, v.message);
  }
  if (total > violations.size()) out += fmt::format("; and {} more", total - violations.size());
  return out;
}

/// A JSON Schema compiled once, against which values are then checked. Immutable after construction;
/// thread-safe: validate() may run on several threads at once.
class CompiledSchema {
 public:
  /// How many violations validate() describes by default; the rest are only counted.
  static constexpr std::size_t default_max_reported = 5;

  /// Compiles `schema`. Throws cairn::invalid_argument naming `what` (e.g. "tool 'fetch': input_schema") and the
  /// place in the schema when it is not a valid schema: not an object (or boolean, with valijson), a keyword of the
  /// wrong shape (`tool 'fetch': input_schema /properties/port/type: ...`), a `$ref` that does not resolve or
  /// points outside the schema (remote documents are never fetched).
  CompiledSchema(const nlohmann::json& schema, std::string_view what);

  /// The violations of `value`, at most `max_reported` of them described; `total` (when given) receives how many
  /// there were. Empty when `value` is valid. A valid value takes valijson's fast path (stops at nothing, builds no
  /// messages).
  std::vector<SchemaViolation> validate(const nlohmann::json& value, std::size_t max_reported = default_max_reported,
                                        std::size_t* total = nullptr) const;

 private:
  nlohmann::json source_;  // kept for the messages (expected types, enum values, bounds)
#if CAIRN_WITH_SCHEMA
  struct Compiled;
  std::shared_ptr<const Compiled> compiled_;
  bool counts_characters_ = false;  // the schema has minLength / maxLength somewhere
  bool runs_regexes_ = false;      // the schema has pattern / patternProperties / format somewhere
#else
  std::vector<std::string> required_;
#endif
};

namespace detail {

inline std::string json_type_word(const nlohmann::json& v) {
  if (v.is_number_integer()) return "integer";
  if (v.is_number()) return "number";
  return v.type_name();
}


}  // namespace detail

CAIRN_END_NAMESPACE

#ifndef CAIRN_COMPILED_LIB
#include "cairn/context/schema-inl.hpp"
#endif
