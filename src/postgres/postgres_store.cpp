// PostgresArtifactStore: the SQL, the connection pool, reconnecting, and the schema migrations.
#include "cairn/store/postgres_store.hpp"

#include <libpq-fe.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <charconv>
#include <limits>
#include <optional>
#include <string_view>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "../common/connection_pool.hpp"
#include "../common/record_columns.hpp"
#include "cairn/detail/text.hpp"

namespace cairn {
namespace {

// Migration i brings a database from schema version i to i + 1. Never edit a released entry: append a new one.
//
// Ids and tenants use the "C" collation so that ORDER BY and the prefix ranges of list() compare bytes (which, for
// UTF-8, is code point order) whatever the database's locale. Values and metadata are jsonb; the *_text columns
// hold the exact JSON text only when jsonb would not give it back exactly (a float, or U+0000, which jsonb
// cannot hold). write_token lets a store retried after a lost connection find out whether its first try committed.
constexpr std::array<const char*, PostgresArtifactStore::schema_version> migrations = {
    R"sql(
CREATE TABLE cairn_artifacts (
  tenant_id     text COLLATE "C" NOT NULL,
  id            text COLLATE "C" NOT NULL,
  version       bigint NOT NULL,
  type          text   NOT NULL,
  title         text   NOT NULL,
  description   text   NOT NULL,
  purpose       text   NOT NULL,
  value         jsonb,
  value_text    text,
  storage_url   text,
  mime_type     text,
  size_bytes    bigint,
  schema_url    text,
  created_by    text COLLATE "C",
  created_at    bigint NOT NULL,
  metadata      jsonb,
  metadata_text text,
  write_token   text   NOT NULL,
  PRIMARY KEY (tenant_id, id, version)
);
CREATE TABLE cairn_heads (
  tenant_id  text COLLATE "C" NOT NULL,
  id         text COLLATE "C" NOT NULL,
  latest     bigint NOT NULL,
  type       text   NOT NULL,
  created_by text COLLATE "C",
  PRIMARY KEY (tenant_id, id)
);
-- Removing is two statements in one transaction: the head row first (which waits for a store of the same id in
-- flight), then the versions, read with a snapshot taken after that store committed, so none is left behind.
CREATE FUNCTION cairn_remove_artifact(p_tenant text, p_id text) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM cairn_heads WHERE tenant_id = p_tenant AND id = p_id;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  DELETE FROM cairn_artifacts WHERE tenant_id = p_tenant AND id = p_id;
  RETURN true;
END
$$;
)sql",
};

// Any number, as long as every cairn uses the same one: it serializes migrations of concurrent processes.
constexpr const char* migration_lock = "SELECT pg_advisory_xact_lock(7361283749120)";

constexpr const char* record_columns =
    "tenant_id, id, version, type, title, description, purpose, coalesce(value_text, value::text), storage_url, "
    "mime_type, size_bytes, schema_url, created_by, created_at, coalesce(metadata_text, metadata::text)";

enum Stmt : std::size_t {
  store_version,
  find_token,
  fetch_latest,
  fetch_version,
  versions_of,
  remove_artifact,
  list_bounded,
  list_open,
  statement_count
};

constexpr std::array<const char*, statement_count> statement_names = {
    "cairn_store", "cairn_find_token", "cairn_fetch_latest", "cairn_fetch_version",
    "cairn_versions", "cairn_remove", "cairn_list_bounded", "cairn_list_open"};

std::string statement_sql(Stmt s) {
  // One statement bumps (or creates) the head row and inserts the version it got: the head row's lock orders
  // concurrent writers of one id, and the primary key would refuse a duplicate version if anything went wrong.
  const std::string list_select = fmt::format(
      "SELECT a.tenant_id, a.id, a.version, a.type, a.title, a.description, a.purpose, "
      "coalesce(a.value_text, a.value::text), a.storage_url, a.mime_type, a.size_bytes, a.schema_url, a.created_by, "
      "a.created_at, coalesce(a.metadata_text, a.metadata::text) "
      "FROM cairn_heads h JOIN cairn_artifacts a "
      "ON a.tenant_id = h.tenant_id AND a.id = h.id AND a.version = h.latest "
      "WHERE h.tenant_id = $1::text AND h.id >= $2::text {{}} AND h.id > $4::text "
      "AND ($5::text IS NULL OR h.type = $5::text) AND ($6::text IS NULL OR h.created_by = $6::text) "
      "ORDER BY h.id LIMIT $7::bigint");
  switch (s) {
    case store_version:
      return "WITH head AS ("
             "INSERT INTO cairn_heads AS h (tenant_id, id, latest, type, created_by) "
             "VALUES ($1::text, $2::text, 1, $3::text, $11::text) "
             "ON CONFLICT (tenant_id, id) DO UPDATE "
             "SET latest = h.latest + 1, type = EXCLUDED.type, created_by = EXCLUDED.created_by "
             "RETURNING latest) "
             "INSERT INTO cairn_artifacts (tenant_id, id, version, type, title, description, purpose, value, "
             "value_text, storage_url, mime_type, created_by, size_bytes, schema_url, created_at, metadata, "
             "metadata_text, write_token) "
             "SELECT $1::text, $2::text, head.latest, $3::text, $4::text, $5::text, $6::text, $7::jsonb, $8::text, "
             "$9::text, $10::text, $11::text, $12::bigint, $13::text, $14::bigint, $15::jsonb, $16::text, $17::text "
             "FROM head RETURNING version";
    case find_token:
      return "SELECT version FROM cairn_artifacts "
             "WHERE tenant_id = $1::text AND id = $2::text AND write_token = $3::text";
    case fetch_latest:
      return fmt::format("SELECT {} FROM cairn_artifacts WHERE tenant_id = $1::text AND id = $2::text "
                         "ORDER BY version DESC LIMIT 1",
                         record_columns);
    case fetch_version:
      return fmt::format("SELECT {} FROM cairn_artifacts "
                         "WHERE tenant_id = $1::text AND id = $2::text AND version = $3::bigint",
                         record_columns);
    case versions_of:
      return "SELECT version FROM cairn_artifacts WHERE tenant_id = $1::text AND id = $2::text ORDER BY version";
    case remove_artifact: return "SELECT cairn_remove_artifact($1::text, $2::text)";
    case list_bounded: return fmt::format(list_select, "AND h.id < $3::text");
    case list_open: return fmt::format(list_select, "AND $3::text IS NULL");
    case statement_count: break;
  }
  return {};
}

/// Thrown inside the store when the server went away; the call reconnects and retries once.
class connection_lost : public storage_error {
 public:
  using storage_error::storage_error;
};

/// Thrown when a statement lost a race it may simply run again: a serialization failure or deadlock (under a
/// stricter default isolation level than READ COMMITTED), or a unique violation. The statement was rolled back.
class write_conflict : public storage_error {
 public:
  using storage_error::storage_error;
};

using Result = std::unique_ptr<PGresult, decltype(&PQclear)>;

bool fits_pg_text(std::string_view s) noexcept {
  return s.find('\0') == std::string_view::npos && detail::is_valid_utf8(s);
}

/// The smallest UTF-8 string above every string that starts with `prefix` (valid UTF-8) in code point order, or
/// nothing when there is none.
std::optional<std::string> utf8_upper_bound(const std::string& prefix) {
  std::vector<std::uint32_t> cps;
  for (std::size_t i = 0; i < prefix.size();) {
    const auto c = static_cast<unsigned char>(prefix[i]);
    const std::size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : 4;
    std::uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1Fu) : len == 3 ? (c & 0x0Fu) : (c & 0x07u);
    for (std::size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(prefix[i + k]) & 0x3Fu);
    cps.push_back(cp);
    i += len;
  }
  while (!cps.empty() && cps.back() == 0x10FFFF) cps.pop_back();
  if (cps.empty()) return std::nullopt;
  cps.back() = cps.back() == 0xD7FF ? 0xE000 : cps.back() + 1;
  std::string out;
  for (std::uint32_t cp : cps) detail::append_utf8(out, cp);

