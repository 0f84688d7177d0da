// cairn — search: what a query asks (filters, words, a vector) and what it finds (hits with scores and what matched).
// The engine every backend shares is in artifact/search/: words (the tokenizer and the word query), filter (checks
// and filters), rank (BM25, cosine, fusion, order and the cursor), embedding, pipeline (a query prepared, a page
// ranked), the vector index and its cache. docs/search.md has the design.
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
#include "cairn/artifact/search/text.hpp"
#include "cairn/artifact/type.hpp"
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
  std::size_t limit = 10;     ///< 1 to max_limit
  std::string cursor;         ///< next_cursor of the previous page of the same query; "" starts at the beginning
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
  std::vector<std::string> words;    ///< the query's words found in it (excluded words never)
  std::vector<std::string> fields;   ///< where they were found: "title", "description", "value"
  std::optional<double> similarity;  ///< cosine similarity to the query vector
  std::size_t text_rank = 0;         ///< 1-based place in the word ranking (0: not ranked by words)
  std::size_t vector_rank = 0;       ///< 1-based place in the similarity ranking (0: not ranked by similarity)
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
