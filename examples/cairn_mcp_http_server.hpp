// The HTTP server under cairn-mcp --http: cpp-httplib's request parser, router and response writer, with the bounds
// that its 0.11 server (Debian libcpp-httplib-dev) lacks on slow, idle and many clients (docs/limits.md).
//
// cpp-httplib 0.11 serves each connection on a worker of a fixed pool from accept to close: an idle keep-alive
// connection, or one that sends nothing, holds a worker for the keep-alive timeout, so 32 of them stall every other
// client, and thousands queue for minutes; its read timeout is per read, so a client sending a byte every few seconds
// holds a worker forever; its listen backlog is 5 (compiled in), so a burst of new connections overflows the
// kernel's accept queue and a request can wait out the keep-alive timeout before it arrives (the "connection closed
// without a reply" the load test met); and it waits with select(), which cannot watch a descriptor above 1023.
//
// This server keeps the library's HTTP code and replaces what is around it, through the library's own extension
// points (the virtual process_and_close_socket and a Stream, as its SSLServer does, and new_task_queue):
// - accepted connections wait in one poll() thread, not in a worker, until a request's head (up to the blank line)
//   has arrived whole; only then does a worker (`threads` of them) read the body and serve the request;
// - a request must arrive whole (head and body) within `request_timeout` of its first byte, else 408 and closed;
//   a reply must be taken whole within `request_timeout` of its first byte, else the connection is closed;
// - a connection with no request in progress is closed after `idle_timeout` (the Keep-Alive header advertises half
//   of it, so a client that reuses a connection near the advertised end never meets the close);
// - at most `max_connections` are open; one more gets 503 and is closed at once; a head over `max_head_bytes` is 431;
// - the listen backlog is `backlog`, and every wait is poll(), for any descriptor number.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

namespace cairn_mcp {

struct ConnectionLimits {
  std::size_t threads = 32;                          ///< requests read (body) and served at once
  std::size_t max_connections = 1000;                ///< open at once; one more: 503 and closed
  std::size_t max_head_bytes = 64u << 10;            ///< request line and headers; more: 431 and closed
  std::chrono::milliseconds request_timeout{30000};  ///< from a request's first byte to its last; else 408, closed
  std::chrono::milliseconds idle_timeout{10000};     ///< no request in progress this long: closed
  std::chrono::milliseconds read_timeout{10000};     ///< silent this long mid-request: closed
  std::chrono::milliseconds write_timeout{10000};    ///< a reply not taken this long: closed
  int backlog = 1024;                                ///< the kernel's accept queue (capped by net.core.somaxconn)
};

class BoundedHttpServer : public httplib::Server {
 public:
  using Clock = std::chrono::steady_clock;

  explicit BoundedHttpServer(ConnectionLimits limits) : limits_(limits) {
    const auto advertised = std::chrono::duration_cast<std::chrono::seconds>(limits_.idle_timeout / 2).count();
    set_keep_alive_timeout(std::max<std::time_t>(1, static_cast<std::time_t>(advertised)));
    new_task_queue = [this] { return new Front(*this); };
  }

  /// Binds as httplib does, then widens the listen backlog (Debian's library compiles in 5).
  bool bind_to_port(const std::string& host, int port) {
    return httplib::Server::bind_to_port(host, port) && widen_backlog();
  }
  int bind_to_any_port(const std::string& host) {
    const int port = httplib::Server::bind_to_any_port(host);
    return port >= 0 && widen_backlog() ? port : -1;
  }

  /// Connections open now (waiting or being served).
  std::size_t connections() const { return open_.load(); }

  /// On the thread serving a request: whether its body did not arrive within the request timeout (httplib then
  /// answers 400; an error handler may make it 408). The connection is closed after the reply.
  static bool request_timed_out() { return timed_out(); }

 private:
  // One accepted connection; owned by the poll thread while it waits, by a worker while it is served. Closed when
  // the last owner lets go.
  struct Connection {
    Connection(int descriptor, std::atomic<std::size_t>& open) : fd(descriptor), open_count(open) {}
    ~Connection() {
      ::shutdown(fd, SHUT_RDWR);
      ::close(fd);
      --open_count;
    }
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    std::size_t unread() const { return in.size() - off; }
    // Whether a whole request head (up to the blank line) is buffered.
    bool head_complete() {
      const auto from = std::max(off, scanned < 3 ? std::size_t{0} : scanned - 3);
      const bool found = in.find("\r\n\r\n", from) != std::string::npos;
      scanned = in.size();
      return found;
    }
    void compact() {
      if (off == 0) return;
      in.erase(0, off);
      scanned = scanned > off ? scanned - off : 0;
      off = 0;
    }

