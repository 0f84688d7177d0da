// cairn — the function bodies of cairn/goals/goal_stack.hpp (docs/api.md, "Compiled mode"). Header-only, the
// default, that header includes this file and CAIRN_INLINE is `inline`; with CAIRN_COMPILED_LIB they are
// compiled once, into cairn::compiled (src/compiled/), and the header only declares them.
#pragma once

#include "cairn/goals/goal_stack.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

CAIRN_INLINE GoalStack::GoalStack(const GoalStack& other)
    : goals_(other.goals_), stack_(other.stack_), unfinished_(other.unfinished_), clock_(other.clock_) {
  reindex();
}

CAIRN_INLINE const Goal& GoalStack::push(Goal goal) {
  goal.status = GoalStatus::pending;
  const Goal& g = add(std::move(goal));
  stack_.push_back(g.id);
  return g;
}

CAIRN_INLINE const Goal& GoalStack::add(Goal goal) {
  if (goal.id.empty()) throw invalid_goal("goal stack: a goal needs an id");
  if (index_.count(goal.id)) {
    throw invalid_goal(fmt::format("goal stack: a goal with id '{}' exists already", detail::excerpt(goal.id)));
  }
  if (goal.created_at == 0) goal.created_at = now();
  if (goal.updated_at == 0) goal.updated_at = goal.created_at;
  if (!is_final(goal.status)) ++unfinished_;
  goals_.push_back(std::move(goal));
  Goal& g = goals_.back();
  index_.emplace(g.id, &g);
  return g;
}

CAIRN_INLINE void GoalStack::push_id(const std::string& id) {
  get(id);
  stack_.push_back(id);
}

CAIRN_INLINE const Goal* GoalStack::pop() {
  if (stack_.empty()) return nullptr;
  const Goal* g = index_.at(stack_.back());
  stack_.pop_back();
  return g;
}

CAIRN_INLINE const Goal* GoalStack::find(const std::string& id) const {
  const auto it = index_.find(id);
  return it == index_.end() ? nullptr : it->second;
}

CAIRN_INLINE GoalStatus GoalStack::update_status(const std::string& id, GoalStatus status, std::string reason) {
  Goal& g = get(id);
  const GoalStatus before = g.status;
  if (is_final(g.status) != is_final(status)) {
    if (is_final(status)) {
      --unfinished_;
    } else {
      ++unfinished_;
    }
  }
  g.status = status;
  if (!reason.empty()) g.reason = std::move(reason);
  g.updated_at = now();
  return before;
}

CAIRN_INLINE void GoalStack::add_evidence(const std::string& id, const std::string& key, nlohmann::json value) {
  Goal& g = get(id);
  g.evidence[key] = std::move(value);
  g.updated_at = now();
}

CAIRN_INLINE void GoalStack::set_decomposition(const std::string& id, Decomposition decomposition) {
  Goal& g = get(id);
  if (decomposition.children.size() > Decomposition::max_children) {
    throw limit_exceeded(
        fmt::format("goal stack: '{}' would have {} children, more than the limit of {} "
                    "(Decomposition::max_children)",
                    id, decomposition.children.size(), Decomposition::max_children));
  }
  for (const std::string& c : decomposition.children) {
    const Goal* child = find(c);
    if (!child || child->parent != id) {
      throw invalid_goal(fmt::format("goal stack: '{}' is not a registered child of '{}'", detail::excerpt(c), id));
    }
  }
  g.decomposition = std::move(decomposition);
  g.updated_at = now();
}

CAIRN_INLINE void GoalStack::remove(const std::unordered_set<std::string>& ids) {
  if (ids.empty()) return;
  if (ids.size() == 1 && !stack_.empty() && stack_.back() == *ids.begin()) {
    stack_.pop_back();
    return;
  }
  std::vector<std::string> kept;
  kept.reserve(stack_.size());
  for (auto& id : stack_) {
    if (!ids.count(id)) kept.push_back(std::move(id));
  }
  stack_ = std::move(kept);
}

CAIRN_INLINE void GoalStack::remove_one(const std::string& id) {
  if (!stack_.empty() && stack_.back() == id) {
    stack_.pop_back();
    return;
  }
  const auto it = std::find(stack_.begin(), stack_.end(), id);
  if (it != stack_.end()) stack_.erase(it);
}

CAIRN_INLINE std::size_t GoalStack::depth(const std::string& id) const {
  std::size_t d = 0;
  for (const Goal* g = &get(id); !g->parent.empty(); g = &get(g->parent)) ++d;
  return d;
}

CAIRN_INLINE std::vector<const Goal*> GoalStack::subtree(const std::string& id) const {
  std::vector<const Goal*> out{&get(id)};
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (!out[i]->decomposition) continue;
    for (const std::string& c : out[i]->decomposition->children) out.push_back(&get(c));
  }
  return out;
}

CAIRN_INLINE nlohmann::json GoalStack::to_json() const {
  nlohmann::json goals = nlohmann::json::array();
  for (const Goal& g : goals_) goals.push_back(g);
  return {{"goals", std::move(goals)}, {"stack", stack_}};
}

