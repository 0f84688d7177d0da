// A small host agent — the code a host would write and want to unit-test — and nothing cairn-specific about
// testing in it: it takes its store, its models, its clock and its id generator from whoever builds it. Production
// code passes real ones (or leaves the clock and ids null); the tests in this folder pass cairn::testing fakes.
//
// It answers "what's the weather in <city>?" with a goal engine: the interpreter model turns messages into goals and
// evidence, the planner splits the request into gather_info (city) -> use_tool forecast -> use_tool write_report ->
// present_info report, the forecast tool computes a forecast, and write_report hands the forecast to a writer
// sub-agent (another model) whose reply is stored as a handoff artifact and referenced in the report.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cairn/artifact/store.hpp"
#include "cairn/clock.hpp"
#include "cairn/context/execution_context.hpp"
#include "cairn/context/tool.hpp"
#include "cairn/goals/engine.hpp"
#include "cairn/goals/interfaces.hpp"
#include "cairn/goals/model_adapters.hpp"
#include "cairn/handoff/handoff.hpp"

namespace weather {

/// What the agent needs from outside. Every pointer may be a real implementation or a test's fake.
struct AgentParts {
  std::shared_ptr<cairn::ArtifactStore> store;
  std::string tenant_id;
  cairn::ModelFunction interpreter_model;       ///< the model behind the goal interpreter
  std::shared_ptr<cairn::GoalPlanner> planner;  ///< splits requests into steps
  cairn::ModelFunction writer_model;            ///< the sub-agent that writes the report
  std::shared_ptr<cairn::Clock> clock;          ///< null: the system clock
  std::shared_ptr<cairn::IdGenerator> ids;      ///< null: random ids
};

/// One conversation of the weather agent. Not thread-safe: one owner.
class WeatherAgent {
 public:
  explicit WeatherAgent(AgentParts parts)
      : parts_(std::move(parts)),
        context_(parts_.store, parts_.tenant_id, parts_.clock),
        handoff_(parts_.store, parts_.tenant_id, handoff_options(parts_.ids)),
        engine_(context_, tools_,
                {std::make_shared<cairn::ModelInterpreter>(parts_.interpreter_model), parts_.planner}) {
    tools_.add(
        cairn::Tool{"forecast",
                    "The forecast for a city",
                    {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}, {"required", {"city"}}},
                    [](const nlohmann::json& in) { return forecast(in.at("city").get<std::string>()); }});
    tools_.add(cairn::Tool{
        "write_report",
        "Has the writer turn a forecast into a report",
        {{"type", "object"}, {"properties", {{"forecast", {{"type", "object"}}}}}, {"required", {"forecast"}}},
        [this](const nlohmann::json& in) { return write_report(in.at("forecast")); }});
  }

  /// One user message in, what the agent says out (with the writer's report expanded in place of its reference).
  std::vector<std::string> handle(const std::string& message) {
    std::vector<std::string> said = engine_.handle(message);
    for (std::string& line : said) line = handoff_.expand_references(line).text;
    return said;
  }

  const cairn::ExecutionContext& context() const noexcept { return context_; }
  const cairn::GoalEngine& engine() const noexcept { return engine_; }

  /// The forecast the tool computes: three days, numbers derived from the city's name (no network in a test).
  static cairn::ToolResult forecast(const std::string& city) {
    if (city.empty()) return cairn::ToolResult::failure("forecast: the city is empty");
    nlohmann::json days = nlohmann::json::array();
    int seed = 0;
    for (char c : city) seed += static_cast<unsigned char>(c);
    for (int d = 0; d < 3; ++d) days.push_back({{"day", d + 1}, {"high_c", 10 + (seed + 3 * d) % 15}});
    return cairn::ToolResult::ok({{"city", city}, {"days", std::move(days)}});
  }

 private:
  static cairn::HandoffOptions handoff_options(std::shared_ptr<cairn::IdGenerator> ids) {
    cairn::HandoffOptions o;
    o.id_prefix = "report";
    o.ids = std::move(ids);
    return o;
  }

  cairn::ToolResult write_report(const nlohmann::json& forecast) {
    const cairn::HandoffTarget writer{"writer", parts_.writer_model, cairn::RevealPolicy::summary};
    const auto result =
        handoff_.transfer(writer, {{"manager", "Write a short weather report for: " + forecast.dump()}});
    if (!result.artifact) return cairn::ToolResult::failure("the writer did not hand back a report");
    return cairn::ToolResult::ok(result.text, {{"report_id", result.artifact->id()}});
  }

  AgentParts parts_;
  cairn::ToolRegistry tools_;
  cairn::ExecutionContext context_;
  cairn::Handoff handoff_;
  cairn::GoalEngine engine_;
};

}  // namespace weather
