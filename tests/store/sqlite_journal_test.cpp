#include "cairn/store/sqlite_journal.hpp"

#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include "cairn/store/sqlite_store.hpp"
#include "cairn/testing/journal_conformance.hpp"
#include "catch.hpp"
#include "store_test_support.hpp"

using namespace cairn;
using nlohmann::json;
using store_test::TempDir;

namespace {

// A raw connection, for looking at (and tampering with) the file behind the journal's back.
class RawDb {
 public:
  explicit RawDb(const std::string& path) {
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) throw std::runtime_error("cannot open " + path);
    sqlite3_busy_timeout(db_, 10000);
  }
  ~RawDb() { sqlite3_close(db_); }
  RawDb(const RawDb&) = delete;
  RawDb& operator=(const RawDb&) = delete;
  void exec(const std::string& sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : "?";
      sqlite3_free(err);
      throw std::runtime_error(sql + ": " + msg);
    }
  }
  // Column `col` of the first row.
  std::string scalar(const std::string& sql, int col = 0) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) throw std::runtime_error(sql);
    std::string out;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, col)) {
      out = reinterpret_cast<const char*>(sqlite3_column_text(st, col));
    }
    sqlite3_finalize(st);
    return out;
  }

 private:
  sqlite3* db_ = nullptr;
};

std::vector<JournalEntry> one(std::string kind, json data) {
  JournalEntry e;
  e.kind = std::move(kind);
  e.data = std::move(data);
  return {e};
}

SqliteJournalOptions normal_sync() {
  SqliteJournalOptions o;
  o.synchronous = SqliteJournalOptions::Synchronous::normal;
  return o;
}

std::string file_content(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A clock that runs a callback when read: RunJournal reads it between its checks and the backend's transaction,
// which lets a test put another writer exactly there.
class HookClock final : public Clock {
 public:
  std::int64_t now_ms() const override {
    if (hook) {
      auto h = std::move(hook);
      hook = nullptr;
      h();
    }
    return 1000;
  }
  mutable std::function<void()> hook;
};

}  // namespace

TEST_CASE("SqliteRunJournal passes the journal conformance suite, each check on a new file") {
  TempDir dir;
  int n = 0;
  for (const auto& check : testing::journal_conformance_checks()) {
    INFO(check.name);
    SqliteRunJournal journal(dir.file("conformance-" + std::to_string(n++) + ".db"));
    CHECK_NOTHROW(check.run(journal));
  }
}

TEST_CASE("SqliteRunJournal passes the journal conformance suite on one file that keeps growing, reopened each time") {
  TempDir dir;
  for (const auto& check : testing::journal_conformance_checks()) {
    INFO(check.name);
    SqliteRunJournal journal(dir.file("shared.db"), normal_sync());
    CHECK_NOTHROW(check.run(journal));
  }
  RawDb raw(dir.file("shared.db"));
  CHECK(std::stoi(raw.scalar("SELECT count(*) FROM cairn_runs")) > 10);
}

