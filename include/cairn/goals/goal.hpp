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

inline std::string_view to_string(GoalStatus s) noexcept {
  switch (s) {
    case GoalStatus::pending: return "pending";
    case GoalStatus::active: return "active";
    case GoalStatus::achieved: return "achieved";
    case GoalStatus::abandoned: return "abandoned";
    case GoalStatus::blocked: return "blocked";
  }
  return "pending";
}

/// The status named `text`, or nothing.
inline std::optional<GoalStatus> goal_status_from_string(std::string_view text) noexcept {
  for (GoalStatus s : {GoalStatus::pending, GoalStatus::active, GoalStatus::achieved, GoalStatus::abandoned,
                       GoalStatus::blocked}) {
    if (to_string(s) == text) return s;
  }
  return std::nullopt;
}

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

  friend bool operator==(const Predicate& a, const Predicate& b) { return a.name == b.name && a.args == b.args; }
  friend bool operator!=(const Predicate& a, const Predicate& b) { return !(a == b); }
};

/// True when `name` is one of the six goal predicates.
inline bool is_goal_predicate(std::string_view name) noexcept {
  return name == Predicate::composite || name == Predicate::use_tool || name == Predicate::gather_info ||
         name == Predicate::confirm || name == Predicate::present_info || name == Predicate::execute;
}

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

  friend bool operator==(const Decomposition& a, const Decomposition& b) {
    return a.kind == b.kind && a.children == b.children;
  }
};

inline std::string_view to_string(Decomposition::Kind k) noexcept { return k == Decomposition::Kind::all ? "AND" : "OR"; }

/// The kind named "AND" or "OR", or nothing.
inline std::optional<Decomposition::Kind> decomposition_kind_from_string(std::string_view text) noexcept {
  if (text == "AND") return Decomposition::Kind::all;
  if (text == "OR") return Decomposition::Kind::any;
  return std::nullopt;
}

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

inline void to_json(nlohmann::json& j, const Predicate& p) { j = {{"name", p.name}, {"args", p.args}}; }

inline void to_json(nlohmann::json& j, const Condition& c) {
  if (c.kind == Condition::Kind::has_evidence) {
    j = {{"kind", "has_evidence"}, {"key", c.key}};
  } else {
    j = {{"kind", "predicate_true"}, {"predicate", c.predicate}};
  }
}

inline void to_json(nlohmann::json& j, const Decomposition& d) {
  j = {{"kind", to_string(d.kind)}, {"children", d.children}};
}

inline void to_json(nlohmann::json& j, const Goal& g) {
  j = {{"id", g.id},
       {"gloss", g.gloss},
       {"predicate", g.predicate},
       {"parent", g.parent.empty() ? nlohmann::json(nullptr) : nlohmann::json(g.parent)},
       {"decomposition", g.decomposition ? nlohmann::json(*g.decomposition) : nlohmann::json(nullptr)},
       {"status", to_string(g.status)},
       {"done_when", g.done_when},
       {"evidence", g.evidence},
       {"provenance", g.provenance},
       {"reason", g.reason},
       {"created_at", g.created_at},
       {"updated_at", g.updated_at}};
}

namespace detail {

/// Reads goal-layer JSON with errors of the form "<label>: <path>: <message>".
class GoalReader {
 public:
  explicit GoalReader(std::string label) : label_(std::move(label)) {}

  [[noreturn]] void fail(std::string_view path, std::string_view message) const {
    if (path.empty()) throw parse_error(fmt::format("{}: {}", label_, message));
    throw parse_error(fmt::format("{}: {}: {}", label_, path, message));
  }

  static std::string join(std::string_view path, std::string_view field) {
    if (path.empty()) return std::string(field);
    if (!field.empty() && field[0] == '[') return std::string(path) + std::string(field);
    return std::string(path) + "." + std::string(field);
  }

  const nlohmann::json& object(const nlohmann::json& j, std::string_view path) const {
    if (!j.is_object()) fail(path, fmt::format("expected an object, got {}", j.type_name()));
    return j;
  }

