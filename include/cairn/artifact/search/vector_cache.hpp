// cairn::detail — the vector indexes a process keeps for a store whose vectors live in a database (SQLite,
// PostgreSQL; docs/search.md, "The in-process index on SQL backends"). The database is the truth: every write that
// changes what is searchable adds a row to a per-tenant change sequence in the same transaction, and before a
// query the process's index of that (tenant, model, dimension) applies the changes after the last one it saw. The
// index is a cache: rebuilt from the rows when the process starts or after it was evicted, never trusted for what
// is current (a store checks each candidate against its rows), so a crash between a transaction and the index loses
// nothing.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cairn/artifact/search/vector_index.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace detail {

/// One change of what a (tenant, model) index holds.
struct VectorChange {
  std::uint64_t seq = 0;  ///< the change sequence's number (increasing; what the next read starts after)
  std::string id;
  std::uint64_t version = 0;  ///< 0 with `removed`: every version of `id`
  bool removed = false;       ///< false: add (or replace) the vector of (id, version)
  std::vector<float> vector;  ///< L2-normalised, for an add
  /// What the store keeps beside the version (an add's), handed to a search's accept as the version's tag: what a
  /// filter reads of the record (FilterFields), so that a filter is checked without reading rows. Null: nothing.
  std::shared_ptr<const void> fields = nullptr;
  /// The index starts over: what it holds is dropped before the changes after this one are applied (a store whose
  /// older changes are gone, pruned, answers a reader that fell behind them with this and then every current
  /// vector, as for a first read).
  bool reset = false;
  /// No change: about this many adds follow (a first read says how many vectors it found), so the index makes room
  /// for them once.
  std::size_t coming = 0;
};

/// What a read hands each change to, in order. The change is the reader's: the sink may move from it, and the
/// reader may reuse it (and its vector's memory) for the next.
using VectorChangeSink = std::function<void(VectorChange&)>;

/// Hands the changes after `after_seq` of (tenant, model) to `sink`, oldest first, as it reads them (no list of
/// them is made: a first read of 100,000 vectors goes straight into the index); returns whether it handed any.
/// With after_seq 0 a store may answer with every current vector instead (each an add, seq = the newest sequence
/// number it covers): how an index is first built. A read that may fail part-way hands its adds with seq 0 and the
/// newest number with a last change that changes nothing, and a `reset` when it fails: the index is then left
/// empty at 0, not half built at the newest number (PostgreSQL's, which streams the rows).
using ReadVectorChanges = std::function<bool(const std::string& tenant, const std::string& model,
                                             std::uint64_t after_seq, const VectorChangeSink& sink)>;

/// The indexes of one store object, one per (tenant, model, dimension), most recently used first. Thread-safe.
///
/// Bounded (docs/limits.md): a (tenant, model, dimension) with no stored vector keeps no index at all (a query
/// naming a model or dimension nobody stored leaves nothing behind), and past `max_entries` indexes or
/// `max_bytes` of them (estimated: index_bytes) the least recently used go; the next query of an index that went
/// builds it again from the rows. The most recently used index stays even when it alone is larger than max_bytes.
class VectorCache {
 public:
  static constexpr std::size_t default_max_entries = 1024;
  static constexpr std::size_t default_max_bytes = std::size_t{1} << 30;  // 1 GiB

  /// `reader`: what every index it makes reads its columns with (VectorIndex::set_column_reader), e.g. the fields
  /// kept beside each vector (VectorChange::fields; detail::fields_column_reader).
  explicit VectorCache(std::size_t max_entries = default_max_entries, std::size_t max_bytes = default_max_bytes,
                       VectorIndex::ColumnReader reader = nullptr)
      : max_entries_(max_entries), max_bytes_(max_bytes), reader_(std::move(reader)) {}

  /// What an index of `size` versions of `dimension` is counted as against max_bytes: the float and 16-bit copies
  /// (6 bytes a dimension), 384 bytes of bookkeeping and 256 of the fields a filter reads a version (W6IndexBytes
  /// in bench/ measures 2,646 bytes a version at 384 dimensions without the fields; an hnswlib graph, from 2,048
  /// versions, adds its links).
  static std::size_t index_bytes(std::size_t size, std::size_t dimension) noexcept {
    return size * (6 * dimension + 640);
  }

