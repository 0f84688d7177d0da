#include "cairn/workflow/state.hpp"

#include "catch.hpp"

using namespace cairn;
using nlohmann::json;

TEST_CASE("a state round-trips through JSON with every field") {
  WorkflowState s;
  s.status = WorkflowStatus::running;
  s.step = "implement";
  s.step_type = StepType::loop;
  s.task = TaskPosition{1, "b", "Bee"};
  s.sub_step = "test";
  s.attempt = 3;
  s.tasks["implement"] = {{"a", "Ay", std::string("first"), {}, TaskStatus::done},
                          {"b", "Bee", std::nullopt, {"a"}, TaskStatus::in_progress}};
  s.outputs = {{"plan", "p"}, {"implement.a.code", "c"}};
  s.summary = "sum";
  s.artifacts = {"/w/a.txt"};
  const json j = s;
  CHECK(j.at("task") == json{{"index", 1}, {"id", "b"}, {"title", "Bee"}});
  CHECK(j.at("tasks").at("implement")[1] ==
        json{{"id", "b"}, {"title", "Bee"}, {"status", "in_progress"}, {"depends_on", {"a"}}});
  CHECK(j.at("tasks").at("implement")[0].at("description") == "first");
  const auto back = workflow_state_from_json(j);
  CHECK(back == s);

  WorkflowState failed;
  failed.status = WorkflowStatus::failed;
  failed.step = "x";
  failed.ralph_iteration = 2;
  failed.step_type = StepType::ralph;
  failed.failure_reason = "why";
  CHECK(workflow_state_from_json(json(failed)) == failed);
}

TEST_CASE("reading a state names the bad field") {
  WorkflowState s;
  s.step = "a";
  const json good = s;
  auto err = [&](const std::function<void(json&)>& edit) {
    json k = good;
    edit(k);
    try {
      workflow_state_from_json(k, "f.json");
    } catch (const state_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(err([](json& k) { k = 5; }) == "f.json: must be a JSON object");
  CHECK(err([](json& k) { k["step_type"] = "loopy"; }) == "f.json: step_type must be one of action, loop, ralph");
  CHECK(err([](json& k) { k["task"] = 1; }) == "f.json: task must be an object");
  CHECK(err([](json& k) { k["task"] = {{"id", "a"}, {"title", "t"}}; }) == "f.json: task.index is missing");
  CHECK(err([](json& k) {
          k["task"] = {{"index", -1}, {"id", "a"}, {"title", "t"}};
        }) == "f.json: task.index must be an integer of at least 0");
  CHECK(err([](json& k) { k["ralph_iteration"] = 0; }) == "f.json: ralph_iteration must be an integer of at least 1");
  CHECK(err([](json& k) {
          k["tasks"] = {{"l", {{{"id", "a"}, {"title", "t"}, {"status", "done"}, {"depends_on", {1}}}}}};
        }) == "f.json: tasks.l[0].depends_on must be an array of task ids");
  CHECK(err([](json& k) { k["tasks"] = {{"l", {1}}}; }) == "f.json: tasks.l[0] must be an object");
  CHECK(err([](json& k) { k["summary"] = false; }) == "f.json: summary must be a string");
  CHECK(err([](json& k) { k["artefacts"] = "a"; }) == "f.json: artefacts must be an array of paths");
  CHECK(err([](json& k) { k.erase("artefacts"); }) == "no error");
  CHECK(to_string(TaskStatus::blocked) == std::string("blocked"));
  CHECK(to_string(WorkflowStatus::complete) == std::string("complete"));
}
