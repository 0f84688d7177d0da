// cairn — the function bodies of cairn/workflow/run_state.hpp (docs/api.md, "Compiled mode"). Header-only, the
// default, that header includes this file and CAIRN_INLINE is `inline`; with CAIRN_COMPILED_LIB they are
// compiled once, into cairn::compiled (src/compiled/), and the header only declares them.
#pragma once

#include "cairn/version.hpp"
#include "cairn/workflow/run_state.hpp"

CAIRN_BEGIN_NAMESPACE

CAIRN_INLINE RunWorkflowState::RunWorkflowState(std::shared_ptr<RunJournal> journal, std::string tenant_id,
                                                std::string run_id, std::filesystem::path workspace_root,
                                                RunOptions options)
    : shared_(std::make_shared<Shared>()) {
  if (!journal) throw invalid_argument("RunWorkflowState: journal must not be null");
  shared_->journal = std::move(journal);
  shared_->tenant_id = std::move(tenant_id);
  shared_->run_id = std::move(run_id);
  shared_->root = std::move(workspace_root);
  shared_->options = options;
  (void)shared_->journal->info(shared_->tenant_id, shared_->run_id);  // checks the ids now
}

CAIRN_INLINE StatusReport RunWorkflowState::start(const WorkflowTemplate& tmpl,
                                                  const std::optional<std::string>& summary) const {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  Shared& s = *shared_;
  for (std::size_t attempt = 1;; ++attempt) {
    try {
      if (!s.loaded) s.reload();
      if (s.machine && s.machine->started()) return s.machine->status();
      if (!s.machine) {
        s.machine.emplace(tmpl, s.root);
        s.machine->set_artifact_observer(s.observer);
        s.machine->set_observer(s.events);
      }
      auto group = s.run->batch();  // the template and the start: one append
      if (!s.machine->run()) s.machine->attach(*s.run);
      auto status = s.machine->start(summary);
      group.commit();
      return status;
    } catch (const conflict&) {
      s.loaded = false;
      if (attempt == max_attempts) throw;
    } catch (...) {
      s.loaded = false;  // whatever failed, the next call reads the run again
      throw;
    }
  }
}

CAIRN_INLINE void RunWorkflowState::set_artifact_observer(ArtifactObserver observer) {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  shared_->observer = std::move(observer);
  if (shared_->machine) shared_->machine->set_artifact_observer(shared_->observer);
}

CAIRN_INLINE void RunWorkflowState::Shared::reload() {
  loaded = false;
  machine.reset();
  run.reset();
  run = std::make_unique<Run>(journal, tenant_id, run_id, options);
  if (run->holds("workflow")) {
    machine.emplace(WorkflowMachine::resume(*run, root));
    machine->set_artifact_observer(observer);
    machine->set_observer(events);
  }
  loaded = true;
}

CAIRN_END_NAMESPACE
