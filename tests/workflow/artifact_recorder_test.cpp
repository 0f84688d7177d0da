#include "cairn/workflow/artifact_recorder.hpp"

#include "cairn/artifact/memory_store.hpp"
#include "cairn/workflow/tools.hpp"
#include "catch.hpp"
#include "workspace.hpp"

using namespace cairn;
using nlohmann::json;
namespace fs = std::filesystem;

TEST_CASE("artifact_recorder stores one file record per newly registered artifact") {
  cairn_test::TempWorkspace ws;
  ws.write("src/a.cpp", "int a;");
  ws.write("b.txt", "b");
  auto store = std::make_shared<InMemoryArtifactStore>();
  WorkflowMachine m(cairn_test::feature_template(), ws.path());
  m.start();
  m.set_artifact_observer(artifact_recorder(store, "acme", "coder"));
  m.register_artifacts({"src/a.cpp", "src/a.cpp", "missing"});

  const auto page = store->list("acme");
  REQUIRE(page.items.size() == 1);
  const auto& r = *page.items[0];
  const std::string root = fs::canonical(ws.path()).string();
  CHECK(r.type() == ArtifactType::file);
  CHECK(r.title() == "src/a.cpp");
  CHECK(r.value() == root + "/src/a.cpp");
  CHECK(r.size_bytes() == std::optional<std::uint64_t>(6));
  CHECK(r.created_by() == std::optional<std::string>("coder"));
  CHECK(r.metadata() == json{{"source", "register_artefacts"},
                             {"workflow", "feature"},
                             {"step", "plan"},
                             {"relative_path", "src/a.cpp"}});
  CHECK(r.description() == "File registered at step 'plan' of workflow 'feature'");
  CHECK(store->list("other").items.empty());

  // Through the tools, too.
  WorkflowTools tools(StateFile(ws.path()), cairn_test::feature_template(), artifact_recorder(store, "acme"));
  tools.call("workflow_start", json::object());
  CHECK(tools.call("register_artefacts", {{"paths", {"b.txt"}}}).at("isError") == false);
  CHECK(store->list("acme").items.size() == 2);
}

TEST_CASE("artifact_recorder rejects a null store and an empty tenant") {
  CHECK_THROWS_AS(artifact_recorder(nullptr, "t"), invalid_argument);
  CHECK_THROWS_AS(artifact_recorder(std::make_shared<InMemoryArtifactStore>(), ""), invalid_argument);
}
