// cairn — the function bodies of cairn/goals/interfaces.hpp (docs/api.md, "Compiled mode"). Header-only, the
// default, that header includes this file and CAIRN_INLINE is `inline`; with CAIRN_COMPILED_LIB they are
// compiled once, into cairn::compiled (src/compiled/), and the header only declares them.
#pragma once

#include "cairn/goals/interfaces.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

CAIRN_INLINE Interpretation Interpretation::new_goal(std::string gloss, nlohmann::json context) {
  Interpretation i;
  i.action = Action::new_goal;
  i.gloss = std::move(gloss);
  i.context = std::move(context);
  return i;
}

CAIRN_INLINE Interpretation Interpretation::add_evidence(std::string key, nlohmann::json value) {
  Interpretation i;
  i.action = Action::add_evidence;
  i.key = std::move(key);
  i.value = std::move(value);
  return i;
}

CAIRN_INLINE Interpretation Interpretation::abandon_goal(std::string target) {
  Interpretation i;
  i.action = Action::abandon_goal;
  i.target = std::move(target);
  return i;
}

CAIRN_INLINE std::string_view to_string(Interpretation::Action a) noexcept {
  switch (a) {
    case Interpretation::Action::new_goal: return "new_goal";
    case Interpretation::Action::add_evidence: return "add_evidence";
    case Interpretation::Action::abandon_goal: return "abandon_goal";
    case Interpretation::Action::continue_: return "continue";
  }
  return "continue";
}

CAIRN_INLINE void check_interpretation(const Interpretation& i) {
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
        throw invalid_argument(
            fmt::format("interpretation: evidence key '{}' is not valid (expected [A-Za-z_][A-Za-z0-9_-]{{0,127}})",
                        detail::excerpt(i.key)));
      }
      if (i.value.is_null()) throw invalid_argument(fmt::format("interpretation: evidence {} has no value", i.key));
      break;
    case Interpretation::Action::abandon_goal:
    case Interpretation::Action::continue_: break;
  }
}

CAIRN_INLINE void to_json(nlohmann::json& j, const SubgoalSpec& s) {
  j = {{"gloss", s.gloss}, {"predicate", s.predicate}, {"done_when", s.done_when}, {"provenance", s.provenance}};
  if (!s.id.empty()) j["id"] = s.id;
  if (!s.parent.empty()) j["parent"] = s.parent;
  if (s.kind != Decomposition::Kind::all) j["decomposition"] = to_string(s.kind);
}

CAIRN_INLINE void to_json(nlohmann::json& j, const GoalPlan& p) {
  j = {{"decomposition", to_string(p.kind)}, {"subgoals", p.subgoals}, {"source", p.source}};
}

CAIRN_INLINE GoalPlan GoalPlan::from_json(const nlohmann::json& j) {
  const detail::GoalReader in("plan");
  in.object(j, "");
  // A model's JSON, maybe parsed without cairn's limits: copying provenance recurses once per level.
  if (const int max = JsonLimits{}.max_depth; detail::json_depth(j, max) > max) {
    throw limit_exceeded(fmt::format("plan: JSON nesting is deeper than the limit of {} levels", max));
  }
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
  if (subgoals->size() > GoalPlan::max_subgoals) {
    throw limit_exceeded(fmt::format("plan: subgoals: {} subgoals, more than the limit of {} (GoalPlan::max_subgoals)",
                                     subgoals->size(), GoalPlan::max_subgoals));
  }
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

CAIRN_INLINE void check_plan(const GoalPlan& plan, const std::string& goal_id) {
  const std::string where = fmt::format("plan for goal {}", goal_id);
  if (plan.subgoals.empty()) throw invalid_goal(fmt::format("{}: the planner returned no subgoals", where));
  if (plan.subgoals.size() > GoalPlan::max_subgoals) {
    throw limit_exceeded(fmt::format("{}: {} subgoals, more than the limit of {} (GoalPlan::max_subgoals)", where,
                                     plan.subgoals.size(), GoalPlan::max_subgoals));
  }
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
        throw invalid_goal(
            fmt::format("{}: done_when[{}].key: '{}' is not a valid evidence key", at, c, detail::excerpt(cond.key)));
      }
      if (cond.kind == Condition::Kind::predicate_true && cond.predicate.name.empty()) {
        throw invalid_goal(fmt::format("{}: done_when[{}].predicate.name must not be empty", at, c));
      }
    }
    if (!s.id.empty() && !by_id.emplace(s.id, i).second) {
      throw invalid_goal(
          fmt::format("{}: id '{}' is used by subgoals[{}] already", at, detail::excerpt(s.id), by_id[s.id]));
    }
  }
  for (std::size_t i = 0; i < plan.subgoals.size(); ++i) {
    const SubgoalSpec& s = plan.subgoals[i];
    if (s.parent.empty()) continue;
    const std::string at = fmt::format("{}: subgoals[{}]", where, i);
    const auto it = by_id.find(s.parent);
    if (it == by_id.end()) {
      throw invalid_goal(
          fmt::format("{}: parent '{}' is not the id of a subgoal in this plan", at, detail::excerpt(s.parent)));
    }
    if (plan.subgoals[it->second].predicate.name != Predicate::composite) {
      throw invalid_goal(fmt::format("{}: parent '{}' is not a composite subgoal", at, s.parent));
    }
  }
  (void)detail::subgoal_depths(plan, where);  // and no cycle
}

namespace detail {
CAIRN_INLINE std::vector<std::size_t> subgoal_depths(const GoalPlan& plan, const std::string& where) {
  const std::size_t n = plan.subgoals.size();
  std::unordered_map<std::string_view, std::size_t> by_id;
  for (std::size_t i = 0; i < n; ++i) {
    if (!plan.subgoals[i].id.empty()) by_id.emplace(plan.subgoals[i].id, i);
  }
  // Each subgoal is walked up to one whose depth is known, once: the walk's subgoals get their depths on the way
  // back. A walk that meets itself is a cycle.
  std::vector<std::size_t> depth(n, 0);
  std::vector<char> on_path(n, 0);
  std::vector<std::size_t> path;
  for (std::size_t i = 0; i < n; ++i) {
    path.clear();
    std::size_t j = i;
    while (depth[j] == 0) {
      if (on_path[j]) {
        const SubgoalSpec& s = plan.subgoals[i];
        throw invalid_goal(fmt::format("{}: subgoals[{}]: parent ids form a cycle ('{}' is its own ancestor)", where, i,
                                       s.id.empty() ? s.gloss : s.id));
      }
      on_path[j] = 1;
      path.push_back(j);
      const std::string& parent = plan.subgoals[j].parent;
      if (parent.empty()) break;
      const auto it = by_id.find(parent);
      if (it == by_id.end()) {
        throw invalid_goal(fmt::format("{}: subgoals[{}]: parent '{}' is not the id of a subgoal in this plan", where,
                                       j, excerpt(parent)));
      }
      j = it->second;
    }
    std::size_t d = depth[j];
    for (auto k = path.rbegin(); k != path.rend(); ++k) {
      depth[*k] = ++d;
      on_path[*k] = 0;
    }
  }
  return depth;
}
}  // namespace detail

CAIRN_INLINE std::string default_question(const std::string& key, const std::string& prompt) {
  return prompt.empty() ? fmt::format("Please provide {}", key) : prompt;
}

CAIRN_END_NAMESPACE
