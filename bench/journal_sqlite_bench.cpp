// SqliteRunJournal against its floor, and what a step costs in bytes as a run grows. scripts/bench prints the ratios.
//
// Append: one entry of ~400 bytes of JSON (a chat message) per call, against raw sqlite3 prepared statements that
// dump the same JSON and INSERT its text keyed by (run, seq) in a transaction of their own, on a file in the same
// journal mode (WAL) and synchronous setting. The journal does more per append (it reads the run's last seq and
// updates the run row in the same transaction); the ratio says what that costs.
//
// Restore: a run of 10,000 steps (an ExecutionContext attached to it, one ~400-character message per step, a
// snapshot every 256 entries) is opened and a new context attached, which rebuilds it: the newest snapshot and the
// entries after it are read from the file and applied. The floor parses the text of that snapshot, already in
// memory: the least any restore from it must do.
//
// Growth: a run of N = 10 ... 10,000 entries gets 200 more; per entry, the growth of the database file (after a
// checkpoint moves everything out of the WAL) and the bytes the process wrote (WAL frames and checkpoints, from
// /proc/self/io). Flat means a step costs what it adds, not what the run holds. Synchronous NORMAL there: the bytes
// do not depend on it, the time to build a 10,000-entry run does.
#include <fcntl.h>
#include <spawn.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/context/execution_context.hpp"
#include "cairn/run/run.hpp"
#include "cairn/store/open_store.hpp"
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
      std::filesystem::remove_all(
          std::filesystem::temp_directory_path() / ("cairn-journal-bench-" + std::to_string(::getpid())), ec);
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
  o.synchronous =
      full_sync ? cairn::SqliteJournalOptions::Synchronous::full : cairn::SqliteJournalOptions::Synchronous::normal;
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

// The runs of the restore rows, built once per process: 10,000 steps (17 entries after the newest snapshot) and
// 10,238 steps (255 after it: the most a restore reads with snapshots every 256).
struct TenThousandSteps {
  int steps;
  std::string path = fresh_file("restore");
  std::shared_ptr<cairn::InMemoryArtifactStore> store = std::make_shared<cairn::InMemoryArtifactStore>();
  std::string snapshot_text;
  std::size_t entries_after_snapshot = 0;
  std::string final_state;

  explicit TenThousandSteps(int n) : steps(n) {
    auto journal = std::make_shared<cairn::SqliteRunJournal>(path, options(false));
    cairn::Run run(journal, "tenant-1", "run-1", cairn::RunOptions{256});  // snapshots are no longer the default
    cairn::ExecutionContext ctx(store, "tenant-1");
    ctx.attach(run);
    for (int i = 1; i <= steps; ++i) {
      ctx.add_message(i % 2 ? cairn::Role::assistant : cairn::Role::user, message_of(i)["content"].get<std::string>());
    }
    final_state = ctx.state().dump();
    const auto entries = journal->read_for_restore("tenant-1", "run-1", run.seq());
    if (entries.empty() || entries.front().kind != "snapshot") std::abort();
    snapshot_text = entries.front().data.dump();
    entries_after_snapshot = entries.size() - 1;
  }
  static const TenThousandSteps& get(std::int64_t n) {
    static std::map<std::int64_t, std::unique_ptr<TenThousandSteps>> runs;
    auto& r = runs[n];
    if (!r) r = std::make_unique<TenThousandSteps>(static_cast<int>(n));
    return *r;
  }
};

void BM_Restore10k_Floor(benchmark::State& state) {
  const auto& r = TenThousandSteps::get(state.range(0));
  for (auto _ : state) {
    auto parsed = json::parse(r.snapshot_text);
    benchmark::DoNotOptimize(parsed);
  }
  state.counters["snapshot_bytes"] = static_cast<double>(r.snapshot_text.size());
  state.counters["entries_after_snapshot"] = static_cast<double>(r.entries_after_snapshot);
}

void BM_Restore10k_Cairn(benchmark::State& state) {
  const auto& r = TenThousandSteps::get(state.range(0));
  auto journal = std::make_shared<cairn::SqliteRunJournal>(r.path, options(false));
  for (auto _ : state) {
    cairn::Run run(journal, "tenant-1", "run-1");
    cairn::ExecutionContext ctx(r.store, "tenant-1");
    ctx.attach(run);
    if (ctx.messages().size() != static_cast<std::size_t>(r.steps)) state.SkipWithError("restore lost messages");
    benchmark::DoNotOptimize(ctx);
  }
  state.counters["entries_after_snapshot"] = static_cast<double>(r.entries_after_snapshot);
  state.counters["snapshot_bytes"] = static_cast<double>(r.snapshot_text.size());
}

