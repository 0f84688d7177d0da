// cairn — search: what a query asks (filters, words, a vector), what it finds (hits with scores and what matched),
// and the pieces every backend shares: checking a query, the tokenizer, the word-query parser, filter matching,
// BM25, cosine similarity, reciprocal rank fusion and the cursor. docs/search.md has the design and what is built.
//
//     cairn::SearchQuery q;
//     q.text = "quarterly revenue";
//     q.filter.type = cairn::ArtifactType::dataset;
//     q.filter.metadata.push_back({"/region", cairn::FieldOp::in, nlohmann::json::array({"emea", "apac"})});
//     cairn::SearchPage page = store->search("acme", q);
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/artifact/record.hpp"
#include "cairn/artifact/type.hpp"
#include "cairn/detail/cosine.hpp"
#include "cairn/detail/text.hpp"
#include "cairn/error.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

/// How a metadata condition compares (see FieldCondition).
enum class FieldOp { eq, ne, lt, le, gt, ge, in, exists };

/// One condition on a record's metadata: the member at `pointer` (RFC 6901, "/region", "/scores/0") compared with
/// `value`. Comparisons are typed: numbers with numbers, strings with strings (byte order), booleans and null by
/// equality; a member of another type, or no member, does not match (except `ne`, which matches anything that is
/// not equal, a missing member included). `in` takes a non-empty array of values; `exists` ignores `value`.
struct FieldCondition {
  std::string pointer;
  FieldOp op = FieldOp::eq;
  nlohmann::json value;
};

/// Which records a search may return; every condition that is set must hold.
struct SearchFilter {
  std::optional<ArtifactType> type;
  std::optional<std::string> mime_type;
  std::optional<std::string> created_by;
  std::string id_prefix;                       ///< "" matches every id
  std::optional<std::int64_t> created_after;   ///< created_at >= this (ms since the epoch)
  std::optional<std::int64_t> created_before;  ///< created_at < this
  std::vector<FieldCondition> metadata;
};

/// What a search ranks by. `automatic`: words when the query has text, similarity when it has a vector, both
/// (hybrid) when it has both, else the filters alone (in id order, score 0).
enum class SearchMode { automatic, text, similarity, hybrid };

/// A vector and the model that made it. Vectors of different models never mix: a query vector is compared only
/// with vectors of the same model and dimension.
struct Embedding {
  std::string model;
  std::vector<float> values;
};

/// The host's model that turns text into vectors (cairn never calls a model itself). A store given one embeds each
/// record as it is stored, and the text of a query that brings no vector of its own.
class Embedder {
 public:
  virtual ~Embedder() = default;
  /// The model's name, recorded with every vector it makes ("all-MiniLM-L6-v2").
  virtual std::string model() const = 0;
  /// The length of every vector it makes (1 to SearchQuery::max_dimension).
  virtual std::size_t dimension() const = 0;
  /// One vector per text, in order. Called outside every store lock, on whichever thread stores or searches, so
  /// possibly on several threads at once: it must be thread-safe. May be slow (a network call). Throwing fails the
  /// store() or search() that asked, with nothing stored.
  virtual std::vector<std::vector<float>> embed(const std::vector<std::string>& texts) = 0;
  /// The text a record is embedded by: its title, description and the first 8 KiB of its value's text.
  virtual std::string text_of(const ArtifactRecord& record) const;

 protected:
  Embedder() = default;
  Embedder(const Embedder&) = default;
  Embedder& operator=(const Embedder&) = default;
};

/// One search.
struct SearchQuery {
  static constexpr std::size_t max_limit = 100;
  static constexpr std::size_t max_text_bytes = 4096;
  static constexpr std::size_t max_words = 64;
  static constexpr std::size_t max_conditions = 32;
  static constexpr std::size_t max_in_values = 256;
  static constexpr std::size_t max_pointer_steps = 32;
  /// The largest array index a metadata pointer's step may name (2^63 - 1): a step of more digits is refused, even
  /// where it would name an object member.
  static constexpr std::uint64_t max_array_index = 9223372036854775807ULL;
  static constexpr std::size_t max_dimension = 4096;

