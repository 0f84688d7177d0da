// cairn — the function bodies of cairn/workflow/machine.hpp (docs/api.md, "Compiled mode"). Header-only, the
// default, that header includes this file and CAIRN_INLINE is `inline`; with CAIRN_COMPILED_LIB they are
// compiled once, into cairn::compiled (src/compiled/), and the header only declares them.
#pragma once

#include "cairn/version.hpp"
#include "cairn/workflow/machine.hpp"

CAIRN_BEGIN_NAMESPACE

// The private templates of WorkflowMachine: only its bodies below use them, so they are defined here, not parsed by
// every includer of machine.hpp in compiled mode.

template <class F>
auto WorkflowMachine::change(F&& body) -> decltype(body()) {
  if (!run_) return body();
  std::optional<WorkflowState> before = state_;
  try {
    auto result = body();
    nlohmann::json now = participant_state();
    nlohmann::json patch = nlohmann::json::diff(recorded_, now);
    if (!patch.empty()) {
      // Through a batch: a checkpoint or snapshot that is due is written after the patch, never before it (the
      // state here already has the change).
      auto group = run_->batch();
      run_->record("workflow", "patch", std::move(patch));
      group.commit();
      recorded_ = std::move(now);
    }
    return result;
  } catch (...) {
    state_ = std::move(before);
    throw;
  }
}

template <class F>
StatusReport WorkflowMachine::transition(std::string_view operation, F&& body) {
  if (!event_observer_) return body();
  const std::string before = state_ ? state_->step : std::string();
  return detail::observe_call(event_observer_.get(), EventKind::workflow_transition, operation, std::string_view(),
                              before, body, [](Event& e, const StatusReport& r) {
                                e.subject = r.step;
                                e.workflow = &r;
                              });
}

CAIRN_INLINE void ArtifactRegistration::refuse(std::string path, std::string reason) {
  invalid.push_back(std::move(path));
  invalid_reasons.push_back(std::move(reason));
}

CAIRN_INLINE std::shared_ptr<Observer> artifact_observer(ArtifactObserver fn) {
  return observe_with([fn = std::move(fn)](const Event& e) {
    if (e.kind == EventKind::artifact_registered && e.artifact && fn) fn(*e.artifact);
  });
}

CAIRN_INLINE void WorkflowMachine::attach(Run& run) {
  if (run_) throw invalid_argument("attach: the workflow machine is attached to a run already");
  run.attach(static_cast<RunParticipant&>(*this));
  run_ = &run;
  recorded_ = participant_state();
}

CAIRN_INLINE void WorkflowMachine::detach() noexcept {
  if (run_) run_->detach(static_cast<const RunParticipant&>(*this));
  run_ = nullptr;
}

CAIRN_INLINE WorkflowMachine WorkflowMachine::resume(Run& run, std::filesystem::path workspace_root) {
  if (!run.holds("workflow")) {
    throw state_error(fmt::format("run '{}' holds no workflow (attach a machine to record one)", run.run_id()));
  }
  WorkflowMachine m(std::move(workspace_root));
  m.attach(run);
  return m;
}

CAIRN_INLINE ArtifactRegistration WorkflowMachine::register_artefacts(const std::vector<std::string>& paths) {
  return register_artifacts(paths);
}

CAIRN_INLINE const WorkflowState& WorkflowMachine::require_started(const char* op) const {
  if (!state_) throw state_error(fmt::format("{}: the workflow is not started (call start first)", op));
  return *state_;
}

CAIRN_INLINE WorkflowState& WorkflowMachine::require_running(const char* op) {
  require_started(op);
  if (state_->status != WorkflowStatus::running) {
    throw state_error(fmt::format("{}: the workflow is {}, not running", op, to_string(state_->status)));
  }
  return *state_;
}

CAIRN_INLINE nlohmann::json WorkflowMachine::participant_state() const {
  if (!state_) return {{"template", template_.to_json()}};
  return to_json();
}

CAIRN_INLINE void WorkflowMachine::restore_participant(const nlohmann::json& state) {
  if (!state.is_object()) throw state_error("workflow: a recorded state must be a JSON object");
  if (state.size() == 1 && state.contains("template")) {
    try {
      template_ = WorkflowTemplate::from_json(state.at("template"));
    } catch (const invalid_template& e) {
      throw state_error(fmt::format("workflow: recorded template: {}", e.what()));
    }
    state_.reset();
  } else {
    auto m = from_json(state, workspace_root_, "recorded workflow state");
    template_ = std::move(m.template_);
    state_ = std::move(m.state_);
  }
  recorded_ = state;
  patched_seq_ = 0;
}

