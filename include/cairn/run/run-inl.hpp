// cairn — the function bodies of cairn/run/run.hpp (docs/api.md, "Compiled mode"). Header-only, the default, that
// header includes this file and CAIRN_INLINE is `inline`; with CAIRN_COMPILED_LIB they are compiled once, into
// cairn::compiled (src/compiled/), and the header only declares them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/detail/json.hpp"
#include "cairn/error.hpp"
#include "cairn/run/journal.hpp"
#include "cairn/run/run.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

CAIRN_INLINE Run::Run(std::shared_ptr<RunJournal> journal, std::string tenant_id, std::string run_id,
                      RunOptions options)
    : journal_(std::move(journal)), tenant_id_(std::move(tenant_id)), run_id_(std::move(run_id)), options_(options) {
  if (!journal_) throw invalid_argument("Run: journal must not be null");
  if (const auto info = journal_->info(tenant_id_, run_id_)) load(info->last_seq);
}

CAIRN_INLINE Run::Run(std::shared_ptr<RunJournal> journal, std::string tenant_id, std::string run_id, RunAt at,
                      RunOptions options)
    : journal_(std::move(journal)), tenant_id_(std::move(tenant_id)), run_id_(std::move(run_id)), options_(options) {
  if (!journal_) throw invalid_argument("Run: journal must not be null");
  load(at.seq);
}

CAIRN_INLINE bool Run::holds(std::string_view name) const {
  if (has_entries_of(name)) return true;
  for (const auto* p : attached_) {
    if (p->participant_name() == name) return true;
  }
  return false;
}

CAIRN_INLINE void Run::attach(RunParticipant& p) {
  const std::string name = p.participant_name();
  for (const auto* q : attached_) {
    if (q->participant_name() == name) {
      throw invalid_argument(fmt::format("Run '{}': a participant named '{}' is attached already", run_id_, name));
    }
  }
  Checkpoint track{&p, name, false, 0, 0};
  if (has_entries_of(name)) {
    // What load() read was released once every participant it held was attached (see release_loaded()): a
    // participant attached again after that is rebuilt from the journal as it is now.
    if (released_) loaded_ = read_checked(seq_);
    replay(p, name, track);
    attached_.push_back(&p);
    if (p.participant_checkpointed()) tracks_.push_back(std::move(track));
    release_loaded();
  } else {
    attached_.push_back(&p);
    if (p.participant_checkpointed()) tracks_.push_back(std::move(track));
    try {
      record(name, "state", p.participant_state());
    } catch (...) {
      attached_.pop_back();
      if (p.participant_checkpointed()) tracks_.pop_back();
      throw;
    }
  }
}

CAIRN_INLINE void Run::detach(const RunParticipant& p) noexcept {
  for (auto it = attached_.begin(); it != attached_.end(); ++it) {
    if (*it == &p) {
      attached_.erase(it);
      break;
    }
  }
  for (auto it = tracks_.begin(); it != tracks_.end(); ++it) {
    if (it->participant == &p) {
      tracks_.erase(it);
      break;
    }
  }
}

CAIRN_INLINE void Run::moved(const RunParticipant& from, RunParticipant& to) noexcept {
  for (auto*& q : attached_) {
    if (q == &from) q = &to;
  }
  for (auto& t : tracks_) {
    if (t.participant == &from) t.participant = &to;
  }
}

CAIRN_INLINE std::uint64_t Run::record(const std::string& participant, std::string_view kind, nlohmann::json data,
                                       bool sync) {
  JournalEntry e;
  e.kind = participant + "." + std::string(kind);
  e.data = std::move(data);
  std::vector<JournalEntry> entries;
  entries.push_back(std::move(e));
  return record_entries(std::move(entries), sync);
}

CAIRN_INLINE std::uint64_t Run::record_entries(std::vector<JournalEntry> entries, bool sync) {
  check_usable();
  if (batch_depth_ > 0 && !sync) {
    for (auto& e : entries) pending_.push_back(std::move(e));
    return seq_;
  }
  // Outside a batch, with nothing pending, every participant's memory is what the journal holds (a participant
  // records a change before applying it): a checkpoint or snapshot that is due goes first, in the same append.
  // A sync entry inside a batch gets none: the participants already hold the batch's pending changes.
  const bool settled = batch_depth_ == 0 && pending_.empty();
  return commit(std::move(entries), settled ? Due::before : Due::none);
}

