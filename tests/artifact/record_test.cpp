#include "cairn/artifact/record.hpp"

#include <limits>
#include <type_traits>

#include "catch.hpp"

using cairn::ArtifactRecord;
using cairn::ArtifactType;
using cairn_test::ContainsSubstring;
using nlohmann::json;

namespace {
ArtifactRecord::Builder minimal() {
  auto b = ArtifactRecord::builder();
  b.tenant_id("acme").type(ArtifactType::data).title("t").value(1);
  return b;
}
}  // namespace

TEST_CASE("a record is immutable and shared as shared_ptr<const ArtifactRecord>") {
  static_assert(std::is_same_v<decltype(minimal().build()), std::shared_ptr<const ArtifactRecord>>);
  static_assert(!std::is_default_constructible_v<ArtifactRecord>);
  static_assert(std::is_const_v<std::remove_reference_t<decltype(std::declval<ArtifactRecord&>().value())>>);
  static_assert(std::is_const_v<std::remove_reference_t<decltype(std::declval<ArtifactRecord&>().metadata())>>);
  auto r = minimal().build();
  auto copy = r;  // sharing copies nothing
  CHECK(copy.get() == r.get());
}

TEST_CASE("the builder fills every field and applies the defaults") {
  auto r = ArtifactRecord::builder()
               .id("report-1")
               .tenant_id("acme")
               .type("document")
               .title("Quarterly report")
               .description("Q3 numbers")
               .value("# Q3")
               .storage_url("s3://b/q3.md")
               .mime_type("text/markdown; charset=utf-8")
               .size_bytes(4)
               .schema_url("https://example.com/s.json")
               .created_by("writer")
               .created_at(1700000000000)
               .metadata("tool_name", "draft")
               .metadata("success", true)
               .build();
  CHECK(r->id() == "report-1");
  CHECK(r->tenant_id() == "acme");
  CHECK(r->version() == 0);
  CHECK(r->type() == ArtifactType::document);
  CHECK(r->title() == "Quarterly report");
  CHECK(r->description() == "Q3 numbers");
  CHECK(r->purpose() == "Q3 numbers");  // purpose defaults to the description
  CHECK(r->value() == "# Q3");
  CHECK(r->has_value());
  CHECK(r->storage_url() == "s3://b/q3.md");
  CHECK(r->mime_type() == "text/markdown; charset=utf-8");
  CHECK(r->size_bytes() == 4u);
  CHECK(r->schema_url() == "https://example.com/s.json");
  CHECK(r->created_by() == "writer");
  CHECK(r->created_at() == 1700000000000);
  CHECK(r->metadata() == json({{"tool_name", "draft"}, {"success", true}}));

  auto m = minimal().build();
  CHECK(m->id().empty());
  CHECK(m->metadata() == json::object());
  CHECK(m->created_at() == 0);
  CHECK_FALSE(m->storage_url().has_value());
  CHECK(minimal().purpose("why").build()->purpose() == "why");
}

TEST_CASE("revise shares the value and clears what the store assigns, to_builder keeps everything") {
  auto v1 = minimal().id("x").version(3).created_at(5).value(json{{"big", "content"}}).build();
  auto v2 = v1->revise().build();
  CHECK(v2->shared_value().get() == v1->shared_value().get());  // not copied
  CHECK(v2->version() == 0);
  CHECK(v2->created_at() == 0);
  CHECK(v2->id() == "x");
  auto same = v1->to_builder().build();
  CHECK(*same == *v1);
  CHECK(*v2 != *v1);
}

