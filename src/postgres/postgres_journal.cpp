// PostgresRunJournal: the SQL, its deadlines on connecting and on every reply, reconnecting, and the schema
// migrations.
//
// What it shares with the artifact store's connection code is in src/common: the result and parameter types, the
// lost connection, checking the conninfo (postgres_connection.hpp); opening within a deadline, waiting for replies,
// describing a failure, re-opening and running a call once more on a lost connection (postgres_session.hpp). Its
// deadlines, its error messages and which failures count as a lost connection are its own.
#include "cairn/store/postgres_journal.hpp"

#include <libpq-fe.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <chrono>
#include <optional>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "../common/connection_pool.hpp"
#include "../common/postgres_connection.hpp"
#include "../common/postgres_session.hpp"
#include "cairn/detail/text.hpp"

CAIRN_BEGIN_NAMESPACE
namespace {

// Migration i brings a database from journal schema version i to i + 1. Never edit a released entry: append one.
//
// Tenants and run ids use the "C" collation (byte order whatever the database's locale). An entry's data is the
// exact JSON text the writer produced (text, not jsonb: it reads back byte for byte and costs no jsonb parse).
// cairn_runs has no index on updated_at: every append changes updated_at, and an indexed column would make each
// append's row update a non-HOT one that writes every index of the table again; the sweep reads the tenant's run
// rows through the primary key instead. The fillfactor leaves room on each page for those HOT updates.
// The foreign key from a fork to its source makes removing a run that a fork still reads fail, even when the fork
// is created concurrently with the remove. write_token is set on the first entry of each append (see do_append).
constexpr std::array<const char*, PostgresRunJournal::schema_version> migrations = {
    R"sql(
CREATE TABLE cairn_runs (
  tenant_id   text COLLATE "C" NOT NULL,
  run_id      text COLLATE "C" NOT NULL,
  last_seq    bigint NOT NULL,
  kept_from   bigint NOT NULL DEFAULT 1,
  forked_from text COLLATE "C",
  fork_seq    bigint NOT NULL DEFAULT 0,
  created_at  bigint NOT NULL,
  updated_at  bigint NOT NULL,
  PRIMARY KEY (tenant_id, run_id),
  FOREIGN KEY (tenant_id, forked_from) REFERENCES cairn_runs (tenant_id, run_id)
) WITH (fillfactor = 80);
CREATE INDEX cairn_runs_forks ON cairn_runs (tenant_id, forked_from) WHERE forked_from IS NOT NULL;
CREATE TABLE cairn_run_entries (
  tenant_id   text COLLATE "C" NOT NULL,
  run_id      text COLLATE "C" NOT NULL,
  seq         bigint NOT NULL,
  kind        text   NOT NULL,
  data        text   NOT NULL,
  time        bigint NOT NULL,
  write_token text,
  PRIMARY KEY (tenant_id, run_id, seq)
);
CREATE INDEX cairn_run_entries_snapshots ON cairn_run_entries (tenant_id, run_id, seq) WHERE kind = 'snapshot';
-- Two statements in one transaction: the run row first (which waits for an append in flight), then the entries,
-- read with a snapshot taken after that append committed, so none is left behind.
-- p_before: the run goes only if it was not appended to since then (a sweep racing a writer keeps the run).
CREATE FUNCTION cairn_run_remove(p_tenant text, p_run text, p_before bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM cairn_runs WHERE tenant_id = p_tenant AND run_id = p_run AND updated_at < p_before;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  DELETE FROM cairn_run_entries WHERE tenant_id = p_tenant AND run_id = p_run;
  RETURN true;
END
$$;
)sql",
    // 1 -> 2: prune re-checks the run's forks under the run row's lock (issue 25). Locking the row first makes a
    // fork in flight (which holds the row FOR SHARE, see create_fork) commit before the forks are read, and the
    // read is a statement of its own, so its snapshot sees that fork. A fork that would lose entries refuses the
    // prune: `blocker` names it and nothing is deleted.
    R"sql(
CREATE FUNCTION cairn_run_prune(p_tenant text, p_run text, p_keep bigint, OUT gone bigint, OUT blocker text)
LANGUAGE plpgsql AS $$
DECLARE
  own_from bigint;
BEGIN
  gone := 0;
  SELECT fork_seq INTO own_from FROM cairn_runs WHERE tenant_id = p_tenant AND run_id = p_run FOR NO KEY UPDATE;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  SELECT run_id INTO blocker FROM cairn_runs WHERE tenant_id = p_tenant AND forked_from = p_run
    AND fork_seq > own_from AND fork_seq < p_keep ORDER BY run_id LIMIT 1;
  IF FOUND THEN
    RETURN;
  END IF;
  UPDATE cairn_runs SET kept_from = greatest(kept_from, p_keep) WHERE tenant_id = p_tenant AND run_id = p_run;
  DELETE FROM cairn_run_entries WHERE tenant_id = p_tenant AND run_id = p_run AND seq < p_keep;
  GET DIAGNOSTICS gone = ROW_COUNT;
END
$$;
)sql",
};

