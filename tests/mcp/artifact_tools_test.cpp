// mcp::ArtifactTools over a real InMemoryArtifactStore: every tool, its argument errors, and tenant isolation
// (search_artifacts also on a store with a deterministic embedder).
#include "cairn/mcp/artifact_tools.hpp"
#include "cairn/artifact/search/rank.hpp"

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/testing/embedder.hpp"
#include "catch.hpp"

using cairn::mcp::ArtifactTools;
using nlohmann::json;

namespace {

json ok(const ArtifactTools& t, const std::string& name, const json& args) {
  const auto r = t.call(name, args);
  INFO(name << " " << args.dump() << " -> " << r.dump());
  REQUIRE(r.at("isError") == false);
  REQUIRE(json::parse(r.at("content").at(0).at("text").get<std::string>()) == r.at("structuredContent"));
  return r.at("structuredContent");
}

std::string fails(const ArtifactTools& t, const std::string& name, const json& args, const std::string& fragment) {
  const auto r = t.call(name, args);
  INFO(name << " " << args.dump() << " -> " << r.dump());
  REQUIRE(r.at("isError") == true);
  const std::string message = r.at("structuredContent").at("error");
  CHECK_THAT(message, cairn_test::ContainsSubstring(fragment));
  return message;
}

}  // namespace

TEST_CASE("the six tools, with object input schemas") {
  ArtifactTools t(std::make_shared<cairn::InMemoryArtifactStore>(), "acme");
  std::vector<std::string> names;
  for (const auto& tool : t.tools()) {
    names.push_back(tool.name);
    CHECK(tool.input_schema.at("type") == "object");
    CHECK(tool.input_schema.at("additionalProperties") == false);
    CHECK_FALSE(tool.input_schema.at("properties").contains("tenant_id"));
  }
  CHECK(names == std::vector<std::string>{"artifact_store", "artifact_fetch", "artifact_list", "artifact_versions",
                                          "artifact_delete", "search_artifacts"});
  fails(t, "artifact_nope", json::object(), "unknown tool 'artifact_nope'");
}

TEST_CASE("the constructor refuses a null store and an empty tenant") {
  CHECK_THROWS_AS(ArtifactTools(nullptr, "acme"), cairn::invalid_argument);
  CHECK_THROWS_AS(ArtifactTools(std::make_shared<cairn::InMemoryArtifactStore>(), ""), cairn::invalid_argument);
}

TEST_CASE("artifact_store stores versions, artifact_fetch returns latest, a version, or A2A") {
  auto store = std::make_shared<cairn::InMemoryArtifactStore>();
  ArtifactTools t(store, "acme");
  auto s1 = ok(t, "artifact_store",
               {{"id", "report"},
                {"type", "document"},
                {"title", "Report"},
                {"value", "draft"},
                {"created_by", "writer"},
                {"mime_type", "text/markdown"}});
  CHECK(s1.at("id") == "report");
  CHECK(s1.at("version") == 1);
  CHECK(s1.at("type") == "document");
  CHECK(s1.at("created_at").get<std::int64_t>() > 0);
  auto s2 = ok(
      t, "artifact_store",
      {{"id", "report"}, {"type", "document"}, {"title", "Report"}, {"value", {{"v", 2}}}, {"metadata", {{"k", "v"}}}});
  CHECK(s2.at("version") == 2);

  // What the tool stored is what the store holds, in the tools' tenant.
  const auto held = store->fetch("report", "acme");
  REQUIRE(held);
  CHECK(held->version() == 2);
  CHECK(held->value() == json{{"v", 2}});

  auto latest = ok(t, "artifact_fetch", {{"id", "report"}});
  CHECK(latest == json(*held));
  auto v1 = ok(t, "artifact_fetch", {{"id", "report"}, {"version", 1}});
  CHECK(v1.at("value") == "draft");
  CHECK(v1.at("mime_type") == "text/markdown");
  CHECK(ok(t, "artifact_fetch", {{"id", "report"}, {"version", 1.0}}).at("version") == 1);
  auto a2a = ok(t, "artifact_fetch", {{"id", "report"}, {"format", "a2a"}});
  CHECK(a2a == cairn::to_a2a(*held));
  CHECK(ok(t, "artifact_fetch", {{"id", "report"}, {"format", "a2a-v0.3"}}) ==
        cairn::to_a2a(*held, cairn::A2AVersion::v0_3));
  CHECK(ok(t, "artifact_fetch", {{"id", "report"}, {"format", "record"}}) == latest);

  // A fresh id is a UUID.
  auto fresh = ok(t, "artifact_store", {{"type", "data"}, {"description", "n"}, {"value", 3}});
  CHECK(fresh.at("id").get<std::string>().size() == 36);
  CHECK(fresh.at("version") == 1);
  auto by_url =
      ok(t, "artifact_store", {{"type", "file"}, {"title", "big"}, {"storage_url", "s3://b/k"}, {"size_bytes", 10}});
  CHECK(store->fetch(by_url.at("id"), "acme")->storage_url() == std::optional<std::string>("s3://b/k"));
}

