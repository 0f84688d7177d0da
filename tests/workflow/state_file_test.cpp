#include "cairn/workflow/state_file.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
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
  CHECK(std::distance(fs::directory_iterator(ws.path()), fs::directory_iterator()) == 2);  // the state and the lock
}

TEST_CASE("start on a started workspace resumes with the template it was started with") {
  cairn_test::TempWorkspace ws;
  StateFile file(ws.path());
  file.start(cairn_test::feature_template());
  file.update([](WorkflowMachine& m) { m.advance("p"); });
  const auto other =
      WorkflowTemplate::parse(R"({"name": "other", "steps": [{"id": "x", "type": "action", "instructions": "X"}]})");
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
  }),
                  invalid_argument);
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
  CHECK(with([](json& k) {
          k["tasks"] = {{"implement", {{{"id", "a"}, {"title", "A"}, {"status", "odd"}}}}};
        }) == where + ": tasks.implement[0].status must be one of pending, in_progress, done, failed, blocked");
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
  CHECK(m->state().artifacts.empty());
  ws.write("a.txt");
  auto r = file.update([](WorkflowMachine& mm) { return mm.register_artifacts({"a.txt"}); });
  CHECK(r.registered.size() == 1);
  CHECK(file.load()->state().artifacts.size() == 1);
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
              return m.register_artifacts({"out/c" + std::to_string(c) + "-" + std::to_string(i) + ".txt"});
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
  CHECK(m->state().artifacts.size() == 2 * per_child);
  CHECK(m->context().size() == per_child);
  CHECK(m->state().ralph_iteration == std::optional<int>(per_child + 1));
  const std::string root = fs::canonical(ws.path()).string();
  for (int c = 0; c < 2; ++c) {
    for (int i = 0; i < per_child; ++i) {
      const auto p = root + "/out/c" + std::to_string(c) + "-" + std::to_string(i) + ".txt";
      CHECK(std::count(m->state().artifacts.begin(), m->state().artifacts.end(), p) == 1);
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

// ---- issue 13: hostile files in the workspace ----------------------------------------------------------------------

namespace {

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const cairn::error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("a save never writes through a link planted at a temp name, and clears temps a killed writer left") {
  cairn_test::TempWorkspace ws;
  cairn_test::TempWorkspace outside;
  const auto victim = outside.write("victim.txt", "precious");
  StateFile file(ws.path());
  // The temp name of older versions, and the new pattern: links there must never be written through.
  fs::create_symlink(victim, ws.path() / "workflow-state.json.tmp");
  fs::create_symlink(victim, ws.path() / "workflow-state.json.tmp-0123456789abcdef");
  ws.write("workflow-state.json.tmp-fedcba9876543210", "left by a killed writer");
  ws.write("workflow-state.json.tmp-notours", "not a name cairn makes");
  file.start(cairn_test::feature_template());
  file.update([](WorkflowMachine& m) { m.advance("p"); });
  CHECK(slurp(victim) == "precious");
  CHECK(names_in(ws.path()) ==
        std::vector<std::string>{"workflow-state.json", "workflow-state.json.lock", "workflow-state.json.tmp-notours"});
  CHECK(file.load()->context().at("plan") == "p");
  CHECK(file.is_temp_name("workflow-state.json.tmp-0123456789abcdef"));
  CHECK_FALSE(file.is_temp_name("workflow-state.json.tmp-0123456789ABCDEF"));
  CHECK_FALSE(file.is_temp_name("workflow-state.json.tmp-0123"));
}

TEST_CASE("a lock file that is a symlink or not a regular file is refused, naming the path") {
  cairn_test::TempWorkspace ws;
  cairn_test::TempWorkspace outside;
  StateFile file(ws.path());
  const std::string lock = file.lock_path().string();

  SECTION("a dangling symlink creates nothing where it points") {
    fs::create_symlink(outside.path() / "created-by-cairn", file.lock_path());
    CHECK(error_of([&] { file.start(cairn_test::feature_template()); }) ==
          "lock file '" + lock +
              "' is a symbolic link, not a regular file; cairn neither follows nor uses it "
              "(remove it)");
    CHECK_FALSE(fs::exists(outside.path() / "created-by-cairn"));
    CHECK_FALSE(fs::exists(file.path()));
  }
  SECTION("a symlink to a regular file is not used either") {
    const auto target = outside.write("lock", "");
    fs::create_symlink(target, file.lock_path());
    CHECK_THROWS_AS(file.start(cairn_test::feature_template()), storage_error);
  }
  SECTION("a FIFO") {
    REQUIRE(::mkfifo(lock.c_str(), 0644) == 0);
    CHECK(error_of([&] { file.start(cairn_test::feature_template()); }) ==
          "lock file '" + lock + "' is a FIFO, not a regular file; cairn neither follows nor uses it (remove it)");
  }
}

TEST_CASE("a FIFO or a symlink at the state path is refused, never waited on or followed") {
  cairn_test::TempWorkspace ws;
  StateFile file(ws.path());
  const std::string where = "workflow state file '" + file.path().string() + "'";

  SECTION("a FIFO") {
    REQUIRE(::mkfifo(file.path().c_str(), 0644) == 0);
    CHECK(load_error(file) == where +
                                  " is a FIFO, not a regular file; cairn neither follows nor reads it (a "
                                  "symlinked state file is refused on purpose)");
    CHECK_THROWS_AS(file.start(cairn_test::feature_template()), state_error);
    CHECK_THROWS_AS(file.update([](WorkflowMachine& m) { m.advance("x"); }), state_error);
    CHECK(fs::is_fifo(file.path()));
  }
  SECTION("a symlink, even to a good state") {
    cairn_test::TempWorkspace other;
    StateFile elsewhere(other.path());
    elsewhere.start(cairn_test::feature_template());
    fs::create_symlink(elsewhere.path(), file.path());
    CHECK_THAT(load_error(file), ContainsSubstring(where + " is a symbolic link, not a regular file"));
    CHECK_THROWS_AS(file.start(cairn_test::feature_template()), state_error);
    CHECK(fs::is_symlink(file.path()));
  }
  SECTION("a folder") {
    fs::create_directories(file.path());
    CHECK_THAT(load_error(file), ContainsSubstring(where + " is a directory, not a regular file"));
  }
}

TEST_CASE("a change that would make the state larger or deeper than loading accepts is refused, and nothing is saved") {
  cairn_test::TempWorkspace ws;
  StateFile big(ws.path());
  big.start(cairn_test::feature_template());
  const std::string before = slurp(big.path());
  JsonLimits limits;
  limits.max_bytes = before.size() + 100;
  StateFile file(ws.path(), StateFile::default_name, limits);
  const std::string error =
      error_of([&] { file.update([](WorkflowMachine& m) { m.advance(std::string(200, 'x')); }); });
  CHECK_THAT(error, ContainsSubstring("saving workflow state file '" + file.path().string() + "': the new state is "));
  CHECK_THAT(error, ContainsSubstring("bytes, more than the limit of " + std::to_string(limits.max_bytes) +
                                      " bytes that loading accepts; nothing was saved"));
  CHECK_THROWS_AS(file.update([](WorkflowMachine& m) { m.advance(std::string(200, 'x')); }), limit_exceeded);
  CHECK(slurp(file.path()) == before);
  REQUIRE(file.load());
  file.update([](WorkflowMachine& m) { m.advance("short"); });  // a change that fits is saved
  CHECK(file.load()->context().at("plan") == "short");

  // Depth: host settings of an agent may nest.
  cairn_test::TempWorkspace ws2;
  json deep = json::parse(cairn_test::feature_template_json());
  json nested = 1;
  for (int i = 0; i < 10; ++i) nested = json::array({nested});
  deep["agents"]["coder"]["settings"] = nested;
  JsonLimits shallow;
  shallow.max_depth = 8;
  StateFile flat(ws2.path(), StateFile::default_name, shallow);
  CHECK_THROWS_WITH(flat.start(WorkflowTemplate::from_json(deep)),
                    ContainsSubstring("deeper than the limit of 8 levels that loading accepts; nothing was saved"));
  CHECK_FALSE(fs::exists(flat.path()));
}

#ifdef __linux__
namespace {

// True when /proc/locks lists a process blocked waiting for a lock on inode `ino` (lines "N: -> FLOCK ... d:d:ino").
bool someone_waits_on(ino_t ino) {
  std::ifstream in("/proc/locks");
  std::string line;
  const std::string tail = ":" + std::to_string(ino);
  while (std::getline(in, line)) {
    if (line.find("->") == std::string::npos) continue;
    std::istringstream fields(line);
    std::string f;
    while (fields >> f) {
      if (f.size() > tail.size() && f.compare(f.size() - tail.size(), tail.size(), tail) == 0) return true;
    }
  }
  return false;
}

}  // namespace

// Issue 13.6: A holds the lock; B opens the same lock file and waits; the lock file is deleted. When A is done, B
// must not carry on with a lock on a file nobody else can find (a third writer would lock a new file beside it).
TEST_CASE("a lock file deleted while held never gives two writers the lock at once") {
  if (!std::ifstream("/proc/locks")) {
    WARN("/proc/locks cannot be read here: the test cannot see when the second writer waits");
    return;
  }
  cairn_test::TempWorkspace ws;
  StateFile file(ws.path());
  file.start(long_ralph());
  std::mutex mu;
  std::condition_variable cv;
  bool a_inside = false;
  bool release_a = false;
  std::string a_error;
  std::thread a([&] {
    a_error = error_of([&] {
      file.update([&](WorkflowMachine& m) {
        std::unique_lock<std::mutex> lk(mu);
        a_inside = true;
        cv.notify_all();
        cv.wait(lk, [&] { return release_a; });
        m.advance("a");
      });
    });
  });
  {
    std::unique_lock<std::mutex> lk(mu);
    cv.wait(lk, [&] { return a_inside; });
  }
  struct stat st {};
  REQUIRE(::stat(file.lock_path().c_str(), &st) == 0);
  bool b_held_the_lock_at_the_path = false;
  std::thread b([&] {
    file.update([&](WorkflowMachine& m) {
      // Holding the lock means holding it on the file at the lock path: a newcomer cannot take it.
      const int fd = ::open(file.lock_path().c_str(), O_RDWR | O_CLOEXEC);
      b_held_the_lock_at_the_path = fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
      if (fd >= 0) ::close(fd);
      m.advance("b");
    });
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!someone_waits_on(st.st_ino) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const bool b_waited = someone_waits_on(st.st_ino);
  REQUIRE(::unlink(file.lock_path().c_str()) == 0);
  {
    std::lock_guard<std::mutex> lk(mu);
    release_a = true;
  }
  cv.notify_all();
  a.join();
  b.join();
  REQUIRE(b_waited);
  CHECK(b_held_the_lock_at_the_path);
  // A's lock file vanished under it: it cannot know it was alone, so it saved nothing and said so.
  CHECK_THAT(a_error, ContainsSubstring("was removed or replaced while this save held it"));
  const auto outputs = file.load()->context();
  CHECK(outputs == std::map<std::string, std::string>{{"r.1", "b"}});
}
#endif

namespace {
int failing_fsync(int) {
  errno = EIO;
  return -1;
}
}  // namespace

// Issue 13.7: once the rename put the new state in place the save has happened; a folder fsync failing after it must
// not be reported as a failed update (the caller would apply the same change again).
TEST_CASE("a folder fsync that fails after the rename is reported as such, not as a failed save") {
  cairn_test::TempWorkspace ws;
  StateFile file(ws.path());
  std::vector<std::string> told;
  file.on_sync_failure([&](const std::string& m) { told.push_back(m); });
  file.start(long_ralph());
  CHECK(told.empty());
  detail::workflow_io::folder_fsync_for_tests = failing_fsync;
  int it = 0;
  const std::string error = error_of([&] {
    it = file.update([](WorkflowMachine& m) {
      const int i = *m.state().ralph_iteration;
      m.advance("once");
      return i;
    });
  });
  detail::workflow_io::folder_fsync_for_tests = nullptr;
  CHECK(error == "no error");
  CHECK(it == 1);
  CHECK(file.load()->context() == std::map<std::string, std::string>{{"r.1", "once"}});
  REQUIRE(told.size() == 1);
  CHECK(told[0] == "saving workflow state file '" + file.path().string() +
                       "': the new state is in place, but fsync "
                       "of the folder '" +
                       ws.path().string() + "' failed: " + std::strerror(EIO) +
                       "; it is not sure to survive a power cut until the next save");
  file.update([](WorkflowMachine& m) { m.advance("twice"); });
  CHECK(told.size() == 1);
}

// Issue 13.8: one registration per file, across reloads, for a name that is not UTF-8.
TEST_CASE("a file name that is not valid UTF-8 is refused every time, and the state never holds an altered name") {
  cairn_test::TempWorkspace ws;
  ws.write("bad-\xff.txt");
  StateFile file(ws.path());
  file.start(cairn_test::feature_template());
  for (int i = 0; i < 2; ++i) {
    const auto r = file.update([](WorkflowMachine& m) { return m.register_artifacts({"bad-\xff.txt"}); });
    CHECK(r.registered.empty());
    CHECK(r.invalid == std::vector<std::string>{"bad-\xff.txt"});
  }
  CHECK(file.load()->state().artifacts.empty());
}

// Issue 13.9: through the StateFile, its own files (under whatever name it was given) are not outputs.
TEST_CASE("register_artefacts through a StateFile refuses that state file, its lock and its temps") {
  cairn_test::TempWorkspace ws;
  StateFile file(ws.path(), "wf.json");
  file.start(cairn_test::feature_template());
  ws.write("wf.json.tmp-0123456789abcdef", "{}");
  const auto r = file.update([](WorkflowMachine& m) {
    return m.register_artifacts({"wf.json", "wf.json.lock", "wf.json.tmp-0123456789abcdef"});
  });
  CHECK(r.registered.empty());
  CHECK(r.invalid.size() == 3);
  CHECK(file.load()->state().artifacts.empty());
}
