// The C++ snippets of docs/handoff.md, each between `// [docs:<name>]` and `// [docs:end]` (check_snippets.cmake
// checks that the page shows exactly these lines). Snippets stand at column 0, as on the page.
#include <memory>
#include <string>
#include <vector>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/handoff/handoff.hpp"
#include "catch.hpp"

TEST_CASE("docs/handoff.md: in a few lines") {
  auto writer_fn = [](const std::string&) {
    return std::string("ARTIFACT\nSUMMARY: the dark mode issue\n# Dark mode\nUsers ask for a dark theme.");
  };
  std::string analyst_saw;
  auto analyst_fn = [&](const std::string& prompt) {
    analyst_saw = prompt;
    return std::string("Filed as @draft.");
  };
  std::string final_answer;
  // [docs:in-a-few-lines]
  auto store = std::make_shared<cairn::InMemoryArtifactStore>();
  cairn::HandoffOptions options;
  options.id_prefix = "draft";
  cairn::Handoff handoff(store, "acme", options);

  cairn::HandoffTarget writer{"writer", writer_fn,
                              cairn::RevealPolicy::summary};  // any std::string(const std::string&)
  cairn::HandoffTarget analyst{"analyst", analyst_fn, cairn::RevealPolicy::full};

  std::vector<cairn::HandoffMessage> history{{"user", "File an issue for dark mode"}};
  history.push_back({"writer", handoff.transfer(writer, history).text});    // <artifact id="draft_k3x9" summary=… />
  history.push_back({"analyst", handoff.transfer(analyst, history).text});  // the analyst saw the whole draft
  std::string for_user = handoff.expand_references(final_answer).text;      // the reference becomes the draft
                                                                            // [docs:end]
  CHECK(history[1].content.find("<artifact id=\"draft_") != std::string::npos);
  CHECK(analyst_saw.find("Users ask for a dark theme.") != std::string::npos);
  final_answer = history[1].content;
  CHECK(handoff.expand_references(final_answer).text.find("Users ask for a dark theme.") != std::string::npos);
}
