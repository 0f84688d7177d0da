// cairn::testing — scripted fakes of the goal engine's interfaces (MessageInterpreter, GoalPlanner,
// ConditionEvaluator, QuestionWriter), with the queue, answers, expectations and self-verification of
// cairn/testing/scripted_model.hpp. Each records, as its prompt, the text the matching model adapter would have sent
// (docs/testing.md lists the formats), so the same expectations read alike for a ScriptedModel behind a
// ModelInterpreter and for a ScriptedInterpreter.
//
//     auto planner = std::make_shared<cairn::testing::ScriptedPlanner>();
//     planner->reply(plan, {cairn::testing::prompt_contains("Plan goal g1: Weather report")});
//     cairn::GoalEngine engine(ctx, tools, {interpreter, planner});
#pragma once

#include <string>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/detail/text.hpp"
#include "cairn/goals/goal.hpp"
#include "cairn/goals/interfaces.hpp"
#include "cairn/goals/model_adapters.hpp"
#include "cairn/testing/scripted_model.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace testing {

/// A MessageInterpreter that answers scripted Interpretations. The recorded prompt is the adapter's
/// interpret-message prompt for the call (user message, current goal, evidence). Thread-safe.
class ScriptedInterpreter final : public MessageInterpreter,
                                  public script_detail::ScriptedBase<ScriptedInterpreter, Interpretation> {
 public:
  explicit ScriptedInterpreter(std::string name = "interpreter")
      : ScriptedBase("scripted interpreter", std::move(name)) {}

  Interpretation interpret(const std::string& message, const Goal* current, const nlohmann::json& evidence) override {
    return next(render_interpret_prompt(message, current, evidence));
  }
};

/// A GoalPlanner that answers scripted GoalPlans. The recorded prompt reads
/// `Plan goal <id>: <gloss>\nPredicate: <json>\nEvidence: <json>`. Thread-safe.
class ScriptedPlanner final : public GoalPlanner, public script_detail::ScriptedBase<ScriptedPlanner, GoalPlan> {
 public:
  explicit ScriptedPlanner(std::string name = "planner") : ScriptedBase("scripted planner", std::move(name)) {}

  GoalPlan plan(const Goal& goal, const nlohmann::json& evidence) override {
    return next(fmt::format("Plan goal {}: {}\nPredicate: {}\nEvidence: {}", goal.id, goal.gloss,
                            cairn::detail::json_text(nlohmann::json(goal.predicate)),
                            cairn::detail::json_text(evidence)));
  }
};

/// A ConditionEvaluator that answers scripted booleans. The recorded prompt is the adapter's check-completion
/// prompt. Thread-safe.
class ScriptedEvaluator final : public ConditionEvaluator, public script_detail::ScriptedBase<ScriptedEvaluator, bool> {
 public:
  explicit ScriptedEvaluator(std::string name = "evaluator") : ScriptedBase("scripted evaluator", std::move(name)) {}

  bool evaluate(const Predicate& predicate, const Goal& goal, const nlohmann::json& evidence) override {
    return next(render_completion_prompt(predicate, evidence, goal.gloss));
  }
};

/// A QuestionWriter that answers scripted Questions. The recorded prompt is the adapter's execute-gather prompt.
/// Thread-safe.
class ScriptedQuestionWriter final : public QuestionWriter,
                                     public script_detail::ScriptedBase<ScriptedQuestionWriter, Question> {
 public:
  explicit ScriptedQuestionWriter(std::string name = "question writer")
      : ScriptedBase("scripted question writer", std::move(name)) {}

  Question write(const Goal&, const std::string& key, const std::string& prompt,
                 const nlohmann::json& evidence) override {
    return next(render_gather_prompt(key, prompt, evidence));
  }
};

}  // namespace testing
CAIRN_END_NAMESPACE
