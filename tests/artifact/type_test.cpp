#include "cairn/artifact/type.hpp"

#include <unordered_set>

#include "catch.hpp"

using cairn::ArtifactType;

TEST_CASE("ArtifactType accepts lowercase tokens and has the categories of both designs") {
  CHECK(ArtifactType{"document"} == ArtifactType::document);
  CHECK(ArtifactType::document == "document");
  CHECK(ArtifactType::dataset.str() == "dataset");
  CHECK(ArtifactType::code.str() == "code");
  CHECK(ArtifactType::image.str() == "image");
  CHECK(ArtifactType::structured.str() == "structured");
  CHECK(ArtifactType::file.str() == "file");
  CHECK(ArtifactType::data.str() == "data");
  CHECK(ArtifactType::process.str() == "process");
  CHECK(ArtifactType::config.str() == "config");
  CHECK(ArtifactType{"transcript"}.str() == "transcript");  // open set
  CHECK(ArtifactType{"a"}.str() == "a");
  CHECK(ArtifactType{"x1_y-2"}.str() == "x1_y-2");
  CHECK(ArtifactType{std::string(64, 'z')}.str().size() == 64);
  CHECK(ArtifactType::file != ArtifactType::data);
}

TEST_CASE("ArtifactType rejects malformed tokens with a message naming the token") {
  for (const std::string bad : {"", "Document", "1st", "-x", "_x", "has space", "dot.ted", "ünicode", "x/y"}) {
    INFO(bad);
    CHECK_THROWS_AS(ArtifactType{bad}, cairn::invalid_artifact);
    CHECK_FALSE(ArtifactType::is_valid(bad));
  }
  CHECK_THROWS_WITH(ArtifactType{"Bad Type"}, cairn_test::ContainsSubstring("type: 'Bad Type' is not a valid"));
  CHECK_THROWS_AS(ArtifactType{std::string(65, 'z')}, cairn::invalid_artifact);
  CHECK_THROWS_WITH(ArtifactType{std::string("a\nb")}, cairn_test::ContainsSubstring("a\\x0ab"));
}

TEST_CASE("ArtifactType converts to and from JSON, hashes and formats") {
  nlohmann::json j = ArtifactType::code;
  CHECK(j == "code");
  CHECK(j.get<ArtifactType>() == ArtifactType::code);
  CHECK_THROWS_AS(nlohmann::json(3).get<ArtifactType>(), cairn::invalid_artifact);
  CHECK_THROWS_WITH(nlohmann::json(3).get<ArtifactType>(), cairn_test::ContainsSubstring("type: expected a string"));
  CHECK_THROWS_AS(nlohmann::json("NOPE").get<ArtifactType>(), cairn::invalid_artifact);
  std::unordered_set<ArtifactType> set{ArtifactType::code, ArtifactType{"code"}, ArtifactType::data};
  CHECK(set.size() == 2);
  CHECK(fmt::format("[{}]", ArtifactType::image) == "[image]");
}
