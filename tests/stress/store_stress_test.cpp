// Stress: many threads doing mixed store / fetch / list / remove across tenants, on every store that was built,
// checked against a model at the end: versions consecutive, nothing lost, nothing leaked across tenants.
//
// Each thread owns its own ids (so the expected final state is known exactly) but shares tenants with the others
// (so their operations interleave in the same tenant's data, shard and tables).
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cairn/artifact/memory_store.hpp"
#include "catch.hpp"
#if defined(CAIRN_HAS_SQLITE)
#include "cairn/store/sqlite_store.hpp"
#endif
#if defined(CAIRN_HAS_POSTGRES)
#include <cstdlib>

#include "cairn/store/postgres_store.hpp"
#endif

using namespace cairn;
using nlohmann::json;

namespace {

struct Expected {
  std::uint64_t versions = 0;  // 0: absent
  json last;
};

struct Key {
  std::string tenant;
  std::string id;
  friend bool operator<(const Key& a, const Key& b) { return a.tenant != b.tenant ? a.tenant < b.tenant : a.id < b.id; }
};

// Runs `threads` x `ops` random operations and returns the model of what must now be in the store. Any mismatch
// seen while running is counted in `violations` (checked by the caller, on the main thread).
std::map<Key, Expected> hammer(ArtifactStore& store, const std::vector<std::string>& tenants, int threads, int ops,
                               int ids_per_thread, std::vector<std::string>& violations) {
  std::vector<std::map<Key, Expected>> models(threads);
  std::vector<std::vector<std::string>> errors(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::mt19937 rng(1234u + static_cast<unsigned>(t));
      auto& model = models[t];
      auto& err = errors[t];
      auto fail = [&](const std::string& what) {
        if (err.size() < 20) err.push_back("thread " + std::to_string(t) + ": " + what);
      };
      for (int k = 0; k < ops; ++k) {
        const Key key{tenants[rng() % tenants.size()],
                      "t" + std::to_string(t) + "-" + std::to_string(rng() % ids_per_thread)};
        Expected& e = model[key];
        const unsigned op = rng() % 10;
        try {
          if (op < 5) {  // store
            const json value = {{"thread", t}, {"op", k}};
            auto r = store.store(*ArtifactRecord::builder()
                                      .tenant_id(key.tenant)
                                      .id(key.id)
                                      .type("data")
                                      .title(key.id)
                                      .value(value)
                                      .build());
            if (r->version() != e.versions + 1)
              fail("store " + key.id + " got version " + std::to_string(r->version()));
            e.versions = r->version();
            e.last = value;
          } else if (op < 7) {  // fetch
            auto r = store.fetch(key.id, key.tenant);
            if (e.versions == 0 ? r != nullptr : (!r || r->version() != e.versions || r->value() != e.last)) {
              fail("fetch " + key.id + " does not match the model");
            }
          } else if (op < 8) {  // list: only this tenant's records, own ids as in the model
            auto page = store.list(key.tenant, ListQuery{"t" + std::to_string(t) + "-", {}, {}, 1000, ""});
            for (const auto& r : page.items) {
              if (r->tenant_id() != key.tenant) fail("list of " + key.tenant + " returned " + r->tenant_id());
              const auto it = model.find(Key{key.tenant, r->id()});
              if (it == model.end() || it->second.versions != r->version()) fail("list shows " + r->id() + " wrongly");
            }
          } else {  // remove
            try {
              store.remove(key.id, key.tenant);
              if (e.versions == 0) fail("remove of absent " + key.id + " succeeded");
              e = Expected{};
            } catch (const not_found&) {
              if (e.versions != 0) fail("remove of present " + key.id + " said not_found");
            }
          }
        } catch (const std::exception& ex) {
          fail(std::string("unexpected exception: ") + ex.what());
        }
      }
    });
  }
  for (auto& th : pool) th.join();
  std::map<Key, Expected> all;
  for (int t = 0; t < threads; ++t) {
    for (auto& [k, v] : models[t]) all[k] = v;
    violations.insert(violations.end(), errors[t].begin(), errors[t].end());
  }
  return all;
}

