// cairn's side of the A2A SDK test (a2a_sdk/sdk.mjs): prints the A2A JSON cairn makes, and reads A2A JSON the SDK
// makes, so the SDK's own types and server check cairn's output and feed cairn theirs.
//
//   cairn_a2a_peer write   prints {"records": [{"name", "record", "v1", "v03"}], "references": [{"ref", "v1", "v03"}]}
//   cairn_a2a_peer read    reads [{"artifact": A2A Artifact} | {"part": A2A part}] on stdin, prints one answer each:
//                          {"record": cairn's JSON form} | {"part": to_a2a_part(p)} | {"error": what}
#include <iostream>
#include <iterator>
#include <string>

#include "cairn/artifact/a2a.hpp"

namespace {
using cairn::ArtifactRecord;
using nlohmann::json;

ArtifactRecord::Builder base(const char* id) {
  auto b = ArtifactRecord::builder();
  b.id(id).tenant_id("acme").version(2).type("document").title("Weekly report").created_at(1700000000000);
  return b;
}

int write() {
  const std::pair<const char*, cairn::ArtifactPtr> records[] = {
      {"text", base("text").value("# Q3\nSales rose.").build()},
      {"markdown file inline",
       base("md").value("# Notes").mime_type("text/markdown").metadata({{"filename", "notes.md"}}).build()},
      {"object", base("object").type("structured").value({{"sections", {"sales", "costs"}}, {"n", 2}}).build()},
      {"array", base("array").type("data").value(json::array({1, "two", nullptr, json::object()})).build()},
      {"number", base("number").type("data").value(42.5).build()},
      {"boolean, untitled", base("flag").title("").description("a flag").value(false).build()},
      {"file by storage_url", base("pdf")
                                  .type("file")
                                  .value(json(nullptr))
                                  .storage_url("https://files.example.com/reports/Q3%20report.pdf?sig=1")
                                  .mime_type("application/pdf")
                                  .size_bytes(52133)
                                  .build()},
      {"value and file", base("both")
                             .type("file")
                             .value("summary of the file")
                             .storage_url("s3://bucket/data/rows.csv")
                             .mime_type("text/csv")
                             .build()},
      {"inline bytes", base("bytes")
                           .type("image")
                           .value("iVBORw0KGgo=")
                           .mime_type("image/png")
                           .metadata({{"encoding", "base64"}, {"filename", "dot.png"}})
                           .build()},
  };
  json out = {{"records", json::array()}, {"references", json::array()}};
  for (const auto& [name, r] : records) {
    out["records"].push_back({{"name", name},
                              {"record", *r},
                              {"v1", cairn::to_a2a(*r)},
                              {"v03", cairn::to_a2a(*r, cairn::A2AVersion::v0_3)}});
  }
  for (const cairn::ArtifactPart& ref :
       {cairn::ArtifactPart{"research-notes", std::string("Findings")}, cairn::ArtifactPart{"draft-7", std::nullopt}}) {
    json j = {{"artifact_id", ref.artifact_id}};
    if (ref.title) j["title"] = *ref.title;
    out["references"].push_back({{"ref", std::move(j)},
                                 {"v1", cairn::to_a2a_part(ref)},
                                 {"v03", cairn::to_a2a_part(ref, cairn::A2AVersion::v0_3)}});
  }
  std::cout << out.dump() << '\n';
  return 0;
}

int read() {
  const std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  const json in = json::parse(text);
  json out = json::array();
  for (const auto& item : in) {
    try {
      if (item.contains("artifact")) {
        out.push_back({{"record", *cairn::from_a2a(item["artifact"], "acme")}});
      } else {
        out.push_back({{"part", cairn::to_a2a_part(cairn::message_part_from_json(item["part"]))}});
      }
    } catch (const cairn::error& e) {
      out.push_back({{"error", e.what()}});
    }
  }
  std::cout << out.dump() << '\n';
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  const std::string command = argc == 2 ? argv[1] : "";
  if (command == "write") return write();
  if (command == "read") return read();
  std::cerr << "usage: cairn_a2a_peer write|read\n";
  return 2;
}
