// A WorkflowMachine attached to a run: every change is one journal entry (a JSON Patch), a new machine resumes the
// run byte for byte at every sequence number, a lost append leaves the machine as it was, and RunWorkflowState lets
// several writers (threads with their own journal connections, on one SQLite file) serve one workflow.
#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cairn/run/memory_journal.hpp"
#include "cairn/run/run.hpp"
#include "cairn/workflow/machine.hpp"
#include "cairn/workflow/run_state.hpp"
#include "cairn/workflow/tools.hpp"
#include "catch.hpp"
#include "workspace.hpp"
#if CAIRN_TEST_WITH_SQLITE
#include "cairn/store/sqlite_journal.hpp"
#endif

using namespace cairn;
using nlohmann::json;

namespace {

// Drives the feature workflow from start to end, one change per call; `step(i)` is change number i.
struct Script {
  const cairn_test::TempWorkspace& ws;
  std::size_t size() const { return cairn_test::feature_steps; }
  void step(WorkflowMachine& m, std::size_t i) const { cairn_test::feature_step(m, i); }
};

}  // namespace

TEST_CASE("a machine attached to a run records each change as one patch and resumes byte for byte at every point") {
  cairn_test::TempWorkspace ws;
  ws.write("plan.md", "# plan");
  auto journal = std::make_shared<InMemoryRunJournal>();
  Script script{ws};
  std::vector<std::string> states;  // the machine's JSON after each change
  std::vector<std::uint64_t> seqs;
  {
    Run run(journal, "acme", "wf-1", RunOptions{4});  // snapshots every 4 entries: restores cross them
    WorkflowMachine m(cairn_test::feature_template(), ws.path());
    m.attach(run);
    CHECK(run.seq() == 1);  // the template, before start
    for (std::size_t i = 0; i < script.size(); ++i) {
      const auto before = run.seq();
      script.step(m, i);
      CHECK(run.seq() > before);
      states.push_back(m.to_json().dump());
      seqs.push_back(run.seq());
    }
    CHECK(m.status().status == WorkflowStatus::complete);
  }
  // Every entry after the first is a patch of what changed, not the whole state.
  const auto entries = journal->read("acme", "wf-1");
  std::size_t patches = 0;
  for (const auto& e : entries) {
    if (e.kind != "workflow.patch") continue;
    ++patches;
    CHECK(e.data.is_array());
    CHECK(e.data.dump().size() < states.back().size() / 2);
  }
  CHECK(patches == script.size());

  for (std::size_t i = 0; i < seqs.size(); ++i) {
    Run at(journal, "acme", "wf-1", RunAt{seqs[i]});
    auto resumed = WorkflowMachine::resume(at, ws.path());
    INFO("change " << i << " at seq " << seqs[i]);
    CHECK(resumed.to_json().dump() == states[i]);
  }
  // The newest point, opened as a live run, continues; the workspace root is the new process's.
  Run run(journal, "acme", "wf-1");
  auto m = WorkflowMachine::resume(run, ws.path());
  CHECK(m.workspace_root() == ws.path());
  CHECK(m.status().status == WorkflowStatus::complete);
  CHECK_THROWS_AS(m.advance("after the end"), state_error);
  CHECK(run.seq() == seqs.back());  // a refused change records nothing
}

TEST_CASE("a machine that loses the race to append is left as it was, and its observer hears nothing") {
  cairn_test::TempWorkspace ws;
  ws.write("a.txt");
  ws.write("b.txt");
  auto journal = std::make_shared<InMemoryRunJournal>();
  Run run_a(journal, "acme", "wf");
  WorkflowMachine a(cairn_test::feature_template(), ws.path());
  a.attach(run_a);
  a.start();

  Run run_b(journal, "acme", "wf");  // a second worker on the same run
  auto b = WorkflowMachine::resume(run_b, ws.path());
  std::vector<std::string> heard;
  b.set_artifact_observer([&](const ArtifactEvent& e) { heard.push_back(e.relative_path); });
  CHECK(b.to_json() == a.to_json());

  a.register_artifacts({"a.txt"});  // a moves the run on
  const json before = b.to_json();
  CHECK_THROWS_AS(b.register_artifacts({"b.txt"}), conflict);
  CHECK(b.to_json() == before);
  CHECK(heard.empty());
  CHECK_THROWS_AS(b.advance("stale"), conflict);
  CHECK(b.to_json() == before);

  // Re-reading the run gives b what a did; then b's change goes through and is heard once.
  Run fresh(journal, "acme", "wf");
  auto b2 = WorkflowMachine::resume(fresh, ws.path());
  b2.set_artifact_observer([&](const ArtifactEvent& e) { heard.push_back(e.relative_path); });
  const auto reg = b2.register_artifacts({"b.txt"});
  CHECK(reg.registered.size() == 1);
  CHECK(heard == std::vector<std::string>{"b.txt"});
  CHECK(b2.state().artifacts.size() == 2);
}

