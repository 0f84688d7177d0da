// The C++ snippets of docs/workflow.md, each between `// [docs:<name>]` and `// [docs:end]` (check_snippets.cmake
// checks that the page shows exactly these lines). Snippets stand at column 0, as on the page.
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>

#include "cairn/workflow/machine.hpp"
#include "cairn/workflow/state_file.hpp"
#include "catch.hpp"

namespace docs_workflow {

// Compiled, not run: the page's path is a placeholder.
void quick_tour(const std::string& json_text) {
  // [docs:quick-tour]
  auto tmpl = cairn::WorkflowTemplate::parse(json_text);  // or cairn::load_template_yaml(yaml_text)
  cairn::StateFile file("/path/to/workspace");            // <workspace>/workflow-state.json
  auto s = file.start(tmpl, "Add CSV export");            // or the saved status when already started
  s = file.update([](cairn::WorkflowMachine& m) { return m.advance("Plan written to plan.md"); });
  s = file.update([](cairn::WorkflowMachine& m) {
    return m.advance("2 tests fail", cairn::StepResult::failed);  // on_fail decides what happens
  });
  // [docs:end]
}

}  // namespace docs_workflow

// The page shows the event's fields; this is that struct, and the real one has the same fields, of the same types.
namespace excerpt {
// [docs:artifact-event]
struct ArtifactEvent {
  std::string relative_path;  // relative to the workspace root, '/'-separated
  std::string absolute_path;  // canonical
  std::uint64_t size_bytes;
  std::string workflow;  // template name
  std::string step;
  std::optional<std::string> task_id, sub_step;
};
// [docs:end]
}  // namespace excerpt

#define CAIRN_DOCS_SAME_FIELD(f) \
  static_assert(std::is_same_v<decltype(excerpt::ArtifactEvent::f), decltype(cairn::ArtifactEvent::f)>, #f)
CAIRN_DOCS_SAME_FIELD(relative_path);
CAIRN_DOCS_SAME_FIELD(absolute_path);
CAIRN_DOCS_SAME_FIELD(size_bytes);
CAIRN_DOCS_SAME_FIELD(workflow);
CAIRN_DOCS_SAME_FIELD(step);
CAIRN_DOCS_SAME_FIELD(task_id);
CAIRN_DOCS_SAME_FIELD(sub_step);
static_assert(sizeof(excerpt::ArtifactEvent) == sizeof(cairn::ArtifactEvent), "the page lists every field");
