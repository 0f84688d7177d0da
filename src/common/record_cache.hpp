// cairn (private) — the records a SQL store's similarity search read, kept decoded in the process, so that a page
// whose hits were read before costs no row read and no JSON decode (docs/search.md, "The in-process index on SQL
// backends"; the bound: docs/limits.md).
//
// A record is kept under its (tenant, id, version) and the change sequence number of the vector index entry it was
// read for (detail::FilterFields::seq). That number names one life of the version: a version removed and stored again
// (versions restart at 1) is added by a later change, so it gets another key. The store keeps and finds a record only
// where the entry's change is in the snapshot the query reads (seq ≤ the snapshot's last change): the version is then
// the one the snapshot holds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "cairn/artifact/record.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace detail {

class RecordCache {
 public:
  /// `max_bytes` 0: nothing is kept.
  explicit RecordCache(std::size_t max_bytes) : max_bytes_(max_bytes) {}

  /// What a kept record is counted as: three times the text of its row (a parsed JSON value and its strings take
  /// about that; W1 measures 2.0x for a 1 KB value) and 256 bytes of key and bookkeeping.
  static std::size_t record_bytes(std::size_t row_text_bytes) noexcept { return 3 * row_text_bytes + 256; }

  /// The record kept for this life of the version, or null.
  ArtifactPtr find(std::string_view tenant, std::string_view id, std::uint64_t version, std::uint64_t seq) const {
    if (max_bytes_ == 0) return nullptr;
    const std::string k = key(tenant, id, version, seq);
    std::lock_guard lock(mutex_);
    const auto it = records_.find(k);
    return it == records_.end() ? nullptr : it->second.record;
  }

  /// Keeps `record` (counted as `bytes`, record_bytes()); the records kept first go first when the bound is passed.
  /// A record larger than a quarter of the bound is not kept.
  void keep(std::string_view tenant, std::string_view id, std::uint64_t version, std::uint64_t seq, ArtifactPtr record,
            std::size_t bytes) {
    if (!record || bytes > max_bytes_ / 4) return;
    std::string k = key(tenant, id, version, seq);
    std::lock_guard lock(mutex_);
    const auto [it, added] = records_.try_emplace(std::move(k), Kept{std::move(record), bytes});
    if (!added) return;
    order_.push_back(&it->first);
    bytes_ += bytes;
    while (bytes_ > max_bytes_ && !order_.empty()) {
      const auto oldest = records_.find(*order_.front());
      order_.pop_front();
      bytes_ -= oldest->second.bytes;
      records_.erase(oldest);
    }
  }

  /// Forgets every record (e.g. after the store's tables were replaced).
  void clear() {
    std::lock_guard lock(mutex_);
    records_.clear();
    order_.clear();
    bytes_ = 0;
  }

  std::size_t size() const {
    std::lock_guard lock(mutex_);
    return records_.size();
  }
  /// The kept records' bytes as record_bytes() counts them; never more than the bound.
  std::size_t bytes() const {
    std::lock_guard lock(mutex_);
    return bytes_;
  }
  std::size_t max_bytes() const noexcept { return max_bytes_; }

 private:
  struct Kept {
    ArtifactPtr record;
    std::size_t bytes = 0;
  };

  // The tenant and the id with their lengths first, so that no two keys run together.
  static std::string key(std::string_view tenant, std::string_view id, std::uint64_t version, std::uint64_t seq) {
    std::string k;
    k.reserve(tenant.size() + id.size() + 40);
    k.append(std::to_string(tenant.size())).push_back(':');
    k.append(tenant).append(std::to_string(id.size())).push_back(':');
    k.append(id).append(std::to_string(version)).push_back(':');
    k.append(std::to_string(seq));
    return k;
  }

  const std::size_t max_bytes_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Kept> records_;
  std::deque<const std::string*> order_;  // the keys of records_ (stable: node-based), oldest first
  std::size_t bytes_ = 0;
};

}  // namespace detail
CAIRN_END_NAMESPACE
