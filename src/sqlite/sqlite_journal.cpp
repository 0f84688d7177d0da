// SqliteRunJournal: the SQL, the connection pool and the run schema migrations.
#include "cairn/store/sqlite_journal.hpp"

#include <sqlite3.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <string_view>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "../common/connection_pool.hpp"
#include "../common/record_columns.hpp"
#include "../common/sqlite_connection.hpp"

CAIRN_BEGIN_NAMESPACE
namespace {

// Migration i brings the file's runs from schema version i to i + 1. Never edit a released entry: append a new one.
// The artifact tables (cairn_schema, cairn_artifacts, ...) are SqliteArtifactStore's and are never touched here.
constexpr std::array<const char*, SqliteRunJournal::schema_version> migrations = {
    // 0 -> 1: one row per run (where it stands, where it was forked from) and its own entries keyed by seq.
    // The partial index holds only snapshot entries, so the newest snapshot at or before a seq is one seek,
    // however long the run. Its WHERE must match the one in the snapshot_before statement word for word.
    // updated_at has no index on purpose: every append moves it, and keeping an index of it in step cost a page
    // write per append (measured: ~25% of an append's time); sweep, which is rare, walks the tenant's run rows.
    R"sql(
CREATE TABLE cairn_runs (
  tenant_id   TEXT    NOT NULL,
  run_id      TEXT    NOT NULL,
  last_seq    INTEGER NOT NULL,
  kept_from   INTEGER NOT NULL,
  forked_from TEXT,
  fork_seq    INTEGER NOT NULL,
  created_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL,
  PRIMARY KEY (tenant_id, run_id)
) WITHOUT ROWID;
CREATE INDEX cairn_runs_forks ON cairn_runs (tenant_id, forked_from) WHERE forked_from IS NOT NULL;
CREATE TABLE cairn_run_entries (
  tenant_id TEXT    NOT NULL,
  run_id    TEXT    NOT NULL,
  seq       INTEGER NOT NULL,
  kind      TEXT    NOT NULL,
  data      TEXT    NOT NULL,
  time      INTEGER NOT NULL,
  PRIMARY KEY (tenant_id, run_id, seq)
) WITHOUT ROWID;
CREATE INDEX cairn_run_snapshots ON cairn_run_entries (tenant_id, run_id, seq) WHERE kind = 'snapshot';
)sql",
    // 1 -> 2: where a run ends and when it was last appended to are read from its newest entry (the last key of
    // its range: one seek) instead of being kept in its row, so an append writes the entries' page and not the run
    // row's too (one WAL page less per append, measured ~25 % of an append's time in synchronous NORMAL). Each
    // entry keeps the time of its append (`time` is the host's to set). Existing entries get their run's
    // updated_at, which is when the newest of them was appended.
    R"sql(
ALTER TABLE cairn_run_entries ADD COLUMN appended_at INTEGER;
UPDATE cairn_run_entries SET appended_at = (SELECT r.updated_at FROM cairn_runs AS r
  WHERE r.tenant_id = cairn_run_entries.tenant_id AND r.run_id = cairn_run_entries.run_id);
ALTER TABLE cairn_runs DROP COLUMN last_seq;
ALTER TABLE cairn_runs DROP COLUMN updated_at;
)sql",
};

enum Stmt : std::size_t {
  run_end,
  run_insert,
  run_head,
  run_delete,
  run_keep,
  entry_insert,
  entries_range,
  entries_delete,
  entries_prune,
  snapshot_before,
  forks_of,
  forks_between,
  stale,
  statement_count
};

