// cairn (private) — how the SqliteArtifactStore writes cairn's values for SQLite and reads them back: a field's
// words as the FTS5 table holds them (with the tenant's number), vectors as float32 BLOBs, an id prefix as a range.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace detail {
namespace sqlite {

/// The words of a field as the FTS5 table holds them: each prefixed with the tenant's number.
inline std::string prefixed_words(const std::vector<std::string>& words, const std::string& prefix) {
  std::string out;
  for (const auto& w : words) {
    if (!out.empty()) out.push_back(' ');
    out += prefix;
    out += w;
  }
  return out;
}

inline std::string tenant_prefix(std::int64_t n) { return fmt::format("{}x", n); }

/// A vector column's floats (float32 in the machine's byte order, as stored).
inline std::vector<float> floats_of(std::string_view blob) {
  std::vector<float> out(blob.size() / sizeof(float));
  if (!out.empty()) std::memcpy(out.data(), blob.data(), out.size() * sizeof(float));
  return out;
}

/// The smallest string above every string that starts with `prefix` (byte-wise), or nothing when there is none.
inline std::optional<std::string> prefix_upper_bound(std::string prefix) {
  while (!prefix.empty() && static_cast<unsigned char>(prefix.back()) == 0xFF) prefix.pop_back();
  if (prefix.empty()) return std::nullopt;
  prefix.back() = static_cast<char>(static_cast<unsigned char>(prefix.back()) + 1);
  return prefix;
}

}  // namespace sqlite
}  // namespace detail
CAIRN_END_NAMESPACE
