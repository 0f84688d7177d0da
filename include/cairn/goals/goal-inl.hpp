// cairn — the function bodies of cairn/goals/goal.hpp (docs/api.md, "Compiled mode"). Header-only, the
// default, that header includes this file and CAIRN_INLINE is `inline`; with CAIRN_COMPILED_LIB they are
// compiled once, into cairn::compiled (src/compiled/), and the header only declares them.
#pragma once

#include "cairn/goals/goal.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

CAIRN_INLINE std::string_view to_string(GoalStatus s) noexcept {
  switch (s) {
    case GoalStatus::pending: return "pending";
    case GoalStatus::active: return "active";
    case GoalStatus::achieved: return "achieved";
    case GoalStatus::abandoned: return "abandoned";
    case GoalStatus::blocked: return "blocked";
  }
  return "pending";
}

CAIRN_INLINE std::optional<GoalStatus> goal_status_from_string(std::string_view text) noexcept {
  for (GoalStatus s :
       {GoalStatus::pending, GoalStatus::active, GoalStatus::achieved, GoalStatus::abandoned, GoalStatus::blocked}) {
    if (to_string(s) == text) return s;
  }
  return std::nullopt;
}

CAIRN_INLINE bool is_goal_predicate(std::string_view name) noexcept {
  return name == Predicate::composite || name == Predicate::use_tool || name == Predicate::gather_info ||
         name == Predicate::confirm || name == Predicate::present_info || name == Predicate::execute;
}

CAIRN_INLINE std::optional<Decomposition::Kind> decomposition_kind_from_string(std::string_view text) noexcept {
  if (text == "AND") return Decomposition::Kind::all;
  if (text == "OR") return Decomposition::Kind::any;
  return std::nullopt;
}

CAIRN_INLINE void to_json(nlohmann::json& j, const Condition& c) {
  if (c.kind == Condition::Kind::has_evidence) {
    j = {{"kind", "has_evidence"}, {"key", c.key}};
  } else {
    j = {{"kind", "predicate_true"}, {"predicate", c.predicate}};
  }
}

CAIRN_INLINE void to_json(nlohmann::json& j, const Decomposition& d) {
  j = {{"kind", to_string(d.kind)}, {"children", d.children}};
}

CAIRN_INLINE void to_json(nlohmann::json& j, const Goal& g) {
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
CAIRN_INLINE std::string GoalReader::join(std::string_view path, std::string_view field) {
  if (path.empty()) return std::string(field);
  if (!field.empty() && field[0] == '[') return std::string(path) + std::string(field);
  return std::string(path) + "." + std::string(field);
}

CAIRN_INLINE const nlohmann::json& GoalReader::object(const nlohmann::json& j, std::string_view path) const {
  if (!j.is_object()) fail(path, fmt::format("expected an object, got {}", j.type_name()));
  return j;
}

CAIRN_INLINE const nlohmann::json* GoalReader::find(const nlohmann::json& obj, const char* key) {
  const auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

CAIRN_INLINE std::string GoalReader::string(const nlohmann::json& obj, const char* key, std::string_view path,
                                            bool required, bool non_empty) const {
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

CAIRN_INLINE nlohmann::json GoalReader::object_member(const nlohmann::json& obj, const char* key,
                                                      std::string_view path) const {
  const auto* v = find(obj, key);
  if (!v) return nlohmann::json::object();
  if (!v->is_object()) fail(join(path, key), fmt::format("expected an object, got {}", v->type_name()));
  return *v;
}

CAIRN_INLINE std::int64_t GoalReader::integer(const nlohmann::json& obj, const char* key, std::string_view path) const {
  const auto* v = find(obj, key);
  if (!v) return 0;
  if (!v->is_number_integer()) fail(join(path, key), fmt::format("expected an integer, got {}", v->type_name()));
  return v->get<std::int64_t>();
}

CAIRN_INLINE Predicate read_predicate(const nlohmann::json& j, const GoalReader& in, const std::string& path) {
  in.object(j, path);
  Predicate p;
  p.name = in.string(j, "name", path, true, true);
  p.args = in.object_member(j, "args", path);
  return p;
}

CAIRN_INLINE Condition read_condition(const nlohmann::json& j, const GoalReader& in, const std::string& path) {
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

CAIRN_INLINE std::vector<Condition> read_conditions(const nlohmann::json& obj, const GoalReader& in,
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

CAIRN_INLINE void check_goal_predicate(const Predicate& p, const std::string& where) {
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

CAIRN_INLINE Goal goal_from_json(const nlohmann::json& j, const std::string& label) {
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
    if (children->size() > Decomposition::max_children) {
      at.fail("decomposition.children", fmt::format("{} children, more than the limit of {} "
                                                    "(Decomposition::max_children)",
                                                    children->size(), Decomposition::max_children));
    }
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
    at.fail("status",
            fmt::format("'{}' is not one of pending, active, achieved, abandoned, blocked", detail::excerpt(status)));
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

CAIRN_INLINE bool operator==(const Predicate& a, const Predicate& b) { return a.name == b.name && a.args == b.args; }

CAIRN_INLINE void to_json(nlohmann::json& j, const Predicate& p) { j = {{"name", p.name}, {"args", p.args}}; }

CAIRN_END_NAMESPACE
