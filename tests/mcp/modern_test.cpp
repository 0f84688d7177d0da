// mcp::Server and protocol revision 2026-07-28, in process: stateless requests carrying their version and client
// capabilities in _meta, server/discover, UnsupportedProtocolVersion (-32022), resultType and serverInfo on every
// result, every malformed _meta, and legacy connections (initialize) served beside them.
#include <memory>
#include <string>
#include <vector>

#include "../workflow/workspace.hpp"
#include "cairn/artifact/memory_store.hpp"
#include "cairn/mcp/artifact_tools.hpp"
#include "cairn/mcp/server.hpp"
#include "catch.hpp"

using cairn::mcp::Server;
using cairn::mcp::ServerConfig;
using nlohmann::json;
namespace ec = cairn::mcp::error_code;

namespace {

constexpr const char* modern = "2026-07-28";

std::vector<cairn::mcp::Tool> all_tools(const cairn_test::TempWorkspace& ws) {
  cairn::WorkflowTools wf(cairn::StateFile(ws.path()), cairn_test::feature_template());
  cairn::mcp::ArtifactTools art(std::make_shared<cairn::InMemoryArtifactStore>(), "acme");
  auto tools = wf.tools();
  tools.insert(tools.end(), art.tools().begin(), art.tools().end());
  return tools;
}

json meta(const std::string& version = modern) {
  return {{"io.modelcontextprotocol/protocolVersion", version},
          {"io.modelcontextprotocol/clientCapabilities", json::object()},
          {"io.modelcontextprotocol/clientInfo", {{"name", "test"}, {"version", "1"}}}};
}

json request(const json& id, const std::string& method, json params = json::object(), const json& m = meta()) {
  if (!m.is_null()) params["_meta"] = m;
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
}

json reply(Server& s, const json& message) {
  auto r = s.handle_line(message.dump());
  REQUIRE(r.has_value());
  return *r;
}

// A complete 2026-07-28 result: resultType and the server's identity.
const json& complete(const json& r) {
  INFO(r.dump());
  REQUIRE(r.contains("result"));
  const auto& result = r.at("result");
  CHECK(result.at("resultType") == "complete");
  CHECK(result.at("_meta").at("io.modelcontextprotocol/serverInfo").at("name") == "cairn-mcp");
  CHECK(result.at("_meta").at("io.modelcontextprotocol/serverInfo").at("version") == cairn::version_string());
  return result;
}

void check_error(const json& r, const json& id, int code, const std::string& fragment) {
  INFO(r.dump());
  CHECK(r.at("id") == id);
  CHECK_FALSE(r.contains("result"));
  CHECK(r.at("error").at("code") == code);
  CHECK_THAT(r.at("error").at("message").get<std::string>(), cairn_test::ContainsSubstring(fragment));
}

}  // namespace

