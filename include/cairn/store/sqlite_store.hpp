// cairn — SqliteArtifactStore: a durable ArtifactStore in one SQLite file, for agents on one machine.
//
// Part of the compiled target cairn::sqlite (CMake option CAIRN_WITH_SQLITE); not included by cairn/cairn.hpp.
// The file is opened in WAL mode, so readers never wait for the writer; versions are assigned inside a
// `BEGIN IMMEDIATE` transaction, so many threads and many processes can store versions of the same id without
// losing or duplicating one. The file carries a schema version: an older file is migrated when opened, a file
// written by a newer cairn is refused.
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

/// How a SqliteArtifactStore opens its file.
struct SqliteOptions {
  /// How fsync'ed a commit is. `full` (the default) survives power loss; `normal` is faster and survives a crash
  /// of the program but may lose the last commits on power loss (SQLite's `PRAGMA synchronous` in WAL mode).
  enum class Synchronous { normal, full };

  /// How long a call waits for another connection or process holding the write lock before it fails with
  /// cairn::storage_error ("database is locked").
  int busy_timeout_ms = 10000;
  /// Most connections open at once; each is used by one thread at a time, so this is also how many calls run in
  /// parallel (readers in parallel with one writer, as WAL allows).
  std::size_t max_connections = 8;
  Synchronous synchronous = Synchronous::full;
  /// Values and metadata deeper or larger than this are refused by store() (cairn::limit_exceeded), so that
  /// everything stored can be read back under the same limits.
  JsonLimits json_limits{};
  /// Stamps created_at of records stored without one; null: the system clock.
  std::shared_ptr<Clock> clock{};
  /// Ids of records stored without one; null: random UUID v4.
  std::shared_ptr<IdGenerator> ids{};
  /// The host's model: each version is embedded as it is stored (before its transaction, never inside one), and
  /// a query's text when it brings no vector (docs/search.md). Null: records are not embedded; vectors given with
  /// store_embedded() are still kept. Options only: open_store's URL cannot name a host object.
  std::shared_ptr<Embedder> embedder{};
  /// Bytes of the file each connection reads through a memory map (SQLite's `PRAGMA mmap_size`) instead of a read
  /// call per page: a similarity query reads the pages of the records it checks (22% faster in W6 with 256 MiB;
  /// docs/search.md). 0 (the default, as SQLite's): read calls only. With a map, a disk error while reading the
  /// file raises SIGBUS in the process instead of failing the call with a storage_error.
  std::int64_t mmap_bytes = 0;
  /// The page size of a file this store creates (PRAGMA page_size; a file that exists keeps its own, whoever made
  /// it). 8192, not SQLite's 4096: a record row of ~1 KB and a 384-dimension vector (1.5 KB) then fit in a leaf
  /// page of cairn's tables (WITHOUT ROWID: a row keeps at most ~1,000 bytes on a 4 KiB page, the rest goes to an
  /// overflow page), so a similarity candidate costs two page reads instead of four (docs/search.md). A power of
  /// two from 512 to 65536, else cairn::invalid_argument.
  int page_size = 8192;
  /// The newest changes kept in the sequence the in-process similarity indexes catch up from (one per stored
  /// version, two with a vector, one per remove): older ones are deleted by the writes, a batch each time the
  /// sequence has grown by a sixteenth of this. A process whose index is further behind than that builds it again
  /// from the current vectors on its next similarity query (as its first query does), which costs about what
  /// replaying that many changes would. 0: never delete (the sequence grows with every write).
  std::size_t search_changes_kept = 10000;
  /// Bytes of decoded records a store object keeps of what its similarity pages returned, so that a page whose
  /// records were read before reads no row for them and decodes no JSON (docs/search.md, "The in-process index on
  /// SQL backends"). A record is counted as three times its row's text and 256 bytes; the first kept go first when
  /// the bound is passed. 0: none kept (every page reads its rows).
  std::size_t record_cache_bytes = std::size_t{64} << 20;
  /// Told of indexing progress: EventKind::index events (items done of total) after each batch of reindex()
  /// ("reindex", the tenant) and of the words indexing a file from before search gets when a store opens it
  /// ("open", no tenant). Null: no events (cairn::observed(store, ...) still reports each reindex call whole).
  std::shared_ptr<Observer> observer{};
};