void check_final_state(ArtifactStore& store, const std::vector<std::string>& tenants,
                       const std::map<Key, Expected>& model, const std::string& prefix) {
  std::size_t present = 0;
  for (const auto& [key, e] : model) {
    INFO(key.tenant << "/" << key.id);
    auto r = store.fetch(key.id, key.tenant);
    if (e.versions == 0) {
      CHECK(r == nullptr);
      CHECK(store.versions(key.id, key.tenant).empty());
      continue;
    }
    ++present;
    REQUIRE(r != nullptr);
    CHECK(r->version() == e.versions);
    CHECK(r->value() == e.last);
    const auto versions = store.versions(key.id, key.tenant);
    REQUIRE(versions.size() == e.versions);
    for (std::size_t i = 0; i < versions.size(); ++i) CHECK(versions[i] == i + 1);
    // Nothing leaks: the same id in a tenant that never stored it is absent.
    CHECK(store.fetch(key.id, "stranger-" + key.tenant) == nullptr);
  }
  // Listing every tenant page by page gives exactly the present ids, each in its own tenant.
  std::size_t listed = 0;
  for (const auto& tenant : tenants) {
    ListQuery q;
    q.prefix = prefix;
    q.limit = 37;
    for (;;) {
      auto page = store.list(tenant, q);
      for (const auto& r : page.items) {
        CHECK(r->tenant_id() == tenant);
        const auto it = model.find(Key{tenant, r->id().substr(prefix.size())});
        REQUIRE(it != model.end());
        CHECK(it->second.versions == r->version());
        ++listed;
      }
      if (!page.next_cursor) break;
      q.cursor = *page.next_cursor;
    }
  }
  CHECK(listed == present);
  CHECK(present > 0);
}

// Tenants unique to this run, so the durable stores can hold data from earlier runs.
std::vector<std::string> run_tenants() {
  const auto tag = detail::random_string(8, "abcdefghijklmnopqrstuvwxyz");
  return {"stress-" + tag + "-a", "stress-" + tag + "-b", "stress-" + tag + "-c"};
}

void stress(ArtifactStore& store, int threads, int ops, int ids_per_thread) {
  const auto tenants = run_tenants();
  std::vector<std::string> violations;
  const auto model = hammer(store, tenants, threads, ops, ids_per_thread, violations);
  for (const auto& v : violations) FAIL_CHECK(v);
  CHECK(violations.empty());
  check_final_state(store, tenants, model, "");
}

}  // namespace

TEST_CASE("stress: InMemoryArtifactStore under 8 threads of mixed operations matches the model") {
  InMemoryArtifactStore store(4);
  stress(store, 8, 3000, 40);
}

#if defined(CAIRN_HAS_SQLITE)
TEST_CASE("stress: SqliteArtifactStore under 8 threads of mixed operations matches the model") {
  const auto path =
      std::filesystem::temp_directory_path() / ("cairn-stress-" + detail::random_string(8, "abcdef0123456789") + ".db");
  {
    SqliteOptions options;
    options.synchronous = SqliteOptions::Synchronous::normal;  // the point is interleaving, not fsync
    SqliteArtifactStore store(path.string(), options);
    stress(store, 8, 250, 15);
  }
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path.string() + suffix);
}
#endif

#if defined(CAIRN_HAS_POSTGRES)
TEST_CASE("stress: PostgresArtifactStore under 8 threads of mixed operations matches the model") {
  const char* conninfo = std::getenv("CAIRN_TEST_PG_CONNINFO");
  REQUIRE(conninfo != nullptr);  // scripts/test starts the server; never skipped
  PostgresOptions options;
  options.pool_size = 8;
  PostgresArtifactStore store(conninfo, options);
  stress(store, 8, 250, 15);
}
#endif
