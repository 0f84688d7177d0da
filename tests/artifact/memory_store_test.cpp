#include "cairn/artifact/memory_store.hpp"

#include <thread>

#include "cairn/testing/store_conformance.hpp"
#include "catch.hpp"

using namespace cairn;

TEST_CASE("InMemoryArtifactStore passes the conformance suite") {
  for (const auto& check : testing::store_conformance_checks()) {
    INFO(check.name);
    InMemoryArtifactStore store;
    CHECK_NOTHROW(check.run(store));
  }
}

TEST_CASE("InMemoryArtifactStore with a single shard passes the conformance suite too") {
  for (const auto& check : testing::store_conformance_checks()) {
    INFO(check.name);
    InMemoryArtifactStore store(0);  // clamped to one shard: every tenant shares a lock
    CHECK_NOTHROW(check.run(store));
  }
}

TEST_CASE("reads are zero-copy: fetch hands out the stored pointer") {
  InMemoryArtifactStore store;
  auto stored = store.store(*ArtifactRecord::builder().tenant_id("t").id("x").type("data").title("x")
                                 .value(nlohmann::json{{"big", std::string(1000, 'x')}}).build());
  CHECK(store.fetch("x", "t").get() == stored.get());
  CHECK(store.fetch("x", "t", 1).get() == stored.get());
  CHECK(store.list("t").items.at(0).get() == stored.get());
}

TEST_CASE("mixed operations across tenants from many threads keep every tenant's data intact") {
  InMemoryArtifactStore store(4);
  constexpr int threads = 8;
  constexpr int ops = 300;
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) {
    pool.emplace_back([&store, i] {
      const std::string tenant = "tenant-" + std::to_string(i % 3);
      for (int k = 0; k < ops; ++k) {
        const std::string id = "t" + std::to_string(i) + "-" + std::to_string(k % 10);
        (void)store.store(*ArtifactRecord::builder().tenant_id(tenant).id(id).type("data").title(id).value(k).build());
        (void)store.fetch(id, tenant);
        (void)store.list(tenant);
        if (k % 7 == 0) store.remove(id, tenant);
      }
    });
  }
  for (auto& t : pool) t.join();
  // Each thread wrote ids only it uses, so the final state is known: id k%10's last write, unless removed after.
  for (int i = 0; i < threads; ++i) {
    const std::string tenant = "tenant-" + std::to_string(i % 3);
    for (int slot = 0; slot < 10; ++slot) {
      int last_write = -1;
      bool removed = false;
      for (int k = 0; k < ops; ++k) {
        if (k % 10 != slot) continue;
        last_write = k;
        removed = k % 7 == 0;
      }
      const std::string id = "t" + std::to_string(i) + "-" + std::to_string(slot);
      auto r = store.fetch(id, tenant);
      if (removed) {
        CHECK(r == nullptr);
      } else {
        REQUIRE(r != nullptr);
        CHECK(r->value() == last_write);
      }
    }
  }
}
