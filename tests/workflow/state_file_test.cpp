#include "cairn/workflow/state_file.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "workspace.hpp"

using namespace cairn;
using cairn_test::ContainsSubstring;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void spit(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

WorkflowTemplate long_ralph() {
  return WorkflowTemplate::parse(
      R"({"name": "long", "steps": [{"id": "r", "type": "ralph", "n": 10000, "instructions": "Again."}]})");
}

std::string load_error(const StateFile& f) {
  try {
    f.load();
  } catch (const state_error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("a missing state file means not started") {
  cairn_test::TempWorkspace ws;
  StateFile file(ws.path());
  CHECK(file.path() == ws.path() / "workflow-state.json");
  CHECK_FALSE(file.load());
  CHECK_THROWS_AS(file.update([](WorkflowMachine&) {}), state_error);
  CHECK_THROWS_WITH(file.update([](WorkflowMachine&) {}), ContainsSubstring("the workflow is not started"));
  CHECK_FALSE(file.read([](const WorkflowMachine& m) { return m.status(); }));
  CHECK_FALSE(fs::exists(file.path()));
}

TEST_CASE("start saves, update is load-modify-save, and the saved file holds the template and the state") {
  cairn_test::TempWorkspace ws;
  StateFile file(ws.path());
  auto s = file.start(cairn_test::feature_template(), "Add export");
  CHECK(s.step == "plan");
  REQUIRE(fs::exists(file.path()));
  const json saved = json::parse(slurp(file.path()));
  CHECK(saved.at("template") == cairn_test::feature_template().to_json());
  CHECK(saved.at("format_version") == 1);
  CHECK(saved.at("summary") == "Add export");
  CHECK(saved.at("artefacts") == json::array());

  s = file.update([](WorkflowMachine& m) { return m.advance("plan done"); });
  CHECK(s.step == "define_tasks");
  auto loaded = file.load();
  REQUIRE(loaded);
  CHECK(loaded->context().at("plan") == "plan done");
  CHECK(loaded->status().step == "define_tasks");
  CHECK(loaded->workspace_root() == ws.path());
  // No temp file is left behind.
  CHECK_FALSE(fs::exists(ws.path() / "workflow-state.json.tmp"));
}

TEST_CASE("start on a started workspace resumes with the template it was started with") {
  cairn_test::TempWorkspace ws;
  StateFile file(ws.path());
  file.start(cairn_test::feature_template());
  file.update([](WorkflowMachine& m) { m.advance("p"); });
  const auto other = WorkflowTemplate::parse(
      R"({"name": "other", "steps": [{"id": "x", "type": "action", "instructions": "X"}]})");
  auto s = file.start(other, "ignored");
  CHECK(s.step == "define_tasks");
  CHECK_FALSE(s.summary);
  CHECK(file.load()->workflow_template().name() == "feature");
}

TEST_CASE("update saves nothing when the change throws") {
  cairn_test::TempWorkspace ws;
  StateFile file(ws.path());
  file.start(cairn_test::feature_template());
  const std::string before = slurp(file.path());
  CHECK_THROWS_AS(file.update([](WorkflowMachine& m) {
    m.advance("half");
    return m.set_tasks("plan", {});
  }), invalid_argument);
  CHECK(slurp(file.path()) == before);
}

TEST_CASE("a corrupt state file is a clear error and is left as it is") {
  cairn_test::TempWorkspace ws;
  StateFile file(ws.path());
  file.start(cairn_test::feature_template());
  const json good = json::parse(slurp(file.path()));
  const std::string where = "workflow state file '" + file.path().string() + "'";

  spit(file.path(), "{\"status\": \"running\", \"step\"");
  CHECK_THAT(load_error(file), ContainsSubstring(where + ": invalid JSON"));
  CHECK_THAT(load_error(file), ContainsSubstring("the file is corrupt; it was left as it is"));
  CHECK_THROWS_AS(file.update([](WorkflowMachine& m) { m.advance("x"); }), state_error);
  CHECK(slurp(file.path()) == "{\"status\": \"running\", \"step\"");
  // start does not silently reset a corrupt workflow either.
  CHECK_THROWS_AS(file.start(cairn_test::feature_template()), state_error);
  CHECK(slurp(file.path()) == "{\"status\": \"running\", \"step\"");

  spit(file.path(), "");
  CHECK_THAT(load_error(file), ContainsSubstring("invalid JSON"));
  spit(file.path(), "[1, 2]");
  CHECK(load_error(file) == where + ": must be a JSON object");

  auto with = [&](const std::function<void(json&)>& edit) {
    json k = good;
    edit(k);
    spit(file.path(), k.dump());
    return load_error(file);
  };
  CHECK(with([](json& k) { k["step"] = 3; }) == where + ": step must be a string");
  CHECK(with([](json& k) { k.erase("status"); }) == where + ": status is missing");
  CHECK(with([](json& k) { k["status"] = "paused"; }) == where + ": status must be one of running, complete, failed");
  CHECK(with([](json& k) { k["outputs"] = {{"plan", 1}}; }) == where + ": outputs.plan must be a string");
  CHECK(with([](json& k) { k["artefacts"] = {1}; }) == where + ": artefacts[0] must be a string");
  CHECK(with([](json& k) { k["tasks"] = {{"implement", {{{"id", "a"}, {"title", "A"}, {"status", "odd"}}}}}; }) ==
        where + ": tasks.implement[0].status must be one of pending, in_progress, done, failed, blocked");
  CHECK(with([](json& k) { k["attempt"] = 0; }) == where + ": attempt must be an integer of at least 1");
  CHECK(with([](json& k) { k["format_version"] = 2; }) ==
        where + ": format_version 2 is not supported (this cairn reads 1)");
  CHECK_THAT(with([](json& k) { k["template"]["steps"][0]["type"] = "dance"; }),
             ContainsSubstring(where + ": template: steps[0].type must be one of action, loop, ralph"));

  std::string deep(5000, '[');
  spit(file.path(), deep);
  CHECK_THAT(load_error(file), ContainsSubstring("nesting is deeper than the limit"));
  JsonLimits tiny;
  tiny.max_bytes = 100;
  spit(file.path(), good.dump());
  StateFile small(ws.path(), StateFile::default_name, tiny);
  CHECK_THAT(load_error(small), ContainsSubstring("more than the limit of 100 bytes"));
}

TEST_CASE("a state without artefacts (written before they existed) loads with an empty list") {
  cairn_test::TempWorkspace ws;
  StateFile file(ws.path());
  file.start(cairn_test::feature_template());
  json j = json::parse(slurp(file.path()));
  j.erase("artefacts");
  j.erase("format_version");
  spit(file.path(), j.dump());
  auto m = file.load();
  REQUIRE(m);
  CHECK(m->state().artefacts.empty());
  ws.write("a.txt");
  auto r = file.update([](WorkflowMachine& mm) { return mm.register_artefacts({"a.txt"}); });
  CHECK(r.registered.size() == 1);
  CHECK(file.load()->state().artefacts.size() == 1);
}

TEST_CASE("output text that is not valid UTF-8 is saved with replacement characters, not lost") {
  cairn_test::TempWorkspace ws;
  StateFile file(ws.path());
  file.start(cairn_test::feature_template());
  file.update([](WorkflowMachine& m) { m.advance("bad \xff byte"); });
  CHECK(file.load()->context().at("plan") == "bad \xef\xbf\xbd byte");
}

TEST_CASE("saving into a workspace that does not exist is a storage error") {
  cairn_test::TempWorkspace ws;
  StateFile file(ws.path() / "missing");
  CHECK_THROWS_AS(file.start(cairn_test::feature_template()), storage_error);
  WorkflowMachine m(cairn_test::feature_template(), ws.path() / "missing");
  CHECK_THROWS_AS(file.save(m), storage_error);
}

TEST_CASE("save writes a whole machine and refuses one that is not started") {
  cairn_test::TempWorkspace ws;
  StateFile file(ws.path());
  WorkflowMachine m(cairn_test::feature_template(), ws.path());
  CHECK_THROWS_AS(file.save(m), state_error);
  CHECK_FALSE(fs::exists(file.path()));
  m.start();
  m.advance("p");
  file.save(m);
  CHECK(file.load()->state() == m.state());
}

// A child process saves over and over and reports each save that returned through a pipe; the parent kills it
// with SIGKILL at a random moment, then checks the file: it must load, and hold every reported change.
TEST_CASE("a writer killed with SIGKILL at random moments loses no save that returned") {
  cairn_test::TempWorkspace ws;
  StateFile file(ws.path());
  file.start(long_ralph());
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> pause_us(0, 60000);
  int confirmed = 0;
  int rounds = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while ((confirmed < 200 || rounds < 20) && std::chrono::steady_clock::now() < deadline) {
    ++rounds;
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::close(fds[0]);
      try {
        for (;;) {
          const int n = file.update([](WorkflowMachine& m) {
            const int it = *m.state().ralph_iteration;
            m.advance("out-" + std::to_string(it));
            return it;
          });
          if (::write(fds[1], &n, sizeof n) != static_cast<ssize_t>(sizeof n)) ::_exit(2);
        }
      } catch (...) {
        ::_exit(3);
      }
    }
    ::close(fds[1]);
    std::this_thread::sleep_for(std::chrono::microseconds(pause_us(rng)));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    REQUIRE(WIFSIGNALED(status));  // it was still saving, not dead of an error
    int n = 0;
    int last = confirmed;
    while (::read(fds[0], &n, sizeof n) == static_cast<ssize_t>(sizeof n)) last = n;
    ::close(fds[0]);

    std::optional<WorkflowMachine> m;
    REQUIRE_NOTHROW(m = file.load());
    REQUIRE(m);
    const auto& outputs = m->context();
    for (int i = 1; i <= last; ++i) {
      const auto it = outputs.find("r." + std::to_string(i));
      REQUIRE(it != outputs.end());
      REQUIRE(it->second == "out-" + std::to_string(i));
    }
    // At most one save finished after the last report (killed before it could report).
    CHECK(outputs.size() >= static_cast<std::size_t>(last));
    CHECK(outputs.size() <= static_cast<std::size_t>(last) + 1);
    confirmed = static_cast<int>(outputs.size());
  }
  INFO("rounds " << rounds << ", saves " << confirmed);
  CHECK(rounds >= 20);
  CHECK(confirmed >= 200);
}

// Two processes register artefacts (one update per file) into the same workflow at the same time, while a third
// advances it: every registration and every output must be in the final state.
TEST_CASE("processes updating the same workflow at once lose nothing") {
  cairn_test::TempWorkspace ws;
  StateFile file(ws.path());
  file.start(long_ralph());
  constexpr int per_child = 50;
  for (int c = 0; c < 2; ++c) {
    for (int i = 0; i < per_child; ++i) ws.write("out/c" + std::to_string(c) + "-" + std::to_string(i) + ".txt");
  }
  int go[2];
  REQUIRE(::pipe(go) == 0);
  std::vector<pid_t> kids;
  for (int c = 0; c < 3; ++c) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::close(go[1]);
      char b;
      if (::read(go[0], &b, 1) != 0) ::_exit(4);  // wait until the parent closes the pipe: all start together
      try {
        for (int i = 0; i < per_child; ++i) {
          if (c < 2) {
            const auto r = file.update([&](WorkflowMachine& m) {
              return m.register_artefacts({"out/c" + std::to_string(c) + "-" + std::to_string(i) + ".txt"});
            });
            if (r.registered.size() != 1) ::_exit(5);
          } else {
            file.update([&](WorkflowMachine& m) { m.advance("x" + std::to_string(i)); });
          }
        }
      } catch (...) {
        ::_exit(3);
      }
      ::_exit(0);
    }
    kids.push_back(pid);
  }
  ::close(go[0]);
  ::close(go[1]);
  for (const pid_t pid : kids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  auto m = file.load();
  REQUIRE(m);
  CHECK(m->state().artefacts.size() == 2 * per_child);
  CHECK(m->context().size() == per_child);
  CHECK(m->state().ralph_iteration == std::optional<int>(per_child + 1));
  const std::string root = fs::canonical(ws.path()).string();
  for (int c = 0; c < 2; ++c) {
    for (int i = 0; i < per_child; ++i) {
      const auto p = root + "/out/c" + std::to_string(c) + "-" + std::to_string(i) + ".txt";
      CHECK(std::count(m->state().artefacts.begin(), m->state().artefacts.end(), p) == 1);
    }
  }
}

TEST_CASE("threads of one process updating the same workflow lose nothing") {
  cairn_test::TempWorkspace ws;
  StateFile file(ws.path());
  file.start(long_ralph());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&file] {
      for (int i = 0; i < 10; ++i) file.update([](WorkflowMachine& m) { m.advance("t"); });
    });
  }
  for (auto& t : threads) t.join();
  CHECK(file.load()->context().size() == 40);
}

