// cairn — WorkflowTemplate: the steps an agent walks through, read from JSON (or YAML through cairn::yaml).
//
// A template is validated once, when it is built: every rule failure throws cairn::invalid_template with a message
// that names the path of the offending value (`steps[2].n must be a positive integer`). A built template is an
// immutable value; the machine and the state file keep a copy of it.
#pragma once

#include <cmath>
#include <cstddef>
#include <initializer_list>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/detail/enum_ostream.hpp"
#include "cairn/detail/json.hpp"
#include "cairn/detail/text.hpp"
#include "cairn/error.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

/// What a top-level step does: one action, a loop over tasks, or a ralph step repeated n times.
enum class StepType { action, loop, ralph };

/// What happens when a loop sub-step reports failure: stay on it, give up on the task, or fail the workflow.
enum class OnFail { retry, skip, abort };

inline const char* to_string(StepType t) noexcept {
  switch (t) {
    case StepType::action: return "action";
    case StepType::loop: return "loop";
    case StepType::ralph: return "ralph";
  }
  return "action";
}
CAIRN_DETAIL_ENUM_OSTREAM(StepType)

inline const char* to_string(OnFail f) noexcept {
  switch (f) {
    case OnFail::retry: return "retry";
    case OnFail::skip: return "skip";
    case OnFail::abort: return "abort";
  }
  return "retry";
}
CAIRN_DETAIL_ENUM_OSTREAM(OnFail)

/// A sub-agent the template may delegate steps to. `settings` keeps every other key of its entry for the host
/// (a model name, a tool list, ...).
struct AgentConfig {
  std::string description;
  nlohmann::json settings = nlohmann::json::object();
};

/// One sub-step of a loop, run once per task.
struct LoopSubStep {
  std::string id;
  std::optional<std::string> agent;  ///< falls back to the loop step's agent
  std::string instructions;          ///< may use {task.id}, {task.title}, {task.description}
  OnFail on_fail = OnFail::retry;
  bool artifacts = false;
};

/// One top-level step.
struct WorkflowStep {
  std::string id;
  StepType type = StepType::action;
  std::optional<std::string> agent;
  std::string instructions;  ///< required for action and ralph; unused by loop steps
  int n = 1;                 ///< ralph only: how many iterations
  bool artifacts = false;
};

/// A validated workflow template. An immutable value once built: safe to share and read from many threads.
///
///     auto tmpl = cairn::WorkflowTemplate::parse(R"({"name": "fix", "steps": [
///         {"id": "fix", "type": "action", "instructions": "Fix the bug."}]})");
class WorkflowTemplate {
 public:
  static constexpr int max_ralph_iterations = 10000;
  static constexpr std::size_t max_steps = 1000;
  static constexpr std::size_t max_id_length = 128;

  /// Builds and validates a template from a parsed JSON value. Throws cairn::invalid_template naming the path.
  static WorkflowTemplate from_json(const nlohmann::json& j);

  /// Parses JSON text within `limits` (cairn::parse_error / cairn::limit_exceeded), then validates as from_json.
  static WorkflowTemplate parse(std::string_view text, const JsonLimits& limits = {}) {
    return from_json(detail::parse_json(text, limits, "workflow template"));
  }

  const std::string& name() const noexcept { return name_; }
  const std::string& description() const noexcept { return description_; }
  const std::map<std::string, AgentConfig>& agents() const noexcept { return agents_; }
  const std::map<std::string, std::vector<LoopSubStep>>& loops() const noexcept { return loops_; }
  const std::vector<WorkflowStep>& steps() const noexcept { return steps_; }

  /// Index of the step with `id`, or nullopt.
  std::optional<std::size_t> step_index(std::string_view id) const {
    for (std::size_t i = 0; i < steps_.size(); ++i) {
      if (steps_[i].id == id) return i;
    }
    return std::nullopt;
  }

  /// The sub-steps of loop `id`, or null when the template has no such loop.
  const std::vector<LoopSubStep>* loop(std::string_view id) const {
    const auto it = loops_.find(std::string(id));
    return it == loops_.end() ? nullptr : &it->second;
  }

  /// The template as JSON; from_json(to_json()) gives an equal template.
  nlohmann::json to_json() const;

  friend bool operator==(const WorkflowTemplate& a, const WorkflowTemplate& b) { return a.to_json() == b.to_json(); }
  friend bool operator!=(const WorkflowTemplate& a, const WorkflowTemplate& b) { return !(a == b); }

 private:
  friend class WorkflowMachine;  // a machine about to take its template from a run starts with an empty one
  WorkflowTemplate() = default;

  std::string name_;
  std::string description_;
  std::map<std::string, AgentConfig> agents_;
  std::map<std::string, std::vector<LoopSubStep>> loops_;
  std::vector<WorkflowStep> steps_;
};

inline void to_json(nlohmann::json& j, const WorkflowTemplate& t) { j = t.to_json(); }

namespace detail {

/// Ids of steps, sub-steps, agents and tasks end up in output keys (`step.task.sub_step`) and in instruction text,
/// so they are plain tokens: no dots, quotes, spaces or control characters.
inline bool is_workflow_id(std::string_view s) noexcept {
  if (s.empty() || s.size() > WorkflowTemplate::max_id_length) return false;
  for (char c : s) {
    if (!is_ascii_alpha(c) && !is_ascii_digit(c) && c != '_' && c != '-') return false;
  }
  return true;
}

inline std::string workflow_id_rule() {
  return fmt::format("1 to {} characters of A-Z, a-z, 0-9, '_' and '-'", WorkflowTemplate::max_id_length);
}

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
    throw invalid_template(fmt::format("{}{}{} is not a known field{}", path, path.empty() ? "" : ".",
                                       excerpt(item.key()), hint));
  }
}

inline const nlohmann::json* template_member(const nlohmann::json& obj, const char* key) {
  const auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

inline std::string template_string(const nlohmann::json& obj, const std::string& path, const char* key,
                                   bool required, bool non_empty) {
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
    throw invalid_template(
        fmt::format("{}.agent '{}' is not declared in agents", path, excerpt(name)));
  }
  return name;
}

}  // namespace detail

inline WorkflowTemplate WorkflowTemplate::from_json(const nlohmann::json& j) {
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
        throw invalid_template(fmt::format("agents: '{}' is not a valid agent name ({})", excerpt(name),
                                           detail::workflow_id_rule()));
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
        throw invalid_template(fmt::format("loops: '{}' is not a valid loop id ({})", excerpt(loop_id),
                                           detail::workflow_id_rule()));
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
          if (v == "retry") sub.on_fail = OnFail::retry;
          else if (v == "skip") sub.on_fail = OnFail::skip;
          else if (v == "abort") sub.on_fail = OnFail::abort;
          else throw invalid_template(fmt::format("{}.on_fail must be one of retry, skip, abort", path));
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
    if (type == "action") step.type = StepType::action;
    else if (type == "loop") step.type = StepType::loop;
    else if (type == "ralph") step.type = StepType::ralph;
    else throw invalid_template(fmt::format("{}.type must be one of action, loop, ralph", path));
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
      throw invalid_template(fmt::format("{}.id '{}' names no loop: a loop step's id must be a key of loops", path,
                                         step.id));
    }
    step.artifacts = detail::template_bool(s, path, "artefacts");
    t.steps_.push_back(std::move(step));
  }
  return t;
}

inline nlohmann::json WorkflowTemplate::to_json() const {
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

CAIRN_END_NAMESPACE
