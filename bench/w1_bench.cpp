// W1 (issue 15): InMemoryArtifactStore against a bare-map floor doing the same work, phase by phase, in one run.
//
// N artifacts over 100 tenants (N = 10,000 and 100,000; add 1,000,000 with --w1_1m). Phases:
//   Save    build each record (builder ... build()) and store it
//   Load    fetch each artifact by (id, tenant) and read its value
//   List    list every tenant completely, in pages of 100 with cursors
//   Resave  build a new version of every 10th artifact and store it (version 2)
//   Delete  remove every 10th artifact (another tenth than Resave)
// Each phase runs in two sharing modes: Shared (every record holds the same immutable 1 KB JSON document through
// one shared_ptr, as the JS peers keep one reference) and Copied (every record gets its own copy of the document).
//
// The floor is what a host would write by hand with the same behaviour: a plain record struct with the same fields
// behind shared_ptr<const>, an unordered_map keyed by tenant + '\0' + id, a per-tenant sorted index for listing,
// older versions kept, created_at read from the system clock, one std::shared_mutex. It builds the same strings and
// shares (or copies) the value exactly as cairn does, and validates nothing.
//
// Times are this thread's CPU time per artifact touched (manual timing of the phase alone; the phases before it run
// untimed), so the /N variants of one benchmark compare per-operation cost and ratios.py's "flat" line is meaningful.
// Each iteration begins with malloc_trim(0): a phase that grows the heap pays the page faults of the memory it
// touches first (kernel time is CPU time here), so without it a row's cost depended on how much freed memory the row
// before it left in the arena (re-save at 10,000 measured 1.3x to 3.2x the floor at the same code).
// BM_W1Bytes*: heap bytes each stored artifact keeps (mallinfo2 deltas, malloc's own headers included), with the
// compact JSON text of the value alongside. BM_W1BytesCopied_CairnPackedSearched: the packed store after one word
// search of every tenant, so with every tenant's word index built (what a searched store keeps).
#include <malloc.h>

#include <cstdint>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "cairn/artifact/memory_store.hpp"

namespace {

using cairn::ArtifactPtr;
using cairn::ArtifactRecord;
using json = nlohmann::json;

constexpr int kTenants = 100;
constexpr std::size_t kPage = 100;

// The 1 KB structured document of the issue: 16 rows of id / name / score / tags.
json make_document(int seed) {
  json rows = json::array();
  for (int r = 0; r < 16; ++r) {
    rows.push_back({{"id", seed * 16 + r},
                    {"name", fmt::format("row-{}-{}", seed, r)},
                    {"score", 0.5 + r},
                    {"tags", {"alpha", "beta"}}});
  }
  return json{{"rows", std::move(rows)}};
}

struct Dataset {
  int n = 0;
  std::vector<std::string> tenants;  // per artifact: tenants[i % kTenants]
  std::vector<std::string> ids;
  std::vector<std::string> titles;
  std::shared_ptr<const json> document;
};

const Dataset& dataset(int n) {
  static std::map<int, Dataset> cache;
  auto [it, inserted] = cache.try_emplace(n);
  Dataset& d = it->second;
  if (inserted) {
    d.n = n;
    for (int t = 0; t < kTenants; ++t) d.tenants.push_back(fmt::format("tenant-{:03}", t));
    d.ids.reserve(static_cast<std::size_t>(n));
    d.titles.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
      d.ids.push_back(fmt::format("artifact-{:08}", i));
      d.titles.push_back(fmt::format("artifact {}", i));
    }
    d.document = std::make_shared<const json>(make_document(7));
  }
  return d;
}

const std::string& tenant_of(const Dataset& d, int i) { return d.tenants[static_cast<std::size_t>(i % kTenants)]; }

// ---- the floor ----

struct FloorRecord {
  std::string id;
  std::string tenant_id;
  std::uint64_t version = 0;
  std::string type;
  std::string title;
  std::string description;
  std::shared_ptr<const json> value;
  std::int64_t created_at = 0;
};
using FloorPtr = std::shared_ptr<const FloorRecord>;

