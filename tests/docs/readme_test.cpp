// The first C++ snippet of README.md (its taste), between `// [docs:taste]` and `// [docs:end]` (check_snippets.cmake
// checks that the page shows exactly these lines); the second taste is examples/durable_search.cpp. The snippet
// stands at column 0, as on the page; its #include line is a no-op here (the header is included above).
#include <memory>

#include "cairn/cairn.hpp"
#include "catch.hpp"

TEST_CASE("README.md: the taste") {
// [docs:taste]
#include <cairn/cairn.hpp>

  auto store = std::make_shared<cairn::InMemoryArtifactStore>();
  auto v1 = store->store(*cairn::ArtifactRecord::builder()
                              .tenant_id("acme")
                              .id("weekly-report")
                              .type(cairn::ArtifactType::document)
                              .title("Weekly report")
                              .value("# Week 47\n...")
                              .build());                                     // validated; version 1
  auto v2 = store->store(*v1->revise().value("# Week 47 (final)").build());  // version 2
  auto latest = store->fetch("weekly-report", "acme");                       // v2, the stored pointer itself: no copy
  auto other = store->fetch("weekly-report", "globex");                      // null: another tenant sees nothing
                                                                             // [docs:end]
  CHECK(v1->version() == 1);
  CHECK(v2->version() == 2);
  CHECK(latest == v2);
  CHECK(other == nullptr);
}
