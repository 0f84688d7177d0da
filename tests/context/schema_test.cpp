// Tool schemas: inputs (after @name resolution) and declared outputs are checked against the tool's whole JSON
// Schema, compiled once at registration; a refused call changes nothing (store, log, journal). Every check is
// bounded (issue 25): patterns run by RE2 in linear time, uniqueItems sorts, $ref loops and deep schemas are refused
// at registration, and a check past its step or depth budget refuses the value. Without CAIRN_WITH_SCHEMA (no RE2)
// a schema with `pattern` / `patternProperties` is refused unless the tool marks it unchecked.
#include <atomic>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/context/execution_context.hpp"
#include "cairn/context/schema.hpp"
#include "cairn/context/tool.hpp"
#include "cairn/run/memory_journal.hpp"
#include "cairn/run/run.hpp"
#include "catch.hpp"

using cairn::ExecutionContext;
using cairn::Tool;
using cairn::ToolCall;
using cairn::ToolRegistry;
using cairn::ToolResult;
using nlohmann::json;

namespace {

const json fetch_schema = json::parse(R"({
  "type": "object",
  "required": ["url", "port"],
  "additionalProperties": false,
  "definitions": {"retries": {"type": "integer", "minimum": 0, "maximum": 5}},
  "properties": {
    "url": {"type": "string", "minLength": 1},
    "port": {"type": "integer", "minimum": 1, "maximum": 65535},
    "method": {"enum": ["GET", "HEAD"]},
    "retries": {"$ref": "#/definitions/retries"},
    "headers": {"type": "array", "items": {"type": "object", "required": ["name"],
                "properties": {"name": {"type": "string"}, "value": {"type": "string"}}}}
  }
})");

struct Fixture {
  std::shared_ptr<cairn::InMemoryArtifactStore> store = std::make_shared<cairn::InMemoryArtifactStore>();
  ExecutionContext ctx{store, "acme"};
  ToolRegistry registry;
  std::shared_ptr<std::atomic<int>> runs = std::make_shared<std::atomic<int>>(0);
  std::shared_ptr<json> result = std::make_shared<json>("page text");

  Fixture() { registry.add(tool("fetch_page", fetch_schema)); }

  Tool tool(std::string name, json schema, std::optional<json> output_schema = std::nullopt) const {
    auto runs_ = runs;
    auto result_ = result;
    Tool t{std::move(name), "fetches a page", std::move(schema), [runs_, result_](const json&) {
             ++*runs_;
             return ToolResult::ok(*result_);
           }};
    t.output_schema = std::move(output_schema);
    return t;
  }

  // The message execute() throws for these inputs (the tool must not run), or "" when it runs.
  std::string refusal(const json& inputs, const std::string& tool_name = "fetch_page") {
    const int before = *runs;
    const json outputs = {{{"name", "page"}, {"type", "data"}, {"description", "d"}}};
    const ToolCall call = ToolCall::from_json({{"tool", tool_name}, {"inputs", inputs}, {"outputs", outputs}});
    try {
      (void)cairn::execute(call, ctx, registry);
    } catch (const cairn::invalid_argument& e) {
      REQUIRE(*runs == before);
      return e.what();
    }
    REQUIRE(*runs == before + 1);
    return "";
  }
};

}  // namespace

TEST_CASE("schema: a missing required input is refused before the tool runs") {
  Fixture f;
  CHECK(f.refusal({{"port", 80}}) == "fetch_page: input (top level): required: missing required property 'url'");
  CHECK(f.refusal({{"url", "https://example.com"}, {"port", 80}}).empty());
}

TEST_CASE("schema: wrong types, enum values and bounds are refused, naming the pointer and the rule") {
  Fixture f;
  CHECK(f.refusal({{"url", "u"}, {"port", "not-a-number"}}) ==
        "fetch_page: input /port: type: expected type integer, got string");
  CHECK(f.refusal({{"url", "u"}, {"port", 8.5}}) == "fetch_page: input /port: type: expected type integer, got number");
  CHECK(f.refusal({{"url", "u"}, {"port", 80}, {"method", "POST"}}) ==
        R"(fetch_page: input /method: enum: expected one of ["GET","HEAD"], got "POST")");
  CHECK(f.refusal({{"url", "u"}, {"port", 0}}) == "fetch_page: input /port: minimum: expected a number >= 1, got 0");
  CHECK(f.refusal({{"url", "u"}, {"port", 70000}}) ==
        "fetch_page: input /port: maximum: expected a number <= 65535, got 70000");
  CHECK(f.refusal({{"url", ""}, {"port", 1}}).find("fetch_page: input /url: minLength: ") == 0);
}

