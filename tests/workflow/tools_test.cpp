#include "cairn/workflow/tools.hpp"

#include "cairn/observe.hpp"
#include "cairn/run/memory_journal.hpp"

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "catch.hpp"
#include "workspace.hpp"

using namespace cairn;
using cairn_test::ContainsSubstring;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// The result a handler returned, after checking the CallToolResult envelope.
json payload(const json& result, bool expect_error = false) {
  REQUIRE(result.at("isError") == expect_error);
  REQUIRE(result.at("content").size() == 1);
  REQUIRE(result.at("content")[0].at("type") == "text");
  const json parsed = json::parse(result.at("content")[0].at("text").get<std::string>());
  REQUIRE(parsed == result.at("structuredContent"));
  return parsed;
}

std::string error_text(const json& result) { return payload(result, true).at("error").get<std::string>(); }

}  // namespace

TEST_CASE("the six tools are listed with JSON Schemas") {
  cairn_test::TempWorkspace ws;
  WorkflowTools tools(StateFile(ws.path()), cairn_test::feature_template());
  std::set<std::string> names;
  for (const auto& t : tools.tools()) {
    names.insert(t.name);
    CHECK_FALSE(t.description.empty());
    CHECK(t.input_schema.at("type") == "object");
    CHECK(t.input_schema.at("additionalProperties") == false);
    CHECK(static_cast<bool>(t.handler));
  }
  CHECK(names == std::set<std::string>{"workflow_start", "workflow_set_tasks", "workflow_status", "workflow_advance",
                                       "workflow_context", "register_artefacts"});
  const json list = tools.list();
  REQUIRE(list.at("tools").size() == 6);
  CHECK(list.at("tools")[3].at("name") == "workflow_advance");
  CHECK(list.at("tools")[3].at("inputSchema").at("required") == json{"output"});
  CHECK(list.at("tools")[1].at("inputSchema").at("required") == json{"loop_id", "tasks"});
  CHECK(list.at("tools")[5].at("inputSchema").at("properties").at("paths").at("items") == json{{"type", "string"}});
}

TEST_CASE("the tools drive a workflow through the state file") {
  cairn_test::TempWorkspace ws;
  ws.write("plan.md", "# plan");
  WorkflowTools tools(StateFile(ws.path()), cairn_test::feature_template());

  CHECK(error_text(tools.call("workflow_status", json::object())) ==
        "the workflow is not started: call workflow_start first");
  CHECK_THAT(error_text(tools.call("workflow_advance", {{"output", "x"}})),
             ContainsSubstring("the workflow is not started"));

  json s = payload(tools.call("workflow_start", {{"summary", "CSV export"}}));
  CHECK(s.at("step") == "plan");
  CHECK(s.at("summary") == "CSV export");
  json r = payload(tools.call("register_artefacts", {{"paths", {"plan.md", "nope.md", 42}}}));
  const std::string root = fs::canonical(ws.path()).string();
  CHECK(r == json{{"registered", {root + "/plan.md"}},
                  {"duplicates", json::array()},
                  {"invalid", {"nope.md", "42"}},
                  {"invalid_reasons", {"cannot resolve the path: No such file or directory", "not a string"}}});
  s = payload(tools.call("workflow_advance", {{"output", "planned"}}));
  CHECK(s.at("step") == "define_tasks");
  CHECK(s.at("artefacts") == json{root + "/plan.md"});

  json set = payload(
      tools.call("workflow_set_tasks",
                 {{"loop_id", "implement"},
                  {"tasks", {{{"id", "b"}, {"title", "B"}, {"depends_on", {"a"}}}, {{"id", "a"}, {"title", "A"}}}}}));
  CHECK(set.at("tasks_set") == 2);
  CHECK(set.at("order") == json{"a", "b"});
  CHECK(set.at("status").at("step") == "define_tasks");

  s = payload(tools.call("workflow_advance", {{"output", "tasks set"}}));
  CHECK(s.at("task").at("id") == "a");
  s = payload(tools.call("workflow_advance", {{"output", "a code"}, {"success", false}}));
  CHECK(s.at("sub_step") == "code");
  CHECK(s.at("attempt") == 2);
  // A second server over the same workspace sees the same workflow.
  WorkflowTools other(StateFile(ws.path()), cairn_test::feature_template());
  CHECK(payload(other.call("workflow_status", json::object())) == s);
  CHECK(payload(other.call("workflow_start", json::object())) == s);

  const json ctx = payload(tools.call("workflow_context", json(nullptr)));
  CHECK(ctx == json{{"plan", "planned"}, {"define_tasks", "tasks set"}, {"implement.a.code", "a code"}});
}