CAIRN_INLINE void Run::flush() {
  check_usable();
  if (pending_.empty()) return;
  std::vector<JournalEntry> entries;
  entries.swap(pending_);
  try {
    commit(std::move(entries), batch_depth_ == 0 ? Due::after : Due::none);
  } catch (const conflict&) {
    throw;  // every later append conflicts too: the run must be reopened anyway
  } catch (...) {
    abandoned_ = true;  // the next append could succeed without what was just lost, which participants may hold
    throw;
  }
}

CAIRN_INLINE bool Run::snapshot() {
  check_usable();
  if (batch_depth_ > 0 || !pending_.empty() || !snapshot_possible()) return false;
  commit({}, Due::snapshot);
  return true;
}

CAIRN_INLINE void Run::check_usable() const {
  if (abandoned_) {
    throw state_error(
        fmt::format("run '{}': a batch was abandoned (an exception, or a failed append, ended it); "
                    "the participants hold changes the journal does not: reopen the run",
                    run_id_));
  }
}

CAIRN_INLINE void Run::abandon() noexcept {
  if (pending_.empty()) return;
  pending_.clear();
  abandoned_ = true;
}

CAIRN_INLINE bool Run::loaded_all_attached() const {
  for (const auto& name : loaded_names_) {
    bool present = false;
    for (const auto* p : attached_) present = present || p->participant_name() == name;
    if (!present) return false;
  }
  return true;
}

CAIRN_INLINE void Run::due_entries(bool snapshot, const std::vector<Checkpoint>& tracks, std::size_t since_snapshot,
                                   std::vector<JournalEntry>& out) const {
  if (snapshot || snapshot_due(since_snapshot)) {
    nlohmann::json state = nlohmann::json::object();
    for (const auto* p : attached_) state[p->participant_name()] = p->participant_state();
    JournalEntry e;
    e.kind = snapshot_kind;
    e.data = std::move(state);
    out.push_back(std::move(e));
    return;
  }
  for (const auto& t : tracks) {
    if (!checkpoint_due(t)) continue;
    JournalEntry e;
    e.kind = t.name + ".state";
    e.data = t.participant->participant_state();
    out.push_back(std::move(e));
  }
}

CAIRN_INLINE void Run::account(const JournalEntry& e, std::vector<Checkpoint>& tracks, std::size_t& since_snapshot) {
  if (e.kind == snapshot_kind) {
    since_snapshot = 0;
    for (auto& t : tracks) {
      if (const auto it = e.data.find(t.name); it != e.data.end()) {
        t.known = true;
        t.state_bytes = detail::json_text_size(*it);
        t.since_bytes = 0;
      }
    }
    return;
  }
  ++since_snapshot;
  for (auto& t : tracks) {
    const std::size_t n = t.name.size();
    if (e.kind.size() <= n || e.kind[n] != '.' || e.kind.compare(0, n, t.name) != 0) continue;
    const std::size_t bytes = detail::json_text_size(e.data);
    if (std::string_view(e.kind).substr(n + 1) == "state") {
      t.known = true;
      t.state_bytes = bytes;
      t.since_bytes = 0;
    } else {
      t.since_bytes += bytes;
    }
    break;
  }
}

CAIRN_INLINE std::uint64_t Run::commit(std::vector<JournalEntry> entries, Due where) {
  std::vector<Checkpoint> tracks = tracks_;
  std::size_t since_snapshot = since_snapshot_;
  std::vector<JournalEntry> all;
  if (where == Due::before || where == Due::snapshot) {
    due_entries(where == Due::snapshot, tracks, since_snapshot, all);
  }
  if (all.empty()) {
    all = std::move(entries);
  } else {
    for (auto& e : entries) all.push_back(std::move(e));
  }
  for (const auto& e : all) account(e, tracks, since_snapshot);
  if (where == Due::after) {
    const std::size_t n = all.size();
    due_entries(false, tracks, since_snapshot, all);
    for (std::size_t i = n; i < all.size(); ++i) account(all[i], tracks, since_snapshot);
  }
  seq_ = journal_->append(tenant_id_, run_id_, seq_, std::move(all));
  tracks_ = std::move(tracks);
  since_snapshot_ = since_snapshot;
  return seq_;
}

