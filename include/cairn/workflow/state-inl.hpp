// cairn — the function bodies of cairn/workflow/state.hpp (docs/api.md, "Compiled mode"). Header-only, the
// default, that header includes this file and CAIRN_INLINE is `inline`; with CAIRN_COMPILED_LIB they are
// compiled once, into cairn::compiled (src/compiled/), and the header only declares them.
#pragma once

#include "cairn/version.hpp"
#include "cairn/workflow/state.hpp"

CAIRN_BEGIN_NAMESPACE

CAIRN_INLINE const char* to_string(WorkflowStatus s) noexcept {
  switch (s) {
    case WorkflowStatus::running: return "running";
    case WorkflowStatus::complete: return "complete";
    case WorkflowStatus::failed: return "failed";
  }
  return "running";
}

CAIRN_INLINE const char* to_string(TaskStatus s) noexcept {
  switch (s) {
    case TaskStatus::pending: return "pending";
    case TaskStatus::in_progress: return "in_progress";
    case TaskStatus::done: return "done";
    case TaskStatus::failed: return "failed";
    case TaskStatus::blocked: return "blocked";
  }
  return "pending";
}

CAIRN_INLINE void to_json(nlohmann::json& j, const Task& t) {
  j = {{"id", t.id}, {"title", t.title}, {"status", to_string(t.status)}};
  if (t.description) j["description"] = *t.description;
  if (!t.depends_on.empty()) j["depends_on"] = t.depends_on;
}

CAIRN_INLINE void to_json(nlohmann::json& j, const WorkflowState& s) {
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

namespace detail {
CAIRN_INLINE const std::string& StateReader::str(const nlohmann::json& obj, const char* key,
                                                 const std::string& path) const {
  const auto it = obj.find(key);
  if (it == obj.end()) fail(path + key, "is missing");
  if (!it->is_string()) fail(path + key, "must be a string");
  return it->get_ref<const std::string&>();
}

CAIRN_INLINE std::optional<std::string> StateReader::opt_str(const nlohmann::json& obj, const char* key,
                                                             const std::string& path) const {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) fail(path + key, "must be a string");
  return it->get<std::string>();
}

CAIRN_INLINE std::optional<long long> StateReader::opt_int(const nlohmann::json& obj, const char* key,
                                                           const std::string& path, long long min) const {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer() || it->get<long long>() < min) {
    fail(path + key, fmt::format("must be an integer of at least {}", min));
  }
  return it->get<long long>();
}

CAIRN_INLINE WorkflowStatus workflow_status_from(const std::string& s, const StateReader& r) {
  if (s == "running") return WorkflowStatus::running;
  if (s == "complete") return WorkflowStatus::complete;
  if (s == "failed") return WorkflowStatus::failed;
  r.fail("status", "must be one of running, complete, failed");
}

CAIRN_INLINE StepType step_type_from(const std::string& s, const StateReader& r) {
  if (s == "action") return StepType::action;
  if (s == "loop") return StepType::loop;
  if (s == "ralph") return StepType::ralph;
  r.fail("step_type", "must be one of action, loop, ralph");
}

CAIRN_INLINE TaskStatus task_status_from(const std::string& s, const StateReader& r, const std::string& field) {
  if (s == "pending") return TaskStatus::pending;
  if (s == "in_progress") return TaskStatus::in_progress;
  if (s == "done") return TaskStatus::done;
  if (s == "failed") return TaskStatus::failed;
  if (s == "blocked") return TaskStatus::blocked;
  r.fail(field, "must be one of pending, in_progress, done, failed, blocked");
}

}  // namespace detail

CAIRN_INLINE WorkflowState workflow_state_from_json(const nlohmann::json& j, const std::string& what) {
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

CAIRN_INLINE bool operator==(const WorkflowState& a, const WorkflowState& b) {
  nlohmann::json ja = a;
  nlohmann::json jb = b;
  return ja == jb;
}

CAIRN_INLINE void detail::StateReader::fail(const std::string& field, const std::string& problem) const {
  throw state_error(fmt::format("{}: {} {}", what, field, problem));
}

CAIRN_END_NAMESPACE