TEST_CASE("validation names the field that is wrong") {
  SECTION("tenant_id") {
    CHECK_THROWS_WITH(minimal().tenant_id("").build(), "tenant_id: must not be empty");
    CHECK_THROWS_WITH(minimal().tenant_id(std::string(257, 't')).build(),
                      "tenant_id: must be at most 256 bytes (got 257)");
    CHECK_THROWS_WITH(minimal().tenant_id("a\tb").build(), ContainsSubstring("tenant_id: must not contain control"));
  }
  SECTION("id") {
    CHECK_NOTHROW(minimal().id("").build());  // the store assigns one
    CHECK_THROWS_WITH(minimal().id(std::string(300, 'i')).build(), ContainsSubstring("id: must be at most 256"));
    CHECK_THROWS_WITH(minimal().id("line\nbreak").build(), ContainsSubstring("id: must not contain control"));
    CHECK_THROWS_WITH(minimal().id(" padded").build(), ContainsSubstring("id: must not start or end with a space"));
  }
  SECTION("type") {
    auto b = ArtifactRecord::builder();
    b.tenant_id("acme").title("t").value(1);
    CHECK_THROWS_WITH(b.build(), "type: must be set");
    CHECK_THROWS_AS(minimal().type("Not-A-Token"), cairn::invalid_artifact);
  }
  SECTION("title and description") {
    CHECK_THROWS_WITH(minimal().title("").build(), "title, description: at least one of them must be non-empty");
    CHECK_NOTHROW(minimal().title("").description("only a description").build());
    CHECK_NOTHROW(minimal().title(std::string(500, 'x')).build());
    CHECK_THROWS_WITH(minimal().title(std::string(501, 'x')).build(),
                      "title: must be at most 500 characters (got 501)");
    // Characters, not bytes: 500 two-byte characters are fine.
    std::string umlauts;
    for (int i = 0; i < 500; ++i) umlauts += "ü";
    CHECK_NOTHROW(minimal().title(umlauts).build());
  }
  SECTION("value and storage_url") {
    auto b = ArtifactRecord::builder();
    b.tenant_id("acme").type("data").title("t");
    CHECK_THROWS_WITH(b.build(), "value, storage_url: a record needs a value or a storage_url (or both)");
    CHECK_THROWS_AS(b.value(json(nullptr)).build(), cairn::invalid_artifact);  // null is no value
    CHECK_NOTHROW(b.storage_url("file:///x").build());
    CHECK_THROWS_WITH(minimal().storage_url("").build(), "storage_url: must not be empty when set");
    CHECK_THROWS_WITH(minimal().schema_url("\x01").build(), ContainsSubstring("schema_url: must not contain control"));
    // Falsy values are values.
    CHECK(minimal().value(0).build()->has_value());
    CHECK(minimal().value(false).build()->has_value());
    CHECK(minimal().value("").build()->has_value());
    CHECK(minimal().value(json::array()).build()->has_value());
  }
  SECTION("mime_type") {
    for (const char* ok : {"text/plain", "application/vnd.api+json", "image/svg+xml", "text/plain;charset=utf-8",
                           "multipart/form-data; boundary=abc"}) {
      INFO(ok);
      CHECK_NOTHROW(minimal().mime_type(ok).build());
    }
    for (const char* bad : {"", "text", "text/", "/plain", "text/plain/x", "te xt/plain", "text/plain; =x",
                            "text/plain; charset", "text/pla\nin", "-text/plain"}) {
      INFO(bad);
      CHECK_THROWS_WITH(minimal().mime_type(bad).build(), ContainsSubstring("mime_type: '"));
    }
  }
  SECTION("metadata, created_by, created_at") {
    CHECK_THROWS_WITH(minimal().metadata(json::array()).build(), "metadata: must be a JSON object, got array");
    CHECK_THROWS_WITH(minimal().created_by("").build(), "created_by: must not be empty");
    CHECK_THROWS_WITH(minimal().created_at(-1).build(), "created_at: must not be negative (got -1)");
  }
}

TEST_CASE("JSON round trip through ADL to_json and get<ArtifactRecord>") {
  auto r = ArtifactRecord::builder()
               .id("x")
               .tenant_id("t")
               .version(2)
               .type("config")
               .title("cfg")
               .description("d")
               .purpose("p")
               .value({{"host", "localhost"}, {"port", 8080}})
               .mime_type("application/json")
               .size_bytes(10)
               .created_by("agent")
               .created_at(123)
               .metadata({{"k", 1}})
               .build();
  json j = *r;
  CHECK(j == json::parse(R"({"id":"x","tenant_id":"t","version":2,"type":"config","title":"cfg","description":"d",
    "purpose":"p","value":{"host":"localhost","port":8080},"mime_type":"application/json","size_bytes":10,
    "created_by":"agent","created_at":123,"metadata":{"k":1}})"));
  CHECK(j.get<ArtifactRecord>() == *r);
  CHECK(*ArtifactRecord::from_json(j) == *r);
  CHECK(*ArtifactRecord::parse(j.dump()) == *r);

  auto url_only = minimal().value(json(nullptr)).storage_url("s3://x").build();
  json u = *url_only;
  CHECK_FALSE(u.contains("value"));
  CHECK(*ArtifactRecord::from_json(u) == *url_only);
}

