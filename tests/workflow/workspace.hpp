// Test helpers for the workflow suite: a real temporary workspace folder, and the `feature` template.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

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

}  // namespace cairn_test
