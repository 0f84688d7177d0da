#include "cairn/artifact/a2a.hpp"

#include "catch.hpp"

using namespace cairn;
using cairn_test::ContainsSubstring;
using nlohmann::json;

namespace {
const std::string uri(a2a_extension_uri);

ArtifactRecord::Builder base() {
  auto b = ArtifactRecord::builder();
  b.id("a1")
      .tenant_id("acme")
      .version(3)
      .type("document")
      .title("Notes")
      .description("research notes")
      .created_by("researcher")
      .created_at(1700000000000)
      .metadata({{"tool_name", "search"}});
  return b;
}

// Every shape a record's content can take, as an A2A peer would see it.
std::vector<ArtifactPtr> every_shape(const ArtifactType& type) {
  auto b = [&] { return base().type(type); };
  return {
      b().value("text").build(),
      b().value("").build(),
      b().value({{"nested", {{"deep", true}}}}).build(),
      b().value(json::object()).build(),
      b().value(json::array({1, "two", nullptr})).build(),
      b().value(json::array()).build(),
      b().value(42).build(),
      b().value(-0.5).build(),
      b().value(false).build(),
      b().value("inline").storage_url("https://x/y").mime_type("text/plain").size_bytes(6).schema_url("s").build(),
      b().value(json(nullptr)).storage_url("file:///tmp/report.pdf").mime_type("application/pdf").build(),
      b().value(json(nullptr)).storage_url("s3://bucket").build(),
      b().value("aGVsbG8=")
          .metadata({{"encoding", "base64"}, {"filename", "hello.bin"}})
          .mime_type("application/octet-stream")
          .build(),
      b().value("not base64!").metadata({{"encoding", "base64"}}).build(),
      b().value({{"rows", 2}}).mime_type("application/json").metadata({{"filename", "rows.json"}}).build(),
      b().title("").value(1).build(),
      b().purpose("own purpose").value(1).build(),
      b().created_at(0).metadata(json::object()).value("fresh").build(),
  };
}

const std::vector<ArtifactType> every_type = {
    ArtifactType::document,   ArtifactType::dataset,      ArtifactType::code, ArtifactType::image,
    ArtifactType::structured, ArtifactType::file,         ArtifactType::data, ArtifactType::process,
    ArtifactType::config,     ArtifactType{"custom-type"}};
}  // namespace

