// The C++ snippets of docs/search.md: each lies between `// [docs:<name>]` and `// [docs:end]` in this file, so the
// test suite compiles and runs it (the convention of tests/testing/docs_snippets.cmake: the page shows exactly these
// lines, each block after a `<!-- snippet: tests/artifact/search_docs_test.cpp <name> -->` line).
#include <memory>
#include <string>
#include <vector>

#include "catch.hpp"

// [docs:search-host]
#include <cctype>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <cairn/artifact/memory_store.hpp>

// The host's model: cairn calls it and never a model of its own. A STAND-IN here (each word hashed to one of 63
// dimensions, a constant 64th so that no vector is all zeros); a real adapter sends the batch to its embedding model.
class HashEmbedder final : public cairn::Embedder {
 public:
  std::string model() const override { return "word-hash-64"; }
  std::size_t dimension() const override { return 64; }
  // Called outside every store lock, possibly on several threads at once: thread-safe (this one keeps no state).
  std::vector<std::vector<float>> embed(const std::vector<std::string>& texts) override {
    std::vector<std::vector<float>> out;
    for (const std::string& text : texts) {
      std::vector<float> v(64, 0.0f);
      v[63] = 0.01f;
      std::uint32_t h = 2166136261u;  // FNV-1a of the word so far
      for (std::size_t i = 0; i <= text.size(); ++i) {
        const auto c = static_cast<unsigned char>(i < text.size() ? text[i] : ' ');
        if (std::isalnum(c)) {
          h = (h ^ static_cast<std::uint32_t>(std::tolower(c))) * 16777619u;
        } else if (h != 2166136261u) {
          v[h % 63] += 1.0f;
          h = 2166136261u;
        }
      }
      out.push_back(std::move(v));
    }
    return out;
  }
};

std::shared_ptr<cairn::InMemoryArtifactStore> make_store() {
  cairn::InMemoryStoreOptions options;
  options.embedder = std::make_shared<HashEmbedder>();  // every record is embedded as it is stored
  return std::make_shared<cairn::InMemoryArtifactStore>(options);
}

void store_dataset(cairn::ArtifactStore& store, const std::string& id, const std::string& title,
                   const std::string& region) {
  (void)store.store(cairn::ArtifactRecord::builder()
                        .tenant_id("acme")
                        .id(id)
                        .type(cairn::ArtifactType::dataset)
                        .title(title)
                        .value("revenue per quarter and region, in EUR")
                        .metadata("region", region)
                        .build());  // searchable by words and meaning once store() returns
}

// Every hit of one query, page by page.
std::vector<cairn::SearchHit> revenue_datasets(const cairn::ArtifactStore& store) {
  cairn::SearchQuery q;
  q.text = "quarterly revenue";  // words; with the store's embedder also meaning: hybrid
  q.filter.type = cairn::ArtifactType::dataset;
  // json::array: a bare {"emea", "apac"} would make nlohmann build the object {"emea": "apac"}
  q.filter.metadata.push_back({"/region", cairn::FieldOp::in, nlohmann::json::array({"emea", "apac"})});
  q.filter.created_after = 1700000000000;  // ms since the epoch (created_before is exclusive)
  q.limit = 10;
  std::vector<cairn::SearchHit> all;
  for (;;) {
    cairn::SearchPage page = store.search("acme", q);
    for (cairn::SearchHit& hit : page.hits) {
      // hit.record (shared, not copied), hit.score, and why: hit.matched.words / .fields / .similarity /
      // .text_rank / .vector_rank
      all.push_back(std::move(hit));
    }
    if (!page.next_cursor) break;
    q.cursor = *page.next_cursor;  // the next page of the same query
  }
  return all;
}
// [docs:end]

TEST_CASE("docs/search.md: the host's program stores, then finds by words, meaning and filters") {
  auto store = make_store();
  store_dataset(*store, "q3-emea", "Quarterly revenue EMEA", "emea");
  store_dataset(*store, "q3-apac", "Revenue APAC", "apac");
  store_dataset(*store, "q3-amer", "Quarterly revenue AMER", "amer");  // filtered out by region
  // A document, filtered out by type.
  (void)store->store(cairn::ArtifactRecord::builder()
                         .tenant_id("acme")
                         .id("memo")
                         .type("document")
                         .title("Quarterly revenue memo")
                         .value("notes")
                         .metadata("region", "emea")
                         .build());
  const auto hits = revenue_datasets(*store);
  REQUIRE(hits.size() == 2);
  CHECK(hits[0].record->id() == "q3-emea");  // both words in its title: first in both lists
  CHECK(hits[0].matched.text_rank == 1);
  CHECK(hits[0].matched.vector_rank == 1);
  CHECK(hits[0].matched.similarity.has_value());
  CHECK(hits[1].record->id() == "q3-apac");  // "quarterly" is not in it: found by meaning alone
  CHECK(hits[1].matched.text_rank == 0);
  CHECK(hits[1].matched.vector_rank == 2);
}

