// Search's shared pieces (cairn/artifact/search.hpp) and the default search of ArtifactStore: the tokenizer, the
// word-query parser, typed filters, BM25's exact scores, the cursor, and similarity and hybrid ranking on a store
// that keeps vectors. The behaviour every backend must show is in the conformance suite (store_conformance_test).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>
#include <tuple>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/artifact/search.hpp"
#include "cairn/artifact/search/pipeline.hpp"
#include "cairn/observe.hpp"
#include "cairn/testing/embedder.hpp"
#include "cairn/testing/store_conformance.hpp"
#include "catch.hpp"

using cairn::ArtifactRecord;
using cairn::ArtifactStore;
using cairn::Embedding;
using cairn::FieldOp;
using cairn::SearchQuery;
using nlohmann::json;

namespace {

ArtifactRecord::Builder doc(const std::string& id, json value, const std::string& title = "t") {
  auto b = ArtifactRecord::builder();
  b.tenant_id("acme").id(id).type(cairn::ArtifactType::document).title(title).value(std::move(value));
  return b;
}

// A store that keeps a vector per version beside an in-memory store: what the default search needs for similarity.
class VectorStore final : public ArtifactStore {
 public:
  using ArtifactStore::store;
  cairn::ArtifactPtr store(const ArtifactRecord& r) override { return inner_.store(r); }
  cairn::ArtifactPtr store_if(const ArtifactRecord& r, std::uint64_t v) override { return inner_.store_if(r, v); }
  cairn::ArtifactPtr fetch(const std::string& id, const std::string& t, std::uint64_t v) const override {
    return inner_.fetch(id, t, v);
  }
  void remove(const std::string& id, const std::string& t) override {
    inner_.remove(id, t);
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = vectors_.begin(); it != vectors_.end();) {
      it = std::get<0>(it->first) == t && std::get<1>(it->first) == id ? vectors_.erase(it) : std::next(it);
    }
  }
  std::vector<std::uint64_t> versions(const std::string& id, const std::string& t) const override {
    return inner_.versions(id, t);
  }
  cairn::ListPage list(const std::string& t, const cairn::ListQuery& q) const override { return inner_.list(t, q); }
  std::optional<Embedding> embedding(const std::string& id, const std::string& t, std::uint64_t v) const override {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = vectors_.find({t, id, v});
    if (it == vectors_.end()) return std::nullopt;
    return it->second;
  }
  bool keeps_embeddings() const noexcept override { return true; }
  cairn::ArtifactPtr store_embedded(const ArtifactRecord& r, const Embedding& e) override {
    cairn::detail::check_vector("store_embedded", e);
    auto stored = inner_.store(r);
    std::lock_guard<std::mutex> lock(mutex_);
    vectors_[{stored->tenant_id(), stored->id(), stored->version()}] = e;
    return stored;
  }

  cairn::ArtifactPtr put(ArtifactRecord::Builder b, Embedding e) {
    auto stored = inner_.store(*b.build());
    std::lock_guard<std::mutex> lock(mutex_);
    vectors_[{stored->tenant_id(), stored->id(), stored->version()}] = std::move(e);
    return stored;
  }

 private:
  cairn::InMemoryArtifactStore inner_;
  mutable std::mutex mutex_;
  std::map<std::tuple<std::string, std::string, std::uint64_t>, Embedding> vectors_;
};

std::vector<std::string> ids(const cairn::SearchPage& p) {
  std::vector<std::string> out;
  for (const auto& h : p.hits) out.push_back(h.record->id());
  return out;
}

}  // namespace

TEST_CASE("words: ASCII letters and digits and UTF-8 characters, ASCII folded to lowercase") {
  using V = std::vector<std::string>;
  CHECK(cairn::detail::words_of("Hello, World-42! x_y") == V{"hello", "world", "42", "x", "y"});
  CHECK(cairn::detail::words_of("Grüße ÄPFEL") == V{"grüße", "Äpfel"});  // non-ASCII is kept as it is
  CHECK(cairn::detail::words_of("  ...  ").empty());
}

TEST_CASE("the word query: words, phrases, exclusions and OR, errors name the byte") {
  auto q = cairn::detail::parse_word_query("Alpha \"Beta  gamma\" -delta x OR \"y z\"");
  REQUIRE(q.all_of.size() == 3);
  CHECK(q.all_of[0][0].words == std::vector<std::string>{"alpha"});
  CHECK(q.all_of[1][0].words == std::vector<std::string>{"beta", "gamma"});
  REQUIRE(q.all_of[2].size() == 2);
  CHECK(q.all_of[2][1].text() == "y z");
  REQUIRE(q.none_of.size() == 1);
  CHECK(q.none_of[0].text() == "delta");
  CHECK(q.words() == std::vector<std::string>{"alpha", "beta", "gamma", "x", "y", "z"});
  CHECK(cairn::detail::parse_word_query("a-b").all_of.size() == 2);  // a hyphen inside a word only separates

  CHECK_THROWS_WITH(cairn::detail::parse_word_query("ok \"open"),
                    "search: query text: the quote at byte 3 is not closed");
  CHECK_THROWS_WITH(cairn::detail::parse_word_query("OR a"),
                    "search: query text: OR at byte 0 must stand between two words or phrases");
  CHECK_THROWS_AS(cairn::detail::parse_word_query("a OR -b"), cairn::invalid_argument);
  CHECK_THROWS_WITH(cairn::detail::parse_word_query("-a"), "search: query text excludes words but asks for none");
  std::string many;
  for (int i = 0; i <= 64; ++i) many += "w ";
  CHECK_THROWS_AS(cairn::detail::parse_word_query(many), cairn::limit_exceeded);
}