  return out;
}

/// A JSON value as the two columns keep it: `jsonb` for SQL, `text` only when jsonb would change it.
struct JsonColumns {
  std::optional<std::string> jsonb;
  std::optional<std::string> text;
};

JsonColumns json_columns(const nlohmann::json& j, const char* field, const JsonLimits& limits) {
  std::string text = detail::dump_json_column(j, field, limits);
  // jsonb keeps integers and strings exactly, but rewrites numbers with a fraction or exponent (1e19 comes back
  // as an integer, -0.0 as 0) and refuses U+0000. Walk the value once to see which case this is.
  bool has_float = false;
  bool has_nul = false;
  std::vector<const nlohmann::json*> todo{&j};
  while (!todo.empty() && !has_nul) {
    const auto* node = todo.back();
    todo.pop_back();
    if (node->is_number_float()) {
      has_float = true;
    } else if (node->is_string()) {
      has_nul = node->get_ref<const std::string&>().find('\0') != std::string::npos;
    } else if (node->is_object()) {
      for (const auto& [key, child] : node->items()) {
        if (key.find('\0') != std::string::npos) has_nul = true;
        todo.push_back(&child);
      }
    } else if (node->is_array()) {
      for (const auto& child : *node) todo.push_back(&child);
    }
  }
  if (has_nul) return {std::nullopt, std::move(text)};
  if (has_float) return {text, text};
  return {std::move(text), std::nullopt};
}