// A replay applies each patch to the recorded state in place (O(the patch)) and rebuilds the machine from it once,
// when the replay ends (participant_restored): not the whole state per patch.
CAIRN_INLINE void WorkflowMachine::apply_participant_entry(std::string_view kind, const JournalEntry& e) {
  if (kind != "patch") throw state_error(fmt::format("workflow: unknown journal entry kind 'workflow.{}'", kind));
  recorded_.patch_inplace(e.data);
  patched_seq_ = e.seq;
}

CAIRN_INLINE void WorkflowMachine::participant_restored() {
  const std::uint64_t seq = std::exchange(patched_seq_, 0);
  if (seq == 0) return;
  const nlohmann::json state = std::move(recorded_);
  try {
    restore_participant(state);
  } catch (const std::exception& ex) {
    throw state_error(
        fmt::format("entry {} (workflow.patch) leaves a state the machine cannot take: {}", seq, ex.what()));
  }
}

namespace detail {
CAIRN_INLINE bool is_strict_utf8(std::string_view s) noexcept {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    std::uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      n = 1;
      cp = c & 0x1Fu;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 2;
      cp = c & 0x0Fu;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3;
      cp = c & 0x07u;
    } else {
      return false;
    }
    if (s.size() - i <= n) return false;
    for (std::size_t k = 1; k <= n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3Fu);
    }
    if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    i += n + 1;
  }
  return true;
}

}  // namespace detail

CAIRN_INLINE void to_json(nlohmann::json& j, const WorkflowProgress& p) {
  j = {{"current_step", p.current_step}, {"total_steps", p.total_steps}};
  if (p.completed_tasks) j["completed_tasks"] = *p.completed_tasks;
  if (p.failed_tasks) j["failed_tasks"] = *p.failed_tasks;
  if (p.total_tasks) j["total_tasks"] = *p.total_tasks;
  if (p.current_task_progress) j["current_task_progress"] = *p.current_task_progress;
}

CAIRN_INLINE void to_json(nlohmann::json& j, const StatusReport& r) {
  j = nlohmann::json::object();
  j["status"] = to_string(r.status);
  j["step"] = r.step;
  j["step_type"] = to_string(r.step_type);
  if (r.task) {
    j["task"] = {{"index", r.task->index}, {"id", r.task->id}, {"title", r.task->title}, {"total", r.task->total}};
    if (r.task->description) j["task"]["description"] = *r.task->description;
  }
  if (r.sub_step) j["sub_step"] = *r.sub_step;
  if (r.sub_step_index) j["sub_step_index"] = *r.sub_step_index;
  if (r.total_sub_steps) j["total_sub_steps"] = *r.total_sub_steps;
  if (r.ralph_iteration) j["ralph_iteration"] = *r.ralph_iteration;
  if (r.ralph_total) j["ralph_total"] = *r.ralph_total;
  j["attempt"] = r.attempt;
  if (r.waiting_for_tasks) j["waiting_for_tasks"] = true;
  j["agent"] = r.agent ? nlohmann::json(*r.agent) : nlohmann::json(nullptr);
  j["delegate"] = r.agent.has_value();
  j["instructions"] = r.instructions;
  j["progress"] = r.progress;
  j["artefacts"] = r.artifacts;
  if (r.summary) j["summary"] = *r.summary;
  if (r.failure_reason) j["failure_reason"] = *r.failure_reason;
}

CAIRN_INLINE void to_json(nlohmann::json& j, const ArtifactRegistration& r) {
  j = {{"registered", r.registered},
       {"duplicates", r.duplicates},
       {"invalid", r.invalid},
       {"invalid_reasons", r.invalid_reasons}};
}

CAIRN_INLINE std::optional<std::string> WorkflowMachine::sanitize_summary(std::string_view text) {
  std::string s;
  s.reserve(text.size());
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c != 0x7F) s.push_back(ch);
  }
  const auto first = s.find_first_not_of(' ');
  if (first == std::string::npos) return std::nullopt;
  s.erase(0, first);
  // Cut at a code point boundary, never inside a UTF-8 sequence.
  std::size_t points = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && points++ == max_summary_length) {
      s.resize(i);
      break;
    }
  }
  s.erase(s.find_last_not_of(' ') + 1);
  return s;
}

