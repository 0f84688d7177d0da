// The random-time fleet kill test of durable runs (docs/runs.md "The fleet test"). Where durable_kill_test.cpp
// crashes a worker at chosen crash points, this one kills workers (tests/run/fleet_worker.cpp, each a process of its
// own, every participant kind attached to one run, 14 tool calls of which 5 are not idempotent) with SIGKILL at a
// uniformly random moment (µs) within a full run's measured span, and resumes the run with new workers — each again
// killed at a random moment — until one completes it. Then, byte for byte with nothing stripped, it compares against
// an uninterrupted run: the whole final state of every participant (context, goal engine, workflow machine, the
// host's participant) and every version of every artifact of the run, as printed by the worker that completed the
// run and by a fresh worker that only reopens it; it checks that no effect of a non-idempotent tool is in the
// outside ledger twice and that the journal's seqs are 1..n. In split-brain mode two workers resume one run at once
// (a conflict makes a worker reopen the run and carry on); both must end with the run complete and the same state.
//
// On SQLite (a file) and PostgreSQL (CAIRN_TEST_PG_CONNINFO; skipped with a message when it is unset).
// CAIRN_FLEET_KILLS (default 10) sets the random-time kills and CAIRN_FLEET_SPLIT_ROUNDS (default 3) the split-brain
// rounds per backend; CAIRN_FLEET_SEED fixes the seed of the kill moments (printed on every run); CAIRN_FLEET_WORKER
// names another worker executable (default: this build's). The workers run with a call lease of 1000 ms
// (RunOptions::call_lease): a worker that finds a call claimed less than that ago waits, then reopens the run.
// scripts/kill-test runs 1,000 kills and 100 split-brain rounds per backend.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cairn/detail/random.hpp"
#include "cairn/store/open_store.hpp"
#include "catch.hpp"

extern char** environ;

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr std::size_t non_idempotent_calls = 5;
const char* const non_idempotent_tools[] = {"publish", "send-email", "train-booking-api", "deploy"};

