// quickstart — store an artifact, fetch it, store a second version, list, remove.
//
// Build and run: scripts/demo (or cmake --build build --target quickstart && build/examples/quickstart)
// Usage: quickstart [store-url]   (memory: by default; sqlite:<path>, postgres:<conninfo>)
#include <iostream>

#include <cairn/cairn.hpp>
#include <cairn/store/open_store.hpp>

int main(int argc, char** argv) {
  using cairn::ArtifactRecord;
  using cairn::ArtifactType;

  // The in-memory store: thread-safe, tenant-scoped, versioned. Durable backends implement the same interface.
  // memory: by default; sqlite:<path> or postgres:<conninfo> when built with those backends.
  const std::shared_ptr<cairn::ArtifactStore> store = cairn::open_store(argc > 1 ? argv[1] : "memory:");

  // 1. A research agent stores its findings. The store assigns the version (and an id when none is given).
  auto draft = ArtifactRecord::builder()
                   .tenant_id("acme")
                   .id("weekly-report")
                   .type(ArtifactType::document)
                   .title("Weekly report")
                   .description("What the research agent found this week")
                   .mime_type("text/markdown")
                   .value("# Week 47\n- latency down 12%\n")
                   .created_by("researcher")
                   .build();
  auto v1 = store->store(*draft);
  std::cout << "stored '" << v1->id() << "' version " << v1->version() << " (created_at " << v1->created_at()
            << " ms since the epoch)\n";

  // 2. Any agent of the same tenant fetches it by id; another tenant sees nothing.
  auto fetched = store->fetch("weekly-report", "acme");
  std::cout << "fetched: " << fetched->value().get<std::string>();
  std::cout << "tenant 'globex' sees it: " << (store->fetch("weekly-report", "globex") ? "yes" : "no") << "\n";

  // 3. A reviewer revises it: a new record, a new version. The first version is still there.
  auto v2 = store->store(*v1->revise().value("# Week 47\n- latency down 12% (p99)\n").created_by("reviewer").build());
  std::cout << "stored version " << v2->version() << "; versions now:";
  for (auto v : store->versions("weekly-report", "acme")) std::cout << ' ' << v;
  std::cout << "\nversion 1 still reads: " << store->fetch("weekly-report", "acme", 1)->value().dump() << "\n";

  // 4. Another artifact without an id: the store makes a UUID.
  auto data = store->store(*ArtifactRecord::builder()
                                .tenant_id("acme")
                                .type(ArtifactType::dataset)
                                .title("Latency samples")
                                .value({{"p50_ms", 41}, {"p99_ms", 180}})
                                .build());
  std::cout << "stored dataset with generated id " << data->id() << "\n";

  // 5. List the tenant's artifacts (latest versions, in id order), then the datasets only.
  for (const auto& r : store->list("acme").items) {
    std::cout << "  - " << r->id() << " (" << r->type() << ", v" << r->version() << "): " << r->title() << "\n";
  }
  cairn::ListQuery datasets;
  datasets.type = ArtifactType::dataset;
  std::cout << "datasets: " << store->list("acme", datasets).items.size() << "\n";

  // 6. The record as an A2A v1.0 Artifact, for agents that speak A2A (cairn::A2AVersion::v0_3 for older peers).
  std::cout << "as A2A: " << cairn::to_a2a(*v2).dump() << "\n";

  // 7. Remove it: every version goes.
  store->remove("weekly-report", "acme");
  std::cout << "removed 'weekly-report'; fetch now gives "
            << (store->fetch("weekly-report", "acme") ? "a record" : "null") << "\n";
  return 0;
}