CAIRN_INLINE GoalStack GoalStack::from_json(const nlohmann::json& j, std::shared_ptr<Clock> clock) {
  const detail::GoalReader in("goal stack");
  in.object(j, "");
  const auto* goals = detail::GoalReader::find(j, "goals");
  if (!goals || !goals->is_array()) in.fail("goals", "expected an array");
  const auto* stack = detail::GoalReader::find(j, "stack");
  if (!stack || !stack->is_array()) in.fail("stack", "expected an array");
  return from_json(*goals, *stack, std::move(clock));
}

CAIRN_INLINE GoalStack GoalStack::from_json(const nlohmann::json& goals_array, const nlohmann::json& stack_array,
                                            std::shared_ptr<Clock> clock) {
  const detail::GoalReader in("goal stack");
  if (!goals_array.is_array()) in.fail("goals", "expected an array");
  if (!stack_array.is_array()) in.fail("stack", "expected an array");
  const auto* goals = &goals_array;
  const auto* stack = &stack_array;
  GoalStack out(std::move(clock));
  for (std::size_t i = 0; i < goals->size(); ++i) {
    Goal g = goal_from_json((*goals)[i], fmt::format("goal stack: goals[{}]", i));
    if (out.index_.count(g.id)) {
      throw invalid_goal(fmt::format("goal stack: goals[{}]: id '{}' is used twice", i, detail::excerpt(g.id)));
    }
    out.add(std::move(g));
  }
  // Every (parent, child) link the decompositions list, so that checking a goal against its parent's list is one
  // lookup (a search of the list made a parent of 200,000 children quadratic).
  std::unordered_set<std::string> listed;
  for (const Goal& g : out.goals_) {
    if (!g.decomposition) continue;
    for (const std::string& c : g.decomposition->children) listed.insert(g.id + '\0' + c);
  }
  for (const Goal& g : out.goals_) {
    if (!g.parent.empty()) {
      const Goal* p = out.find(g.parent);
      if (!p) {
        throw invalid_goal(
            fmt::format("goal stack: goal {}: parent '{}' does not exist", g.id, detail::excerpt(g.parent)));
      }
      if (!p->decomposition || !listed.count(p->id + '\0' + g.id)) {
        throw invalid_goal(fmt::format("goal stack: goal {}: its parent {} does not list it as a child", g.id, p->id));
      }
    }
    if (g.decomposition) {
      std::unordered_set<std::string_view> seen;
      for (const std::string& c : g.decomposition->children) {
        const Goal* child = out.find(c);
        if (!child) {
          throw invalid_goal(fmt::format("goal stack: goal {}: child '{}' does not exist", g.id, detail::excerpt(c)));
        }
        if (child->parent != g.id) {
          throw invalid_goal(fmt::format("goal stack: goal {}: child {} names another parent", g.id, c));
        }
        if (!seen.insert(c).second) {
          throw invalid_goal(fmt::format("goal stack: goal {}: child {} is listed twice", g.id, c));
        }
      }
    }
  }
  // Every goal names exactly one parent that lists it, so a walk up either reaches a root or loops. Goals whose
  // walk already ended at a root are remembered, so the whole check is linear in the number of goals.
  std::unordered_set<const Goal*> rooted;
  std::vector<const Goal*> path;
  for (const Goal& g : out.goals_) {
    path.clear();
    const Goal* p = &g;
    while (!rooted.count(p) && !p->parent.empty()) {
      if (path.size() > out.goals_.size()) {
        throw invalid_goal(fmt::format("goal stack: goal {}: its parent ids form a cycle", g.id));
      }
      path.push_back(p);
      p = out.find(p->parent);
    }
    rooted.insert(p);
    rooted.insert(path.begin(), path.end());
  }
  std::unordered_set<std::string> on_stack;
  for (std::size_t i = 0; i < stack->size(); ++i) {
    const auto& id = (*stack)[i];
    if (!id.is_string()) in.fail(fmt::format("stack[{}]", i), "expected a goal id");
    const Goal* g = out.find(id.get_ref<const std::string&>());
    if (!g)
      in.fail(fmt::format("stack[{}]", i),
              fmt::format("goal '{}' does not exist", detail::excerpt(id.get<std::string>())));
    if (!on_stack.insert(g->id).second)
      in.fail(fmt::format("stack[{}]", i), fmt::format("goal {} is on the stack twice", g->id));
    if (is_final(g->status)) {
      in.fail(fmt::format("stack[{}]", i),
              fmt::format("goal {} is {} and cannot be on the stack", g->id, to_string(g->status)));
    }
    out.stack_.push_back(g->id);
  }
  return out;
}

CAIRN_INLINE Goal& GoalStack::get(const std::string& id) const {
  const auto it = index_.find(id);
  if (it == index_.end()) throw not_found(fmt::format("goal stack: no goal with id '{}'", detail::excerpt(id)));
  return *it->second;
}

CAIRN_INLINE void GoalStack::reindex() {
  index_.clear();
  for (Goal& g : goals_) index_.emplace(g.id, &g);
}

CAIRN_END_NAMESPACE
