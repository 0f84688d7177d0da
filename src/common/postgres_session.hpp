// cairn (private) — what the PostgreSQL store and the PostgreSQL run journal share of a connection's life: opening
// it within a deadline, non-blocking; sending and collecting the replies within a deadline; describing a failure
// (and whether it lost the connection); re-opening with a growing pause; and running a call on a pooled
// connection, re-opened and run once more when the connection was lost. Each user keeps its own deadlines, error
// messages and statements: it says when to give up, and what a failure means to its callers.
#pragma once

#include <libpq-fe.h>

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#include "cairn/error.hpp"
#include "cairn/version.hpp"
#include "connection_pool.hpp"
#include "postgres_connection.hpp"

CAIRN_BEGIN_NAMESPACE
namespace detail {
namespace pg {

using Clock = std::chrono::steady_clock;

/// Milliseconds from `from` until `deadline`, rounded up.
inline long long ms_until(Clock::time_point from, Clock::time_point deadline) {
  return static_cast<long long>(std::chrono::ceil<std::chrono::milliseconds>(deadline - from).count());
}

/// Every session of the store and the journal turns JIT compilation off. PostgreSQL compiles a statement whose
/// estimated cost passes `jit_above_cost` (100,000 by default), which takes 20 ms and more; cairn's statements
/// each read a few rows through an index, but without fresh statistics (a tenant just loaded, before autovacuum's
/// ANALYZE) the planner can estimate such costs: the word search of a tenant of 100,000 just stored took 65 ms
/// instead of 5, of which 24 ms were JIT.
inline constexpr const char* no_jit = "SET jit = off";

/// Waits until the connection's socket is readable (`read`) or writable (`write`), or `deadline` passed
/// (Clock::time_point::max(): never); false on the deadline, and as soon as `wake` (a file descriptor, or -1:
/// none) is readable: a thread that must stop is not held up by a silent server.
inline bool wait_socket(PGconn* conn, bool read, bool write, Clock::time_point deadline, int wake = -1) {
  const int fd = PQsocket(conn);
  if (fd < 0) return true;  // libpq reports the broken connection on the next call
  for (;;) {
    int timeout = -1;
    if (deadline != Clock::time_point::max()) {
      const auto left = ms_until(Clock::now(), deadline);
      if (left <= 0) return false;
      timeout = static_cast<int>(std::min<std::int64_t>(left, std::numeric_limits<int>::max()));
    }
    pollfd p[2] = {{fd, static_cast<short>((read ? POLLIN : 0) | (write ? POLLOUT : 0)), 0}, {wake, POLLIN, 0}};
    const int r = ::poll(p, wake >= 0 ? 2 : 1, timeout);
    if (r > 0 && wake >= 0 && p[1].revents != 0) return false;
    if (r > 0) return true;
    if (r == 0) {
      if (Clock::now() >= deadline) return false;
      continue;
    }
    if (errno != EINTR) return true;  // let libpq find out what is wrong with the socket
  }
}

/// Finishes opening `conn`, just started by PQconnectStart or PQconnectStartParams, without blocking past
/// `deadline`: PQconnectPoll, waiting with poll() for the remaining time (PQconnectdb and PQreset would wait for a
/// silent server as long as the kernel lets them). Then quiets its notices and makes it non-blocking, so that
/// sending a large statement to a server that stopped reading never blocks past a deadline either. `where` starts
/// every message ("postgres store"); `budget_ms` is the time a timeout's message names. Throws
///  - storage_error "<where>: out of memory while connecting" when `conn` is null (libpq could not allocate it);
///  - connection_lost "<where>: cannot connect: <libpq's reason>" when the server refused or cannot be reached;
///  - connection_lost "<where>: cannot connect: no answer from the server within <budget_ms> ms" when the deadline
///    passed first; `conn` is then closed (and null).
/// Returns false when the connection could not be made non-blocking: each user reports that its own way.
[[nodiscard]] inline bool finish_connecting(PGconn*& conn, std::string_view where, Clock::time_point deadline,
                                            long long budget_ms, int wake = -1) {
  if (!conn) throw storage_error(fmt::format("{}: out of memory while connecting", where));
  auto status = PQstatus(conn) == CONNECTION_BAD ? PGRES_POLLING_FAILED : PGRES_POLLING_WRITING;
  while (status != PGRES_POLLING_OK) {
    if (status == PGRES_POLLING_FAILED || PQstatus(conn) == CONNECTION_BAD) {
      throw connection_lost(fmt::format("{}: cannot connect: {}", where, trimmed(PQerrorMessage(conn))));
    }
    if (!wait_socket(conn, status == PGRES_POLLING_READING, status == PGRES_POLLING_WRITING, deadline, wake)) {
      PQfinish(conn);  // non-blocking: never waits for the silent server
      conn = nullptr;
      throw connection_lost(
          fmt::format("{}: cannot connect: no answer from the server within {} ms", where, budget_ms));
    }
    status = PQconnectPoll(conn);
  }
  ignore_notices(conn);
  return PQsetnonblocking(conn, 1) == 0;
}

/// Where collect_replies() stopped before all the replies came.
enum class Stall {
  none,             // every reply came
  send_failed,      // libpq could not send what was queued
  send_timed_out,   // the server took none of it before the deadline
  broken,           // reading from the connection failed
  reply_timed_out,  // no (further) reply came before the deadline
};

/// The replies to what was sent, unless it stalled: the first that failed, and the last that succeeded.
struct Replies {
  Result error{nullptr, &PQclear};
  Result last{nullptr, &PQclear};
  Stall stall = Stall::none;
  std::exception_ptr row_error;  // what `each_row` threw (collect_replies), the rest of the replies read past it
};

/// What collect_replies() hands each row of a statement sent in single-row mode (PQsetSingleRowMode), as it comes.
using RowSink = std::function<void(const PGresult* row)>;

/// Sends what was queued on the (non-blocking) connection and collects the replies to it, waiting at most until
/// `deadline` (or until `wake` is readable: wait_socket()). On a stall the caller decides what it means (the
/// connection is left as it is: PQerrorMessage still says what libpq saw). With `each_row`, each row of a statement
/// in single-row mode goes to it as it arrives (its result freed after: the rows of a large answer are never all in
/// memory at once); when it throws, the rest of the replies are read and dropped (the connection is ready for the
/// next statement) and Replies::row_error has what it threw.
inline Replies collect_replies(PGconn* conn, Clock::time_point deadline, int wake = -1,
                               const RowSink* each_row = nullptr) {
  const auto stalled = [](Stall why) {
    Replies r;
    r.stall = why;
    return r;
  };
  for (;;) {
    const int flushed = PQflush(conn);
    if (flushed == 0) break;
    if (flushed < 0) return stalled(Stall::send_failed);
    if (!wait_socket(conn, true, true, deadline, wake)) return stalled(Stall::send_timed_out);
    if (PQconsumeInput(conn) == 0) return stalled(Stall::broken);
  }
  Replies out;
  for (;;) {
    while (PQisBusy(conn)) {
      if (!wait_socket(conn, true, false, deadline, wake)) return stalled(Stall::reply_timed_out);
      if (PQconsumeInput(conn) == 0) return stalled(Stall::broken);
    }
    Result res(PQgetResult(conn), &PQclear);
    if (!res) break;
    const auto status = PQresultStatus(res.get());
    if (status == PGRES_SINGLE_TUPLE) {
      if (each_row && !out.row_error) {
        try {
          (*each_row)(res.get());
        } catch (...) {
          out.row_error = std::current_exception();
        }
      }
      continue;
    }
    if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
      if (!out.error) out.error = std::move(res);
    } else {
      out.last = std::move(res);
    }
  }
  return out;
}

/// A failed call, described: its SQLSTATE (empty when there is none: no result came, or libpq failed on the
/// client's side), the message "<where>: <what>: <the server's or libpq's message, else 'no reply from the
/// server'>", and whether the connection is lost (libpq says CONNECTION_BAD, or the SQLSTATE says so:
/// connection_gone()). `res` may be null (a failure without a result); `code` points into it.
struct Failure {
  std::string_view code;
  std::string text;
  bool lost = false;
};

inline Failure describe_failure(PGconn* conn, const PGresult* res, std::string_view where, const char* what) {
  Failure f;
  const char* state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
  f.code = state ? state : "";
  const std::string msg = trimmed(res ? PQresultErrorMessage(res) : PQerrorMessage(conn));
  f.text = fmt::format("{}: {}: {}", where, what, msg.empty() ? "no reply from the server" : msg);
  f.lost = PQstatus(conn) == CONNECTION_BAD || connection_gone(f.code);  // PQstatus(nullptr) is CONNECTION_BAD
  return f;
}

/// Calls `attempt(first)` until a try returns instead of throwing connection_lost (the server went away again, or
/// is still starting up), pausing 20 ms between tries, then twice as long each time, up to 1 s; gives up when the
/// next pause would end past `deadline`. Returns the last try's error when it gave up, nothing when a try succeeded.
/// What each try may take is `attempt`'s to bound.
template <typename Attempt>
std::optional<std::string> keep_trying(Clock::time_point deadline, Attempt&& attempt) {
  auto pause = std::chrono::milliseconds(20);
  for (bool first = true;; first = false) {
    std::string last_error;
    try {
      attempt(first);
      return std::nullopt;
    } catch (const connection_lost& e) {
      last_error = e.what();
    }
    if (Clock::now() + pause > deadline) return last_error;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(1000));
  }
}

/// Runs `op(connection, retry)` on a connection leased from `pool`. A connection that is not open (`conn` null or
/// not CONNECTION_OK), or that turns out lost while `op` runs (op throws connection_lost), is re-opened by
/// `reopen(connection, opened)` and `op` runs once more: op decides what is safe to repeat. `opened` (and `retry`
/// on the second run) says whether the connection had been opened before: one never opened, or closed by an earlier
/// call, ran nothing of this call. What the second run throws (connection_lost included) goes to the caller.
/// `Connection` holds its libpq connection as `PGconn* conn`.
template <typename Connection, typename Reopen, typename Op>
auto with_retry(ConnectionPool<Connection>& pool, Reopen&& reopen, Op&& op) {
  auto lease = pool.acquire();
  const bool opened = lease->conn != nullptr;
  if (PQstatus(lease->conn) == CONNECTION_OK) {
    try {
      return op(*lease, false);
    } catch (const connection_lost&) {
      // re-opened below
    }
  }
  reopen(*lease, opened);
  return op(*lease, opened);
}

}  // namespace pg
}  // namespace detail
CAIRN_END_NAMESPACE
