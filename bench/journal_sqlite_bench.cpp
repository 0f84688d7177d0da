// SqliteRunJournal against its floor, and what a step costs in bytes as a run grows. scripts/bench prints the ratios.
//
// Append: one entry of ~400 bytes of JSON (a chat message) per call, against raw sqlite3 prepared statements that
// dump the same JSON and INSERT its text keyed by (run, seq) in a transaction of their own, on a file in the same
// journal mode (WAL) and synchronous setting. The journal does more per append (it reads the run's last seq and
// updates the run row in the same transaction); the ratio says what that costs.
//
// Growth: a run of N = 10 ... 10,000 entries gets 200 more; per entry, the growth of the database file (after a
// checkpoint moves everything out of the WAL) and the bytes the process wrote (WAL frames and checkpoints, from
// /proc/self/io). Flat means a step costs what it adds, not what the run holds. Synchronous NORMAL there: the bytes
// do not depend on it, the time to build a 10,000-entry run does.
#include <sqlite3.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "cairn/store/sqlite_journal.hpp"

namespace {

using nlohmann::json;

json message_of(std::int64_t i) {
  // {"role":"user","content":"...","turn":i} dumps to ~400 bytes.
  return json{{"role", i % 2 ? "assistant" : "user"},
              {"content", "Turn " + std::to_string(i) + ": " + std::string(360, 'x')},
              {"turn", i}};
}

cairn::JournalEntry entry_of(std::int64_t i) {
  cairn::JournalEntry e;
  e.kind = "context.message";
  e.data = message_of(i);
  return e;
}

std::string bench_dir() {
  static const std::string dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("cairn-journal-bench-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(std::filesystem::temp_directory_path() /
                                      ("cairn-journal-bench-" + std::to_string(::getpid())),
                                  ec);
    });
    return d.string();
  }();
  return dir;
}

// A new file for each call: Google Benchmark calls a benchmark several times while it picks the iteration count.
std::string fresh_file(const char* name) {
  static int n = 0;
  return bench_dir() + "/" + name + "-" + std::to_string(++n) + ".db";
}

// Bytes this process has passed to write() so far.
std::int64_t bytes_written() {
  std::ifstream io("/proc/self/io");
  std::string key;
  std::int64_t value = 0;
  while (io >> key >> value) {
    if (key == "wchar:") return value;
  }
  return 0;
}

// ---- the floor: raw sqlite3 ---------------------------------------------------------------------------------------

