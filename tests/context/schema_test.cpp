// Tool schemas: inputs (after @name resolution) and declared outputs are checked against the tool's whole JSON
// Schema, compiled once at registration; a refused call changes nothing (store, log, journal). Without valijson
// (CAIRN_WITH_SCHEMA off) only the top-level `required` keys are checked, and only those cases run.
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "cairn/artifact/memory_store.hpp"
#include "cairn/context/execution_context.hpp"
#include "cairn/context/schema.hpp"
#include "cairn/context/tool.hpp"
#include "cairn/detail/schema_regex_reach.hpp"
#include "cairn/run/memory_journal.hpp"
#include "cairn/run/run.hpp"

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

#if CAIRN_WITH_SCHEMA

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
  const json wrong = {{"url", 1},     {"port", "x"}, {"method", 2},
                      {"retries", -1}, {"headers", json::array({{{"value", 1}}, {{"value", 2}}})}};
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
                    "tool 't4': input_schema: not a usable JSON Schema: Fetching of remote JSON References not "
                    "enabled.");
  CHECK_THROWS_WITH(f.registry.add(f.tool("t5", {{"type", "object"}}, json::parse(R"({"required": "x"})"))),
                    Catch::StartsWith("tool 't5': output_schema: not a valid JSON Schema: at /required: "));
  CHECK(f.registry.size() == 1);  // none of them registered
  CHECK(f.registry.find("t1") == nullptr);
}

