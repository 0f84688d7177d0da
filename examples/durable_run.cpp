// durable_run — a run of several tools that is killed half-way and resumed in a new process without firing a
// finished tool again.
//
//   durable_run [store-url]                     the demo: a child process runs the steps and is killed with SIGKILL
//                                               half-way; a second child resumes the run and finishes it (default:
//                                               a new SQLite file in the temp folder)
//   durable_run <store-url> --worker RUN [--crash-at N] [--steps K] [--effects FILE]
//                                               one worker (the kill tests drive these): runs or resumes RUN and
//                                               kills itself with SIGKILL at crash point N (0: never)
//
// Every tool's effect is a line appended to the effects file (`<call id>`), so a test can count how often each
// call really fired. The tools are idempotent (their effect is keyed by the call), so a call left in doubt by a
// kill is retried; a call whose finished entry was committed is answered from the journal and never fires again.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include <cairn/cairn.hpp>
#include <cairn/run/run.hpp>
#include <cairn/store/open_store.hpp>

namespace {

using nlohmann::json;

struct Options {
  std::string url;  // default: a new SQLite file in the temp folder
  std::string run_id;
  std::string effects;
  int crash_at = 0;  // 0: never
  int steps = 6;
};

int crash_points_seen = 0;
Options opts;

// A crash point: the process dies here, with SIGKILL, when this is the one asked for.
void crash_point() {
  if (++crash_points_seen == opts.crash_at) {
    std::fflush(nullptr);
    ::raise(SIGKILL);
  }
}

void record_effect(const std::string& call_id) {
  if (opts.effects.empty()) return;
  const int fd = ::open(opts.effects.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot open the effects file");
  const std::string line = call_id + "\n";
  const bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  ::close(fd);
  if (!ok) throw std::runtime_error("cannot write the effects file");
}

// Four tools with an effect each: a crash point before it and one after it.
void add_tools(cairn::ToolRegistry& tools) {
  auto tool = [&](const char* name, std::function<json(const json&)> f) {
    cairn::Tool t{name, name, json{{"type", "object"}}, [f](const json& in) {
                    crash_point();  // the intended entry is committed, the effect has not happened
                    record_effect(in.at("call").get<std::string>());
                    crash_point();  // the effect happened, the finished entry is not committed
                    return cairn::ToolResult::ok(f(in));
                  }};
    t.idempotent = true;
    tools.add(std::move(t));
  };
  tool("fetch", [](const json& in) { return json("page of " + in.at("url").get<std::string>()); });
  tool("summarize", [](const json& in) { return json("summary of " + in.at("text").get<std::string>()); });
  tool("translate",
       [](const json& in) { return json(in.at("lang").get<std::string>() + ": " + in.at("text").get<std::string>()); });
  tool("publish", [](const json& in) { return json{{"published", in.at("text")}, {"where", "blog"}}; });
}

// Step i of the script: a tool call named "step-i" whose inputs refer to what earlier steps stored.
cairn::ToolCall step(int i) {
  const std::string id = "step-" + std::to_string(i);
  const std::string out = "out" + std::to_string(i);
  const std::string prev = "@out" + std::to_string(i - 1);
  cairn::ToolCall c;
  c.id = id;
  switch ((i - 1) % 4) {
    case 0:
      c.tool = "fetch";
      c.inputs = {{"url", "https://example.com/" + std::to_string(i)}};
      break;
    case 1:
      c.tool = "summarize";
      c.inputs = {{"text", prev}};
      break;
    case 2:
      c.tool = "translate";
      c.inputs = {{"text", prev}, {"lang", "fr"}};
      break;
    default:
      c.tool = "publish";
      c.inputs = {{"text", prev}};
      break;
  }
  c.inputs["call"] = id;
  c.outputs = {cairn::OutputSpec{out, cairn::ArtifactType::data, "output of " + id, ""}};
  return c;
}

// Runs (or resumes) the script; prints what happened to each call, and the final state without ids and times.
int worker() {
  auto store = cairn::open_store(opts.url);
  auto journal = cairn::open_run_journal(opts.url);
  cairn::ToolRegistry tools;
  add_tools(tools);
  cairn::Run run(journal, "demo", opts.run_id, cairn::RunOptions{7});
  cairn::ExecutionContext ctx(store, "demo");
  ctx.attach(run);
  for (const auto& doubt : ctx.in_doubt_calls()) std::cout << "in doubt: " << doubt.call_id << '\n';
  if (ctx.message_count() == 0) ctx.add_message(cairn::Role::user, "publish the pages");
  for (int i = 1; i <= opts.steps; ++i) {
    crash_point();  // between two calls
    const auto result = cairn::execute(step(i), ctx, tools);
    if (!result.success) throw std::runtime_error(result.call_id + " failed: " + result.error);
    std::cout << result.call_id << (result.replayed ? " replayed" : " ran") << " seq " << run.seq() << '\n';
  }
  json state = ctx.state();
  for (auto& b : state["bindings"]) {
    b.erase("id");
    b.erase("first");
    b.erase("write");
  }
  for (auto& m : state["messages"]) m.erase("timestamp");
  for (auto& [id, c] : state["calls"].items()) {
    for (auto& o : c["outputs"]) o.erase("id");
  }
  std::cout << "final " << state.dump() << '\n';
  return 0;
}

int demo() {
  opts.run_id = "demo-" + cairn::detail::random_string(8, "abcdefghijklmnopqrstuvwxyz0123456789");
  char effects[] = "/tmp/cairn-durable-run-XXXXXX";
  const int fd = ::mkstemp(effects);
  if (fd < 0) throw std::runtime_error("mkstemp failed");
  ::close(fd);
  opts.effects = effects;
  opts.steps = 6;
  std::string scratch_db;
  if (opts.url.empty()) {
    scratch_db = std::string(effects) + ".db";
    opts.url = "sqlite:" + scratch_db;
  }
  if (opts.url == "memory:") {
    std::cout << "durable_run: memory: keeps nothing across processes; give sqlite:<file> or postgres:<conninfo> to "
                 "see a run resumed in a new process. Running the steps once:\n";
    return worker();
  }
  auto in_child = [](int crash_at) {
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
      opts.crash_at = crash_at;
      int code = 1;
      try {
        code = worker();
      } catch (const std::exception& e) {
        std::cerr << "worker: " << e.what() << '\n';
      }
      std::fflush(nullptr);
      ::_exit(code);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return status;
  };
  std::cout << "process 1: runs the steps and is killed inside step 4's tool, after its effect\n";
  const int first = in_child(4 * 3);  // crash points: 3 per step; the 12th is just after step 4's effect
  std::cout << "process 1: " << (WIFSIGNALED(first) && WTERMSIG(first) == SIGKILL ? "killed by SIGKILL" : "ended?!")
            << "\nprocess 2: resumes the run\n";
  const int second = in_child(0);
  if (!WIFEXITED(second) || WEXITSTATUS(second) != 0) return 1;
  // Each call fired once, except step 4, which was in doubt (its effect happened, its result was not recorded)
  // and was retried because the tool is idempotent.
  std::FILE* f = std::fopen(effects, "r");
  std::vector<std::string> fired;
  char line[64];
  while (f && std::fgets(line, sizeof line, f)) fired.emplace_back(line, std::strcspn(line, "\n"));
  if (f) std::fclose(f);
  std::remove(effects);
  for (const char* suffix : {"", "-wal", "-shm"}) {
    if (!scratch_db.empty()) std::remove((scratch_db + suffix).c_str());
  }
  std::cout << "effects:";
  for (const auto& e : fired) std::cout << ' ' << e;
  std::cout << '\n';
  const bool once = fired.size() == 7 && fired[3] == "step-4" && fired[4] == "step-4";
  std::cout << (once ? "durable_run: resumed after SIGKILL; steps 1-3 never fired again, step 4 (in doubt) retried once"
                     : "durable_run: unexpected effects")
            << '\n';
  return once ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::vector<std::string> args(argv + 1, argv + argc);
    bool worker_mode = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
      auto value = [&]() -> std::string {
        if (i + 1 >= args.size()) throw std::invalid_argument(args[i] + " needs a value");
        return args[++i];
      };
      if (args[i] == "--worker") {
        worker_mode = true;
        opts.run_id = value();
      } else if (args[i] == "--crash-at") {
        opts.crash_at = std::stoi(value());
      } else if (args[i] == "--steps") {
        opts.steps = std::stoi(value());
      } else if (args[i] == "--effects") {
        opts.effects = value();
      } else if (i == 0 && args[i].rfind("--", 0) != 0) {
        opts.url = args[i];
      } else {
        throw std::invalid_argument("unknown argument '" + args[i] + "'");
      }
    }
    return worker_mode ? worker() : demo();
  } catch (const std::exception& e) {
    std::cerr << "durable_run: " << e.what() << '\n';
    return 2;
  }
}
