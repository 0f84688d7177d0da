#include "cairn/artifact/message_part.hpp"

#include "catch.hpp"

using namespace cairn;
using cairn_test::ContainsSubstring;
using nlohmann::json;

namespace {
const std::vector<MessagePart> every_part = {
    TextPart{"hello"},
    TextPart{""},
    FilePart{std::string("file:///tmp/a.png"), std::nullopt, std::string("image/png"), std::string("a.png")},
    FilePart{std::nullopt, std::string("aGVsbG8="), std::nullopt, std::nullopt},
    DataPart{json{{"rows", 3}}},
    DataPart{json::array({1, 2})},
    DataPart{json("s")},
    DataPart{json(nullptr)},
    ArtifactPart{"abc-123", std::string("research notes")},
    ArtifactPart{"abc-123", std::nullopt},
};
}  // namespace

TEST_CASE("each MessagePart round-trips through A2A JSON of both versions") {
  for (const auto& p : every_part) {
    for (const auto version : {A2AVersion::v1_0, A2AVersion::v0_3}) {
      json j = to_a2a_part(p, version);
      INFO(j.dump());
      CHECK(j.get<MessagePart>() == p);
      CHECK(j.contains("kind") == (version == A2AVersion::v0_3));
    }
    CHECK(json(p) == to_a2a_part(p));  // to_json writes v1.0
  }
}

TEST_CASE("MessagePart JSON is A2A v1.0 by default, v0.3.0 when asked") {
  CHECK(json(MessagePart{TextPart{"x"}}) == json({{"text", "x"}}));
  CHECK(json(MessagePart{FilePart{std::string("u"), {}, std::string("image/png"), std::string("a.png")}}) ==
        json::parse(R"({"url":"u","filename":"a.png","mediaType":"image/png"})"));
  CHECK(json(MessagePart{FilePart{{}, std::string("aGk="), {}, {}}}) == json({{"raw", "aGk="}}));
  CHECK(json(MessagePart{DataPart{json::array({1})}}) == json({{"data", {1}}}));
  CHECK(to_a2a_part(TextPart{"x"}, A2AVersion::v0_3) == json({{"kind", "text"}, {"text", "x"}}));
  CHECK(to_a2a_part(FilePart{std::string("u"), {}, {}, std::string("a.png")}, A2AVersion::v0_3) ==
        json::parse(R"({"kind":"file","file":{"uri":"u","name":"a.png"}})"));
  CHECK(to_a2a_part(DataPart{json::array({1})}, A2AVersion::v0_3) ==
        json::parse(R"({"kind":"data","data":{"value":[1]},"metadata":{"data_part_compat":true}})"));
  CHECK_THROWS_WITH(to_a2a_part(FilePart{}), "FilePart: needs exactly one of uri and bytes");
}

TEST_CASE("an ArtifactPart travels as a data part marked with cairn's extension, valid A2A in both versions") {
  CHECK(json(MessagePart{ArtifactPart{"id1", std::string("Draft")}}) ==
        json::parse(R"({"data":{"artifact_id":"id1","title":"Draft"},"metadata":{"urn:cairn:a2a:v1":"reference"}})"));
  CHECK(to_a2a_part(ArtifactPart{"id1", std::nullopt}, A2AVersion::v0_3) ==
        json::parse(R"({"kind":"data","data":{"artifact_id":"id1"},"metadata":{"urn:cairn:a2a:v1":"reference"}})"));
  // Without the mark it is plain data; with another value under the key too.
  CHECK(std::holds_alternative<DataPart>(message_part_from_json(json::parse(R"({"data":{"artifact_id":"id1"}})"))));
  CHECK(std::holds_alternative<DataPart>(message_part_from_json(
      json::parse(R"({"data":{"artifact_id":"id1"},"metadata":{"urn:cairn:a2a:v1":"other"}})"))));
  // What cairn wrote before: read, never written.
  CHECK(message_part_from_json(json::parse(R"({"kind":"artifact","artifact_id":"id1","title":"t"})")) ==
        MessagePart{ArtifactPart{"id1", std::string("t")}});
}

