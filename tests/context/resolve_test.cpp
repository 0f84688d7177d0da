// @name references: what counts as one, resolve() at any depth, JSON pointers, the @@ escape, the error texts and
// the nesting limit.
#include <memory>
#include <string>
#include <vector>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/context/execution_context.hpp"
#include "cairn/context/resolve.hpp"
#include "catch.hpp"

using cairn::ArtifactRecord;
using cairn::ExecutionContext;
using nlohmann::json;

namespace {

ExecutionContext make_context() {
  ExecutionContext ctx(std::make_shared<cairn::InMemoryArtifactStore>(), "acme");
  auto add = [&ctx](const std::string& name, json value) {
    ctx.add_artifact(name, ArtifactRecord::builder().type("data").description(name).value(std::move(value)));
  };
  add("server_file", "/tmp/server.js");
  add("app_config", {{"port", 3000}, {"host", "localhost"}, {"tags", {"a", "b"}}, {"a/b", 1}, {"m~n", 2}, {"", 3}});
  add("zero", 0);
  add("flag", false);
  add("empty", "");
  add("bob", "Bob");
  return ctx;
}

json deep_array(int levels) {
  json root = json::array();
  json* cur = &root;
  for (int i = 1; i < levels; ++i) {
    cur->push_back(json::array());
    cur = &cur->back();
  }
  return root;
}

}  // namespace

TEST_CASE("parse_reference: exactly @ + a valid name, optionally # + pointer") {
  auto ref = cairn::parse_reference("@app_config");
  REQUIRE(ref);
  REQUIRE(ref->name == "app_config");
  REQUIRE_FALSE(ref->pointer);
  ref = cairn::parse_reference("@app_config#/port");
  REQUIRE(ref);
  REQUIRE(ref->name == "app_config");
  REQUIRE(*ref->pointer == "/port");
  ref = cairn::parse_reference("@x#");
  REQUIRE(ref);
  REQUIRE(ref->pointer->empty());
  for (const char* not_a_reference : {"", "@", "@@", "@@name", "name", "bob@example.com", "hi @bob", "@ home",
                                      "@bob smith", "@bob.smith", "@123", "@-x", "@bob!", " @bob", "@bob ", "@b/c"}) {
    INFO(not_a_reference);
    REQUIRE_FALSE(cairn::parse_reference(not_a_reference));
  }
  REQUIRE_FALSE(cairn::parse_reference("@" + std::string(129, 'a')));
  REQUIRE(cairn::parse_reference("@" + std::string(128, 'a')));
}

TEST_CASE("resolve replaces exact references at any depth by the artifact's value") {
  const ExecutionContext ctx = make_context();
  const json inputs = {{"command", "node"},
                       {"args", {"@server_file", "--port", "@app_config#/port"}},
                       {"env", "@app_config"},
                       {"nested", {{"deeper", {{{"x", {"@zero", "@flag", "@empty"}}}}}}},
                       {"@server_file", "keys are never references"},
                       {"n", 1.5},
                       {"t", true},
                       {"nothing", nullptr}};
  const json before = inputs;
  const json out = ctx.resolve(inputs);
  REQUIRE(out ==
          json{{"command", "node"},
               {"args", {"/tmp/server.js", "--port", 3000}},
               {"env", {{"port", 3000}, {"host", "localhost"}, {"tags", {"a", "b"}}, {"a/b", 1}, {"m~n", 2}, {"", 3}}},
               {"nested", {{"deeper", {{{"x", {0, false, ""}}}}}}},
               {"@server_file", "keys are never references"},
               {"n", 1.5},
               {"t", true},
               {"nothing", nullptr}});
  REQUIRE(inputs == before);  // the input is not touched
  REQUIRE(*ctx.get_artifact_value("app_config") == out["env"]);

  // A bare string or scalar input works too.
  REQUIRE(ctx.resolve("@server_file") == "/tmp/server.js");
  REQUIRE(ctx.resolve(7) == 7);
  REQUIRE(ctx.resolve(json::array()) == json::array());
  REQUIRE(ctx.resolve(json::object()) == json::object());
}

TEST_CASE("strings that merely contain an @ are left alone, @@ stands for a literal @") {
  const ExecutionContext ctx = make_context();
  const json alone = {"bob@example.com", "hi @bob", "@ home", "@bob smith", "@bob.smith", "@123", "@", "x@", "@-x"};
  REQUIRE(ctx.resolve(alone) == alone);
  REQUIRE(ctx.resolve(json{"@@bob", "@@", "@@@x", "@@ home", "@@missing#/p"}) ==
          json{"@bob", "@", "@@x", "@ home", "@missing#/p"});
  REQUIRE(ctx.resolve(json{"@bob"}) == json{"Bob"});
}

