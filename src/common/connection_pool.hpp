// cairn (private) — a small blocking pool of database connections, shared by the SQLite and PostgreSQL stores.
//
// A connection is used by one thread at a time: acquire() hands it out as a Lease, and the lease puts it back
// when it goes out of scope. New connections are opened lazily, up to the pool's size; beyond that, callers wait.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

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

  ConnectionPool(std::size_t size, Factory factory) : size_(size == 0 ? 1 : size), factory_(std::move(factory)) {}

  /// Adds an already open connection (the one the store opened to run its migrations, say).
  void adopt(std::unique_ptr<Connection> conn) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++open_;
    idle_.push_back(std::move(conn));
  }

  Lease acquire() {
    std::unique_lock<std::mutex> lock(mutex_);
    available_.wait(lock, [this] { return !idle_.empty() || open_ < size_; });
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
  std::mutex mutex_;
  std::condition_variable available_;
  std::vector<std::unique_ptr<Connection>> idle_;
  std::size_t open_ = 0;
};

}  // namespace detail
CAIRN_END_NAMESPACE