TEST_CASE("docs/search.md: exact by default, ef asks for the graph, exact and ef exclude each other") {
  auto store = make_store();
  store_dataset(*store, "a", "Quarterly revenue EMEA", "emea");
  store_dataset(*store, "b", "Headcount APAC", "apac");
  const std::vector<float> query_vector = HashEmbedder().embed({"quarterly revenue"}).front();
  // [docs:search-ef]
  cairn::SearchQuery q;
  q.vector = cairn::Embedding{"word-hash-64", query_vector};  // a vector of the store's model and dimension
  q.mode = cairn::SearchMode::similarity;
  const cairn::SearchPage exact = store->search("acme", q);  // the default: the exact top 10 at any size
  q.ef = 200;  // approximate where it pays: a tenant of 2,048 vectors or more, built with CAIRN_WITH_HNSWLIB
  const cairn::SearchPage fast = store->search("acme", q);
  q.exact = true;  // says "exact" out loud; together with ef it is an invalid_argument
  // [docs:end]
  CHECK_THROWS_AS(store->search("acme", q), cairn::invalid_argument);
  q.ef = 0;
  const cairn::SearchPage explicit_exact = store->search("acme", q);
  REQUIRE(exact.hits.size() == 2);
  REQUIRE(fast.hits.size() == 2);  // two vectors: far below the graph's line, so the scan answered
  REQUIRE(explicit_exact.hits.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(fast.hits[i].record->id() == exact.hits[i].record->id());
    CHECK(fast.hits[i].score == exact.hits[i].score);
    CHECK(explicit_exact.hits[i].score == exact.hits[i].score);
  }
  CHECK(exact.hits[0].record->id() == "a");
  q.exact = false;
  q.ef = cairn::SearchQuery::max_ef + 1;
  CHECK_THROWS_AS(store->search("acme", q), cairn::limit_exceeded);
}

TEST_CASE("docs/search.md: a vector the host made, and what reindex is for") {
  auto store = make_store();
  const auto record = cairn::ArtifactRecord::builder()
                          .tenant_id("acme")
                          .id("chart")
                          .type("image")
                          .title("Revenue chart")
                          .storage_url("s3://acme/chart.png")
                          .build();
  std::vector<float> vector(64, 0.0f);
  vector[5] = 1.0f;
  // [docs:search-embedded]
  // A vector made elsewhere (of the store's model and dimension, when it has an embedder): kept as given.
  const cairn::ArtifactPtr stored = store->store_embedded(*record, cairn::Embedding{"word-hash-64", vector});
  // [docs:end]
  CHECK(store->embedding("chart", "acme", stored->version())->values == vector);
  CHECK_THROWS_AS(store->store_embedded(*record, cairn::Embedding{"other-model", vector}), cairn::invalid_argument);
  cairn::SearchQuery q;
  q.text = "revenue";
  // [docs:search-reindex]
  const cairn::SearchPage page = store->search("acme", q);
  if (page.unindexed > 0) {
    // Versions words or meaning cannot see yet (stored before search or before the embedder): index them. Resumable;
    // progress goes to the store's observer.
    store->reindex("acme");
  }
  // [docs:end]
  CHECK(page.unindexed == 0);  // the in-memory store indexes everything as it stores it
  CHECK(store->reindex("acme") == 0);
  REQUIRE(page.hits.size() == 1);
  CHECK(page.hits[0].record->id() == "chart");
}

TEST_CASE("docs/search.md: filters alone come in id order, score 0") {
  auto store = make_store();
  store_dataset(*store, "b", "Revenue B", "emea");
  store_dataset(*store, "a", "Revenue A", "emea");
  store_dataset(*store, "c", "Revenue C", "apac");
  cairn::SearchQuery q;
  q.filter.metadata.push_back({"/region", cairn::FieldOp::eq, "emea"});
  const auto page = store->search("acme", q);
  REQUIRE(page.hits.size() == 2);
  CHECK(page.hits[0].record->id() == "a");
  CHECK(page.hits[1].record->id() == "b");
  CHECK(page.hits[0].score == 0);
}