TEST_CASE("bad arguments come back as error results that say what is wrong") {
  cairn_test::TempWorkspace ws;
  WorkflowTools tools(StateFile(ws.path()), cairn_test::feature_template());
  payload(tools.call("workflow_start", json::object()));
  const std::string before = json::parse(std::ifstream(ws.path() / "workflow-state.json")).dump();

  CHECK(error_text(tools.call("nope", json::object())) == "unknown tool 'nope'");
  CHECK(error_text(tools.call("workflow_start", {{"summary", 3}})) == "workflow_start: summary must be a string");
  CHECK(error_text(tools.call("workflow_start", json::array())) == "workflow_start: arguments must be a JSON object");
  // MCP clients may leave arguments out.
  CHECK(payload(tools.call("workflow_start", json(nullptr))).at("step") == "plan");
  CHECK(error_text(tools.call("workflow_advance", json(nullptr))) == "workflow_advance: output is required");
  CHECK(error_text(tools.call("workflow_status", {{"x", 1}})) == "workflow_status: unknown argument 'x'");
  CHECK(error_text(tools.call("workflow_advance", json::object())) == "workflow_advance: output is required");
  CHECK(error_text(tools.call("workflow_advance", {{"output", 1}})) == "workflow_advance: output must be a string");
  CHECK(error_text(tools.call("workflow_advance", {{"output", "x"}, {"success", "no"}})) ==
        "workflow_advance: success must be true or false");
  CHECK_THAT(
      error_text(tools.call("workflow_advance", {{"output", std::string(WorkflowTools::max_output_bytes + 1, 'x')}})),
      ContainsSubstring("more than the limit"));
  CHECK(error_text(tools.call("workflow_set_tasks", {{"tasks", json::array()}})) ==
        "workflow_set_tasks: loop_id is required");
  CHECK(error_text(tools.call("workflow_set_tasks", {{"loop_id", "implement"}})) ==
        "workflow_set_tasks: tasks is required");
  CHECK(error_text(tools.call("workflow_set_tasks", {{"loop_id", "implement"}, {"tasks", {1}}})) ==
        "workflow_set_tasks: tasks[0] must be an object");
  CHECK(error_text(tools.call("workflow_set_tasks", {{"loop_id", "implement"}, {"tasks", {{{"id", "a"}}}}})) ==
        "workflow_set_tasks: tasks[0].title must be a string");
  CHECK(error_text(tools.call("workflow_set_tasks",
                              {{"loop_id", "implement"}, {"tasks", {{{"id", "a"}, {"title", "A"}, {"prio", 1}}}}})) ==
        "workflow_set_tasks: tasks[0].prio is not a known field");
  CHECK(error_text(tools.call("workflow_set_tasks", {{"loop_id", "implement"},
                                                     {"tasks",
                                                      {{{"id", "a"}, {"title", "A"}, {"depends_on", {"b"}}},
                                                       {{"id", "b"}, {"title", "B"}, {"depends_on", {"a"}}}}}})) ==
        "set_tasks: the tasks of loop 'implement' form a dependency cycle: b -> a -> b");
  CHECK(error_text(tools.call("workflow_set_tasks", {{"loop_id", "plan"}, {"tasks", json::array()}})) ==
        "set_tasks: 'plan' is not a loop step of workflow 'feature' (loop steps: implement)");
  CHECK(error_text(tools.call("register_artefacts", {{"paths", "a"}})) == "register_artefacts: paths must be an array");
  CHECK_THAT(error_text(tools.call("register_artefacts", {{"paths", json(std::vector<int>(10001, 1))}})),
             ContainsSubstring("more than the limit of 10000"));
  // None of it changed the saved workflow.
  CHECK(json::parse(std::ifstream(ws.path() / "workflow-state.json")).dump() == before);
}