  /// The member `key`, or null when absent.
  static const nlohmann::json* find(const nlohmann::json& obj, const char* key) {
    const auto it = obj.find(key);
    return it == obj.end() || it->is_null() ? nullptr : &*it;
  }

  std::string string(const nlohmann::json& obj, const char* key, std::string_view path, bool required = true,
                     bool non_empty = false) const {
    const auto* v = find(obj, key);
    const std::string where = join(path, key);
    if (!v) {
      if (required) fail(where, "missing");
      return {};
    }
    if (!v->is_string()) fail(where, fmt::format("expected a string, got {}", v->type_name()));
    if (non_empty && v->get_ref<const std::string&>().empty()) fail(where, "must not be empty");
    return v->get<std::string>();
  }

  nlohmann::json object_member(const nlohmann::json& obj, const char* key, std::string_view path) const {
    const auto* v = find(obj, key);
    if (!v) return nlohmann::json::object();
    if (!v->is_object()) fail(join(path, key), fmt::format("expected an object, got {}", v->type_name()));
    return *v;
  }

  std::int64_t integer(const nlohmann::json& obj, const char* key, std::string_view path) const {
    const auto* v = find(obj, key);
    if (!v) return 0;
    if (!v->is_number_integer()) fail(join(path, key), fmt::format("expected an integer, got {}", v->type_name()));
    return v->get<std::int64_t>();
  }

  const std::string& label() const noexcept { return label_; }

 private:
  std::string label_;
};

inline Predicate read_predicate(const nlohmann::json& j, const GoalReader& in, const std::string& path) {
  in.object(j, path);
  Predicate p;
  p.name = in.string(j, "name", path, true, true);
  p.args = in.object_member(j, "args", path);
  return p;
}

inline Condition read_condition(const nlohmann::json& j, const GoalReader& in, const std::string& path) {
  in.object(j, path);
  const std::string kind = in.string(j, "kind", path);
  if (kind == "has_evidence") {
    std::string key = in.string(j, "key", path, true, true);
    if (!is_valid_artifact_name(key)) {
      in.fail(GoalReader::join(path, "key"),
              fmt::format("'{}' is not a valid evidence key (expected [A-Za-z_][A-Za-z0-9_-]{{0,127}})", excerpt(key)));
    }
    return Condition::has_evidence(std::move(key));
  }
  if (kind == "predicate_true") {
    const auto* p = GoalReader::find(j, "predicate");
    if (!p) in.fail(GoalReader::join(path, "predicate"), "missing");
    return Condition::predicate_true(read_predicate(*p, in, GoalReader::join(path, "predicate")));
  }
  in.fail(GoalReader::join(path, "kind"),
          fmt::format("'{}' is not one of has_evidence, predicate_true", excerpt(kind)));
}

inline std::vector<Condition> read_conditions(const nlohmann::json& obj, const GoalReader& in,
                                              const std::string& path) {
  std::vector<Condition> out;
  const auto* list = GoalReader::find(obj, "done_when");
  if (!list) return out;
  const std::string where = GoalReader::join(path, "done_when");
  if (!list->is_array()) in.fail(where, fmt::format("expected an array, got {}", list->type_name()));
  for (std::size_t i = 0; i < list->size(); ++i) {
    out.push_back(read_condition((*list)[i], in, fmt::format("{}[{}]", where, i)));
  }
  return out;
}

/// The arguments each goal predicate needs; throws invalid_goal naming `where` ("goal g3: predicate.args.tool").
inline void check_goal_predicate(const Predicate& p, const std::string& where) {
  auto fail = [&](std::string_view field, std::string_view message) {
    throw invalid_goal(fmt::format("{}: predicate{}: {}", where, field, message));
  };
  if (!is_goal_predicate(p.name)) {
    fail(".name", fmt::format("'{}' is not one of composite, use_tool, gather_info, confirm, present_info, execute",
                              excerpt(p.name)));
  }
  if (!p.args.is_object()) fail(".args", fmt::format("expected an object, got {}", p.args.type_name()));
  auto string_arg = [&](const char* key, bool required) -> std::string {
    const auto it = p.args.find(key);
    if (it == p.args.end() || it->is_null()) {
      if (required) fail(fmt::format(".args.{}", key), fmt::format("missing (a {} goal needs it)", p.name));
      return {};
    }
    if (!it->is_string()) fail(fmt::format(".args.{}", key), fmt::format("expected a string, got {}", it->type_name()));
    return it->get<std::string>();
  };
  auto key_arg = [&](const char* key, bool required) {
    const std::string k = string_arg(key, required);
    if ((required || !k.empty()) && !is_valid_artifact_name(k)) {
      fail(fmt::format(".args.{}", key),
           fmt::format("'{}' is not a valid evidence key (expected [A-Za-z_][A-Za-z0-9_-]{{0,127}})", excerpt(k)));
    }
  };
  if (p.name == Predicate::use_tool) {
    if (string_arg("tool", true).empty()) fail(".args.tool", "must not be empty");
    key_arg("output", false);
  } else if (p.name == Predicate::gather_info) {
    key_arg("key", true);
    string_arg("prompt", false);
  } else if (p.name == Predicate::confirm) {
    key_arg("key", false);
    string_arg("question", false);
  } else if (p.name == Predicate::present_info) {
    key_arg("key", false);
    string_arg("text", false);
  }
}

}  // namespace detail