// Serializes migrations of concurrent processes; not the artifact store's key, so neither waits for the other.
constexpr const char* migration_lock = "SELECT pg_advisory_xact_lock(7361283749121)";

enum Stmt : std::size_t {
  create_one,    // append to a new run (or a fork at 0), one entry
  create_many,   // ... several entries
  advance_one,   // append after expected_seq > 0, one entry
  advance_many,  // ... several entries
  probe,         // after a conflict: the actual last seq, and whether this append's token is at expected + 1
  run_head,
  entries_range,
  newest_snapshot,
  create_fork,
  remove_run,
  prune_run,
  forks_of,
  stale,
  statement_count
};

constexpr std::array<const char*, statement_count> statement_names = {
    "cairn_j_create_one", "cairn_j_create_many", "cairn_j_advance_one", "cairn_j_advance_many", "cairn_j_probe",
    "cairn_j_head",       "cairn_j_entries",     "cairn_j_snapshot",    "cairn_j_fork",         "cairn_j_remove",
    "cairn_j_prune",      "cairn_j_forks",       "cairn_j_stale"};

// Parameters of the appends: $1 tenant, $2 run, $3 expected seq, $4 entry count, $5 now, $6 write token,
// $7 kind(s), $8 data, $9 time(s).
std::string statement_sql(Stmt s) {
  // The run row is advanced only when it still ends at $3; the entries are inserted from what that returned, so
  // when it matched nothing, nothing at all is written and the INSERT reports 0 rows. Under READ COMMITTED an
  // UPDATE (or ON CONFLICT DO UPDATE) that waited for a concurrent writer's row lock re-checks its condition on
  // the row that writer left, so of two appends after the same seq exactly one matches.
  const std::string create_run =
      "WITH run AS (INSERT INTO cairn_runs AS r (tenant_id, run_id, last_seq, created_at, updated_at) "
      "VALUES ($1::text, $2::text, $3::bigint + $4::bigint, $5::bigint, $5::bigint) "
      "ON CONFLICT (tenant_id, run_id) DO UPDATE SET last_seq = EXCLUDED.last_seq, updated_at = EXCLUDED.updated_at "
      "WHERE r.last_seq = 0 RETURNING 1) ";
  const std::string advance_run =
      "WITH run AS (UPDATE cairn_runs SET last_seq = $3::bigint + $4::bigint, updated_at = $5::bigint "
      "WHERE tenant_id = $1::text AND run_id = $2::text AND last_seq = $3::bigint RETURNING 1) ";
  const std::string insert_one =
      "INSERT INTO cairn_run_entries (tenant_id, run_id, seq, kind, data, time, write_token) "
      "SELECT $1::text, $2::text, $3::bigint + 1, $7::text, $8::text, $9::bigint, $6::text FROM run";
  const std::string insert_many =
      "INSERT INTO cairn_run_entries (tenant_id, run_id, seq, kind, data, time, write_token) "
      "SELECT $1::text, $2::text, $3::bigint + e.n, e.kind, e.data, e.time, "
      "CASE WHEN e.n = 1 THEN $6::text END "
      "FROM run, unnest($7::text[], $8::text[], $9::bigint[]) WITH ORDINALITY AS e(kind, data, time, n)";
  switch (s) {
    case create_one: return create_run + insert_one;
    case create_many: return create_run + insert_many;
    case advance_one: return advance_run + insert_one;
    case advance_many: return advance_run + insert_many;
    case probe:
      return "SELECT (SELECT last_seq FROM cairn_runs WHERE tenant_id = $1::text AND run_id = $2::text), "
             "EXISTS (SELECT 1 FROM cairn_run_entries WHERE tenant_id = $1::text AND run_id = $2::text "
             "AND seq = $3::bigint + 1 AND write_token = $4::text)";
    case run_head:
      return "SELECT last_seq, kept_from, forked_from, fork_seq, created_at, updated_at FROM cairn_runs "
             "WHERE tenant_id = $1::text AND run_id = $2::text";
    case entries_range:
      return "SELECT seq, kind, data, time FROM cairn_run_entries WHERE tenant_id = $1::text AND run_id = $2::text "
             "AND seq >= $3::bigint AND seq <= $4::bigint ORDER BY seq";
    case newest_snapshot:
      return "SELECT seq FROM cairn_run_entries WHERE tenant_id = $1::text AND run_id = $2::text "
             "AND kind = 'snapshot' AND seq <= $3::bigint ORDER BY seq DESC LIMIT 1";
    case create_fork:
      // The source row is locked FOR SHARE and must still hold the fork point: a prune holds that row's lock while
      // it moves kept_from, so a fork that waited for it re-checks the condition on the row the prune left (READ
      // COMMITTED re-evaluates a locked row's WHERE) and inserts nothing when the point was pruned. A fork that
      // locked first makes the prune wait, and the prune then sees it (cairn_run_prune).
      return "WITH src AS (SELECT 1 FROM cairn_runs WHERE tenant_id = $1::text AND run_id = $3::text "
             "AND $4::bigint <= last_seq AND ($4::bigint <= fork_seq OR $4::bigint >= kept_from) FOR SHARE) "
             "INSERT INTO cairn_runs (tenant_id, run_id, last_seq, forked_from, fork_seq, created_at, updated_at) "
             "SELECT $1::text, $2::text, $4::bigint, $3::text, $4::bigint, $5::bigint, $5::bigint FROM src "
             "ON CONFLICT (tenant_id, run_id) DO NOTHING";
    case remove_run: return "SELECT cairn_run_remove($1::text, $2::text, $3::bigint)";
    case prune_run:
      // One transaction: kept_from moves up with the delete of the entries below it, so a reader never sees the
      // entries gone while the run still claims them; and the forks are checked again first (migration 1 -> 2).
      return "SELECT gone, blocker FROM cairn_run_prune($1::text, $2::text, $3::bigint)";
    case forks_of:
      return "SELECT run_id, fork_seq FROM cairn_runs WHERE tenant_id = $1::text AND forked_from = $2::text "
             "ORDER BY run_id";
    case stale:
      return "SELECT run_id FROM cairn_runs WHERE tenant_id = $1::text AND updated_at < $2::bigint ORDER BY run_id";
    case statement_count: break;
  }
  return {};
}