TEST_CASE("runs survive a reopen exactly: entries, snapshots, forks and pruning") {
  TempDir dir;
  const auto path = dir.file("reopen.db");
  const json tricky = {{"u64max", std::numeric_limits<std::uint64_t>::max()},
                       {"i64min", std::numeric_limits<std::int64_t>::min()},
                       {"tiny", 5e-324},
                       {"negzero", -0.0},
                       {"one_point_zero", 1.0},
                       {"nul", std::string("a\0b", 3)},
                       {"text", "Grüße, 世界 🚀 \"q\" \\ \n\t"},
                       {"keys order", {{"b", 1}, {"a", 2}, {"", 3}}},
                       {"empty", {json::object(), json::array()}}};
  std::vector<JournalEntry> before;
  {
    SqliteRunJournal journal(path);
    (void)journal.append("t", "run/ä 1", 0, one("context.message", tricky));
    (void)journal.append("t", "run/ä 1", 1, one(snapshot_kind, {{"state", 2}}));
    (void)journal.append("t", "run/ä 1", 2, one("tool.intended", {{"call", "c1"}}));
    (void)journal.append("t", "run/ä 1", 3, one(snapshot_kind, {{"state", 4}}));
    (void)journal.append("t", "run/ä 1", 4, one("tool.finished", {{"call", "c1"}, {"out", json::array()}}));
    journal.fork("t", "run/ä 1", 3, "fork");
    (void)journal.append("t", "fork", 3, one("alt", "x"));
    CHECK(journal.prune("t", "run/ä 1") == 1);  // seq 1 goes; the fork still needs snapshot 2 and entry 3
    before = journal.read("t", "run/ä 1", 2);
  }
  SqliteRunJournal journal(path);
  const auto after = journal.read("t", "run/ä 1", 2);
  REQUIRE(after.size() == before.size());
  for (std::size_t i = 0; i < after.size(); ++i) CHECK(after[i] == before[i]);
  CHECK_THROWS_AS(journal.read("t", "run/ä 1"), state_error);  // seq 1 was pruned, and stays pruned
  const auto info = journal.info("t", "run/ä 1");
  REQUIRE(info);
  CHECK(info->last_seq == 5);
  CHECK(info->kept_from == 2);
  const auto fork = journal.info("t", "fork");
  REQUIRE(fork);
  CHECK(fork->forked_from == std::optional<std::string>("run/ä 1"));
  CHECK(fork->fork_seq == 3);
  CHECK(fork->last_seq == 4);
  const auto restore = journal.read_for_restore("t", "fork");
  REQUIRE(restore.size() == 3);
  CHECK(restore[0].seq == 2);
  CHECK(restore[2].data == "x");
  // The tricky value is gone with seq 1; write it again and compare its text after another reopen.
  (void)journal.append("t", "fork", 4, one("context.message", tricky));
  SqliteRunJournal again(path);
  CHECK(again.read("t", "fork", 5)[0].data.dump() == tricky.dump());
  CHECK(again.append("t", "fork", 5, one("next", 6)) == 6);
}

TEST_CASE("one file holds artifacts and runs, either opens it first, and each keeps its own schema") {
  TempDir dir;
  const auto path = dir.file("both.db");
  auto note = [](const std::string& id, json v) {
    return ArtifactRecord::builder().tenant_id("t").id(id).type("document").title(id).value(std::move(v)).build();
  };
  {
    SqliteArtifactStore store(path);
    SqliteRunJournal journal(path);
    (void)store.store(*note("a", 1));
    (void)journal.append("t", "r", 0, one("bind", {{"name", "a"}}));
    (void)store.store(*note("a", 2));
    (void)journal.append("t", "r", 1, one("bind", {{"name", "a"}, {"version", 2}}));
  }
  {
    SqliteRunJournal journal(path);  // the journal alone
    CHECK(journal.read("t", "r").size() == 2);
  }
  {
    SqliteArtifactStore store(path);  // the store alone
    CHECK(store.versions("a", "t") == std::vector<std::uint64_t>{1, 2});
  }
  TempDir dir2;
  const auto path2 = dir2.file("journal-first.db");
  {
    SqliteRunJournal journal(path2);
    (void)journal.append("t", "r", 0, one("x", 1));
  }
  {
    SqliteArtifactStore store(path2);  // a journal's file becomes a store's too
    (void)store.store(*note("b", 1));
    SqliteRunJournal journal(path2);
    CHECK(journal.append("t", "r", 1, one("y", 2)) == 2);
    CHECK(store.fetch("b", "t")->value() == 1);
  }
  RawDb raw(path2);
  CHECK(raw.scalar("SELECT version FROM cairn_run_schema") == std::to_string(SqliteRunJournal::schema_version));
  CHECK(raw.scalar("SELECT version FROM cairn_schema") == std::to_string(SqliteArtifactStore::schema_version));
  CHECK(raw.scalar("PRAGMA journal_mode") == "wal");
  CHECK(raw.scalar("SELECT count(*) FROM cairn_run_entries") == "2");
  // The stored text is what nlohmann dumps.
  CHECK(raw.scalar("SELECT data FROM cairn_run_entries WHERE seq = 2") == "2");
}