TEST_CASE("@name#/pointer picks a part of the value (RFC 6901)") {
  const ExecutionContext ctx = make_context();
  REQUIRE(ctx.resolve("@app_config#/host") == "localhost");
  REQUIRE(ctx.resolve("@app_config#/tags/1") == "b");
  REQUIRE(ctx.resolve("@app_config#/a~1b") == 1);
  REQUIRE(ctx.resolve("@app_config#/m~0n") == 2);
  REQUIRE(ctx.resolve("@app_config#/") == 3);
  REQUIRE(ctx.resolve("@app_config#") == *ctx.get_artifact_value("app_config"));
}

TEST_CASE("a pointer to nothing, or a malformed one, is an error naming the reference and where it was") {
  const ExecutionContext ctx = make_context();
  REQUIRE_THROWS_AS(ctx.resolve({{"env", "@app_config#/nope"}}), cairn::not_found);
  REQUIRE_THROWS_WITH(ctx.resolve({{"env", "@app_config#/nope"}}),
                      "Artifact part not found: @app_config#/nope at /env");
  REQUIRE_THROWS_WITH(ctx.resolve({{"args", {1, "@app_config#/tags/7"}}}),
                      "Artifact part not found: @app_config#/tags/7 at /args/1");
  REQUIRE_THROWS_WITH(ctx.resolve({{"a", "@app_config#/tags/-"}}),
                      "Artifact part not found: @app_config#/tags/- at /a");
  REQUIRE_THROWS_WITH(ctx.resolve({{"a", "@server_file#/x"}}), "Artifact part not found: @server_file#/x at /a");
  REQUIRE_THROWS_AS(ctx.resolve({{"env", "@app_config#port"}}), cairn::parse_error);
  REQUIRE_THROWS_WITH(ctx.resolve({{"env", "@app_config#port"}}),
                      cairn_test::ContainsSubstring("Malformed JSON pointer in @app_config#port at /env: "));
  REQUIRE_THROWS_WITH(ctx.resolve({{"env", "@app_config#/a~2"}}),
                      cairn_test::ContainsSubstring("Malformed JSON pointer in @app_config#/a~2 at /env: "));
}

TEST_CASE("a missing artifact throws artifact_not_found with the JSON pointer of the input") {
  const ExecutionContext ctx = make_context();
  REQUIRE_THROWS_AS(ctx.resolve({{"a", "@nope"}}), cairn::artifact_not_found);
  REQUIRE_THROWS_WITH(ctx.resolve({{"a", "@nope"}}), "Artifact not found: @nope at /a");
  REQUIRE_THROWS_WITH(ctx.resolve({{"args", {"@server_file", {{"x", {0, "@nope#/deep"}}}}}}),
                      "Artifact not found: @nope at /args/1/x/1");
  REQUIRE_THROWS_WITH(ctx.resolve({{"a/b", {{"m~n", "@nope"}}}}), "Artifact not found: @nope at /a~1b/m~0n");
  REQUIRE_THROWS_WITH(ctx.resolve("@nope"), "Artifact not found: @nope at the top level");
  // The not-found error is also a cairn::not_found and a cairn::error.
  REQUIRE_THROWS_AS(ctx.resolve("@nope"), cairn::not_found);
  REQUIRE_THROWS_AS(ctx.resolve("@nope"), cairn::error);
}

TEST_CASE("nesting deeper than the limit is limit_exceeded, even 100,000 levels deep") {
  const ExecutionContext ctx = make_context();
  const json hostile = deep_array(100000);
  REQUIRE_THROWS_AS(ctx.resolve(hostile), cairn::limit_exceeded);
  REQUIRE_THROWS_WITH(ctx.resolve(hostile), "resolve: input nesting is deeper than the limit of 256 levels");
  REQUIRE_THROWS_AS(cairn::references(hostile), cairn::limit_exceeded);

  cairn::ResolveOptions options;
  options.max_depth = 5;
  json ok = deep_array(5);
  REQUIRE(ctx.resolve(ok, options) == ok);
  REQUIRE(cairn::references(ok, options).empty());
  const json too_deep = deep_array(6);
  REQUIRE_THROWS_WITH(ctx.resolve(too_deep, options), "resolve: input nesting is deeper than the limit of 5 levels");
  REQUIRE_THROWS_AS(cairn::references(too_deep, options), cairn::limit_exceeded);
  // An object nests like an array does.
  json objects = {{"a", {{"b", {{"c", {{"d", {{"e", {{"f", 1}}}}}}}}}}}};
  REQUIRE_THROWS_AS(ctx.resolve(objects, options), cairn::limit_exceeded);
}