CAIRN_INLINE std::string WorkflowMachine::ralph_line(int iteration, int total) {
  if (iteration <= 1) {
    return fmt::format(
        "[Ralph iteration 1 of {0}] This step runs {0} times. When you advance, you will get this same task again, "
        "to improve on what you produced.",
        total);
  }
  return fmt::format(
      "[Ralph iteration {0} of {1}] This is the same task again, on purpose: do not skip it. Improve on the result "
      "of iteration {2}.",
      iteration, total, iteration - 1);
}

CAIRN_INLINE const LoopSubStep* WorkflowMachine::current_sub_step() const {
  if (!state_->sub_step) return nullptr;
  const auto* subs = template_.loop(state_->step);
  if (!subs) return nullptr;
  for (const auto& s : *subs) {
    if (s.id == *state_->sub_step) return &s;
  }
  return nullptr;
}

CAIRN_INLINE std::string WorkflowMachine::output_key() const {
  switch (state_->step_type) {
    case StepType::action: return state_->step;
    case StepType::ralph: return fmt::format("{}.{}", state_->step, state_->ralph_iteration.value_or(1));
    case StepType::loop: break;
  }
  std::string key = state_->step;
  if (state_->task) key += "." + state_->task->id;
  if (state_->sub_step) key += "." + *state_->sub_step;
  return key;
}

CAIRN_INLINE void WorkflowMachine::enter_step(std::size_t index) {
  auto& s = *state_;
  const auto& step = template_.steps()[index];
  s.step = step.id;
  s.step_type = step.type;
  s.task.reset();
  s.sub_step.reset();
  s.ralph_iteration.reset();
  s.attempt = 1;
  if (step.type == StepType::ralph) s.ralph_iteration = 1;
  // A loop whose tasks were set ahead starts at once; one without tasks waits for set_tasks.
  if (step.type == StepType::loop && s.tasks.count(step.id)) begin_loop();
}

CAIRN_INLINE void WorkflowMachine::next_step() {
  const std::size_t next = *template_.step_index(state_->step) + 1;
  if (next >= template_.steps().size()) {
    state_->status = WorkflowStatus::complete;
    state_->task.reset();
    state_->sub_step.reset();
    state_->ralph_iteration.reset();
    state_->attempt = 1;
    return;
  }
  enter_step(next);
}

CAIRN_INLINE void WorkflowMachine::begin_loop() {
  if (!start_task_from(0)) next_step();
}

CAIRN_INLINE bool WorkflowMachine::start_task_from(std::size_t from) {
  auto& s = *state_;
  auto& tasks = s.tasks[s.step];
  const auto& subs = *template_.loop(s.step);
  for (std::size_t i = from; i < tasks.size(); ++i) {
    Task& t = tasks[i];
    if (t.status == TaskStatus::done || t.status == TaskStatus::failed || t.status == TaskStatus::blocked) continue;
    bool blocked = false;
    for (const auto& dep : t.depends_on) {
      for (const auto& other : tasks) {
        if (other.id == dep && (other.status == TaskStatus::failed || other.status == TaskStatus::blocked)) {
          blocked = true;
        }
      }
    }
    if (blocked) {
      t.status = TaskStatus::blocked;
      continue;
    }
    t.status = TaskStatus::in_progress;
    s.task = TaskPosition{i, t.id, t.title};
    s.sub_step = subs.front().id;
    s.attempt = 1;
    return true;
  }
  s.task.reset();
  s.sub_step.reset();
  return false;
}

