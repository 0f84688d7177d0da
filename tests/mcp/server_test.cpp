// mcp::Server, in process: the lifecycle, every protocol error, tool errors, batches, and the line reader.
#include "cairn/mcp/server.hpp"

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "../workflow/workspace.hpp"
#include "cairn/artifact/memory_store.hpp"
#include "cairn/mcp/artifact_tools.hpp"
#include "catch.hpp"

using cairn::mcp::Server;
using cairn::mcp::ServerConfig;
using nlohmann::json;
namespace ec = cairn::mcp::error_code;

namespace {

std::vector<cairn::mcp::Tool> all_tools(const cairn_test::TempWorkspace& ws) {
  cairn::WorkflowTools wf(cairn::StateFile(ws.path()), cairn_test::feature_template());
  cairn::mcp::ArtifactTools art(std::make_shared<cairn::InMemoryArtifactStore>(), "acme");
  auto tools = wf.tools();
  tools.insert(tools.end(), art.tools().begin(), art.tools().end());
  return tools;
}

json request(const json& id, const std::string& method, const json& params = nullptr) {
  json m = {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
  if (!params.is_null()) m["params"] = params;
  return m;
}

json initialize_request(const json& id, const std::string& version) {
  return request(id, "initialize",
                 {{"protocolVersion", version},
                  {"capabilities", json::object()},
                  {"clientInfo", {{"name", "test"}, {"version", "1"}}}});
}

json must_reply(Server& s, const std::string& line) {
  auto r = s.handle_line(line);
  REQUIRE(r.has_value());
  return *r;
}

void check_error(const json& reply, const json& id, int code, const std::string& fragment = "") {
  INFO(reply.dump());
  CHECK(reply.at("jsonrpc") == "2.0");
  CHECK(reply.at("id") == id);
  CHECK_FALSE(reply.contains("result"));
  CHECK(reply.at("error").at("code") == code);
  if (!fragment.empty()) {
    CHECK_THAT(reply.at("error").at("message").get<std::string>(), cairn_test::ContainsSubstring(fragment));
  }
}

Server ready_server(const cairn_test::TempWorkspace& ws, const std::string& version = "2025-11-25") {
  Server s(all_tools(ws));
  const auto r = s.handle_line(initialize_request(1, version).dump());
  REQUIRE(r);
  REQUIRE(r->at("result").at("protocolVersion") == version);
  REQUIRE_FALSE(s.handle_line(R"({"jsonrpc":"2.0","method":"notifications/initialized"})"));
  return s;
}

}  // namespace

TEST_CASE("initialize answers with the requested version when supported, else the newest") {
  cairn_test::TempWorkspace ws;
  for (const auto& v : cairn::mcp::legacy_protocol_versions()) {
    Server s(all_tools(ws), ServerConfig{});
    const auto r = must_reply(s, initialize_request("init", v).dump());
    CHECK(r.at("id") == "init");
    CHECK(r.at("result").at("protocolVersion") == v);
    CHECK(r.at("result").at("capabilities") == json{{"tools", {{"listChanged", false}}}});
    CHECK(r.at("result").at("serverInfo").at("name") == "cairn-mcp");
    CHECK(r.at("result").at("serverInfo").at("version") == cairn::version_string());
    CHECK(s.protocol_version() == v);
  }
  // 2026-07-28 has no initialize: a client asking for it there is offered the newest legacy version.
  for (const std::string v : {"2024-10-07", "2099-01-01", "", "latest", "2026-07-28"}) {
    Server s(all_tools(ws));
    const auto r = must_reply(s, initialize_request(7, v).dump());
    CHECK(r.at("result").at("protocolVersion") == "2025-11-25");
  }
}

TEST_CASE("initialize reports title and instructions from the config") {
  cairn_test::TempWorkspace ws;
  ServerConfig config;
  config.name = "my-host";
  config.version = "9.9";
  config.title = "My Host";
  config.instructions = "Use the tools wisely.";
  Server s(all_tools(ws), config);
  const auto r = must_reply(s, initialize_request(1, "2025-06-18").dump());
  CHECK(r.at("result").at("serverInfo") == json{{"name", "my-host"}, {"version", "9.9"}, {"title", "My Host"}});
  CHECK(r.at("result").at("instructions") == "Use the tools wisely.");
  // title came with 2025-06-18.
  Server old(all_tools(ws), config);
  const auto r2 = must_reply(old, initialize_request(1, "2025-03-26").dump());
  CHECK_FALSE(r2.at("result").at("serverInfo").contains("title"));
}

TEST_CASE("initialize with bad params is -32602 and leaves the server uninitialized") {
  cairn_test::TempWorkspace ws;
  Server s(all_tools(ws));
  check_error(must_reply(s, request(1, "initialize").dump()), 1, ec::invalid_params, "protocolVersion");
  check_error(must_reply(s, request(2, "initialize", {{"protocolVersion", 20250618}}).dump()), 2, ec::invalid_params,
              "protocolVersion must be a string");
  check_error(must_reply(s, request(3, "initialize", {{"protocolVersion", "2025-06-18"}, {"capabilities", 1}}).dump()),
              3, ec::invalid_params, "capabilities");
  check_error(must_reply(s, request(4, "initialize", {{"protocolVersion", "2025-06-18"}, {"clientInfo", "x"}}).dump()),
              4, ec::invalid_params, "clientInfo");
  CHECK_FALSE(s.initialized());
  // The server still initializes afterwards.
  CHECK(must_reply(s, initialize_request(5, "2025-06-18").dump()).at("result").at("protocolVersion") == "2025-06-18");
  CHECK(s.initialized());
  CHECK_FALSE(s.client_ready());
  CHECK_FALSE(s.handle_line(R"({"jsonrpc":"2.0","method":"notifications/initialized"})"));
  CHECK(s.client_ready());
}

TEST_CASE("a second initialize is refused") {
  cairn_test::TempWorkspace ws;
  auto s = ready_server(ws, "2025-06-18");
  check_error(must_reply(s, initialize_request(9, "2025-11-25").dump()), 9, ec::invalid_request,
              "already initialized (protocol version 2025-06-18)");
  CHECK(s.protocol_version() == "2025-06-18");
}

TEST_CASE("before initialize only ping and initialize are served") {
  cairn_test::TempWorkspace ws;
  Server s(all_tools(ws));
  CHECK(must_reply(s, request(1, "ping").dump()) == json{{"jsonrpc", "2.0"}, {"id", 1}, {"result", json::object()}});
  check_error(must_reply(s, request(2, "tools/list").dump()), 2, ec::invalid_request, "server not initialized");
  check_error(must_reply(s, request("c", "tools/call", {{"name", "workflow_status"}}).dump()), "c", ec::invalid_request,
              "server not initialized");
  check_error(must_reply(s, request(4, "no/such").dump()), 4, ec::invalid_request, "server not initialized");
  // A notification before initialize is ignored, not answered.
  CHECK_FALSE(s.handle_line(R"({"jsonrpc":"2.0","method":"notifications/initialized"})"));
  CHECK_FALSE(s.client_ready());
  CHECK_FALSE(s.initialized());
}

TEST_CASE("malformed messages get JSON-RPC errors with the id when it can be read") {
  cairn_test::TempWorkspace ws;
  auto s = ready_server(ws);
  check_error(must_reply(s, "not json"), nullptr, ec::parse_error, "invalid JSON");
  check_error(must_reply(s, R"({"jsonrpc":"2.0","id":1,"method":"ping")"), nullptr, ec::parse_error);
  check_error(must_reply(s, "\xff\xfe"), nullptr, ec::parse_error);
  CHECK_NOTHROW(must_reply(s, "\xff\xfe").dump());  // the quoted bytes are replaced: the reply is valid UTF-8
  check_error(must_reply(s, std::string(R"({"jsonrpc":"2.0","id":1,"method":"ping","x":")") + "\xc3\"}"), nullptr,
              ec::parse_error);  // invalid UTF-8
  check_error(must_reply(s, "42"), nullptr, ec::invalid_request, "must be a JSON object, not number");
  check_error(must_reply(s, "null"), nullptr, ec::invalid_request);
  check_error(must_reply(s, R"({"id":1,"method":"ping"})"), 1, ec::invalid_request, "jsonrpc must be \"2.0\"");
  check_error(must_reply(s, R"({"jsonrpc":2.0,"id":1,"method":"ping"})"), 1, ec::invalid_request, "jsonrpc");
  check_error(must_reply(s, R"({"jsonrpc":"2.0","id":null,"method":"ping"})"), nullptr, ec::invalid_request,
              "id must be a string or an integer, not null");
  check_error(must_reply(s, R"({"jsonrpc":"2.0","id":1.5,"method":"ping"})"), nullptr, ec::invalid_request, "id");
  check_error(must_reply(s, R"({"jsonrpc":"2.0","id":[1],"method":"ping"})"), nullptr, ec::invalid_request, "id");
  check_error(must_reply(s, R"({"jsonrpc":"2.0","id":true,"method":"ping"})"), nullptr, ec::invalid_request, "id");
  check_error(must_reply(s, R"({"jsonrpc":"2.0","id":3})"), 3, ec::invalid_request, "method is missing");
  check_error(must_reply(s, R"({"jsonrpc":"2.0","id":"m","method":["ping"]})"), "m", ec::invalid_request,
              "method must be a string, not array");
  check_error(must_reply(s, R"({"jsonrpc":"2.0","id":5,"method":"ping","params":"x"})"), 5, ec::invalid_request,
              "params must be an object, not string");
  check_error(must_reply(s, R"({"jsonrpc":"2.0","id":6,"method":"ping","params":[1]})"), 6, ec::invalid_params,
              "params must be an object, not array");
  // Negative and large integer ids come back as they were sent.
  CHECK(must_reply(s, R"({"jsonrpc":"2.0","id":-3,"method":"ping"})").at("id") == -3);
  CHECK(must_reply(s, R"({"jsonrpc":"2.0","id":18446744073709551615,"method":"ping"})").at("id") ==
        18446744073709551615ull);
  // Still serving.
  CHECK(must_reply(s, request(7, "tools/list").dump()).at("result").at("tools").size() == 12);
}

TEST_CASE("too large and too deep messages are refused") {
  cairn_test::TempWorkspace ws;
  ServerConfig config;
  config.max_message_bytes = 1000;
  config.max_depth = 8;
  Server s(all_tools(ws), config);
  REQUIRE(must_reply(s, initialize_request(1, "2025-11-25").dump()).contains("result"));
  const std::string big = request(2, "ping", {{"pad", std::string(1000, 'x')}}).dump();
  check_error(must_reply(s, big), nullptr, ec::invalid_request, "longer than the limit of 1000 bytes");
  check_error(must_reply(s, std::string(9, '[') + std::string(9, ']')), nullptr, ec::invalid_request,
              "deeper than the limit of 8");
  CHECK(must_reply(s, std::string(7, '[') + std::string(7, ']')).at("error").at("code") == ec::invalid_request);
  CHECK(must_reply(s, request(3, "ping").dump()).at("result") == json::object());
}

TEST_CASE("notifications, responses and blank lines get no reply") {
  cairn_test::TempWorkspace ws;
  auto s = ready_server(ws);
  CHECK_FALSE(s.handle_line(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}})"));
  CHECK_FALSE(s.handle_line(R"({"jsonrpc":"2.0","method":"notifications/progress","params":{}})"));
  CHECK_FALSE(s.handle_line(R"({"jsonrpc":"2.0","method":"tools/list"})"));  // a request without id is a notification
  CHECK_FALSE(s.handle_line(R"({"jsonrpc":"2.0","method":"x","params":[1]})"));
  CHECK_FALSE(s.handle_line(R"({"jsonrpc":"2.0","id":4,"result":{}})"));
  CHECK_FALSE(s.handle_line(R"({"jsonrpc":"2.0","id":4,"error":{"code":1,"message":"m"}})"));
  CHECK_FALSE(s.handle_line(""));
  CHECK_FALSE(s.handle_line("  \t\r"));
}

