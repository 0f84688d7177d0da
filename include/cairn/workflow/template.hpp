// cairn — WorkflowTemplate: the steps an agent walks through, read from JSON (or YAML through cairn::yaml).
//
// A template is validated once, when it is built: every rule failure throws cairn::invalid_template with a message
// that names the path of the offending value (`steps[2].n must be a positive integer`). A built template is an
// immutable value; the machine and the state file keep a copy of it.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
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
  static WorkflowTemplate parse(std::string_view text, const JsonLimits& limits = {});

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

  friend bool operator==(const WorkflowTemplate& a, const WorkflowTemplate& b);
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

}  // namespace detail

CAIRN_END_NAMESPACE

#ifndef CAIRN_COMPILED_LIB
#include "cairn/workflow/template-inl.hpp"
#endif