TEST_CASE("artifact_store rejects bad records naming the field, and stores nothing") {
  auto store = std::make_shared<cairn::InMemoryArtifactStore>();
  ArtifactTools t(store, "acme");
  fails(t, "artifact_store", json::object(), "type is required");
  fails(t, "artifact_store", nullptr, "type is required");
  fails(t, "artifact_store", json::array(), "arguments must be a JSON object");
  fails(t, "artifact_store", {{"type", "Bad Type"}, {"title", "x"}, {"value", 1}}, "artifact_store: type");
  fails(t, "artifact_store", {{"type", 5}, {"title", "x"}, {"value", 1}}, "artifact_store:");
  fails(t, "artifact_store", {{"type", "document"}, {"value", 1}}, "title");
  fails(t, "artifact_store", {{"type", "document"}, {"title", "x"}}, "value or a storage_url");
  fails(t, "artifact_store", {{"type", "document"}, {"title", 5}, {"value", 1}}, "title: expected a string");
  fails(t, "artifact_store", {{"type", "document"}, {"title", "x"}, {"value", 1}, {"mime_type", "nope"}}, "mime_type");
  fails(t, "artifact_store", {{"type", "document"}, {"title", "x"}, {"value", 1}, {"metadata", 3}}, "metadata");
  fails(t, "artifact_store", {{"type", "document"}, {"title", "x"}, {"value", 1}, {"size_bytes", -1}}, "size_bytes");
  fails(t, "artifact_store", {{"type", "document"}, {"title", std::string(501, 't')}, {"value", 1}}, "title");
  fails(t, "artifact_store", {{"type", "document"}, {"title", "x"}, {"value", 1}, {"version", 3}},
        "unknown argument 'version'");
  fails(t, "artifact_store", {{"type", "document"}, {"title", "x"}, {"value", 1}, {"created_at", 3}},
        "unknown argument 'created_at'");
  CHECK(store->list("acme").items.empty());
}