TEST_CASE("the newest snapshot is found by a search of its partial index, not by walking the run back") {
  TempDir dir;
  const auto path = dir.file("plan.db");
  {
    SqliteRunJournal journal(path);
    (void)journal.append("t", "r", 0, one("a", 1));
  }
  RawDb raw(path);
  // The statement SqliteRunJournal prepares (it names the index: without statistics the planner would walk the
  // primary key back from the seq, reading every entry after the snapshot).
  const std::string plan = raw.scalar(
      "EXPLAIN QUERY PLAN SELECT seq FROM cairn_run_entries INDEXED BY cairn_run_snapshots "
      "WHERE tenant_id = ?1 AND run_id = ?2 AND kind = 'snapshot' AND seq <= ?3 ORDER BY seq DESC LIMIT 1",
      3);  // the plan's detail column
  CHECK_THAT(plan, cairn_test::ContainsSubstring("SEARCH cairn_run_entries USING"));
  CHECK_THAT(plan, cairn_test::ContainsSubstring("INDEX cairn_run_snapshots (tenant_id=? AND run_id=? AND seq<?)"));
}

TEST_CASE("a file with runs of a newer cairn is refused, and left as it was") {
  TempDir dir;
  const auto path = dir.file("newer.db");
  {
    SqliteRunJournal journal(path);
    (void)journal.append("t", "keep", 0, one("a", "kept"));
  }
  {
    RawDb raw(path);
    raw.exec("UPDATE cairn_run_schema SET version = 999");
  }
  try {
    SqliteRunJournal journal(path);
    FAIL("opening a newer file did not throw");
  } catch (const storage_error& e) {
    CHECK_THAT(e.what(), cairn_test::ContainsSubstring("schema version 999"));
    CHECK_THAT(e.what(), cairn_test::ContainsSubstring("newer"));
    CHECK_THAT(e.what(), cairn_test::ContainsSubstring(path));
  }
  RawDb raw(path);
  CHECK(raw.scalar("SELECT version FROM cairn_run_schema") == "999");
  CHECK(raw.scalar("SELECT data FROM cairn_run_entries WHERE run_id = 'keep'") == "\"kept\"");
  // The artifact side of the same file is not affected by the runs' version.
  SqliteArtifactStore store(path);
  CHECK(store.list("t").items.empty());
}

TEST_CASE("a file whose run schema version is not a number is refused, and left as it was") {
  TempDir dir;
  const auto path = dir.file("edited.db");
  {
    SqliteRunJournal journal(path);
    (void)journal.append("t", "keep", 0, one("a", "kept"));
  }
  for (const std::string bad : {"'two'", "-3", "99999999999999999999", "'7x'"}) {
    {
      RawDb raw(path);
      raw.exec("UPDATE cairn_run_schema SET version = " + bad);
    }
    try {
      SqliteRunJournal journal(path);
      FAIL("opening a file with run schema version " << bad << " did not throw");
    } catch (const storage_error& e) {
      CHECK_THAT(e.what(), cairn_test::ContainsSubstring("is not a schema version"));
      CHECK_THAT(e.what(), cairn_test::ContainsSubstring(path));
    }
  }
  RawDb raw(path);
  CHECK(raw.scalar("SELECT version FROM cairn_run_schema") == "7x");
  CHECK(raw.scalar("SELECT data FROM cairn_run_entries WHERE run_id = 'keep'") == "\"kept\"");
}

TEST_CASE("a file that is not a SQLite database is refused, and left as it was") {
  TempDir dir;
  const auto path = dir.file("notes.txt");
  const std::string content(5000, 'z');
  { std::ofstream(path) << content; }
  try {
    SqliteRunJournal journal(path);
    FAIL("no error");
  } catch (const storage_error& e) {
    CHECK_THAT(e.what(), cairn_test::ContainsSubstring("not a database"));
    CHECK_THAT(e.what(), cairn_test::ContainsSubstring(path));
  }
  CHECK(file_content(path) == content);
}

