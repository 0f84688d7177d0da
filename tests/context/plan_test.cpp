// Plans: parsing the seed's task decomposition, running the subtasks in order with each using the outputs of the
// ones before, and stopping at the first failure with what finished kept.
#include <memory>
#include <string>
#include <vector>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/context/plan.hpp"
#include "catch.hpp"

using cairn::ExecutionContext;
using cairn::Plan;
using cairn::Tool;
using cairn::ToolRegistry;
using cairn::ToolResult;
using nlohmann::json;

namespace {

const char* const seed_plan = R"({
  "subtasks": [
    {"description": "Write server code to file", "tool": "file_write",
     "inputs": {"filepath": "/tmp/server.js", "content": "const express = require('express');"},
     "outputs": [{"name": "server_file", "type": "file", "description": "Server implementation file",
                  "purpose": "File containing the Express server code"}]},
    {"description": "Read configuration file", "tool": "file_read",
     "inputs": {"filepath": "/config/app.json"},
     "outputs": [{"name": "app_config", "type": "data", "description": "Application configuration data",
                  "purpose": "Configuration needed for server setup"}]},
    {"description": "Start the server", "tool": "execute_command",
     "inputs": {"command": "node", "args": ["@server_file"], "env": "@app_config"},
     "outputs": [{"name": "server_process", "type": "process", "description": "Running server process",
                  "purpose": "The active server handling requests"}]}
  ]
})";

// In-memory stand-ins that behave like the real tools would on these inputs; each records its calls.
struct Tools {
  ToolRegistry registry;
  std::shared_ptr<std::vector<json>> calls = std::make_shared<std::vector<json>>();
  std::shared_ptr<bool> fail_read = std::make_shared<bool>(false);

  Tools() {
    auto calls_ = calls;
    auto fail = fail_read;
    registry.add(Tool{"file_write", "Writes a file", json{{"type", "object"}, {"required", {"filepath", "content"}}},
                      [calls_](const json& in) {
                        calls_->push_back(in);
                        return ToolResult::ok(in["filepath"]);
                      }});
    registry.add(Tool{"file_read", "Reads JSON", json::object(), [calls_, fail](const json& in) {
                        calls_->push_back(in);
                        if (*fail) return ToolResult::failure("no such file: " + in["filepath"].get<std::string>());
                        return ToolResult::ok({{"port", 3000}, {"host", "localhost"}});
                      }});
    registry.add(Tool{"execute_command", "Runs a command", json::object(), [calls_](const json& in) {
                        calls_->push_back(in);
                        return ToolResult::ok({{"pid", 12345}, {"port", in["env"]["port"]}});
                      }});
  }
};

}  // namespace

TEST_CASE("a plan parses from the seed's task decomposition") {
  const Plan plan = Plan::parse(seed_plan);
  REQUIRE(plan.subtasks.size() == 3);
  REQUIRE(plan.subtasks[0].description == "Write server code to file");
  REQUIRE(plan.subtasks[0].call.tool == "file_write");
  REQUIRE(plan.subtasks[2].call.inputs["args"] == json{"@server_file"});
  REQUIRE(plan.subtasks[2].call.outputs[0].name == "server_process");
  REQUIRE(Plan::from_json(json(plan)).subtasks[1].call.outputs[0].purpose == "Configuration needed for server setup");
  REQUIRE(Plan::parse(R"({"subtasks": []})").subtasks.empty());
}

TEST_CASE("plan errors name the subtask and the field") {
  auto fails_with = [](const std::string& text, const std::string& message) {
    INFO(text);
    REQUIRE_THROWS_AS(Plan::parse(text), cairn::parse_error);
    REQUIRE_THROWS_WITH(Plan::parse(text), message);
  };
  fails_with("[]", "plan: expected a JSON object, got array");
  fails_with("{}", "plan: subtasks: missing");
  fails_with(R"({"subtasks": {}})", "plan: subtasks: expected an array, got object");
  fails_with(R"({"subtasks": ["x"]})", "plan: subtasks[0]: expected an object, got string");
  fails_with(R"({"subtasks": [{"tool": "t"}]})", "plan: subtasks[0].description: missing");
  fails_with(R"({"subtasks": [{"description": "d", "tool": "t"}, {"description": "d"}]})",
             "plan: subtasks[1].tool: missing");
  fails_with(R"({"subtasks": [{"description": "d", "tool": "t", "outputs": [{"name": "x", "description": "d"}]}]})",
             "plan: subtasks[0].outputs[0].type: missing");
  fails_with(R"({"subtasks": [{"description": "d", "tool": "t", "inputs": []}]})",
             "plan: subtasks[0].inputs: expected an object, got array");
  REQUIRE_THROWS_AS(Plan::parse("{\"subtasks\": ["), cairn::parse_error);

  json big = {{"subtasks", json::array()}};
  for (int i = 0; i < 1001; ++i) big["subtasks"].push_back({{"description", "d"}, {"tool", "t"}});
  REQUIRE_THROWS_AS(Plan::from_json(big), cairn::limit_exceeded);
  REQUIRE_THROWS_WITH(Plan::from_json(big), "plan: subtasks: 1001 subtasks, more than the limit of 1000");

  json deep = json::array();
  json* cur = &deep;
  for (int i = 1; i < 100000; ++i) {
    cur->push_back(json::array());
    cur = &cur->back();
  }
  json hostile = {{"subtasks", json::array()}};
  hostile["subtasks"].push_back({{"description", "d"}, {"tool", "t"}});
  hostile["subtasks"][0]["inputs"] = {{"x", std::move(deep)}};
  REQUIRE_THROWS_WITH(Plan::from_json(hostile), "plan: JSON nesting is deeper than the limit of 256 levels");
}