TEST_CASE("from_json rejects bad input with the field named") {
  const json good = json::parse(R"({"tenant_id":"t","type":"data","title":"x","value":1})");
  CHECK_NOTHROW(ArtifactRecord::from_json(good));
  auto with = [&](const char* key, json v) {
    json j = good;
    j[key] = std::move(v);
    return j;
  };
  CHECK_THROWS_WITH(ArtifactRecord::from_json(json::array()), "record: expected a JSON object, got array");
  CHECK_THROWS_WITH(ArtifactRecord::from_json(with("title", 5)), "title: expected a string, got number");
  CHECK_THROWS_WITH(ArtifactRecord::from_json(with("version", -1)), "version: expected a non-negative integer, got -1");
  CHECK_THROWS_WITH(ArtifactRecord::from_json(with("version", 1.5)),
                    "version: expected a non-negative integer, got 1.5");
  CHECK_THROWS_WITH(ArtifactRecord::from_json(with("type", "BAD")), ContainsSubstring("type: 'BAD'"));
  CHECK_THROWS_WITH(ArtifactRecord::from_json(with("tenant_id", "")), "tenant_id: must not be empty");
  CHECK_THROWS_WITH(ArtifactRecord::from_json(with("metadata", "x")), "metadata: must be a JSON object, got string");
  CHECK_THROWS_WITH(ArtifactRecord::from_json(with("created_at", "now")),
                    ContainsSubstring("created_at: expected a non-negative integer"));
  json no_value = good;
  no_value.erase("value");
  CHECK_THROWS_AS(ArtifactRecord::from_json(no_value), cairn::invalid_artifact);
  CHECK_THROWS_AS(ArtifactRecord::parse("{not json"), cairn::parse_error);
  CHECK_THROWS_WITH(ArtifactRecord::parse("{not json"), ContainsSubstring("artifact record: invalid JSON"));
}

TEST_CASE("a number too large for a double is a parse error, not a stray nlohmann exception") {
  // Found by tests/fuzz/fuzz_record (corpus/record/regression-number-overflow.json).
  CHECK_THROWS_AS(ArtifactRecord::parse(R"({"tenant_id":"t","type":"data","title":"x","value":66e666666666})"),
                  cairn::parse_error);
  CHECK_THROWS_WITH(ArtifactRecord::parse("[1e99999]"),
                    ContainsSubstring("artifact record: invalid JSON: number overflow parsing '1e99999'"));
}

TEST_CASE("parse enforces size and depth limits without crashing") {
  cairn::JsonLimits small;
  small.max_bytes = 10;
  CHECK_THROWS_AS(ArtifactRecord::parse(R"({"tenant_id":"t","type":"data","title":"x","value":1})", small),
                  cairn::limit_exceeded);
  // 100,000 levels of nesting: a clear error, not a stack overflow.
  std::string deep = R"({"tenant_id":"t","type":"data","title":"x","value":)";
  deep += std::string(100000, '[') + std::string(100000, ']') + "}";
  CHECK_THROWS_WITH(ArtifactRecord::parse(deep), ContainsSubstring("nesting is deeper than the limit of 256"));
  // Exactly at the limit is fine.
  cairn::JsonLimits shallow;
  shallow.max_depth = 3;
  CHECK_NOTHROW(ArtifactRecord::parse(R"({"tenant_id":"t","type":"data","title":"x","value":[[1]]})", shallow));
  CHECK_THROWS_AS(ArtifactRecord::parse(R"({"tenant_id":"t","type":"data","title":"x","value":[[[1]]]})", shallow),
                  cairn::limit_exceeded);
}

