// The durable stores against their floors. scripts/bench prints the ratios.
//
// SQLite: SqliteArtifactStore against raw sqlite3 prepared statements on a file in the same journal mode (WAL) and
// synchronous setting, on 20,000 artifacts over 20 tenants. The floor does the least a host could: one table keyed
// by (tenant, id, version) holding the value as JSON text, dumped on store and parsed on fetch.
//
// PostgreSQL (only when CAIRN_TEST_PG_CONNINFO names a server; scripts/bench starts one): PostgresArtifactStore
// against one raw libpq prepared statement per operation, and the number of statements the server executed per
// call, counted from its statement log (each is one round trip: cairn sends no statement it does not wait for).
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>

#include "cairn/store/sqlite_store.hpp"

#if defined(CAIRN_HAS_POSTGRES)
#include <libpq-fe.h>

#include "cairn/store/postgres_store.hpp"
#endif

namespace {

using cairn::ArtifactRecord;
using nlohmann::json;

constexpr int kArtifacts = 20000;
constexpr int kTenants = 20;

std::string tenant_of(int i) { return "tenant-" + std::to_string(i % kTenants); }
std::string id_of(int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "doc-%06d", i);
  return buf;
}
json value_of(int i) {
  return json{
      {"title", "Report " + std::to_string(i)}, {"rows", {1, 2, 3, i}}, {"ok", true}, {"text", std::string(200, 'x')}};
}
cairn::ArtifactPtr record_of(int i, json value) {
  return ArtifactRecord::builder()
      .tenant_id(tenant_of(i))
      .id(id_of(i))
      .type("document")
      .title("Report")
      .created_by("agent-1")
      .value(std::move(value))
      .build();
}

std::string bench_dir() {
  static const std::string dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("cairn-sql-bench-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(
          std::filesystem::temp_directory_path() / ("cairn-sql-bench-" + std::to_string(::getpid())), ec);
    });
    return d.string();
  }();
  return dir;
}

// ---- SQLite floor -----------------------------------------------------------------------------------------------