// ---- issue 24: a conversation through Run + an attached ExecutionContext, the documented path ----------------------
//
// N turns, each a 400-character user message and a 400-character reply, through open_run_journal(url) (SQLite, WAL,
// `?synchronous=normal`), Run, an ExecutionContext for the conversation (default options) attached to it, and
// ctx.add_message: bytes per turn (the file after a checkpoint / N), the mean time per turn over the last half of the
// turns, its median, and the slowest turn. The floor does per turn what any journal must: one plain sqlite3 INSERT of
// the turn's two messages as JSON, in a transaction of its own, in the same file mode (SQLite's own automatic
// checkpoints: the floor is plain sqlite3).
//
// The machine these rows run on is shared (2 cores, a load average of 5-10 from other work): a turn's wall time
// there includes the time its thread waited on the run queue for a core, which says nothing of the turn and grows
// with the run's length (a continuous 10,000-turn run is throttled to its share of the CPU, a 10-turn one after a
// file's creation rarely is). So each turn is timed as its wall time minus the time this thread spent runnable but
// not running during it (the second field of /proc/thread-self/schedstat): everything the turn itself takes,
// waits for I/O, fsyncs and locks included. The raw wall time is reported beside it (`wall_` counters).
// Every N is measured over about the same number of turns: ceil(2,000 / N) conversations of N turns, each in a
// new file, and the last half of each.

std::string turn_text(std::int64_t turn, char fill) {
  std::string s = "Turn " + std::to_string(turn) + ": ";
  s.resize(400, fill);
  return s;
}

std::int64_t conversations_for(std::int64_t n) { return std::max<std::int64_t>(1, (2000 + n - 1) / n); }

// Nanoseconds this thread has waited on a run queue so far (0 where the kernel does not say).
std::int64_t run_queue_wait_ns() {
  static const int fd = ::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
  char buf[128];
  const ssize_t k = fd < 0 ? -1 : ::pread(fd, buf, sizeof buf - 1, 0);
  if (k <= 0) return 0;
  buf[k] = 0;
  char* end = nullptr;
  std::strtoll(buf, &end, 10);
  return std::strtoll(end, nullptr, 10);
}

// One timed turn: its wall time and its own time (the wall time less the run queue wait), in µs.
struct Turn {
  double wall, own;
};

struct TurnTimes {
  std::vector<double> own_us, wall_us;  // the last half of every conversation's turns
  double slowest_own = 0, slowest_wall = 0;
  void add(const std::vector<Turn>& turns) {
    for (std::size_t i = 0; i < turns.size(); ++i) {
      if (i >= turns.size() / 2) {
        own_us.push_back(turns[i].own);
        wall_us.push_back(turns[i].wall);
      }
      slowest_own = std::max(slowest_own, turns[i].own);
      slowest_wall = std::max(slowest_wall, turns[i].wall);
    }
  }
  static double mean(const std::vector<double>& v) {
    double sum = 0;
    for (double t : v) sum += t;
    return sum / static_cast<double>(v.size());
  }
  static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  }
  void report(benchmark::State& state, double file_bytes, std::int64_t n, std::int64_t conversations) const {
    state.counters["bytes_per_turn"] = file_bytes / static_cast<double>(n);
    state.counters["file_bytes"] = file_bytes;
    state.counters["conversations"] = static_cast<double>(conversations);
    state.counters["mean_turn_us_last_half"] = mean(own_us);
    state.counters["median_turn_us_last_half"] = median(own_us);
    state.counters["slowest_turn_us"] = slowest_own;
    state.counters["wall_mean_turn_us_last_half"] = mean(wall_us);
    state.counters["wall_slowest_turn_us"] = slowest_wall;
  }
};

template <class F>
Turn timed(F&& f) {
  const std::int64_t q0 = run_queue_wait_ns();
  const auto t0 = std::chrono::steady_clock::now();
  f();
  const auto t1 = std::chrono::steady_clock::now();
  const std::int64_t q1 = run_queue_wait_ns();
  const double wall = std::chrono::duration<double, std::micro>(t1 - t0).count();
  return {wall, std::max(0.0, wall - static_cast<double>(q1 - q0) / 1e3)};
}