TEST_CASE("bad paths and options are clear errors") {
  CHECK_THROWS_AS(SqliteRunJournal(""), invalid_argument);
  CHECK_THROWS_AS(SqliteRunJournal(":memory:"), invalid_argument);
  CHECK_THROWS_AS(SqliteRunJournal("file::memory:?cache=shared"), invalid_argument);
  CHECK_THROWS_WITH(SqliteRunJournal(":memory:"), cairn_test::ContainsSubstring("InMemoryRunJournal"));
  try {
    SqliteRunJournal journal("/nonexistent-dir-cairn/x.db");
    FAIL("no error");
  } catch (const storage_error& e) {
    CHECK_THAT(e.what(), cairn_test::ContainsSubstring("sqlite journal '/nonexistent-dir-cairn/x.db'"));
    CHECK_THAT(e.what(), cairn_test::ContainsSubstring("cannot open"));
  }
  TempDir dir;
  CHECK_THROWS_AS(SqliteRunJournal(dir.path().string()), storage_error);  // a folder
  const auto fifo = dir.file("fifo");
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_AS(SqliteRunJournal(fifo), storage_error);  // refused, without waiting for a writer
  SqliteJournalOptions bad;
  bad.busy_timeout_ms = -1;
  CHECK_THROWS_WITH(SqliteRunJournal(dir.file("x.db"), bad), cairn_test::ContainsSubstring("busy_timeout_ms"));
}

TEST_CASE("data the journal could not read back the same is refused before anything is written") {
  TempDir dir;
  SqliteJournalOptions opts;
  opts.json_limits.max_depth = 10;
  opts.json_limits.max_bytes = 1000;
  SqliteRunJournal journal(dir.file("bad.db"), opts);
  (void)journal.append("t", "r", 0, one("a", "v1"));

  std::vector<JournalEntry> two = one("ok", 1);
  two.push_back(one("bad", std::string("\xff\xfe bad utf-8"))[0]);
  CHECK_THROWS_WITH(journal.append("t", "r", 1, two),
                    cairn_test::ContainsSubstring("entries[1].data: holds a string that is not valid UTF-8"));
  json deep = 1;
  for (int i = 0; i < 11; ++i) deep = json::array({deep});
  CHECK_THROWS_AS(journal.append("t", "r", 1, one("deep", deep)), limit_exceeded);
  CHECK_THROWS_WITH(journal.append("t", "r", 1, one("big", std::string(2000, 'x'))),
                    cairn_test::ContainsSubstring("entries[0].data: JSON text is 2002 bytes"));
  CHECK_THROWS_AS(journal.append("t", "r", 1, one("bin", json::binary({1, 2, 3}))), invalid_argument);
  CHECK_THROWS_AS(journal.append("t", "new", 0, one("bin", json::binary({1}))), invalid_argument);

  CHECK(journal.info("t", "r")->last_seq == 1);
  CHECK(!journal.info("t", "new"));
  CHECK(journal.read("t", "r").size() == 1);
  json ten = 1;
  for (int i = 0; i < 10; ++i) ten = json::array({ten});
  CHECK(journal.append("t", "r", 1, one("deep enough", ten)) == 2);  // no seq was used up by the failures
  CHECK(journal.read("t", "r", 2)[0].data == ten);
}