TEST_CASE("unknown methods are -32601") {
  cairn_test::TempWorkspace ws;
  auto s = ready_server(ws);
  check_error(must_reply(s, request(1, "resources/list").dump()), 1, ec::method_not_found,
              "method not found: 'resources/list'");
  check_error(must_reply(s, request(2, "prompts/get").dump()), 2, ec::method_not_found);
  check_error(must_reply(s, request(3, std::string(500, 'm')).dump()), 3, ec::method_not_found, "...");
}

TEST_CASE("tools/list lists every tool with its input schema") {
  cairn_test::TempWorkspace ws;
  auto s = ready_server(ws);
  const auto r = must_reply(s, request(1, "tools/list", json::object()).dump());
  const auto& tools = r.at("result").at("tools");
  std::vector<std::string> names;
  for (const auto& t : tools) {
    names.push_back(t.at("name"));
    CHECK(t.at("inputSchema").at("type") == "object");
    CHECK_FALSE(t.at("description").get<std::string>().empty());
  }
  CHECK(names == std::vector<std::string>{"workflow_start", "workflow_set_tasks", "workflow_status", "workflow_advance",
                                          "workflow_context", "register_artefacts", "artifact_store", "artifact_fetch",
                                          "artifact_list", "artifact_versions", "artifact_delete", "search_artifacts"});
  CHECK_FALSE(r.at("result").contains("nextCursor"));
  check_error(must_reply(s, request(2, "tools/list", {{"cursor", "abc"}}).dump()), 2, ec::invalid_params, "cursor");
  CHECK(must_reply(s, request(3, "tools/list", {{"cursor", nullptr}}).dump()).contains("result"));
}

