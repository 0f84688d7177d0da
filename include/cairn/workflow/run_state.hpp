// cairn — RunWorkflowState: the state of one workflow kept in a run of a RunJournal instead of a local state file,
// so that several processes on several machines (each with its own WorkflowMachine) serve one workflow safely.
//
// It offers what StateFile offers (start, update, read) with the same meaning. Where StateFile serialises writers
// with a file lock, this relies on the journal's conditional append: every change is one entry appended after the
// sequence number the writer last saw, so of two writers that both saw the same state exactly one appends and the
// other gets cairn::conflict, re-reads the run and applies its change again on top of the winner's. Nothing is
// ever lost or applied to a stale state; a change is committed once.
//
//     auto journal = cairn::open_run_journal("postgresql://db/agents");
//     cairn::RunWorkflowState state(journal, "acme", "feature-42", "/srv/workspace");
//     state.start(tmpl, "Add CSV export");
//     state.update([](cairn::WorkflowMachine& m) { return m.advance("Plan written"); });
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include <fmt/format.h>

#include "cairn/error.hpp"
#include "cairn/observe/observer.hpp"
#include "cairn/run/journal.hpp"
#include "cairn/run/run.hpp"
#include "cairn/version.hpp"
#include "cairn/workflow/machine.hpp"

CAIRN_BEGIN_NAMESPACE

/// The workflow of run `run_id` of `tenant_id` in `journal`. Thread-safe (calls are serialised in the process;
/// processes and machines are serialised by the journal).
///
/// It keeps the run and its machine in memory between calls: an update tries the cached machine first, and a
/// conflict (someone else appended) reloads the run from the journal and tries again, at most `max_attempts`
/// times. A read asks the journal for the run's head first and reloads only when it moved.
class RunWorkflowState {
 public:
  /// Attempts of one update before it gives up with cairn::conflict (a run that busy has other problems).
  static constexpr std::size_t max_attempts = 64;

  /// Throws cairn::invalid_argument for a null journal and what the journal throws for bad ids.
  RunWorkflowState(std::shared_ptr<RunJournal> journal, std::string tenant_id, std::string run_id,
                   std::filesystem::path workspace_root, RunOptions options = {});

  const std::string& tenant_id() const noexcept { return shared_->tenant_id; }
  const std::string& run_id() const noexcept { return shared_->run_id; }
  const std::filesystem::path& workspace_root() const noexcept { return shared_->root; }
  const std::shared_ptr<RunJournal>& journal() const noexcept { return shared_->journal; }

  /// Starts `tmpl` in the run, unless the run holds a started workflow already: then that workflow (with the
  /// template it was started with) is left as it is and its status returned. Of two processes starting at once,
  /// one starts it and the other gets its status.
  StatusReport start(const WorkflowTemplate& tmpl, const std::optional<std::string>& summary = std::nullopt) const;

  /// Calls `f` on the run's machine and commits what it changed (one entry), retrying on top of another writer's
  /// change when one came first; returns what f returned. Throws cairn::state_error when the workflow is not
  /// started, and what f throws (nothing is recorded then). `f` may run more than once: it must not have effects
  /// outside the machine (the machine's observer hears only of a committed change).
  template <class F>
  auto update(F&& f) const -> std::invoke_result_t<F, WorkflowMachine&> {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    Shared& s = *shared_;
    for (std::size_t attempt = 1;; ++attempt) {
      try {
        if (!s.loaded) s.reload();
        if (!s.machine || !s.machine->started()) {
          throw state_error(fmt::format("the workflow is not started: run '{}' holds no started workflow", s.run_id));
        }
        return f(*s.machine);
      } catch (const conflict&) {
        s.loaded = false;
        if (attempt == max_attempts) throw;
      } catch (...) {
        s.loaded = false;
        throw;
      }
    }
  }

  /// Calls `f` on the run's machine as the journal holds it now; nullopt when the workflow is not started.
  template <class F>
  auto read(F&& f) const -> std::optional<std::invoke_result_t<F, const WorkflowMachine&>> {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    Shared& s = *shared_;
    try {
      const auto head = s.journal->info(s.tenant_id, s.run_id);
      if (!s.loaded || (head ? head->last_seq : 0) != s.run->seq()) s.reload();
    } catch (...) {
      s.loaded = false;
      throw;
    }
    if (!s.machine || !s.machine->started()) return std::nullopt;
    return f(static_cast<const WorkflowMachine&>(*s.machine));
  }

  /// Sets the machines' ArtifactObserver: told of each newly registered artifact once its entry is committed (an
  /// empty one: none).
  void set_artifact_observer(ArtifactObserver observer);
  /// Sets the machines' event observer (docs/observe.md), as WorkflowMachine::set_observer and
  /// StateFile::set_observer do (an empty shared_ptr: none): workflow_transition events for start, advance,
  /// set_tasks and fail, and artifact_registered events once committed. A change retried after a conflict reports
  /// the lost attempt as a failed event. Events arrive while this object's mutex is held: the observer must not
  /// call this RunWorkflowState (or a copy of it).
  void set_observer(std::shared_ptr<Observer> observer) {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    shared_->events = std::move(observer);
    if (shared_->machine) shared_->machine->set_observer(shared_->events);
  }
  /// The old spelling of set_artifact_observer (a function or lambda taking an ArtifactEvent); kept for one release
  /// (docs/api.md).
  template <class F, std::enable_if_t<std::is_constructible_v<ArtifactObserver, F> &&
                                          !std::is_convertible_v<F, std::shared_ptr<Observer>>,
                                      int> = 0>
  [[deprecated("use set_artifact_observer; set_observer now takes the event Observer")]] void set_observer(
      F&& observer) {
    set_artifact_observer(ArtifactObserver(std::forward<F>(observer)));
  }
  /// `set_observer(nullptr)` (or `{}`) used to clear the ArtifactObserver, and will clear the event Observer once
  /// this overload is gone: for the release in between it clears both, with a warning. Say which one:
  /// set_artifact_observer(nullptr) or set_observer(std::shared_ptr<Observer>()).
  [[deprecated(
      "ambiguous: use set_artifact_observer(nullptr) or set_observer(std::shared_ptr<cairn::Observer>())")]] void
  set_observer(std::nullptr_t) {
    set_artifact_observer(nullptr);
    set_observer(std::shared_ptr<Observer>());
  }

 private:
  struct Shared {
    std::mutex mutex;
    std::shared_ptr<RunJournal> journal;
    std::string tenant_id;
    std::string run_id;
    std::filesystem::path root;
    RunOptions options;
    ArtifactObserver observer;
    std::shared_ptr<Observer> events;
    // The machine is declared after the run: it is destroyed first, detaching itself from a run still there.
    std::unique_ptr<Run> run;
    std::optional<WorkflowMachine> machine;  // set when the run holds a workflow
    bool loaded = false;

    // Opens the run again at its newest entry and rebuilds the machine from it.
    void reload();
  };

  std::shared_ptr<Shared> shared_;
};

CAIRN_END_NAMESPACE

#ifndef CAIRN_COMPILED_LIB
#include "cairn/workflow/run_state-inl.hpp"
#endif