using detail::pg::connection_lost;

/// A foreign key refused the statement (a fork's source is gone, or a run being removed has a fork).
class foreign_key_violation : public storage_error {
 public:
  using storage_error::storage_error;
};

using detail::pg::fits_pg_text;
using detail::pg::Result;
using detail::pg::trimmed;
using steady = std::chrono::steady_clock;

// A PostgreSQL array literal of text elements: {"a","b\"c"}.
void append_array_element(std::string& out, std::string_view s) {
  out += out.size() == 1 ? "\"" : ",\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  out += '"';
}

}  // namespace

struct PostgresRunJournal::Impl {
  struct Connection {
    PGconn* conn = nullptr;
    Connection() = default;
    ~Connection() { PQfinish(conn); }
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;
    bool ok() const { return conn && PQstatus(conn) == CONNECTION_OK; }
  };

  /// Up to 9 text parameters; null pointers are SQL NULLs.
  using Params = detail::pg::Params<9>;

  Impl(std::string c, PostgresJournalOptions o)
      : conninfo(std::move(c)),
        options(std::move(o)),
        pool(
            options.pool_size, [this] { return connect_lazily(); }, std::chrono::milliseconds(options.pool_wait_ms),
            "postgres journal", "PostgresJournalOptions::pool_size or pool_wait_ms") {}

  // ---- connecting ---------------------------------------------------------------------------------------------

  // Opens a connection within min(connect_timeout_ms, the deadline) and sets up its session (statement_timeout,
  // the prepared statements) in one more round trip. Throws connection_lost when that fails.
  void open(Connection& c, steady::time_point deadline) {
    PQfinish(c.conn);
    c.conn = nullptr;
    deadline = std::min(deadline, steady::now() + std::chrono::milliseconds(options.connect_timeout_ms));
    // libpq's own connect_timeout (whole seconds, at least 2) bounds each host it tries; finish_connecting()'s poll
    // loop bounds the whole attempt to the millisecond. Later keywords override what the conninfo says.
    const std::string timeout_s = std::to_string(std::max(2, (options.connect_timeout_ms + 999) / 1000));
    const char* keys[] = {"dbname", "connect_timeout", "client_encoding", nullptr};
    const char* values[] = {conninfo.c_str(), timeout_s.c_str(), "UTF8", nullptr};
    c.conn = PQconnectStartParams(keys, values, 1);
    if (!detail::pg::finish_connecting(c.conn, where, deadline, options.connect_timeout_ms)) {
      throw connection_lost(fmt::format("{}: cannot make the connection non-blocking", where));
    }
    std::string setup = fmt::format("SET statement_timeout = {}; {}", options.statement_timeout_ms, detail::pg::no_jit);
    if (migrated) setup += prepare_sql();
    simple(c, setup, "setting up the session");
  }

  std::string prepare_sql() const {
    std::string sql;
    for (std::size_t i = 0; i < statement_count; ++i) {
      sql += fmt::format("; PREPARE {} AS {}", statement_names[i], statement_sql(static_cast<Stmt>(i)));
    }
    return sql;
  }