TEST_CASE("tools/call runs the tool and returns its CallToolResult") {
  cairn_test::TempWorkspace ws;
  auto s = ready_server(ws);
  auto r =
      must_reply(s, request(1, "tools/call", {{"name", "workflow_start"}, {"arguments", {{"summary", "S"}}}}).dump());
  CHECK(r.at("result").at("isError") == false);
  CHECK(r.at("result").at("structuredContent").at("step") == "plan");
  CHECK(json::parse(r.at("result").at("content").at(0).at("text").get<std::string>()) ==
        r.at("result").at("structuredContent"));
  // arguments may be left out or null.
  r = must_reply(s, request(2, "tools/call", {{"name", "workflow_status"}}).dump());
  CHECK(r.at("result").at("structuredContent").at("summary") == "S");
  r = must_reply(s, request(3, "tools/call", {{"name", "workflow_context"}, {"arguments", nullptr}}).dump());
  CHECK(r.at("result").at("isError") == false);
}

TEST_CASE("tool failures are isError results, a bad call is -32602") {
  cairn_test::TempWorkspace ws;
  auto s = ready_server(ws);
  auto r = must_reply(s, request(1, "tools/call", {{"name", "workflow_status"}, {"arguments", json::object()}}).dump());
  CHECK(r.at("result").at("isError") == true);
  // The tool has an outputSchema, which {"error": ...} does not follow: the error is text only.
  CHECK_FALSE(r.at("result").contains("structuredContent"));
  CHECK_THAT(
      json::parse(r.at("result").at("content").at(0).at("text").get<std::string>()).at("error").get<std::string>(),
      cairn_test::ContainsSubstring("not started"));
  r = must_reply(s, request(2, "tools/call", {{"name", "workflow_advance"}, {"arguments", {{"output", 5}}}}).dump());
  CHECK(r.at("result").at("isError") == true);
  check_error(must_reply(s, request(3, "tools/call", {{"name", "nope"}}).dump()), 3, ec::invalid_params,
              "unknown tool 'nope'");
  check_error(must_reply(s, request(4, "tools/call", json::object()).dump()), 4, ec::invalid_params,
              "params.name must be a string");
  check_error(must_reply(s, request(5, "tools/call", {{"name", 5}}).dump()), 5, ec::invalid_params, "params.name");
  check_error(must_reply(s, request(6, "tools/call", {{"name", "workflow_start"}, {"arguments", "x"}}).dump()), 6,
              ec::invalid_params, "arguments must be an object, not string");
  check_error(must_reply(s, request(7, "tools/call", {{"name", "workflow_start"}, {"arguments", {1}}}).dump()), 7,
              ec::invalid_params, "arguments must be an object, not array");
}

