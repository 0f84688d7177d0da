// cairn — Run: one agent run recorded in a RunJournal, and the participants (an ExecutionContext, a GoalEngine, a
// WorkflowMachine, a host's own object) whose changes it records and rebuilds.
//
// A participant is attached to a run. Attaching to a run that already holds the participant's entries replaces
// the participant's state with the run's (that is how a run resumes in a new process or on another machine);
// attaching to a run that holds none records the participant's current state. From then on every change is
// recorded as a small entry *before* it takes effect in memory, synchronously: when record() returns, the entry is
// committed; when it throws, the participant is left as it was. Every `snapshot_every` entries the run writes a
// snapshot of all participants, so a restore reads at most that many entries whatever the run's length.
//
//     auto journal = cairn::open_run_journal("sqlite:agents.db");
//     cairn::Run run(journal, "acme", "order-42");  // new, or resumed where it stopped
//     cairn::ExecutionContext ctx(store, "acme");
//     ctx.attach(run);                              // rebuilt from the journal when resuming
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

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
  /// The whole state as JSON (what a snapshot keeps). Restoring it and asking again gives the same JSON.
  virtual nlohmann::json participant_state() const = 0;
  /// Replaces the whole state with one participant_state() gave.
  virtual void restore_participant(const nlohmann::json& state) = 0;
  /// Applies one of its own recorded entries (the kind without the `name.` prefix, the entry's data).
  virtual void apply_participant_entry(std::string_view kind, const JournalEntry& entry) = 0;
  /// The run it is attached to is being destroyed: forget it (record nothing more).
  virtual void participant_detached() noexcept {}

 protected:
  RunParticipant() = default;
  RunParticipant(const RunParticipant&) = default;
  RunParticipant& operator=(const RunParticipant&) = default;
};

/// How a Run records.
struct RunOptions {
  /// A snapshot of every participant after this many entries since the last one (0: never).
  std::size_t snapshot_every = 256;
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
  /// else positioned at its last entry with what a restore needs loaded. Throws what the journal throws.
  Run(std::shared_ptr<RunJournal> journal, std::string tenant_id, std::string run_id, RunOptions options = {})
      : journal_(std::move(journal)), tenant_id_(std::move(tenant_id)), run_id_(std::move(run_id)), options_(options) {
    if (!journal_) throw invalid_argument("Run: journal must not be null");
    if (const auto info = journal_->info(tenant_id_, run_id_)) load(info->last_seq);
  }

  /// Opens the run as it was at `at.seq` (time travel). Such a run is read-only while the journal holds entries
  /// after that point: recording into it is a cairn::conflict. To go on from there, fork the run in the journal
  /// (`journal->fork(tenant, run, seq, new_run)`, O(1)) and open the fork.
  Run(std::shared_ptr<RunJournal> journal, std::string tenant_id, std::string run_id, RunAt at, RunOptions options = {})
      : journal_(std::move(journal)), tenant_id_(std::move(tenant_id)), run_id_(std::move(run_id)), options_(options) {
    if (!journal_) throw invalid_argument("Run: journal must not be null");
    load(at.seq);
  }

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
  /// The sequence number of the newest entry this run has seen (0 for a new run).
  std::uint64_t seq() const noexcept { return seq_; }

  /// True when the run, as loaded, holds entries of participant `name` (attaching one of that name restores it).
  bool holds(std::string_view name) const {
    if (has_entries_of(name)) return true;
    for (const auto* p : attached_) {
      if (p->participant_name() == name) return true;
    }
    return false;
  }

  /// Makes `p` part of this run (see the top of this header). Throws cairn::invalid_argument when a participant
  /// of that name is attached already, cairn::state_error when the journal holds an entry `p` cannot apply.
  void attach(RunParticipant& p) {
    const std::string name = p.participant_name();
    for (const auto* q : attached_) {
      if (q->participant_name() == name) {
        throw invalid_argument(fmt::format("Run '{}': a participant named '{}' is attached already", run_id_, name));
      }
    }
    if (has_entries_of(name)) {
      replay(p, name);
      attached_.push_back(&p);
    } else {
      attached_.push_back(&p);
      try {
        record(name, "state", p.participant_state());
      } catch (...) {
        attached_.pop_back();
        throw;
      }
    }
  }