TEST_CASE("run_plan runs the subtasks in order, each using the outputs before it") {
  ExecutionContext ctx(std::make_shared<cairn::InMemoryArtifactStore>(), "acme");
  Tools tools;
  const auto result = cairn::run_plan(Plan::parse(seed_plan), ctx, tools.registry);
  REQUIRE(result.success);
  REQUIRE(result.error.empty());
  REQUIRE_FALSE(result.failed_step);
  REQUIRE(result.steps.size() == 3);
  REQUIRE(tools.calls->size() == 3);
  REQUIRE((*tools.calls)[2] ==
          json{{"command", "node"}, {"args", {"/tmp/server.js"}}, {"env", {{"port", 3000}, {"host", "localhost"}}}});
  REQUIRE(*ctx.get_artifact_value("server_file") == "/tmp/server.js");
  REQUIRE(*ctx.get_artifact_value("server_process") == json{{"pid", 12345}, {"port", 3000}});
  REQUIRE(ctx.get_artifact("server_process")->metadata()["input_artifacts"] == json{"server_file", "app_config"});
  std::vector<std::string> log;
  for (const auto& m : ctx.messages()) log.push_back(m.content);
  REQUIRE(log == std::vector<std::string>{"Executed file_write and stored output as @server_file",
                                          "Executed file_read and stored output as @app_config",
                                          "Executed execute_command and stored output as @server_process"});
}

TEST_CASE("a failing subtask stops the plan, the finished subtasks' artifacts stay") {
  ExecutionContext ctx(std::make_shared<cairn::InMemoryArtifactStore>(), "acme");
  Tools tools;
  *tools.fail_read = true;
  const auto result = cairn::run_plan(Plan::parse(seed_plan), ctx, tools.registry);
  REQUIRE_FALSE(result.success);
  REQUIRE(result.failed_step == 1u);
  REQUIRE(result.error == "no such file: /config/app.json");
  REQUIRE(result.steps.size() == 2);
  REQUIRE(result.steps[0].success);
  REQUIRE_FALSE(result.steps[1].success);
  REQUIRE(tools.calls->size() == 2);  // the third subtask never ran
  REQUIRE(*ctx.get_artifact_value("server_file") == "/tmp/server.js");
  REQUIRE_FALSE(ctx.has_artifact("app_config"));
  REQUIRE_FALSE(ctx.has_artifact("server_process"));
  REQUIRE(ctx.message_count() == 3);
  REQUIRE(ctx.message(1).content == "Tool file_read failed: no such file: /config/app.json");
  REQUIRE(ctx.message(2).role == cairn::Role::system);
  REQUIRE(ctx.message(2).content ==
          "Plan stopped at subtask 1 (Read configuration file): no such file: /config/app.json");
}

TEST_CASE("a subtask whose call is bad at run time stops the plan with the error") {
  ExecutionContext ctx(std::make_shared<cairn::InMemoryArtifactStore>(), "acme");
  Tools tools;
  // The pointer is only checked when the subtask runs: the first subtask's output stays.
  const auto plan =
      Plan::from_json({{"subtasks",
                        {{{"description", "write"},
                          {"tool", "file_write"},
                          {"inputs", {{"filepath", "/a"}, {"content", "x"}}},
                          {"outputs", {{{"name", "f"}, {"type", "file"}, {"description", "f"}}}}},
                         {{"description", "use"}, {"tool", "execute_command"}, {"inputs", {{"env", "@f#/port"}}}}}}});
  const auto result = cairn::run_plan(plan, ctx, tools.registry);
  REQUIRE_FALSE(result.success);
  REQUIRE(result.failed_step == 1u);
  REQUIRE(result.error == "Artifact part not found: @f#/port at /env");
  REQUIRE(result.steps.size() == 2);
  REQUIRE(ctx.has_artifact("f"));
  REQUIRE(ctx.message(ctx.message_count() - 1).content ==
          "Plan stopped at subtask 1 (use): Artifact part not found: @f#/port at /env");
}

TEST_CASE("a plan that cannot work does not start: unknown tool or dangling reference") {
  ExecutionContext ctx(std::make_shared<cairn::InMemoryArtifactStore>(), "acme");
  Tools tools;
  json plan = json::parse(seed_plan);
  plan["subtasks"][2]["inputs"]["args"] = {"@server_fiel"};
  auto result = cairn::run_plan(Plan::from_json(plan), ctx, tools.registry);
  REQUIRE_FALSE(result.success);
  REQUIRE(result.failed_step == 2u);
  REQUIRE(result.error == "@server_fiel is neither in the context nor an output of an earlier subtask");
  REQUIRE(result.steps.empty());
  REQUIRE(tools.calls->empty());
  REQUIRE(ctx.artifact_count() == 0);
  REQUIRE(ctx.message(0).content ==
          "Plan stopped at subtask 2 (Start the server): @server_fiel is neither in the context nor an output of an "
          "earlier subtask");

  plan = json::parse(seed_plan);
  plan["subtasks"][1]["tool"] = "file_reader";
  result = cairn::run_plan(Plan::from_json(plan), ctx, tools.registry);
  REQUIRE(result.failed_step == 1u);
  REQUIRE(result.error == "Tool not found: file_reader");
  REQUIRE(tools.calls->empty());

  // A reference to something already in the context is fine.
  ctx.add_artifact("server_fiel", cairn::ArtifactRecord::builder().type("file").description("f").value("/f"));
  plan = json::parse(seed_plan);
  plan["subtasks"][2]["inputs"]["args"] = {"@server_fiel"};
  REQUIRE_FALSE(cairn::check_plan(Plan::from_json(plan), ctx, tools.registry));
  REQUIRE(cairn::run_plan(Plan::from_json(plan), ctx, tools.registry).success);
}
