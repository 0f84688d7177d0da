#include "cairn/artifact/a2a.hpp"

#include "catch.hpp"

using namespace cairn;
using nlohmann::json;
using cairn_test::ContainsSubstring;

namespace {
ArtifactRecord::Builder base() {
  auto b = ArtifactRecord::builder();
  b.id("a1").tenant_id("acme").version(3).type("document").title("Notes").description("research notes")
      .created_by("researcher").created_at(1700000000000).metadata({{"tool_name", "search"}});
  return b;
}
}  // namespace

TEST_CASE("to_a2a maps the value and storage_url to A2A parts") {
  SECTION("a string value becomes a TextPart") {
    json a = to_a2a(*base().value("hello").build());
    CHECK(a["artifactId"] == "a1");
    CHECK(a["name"] == "Notes");
    CHECK(a["description"] == "research notes");
    CHECK(a["parts"] == json::parse(R"([{"kind":"text","text":"hello"}])"));
    CHECK(a["metadata"]["cairn"]["tenant_id"] == "acme");
    CHECK(a["metadata"]["cairn"]["version"] == 3);
    CHECK(a["metadata"]["cairn"]["type"] == "document");
    CHECK(a["metadata"]["cairn"]["metadata"] == json({{"tool_name", "search"}}));
  }
  SECTION("an object value becomes a DataPart") {
    json a = to_a2a(*base().value({{"k", 1}}).build());
    CHECK(a["parts"] == json::parse(R"([{"kind":"data","data":{"k":1}}])"));
  }
  SECTION("other JSON values are wrapped, since DataPart.data must be an object") {
    json a = to_a2a(*base().value(json::array({1, 2})).build());
    CHECK(a["parts"][0]["data"] == json({{"value", {1, 2}}}));
  }
  SECTION("a storage_url becomes a FilePart with uri and mimeType") {
    json a = to_a2a(*base().value(json(nullptr)).storage_url("s3://b/k.png").mime_type("image/png").build());
    CHECK(a["parts"] == json::parse(R"([{"kind":"file","file":{"uri":"s3://b/k.png","mimeType":"image/png","name":"Notes"}}])"));
  }
}

TEST_CASE("from_a2a(to_a2a(r)) gives r back, for every kind of value") {
  const std::vector<ArtifactPtr> records = {
      base().value("text").build(),
      base().value({{"nested", {{"deep", true}}}}).build(),
      base().value(json::array({1, "two"})).build(),
      base().value(42).build(),
      base().value(false).build(),
      base().value("").build(),
      base().value("inline").storage_url("https://x/y").mime_type("text/plain").size_bytes(6).schema_url("s").build(),
      base().value(json(nullptr)).storage_url("file:///f").build(),
      base().title("").value(1).build(),
      base().purpose("own purpose").value(1).build(),
  };
  for (const auto& r : records) {
    INFO(json(*r).dump());
    CHECK(*from_a2a(to_a2a(*r), "acme") == *r);
  }
}

TEST_CASE("from_a2a takes the tenant from the caller, never from the artifact") {
  json a = to_a2a(*base().value("x").build());
  a["metadata"]["cairn"]["tenant_id"] = "intruder";
  CHECK(from_a2a(a, "acme")->tenant_id() == "acme");
  CHECK_THROWS_WITH(from_a2a(a, ""), "tenant_id: must not be empty");
}

TEST_CASE("from_a2a reads artifacts made by other A2A agents") {
  SECTION("text parts are joined into a document") {
    auto r = from_a2a(json::parse(R"({"artifactId":"x","name":"Report","parts":[{"kind":"text","text":"Hello, "},
      {"kind":"text","text":"world"}]})"), "t");
    CHECK(r->value() == "Hello, world");
    CHECK(r->type() == ArtifactType::document);
    CHECK(r->title() == "Report");
  }
  SECTION("a data part gives structured data, foreign metadata is kept") {
    auto r = from_a2a(json::parse(R"({"artifactId":"x","parts":[{"kind":"data","data":{"a":1}}],
      "metadata":{"vendor":{"trace":"t-1"}}})"), "t");
    CHECK(r->value() == json({{"a", 1}}));
    CHECK(r->type() == ArtifactType::structured);
    CHECK(r->title() == "x");  // no name: the id
    CHECK(r->metadata()["a2a_metadata"] == json({{"vendor", {{"trace", "t-1"}}}}));
  }
  SECTION("a file part gives a file record") {
    auto r = from_a2a(json::parse(R"({"artifactId":"img","name":"chart","parts":[
      {"kind":"file","file":{"uri":"https://cdn/x.png","mimeType":"image/png"}}]})"), "t");
    CHECK(r->type() == ArtifactType::file);
    CHECK(r->storage_url() == "https://cdn/x.png");
    CHECK(r->mime_type() == "image/png");
    CHECK_FALSE(r->has_value());
    auto bytes = from_a2a(json::parse(R"({"artifactId":"b","parts":[{"kind":"file","file":{"bytes":"aGk="}}]})"), "t");
    CHECK(bytes->value() == "aGk=");
    CHECK(bytes->metadata()["encoding"] == "base64");
  }
  SECTION("mixed parts give an array") {
    auto r = from_a2a(json::parse(R"({"artifactId":"m","parts":[{"kind":"text","text":"a"},
      {"kind":"data","data":{"b":2}}]})"), "t");
    CHECK(r->value() == json::parse(R"(["a",{"b":2}])"));
  }
}