const char* statement_sql(Stmt s) {
  switch (s) {
    case run_end:
      // Where the run ends: its newest own entry, or its fork point when it has none yet.
      return "SELECT fork_seq, (SELECT seq FROM cairn_run_entries WHERE tenant_id = ?1 AND run_id = ?2 "
             "ORDER BY seq DESC LIMIT 1) FROM cairn_runs WHERE tenant_id = ?1 AND run_id = ?2";
    case run_insert:
      return "INSERT INTO cairn_runs (tenant_id, run_id, kept_from, forked_from, fork_seq, created_at) "
             "VALUES (?1, ?2, 1, ?3, ?4, ?5)";
    case run_head:
      return "SELECT kept_from, forked_from, fork_seq, created_at, e.seq, e.appended_at FROM cairn_runs "
             "LEFT JOIN (SELECT seq, appended_at FROM cairn_run_entries WHERE tenant_id = ?1 AND run_id = ?2 "
             "ORDER BY seq DESC LIMIT 1) AS e ON 1 WHERE tenant_id = ?1 AND run_id = ?2";
    case run_delete:
      // Only while the run is still idle: its newest entry (or its creation) older than ?3.
      return "DELETE FROM cairn_runs WHERE tenant_id = ?1 AND run_id = ?2 AND coalesce((SELECT appended_at FROM "
             "cairn_run_entries WHERE tenant_id = ?1 AND run_id = ?2 ORDER BY seq DESC LIMIT 1), created_at) < ?3";
    case run_keep: return "UPDATE cairn_runs SET kept_from = max(kept_from, ?3) WHERE tenant_id = ?1 AND run_id = ?2";
    case entry_insert:
      return "INSERT INTO cairn_run_entries (tenant_id, run_id, seq, kind, data, time, appended_at) "
             "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";
    case entries_range:
      return "SELECT seq, kind, data, time FROM cairn_run_entries "
             "WHERE tenant_id = ?1 AND run_id = ?2 AND seq >= ?3 AND seq <= ?4 ORDER BY seq";
    case entries_delete: return "DELETE FROM cairn_run_entries WHERE tenant_id = ?1 AND run_id = ?2";
    case entries_prune: return "DELETE FROM cairn_run_entries WHERE tenant_id = ?1 AND run_id = ?2 AND seq < ?3";
    case snapshot_before:
      // `kind = 'snapshot'` is written out (not bound) so that the planner can use the partial index.
      return "SELECT seq FROM cairn_run_entries INDEXED BY cairn_run_snapshots "
             "WHERE tenant_id = ?1 AND run_id = ?2 AND kind = 'snapshot' AND seq <= ?3 ORDER BY seq DESC LIMIT 1";
    case forks_of:
      return "SELECT run_id, fork_seq FROM cairn_runs WHERE tenant_id = ?1 AND forked_from = ?2 ORDER BY run_id";
    case forks_between:
      return "SELECT run_id FROM cairn_runs WHERE tenant_id = ?1 AND forked_from = ?2 AND fork_seq > ?3 "
             "AND fork_seq < ?4 LIMIT 1";
    case stale:
      return "SELECT run_id FROM cairn_runs AS r WHERE tenant_id = ?1 AND coalesce((SELECT e.appended_at FROM "
             "cairn_run_entries AS e WHERE e.tenant_id = r.tenant_id AND e.run_id = r.run_id ORDER BY e.seq DESC "
             "LIMIT 1), r.created_at) < ?2 ORDER BY run_id";
    case statement_count: break;
  }
  return "";
}

// Sequence numbers never exceed RunJournal::max_seq (the largest SQL integer), so they convert both ways exactly.
std::int64_t sql_seq(std::uint64_t seq) noexcept {
  return static_cast<std::int64_t>(std::min<std::uint64_t>(seq, RunJournal::max_seq));
}

std::string excerpt(std::string_view s) { return detail::excerpt(s, 80); }