class FloorStore {
 public:
  FloorPtr store(FloorRecord&& r) {
    std::string key = r.tenant_id;
    key.push_back('\0');
    key.append(r.id);
    std::unique_lock lock(mutex_);
    auto [it, inserted] = entries_.try_emplace(std::move(key));
    Entry& e = it->second;
    if (inserted) tenants_[r.tenant_id].emplace(std::string_view(it->first).substr(r.tenant_id.size() + 1), &e);
    r.version = e.latest ? e.latest->version + 1 : 1;
    if (r.created_at == 0) r.created_at = cairn::detail::now_ms();
    auto p = std::make_shared<const FloorRecord>(std::move(r));
    if (e.latest) e.older.push_back(std::move(e.latest));
    e.latest = p;
    return p;
  }
  FloorPtr fetch(const std::string& id, const std::string& tenant_id) const {
    thread_local std::string key;
    key.assign(tenant_id).push_back('\0');
    key.append(id);
    std::shared_lock lock(mutex_);
    const auto it = entries_.find(key);
    return it == entries_.end() ? nullptr : it->second.latest;
  }
  void remove(const std::string& id, const std::string& tenant_id) {
    thread_local std::string key;
    key.assign(tenant_id).push_back('\0');
    key.append(id);
    std::unique_lock lock(mutex_);
    const auto it = entries_.find(key);
    if (it == entries_.end()) throw std::runtime_error("missing");
    const auto t = tenants_.find(tenant_id);
    t->second.erase(std::string_view(id));
    if (t->second.empty()) tenants_.erase(t);
    entries_.erase(it);
  }
  struct Page {
    std::vector<FloorPtr> items;
    std::optional<std::string> next_cursor;
  };
  Page list(const std::string& tenant_id, const std::string& cursor, std::size_t limit) const {
    std::shared_lock lock(mutex_);
    Page page;
    const auto t = tenants_.find(tenant_id);
    if (t == tenants_.end()) return page;
    auto it = cursor.empty() ? t->second.begin() : t->second.upper_bound(cursor);
    for (; it != t->second.end(); ++it) {
      if (page.items.size() == limit) {
        page.next_cursor = page.items.back()->id;
        break;
      }
      page.items.push_back(it->second->latest);
    }
    return page;
  }

 private:
  struct Entry {
    FloorPtr latest;
    std::vector<FloorPtr> older;
  };
  mutable std::shared_mutex mutex_;
  std::unordered_map<std::string, Entry> entries_;
  std::unordered_map<std::string, std::map<std::string_view, const Entry*, std::less<>>> tenants_;
};

// ---- the two subjects, behind one interface the phases use ----

struct Cairn {
  static constexpr bool kSearched = false;  // BM_W1Bytes searches every tenant once after the saves
  cairn::InMemoryArtifactStore store;

  Cairn() = default;
  explicit Cairn(cairn::InMemoryStoreOptions options) : store(std::move(options)) {}

  void save(const Dataset& d, int i, bool shared, const char* description) {
    auto b = ArtifactRecord::builder();
    b.id(d.ids[static_cast<std::size_t>(i)])
        .tenant_id(tenant_of(d, i))
        .type(cairn::ArtifactType::document)
        .title(d.titles[static_cast<std::size_t>(i)])
        .description(description);
    if (shared) {
      b.shared_value(d.document);
    } else {
      b.value(*d.document);
    }
    benchmark::DoNotOptimize(store.store(std::move(b).build()));
  }
  std::size_t load(const Dataset& d, int i) const {
    const auto r = store.fetch(d.ids[static_cast<std::size_t>(i)], tenant_of(d, i));
    return r->value().size();
  }
  std::size_t list(const std::string& tenant) const {
    cairn::ListQuery q;
    q.limit = kPage;
    std::size_t n = 0;
    for (;;) {
      auto page = store.list(tenant, q);
      n += page.items.size();
      if (!page.next_cursor) return n;
      q.cursor = std::move(*page.next_cursor);
    }
  }
  void remove(const Dataset& d, int i) { store.remove(d.ids[static_cast<std::size_t>(i)], tenant_of(d, i)); }
  std::int64_t versions_of(const Dataset& d, int i) const {
    return static_cast<std::int64_t>(store.fetch(d.ids[static_cast<std::size_t>(i)], tenant_of(d, i))->version());
  }
};

