// The C++ snippets of docs/testing.md that are not from the example agent's tests: each lies between
// `// [docs:<name>]` and `// [docs:end]` in a test below, so ctest compiles and runs it
// (tests/docs/check_snippets.cmake checks that the document shows exactly these lines).
#include <memory>
#include <string>
#include <vector>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/context/execution_context.hpp"
#include "cairn/context/tool.hpp"
#include "cairn/goals/engine.hpp"
#include "cairn/handoff/handoff.hpp"
#include "cairn/testing/catch2.hpp"
#include "cairn/testing/clock.hpp"
#include "cairn/testing/recording_store.hpp"
#include "cairn/testing/scripted_goals.hpp"
#include "cairn/testing/scripted_model.hpp"
#include "catch.hpp"

TEST_CASE("docs: time and ids the test controls") {
  // [docs:clock]
  auto clock = std::make_shared<cairn::testing::ManualClock>(cairn::testing::ManualClock::default_start_ms, 1);
  auto ids = std::make_shared<cairn::testing::SequentialIds>();
  cairn::InMemoryStoreOptions options;
  options.clock = clock;
  options.ids = ids;
  auto store = std::make_shared<cairn::InMemoryArtifactStore>(options);
  cairn::ExecutionContext ctx(store, "acme", clock);  // messages, and (through the engine) goals
  cairn::HandoffOptions handoff_options;
  handoff_options.ids = ids;  // artifact_aaab, artifact_aaac, ...
  // [docs:end]
  ctx.add_message(cairn::Role::user, "hi");
  CHECK(ctx.messages().front().timestamp == cairn::testing::ManualClock::default_start_ms);
  CHECK(ids->uuid() == "00000000-0000-4000-8000-000000000001");
}

TEST_CASE("docs: a plain model call pays for scripted_model.hpp only") {
  // [docs:model]
  cairn::testing::ScriptedModel classifier("classifier");
  classifier
      .reply("invoice", {cairn::testing::prompt_contains("Document: INV-17")})  // the next call, in order
      .answer({cairn::testing::prompt_contains("Vendor?")}, "ACME", cairn::testing::times(2));  // any 2 calls
  std::function<std::string(const std::string&)> model = classifier;  // what the agent holds (shares the script)
  CHECK(model("Vendor? INV-17") == "ACME");
  CHECK(model("Classify. Document: INV-17") == "invoice");
  CHECK(model("Vendor? INV-18") == "ACME");
  // [docs:end]
}

TEST_CASE("docs: the goal engine asks the evaluator again after the user confirmed") {
  auto store = std::make_shared<cairn::InMemoryArtifactStore>();
  cairn::ExecutionContext ctx(store, "acme");
  cairn::ToolRegistry tools;
  // [docs:confirm]
  auto interpreter = std::make_shared<cairn::testing::ScriptedInterpreter>();
  auto planner = std::make_shared<cairn::testing::ScriptedPlanner>();
  auto evaluator = std::make_shared<cairn::testing::ScriptedEvaluator>();
  interpreter->reply(cairn::Interpretation::new_goal("Pay invoice 17"))
      .reply(cairn::Interpretation::add_evidence("confirmation", "yes"), {cairn::testing::prompt_contains("confirm")});
  cairn::SubgoalSpec confirm;
  confirm.gloss = "Pay 120 EUR to ACME?";
  confirm.predicate = cairn::Predicate{"confirm", nlohmann::json::object()};
  confirm.done_when = {cairn::Condition::predicate_true(cairn::Predicate{"payment_allowed", nlohmann::json::object()})};
  cairn::GoalPlan plan;
  plan.subgoals = {confirm};
  planner->reply(plan);
  const auto asks_payment = cairn::testing::prompt_contains("Condition: {\"args\":{},\"name\":\"payment_allowed\"}");
  evaluator
      ->reply(false, {asks_payment})  // before the question: is it satisfied already? no
      .reply(true, {asks_payment});   // after the user's "yes": asked again
  cairn::GoalEngine engine(ctx, tools, {interpreter, planner, evaluator});
  CHECK(engine.handle("Pay invoice 17") == std::vector<std::string>{"Pay 120 EUR to ACME? (yes/no)"});
  engine.handle("yes");
  CHECK(engine.goals().find("g1")->status == cairn::GoalStatus::achieved);
  CHECK(evaluator->calls() == 2);
  // [docs:end]
}

TEST_CASE("docs: a recording store fails the write the test picks") {
  // [docs:store]
  auto store = std::make_shared<cairn::testing::RecordingStore>(std::make_shared<cairn::InMemoryArtifactStore>());
  // ... the test's setup stores what the agent finds ...
  store->start_counting();  // count from here: the agent's writes only
  store->fail_write(2, cairn::testing::Fault::lost_connection_after_apply);
  store->fail_when(
      [](const cairn::testing::StoreCall& c) {
        return c.record && c.record->metadata().value("tool_name", "") == "forecast";
      },
      cairn::testing::Fault::storage_error, 1);
  // ... run the agent ...
  // [docs:end]
  auto note = [](const std::string& id) {
    return *cairn::ArtifactRecord::builder().tenant_id("acme").id(id).type("document").title("n").value(1).build();
  };
  (void)store->store(note("a"));
  CHECK_THROWS_AS(store->store(note("b")), cairn::storage_error);
  CHECK(store->inner()->fetch("b", "acme"));  // applied, then "lost"
}
