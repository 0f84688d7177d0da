#include "cairn/workflow/machine.hpp"

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "catch.hpp"
#include "workspace.hpp"

using namespace cairn;
using cairn_test::ContainsSubstring;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::vector<Task> three_tasks() {
  return {{"t1", "Parser", std::string("Read CSV"), {}, TaskStatus::pending},
          {"t2", "Writer", std::nullopt, {}, TaskStatus::pending},
          {"t3", "Docs", std::nullopt, {}, TaskStatus::pending}};
}

Task task(std::string id, std::vector<std::string> deps = {}) {
  Task t;
  t.id = id;
  t.title = "Title of " + id;
  t.depends_on = std::move(deps);
  return t;
}

WorkflowTemplate loop_template(const char* on_fail) {
  return WorkflowTemplate::from_json(json{
      {"name", "w"},
      {"loops",
       {{"work",
         {{{"id", "do"}, {"instructions", "Do {task.id}"}, {"on_fail", on_fail}},
          {{"id", "check"}, {"instructions", "Check {task.id}"}}}}}},
      {"steps", {{{"id", "work"}, {"type", "loop"}}, {{"id", "end"}, {"type", "action"}, {"instructions", "End"}}}}});
}

std::vector<std::string> task_ids(const WorkflowMachine& m, const std::string& loop) {
  std::vector<std::string> ids;
  for (const auto& t : m.state().tasks.at(loop)) ids.push_back(t.id);
  return ids;
}

}  // namespace

TEST_CASE("the feature workflow walks plan, tasks, the loop and the ralph review with exact statuses") {
  cairn_test::TempWorkspace ws;
  WorkflowMachine m(cairn_test::feature_template(), ws.path());
  CHECK_FALSE(m.started());

  auto s = m.start("  Add CSV export\n");
  CHECK(m.started());
  CHECK(s.status == WorkflowStatus::running);
  CHECK(s.step == "plan");
  CHECK(s.step_type == StepType::action);
  CHECK_FALSE(s.agent);
  CHECK(s.summary == std::optional<std::string>("Add CSV export"));
  CHECK(s.instructions == "Write a plan.\n\n" + std::string(WorkflowMachine::artifact_instruction));
  CHECK(s.progress.current_step == 1);
  CHECK(s.progress.total_steps == 4);
  CHECK_FALSE(s.progress.total_tasks);

  s = m.advance("plan written");
  CHECK(s.step == "define_tasks");
  CHECK(s.instructions == "Split the plan into tasks.");
  // Tasks set ahead for the loop: the current step does not change.
  s = m.set_tasks("implement", three_tasks());
  CHECK(s.step == "define_tasks");

  s = m.advance("three tasks");
  CHECK(s.step == "implement");
  CHECK(s.step_type == StepType::loop);
  REQUIRE(s.task);
  CHECK(s.task->index == 0);
  CHECK(s.task->id == "t1");
  CHECK(s.task->title == "Parser");
  CHECK(s.task->description == std::optional<std::string>("Read CSV"));
  CHECK(s.task->total == 3);
  CHECK(s.sub_step == std::optional<std::string>("code"));
  CHECK(s.sub_step_index == std::optional<std::size_t>(0));
  CHECK(s.total_sub_steps == std::optional<std::size_t>(2));
  CHECK(s.agent == std::optional<std::string>("coder"));
  CHECK(s.instructions == "SPAWN the 'coder' sub-agent to handle this step:\n\nImplement t1: Parser. Read CSV\n\n" +
                              std::string(WorkflowMachine::artifact_instruction));
  CHECK(s.progress.current_task_progress == std::optional<std::string>("Task 1/3, Sub-step 1/2"));
  CHECK(s.progress.completed_tasks == std::optional<std::size_t>(0));
  CHECK(s.progress.total_tasks == std::optional<std::size_t>(3));
  CHECK(m.state().tasks.at("implement")[0].status == TaskStatus::in_progress);

  s = m.advance("t1 coded");
  CHECK(s.sub_step == std::optional<std::string>("test"));
  CHECK(s.agent == std::optional<std::string>("tester"));
  CHECK(s.instructions == "SPAWN the 'tester' sub-agent to handle this step:\n\nTest Parser");
  CHECK(s.progress.current_task_progress == std::optional<std::string>("Task 1/3, Sub-step 2/2"));

  s = m.advance("t1 tested");
  CHECK(s.task->id == "t2");
  CHECK(s.sub_step == std::optional<std::string>("code"));
  // A missing description fills in as nothing.
  CHECK_THAT(s.instructions, ContainsSubstring("Implement t2: Writer. \n\n"));
  CHECK(s.progress.completed_tasks == std::optional<std::size_t>(1));
  CHECK(m.state().tasks.at("implement")[0].status == TaskStatus::done);

  for (const char* out : {"t2 coded", "t2 tested", "t3 coded", "t3 tested"}) s = m.advance(out);
  CHECK(s.step == "review");
  CHECK(s.step_type == StepType::ralph);
  CHECK(s.ralph_iteration == std::optional<int>(1));
  CHECK(s.ralph_total == std::optional<int>(2));
  CHECK(s.instructions == "Review the change.\n\n" + WorkflowMachine::ralph_line(1, 2));
  CHECK_THAT(s.instructions, ContainsSubstring("[Ralph iteration 1 of 2]"));
  CHECK_FALSE(s.task);

  s = m.advance("review 1");
  CHECK(s.step == "review");
  CHECK(s.ralph_iteration == std::optional<int>(2));
  CHECK_THAT(s.instructions, ContainsSubstring("[Ralph iteration 2 of 2]"));
  CHECK_THAT(s.instructions, ContainsSubstring("iteration 1."));

  s = m.advance("review 2");
  CHECK(s.status == WorkflowStatus::complete);
  CHECK(s.instructions == "Workflow complete.");
  CHECK_FALSE(s.agent);
  CHECK(s.progress.current_step == 4);

  const std::map<std::string, std::string> expected = {
      {"plan", "plan written"},          {"define_tasks", "three tasks"},
      {"implement.t1.code", "t1 coded"}, {"implement.t1.test", "t1 tested"},
      {"implement.t2.code", "t2 coded"}, {"implement.t2.test", "t2 tested"},
      {"implement.t3.code", "t3 coded"}, {"implement.t3.test", "t3 tested"},
      {"review.1", "review 1"},          {"review.2", "review 2"}};
  CHECK(m.context() == expected);
  for (const auto& t : m.state().tasks.at("implement")) CHECK(t.status == TaskStatus::done);

  CHECK_THROWS_AS(m.advance("more"), state_error);
  CHECK_THROWS_WITH(m.advance("more"), "advance: the workflow is complete, not running");
  CHECK(m.context() == expected);
}

