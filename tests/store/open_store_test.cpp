#include "cairn/store/open_store.hpp"

#include <cstdlib>
#include <filesystem>

#include "cairn/testing/embedder.hpp"
#include "catch.hpp"
#include "store_test_support.hpp"

using namespace cairn;

namespace {
ArtifactPtr note(const std::string& id) {
  return ArtifactRecord::builder().tenant_id("t").id(id).type("document").title(id).value(id).build();
}
}  // namespace

TEST_CASE("open_store: memory: is always there") {
  auto store = open_store("memory:");
  REQUIRE(store != nullptr);
  CHECK(dynamic_cast<InMemoryArtifactStore*>(store.get()) != nullptr);
  (void)store->store(*note("a"));
  CHECK(store->fetch("a", "t")->value() == "a");
  CHECK_THROWS_WITH(open_store("memory:x"), cairn_test::ContainsSubstring("'memory:' takes nothing"));
}

TEST_CASE("open_store: unknown schemes and malformed URLs are clear errors") {
  CHECK_THROWS_AS(open_store("mysql:host=x"), invalid_argument);
  CHECK_THROWS_WITH(open_store("mysql:host=x"), cairn_test::ContainsSubstring("unknown store URL scheme 'mysql'"));
  CHECK_THROWS_WITH(open_store("agents.db"), cairn_test::ContainsSubstring("'agents.db' is not a store URL"));
  CHECK_THROWS_WITH(open_store(""), cairn_test::ContainsSubstring("is not a store URL"));
  CHECK_THROWS_WITH(open_store(":x"), cairn_test::ContainsSubstring("is not a store URL"));
  CHECK_THROWS_WITH(open_store("SQLITE:a.db"), cairn_test::ContainsSubstring("unknown store URL scheme 'SQLITE'"));
  CHECK_THROWS_WITH(open_store("sqlite:"), cairn_test::ContainsSubstring("needs a file path"));
  CHECK_THROWS_AS(open_store("postgresql:host=x"), invalid_argument);
}

TEST_CASE("open_store: sqlite:<path>") {
#if defined(CAIRN_HAS_SQLITE)
  store_test::TempDir dir;
  const auto path = dir.file("open.db");
  {
    auto store = open_store("sqlite:" + path);
    CHECK(dynamic_cast<SqliteArtifactStore*>(store.get()) != nullptr);
    (void)store->store(*note("kept"));
  }
  CHECK(open_store("sqlite:" + path)->fetch("kept", "t")->value() == "kept");
  CHECK_THROWS_AS(open_store("sqlite:/nonexistent-dir-cairn/x.db"), storage_error);
#else
  CHECK_THROWS_AS(open_store("sqlite:x.db"), invalid_argument);
  CHECK_THROWS_WITH(open_store("sqlite:x.db"), cairn_test::ContainsSubstring("need cairn::sqlite"));
  CHECK_THROWS_WITH(open_store("sqlite:x.db"), cairn_test::ContainsSubstring("CAIRN_WITH_SQLITE=ON"));
#endif
}

