// InMemoryArtifactStore against its floor: a plain std::unordered_map of shared_ptr<const ArtifactRecord> behind
// one std::shared_mutex, on 100,000 artifacts over 100 tenants. scripts/bench prints the ratios.
#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <new>
#include <random>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <benchmark/benchmark.h>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/clock.hpp"
#include "cairn/observe.hpp"

// Counts live heap bytes, so the benchmarks can report memory per artifact.
namespace {
std::atomic<long long> g_live_bytes{0};
}
void* operator new(std::size_t n) {
  void* p = std::malloc(n + 16);
  if (!p) throw std::bad_alloc();
  *static_cast<std::size_t*>(p) = n;
  g_live_bytes.fetch_add(static_cast<long long>(n), std::memory_order_relaxed);
  return static_cast<char*>(p) + 16;
}
void operator delete(void* p) noexcept {
  if (!p) return;
  char* base = static_cast<char*>(p) - 16;
  g_live_bytes.fetch_sub(static_cast<long long>(*reinterpret_cast<std::size_t*>(base)), std::memory_order_relaxed);
  std::free(base);
}
void operator delete(void* p, std::size_t) noexcept { operator delete(p); }

namespace {

using cairn::ArtifactPtr;
using cairn::ArtifactRecord;

constexpr int kArtifacts = 100000;
constexpr int kTenants = 100;

// The floor: what a host would write by hand.
class FloorStore {
 public:
  void store(const ArtifactRecord& r) {
    auto p = std::make_shared<const ArtifactRecord>(r);
    std::unique_lock lock(mutex_);
    map_[r.id()] = std::move(p);
  }
  ArtifactPtr fetch(const std::string& id) const {
    std::shared_lock lock(mutex_);
    auto it = map_.find(id);
    return it == map_.end() ? nullptr : it->second;
  }