// The same store keeping every record packed (InMemoryStoreOptions::max_parsed_bytes = 0): each fetch and listing
// decodes. What a bounded store costs for the records outside its parsed budget.
struct CairnPacked : Cairn {
  CairnPacked() : Cairn(options()) {}
  static cairn::InMemoryStoreOptions options() {
    cairn::InMemoryStoreOptions o;
    o.max_parsed_bytes = 0;
    return o;
  }
};

// The packed store, searched by words once in every tenant after the saves (BM_W1Bytes only).
struct CairnPackedSearched : CairnPacked {
  static constexpr bool kSearched = true;
  void search_every_tenant(const Dataset& d) const {
    cairn::SearchQuery q;
    q.text = "alpha";
    q.limit = 1;
    for (const auto& t : d.tenants) benchmark::DoNotOptimize(store.search(t, q));
  }
};

// A bounded store whose budget holds everything: the bookkeeping of the bound without any packing.
struct CairnBounded : Cairn {
  CairnBounded() : Cairn(options()) {}
  static cairn::InMemoryStoreOptions options() {
    cairn::InMemoryStoreOptions o;
    o.max_parsed_bytes = std::size_t{1} << 50;
    return o;
  }
};

struct Floor {
  static constexpr bool kSearched = false;
  FloorStore store;

  void save(const Dataset& d, int i, bool shared, const char* description) {
    FloorRecord r;
    r.id = d.ids[static_cast<std::size_t>(i)];
    r.tenant_id = tenant_of(d, i);
    r.type = cairn::ArtifactType::document.str();
    r.title = d.titles[static_cast<std::size_t>(i)];
    r.description = description;
    r.value = shared ? d.document : std::make_shared<const json>(*d.document);
    benchmark::DoNotOptimize(store.store(std::move(r)));
  }
  std::size_t load(const Dataset& d, int i) const {
    const auto r = store.fetch(d.ids[static_cast<std::size_t>(i)], tenant_of(d, i));
    return r->value->size();
  }
  std::size_t list(const std::string& tenant) const {
    std::string cursor;
    std::size_t n = 0;
    for (;;) {
      auto page = store.list(tenant, cursor, kPage);
      n += page.items.size();
      if (!page.next_cursor) return n;
      cursor = std::move(*page.next_cursor);
    }
  }
  void remove(const Dataset& d, int i) { store.remove(d.ids[static_cast<std::size_t>(i)], tenant_of(d, i)); }
  std::int64_t versions_of(const Dataset& d, int i) const {
    return static_cast<std::int64_t>(store.fetch(d.ids[static_cast<std::size_t>(i)], tenant_of(d, i))->version);
  }
};

enum class Phase { save, load, list, resave, remove };

// The phase's CPU time on this thread: the machine running the benchmarks is shared, and wall time there measures
// the neighbours as much as the store.
struct ThreadCpuClock {
  static double now() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  }
};