TEST_CASE("status report JSON has the documented shape") {
  cairn_test::TempWorkspace ws;
  WorkflowMachine m(cairn_test::feature_template(), ws.path());
  m.start();
  m.advance("p");
  m.set_tasks("implement", three_tasks());
  const json j = m.advance("d");
  CHECK(j.at("status") == "running");
  CHECK(j.at("step") == "implement");
  CHECK(j.at("step_type") == "loop");
  CHECK(j.at("task") ==
        json{{"index", 0}, {"id", "t1"}, {"title", "Parser"}, {"description", "Read CSV"}, {"total", 3}});
  CHECK(j.at("sub_step") == "code");
  CHECK(j.at("sub_step_index") == 0);
  CHECK(j.at("total_sub_steps") == 2);
  CHECK(j.at("agent") == "coder");
  CHECK(j.at("delegate") == true);
  CHECK(j.at("attempt") == 1);
  CHECK(j.at("artefacts") == json::array());
  CHECK(j.at("progress") == json{{"current_step", 3},
                                 {"total_steps", 4},
                                 {"completed_tasks", 0},
                                 {"failed_tasks", 0},
                                 {"total_tasks", 3},
                                 {"current_task_progress", "Task 1/3, Sub-step 1/2"}});
  CHECK_FALSE(j.contains("summary"));
  const json first = WorkflowMachine(cairn_test::feature_template(), ws.path()).start();
  CHECK(first.at("agent") == nullptr);
  CHECK(first.at("delegate") == false);
}

TEST_CASE("a loop reached without tasks waits for them, and set_tasks starts it") {
  cairn_test::TempWorkspace ws;
  WorkflowMachine m(loop_template("retry"), ws.path());
  auto s = m.start();
  CHECK(s.step == "work");
  CHECK(s.waiting_for_tasks);
  CHECK_FALSE(s.task);
  CHECK_FALSE(s.agent);
  CHECK_THAT(s.instructions, ContainsSubstring("Call workflow_set_tasks with loop_id 'work'"));
  CHECK(s.progress.total_tasks == std::optional<std::size_t>(0));
  s = m.set_tasks("work", {task("a")});
  CHECK_FALSE(s.waiting_for_tasks);
  CHECK(s.task->id == "a");
  CHECK(s.instructions == "Do a");
}