TEST_CASE("open_store and open_run_journal: sqlite:<path>?synchronous= chooses SQLite's synchronous mode") {
  // Bad options are refused before any file is touched, naming the part of the URL.
  CHECK_THROWS_AS(open_store("sqlite:x.db?synchronous=off"), invalid_argument);
  CHECK_THROWS_WITH(open_store("sqlite:x.db?synchronous=off"),
                    cairn_test::ContainsSubstring("'synchronous=off' in the URL 'sqlite:x.db?synchronous=off'"));
  CHECK_THROWS_WITH(open_run_journal("sqlite:x.db?synchronous="),
                    cairn_test::ContainsSubstring("synchronous must be normal or full"));
  CHECK_THROWS_WITH(open_run_journal("sqlite:x.db?journal_mode=wal"),
                    cairn_test::ContainsSubstring("unknown option 'journal_mode=wal'"));
  CHECK_THROWS_WITH(open_store("sqlite:?synchronous=normal"), cairn_test::ContainsSubstring("needs a file path"));
#if defined(CAIRN_HAS_SQLITE)
  store_test::TempDir dir;
  const auto path = dir.file("sync.db");
  {
    auto store = open_store("sqlite:" + path + "?synchronous=normal");
    auto journal = open_run_journal("sqlite:" + path + "?synchronous=normal");
    auto* s = dynamic_cast<SqliteArtifactStore*>(store.get());
    auto* j = dynamic_cast<SqliteRunJournal*>(journal.get());
    REQUIRE(s != nullptr);
    REQUIRE(j != nullptr);
    CHECK(s->path() == path);  // the options are not part of the file name
    CHECK(j->path() == path);
    CHECK(s->synchronous() == SqliteOptions::Synchronous::normal);
    CHECK(j->synchronous() == SqliteJournalOptions::Synchronous::normal);
    (void)store->store(*note("kept"));
  }
  CHECK(std::filesystem::exists(path));
  auto full = open_store("sqlite:" + path + "?synchronous=full");
  CHECK(dynamic_cast<SqliteArtifactStore&>(*full).synchronous() == SqliteOptions::Synchronous::full);
  CHECK(full->fetch("kept", "t")->value() == "kept");
  CHECK(dynamic_cast<SqliteRunJournal&>(*open_run_journal("sqlite:" + path)).synchronous() ==
        SqliteJournalOptions::Synchronous::full);  // the default
#endif
}

TEST_CASE("open_store: postgres:<conninfo> and postgresql:// URIs") {
#if defined(CAIRN_HAS_POSTGRES)
  const char* conninfo = std::getenv("CAIRN_TEST_PG_CONNINFO");
  REQUIRE(conninfo != nullptr);  // scripts/test starts a server; without one this test fails, never skips
  const std::string id = "open-" + detail::random_string(8, "abcdefghijklmnopqrstuvwxyz");
  auto store = open_store(std::string("postgres:") + conninfo);
  CHECK(dynamic_cast<PostgresArtifactStore*>(store.get()) != nullptr);
  (void)store->store(*note(id));
  CHECK(store->fetch(id, "t")->value() == id);
  store->remove(id, "t");
  // The error of a server that is not there names neither the password nor the whole conninfo.
  try {
    (void)open_store("postgres:host=127.0.0.1 port=1 password=hunter2 connect_timeout=2");
    FAIL("no error");
  } catch (const storage_error& e) {
    CHECK_THAT(e.what(), !cairn_test::ContainsSubstring("hunter2"));
  }
  try {
    (void)open_store("postgresql://u:hunter2@127.0.0.1:1/db?connect_timeout=2");
    FAIL("no error");
  } catch (const storage_error& e) {
    CHECK_THAT(e.what(), !cairn_test::ContainsSubstring("hunter2"));
  }
#else
  CHECK_THROWS_AS(open_store("postgres:host=x"), invalid_argument);
  CHECK_THROWS_WITH(open_store("postgres:host=x password=hunter2"),
                    cairn_test::ContainsSubstring("need cairn::postgres"));
  CHECK_THROWS_WITH(open_store("postgres:host=x password=hunter2"), !cairn_test::ContainsSubstring("hunter2"));
  CHECK_THROWS_WITH(open_store("postgresql://h/db"), cairn_test::ContainsSubstring("CAIRN_WITH_POSTGRES=ON"));
#endif
}

