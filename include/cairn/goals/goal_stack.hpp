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
  GoalStack(const GoalStack& other);
  GoalStack& operator=(const GoalStack& other) {
    if (this != &other) *this = GoalStack(other);
    return *this;
  }
  // Moving a deque keeps its elements where they are, so the index stays valid.
  GoalStack(GoalStack&&) noexcept = default;
  GoalStack& operator=(GoalStack&&) noexcept = default;
  ~GoalStack() = default;

  /// Registers `goal` and puts it on top, with status pending. Throws cairn::invalid_goal for an empty or taken id.
  const Goal& push(Goal goal);

  /// Registers `goal` without stacking it (children of a plan are registered first, then stacked).
  const Goal& add(Goal goal);

  /// Puts the registered goal `id` on top. Throws cairn::not_found for an unknown id.
  void push_id(const std::string& id);

  /// Takes the top goal off the stack and returns it (it stays registered); null when the stack is empty.
  const Goal* pop();

  /// The top goal, or null when the stack is empty.
  const Goal* peek() const { return stack_.empty() ? nullptr : index_.at(stack_.back()); }

  /// The goal `id`, or null.
  const Goal* find(const std::string& id) const;
  const Goal* find(std::string_view id) const { return find(std::string(id)); }
  const Goal* find(const char* id) const { return find(std::string(id)); }

  /// Sets the status (and the reason, when one is given) of goal `id` and returns the status it had. Throws
  /// cairn::not_found for an unknown id.
  GoalStatus update_status(const std::string& id, GoalStatus status, std::string reason = {});

  /// Records `value` under `key` in the evidence of goal `id` (replacing an earlier value of the key).
  void add_evidence(const std::string& id, const std::string& key, nlohmann::json value);

  /// Sets how goal `id` was split. The children must be registered and have `id` as their parent; at most
  /// Decomposition::max_children of them (cairn::limit_exceeded).
  void set_decomposition(const std::string& id, Decomposition decomposition);

  /// Takes every goal in `ids` off the stack, keeping the order of the others (one pass).
  void remove(const std::unordered_set<std::string>& ids);

  /// Takes goal `id` off the stack (a no-op when it is not on it).
  void remove_one(const std::string& id);

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
  std::size_t depth(const std::string& id) const;

  /// The goal and all its descendants, the goal first (breadth-first).
  std::vector<const Goal*> subtree(const std::string& id) const;

  /// `{"goals": [...], "stack": [ids, bottom first]}`.
  nlohmann::json to_json() const;

  /// Reads what to_json() wrote and checks that it is a consistent tree: unique ids, parents that exist and list
  /// the goal as a child (no cycles), children that name their parent, stack entries that exist once each and are
  /// not finished. Throws cairn::parse_error / cairn::invalid_goal naming the goal; nothing is half-read. The stack
  /// read stamps later changes with `clock` (null: the system clock).
  static GoalStack from_json(const nlohmann::json& j, std::shared_ptr<Clock> clock = nullptr);

  /// The same from the two arrays (`goals`, `stack`) held elsewhere, without copying them into one object first.
  static GoalStack from_json(const nlohmann::json& goals_array, const nlohmann::json& stack_array,
                             std::shared_ptr<Clock> clock = nullptr);

 private:
  Goal& get(const std::string& id) const;

  std::int64_t now() const { return detail::now_ms(clock_.get()); }

  void reindex();

  std::deque<Goal> goals_;  // a deque: references stay valid as goals are added
  std::unordered_map<std::string, Goal*> index_;
  std::vector<std::string> stack_;
  std::size_t unfinished_ = 0;
  std::shared_ptr<Clock> clock_;  // null: the system clock
};

CAIRN_END_NAMESPACE

#ifndef CAIRN_COMPILED_LIB
#include "cairn/goals/goal_stack-inl.hpp"
#endif
