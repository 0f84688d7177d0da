// cairn — WorkflowMachine: walks a WorkflowTemplate step by step, telling an agent what to do next.
//
// The machine turns the template into a sequence of positions (an action step, one iteration of a ralph step, one
// sub-step of one task of a loop). `status()` says what to do at the current position; `advance(output)` stores the
// output under the position's key and moves on; `advance(output, StepResult::failed)` reports a failure, which the
// sub-step's `on_fail` turns into a retry, a skipped task or a failed workflow. The machine keeps no file: StateFile
// (state_file.hpp) persists it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/detail/text.hpp"
#include "cairn/error.hpp"
#include "cairn/observe/observer.hpp"
#include "cairn/run/run.hpp"
#include "cairn/version.hpp"
#include "cairn/workflow/state.hpp"
#include "cairn/workflow/template.hpp"

CAIRN_BEGIN_NAMESPACE

/// How the work at the current position went, as reported to advance().
enum class StepResult { succeeded, failed };

/// The task part of a status report.
struct TaskStatusInfo {
  std::size_t index = 0;  ///< 0-based position in the loop's run order
  std::string id;
  std::string title;
  std::optional<std::string> description;
  std::size_t total = 0;  ///< tasks in the loop
};

/// Where the workflow is, in numbers.
struct WorkflowProgress {
  std::size_t current_step = 0;  ///< 1-based
  std::size_t total_steps = 0;
  std::optional<std::size_t> completed_tasks;        ///< loop steps: tasks done
  std::optional<std::size_t> failed_tasks;           ///< loop steps: tasks failed or blocked
  std::optional<std::size_t> total_tasks;            ///< loop steps
  std::optional<std::string> current_task_progress;  ///< "Task 2/3, Sub-step 1/2"
};

/// What status(), start(), advance() and fail() return: where the workflow is and what to do there.
struct StatusReport {
  WorkflowStatus status = WorkflowStatus::running;
  std::string step;
  StepType step_type = StepType::action;
  std::optional<TaskStatusInfo> task;
  std::optional<std::string> sub_step;
  std::optional<std::size_t> sub_step_index;  ///< 0-based
  std::optional<std::size_t> total_sub_steps;
  std::optional<int> ralph_iteration;  ///< 1-based
  std::optional<int> ralph_total;
  int attempt = 1;
  bool waiting_for_tasks = false;    ///< a loop step whose tasks were never set
  std::optional<std::string> agent;  ///< the sub-agent to delegate to
  std::string instructions;
  WorkflowProgress progress;
  std::vector<std::string> artifacts;
  std::optional<std::string> summary;
  std::optional<std::string> failure_reason;
};

/// The answer of register_artefacts. registered and duplicates hold absolute canonical paths; invalid holds the
/// paths as they were given, and invalid_reasons[i] says why invalid[i] was refused.
struct ArtifactRegistration {
  std::vector<std::string> registered;
  std::vector<std::string> duplicates;
  std::vector<std::string> invalid;
  std::vector<std::string> invalid_reasons;

  void refuse(std::string path, std::string reason);
};

/// One newly registered artefact, as told to an ArtifactObserver.
struct ArtifactEvent {
  std::string relative_path;  ///< relative to the workspace root, '/'-separated
  std::string absolute_path;  ///< canonical
  std::uint64_t size_bytes = 0;
  std::string workflow;  ///< template name
  std::string step;
  std::optional<std::string> task_id;
  std::optional<std::string> sub_step;
};

/// Called once per newly registered artefact (not for duplicates), after the machine's state has it. The typed
/// shortcut for the machine's EventKind::artifact_registered events (whose payload, Event::artifact, is the same
/// ArtifactEvent); unlike an Observer it may throw, and the exception leaves register_artifacts as it always did.
using ArtifactObserver = std::function<void(const ArtifactEvent&)>;

/// An Observer that hands the payload of each artifact_registered event to `fn` and ignores every other event: an
/// ArtifactObserver (artifact_recorder, say) for a place that takes an Observer. What `fn` throws is dropped.
std::shared_ptr<Observer> artifact_observer(ArtifactObserver fn);

// The spellings of cairn 0.1, kept for one release (docs/api.md).
using ArtefactRegistration [[deprecated("use cairn::ArtifactRegistration")]] = ArtifactRegistration;
using ArtefactEvent [[deprecated("use cairn::ArtifactEvent")]] = ArtifactEvent;
using ArtefactObserver [[deprecated("use cairn::ArtifactObserver")]] = ArtifactObserver;

void to_json(nlohmann::json& j, const WorkflowProgress& p);
void to_json(nlohmann::json& j, const StatusReport& r);
void to_json(nlohmann::json& j, const ArtifactRegistration& r);

/// The step machine. Not thread-safe: one owner (StateFile::update serialises processes; a run journal's
/// conditional appends serialise the machines attached to one run, see attach()).
///
///     cairn::WorkflowMachine m(tmpl, "/path/to/workspace");
///     auto s = m.start("Add CSV export");
///     // ... the agent does s.instructions ...
///     s = m.advance("Plan written to plan.md");
class WorkflowMachine : private RunParticipant {
 public:
  static constexpr std::size_t max_summary_length = 100;  ///< code points
  static constexpr std::size_t max_tasks = 10000;         ///< per loop
  static constexpr std::size_t max_reason_length = 2000;  ///< bytes kept of a failure reason
  static constexpr std::size_t max_path_length = 4096;    ///< bytes of one artefact path

