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
  auto stored = store.store(*ArtifactRecord::builder()
                                 .tenant_id("t")
                                 .id("x")
                                 .type("data")
                                 .title("x")
                                 .value(nlohmann::json{{"big", std::string(1000, 'x')}})
                                 .build());
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

namespace {
// An IdGenerator handing out what the test says, to see how the store takes ids a record refuses.
class FixedIds final : public IdGenerator {
 public:
  explicit FixedIds(std::string id) : id_(std::move(id)) {}
  std::string uuid() override { return id_; }
  std::string token(std::size_t, const std::string&) override { return id_; }

 private:
  std::string id_;
};
class ThrowingClock final : public Clock {
 public:
  std::int64_t now_ms() const override { throw std::runtime_error("clock down"); }
};
class NegativeClock final : public Clock {
 public:
  std::int64_t now_ms() const override { return -5; }
};
}  // namespace

TEST_CASE("a store that fails while stamping leaves nothing behind") {
  auto draft = ArtifactRecord::builder().tenant_id("t").type("data").title("x").value(1).build();
  auto check_empty = [](InMemoryArtifactStore& store) {
    CHECK(store.list("t").items.empty());
    CHECK(store.fetch("", "t") == nullptr);
    CHECK(store.versions("", "t").empty());
  };
  SECTION("a generated id the record refuses") {
    InMemoryArtifactStore store(InMemoryStoreOptions{1, nullptr, std::make_shared<FixedIds>("bad\nid")});
    CHECK_THROWS_AS(store.store(*draft), invalid_artifact);
    CHECK(store.fetch("bad\nid", "t") == nullptr);
    CHECK(store.list("t").items.empty());
    auto named = store.store(*draft->revise().id("good").build());
    CHECK(named->version() == 1);
    CHECK(store.list("t").items.size() == 1);
  }
  SECTION("an empty generated id") {
    InMemoryArtifactStore store(InMemoryStoreOptions{1, nullptr, std::make_shared<FixedIds>("")});
    CHECK_THROWS_WITH(store.store(*draft), "id: must not be empty");
    check_empty(store);
  }
  SECTION("a clock that throws, or reads before 1970") {
    InMemoryArtifactStore throwing(InMemoryStoreOptions{1, std::make_shared<ThrowingClock>(), nullptr});
    CHECK_THROWS_WITH(throwing.store(*draft->revise().id("a").build()), "clock down");
    CHECK(throwing.fetch("a", "t") == nullptr);
    CHECK(throwing.list("t").items.empty());
    InMemoryArtifactStore negative(InMemoryStoreOptions{1, std::make_shared<NegativeClock>(), nullptr});
    auto v1 = negative.store(*draft->revise().id("a").created_at(1).build());
    CHECK_THROWS_WITH(negative.store(*draft->revise().id("a").build()), "created_at: must not be negative (got -5)");
    CHECK(negative.fetch("a", "t") == v1);  // the failed second version changed nothing
    CHECK(negative.versions("a", "t") == std::vector<std::uint64_t>{1});
  }
}

TEST_CASE("the stored record shares the fields of the record it was given") {
  InMemoryArtifactStore store;
  auto draft =
      ArtifactRecord::builder().tenant_id("t").id("x").type("data").title("title").description("d").value(1).build();
  auto stored = store.store(draft);
  CHECK(stored->version() == 1);
  CHECK(stored->id() == "x");
  CHECK(&stored->title() == &draft->title());  // no copy of the record's strings
  auto second = store.store(draft);
  CHECK(second->version() == 2);
  CHECK(store.fetch("x", "t", 1) == stored);
}
