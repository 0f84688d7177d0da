// handoff — a manager hands work to a writer and an analyst; large content travels as <artifact/> references.
//
// The agents are scripted functions standing in for model calls. The writer drafts an issue and answers in the
// ARTIFACT form; the draft is stored and the manager's history gets only a reference. The analyst is given the
// full draft. The final answer to the user has the reference expanded back into the draft.
//
// Build and run: cmake --build build --target handoff && build/examples/handoff
// Usage: handoff [store-url]   (memory: by default; sqlite:<path>, postgres:<conninfo>)
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <cairn/cairn.hpp>
#include <cairn/store/open_store.hpp>

namespace {

void show(const std::string& who, const std::string& text) {
  std::cout << "---- " << who << " ----\n" << text << "\n\n";
}

// The writer: a model told to answer large drafts in the ARTIFACT form.
std::string writer_agent(const std::string& input) {
  show("writer saw (reveal policy: summary)", input);
  return "ARTIFACT\r\n"
         "SUMMARY: Add a dark mode theme to the \"Settings\" page\r\n"
         "\r\n"
         "~~~markdown\r\n"
         "[Feature]: Dark mode\r\n"
         "\r\n"
         "## Problem\r\n"
         "Users working at night find the white UI too bright.\r\n"
         "\r\n"
         "## Proposal\r\n"
         "- a theme switch under Settings > Appearance\r\n"
         "- follow the OS preference by default\r\n"
         "~~~\r\n";
}

// The analyst: checks a draft for duplicates; it needs the whole draft to do so.
std::string analyst_agent(const std::string& input) {
  show("analyst saw (reveal policy: full)", input);
  const bool has_draft = input.find("## Proposal") != std::string::npos;
  return has_draft ? "No duplicate found: the closest issue (#112, \"high contrast\") is about accessibility."
                   : "I could not see the draft.";
}

}  // namespace

int main(int argc, char** argv) {
  // memory: by default; sqlite:<path> or postgres:<conninfo> when built with those backends.
  const std::shared_ptr<cairn::ArtifactStore> store = cairn::open_store(argc > 1 ? argv[1] : "memory:");
  cairn::HandoffOptions options;
  options.id_prefix = "draft";
  cairn::Handoff handoff(store, "acme", options);

  // Wiring the team: one target per agent, each with the policy that decides what it sees.
  const cairn::HandoffTarget writer{"writer", writer_agent, cairn::RevealPolicy::summary};
  const cairn::HandoffTarget analyst{"analyst", analyst_agent, cairn::RevealPolicy::full};

  std::vector<cairn::HandoffMessage> history{{"user", "Please file an issue for dark mode, and make sure it is new."}};

  history.push_back({"manager", "transfer_to_writer: draft an issue for dark mode"});
  const auto drafted = handoff.transfer(writer, history);
  history.push_back({"writer", drafted.text});
  std::cout << "stored '" << drafted.artifact->id() << "' (" << drafted.artifact->type() << ", "
            << drafted.artifact->mime_type().value_or("?") << ", " << *drafted.artifact->size_bytes()
            << " bytes, created by " << drafted.artifact->created_by().value_or("?") << ")\n\n";

  history.push_back({"manager", "transfer_to_analyst: check the draft above for duplicates"});
  const auto checked = handoff.transfer(analyst, history);
  history.push_back({"analyst", checked.text});

  const std::string manager_view = cairn::Handoff::format_history(history);
  show("manager's history (what the manager model sees)", manager_view);
  const bool manager_clean = manager_view.find("## Proposal") == std::string::npos;
  std::cout << "manager history holds only the reference: " << (manager_clean ? "yes" : "NO") << "\n\n";

  // The manager's final answer names the draft by reference; expanding it is the last step before the user.
  const std::string final_answer = "Here is the new issue:\n\n" + drafted.text + "\n\n" + checked.text;
  show("manager's final answer (as the model wrote it)", final_answer);
  const auto expanded = handoff.expand_references(final_answer);
  show("final answer to the user", expanded.text);

  // A reference from this tenant means nothing to another one.
  cairn::Handoff other_tenant(store, "globex");
  const auto foreign = other_tenant.expand_references(drafted.text);
  std::cout << "tenant 'globex' expanding the same reference: unresolved " << foreign.unresolved.size()
            << ", text unchanged: " << (foreign.text == drafted.text ? "yes" : "NO") << "\n";

  const bool ok = manager_clean && checked.input.find("## Proposal") != std::string::npos &&
                  expanded.unresolved.empty() && expanded.text.find("## Proposal") != std::string::npos &&
                  foreign.text == drafted.text;
  std::cout << (ok ? "handoff example: final answer expanded" : "handoff example: FAILED") << "\n";
  return ok ? 0 : 1;
}
