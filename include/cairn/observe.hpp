// cairn — observability hooks: one small, backend-neutral interface through which a host sees what cairn does.
//
// cairn reports store calls, journal calls, @name resolution, tool calls, goal and workflow transitions and workflow
// artifact registrations as `Event`s to an `Observer` the host gives it. Each event is a finished span in
// OpenTelemetry terms: what (kind, operation), on what (tenant, subject), how long, how much (bytes, items) and how it
// ended (error code and message). Nothing is reported, timed, allocated or formatted when no observer is set: every
// hook is one null-pointer test. See docs/observe.md.
//
//     auto obs = cairn::observe_with([](const cairn::Event& e) {
//       std::cerr << cairn::to_string(e.kind) << ' ' << e.operation << ' ' << e.subject << '\n';
//     });
//     auto store = cairn::observed(std::make_shared<cairn::InMemoryArtifactStore>(), obs);
//     cairn::ExecutionContext ctx(store, "acme");
//     ctx.set_observer(obs);
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cairn/artifact/store.hpp"
#include "cairn/error.hpp"
#include "cairn/observe/observer.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

namespace detail {
inline std::uint64_t record_bytes(const ArtifactPtr& r) { return r ? json_bytes(r->value()) : 0; }
}  // namespace detail

/// An ArtifactStore that reports every call of `inner` to an observer, then forwards it unchanged: one event per
/// call (kind store; bytes_in: the stored value's JSON text; bytes_out: the fetched value's; items: versions or
/// listed records), failures included. Works for every backend. Thread-safe as `inner` is.
class ObservedArtifactStore final : public ArtifactStore {
 public:
  /// Throws cairn::invalid_argument for a null store. A null observer makes a plain pass-through.
  ObservedArtifactStore(std::shared_ptr<ArtifactStore> inner, std::shared_ptr<Observer> observer)
      : inner_(std::move(inner)), observer_(std::move(observer)) {
    if (!inner_) throw invalid_argument("observed: store must not be null");
  }

  const std::shared_ptr<ArtifactStore>& inner() const noexcept { return inner_; }
  const std::shared_ptr<Observer>& observer() const noexcept { return observer_; }

  using ArtifactStore::store;
  [[nodiscard]] ArtifactPtr store(const ArtifactRecord& record) override {
    return detail::observe_call(
        observer_.get(), EventKind::store, "store", record.tenant_id(), record.id(),
        [&] { return inner_->store(record); }, [&](Event& e, const ArtifactPtr& r) { stored(e, record, r); });
  }
  [[nodiscard]] ArtifactPtr store_if(const ArtifactRecord& record, std::uint64_t expected_version) override {
    return detail::observe_call(
        observer_.get(), EventKind::store, "store_if", record.tenant_id(), record.id(),
        [&] { return inner_->store_if(record, expected_version); },
        [&](Event& e, const ArtifactPtr& r) { stored(e, record, r); });
  }
  [[nodiscard]] ArtifactPtr fetch(const std::string& id, const std::string& tenant_id,
                                  std::uint64_t version = latest) const override {
    return detail::observe_call(
        observer_.get(), EventKind::store, "fetch", tenant_id, id,
        [&] { return inner_->fetch(id, tenant_id, version); },
        [](Event& e, const ArtifactPtr& r) {
          e.items = r ? 1 : 0;
          e.bytes_out = detail::record_bytes(r);
        });
  }
  void remove(const std::string& id, const std::string& tenant_id) override {
    detail::observe_call(
        observer_.get(), EventKind::store, "remove", tenant_id, id, [&] { inner_->remove(id, tenant_id); },
        [](Event&) {});
  }
  [[nodiscard]] std::vector<std::uint64_t> versions(const std::string& id,
                                                    const std::string& tenant_id) const override {
    return detail::observe_call(
        observer_.get(), EventKind::store, "versions", tenant_id, id, [&] { return inner_->versions(id, tenant_id); },
        [](Event& e, const std::vector<std::uint64_t>& v) { e.items = v.size(); });
  }
  [[nodiscard]] ListPage list(const std::string& tenant_id, const ListQuery& query = {}) const override {
    return detail::observe_call(
        observer_.get(), EventKind::store, "list", tenant_id, query.prefix,
        [&] { return inner_->list(tenant_id, query); },
        [](Event& e, const ListPage& p) {
          e.items = p.items.size();
          for (const auto& r : p.items) e.bytes_out += detail::record_bytes(r);
        });
  }
  [[nodiscard]] SearchPage search(const std::string& tenant_id, const SearchQuery& query) const override {
    return detail::observe_call(
        observer_.get(), EventKind::store, "search", tenant_id, query.text,
        [&] { return inner_->search(tenant_id, query); },
        [](Event& e, const SearchPage& p) {
          e.items = p.hits.size();
          for (const auto& h : p.hits) e.bytes_out += detail::record_bytes(h.record);
        });
  }
  [[nodiscard]] std::optional<Embedding> embedding(const std::string& id, const std::string& tenant_id,
                                                   std::uint64_t version) const override {
    return inner_->embedding(id, tenant_id, version);
  }
  [[nodiscard]] bool keeps_embeddings() const noexcept override { return inner_->keeps_embeddings(); }
  [[nodiscard]] std::shared_ptr<Embedder> embedder() const override { return inner_->embedder(); }
  [[nodiscard]] ArtifactPtr store_embedded(const ArtifactRecord& record, const Embedding& embedding) override {
    return detail::observe_call(
        observer_.get(), EventKind::store, "store_embedded", record.tenant_id(), record.id(),
        [&] { return inner_->store_embedded(record, embedding); },
        [&](Event& e, const ArtifactPtr& r) { stored(e, record, r); });
  }
  /// Reported as one EventKind::index event when it ends: items (= total) the versions it indexed.
  std::size_t reindex(const std::string& tenant_id) override {
    return detail::observe_call(
        observer_.get(), EventKind::index, "reindex", tenant_id, std::string(),
        [&] { return inner_->reindex(tenant_id); },
        [](Event& e, std::size_t n) {
          e.items = n;
          e.total = n;
        });
  }

 private:
  static void stored(Event& e, const ArtifactRecord& given, const ArtifactPtr& r) {
    e.bytes_in = detail::json_bytes(given.value());
    e.items = 1;
    if (r && e.subject.empty()) e.subject = r->id();  // the id the store drew
  }

  std::shared_ptr<ArtifactStore> inner_;
  std::shared_ptr<Observer> observer_;
};

/// `store`, reporting every call to `observer` (see ObservedArtifactStore). Works the same for the in-memory,
/// SQLite and PostgreSQL stores and a host's own.
///
///     auto store = cairn::observed(cairn::open_store(url), my_observer);
inline std::shared_ptr<ArtifactStore> observed(std::shared_ptr<ArtifactStore> store,
                                               std::shared_ptr<Observer> observer) {
  return std::make_shared<ObservedArtifactStore>(std::move(store), std::move(observer));
}

CAIRN_END_NAMESPACE