TEST_CASE("fetch, versions and delete report a missing id, and a missing version") {
  ArtifactTools t(std::make_shared<cairn::InMemoryArtifactStore>(), "acme");
  ok(t, "artifact_store", {{"id", "a"}, {"type", "data"}, {"title", "A"}, {"value", 1}});
  const auto missing = fails(t, "artifact_fetch", {{"id", "zz"}}, "artifact 'zz' not found in tenant 'acme'");
  CHECK(fails(t, "artifact_versions", {{"id", "zz"}}, "not found") == missing);
  CHECK(fails(t, "artifact_delete", {{"id", "zz"}}, "not found") == missing);
  fails(t, "artifact_fetch", {{"id", "a"}, {"version", 2}}, "artifact 'a' version 2 not found in tenant 'acme'");
  fails(t, "artifact_fetch", {{"id", "a"}, {"version", 0}}, "version must be an integer from 1");
  fails(t, "artifact_fetch", {{"id", "a"}, {"version", -1}}, "version must be an integer");
  fails(t, "artifact_fetch", {{"id", "a"}, {"version", 1.5}}, "version must be an integer");
  fails(t, "artifact_fetch", {{"id", "a"}, {"version", 18446744073709551616.0}}, "version must be an integer");
  fails(t, "artifact_fetch", {{"id", "a"}, {"version", 1e300}}, "version must be an integer");
  fails(t, "artifact_fetch", {{"id", "a"}, {"version", 1e19}}, "artifact 'a' version 10000000000000000000 not found");
  fails(t, "artifact_list", {{"limit", 1e300}}, "limit must be an integer from 1 to 1000");
  fails(t, "artifact_fetch", {{"id", "a"}, {"version", "1"}}, "version must be an integer");
  fails(t, "artifact_fetch", {{"id", "a"}, {"format", "xml"}}, "format must be \"record\", \"a2a\" or \"a2a-v0.3\"");
  fails(t, "artifact_fetch", {{"id", "a"}, {"format", 1}}, "format must be a string");
  fails(t, "artifact_fetch", json::object(), "id is required");
  fails(t, "artifact_fetch", {{"id", ""}}, "id is required");
  fails(t, "artifact_fetch", {{"id", 7}}, "id must be a string");
  fails(t, "artifact_versions", json::object(), "id is required");
  fails(t, "artifact_delete", {{"id", "a"}, {"all", true}}, "unknown argument 'all'");
}

TEST_CASE("artifact_versions and artifact_delete") {
  ArtifactTools t(std::make_shared<cairn::InMemoryArtifactStore>(), "acme");
  for (int i = 0; i < 3; ++i) {
    ok(t, "artifact_store", {{"id", "doc"}, {"type", "document"}, {"title", "D"}, {"value", i}});
  }
  CHECK(ok(t, "artifact_versions", {{"id", "doc"}}) == json{{"id", "doc"}, {"versions", {1, 2, 3}}});
  CHECK(ok(t, "artifact_delete", {{"id", "doc"}}) == json{{"deleted", "doc"}, {"versions_removed", 3}});
  fails(t, "artifact_fetch", {{"id", "doc"}}, "not found");
  // A new store of the same id starts again at version 1.
  const auto again = ok(t, "artifact_store", {{"id", "doc"}, {"type", "document"}, {"title", "D"}, {"value", 9}});
  CHECK(again.at("version") == 1);
}

TEST_CASE("artifact_list pages with a cursor and filters by prefix, type and creator") {
  ArtifactTools t(std::make_shared<cairn::InMemoryArtifactStore>(), "acme");
  for (int i = 0; i < 7; ++i) {
    ok(t, "artifact_store",
       {{"id", "note-" + std::to_string(i)},
        {"type", i % 2 ? "code" : "document"},
        {"title", "N"},
        {"value", std::string(100, 'v')},
        {"created_by", i < 3 ? "alice" : "bob"}});
  }
  ok(t, "artifact_store", {{"id", "other"}, {"type", "document"}, {"title", "O"}, {"value", 1}});

  std::vector<std::string> ids;
  std::string cursor;
  int pages = 0;
  do {
    json args = {{"prefix", "note-"}, {"limit", 3}};
    if (!cursor.empty()) args["cursor"] = cursor;
    const auto page = ok(t, "artifact_list", args);
    ++pages;
    CHECK(page.at("artifacts").size() <= 3);
    for (const auto& a : page.at("artifacts")) {
      CHECK_FALSE(a.contains("value"));
      CHECK(a.at("tenant_id") == "acme");
      ids.push_back(a.at("id"));
    }
    cursor = page.contains("next_cursor") ? page.at("next_cursor").get<std::string>() : "";
  } while (!cursor.empty());
  CHECK(pages == 3);
  CHECK(ids == std::vector<std::string>{"note-0", "note-1", "note-2", "note-3", "note-4", "note-5", "note-6"});

  CHECK(ok(t, "artifact_list", {{"type", "code"}}).at("artifacts").size() == 3);
  CHECK(ok(t, "artifact_list", {{"created_by", "alice"}}).at("artifacts").size() == 3);
  CHECK(ok(t, "artifact_list", {{"type", "document"}, {"created_by", "bob"}}).at("artifacts").size() == 2);
  CHECK(ok(t, "artifact_list", json::object()).at("artifacts").size() == 8);
  CHECK(ok(t, "artifact_list", nullptr).at("artifacts").size() == 8);
  CHECK(ok(t, "artifact_list", {{"limit", 1000}}).at("artifacts").size() == 8);

  fails(t, "artifact_list", {{"limit", 0}}, "limit must be an integer from 1 to 1000");
  fails(t, "artifact_list", {{"limit", 1001}}, "limit must be an integer from 1 to 1000");
  fails(t, "artifact_list", {{"limit", "5"}}, "limit");
  fails(t, "artifact_list", {{"type", "Not-a-type"}}, "artifact_list:");
  fails(t, "artifact_list", {{"prefix", 3}}, "prefix must be a string");
  fails(t, "artifact_list", {{"page", 2}}, "unknown argument 'page'");
}

