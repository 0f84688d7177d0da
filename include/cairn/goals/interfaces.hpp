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

  static Interpretation new_goal(std::string gloss, nlohmann::json context = nlohmann::json::object()) {
    Interpretation i;
    i.action = Action::new_goal;
    i.gloss = std::move(gloss);
    i.context = std::move(context);
    return i;
  }
  static Interpretation add_evidence(std::string key, nlohmann::json value) {
    Interpretation i;
    i.action = Action::add_evidence;
    i.key = std::move(key);
    i.value = std::move(value);
    return i;
  }
  static Interpretation abandon_goal(std::string target = {}) {
    Interpretation i;
    i.action = Action::abandon_goal;
    i.target = std::move(target);
    return i;
  }
  static Interpretation continue_conversation() { return Interpretation{}; }
};

inline std::string_view to_string(Interpretation::Action a) noexcept {
  switch (a) {
    case Interpretation::Action::new_goal: return "new_goal";
    case Interpretation::Action::add_evidence: return "add_evidence";
    case Interpretation::Action::abandon_goal: return "abandon_goal";
    case Interpretation::Action::continue_: return "continue";
  }
  return "continue";
}

/// Throws cairn::invalid_argument when `i` cannot be applied: a new_goal without a gloss or with context keys that
/// are not valid evidence keys, an add_evidence with a bad key or a null value.
inline void check_interpretation(const Interpretation& i) {
  auto bad_key = [](const std::string& key) { return !is_valid_artifact_name(key); };
  switch (i.action) {
    case Interpretation::Action::new_goal:
      if (i.gloss.empty()) throw invalid_argument("interpretation: new_goal needs a gloss");
      if (!i.context.is_object()) {
        throw invalid_argument(
            fmt::format("interpretation: new_goal context must be an object, got {}", i.context.type_name()));
      }
      for (const auto& [key, value] : i.context.items()) {
        if (bad_key(key)) {
          throw invalid_argument(fmt::format(
              "interpretation: context key '{}' is not a valid evidence key (expected [A-Za-z_][A-Za-z0-9_-]{{0,127}})",
              detail::excerpt(key)));
        }
        if (value.is_null()) {
          throw invalid_argument(fmt::format("interpretation: context.{} must not be null", key));
        }
      }
      break;
    case Interpretation::Action::add_evidence:
      if (bad_key(i.key)) {
        throw invalid_argument(fmt::format(
            "interpretation: evidence key '{}' is not valid (expected [A-Za-z_][A-Za-z0-9_-]{{0,127}})",
            detail::excerpt(i.key)));
      }
      if (i.value.is_null()) throw invalid_argument(fmt::format("interpretation: evidence {} has no value", i.key));
      break;
    case Interpretation::Action::abandon_goal:
    case Interpretation::Action::continue_: break;
  }
}

/// Turns a user message into an Interpretation. `current` is the goal on top of the stack (null when there is
/// none) and `evidence` what that goal can see (its own evidence over its ancestors').
class MessageInterpreter {
 public:
  virtual ~MessageInterpreter() = default;
  virtual Interpretation interpret(const std::string& message, const Goal* current,
                                   const nlohmann::json& evidence) = 0;
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

  /// Reads a plan written as JSON (by a model, say): `{"decomposition": "AND"|"OR", "subgoals": [{"gloss",
  /// "predicate": {name, args}, "done_when"?, "provenance"?, "id"?, "parent"?, "decomposition"?}], "source"?}`.
  /// Throws cairn::parse_error naming the field. check_plan() does the rest of the checking.
  static GoalPlan from_json(const nlohmann::json& j);
};

inline void to_json(nlohmann::json& j, const SubgoalSpec& s) {
  j = {{"gloss", s.gloss}, {"predicate", s.predicate}, {"done_when", s.done_when}, {"provenance", s.provenance}};
  if (!s.id.empty()) j["id"] = s.id;
  if (!s.parent.empty()) j["parent"] = s.parent;
  if (s.kind != Decomposition::Kind::all) j["decomposition"] = to_string(s.kind);
}

inline void to_json(nlohmann::json& j, const GoalPlan& p) {
  j = {{"decomposition", to_string(p.kind)}, {"subgoals", p.subgoals}, {"source", p.source}};
}

