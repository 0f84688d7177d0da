// The conformance suite must catch a misbehaving store, or it proves nothing.
#include "cairn/testing/store_conformance.hpp"

#include "cairn/artifact/memory_store.hpp"
#include "catch.hpp"

using namespace cairn;

namespace {
// A store that leaks across tenants: fetch ignores the tenant.
class LeakyStore final : public ArtifactStore {
 public:
  using ArtifactStore::store;
  ArtifactPtr store(const ArtifactRecord& r) override { return inner_.store(r); }
  ArtifactPtr store_if(const ArtifactRecord& r, std::uint64_t v) override { return inner_.store_if(r, v); }
  ArtifactPtr fetch(const std::string& id, const std::string& tenant, std::uint64_t v = latest) const override {
    if (auto r = inner_.fetch(id, tenant, v)) return r;
    for (const auto& t : tenants_) {
      if (auto r = inner_.fetch(id, t, v)) return r;
    }
    return nullptr;
  }
  void remove(const std::string& id, const std::string& tenant) override { inner_.remove(id, tenant); }
  std::vector<std::uint64_t> versions(const std::string& id, const std::string& tenant) const override {
    return inner_.versions(id, tenant);
  }
  ListPage list(const std::string& tenant, const ListQuery& q) const override { return inner_.list(tenant, q); }
  void watch(std::string tenant) { tenants_.push_back(std::move(tenant)); }

 private:
  InMemoryArtifactStore inner_;
  std::vector<std::string> tenants_;
};

// A store that overwrites instead of versioning, as seed 004's V1 did.
class OverwritingStore final : public ArtifactStore {
 public:
  using ArtifactStore::store;
  ArtifactPtr store(const ArtifactRecord& r) override {
    if (!r.id().empty() && inner_.fetch(r.id(), r.tenant_id())) inner_.remove(r.id(), r.tenant_id());
    return inner_.store(r);
  }
  ArtifactPtr store_if(const ArtifactRecord& r, std::uint64_t v) override { return inner_.store_if(r, v); }
  ArtifactPtr fetch(const std::string& id, const std::string& t, std::uint64_t v = latest) const override {
    return inner_.fetch(id, t, v);
  }
  void remove(const std::string& id, const std::string& t) override { inner_.remove(id, t); }
  std::vector<std::uint64_t> versions(const std::string& id, const std::string& t) const override {
    return inner_.versions(id, t);
  }
  ListPage list(const std::string& t, const ListQuery& q) const override { return inner_.list(t, q); }

 private:
  InMemoryArtifactStore inner_;
};

// A store whose conditional write checks, then writes, in two steps (as a store built on a plain key-value API
// would): two writers can both pass the check.
class CheckThenWriteStore final : public ArtifactStore {
 public:
  using ArtifactStore::store;
  ArtifactPtr store(const ArtifactRecord& r) override { return inner_.store(r); }
  ArtifactPtr store_if(const ArtifactRecord& r, std::uint64_t expected) override {
    const auto latest = inner_.fetch(r.id(), r.tenant_id());
    const std::uint64_t actual = latest ? latest->version() : 0;
    if (actual != expected) throw conflict("moved on", expected, actual);
    std::this_thread::yield();
    return inner_.store(r);
  }
  ArtifactPtr fetch(const std::string& id, const std::string& t, std::uint64_t v = latest) const override {
    return inner_.fetch(id, t, v);
  }
  void remove(const std::string& id, const std::string& t) override { inner_.remove(id, t); }
  std::vector<std::uint64_t> versions(const std::string& id, const std::string& t) const override {
    return inner_.versions(id, t);
  }
  ListPage list(const std::string& t, const ListQuery& q) const override { return inner_.list(t, q); }

 private:
  InMemoryArtifactStore inner_;
};

std::string failure_of(const std::string& name, ArtifactStore& store) {
  for (const auto& check : testing::store_conformance_checks()) {
    if (check.name != name) continue;
    try {
      check.run(store);
    } catch (const testing::conformance_failure& e) {
      return e.what();
    }
    return "";
  }
  FAIL("no check named " << name);
  return "";
}
}  // namespace

TEST_CASE("the suite has its checks, each with a unique name") {
  auto checks = testing::store_conformance_checks();
  CHECK(checks.size() >= 12);
  std::set<std::string> names;
  for (const auto& c : checks) names.insert(c.name);
  CHECK(names.size() == checks.size());
}

TEST_CASE("the suite catches a store that overwrites instead of adding versions") {
  OverwritingStore store;
  const auto msg = failure_of("storing an existing id adds consecutive versions; fetch returns the latest", store);
  CHECK_THAT(msg, cairn_test::ContainsSubstring("expected v2->version() == 2"));
}

TEST_CASE("the suite catches a store that leaks across tenants") {
  // The leaky store consults every tenant it has seen; make it see the victim tenant by storing through it.
  struct Recording final : ArtifactStore {
    LeakyStore leaky;
    using ArtifactStore::store;
    ArtifactPtr store(const ArtifactRecord& r) override {
      leaky.watch(r.tenant_id());
      return leaky.store(r);
    }
    ArtifactPtr store_if(const ArtifactRecord& r, std::uint64_t v) override {
      leaky.watch(r.tenant_id());
      return leaky.store_if(r, v);
    }
    ArtifactPtr fetch(const std::string& id, const std::string& t, std::uint64_t v = latest) const override {
      return leaky.fetch(id, t, v);
    }
    void remove(const std::string& id, const std::string& t) override { leaky.remove(id, t); }
    std::vector<std::uint64_t> versions(const std::string& id, const std::string& t) const override {
      return leaky.versions(id, t);
    }
    ListPage list(const std::string& t, const ListQuery& q) const override { return leaky.list(t, q); }
  } store;
  const auto msg = failure_of("another tenant's artifact is indistinguishable from a missing one", store);
  CHECK_THAT(msg, cairn_test::ContainsSubstring("expected s.fetch(\"secret\", a) == nullptr"));
}

TEST_CASE("the suite catches a conditional write that checks and writes in two steps") {
  // The race needs two writers between the check and the write; a few rounds make it all but certain.
  std::string msg;
  for (int round = 0; round < 20 && msg.empty(); ++round) {
    CheckThenWriteStore store;
    msg = failure_of("store_if races: exactly one writer wins each expectation", store);
  }
  CHECK_THAT(msg, cairn_test::ContainsSubstring("expected"));
}

TEST_CASE("the in-memory store passes the conditional-write checks") {
  InMemoryArtifactStore store;
  CHECK(failure_of("store_if creates only what is absent and replaces only the version it names", store).empty());
  CHECK(failure_of("store_if races: exactly one writer wins each expectation", store).empty());
}
