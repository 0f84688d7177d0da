// cairn (private) — how the PostgresArtifactStore writes cairn's values for PostgreSQL and reads them back: text it
// can hold, an id prefix as a range, a record's words as tsvector lexemes, vectors as bytea of float32.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "cairn/artifact/record.hpp"
#include "cairn/artifact/store.hpp"
#include "cairn/detail/text.hpp"
#include "cairn/error.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace detail {
namespace pg {

inline std::int64_t to_int64(std::string_view s) {
  std::int64_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

/// The smallest UTF-8 string above every string that starts with `prefix` (valid UTF-8) in code point order, or
/// nothing when there is none.
inline std::optional<std::string> utf8_upper_bound(const std::string& prefix) {
  std::vector<std::uint32_t> cps;
  for (std::size_t i = 0; i < prefix.size();) {
    const auto c = static_cast<unsigned char>(prefix[i]);
    const std::size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : 4;
    std::uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1Fu) : len == 3 ? (c & 0x0Fu) : (c & 0x07u);
    for (std::size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(prefix[i + k]) & 0x3Fu);
    cps.push_back(cp);
    i += len;
  }
  while (!cps.empty() && cps.back() == 0x10FFFF) cps.pop_back();
  if (cps.empty()) return std::nullopt;
  cps.back() = cps.back() == 0xD7FF ? 0xE000 : cps.back() + 1;
  std::string out;
  for (std::uint32_t cp : cps) detail::append_utf8(out, cp);

  return out;
}

/// The ids that start with the bytes of a list() prefix, as a range [lower, upper) of PostgreSQL text ("C"
/// collation: byte order, which for UTF-8 is code point order); no upper bound when `upper` is unset.
struct PrefixRange {
  std::string lower;
  std::optional<std::string> upper;
};

/// The range of valid UTF-8 strings that start with the bytes of `prefix`, or nothing when none can (stored ids
/// are valid UTF-8). list() matches prefixes byte-wise on every backend, so a prefix cut inside a UTF-8 sequence
/// ("caf\xC3", the start of "café") matches the ids whose next code point begins with those bytes; PostgreSQL text
/// cannot hold the cut prefix itself, so the range is spelled with whole code points.
inline std::optional<PrefixRange> prefix_range(const std::string& prefix) {
  const std::size_t head = detail::valid_utf8_prefix_length(prefix);
  if (head == prefix.size()) return PrefixRange{prefix, utf8_upper_bound(prefix)};
  const std::string_view tail = std::string_view(prefix).substr(head);
  const auto lead = static_cast<unsigned char>(tail[0]);
  const std::size_t len = lead >= 0xC2 && lead <= 0xDF   ? 2
                          : lead >= 0xE0 && lead <= 0xEF ? 3
                          : lead >= 0xF0 && lead <= 0xF4 ? 4
                                                         : 0;
  // A byte that cannot start a sequence, or a whole (so invalid) sequence, or more text after a cut one.
  if (len == 0 || tail.size() >= len) return std::nullopt;
  std::uint32_t lo = lead & (len == 2 ? 0x1Fu : len == 3 ? 0x0Fu : 0x07u);
  for (std::size_t k = 1; k < tail.size(); ++k) {
    const auto c = static_cast<unsigned char>(tail[k]);
    if ((c & 0xC0) != 0x80) return std::nullopt;
    lo = (lo << 6) | (c & 0x3Fu);
  }
  std::uint32_t hi = lo;
  for (std::size_t k = tail.size(); k < len; ++k) {
    lo <<= 6;
    hi = (hi << 6) | 0x3Fu;
  }
  // Only the code points this length may encode (no overlong forms), and no surrogates.
  lo = std::max(lo, len == 2 ? 0x80u : len == 3 ? 0x800u : 0x10000u);
  hi = std::min(hi, len == 2 ? 0x7FFu : len == 3 ? 0xFFFFu : 0x10FFFFu);
  if (lo >= 0xD800 && lo <= 0xDFFF) lo = 0xE000;
  if (hi >= 0xD800 && hi <= 0xDFFF) hi = 0xD7FF;
  if (lo > hi) return std::nullopt;
  PrefixRange range{prefix.substr(0, head), std::nullopt};
  detail::append_utf8(range.lower, lo);
  std::string top = prefix.substr(0, head);
  detail::append_utf8(top, hi);
  range.upper = utf8_upper_bound(top);
  return range;
}

// ---- words (docs/search.md): PostgreSQL gets the tokens cairn made, never its own parser's, and never query text.

/// A word as a tsvector lexeme. PostgreSQL refuses lexemes of 2 KiB or more, so a longer word is cut (at a
/// character boundary) and told apart from other long words by a hash of the whole word after '#' (which no word
/// holds). Candidates are checked against the record's own words afterwards, so a hash collision finds nothing
/// more.
inline std::string lexeme(const std::string& word) {
  constexpr std::size_t max_bytes = 2000;
  if (word.size() <= max_bytes) return word;
  std::string out = word.substr(0, detail::valid_utf8_prefix_length(std::string_view(word).substr(0, 1900)));
  std::uint64_t h = 1469598103934665603ULL;
  for (const char c : word) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return out + fmt::format("#{:016x}", h);
}

/// A lexeme quoted for tsvector and tsquery input: in single quotes, quotes and backslashes doubled. (cairn's
/// words hold neither, but the quoting does not depend on that.)
inline std::string quoted(const std::string& lex) {
  std::string out = "'";
  for (const char c : lex) {
    if (c == '\'' || c == '\\') out.push_back(c);
    out.push_back(c);
  }
  return out + "'";
}

/// A PostgreSQL array literal of `items`, each element double-quoted with quotes and backslashes escaped.
inline std::string array_literal(const std::vector<std::string>& items) {
  std::string out = "{";
  for (const auto& item : items) {
    out += out.size() > 1 ? ",\"" : "\"";
    for (const char c : item) {
      if (c == '"' || c == '\\') out.push_back('\\');
      out.push_back(c);
    }
    out += '"';
  }
  return out + "}";
}

/// What the words and word_count columns hold for a record: its distinct lexemes (without the tenant's prefix),
/// and how many words it has (BM25's document length).
struct IndexedWords {
  std::vector<std::string> lexemes;
  std::string count;
};

inline IndexedWords indexed_words(const ArtifactRecord& r) {
  const detail::RecordWords w = detail::record_words(r);
  std::vector<std::string> all;
  all.reserve(w.length());
  for (const auto* field : {&w.title, &w.description, &w.value}) {
    for (const auto& word : *field) all.push_back(lexeme(word));
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return {std::move(all), std::to_string(w.length())};
}

/// The words column's tsvector literal: each lexeme with the tenant's prefix ("<no>:"). The server refuses one
/// past its size limit (1 MiB of lexemes) with its own message, and nothing is written.
inline std::string tsvector_literal(const IndexedWords& words, const std::string& tenant_prefix) {
  std::string out;
  for (const auto& lex : words.lexemes) out += (out.empty() ? "" : " ") + quoted(tenant_prefix + lex);
  return out;
}

// ---- vectors: bytea of float32, little-endian (the byte order of every machine cairn builds on is checked below)

static_assert(sizeof(float) == 4, "vectors are stored as 4-byte floats");

/// A vector as bytea input text ("\\x" and two hex digits per byte).
inline std::string vector_bytea(const std::vector<float>& v) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out = "\\x";
  out.reserve(2 + v.size() * 8);
  for (const float x : v) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &x, sizeof bits);
    for (int b = 0; b < 4; ++b) {  // little-endian, whatever the machine's order
      const auto byte = static_cast<unsigned>((bits >> (8 * b)) & 0xFFu);
      out.push_back(hex[byte >> 4]);
      out.push_back(hex[byte & 0xFu]);
    }
  }
  return out;
}

