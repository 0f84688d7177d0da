// cairn — WorkflowState: where a workflow is (step, task, sub-step, ralph iteration), its tasks, outputs and
// registered artefacts, as plain data that round-trips through JSON.
//
// The machine (machine.hpp) is what changes a state; this header only holds it and reads it back. Reading checks
// every field and throws cairn::state_error naming the field, so a damaged state file is a clear error.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/detail/enum_ostream.hpp"
#include "cairn/detail/text.hpp"
#include "cairn/error.hpp"
#include "cairn/version.hpp"
#include "cairn/workflow/template.hpp"

CAIRN_BEGIN_NAMESPACE

enum class WorkflowStatus { running, complete, failed };

/// pending → in_progress → done | failed. `blocked`: never run because a task it depends on failed or was blocked.
enum class TaskStatus { pending, in_progress, done, failed, blocked };

const char* to_string(WorkflowStatus s) noexcept;
CAIRN_DETAIL_ENUM_OSTREAM(WorkflowStatus)

const char* to_string(TaskStatus s) noexcept;
CAIRN_DETAIL_ENUM_OSTREAM(TaskStatus)

/// One task of a loop. set_tasks ignores the status it is given: every task starts pending.
struct Task {
  std::string id;
  std::string title;
  std::optional<std::string> description;
  std::vector<std::string> depends_on;  ///< ids of tasks of the same loop that must be done first
  TaskStatus status = TaskStatus::pending;

  friend bool operator==(const Task& a, const Task& b) {
    return a.id == b.id && a.title == b.title && a.description == b.description && a.depends_on == b.depends_on &&
           a.status == b.status;
  }
};

/// The task a loop is on: its index in the loop's (dependency-ordered) task list.
struct TaskPosition {
  std::size_t index = 0;
  std::string id;
  std::string title;

  friend bool operator==(const TaskPosition& a, const TaskPosition& b) {
    return a.index == b.index && a.id == b.id && a.title == b.title;
  }
};

/// Everything a workflow run has to remember. Plain data; not thread-safe: one owner.
struct WorkflowState {
  WorkflowStatus status = WorkflowStatus::running;
  std::string step;  ///< id of the current step (the last one once complete)
  StepType step_type = StepType::action;
  std::optional<TaskPosition> task;                ///< loop steps, once tasks are set
  std::optional<std::string> sub_step;             ///< loop steps, with task
  std::optional<int> ralph_iteration;              ///< ralph steps, 1-based
  int attempt = 1;                                 ///< 1 + failures reported at the current position (retry)
  std::map<std::string, std::vector<Task>> tasks;  ///< per loop id, in run order
  std::map<std::string, std::string> outputs;      ///< by output key (`step`, `step.2`, `step.task.sub`)
  std::optional<std::string> summary;
  std::vector<std::string> artifacts;         ///< absolute, canonical paths, in registration order
  std::optional<std::string> failure_reason;  ///< set when status is failed

  friend bool operator==(const WorkflowState& a, const WorkflowState& b);
};

void to_json(nlohmann::json& j, const Task& t);

void to_json(nlohmann::json& j, const WorkflowState& s);

namespace detail {

// Readers of a stored state: each names the field that is wrong.
struct StateReader {
  std::string what;  // "workflow state" or a file path

  [[noreturn]] void fail(const std::string& field, const std::string& problem) const;
  const std::string& str(const nlohmann::json& obj, const char* key, const std::string& path) const;
  std::optional<std::string> opt_str(const nlohmann::json& obj, const char* key, const std::string& path) const;
  std::optional<long long> opt_int(const nlohmann::json& obj, const char* key, const std::string& path,
                                   long long min) const;
};

WorkflowStatus workflow_status_from(const std::string& s, const StateReader& r);

StepType step_type_from(const std::string& s, const StateReader& r);

TaskStatus task_status_from(const std::string& s, const StateReader& r, const std::string& field);

}  // namespace detail

/// Reads a state written by to_json. `what` names the source in errors (a file path, say). A state without
/// `artefacts` (written before artefacts existed) reads with an empty list. Throws cairn::state_error naming the
/// field. Consistency with a template is checked by WorkflowMachine::restore, not here.
WorkflowState workflow_state_from_json(const nlohmann::json& j, const std::string& what = "workflow state");

CAIRN_END_NAMESPACE

#ifndef CAIRN_COMPILED_LIB
#include "cairn/workflow/state-inl.hpp"
#endif
