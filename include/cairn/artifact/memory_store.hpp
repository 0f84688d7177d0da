// cairn — InMemoryArtifactStore: the embedded default ArtifactStore.
//
// Tenants are spread over shards, each behind its own reader/writer lock, so agents of different tenants rarely
// wait for each other. Within a shard one hash table maps (tenant, id) to the artifact's versions, so a fetch costs
// one lookup, like a plain map; reads hand out the stored shared_ptr itself and never copy a record. Each tenant also
// keeps a sorted index of its ids, so a listing walks only that tenant's artifacts.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cairn/artifact/store.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

/// How an InMemoryArtifactStore is set up.
struct InMemoryStoreOptions {
  std::size_t shards = 16;           ///< locks that spread the tenants (at least 1)
  std::shared_ptr<Clock> clock{};      ///< stamps created_at; null: the system clock
  std::shared_ptr<IdGenerator> ids{};  ///< ids of records stored without one; null: random UUID v4
};

/// Thread-safe, in-process ArtifactStore. Content lives as long as the store does.
class InMemoryArtifactStore final : public ArtifactStore {
 public:
  /// `shards` locks spread the tenants (at least 1).
  explicit InMemoryArtifactStore(std::size_t shards = 16) : shards_(shards == 0 ? 1 : shards) {}

  /// A store that takes its time and ids from `options` (cairn/testing/clock.hpp makes them deterministic).
  explicit InMemoryArtifactStore(InMemoryStoreOptions options)
      : shards_(options.shards == 0 ? 1 : options.shards),
        clock_(std::move(options.clock)),
        ids_(std::move(options.ids)) {}

  using ArtifactStore::store;

  [[nodiscard]] ArtifactPtr store(const ArtifactRecord& record) override { return put(record, nullptr); }

  [[nodiscard]] ArtifactPtr store_if(const ArtifactRecord& record, std::uint64_t expected_version) override {
    detail::check_store_if(record, expected_version);
    return put(record, &expected_version);
  }

  [[nodiscard]]
  ArtifactPtr fetch(const std::string& id, const std::string& tenant_id,
                    std::uint64_t version = latest) const override {
    const Shard& shard = shard_for(tenant_id);
    const std::string& key = composite_key(tenant_id, id);
    std::shared_lock lock(shard.mutex);
    const auto it = shard.entries.find(key);
    if (it == shard.entries.end()) return nullptr;
    const Entry& entry = it->second;
    if (version == latest || version == entry.latest->version()) return entry.latest;
    return version <= entry.older.size() ? entry.older[version - 1] : nullptr;
  }

  void remove(const std::string& id, const std::string& tenant_id) override {
    Shard& shard = shard_for(tenant_id);
    const std::string& key = composite_key(tenant_id, id);
    std::unique_lock lock(shard.mutex);
    const auto it = shard.entries.find(key);
    if (it == shard.entries.end()) throw not_found(detail::artifact_missing_message(id, tenant_id));
    const auto t = shard.tenants.find(tenant_id);
    t->second.erase(std::string_view(id));
    if (t->second.empty()) shard.tenants.erase(t);
    shard.entries.erase(it);
  }

  [[nodiscard]]
  std::vector<std::uint64_t> versions(const std::string& id, const std::string& tenant_id) const override {
    const Shard& shard = shard_for(tenant_id);
    const std::string& key = composite_key(tenant_id, id);
    std::shared_lock lock(shard.mutex);
    std::vector<std::uint64_t> out;
    const auto it = shard.entries.find(key);
    if (it == shard.entries.end()) return out;
    const std::uint64_t n = it->second.latest->version();
    out.reserve(n);
    for (std::uint64_t v = 1; v <= n; ++v) out.push_back(v);
    return out;
  }

