// cairn::detail — small text checks shared by the validators.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace detail {

/// Number of Unicode code points in UTF-8 text (bytes that do not start a sequence are not counted).
inline std::size_t utf8_length(std::string_view s) noexcept {
  std::size_t n = 0;
  for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

/// True when `s` holds an ASCII control character (U+0000–U+001F or U+007F).
inline bool has_control_char(std::string_view s) noexcept {
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7F) return true;
  }
  return false;
}

/// Length of the well-formed UTF-8 sequence that starts `s` (1 to 4), or 0 when `s` does not start with one (an
/// empty `s`, a stray continuation byte, an overlong form, a surrogate, anything above U+10FFFF, a cut sequence).
/// The byte ranges are those of the Unicode Standard, table 3-7.
inline std::size_t utf8_sequence_length(std::string_view s) noexcept {
  if (s.empty()) return 0;
  const auto c = static_cast<unsigned char>(s[0]);
  if (c < 0x80) return 1;
  std::size_t len;
  unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (s.size() < len) return 0;
  const auto c1 = static_cast<unsigned char>(s[1]);
  if (c1 < lo || c1 > hi) return 0;
  for (std::size_t k = 2; k < len; ++k) {
    if ((static_cast<unsigned char>(s[k]) & 0xC0) != 0x80) return 0;
  }
  return len;
}

/// Length of the longest head of `s` that is well-formed UTF-8 (`s.size()` when all of it is).
inline std::size_t valid_utf8_prefix_length(std::string_view s) noexcept {
  const char* p = s.data();
  const std::size_t n = s.size();
  std::size_t i = 0;
  while (i < n) {
    // Eight ASCII bytes at a time: most text is ASCII, and this is on the path of every record built.
    while (i + 8 <= n) {
      std::uint64_t word;
      std::memcpy(&word, p + i, sizeof word);
      if (word & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i == n) break;
    if (static_cast<unsigned char>(p[i]) < 0x80) {
      ++i;
      continue;
    }
    const std::size_t len = utf8_sequence_length(s.substr(i));
    if (len == 0) return i;
    i += len;
  }
  return n;
}

/// True when `s` is well-formed UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF).
inline bool is_valid_utf8(std::string_view s) noexcept { return valid_utf8_prefix_length(s) == s.size(); }

/// `s` shortened to at most `max` bytes for an error message, with "..." when cut (never inside a UTF-8 sequence);
/// control characters and bytes that are not well-formed UTF-8 escaped as `\xNN`, so the message is always valid
/// UTF-8 and can travel in JSON.
inline std::string excerpt(std::string_view s, std::size_t max = 60) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  std::size_t i = 0;
  while (i < s.size() && i < max) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      if (const std::size_t len = utf8_sequence_length(s.substr(i)); len != 0) {
        if (i + len > max) break;
        out.append(s.substr(i, len));
        i += len;
        continue;
      }
    }
    if (c < 0x20 || c >= 0x7F) {
      out += "\\x";
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 0x0F]);
    } else {
      out.push_back(static_cast<char>(c));
    }
    ++i;
  }
  if (i < s.size()) out += "...";
  return out;
}

/// Appends code point `cp` (at most U+10FFFF) to `out` as UTF-8.
inline void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

/// Longest id, tenant_id, created_by and ArtifactPart id, in bytes.
constexpr std::size_t max_identifier_bytes = 256;

/// What is wrong with `v` as an identifier (an artifact id, a tenant, a creator, an ArtifactPart's artifact id), or
/// "" when nothing is: identifiers are 1 to max_identifier_bytes bytes of valid UTF-8 without control characters
/// and without a space at either end.
inline std::string identifier_problem(std::string_view v) {
  if (v.empty()) return "must not be empty";
  if (v.size() > max_identifier_bytes) {
    return fmt::format("must be at most {} bytes (got {})", max_identifier_bytes, v.size());
  }
  if (!is_valid_utf8(v)) return fmt::format("is not valid UTF-8 ('{}')", excerpt(v));
  if (has_control_char(v)) return fmt::format("must not contain control characters ('{}')", excerpt(v));
  if (v.front() == ' ' || v.back() == ' ') return fmt::format("must not start or end with a space ('{}')", excerpt(v));
  return {};
}

/// Appends `token` to a JSON pointer (RFC 6901: `~` becomes `~0`, `/` becomes `~1`).
inline void append_pointer_token(std::string& out, std::string_view token) {
  out.push_back('/');
  for (char c : token) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out.push_back(c);
    }
  }
}

inline bool is_ascii_lower(char c) noexcept { return c >= 'a' && c <= 'z'; }
inline bool is_ascii_digit(char c) noexcept { return c >= '0' && c <= '9'; }
inline bool is_ascii_alpha(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

}  // namespace detail
CAIRN_END_NAMESPACE