CAIRN_INLINE std::string WorkflowMachine::instructions() const {
  const auto& s = *state_;
  if (s.status == WorkflowStatus::complete) return "Workflow complete.";
  if (s.status == WorkflowStatus::failed) {
    return fmt::format("Workflow failed: {}", s.failure_reason.value_or("no reason given"));
  }
  const auto& step = current_step();
  const LoopSubStep* sub = current_sub_step();
  if (step.type == StepType::loop && !sub) {
    return fmt::format(
        "Loop step '{0}' has no tasks yet. Call workflow_set_tasks with loop_id '{0}' and the tasks to work "
        "through (an empty list skips the loop).",
        step.id);
  }
  std::string text;
  if (sub) {
    // One pass, so a title that itself contains "{task.id}" is not expanded again.
    const Task* task = nullptr;
    const auto it = s.tasks.find(s.step);
    if (it != s.tasks.end() && s.task && s.task->index < it->second.size()) task = &it->second[s.task->index];
    const std::string& in = sub->instructions;
    for (std::size_t i = 0; i < in.size();) {
      auto take = [&](std::string_view placeholder, std::string_view value) {
        if (in.compare(i, placeholder.size(), placeholder) != 0) return false;
        text.append(value);
        i += placeholder.size();
        return true;
      };
      if (task && in[i] == '{' &&
          (take("{task.id}", task->id) || take("{task.title}", task->title) ||
           take("{task.description}", task->description.value_or("")))) {
        continue;
      }
      text.push_back(in[i++]);
    }
  } else {
    text = step.instructions;
  }
  if (step.type == StepType::ralph) text += "\n\n" + ralph_line(s.ralph_iteration.value_or(1), step.n);
  if (step.artifacts || (sub && sub->artifacts)) {
    text += "\n\n";
    text += artifact_instruction;
  }
  const std::optional<std::string>& agent = sub && sub->agent ? sub->agent : step.agent;
  if (agent) text = fmt::format("SPAWN the '{}' sub-agent to handle this step:\n\n{}", *agent, text);
  return text;
}

CAIRN_INLINE StatusReport WorkflowMachine::status() const {
  const auto& s = require_started("status");
  StatusReport r;
  r.status = s.status;
  r.step = s.step;
  r.step_type = s.step_type;
  r.attempt = s.attempt;
  r.artifacts = s.artifacts;
  r.summary = s.summary;
  r.failure_reason = s.failure_reason;
  const auto& step = current_step();
  r.progress.current_step = *template_.step_index(s.step) + 1;
  r.progress.total_steps = template_.steps().size();
  if (s.step_type == StepType::loop) {
    const auto it = s.tasks.find(s.step);
    const std::vector<Task> none;
    const auto& tasks = it == s.tasks.end() ? none : it->second;
    const auto& subs = *template_.loop(s.step);
    std::size_t done = 0, failed = 0;
    for (const auto& t : tasks) {
      done += t.status == TaskStatus::done;
      failed += t.status == TaskStatus::failed || t.status == TaskStatus::blocked;
    }
    r.progress.completed_tasks = done;
    r.progress.failed_tasks = failed;
    r.progress.total_tasks = tasks.size();
    if (s.status == WorkflowStatus::running && it == s.tasks.end()) r.waiting_for_tasks = true;
    if (s.task && s.task->index < tasks.size()) {
      const Task& t = tasks[s.task->index];
      r.task = TaskStatusInfo{s.task->index, t.id, t.title, t.description, tasks.size()};
      if (s.sub_step) {
        std::size_t idx = 0;
        while (idx < subs.size() && subs[idx].id != *s.sub_step) ++idx;
        r.sub_step = s.sub_step;
        r.sub_step_index = idx;
        r.total_sub_steps = subs.size();
        r.progress.current_task_progress =
            fmt::format("Task {}/{}, Sub-step {}/{}", s.task->index + 1, tasks.size(), idx + 1, subs.size());
      }
    }
  }
  if (s.step_type == StepType::ralph && s.status == WorkflowStatus::running) {
    r.ralph_iteration = s.ralph_iteration.value_or(1);
    r.ralph_total = step.n;
  }
  if (s.status == WorkflowStatus::running && !r.waiting_for_tasks) {
    const LoopSubStep* sub = current_sub_step();
    r.agent = sub && sub->agent ? sub->agent : step.agent;
  }
  r.instructions = instructions();
  return r;
}

CAIRN_INLINE StatusReport WorkflowMachine::start(const std::optional<std::string>& summary) {
  return transition("start", [&] {
    if (state_) return status();
    return change([&] {
      state_.emplace();
      if (summary) state_->summary = sanitize_summary(*summary);
      enter_step(0);
      return status();
    });
  });
}

CAIRN_INLINE StatusReport WorkflowMachine::advance(const std::string& output, StepResult result) {
  return transition(result == StepResult::succeeded ? "advance" : "advance_failed", [&] {
    require_running("advance");
    return change([&] { return advance_unrecorded(output, result); });
  });
}