TEST_CASE("a file of run schema 1 is migrated: runs end and were updated where they did, and go on from there") {
  TempDir dir;
  const auto path = dir.file("v1.db");
  {
    RawDb raw(path);
    raw.exec(R"sql(
CREATE TABLE cairn_run_schema (version INTEGER NOT NULL);
INSERT INTO cairn_run_schema VALUES (1);
CREATE TABLE cairn_runs (tenant_id TEXT NOT NULL, run_id TEXT NOT NULL, last_seq INTEGER NOT NULL,
  kept_from INTEGER NOT NULL, forked_from TEXT, fork_seq INTEGER NOT NULL, created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL, PRIMARY KEY (tenant_id, run_id)) WITHOUT ROWID;
CREATE INDEX cairn_runs_forks ON cairn_runs (tenant_id, forked_from) WHERE forked_from IS NOT NULL;
CREATE TABLE cairn_run_entries (tenant_id TEXT NOT NULL, run_id TEXT NOT NULL, seq INTEGER NOT NULL,
  kind TEXT NOT NULL, data TEXT NOT NULL, time INTEGER NOT NULL, PRIMARY KEY (tenant_id, run_id, seq)) WITHOUT ROWID;
CREATE INDEX cairn_run_snapshots ON cairn_run_entries (tenant_id, run_id, seq) WHERE kind = 'snapshot';
INSERT INTO cairn_runs VALUES ('t', 'r', 2, 1, NULL, 0, 1000, 5000);
INSERT INTO cairn_runs VALUES ('t', 'f', 1, 1, 'r', 1, 6000, 6000);
INSERT INTO cairn_run_entries VALUES ('t', 'r', 1, 'a', '1', 1000), ('t', 'r', 2, 'b', '2', 123);
)sql");
  }
  SqliteRunJournal journal(path);
  const auto r = journal.info("t", "r");
  REQUIRE(r);
  CHECK(r->last_seq == 2);
  CHECK(r->created_at == 1000);
  CHECK(r->updated_at == 5000);  // the run's, not the entry's own time
  const auto f = journal.info("t", "f");
  REQUIRE(f);
  CHECK(f->last_seq == 1);
  CHECK(f->updated_at == 6000);
  CHECK(journal.read("t", "f").size() == 1);
  CHECK_THROWS_AS(journal.append("t", "r", 1, one("late", 3)), conflict);
  CHECK(journal.append("t", "r", 2, one("c", 3)) == 3);
  CHECK(journal.read("t", "r").back().data == 3);
  RawDb raw(path);
  CHECK(raw.scalar("SELECT version FROM cairn_run_schema") == "2");
  CHECK(raw.scalar("SELECT count(*) FROM pragma_table_info('cairn_runs') WHERE name IN ('last_seq', 'updated_at')") ==
        "0");
}

TEST_CASE("a damaged row is a storage_error naming the run and the seq, not a crash") {
  TempDir dir;
  const auto path = dir.file("damaged.db");
  SqliteRunJournal journal(path);
  (void)journal.append("t", "r", 0, one("a", 1));
  (void)journal.append("t", "r", 1, one("b", 2));
  (void)journal.append("t", "r", 2, one("c", 3));
  (void)journal.append("t", "other", 0, one("a", 1));
  {
    RawDb raw(path);
    raw.exec("UPDATE cairn_run_entries SET data = '{\"unterminated' WHERE run_id = 'r' AND seq = 2");
    raw.exec("UPDATE cairn_run_entries SET data = '" + std::string(300, '[') + std::string(300, ']') +
             "' WHERE run_id = 'r' AND seq = 3");
  }
  CHECK(journal.read("t", "r", 1, 1)[0].data == 1);
  CHECK_THROWS_AS(journal.read("t", "r"), storage_error);
  CHECK_THROWS_WITH(journal.read("t", "r", 2, 2), cairn_test::ContainsSubstring("run 'r' seq 2 in tenant 't'"));
  CHECK_THROWS_WITH(journal.read("t", "r", 2, 2), cairn_test::ContainsSubstring(path));
  CHECK_THROWS_WITH(journal.read("t", "r", 3, 3), cairn_test::ContainsSubstring("seq 3"));
  CHECK_THROWS_WITH(journal.read("t", "r", 3, 3), cairn_test::ContainsSubstring("nesting is deeper than the limit"));
  {
    RawDb raw(path);
    raw.exec("UPDATE cairn_run_entries SET data = x'00ff' WHERE run_id = 'r' AND seq = 1");
  }
  CHECK_THROWS_WITH(journal.read("t", "r", 1, 1), cairn_test::ContainsSubstring("seq 1"));
  // A damaged run row.
  {
    RawDb raw(path);
    raw.exec("UPDATE cairn_runs SET fork_seq = 'many' WHERE run_id = 'other'");
  }
  CHECK_THROWS_WITH(journal.info("t", "other"), cairn_test::ContainsSubstring("run 'other' in tenant 't' is damaged"));
  CHECK_THROWS_AS(journal.append("t", "other", 1, one("b", 2)), storage_error);
  {
    RawDb raw(path);
    raw.exec("UPDATE cairn_runs SET fork_seq = 7 WHERE run_id = 'other'");  // a fork point after its own entries
  }
  CHECK_THROWS_AS(journal.info("t", "other"), storage_error);
  {
    RawDb raw(path);
    raw.exec("UPDATE cairn_runs SET fork_seq = 0, kept_from = 0 WHERE run_id = 'other'");
  }
  CHECK_THROWS_AS(journal.info("t", "other"), storage_error);
  // Entries lost behind the journal's back are noticed.
  { RawDb(path).exec("UPDATE cairn_runs SET kept_from = 1 WHERE run_id = 'other'"); }
  (void)journal.append("t", "other", 1, one("more", 2));
  (void)journal.append("t", "other", 2, one("more", 3));
  { RawDb(path).exec("DELETE FROM cairn_run_entries WHERE run_id = 'other' AND seq = 2"); }
  CHECK_THROWS_WITH(journal.read("t", "other"), cairn_test::ContainsSubstring("should hold seq 1 to 3 but has 2"));
  // A damaged run can still be removed.
  journal.remove("t", "r");
  CHECK(!journal.info("t", "r"));
}

