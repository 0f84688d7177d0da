// Tools: the registry, ToolCall parsing with its error texts, and execute() with the output-value rule, the
// metadata, the log lines and the failure path, against a real InMemoryArtifactStore.
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/context/execution_context.hpp"
#include "cairn/context/tool.hpp"
#include "catch.hpp"

using cairn::ArtifactRecord;
using cairn::ExecutionContext;
using cairn::Role;
using cairn::Tool;
using cairn::ToolCall;
using cairn::ToolRegistry;
using cairn::ToolResult;
using nlohmann::json;

namespace {

// A tool that returns what the test puts in `next` and remembers what it was given.
struct Scripted {
  std::shared_ptr<ToolResult> next = std::make_shared<ToolResult>();
  std::shared_ptr<json> seen = std::make_shared<json>();

  Tool tool(std::string name, json schema = json{{"type", "object"}}) const {
    auto next_ = next;
    auto seen_ = seen;
    return Tool{std::move(name), "scripted", std::move(schema), [next_, seen_](const json& inputs) {
                  *seen_ = inputs;
                  return *next_;
                }};
  }
};

std::size_t stored_count(const cairn::ArtifactStore& store) { return store.list("acme").items.size(); }

ToolCall call(const std::string& text) { return ToolCall::parse(text); }

}  // namespace

TEST_CASE("ToolRegistry registers, finds and lists tools, rejecting bad ones") {
  ToolRegistry reg;
  Scripted s;
  reg.add(s.tool("file_write"));
  reg.add(s.tool("file.read-v2"));
  REQUIRE(reg.size() == 2);
  REQUIRE(reg.find("file_write")->name == "file_write");
  REQUIRE(reg.find("nope") == nullptr);
  const auto list = reg.list();
  REQUIRE(list.size() == 2);
  REQUIRE(list[0]->name == "file_write");
  REQUIRE(list[1]->name == "file.read-v2");

  REQUIRE_THROWS_WITH(reg.add(s.tool("file_write")), "tool 'file_write': a tool of that name is registered already");
  REQUIRE_THROWS_WITH(reg.add(s.tool("bad name")),
                      "tool name: 'bad name' is not valid (expected 1 to 128 characters of [A-Za-z0-9_.-])");
  REQUIRE_THROWS_AS(reg.add(s.tool("")), cairn::invalid_argument);
  REQUIRE_THROWS_AS(reg.add(s.tool(std::string(129, 'a'))), cairn::invalid_argument);
  REQUIRE_THROWS_WITH(reg.add(Tool{"nofn", "d", json::object(), nullptr}), "tool 'nofn': function must be set");
  REQUIRE_THROWS_WITH(reg.add(s.tool("schema", json::array())),
                      "tool 'schema': input_schema must be a JSON object, got array");
  REQUIRE(reg.size() == 2);
}

TEST_CASE("ToolCall parses a model's call, fenced or not") {
  const std::string text = R"({"tool": "execute_command",
    "inputs": {"command": "node", "args": ["@server_file"], "env": "@app_config"},
    "outputs": [{"name": "server_process", "type": "process", "description": "Running server process",
                 "purpose": "The active server handling requests"},
                {"name": "log", "type": "file", "description": "Server log"}],
    "reasoning": "ignored"})";
  for (const std::string& t : {text, "```json\n" + text + "\n```", "\n  ```\n" + text + "```  \n"}) {
    const ToolCall c = ToolCall::parse(t);
    REQUIRE(c.tool == "execute_command");
    REQUIRE(c.inputs == json{{"command", "node"}, {"args", {"@server_file"}}, {"env", "@app_config"}});
    REQUIRE(c.outputs.size() == 2);
    REQUIRE(c.outputs[0].name == "server_process");
    REQUIRE(c.outputs[0].type == cairn::ArtifactType::process);
    REQUIRE(c.outputs[0].description == "Running server process");
    REQUIRE(c.outputs[0].purpose == "The active server handling requests");
    REQUIRE(c.outputs[1].purpose.empty());
    REQUIRE(json(c)["outputs"][1]["purpose"] == "Server log");
    REQUIRE(ToolCall::from_json(json(c)).outputs[1].name == "log");
  }
  const ToolCall bare = ToolCall::from_json({{"tool", "t"}, {"inputs", nullptr}, {"outputs", nullptr}});
  REQUIRE(bare.inputs == json::object());
  REQUIRE(bare.outputs.empty());
  REQUIRE(ToolCall::from_json({{"tool", "t"}}).outputs.empty());
}