CAIRN_INLINE StatusReport WorkflowMachine::advance_unrecorded(const std::string& output, StepResult result) {
  auto& s = *state_;
  s.outputs[output_key()] = output;
  const auto& step = current_step();
  if (result == StepResult::failed) {
    const LoopSubStep* sub = current_sub_step();
    const OnFail rule = sub ? sub->on_fail : OnFail::retry;
    if (rule == OnFail::retry) {
      ++s.attempt;
    } else if (rule == OnFail::skip) {
      s.tasks[s.step][s.task->index].status = TaskStatus::failed;
      if (!start_task_from(s.task->index + 1)) next_step();
    } else {
      s.status = WorkflowStatus::failed;
      s.failure_reason =
          fmt::format("sub-step '{}' of task '{}' in loop '{}' failed (on_fail: abort)", sub->id, s.task->id, s.step);
    }
    return status();
  }
  switch (step.type) {
    case StepType::action: next_step(); break;
    case StepType::ralph:
      if (s.ralph_iteration.value_or(1) < step.n) {
        s.ralph_iteration = s.ralph_iteration.value_or(1) + 1;
        s.attempt = 1;
      } else {
        next_step();
      }
      break;
    case StepType::loop: {
      if (!s.task || !s.sub_step) {  // a loop without tasks is skipped
        next_step();
        break;
      }
      const auto& subs = *template_.loop(s.step);
      std::size_t idx = 0;
      while (idx < subs.size() && subs[idx].id != *s.sub_step) ++idx;
      if (idx + 1 < subs.size()) {
        s.sub_step = subs[idx + 1].id;
        s.attempt = 1;
        break;
      }
      s.tasks[s.step][s.task->index].status = TaskStatus::done;
      if (!start_task_from(s.task->index + 1)) next_step();
      break;
    }
  }
  return status();
}

CAIRN_INLINE StatusReport WorkflowMachine::set_tasks(const std::string& loop_id, std::vector<Task> tasks) {
  return transition("set_tasks", [&] {
    require_running("set_tasks");
    return change([&] { return set_tasks_unrecorded(loop_id, std::move(tasks)); });
  });
}

CAIRN_INLINE StatusReport WorkflowMachine::set_tasks_unrecorded(const std::string& loop_id, std::vector<Task> tasks) {
  auto& s = *state_;
  const auto loop_index = template_.step_index(loop_id);
  if (!loop_index || template_.steps()[*loop_index].type != StepType::loop) {
    std::string loops;
    for (const auto& st : template_.steps()) {
      if (st.type == StepType::loop) loops += (loops.empty() ? "" : ", ") + st.id;
    }
    throw invalid_argument(fmt::format("set_tasks: '{}' is not a loop step of workflow '{}' (loop steps: {})",
                                       detail::excerpt(loop_id), template_.name(), loops.empty() ? "none" : loops));
  }
  const std::size_t current = *template_.step_index(s.step);
  if (*loop_index < current || (*loop_index == current && s.task)) {
    throw state_error(fmt::format("set_tasks: loop '{}' {}; its tasks can no longer be replaced", loop_id,
                                  *loop_index < current ? "has already run" : "is running"));
  }
  if (tasks.size() > max_tasks) {
    throw limit_exceeded(fmt::format("set_tasks: {} tasks, more than the limit of {}", tasks.size(), max_tasks));
  }
  std::unordered_map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    auto& t = tasks[i];
    if (!detail::is_workflow_id(t.id)) {
      throw invalid_argument(fmt::format("set_tasks: tasks[{}].id '{}' is not a valid task id ({})", i,
                                         detail::excerpt(t.id), detail::workflow_id_rule()));
    }
    if (t.title.find_first_not_of(" \t\r\n") == std::string::npos) {
      throw invalid_argument(fmt::format("set_tasks: tasks[{}].title must not be empty", i));
    }
    if (!index.emplace(t.id, i).second) {
      throw invalid_argument(fmt::format("set_tasks: tasks[{}].id '{}' is used twice", i, t.id));
    }
    t.status = TaskStatus::pending;
  }
  // Kahn's algorithm over "dependency before dependant", always taking the ready task given first.
  std::vector<std::vector<std::size_t>> dependants(tasks.size());
  std::vector<std::size_t> waiting_on(tasks.size(), 0);
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    std::unordered_set<std::string> seen;
    for (const auto& dep : tasks[i].depends_on) {
      const auto it = index.find(dep);
      if (it == index.end()) {
        throw invalid_argument(fmt::format("set_tasks: tasks[{}] ('{}') depends on unknown task '{}'", i, tasks[i].id,
                                           detail::excerpt(dep)));
      }
      if (it->second == i) {
        throw invalid_argument(fmt::format("set_tasks: tasks[{}] ('{}') depends on itself", i, tasks[i].id));
      }
      if (!seen.insert(dep).second) continue;
      dependants[it->second].push_back(i);
      ++waiting_on[i];
    }
  }
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (waiting_on[i] == 0) ready.push(i);
  }
  std::vector<Task> ordered;
  ordered.reserve(tasks.size());
  while (!ready.empty()) {
    const std::size_t i = ready.top();
    ready.pop();
    for (std::size_t d : dependants[i]) {
      if (--waiting_on[d] == 0) ready.push(d);
    }
    ordered.push_back(std::move(tasks[i]));
  }
  if (ordered.size() != tasks.size()) {
    // Every task left waits on another task left, so following dependencies from any of them must loop.
    std::size_t at = 0;
    while (waiting_on[at] == 0) ++at;
    std::vector<std::size_t> path;
    std::unordered_map<std::size_t, std::size_t> pos;
    while (!pos.count(at)) {
      pos[at] = path.size();
      path.push_back(at);
      for (const auto& dep : tasks[at].depends_on) {
        const std::size_t d = index.at(dep);
        if (waiting_on[d] != 0) {
          at = d;
          break;
        }
      }
    }
    // path[pos[at]..] depends on each other in a ring; print it in run order (a needs b: "b -> a").
    std::vector<std::string> ring;
    for (std::size_t k = path.size(); k-- > pos[at];) ring.push_back(tasks[path[k]].id);
    ring.push_back(ring.front());
    std::string text;
    for (const auto& id : ring) text += (text.empty() ? "" : " -> ") + id;
    throw invalid_argument(fmt::format("set_tasks: the tasks of loop '{}' form a dependency cycle: {}", loop_id, text));
  }
  s.tasks[loop_id] = std::move(ordered);
  if (*loop_index == current) begin_loop();
  return status();
}