  /// Words to find (docs/search.md: words, "quoted phrases", -excluded, OR between alternatives).
  std::string text;
  /// A query vector, for similarity.
  std::optional<Embedding> vector;
  SearchMode mode = SearchMode::automatic;
  SearchFilter filter;
  std::size_t limit = 10;  ///< 1 to max_limit
  std::string cursor;      ///< next_cursor of the previous page of the same query; "" starts at the beginning
  bool all_versions = false;  ///< search every version, not only the latest of each id
  /// Similarity is exact by default, at every tenant size and with any filter: the page an exact scan of the
  /// tenant's vectors gives. `exact` says so explicitly (it refuses `ef`).
  bool exact = false;
  /// Approximate similarity, trading recall for time on a big tenant: 0 (the default) is exact; n > 0 lets a store
  /// with hnswlib (CAIRN_WITH_HNSWLIB) search a tenant of 2,048 vectors or more through an HNSW graph that looks at
  /// max(n, limit + 1) candidates (hnswlib's ef; more candidates, higher recall, more time). Where fewer than a page
  /// of those pass the filters, or the graph is not built yet (the first query with `ef` asks for it; it fills as
  /// the tenant's vectors are added), or the tenant is smaller, the answer is the exact one. 1 to max_ef.
  std::size_t ef = 0;
  static constexpr std::size_t max_ef = 10000;
};

/// Why a record was found.
struct SearchMatch {
  std::vector<std::string> words;   ///< the query's words found in it (excluded words never)
  std::vector<std::string> fields;  ///< where they were found: "title", "description", "value"
  std::optional<double> similarity; ///< cosine similarity to the query vector
  std::size_t text_rank = 0;        ///< 1-based place in the word ranking (0: not ranked by words)
  std::size_t vector_rank = 0;      ///< 1-based place in the similarity ranking (0: not ranked by similarity)
};

struct SearchHit {
  ArtifactPtr record;
  double score = 0;  ///< comparable within one query only
  SearchMatch matched;
};

/// One page of results, best first (ties: ascending id, then newest version).
struct SearchPage {
  std::vector<SearchHit> hits;
  std::optional<std::string> next_cursor;  ///< set when more results follow
  /// Records of the tenant that words or meaning could not see because they are not indexed yet (a store from
  /// before search, or records stored before the store had an embedder): ArtifactStore::reindex indexes them.
  /// Filters still see them. 0 when everything is indexed.
  std::size_t unindexed = 0;
};

namespace detail {

// ---- the tokenizer: runs of ASCII letters and digits and of non-ASCII bytes (UTF-8 characters), ASCII folded to
// lowercase. SQLite FTS5's `ascii` tokenizer splits and folds the same way, so every backend finds the same words.

inline bool is_word_byte(unsigned char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c >= 0x80;
}

/// Calls `f(word)` for each word of `text`, lowercased, in order.
template <class F>
void for_each_word(std::string_view text, F&& f) {
  std::string word;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    const unsigned char c = i < text.size() ? static_cast<unsigned char>(text[i]) : static_cast<unsigned char>(0);
    if (i < text.size() && is_word_byte(c)) {
      word.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : static_cast<char>(c));
    } else if (!word.empty()) {
      f(word);
      word.clear();
    }
  }
}

inline std::vector<std::string> words_of(std::string_view text) {
  std::vector<std::string> out;
  for_each_word(text, [&out](const std::string& w) { out.push_back(w); });
  return out;
}

// ---- the word query: alternatives of terms (a term is a word or a phrase); every alternative group must match,
// no excluded term may.

struct QueryTerm {
  std::vector<std::string> words;  // one word, or a phrase's words in order
  std::string text() const {
    std::string s;
    for (const auto& w : words) s += (s.empty() ? "" : " ") + w;
    return s;
  }
};

