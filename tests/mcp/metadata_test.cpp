// The tools' metadata over mcp::Server: title, annotations and outputSchema in each revision that has them, no bare
// {} schema anywhere, and every structuredContent of a whole workflow and of every artifact tool checked against its
// tool's outputSchema with cairn's own JSON Schema validator (cairn/context/schema.hpp).
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "../workflow/workspace.hpp"
#include "cairn/artifact/memory_store.hpp"
#include "cairn/context/schema.hpp"
#include "cairn/mcp/artifact_tools.hpp"
#include "cairn/mcp/server.hpp"
#include "catch.hpp"

using cairn::mcp::Server;
using nlohmann::json;

namespace {

std::vector<cairn::mcp::Tool> all_tools(const cairn_test::TempWorkspace& ws) {
  cairn::WorkflowTools wf(cairn::StateFile(ws.path()), cairn_test::feature_template());
  cairn::mcp::ArtifactTools art(std::make_shared<cairn::InMemoryArtifactStore>(), "acme");
  auto tools = wf.tools();
  tools.insert(tools.end(), art.tools().begin(), art.tools().end());
  return tools;
}

json request(const json& id, const std::string& method, const json& params = json::object()) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}};
}

Server ready_server(std::vector<cairn::mcp::Tool> tools, const std::string& version) {
  Server s(std::move(tools));
  const json params = {{"protocolVersion", version}, {"capabilities", json::object()}};
  const auto r = s.handle_line(request(1, "initialize", params).dump());
  REQUIRE(r);
  REQUIRE(r->at("result").at("protocolVersion") == version);
  return s;
}

json tools_list(Server& s) {
  const auto r = s.handle_line(request("l", "tools/list").dump());
  REQUIRE(r);
  return r->at("result").at("tools");
}

// Every subschema reachable through properties, items, additionalProperties and anyOf: none may be {} (`true`,
// which accepts anything and which strict clients flag).
void check_no_bare_schema(const json& schema, const std::string& where) {
  INFO(where);
  REQUIRE(schema.is_object());
  CHECK_FALSE(schema.empty());
  if (const auto p = schema.find("properties"); p != schema.end()) {
    for (const auto& item : p->items()) check_no_bare_schema(item.value(), where + "/properties/" + item.key());
  }
  for (const char* key : {"items", "additionalProperties"}) {
    if (const auto s = schema.find(key); s != schema.end() && s->is_object()) {
      check_no_bare_schema(*s, where + "/" + key);
    }
  }
  if (const auto any = schema.find("anyOf"); any != schema.end()) {
    for (std::size_t i = 0; i < any->size(); ++i) {
      check_no_bare_schema((*any)[i], where + "/anyOf/" + std::to_string(i));
    }
  }
}

}  // namespace

