#include "cairn/store/sqlite_store.hpp"
#include "cairn/artifact/search/pipeline.hpp"
#include "cairn/store/sqlite_journal.hpp"

#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <utility>

#include "../../src/common/record_cache.hpp"
#include "cairn/artifact/memory_store.hpp"
#include "cairn/testing/store_conformance.hpp"
#include "catch.hpp"
#include "store_test_support.hpp"

using namespace cairn;
using nlohmann::json;
using store_test::random_query;
using store_test::random_record;
using store_test::random_vector;
using store_test::random_words;
using store_test::search_vocabulary;
using store_test::TempDir;

namespace {

// A raw connection, for looking at (and tampering with) the file behind the store's back.
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
  std::string scalar(const std::string& sql) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) throw std::runtime_error(sql);
    std::string out;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0)) {
      out = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
    return out;
  }

 private:
  sqlite3* db_ = nullptr;
};

// A file as cairn's schema version 1 (before search) wrote it, with three records in two tenants.
constexpr const char* version1_file = R"sql(
CREATE TABLE cairn_schema (version INTEGER NOT NULL);
INSERT INTO cairn_schema VALUES (1);
CREATE TABLE cairn_artifacts (tenant_id TEXT NOT NULL, id TEXT NOT NULL, version INTEGER NOT NULL,
  type TEXT NOT NULL, title TEXT NOT NULL, description TEXT NOT NULL, purpose TEXT NOT NULL, value TEXT,
  storage_url TEXT, mime_type TEXT, size_bytes INTEGER, schema_url TEXT, created_by TEXT,
  created_at INTEGER NOT NULL, metadata TEXT NOT NULL, PRIMARY KEY (tenant_id, id, version)) WITHOUT ROWID;
CREATE TABLE cairn_heads (tenant_id TEXT NOT NULL, id TEXT NOT NULL, latest INTEGER NOT NULL, type TEXT NOT NULL,
  created_by TEXT, PRIMARY KEY (tenant_id, id)) WITHOUT ROWID;
INSERT INTO cairn_artifacts VALUES ('t', 'a', 1, 'document', 'old apple', '', '', '"pie"', NULL, NULL, NULL,
  NULL, NULL, 1700000000000, '{}');
INSERT INTO cairn_artifacts VALUES ('t', 'a', 2, 'document', 'new apple', '', '', '{"k": "tart"}', NULL, NULL,
  NULL, NULL, NULL, 1700000000001, '{}');
INSERT INTO cairn_heads VALUES ('t', 'a', 2, 'document', NULL);
INSERT INTO cairn_artifacts VALUES ('u', 'b', 1, 'document', 'apple', '', '', '1', NULL, NULL, NULL, NULL, NULL,
  1700000000002, '{}');
INSERT INTO cairn_heads VALUES ('u', 'b', 1, 'document', NULL);
)sql";

ArtifactPtr note(const std::string& tenant, const std::string& id, json value) {
  return ArtifactRecord::builder()
      .tenant_id(tenant)
      .id(id)
      .type("document")
      .title("note " + id)
      .value(std::move(value))
      .build();
}

}  // namespace

TEST_CASE("SqliteArtifactStore passes the conformance suite, each check on a new file") {
  TempDir dir;
  int n = 0;
  for (const auto& check : testing::store_conformance_checks()) {
    INFO(check.name);
    SqliteArtifactStore store(dir.file("conformance-" + std::to_string(n++) + ".db"));
    CHECK_NOTHROW(check.run(store));
  }
}

TEST_CASE("SqliteArtifactStore passes the conformance suite on one file that keeps growing, reopened each time") {
  TempDir dir;
  for (const auto& check : testing::store_conformance_checks()) {
    INFO(check.name);
    SqliteArtifactStore store(dir.file("shared.db"), SqliteOptions{10000, 3, SqliteOptions::Synchronous::normal, {}});
    CHECK_NOTHROW(check.run(store));
  }
}

TEST_CASE("records survive a reopen bit for bit") {
  TempDir dir;
  const auto path = dir.file("reopen.db");
  std::vector<ArtifactPtr> stored;
  {
    SqliteArtifactStore store(path);
    for (const auto& r : store_test::tricky_records("t1")) stored.push_back(store.store(*r));
  }
  SqliteArtifactStore store(path);
  for (const auto& s : stored) {
    auto f = store.fetch(s->id(), "t1", s->version());
    REQUIRE(f != nullptr);
    store_test::require_identical(*f, *s);
  }
  // The latest of each id, and the history of the id with many versions.
  CHECK(store.versions("scalars", "t1") == std::vector<std::uint64_t>{1, 2, 3, 4, 5});
  store_test::require_identical(*store.fetch("scalars", "t1"), *stored.back());
  auto page = store.list("t1");
  REQUIRE(page.items.size() == 4);
  CHECK(page.items[0]->id() == "plain");
  CHECK(page.items[1]->id() == "scalars");
  CHECK(page.items[2]->id() == "tricky/äöü 1");
  CHECK(page.items[3]->id() == "url-only");
  // The input's created_at is kept as given; an unset one was stamped once and stays the same after reopening.
  CHECK(store.fetch("tricky/äöü 1", "t1")->created_at() == 1700000000123);
}

TEST_CASE("a new file gets the current schema version, a host's own tables are left alone") {
  TempDir dir;
  const auto path = dir.file("schema.db");
  {
    RawDb raw(path);
    raw.exec("CREATE TABLE host_things (x TEXT); INSERT INTO host_things VALUES ('mine')");
  }
  {
    SqliteArtifactStore store(path);
    (void)store.store(*note("t", "a", 1));
  }
  RawDb raw(path);
  CHECK(raw.scalar("SELECT version FROM cairn_schema") == std::to_string(SqliteArtifactStore::schema_version));
  CHECK(raw.scalar("SELECT count(*) FROM cairn_schema") == "1");
  CHECK(raw.scalar("SELECT x FROM host_things") == "mine");
  CHECK(raw.scalar("PRAGMA journal_mode") == "wal");
  CHECK(raw.scalar("SELECT count(*) FROM cairn_artifacts") == "1");
}

TEST_CASE("a file of a newer cairn is refused, and left as it was") {
  TempDir dir;
  const auto path = dir.file("newer.db");
  {
    SqliteArtifactStore store(path);
    (void)store.store(*note("t", "keep", "kept"));
  }
  {
    RawDb raw(path);
    raw.exec("UPDATE cairn_schema SET version = 999");
  }
  try {
    SqliteArtifactStore store(path);
    FAIL("opening a newer file did not throw");
  } catch (const storage_error& e) {
    CHECK_THAT(e.what(), cairn_test::ContainsSubstring("schema version 999"));
    CHECK_THAT(e.what(), cairn_test::ContainsSubstring("newer"));
    CHECK_THAT(e.what(), cairn_test::ContainsSubstring(path));
  }
  RawDb raw(path);
  CHECK(raw.scalar("SELECT version FROM cairn_schema") == "999");
  CHECK(raw.scalar("SELECT value FROM cairn_artifacts WHERE id = 'keep'") == "\"kept\"");
}

TEST_CASE("a file whose schema version is not a number is refused, and left as it was") {
  TempDir dir;
  const auto path = dir.file("edited.db");
  {
    SqliteArtifactStore store(path);
    (void)store.store(*note("t", "keep", "kept"));
  }
  for (const std::string bad : {"'two'", "-3", "99999999999999999999", "'7x'"}) {
    {
      RawDb raw(path);
      raw.exec("UPDATE cairn_schema SET version = " + bad);
    }
    try {
      SqliteArtifactStore store(path);
      FAIL("opening a file with schema version " << bad << " did not throw");
    } catch (const storage_error& e) {
      CHECK_THAT(e.what(), cairn_test::ContainsSubstring("is not a schema version"));
      CHECK_THAT(e.what(), cairn_test::ContainsSubstring(path));
    }
  }
  RawDb raw(path);
  CHECK(raw.scalar("SELECT version FROM cairn_schema") == "7x");
  CHECK(raw.scalar("SELECT value FROM cairn_artifacts WHERE id = 'keep'") == "\"kept\"");
}

TEST_CASE("a file that is not a SQLite database is refused, and left as it was") {
  TempDir dir;
  const auto path = dir.file("notes.txt");
  const std::string content(5000, 'z');
  { std::ofstream(path) << content; }
  CHECK_THROWS_AS(SqliteArtifactStore(path), storage_error);
  try {
    SqliteArtifactStore store(path);
  } catch (const storage_error& e) {
    CHECK(e.code() == errc::storage_error);  // what a host branches on, without reading the message
    CHECK_THAT(e.what(), cairn_test::ContainsSubstring("not a database"));
    CHECK_THAT(e.what(), cairn_test::ContainsSubstring(path));
  }
  std::ifstream in(path);
  std::string back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(back == content);
}

TEST_CASE("bad paths and options are clear errors") {
  CHECK_THROWS_AS(SqliteArtifactStore(""), invalid_argument);
  CHECK_THROWS_AS(SqliteArtifactStore(":memory:"), invalid_argument);
  CHECK_THROWS_WITH(SqliteArtifactStore(":memory:"), cairn_test::ContainsSubstring("InMemoryArtifactStore"));
  try {
    SqliteArtifactStore store("/nonexistent-dir-cairn/x.db");
    FAIL("no error");
  } catch (const storage_error& e) {
    CHECK_THAT(e.what(), cairn_test::ContainsSubstring("/nonexistent-dir-cairn/x.db"));
    CHECK_THAT(e.what(), cairn_test::ContainsSubstring("cannot open"));
  }
  TempDir dir;
  SqliteOptions bad;
  bad.busy_timeout_ms = -1;
  CHECK_THROWS_AS(SqliteArtifactStore(dir.file("x.db"), bad), invalid_argument);
}

TEST_CASE("bad values are refused before anything is written") {
  TempDir dir;
  SqliteOptions opts;
  opts.json_limits.max_depth = 10;
  opts.json_limits.max_bytes = 1000;
  SqliteArtifactStore store(dir.file("bad.db"), opts);
  (void)store.store(*note("t", "doc", "v1"));

  CHECK_THROWS_WITH(store.store(*note("t", "doc", std::string("\xff\xfe bad utf-8"))),
                    cairn_test::ContainsSubstring("value: holds a string that is not valid UTF-8"));
  json deep = 1;
  for (int i = 0; i < 11; ++i) deep = json::array({deep});
  CHECK_THROWS_AS(store.store(*note("t", "doc", deep)), limit_exceeded);
  CHECK_THROWS_WITH(store.store(*note("t", "doc", std::string(2000, 'x'))),
                    cairn_test::ContainsSubstring("value: JSON text is 2002 bytes"));
  // Invalid UTF-8 and non-finite numbers never reach the store: the builder refuses them (record_test.cpp).
  CHECK_THROWS_WITH(ArtifactRecord::builder()
                        .tenant_id("t")
                        .id("doc")
                        .type("data")
                        .title("x")
                        .value(1)
                        .metadata({{"k", std::string("\xc3\x28")}})
                        .build(),
                    cairn_test::ContainsSubstring("metadata"));

  CHECK(store.versions("doc", "t") == std::vector<std::uint64_t>{1});
  CHECK(store.fetch("doc", "t")->value() == "v1");
  CHECK(store.store(*note("t", "doc", "v2"))->version() == 2);  // no version was used up by the failures
}

