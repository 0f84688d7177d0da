// The C++ snippets of docs/artifacts.md, each between `// [docs:<name>]` and `// [docs:end]` (check_snippets.cmake
// checks that the page shows exactly these lines). Snippets stand at column 0, as on the page.
#include <memory>

#include <nlohmann/json.hpp>

#include "cairn/artifact/a2a.hpp"
#include "cairn/artifact/memory_store.hpp"
#include "cairn/testing/store_conformance.hpp"
#include "catch.hpp"

TEST_CASE("docs/artifacts.md: A2A both ways") {
  cairn::InMemoryArtifactStore store;
  cairn::ArtifactPtr record = store.store(*cairn::ArtifactRecord::builder()
                                               .tenant_id("acme")
                                               .type(cairn::ArtifactType::document)
                                               .title("Plan")
                                               .value("# Plan")
                                               .build());
  // [docs:a2a]
  nlohmann::json v1 = cairn::to_a2a(*record);                            // {"parts": [{"text": "…"}], …}
  nlohmann::json v03 = cairn::to_a2a(*record, cairn::A2AVersion::v0_3);  // {"parts": [{"kind": "text", …}], …}
  cairn::ArtifactPtr back = cairn::from_a2a(v1, "acme");                 // either version; the tenant is yours
                                                                         // [docs:end]
  CHECK(v1["parts"][0]["text"] == "# Plan");
  CHECK(v03["parts"][0]["kind"] == "text");
  CHECK(v03["parts"][0]["text"] == "# Plan");
  REQUIRE(back != nullptr);
  CHECK(*back == *record);
  CHECK(*cairn::from_a2a(v03, "acme") == *record);
}

TEST_CASE("docs/artifacts.md: the conformance suite over a store") {
  auto make_my_store = [] { return std::make_unique<cairn::InMemoryArtifactStore>(); };
  // [docs:conformance]
  for (const auto& check : cairn::testing::store_conformance_checks()) {
    auto store = make_my_store();  // a fresh (or shared) store for each check
    check.run(*store);             // throws cairn::testing::conformance_failure on a violation
  }
  // [docs:end]
  // Any check that finds the store misbehaving throws out of the loop and fails this test.
  CHECK_FALSE(cairn::testing::store_conformance_checks().empty());
}