  /// The text appended to the instructions of a step (or sub-step) with `artefacts: true`.
  static constexpr std::string_view artifact_instruction =
      "This step is expected to produce files. Each time you create one, call the `register_artefacts` tool with "
      "its path (absolute, or relative to the workspace). The step is not finished until its files are registered.";
  [[deprecated("use artifact_instruction")]] static constexpr std::string_view artefact_instruction =
      artifact_instruction;

  /// A machine for `tmpl`, not started yet. Relative artefact paths resolve against `workspace_root`.
  WorkflowMachine(WorkflowTemplate tmpl, std::filesystem::path workspace_root)
      : template_(std::move(tmpl)), workspace_root_(std::move(workspace_root)) {}

  /// A copy is not attached to any run (two machines recording into one run would conflict with each other).
  WorkflowMachine(const WorkflowMachine& o);
  WorkflowMachine& operator=(const WorkflowMachine& o);
  /// A moved machine takes the attachment with it; the moved-from one may only be destroyed or assigned to.
  WorkflowMachine(WorkflowMachine&& o) noexcept;
  WorkflowMachine& operator=(WorkflowMachine&& o) noexcept;
  CAIRN_INLINE ~WorkflowMachine() override;

  /// Records this machine in `run` from now on (see cairn/run/run.hpp), as participant "workflow": when the run
  /// holds a workflow already, this machine's template and state are replaced by the run's (the workspace root,
  /// the observer and the state file name stay this machine's); otherwise its current state is recorded. Every
  /// change (start, advance, set_tasks, register_artifacts, fail) is then committed to the run as one entry — a
  /// JSON Patch (RFC 6902) from the state before to the state after, so storage grows with what changed — before
  /// the call returns; when the append fails (cairn::conflict: another machine moved the run on; or what the
  /// journal throws) the machine is left as it was and the observer hears nothing. The run must outlive the
  /// attachment (detach() or the machine's end).
  void attach(Run& run);
  void detach() noexcept;
  Run* run() const noexcept { return run_; }

  /// A machine at a saved position. Throws cairn::state_error when the state does not fit the template (a step,
  /// loop, task or sub-step it does not have, a task index out of range, ...).
  static WorkflowMachine restore(WorkflowTemplate tmpl, WorkflowState state, std::filesystem::path workspace_root);

  /// The machine run `run` holds (its template and state), attached to it: how a process resumes a workflow recorded
  /// in a run journal. Throws cairn::state_error when the run holds no workflow or one that cannot be applied.
  static WorkflowMachine resume(Run& run, std::filesystem::path workspace_root);

  /// `{"template": ..., <state fields>}`; `from_json` reads it back (cairn::state_error naming the field).
  nlohmann::json to_json() const;
  static WorkflowMachine from_json(const nlohmann::json& j, std::filesystem::path workspace_root,
                                   const std::string& what = "workflow state");

  bool started() const noexcept { return state_.has_value(); }
  const WorkflowTemplate& workflow_template() const noexcept { return template_; }
  const std::filesystem::path& workspace_root() const noexcept { return workspace_root_; }
  /// The state; throws cairn::state_error before start().
  const WorkflowState& state() const { return require_started("state"); }

  void set_artifact_observer(ArtifactObserver observer) { observer_ = std::move(observer); }

  /// Reports this machine's transitions to `observer` (null: none): one EventKind::workflow_transition event per
  /// start, advance, set_tasks and fail (operation: the call, subject: the step it left the workflow at, workflow: the
  /// status report, duration: the call's, a run append included; a call that throws reports the error), and one
  /// EventKind::artifact_registered event per newly registered artifact, after it is committed (subject: the
  /// relative path, bytes_in: the file's size, artifact: the ArtifactEvent). Independent of the artifact observer:
  /// set both and each hears each registration once. Copies of the machine keep it.
  void set_observer(std::shared_ptr<Observer> observer) { event_observer_ = std::move(observer); }
  const std::shared_ptr<Observer>& observer() const noexcept { return event_observer_; }
  [[deprecated("use set_artifact_observer")]] void set_artefact_observer(ArtifactObserver observer) {
    set_artifact_observer(std::move(observer));
  }

  /// The name (relative to the workspace root) of the state file this machine is saved in; default
  /// `workflow-state.json`. register_artefacts refuses that file, its `.lock`, its temp files (`.tmp`, `.tmp-*`)
  /// and any other name of the same files (hard links). StateFile sets it on every machine it loads.
  void set_state_file_name(std::string name) { state_file_name_ = std::move(name); }
  const std::string& state_file_name() const noexcept { return state_file_name_; }

  /// Starts at the first step and returns its status. On a machine already started it changes nothing and returns
  /// the current status (so a resumed agent can call it again). The summary is cleaned by sanitize_summary.
  StatusReport start(const std::optional<std::string>& summary = std::nullopt);