  // For the pool: a connection that could not be opened comes back broken, and with_connection() then keeps
  // trying until reconnect_timeout_ms (the server may be restarting right now).
  std::unique_ptr<Connection> connect_lazily() {
    auto c = std::make_unique<Connection>();
    try {
      open(*c, steady::now() + std::chrono::milliseconds(options.connect_timeout_ms));
    } catch (const connection_lost&) {
    }
    return c;
  }

  // Re-opens a broken connection, trying again with a growing pause until reconnect_timeout_ms has passed.
  void reconnect(Connection& c) {
    const auto deadline = steady::now() + std::chrono::milliseconds(options.reconnect_timeout_ms);
    const std::optional<std::string> last_error = detail::pg::keep_trying(
        deadline, [&](bool) { open(c, std::max(deadline, steady::now() + std::chrono::milliseconds(100))); });
    if (!last_error) {
      reconnect_count.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    throw connection_lost(
        fmt::format("{}: lost the connection to the server and could not reconnect within {} "
                    "ms (last: {})",
                    where, options.reconnect_timeout_ms, *last_error));
  }

  // ---- statements -------------------------------------------------------------------------------------------------

  // Throws connection_lost when the failure is the connection's (the server restarted, the network went), a
  // plain storage_error otherwise (the statement was rolled back).
  [[noreturn]] void fail(const Connection& c, const PGresult* res, const char* what) const {
    const detail::pg::Failure f = detail::pg::describe_failure(c.conn, res, where, what);
    // A failure without a SQLSTATE (no result, or libpq's own) counts as lost too: the call is retried once.
    if (f.lost || f.code.empty()) throw connection_lost(f.text);
    if (f.code == "57014") {
      throw storage_error(
          fmt::format("{}: {}: no result within the statement timeout of {} ms (the statement was "
                      "cancelled and wrote nothing)",
                      where, what, options.statement_timeout_ms));
    }
    if (f.code == "23503") throw foreign_key_violation(f.text);
    throw storage_error(f.text);
  }

  // Gives up a connection that broke, or whose server did not take or answer what was sent in time: closed without
  // waiting, so the call can reconnect.
  [[noreturn]] void give_up(Connection& c, const char* what, const char* why) const {
    const std::string msg = trimmed(PQerrorMessage(c.conn));
    PQfinish(c.conn);
    c.conn = nullptr;
    throw connection_lost(fmt::format("{}: {}: {}{}", where, what, why, msg.empty() ? "" : ": " + msg));
  }

  // Waits for the reply to what was sent, at most statement_timeout_ms + 1 s; keeps the first error, else the
  // last result. When no reply comes in time the connection is closed and counts as lost.
  Result await(Connection& c, const char* what) const {
    const auto deadline = steady::now() + std::chrono::milliseconds(options.statement_timeout_ms + 1000);
    detail::pg::Replies replies = detail::pg::collect_replies(c.conn, deadline);
    switch (replies.stall) {
      case detail::pg::Stall::none: break;
      case detail::pg::Stall::send_failed: give_up(c, what, "cannot send");
      case detail::pg::Stall::send_timed_out: give_up(c, what, "the server took no data in time");
      case detail::pg::Stall::broken: give_up(c, what, "connection broken");
      case detail::pg::Stall::reply_timed_out: give_up(c, what, "no reply from the server in time");
    }
    if (replies.error) fail(c, replies.error.get(), what);
    if (!replies.last) fail(c, nullptr, what);
    return std::move(replies.last);
  }

  Result run(Connection& c, Stmt s, const Params& p) const {
    statement_count_.fetch_add(1, std::memory_order_relaxed);
    if (!PQsendQueryPrepared(c.conn, statement_names[s], p.count, p.values.data(), nullptr, nullptr, 0)) {
      fail(c, nullptr, statement_names[s]);
    }
    return await(c, statement_names[s]);
  }

  Result simple(Connection& c, const std::string& sql, const char* what) const {
    statement_count_.fetch_add(1, std::memory_order_relaxed);
    if (!PQsendQuery(c.conn, sql.c_str())) fail(c, nullptr, what);
    return await(c, what);
  }

  // Runs `op(connection, retry)` on a pooled connection (with_retry()). When the connection turns out broken, it is
  // re-opened and `op` runs once more (op decides what is safe to repeat). A second loss is final and thrown as
  // connection_lost.
  template <typename Op>
  auto with_connection(Op&& op) {
    return detail::pg::with_retry(
        pool, [this](Connection& c, bool) { reconnect(c); }, std::forward<Op>(op));
  }

  // ---- schema -----------------------------------------------------------------------------------------------------

  void migrate(Connection& c) {
    if (read_schema_version(c) != PostgresRunJournal::schema_version) {
      simple(c, "BEGIN", "migrating the journal schema");
      try {
        simple(c, migration_lock, "migrating the journal schema");
        simple(c, "CREATE TABLE IF NOT EXISTS cairn_run_schema (version integer NOT NULL)",
               "migrating the journal schema");
        int version = read_schema_version(c);  // again, under the lock: another process may have migrated
        if (version < 0) {
          simple(c, "INSERT INTO cairn_run_schema (version) VALUES (0)", "migrating the journal schema");
          version = 0;
        }
        if (version > PostgresRunJournal::schema_version) {
          throw storage_error(fmt::format(
              "{}: the database has journal schema version {} (table cairn_run_schema), newer than the version {} "
              "this cairn knows; use a newer cairn",
              where, version, PostgresRunJournal::schema_version));
        }
        for (int v = version; v < PostgresRunJournal::schema_version; ++v) {
          simple(c, migrations[static_cast<std::size_t>(v)], "migrating the journal schema");
        }
        simple(c, fmt::format("UPDATE cairn_run_schema SET version = {}", PostgresRunJournal::schema_version),
               "migrating the journal schema");
        simple(c, "COMMIT", "migrating the journal schema");
      } catch (...) {
        if (c.ok()) {
          try {
            simple(c, "ROLLBACK", "rolling back");
          } catch (...) {
          }
        }
        throw;
      }
    }
    migrated = true;
    simple(c, prepare_sql().substr(2), "preparing statements");
  }

  // -1 when the database has no journal schema yet.
  int read_schema_version(Connection& c) {
    auto exists = simple(c, "SELECT to_regclass('cairn_run_schema') IS NOT NULL", "reading the journal schema version");
    if (PQgetvalue(exists.get(), 0, 0)[0] != 't') return -1;
    auto res =
        simple(c, "SELECT coalesce(max(version), -1) FROM cairn_run_schema", "reading the journal schema version");
    return static_cast<int>(std::strtol(PQgetvalue(res.get(), 0, 0), nullptr, 10));
  }

  // ---- decoding -----------------------------------------------------------------------------------------------------

  std::int64_t int_at(const PGresult* res, int row, int col, const std::string& run_id, const char* column) const {
    const std::string_view text(PQgetvalue(res, row, col), static_cast<std::size_t>(PQgetlength(res, row, col)));
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (PQgetisnull(res, row, col) || ec != std::errc() || end != text.data() + text.size()) {
      throw storage_error(fmt::format("{}: run '{}': {} is '{}', not a number", where, detail::excerpt(run_id, 80),
                                      column, detail::excerpt(text)));
    }
    return v;
  }

  std::uint64_t seq_at(const PGresult* res, int row, int col, const std::string& run_id, const char* column,
                       std::int64_t min) const {
    const std::int64_t v = int_at(res, row, col, run_id, column);
    if (v < min) {
      throw storage_error(
          fmt::format("{}: run '{}': {} is {}, below {}", where, detail::excerpt(run_id, 80), column, v, min));
    }
    return static_cast<std::uint64_t>(v);
  }

  std::string conninfo;
  PostgresJournalOptions options;
  std::string where = "postgres journal";
  detail::ConnectionPool<Connection> pool;
  std::atomic<bool> migrated{false};
  std::atomic<std::uint64_t> reconnect_count{0};
  mutable std::atomic<std::uint64_t> statement_count_{0};
};

PostgresRunJournal::PostgresRunJournal(std::string conninfo, PostgresJournalOptions options)
    : RunJournal(options.clock) {
  detail::pg::check_conninfo(conninfo, "postgres journal");
  for (const auto& [name, value] : {std::pair<const char*, int>{"connect_timeout_ms", options.connect_timeout_ms},
                                    {"statement_timeout_ms", options.statement_timeout_ms},
                                    {"reconnect_timeout_ms", options.reconnect_timeout_ms},
                                    {"pool_wait_ms", options.pool_wait_ms}}) {
    // reconnect_timeout_ms 0: one reconnect attempt; pool_wait_ms 0: wait for ever for a pooled connection
    const bool zero_ok = std::string_view(name) == "reconnect_timeout_ms" || std::string_view(name) == "pool_wait_ms";
    if (value < (zero_ok ? 0 : 1)) {
      throw invalid_argument(
          fmt::format("postgres journal: {} must be {} (got {})", name, zero_ok ? "0 or more" : "positive", value));
    }
  }
  impl_ = std::make_unique<Impl>(std::move(conninfo), std::move(options));
  auto first = std::make_unique<Impl::Connection>();
  try {
    impl_->open(*first, steady::now() + std::chrono::milliseconds(impl_->options.connect_timeout_ms));
  } catch (const connection_lost& e) {
    throw storage_error(e.what());
  }
  impl_->migrate(*first);
  impl_->pool.adopt(std::move(first));
}

PostgresRunJournal::~PostgresRunJournal() = default;

std::uint64_t PostgresRunJournal::reconnects() const noexcept {
  return impl_->reconnect_count.load(std::memory_order_relaxed);
}

std::uint64_t PostgresRunJournal::statements() const noexcept {
  return impl_->statement_count_.load(std::memory_order_relaxed);
}

// The append is one statement. When the connection breaks before its reply arrives, the outcome is unknown: the
// statement may have committed, may still be running on the server (waiting for a row lock, say), or may never
// run. It is retried once, on a new connection, as the same statement with the same write token, and a conflict
// is then checked against that token at seq expected + 1:
//  - the first try committed before the retry ran: the retry finds last_seq moved on (conflict), and the probe
//    finds the token at expected + 1: success, written once.
//  - the first try is still running and holds the run row's lock: the retry's UPDATE waits for it. If it commits,
//    the retry re-checks last_seq, matches nothing, and the probe finds the token: success, written once. If it
//    rolls back, the retry goes ahead: written once.
//  - the first try runs after the retry (it was still on its way): it finds last_seq moved on and writes nothing.
// Of two statements that both need the run at `expected`, at most one can match (last_seq only grows, and the
// row lock orders them), and the primary key (tenant, run, seq) refuses a second copy of expected + 1 in any case;
// so no token needs a unique index. A retry that fails too leaves the outcome unknown: storage_error says so.
void PostgresRunJournal::do_append(const std::string& tenant_id, const std::string& run_id, std::uint64_t expected_seq,
                                   const std::vector<JournalEntry>& entries, std::int64_t now) {
  if (!fits_pg_text(tenant_id)) {
    throw invalid_argument(
        fmt::format("append to run '{}': tenant_id '{}' holds a NUL character or is not valid "
                    "UTF-8, which PostgreSQL text cannot keep",
                    excerpt(run_id), excerpt(tenant_id)));
  }
  const JsonLimits& limits = impl_->options.json_limits;
  std::vector<std::string> texts;
  texts.reserve(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto& data = entries[i].data;
    if (detail::json_depth(data, limits.max_depth) > limits.max_depth) {
      throw limit_exceeded(
          fmt::format("append to run '{}': entries[{}].data is nested deeper than the journal's "
                      "limit of {} levels",
                      excerpt(run_id), i, limits.max_depth));
    }
    try {
      texts.push_back(data.dump());
    } catch (const nlohmann::json::type_error&) {
      throw invalid_argument(
          fmt::format("append to run '{}': entries[{}].data holds a string that is not valid "
                      "UTF-8",
                      excerpt(run_id), i));
    }
    if (texts.back().size() > limits.max_bytes) {
      throw limit_exceeded(
          fmt::format("append to run '{}': entries[{}].data is {} bytes of JSON, more than the "
                      "journal's limit of {} bytes",
                      excerpt(run_id), i, texts.back().size(), limits.max_bytes));
    }
  }
  const bool one = entries.size() == 1;
  std::string kinds, datas, times;
  if (one) {
    kinds = entries[0].kind;
    datas = std::move(texts[0]);
    times = std::to_string(entries[0].time);
  } else {
    kinds = datas = times = "{";
    for (std::size_t i = 0; i < entries.size(); ++i) {
      append_array_element(kinds, entries[i].kind);
      append_array_element(datas, texts[i]);
      times += fmt::format("{}{}", i ? "," : "", entries[i].time);
    }
    kinds += '}';
    datas += '}';
    times += '}';
  }
  const std::string expected_text = std::to_string(expected_seq);
  const std::string count_text = std::to_string(entries.size());
  const std::string now_text = std::to_string(now);
  const std::string token = detail::uuid_v4();
  const Stmt stmt = expected_seq == 0 ? (one ? create_one : create_many) : (one ? advance_one : advance_many);

  std::optional<std::uint64_t> lost_to;
  try {
    impl_->with_connection([&](Impl::Connection& c, bool) {
      Impl::Params p;
      p.add(tenant_id)
          .add(run_id)
          .add(expected_text)
          .add(count_text)
          .add(now_text)
          .add(token)
          .add(kinds)
          .add(datas)
          .add(times);
      auto res = impl_->run(c, stmt, p);
      if (std::string_view(PQcmdTuples(res.get())) != "0") return;  // INSERT 0 n: written
      Impl::Params q;
      q.add(tenant_id).add(run_id).add(expected_text).add(token);
      auto found = impl_->run(c, probe, q);
      if (PQgetvalue(found.get(), 0, 1)[0] == 't') return;  // a first try, cut off, had committed it
      lost_to = PQgetisnull(found.get(), 0, 0) ? 0 : impl_->seq_at(found.get(), 0, 0, run_id, "last_seq", 0);
    });
  } catch (const connection_lost& e) {
    throw storage_error(
        fmt::format("append to run '{}' after seq {}: the connection was lost and the retry could "
                    "not finish, so whether the append was written is unknown; read the run to "
                    "find out ({})",
                    excerpt(run_id), expected_seq, e.what()));
  }
  if (lost_to) {
    throw conflict(fmt::format("append to run '{}': expected it to end at seq {}, it ends at seq {}", excerpt(run_id),
                               expected_seq, *lost_to),
                   expected_seq, *lost_to);
  }
}

std::optional<RunInfo> PostgresRunJournal::head(const std::string& tenant_id, const std::string& run_id) const {
  if (!fits_pg_text(tenant_id)) return std::nullopt;  // never stored
  return impl_->with_connection([&](Impl::Connection& c, bool) -> std::optional<RunInfo> {
    Impl::Params p;
    p.add(tenant_id).add(run_id);
    auto res = impl_->run(c, run_head, p);
    if (PQntuples(res.get()) == 0) return std::nullopt;
    const PGresult* r = res.get();
    RunInfo info;
    info.run_id = run_id;
    info.last_seq = impl_->seq_at(r, 0, 0, run_id, "last_seq", 0);
    info.kept_from = impl_->seq_at(r, 0, 1, run_id, "kept_from", 1);
    if (!PQgetisnull(r, 0, 2)) info.forked_from = std::string(PQgetvalue(r, 0, 2));
    info.fork_seq = impl_->seq_at(r, 0, 3, run_id, "fork_seq", 0);
    info.created_at = impl_->int_at(r, 0, 4, run_id, "created_at");
    info.updated_at = impl_->int_at(r, 0, 5, run_id, "updated_at");
    if (info.fork_seq > info.last_seq) {
      throw storage_error(fmt::format("{}: run '{}': fork_seq {} is beyond last_seq {}", impl_->where, excerpt(run_id),
                                      info.fork_seq, info.last_seq));
    }
    return info;
  });
}

std::vector<JournalEntry> PostgresRunJournal::own_entries(const std::string& tenant_id, const std::string& run_id,
                                                          std::uint64_t from_seq, std::uint64_t to_seq) const {
  if (!fits_pg_text(tenant_id)) return {};
  const std::string from_text = std::to_string(std::min(from_seq, max_seq));
  const std::string to_text = std::to_string(std::min(to_seq, max_seq));
  return impl_->with_connection([&](Impl::Connection& c, bool) {
    Impl::Params p;
    p.add(tenant_id).add(run_id).add(from_text).add(to_text);
    auto res = impl_->run(c, entries_range, p);
    const PGresult* r = res.get();
    std::vector<JournalEntry> out;
    const int n = PQntuples(r);
    out.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
      JournalEntry e;
      e.seq = impl_->seq_at(r, i, 0, run_id, "seq", 1);
      e.kind = std::string(PQgetvalue(r, i, 1), static_cast<std::size_t>(PQgetlength(r, i, 1)));
      const std::string_view text(PQgetvalue(r, i, 2), static_cast<std::size_t>(PQgetlength(r, i, 2)));
      try {
        e.data = detail::parse_json(text, impl_->options.json_limits, "data");
      } catch (const error& err) {
        throw storage_error(fmt::format("{}: run '{}' seq {}: the stored entry is damaged: {}", impl_->where,
                                        excerpt(run_id), e.seq, err.what()));
      }
      e.time = impl_->int_at(r, i, 3, run_id, "time");
      out.push_back(std::move(e));
    }
    return out;
  });
}

