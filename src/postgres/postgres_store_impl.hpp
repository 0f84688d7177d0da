// cairn (private) — PostgresArtifactStore::Impl, what the store's files share: its connections (their deadlines,
// running a statement, reconnecting, writing once across a retry; the mechanics, shared with the run journal, are
// src/common/postgres_session.hpp), decoding a row, the tenants' lexeme prefixes, pruning the change sequence, and
// the store's search helpers (postgres_search.cpp). The schema is postgres_schema.cpp's, the SQL
// postgres_statements.cpp's; CRUD is postgres_store.cpp.
#pragma once

#include <libpq-fe.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "../common/connection_pool.hpp"
#include "../common/postgres_connection.hpp"
#include "../common/postgres_session.hpp"
#include "../common/record_cache.hpp"
#include "../common/record_columns.hpp"
#include "cairn/artifact/search/filter_columns.hpp"
#include "cairn/artifact/search/vector_cache.hpp"
#include "cairn/detail/text.hpp"
#include "cairn/store/postgres_store.hpp"
#include "cairn/version.hpp"
#include "postgres_columns.hpp"
#include "postgres_schema.hpp"
#include "postgres_statements.hpp"

CAIRN_BEGIN_NAMESPACE
namespace detail {
namespace pg {

/// Thrown when a write failed because a write with its token is already there (the index write_token_index): a
/// first try of the same call committed, or will, first. Nothing of this statement was written.
class token_taken : public storage_error {
 public:
  using storage_error::storage_error;
};

/// Thrown when a statement lost a race it may simply run again: a serialization failure or deadlock (under a
/// stricter default isolation level than READ COMMITTED), or a unique violation. The statement was rolled back.
class write_conflict : public storage_error {
 public:
  using storage_error::storage_error;
};

}  // namespace pg
}  // namespace detail

// The store's files name what detail::pg holds (statements, columns, the connection's pieces) unqualified, as they
// did when all of it lived in one file's unnamed namespace.
using namespace detail::pg;

struct PostgresArtifactStore::Impl {
  using Clock = std::chrono::steady_clock;

  struct Connection {
    PGconn* conn = nullptr;  // null until opened, and after it was abandoned
    bool prepared = false;
    Connection() = default;
    ~Connection() { PQfinish(conn); }
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;
    void close() noexcept {
      // Non-blocking: closing never waits for a server that stopped answering.
      PQfinish(conn);
      conn = nullptr;
      prepared = false;
    }
  };

  /// Up to 22 text parameters; null pointers are SQL NULLs.
  using Params = detail::pg::Params<22>;

  Impl(std::string c, PostgresOptions o)
      : conninfo(std::move(c)),
        options(o),
        // JIT off (detail::pg::no_jit): cairn's statements are short, and a compiled plan costs more than it saves.
        // cairn.word_fold tells the insert trigger whether a thread of this store object folds the word log
        // (migration 11).
        session_sql(
            fmt::format("SET client_encoding = 'UTF8'; SET statement_timeout = {}; {}; SET cairn.word_fold = {}",
                        o.statement_timeout_ms, detail::pg::no_jit, o.fold_words_in_background ? "notify" : "inline")),
        // A pooled connection is opened by with_connection(), under the call's deadline.
        pool(
            o.pool_size, [] { return std::make_unique<Connection>(); }, std::chrono::milliseconds(o.pool_wait_ms),
            "postgres store", "PostgresOptions::pool_size or pool_wait_ms") {}

  /// The time a statement may take: the server cancels it after statement_timeout_ms, and the client waits one
  /// second more for that answer before it gives the connection up as dead. Never, when the timeout is 0.
  Clock::time_point statement_deadline() const {
    if (options.statement_timeout_ms == 0) return Clock::time_point::max();
    return Clock::now() + std::chrono::milliseconds(options.statement_timeout_ms) + std::chrono::seconds(1);
  }

