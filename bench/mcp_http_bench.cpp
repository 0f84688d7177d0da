// The MCP load test (issue 35): 32 clients store and search artifacts for 60 s through two `cairn-mcp --http`
// processes on one PostgreSQL database (2026-07-28 requests, alternating between the processes), beside the same
// calls made in-process through mcp::ArtifactTools on the same database. The ratio is what HTTP and JSON-RPC cost.
// Each row reports p50/p99 latency of one call (counters) and checks, at the end, that every write is stored exactly
// once (`lost` and `doubled` must be 0; the row fails otherwise). Calls that fail count in `errors` (must be 0).
//
// Needs CAIRN_TEST_PG_CONNINFO (scripts/bench starts a server) and the cairn-mcp executable (CAIRN_MCP_EXE, built
// with cpp-httplib and libjwt). Traffic goes to 127.0.0.1 only.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>
#include <httplib.h>

#include <cairn/mcp/artifact_tools.hpp>
#include <cairn/store/open_store.hpp>

extern char** environ;

namespace {

const char* pg_conninfo() { return std::getenv("CAIRN_TEST_PG_CONNINFO"); }

// Per-call latencies of one row: each thread writes its own slot inside the timed loop (so all are written when the
// library's end-of-loop barrier lets thread 0 read them).
struct Latencies {
  std::vector<std::vector<double>> slots;
  void reset(int threads) { slots.assign(static_cast<std::size_t>(threads), {}); }
  double percentile(double p) const {
    std::vector<double> all;
    for (const auto& s : slots) all.insert(all.end(), s.begin(), s.end());
    if (all.empty()) return 0;
    std::sort(all.begin(), all.end());
    return all[std::min(all.size() - 1, static_cast<std::size_t>(p * static_cast<double>(all.size())))];
  }
};

// A cairn-mcp --http process on the database; stopped (SIGTERM) when destroyed.
class McpProcess {
 public:
  McpProcess(const std::string& conninfo, const std::string& tenant) {
    err_path_ = "/tmp/cairn-mcp-bench-" + std::to_string(getpid()) + "-" + std::to_string(count_++);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    std::vector<std::string> args = {CAIRN_MCP_EXE, "--http", "127.0.0.1:0",    "--store", "postgres:" + conninfo,
                                     "--tenant",    tenant,   "--http-threads", "64"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, CAIRN_MCP_EXE, &actions, nullptr, argv.data(), environ) != 0) pid_ = 0;
    posix_spawn_file_actions_destroy(&actions);
    for (int i = 0; i < 200 && pid_ && port_ == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      std::ifstream in(err_path_);
      std::stringstream text;
      text << in.rdbuf();
      const auto s = text.str();
      const auto at = s.find("on http://127.0.0.1:");
      if (at != std::string::npos) port_ = std::atoi(s.c_str() + at + 20);
    }
  }
  ~McpProcess() {
    if (pid_) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
    std::remove(err_path_.c_str());
  }
  int port() const { return port_; }

 private:
  static inline std::atomic<int> count_{0};
  pid_t pid_ = 0;
  int port_ = 0;
  std::string err_path_;
};

std::string tenant_name(const char* what) {
  return std::string("bench-") + what + "-" + std::to_string(getpid()) + "-" +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
}

// After a row: every store is in the tenant exactly once.
void check_writes(benchmark::State& state, const std::string& tenant, long stored, long errors) {
  auto store = cairn::open_store(std::string("postgres:") + pg_conninfo());
  long found = 0;
  long doubled = 0;
  cairn::ListQuery q;
  q.limit = cairn::ListQuery::max_limit;
  for (;;) {
    const auto page = store->list(tenant, q);
    for (const auto& r : page.items) {
      ++found;
      if (r->version() != 1) ++doubled;
    }
    if (!page.next_cursor) break;
    q.cursor = *page.next_cursor;
  }
  state.counters["stored"] = static_cast<double>(stored);
  state.counters["lost"] = static_cast<double>(stored - found);
  state.counters["doubled"] = static_cast<double>(doubled);
  state.counters["errors"] = static_cast<double>(errors);
  if (found != stored || doubled != 0 || errors != 0) {
    std::fprintf(stderr, "%s: stored %ld, found %ld, doubled %ld, errors %ld\n", tenant.c_str(), stored, found, doubled,
                 errors);
    state.SkipWithError("lost, doubled or failed writes");
  }
}

