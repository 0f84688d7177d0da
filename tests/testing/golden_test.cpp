// cairn/testing/golden.hpp: one call compares with a golden file or (CAIRN_UPDATE_GOLDEN=1) writes it, a difference
// is reported as a line diff and a JSON Patch; RunDump puts everything a run did in one canonical document.
#include "cairn/testing/golden.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/context/execution_context.hpp"
#include "cairn/testing/clock.hpp"
#include "cairn/testing/scripted_model.hpp"
#include "captured_failures.hpp"
#include "catch.hpp"

namespace ct = cairn::testing;
using cairn_test::Captured;
using cairn_test::ContainsSubstring;
using nlohmann::json;

namespace {

/// A file name in the build's folder, removed when the test ends; CAIRN_UPDATE_GOLDEN unset while it lives.
struct TempGolden {
  std::string path;
  explicit TempGolden(const std::string& name) : path(std::string(CAIRN_BINARY_DIR) + "/golden_test_" + name) {
    std::remove(path.c_str());
    unsetenv("CAIRN_UPDATE_GOLDEN");
  }
  ~TempGolden() {
    std::remove(path.c_str());
    unsetenv("CAIRN_UPDATE_GOLDEN");
  }
  std::string read() const {
    std::string out;
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) return "(missing)";
    char b[4096];
    std::size_t n = 0;
    while ((n = std::fread(b, 1, sizeof b, f)) > 0) out.append(b, n);
    std::fclose(f);
    return out;
  }
};

}  // namespace

TEST_CASE("line_diff shows the changed lines with context, - for the golden side and + for the actual one") {
  CHECK(ct::line_diff("a\nb\nc\n", "a\nb\nc\n").empty());
  CHECK(ct::line_diff("1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\nfive\n6\n7\n8\n9\n", 2) ==
        "@@ golden line 3, actual line 3 @@\n"
        " 3\n"
        " 4\n"
        "-5\n"
        "+five\n"
        " 6\n"
        " 7\n");
  CHECK(ct::line_diff("a\nb\n", "a\nx\nb\n", 1) ==
        "@@ golden line 1, actual line 1 @@\n"
        " a\n"
        "+x\n"
        " b\n");
  // Two changes far apart are two hunks.
  std::string a;
  std::string b;
  for (int i = 1; i <= 20; ++i) {
    a += std::to_string(i) + "\n";
    b += (i == 2 ? "two" : i == 18 ? "eighteen" : std::to_string(i)) + "\n";
  }
  CHECK(ct::line_diff(a, b, 1) ==
        "@@ golden line 1, actual line 1 @@\n 1\n-2\n+two\n 3\n"
        "@@ golden line 17, actual line 17 @@\n 17\n-18\n+eighteen\n 19\n");
  CHECK(ct::line_diff("a", "a\n") == "(the texts differ only in their final newline)\n");
}

TEST_CASE("json_patch_text lists the operations from the golden document to the actual one") {
  const json expected = {{"version", 1}, {"items", {"a", "b"}}, {"gone", true}};
  const json actual = {{"version", 2}, {"items", {"a", "b", "c"}}};
  CHECK(ct::json_patch_text(expected, actual) ==
        "remove /gone: was true\n"
        "add /items/-: \"c\"\n"
        "replace /version: 1 -> 2\n");
}

