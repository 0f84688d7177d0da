// SqliteArtifactStore: the SQL, the connection pool and the schema migrations.
#include "cairn/store/sqlite_store.hpp"

#include <sqlite3.h>

#include <array>
#include <limits>
#include <optional>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "../common/connection_pool.hpp"
#include "../common/record_columns.hpp"
#include "../common/sqlite_connection.hpp"

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
  using Connection = detail::SqliteConnection<statement_count>;
  using Query = detail::SqliteQuery<Connection>;
  using WriteTransaction = detail::SqliteWriteTransaction<Connection>;

  static constexpr detail::SqliteSchema schema{"cairn_schema", SqliteArtifactStore::schema_version,
                                               migrations.data(), "the database has"};

  Impl(std::string p, SqliteOptions o)
      : path(std::move(p)),
        options(o),
        where(fmt::format("sqlite store '{}'", detail::excerpt(path, 200))),
        pool(o.max_connections, [this] { return open(); }) {}

  std::unique_ptr<Connection> open() const {
    return std::make_unique<Connection>(
        detail::SqliteOpen{path, where, options.busy_timeout_ms,
                           options.synchronous == SqliteOptions::Synchronous::full},
        [](std::size_t s) { return statement_sql(static_cast<Stmt>(s)); });
  }

  // The record in the current row of `q` (columns in `record_columns` order).
  ArtifactPtr record(const Query& q) const {
    detail::RecordRow row;
    row.tenant_id = q.text(0);
    row.id = q.text(1);
    row.version = q.int64(2);
    row.type = q.text(3);
    row.title = q.text(4);
    row.description = q.text(5);
    row.purpose = q.text(6);
    row.value = q.maybe_text(7);
    row.storage_url = q.maybe_text(8);
    row.mime_type = q.maybe_text(9);
    if (!q.is_null(10)) row.size_bytes = q.int64(10);
    row.schema_url = q.maybe_text(11);
    row.created_by = q.maybe_text(12);
    row.created_at = q.int64(13);
    row.metadata = q.text(14);
    return detail::decode_row(row, options.json_limits, where);
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
  auto first = impl_->open();
  detail::sqlite_migrate(*first, Impl::schema);
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
  return impl_->record(q);
}

void SqliteArtifactStore::remove(const std::string& id, const std::string& tenant_id) {
  detail::check_tenant(tenant_id);
  auto conn = impl_->pool.acquire();
  Impl::WriteTransaction tx(*conn);
  Impl::Query(*conn, head_delete).bind(1, tenant_id).bind(2, id).run();
  if (sqlite3_changes(conn->db()) == 0) throw not_found(detail::artifact_missing_message(id, tenant_id));
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
      page.items.push_back(impl_->record(q));
      last_readable = true;
    } catch (const storage_error&) {
      page.unreadable.emplace_back(q.text(1));
      last_readable = false;
    }
  }
  return page;
}

CAIRN_END_NAMESPACE
