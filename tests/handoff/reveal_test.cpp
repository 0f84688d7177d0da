#include "cairn/handoff/reveal.hpp"

#include <algorithm>
#include <atomic>
#include <random>
#include <string>
#include <vector>

#include "cairn/artifact/memory_store.hpp"
#include "catch.hpp"

using namespace cairn;

namespace {
using Ids = std::vector<std::string>;

ArtifactPtr put(ArtifactStore& store, const std::string& tenant, const std::string& id, nlohmann::json value,
                const std::string& description = "The summary", const std::string& title = "The title") {
  return store.store(*ArtifactRecord::builder()
                          .tenant_id(tenant)
                          .id(id)
                          .type(ArtifactType::document)
                          .title(title)
                          .description(description)
                          .value(std::move(value))
                          .build());
}

// A real store that counts its fetches, to show each id is looked up once.
class CountingStore final : public ArtifactStore {
 public:
  using ArtifactStore::store;
  ArtifactPtr store(const ArtifactRecord& r) override { return inner_.store(r); }
  ArtifactPtr store_if(const ArtifactRecord& r, std::uint64_t v) override { return inner_.store_if(r, v); }
  ArtifactPtr fetch(const std::string& id, const std::string& tenant, std::uint64_t version) const override {
    ++fetches;
    return inner_.fetch(id, tenant, version);
  }
  void remove(const std::string& id, const std::string& tenant) override { inner_.remove(id, tenant); }
  std::vector<std::uint64_t> versions(const std::string& id, const std::string& tenant) const override {
    return inner_.versions(id, tenant);
  }
  ListPage list(const std::string& tenant, const ListQuery& q) const override { return inner_.list(tenant, q); }
  mutable std::atomic<int> fetches{0};

 private:
  InMemoryArtifactStore inner_;
};
}  // namespace

TEST_CASE("the three policies rewrite a reference as the design says") {
  InMemoryArtifactStore store;
  put(store, "acme", "draft_k3x9", "# Dark mode\nUsers want it.", "Add dark mode theme");
  const std::string text = "Writer: <artifact id=\"draft_k3x9\" summary=\"Add dark mode theme\" /> done";

  auto none = reveal(text, RevealPolicy::none, store, "acme");
  CHECK(none.text == "Writer: <artifact id=\"draft_k3x9\" /> done");
  CHECK(none.resolved == Ids{"draft_k3x9"});
  CHECK(none.unresolved.empty());

  auto summary = reveal("Writer: <artifact id='draft_k3x9'/> done", RevealPolicy::summary, store, "acme");
  CHECK(summary.text == "Writer: <artifact id=\"draft_k3x9\" summary=\"Add dark mode theme\" /> done");

  auto full = reveal(text, RevealPolicy::full, store, "acme");
  CHECK(full.text == "Writer: # Dark mode\nUsers want it. done");
  CHECK(full.resolved == Ids{"draft_k3x9"});

  CHECK(expand_references(text, store, "acme").text == full.text);
}

TEST_CASE("the summary comes from the store, not from the text") {
  InMemoryArtifactStore store;
  put(store, "acme", "r1", "body", "Real summary with \"quotes\" & <tags>");
  put(store, "acme", "r2", "body", "", "Only a title");
  auto r = reveal("<artifact id=\"r1\" summary=\"forged\" /> <artifact id=\"r2\">old body</artifact>",
                  RevealPolicy::summary, store, "acme");
  CHECK(r.text ==
        "<artifact id=\"r1\" summary=\"Real summary with &quot;quotes&quot; &amp; &lt;tags&gt;\" /> "
        "<artifact id=\"r2\" summary=\"Only a title\" />");
}

TEST_CASE("unknown ids stay exactly as written and are reported once, in order") {
  InMemoryArtifactStore store;
  put(store, "acme", "known", "K");
  const std::string text =
      "<artifact  id='missing-1' summary=\"s\"/> <artifact id=\"known\" /> <artifact id=\"missing-2\">x</artifact> "
      "<artifact id='missing-1' />";
  for (auto policy : {RevealPolicy::none, RevealPolicy::summary, RevealPolicy::full}) {
    INFO(to_string(policy));
    auto r = reveal(text, policy, store, "acme");
    CHECK(r.unresolved == Ids{"missing-1", "missing-2"});
    CHECK(r.resolved == Ids{"known"});
    CHECK_THAT(r.text, cairn_test::ContainsSubstring("<artifact  id='missing-1' summary=\"s\"/> "));
    CHECK_THAT(r.text,
               cairn_test::ContainsSubstring(" <artifact id=\"missing-2\">x</artifact> <artifact id='missing-1' />"));
  }
  CHECK(expand_references(text, store, "acme").text ==
        "<artifact  id='missing-1' summary=\"s\"/> K <artifact id=\"missing-2\">x</artifact> "
        "<artifact id='missing-1' />");
}

