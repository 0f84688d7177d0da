// cairn — the function bodies of cairn/run/memory_journal.hpp (docs/api.md, "Compiled mode"). Header-only, the
// default, that header includes this file and CAIRN_INLINE is `inline`; with CAIRN_COMPILED_LIB they are compiled
// once, into cairn::compiled (src/compiled/), and the header only declares them.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cairn/error.hpp"
#include "cairn/run/journal.hpp"
#include "cairn/run/memory_journal.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

CAIRN_INLINE void InMemoryRunJournal::do_append(const std::string& tenant_id, const std::string& run_id,
                                                std::uint64_t expected_seq, const std::vector<JournalEntry>& entries,
                                                std::int64_t now) {
  std::unique_lock lock(mutex_);
  auto it = runs_.find(Key{tenant_id, run_id});
  const std::uint64_t actual = it == runs_.end() ? 0 : it->second.info.last_seq;
  if (actual != expected_seq || (it == runs_.end() && expected_seq != 0)) {
    throw conflict(fmt::format("append to run '{}': expected it to end at seq {}, it ends at seq {}", excerpt(run_id),
                               expected_seq, actual),
                   expected_seq, actual);
  }
  if (it == runs_.end()) {
    Run fresh;
    fresh.info.run_id = run_id;
    fresh.info.created_at = now;
    it = runs_.emplace(Key{tenant_id, run_id}, std::move(fresh)).first;
  }
  Run& run = it->second;
  run.entries.insert(run.entries.end(), entries.begin(), entries.end());
  for (const JournalEntry& e : entries) {
    if (e.kind == snapshot_kind) run.snapshots.push_back(e.seq);
  }
  run.info.last_seq = entries.back().seq;
  run.info.updated_at = now;
}

CAIRN_INLINE std::optional<RunInfo> InMemoryRunJournal::head(const std::string& tenant_id,
                                                             const std::string& run_id) const {
  std::shared_lock lock(mutex_);
  const auto it = runs_.find(Key{tenant_id, run_id});
  if (it == runs_.end()) return std::nullopt;
  return it->second.info;
}

CAIRN_INLINE std::vector<JournalEntry> InMemoryRunJournal::own_entries(const std::string& tenant_id,
                                                                       const std::string& run_id,
                                                                       std::uint64_t from_seq,
                                                                       std::uint64_t to_seq) const {
  std::shared_lock lock(mutex_);
  std::vector<JournalEntry> out;
  const auto it = runs_.find(Key{tenant_id, run_id});
  if (it == runs_.end()) return out;
  const auto& entries = it->second.entries;
  auto first = std::lower_bound(entries.begin(), entries.end(), from_seq,
                                [](const JournalEntry& e, std::uint64_t s) { return e.seq < s; });
  for (; first != entries.end() && first->seq <= to_seq; ++first) out.push_back(*first);
  return out;
}

CAIRN_INLINE std::uint64_t InMemoryRunJournal::own_snapshot_at(const std::string& tenant_id, const RunInfo& run,
                                                               std::uint64_t at_seq) const {
  std::shared_lock lock(mutex_);
  const auto it = runs_.find(Key{tenant_id, run.run_id});
  if (it == runs_.end()) return 0;
  const auto& snapshots = it->second.snapshots;
  auto pos = std::upper_bound(snapshots.begin(), snapshots.end(), at_seq);
  return pos == snapshots.begin() ? 0 : *std::prev(pos);
}

CAIRN_INLINE void InMemoryRunJournal::do_create_fork(const std::string& tenant_id, const std::string& run_id,
                                                     const std::string& source, std::uint64_t fork_seq,
                                                     std::int64_t now) {
  std::unique_lock lock(mutex_);
  const auto existing = runs_.find(Key{tenant_id, run_id});
  if (existing != runs_.end()) {
    throw conflict(fmt::format("fork: run '{}' exists already", excerpt(run_id)), 0, existing->second.info.last_seq);
  }
  // RunJournal::fork checked the source before taking this lock; another thread may have removed or pruned it
  // since. Checked again here, so a fork never points at entries that are gone.
  const auto src = runs_.find(Key{tenant_id, source});
  if (src == runs_.end()) {
    throw not_found(fmt::format("fork: run '{}' not found in tenant '{}'", excerpt(source), excerpt(tenant_id)));
  }
  const RunInfo& s = src->second.info;
  if (fork_seq > s.last_seq || (fork_seq > s.fork_seq && fork_seq < s.kept_from)) {
    throw invalid_argument(fmt::format("fork: run '{}' holds seq {} to {}; cannot fork at {}", excerpt(source),
                                       s.kept_from, s.last_seq, fork_seq));
  }
  Run fork;
  fork.info.run_id = run_id;
  fork.info.last_seq = fork_seq;
  fork.info.forked_from = source;
  fork.info.fork_seq = fork_seq;
  fork.info.created_at = now;
  fork.info.updated_at = now;
  runs_.emplace(Key{tenant_id, run_id}, std::move(fork));
}

