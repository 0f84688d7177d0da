// Prompt text, pinned to the character: conversation history, artifact catalog (with its size words and the
// optional budget, newest or most relevant first), the tools section and the whole prompt.
#include <memory>
#include <string>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/artifact/search/rank.hpp"
#include "cairn/context/prompt.hpp"
#include "cairn/testing/embedder.hpp"
#include "catch.hpp"

using cairn::ArtifactRecord;
using cairn::ExecutionContext;
using cairn::Role;
using nlohmann::json;

namespace {

constexpr std::int64_t may_first = 1714564800000;  // 2024-05-01T12:00:00.000Z

ExecutionContext make_context() { return ExecutionContext(std::make_shared<cairn::InMemoryArtifactStore>(), "acme"); }

void add(ExecutionContext& ctx, const std::string& name, const char* type, json value, const std::string& description,
         const std::string& purpose = "", std::int64_t at = may_first) {
  ctx.add_artifact(name, ArtifactRecord::builder()
                             .type(type)
                             .description(description)
                             .purpose(purpose)
                             .value(std::move(value))
                             .created_at(at));
}

}  // namespace

TEST_CASE("format_conversation_history: Role: content lines, newest `limit` messages") {
  ExecutionContext ctx = make_context();
  REQUIRE(cairn::format_conversation_history(ctx) == "No previous conversation.");
  ctx.add_message(Role::user, "Create a web server for my application");
  ctx.add_message(Role::assistant, "Executed file_write and stored output as @server_file");
  ctx.add_message(Role::system, "Budget left: 2 calls");
  ctx.add_message(Role::tool, "Tool file_read failed: no such file");
  REQUIRE(cairn::format_conversation_history(ctx) ==
          "User: Create a web server for my application\n"
          "Assistant: Executed file_write and stored output as @server_file\n"
          "System: Budget left: 2 calls\n"
          "Tool: Tool file_read failed: no such file");
  REQUIRE(cairn::format_conversation_history(ctx, 2) ==
          "System: Budget left: 2 calls\n"
          "Tool: Tool file_read failed: no such file");
  // A limit of 0 means no limit, as the catalog's max_chars of 0 does.
  REQUIRE(cairn::format_conversation_history(ctx, 0) == cairn::format_conversation_history(ctx, 4));
  REQUIRE(cairn::format_conversation_history(make_context(), 0) == "No previous conversation.");

  for (int i = 0; i < 12; ++i) ctx.add_message(Role::user, "m" + std::to_string(i));
  REQUIRE(cairn::format_conversation_history(ctx) ==
          "User: m2\nUser: m3\nUser: m4\nUser: m5\nUser: m6\nUser: m7\nUser: m8\nUser: m9\nUser: m10\nUser: m11");
}

TEST_CASE("artifact_size_text gives the seed's size words") {
  REQUIRE(cairn::artifact_size_text(nullptr) == "empty");
  REQUIRE(cairn::artifact_size_text("/tmp/server.js") == "14 chars");
  REQUIRE(cairn::artifact_size_text("") == "0 chars");
  REQUIRE(cairn::artifact_size_text("h\xC3\xA9llo") == "5 chars");  // code points, not bytes
  REQUIRE(cairn::artifact_size_text(3000) == "number");
  REQUIRE(cairn::artifact_size_text(-1) == "number");
  REQUIRE(cairn::artifact_size_text(1.5) == "number");
  REQUIRE(cairn::artifact_size_text(false) == "boolean");
  REQUIRE(cairn::artifact_size_text(json::array({1, 2, 3})) == "array[3]");
  REQUIRE(cairn::artifact_size_text(json::array()) == "array[0]");
  REQUIRE(cairn::artifact_size_text({{"port", 3000}, {"host", "localhost"}}) == "object{2 keys}");
  REQUIRE(cairn::artifact_size_text(json::object()) == "object{0 keys}");
  REQUIRE(cairn::artifact_size_text(json::binary({1, 2})) == "binary[2]");
}

