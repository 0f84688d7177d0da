// The fleet test of durable runs: worker A (examples/durable_run in its own process) is killed with SIGKILL at a
// crash point of a scripted multi-tool run, worker B resumes the run in a new process. Over every crash point, again
// and again: no call whose finished entry was committed fires twice, no acknowledged entry is lost, and the final
// state equals an uninterrupted run's. On SQLite (processes on one machine) and on the PostgreSQL test server.
//
// CAIRN_KILL_ROUNDS sets the number of kills per backend (default 48: every crash point of the 6-step script
// 2.67 times); scripts/kill-test runs the full count.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cairn/detail/random.hpp"
#include "cairn/store/open_store.hpp"
#include "catch.hpp"

extern char** environ;

namespace {

constexpr int steps = 6;
constexpr int crash_points = steps * 3 + 0;  // per step: before the call, before the effect, after the effect

struct Outcome {
  int status = 0;
  std::string out;
};

std::string temp_path(const std::string& tag) {
  return "/tmp/cairn-kill-" + tag + "-" + cairn::detail::random_string(10, "abcdefghijklmnopqrstuvwxyz0123456789");
}

// Runs the durable_run worker with `args`, its stdout into a file; returns its wait status and what it printed.
Outcome spawn_worker(const std::vector<std::string>& args) {
  const std::string out_file = temp_path("out");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> all = {CAIRN_DURABLE_RUN_EXE};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  REQUIRE(rc == 0);
  Outcome o;
  REQUIRE(waitpid(pid, &o.status, 0) == pid);
  std::ifstream in(out_file);
  std::stringstream ss;
  ss << in.rdbuf();
  o.out = ss.str();
  std::remove(out_file.c_str());
  return o;
}

std::vector<std::string> lines_starting(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0) out.push_back(line.substr(prefix.size()));
  }
  return out;
}

void kill_and_resume(const std::string& url, int rounds) {
  auto journal = cairn::open_run_journal(url);
  const std::string tag = cairn::detail::random_string(8, "abcdefghijklmnopqrstuvwxyz");
  const auto straight = spawn_worker({url, "--worker", "straight-" + tag, "--steps", std::to_string(steps)});
  REQUIRE(WIFEXITED(straight.status));
  REQUIRE(WEXITSTATUS(straight.status) == 0);
  const auto expected = lines_starting(straight.out, "final ");
  REQUIRE(expected.size() == 1);

  int killed = 0, in_doubt = 0, fired_twice_after_finish = 0, lost = 0;
  for (int r = 0; r < rounds; ++r) {
    const int crash_at = 1 + r % crash_points;
    const std::string run = "kill-" + tag + "-" + std::to_string(r);
    const std::string effects = temp_path("effects");
    INFO("round " << r << " crash point " << crash_at);
    const auto a = spawn_worker({url, "--worker", run, "--crash-at", std::to_string(crash_at), "--steps",
                                 std::to_string(steps), "--effects", effects});
    REQUIRE(WIFSIGNALED(a.status));
    REQUIRE(WTERMSIG(a.status) == SIGKILL);
    ++killed;
    const auto b = spawn_worker({url, "--worker", run, "--steps", std::to_string(steps), "--effects", effects});
    INFO("worker B printed:\n" << b.out);
    REQUIRE(WIFEXITED(b.status));
    REQUIRE(WEXITSTATUS(b.status) == 0);
    CHECK(lines_starting(b.out, "final ") == expected);

    // How often each call really fired.
    std::map<std::string, int> fired;
    std::ifstream in(effects);
    for (std::string line; std::getline(in, line);) ++fired[line];
    std::remove(effects.c_str());
    const auto doubts = lines_starting(b.out, "in doubt: ");
    in_doubt += static_cast<int>(doubts.size());
    // Calls A finished (its finished entry committed and acknowledged): never fired again.
    const auto acknowledged = lines_starting(a.out, "step-");
    for (const auto& line : acknowledged) {  // "3 ran seq 17"
      const std::string call = "step-" + line.substr(0, line.find(' '));
      if (fired[call] != 1) ++fired_twice_after_finish;
      // The entry A was told is committed is in the journal, as that call's finished entry.
      const auto seq = std::stoull(line.substr(line.rfind(' ') + 1));
      const auto entries = journal->read("demo", run, seq, seq);
      if (entries.size() != 1 || entries[0].kind != "context.tool_finished" || entries[0].data.at("call") != call) {
        ++lost;
      }
    }
    for (int i = 1; i <= steps; ++i) {
      const std::string call = "step-" + std::to_string(i);
      const bool doubted = std::find(doubts.begin(), doubts.end(), call) != doubts.end();
      CHECK(fired[call] >= 1);
      CHECK(fired[call] <= (doubted ? 2 : 1));  // only a call in doubt may have fired before the kill and again
    }
    journal->remove("demo", run);
  }
  CHECK(killed == rounds);
  CHECK(fired_twice_after_finish == 0);
  CHECK(lost == 0);
  CHECK(in_doubt > 0);  // the crash points inside the tools leave calls in doubt, as they must
  journal->remove("demo", "straight-" + tag);
  WARN(url.substr(0, url.find(':')) << ": " << killed << " workers killed with SIGKILL and resumed; " << in_doubt
                                    << " calls in doubt, retried; 0 finished calls fired twice; 0 acknowledged "
                                       "entries lost");
}

int rounds() {
  const char* env = std::getenv("CAIRN_KILL_ROUNDS");
  return env ? std::atoi(env) : 48;
}

}  // namespace

TEST_CASE("durable runs on SQLite: workers killed with SIGKILL at every crash point resume without re-firing") {
  const std::string db = temp_path("db") + ".db";
  kill_and_resume("sqlite:" + db, rounds());
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((db + suffix).c_str());
}

#if defined(CAIRN_HAS_POSTGRES)
TEST_CASE("durable runs on PostgreSQL: workers killed with SIGKILL at every crash point resume without re-firing") {
  const char* conninfo = std::getenv("CAIRN_TEST_PG_CONNINFO");
  REQUIRE(conninfo != nullptr);  // scripts/test starts the server; without it this fails, never skips
  kill_and_resume(std::string("postgres:") + conninfo, rounds());
}
#endif