class Floor {
 public:
  Floor(const std::string& path, bool full_sync) {
    sqlite3_open(path.c_str(), &db_);
    sqlite3_busy_timeout(db_, 10000);
    exec("PRAGMA journal_mode = WAL");
    exec(full_sync ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL");
    exec(
        "CREATE TABLE IF NOT EXISTS t (tenant TEXT, id TEXT, version INTEGER, value TEXT, "
        "PRIMARY KEY (tenant, id, version)) WITHOUT ROWID");
    prepare(&begin_, "BEGIN IMMEDIATE");
    prepare(&commit_, "COMMIT");
    prepare(&latest_, "SELECT max(version) FROM t WHERE tenant = ?1 AND id = ?2");
    prepare(&insert_, "INSERT INTO t VALUES (?1, ?2, ?3, ?4)");
    prepare(&fetch_, "SELECT value, version FROM t WHERE tenant = ?1 AND id = ?2 ORDER BY version DESC LIMIT 1");
    prepare(&list_, "SELECT id, value FROM t WHERE tenant = ?1 AND id >= ?2 AND id < ?3 ORDER BY id LIMIT ?4");
  }
  ~Floor() {
    for (auto* s : {begin_, commit_, latest_, insert_, fetch_, list_}) sqlite3_finalize(s);
    sqlite3_close(db_);
  }

  std::int64_t store(const std::string& tenant, const std::string& id, const json& value) {
    const std::string text = value.dump();
    step(begin_);
    bind(latest_, tenant, id);
    sqlite3_step(latest_);
    const std::int64_t version = sqlite3_column_int64(latest_, 0) + 1;
    sqlite3_reset(latest_);
    bind(insert_, tenant, id);
    sqlite3_bind_int64(insert_, 3, version);
    sqlite3_bind_text(insert_, 4, text.data(), static_cast<int>(text.size()), SQLITE_STATIC);
    step(insert_);
    step(commit_);
    return version;
  }
  json fetch(const std::string& tenant, const std::string& id) {
    bind(fetch_, tenant, id);
    json out;
    if (sqlite3_step(fetch_) == SQLITE_ROW) {
      const char* p = reinterpret_cast<const char*>(sqlite3_column_text(fetch_, 0));
      out = json::parse(p, p + sqlite3_column_bytes(fetch_, 0));
    }
    sqlite3_reset(fetch_);
    return out;
  }
  std::vector<json> list(const std::string& tenant, const std::string& lo, const std::string& hi, int limit) {
    bind(list_, tenant, lo);
    sqlite3_bind_text(list_, 3, hi.data(), static_cast<int>(hi.size()), SQLITE_STATIC);
    sqlite3_bind_int(list_, 4, limit);
    std::vector<json> out;
    while (sqlite3_step(list_) == SQLITE_ROW) {
      const char* p = reinterpret_cast<const char*>(sqlite3_column_text(list_, 1));
      out.push_back(json::parse(p, p + sqlite3_column_bytes(list_, 1)));
    }
    sqlite3_reset(list_);
    return out;
  }

 private:
  void exec(const char* sql) { sqlite3_exec(db_, sql, nullptr, nullptr, nullptr); }
  void prepare(sqlite3_stmt** st, const char* sql) { sqlite3_prepare_v2(db_, sql, -1, st, nullptr); }
  static void bind(sqlite3_stmt* st, const std::string& a, const std::string& b) {
    sqlite3_bind_text(st, 1, a.data(), static_cast<int>(a.size()), SQLITE_STATIC);
    sqlite3_bind_text(st, 2, b.data(), static_cast<int>(b.size()), SQLITE_STATIC);
  }
  static void step(sqlite3_stmt* st) {
    sqlite3_step(st);
    sqlite3_reset(st);
  }
  sqlite3* db_ = nullptr;
  sqlite3_stmt *begin_ = nullptr, *commit_ = nullptr, *latest_ = nullptr, *insert_ = nullptr, *fetch_ = nullptr,
               *list_ = nullptr;
};

// Both sides hold the same 20,000 artifacts before the read benchmarks run.
Floor& loaded_floor() {
  static Floor* floor = [] {
    auto* f = new Floor(bench_dir() + "/floor-read.db", false);
    for (int i = 0; i < kArtifacts; ++i) f->store(tenant_of(i), id_of(i), value_of(i));
    return f;
  }();
  return *floor;
}
cairn::SqliteArtifactStore& loaded_store() {
  static cairn::SqliteArtifactStore* store = [] {
    cairn::SqliteOptions o;
    o.synchronous = cairn::SqliteOptions::Synchronous::normal;
    auto* s = new cairn::SqliteArtifactStore(bench_dir() + "/cairn-read.db", o);
    for (int i = 0; i < kArtifacts; ++i) (void)s->store(*record_of(i, value_of(i)));
    return s;
  }();
  return *store;
}

void store_floor(benchmark::State& state, bool full_sync, const char* file) {
  Floor floor(bench_dir() + file, full_sync);
  int i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(floor.store(tenant_of(i), id_of(i % 1000), value_of(i)));
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
}
void store_cairn(benchmark::State& state, bool full_sync, const char* file) {
  cairn::SqliteOptions o;
  o.synchronous = full_sync ? cairn::SqliteOptions::Synchronous::full : cairn::SqliteOptions::Synchronous::normal;
  cairn::SqliteArtifactStore store(bench_dir() + file, o);
  int i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(store.store(*record_of(i % 1000, value_of(i))));
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
}

// synchronous = FULL (the store's default): one fsync per commit dominates both.
void BM_Store_Floor(benchmark::State& state) { store_floor(state, true, "/floor-store-full.db"); }
void BM_Store_Cairn(benchmark::State& state) { store_cairn(state, true, "/cairn-store-full.db"); }
// synchronous = NORMAL: no fsync per commit, so cairn's own overhead shows.
void BM_StoreNoSync_Floor(benchmark::State& state) { store_floor(state, false, "/floor-store-normal.db"); }
void BM_StoreNoSync_Cairn(benchmark::State& state) { store_cairn(state, false, "/cairn-store-normal.db"); }

void BM_Fetch_Floor(benchmark::State& state) {
  auto& floor = loaded_floor();
  std::mt19937 rng(1);
  for (auto _ : state) {
    const int i = static_cast<int>(rng() % kArtifacts);
    benchmark::DoNotOptimize(floor.fetch(tenant_of(i), id_of(i)));
  }
  state.SetItemsProcessed(state.iterations());
}
void BM_Fetch_Cairn(benchmark::State& state) {
  auto& store = loaded_store();
  std::mt19937 rng(1);
  for (auto _ : state) {
    const int i = static_cast<int>(rng() % kArtifacts);
    benchmark::DoNotOptimize(store.fetch(id_of(i), tenant_of(i)));
  }
  state.SetItemsProcessed(state.iterations());
}

// A page of 100 ids under a prefix ("doc-01" holds 50 of a tenant's 1,000; "doc-0" all of them).
void BM_List_Floor(benchmark::State& state) {
  auto& floor = loaded_floor();
  int t = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(floor.list(tenant_of(t++), "doc-0", "doc-1", 100));
  }
  state.SetItemsProcessed(state.iterations() * 100);
}
void BM_List_Cairn(benchmark::State& state) {
  auto& store = loaded_store();
  int t = 0;
  cairn::ListQuery q;
  q.prefix = "doc-0";
  q.limit = 100;
  for (auto _ : state) {
    benchmark::DoNotOptimize(store.list(tenant_of(t++), q));
  }
  state.SetItemsProcessed(state.iterations() * 100);
}