TEST_CASE("format_artifacts_catalog: the exact seed format, in insertion order") {
  ExecutionContext ctx = make_context();
  REQUIRE(cairn::format_artifacts_catalog(ctx) == "No artifacts available.");
  add(ctx, "server_file", "file", "/tmp/server.js", "Server implementation file",
      "File containing the Express server code");
  add(ctx, "app_config", "data", {{"port", 3000}, {"host", "localhost"}}, "Application configuration data", "",
      may_first + 1500);
  ctx.add_artifact("report", ArtifactRecord::builder()
                                 .type("document")
                                 .title("Quarterly report")
                                 .storage_url("s3://bucket/q3.pdf")
                                 .created_at(0));
  const std::string created = cairn::detail::iso8601_ms(ctx.get_artifact("report")->created_at());
  REQUIRE(cairn::format_artifacts_catalog(ctx) ==
          "Available Artifacts (3):\n"
          "- @server_file (file): Server implementation file\n"
          "  Purpose: File containing the Express server code\n"
          "  Created: 2024-05-01T12:00:00.000Z\n"
          "  Size: 14 chars\n"
          "- @app_config (data): Application configuration data\n"
          "  Purpose: Application configuration data\n"
          "  Created: 2024-05-01T12:00:01.500Z\n"
          "  Size: object{2 keys}\n"
          "- @report (document): Quarterly report\n"
          "  Purpose: Quarterly report\n"
          "  Created: " +
              created +
              "\n"
              "  Size: empty");
}

TEST_CASE("the catalog budget keeps the newest entries and says how many were left out") {
  ExecutionContext ctx = make_context();
  for (int i = 0; i < 5; ++i) add(ctx, "a" + std::to_string(i), "data", i, "item " + std::to_string(i));
  const std::string full = cairn::format_artifacts_catalog(ctx);
  const std::string entry4 =
      "- @a4 (data): item 4\n  Purpose: item 4\n  Created: 2024-05-01T12:00:00.000Z\n  Size: number";
  const std::string entry3 =
      "- @a3 (data): item 3\n  Purpose: item 3\n  Created: 2024-05-01T12:00:00.000Z\n  Size: number";
  const std::string heading = "Available Artifacts (5):";

  cairn::CatalogOptions options;
  options.max_chars = full.size();
  REQUIRE(cairn::format_artifacts_catalog(ctx, options) == full);  // fits exactly: nothing left out

  const std::string two = heading + "\n(3 older artifacts not shown)\n" + entry3 + "\n" + entry4;
  options.max_chars = two.size();
  REQUIRE(cairn::format_artifacts_catalog(ctx, options) == two);
  options.max_chars = two.size() + entry3.size();  // room for more, but not a whole third entry
  REQUIRE(cairn::format_artifacts_catalog(ctx, options) == two);
  options.max_chars = two.size() - 1;
  REQUIRE(cairn::format_artifacts_catalog(ctx, options) == heading + "\n(4 older artifacts not shown)\n" + entry4);
  options.max_chars = 1;  // not even the heading fits: heading and note are shown anyway
  REQUIRE(cairn::format_artifacts_catalog(ctx, options) == heading + "\n(5 older artifacts not shown)");

  ExecutionContext two_ctx = make_context();
  add(two_ctx, "a3", "data", 3, "item 3");
  add(two_ctx, "a4", "data", 4, "item 4");
  options.max_chars = 150;
  REQUIRE(cairn::format_artifacts_catalog(two_ctx, options) ==
          "Available Artifacts (2):\n(1 older artifact not shown)\n" + entry4);
}