struct WordQuery {
  std::vector<std::vector<QueryTerm>> all_of;  // each group: any of its terms
  std::vector<QueryTerm> none_of;
  bool empty() const noexcept { return all_of.empty(); }
  /// Every distinct word of the groups (not of the exclusions), in order of appearance.
  std::vector<std::string> words() const {
    std::vector<std::string> out;
    for (const auto& g : all_of) {
      for (const auto& t : g) {
        for (const auto& w : t.words) {
          if (std::find(out.begin(), out.end(), w) == out.end()) out.push_back(w);
        }
      }
    }
    return out;
  }
};

/// Parses the query text: `word`, `"a phrase"`, `-word` / `-"a phrase"` (excluded, where a term starts), `a OR b`
/// (alternatives).
/// Punctuation outside quotes separates words, as in the text searched. Throws cairn::invalid_argument naming the
/// byte position for an unclosed quote, a dangling OR, or a query of exclusions only; limit_exceeded past the limits.
inline WordQuery parse_word_query(std::string_view text) {
  if (text.size() > SearchQuery::max_text_bytes) {
    throw limit_exceeded(fmt::format("search: query text is {} bytes, more than the limit of {}", text.size(),
                                     SearchQuery::max_text_bytes));
  }
  if (!is_valid_utf8(text)) throw invalid_argument("search: query text is not valid UTF-8");
  struct Token {
    QueryTerm term;
    bool excluded;
    bool is_or;
    std::size_t at;
  };
  std::vector<Token> tokens;
  std::size_t words = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    // A minus excludes only where a term starts (at the start or after a space): inside "a-b" it separates.
    const bool term_start = i == 0 || text[i - 1] == ' ' || text[i - 1] == '\t' || text[i - 1] == '\n';
    const bool minus = c == '-' && term_start && i + 1 < text.size() &&
                       (text[i + 1] == '"' || is_word_byte(static_cast<unsigned char>(text[i + 1])));
    if (!minus && c != '"' && !is_word_byte(c)) {
      ++i;
      continue;
    }
    const std::size_t at = i;
    if (minus) ++i;
    QueryTerm term;
    if (text[i] == '"') {
      const std::size_t close = text.find('"', i + 1);
      if (close == std::string_view::npos) {
        throw invalid_argument(fmt::format("search: query text: the quote at byte {} is not closed", i));
      }
      term.words = words_of(text.substr(i + 1, close - i - 1));
      i = close + 1;
      if (term.words.empty()) continue;  // "" or "!!": nothing to find
    } else {
      std::size_t end = i;
      while (end < text.size() && is_word_byte(static_cast<unsigned char>(text[end]))) ++end;
      const std::string_view raw = text.substr(i, end - i);
      i = end;
      if (!minus && raw == "OR") {
        tokens.push_back({{}, false, true, at});
        continue;
      }
      term.words = words_of(raw);
    }
    words += term.words.size();
    if (words > SearchQuery::max_words) {
      throw limit_exceeded(
          fmt::format("search: query text has more than {} words", SearchQuery::max_words));
    }
    tokens.push_back({std::move(term), minus, false, at});
  }
  WordQuery q;
  for (std::size_t k = 0; k < tokens.size(); ++k) {
    Token& t = tokens[k];
    if (t.is_or) {
      const bool joins = k > 0 && k + 1 < tokens.size() && !tokens[k - 1].is_or && !tokens[k - 1].excluded &&
                         !tokens[k + 1].is_or && !tokens[k + 1].excluded;
      if (!joins) {
        throw invalid_argument(
            fmt::format("search: query text: OR at byte {} must stand between two words or phrases", t.at));
      }
      q.all_of.back().push_back(std::move(tokens[k + 1].term));
      ++k;
      continue;
    }
    if (t.excluded) {
      q.none_of.push_back(std::move(t.term));
    } else {
      q.all_of.push_back({std::move(t.term)});
    }
  }
  if (q.all_of.empty() && !q.none_of.empty()) {
    throw invalid_argument("search: query text excludes words but asks for none");
  }
  return q;
}

