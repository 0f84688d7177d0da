// cairn — the bodies of WorkflowTemplate (cairn/workflow/template.hpp): reading and validating a template, and
// writing it back. Header-only, template.hpp includes this file and CAIRN_INLINE is `inline`; with CAIRN_COMPILED_LIB
// they are compiled once into cairn::compiled (src/compiled/workflow.cpp).
#pragma once

#include <cmath>
#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/detail/json.hpp"
#include "cairn/error.hpp"
#include "cairn/version.hpp"
#include "cairn/workflow/template.hpp"

CAIRN_BEGIN_NAMESPACE
namespace detail {

// Checks one object's keys against the known ones, so a typo (`artifacts`, `instruction`) is an error rather than
// a silently ignored field.
inline void template_check_keys(const nlohmann::json& obj, const std::string& path,
                                std::initializer_list<std::string_view> known) {
  for (const auto& item : obj.items()) {
    bool ok = false;
    for (auto k : known) ok = ok || item.key() == k;
    if (ok) continue;
    std::string hint;
    if (item.key() == "artifacts") hint = " (did you mean 'artefacts'?)";
    if (item.key() == "instruction") hint = " (did you mean 'instructions'?)";
    throw invalid_template(
        fmt::format("{}{}{} is not a known field{}", path, path.empty() ? "" : ".", excerpt(item.key()), hint));
  }
}

inline const nlohmann::json* template_member(const nlohmann::json& obj, const char* key) {
  const auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

inline std::string template_string(const nlohmann::json& obj, const std::string& path, const char* key, bool required,
                                   bool non_empty) {
  const auto* v = template_member(obj, key);
  const std::string where = path.empty() ? std::string(key) : path + "." + key;
  if (!v || v->is_null()) {
    if (required) throw invalid_template(fmt::format("{} is required", where));
    return {};
  }
  if (!v->is_string()) throw invalid_template(fmt::format("{} must be a string", where));
  const auto& s = v->get_ref<const std::string&>();
  if (non_empty && s.find_first_not_of(" \t\r\n") == std::string::npos) {
    throw invalid_template(fmt::format("{} must not be empty", where));
  }
  return s;
}

inline bool template_bool(const nlohmann::json& obj, const std::string& path, const char* key) {
  const auto* v = template_member(obj, key);
  if (!v || v->is_null()) return false;
  if (!v->is_boolean()) throw invalid_template(fmt::format("{}.{} must be true or false", path, key));
  return v->get<bool>();
}

inline std::string template_id(const nlohmann::json& obj, const std::string& path, const char* key) {
  std::string id = template_string(obj, path, key, true, false);
  if (!is_workflow_id(id)) {
    throw invalid_template(
        fmt::format("{}.{} '{}' is not a valid id ({})", path, key, excerpt(id), workflow_id_rule()));
  }
  return id;
}

inline std::optional<std::string> template_agent(const nlohmann::json& obj, const std::string& path,
                                                 const std::map<std::string, AgentConfig>& agents) {
  const auto* v = template_member(obj, "agent");
  if (!v || v->is_null()) return std::nullopt;
  if (!v->is_string()) throw invalid_template(fmt::format("{}.agent must be a string", path));
  const auto& name = v->get_ref<const std::string&>();
  if (agents.find(name) == agents.end()) {
    throw invalid_template(fmt::format("{}.agent '{}' is not declared in agents", path, excerpt(name)));
  }
  return name;
}

}  // namespace detail

CAIRN_INLINE WorkflowTemplate WorkflowTemplate::from_json(const nlohmann::json& j) {
  using detail::excerpt;
  if (!j.is_object()) throw invalid_template("workflow template must be an object (a mapping of name, steps, ...)");
  detail::template_check_keys(j, "", {"name", "description", "agents", "loops", "steps"});
  WorkflowTemplate t;
  t.name_ = detail::template_string(j, "", "name", true, true);
  t.description_ = detail::template_string(j, "", "description", false, false);

  if (const auto* agents = detail::template_member(j, "agents"); agents && !agents->is_null()) {
    if (!agents->is_object()) throw invalid_template("agents must be an object of name: {description}");
    for (const auto& [name, cfg] : agents->items()) {
      if (!detail::is_workflow_id(name)) {
        throw invalid_template(
            fmt::format("agents: '{}' is not a valid agent name ({})", excerpt(name), detail::workflow_id_rule()));
      }
      const std::string path = "agents." + name;
      if (!cfg.is_object()) throw invalid_template(fmt::format("{} must be an object", path));
      AgentConfig a;
      a.description = detail::template_string(cfg, path, "description", false, false);
      for (const auto& [k, v] : cfg.items()) {
        if (k != "description") a.settings[k] = v;
      }
      t.agents_.emplace(name, std::move(a));
    }
  }

  if (const auto* loops = detail::template_member(j, "loops"); loops && !loops->is_null()) {
    if (!loops->is_object()) throw invalid_template("loops must be an object of loop id: [sub-steps]");
    for (const auto& [loop_id, subs] : loops->items()) {
      if (!detail::is_workflow_id(loop_id)) {
        throw invalid_template(
            fmt::format("loops: '{}' is not a valid loop id ({})", excerpt(loop_id), detail::workflow_id_rule()));
      }
      const std::string lpath = "loops." + loop_id;
      if (!subs.is_array() || subs.empty()) {
        throw invalid_template(fmt::format("{} must be a non-empty array of sub-steps", lpath));
      }
      if (subs.size() > max_steps) {
        throw invalid_template(fmt::format("{} has {} sub-steps, more than {}", lpath, subs.size(), max_steps));
      }
      std::vector<LoopSubStep> out;
      for (std::size_t i = 0; i < subs.size(); ++i) {
        const std::string path = fmt::format("{}[{}]", lpath, i);
        const auto& s = subs[i];
        if (!s.is_object()) throw invalid_template(fmt::format("{} must be an object", path));
        detail::template_check_keys(s, path, {"id", "agent", "instructions", "on_fail", "artefacts"});
        LoopSubStep sub;
        sub.id = detail::template_id(s, path, "id");
        for (const auto& prev : out) {
          if (prev.id == sub.id) {
            throw invalid_template(fmt::format("{}.id '{}' is used twice in {}", path, sub.id, lpath));
          }
        }
        sub.agent = detail::template_agent(s, path, t.agents_);
        sub.instructions = detail::template_string(s, path, "instructions", true, true);
        if (const auto* f = detail::template_member(s, "on_fail"); f && !f->is_null()) {
          const std::string v = f->is_string() ? f->get<std::string>() : std::string();
          if (v == "retry")
            sub.on_fail = OnFail::retry;
          else if (v == "skip")
            sub.on_fail = OnFail::skip;
          else if (v == "abort")
            sub.on_fail = OnFail::abort;
          else
            throw invalid_template(fmt::format("{}.on_fail must be one of retry, skip, abort", path));
        }
        sub.artifacts = detail::template_bool(s, path, "artefacts");
        out.push_back(std::move(sub));
      }
      t.loops_.emplace(loop_id, std::move(out));
    }
  }

  const auto* steps = detail::template_member(j, "steps");
  if (!steps || steps->is_null()) throw invalid_template("steps is required");
  if (!steps->is_array() || steps->empty()) throw invalid_template("steps must be a non-empty array");
  if (steps->size() > max_steps) {
    throw invalid_template(fmt::format("steps has {} entries, more than {}", steps->size(), max_steps));
  }
  for (std::size_t i = 0; i < steps->size(); ++i) {
    const std::string path = fmt::format("steps[{}]", i);
    const auto& s = (*steps)[i];
    if (!s.is_object()) throw invalid_template(fmt::format("{} must be an object", path));
    detail::template_check_keys(s, path, {"id", "type", "agent", "instructions", "n", "artefacts"});
    WorkflowStep step;
    step.id = detail::template_id(s, path, "id");
    if (t.step_index(step.id)) {
      throw invalid_template(fmt::format("{}.id '{}' is used by an earlier step", path, step.id));
    }
    const std::string type = detail::template_string(s, path, "type", true, false);
    if (type == "action")
      step.type = StepType::action;
    else if (type == "loop")
      step.type = StepType::loop;
    else if (type == "ralph")
      step.type = StepType::ralph;
    else
      throw invalid_template(fmt::format("{}.type must be one of action, loop, ralph", path));
    step.agent = detail::template_agent(s, path, t.agents_);
    step.instructions =
        detail::template_string(s, path, "instructions", step.type != StepType::loop, step.type != StepType::loop);
    const auto* n = detail::template_member(s, "n");
    if (step.type == StepType::ralph) {
      // 2.0 is accepted as 2 (YAML and some JSON writers produce it); 2.5, "2", 0 and -1 are not.
      const double v = n && n->is_number() ? n->get<double>() : 0.0;
      if (!(v >= 1) || std::floor(v) != v) {
        throw invalid_template(fmt::format("{}.n must be a positive integer", path));
      }
      if (v > max_ralph_iterations) {
        throw invalid_template(fmt::format("{}.n must be at most {}", path, max_ralph_iterations));
      }
      step.n = static_cast<int>(n->get<double>());
    } else if (n && !n->is_null()) {
      throw invalid_template(fmt::format("{}.n is only allowed on ralph steps", path));
    }
    if (step.type == StepType::loop && !t.loop(step.id)) {
      throw invalid_template(
          fmt::format("{}.id '{}' names no loop: a loop step's id must be a key of loops", path, step.id));
    }
    step.artifacts = detail::template_bool(s, path, "artefacts");
    t.steps_.push_back(std::move(step));
  }
  return t;
}

CAIRN_INLINE nlohmann::json WorkflowTemplate::to_json() const {
  nlohmann::json j = {{"name", name_}};
  if (!description_.empty()) j["description"] = description_;
  if (!agents_.empty()) {
    auto& a = j["agents"] = nlohmann::json::object();
    for (const auto& [name, cfg] : agents_) {
      nlohmann::json e = cfg.settings.is_object() ? cfg.settings : nlohmann::json::object();
      if (!cfg.description.empty()) e["description"] = cfg.description;
      a[name] = std::move(e);
    }
  }
  if (!loops_.empty()) {
    auto& l = j["loops"] = nlohmann::json::object();
    for (const auto& [id, subs] : loops_) {
      auto& arr = l[id] = nlohmann::json::array();
      for (const auto& s : subs) {
        nlohmann::json e = {{"id", s.id}, {"instructions", s.instructions}, {"on_fail", to_string(s.on_fail)}};
        if (s.agent) e["agent"] = *s.agent;
        if (s.artifacts) e["artefacts"] = true;
        arr.push_back(std::move(e));
      }
    }
  }
  auto& steps = j["steps"] = nlohmann::json::array();
  for (const auto& s : steps_) {
    nlohmann::json e = {{"id", s.id}, {"type", to_string(s.type)}};
    if (s.agent) e["agent"] = *s.agent;
    if (!s.instructions.empty()) e["instructions"] = s.instructions;
    if (s.type == StepType::ralph) e["n"] = s.n;
    if (s.artifacts) e["artefacts"] = true;
    steps.push_back(std::move(e));
  }
  return j;
}

CAIRN_INLINE WorkflowTemplate WorkflowTemplate::parse(std::string_view text, const JsonLimits& limits) {
  return from_json(detail::parse_json(text, limits, "workflow template"));
}

CAIRN_INLINE bool operator==(const WorkflowTemplate& a, const WorkflowTemplate& b) {
  return a.to_json() == b.to_json();
}

CAIRN_END_NAMESPACE
