// PostgresArtifactStore: the thread that folds tenants' word logs into their word counts (migration 11). A write
// that makes a tenant's fold due sends a notification on cairn_word_fold with the tenant, instead of folding in its
// own transaction; this thread listens on a connection of its own and runs cairn_fold_words for each tenant it is
// told of. Any store object's thread may fold any tenant: the fold takes the tenant's advisory lock only if it is
// free, so of the listeners one folds and the others find nothing to do. Once it has no fold left to do, it vacuums
// the word log.
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <set>

#include "postgres_store_impl.hpp"

CAIRN_BEGIN_NAMESPACE

void PostgresArtifactStore::Impl::start_folder() noexcept {
  if (!options.fold_words_in_background) return;
  std::call_once(folder_started, [this] {
    // No pipe or no thread: no folds here, and every 8th due point still folds in its write.
    if (::pipe(folder_pipe) != 0) return;
    for (const int fd : folder_pipe) {
      ::fcntl(fd, F_SETFL, O_NONBLOCK);
      ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
    try {
      folder = std::thread([this] { fold_loop(); });
    } catch (const std::system_error&) {
      // as above
    }
  });
}

void PostgresArtifactStore::Impl::stop_folder() noexcept {
  // The byte stays unread: every wait of the thread (connecting, a statement, listening, a pause) ends on it.
  folder_stopping.store(true, std::memory_order_release);
  if (folder_pipe[1] >= 0) {
    const char byte = 0;
    [[maybe_unused]] const auto n = ::write(folder_pipe[1], &byte, 1);
  }
  if (folder.joinable()) folder.join();
  for (int& fd : folder_pipe) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
}

void PostgresArtifactStore::Impl::fold_loop() {
  Connection c;
  const int wake = folder_pipe[0];
  bool listening = false;
  auto pause = std::chrono::milliseconds(20);
  std::set<std::string> due;  // tenants told of and not folded yet
  bool vacuum_owed = false;   // a fold ran (or was tried) since the last vacuum of the log
  const auto stopping = [this] { return folder_stopping.load(std::memory_order_acquire); };
  const auto run = [&](const std::string& sql, const char* param, const char* what) {
    exec(
        c,
        [&](PGconn* conn) {
          // Without a parameter, the simple protocol: session_sql is several statements.
          if (!param) return PQsendQuery(conn, sql.c_str()) == 1;
          return PQsendQueryParams(conn, sql.c_str(), 1, nullptr, &param, nullptr, nullptr, 0) == 1;
        },
        what, statement_deadline(), wake);
  };
  // What libpq has read already (while a fold ran, say) never wakes a wait on the socket: take it first.
  const auto take_notifications = [&] {
    while (PGnotify* n = PQnotifies(c.conn)) {
      due.emplace(n->extra);
      PQfreemem(n);
    }
  };
  while (!stopping()) {
    try {
      if (!listening) {
        const auto deadline = Clock::now() + std::chrono::milliseconds(std::max(options.reconnect_timeout_ms, 1000));
        open(c, deadline, std::nullopt, wake);
        run(session_sql, nullptr, "setting up the session");
        run("LISTEN cairn_word_fold", nullptr, "listening for folds");
        // Named once it listens, so that pg_stat_activity tells it apart.
        run("SET application_name = 'cairn word log fold'", nullptr, "listening for folds");
        listening = true;
        pause = std::chrono::milliseconds(20);
      }
      take_notifications();
      if (due.empty()) {
        if (!wait_socket(c.conn, true, false, Clock::time_point::max(), wake)) break;  // stopping
        if (PQconsumeInput(c.conn) == 0) fail(c, nullptr, "listening for folds");
        take_notifications();
      }
      // One fold at a time, each its own transaction.
      while (!due.empty() && !stopping()) {
        const std::string tenant = *due.begin();
        due.erase(due.begin());
        vacuum_owed = true;
        run("SELECT cairn_fold_words($1)", tenant.c_str(), "folding the word log");
        take_notifications();
      }
      // Then, with nothing left to fold, the rows the folds deleted are vacuumed away. Until a vacuum, every word
      // query of a big tenant that reads its log visits them: its bitmap scan of the tenant's range of
      // cairn_word_log_tenant returns the dead entries with the live ones and marks none dead, so a query right
      // after 100,000 versions were stored read 41,888 entries and 4,656 heap blocks for 159 live rows (18 ms;
      // 1.1 ms after a vacuum). Autovacuum comes too late for that: it wakes once a minute and is throttled. A
      // vacuum another session runs on the table is not waited for (SKIP_LOCKED): that one does the work.
      if (vacuum_owed && due.empty() && !stopping()) {
        vacuum_owed = false;
        run("VACUUM (SKIP_LOCKED) cairn_word_log", nullptr, "vacuuming the word log");
        take_notifications();
      }
    } catch (const std::exception& e) {
      // A fold the server refused (a statement timeout, say) is left to the tenant's next due point. A lost
      // connection is opened again after a pause; notifications sent while none listened are lost, and those
      // tenants fold at their next due point (or at every 8th, in the write).
      if (dynamic_cast<const connection_lost*>(&e) == nullptr && c.conn && PQstatus(c.conn) == CONNECTION_OK &&
          listening) {
        continue;
      }
      c.close();
      listening = false;
      due.clear();
      pollfd p{wake, POLLIN, 0};
      ::poll(&p, 1, static_cast<int>(pause.count()));
      pause = std::min(pause * 2, std::chrono::milliseconds(1000));
    }
  }
}

CAIRN_END_NAMESPACE