TEST_CASE("a damaged row is a storage_error naming the artifact, not a crash") {
  TempDir dir;
  const auto path = dir.file("damaged.db");
  SqliteArtifactStore store(path);
  (void)store.store(*note("t", "ok", 1));
  (void)store.store(*note("t", "broken", 2));
  (void)store.store(*note("t", "badtype", 3));
  {
    RawDb raw(path);
    raw.exec("UPDATE cairn_artifacts SET value = '{\"unterminated' WHERE id = 'broken'");
    raw.exec("UPDATE cairn_artifacts SET type = 'Not A Type' WHERE id = 'badtype'");
  }
  CHECK(store.fetch("ok", "t")->value() == 1);
  // Brackets and escaped quotes inside strings are not nesting; real nesting beyond the limit is refused on read.
  const json tricky = {{"s", std::string(600, '[') + "\\\"{{{" + std::string(600, '{')}, {"a", json::array({"]}"})}};
  (void)store.store(*note("t", "brackets", tricky));
  CHECK(store.fetch("brackets", "t")->value() == tricky);
  (void)store.store(*note("t", "deep", 1));
  {
    RawDb raw(path);
    raw.exec("UPDATE cairn_artifacts SET value = '" + std::string(300, '[') + std::string(300, ']') +
             "' WHERE id = 'deep'");
  }
  CHECK_THROWS_WITH(store.fetch("deep", "t"), cairn_test::ContainsSubstring("nesting is deeper than the limit"));
  CHECK_THROWS_AS(store.fetch("broken", "t"), storage_error);
  CHECK_THROWS_WITH(store.fetch("broken", "t"), cairn_test::ContainsSubstring("artifact 'broken' version 1"));
  CHECK_THROWS_WITH(store.fetch("badtype", "t"), cairn_test::ContainsSubstring("type"));
  // The listing skips what it cannot read and says so; it never fails because of one row.
  const auto page = store.list("t");
  CHECK(page.unreadable == std::vector<std::string>{"badtype", "broken", "deep"});
  CHECK(page.items.size() == 2);
  CHECK(store.versions("broken", "t") == std::vector<std::uint64_t>{1});
  store.remove("broken", "t");  // a damaged artifact can still be removed
  CHECK(store.fetch("broken", "t") == nullptr);
}

TEST_CASE("one unreadable row never makes a tenant unlistable") {
  // A value stored as JSON null without a storage_url (what an older cairn wrote for a top-level NaN), and a
  // title that is not UTF-8 (which an older cairn took): neither makes a record any more.
  TempDir dir;
  const auto path = dir.file("unreadable.db");
  SqliteArtifactStore store(path);
  for (const char* id : {"a", "b-nan", "c", "d-utf8", "e"}) (void)store.store(*note("t", id, id));
  (void)store.store(*note("other", "x", 1));
  {
    RawDb raw(path);
    raw.exec("UPDATE cairn_artifacts SET value = 'null', storage_url = NULL WHERE id = 'b-nan'");
    raw.exec("UPDATE cairn_artifacts SET title = CAST(X'636166C3' AS TEXT) WHERE id = 'd-utf8'");
  }
  CHECK_THROWS_WITH(store.fetch("b-nan", "t"), cairn_test::ContainsSubstring("artifact 'b-nan' version 1"));
  CHECK_THROWS_WITH(store.fetch("d-utf8", "t"), cairn_test::ContainsSubstring("title: is not valid UTF-8"));
  auto page = store.list("t");
  CHECK(testing::detail::ids_of(page) == std::vector<std::string>{"a", "c", "e"});
  CHECK(page.unreadable == std::vector<std::string>{"b-nan", "d-utf8"});
  CHECK_FALSE(page.next_cursor);
  // Paging walks over them: every id is seen once, readable or not, and the cursor may be an unreadable id.
  ListQuery q;
  q.limit = 2;
  std::vector<std::string> seen;
  for (int pages = 0; pages < 10; ++pages) {
    const auto p = store.list("t", q);
    for (const auto& r : p.items) seen.push_back(r->id());
    for (const auto& id : p.unreadable) seen.push_back("!" + id);
    if (!p.next_cursor) break;
    q.cursor = *p.next_cursor;
  }
  std::sort(seen.begin(), seen.end());
  CHECK(seen == std::vector<std::string>{"!b-nan", "!d-utf8", "a", "c", "e"});
  // Removing them cleans the tenant up; other tenants never noticed.
  store.remove("b-nan", "t");
  store.remove("d-utf8", "t");
  CHECK(store.list("t").unreadable.empty());
  CHECK(store.list("other").items.size() == 1);
}

TEST_CASE("a text value is read back exactly as nlohmann's parser reads its column, valid or not") {
  // A value that is one JSON string takes a shorter way than the parser when it needs no decoding: every column text
  // must still come back as the parser would read it, or be unreadable where the parser refuses it.
  TempDir dir;
  const auto path = dir.file("strings.db");
  SqliteArtifactStore store(path);
  for (const std::string v : {"plain words", "", "quote \" inside", "back\\slash", "new\nline", "tab\tand\x01",
                              "Grüße, 世界 🙂", "\x7f del"}) {
    (void)store.store(*note("t", "s", v));
    CHECK(store.fetch("s", "t")->value() == v);
  }
  std::mt19937 rng(7);
  const std::vector<std::string> pieces = {"a",
                                           " ",
                                           "\\\"",
                                           "\\n",
                                           "\\u00e9",
                                           "\\",
                                           "\"",
                                           "\x01",
                                           "\x7f",
                                           "\xc3\xa9",
                                           "\xc3",
                                           "\xa9",
                                           "\xc0\xaf",
                                           "\xff",
                                           "\xe0\x80\x80",
                                           "\xed\xa0\x80",
                                           "\xe2\x82\xac",
                                           "\xf0\x9f\x99\x82",
                                           "\xf4\x90\x80\x80",
                                           "\xf0\x8f\xbf\xbf",
                                           "\xf4\x8f\xbf\xbf"};
  for (int round = 0; round < 400; ++round) {
    std::string text = "\"";
    const std::size_t n = rng() % 6;
    for (std::size_t i = 0; i < n; ++i) text += pieces[rng() % pieces.size()];
    if (rng() % 8 != 0) text += "\"";
    std::optional<json> want;
    try {
      want = json::parse(text);
    } catch (const json::parse_error&) {
    }
    {
      sqlite3* db = nullptr;
      REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
      sqlite3_stmt* st = nullptr;
      REQUIRE(sqlite3_prepare_v2(db, "UPDATE cairn_artifacts SET value = ?1 WHERE id = 's'", -1, &st, nullptr) ==
              SQLITE_OK);
      sqlite3_bind_text(st, 1, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
      CHECK(sqlite3_step(st) == SQLITE_DONE);
      sqlite3_finalize(st);
      sqlite3_close(db);
    }
    INFO("column text " << json(json::binary_t(std::vector<std::uint8_t>(text.begin(), text.end()))).dump());
    if (want) {
      const auto r = store.fetch("s", "t");
      REQUIRE(r);
      CHECK(r->value() == *want);
    } else {
      CHECK_THROWS_AS(store.fetch("s", "t"), storage_error);
    }
  }
}

TEST_CASE("a writer that holds the lock longer than the busy timeout makes store fail cleanly") {
  TempDir dir;
  const auto path = dir.file("busy.db");
  SqliteOptions opts;
  opts.busy_timeout_ms = 100;
  SqliteArtifactStore store(path, opts);
  (void)store.store(*note("t", "x", 1));
  RawDb other(path);
  other.exec("BEGIN IMMEDIATE");
  CHECK_THROWS_WITH(store.store(*note("t", "x", 2)), cairn_test::ContainsSubstring("locked"));
  CHECK(store.fetch("x", "t")->value() == 1);  // WAL: readers are not blocked by the writer
  other.exec("ROLLBACK");
  CHECK(store.store(*note("t", "x", 3))->version() == 2);
}

TEST_CASE("list: prefixes are byte ranges, not LIKE patterns") {
  TempDir dir;
  SqliteArtifactStore store(dir.file("list.db"));
  for (const std::string& id : std::vector<std::string>{"a%b", "a_b", "aXb", "a\\b", "ab", "b", "\xf4\x8f\xbf\xbf",
                                                        "\xf4\x8f\xbf\xbf"
                                                        "a",
                                                        "\xc3\xa9t\xc3\xa9", "\xc3\xa9z"}) {
    (void)store.store(*note("t", id, 1));
  }
  auto ids = [&](const ListQuery& q) {
    std::vector<std::string> out;
    for (const auto& r : store.list("t", q).items) out.push_back(r->id());
    return out;
  };
  CHECK(ids({"a%", {}, {}, 100, ""}) == std::vector<std::string>{"a%b"});
  CHECK(ids({"a_", {}, {}, 100, ""}) == std::vector<std::string>{"a_b"});
  CHECK(ids({"a\\", {}, {}, 100, ""}) == std::vector<std::string>{"a\\b"});
  CHECK(ids({"a", {}, {}, 100, ""}) == std::vector<std::string>{"a%b", "aXb", "a\\b", "a_b", "ab"});
  // Ids are valid UTF-8 (the builder refuses anything else): U+10FFFF is the highest, and a prefix of 0xFF bytes
  // (no upper bound) matches nothing.
  CHECK(ids({"\xf4\x8f\xbf\xbf", {}, {}, 100, ""}) == std::vector<std::string>{"\xf4\x8f\xbf\xbf",
                                                                               "\xf4\x8f\xbf\xbf"
                                                                               "a"});
  CHECK(ids({std::string("\xff\xff", 2), {}, {}, 100, ""}).empty());
  CHECK(ids({"\xc3\xa9", {}, {}, 100, ""}) == std::vector<std::string>{"\xc3\xa9t\xc3\xa9", "\xc3\xa9z"});
  // A cursor before the prefix starts at the prefix; one after it ends the listing.
  CHECK(ids({"b", {}, {}, 100, "a"}) == std::vector<std::string>{"b"});
  CHECK(ids({"a", {}, {}, 100, "zz"}).empty());
  CHECK(ids({"", {}, {}, 2, "a_b"}) == std::vector<std::string>{"ab", "b"});
}

TEST_CASE("list pages through a tenant of many artifacts exactly once each") {
  TempDir dir;
  SqliteArtifactStore store(dir.file("pages.db"));
  std::set<std::string> expected;
  for (int i = 0; i < 250; ++i) {
    const std::string id = "item-" + std::to_string(i * 7919 % 1000);
    (void)store.store(*note("t", id, i));
    expected.insert(id);
    if (i % 3 == 0) (void)store.store(*note("other", id, i));
  }
  std::vector<std::string> seen;
  ListQuery q;
  q.limit = 17;
  for (;;) {
    auto page = store.list("t", q);
    for (const auto& r : page.items) seen.push_back(r->id());
    if (!page.next_cursor) break;
    q.cursor = *page.next_cursor;
  }
  CHECK(seen == std::vector<std::string>(expected.begin(), expected.end()));
}

TEST_CASE("tenant isolation holds call by call") {
  TempDir dir;
  SqliteArtifactStore store(dir.file("tenants.db"));
  store_test::check_tenant_isolation(store);
}

TEST_CASE("threads of two processes storing versions of the same ids get distinct consecutive versions") {
  TempDir dir;
  const auto path = dir.file("race.db");
  { SqliteArtifactStore init(path); }
  constexpr int threads = 4;
  constexpr int per_thread = 40;
  const std::vector<std::string> ids = {"shared-a", "shared-b"};

  // Each process runs the same writers; a child reports through its exit code and a file of versions.
  auto run_writers = [&](const std::string& who) {
    SqliteArtifactStore store(path, SqliteOptions{30000, threads, SqliteOptions::Synchronous::normal, {}});
    std::vector<std::vector<std::pair<std::string, std::uint64_t>>> got(threads);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        for (int k = 0; k < per_thread; ++k) {
          const auto& id = ids[static_cast<std::size_t>(k) % ids.size()];
          got[t].emplace_back(id, store.store(*note("t", id, json{{"who", who}, {"thread", t}, {"k", k}}))->version());
        }
      });
    }
    for (auto& th : pool) th.join();
    std::vector<std::pair<std::string, std::uint64_t>> all;
    for (auto& g : got) all.insert(all.end(), g.begin(), g.end());
    return all;
  };

  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    int code = 0;
    try {
      auto mine = run_writers("child");
      std::ofstream out(dir.file("child.txt"));
      for (const auto& [id, v] : mine) out << id << ' ' << v << '\n';
    } catch (...) {
      code = 1;
    }
    _exit(code);
  }
  auto mine = run_writers("parent");
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  std::ifstream in(dir.file("child.txt"));
  std::string id;
  std::uint64_t v;
  while (in >> id >> v) mine.emplace_back(id, v);
  REQUIRE(mine.size() == 2 * threads * per_thread);

  SqliteArtifactStore store(path);
  for (const auto& name : ids) {
    std::vector<std::uint64_t> acknowledged;
    for (const auto& [i, ver] : mine) {
      if (i == name) acknowledged.push_back(ver);
    }
    std::sort(acknowledged.begin(), acknowledged.end());
    std::vector<std::uint64_t> consecutive(acknowledged.size());
    for (std::size_t k = 0; k < consecutive.size(); ++k) consecutive[k] = k + 1;
    CHECK(acknowledged == consecutive);               // distinct, 1..n, none missing
    CHECK(store.versions(name, "t") == consecutive);  // and every one of them is in the file
  }
  // Both processes' writes are there.
  std::set<std::string> writers;
  for (auto ver : store.versions("shared-a", "t"))
    writers.insert(store.fetch("shared-a", "t", ver)->value()["who"].get<std::string>());
  CHECK(writers == std::set<std::string>{"child", "parent"});
}

