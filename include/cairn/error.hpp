// cairn — the exceptions the library throws.
//
// Every exception derives from cairn::error (itself a std::runtime_error), so a host can catch all of cairn's
// failures in one place. Messages name the thing that was wrong and where it was.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace cairn {

/// Base of every exception cairn throws.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A caller passed an argument that can never be valid (an empty tenant, a malformed name, ...).
class invalid_argument : public error {
 public:
  using error::error;
};

/// An ArtifactRecord failed validation; the message names the field.
class invalid_artifact : public error {
 public:
  using error::error;
};

/// Something that had to exist does not (removing an artifact that is not there, say).
class not_found : public error {
 public:
  using error::error;
};

/// An `@name` reference names no artifact in the context.
class artifact_not_found : public not_found {
 public:
  using not_found::not_found;
};

/// A workflow template failed validation; the message names the path.
class invalid_template : public error {
 public:
  using error::error;
};

/// A persisted state is unreadable, or a transition is not allowed in the current state.
class state_error : public error {
 public:
  using error::error;
};

/// Input exceeded a size, depth or count limit.
class limit_exceeded : public error {
 public:
  using error::error;
};

/// Input from outside (JSON, a model's reply, a message) could not be parsed.
class parse_error : public error {
 public:
  using error::error;
};

/// A conditional write lost a race: what is stored had moved on from what the caller expected. Nothing was written.
/// `expected()` is the version (or journal sequence number) the caller named, `actual()` the one it found; the
/// caller re-reads and decides again. Thrown by ArtifactStore::store_if and RunJournal::append.
class conflict : public error {
 public:
  conflict(const std::string& what, std::uint64_t expected, std::uint64_t actual)
      : error(what), expected_(expected), actual_(actual) {}
  std::uint64_t expected() const noexcept { return expected_; }
  std::uint64_t actual() const noexcept { return actual_; }

 private:
  std::uint64_t expected_;
  std::uint64_t actual_;
};

/// A durable backend failed (I/O, SQL, connection).
class storage_error : public error {
 public:
  using error::error;
};

}  // namespace cairn