TEST_CASE("format_tools lists each tool with its input schema") {
  cairn::ToolRegistry tools;
  REQUIRE(cairn::format_tools(tools) == "No tools available.");
  tools.add(cairn::Tool{"file_write", "Writes text to a file",
                        json{{"type", "object"},
                             {"properties", {{"filepath", {{"type", "string"}}}, {"content", {{"type", "string"}}}}},
                             {"required", {"filepath", "content"}}},
                        [](const json&) { return cairn::ToolResult::ok(1); }});
  tools.add(cairn::Tool{"noop", "Does nothing", json::object(), [](const json&) { return cairn::ToolResult::ok(1); }});
  REQUIRE(cairn::format_tools(tools) ==
          "- file_write: Writes text to a file\n"
          "  Input schema: {\"properties\":{\"content\":{\"type\":\"string\"},\"filepath\":{\"type\":\"string\"}},"
          "\"required\":[\"filepath\",\"content\"],\"type\":\"object\"}\n"
          "- noop: Does nothing\n"
          "  Input schema: {}");
}

TEST_CASE("build_prompt is the seed's template with the tools after the artifacts") {
  ExecutionContext ctx = make_context();
  ctx.add_message(Role::user, "Create a web server for my application");
  add(ctx, "server_file", "file", "/tmp/server.js", "Server implementation file", "Main server entry point");
  cairn::ToolRegistry tools;
  tools.add(cairn::Tool{"execute_command", "Runs a command", json{{"type", "object"}},
                        [](const json&) { return cairn::ToolResult::ok(1); }});
  const std::string expected = R"(
## Conversation History
User: Create a web server for my application

## Available Artifacts
Available Artifacts (1):
- @server_file (file): Server implementation file
  Purpose: Main server entry point
  Created: 2024-05-01T12:00:00.000Z
  Size: 14 chars

## Available Tools
- execute_command: Runs a command
  Input schema: {"type":"object"}

## Current Task
Start the server

## Instructions

When you need to use a tool, specify it in this format:
{
  "tool": "tool_name",
  "inputs": {
    "parameter1": "direct value or @artifact_name",
    "parameter2": "@another_artifact"
  },
  "outputs": [
    {
      "name": "output_artifact_name",
      "type": "file|data|process|config|etc",
      "description": "Clear description of what this output is",
      "purpose": "Why this output is needed for the task"
    }
  ]
}

Important:
- Reference existing artifacts using @artifact_name in tool inputs
- Always specify meaningful names for outputs
- Each output MUST have a specific type (file, data, process, config, etc.)
- Include clear descriptions and purposes for outputs
- Artifact names should be descriptive (e.g., "server_config", "user_data", "api_response")

Your response:)";
  REQUIRE(cairn::build_prompt("Start the server", ctx, tools) == expected);

  // Options reach the sections: the history limit (0 = every message), a catalog budget.
  cairn::PromptOptions options;
  options.history_limit = 0;
  options.catalog.max_chars = 10;
  const std::string small = cairn::build_prompt("Start the server", ctx, tools, options);
  REQUIRE_THAT(small, cairn_test::ContainsSubstring(
                          "## Conversation History\n" + cairn::format_conversation_history(ctx, 0) +
                          "\n\n## Available Artifacts\n"
                          "Available Artifacts (1):\n(1 older artifact not shown)\n\n## Available Tools"));
  REQUIRE_THAT(cairn::build_prompt("t", make_context(), cairn::ToolRegistry{}),
               cairn_test::ContainsSubstring("No artifacts available.\n\n## Available Tools\nNo tools available.\n\n"
                                             "## Current Task\nt\n"));
}

TEST_CASE("a history limit of 0 shows every message, also through build_prompt") {
  ExecutionContext ctx = make_context();
  for (int i = 0; i < 30; ++i) ctx.add_message(Role::user, "m" + std::to_string(i));
  const std::string all = cairn::format_conversation_history(ctx, 0);
  CHECK(all.find("User: m0\n") == 0);
  CHECK(all.size() >= 30 * 8);
  cairn::PromptOptions options;
  options.history_limit = 0;
  CHECK(cairn::build_prompt("task", ctx, cairn::ToolRegistry{}, options).find(all) != std::string::npos);
}

