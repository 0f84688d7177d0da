// cairn — the exceptions the library throws.
//
// Every exception derives from cairn::error (itself a std::runtime_error), so a host can catch all of cairn's
// failures in one place. Messages name the thing that was wrong and where it was; they are for people and may change.
// For programs, every exception carries a cairn::errc code (`e.code()`), whose numeric values never change, so a host
// can branch (or map to its own error space, an HTTP status, a log field) without parsing messages. The table of codes
// and the stability promise are in docs/api.md ("Error codes").
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "cairn/detail/enum_ostream.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

/// What kind of failure a cairn::error reports. The numeric values are stable across versions: a value is never
/// reused or renumbered, and new kinds only ever get new numbers. 0 is no code (a value-initialized errc); it is never
/// reported by a cairn exception.
///
/// Named `errc` after std::errc (an enum of conditions), not `error_code`: std::error_code is a class (value plus
/// category) and a cairn::error_code that is an enum would read as one. cairn::errc is deliberately NOT registered with
/// std::is_error_code_enum — cairn reports failures as exceptions, and the code is a field of the exception.
enum class errc : int {
  generic = 1,             ///< a cairn::error thrown as itself (no more specific kind)
  invalid_argument = 2,    ///< cairn::invalid_argument
  invalid_artifact = 3,    ///< cairn::invalid_artifact
  not_found = 4,           ///< cairn::not_found
  artifact_not_found = 5,  ///< cairn::artifact_not_found (also a not_found)
  invalid_template = 6,    ///< cairn::invalid_template
  state_error = 7,         ///< cairn::state_error
  limit_exceeded = 8,      ///< cairn::limit_exceeded
  parse_error = 9,         ///< cairn::parse_error
  conflict = 10,           ///< cairn::conflict
  storage_error = 11,      ///< cairn::storage_error
  invalid_goal = 12,       ///< cairn::invalid_goal (goals/goal.hpp)
  call_in_doubt = 13,      ///< cairn::call_in_doubt (context/tool.hpp; also a state_error)
  script_error = 14,       ///< cairn::testing::script_error (testing/scripted_model.hpp)
  call_in_flight = 15,     ///< cairn::call_in_flight (context/execution_context.hpp; also a conflict)
};

/// The code's name, spelled as its enumerator ("not_found"); "unknown" for a value that is not an enumerator (a code
/// from a newer cairn read by an older one, say).
constexpr std::string_view to_string(errc code) noexcept {
  switch (code) {
    case errc::generic: return "generic";
    case errc::invalid_argument: return "invalid_argument";
    case errc::invalid_artifact: return "invalid_artifact";
    case errc::not_found: return "not_found";
    case errc::artifact_not_found: return "artifact_not_found";
    case errc::invalid_template: return "invalid_template";
    case errc::state_error: return "state_error";
    case errc::limit_exceeded: return "limit_exceeded";
    case errc::parse_error: return "parse_error";
    case errc::conflict: return "conflict";
    case errc::storage_error: return "storage_error";
    case errc::invalid_goal: return "invalid_goal";
    case errc::call_in_doubt: return "call_in_doubt";
    case errc::script_error: return "script_error";
    case errc::call_in_flight: return "call_in_flight";
  }
  return "unknown";
}
/// Prints to_string(code) (Catch2 and GoogleTest pick it up).
CAIRN_DETAIL_ENUM_OSTREAM(errc)

/// Base of every exception cairn throws.
class error : public std::runtime_error {
 public:
  explicit error(const std::string& what, errc code = errc::generic) : std::runtime_error(what), code_(code) {}
  explicit error(const char* what, errc code = errc::generic) : std::runtime_error(what), code_(code) {}

  /// The kind of failure; most specific class wins (an artifact_not_found reports errc::artifact_not_found).
  errc code() const noexcept { return code_; }

 private:
  errc code_;
};

// Each class below has the constructors it always had (`throw not_found("...")`), which set its own code, and a
// protected one taking the code, for a subclass to pass its own.
#define CAIRN_DETAIL_ERROR_CONSTRUCTORS(name, base)                           \
 public:                                                                      \
  explicit name(const std::string& what) : base(what, ::cairn::errc::name) {} \
  explicit name(const char* what) : base(what, ::cairn::errc::name) {}        \
                                                                              \
 protected:                                                                   \
  name(const std::string& what, ::cairn::errc code) : base(what, code) {}     \
  name(const char* what, ::cairn::errc code) : base(what, code) {}            \
                                                                              \
 public:

/// A caller passed an argument that can never be valid (an empty tenant, a malformed name, ...).
class invalid_argument : public error {
  CAIRN_DETAIL_ERROR_CONSTRUCTORS(invalid_argument, error)
};

/// An ArtifactRecord failed validation; the message names the field.
class invalid_artifact : public error {
  CAIRN_DETAIL_ERROR_CONSTRUCTORS(invalid_artifact, error)
};

/// Something that had to exist does not (removing an artifact that is not there, say).
class not_found : public error {
  CAIRN_DETAIL_ERROR_CONSTRUCTORS(not_found, error)
};

/// An `@name` reference names no artifact in the context.
class artifact_not_found : public not_found {
  CAIRN_DETAIL_ERROR_CONSTRUCTORS(artifact_not_found, not_found)
};

/// A workflow template failed validation; the message names the path.
class invalid_template : public error {
  CAIRN_DETAIL_ERROR_CONSTRUCTORS(invalid_template, error)
};

/// A persisted state is unreadable, or a transition is not allowed in the current state.
class state_error : public error {
  CAIRN_DETAIL_ERROR_CONSTRUCTORS(state_error, error)
};

/// Input exceeded a size, depth or count limit.
class limit_exceeded : public error {
  CAIRN_DETAIL_ERROR_CONSTRUCTORS(limit_exceeded, error)
};

/// Input from outside (JSON, a model's reply, a message) could not be parsed.
class parse_error : public error {
  CAIRN_DETAIL_ERROR_CONSTRUCTORS(parse_error, error)
};

/// A conditional write lost a race: what is stored had moved on from what the caller expected. Nothing was written.
/// `expected()` is the version (or journal sequence number) the caller named, `actual()` the one it found; the
/// caller re-reads and decides again. Thrown by ArtifactStore::store_if and RunJournal::append.
class conflict : public error {
 public:
  conflict(const std::string& what, std::uint64_t expected, std::uint64_t actual)
      : error(what, errc::conflict), expected_(expected), actual_(actual) {}
  std::uint64_t expected() const noexcept { return expected_; }
  std::uint64_t actual() const noexcept { return actual_; }

 protected:
  conflict(const std::string& what, std::uint64_t expected, std::uint64_t actual, errc code)
      : error(what, code), expected_(expected), actual_(actual) {}

 private:
  std::uint64_t expected_;
  std::uint64_t actual_;
};

/// A durable backend failed (I/O, SQL, connection).
class storage_error : public error {
  CAIRN_DETAIL_ERROR_CONSTRUCTORS(storage_error, error)
};

CAIRN_END_NAMESPACE