// The JSON text of an entry's data as the journal keeps it, refused (before anything is written) when it could not
// be read back the same: deeper or larger than the limits, strings that are not UTF-8, or binary values (which
// JSON text does not have).
std::string dump_data(const nlohmann::json& data, const JsonLimits& limits, const std::string& run_id,
                      std::size_t index) {
  const auto where = [&] { return fmt::format("append to run '{}': entries[{}].data", excerpt(run_id), index); };
  int deepest = 0;
  std::vector<std::pair<const nlohmann::json*, int>> todo{{&data, 0}};
  while (!todo.empty()) {
    const auto [node, depth] = todo.back();
    todo.pop_back();
    if (node->is_binary() || node->is_discarded()) {
      throw invalid_argument(
          fmt::format("{}: holds a binary or discarded value, which JSON text cannot keep", where()));
    }
    if (!node->is_structured()) continue;
    deepest = std::max(deepest, depth + 1);
    if (deepest > limits.max_depth) {
      throw limit_exceeded(
          fmt::format("{}: JSON nesting is deeper than the journal's limit of {} levels", where(), limits.max_depth));
    }
    for (const auto& child : *node) todo.emplace_back(&child, depth + 1);
  }
  std::string text;
  try {
    text = data.dump();
  } catch (const nlohmann::json::type_error&) {
    throw invalid_argument(
        fmt::format("{}: holds a string that is not valid UTF-8; the journal keeps JSON text", where()));
  }
  if (text.size() > limits.max_bytes) {
    throw limit_exceeded(fmt::format("{}: JSON text is {} bytes, more than the journal's limit of {} bytes", where(),
                                     text.size(), limits.max_bytes));
  }
  return text;
}

}  // namespace

struct SqliteRunJournal::Impl {
  using Connection = detail::SqliteConnection<statement_count>;
  using Query = detail::SqliteQuery<Connection>;
  using WriteTransaction = detail::SqliteWriteTransaction<Connection>;

  static constexpr detail::SqliteSchema schema{"cairn_run_schema", SqliteRunJournal::schema_version, migrations.data(),
                                               "the database's runs have"};

  Impl(std::string p, SqliteJournalOptions o)
      : path(std::move(p)),
        options(std::move(o)),
        where(fmt::format("sqlite journal '{}'", detail::excerpt(path, 200))),
        pool(options.max_connections, [this] { return open(); }),
        owner(::getpid()) {}

  ~Impl() {
    if (!checkpointer.joinable()) return;
    if (::getpid() != owner) {
      // A forked child: the thread is the parent's (it does not exist here); never join it.
      new std::thread(std::move(checkpointer));
      return;
    }
    {
      std::lock_guard<std::mutex> lock(checkpoint_mutex);
      stopping = true;
    }
    checkpoint_wanted.notify_one();
    checkpointer.join();
  }

  std::unique_ptr<Connection> open() {
    auto conn =
        std::make_unique<Connection>(detail::SqliteOpen{path, where, options.busy_timeout_ms,
                                                        options.synchronous == SqliteJournalOptions::Synchronous::full},
                                     [](std::size_t s) { return std::string(statement_sql(static_cast<Stmt>(s))); });
    if (options.checkpoint_pages > 0) {
      conn->exec("PRAGMA wal_autocheckpoint = 0");
      sqlite3_wal_hook(conn->db(), &Impl::wal_committed, this);
    }
    return conn;
  }

  // SQLite calls this after every commit of a journal connection, with the pages now in the WAL. At the threshold
  // it wakes the checkpoint thread; at the limit (the thread cannot make the WAL start over while writers commit
  // without a pause, or this is a forked child without the thread) it checkpoints here, as SQLite's own
  // automatic checkpoint would.
  static int wal_committed(void* arg, sqlite3* db, const char* name, int pages) {
    auto* self = static_cast<Impl*>(arg);
    const auto n = static_cast<std::size_t>(pages);
    const std::size_t every = self->options.checkpoint_pages;
    if (n < every) return SQLITE_OK;
    const std::size_t limit = every * std::max<std::size_t>(self->options.checkpoint_limit_factor, 1);
    if (::getpid() != self->owner) {
      sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
      return SQLITE_OK;
    }
    if (n >= limit) {
      // After the thread's checkpoint, if one is running: a checkpoint that finds another one running copies
      // nothing, and the WAL would grow on past the limit for as long as the two keep meeting.
      std::lock_guard<std::mutex> running(self->checkpoint_running);
      sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
      return SQLITE_OK;
    }
    self->request_checkpoint(n);
    return SQLITE_OK;
  }

  // Wakes the checkpoint thread when the WAL holds `checkpoint_pages` more pages than it copied last time (a WAL
  // that started over holds fewer than that: counted from 0 again).
  void request_checkpoint(std::size_t pages) {
    {
      std::lock_guard<std::mutex> lock(checkpoint_mutex);
      if (stopping || requested) return;
      if (pages < checkpointed) checkpointed = 0;
      if (pages < checkpointed + options.checkpoint_pages) return;
      requested = true;
      if (!checkpointer.joinable()) {
        try {
          checkpointer = std::thread([this] { checkpoint_loop(); });
        } catch (...) {
          requested = false;
          return;  // no thread: the commit at the limit checkpoints instead
        }
      }
    }
    checkpoint_wanted.notify_one();
  }