  [[nodiscard]] ListPage list(const std::string& tenant_id, const ListQuery& query = {}) const override {
    detail::check_list_query(query);
    const Shard& shard = shard_for(tenant_id);
    std::shared_lock lock(shard.mutex);
    ListPage page;
    const auto t = shard.tenants.find(tenant_id);
    if (t == shard.tenants.end()) return page;
    const Index& index = t->second;
    auto it = query.cursor.empty() || query.cursor < query.prefix ? index.lower_bound(query.prefix)
                                                                  : index.upper_bound(query.cursor);
    // One allocation for the page rather than the vector's doublings; never more than the tenant holds.
    page.items.reserve(std::min(query.limit, index.size()));
    const bool filtered = query.type || query.created_by;
    const std::string_view prefix = query.prefix;
    for (; it != index.end() && (prefix.empty() || it->first.substr(0, prefix.size()) == prefix); ++it) {
      const ArtifactPtr& current = it->second->latest;
      if (filtered && !detail::matches_filters(*current, query)) continue;
      if (page.items.size() == query.limit) {
        page.next_cursor = page.items.back()->id();
        break;
      }
      page.items.push_back(current);
    }
    return page;
  }

 private:
  // store() and store_if(): with `expected` set, the id's latest version must be *expected (0: none), checked under
  // the shard's write lock together with the write.
  ArtifactPtr put(const ArtifactRecord& record, const std::uint64_t* expected) {
    const std::string& tenant_id = record.tenant_id();
    Shard& shard = shard_for(tenant_id);
    // The record's own id is referred to, not copied (the stored record shares it); only a new one is made.
    std::string generated = record.id().empty() ? detail::new_uuid(ids_.get()) : std::string();
    const std::string& id = generated.empty() ? record.id() : generated;
    std::unique_lock lock(shard.mutex);
    if (expected) {
      const auto found = shard.entries.find(composite_key(tenant_id, id));
      const std::uint64_t actual = found == shard.entries.end() ? 0 : found->second.latest->version();
      if (actual != *expected) throw detail::version_conflict(record, *expected, actual);
    }
    auto [it, inserted] = shard.entries.try_emplace(composite_key(tenant_id, id));
    Entry& entry = it->second;
    ArtifactPtr stored;
    try {
      // What can throw (a generated id or the clock's time the record refuses, the host's clock or id generator,
      // memory) comes before the new id is visible: a failed store leaves nothing behind.
      const std::uint64_t version = inserted ? 1 : entry.latest->version() + 1;
      stored = generated.empty() ? detail::stamp(record, version, clock_.get())
                                 : detail::stamp(record, std::move(generated), version, clock_.get());
      if (inserted) shard.tenants[tenant_id].emplace(id_part(it->first, tenant_id), &entry);
      if (entry.latest) entry.older.push_back(std::move(entry.latest));
    } catch (...) {
      if (inserted) shard.entries.erase(it);
      throw;
    }
    entry.latest = stored;
    return stored;
  }

  // The versions of one artifact. The latest is kept apart so that the common fetch touches one object.
  struct Entry {
    ArtifactPtr latest;
    std::vector<ArtifactPtr> older;  // older[i] is version i + 1
  };
  // A tenant's ids in order, viewing the id part of the entries' keys (unordered_map nodes never move).
  using Index = std::map<std::string_view, const Entry*, std::less<>>;
  struct Shard {
    mutable std::shared_mutex mutex;
    std::unordered_map<std::string, Entry> entries;  // key: tenant_id + '\0' + id
    std::unordered_map<std::string, Index> tenants;
  };

  // The lookup key, built in a per-thread buffer so that a fetch allocates nothing. A tenant id cannot contain
  // '\0' (records reject control characters), so the key is unambiguous.
  static const std::string& composite_key(const std::string& tenant_id, const std::string& id) {
    thread_local std::string key;
    key.assign(tenant_id).push_back('\0');
    key.append(id);
    return key;
  }
  static std::string_view id_part(const std::string& key, const std::string& tenant_id) {
    return std::string_view(key).substr(tenant_id.size() + 1);
  }

  Shard& shard_for(const std::string& tenant_id) {
    detail::check_tenant(tenant_id);
    return shards_[std::hash<std::string>{}(tenant_id) % shards_.size()];
  }
  const Shard& shard_for(const std::string& tenant_id) const {
    return const_cast<InMemoryArtifactStore*>(this)->shard_for(tenant_id);
  }

  std::vector<Shard> shards_;
  std::shared_ptr<Clock> clock_;
  std::shared_ptr<IdGenerator> ids_;
};

CAIRN_END_NAMESPACE