TEST_CASE("processes opening one file at the same moment all open it, new or from before search, store and journal") {
  // What two cairn-mcp servers started together on one new `sqlite:` file do: each switches the file to WAL and
  // creates its tables. Both open the file (a shared lock) before they ask for the exclusive one the switch needs,
  // and SQLite answers one of them "database is locked" at once, without its busy handler; that process must wait
  // and try again, not fail. Children start together on a pipe that the parent closes.
  TempDir dir;
  constexpr int rounds = 12;
  constexpr int children = 4;
  for (int round = 0; round < rounds; ++round) {
    // Odd rounds: a file of cairn before search, which each opener also migrates and indexes the words of.
    const bool old_file = round % 2 == 1;
    INFO("round " << round << (old_file ? ", a file from before search" : ", a new file"));
    const auto path = dir.file(fmt::format("new-{}.db", round));
    if (old_file) RawDb(path).exec(version1_file);
    int start[2];
    REQUIRE(pipe(start) == 0);
    std::vector<pid_t> pids;
    for (int c = 0; c < children; ++c) {
      const pid_t child = fork();
      REQUIRE(child >= 0);
      if (child == 0) {
        close(start[1]);
        char byte = 0;
        (void)!read(start[0], &byte, 1);  // returns when the parent closes its end
        int code = 0;
        try {
          if (c % 2 == 0) {
            SqliteArtifactStore store(path);
            (void)store.store(*note("t", fmt::format("from-{}", c), c));
          } else {
            SqliteRunJournal journal(path);
            (void)journal.append("t", fmt::format("run-{}", c), 0, {JournalEntry{0, "child", json{{"child", c}}, 0}});
          }
        } catch (const std::exception& e) {
          std::ofstream(dir.file(fmt::format("error-{}-{}.txt", round, c))) << e.what();
          code = 1;
        }
        _exit(code);
      }
      pids.push_back(child);
    }
    close(start[0]);
    close(start[1]);
    for (int c = 0; c < children; ++c) {
      int status = 0;
      REQUIRE(waitpid(pids[static_cast<std::size_t>(c)], &status, 0) == pids[static_cast<std::size_t>(c)]);
      std::ifstream error(dir.file(fmt::format("error-{}-{}.txt", round, c)));
      const std::string message((std::istreambuf_iterator<char>(error)), std::istreambuf_iterator<char>());
      INFO("child " << c << ": " << message);
      CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    }
    // Everything every child wrote is in the file.
    SqliteArtifactStore store(path);
    SqliteRunJournal journal(path);
    for (int c = 0; c < children; ++c) {
      if (c % 2 == 0) {
        CHECK(store.fetch(fmt::format("from-{}", c), "t"));
      } else {
        CHECK(journal.read("t", fmt::format("run-{}", c)).size() == 1);
      }
    }
    if (old_file) {  // migrated once, and every version's words indexed once
      RawDb raw(path);
      CHECK(raw.scalar("SELECT count(*) FROM cairn_search_docs") == raw.scalar("SELECT count(*) FROM cairn_artifacts"));
      CHECK(raw.scalar("SELECT count(*) FROM cairn_search_text") == raw.scalar("SELECT count(*) FROM cairn_artifacts"));
      SearchQuery q;
      q.text = "apple";
      CHECK(store.search("t", q).hits.size() == 1);
      CHECK(store.search("u", q).hits.size() == 1);
    }
  }
}

TEST_CASE(
    "a file that another connection keeps locked past the busy timeout fails the open cleanly, and loses "
    "nothing") {
  // A reader in a file that is not in WAL mode yet holds its lock: the switch to WAL waits the busy timeout (and
  // asks again until it is over), then fails with the file and the statement named.
  TempDir dir;
  const auto path = dir.file("held.db");
  RawDb raw(path);
  raw.exec("CREATE TABLE host_table (x INTEGER); INSERT INTO host_table VALUES (42)");
  raw.exec("BEGIN; SELECT count(*) FROM host_table");  // a read transaction keeps its shared lock until it ends
  SqliteOptions options;
  options.busy_timeout_ms = 300;
  const auto start = std::chrono::steady_clock::now();
  try {
    SqliteArtifactStore store(path, options);
    FAIL("the open should have failed");
  } catch (const storage_error& e) {
    CHECK_THAT(e.what(),
               Catch::Contains(path) && Catch::Contains("PRAGMA journal_mode = WAL") && Catch::Contains("locked"));
  }
  const auto waited = std::chrono::steady_clock::now() - start;
  CHECK(waited >= std::chrono::milliseconds(250));
  CHECK(waited < std::chrono::seconds(5));
  raw.exec("COMMIT");
  CHECK(raw.scalar("SELECT x FROM host_table") == "42");
  SqliteArtifactStore store(path, options);  // free again: it opens
  CHECK(store.store(*note("t", "a", 1))->version() == 1);
  CHECK(RawDb(path).scalar("PRAGMA journal_mode") == "wal");
}

TEST_CASE("store_if: threads of two processes racing on one id, exactly one wins each time") {
  TempDir dir;
  const auto path = dir.file("cond.db");
  { SqliteArtifactStore init(path); }
  store_test::check_store_if_race_across_processes(
      [&] {
        return std::make_unique<SqliteArtifactStore>(path,
                                                     SqliteOptions{30000, 4, SqliteOptions::Synchronous::normal, {}});
      },
      "t", dir.file("child.txt"));
}

// ---- search on the FTS5 index: the same pages as the default scan (ArtifactStore::search), hit for hit

namespace {

std::size_t rounds_from_env(const char* name, std::size_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? static_cast<std::size_t>(std::strtoull(v, nullptr, 10)) : fallback;
}

// Whole pages compared: records (id, version, every field), scores to the bit, what matched, the cursor.
void require_same_page(const SearchPage& index, const SearchPage& scan, const std::string& what) {
  INFO(what);
  REQUIRE(index.hits.size() == scan.hits.size());
  for (std::size_t i = 0; i < index.hits.size(); ++i) {
    INFO("hit " << i << ": " << index.hits[i].record->id() << " v" << index.hits[i].record->version() << " / "
                << scan.hits[i].record->id() << " v" << scan.hits[i].record->version() << ": '"
                << scan.hits[i].record->title() << "' '" << scan.hits[i].record->description() << "' "
                << (scan.hits[i].record->has_value() ? scan.hits[i].record->value().dump() : ""));
    CHECK(*index.hits[i].record == *scan.hits[i].record);
    CHECK(index.hits[i].score == scan.hits[i].score);
    CHECK(index.hits[i].matched.words == scan.hits[i].matched.words);
    CHECK(index.hits[i].matched.fields == scan.hits[i].matched.fields);
    CHECK(index.hits[i].matched.text_rank == scan.hits[i].matched.text_rank);
    CHECK(index.hits[i].matched.vector_rank == scan.hits[i].matched.vector_rank);
  }
  CHECK(index.next_cursor == scan.next_cursor);
  CHECK(index.unindexed == scan.unindexed);
}

// The statistics the writes keep per tenant (migration 5) against a count of the rows they stand for: its ids, its
// latest versions with words and their words, its versions with words and theirs.
void check_search_stats(const std::string& path) {
  RawDb raw(path);
  const std::string kept = raw.scalar(
      "SELECT group_concat(s, ' ') FROM (SELECT tenant_id || ':' || heads || ',' || docs || ',' || doc_words || ',' "
      "|| versions || ',' || version_words AS s FROM cairn_search_stats WHERE heads <> 0 OR docs <> 0 OR "
      "doc_words <> 0 OR versions <> 0 OR version_words <> 0 ORDER BY tenant_id)");
  const std::string counted = raw.scalar(
      "SELECT group_concat(s, ' ') FROM (SELECT t.tenant_id || ':' || "
      "(SELECT count(*) FROM cairn_heads h WHERE h.tenant_id = t.tenant_id) || ',' || "
      "(SELECT count(*) FROM cairn_heads h JOIN cairn_search_docs d ON d.tenant_id = h.tenant_id AND d.id = h.id "
      " AND d.version = h.latest WHERE h.tenant_id = t.tenant_id) || ',' || "
      "(SELECT coalesce(sum(d.length), 0) FROM cairn_heads h JOIN cairn_search_docs d ON d.tenant_id = h.tenant_id "
      " AND d.id = h.id AND d.version = h.latest WHERE h.tenant_id = t.tenant_id) || ',' || "
      "(SELECT count(*) FROM cairn_search_docs d WHERE d.tenant_id = t.tenant_id) || ',' || "
      "(SELECT coalesce(sum(d.length), 0) FROM cairn_search_docs d WHERE d.tenant_id = t.tenant_id) AS s "
      "FROM (SELECT tenant_id FROM cairn_heads UNION SELECT tenant_id FROM cairn_search_docs) t "
      "ORDER BY t.tenant_id)");
  CHECK(kept == counted);
}

}  // namespace