  /// What to do now. Throws cairn::state_error before start().
  StatusReport status() const;

  /// Stores `output` under the current output key and moves on (`result == succeeded`), or applies the failure
  /// rule (`failed`): a loop sub-step follows its on_fail (retry: stay, attempt + 1; skip: the task is failed and the
  /// loop moves to the next task; abort: the workflow fails); an action or ralph step stays where it is (retry).
  /// Throws cairn::state_error when the workflow is not running.
  StatusReport advance(const std::string& output, StepResult result = StepResult::succeeded);

  /// Sets the tasks of loop `loop_id`, now or ahead of time, and returns the status. Tasks run in dependency
  /// order (a stable topological sort: among tasks that are ready, the given order wins). Throws
  /// cairn::invalid_argument for a bad task list (empty or duplicate ids, missing titles, an unknown or
  /// self dependency, a cycle), cairn::state_error for a loop that is running or already ran, or a workflow that
  /// is not running. An empty list makes the loop be skipped.
  StatusReport set_tasks(const std::string& loop_id, std::vector<Task> tasks);

  /// Outputs of the positions done so far, by output key.
  const std::map<std::string, std::string>& context() const { return require_started("context").outputs; }

  /// Registers files as artefacts of the workflow (see the docs for the exact rules). Throws
  /// cairn::state_error before start().
  ArtifactRegistration register_artifacts(const std::vector<std::string>& paths);
  [[deprecated("use register_artifacts")]] ArtifactRegistration register_artefacts(
      const std::vector<std::string>& paths);

  /// Fails the workflow with `reason`. Throws cairn::state_error when it is not running.
  StatusReport fail(const std::string& reason);

  /// Control characters removed, surrounding whitespace trimmed, at most 100 code points; nullopt when nothing is
  /// left.
  static std::optional<std::string> sanitize_summary(std::string_view text);

  /// The line a ralph step appends to its instructions.
  static std::string ralph_line(int iteration, int total);

 private:
  explicit WorkflowMachine(std::filesystem::path workspace_root) : workspace_root_(std::move(workspace_root)) {}

  const WorkflowState& require_started(const char* op) const;
  WorkflowState& require_running(const char* op);

  const WorkflowStep& current_step() const { return template_.steps()[*template_.step_index(state_->step)]; }
  const LoopSubStep* current_sub_step() const;
  std::string output_key() const;
  void enter_step(std::size_t index);
  void begin_loop();
  bool start_task_from(std::size_t from);
  void next_step();
  std::string instructions() const;

  // Runs `body` (a change of state_) and, when attached, commits the change to the run before returning; when the
  // body or the append throws, state_ is put back as it was.
  template <class F>
  auto change(F&& body) -> decltype(body());
  // Runs a public transition, reported as one workflow_transition event when an observer is set.
  template <class F>
  StatusReport transition(std::string_view operation, F&& body);
  ArtifactRegistration register_paths(const std::vector<std::string>& paths, std::vector<ArtifactEvent>& events);
  StatusReport advance_unrecorded(const std::string& output, StepResult result);
  StatusReport set_tasks_unrecorded(const std::string& loop_id, std::vector<Task> tasks);

  // RunParticipant: the state is `{"template": ...}` before start, to_json() after.
  std::string participant_name() const override { return "workflow"; }
  void participant_detached() noexcept override { run_ = nullptr; }
  CAIRN_INLINE nlohmann::json participant_state() const override;
  CAIRN_INLINE void restore_participant(const nlohmann::json& state) override;
  CAIRN_INLINE void apply_participant_entry(std::string_view kind, const JournalEntry& e) override;
  CAIRN_INLINE void participant_restored() override;

  WorkflowTemplate template_;
  std::filesystem::path workspace_root_;
  std::optional<WorkflowState> state_;
  ArtifactObserver observer_;
  std::shared_ptr<Observer> event_observer_;
  std::string state_file_name_ = "workflow-state.json";
  Run* run_ = nullptr;
  nlohmann::json recorded_;        // the state the run holds (when attached)
  std::uint64_t patched_seq_ = 0;  // the last patch a replay applied to recorded_, not rebuilt from yet (0: none)
};

// ---------------------------------------------------------------------------------------------------------------
// Implementation

namespace detail {

/// True when `s` is well-formed UTF-8 as JSON text needs it: no stray continuation bytes, no overlong forms, no
/// surrogates, nothing above U+10FFFF.
bool is_strict_utf8(std::string_view s) noexcept;

}  // namespace detail

void to_json(nlohmann::json& j, const WorkflowProgress& p);

void to_json(nlohmann::json& j, const StatusReport& r);

void to_json(nlohmann::json& j, const ArtifactRegistration& r);

// Starts the first task at or after `from` that can run. Tasks are stored in dependency order, so every
// dependency of a task has been decided before it: one that failed (or was blocked) blocks it.

CAIRN_END_NAMESPACE

#ifndef CAIRN_COMPILED_LIB
#include "cairn/workflow/machine-inl.hpp"
#endif