std::uint64_t PostgresRunJournal::own_snapshot_at(const std::string& tenant_id, const RunInfo& run,
                                                  std::uint64_t at_seq) const {
  if (!fits_pg_text(tenant_id)) return 0;
  const std::string at_text = std::to_string(std::min(at_seq, max_seq));
  return impl_->with_connection([&](Impl::Connection& c, bool) -> std::uint64_t {
    Impl::Params p;
    p.add(tenant_id).add(run.run_id).add(at_text);
    auto res = impl_->run(c, newest_snapshot, p);
    if (PQntuples(res.get()) == 0) return 0;
    return impl_->seq_at(res.get(), 0, 0, run.run_id, "seq", 1);
  });
}

void PostgresRunJournal::do_create_fork(const std::string& tenant_id, const std::string& run_id,
                                        const std::string& source, std::uint64_t fork_seq, std::int64_t now) {
  const std::string seq_text = std::to_string(fork_seq);
  const std::string now_text = std::to_string(now);
  // Why nothing was inserted: the run exists (its last seq), the source is gone, or it no longer holds the point.
  std::optional<std::uint64_t> exists;
  std::optional<RunInfo> src;
  bool src_gone = false;
  try {
    // Inserting twice inserts nothing more; a retry that finds the run cannot tell whether its first try made it,
    // and reports the conflict, as the run is there either way.
    impl_->with_connection([&](Impl::Connection& c, bool) {
      Impl::Params p;
      p.add(tenant_id).add(run_id).add(source).add(seq_text).add(now_text);
      auto res = impl_->run(c, create_fork, p);
      if (std::string_view(PQcmdTuples(res.get())) == "1") return;
      Impl::Params q;
      q.add(tenant_id).add(run_id);
      auto found = impl_->run(c, run_head, q);
      if (PQntuples(found.get()) != 0) {
        exists = impl_->seq_at(found.get(), 0, 0, run_id, "last_seq", 0);
        return;
      }
      Impl::Params r;
      r.add(tenant_id).add(source);
      auto from = impl_->run(c, run_head, r);
      if (PQntuples(from.get()) == 0) {
        src_gone = true;
        return;
      }
      RunInfo info;
      info.last_seq = impl_->seq_at(from.get(), 0, 0, source, "last_seq", 0);
      info.kept_from = impl_->seq_at(from.get(), 0, 1, source, "kept_from", 1);
      src = info;
    });
  } catch (const connection_lost& e) {
    throw storage_error(e.what());
  } catch (const foreign_key_violation&) {
    src_gone = true;
  }
  if (exists) throw conflict(fmt::format("fork: run '{}' exists already", excerpt(run_id)), 0, *exists);
  if (src_gone) {
    throw not_found(fmt::format("fork: run '{}' not found in tenant '{}' (removed meanwhile)", excerpt(source),
                                excerpt(tenant_id)));
  }
  if (src) {  // pruned below the fork point since RunJournal::fork looked
    throw invalid_argument(fmt::format("fork: run '{}' holds seq {} to {}; cannot fork at {}", excerpt(source),
                                       src->kept_from, src->last_seq, fork_seq));
  }
}