TEST_CASE("schema: declared outputs are validated; a failing output is a tool failure and nothing is stored") {
  Fixture f;
  const json out_schema = json::parse(R"({"type": "object", "required": ["status"],
                                          "properties": {"status": {"type": "integer"}}})");
  f.registry.add(f.tool("status_of", {{"type", "object"}}, out_schema));
  const ToolCall call = ToolCall::from_json(
      {{"tool", "status_of"}, {"outputs", {{{"name", "status"}, {"type", "data"}, {"description", "HTTP status"}}}}});
  *f.result = {{"status", "200"}};
  const auto bad = cairn::execute(call, f.ctx, f.registry);
  CHECK_FALSE(bad.success);
  CHECK(bad.error == "the tool's result does not match its output_schema: output /status: type: expected type "
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
          (void)cairn::execute(ToolCall::from_json({{"tool", "fetch_page"}, {"inputs", {{"url", "u"}, {"port", port}}}}), ctx,
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

TEST_CASE("schema: a string too long for a pattern is refused before std::regex sees it; other long strings pass") {
  Fixture f;
  f.registry.add(f.tool("write_file", json::parse(R"({
    "type": "object",
    "required": ["path", "content"],
    "properties": {
      "path": {"type": "string", "pattern": "^[a-z/._]+$"},
      "content": {"type": "string", "maxLength": 1000000},
      "when": {"$ref": "#/definitions/time"},
      "tags": {"type": "object", "patternProperties": {"^t": {"type": "string"}}}
    },
    "definitions": {"time": {"type": "string", "format": "date-time"}}
  })")));
  // Far beyond what std::regex survives (it recurses per character: this would end the process).
  const std::string huge(200000, 'a');
  CHECK(f.refusal({{"path", huge}, {"content", "x"}}, "write_file") ==
        "write_file: input /path: pattern: a string of 200000 bytes, longer than the 4096 bytes a regular expression "
        "(pattern, patternProperties, a date or time format) is run on");
  CHECK_THAT(f.refusal({{"path", "a.txt"}, {"content", ""}, {"when", huge}}, "write_file"),
             cairn_test::ContainsSubstring("input /when: pattern: a string of 200000 bytes"));
  CHECK_THAT(f.refusal({{"path", "a.txt"}, {"content", ""}, {"tags", {{huge, "x"}}}}, "write_file"),
             cairn_test::ContainsSubstring("pattern: a member name of 200000 bytes"));
  // No regex runs on `content`: long text passes, and a path at the limit is still checked as usual.
  CHECK(f.refusal({{"path", "a.txt"}, {"content", huge}}, "write_file").empty());
  CHECK(f.refusal({{"path", std::string(cairn::max_pattern_subject_bytes, 'a')}, {"content", huge}}, "write_file")
            .empty());
  CHECK_THAT(f.refusal({{"path", std::string(cairn::max_pattern_subject_bytes, 'A')}, {"content", ""}}, "write_file"),
             cairn_test::ContainsSubstring("input /path: pattern"));
}

#else

TEST_CASE("schema: without valijson only the top-level required keys are checked") {
  STATIC_REQUIRE_FALSE(cairn::full_schema_validation);
  Fixture f;
  CHECK(f.refusal({{"url", "u"}, {"port", "not-a-number"}}).empty());
}

#endif

TEST_CASE("schema: which long strings a regex of the schema could run on") {
  using cairn::detail::long_string_under_regex;
  const std::string long_text(101, 'x');
  auto at = [&](const json& schema, const json& value) {
    const auto found = long_string_under_regex(schema, value, 100);
    return found ? found->pointer : std::string("none");
  };
  const json pattern = {{"type", "string"}, {"pattern", "^x+$"}};
  CHECK(at(pattern, long_text) == "");
  CHECK(at(pattern, std::string(100, 'x')) == "none");
  CHECK(at({{"properties", {{"a", pattern}}}}, {{"a", long_text}, {"b", long_text}}) == "/a");
  CHECK(at({{"properties", {{"a", pattern}}}}, {{"b", long_text}}) == "none");
  CHECK(at({{"additionalProperties", pattern}}, {{"b~/", long_text}}) == "/b~0~1");
  CHECK(at({{"items", pattern}}, json::array({"short", long_text})) == "/1");
  CHECK(at({{"items", json::array({true, pattern})}}, json::array({long_text, "y"})) == "none");
  CHECK(at({{"items", json::array({true})}, {"additionalItems", pattern}}, json::array({"y", long_text})) == "/1");
  CHECK(at({{"contains", pattern}}, json::array({long_text})) == "/0");
  // In place: combinators, conditionals, dependencies and local $refs (cycles included) are all followed.
  CHECK(at({{"anyOf", json::array({true, pattern})}}, long_text) == "");
  CHECK(at({{"if", true}, {"then", true}, {"else", {{"not", pattern}}}}, long_text) == "");
  CHECK(at({{"dependencies", {{"k", {{"properties", {{"a", pattern}}}}}}}}, {{"a", long_text}}) == "/a");
  const json looped = {{"definitions", {{"node", {{"properties", {{"next", {{"$ref", "#/definitions/node"}}},
                                                                  {"name", pattern}}}}}}},
                       {"$ref", "#/definitions/node"}};
  CHECK(at(looped, {{"next", {{"next", {{"name", long_text}}}}}}) == "/next/next/name");
  CHECK(at(looped, {{"next", {{"next", {{"other", long_text}}}}}}) == "none");
  // Formats valijson checks with a regex; others it does not check.
  CHECK(at({{"format", "date-time"}}, long_text) == "");
  CHECK(at({{"format", "uri"}}, long_text) == "none");
  // Member names: patternProperties and propertyNames' patterns run on them.
  CHECK(at({{"patternProperties", {{"^a", true}}}}, {{long_text, 1}}) == "/" + long_text);
  CHECK(at({{"propertyNames", pattern}}, {{long_text, 1}}) == "/" + long_text);
  CHECK(at({{"properties", {{"a", true}}}}, {{long_text, 1}}) == "none");
  CHECK(long_string_under_regex({{"propertyNames", pattern}}, {{long_text, 1}}, 100)->member_name);
  CHECK_FALSE(long_string_under_regex(pattern, long_text, 100)->member_name);
  CHECK(long_string_under_regex(pattern, long_text, 100)->bytes == 101);
  // A $ref that cannot be followed: any regex may apply below it.
  CHECK(at({{"$ref", "other.json#/x"}}, {{"deep", json::array({long_text})}}) == "/deep/0");
}