void BM_RunConversation_Floor(benchmark::State& state) {
  const auto n = state.range(0);
  const auto conversations = conversations_for(n);
  for (auto _ : state) {
    TurnTimes times;
    double file_bytes = 0;
    for (std::int64_t c = 0; c < conversations; ++c) {
      const std::string path = fresh_file("turns-floor");
      std::vector<Turn> us;
      {
        Floor floor(path, false);
        for (std::int64_t i = 1; i <= n; ++i) {
          const json turn = json::array({cairn::Message{cairn::Role::user, turn_text(i, 'u'), 1700000000000},
                                         cairn::Message{cairn::Role::assistant, turn_text(i, 'a'), 1700000000000}});
          us.push_back(timed([&] { floor.append("run-1", i, turn); }));
        }
      }
      times.add(us);
      if (c == 0) file_bytes = static_cast<double>(checkpointed_size(path));
      std::filesystem::remove(path);
    }
    times.report(state, file_bytes, n, conversations);
  }
}

void BM_RunConversation_Cairn(benchmark::State& state) {
  const auto n = state.range(0);
  const auto conversations = conversations_for(n);
  for (auto _ : state) {
    TurnTimes times;
    double file_bytes = 0;
    for (std::int64_t c = 0; c < conversations; ++c) {
      const std::string path = fresh_file("turns-run");
      std::vector<Turn> us;
      {
        auto journal = cairn::open_run_journal("sqlite:" + path + "?synchronous=normal");
        cairn::Run run(journal, "tenant-1", "run-1");
        cairn::ExecutionContext ctx("tenant-1");
        ctx.attach(run);
        for (std::int64_t i = 1; i <= n; ++i) {
          us.push_back(timed([&] {
            ctx.add_message(cairn::Role::user, turn_text(i, 'u'));
            ctx.add_message(cairn::Role::assistant, turn_text(i, 'a'));
          }));
        }
      }
      times.add(us);
      if (c == 0) file_bytes = static_cast<double>(checkpointed_size(path));
      std::filesystem::remove(path);
    }
    times.report(state, file_bytes, n, conversations);
  }
}

// Restore in a fresh process: this program runs itself again (posix_spawn of /proc/self/exe, nothing inherited but
// the arguments) and the new process measures one restore and writes the seconds to its stdout:
//   --restore-child=cairn <file> <n>   opens the run of n turns in <file> and attaches a new context (read, parse,
//                                      rebuild), checking the rebuilt state's text against <file>.state;
//   --restore-child=floor <file> <n>   reads <file>.state (that context's state() as JSON text, written by the
//                                      parent) into memory untimed, then times nlohmann::json::parse of it.
// Seven fresh processes per row; the time is the median, the spread (min, max) is reported. Each child times its
// work as the turns are timed (wall time less the run queue wait: see above).
struct RunOfTurns {
  std::string path = fresh_file("restore-turns");
  std::size_t state_bytes = 0;
  explicit RunOfTurns(std::int64_t n) {
    auto journal = cairn::open_run_journal("sqlite:" + path + "?synchronous=normal");
    cairn::Run run(journal, "tenant-1", "run-1");
    cairn::ExecutionContext ctx("tenant-1");
    ctx.attach(run);
    for (std::int64_t i = 1; i <= n; ++i) {
      ctx.add_message(cairn::Role::user, turn_text(i, 'u'));
      ctx.add_message(cairn::Role::assistant, turn_text(i, 'a'));
    }
    const std::string text = ctx.state().dump();
    state_bytes = text.size();
    std::ofstream(path + ".state", std::ios::binary) << text;
  }
  static const RunOfTurns& get(std::int64_t n) {
    static std::map<std::int64_t, std::unique_ptr<RunOfTurns>> runs;
    auto& r = runs[n];
    if (!r) r = std::make_unique<RunOfTurns>(n);
    return *r;
  }
};

std::string self_exe() { return std::filesystem::read_symlink("/proc/self/exe").string(); }

// Runs this program as `--restore-child=<mode> <file> <n>` and returns the seconds it printed (negative: failed).
double restore_in_fresh_process(const char* mode, const std::string& file, std::int64_t n) {
  int fds[2];
  if (::pipe(fds) != 0) std::abort();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  const std::string exe = self_exe(), flag = std::string("--restore-child=") + mode, count = std::to_string(n);
  std::vector<char*> argv{const_cast<char*>(exe.c_str()), const_cast<char*>(flag.c_str()),
                          const_cast<char*>(file.c_str()), const_cast<char*>(count.c_str()), nullptr};
  char* envp[] = {nullptr};
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), envp);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  std::string out;
  char buf[256];
  for (ssize_t k; (k = ::read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(k));
  ::close(fds[0]);
  if (rc != 0) return -1;
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || out.empty()) return -1;
  return std::strtod(out.c_str(), nullptr);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The child's side (see above). Returns the process's exit code.
