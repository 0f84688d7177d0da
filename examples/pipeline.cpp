// pipeline — research → draft → review, chained through the artifact store (seed 004, journey 3).
//
// The orchestrator passes only ArtifactPart references in each task; every agent fetches what it needs from the
// store itself. The agents are scripted functions standing in for model calls: each answers in the ARTIFACT form,
// and the orchestrator stores the answer with a Handoff and passes on the new id. The review agent fails on its
// first attempt; the retry finds the research and draft artifacts still there, because each step's output was
// stored independently of the step that failed.
//
// Build and run: cmake --build build --target pipeline && build/examples/pipeline
// Usage: pipeline [store-url]   (memory: by default; sqlite:<path>, postgres:<conninfo>)
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <cairn/cairn.hpp>
#include <cairn/store/open_store.hpp>

namespace {

const std::string tenant = "acme";

/// A task as the orchestrator sends it: message parts only, no shared state.
struct Task {
  std::string agent;
  std::vector<cairn::MessagePart> parts;
};

/// What an agent gets from the runtime: the store, read within its tenant.
struct AgentEnv {
  std::shared_ptr<const cairn::ArtifactStore> store;
};

void show_task(const Task& task) {
  std::cout << "---- task for " << task.agent << " ----\n" << nlohmann::json(task.parts).dump(2) << "\n";
}

/// The text instructions and the fetched artifacts of a task; a missing artifact is an error for the agent.
struct Inputs {
  std::string instructions;
  std::vector<cairn::ArtifactPtr> artifacts;
};

Inputs read_task(const AgentEnv& env, const Task& task) {
  Inputs in;
  for (const auto& part : task.parts) {
    if (const auto* text = std::get_if<cairn::TextPart>(&part)) in.instructions += text->text;
    if (const auto* ref = std::get_if<cairn::ArtifactPart>(&part)) {
      auto record = env.store->fetch(ref->artifact_id, tenant);
      if (!record) throw std::runtime_error("artifact '" + ref->artifact_id + "' not found");
      std::cout << task.agent << " fetched '" << record->id() << "' (" << record->title() << ", "
                << record->value().get<std::string>().size() << " bytes, by " << record->created_by().value_or("?")
                << ")\n";
      in.artifacts.push_back(std::move(record));
    }
  }
  std::cout << task.agent << " was asked: " << in.instructions << "\n";
  return in;
}

std::string research_agent(const AgentEnv& env, const Task& task) {
  read_task(env, task);
  return "ARTIFACT\nSUMMARY: Findings on WebAssembly adoption\n\n```markdown\n"
         "# Findings\n- 4 of 5 major browsers ship WASM GC\n- server-side use grows through WASI\n```\n";
}

std::string draft_agent(const AgentEnv& env, const Task& task) {
  const Inputs in = read_task(env, task);
  const std::string& findings = in.artifacts.at(0)->value().get_ref<const std::string&>();
  return "ARTIFACT\nSUMMARY: Report draft on WebAssembly adoption\n\n```markdown\n# WebAssembly in 2026\n\n"
         "Based on the research:\n" +
         findings + "\n\nConclusion: adopt WASM for plugins.\n```\n";
}

int review_attempts = 0;

std::string review_agent(const AgentEnv& env, const Task& task) {
  const Inputs in = read_task(env, task);
  if (++review_attempts == 1) throw std::runtime_error("review model timed out");
  const std::string& draft = in.artifacts.at(0)->value().get_ref<const std::string&>();
  return "ARTIFACT\nSUMMARY: Reviewed report on WebAssembly adoption\n\n```markdown\n" + draft +
         "\n\nReviewer's note: claims checked against the research; sources to be added.\n```\n";
}

}  // namespace

int main(int argc, char** argv) {
  // memory: by default; sqlite:<path> or postgres:<conninfo> when built with those backends.
  const std::shared_ptr<cairn::ArtifactStore> store = cairn::open_store(argc > 1 ? argv[1] : "memory:");
  const AgentEnv env{store};
  cairn::HandoffOptions options;
  options.id_prefix = "art";
  const cairn::Handoff handoff(store, tenant, options);

  // Steps 1-2: research. The orchestrator stores the answer and keeps only its id.
  Task research{"research", {cairn::TextPart{"Find information about WebAssembly adoption"}}};
  show_task(research);
  const auto research_out = handoff.accept_reply(research_agent(env, research), research.agent);
  const std::string research_id = research_out.artifact->id();
  std::cout << "orchestrator stored '" << research_id << "'\n\n";

  // Steps 4-5: draft, given only a reference to the research.
  Task draft{"draft",
             {cairn::ArtifactPart{research_id, std::string("Findings")},
              cairn::TextPart{"Write a report based on this research"}}};
  show_task(draft);
  const auto draft_out = handoff.accept_reply(draft_agent(env, draft), draft.agent);
  const std::string draft_id = draft_out.artifact->id();
  std::cout << "orchestrator stored '" << draft_id << "'\n\n";

  // Steps 6-8: review, retried once when it fails.
  Task review{"review",
              {cairn::ArtifactPart{draft_id, std::nullopt}, cairn::TextPart{"Review and improve this report"}}};
  cairn::HandoffResult review_out;
  bool survived = false;
  for (int attempt = 1; attempt <= 2 && !review_out.artifact; ++attempt) {
    show_task(review);
    try {
      review_out = handoff.accept_reply(review_agent(env, review), review.agent);
    } catch (const std::exception& e) {
      std::cout << "review attempt " << attempt << " failed: " << e.what() << "\n";
      survived = store->fetch(research_id, tenant) && store->fetch(draft_id, tenant);
      std::cout << "after the failure, research '" << research_id << "' and draft '" << draft_id << "' are "
                << (survived ? "still in the store" : "GONE") << "; retrying\n\n";
    }
  }
  if (!review_out.artifact) return 1;
  std::cout << "orchestrator stored '" << review_out.artifact->id() << "' after " << review_attempts << " attempts\n\n";

  // The orchestrator's answer names the result by reference; the user gets it expanded.
  const auto answer = handoff.expand_references("The reviewed report:\n\n" + review_out.text);
  std::cout << "---- final answer to the user ----\n" << answer.text << "\n\n";

  const bool ok = survived && review_attempts == 2 && answer.unresolved.empty() &&
                  answer.text.find("Reviewer's note") != std::string::npos &&
                  answer.text.find("WASM GC") != std::string::npos;
  std::cout << (ok ? "pipeline example: retry found research and draft artifacts" : "pipeline example: FAILED") << "\n";
  return ok ? 0 : 1;
}