TEST_CASE("a tool that throws fails only its own call") {
  cairn::mcp::Tool bad{
      "explode", "Throws", {{"type", "object"}}, [](const json&) -> json { throw std::runtime_error("kaboom"); }};
  cairn::mcp::Tool good{
      "echo", "Echoes", {{"type", "object"}}, [](const json& a) { return cairn::WorkflowTools::ok_result(a); }};
  std::vector<std::string> logged;
  ServerConfig config;
  config.log = [&](std::string_view m) { logged.emplace_back(m); };
  Server s({bad, good}, config);
  REQUIRE(must_reply(s, initialize_request(1, "2025-11-25").dump()).contains("result"));
  auto r = must_reply(s, request(2, "tools/call", {{"name", "explode"}}).dump());
  CHECK(r.at("result").at("isError") == true);
  CHECK(r.at("result").at("structuredContent").at("error") == "explode: kaboom");
  bool seen = false;
  for (const auto& l : logged) seen = seen || l.find("kaboom") != std::string::npos;
  CHECK(seen);
  r = must_reply(s, request(3, "tools/call", {{"name", "echo"}, {"arguments", {{"a", 1}}}}).dump());
  CHECK(r.at("result").at("structuredContent") == json{{"a", 1}});
}

TEST_CASE("the server refuses tools without a name or handler, and duplicate names") {
  cairn::mcp::Tool t{"a", "d", {{"type", "object"}}, [](const json& a) { return a; }};
  auto nameless = t;
  nameless.name.clear();
  auto handlerless = t;
  handlerless.handler = nullptr;
  CHECK_THROWS_AS(Server({nameless}), cairn::invalid_argument);
  CHECK_THROWS_AS(Server({handlerless}), cairn::invalid_argument);
  CHECK_THROWS_WITH(Server({t, t}), "mcp::Server: tool 'a' is given twice");
  CHECK_NOTHROW(Server({}));
}