TEST_CASE("no argument reaches another tenant, and another tenant's ids read as missing") {
  auto store = std::make_shared<cairn::InMemoryArtifactStore>();
  ArtifactTools acme(store, "acme");
  ArtifactTools globex(store, "globex");
  ok(globex, "artifact_store", {{"id", "secret"}, {"type", "document"}, {"title", "S"}, {"value", "globex only"}});
  ok(acme, "artifact_store", {{"id", "mine"}, {"type", "document"}, {"title", "M"}, {"value", "acme"}});

  // tenant_id is refused by every tool, whatever its value, and changes nothing.
  const std::vector<std::pair<std::string, json>> calls = {
      {"artifact_store", {{"id", "secret"}, {"type", "document"}, {"title", "x"}, {"value", "x"}}},
      {"artifact_fetch", {{"id", "secret"}}},
      {"artifact_list", json::object()},
      {"artifact_versions", {{"id", "secret"}}},
      {"artifact_delete", {{"id", "secret"}}},
      {"search_artifacts", {{"query", "globex"}}},
  };
  for (const auto& [name, base] : calls) {
    for (const json& tenant : {json("globex"), json("acme"), json(nullptr), json(5)}) {
      auto args = base;
      args["tenant_id"] = tenant;
      fails(acme, name, args, "tenant_id is not an argument: the tenant is fixed by the server");
    }
  }
  // The other tenant's id behaves exactly like one that does not exist.
  const auto foreign = fails(acme, "artifact_fetch", {{"id", "secret"}}, "not found");
  const auto absent = fails(acme, "artifact_fetch", {{"id", "secreu"}}, "not found");
  CHECK(foreign == "artifact 'secret' not found in tenant 'acme'");
  CHECK(absent == "artifact 'secreu' not found in tenant 'acme'");
  fails(acme, "artifact_fetch", {{"id", "secret"}, {"version", 1}}, "artifact 'secret' version 1 not found");
  fails(acme, "artifact_versions", {{"id", "secret"}}, "artifact 'secret' not found in tenant 'acme'");
  fails(acme, "artifact_delete", {{"id", "secret"}}, "artifact 'secret' not found in tenant 'acme'");
  const auto listed = ok(acme, "artifact_list", json::object()).at("artifacts");
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].at("id") == "mine");
  // Storing the same id in acme makes acme's own artifact; globex's is untouched.
  CHECK(ok(acme, "artifact_store", {{"id", "secret"}, {"type", "document"}, {"title", "A"}, {"value", "a"}})
            .at("version") == 1);
  CHECK(store->fetch("secret", "globex")->value() == "globex only");
  CHECK(store->versions("secret", "globex") == std::vector<std::uint64_t>{1});
  // search_artifacts sees acme's artifacts only: globex's words are found nowhere
  CHECK(ok(acme, "search_artifacts", {{"query", "globex"}}).at("hits") == json::array());
  CHECK(ok(acme, "search_artifacts", {{"filter", {{"id_prefix", "sec"}}}}).at("hits").size() == 1);
  CHECK(ok(globex, "search_artifacts", {{"query", "globex"}}).at("hits").at(0).at("id") == "secret");
}