// ---- filters

inline bool json_pointer_valid(const std::string& pointer) {
  if (pointer.empty()) return true;
  if (pointer[0] != '/') return false;
  for (std::size_t i = 0; i < pointer.size(); ++i) {
    if (pointer[i] == '~' && (i + 1 >= pointer.size() || (pointer[i + 1] != '0' && pointer[i + 1] != '1'))) {
      return false;
    }
  }
  return true;
}

/// The first reference token of `pointer` that reads as an array index (digits, no leading zero) past
/// SearchQuery::max_array_index, or nothing. nlohmann's pointers throw out_of_range on such a token when they meet
/// an array, so a query names it before any record is read.
inline std::optional<std::string_view> array_index_too_big(std::string_view pointer) {
  std::size_t at = 0;
  while (at < pointer.size()) {
    const std::size_t start = at + 1;
    std::size_t end = pointer.find('/', start);
    if (end == std::string_view::npos) end = pointer.size();
    const std::string_view token = pointer.substr(start, end - start);
    at = end;
    if (token.empty() || token.size() < 19 || token[0] == '0' ||
        token.find_first_not_of("0123456789") != std::string_view::npos) {
      continue;  // 18 digits or fewer are below 2^63: not too big
    }
    constexpr std::string_view max_index = "9223372036854775807";  // 2^63 - 1
    if (token.size() > max_index.size() || (token.size() == max_index.size() && token > max_index)) return token;
  }
  return std::nullopt;
}

inline std::string_view field_op_name(FieldOp op) noexcept {
  switch (op) {
    case FieldOp::eq: return "eq";
    case FieldOp::ne: return "ne";
    case FieldOp::lt: return "lt";
    case FieldOp::le: return "le";
    case FieldOp::gt: return "gt";
    case FieldOp::ge: return "ge";
    case FieldOp::in: return "in";
    case FieldOp::exists: return "exists";
  }
  return "eq";
}

/// Checks a vector given with a query ("search") or a record ("store_embedded"): a model name, 1 to
/// SearchQuery::max_dimension elements, every one finite, not all zero; with `embedder` (a store's), also its model
/// and dimension. Throws cairn::invalid_argument beginning with `what`, naming the first bad element
/// ("store_embedded: vector[2] is not a finite number") or both models. Every backend checks with this, so the
/// messages are the same everywhere.
inline void check_vector(std::string_view what, const Embedding& e, const Embedder* embedder = nullptr) {
  const auto& v = e.values;
  if (e.model.empty()) throw invalid_argument(fmt::format("{}: vector.model must not be empty", what));
  if (v.empty() || v.size() > SearchQuery::max_dimension) {
    throw invalid_argument(fmt::format("{}: vector has {} dimensions; 1 to {} are allowed", what, v.size(),
                                       SearchQuery::max_dimension));
  }
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!std::isfinite(v[i])) throw invalid_argument(fmt::format("{}: vector[{}] is not a finite number", what, i));
  }
  bool zero = true;
  for (float x : v) zero = zero && x == 0.0f;
  if (zero) throw invalid_argument(fmt::format("{}: vector is all zeros (it has no direction to compare)", what));
  if (embedder) {
    const std::string model = embedder->model();
    const std::size_t dimension = embedder->dimension();
    if (e.model != model || v.size() != dimension) {
      throw invalid_argument(fmt::format(
          "{}: a vector of model '{}' with {} dimensions, but this store embeds with model '{}' ({} dimensions): "
          "vectors of different models never mix",
          what, excerpt(e.model, 80), v.size(), excerpt(model, 80), dimension));
    }
  }
}