TEST_CASE("structuredContent is left out for clients older than 2025-06-18") {
  cairn_test::TempWorkspace ws;
  for (const std::string v : {"2024-11-05", "2025-03-26"}) {
    auto s = ready_server(ws, v);
    const auto r = must_reply(s, request(1, "tools/call", {{"name", "artifact_list"}}).dump());
    CHECK_FALSE(r.at("result").contains("structuredContent"));
    CHECK(json::parse(r.at("result").at("content").at(0).at("text").get<std::string>()).contains("artifacts"));
  }
  auto s = ready_server(ws, "2025-06-18");
  CHECK(must_reply(s, request(1, "tools/call", {{"name", "artifact_list"}}).dump())
            .at("result")
            .contains("structuredContent"));
}

TEST_CASE("batches are served in 2025-03-26 and refused in every other version") {
  cairn_test::TempWorkspace ws;
  const std::string batch =
      R"([{"jsonrpc":"2.0","id":1,"method":"ping"},)"
      R"({"jsonrpc":"2.0","method":"notifications/initialized"},)"
      R"({"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-03-26"}},)"
      R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"artifact_list"}},)"
      R"("x"])";
  {
    auto s = ready_server(ws, "2025-03-26");
    const auto r = must_reply(s, batch);
    REQUIRE(r.is_array());
    REQUIRE(r.size() == 4);
    CHECK(r[0].at("id") == 1);
    CHECK(r[0].at("result") == json::object());
    check_error(r[1], 2, ec::invalid_request, "initialize must not be part of a batch");
    CHECK(r[2].at("id") == 3);
    CHECK(r[2].at("result").at("isError") == false);
    check_error(r[3], nullptr, ec::invalid_request);
    check_error(must_reply(s, "[]"), nullptr, ec::invalid_request, "empty batch");
    // A batch of notifications only has no reply.
    CHECK_FALSE(s.handle_line(R"([{"jsonrpc":"2.0","method":"notifications/initialized"}])"));
  }
  for (const std::string v : {"2024-11-05", "2025-06-18", "2025-11-25"}) {
    auto s = ready_server(ws, v);
    check_error(must_reply(s, batch), nullptr, ec::invalid_request, "not supported in protocol version " + v);
  }
  Server fresh(all_tools(ws));
  check_error(must_reply(fresh, batch), nullptr, ec::invalid_request, "before initialize");
  ServerConfig small;
  small.max_batch = 2;
  Server limited(all_tools(ws), small);
  REQUIRE(must_reply(limited, initialize_request(1, "2025-03-26").dump()).contains("result"));
  check_error(must_reply(limited, batch), nullptr, ec::invalid_request,
              "batch of 5 messages, more than the limit of 2");
}

