// The "artefact" spellings of cairn 0.1 still compile and do what the new names do, for one release (docs/api.md).
// This file uses them on purpose, so it silences the deprecation warning they raise everywhere else.
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif

#include <type_traits>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/run/memory_journal.hpp"
#include "cairn/workflow/artefact_recorder.hpp"  // the old header still works
#include "cairn/workflow/run_state.hpp"
#include "catch.hpp"
#include "workspace.hpp"

using namespace cairn;

static_assert(std::is_same_v<ArtefactObserver, ArtifactObserver>);
static_assert(std::is_same_v<ArtefactEvent, ArtifactEvent>);
static_assert(std::is_same_v<ArtefactRegistration, ArtifactRegistration>);

TEST_CASE("the deprecated artefact names forward to the artifact ones") {
  CHECK(WorkflowMachine::artefact_instruction == WorkflowMachine::artifact_instruction);

  cairn_test::TempWorkspace ws;
  ws.write("a.txt", "a");
  ws.write("b.txt", "bb");
  auto store = std::make_shared<InMemoryArtifactStore>();
  WorkflowMachine m(cairn_test::feature_template(), ws.path());
  m.start();
  std::vector<std::string> seen;
  ArtefactObserver both = [&](const ArtefactEvent& e) { seen.push_back(e.relative_path); };
  m.set_artefact_observer(both);
  ArtefactRegistration r = m.register_artefacts({"a.txt", "a.txt"});
  CHECK(r.registered.size() == 1);
  CHECK(r.duplicates.size() == 1);
  CHECK(seen == std::vector<std::string>{"a.txt"});

  m.set_artefact_observer(artefact_recorder(store, "acme"));
  (void)m.register_artifacts({"b.txt"});
  CHECK(store->list("acme").items.size() == 1);
  CHECK(m.state().artifacts.size() == 2);
}

TEST_CASE("RunWorkflowState::set_observer with an ArtifactObserver forwards to set_artifact_observer") {
  cairn_test::TempWorkspace ws;
  ws.write("a.txt", "a");
  ws.write("b.txt", "b");
  ws.write("c.txt", "c");
  ws.write("d.txt", "d");
  std::vector<std::string> typed;
  std::size_t events = 0;
  RunWorkflowState state(std::make_shared<InMemoryRunJournal>(), "acme", "wf", ws.path());
  state.set_observer([&](const ArtifactEvent& e) { typed.push_back(e.relative_path); });  // a lambda, as before
  state.set_observer(observe_with([&](const Event&) { ++events; }));
  (void)state.start(cairn_test::feature_template());
  (void)state.update([](WorkflowMachine& m) { return m.register_artifacts({"a.txt"}); });
  CHECK(typed == std::vector<std::string>{"a.txt"});
  CHECK(events == 2);

  // nullptr (and {}) cleared the ArtifactObserver; in this release they clear both observers.
  state.set_observer(nullptr);
  (void)state.update([](WorkflowMachine& m) { return m.register_artifacts({"b.txt"}); });
  CHECK(typed.size() == 1);
  CHECK(events == 2);
  ArtifactObserver typed_observer = [&](const ArtifactEvent& e) { typed.push_back(e.relative_path); };
  state.set_observer(typed_observer);  // an ArtifactObserver lvalue, as before
  (void)state.update([](WorkflowMachine& m) { return m.register_artifacts({"c.txt"}); });
  CHECK(typed == std::vector<std::string>{"a.txt", "c.txt"});
  state.set_observer({});
  (void)state.update([](WorkflowMachine& m) { return m.register_artifacts({"d.txt"}); });
  CHECK(typed.size() == 2);
  CHECK(events == 2);
}

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic pop
#endif