namespace {
std::vector<std::string> hit_ids(const json& result) {
  std::vector<std::string> out;
  for (const auto& h : result.at("hits")) out.push_back(h.at("id"));
  return out;
}
}  // namespace

TEST_CASE("search_artifacts finds by words and filters, pages with a cursor, and says what matched") {
  auto store = std::make_shared<cairn::InMemoryArtifactStore>();
  ArtifactTools t(store, "acme");
  ok(t, "artifact_store",
     {{"id", "q1"},
      {"type", "dataset"},
      {"title", "Revenue by region"},
      {"value", "emea revenue grew, apac revenue fell"},
      {"metadata", {{"region", "emea"}, {"year", 2024}}}});
  ok(t, "artifact_store",
     {{"id", "q2"},
      {"type", "dataset"},
      {"title", "Costs by region"},
      {"value", "emea costs and revenue"},
      {"metadata", {{"region", "apac"}, {"year", 2025}}}});
  ok(t, "artifact_store",
     {{"id", "memo"}, {"type", "document"}, {"title", "Memo"}, {"value", "revenue memo"}, {"created_by", "writer"}});
  ok(t, "artifact_store", {{"id", "other"}, {"type", "document"}, {"title", "Lunch"}, {"value", "sandwiches"}});

  // words: the store's own search gives the order, the scores and what matched
  cairn::SearchQuery q;
  q.text = "revenue";
  const auto expected = store->search("acme", q);
  const auto r = ok(t, "search_artifacts", {{"query", "revenue"}});
  REQUIRE(r.at("hits").size() == expected.hits.size());
  REQUIRE(expected.hits.size() == 3);
  for (std::size_t i = 0; i < expected.hits.size(); ++i) {
    const auto& h = r.at("hits").at(i);
    const auto& e = expected.hits[i];
    CHECK(h.at("id") == e.record->id());
    CHECK(h.at("version") == e.record->version());
    CHECK(h.at("title") == e.record->title());
    CHECK(h.at("type") == e.record->type().str());
    CHECK(h.at("score").get<double>() == e.score);
    CHECK(h.at("matched").at("words") == json{"revenue"});
    CHECK(h.at("matched").at("text_rank") == i + 1);
    CHECK_FALSE(h.at("matched").contains("similarity"));
  }
  CHECK(r.at("hits").at(0).at("id") == "q1");  // twice in a short text
  CHECK(r.at("hits").at(0).at("matched").at("fields") == json{"title", "value"});
  CHECK_FALSE(r.contains("next_cursor"));

  // filters: type, metadata conditions, creator, id prefix, time
  CHECK(hit_ids(ok(t, "search_artifacts", {{"query", "revenue"}, {"filter", {{"type", "dataset"}}}})) ==
        std::vector<std::string>{"q1", "q2"});
  CHECK(hit_ids(ok(t, "search_artifacts",
                   {{"query", "revenue"},
                    {"filter", {{"metadata", {{{"pointer", "/year"}, {"op", "ge"}, {"value", 2025}}}}}}})) ==
        std::vector<std::string>{"q2"});
  CHECK(hit_ids(ok(t, "search_artifacts",
                   {{"filter",
                     {{"metadata",
                       {{{"pointer", "/region"}, {"op", "in"}, {"value", json::array({"emea", "apac"})}},
                        {{"pointer", "/year"}, {"op", "exists"}}}}}}})) == std::vector<std::string>{"q1", "q2"});
  CHECK(hit_ids(ok(t, "search_artifacts", {{"query", "revenue"}, {"filter", {{"created_by", "writer"}}}})) ==
        std::vector<std::string>{"memo"});
  CHECK(hit_ids(ok(t, "search_artifacts", {{"filter", {{"id_prefix", "q"}, {"created_after", 0}}}})) ==
        std::vector<std::string>{"q1", "q2"});
  CHECK(ok(t, "search_artifacts", {{"query", "revenue"}, {"filter", {{"created_before", 1}}}}).at("hits") ==
        json::array());
  CHECK(hit_ids(ok(t, "search_artifacts", {{"query", "revenue -memo"}, {"mode", "text"}})) ==
        std::vector<std::string>{"q1", "q2"});

  // pages: limit 1, then the cursor, until no next_cursor; the same hits as one page
  std::vector<std::string> paged;
  json args = {{"query", "revenue"}, {"limit", 1}};
  for (int page = 0; page < 5; ++page) {
    const auto p = ok(t, "search_artifacts", args);
    for (const auto& id : hit_ids(p)) paged.push_back(id);
    if (!p.contains("next_cursor")) break;
    args["cursor"] = p.at("next_cursor");
  }
  CHECK(paged == hit_ids(r));
}

