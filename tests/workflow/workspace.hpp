// Test helpers for the workflow suite: a real temporary workspace folder, and the `feature` template.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "cairn/workflow/machine.hpp"
#include "cairn/workflow/template.hpp"

namespace cairn_test {

/// A fresh folder under the system temp dir, removed with everything in it at the end of the test.
class TempWorkspace {
 public:
  TempWorkspace() {
    std::string pattern = (std::filesystem::temp_directory_path() / "cairn-wf-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempWorkspace() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempWorkspace(const TempWorkspace&) = delete;
  TempWorkspace& operator=(const TempWorkspace&) = delete;

  const std::filesystem::path& path() const { return path_; }

  /// Writes `content` to `relative` (creating folders) and returns the absolute path.
  std::filesystem::path write(const std::string& relative, const std::string& content = "x") const {
    const auto p = path_ / relative;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << content;
    return p;
  }

 private:
  std::filesystem::path path_;
};

/// plan -> define_tasks -> implement (loop: code, test) -> review (ralph, n = 2).
inline const char* feature_template_json() {
  return R"({
    "name": "feature",
    "description": "Plan, implement task by task, review",
    "agents": {"coder": {"description": "Writes code", "model": "fast"}, "tester": {"description": "Tests"}},
    "loops": {
      "implement": [
        {"id": "code", "agent": "coder", "instructions": "Implement {task.id}: {task.title}. {task.description}",
         "artefacts": true},
        {"id": "test", "agent": "tester", "instructions": "Test {task.title}", "on_fail": "retry"}
      ]
    },
    "steps": [
      {"id": "plan", "type": "action", "instructions": "Write a plan.", "artefacts": true},
      {"id": "define_tasks", "type": "action", "instructions": "Split the plan into tasks."},
      {"id": "implement", "type": "loop"},
      {"id": "review", "type": "ralph", "n": 2, "instructions": "Review the change."}
    ]
  })";
}

inline cairn::WorkflowTemplate feature_template() { return cairn::WorkflowTemplate::parse(feature_template_json()); }

/// The feature workflow from start to end in 12 changes (a workspace holding plan.md): `feature_step(m, i)` makes
/// change number i, one recorded change each.
constexpr std::size_t feature_steps = 12;
inline void feature_step(cairn::WorkflowMachine& m, std::size_t i) {
  switch (i) {
    case 0: m.start("Add CSV export"); break;
    case 1: m.register_artifacts({"plan.md"}); break;
    case 2: m.advance("planned"); break;
    case 3:
      m.set_tasks("implement", {{"parse", "Parser", "reads CSV", {}, {}}, {"write", "Writer", {}, {"parse"}, {}}});
      break;
    case 4: m.advance("tasks set"); break;
    case 5: m.advance("parser coded"); break;
    case 6: m.advance("tests fail", cairn::StepResult::failed); break;
    case 7: m.advance("parser tested"); break;
    case 8: m.advance("writer coded"); break;
    case 9: m.advance("writer tested"); break;
    case 10: m.advance("review 1"); break;
    case 11: m.advance("review 2"); break;
    default: break;
  }
}

}  // namespace cairn_test
