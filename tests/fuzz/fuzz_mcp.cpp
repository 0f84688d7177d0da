// Fuzzes the MCP message handler (mcp::Server::handle_line) with the workflow and artifact tools behind it. The
// input is split into lines, each one message, handled in order by one server (so a fuzzed session can initialize
// and then call tools). Properties: handle_line never throws or crashes; every request with a usable id gets
// exactly one reply, with that id and exactly one of result / error; no reply is an internal error; every reply
// dumps as strict UTF-8 JSON.
#include <stdlib.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/mcp/artifact_tools.hpp"
#include "cairn/mcp/server.hpp"
#include "cairn/workflow/tools.hpp"
#include "fuzz.hpp"

namespace {

const char* feature_template = R"({
  "name": "feature",
  "agents": {"coder": {"description": "Writes the code"}},
  "loops": {"implement": [{"id": "code", "agent": "coder", "instructions": "Implement {task.id}", "artefacts": true},
                          {"id": "test", "instructions": "Test {task.title}", "on_fail": "skip"}]},
  "steps": [{"id": "plan", "type": "action", "instructions": "Plan.", "artefacts": true},
            {"id": "implement", "type": "loop"},
            {"id": "review", "type": "ralph", "n": 2, "instructions": "Review."}]
})";

// One workspace for the whole run (created once, removed at exit); each input starts with no workflow state in it.
// The path lives on the heap and is never freed, so the exit handler cannot outlive it.
const std::filesystem::path& workspace() {
  static const std::filesystem::path* dir = [] {
    std::string pattern = (std::filesystem::temp_directory_path() / "cairn-fuzz-mcp-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) std::abort();
    std::ofstream(std::filesystem::path(pattern) / "plan.md") << "# Plan\n";
    return new std::filesystem::path(pattern);
  }();
  static const bool cleanup = [] {
    return std::atexit([] {
             std::error_code ec;
             std::filesystem::remove_all(*dir, ec);
           }) == 0;
  }();
  (void)cleanup;
  return *dir;
}

bool has_one_outcome(const nlohmann::json& reply) {
  return reply.is_object() && reply.value("jsonrpc", "") == "2.0" && reply.contains("id") &&
         (reply.contains("result") != reply.contains("error"));
}

void check_reply(const nlohmann::json& reply) {
  CAIRN_FUZZ_CHECK(has_one_outcome(reply));
  if (reply.contains("error")) {
    CAIRN_FUZZ_CHECK(reply["error"]["code"].is_number_integer());
    CAIRN_FUZZ_CHECK(reply["error"]["code"] != cairn::mcp::error_code::internal_error);
    CAIRN_FUZZ_CHECK(reply["error"]["message"].is_string());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::error_code ec;
  std::filesystem::remove(workspace() / "workflow-state.json", ec);

  static const auto tmpl = cairn::WorkflowTemplate::parse(feature_template);
  cairn::WorkflowTools workflow(cairn::StateFile(workspace()), tmpl);
  cairn::mcp::ArtifactTools artifacts(std::make_shared<cairn::InMemoryArtifactStore>(), "fuzz");
  auto tools = workflow.tools();
  tools.insert(tools.end(), artifacts.tools().begin(), artifacts.tools().end());
  cairn::mcp::ServerConfig config;
  config.max_message_bytes = 1 << 20;
  cairn::mcp::Server server(std::move(tools), config);
  const cairn::JsonLimits limits{config.max_message_bytes, config.max_depth};

  std::size_t start = 0;
  while (start <= input.size()) {
    auto end = input.find('\n', start);
    if (end == std::string_view::npos) end = input.size();
    const auto line = input.substr(start, end - start);
    start = end + 1;

    const auto reply = server.handle_line(line);  // noexcept: a throw would terminate, which the fuzzer reports
    if (reply) {
      try {
        (void)reply->dump();  // strict: throws on invalid UTF-8
      } catch (const nlohmann::json::exception&) {
        CAIRN_FUZZ_CHECK(!"reply is not valid UTF-8 JSON");
      }
      if (reply->is_array()) {
        CAIRN_FUZZ_CHECK(!reply->empty());
        for (const auto& r : *reply) check_reply(r);
      } else {
        check_reply(*reply);
      }
    }

    // What the message was, read the way the server reads it.
    nlohmann::json m;
    try {
      m = cairn::detail::parse_json(line, limits, "fuzz line");
    } catch (const cairn::error&) {
      continue;
    }
    if (m.is_object() && m.contains("method") && m.contains("id") &&
        (m["id"].is_string() || m["id"].is_number_integer())) {
      // A request with a usable id: exactly one reply, carrying that id.
      CAIRN_FUZZ_CHECK(reply.has_value());
      CAIRN_FUZZ_CHECK(reply->is_object());
      CAIRN_FUZZ_CHECK((*reply)["id"] == m["id"]);
    } else if (m.is_object() && !m.contains("id") && m.value("jsonrpc", nlohmann::json()) == "2.0" &&
               m.contains("method") && m["method"].is_string()) {
      CAIRN_FUZZ_CHECK(!reply.has_value());  // a notification is never answered
    }
  }
  return 0;
}
