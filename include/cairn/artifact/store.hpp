// cairn — ArtifactStore: the tenant-scoped, versioned store every backend implements.
//
// Every call names a tenant, and a tenant sees only its own artifacts: another tenant's id behaves exactly like an
// id that does not exist (same result, same error text). Storing an id that exists adds a version; fetch returns
// the latest unless asked for another. Implementations are thread-safe.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cairn/artifact/record.hpp"
#include "cairn/artifact/search.hpp"
#include "cairn/artifact/type.hpp"
#include "cairn/clock.hpp"
#include "cairn/detail/random.hpp"
#include "cairn/detail/time.hpp"
#include "cairn/error.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

/// What `ArtifactStore::list` returns; every filter that is set must match.
struct ListQuery {
  static constexpr std::size_t max_limit = 1000;

  std::string prefix;                     ///< id prefix ("" matches every id)
  std::optional<ArtifactType> type;       ///< type of the latest version
  std::optional<std::string> created_by;  ///< creator of the latest version
  std::size_t limit = 100;                ///< page size, 1 to max_limit
  std::string cursor;                     ///< `next_cursor` of the previous page; "" starts at the beginning
};

/// One page of a listing: the latest version of each matching id, in ascending id order (byte-wise).
struct ListPage {
  std::vector<ArtifactPtr> items;
  std::optional<std::string> next_cursor;  ///< set when more matching artifacts follow this page
  /// Ids on this page whose latest version the store holds but cannot read back (a row edited behind the store's
  /// back, or written by an older version that accepted what records now refuse). They take a place in the page
  /// (so a page may hold fewer items than the limit) but never make the listing fail: fetch one to get the error,
  /// remove it to clean up. Always empty for InMemoryArtifactStore.
  std::vector<std::string> unreadable;
};

/// The store interface. Implementations are thread-safe; records come back as shared, immutable pointers.
class ArtifactStore {
 public:
  /// Asks fetch for the newest version.
  static constexpr std::uint64_t latest = 0;

  virtual ~ArtifactStore() = default;

  /// Stores `record` in its tenant and returns the stored record: an empty id is replaced by a random UUID v4, the
  /// version is 1 for a new id and one more than the latest for an existing one (the record's own version is
  /// ignored), and a created_at of 0 becomes the current time.
  [[nodiscard]] virtual ArtifactPtr store(const ArtifactRecord& record) = 0;

  /// Asks store_if to create: the id must have no version yet.
  static constexpr std::uint64_t absent = 0;

  /// Stores `record` only when the latest version of its id is `expected_version` — `absent` (0): the id must not
  /// exist in the tenant; N: its latest version must be N — checked and written atomically, so of any number of
  /// writers racing with the same expectation exactly one wins. Throws cairn::conflict (nothing stored) when the
  /// latest version is something else, naming both. An empty id with `absent` stores under a fresh UUID; an empty id
  /// with a version is a cairn::invalid_argument.
  ///
  ///     auto v1 = store.store_if(*draft, cairn::ArtifactStore::absent);  // create, never overwrite
  ///     store.store_if(*draft_2, v1->version());                          // replace only what we read
  [[nodiscard]] virtual ArtifactPtr store_if(const ArtifactRecord& record, std::uint64_t expected_version) = 0;

  /// The given version (latest by default) of `id` in `tenant_id`, or null when there is none.
  [[nodiscard]] virtual ArtifactPtr fetch(const std::string& id, const std::string& tenant_id,
                                          std::uint64_t version = latest) const = 0;

  /// Removes every version of `id`. Throws cairn::not_found when the tenant has no such id. A later store of the
  /// same id starts again at version 1.
  virtual void remove(const std::string& id, const std::string& tenant_id) = 0;

  /// The version numbers of `id`, oldest first (1, 2, ... n); empty when the tenant has no such id.
  [[nodiscard]] virtual std::vector<std::uint64_t> versions(const std::string& id,
                                                            const std::string& tenant_id) const = 0;

  /// A page of the tenant's artifacts in stable id order. Throws cairn::invalid_argument for a limit of 0 or
  /// above ListQuery::max_limit.
  [[nodiscard]] virtual ListPage list(const std::string& tenant_id, const ListQuery& query = {}) const = 0;

  /// Finds the tenant's artifacts by filters, words and similarity (cairn/artifact/search.hpp, docs/search.md).
  /// Throws cairn::invalid_argument / limit_exceeded for a query that is malformed or too large, naming what and
  /// where; another tenant's artifacts are never seen. This default reads the tenant's artifacts through list()
  /// and fetch() and ranks them exactly (BM25 for words, cosine for vectors, reciprocal rank fusion for both): a
  /// backend of a host's own gets correct search without an index; the built-in ones override it with one.
  [[nodiscard]] CAIRN_INLINE virtual SearchPage search(const std::string& tenant_id, const SearchQuery& query) const;

  /// The vector kept for a version of an artifact, or nothing. Stores that keep none (the default) refuse
  /// similarity queries; see keeps_embeddings().
  [[nodiscard]] virtual std::optional<Embedding> embedding(const std::string& id, const std::string& tenant_id,
                                                           std::uint64_t version) const {
    static_cast<void>(id);
    static_cast<void>(tenant_id);
    static_cast<void>(version);
    return std::nullopt;
  }
  /// True when this store keeps vectors for similarity search.
  [[nodiscard]] virtual bool keeps_embeddings() const noexcept { return false; }
  /// The embedder this store embeds records with, or null. search() embeds a query's text with it when the query
  /// brings no vector.
  [[nodiscard]] virtual std::shared_ptr<Embedder> embedder() const { return nullptr; }