TEST_CASE("from_a2a rejects what is not an A2A Artifact, naming the member") {
  auto bad = [](const char* text) { return from_a2a(json::parse(text), "t"); };
  CHECK_THROWS_WITH(bad("[]"), "A2A Artifact: expected a JSON object, got array");
  CHECK_THROWS_WITH(bad(R"({"parts":[]})"), "A2A Artifact: missing required member 'artifactId'");
  CHECK_THROWS_WITH(bad(R"({"artifactId":"x"})"), "A2A Artifact: missing required member 'parts'");
  CHECK_THROWS_WITH(bad(R"({"artifactId":"x","parts":{}})"), "A2A Artifact.parts: expected an array, got object");
  CHECK_THROWS_WITH(bad(R"({"artifactId":"x","parts":[{"kind":"text"}]})"),
                    "A2A Artifact.parts[0]: TextPart: missing required member 'text'");
  CHECK_THROWS_WITH(bad(R"({"artifactId":"x","parts":[{"kind":"artifact","artifact_id":"y"}]})"),
                    ContainsSubstring("parts[0]: kind 'artifact' is not an A2A part"));
  CHECK_THROWS_WITH(bad(R"({"artifactId":"x","parts":[]})"), ContainsSubstring("a record needs a value"));
  CHECK_THROWS_WITH(bad(R"({"artifactId":"x","parts":[{"kind":"text","text":"a"}],"metadata":[]})"),
                    "A2A Artifact.metadata: expected an object, got array");
  CHECK_THROWS_WITH(bad(R"({"artifactId":"x","name":7,"parts":[{"kind":"text","text":"a"}]})"),
                    "A2A Artifact.name: expected a string, got number");
}

TEST_CASE("from_a2a reads cairn's flags only when they are booleans") {
  // Found by tests/fuzz/fuzz_record (corpus/record/regression-a2a-flag-not-boolean.json): a string where a boolean
  // flag was expected escaped as a raw nlohmann::json::type_error.
  auto r = from_a2a(json::parse(R"({"artifactId":"a1","name":"Notes","parts":[{"kind":"data","data":{"value":[1,2]},
    "metadata":{"cairn_wrapped":"acme"}}],"metadata":{"cairn":{"type":"data","untitled":"yes"}}})"), "t");
  CHECK(r->value() == json({{"value", {1, 2}}}));  // not unwrapped
  CHECK(r->title() == "Notes");                    // not untitled
}

TEST_CASE("from_a2a refuses an artifactId that is not a valid record id") {
  json a = to_a2a(*base().value("hello").build());
  a["artifactId"] = "";
  CHECK_THROWS_WITH(from_a2a(a, "acme"), "A2A Artifact.artifactId: must not be empty");
  a["artifactId"] = std::string(257, 'i');
  CHECK_THROWS_WITH(from_a2a(a, "acme"), "A2A Artifact.artifactId: must be at most 256 bytes (got 257)");
  a["artifactId"] = std::string(256, 'i');
  CHECK(from_a2a(a, "acme")->id() == std::string(256, 'i'));
  a["artifactId"] = "a\nb";
  CHECK_THROWS_AS(from_a2a(a, "acme"), cairn::invalid_artifact);
}

// Issue 25: another agent's JSON, parsed by the host without limits, crashed from_a2a (SIGSEGV: copying a part
// recursed once per level of a value 200,000 deep). Refused now, before anything is copied.
TEST_CASE("from_a2a refuses JSON nested deeper than the default depth limit, in a part or in metadata") {
  // Built in place and moved: copying such a value would crash the test itself.
  auto deep = [] { return nlohmann::json::parse(std::string(200000, '[') + std::string(200000, ']')); };
  nlohmann::json a = {{"artifactId", "deep"},
                      {"parts", nlohmann::json::array({{{"kind", "data"}, {"data", nlohmann::json::object()}}})}};
  a["parts"][0]["data"]["v"] = deep();
  REQUIRE_THROWS_AS(cairn::from_a2a(a, "t"), cairn::limit_exceeded);
  REQUIRE_THROWS_WITH(cairn::from_a2a(a, "t"), "A2A Artifact: JSON nesting is deeper than the limit of 256 levels");
  a["parts"][0]["data"]["v"] = 1;
  a["metadata"] = nlohmann::json::object();
  a["metadata"]["v"] = deep();
  REQUIRE_THROWS_WITH(cairn::from_a2a(a, "t"), "A2A Artifact: JSON nesting is deeper than the limit of 256 levels");
  // At the limit: the artifact (depth 1), metadata (2) and 254 levels of its own.
  a["metadata"] = {{"v", nlohmann::json::parse(std::string(254, '[') + std::string(254, ']'))}};
  REQUIRE(cairn::from_a2a(a, "t")->id() == "deep");
}