CAIRN_INLINE ArtifactRegistration WorkflowMachine::register_artifacts(const std::vector<std::string>& paths) {
  require_started("register_artefacts");
  std::vector<ArtifactEvent> events;
  auto out = change([&] { return register_paths(paths, events); });
  // The observers hear only of what the state (and an attached run) has; each event is built once for both.
  for (const auto& e : events) {
    if (event_observer_) {
      Event ev;
      ev.kind = EventKind::artifact_registered;
      ev.operation = "register_artifacts";
      ev.subject = e.relative_path;
      ev.bytes_in = e.size_bytes;
      ev.items = 1;
      ev.artifact = &e;
      event_observer_->on_event(ev);
    }
    if (observer_) observer_(e);
  }
  return out;
}

CAIRN_INLINE ArtifactRegistration WorkflowMachine::register_paths(const std::vector<std::string>& paths,
                                                                  std::vector<ArtifactEvent>& events) {
  namespace fs = std::filesystem;
  auto& s = *state_;
  ArtifactRegistration out;
  std::error_code ec;
  const fs::path root = fs::canonical(workspace_root_, ec);
  const bool have_root = !ec && fs::is_directory(root, ec);
  const std::string root_text = root.string();
  // cairn's own files: the state file and its lock by name and by inode (a hard link is the same file), its temp
  // files by name (`<name>.tmp`, `<name>.tmp-<anything>`).
  const std::string own = root_text + (root_text.size() > 0 && root_text.back() == '/' ? "" : "/") +
                          fs::path(state_file_name_).lexically_normal().string();
  std::vector<std::pair<dev_t, ino_t>> own_files;
  for (const std::string& f : {own, own + ".lock"}) {
    struct stat ost {};
    if (have_root && ::stat(f.c_str(), &ost) == 0) own_files.emplace_back(ost.st_dev, ost.st_ino);
  }
  auto is_own = [&](const std::string& text, const struct stat& st) {
    if (text == own || text == own + ".lock" || text == own + ".tmp" || text.rfind(own + ".tmp-", 0) == 0) return true;
    for (const auto& [dev, ino] : own_files) {
      if (st.st_dev == dev && st.st_ino == ino) return true;
    }
    return false;
  };
  std::unordered_set<std::string> known(s.artifacts.begin(), s.artifacts.end());
  for (const auto& raw : paths) {
    if (!have_root) {
      out.refuse(raw, fmt::format("the workspace folder '{}' does not exist", workspace_root_.string()));
      continue;
    }
    if (raw.find_first_not_of(" \t\r\n") == std::string::npos) {
      out.refuse(raw, "the path is empty");
      continue;
    }
    if (raw.size() > max_path_length) {
      out.refuse(raw, fmt::format("the path is longer than {} bytes", max_path_length));
      continue;
    }
    if (raw.find('\0') != std::string::npos) {
      out.refuse(raw, "the path contains a NUL byte");
      continue;
    }
    const std::string p = raw.front() == '/' ? raw : root_text + "/" + raw;
    // realpath resolves every symlink and `..`, so containment is decided on the real location.
    char buf[PATH_MAX];
    struct stat st {};
    if (!::realpath(p.c_str(), buf)) {
      out.refuse(raw, fmt::format("cannot resolve the path: {}", std::strerror(errno)));
      continue;
    }
    if (::stat(buf, &st) != 0 || !S_ISREG(st.st_mode)) {
      out.refuse(raw, "not a regular file");
      continue;
    }
    const std::string text = buf;
    const bool inside = text.size() > root_text.size() && text.compare(0, root_text.size(), root_text) == 0 &&
                        (root_text.back() == '/' || text[root_text.size()] == '/');
    if (!inside) {
      out.refuse(raw, "outside the workspace");
      continue;
    }
    // The state is JSON text: a name that is not UTF-8 could only be kept altered, and would then name no file.
    if (!detail::is_strict_utf8(text)) {
      out.refuse(raw,
                 "the path is not valid UTF-8 (the workflow state is JSON text and could not keep it "
                 "exactly)");
      continue;
    }
    if (is_own(text, st)) {
      out.refuse(raw, "this is cairn's own workflow state file (or its lock or temp file), not an output");
      continue;
    }
    if (!known.insert(text).second) {
      out.duplicates.push_back(text);
      continue;
    }
    s.artifacts.push_back(text);
    out.registered.push_back(text);
    if (observer_ || event_observer_) {
      ArtifactEvent e;
      e.relative_path = text.substr(root_text.size() + (root_text.back() == '/' ? 0 : 1));
      e.absolute_path = text;
      e.size_bytes = static_cast<std::uint64_t>(st.st_size);
      e.workflow = template_.name();
      e.step = s.step;
      if (s.task) e.task_id = s.task->id;
      e.sub_step = s.sub_step;
      events.push_back(std::move(e));
    }
  }
  return out;
}