TEST_CASE("search by words on the FTS5 index finds exactly what the scan finds, with the same scores and pages") {
  TempDir dir;
  SqliteArtifactStore store(dir.file("search.db"));
  const std::uint32_t seed = static_cast<std::uint32_t>(rounds_from_env("CAIRN_SEARCH_SEED", std::random_device{}()));
  INFO("seed " << seed << " (CAIRN_SEARCH_SEED)");
  std::mt19937 rng(seed);
  const std::vector<std::string> tenants = {"t1", "t2", "a tenant with spaces"};
  // A corpus with new versions and removals, in three tenants sharing ids and words.
  for (int i = 0; i < 120; ++i) {
    const std::string& tenant = tenants[rng() % tenants.size()];
    const std::string id = fmt::format("{}/{}", rng() % 3 == 0 ? "reports" : "notes", rng() % 40);
    if (rng() % 10 == 0 && !store.versions(id, tenant).empty()) {
      store.remove(id, tenant);
    } else {
      (void)store.store(*random_record(rng, tenant, id));
    }
  }
  check_search_stats(store.path());
  const std::size_t rounds = rounds_from_env("CAIRN_SEARCH_ROUNDS", 150);
  for (std::size_t round = 0; round < rounds; ++round) {
    SearchQuery q;
    q.text = random_query(rng);
    q.mode = rng() % 2 ? SearchMode::text : SearchMode::automatic;
    q.all_versions = rng() % 4 == 0;
    q.limit = 1 + rng() % 12;
    if (rng() % 4 == 0) q.filter.id_prefix = rng() % 2 ? "reports/" : "notes/1";
    if (rng() % 5 == 0) q.filter.type = ArtifactType{rng() % 2 ? "document" : "dataset"};
    if (rng() % 6 == 0) q.filter.created_by = "agent-a";
    if (rng() % 8 == 0) q.filter.mime_type = "text/plain";
    if (rng() % 5 == 0) q.filter.created_after = 1700000000000 + static_cast<std::int64_t>(rng() % 10);
    if (rng() % 5 == 0) q.filter.created_before = 1700000000000 + static_cast<std::int64_t>(rng() % 10);
    if (rng() % 4 == 0) q.filter.metadata.push_back({"/n", FieldOp::ge, static_cast<int>(rng() % 5)});
    const std::string& tenant = tenants[rng() % tenants.size()];
    // Every page, through the cursors, compared whole.
    for (int pages = 0; pages < 20; ++pages) {
      SearchPage index, scan;
      try {
        scan = store.ArtifactStore::search(tenant, q);
      } catch (const invalid_argument& e) {
        // A query the parser refuses is refused the same way by both.
        CHECK_THROWS_WITH(store.search(tenant, q), e.what());
        break;
      }
      index = store.search(tenant, q);
      require_same_page(index, scan,
                        fmt::format("round {} page {}: '{}' in '{}', all {}, limit {}, prefix '{}', type {}, by {}, "
                                    "mime {}, after {}, before {}, {} conditions",
                                    round, pages, q.text, tenant, q.all_versions, q.limit, q.filter.id_prefix,
                                    q.filter.type ? q.filter.type->str() : "-", q.filter.created_by.value_or("-"),
                                    q.filter.mime_type.value_or("-"), q.filter.created_after.value_or(0),
                                    q.filter.created_before.value_or(0), q.filter.metadata.size()));
      if (!scan.next_cursor) break;
      q.cursor = *scan.next_cursor;
    }
  }
}

TEST_CASE("search by words: the index follows new versions, removals and re-creations at once") {
  TempDir dir;
  SqliteArtifactStore store(dir.file("follow.db"));
  const auto find = [&store](const std::string& tenant, const std::string& text, bool all = false) {
    SearchQuery q;
    q.text = text;
    q.all_versions = all;
    std::vector<std::pair<std::string, std::uint64_t>> out;
    for (const auto& h : store.search(tenant, q).hits) out.emplace_back(h.record->id(), h.record->version());
    std::sort(out.begin(), out.end());
    return out;
  };
  using Found = std::vector<std::pair<std::string, std::uint64_t>>;
  (void)store.store(*note("t", "a", "apple pie"));
  (void)store.store(*note("u", "a", "apple tart"));
  CHECK(find("t", "apple") == Found{{"a", 1}});
  CHECK(find("t", "tart").empty());  // the other tenant's words are not this tenant's
  (void)store.store(*note("t", "a", "cherry pie"));
  CHECK(find("t", "apple").empty());
  CHECK(find("t", "apple", true) == Found{{"a", 1}});
  CHECK(find("t", "pie", true) == (Found{{"a", 1}, {"a", 2}}));
  store.remove("a", "t");
  CHECK(find("t", "pie", true).empty());
  CHECK(find("u", "apple") == Found{{"a", 1}});
  (void)store.store(*note("t", "a", "plum"));
  CHECK(find("t", "plum") == Found{{"a", 1}});
  CHECK(find("t", "pie", true).empty());
  // A store_if that lost adds no words.
  CHECK_THROWS_AS(store.store_if(*note("t", "a", "banana"), 5), conflict);
  CHECK(find("t", "banana").empty());
  RawDb raw(store.path());
  CHECK(raw.scalar("SELECT count(*) FROM cairn_search_docs") == "2");
  CHECK(raw.scalar("SELECT count(*) FROM cairn_search_text") == "2");
}

TEST_CASE("search by words: the page read after the ranking is the page of every match read, damaged rows left out") {
  TempDir dir;
  SqliteArtifactStore store(dir.file("page.db"));
  for (int i = 0; i < 14; ++i) {
    std::string text = "apple";
    for (int k = 0; k < i % 4; ++k) text += " pie";
    (void)store.store(*ArtifactRecord::builder()
                           .tenant_id("t")
                           .id(fmt::format("n{:02}", i))
                           .type("document")
                           .title(i % 3 ? "apple" : "tart")
                           .value(json(text))
                           .metadata(json{{"k", 1}})
                           .build());
  }
  (void)store.store(*note("t", "n03", "apple tart"));  // history: the latest versions' page is checked on its heads
  {
    RawDb raw(store.path());
    raw.exec("UPDATE cairn_artifacts SET value = '{\"unterminated' WHERE id IN ('n05', 'n10')");
  }
  // The same query with a metadata condition every record passes reads every match's record as it ranks. The
  // damaged rows are left out of both; the ranks counted without reading the records still count them.
  for (const bool all : {false, true}) {
    std::map<std::string, std::size_t> ranks;  // by id: the same whatever the page size
    for (const std::size_t limit : {1u, 3u, 5u, 20u}) {
      SearchQuery keys;
      keys.text = "apple pie";
      keys.all_versions = all;
      keys.limit = limit;
      keys.filter.type = ArtifactType{"document"};
      SearchQuery records = keys;
      records.filter.metadata.push_back({"/k", FieldOp::exists, nullptr});
      std::vector<std::string> seen;
      for (int page = 0; page < 20; ++page) {
        INFO("all " << all << ", limit " << limit << ", page " << page);
        const SearchPage a = store.search("t", keys);
        const SearchPage b = store.search("t", records);
        REQUIRE(a.hits.size() == b.hits.size());
        for (std::size_t i = 0; i < a.hits.size(); ++i) {
          CHECK(*a.hits[i].record == *b.hits[i].record);
          CHECK(a.hits[i].score == b.hits[i].score);
          CHECK(a.hits[i].matched.words == b.hits[i].matched.words);
          CHECK(a.hits[i].matched.fields == b.hits[i].matched.fields);
          CHECK(a.hits[i].matched.text_rank >= b.hits[i].matched.text_rank);
          CHECK(a.hits[i].matched.text_rank <= b.hits[i].matched.text_rank + 2);
          const auto known = ranks.emplace(a.hits[i].record->id(), a.hits[i].matched.text_rank).first;
          CHECK(known->second == a.hits[i].matched.text_rank);
          seen.push_back(a.hits[i].record->id());
        }
        CHECK(a.unindexed == b.unindexed);
        REQUIRE(a.next_cursor.has_value() == b.next_cursor.has_value());
        if (!a.next_cursor) break;
        keys.cursor = *a.next_cursor;
        records.cursor = *b.next_cursor;
      }
      CHECK(std::find(seen.begin(), seen.end(), "n05") == seen.end());
      CHECK(std::find(seen.begin(), seen.end(), "n10") == seen.end());
      // 10 versions hold both words, n03's only with all versions (its latest has no "pie"); 2 damaged.
      CHECK(seen.size() == (all ? 8u : 7u));
    }
  }
}

TEST_CASE("search by words: no query text reaches FTS5's syntax") {
  TempDir dir;
  SqliteArtifactStore store(dir.file("syntax.db"));
  (void)store.store(*note("t", "a", "NEAR AND NOT col:x ^start * {title} \"quoted\""));
  for (const std::string text : {"NEAR", "AND", "NOT", "col:x", "^start", "*", "{title}", "title:near", "NEAR(a b)",
                                 "a AND", "(", ")", "+", "\"quoted\" *", "-\"\" x", "x OR y"}) {
    SearchQuery q;
    q.text = text;
    SearchPage index, scan;
    try {
      scan = store.ArtifactStore::search("t", q);
    } catch (const invalid_argument& e) {
      CHECK_THROWS_WITH(store.search("t", q), e.what());
      continue;
    }
    INFO(text);
    CHECK_NOTHROW(index = store.search("t", q));
    require_same_page(index, scan, text);
  }
}

