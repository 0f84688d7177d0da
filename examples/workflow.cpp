// workflow — drive a `feature` workflow (plan -> define_tasks -> implement/test over three tasks -> a ralph review
// with n = 2), writing real files and registering them as artefacts, with every change saved to the workspace's
// workflow-state.json. Half-way through, this process stops and a second process (a forked child, as a restarted
// agent would be) resumes from the state file and finishes the workflow.
//
// Build and run: cmake --build build --target workflow && build/examples/workflow
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include <cairn/cairn.hpp>

namespace fs = std::filesystem;

namespace {

const char* feature_template = R"({
  "name": "feature",
  "description": "Plan a feature, implement it task by task, review it twice",
  "agents": {"coder": {"description": "Writes the code"}, "tester": {"description": "Writes and runs tests"}},
  "loops": {
    "implement": [
      {"id": "code", "agent": "coder", "instructions": "Implement {task.id}: {task.title}", "artefacts": true},
      {"id": "test", "agent": "tester", "instructions": "Test {task.title}", "on_fail": "retry"}
    ]
  },
  "steps": [
    {"id": "plan", "type": "action", "instructions": "Write the plan to plan.md.", "artefacts": true},
    {"id": "define_tasks", "type": "action", "instructions": "Split the plan into tasks with workflow_set_tasks."},
    {"id": "implement", "type": "loop"},
    {"id": "review", "type": "ralph", "n": 2, "instructions": "Review the whole change."}
  ]
})";

void print(const char* who, const cairn::StatusReport& s) {
  std::cout << who << " [" << cairn::to_string(s.status) << "] step " << s.progress.current_step << "/"
            << s.progress.total_steps << " '" << s.step << "'";
  if (s.task) std::cout << ", task " << s.task->id << " (" << s.task->index + 1 << "/" << s.task->total << ")";
  if (s.sub_step) std::cout << ", sub-step " << *s.sub_step;
  if (s.ralph_iteration) std::cout << ", iteration " << *s.ralph_iteration << "/" << *s.ralph_total;
  if (s.agent) std::cout << ", agent " << *s.agent;
  if (s.attempt > 1) std::cout << ", attempt " << s.attempt;
  std::cout << ", artefacts " << s.artifacts.size() << "\n";
  // The instructions, on one line and cut short: the sub-agent prefix, the text, the appended lines.
  std::string text = s.instructions;
  for (auto& c : text) c = c == '\n' ? ' ' : c;
  std::cout << "    " << text.substr(0, 110) << (text.size() > 110 ? "..." : "") << "\n";
}

// What the agent does at the current position: write a file where the step asks for one, and register it.
cairn::StatusReport work_and_advance(const cairn::StateFile& file, const char* who) {
  return file.update([&](cairn::WorkflowMachine& m) {
    const auto s = m.status();
    std::string output = "done " + s.step;
    if (s.step == "plan") {
      std::ofstream(file.workspace_root() / "plan.md") << "# Plan\n1. parser\n2. writer\n3. docs\n";
      m.register_artifacts({"plan.md"});
    } else if (s.sub_step == std::optional<std::string>("code")) {
      const std::string rel = "src/" + s.task->id + ".cpp";
      std::ofstream(file.workspace_root() / rel) << "// " << s.task->title << "\n";
      const auto r = m.register_artifacts({rel});
      output = "wrote " + r.registered.at(0);
    }
    auto next = m.advance(output);
    print(who, next);
    return next;
  });
}

}  // namespace

int main() {
  std::string dir = (fs::temp_directory_path() / "cairn-workflow-XXXXXX").string();
  if (!::mkdtemp(dir.data())) return 1;
  const fs::path workspace = dir;
  fs::create_directories(workspace / "src");
  const auto tmpl = cairn::WorkflowTemplate::parse(feature_template);
  const cairn::StateFile file(workspace);

  // Process 1: start, plan, define the tasks, and do the first task.
  print("process 1:", file.start(tmpl, "Add CSV export to the report tool"));
  work_and_advance(file, "process 1:");  // plan
  file.update([](cairn::WorkflowMachine& m) {
    return m.set_tasks("implement", {{"parser", "CSV parser", std::nullopt, {}, cairn::TaskStatus::pending},
                                     {"docs", "User docs", std::nullopt, {"writer"}, cairn::TaskStatus::pending},
                                     {"writer", "CSV writer", std::nullopt, {"parser"}, cairn::TaskStatus::pending}});
  });
  work_and_advance(file, "process 1:");  // define_tasks
  work_and_advance(file, "process 1:");  // parser: code
  // A failing test is retried (on_fail: retry).
  print("process 1:",
        file.update([](cairn::WorkflowMachine& m) { return m.advance("2 tests fail", cairn::StepResult::failed); }));
  work_and_advance(file, "process 1:");  // parser: test
  std::cout << "process 1 stops half-way; " << file.path().filename().string() << " holds the state\n";

  // Process 2: a new process that knows only the workspace resumes from the state file.
  std::cout.flush();  // or the child would print process 1's buffered lines again
  const pid_t child = ::fork();
  if (child == 0) {
    const cairn::StateFile resumed(workspace);
    auto s = resumed.load()->status();
    print("process 2: resumed at", s);
    while (s.status == cairn::WorkflowStatus::running) s = work_and_advance(resumed, "process 2:");
    std::cout.flush();
    std::_Exit(s.status == cairn::WorkflowStatus::complete ? 0 : 1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;

  const auto done = file.load();
  std::cout << "outputs:\n";
  for (const auto& [key, text] : done->context()) std::cout << "  " << key << ": " << text.substr(0, 60) << "\n";
  std::cout << "artefacts:\n";
  for (const auto& path : done->state().artifacts) {
    std::cout << "  " << fs::path(path).lexically_relative(fs::canonical(workspace)).string() << "\n";
  }
  std::cout << "workflow " << cairn::to_string(done->state().status) << " after resuming in a second process ("
            << done->context().size() << " outputs, " << done->state().artifacts.size() << " artefacts)\n";
  fs::remove_all(workspace);
  return 0;
}
