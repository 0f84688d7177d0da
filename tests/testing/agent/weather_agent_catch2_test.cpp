// The example host agent (weather_agent.hpp) tested with Catch2 and cairn/testing: scripted models, a manual clock,
// sequential ids, a recording store, and a golden file of the whole run.
//
// The golden file is agent/golden/weather_run.json. After a change that is meant to alter the run, regenerate it
// with CAIRN_UPDATE_GOLDEN=1 (`CAIRN_UPDATE_GOLDEN=1 ctest --test-dir build/dev -R golden`), then review the diff
// and commit it.
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/testing/clock.hpp"
#include "cairn/testing/recording_store.hpp"
#include "cairn/testing/scripted_model.hpp"
#include "catch.hpp"
#include "weather_agent.hpp"
#include "weather_script.hpp"

namespace ct = cairn::testing;
using cairn_test::ContainsSubstring;

namespace {

/// Everything a test of the agent holds on to: the fakes, and the agent built from them.
struct Fixture {
  std::shared_ptr<ct::ManualClock> clock = std::make_shared<ct::ManualClock>(ct::ManualClock::default_start_ms, 1);
  std::shared_ptr<ct::SequentialIds> ids = std::make_shared<ct::SequentialIds>();
  std::shared_ptr<ct::RecordingStore> store;
  ct::ScriptedModel interpreter{"interpreter"};
  std::shared_ptr<ct::ScriptedPlanner> planner = std::make_shared<ct::ScriptedPlanner>();
  ct::ScriptedModel writer{"writer"};
  std::unique_ptr<weather::WeatherAgent> agent;

  Fixture() {
    cairn::InMemoryStoreOptions options;
    options.clock = clock;
    options.ids = ids;
    store = std::make_shared<ct::RecordingStore>(std::make_shared<cairn::InMemoryArtifactStore>(options));
    agent = std::make_unique<weather::WeatherAgent>(
        weather::AgentParts{store, "acme", interpreter, planner, writer, clock, ids});
  }

  /// Every fake's script was used up and no expectation failed.
  void verify() const {
    interpreter.verify();
    planner->verify();
    writer.verify();
  }
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace

TEST_CASE("the weather agent asks for the city, then answers with the writer's report") {
  Fixture f;
  weather_test::script_two_turns(f.interpreter, *f.planner, f.writer);

  CHECK(f.agent->handle("What's the weather like?") == std::vector<std::string>{"Which city?"});
  const auto said = f.agent->handle("Oslo");
  REQUIRE(said.size() == 2);
  CHECK(said[0] == "Your weather report: Oslo: mild, highs of 18, 21 and 24 degrees.");
  CHECK(said[1] == "Done: Weather report.");
  CHECK(f.agent->engine().goals().find("g1")->status == cairn::GoalStatus::achieved);
  // The writer saw the forecast the tool computed.
  CHECK_THAT(f.writer.prompt(1), ContainsSubstring("\"high_c\":18"));
  f.verify();
}

TEST_CASE("the forecast and the report are each stored once") {
  Fixture f;
  weather_test::script_two_turns(f.interpreter, *f.planner, f.writer);
  f.agent->handle("What's the weather like?");
  f.agent->handle("Oslo");
  const auto forecast = f.agent->context().get_artifact("forecast");
  REQUIRE(forecast);
  CHECK(f.store->count(ct::StoreOperation::store, "acme", forecast->id()) == 1);
  CHECK(f.store->count(ct::StoreOperation::store_if, "acme", "report_aaab") == 1);  // handoff creates with store_if
  CHECK(f.store->count(ct::StoreOperation::store, "acme", "report_aaab") == 0);
  f.verify();
}

TEST_CASE("a lost connection while storing the forecast abandons the request and says why") {
  Fixture f;
  weather_test::script_two_turns(f.interpreter, *f.planner, f.writer);
  f.agent->handle("What's the weather like?");
  // The forecast is the second artifact stored (after the city the user gave).
  f.store->fail_when([](const ct::StoreCall& c) { return c.operation == ct::StoreOperation::store && c.record &&
                                                         c.record->metadata().value("tool_name", "") == "forecast"; },
                     ct::Fault::lost_connection_after_apply, 1);
  const auto said = f.agent->handle("Oslo");
  const cairn::Goal* g1 = f.agent->engine().goals().find("g1");
  CHECK(g1->status == cairn::GoalStatus::abandoned);
  CHECK_FALSE(f.agent->context().has_artifact("forecast"));
  // The write did happen: the record is in the store, unbound. A host that retries must look for it first.
  const auto lost = f.store->calls([](const ct::StoreCall& c) { return c.outcome == ct::CallOutcome::lost_after_apply; });
  REQUIRE(lost.size() == 1);
  CHECK(f.store->inner()->fetch(lost[0].id, "acme"));
  // The writer was never asked.
  CHECK(f.writer.calls() == 0);
  f.interpreter.verify();
  f.planner->verify();
  CHECK_THROWS_AS(f.writer.verify(), ct::script_error);  // its reply was not used
}

TEST_CASE("the whole run (bindings, messages, goal engine) matches the golden file") {
  Fixture f;
  weather_test::script_two_turns(f.interpreter, *f.planner, f.writer);
  f.agent->handle("What's the weather like?");
  f.agent->handle("Oslo");
  f.verify();
  const std::string actual = f.agent->snapshot().dump(2) + "\n";
  const std::string path = std::string(CAIRN_GOLDEN_DIR) + "/weather_run.json";
  const char* update = std::getenv("CAIRN_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary) << actual;
    WARN("rewrote " << path);
  }
  const std::string expected = read_file(path);
  INFO("golden file " << path << " (regenerate with CAIRN_UPDATE_GOLDEN=1)");
  CHECK(actual == expected);
}