CAIRN_INLINE StatusReport WorkflowMachine::fail(const std::string& reason) {
  return transition("fail", [&] {
    require_running("fail");
    return change([&] {
      auto& s = *state_;
      s.status = WorkflowStatus::failed;
      std::string r = reason.substr(0, max_reason_length);
      if (r.find_first_not_of(" \t\r\n") == std::string::npos) r = "no reason given";
      s.failure_reason = std::move(r);
      return status();
    });
  });
}

CAIRN_INLINE nlohmann::json WorkflowMachine::to_json() const {
  const auto& s = require_started("to_json");
  nlohmann::json j = s;
  j["template"] = template_.to_json();
  return j;
}

CAIRN_INLINE WorkflowMachine WorkflowMachine::restore(WorkflowTemplate tmpl, WorkflowState st,
                                                      std::filesystem::path root) {
  auto bad = [](const std::string& msg) { throw state_error("workflow state does not fit its template: " + msg); };
  const auto idx = tmpl.step_index(st.step);
  if (!idx) bad(fmt::format("step '{}' is not a step of template '{}'", detail::excerpt(st.step), tmpl.name()));
  const auto& step = tmpl.steps()[*idx];
  if (st.step_type != step.type) {
    bad(fmt::format("step '{}' is a {} step, not {}", step.id, to_string(step.type), to_string(st.step_type)));
  }
  for (const auto& [loop, tasks] : st.tasks) {
    const auto li = tmpl.step_index(loop);
    if (!li || tmpl.steps()[*li].type != StepType::loop) bad(fmt::format("tasks.{} names no loop step", loop));
    std::unordered_set<std::string> ids;
    for (const auto& t : tasks) {
      if (!detail::is_workflow_id(t.id) || !ids.insert(t.id).second) {
        bad(fmt::format("tasks.{} has an invalid or repeated task id '{}'", loop, detail::excerpt(t.id)));
      }
    }
    for (const auto& t : tasks) {
      for (const auto& d : t.depends_on) {
        if (!ids.count(d)) bad(fmt::format("task '{}' depends on unknown task '{}'", t.id, detail::excerpt(d)));
      }
    }
  }
  const bool running = st.status == WorkflowStatus::running;
  if (running && step.type == StepType::loop && st.task) {
    const auto it = st.tasks.find(step.id);
    if (it == st.tasks.end() || st.task->index >= it->second.size() || it->second[st.task->index].id != st.task->id) {
      bad(fmt::format("task '{}' at index {} is not in loop '{}'", detail::excerpt(st.task->id), st.task->index,
                      step.id));
    }
    bool found = false;
    for (const auto& sub : *tmpl.loop(step.id)) found = found || (st.sub_step && sub.id == *st.sub_step);
    if (!found) bad(fmt::format("sub_step is missing or not a sub-step of loop '{}'", step.id));
  } else if (running && (st.task || st.sub_step)) {
    bad(fmt::format("step '{}' has a task or sub_step but is {}", step.id,
                    step.type == StepType::loop ? "a loop without a current task" : "not a loop"));
  }
  if (running && step.type == StepType::ralph &&
      (!st.ralph_iteration || *st.ralph_iteration < 1 || *st.ralph_iteration > step.n)) {
    bad(fmt::format("ralph_iteration of step '{}' must be between 1 and {}", step.id, step.n));
  }
  if (st.status == WorkflowStatus::failed && !st.failure_reason) st.failure_reason = "no reason given";
  WorkflowMachine m(std::move(tmpl), std::move(root));
  m.state_ = std::move(st);
  return m;
}