/// Throws cairn::invalid_argument / limit_exceeded naming what is wrong with `q` and where; nothing else checks it.
inline void check_search_query(const SearchQuery& q) {
  if (q.limit == 0 || q.limit > SearchQuery::max_limit) {
    throw invalid_argument(
        fmt::format("search: limit must be between 1 and {} (got {})", SearchQuery::max_limit, q.limit));
  }
  if (q.ef > SearchQuery::max_ef) {
    throw limit_exceeded(fmt::format("search: ef must be at most {} (got {})", SearchQuery::max_ef, q.ef));
  }
  if (q.ef > 0 && q.exact) throw invalid_argument("search: ef (approximate) and exact exclude each other");
  const auto& f = q.filter;
  if (f.metadata.size() > SearchQuery::max_conditions) {
    throw limit_exceeded(fmt::format("search: filter.metadata has {} conditions, more than the limit of {}",
                                     f.metadata.size(), SearchQuery::max_conditions));
  }
  for (std::size_t i = 0; i < f.metadata.size(); ++i) {
    const auto& c = f.metadata[i];
    const auto where = [&] { return fmt::format("search: filter.metadata[{}] ('{}')", i, excerpt(c.pointer, 80)); };
    if (!json_pointer_valid(c.pointer)) throw invalid_argument(where() + ": not a JSON pointer (RFC 6901)");
    if (const auto token = array_index_too_big(c.pointer)) {
      throw invalid_argument(where() + fmt::format(": array index '{}' is past the largest, {}", excerpt(*token, 40),
                                                   SearchQuery::max_array_index));
    }
    if (static_cast<std::size_t>(std::count(c.pointer.begin(), c.pointer.end(), '/')) >
        SearchQuery::max_pointer_steps) {
      throw limit_exceeded(where() + fmt::format(": more than {} steps", SearchQuery::max_pointer_steps));
    }
    switch (c.op) {
      case FieldOp::exists: break;
      case FieldOp::eq:
      case FieldOp::ne:
        if (c.value.is_structured()) {
          throw invalid_argument(where() + ": eq/ne compare with a scalar, not an array or object");
        }
        break;
      case FieldOp::lt:
      case FieldOp::le:
      case FieldOp::gt:
      case FieldOp::ge:
        if (!c.value.is_number() && !c.value.is_string()) {
          throw invalid_argument(where() + fmt::format(": {} compares with a number or a string, got {}",
                                                       field_op_name(c.op), c.value.type_name()));
        }
        if (c.value.is_number_float() && std::isnan(c.value.get<double>())) {
          throw invalid_argument(where() + ": compares with NaN");
        }
        break;
      case FieldOp::in:
        if (!c.value.is_array() || c.value.empty()) {
          throw invalid_argument(where() + ": in takes a non-empty array of values");
        }
        if (c.value.size() > SearchQuery::max_in_values) {
          throw limit_exceeded(where() + fmt::format(": in lists {} values, more than the limit of {}",
                                                     c.value.size(), SearchQuery::max_in_values));
        }
        for (const auto& v : c.value) {
          if (v.is_structured()) throw invalid_argument(where() + ": in takes scalar values only");
        }
        break;
    }
  }
  if (f.created_after && f.created_before && *f.created_after >= *f.created_before) {
    throw invalid_argument("search: filter.created_after must be before filter.created_before");
  }
  if (q.vector) check_vector("search", *q.vector);
  const bool has_text = !q.text.empty();
  if (q.mode == SearchMode::text && !has_text) throw invalid_argument("search: mode text needs query text");
  if (!has_text && !q.vector && f.metadata.empty() && !f.type && !f.mime_type && !f.created_by &&
      f.id_prefix.empty() && !f.created_after && !f.created_before) {
    throw invalid_argument("search: nothing to search by (no text, no vector, no filter)");
  }
}

