// cairn::detail — wall-clock time as milliseconds since the Unix epoch, and its ISO 8601 text.
#pragma once

#include <chrono>
#include <cstdint>
#include <ctime>
#include <string>

#include <fmt/format.h>

#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace detail {

/// Milliseconds since 1970-01-01T00:00:00Z.
inline std::int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

/// `2024-05-01T12:00:00.000Z` — the format of JavaScript's Date.prototype.toISOString.
inline std::string iso8601_ms(std::int64_t ms) {
  std::int64_t secs = ms / 1000;
  std::int64_t rem = ms % 1000;
  if (rem < 0) {
    rem += 1000;
    secs -= 1;
  }
  // Civil-from-days (Howard Hinnant's algorithm): exact for every representable day, no time zone database.
  std::int64_t days = secs / 86400;
  std::int64_t sod = secs % 86400;
  if (sod < 0) {
    sod += 86400;
    days -= 1;
  }
  days += 719468;
  const std::int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const std::int64_t doe = days - era * 146097;
  const std::int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  std::int64_t year = yoe + era * 400;
  const std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const std::int64_t mp = (5 * doy + 2) / 153;
  const std::int64_t day = doy - (153 * mp + 2) / 5 + 1;
  const std::int64_t month = mp < 10 ? mp + 3 : mp - 9;
  if (month <= 2) year += 1;
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", year, month, day, sod / 3600, (sod / 60) % 60,
                     sod % 60, rem);
}

}  // namespace detail
CAIRN_END_NAMESPACE
