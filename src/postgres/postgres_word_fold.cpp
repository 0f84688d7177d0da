// PostgresArtifactStore: the thread that folds tenants' word logs into their word counts (migration 11). A write
// that makes a tenant's fold due sends a notification on cairn_word_fold with the tenant, instead of folding in its
// own transaction; this thread listens on a connection of its own and runs cairn_fold_words for each tenant it is
// told of. Any store object's thread may fold any tenant: the fold takes the tenant's advisory lock only if it is
// free, so of the listeners one folds and the others find nothing to do.
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <set>

#include "postgres_store_impl.hpp"

CAIRN_BEGIN_NAMESPACE

void PostgresArtifactStore::Impl::start_folder() noexcept {
  if (!options.fold_words_in_background) return;
  std::call_once(folder_started, [this] {
    if (::pipe(folder_pipe) != 0) return;  // no thread: every 8th due point still folds in its write
    ::fcntl(folder_pipe[0], F_SETFL, O_NONBLOCK);
    ::fcntl(folder_pipe[1], F_SETFL, O_NONBLOCK);
    try {
      folder = std::thread([this] { fold_loop(); });
    } catch (const std::system_error&) {
      // as above
    }
  });
}

void PostgresArtifactStore::Impl::stop_folder() noexcept {
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

namespace {

// Waits until `fd` (a connection's socket, or -1: none) is readable, the wake pipe is written, or `timeout_ms`
// passes (-1: no limit). True when the socket is readable.
bool wait_readable(int fd, int wake, int timeout_ms) {
  pollfd p[2] = {{wake, POLLIN, 0}, {fd, POLLIN, 0}};
  const int r = ::poll(p, fd >= 0 ? 2 : 1, timeout_ms);
  return r > 0 && fd >= 0 && (p[1].revents & (POLLIN | POLLERR | POLLHUP)) != 0;
}

}  // namespace

void PostgresArtifactStore::Impl::fold_loop() {
  Connection c;
  bool listening = false;
  auto pause = std::chrono::milliseconds(20);
  std::set<std::string> due;  // tenants told of and not folded yet
  const auto stopping = [this] { return folder_stopping.load(std::memory_order_acquire); };
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
        open(c, deadline);
        set_up_session(c, deadline);
        simple(c, "LISTEN cairn_word_fold", "listening for folds", deadline);
        // Named once it listens, so that pg_stat_activity tells it apart.
        simple(c, "SET application_name = 'cairn word log fold'", "listening for folds", deadline);
        listening = true;
        pause = std::chrono::milliseconds(20);
      }
      take_notifications();
      if (due.empty()) {
        wait_readable(PQsocket(c.conn), folder_pipe[0], -1);
        if (stopping()) break;
        if (PQconsumeInput(c.conn) == 0) fail(c, nullptr, "listening for folds");
        take_notifications();
      }
      // One fold at a time, each its own transaction.
      while (!due.empty() && !stopping()) {
        const std::string tenant = *due.begin();
        due.erase(due.begin());
        const char* value = tenant.c_str();
        exec(
            c,
            [&](PGconn* conn) {
              return PQsendQueryParams(conn, "SELECT cairn_fold_words($1)", 1, nullptr, &value, nullptr, nullptr,
                                       0) == 1;
            },
            "folding the word log", statement_deadline());
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
      wait_readable(-1, folder_pipe[0], static_cast<int>(pause.count()));
      pause = std::min(pause * 2, std::chrono::milliseconds(1000));
    }
  }
}

CAIRN_END_NAMESPACE