// Orders scalars of one kind; nullopt when the two cannot be compared (different kinds).
inline std::optional<int> compare_scalars(const nlohmann::json& a, const nlohmann::json& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_number_float() || b.is_number_float()) {
      const double x = a.get<double>(), y = b.get<double>();
      if (std::isnan(x) || std::isnan(y)) return std::nullopt;
      return x < y ? -1 : x > y ? 1 : 0;
    }
    if (a.is_number_unsigned() && b.is_number_unsigned()) {
      const auto x = a.get<std::uint64_t>(), y = b.get<std::uint64_t>();
      return x < y ? -1 : x > y ? 1 : 0;
    }
    // At least one signed integer: compare through the signs first, so that uint64 above int64's range orders right.
    const auto as_wide = [](const nlohmann::json& j) -> std::pair<bool, std::uint64_t> {
      if (j.is_number_unsigned()) return {false, j.get<std::uint64_t>()};
      const auto v = j.get<std::int64_t>();
      return v < 0 ? std::pair<bool, std::uint64_t>{true, 0 - static_cast<std::uint64_t>(v)}
                   : std::pair<bool, std::uint64_t>{false, static_cast<std::uint64_t>(v)};
    };
    const auto [xn, xm] = as_wide(a);
    const auto [yn, ym] = as_wide(b);
    if (xn != yn) return xn ? -1 : 1;
    if (xm == ym) return 0;
    return (xm < ym) != xn ? -1 : 1;
  }
  if (a.is_string() && b.is_string()) {
    const int c = a.get_ref<const std::string&>().compare(b.get_ref<const std::string&>());
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.type() == b.type() && (a.is_boolean() || a.is_null())) return a == b ? 0 : std::optional<int>(std::nullopt);
  return std::nullopt;
}

/// The member of `doc` that `pointer` (a valid RFC 6901 pointer, json_pointer_valid) names, or null where there is
/// none: what nlohmann's `contains` and `at` find, walked once and without allocating (a token is unescaped into a
/// string only when it holds '~'). Array steps take decimal indexes without leading zeros; "-" names nothing.
inline const nlohmann::json* pointee(const nlohmann::json& doc, std::string_view pointer) {
  const nlohmann::json* at = &doc;
  std::size_t start = 1;
  while (start <= pointer.size() && !pointer.empty()) {
    std::size_t end = pointer.find('/', start);
    if (end == std::string_view::npos) end = pointer.size();
    std::string_view token = pointer.substr(start, end - start);
    std::string unescaped;
    if (token.find('~') != std::string_view::npos) {
      for (std::size_t i = 0; i < token.size(); ++i) {
        if (token[i] == '~' && i + 1 < token.size()) {
          unescaped.push_back(token[i + 1] == '1' ? '/' : '~');
          ++i;
        } else {
          unescaped.push_back(token[i]);
        }
      }
      token = unescaped;
    }
    if (at->is_object()) {
      const auto& object = at->get_ref<const nlohmann::json::object_t&>();
      const auto it = object.find(token);  // nlohmann 3.11's object_t compares transparently (std::less<>)
      if (it == object.end()) return nullptr;
      at = &it->second;
    } else if (at->is_array()) {
      if (token.empty() || token.size() > 19 || (token.size() > 1 && token[0] == '0')) return nullptr;
      std::uint64_t index = 0;
      for (const char ch : token) {
        if (ch < '0' || ch > '9') return nullptr;
        index = index * 10 + static_cast<std::uint64_t>(ch - '0');
      }
      if (index >= at->size()) return nullptr;
      at = &(*at)[static_cast<std::size_t>(index)];
    } else {
      return nullptr;
    }
    start = end + 1;
  }
  return at;
}

inline bool condition_holds(const nlohmann::json& metadata, const FieldCondition& c) {
  const nlohmann::json* field = nullptr;
  if (metadata.is_object() || metadata.is_array()) field = pointee(metadata, c.pointer);
  if (c.op == FieldOp::exists) return field != nullptr;
  if (c.op == FieldOp::ne) {
    if (!field) return true;
    const auto cmp = compare_scalars(*field, c.value);
    return !cmp || *cmp != 0;
  }
  if (!field || field->is_structured()) return false;
  if (c.op == FieldOp::in) {
    for (const auto& v : c.value) {
      const auto cmp = compare_scalars(*field, v);
      if (cmp && *cmp == 0) return true;
    }
    return false;
  }
  const auto cmp = compare_scalars(*field, c.value);
  if (!cmp) return false;
  switch (c.op) {
    case FieldOp::eq: return *cmp == 0;
    case FieldOp::lt: return *cmp < 0;
    case FieldOp::le: return *cmp <= 0;
    case FieldOp::gt: return *cmp > 0;
    case FieldOp::ge: return *cmp >= 0;
    default: return false;
  }
}