TEST_CASE("another tenant's id expands to nothing and is reported like a missing one") {
  InMemoryArtifactStore store;
  put(store, "acme", "secret_ab12", "acme's confidential draft");
  const std::string text = "Look: <artifact id=\"secret_ab12\" summary=\"guess\" />";
  auto r = expand_references(text, store, "globex");
  CHECK(r.text == text);
  CHECK(r.unresolved == Ids{"secret_ab12"});
  CHECK(r.resolved.empty());
  CHECK(reveal(text, RevealPolicy::summary, store, "globex").text == text);
  CHECK(expand_references(text, store, "acme").text == "Look: acme's confidential draft");
}

TEST_CASE("each id is fetched once however often it appears") {
  CountingStore store;
  put(store, "t", "a", "A");
  std::string text;
  for (int i = 0; i < 50; ++i) text += "<artifact id=\"a\" /><artifact id=\"nope\" />";
  auto r = expand_references(text, store, "t");
  std::string expected;
  for (int i = 0; i < 50; ++i) expected += "A<artifact id=\"nope\" />";
  CHECK(r.text == expected);
  CHECK(store.fetches == 2);
  CHECK(r.resolved == Ids{"a"});
  CHECK(r.unresolved == Ids{"nope"});
}

TEST_CASE("full shows string values as they are and other JSON pretty-printed") {
  InMemoryArtifactStore store;
  put(store, "t", "obj", nlohmann::json{{"p50_ms", 41}});
  put(store, "t", "num", 42);
  auto r = expand_references("<artifact id=\"obj\" />|<artifact id=\"num\" />", store, "t");
  CHECK(r.text == "{\n  \"p50_ms\": 41\n}|42");
}

TEST_CASE("a record with only a storage_url cannot be shown in full and stays a reference") {
  InMemoryArtifactStore store;
  (void)store.store(*ArtifactRecord::builder()
                         .tenant_id("t")
                         .id("big")
                         .type(ArtifactType::dataset)
                         .title("Big dataset")
                         .storage_url("s3://bucket/big.parquet")
                         .build());
  const std::string text = "<artifact id=\"big\" />";
  auto full = expand_references(text, store, "t");
  CHECK(full.text == text);
  CHECK(full.unresolved == Ids{"big"});
  auto summary = reveal(text, RevealPolicy::summary, store, "t");
  CHECK(summary.text == "<artifact id=\"big\" summary=\"Big dataset\" />");
  CHECK(summary.resolved == Ids{"big"});
}

TEST_CASE("content is not scanned again: references inside an artifact stay as they are") {
  InMemoryArtifactStore store;
  put(store, "t", "a", "A refers to <artifact id=\"b\" /> and to itself <artifact id=\"a\" />");
  put(store, "t", "b", "B");
  auto r = expand_references("<artifact id=\"a\" />", store, "t");
  CHECK(r.text == "A refers to <artifact id=\"b\" /> and to itself <artifact id=\"a\" />");
  CHECK(r.resolved == Ids{"a"});
}

TEST_CASE("references in code fences are not revealed") {
  InMemoryArtifactStore store;
  put(store, "t", "a", "CONTENT");
  const std::string text = "<artifact id=\"a\" />\n```\nExample: <artifact id=\"a\" />\n```\n<artifact id=\"a\" />";
  CHECK(expand_references(text, store, "t").text == "CONTENT\n```\nExample: <artifact id=\"a\" />\n```\nCONTENT");
}

TEST_CASE("ids with odd characters resolve through escaped references") {
  InMemoryArtifactStore store;
  for (const std::string id : {"q\"u&o<t>e's", "with space", "\xC3\xBCn\xC3\xAF/\xF0\x9F\x99\x82"}) {
    INFO(id);
    put(store, "t", id, "content of " + id);
    auto r = expand_references("[" + render_reference(id, "s") + "]", store, "t");
    CHECK(r.text == "[content of " + id + "]");
    CHECK(r.resolved == Ids{id});
  }
  // Ids no record can have are reported without a store round trip.
  CountingStore counting;
  const std::string long_id(ArtifactRecord::max_id_length + 1, 'x');
  auto r = expand_references("<artifact id=\"\" /> <artifact id=\"" + long_id + "\" />", counting, "t");
  CHECK(r.unresolved == Ids{"", long_id});
  CHECK(counting.fetches == 0);
}

