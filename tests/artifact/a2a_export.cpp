// Writes the A2A v0.3.0 JSON cairn makes, for the schema check: {"artifacts": [to_a2a(r, v0_3) for records of every
// shape], "parts": [to_a2a_part(p, v0_3) for every kind of MessagePart, references included]}.
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
      base().value("aGVsbG8=").mime_type("application/octet-stream").metadata({{"encoding", "base64"}}).build(),
      base().value(json(nullptr)).storage_url("https://example.com/r/Q3%20report.pdf").build(),
  };
  const std::vector<cairn::MessagePart> parts = {
      cairn::TextPart{"hello"},
      cairn::DataPart{{{"k", 1}}},
      cairn::DataPart{json::array({1, 2})},
      cairn::FilePart{std::string("https://example.com/a.png"), std::nullopt, std::string("image/png"),
                      std::string("a.png")},
      cairn::FilePart{std::nullopt, std::string("aGk="), std::nullopt, std::nullopt},
      cairn::ArtifactPart{"research-1", std::string("Findings")},
      cairn::ArtifactPart{"research-1", std::nullopt},
  };
  json out = {{"artifacts", json::array()}, {"parts", json::array()}};
  for (const auto& r : records) out["artifacts"].push_back(cairn::to_a2a(*r, cairn::A2AVersion::v0_3));
  for (const auto& p : parts) out["parts"].push_back(cairn::to_a2a_part(p, cairn::A2AVersion::v0_3));
  std::ofstream(argv[1]) << out.dump(2) << '\n';
  std::cout << "wrote " << out["artifacts"].size() << " artifacts and " << out["parts"].size() << " parts to "
            << argv[1] << '\n';
  return 0;
}