/// Reads a goal, checking its shape, its predicate and its conditions. Throws cairn::parse_error for a malformed
/// field and cairn::invalid_goal for a predicate without the arguments it needs.
inline Goal goal_from_json(const nlohmann::json& j, const std::string& label = "goal") {
  const detail::GoalReader in(label);
  in.object(j, "");
  Goal g;
  g.id = in.string(j, "id", "", true, true);
  const detail::GoalReader at(fmt::format("{} {}", label, detail::excerpt(g.id)));
  g.gloss = at.string(j, "gloss", "", true, true);
  const auto* pred = detail::GoalReader::find(j, "predicate");
  if (!pred) at.fail("predicate", "missing");
  g.predicate = detail::read_predicate(*pred, at, "predicate");
  detail::check_goal_predicate(g.predicate, at.label());
  g.parent = at.string(j, "parent", "", false);
  if (const auto* d = detail::GoalReader::find(j, "decomposition")) {
    at.object(*d, "decomposition");
    Decomposition dec;
    const std::string kind = at.string(*d, "kind", "decomposition");
    const auto k = decomposition_kind_from_string(kind);
    if (!k) at.fail("decomposition.kind", fmt::format("'{}' is not AND or OR", detail::excerpt(kind)));
    dec.kind = *k;
    const auto* children = detail::GoalReader::find(*d, "children");
    if (!children || !children->is_array()) at.fail("decomposition.children", "expected an array of goal ids");
    for (std::size_t i = 0; i < children->size(); ++i) {
      const auto& c = (*children)[i];
      if (!c.is_string() || c.get_ref<const std::string&>().empty()) {
        at.fail(fmt::format("decomposition.children[{}]", i), "expected a non-empty goal id");
      }
      dec.children.push_back(c.get<std::string>());
    }
    if (dec.children.empty()) at.fail("decomposition.children", "must not be empty");
    if (!g.is_composite()) at.fail("decomposition", "only a composite goal has a decomposition");
    g.decomposition = std::move(dec);
  }
  const std::string status = at.string(j, "status", "");
  const auto s = goal_status_from_string(status);
  if (!s) {
    at.fail("status", fmt::format("'{}' is not one of pending, active, achieved, abandoned, blocked",
                                  detail::excerpt(status)));
  }
  g.status = *s;
  g.done_when = detail::read_conditions(j, at, "");
  g.evidence = at.object_member(j, "evidence", "");
  g.provenance = at.object_member(j, "provenance", "");
  g.reason = at.string(j, "reason", "", false);
  g.created_at = at.integer(j, "created_at", "");
  g.updated_at = at.integer(j, "updated_at", "");
  return g;
}

inline void from_json(const nlohmann::json& j, Goal& g) { g = goal_from_json(j); }

CAIRN_END_NAMESPACE