TEST_CASE("filter comparisons are typed, across integer kinds and doubles") {
  using cairn::detail::compare_scalars;
  CHECK(compare_scalars(json(-1), json(std::numeric_limits<std::uint64_t>::max())) == -1);
  CHECK(compare_scalars(json(std::numeric_limits<std::uint64_t>::max()), json(std::int64_t{5})) == 1);
  CHECK(compare_scalars(json(3), json(3.0)) == 0);
  CHECK(compare_scalars(json(2.5), json(3)) == -1);
  CHECK(compare_scalars(json("b"), json("a")) == 1);
  CHECK_FALSE(compare_scalars(json("1"), json(1)).has_value());
  CHECK_FALSE(compare_scalars(json(true), json(1)).has_value());
  CHECK(compare_scalars(json(nullptr), json(nullptr)) == 0);

  const json meta = {{"n", 7}, {"s", "x"}, {"deep", {{"list", {1, 2}}}}, {"a~b", 1}};
  using C = cairn::FieldCondition;
  CHECK(cairn::detail::condition_holds(meta, C{"/deep/list/1", FieldOp::eq, 2}));
  CHECK(cairn::detail::condition_holds(meta, C{"/a~0b", FieldOp::exists, nullptr}));
  CHECK_FALSE(cairn::detail::condition_holds(meta, C{"/deep", FieldOp::eq, 1}));  // an object compares with nothing
  CHECK_FALSE(cairn::detail::condition_holds(meta, C{"/missing", FieldOp::lt, 10}));
  CHECK(cairn::detail::condition_holds(meta, C{"/s", FieldOp::ne, 1}));  // another type is not equal
  CHECK(cairn::detail::condition_holds(json(nullptr), C{"/n", FieldOp::ne, 1}));
}

TEST_CASE("BM25 scores are Lucene's and FTS5's formula, exactly") {
  auto store = std::make_shared<cairn::InMemoryArtifactStore>();
  (void)store->store(*doc("a", "apple apple banana", "x").build());  // 3 + title 1 = 4 words
  (void)store->store(*doc("b", "banana cherry", "x").build());       // 3 words
  (void)store->store(*doc("c", "cherry", "x").build());              // 2 words
  SearchQuery q;
  q.text = "apple";
  const auto page = store->search("acme", q);
  REQUIRE(ids(page) == std::vector<std::string>{"a"});
  // N = 3, n = 1, tf = 2, |d| = 4, avgdl = 3: idf = ln(1 + 2.5 / 1.5), tf part = 2 * 2.2 / (2 + 1.2 * (0.25 + 1))
  const double expected = std::log(1.0 + 2.5 / 1.5) * (2 * 2.2) / (2 + 1.2 * (0.25 + 0.75 * 4.0 / 3.0));
  CHECK(page.hits[0].score == Approx(expected).epsilon(1e-12));
  CHECK(page.hits[0].matched.text_rank == 1);
  CHECK(page.hits[0].matched.vector_rank == 0);
  CHECK_FALSE(page.hits[0].matched.similarity.has_value());
}

TEST_CASE("the value's words: string leaves and member names, bounded, cut at a character") {
  const json v = {{"Name", "Ann"}, {"rows", {{{"city", "Oslo"}}, 3, true}}};
  CHECK(cairn::detail::value_text(v) == "Name\nAnn\nrows\ncity\nOslo");
  const std::string cut = cairn::detail::value_text(json(std::string(10, 'a') + "é"), 11);
  CHECK(cut == std::string(10, 'a'));  // "é" is two bytes: not cut in half
}

TEST_CASE("a cursor belongs to its query and cannot be forged into another position") {
  auto store = std::make_shared<cairn::InMemoryArtifactStore>();
  for (int i = 0; i < 4; ++i) (void)store->store(*doc("d" + std::to_string(i), "same").build());
  SearchQuery q;
  q.filter.id_prefix = "d";
  q.limit = 3;
  const auto first = store->search("acme", q);
  REQUIRE(first.next_cursor);
  q.cursor = *first.next_cursor;
  CHECK(ids(store->search("acme", q)) == std::vector<std::string>{"d3"});
  for (const std::string& bad :
       {std::string("x"), q.cursor.substr(0, 20), cairn::detail::search_fingerprint(q) + ".zz.1.d1",
        cairn::detail::search_fingerprint(q) + ".0000000000000000.x.d1"}) {
    SearchQuery b = q;
    b.cursor = bad;
    CHECK_THROWS_AS(store->search("acme", b), cairn::invalid_argument);
  }
  q.filter.id_prefix = "e";
  CHECK_THROWS_AS(store->search("acme", q), cairn::invalid_argument);
}

