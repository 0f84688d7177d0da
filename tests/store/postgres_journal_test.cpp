// PostgresRunJournal against a real server: scripts/test starts a throwaway cluster and passes its conninfo in
// CAIRN_TEST_PG_CONNINFO. Without it these tests fail; they never skip.
#include "cairn/store/postgres_journal.hpp"

#include <libpq-fe.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "cairn/store/postgres_store.hpp"
#include "cairn/testing/journal_conformance.hpp"
#include "catch.hpp"
#include "store_test_support.hpp"

using namespace cairn;
using nlohmann::json;

namespace {

std::string base_conninfo() {
  const char* c = std::getenv("CAIRN_TEST_PG_CONNINFO");
  if (!c || !*c) {
    FAIL("CAIRN_TEST_PG_CONNINFO is not set: run the tests with scripts/test, which starts a PostgreSQL server");
  }
  return c;
}

std::string random_name(const char* tag) {
  return std::string(tag) + cairn::detail::random_string(10, "abcdefghijklmnopqrstuvwxyz0123456789");
}

// A plain libpq connection, for looking at (and tampering with) the tables behind the journal's back.
class RawPg {
 public:
  explicit RawPg(const std::string& conninfo) : conn_(PQconnectdb(conninfo.c_str())) {
    if (PQstatus(conn_) != CONNECTION_OK) {
      const std::string msg = PQerrorMessage(conn_);
      PQfinish(conn_);
      throw std::runtime_error("cannot connect: " + msg);
    }
  }
  ~RawPg() { PQfinish(conn_); }
  RawPg(const RawPg&) = delete;
  RawPg& operator=(const RawPg&) = delete;

  /// The first column of the first row ("" when none; "<null>" for NULL).
  std::string scalar(const std::string& sql) {
    PGresult* res = PQexec(conn_, sql.c_str());
    const auto status = PQresultStatus(res);
    if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
      const std::string msg = PQresultErrorMessage(res);
      PQclear(res);
      throw std::runtime_error(sql + ": " + msg);
    }
    std::string out;
    if (status == PGRES_TUPLES_OK && PQntuples(res) > 0)
      out = PQgetisnull(res, 0, 0) ? "<null>" : PQgetvalue(res, 0, 0);
    PQclear(res);
    return out;
  }

 private:
  PGconn* conn_;
};