TEST_CASE("2026-07-28: server/discover answers with no initialize, naming every version served") {
  cairn_test::TempWorkspace ws;
  ServerConfig config;
  config.title = "cairn";
  config.instructions = "Use the tools.";
  Server s(all_tools(ws), config);
  const auto r = reply(s, request("d", "server/discover"));
  CHECK(r.at("id") == "d");
  const auto& result = complete(r);
  CHECK(result.at("supportedVersions") == json{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"});
  CHECK(result.at("capabilities") == json{{"tools", json::object()}});
  CHECK(result.at("instructions") == "Use the tools.");
  CHECK(result.at("ttlMs") == 300000);
  CHECK(result.at("cacheScope") == "private");
  CHECK(result.at("_meta").at("io.modelcontextprotocol/serverInfo").at("title") == "cairn");
  CHECK_FALSE(s.initialized());  // nothing about the connection was set
}

TEST_CASE("2026-07-28: tools/list and tools/call need no initialize and leave no state") {
  cairn_test::TempWorkspace ws;
  Server s(all_tools(ws));
  const auto list = complete(reply(s, request(1, "tools/list")));
  CHECK(list.at("tools").size() == 12);
  CHECK(list.at("ttlMs") == 300000);
  CHECK(list.at("cacheScope") == "private");
  for (const auto& t : list.at("tools")) {
    INFO(t.dump());
    CHECK(t.contains("title"));
    CHECK(t.contains("outputSchema"));
    CHECK(t.contains("annotations"));
  }
  auto result =
      complete(reply(s, request(2, "tools/call", {{"name", "workflow_start"}, {"arguments", json::object()}})));
  CHECK(result.at("isError") == false);
  CHECK(result.at("structuredContent").at("step") == "plan");
  // The next request stands on its own too (any id type; no clientInfo needed).
  json m = meta();
  m.erase("io.modelcontextprotocol/clientInfo");
  result = complete(reply(s, request("x", "tools/call", {{"name", "artifact_list"}}, m)));
  CHECK(result.at("structuredContent").at("artifacts") == json::array());
  // A failed call is a complete result with isError.
  result = complete(reply(s, request(3, "tools/call", {{"name", "artifact_fetch"}, {"arguments", {{"id", "no"}}}})));
  CHECK(result.at("isError") == true);
  CHECK_FALSE(s.initialized());
  // Legacy requests without _meta still need initialize on this connection.
  check_error(reply(s, request(4, "tools/list", json::object(), nullptr)), 4, ec::invalid_request,
              "server not initialized");
}

TEST_CASE("2026-07-28: a version the server does not speak is -32022 listing the versions it does") {
  cairn_test::TempWorkspace ws;
  Server s(all_tools(ws));
  const json supported = {"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};
  for (const std::string v : {"1900-01-01", "2099-12-31", "", "2026-07-28-draft"}) {
    for (const std::string method : {"server/discover", "tools/list", "tools/call"}) {
      const auto r = reply(s, request(5, method, {{"name", "artifact_list"}}, meta(v)));
      check_error(r, 5, ec::unsupported_protocol_version, "Unsupported protocol version");
      CHECK(r.at("error").at("data") == json{{"supported", supported}, {"requested", v}});
    }
  }
  // A legacy version in _meta: that version is spoken after initialize, not per request.
  const auto r = reply(s, request(6, "tools/list", json::object(), meta("2025-11-25")));
  check_error(r, 6, ec::unsupported_protocol_version, "2025-11-25 is spoken after initialize");
  CHECK(r.at("error").at("data").at("requested") == "2025-11-25");
}

TEST_CASE("2026-07-28: a malformed _meta is -32602 naming the field") {
  cairn_test::TempWorkspace ws;
  Server s(all_tools(ws));
  // server/discover is modern whatever it carries, so a missing _meta is a malformed request.
  check_error(reply(s, request(1, "server/discover", json::object(), nullptr)), 1, ec::invalid_params,
              "server/discover: params._meta is required");
  check_error(reply(s, request(2, "server/discover", json::object(), "x")), 2, ec::invalid_params,
              "params._meta is required");
  json m = meta();
  m["io.modelcontextprotocol/protocolVersion"] = 20260728;
  check_error(reply(s, request(3, "tools/list", json::object(), m)), 3, ec::invalid_params,
              "io.modelcontextprotocol/protocolVersion\"] is required (a string");
  m = meta();
  m.erase("io.modelcontextprotocol/clientCapabilities");
  check_error(reply(s, request(4, "tools/list", json::object(), m)), 4, ec::invalid_params,
              "io.modelcontextprotocol/clientCapabilities\"] is required");
  m["io.modelcontextprotocol/clientCapabilities"] = json::array();
  check_error(reply(s, request(5, "tools/call", json::object(), m)), 5, ec::invalid_params, "clientCapabilities");
  m = meta();
  m["io.modelcontextprotocol/clientInfo"] = "me";
  check_error(reply(s, request(6, "tools/list", json::object(), m)), 6, ec::invalid_params,
              "io.modelcontextprotocol/clientInfo\"] must be an object");
  // Bad tool calls are the same errors as in every revision.
  check_error(reply(s, request(7, "tools/call", {{"name", "nope"}})), 7, ec::invalid_params, "unknown tool 'nope'");
  check_error(reply(s, request(8, "tools/call", {{"name", "artifact_list"}, {"arguments", 1}})), 8, ec::invalid_params,
              "arguments must be an object");
  check_error(reply(s, request(9, "tools/list", {{"cursor", "c"}})), 9, ec::invalid_params, "invalid cursor");
  // Still serving.
  complete(reply(s, request(10, "server/discover")));
}

TEST_CASE("2026-07-28: ping, logging/setLevel and unknown methods are -32601") {
  cairn_test::TempWorkspace ws;
  Server s(all_tools(ws));
  check_error(reply(s, request(1, "ping")), 1, ec::method_not_found,
              "'ping' is not part of protocol version 2026-07-28");
  check_error(reply(s, request(2, "logging/setLevel", {{"level", "info"}})), 2, ec::method_not_found,
              "not part of protocol version 2026-07-28");
  check_error(reply(s, request(3, "resources/list")), 3, ec::method_not_found, "method not found: 'resources/list'");
  // Notifications carrying _meta get no reply.
  CHECK_FALSE(s.handle_line(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,)"
                            R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}})"));
}

TEST_CASE("one connection serves a legacy client and 2026-07-28 requests side by side") {
  cairn_test::TempWorkspace ws;
  Server s(all_tools(ws));
  complete(reply(s, request(1, "server/discover")));
  // initialize opens a legacy connection even after modern requests, and never negotiates 2026-07-28.
  const auto init =
      reply(s, {{"jsonrpc", "2.0"},
                {"id", 2},
                {"method", "initialize"},
                {"params", {{"protocolVersion", "2026-07-28"}, {"capabilities", json::object()}, {"_meta", meta()}}}});
  CHECK(init.at("result").at("protocolVersion") == "2025-11-25");
  CHECK_FALSE(init.at("result").contains("resultType"));
  CHECK(s.initialized());
  // Legacy requests get legacy results (no resultType, no ttlMs) ...
  const auto legacy = reply(s, request(3, "tools/list", json::object(), nullptr));
  CHECK_FALSE(legacy.at("result").contains("resultType"));
  CHECK_FALSE(legacy.at("result").contains("ttlMs"));
  CHECK(reply(s, request(4, "ping", json::object(), nullptr)).at("result") == json::object());
  // ... and modern ones modern results, on the same state.
  complete(reply(s, request(5, "tools/call", {{"name", "workflow_start"}})));
  const auto status = reply(s, request(6, "tools/call", {{"name", "workflow_status"}}, nullptr));
  CHECK(status.at("result").at("structuredContent").at("step") == "plan");
  CHECK_FALSE(status.at("result").contains("resultType"));
}

TEST_CASE("2026-07-28 requests are refused inside a batch") {
  cairn_test::TempWorkspace ws;
  Server s(all_tools(ws));
  REQUIRE(
      reply(s,
            {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"}, {"params", {{"protocolVersion", "2025-03-26"}}}})
          .contains("result"));
  const auto r = reply(s, json::array({request(2, "tools/list"), request(3, "tools/list", json::object(), nullptr)}));
  REQUIRE(r.is_array());
  REQUIRE(r.size() == 2);
  check_error(r[0], 2, ec::invalid_request, "must not be part of a batch");
  CHECK(r[1].at("result").at("tools").size() == 12);
}
