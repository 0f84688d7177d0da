// cairn (private) — a small blocking pool of database connections, shared by the SQLite and PostgreSQL stores.
//
// A connection is used by one thread at a time: acquire() hands it out as a Lease, and the lease puts it back
// when it goes out of scope. New connections are opened lazily, up to the pool's size; beyond that, callers wait,
// for at most the pool's wait limit (then acquire() throws storage_error), or for ever when it has none.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cairn/error.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace detail {

/// Thread-safe.
template <typename Connection>
class ConnectionPool {
 public:
  using Factory = std::function<std::unique_ptr<Connection>()>;

  /// Hands a connection back to its pool when destroyed; discard() closes it instead (after a failure that may
  /// have left it unusable).
  class Lease {
   public:
    Lease(ConnectionPool* pool, std::unique_ptr<Connection> conn) : pool_(pool), conn_(std::move(conn)) {}
    Lease(Lease&& other) noexcept : pool_(other.pool_), conn_(std::move(other.conn_)) {}
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Lease& operator=(Lease&&) = delete;
    ~Lease() {
      if (conn_) pool_->give_back(std::move(conn_));
    }

    Connection& operator*() const noexcept { return *conn_; }
    Connection* operator->() const noexcept { return conn_.get(); }
    void discard() {
      conn_.reset();
      pool_->forget();
    }

   private:
    ConnectionPool* pool_;
    std::unique_ptr<Connection> conn_;
  };

  /// `max_wait` bounds how long acquire() waits for a connection when all `size` are leased (zero: for ever);
  /// `where` ("postgres store") and `options` (the names of the host's knobs: "pool_size or pool_wait_ms") go into
  /// the error it then throws.
  ConnectionPool(std::size_t size, Factory factory, std::chrono::milliseconds max_wait = {}, std::string where = {},
                 std::string options = {})
      : size_(size == 0 ? 1 : size),
        factory_(std::move(factory)),
        max_wait_(max_wait),
        where_(std::move(where)),
        options_(std::move(options)) {}

  /// Adds an already open connection (the one the store opened to run its migrations, say).
  void adopt(std::unique_ptr<Connection> conn) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++open_;
    idle_.push_back(std::move(conn));
  }

  /// A connection: an idle one, else a new one (when fewer than size() are open), else the first one handed back.
  /// Throws storage_error when none came back within the wait limit: every connection stayed leased (calls
  /// holding them in long statements or lock waits, more threads than connections, or a call that needs a second
  /// connection while it holds the only one), and waiting longer might never end.
  Lease acquire() {
    std::unique_lock<std::mutex> lock(mutex_);
    const auto ready = [this] { return !idle_.empty() || open_ < size_; };
    if (max_wait_.count() <= 0) {
      available_.wait(lock, ready);
    } else if (!available_.wait_for(lock, max_wait_, ready)) {
      throw storage_error(fmt::format(
          "{}: all {} pooled connection{} stayed in use for {} ms, so this call got none; raise {}, or look for "
          "calls that hold connections for long (long statements or lock waits, a call made from inside another "
          "call on the same {})",
          where_.empty() ? "connection pool" : where_, size_, size_ == 1 ? "" : "s", max_wait_.count(),
          options_.empty() ? "the pool's size or wait" : options_, where_.empty() ? "pool" : where_));
    }
    if (!idle_.empty()) {
      auto conn = std::move(idle_.back());
      idle_.pop_back();
      return Lease(this, std::move(conn));
    }
    ++open_;
    lock.unlock();
    try {
      return Lease(this, factory_());
    } catch (...) {
      forget();
      throw;
    }
  }

  std::size_t size() const noexcept { return size_; }

 private:
  void give_back(std::unique_ptr<Connection> conn) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      idle_.push_back(std::move(conn));
    }
    available_.notify_one();
  }
  void forget() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --open_;
    }
    available_.notify_one();
  }

  const std::size_t size_;
  Factory factory_;
  const std::chrono::milliseconds max_wait_;
  const std::string where_;
  const std::string options_;
  std::mutex mutex_;
  std::condition_variable available_;
  std::vector<std::unique_ptr<Connection>> idle_;
  std::size_t open_ = 0;
};

}  // namespace detail
CAIRN_END_NAMESPACE