TEST_CASE("a loop with no tasks is skipped: an empty list, or advancing past a waiting loop") {
  cairn_test::TempWorkspace ws;
  WorkflowMachine m(loop_template("retry"), ws.path());
  m.start();
  CHECK(m.set_tasks("work", {}).step == "end");

  WorkflowMachine m2(loop_template("retry"), ws.path());
  m2.start();
  auto s = m2.advance("nothing to do");
  CHECK(s.step == "end");
  CHECK(m2.context().at("work") == "nothing to do");
}

TEST_CASE("on_fail retry stays on the sub-step and counts attempts") {
  cairn_test::TempWorkspace ws;
  WorkflowMachine m(loop_template("retry"), ws.path());
  m.start();
  m.set_tasks("work", {task("a"), task("b")});
  auto s = m.advance("broke", StepResult::failed);
  CHECK(s.task->id == "a");
  CHECK(s.sub_step == std::optional<std::string>("do"));
  CHECK(s.attempt == 2);
  CHECK(m.context().at("work.a.do") == "broke");
  s = m.advance("fixed");
  CHECK(s.sub_step == std::optional<std::string>("check"));
  CHECK(s.attempt == 1);
  CHECK(m.context().at("work.a.do") == "fixed");
}

TEST_CASE("on_fail skip fails the task, blocks its dependants and moves on") {
  cairn_test::TempWorkspace ws;
  WorkflowMachine m(loop_template("skip"), ws.path());
  m.start();
  m.set_tasks("work", {task("a"), task("b", {"a"}), task("c", {"b"}), task("d")});
  auto s = m.advance("cannot", StepResult::failed);
  // b depends on a, c on b: both are blocked; d runs.
  CHECK(s.task->id == "d");
  CHECK(s.task->index == 3);
  const auto& tasks = m.state().tasks.at("work");
  CHECK(tasks[0].status == TaskStatus::failed);
  CHECK(tasks[1].status == TaskStatus::blocked);
  CHECK(tasks[2].status == TaskStatus::blocked);
  CHECK(tasks[3].status == TaskStatus::in_progress);
  CHECK(s.progress.failed_tasks == std::optional<std::size_t>(3));
  m.advance("d done");
  s = m.advance("d checked");
  CHECK(s.step == "end");

  // Skipping the last task ends the loop.
  WorkflowMachine m2(loop_template("skip"), ws.path());
  m2.start();
  m2.set_tasks("work", {task("only")});
  CHECK(m2.advance("no", StepResult::failed).step == "end");
}

TEST_CASE("on_fail abort fails the workflow with a reason, action and ralph steps retry") {
  cairn_test::TempWorkspace ws;
  WorkflowMachine m(loop_template("abort"), ws.path());
  m.start();
  m.set_tasks("work", {task("a")});
  auto s = m.advance("fatal", StepResult::failed);
  CHECK(s.status == WorkflowStatus::failed);
  CHECK(s.failure_reason ==
        std::optional<std::string>("sub-step 'do' of task 'a' in loop 'work' failed (on_fail: abort)"));
  CHECK(s.instructions == "Workflow failed: sub-step 'do' of task 'a' in loop 'work' failed (on_fail: abort)");
  CHECK_THROWS_AS(m.advance("x"), state_error);
  CHECK_THROWS_AS(m.set_tasks("work", {}), state_error);
  CHECK_THROWS_AS(m.fail("again"), state_error);

  WorkflowMachine f(cairn_test::feature_template(), ws.path());
  f.start();
  s = f.advance("oops", StepResult::failed);
  CHECK(s.step == "plan");
  CHECK(s.attempt == 2);
}

TEST_CASE("fail ends a running workflow") {
  cairn_test::TempWorkspace ws;
  WorkflowMachine m(cairn_test::feature_template(), ws.path());
  CHECK_THROWS_WITH(m.fail("x"), "fail: the workflow is not started (call start first)");
  m.start();
  auto s = m.fail("user cancelled");
  CHECK(s.status == WorkflowStatus::failed);
  CHECK(s.instructions == "Workflow failed: user cancelled");
  CHECK(json(s).at("failure_reason") == "user cancelled");
  WorkflowMachine m2(cairn_test::feature_template(), ws.path());
  m2.start();
  CHECK(m2.fail("   ").failure_reason == std::optional<std::string>("no reason given"));
}