TEST_CASE("similarity ranks by cosine among vectors of the query's model only, hybrid fuses the two rankings") {
  auto store = std::make_shared<VectorStore>();
  store->put(doc("north", "points north"), {"m1", {0.0f, 1.0f}});
  store->put(doc("east", "points east"), {"m1", {1.0f, 0.0f}});
  store->put(doc("northeast", "points north and east"), {"m1", {1.0f, 1.0f}});
  store->put(doc("other-model", "points north"), {"m2", {0.0f, 1.0f}});
  (void)store->store(*doc("no-vector", "points north").build());

  SearchQuery q;
  q.vector = Embedding{"m1", {0.1f, 1.0f}};
  auto page = store->search("acme", q);
  CHECK(ids(page) == std::vector<std::string>{"north", "northeast", "east"});
  REQUIRE(page.hits[0].matched.similarity);
  CHECK(*page.hits[0].matched.similarity == Approx(1.0 / std::sqrt(1.01)));
  CHECK(page.hits[2].matched.vector_rank == 3);

  q.vector = Embedding{"m1", {1.0f, 0.0f, 0.0f}};  // another dimension: nothing of m1 compares
  CHECK(store->search("acme", q).hits.empty());

  // Hybrid: "north" by words matches north, northeast, other-model and no-vector; by vector (east-ish) east first.
  q.vector = Embedding{"m1", {1.0f, 0.2f}};
  q.text = "north";
  page = store->search("acme", q);
  REQUIRE(page.hits.size() == 5);
  // Words rank no-vector, north, other-model (equal length, id order), then northeast (longer); the vector ranks
  // east, northeast, north. Fused, north (2nd and 3rd) comes first, ahead of northeast (4th and 2nd).
  CHECK(page.hits[0].record->id() == "north");
  CHECK(page.hits[1].record->id() == "northeast");
  for (const auto& h : page.hits) {
    CHECK(h.score == Approx(cairn::detail::rrf(h.matched.text_rank, h.matched.vector_rank)));
  }
  q.mode = cairn::SearchMode::text;
  CHECK(store->search("acme", q).hits.size() == 4);
  q.mode = cairn::SearchMode::similarity;
  CHECK(store->search("acme", q).hits.size() == 3);

  // A vector store passes the whole suite too, its similarity included.
  for (const auto& check : cairn::testing::store_conformance_checks()) {
    INFO(check.name);
    VectorStore fresh;
    check.run(fresh);
  }
}

TEST_CASE("an observed store forwards search to the store it wraps and reports it") {
  auto inner = std::make_shared<VectorStore>();
  inner->put(doc("a", "hello"), {"m", {1.0f}});
  int searches = 0;
  auto store = cairn::observed(inner, std::make_shared<cairn::FunctionObserver>([&searches](const cairn::Event& e) {
                                 if (e.operation == "search") {
                                   ++searches;
                                   CHECK(e.items == 1);
                                 }
                               }));
  CHECK(store->keeps_embeddings());
  SearchQuery q;
  q.vector = Embedding{"m", {2.0f}};
  CHECK(ids(store->search("acme", q)) == std::vector<std::string>{"a"});
  CHECK(searches == 1);
}

using cairn::testing::WordHashEmbedder;

TEST_CASE("an in-memory store with an embedder keeps a vector per version and searches by meaning") {
  auto embedder = std::make_shared<WordHashEmbedder>();
  cairn::InMemoryStoreOptions options;
  options.embedder = embedder;
  auto store = std::make_shared<cairn::InMemoryArtifactStore>(options);
  CHECK(store->keeps_embeddings());
  (void)store->store(*doc("cats", "cats purr and sleep", "cats").build());
  (void)store->store(*doc("dogs", "dogs bark and run", "dogs").build());
  CHECK(embedder->calls.load() == 2);
  const auto e = store->embedding("cats", "acme", 1);
  REQUIRE(e);
  CHECK(e->model == "word-hash-8");
  CHECK(e->values == embedder->embed({embedder->text_of(*store->fetch("cats", "acme"))})[0]);
  CHECK_FALSE(store->embedding("cats", "acme", 2));
  CHECK_FALSE(store->embedding("cats", "other-tenant", 1));

  // Text only: the store embeds it, and automatic mode ranks by words and meaning (hybrid).
  SearchQuery q;
  q.text = "cats sleep";
  auto page = store->search("acme", q);
  REQUIRE_FALSE(page.hits.empty());
  CHECK(page.hits[0].record->id() == "cats");
  CHECK(page.hits[0].matched.text_rank == 1);
  CHECK(page.hits[0].matched.vector_rank == 1);
  q.mode = cairn::SearchMode::similarity;  // meaning alone: every record with a vector, nearest first
  CHECK(ids(store->search("acme", q)) == std::vector<std::string>{"cats", "dogs"});

  // A new version gets its own vector; removing the artifact drops them all, and a new version 1 is embedded anew.
  (void)store->store(*doc("cats", "cats hunt mice", "cats").build());
  CHECK(store->embedding("cats", "acme", 1));
  CHECK(store->embedding("cats", "acme", 2));
  store->remove("cats", "acme");
  CHECK_FALSE(store->embedding("cats", "acme", 1));
  (void)store->store(*doc("cats", "dogs bark and run", "dogs").build());
  CHECK(store->embedding("cats", "acme", 1)->values == store->embedding("dogs", "acme", 1)->values);
  CHECK_FALSE(store->embedding("cats", "acme", 2));
}