TEST_CASE("ToolCall errors say what is missing or mistyped, and where") {
  auto fails_with = [](const std::string& text, const std::string& message) {
    INFO(text);
    REQUIRE_THROWS_AS(ToolCall::parse(text), cairn::parse_error);
    REQUIRE_THROWS_WITH(ToolCall::parse(text), message);
  };
  fails_with("[1]", "tool call: expected a JSON object, got array");
  fails_with("{}", "tool call: tool: missing");
  fails_with(R"({"tool": null})", "tool call: tool: missing");
  fails_with(R"({"tool": 3})", "tool call: tool: expected a string, got number");
  fails_with(R"({"tool": "a b"})",
             "tool call: tool: 'a b' is not a valid tool name (expected 1 to 128 characters of [A-Za-z0-9_.-])");
  fails_with(R"({"tool": "t", "inputs": "x"})", "tool call: inputs: expected an object, got string");
  fails_with(R"({"tool": "t", "outputs": {}})", "tool call: outputs: expected an array, got object");
  fails_with(R"({"tool": "t", "outputs": [7]})", "tool call: outputs[0]: expected an object, got number");
  fails_with(R"({"tool": "t", "outputs": [{"name": "a", "type": "data", "description": "d"}, {"name": 5}]})",
             "tool call: outputs[1].name: expected a string, got number");
  fails_with(R"({"tool": "t", "outputs": [{"type": "data", "description": "d"}]})",
             "tool call: outputs[0].name: missing");
  fails_with(R"({"tool": "t", "outputs": [{"name": "a b", "type": "data", "description": "d"}]})",
             "tool call: outputs[0].name: 'a b' is not a valid artifact name (expected [A-Za-z_][A-Za-z0-9_-]{0,127})");
  fails_with(R"({"tool": "t", "outputs": [{"name": "a", "type": "data", "description": "d"},
                                          {"name": "a", "type": "data", "description": "d"}]})",
             "tool call: outputs[1].name: 'a' is used by outputs[0] already");
  fails_with(R"({"tool": "t", "outputs": [{"name": "a", "description": "d"}]})", "tool call: outputs[0].type: missing");
  fails_with(R"({"tool": "t", "outputs": [{"name": "a", "type": "File", "description": "d"}]})",
             "tool call: outputs[0].type: 'File' is not a valid artifact type (expected a lowercase token matching "
             "[a-z][a-z0-9_-]{0,63})");
  fails_with(R"({"tool": "t", "outputs": [{"name": "a", "type": "data"}]})",
             "tool call: outputs[0].description: missing");
  fails_with(R"({"tool": "t", "outputs": [{"name": "a", "type": "data", "description": ""}]})",
             "tool call: outputs[0].description: must not be empty");
  fails_with(R"({"tool": "t", "outputs": [{"name": "a", "type": "data", "description": "d", "purpose": 1}]})",
             "tool call: outputs[0].purpose: expected a string, got number");
  REQUIRE_THROWS_WITH(ToolCall::parse("{\"tool\": "), cairn_test::ContainsSubstring("tool call: invalid JSON: "));
  REQUIRE_THROWS_AS(ToolCall::parse("not json at all"), cairn::parse_error);
  REQUIRE_THROWS_AS(ToolCall::parse(std::string(300, '[') + std::string(300, ']')), cairn::limit_exceeded);
  cairn::JsonLimits small;
  small.max_bytes = 10;
  REQUIRE_THROWS_AS(ToolCall::parse(R"({"tool": "a_long_tool_name"})", small), cairn::limit_exceeded);
}