std::int64_t to_int64(std::string_view s) {
  std::int64_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

}  // namespace

struct PostgresArtifactStore::Impl {
  struct Connection {
    PGconn* conn = nullptr;
    bool prepared = false;
    Connection() = default;
    ~Connection() { PQfinish(conn); }
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;
  };

  /// Up to 17 text parameters; null pointers are SQL NULLs.
  struct Params {
    std::array<const char*, 17> values{};
    int count = 0;
    Params& add(const std::string& s) {
      values[static_cast<std::size_t>(count++)] = s.c_str();
      return *this;
    }
    Params& add(const std::optional<std::string>& s) {
      values[static_cast<std::size_t>(count++)] = s ? s->c_str() : nullptr;
      return *this;
    }
  };

  Impl(std::string c, PostgresOptions o)
      : conninfo(std::move(c)),
        options(o),
        pool(o.pool_size, [this] { return connect_lazily(); }) {}

  // For the pool: a connection that could not be opened comes back broken, and with_connection() then keeps
  // trying to open it until reconnect_timeout_ms (the server may be restarting right now).
  std::unique_ptr<Connection> connect_lazily() {
    auto c = std::make_unique<Connection>();
    c->conn = PQconnectdb(conninfo.c_str());
    if (!c->conn) throw storage_error(fmt::format("{}: out of memory while connecting", where));
    if (PQstatus(c->conn) == CONNECTION_OK) set_up_session(*c);
    return c;
  }

  std::unique_ptr<Connection> connect() {
    auto c = std::make_unique<Connection>();
    c->conn = PQconnectdb(conninfo.c_str());
    if (!c->conn) throw storage_error(fmt::format("{}: out of memory while connecting", where));
    if (PQstatus(c->conn) != CONNECTION_OK) {
      throw storage_error(fmt::format("{}: cannot connect: {}", where, trimmed(PQerrorMessage(c->conn))));
    }
    set_up_session(*c);
    return c;
  }

