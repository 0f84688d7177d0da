// cairn — RunJournal: the append-only history of an agent run, per tenant and run id, on any backend.
//
// A run is journalled as small entries: a name bound, a message appended, a tool call intended / finished /
// failed, a goal-engine or workflow change, now and then a snapshot of everything. Every append names the sequence
// number it expects to follow; when another writer got there first the append fails with cairn::conflict and
// nothing is written, so two workers can never fork one run. fork() starts a new run from any past sequence number
// of another in O(1): the new run reads the source's entries up to that point and has its own after it.
//
// The backends (InMemoryRunJournal here, the SQLite and PostgreSQL journals in cairn::sqlite / cairn::postgres)
// implement a few primitives on a run's *own* entries; this class builds reading through forks, pruning and
// sweeping on top of them, so every backend behaves the same. cairn/testing/journal_conformance.hpp checks it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/clock.hpp"
#include "cairn/detail/text.hpp"
#include "cairn/error.hpp"
#include "cairn/observe/observer.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

/// One entry of a run's journal.
struct JournalEntry {
  std::uint64_t seq = 0;  ///< 1, 2, 3, ... within the run; assigned by append
  std::string kind;       ///< what changed: "context.bind", "tool.finished", "snapshot", or a host's own kind
  nlohmann::json data;    ///< the change itself
  std::int64_t time = 0;  ///< milliseconds since the Unix epoch; 0 asks append to stamp it with the journal's clock

  friend bool operator==(const JournalEntry& a, const JournalEntry& b);
  friend bool operator!=(const JournalEntry& a, const JournalEntry& b) { return !(a == b); }
};

void to_json(nlohmann::json& j, const JournalEntry& e);

/// The kind of the entries that hold a whole state: reading a run for a restore starts at the newest one.
inline constexpr const char* snapshot_kind = "snapshot";

/// Where a run stands.
struct RunInfo {
  std::string run_id;
  std::uint64_t last_seq = 0;              ///< the newest entry's sequence number (0: none yet)
  std::uint64_t kept_from = 1;             ///< own entries below this were pruned
  std::optional<std::string> forked_from;  ///< the run this one was forked from
  std::uint64_t fork_seq = 0;              ///< entries 1..fork_seq are forked_from's
  std::int64_t created_at = 0;             ///< milliseconds since the epoch
  std::int64_t updated_at = 0;             ///< of the last append (or the creation)
};

/// A run that was forked from another, and where.
struct RunFork {
  std::string run_id;
  std::uint64_t fork_seq = 0;
};

/// The journal interface. Every call is tenant-scoped: another tenant's run behaves exactly like a missing one.
/// Implementations are thread-safe, and the durable ones may be shared by many processes and machines.
class RunJournal {
 public:
  static constexpr std::uint64_t max_seq = std::numeric_limits<std::int64_t>::max();
  static constexpr std::size_t max_run_id_length = 256;

  virtual ~RunJournal() = default;

  /// Appends `entries` after sequence number `expected_seq` — the newest the caller has seen, 0 for a run that
  /// does not exist yet (the append creates it) — as expected_seq + 1, + 2, ...; all or nothing. Returns the new
  /// last sequence number. Throws cairn::conflict (nothing written) when the run's last sequence number is not
  /// `expected_seq`, cairn::invalid_argument for an empty tenant, a malformed run id, no entries or an empty kind.
  [[nodiscard]] std::uint64_t append(const std::string& tenant_id, const std::string& run_id,
                                     std::uint64_t expected_seq, std::vector<JournalEntry> entries);

 private:
  std::uint64_t append_unobserved(const std::string& tenant_id, const std::string& run_id, std::uint64_t expected_seq,
                                  std::vector<JournalEntry>& entries);

 public:
  /// Where the run stands, or nothing when the tenant has no such run.
  [[nodiscard]] std::optional<RunInfo> info(const std::string& tenant_id, const std::string& run_id) const;

  /// The run's entries with `from_seq <= seq <= to_seq`, oldest first, following forks: a forked run's entries up
  /// to its fork point come from the run it was forked from. Throws cairn::not_found for a missing run and
  /// cairn::state_error when part of the range was pruned.
  [[nodiscard]] std::vector<JournalEntry> read(const std::string& tenant_id, const std::string& run_id,
                                               std::uint64_t from_seq = 1, std::uint64_t to_seq = max_seq) const;

  /// What a restore at `at_seq` (the newest by default) needs: the entries from the newest snapshot at or before
  /// `at_seq` (or from the start, when there is none) up to `at_seq`. Its length is bounded by how often the
  /// writer snapshots, not by the run's length. Throws like read(), and cairn::invalid_argument when `at_seq` is
  /// beyond the run's end.
  [[nodiscard]] std::vector<JournalEntry> read_for_restore(const std::string& tenant_id, const std::string& run_id,
                                                           std::uint64_t at_seq = max_seq) const;

 private:
  std::vector<JournalEntry> read_for_restore_unobserved(const std::string& tenant_id, const std::string& run_id,
                                                        std::uint64_t at_seq) const;

 public:
  /// Starts run `new_run_id` as a copy of `source_run_id` up to `at_seq`, in O(1): nothing is copied, the new run
  /// records where it came from. Appends to the new run then expect `at_seq`. Throws cairn::not_found for a
  /// missing source, cairn::conflict when `new_run_id` exists, cairn::invalid_argument when `at_seq` is beyond the
  /// source's end or below what was pruned from it.
  void fork(const std::string& tenant_id, const std::string& source_run_id, std::uint64_t at_seq,
            const std::string& new_run_id);

 private:
  void fork_unobserved(const std::string& tenant_id, const std::string& source_run_id, std::uint64_t at_seq,
                       const std::string& new_run_id);