  /// Stops recording `p` (a participant being destroyed or moved detaches itself).
  void detach(const RunParticipant& p) noexcept {
    for (auto it = attached_.begin(); it != attached_.end(); ++it) {
      if (*it == &p) {
        attached_.erase(it);
        return;
      }
    }
  }
  /// Points the attachment of `from` at `to` (a participant that moved).
  void moved(const RunParticipant& from, RunParticipant& to) noexcept {
    for (auto*& q : attached_) {
      if (q == &from) q = &to;
    }
  }

  /// Records one change of participant `participant`: commits the entry `<participant>.<kind>` after this run's
  /// last sequence number, then maybe a snapshot. Throws cairn::conflict when another writer moved the run on
  /// (nothing was written; reopen the run), and what the journal throws.
  std::uint64_t record(const std::string& participant, std::string_view kind, nlohmann::json data,
                       bool sync = false) {
    JournalEntry e;
    e.kind = participant + "." + std::string(kind);
    e.data = std::move(data);
    std::vector<JournalEntry> entries;
    entries.push_back(std::move(e));
    return record_entries(std::move(entries), sync);
  }

  /// Records several changes in one append: all or none of them are committed.
  ///
  /// Inside a batch (see batch()) the entries wait in memory and are appended with the batch, unless `sync` asks
  /// for them (and everything waiting before them) to be committed now — a tool call's intended entry must be
  /// committed before the tool runs.
  std::uint64_t record_entries(std::vector<JournalEntry> entries, bool sync = false) {
    if (batch_depth_ > 0 && !sync) {
      for (auto& e : entries) pending_.push_back(std::move(e));
      return seq_;
    }
    if (!pending_.empty()) {  // what waits goes first, in the same append
      for (auto& e : entries) pending_.push_back(std::move(e));
      entries.swap(pending_);
      pending_.clear();
    }
    // A snapshot that is due is written before the new entries, while every participant's state still matches the
    // journal (a participant records a change before applying it).
    if (options_.snapshot_every != 0 && since_snapshot_ >= options_.snapshot_every) snapshot();
    const std::size_t n = entries.size();
    seq_ = journal_->append(tenant_id_, run_id_, seq_, std::move(entries));
    since_snapshot_ += n;
    return seq_;
  }

  /// Groups what the participants record until the returned object is destroyed (or flush() is called) into one
  /// append: one round trip, all or nothing. A goal-engine turn is recorded this way. Until then the changes are
  /// in memory only: a crash loses the whole group, never half of it. Batches nest; the outermost one appends.
  ///
  ///     { auto group = run.batch(); ctx.add_message(...); ctx.add_message(...); }  // one append
  class Batch {
   public:
    explicit Batch(Run& run) : run_(&run) { ++run.batch_depth_; }
    Batch(Batch&& o) noexcept : run_(std::exchange(o.run_, nullptr)) {}
    Batch(const Batch&) = delete;
    Batch& operator=(const Batch&) = delete;
    Batch& operator=(Batch&&) = delete;
    /// Appends what waits, when this is the outermost batch. Throws what the journal throws.
    void commit() {
      if (!run_) return;
      Run& run = *std::exchange(run_, nullptr);
      if (--run.batch_depth_ == 0) run.flush();
    }
    /// Commits; an error is lost here (call commit() to see it): the participants then hold changes the journal
    /// does not, and the run must be reopened, as after any conflict.
    ~Batch() {
      try {
        commit();
      } catch (...) {
      }
    }

   private:
    Run* run_;
  };
  Batch batch() { return Batch(*this); }