TEST_CASE("serve reads line by line, skips an oversized line and keeps serving") {
  cairn_test::TempWorkspace ws;
  ServerConfig config;
  config.max_message_bytes = 4096;
  std::vector<std::string> logged;
  config.log = [&](std::string_view m) { logged.emplace_back(m); };
  Server s(all_tools(ws), config);
  std::string input;
  input += initialize_request(1, "2025-11-25").dump() + "\r\n";  // CRLF is accepted
  input += R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
           "\n";
  input += "\n";                                                                   // blank: no reply
  input += "garbage\n";                                                            // -32700
  input += request(2, "ping", {{"pad", std::string(200000, 'x')}}).dump() + "\n";  // too long: skipped
  input += std::string(4096, ' ') + "\n";                                          // exactly the limit: blank, no reply
  input += request(3, "tools/list").dump() + "\n";
  input += request(4, "ping").dump();  // the last line may lack its newline
  std::istringstream in(input);
  std::ostringstream out;
  s.serve(in, out);

  std::vector<json> replies;
  std::istringstream lines(out.str());
  for (std::string line; std::getline(lines, line);) replies.push_back(json::parse(line));
  REQUIRE(replies.size() == 5);
  CHECK(replies[0].at("id") == 1);
  check_error(replies[1], nullptr, ec::parse_error);
  check_error(replies[2], nullptr, ec::invalid_request, "longer than the limit of 4096 bytes");
  CHECK(replies[3].at("id") == 3);
  CHECK(replies[3].at("result").at("tools").size() == 12);
  CHECK(replies[4] == json{{"jsonrpc", "2.0"}, {"id", 4}, {"result", json::object()}});
  bool skipped = false;
  for (const auto& l : logged) skipped = skipped || l.find("skipped a message longer than 4096") != std::string::npos;
  CHECK(skipped);
}

TEST_CASE("serve survives a 50 MB line with the default 16 MiB limit") {
  cairn_test::TempWorkspace ws;
  Server s(all_tools(ws));
  std::string input = initialize_request(1, "2025-11-25").dump() + "\n";
  input += R"({"jsonrpc":"2.0","id":2,"method":"ping","params":{"pad":")" + std::string(50u << 20, 'x') + "\"}}\n";
  input += request(3, "ping").dump() + "\n";
  std::istringstream in(std::move(input));
  std::ostringstream out;
  s.serve(in, out);
  std::istringstream lines(out.str());
  std::vector<json> replies;
  for (std::string line; std::getline(lines, line);) replies.push_back(json::parse(line));
  REQUIRE(replies.size() == 3);
  check_error(replies[1], nullptr, ec::invalid_request, "longer than the limit of 16777216 bytes");
  CHECK(replies[2].at("id") == 3);
}

TEST_CASE("serve stops when the output is closed") {
  cairn_test::TempWorkspace ws;
  Server s(all_tools(ws));
  std::istringstream in(request(1, "ping").dump() + "\n" + request(2, "ping").dump() + "\n");
  std::ostringstream out;
  out.setstate(std::ios::badbit);
  s.serve(in, out);  // returns instead of looping or throwing
  CHECK(out.str().empty());
}