TEST_CASE("with_identity replaces only id, version and created_at, validating the id") {
  auto r = minimal().description("d").metadata("k", 1).build();
  auto s = r->with_identity("new-id", 7, 99);
  CHECK(s->id() == "new-id");
  CHECK(s->version() == 7);
  CHECK(s->created_at() == 99);
  CHECK(s->shared_value().get() == r->shared_value().get());
  CHECK(*s->to_builder().id("").version(0).created_at(0).build() == *r);
  CHECK_THROWS_WITH(r->with_identity("", 1, 1), "id: must not be empty");
  CHECK_THROWS_WITH(r->with_identity("a\nb", 1, 1), ContainsSubstring("id: must not contain control"));
  CHECK_THROWS_WITH(r->with_identity("x", 1, -5), "created_at: must not be negative (got -5)");
}

namespace {
// Runs `f`, which must throw cairn::invalid_artifact, and returns its message.
template <typename F>
std::string invalid_artifact_message(F&& f) {
  try {
    f();
  } catch (const cairn::invalid_artifact& e) {
    return e.what();
  }
  FAIL("expected cairn::invalid_artifact");
  return {};
}
}  // namespace

TEST_CASE("non-finite numbers are refused at build time, naming the field and the JSON pointer") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(invalid_artifact_message([&] { (void)minimal().value(nan).build(); }) ==
        "value: holds a non-finite number (NaN) at the top level; JSON has no NaN or Infinity");
  CHECK(invalid_artifact_message([&] {
          (void)minimal().value(json{{"a", {1, 2, -inf}}}).build();
        }) == "value: holds a non-finite number (-Infinity) at /a/2; JSON has no NaN or Infinity");
  CHECK(invalid_artifact_message([&] {
          (void)minimal().value(json{{"x/y~z", inf}}).build();
        }) == "value: holds a non-finite number (Infinity) at /x~1y~0z; JSON has no NaN or Infinity");
  CHECK(invalid_artifact_message([&] { (void)minimal().metadata("score", nan).build(); }) ==
        "metadata: holds a non-finite number (NaN) at /score; JSON has no NaN or Infinity");
  // build_value and from_json go the same way.
  CHECK_THROWS_AS(minimal().value(json::array({nan})).build_value(), cairn::invalid_artifact);
  json j = *minimal().build();
  j["value"] = json{{"deep", {{"deeper", {nan}}}}};
  CHECK(invalid_artifact_message([&] { (void)ArtifactRecord::from_json(j); }) ==
        "value: holds a non-finite number (NaN) at /deep/deeper/0; JSON has no NaN or Infinity");
  // Finite extremes stay.
  CHECK_NOTHROW(minimal().value(json{std::numeric_limits<double>::max(), -0.0, 5e-324}).build());
}