TEST_CASE("a writer that holds the lock longer than the busy timeout makes append fail cleanly") {
  TempDir dir;
  const auto path = dir.file("busy.db");
  SqliteJournalOptions opts;
  opts.busy_timeout_ms = 100;
  SqliteRunJournal journal(path, opts);
  (void)journal.append("t", "r", 0, one("a", 1));
  RawDb other(path);
  other.exec("BEGIN IMMEDIATE");
  CHECK_THROWS_WITH(journal.append("t", "r", 1, one("b", 2)), cairn_test::ContainsSubstring("locked"));
  CHECK(journal.read("t", "r").size() == 1);  // WAL: readers are not blocked by the writer
  other.exec("ROLLBACK");
  CHECK(journal.append("t", "r", 1, one("b", 2)) == 2);  // the failed append used nothing up
}

TEST_CASE("a fork checks its source again under the write lock: a source removed meanwhile is not_found") {
  TempDir dir;
  const auto path = dir.file("fork-race.db");
  auto clock = std::make_shared<HookClock>();
  SqliteJournalOptions opts;
  opts.clock = clock;
  SqliteRunJournal journal(path, opts);
  SqliteRunJournal other(path);
  (void)journal.append("t", "src", 0, one("a", 1));
  (void)journal.append("t", "src", 1, one(snapshot_kind, 2));
  (void)journal.append("t", "src", 2, one("c", 3));
  // Between fork()'s check of the source and its transaction, another process removes the source.
  clock->hook = [&] { other.remove("t", "src"); };
  CHECK_THROWS_AS(journal.fork("t", "src", 1, "child"), not_found);
  CHECK(!journal.info("t", "child"));
  // ... or prunes below the fork point.
  (void)journal.append("t", "src", 0, one("a", 1));
  (void)journal.append("t", "src", 1, one(snapshot_kind, 2));
  (void)journal.append("t", "src", 2, one("c", 3));
  clock->hook = [&] { CHECK(other.prune("t", "src") == 1); };
  CHECK_THROWS_WITH(journal.fork("t", "src", 1, "child"), cairn_test::ContainsSubstring("cannot fork at 1"));
  CHECK(!journal.info("t", "child"));
  journal.fork("t", "src", 2, "child");
  CHECK(journal.read_for_restore("t", "child").back().data == 2);
}