TEST_CASE("to_a2a writes A2A v1.0 by default: one part that carries the value whole") {
  SECTION("a string value is a text part; identity and cairn's fields under the extension URI, never the tenant") {
    json a = to_a2a(*base().value("hello").build());
    CHECK(a["artifactId"] == "a1");
    CHECK(a["name"] == "Notes");
    CHECK(a["description"] == "research notes");
    CHECK(a["parts"] == json::parse(R"([{"text":"hello"}])"));
    CHECK(a["extensions"] == json::array({"urn:cairn:a2a:v1"}));
    CHECK(a["metadata"] == json::parse(R"({"urn:cairn:a2a:v1":{"id":"a1","version":3,"type":"document",
      "created_at":1700000000000,"created_by":"researcher","metadata":{"tool_name":"search"}}})"));
    CHECK(a.dump().find("acme") == std::string::npos);
    CHECK(to_a2a(*base().value("hello").build(), A2AVersion::v1_0) == a);
  }
  SECTION("any other JSON value is a data part, unwrapped") {
    CHECK(to_a2a(*base().value({{"k", 1}}).build())["parts"] == json::parse(R"([{"data":{"k":1}}])"));
    CHECK(to_a2a(*base().value(json::array({1, 2})).build())["parts"] == json::parse(R"([{"data":[1,2]}])"));
    CHECK(to_a2a(*base().value(7).build())["parts"] == json::parse(R"([{"data":7}])"));
    CHECK(to_a2a(*base().value(true).build())["parts"] == json::parse(R"([{"data":true}])"));
  }
  SECTION("a storage_url is a url part with a file name from the URL, never the title") {
    json a = to_a2a(*base().value(json(nullptr)).storage_url("s3://b/charts/k.png").mime_type("image/png").build());
    CHECK(a["parts"] == json::parse(R"([{"url":"s3://b/charts/k.png","filename":"k.png","mediaType":"image/png"}])"));
    auto file = [](const char* url) {
      return to_a2a(*base().value(json(nullptr)).storage_url(url).build())["parts"][0];
    };
    CHECK(file("https://cdn.example/r/Q3%20report.pdf?sig=abc#p2")["filename"] == "Q3 report.pdf");
    CHECK(file("https://cdn.example/a%2Fb")["filename"] == "a%2Fb");  // decoding would make a path
    CHECK(file("file:///tmp/notes.md")["filename"] == "notes.md");
    CHECK_FALSE(file("https://cdn.example").contains("filename"));
    CHECK_FALSE(file("https://cdn.example/dir/").contains("filename"));
    CHECK_FALSE(file("urn:isbn:0451450523").contains("filename"));
    CHECK_FALSE(file("https://cdn.example/x").contains("mediaType"));
  }
  SECTION("metadata.filename names the file when it is set") {
    json a = to_a2a(
        *base().value(json(nullptr)).storage_url("https://x/blob/9f2c").metadata({{"filename", "r.pdf"}}).build());
    CHECK(a["parts"][0]["filename"] == "r.pdf");
    // Not a string, or empty: the URL's name.
    CHECK(to_a2a(*base()
                      .value(json(nullptr))
                      .storage_url("https://x/y.txt")
                      .metadata({{"filename", 3}})
                      .build())["parts"][0]["filename"] == "y.txt");
    CHECK(to_a2a(*base()
                      .value(json(nullptr))
                      .storage_url("https://x/y.txt")
                      .metadata({{"filename", ""}})
                      .build())["parts"][0]["filename"] == "y.txt");
  }
  SECTION("inline base64 bytes (metadata.encoding = \"base64\") are a raw part") {
    json a = to_a2a(*base()
                         .value("aGk=")
                         .mime_type("application/octet-stream")
                         .metadata({{"encoding", "base64"}, {"filename", "hi.bin"}})
                         .build());
    CHECK(a["parts"] == json::parse(R"([{"raw":"aGk=","filename":"hi.bin","mediaType":"application/octet-stream"}])"));
    // Marked base64 but not base64: it is text, sent as text.
    CHECK(to_a2a(*base().value("a b").metadata({{"encoding", "base64"}}).build())["parts"] ==
          json::parse(R"([{"text":"a b"}])"));
  }
  SECTION("a value alone carries mime_type and filename; beside a file, the url part carries them") {
    json a = to_a2a(*base().value("# Q3").mime_type("text/markdown").metadata({{"filename", "q3.md"}}).build());
    CHECK(a["parts"] == json::parse(R"([{"text":"# Q3","filename":"q3.md","mediaType":"text/markdown"}])"));
    json both = to_a2a(*base().value("summary").storage_url("https://x/full.pdf").mime_type("application/pdf").build());
    CHECK(both["parts"] == json::parse(R"([{"text":"summary"},
      {"url":"https://x/full.pdf","filename":"full.pdf","mediaType":"application/pdf"}])"));
  }
  SECTION("an untitled record has no name; a purpose of its own and every optional field travel") {
    json a = to_a2a(*base().title("").purpose("why").value(1).size_bytes(9).schema_url("https://s").build());
    CHECK_FALSE(a.contains("name"));
    CHECK(a["metadata"][uri]["untitled"] == true);
    CHECK(a["metadata"][uri]["purpose"] == "why");
    CHECK(a["metadata"][uri]["size_bytes"] == 9);
    CHECK(a["metadata"][uri]["schema_url"] == "https://s");
  }
}

TEST_CASE("to_a2a(r, A2AVersion::v0_3) writes A2A v0.3.0 parts") {
  auto parts = [](const ArtifactPtr& r) { return to_a2a(*r, A2AVersion::v0_3)["parts"]; };
  CHECK(parts(base().value("hello").mime_type("text/plain").build()) ==
        json::parse(R"([{"kind":"text","text":"hello"}])"));
  CHECK(parts(base().value({{"k", 1}}).build()) == json::parse(R"([{"kind":"data","data":{"k":1}}])"));
  // v0.3.0's data must be an object: the SDKs' wrapping, which they undo on the way in.
  CHECK(parts(base().value(json::array({1, 2})).build()) ==
        json::parse(R"([{"kind":"data","data":{"value":[1,2]},"metadata":{"data_part_compat":true}}])"));
  CHECK(parts(base().value(json(nullptr)).storage_url("s3://b/k.png").mime_type("image/png").build()) ==
        json::parse(R"([{"kind":"file","file":{"uri":"s3://b/k.png","mimeType":"image/png","name":"k.png"}}])"));
  CHECK(parts(base().value("aGk=").metadata({{"encoding", "base64"}}).build()) ==
        json::parse(R"([{"kind":"file","file":{"bytes":"aGk="}}])"));
  json a = to_a2a(*base().value("x").build(), A2AVersion::v0_3);
  CHECK(a["metadata"][uri]["id"] == "a1");
  CHECK(a["extensions"] == json::array({uri}));
}

TEST_CASE("from_a2a(to_a2a(r)) gives r back, for every shape and type, in both versions") {
  for (const auto& type : every_type) {
    for (const auto& r : every_shape(type)) {
      for (const auto version : {A2AVersion::v1_0, A2AVersion::v0_3}) {
        json a = to_a2a(*r, version);
        INFO(a.dump());
        CHECK(*from_a2a(a, "acme") == *r);
        CHECK(*from_a2a(json::parse(a.dump()), "acme") == *r);  // through text, as on the wire
      }
    }
  }
}

TEST_CASE("from_a2a takes the tenant from the caller, never from the artifact") {
  json a = to_a2a(*base().value("x").build());
  a["metadata"][uri]["tenant_id"] = "intruder";
  CHECK(from_a2a(a, "acme")->tenant_id() == "acme");
  CHECK_THROWS_WITH(from_a2a(a, ""), "tenant_id: must not be empty");
}

TEST_CASE("from_a2a reads the v1.0 artifacts other agents make") {
  SECTION("text parts are joined into a document") {
    auto r = from_a2a(json::parse(R"({"artifactId":"x","name":"Report","parts":[{"text":"Hello, "},
      {"text":"world"}]})"),
                      "t");
    CHECK(r->value() == "Hello, world");
    CHECK(r->type() == ArtifactType::document);
    CHECK(r->title() == "Report");
    CHECK(r->metadata() == json::object());
  }
  SECTION("a data part gives its value, whatever JSON it is") {
    auto r = from_a2a(json::parse(R"({"artifactId":"x","parts":[{"data":[1,{"b":2}]}]})"), "t");
    CHECK(r->value() == json::parse(R"([1,{"b":2}])"));
    CHECK(r->type() == ArtifactType::structured);
    CHECK(r->title() == "x");  // no name: the id
    CHECK(from_a2a(json::parse(R"({"artifactId":"x","parts":[{"data":"s"}]})"), "t")->value() == "s");
  }
  SECTION("a url part gives a file record with its mediaType and filename") {
    auto r = from_a2a(json::parse(R"({"artifactId":"img","name":"chart","parts":[
      {"url":"https://cdn/x.png","filename":"chart.png","mediaType":"image/png"}]})"),
                      "t");
    CHECK(r->type() == ArtifactType::file);
    CHECK(r->storage_url() == "https://cdn/x.png");
    CHECK(r->mime_type() == "image/png");
    CHECK(r->metadata() == json({{"filename", "chart.png"}}));
    CHECK_FALSE(r->has_value());
    CHECK(to_a2a(*r)["parts"][0] == json::parse(R"({"url":"https://cdn/x.png","filename":"chart.png",
      "mediaType":"image/png"})"));
  }
  SECTION("a raw part gives the base64 text, marked") {
    auto r = from_a2a(json::parse(R"({"artifactId":"b","parts":[{"raw":"aGk=","filename":"hi.txt",
      "mediaType":"text/plain"}]})"),
                      "t");
    CHECK(r->value() == "aGk=");
    CHECK(r->type() == ArtifactType::file);
    CHECK(r->mime_type() == "text/plain");
    CHECK(r->metadata() == json({{"filename", "hi.txt"}, {"encoding", "base64"}}));
    CHECK(to_a2a(*r)["parts"][0] == json::parse(R"({"raw":"aGk=","filename":"hi.txt","mediaType":"text/plain"})"));
    // Beside a url part, which gives the file's name and type, the bytes are still marked.
    auto both = from_a2a(json::parse(R"({"artifactId":"b","parts":[{"raw":"aGk=","mediaType":"text/plain"},
      {"url":"https://x/y.txt"}]})"),
                         "t");
    CHECK(both->value() == "aGk=");
    CHECK(both->storage_url() == "https://x/y.txt");
    CHECK_FALSE(both->mime_type());
    CHECK(both->metadata() == json::parse(R"({"encoding":"base64","a2a_parts":[{"mediaType":"text/plain"},{}]})"));
    CHECK(to_a2a(*both)["parts"][0] == json({{"raw", "aGk="}}));
  }
  SECTION("mixed parts give an array; what the other parts carry is kept in a2a_parts") {
    auto r = from_a2a(json::parse(R"({"artifactId":"m","parts":[{"text":"a","mediaType":"text/markdown"},
      {"data":{"b":2},"metadata":{"trace":"t-1"}},{"url":"https://x/f.csv","mediaType":"text/csv"}]})"),
                      "t");
    CHECK(r->value() == json::parse(R"(["a",{"b":2}])"));
    CHECK(r->storage_url() == "https://x/f.csv");
    CHECK(r->mime_type() == "text/csv");
    CHECK_FALSE(r->metadata().contains("filename"));  // the part names none; reading takes none from the URL
    CHECK(r->metadata()["a2a_parts"] ==
          json::parse(R"([{"mediaType":"text/markdown"},{"metadata":{"trace":"t-1"}},{}])"));
  }
  SECTION("artifact metadata, other extensions and the proto's field names") {
    auto r = from_a2a(json::parse(R"({"artifact_id":"p","parts":[{"url":"https://x/y","media_type":"image/gif"}],
      "metadata":{"vendor":{"trace":"t-1"}},"extensions":["https://example.com/ext/ts/v1"]})"),
                      "t");
    CHECK(r->id() == "p");
    CHECK(r->mime_type() == "image/gif");
    CHECK(r->metadata()["a2a_metadata"] == json({{"vendor", {{"trace", "t-1"}}}}));
    CHECK(r->metadata()["a2a_extensions"] == json::array({"https://example.com/ext/ts/v1"}));
  }
  SECTION("a cairn reference inside an artifact is data") {
    json ref = to_a2a_part(ArtifactPart{"doc-1", std::string("Draft")});
    auto r = from_a2a(json{{"artifactId", "r"}, {"parts", {ref}}}, "t");
    CHECK(r->value() == json({{"artifact_id", "doc-1"}, {"title", "Draft"}}));
    CHECK(r->metadata()["a2a_parts"][0]["metadata"] == json({{uri, "reference"}}));
  }
}

