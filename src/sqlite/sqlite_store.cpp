// SqliteArtifactStore: the SQL, the connection pool and the schema migrations.
#include "cairn/store/sqlite_store.hpp"

#include <sqlite3.h>

#include <array>
#include <charconv>
#include <limits>
#include <optional>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "../common/connection_pool.hpp"
#include "../common/record_columns.hpp"

CAIRN_BEGIN_NAMESPACE
namespace {

// Migration i brings a file from schema version i to i + 1. Never edit a released entry: append a new one.
constexpr std::array<const char*, SqliteArtifactStore::schema_version> migrations = {
    // 0 -> 1: every version of every artifact, and one head row per (tenant, id) holding the latest version
    // and the fields list() filters on.
    R"sql(
CREATE TABLE cairn_artifacts (
  tenant_id   TEXT    NOT NULL,
  id          TEXT    NOT NULL,
  version     INTEGER NOT NULL,
  type        TEXT    NOT NULL,
  title       TEXT    NOT NULL,
  description TEXT    NOT NULL,
  purpose     TEXT    NOT NULL,
  value       TEXT,
  storage_url TEXT,
  mime_type   TEXT,
  size_bytes  INTEGER,
  schema_url  TEXT,
  created_by  TEXT,
  created_at  INTEGER NOT NULL,
  metadata    TEXT    NOT NULL,
  PRIMARY KEY (tenant_id, id, version)
) WITHOUT ROWID;
CREATE TABLE cairn_heads (
  tenant_id  TEXT    NOT NULL,
  id         TEXT    NOT NULL,
  latest     INTEGER NOT NULL,
  type       TEXT    NOT NULL,
  created_by TEXT,
  PRIMARY KEY (tenant_id, id)
) WITHOUT ROWID;
)sql",
};

constexpr const char* record_columns =
    "tenant_id, id, version, type, title, description, purpose, value, storage_url, mime_type, size_bytes, "
    "schema_url, created_by, created_at, metadata";

enum Stmt : std::size_t {
  begin_immediate,
  commit,
  rollback,
  head_latest,
  head_insert,
  head_update,
  artifact_insert,
  fetch_latest,
  fetch_version,
  versions_of,
  head_delete,
  artifacts_delete,
  list_bounded,
  list_open,
  statement_count
};

std::string statement_sql(Stmt s) {
  // The list statements walk the (tenant_id, id) key of cairn_heads from a lower bound, so a page costs what
  // the tenant holds around it, never what other tenants hold. Prefixes are ranges, not LIKE patterns, so '%' and
  // '_' in ids mean themselves.
  const std::string list_select = fmt::format(
      "SELECT {} FROM cairn_heads h JOIN cairn_artifacts a "
      "ON a.tenant_id = h.tenant_id AND a.id = h.id AND a.version = h.latest "
      "WHERE h.tenant_id = ?1 AND h.id >= ?2 {{}} "
      "AND (?4 IS NULL OR h.type = ?4) AND (?5 IS NULL OR h.created_by = ?5) ORDER BY h.id LIMIT ?6",
      "a.tenant_id, a.id, a.version, a.type, a.title, a.description, a.purpose, a.value, a.storage_url, "
      "a.mime_type, a.size_bytes, a.schema_url, a.created_by, a.created_at, a.metadata");
  switch (s) {
    case begin_immediate: return "BEGIN IMMEDIATE";
    case commit: return "COMMIT";
    case rollback: return "ROLLBACK";
    case head_latest: return "SELECT latest FROM cairn_heads WHERE tenant_id = ?1 AND id = ?2";
    case head_insert:
      return "INSERT INTO cairn_heads (tenant_id, id, latest, type, created_by) VALUES (?1, ?2, ?3, ?4, ?5)";
    case head_update:
      // In place: cheaper than INSERT OR REPLACE, which deletes and re-inserts the row.
      return "UPDATE cairn_heads SET latest = ?3, type = ?4, created_by = ?5 WHERE tenant_id = ?1 AND id = ?2";
    case artifact_insert:
      return fmt::format("INSERT INTO cairn_artifacts ({}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
                         "?12, ?13, ?14, ?15)",
                         record_columns);
    case fetch_latest:
      return fmt::format("SELECT {} FROM cairn_artifacts WHERE tenant_id = ?1 AND id = ?2 "
                         "ORDER BY version DESC LIMIT 1",
                         record_columns);
    case fetch_version:
      return fmt::format("SELECT {} FROM cairn_artifacts WHERE tenant_id = ?1 AND id = ?2 AND version = ?3",
                         record_columns);
    case versions_of:
      return "SELECT version FROM cairn_artifacts WHERE tenant_id = ?1 AND id = ?2 ORDER BY version";
    case head_delete: return "DELETE FROM cairn_heads WHERE tenant_id = ?1 AND id = ?2";
    case artifacts_delete: return "DELETE FROM cairn_artifacts WHERE tenant_id = ?1 AND id = ?2";
    case list_bounded: return fmt::format(list_select, "AND h.id < ?3");
    case list_open: return fmt::format(list_select, "AND ?3 IS NULL");
    case statement_count: break;
  }
  return {};
}