TEST_CASE("resume refuses a run without a workflow, and a copy of an attached machine is not attached") {
  cairn_test::TempWorkspace ws;
  auto journal = std::make_shared<InMemoryRunJournal>();
  Run empty(journal, "acme", "nothing");
  CHECK_THROWS_AS(WorkflowMachine::resume(empty, ws.path()), state_error);

  Run run(journal, "acme", "wf");
  WorkflowMachine m(cairn_test::feature_template(), ws.path());
  m.attach(run);
  CHECK_THROWS_AS(m.attach(run), invalid_argument);
  m.start();
  const auto seq = run.seq();
  WorkflowMachine copy = m;
  CHECK(copy.run() == nullptr);
  copy.advance("only in memory");
  CHECK(run.seq() == seq);
  // A moved machine takes the attachment along and keeps recording.
  WorkflowMachine moved = std::move(m);
  CHECK(moved.run() == &run);
  moved.advance("recorded");
  CHECK(run.seq() == seq + 1);
  Run again(journal, "acme", "wf");
  CHECK(WorkflowMachine::resume(again, ws.path()).to_json() == moved.to_json());
}

TEST_CASE("a run holding a workflow patch that does not apply is refused with the entry named") {
  cairn_test::TempWorkspace ws;
  auto journal = std::make_shared<InMemoryRunJournal>();
  {
    Run run(journal, "acme", "wf");
    WorkflowMachine m(cairn_test::feature_template(), ws.path());
    m.attach(run);
    m.start();
  }
  JournalEntry bad;
  bad.kind = "workflow.patch";
  bad.data = json::array({{{"op", "replace"}, {"path", "/step"}, {"value", "no-such-step"}}});
  (void)journal->append("acme", "wf", 2, {bad});
  Run run(journal, "acme", "wf");
  try {
    (void)WorkflowMachine::resume(run, ws.path());
    FAIL("a patch to a step the template lacks must be refused");
  } catch (const state_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("entry 3") && Catch::Contains("no-such-step"));
  }
}

TEST_CASE("RunWorkflowState: the workflow tools over a run, shared by two servers") {
  cairn_test::TempWorkspace ws;
  ws.write("plan.md");
  auto journal = std::make_shared<InMemoryRunJournal>();
  std::vector<std::string> stored;
  auto observer = [&](const ArtifactEvent& e) { stored.push_back(e.relative_path); };
  WorkflowTools one(RunWorkflowState(journal, "acme", "feature-1", ws.path()), cairn_test::feature_template(),
                    observer);
  WorkflowTools two(RunWorkflowState(journal, "acme", "feature-1", ws.path()), cairn_test::feature_template(),
                    observer);
  CHECK(two.call("workflow_status", json::object()).at("isError") == true);
  CHECK(one.call("workflow_start", {{"summary", "CSV"}}).at("structuredContent").at("step") == "plan");
  // The second server sees the first one's workflow, and starting again changes nothing.
  CHECK(two.call("workflow_start", {{"summary", "other"}}).at("structuredContent").at("summary") == "CSV");
  CHECK(two.call("register_artefacts", {{"paths", {"plan.md"}}}).at("structuredContent").at("registered").size() == 1);
  CHECK(stored == std::vector<std::string>{"plan.md"});
  CHECK(one.call("workflow_advance", {{"output", "planned"}}).at("structuredContent").at("step") == "define_tasks");
  CHECK(two.call("workflow_advance", {{"output", "tasks"}}).at("structuredContent").at("step") == "implement");
  const auto status = one.call("workflow_status", json::object()).at("structuredContent");
  CHECK(status.at("step") == "implement");
  CHECK(status.at("artefacts").size() == 1);
  const auto context = two.call("workflow_context", json::object()).at("structuredContent");
  CHECK(context == json{{"define_tasks", "tasks"}, {"plan", "planned"}});
  // No state file was written: the workflow lives in the journal.
  CHECK_FALSE(std::filesystem::exists(ws.path() / "workflow-state.json"));
  // A refused change is an error result and records nothing.
  const auto head = journal->info("acme", "feature-1")->last_seq;
  CHECK(one.call("workflow_set_tasks", {{"loop_id", "plan"}, {"tasks", json::array()}}).at("isError") == true);
  CHECK(journal->info("acme", "feature-1")->last_seq == head);
}