TEST_CASE("a file from before search is migrated, records untouched, and its words are indexed when opened") {
  TempDir dir;
  const auto path = dir.file("old.db");
  {
    // The schema of version 1, written as that cairn wrote it.
    RawDb raw(path);
    raw.exec(version1_file);
  }
  std::vector<ArtifactPtr> before;
  SqliteArtifactStore store(path);
  before.push_back(store.fetch("a", "t", 1));
  before.push_back(store.fetch("a", "t", 2));
  before.push_back(store.fetch("b", "u"));
  {
    RawDb raw(path);
    CHECK(raw.scalar("SELECT version FROM cairn_schema") == std::to_string(SqliteArtifactStore::schema_version));
    CHECK(raw.scalar("SELECT count(*) FROM cairn_artifacts") == "3");
    CHECK(raw.scalar("SELECT count(*) FROM cairn_search_docs") == "3");
    CHECK(raw.scalar("SELECT words_done FROM cairn_search_state") == "1");
  }
  CHECK(before[1]->title() == "new apple");
  for (const std::string text : {"apple", "tart", "pie", "k", "new -old"}) {
    for (const bool all : {false, true}) {
      for (const std::string tenant : {"t", "u"}) {
        SearchQuery q;
        q.text = text;
        q.all_versions = all;
        require_same_page(store.search(tenant, q), store.ArtifactStore::search(tenant, q), text);
      }
    }
  }
  SearchQuery q;
  q.text = "tart";
  REQUIRE(store.search("t", q).hits.size() == 1);
  CHECK(store.reindex("t") == 0);  // nothing left to index
}

TEST_CASE("a file of schema 4 gets its tenants' search statistics counted once, then kept by every write") {
  TempDir dir;
  const auto path = dir.file("v4.db");
  std::mt19937 rng(7);
  {
    SqliteArtifactStore store(path);
    // History (new versions), removals and re-creations, in two tenants.
    for (int i = 0; i < 80; ++i) {
      const std::string tenant = i % 3 == 0 ? "u" : "t";
      const std::string id = fmt::format("n{}", rng() % 12);
      if (rng() % 8 == 0 && !store.versions(id, tenant).empty()) {
        store.remove(id, tenant);
      } else {
        (void)store.store(*random_record(rng, tenant, id));
      }
    }
  }
  {
    // Schema 4 as that cairn left it: no statistics; and some versions whose words were never indexed.
    RawDb raw(path);
    raw.exec(
        "DROP TRIGGER cairn_search_stats_doc_insert; DROP TRIGGER cairn_search_stats_doc_delete; "
        "DROP TRIGGER cairn_search_stats_head_insert; DROP TRIGGER cairn_search_stats_head_update; "
        "DROP TRIGGER cairn_search_stats_head_delete; DROP TABLE cairn_search_stats; "
        "ALTER TABLE cairn_search_docs DROP COLUMN type; UPDATE cairn_schema SET version = 4;");
    raw.exec(
        "DELETE FROM cairn_search_text WHERE rowid IN (SELECT doc FROM cairn_search_docs WHERE id = 'n3'); "
        "DELETE FROM cairn_search_docs WHERE id = 'n3';");
    CHECK(raw.scalar("SELECT count(*) FROM sqlite_master WHERE type = 'trigger'") == "0");
  }
  SqliteArtifactStore store(path);
  CHECK(RawDb(path).scalar("SELECT version FROM cairn_schema") == std::to_string(SqliteArtifactStore::schema_version));
  check_search_stats(path);
  const auto same_pages = [&store](const std::string& when) {
    for (const std::string tenant : {"t", "u"}) {
      for (const bool all : {false, true}) {
        for (int k = 0; k < 12; ++k) {
          SearchQuery q;
          q.text = search_vocabulary[static_cast<std::size_t>(k / 2)];
          q.all_versions = all;
          q.limit = 3;
          if (k % 2) q.filter.type = ArtifactType{"document"};
          for (int page = 0; page < 4; ++page) {  // through the cursors
            const SearchPage scan = store.ArtifactStore::search(tenant, q);
            require_same_page(store.search(tenant, q), scan,
                              fmt::format("{}: '{}' in {}, all {}, type {}, page {}", when, q.text, tenant, all,
                                          k % 2 ? "document" : "-", page));
            if (!scan.next_cursor) break;
            q.cursor = *scan.next_cursor;
          }
        }
      }
    }
  };
  SearchQuery q;
  q.text = search_vocabulary[0];
  for (const std::string tenant : {"t", "u"}) {
    INFO(tenant);
    CHECK(store.search(tenant, q).unindexed == (store.versions("n3", tenant).empty() ? 0 : 1));
  }
  (void)store.reindex("t");
  (void)store.reindex("u");
  check_search_stats(path);
  CHECK(store.search("t", q).unindexed == 0);
  same_pages("migrated and reindexed");
  // Each words row has its version's type (a word search filters by it), the migrated ones too.
  CHECK(RawDb(path).scalar("SELECT count(*) FROM cairn_search_docs d JOIN cairn_artifacts a ON a.tenant_id = "
                           "d.tenant_id AND a.id = d.id AND a.version = d.version WHERE d.type IS NOT a.type") == "0");
  // Every write from here is kept: new versions, removals, re-creations.
  for (int i = 0; i < 40; ++i) {
    const std::string tenant = i % 2 ? "u" : "t";
    const std::string id = fmt::format("n{}", rng() % 12);
    if (rng() % 5 == 0 && !store.versions(id, tenant).empty()) {
      store.remove(id, tenant);
    } else {
      (void)store.store(*random_record(rng, tenant, id));
    }
  }
  check_search_stats(path);
  same_pages("after writes");
}

TEST_CASE("reindex indexes versions that have no words indexed, and only the tenant's") {
  TempDir dir;
  const auto path = dir.file("reindex.db");
  {
    SqliteArtifactStore store(path);
    (void)store.store(*note("t", "a", "apple"));
    (void)store.store(*note("t", "b", "apple pie"));
    (void)store.store(*note("u", "c", "apple"));
  }
  {
    // Words lost behind the store's back (as an interrupted first indexing leaves a file).
    RawDb raw(path);
    raw.exec("DELETE FROM cairn_search_text; DELETE FROM cairn_search_docs;");
  }
  SqliteArtifactStore store(path);
  SearchQuery q;
  q.text = "apple";
  CHECK(store.search("t", q).hits.empty());
  CHECK(store.reindex("t") == 2);
  CHECK(store.reindex("t") == 0);
  require_same_page(store.search("t", q), store.ArtifactStore::search("t", q), "t after reindex");
  CHECK(store.search("t", q).hits.size() == 2);
  CHECK(store.search("u", q).hits.empty());
  CHECK(store.reindex("u") == 1);
  CHECK(store.search("u", q).hits.size() == 1);
}

TEST_CASE("search by words: the kept unindexed count follows another store object's writes and reindex") {
  TempDir dir;
  const auto path = dir.file("words-unindexed.db");
  {
    SqliteArtifactStore s(path);
    for (const char* id : {"a", "b", "c"}) (void)s.store(*note("t", id, "apple"));
    (void)s.store(*note("u", "x", "apple"));
  }
  {
    RawDb raw(path);  // words lost behind the stores' backs, as a file from before search has none
    raw.exec("DELETE FROM cairn_search_text; DELETE FROM cairn_search_docs;");
  }
  SqliteArtifactStore a(path);
  SqliteArtifactStore b(path);
  SearchQuery q;
  q.text = "apple";
  q.mode = SearchMode::text;
  CHECK(a.search("t", q).unindexed == 3);
  CHECK(a.search("t", q).unindexed == 3);   // kept
  (void)b.store(*note("t", "d", "apple"));  // indexed as stored: nothing more unindexed
  CHECK(a.search("t", q).unindexed == 3);
  (void)b.store(*note("t", "a", "apple pie"));  // a's latest version now has words
  CHECK(a.search("t", q).unindexed == 2);
  b.remove("b", "t");
  CHECK(a.search("t", q).unindexed == 1);
  CHECK(a.search("u", q).unindexed == 1);
  CHECK(b.reindex("t") == 2);  // a v1 and c
  CHECK(a.search("t", q).unindexed == 0);
  CHECK(a.search("t", q).hits.size() == 3);
  CHECK(a.search("u", q).unindexed == 1);  // another tenant's are its own
  CHECK(b.reindex("u") == 1);
  CHECK(a.search("u", q).unindexed == 0);
}

// ---- similarity: vectors kept in the file, the approximate index caught up from the change sequence

namespace {

// A deterministic embedder: each word adds 1 to one of 15 dimensions (by a hash of the word), the 16th is never 0.
class HashEmbedder final : public Embedder {
 public:
  std::string model() const override { return "hash-16"; }
  std::size_t dimension() const override { return 16; }
  std::vector<std::vector<float>> embed(const std::vector<std::string>& texts) override {
    std::vector<std::vector<float>> out;
    for (const auto& t : texts) {
      std::vector<float> v(16, 0.0f);
      v[15] = 0.25f;
      detail::for_each_word(t, [&v](const std::string& w) { v[std::hash<std::string>{}(w) % 15] += 1.0f; });
      out.push_back(std::move(v));
    }
    return out;
  }
};

SqliteOptions with_embedder() {
  SqliteOptions o;
  o.embedder = std::make_shared<HashEmbedder>();
  return o;
}

}  // namespace

// Words alone and hybrid rank the matches by their keys and read the page's records alone: a record that cannot be
// read is left out of the page (no error), and keeps its place in the ranks.
TEST_CASE("SQLite words and hybrid pages leave out a record that cannot be read, which keeps its rank") {
  TempDir dir;
  const auto path = dir.file("unreadable-search.db");
  SqliteArtifactStore store(path, with_embedder());
  for (const char* id : {"a", "b", "c", "d", "e"}) (void)store.store(*note("t", id, "needle"));
  {
    RawDb raw(path);
    raw.exec("UPDATE cairn_artifacts SET value = 'null', storage_url = NULL WHERE id = 'b'");
    raw.exec("UPDATE cairn_artifacts SET title = CAST(X'636166C3' AS TEXT) WHERE id = 'd'");
  }
  SearchQuery words;
  words.mode = SearchMode::text;
  words.text = "needle";
  const SearchPage page = store.search("t", words);
  // One score for all five (the same words and lengths): ranked by id, b and d ranks 2 and 4.
  std::vector<std::pair<std::string, std::size_t>> got;
  for (const auto& h : page.hits) got.emplace_back(h.record->id(), h.matched.text_rank);
  CHECK(got == std::vector<std::pair<std::string, std::size_t>>{{"a", 1}, {"c", 3}, {"e", 5}});
  CHECK_FALSE(page.next_cursor);
  SearchQuery hybrid = words;
  hybrid.mode = SearchMode::hybrid;                        // the store embeds the text
  std::vector<std::pair<std::string, std::size_t>> fused;  // in the fused order, which the vectors decide
  for (const auto& h : store.search("t", hybrid).hits) fused.emplace_back(h.record->id(), h.matched.text_rank);
  std::sort(fused.begin(), fused.end());
  CHECK(fused == got);
}