/// The smallest string above every string that starts with `prefix` (byte-wise), or nothing when there is none.
std::optional<std::string> prefix_upper_bound(std::string prefix) {
  while (!prefix.empty() && static_cast<unsigned char>(prefix.back()) == 0xFF) prefix.pop_back();
  if (prefix.empty()) return std::nullopt;
  prefix.back() = static_cast<char>(static_cast<unsigned char>(prefix.back()) + 1);
  return prefix;
}

}  // namespace

struct SqliteArtifactStore::Impl {
  // One open database handle with its prepared statements. Used by one thread at a time (the pool sees to it).
  struct Connection {
    Impl* owner;
    sqlite3* db = nullptr;
    std::array<sqlite3_stmt*, statement_count> stmts{};

    explicit Connection(Impl* o) : owner(o) {
      const int rc = sqlite3_open_v2(owner->path.c_str(), &db,
                                     SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
      if (rc != SQLITE_OK) {
        const std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
        sqlite3_close_v2(db);
        throw storage_error(fmt::format("{}: cannot open the database: {}", owner->where, msg));
      }
      sqlite3_extended_result_codes(db, 1);
      sqlite3_busy_timeout(db, owner->options.busy_timeout_ms);
      try {
        // Switching to WAL needs a moment of exclusive access; the busy timeout covers a concurrent opener.
        std::string mode;
        query_text("PRAGMA journal_mode = WAL", mode);
        if (mode != "wal") {
          throw storage_error(fmt::format("{}: cannot switch the database to WAL mode (journal_mode is '{}')",
                                          owner->where, mode));
        }
        exec(owner->options.synchronous == SqliteOptions::Synchronous::full ? "PRAGMA synchronous = FULL"
                                                                           : "PRAGMA synchronous = NORMAL");
      } catch (...) {
        sqlite3_close_v2(db);
        throw;
      }
    }
    ~Connection() {
      for (auto* s : stmts) sqlite3_finalize(s);
      sqlite3_close_v2(db);
    }
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    [[noreturn]] void fail(const char* what) const {
      throw storage_error(fmt::format("{}: {}: {}", owner->where, what, sqlite3_errmsg(db)));
    }

    void exec(const char* sql) {
      if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK) fail(sql);
    }