    int fd;
    std::atomic<std::size_t>& open_count;
    std::string in;  // bytes read and not yet taken by the parser, from `off`
    std::size_t off = 0;
    std::size_t scanned = 0;     // `in` is searched for the end of the head up to here
    bool in_request = false;     // a request's first byte has arrived
    Clock::time_point deadline;  // in a request: when it must be whole; else: when the idle connection is closed
    std::size_t served = 0;
  };
  using ConnectionPtr = std::shared_ptr<Connection>;

  static bool& timed_out() {
    thread_local bool flag = false;
    return flag;
  }

  // Waits up to `limit` (and never past `deadline`) for `events` on fd; false on timeout or error.
  static bool wait_for(int fd, short events, std::chrono::milliseconds limit, Clock::time_point deadline) {
    for (;;) {
      const auto now = Clock::now();
      const auto left = std::min(limit, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now));
      if (left.count() < 0) return false;
      pollfd p{fd, events, 0};
      const int n = ::poll(&p, 1, static_cast<int>(left.count()));
      if (n < 0 && errno == EINTR) continue;
      return n > 0;
    }
  }

  // Reads what is there (up to 64 KiB) into the connection's buffer: bytes read, 0 at end of stream, -1 when none
  // are ready or on error (errno tells).
  // (Read through a buffer of the thread's, so that a connection holds only the bytes it has been sent.)
  static ssize_t receive(Connection& c) {
    thread_local std::vector<char> scratch(64u << 10);
    ssize_t n;
    do {
      n = ::recv(c.fd, scratch.data(), scratch.size(), MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    if (n > 0) {
      c.compact();
      c.in.append(scratch.data(), static_cast<std::size_t>(n));
    }
    return n;
  }

  // The request as httplib's parser reads it: the connection's buffer first, then the socket, never past the
  // request's deadline.
  class ConnectionStream : public httplib::Stream {
   public:
    ConnectionStream(Connection& c, const ConnectionLimits& limits) : c_(c), limits_(limits) {}

    bool is_readable() const override {
      return c_.unread() > 0 || wait_for(c_.fd, POLLIN, limits_.read_timeout, c_.deadline);
    }
    // A reply must be taken whole within request_timeout of its first byte, and no write may wait past
    // write_timeout: a client that reads slowly or not at all frees its worker at the latest then.
    bool is_writable() const override {
      if (reply_deadline_ == Clock::time_point{}) reply_deadline_ = Clock::now() + limits_.request_timeout;
      return wait_for(c_.fd, POLLOUT, limits_.write_timeout, reply_deadline_);
    }
    ssize_t read(char* ptr, std::size_t size) override {
      while (c_.unread() == 0) {
        if (!wait_for(c_.fd, POLLIN, limits_.read_timeout, c_.deadline)) {
          timed_out() = true;  // silent past the read timeout, or past the request's deadline
          return -1;
        }
        const auto n = receive(c_);
        if (n == 0) return 0;
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return -1;
      }
      const auto n = std::min(size, c_.unread());
      std::memcpy(ptr, c_.in.data() + c_.off, n);
      c_.off += n;
      return static_cast<ssize_t>(n);
    }
    // All of it or -1 (httplib writes a reply's head with one call and does not look at the count).
    ssize_t write(const char* ptr, std::size_t size) override {
      std::size_t sent = 0;
      while (sent < size) {
        if (!is_writable()) {
          timed_out() = true;
          return -1;
        }
        const auto n = ::send(c_.fd, ptr + sent, size - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
        if (n < 0) return -1;
        sent += static_cast<std::size_t>(n);
      }
      return static_cast<ssize_t>(size);
    }
    void get_remote_ip_and_port(std::string& ip, int& port) const override { address(::getpeername, ip, port); }
    void get_local_ip_and_port(std::string& ip, int& port) const override { address(::getsockname, ip, port); }
    // httplib 0.11 built without CPPHTTPLIB_USE_POLL (as Debian's is) answers 500 to a socket above FD_SETSIZE,
    // since it would select() on it; this stream never does, so it reports a number under the limit.
    socket_t socket() const override { return c_.fd < FD_SETSIZE ? c_.fd : 0; }

   private:
    template <class Get>
    void address(Get get, std::string& ip, int& port) const {
      sockaddr_storage addr{};
      socklen_t len = sizeof(addr);
      ip.clear();
      port = 0;
      if (get(c_.fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return;
      char text[INET6_ADDRSTRLEN] = {};
      if (addr.ss_family == AF_INET) {
        const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
        ::inet_ntop(AF_INET, &a->sin_addr, text, sizeof(text));
        port = ntohs(a->sin_port);
      } else if (addr.ss_family == AF_INET6) {
        const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
        ::inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof(text));
        port = ntohs(a->sin6_port);
      }
      ip = text;
    }

    Connection& c_;
    const ConnectionLimits& limits_;
    mutable Clock::time_point reply_deadline_{};
  };

  // httplib's acceptor hands each accepted socket to the task queue; this one registers it at once (on the
  // acceptor's thread: no worker is taken), and owns the poll thread and the workers.
  class Front : public httplib::TaskQueue {
   public:
    explicit Front(BoundedHttpServer& server) : server_(server) { server_.start(); }
    void enqueue(std::function<void()> fn) override { fn(); }  // process_and_close_socket: registers the socket
    void shutdown() override { server_.finish(); }

   private:
    BoundedHttpServer& server_;
  };

  // A short reply written without waiting, then the connection closed (used where no worker serves it).
  static void refuse(int fd, int status, const char* reason, const std::string& message) {
    const nlohmann::json body = {{"jsonrpc", "2.0"}, {"error", {{"code", -32600}, {"message", message}}}};
    const auto text = body.dump();
    std::string reply = "HTTP/1.1 " + std::to_string(status) + " " + reason +
                        "\r\nContent-Type: application/json\r\nConnection: close\r\n";
    if (status == 503) reply += "Retry-After: 1\r\n";
    reply += "Content-Length: " + std::to_string(text.size()) + "\r\n\r\n" + text;
    char sink[4096];  // what the client sent is read first, so that closing does not reset the reply away
    for (int i = 0; i < 16 && ::recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0; ++i) {
    }
    (void)::send(fd, reply.data(), reply.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  }

  bool widen_backlog() { return ::listen(svr_sock_, limits_.backlog) == 0; }

  // A request held in memory, its reply discarded (warm_up).
  class MemoryStream : public httplib::Stream {
   public:
    explicit MemoryStream(std::string in) : in_(std::move(in)) {}
    bool is_readable() const override { return off_ < in_.size(); }
    bool is_writable() const override { return true; }
    ssize_t read(char* ptr, std::size_t size) override {
      const auto n = std::min(size, in_.size() - off_);
      std::memcpy(ptr, in_.data() + off_, n);
      off_ += n;
      return static_cast<ssize_t>(n);
    }
    ssize_t write(const char*, std::size_t size) override { return static_cast<ssize_t>(size); }
    void get_remote_ip_and_port(std::string& ip, int& port) const override {
      ip.clear();
      port = 0;
    }
    void get_local_ip_and_port(std::string& ip, int& port) const override {
      ip.clear();
      port = 0;
    }
    socket_t socket() const override { return 0; }

   private:
    std::string in_;
    std::size_t off_ = 0;
  };

  // cpp-httplib builds a few tables and regexes in function-local statics on the first request that needs them (the
  // request methods, Range and multipart parsing). Built here, on one thread before any worker exists: the library
  // is not instrumented by ThreadSanitizer, which then cannot see that lazy initialisation synchronised and reports
  // the first concurrent requests as a data race (halting a sanitizer build). No handler is reached (404s).
  void warm_up() {
    const std::string part =
        "--b\r\nContent-Disposition: form-data; name=\"a\"\r\nContent-Type: text/plain\r\n\r\n"
        "x\r\n--b--\r\n";
    const std::string requests[] = {
        "GET /.warm-up HTTP/1.1\r\nHost: warm-up\r\nRange: bytes=0-1, 2-3\r\n\r\n",
        "POST /.warm-up HTTP/1.1\r\nHost: warm-up\r\nContent-Type: multipart/form-data; boundary=b\r\n"
        "Content-Length: " +
            std::to_string(part.size()) + "\r\n\r\n" + part,
    };
    for (const auto& request : requests) {
      MemoryStream stream(request);
      bool closed = false;
      (void)process_request(stream, true, closed, nullptr);
    }
  }

  void start() {
    warm_up();
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = false;
    if (::pipe(wake_) != 0) wake_[0] = wake_[1] = -1;  // without it the poll thread still looks every second
    for (const int fd : wake_) {
      if (fd >= 0) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);  // a full pipe has woken it already
    }
    workers_ = std::make_unique<httplib::ThreadPool>(limits_.threads);
    poller_ = std::thread([this] { poll_loop(); });
  }

  void finish() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake();
    if (poller_.joinable()) poller_.join();
    if (workers_) workers_->shutdown();  // requests being served end; their connections close
    std::lock_guard<std::mutex> lock(mutex_);
    incoming_.clear();
    workers_.reset();
    for (int& fd : wake_) {
      if (fd >= 0) ::close(fd);
      fd = -1;
    }
  }

  void wake() {
    if (wake_[1] >= 0) (void)!::write(wake_[1], "x", 1);
  }

  // Called by httplib's acceptor (through Front::enqueue) for each accepted socket.
  bool process_and_close_socket(socket_t sock) override {
    if (++open_ > limits_.max_connections) {
      refuse(sock, 503, "Service Unavailable",
             "too many connections (" + std::to_string(limits_.max_connections) + " open); try again later");
      const Connection closing(sock, open_);  // closes it and counts it out
      return false;
    }
    auto c = std::make_shared<Connection>(sock, open_);
    c->deadline = Clock::now() + limits_.idle_timeout;
    hand_to_poller(std::move(c));
    return true;
  }

  void hand_to_poller(ConnectionPtr c) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) return;  // dropped: closed
      incoming_.push_back(std::move(c));
    }
    wake();
  }

