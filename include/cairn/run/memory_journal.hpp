// cairn — InMemoryRunJournal: the embedded RunJournal, for tests and for hosts whose runs need not outlive the
// process (it keeps them as long as it lives).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "cairn/run/journal.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

/// Thread-safe, in-process RunJournal. One reader/writer lock guards all runs: appends are short (a few entries
/// moved into a vector), so the lock is held briefly.
class InMemoryRunJournal final : public RunJournal {
 public:
  /// `clock` stamps entries and run times (null: the system clock).
  explicit InMemoryRunJournal(std::shared_ptr<Clock> clock = nullptr) : RunJournal(std::move(clock)) {}

 protected:
  CAIRN_INLINE void do_append(const std::string& tenant_id, const std::string& run_id, std::uint64_t expected_seq,
                              const std::vector<JournalEntry>& entries, std::int64_t now) override;

  CAIRN_INLINE std::optional<RunInfo> head(const std::string& tenant_id, const std::string& run_id) const override;

  CAIRN_INLINE std::vector<JournalEntry> own_entries(const std::string& tenant_id, const std::string& run_id,
                                                     std::uint64_t from_seq, std::uint64_t to_seq) const override;

  CAIRN_INLINE std::uint64_t own_snapshot_at(const std::string& tenant_id, const RunInfo& run,
                                             std::uint64_t at_seq) const override;

  CAIRN_INLINE void do_create_fork(const std::string& tenant_id, const std::string& run_id, const std::string& source,
                                   std::uint64_t fork_seq, std::int64_t now) override;

  CAIRN_INLINE bool do_remove(const std::string& tenant_id, const std::string& run_id,
                              std::int64_t updated_before) override;

  CAIRN_INLINE std::size_t do_prune(const std::string& tenant_id, const std::string& run_id,
                                    std::uint64_t keep_from) override;

  CAIRN_INLINE std::vector<RunFork> forks(const std::string& tenant_id, const std::string& run_id) const override;

  CAIRN_INLINE std::vector<std::string> stale_runs(const std::string& tenant_id,
                                                   std::int64_t updated_before) const override;

 private:
  struct Key {
    std::string tenant;
    std::string run;
    friend bool operator<(const Key& a, const Key& b) {
      return a.tenant != b.tenant ? a.tenant < b.tenant : a.run < b.run;
    }
  };
  struct Run {
    RunInfo info;
    std::vector<JournalEntry> entries;     // own entries, ascending seq
    std::vector<std::uint64_t> snapshots;  // seqs of own snapshot entries, ascending
  };

  mutable std::shared_mutex mutex_;
  std::map<Key, Run> runs_;
};

CAIRN_END_NAMESPACE

#ifndef CAIRN_COMPILED_LIB
#include "cairn/run/memory_journal-inl.hpp"
#endif
