// cairn — PostgresRunJournal: the RunJournal for fleets of agents on many machines sharing one PostgreSQL database.
//
// Part of the compiled target cairn::postgres (CMake option CAIRN_WITH_POSTGRES); not included by cairn/cairn.hpp.
// An append is ONE statement (one round trip): it advances the run's row only if the run still ends at the
// expected sequence number and inserts the entries only when that matched, so two writers on any number of
// machines can never fork a run. Entries keep their exact JSON text. A connection lost during an append is
// re-opened and the append retried under the same write token, which can never apply it twice (docs/runs.md).
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
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

/// How a PostgresRunJournal connects, and how long it waits.
struct PostgresJournalOptions {
  /// Stamps entries and run times (null: the system clock).
  std::shared_ptr<Clock> clock;
  /// Most connections open at once (each serves one call at a time); callers beyond that wait for one,
  /// up to pool_wait_ms.
  std::size_t pool_size = 4;
  /// Longest wait for one connection attempt (TCP, TLS, authentication), in milliseconds.
  int connect_timeout_ms = 5000;
  /// The session's statement_timeout: the server cancels a statement (a lock wait included) after this long, and
  /// the client gives up waiting for a reply 1 s after it (then the connection counts as lost).
  int statement_timeout_ms = 10000;
  /// How long a call keeps trying to reconnect after its connection broke before it fails with storage_error.
  int reconnect_timeout_ms = 15000;
  /// Entry data deeper or larger than this is refused by append (cairn::limit_exceeded), and stored data beyond
  /// it is a storage_error when read.
  JsonLimits json_limits{};
  /// How long a call waits for a pooled connection when all pool_size are in use before it fails with
  /// cairn::storage_error (naming the pool size and this wait), instead of hanging while every connection stays
  /// leased (calls stuck on row locks, more threads than connections, a call made from inside another call on
  /// the same journal). 0 = wait for ever.
  int pool_wait_ms = 30000;
};

/// A RunJournal in a PostgreSQL database (9.5 or later). Thread-safe; any number of processes and machines may
/// share the database, and the artifact store's tables may live beside it.
///
///     cairn::PostgresRunJournal journal("host=db.internal dbname=agents user=cairn");
///     journal.append("tenant", "run-42", 0, {entry});
///
/// The constructor connects once and creates or migrates the journal's schema (tables cairn_run_schema,
/// cairn_runs, cairn_run_entries, function cairn_run_remove); it throws cairn::storage_error when the server cannot
/// be reached in time or its journal schema is newer than this cairn knows. Error messages never repeat the
/// conninfo (it may hold a password).
class PostgresRunJournal final : public RunJournal {
 public:
  /// The journal schema version this cairn writes; databases with a lower one are migrated on connect.
  static constexpr int schema_version = 2;

  /// `conninfo` is what libpq's PQconnectdb takes: "host=... port=... dbname=..." or a postgresql:// URI.
  explicit PostgresRunJournal(std::string conninfo, PostgresJournalOptions options = {});
  ~PostgresRunJournal() override;
  PostgresRunJournal(const PostgresRunJournal&) = delete;
  PostgresRunJournal& operator=(const PostgresRunJournal&) = delete;

  /// How many times a broken connection was re-opened (for monitoring, and for tests).
  std::uint64_t reconnects() const noexcept;
  /// How many statements this journal sent to the server (for tests and benchmarks: an append is one).
  std::uint64_t statements() const noexcept;

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
