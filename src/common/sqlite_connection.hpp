// cairn (private) — what the SQLite store and the SQLite run journal share: opening a connection the same way (WAL,
// busy timeout, synchronous mode), its cache of prepared statements, a statement in use, a write transaction, and
// the append-only migration of a schema kept in its own version table. Each user brings its own statements (an
// enum and the SQL of each) and its own tables; the connection pool is src/common/connection_pool.hpp.
#pragma once

#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#include "cairn/detail/text.hpp"
#include "cairn/error.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace detail {

/// How a connection is opened; `where` starts every error message ("sqlite store 'agents.db'").
struct SqliteOpen {
  std::string path;
  std::string where;
  int busy_timeout_ms = 10000;
  bool synchronous_full = true;
  int page_size = 0;  // of a file this connection creates (PRAGMA page_size); 0: SQLite's default (4096)
};

/// One open database handle with `N` lazily prepared statements, whose SQL `sql(i)` gives. Used by one thread at a
/// time (the pool sees to it).
template <std::size_t N>
class SqliteConnection {
 public:
  using StatementSql = std::string (*)(std::size_t);

  SqliteConnection(const SqliteOpen& open, StatementSql sql) : where_(open.where), sql_(sql) {
    const int rc = sqlite3_open_v2(open.path.c_str(), &db_,
                                   SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK) {
      const std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
      sqlite3_close_v2(db_);
      throw storage_error(fmt::format("{}: cannot open the database: {}", where_, msg));
    }
    sqlite3_extended_result_codes(db_, 1);
    sqlite3_busy_timeout(db_, open.busy_timeout_ms);
    try {
      // Before WAL: a page size takes effect only while the file has no pages yet (an existing file keeps its own).
      if (open.page_size > 0) exec(fmt::format("PRAGMA page_size = {}", open.page_size).c_str());
      const std::string mode = switch_to_wal(open.busy_timeout_ms);
      if (mode != "wal") {
        throw storage_error(
            fmt::format("{}: cannot switch the database to WAL mode (journal_mode is '{}')", where_, mode));
      }
      exec(open.synchronous_full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL");
    } catch (...) {
      sqlite3_close_v2(db_);
      throw;
    }
  }
  ~SqliteConnection() {
    for (auto* s : stmts_) sqlite3_finalize(s);
    sqlite3_close_v2(db_);
  }
  SqliteConnection(const SqliteConnection&) = delete;
  SqliteConnection& operator=(const SqliteConnection&) = delete;

  sqlite3* db() const noexcept { return db_; }
  const std::string& where() const noexcept { return where_; }

  [[noreturn]] void fail(const char* what) const {
    throw storage_error(fmt::format("{}: {}: {}", where_, what, sqlite3_errmsg(db_)));
  }

  void exec(const char* sql) {
    if (sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) != SQLITE_OK) fail(sql);
  }
  /// BEGIN IMMEDIATE and COMMIT, each prepared once (they run on every write).
  void begin_immediate() { run_cached(stmts_[N], "BEGIN IMMEDIATE"); }
  void commit() { run_cached(stmts_[N + 1], "COMMIT"); }
  /// BEGIN (deferred: a read transaction until it writes), prepared once (a search runs one per query).
  void begin() { run_cached(stmts_[N + 2], "BEGIN"); }
  /// Rolls back what is open, ignoring errors (for unwinding); prepared once when it can be.
  void rollback() noexcept {
    if (!stmts_[N + 3] &&
        sqlite3_prepare_v3(db_, "ROLLBACK", -1, SQLITE_PREPARE_PERSISTENT, &stmts_[N + 3], nullptr) != SQLITE_OK) {
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      return;
    }
    sqlite3_step(stmts_[N + 3]);
    sqlite3_reset(stmts_[N + 3]);
  }

