// cairn — PostgresArtifactStore: the ArtifactStore for fleets of agents on many machines, in PostgreSQL.
//
// Part of the compiled target cairn::postgres (CMake option CAIRN_WITH_POSTGRES); not included by cairn/cairn.hpp.
// Values and metadata are `jsonb`; every statement names the tenant in its WHERE clause; a new version is assigned
// by one statement that bumps the id's head row and inserts the version under a unique (tenant_id, id, version)
// key, so concurrent writers on any number of machines never lose or duplicate a version. A small pool of
// connections serves the calling threads; a connection broken by a server restart is re-opened and the call
// retried once (a store carries a write token under a unique index, so a retried store is written exactly once).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cairn/artifact/store.hpp"
#include "cairn/clock.hpp"
#include "cairn/detail/json.hpp"
#include "cairn/observe/observer.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

/// How a PostgresArtifactStore connects.
struct PostgresOptions {
  /// Most connections open at once (each serves one call at a time); callers beyond that wait for one,
  /// up to pool_wait_ms.
  std::size_t pool_size = 4;
  /// How long a call keeps trying to reconnect after the connection broke (a server restart, a failover, a server
  /// that stopped answering) before it fails with cairn::storage_error; every connection attempt waits only for
  /// what is left of it. The constructor's first connection gets one attempt of this length. The first attempt
  /// always gets at least 1 s, so 0 means "try once", not "never".
  int reconnect_timeout_ms = 15000;
  /// Values and metadata deeper or larger than this are refused by store() (cairn::limit_exceeded), so that
  /// everything stored can be read back under the same limits.
  JsonLimits json_limits{};
  /// How long one statement may run: set as the session's statement_timeout on the server (which cancels it:
  /// cairn::storage_error "canceling statement due to statement timeout"), and the client waits one second more
  /// for an answer before it gives the connection up as dead and reconnects. 0 = no limit on either side (then a
  /// server that stops answering blocks the call until the kernel gives up on the connection).
  int statement_timeout_ms = 30000;
  /// Stamps created_at of records stored without one; null: the system clock.
  std::shared_ptr<Clock> clock{};
  /// Ids of records stored without one; null: random UUID v4. (The token that lets a retry after a lost
  /// connection find its own committed write always comes from the CSPRNG: it is never seen, and it must differ
  /// between processes that share a database, which a test's sequential ids would not.)
  std::shared_ptr<IdGenerator> ids{};
  /// How long a call waits for a pooled connection when all pool_size are in use before it fails with
  /// cairn::storage_error (naming the pool size and this wait), instead of hanging while every connection stays
  /// leased (calls stuck on row locks, more threads than connections, a call made from inside another call on
  /// the same store). 0 = wait for ever.
  int pool_wait_ms = 30000;
  /// Embeds every record as it is stored (before its transaction: never a model call inside one), so search()
  /// can rank by similarity (docs/search.md); its vectors go into cairn_search_vectors in the record's own
  /// statement. Null: no vectors are kept, and similarity queries are refused. open_store(url) opens without one:
  /// a host that wants vectors constructs the store with these options.
  std::shared_ptr<Embedder> embedder{};
  /// The newest changes kept of each tenant's sequence that the in-process similarity indexes catch up from
  /// (cairn_search_changes: one per stored vector, one per removal of an artifact with vectors). A store that finds
  /// the sequence longer than this by a sixteenth deletes the oldest, in a statement of its own after its write. A
  /// process whose index is further behind than that builds it again from the current vectors on its next
  /// similarity query (as its first query does). 0: never delete (the sequence grows with every vector write).
  std::size_t search_changes_kept = 10000;
  /// Bytes of decoded records a store object keeps of what its similarity pages returned, so that a page whose
  /// records were read before reads no row for them and decodes no JSON (docs/search.md, "The in-process index on
  /// SQL backends"). A record is counted as three times its row's text and 256 bytes; the first kept go first when
  /// the bound is passed. 0: none kept (every page reads its rows).
  std::size_t record_cache_bytes = std::size_t{64} << 20;
  /// Told of reindex()'s progress: an EventKind::index event ("reindex", the tenant, items done of total) after
  /// each batch of 64 versions. Null: no events (cairn::observed(store, ...) still reports the whole call).
  std::shared_ptr<Observer> observer{};
  /// Folds the tenants' word logs on a thread and a connection of the store object's own, opened by its first
  /// write (docs/search.md, "Word counts kept"): a write that makes a fold due sends a notification and returns,
  /// and whichever store object listens folds. false: no thread and no extra connection; a write that makes a fold
  /// due folds in its own transaction (a 30 to 60 ms wait, one write in cairn.word_log_fold). Set it false where
  /// the connection cannot LISTEN (a pooler in transaction mode).
  bool fold_words_in_background = true;
};