TEST_CASE("depends_on orders tasks stably, cycles, unknown ids and bad tasks are clear errors") {
  cairn_test::TempWorkspace ws;
  WorkflowMachine m(loop_template("retry"), ws.path());
  m.start();
  m.set_tasks("work", {task("e", {"c"}), task("a"), task("c", {"a", "a"}), task("b"), task("d", {"e", "b"})});
  CHECK(task_ids(m, "work") == std::vector<std::string>{"a", "c", "e", "b", "d"});

  WorkflowMachine w(cairn_test::feature_template(), ws.path());
  w.start();
  CHECK_THROWS_WITH(w.set_tasks("implement", {task("a", {"b"}), task("b", {"c"}), task("c", {"a"})}),
                    "set_tasks: the tasks of loop 'implement' form a dependency cycle: c -> b -> a -> c");
  CHECK_THROWS_WITH(w.set_tasks("implement", {task("x"), task("a", {"b"}), task("b", {"a"})}),
                    "set_tasks: the tasks of loop 'implement' form a dependency cycle: b -> a -> b");
  CHECK_THROWS_WITH(w.set_tasks("implement", {task("a", {"zz"})}),
                    "set_tasks: tasks[0] ('a') depends on unknown task 'zz'");
  CHECK_THROWS_WITH(w.set_tasks("implement", {task("a", {"a"})}), "set_tasks: tasks[0] ('a') depends on itself");
  CHECK_THROWS_WITH(w.set_tasks("implement", {task("a"), task("a")}), "set_tasks: tasks[1].id 'a' is used twice");
  CHECK_THROWS_WITH(w.set_tasks("implement", {task("a.b")}),
                    ContainsSubstring("set_tasks: tasks[0].id 'a.b' is not a valid task id"));
  Task untitled = task("a");
  untitled.title = " ";
  CHECK_THROWS_WITH(w.set_tasks("implement", {untitled}), "set_tasks: tasks[0].title must not be empty");
  CHECK_THROWS_AS(w.set_tasks("implement", {task("a", {"zz"})}), invalid_argument);
  CHECK_THROWS_WITH(w.set_tasks("plan", {}),
                    "set_tasks: 'plan' is not a loop step of workflow 'feature' (loop steps: implement)");
  // Nothing was stored by the failed calls.
  CHECK(w.state().tasks.empty());
}

TEST_CASE("set_tasks refuses a loop that is running or has run") {
  cairn_test::TempWorkspace ws;
  WorkflowMachine m(cairn_test::feature_template(), ws.path());
  m.start();
  m.set_tasks("implement", {task("a")});
  m.set_tasks("implement", {task("b")});  // still ahead: replaced
  CHECK(task_ids(m, "implement") == std::vector<std::string>{"b"});
  m.advance("p");
  m.advance("d");
  CHECK_THROWS_WITH(m.set_tasks("implement", {task("c")}),
                    "set_tasks: loop 'implement' is running; its tasks can no longer be replaced");
  m.advance("c");
  m.advance("t");
  CHECK(m.status().step == "review");
  CHECK_THROWS_WITH(m.set_tasks("implement", {task("c")}),
                    "set_tasks: loop 'implement' has already run; its tasks can no longer be replaced");
  CHECK(task_ids(m, "implement") == std::vector<std::string>{"b"});
}

TEST_CASE("placeholders are filled in once, without re-expanding task text") {
  cairn_test::TempWorkspace ws;
  WorkflowMachine m(loop_template("retry"), ws.path());
  m.start();
  Task t = task("a");
  t.title = "{task.id}";
  auto s = m.set_tasks("work", {t});
  CHECK(s.instructions == "Do a");
  s = m.advance("ok");
  CHECK(s.instructions == "Check a");
}

