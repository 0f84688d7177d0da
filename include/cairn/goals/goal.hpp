// cairn — a goal of the goal engine: what it means (gloss), how it is pursued (predicate), when it is done
// (done_when conditions), what it has learned (evidence) and where it sits in the goal tree (parent, decomposition).
//
// Every type reads and writes JSON. Reading checks everything and throws cairn::parse_error naming the field:
// "goal g3: predicate.name: 'fly' is not one of composite, use_tool, gather_info, confirm, present_info, execute".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/context/resolve.hpp"
#include "cairn/detail/enum_ostream.hpp"
#include "cairn/detail/text.hpp"
#include "cairn/error.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

/// A plan, a goal tree or an engine state that breaks the goal rules (unknown predicate, empty subgoals, a cycle of
/// parent ids, ...). The message names the goal and the field.
class invalid_goal : public error {
  CAIRN_DETAIL_ERROR_CONSTRUCTORS(invalid_goal, error)
};

/// Where a goal is in its life. achieved and abandoned are final.
enum class GoalStatus { pending, active, achieved, abandoned, blocked };

std::string_view to_string(GoalStatus s) noexcept;
CAIRN_DETAIL_ENUM_OSTREAM(GoalStatus)

/// The status named `text`, or nothing.
std::optional<GoalStatus> goal_status_from_string(std::string_view text) noexcept;

/// True for achieved and abandoned: the goal will never change again.
inline bool is_final(GoalStatus s) noexcept { return s == GoalStatus::achieved || s == GoalStatus::abandoned; }

/// How a goal is pursued: `{name, args}`. A goal's predicate is one of the six names below; the predicate inside a
/// predicate_true condition may have any name (the ConditionEvaluator decides what it means).
///
///     Predicate{"use_tool", {{"tool", "train-search-api"}, {"output", "trainList"}}}
///     Predicate{"gather_info", {{"key", "date"}, {"prompt", "When are you travelling?"}}}
struct Predicate {
  std::string name;
  nlohmann::json args = nlohmann::json::object();

  static constexpr std::string_view composite = "composite";
  static constexpr std::string_view use_tool = "use_tool";
  static constexpr std::string_view gather_info = "gather_info";
  static constexpr std::string_view confirm = "confirm";
  static constexpr std::string_view present_info = "present_info";
  static constexpr std::string_view execute = "execute";

  friend bool operator==(const Predicate& a, const Predicate& b);
  friend bool operator!=(const Predicate& a, const Predicate& b) { return !(a == b); }
};

/// True when `name` is one of the six goal predicates.
bool is_goal_predicate(std::string_view name) noexcept;

/// A done_when condition: `has_evidence{key}` (the key is in the goal's visible evidence) or
/// `predicate_true{predicate}` (the host's ConditionEvaluator says so).
struct Condition {
  enum class Kind { has_evidence, predicate_true };
  Kind kind = Kind::has_evidence;
  std::string key;      ///< has_evidence
  Predicate predicate;  ///< predicate_true

  static Condition has_evidence(std::string key) { return Condition{Kind::has_evidence, std::move(key), {}}; }
  static Condition predicate_true(Predicate p) { return Condition{Kind::predicate_true, {}, std::move(p)}; }

  friend bool operator==(const Condition& a, const Condition& b) {
    return a.kind == b.kind && a.key == b.key && a.predicate == b.predicate;
  }
  friend bool operator!=(const Condition& a, const Condition& b) { return !(a == b); }
};

/// How a composite goal was split: all children (AND) or any one of them, tried in order (OR).
struct Decomposition {
  enum class Kind { all, any };  // AND, OR
  Kind kind = Kind::all;
  std::vector<std::string> children;  ///< child goal ids, in the planner's order

  /// Most children a goal may have: a plan has at most this many subgoals (GoalPlan::max_subgoals), and a state
  /// whose goal lists more is refused.
  static constexpr std::size_t max_children = 1000;