class Floor {
 public:
  Floor(const std::string& path, bool full_sync) {
    sqlite3_open(path.c_str(), &db_);
    sqlite3_busy_timeout(db_, 10000);
    exec("PRAGMA journal_mode = WAL");
    exec(full_sync ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL");
    exec("CREATE TABLE IF NOT EXISTS log (run TEXT, seq INTEGER, data TEXT, PRIMARY KEY (run, seq)) WITHOUT ROWID");
    prepare(&begin_, "BEGIN IMMEDIATE");
    prepare(&commit_, "COMMIT");
    prepare(&insert_, "INSERT INTO log VALUES (?1, ?2, ?3)");
  }
  ~Floor() {
    for (auto* s : {begin_, commit_, insert_}) sqlite3_finalize(s);
    sqlite3_close(db_);
  }

  void append(const std::string& run, std::int64_t seq, const json& data) {
    const std::string text = data.dump();
    step(begin_);
    sqlite3_bind_text(insert_, 1, run.data(), static_cast<int>(run.size()), SQLITE_STATIC);
    sqlite3_bind_int64(insert_, 2, seq);
    sqlite3_bind_text(insert_, 3, text.data(), static_cast<int>(text.size()), SQLITE_STATIC);
    step(insert_);
    step(commit_);
  }

 private:
  void exec(const char* sql) { sqlite3_exec(db_, sql, nullptr, nullptr, nullptr); }
  void prepare(sqlite3_stmt** st, const char* sql) { sqlite3_prepare_v2(db_, sql, -1, st, nullptr); }
  static void step(sqlite3_stmt* st) {
    sqlite3_step(st);
    sqlite3_reset(st);
  }
  sqlite3* db_ = nullptr;
  sqlite3_stmt *begin_ = nullptr, *commit_ = nullptr, *insert_ = nullptr;
};

cairn::SqliteJournalOptions options(bool full_sync) {
  cairn::SqliteJournalOptions o;
  o.synchronous = full_sync ? cairn::SqliteJournalOptions::Synchronous::full
                            : cairn::SqliteJournalOptions::Synchronous::normal;
  return o;
}

void append_floor(benchmark::State& state, bool full_sync, const char* file) {
  Floor floor(fresh_file(file), full_sync);
  std::int64_t seq = 0;
  for (auto _ : state) {
    ++seq;
    floor.append("run-1", seq, message_of(seq));
  }
  state.SetItemsProcessed(state.iterations());
}

void append_cairn(benchmark::State& state, bool full_sync, const char* file) {
  cairn::SqliteRunJournal journal(fresh_file(file), options(full_sync));
  std::uint64_t seq = 0;
  for (auto _ : state) {
    seq = journal.append("tenant-1", "run-1", seq, {entry_of(static_cast<std::int64_t>(seq) + 1)});
  }
  state.SetItemsProcessed(state.iterations());
}

// synchronous = FULL (the default): one fsync of the WAL per commit on both sides.
void BM_Append_Floor(benchmark::State& state) { append_floor(state, true, "floor-full"); }
void BM_Append_Cairn(benchmark::State& state) { append_cairn(state, true, "cairn-full"); }
// synchronous = NORMAL: no fsync per commit, so the journal's own work shows.
void BM_AppendNoSync_Floor(benchmark::State& state) { append_floor(state, false, "floor-normal"); }
void BM_AppendNoSync_Cairn(benchmark::State& state) { append_cairn(state, false, "cairn-normal"); }

// Moves the WAL into the database file and returns the file's size.
std::int64_t checkpointed_size(const std::string& path) {
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  sqlite3_busy_timeout(db, 10000);
  // As a statement: the C call would find a connection that has not read the file yet not in WAL mode.
  if (sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", nullptr, nullptr, nullptr) != SQLITE_OK) std::abort();
  sqlite3_close(db);
  return static_cast<std::int64_t>(std::filesystem::file_size(path));
}

void BM_AppendGrowth_Floor(benchmark::State& state) {
  constexpr int more = 200;
  const auto n = state.range(0);
  const std::string path = fresh_file("growth-floor");
  Floor floor(path, false);
  for (std::int64_t seq = 1; seq <= n; ++seq) floor.append("run-1", seq, message_of(seq));
  const std::int64_t size_before = checkpointed_size(path);
  const std::int64_t written_before = bytes_written();
  std::int64_t seq = n;
  for (auto _ : state) {
    for (int i = 0; i < more; ++i) {
      ++seq;
      floor.append("run-1", seq, message_of(seq));
    }
  }
  const std::int64_t size_after = checkpointed_size(path);
  const std::int64_t written_after = bytes_written();
  const double appended = static_cast<double>(state.iterations()) * more;
  state.counters["file_bytes_per_entry"] = static_cast<double>(size_after - size_before) / appended;
  state.counters["written_bytes_per_entry"] = static_cast<double>(written_after - written_before) / appended;
  state.SetItemsProcessed(static_cast<std::int64_t>(appended));
}

void BM_AppendGrowth_Cairn(benchmark::State& state) {
  constexpr int more = 200;
  const auto n = static_cast<std::uint64_t>(state.range(0));
  const std::string path = fresh_file("growth");
  cairn::SqliteRunJournal journal(path, options(false));
  for (std::uint64_t seq = 0; seq < n;) {
    seq = journal.append("tenant-1", "run-1", seq, {entry_of(static_cast<std::int64_t>(seq))});
  }
  const std::int64_t size_before = checkpointed_size(path);
  const std::int64_t written_before = bytes_written();
  std::uint64_t seq = n;
  for (auto _ : state) {
    for (int i = 0; i < more; ++i) {
      seq = journal.append("tenant-1", "run-1", seq, {entry_of(static_cast<std::int64_t>(seq))});
    }
  }
  const std::int64_t size_after = checkpointed_size(path);
  const std::int64_t written_after = bytes_written();
  const double appended = static_cast<double>(state.iterations()) * more;
  state.counters["file_bytes_per_entry"] = static_cast<double>(size_after - size_before) / appended;
  state.counters["written_bytes_per_entry"] = static_cast<double>(written_after - written_before) / appended;
  state.counters["entry_json_bytes"] = static_cast<double>(message_of(1000).dump().size());
  state.SetItemsProcessed(static_cast<std::int64_t>(appended));
}

// The conversation: 500 turns of ~400-character messages, one append each; the whole file afterwards.
void BM_Conversation500_Cairn(benchmark::State& state) {
  double total = 0;
  for (auto _ : state) {
    const std::string path = fresh_file("conversation");
    cairn::SqliteRunJournal journal(path, options(false));
    for (std::uint64_t seq = 0; seq < 500;) {
      seq = journal.append("tenant-1", "run-1", seq, {entry_of(static_cast<std::int64_t>(seq))});
    }
    total = static_cast<double>(checkpointed_size(path));
  }
  state.counters["total_file_bytes"] = total;
}

}  // namespace

BENCHMARK(BM_Append_Floor)->UseRealTime();
BENCHMARK(BM_Append_Cairn)->UseRealTime();
BENCHMARK(BM_AppendNoSync_Floor)->UseRealTime();
BENCHMARK(BM_AppendNoSync_Cairn)->UseRealTime();
BENCHMARK(BM_AppendGrowth_Floor)->Arg(10)->Arg(10000)->Iterations(1)->UseRealTime();
BENCHMARK(BM_AppendGrowth_Cairn)->Arg(10)->Arg(100)->Arg(1000)->Arg(10000)->Iterations(1)->UseRealTime();
BENCHMARK(BM_Conversation500_Cairn)->Iterations(1)->UseRealTime();

BENCHMARK_MAIN();