TEST_CASE("mutated state files fail with cairn::state_error only, and are never rewritten by a load") {
  cairn_test::TempWorkspace ws;
  StateFile file(ws.path());
  file.start(cairn_test::feature_template(), "s");
  file.update([](WorkflowMachine& m) {
    m.set_tasks("implement", {{"a", "A", std::nullopt, {}, TaskStatus::pending},
                              {"b", "B", std::nullopt, {"a"}, TaskStatus::pending}});
    m.advance("p");
    m.advance("d");
  });
  const std::string base = slurp(file.path());
  std::mt19937 rng(99);
  int rejected = 0;
  for (int i = 0; i < 400; ++i) {
    std::string text = base;
    const std::size_t at = rng() % text.size();
    switch (rng() % 3) {
      case 0: text[at] = static_cast<char>(rng() % 256); break;
      case 1: text.erase(at, 1 + rng() % 16); break;
      default: text.resize(at); break;
    }
    spit(file.path(), text);
    std::optional<WorkflowMachine> m;
    try {
      m = file.load();
    } catch (const state_error&) {
      ++rejected;
    }
    REQUIRE(slurp(file.path()) == text);
    if (m) {
      // A state that loads is one the machine can work with.
      (void)nlohmann::json(m->status()).dump();
      (void)m->to_json().dump();
      try {
        m->advance("next");
        m->advance("next", StepResult::failed);
      } catch (const state_error&) {  // not running
      }
    }
  }
  CHECK(rejected > 100);
}