TEST_CASE("SqliteArtifactStore with an embedder passes the conformance suite") {
  TempDir dir;
  int n = 0;
  for (const auto& check : testing::store_conformance_checks()) {
    INFO(check.name);
    SqliteArtifactStore store(dir.file("embedded-" + std::to_string(n++) + ".db"), with_embedder());
    CHECK_NOTHROW(check.run(store));
  }
}

TEST_CASE("similarity on the approximate index: current versions only, exact scores, the exact top 10 found") {
  TempDir dir;
  const auto path = dir.file("vectors.db");
  SqliteArtifactStore writer(path);
  SqliteArtifactStore reader(path);  // another store object: its index learns only from the change sequence
  const std::uint32_t seed = static_cast<std::uint32_t>(rounds_from_env("CAIRN_SEARCH_SEED", std::random_device{}()));
  INFO("seed " << seed << " (CAIRN_SEARCH_SEED)");
  std::mt19937 rng(seed);
  constexpr std::size_t dimension = 24;
  std::size_t hits = 0, wanted = 0;
  for (int step = 0; step < 6; ++step) {
    // Stores, new versions and removals between queries, so the reader's index catches up each time.
    for (int i = 0; i < 60; ++i) {
      const std::string tenant = rng() % 4 == 0 ? "u" : "t";
      const std::string id = fmt::format("doc-{}", rng() % 120);
      if (rng() % 8 == 0 && !writer.versions(id, tenant).empty()) {
        writer.remove(id, tenant);
      } else {
        (void)writer.store_embedded(*random_record(rng, tenant, id), Embedding{"m", random_vector(rng, dimension)});
      }
    }
    for (int round = 0; round < 10; ++round) {
      SearchQuery q;
      q.vector = Embedding{"m", random_vector(rng, dimension)};
      q.limit = 10;
      if (round % 3 == 1) q.filter.type = ArtifactType{"document"};
      if (round % 3 == 2) q.filter.metadata.push_back({"/n", FieldOp::ge, 2});
      const std::string tenant = round % 4 == 0 ? "u" : "t";
      const SearchPage approximate = reader.search(tenant, q);
      SearchQuery e = q;
      e.exact = true;
      const SearchPage exact = reader.search(tenant, e);
      require_same_page(exact, reader.ArtifactStore::search(tenant, e), "exact is the scan");
      std::set<std::pair<std::string, std::uint64_t>> truth;
      for (const auto& h : exact.hits) truth.emplace(h.record->id(), h.record->version());
      wanted += truth.size();
      for (const auto& h : approximate.hits) {
        // Every hit is the current latest version, passes the filters, and has the exact cosine as its score.
        const auto current = writer.fetch(h.record->id(), tenant);
        REQUIRE(current);
        CHECK(*current == *h.record);
        CHECK(detail::matches_filter(*h.record, q.filter));
        const auto v = writer.embedding(h.record->id(), tenant, h.record->version());
        REQUIRE(v);
        CHECK(h.score == detail::cosine(q.vector->values, v->values));
        CHECK(h.matched.similarity == h.score);
        hits += truth.count({h.record->id(), h.record->version()});
      }
      CHECK(approximate.hits.size() == exact.hits.size());
    }
  }
  // recall@10 of the approximate index against the exact scan, over every query.
  INFO("recall@10 " << static_cast<double>(hits) / static_cast<double>(wanted));
  CHECK(static_cast<double>(hits) >= 0.95 * static_cast<double>(wanted));
}

TEST_CASE("similarity: a removed or replaced version never comes back, whatever the index has seen") {
  TempDir dir;
  const auto path = dir.file("gone.db");
  SqliteArtifactStore a(path, with_embedder());
  SqliteArtifactStore b(path, with_embedder());
  (void)a.store(*note("t", "cats", "cats purr"));
  (void)a.store(*note("t", "dogs", "dogs bark"));
  SearchQuery q;
  q.text = "cats purr";
  q.mode = SearchMode::similarity;
  REQUIRE(b.search("t", q).hits.size() == 2);  // b's index holds both
  a.remove("cats", "t");
  (void)a.store(*note("t", "dogs", "dogs purr"));  // a new version: the old one's vector leaves the index
  const auto page = b.search("t", q);
  REQUIRE(page.hits.size() == 1);
  CHECK(page.hits[0].record->id() == "dogs");
  CHECK(page.hits[0].record->version() == 2);
  // The change sequence says what changed: a removal per store (the previous latest version; none before a first
  // version, which removes nothing but moves the tenant's sequence) and per remove, and an add per vector.
  RawDb raw(path);
  CHECK(raw.scalar("SELECT count(*) FROM cairn_search_changes WHERE removed = 1") == "4");
  CHECK(raw.scalar("SELECT count(*) FROM cairn_search_changes WHERE removed = 0") == "3");
  CHECK(raw.scalar("SELECT count(*) FROM cairn_search_vectors") == "2");
}

TEST_CASE("similarity pages reuse a record read before only for the life of the version the snapshot holds") {
  // A version removed and stored again restarts at 1: a record kept under (id, version) alone would come back for
  // the new life, found by the old one's vector. Both lives get the same vector here, so only the record tells.
  for (const std::size_t cache : {SqliteOptions{}.record_cache_bytes, std::size_t{0}}) {
    for (const bool same_object : {true, false}) {
      INFO("record_cache_bytes " << cache << (same_object ? ", one store object" : ", a reader and a writer"));
      TempDir dir;
      const auto path = dir.file("kept.db");
      SqliteOptions o;
      o.record_cache_bytes = cache;
      SqliteArtifactStore writer(path, o);
      SqliteArtifactStore other(path, o);
      ArtifactStore& reader = same_object ? writer : other;
      const Embedding v{"m", {1.0f, 0.5f, 0.25f}};
      const Embedding w{"m", {0.25f, 0.5f, 1.0f}};
      (void)writer.store_embedded(*note("t", "x", "first life"), v);
      (void)writer.store_embedded(*note("t", "y", "elsewhere"), w);
      SearchQuery q;
      q.vector = v;
      q.mode = SearchMode::similarity;
      q.limit = 1;
      SearchQuery filtered = q;
      filtered.filter.id_prefix = "x";
      const auto top = [&](const SearchQuery& query, const json& value, std::uint64_t version) {
        const auto page = reader.search("t", query);
        REQUIRE(page.hits.size() == 1);
        CHECK(page.hits[0].record->id() == "x");
        CHECK(page.hits[0].record->value() == value);
        CHECK(page.hits[0].record->version() == version);
        SearchQuery exact = query;
        exact.exact = true;
        require_same_page(page, reader.ArtifactStore::search("t", exact), "against the scan");
      };
      for (int again = 0; again < 2; ++again) {  // the second time from the records kept, where they are
        top(q, "first life", 1);
        top(filtered, "first life", 1);
      }
      writer.remove("x", "t");
      (void)writer.store_embedded(*note("t", "x", "second life"), v);
      for (int again = 0; again < 2; ++again) {
        top(q, "second life", 1);
        top(filtered, "second life", 1);
      }
      (void)writer.store_embedded(*note("t", "x", "a new version"), v);
      top(q, "a new version", 2);
      top(filtered, "a new version", 2);
      writer.remove("x", "t");
      const auto page = reader.search("t", q);
      REQUIRE(page.hits.size() == 1);
      CHECK(page.hits[0].record->id() == "y");
    }
  }
}

TEST_CASE("RecordCache: keeps a life of a version under its own key, within its bound, the first kept going first") {
  const auto record = [](const std::string& id, const std::string& text) { return note("t", id, text); };
  detail::RecordCache none(0);
  none.keep("t", "a", 1, 5, record("a", "x"), 10);
  CHECK(none.size() == 0);
  CHECK_FALSE(none.find("t", "a", 1, 5));

  detail::RecordCache cache(1000);
  cache.keep("t", "a", 1, 5, record("a", "first"), 200);
  REQUIRE(cache.find("t", "a", 1, 5));
  CHECK(cache.find("t", "a", 1, 5)->value() == "first");
  CHECK_FALSE(cache.find("t", "a", 1, 9));  // another life of a v1
  CHECK_FALSE(cache.find("u", "a", 1, 5));  // another tenant
  CHECK_FALSE(cache.find("t", "a", 2, 5));
  // Keys do not run together: tenant "t1" id "a" is not tenant "t" id "1a".
  cache.keep("t1", "a", 1, 5, record("a", "t1's"), 200);
  CHECK(cache.find("t", "1a", 1, 5) == nullptr);
  cache.keep("t", "a", 1, 5, record("a", "again"), 200);  // kept already: unchanged
  CHECK(cache.find("t", "a", 1, 5)->value() == "first");
  CHECK(cache.bytes() == 400);
  cache.keep("t", "big", 1, 6, record("big", "too big"), 251);  // over a quarter of the bound: not kept
  CHECK_FALSE(cache.find("t", "big", 1, 6));
  for (int i = 0; i < 3; ++i) cache.keep("t", "b" + std::to_string(i), 1, 7, record("b", "b"), 250);
  CHECK(cache.bytes() <= 1000);
  CHECK_FALSE(cache.find("t", "a", 1, 5));  // the first kept went first
  CHECK(cache.find("t", "b2", 1, 7));
  cache.clear();
  CHECK(cache.size() == 0);
  CHECK(cache.bytes() == 0);
}

TEST_CASE("hybrid on the indexes: the in-memory store's pages (every word match, fused with the 4 x limit nearest)") {
  TempDir dir;
  const auto path = dir.file("hybrid.db");
  SqliteArtifactStore writer(path);
  SqliteArtifactStore reader(path);  // another store object: its index learns only from the change sequence
  const std::uint32_t seed = static_cast<std::uint32_t>(rounds_from_env("CAIRN_SEARCH_SEED", std::random_device{}()));
  INFO("seed " << seed << " (CAIRN_SEARCH_SEED)");
  std::mt19937 rng(seed);
  const std::size_t hits = store_test::compare_hybrid_with_memory(
      writer, reader, rng, "m", 12, 4, 40, [](const SearchPage& got, const SearchPage& want, const std::string& what) {
        require_same_page(got, want, what);
        for (std::size_t i = 0; i < got.hits.size() && i < want.hits.size(); ++i) {
          CHECK(got.hits[i].matched.similarity == want.hits[i].matched.similarity);
        }
      });
  INFO(hits << " hits");
  CHECK(hits > 100);
}