  void set_up_session(Connection& c) {
    // Server notices ("relation already exists, skipping") are not errors; libpq would print them to stderr.
    PQsetNoticeProcessor(c.conn, [](void*, const char*) {}, nullptr);
    if (PQsetClientEncoding(c.conn, "UTF8") != 0) {
      throw storage_error(fmt::format("{}: cannot set the client encoding to UTF8: {}", where,
                                      trimmed(PQerrorMessage(c.conn))));
    }
    c.prepared = false;
  }

  static std::string trimmed(const char* msg) {
    std::string s = msg ? msg : "";
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
  }

  // Throws connection_lost when the failure is the connection's (the server restarted, the network went), a
  // plain storage_error otherwise.
  [[noreturn]] void fail(const Connection& c, const PGresult* res, const char* what) const {
    const char* state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
    const std::string_view code = state ? state : "";
    const std::string msg = trimmed(res ? PQresultErrorMessage(res) : PQerrorMessage(c.conn));
    const bool lost = PQstatus(c.conn) == CONNECTION_BAD || code.substr(0, 2) == "08" || code == "57P01" ||
                      code == "57P02" || code == "57P03";
    const std::string text = fmt::format("{}: {}: {}", where, what, msg.empty() ? "no reply from the server" : msg);
    if (lost) throw connection_lost(text);
    if (code == "40001" || code == "40P01" || code == "23505") throw write_conflict(text);
    throw storage_error(text);
  }

  void prepare(Connection& c) {
    for (std::size_t i = 0; i < statement_count; ++i) {
      const std::string sql = statement_sql(static_cast<Stmt>(i));
      Result res(PQprepare(c.conn, statement_names[i], sql.c_str(), 0, nullptr), &PQclear);
      if (!res || PQresultStatus(res.get()) != PGRES_COMMAND_OK) fail(c, res.get(), "preparing statements");
    }
    c.prepared = true;
  }

