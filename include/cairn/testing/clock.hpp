// cairn::testing — a clock and an id generator that a test controls, so a whole run is reproducible byte for byte.
//
//     auto clock = std::make_shared<cairn::testing::ManualClock>();   // 2023-11-14T22:13:20Z, standing still
//     auto ids = std::make_shared<cairn::testing::SequentialIds>();   // 00000000-0000-4000-8000-000000000001, ...
//     cairn::InMemoryStoreOptions options;
//     options.clock = clock;
//     options.ids = ids;
//     auto store = std::make_shared<cairn::InMemoryArtifactStore>(options);
//     cairn::ExecutionContext ctx(store, "acme", clock);
//     clock->advance(1500);                                          // time moves only when the test says so
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "cairn/clock.hpp"
#include "cairn/error.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace testing {

/// A Clock that shows the time the test sets. Thread-safe (one atomic).
///
/// It starts at `start_ms` (by default 1,700,000,000,000 ms, 2023-11-14T22:13:20Z: not 0, because cairn reads a
/// timestamp of 0 as "not set yet") and stands still unless the test moves it, or unless it was given an
/// auto-advance step: then every read returns the current time and moves it on by the step, so that consecutive
/// stamps differ and show the order of events.
class ManualClock final : public Clock {
 public:
  static constexpr std::int64_t default_start_ms = 1700000000000;

  explicit ManualClock(std::int64_t start_ms = default_start_ms, std::int64_t auto_advance_ms = 0)
      : now_(start_ms), step_(auto_advance_ms) {}

  /// The current time; moves it on by the auto-advance step afterwards.
  std::int64_t now_ms() const override {
    reads_.fetch_add(1, std::memory_order_relaxed);
    const std::int64_t step = step_.load(std::memory_order_relaxed);
    return step == 0 ? now_.load(std::memory_order_acquire) : now_.fetch_add(step, std::memory_order_acq_rel);
  }

  /// Sets the time (it may go backwards: a test may want to see what a component does then).
  void set(std::int64_t ms) noexcept { now_.store(ms, std::memory_order_release); }
  /// Moves the time on by `ms` (negative goes back) and returns the new time.
  std::int64_t advance(std::int64_t ms) noexcept { return now_.fetch_add(ms, std::memory_order_acq_rel) + ms; }
  std::int64_t advance(std::chrono::milliseconds d) noexcept { return advance(static_cast<std::int64_t>(d.count())); }
  /// How far each read moves the time on (0: not at all).
  void set_auto_advance(std::int64_t ms) noexcept { step_.store(ms, std::memory_order_relaxed); }
  /// The time now, without counting as a read and without auto-advancing.
  std::int64_t peek() const noexcept { return now_.load(std::memory_order_acquire); }
  /// How often cairn read this clock.
  std::size_t reads() const noexcept { return reads_.load(std::memory_order_relaxed); }

 private:
  mutable std::atomic<std::int64_t> now_;
  std::atomic<std::int64_t> step_;
  mutable std::atomic<std::size_t> reads_{0};
};

/// An IdGenerator that counts. Thread-safe (two atomics).
///
/// uuid() returns 00000000-0000-4000-8000-000000000001, ...-000000000002, ... (well-formed UUID v4 text: version
/// nibble 4, variant 8), token(length, alphabet) the token counter written in base alphabet.size() with the
/// alphabet as digits, most significant first, padded with alphabet[0] to `length` (`aaab`, `aaac`, ... for
/// handoff ids). The two counters are separate, so adding a handoff to a test leaves its artifact uuids alone.
/// A token counter that no longer fits `length` characters wraps around (handoff then sees a taken id and draws
/// again).
class SequentialIds final : public IdGenerator {
 public:
  /// `first` is the number of the first uuid and of the first token.
  explicit SequentialIds(std::uint64_t first = 1) : next_uuid_(first), next_token_(first), first_(first) {}

  std::string uuid() override { return format_uuid(next_uuid_.fetch_add(1, std::memory_order_relaxed)); }

  /// Throws cairn::invalid_argument for an empty alphabet or one over 256 characters (as the real source does).
  std::string token(std::size_t length, const std::string& alphabet) override {
    if (alphabet.empty() || alphabet.size() > 256) {
      throw invalid_argument("SequentialIds::token: alphabet must hold 1 to 256 characters");
    }
    std::uint64_t n = next_token_.fetch_add(1, std::memory_order_relaxed);
    std::string out(length, alphabet[0]);
    const std::uint64_t base = alphabet.size();
    for (std::size_t i = length; i > 0 && n > 0; --i) {
      out[i - 1] = alphabet[static_cast<std::size_t>(n % base)];
      n /= base;
    }
    return out;
  }

  /// The uuid that number `n` gives: 00000000-0000-4000-8000-<n as 12 hex digits> (n is taken modulo 2^48).
  static std::string format_uuid(std::uint64_t n) {
    return fmt::format("00000000-0000-4000-8000-{:012x}", n & 0xffffffffffffULL);
  }

  /// How many uuids and tokens were handed out.
  std::uint64_t uuids_issued() const noexcept { return next_uuid_.load() - first_; }
  std::uint64_t tokens_issued() const noexcept { return next_token_.load() - first_; }

 private:
  std::atomic<std::uint64_t> next_uuid_;
  std::atomic<std::uint64_t> next_token_;
  const std::uint64_t first_;
};

}  // namespace testing
CAIRN_END_NAMESPACE
