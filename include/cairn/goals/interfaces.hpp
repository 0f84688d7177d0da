// cairn — what the host gives the goal engine: a MessageInterpreter (user text -> what to do), a GoalPlanner
// (composite goal -> subgoals, AND or OR), a ConditionEvaluator (predicate_true conditions) and, optionally, a
// QuestionWriter (the words of gather_info questions). cairn never calls a model itself: model_adapters.hpp turns a
// prompt-in, text-out callable into any of these, and sop.hpp is a planner that needs no model at all.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/context/resolve.hpp"
#include "cairn/detail/enum_ostream.hpp"
#include "cairn/detail/json.hpp"
#include "cairn/detail/text.hpp"
#include "cairn/error.hpp"
#include "cairn/goals/goal.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

// ---- MessageInterpreter --------------------------------------------------------------------------------------------

/// What a user message means for the goals (seed 002 §2.4).
struct Interpretation {
  enum class Action { new_goal, add_evidence, abandon_goal, continue_ };
  Action action = Action::continue_;
  std::string gloss;                                  ///< new_goal: what the user wants
  nlohmann::json context = nlohmann::json::object();  ///< new_goal: facts already given; they become its evidence
  std::string key;                                    ///< add_evidence
  nlohmann::json value;                               ///< add_evidence
  std::string target;  ///< abandon_goal: the goal to abandon; "" means the current goal (the top of the stack)
  std::string reasoning;

  static Interpretation new_goal(std::string gloss, nlohmann::json context = nlohmann::json::object());
  static Interpretation add_evidence(std::string key, nlohmann::json value);
  static Interpretation abandon_goal(std::string target = {});
  static Interpretation continue_conversation() { return Interpretation{}; }
};

std::string_view to_string(Interpretation::Action a) noexcept;
CAIRN_DETAIL_ENUM_OSTREAM(Interpretation::Action)

/// Throws cairn::invalid_argument when `i` cannot be applied: a new_goal without a gloss or with context keys that
/// are not valid evidence keys, an add_evidence with a bad key or a null value.
void check_interpretation(const Interpretation& i);

/// Turns a user message into an Interpretation. `current` is the goal on top of the stack (null when there is
/// none) and `evidence` what that goal can see (its own evidence over its ancestors').
class MessageInterpreter {
 public:
  virtual ~MessageInterpreter() = default;
  virtual Interpretation interpret(const std::string& message, const Goal* current, const nlohmann::json& evidence) = 0;
};

// ---- GoalPlanner ---------------------------------------------------------------------------------------------------

/// One subgoal of a plan. `id` and `parent` are local to the plan and optional: a planner that wants more than one
/// level at once gives a subgoal an id and names it as the `parent` of others (which must then be composite).
struct SubgoalSpec {
  std::string gloss;
  Predicate predicate;
  std::vector<Condition> done_when;
  nlohmann::json provenance = nlohmann::json::object();
  std::string id;      ///< local id, only needed when other subgoals name it as parent
  std::string parent;  ///< local id of the subgoal this one belongs to; "" for a child of the planned goal
  Decomposition::Kind kind = Decomposition::Kind::all;  ///< how this subgoal's own children combine, if it has any
};

/// What a planner returns for a composite goal.
struct GoalPlan {
  Decomposition::Kind kind = Decomposition::Kind::all;
  std::vector<SubgoalSpec> subgoals;
  std::string source;  ///< "sop", "vanilla", ... (shown in provenance and logs)

  /// Most subgoals one plan may have (a plan comes from a model; GoalEngineOptions::max_goals is far lower).
  static constexpr std::size_t max_subgoals = Decomposition::max_children;

  /// Reads a plan written as JSON (by a model, say): `{"decomposition": "AND"|"OR", "subgoals": [{"gloss",
  /// "predicate": {name, args}, "done_when"?, "provenance"?, "id"?, "parent"?, "decomposition"?}], "source"?}`.
  /// Throws cairn::parse_error naming the field, cairn::limit_exceeded for more than max_subgoals subgoals or JSON
  /// nested deeper than JsonLimits{}.max_depth (256).
  /// check_plan() does the rest of the checking.
  static GoalPlan from_json(const nlohmann::json& j);
};

void to_json(nlohmann::json& j, const SubgoalSpec& s);

void to_json(nlohmann::json& j, const GoalPlan& p);

/// Checks a plan for goal `goal_id` before anything is created: at least one subgoal, a gloss and a valid goal
/// predicate (with its arguments) on each, local ids unique, parents that name a composite subgoal of the same plan
/// and no cycle of parent ids. Throws cairn::invalid_goal: "plan for goal g1: subgoals[2].predicate.name: 'fly' is
/// not one of composite, ...", and cairn::limit_exceeded for more than GoalPlan::max_subgoals subgoals. Linear
/// time in the number of subgoals.
void check_plan(const GoalPlan& plan, const std::string& goal_id);

namespace detail {
/// Depth of each subgoal of a plan that check_plan() accepted, below the planned goal (1: a direct child), in
/// linear time. Throws cairn::invalid_goal, with `where`, for a cycle of parent ids or a parent that is no id.
std::vector<std::size_t> subgoal_depths(const GoalPlan& plan, const std::string& where);
}  // namespace detail

/// Splits a composite goal into subgoals. `evidence` is what the goal can see (its own over its ancestors').
/// Throwing, or returning a plan that check_plan() rejects, abandons the goal with the error as the reason.
class GoalPlanner {
 public:
  virtual ~GoalPlanner() = default;
  virtual GoalPlan plan(const Goal& goal, const nlohmann::json& evidence) = 0;
};

// ---- ConditionEvaluator and QuestionWriter ------------------------------------------------------------------------

/// Decides predicate_true conditions (`predicate` is the condition's, `goal` the goal it belongs to).
class ConditionEvaluator {
 public:
  virtual ~ConditionEvaluator() = default;
  virtual bool evaluate(const Predicate& predicate, const Goal& goal, const nlohmann::json& evidence) = 0;
};

/// A gather_info question and, optionally, answers to suggest.
struct Question {
  std::string text;
  std::vector<std::string> suggestions;
};

/// Words the question of a gather_info goal. Without one the engine asks the predicate's `prompt`, else
/// `Please provide <key>`.
class QuestionWriter {
 public:
  virtual ~QuestionWriter() = default;
  virtual Question write(const Goal& goal, const std::string& key, const std::string& prompt,
                         const nlohmann::json& evidence) = 0;
};

/// The question asked for `key` when there is no QuestionWriter: `prompt` if given, else `Please provide <key>`.
std::string default_question(const std::string& key, const std::string& prompt);

CAIRN_END_NAMESPACE

#ifndef CAIRN_COMPILED_LIB
#include "cairn/goals/interfaces-inl.hpp"
#endif