TEST_CASE("summaries are cleaned: control characters removed, trimmed, at most 100 code points") {
  CHECK(WorkflowMachine::sanitize_summary("  Add\tCSV\x01 export \n") == std::optional<std::string>("AddCSV export"));
  CHECK_FALSE(WorkflowMachine::sanitize_summary(" \n\t\x7f "));
  CHECK(WorkflowMachine::sanitize_summary(std::string(150, 'a'))->size() == 100);
  // 150 two-byte characters: cut after 100 characters, not inside one.
  std::string umlauts;
  for (int i = 0; i < 150; ++i) umlauts += "\xc3\xa4";
  CHECK(*WorkflowMachine::sanitize_summary(umlauts) == umlauts.substr(0, 200));
  CHECK(*WorkflowMachine::sanitize_summary(std::string(99, 'a') + " b") == std::string(99, 'a'));
  cairn_test::TempWorkspace ws;
  WorkflowMachine m(cairn_test::feature_template(), ws.path());
  CHECK_FALSE(m.start("\x02\x03").summary);
}

TEST_CASE("start on a started machine changes nothing, other calls need start") {
  cairn_test::TempWorkspace ws;
  WorkflowMachine m(cairn_test::feature_template(), ws.path());
  CHECK_THROWS_WITH(m.status(), "status: the workflow is not started (call start first)");
  CHECK_THROWS_AS(m.advance("x"), state_error);
  CHECK_THROWS_AS(m.set_tasks("implement", {}), state_error);
  CHECK_THROWS_AS(m.context(), state_error);
  CHECK_THROWS_AS(m.register_artifacts({}), state_error);
  CHECK_THROWS_AS(m.state(), state_error);
  m.start("first");
  m.advance("p");
  auto s = m.start("second");
  CHECK(s.step == "define_tasks");
  CHECK(s.summary == std::optional<std::string>("first"));
}

TEST_CASE("a template whose first step is ralph starts at iteration 1") {
  cairn_test::TempWorkspace ws;
  auto t = WorkflowTemplate::parse(R"({"name": "r", "agents": {"critic": {}},
      "steps": [{"id": "polish", "type": "ralph", "n": 3, "agent": "critic", "instructions": "Polish.",
                 "artefacts": true}]})");
  WorkflowMachine m(t, ws.path());
  auto s = m.start();
  CHECK(s.ralph_iteration == std::optional<int>(1));
  CHECK(s.instructions == "SPAWN the 'critic' sub-agent to handle this step:\n\nPolish.\n\n" +
                              WorkflowMachine::ralph_line(1, 3) + "\n\n" +
                              std::string(WorkflowMachine::artifact_instruction));
  m.advance("1");
  m.advance("2", StepResult::failed);
  CHECK(m.status().ralph_iteration == std::optional<int>(2));
  m.advance("2");
  CHECK(m.advance("3").status == WorkflowStatus::complete);
  CHECK(m.context() == std::map<std::string, std::string>{{"polish.1", "1"}, {"polish.2", "2"}, {"polish.3", "3"}});
}

TEST_CASE("register_artefacts resolves against the workspace and sorts paths into registered, duplicates, invalid") {
  cairn_test::TempWorkspace ws;
  cairn_test::TempWorkspace outside;
  const auto plan = ws.write("docs/plan.md", "# plan");
  ws.write("empty.txt", "");
  outside.write("secret.txt", "s");
  fs::create_symlink(outside.path() / "secret.txt", ws.path() / "escape.txt");
  fs::create_symlink(plan, ws.path() / "link-to-plan.md");
  fs::create_directories(ws.path() / "dir");

  WorkflowMachine m(cairn_test::feature_template(), ws.path());
  m.start();
  std::vector<ArtifactEvent> events;
  m.set_artifact_observer([&](const ArtifactEvent& e) { events.push_back(e); });

  // The process's working directory plays no part.
  const auto old_cwd = fs::current_path();
  fs::current_path(outside.path());
  auto r = m.register_artifacts({"docs/plan.md", "empty.txt", "", "  ", "missing.md", "../secret.txt",
                                 (outside.path() / "secret.txt").string(), "escape.txt", "dir", "docs/../docs/plan.md",
                                 "link-to-plan.md", std::string("a\0b", 3)});
  fs::current_path(old_cwd);

  const std::string root = fs::canonical(ws.path()).string();
  CHECK(r.registered == std::vector<std::string>{root + "/docs/plan.md", root + "/empty.txt"});
  CHECK(r.duplicates == std::vector<std::string>{root + "/docs/plan.md", root + "/docs/plan.md"});
  CHECK(r.invalid == std::vector<std::string>{"", "  ", "missing.md", "../secret.txt",
                                              (outside.path() / "secret.txt").string(), "escape.txt", "dir",
                                              std::string("a\0b", 3)});
  CHECK(m.state().artifacts == r.registered);
  CHECK(m.status().artifacts == r.registered);

  REQUIRE(events.size() == 2);
  CHECK(events[0].relative_path == "docs/plan.md");
  CHECK(events[0].absolute_path == root + "/docs/plan.md");
  CHECK(events[0].size_bytes == 6);
  CHECK(events[0].workflow == "feature");
  CHECK(events[0].step == "plan");
  CHECK_FALSE(events[0].task_id);

  // Absolute paths inside the workspace work; registering again is a duplicate.
  r = m.register_artifacts({plan.string()});
  CHECK(r.registered.empty());
  CHECK(r.duplicates == std::vector<std::string>{root + "/docs/plan.md"});
  CHECK(m.register_artifacts({}).registered.empty());
  CHECK(events.size() == 2);
}

