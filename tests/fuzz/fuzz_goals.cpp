// Fuzzes what the goals layer reads from outside: saved engine states, SOP documents and planner output. Bad input
// is rejected with a cairn::error; a state that restores is saved back identically after a second restore, and an
// SOP or plan that parses round-trips through its JSON.
//
// Building this file with CAIRN_FUZZ_GOALS_SEEDS and running it writes seed states to the folder given as argv[1].
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/context/execution_context.hpp"
#include "cairn/context/tool.hpp"
#include "cairn/goals/engine.hpp"
#include "cairn/goals/sop.hpp"
#include "fuzz.hpp"

namespace {

// A scripted interpreter: the first message is a new goal, later ones are evidence for the key the engine asks for.
class Scripted final : public cairn::MessageInterpreter {
 public:
  cairn::Interpretation interpret(const std::string& message, const cairn::Goal* current,
                                  const nlohmann::json&) override {
    if (!current) return cairn::Interpretation::new_goal(message);
    cairn::Interpretation i;
    i.action = cairn::Interpretation::Action::add_evidence;
    i.key = current->predicate.args.value("key", std::string("answer"));
    i.value = message;
    return i;
  }
};

// Plans every composite goal as gather origin, then gather destination (AND).
class TwoQuestions final : public cairn::GoalPlanner {
 public:
  cairn::GoalPlan plan(const cairn::Goal&, const nlohmann::json&) override {
    return cairn::GoalPlan::from_json(nlohmann::json::parse(R"({"type":"AND","source":"fuzz","subgoals":[
      {"gloss":"Ask for the origin","predicate":{"name":"gather_info","args":{"key":"origin"}}},
      {"gloss":"Ask for the destination","predicate":{"name":"gather_info","args":{"key":"destination"}}}]})"));
  }
};

struct World {
  cairn::ExecutionContext ctx{std::make_shared<cairn::InMemoryArtifactStore>(), "fuzz"};
  cairn::ToolRegistry tools;
  cairn::GoalEngineParts parts{std::make_shared<Scripted>(), std::make_shared<TwoQuestions>()};
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  cairn::JsonLimits limits;
  limits.max_bytes = 1 << 20;
  limits.max_depth = 64;

  World world;
  try {
    cairn::GoalEngine engine(world.ctx, world.tools, world.parts);
    engine.restore_text(text, limits);
    const auto saved = engine.to_json();
    cairn::GoalEngine again(world.ctx, world.tools, world.parts);
    again.restore(saved);
    CAIRN_FUZZ_CHECK(again.to_json() == saved);
    again.handle("Paris");  // a restored engine keeps working
  } catch (const cairn::error&) {
  }

  try {
    const auto sop = cairn::Sop::parse(text, limits);
    const nlohmann::json j = sop;
    const nlohmann::json j2 = cairn::Sop::from_json(j);
    CAIRN_FUZZ_CHECK(j2 == j);
  } catch (const cairn::error&) {
  }

  try {
    (void)cairn::GoalPlan::from_json(cairn::detail::parse_json(text, limits, "plan"));
  } catch (const cairn::error&) {
  }
  return 0;
}

#if defined(CAIRN_FUZZ_GOALS_SEEDS)
int main(int, char** argv) {
  World world;
  cairn::GoalEngine engine(world.ctx, world.tools, world.parts);
  std::ofstream(std::string(argv[1]) + "/empty_state.json") << engine.to_json().dump();
  engine.handle("Find me a train to Paris");
  std::ofstream(std::string(argv[1]) + "/waiting_state.json") << engine.to_json().dump();
  engine.handle("London");
  std::ofstream(std::string(argv[1]) + "/half_state.json") << engine.to_json().dump();
  engine.handle("Paris");
  std::ofstream(std::string(argv[1]) + "/done_state.json") << engine.to_json().dump();
}
#endif