TEST_CASE("mmap_bytes: a store reading through a memory map reads what one without it reads, negative is refused") {
  TempDir dir;
  const auto path = dir.file("mapped.db");
  SqliteOptions mapped = with_embedder();
  mapped.mmap_bytes = 64LL << 20;
  SqliteArtifactStore a(path, mapped);
  for (int i = 0; i < 50; ++i) (void)a.store(*note("t", "n" + std::to_string(i), "note number " + std::to_string(i)));
  SqliteArtifactStore b(path, with_embedder());  // no map
  SearchQuery q;
  q.text = "note number 7";
  q.mode = SearchMode::similarity;
  const auto via_map = a.search("t", q);
  const auto via_reads = b.search("t", q);
  REQUIRE(via_map.hits.size() == via_reads.hits.size());
  for (std::size_t i = 0; i < via_map.hits.size(); ++i) {
    CHECK(json(*via_map.hits[i].record) == json(*via_reads.hits[i].record));
    CHECK(via_map.hits[i].score == via_reads.hits[i].score);
  }
  CHECK(json(*a.fetch("n7", "t")) == json(*b.fetch("n7", "t")));
  SqliteOptions bad;
  bad.mmap_bytes = -1;
  CHECK_THROWS_WITH(SqliteArtifactStore(dir.file("bad.db"), bad),
                    cairn_test::ContainsSubstring("mmap_bytes must not be negative (got -1"));
  CHECK_FALSE(std::filesystem::exists(dir.file("bad.db")));
}

TEST_CASE(
    "page_size: a file the store creates gets 8 KiB pages (a ~1 KB record and a 1.5 KB vector fit in a leaf), "
    "a file that exists keeps its own, bad sizes are refused") {
  TempDir dir;
  const auto fresh = dir.file("fresh.db");
  {
    SqliteArtifactStore store(fresh, with_embedder());
    (void)store.store(*note("t", "a", std::string(1500, 'x')));
  }
  CHECK(RawDb(fresh).scalar("PRAGMA page_size") == "8192");
  // The 1.5 KB record row takes no overflow page there (the reason for the default); on 4 KiB pages it does.
  const char* overflow_pages = "SELECT count(*) FROM dbstat WHERE pagetype = 'overflow'";
  CHECK(RawDb(fresh).scalar(overflow_pages) == "0");
  // A file made with 4 KiB pages (by an older cairn, or SqliteOptions::page_size) keeps them, and works.
  const auto older = dir.file("older.db");
  SqliteOptions small = with_embedder();
  small.page_size = 4096;
  {
    SqliteArtifactStore store(older, small);
    (void)store.store(*note("t", "a", "cats purr on the mat"));
    (void)store.store(*note("t", "long", std::string(1500, 'x')));
  }
  CHECK(RawDb(older).scalar("PRAGMA page_size") == "4096");
  CHECK(RawDb(older).scalar(overflow_pages) != "0");
  {
    SqliteArtifactStore store(older, with_embedder());  // the default asks for 8192: the file keeps 4096
    (void)store.store(*note("t", "b", "dogs bark at the mailman"));
    SearchQuery q;
    q.text = "cats purr";
    q.mode = SearchMode::similarity;
    const auto page = store.search("t", q);
    REQUIRE(page.hits.size() == 3);
    CHECK(page.hits[0].record->id() == "a");
    CHECK(store.fetch("b", "t")->value() == "dogs bark at the mailman");
  }
  CHECK(RawDb(older).scalar("PRAGMA page_size") == "4096");
  for (const int bad : {0, -4096, 256, 1000, 131072}) {
    SqliteOptions o;
    o.page_size = bad;
    const auto path = dir.file("bad-" + std::to_string(bad) + ".db");
    CHECK_THROWS_WITH(SqliteArtifactStore(path, o),
                      cairn_test::ContainsSubstring("page_size must be a power of two from 512 to 65536 (got " +
                                                    std::to_string(bad) + ")"));
    CHECK_FALSE(std::filesystem::exists(path));
  }
}

TEST_CASE(
    "the change sequence keeps search_changes_kept changes, an index that fell behind them starts over, one "
    "that did not catches up, and both answer as the scan does") {
  TempDir dir;
  const auto path = dir.file("pruned.db");
  SqliteOptions options = with_embedder();
  options.search_changes_kept = 100;
  SqliteArtifactStore writer(path, options);
  SqliteArtifactStore reader(path, options);  // another process's store: its index catches up from the sequence
  store_test::RandomWriter<SqliteArtifactStore> writer_of{writer};
  const auto write = [&](std::size_t n) { writer_of.write(n); };
  const auto same_as_scan = [&](const SqliteArtifactStore& store, const std::string& what) {
    for (const std::string text : {"alpha beta", "Revenue q3", "x-ray 7 emea", "gamma"}) {
      SearchQuery q;
      q.text = text;
      q.mode = SearchMode::similarity;
      q.limit = 100;  // more than the live artifacts (at most 80): an index missing one finds fewer than the scan
      require_same_page(store.search("t", q), store.ArtifactStore::search("t", q), what + ": " + text);
    }
  };
  RawDb raw(path);
  const auto rows = [&raw] { return std::stoull(raw.scalar("SELECT count(*) FROM cairn_search_changes")); };
  const auto through = [&raw] { return std::stoull(raw.scalar("SELECT through FROM cairn_search_pruned")); };

  write(40);
  same_as_scan(reader, "the reader's first query builds its index");
  write(20);  // less than the kept changes behind: the reader catches up from the rows
  CHECK(through() == 0);
  same_as_scan(reader, "caught up");
  const auto seen = std::stoull(raw.scalar("SELECT max(seq) FROM cairn_search_changes"));
  write(150);  // the reader is now further behind than the kept changes
  CHECK(through() > seen);
  CHECK(rows() <= 100 + 100 / 16 + 1 + 2);  // a write adds at most two before it prunes
  CHECK(std::stoull(raw.scalar("SELECT min(seq) FROM cairn_search_changes")) == through() + 1);
  same_as_scan(reader, "fell behind the pruned changes: started over");
  write(10);
  same_as_scan(reader, "caught up after starting over");
  same_as_scan(SqliteArtifactStore(path, options), "a new store object");
  same_as_scan(writer, "the writer");

  // search_changes_kept 0: nothing is deleted.
  const auto before = rows();
  SqliteOptions keep_all = with_embedder();
  keep_all.search_changes_kept = 0;
  SqliteArtifactStore unpruned(path, keep_all);
  for (int i = 0; i < 200; ++i) (void)unpruned.store(*note("t", fmt::format("k{}", i), "kept"));
  CHECK(rows() >= before + 400);  // a removal (of nothing) and an add per first version
}

TEST_CASE("similarity: the unindexed count follows what a store without the embedder stores and removes") {
  TempDir dir;
  const auto path = dir.file("unindexed.db");
  SqliteArtifactStore a(path, with_embedder());
  SqliteArtifactStore plain(path);  // another process's store, without an embedder: its records get no vector
  (void)a.store(*note("t", "cats", "cats purr"));
  SearchQuery q;
  q.text = "cats purr";
  q.mode = SearchMode::similarity;
  CHECK(a.search("t", q).unindexed == 0);
  // a's count is kept between queries; a record it did not see stored must still be counted.
  (void)plain.store(*note("t", "mice", "mice squeak"));
  CHECK(a.search("t", q).unindexed == 1);
  (void)plain.store(*note("t", "mice", "mice squeak loudly"));
  CHECK(a.search("t", q).unindexed == 1);
  (void)plain.store(*note("t", "cats", "cats purr again"));  // a new latest version without a vector
  CHECK(a.search("t", q).unindexed == 2);
  plain.remove("mice", "t");
  CHECK(a.search("t", q).unindexed == 1);
  CHECK(a.reindex("t") == 1);  // cats v2, the one version left without a vector
  CHECK(a.search("t", q).unindexed == 0);
}

TEST_CASE("a process killed at a random moment while storing and removing leaves the indexes agreeing with the rows") {
  TempDir dir;
  const std::uint32_t seed = static_cast<std::uint32_t>(rounds_from_env("CAIRN_SEARCH_SEED", std::random_device{}()));
  INFO("seed " << seed << " (CAIRN_SEARCH_SEED)");
  std::mt19937 rng(seed);
  const std::size_t kills = rounds_from_env("CAIRN_SEARCH_KILLS", 3);
  const auto path = dir.file("killed.db");
  { SqliteArtifactStore init(path, with_embedder()); }
  for (std::size_t round = 0; round < kills; ++round) {
    const std::uint32_t child_seed = static_cast<std::uint32_t>(rng());
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      SqliteArtifactStore store(path, with_embedder());
      std::mt19937 r(child_seed);
      for (;;) {
        const std::string id = fmt::format("id{}", r() % 50);
        try {
          if (r() % 5 == 0) {
            store.remove(id, "t");
          } else {
            (void)store.store(*note("t", id, fmt::format("common {} w{}", id, r() % 7)));
          }
        } catch (const not_found&) {
        }
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + rng() % 200));
    kill(child, SIGKILL);
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);

    SqliteArtifactStore store(path, with_embedder());
    // Whole states: every version in the rows has its words and its vector, and nothing else has.
    RawDb raw(path);
    const auto keys = [&raw](const std::string& table) {
      return raw.scalar("SELECT group_concat(k, ',') FROM (SELECT tenant_id || '/' || id || '/' || version AS k FROM " +
                        table + " ORDER BY 1)");
    };
    INFO("round " << round);
    CHECK(keys("cairn_search_docs") == keys("cairn_artifacts"));
    CHECK(keys("cairn_search_vectors") == keys("cairn_artifacts"));
    CHECK(raw.scalar("SELECT count(*) FROM cairn_search_text") == raw.scalar("SELECT count(*) FROM cairn_artifacts"));
    // Searches find exactly the stored latest versions: by a word all of them hold, and by meaning.
    std::vector<std::string> listed;
    for (const auto& r : store.list("t", ListQuery{"", std::nullopt, std::nullopt, 1000, ""}).items) {
      listed.push_back(r->id() + "/" + std::to_string(r->version()));
    }
    const auto found = [&store](SearchQuery q) {
      std::vector<std::string> out;
      q.limit = 100;
      for (const auto& h : store.search("t", q).hits) {
        out.push_back(h.record->id() + "/" + std::to_string(h.record->version()));
      }
      std::sort(out.begin(), out.end());
      return out;
    };
    SearchQuery words;
    words.text = "common";
    words.mode = SearchMode::text;
    CHECK(found(words) == listed);
    SearchQuery meaning;
    meaning.text = "common";
    meaning.mode = SearchMode::similarity;
    CHECK(found(meaning) == listed);
    meaning.exact = true;
    CHECK(found(meaning) == listed);
  }
}