  // Opens c.conn without blocking past the deadline (finish_connecting()). Throws connection_lost when the server
  // cannot be reached in time, so callers may try again. `budget_ms` is the time the error message names (by
  // default, what was left of the deadline).
  // `wake`: stop waiting as soon as it is readable (wait_socket()).
  void open(Connection& c, Clock::time_point deadline, std::optional<long long> budget_ms = std::nullopt,
            int wake = -1) {
    c.close();
    if (!budget_ms) budget_ms = std::max(0LL, ms_until(Clock::now(), deadline));
    c.conn = PQconnectStart(conninfo.c_str());
    if (!finish_connecting(c.conn, where, deadline, *budget_ms, wake)) fail(c, nullptr, "connecting");
  }

  // Throws connection_lost when the failure is the connection's (the server restarted, the network went), a
  // plain storage_error otherwise.
  [[noreturn]] void fail(const Connection& c, const PGresult* res, const char* what) const {
    const Failure f = describe_failure(c.conn, res, where, what);
    const char* constraint = res ? PQresultErrorField(res, PG_DIAG_CONSTRAINT_NAME) : nullptr;
    if (f.lost) throw connection_lost(f.text);
    if (f.code == "23505" && constraint && constraint == write_token_index) throw token_taken(f.text);
    if (f.code == "40001" || f.code == "40P01" || f.code == "23505") throw write_conflict(f.text);
    throw storage_error(f.text);
  }

  // Gives up a connection whose server did not answer in time: closed without waiting (the server's own
  // statement_timeout ends whatever it was running), so the call can reconnect.
  [[noreturn]] void abandon(Connection& c, const char* what) const {
    c.close();
    throw connection_lost(
        fmt::format("{}: {}: no reply from the server in time (statement_timeout_ms = {}); "
                    "the connection was closed",
                    where, what, options.statement_timeout_ms));
  }

  // Sends what `send` queues on the connection and collects the results, waiting at most until `deadline`.
  // The result of the last statement comes back; the first error is thrown (see fail()).
  // `wake`: stop waiting as soon as it is readable (wait_socket()), as on the deadline.
  // `each_row`: the rows of a statement sent in single-row mode, as they come (collect_replies()); what it throws is
  // thrown once every reply was read, unless the statement failed (that failure is thrown).
  template <typename Send>
  Result exec(Connection& c, Send&& send, const char* what, Clock::time_point deadline, int wake = -1,
              const detail::pg::RowSink* each_row = nullptr) const {
    if (!c.conn || PQstatus(c.conn) != CONNECTION_OK) fail(c, nullptr, what);
    if (!send(c.conn)) fail(c, nullptr, what);
    Replies replies = collect_replies(c.conn, deadline, wake, each_row);
    switch (replies.stall) {
      case Stall::none: break;
      case Stall::send_timed_out:
      case Stall::reply_timed_out: abandon(c, what);
      case Stall::send_failed:
      case Stall::broken: fail(c, nullptr, what);
    }
    if (replies.error) fail(c, replies.error.get(), what);
    if (replies.row_error) std::rethrow_exception(replies.row_error);
    if (!replies.last) fail(c, nullptr, what);
    return std::move(replies.last);
  }

  // Runs a prepared statement in single-row mode: each row goes to `each_row` as it arrives, in binary format
  // (binary_int64), and only one row's result is in memory at a time. What `each_row` throws reaches the caller,
  // after the connection read the rest of the answer.
  void run_rows(Connection& c, Stmt s, const Params& p, const detail::pg::RowSink& each_row) const {
    exec(
        c,
        [&](PGconn* conn) {
          return PQsendQueryPrepared(conn, statement_names[s], p.count, p.values.data(), nullptr, nullptr, 1) == 1 &&
                 PQsetSingleRowMode(conn) == 1;
        },
        statement_names[s], statement_deadline(), -1, &each_row);
  }

  // Runs a prepared statement; with `binary`, its rows come in PostgreSQL's binary format (binary_int64).
  Result run(Connection& c, Stmt s, const Params& p, bool binary = false) const {
    return exec(
        c,
        [&](PGconn* conn) {
          return PQsendQueryPrepared(conn, statement_names[s], p.count, p.values.data(), nullptr, nullptr,
                                     binary ? 1 : 0) == 1;
        },
        statement_names[s], statement_deadline());
  }

