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

#include "cairn/detail/text.hpp"
#include "cairn/error.hpp"
#include "cairn/workflow/template.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

enum class WorkflowStatus { running, complete, failed };

/// pending → in_progress → done | failed. `blocked`: never run because a task it depends on failed or was blocked.
enum class TaskStatus { pending, in_progress, done, failed, blocked };

inline const char* to_string(WorkflowStatus s) noexcept {
  switch (s) {
    case WorkflowStatus::running: return "running";
    case WorkflowStatus::complete: return "complete";
    case WorkflowStatus::failed: return "failed";
  }
  return "running";
}

inline const char* to_string(TaskStatus s) noexcept {
  switch (s) {
    case TaskStatus::pending: return "pending";
    case TaskStatus::in_progress: return "in_progress";
    case TaskStatus::done: return "done";
    case TaskStatus::failed: return "failed";
    case TaskStatus::blocked: return "blocked";
  }
  return "pending";
}

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
  std::string step;                      ///< id of the current step (the last one once complete)
  StepType step_type = StepType::action;
  std::optional<TaskPosition> task;      ///< loop steps, once tasks are set
  std::optional<std::string> sub_step;   ///< loop steps, with task
  std::optional<int> ralph_iteration;    ///< ralph steps, 1-based
  int attempt = 1;                       ///< 1 + failures reported at the current position (retry)
  std::map<std::string, std::vector<Task>> tasks;  ///< per loop id, in run order
  std::map<std::string, std::string> outputs;      ///< by output key (`step`, `step.2`, `step.task.sub`)
  std::optional<std::string> summary;
  std::vector<std::string> artifacts;              ///< absolute, canonical paths, in registration order
  std::optional<std::string> failure_reason;       ///< set when status is failed

  friend bool operator==(const WorkflowState& a, const WorkflowState& b);
};

inline void to_json(nlohmann::json& j, const Task& t) {
  j = {{"id", t.id}, {"title", t.title}, {"status", to_string(t.status)}};
  if (t.description) j["description"] = *t.description;
  if (!t.depends_on.empty()) j["depends_on"] = t.depends_on;
}

inline void to_json(nlohmann::json& j, const WorkflowState& s) {
  j = nlohmann::json::object();
  j["status"] = to_string(s.status);
  j["step"] = s.step;
  j["step_type"] = to_string(s.step_type);
  if (s.task) j["task"] = {{"index", s.task->index}, {"id", s.task->id}, {"title", s.task->title}};
  if (s.sub_step) j["sub_step"] = *s.sub_step;
  if (s.ralph_iteration) j["ralph_iteration"] = *s.ralph_iteration;
  j["attempt"] = s.attempt;
  j["tasks"] = nlohmann::json::object();
  for (const auto& [loop, tasks] : s.tasks) j["tasks"][loop] = tasks;
  j["outputs"] = s.outputs;
  if (s.summary) j["summary"] = *s.summary;
  j["artefacts"] = s.artifacts;
  if (s.failure_reason) j["failure_reason"] = *s.failure_reason;
}

inline bool operator==(const WorkflowState& a, const WorkflowState& b) {
  nlohmann::json ja = a;
  nlohmann::json jb = b;
  return ja == jb;
}

namespace detail {

// Readers of a stored state: each names the field that is wrong.
struct StateReader {
  std::string what;  // "workflow state" or a file path

  [[noreturn]] void fail(const std::string& field, const std::string& problem) const {
    throw state_error(fmt::format("{}: {} {}", what, field, problem));
  }
  const std::string& str(const nlohmann::json& obj, const char* key, const std::string& path) const {
    const auto it = obj.find(key);
    if (it == obj.end()) fail(path + key, "is missing");
    if (!it->is_string()) fail(path + key, "must be a string");
    return it->get_ref<const std::string&>();
  }
  std::optional<std::string> opt_str(const nlohmann::json& obj, const char* key, const std::string& path) const {
    const auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return std::nullopt;
    if (!it->is_string()) fail(path + key, "must be a string");
    return it->get<std::string>();
  }
  std::optional<long long> opt_int(const nlohmann::json& obj, const char* key, const std::string& path,
                                   long long min) const {
    const auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return std::nullopt;
    if (!it->is_number_integer() || it->get<long long>() < min) {
      fail(path + key, fmt::format("must be an integer of at least {}", min));
    }
    return it->get<long long>();
  }
};

inline WorkflowStatus workflow_status_from(const std::string& s, const StateReader& r) {
  if (s == "running") return WorkflowStatus::running;
  if (s == "complete") return WorkflowStatus::complete;
  if (s == "failed") return WorkflowStatus::failed;
  r.fail("status", "must be one of running, complete, failed");
}

inline StepType step_type_from(const std::string& s, const StateReader& r) {
  if (s == "action") return StepType::action;
  if (s == "loop") return StepType::loop;
  if (s == "ralph") return StepType::ralph;
  r.fail("step_type", "must be one of action, loop, ralph");
}

inline TaskStatus task_status_from(const std::string& s, const StateReader& r, const std::string& field) {
  if (s == "pending") return TaskStatus::pending;
  if (s == "in_progress") return TaskStatus::in_progress;
  if (s == "done") return TaskStatus::done;
  if (s == "failed") return TaskStatus::failed;
  if (s == "blocked") return TaskStatus::blocked;
  r.fail(field, "must be one of pending, in_progress, done, failed, blocked");
}

}  // namespace detail

