// cairn::detail — search's scores and order: BM25 over the records searched, cosine similarity, reciprocal rank
// fusion, what matched, results order, and the cursor that continues a page.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/artifact/record.hpp"
#include "cairn/artifact/search.hpp"
#include "cairn/artifact/search/cosine.hpp"
#include "cairn/artifact/search/words.hpp"
#include "cairn/error.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace detail {

/// BM25 over a set of documents (the records searched): k1 = 1.2, b = 0.75, Lucene's idf = ln(1 + (N - n + 0.5) /
/// (n + 0.5)) (SQLite FTS5's bm25() uses ln((N - n + 0.5) / (n + 0.5)); docs/search.md). Add every document, then
/// score.
class Bm25 {
 public:
  static constexpr double k1 = 1.2;
  static constexpr double b = 0.75;

  explicit Bm25(std::vector<std::string> query_words) : words_(std::move(query_words)), df_(words_.size(), 0) {}
  /// The statistics an index keeps, instead of add()ing every document: how many documents, their total length in
  /// words, and how many documents hold each query word (`df`, in the order of `query_words`). Scores are then
  /// exactly those of add()ing the same documents.
  Bm25(std::vector<std::string> query_words, std::size_t documents, std::size_t total_length,
       std::vector<std::size_t> df)
      : words_(std::move(query_words)), df_(std::move(df)), documents_(documents), total_length_(total_length) {
    df_.resize(words_.size(), 0);
  }

  void add(const RecordWords& w) {
    ++documents_;
    total_length_ += w.length();
    for (std::size_t i = 0; i < words_.size(); ++i) {
      if (count(w, words_[i]) > 0) ++df_[i];
    }
  }

  double score(const RecordWords& w) const {
    return score_of([&](std::size_t i) { return count(w, words_[i]); }, w.length());
  }

  /// The score of a document of `length` words that holds query word i `tf(i)` times (an index that counted them):
  /// score()'s arithmetic, so the same bits.
  template <class Tf>
  double score_of(Tf&& tf, std::size_t length) const {
    if (documents_ == 0) return 0;
    const double avg = static_cast<double>(total_length_) / static_cast<double>(documents_);
    const double len = static_cast<double>(length);
    double s = 0;
    for (std::size_t i = 0; i < words_.size(); ++i) {
      const double n = static_cast<double>(tf(i));
      if (n == 0) continue;
      s += weight(n, static_cast<double>(df_[i]), static_cast<double>(documents_), len, avg);
    }
    return s;
  }

  /// One word's part of a document's score: it occurs `tf` times in a document of `len` words, and in `n` of the
  /// `total` documents, whose average length is `avg`. Backends that count for themselves (an index) score with
  /// this, so their scores equal the scan's to the bit.
  static double weight(double tf, double n, double total, double len, double avg) noexcept {
    const double idf = std::log(1.0 + (total - n + 0.5) / (n + 0.5));
    return idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * (avg > 0 ? len / avg : 0)));
  }

  const std::vector<std::string>& words() const noexcept { return words_; }

  static std::size_t count(const RecordWords& w, const std::string& word) {
    return static_cast<std::size_t>(std::count(w.title.begin(), w.title.end(), word) +
                                    std::count(w.description.begin(), w.description.end(), word) +
                                    std::count(w.value.begin(), w.value.end(), word));
  }

 private:
  std::vector<std::string> words_;
  std::vector<std::size_t> df_;
  std::size_t documents_ = 0;
  std::size_t total_length_ = 0;
};

/// What of the query's words a record holds, and in which fields.
inline void describe_word_match(const RecordWords& w, const std::vector<std::string>& words, SearchMatch& m) {
  const auto has = [](const std::vector<std::string>& v, const std::string& word) {
    return std::find(v.begin(), v.end(), word) != v.end();
  };
  bool t = false, d = false, v = false;
  for (const auto& word : words) {
    const bool in_t = has(w.title, word), in_d = has(w.description, word), in_v = has(w.value, word);
    if (in_t || in_d || in_v) m.words.push_back(word);
    t = t || in_t;
    d = d || in_d;
    v = v || in_v;
  }
  if (t) m.fields.emplace_back("title");
  if (d) m.fields.emplace_back("description");
  if (v) m.fields.emplace_back("value");
}

/// Cosine similarity of two vectors of one dimension (0 when either has no length).
inline double cosine(const std::vector<float>& a, const std::vector<float>& b) noexcept {
  return cosine_of(a.data(), b.data(), std::min(a.size(), b.size()));
}

/// Reciprocal rank fusion: 1 / (k + rank) summed over the lists a record is ranked in (k = 60).
inline double rrf(std::size_t text_rank, std::size_t vector_rank, double k = 60) noexcept {
  double s = 0;
  if (text_rank) s += 1.0 / (k + static_cast<double>(text_rank));
  if (vector_rank) s += 1.0 / (k + static_cast<double>(vector_rank));
  return s;
}