  /// Runs a one-row, one-column statement; false when it returned no row.
  bool query_text(const char* sql, std::string& out) {
    const int rc = step_text(sql, out);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) fail(sql);
    return rc == SQLITE_ROW;
  }

  /// Statement `i`, prepared on first use and kept for the connection's lifetime.
  sqlite3_stmt* statement(std::size_t i) {
    if (!stmts_[i]) {
      const std::string sql = sql_(i);
      if (sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &stmts_[i],
                             nullptr) != SQLITE_OK) {
        fail("preparing a statement");
      }
    }
    return stmts_[i];
  }

 private:
  // PRAGMA journal_mode = WAL, which needs the file to itself for a moment. Connections that open a new file at
  // once each read it (a shared lock) before they ask for that exclusive lock, and SQLite answers all but one of
  // them SQLITE_BUSY at once, without the busy handler (waiting could deadlock). Such a connection has let go of
  // its lock by then, so it waits a little and asks again, for as long as the busy timeout allows. Returns the
  // journal mode the database is in afterwards.
  std::string switch_to_wal(int busy_timeout_ms) {
    constexpr const char* sql = "PRAGMA journal_mode = WAL";
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(busy_timeout_ms);
    for (int pause_ms = 1;; pause_ms = std::min(pause_ms * 2, 50)) {
      std::string mode;
      const int rc = step_text(sql, mode);
      if (rc == SQLITE_ROW) return mode;
      if ((rc & 0xff) != SQLITE_BUSY || std::chrono::steady_clock::now() >= deadline) fail(sql);
      std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
    }
  }

  // Prepares and steps `sql` once, its first column into `out` when it returns a row; returns the step's code
  // (the error stays the connection's, for fail()).
  int step_text(const char* sql, std::string& out) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db_, sql, -1, &st, nullptr) != SQLITE_OK) fail(sql);
    const int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
      const auto* text = sqlite3_column_text(st, 0);
      out = text ? reinterpret_cast<const char*>(text) : "";
    }
    sqlite3_finalize(st);
    return rc;
  }

  void run_cached(sqlite3_stmt*& st, const char* sql) {
    if (!st && sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, nullptr) != SQLITE_OK) fail(sql);
    const int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) fail(sql);
  }

  sqlite3* db_ = nullptr;
  std::string where_;
  StatementSql sql_;
  std::array<sqlite3_stmt*, N + 4> stmts_{};  // the user's N, then BEGIN IMMEDIATE, COMMIT, BEGIN and ROLLBACK
};

/// A cached statement in use: bound, stepped, and reset (bindings cleared) on every way out.
template <typename Connection>
class SqliteQuery {
 public:
  SqliteQuery(Connection& c, std::size_t statement) : conn_(c), st_(c.statement(statement)) {}
  ~SqliteQuery() {
    sqlite3_reset(st_);
    sqlite3_clear_bindings(st_);
  }
  SqliteQuery(const SqliteQuery&) = delete;
  SqliteQuery& operator=(const SqliteQuery&) = delete;

  SqliteQuery& bind(int i, std::string_view v) {
    check(sqlite3_bind_text(st_, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC));
    return *this;
  }
  SqliteQuery& bind(int i, const std::string& v) { return bind(i, std::string_view(v)); }
  SqliteQuery& bind(int i, const std::optional<std::string>& v) {
    if (v) return bind(i, std::string_view(*v));
    return bind_null(i);
  }
  SqliteQuery& bind(int i, std::int64_t v) {
    check(sqlite3_bind_int64(st_, i, v));
    return *this;
  }
  SqliteQuery& bind_null(int i) {
    check(sqlite3_bind_null(st_, i));
    return *this;
  }

