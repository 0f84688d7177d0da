// The scripts of the weather agent's tests, shared by the Catch2 and the GoogleTest versions: what the interpreter
// model, the planner and the writer model answer in a normal two-turn conversation.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "cairn/goals/interfaces.hpp"
#include "cairn/testing/scripted_goals.hpp"

namespace weather_test {

/// The plan for "Weather report for <city>": ask the city, get the forecast, have it written up, present it.
inline cairn::GoalPlan weather_plan() {
  auto step = [](std::string gloss, std::string predicate, nlohmann::json args) {
    cairn::SubgoalSpec s;
    s.gloss = std::move(gloss);
    s.predicate = cairn::Predicate{std::move(predicate), std::move(args)};
    return s;
  };
  cairn::GoalPlan plan;
  plan.kind = cairn::Decomposition::Kind::all;
  plan.source = "test";
  plan.subgoals = {step("Find out the city", "gather_info", {{"key", "city"}, {"prompt", "Which city?"}}),
                   step("Get the forecast", "use_tool", {{"tool", "forecast"}, {"output", "forecast"}}),
                   step("Write the report", "use_tool", {{"tool", "write_report"}, {"output", "report"}}),
                   step("Present the report", "present_info", {{"key", "report"}, {"text", "Your weather report"}})};
  return plan;
}

/// Scripts a normal conversation: "What's the weather like?" -> "Which city?", "Oslo" -> the report.
inline void script_two_turns(cairn::testing::ScriptedModel& interpreter, cairn::testing::ScriptedPlanner& planner,
                             cairn::testing::ScriptedModel& writer) {
  using cairn::testing::prompt_contains;
  interpreter
      .reply(R"({"action": "new_goal", "goal": {"gloss": "Weather report"}, "reasoning": "asks for the weather"})",
             {prompt_contains("User message: What's the weather like?"), prompt_contains("Current goal: none")})
      .reply(R"({"action": "add_evidence", "evidence": {"key": "city", "value": "Oslo"}, "reasoning": "a city"})",
             {prompt_contains("User message: Oslo"), prompt_contains("asking for city")});
  planner.reply(weather_plan(), {prompt_contains("Plan goal g1: Weather report")});
  writer.reply("ARTIFACT\nSUMMARY: Oslo, next three days\nOslo: mild, highs of 18, 21 and 24 degrees.",
               {prompt_contains("Write a short weather report"), prompt_contains("\"city\":\"Oslo\"")});
}

}  // namespace weather_test
