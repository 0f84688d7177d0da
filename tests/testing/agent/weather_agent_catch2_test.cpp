// The example host agent (weather_agent.hpp) tested with Catch2 and cairn/testing: scripted models that verify
// themselves, a manual clock, sequential ids, a recording store, and a golden file of the whole run.
//
// docs/testing.md shows the parts between the `// [docs:...]` markers (tests/docs/check_snippets.cmake checks that
// they are the same). The golden file is agent/golden/weather_run.json; after a change that is meant to alter the
// run, regenerate it with `CAIRN_UPDATE_GOLDEN=1 ctest --test-dir build -R golden`, review the diff and commit it.
#include <memory>
#include <string>
#include <vector>

#include "catch.hpp"
// [docs:catch2-wiring]
#include "cairn/artifact/memory_store.hpp"
#include "cairn/testing/catch2.hpp"  // unverified fakes and golden mismatches fail the running test
#include "cairn/testing/clock.hpp"
#include "cairn/testing/golden.hpp"
#include "cairn/testing/recording_store.hpp"
#include "cairn/testing/scripted_goals.hpp"
#include "weather_agent.hpp"
#include "weather_script.hpp"

namespace ct = cairn::testing;

struct Fixture {
  std::shared_ptr<ct::ManualClock> clock = std::make_shared<ct::ManualClock>(ct::ManualClock::default_start_ms, 1);
  std::shared_ptr<ct::SequentialIds> ids = std::make_shared<ct::SequentialIds>();
  std::shared_ptr<ct::RecordingStore> store = std::make_shared<ct::RecordingStore>(
      std::make_shared<cairn::InMemoryArtifactStore>(cairn::InMemoryStoreOptions{16, clock, ids}));
  ct::ScriptedModel interpreter{"interpreter"}, writer{"writer"};
  std::shared_ptr<ct::ScriptedPlanner> planner = std::make_shared<ct::ScriptedPlanner>();
  weather::WeatherAgent agent{{store, "acme", interpreter, planner, writer, clock, ids}};
};
// [docs:end]

// [docs:catch2-test]
TEST_CASE("the weather agent asks for the city, then answers with the writer's report") {
  Fixture f;
  weather_test::script_two_turns(f.interpreter, *f.planner, f.writer);

  CHECK(f.agent.handle("What's the weather like?") == std::vector<std::string>{"Which city?"});
  const auto said = f.agent.handle("Oslo");
  REQUIRE(said.size() == 2);
  CHECK(said[0] == "Your weather report: Oslo: mild, highs of 18, 21 and 24 degrees.");
  CHECK(said[1] == "Done: Weather report.");
  CHECK(f.agent.engine().goals().find("g1")->status == cairn::GoalStatus::achieved);  // prints "abandoned" if not
  CHECK(f.store->count(ct::StoreOperation::store_if, "acme", "report_aaab") == 1);    // the handoff stored it once
  CHECK(f.writer.prompt(1).find("\"high_c\":18") != std::string::npos);  // the writer saw the tool's forecast
}  // the fakes verify themselves here: a reply never used fails this test

TEST_CASE("the whole run matches the golden file") {
  Fixture f;
  weather_test::script_two_turns(f.interpreter, *f.planner, f.writer);
  f.agent.handle("What's the weather like?");
  f.agent.handle("Oslo");
  ct::check_golden(
      CAIRN_GOLDEN_DIR "/weather_run.json",
      ct::RunDump().store(*f.store, "acme").calls(*f.store).context(f.agent.context()).engine(f.agent.engine()).json());
}
// [docs:end]

TEST_CASE("a lost connection while storing the forecast stops the turn and reaches the host") {
  Fixture f;
  weather_test::script_two_turns(f.interpreter, *f.planner, f.writer);
  f.agent.handle("What's the weather like?");
  f.store->fail_when(
      [](const ct::StoreCall& c) {
        return c.operation == ct::StoreOperation::store && c.record &&
               c.record->metadata().value("tool_name", "") == "forecast";
      },
      ct::Fault::lost_connection_after_apply, 1);
  // A store that fails is the host's to handle (docs/goals.md): the engine no longer turns it into an abandoned goal.
  CHECK_THROWS_AS(f.agent.handle("Oslo"), cairn::storage_error);
  CHECK_FALSE(f.agent.context().has_artifact("forecast"));
  // The write did happen: the record is in the store, unbound. A host that retries must look for it first.
  const auto lost =
      f.store->calls([](const ct::StoreCall& c) { return c.outcome == ct::CallOutcome::lost_after_apply; });
  REQUIRE(lost.size() == 1);
  CHECK(f.store->inner()->fetch(lost[0].id, "acme"));
  CHECK(f.writer.calls() == 0);
  CHECK_THROWS_AS(f.writer.verify(), ct::script_error);  // its reply was not used: said here, so not at the end
}

TEST_CASE("the agent's second write, counted after the first turn, fails: the turn stops with the store's error") {
  Fixture f;
  weather_test::script_two_turns(f.interpreter, *f.planner, f.writer);
  f.agent.handle("What's the weather like?");
  f.store->start_counting();
  f.store->fail_write(2);  // the city is write 1, the forecast write 2
  CHECK_THROWS_AS(f.agent.handle("Oslo"), cairn::storage_error);
  CHECK_FALSE(f.agent.context().has_artifact("forecast"));
  const auto writes = f.store->calls([](const ct::StoreCall& c) { return c.write_number > 0; });
  REQUIRE(writes.size() == 2);
  CHECK(writes[1].outcome == ct::CallOutcome::injected);
  CHECK(writes[1].record->metadata().value("tool_name", "") == "forecast");
  CHECK_THROWS_AS(f.writer.verify(), ct::script_error);
}
