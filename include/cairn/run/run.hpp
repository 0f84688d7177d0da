// cairn — Run: one agent run recorded in a RunJournal, and the participants (an ExecutionContext, a GoalEngine, a
// WorkflowMachine, a host's own object) whose changes it records and rebuilds.
//
// A participant is attached to a run. Attaching to a run that already holds the participant's entries replaces
// the participant's state with the run's (that is how a run resumes in a new process or on another machine);
// attaching to a run that holds none records the participant's current state. From then on every change is
// recorded as a small entry *before* it takes effect in memory, synchronously: when record() returns, the entry is
// committed; when it throws, the participant is left as it was.
//
// What a restore reads stays in proportion to the run, never more: a participant whose entries are its state (an
// ExecutionContext: bindings and messages) is rebuilt by applying them all, each in O(its size); a participant whose
// state churns (a goal engine, a workflow machine, by default a host's own) is re-recorded whole as a
// `<name>.state` checkpoint once its entries since the last one weigh `checkpoint_factor` times that state, so the
// checkpoints total about 1/factor of the entries (at most 1 + 1/factor when the state grows by what they add) and
// a restore applies at most about factor x state bytes of them.
//
//     auto journal = cairn::open_run_journal("sqlite:agents.db");
//     cairn::Run run(journal, "acme", "order-42");  // new, or resumed where it stopped
//     cairn::ExecutionContext ctx(store, "acme");
//     ctx.attach(run);                              // rebuilt from the journal when resuming
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/detail/json.hpp"
#include "cairn/error.hpp"
#include "cairn/run/journal.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

class Run;

/// Something whose state a Run records. Its entries' kinds start with `name() + "."`.
class RunParticipant {
 public:
  virtual ~RunParticipant() = default;
  /// A short lowercase name, unique within a run ("context", "goals", "workflow").
  virtual std::string participant_name() const = 0;
  /// The whole state as JSON (what a snapshot or a checkpoint keeps). Restoring it and asking again gives the same
  /// JSON.
  virtual nlohmann::json participant_state() const = 0;
  /// Replaces the whole state with one participant_state() gave. Throws (anything derived from std::exception) for
  /// a state it cannot take whole — `{}`, `[]`, a key missing or of the wrong type — never restores a part of it.
  virtual void restore_participant(const nlohmann::json& state) = 0;
  /// Applies one of its own recorded entries (the kind without the `name.` prefix, the entry's data).
  virtual void apply_participant_entry(std::string_view kind, const JournalEntry& entry) = 0;
  /// Called once after attach() applied the run's entries to it: a participant that deferred work while replaying
  /// (an ExecutionContext fetches each bound record once, here) finishes it. Throws like apply_participant_entry.
  virtual void participant_restored() {}
  /// True (the default) when the run should re-record this participant's whole state now and then as a
  /// `<name>.state` checkpoint, because its entries are changes of a state that churns (patches). False when its
  /// entries are its state (an append-only log: an ExecutionContext), so a copy would only repeat them.
  virtual bool participant_checkpointed() const { return true; }
  /// The run it is attached to is being destroyed: forget it (record nothing more).
  virtual void participant_detached() noexcept {}

 protected:
  RunParticipant() = default;
  RunParticipant(const RunParticipant&) = default;
  RunParticipant& operator=(const RunParticipant&) = default;
};

/// How a Run records.
struct RunOptions {
  /// A full snapshot of every participant after this many entries since the last one (0, the default: never; a
  /// host calls Run::snapshot() itself, before RunJournal::prune). Restores and prune start at the newest one.
  std::size_t snapshot_every = 0;
  /// A checkpointed participant's whole state is re-recorded once the bytes of its entries since its last state
  /// reach this many times the size of that state (0: never). Larger: rarer checkpoints (about 1/factor of the
  /// entries' bytes; at most 1 + 1/factor for a state that grows by what its entries add) and longer restores (up to
  /// about factor x the state's bytes of entries to apply).
  double checkpoint_factor = 1.0;
  /// How long a tool call's claim holds (docs/runs.md "Two workers"): a call whose latest `tool_intended` or
  /// `tool_retry` entry is younger than this, by the journal's clock, is in flight on some worker, not in doubt, and
  /// execute() refuses to decide about it (cairn::call_in_flight) until the lease has ended. It must exceed the
  /// slowest tool's run time (plus the clock skew between workers). 0, the default: no lease, every unsettled call
  /// is in doubt at once; any deployment where two workers may resume one run must set it.
  std::chrono::milliseconds call_lease{0};
};

/// A point of a run to open it at (see Run's constructors).
struct RunAt {
  std::uint64_t seq = 0;
};