    // Runs a one-row, one-column statement; false when it returned no row.
    bool query_text(const char* sql, std::string& out) {
      sqlite3_stmt* st = nullptr;
      if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) != SQLITE_OK) fail(sql);
      const int rc = sqlite3_step(st);
      if (rc == SQLITE_ROW) {
        const auto* text = sqlite3_column_text(st, 0);
        out = text ? reinterpret_cast<const char*>(text) : "";
      }
      sqlite3_finalize(st);
      if (rc != SQLITE_ROW && rc != SQLITE_DONE) fail(sql);
      return rc == SQLITE_ROW;
    }

    sqlite3_stmt* statement(Stmt s) {
      if (!stmts[s]) {
        const std::string sql = statement_sql(s);
        if (sqlite3_prepare_v3(db, sql.c_str(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &stmts[s],
                               nullptr) != SQLITE_OK) {
          fail("preparing a statement");
        }
      }
      return stmts[s];
    }
  };

  // A cached statement in use: bound, stepped, and reset (bindings cleared) on every way out.
  class Query {
   public:
    Query(Connection& c, Stmt s) : conn_(c), st_(c.statement(s)) {}
    ~Query() {
      sqlite3_reset(st_);
      sqlite3_clear_bindings(st_);
    }
    Query(const Query&) = delete;
    Query& operator=(const Query&) = delete;

    Query& bind(int i, std::string_view v) {
      check(sqlite3_bind_text(st_, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC));
      return *this;
    }
    Query& bind(int i, const std::string& v) { return bind(i, std::string_view(v)); }
    Query& bind(int i, const std::optional<std::string>& v) {
      if (v) return bind(i, std::string_view(*v));
      check(sqlite3_bind_null(st_, i));
      return *this;
    }
    Query& bind(int i, std::int64_t v) {
      check(sqlite3_bind_int64(st_, i, v));
      return *this;
    }
    Query& bind_null(int i) {
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

    std::int64_t int64(int col) const { return sqlite3_column_int64(st_, col); }
    bool is_null(int col) const { return sqlite3_column_type(st_, col) == SQLITE_NULL; }
    std::string_view text(int col) const {
      const auto* p = sqlite3_column_text(st_, col);
      const int n = sqlite3_column_bytes(st_, col);
      return p ? std::string_view(reinterpret_cast<const char*>(p), static_cast<std::size_t>(n))
               : std::string_view();
    }
    std::optional<std::string_view> maybe_text(int col) const {
      if (is_null(col)) return std::nullopt;
      return text(col);
    }

    // The record in the current row (columns in `record_columns` order).
    ArtifactPtr record(const Impl& impl) const {
      detail::RecordRow row;
      row.tenant_id = text(0);
      row.id = text(1);
      row.version = int64(2);
      row.type = text(3);
      row.title = text(4);
      row.description = text(5);
      row.purpose = text(6);
      row.value = maybe_text(7);
      row.storage_url = maybe_text(8);
      row.mime_type = maybe_text(9);
      if (!is_null(10)) row.size_bytes = int64(10);
      row.schema_url = maybe_text(11);
      row.created_by = maybe_text(12);
      row.created_at = int64(13);
      row.metadata = text(14);
      return detail::decode_row(row, impl.options.json_limits, impl.where);
    }

   private:
    void check(int rc) {
      if (rc != SQLITE_OK) conn_.fail("binding a parameter");
    }
    Connection& conn_;
    sqlite3_stmt* st_;
  };

  // BEGIN IMMEDIATE takes the write lock up front, so the version read inside cannot go stale before the insert
  // (a deferred transaction could read, then fail to upgrade with SQLITE_BUSY_SNAPSHOT).
  class WriteTransaction {
   public:
    explicit WriteTransaction(Connection& c) : conn_(c) { Query(c, begin_immediate).run(); }
    ~WriteTransaction() {
      if (!done_) sqlite3_exec(conn_.db, "ROLLBACK", nullptr, nullptr, nullptr);
    }
    WriteTransaction(const WriteTransaction&) = delete;
    WriteTransaction& operator=(const WriteTransaction&) = delete;
    void commit() {
      Query(conn_, Stmt::commit).run();
      done_ = true;
    }

   private:
    Connection& conn_;
    bool done_ = false;
  };

  Impl(std::string p, SqliteOptions o)
      : path(std::move(p)),
        options(o),
        where(fmt::format("sqlite store '{}'", detail::excerpt(path, 200))),
        pool(o.max_connections, [this] { return std::make_unique<Connection>(this); }) {}

  void migrate(Connection& c) {
    // The common case (an up-to-date file) reads the version without taking the write lock.
    if (read_schema_version(c) == SqliteArtifactStore::schema_version) return;
    c.exec("BEGIN IMMEDIATE");
    try {
      c.exec("CREATE TABLE IF NOT EXISTS cairn_schema (version INTEGER NOT NULL)");
      int version = read_schema_version(c);  // again: another process may have migrated meanwhile
      if (version < 0) {
        c.exec("INSERT INTO cairn_schema (version) VALUES (0)");
        version = 0;
      }
      if (version > SqliteArtifactStore::schema_version) {
        throw storage_error(fmt::format(
            "{}: the database has schema version {}, newer than the version {} this cairn knows; "
            "open it with a newer cairn",
            where, version, SqliteArtifactStore::schema_version));
      }
      for (int v = version; v < SqliteArtifactStore::schema_version; ++v) c.exec(migrations[v]);
      c.exec(fmt::format("UPDATE cairn_schema SET version = {}", SqliteArtifactStore::schema_version).c_str());
      c.exec("COMMIT");
    } catch (...) {
      sqlite3_exec(c.db, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  }

  // -1 when the file has no cairn schema yet.
  int read_schema_version(Connection& c) {
    std::string out;
    if (!c.query_text("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'cairn_schema'", out)) {
      return -1;
    }
    if (!c.query_text("SELECT max(version) FROM cairn_schema", out) || out.empty()) return -1;
    int version = -1;
    const auto r = std::from_chars(out.data(), out.data() + out.size(), version);
    if (r.ec != std::errc() || r.ptr != out.data() + out.size() || version < 0) {
      throw storage_error(fmt::format("{}: cairn_schema holds version '{}', which is not a schema version; "
                                      "the file was changed by something other than cairn",
                                      where, out));
    }
    return version;
  }

  ArtifactPtr put(const ArtifactRecord& record, const std::uint64_t* expected);

  std::string path;
  SqliteOptions options;
  std::string where;
  detail::ConnectionPool<Connection> pool;
};

SqliteArtifactStore::SqliteArtifactStore(std::string path, SqliteOptions options) {
  if (path.empty() || path == ":memory:" || path.rfind("file::memory:", 0) == 0) {
    throw invalid_argument(fmt::format(
        "sqlite store: path '{}' names an in-memory database, which each connection would see empty; "
        "give a file path, or use InMemoryArtifactStore",
        path));
  }
  if (options.busy_timeout_ms < 0) {
    throw invalid_argument(
        fmt::format("sqlite store: busy_timeout_ms must not be negative (got {})", options.busy_timeout_ms));
  }
  impl_ = std::make_unique<Impl>(std::move(path), options);
  auto first = std::make_unique<Impl::Connection>(impl_.get());
  impl_->migrate(*first);
  impl_->pool.adopt(std::move(first));
}

SqliteArtifactStore::~SqliteArtifactStore() = default;

const std::string& SqliteArtifactStore::path() const noexcept { return impl_->path; }

SqliteOptions::Synchronous SqliteArtifactStore::synchronous() const noexcept { return impl_->options.synchronous; }

ArtifactPtr SqliteArtifactStore::store(const ArtifactRecord& record) { return impl_->put(record, nullptr); }

ArtifactPtr SqliteArtifactStore::store_if(const ArtifactRecord& record, std::uint64_t expected_version) {
  detail::check_store_if(record, expected_version);
  return impl_->put(record, &expected_version);
}

ArtifactPtr SqliteArtifactStore::Impl::put(const ArtifactRecord& record, const std::uint64_t* expected) {
  // Everything that can fail on bad input fails before the transaction starts.
  const auto& limits = options.json_limits;
  const std::optional<std::string> value =
      record.has_value() ? std::optional<std::string>(detail::dump_json_column(record.value(), "value", limits))
                         : std::nullopt;
  const std::string metadata = detail::dump_json_column(record.metadata(), "metadata", limits);
  std::string id = record.id().empty() ? detail::new_uuid(options.ids.get()) : record.id();
  const std::int64_t created_at =
      record.created_at() == 0 ? detail::now_ms(options.clock.get()) : record.created_at();

  auto conn = pool.acquire();
  std::int64_t version = 1;
  {
    WriteTransaction tx(*conn);
    {
      Query q(*conn, head_latest);
      q.bind(1, record.tenant_id()).bind(2, id);
      if (q.step()) version = q.int64(0) + 1;
    }
    // Checked inside the write transaction, which holds the database's write lock: nobody can move the id on
    // between this check and the insert.
    if (expected && static_cast<std::uint64_t>(version - 1) != *expected) {
      throw detail::version_conflict(record, *expected, static_cast<std::uint64_t>(version - 1));
    }
    Query(*conn, version == 1 ? head_insert : head_update)
        .bind(1, record.tenant_id())
        .bind(2, id)
        .bind(3, version)
        .bind(4, record.type().str())
        .bind(5, record.created_by())
        .run();
    Query ins(*conn, artifact_insert);
    ins.bind(1, record.tenant_id())
        .bind(2, id)
        .bind(3, version)
        .bind(4, record.type().str())
        .bind(5, record.title())
        .bind(6, record.description())
        .bind(7, record.purpose())
        .bind(8, value)
        .bind(9, record.storage_url())
        .bind(10, record.mime_type());
    if (record.size_bytes()) {
      ins.bind(11, detail::to_sql_int(*record.size_bytes()));
    } else {
      ins.bind_null(11);
    }
    ins.bind(12, record.schema_url()).bind(13, record.created_by()).bind(14, created_at).bind(15, metadata);
    ins.run();
    tx.commit();
  }
  auto b = record.to_builder();
  b.id(std::move(id)).version(static_cast<std::uint64_t>(version)).created_at(created_at);
  return b.build();
}

ArtifactPtr SqliteArtifactStore::fetch(const std::string& id, const std::string& tenant_id,
                                       std::uint64_t version) const {
  detail::check_tenant(tenant_id);
  if (version > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return nullptr;
  auto conn = impl_->pool.acquire();
  Impl::Query q(*conn, version == latest ? fetch_latest : fetch_version);
  q.bind(1, tenant_id).bind(2, id);
  if (version != latest) q.bind(3, static_cast<std::int64_t>(version));
  if (!q.step()) return nullptr;
  return q.record(*impl_);
}

void SqliteArtifactStore::remove(const std::string& id, const std::string& tenant_id) {
  detail::check_tenant(tenant_id);
  auto conn = impl_->pool.acquire();
  Impl::WriteTransaction tx(*conn);
  Impl::Query(*conn, head_delete).bind(1, tenant_id).bind(2, id).run();
  if (sqlite3_changes(conn->db) == 0) throw not_found(detail::artifact_missing_message(id, tenant_id));
  Impl::Query(*conn, artifacts_delete).bind(1, tenant_id).bind(2, id).run();
  tx.commit();
}

std::vector<std::uint64_t> SqliteArtifactStore::versions(const std::string& id, const std::string& tenant_id) const {
  detail::check_tenant(tenant_id);
  auto conn = impl_->pool.acquire();
  Impl::Query q(*conn, versions_of);
  q.bind(1, tenant_id).bind(2, id);
  std::vector<std::uint64_t> out;
  while (q.step()) out.push_back(static_cast<std::uint64_t>(q.int64(0)));
  return out;
}

ListPage SqliteArtifactStore::list(const std::string& tenant_id, const ListQuery& query) const {
  detail::check_tenant(tenant_id);
  detail::check_list_query(query);
  // The walk starts at the prefix, or just after the cursor when that is further on ("c" + '\0' is the smallest
  // string above "c"), so a later page never rescans the earlier ones.
  std::string lower = query.prefix;
  if (!query.cursor.empty() && query.cursor >= query.prefix) {
    lower = query.cursor;
    lower.push_back('\0');
  }
  const auto upper = prefix_upper_bound(query.prefix);
  const std::optional<std::string> type =
      query.type ? std::optional<std::string>(query.type->str()) : std::nullopt;

  auto conn = impl_->pool.acquire();
  Impl::Query q(*conn, upper ? list_bounded : list_open);
  q.bind(1, tenant_id).bind(2, std::string_view(lower)).bind(3, upper).bind(4, type).bind(5, query.created_by);
  q.bind(6, static_cast<std::int64_t>(query.limit) + 1);  // one more than asked says whether another page follows
  ListPage page;
  std::size_t rows = 0;
  bool last_readable = true;
  while (q.step()) {
    if (rows == query.limit) {
      page.next_cursor = last_readable ? page.items.back()->id() : page.unreadable.back();
      break;
    }
    ++rows;
    // One row that no longer makes a valid record must not make the whole tenant unlistable.
    try {
      page.items.push_back(q.record(*impl_));
      last_readable = true;
    } catch (const storage_error&) {
      page.unreadable.emplace_back(q.text(1));
      last_readable = false;
    }
  }
  return page;
}

CAIRN_END_NAMESPACE