  Result simple(Connection& c, const std::string& sql, const char* what = "migrating the schema",
                std::optional<Clock::time_point> deadline = std::nullopt) const {
    return exec(
        c, [&](PGconn* conn) { return PQsendQuery(conn, sql.c_str()) == 1; }, what,
        deadline ? *deadline : statement_deadline());
  }

  // The session's settings (client encoding UTF8, statement_timeout), for a connection just opened.
  void set_up_session(Connection& c, Clock::time_point deadline) {
    simple(c, session_sql, "setting up the session", deadline);
  }

  // Prepares every statement, all or nothing: the connection counts as prepared only when all were, and a
  // session that may hold some from a try that failed half-way (a statement the server refused) drops them first,
  // so the next try never meets "prepared statement already exists".
  void prepare(Connection& c, bool fresh_session, std::optional<Clock::time_point> deadline = std::nullopt) {
    c.prepared = false;
    if (!fresh_session) simple(c, "DEALLOCATE ALL", "preparing statements", deadline);
    for (std::size_t i = 0; i < statement_count; ++i) {
      const std::string sql = statement_sql(static_cast<Stmt>(i));
      exec(
          c, [&](PGconn* conn) { return PQsendPrepare(conn, statement_names[i], sql.c_str(), 0, nullptr) == 1; },
          "preparing statements", deadline ? *deadline : statement_deadline());
    }
    c.prepared = true;
  }

  /// The first try at connecting waits at least this long, so that reconnect_timeout_ms = 0 (or a few ms) still
  /// means "one try" rather than "never".
  static constexpr int min_first_try_ms = 1000;

  // The first connection, for the constructor: one try, within reconnect_timeout_ms (at least min_first_try_ms).
  std::unique_ptr<Connection> connect() {
    auto c = std::make_unique<Connection>();
    const int budget_ms = std::max(options.reconnect_timeout_ms, min_first_try_ms);
    const auto deadline = Clock::now() + std::chrono::milliseconds(budget_ms);
    try {
      open(*c, deadline, budget_ms);
      set_up_session(*c, deadline);
    } catch (const connection_lost& e) {
      throw storage_error(e.what());
    }
    return c;
  }