// In-process: the same two tool calls, through ArtifactTools on the same database.
void BM_McpInProcess(benchmark::State& state) {
  static std::unique_ptr<cairn::mcp::ArtifactTools> tools;
  static std::string tenant;
  static Latencies latencies;
  static std::atomic<long> stored{0};
  static std::atomic<long> errors{0};
  if (!pg_conninfo()) {
    state.SkipWithError("CAIRN_TEST_PG_CONNINFO is not set");
    return;
  }
  if (state.thread_index() == 0) {
    tenant = tenant_name("inproc");
    tools = std::make_unique<cairn::mcp::ArtifactTools>(cairn::open_store(std::string("postgres:") + pg_conninfo()),
                                                        tenant);
    latencies.reset(state.threads());
    stored = 0;
    errors = 0;
  }
  long n = 0;
  for (auto _ : state) {
    auto& mine = latencies.slots[static_cast<std::size_t>(state.thread_index())];
    const std::string id = "t" + std::to_string(state.thread_index()) + "-" + std::to_string(n++);
    auto t0 = std::chrono::steady_clock::now();
    auto r = tools->call("artifact_store", {{"id", id}, {"type", "data"}, {"title", "alpha " + id}, {"value", n}});
    auto t1 = std::chrono::steady_clock::now();
    if (r.at("isError") == true)
      ++errors;
    else
      ++stored;
    r = tools->call("search_artifacts", {{"query", "alpha"}, {"limit", 10}});
    auto t2 = std::chrono::steady_clock::now();
    if (r.at("isError") == true) ++errors;
    mine.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    mine.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
  }
  state.SetItemsProcessed(state.iterations() * 2);
  if (state.thread_index() == 0) {
    state.counters["p50_ms"] = latencies.percentile(0.50);
    state.counters["p99_ms"] = latencies.percentile(0.99);
    check_writes(state, tenant, stored, errors);
  }
}

// Over HTTP: two cairn-mcp processes, each thread with its own keep-alive connection to one of them.
void BM_McpHttp(benchmark::State& state) {
  static std::unique_ptr<McpProcess> a;
  static std::unique_ptr<McpProcess> b;
  static std::string tenant;
  static Latencies latencies;
  static std::atomic<long> stored{0};
  static std::atomic<long> errors{0};
  if (!pg_conninfo()) {
    state.SkipWithError("CAIRN_TEST_PG_CONNINFO is not set");
    return;
  }
  static std::atomic<int> port_a{0};
  static std::atomic<int> port_b{0};
  if (state.thread_index() == 0) {
    tenant = tenant_name("http");
    a = std::make_unique<McpProcess>(pg_conninfo(), tenant);
    b = std::make_unique<McpProcess>(pg_conninfo(), tenant);
    latencies.reset(state.threads());
    stored = 0;
    errors = 0;
    if (a->port() == 0 || b->port() == 0) {
      state.SkipWithError("cairn-mcp --http did not start");
      return;
    }
    port_a = a->port();
    port_b = b->port();
  }
  // Thread 0 starts the processes; the others wait for their ports (every thread of a row starts together).
  while (port_a == 0 || port_b == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  httplib::Client client("127.0.0.1", state.thread_index() % 2 == 0 ? port_a.load() : port_b.load());
  client.set_keep_alive(false);
  client.set_read_timeout(120, 0);  // a slow answer is a latency, not an error
  client.set_write_timeout(120, 0);
  const httplib::Headers headers = {{"Accept", "application/json, text/event-stream"},
                                    {"MCP-Protocol-Version", "2026-07-28"},
                                    {"Mcp-Method", "tools/call"}};
  const nlohmann::json meta = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                               {"io.modelcontextprotocol/clientCapabilities", nlohmann::json::object()}};
  const auto call = [&](const std::string& name, const nlohmann::json& args) {
    const nlohmann::json body = {{"jsonrpc", "2.0"},
                                 {"id", 1},
                                 {"method", "tools/call"},
                                 {"params", {{"name", name}, {"arguments", args}, {"_meta", meta}}}};
    auto h = headers;
    h.emplace("Mcp-Name", name);
    const auto res = client.Post("/mcp", h, body.dump(), "application/json");
    if (!res || res->status != 200) {
      const std::string why = res ? std::to_string(res->status) + " " + res->body : httplib::to_string(res.error());
      std::fprintf(stderr, "%s: %s\n", name.c_str(), why.c_str());
      return false;
    }
    const auto reply = nlohmann::json::parse(res->body, nullptr, false);
    return reply.is_object() && reply.contains("result") && reply["result"].value("isError", true) == false;
  };
  long n = 0;
  for (auto _ : state) {
    auto& mine = latencies.slots[static_cast<std::size_t>(state.thread_index())];
    const std::string id = "t" + std::to_string(state.thread_index()) + "-" + std::to_string(n++);
    auto t0 = std::chrono::steady_clock::now();
    if (call("artifact_store", {{"id", id}, {"type", "data"}, {"title", "alpha " + id}, {"value", n}}))
      ++stored;
    else
      ++errors;
    auto t1 = std::chrono::steady_clock::now();
    if (!call("search_artifacts", {{"query", "alpha"}, {"limit", 10}})) ++errors;
    auto t2 = std::chrono::steady_clock::now();
    mine.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    mine.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
  }
  state.SetItemsProcessed(state.iterations() * 2);
  if (state.thread_index() == 0) {
    state.counters["p50_ms"] = latencies.percentile(0.50);
    state.counters["p99_ms"] = latencies.percentile(0.99);
    check_writes(state, tenant, stored, errors);
    port_a = 0;
    port_b = 0;
    a.reset();
    b.reset();
  }
}

}  // namespace

BENCHMARK(BM_McpInProcess)->Threads(32)->UseRealTime()->MinTime(60.0);
BENCHMARK(BM_McpHttp)->Threads(32)->UseRealTime()->MinTime(60.0);
BENCHMARK_MAIN();