  /// True while rows come; false when done.
  bool step() {
    const int rc = sqlite3_step(st_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    conn_.fail("running a statement");
  }
  void run() {
    while (step()) {
    }
  }

  int type(int col) const { return sqlite3_column_type(st_, col); }
  bool is_null(int col) const { return type(col) == SQLITE_NULL; }
  std::int64_t int64(int col) const { return sqlite3_column_int64(st_, col); }
  std::string_view text(int col) const {
    const auto* p = sqlite3_column_text(st_, col);
    const int n = sqlite3_column_bytes(st_, col);
    return p ? std::string_view(reinterpret_cast<const char*>(p), static_cast<std::size_t>(n)) : std::string_view();
  }
  SqliteQuery& bind_blob(int i, const void* data, std::size_t bytes) {
    check(sqlite3_bind_blob64(st_, i, data, bytes, SQLITE_STATIC));
    return *this;
  }
  /// A BLOB column's bytes (empty for NULL).
  std::string_view blob(int col) const {
    const void* p = sqlite3_column_blob(st_, col);
    const int n = sqlite3_column_bytes(st_, col);
    return p ? std::string_view(static_cast<const char*>(p), static_cast<std::size_t>(n)) : std::string_view();
  }
  double real(int col) const { return sqlite3_column_double(st_, col); }
  std::optional<std::string_view> maybe_text(int col) const {
    if (is_null(col)) return std::nullopt;
    return text(col);
  }

 private:
  void check(int rc) {
    if (rc != SQLITE_OK) conn_.fail("binding a parameter");
  }
  Connection& conn_;
  sqlite3_stmt* st_;
};

/// BEGIN IMMEDIATE takes the write lock up front, so what the transaction reads (a version, a run's last seq, its
/// forks) cannot go stale before it writes (a deferred transaction could read, then fail to upgrade with
/// SQLITE_BUSY_SNAPSHOT). Rolled back unless committed.
template <typename Connection>
class SqliteWriteTransaction {
 public:
  explicit SqliteWriteTransaction(Connection& c) : conn_(c) { conn_.begin_immediate(); }
  ~SqliteWriteTransaction() {
    if (!done_) conn_.rollback();
  }
  SqliteWriteTransaction(const SqliteWriteTransaction&) = delete;
  SqliteWriteTransaction& operator=(const SqliteWriteTransaction&) = delete;
  void commit() {
    conn_.commit();
    done_ = true;
  }

 private:
  Connection& conn_;
  bool done_ = false;
};

/// A schema kept in its own version table (`cairn_schema` for the store, `cairn_run_schema` for the journal), so
/// several users share one file and each migrates only its own tables. Migration i brings version i to i + 1.
struct SqliteSchema {
  const char* table;              ///< its version table
  int version;                    ///< the version this cairn knows
  const char* const* migrations;  ///< `version` statements
  const char* holds;              ///< "the database has" / "the database's runs have", in the too-new error
};

/// The version the file holds, or -1 when it has no such schema yet. A version table that does not hold a number
/// is a storage_error naming the file.
template <typename Connection>
int sqlite_schema_version(Connection& c, const SqliteSchema& schema) {
  std::string out;
  const std::string exists =
      fmt::format("SELECT name FROM sqlite_master WHERE type = 'table' AND name = '{}'", schema.table);
  if (!c.query_text(exists.c_str(), out)) return -1;
  const std::string max = fmt::format("SELECT max(version) FROM {}", schema.table);
  if (!c.query_text(max.c_str(), out) || out.empty()) return -1;
  int version = -1;
  const auto r = std::from_chars(out.data(), out.data() + out.size(), version);
  if (r.ec != std::errc() || r.ptr != out.data() + out.size() || version < 0) {
    throw storage_error(
        fmt::format("{}: {} holds version '{}', which is not a schema version; "
                    "the file was changed by something other than cairn",
                    c.where(), schema.table, excerpt(out, 80)));
  }
  return version;
}

/// Brings the file's schema up to date: the common case (up to date) reads the version without taking the write
/// lock; otherwise it migrates under BEGIN IMMEDIATE, so two processes opening a new file at once migrate it once.
/// A newer schema is refused (storage_error naming both versions), and a refused file is left as it was.
template <typename Connection>
void sqlite_migrate(Connection& c, const SqliteSchema& schema) {
  if (sqlite_schema_version(c, schema) == schema.version) return;
  c.exec("BEGIN IMMEDIATE");
  try {
    c.exec(fmt::format("CREATE TABLE IF NOT EXISTS {} (version INTEGER NOT NULL)", schema.table).c_str());
    int version = sqlite_schema_version(c, schema);  // again: another process may have migrated meanwhile
    if (version < 0) {
      c.exec(fmt::format("INSERT INTO {} (version) VALUES (0)", schema.table).c_str());
      version = 0;
    }
    if (version > schema.version) {
      throw storage_error(
          fmt::format("{}: {} schema version {}, newer than the version {} this cairn knows; "
                      "open it with a newer cairn",
                      c.where(), schema.holds, version, schema.version));
    }
    for (int v = version; v < schema.version; ++v) c.exec(schema.migrations[v]);
    c.exec(fmt::format("UPDATE {} SET version = {}", schema.table, schema.version).c_str());
    c.exec("COMMIT");
  } catch (...) {
    c.rollback();
    throw;
  }
}

}  // namespace detail
CAIRN_END_NAMESPACE