// ---- ordering and the cursor

/// Results order: higher score first, then ascending id, then newer version.
inline bool hit_before(double sa, const ArtifactRecord& a, double sb, const ArtifactRecord& b) noexcept {
  if (sa != sb) return sa > sb;
  if (const int c = a.id().compare(b.id()); c != 0) return c < 0;
  return a.version() > b.version();
}

/// A fingerprint of everything in `q` but its cursor and limit, so a cursor is refused with another query.
inline std::string search_fingerprint(const SearchQuery& q) {
  // FNV-1a over every field that changes what the query finds, each behind its length (so that no two queries'
  // fields run into the same bytes); the vector by its floats' bits.
  std::uint64_t h = 1469598103934665603ULL;
  const auto bytes = [&h](const void* data, std::size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < n; ++i) {
      h ^= p[i];
      h *= 1099511628211ULL;
    }
  };
  const auto number = [&bytes](std::uint64_t v) { bytes(&v, sizeof v); };
  const auto text = [&](std::string_view s) {
    number(s.size());
    bytes(s.data(), s.size());
  };
  const auto optional_text = [&](const std::optional<std::string>& s) {
    number(s ? 1 : 0);
    if (s) text(*s);
  };
  const auto optional_time = [&](const std::optional<std::int64_t>& t) {
    number(t ? 1 : 0);
    if (t) number(static_cast<std::uint64_t>(*t));
  };
  text(q.text);
  number(static_cast<std::uint64_t>(q.mode));
  number(q.all_versions ? 1 : 0);
  number(q.vector ? 1 : 0);
  if (q.vector) {
    text(q.vector->model);
    number(q.vector->values.size());
    bytes(q.vector->values.data(), q.vector->values.size() * sizeof(float));
  }
  const auto& f = q.filter;
  number(f.type ? 1 : 0);
  if (f.type) text(f.type->str());
  optional_text(f.mime_type);
  optional_text(f.created_by);
  text(f.id_prefix);
  optional_time(f.created_after);
  optional_time(f.created_before);
  number(f.metadata.size());
  for (const auto& c : f.metadata) {
    text(c.pointer);
    number(static_cast<std::uint64_t>(c.op));
    text(c.value.dump());
  }
  return fmt::format("{:016x}", h);
}

/// Where a page ended: the last hit's score (its exact bits), version and id.
struct SearchCursor {
  double score = 0;
  std::uint64_t version = 0;
  std::string id;
};

inline std::string encode_cursor(const SearchQuery& q, const SearchHit& last) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &last.score, sizeof bits);
  return fmt::format("{}.{:016x}.{}.{}", search_fingerprint(q), bits, last.record->version(), last.record->id());
}

/// The position `q.cursor` names, or nothing for "". Throws cairn::invalid_argument for a cursor that is not one
/// this query gave.
inline std::optional<SearchCursor> decode_cursor(const SearchQuery& q) {
  if (q.cursor.empty()) return std::nullopt;
  const auto bad = [] {
    return invalid_argument(
        "search: cursor is not one this query gave (pass next_cursor "
        "of the previous page of the same query)");
  };
  const std::string& c = q.cursor;
  const std::size_t a = c.find('.');
  const std::size_t b = a == std::string::npos ? a : c.find('.', a + 1);
  const std::size_t v = b == std::string::npos ? b : c.find('.', b + 1);
  if (v == std::string::npos || c.compare(0, a, search_fingerprint(q)) != 0 || b - a - 1 != 16) throw bad();
  SearchCursor out;
  std::uint64_t bits = 0;
  for (std::size_t i = a + 1; i < b; ++i) {
    const char ch = c[i];
    const int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
    if (d < 0) throw bad();
    bits = bits << 4 | static_cast<std::uint64_t>(d);
  }
  std::memcpy(&out.score, &bits, sizeof bits);
  if (v == b + 1 || v - b - 1 > 20) throw bad();
  for (std::size_t i = b + 1; i < v; ++i) {
    if (c[i] < '0' || c[i] > '9') throw bad();
    out.version = out.version * 10 + static_cast<std::uint64_t>(c[i] - '0');
  }
  out.id = c.substr(v + 1);
  return out;
}

/// True when a hit (score, record) comes after the cursor's position in results order.
inline bool after_cursor(const SearchCursor& at, double score, const ArtifactRecord& r) noexcept {
  if (score != at.score) return score < at.score;
  if (const int c = r.id().compare(at.id); c != 0) return c > 0;
  return r.version() < at.version;
}

}  // namespace detail
CAIRN_END_NAMESPACE