bool PostgresRunJournal::do_remove(const std::string& tenant_id, const std::string& run_id,
                                   std::int64_t updated_before) {
  const std::string before = std::to_string(updated_before);
  try {
    // Removing twice removes nothing more, so a retry after a lost connection is safe (a retry that finds nothing
    // reports "not removed"; the run is gone either way).
    return impl_->with_connection([&](Impl::Connection& c, bool) {
      Impl::Params p;
      p.add(tenant_id).add(run_id).add(before);
      auto res = impl_->run(c, remove_run, p);
      return PQgetvalue(res.get(), 0, 0)[0] == 't';
    });
  } catch (const connection_lost& e) {
    throw storage_error(e.what());
  } catch (const foreign_key_violation&) {
    // A fork created after remove() checked for forks: the foreign key kept the source.
    throw state_error(
        fmt::format("remove: run '{}' has forks that read its entries (one was made meanwhile); "
                    "remove them first",
                    excerpt(run_id)));
  }
}

std::size_t PostgresRunJournal::do_prune(const std::string& tenant_id, const std::string& run_id,
                                         std::uint64_t keep_from) {
  const std::string keep_text = std::to_string(keep_from);
  std::optional<std::string> blocker;
  std::size_t gone = 0;
  try {
    gone = impl_->with_connection([&](Impl::Connection& c, bool) -> std::size_t {
      Impl::Params p;
      p.add(tenant_id).add(run_id).add(keep_text);
      auto res = impl_->run(c, prune_run, p);
      if (!PQgetisnull(res.get(), 0, 1)) blocker = PQgetvalue(res.get(), 0, 1);
      return static_cast<std::size_t>(impl_->seq_at(res.get(), 0, 0, run_id, "pruned entries", 0));
    });
  } catch (const connection_lost& e) {
    throw storage_error(e.what());
  }
  if (blocker) {
    // RunJournal::prune chose keep_from from the forks it saw; a fork made since at an earlier point would lose
    // its entries.
    throw state_error(
        fmt::format("prune: run '{}' was forked at a point before seq {} meanwhile (by '{}'); "
                    "nothing was pruned, try again",
                    excerpt(run_id), keep_from, excerpt(*blocker)));
  }
  return gone;
}

