// cairn — Clock and IdGenerator: where every layer reads the time and draws random ids.
//
// Stores stamp created_at, the context stamps messages, the goal stack stamps goals, handoff draws ids and run
// journals stamp entries. Each takes its clock and id generator from the host (a null pointer means the real ones:
// the system clock and the kernel's CSPRNG), so a test can make a whole run reproducible byte for byte with
// cairn/testing/clock.hpp. When nothing is injected the cost is one well-predicted branch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "cairn/detail/random.hpp"
#include "cairn/detail/time.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

/// The time as cairn reads it. Implementations are thread-safe (stores call them from many threads).
class Clock {
 public:
  virtual ~Clock() = default;
  /// Milliseconds since 1970-01-01T00:00:00Z.
  virtual std::int64_t now_ms() const = 0;
};

/// Random ids as cairn draws them. Implementations are thread-safe.
class IdGenerator {
 public:
  virtual ~IdGenerator() = default;
  /// A UUID in canonical lowercase 8-4-4-4-12 form (ids of stored artifacts that came without one).
  virtual std::string uuid() = 0;
  /// `length` characters from `alphabet` (handoff ids such as `doc_k3f9`).
  virtual std::string token(std::size_t length, const std::string& alphabet) = 0;
};

/// The system clock as a Clock object, for hosts that want to pass one explicitly.
class SystemClock final : public Clock {
 public:
  std::int64_t now_ms() const override { return detail::now_ms(); }
};

/// The kernel's CSPRNG as an IdGenerator object.
class RandomIds final : public IdGenerator {
 public:
  std::string uuid() override { return detail::uuid_v4(); }
  std::string token(std::size_t length, const std::string& alphabet) override {
    return detail::random_string(length, alphabet);
  }
};

namespace detail {

/// The time from `clock`, or from the system clock when none was injected.
inline std::int64_t now_ms(const Clock* clock) { return clock ? clock->now_ms() : now_ms(); }
/// A UUID from `ids`, or from the CSPRNG when none was injected.
inline std::string new_uuid(IdGenerator* ids) { return ids ? ids->uuid() : uuid_v4(); }
/// A token from `ids`, or from the CSPRNG when none was injected.
inline std::string new_token(IdGenerator* ids, std::size_t length, const std::string& alphabet) {
  return ids ? ids->token(length, alphabet) : random_string(length, alphabet);
}

}  // namespace detail
CAIRN_END_NAMESPACE