// THE race of issue 14: two processes with four threads each race appends on the same two runs; every attempt
// reads the run's end and appends after it. Synchronous NORMAL keeps the fsyncs (not what is tested) down.
TEST_CASE("threads of two processes racing appends on the same runs never fork or lose an entry") {
  constexpr int processes = 2;
  constexpr int threads = 4;
  constexpr int attempts = 300;
  constexpr int runs = 2;
  TempDir dir;
  const auto path = dir.file("race.db");
  { SqliteRunJournal created(path, normal_sync()); }  // migrated before the race; no connection crosses fork()

  // Each acknowledged append as "run seq process thread attempt"; "bad ..." for a wrong answer.
  auto race = [&](int proc) {
    SqliteRunJournal journal(path, normal_sync());
    std::vector<std::vector<std::string>> lines(threads);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        auto& mine = lines[static_cast<std::size_t>(t)];
        for (int k = 0; k < attempts; ++k) {
          const std::string run = "shared-" + std::to_string(k % runs);
          try {
            const auto info = journal.info("race", run);
            const std::uint64_t last = info ? info->last_seq : 0;
            std::this_thread::yield();  // widens the window between reading the end and appending after it
            try {
              const auto seq = journal.append("race", run, last, one("step", {{"p", proc}, {"t", t}, {"k", k}}));
              mine.push_back(fmt::format("{} {} {} {} {}", run, seq, proc, t, k));
              if (seq != last + 1) mine.push_back("bad seq");
            } catch (const conflict& c) {
              if (c.expected() != last || c.actual() <= last) mine.push_back("bad conflict");
            }
          } catch (const std::exception& e) {
            mine.push_back(std::string("bad error: ") + e.what());
          }
        }
      });
    }
    for (auto& th : pool) th.join();
    std::vector<std::string> all;
    for (auto& l : lines) all.insert(all.end(), l.begin(), l.end());
    return all;
  };

  std::vector<pid_t> children;
  for (int p = 1; p < processes; ++p) {
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      int code = 0;
      try {
        std::ofstream out(dir.file("acks-" + std::to_string(p)));
        for (const auto& line : race(p)) out << line << '\n';
        out.close();
        if (!out) code = 1;
      } catch (...) {
        code = 1;
      }
      _exit(code);
    }
    children.push_back(child);
  }
  auto acks = race(0);
  for (std::size_t i = 0; i < children.size(); ++i) {
    int status = 0;
    REQUIRE(waitpid(children[i], &status, 0) == children[i]);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    std::ifstream in(dir.file("acks-" + std::to_string(i + 1)));
    for (std::string line; std::getline(in, line);) acks.push_back(line);
  }

  std::vector<std::string> bad;
  std::map<std::string, std::map<std::uint64_t, std::tuple<int, int, int>>> won;  // run -> seq -> writer
  std::size_t ack_count = 0;
  for (const auto& line : acks) {
    if (line.rfind("bad", 0) == 0) {
      bad.push_back(line);
      continue;
    }
    std::istringstream in(line);
    std::string run;
    std::uint64_t seq = 0;
    int p = 0, t = 0, k = 0;
    in >> run >> seq >> p >> t >> k;
    ++ack_count;
    if (!won[run].emplace(seq, std::make_tuple(p, t, k)).second) bad.push_back("seq acknowledged twice: " + line);
  }
  CAPTURE(bad.size());
  CHECK(bad.empty());
  for (std::size_t i = 0; i < bad.size() && i < 5; ++i) WARN(bad[i]);

  SqliteRunJournal journal(path);
  std::size_t stored_count = 0;
  std::set<int> winners;
  for (int r = 0; r < runs; ++r) {
    const std::string run = "shared-" + std::to_string(r);
    const auto entries = journal.read("race", run);
    stored_count += entries.size();
    INFO(run);
    REQUIRE(entries.size() == won[run].size());  // nothing lost, nothing written that was not acknowledged
    std::set<std::tuple<int, int, int>> seen;
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const auto& e = entries[i];
      REQUIRE(e.seq == i + 1);  // 1..n, consecutive
      const auto writer = std::make_tuple(e.data["p"].get<int>(), e.data["t"].get<int>(), e.data["k"].get<int>());
      CHECK(seen.insert(writer).second);  // no attempt twice
      CHECK(won[run][e.seq] == writer);   // at the seq its writer was told
      winners.insert(std::get<0>(writer));
    }
  }
  CHECK(stored_count == ack_count);
  CHECK(winners.size() == static_cast<std::size_t>(processes));  // both processes won races
  WARN("race: " << processes * threads * attempts << " attempts, " << ack_count << " appends won, "
                << processes * threads * attempts - static_cast<int>(ack_count) << " conflicts");
}

// Issue 25: the conformance suite's fork/prune race, with two journal objects on one file (two connections), and
// with two processes.
TEST_CASE("a fork racing a prune from two journals on one file leaves a readable fork or a clear refusal") {
  TempDir dir;
  const auto path = dir.file("fork-prune.db");
  SqliteRunJournal a(path, normal_sync());
  SqliteRunJournal b(path, normal_sync());
  const int rounds = testing::ForkPruneRace::rounds();
  int forks_made = 0;
  CHECK_NOTHROW(forks_made = testing::race_fork_and_prune(a, b, rounds, "t"));
  WARN("fork/prune race, two journals: the fork won " << forks_made << " of " << rounds << " rounds");
}