TEST_CASE("search_artifacts ranks by meaning when the store has an embedder") {
  cairn::InMemoryStoreOptions options;
  auto embedder = std::make_shared<cairn::testing::WordHashEmbedder>(64);
  options.embedder = embedder;
  auto store = std::make_shared<cairn::InMemoryArtifactStore>(options);
  ArtifactTools t(store, "acme");
  ok(t, "artifact_store", {{"id", "cats"}, {"type", "document"}, {"title", "cats"}, {"value", "cats purr and sleep"}});
  ok(t, "artifact_store", {{"id", "dogs"}, {"type", "document"}, {"title", "dogs"}, {"value", "dogs bark and run"}});
  const auto r = ok(t, "search_artifacts", {{"query", "sleep purr"}, {"mode", "similarity"}});
  REQUIRE(hit_ids(r) == std::vector<std::string>{"cats", "dogs"});
  const double expected = cairn::detail::cosine(embedder->vector_of("sleep purr"),
                                                embedder->vector_of(embedder->text_of(*store->fetch("cats", "acme"))));
  CHECK(r.at("hits").at(0).at("matched").at("similarity").get<double>() == Approx(expected));
  CHECK(r.at("hits").at(0).at("matched").at("vector_rank") == 1);
  // automatic on such a store: words and meaning (hybrid), so both lists rank the cat
  const auto hybrid = ok(t, "search_artifacts", {{"query", "purr"}});
  CHECK(hit_ids(hybrid).at(0) == "cats");
  CHECK(hybrid.at("hits").at(0).at("matched").at("text_rank") == 1);
  CHECK(hybrid.at("hits").at(0).at("matched").at("vector_rank") == 1);
}