  // Opens a connection that is not open yet, or re-opens a broken one (`broken`: counted in reconnects()), trying
  // again with a growing pause until reconnect_timeout_ms has passed; every try (connecting, setting up,
  // preparing) waits only for what is left.
  void reconnect(Connection& c, bool broken) {
    const auto start = Clock::now();
    const auto deadline = start + std::chrono::milliseconds(options.reconnect_timeout_ms);
    const std::optional<std::string> last_error = keep_trying(deadline, [&](bool first) {
      const auto try_deadline =
          first ? std::max(deadline, start + std::chrono::milliseconds(min_first_try_ms)) : deadline;
      open(c, try_deadline);
      set_up_session(c, try_deadline);
      prepare(c, true, try_deadline);
    });
    if (!last_error) {
      if (broken) reconnect_count.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    c.close();
    throw storage_error(
        fmt::format("{}: lost the connection to the server and could not reconnect within {} ms "
                    "(last try: {})",
                    where, options.reconnect_timeout_ms, *last_error));
  }

  // Runs `op(connection, retry)` on a pooled connection (with_retry()). When the connection turns out broken (or
  // the server stopped answering), it is re-opened and `op` runs once more with retry = true: op decides what is
  // safe to repeat (reads are; writes go through write_once()).
  template <typename Op>
  auto with_connection(Op&& op) {
    try {
      return with_retry(
          pool, [this](Connection& c, bool broken) { reconnect(c, broken); },
          [&](Connection& c, bool retry) {
            if (!c.prepared) prepare(c, false);  // a re-opened connection was prepared by reconnect()
            return op(c, retry);
          });
    } catch (const connection_lost& e) {
      throw storage_error(e.what());
    }
  }

  // A write that may be sent twice (its first try's connection broke: the first try may have committed, may
  // still be running on the server, or may have been rolled back) and must happen at most once. Every such write
  // carries a fresh token under the unique index write_token_index, so of all tries exactly one commits.
  //   find(c) -> std::optional<T>: what the write that carries the token did, if it committed;
  //   apply(c) -> T: the write itself.
  // A retry first looks for the token (the first try committed: its result is the answer). Then the write runs;
  // when it collides with the token (the first try committed meanwhile, having waited on a lock while the retry
  // looked), it was rolled back as a whole and the first try's result is the answer. A conditional write that is
  // refused on a retry (say, its expected version moved on) looks once more too, since the first try may be the
  // write that moved it.
  template <typename T, typename Find, typename Apply>
  T write_once(Connection& c, bool retry, Find&& find, Apply&& apply) {
    if (retry) {
      if (std::optional<T> done = find(c)) return *done;
    }
    try {
      return apply(c);
    } catch (const token_taken& e) {
      if (std::optional<T> done = find(c)) return *done;
      throw storage_error(fmt::format("{} (and no write with this token was found)", e.what()));
    } catch (const connection_lost&) {
      throw;
    } catch (const error&) {
      if (retry) {
        if (std::optional<T> done = find(c)) return *done;
      }
      throw;
    }
  }

  ~Impl() { stop_folder(); }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  // ---- folding the word log off the writers' path (postgres_word_fold.cpp)

  /// Starts the thread that folds the tenants' word logs as the insert trigger asks (a notification on
  /// cairn_word_fold), once, at the store object's first write; nothing when options.fold_words_in_background is
  /// false. Never throws: a thread that cannot connect keeps trying, and the writes' own folds bound the log.
  void start_folder() noexcept;
  void stop_folder() noexcept;
  void fold_loop();
  std::once_flag folder_started;
  std::thread folder;
  std::atomic<bool> folder_stopping{false};
  int folder_pipe[2] = {-1, -1};  // stop_folder() writes a byte to wake the thread wherever it waits

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

  // Creates or migrates the schema (postgres_schema.cpp): the migrations run in one transaction, under a lock
  // every cairn takes, so concurrent processes migrate once.
  void migrate(Connection& c);

  // -1 when the database has no cairn schema yet.
  int read_schema_version(Connection& c);

  std::string conninfo;
  PostgresOptions options;
  std::string session_sql;
  std::string where = "postgres store";
  detail::ConnectionPool<Connection> pool;
  std::atomic<std::uint64_t> reconnect_count{0};
  // this process's indexes, caught up from cairn_search_changes
  mutable detail::VectorCache vectors{detail::VectorCache::default_max_entries, detail::VectorCache::default_max_bytes,
                                      detail::fields_column_reader()};
  // the records similarity pages read, decoded (options.record_cache_bytes; similar_candidates says when one is used)
  mutable detail::RecordCache records{options.record_cache_bytes};

  /// The prefix of a tenant's lexemes ("<no>:", migration 5). A tenant that never wrote has none: nothing, or
  /// with `create` (a write), its row is made first, with a new number. Numbers never change, so each is asked
  /// for once per store object.
  std::optional<std::string> lexeme_prefix(Connection& c, const std::string& tenant_id, bool create = false) {
    {
      std::lock_guard<std::mutex> lock(prefixes_mutex);
      const auto it = prefixes.find(tenant_id);
      if (it != prefixes.end()) return it->second;
    }
    Params p;
    p.add(tenant_id);
    Result res = run(c, tenant_number, p);
    // Writers of a new tenant race to make its row: the losers find it on a later try (under a stricter default
    // isolation level than READ COMMITTED, a try may also fail as a serialization conflict).
    for (int attempt = 0; create && PQntuples(res.get()) == 0 && attempt < 50; ++attempt) {
      if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(std::min(attempt * 2, 50)));
      try {
        res = run(c, tenant_create, p);
      } catch (const write_conflict&) {
        if (attempt == 49) throw;
      }
    }
    if (PQntuples(res.get()) == 0) {
      if (!create) return std::nullopt;
      throw storage_error(fmt::format("{}: could not create the search row of tenant '{}'", where, tenant_id));
    }
    std::string prefix = std::string(PQgetvalue(res.get(), 0, 0)) + ":";
    std::lock_guard<std::mutex> lock(prefixes_mutex);
    return prefixes.emplace(tenant_id, std::move(prefix)).first->second;
  }
  std::mutex prefixes_mutex;
  std::map<std::string, std::string, std::less<>> prefixes;  // tenant -> "<no>:"

