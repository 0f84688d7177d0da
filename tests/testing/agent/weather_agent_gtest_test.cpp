// The example host agent (weather_agent.hpp) tested with GoogleTest and cairn/testing: the same tests as the Catch2
// version, with the fakes in the fixture. The fakes throw cairn::testing::script_error, which GoogleTest reports as a
// failure of the test that made the call, and verify themselves when the fixture goes (cairn/testing/gtest.hpp
// turns what they find into ADD_FAILURE()).
//
// docs/testing.md shows the parts between the `// [docs:...]` markers (tests/docs/check_snippets.cmake checks that
// they are the same).
#include <stdexcept>
#include <string>
#include <vector>

// [docs:gtest-wiring]
#include "cairn/artifact/memory_store.hpp"
#include "cairn/testing/clock.hpp"
#include "cairn/testing/golden.hpp"
#include "cairn/testing/gtest.hpp"  // includes gtest; unverified fakes and golden mismatches fail the running test
#include "cairn/testing/recording_store.hpp"
#include "cairn/testing/scripted_goals.hpp"
#include "weather_agent.hpp"
#include "weather_script.hpp"

namespace ct = cairn::testing;

class WeatherAgentTest : public ::testing::Test {
 protected:
  std::shared_ptr<ct::ManualClock> clock_ = std::make_shared<ct::ManualClock>(ct::ManualClock::default_start_ms, 1);
  std::shared_ptr<ct::SequentialIds> ids_ = std::make_shared<ct::SequentialIds>();
  std::shared_ptr<ct::RecordingStore> store_ = std::make_shared<ct::RecordingStore>(
      std::make_shared<cairn::InMemoryArtifactStore>(cairn::InMemoryStoreOptions{16, clock_, ids_}));
  ct::ScriptedModel interpreter_{"interpreter"}, writer_{"writer"};
  std::shared_ptr<ct::ScriptedPlanner> planner_ = std::make_shared<ct::ScriptedPlanner>();
  weather::WeatherAgent agent_{{store_, "acme", interpreter_, planner_, writer_, clock_, ids_}};
};
// [docs:end]

namespace {

// [docs:gtest-test]
TEST_F(WeatherAgentTest, AsksForTheCityThenAnswersWithTheReport) {
  weather_test::script_two_turns(interpreter_, *planner_, writer_);

  EXPECT_EQ(agent_.handle("What's the weather like?"), std::vector<std::string>{"Which city?"});
  const auto said = agent_.handle("Oslo");
  ASSERT_EQ(said.size(), 2u);
  EXPECT_EQ(said[0], "Your weather report: Oslo: mild, highs of 18, 21 and 24 degrees.");
  EXPECT_EQ(said[1], "Done: Weather report.");
  EXPECT_EQ(agent_.engine().goals().find("g1")->status, cairn::GoalStatus::achieved);  // prints "abandoned" if not
  EXPECT_EQ(store_->count(ct::StoreOperation::store_if, "acme", "report_aaab"), 1u);   // the handoff stored it once
  EXPECT_NE(writer_.prompt(1).find("\"high_c\":18"), std::string::npos);  // the writer saw the tool's forecast
}  // the fakes verify themselves when the fixture goes: a reply never used fails this test

TEST_F(WeatherAgentTest, TheWholeRunMatchesTheGoldenFile) {
  weather_test::script_two_turns(interpreter_, *planner_, writer_);
  agent_.handle("What's the weather like?");
  agent_.handle("Oslo");
  ct::check_golden(
      CAIRN_GOLDEN_DIR "/weather_run.json",
      ct::RunDump().store(*store_, "acme").calls(*store_).context(agent_.context()).engine(agent_.engine()).json());
}
// [docs:end]

TEST_F(WeatherAgentTest, TimeMovesOnlyWhenTheTestSaysSo) {
  weather_test::script_two_turns(interpreter_, *planner_, writer_);
  clock_->set_auto_advance(0);
  clock_->set(ct::ManualClock::default_start_ms);
  agent_.handle("What's the weather like?");
  clock_->advance(60000);  // the user takes a minute to answer
  agent_.handle("Oslo");
  EXPECT_EQ(agent_.context().message(0).timestamp, ct::ManualClock::default_start_ms);
  EXPECT_EQ(agent_.context().message(2).timestamp, ct::ManualClock::default_start_ms + 60000);
}

TEST_F(WeatherAgentTest, TheReportIsStoredOnceUnderASequentialId) {
  weather_test::script_two_turns(interpreter_, *planner_, writer_);
  clock_->set_auto_advance(0);
  clock_->set(ct::ManualClock::default_start_ms);
  agent_.handle("What's the weather like?");
  agent_.handle("Oslo");
  EXPECT_EQ(store_->count(ct::StoreOperation::store_if, "acme", "report_aaab"), 1u);  // handoff creates with store_if
  EXPECT_EQ(store_->count(ct::StoreOperation::store, "acme", "report_aaab"), 0u);
  const auto forecast = agent_.context().get_artifact("forecast");
  ASSERT_TRUE(forecast);
  EXPECT_EQ(forecast->created_at(), ct::ManualClock::default_start_ms);
}

TEST_F(WeatherAgentTest, AWriterOutageAbandonsTheRequest) {
  interpreter_.reply(R"({"action": "new_goal", "goal": {"gloss": "Weather report", "context": {"city": "Rome"}},
                 "reasoning": "asks with a city"})");
  planner_->reply(weather_test::weather_plan());
  writer_.reply_error(cairn::storage_error("writer endpoint timed out"));
  agent_.handle("Weather in Rome?");
  const cairn::Goal* g1 = agent_.engine().goals().find("g1");
  ASSERT_NE(g1, nullptr);
  EXPECT_EQ(g1->status, cairn::GoalStatus::abandoned);
  EXPECT_NE(g1->reason.find("writer endpoint timed out"), std::string::npos) << g1->reason;
  EXPECT_EQ(store_->count(ct::StoreOperation::store), 2u);  // the city and the forecast; no report
  EXPECT_FALSE(agent_.context().has_artifact("report"));
}