TEST_CASE("a fork racing a prune from two processes leaves a readable fork or a clear refusal") {
  TempDir dir;
  const auto path = dir.file("fork-prune-processes.db");
  { SqliteRunJournal created(path, normal_sync()); }  // migrated before the race; no connection crosses fork()
  const int rounds = testing::ForkPruneRace::rounds();
  const int forks_made = store_test::check_fork_prune_race_across_processes(
      [&] { return std::make_unique<SqliteRunJournal>(path, normal_sync()); }, "t", rounds);
  WARN("fork/prune race, two processes: the fork won " << forks_made << " of " << rounds << " rounds");
}

TEST_CASE("the checkpoint thread copies the WAL into the database file, without a commit at the limit") {
  TempDir dir;
  const std::string path = dir.file("thread-checkpoints.db");
  SqliteJournalOptions o = normal_sync();
  o.checkpoint_pages = 16;
  o.checkpoint_limit_factor = 100000;  // no commit reaches the limit: only the thread can copy pages
  SqliteRunJournal journal(path, o);
  const auto db_size = [&] { return std::filesystem::file_size(path); };
  const auto size_before = db_size();
  std::uint64_t seq = 0;
  const std::string text(1000, 'x');
  for (int i = 0; i < 40; ++i) seq = journal.append("t", "r", seq, one("context.message", {{"n", i}, {"text", text}}));
  // The thread's connection must have opened the WAL before its checkpoints copy anything (a fresh connection's
  // checkpoint returns at once with nothing copied and no error): before that fix the file stayed at its first page.
  bool copied = false;
  for (int i = 0; i < 1000 && !copied; ++i) {
    copied = db_size() > size_before;
    if (!copied) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(copied);
  CHECK(journal.read("t", "r", 1).size() == 40);
}

TEST_CASE("WAL checkpoints run on the journal's own thread, and a WAL that never pauses still starts over") {
  TempDir dir;
  const std::string path = dir.file("checkpoints.db");
  SqliteJournalOptions o = normal_sync();
  o.checkpoint_pages = 16;  // SQLite's own automatic checkpoint would wait for 1000
  o.checkpoint_limit_factor = 4;
  SqliteRunJournal journal(path, o);
  const auto wal_size = [&] { return std::filesystem::file_size(path + "-wal"); };
  // ~1 KB per entry, one commit each: the WAL passes 16 pages quickly, far from SQLite's 1000.
  std::uint64_t seq = 0;
  const std::string text(1000, 'x');
  for (int i = 0; i < 40; ++i) seq = journal.append("t", "r", seq, one("context.message", {{"n", i}, {"text", text}}));
  SECTION(
      "commits without a pause: the WAL stays bounded (the commit at the limit checkpoints, the WAL starts "
      "over), and every entry reads back") {
    for (int i = 40; i < 2000; ++i) {
      seq = journal.append("t", "r", seq, one("context.message", {{"n", i}, {"text", text}}));
    }
    // At most the limit (4 x 16 pages) plus the commits between a checkpoint and the next start of the WAL (71
    // pages here; before the commit at the limit waited for a running checkpoint of the thread's, the two met and
    // the WAL grew to 280-570 pages; before it also waited for the thread's first read, a thread descheduled in
    // that read held a snapshot no checkpoint could copy past, and on a loaded machine about one run in 90 grew
    // the WAL to 150-510 pages).
    CHECK(wal_size() <= 96 * (4096 + 24) + 32);
    const auto entries = journal.read("t", "r", 1);
    REQUIRE(entries.size() == 2000);
    for (int i = 0; i < 2000; ++i) CHECK(entries[static_cast<std::size_t>(i)].data.at("n") == i);
    RawDb raw(path);
    CHECK(raw.scalar("PRAGMA wal_autocheckpoint") == "1000");  // a connection of the host's own is untouched
  }
}