// A database of its own, for tests that look at or change the schema; dropped afterwards.
class TempDatabase {
 public:
  TempDatabase() : name_(random_name("cairn_jtest_")) { RawPg(base_conninfo()).scalar("CREATE DATABASE " + name_); }
  ~TempDatabase() {
    try {
      RawPg(base_conninfo()).scalar("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
    } catch (...) {
    }
  }
  TempDatabase(const TempDatabase&) = delete;
  TempDatabase& operator=(const TempDatabase&) = delete;
  /// libpq takes the last value of a repeated keyword.
  std::string conninfo() const { return base_conninfo() + " dbname=" + name_; }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
};

std::vector<JournalEntry> one(std::string kind, json data) {
  JournalEntry e;
  e.kind = std::move(kind);
  e.data = std::move(data);
  return {e};
}

PostgresJournalOptions pool_of(std::size_t n) {
  PostgresJournalOptions o;
  o.pool_size = n;
  return o;
}

// A TCP proxy in front of the server that can cut the client side of every connection through it while keeping the
// server side open: to the journal the connection is lost, while its backend goes on with what it was doing (a
// network partition, as the server sees it).
class CuttableProxy {
 public:
  explicit CuttableProxy(int server_port) : server_port_(server_port) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listen_fd_, 16) != 0) {
      throw std::runtime_error("proxy: cannot listen");
    }
    socklen_t len = sizeof addr;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    if (::pipe(wake_) != 0) throw std::runtime_error("proxy: pipe");
    thread_ = std::thread([this] { loop(); });
  }
  ~CuttableProxy() {
    stop_ = true;
    (void)!::write(wake_[1], "s", 1);
    thread_.join();
    for (auto& p : pairs_) {
      if (p.client >= 0) ::close(p.client);
      ::close(p.server);
    }
    ::close(listen_fd_);
    ::close(wake_[0]);
    ::close(wake_[1]);
  }
  CuttableProxy(const CuttableProxy&) = delete;
  CuttableProxy& operator=(const CuttableProxy&) = delete;

  int port() const { return port_; }
  /// While set, new connections are closed as soon as they are accepted (the server looks unreachable).
  void refuse(bool on) { refusing_ = on; }

  /// Closes the client side of every connection open now; returns once done.
  void cut() {
    const int before = cuts_;
    cut_requested_ = true;
    (void)!::write(wake_[1], "c", 1);
    while (cuts_ == before) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }

 private:
  struct Pair {
    int client;
    int server;
  };

  void loop() {
    char buf[65536];
    while (!stop_) {
      std::vector<pollfd> fds = {{listen_fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
      for (const auto& p : pairs_) {
        fds.push_back({p.client, static_cast<short>(p.client >= 0 ? POLLIN : 0), 0});
        // A cut pair's server side is left be.
        fds.push_back({p.server, static_cast<short>(p.client >= 0 ? POLLIN : 0), 0});
      }
      if (::poll(fds.data(), fds.size(), 1000) <= 0) continue;
      if (fds[1].revents) {
        (void)!::read(wake_[0], buf, sizeof buf);
        if (cut_requested_.exchange(false)) {
          for (auto& p : pairs_) {
            if (p.client >= 0) ::close(p.client);
            p.client = -1;
          }
          ++cuts_;
        }
        continue;
      }
      if (fds[0].revents & POLLIN) {
        const int client = ::accept(listen_fd_, nullptr, nullptr);
        const int server = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = htons(static_cast<std::uint16_t>(server_port_));
        if (refusing_ || ::connect(server, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
          ::close(client);
          ::close(server);
        } else {
          pairs_.push_back({client, server});
        }
      }
      const std::size_t polled = (fds.size() - 2) / 2;  // a pair accepted just now was not polled yet
      for (std::size_t i = 0; i < polled; ++i) {
        auto& p = pairs_[i];
        for (int side = 0; side < 2 && p.client >= 0; ++side) {
          if (!(fds[2 + 2 * i + static_cast<std::size_t>(side)].revents & (POLLIN | POLLHUP | POLLERR))) continue;
          const int from = side == 0 ? p.client : p.server;
          const int to = side == 0 ? p.server : p.client;
          const ssize_t n = ::read(from, buf, sizeof buf);
          if (n <= 0) {  // one side closed: close the other side's client end, keep the server end for cleanup
            ::close(p.client);
            p.client = -1;
            break;
          }
          for (ssize_t done = 0; done < n;) {
            const ssize_t w = ::write(to, buf + done, static_cast<std::size_t>(n - done));
            if (w <= 0) break;
            done += w;
          }
        }
      }
    }
  }

  int server_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  int wake_[2] = {-1, -1};
  std::vector<Pair> pairs_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> cut_requested_{false};
  std::atomic<bool> refusing_{false};
  std::atomic<int> cuts_{0};
  std::thread thread_;
};

int server_port() {
  PQconninfoOption* opts = PQconninfoParse(base_conninfo().c_str(), nullptr);
  int port = 5432;
  for (auto* o = opts; o && o->keyword; ++o) {
    if (std::string(o->keyword) == "port" && o->val) port = std::atoi(o->val);
  }
  PQconninfoFree(opts);
  return port;
}

// Waits (up to 20 s) until `n` backends of the database wait for a lock.
void wait_for_lock_waiters(RawPg& raw, const std::string& db, int n) {
  for (int i = 0; i < 2000; ++i) {
    if (raw.scalar("SELECT count(*) FROM pg_stat_activity WHERE datname = '" + db + "' AND wait_event_type = 'Lock'") ==
        std::to_string(n)) {
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  FAIL("no " << n << " backends waiting for a lock");
}

}  // namespace

TEST_CASE("PostgresRunJournal passes the conformance suite, one database shared by every check") {
  const auto conninfo = base_conninfo();
  PostgresRunJournal shared(conninfo, pool_of(8));
  for (const auto& check : testing::journal_conformance_checks()) {
    INFO(check.name);
    CHECK_NOTHROW(check.run(shared));
    PostgresRunJournal own(conninfo, pool_of(8));  // and a journal of its own on the same database
    CHECK_NOTHROW(check.run(own));
  }
}

TEST_CASE("PostgresRunJournal passes the conformance suite on a new database with a pool of one") {
  TempDatabase db;
  PostgresRunJournal journal(db.conninfo(), pool_of(1));
  for (const auto& check : testing::journal_conformance_checks()) {
    INFO(check.name);
    CHECK_NOTHROW(check.run(journal));
  }
}

TEST_CASE("postgres journal: runs survive a new journal and a dropped connection, data is the exact JSON text") {
  TempDatabase db;
  const json tricky = {{"big", 18446744073709551615ULL},
                       {"f", 1.0},
                       {"e", 1e300},
                       {"nul", std::string("a\0b", 3)},
                       {"text", "Grüße 世界 🚀 \"q\" \\"},
                       {"nested", {{"z", {1, {2, {}}}}}}};
  {
    PostgresRunJournal journal(db.conninfo());
    (void)journal.append("t", "run", 0, one("context.message", tricky));
    std::vector<JournalEntry> batch = {one("a", 1)[0], one(snapshot_kind, {{"s", "x,\"}{"}})[0], one("c", "\\")[0]};
    CHECK(journal.append("t", "run", 1, batch) == 4);
  }
  PostgresRunJournal journal(db.conninfo(), pool_of(1));
  const auto all = journal.read("t", "run");
  REQUIRE(all.size() == 4);
  CHECK(all[0].data.dump() == tricky.dump());
  CHECK(all[2].data == json({{"s", "x,\"}{"}}));
  CHECK(all[3].data == "\\");
  CHECK(journal.read_for_restore("t", "run").front().seq == 3);
  RawPg raw(db.conninfo());
  CHECK(raw.scalar("SELECT data FROM cairn_run_entries WHERE seq = 1") == tricky.dump());
  CHECK(raw.scalar("SELECT pg_typeof(data)::text FROM cairn_run_entries LIMIT 1") == "text");

  // The server ends the journal's connection between two calls: the next call reconnects and goes on.
  raw.scalar("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" + db.name() +
             "' AND pid <> pg_backend_pid()");
  CHECK(journal.append("t", "run", 4, one("after", 5)) == 5);
  CHECK(journal.reconnects() == 1);
  CHECK(journal.read("t", "run").size() == 5);
  CHECK(raw.scalar("SELECT count(*) FROM cairn_run_entries WHERE seq = 5") == "1");
}

// A trigger on cairn_run_entries records the `jit` setting of each session that appends: the journal's own
// sessions, whatever the database's default.
TEST_CASE("postgres journal: its sessions run without JIT, where the database's default has it on") {
  TempDatabase db;
  RawPg(db.conninfo()).scalar("ALTER DATABASE " + db.name() + " SET jit = on");
  {
    PostgresRunJournal journal(db.conninfo());  // makes the schema
  }
  RawPg raw(db.conninfo());  // a session opened after the ALTER: the database's default
  REQUIRE(raw.scalar("SHOW jit") == "on");
  for (const auto& sql : store_test::record_jit_sql("cairn_run_entries")) raw.scalar(sql);
  PostgresRunJournal journal(db.conninfo());
  CHECK(journal.append("t", "run", 0, one("a", 1)) == 1);
  CHECK(raw.scalar("SELECT string_agg(setting, ',') FROM seen_jit") == "off");
  CHECK(journal.read("t", "run").size() == 1);
}

TEST_CASE("postgres journal: an append is one statement, one round trip") {
  PostgresRunJournal journal(base_conninfo(), pool_of(1));
  const auto t = random_name("rt-");
  (void)journal.info(t, "warm-up");  // the pool's connection is open and its statements prepared
  auto before = journal.statements();
  (void)journal.append(t, "r", 0, one("a", std::string(400, 'x')));
  CHECK(journal.statements() - before == 1);
  before = journal.statements();
  (void)journal.append(t, "r", 1, one("b", 2));
  CHECK(journal.statements() - before == 1);
  before = journal.statements();
  (void)journal.append(t, "r", 2, {one("c", 3)[0], one("d", 4)[0], one("e", 5)[0]});
  CHECK(journal.statements() - before == 1);
  // Only a conflict costs a second statement (to learn the actual seq).
  before = journal.statements();
  CHECK_THROWS_AS(journal.append(t, "r", 1, one("late", 0)), conflict);
  CHECK(journal.statements() - before == 2);
}

TEST_CASE("postgres journal: a new database gets the schema, several journals and a store may create it at once") {
  TempDatabase db;
  std::vector<std::thread> pool;
  std::atomic<int> failures{0};
  for (int i = 0; i < 5; ++i) {
    pool.emplace_back([&, i] {
      try {
        if (i == 0) {
          PostgresArtifactStore store(db.conninfo());
        } else {
          PostgresRunJournal journal(db.conninfo(), pool_of(1));
        }
      } catch (...) {
        ++failures;
      }
    });
  }
  for (auto& t : pool) t.join();
  CHECK(failures == 0);
  RawPg raw(db.conninfo());
  CHECK(raw.scalar("SELECT version FROM cairn_run_schema") == std::to_string(PostgresRunJournal::schema_version));
  CHECK(raw.scalar("SELECT count(*) FROM cairn_run_schema") == "1");
  CHECK(raw.scalar("SELECT version FROM cairn_schema") == std::to_string(PostgresArtifactStore::schema_version));
}

TEST_CASE("postgres journal: a database of a newer cairn is refused, and left as it was") {
  TempDatabase db;
  {
    PostgresRunJournal journal(db.conninfo());
    (void)journal.append("t", "keep", 0, one("a", "kept"));
  }
  RawPg raw(db.conninfo());
  raw.scalar("UPDATE cairn_run_schema SET version = 999");
  try {
    PostgresRunJournal journal(db.conninfo());
    FAIL("no error");
  } catch (const storage_error& e) {
    CHECK_THAT(e.what(), cairn_test::ContainsSubstring("journal schema version 999"));
    CHECK_THAT(e.what(), cairn_test::ContainsSubstring("newer"));
  }
  CHECK(raw.scalar("SELECT version FROM cairn_run_schema") == "999");
  CHECK(raw.scalar("SELECT data FROM cairn_run_entries WHERE run_id = 'keep'") == "\"kept\"");
}

TEST_CASE("postgres journal: bad conninfo, unreachable or silent servers and bad options are clear errors") {
  CHECK_THROWS_AS(PostgresRunJournal("this is = not = conninfo password=hunter2"), invalid_argument);
  CHECK_THROWS_WITH(PostgresRunJournal("nonsense_key=1 password=hunter2"), !cairn_test::ContainsSubstring("hunter2"));
  try {
    PostgresRunJournal journal("host=127.0.0.1 port=1 user=x password=hunter2");
    FAIL("no error");
  } catch (const storage_error& e) {
    CHECK_THAT(e.what(), cairn_test::ContainsSubstring("cannot connect"));
    CHECK_THAT(e.what(), !cairn_test::ContainsSubstring("hunter2"));
  }
  CHECK_THROWS_AS(PostgresRunJournal(base_conninfo() + " dbname=no_such_database_cairn"), storage_error);
  PostgresJournalOptions bad;
  bad.statement_timeout_ms = 0;
  CHECK_THROWS_WITH(PostgresRunJournal(base_conninfo(), bad), cairn_test::ContainsSubstring("statement_timeout_ms"));

  // A server that accepts the TCP connection and then never answers: the connect deadline ends the wait.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(fd, 8) == 0);
  socklen_t len = sizeof addr;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  PostgresJournalOptions quick;
  quick.connect_timeout_ms = 300;
  const auto start = std::chrono::steady_clock::now();
  try {
    PostgresRunJournal journal(
        fmt::format("host=127.0.0.1 port={} user=x password=hunter2 sslmode=disable", ntohs(addr.sin_port)), quick);
    FAIL("no error");
  } catch (const storage_error& e) {
    CHECK_THAT(e.what(), cairn_test::ContainsSubstring("within 300 ms"));
    CHECK_THAT(e.what(), !cairn_test::ContainsSubstring("hunter2"));
  }
  // Not a timing test: without the deadline this call would wait for ever.
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
  ::close(fd);
}

TEST_CASE("postgres journal: a statement waiting on a lock gives up at the statement timeout and writes nothing") {
  TempDatabase db;
  PostgresJournalOptions o;
  o.statement_timeout_ms = 300;
  PostgresRunJournal journal(db.conninfo(), o);
  (void)journal.append("t", "r", 0, one("a", 1));
  RawPg locker(db.conninfo());
  locker.scalar("BEGIN");
  locker.scalar("SELECT last_seq FROM cairn_runs WHERE run_id = 'r' FOR UPDATE");
  CHECK_THROWS_WITH(journal.append("t", "r", 1, one("b", 2)), cairn_test::ContainsSubstring("statement timeout"));
  locker.scalar("ROLLBACK");
  CHECK(journal.info("t", "r")->last_seq == 1);
  CHECK(journal.append("t", "r", 1, one("b", 2)) == 2);
}

TEST_CASE(
    "postgres journal: a call that gets no pooled connection within pool_wait_ms fails clearly, and loses "
    "nothing") {
  TempDatabase db;
  PostgresJournalOptions o = pool_of(1);
  o.pool_wait_ms = 300;
  PostgresRunJournal journal(db.conninfo(), o);
  (void)journal.append("t", "r", 0, one("a", 1));
  RawPg locker(db.conninfo());
  RawPg watcher(db.conninfo());
  locker.scalar("BEGIN");
  locker.scalar("SELECT last_seq FROM cairn_runs WHERE run_id = 'r' FOR UPDATE");
  // The writer holds the pool's only connection while its append waits for the locker's row lock.
  std::uint64_t got = 0;
  std::string writer_error;
  std::thread writer([&] {
    try {
      got = journal.append("t", "r", 1, one("b", 2));
    } catch (const std::exception& e) {
      writer_error = e.what();
    }
  });
  struct Release {  // ends the lock and joins the writer however this test leaves
    RawPg& locker;
    std::thread& writer;
    bool done = false;
    void operator()() {
      if (done) return;
      done = true;
      locker.scalar("COMMIT");
      writer.join();
    }
    ~Release() {
      try {
        (*this)();
      } catch (...) {
      }
    }
  } release{locker, writer};
  wait_for_lock_waiters(watcher, db.name(), 1);

  const auto start = std::chrono::steady_clock::now();
  try {
    (void)journal.info("t", "r");
    FAIL("no error");
  } catch (const storage_error& e) {
    CHECK_THAT(e.what(), cairn_test::ContainsSubstring("postgres journal: all 1 pooled connection stayed in use for "
                                                       "300 ms"));
    CHECK_THAT(e.what(), cairn_test::ContainsSubstring("PostgresJournalOptions::pool_size or pool_wait_ms"));
  }
  // A lower bound only: the call waited its pool_wait_ms before it gave up.
  CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(300));

  release();
  CHECK(writer_error.empty());
  CHECK(got == 2);
  CHECK(journal.info("t", "r")->last_seq == 2);
  CHECK(journal.read("t", "r").size() == 2);
  CHECK(journal.append("t", "r", 2, one("c", 3)) == 3);
  CHECK(journal.reconnects() == 0);

  o.pool_wait_ms = -1;
  CHECK_THROWS_WITH(PostgresRunJournal(db.conninfo(), o), cairn_test::ContainsSubstring("pool_wait_ms"));
}

TEST_CASE("postgres journal: a damaged row is a storage_error naming the run and the entry") {
  TempDatabase db;
  PostgresRunJournal journal(db.conninfo());
  (void)journal.append("t", "ok", 0, one("a", 1));
  (void)journal.append("t", "broken", 0, {one("a", 1)[0], one("b", 2)[0]});
  RawPg raw(db.conninfo());
  raw.scalar("UPDATE cairn_run_entries SET data = '{not json' WHERE run_id = 'broken' AND seq = 2");
  CHECK(journal.read("t", "ok")[0].data == 1);
  CHECK_THROWS_WITH(journal.read("t", "broken"), cairn_test::ContainsSubstring("run 'broken' seq 2"));
  CHECK_THROWS_AS(journal.read("t", "broken"), storage_error);
  CHECK(journal.read("t", "broken", 1, 1)[0].data == 1);
  raw.scalar("DELETE FROM cairn_run_entries WHERE run_id = 'broken' AND seq = 2");
  CHECK_THROWS_WITH(journal.read("t", "broken"), cairn_test::ContainsSubstring("should hold seq 1 to 2"));
  journal.remove("t", "broken");
  CHECK(!journal.info("t", "broken"));
  raw.scalar("UPDATE cairn_runs SET last_seq = -4 WHERE run_id = 'ok'");
  CHECK_THROWS_WITH(journal.info("t", "ok"), cairn_test::ContainsSubstring("run 'ok': last_seq is -4"));
}

TEST_CASE("postgres journal: what PostgreSQL text cannot hold is refused before anything is written") {
  PostgresRunJournal journal(base_conninfo());
  const auto t = random_name("text-");
  CHECK_THROWS_AS(journal.append(std::string("t\0x", 3), "r", 0, one("a", 1)), invalid_argument);
  CHECK_THROWS_AS(journal.append("\xff", "r", 0, one("a", 1)), invalid_argument);
  CHECK(!journal.info(std::string("t\0x", 3), "r"));
  CHECK(journal.sweep("\xff", 1LL << 60).empty());
  CHECK_THROWS_WITH(journal.append(t, "r", 0, one("a", std::string("\xff"))), cairn_test::ContainsSubstring("UTF-8"));
  PostgresJournalOptions small;
  small.json_limits.max_depth = 3;
  PostgresRunJournal shallow(base_conninfo(), small);
  CHECK_THROWS_AS(shallow.append(t, "r", 0, one("a", json::parse("[[[[1]]]]"))), limit_exceeded);
  CHECK(!journal.info(t, "r"));
}

TEST_CASE("postgres journal: two processes x 4 threads racing appends on the same runs never fork or lose one") {
  // Each worker keeps the last seq it knows per run and appends after it; a conflict tells it the actual seq.
  constexpr int threads = 4;
  constexpr int attempts = 300;
  constexpr int runs = 3;
  const auto tenant = random_name("race-");
  store_test::TempDir dir;
  const std::string child_file = dir.file("child.txt");
  // One line per acknowledged append: "<run> <seq> <who> <thread> <k>"; "bad ..." for a wrong answer.
  auto race = [&](const std::string& who) {
    PostgresRunJournal journal(base_conninfo(), pool_of(threads));
    std::vector<std::vector<std::string>> lines(threads);
    std::vector<std::thread> pool;
    for (int th = 0; th < threads; ++th) {
      pool.emplace_back([&, th] {
        auto& mine = lines[static_cast<std::size_t>(th)];
        std::uint64_t known[runs] = {0, 0, 0};
        for (int k = 0; k < attempts; ++k) {
          const int r = (k + th) % runs;
          const std::string run = "run-" + std::to_string(r);
          try {
            const auto seq =
                journal.append(tenant, run, known[r], one("step", {{"who", who}, {"thread", th}, {"k", k}}));
            if (seq != known[r] + 1) mine.push_back("bad seq");
            known[r] = seq;
            mine.push_back(fmt::format("{} {} {} {} {}", run, seq, who, th, k));
          } catch (const conflict& c) {
            if (c.expected() != known[r] || c.actual() <= known[r]) mine.push_back("bad conflict");
            known[r] = c.actual();
            mine.push_back("conflict");
          } catch (const std::exception& e) {
            mine.push_back(std::string("bad ") + e.what());
          }
        }
      });
    }
    for (auto& t : pool) t.join();
    std::vector<std::string> all;
    for (auto& l : lines) all.insert(all.end(), l.begin(), l.end());
    return all;
  };

  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    int code = 0;
    try {
      std::ofstream out(child_file);
      for (const auto& line : race("child")) out << line << '\n';
    } catch (...) {
      code = 1;
    }
    _exit(code);
  }
  auto lines = race("parent");
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  std::ifstream in(child_file);
  for (std::string line; std::getline(in, line);) lines.push_back(line);

  std::size_t conflicts = 0;
  std::map<std::string, std::map<std::uint64_t, std::string>> acked;  // run -> seq -> "who thread k"
  std::size_t acks = 0;
  for (const auto& line : lines) {
    INFO(line);
    REQUIRE(line.rfind("bad", 0) != 0);
    if (line == "conflict") {
      ++conflicts;
      continue;
    }
    std::istringstream s(line);
    std::string run, who;
    std::uint64_t seq = 0;
    int th = 0, k = 0;
    s >> run >> seq >> who >> th >> k;
    ++acks;
    REQUIRE(acked[run].emplace(seq, fmt::format("{} {} {}", who, th, k)).second);  // no seq acknowledged twice
  }
  CHECK(acks + conflicts == 2u * threads * attempts);
  CHECK(conflicts > 0);  // the runs were really raced for

  PostgresRunJournal journal(base_conninfo());
  std::size_t stored = 0;
  for (int r = 0; r < runs; ++r) {
    const std::string run = "run-" + std::to_string(r);
    const auto entries = journal.read(tenant, run);
    stored += entries.size();
    REQUIRE(entries.size() == acked[run].size());  // nothing lost, nothing unacknowledged
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const auto& e = entries[i];
      REQUIRE(e.seq == i + 1);  // 1..n, consecutive: no fork, no gap
      const auto& want = acked[run].at(e.seq);
      REQUIRE(fmt::format("{} {} {}", e.data["who"].get<std::string>(), e.data["thread"].get<int>(),
                          e.data["k"].get<int>()) == want);  // at the seq its writer was told
    }
  }
  CHECK(stored == acks);
  // The counts, for docs/runs-postgres.md.
  WARN(fmt::format("race: {} attempts, {} appended, {} conflicts, 0 forked or lost", 2 * threads * attempts, acks,
                   conflicts));
}

