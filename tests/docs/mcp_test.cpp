// The C++ snippet of docs/mcp.md, between `// [docs:api]` and `// [docs:end]` (check_snippets.cmake checks that the
// page shows exactly these lines). It stands at column 0, as on the page, and runs here with std::cin and std::cout
// pointed at strings: a client's initialize, tools/list and one artifact_store call go in, the replies come out.
#include <algorithm>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "../workflow/workspace.hpp"
#include "cairn/artifact/memory_store.hpp"
#include "cairn/mcp/artifact_tools.hpp"
#include "cairn/mcp/server.hpp"
#include "cairn/workflow/artifact_recorder.hpp"
#include "cairn/workflow/tools.hpp"
#include "catch.hpp"

using nlohmann::json;

namespace {

// Points a standard stream at another buffer for the life of this object.
class Redirect {
 public:
  Redirect(std::ios& stream, std::streambuf* buffer) : stream_(stream), saved_(stream.rdbuf(buffer)) {}
  ~Redirect() { stream_.rdbuf(saved_); }
  Redirect(const Redirect&) = delete;
  Redirect& operator=(const Redirect&) = delete;

 private:
  std::ios& stream_;
  std::streambuf* saved_;
};

json message(int id, const std::string& method, const json& params) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}};
}

}  // namespace

TEST_CASE("docs/mcp.md: the API serves workflow and artifact tools over stdio") {
  cairn_test::TempWorkspace ws;
  const auto root = ws.path();
  const auto tmpl = cairn_test::feature_template();
  auto store = std::make_shared<cairn::InMemoryArtifactStore>();

  std::istringstream in(message(1, "initialize",
                                {{"protocolVersion", "2025-11-25"},
                                 {"capabilities", json::object()},
                                 {"clientInfo", {{"name", "docs"}, {"version", "1"}}}})
                            .dump() +
                        "\n" + json{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}.dump() + "\n" +
                        message(2, "tools/list", json::object()).dump() + "\n" +
                        message(3, "tools/call",
                                {{"name", "artifact_store"},
                                 {"arguments", {{"type", "document"}, {"title", "Plan"}, {"value", "# Plan"}}}})
                            .dump() +
                        "\n");
  std::ostringstream out;
  std::ostringstream err;
  {
    Redirect cin(std::cin, in.rdbuf());
    Redirect cout(std::cout, out.rdbuf());
    Redirect cerr(std::cerr, err.rdbuf());
    // [docs:api]
    cairn::WorkflowTools workflow(cairn::StateFile(root), tmpl, cairn::artifact_recorder(store, "acme"));
    cairn::mcp::ArtifactTools artifacts(store, "acme");
    auto tools = workflow.tools();
    tools.insert(tools.end(), artifacts.tools().begin(), artifacts.tools().end());

    cairn::mcp::ServerConfig config;  // name, version, title, instructions, limits, log sink
    config.log = [](std::string_view m) { std::cerr << m << "\n"; };
    cairn::mcp::Server server(std::move(tools), config);
    server.serve(std::cin, std::cout);  // or: auto reply = server.handle_line(line);
                                        // [docs:end]
  }
  std::vector<json> replies;
  std::istringstream lines(out.str());
  for (std::string line; std::getline(lines, line);) replies.push_back(json::parse(line));
  REQUIRE(replies.size() == 3);  // the notification gets none
  CHECK(replies[0].at("result").at("protocolVersion") == "2025-11-25");
  std::vector<std::string> names;
  for (const auto& tool : replies[1].at("result").at("tools")) names.push_back(tool.at("name"));
  CHECK(names.size() == 12);  // six workflow tools and six artifact tools
  CHECK(std::find(names.begin(), names.end(), "workflow_advance") != names.end());
  CHECK(std::find(names.begin(), names.end(), "search_artifacts") != names.end());
  const auto& stored = replies[2].at("result");
  REQUIRE(stored.at("isError") == false);
  const std::string id = stored.at("structuredContent").at("id");
  auto record = store->fetch(id, "acme");
  REQUIRE(record != nullptr);
  CHECK(record->title() == "Plan");
  CHECK(err.str().find("client: docs") != std::string::npos);  // the log sink heard the client's name
}