// Runs the phases up to `target`, timing only `target`; returns the seconds per artifact it touched.
template <typename Subject>
double run_w1(const Dataset& d, Phase target, bool shared, std::int64_t& check) {
  auto s = std::make_unique<Subject>();
  const int n = d.n;
  double seconds = 0;
  std::size_t touched = 0;
  auto timed = [&](Phase phase, auto&& body) {
    if (phase > target) return;
    const double t0 = ThreadCpuClock::now();
    const std::size_t count = body();
    const double t1 = ThreadCpuClock::now();
    if (phase == target) {
      seconds = t1 - t0;
      touched = count;
    }
  };
  timed(Phase::save, [&] {
    for (int i = 0; i < n; ++i) s->save(d, i, shared, "a benchmark artifact");
    return static_cast<std::size_t>(n);
  });
  timed(Phase::load, [&] {
    std::size_t sum = 0;
    for (int i = 0; i < n; ++i) sum += s->load(d, i);
    check += static_cast<std::int64_t>(sum);
    return static_cast<std::size_t>(n);
  });
  timed(Phase::list, [&] {
    std::size_t listed = 0;
    for (const auto& t : d.tenants) listed += s->list(t);
    if (listed != static_cast<std::size_t>(n)) throw std::runtime_error("list: wrong count");
    return listed;
  });
  timed(Phase::resave, [&] {
    for (int i = 0; i < n; i += 10) s->save(d, i, shared, "a benchmark artifact, revised");
    return static_cast<std::size_t>((n + 9) / 10);
  });
  timed(Phase::remove, [&] {
    std::size_t removed = 0;
    for (int i = 5; i < n; i += 10, ++removed) s->remove(d, i);
    return removed;
  });
  if (target >= Phase::resave) check += s->versions_of(d, 0);  // 2: the re-save made a new version
  // The store's teardown is not part of any phase.
  benchmark::DoNotOptimize(s.get());
  s.reset();
  return touched == 0 ? 0 : seconds / static_cast<double>(touched);
}

template <typename Subject, Phase P, bool Shared>
void BM_W1(benchmark::State& state) {
  const Dataset& d = dataset(static_cast<int>(state.range(0)));
  std::int64_t check = 0;
  for (auto _ : state) {
    // Every iteration starts from the same heap: what earlier iterations and rows freed goes back to the system, so
    // each subject pays for the pages its own phases touch and none runs on pages another row faulted in.
    malloc_trim(0);
    state.SetIterationTime(run_w1<Subject>(d, P, Shared, check));
  }
  benchmark::DoNotOptimize(check);
  state.counters["artifacts"] = static_cast<double>(d.n);
}

