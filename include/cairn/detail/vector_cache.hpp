// cairn::detail — the approximate indexes a process keeps for a store whose vectors live in a database (SQLite,
// PostgreSQL; docs/search.md, "The in-process index on SQL backends"). The database is the truth: every write that
// changes what is searchable adds a row to a per-tenant change sequence in the same transaction, and before a
// query the process's index of that (tenant, model) applies the changes after the last one it saw. The index is a
// cache: rebuilt from the rows when the process starts, never trusted for what is current (a store checks each
// candidate against its rows), so a crash between a transaction and the index loses nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cairn/detail/vector_index.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace detail {

/// One change of what a (tenant, model) index holds.
struct VectorChange {
  std::uint64_t seq = 0;      ///< the change sequence's number (increasing; what the next read starts after)
  std::string id;
  std::uint64_t version = 0;  ///< 0 with `removed`: every version of `id`
  bool removed = false;       ///< false: add (or replace) the vector of (id, version)
  std::vector<float> vector;  ///< L2-normalised, for an add
  /// The index starts over: what it holds is dropped before the changes after this one are applied (a store whose
  /// older changes are gone, pruned, answers a reader that fell behind them with this and then every current
  /// vector, as for a first read).
  bool reset = false;
};

/// The changes after `after_seq` of (tenant, model), oldest first. With after_seq 0 a store may answer with every
/// current vector instead (each an add, seq = the newest sequence number it covers): how an index is first built.
using ReadVectorChanges =
    std::function<std::vector<VectorChange>(const std::string& tenant, const std::string& model, std::uint64_t after_seq)>;

/// The indexes of one store object, one per (tenant, model). Thread-safe.
class VectorCache {
 public:
  /// The (tenant, model) index with every change up to now applied: `read` is called with the sequence the index
  /// has seen (0 at first) and may be called again until it returns nothing new. Concurrent callers of one
  /// (tenant, model) wait for one catch-up; other (tenant, model)s are not held up. What `read` throws reaches
  /// the caller; the index keeps the changes it applied before and their sequence, so nothing is applied twice.
  /// `seen`, when given, gets the sequence number the index is at (it moves when a change of the (tenant, model),
  /// or of every model, was applied: what a caller may key its own per-tenant figures on).
  std::shared_ptr<const VectorIndex> current(const std::string& tenant, const std::string& model, std::size_t dimension,
                                             const ReadVectorChanges& read, std::uint64_t* seen = nullptr) {
    const std::shared_ptr<Entry> entry = entry_of(tenant, model, dimension);
    std::lock_guard catch_up(entry->catch_up);
    for (;;) {
      std::vector<VectorChange> changes = read(tenant, model, entry->seq);
      if (changes.empty()) break;
      for (const auto& c : changes) {
        if (c.reset) {
          // A new index, not a cleared one: a search still running on the old one keeps it until it ends.
          entry->index = std::make_shared<VectorIndex>(entry->dimension);
        } else if (c.removed) {
          if (c.version == 0) {
            entry->index->remove_all(c.id);
          } else {
            entry->index->remove(c.id, c.version);
          }
        } else {
          entry->index->add(c.id, c.version, c.vector);
        }
        if (c.seq > entry->seq) entry->seq = c.seq;
      }
    }
    if (seen) *seen = entry->seq;
    return entry->index;
  }

  /// Forgets every index (the next query rebuilds from the rows), e.g. after the store's tables were replaced.
  void clear() {
    std::lock_guard lock(mutex_);
    entries_.clear();
  }

 private:
  struct Entry {
    explicit Entry(std::size_t d) : dimension(d), index(std::make_shared<VectorIndex>(d)) {}
    const std::size_t dimension;
    std::mutex catch_up;
    std::uint64_t seq = 0;
    std::shared_ptr<VectorIndex> index;  // replaced (under catch_up) when a reset starts the index over
  };

  std::shared_ptr<Entry> entry_of(const std::string& tenant, const std::string& model, std::size_t dimension) {
    std::lock_guard lock(mutex_);
    auto& slot = entries_[{tenant, model}];
    if (!slot || slot->dimension != dimension) slot = std::make_shared<Entry>(dimension);
    return slot;
  }

  std::mutex mutex_;
  std::map<std::pair<std::string, std::string>, std::shared_ptr<Entry>> entries_;
};

}  // namespace detail
CAIRN_END_NAMESPACE