/// True when `r` passes every condition of `f`.
inline bool matches_filter(const ArtifactRecord& r, const SearchFilter& f) {
  if (f.type && r.type() != *f.type) return false;
  if (f.mime_type && r.mime_type() != *f.mime_type) return false;
  if (f.created_by && r.created_by() != *f.created_by) return false;
  if (!f.id_prefix.empty() && r.id().compare(0, f.id_prefix.size(), f.id_prefix) != 0) return false;
  if (f.created_after && r.created_at() < *f.created_after) return false;
  if (f.created_before && r.created_at() >= *f.created_before) return false;
  for (const auto& c : f.metadata) {
    if (!condition_holds(r.metadata(), c)) return false;
  }
  return true;
}

/// What a filter reads of a version besides its id: what a SQL store's vector index keeps beside each vector
/// (detail::VectorChange::fields), so that its similarity search checks a filter in memory and reads the rows of
/// the page only. Records are immutable, so a version's fields never change while it is indexed.
struct FilterFields {
  /// Metadata whose JSON text is longer than this is not kept (`metadata` null): the row decides for that version.
  static constexpr std::size_t max_kept_metadata_bytes = 2048;
  std::string type;
  std::optional<std::string> mime_type;
  std::optional<std::string> created_by;
  std::int64_t created_at = 0;
  std::shared_ptr<const nlohmann::json> metadata;  ///< null: not kept
};

/// matches_filter() for a version of `id` whose fields were kept with their metadata (f.metadata non-null).
inline bool matches_filter(const std::string& id, const FilterFields& r, const SearchFilter& f) {
  if (f.type && f.type->str() != r.type) return false;
  if (f.mime_type && r.mime_type != f.mime_type) return false;
  if (f.created_by && r.created_by != f.created_by) return false;
  if (!f.id_prefix.empty() && id.compare(0, f.id_prefix.size(), f.id_prefix) != 0) return false;
  if (f.created_after && r.created_at < *f.created_after) return false;
  if (f.created_before && r.created_at >= *f.created_before) return false;
  for (const auto& c : f.metadata) {
    if (!condition_holds(*r.metadata, c)) return false;
  }
  return true;
}

// ---- what a record's words are

/// The searchable text of a record's value: a string whole; for JSON, every string leaf and member name, in
/// document order, separated by newlines; at most `max_bytes` (cut at a UTF-8 character boundary).
inline std::string value_text(const nlohmann::json& value, std::size_t max_bytes = 64 * 1024) {
  std::string out;
  struct Item {
    const nlohmann::json* node;  // a value to walk, or null for a member name
    std::string_view name;
  };
  std::vector<Item> todo{{&value, {}}};
  const auto add = [&out, max_bytes](std::string_view s) {
    if (!out.empty()) out.push_back('\n');
    out.append(s.substr(0, max_bytes - std::min(out.size(), max_bytes)));
  };
  while (!todo.empty() && out.size() < max_bytes) {
    const Item item = todo.back();
    todo.pop_back();
    if (!item.node) {
      add(item.name);
    } else if (item.node->is_string()) {
      add(item.node->get_ref<const std::string&>());
    } else if (item.node->is_object()) {
      std::vector<Item> members;
      for (auto it = item.node->begin(); it != item.node->end(); ++it) {
        members.push_back({nullptr, it.key()});
        members.push_back({&it.value(), {}});
      }
      todo.insert(todo.end(), members.rbegin(), members.rend());
    } else if (item.node->is_array()) {
      for (auto it = item.node->rbegin(); it != item.node->rend(); ++it) todo.push_back({&*it, {}});
    }
  }
  out.resize(std::min(out.size(), max_bytes));
  out.resize(valid_utf8_prefix_length(out));
  return out;
}