// Several threads reading while one writes: WAL lets the readers run on.
void BM_FetchWhileWriting_Cairn(benchmark::State& state) {
  auto& store = loaded_store();
  std::mt19937 rng(static_cast<unsigned>(state.thread_index()));
  for (auto _ : state) {
    const int i = static_cast<int>(rng() % kArtifacts);
    if (state.thread_index() == 0 && i % 10 == 0) {
      (void)store.store(*record_of(i, value_of(i)));
    } else {
      benchmark::DoNotOptimize(store.fetch(id_of(i), tenant_of(i)));
    }
  }
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK(BM_Store_Floor)->UseRealTime();
BENCHMARK(BM_Store_Cairn)->UseRealTime();
BENCHMARK(BM_StoreNoSync_Floor)->UseRealTime();
BENCHMARK(BM_StoreNoSync_Cairn)->UseRealTime();
BENCHMARK(BM_Fetch_Floor)->UseRealTime();
BENCHMARK(BM_Fetch_Cairn)->UseRealTime();
BENCHMARK(BM_List_Floor)->UseRealTime();
BENCHMARK(BM_List_Cairn)->UseRealTime();
BENCHMARK(BM_FetchWhileWriting_Cairn)->Threads(4)->UseRealTime();

#if defined(CAIRN_HAS_POSTGRES)
// ---- PostgreSQL ---------------------------------------------------------------------------------------------------

const char* pg_conninfo() { return std::getenv("CAIRN_TEST_PG_CONNINFO"); }

class PgFloor {
 public:
  explicit PgFloor(const char* conninfo) : conn_(PQconnectdb(conninfo)) {
    PQsetNoticeProcessor(
        conn_, [](void*, const char*) {}, nullptr);
    exec(
        "CREATE TABLE IF NOT EXISTS bench_floor (tenant text, id text, version bigint, value jsonb, "
        "PRIMARY KEY (tenant, id, version))");
    PQclear(PQprepare(conn_, "ins",
                      "INSERT INTO bench_floor VALUES ($1, $2, (SELECT coalesce(max(version), 0) + 1 FROM bench_floor "
                      "WHERE tenant = $1 AND id = $2), $3::jsonb) RETURNING version",
                      0, nullptr));
    PQclear(PQprepare(conn_, "get",
                      "SELECT value::text FROM bench_floor WHERE tenant = $1 AND id = $2 ORDER BY version DESC LIMIT 1",
                      0, nullptr));
  }
  ~PgFloor() { PQfinish(conn_); }
  void store(const std::string& t, const std::string& id, const json& v) {
    const std::string text = v.dump();
    const char* p[] = {t.c_str(), id.c_str(), text.c_str()};
    PQclear(PQexecPrepared(conn_, "ins", 3, p, nullptr, nullptr, 0));
  }
  json fetch(const std::string& t, const std::string& id) {
    const char* p[] = {t.c_str(), id.c_str()};
    PGresult* r = PQexecPrepared(conn_, "get", 2, p, nullptr, nullptr, 0);
    json out = PQntuples(r) ? json::parse(PQgetvalue(r, 0, 0)) : json();
    PQclear(r);
    return out;
  }
  void exec(const char* sql) { PQclear(PQexec(conn_, sql)); }

 private:
  PGconn* conn_;
};

void BM_PgStore_Floor(benchmark::State& state) {
  PgFloor floor(pg_conninfo());
  int i = 0;
  for (auto _ : state) floor.store(tenant_of(i), id_of(i % 1000), value_of(i)), ++i;
  state.SetItemsProcessed(state.iterations());
}
void BM_PgStore_Cairn(benchmark::State& state) {
  cairn::PostgresArtifactStore store(pg_conninfo());
  int i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(store.store(*record_of(i % 1000, value_of(i)))), ++i;
  state.SetItemsProcessed(state.iterations());
}
void BM_PgFetch_Floor(benchmark::State& state) {
  PgFloor floor(pg_conninfo());
  int i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(floor.fetch(tenant_of(i), id_of(i % 1000))), ++i;
  state.SetItemsProcessed(state.iterations());
}
void BM_PgFetch_Cairn(benchmark::State& state) {
  cairn::PostgresArtifactStore store(pg_conninfo());
  int i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(store.fetch(id_of(i % 1000), tenant_of(i))), ++i;
  state.SetItemsProcessed(state.iterations());
}

// Statements the server executed per call, from its log (log_statement = all for the duration): with the
// extended protocol each "execute" is one round trip.
void BM_PgRoundTrips_Cairn(benchmark::State& state) {
  const char* dir = std::getenv("CAIRN_TEST_PG_DIR");
  if (!dir) {
    state.SkipWithError("CAIRN_TEST_PG_DIR not set (scripts/bench sets it)");
    return;
  }
  const std::string log = std::string(dir) + "/server.log";
  cairn::PostgresArtifactStore store(pg_conninfo());
  (void)store.store(*record_of(0, 1));  // statements are prepared on first use; do not count that
  PgFloor admin(pg_conninfo());
  auto count_executes = [&](auto&& op) {
    admin.exec("ALTER SYSTEM SET log_statement = 'all'");
    admin.exec("SELECT pg_reload_conf()");
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const auto start = std::filesystem::file_size(log);
    constexpr int n = 50;
    for (int k = 0; k < n; ++k) op(k);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    admin.exec("ALTER SYSTEM RESET log_statement");
    admin.exec("SELECT pg_reload_conf()");
    std::ifstream in(log);
    in.seekg(static_cast<std::streamoff>(start));
    std::string line;
    int executes = 0;
    while (std::getline(in, line)) executes += line.find("execute cairn_") != std::string::npos;
    return static_cast<double>(executes) / n;
  };
  double stores = 0, fetches = 0, lists = 0, versions = 0, removes = 0;
  for (auto _ : state) {
    stores = count_executes([&](int k) { (void)store.store(*record_of(k, k)); });
    fetches = count_executes([&](int k) { (void)store.fetch(id_of(k), tenant_of(k)); });
    lists = count_executes([&](int k) { (void)store.list(tenant_of(k)); });
    versions = count_executes([&](int k) { (void)store.versions(id_of(k), tenant_of(k)); });
    removes = count_executes([&](int k) { store.remove(id_of(k), tenant_of(k)); });
  }
  state.counters["store"] = stores;
  state.counters["fetch"] = fetches;
  state.counters["list"] = lists;
  state.counters["versions"] = versions;
  state.counters["remove"] = removes;
}

const bool pg_registered = [] {
  if (!pg_conninfo()) return false;
  benchmark::RegisterBenchmark("BM_PgStore_Floor", BM_PgStore_Floor)->UseRealTime();
  benchmark::RegisterBenchmark("BM_PgStore_Cairn", BM_PgStore_Cairn)->UseRealTime();
  benchmark::RegisterBenchmark("BM_PgFetch_Floor", BM_PgFetch_Floor)->UseRealTime();
  benchmark::RegisterBenchmark("BM_PgFetch_Cairn", BM_PgFetch_Cairn)->UseRealTime();
  benchmark::RegisterBenchmark("BM_PgRoundTrips_Cairn", BM_PgRoundTrips_Cairn)->Iterations(1)->UseRealTime();
  return true;
}();
#endif

}  // namespace

BENCHMARK_MAIN();
