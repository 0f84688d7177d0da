// The C++ snippets of docs/goals.md, each between `// [docs:<name>]` and `// [docs:end]` (check_snippets.cmake
// checks that the page shows exactly these lines). Snippets stand at column 0, as on the page; an #include line in
// one is a no-op here (the header is included above).
#include <iostream>
#include <memory>
#include <string>

#include "cairn/cairn.hpp"
#include "catch.hpp"

namespace {

// Stands in for the host's LLM client: asks where from (the SOP's first question is the engine's).
struct LlmClient {
  std::string complete(const std::string&) const {
    return R"({"action": "new_goal", "goal": {"gloss": "Book a train to Paris"}, "reasoning": "asks for a train"})";
  }
};

}  // namespace

TEST_CASE("docs/goals.md: the engine with a model interpreter and the train-booking SOP") {
  static const LlmClient my_llm_client;
  auto store = std::make_shared<cairn::InMemoryArtifactStore>();
  cairn::ExecutionContext ctx(store, "acme");
  cairn::ToolRegistry tools;
  std::shared_ptr<cairn::GoalPlanner> my_vanilla_planner;
  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(CAIRN_SOURCE_DIR);  // the snippet names the SOP relative to the source tree
  std::ostringstream out;
  auto* const cout_buffer = std::cout.rdbuf(out.rdbuf());
// [docs:engine]
#include <cairn/cairn.hpp>

  // Your model call: prompt in, the model's reply text out (cairn never calls an LLM itself).
  cairn::ModelFunction call_my_model = [](const std::string& prompt) { return my_llm_client.complete(prompt); };
  auto interpreter = std::make_shared<cairn::ModelInterpreter>(call_my_model);

  auto sops = std::make_shared<cairn::SopRegistry>();
  sops->load_file("examples/sops/train-booking.json");
  cairn::SopPlannerOptions planning;
  planning.fallback = my_vanilla_planner;  // for goals no SOP covers
  cairn::GoalEngine engine(ctx, tools, {interpreter, std::make_shared<cairn::SopPlanner>(sops, planning)});

  for (const std::string& reply : engine.handle("Find me a train to Paris")) std::cout << reply << '\n';
  // Where are you travelling from?
  // [docs:end]
  std::cout.rdbuf(cout_buffer);
  std::filesystem::current_path(cwd);
  INFO(out.str());
  CHECK(out.str().find("?") != std::string::npos);
}
