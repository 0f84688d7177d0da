// The C++ snippets of docs/observe.md, each between `// [docs:<name>]` and `// [docs:end]` (check_snippets.cmake
// checks that the page shows exactly these lines). Snippets stand at column 0, as on the page; an #include line in
// one is a no-op here (the header is included above).
#include <fmt/format.h>

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <type_traits>

#include "cairn/cairn.hpp"
#include "cairn/observe.hpp"
#include "cairn/run/memory_journal.hpp"
#include "cairn/store/open_store.hpp"
#include "catch.hpp"

TEST_CASE("docs/observe.md: one observer sees the store, the context, the goals, a workflow and a journal") {
  const std::string url = "memory:";
  const auto workspace = std::filesystem::temp_directory_path() / ("cairn-docs-observe-" + std::to_string(::getpid()));
  std::filesystem::create_directories(workspace);
  cairn::WorkflowMachine machine(cairn::WorkflowTemplate::parse(R"({"name": "w", "steps": [
      {"id": "work", "type": "action", "instructions": "Work."}]})"),
                                 workspace);
  auto journal = std::make_shared<cairn::InMemoryRunJournal>();
// [docs:wiring]
#include <cairn/observe.hpp>

  auto obs = cairn::observe_with([](const cairn::Event& e) {
    fmt::print("{} {} '{}' {}ns in={}B out={}B{}\n", cairn::to_string(e.kind), e.operation, e.subject,
               e.duration.count(), e.bytes_in, e.bytes_out, e.failed() ? " FAILED" : "");
  });
  auto store = cairn::observed(cairn::open_store(url), obs);  // store calls, any backend
  cairn::ExecutionContext ctx(store, "acme");
  ctx.set_observer(obs);  // resolutions and tool calls
  cairn::GoalEngineOptions options;
  options.event_observer = obs;  // goal transitions
  machine.set_observer(obs);     // workflow transitions, registered artifacts
  journal->set_observer(obs);    // journal appends, reads, ...
                                 // [docs:end]
  ctx.add_artifact("note",
                   cairn::ArtifactRecord::builder().type(cairn::ArtifactType::document).title("Note").value("hi"));
  CHECK(ctx.has_artifact("note"));
  std::filesystem::remove_all(workspace);
}

// The page shows the interface in one line; this is that line, and the real class has the same function.
namespace excerpt {
using cairn::Event;
// [docs:observer]
class Observer {
 public:
  virtual void on_event(const Event&) noexcept = 0;
};
// [docs:end]
}  // namespace excerpt
static_assert(
    std::is_same_v<decltype(&cairn::Observer::on_event), void (cairn::Observer::*)(const cairn::Event&) noexcept>);
static_assert(std::is_abstract_v<cairn::Observer>);