TEST_CASE("search_artifacts: bad input is an error result naming the field, and changes nothing") {
  auto store = std::make_shared<cairn::InMemoryArtifactStore>();
  ArtifactTools t(store, "acme");
  ok(t, "artifact_store", {{"id", "a"}, {"type", "document"}, {"title", "A"}, {"value", "alpha"}});
  fails(t, "search_artifacts", json::object(), "search_artifacts: search: nothing to search by");
  fails(t, "search_artifacts", {{"query", 5}}, "search_artifacts: query must be a string");
  fails(t, "search_artifacts", {{"query", "a"}, {"limit", 0}},
        "search_artifacts: limit must be an integer from 1 to 100");
  fails(t, "search_artifacts", {{"query", "a"}, {"limit", 101}}, "limit must be an integer from 1 to 100 (got 101)");
  fails(t, "search_artifacts", {{"query", "a"}, {"mode", "fuzzy"}},
        "search_artifacts: mode must be \"automatic\", \"text\", \"similarity\" or \"hybrid\" (got \"fuzzy\")");
  fails(t, "search_artifacts", {{"query", "a"}, {"mode", "similarity"}},
        "search_artifacts: search: mode similarity and mode hybrid need a vector");
  fails(t, "search_artifacts", {{"query", "\"unclosed"}},
        "search_artifacts: search: query text: the quote at byte 0 is not closed");
  fails(t, "search_artifacts", {{"query", std::string(5000, 'a')}},
        "query text is 5000 bytes, more than the limit of 4096");
  fails(t, "search_artifacts", {{"query", "a"}, {"cursor", "made-up"}},
        "search_artifacts: search: cursor is not one this query gave");
  fails(t, "search_artifacts", {{"query", "a"}, {"sort", "new"}}, "search_artifacts: unknown argument 'sort'");
  fails(t, "search_artifacts", {{"query", "a"}, {"filter", "dataset"}},
        "search_artifacts: filter must be an object (got string)");
  fails(t, "search_artifacts", {{"query", "a"}, {"filter", {{"kind", "x"}}}},
        "search_artifacts: filter: unknown argument 'kind'");
  fails(t, "search_artifacts", {{"query", "a"}, {"filter", {{"type", 3}}}},
        "search_artifacts: filter.type must be a string (got number)");
  fails(t, "search_artifacts", {{"query", "a"}, {"filter", {{"type", "Bad Type"}}}},
        "search_artifacts: filter.type: 'Bad Type' is not an artifact type");
  fails(t, "search_artifacts", {{"query", "a"}, {"filter", {{"created_after", "yesterday"}}}},
        "search_artifacts: filter.created_after must be an integer (milliseconds since 1970; got \"yesterday\")");
  fails(t, "search_artifacts", {{"query", "a"}, {"filter", {{"created_after", 5}, {"created_before", 5}}}},
        "filter.created_after must be before filter.created_before");
  fails(t, "search_artifacts", {{"query", "a"}, {"filter", {{"metadata", {{"pointer", "/a"}}}}}},
        "search_artifacts: filter.metadata must be an array (got object)");
  fails(t, "search_artifacts", {{"query", "a"}, {"filter", {{"metadata", {5}}}}},
        "search_artifacts: filter.metadata[0] must be an object (got number)");
  fails(t, "search_artifacts", {{"query", "a"}, {"filter", {{"metadata", {{{"op", "eq"}, {"value", 1}}}}}}},
        "search_artifacts: filter.metadata[0].pointer is required (a string)");
  fails(t, "search_artifacts",
        {{"query", "a"}, {"filter", {{"metadata", {{{"pointer", "/a"}, {"op", "like"}, {"value", 1}}}}}}},
        "search_artifacts: filter.metadata[0].op must be one of eq, ne, lt, le, gt, ge, in, exists (got \"like\")");
  fails(t, "search_artifacts", {{"query", "a"}, {"filter", {{"metadata", {{{"pointer", "/a"}, {"op", "eq"}}}}}}},
        "search_artifacts: filter.metadata[0].value is required for eq");
  fails(t, "search_artifacts",
        {{"query", "a"}, {"filter", {{"metadata", {{{"pointer", "/a"}, {"op", "eq"}, {"value", 1}, {"x", 1}}}}}}},
        "search_artifacts: filter.metadata[0]: unknown argument 'x'");
  fails(t, "search_artifacts",
        {{"query", "a"}, {"filter", {{"metadata", {{{"pointer", "a"}, {"op", "eq"}, {"value", 1}}}}}}},
        "search_artifacts: search: filter.metadata[0] ('a'): not a JSON pointer");
  fails(t, "search_artifacts",
        {{"query", "a"},
         {"filter", {{"metadata", {{{"pointer", "/tags/99999999999999999999"}, {"op", "eq"}, {"value", "x"}}}}}}},
        "search_artifacts: search: filter.metadata[0] ('/tags/99999999999999999999'): array index "
        "'99999999999999999999' is past the largest, 9223372036854775807");
  fails(t, "search_artifacts",
        {{"query", "a"}, {"filter", {{"metadata", {{{"pointer", "/a"}, {"op", "in"}, {"value", json::array()}}}}}}},
        "filter.metadata[0] ('/a'): in takes a non-empty array of values");
  fails(t, "search_artifacts", {{"query", "a"}, {"filter", {{"tenant_id", "globex"}}}},
        "tenant_id is not an argument: the tenant is fixed by the server");
  CHECK(store->versions("a", "acme") == std::vector<std::uint64_t>{1});
}