int restore_child(const std::string& mode, const std::string& file, std::int64_t n) {
  const std::string expected = read_text(file + ".state");
  double seconds = -1;
  if (mode == "floor") {
    json parsed;  // destroyed after the clock stops, as the restored context is
    const Turn t = timed([&] {
      parsed = json::parse(expected);
      benchmark::DoNotOptimize(parsed);
    });
    seconds = t.own / 1e6;
    if (parsed.dump() != expected) return 2;
  } else if (mode == "cairn") {
    std::shared_ptr<cairn::RunJournal> journal;
    std::unique_ptr<cairn::Run> run;
    cairn::ExecutionContext ctx("tenant-1");
    const Turn t = timed([&] {
      journal = cairn::open_run_journal("sqlite:" + file + "?synchronous=normal");
      run = std::make_unique<cairn::Run>(journal, "tenant-1", "run-1");
      ctx.attach(*run);
    });
    seconds = t.own / 1e6;
    if (ctx.message_count() != static_cast<std::size_t>(2 * n) || ctx.state().dump() != expected) return 3;
  } else {
    return 4;
  }
  std::printf("%.9f\n", seconds);
  return 0;
}

// `mode`'s fresh processes; the cairn row runs a floor process before each of its own (the same moments of the
// machine for both) and reports the ratio of the two medians.
void restore_row(benchmark::State& state, const char* mode) {
  constexpr int repetitions = 7;
  const auto n = state.range(0);
  const auto& r = RunOfTurns::get(n);
  const bool paired = std::string(mode) != "floor";
  for (auto _ : state) {
    std::vector<double> ms, floor_ms;
    for (int i = 0; i < repetitions; ++i) {
      const double f = paired ? restore_in_fresh_process("floor", r.path, n) : 0;
      const double s = restore_in_fresh_process(mode, r.path, n);
      if (s < 0 || f < 0) {
        state.SkipWithError("the child failed (or rebuilt a state that differs from the original)");
        return;
      }
      ms.push_back(s * 1e3);
      floor_ms.push_back(f * 1e3);
    }
    std::sort(ms.begin(), ms.end());
    std::sort(floor_ms.begin(), floor_ms.end());
    state.SetIterationTime(ms[ms.size() / 2] / 1e3);
    state.counters["median_ms"] = ms[ms.size() / 2];
    state.counters["min_ms"] = ms.front();
    state.counters["max_ms"] = ms.back();
    state.counters["processes"] = repetitions;
    if (paired) {
      state.counters["floor_median_ms"] = floor_ms[floor_ms.size() / 2];
      state.counters["vs_floor"] = ms[ms.size() / 2] / floor_ms[floor_ms.size() / 2];
    }
  }
  state.counters["state_bytes"] = static_cast<double>(r.state_bytes);
}

void BM_RunRestore_Floor(benchmark::State& state) { restore_row(state, "floor"); }
void BM_RunRestore_Cairn(benchmark::State& state) { restore_row(state, "cairn"); }

}  // namespace

BENCHMARK(BM_Restore10k_Floor)->Arg(10000)->Arg(10238)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Restore10k_Cairn)->Arg(10000)->Arg(10238)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Append_Floor)->UseRealTime();
BENCHMARK(BM_Append_Cairn)->UseRealTime();
BENCHMARK(BM_AppendNoSync_Floor)->UseRealTime();
BENCHMARK(BM_AppendNoSync_Cairn)->UseRealTime();
BENCHMARK(BM_AppendGrowth_Floor)->Arg(10)->Arg(10000)->Iterations(1)->UseRealTime();
BENCHMARK(BM_AppendGrowth_Cairn)->Arg(10)->Arg(100)->Arg(1000)->Arg(10000)->Iterations(1)->UseRealTime();
BENCHMARK(BM_Conversation500_Cairn)->Iterations(1)->UseRealTime();

BENCHMARK(BM_RunConversation_Floor)
    ->Arg(10)
    ->Arg(100)
    ->Arg(1000)
    ->Arg(10000)
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RunConversation_Cairn)
    ->Arg(10)
    ->Arg(100)
    ->Arg(500)
    ->Arg(1000)
    ->Arg(10000)
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RunRestore_Floor)->Arg(1000)->Arg(10000)->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RunRestore_Cairn)->Arg(1000)->Arg(10000)->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);

int main(int argc, char** argv) {
  // A fresh process of a restore row (see restore_in_fresh_process).
  if (argc == 4 && std::string(argv[1]).rfind("--restore-child=", 0) == 0) {
    try {
      return restore_child(std::string(argv[1]).substr(16), argv[2], std::strtoll(argv[3], nullptr, 10));
    } catch (...) {
      return 5;
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
