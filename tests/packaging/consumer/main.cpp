// A program a downstream project writes: store an artifact, fetch it back, and exit 0 only when it round-trips.
#include <iostream>

#include <cairn/cairn.hpp>

int main() {
  cairn::InMemoryArtifactStore store;
  auto stored = store.store(*cairn::ArtifactRecord::builder()
                                 .tenant_id("consumer")
                                 .type(cairn::ArtifactType::document)
                                 .title("hello")
                                 .value("from a consumer project")
                                 .build());
  auto fetched = store.fetch(stored->id(), "consumer");
  if (!fetched || fetched->value() != "from a consumer project" || fetched->version() != 1) {
    std::cerr << "round trip failed\n";
    return 1;
  }
  // A body that compiled mode (cairn::compiled, CAIRN_COMPILED_LIB) takes out of the headers: it must link either way.
  if (!cairn::goal_observer([](const cairn::GoalTransition&) {})) {
    std::cerr << "goal_observer returned nothing\n";
    return 1;
  }
  std::cout << "consumer OK: cairn " << cairn::version_string() << ", artifact " << fetched->id() << "\n";
  return 0;
}
