// cairn — SqliteRunJournal: a durable RunJournal in a SQLite file, for agent runs on one machine.
//
// Part of the compiled target cairn::sqlite (CMake option CAIRN_WITH_SQLITE); not included by cairn/cairn.hpp.
// It opens the same kind of file as SqliteArtifactStore (WAL, busy timeout, a small connection pool), and one file
// may hold both artifacts and runs: the journal keeps its own tables and its own schema version (cairn_run_schema),
// so each side migrates on its own. Every append is one `BEGIN IMMEDIATE` transaction that checks the expected
// sequence number under the database's write lock, so threads and processes sharing the file never fork a run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cairn/clock.hpp"
#include "cairn/detail/json.hpp"
#include "cairn/run/journal.hpp"
#include "cairn/store/sqlite_store.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

/// How a SqliteRunJournal opens its file.
struct SqliteJournalOptions {
  /// How fsync'ed a commit is, as for SqliteArtifactStore: `full` (the default) survives power loss; `normal` is
  /// faster and survives a crash of the program, but may lose the last commits on power loss.
  using Synchronous = SqliteOptions::Synchronous;

  /// How long a call waits for another connection or process holding the write lock before it fails with
  /// cairn::storage_error ("database is locked").
  int busy_timeout_ms = 10000;
  /// Most connections open at once (each used by one thread at a time).
  std::size_t max_connections = 4;
  Synchronous synchronous = Synchronous::full;
  /// Entry data deeper or larger than this is refused by append() (cairn::limit_exceeded), so that everything
  /// stored can be read back under the same limits.
  JsonLimits json_limits{};
  /// Stamps entries and run times (null: the system clock).
  std::shared_ptr<Clock> clock;
  /// WAL checkpoints (copying the WAL's pages into the database file, with its fsyncs) are kept off the appending
  /// call's path: once a commit leaves this many pages or more in the WAL, a thread of the journal's own runs a
  /// PASSIVE checkpoint on a connection of its own (it never blocks a writer or a reader). While writers commit
  /// without a pause the WAL cannot start over, so when it reaches `checkpoint_limit_factor` times this many pages
  /// the commit that reaches it runs the checkpoint itself — by then it copies only what the thread has not. 0:
  /// SQLite's own automatic checkpoint instead, run by the commit that crosses 1000 pages (the old behaviour).
  std::size_t checkpoint_pages = 1000;
  std::size_t checkpoint_limit_factor = 8;
};

/// A RunJournal kept in one SQLite file. Thread-safe; several processes may open the same file.
///
///     cairn::SqliteRunJournal journal("agents.db");   // the file SqliteArtifactStore("agents.db") uses, too
///     auto seq = journal.append("acme", "run-7", 0, {entry});
///
/// Throws cairn::storage_error when the file cannot be opened, is not a SQLite database, or holds runs of a newer
/// cairn (its run schema version is higher than schema_version); the file is left as it was.
class SqliteRunJournal final : public RunJournal {
 public:
  /// The run schema version this cairn writes; files with a lower one are migrated when opened.
  static constexpr int schema_version = 2;

  /// Opens (creating when missing) the database at `path`. In-memory databases (":memory:", "") are refused: each
  /// connection would see its own empty database; use InMemoryRunJournal instead.
  explicit SqliteRunJournal(std::string path, SqliteJournalOptions options = {});
  ~SqliteRunJournal() override;
  SqliteRunJournal(const SqliteRunJournal&) = delete;
  SqliteRunJournal& operator=(const SqliteRunJournal&) = delete;

  const std::string& path() const noexcept;
  /// The synchronous mode its connections use (SqliteJournalOptions::synchronous, or `?synchronous=` of
  /// open_run_journal's URL).
  SqliteJournalOptions::Synchronous synchronous() const noexcept;

 protected:
  void do_append(const std::string& tenant_id, const std::string& run_id, std::uint64_t expected_seq,
                 const std::vector<JournalEntry>& entries, std::int64_t now) override;
  std::optional<RunInfo> head(const std::string& tenant_id, const std::string& run_id) const override;
  std::vector<JournalEntry> own_entries(const std::string& tenant_id, const std::string& run_id, std::uint64_t from_seq,
                                        std::uint64_t to_seq) const override;
  std::uint64_t own_snapshot_at(const std::string& tenant_id, const RunInfo& run, std::uint64_t at_seq) const override;
  void do_create_fork(const std::string& tenant_id, const std::string& run_id, const std::string& source,
                      std::uint64_t fork_seq, std::int64_t now) override;
  bool do_remove(const std::string& tenant_id, const std::string& run_id, std::int64_t updated_before) override;
  std::size_t do_prune(const std::string& tenant_id, const std::string& run_id, std::uint64_t keep_from) override;
  std::vector<RunFork> forks(const std::string& tenant_id, const std::string& run_id) const override;
  std::vector<std::string> stale_runs(const std::string& tenant_id, std::int64_t updated_before) const override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

CAIRN_END_NAMESPACE