/// One agent run in a journal. Not thread-safe: one owner (the participants attached to it live on the same
/// thread). Two Run objects on the same run — two workers — never both record: the second to append gets
/// cairn::conflict, and must reopen the run to see what the first did.
class Run {
 public:
  /// Opens run `run_id` of `tenant_id`: empty when the journal has no such run (the first record creates it),
  /// else positioned at its last entry with what a restore needs loaded. Throws what the journal throws, and
  /// cairn::state_error when the snapshot it starts from is damaged.
  Run(std::shared_ptr<RunJournal> journal, std::string tenant_id, std::string run_id, RunOptions options = {});

  /// Opens the run as it was at `at.seq` (time travel). Such a run is read-only while the journal holds entries
  /// after that point: recording into it is a cairn::conflict. To go on from there, fork the run in the journal
  /// (`journal->fork(tenant, run, seq, new_run)`, O(1)) and open the fork.
  Run(std::shared_ptr<RunJournal> journal, std::string tenant_id, std::string run_id, RunAt at,
      RunOptions options = {});

  // Participants point at their run: it stays where it is.
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;
  Run(Run&&) = delete;
  Run& operator=(Run&&) = delete;
  /// Participants still attached are told, so that they never record into a run that is gone.
  ~Run() {
    for (auto* p : attached_) p->participant_detached();
  }

  const std::string& tenant_id() const noexcept { return tenant_id_; }
  const std::string& run_id() const noexcept { return run_id_; }
  const std::shared_ptr<RunJournal>& journal() const noexcept { return journal_; }
  const RunOptions& options() const noexcept { return options_; }
  /// The time by the journal's clock (what its entries are stamped with), in ms since the Unix epoch.
  std::int64_t now_ms() const { return journal_->now_ms(); }
  /// The sequence number of the newest entry this run has seen (0 for a new run).
  std::uint64_t seq() const noexcept { return seq_; }

  /// How many entries of what the run read when it was opened it still holds in memory: those of participants not
  /// attached yet. Once every participant the journal holds is attached (each rebuilt from them) they are released
  /// and this is 0; a participant attached again later is rebuilt from the journal.
  std::size_t loaded_entries() const noexcept { return loaded_.size(); }

  /// True when the run, as loaded, holds entries of participant `name` (attaching one of that name restores it).
  bool holds(std::string_view name) const;

  /// Makes `p` part of this run (see the top of this header). Throws cairn::invalid_argument when a participant
  /// of that name is attached already, cairn::state_error when the journal holds an entry `p` cannot apply or a
  /// damaged state (naming the run, the entry's seq and what is wrong).
  void attach(RunParticipant& p);

  /// Stops recording `p` (a participant being destroyed or moved detaches itself).
  void detach(const RunParticipant& p) noexcept;
  /// Points the attachment of `from` at `to` (a participant that moved).
  void moved(const RunParticipant& from, RunParticipant& to) noexcept;

  /// Records one change of participant `participant`: commits the entry `<participant>.<kind>` after this run's
  /// last sequence number (with a checkpoint or snapshot that is due in the same append). Throws cairn::conflict
  /// when another writer moved the run on (nothing was written; reopen the run), cairn::state_error after an
  /// abandoned batch, and what the journal throws.
  std::uint64_t record(const std::string& participant, std::string_view kind, nlohmann::json data, bool sync = false);

  /// Records several changes in one append: all or none of them are committed.
  ///
  /// Inside a batch (see batch()) the entries wait in memory and are appended with the batch, unless `sync` asks
  /// for them to be committed now — a tool call's intended entry must be committed before the tool runs. Such
  /// entries are committed alone: what the batch holds stays pending and is committed with it, after them.
  std::uint64_t record_entries(std::vector<JournalEntry> entries, bool sync = false);

  /// Groups what the participants record until the returned object is destroyed (or flush() is called) into one
  /// append: one round trip, all or nothing. A goal-engine turn is recorded this way. Until then the changes are
  /// in memory only: a crash loses the whole group, never half of it. Batches nest; the outermost one appends.
  /// An entry recorded with `sync` during the batch is committed at once, alone, so the batch's entries follow it
  /// in the journal.
  ///
  ///     { auto group = run.batch(); ctx.add_message(...); ctx.add_message(...); }  // one append
  ///
  /// A batch ended by an exception (destroyed while the stack unwinds) commits nothing of what it holds; when it
  /// held anything, the run then refuses to record (cairn::state_error): its participants hold changes the journal
  /// does not, so the run must be reopened (and the participants attached again) to go on from what the journal
  /// holds. A batch that held nothing (the body threw before recording) leaves the run as it was.
  class Batch {
   public:
    explicit Batch(Run& run) : run_(&run), exceptions_(std::uncaught_exceptions()) { ++run.batch_depth_; }
    Batch(Batch&& o) noexcept : run_(std::exchange(o.run_, nullptr)), exceptions_(o.exceptions_) {}
    Batch(const Batch&) = delete;
    Batch& operator=(const Batch&) = delete;
    Batch& operator=(Batch&&) = delete;
    /// Appends what waits, when this is the outermost batch. Throws what flush() throws.
    void commit() {
      if (!run_) return;
      Run& run = *std::exchange(run_, nullptr);
      if (--run.batch_depth_ == 0) run.flush();
    }
    /// Commits at a normal end (an error is lost here: call commit() to see it); discards at an exception's.
    ~Batch() {
      if (!run_) return;
      if (std::uncaught_exceptions() > exceptions_) {
        Run& run = *std::exchange(run_, nullptr);
        --run.batch_depth_;
        run.abandon();
        return;
      }
      try {
        commit();
      } catch (...) {
      }
    }