TEST_CASE("execute resolves inputs, runs the tool and stores one record per output") {
  auto store = std::make_shared<cairn::InMemoryArtifactStore>();
  ExecutionContext ctx(store, "acme");
  ctx.add_artifact("server_file", ArtifactRecord::builder().type("file").description("Server").value("/tmp/s.js"));
  ctx.add_artifact("app_config", ArtifactRecord::builder().type("config").description("Config").value({{"port", 1}}));
  ToolRegistry reg;
  Scripted s;
  reg.add(s.tool("execute_command"));
  *s.next = ToolResult::ok({{"pid", 4242}, {"exit_code", 0}}, {{"duration_ms", 12}});

  const auto result = cairn::execute(call(R"({"tool": "execute_command",
      "inputs": {"command": "node", "args": ["@server_file"], "env": "@app_config", "port": "@app_config#/port"},
      "outputs": [{"name": "server_process", "type": "process", "description": "Running server process",
                   "purpose": "The active server"}]})"),
                                     ctx, reg);
  REQUIRE(result.success);
  REQUIRE(result.error.empty());
  REQUIRE(result.tool == "execute_command");
  REQUIRE(*s.seen == json{{"command", "node"}, {"args", {"/tmp/s.js"}}, {"env", {{"port", 1}}}, {"port", 1}});
  REQUIRE(result.outputs.size() == 1);
  REQUIRE(result.outputs[0].name == "server_process");

  const auto rec = ctx.get_artifact("server_process");
  REQUIRE(rec == result.outputs[0].record);
  REQUIRE(store->fetch(rec->id(), "acme") == rec);
  REQUIRE(rec->tenant_id() == "acme");
  REQUIRE(rec->type() == cairn::ArtifactType::process);
  // data has no member named server_process, so the whole data is the value.
  REQUIRE(rec->value() == json{{"pid", 4242}, {"exit_code", 0}});
  REQUIRE(rec->description() == "Running server process");
  REQUIRE(rec->purpose() == "The active server");
  REQUIRE(rec->created_at() > 0);
  REQUIRE(rec->metadata() == json{{"tool_name", "execute_command"},
                                  {"success", true},
                                  {"input_artifacts", {"server_file", "app_config"}},
                                  {"duration_ms", 12}});
  REQUIRE(ctx.message_count() == 1);
  REQUIRE(ctx.message(0).role == Role::assistant);
  REQUIRE(ctx.message(0).content == "Executed execute_command and stored output as @server_process");
}

TEST_CASE("the output value is data[name] when data has that member, even a falsy one, else data") {
  ExecutionContext ctx(std::make_shared<cairn::InMemoryArtifactStore>(), "acme");
  ToolRegistry reg;
  Scripted s;
  reg.add(s.tool("t"));
  const auto outputs = [](std::vector<std::string> names) {
    json o = json::array();
    for (const auto& n : names) o.push_back({{"name", n}, {"type", "data"}, {"description", "output " + n}});
    return o;
  };
  *s.next = ToolResult::ok({{"zero", 0}, {"no", false}, {"blank", ""}, {"list", json::array()}, {"other", 1}});
  const json five = outputs({"zero", "no", "blank", "list", "whole"});
  auto r = cairn::execute(ToolCall::from_json({{"tool", "t"}, {"outputs", five}}), ctx, reg);
  REQUIRE(r.success);
  REQUIRE(*ctx.get_artifact_value("zero") == 0);
  REQUIRE(*ctx.get_artifact_value("no") == false);
  REQUIRE(*ctx.get_artifact_value("blank") == "");
  REQUIRE(*ctx.get_artifact_value("list") == json::array());
  REQUIRE(*ctx.get_artifact_value("whole") == s.next->data);
  REQUIRE(ctx.message_count() == 5);
  REQUIRE(ctx.message(4).content == "Executed t and stored output as @whole");

  *s.next = ToolResult::ok("just a string");
  r = cairn::execute(ToolCall::from_json({{"tool", "t"}, {"outputs", outputs({"a", "b"})}}), ctx, reg);
  REQUIRE(*ctx.get_artifact_value("a") == "just a string");
  REQUIRE(*ctx.get_artifact_value("b") == "just a string");

  *s.next = ToolResult::ok(false);
  (void)cairn::execute(ToolCall::from_json({{"tool", "t"}, {"outputs", outputs({"f"})}}), ctx, reg);
  REQUIRE(*ctx.get_artifact_value("f") == false);

  // The tool's metadata is spread last, as in DESIGN.md: its keys win.
  *s.next = ToolResult::ok(1, {{"tool_name", "spoofed"}, {"size", 3}});
  (void)cairn::execute(ToolCall::from_json({{"tool", "t"}, {"outputs", outputs({"m"})}}), ctx, reg);
  REQUIRE(ctx.get_artifact("m")->metadata()["tool_name"] == "spoofed");
  REQUIRE(ctx.get_artifact("m")->metadata()["size"] == 3);
  REQUIRE(ctx.get_artifact("m")->metadata()["input_artifacts"] == json::array());

  // No outputs: the tool runs, nothing is stored or logged.
  const auto before = ctx.message_count();
  r = cairn::execute(ToolCall::from_json({{"tool", "t"}}), ctx, reg);
  REQUIRE(r.success);
  REQUIRE(r.outputs.empty());
  REQUIRE(ctx.message_count() == before);
}