CAIRN_INLINE WorkflowMachine WorkflowMachine::from_json(const nlohmann::json& j, std::filesystem::path root,
                                                        const std::string& what) {
  if (!j.is_object()) throw state_error(fmt::format("{}: must be a JSON object", what));
  const auto t = j.find("template");
  if (t == j.end()) throw state_error(fmt::format("{}: template is missing", what));
  std::optional<WorkflowTemplate> tmpl;
  try {
    tmpl = WorkflowTemplate::from_json(*t);
  } catch (const invalid_template& e) {
    throw state_error(fmt::format("{}: template: {}", what, e.what()));
  }
  return restore(std::move(*tmpl), workflow_state_from_json(j, what), std::move(root));
}

CAIRN_INLINE WorkflowMachine::WorkflowMachine(const WorkflowMachine& o)
    : RunParticipant(o),
      template_(o.template_),
      workspace_root_(o.workspace_root_),
      state_(o.state_),
      observer_(o.observer_),
      event_observer_(o.event_observer_),
      state_file_name_(o.state_file_name_) {}

CAIRN_INLINE WorkflowMachine& WorkflowMachine::operator=(const WorkflowMachine& o) {
  if (this != &o) {
    detach();
    template_ = o.template_;
    workspace_root_ = o.workspace_root_;
    state_ = o.state_;
    observer_ = o.observer_;
    event_observer_ = o.event_observer_;
    state_file_name_ = o.state_file_name_;
  }
  return *this;
}

CAIRN_INLINE WorkflowMachine::WorkflowMachine(WorkflowMachine&& o) noexcept
    : RunParticipant(o),
      template_(std::move(o.template_)),
      workspace_root_(std::move(o.workspace_root_)),
      state_(std::move(o.state_)),
      observer_(std::move(o.observer_)),
      event_observer_(std::move(o.event_observer_)),
      state_file_name_(std::move(o.state_file_name_)),
      run_(std::exchange(o.run_, nullptr)),
      recorded_(std::move(o.recorded_)),
      patched_seq_(o.patched_seq_) {
  if (run_) run_->moved(static_cast<const RunParticipant&>(o), static_cast<RunParticipant&>(*this));
}

CAIRN_INLINE WorkflowMachine& WorkflowMachine::operator=(WorkflowMachine&& o) noexcept {
  if (this != &o) {
    detach();
    template_ = std::move(o.template_);
    workspace_root_ = std::move(o.workspace_root_);
    state_ = std::move(o.state_);
    observer_ = std::move(o.observer_);
    event_observer_ = std::move(o.event_observer_);
    state_file_name_ = std::move(o.state_file_name_);
    run_ = std::exchange(o.run_, nullptr);
    recorded_ = std::move(o.recorded_);
    patched_seq_ = o.patched_seq_;
    if (run_) run_->moved(static_cast<const RunParticipant&>(o), static_cast<RunParticipant&>(*this));
  }
  return *this;
}

CAIRN_INLINE WorkflowMachine::~WorkflowMachine() { detach(); }

CAIRN_END_NAMESPACE