  /// Appends what a batch holds now.
  void flush() {
    if (pending_.empty()) return;
    std::vector<JournalEntry> entries;
    entries.swap(pending_);
    if (options_.snapshot_every != 0 && since_snapshot_ >= options_.snapshot_every) {
      // The participants already hold the pending changes: the journal must get them before a snapshot.
      const std::size_t n = entries.size();
      seq_ = journal_->append(tenant_id_, run_id_, seq_, std::move(entries));
      since_snapshot_ += n;
      // The entries are committed: a snapshot that fails now must not make the caller believe they were not. It is
      // only skipped (restores read further back); the next one is due after snapshot_every more entries.
      try {
        snapshot();
      } catch (...) {
      }
      return;
    }
    const std::size_t n = entries.size();
    seq_ = journal_->append(tenant_id_, run_id_, seq_, std::move(entries));
    since_snapshot_ += n;
  }

  /// Writes a snapshot of every attached participant now (call it between changes, not from inside one). Skipped (returns false) while the run holds entries of
  /// a participant that is not attached in this process: its state is not known here, and a snapshot without it
  /// would lose it. Restores still work then; they only read further back.
  bool snapshot() {
    if (attached_.empty() || !pending_.empty()) return false;
    for (const auto& name : loaded_names_) {
      bool present = false;
      for (const auto* p : attached_) present = present || p->participant_name() == name;
      if (!present) return false;
    }
    nlohmann::json state = nlohmann::json::object();
    for (const auto* p : attached_) state[p->participant_name()] = p->participant_state();
    since_snapshot_ = 0;  // a failed snapshot is not retried before the next snapshot_every entries
    JournalEntry e;
    e.kind = snapshot_kind;
    e.data = std::move(state);
    seq_ = journal_->append(tenant_id_, run_id_, seq_, {std::move(e)});
    since_snapshot_ = 0;
    return true;
  }

 private:
  void load(std::uint64_t at_seq) {
    loaded_ = journal_->read_for_restore(tenant_id_, run_id_, at_seq);
    seq_ = at_seq;
    since_snapshot_ = 0;
    for (const auto& e : loaded_) {
      if (e.kind == snapshot_kind) {
        since_snapshot_ = 0;
        for (const auto& [name, state] : e.data.items()) remember(name);
      } else {
        ++since_snapshot_;
        remember(e.kind.substr(0, e.kind.find('.')));
      }
    }
  }

  void remember(const std::string& name) {
    for (const auto& k : loaded_names_) {
      if (k == name) return;
    }
    loaded_names_.push_back(name);
  }

  // Entries of `name` in what load() read (attach() restores from them); holds() also counts attached participants.
  bool has_entries_of(std::string_view name) const {
    for (const auto& k : loaded_names_) {
      if (k == name) return true;
    }
    return false;
  }

  void replay(RunParticipant& p, const std::string& name) {
    const std::string prefix = name + ".";
    for (const auto& e : loaded_) {
      try {
        if (e.kind == snapshot_kind) {
          if (const auto it = e.data.find(name); it != e.data.end()) p.restore_participant(*it);
        } else if (e.kind.compare(0, prefix.size(), prefix) == 0) {
          const std::string_view kind = std::string_view(e.kind).substr(prefix.size());
          if (kind == "state") {
            p.restore_participant(e.data);
          } else {
            p.apply_participant_entry(kind, e);
          }
        }
      } catch (const std::exception& ex) {
        throw state_error(fmt::format("run '{}': entry {} ({}) cannot be applied: {}", run_id_, e.seq, e.kind,
                                      ex.what()));
      }
    }
  }

  std::shared_ptr<RunJournal> journal_;
  std::string tenant_id_;
  std::string run_id_;
  RunOptions options_;
  std::uint64_t seq_ = 0;
  std::size_t since_snapshot_ = 0;
  std::vector<JournalEntry> loaded_;       // what a restore needs, from the newest snapshot on
  std::vector<std::string> loaded_names_;  // participants with entries in loaded_
  std::vector<RunParticipant*> attached_;
  std::vector<JournalEntry> pending_;  // recorded inside a batch, not appended yet
  int batch_depth_ = 0;
};

CAIRN_END_NAMESPACE
