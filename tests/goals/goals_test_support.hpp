// Host parts for the goal tests: a rule-based interpreter driven by the message text, planners and evaluators made
// from lambdas, and the train tools of the showcase. They are real implementations of the host interfaces (the
// kind a host writes), not mocks of something cairn could run itself.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/context/execution_context.hpp"
#include "cairn/context/tool.hpp"
#include "cairn/goals/engine.hpp"
#include "cairn/goals/interfaces.hpp"
#include "cairn/goals/sop.hpp"

namespace goals_test {

using nlohmann::json;

/// "new: <gloss>" (optionally "| {context json}"), "ev: <key> = <json or text>", "abandon", "abandon: <id>",
/// anything else: continue. Remembers the current goal id and the evidence it was shown.
struct TextInterpreter : cairn::MessageInterpreter {
  std::vector<std::string> seen_current;
  std::vector<json> seen_evidence;

  cairn::Interpretation interpret(const std::string& m, const cairn::Goal* current, const json& evidence) override {
    seen_current.push_back(current ? current->id : "");
    seen_evidence.push_back(evidence);
    auto trim = [](std::string s) {
      while (!s.empty() && s.front() == ' ') s.erase(s.begin());
      while (!s.empty() && s.back() == ' ') s.pop_back();
      return s;
    };
    if (m.rfind("new:", 0) == 0) {
      std::string rest = m.substr(4);
      const auto bar = rest.find('|');
      if (bar == std::string::npos) return cairn::Interpretation::new_goal(trim(rest));
      return cairn::Interpretation::new_goal(trim(rest.substr(0, bar)), json::parse(rest.substr(bar + 1)));
    }
    if (m.rfind("ev:", 0) == 0) {
      const std::string rest = m.substr(3);
      const auto eq = rest.find('=');
      const std::string key = trim(rest.substr(0, eq));
      const std::string text = trim(rest.substr(eq + 1));
      json value = json::parse(text, nullptr, false);
      if (value.is_discarded()) value = text;
      return cairn::Interpretation::add_evidence(key, value);
    }
    if (m == "abandon") return cairn::Interpretation::abandon_goal();
    if (m.rfind("abandon:", 0) == 0) return cairn::Interpretation::abandon_goal(trim(m.substr(8)));
    return cairn::Interpretation::continue_conversation();
  }
};

struct FnPlanner : cairn::GoalPlanner {
  std::function<cairn::GoalPlan(const cairn::Goal&, const json&)> fn;
  explicit FnPlanner(std::function<cairn::GoalPlan(const cairn::Goal&, const json&)> f) : fn(std::move(f)) {}
  cairn::GoalPlan plan(const cairn::Goal& goal, const json& evidence) override { return fn(goal, evidence); }
};

struct FnEvaluator : cairn::ConditionEvaluator {
  std::function<bool(const cairn::Predicate&, const cairn::Goal&, const json&)> fn;
  explicit FnEvaluator(std::function<bool(const cairn::Predicate&, const cairn::Goal&, const json&)> f)
      : fn(std::move(f)) {}
  bool evaluate(const cairn::Predicate& p, const cairn::Goal& g, const json& e) override { return fn(p, g, e); }
};

inline cairn::SubgoalSpec sub(std::string gloss, std::string predicate, json args = json::object(),
                              std::vector<cairn::Condition> done_when = {}) {
  cairn::SubgoalSpec s;
  s.gloss = std::move(gloss);
  s.predicate = cairn::Predicate{std::move(predicate), std::move(args)};
  s.done_when = std::move(done_when);
  return s;
}

inline cairn::GoalPlan plan_of(cairn::Decomposition::Kind kind, std::vector<cairn::SubgoalSpec> subgoals) {
  cairn::GoalPlan p;
  p.kind = kind;
  p.subgoals = std::move(subgoals);
  p.source = "test";
  return p;
}

/// A timetable search that records what it was asked.
inline cairn::Tool train_search_tool(std::shared_ptr<std::vector<json>> calls) {
  return cairn::Tool{"train-search-api", "Timetable search",
                     json::parse(R"({"type": "object", "properties": {"origin": {"type": "string"},
                       "destination": {"type": "string"}, "date": {"type": "string"},
                       "passengers": {"type": "number"}}, "required": ["origin", "destination", "date"]})"),
                     [calls](const json& in) {
                       calls->push_back(in);
                       return cairn::ToolResult::ok(json::array(
                           {{{"id", "ES9014"}, {"departs", "09:01"}, {"arrives", "12:20"}, {"price", 89}},
                            {{"id", "ES9024"}, {"departs", "10:31"}, {"arrives", "13:47"}, {"price", 64}}}));
                     }};
}

inline cairn::Tool train_booking_tool(std::shared_ptr<std::vector<json>> calls) {
  return cairn::Tool{
      "train-booking-api", "Books a train",
      json::parse(R"({"type": "object", "properties": {"selectedTrain": {"type": "object"},
                       "date": {"type": "string"}}, "required": ["selectedTrain"]})"),
      [calls](const json& in) {
        calls->push_back(in);
        return cairn::ToolResult::ok(
            {{"reference", "CRN-" + in["selectedTrain"]["id"].get<std::string>()}, {"train", in["selectedTrain"]}});
      }};
}

inline std::string source_path(const std::string& relative) { return std::string(CAIRN_SOURCE_DIR) + "/" + relative; }

/// Everything one engine needs, on a real in-memory store.
struct Rig {
  std::shared_ptr<cairn::InMemoryArtifactStore> store = std::make_shared<cairn::InMemoryArtifactStore>();
  cairn::ExecutionContext ctx{store, "acme"};
  cairn::ToolRegistry tools;
  std::shared_ptr<TextInterpreter> interpreter = std::make_shared<TextInterpreter>();
  std::vector<cairn::GoalTransition> transitions;
};

/// An engine state without what two equal runs do not share: times, and the store ids of their artifacts.
inline json without_times(json state) {
  for (auto& g : state["goals"]) {
    g.erase("created_at");
    g.erase("updated_at");
  }
  for (auto& a : state["artifacts"]) a.erase("id");
  return state;
}

}  // namespace goals_test
