// A TCP proxy on 127.0.0.1 for the PostgreSQL tests: it forwards bytes between the store and the real server, and
// can be told to cut the store's side of the connections while the server's side lives on (the client's network
// went, the server did not notice), to keep what the store sends on the connections open now until told to pass it
// on (a statement that reaches the server late), to hold new connections before they reach the server, or to go
// silent (a server that stops answering without closing anything). No mock: the server behind it is the real one.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace store_test {

class TcpProxy {
 public:
  explicit TcpProxy(int target_port) : target_port_(target_port) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (listen_fd_ < 0) throw std::runtime_error("proxy: socket() failed");
    const int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listen_fd_, 64) != 0) {
      ::close(listen_fd_);
      throw std::runtime_error("proxy: cannot listen on 127.0.0.1");
    }
    socklen_t len = sizeof addr;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { loop(); });
  }
  ~TcpProxy() {
    stop_ = true;
    thread_.join();
    for (auto& c : conns_) {
      if (c.client >= 0) ::close(c.client);
      if (c.server >= 0) ::close(c.server);
    }
    ::close(listen_fd_);
  }
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  int port() const noexcept { return port_; }

  /// Closes the store's side of every connection open now; the server's side stays open, and what the server
  /// still sends on it is read and dropped.
  void drop_clients() {
    in_loop([this] {
      for (auto& c : conns_) close_fd(c.client);
    });
  }
  /// What the store sends on the connections open now is kept in the proxy (the server does not see it) until
  /// release_stalled(); new connections are not affected.
  void stall_existing() {
    in_loop([this] {
      for (auto& c : conns_) c.stalled = true;
    });
  }
  /// Passes on what stall_existing() kept, and forwards as usual again.
  void release_stalled() {
    in_loop([this] {
      for (auto& c : conns_) {
        if (c.stalled && c.server >= 0 && !write_all(c.server, c.pending.data(), c.pending.size())) close_fd(c.server);
        c.stalled = false;
        c.pending.clear();
      }
    });
  }
  /// How many bytes stall_existing() is keeping now.
  std::size_t stalled_bytes() {
    std::size_t n = 0;
    in_loop([&] {
      for (const auto& c : conns_) n += c.pending.size();
    });
    return n;
  }
  /// How many bytes the server sent on connections whose client side was already closed (and were dropped).
  std::size_t dropped_bytes() const noexcept { return dropped_.load(); }
  /// New connections are accepted but not connected to the server until release_new() (or silence(false)).
  void hold_new(bool on) { hold_.store(on); }
  /// Nothing is forwarded any more, in either direction, and new connections are accepted and left hanging.
  void silence(bool on) { silent_.store(on); }
  /// How many connections the proxy accepted so far.
  int accepted() const noexcept { return accepted_.load(); }
  /// Once the server has sent `bytes` more on the connections (counted from now), the connection that carries the
  /// byte past them is closed on both sides, in the middle of whatever answer it was carrying; then it counts no
  /// more (once).
  void cut_after(std::size_t bytes) {
    in_loop([&] { cut_left_ = bytes; });
  }
  /// How many connections cut_after() closed.
  int cuts() const noexcept { return cuts_.load(); }

 private:
  struct Conn {
    int client = -1;
    int server = -1;  // -1 while held
    bool stalled = false;
    std::string pending{};  // what the client sent while stalled
  };

  // Runs `f` on the proxy's thread (which owns the connections) and waits until it ran.
  void in_loop(std::function<void()> f) {
    int ticket = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      tasks_.push_back(std::move(f));
      ticket = ++queued_;
    }
    while (done_.load() < ticket) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }

  int connect_server() const {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<std::uint16_t>(target_port_));
    if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return fd;
    if (fd >= 0) ::close(fd);
    return -1;
  }

  static bool write_all(int fd, const char* p, std::size_t n) {
    while (n > 0) {
      const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return false;
      p += w;
      n -= static_cast<std::size_t>(w);
    }
    return true;
  }

  static void close_fd(int& fd) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }

  void loop() {
    std::vector<char> buf(65536);
    while (!stop_) {
      {
        std::vector<std::function<void()>> tasks;
        {
          std::lock_guard<std::mutex> lock(mu_);
          tasks.swap(tasks_);
        }
        for (auto& task : tasks) {
          task();
          done_.fetch_add(1);
        }
      }
      const bool silent = silent_.load();
      if (!silent && !hold_.load()) {
        for (auto& c : conns_) {
          if (c.server < 0 && c.client >= 0) {
            c.server = connect_server();
            if (c.server < 0) close_fd(c.client);
          }
        }
      }
      // Forget connections with nothing left open.
      std::vector<Conn> live;
      for (auto& c : conns_) {
        if (c.client >= 0 || c.server >= 0) live.push_back(c);
      }
      conns_.swap(live);

      std::vector<pollfd> fds;
      std::vector<std::pair<std::size_t, bool>> owner;  // (connection, is the client side)
      fds.push_back({listen_fd_, POLLIN, 0});
      owner.emplace_back(0, false);
      if (!silent) {
        for (std::size_t i = 0; i < conns_.size(); ++i) {
          if (conns_[i].server < 0) continue;
          if (conns_[i].client >= 0) {
            fds.push_back({conns_[i].client, POLLIN, 0});
            owner.emplace_back(i, true);
          }
          fds.push_back({conns_[i].server, POLLIN, 0});
          owner.emplace_back(i, false);
        }
      }
      if (::poll(fds.data(), fds.size(), 10) <= 0) continue;
      if (fds[0].revents & POLLIN) {
        const int fd = ::accept(listen_fd_, nullptr, nullptr);
        if (fd >= 0) {
          Conn c;
          c.client = fd;
          conns_.push_back(std::move(c));
          ++accepted_;
        }
      }
      for (std::size_t k = 1; k < fds.size(); ++k) {
        if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        Conn& c = conns_[owner[k].first];
        const bool from_client = owner[k].second;
        int& from = from_client ? c.client : c.server;
        int& to = from_client ? c.server : c.client;
        if (from < 0) continue;
        const ssize_t n = ::recv(from, buf.data(), buf.size(), 0);
        if (n <= 0) {
          if (from_client && c.stalled) {
            close_fd(c.client);  // the server side waits for release_stalled()
          } else {
            close_fd(c.client);
            close_fd(c.server);
          }
          continue;
        }
        if (from_client && c.stalled) {
          c.pending.append(buf.data(), static_cast<std::size_t>(n));
        } else if (!from_client && cut_left_ > 0 && static_cast<std::size_t>(n) >= cut_left_) {
          cut_left_ = 0;
          ++cuts_;
          close_fd(c.client);
          close_fd(c.server);
        } else if (to >= 0) {
          if (!from_client && cut_left_ > 0) cut_left_ -= static_cast<std::size_t>(n);
          if (!write_all(to, buf.data(), static_cast<std::size_t>(n))) close_fd(to);
        } else {
          dropped_ += static_cast<std::size_t>(n);
        }
      }
    }
  }

  int target_port_;
  int port_ = 0;
  int listen_fd_ = -1;
  std::vector<Conn> conns_;   // the loop thread's alone
  std::size_t cut_left_ = 0;  // the loop thread's alone: cut_after()'s bytes still to pass (0: none)
  std::atomic<bool> stop_{false};
  std::atomic<bool> hold_{false};
  std::atomic<bool> silent_{false};
  std::atomic<int> cuts_{0};
  std::atomic<std::size_t> dropped_{0};
  std::mutex mu_;
  std::vector<std::function<void()>> tasks_;
  int queued_ = 0;
  std::atomic<int> done_{0};
  std::atomic<int> accepted_{0};
  std::thread thread_;
};

}  // namespace store_test