/// The vector a bytea column's text ("\\x...") holds; nothing when it is not whole floats.
/// A bigint column in PostgreSQL's binary format: 8 bytes, most significant first.
inline std::int64_t binary_int64(const char* bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = v << 8 | static_cast<unsigned char>(bytes[i]);
  return static_cast<std::int64_t>(v);
}

inline std::optional<std::vector<float>> bytea_vector(std::string_view text) {
  if (text.size() < 2 || text[0] != '\\' || text[1] != 'x' || (text.size() - 2) % 8 != 0) return std::nullopt;
  const auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
  };
  std::vector<float> out((text.size() - 2) / 8);
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::uint32_t bits = 0;
    for (int b = 0; b < 4; ++b) {
      const int hi = nibble(text[2 + i * 8 + static_cast<std::size_t>(b) * 2]);
      const int lo = nibble(text[3 + i * 8 + static_cast<std::size_t>(b) * 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      bits |= static_cast<std::uint32_t>(hi << 4 | lo) << (8 * b);
    }
    std::memcpy(&out[i], &bits, sizeof bits);
  }
  return out;
}

inline void require_pg_text(const char* field, const std::string& v) {
  if (v.find('\0') != std::string::npos) {
    throw invalid_argument(
        fmt::format("postgres store: {}: holds a NUL character, which PostgreSQL text cannot keep", field));
  }
  if (!detail::is_valid_utf8(v)) {
    throw invalid_argument(fmt::format("postgres store: {}: is not valid UTF-8 ('{}')", field, detail::excerpt(v)));
  }
}
inline void require_pg_text(const char* field, const std::optional<std::string>& v) {
  if (v) require_pg_text(field, *v);
}

}  // namespace pg
}  // namespace detail
CAIRN_END_NAMESPACE