 private:
  mutable std::shared_mutex mutex_;
  std::unordered_map<std::string, ArtifactPtr> map_;
};

struct Dataset {
  std::vector<ArtifactPtr> records;
  std::vector<std::string> ids;
  std::vector<std::string> tenants;
};

const Dataset& dataset() {
  static const Dataset d = [] {
    Dataset d;
    for (int t = 0; t < kTenants; ++t) d.tenants.push_back("tenant-" + std::to_string(t));
    for (int i = 0; i < kArtifacts; ++i) {
      auto id = cairn::detail::uuid_v4();
      d.records.push_back(ArtifactRecord::builder()
                              .id(id)
                              .tenant_id(d.tenants[i % kTenants])
                              .type(cairn::ArtifactType::document)
                              .title("artifact " + std::to_string(i))
                              .description("a benchmark artifact")
                              .value({{"n", i}, {"text", "some short content"}})
                              .created_at(1700000000000)
                              .build());
      d.ids.push_back(std::move(id));
    }
    return d;
  }();
  return d;
}

void BM_Store_Floor(benchmark::State& state) {
  const auto& d = dataset();
  for (auto _ : state) {
    FloorStore s;
    for (const auto& r : d.records) (void)s.store(*r);
    benchmark::DoNotOptimize(&s);
  }
  state.SetItemsProcessed(state.iterations() * kArtifacts);
}

void BM_Store_Cairn(benchmark::State& state) {
  const auto& d = dataset();
  for (auto _ : state) {
    cairn::InMemoryArtifactStore s;
    for (const auto& r : d.records) (void)s.store(*r);
    benchmark::DoNotOptimize(&s);
  }
  state.SetItemsProcessed(state.iterations() * kArtifacts);
}

void BM_Fetch_Floor(benchmark::State& state) {
  const auto& d = dataset();
  FloorStore s;
  for (const auto& r : d.records) (void)s.store(*r);
  std::mt19937 rng(42);
  std::uniform_int_distribution<int> pick(0, kArtifacts - 1);
  for (auto _ : state) {
    const int i = pick(rng);
    benchmark::DoNotOptimize(s.fetch(d.ids[i]));
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_Fetch_Cairn(benchmark::State& state) {
  const auto& d = dataset();
  cairn::InMemoryArtifactStore s;
  for (const auto& r : d.records) (void)s.store(*r);
  std::mt19937 rng(42);
  std::uniform_int_distribution<int> pick(0, kArtifacts - 1);
  for (auto _ : state) {
    const int i = pick(rng);
    benchmark::DoNotOptimize(s.fetch(d.ids[i], d.tenants[i % kTenants]));
  }
  state.SetItemsProcessed(state.iterations());
}

// The cost of an injected clock and id generator (cairn/clock.hpp): the same stores with nothing injected (the
// Floor here) and with the real sources passed in explicitly, on records that leave created_at (StoreClock) or the
// id and created_at (StoreIds) to the store, so every store() asks the source.
const std::vector<ArtifactPtr>& unstamped(bool with_ids) {
  static const auto make = [](bool ids) {
    std::vector<ArtifactPtr> out;
    const auto& d = dataset();
    for (int i = 0; i < kArtifacts; ++i) {
      auto b = ArtifactRecord::builder();
      b.tenant_id(d.tenants[i % kTenants])
          .type(cairn::ArtifactType::document)
          .title("artifact " + std::to_string(i))
          .description("a benchmark artifact")
          .value({{"n", i}, {"text", "some short content"}});
      if (ids) b.id(d.ids[i]);
      out.push_back(b.build());
    }
    return out;
  };
  static const std::vector<ArtifactPtr> with = make(true), without = make(false);
  return with_ids ? with : without;
}

void store_all(benchmark::State& state, const std::vector<ArtifactPtr>& records, cairn::InMemoryStoreOptions options) {
  for (auto _ : state) {
    cairn::InMemoryArtifactStore s(options);
    for (const auto& r : records) (void)s.store(*r);
    benchmark::DoNotOptimize(&s);
  }
  state.SetItemsProcessed(state.iterations() * kArtifacts);
}

void BM_StoreClock_Floor(benchmark::State& state) { store_all(state, unstamped(true), {}); }

void BM_StoreClock_SystemClock(benchmark::State& state) {
  cairn::InMemoryStoreOptions o;
  o.clock = std::make_shared<cairn::SystemClock>();
  store_all(state, unstamped(true), o);
}

void BM_StoreIds_Floor(benchmark::State& state) { store_all(state, unstamped(false), {}); }

void BM_StoreIds_RandomIds(benchmark::State& state) {
  cairn::InMemoryStoreOptions o;
  o.clock = std::make_shared<cairn::SystemClock>();
  o.ids = std::make_shared<cairn::RandomIds>();
  store_all(state, unstamped(false), o);
}

// The indirection alone: reading the time with nothing injected against through an injected SystemClock.
void BM_ReadClock_Floor(benchmark::State& state) {
  const cairn::Clock* none = nullptr;
  benchmark::DoNotOptimize(none);
  for (auto _ : state) benchmark::DoNotOptimize(cairn::detail::now_ms(none));
}

void BM_ReadClock_SystemClock(benchmark::State& state) {
  const auto clock = std::make_shared<cairn::SystemClock>();
  const cairn::Clock* injected = clock.get();
  benchmark::DoNotOptimize(injected);
  for (auto _ : state) benchmark::DoNotOptimize(cairn::detail::now_ms(injected));
}

// list(tenant) for one tenant holding 1,000 artifacts while the other tenants hold state.range(0) artifacts in all.
void BM_List_Tenant(benchmark::State& state) {
  const auto others = static_cast<int>(state.range(0));
  cairn::InMemoryArtifactStore s;
  for (int i = 0; i < 1000; ++i) {
    (void)s.store(*ArtifactRecord::builder()
                       .tenant_id("target")
                       .id("doc-" + std::to_string(100000 + i))
                       .type("document")
                       .title("t")
                       .value(i)
                       .build());
  }
  for (int i = 0; i < others; ++i) {
    (void)s.store(*ArtifactRecord::builder()
                       .tenant_id("other-" + std::to_string(i % 1000))
                       .id(std::to_string(i))
                       .type("document")
                       .title("t")
                       .value(i)
                       .build());
  }
  cairn::ListQuery q;
  q.limit = 100;
  for (auto _ : state) benchmark::DoNotOptimize(s.list("target", q));
  state.SetItemsProcessed(state.iterations() * 100);
  state.counters["other_artifacts"] = others;
}

void BM_Versions_Cairn(benchmark::State& state) {
  cairn::InMemoryArtifactStore s;
  for (int v = 0; v < 10; ++v) {
    (void)s.store(*ArtifactRecord::builder().tenant_id("t").id("doc").type("document").title("t").value(v).build());
  }
  for (auto _ : state) benchmark::DoNotOptimize(s.versions("doc", "t"));
  state.SetItemsProcessed(state.iterations());
}

// Live heap bytes per artifact after storing all 100,000 (records themselves are shared with the dataset, so this
// is the container's own overhead per artifact; the record size is reported alongside).
void BM_Memory_Floor(benchmark::State& state) {
  const auto& d = dataset();
  for (auto _ : state) {
    const long long before = g_live_bytes.load();
    auto s = std::make_unique<FloorStore>();
    for (const auto& r : d.records) (void)s->store(*r);
    state.counters["bytes_per_artifact"] = static_cast<double>(g_live_bytes.load() - before) / kArtifacts;
  }
}

void BM_Memory_Cairn(benchmark::State& state) {
  const auto& d = dataset();
  for (auto _ : state) {
    const long long before = g_live_bytes.load();
    auto s = std::make_unique<cairn::InMemoryArtifactStore>();
    for (const auto& r : d.records) (void)s->store(*r);
    state.counters["bytes_per_artifact"] = static_cast<double>(g_live_bytes.load() - before) / kArtifacts;
  }
}

}  // namespace

namespace {

// Observability hooks (docs/observe.md): the same fetch and store through the ArtifactStore interface, plain (the
// floor), through cairn::observed with no observer (the cost of an unset hook: one null test) and with an observer
// that only counts (the cost of timing and measuring each call).
struct CountingObserver final : cairn::Observer {
  std::atomic<std::uint64_t> events{0};
  void on_event(const cairn::Event&) noexcept override { events.fetch_add(1, std::memory_order_relaxed); }
};

std::shared_ptr<cairn::ArtifactStore> filled_store(int which) {
  std::shared_ptr<cairn::ArtifactStore> s = std::make_shared<cairn::InMemoryArtifactStore>();
  if (which == 1) s = cairn::observed(s, nullptr);
  if (which == 2) s = cairn::observed(s, std::make_shared<CountingObserver>());
  for (const auto& r : dataset().records) (void)s->store(*r);
  return s;
}

void observed_fetch(benchmark::State& state, int which) {
  const auto& d = dataset();
  const auto s = filled_store(which);
  std::mt19937 rng(42);
  std::uniform_int_distribution<int> pick(0, kArtifacts - 1);
  for (auto _ : state) {
    const int i = pick(rng);
    benchmark::DoNotOptimize(s->fetch(d.ids[i], d.tenants[i % kTenants]));
  }
  state.SetItemsProcessed(state.iterations());
}
void BM_ObservedFetch_Floor(benchmark::State& state) { observed_fetch(state, 0); }
void BM_ObservedFetch_NoObserver(benchmark::State& state) { observed_fetch(state, 1); }
void BM_ObservedFetch_Counting(benchmark::State& state) { observed_fetch(state, 2); }

void observed_store(benchmark::State& state, int which) {
  const auto& d = dataset();
  for (auto _ : state) {
    state.PauseTiming();
    std::shared_ptr<cairn::ArtifactStore> s = std::make_shared<cairn::InMemoryArtifactStore>();
    if (which == 1) s = cairn::observed(s, nullptr);
    if (which == 2) s = cairn::observed(s, std::make_shared<CountingObserver>());
    state.ResumeTiming();
    for (int i = 0; i < 10000; ++i) (void)s->store(*d.records[static_cast<std::size_t>(i)]);
    benchmark::DoNotOptimize(s.get());
  }
  state.SetItemsProcessed(state.iterations() * 10000);
}
void BM_ObservedStore_Floor(benchmark::State& state) { observed_store(state, 0); }
void BM_ObservedStore_NoObserver(benchmark::State& state) { observed_store(state, 1); }
void BM_ObservedStore_Counting(benchmark::State& state) { observed_store(state, 2); }

}  // namespace

BENCHMARK(BM_ObservedFetch_Floor);
BENCHMARK(BM_ObservedFetch_NoObserver);
BENCHMARK(BM_ObservedFetch_Counting);
BENCHMARK(BM_ObservedStore_Floor)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ObservedStore_NoObserver)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ObservedStore_Counting)->Unit(benchmark::kMillisecond);

BENCHMARK(BM_Store_Floor)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Store_Cairn)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_StoreClock_Floor)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_StoreClock_SystemClock)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_StoreIds_Floor)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_StoreIds_RandomIds)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReadClock_Floor);
BENCHMARK(BM_ReadClock_SystemClock);
BENCHMARK(BM_Fetch_Floor);
BENCHMARK(BM_Fetch_Cairn);
BENCHMARK(BM_List_Tenant)->Arg(100000)->Arg(1000000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Versions_Cairn);
BENCHMARK(BM_Memory_Floor)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Memory_Cairn)->Iterations(1)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