CAIRN_INLINE bool InMemoryRunJournal::do_remove(const std::string& tenant_id, const std::string& run_id,
                                                std::int64_t updated_before) {
  std::unique_lock lock(mutex_);
  const auto it = runs_.find(Key{tenant_id, run_id});
  if (it == runs_.end() || it->second.info.updated_at >= updated_before) return false;
  for (auto r = runs_.lower_bound(Key{tenant_id, ""}); r != runs_.end() && r->first.tenant == tenant_id; ++r) {
    if (r->second.info.forked_from == run_id) {
      throw state_error(fmt::format("remove: run '{}' has forks that read its entries ('{}'); remove them first",
                                    excerpt(run_id), excerpt(r->first.run)));
    }
  }
  runs_.erase(it);
  return true;
}

CAIRN_INLINE std::size_t InMemoryRunJournal::do_prune(const std::string& tenant_id, const std::string& run_id,
                                                      std::uint64_t keep_from) {
  std::unique_lock lock(mutex_);
  const auto it = runs_.find(Key{tenant_id, run_id});
  if (it == runs_.end()) return 0;
  Run& run = it->second;
  // RunJournal::prune chose keep_from from the forks it saw; a fork made since at an earlier point would lose
  // its entries.
  for (auto r = runs_.lower_bound(Key{tenant_id, ""}); r != runs_.end() && r->first.tenant == tenant_id; ++r) {
    const RunInfo& f = r->second.info;
    if (f.forked_from == run_id && f.fork_seq > run.info.fork_seq && f.fork_seq < keep_from) {
      throw state_error(
          fmt::format("prune: run '{}' was forked at a point before seq {} meanwhile (by '{}'); "
                      "nothing was pruned, try again",
                      excerpt(run_id), keep_from, excerpt(r->first.run)));
    }
  }
  const auto cut = std::lower_bound(run.entries.begin(), run.entries.end(), keep_from,
                                    [](const JournalEntry& e, std::uint64_t s) { return e.seq < s; });
  const auto gone = static_cast<std::size_t>(cut - run.entries.begin());
  run.entries.erase(run.entries.begin(), cut);
  run.snapshots.erase(run.snapshots.begin(), std::lower_bound(run.snapshots.begin(), run.snapshots.end(), keep_from));
  run.info.kept_from = std::max(run.info.kept_from, keep_from);
  return gone;
}

CAIRN_INLINE std::vector<RunFork> InMemoryRunJournal::forks(const std::string& tenant_id,
                                                            const std::string& run_id) const {
  std::shared_lock lock(mutex_);
  std::vector<RunFork> out;
  for (auto it = runs_.lower_bound(Key{tenant_id, ""}); it != runs_.end() && it->first.tenant == tenant_id; ++it) {
    if (it->second.info.forked_from == run_id) out.push_back(RunFork{it->first.run, it->second.info.fork_seq});
  }
  return out;
}

CAIRN_INLINE std::vector<std::string> InMemoryRunJournal::stale_runs(const std::string& tenant_id,
                                                                     std::int64_t updated_before) const {
  std::shared_lock lock(mutex_);
  std::vector<std::string> out;
  for (auto it = runs_.lower_bound(Key{tenant_id, ""}); it != runs_.end() && it->first.tenant == tenant_id; ++it) {
    if (it->second.info.updated_at < updated_before) out.push_back(it->first.run);
  }
  return out;
}

CAIRN_END_NAMESPACE
