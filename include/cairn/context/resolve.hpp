// cairn — `@name` references in tool inputs: what counts as one, listing them, and replacing them by values.
//
// A string is a reference when it is exactly `@` + an artifact name, optionally followed by `#` and an RFC 6901
// JSON pointer: "@app_config", "@app_config#/port", "@rows#/0/id". A string that starts with `@@` is an escape
// and stands for itself minus the first `@` ("@@home" is the literal "@home"). Every other string is left alone,
// including ones that merely contain an `@`: "bob@example.com", "hi @bob", "@ home", "@bob.smith", "@123".
// Only values are references; object keys never are.
//
// ExecutionContext::resolve (execution_context.hpp) applies this to a context; the walk here knows nothing about
// contexts, only how to look a name up.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/detail/json.hpp"
#include "cairn/detail/text.hpp"
#include "cairn/error.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

/// Artifact names match `[A-Za-z_][A-Za-z0-9_-]{0,127}`.
constexpr std::size_t max_artifact_name_length = 128;

/// True when `name` is a valid artifact name.
bool is_valid_artifact_name(std::string_view name) noexcept;

/// A parsed `@name` or `@name#pointer`. Views into the string it was parsed from.
struct Reference {
  std::string_view name;
  std::optional<std::string_view> pointer;  ///< the text after `#` ("" is the whole value), when there was a `#`
};

/// The reference `text` holds, or nothing when `text` is not a reference (see the rules at the top of the file).
///
///     parse_reference("@cfg#/port")  // {name "cfg", pointer "/port"}
///     parse_reference("bob@x.org")   // nullopt
///     parse_reference("@@cfg")       // nullopt: an escape, not a reference
std::optional<Reference> parse_reference(std::string_view text) noexcept;

/// Limits of the walk over an input value.
struct ResolveOptions {
  /// Deepest nesting of arrays and objects accepted in the input; deeper input throws cairn::limit_exceeded
  /// before anything is copied. The walk is iterative, so the limit protects the caller, not the walk.
  int max_depth = 256;
  /// Largest total size, in bytes of compact JSON text, of the values that references insert into one input; 0
  /// means no limit. Checked before each value is copied, so an input that repeats a reference to a large artifact
  /// fails with cairn::limit_exceeded naming the reference and where it was, instead of exhausting memory. The
  /// text of the input itself is not counted (its parser limited it already).
  std::size_t max_resolved_bytes = 64u * 1024u * 1024u;
};

namespace detail {

std::string where_text(const std::string& pointer);

limit_exceeded too_deep(int max_depth);

/// True when `value` nests containers more than `max_depth` deep. Iterative, and its stack holds one entry per
/// level (not per pending sibling), so it stays small: a large allocation here would make glibc consolidate the
/// free lists on every call.
bool deeper_than(const nlohmann::json& value, int max_depth);

}  // namespace detail

/// The names of the artifacts `inputs` references, each once, in the order of first appearance (objects are
/// walked in key order, as nlohmann::json stores them). Throws cairn::limit_exceeded for input nested deeper than
/// `options.max_depth`.
///
///     references({{"args", {"@server_file"}}, {"env", "@app_config#/env"}})  // {"server_file", "app_config"}
std::vector<std::string> references(const nlohmann::json& inputs, const ResolveOptions& options = {});

CAIRN_END_NAMESPACE

#ifndef CAIRN_COMPILED_LIB
#include "cairn/context/resolve-inl.hpp"
#endif