TEST_CASE("register_artefacts in a loop tells the observer the task and sub-step") {
  cairn_test::TempWorkspace ws;
  ws.write("a.cpp");
  WorkflowMachine m(loop_template("retry"), ws.path());
  m.start();
  m.set_tasks("work", {task("a")});
  std::vector<ArtifactEvent> events;
  m.set_artifact_observer([&](const ArtifactEvent& e) { events.push_back(e); });
  m.register_artifacts({"a.cpp"});
  REQUIRE(events.size() == 1);
  CHECK(events[0].task_id == std::optional<std::string>("a"));
  CHECK(events[0].sub_step == std::optional<std::string>("do"));
}

TEST_CASE("a missing workspace makes every path invalid") {
  cairn_test::TempWorkspace ws;
  WorkflowMachine m(cairn_test::feature_template(), ws.path() / "not-there");
  m.start();
  auto r = m.register_artifacts({"a", (ws.path() / "x").string()});
  CHECK(r.invalid.size() == 2);
  CHECK(r.registered.empty());
}

TEST_CASE("a machine round-trips through JSON, and restore rejects a state that does not fit") {
  cairn_test::TempWorkspace ws;
  ws.write("f.txt");
  WorkflowMachine m(cairn_test::feature_template(), ws.path());
  m.start("sum");
  m.set_tasks("implement", three_tasks());
  m.advance("p");
  m.advance("d");
  m.advance("c", StepResult::failed);
  m.register_artifacts({"f.txt"});
  const json j = m.to_json();
  CHECK(j.at("template") == cairn_test::feature_template().to_json());
  auto back = WorkflowMachine::from_json(j, ws.path());
  CHECK(back.state() == m.state());
  CHECK(json(back.status()) == json(m.status()));
  CHECK(back.advance("c2").sub_step == std::optional<std::string>("test"));

  auto broken = [&](const std::function<void(json&)>& edit) {
    json k = j;
    edit(k);
    try {
      WorkflowMachine::from_json(k, ws.path());
    } catch (const state_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(broken([](json& k) { k["step"] = "gone"; }) ==
        "workflow state does not fit its template: step 'gone' is not a step of template 'feature'");
  CHECK(broken([](json& k) { k["step_type"] = "action"; }) ==
        "workflow state does not fit its template: step 'implement' is a loop step, not action");
  CHECK(broken([](json& k) { k["task"]["index"] = 7; }) ==
        "workflow state does not fit its template: task 't1' at index 7 is not in loop 'implement'");
  CHECK(broken([](json& k) { k["sub_step"] = "deploy"; }) ==
        "workflow state does not fit its template: sub_step is missing or not a sub-step of loop 'implement'");
  CHECK(broken([](json& k) { k["tasks"]["plan"] = json::array(); }) ==
        "workflow state does not fit its template: tasks.plan names no loop step");
  CHECK(broken([](json& k) { k.erase("template"); }) == "workflow state: template is missing");
  CHECK_THAT(broken([](json& k) { k["template"]["steps"] = json::array(); }),
             ContainsSubstring("workflow state: template: steps must be a non-empty array"));
  CHECK(broken([](json& k) {
          k["step"] = "review";
          k["step_type"] = "ralph";
          k.erase("task");
          k.erase("sub_step");
          k["ralph_iteration"] = 3;
        }) == "workflow state does not fit its template: ralph_iteration of step 'review' must be between 1 and 2");
}

// Issue 13.8: a name that is not valid UTF-8 cannot be kept exactly in the JSON state (it would become U+FFFD, name
// no file, and be registered again after every reload), so it is refused with its reason.
TEST_CASE("register_artefacts refuses file names that are not valid UTF-8, with the reason") {
  cairn_test::TempWorkspace ws;
  ws.write("bad-\xff-name.txt");
  ws.write("dir-\xc3/inside.txt");
  ws.write("caf\xc3\xa9.txt");  // valid UTF-8: fine
  WorkflowMachine m(cairn_test::feature_template(), ws.path());
  m.start();
  const auto r = m.register_artifacts({"bad-\xff-name.txt", "dir-\xc3/inside.txt", "caf\xc3\xa9.txt"});
  const std::string root = fs::canonical(ws.path()).string();
  CHECK(r.registered == std::vector<std::string>{root + "/caf\xc3\xa9.txt"});
  CHECK(r.invalid == std::vector<std::string>{"bad-\xff-name.txt", "dir-\xc3/inside.txt"});
  REQUIRE(r.invalid_reasons.size() == 2);
  CHECK_THAT(r.invalid_reasons[0], ContainsSubstring("not valid UTF-8"));
  CHECK_THAT(r.invalid_reasons[1], ContainsSubstring("not valid UTF-8"));
  CHECK(m.state().artifacts == r.registered);
}

// Issue 13.9: cairn's own files are not outputs of the workflow.
TEST_CASE("register_artefacts refuses the state file, its lock and its temp files, with the reason") {
  cairn_test::TempWorkspace ws;
  ws.write("workflow-state.json", "{}");
  ws.write("workflow-state.json.lock", "");
  ws.write("workflow-state.json.tmp", "{}");
  ws.write("workflow-state.json.tmp-0123456789abcdef", "{}");
  ws.write("workflow-state.json.bak", "{}");  // not cairn's: a file like any other
  fs::create_hard_link(ws.path() / "workflow-state.json", ws.path() / "hard-link.json");
  WorkflowMachine m(cairn_test::feature_template(), ws.path());
  m.start();
  const auto r =
      m.register_artifacts({"workflow-state.json", "./workflow-state.json.lock", "workflow-state.json.tmp",
                            "workflow-state.json.tmp-0123456789abcdef", "hard-link.json", "workflow-state.json.bak"});
  const std::string root = fs::canonical(ws.path()).string();
  CHECK(r.registered == std::vector<std::string>{root + "/workflow-state.json.bak"});
  CHECK(r.invalid == std::vector<std::string>{"workflow-state.json", "./workflow-state.json.lock",
                                              "workflow-state.json.tmp", "workflow-state.json.tmp-0123456789abcdef",
                                              "hard-link.json"});
  REQUIRE(r.invalid_reasons.size() == 5);
  for (const auto& reason : r.invalid_reasons) CHECK_THAT(reason, ContainsSubstring("cairn's own workflow state"));

  // A machine told another state file name (StateFile does so) refuses that one instead.
  ws.write("wf.json", "{}");
  m.set_state_file_name("wf.json");
  const auto r2 = m.register_artifacts({"wf.json", "hard-link.json"});
  CHECK(r2.invalid == std::vector<std::string>{"wf.json"});
  CHECK(r2.registered == std::vector<std::string>{root + "/hard-link.json"});
}

TEST_CASE("every invalid artefact path comes with its reason") {
  cairn_test::TempWorkspace ws;
  cairn_test::TempWorkspace outside;
  outside.write("secret.txt");
  fs::create_directories(ws.path() / "dir");
  WorkflowMachine m(cairn_test::feature_template(), ws.path());
  m.start();
  const auto r = m.register_artifacts({"", "missing.md", "dir", (outside.path() / "secret.txt").string(),
                                       std::string("a\0b", 3), std::string(5000, 'x')});
  REQUIRE(r.invalid.size() == 6);
  REQUIRE(r.invalid_reasons.size() == 6);
  CHECK(r.invalid_reasons[0] == "the path is empty");
  CHECK_THAT(r.invalid_reasons[1], ContainsSubstring("No such file or directory"));
  CHECK(r.invalid_reasons[2] == "not a regular file");
  CHECK(r.invalid_reasons[3] == "outside the workspace");
  CHECK(r.invalid_reasons[4] == "the path contains a NUL byte");
  CHECK(r.invalid_reasons[5] == "the path is longer than 4096 bytes");
  CHECK(json(m.register_artifacts({"missing"})) ==
        json{{"registered", json::array()},
             {"duplicates", json::array()},
             {"invalid", {"missing"}},
             {"invalid_reasons", {"cannot resolve the path: No such file or directory"}}});
}