CAIRN_INLINE std::vector<JournalEntry> Run::read_checked(std::uint64_t at_seq) const {
  auto entries = journal_->read_for_restore(tenant_id_, run_id_, at_seq);
  for (const auto& e : entries) {
    if (e.kind == snapshot_kind && (!e.data.is_object() || e.data.empty())) {
      throw state_error(
          fmt::format("run '{}': the snapshot at seq {} is damaged: expected an object of "
                      "participant states, got {}",
                      run_id_, e.seq, detail::excerpt(e.data.dump(), 80)));
    }
  }
  return entries;
}

CAIRN_INLINE void Run::load(std::uint64_t at_seq) {
  loaded_ = read_checked(at_seq);
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

CAIRN_INLINE void Run::release_loaded() {
  if (!loaded_all_attached()) return;
  std::vector<JournalEntry>().swap(loaded_);
  released_ = true;
}

CAIRN_INLINE void Run::remember(const std::string& name) {
  for (const auto& k : loaded_names_) {
    if (k == name) return;
  }
  loaded_names_.push_back(name);
}

CAIRN_INLINE bool Run::has_entries_of(std::string_view name) const {
  for (const auto& k : loaded_names_) {
    if (k == name) return true;
  }
  return false;
}

CAIRN_INLINE void Run::replay(RunParticipant& p, const std::string& name, Checkpoint& track) {
  const std::string prefix = name + ".";
  auto own = [&](const JournalEntry& e) { return e.kind.compare(0, prefix.size(), prefix) == 0; };
  std::size_t from = loaded_.size();  // the index of the whole state, or loaded_.size() when there is none
  for (std::size_t i = loaded_.size(); i-- > 0;) {
    const JournalEntry& e = loaded_[i];
    if ((e.kind == snapshot_kind && e.data.contains(name)) ||
        (own(e) && e.kind.size() == prefix.size() + 5 && e.kind.compare(prefix.size(), 5, "state") == 0)) {
      from = i;
      break;
    }
  }
  if (from == loaded_.size() && !loaded_.empty() && loaded_.front().kind == snapshot_kind) {
    // Its entries follow a snapshot that should hold it: without its state they would apply to nothing.
    throw state_error(
        fmt::format("run '{}': the snapshot at seq {} is damaged: it holds no state of participant "
                    "'{}', yet entries of it follow",
                    run_id_, loaded_.front().seq, name));
  }
  track.known = from != loaded_.size();
  const bool counted = p.participant_checkpointed();  // only a checkpointed participant's bytes are counted
  for (std::size_t i = from == loaded_.size() ? 0 : from; i < loaded_.size(); ++i) {
    const JournalEntry& e = loaded_[i];
    try {
      if (i == from) {
        const nlohmann::json& state = e.kind == snapshot_kind ? e.data.at(name) : e.data;
        p.restore_participant(state);
        if (counted) track.state_bytes = detail::json_text_size(state);
      } else if (own(e)) {
        p.apply_participant_entry(std::string_view(e.kind).substr(prefix.size()), e);
        if (counted) track.since_bytes += detail::json_text_size(e.data);
      }
    } catch (const std::exception& ex) {
      throw state_error(
          fmt::format("run '{}': entry {} ({}) cannot be applied: {}", run_id_, e.seq, e.kind, ex.what()));
    }
  }
  try {
    p.participant_restored();
  } catch (const std::exception& ex) {
    throw state_error(fmt::format("run '{}': participant '{}' cannot be restored: {}", run_id_, name, ex.what()));
  }
}

CAIRN_END_NAMESPACE