#if CAIRN_TEST_WITH_SQLITE
TEST_CASE("RunWorkflowState: writers on their own SQLite connections never lose or repeat a change") {
  cairn_test::TempWorkspace ws;
  const std::string db = (ws.path() / "runs.db").string();
  const auto tmpl = WorkflowTemplate::parse(R"({"name": "count", "steps": [
      {"id": "work", "type": "ralph", "n": 10000, "instructions": "Work."}]})");
  {
    RunWorkflowState state(std::make_shared<SqliteRunJournal>(db), "acme", "count", ws.path());
    state.start(tmpl);
  }
  constexpr int writers = 4;
  constexpr int per_writer = 40;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&, w] {
      try {
        RunWorkflowState state(std::make_shared<SqliteRunJournal>(db), "acme", "count", ws.path(), RunOptions{16});
        for (int i = 0; i < per_writer; ++i) {
          state.update(
              [&](WorkflowMachine& m) { return m.advance("w" + std::to_string(w) + "-" + std::to_string(i)); });
        }
      } catch (const std::exception& e) {
        ++failures;
        UNSCOPED_INFO(e.what());
      }
    });
  }
  for (auto& t : threads) t.join();
  REQUIRE(failures == 0);
  RunWorkflowState reader(std::make_shared<SqliteRunJournal>(db), "acme", "count", ws.path());
  const auto outputs = *reader.read([](const WorkflowMachine& m) { return m.context(); });
  // Every advance landed exactly once, each on its own iteration.
  REQUIRE(outputs.size() == static_cast<std::size_t>(writers * per_writer));
  std::set<std::string> values;
  for (const auto& [key, value] : outputs) values.insert(value);
  CHECK(values.size() == outputs.size());
  CHECK(*reader.read([](const WorkflowMachine& m) { return m.state().ralph_iteration.value_or(0); }) ==
        writers * per_writer + 1);
}
#endif

TEST_CASE("workflow transitions and committed registrations are events, a lost append reports the error only") {
  cairn_test::TempWorkspace ws;
  ws.write("a.txt", "abc");
  ws.write("b.txt");
  struct Heard {
    EventKind kind;
    std::string operation, subject;
    errc error;
    bool payload;
  };
  std::vector<Heard> events;
  std::vector<std::string> typed;
  auto observer = observe_with([&](const Event& e) {
    events.push_back(Heard{e.kind, std::string(e.operation), std::string(e.subject), e.error,
                           e.kind == EventKind::artifact_registered ? e.artifact != nullptr : e.workflow != nullptr});
    if (e.kind == EventKind::workflow_transition && e.workflow) CHECK(e.duration.count() > 0);
  });
  auto journal = std::make_shared<InMemoryRunJournal>();
  Run run_a(journal, "acme", "wf");
  WorkflowMachine a(cairn_test::feature_template(), ws.path());
  a.attach(run_a);
  a.set_observer(observer);
  a.set_artifact_observer([&](const ArtifactEvent& e) { typed.push_back(e.relative_path); });
  a.start();
  a.register_artifacts({"a.txt", "a.txt"});  // the duplicate is not an event
  REQUIRE(events.size() == 2);
  CHECK(events[0].kind == EventKind::workflow_transition);
  CHECK(events[0].operation == "start");
  CHECK(events[0].subject == "plan");
  CHECK(events[0].payload);
  CHECK(events[1].kind == EventKind::artifact_registered);
  CHECK(events[1].subject == "a.txt");
  CHECK(events[1].payload);
  CHECK(typed == std::vector<std::string>{"a.txt"});  // the typed observer hears it once too

  Run run_b(journal, "acme", "wf");
  auto b = WorkflowMachine::resume(run_b, ws.path());
  b.set_observer(observer);
  a.advance("planned");  // a moves the run on
  events.clear();
  CHECK_THROWS_AS(b.register_artifacts({"b.txt"}), conflict);
  CHECK(events.empty());  // nothing committed, nothing heard
  CHECK_THROWS_AS(b.advance("stale"), conflict);
  REQUIRE(events.size() == 1);
  CHECK(events[0].operation == "advance");
  CHECK(events[0].error == errc::conflict);
  CHECK_FALSE(events[0].payload);
}

TEST_CASE("RunWorkflowState: set_artifact_observer takes the ArtifactObserver, set_observer the event Observer") {
  cairn_test::TempWorkspace ws;
  ws.write("a.txt", "a");
  ws.write("b.txt", "b");
  std::vector<std::string> typed;
  std::vector<std::string> events;
  RunWorkflowState state(std::make_shared<InMemoryRunJournal>(), "acme", "wf", ws.path());
  state.set_artifact_observer([&](const ArtifactEvent& e) { typed.push_back(e.relative_path); });
  state.set_observer(observe_with([&](const Event& e) { events.push_back(std::string(e.operation)); }));
  (void)state.start(cairn_test::feature_template());
  (void)state.update([](WorkflowMachine& m) { return m.register_artifacts({"a.txt"}); });
  CHECK(typed == std::vector<std::string>{"a.txt"});
  CHECK(events.size() == 2);  // the start and the registration

  // An empty shared_ptr clears the event observer only; an empty ArtifactObserver clears the typed one only.
  state.set_observer(std::shared_ptr<Observer>());
  (void)state.update([](WorkflowMachine& m) { return m.register_artifacts({"b.txt"}); });
  CHECK(typed == std::vector<std::string>{"a.txt", "b.txt"});
  CHECK(events.size() == 2);
  state.set_observer(observe_with([&](const Event& e) { events.push_back(std::string(e.operation)); }));
  state.set_artifact_observer(nullptr);
  (void)state.update([](WorkflowMachine& m) { return m.advance("planned"); });
  CHECK(typed.size() == 2);
  CHECK(events.size() == 3);
}