TEST_CASE("the catalog budget counts Unicode code points, not bytes") {
  ExecutionContext ctx = make_context();
  // Each description holds 10 two-byte characters: the entry is 10 code points shorter than its byte size.
  const std::string umlauts = "\xC3\xBC\xC3\xBC\xC3\xBC\xC3\xBC\xC3\xBC\xC3\xBC\xC3\xBC\xC3\xBC\xC3\xBC\xC3\xBC";
  add(ctx, "a0", "data", 0, umlauts);
  add(ctx, "a1", "data", 1, umlauts);
  const std::string full = cairn::format_artifacts_catalog(ctx);
  const std::size_t chars = cairn::detail::utf8_length(full);
  REQUIRE(chars + 40 == full.size());  // 2 entries x (description + purpose) x 10 extra bytes
  cairn::CatalogOptions options;
  options.max_chars = chars;  // fits exactly in code points, though not in bytes
  CHECK(cairn::format_artifacts_catalog(ctx, options) == full);
  options.max_chars = chars - 1;
  CHECK(cairn::format_artifacts_catalog(ctx, options).find("(1 older artifact not shown)") != std::string::npos);
}

namespace {
std::string entry(const std::string& name, const std::string& description) {
  return "- @" + name + " (data): " + description + "\n  Purpose: " + description +
         "\n  Created: 2024-05-01T12:00:00.000Z\n  Size: number";
}
}  // namespace

TEST_CASE("relevant_to: the catalog shows the bound artifacts most relevant first, by words") {
  auto store = std::make_shared<cairn::InMemoryArtifactStore>();  // no embedder: words only
  ExecutionContext ctx(store, "acme");
  const std::vector<std::string> descriptions = {"quarterly revenue by region", "lunch menu", "revenue forecast",
                                                 "office plants", "team photos"};
  for (std::size_t i = 0; i < descriptions.size(); ++i) add(ctx, "a" + std::to_string(i), "data", 1, descriptions[i]);
  // in the store and tenant, holding the words, but not bound: never shown
  (void)store->store(
      *ArtifactRecord::builder().tenant_id("acme").type("data").description("revenue by region").value(1).build());

  cairn::CatalogOptions options;
  options.relevant_to = "What was the revenue by region?";
  const std::string heading = "Available Artifacts (5):";
  // a0 holds revenue, by and region; a2 revenue; the others none of the words: newest first
  const std::string all = heading + "\n" + entry("a0", descriptions[0]) + "\n" + entry("a2", descriptions[2]) + "\n" +
                          entry("a4", descriptions[4]) + "\n" + entry("a3", descriptions[3]) + "\n" +
                          entry("a1", descriptions[1]);
  REQUIRE(cairn::format_artifacts_catalog(ctx, options) == all);
  // the budget keeps the most relevant, and says how many less relevant ones it left out
  const std::string two = heading + "\n(3 less relevant artifacts not shown)\n" + entry("a0", descriptions[0]) + "\n" +
                          entry("a2", descriptions[2]);
  options.max_chars = two.size();
  REQUIRE(cairn::format_artifacts_catalog(ctx, options) == two);
  const std::string one = heading + "\n(4 less relevant artifacts not shown)\n" + entry("a0", descriptions[0]);
  options.max_chars = two.size() - 1;
  REQUIRE(cairn::format_artifacts_catalog(ctx, options) == one);
  // without relevant_to: the newest, as before
  options.relevant_to.clear();
  const std::string newest = heading + "\n(4 older artifacts not shown)\n" + entry("a4", descriptions[4]);
  options.max_chars = newest.size();
  REQUIRE(cairn::format_artifacts_catalog(ctx, options) == newest);
  // relevant_depth: bound artifacts found only after that many hits count as not ranked
  auto crowded = std::make_shared<cairn::InMemoryArtifactStore>();
  ExecutionContext busy(crowded, "acme");
  add(busy, "forecast", "data", 1, "revenue forecast");
  add(busy, "plants", "data", 1, "office plants");
  for (int i = 0; i < 120; ++i) {  // shorter, so ranked above the forecast
    (void)crowded->store(
        *ArtifactRecord::builder().tenant_id("acme").type("data").description("revenue").value(1).build());
  }
  cairn::CatalogOptions deep;
  deep.relevant_to = "revenue";
  CHECK(cairn::format_artifacts_catalog(busy, deep) ==
        "Available Artifacts (2):\n" + entry("forecast", "revenue forecast") + "\n" + entry("plants", "office plants"));
  deep.relevant_depth = 100;  // one page: the forecast is the 121st hit
  CHECK(cairn::format_artifacts_catalog(busy, deep) ==
        "Available Artifacts (2):\n" + entry("plants", "office plants") + "\n" + entry("forecast", "revenue forecast"));
  options.max_chars = 0;
  // a text with no words ranks nothing: newest first, by relevance's rules
  options.relevant_to = "?!";
  CHECK(cairn::format_artifacts_catalog(ctx, options).rfind(heading + "\n" + entry("a4", descriptions[4]), 0) == 0);
  // build_prompt passes it through
  cairn::PromptOptions prompt;
  prompt.catalog.relevant_to = "lunch";
  prompt.catalog.max_chars =
      (heading + "\n(4 less relevant artifacts not shown)\n" + entry("a1", descriptions[1])).size();
  CHECK(cairn::build_prompt("t", ctx, cairn::ToolRegistry{}, prompt)
            .find(heading + "\n(4 less relevant artifacts not shown)\n" + entry("a1", descriptions[1])) !=
        std::string::npos);
}