TEST_CASE("a failed tool stores nothing, logs the failure and loses nothing already stored") {
  auto store = std::make_shared<cairn::InMemoryArtifactStore>();
  ExecutionContext ctx(store, "acme");
  ctx.add_artifact("kept", ArtifactRecord::builder().type("data").description("kept").value(1));
  ToolRegistry reg;
  Scripted s;
  reg.add(s.tool("t"));
  reg.add(Tool{"thrower", "throws", json::object(),
               [](const json&) -> ToolResult { throw std::runtime_error("disk full"); }});
  reg.add(Tool{"odd_thrower", "throws an int", json::object(), [](const json&) -> ToolResult { throw 42; }});
  const json outputs = json::array({{{"name", "kept"}, {"type", "data"}, {"description", "would replace"}},
                                    {{"name", "fresh"}, {"type", "data"}, {"description", "new"}}});

  auto check_nothing_changed = [&](std::size_t messages) {
    REQUIRE(*ctx.get_artifact_value("kept") == 1);
    REQUIRE_FALSE(ctx.has_artifact("fresh"));
    REQUIRE(stored_count(*store) == 1);
    REQUIRE(ctx.message_count() == messages);
  };

  *s.next = ToolResult::failure("permission denied");
  auto r = cairn::execute(ToolCall::from_json({{"tool", "t"}, {"outputs", outputs}}), ctx, reg);
  REQUIRE_FALSE(r.success);
  REQUIRE(r.error == "permission denied");
  REQUIRE(r.outputs.empty());
  check_nothing_changed(1);
  REQUIRE(ctx.message(0).role == Role::tool);
  REQUIRE(ctx.message(0).content == "Tool t failed: permission denied");

  *s.next = ToolResult{false, json{{"kept", 5}}, json::object(), ""};
  r = cairn::execute(ToolCall::from_json({{"tool", "t"}, {"outputs", outputs}}), ctx, reg);
  REQUIRE(ctx.message(1).content == "Tool t failed: no reason given");
  check_nothing_changed(2);

  r = cairn::execute(ToolCall::from_json({{"tool", "thrower"}, {"outputs", outputs}}), ctx, reg);
  REQUIRE_FALSE(r.success);
  REQUIRE(r.error == "the tool threw: disk full");
  REQUIRE(ctx.message(2).content == "Tool thrower failed: the tool threw: disk full");
  check_nothing_changed(3);

  r = cairn::execute(ToolCall::from_json({{"tool", "odd_thrower"}, {"outputs", outputs}}), ctx, reg);
  REQUIRE(r.error == "the tool threw an exception that is not a std::exception");
  check_nothing_changed(4);

  // Success without a value for an output fails the call as a whole: not even the outputs that had values.
  *s.next = ToolResult::ok({{"kept", 2}, {"fresh", nullptr}});
  r = cairn::execute(ToolCall::from_json({{"tool", "t"}, {"outputs", outputs}}), ctx, reg);
  REQUIRE_FALSE(r.success);
  REQUIRE(r.error == "the tool returned no value for output 'fresh'");
  check_nothing_changed(5);
  *s.next = ToolResult::ok(nullptr);
  r = cairn::execute(ToolCall::from_json({{"tool", "t"}, {"outputs", outputs}}), ctx, reg);
  REQUIRE(r.error == "the tool returned no value for output 'kept'");
  check_nothing_changed(6);

  *s.next = ToolResult::ok(1, json::array());
  r = cairn::execute(ToolCall::from_json({{"tool", "t"}, {"outputs", outputs}}), ctx, reg);
  REQUIRE(r.error == "the tool returned metadata that is not an object (array)");
  check_nothing_changed(7);
}