TEST_CASE("text without references comes back unchanged") {
  InMemoryArtifactStore store;
  for (const std::string text : {"", "plain", "a < b > c & d", "<artifacts/>", "```\n<artifact id=\"x\" />\n```"}) {
    auto r = expand_references(text, store, "t");
    CHECK(r.text == text);
    CHECK(r.resolved.empty());
  }
}

TEST_CASE("limits: the input and the revealed text are bounded, with clear errors") {
  InMemoryArtifactStore store;
  put(store, "t", "big", std::string(1000, 'x'));
  RevealOptions options;
  options.max_input_bytes = 30;
  CHECK_THROWS_AS(reveal(std::string(31, 'a'), RevealPolicy::none, store, "t", options), limit_exceeded);
  CHECK_THROWS_WITH(reveal(std::string(31, 'a'), RevealPolicy::none, store, "t", options),
                    cairn_test::ContainsSubstring("text is 31 bytes, more than the limit of 30 bytes"));

  options = RevealOptions{};
  options.max_output_bytes = 2500;
  const std::string three = "<artifact id=\"big\" /><artifact id=\"big\" /><artifact id=\"big\" />";
  CHECK_THROWS_AS(expand_references(three, store, "t", options), limit_exceeded);
  CHECK_THROWS_WITH(expand_references(three, store, "t", options),
                    cairn_test::ContainsSubstring("past 2500 bytes (RevealOptions::max_output_bytes) at the "
                                                  "reference to 'big' at offset 42"));
  options.max_output_bytes = 3000;
  CHECK(expand_references(three, store, "t", options).text == std::string(3000, 'x'));
}

TEST_CASE("bad arguments are rejected") {
  InMemoryArtifactStore store;
  CHECK_THROWS_AS(reveal("x", RevealPolicy::full, store, ""), invalid_argument);
  CHECK(parse_reveal_policy("none") == RevealPolicy::none);
  CHECK(parse_reveal_policy("summary") == RevealPolicy::summary);
  CHECK(parse_reveal_policy("full") == RevealPolicy::full);
  for (auto p : {RevealPolicy::none, RevealPolicy::summary, RevealPolicy::full}) {
    CHECK(parse_reveal_policy(to_string(p)) == p);
  }
  CHECK_THROWS_AS(parse_reveal_policy("Full"), invalid_argument);
  CHECK_THROWS_WITH(parse_reveal_policy("everything"), "reveal policy: 'everything' is not one of none, summary, full");
}

TEST_CASE("a 10 MB artifact expands in a final answer") {
  InMemoryArtifactStore store;
  const std::string content(10u * 1024u * 1024u, 'z');
  put(store, "t", "huge", content);
  auto r = expand_references("Report:\n<artifact id=\"huge\" summary=\"10 MB\" />\nEnd.", store, "t");
  CHECK(r.text.size() == content.size() + 13);
  CHECK(r.text.compare(0, 8, "Report:\n") == 0);
  CHECK(r.text.compare(r.text.size() - 5, 5, "\nEnd.") == 0);
}

TEST_CASE("fuzz: with nothing in the store, every policy leaves any text as it is and reports its ids") {
  InMemoryArtifactStore empty;
  std::mt19937 rng(7);
  const std::vector<std::string> pieces = {"<artifact", " id=", " summary=",   "\"",  "'",
                                           "/>",        ">",    "</artifact>", "```", "\n",
                                           " ",         "x",    "&quot;",      "<",   "draft"};
  std::uniform_int_distribution<std::size_t> pick(0, pieces.size() - 1);
  std::uniform_int_distribution<int> length(0, 40);
  for (int round = 0; round < 5000; ++round) {
    std::string text;
    for (int n = length(rng); n > 0; --n) text += pieces[pick(rng)];
    INFO(text);
    Ids ids;
    for (const auto& r : find_references(text)) {
      if (std::find(ids.begin(), ids.end(), r.id) == ids.end()) ids.push_back(r.id);
    }
    for (auto policy : {RevealPolicy::none, RevealPolicy::summary, RevealPolicy::full}) {
      const auto r = reveal(text, policy, empty, "t");
      REQUIRE(r.text == text);
      REQUIRE(r.unresolved == ids);
      REQUIRE(r.resolved.empty());
    }
  }
}
