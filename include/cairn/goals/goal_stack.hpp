// cairn — GoalStack: every goal of a conversation by id, and the LIFO stack of the goals still to work on.
//
// Goals stay registered after they leave the stack (achieved or abandoned), so the whole tree can be shown, saved
// and restored. The stack holds ids, bottom first; the top is the goal worked on now.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/clock.hpp"
#include "cairn/detail/text.hpp"
#include "cairn/detail/time.hpp"
#include "cairn/error.hpp"
#include "cairn/goals/goal.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

/// Goals by id and the stack of goals to work on.
///
/// Not thread-safe: one owner (the GoalEngine that holds it, or the host). References returned by find() and peek()
/// stay valid until the stack is destroyed or assigned (goals are never erased).
///
///     cairn::GoalStack stack;
///     stack.push(goal);                       // registered and on top, status pending
///     stack.add_evidence(goal.id, "origin", "London");
///     stack.update_status(goal.id, cairn::GoalStatus::achieved);
///     stack.pop();
class GoalStack {
 public:
  GoalStack() = default;
  /// A stack whose goals are stamped (created_at, updated_at) by `clock`; null: the system clock.
  explicit GoalStack(std::shared_ptr<Clock> clock) : clock_(std::move(clock)) {}
  GoalStack(const GoalStack& other)
      : goals_(other.goals_), stack_(other.stack_), unfinished_(other.unfinished_), clock_(other.clock_) {
    reindex();
  }
  GoalStack& operator=(const GoalStack& other) {
    if (this != &other) *this = GoalStack(other);
    return *this;
  }
  // Moving a deque keeps its elements where they are, so the index stays valid.
  GoalStack(GoalStack&&) noexcept = default;
  GoalStack& operator=(GoalStack&&) noexcept = default;
  ~GoalStack() = default;

  /// Registers `goal` and puts it on top, with status pending. Throws cairn::invalid_goal for an empty or taken id.
  const Goal& push(Goal goal) {
    goal.status = GoalStatus::pending;
    const Goal& g = add(std::move(goal));
    stack_.push_back(g.id);
    return g;
  }