/// An ArtifactStore in a PostgreSQL database (12 or later). Thread-safe; any number of processes and machines may
/// share the database.
///
///     cairn::PostgresArtifactStore store("host=db.internal dbname=agents user=cairn");
///     store.store(*record);
///
/// The constructor connects once and creates or migrates the schema (tables cairn_schema, cairn_artifacts,
/// cairn_heads, cairn_search_vectors, cairn_search_seq, cairn_search_changes, function cairn_remove_artifact;
/// docs/search.md has what search keeps); it throws cairn::storage_error when the server cannot be reached
/// or its schema is newer than this cairn knows. Error messages never repeat the conninfo (it may hold a password).
/// Its first write starts a thread with one connection of its own that folds the tenants' word logs
/// (PostgresOptions::fold_words_in_background); the destructor stops it.
class PostgresArtifactStore final : public ArtifactStore {
 public:
  /// The schema version this cairn writes; databases with a lower one are migrated when a store connects.
  static constexpr int schema_version = 12;

  /// `conninfo` is what libpq's PQconnectdb takes: "host=... port=... dbname=..." or a postgresql:// URI.
  explicit PostgresArtifactStore(std::string conninfo, PostgresOptions options = {});
  ~PostgresArtifactStore() override;
  PostgresArtifactStore(const PostgresArtifactStore&) = delete;
  PostgresArtifactStore& operator=(const PostgresArtifactStore&) = delete;

  using ArtifactStore::store;
  [[nodiscard]] ArtifactPtr store(const ArtifactRecord& record) override;
  [[nodiscard]] ArtifactPtr store_if(const ArtifactRecord& record, std::uint64_t expected_version) override;
  [[nodiscard]] ArtifactPtr fetch(const std::string& id, const std::string& tenant_id,
                                  std::uint64_t version = latest) const override;
  void remove(const std::string& id, const std::string& tenant_id) override;
  [[nodiscard]] std::vector<std::uint64_t> versions(const std::string& id, const std::string& tenant_id) const override;
  [[nodiscard]] ListPage list(const std::string& tenant_id, const ListQuery& query = {}) const override;
  /// Words are found through a GIN index over each version's words (cairn's tokens in a tsvector) and ranked by
  /// BM25 with the tenant's statistics counted in the same statement: the same hits, scores and order as the
  /// default scan. Similarity alone, and hybrid's vector list, go through this process's vector index of the
  /// (tenant, model, dimension) (exact unless the query sets ef), kept current from cairn_search_changes, its
  /// candidates checked against the rows; exact hybrid reads every vector of the tenant's scope; filters alone use
  /// the default scan (docs/search.md, "Per backend").
  [[nodiscard]] SearchPage search(const std::string& tenant_id, const SearchQuery& query) const override;

  [[nodiscard]] ArtifactPtr store_embedded(const ArtifactRecord& record, const Embedding& embedding) override;
  [[nodiscard]] std::optional<Embedding> embedding(const std::string& id, const std::string& tenant_id,
                                                   std::uint64_t version) const override;
  [[nodiscard]] bool keeps_embeddings() const noexcept override;
  /// Indexes the tenant's versions that have no words yet (written before schema 3) and, with an embedder, no
  /// vector of its model (written before it had one), in batches of 64 in (id, version) order: tokenized and
  /// embedded outside any transaction, written in one transaction per batch. Interrupted, a later call goes on
  /// with what is still not indexed. Progress goes to PostgresOptions::observer. Returns how many versions it
  /// indexed.
  std::size_t reindex(const std::string& tenant_id) override;
  [[nodiscard]] std::shared_ptr<Embedder> embedder() const override;

  /// How many times a broken connection was re-opened (for monitoring, and for tests of restarts).
  std::uint64_t reconnects() const noexcept;

 private:
  std::optional<Embedding> embed(const ArtifactRecord& record) const;
  ArtifactPtr put(const ArtifactRecord& record, const std::uint64_t* expected, const std::optional<Embedding>& vector);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

CAIRN_END_NAMESPACE