  /// How many documents hold each word (BM25's df), as cairn_search_words last counted them for a tenant (latest
  /// versions, or every version), with the state of the tenant's statistics row they hold for (migration 7): a word
  /// search hands them back, and the server counts only the words it is not given, or all of them when the row
  /// changed since. At most max_word_counts words are kept in all: past that, everything kept is dropped and counted
  /// again as queries come.
  struct WordCounts {
    std::string stats;
    std::unordered_map<std::string, std::int64_t> df;  // word -> documents holding it
  };
  static constexpr std::size_t max_word_counts = 1 << 16;
  std::mutex word_counts_mutex;
  std::map<std::pair<std::string, bool>, WordCounts> word_counts;  // (tenant, every version) -> counts
  std::size_t word_counts_kept = 0;

  /// After a write that left the tenant's change sequence at `newest`, pruned through `through`: once the
  /// sequence holds search_changes_kept and a sixteenth more, the oldest go (a batch every sixteenth). The write
  /// is done and acknowledged whatever happens here: a failure leaves the changes for a later write to prune.
  void prune_changes(const std::string& tenant_id, std::int64_t newest, std::int64_t through) {
    if (options.search_changes_kept == 0) return;
    const auto k = static_cast<std::int64_t>(
        std::min<std::size_t>(options.search_changes_kept, std::numeric_limits<std::int32_t>::max()));
    if (newest - through < k + k / 16 + 1) return;
    const std::string upto = std::to_string(newest - k);
    try {
      with_connection([&](Connection& c, bool) {
        Params p;
        p.add(tenant_id).add(upto);
        run(c, prune_sequence, p);
        return 0;
      });
    } catch (const error&) {
      // the next write that finds the sequence due prunes it
    }
  }

  // ---- search (postgres_search.cpp)

  /// What a word search found: cairn_search_words's answer and its candidates by key, scored. A candidate's record
  /// is made from its row only when the query needs it to decide (a metadata condition, a phrase, a value other
  /// than a plain JSON string); the others are scored from their text columns and made when a page shows them
  /// (word_record).
  struct WordRows {
    Result res{nullptr, &PQclear};
    std::vector<detail::KeyedCandidate> found;
  };
  WordRows word_candidates(const std::string& tenant_id, const SearchQuery& query, const detail::WordQuery& words,
                           std::size_t* unindexed);
  /// The record of version `version` of `id` among a word search's rows; null when it is not there or does not
  /// decode (as list() leaves a damaged row out).
  ArtifactPtr word_record(const PGresult* res, const std::string& id, std::uint64_t version) const;
  std::vector<detail::SearchCandidate> exact_candidates(const std::string& tenant_id, const SearchQuery& query,
                                                        const Embedding& vector);
  /// The versions this process's vector index finds nearest that pass the rows and the filters, scored by
  /// their stored vectors, best first: until `want` pass (hybrid's list), or, with `page`, until the ranked page
  /// (written there) is full, or the index has no more.
  std::vector<detail::SearchCandidate> similar_candidates(const std::string& tenant_id, const SearchQuery& query,
                                                          const detail::PreparedSearch& prepared, std::size_t want,
                                                          SearchPage* page);

  // The candidates in `res` (records, then their vector in column 15) that pass `filter`, each with its exact
  // cosine to `vector`: from `hits` (an index's, which computed it from its copy) where a hit has it, else from the
  // row's vector.
  /// What a statement's rows share with the records kept from earlier pages (RecordCache): rows that carry a key
  /// and no record (their `type` NULL) are the records in `kept`; a row read whose key is in `keep` is kept under the
  /// change sequence number there.
  struct PageRecords {
    std::unordered_map<std::string, ArtifactPtr> kept;    // "id\0version" -> the record kept
    std::unordered_map<std::string, std::uint64_t> keep;  // "id\0version" -> its index entry's change
  };
  std::vector<detail::SearchCandidate> similar_rows(const PGresult* res, const Embedding& vector,
                                                    const SearchFilter& filter,
                                                    const std::vector<detail::VectorHit>* hits = nullptr,
                                                    const PageRecords* records = nullptr) const;
};

CAIRN_END_NAMESPACE
