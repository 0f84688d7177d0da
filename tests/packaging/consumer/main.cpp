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
  std::cout << "consumer OK: cairn " << cairn::version_string() << ", artifact " << fetched->id() << "\n";
  return 0;
}