  Result run(Connection& c, Stmt s, const Params& p) const {
    Result res(PQexecPrepared(c.conn, statement_names[s], p.count, p.values.data(), nullptr, nullptr, 0),
               &PQclear);
    const auto status = res ? PQresultStatus(res.get()) : PGRES_FATAL_ERROR;
    if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) fail(c, res.get(), statement_names[s]);
    return res;
  }

  Result simple(Connection& c, const std::string& sql) const {
    Result res(PQexec(c.conn, sql.c_str()), &PQclear);
    const auto status = res ? PQresultStatus(res.get()) : PGRES_FATAL_ERROR;
    if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) fail(c, res.get(), "migrating the schema");
    return res;
  }

  // Re-opens a broken connection, trying again with a growing pause until reconnect_timeout_ms has passed.
  void reconnect(Connection& c) {
    using clock = std::chrono::steady_clock;
    const auto deadline = clock::now() + std::chrono::milliseconds(options.reconnect_timeout_ms);
    auto pause = std::chrono::milliseconds(20);
    for (;;) {
      PQreset(c.conn);
      if (PQstatus(c.conn) == CONNECTION_OK) {
        try {
          set_up_session(c);
          prepare(c);
          reconnect_count.fetch_add(1, std::memory_order_relaxed);
          return;
        } catch (const connection_lost&) {
          // the server went away again (or is still starting up); keep trying
        }
      }
      if (clock::now() + pause > deadline) {
        throw storage_error(fmt::format("{}: lost the connection to the server and could not reconnect within {} ms: {}",
                                        where, options.reconnect_timeout_ms, trimmed(PQerrorMessage(c.conn))));
      }
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::milliseconds(1000));
    }
  }

  // Runs `op(connection, retry)` on a pooled connection. When the connection turns out broken, it is re-opened
  // and `op` runs once more with retry = true (op decides what is safe to repeat).
  template <typename Op>
  auto with_connection(Op&& op) {
    auto lease = pool.acquire();
    bool need_reconnect = PQstatus(lease->conn) != CONNECTION_OK;
    if (!need_reconnect) {
      try {
        if (!lease->prepared) prepare(*lease);
        return op(*lease, false);
      } catch (const connection_lost&) {
        need_reconnect = true;
      }
    }
    reconnect(*lease);
    try {
      return op(*lease, true);
    } catch (const connection_lost& e) {
      throw storage_error(e.what());
    }
  }

  ArtifactPtr decode(const PGresult* res, int row) const {
    auto text = [&](int col) {
      return std::string_view(PQgetvalue(res, row, col), static_cast<std::size_t>(PQgetlength(res, row, col)));
    };
    auto maybe = [&](int col) -> std::optional<std::string_view> {
      if (PQgetisnull(res, row, col)) return std::nullopt;
      return text(col);
    };
    detail::RecordRow r;
    r.tenant_id = text(0);
    r.id = text(1);
    r.version = to_int64(text(2));
    r.type = text(3);
    r.title = text(4);
    r.description = text(5);
    r.purpose = text(6);
    r.value = maybe(7);
    r.storage_url = maybe(8);
    r.mime_type = maybe(9);
    if (!PQgetisnull(res, row, 10)) r.size_bytes = to_int64(text(10));
    r.schema_url = maybe(11);
    r.created_by = maybe(12);
    r.created_at = to_int64(text(13));
    r.metadata = PQgetisnull(res, row, 14) ? std::string_view("{}") : text(14);
    return detail::decode_row(r, options.json_limits, where);
  }

  void migrate(Connection& c) {
    if (read_schema_version(c) == PostgresArtifactStore::schema_version) return;
    simple(c, "BEGIN");
    try {
      simple(c, migration_lock);
      simple(c, "CREATE TABLE IF NOT EXISTS cairn_schema (version integer NOT NULL)");
      int version = read_schema_version(c);  // again, under the lock: another process may have migrated
      if (version < 0) {
        simple(c, "INSERT INTO cairn_schema (version) VALUES (0)");
        version = 0;
      }
      if (version > PostgresArtifactStore::schema_version) {
        throw storage_error(fmt::format(
            "{}: the database has schema version {}, newer than the version {} this cairn knows; "
            "use a newer cairn",
            where, version, PostgresArtifactStore::schema_version));
      }
      for (int v = version; v < PostgresArtifactStore::schema_version; ++v) simple(c, migrations[v]);
      simple(c, fmt::format("UPDATE cairn_schema SET version = {}", PostgresArtifactStore::schema_version));
      simple(c, "COMMIT");
    } catch (...) {
      Result(PQexec(c.conn, "ROLLBACK"), &PQclear);
      throw;
    }
  }

  // -1 when the database has no cairn schema yet.
  int read_schema_version(Connection& c) {
    auto exists = simple(c, "SELECT to_regclass('cairn_schema') IS NOT NULL");
    if (PQgetvalue(exists.get(), 0, 0)[0] != 't') return -1;
    auto res = simple(c, "SELECT coalesce(max(version), -1) FROM cairn_schema");
    return static_cast<int>(to_int64(PQgetvalue(res.get(), 0, 0)));
  }

  std::string conninfo;
  PostgresOptions options;
  std::string where = "postgres store";
  detail::ConnectionPool<Connection> pool;
  std::atomic<std::uint64_t> reconnect_count{0};
};

PostgresArtifactStore::PostgresArtifactStore(std::string conninfo, PostgresOptions options) {
  // A malformed conninfo is reported without libpq's message, which can quote the text (and a password in it).
  char* parse_error = nullptr;
  PQconninfoOption* parsed = PQconninfoParse(conninfo.c_str(), &parse_error);
  if (!parsed) {
    PQfreemem(parse_error);
    throw invalid_argument("postgres store: the conninfo is not valid libpq connection info "
                           "(expected \"key=value ...\" or a postgresql:// URI)");
  }
  PQconninfoFree(parsed);
  if (options.reconnect_timeout_ms < 0) {
    throw invalid_argument(fmt::format("postgres store: reconnect_timeout_ms must not be negative (got {})",
                                       options.reconnect_timeout_ms));
  }
  impl_ = std::make_unique<Impl>(std::move(conninfo), options);
  auto first = impl_->connect();
  impl_->migrate(*first);
  impl_->pool.adopt(std::move(first));
}