  friend bool operator==(const Decomposition& a, const Decomposition& b) {
    return a.kind == b.kind && a.children == b.children;
  }
};

inline std::string_view to_string(Decomposition::Kind k) noexcept {
  return k == Decomposition::Kind::all ? "AND" : "OR";
}
CAIRN_DETAIL_ENUM_OSTREAM(Decomposition::Kind)

/// The kind named "AND" or "OR", or nothing.
std::optional<Decomposition::Kind> decomposition_kind_from_string(std::string_view text) noexcept;

/// One goal. Goals live in a GoalStack, which owns them and is the only way to change them.
struct Goal {
  std::string id;
  std::string gloss;  ///< what the goal means, in words: "Book a train to Paris"
  Predicate predicate{std::string(Predicate::composite)};
  std::string parent;  ///< "" for a root goal
  std::optional<Decomposition> decomposition;
  GoalStatus status = GoalStatus::pending;
  std::vector<Condition> done_when;
  nlohmann::json evidence = nlohmann::json::object();
  nlohmann::json provenance = nlohmann::json::object();  ///< where the goal came from: sop_id, step_index, ...
  std::string reason;  ///< why the goal last became blocked, abandoned or achieved ("" when there is nothing to say)
  std::int64_t created_at = 0;  ///< milliseconds since the Unix epoch, UTC
  std::int64_t updated_at = 0;

  bool is_root() const noexcept { return parent.empty(); }
  bool is_composite() const noexcept { return predicate.name == Predicate::composite; }
};

// ---- JSON ----------------------------------------------------------------------------------------------------------

void to_json(nlohmann::json& j, const Predicate& p);

void to_json(nlohmann::json& j, const Condition& c);

void to_json(nlohmann::json& j, const Decomposition& d);

void to_json(nlohmann::json& j, const Goal& g);

namespace detail {

/// Reads goal-layer JSON with errors of the form "<label>: <path>: <message>".
class GoalReader {
 public:
  explicit GoalReader(std::string label) : label_(std::move(label)) {}

  [[noreturn]] void fail(std::string_view path, std::string_view message) const {
    if (path.empty()) throw parse_error(fmt::format("{}: {}", label_, message));
    throw parse_error(fmt::format("{}: {}: {}", label_, path, message));
  }

  static std::string join(std::string_view path, std::string_view field);

  const nlohmann::json& object(const nlohmann::json& j, std::string_view path) const;

  /// The member `key`, or null when absent.
  static const nlohmann::json* find(const nlohmann::json& obj, const char* key);

  std::string string(const nlohmann::json& obj, const char* key, std::string_view path, bool required = true,
                     bool non_empty = false) const;

  nlohmann::json object_member(const nlohmann::json& obj, const char* key, std::string_view path) const;

  std::int64_t integer(const nlohmann::json& obj, const char* key, std::string_view path) const;

  const std::string& label() const noexcept { return label_; }

 private:
  std::string label_;
};

Predicate read_predicate(const nlohmann::json& j, const GoalReader& in, const std::string& path);

Condition read_condition(const nlohmann::json& j, const GoalReader& in, const std::string& path);

std::vector<Condition> read_conditions(const nlohmann::json& obj, const GoalReader& in, const std::string& path);

/// The arguments each goal predicate needs; throws invalid_goal naming `where` ("goal g3: predicate.args.tool").
void check_goal_predicate(const Predicate& p, const std::string& where);

}  // namespace detail

/// Reads a goal, checking its shape, its predicate and its conditions. Throws cairn::parse_error for a malformed
/// field and cairn::invalid_goal for a predicate without the arguments it needs.
Goal goal_from_json(const nlohmann::json& j, const std::string& label = "goal");

inline void from_json(const nlohmann::json& j, Goal& g) { g = goal_from_json(j); }

CAIRN_END_NAMESPACE

#ifndef CAIRN_COMPILED_LIB
#include "cairn/goals/goal-inl.hpp"
#endif