  // The checkpoint thread: a PASSIVE checkpoint each time a commit asks for one, on a connection of its own (it
  // never waits for a writer or a reader; what it cannot copy now the next request copies). Errors are dropped:
  // the WAL keeps the pages and the next checkpoint (or the limit's, in a commit) copies them.
  void checkpoint_loop() {
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr) == SQLITE_OK) {
      // The read opens the connection's WAL: a connection that has read nothing yet does not know the file is in
      // WAL mode, and its checkpoints copy nothing (they return at once with no error), so without it the WAL only
      // ever started over at the limit, in a commit. It reads under checkpoint_running, as a checkpoint runs: while
      // it reads it holds a snapshot, and no checkpoint copies past a snapshot in use nor can the WAL start over.
      // A thread descheduled in that read on a loaded machine kept the commits at the limit from copying anything
      // for as long (the WAL grew to 150-510 pages); now the commit at the limit waits for the read to end.
      std::lock_guard<std::mutex> running(checkpoint_running);
      sqlite3_exec(db, "PRAGMA wal_autocheckpoint = 0; SELECT 1 FROM sqlite_schema LIMIT 1", nullptr, nullptr, nullptr);
    }
    std::unique_lock<std::mutex> lock(checkpoint_mutex);
    for (;;) {
      checkpoint_wanted.wait(lock, [this] { return requested || stopping; });
      if (stopping) break;
      requested = false;
      lock.unlock();
      int log = 0, copied = 0;
      if (db) {
        std::lock_guard<std::mutex> running(checkpoint_running);
        sqlite3_wal_checkpoint_v2(db, nullptr, SQLITE_CHECKPOINT_PASSIVE, &log, &copied);
      }
      lock.lock();
      checkpointed = static_cast<std::size_t>(std::max(copied, 0));
    }
    lock.unlock();
    sqlite3_close_v2(db);
  }

  [[noreturn]] void damaged_run(const std::string& tenant_id, const std::string& run_id, const char* what) const {
    throw storage_error(fmt::format("{}: the row of run '{}' in tenant '{}' is damaged: {}", where, excerpt(run_id),
                                    excerpt(tenant_id), what));
  }

  // The run in the current result row of a run_head query: its row, and its newest own entry (NULLs when none).
  RunInfo run_row(const Query& q, const std::string& tenant_id, const std::string& run_id) const {
    for (int col : {0, 2, 3}) {
      if (q.type(col) != SQLITE_INTEGER) damaged_run(tenant_id, run_id, "a number column holds something else");
    }
    if (q.type(2) == SQLITE_INTEGER && q.int64(2) < 0) damaged_run(tenant_id, run_id, "fork_seq is negative");
    if (q.type(1) != SQLITE_NULL && q.type(1) != SQLITE_TEXT) {
      damaged_run(tenant_id, run_id, "forked_from is not text");
    }
    for (int col : {4, 5}) {
      if (q.type(col) != SQLITE_NULL && q.type(col) != SQLITE_INTEGER) {
        damaged_run(tenant_id, run_id, "its newest entry's seq or append time is not a number");
      }
    }
    const std::int64_t kept = q.int64(0), fork = q.int64(2);
    const std::int64_t newest = q.type(4) == SQLITE_INTEGER ? q.int64(4) : 0;
    if (kept < 1 || newest < 0 || (newest != 0 && newest <= fork)) {
      damaged_run(tenant_id, run_id, "its sequence numbers are out of order");
    }
    RunInfo info;
    info.run_id = run_id;
    info.last_seq = static_cast<std::uint64_t>(std::max(newest, fork));
    info.kept_from = static_cast<std::uint64_t>(kept);
    if (q.type(1) == SQLITE_TEXT) info.forked_from = std::string(q.text(1));
    info.fork_seq = static_cast<std::uint64_t>(fork);
    info.created_at = q.int64(3);
    info.updated_at = q.type(5) == SQLITE_INTEGER ? q.int64(5) : info.created_at;
    return info;
  }

  std::string path;
  SqliteJournalOptions options;
  std::string where;
  detail::ConnectionPool<Connection> pool;
  const pid_t owner;  // the process that may use the checkpoint thread
  std::mutex checkpoint_mutex;
  std::mutex checkpoint_running;  // held by a checkpoint of this process's (the thread's, or a commit's at the limit)
  std::condition_variable checkpoint_wanted;
  bool requested = false;
  bool stopping = false;
  std::size_t checkpointed = 0;  // the WAL's pages the thread's last checkpoint copied
  std::thread checkpointer;      // started by the first commit that reaches checkpoint_pages
};