TEST_CASE("a depth limit above 1,000 resolves without recursion, with the same results and errors") {
  const ExecutionContext ctx = make_context();
  cairn::ResolveOptions options;
  options.max_depth = 200000;
  // 100,000 levels, with references at the bottom and halfway down.
  json deep = json::array();
  json* cur = &deep;
  for (int i = 1; i < 100000; ++i) {
    if (i == 50000) cur->push_back("@bob");
    cur->push_back(json::array());
    cur = &cur->back();
  }
  cur->push_back("@app_config#/port");
  cur->push_back("@@literal");
  const json out = ctx.resolve(deep, options);
  const json* o = &out;
  for (int i = 1; i < 100000; ++i) {
    if (i == 50000) {
      REQUIRE((*o)[0] == "Bob");
      o = &(*o)[1];
    } else {
      REQUIRE(o->size() == 1);
      o = &(*o)[0];
    }
  }
  REQUIRE(*o == json{3000, "@literal"});
  REQUIRE(cairn::references(deep, options) == std::vector<std::string>{"bob", "app_config"});

  cur->push_back("@nope");
  REQUIRE_THROWS_AS(ctx.resolve(deep, options), cairn::artifact_not_found);
  options.max_depth = 99999;
  REQUIRE_THROWS_WITH(ctx.resolve(deep, options), "resolve: input nesting is deeper than the limit of 99999 levels");

  // The same results as the default path on ordinary input.
  options.max_depth = 5000;
  const json inputs = {{"a", {"@bob", {{"b", "@app_config#/tags"}}}}, {"c", "@@x"}, {"d", 1}};
  REQUIRE(ctx.resolve(inputs, options) == ctx.resolve(inputs));
  REQUIRE_THROWS_WITH(ctx.resolve({{"a", {1, {{"b", "@nope"}}}}}, options), "Artifact not found: @nope at /a/1/b");
}

TEST_CASE("references lists the names used, once each, in order of appearance") {
  const json inputs = {{"a", "@first"},
                       {"b", {"@second#/x", "@first", "@@escaped", "mail@example.com", {{"c", "@third"}}}},
                       {"d", "@ not"}};
  REQUIRE(cairn::references(inputs) == std::vector<std::string>{"first", "second", "third"});
  REQUIRE(cairn::references("@solo") == std::vector<std::string>{"solo"});
  REQUIRE(cairn::references(json{{"x", 1}}).empty());
}

TEST_CASE("the resolved size is limited: 2,048 references to a 1 MiB artifact fail fast, naming where") {
  ExecutionContext ctx(std::make_shared<cairn::InMemoryArtifactStore>(), "acme");
  ctx.add_artifact("big", ArtifactRecord::builder().type("data").description("big").value(std::string(1 << 20, 'x')));
  ctx.add_artifact("small", ArtifactRecord::builder().type("data").description("s").value(json{{"k", "v"}}));
  json inputs = {{"args", json::array()}};
  for (int i = 0; i < 2048; ++i) inputs["args"].push_back("@big");
  // The default limit is 64 MiB of JSON text: the 65th copy crosses it (64 x (1 MiB + 2 quotes) > 64 MiB).
  CHECK(cairn::ResolveOptions{}.max_resolved_bytes == 64u * 1024u * 1024u);
  try {
    (void)ctx.resolve(inputs);
    FAIL("expected cairn::limit_exceeded");
  } catch (const cairn::limit_exceeded& e) {
    CHECK(std::string(e.what()) ==
          "resolve: @big at /args/63 would make the resolved input larger than the limit of 67108864 bytes "
          "(1048578 more bytes on top of 66060414)");
  }
  // A smaller limit, the same on the iterative path (depth limit above 1,000) and for a pointer into a value.
  cairn::ResolveOptions options;
  options.max_resolved_bytes = 3u << 20;
  CHECK_THROWS_WITH(ctx.resolve(inputs, options), cairn_test::ContainsSubstring("@big at /args/2 would make"));
  options.max_depth = 5000;
  CHECK_THROWS_WITH(ctx.resolve(inputs, options), cairn_test::ContainsSubstring("@big at /args/2 would make"));
  options.max_resolved_bytes = 8;
  CHECK_THROWS_WITH(ctx.resolve(json{"@small#/k", "@small#/k", "@small#/k"}, options),
                    cairn_test::ContainsSubstring("@small at /2 would make"));
  CHECK(ctx.resolve(json{"@small#/k", "@small#/k"}, options) == json{"v", "v"});  // 3 + 3 bytes fit
  CHECK_THROWS_WITH(ctx.resolve(json("@big"), options),
                    cairn_test::ContainsSubstring("@big at the top level would make"));
  // 0 means no limit.
  options.max_resolved_bytes = 0;
  options.max_depth = 256;
  json few = json::array({"@big", "@big", "@big"});
  CHECK(ctx.resolve(few, options)[2].get_ref<const std::string&>().size() == 1u << 20);
}