/// An ArtifactStore kept in one SQLite file. Thread-safe; several processes may open the same file.
///
///     cairn::SqliteArtifactStore store("agents.db");
///     auto stored = store.store(*record);              // survives a restart of the program
///     auto again = store.fetch(stored->id(), "acme");
///
/// Throws cairn::storage_error when the file cannot be opened, is not a SQLite database, or was written by a
/// newer cairn (its schema version is higher than schema_version).
class SqliteArtifactStore final : public ArtifactStore {
 public:
  /// The schema version this cairn writes; files with a lower one are migrated when opened.
  static constexpr int schema_version = 5;

  /// Opens (creating when missing) the database at `path`. In-memory databases (":memory:", "") are refused:
  /// each connection would see its own empty database; use InMemoryArtifactStore instead.
  explicit SqliteArtifactStore(std::string path, SqliteOptions options = {});
  ~SqliteArtifactStore() override;
  SqliteArtifactStore(const SqliteArtifactStore&) = delete;
  SqliteArtifactStore& operator=(const SqliteArtifactStore&) = delete;

  using ArtifactStore::store;
  [[nodiscard]] ArtifactPtr store(const ArtifactRecord& record) override;
  [[nodiscard]] ArtifactPtr store_if(const ArtifactRecord& record, std::uint64_t expected_version) override;
  [[nodiscard]] ArtifactPtr fetch(const std::string& id, const std::string& tenant_id,
                                  std::uint64_t version = latest) const override;
  void remove(const std::string& id, const std::string& tenant_id) override;
  [[nodiscard]] std::vector<std::uint64_t> versions(const std::string& id, const std::string& tenant_id) const override;
  [[nodiscard]] ListPage list(const std::string& tenant_id, const ListQuery& query = {}) const override;
  /// Words run on the file's FTS5 index, ranked by BM25 with the tenant's own statistics (the same scores as the
  /// default scan); similarity alone (latest versions) on the process's vector index, exact unless the query sets
  /// ef, each candidate's row read and the filters checked as the index walks; hybrid fuses every word match with the
  /// 4 x limit nearest (as the in-memory store). Exact hybrid, filters alone and all_versions with a vector are the
  /// default scan (docs/search.md).
  [[nodiscard]] SearchPage search(const std::string& tenant_id, const SearchQuery& query) const override;
  /// Stores `record` with the host's vector (checked as ArtifactStore::store_embedded says), kept with it in one
  /// transaction.
  [[nodiscard]] ArtifactPtr store_embedded(const ArtifactRecord& record, const Embedding& embedding) override;
  [[nodiscard]] std::optional<Embedding> embedding(const std::string& id, const std::string& tenant_id,
                                                   std::uint64_t version) const override;
  /// Always: vectors come from the embedder, or with the record (store_embedded).
  [[nodiscard]] bool keeps_embeddings() const noexcept override { return true; }
  [[nodiscard]] std::shared_ptr<Embedder> embedder() const override;
  /// Indexes the words of the tenant's versions that have none (the store does this for a whole file from before
  /// search when it opens it) and, with an embedder, embeds the versions that have no vector of its model (in
  /// batches of 64, outside transactions; a version removed meanwhile is skipped). Resumable: what an interrupted
  /// call did is kept. Progress goes to SqliteOptions::observer: items done of total, where total is the versions
  /// without words plus, with an embedder, the versions without a vector of its model, counted when the call
  /// starts. Returns how many it indexed (words and vectors counted apart).
  std::size_t reindex(const std::string& tenant_id) override;

  const std::string& path() const noexcept;
  /// The synchronous mode its connections use (SqliteOptions::synchronous, or `?synchronous=` of open_store's URL).
  SqliteOptions::Synchronous synchronous() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

CAIRN_END_NAMESPACE