TEST_F(WeatherAgentTest, AnUnexpectedModelCallFailsWithTheCallNamed) {
  try {
    agent_.handle("Hello?");
    FAIL() << "the interpreter had no reply scripted";
  } catch (const ct::script_error& e) {
    EXPECT_NE(std::string(e.what()).find("scripted model 'interpreter': call 1: the script has no reply left"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(interpreter_.verify(), ct::script_error);  // said here, so not again when the fixture goes
}

// Hidden demonstrations (DISABLED_), run by tests/testing/report_test.cpp with --gtest_also_run_disabled_tests:
// a fake left unverified fails its test through cairn/testing/gtest.hpp, and the runner goes on.
TEST(SelfVerifyDemo, DISABLED_AFakeLeftUnverified) {
  ct::ScriptedModel model("classifier");
  model.reply("invoice").reply("never used");
  EXPECT_EQ(model("classify"), "invoice");
}

TEST(SelfVerifyDemo, DISABLED_ATestThatThrowsWithAnUnverifiedFake) {
  ct::ScriptedModel model("lookup");
  model.reply("never used");
  throw std::runtime_error("the agent threw");
}

TEST(SelfVerifyDemo, DISABLED_ATestAfterThosePasses) {
  ct::ScriptedModel model("m");
  model.reply("used");
  EXPECT_EQ(model("x"), "used");
}

TEST(EscapeDemo, DISABLED_AFakesFailureEscapesTheTest) {
  ct::ScriptedModel model("escaping");
  model.reply("yes", {ct::prompt_contains("ACME")});
  model("Globex");
}

TEST(EscapeDemo, DISABLED_AFakesFailureAComponentSwallowed) {
  ct::ScriptedModel model("swallowed");
  try {
    model("anything");
  } catch (const ct::script_error&) {
  }
}

TEST(PrintedEnums, GoogleTestPrintsNames) {
  EXPECT_EQ(::testing::PrintToString(ct::CallOutcome::lost_after_apply), "lost_after_apply");
  EXPECT_EQ(::testing::PrintToString(ct::StoreOperation::store_if), "store_if");
  EXPECT_EQ(::testing::PrintToString(ct::Fault::storage_error), "storage_error");
  EXPECT_EQ(::testing::PrintToString(cairn::GoalStatus::abandoned), "abandoned");
  EXPECT_EQ(::testing::PrintToString(cairn::errc::not_found), "not_found");
}

}  // namespace