TEST_CASE("a corrupt state file is reported by every tool, never reset") {
  cairn_test::TempWorkspace ws;
  WorkflowTools tools(StateFile(ws.path()), cairn_test::feature_template());
  std::ofstream(ws.path() / "workflow-state.json") << "{broken";
  for (const char* name : {"workflow_start", "workflow_status", "workflow_context"}) {
    CHECK_THAT(error_text(tools.call(name, json::object())), ContainsSubstring("corrupt"));
  }
  CHECK_THAT(error_text(tools.call("workflow_advance", {{"output", "x"}})), ContainsSubstring("corrupt"));
  std::ifstream in(ws.path() / "workflow-state.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text == "{broken");
}

TEST_CASE("handlers stay valid after the WorkflowTools object is gone, and tell the observer") {
  cairn_test::TempWorkspace ws;
  ws.write("a.txt");
  std::vector<std::string> seen;
  std::vector<WorkflowTool> list;
  {
    WorkflowTools tools(StateFile(ws.path()), cairn_test::feature_template(),
                        [&seen](const ArtifactEvent& e) { seen.push_back(e.relative_path); });
    list = tools.tools();
  }
  payload(list[0].handler(json::object()));
  payload(list[5].handler({{"paths", {"a.txt", "a.txt"}}}));
  CHECK(seen == std::vector<std::string>{"a.txt"});
}

namespace {

// The workflow events a WorkflowTools reports, as "operation subject" lines (failed ones marked).
struct EventLog {
  std::vector<std::string> lines;
  std::shared_ptr<Observer> observer() {
    return observe_with([this](const Event& e) {
      if (e.kind != EventKind::workflow_transition && e.kind != EventKind::artifact_registered) return;
      lines.push_back(std::string(e.operation) + " " + std::string(e.subject) + (e.failed() ? " FAILED" : ""));
    });
  }
};

// workflow_start, a registration (one good, one missing path), a refused advance (no output) and an advance.
void drive(const WorkflowTools& tools) {
  payload(tools.call("workflow_start", {{"summary", "CSV export"}}));
  payload(tools.call("register_artefacts", {{"paths", {"plan.md", "nope.md"}}}));
  payload(tools.call("workflow_status", json::object()));  // reads: no event
  payload(tools.call("workflow_advance", {{"output", "planned"}}));
}

}  // namespace

TEST_CASE("WorkflowTools hands its event observer to the machines it loads, over a state file and over a run") {
  cairn_test::TempWorkspace ws;
  ws.write("plan.md", "# plan");
  EventLog file_log;
  WorkflowTools over_file(StateFile(ws.path()), cairn_test::feature_template(), {}, file_log.observer());
  drive(over_file);
  CHECK(file_log.lines == std::vector<std::string>{"start plan", "register_artifacts plan.md", "advance define_tasks"});

  // The same over a run of an in-memory journal; the artifact observer still hears of the registration too.
  cairn_test::TempWorkspace ws2;
  ws2.write("plan.md", "# plan");
  EventLog run_log;
  std::vector<std::string> registered;
  auto journal = std::make_shared<InMemoryRunJournal>();
  WorkflowTools over_run(
      RunWorkflowState(journal, "t1", "run-1", ws2.path()), cairn_test::feature_template(),
      [&registered](const ArtifactEvent& e) { registered.push_back(e.relative_path); }, run_log.observer());
  drive(over_run);
  CHECK(run_log.lines == file_log.lines);
  CHECK(registered == std::vector<std::string>{"plan.md"});

  // Without an event observer nothing changes (the old three-argument form).
  cairn_test::TempWorkspace ws3;
  ws3.write("plan.md", "# plan");
  WorkflowTools plain(StateFile(ws3.path()), cairn_test::feature_template());
  drive(plain);
}