 public:
  /// Removes the run and all its own entries. Throws cairn::not_found for a missing run, and cairn::state_error
  /// while other runs are forks of it (they read its entries): remove them first.
  void remove(const std::string& tenant_id, const std::string& run_id);

  /// Drops the run's own entries that no restore needs any more: everything before its newest snapshot, except
  /// what its forks still read. Returns how many entries went. A restore at the newest state, and of every fork,
  /// works as before; time travel to before the kept snapshot is what prune gives up.
  std::size_t prune(const std::string& tenant_id, const std::string& run_id);

 private:
  std::size_t prune_unobserved(const std::string& tenant_id, const std::string& run_id);

 public:
  /// Removes every run of the tenant not appended to since `updated_before` (milliseconds since the epoch), except
  /// runs that newer runs were forked from. Returns the ids removed.
  std::vector<std::string> sweep(const std::string& tenant_id, std::int64_t updated_before);

 private:
  std::vector<std::string> sweep_unobserved(const std::string& tenant_id, std::int64_t updated_before);

 public:
  /// The clock that stamps entries and run times (null: the system clock).
  void set_clock(std::shared_ptr<Clock> clock) { clock_ = std::move(clock); }
  /// The time by that clock, in milliseconds since the Unix epoch: what append() stamps an entry with now (a Run
  /// judges a tool call's lease by it, RunOptions::call_lease).
  std::int64_t now_ms() const { return detail::now_ms(clock_.get()); }

  /// Reports every public call (append, read, read_for_restore, info, fork, remove, prune, sweep) to `observer` as
  /// one EventKind::journal event, for every backend alike (null: none; nothing is timed then). Set it before the
  /// journal is shared between threads (like set_clock). See cairn/observe.hpp.
  void set_observer(std::shared_ptr<Observer> observer) { observer_ = std::move(observer); }
  const std::shared_ptr<Observer>& observer() const noexcept { return observer_; }

 protected:
  RunJournal() = default;
  explicit RunJournal(std::shared_ptr<Clock> clock) : clock_(std::move(clock)) {}

  // ---- what a backend implements: its own entries and run rows, each call atomic ------------------------------

  /// Appends entries (seq and time filled in) after `expected_seq`, creating the run when `expected_seq` is 0 and
  /// it does not exist; sets updated_at to `now`. Throws cairn::conflict with the actual last seq otherwise.
  virtual void do_append(const std::string& tenant_id, const std::string& run_id, std::uint64_t expected_seq,
                         const std::vector<JournalEntry>& entries, std::int64_t now) = 0;
  /// The run's row, or nothing.
  virtual std::optional<RunInfo> head(const std::string& tenant_id, const std::string& run_id) const = 0;
  /// The run's own entries with from_seq <= seq <= to_seq, oldest first.
  virtual std::vector<JournalEntry> own_entries(const std::string& tenant_id, const std::string& run_id,
                                                std::uint64_t from_seq, std::uint64_t to_seq) const = 0;
  /// The newest own entry of kind snapshot_kind with seq <= at_seq, or 0.
  virtual std::uint64_t own_snapshot_at(const std::string& tenant_id, const RunInfo& run,
                                        std::uint64_t at_seq) const = 0;
  /// Creates the run row of a fork (no entries, last_seq = fork_seq). Throws cairn::conflict when it exists.
  virtual void do_create_fork(const std::string& tenant_id, const std::string& run_id, const std::string& source,
                              std::uint64_t fork_seq, std::int64_t now) = 0;
  /// Removes the run row and its own entries, in one atomic step, if the run's updated_at is below
  /// `updated_before` (the largest int64: whatever it is); returns whether it removed it. Throws
  /// cairn::state_error when the run has forks.
  virtual bool do_remove(const std::string& tenant_id, const std::string& run_id, std::int64_t updated_before) = 0;
  /// Removes own entries with seq < keep_from and records kept_from; returns how many went.
  virtual std::size_t do_prune(const std::string& tenant_id, const std::string& run_id, std::uint64_t keep_from) = 0;
  /// Runs forked from `run_id`.
  virtual std::vector<RunFork> forks(const std::string& tenant_id, const std::string& run_id) const = 0;
  /// Runs whose updated_at is below `updated_before`.
  virtual std::vector<std::string> stale_runs(const std::string& tenant_id, std::int64_t updated_before) const = 0;

  static std::string excerpt(const std::string& s) { return detail::excerpt(s, 80); }

 private:
  static void detail_check_tenant(const std::string& tenant_id) {
    if (tenant_id.empty()) throw invalid_argument("tenant_id: must not be empty");
  }

  static void check_ids(const std::string& tenant_id, const std::string& run_id, const char* call);

  RunInfo require(const std::string& tenant_id, const std::string& run_id, const char* call) const;

  void refuse_if_forked(const std::string& tenant_id, const std::string& run_id, const char* call) const;

  // The newest snapshot at or before at_seq that the run sees (its own, else its source's up to the fork), or 0.
  std::uint64_t snapshot_at(const std::string& tenant_id, const RunInfo& run, std::uint64_t at_seq, int depth) const;

  void read_chain(const std::string& tenant_id, const std::string& run_id, std::uint64_t from, std::uint64_t to,
                  std::vector<JournalEntry>& out, int depth) const;

  static void check_depth(const RunInfo& run, int depth);

  static void read_sizes(Event& e, const std::vector<JournalEntry>& entries);

  std::shared_ptr<Clock> clock_;
  std::shared_ptr<Observer> observer_;
};

CAIRN_END_NAMESPACE

#ifndef CAIRN_COMPILED_LIB
#include "cairn/run/journal-inl.hpp"
#endif
