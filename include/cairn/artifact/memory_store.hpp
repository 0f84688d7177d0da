// cairn — InMemoryArtifactStore: the embedded default ArtifactStore.
//
// Tenants are spread over shards, each behind its own reader/writer lock, so agents of different tenants rarely
// wait for each other. Reads hand out the stored shared_ptr itself: fetching never copies a record. A tenant's
// listing walks only that tenant's sorted index, so its cost does not grow with other tenants' data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <map>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cairn/artifact/store.hpp"

namespace cairn {

/// Thread-safe, in-process ArtifactStore. Content lives as long as the store does.
class InMemoryArtifactStore final : public ArtifactStore {
 public:
  /// `shards` locks spread the tenants (at least 1).
  explicit InMemoryArtifactStore(std::size_t shards = 16) : shards_(shards == 0 ? 1 : shards) {}

  using ArtifactStore::store;

  ArtifactPtr store(const ArtifactRecord& record) override {
    Shard& shard = shard_for(record.tenant_id());
    std::string id = record.id().empty() ? detail::uuid_v4() : record.id();
    std::unique_lock lock(shard.mutex);
    Tenant& tenant = shard.tenants[record.tenant_id()];
    auto [it, inserted] = tenant.by_id.try_emplace(std::move(id));
    if (inserted) tenant.order.emplace(it->first, &it->second);
    auto stored = detail::stamp(record, it->first, it->second.size() + 1);
    it->second.push_back(stored);
    return stored;
  }

  ArtifactPtr fetch(const std::string& id, const std::string& tenant_id,
                    std::uint64_t version = latest) const override {
    const Shard& shard = shard_for(tenant_id);
    std::shared_lock lock(shard.mutex);
    const Versions* versions = find(shard, id, tenant_id);
    if (!versions) return nullptr;
    if (version == latest) return versions->back();
    if (version > versions->size()) return nullptr;
    return (*versions)[version - 1];
  }

  void remove(const std::string& id, const std::string& tenant_id) override {
    Shard& shard = shard_for(tenant_id);
    std::unique_lock lock(shard.mutex);
    const auto t = shard.tenants.find(tenant_id);
    if (t != shard.tenants.end()) {
      Tenant& tenant = t->second;
      if (const auto it = tenant.by_id.find(id); it != tenant.by_id.end()) {
        tenant.order.erase(std::string_view(it->first));
        tenant.by_id.erase(it);
        return;
      }
    }
    throw not_found(detail::artifact_missing_message(id, tenant_id));
  }

  std::vector<std::uint64_t> versions(const std::string& id, const std::string& tenant_id) const override {
    const Shard& shard = shard_for(tenant_id);
    std::shared_lock lock(shard.mutex);
    std::vector<std::uint64_t> out;
    if (const Versions* versions = find(shard, id, tenant_id)) {
      out.reserve(versions->size());
      for (const auto& r : *versions) out.push_back(r->version());
    }
    return out;
  }

  ListPage list(const std::string& tenant_id, const ListQuery& query = {}) const override {
    detail::check_list_query(query);
    const Shard& shard = shard_for(tenant_id);
    std::shared_lock lock(shard.mutex);
    ListPage page;
    const auto t = shard.tenants.find(tenant_id);
    if (t == shard.tenants.end()) return page;
    const Tenant& tenant = t->second;
    auto it = query.cursor.empty() || query.cursor < query.prefix ? tenant.order.lower_bound(query.prefix)
                                                                  : tenant.order.upper_bound(query.cursor);
    for (; it != tenant.order.end() && it->first.compare(0, query.prefix.size(), query.prefix) == 0; ++it) {
      const ArtifactPtr& latest_version = it->second->back();
      if (!detail::matches_filters(*latest_version, query)) continue;
      if (page.items.size() == query.limit) {
        page.next_cursor = page.items.back()->id();
        break;
      }
      page.items.push_back(latest_version);
    }
    return page;
  }

 private:
  using Versions = std::vector<ArtifactPtr>;  // versions[i] is version i + 1
  struct Tenant {
    std::unordered_map<std::string, Versions> by_id;
    std::map<std::string_view, const Versions*, std::less<>> order;  // by_id's keys and values, which never move
  };
  struct Shard {
    mutable std::shared_mutex mutex;
    std::unordered_map<std::string, Tenant> tenants;
  };

  Shard& shard_for(const std::string& tenant_id) {
    detail::check_tenant(tenant_id);
    return shards_[std::hash<std::string>{}(tenant_id) % shards_.size()];
  }
  const Shard& shard_for(const std::string& tenant_id) const {
    return const_cast<InMemoryArtifactStore*>(this)->shard_for(tenant_id);
  }

  static const Versions* find(const Shard& shard, const std::string& id, const std::string& tenant_id) {
    const auto t = shard.tenants.find(tenant_id);
    if (t == shard.tenants.end()) return nullptr;
    const auto it = t->second.by_id.find(id);
    return it == t->second.by_id.end() ? nullptr : &it->second;
  }

  std::vector<Shard> shards_;
};

}  // namespace cairn