TEST_CASE("execute throws before running anything for a bad call, and changes nothing") {
  auto store = std::make_shared<cairn::InMemoryArtifactStore>();
  ExecutionContext ctx(store, "acme");
  ToolRegistry reg;
  Scripted s;
  reg.add(s.tool("needs_path", json{{"type", "object"}, {"required", {"path"}}}));
  *s.next = ToolResult::ok(1);
  const json out = json::array({{{"name", "o"}, {"type", "data"}, {"description", "d"}}});

  REQUIRE_THROWS_AS(cairn::execute(ToolCall::from_json({{"tool", "missing_tool"}}), ctx, reg), cairn::not_found);
  REQUIRE_THROWS_WITH(cairn::execute(ToolCall::from_json({{"tool", "missing_tool"}}), ctx, reg),
                      "Tool not found: missing_tool");
  REQUIRE_THROWS_AS(
      (void)cairn::execute(
          ToolCall::from_json({{"tool", "needs_path"}, {"inputs", {{"path", "@ghost"}}}, {"outputs", out}}), ctx, reg),
      cairn::artifact_not_found);
  REQUIRE_THROWS_WITH(
      (void)cairn::execute(ToolCall::from_json({{"tool", "needs_path"}, {"inputs", {{"other", 1}}}, {"outputs", out}}),
                           ctx, reg),
      "needs_path: input (top level): required: missing required property 'path'");
  ToolCall hand_made{"needs_path", {{"path", "/x"}}, {}};
  hand_made.outputs.push_back(cairn::OutputSpec{"bad name", cairn::ArtifactType::data, "d", ""});
  REQUIRE_THROWS_WITH(cairn::execute(hand_made, ctx, reg),
                      "needs_path: output name 'bad name' is not a valid artifact name");
  hand_made.outputs[0].name = "o";
  hand_made.outputs.push_back(hand_made.outputs[0]);
  REQUIRE_THROWS_WITH(cairn::execute(hand_made, ctx, reg), "needs_path: output name 'o' is given twice");
  REQUIRE(s.seen->is_null());  // the tool never ran
  REQUIRE(ctx.message_count() == 0);
  REQUIRE(ctx.artifact_count() == 0);
  REQUIRE(stored_count(*store) == 0);

  hand_made.outputs.pop_back();
  REQUIRE(cairn::execute(hand_made, ctx, reg).success);
  REQUIRE(*ctx.get_artifact_value("o") == 1);
}

TEST_CASE("execute applies the resolve options to the inputs and to input_artifacts alike") {
  ExecutionContext ctx(std::make_shared<cairn::InMemoryArtifactStore>(), "acme");
  ctx.add_artifact("leaf", ArtifactRecord::builder().type("data").description("leaf").value(7));
  ToolRegistry reg;
  Scripted s;
  reg.add(s.tool("t"));
  *s.next = ToolResult::ok(1);
  json inputs = json::object();
  json* cur = &inputs;
  for (int i = 0; i < 299; ++i) cur = &((*cur)["x"] = json::object());
  (*cur)["ref"] = "@leaf";
  const ToolCall deep{"t", inputs, {cairn::OutputSpec{"o", cairn::ArtifactType::data, "d", ""}}};
  REQUIRE_THROWS_AS(cairn::execute(deep, ctx, reg), cairn::limit_exceeded);  // 300 levels > the default 256
  REQUIRE(s.seen->is_null());
  cairn::ResolveOptions options;
  options.max_depth = 300;
  const auto r = cairn::execute(deep, ctx, reg, options);
  REQUIRE(r.success);
  REQUIRE(ctx.get_artifact("o")->metadata()["input_artifacts"] == json{"leaf"});
}

TEST_CASE("ToolCall::from_json rejects a value nested too deep without recursing") {
  json inputs = json::array();
  json* cur = &inputs;
  for (int i = 1; i < 100000; ++i) {
    cur->push_back(json::array());
    cur = &cur->back();
  }
  json j = {{"tool", "t"}};
  j["inputs"] = std::move(inputs);
  REQUIRE_THROWS_AS(ToolCall::from_json(j), cairn::limit_exceeded);
  REQUIRE_THROWS_WITH(ToolCall::from_json(j), "tool call: JSON nesting is deeper than the limit of 256 levels");
  cairn::JsonLimits limits;
  limits.max_depth = 3;
  REQUIRE(ToolCall::from_json({{"tool", "t"}, {"inputs", {{"a", {1}}}}}, limits).inputs == json{{"a", {1}}});
  REQUIRE_THROWS_AS(ToolCall::from_json({{"tool", "t"}, {"inputs", {{"a", {{1}}}}}}, limits), cairn::limit_exceeded);
}

TEST_CASE("a tool call may carry an id, a malformed one is a located error") {
  const auto call = ToolCall::parse(R"({"id": "call_7Xk", "tool": "t", "inputs": {}})");
  CHECK(call.id == "call_7Xk");
  CHECK(nlohmann::json(call).at("id") == "call_7Xk");
  CHECK(ToolCall::parse(R"({"tool": "t"})").id.empty());
  CHECK(ToolCall::parse(R"({"tool": "t", "id": null})").id.empty());
  CHECK_THROWS_WITH(ToolCall::parse(R"({"tool": "t", "id": 7})"), "tool call: id: expected a string, got number");
  CHECK_THROWS_WITH(ToolCall::parse(R"({"tool": "t", "id": ""})"),
                    "tool call: id: '' is not a valid call id (1 to 256 bytes of printable UTF-8)");
  CHECK_THROWS_AS(ToolCall::parse(R"({"tool": "t", "id": "a\nb"})"), cairn::parse_error);
}