TEST_CASE("tools/list gives every tool a title, annotations and an outputSchema from 2025-06-18") {
  cairn_test::TempWorkspace ws;
  for (const std::string v : {"2025-06-18", "2025-11-25"}) {
    auto s = ready_server(all_tools(ws), v);
    const auto tools = tools_list(s);
    REQUIRE(tools.size() == 12);
    for (const auto& t : tools) {
      INFO(v << " " << t.dump());
      CHECK_FALSE(t.at("title").get<std::string>().empty());
      CHECK(t.at("outputSchema").at("type") == "object");
      const auto& a = t.at("annotations");
      for (const char* hint : {"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}) {
        CHECK(a.at(hint).is_boolean());
      }
      CHECK(a.at("openWorldHint") == false);  // the workspace and the store are a closed world
      check_no_bare_schema(t.at("inputSchema"), t.at("name").get<std::string>() + " inputSchema");
      check_no_bare_schema(t.at("outputSchema"), t.at("name").get<std::string>() + " outputSchema");
      // Both are schemas cairn's validator compiles (a build without RE2 leaves `pattern` unchecked).
      CHECK_NOTHROW(cairn::CompiledSchema(t.at("inputSchema"), "inputSchema", {}, !cairn::full_schema_validation));
      CHECK_NOTHROW(cairn::CompiledSchema(t.at("outputSchema"), "outputSchema"));
    }
  }
}

TEST_CASE("the annotations say which tools only read, which destroy, which may be repeated") {
  cairn_test::TempWorkspace ws;
  auto s = ready_server(all_tools(ws), "2025-11-25");
  std::map<std::string, json> by_name;
  for (const auto& t : tools_list(s)) by_name[t.at("name")] = t.at("annotations");
  for (const char* name : {"workflow_status", "workflow_context", "artifact_fetch", "artifact_list",
                           "artifact_versions", "search_artifacts"}) {
    INFO(name);
    CHECK(by_name.at(name).at("readOnlyHint") == true);
  }
  for (const char* name : {"workflow_start", "workflow_set_tasks", "workflow_advance", "register_artefacts",
                           "artifact_store", "artifact_delete"}) {
    INFO(name);
    CHECK(by_name.at(name).at("readOnlyHint") == false);
  }
  // Only delete and set_tasks (which replaces a loop's task list) destroy anything; storing adds a version.
  CHECK(by_name.at("artifact_delete").at("destructiveHint") == true);
  CHECK(by_name.at("artifact_delete").at("idempotentHint") == true);
  CHECK(by_name.at("workflow_set_tasks").at("destructiveHint") == true);
  CHECK(by_name.at("artifact_store").at("destructiveHint") == false);
  CHECK(by_name.at("artifact_store").at("idempotentHint") == false);  // each call adds a version
  CHECK(by_name.at("workflow_advance").at("idempotentHint") == false);
  CHECK(by_name.at("workflow_start").at("idempotentHint") == true);  // a started workflow is not reset
  CHECK(by_name.at("register_artefacts").at("idempotentHint") == true);
}

TEST_CASE("older revisions get only the Tool fields they define") {
  cairn_test::TempWorkspace ws;
  auto s = ready_server(all_tools(ws), "2025-03-26");  // annotations came with 2025-03-26
  for (const auto& t : tools_list(s)) {
    INFO(t.dump());
    CHECK(t.contains("annotations"));
    CHECK_FALSE(t.contains("title"));
    CHECK_FALSE(t.contains("outputSchema"));
  }
  auto s0 = ready_server(all_tools(ws), "2024-11-05");
  for (const auto& t : tools_list(s0)) {
    INFO(t.dump());
    CHECK(t.size() == 3);  // name, description, inputSchema
    CHECK(t.contains("inputSchema"));
  }
}

TEST_CASE("a tool made with four fields is listed with them only, and keeps its error structuredContent") {
  cairn::mcp::Tool plain{"echo", "Echoes", {{"type", "object"}}, [](const json& a) {
                           if (a.contains("fail")) return cairn::WorkflowTools::error_result("asked to fail");
                           return cairn::WorkflowTools::ok_result(a);
                         }};
  auto s = ready_server({plain}, "2025-11-25");
  const auto tools = tools_list(s);
  CHECK(tools == json::parse(R"([{"name":"echo","description":"Echoes","inputSchema":{"type":"object"}}])"));
  const auto r = s.handle_line(request(2, "tools/call", {{"name", "echo"}, {"arguments", {{"fail", 1}}}}).dump());
  CHECK(r->at("result").at("structuredContent") == json{{"error", "asked to fail"}});
}

TEST_CASE("every structuredContent of a whole workflow and of every artifact tool follows its outputSchema") {
  cairn_test::TempWorkspace ws;
  { std::ofstream(ws.path() / "plan.md") << "# Plan\n"; }
  auto s = ready_server(all_tools(ws), "2025-11-25");
  std::map<std::string, std::shared_ptr<cairn::CompiledSchema>> schemas;
  for (const auto& t : tools_list(s)) {
    schemas[t.at("name")] = std::make_shared<cairn::CompiledSchema>(t.at("outputSchema"), t.at("name").dump());
  }
  int id = 10;
  std::map<std::string, int> checked;
  // Calls a tool; a success must carry structuredContent that its schema accepts, a failure carries none.
  const auto call = [&](const std::string& name, const json& args, bool expect_error = false) {
    const auto r = s.handle_line(request(++id, "tools/call", {{"name", name}, {"arguments", args}}).dump());
    REQUIRE(r);
    const auto& result = r->at("result");
    INFO(name << " " << args.dump() << " -> " << result.dump());
    REQUIRE(result.at("isError") == expect_error);
    const auto text = json::parse(result.at("content").at(0).at("text").get<std::string>());
    if (expect_error) {
      CHECK_FALSE(result.contains("structuredContent"));  // {"error": ...} would not follow the schema
      CHECK(text.at("error").is_string());
      return text;
    }
    CHECK(text == result.at("structuredContent"));
    const auto violations = schemas.at(name)->validate(result.at("structuredContent"));
    for (const auto& v : violations) FAIL_CHECK(name << " " << v.pointer << ": " << v.rule << ": " << v.message);
    ++checked[name];
    return result.at("structuredContent");
  };

  call("workflow_status", json::object(), true);
  call("workflow_context", json::object(), true);
  CHECK(call("workflow_start", {{"summary", "Add CSV export"}}).at("step") == "plan");
  call("workflow_start", json::object());  // started: the status again
  CHECK(call("register_artefacts", {{"paths", {"plan.md", "nope.md", 5}}}).at("invalid").size() == 2);
  call("register_artefacts", {{"paths", {"plan.md"}}});  // a duplicate
  call("workflow_advance", {{"output", "planned"}});
  call("workflow_set_tasks", {{"loop_id", "implement"},
                              {"tasks",
                               {{{"id", "parse"}, {"title", "Parser"}, {"description", "reads CSV"}},
                                {{"id", "write"}, {"title", "Writer"}, {"depends_on", {"parse"}}}}}});
  call("workflow_advance", {{"output", "tasks set"}});
  CHECK(call("workflow_status", json::object()).contains("task"));  // in the loop: task and sub-step
  call("workflow_advance", {{"output", "parser coded"}});
  call("workflow_advance", {{"output", "tests fail"}, {"success", false}});
  for (const char* out : {"parser tested", "writer coded", "writer tested"}) {
    call("workflow_advance", {{"output", out}});
  }
  CHECK(call("workflow_status", json::object()).contains("ralph_iteration"));
  call("workflow_advance", {{"output", "review 1"}});
  CHECK(call("workflow_advance", {{"output", "review 2"}}).at("status") == "complete");
  CHECK(call("workflow_context", json::object()).at("plan") == "planned");
  call("workflow_advance", {{"output", 5}}, true);

  const auto stored =
      call("artifact_store",
           {{"type", "document"}, {"title", "Plan"}, {"value", "# Plan"}, {"metadata", {{"region", "eu"}}}});
  const std::string doc = stored.at("id");
  call("artifact_store", {{"id", doc}, {"type", "document"}, {"title", "Plan v2"}, {"value", {{"k", 1}}}});
  call("artifact_store", {{"type", "file"},
                          {"description", "A file elsewhere"},
                          {"storage_url", "s3://b/k"},
                          {"mime_type", "text/csv"},
                          {"size_bytes", 12},
                          {"created_by", "agent-1"}});
  call("artifact_store", {{"type", "Bad Type"}}, true);
  CHECK(call("artifact_fetch", {{"id", doc}}).at("version") == 2);
  CHECK(call("artifact_fetch", {{"id", doc}, {"version", 1}}).at("value") == "# Plan");
  CHECK(call("artifact_fetch", {{"id", doc}, {"format", "a2a"}}).at("artifactId") == doc);
  CHECK(call("artifact_fetch", {{"id", doc}, {"format", "a2a-v0.3"}}).at("artifactId") == doc);
  call("artifact_fetch", {{"id", "missing"}}, true);
  CHECK(call("artifact_list", json::object()).at("artifacts").size() == 2);
  CHECK(call("artifact_list", {{"limit", 1}}).contains("next_cursor"));
  CHECK(call("artifact_versions", {{"id", doc}}).at("versions") == json{1, 2});
  const auto hits = call("search_artifacts", {{"query", "plan"}});
  CHECK_FALSE(hits.at("hits").empty());
  call("search_artifacts",
       {{"filter", {{"metadata", {{{"pointer", "/region"}, {"op", "eq"}, {"value", "eu"}}}}}}, {"limit", 1}});
  call("search_artifacts", {{"mode", "sideways"}}, true);
  CHECK(call("artifact_delete", {{"id", doc}}).at("versions_removed") == 2);
  call("artifact_delete", {{"id", doc}}, true);

  // Each of the 12 tools gave at least one successful result that was checked.
  CHECK(checked.size() == 12);
}