PostgresArtifactStore::~PostgresArtifactStore() = default;

std::uint64_t PostgresArtifactStore::reconnects() const noexcept {
  return impl_->reconnect_count.load(std::memory_order_relaxed);
}

namespace {

void require_pg_text(const char* field, const std::string& v) {
  if (v.find('\0') != std::string::npos) {
    throw invalid_argument(fmt::format("postgres store: {}: holds a NUL character, which PostgreSQL text cannot keep",
                                       field));
  }
  if (!detail::is_valid_utf8(v)) {
    throw invalid_argument(fmt::format("postgres store: {}: is not valid UTF-8 ('{}')", field, detail::excerpt(v)));
  }
}
void require_pg_text(const char* field, const std::optional<std::string>& v) {
  if (v) require_pg_text(field, *v);
}

}  // namespace

ArtifactPtr PostgresArtifactStore::store(const ArtifactRecord& record) {
  // Everything that can fail on bad input fails before anything is sent.
  require_pg_text("tenant_id", record.tenant_id());
  require_pg_text("id", record.id());
  require_pg_text("title", record.title());
  require_pg_text("description", record.description());
  require_pg_text("purpose", record.purpose());
  require_pg_text("storage_url", record.storage_url());
  require_pg_text("mime_type", record.mime_type());
  require_pg_text("schema_url", record.schema_url());
  require_pg_text("created_by", record.created_by());
  const auto& limits = impl_->options.json_limits;
  const JsonColumns value = record.has_value() ? json_columns(record.value(), "value", limits) : JsonColumns{};
  const JsonColumns metadata = json_columns(record.metadata(), "metadata", limits);

  const std::string id = record.id().empty() ? detail::new_uuid(impl_->options.ids.get()) : record.id();
  const std::int64_t created_at =
      record.created_at() == 0 ? detail::now_ms(impl_->options.clock.get()) : record.created_at();
  const std::string created_at_text = std::to_string(created_at);
  const std::optional<std::string> size_text =
      record.size_bytes() ? std::optional<std::string>(std::to_string(detail::to_sql_int(*record.size_bytes())))
                          : std::nullopt;
  const std::string token = detail::uuid_v4();

  const std::int64_t version = impl_->with_connection([&](Impl::Connection& c, bool retry) -> std::int64_t {
    if (retry) {
      // The first try may have committed before the connection broke; then its version is the answer.
      Impl::Params p;
      p.add(record.tenant_id()).add(id).add(token);
      auto found = impl_->run(c, find_token, p);
      if (PQntuples(found.get()) == 1) return to_int64(PQgetvalue(found.get(), 0, 0));
    }
    Impl::Params p;
    p.add(record.tenant_id())
        .add(id)
        .add(record.type().str())
        .add(record.title())
        .add(record.description())
        .add(record.purpose())
        .add(value.jsonb)
        .add(value.text)
        .add(record.storage_url())
        .add(record.mime_type())
        .add(record.created_by())
        .add(size_text)
        .add(record.schema_url())
        .add(created_at_text)
        .add(metadata.jsonb)
        .add(metadata.text)
        .add(token);
    // The statement assigns versions without races under READ COMMITTED; a database whose default isolation is
    // stricter may still report a conflict, and the statement, rolled back as a whole, can run again.
    for (int attempt = 1;; ++attempt) {
      try {
        auto res = impl_->run(c, store_version, p);
        return to_int64(PQgetvalue(res.get(), 0, 0));
      } catch (const write_conflict&) {
        if (attempt == 50) throw;
        std::this_thread::sleep_for(std::chrono::milliseconds(std::min(attempt * 2, 50)));
      }
    }
  });

  auto b = record.to_builder();
  b.id(id).version(static_cast<std::uint64_t>(version)).created_at(created_at);
  return b.build();
}