TEST_CASE("records stored before the store had an embedder: counted as unindexed, embedded by reindex") {
  TempDir dir;
  const auto path = dir.file("late.db");
  {
    SqliteArtifactStore plain(path);
    (void)plain.store(*note("t", "cats", "cats purr"));
    (void)plain.store(*note("t", "cats", "cats purr loudly"));
    (void)plain.store(*note("t", "dogs", "dogs bark"));
    (void)plain.store(*note("u", "owls", "owls hoot"));
  }
  SqliteArtifactStore store(path, with_embedder());
  (void)store.store(*note("t", "fish", "fish swim"));
  SearchQuery q;
  q.text = "cats purr";
  q.mode = SearchMode::similarity;
  auto page = store.search("t", q);
  CHECK(page.unindexed == 2);  // cats and dogs (latest versions) have no vector of hash-16
  REQUIRE(page.hits.size() == 1);
  CHECK(page.hits[0].record->id() == "fish");
  SearchQuery words;
  words.text = "purr";
  words.mode = SearchMode::text;
  CHECK(store.search("t", words).unindexed == 0);  // words were indexed as they were stored
  CHECK(store.reindex("t") == 3);                  // cats v1, cats v2, dogs
  CHECK(store.reindex("t") == 0);
  page = store.search("t", q);
  CHECK(page.unindexed == 0);
  REQUIRE(page.hits.size() == 3);
  CHECK(page.hits[0].record->id() == "cats");
  CHECK(page.hits[0].record->version() == 2);
  SearchQuery exact = q;
  exact.exact = true;
  require_same_page(store.search("t", exact), store.ArtifactStore::search("t", exact), "exact after reindex");
  CHECK(store.search("u", q).unindexed == 1);  // the other tenant's are its own business
  const auto e = store.embedding("cats", "t", 1);
  REQUIRE(e);
  CHECK(e->values == HashEmbedder().embed({HashEmbedder().text_of(*store.fetch("cats", "t", 1))})[0]);
}

namespace {

// HashEmbedder, with a hook run inside embed() (once): how a test makes a write land between reindex's reading of a
// version and its writing of that version's vector.
class HookedEmbedder final : public Embedder {
 public:
  std::function<void()> during_embed;
  std::string model() const override { return inner_.model(); }
  std::size_t dimension() const override { return inner_.dimension(); }
  std::vector<std::vector<float>> embed(const std::vector<std::string>& texts) override {
    if (auto hook = std::exchange(during_embed, nullptr)) hook();
    return inner_.embed(texts);
  }

 private:
  HashEmbedder inner_;
};

std::vector<float> hash_vector(const ArtifactRecord& r) { return HashEmbedder().embed({HashEmbedder().text_of(r)})[0]; }

}  // namespace

TEST_CASE("reindex never gives a record stored again under a removed id the removed record's vector") {
  TempDir dir;
  const auto path = dir.file("recreated.db");
  {
    SqliteArtifactStore plain(path);  // no embedder: cats v1 has no vector, reindex embeds it
    (void)plain.store(*note("t", "cats", "cats purr on warm laps"));
  }
  auto embedder = std::make_shared<HookedEmbedder>();
  SqliteOptions o;
  o.embedder = embedder;
  SqliteArtifactStore store(path, o);
  SqliteArtifactStore without_vectors(path);  // another writer of the file, one that keeps no vectors
  SearchQuery old_text;
  old_text.text = "cats purr on warm laps";
  old_text.mode = SearchMode::similarity;

  SECTION("stored again by a writer without vectors: the new version has none until reindex embeds its own text") {
    embedder->during_embed = [&] {
      without_vectors.remove("cats", "t");
      (void)without_vectors.store(*note("t", "cats", "dogs bark at the mail"));
    };
    CHECK(store.reindex("t") == 0);  // the version it embedded is gone
    CHECK_FALSE(store.embedding("cats", "t", 1));
    const auto page = store.search("t", old_text);
    CHECK(page.hits.empty());  // never found by the removed text's meaning
    CHECK(page.unindexed == 1);
    CHECK(store.reindex("t") == 1);
    const auto e = store.embedding("cats", "t", 1);
    REQUIRE(e);
    CHECK(e->values == hash_vector(*store.fetch("cats", "t", 1)));
  }
  SECTION("stored again through the store itself: the new version keeps the vector of its own text") {
    embedder->during_embed = [&] {
      store.remove("cats", "t");
      (void)store.store(*note("t", "cats", "dogs bark at the mail"));
    };
    CHECK(store.reindex("t") == 0);
    const auto e = store.embedding("cats", "t", 1);
    REQUIRE(e);
    CHECK(e->values == hash_vector(*store.fetch("cats", "t", 1)));
    const auto page = store.search("t", old_text);
    REQUIRE(page.hits.size() == 1);
    CHECK(page.hits[0].score < 0.99);  // the new text's vector, not the removed one's (cosine 1)
    SearchQuery exact = old_text;
    exact.exact = true;
    require_same_page(page, store.ArtifactStore::search("t", exact), "after the race");
  }
  SECTION("removed, not stored again: nothing is written for it") {
    embedder->during_embed = [&] { without_vectors.remove("cats", "t"); };
    CHECK(store.reindex("t") == 0);
    RawDb raw(path);
    CHECK(raw.scalar("SELECT count(*) FROM cairn_search_vectors") == "0");
  }
}

TEST_CASE("reindex racing a writer that removes and stores ids again: every vector is its own record's") {
  TempDir dir;
  const auto path = dir.file("race.db");
  SqliteArtifactStore writer(path);  // keeps no vectors: reindex has every version to embed
  const auto text = [](int id, int round) {
    return fmt::format("note {} round {} word{} other{}", id, round, id, round);
  };
  for (int i = 0; i < 100; ++i) (void)writer.store(*note("t", "n" + std::to_string(i), text(i, 0)));
  SqliteArtifactStore store(path, with_embedder());
  std::atomic<bool> done{false};
  std::thread removing([&] {
    for (int round = 1; round <= 5; ++round) {
      for (int i = 0; i < 100; ++i) {
        writer.remove("n" + std::to_string(i), "t");
        (void)writer.store(*note("t", "n" + std::to_string(i), text(i, round)));
      }
    }
    done = true;
  });
  while (!done) (void)store.reindex("t");
  removing.join();
  (void)store.reindex("t");
  for (int i = 0; i < 100; ++i) {
    const auto r = store.fetch("n" + std::to_string(i), "t");
    REQUIRE(r);
    CHECK(r->version() == 1);
    const auto e = store.embedding(r->id(), "t", 1);
    REQUIRE(e);
    CHECK(e->values == hash_vector(*r));
  }
}

TEST_CASE(
    "indexing progress goes to SqliteOptions::observer: reindex per batch, and the words of a file from "
    "before search when a store opens it") {
  TempDir dir;
  const auto path = dir.file("progress.db");
  {
    SqliteArtifactStore plain(path);  // no embedder: none of these get a vector
    for (int i = 0; i < 150; ++i) (void)plain.store(*note("t", "n" + std::to_string(i), "note " + std::to_string(i)));
    (void)plain.store(*note("t", "n0", "note zero again"));  // a second version: 151 versions
    (void)plain.store(*note("u", "other", "another tenant's"));
  }
  {
    RawDb raw(path);  // every word lost behind the store's back, as a file from before search has none
    raw.exec(
        "DELETE FROM cairn_search_text; DELETE FROM cairn_search_docs; UPDATE cairn_search_state SET words_done = 0");
  }
  struct Seen {
    std::string operation, tenant;
    std::uint64_t items, total;
  };
  std::mutex mutex;
  std::vector<Seen> seen;
  SqliteOptions o = with_embedder();
  o.observer = std::make_shared<FunctionObserver>([&](const Event& e) {
    if (e.kind != EventKind::index) return;
    std::lock_guard lock(mutex);
    seen.push_back({std::string(e.operation), std::string(e.tenant), e.items, e.total});
  });
  SqliteArtifactStore store(path, o);
  // Opening indexed every tenant's words (152 versions, one batch of 256): one "open" event, all done.
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].operation == "open");
  CHECK(seen[0].tenant.empty());
  CHECK(seen[0].items == 152);
  CHECK(seen[0].total == 152);
  seen.clear();
  // reindex embeds t's 151 versions in batches of 64: 64, 128, 151 of 151 (the words are all there).
  CHECK(store.reindex("t") == 151);
  REQUIRE(seen.size() == 3);
  for (const auto& e : seen) {
    CHECK(e.operation == "reindex");
    CHECK(e.tenant == "t");
    CHECK(e.total == 151);
  }
  CHECK(seen[0].items == 64);
  CHECK(seen[1].items == 128);
  CHECK(seen[2].items == 151);
  seen.clear();
  CHECK(store.reindex("t") == 0);  // nothing left: no batch, no event
  CHECK(seen.empty());
  // Words and vectors both missing: counted together.
  {
    RawDb raw(path);
    raw.exec(
        "DELETE FROM cairn_search_text WHERE rowid IN (SELECT doc FROM cairn_search_docs WHERE tenant_id = 'u');"
        "DELETE FROM cairn_search_docs WHERE tenant_id = 'u'");
  }
  CHECK(store.reindex("u") == 2);  // its words, then its vector
  REQUIRE(seen.size() == 2);
  CHECK(seen[0].items == 1);
  CHECK(seen[1].items == 2);
  CHECK(seen[1].total == 2);
}

TEST_CASE("an embedder that fails fails the store with its message, and nothing is stored") {
  TempDir dir;
  struct Broken final : Embedder {
    std::string model() const override { return "broken"; }
    std::size_t dimension() const override { return 4; }
    std::vector<std::vector<float>> embed(const std::vector<std::string>& texts) override {
      if (texts[0].find("nan") != std::string::npos) {
        return {{1.0f, std::numeric_limits<float>::quiet_NaN(), 0.0f, 0.0f}};
      }
      throw std::runtime_error("the model is down");
    }
  };
  SqliteOptions o;
  o.embedder = std::make_shared<Broken>();
  SqliteArtifactStore store(dir.file("broken.db"), o);
  CHECK_THROWS_WITH(store.store(*note("t", "a", "words")), "the model is down");
  CHECK_THROWS_WITH(store.store(*note("t", "a", "nan")), Catch::Contains("vector 0 [1] is not a finite number"));
  CHECK_THROWS_AS(store.store_embedded(*note("t", "a", "x"), Embedding{"other", {1, 2, 3, 4}}), invalid_argument);
  CHECK(store.versions("a", "t").empty());
  RawDb raw(store.path());
  CHECK(raw.scalar("SELECT count(*) FROM cairn_search_docs") == "0");
  CHECK(raw.scalar("SELECT count(*) FROM cairn_search_vectors") == "0");
  CHECK(raw.scalar("SELECT count(*) FROM cairn_search_changes") == "0");
}
