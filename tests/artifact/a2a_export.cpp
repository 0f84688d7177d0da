// Writes a JSON array of A2A Artifacts made by cairn::to_a2a from records of every shape, for the schema check.
#include <fstream>
#include <iostream>

#include "cairn/artifact/a2a.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: cairn_a2a_export <out.json>\n";
    return 2;
  }
  using cairn::ArtifactRecord;
  using nlohmann::json;
  auto base = [] {
    auto b = ArtifactRecord::builder();
    b.id("a1").tenant_id("acme").type("document").title("Notes").created_at(1700000000000);
    return b;
  };
  const std::vector<cairn::ArtifactPtr> records = {
      base().value("plain text").build(),
      base().value({{"rows", json::array({1, 2, 3})}}).description("data").build(),
      base().value(json::array({"a", "b"})).build(),
      base().value(3.5).build(),
      base().value(json(nullptr)).storage_url("https://example.com/x.png").mime_type("image/png").build(),
      base().value("both").storage_url("s3://bucket/key").size_bytes(4).created_by("agent").build(),
      base().title("").description("untitled").value(true).metadata({{"k", {{"nested", 1}}}}).build(),
  };
  json out = json::array();
  for (const auto& r : records) out.push_back(cairn::to_a2a(*r));
  std::ofstream(argv[1]) << out.dump(2) << '\n';
  std::cout << "wrote " << out.size() << " artifacts to " << argv[1] << '\n';
  return 0;
}