std::string temp_path(const std::string& tag) {
  return "/tmp/cairn-fleet-" + tag + "-" + cairn::detail::random_string(10, "abcdefghijklmnopqrstuvwxyz0123456789");
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::size_t env_count(const char* name, std::size_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? static_cast<std::size_t>(std::stoull(v)) : fallback;
}

// A worker process: its stdout and stderr go to files.
struct Worker {
  pid_t pid = 0;
  std::string out_file, err_file;
  Clock::time_point started;
  int status = 0;
  bool killed = false;

  void spawn(const std::vector<std::string>& args) {
    out_file = temp_path("out");
    err_file = temp_path("err");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const char* exe = std::getenv("CAIRN_FLEET_WORKER");  // another build's worker (default: this build's)
    std::vector<std::string> all = {exe && *exe ? exe : CAIRN_FLEET_WORKER_EXE};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    started = Clock::now();
    const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    REQUIRE(rc == 0);
  }
  // Kills the worker with SIGKILL `after` its start unless it ended before; then reaps it.
  void kill_at(std::chrono::microseconds after) {
    const auto deadline = started + after;
    for (;;) {
      const pid_t r = waitpid(pid, &status, WNOHANG);
      if (r < 0) FAIL("waitpid failed");
      if (r == pid) return;  // ended by itself first
      const auto now = Clock::now();
      if (now >= deadline) break;
      const auto left = deadline - now;
      std::this_thread::sleep_for(std::min<Clock::duration>(left, std::chrono::microseconds(200)));
    }
    ::kill(pid, SIGKILL);
    REQUIRE(waitpid(pid, &status, 0) == pid);
    killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
  }
  void wait() { REQUIRE(waitpid(pid, &status, 0) == pid); }
  bool completed() const { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }
  std::string final_state() const {
    const std::string out = read_file(out_file);
    const auto at = out.find("final ");
    if (at == std::string::npos) return {};
    return out.substr(at + 6, out.find('\n', at) - at - 6);
  }
  std::string errors() const { return read_file(err_file); }
  void clean() const {
    std::remove(out_file.c_str());
    std::remove(err_file.c_str());
  }
};

// Every UUID in `v` replaced by "<uuid>", arrays of records re-sorted: only for telling a difference of random ids
// from one of content in the report (the verdict compares the states as they are).
json blind_ids(json v) {
  // A scan for 8-4-4-4-12 lowercase hex digits (std::regex is far too slow for this in a -O0 build).
  const std::string text = v.dump();
  std::string blind;
  blind.reserve(text.size());
  auto is_uuid_at = [&text](std::size_t i) {
    static const int groups[] = {8, 4, 4, 4, 12};
    for (const int n : groups) {
      for (int k = 0; k < n; ++k, ++i) {
        if (i >= text.size() || !std::isxdigit(static_cast<unsigned char>(text[i])) || std::isupper(text[i]))
          return false;
      }
      if (n != 12 && (i >= text.size() || text[i++] != '-')) return false;
    }
    return true;
  };
  for (std::size_t i = 0; i < text.size();) {
    if (is_uuid_at(i)) {
      blind += "<uuid>";
      i += 36;
    } else {
      blind += text[i++];
    }
  }
  json out = json::parse(blind);
  if (out.contains("artifacts")) {
    std::vector<std::string> texts;
    for (const auto& a : out["artifacts"]) texts.push_back(a.dump());
    std::sort(texts.begin(), texts.end());
    out["artifacts"] = json::array();
    for (const auto& t : texts) out["artifacts"].push_back(json::parse(t));
  }
  return out;
}

// How two final states differ, one phrase per participant (and the artifacts) that differs: "context: replace
// /bindings/3/first", or "goals: random ids only" when the participant's states are equal but for UUIDs. "" when the
// states are equal byte for byte.
std::string first_difference(const std::string& expected, const std::string& actual) {
  if (expected == actual) return {};
  const json e = json::parse(expected, nullptr, false), a = json::parse(actual, nullptr, false);
  if (e.is_discarded() || a.is_discarded()) return "not JSON";
  std::string out;
  for (const auto& [part, want] : e.items()) {
    const json got = a.contains(part) ? a.at(part) : json();
    if (want == got) continue;
    const json patch = json::diff(blind_ids(json{{part, want}}), blind_ids(json{{part, got}}));
    out += (out.empty() ? "" : "; ") + part + ": " +
           (patch.empty() ? std::string("random ids only")
                          : patch[0].at("op").get<std::string>() + " " + patch[0].at("path").get<std::string>() + " (" +
                                cairn::detail::excerpt(patch[0].dump(), 240) + ")");
  }
  return out.empty() ? "same value, other text" : out;
}

struct Tally {
  std::size_t kills = 0, runs = 0, workers = 0, worker_errors = 0, mismatches = 0, content_mismatches = 0,
              effects_twice = 0, gaps = 0, split_rounds = 0, runs_differing = 0;
  std::map<std::string, std::pair<std::size_t, std::string>> kinds;  // by kind: how often, the first example

  void note(const std::string& kind, const std::string& example) {
    auto& k = kinds[kind];
    if (k.first++ == 0) k.second = example;
  }
  std::string report(const std::string& backend) const {
    std::ostringstream o;
    o << backend << ": " << kills << " random-time kills over " << runs << " runs (" << workers << " workers), "
      << split_rounds << " split-brain rounds; runs whose final state differs: " << runs_differing << " of "
      << runs + split_rounds << "; final states that differ: " << mismatches << " of the workers' ("
      << content_mismatches << " beyond random ids); non-idempotent effect twice: " << effects_twice
      << "; worker errors: " << worker_errors << "; journal gaps: " << gaps;
    for (const auto& [kind, k] : kinds) o << "\n  " << k.first << " x " << kind << "\n      first: " << k.second;
    return o.str();
  }
};

class Fleet {
 public:
  Fleet(std::string url, std::string backend) : url_(std::move(url)), backend_(std::move(backend)) {
    const char* seed = std::getenv("CAIRN_FLEET_SEED");
    seed_ = seed && *seed ? std::stoull(seed) : std::random_device{}();
    rng_.seed(seed_);
    journal_ = cairn::open_run_journal(url_);
    store_ = cairn::open_store(url_);
  }
  ~Fleet() {
    try {
      clean();
    } catch (...) {
    }
  }

  // Two uninterrupted runs: the reference state (they must agree with each other) and the span of a full run.
  void measure() {
    std::vector<std::string> states;
    std::vector<std::chrono::microseconds> spans;
    for (int i = 0; i < 2; ++i) {
      const std::string run = new_run("straight");
      Worker w;
      w.spawn(worker_args(run));
      w.wait();
      spans.push_back(std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - w.started));
      INFO(w.errors());
      REQUIRE(w.completed());
      states.push_back(w.final_state());
      w.clean();
      check_ledger(run, "straight");
      check_journal(run);
    }
    expected_ = states[0];
    REQUIRE_FALSE(expected_.empty());
    const std::string straight_difference = first_difference(expected_, states[1]);
    INFO("two uninterrupted runs differ: " << straight_difference);
    CHECK(straight_difference.empty());
    span_ = (spans[0] + spans[1]) / 2;
    WARN(backend_ << ": a full run takes " << span_.count() << " us; seed " << seed_);
  }

  // Runs, each killed at random moments until a worker completes it, until `kills` workers were killed.
  void random_kills(std::size_t kills) {
    std::uniform_int_distribution<std::int64_t> moment(0, span_.count());
    while (tally_.kills < kills) {
      const std::string run = new_run("kill");
      ++tally_.runs;
      std::vector<std::int64_t> moments;
      bool done = false;
      for (int attempt = 0; attempt < 200 && !done; ++attempt) {
        Worker w;
        w.spawn(worker_args(run));
        ++tally_.workers;
        const std::int64_t at = attempt < 100 ? moment(rng_) : span_.count() * 1000;  // give up killing, at last
        w.kill_at(std::chrono::microseconds(at));
        if (w.killed) {
          ++tally_.kills;
          moments.push_back(at);
        } else if (w.completed()) {
          done = true;
          compare(run, w.final_state(), "completing worker", moments);
        } else {
          ++tally_.worker_errors;
          tally_.note("worker error: " + last_line(w.errors()), describe(run, moments));
          w.clean();
          // The run cannot go on; what it did so far is still checked.
          tally_.effects_twice += check_ledger(run, describe(run, moments));
          tally_.gaps += check_journal(run);
          break;
        }
        w.clean();
      }
      if (done) finish(run, moments);
    }
  }

  // One worker is killed at a random moment, then two resume the run at once (neither is killed).
  void split_brain(std::size_t rounds) {
    std::uniform_int_distribution<std::int64_t> moment(0, span_.count());
    for (std::size_t r = 0; r < rounds; ++r) {
      const std::string run = new_run("split");
      ++tally_.split_rounds;
      Worker first;
      first.spawn(worker_args(run));
      const std::int64_t at = moment(rng_);
      first.kill_at(std::chrono::microseconds(at));
      first.clean();
      if (first.killed) ++tally_.kills;
      std::vector<std::int64_t> moments = {at};
      Worker a, b;
      a.spawn(worker_args(run));
      b.spawn(worker_args(run));
      a.wait();
      b.wait();
      tally_.workers += 3;
      for (const Worker* w : {&a, &b}) {
        if (w->completed()) {
          compare(run, w->final_state(), "split-brain worker", moments);
        } else {
          ++tally_.worker_errors;
          tally_.note("split-brain worker error: " + last_line(w->errors()), describe(run, moments));
        }
        w->clean();
      }
      finish(run, moments);
    }
  }

  const Tally& tally() const { return tally_; }
  std::string report() const { return tally_.report(backend_) + "\n  seed " + std::to_string(seed_); }

 private:
  std::vector<std::string> worker_args(const std::string& run) const { return {url_, run, ledger(run)}; }
  static std::string ledger(const std::string& run) { return "/tmp/cairn-fleet-ledger-" + run; }

  // Every run of a backend has the same name (tenant and run id), so that everything derived from it — the ids the
  // host chooses, the ids cairn derives for a call's key and outputs — is the same in every run and in the
  // reference; one run at a time, and what the previous run left (its journal, its artifacts) is removed first.
  std::string new_run(const std::string& kind) {
    clean();
    run_differs_ = false;
    ++count_;
    kind_ = kind;
    return name_;
  }
  void clean() {
    try {
      journal_->remove(name_, name_);
    } catch (const cairn::not_found&) {
    }
    for (;;) {
      cairn::ListQuery q;
      q.limit = cairn::ListQuery::max_limit;
      const auto page = store_->list(name_, q);
      if (page.items.empty()) break;
      for (const auto& a : page.items) store_->remove(a->id(), name_);
    }
    std::remove(ledger(name_).c_str());
  }

  std::string describe(const std::string& run, const std::vector<std::int64_t>& moments) const {
    std::ostringstream o;
    o << backend_ << " " << kind_ << " run #" << count_ << " " << run << " (seed " << seed_ << ", " << moments.size()
      << " kills, at";
    for (const auto m : moments) o << ' ' << m << "us";
    o << " of a " << span_.count() << "us span)";
    return o.str();
  }

  // The last line a worker printed to stderr (its error; conflicts it recovered from come before it).
  static std::string last_line(std::string s) {
    while (!s.empty() && s.back() == '\n') s.pop_back();
    std::string line = s.substr(s.rfind('\n') == std::string::npos ? 0 : s.rfind('\n') + 1);
    // Drop the run's own name so that equal errors count as one kind.
    static const std::regex run_name("fleet-[a-z]{10}");
    return std::regex_replace(line, run_name, "<run>").substr(0, 200);
  }

  void compare(const std::string& run, const std::string& state, const char* who,
               const std::vector<std::int64_t>& moments) {
    const std::string difference = first_difference(expected_, state);
    if (!difference.empty()) {
      if (!run_differs_) ++tally_.runs_differing;
      run_differs_ = true;
      ++tally_.mismatches;
      if (difference.find(": replace") != std::string::npos || difference.find(": add") != std::string::npos ||
          difference.find(": remove") != std::string::npos) {
        ++tally_.content_mismatches;
      }
      tally_.note(std::string(who) + ": " + difference, describe(run, moments));
    }
  }

  // After a run completed: a fresh worker reopens it and must see the same state; the ledger and the journal.
  void finish(const std::string& run, const std::vector<std::int64_t>& moments) {
    Worker w;
    w.spawn(worker_args(run));
    w.wait();
    ++tally_.workers;
    if (w.completed()) {
      compare(run, w.final_state(), "reopened run", moments);
    } else {
      ++tally_.worker_errors;
      tally_.note("reopening worker error: " + last_line(w.errors()), describe(run, moments));
    }
    w.clean();
    tally_.effects_twice += check_ledger(run, describe(run, moments));
    tally_.gaps += check_journal(run);
  }

  // Non-idempotent effects in the ledger more than once; returns how many keys were.
  std::size_t check_ledger(const std::string& run, const std::string& where) {
    std::map<std::string, std::size_t> count;
    std::map<std::string, std::string> tool_of;
    std::ifstream in(ledger(run));
    std::size_t non_idempotent = 0;
    for (std::string line; std::getline(in, line);) {
      const auto tab = line.find('\t');
      const std::string tool = line.substr(tab + 1, line.find('\t', tab + 1) - tab - 1);
      bool idempotent = true;
      for (const char* t : non_idempotent_tools) idempotent = idempotent && tool != t;
      tool_of[line.substr(0, tab)] = tool;
      if (!idempotent && ++count[line.substr(0, tab)] == 1) ++non_idempotent;
    }
    in.close();
    std::remove(ledger(run).c_str());
    std::size_t twice = 0;
    for (const auto& [key, n] : count) {
      if (n > 1) {
        ++twice;
        tally_.note("effect twice: " + tool_of[key], where + ": key " + key + " " + std::to_string(n) + " times");
      }
    }
    if (non_idempotent != non_idempotent_calls && where == "straight") {
      FAIL("an uninterrupted run made " << non_idempotent << " non-idempotent effects, not " << non_idempotent_calls);
    }
    return twice;
  }

  // 1 when the journal's seqs are not 1..n.
  std::size_t check_journal(const std::string& run) {
    const auto entries = journal_->read(run, run);
    for (std::size_t i = 0; i < entries.size(); ++i) {
      if (entries[i].seq != i + 1) {
        tally_.note("journal gap", run + ": entry " + std::to_string(i) + " has seq " + std::to_string(entries[i].seq));
        return 1;
      }
    }
    return entries.empty() ? 1 : 0;
  }

  std::string url_, backend_;
  std::uint64_t seed_ = 0;
  std::mt19937_64 rng_;
  std::shared_ptr<cairn::RunJournal> journal_;
  std::string expected_;
  std::chrono::microseconds span_{0};
  std::shared_ptr<cairn::ArtifactStore> store_;  // to remove a run's artifacts before the next run
  const std::string name_ = "fleet-" + cairn::detail::random_string(10, "abcdefghijklmnopqrstuvwxyz");
  std::string kind_;
  std::size_t count_ = 0;
  bool run_differs_ = false;
  Tally tally_;
};