TEST_CASE("postgres journal: an append cut off while it waits on the server is retried and written exactly once") {
  // The journal loses its connection while its append waits for a row lock on the server; it reconnects and
  // retries with the same write token while the first try is still waiting there. Either the first try commits
  // (the retry then finds the run moved on and the token at the new seq: success) or it dies (the retry writes).
  for (const bool first_commits : {true, false}) {
    INFO("first try commits: " << first_commits);
    TempDatabase db;
    CuttableProxy proxy(server_port());
    PostgresRunJournal journal(db.conninfo() + " host=127.0.0.1 port=" + std::to_string(proxy.port()), pool_of(1));
    (void)journal.append("t", "r", 0, one("a", 1));
    RawPg locker(db.conninfo());
    RawPg watcher(db.conninfo());
    locker.scalar("BEGIN");
    locker.scalar("SELECT last_seq FROM cairn_runs WHERE run_id = 'r' FOR UPDATE");
    std::uint64_t got = 0;
    std::string error;
    std::thread writer([&] {
      try {
        got = journal.append("t", "r", 1, one("b", 2));
      } catch (const std::exception& e) {
        error = e.what();
      }
    });
    wait_for_lock_waiters(watcher, db.name(), 1);  // the first try waits behind the locker
    const std::string first_pid = watcher.scalar("SELECT pid FROM pg_stat_activity WHERE datname = '" + db.name() +
                                                 "' AND wait_event_type = 'Lock'");
    proxy.cut();
    wait_for_lock_waiters(watcher, db.name(), 2);  // the retry, on a new connection, waits too
    if (!first_commits) watcher.scalar("SELECT pg_terminate_backend(" + first_pid + ")");
    locker.scalar("ROLLBACK");
    writer.join();
    CHECK(error.empty());
    CHECK(got == 2);
    CHECK(journal.reconnects() == 1);
    const auto all = journal.read("t", "r");
    REQUIRE(all.size() == 2);
    CHECK(all[1].data == 2);
    CHECK(watcher.scalar("SELECT count(*) FROM cairn_run_entries") == "2");
    CHECK(journal.append("t", "r", 2, one("c", 3)) == 3);
  }
}

