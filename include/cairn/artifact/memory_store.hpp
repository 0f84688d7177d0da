// cairn — InMemoryArtifactStore: the embedded default ArtifactStore.
//
// Tenants are spread over shards, each behind its own reader/writer lock, so agents of different tenants rarely
// wait for each other. Within a shard one hash table maps (tenant, id) to the artifact's versions, so a fetch costs
// one lookup, like a plain map; reads hand out the stored shared_ptr itself and never copy a record. Each tenant also
// keeps a sorted index of its ids, so a listing walks only that tenant's artifacts.
//
// By default a stored record is kept as it was given, its parsed value shared with whoever holds the record. With
// InMemoryStoreOptions::max_parsed_bytes set, the store bounds what the parsed values of its latest versions keep
// (about ten times their text for documents of small rows): beyond the bound, the versions fetched least recently
// are kept packed (detail::RecordPacker: CBOR of the record, a little under the size of its compact JSON text) and
// decoded again by the fetch that needs them, which puts the decoded record back among the parsed ones (a CLOCK
// cache: a fetch marks a record used; the sweep that makes room spares marked records once). Older versions are
// packed as soon as a newer one is stored.
//
// A tenant's search indexes (its word index; its vector indexes, one per model and dimension) are made by its first
// search that needs them, from the versions it holds then, and kept current by every write after: a tenant that is
// never searched keeps no search structure and its writes do no search work (docs/stores.md).
//
// The class declares; its bodies are memory_store-inl.hpp's (`Impl`, the shards and the search indexes), included
// here header-only and compiled into cairn::compiled in compiled mode, so a host's files that only use the store do
// not parse the search engine (docs/api.md, "Compiled mode").
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cairn/artifact/store.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

/// How an InMemoryArtifactStore is set up.
struct InMemoryStoreOptions {
  std::size_t shards = 16;             ///< locks that spread the tenants (at least 1)
  std::shared_ptr<Clock> clock{};      ///< stamps created_at; null: the system clock
  std::shared_ptr<IdGenerator> ids{};  ///< ids of records stored without one; null: random UUID v4
  /// The most heap, in bytes, that the parsed values of the latest versions may keep (estimated from their shape:
  /// detail::json_heap_estimate), spread evenly over the shards. Records beyond it, and every older version, are
  /// kept packed and decoded when fetched or listed. No bound by default: every record is kept as it was given. 0
  /// keeps every record packed. A value shared by many records (or with the host) is counted once per record, and
  /// packing it saves nothing while others hold it: the bound is for stores of distinct values.
  std::size_t max_parsed_bytes = std::numeric_limits<std::size_t>::max();
  /// Embeds every record as it is stored (outside the store's locks), so search() can rank by similarity
  /// (docs/search.md). Null: records are not embedded; vectors given with store_embedded() are still kept.
  std::shared_ptr<Embedder> embedder{};
};

/// Thread-safe, in-process ArtifactStore. Content lives as long as the store does.
class InMemoryArtifactStore final : public ArtifactStore {
 public:
  /// `shards` locks spread the tenants (at least 1).
  explicit InMemoryArtifactStore(std::size_t shards = 16);
  /// A store that takes its time and ids from `options` (cairn/testing/clock.hpp makes them deterministic).
  explicit InMemoryArtifactStore(InMemoryStoreOptions options);
  CAIRN_INLINE ~InMemoryArtifactStore() override;

  using ArtifactStore::store;

  [[nodiscard]] CAIRN_INLINE ArtifactPtr store(const ArtifactRecord& record) override;
  [[nodiscard]] CAIRN_INLINE ArtifactPtr store_if(const ArtifactRecord& record,
                                                  std::uint64_t expected_version) override;
  /// Stores `record` with a vector the host made (checked as ArtifactStore::store_embedded says; with an embedder,
  /// of its model and dimension), which is kept instead of embedding the record.
  [[nodiscard]] CAIRN_INLINE ArtifactPtr store_embedded(const ArtifactRecord& record,
                                                        const Embedding& embedding) override;
  /// The vector kept for a version (null when it has none or the version is gone).
  [[nodiscard]] CAIRN_INLINE std::optional<Embedding> embedding(const std::string& id, const std::string& tenant_id,
                                                                std::uint64_t version) const override;
  /// Always: vectors come from the embedder, or with the record (store_embedded).
  [[nodiscard]] bool keeps_embeddings() const noexcept override { return true; }
  [[nodiscard]] CAIRN_INLINE std::shared_ptr<Embedder> embedder() const override;

  [[nodiscard]] CAIRN_INLINE ArtifactPtr fetch(const std::string& id, const std::string& tenant_id,
                                               std::uint64_t version = latest) const override;
  CAIRN_INLINE void remove(const std::string& id, const std::string& tenant_id) override;
  CAIRN_INLINE std::vector<std::uint64_t> versions(const std::string& id, const std::string& tenant_id) const override;
  [[nodiscard]] CAIRN_INLINE ListPage list(const std::string& tenant_id, const ListQuery& query = {}) const override;

  /// Searches through the tenant's indexes (docs/search.md): words through its postings, scored by BM25 from the
  /// statistics the index keeps (exactly the scores of the default scan); similarity through its vector index of the
  /// query's model (exact unless the query sets ef); hybrid fuses the two (exact hybrid with every vector's rank, from
  /// a scan of the tenant's vectors); filters are applied to the candidates. The query's text is embedded before any
  /// lock is taken. The tenant's first search by words makes its word index, its first similarity search its vector
  /// indexes (search_indexes()); a filters-only search (or exact hybrid, for the vectors) needs neither.
  [[nodiscard]] CAIRN_INLINE SearchPage search(const std::string& tenant_id, const SearchQuery& q) const override;

  /// Has nothing to do: a search finds every version (a tenant's indexes are made by its first search and kept
  /// current by every write after it; SearchPage::unindexed is always 0). Returns 0.
  CAIRN_INLINE std::size_t reindex(const std::string& tenant_id) override;

  /// The search structures a tenant holds: its word index (made by its first search by words) and its vector
  /// indexes (made by its first similarity search). Both false for a tenant never searched so, and
  /// again once it holds no artifact.
  struct SearchIndexes {
    bool words = false;
    bool vectors = false;
  };
  [[nodiscard]] SearchIndexes search_indexes(const std::string& tenant_id) const;
  /// The tenants that hold a search structure (search_indexes()), in order.
  [[nodiscard]] std::vector<std::string> searched_tenants() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

CAIRN_END_NAMESPACE

#ifndef CAIRN_COMPILED_LIB
#include "cairn/artifact/memory_store-inl.hpp"
#endif
