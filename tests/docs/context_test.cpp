// The C++ snippets of docs/context.md, each between `// [docs:<name>]` and `// [docs:end]` (check_snippets.cmake
// checks that the page shows exactly these lines). Snippets stand at column 0, as on the page.
#include <memory>
#include <string>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/context/execution_context.hpp"
#include "cairn/context/prompt.hpp"
#include "cairn/context/tool.hpp"
#include "catch.hpp"

TEST_CASE("docs/context.md: in brief") {
  auto run_command_fn = [](const nlohmann::json& inputs) {
    return cairn::ToolResult::ok({{"ran", inputs.value("command", "")}});
  };
  const std::string model_reply = R"({"tool": "run_command", "inputs": {"command": "npm start"}, "outputs": []})";
  // [docs:in-brief]
  auto store = std::make_shared<cairn::InMemoryArtifactStore>();
  cairn::ExecutionContext ctx(store, "acme");
  ctx.add_artifact("app_config", cairn::ArtifactRecord::builder()
                                     .type(cairn::ArtifactType::config)
                                     .description("Server configuration")
                                     .value({{"port", 3000}}));

  cairn::ToolRegistry tools;
  tools.add({"run_command", "Runs a command", {{"type", "object"}}, run_command_fn});

  auto call = cairn::ToolCall::parse(model_reply);  // {"tool", "inputs", "outputs"}
  auto result = cairn::execute(call, ctx, tools);   // resolves @names, runs, stores outputs
  std::string prompt = cairn::build_prompt("Start the server", ctx, tools);
  // [docs:end]
  CHECK(result.success);
  CHECK(prompt.find("app_config") != std::string::npos);
  CHECK(prompt.find("run_command") != std::string::npos);
}
