#include "cairn/artifact/message_part.hpp"

#include "catch.hpp"

using namespace cairn;
using nlohmann::json;
using cairn_test::ContainsSubstring;

TEST_CASE("each MessagePart round-trips through JSON with its kind") {
  const std::vector<MessagePart> parts = {
      TextPart{"hello"},
      FilePart{std::string("file:///tmp/a.png"), std::nullopt, std::string("image/png"), std::string("a.png")},
      FilePart{std::nullopt, std::string("aGVsbG8="), std::nullopt, std::nullopt},
      DataPart{json{{"rows", 3}}},
      ArtifactPart{"abc-123", std::string("research notes")},
      ArtifactPart{"abc-123", std::nullopt},
  };
  for (const auto& p : parts) {
    json j = p;
    INFO(j.dump());
    CHECK(j.get<MessagePart>() == p);
  }
  CHECK(json(MessagePart{ArtifactPart{"id1", std::nullopt}}) == json({{"kind", "artifact"}, {"artifact_id", "id1"}}));
  CHECK(json(MessagePart{TextPart{"x"}}) == json({{"kind", "text"}, {"text", "x"}}));
  CHECK(json(MessagePart{FilePart{std::string("u"), {}, {}, {}}}) == json({{"kind", "file"}, {"file", {{"uri", "u"}}}}));
}

TEST_CASE("bad parts are rejected with the part and member named") {
  auto parse = [](const char* text) { return message_part_from_json(json::parse(text)); };
  CHECK_THROWS_WITH(parse(R"({"text":"x"})"), "MessagePart: missing required member 'kind'");
  CHECK_THROWS_WITH(parse(R"({"kind":"video"})"), ContainsSubstring("unknown kind 'video'"));
  CHECK_THROWS_WITH(parse(R"({"kind":"text"})"), "TextPart: missing required member 'text'");
  CHECK_THROWS_WITH(parse(R"({"kind":"text","text":1})"), "TextPart.text: expected a string, got number");
  CHECK_THROWS_WITH(parse(R"({"kind":"data","data":[1]})"), "DataPart.data: expected a JSON object, got array");
  CHECK_THROWS_WITH(parse(R"({"kind":"file","file":{}})"), "FilePart.file: needs exactly one of 'uri' and 'bytes'");
  CHECK_THROWS_WITH(parse(R"({"kind":"file","file":{"uri":"a","bytes":"b"}})"), ContainsSubstring("exactly one"));
  CHECK_THROWS_WITH(parse(R"({"kind":"file","file":{"uri":3}})"), "FilePart.file.uri: expected a string, got number");
  CHECK_THROWS_WITH(parse(R"({"kind":"artifact","artifact_id":""})"), "ArtifactPart.artifact_id: must not be empty");
  CHECK_THROWS_WITH(parse(R"({"kind":"artifact"})"), "ArtifactPart: missing required member 'artifact_id'");
  CHECK_THROWS_WITH(parse(R"("text")"), "MessagePart: expected a JSON object, got string");
}

TEST_CASE("an ArtifactPart id follows the rules of record ids") {
  auto parse = [](const json& j) { return message_part_from_json(j); };
  CHECK_THROWS_WITH(parse(json{{"kind", "artifact"}, {"artifact_id", std::string(257, 'i')}}),
                    "ArtifactPart.artifact_id: must be at most 256 bytes (got 257)");
  CHECK_THROWS_WITH(parse(json{{"kind", "artifact"}, {"artifact_id", " x"}}),
                    "ArtifactPart.artifact_id: must not start or end with a space (' x')");
  CHECK_THROWS_WITH(parse(json{{"kind", "artifact"}, {"artifact_id", "a\tb"}}),
                    "ArtifactPart.artifact_id: must not contain control characters ('a\\x09b')");
  CHECK(std::get<ArtifactPart>(parse(json{{"kind", "artifact"}, {"artifact_id", std::string(256, 'i')}})).artifact_id ==
        std::string(256, 'i'));
}