ArtifactPtr PostgresArtifactStore::fetch(const std::string& id, const std::string& tenant_id,
                                         std::uint64_t version) const {
  detail::check_tenant(tenant_id);
  // What PostgreSQL text cannot hold was never stored: such an id is simply missing.
  if (!fits_pg_text(id) || !fits_pg_text(tenant_id)) return nullptr;
  if (version > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return nullptr;
  const std::string version_text = std::to_string(version);
  return impl_->with_connection([&](Impl::Connection& c, bool) -> ArtifactPtr {
    Impl::Params p;
    p.add(tenant_id).add(id);
    if (version != latest) p.add(version_text);
    auto res = impl_->run(c, version == latest ? fetch_latest : fetch_version, p);
    if (PQntuples(res.get()) == 0) return nullptr;
    return impl_->decode(res.get(), 0);
  });
}

void PostgresArtifactStore::remove(const std::string& id, const std::string& tenant_id) {
  detail::check_tenant(tenant_id);
  bool removed = false;
  if (fits_pg_text(id) && fits_pg_text(tenant_id)) {
    // Removing twice removes nothing more, so a retry after a lost connection is safe.
    removed = impl_->with_connection([&](Impl::Connection& c, bool) {
      Impl::Params p;
      p.add(tenant_id).add(id);
      auto res = impl_->run(c, remove_artifact, p);
      // A retry that finds nothing cannot tell "the first try removed it" from "it was never there", and
      // reports not_found: true either way, as the artifact is not there.
      return PQgetvalue(res.get(), 0, 0)[0] == 't';
    });
  }
  if (!removed) throw not_found(detail::artifact_missing_message(id, tenant_id));
}

std::vector<std::uint64_t> PostgresArtifactStore::versions(const std::string& id,
                                                           const std::string& tenant_id) const {
  detail::check_tenant(tenant_id);
  if (!fits_pg_text(id) || !fits_pg_text(tenant_id)) return {};
  return impl_->with_connection([&](Impl::Connection& c, bool) {
    Impl::Params p;
    p.add(tenant_id).add(id);
    auto res = impl_->run(c, versions_of, p);
    std::vector<std::uint64_t> out;
    const int n = PQntuples(res.get());
    out.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) out.push_back(static_cast<std::uint64_t>(to_int64(PQgetvalue(res.get(), i, 0))));
    return out;
  });
}

ListPage PostgresArtifactStore::list(const std::string& tenant_id, const ListQuery& query) const {
  detail::check_tenant(tenant_id);
  detail::check_list_query(query);
  if (!fits_pg_text(tenant_id) || !fits_pg_text(query.prefix) || (query.created_by && !fits_pg_text(*query.created_by))) {
    return {};  // no stored id or creator can match
  }
  if (!fits_pg_text(query.cursor)) {
    throw invalid_argument("list: cursor is not a cursor this store handed out (not valid UTF-8)");
  }
  const auto upper = utf8_upper_bound(query.prefix);
  const std::optional<std::string> type = query.type ? std::optional<std::string>(query.type->str()) : std::nullopt;
  const std::string limit_text = std::to_string(query.limit + 1);  // one more says whether another page follows
  return impl_->with_connection([&](Impl::Connection& c, bool) {
    Impl::Params p;
    p.add(tenant_id).add(query.prefix).add(upper).add(query.cursor).add(type).add(query.created_by).add(limit_text);
    auto res = impl_->run(c, upper ? list_bounded : list_open, p);
    ListPage page;
    const int n = PQntuples(res.get());
    for (int i = 0; i < n; ++i) {
      if (page.items.size() == query.limit) {
        page.next_cursor = page.items.back()->id();
        break;
      }
      page.items.push_back(impl_->decode(res.get(), i));
    }
    return page;
  });
}

}  // namespace cairn