/// Reads a state written by to_json. `what` names the source in errors (a file path, say). A state without
/// `artefacts` (written before artefacts existed) reads with an empty list. Throws cairn::state_error naming the
/// field. Consistency with a template is checked by WorkflowMachine::restore, not here.
inline WorkflowState workflow_state_from_json(const nlohmann::json& j, const std::string& what = "workflow state") {
  const detail::StateReader r{what};
  if (!j.is_object()) throw state_error(fmt::format("{}: must be a JSON object", what));
  WorkflowState s;
  s.status = detail::workflow_status_from(r.str(j, "status", ""), r);
  s.step = r.str(j, "step", "");
  s.step_type = detail::step_type_from(r.str(j, "step_type", ""), r);
  if (const auto it = j.find("task"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) r.fail("task", "must be an object");
    TaskPosition p;
    const auto index = r.opt_int(*it, "index", "task.", 0);
    if (!index) r.fail("task.index", "is missing");
    p.index = static_cast<std::size_t>(*index);
    p.id = r.str(*it, "id", "task.");
    p.title = r.str(*it, "title", "task.");
    s.task = std::move(p);
  }
  s.sub_step = r.opt_str(j, "sub_step", "");
  if (const auto it = r.opt_int(j, "ralph_iteration", "", 1)) {
    if (*it > WorkflowTemplate::max_ralph_iterations) r.fail("ralph_iteration", "is out of range");
    s.ralph_iteration = static_cast<int>(*it);
  }
  if (const auto a = r.opt_int(j, "attempt", "", 1)) {
    if (*a > 1000000000) r.fail("attempt", "is out of range");
    s.attempt = static_cast<int>(*a);
  }
  if (const auto it = j.find("tasks"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) r.fail("tasks", "must be an object of loop id: [tasks]");
    for (const auto& [loop, list] : it->items()) {
      const std::string base = "tasks." + loop;
      if (!list.is_array()) r.fail(base, "must be an array");
      std::vector<Task> tasks;
      for (std::size_t i = 0; i < list.size(); ++i) {
        const std::string path = fmt::format("{}[{}].", base, i);
        const auto& t = list[i];
        if (!t.is_object()) r.fail(path.substr(0, path.size() - 1), "must be an object");
        Task task;
        task.id = r.str(t, "id", path);
        task.title = r.str(t, "title", path);
        task.description = r.opt_str(t, "description", path);
        task.status = detail::task_status_from(r.str(t, "status", path), r, path + "status");
        if (const auto d = t.find("depends_on"); d != t.end() && !d->is_null()) {
          if (!d->is_array()) r.fail(path + "depends_on", "must be an array of task ids");
          for (const auto& id : *d) {
            if (!id.is_string()) r.fail(path + "depends_on", "must be an array of task ids");
            task.depends_on.push_back(id.get<std::string>());
          }
        }
        tasks.push_back(std::move(task));
      }
      s.tasks.emplace(loop, std::move(tasks));
    }
  }
  if (const auto it = j.find("outputs"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) r.fail("outputs", "must be an object of key: text");
    for (const auto& [key, value] : it->items()) {
      if (!value.is_string()) r.fail("outputs." + key, "must be a string");
      s.outputs.emplace(key, value.get<std::string>());
    }
  }
  s.summary = r.opt_str(j, "summary", "");
  if (const auto it = j.find("artefacts"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) r.fail("artefacts", "must be an array of paths");
    for (std::size_t i = 0; i < it->size(); ++i) {
      if (!(*it)[i].is_string()) r.fail(fmt::format("artefacts[{}]", i), "must be a string");
      s.artifacts.push_back((*it)[i].get<std::string>());
    }
  }
  s.failure_reason = r.opt_str(j, "failure_reason", "");
  return s;
}

CAIRN_END_NAMESPACE