// glibc malloc's bytes in use: its arenas' (uordblks) and the blocks it mapped on their own (hblkhd: every block
// above the mmap threshold, 128 KiB at first, such as an index's arrays). 0 under AddressSanitizer, which replaces
// malloc: the Bytes rows are then 0.
std::size_t heap_in_use() {
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

// Heap bytes per stored artifact after the Save phase; the store (and everything it holds) is the only thing
// allocated in between. Shared: the one document is not counted (it lives in the dataset).
template <typename Subject, bool Shared>
void BM_W1Bytes(benchmark::State& state) {
  const Dataset& d = dataset(static_cast<int>(state.range(0)));
  const double text = static_cast<double>(d.document->dump().size());
  for (auto _ : state) {
    malloc_trim(0);
    const std::size_t before = heap_in_use();
    auto s = std::make_unique<Subject>();
    for (int i = 0; i < d.n; ++i) s->save(d, i, Shared, "a benchmark artifact");
    if constexpr (Subject::kSearched) s->search_every_tenant(d);
    const std::size_t after = heap_in_use();
    const double per = static_cast<double>(after - before) / d.n;
    state.counters["bytes_per_artifact"] = per;
    state.counters["value_json_text_bytes"] = text;
    state.counters["bytes_over_text"] = per / text;
    s.reset();
  }
}

void register_all(const std::vector<std::int64_t>& sizes) {
  auto each = [&](benchmark::internal::Benchmark* b) {
    for (auto n : sizes) b->Arg(n);
    b->UseManualTime()->Unit(benchmark::kNanosecond);
    // Big stores: few iterations (each one rebuilds the store).
    b->Iterations(sizes.back() >= 1000000 ? 1 : 5);
  };
  struct Row {
    const char* name;
    void (*fn)(benchmark::State&);
  };
  const Row rows[] = {
      {"BM_W1SaveShared_Cairn", BM_W1<Cairn, Phase::save, true>},
      {"BM_W1SaveShared_Floor", BM_W1<Floor, Phase::save, true>},
      {"BM_W1SaveCopied_Cairn", BM_W1<Cairn, Phase::save, false>},
      {"BM_W1SaveCopied_Floor", BM_W1<Floor, Phase::save, false>},
      {"BM_W1LoadShared_Cairn", BM_W1<Cairn, Phase::load, true>},
      {"BM_W1LoadShared_Floor", BM_W1<Floor, Phase::load, true>},
      {"BM_W1LoadCopied_Cairn", BM_W1<Cairn, Phase::load, false>},
      {"BM_W1LoadCopied_Floor", BM_W1<Floor, Phase::load, false>},
      {"BM_W1ListShared_Cairn", BM_W1<Cairn, Phase::list, true>},
      {"BM_W1ListShared_Floor", BM_W1<Floor, Phase::list, true>},
      {"BM_W1ListCopied_Cairn", BM_W1<Cairn, Phase::list, false>},
      {"BM_W1ListCopied_Floor", BM_W1<Floor, Phase::list, false>},
      {"BM_W1ResaveShared_Cairn", BM_W1<Cairn, Phase::resave, true>},
      {"BM_W1ResaveShared_Floor", BM_W1<Floor, Phase::resave, true>},
      {"BM_W1ResaveCopied_Cairn", BM_W1<Cairn, Phase::resave, false>},
      {"BM_W1ResaveCopied_Floor", BM_W1<Floor, Phase::resave, false>},
      {"BM_W1DeleteShared_Cairn", BM_W1<Cairn, Phase::remove, true>},
      {"BM_W1DeleteShared_Floor", BM_W1<Floor, Phase::remove, true>},
      {"BM_W1DeleteCopied_Cairn", BM_W1<Cairn, Phase::remove, false>},
      {"BM_W1DeleteCopied_Floor", BM_W1<Floor, Phase::remove, false>},
      // Records packed at rest (issue 15 goal 2): distinct values only (a shared one gains nothing from packing).
      {"BM_W1SaveCopied_CairnPacked", BM_W1<CairnPacked, Phase::save, false>},
      {"BM_W1LoadCopied_CairnPacked", BM_W1<CairnPacked, Phase::load, false>},
      {"BM_W1ListCopied_CairnPacked", BM_W1<CairnPacked, Phase::list, false>},
      {"BM_W1ResaveCopied_CairnPacked", BM_W1<CairnPacked, Phase::resave, false>},
      {"BM_W1DeleteCopied_CairnPacked", BM_W1<CairnPacked, Phase::remove, false>},
      {"BM_W1SaveCopied_CairnBounded", BM_W1<CairnBounded, Phase::save, false>},
      {"BM_W1LoadCopied_CairnBounded", BM_W1<CairnBounded, Phase::load, false>},
  };
  for (const Row& r : rows) each(benchmark::RegisterBenchmark(r.name, r.fn));
  const Row bytes[] = {
      {"BM_W1BytesShared_Cairn", BM_W1Bytes<Cairn, true>},
      {"BM_W1BytesShared_Floor", BM_W1Bytes<Floor, true>},
      {"BM_W1BytesCopied_Cairn", BM_W1Bytes<Cairn, false>},
      {"BM_W1BytesCopied_Floor", BM_W1Bytes<Floor, false>},
      {"BM_W1BytesCopied_CairnPacked", BM_W1Bytes<CairnPacked, false>},
      {"BM_W1BytesCopied_CairnPackedSearched", BM_W1Bytes<CairnPackedSearched, false>},
  };
  for (const Row& r : bytes) {
    auto* b = benchmark::RegisterBenchmark(r.name, r.fn);
    b->Arg(sizes.back() >= 1000000 ? 100000 : sizes.back())->Iterations(1)->Unit(benchmark::kMillisecond);
  }
}

}  // namespace

int main(int argc, char** argv) {
  // --w1_1m adds the 1,000,000-artifact size (minutes, and ~15 GB for the Copied rows); --w1_small runs 10,000 only.
  std::vector<std::int64_t> sizes{10000, 100000};
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--w1_1m") == 0) {
      sizes.push_back(1000000);
    } else if (std::strcmp(argv[i], "--w1_small") == 0) {
      sizes = {10000};
    } else {
      rest.push_back(argv[i]);
    }
  }
  register_all(sizes);
  int rest_argc = static_cast<int>(rest.size());
  benchmark::Initialize(&rest_argc, rest.data());
  if (benchmark::ReportUnrecognizedArguments(rest_argc, rest.data())) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