TEST_CASE("from_a2a reads v0.3.0 artifacts") {
  SECTION("text, data and file parts") {
    auto r = from_a2a(json::parse(R"({"artifactId":"x","parts":[{"kind":"text","text":"Hello, "},
      {"kind":"text","text":"world"}]})"),
                      "t");
    CHECK(r->value() == "Hello, world");
    auto f = from_a2a(json::parse(R"({"artifactId":"img","parts":[
      {"kind":"file","file":{"uri":"https://cdn/x.png","mimeType":"image/png","name":"x.png"}}]})"),
                      "t");
    CHECK(f->storage_url() == "https://cdn/x.png");
    CHECK(f->mime_type() == "image/png");
    CHECK(f->metadata()["filename"] == "x.png");
    auto bytes = from_a2a(json::parse(R"({"artifactId":"b","parts":[{"kind":"file","file":{"bytes":"aGk="}}]})"), "t");
    CHECK(bytes->value() == "aGk=");
    CHECK(bytes->metadata()["encoding"] == "base64");
  }
  SECTION("data_part_compat is undone as the SDK does") {
    auto value = [](const char* part) {
      return from_a2a(json::parse(fmt::format(R"({{"artifactId":"x","parts":[{}]}})", part)), "t");
    };
    CHECK(value(R"({"kind":"data","data":{"value":[1,2]},"metadata":{"data_part_compat":true}})")->value() ==
          json::array({1, 2}));
    // The flag leaves the metadata; other keys stay.
    auto kept = value(R"({"kind":"data","data":{"value":3},"metadata":{"data_part_compat":true,"k":1}})");
    CHECK(kept->value() == 3);
    CHECK(kept->metadata()["a2a_parts"] == json::parse(R"([{"metadata":{"k":1}}])"));
    // Without a "value", the object itself; a flag that is not the boolean true unwraps nothing.
    CHECK(value(R"({"kind":"data","data":{"v":3},"metadata":{"data_part_compat":true}})")->value() == json({{"v", 3}}));
    auto not_flag = value(R"({"kind":"data","data":{"value":3},"metadata":{"data_part_compat":"yes"}})");
    CHECK(not_flag->value() == json({{"value", 3}}));
    CHECK(not_flag->metadata()["a2a_parts"][0]["metadata"] == json({{"data_part_compat", "yes"}}));
  }
  SECTION("what cairn wrote before v1.0: metadata.cairn and cairn_wrapped") {
    auto r = from_a2a(json::parse(R"({"artifactId":"a1","name":"Notes","parts":[{"kind":"data","data":{"value":[1,2]},
      "metadata":{"cairn_wrapped":true}}],"metadata":{"cairn":{"tenant_id":"other","version":3,"type":"data",
      "purpose":"p","created_at":5,"metadata":{"k":1}}}})"),
                      "t");
    CHECK(r->value() == json::array({1, 2}));
    CHECK(r->version() == 3);
    CHECK(r->type() == ArtifactType::data);
    CHECK(r->tenant_id() == "t");
    CHECK(r->metadata() == json({{"k", 1}}));
  }
}