std::vector<RunFork> PostgresRunJournal::forks(const std::string& tenant_id, const std::string& run_id) const {
  if (!fits_pg_text(tenant_id)) return {};
  return impl_->with_connection([&](Impl::Connection& c, bool) {
    Impl::Params p;
    p.add(tenant_id).add(run_id);
    auto res = impl_->run(c, forks_of, p);
    std::vector<RunFork> out;
    for (int i = 0; i < PQntuples(res.get()); ++i) {
      out.push_back(RunFork{PQgetvalue(res.get(), i, 0), impl_->seq_at(res.get(), i, 1, run_id, "fork_seq", 0)});
    }
    return out;
  });
}

std::vector<std::string> PostgresRunJournal::stale_runs(const std::string& tenant_id,
                                                        std::int64_t updated_before) const {
  if (!fits_pg_text(tenant_id)) return {};
  const std::string before_text = std::to_string(updated_before);
  return impl_->with_connection([&](Impl::Connection& c, bool) {
    Impl::Params p;
    p.add(tenant_id).add(before_text);
    auto res = impl_->run(c, stale, p);
    std::vector<std::string> out;
    for (int i = 0; i < PQntuples(res.get()); ++i) out.emplace_back(PQgetvalue(res.get(), i, 0));
    return out;
  });
}

CAIRN_END_NAMESPACE
