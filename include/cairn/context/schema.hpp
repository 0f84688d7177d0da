// cairn — JSON Schema checks for tool inputs and outputs: a schema compiled once, values checked against it.
//
// cairn checks JSON Schema draft 7 itself (cairn/context/schema-inl.hpp), in bounded time and stack whatever the
// schema and the value: schemas are refused at compile time when they nest too deep or their $refs loop or chain too
// far, and every check runs within a step budget and a depth limit. `pattern` and `patternProperties` need RE2
// (CAIRN_WITH_SCHEMA, linear-time matching); a build without it refuses schemas that use them unless the host marks
// them unchecked. docs/context.md ("Schema validation") lists what is and is not checked.
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

#include "cairn/detail/build_config.hpp"
#include "cairn/detail/text.hpp"
#include "cairn/error.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

/// True when this build checks every keyword of a JSON Schema draft 7 it accepts, `pattern` and
/// `patternProperties` included (RE2); false when it refuses schemas with those two unless they are marked
/// unchecked (Tool::unchecked_schema).
inline constexpr bool full_schema_validation = CAIRN_WITH_SCHEMA != 0;

/// The bounds of compiling a schema and of checking a value against it (docs/context.md, "Limits").
struct SchemaLimits {
  /// JSON nesting of a schema (`{"items": {}}` is 2 levels); deeper is refused when the schema is compiled.
  std::size_t max_schema_depth = 128;
  /// `$ref`s followed one after another at the same place in the value (a → b → c is 2); a longer chain, and any
  /// loop of `$ref`s and in-place subschemas (allOf, anyOf, oneOf, not, if/then/else, dependencies) that never
  /// moves into the value, is refused when the schema is compiled.
  std::size_t max_ref_chain = 32;
  /// Subschemas applied one inside another while checking a value (about two per level of the value under a
  /// recursive schema); deeper fails the check with rule `depth`.
  std::size_t max_check_depth = 1000;
  /// Steps one check may take, plus check_steps_per_value_node for each node (value, member, item) of the value:
  /// a step is one subschema applied to a value, one comparison for `uniqueItems` / `enum` / `const`, or 64 bytes
  /// a regular expression reads. More fails the check with rule `budget`. So the budget grows with the value
  /// (whose size its parser bounds) and not with what the schema makes of it.
  std::size_t max_check_steps = 1'000'000;
  std::size_t check_steps_per_value_node = 32;
};

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
    out += fmt::format("{} {}: {}: {}", label, v.pointer.empty() ? "(top level)" : detail::excerpt(v.pointer), v.rule,
                       v.message);
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
  /// place in the schema when it cannot be used: not an object or a boolean, nested deeper than
  /// `limits.max_schema_depth`, a keyword of the wrong shape (`... not a valid JSON Schema: at /properties/port/type:
  /// ...`), a `$ref` that does not resolve or points outside the schema (remote documents are never fetched), a loop
  /// or too long a chain of `$ref`s, a `pattern` RE2 cannot run (backreferences, lookaround). A build without
  /// CAIRN_WITH_SCHEMA also refuses `pattern` and `patternProperties`, unless `unchecked_regexes` is true: then
  /// `pattern` is not checked and, where `patternProperties` appears, neither are its subschemas nor
  /// `additionalProperties` (unsafe for values a model supplies).
  CompiledSchema(const nlohmann::json& schema, std::string_view what, const SchemaLimits& limits = {},
                 bool unchecked_regexes = false);

  /// The violations of `value`, at most `max_reported` of them described; `total` (when given) receives how many
  /// there were. Empty when `value` is valid. A valid value takes a fast path (stops at the first violation, builds
  /// no messages). A check that exceeds the limits' depth or step budget reports one violation, rule `depth` or
  /// `budget`: the value is refused, never let through.
  std::vector<SchemaViolation> validate(const nlohmann::json& value, std::size_t max_reported = default_max_reported,
                                        std::size_t* total = nullptr) const;

  /// The schema as it was given.
  const nlohmann::json& source() const;

  struct Compiled;  // defined in schema-inl.hpp

 private:
  std::shared_ptr<const Compiled> compiled_;
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