   private:
    Run* run_;
    int exceptions_;
  };
  Batch batch() { return Batch(*this); }

  /// Appends what a batch holds now, with the checkpoints (and the snapshot) that are then due after it, in the
  /// same append. When the append fails the entries are lost: after a cairn::conflict every later append conflicts
  /// too; after any other error the run refuses to record (cairn::state_error), since a later append could succeed
  /// without them while participants hold them. Either way, reopen the run.
  void flush();

  /// Writes a full snapshot of every attached participant now: restores and RunJournal::prune start at the newest
  /// one (call it before prune). Call it between changes, not from inside one or inside a batch. Skipped (returns
  /// false) inside a batch, and while the run holds entries of a participant that is not attached in this process:
  /// its state is not known here, and a snapshot without it would lose it. Restores still work then; they only
  /// read further back.
  bool snapshot();

 private:
  // A checkpointed participant's accounting: the size of its last recorded whole state and the bytes of its
  // entries since.
  struct Checkpoint {
    RunParticipant* participant;
    std::string name;
    bool known;  // a state of it was seen
    std::size_t state_bytes;
    std::size_t since_bytes;
  };
  enum class Due { none, before, after, snapshot };

  void check_usable() const;

  // A batch ended by an exception: what it holds is dropped. When that is anything, the participants hold changes
  // the journal will never get, and the run refuses to record more.
  void abandon() noexcept;

  // True when every participant with entries in what load() read is attached.
  bool loaded_all_attached() const;

  bool snapshot_possible() const { return !attached_.empty() && loaded_all_attached(); }

  bool snapshot_due(std::size_t since_snapshot) const {
    return options_.snapshot_every != 0 && since_snapshot >= options_.snapshot_every && snapshot_possible();
  }

  bool checkpoint_due(const Checkpoint& t) const {
    return options_.checkpoint_factor > 0 && t.known && t.since_bytes > 0 &&
           static_cast<double>(t.since_bytes) >= options_.checkpoint_factor * static_cast<double>(t.state_bytes);
  }

  // What is due, as entries: a full snapshot (which stands for every checkpoint), else the checkpoints.
  void due_entries(bool snapshot, const std::vector<Checkpoint>& tracks, std::size_t since_snapshot,
                   std::vector<JournalEntry>& out) const;

  // Counts `e` into the accounting: a state resets its participant's, a snapshot everybody's.
  static void account(const JournalEntry& e, std::vector<Checkpoint>& tracks, std::size_t& since_snapshot);

  // Appends `entries` with what is due `where` (before them: memory equals the journal now; after them: memory
  // equals the journal once they are in), as one append; the accounting moves on only when it succeeded.
  std::uint64_t commit(std::vector<JournalEntry> entries, Due where);

  // The entries a restore at `at_seq` needs (from the newest snapshot on), with a damaged snapshot refused.
  std::vector<JournalEntry> read_checked(std::uint64_t at_seq) const;

  void load(std::uint64_t at_seq);

  // Frees what load() read once every participant it holds is attached: nothing more will be rebuilt from it.
  void release_loaded();

  void remember(const std::string& name);

  // Entries of `name` in what load() read (attach() restores from them); holds() also counts attached participants.
  bool has_entries_of(std::string_view name) const;

  // Restores `p` from its newest whole state in what load() read (a `<name>.state`, or its part of the snapshot
  // the read starts at), then applies its entries after that; fills `track` for its checkpoints.
  void replay(RunParticipant& p, const std::string& name, Checkpoint& track);

  std::shared_ptr<RunJournal> journal_;
  std::string tenant_id_;
  std::string run_id_;
  RunOptions options_;
  std::uint64_t seq_ = 0;
  std::size_t since_snapshot_ = 0;
  std::vector<JournalEntry> loaded_;       // what a restore needs, from the newest snapshot on (until released)
  std::vector<std::string> loaded_names_;  // participants with entries in loaded_
  std::vector<RunParticipant*> attached_;
  std::vector<Checkpoint> tracks_;     // of the attached checkpointed participants
  std::vector<JournalEntry> pending_;  // recorded inside a batch, not appended yet
  int batch_depth_ = 0;
  bool abandoned_ = false;  // a batch ended without committing: recording is refused
  bool released_ = false;   // loaded_ was released (every participant in it was attached)
};

CAIRN_END_NAMESPACE

#ifndef CAIRN_COMPILED_LIB
#include "cairn/run/run-inl.hpp"
#endif