SqliteRunJournal::SqliteRunJournal(std::string path, SqliteJournalOptions options) : RunJournal(options.clock) {
  if (path.empty() || path == ":memory:" || path.rfind("file::memory:", 0) == 0) {
    throw invalid_argument(
        fmt::format("sqlite journal: path '{}' names an in-memory database, which each connection would see empty; "
                    "give a file path, or use InMemoryRunJournal",
                    path));
  }
  if (options.busy_timeout_ms < 0) {
    throw invalid_argument(
        fmt::format("sqlite journal: busy_timeout_ms must not be negative (got {})", options.busy_timeout_ms));
  }
  impl_ = std::make_unique<Impl>(std::move(path), std::move(options));
  auto first = impl_->open();
  detail::sqlite_migrate(*first, Impl::schema);
  impl_->pool.adopt(std::move(first));
}

SqliteRunJournal::~SqliteRunJournal() = default;

const std::string& SqliteRunJournal::path() const noexcept { return impl_->path; }

SqliteJournalOptions::Synchronous SqliteRunJournal::synchronous() const noexcept { return impl_->options.synchronous; }

void SqliteRunJournal::do_append(const std::string& tenant_id, const std::string& run_id, std::uint64_t expected_seq,
                                 const std::vector<JournalEntry>& entries, std::int64_t now) {
  // Everything that can fail on bad input fails before the transaction starts.
  std::vector<std::string> texts;
  texts.reserve(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    texts.push_back(dump_data(entries[i].data, impl_->options.json_limits, run_id, i));
  }

  auto conn = impl_->pool.acquire();
  Impl::WriteTransaction tx(*conn);
  // The check and the insert are inside a transaction that holds the database's write lock: no other writer, in
  // this process or another, can move the run on between them. Where the run ends is its newest entry's key.
  std::optional<std::uint64_t> actual;
  {
    Impl::Query q(*conn, run_end);
    q.bind(1, tenant_id).bind(2, run_id);
    if (q.step()) {
      if (q.type(0) != SQLITE_INTEGER || q.int64(0) < 0) impl_->damaged_run(tenant_id, run_id, "fork_seq");
      if (q.type(1) != SQLITE_NULL && (q.type(1) != SQLITE_INTEGER || q.int64(1) < 1)) {
        impl_->damaged_run(tenant_id, run_id, "its newest entry's seq");
      }
      actual = static_cast<std::uint64_t>(std::max(q.int64(0), q.type(1) == SQLITE_INTEGER ? q.int64(1) : 0));
    }
  }
  if (actual.value_or(0) != expected_seq) {
    throw conflict(fmt::format("append to run '{}': expected it to end at seq {}, it ends at seq {}", excerpt(run_id),
                               expected_seq, actual.value_or(0)),
                   expected_seq, actual.value_or(0));
  }
  if (!actual) {
    Impl::Query(*conn, run_insert)  // expected 0 and no run: this append creates it
        .bind(1, tenant_id)
        .bind(2, run_id)
        .bind(3, std::optional<std::string>())
        .bind(4, std::int64_t{0})
        .bind(5, now)
        .run();
  }
  for (std::size_t i = 0; i < entries.size(); ++i) {
    // The key (tenant, run, seq) refuses a second entry at a seq, whatever happened above.
    Impl::Query(*conn, entry_insert)
        .bind(1, tenant_id)
        .bind(2, run_id)
        .bind(3, sql_seq(entries[i].seq))
        .bind(4, entries[i].kind)
        .bind(5, texts[i])
        .bind(6, entries[i].time)
        .bind(7, now)
        .run();
  }
  tx.commit();
}