TEST_CASE("bad parts are rejected with the part and member named") {
  auto parse = [](const char* text) { return message_part_from_json(json::parse(text)); };
  CHECK_THROWS_WITH(parse(R"({"txt":"x"})"),
                    "MessagePart: has none of 'text', 'raw', 'url' and 'data' (a v1.0 Part "
                    "holds one of them; a v0.3.0 part has 'kind')");
  CHECK_THROWS_WITH(parse(R"({"text":"x","data":1})"), ContainsSubstring("MessagePart: has both 'text' and 'data'"));
  CHECK_THROWS_WITH(parse(R"({"raw":"@@@@"})"), "MessagePart.raw: is not base64: '@' at offset 0");
  CHECK_THROWS_WITH(parse(R"({"kind":"video"})"),
                    "MessagePart.kind: unknown kind 'video' (a v0.3.0 part is text, file or data)");
  CHECK_THROWS_WITH(parse(R"({"kind":"text"})"), "MessagePart: missing required member 'text'");
  CHECK_THROWS_WITH(parse(R"({"kind":"text","text":1})"), "MessagePart.text: expected a string, got number");
  CHECK_THROWS_WITH(parse(R"({"kind":"file","file":{}})"), "MessagePart.file: needs exactly one of 'uri' and 'bytes'");
  CHECK_THROWS_WITH(parse(R"({"kind":"file","file":{"uri":"a","bytes":"b"}})"), ContainsSubstring("exactly one"));
  CHECK_THROWS_WITH(parse(R"({"kind":"file","file":{"uri":3}})"),
                    "MessagePart.file.uri: expected a string, got number");
  CHECK_THROWS_WITH(parse(R"("text")"), "MessagePart: expected a JSON object, got string");
  CHECK_THROWS_WITH(parse(R"({"kind":"artifact"})"), "MessagePart: missing required member 'artifact_id'");
  CHECK_THROWS_WITH(parse(R"({"data":[],"metadata":{"urn:cairn:a2a:v1":"reference"}})"),
                    "MessagePart.data: a cairn reference holds an object, got array");
  CHECK_THROWS_WITH(parse(R"({"data":{},"metadata":{"urn:cairn:a2a:v1":"reference"}})"),
                    "MessagePart.data: missing required member 'artifact_id'");
  CHECK_THROWS_WITH(parse(R"({"data":{"artifact_id":"a","title":2},"metadata":{"urn:cairn:a2a:v1":"reference"}})"),
                    "MessagePart.data.title: expected a string, got number");
  auto deep = json::parse(std::string(300, '[') + std::string(300, ']'));
  CHECK_THROWS_WITH(message_part_from_json(json{{"data", deep}}),
                    "MessagePart: JSON nesting is deeper than the limit of 256 levels");
}

TEST_CASE("an ArtifactPart id follows the rules of record ids") {
  auto ref = [](const json& id) {
    return message_part_from_json(
        json{{"data", {{"artifact_id", id}}}, {"metadata", {{"urn:cairn:a2a:v1", "reference"}}}});
  };
  CHECK_THROWS_WITH(ref(""), "MessagePart.data.artifact_id: must not be empty");
  CHECK_THROWS_WITH(ref(std::string(257, 'i')), "MessagePart.data.artifact_id: must be at most 256 bytes (got 257)");
  CHECK_THROWS_WITH(ref(" x"), "MessagePart.data.artifact_id: must not start or end with a space (' x')");
  CHECK_THROWS_WITH(ref("a\tb"), "MessagePart.data.artifact_id: must not contain control characters ('a\\x09b')");
  CHECK(std::get<ArtifactPart>(ref(std::string(256, 'i'))).artifact_id == std::string(256, 'i'));
  CHECK_THROWS_WITH(message_part_from_json(json{{"kind", "artifact"}, {"artifact_id", ""}}),
                    "MessagePart.artifact_id: must not be empty");
}