TEST_CASE("invalid UTF-8 is refused in every string field and inside value and metadata") {
  const std::string bad = "caf\xC3";        // a truncated sequence
  const std::string overlong = "\xC0\xAF";  // an overlong '/'
  const std::string surrogate = "\xED\xA0\x80";
  auto msg = [](auto&& f) { return invalid_artifact_message(f); };
  CHECK(msg([&] { (void)minimal().id(bad).build(); }) == "id: is not valid UTF-8 ('caf\\xc3')");
  CHECK(msg([&] { (void)minimal().tenant_id(overlong).build(); }) == "tenant_id: is not valid UTF-8 ('\\xc0\\xaf')");
  CHECK(msg([&] { (void)minimal().title(bad).build(); }) == "title: is not valid UTF-8 ('caf\\xc3')");
  CHECK(msg([&] { (void)minimal().description(surrogate).build(); }) ==
        "description: is not valid UTF-8 ('\\xed\\xa0\\x80')");
  CHECK(msg([&] { (void)minimal().purpose(bad).build(); }) == "purpose: is not valid UTF-8 ('caf\\xc3')");
  CHECK(msg([&] { (void)minimal().storage_url("s3://" + bad).build(); }) ==
        "storage_url: is not valid UTF-8 ('s3://caf\\xc3')");
  CHECK(msg([&] { (void)minimal().mime_type("text/plain; x=" + bad).build(); }) ==
        "mime_type: is not valid UTF-8 ('text/plain; x=caf\\xc3')");
  CHECK(msg([&] { (void)minimal().schema_url(bad).build(); }) == "schema_url: is not valid UTF-8 ('caf\\xc3')");
  CHECK(msg([&] { (void)minimal().created_by(bad).build(); }) == "created_by: is not valid UTF-8 ('caf\\xc3')");
  CHECK(msg([&] { (void)minimal().value(bad).build(); }) ==
        "value: holds a string that is not valid UTF-8 at the top "
        "level ('caf\\xc3')");
  CHECK(msg([&] {
          (void)minimal().value(json{{"k", {"ok", bad}}}).build();
        }) == "value: holds a string that is not valid UTF-8 at /k/1 ('caf\\xc3')");
  json with_bad_key = json::object();
  with_bad_key["n"][bad] = 1;
  CHECK(msg([&] { (void)minimal().value(with_bad_key).build(); }) ==
        "value: holds an object key that is not valid UTF-8 at /n/caf\\xc3");
  CHECK(msg([&] { (void)minimal().metadata("tool_name", bad).build(); }) ==
        "metadata: holds a string that is not valid UTF-8 at /tool_name ('caf\\xc3')");
  CHECK(msg([&] { (void)minimal().metadata(with_bad_key).build(); }) ==
        "metadata: holds an object key that is not valid UTF-8 at /n/caf\\xc3");
  CHECK_THROWS_AS(minimal().build()->with_identity(bad, 1, 1), cairn::invalid_artifact);
  // Every valid code point, 1 to 4 bytes, passes; so does U+0000 inside a value.
  CHECK_NOTHROW(minimal()
                    .id("id-\xC3\xA9-\xE2\x82\xAC-\xF0\x9F\x98\x80")
                    .title("\xF4\x8F\xBF\xBF")
                    .value(json{{"\xE4\xB8\x96", std::string("a\0b", 3)}})
                    .build());
  // The error message itself is valid UTF-8, so it can travel in JSON (an MCP error, a log line).
  const std::string m = msg([&] { (void)minimal().value(json{{"k", bad}}).build(); });
  CHECK_NOTHROW(json(m).dump());
}

TEST_CASE("a value is walked once per build, records revised from a checked one are not walked again") {
  // Not a timing test: a revision of a stored record shares the already-checked value, and a fresh value set on
  // the revision is checked again.
  auto r = minimal().value(json{{"a", 1.5}}).build();
  CHECK_NOTHROW(r->revise().title("t2").build());
  CHECK_THROWS_AS(r->revise().value(json{{"a", std::numeric_limits<double>::infinity()}}).build(),
                  cairn::invalid_artifact);
  CHECK_THROWS_AS(r->revise().metadata("m", std::numeric_limits<double>::quiet_NaN()).build(), cairn::invalid_artifact);
  auto shared = std::make_shared<const json>(json{std::numeric_limits<double>::quiet_NaN()});
  CHECK_THROWS_AS(r->revise().shared_value(shared).build(), cairn::invalid_artifact);
}