TEST_CASE("relevant_to: on a store with an embedder every bound artifact is ranked, by words and meaning") {
  auto embedder = std::make_shared<cairn::testing::WordHashEmbedder>(64);
  cairn::InMemoryStoreOptions store_options;
  store_options.embedder = embedder;
  auto store = std::make_shared<cairn::InMemoryArtifactStore>(store_options);
  ExecutionContext ctx(store, "acme");
  const std::vector<std::string> descriptions = {"cats purr", "dogs bark loudly", "cats sleep and purr all day",
                                                 "birds sing at dawn"};
  for (std::size_t i = 0; i < descriptions.size(); ++i) add(ctx, "a" + std::to_string(i), "data", 1, descriptions[i]);
  cairn::CatalogOptions options;
  options.relevant_to = "sleep";
  // a2 holds the word (first in both lists); the others are ranked by the cosine of their text and "sleep"
  std::vector<std::pair<double, std::size_t>> by_meaning;
  for (std::size_t i : {0u, 1u, 3u}) {
    const auto r = ctx.get_artifact("a" + std::to_string(i));
    REQUIRE(r);
    by_meaning.push_back(
        {-cairn::detail::cosine(embedder->vector_of("sleep"), embedder->vector_of(embedder->text_of(*r))), i});
  }
  std::sort(by_meaning.begin(), by_meaning.end());
  // distinct similarities (ties would be ordered by the records' random ids)
  REQUIRE(by_meaning[0].first != by_meaning[1].first);
  REQUIRE(by_meaning[1].first != by_meaning[2].first);
  std::string expected = "Available Artifacts (4):\n" + entry("a2", descriptions[2]);
  for (const auto& [score, i] : by_meaning) expected += "\n" + entry("a" + std::to_string(i), descriptions[i]);
  CHECK(cairn::format_artifacts_catalog(ctx, options) == expected);
  // an embedder that fails fails the catalog with its reason
  embedder->fault = cairn::testing::WordHashEmbedder::Fault::throws;
  CHECK_THROWS_WITH(cairn::format_artifacts_catalog(ctx, options), "the model is down");
}