TEST_CASE("an embedder that fails or returns bad vectors fails the store with its reason, and nothing is stored") {
  auto embedder = std::make_shared<WordHashEmbedder>();
  cairn::InMemoryStoreOptions options;
  options.embedder = embedder;
  cairn::InMemoryArtifactStore store(options);
  (void)store.store(*doc("kept", "still here").build());
  const char* reasons[] = {"", "returned 0 vectors for 1 texts", "vector 0 has 7 dimensions, not 8",
                           "vector 0 [2] is not a finite number"};
  using Fault = WordHashEmbedder::Fault;
  const Fault faults[] = {Fault::none, Fault::missing_vector, Fault::short_vector, Fault::infinite, Fault::throws};
  for (int broken = 1; broken <= 4; ++broken) {
    INFO(broken);
    embedder->fault = faults[broken];
    if (broken == 4) {
      CHECK_THROWS_WITH(store.store(*doc("new", "x").build()), "the model is down");
      CHECK_THROWS_WITH(store.store(*doc("kept", "x").build()), "the model is down");
    } else {
      CHECK_THROWS_WITH(store.store(*doc("new", "x").build()),
                        Catch::Contains("embedder 'word-hash-8': ") && Catch::Contains(reasons[broken]));
    }
    CHECK_FALSE(store.fetch("new", "acme"));
    CHECK(store.versions("kept", "acme") == std::vector<std::uint64_t>{1});
  }
  embedder->fault = Fault::throws;
  SearchQuery q;
  q.text = "still";
  CHECK_THROWS_WITH(store.search("acme", q), "the model is down");  // the query's text is embedded too
  q.mode = cairn::SearchMode::text;                                 // words alone need no model
  CHECK(ids(store.search("acme", q)) == std::vector<std::string>{"kept"});
}

TEST_CASE("an in-memory store with an embedder passes the whole conformance suite") {
  for (const auto& check : cairn::testing::store_conformance_checks()) {
    INFO(check.name);
    cairn::InMemoryStoreOptions options;
    options.embedder = std::make_shared<WordHashEmbedder>();
    cairn::InMemoryArtifactStore store(options);
    check.run(store);
  }
}

namespace {
// Everything a hit says, for comparing two searches exactly (scores to the bit).
std::string dump(const cairn::SearchPage& p) {
  std::string out;
  for (const auto& h : p.hits) {
    out += fmt::format("{}#{} {:a} [{}] [{}] {} {} {}\n", h.record->id(), h.record->version(), h.score,
                       fmt::join(h.matched.words, ","), fmt::join(h.matched.fields, ","),
                       h.matched.similarity ? fmt::format("{:a}", *h.matched.similarity) : "-", h.matched.text_rank,
                       h.matched.vector_rank);
  }
  return out + (p.next_cursor ? *p.next_cursor : "end");
}
}  // namespace