  /// The (tenant, model, dimension) index with every change up to now applied: `read` is called with the sequence
  /// the index has seen (0 at first) and may be called again until it returns nothing new. Concurrent callers of
  /// one index wait for one catch-up; other indexes are not held up. What `read` throws reaches the caller; the
  /// index keeps the changes it applied before and their sequence, so nothing is applied twice. `seen`, when
  /// given, gets the sequence number the index is at (it moves when a change of the (tenant, model), or of every
  /// model, was applied: what a caller may key its own per-tenant figures on).
  std::shared_ptr<const VectorIndex> current(const std::string& tenant, const std::string& model, std::size_t dimension,
                                             const ReadVectorChanges& read, std::uint64_t* seen = nullptr) {
    const Key key{tenant, model, dimension};
    const std::shared_ptr<Entry> entry = entry_of(key);
    std::lock_guard catch_up(entry->catch_up);
    const VectorChangeSink apply = [this, &entry, dimension](VectorChange& c) {
      if (c.coming > 0) {
        entry->index->reserve(c.coming);
        return;
      }
      if (c.reset) {
        // A new index, not a cleared one: a search still running on the old one keeps it until it ends.
        entry->index = make_index(dimension);
      } else if (c.removed) {
        if (c.version == 0) {
          entry->index->remove_all(c.id);
        } else {
          entry->index->remove(c.id, c.version);
        }
      } else {
        entry->index->add(c.id, c.version, c.vector, nullptr, std::move(c.fields));
      }
      if (c.seq > entry->seq) entry->seq = c.seq;
    };
    for (;;) {
      const bool from_nothing = entry->seq == 0;
      if (!read(tenant, model, entry->seq, apply)) break;
      if (from_nothing) builds_.fetch_add(1, std::memory_order_relaxed);
    }
    if (seen) *seen = entry->seq;
    settle(key, entry);
    return entry->index;
  }

  /// Forgets every index (the next query rebuilds from the rows), e.g. after the store's tables were replaced.
  void clear() {
    std::lock_guard lock(mutex_);
    entries_.clear();
    order_.clear();
    bytes_ = 0;
  }

  /// How many indexes are kept, and their bytes as index_bytes counts them.
  std::size_t entries() const {
    std::lock_guard lock(mutex_);
    return entries_.size();
  }
  std::size_t bytes() const {
    std::lock_guard lock(mutex_);
    return bytes_;
  }
  /// How many times an index was built from nothing (a first read, after 0, that returned changes): each is a read
  /// of every current vector of a (tenant, model).
  std::uint64_t builds() const noexcept { return builds_.load(std::memory_order_relaxed); }

 private:
  using Key = std::tuple<std::string, std::string, std::size_t>;
  std::shared_ptr<VectorIndex> make_index(std::size_t dimension) const {
    auto index = std::make_shared<VectorIndex>(dimension);
    if (reader_) index->set_column_reader(reader_);
    return index;
  }

  struct Entry {
    explicit Entry(std::shared_ptr<VectorIndex> i) : index(std::move(i)) {}
    std::mutex catch_up;
    std::uint64_t seq = 0;
    std::shared_ptr<VectorIndex> index;  // replaced (under catch_up) when a reset starts the index over
    std::size_t bytes = 0;               // under the cache's mutex_: what the entry counts in bytes_
  };
  struct Slot {
    std::shared_ptr<Entry> entry;
    std::list<Key>::iterator at;  // in order_
  };

  /// The key's entry, made when there is none, and now the most recently used.
  std::shared_ptr<Entry> entry_of(const Key& key) {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(key);
    if (it == entries_.end()) {
      order_.push_front(key);
      it = entries_.emplace(key, Slot{std::make_shared<Entry>(make_index(std::get<2>(key))), order_.begin()}).first;
    } else {
      order_.splice(order_.begin(), order_, it->second.at);
    }
    return it->second.entry;
  }

  /// After a catch-up: an entry whose index holds nothing goes (nothing stored: nothing worth keeping), the bytes
  /// of the others are counted again, and the least recently used go while the cache is past its bounds.
  void settle(const Key& key, const std::shared_ptr<Entry>& entry) {
    const std::size_t size = entry->index->size();
    std::lock_guard lock(mutex_);
    const auto it = entries_.find(key);
    if (it == entries_.end() || it->second.entry != entry) return;  // gone already (cleared or evicted)
    if (size == 0) {
      drop(it);
      return;
    }
    bytes_ = bytes_ - entry->bytes + index_bytes(size, std::get<2>(key));
    entry->bytes = index_bytes(size, std::get<2>(key));
    while (entries_.size() > 1 && (entries_.size() > max_entries_ || bytes_ > max_bytes_)) {
      const auto last = entries_.find(order_.back());
      if (last->second.entry == entry) break;  // the one just used is the most recent: never reached
      drop(last);
    }
  }

  void drop(std::map<Key, Slot>::iterator it) {
    bytes_ -= it->second.entry->bytes;
    order_.erase(it->second.at);
    entries_.erase(it);
  }

  const std::size_t max_entries_;
  const std::size_t max_bytes_;
  const VectorIndex::ColumnReader reader_;
  mutable std::mutex mutex_;
  std::map<Key, Slot> entries_;
  std::list<Key> order_;  // most recently used first
  std::size_t bytes_ = 0;
  std::atomic<std::uint64_t> builds_{0};
};

}  // namespace detail
CAIRN_END_NAMESPACE