void fleet(const std::string& url, const std::string& backend) {
  Fleet f(url, backend);
  f.measure();
  f.random_kills(env_count("CAIRN_FLEET_KILLS", 10));
  f.split_brain(env_count("CAIRN_FLEET_SPLIT_ROUNDS", 3));
  WARN(f.report());
  const Tally& t = f.tally();
  CHECK(t.mismatches == 0);
  CHECK(t.effects_twice == 0);
  CHECK(t.worker_errors == 0);
  CHECK(t.gaps == 0);
}

}  // namespace

TEST_CASE("fleet on SQLite: workers killed at random moments resume to the uninterrupted run's exact state") {
  const std::string db = temp_path("db") + ".db";
  fleet("sqlite:" + db + "?synchronous=normal", "sqlite");  // a crash of the program, not of the machine
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((db + suffix).c_str());
}

#if defined(CAIRN_HAS_POSTGRES)
TEST_CASE("fleet on PostgreSQL: workers killed at random moments resume to the uninterrupted run's exact state") {
  const char* conninfo = std::getenv("CAIRN_TEST_PG_CONNINFO");
  if (conninfo == nullptr || *conninfo == '\0') {
    WARN("skipped: CAIRN_TEST_PG_CONNINFO is not set (scripts/postgres start prints it)");
    return;
  }
  fleet(std::string("postgres:") + conninfo, "postgres");
}
#endif