  /// Stores `record` as store() does, with a vector the host computed itself (a store with an embedder does not
  /// embed it again). The vector is checked as a query's is (1 to SearchQuery::max_dimension finite elements, not
  /// all zero, a model name; a store with an embedder also wants its model and dimension) and kept for similarity
  /// search. Throws cairn::invalid_argument naming the bad element or the models, storing nothing; a store that
  /// keeps no vectors (this default) refuses every call.
  [[nodiscard]] virtual ArtifactPtr store_embedded(const ArtifactRecord& record, const Embedding& embedding) {
    static_cast<void>(record);
    static_cast<void>(embedding);
    throw invalid_argument("store_embedded: this store keeps no vectors (keeps_embeddings() is false)");
  }

  /// Indexes what the tenant's search cannot see yet: records stored before the store had search or an embedder
  /// (SearchPage::unindexed counts them). Embeds with the store's embedder when it has one. Reports progress to the
  /// store's observer (EventKind::index: items done of total). Safe to interrupt: a later call goes on where it
  /// stopped. Returns how many versions it indexed; the default, a store without indexes, has nothing to do (0).
  virtual std::size_t reindex(const std::string& tenant_id) {
    static_cast<void>(tenant_id);
    return 0;
  }

  /// Convenience for records already shared: `store(*record)`.
  [[nodiscard]] ArtifactPtr store(const ArtifactPtr& record) {
    if (!record) throw invalid_argument("store: record must not be null");
    return store(*record);
  }

 protected:
  ArtifactStore() = default;
  ArtifactStore(const ArtifactStore&) = default;
  ArtifactStore& operator=(const ArtifactStore&) = default;
};

namespace detail {

/// Every store call rejects an empty tenant the same way.
inline void check_tenant(const std::string& tenant_id) {
  if (tenant_id.empty()) throw invalid_argument("tenant_id: must not be empty");
}

inline void check_list_query(const ListQuery& q) {
  if (q.limit == 0 || q.limit > ListQuery::max_limit) {
    throw invalid_argument(fmt::format("list: limit must be between 1 and {} (got {})", ListQuery::max_limit, q.limit));
  }
}

/// The one text of "no such artifact", used for missing and foreign ids alike.
inline std::string artifact_missing_message(const std::string& id, const std::string& tenant_id) {
  return fmt::format("artifact '{}' not found in tenant '{}'", excerpt(id, 300), excerpt(tenant_id, 300));
}

/// True when `r` matches the query's filters (prefix and cursor are the backend's job).
inline bool matches_filters(const ArtifactRecord& r, const ListQuery& q) {
  if (q.type && r.type() != *q.type) return false;
  if (q.created_by && r.created_by() != q.created_by) return false;
  return true;
}

/// Rejects store_if calls that cannot be meant; the backends share the check and the conflict text.
inline void check_store_if(const ArtifactRecord& r, std::uint64_t expected_version) {
  if (r.id().empty() && expected_version != ArtifactStore::absent) {
    throw invalid_argument(fmt::format(
        "store_if: a record without an id can only be created (expected_version {} needs an id)", expected_version));
  }
}

/// The conflict a conditional store that lost throws: "artifact 'x' in tenant 't': expected latest version 2, found
/// 3" (absent reads as "no version").
inline conflict version_conflict(const ArtifactRecord& r, std::uint64_t expected, std::uint64_t actual) {
  auto word = [](std::uint64_t v) { return v == 0 ? std::string("no version") : fmt::format("version {}", v); };
  return conflict(
      fmt::format("store_if: artifact '{}' in tenant '{}': expected {}{}, found {}", excerpt(r.id(), 300),
                  excerpt(r.tenant_id(), 300), expected == 0 ? "" : "latest ", word(expected), word(actual)),
      expected, actual);
}

/// The record as stored: `id` and `version` set, created_at stamped from `clock` (null: the system clock) when
/// unset. Shares the value and metadata.
inline ArtifactPtr stamp(const ArtifactRecord& r, std::string id, std::uint64_t version, const Clock* clock = nullptr) {
  return r.with_identity(std::move(id), version, r.created_at() == 0 ? now_ms(clock) : r.created_at());
}

/// The same for a record stored under the id it already has: copies no string (one small allocation).
inline ArtifactPtr stamp(const ArtifactRecord& r, std::uint64_t version, const Clock* clock = nullptr) {
  return r.with_version(version, r.created_at() == 0 ? now_ms(clock) : r.created_at());
}

}  // namespace detail

namespace detail {

struct PreparedSearch;  // artifact/search/pipeline.hpp

/// prepare_search (artifact/search/pipeline.hpp) for `store`, after checking the tenant.
CAIRN_INLINE PreparedSearch prepare_search(const ArtifactStore& store, const std::string& tenant_id,
                                           const SearchQuery& q);

/// The default search of `store` for a prepared query: an exact scan of the tenant's artifacts (see
/// ArtifactStore::search). BM25's statistics are those of every version searched in the tenant (the latest of each
/// id, or all), whatever the filters. A store routes what its indexes do not answer here, with the query it prepared.
CAIRN_INLINE SearchPage default_search(const ArtifactStore& store, const std::string& tenant_id, const SearchQuery& q,
                                       const PreparedSearch& p);

}  // namespace detail

CAIRN_END_NAMESPACE

#ifndef CAIRN_COMPILED_LIB
#include "cairn/artifact/store-inl.hpp"
#endif
