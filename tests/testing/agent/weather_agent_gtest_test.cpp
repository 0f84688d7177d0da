// The example host agent (weather_agent.hpp) tested with GoogleTest and cairn/testing. The fakes throw
// cairn::testing::script_error, which GoogleTest reports as a failure of the test that made the call; TearDown
// verifies that every script was used up.
#include <gtest/gtest.h>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/testing/clock.hpp"
#include "cairn/testing/recording_store.hpp"
#include "cairn/testing/scripted_model.hpp"
#include "weather_agent.hpp"
#include "weather_script.hpp"

namespace ct = cairn::testing;

namespace {

class WeatherAgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cairn::InMemoryStoreOptions options;
    options.clock = clock_;
    options.ids = ids_;
    store_ = std::make_shared<ct::RecordingStore>(std::make_shared<cairn::InMemoryArtifactStore>(options));
    agent_ = std::make_unique<weather::WeatherAgent>(
        weather::AgentParts{store_, "acme", interpreter_, planner_, writer_, clock_, ids_});
  }

  void TearDown() override {
    if (!check_scripts_) return;
    EXPECT_NO_THROW(interpreter_.verify());
    EXPECT_NO_THROW(planner_->verify());
    EXPECT_NO_THROW(writer_.verify());
  }

  std::shared_ptr<ct::ManualClock> clock_ = std::make_shared<ct::ManualClock>();
  std::shared_ptr<ct::SequentialIds> ids_ = std::make_shared<ct::SequentialIds>();
  std::shared_ptr<ct::RecordingStore> store_;
  ct::ScriptedModel interpreter_{"interpreter"};
  std::shared_ptr<ct::ScriptedPlanner> planner_ = std::make_shared<ct::ScriptedPlanner>();
  ct::ScriptedModel writer_{"writer"};
  std::unique_ptr<weather::WeatherAgent> agent_;
  bool check_scripts_ = true;
};

TEST_F(WeatherAgentTest, AsksForTheCityThenAnswersWithTheReport) {
  weather_test::script_two_turns(interpreter_, *planner_, writer_);
  EXPECT_EQ(agent_->handle("What's the weather like?"), std::vector<std::string>{"Which city?"});
  clock_->advance(60000);  // the user takes a minute to answer
  const auto said = agent_->handle("Oslo");
  ASSERT_EQ(said.size(), 2u);
  EXPECT_EQ(said[0], "Your weather report: Oslo: mild, highs of 18, 21 and 24 degrees.");
  EXPECT_EQ(said[1], "Done: Weather report.");
  EXPECT_EQ(agent_->context().message(2).timestamp, ct::ManualClock::default_start_ms + 60000);
  EXPECT_EQ(agent_->engine().goals().find("g1")->status, cairn::GoalStatus::achieved);
}

TEST_F(WeatherAgentTest, TheReportIsStoredOnceUnderASequentialId) {
  weather_test::script_two_turns(interpreter_, *planner_, writer_);
  agent_->handle("What's the weather like?");
  agent_->handle("Oslo");
  EXPECT_EQ(store_->count(ct::StoreOperation::store_if, "acme", "report_aaab"), 1u);  // handoff creates with store_if
  EXPECT_EQ(store_->count(ct::StoreOperation::store, "acme", "report_aaab"), 0u);
  const auto forecast = agent_->context().get_artifact("forecast");
  ASSERT_TRUE(forecast);
  EXPECT_EQ(forecast->created_at(), ct::ManualClock::default_start_ms);
}

TEST_F(WeatherAgentTest, AWriterOutageAbandonsTheRequest) {
  interpreter_
      .reply(R"({"action": "new_goal", "goal": {"gloss": "Weather report", "context": {"city": "Rome"}},
                 "reasoning": "asks with a city"})");
  planner_->reply(weather_test::weather_plan());
  writer_.reply_error(cairn::storage_error("writer endpoint timed out"));
  agent_->handle("Weather in Rome?");
  const cairn::Goal* g1 = agent_->engine().goals().find("g1");
  ASSERT_NE(g1, nullptr);
  EXPECT_EQ(g1->status, cairn::GoalStatus::abandoned);
  EXPECT_NE(g1->reason.find("writer endpoint timed out"), std::string::npos) << g1->reason;
  EXPECT_EQ(store_->count(ct::StoreOperation::store), 2u);  // the city and the forecast; no report
  EXPECT_FALSE(agent_->context().has_artifact("report"));
}

TEST_F(WeatherAgentTest, AnUnexpectedModelCallFailsWithTheCallNamed) {
  check_scripts_ = false;  // this test looks at the failure itself
  try {
    agent_->handle("Hello?");
    FAIL() << "the interpreter had no reply scripted";
  } catch (const ct::script_error& e) {
    EXPECT_NE(std::string(e.what()).find("scripted model 'interpreter': call 1: the script has no reply left"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