TEST_CASE("schema: nested objects and arrays are named by their JSON pointer") {
  Fixture f;
  const json headers = json::array({{{"name", "Accept"}}, {{"name", 7}}, {{"value", "x"}}});
  CHECK(f.refusal({{"url", "u"}, {"port", 1}, {"headers", headers}}) ==
        "fetch_page: input /headers/1/name: type: expected type string, got integer; "
        "input /headers/2: required: missing required property 'name'");
  CHECK(f.refusal({{"url", "u"}, {"port", 1}, {"headers", json::array({{{"name", "A"}, {"value", "b"}}})}}).empty());
}

TEST_CASE("schema: additionalProperties false refuses unknown inputs") {
  Fixture f;
  CHECK(f.refusal({{"url", "u"}, {"port", 1}, {"prot", 2}}) ==
        "fetch_page: input (top level): additionalProperties: property 'prot' is not allowed");
}

TEST_CASE("schema: a $ref inside the schema is followed") {
  Fixture f;
  CHECK(f.refusal({{"url", "u"}, {"port", 1}, {"retries", 9}}) ==
        "fetch_page: input /retries: maximum: expected a number <= 5, got 9");
  CHECK(f.refusal({{"url", "u"}, {"port", 1}, {"retries", "x"}}) ==
        "fetch_page: input /retries: type: expected type integer, got string");
  CHECK(f.refusal({{"url", "u"}, {"port", 1}, {"retries", 3}}).empty());
}

TEST_CASE("schema: many violations are reported up to a bound and the rest counted") {
  Fixture f;
  const json wrong = {{"url", 1},
                      {"port", "x"},
                      {"method", 2},
                      {"retries", -1},
                      {"headers", json::array({{{"value", 1}}, {{"value", 2}}})}};
  const std::string message = f.refusal(wrong);
  CHECK(message.find("fetch_page: input /") == 0);
  INFO(message);
  CHECK_THAT(message, Catch::EndsWith("; and 3 more"));  // 8 violations, 5 described
}

TEST_CASE("schema: a string that is not valid UTF-8 is refused before its characters are counted") {
  Fixture f;
  std::string bad = "a";
  bad.append(12, '\x80');  // a run of continuation bytes
  CHECK(f.refusal({{"url", bad}, {"port", 1}}) == "fetch_page: input /url: string: not valid UTF-8");
  CHECK(f.refusal({{"url", "h\xC3\xA9llo"}, {"port", 1}}).empty());
}

TEST_CASE("schema: inputs are checked after @name resolution") {
  Fixture f;
  f.ctx.add_artifact("cfg", cairn::ArtifactRecord::builder()
                                .type(cairn::ArtifactType::config)
                                .description("config")
                                .value({{"port", "8080"}, {"good_port", 8080}}));
  CHECK(f.refusal({{"url", "u"}, {"port", "@cfg#/port"}}) ==
        "fetch_page: input /port: type: expected type integer, got string");
  CHECK(f.refusal({{"url", "u"}, {"port", "@cfg#/good_port"}}).empty());
}