TEST_CASE("from_a2a reads cairn's flags only when they are booleans") {
  // Found by tests/fuzz/fuzz_record (corpus/record/regression-a2a-flag-not-boolean.json): a string where a boolean
  // flag was expected escaped as a raw nlohmann::json::type_error.
  auto r = from_a2a(json::parse(R"({"artifactId":"a1","name":"Notes","parts":[{"kind":"data","data":{"value":[1,2]},
    "metadata":{"cairn_wrapped":"acme"}}],"metadata":{"cairn":{"type":"data","untitled":"yes"}}})"),
                    "t");
  CHECK(r->value() == json({{"value", {1, 2}}}));  // not unwrapped
  CHECK(r->title() == "Notes");                    // not untitled
}

TEST_CASE("from_a2a rejects what is not an A2A Artifact or what a record cannot hold, naming the part and member") {
  auto bad = [](const char* text) { return from_a2a(json::parse(text), "t"); };
  auto part = [](const char* p) {
    return from_a2a(json::parse(fmt::format(R"({{"artifactId":"x","parts":[{}]}})", p)), "t");
  };
  CHECK_THROWS_WITH(bad("[]"), "A2A Artifact: expected a JSON object, got array");
  CHECK_THROWS_WITH(bad(R"({"parts":[]})"), "A2A Artifact: missing required member 'artifactId'");
  CHECK_THROWS_WITH(bad(R"({"artifactId":"x"})"), "A2A Artifact: missing required member 'parts'");
  CHECK_THROWS_WITH(bad(R"({"artifactId":"x","parts":{}})"), "A2A Artifact.parts: expected an array, got object");
  CHECK_THROWS_WITH(bad(R"({"artifactId":"x","parts":[]})"), ContainsSubstring("a record needs a value"));
  CHECK_THROWS_WITH(bad(R"({"artifactId":"x","parts":[{"text":"a"}],"metadata":[]})"),
                    "A2A Artifact.metadata: expected an object, got array");
  CHECK_THROWS_WITH(bad(R"({"artifactId":"x","name":7,"parts":[{"text":"a"}]})"),
                    "A2A Artifact.name: expected a string, got number");
  CHECK_THROWS_WITH(bad(R"({"artifactId":"x","parts":[{"text":"a"}],"extensions":"u"})"),
                    "A2A Artifact.extensions: expected an array, got string");
  CHECK_THROWS_WITH(bad(R"({"artifactId":"x","parts":[{"text":"a"}],"extensions":["u",1]})"),
                    "A2A Artifact.extensions[1]: expected a string, got number");

  // v1.0 parts
  CHECK_THROWS_WITH(part(R"("text")"), "A2A Artifact.parts[0]: expected a JSON object, got string");
  CHECK_THROWS_WITH(part("{}"),
                    "A2A Artifact.parts[0]: has none of 'text', 'raw', 'url' and 'data' (a v1.0 Part "
                    "holds one of them; a v0.3.0 part has 'kind')");
  CHECK_THROWS_WITH(part(R"({"text":"a","url":"b"})"),
                    "A2A Artifact.parts[0]: has both 'text' and 'url' (a Part holds exactly one of text, raw, url and "
                    "data)");
  CHECK_THROWS_WITH(part(R"({"text":1})"), "A2A Artifact.parts[0].text: expected a string, got number");
  CHECK_THROWS_WITH(part(R"({"url":3})"), "A2A Artifact.parts[0].url: expected a string, got number");
  CHECK_THROWS_WITH(part(R"({"url":""})"), "A2A Artifact.parts[0].url: must not be empty");
  CHECK_THROWS_WITH(part(R"({"raw":"a$bc"})"), "A2A Artifact.parts[0].raw: is not base64: '$' at offset 1");
  CHECK_THROWS_WITH(part(R"({"raw":"abcde"})"),
                    "A2A Artifact.parts[0].raw: is not base64: its length leaves one character over");
  CHECK_THROWS_WITH(part(R"({"raw":"ab="})"),
                    "A2A Artifact.parts[0].raw: is not base64: padded with '=' to a length that is not a multiple "
                    "of 4");
  CHECK_THROWS_WITH(part(R"({"raw":"a==="})"),
                    "A2A Artifact.parts[0].raw: is not base64: more than two '=' at its end");
  CHECK_THROWS_WITH(part(R"({"text":"a","filename":1})"),
                    "A2A Artifact.parts[0].filename: expected a string, got number");
  CHECK_THROWS_WITH(part(R"({"text":"a","mediaType":true})"),
                    "A2A Artifact.parts[0].mediaType: expected a string, got boolean");
  CHECK_THROWS_WITH(part(R"({"text":"a","metadata":[]})"),
                    "A2A Artifact.parts[0].metadata: expected an object, got array");
  CHECK_THROWS_WITH(part(R"({"url":"https://x/y","mediaType":"pdf"})"),
                    "A2A Artifact.parts[0].mediaType: 'pdf' is not a MIME type of the form type/subtype");
  CHECK_THROWS_AS(part(R"({"url":"https://x/y","mediaType":"pdf"})"), invalid_artifact);
  CHECK_THROWS_WITH(bad(R"({"artifactId":"x","parts":[{"url":"https://a"},{"url":"https://b"}]})"),
                    "A2A Artifact.parts[1].url: a record holds one storage_url, and parts[0] gave it");
  CHECK_THROWS_WITH(bad(R"({"artifactId":"x","parts":[{"raw":"aGk="},{"text":"b"}]})"),
                    "A2A Artifact.parts[0].raw: inline bytes must be the only text, raw or data part of an artifact (a "
                    "record holds them as its one base64 value); this one has 2");

  // v0.3.0 parts
  CHECK_THROWS_WITH(part(R"({"kind":"text"})"), "A2A Artifact.parts[0]: missing required member 'text'");
  CHECK_THROWS_WITH(part(R"({"kind":5})"), "A2A Artifact.parts[0].kind: expected a string, got number");
  CHECK_THROWS_WITH(part(R"({"kind":"artifact","artifact_id":"y"})"),
                    "A2A Artifact.parts[0].kind: unknown kind 'artifact' (a v0.3.0 part is text, file or data)");
  CHECK_THROWS_WITH(part(R"({"kind":"file","file":[]})"),
                    "A2A Artifact.parts[0].file: expected a JSON object, got array");
  CHECK_THROWS_WITH(part(R"({"kind":"file","file":{}})"),
                    "A2A Artifact.parts[0].file: needs exactly one of 'uri' and 'bytes'");
  CHECK_THROWS_WITH(part(R"({"kind":"file","file":{"uri":"a","bytes":"b"}})"),
                    "A2A Artifact.parts[0].file: needs exactly one of 'uri' and 'bytes'");
  CHECK_THROWS_WITH(part(R"({"kind":"file","file":{"bytes":"!"}})"),
                    "A2A Artifact.parts[0].file.bytes: is not base64: '!' at offset 0");
  CHECK_THROWS_WITH(part(R"({"kind":"file","file":{"uri":""}})"), "A2A Artifact.parts[0].file.uri: must not be empty");
  CHECK_THROWS_WITH(part(R"({"kind":"file","file":{"uri":"u","name":1}})"),
                    "A2A Artifact.parts[0].file.name: expected a string, got number");
  CHECK_THROWS_WITH(part(R"({"kind":"file","file":{"uri":"u","mimeType":"x"}})"),
                    "A2A Artifact.parts[0].file.mimeType: 'x' is not a MIME type of the form type/subtype");
  CHECK_THROWS_WITH(part(R"({"kind":"data"})"), "A2A Artifact.parts[0]: missing required member 'data'");
  CHECK_THROWS_WITH(bad(R"({"artifactId":"x","parts":[{"kind":"file","file":{"uri":"a"}},
    {"kind":"file","file":{"uri":"b"}}]})"),
                    "A2A Artifact.parts[1].file.uri: a record holds one storage_url, and "
                    "parts[0] gave it");

  // cairn's extension
  json a = to_a2a(*base().value("hello").build());
  a["metadata"][uri] = json::array();
  CHECK_THROWS_WITH(from_a2a(a, "t"), R"(A2A Artifact.metadata["urn:cairn:a2a:v1"]: expected an object, got array)");
  a["metadata"][uri] = {{"version", -1}};
  CHECK_THROWS_WITH(from_a2a(a, "t"),
                    R"(A2A Artifact.metadata["urn:cairn:a2a:v1"].version: expected a non-negative integer, got -1)");
  a["metadata"][uri] = {{"type", "Bad Type"}};
  CHECK_THROWS_WITH(from_a2a(a, "t"), ContainsSubstring(R"(A2A Artifact.metadata["urn:cairn:a2a:v1"].type: )"));
  a["metadata"][uri] = {{"type", "document"}, {"metadata", 3}};
  CHECK_THROWS_WITH(from_a2a(a, "t"),
                    R"(A2A Artifact.metadata["urn:cairn:a2a:v1"].metadata: expected an object, got number)");
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
  nlohmann::json a = {{"artifactId", "deep"}, {"parts", nlohmann::json::array({{{"data", nlohmann::json::object()}}})}};
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