TEST_CASE("check_golden writes the file with CAIRN_UPDATE_GOLDEN=1, then compares, and reports a diff") {
  TempGolden golden("run.json");
  Captured captured;
  const json run = {{"bindings", {{"decision", "approve"}}}, {"version", 1}};

  SECTION("a missing file is a failure that says how to create it") {
    CHECK_FALSE(ct::check_golden(golden.path, run));
    REQUIRE(captured.messages.size() == 1);
    CHECK(captured.messages[0] == "golden file " + golden.path +
                                      ": cannot be read; create it with CAIRN_UPDATE_GOLDEN=1, then review and commit "
                                      "it");
  }
  SECTION("written, then equal, then different") {
    setenv("CAIRN_UPDATE_GOLDEN", "1", 1);
    CHECK(ct::check_golden(golden.path, run));
    CHECK(golden.read() == run.dump(2) + "\n");
    unsetenv("CAIRN_UPDATE_GOLDEN");
    CHECK(ct::check_golden(golden.path, run));
    CHECK(captured.messages.empty());

    json changed = run;
    changed["bindings"]["decision"] = "reject";
    CHECK_FALSE(ct::check_golden(golden.path, changed));
    REQUIRE(captured.messages.size() == 1);
    CHECK(captured.messages[0] ==
          "golden file " + golden.path +
              " differs from this run (regenerate with CAIRN_UPDATE_GOLDEN=1 if the change is meant, then review git "
              "diff)\n"
              "JSON Patch from the golden file to this run:\n"
              "replace /bindings/decision: \"approve\" -> \"reject\"\n"
              "line diff (- golden, + actual):\n"
              "@@ golden line 1, actual line 1 @@\n"
              " {\n"
              "   \"bindings\": {\n"
              "-    \"decision\": \"approve\"\n"
              "+    \"decision\": \"reject\"\n"
              "   },\n"
              "   \"version\": 1\n"
              " }\n");
    CHECK(golden.read() == run.dump(2) + "\n");  // comparing never writes
  }
  SECTION("text") {
    setenv("CAIRN_UPDATE_GOLDEN", "1", 1);
    CHECK(ct::check_golden_text(golden.path, "one\ntwo\n"));
    unsetenv("CAIRN_UPDATE_GOLDEN");
    CHECK_FALSE(ct::check_golden_text(golden.path, "one\n2\n"));
    REQUIRE(captured.messages.size() == 1);
    CHECK_THAT(captured.messages[0], ContainsSubstring("differs from this run (- golden, + actual; regenerate with "
                                                       "CAIRN_UPDATE_GOLDEN=1 if the change is meant, then review git "
                                                       "diff):\n@@ golden line 1, actual line 1 @@\n one\n-two\n+2\n"));
  }
}

TEST_CASE("RunDump: the store with every version, the recorded calls, the context and the prompts, in one document") {
  auto clock = std::make_shared<ct::ManualClock>();
  auto ids = std::make_shared<ct::SequentialIds>();
  cairn::InMemoryStoreOptions options;
  options.clock = clock;
  options.ids = ids;
  auto store = std::make_shared<ct::RecordingStore>(std::make_shared<cairn::InMemoryArtifactStore>(options));
  cairn::ExecutionContext ctx(store, "acme", clock);
  ctx.add_message(cairn::Role::user, "invoice 17");
  ctx.add_artifact("decision", *cairn::ArtifactRecord::builder()
                                    .tenant_id("acme")
                                    .id("decision")
                                    .type("document")
                                    .title("d")
                                    .value("hold")
                                    .build());
  ctx.add_artifact("decision", *cairn::ArtifactRecord::builder()
                                    .tenant_id("acme")
                                    .id("decision")
                                    .type("document")
                                    .title("d")
                                    .value("pay")
                                    .build());
  ct::ScriptedModel model("classifier");
  model.reply("invoice");
  model("Classify: invoice 17");

  const json dump = ct::RunDump().store(*store, "acme").calls(*store).context(ctx).prompts("classifier", model).json();
  CHECK(dump.at("store").at("acme").at("decision").size() == 2);
  CHECK(dump["store"]["acme"]["decision"][0].at("value") == "hold");
  CHECK(dump["store"]["acme"]["decision"][1].at("value") == "pay");
  CHECK(dump["store"]["acme"]["decision"][1].at("version") == 2);
  CHECK(dump.at("calls") == json::parse(R"([
    {"number": 1, "operation": "store", "tenant": "acme", "id": "decision", "version": 1, "outcome": "ok"},
    {"number": 2, "operation": "store", "tenant": "acme", "id": "decision", "version": 2, "outcome": "ok"}])"));
  CHECK(dump.at("context") == ctx.state());
  CHECK(dump.at("prompts") == json{{"classifier", {"Classify: invoice 17"}}});
  CHECK_FALSE(dump.contains("engine"));
  // Dumping went around the recording store: it recorded nothing.
  CHECK(store->calls().size() == 2);
  // The same run gives the same document.
  CHECK(ct::RunDump().store(*store, "acme").calls(*store).context(ctx).prompts("classifier", model).json().dump() ==
        dump.dump());
}