std::optional<RunInfo> SqliteRunJournal::head(const std::string& tenant_id, const std::string& run_id) const {
  auto conn = impl_->pool.acquire();
  Impl::Query q(*conn, run_head);
  q.bind(1, tenant_id).bind(2, run_id);
  if (!q.step()) return std::nullopt;
  return impl_->run_row(q, tenant_id, run_id);
}

std::vector<JournalEntry> SqliteRunJournal::own_entries(const std::string& tenant_id, const std::string& run_id,
                                                        std::uint64_t from_seq, std::uint64_t to_seq) const {
  std::vector<JournalEntry> out;
  if (from_seq > to_seq || from_seq > max_seq) return out;
  auto conn = impl_->pool.acquire();
  Impl::Query q(*conn, entries_range);
  q.bind(1, tenant_id).bind(2, run_id).bind(3, sql_seq(from_seq)).bind(4, sql_seq(to_seq));
  while (q.step()) {
    const std::int64_t seq = q.int64(0);
    try {
      if (q.type(0) != SQLITE_INTEGER || seq < 1) throw storage_error("seq is not a positive number");
      if (q.type(1) != SQLITE_TEXT) throw storage_error("kind is not text");
      if (q.type(2) != SQLITE_TEXT) throw storage_error("data is not JSON text");
      if (q.type(3) != SQLITE_INTEGER) throw storage_error("time is not a number");
      JournalEntry e;
      e.seq = static_cast<std::uint64_t>(seq);
      e.kind = std::string(q.text(1));
      e.data = detail::parse_json_column(q.text(2), impl_->options.json_limits, "data");
      e.time = q.int64(3);
      out.push_back(std::move(e));
    } catch (const error& e) {
      throw storage_error(fmt::format("{}: run '{}' seq {} in tenant '{}' is unreadable: {}", impl_->where,
                                      excerpt(run_id), seq, excerpt(tenant_id), e.what()));
    }
  }
  return out;
}

std::uint64_t SqliteRunJournal::own_snapshot_at(const std::string& tenant_id, const RunInfo& run,
                                                std::uint64_t at_seq) const {
  auto conn = impl_->pool.acquire();
  Impl::Query q(*conn, snapshot_before);
  q.bind(1, tenant_id).bind(2, run.run_id).bind(3, sql_seq(at_seq));
  if (!q.step()) return 0;
  if (q.type(0) != SQLITE_INTEGER || q.int64(0) < 1) impl_->damaged_run(tenant_id, run.run_id, "a snapshot's seq");
  return static_cast<std::uint64_t>(q.int64(0));
}

void SqliteRunJournal::do_create_fork(const std::string& tenant_id, const std::string& run_id,
                                      const std::string& source, std::uint64_t fork_seq, std::int64_t now) {
  auto conn = impl_->pool.acquire();
  Impl::WriteTransaction tx(*conn);
  {
    Impl::Query q(*conn, run_head);
    q.bind(1, tenant_id).bind(2, run_id);
    if (q.step()) {
      const RunInfo existing = impl_->run_row(q, tenant_id, run_id);
      throw conflict(fmt::format("fork: run '{}' exists already", excerpt(run_id)), 0, existing.last_seq);
    }
  }
  {
    // RunJournal::fork checked the source before this transaction; another process may have removed or pruned it
    // since. Checked again under the write lock, so a fork never points at entries that are gone.
    Impl::Query q(*conn, run_head);
    q.bind(1, tenant_id).bind(2, source);
    if (!q.step()) {
      throw not_found(fmt::format("fork: run '{}' not found in tenant '{}'", excerpt(source), excerpt(tenant_id)));
    }
    const RunInfo src = impl_->run_row(q, tenant_id, source);
    if (fork_seq > src.last_seq || (fork_seq > src.fork_seq && fork_seq < src.kept_from)) {
      throw invalid_argument(fmt::format("fork: run '{}' holds seq {} to {}; cannot fork at {}", excerpt(source),
                                         src.kept_from, src.last_seq, fork_seq));
    }
  }
  Impl::Query(*conn, run_insert)
      .bind(1, tenant_id)
      .bind(2, run_id)
      .bind(3, source)
      .bind(4, sql_seq(fork_seq))
      .bind(5, now)
      .run();
  tx.commit();
}