/// A record's words by field, as the word index sees them.
struct RecordWords {
  std::vector<std::string> title, description, value;
  std::size_t length() const noexcept { return title.size() + description.size() + value.size(); }
};

inline RecordWords record_words(const ArtifactRecord& r) {
  RecordWords w;
  w.title = words_of(r.title());
  w.description = words_of(r.description());
  if (r.has_value()) w.value = words_of(value_text(r.value()));
  return w;
}

inline bool contains_term(const std::vector<std::string>& words, const QueryTerm& t) {
  if (t.words.empty() || words.size() < t.words.size()) return false;
  for (std::size_t i = 0; i + t.words.size() <= words.size(); ++i) {
    if (std::equal(t.words.begin(), t.words.end(), words.begin() + static_cast<std::ptrdiff_t>(i))) return true;
  }
  return false;
}

inline bool contains_term(const RecordWords& w, const QueryTerm& t) {
  return contains_term(w.title, t) || contains_term(w.description, t) || contains_term(w.value, t);
}

/// True when the record's words satisfy the word query (every group has a term in it, no exclusion is in it).
inline bool matches_words(const RecordWords& w, const WordQuery& q) {
  for (const auto& group : q.all_of) {
    bool any = false;
    for (const auto& t : group) any = any || contains_term(w, t);
    if (!any) return false;
  }
  for (const auto& t : q.none_of) {
    if (contains_term(w, t)) return false;
  }
  return true;
}

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

// ---- embedding

/// `embedder.embed(texts)` checked: one vector per text, each of the embedder's dimension, every element finite.
/// Throws cairn::invalid_argument naming the model and what is wrong (nothing is stored then).
inline std::vector<Embedding> embed_checked(Embedder& embedder, const std::vector<std::string>& texts) {
  const std::string model = embedder.model();
  const std::size_t dimension = embedder.dimension();
  if (model.empty() || dimension == 0 || dimension > SearchQuery::max_dimension) {
    throw invalid_argument(fmt::format("embedder '{}': needs a model name and a dimension of 1 to {} (got {})",
                                       excerpt(model, 80), SearchQuery::max_dimension, dimension));
  }
  auto vectors = embedder.embed(texts);
  if (vectors.size() != texts.size()) {
    throw invalid_argument(fmt::format("embedder '{}': returned {} vectors for {} texts", excerpt(model, 80),
                                       vectors.size(), texts.size()));
  }
  std::vector<Embedding> out;
  out.reserve(vectors.size());
  for (std::size_t i = 0; i < vectors.size(); ++i) {
    if (vectors[i].size() != dimension) {
      throw invalid_argument(fmt::format("embedder '{}': vector {} has {} dimensions, not {}", excerpt(model, 80), i,
                                         vectors[i].size(), dimension));
    }
    for (std::size_t k = 0; k < dimension; ++k) {
      if (!std::isfinite(vectors[i][k])) {
        throw invalid_argument(
            fmt::format("embedder '{}': vector {} [{}] is not a finite number", excerpt(model, 80), i, k));
      }
    }
    out.push_back(Embedding{model, std::move(vectors[i])});
  }
  return out;
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
  const auto bad = [] { return invalid_argument("search: cursor is not one this query gave (pass next_cursor "
                                                "of the previous page of the same query)"); };
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

inline std::string Embedder::text_of(const ArtifactRecord& record) const {
  std::string text = record.title();
  if (!record.description().empty()) text += (text.empty() ? "" : "\n") + record.description();
  if (record.has_value()) {
    const std::string value = detail::value_text(record.value(), 8 * 1024);
    if (!value.empty()) text += (text.empty() ? "" : "\n") + value;
  }
  return text;
}

CAIRN_END_NAMESPACE