TEST_CASE("open_run_journal: one URL opens the journal next to the store, on every backend built") {
  auto entry = [](std::string kind) {
    JournalEntry e;
    e.kind = std::move(kind);
    e.data = 1;
    return std::vector<JournalEntry>{e};
  };
  auto memory = open_run_journal("memory:");
  CHECK(dynamic_cast<InMemoryRunJournal*>(memory.get()) != nullptr);
  CHECK(memory->append("t", "r", 0, entry("a")) == 1);
  CHECK_THROWS_WITH(open_run_journal("nope:x"),
                    cairn_test::ContainsSubstring("open_run_journal: unknown store URL scheme 'nope'"));
  CHECK_THROWS_WITH(open_run_journal("memory:x"), cairn_test::ContainsSubstring("'memory:' takes nothing"));
#if defined(CAIRN_HAS_SQLITE)
  store_test::TempDir dir;
  const std::string url = "sqlite:" + dir.file("both.db");
  {
    auto store = open_store(url);
    auto journal = open_run_journal(url);
    CHECK(dynamic_cast<SqliteRunJournal*>(journal.get()) != nullptr);
    (void)store->store(*note("kept"));
    (void)journal->append("t", "run", 0, entry("a"));
  }
  CHECK(open_store(url)->fetch("kept", "t") != nullptr);
  CHECK(open_run_journal(url)->info("t", "run")->last_seq == 1);
#else
  CHECK_THROWS_WITH(open_run_journal("sqlite:x.db"), cairn_test::ContainsSubstring("CAIRN_WITH_SQLITE=ON"));
#endif
#if defined(CAIRN_HAS_POSTGRES)
  const char* conninfo = std::getenv("CAIRN_TEST_PG_CONNINFO");
  REQUIRE(conninfo != nullptr);
  auto pg = open_run_journal(std::string("postgres:") + conninfo);
  CHECK(dynamic_cast<PostgresRunJournal*>(pg.get()) != nullptr);
  const std::string run = "open-" + detail::random_string(8, "abcdefghijklmnopqrstuvwxyz");
  CHECK(pg->append("t", run, 0, entry("a")) == 1);
  pg->remove("t", run);
  try {
    (void)open_run_journal("postgres:host=127.0.0.1 port=1 password=hunter2 connect_timeout=2");
    FAIL("no error");
  } catch (const storage_error& e) {
    CHECK_THAT(e.what(), !cairn_test::ContainsSubstring("hunter2"));
  }
#else
  CHECK_THROWS_WITH(open_run_journal("postgres:host=x password=hunter2"), !cairn_test::ContainsSubstring("hunter2"));
#endif
}

TEST_CASE("open_store(url, options): the host's embedder reaches whichever store the URL opens") {
  std::vector<std::string> urls{"memory:"};
#if defined(CAIRN_HAS_SQLITE)
  store_test::TempDir dir;
  urls.push_back("sqlite:" + dir.file("embedded.db"));
#endif
#if defined(CAIRN_HAS_POSTGRES)
  const char* conninfo = std::getenv("CAIRN_TEST_PG_CONNINFO");
  REQUIRE(conninfo != nullptr);  // scripts/test starts a server; without one this test fails, never skips
  urls.push_back(std::string("postgres:") + conninfo);
#endif
  for (const auto& url : urls) {
    INFO("url: " << (url.rfind("postgres:", 0) == 0 ? std::string("postgres:...") : url));
    // A tenant of its own per run: a PostgreSQL database outlives the test.
    const std::string tenant = "open-embed-" + detail::random_string(8, "abcdefghijklmnopqrstuvwxyz");
    auto embedder = std::make_shared<testing::WordHashEmbedder>(64);
    OpenStoreOptions options;
    options.embedder = embedder;
    auto store = open_store(url, options);
    REQUIRE(store->embedder() == embedder);
    const auto put = [&](const std::string& id, const std::string& text) {
      (void)store->store(
          *ArtifactRecord::builder().tenant_id(tenant).id(id).type("document").title(id).value(text).build());
    };
    put("cats", "cats purr on the mat");
    put("invoices", "quarterly invoices and receipts");
    CHECK(embedder->calls >= 2);  // the store embedded what it stored
    SearchQuery q;
    q.text = "cats purr";
    q.mode = SearchMode::similarity;
    const SearchPage page = store->search(tenant, q);
    REQUIRE(page.hits.size() == 2);
    CHECK(page.hits[0].record->id() == "cats");
    REQUIRE(page.hits[0].matched.similarity.has_value());
    CHECK(*page.hits[0].matched.similarity > *page.hits[1].matched.similarity);
    // open_store(url) opens the same backend without one: a similarity query by text is refused, naming why.
    auto plain = open_store(url);
    CHECK(plain->embedder() == nullptr);
    CHECK_THROWS_AS(plain->search(tenant, q), invalid_argument);
    store->remove("cats", tenant);
    store->remove("invoices", tenant);
  }
}