  // The waiting room: every connection with no request being served, until its request head is whole.
  void poll_loop() {
    std::vector<ConnectionPtr> waiting;
    std::vector<pollfd> fds;
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stopping_) break;
        for (auto& c : incoming_) waiting.push_back(std::move(c));
        incoming_.clear();
      }
      auto next = Clock::now() + std::chrono::seconds(1);
      fds.assign(1, pollfd{wake_[0], POLLIN, 0});
      for (const auto& c : waiting) {
        fds.push_back(pollfd{c->fd, POLLIN, 0});
        next = std::min(next, c->deadline);
      }
      const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()).count();
      const int n = ::poll(fds.data(), static_cast<nfds_t>(fds.size()), static_cast<int>(std::max<long>(0, wait)));
      if (n < 0 && errno != EINTR) {  // out of memory for the poll set, say: try again shortly
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        continue;
      }
      if (fds[0].revents & POLLIN) {
        char sink[256];
        while (::read(wake_[0], sink, sizeof(sink)) > 0) {
        }
      }
      const auto now = Clock::now();
      std::vector<ConnectionPtr> kept;
      kept.reserve(waiting.size());
      for (std::size_t i = 0; i < waiting.size(); ++i) {
        auto& c = waiting[i];
        if (n > 0 && (fds[i + 1].revents & (POLLIN | POLLHUP | POLLERR))) {
          const auto got = receive(*c);
          if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) continue;  // gone: closed
          if (got > 0 && !c->in_request) {
            c->in_request = true;
            c->deadline = now + limits_.request_timeout;
          }
          if (c->head_complete()) {
            workers_->enqueue([this, c] { serve(c); });
            continue;
          }
          if (c->unread() > limits_.max_head_bytes) {
            refuse(c->fd, 431, "Request Header Fields Too Large",
                   "the request line and headers are longer than " + std::to_string(limits_.max_head_bytes) + " bytes");
            continue;
          }
        }
        if (now >= c->deadline) {
          if (c->in_request) {
            refuse(c->fd, 408, "Request Timeout",
                   "the request did not arrive whole within " + std::to_string(limits_.request_timeout.count()) +
                       " ms of its first byte");
          }
          continue;  // an idle connection is closed without a word, as HTTP/1.1 allows
        }
        kept.push_back(std::move(c));
      }
      waiting.swap(kept);
    }
  }

  // On a worker: reads the body and serves the request whose head is buffered, and any whole ones behind it.
  void serve(const ConnectionPtr& c) {
    for (;;) {
      ConnectionStream stream(*c, limits_);
      const bool last = ++c->served >= keep_alive_max_count_;
      bool closed = false;
      timed_out() = false;
      const bool ok = process_request(stream, last, closed, nullptr);
      if (!ok || closed || last || timed_out()) return;  // closed
      c->compact();
      if (c->in.empty()) std::string().swap(c->in);  // an idle connection holds no buffer
      c->scanned = 0;
      c->in_request = c->unread() > 0;
      const auto now = Clock::now();
      c->deadline = now + (c->in_request ? limits_.request_timeout : limits_.idle_timeout);
      if (c->in_request && c->head_complete()) continue;  // pipelined
      hand_to_poller(c);
      return;
    }
  }

  ConnectionLimits limits_;
  std::atomic<std::size_t> open_{0};
  std::mutex mutex_;
  bool stopping_ = false;
  std::vector<ConnectionPtr> incoming_;
  std::unique_ptr<httplib::ThreadPool> workers_;
  std::thread poller_;
  int wake_[2] = {-1, -1};
};

}  // namespace cairn_mcp