  /// Registers `goal` without stacking it (children of a plan are registered first, then stacked).
  const Goal& add(Goal goal) {
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

  /// Puts the registered goal `id` on top. Throws cairn::not_found for an unknown id.
  void push_id(const std::string& id) {
    get(id);
    stack_.push_back(id);
  }

  /// Takes the top goal off the stack and returns it (it stays registered); null when the stack is empty.
  const Goal* pop() {
    if (stack_.empty()) return nullptr;
    const Goal* g = index_.at(stack_.back());
    stack_.pop_back();
    return g;
  }

  /// The top goal, or null when the stack is empty.
  const Goal* peek() const { return stack_.empty() ? nullptr : index_.at(stack_.back()); }

  /// The goal `id`, or null.
  const Goal* find(const std::string& id) const {
    const auto it = index_.find(id);
    return it == index_.end() ? nullptr : it->second;
  }
  const Goal* find(std::string_view id) const { return find(std::string(id)); }
  const Goal* find(const char* id) const { return find(std::string(id)); }

  /// Sets the status (and the reason, when one is given) of goal `id` and returns the status it had. Throws
  /// cairn::not_found for an unknown id.
  GoalStatus update_status(const std::string& id, GoalStatus status, std::string reason = {}) {
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

  /// Records `value` under `key` in the evidence of goal `id` (replacing an earlier value of the key).
  void add_evidence(const std::string& id, const std::string& key, nlohmann::json value) {
    Goal& g = get(id);
    g.evidence[key] = std::move(value);
    g.updated_at = now();
  }

  /// Sets how goal `id` was split. The children must be registered and have `id` as their parent.
  void set_decomposition(const std::string& id, Decomposition decomposition) {
    Goal& g = get(id);
    for (const std::string& c : decomposition.children) {
      const Goal* child = find(c);
      if (!child || child->parent != id) {
        throw invalid_goal(fmt::format("goal stack: '{}' is not a registered child of '{}'", detail::excerpt(c), id));
      }
    }
    g.decomposition = std::move(decomposition);
    g.updated_at = now();
  }

  /// Takes every goal in `ids` off the stack, keeping the order of the others (one pass).
  void remove(const std::unordered_set<std::string>& ids) {
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

  /// Takes goal `id` off the stack (a no-op when it is not on it).
  void remove_one(const std::string& id) {
    if (!stack_.empty() && stack_.back() == id) {
      stack_.pop_back();
      return;
    }
    const auto it = std::find(stack_.begin(), stack_.end(), id);
    if (it != stack_.end()) stack_.erase(it);
  }

  /// The ids on the stack, bottom first (the last one is the top).
  const std::vector<std::string>& ids() const noexcept { return stack_; }
  /// Every registered goal, in the order they were registered.
  const std::deque<Goal>& goals() const noexcept { return goals_; }

  std::size_t size() const noexcept { return stack_.size(); }
  bool empty() const noexcept { return stack_.empty(); }
  /// How many goals are registered (finished ones included).
  std::size_t goal_count() const noexcept { return goals_.size(); }
  /// How many registered goals are not finished (pending, active or blocked).
  std::size_t unfinished_count() const noexcept { return unfinished_; }
  /// The clock that stamps goals; null when it is the system clock.
  const std::shared_ptr<Clock>& clock() const noexcept { return clock_; }

  /// Nesting level of goal `id`: 0 for a root, 1 for its children, ...
  std::size_t depth(const std::string& id) const {
    std::size_t d = 0;
    for (const Goal* g = &get(id); !g->parent.empty(); g = &get(g->parent)) ++d;
    return d;
  }

  /// The goal and all its descendants, the goal first (breadth-first).
  std::vector<const Goal*> subtree(const std::string& id) const {
    std::vector<const Goal*> out{&get(id)};
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (!out[i]->decomposition) continue;
      for (const std::string& c : out[i]->decomposition->children) out.push_back(&get(c));
    }
    return out;
  }

  /// `{"goals": [...], "stack": [ids, bottom first]}`.
  nlohmann::json to_json() const {
    nlohmann::json goals = nlohmann::json::array();
    for (const Goal& g : goals_) goals.push_back(g);
    return {{"goals", std::move(goals)}, {"stack", stack_}};
  }

  /// Reads what to_json() wrote and checks that it is a consistent tree: unique ids, parents that exist and list
  /// the goal as a child (no cycles), children that name their parent, stack entries that exist once each and are
  /// not finished. Throws cairn::parse_error / cairn::invalid_goal naming the goal; nothing is half-read. The stack
  /// read stamps later changes with `clock` (null: the system clock).
  static GoalStack from_json(const nlohmann::json& j, std::shared_ptr<Clock> clock = nullptr) {
    const detail::GoalReader in("goal stack");
    in.object(j, "");
    const auto* goals = detail::GoalReader::find(j, "goals");
    if (!goals || !goals->is_array()) in.fail("goals", "expected an array");
    const auto* stack = detail::GoalReader::find(j, "stack");
    if (!stack || !stack->is_array()) in.fail("stack", "expected an array");
    return from_json(*goals, *stack, std::move(clock));
  }

  /// The same from the two arrays (`goals`, `stack`) held elsewhere, without copying them into one object first.
  static GoalStack from_json(const nlohmann::json& goals_array, const nlohmann::json& stack_array,
                             std::shared_ptr<Clock> clock = nullptr) {
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
    for (const Goal& g : out.goals_) {
      if (!g.parent.empty()) {
        const Goal* p = out.find(g.parent);
        if (!p) {
          throw invalid_goal(fmt::format("goal stack: goal {}: parent '{}' does not exist", g.id,
                                         detail::excerpt(g.parent)));
        }
        if (!p->decomposition || std::find(p->decomposition->children.begin(), p->decomposition->children.end(),
                                           g.id) == p->decomposition->children.end()) {
          throw invalid_goal(
              fmt::format("goal stack: goal {}: its parent {} does not list it as a child", g.id, p->id));
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
      if (!g) in.fail(fmt::format("stack[{}]", i), fmt::format("goal '{}' does not exist", detail::excerpt(id.get<std::string>())));
      if (!on_stack.insert(g->id).second) in.fail(fmt::format("stack[{}]", i), fmt::format("goal {} is on the stack twice", g->id));
      if (is_final(g->status)) {
        in.fail(fmt::format("stack[{}]", i), fmt::format("goal {} is {} and cannot be on the stack", g->id,
                                                          to_string(g->status)));
      }
      out.stack_.push_back(g->id);
    }
    return out;
  }

 private:
  Goal& get(const std::string& id) const {
    const auto it = index_.find(id);
    if (it == index_.end()) throw not_found(fmt::format("goal stack: no goal with id '{}'", detail::excerpt(id)));
    return *it->second;
  }

  std::int64_t now() const { return detail::now_ms(clock_.get()); }

  void reindex() {
    index_.clear();
    for (Goal& g : goals_) index_.emplace(g.id, &g);
  }

  std::deque<Goal> goals_;  // a deque: references stay valid as goals are added
  std::unordered_map<std::string, Goal*> index_;
  std::vector<std::string> stack_;
  std::size_t unfinished_ = 0;
  std::shared_ptr<Clock> clock_;  // null: the system clock
};

CAIRN_END_NAMESPACE