inline GoalPlan GoalPlan::from_json(const nlohmann::json& j) {
  const detail::GoalReader in("plan");
  in.object(j, "");
  GoalPlan plan;
  const std::string kind = in.string(j, "decomposition", "", false);
  if (!kind.empty()) {
    const auto k = decomposition_kind_from_string(kind);
    if (!k) in.fail("decomposition", fmt::format("'{}' is not AND or OR", detail::excerpt(kind)));
    plan.kind = *k;
  }
  plan.source = in.string(j, "source", "", false);
  const auto* subgoals = detail::GoalReader::find(j, "subgoals");
  if (!subgoals) in.fail("subgoals", "missing");
  if (!subgoals->is_array()) in.fail("subgoals", fmt::format("expected an array, got {}", subgoals->type_name()));
  for (std::size_t i = 0; i < subgoals->size(); ++i) {
    const std::string path = fmt::format("subgoals[{}]", i);
    const nlohmann::json& s = (*subgoals)[i];
    in.object(s, path);
    SubgoalSpec spec;
    spec.gloss = in.string(s, "gloss", path);
    const auto* pred = detail::GoalReader::find(s, "predicate");
    if (!pred) in.fail(path + ".predicate", "missing");
    spec.predicate = detail::read_predicate(*pred, in, path + ".predicate");
    spec.done_when = detail::read_conditions(s, in, path);
    spec.provenance = in.object_member(s, "provenance", path);
    spec.id = in.string(s, "id", path, false);
    spec.parent = in.string(s, "parent", path, false);
    const std::string sk = in.string(s, "decomposition", path, false);
    if (!sk.empty()) {
      const auto k = decomposition_kind_from_string(sk);
      if (!k) in.fail(path + ".decomposition", fmt::format("'{}' is not AND or OR", detail::excerpt(sk)));
      spec.kind = *k;
    }
    plan.subgoals.push_back(std::move(spec));
  }
  return plan;
}

/// Checks a plan for goal `goal_id` before anything is created: at least one subgoal, a gloss and a valid goal
/// predicate (with its arguments) on each, local ids unique, parents that name a composite subgoal of the same plan
/// and no cycle of parent ids. Throws cairn::invalid_goal: "plan for goal g1: subgoals[2].predicate.name: 'fly' is
/// not one of composite, ...".
inline void check_plan(const GoalPlan& plan, const std::string& goal_id) {
  const std::string where = fmt::format("plan for goal {}", goal_id);
  if (plan.subgoals.empty()) throw invalid_goal(fmt::format("{}: the planner returned no subgoals", where));
  std::unordered_map<std::string, std::size_t> by_id;
  for (std::size_t i = 0; i < plan.subgoals.size(); ++i) {
    const SubgoalSpec& s = plan.subgoals[i];
    const std::string at = fmt::format("{}: subgoals[{}]", where, i);
    if (s.gloss.empty()) throw invalid_goal(fmt::format("{}: gloss must not be empty", at));
    detail::check_goal_predicate(s.predicate, at);
    if (!s.provenance.is_object()) throw invalid_goal(fmt::format("{}: provenance must be an object", at));
    for (std::size_t c = 0; c < s.done_when.size(); ++c) {
      const Condition& cond = s.done_when[c];
      if (cond.kind == Condition::Kind::has_evidence && !is_valid_artifact_name(cond.key)) {
        throw invalid_goal(fmt::format("{}: done_when[{}].key: '{}' is not a valid evidence key", at, c,
                                       detail::excerpt(cond.key)));
      }
      if (cond.kind == Condition::Kind::predicate_true && cond.predicate.name.empty()) {
        throw invalid_goal(fmt::format("{}: done_when[{}].predicate.name must not be empty", at, c));
      }
    }
    if (!s.id.empty() && !by_id.emplace(s.id, i).second) {
      throw invalid_goal(fmt::format("{}: id '{}' is used by subgoals[{}] already", at, detail::excerpt(s.id),
                                     by_id[s.id]));
    }
  }
  for (std::size_t i = 0; i < plan.subgoals.size(); ++i) {
    const SubgoalSpec& s = plan.subgoals[i];
    if (s.parent.empty()) continue;
    const std::string at = fmt::format("{}: subgoals[{}]", where, i);
    const auto it = by_id.find(s.parent);
    if (it == by_id.end()) {
      throw invalid_goal(fmt::format("{}: parent '{}' is not the id of a subgoal in this plan", at,
                                     detail::excerpt(s.parent)));
    }
    if (plan.subgoals[it->second].predicate.name != Predicate::composite) {
      throw invalid_goal(fmt::format("{}: parent '{}' is not a composite subgoal", at, s.parent));
    }
    // Walking up from here must reach a top-level subgoal within as many steps as there are subgoals.
    std::size_t steps = 0;
    for (const SubgoalSpec* p = &s; !p->parent.empty(); p = &plan.subgoals[by_id.at(p->parent)]) {
      if (++steps > plan.subgoals.size()) {
        throw invalid_goal(fmt::format("{}: parent ids form a cycle ('{}' is its own ancestor)", at,
                                       s.id.empty() ? s.gloss : s.id));
      }
      if (!by_id.count(p->parent)) break;
    }
  }
}

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
inline std::string default_question(const std::string& key, const std::string& prompt) {
  return prompt.empty() ? fmt::format("Please provide {}", key) : prompt;
}

CAIRN_END_NAMESPACE
