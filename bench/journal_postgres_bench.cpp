// PostgresRunJournal against its floor, on the server named by CAIRN_TEST_PG_CONNINFO (scripts/bench starts one).
// scripts/bench prints the ratios.
//
// Append: one entry of ~400 bytes of JSON appended to a run, against one raw libpq prepared INSERT of the same
// bytes into a table keyed by (tenant, run, seq) — the least a host could do to keep an ordered log, with no check
// that the run did not move on. Both dump the same JSON value on every call and wait for the commit.
//
// Round trips: the statements the server executed per append, counted from its statement log
// (log_statement = all for the duration; needs CAIRN_TEST_PG_DIR, which scripts/postgres exports).
#include <libpq-fe.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>

#include "cairn/detail/random.hpp"
#include "cairn/store/postgres_journal.hpp"

namespace {

using nlohmann::json;

const char* pg_conninfo() { return std::getenv("CAIRN_TEST_PG_CONNINFO"); }

// A message-sized entry: ~400 bytes once dumped.
json message_of(int i) { return json{{"role", "assistant"}, {"turn", i}, {"content", std::string(360, 'm')}}; }

std::string fresh(const char* tag) { return tag + cairn::detail::random_string(12, "abcdefghijklmnopqrstuvwxyz"); }

class PgFloor {
 public:
  explicit PgFloor(const char* conninfo) : conn_(PQconnectdb(conninfo)) {
    PQsetNoticeProcessor(
        conn_, [](void*, const char*) {}, nullptr);
    exec(
        "CREATE TABLE IF NOT EXISTS bench_journal_floor (tenant text COLLATE \"C\", run text COLLATE \"C\", "
        "seq bigint, kind text, data text, time bigint, PRIMARY KEY (tenant, run, seq))");
    PQclear(PQprepare(conn_, "floor_ins",
                      "INSERT INTO bench_journal_floor VALUES ($1::text, $2::text, $3::bigint, $4::text, $5::text, "
                      "$6::bigint)",
                      0, nullptr));
  }
  ~PgFloor() { PQfinish(conn_); }
  PgFloor(const PgFloor&) = delete;
  PgFloor& operator=(const PgFloor&) = delete;

  void append(const std::string& t, const std::string& run, std::uint64_t seq, const json& data) {
    const std::string text = data.dump();
    const std::string seq_text = std::to_string(seq);
    const std::string time_text = std::to_string(cairn::detail::now_ms());
    const char* p[] = {t.c_str(), run.c_str(), seq_text.c_str(), "context.message", text.c_str(), time_text.c_str()};
    PGresult* r = PQexecPrepared(conn_, "floor_ins", 6, p, nullptr, nullptr, 0);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) std::abort();
    PQclear(r);
  }
  void exec(const char* sql) { PQclear(PQexec(conn_, sql)); }

 private:
  PGconn* conn_;
};

void BM_PgAppend_Floor(benchmark::State& state) {
  PgFloor floor(pg_conninfo());
  const std::string tenant = fresh("floor-");
  std::uint64_t seq = 0;
  for (auto _ : state) {
    ++seq;
    floor.append(tenant, "run", seq, message_of(static_cast<int>(seq)));
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_PgAppend_Cairn(benchmark::State& state) {
  cairn::PostgresRunJournal journal(pg_conninfo());
  const std::string tenant = fresh("journal-");
  std::uint64_t seq = 0;
  for (auto _ : state) {
    cairn::JournalEntry e;
    e.kind = "context.message";
    e.data = message_of(static_cast<int>(seq + 1));
    seq = journal.append(tenant, "run", seq, {std::move(e)});
  }
  state.SetItemsProcessed(state.iterations());
}

// Statements the server executed per append, from its log: with the extended protocol each "execute" is one
// round trip, and the journal sends nothing it does not wait for.
void BM_PgAppendRoundTrips_Cairn(benchmark::State& state) {
  const char* dir = std::getenv("CAIRN_TEST_PG_DIR");
  if (!dir) {
    state.SkipWithError("CAIRN_TEST_PG_DIR not set (scripts/postgres exports it)");
    return;
  }
  const std::string log = std::string(dir) + "/server.log";
  cairn::PostgresRunJournal journal(pg_conninfo(), cairn::PostgresJournalOptions{nullptr, 1});
  const std::string tenant = fresh("rt-");
  (void)journal.info(tenant, "run");  // the connection is open and its statements prepared
  PgFloor admin(pg_conninfo());
  double per_append = 0, per_batch = 0, per_conflict = 0;
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
    int executes = 0;
    for (std::string line; std::getline(in, line);) executes += line.find("execute cairn_j_") != std::string::npos;
    return static_cast<double>(executes) / n;
  };
  for (auto _ : state) {
    std::uint64_t seq = 0;
    auto entry = [](int k) {
      cairn::JournalEntry e;
      e.kind = "context.message";
      e.data = message_of(k);
      return e;
    };
    per_append = count_executes([&](int k) { seq = journal.append(tenant, "run", seq, {entry(k)}); });
    per_batch = count_executes([&](int k) {
      seq = journal.append(tenant, "run", seq, {entry(k), entry(k), entry(k)});
    });
    per_conflict = count_executes([&](int k) {
      try {
        (void)journal.append(tenant, "run", 1, {entry(k)});
      } catch (const cairn::conflict&) {
      }
    });
  }
  state.counters["append"] = per_append;
  state.counters["append3"] = per_batch;
  state.counters["conflict"] = per_conflict;
}

const bool registered = [] {
  if (!pg_conninfo()) return false;
  benchmark::RegisterBenchmark("BM_PgAppend_Floor", BM_PgAppend_Floor)->UseRealTime();
  benchmark::RegisterBenchmark("BM_PgAppend_Cairn", BM_PgAppend_Cairn)->UseRealTime();
  benchmark::RegisterBenchmark("BM_PgAppendRoundTrips_Cairn", BM_PgAppendRoundTrips_Cairn)
      ->Iterations(1)
      ->UseRealTime();
  return true;
}();

}  // namespace

BENCHMARK_MAIN();