bool SqliteRunJournal::do_remove(const std::string& tenant_id, const std::string& run_id, std::int64_t updated_before) {
  auto conn = impl_->pool.acquire();
  Impl::WriteTransaction tx(*conn);
  {
    // A fork made by another process after RunJournal::remove looked would be left reading nothing.
    Impl::Query q(*conn, forks_of);
    q.bind(1, tenant_id).bind(2, run_id);
    if (q.step()) {
      throw state_error(fmt::format("remove: run '{}' has forks that read its entries ('{}'); remove them first",
                                    excerpt(run_id), detail::excerpt(q.text(0), 80)));
    }
  }
  // The run row goes only if it is still idle (sweep); its entries go with it in the same transaction.
  Impl::Query(*conn, run_delete).bind(1, tenant_id).bind(2, run_id).bind(3, updated_before).run();
  if (sqlite3_changes(conn->db()) == 0) return false;
  Impl::Query(*conn, entries_delete).bind(1, tenant_id).bind(2, run_id).run();
  tx.commit();
  return true;
}

std::size_t SqliteRunJournal::do_prune(const std::string& tenant_id, const std::string& run_id,
                                       std::uint64_t keep_from) {
  auto conn = impl_->pool.acquire();
  Impl::WriteTransaction tx(*conn);
  std::uint64_t own_from = 1;
  {
    Impl::Query q(*conn, run_head);
    q.bind(1, tenant_id).bind(2, run_id);
    if (!q.step()) return 0;  // removed meanwhile
    own_from = impl_->run_row(q, tenant_id, run_id).fork_seq;
  }
  {
    // RunJournal::prune chose keep_from from the forks it saw (keep_from is an own snapshot, so a fork at or
    // after it restores from there); a fork made since at an earlier point would lose its entries.
    Impl::Query q(*conn, forks_between);
    q.bind(1, tenant_id).bind(2, run_id).bind(3, sql_seq(own_from)).bind(4, sql_seq(keep_from));
    if (q.step()) {
      throw state_error(
          fmt::format("prune: run '{}' was forked at a point before seq {} meanwhile (by '{}'); "
                      "nothing was pruned, try again",
                      excerpt(run_id), keep_from, detail::excerpt(q.text(0), 80)));
    }
  }
  Impl::Query(*conn, entries_prune).bind(1, tenant_id).bind(2, run_id).bind(3, sql_seq(keep_from)).run();
  const auto gone = static_cast<std::size_t>(sqlite3_changes(conn->db()));
  Impl::Query(*conn, run_keep).bind(1, tenant_id).bind(2, run_id).bind(3, sql_seq(keep_from)).run();
  tx.commit();
  return gone;
}

std::vector<RunFork> SqliteRunJournal::forks(const std::string& tenant_id, const std::string& run_id) const {
  auto conn = impl_->pool.acquire();
  Impl::Query q(*conn, forks_of);
  q.bind(1, tenant_id).bind(2, run_id);
  std::vector<RunFork> out;
  while (q.step()) {
    if (q.type(1) != SQLITE_INTEGER || q.int64(1) < 0) {
      impl_->damaged_run(tenant_id, std::string(q.text(0)), "fork_seq");
    }
    out.push_back(RunFork{std::string(q.text(0)), static_cast<std::uint64_t>(q.int64(1))});
  }
  return out;
}

std::vector<std::string> SqliteRunJournal::stale_runs(const std::string& tenant_id, std::int64_t updated_before) const {
  auto conn = impl_->pool.acquire();
  Impl::Query q(*conn, stale);
  q.bind(1, tenant_id).bind(2, updated_before);
  std::vector<std::string> out;
  while (q.step()) out.emplace_back(q.text(0));
  return out;
}

CAIRN_END_NAMESPACE