TEST_CASE("the in-memory store's indexes find exactly what the scan finds, with the same scores, pages and all") {
  // A random corpus of stores, re-saves and removes, then random queries: the store's search (postings, BM25 from
  // the index's statistics, exact vector scan) against the default scan over the same records, whole pages compared.
  const char* env = std::getenv("CAIRN_SEARCH_SEED");
  const unsigned seed = env ? static_cast<unsigned>(std::stoul(env)) : std::random_device{}();
  INFO("CAIRN_SEARCH_SEED=" << seed);
  std::mt19937 rng(seed);
  const auto pick = [&rng](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
  const std::vector<std::string> vocabulary{"alpha", "beta",  "gamma", "delta", "omega",
                                            "sigma", "kappa", "zeta",  "Grüße", "x1"};
  const auto words = [&](std::size_t n) {
    std::string s;
    for (std::size_t i = 0; i < n; ++i) s += vocabulary[pick(vocabulary.size())] + (pick(4) ? " " : ", ");
    return s;
  };
  const auto vec = [&]() {
    std::vector<float> v(4);
    for (auto& x : v) x = static_cast<float>(static_cast<int>(pick(21)) - 10) / 10.0f;
    v[pick(4)] = 1.0f;
    return v;
  };
  for (const bool bounded : {false, true}) {
    cairn::InMemoryStoreOptions options;
    if (bounded) options.max_parsed_bytes = 2000;  // most records kept packed: the search decodes them
    cairn::InMemoryArtifactStore store(options);
    for (int op = 0; op < 160; ++op) {
      const std::string tenant = pick(5) ? "acme" : "other";
      const std::string id = fmt::format("d{}", pick(40));
      if (pick(8) == 0 && !store.versions(id, tenant).empty()) {
        store.remove(id, tenant);
        continue;
      }
      auto b = ArtifactRecord::builder();
      b.tenant_id(tenant)
          .id(id)
          .type(pick(2) ? "code" : "document")
          .title(words(1 + pick(3)))
          .description(words(pick(4)))
          .created_at(1000 + op)
          .metadata({{"n", static_cast<int>(pick(5))}});
      if (pick(3)) {
        b.value(json{{"text", words(pick(12))}, {"k", words(1)}});
      } else {
        b.value(words(pick(6)));
      }
      if (pick(4)) {
        (void)store.store_embedded(*b.build(), Embedding{pick(6) ? "m" : "m2", vec()});
      } else {
        (void)store.store(*b.build());
      }
    }
    const char* rounds_env = std::getenv("CAIRN_SEARCH_ROUNDS");  // queries per store; more for a longer hunt
    const int rounds = rounds_env ? std::stoi(rounds_env) : 60;
    for (int round = 0; round < rounds; ++round) {
      SearchQuery q;
      const std::size_t kind = pick(5);
      if (kind != 3) {
        std::string text = vocabulary[pick(vocabulary.size())];
        if (pick(3) == 0) text += " " + vocabulary[pick(vocabulary.size())];
        if (pick(4) == 0) text = "\"" + text + " " + vocabulary[pick(vocabulary.size())] + "\"";
        if (pick(4) == 0) text += " OR " + vocabulary[pick(vocabulary.size())];
        if (pick(5) == 0) text += " -" + vocabulary[pick(vocabulary.size())];
        q.text = text;
      }
      if (kind >= 2) {
        q.vector = Embedding{pick(5) ? "m" : "m2", vec()};
        q.exact = true;
      }
      q.mode = kind == 0 || kind == 1 ? cairn::SearchMode::text
               : kind == 2            ? cairn::SearchMode::hybrid
               : kind == 3            ? cairn::SearchMode::similarity
                                      : cairn::SearchMode::automatic;
      if (kind == 1 || pick(3) == 0) {
        switch (pick(4)) {
          case 0: q.filter.type = cairn::ArtifactType::code; break;
          case 1: q.filter.id_prefix = fmt::format("d{}", pick(4)); break;
          case 2: q.filter.metadata = {{"/n", FieldOp::ge, static_cast<int>(pick(5))}}; break;
          default: q.filter.created_after = 1000 + static_cast<int>(pick(160)); break;
        }
      }
      if (pick(6) == 0) {  // filters alone
        q.text.clear();
        q.vector.reset();
        q.mode = cairn::SearchMode::automatic;
        q.filter.id_prefix = "d";
      }
      q.all_versions = pick(3) == 0;
      q.limit = 1 + pick(8);
      const std::string tenant = pick(4) ? "acme" : "other";
      INFO(fmt::format("round {} tenant {} text '{}' mode {} all {} limit {}", round, tenant, q.text,
                       static_cast<int>(q.mode), q.all_versions, q.limit));
      for (int page = 0; page < 30; ++page) {
        const auto got = store.search(tenant, q);
        const auto want = store.ArtifactStore::search(tenant, q);
        REQUIRE(dump(got) == dump(want));
        CHECK(got.unindexed == 0);
        if (!got.next_cursor) break;
        q.cursor = *got.next_cursor;
      }
    }
  }
}

TEST_CASE("the in-memory store's approximate similarity agrees with its exact one, and follows removals") {
  cairn::InMemoryArtifactStore store;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::vector<std::vector<float>> vectors;
  for (int i = 0; i < 300; ++i) {
    std::vector<float> v(16);
    for (auto& x : v) x = unit(rng);
    vectors.push_back(v);
    (void)store.store_embedded(*doc(fmt::format("v{:03}", i), "x").build(), Embedding{"m", v});
  }
  for (int i = 0; i < 300; i += 3) store.remove(fmt::format("v{:03}", i), "acme");
  std::size_t agree = 0, total = 0;
  for (int round = 0; round < 20; ++round) {
    SearchQuery q;
    q.mode = cairn::SearchMode::similarity;
    q.vector = Embedding{"m", vectors[static_cast<std::size_t>(round * 7)]};
    q.exact = true;
    const auto exact = ids(store.search("acme", q));
    q.exact = false;
    const auto approx = store.search("acme", q);
    for (const auto& h : approx.hits) {
      const int n = std::stoi(h.record->id().substr(1));
      CHECK(n % 3 != 0);  // removed ones never come back
      REQUIRE(h.matched.similarity);
      CHECK(*h.matched.similarity == cairn::detail::cosine(q.vector->values, vectors[static_cast<std::size_t>(n)]));
      agree += std::count(exact.begin(), exact.end(), h.record->id());
    }
    total += exact.size();
  }
  CHECK(static_cast<double>(agree) / static_cast<double>(total) >= 0.95);  // recall@10
}

TEST_CASE("an observed store forwards store_embedded, reindex and the embedder, and reports them") {
  cairn::InMemoryStoreOptions options;
  options.embedder = std::make_shared<WordHashEmbedder>();
  auto inner = std::make_shared<cairn::InMemoryArtifactStore>(options);
  struct Seen {
    cairn::EventKind kind;
    std::string operation, subject;
    bool failed;
  };
  std::vector<Seen> events;  // an Event's views live only during the call: copied
  auto store = cairn::observed(
      inner, std::make_shared<cairn::FunctionObserver>([&events](const cairn::Event& e) {
        events.push_back({e.kind, std::string(e.operation), std::string(e.subject), e.error != cairn::errc{}});
      }));
  CHECK(store->embedder() == options.embedder);
  std::vector<float> v(8, 0.0f);
  v[3] = 1.0f;
  const auto stored = store->store_embedded(*doc("given", "x").build(), Embedding{"word-hash-8", v});
  CHECK(inner->embedding("given", "acme", stored->version())->values == v);
  CHECK_THROWS_AS(store->store_embedded(*doc("bad", "x").build(), Embedding{"other", v}), cairn::invalid_argument);
  CHECK(store->reindex("acme") == 0);
  REQUIRE(events.size() == 3);
  CHECK(events[0].operation == "store_embedded");
  CHECK(events[0].subject == "given");
  CHECK(events[1].operation == "store_embedded");
  CHECK(events[1].failed);
  CHECK(events[2].kind == cairn::EventKind::index);
  CHECK(events[2].operation == "reindex");
}

namespace {
// A store holding what `store` holds in `tenants` (every version, its vector, its created_at), written afresh in id
// and version order and never searched before: its indexes are made from scratch by its first search.
std::unique_ptr<cairn::InMemoryArtifactStore> rebuilt(const cairn::InMemoryArtifactStore& store,
                                                      const std::vector<std::string>& tenants,
                                                      const cairn::InMemoryStoreOptions& options) {
  auto out = std::make_unique<cairn::InMemoryArtifactStore>(options);
  for (const auto& t : tenants) {
    cairn::ListQuery lq;
    for (;;) {
      const auto page = store.list(t, lq);
      for (const auto& latest : page.items) {
        for (const std::uint64_t v : store.versions(latest->id(), t)) {
          const auto r = store.fetch(latest->id(), t, v);
          const auto e = store.embedding(latest->id(), t, v);
          const auto copy = e && !options.embedder ? out->store_embedded(*r, *e) : out->store(*r);
          REQUIRE(copy->version() == v);
        }
      }
      if (!page.next_cursor) break;
      lq.cursor = *page.next_cursor;
    }
  }
  return out;
}
}  // namespace

TEST_CASE("an in-memory tenant holds no search structure until a search needs one, and none once it is empty") {
  cairn::InMemoryStoreOptions options;
  options.embedder = std::make_shared<WordHashEmbedder>();
  cairn::InMemoryArtifactStore store(options);
  const auto none = [&store](const std::string& t) {
    const auto s = store.search_indexes(t);
    return !s.words && !s.vectors;
  };
  (void)store.store(*doc("a1", "cats purr and sleep").build());
  (void)store.store(*doc("a2", "dogs bark").build());
  (void)store.store(*doc("b1", "cats hunt").tenant_id("beta").build());
  CHECK(store.searched_tenants().empty());
  CHECK(none("acme"));

  // Filters alone read the records: no index is made.
  SearchQuery q;
  q.filter.id_prefix = "a";
  CHECK(ids(store.search("acme", q)) == std::vector<std::string>{"a1", "a2"});
  CHECK(store.searched_tenants().empty());
  CHECK(none("acme"));
  // A tenant that holds nothing is searched without making anything.
  q = SearchQuery{};
  q.text = "cats";
  q.mode = cairn::SearchMode::similarity;
  CHECK(store.search("gamma", q).hits.empty());
  CHECK(none("gamma"));

  // Similarity (exact, the default, or with exact said) makes the vector indexes only; words make the word index
  // only.
  q.exact = true;
  CHECK(ids(store.search("acme", q)).size() == 2);
  q.exact = false;
  CHECK(ids(store.search("acme", q)).size() == 2);
  CHECK(store.search_indexes("acme").vectors);
  CHECK_FALSE(store.search_indexes("acme").words);
  q = SearchQuery{};
  q.text = "cats";
  q.mode = cairn::SearchMode::text;
  CHECK(ids(store.search("beta", q)) == std::vector<std::string>{"b1"});
  CHECK(store.search_indexes("beta").words);
  CHECK_FALSE(store.search_indexes("beta").vectors);
  CHECK(store.searched_tenants() == std::vector<std::string>{"acme", "beta"});
  // Writes after the first search are found at once.
  (void)store.store(*doc("b2", "cats again").tenant_id("beta").build());
  CHECK(ids(store.search("beta", q)) == std::vector<std::string>{"b1", "b2"});

  // A tenant that holds no artifact any more drops its indexes; written again, it is unsearched until searched.
  store.remove("b1", "beta");
  store.remove("b2", "beta");
  CHECK(none("beta"));
  CHECK(store.searched_tenants() == std::vector<std::string>{"acme"});
  (void)store.store(*doc("b3", "cats at last").tenant_id("beta").build());
  CHECK(none("beta"));
  CHECK(ids(store.search("beta", q)) == std::vector<std::string>{"b3"});
  CHECK(store.search_indexes("beta").words);
}

TEST_CASE("a tenant's indexes made by its first search stay exact through every write after it") {
  // Random writes with searches at random moments between them, so each tenant's indexes are made part way and
  // kept current from there: every page equals the default scan's, and at the end a store written afresh with the
  // same versions and searched only then.
  const char* env = std::getenv("CAIRN_SEARCH_SEED");
  const unsigned seed = env ? static_cast<unsigned>(std::stoul(env)) : std::random_device{}();
  INFO("CAIRN_SEARCH_SEED=" << seed);
  std::mt19937 rng(seed);
  const auto pick = [&rng](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
  const std::vector<std::string> vocabulary{"alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "zeta"};
  const auto words = [&](std::size_t n) {
    std::string s;
    for (std::size_t i = 0; i < n; ++i) s += vocabulary[pick(vocabulary.size())] + " ";
    return s;
  };
  const auto vec = [&]() {
    std::vector<float> v(4);
    for (auto& x : v) x = static_cast<float>(static_cast<int>(pick(21)) - 10) / 10.0f;
    v[pick(4)] = 1.0f;
    return v;
  };
  const std::vector<std::string> tenants{"acme", "other", "third"};
  const auto query = [&]() {
    SearchQuery q;
    const std::size_t kind = pick(4);
    if (kind != 2) q.text = vocabulary[pick(vocabulary.size())] + (pick(3) ? "" : " OR " + words(1));
    if (kind >= 2) {
      q.vector = Embedding{"m", vec()};
      q.exact = pick(2) == 0;
    }
    q.mode = kind < 2 ? cairn::SearchMode::text : kind == 2 ? cairn::SearchMode::similarity : cairn::SearchMode::hybrid;
    q.all_versions = pick(3) == 0;
    q.limit = 1 + pick(6);
    return q;
  };
  for (const bool bounded : {false, true}) {
    cairn::InMemoryStoreOptions options;
    if (bounded) options.max_parsed_bytes = 1500;
    cairn::InMemoryArtifactStore store(options);
    std::size_t searches = 0;
    for (int op = 0; op < 400; ++op) {
      const std::string& tenant = tenants[pick(tenants.size())];
      const std::string id = fmt::format("d{}", pick(30));
      if (pick(6) == 0 && !store.versions(id, tenant).empty()) {
        store.remove(id, tenant);
      } else {
        auto b = doc(id, json{{"text", words(pick(10))}}, words(1 + pick(2)));
        b.tenant_id(tenant).created_at(1000 + op);
        if (pick(3)) {
          (void)store.store_embedded(*b.build(), Embedding{"m", vec()});
        } else {
          (void)store.store(*b.build());
        }
      }
      if (pick(12) == 0) {
        const SearchQuery q = query();
        const std::string& t = tenants[pick(tenants.size())];
        INFO(fmt::format("op {} tenant {} text '{}' mode {}", op, t, q.text, static_cast<int>(q.mode)));
        // (The scan ranks every vector, approximate hybrid the index's 4 x limit nearest: compared when exact.)
        const auto got = store.search(t, q);
        if (!q.vector || q.exact) REQUIRE(dump(got) == dump(store.ArtifactStore::search(t, q)));
        ++searches;
      }
    }
    CHECK(searches > 0);
    const auto fresh = rebuilt(store, tenants, options);
    for (int round = 0; round < 80; ++round) {
      SearchQuery q = query();
      const std::string& t = tenants[pick(tenants.size())];
      INFO(fmt::format("round {} tenant {} text '{}' mode {}", round, t, q.text, static_cast<int>(q.mode)));
      for (int page = 0; page < 20; ++page) {
        const auto got = store.search(t, q);
        REQUIRE(dump(got) == dump(fresh->search(t, q)));
        if (!q.vector || q.exact) REQUIRE(dump(got) == dump(store.ArtifactStore::search(t, q)));
        if (!got.next_cursor) break;
        q.cursor = *got.next_cursor;
      }
    }
  }
}

TEST_CASE("first searches racing writers make indexes that miss no write") {
  // Writers store, re-store and remove in a few tenants while other threads search each tenant for the first time
  // (words and approximate similarity), so indexes are made while writes land. Afterwards every tenant's searches
  // equal the default scan's and those of a store written afresh with the same versions.
  const std::vector<std::string> vocabulary{"alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "zeta"};
  const std::vector<std::string> tenants{"t0", "t1", "t2", "t3", "t4", "t5"};
  const auto text_of = [&vocabulary](unsigned n) {
    std::string s;
    for (int i = 0; i < 6; ++i, n = n * 1103515245u + 12345u) s += vocabulary[(n >> 16) % vocabulary.size()] + " ";
    return s;
  };
  for (const bool bounded : {false, true}) {
    cairn::InMemoryStoreOptions options;
    options.shards = 2;  // tenants share shards: their writes and first searches meet
    options.embedder = std::make_shared<WordHashEmbedder>();
    if (bounded) options.max_parsed_bytes = 20000;
    cairn::InMemoryArtifactStore store(options);
    for (const auto& t : tenants) {
      for (unsigned i = 0; i < 120; ++i) {
        (void)store.store(*doc(fmt::format("d{}", i % 80), text_of(i)).tenant_id(t).build());
      }
    }
    std::atomic<bool> stop{false};
    std::atomic<int> searched{0}, strays{0};
    std::vector<std::thread> pool;
    for (unsigned w = 0; w < 2; ++w) {
      pool.emplace_back([&, w] {
        unsigned n = 7 + w;
        while (!stop.load()) {
          n = n * 1103515245u + 12345u;
          const std::string& t = tenants[(n >> 8) % tenants.size()];
          const std::string id = fmt::format("d{}", (n >> 12) % 80);
          try {
            if ((n >> 20) % 5 == 0) {
              store.remove(id, t);
            } else {
              (void)store.store(*doc(id, text_of(n)).tenant_id(t).build());
            }
          } catch (const cairn::not_found&) {  // the other writer removed it first
          }
        }
      });
    }
    for (unsigned s = 0; s < 2; ++s) {
      pool.emplace_back([&, s] {
        for (std::size_t i = 0; i < tenants.size(); ++i) {
          const std::string& t = tenants[s == 0 ? i : tenants.size() - 1 - i];
          SearchQuery q;
          q.text = vocabulary[i % vocabulary.size()];
          q.mode = s == 0 ? cairn::SearchMode::text : cairn::SearchMode::similarity;
          for (const auto& h : store.search(t, q).hits) {
            if (h.record->tenant_id() != t) ++strays;
          }
          q.mode = s == 0 ? cairn::SearchMode::similarity : cairn::SearchMode::text;
          (void)store.search(t, q);
          ++searched;
        }
      });
    }
    while (searched.load() < static_cast<int>(2 * tenants.size())) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // writes after the indexes were made
    stop = true;
    for (auto& th : pool) th.join();
    CHECK(strays.load() == 0);

    const auto fresh = rebuilt(store, tenants, options);
    for (const auto& t : tenants) {
      INFO("tenant " << t << (bounded ? " bounded" : ""));
      const auto made = store.search_indexes(t);
      if (store.list(t).items.empty()) continue;  // emptied by the writers: its indexes were dropped
      CHECK(made.words);
      CHECK(made.vectors);
      for (const auto& word : vocabulary) {
        for (const auto mode : {cairn::SearchMode::text, cairn::SearchMode::similarity, cairn::SearchMode::hybrid}) {
          for (const bool all : {false, true}) {
            SearchQuery q;
            q.text = word;
            q.mode = mode;
            q.all_versions = all;
            q.limit = 100;
            const auto got = store.search(t, q);
            REQUIRE(dump(got) == dump(fresh->search(t, q)));
            q.exact = true;  // the scan ranks every vector; approximate hybrid fuses the index's 4 x limit nearest
            REQUIRE(dump(store.search(t, q)) == dump(store.ArtifactStore::search(t, q)));
          }
        }
      }
    }
  }
}

TEST_CASE("search: a metadata pointer names what nlohmann's json_pointer names, walked once") {
  const nlohmann::json doc = nlohmann::json::parse(R"({"a": {"b": [10, 20, {"c": 3}]}, "x/y": 1, "m~n": 2, "": 5,
    "list": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], "s": "text"})");
  const std::vector<std::string> pointers{"",
                                          "/",
                                          "/a",
                                          "/a/b",
                                          "/a/b/0",
                                          "/a/b/2/c",
                                          "/a/b/3",
                                          "/a/b/-",
                                          "/a/b/01",
                                          "/a/b/x",
                                          "/x~1y",
                                          "/m~0n",
                                          "/m~1n",
                                          "/list/11",
                                          "/list/12",
                                          "/list/00",
                                          "/s/0",
                                          "/missing",
                                          "/a/missing/deeper",
                                          "/a/b/2/c/d",
                                          "/a/b/1/",
                                          "/a/"};  // (a step past 2^63 - 1 is refused before any search: check_search)
  for (const auto& p : pointers) {
    INFO(p);
    REQUIRE(cairn::detail::json_pointer_valid(p));
    const nlohmann::json::json_pointer ptr(p);
    const nlohmann::json* found = cairn::detail::pointee(doc, p);
    if (doc.contains(ptr)) {
      REQUIRE(found != nullptr);
      CHECK(found == &doc.at(ptr));
    } else {
      CHECK(found == nullptr);
    }
  }
  // Filters see the same: an escaped member, an array element, an index past the end.
  const auto holds = [&](const std::string& pointer, cairn::FieldOp op, nlohmann::json value) {
    return cairn::detail::condition_holds(doc, {pointer, op, std::move(value)});
  };
  CHECK(holds("/x~1y", cairn::FieldOp::eq, 1));
  CHECK(holds("/a/b/2/c", cairn::FieldOp::ge, 3));
  CHECK_FALSE(holds("/a/b/3", cairn::FieldOp::exists, nullptr));
  CHECK(holds("/a/b/3", cairn::FieldOp::ne, 7));
}

TEST_CASE(
    "the in-memory store scores single-word queries from its postings as the scan does, a word held 255 "
    "times or more included, and names the fields of the page's matches") {
  cairn::InMemoryArtifactStore store;
  const auto put = [&store](const std::string& id, const std::string& title, const std::string& value) {
    (void)store.store(
        *ArtifactRecord::builder().tenant_id("t").id(id).type("document").title(title).value(value).build());
  };
  std::string many;
  for (int i = 0; i < 300; ++i) many += "echo ";  // past a posting's 255
  put("a", "echo chamber", many + "delta");
  put("b", "delta", "echo echo gamma");
  put("c", "gamma", "nothing here");
  put("d", "alpha", std::string(254 * 5, ' ') + "echo");
  std::string exactly;
  for (int i = 0; i < 255; ++i) exactly += "echo ";
  put("e", "title", exactly);
  put("a", "echo chamber again", many + many + "delta");  // a re-save: the old version's postings go
  for (const std::string text : {"echo", "echo OR delta", "delta OR gamma OR alpha", "echo delta", "missing OR echo",
                                 "echo OR missing OR delta gamma"}) {
    SearchQuery q;
    q.text = text;
    q.mode = cairn::SearchMode::text;
    for (const bool all : {false, true}) {
      q.all_versions = all;
      INFO(text << (all ? " (all versions)" : ""));
      const auto got = store.search("t", q);
      REQUIRE(dump(got) == dump(store.ArtifactStore::search("t", q)));
      for (const auto& hit : got.hits) CHECK_FALSE(hit.matched.fields.empty());
    }
  }
  SearchQuery q;
  q.text = "echo OR gamma";
  q.mode = cairn::SearchMode::text;
  const auto page = store.search("t", q);
  REQUIRE(page.hits.size() == 5);
  for (const auto& hit : page.hits) {
    if (hit.record->id() == "b") CHECK(hit.matched.fields == std::vector<std::string>{"value"});
    if (hit.record->id() == "a") CHECK(hit.matched.fields == std::vector<std::string>{"title", "value"});
  }
}