TEST_CASE("schema: an invalid schema is refused at registration, naming the tool and the place") {
  Fixture f;
  CHECK_THROWS_WITH(f.registry.add(f.tool("t1", json::parse(R"({"properties": {"port": {"type": "integr"}}})"))),
                    Catch::StartsWith("tool 't1': input_schema: not a valid JSON Schema: at /properties/port/type: "));
  CHECK_THROWS_WITH(f.registry.add(f.tool("t2", json::parse(R"({"properties": {"n": {"minimum": "1"}}})"))),
                    "tool 't2': input_schema: not a valid JSON Schema: at /properties/n/minimum: type: expected type "
                    "number, got string");
  CHECK_THROWS_WITH(f.registry.add(f.tool("t3", json::parse(R"({"$ref": "#/definitions/none"})"))),
                    Catch::StartsWith("tool 't3': input_schema: not a usable JSON Schema: "));
  CHECK_THROWS_WITH(f.registry.add(f.tool("t4", json::parse(R"({"$ref": "https://example.com/s.json"})"))),
                    "tool 't4': input_schema: not a usable JSON Schema: at /$ref: 'https://example.com/s.json' points "
                    "outside the schema (remote documents are never fetched)");
  CHECK_THROWS_WITH(f.registry.add(f.tool("t5", {{"type", "object"}}, json::parse(R"({"required": "x"})"))),
                    Catch::StartsWith("tool 't5': output_schema: not a valid JSON Schema: at /required: "));
  CHECK(f.registry.size() == 1);  // none of them registered
  CHECK(f.registry.find("t1") == nullptr);
}

TEST_CASE("schema: declared outputs are validated, a failing output is a tool failure and nothing is stored") {
  Fixture f;
  const json out_schema = json::parse(R"({"type": "object", "required": ["status"],
                                          "properties": {"status": {"type": "integer"}}})");
  f.registry.add(f.tool("status_of", {{"type", "object"}}, out_schema));
  const ToolCall call = ToolCall::from_json(
      {{"tool", "status_of"}, {"outputs", {{{"name", "status"}, {"type", "data"}, {"description", "HTTP status"}}}}});
  *f.result = {{"status", "200"}};
  const auto bad = cairn::execute(call, f.ctx, f.registry);
  CHECK_FALSE(bad.success);
  CHECK(bad.error ==
        "the tool's result does not match its output_schema: output /status: type: expected type "
        "integer, got string");
  CHECK(f.store->list("acme").items.empty());
  CHECK_FALSE(f.ctx.has_artifact("status"));
  REQUIRE(f.ctx.message_count() == 1);
  CHECK(f.ctx.message(0).content == "Tool status_of failed: " + bad.error);

  *f.result = {{"status", 200}};
  const auto good = cairn::execute(call, f.ctx, f.registry);
  REQUIRE(good.success);
  CHECK(*f.ctx.get_artifact_value("status") == 200);
}

TEST_CASE("schema: a refused call leaves the store, the log and the run's journal untouched") {
  Fixture f;
  auto journal = std::make_shared<cairn::InMemoryRunJournal>();
  cairn::Run run(journal, "acme", "r1");
  f.ctx.attach(run);
  f.ctx.add_message(cairn::Role::user, "fetch it");
  const auto seq = run.seq();
  const auto stored = f.store->list("acme").items.size();
  CHECK(f.refusal({{"url", "u"}, {"port", "eighty"}}) ==
        "fetch_page: input /port: type: expected type integer, got string");
  CHECK(run.seq() == seq);  // no "intended" entry
  CHECK(f.store->list("acme").items.size() == stored);
  CHECK(f.ctx.message_count() == 1);
  CHECK(f.refusal({{"url", "u"}, {"port", 80}}).empty());  // the same call with good inputs runs and is journalled
  CHECK(run.seq() > seq);
}

TEST_CASE("schema: one compiled schema serves several threads at once") {
  Fixture f;
  std::atomic<int> refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&f, &refused, t] {
      ExecutionContext ctx = ExecutionContext(f.store, "acme");
      for (int i = 0; i < 50; ++i) {
        const json port = (i + t) % 2 == 0 ? json(80) : json("eighty");
        try {
          (void)cairn::execute(
              ToolCall::from_json({{"tool", "fetch_page"}, {"inputs", {{"url", "u"}, {"port", port}}}}), ctx,
              f.registry);
        } catch (const cairn::invalid_argument&) {
          ++refused;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(refused == 100);
  CHECK(*f.runs == 100);
}

namespace {

// `{"items": {"items": ... {}}}` nested `levels` deep, built without recursion.
json nested_items(std::size_t levels) {
  json schema = json::object();
  for (std::size_t i = 0; i < levels; ++i) schema = json{{"items", std::move(schema)}};
  return schema;
}

// Rounds from the environment, a small default for CI.
std::size_t rounds(const char* name, std::size_t fallback) {
  const char* v = std::getenv(name);
  return v ? static_cast<std::size_t>(std::strtoul(v, nullptr, 10)) : fallback;
}

}  // namespace

#if CAIRN_WITH_SCHEMA

TEST_CASE("schema bounds: an exponential-backtracking pattern is checked in linear time (RE2)") {
  Fixture f;
  f.registry.add(f.tool("words", json::parse(R"({"type": "object",
      "properties": {"text": {"type": "string", "pattern": "^(\\w+\\s?)*$"}}})")));
  // 40 `a` and a `!`: std::regex (valijson) did not return within 10 s; here one linear pass.
  const std::string evil = std::string(40, 'a') + "!";
  CHECK(f.refusal({{"text", evil}}, "words") ==
        "words: input /text: pattern: \"" + evil + "\" does not match the pattern '^(\\w+\\s?)*$'");
  CHECK(f.refusal({{"text", "two words"}}, "words").empty());
  // Long subjects are fine too: RE2 does not recurse per character (std::regex overflowed the stack near 30,000).
  CHECK(f.refusal({{"text", std::string(200000, 'a')}}, "words").empty());
  CHECK_THAT(f.refusal({{"text", std::string(200000, 'a') + "!"}}, "words"),
             cairn_test::ContainsSubstring("words: input /text: pattern: "));
}

TEST_CASE("schema bounds: patternProperties run through RE2, and additionalProperties still applies") {
  Fixture f;
  f.registry.add(f.tool("tags", json::parse(R"({"type": "object", "additionalProperties": false,
      "patternProperties": {"^x-[a-z]+$": {"type": "string"}, "^n[0-9]+$": {"type": "integer"}}})")));
  CHECK(f.refusal({{"x-abc", "v"}, {"n12", 3}}, "tags").empty());
  CHECK(f.refusal({{"x-abc", 1}}, "tags") == "tags: input /x-abc: type: expected type string, got integer");
  CHECK(f.refusal({{"x-ABC", "v"}}, "tags") ==
        "tags: input (top level): additionalProperties: property 'x-ABC' is not allowed");
}

TEST_CASE("schema bounds: a pattern RE2 cannot run is refused at registration, naming the tool, the place and why") {
  Fixture f;
  CHECK_THROWS_WITH(
      f.registry.add(f.tool("backref", json::parse(R"({"properties": {"a": {"pattern": "^(a)\\1$"}}})"))),
      "tool 'backref': input_schema: not a usable JSON Schema: at /properties/a/pattern: the pattern '^(a)\\1$' cannot "
      "be checked: \\1 is a backreference, which RE2 (linear-time matching) does not run");
  CHECK_THROWS_WITH(
      f.registry.add(f.tool("look", json::parse(R"js({"patternProperties": {"^(?!x)": true}})js"))),
      "tool 'look': input_schema: not a usable JSON Schema: at /patternProperties/^(?!x): the pattern '^(?!x)' cannot "
      "be checked: (?! is a lookahead, which RE2 (linear-time matching) does not run");
  CHECK_THROWS_WITH(
      f.registry.add(f.tool("behind", {{"type", "object"}}, json::parse(R"({"pattern": "(?<=a)b"})"))),
      "tool 'behind': output_schema: not a usable JSON Schema: at /pattern: the pattern '(?<=a)b' cannot be "
      "checked: (?<= is a lookbehind, which RE2 (linear-time matching) does not run");
  CHECK_THROWS_WITH(f.registry.add(f.tool("unclosed", json::parse(R"({"pattern": "(ab"})"))),
                    Catch::StartsWith("tool 'unclosed': input_schema: not a usable JSON Schema: at /pattern: the "
                                      "pattern '(ab' is not one RE2 accepts: missing )"));
  CHECK(f.registry.size() == 1);
}

#else

TEST_CASE("schema bounds: without CAIRN_WITH_SCHEMA a pattern is refused unless the schema is marked unchecked") {
  STATIC_REQUIRE_FALSE(cairn::full_schema_validation);
  Fixture f;
  const json schema = json::parse(R"({"type": "object", "properties": {"path": {"type": "string",
                                      "pattern": "^[a-z]+$"}}})");
  CHECK_THROWS_WITH(f.registry.add(f.tool("p", schema)),
                    "tool 'p': input_schema: at /properties/path/pattern: this build cannot check the regular "
                    "expression '^[a-z]+$' (pattern and patternProperties need RE2: build cairn with "
                    "CAIRN_WITH_SCHEMA=ON), and the schema is not marked unchecked (Tool::unchecked_schema)");
  Tool unchecked = f.tool("p", schema);
  unchecked.unchecked_schema = true;
  f.registry.add(unchecked);
  CHECK(f.refusal({{"path", "NOT LOWER"}}, "p").empty());  // the pattern is skipped, as the host said
  CHECK(f.refusal({{"path", 7}}, "p") == "p: input /path: type: expected type string, got integer");  // the rest is not
}

#endif

TEST_CASE("schema bounds: uniqueItems over 100000 items is O(n log n)") {
  Fixture f;
  f.registry.add(f.tool("ids", json::parse(R"({"type": "object", "properties": {"ids": {"type": "array",
      "uniqueItems": true}}})")));
  json ids = json::array();
  for (int i = 0; i < 100000; ++i) ids.push_back(i * 7);  // distinct: valijson compared all 5e9 pairs
  CHECK(f.refusal({{"ids", ids}}, "ids").empty());
  ids.push_back(7 * 99998);
  ids.push_back(1.0);
  ids.push_back(json::object({{"a", 1}}));
  ids.push_back(json::object({{"a", 1.0}}));  // equal to the one before: 1 and 1.0 are the same number
  CHECK(f.refusal({{"ids", ids}}, "ids") == "ids: input /ids: uniqueItems: items 99998 and 100000 are equal");
  ids.erase(100000);
  CHECK(f.refusal({{"ids", ids}}, "ids") == "ids: input /ids: uniqueItems: items 100001 and 100002 are equal");
  // Arrays of integers or of strings take a sorting fast path: the same answers.
  const cairn::CompiledSchema unique(json::parse(R"({"uniqueItems": true})"), "unique");
  CHECK(unique.validate(json::parse("[18446744073709551615, -1, 5, -9223372036854775808, 5]")).at(0).message ==
        "items 2 and 4 are equal");
  CHECK(unique.validate(json::parse("[18446744073709551615, -1, 9223372036854775807, -9223372036854775808]")).empty());
  CHECK(unique.validate(json::parse(R"(["b", "a", "c", "a", "b"])")).at(0).message == "items 1 and 3 are equal");
  CHECK(unique.validate(json::parse(R"(["b", "a", "c", "a", "b"])")).size() == 1);
  CHECK(unique.validate(json::parse(R"(["a", "é", "e"])")).empty());
}

TEST_CASE("schema bounds: $ref loops are refused at registration, naming the tool and the pointer") {
  Fixture f;
  CHECK_THROWS_WITH(f.registry.add(f.tool("ab", json::parse(R"({"definitions": {
        "a": {"$ref": "#/definitions/b"}, "b": {"$ref": "#/definitions/a"}}, "$ref": "#/definitions/a"})"))),
                    Catch::StartsWith("tool 'ab': input_schema: not a usable JSON Schema: at /definitions/") &&
                        Catch::Contains("a loop of $ref / in-place subschemas that never moves into the value"));
  CHECK_THROWS_WITH(f.registry.add(f.tool("aa", json::parse(R"({"properties": {"x": {"$ref": "#/properties/x"}}})"))),
                    "tool 'aa': input_schema: not a usable JSON Schema: at /properties/x: a loop of $ref / in-place "
                    "subschemas that never moves into the value, so a check would never end: #/properties/x -> "
                    "#/properties/x");
  CHECK_THROWS_WITH(f.registry.add(f.tool("via_all_of", {{"type", "object"}}, json::parse(R"({"definitions": {
        "a": {"allOf": [{"$ref": "#/definitions/a"}]}}, "not": {"$ref": "#/definitions/a"}})"))),
                    Catch::StartsWith("tool 'via_all_of': output_schema: not a usable JSON Schema: at /definitions/a"));
  // Recursion that moves into the value is fine: a tree of nodes.
  f.registry.add(f.tool("tree", json::parse(R"({"$ref": "#/definitions/node", "definitions": {"node": {
        "type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/definitions/node"}},
        "name": {"type": "string"}}}}})")));
  CHECK(f.refusal({{"name", "r"}, {"children", {{{"name", "c"}, {"children", json::array()}}}}}, "tree").empty());
  CHECK(f.refusal({{"children", {{{"children", {{{"name", 1}}}}}}}}, "tree") ==
        "tree: input /children/0/children/0/name: type: expected type string, got integer");
  CHECK(f.registry.size() == 2);
}

TEST_CASE("schema bounds: a $ref chain longer than the limit is refused") {
  json defs = json::object();
  for (int i = 0; i < 40; ++i) defs["d" + std::to_string(i)] = {{"$ref", "#/definitions/d" + std::to_string(i + 1)}};
  defs["d40"] = {{"type", "integer"}};
  const json schema = {{"definitions", defs}, {"$ref", "#/definitions/d0"}};
  CHECK_THROWS_WITH(cairn::CompiledSchema(schema, "chain"),
                    Catch::StartsWith("chain: not a usable JSON Schema: at ") &&
                        Catch::Contains("a chain of 33 $refs one after another, more than the limit of 32"));
  cairn::SchemaLimits limits;
  limits.max_ref_chain = 41;
  const cairn::CompiledSchema ok(schema, "chain", limits);
  CHECK(ok.validate(3).empty());
  CHECK(ok.validate("3").at(0).rule == "type");
}

TEST_CASE("schema bounds: a schema nested 20000 deep is refused at registration without recursion") {
  Fixture f;
  json schema = {{"type", "object"}};
  schema["properties"]["list"] = nested_items(20000);  // moved in: nlohmann's copy recurses
  CHECK_THROWS_WITH(f.registry.add(f.tool("deep", std::move(schema))),
                    Catch::StartsWith("tool 'deep': input_schema: at /properties/list/items/items/") &&
                        Catch::EndsWith(": the schema is nested deeper than the limit of 128 levels"));
  CHECK(f.registry.find("deep") == nullptr);
  // At the limit (127 wrappers and the innermost {}: 128 levels) the schema passes the meta-schema check and compiles.
  const cairn::CompiledSchema at_limit(nested_items(127), "fine");
  json value = json::array();
  for (int i = 0; i < 127; ++i) value = json::array({std::move(value)});
  CHECK(at_limit.validate(value).empty());
}

TEST_CASE("schema bounds: a value deeper than the check's depth limit is refused, not a stack overflow") {
  const cairn::CompiledSchema tree(json::parse(R"({"items": {"$ref": "#"}, "type": "array"})"), "tree");
  auto deep_value = [] {
    json value = json::array();
    for (int i = 0; i < 20000; ++i) value = json::array({std::move(value)});
    return value;
  };
  json value = deep_value();
  std::size_t total = 0;
  const auto v = tree.validate(value, 5, &total);
  REQUIRE(v.size() == 1);
  CHECK(total == 1);
  CHECK(v[0].rule == "depth");
  CHECK(v[0].message ==
        "checking the value nested more than 1000 subschemas deep (SchemaLimits::max_check_depth); "
        "the value is refused");
  // enum / uniqueItems compare values recursively: a deep value is refused before any comparison.
  const cairn::CompiledSchema unique(json::parse(R"({"uniqueItems": true})"), "unique");
  json pair = json::array();  // built in place: nlohmann's copy recurses
  pair.push_back(deep_value());
  pair.push_back(deep_value());
  const auto u = unique.validate(pair);
  REQUIRE(u.size() == 1);
  CHECK(u[0].rule == "depth");
  json shallow = json::array();
  for (int i = 0; i < 100; ++i) shallow = json::array({std::move(shallow)});
  CHECK(tree.validate(shallow).empty());
  CHECK(unique.validate(json::array({shallow, shallow})).at(0).rule == "uniqueItems");
}

TEST_CASE("schema bounds: a check past its step budget fails the call and changes nothing") {
  // 24 levels of anyOf over two $refs to the next level: for a value that is not a string both branches explore
  // the whole rest, 2^24 paths for one value; a string passes the first branch at each level (linear).
  json defs = json::object();
  for (int i = 0; i < 24; ++i) {
    const json next = {{"$ref", "#/definitions/l" + std::to_string(i + 1)}};
    defs["l" + std::to_string(i)] = {{"anyOf", json::array({{{"allOf", json::array({next, {{"type", "string"}}})}},
                                                            {{"allOf", json::array({next, {{"type", "null"}}})}}})}};
  }
  defs["l24"] = {{"type", "string"}};
  const json schema = {
      {"type", "object"}, {"definitions", defs}, {"properties", {{"v", {{"$ref", "#/definitions/l0"}}}}}};
  Fixture f;
  f.registry.add(f.tool("blowup", schema));
  auto journal = std::make_shared<cairn::InMemoryRunJournal>();
  cairn::Run run(journal, "acme", "r1");
  f.ctx.attach(run);
  f.ctx.add_message(cairn::Role::user, "go");
  const auto seq = run.seq();
  const auto before = f.ctx.state();
  CHECK(f.refusal({{"v", 1}}, "blowup") ==
        "blowup: input (top level): budget: checking the value took more than its budget of 1000064 steps "
        "(SchemaLimits: 1000000 and 32 per node of the value); the value is refused");
  CHECK(run.seq() == seq);
  CHECK(f.ctx.state() == before);
  CHECK(f.store->list("acme").items.empty());
  CHECK(f.refusal({{"v", "s"}}, "blowup").empty());  // a string takes the first branch all the way down
}

TEST_CASE("schema bounds: an output check past its budget is a tool failure and stores nothing") {
  json defs = json::object();
  for (int i = 0; i < 24; ++i) {
    const json next = {{"$ref", "#/definitions/l" + std::to_string(i + 1)}};
    defs["l" + std::to_string(i)] = {{"anyOf", json::array({{{"allOf", json::array({next, {{"type", "string"}}})}},
                                                            {{"allOf", json::array({next, {{"type", "null"}}})}}})}};
  }
  defs["l24"] = {{"type", "string"}};
  Fixture f;
  f.registry.add(f.tool("out", {{"type", "object"}}, json{{"definitions", defs}, {"$ref", "#/definitions/l0"}}));
  *f.result = 7;
  const ToolCall call = ToolCall::from_json(
      {{"tool", "out"}, {"outputs", {{{"name", "o"}, {"type", "data"}, {"description", "the output"}}}}});
  const auto r = cairn::execute(call, f.ctx, f.registry);
  CHECK_FALSE(r.success);
  CHECK(r.error ==
        "the tool's result does not match its output_schema: output (top level): budget: checking the "
        "value took more than its budget of 1000032 steps (SchemaLimits: 1000000 and 32 per node of the "
        "value); the value is refused");
  CHECK(f.store->list("acme").items.empty());
  CHECK_FALSE(f.ctx.has_artifact("o"));
  *f.result = "fine";
  CHECK(cairn::execute(call, f.ctx, f.registry).success);
}

TEST_CASE("schema bounds: long compiled schemas are reused by many checks on many groups (no state outlives one)") {
  // The official suite's crash (issue 25) came from state shared between schemas; here schemas come and go.
  const std::size_t n = rounds("CAIRN_SCHEMA_ROUNDS", 200);
  for (std::size_t i = 0; i < n; ++i) {
    const cairn::CompiledSchema t(true, "t");
    const cairn::CompiledSchema fl(false, "f");
    CHECK(t.validate(json::array({i})).empty());
    const auto bad = fl.validate({{"i", i}});
    REQUIRE(bad.size() == 1);
    CHECK(bad[0].rule == "false");
    const cairn::CompiledSchema names(json::parse(R"({"propertyNames": {"maxLength": 3}})"), "names");
    CHECK(names.validate({{"abcd", i}}).at(0).rule == "propertyNames");
  }
}

TEST_CASE("schema: types, enums and the rest are checked in every build (fail closed)") {
  Fixture f;
  CHECK(f.refusal({{"url", "u"}, {"port", "not-a-number"}}) ==
        "fetch_page: input /port: type: expected type integer, got string");
  CHECK(f.refusal({{"url", "u"}, {"port", 80}, {"extra", 1}}) ==
        "fetch_page: input (top level): additionalProperties: property 'extra' is not allowed");
}

TEST_CASE("schema: date, time and date-time formats are checked, other formats are annotations") {
  const cairn::CompiledSchema date(json::parse(R"({"format": "date"})"), "d");
  CHECK(date.validate("2024-02-29").empty());
  CHECK(date.validate("2023-02-29").at(0).rule == "format");
  CHECK(date.validate("2023-13-01").at(0).rule == "format");
  CHECK(date.validate(7).empty());  // formats apply to strings only
  const cairn::CompiledSchema time(json::parse(R"({"format": "time"})"), "t");
  CHECK(time.validate("23:59:60.5Z").empty());
  CHECK(time.validate("08:30:06+02:00").empty());
  CHECK(time.validate("24:00:00Z").at(0).rule == "format");
  CHECK(time.validate("08:30:06").at(0).rule == "format");
  const cairn::CompiledSchema dt(json::parse(R"({"format": "date-time"})"), "dt");
  CHECK(dt.validate("1963-06-19T08:30:06.283185Z").empty());
  CHECK(dt.validate("1963-06-19 08:30:06Z").at(0).message ==
        "\"1963-06-19 08:30:06Z\" is not a valid date-time (RFC 3339)");
  CHECK(cairn::CompiledSchema(json::parse(R"({"format": "email"})"), "e").validate("not an email").empty());
}