TEST_CASE("a shared value that passed is remembered by identity, never by address alone") {
  // The checked-value memo (one per thread) lets one document shared into many records be walked once. It must
  // still walk every other document: a different one, a sub-document aliasing the same owner, and a new document
  // allocated where a checked one was freed.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto good = std::make_shared<const json>(json{{"rows", json::array({1, 2})}});
  CHECK_NOTHROW(minimal().shared_value(good).build());
  CHECK_NOTHROW(minimal().shared_value(good).build());  // the same document again
  auto bad = std::make_shared<const json>(json{{"rows", json::array({nan})}});
  CHECK_THROWS_AS(minimal().shared_value(bad).build(), cairn::invalid_artifact);
  CHECK_NOTHROW(minimal().shared_value(good).build());
  // Aliasing: same owner as a checked document, another object.
  auto owner = std::make_shared<json>(json{{"ok", 1}, {"bad", json{{"x", nan}}}});
  std::shared_ptr<const json> whole(owner, owner.get());
  std::shared_ptr<const json> part(owner, &(*owner)["bad"]);
  CHECK_THROWS_AS(minimal().shared_value(whole).build(), cairn::invalid_artifact);
  (*owner)["bad"] = json{{"x", 1}};
  CHECK_NOTHROW(minimal().shared_value(whole).build());
  (*owner)["bad"] = json{{"x", nan}};
  CHECK_THROWS_AS(minimal().shared_value(part).build(), cairn::invalid_artifact);
  // Freed and reallocated: whatever address the new document gets, it is checked.
  for (int i = 0; i < 50; ++i) {
    {
      auto fine = std::make_shared<const json>(json{{"rows", json::array({i})}});
      REQUIRE_NOTHROW(minimal().shared_value(fine).build());
    }
    auto poisoned = std::make_shared<const json>(json{{"rows", json::array({nan})}});
    REQUIRE_THROWS_AS(minimal().shared_value(poisoned).build(), cairn::invalid_artifact);
  }
}

TEST_CASE("with_version keeps the record's own id and shares everything else") {
  auto r = minimal().id("doc-1").description("d").build();
  auto s = r->with_version(3, 42);
  CHECK(s->id() == "doc-1");
  CHECK(s->version() == 3);
  CHECK(s->created_at() == 42);
  // Stamping copies no field: the stamped record reads the very strings of the record it came from.
  CHECK(&s->title() == &r->title());
  CHECK(&s->description() == &r->description());
  CHECK(&s->tenant_id() == &r->tenant_id());
  CHECK(*s->to_builder().version(0).created_at(0).build() == *r);
  CHECK_THROWS_WITH(minimal().build()->with_version(1, 1), "id: must not be empty");
  CHECK_THROWS_WITH(r->with_version(1, -1), "created_at: must not be negative (got -1)");
  // with_identity under the same id also shares; another id is the stamped record's own.
  auto same = r->with_identity("doc-1", 2, 5);
  CHECK(same->id() == "doc-1");
  CHECK(&same->title() == &r->title());
  auto other = same->with_identity("doc-2", 1, 5);
  CHECK(other->id() == "doc-2");
  CHECK(r->id() == "doc-1");
  CHECK(other->with_version(9, 9)->id() == "doc-2");
  CHECK(other->revise().build()->id() == "doc-2");
  CHECK(*other != *same);
}

TEST_CASE("a purpose equal to the description reads back the same, and revise keeps it") {
  auto r = minimal().description("why").purpose("why").build();
  CHECK(r->purpose() == "why");
  CHECK(&r->purpose() == &r->description());  // kept once
  CHECK(*r == *minimal().description("why").build());
  auto revised = r->revise().description("new").build();
  CHECK(revised->purpose() == "why");  // revise carries the purpose the record had
  CHECK(revised->description() == "new");
  CHECK(minimal().description("d").purpose("p").build()->purpose() == "p");
}

TEST_CASE("the rarely set fields read back alone and together, and take part in equality") {
  auto plain = minimal().build();
  CHECK_FALSE(plain->storage_url());
  CHECK_FALSE(plain->mime_type());
  CHECK_FALSE(plain->size_bytes());
  CHECK_FALSE(plain->schema_url());
  CHECK_FALSE(plain->created_by());
  CHECK(plain->purpose().empty());
  auto creator = minimal().created_by("agent-1").build();
  CHECK(creator->created_by() == std::optional<std::string>("agent-1"));
  CHECK_FALSE(creator->mime_type());
  CHECK(*creator != *plain);
  auto sized = minimal().size_bytes(0).build();  // a size of 0 is set, not absent
  CHECK(sized->size_bytes() == std::optional<std::uint64_t>(0));
  CHECK(*sized != *plain);
  auto all = minimal()
                 .purpose("p")
                 .storage_url("s3://b/k")
                 .mime_type("text/plain")
                 .size_bytes(3)
                 .schema_url("https://x/s.json")
                 .created_by("me")
                 .build();
  CHECK(*all == *all->to_builder().build());
  CHECK(*ArtifactRecord::from_json(nlohmann::json(*all)) == *all);
}