TEST_CASE("postgres journal: when the retry cannot run either, the error says the outcome is unknown, and it is") {
  TempDatabase db;
  CuttableProxy proxy(server_port());
  PostgresJournalOptions o = pool_of(1);
  o.reconnect_timeout_ms = 300;
  PostgresRunJournal journal(db.conninfo() + " host=127.0.0.1 port=" + std::to_string(proxy.port()), o);
  (void)journal.append("t", "r", 0, one("a", 1));
  RawPg locker(db.conninfo());
  RawPg watcher(db.conninfo());
  locker.scalar("BEGIN");
  locker.scalar("SELECT last_seq FROM cairn_runs WHERE run_id = 'r' FOR UPDATE");
  std::string error;
  std::thread writer([&] {
    try {
      (void)journal.append("t", "r", 1, one("b", 2));
    } catch (const storage_error& e) {
      error = e.what();
    }
  });
  wait_for_lock_waiters(watcher, db.name(), 1);
  proxy.refuse(true);
  proxy.cut();
  writer.join();
  CHECK_THAT(error, cairn_test::ContainsSubstring("append to run 'r' after seq 1"));
  CHECK_THAT(error, cairn_test::ContainsSubstring("unknown"));
  locker.scalar("ROLLBACK");  // the first try, still alive on the server, now commits
  PostgresRunJournal direct(db.conninfo());
  for (int i = 0; i < 2000 && direct.info("t", "r")->last_seq != 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(direct.read("t", "r").back().data == 2);
}

// Issue 25: fork(src, 2) racing prune(src) used to succeed and leave the fork reading entries the prune deleted.
// The conformance suite's race, with two journal objects (two connections), and with two processes.
TEST_CASE("postgres journal: a fork racing a prune from two journals leaves a readable fork or a clear refusal") {
  const auto conninfo = base_conninfo();
  PostgresRunJournal a(conninfo, pool_of(2));
  PostgresRunJournal b(conninfo, pool_of(2));
  const int rounds = testing::ForkPruneRace::rounds();
  int forks_made = 0;
  CHECK_NOTHROW(forks_made = testing::race_fork_and_prune(a, b, rounds, random_name("forkprune-")));
  WARN("fork/prune race, two journals: the fork won " << forks_made << " of " << rounds << " rounds");
}

TEST_CASE("postgres journal: a fork racing a prune from two processes leaves a readable fork or a clear refusal") {
  const int rounds = testing::ForkPruneRace::rounds();
  const int forks_made = store_test::check_fork_prune_race_across_processes(
      [] { return std::make_unique<PostgresRunJournal>(base_conninfo(), pool_of(2)); }, random_name("forkprune-"),
      rounds);
  WARN("fork/prune race, two processes: the fork won " << forks_made << " of " << rounds << " rounds");
}

// Issue 25: sweep removed one link of a chain of stale forks per pass over all stale runs (a chain of n forks cost
// about n^2/2 statements). A removed fork's stale source is tried at once now: statements grow linearly.
TEST_CASE("postgres journal: sweeping a chain of stale forks costs statements in proportion to its length") {
  const auto tenant = random_name("sweepchain-");
  PostgresRunJournal journal(base_conninfo(), pool_of(1));
  auto clock = std::make_shared<testing::detail::FixedClock>();
  journal.set_clock(clock);
  clock->now = 1000;
  constexpr int n = 40;
  (void)journal.append(tenant, "link-00", 0, one("a", 1));
  for (int i = 1; i <= n; ++i) journal.fork(tenant, fmt::format("link-{:02}", i - 1), 1, fmt::format("link-{:02}", i));
  clock->now = 9000;
  (void)journal.append(tenant, "fresh", 0, one("a", 1));  // not stale: stays
  const auto before = journal.statements();
  auto removed = journal.sweep(tenant, 5000);
  const auto used = journal.statements() - before;
  std::sort(removed.begin(), removed.end());
  REQUIRE(removed.size() == n + 1);
  CHECK(removed.front() == "link-00");
  CHECK(!journal.info(tenant, "link-00"));
  CHECK(journal.info(tenant, "link-40") == std::nullopt);
  CHECK(journal.info(tenant, "fresh").has_value());
  // Per link: its forks, its head, its remove, and a look at it in each of at most 2 listings; the old way took
  // about n^2/2 = 800 statements for n = 40.
  INFO("statements for the sweep: " << used);
  CHECK(used <= 6 * (n + 1) + 4);
}

TEST_CASE("postgres journal: a version-1 database gets cairn_run_prune on connect, and keeps its runs") {
  TempDatabase db;
  {
    PostgresRunJournal journal(db.conninfo());
    (void)journal.append("t", "keep", 0, one("a", "kept"));
  }
  RawPg raw(db.conninfo());
  // What a version-1 database looks like: no cairn_run_prune.
  raw.scalar("DROP FUNCTION cairn_run_prune(text, text, bigint)");
  raw.scalar("UPDATE cairn_run_schema SET version = 1");
  PostgresRunJournal journal(db.conninfo());
  CHECK(raw.scalar("SELECT version FROM cairn_run_schema") == std::to_string(PostgresRunJournal::schema_version));
  CHECK(raw.scalar("SELECT count(*) FROM pg_proc WHERE proname = 'cairn_run_prune'") == "1");
  CHECK(journal.read("t", "keep")[0].data == "kept");
  (void)journal.append("t", "keep", 1, one(snapshot_kind, {{"s", 2}}));
  CHECK(journal.prune("t", "keep") == 1);
  CHECK(journal.info("t", "keep")->kept_from == 2);
}
