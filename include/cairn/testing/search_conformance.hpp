// cairn::testing — the search behaviour every ArtifactStore must show (words, similarity, hybrid, filters in a
// search, recall, pages of a search), as checks any test framework can run. store_conformance_checks()
// (cairn/testing/store_conformance.hpp) runs these after its own; a host may also run them alone:
//
//     for (const auto& check : cairn::testing::search_conformance_checks()) check.run(*make_my_store());
//
// Checks use tenants with random names, so they also run against a durable store that already holds data.
#pragma once

#include <algorithm>
#include <atomic>
#include <functional>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/artifact/record.hpp"
#include "cairn/artifact/store.hpp"
#include "cairn/error.hpp"
#include "cairn/testing/conformance_check.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace testing {

#define CAIRN_CONFORM(cond) \
  ::cairn::testing::detail::expect(static_cast<bool>(cond), #cond, __LINE__, "search_conformance.hpp")
#define CAIRN_CONFORM_THROWS(E, expr) \
  ::cairn::testing::detail::expect_throw<E>([&] { (void)(expr); }, #expr, __LINE__, "search_conformance.hpp")

namespace detail {

/// The model and dimension of the vectors a check gives a store: its embedder's, or a model of the suite's own.
inline std::pair<std::string, std::size_t> vector_model(const ArtifactStore& s) {
  if (const auto e = s.embedder()) return {e->model(), e->dimension()};
  return {"conformance-model", 6};
}

/// A deterministic vector of `dimension` elements in [-1, 1], never all zero.
inline std::vector<float> random_vector(std::size_t dimension, unsigned seed) {
  std::uint32_t x = seed * 2654435761u + 12345u;
  std::vector<float> v(dimension);
  for (auto& e : v) {
    x = x * 1664525u + 1013904223u;
    e = static_cast<float>((x >> 8) % 2001) / 1000.0f - 1.0f;
  }
  if (std::all_of(v.begin(), v.end(), [](float f) { return f == 0.0f; })) v[0] = 1.0f;
  return v;
}

/// `got` finds what `want` (the scan) found: the same versions; for filters alone in the same (id) order with
/// score 0; for words or similarity the same scores (to rounding) and what matched, best first; for hybrid each
/// score the fusion of its ranks (the order within score ties may differ, and with it the fused ranks).
inline void same_results(const SearchQuery& q, const SearchPage& got, const SearchPage& want) {
  const auto fail = [&q](const std::string& what) {
    throw conformance_failure(fmt::format("search of '{}' (mode {}, all_versions {}, exact {}): {}", q.text,
                                          static_cast<int>(q.mode), q.all_versions, q.exact, what));
  };
  const auto key = [](const SearchHit& h) { return h.record->id() + "#" + std::to_string(h.record->version()); };
  std::map<std::string, const SearchHit*> wanted;
  for (const auto& h : want.hits) wanted[key(h)] = &h;
  if (got.hits.size() != want.hits.size()) {
    fail(fmt::format("{} hits where the scan finds {}", got.hits.size(), want.hits.size()));
  }
  const bool filters_only = q.text.empty() && !q.vector;
  for (std::size_t i = 0; i < got.hits.size(); ++i) {
    const SearchHit& h = got.hits[i];
    const auto it = wanted.find(key(h));
    if (it == wanted.end()) fail(key(h) + " is a hit the scan does not find");
    const SearchHit& w = *it->second;
    if (filters_only) {
      if (key(h) != key(want.hits[i]) || h.score != 0) fail(fmt::format("hit {} is {}, the scan's is {}", i, key(h), key(want.hits[i])));
      continue;
    }
    if (i > 0 && h.score > got.hits[i - 1].score) fail(fmt::format("hit {} ({}) scores above the one before", i, key(h)));
    if (q.mode == SearchMode::hybrid) {
      if (std::abs(h.score - cairn::detail::rrf(h.matched.text_rank, h.matched.vector_rank)) > 1e-12) {
        fail(key(h) + ": a hybrid score that is not the fusion of its ranks");
      }
      continue;
    }
    if (std::abs(h.score - w.score) > 1e-6 * std::max(1.0, std::abs(w.score))) {
      fail(fmt::format("{} scores {}, the scan {}", key(h), h.score, w.score));
    }
    if (std::set<std::string>(h.matched.words.begin(), h.matched.words.end()) !=
            std::set<std::string>(w.matched.words.begin(), w.matched.words.end()) ||
        std::set<std::string>(h.matched.fields.begin(), h.matched.fields.end()) !=
            std::set<std::string>(w.matched.fields.begin(), w.matched.fields.end())) {
      fail(key(h) + ": matched other words or fields than the scan says");
    }
    if (h.matched.similarity.has_value() != w.matched.similarity.has_value() ||
        (w.matched.similarity && std::abs(*h.matched.similarity - *w.matched.similarity) > 1e-5)) {
      fail(key(h) + ": another similarity than the scan's");
    }
  }
}

}  // namespace detail

/// The search checks, in a fixed order (store_conformance_checks() ends with them).
[[nodiscard]] inline std::vector<ConformanceCheck> search_conformance_checks() {
  using detail::fresh_tenant;
  using detail::note;
  using nlohmann::json;
  std::vector<ConformanceCheck> checks;

  // ---- search (cairn/artifact/search.hpp): what every backend must find, and refuse

  checks.push_back({"search finds by words, best first, and says what matched", [](ArtifactStore& s) {
    const auto t = fresh_tenant("words");
    (void)s.store(*note(t, "a", "revenue grew in emea").title("Revenue report").description("quarterly revenue by region").build());
    (void)s.store(*note(t, "b", "no numbers here").title("Travel notes").description("trip to paris").build());
    (void)s.store(*note(t, "c", json{{"summary", "flat"}}).title("Budget").description("costs and revenue").build());
    (void)s.store(*note(t, "d", "x").title("Revenue").build());
    SearchQuery q;
    q.mode = SearchMode::text;  // words alone (automatic would add similarity on a store with an embedder)
    q.text = "Revenue";
    const auto page = s.search(t, q);
    std::set<std::string> ids;
    for (const auto& h : page.hits) ids.insert(h.record->id());
    CAIRN_CONFORM((ids == std::set<std::string>{"a", "c", "d"}));
    CAIRN_CONFORM(page.hits.front().record->id() == "a");  // the word three times
    CAIRN_CONFORM(page.hits.front().matched.words == std::vector<std::string>{"revenue"});
    CAIRN_CONFORM((page.hits.front().matched.fields == std::vector<std::string>{"title", "description", "value"}));
    for (std::size_t i = 1; i < page.hits.size(); ++i) CAIRN_CONFORM(page.hits[i - 1].score >= page.hits[i].score);
    CAIRN_CONFORM(!page.next_cursor);
    const auto only = [&s, &t](const std::string& text) {
      SearchQuery w;
      w.mode = SearchMode::text;
      w.text = text;
      std::set<std::string> out;
      for (const auto& h : s.search(t, w).hits) out.insert(h.record->id());
      return out;
    };
    CAIRN_CONFORM((only("\"revenue report\"") == std::set<std::string>{"a"}));
    CAIRN_CONFORM((only("revenue -budget") == std::set<std::string>{"a", "d"}));
    CAIRN_CONFORM((only("paris OR budget") == std::set<std::string>{"b", "c"}));
    CAIRN_CONFORM((only("SUMMARY") == std::set<std::string>{"c"}));  // member names of a JSON value are words too
    CAIRN_CONFORM(only("nowhere").empty());
  }});

  checks.push_back({"search filters by fields, metadata and time", [](ArtifactStore& s) {
    const auto t = fresh_tenant("filter");
    const auto put = [&s, &t](const std::string& id, const char* type, json metadata, std::int64_t at) {
      (void)s.store(*note(t, id, "same words").type(type).mime_type(std::string(type) == "dataset" ? "text/csv" : "text/plain")
                         .created_by(id == "m1" ? "agent-a" : "agent-b").created_at(at).metadata(std::move(metadata)).build());
    };
    put("m1", "dataset", {{"region", "emea"}, {"rows", 10}}, 1000);
    put("m2", "dataset", {{"region", "apac"}, {"rows", 250}}, 2000);
    put("m3", "document", {{"region", "emea"}, {"rows", "many"}}, 3000);
    put("x1", "document", json::object(), 4000);
    const auto ids = [&s, &t](SearchFilter f) {
      SearchQuery q;
      q.filter = std::move(f);
      q.limit = 100;
      std::vector<std::string> out;
      for (const auto& h : s.search(t, q).hits) out.push_back(h.record->id());
      return out;  // filters alone: id order, as list
    };
    using V = std::vector<std::string>;
    SearchFilter f;
    f.type = ArtifactType::dataset;
    CAIRN_CONFORM((ids(f) == V{"m1", "m2"}));
    f = {};
    f.mime_type = "text/plain";
    CAIRN_CONFORM((ids(f) == V{"m3", "x1"}));
    f = {};
    f.created_by = "agent-a";
    CAIRN_CONFORM((ids(f) == V{"m1"}));
    f = {};
    f.id_prefix = "m";
    CAIRN_CONFORM((ids(f) == V{"m1", "m2", "m3"}));
    f = {};
    f.created_after = 2000;
    f.created_before = 4000;
    CAIRN_CONFORM((ids(f) == V{"m2", "m3"}));
    f = {};
    f.metadata = {{"/region", FieldOp::eq, "emea"}};
    CAIRN_CONFORM((ids(f) == V{"m1", "m3"}));
    f.metadata = {{"/region", FieldOp::ne, "emea"}};
    CAIRN_CONFORM((ids(f) == V{"m2", "x1"}));  // a missing member is not equal
    f.metadata = {{"/rows", FieldOp::gt, 10}};
    CAIRN_CONFORM((ids(f) == V{"m2"}));  // "many" is a string: not comparable with a number, no match
    f.metadata = {{"/rows", FieldOp::le, 10.5}};
    CAIRN_CONFORM((ids(f) == V{"m1"}));
    f.metadata = {{"/region", FieldOp::in, {"apac", "amer"}}};
    CAIRN_CONFORM((ids(f) == V{"m2"}));
    f.metadata = {{"/rows", FieldOp::exists, nullptr}};
    CAIRN_CONFORM((ids(f) == V{"m1", "m2", "m3"}));
    f.metadata = {{"/region", FieldOp::eq, "emea"}, {"/rows", FieldOp::lt, 100}};
    CAIRN_CONFORM((ids(f) == V{"m1"}));
    SearchQuery both;
    both.mode = SearchMode::text;
    both.text = "words";
    both.filter.type = ArtifactType::document;
    std::set<std::string> found;
    for (const auto& h : s.search(t, both).hits) found.insert(h.record->id());
    CAIRN_CONFORM((found == std::set<std::string>{"m3", "x1"}));
  }});

  checks.push_back({"search never shows another tenant's artifacts", [](ArtifactStore& s) {
    const auto a = fresh_tenant("iso-a");
    const auto b = fresh_tenant("iso-b");
    (void)s.store(*note(a, "shared-id", "secret plan for tenant a").build());
    (void)s.store(*note(b, "shared-id", "open plan for tenant b").build());
    (void)s.store(*note(b, "b-only", "secret too").build());
    SearchQuery q;
    q.mode = SearchMode::text;
    q.text = "secret";
    const auto page = s.search(a, q);
    CAIRN_CONFORM(page.hits.size() == 1);
    CAIRN_CONFORM(page.hits[0].record->tenant_id() == a);
    SearchQuery all;
    all.filter.id_prefix = "";
    all.filter.created_after = 0;
    for (const auto& h : s.search(a, all).hits) CAIRN_CONFORM(h.record->tenant_id() == a);
  }});

  checks.push_back({"search sees the latest version unless asked, and never a removed artifact", [](ArtifactStore& s) {
    const auto t = fresh_tenant("versions");
    (void)s.store(*note(t, "x", "alpha draft").build());
    (void)s.store(*note(t, "x", "beta final").build());
    SearchQuery q;
    q.mode = SearchMode::text;
    q.text = "alpha";
    CAIRN_CONFORM(s.search(t, q).hits.empty());
    q.all_versions = true;
    auto page = s.search(t, q);
    CAIRN_CONFORM(page.hits.size() == 1);
    CAIRN_CONFORM(page.hits[0].record->version() == 1);
    q.text = "draft OR final";
    page = s.search(t, q);
    CAIRN_CONFORM(page.hits.size() == 2);
    s.remove("x", t);
    CAIRN_CONFORM(s.search(t, q).hits.empty());
    q.all_versions = false;
    q.text = "beta";
    CAIRN_CONFORM(s.search(t, q).hits.empty());
    (void)s.store(*note(t, "x", "gamma").build());  // a new first version after the removal
    q.text = "beta";
    CAIRN_CONFORM(s.search(t, q).hits.empty());
    q.text = "gamma";
    CAIRN_CONFORM(s.search(t, q).hits.size() == 1);
  }});

  checks.push_back({"search pages with a cursor: every hit once, in order", [](ArtifactStore& s) {
    const auto t = fresh_tenant("pages");
    for (int i = 0; i < 7; ++i) {
      std::string words = "needle";
      for (int k = 0; k < i; ++k) words += " hay";
      (void)s.store(*note(t, fmt::format("p{}", i), words).build());
    }
    SearchQuery q;
    q.mode = SearchMode::text;
    q.text = "needle";
    q.limit = 3;
    std::vector<std::string> seen;
    std::vector<double> scores;
    for (int pages = 0;; ++pages) {
      CAIRN_CONFORM(pages < 5);
      const auto page = s.search(t, q);
      for (const auto& h : page.hits) {
        seen.push_back(h.record->id());
        scores.push_back(h.score);
      }
      if (!page.next_cursor) break;
      CAIRN_CONFORM(page.hits.size() == 3);
      q.cursor = *page.next_cursor;
    }
    CAIRN_CONFORM(seen.size() == 7);
    CAIRN_CONFORM(std::set<std::string>(seen.begin(), seen.end()).size() == 7);
    CAIRN_CONFORM(std::is_sorted(scores.rbegin(), scores.rend()));
    CAIRN_CONFORM(seen.front() == "p0");  // the shortest document with the word
    SearchQuery other;
    other.mode = SearchMode::text;
    other.text = "hay";
    other.cursor = q.cursor;
    CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, other));
  }});

  checks.push_back({"search refuses bad queries with what and where", [](ArtifactStore& s) {
    const auto t = fresh_tenant("bad");
    (void)s.store(*note(t, "kept", "still here").metadata("tags", json::array({"ok"})).build());
    SearchQuery q;
    CAIRN_CONFORM(CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q)).find("nothing to search by") != std::string::npos);
    q.text = "ok";
    q.limit = 0;
    CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q));
    q.limit = SearchQuery::max_limit + 1;
    CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q));
    q.limit = 10;
    q.text = "\"unclosed quote";
    CAIRN_CONFORM(CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q)).find("byte 0") != std::string::npos);
    q.text = "a OR";
    CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q));
    q.text = " ?! ";
    CAIRN_CONFORM(CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q)).find("no words") != std::string::npos);
    q.text = "-only -exclusions";
    CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q));
    q.text = std::string(SearchQuery::max_text_bytes + 1, 'a');
    CAIRN_CONFORM_THROWS(limit_exceeded, s.search(t, q));
    q.text = "\xff\xfe";
    CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q));
    q.text = "ok";
    q.filter.metadata = {{"no-slash", FieldOp::eq, 1}};
    CAIRN_CONFORM(CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q)).find("filter.metadata[0]") != std::string::npos);
    q.filter.metadata = {{"/a", FieldOp::lt, json::object()}};
    CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q));
    // An array index past 64 bits (the record's tags are an array): a cairn error naming the condition, not the JSON
    // library's. By words that match the record, so a store that checks the filter on matches alone meets it too.
    q.text = "still";
    q.filter.metadata = {{"/tags/99999999999999999999", FieldOp::eq, "x"}};
    CAIRN_CONFORM(CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q)).find("filter.metadata[0]") != std::string::npos);
    q.filter.metadata = {{"/tags/9223372036854775808", FieldOp::exists, nullptr}};
    CAIRN_CONFORM(CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q)).find("'9223372036854775808'") !=
                  std::string::npos);
    q.text = "ok";
    q.filter.metadata = {{"/a", FieldOp::in, json::array()}};
    CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q));
    q.filter.metadata = {};
    q.vector = Embedding{"model", {1.0f, std::numeric_limits<float>::quiet_NaN()}};
    CAIRN_CONFORM(CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q)).find("vector[1]") != std::string::npos);
    q.vector = Embedding{"model", {0.0f, 0.0f}};
    CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q));
    q.vector = Embedding{"model", {}};
    CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q));
    q.vector = Embedding{"model", {1.0f, 0.0f}};
    if (!s.keeps_embeddings()) CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q));
    q.cursor = "not-a-cursor";
    CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q));
    CAIRN_CONFORM(s.fetch("kept", t) != nullptr);  // nothing lost
  }});

  // ---- search over indexes: what a backend with its own word and vector indexes must still show. Checks with
  // vectors run on stores that keep them (keeps_embeddings()); on a store with an embedder, given vectors are of its
  // model and dimension.

  checks.push_back({"store_embedded keeps the vector and search finds it; bad vectors are refused, nothing stored",
                    [](ArtifactStore& s) {
    const auto t = fresh_tenant("embedded");
    if (!s.keeps_embeddings()) {
      CAIRN_CONFORM_THROWS(invalid_argument, s.store_embedded(*note(t, "v", "x").build(), Embedding{"m", {1.0f}}));
      CAIRN_CONFORM(s.fetch("v", t) == nullptr);
      return;
    }
    const auto model = detail::vector_model(s);
    const auto a = detail::random_vector(model.second, 1), b = detail::random_vector(model.second, 2);
    const auto v1 = s.store_embedded(*note(t, "v", "first").build(), Embedding{model.first, a});
    CAIRN_CONFORM(v1 != nullptr && v1->id() == "v" && v1->version() == 1 && v1->value() == "first");
    const auto kept = s.embedding("v", t, 1);
    CAIRN_CONFORM(kept.has_value());
    CAIRN_CONFORM(kept->model == model.first);
    CAIRN_CONFORM(kept->values == a);
    CAIRN_CONFORM(s.store_embedded(*note(t, "v", "second").build(), Embedding{model.first, b})->version() == 2);
    CAIRN_CONFORM(s.embedding("v", t, 2)->values == b);
    CAIRN_CONFORM(s.embedding("v", t, 1)->values == a);  // each version keeps its own
    (void)s.store_embedded(*note(t, "w", "other").build(), Embedding{model.first, a});
    for (const bool exact : {true, false}) {
      SearchQuery q;
      q.mode = SearchMode::similarity;
      q.exact = exact;
      q.vector = Embedding{model.first, b};
      const auto page = s.search(t, q);
      CAIRN_CONFORM(page.hits.size() == 2);
      CAIRN_CONFORM(page.hits[0].record->id() == "v" && page.hits[0].record->version() == 2);
      CAIRN_CONFORM(page.hits[0].matched.similarity && std::abs(*page.hits[0].matched.similarity - 1.0) < 1e-5);
      CAIRN_CONFORM(page.hits[0].matched.vector_rank == 1);
    }
    // Refused, naming the element or the models; nothing of the record is stored, the id's versions are untouched.
    const auto refused = [&s, &t](const std::string& id, Embedding e) {
      const auto msg = detail::expect_throw<invalid_argument>(
          [&] { (void)s.store_embedded(*note(t, id, "bad").build(), e); }, "store_embedded", __LINE__);
      CAIRN_CONFORM(s.fetch("bad", t) == nullptr);
      CAIRN_CONFORM((s.versions("v", t) == std::vector<std::uint64_t>{1, 2}));
      CAIRN_CONFORM(s.fetch("v", t)->value() == "second");
      return msg;
    };
    for (const std::string id : {"bad", "v"}) {
      auto nan = a;
      nan[nan.size() - 1] = std::numeric_limits<float>::quiet_NaN();
      CAIRN_CONFORM(refused(id, {model.first, nan}).find(fmt::format("[{}]", nan.size() - 1)) != std::string::npos);
      auto inf = a;
      inf[0] = std::numeric_limits<float>::infinity();
      CAIRN_CONFORM(refused(id, {model.first, inf}).find("[0]") != std::string::npos);
      CAIRN_CONFORM(refused(id, {model.first, std::vector<float>(a.size(), 0.0f)}).find("zero") != std::string::npos);
      (void)refused(id, {model.first, {}});
      (void)refused(id, {model.first, std::vector<float>(SearchQuery::max_dimension + 1, 1.0f)});
      (void)refused(id, {"", a});
      if (s.embedder()) {
        auto longer = a;
        longer.push_back(1.0f);
        (void)refused(id, {model.first, longer});
        const auto msg = refused(id, {"another-model", a});
        CAIRN_CONFORM(msg.find("another-model") != std::string::npos);
        CAIRN_CONFORM(msg.find(model.first) != std::string::npos);
      }
    }
  }});

  checks.push_back({"exact similarity ranks like a brute-force cosine; the default agrees with it on a small corpus",
                    [](ArtifactStore& s) {
    if (!s.keeps_embeddings()) return;
    const auto t = fresh_tenant("exact");
    const auto model = detail::vector_model(s);
    std::vector<std::pair<std::string, std::vector<float>>> corpus;
    for (int i = 0; i < 40; ++i) {
      corpus.emplace_back(fmt::format("e{:02}", i), detail::random_vector(model.second, 100 + static_cast<unsigned>(i)));
      (void)s.store_embedded(*note(t, corpus.back().first, "v").type(i % 3 == 0 ? "code" : "document").build(),
                             Embedding{model.first, corpus.back().second});
    }
    const auto query = detail::random_vector(model.second, 7);
    const auto brute = [&](bool code_only) {
      std::vector<std::pair<double, std::string>> out;
      for (std::size_t i = 0; i < corpus.size(); ++i) {
        if (code_only && i % 3 != 0) continue;
        out.emplace_back(cairn::detail::cosine(query, corpus[i].second), corpus[i].first);
      }
      std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) {
        return x.first != y.first ? x.first > y.first : x.second < y.second;
      });
      return out;
    };
    // The same order as the brute force, allowing a swap only where two cosines agree to float rounding.
    const auto same_order = [](const std::vector<SearchHit>& hits, const std::vector<std::pair<double, std::string>>& want) {
      CAIRN_CONFORM(hits.size() <= want.size());
      for (std::size_t i = 0; i < hits.size(); ++i) {
        CAIRN_CONFORM(hits[i].matched.similarity && std::abs(*hits[i].matched.similarity - want[i].first) < 1e-5);
        CAIRN_CONFORM(hits[i].record->id() == want[i].second || std::abs(hits[i].score - want[i].first) < 1e-6);
        CAIRN_CONFORM(std::abs(hits[i].score - want[i].first) < 1e-5);
      }
    };
    for (const bool code_only : {false, true}) {
      const auto want = brute(code_only);
      SearchQuery q;
      q.mode = SearchMode::similarity;
      q.vector = Embedding{model.first, query};
      if (code_only) q.filter.type = ArtifactType::code;
      q.exact = true;
      q.limit = 100;
      auto page = s.search(t, q);
      CAIRN_CONFORM(page.hits.size() == want.size());
      same_order(page.hits, want);
      // Pages of 7 walk the same order.
      q.limit = 7;
      std::vector<SearchHit> walked;
      for (int pages = 0;; ++pages) {
        CAIRN_CONFORM(pages < 10);
        page = s.search(t, q);
        walked.insert(walked.end(), page.hits.begin(), page.hits.end());
        if (!page.next_cursor) break;
        q.cursor = *page.next_cursor;
      }
      CAIRN_CONFORM(walked.size() == want.size());
      same_order(walked, want);
      // The default (exact unless the query sets ef) finds the same top ten.
      q.cursor.clear();
      q.exact = false;
      q.limit = 10;
      page = s.search(t, q);
      CAIRN_CONFORM(page.hits.size() == std::min<std::size_t>(10, want.size()));
      same_order(page.hits, want);
    }
  }});

  checks.push_back({"similarity keeps its recall past every switch-over line: 2,500 vectors, recall@10 >= 0.95 in the "
                    "default mode, unfiltered and with a filter 1 in 50 pass", [](ArtifactStore& s) {
    if (!s.keeps_embeddings()) return;
    const auto t = fresh_tenant("recall");
    // A store with an embedder takes its model's vectors; otherwise 64 dimensions, where a graph that is not asked
    // for enough candidates loses neighbours (6 would let almost any index find them all).
    auto model = detail::vector_model(s);
    if (!s.embedder()) model = {"conformance-recall-model", 64};
    constexpr std::size_t n = 2500;
    std::vector<std::vector<float>> corpus;
    for (std::size_t i = 0; i < n; ++i) {
      corpus.push_back(detail::random_vector(model.second, 5000 + static_cast<unsigned>(i)));
      const auto record = note(t, fmt::format("r{:04}", i), "v").metadata(nlohmann::json{{"bucket", i % 50}}).build();
      (void)s.store_embedded(*record, Embedding{model.first, corpus.back()});
    }
    double found = 0, asked = 0;
    for (unsigned round = 0; round < 10; ++round) {
      const auto query = detail::random_vector(model.second, 90000 + round);
      for (const bool filtered : {false, true}) {
        std::vector<double> truth;  // the exact cosines of the versions the filter passes, best first
        for (std::size_t i = 0; i < n; ++i) {
          if (!filtered || i % 50 == 7) truth.push_back(cairn::detail::cosine(query, corpus[i]));
        }
        std::sort(truth.begin(), truth.end(), std::greater<>());
        SearchQuery q;
        q.mode = SearchMode::similarity;
        q.vector = Embedding{model.first, query};
        if (filtered) q.filter.metadata.push_back({"/bucket", FieldOp::eq, 7});
        const auto page = s.search(t, q);
        CAIRN_CONFORM(page.hits.size() == 10);
        // Tie-aware: a hit counts when it passes the filter and scores at least the 10th exact cosine (to rounding).
        for (const auto& h : page.hits) {
          const std::size_t i = std::stoul(h.record->id().substr(1));
          const double cosine = cairn::detail::cosine(query, corpus[i]);
          const bool passes = !filtered || i % 50 == 7;
          found += passes && cosine >= truth[9] - 1e-6 ? 1 : 0;
          CAIRN_CONFORM(h.matched.similarity && std::abs(*h.matched.similarity - cosine) < 1e-5);
        }
        asked += 10;
      }
    }
    if (found / asked < 0.95) {
      throw conformance_failure(fmt::format("search_conformance.hpp: similarity recall@10 of the default mode at {} "
                                            "vectors is {:.3f}, below 0.95", n, found / asked));
    }
  }});

  checks.push_back({"a filtered similarity page is the exact filtered page whatever each record's metadata size, with "
                    "every filter field, after re-stores and removals", [](ArtifactStore& s) {
    if (!s.keeps_embeddings()) return;
    const auto t = fresh_tenant("filterfields");
    const auto model = detail::vector_model(s);
    // An index may keep what a filter reads beside each vector; a record with large metadata may be judged by its
    // row instead. Both kinds, every field a filter names, and versions that no longer pass once re-stored.
    struct Kept {
      std::vector<float> vector;
      bool passes = false;
    };
    std::map<std::string, Kept> latest;
    const std::string big(3000, 'x');
    const auto put = [&](int i, int generation) {
      const std::string id = fmt::format("f{:03}", i);
      const bool large = i % 4 == 0;
      const int bucket = (i + generation) % 5;
      auto b = note(t, id, "v").created_at(1000 + i).type(i % 3 == 0 ? "code" : "document");
      b.metadata(nlohmann::json{{"bucket", bucket}, {"pad", large ? big : std::string()}});
      if (i % 2 == 0) b.created_by("alice").mime_type("text/plain");
      Kept k;
      k.vector = detail::random_vector(model.second, 7000 + static_cast<unsigned>(i * 10 + generation));
      k.passes = bucket < 3 && i % 3 == 0 && i % 2 == 0 && 1000 + i >= 1010;
      (void)s.store_embedded(*b.build(), Embedding{model.first, k.vector});
      latest[id] = std::move(k);
    };
    for (int i = 0; i < 240; ++i) put(i, 0);
    for (int i = 0; i < 240; i += 7) put(i, 1);  // a new version whose bucket moved: the old one's filter result no
                                                 // longer counts
    for (int i = 6; i < 240; i += 30) {          // removed: never found again
      s.remove(fmt::format("f{:03}", i), t);
      latest.erase(fmt::format("f{:03}", i));
    }
    const auto query = detail::random_vector(model.second, 77);
    std::vector<std::pair<double, std::string>> want;
    for (const auto& [id, k] : latest) {
      if (k.passes) want.emplace_back(cairn::detail::cosine(query, k.vector), id);
    }
    std::sort(want.begin(), want.end(), [](const auto& x, const auto& y) {
      return x.first != y.first ? x.first > y.first : x.second < y.second;
    });
    CAIRN_CONFORM(want.size() >= 8);
    SearchQuery q;
    q.mode = SearchMode::similarity;
    q.vector = Embedding{model.first, query};
    q.filter.type = ArtifactType::code;
    q.filter.created_by = "alice";
    q.filter.mime_type = "text/plain";
    q.filter.created_after = 1010;
    q.filter.metadata.push_back({"/bucket", FieldOp::lt, 3});
    q.limit = 5;
    std::vector<std::string> walked;
    for (int pages = 0;; ++pages) {
      CAIRN_CONFORM(pages < 20);
      const auto page = s.search(t, q);
      for (const auto& h : page.hits) walked.push_back(h.record->id());
      if (!page.next_cursor) break;
      q.cursor = *page.next_cursor;
    }
    CAIRN_CONFORM(walked.size() == want.size());
    for (std::size_t i = 0; i < walked.size(); ++i) {
      CAIRN_CONFORM(walked[i] == want[i].second ||
                    std::abs(cairn::detail::cosine(query, latest.at(walked[i]).vector) - want[i].first) < 1e-6);
    }
  }});

  checks.push_back({"similarity ignores a vector's length: vectors from 1e-20 to 1e30 long score as the exact scan does",
                    [](ArtifactStore& s) {
    if (!s.keeps_embeddings()) return;
    const auto t = fresh_tenant("lengths");
    const auto model = detail::vector_model(s);
    const std::vector<float> lengths{1e-20f, 0.01f, 1.0f, 7.5f, 1e6f, 1e25f};
    for (int i = 0; i < 24; ++i) {
      auto v = detail::random_vector(model.second, 300 + static_cast<unsigned>(i));
      for (auto& x : v) x *= lengths[static_cast<std::size_t>(i) % lengths.size()];
      if (i == 0) {  // 1e30 beside 1e-30: an index that scales this vector to length 1 in float loses the small one
        v[0] = 1e30f;
        if (v.size() > 1) v[1] = 1e-30f;
      }
      (void)s.store_embedded(*note(t, fmt::format("l{:02}", i), "v").build(), Embedding{model.first, v});
    }
    auto first = detail::random_vector(model.second, 300);
    first[0] = 1e30f;
    for (const auto& query : {detail::random_vector(model.second, 9), first}) {
      SearchQuery q;
      q.mode = SearchMode::similarity;
      q.vector = Embedding{model.first, query};
      q.limit = 10;
      q.exact = true;
      const auto exact = s.search(t, q);
      q.exact = false;
      const auto page = s.search(t, q);
      CAIRN_CONFORM(exact.hits.size() == 10 && page.hits.size() == 10);
      for (std::size_t i = 0; i < page.hits.size(); ++i) {
        CAIRN_CONFORM(page.hits[i].record->id() == exact.hits[i].record->id());
        CAIRN_CONFORM(std::abs(page.hits[i].score - exact.hits[i].score) < 1e-9);
      }
    }
  }});

  checks.push_back({"filters, words and similarity together find what the scan of the same records finds",
                    [](ArtifactStore& s) {
    const auto t = fresh_tenant("scan");
    const auto model = detail::vector_model(s);
    const std::vector<std::string> vocabulary{"alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "zeta"};
    std::uint32_t seed = 12345;
    const auto next = [&seed](std::uint32_t n) {
      seed = seed * 1103515245u + 12345u;
      return (seed >> 16) % n;
    };
    for (int i = 0; i < 36; ++i) {
      std::string text, title;
      for (std::uint32_t k = 0, n = 1 + next(9); k < n; ++k) text += vocabulary[next(8)] + " ";
      title = vocabulary[next(8)];
      auto b = note(t, fmt::format("s{:02}", next(24)), text)  // some ids get several versions
                   .title(title)
                   .type(next(2) ? "code" : "document")
                   .created_at(1000 + i)
                   .metadata({{"n", static_cast<int>(next(5))}, {"tag", vocabulary[next(3)]}});
      if (s.keeps_embeddings()) {
        (void)s.store_embedded(*b.build(), Embedding{model.first, detail::random_vector(model.second, 500 + static_cast<unsigned>(i))});
      } else {
        (void)s.store(*b.build());
      }
    }
    std::vector<SearchQuery> queries;
    const auto add = [&queries](SearchMode mode, std::string text, SearchFilter f, bool all = false) {
      SearchQuery q;
      q.mode = mode;
      q.text = std::move(text);
      q.filter = std::move(f);
      q.all_versions = all;
      q.limit = 100;
      queries.push_back(std::move(q));
    };
    SearchFilter none, code, meta, time, prefix;
    code.type = ArtifactType::code;
    meta.metadata = {{"/n", FieldOp::ge, 2}, {"/tag", FieldOp::in, {"alpha", "gamma"}}};
    time.created_after = 1010;
    time.created_before = 1030;
    prefix.id_prefix = "s1";
    for (const auto* f : {&none, &code, &meta, &time, &prefix}) {
      add(SearchMode::automatic, "", f == &none ? code : *f);
      add(SearchMode::text, "alpha", *f);
      add(SearchMode::text, "beta gamma", *f);
      add(SearchMode::text, "delta OR omega -sigma", *f, true);
      add(SearchMode::text, "\"alpha beta\"", *f);
    }
    if (s.keeps_embeddings()) {
      const auto base = queries.size();
      for (std::size_t i = 0; i < base; ++i) {
        if (queries[i].text.empty()) continue;
        SearchQuery q = queries[i];
        q.vector = Embedding{model.first, detail::random_vector(model.second, 900 + static_cast<unsigned>(i))};
        q.mode = SearchMode::hybrid;
        queries.push_back(q);
        q.mode = SearchMode::similarity;
        q.exact = true;
        queries.push_back(q);
      }
    }
    for (const auto& q : queries) {
      const SearchPage got = s.search(t, q);
      const SearchPage want = s.ArtifactStore::search(t, q);  // the scan over the same records
      detail::same_results(q, got, want);
    }
  }});

  checks.push_back({"a removed or replaced record never comes back: by words, by meaning, by filters, on a later page",
                    [](ArtifactStore& s) {
    const auto t = fresh_tenant("gone");
    const auto model = detail::vector_model(s);
    const bool vectors = s.keeps_embeddings();
    const auto a = detail::random_vector(model.second, 31), b = detail::random_vector(model.second, 32);
    const auto put = [&](ArtifactRecord::Builder r, const std::vector<float>& v) {
      return vectors ? s.store_embedded(*r.build(), Embedding{model.first, v}) : s.store(*r.build());
    };
    (void)put(note(t, "r", "apple orchard").type("code"), a);
    (void)put(note(t, "r", "banana grove").type("code"), b);
    (void)put(note(t, "keep", "apple banana").type("document"), detail::random_vector(model.second, 33));
    const auto find = [&](SearchQuery q) {
      q.limit = 100;
      std::vector<std::pair<std::string, std::uint64_t>> out;
      for (const auto& h : s.search(t, q).hits) out.emplace_back(h.record->id(), h.record->version());
      return out;
    };
    using Found = std::vector<std::pair<std::string, std::uint64_t>>;
    SearchQuery words;
    words.mode = SearchMode::text;
    words.text = "apple";
    CAIRN_CONFORM((find(words) == Found{{"keep", 1}}));  // the new version replaced the old one
    words.all_versions = true;
    CAIRN_CONFORM((find(words) == Found{{"keep", 1}, {"r", 1}}) || (find(words) == Found{{"r", 1}, {"keep", 1}}));
    words.all_versions = false;
    words.text = "banana";
    CAIRN_CONFORM(find(words).size() == 2);
    SearchQuery meaning;
    meaning.mode = SearchMode::similarity;
    meaning.vector = Embedding{model.first, a};
    if (vectors) {
      for (const bool exact : {true, false}) {
        meaning.exact = exact;
        const auto found = find(meaning);
        CAIRN_CONFORM(found.size() == 2);
        CAIRN_CONFORM(std::count(found.begin(), found.end(), std::make_pair(std::string("r"), std::uint64_t{1})) == 0);
      }
      meaning.all_versions = true;
      meaning.exact = true;
      CAIRN_CONFORM((find(meaning).front() == std::make_pair(std::string("r"), std::uint64_t{1})));
      meaning.all_versions = false;
    }
    s.remove("r", t);
    std::vector<SearchQuery> all;
    for (const char* text : {"apple", "banana", "orchard OR grove"}) {
      SearchQuery q;
      q.mode = SearchMode::text;
      q.text = text;
      all.push_back(q);
    }
    SearchQuery by_filter;
    by_filter.filter.type = ArtifactType::code;
    all.push_back(by_filter);
    by_filter.filter = {};
    by_filter.filter.id_prefix = "r";
    all.push_back(by_filter);
    if (vectors) {
      for (const bool exact : {true, false}) {
        meaning.exact = exact;
        all.push_back(meaning);
        SearchQuery hybrid = meaning;
        hybrid.mode = SearchMode::hybrid;
        hybrid.text = "apple OR banana";
        all.push_back(hybrid);
      }
    }
    for (auto q : all) {
      for (const bool every : {false, true}) {
        q.all_versions = every;
        for (const auto& f : find(q)) CAIRN_CONFORM(f.first != "r");
      }
    }
    // Stored again, the id starts over: none of the removed versions' words or vectors find it.
    (void)put(note(t, "r", "cherry").type("document"), b);
    SearchQuery old_words;
    old_words.mode = SearchMode::text;
    old_words.all_versions = true;
    old_words.text = "orchard OR grove";
    CAIRN_CONFORM(find(old_words).empty());
    old_words.text = "cherry";
    CAIRN_CONFORM((find(old_words) == Found{{"r", 1}}));
    if (vectors) {
      meaning.exact = true;
      meaning.all_versions = true;
      for (const auto& f : find(meaning)) CAIRN_CONFORM(f.first != "r" || s.embedding("r", t, 1)->values == b);
    }

    // A record removed between pages is not on a later page; the others come once each.
    for (int i = 0; i < 8; ++i) {
      std::string text = "needle";
      for (int k = 0; k < i; ++k) text += " hay";
      (void)put(note(t, fmt::format("p{}", i), text), detail::random_vector(model.second, 40 + static_cast<unsigned>(i)));
    }
    std::vector<SearchQuery> paged;
    SearchQuery needle;
    needle.mode = SearchMode::text;
    needle.text = "needle";
    paged.push_back(needle);
    if (vectors) {
      SearchQuery near;
      near.mode = SearchMode::similarity;
      near.filter.id_prefix = "p";
      near.vector = Embedding{model.first, a};
      for (const bool exact : {true, false}) {
        near.exact = exact;
        paged.push_back(near);
      }
    }
    for (auto q : paged) {
      q.limit = 100;
      const auto order = find(q);
      CAIRN_CONFORM(order.size() >= 6);
      q.limit = 2;
      auto page = s.search(t, q);
      CAIRN_CONFORM(page.next_cursor.has_value());
      const std::string victim = order[4].first;  // on the third page
      s.remove(victim, t);
      std::vector<std::string> seen{page.hits[0].record->id(), page.hits[1].record->id()};
      while (page.next_cursor) {
        q.cursor = *page.next_cursor;
        page = s.search(t, q);
        for (const auto& h : page.hits) seen.push_back(h.record->id());
        CAIRN_CONFORM(seen.size() < 20);
      }
      CAIRN_CONFORM(std::find(seen.begin(), seen.end(), victim) == seen.end());
      for (const auto& id : seen) CAIRN_CONFORM(std::count(order.begin(), order.end(), std::make_pair(id, std::uint64_t{1})) == 1);
      if (q.mode == SearchMode::similarity) {
        // Similarities do not depend on the other records: every other hit comes exactly once. (BM25 scores do —
        // a removal changes the corpus statistics, and with them where the cursor's score falls.)
        CAIRN_CONFORM(std::set<std::string>(seen.begin(), seen.end()).size() == seen.size());
        CAIRN_CONFORM(seen.size() == order.size() - 1);
      }
    }
  }});

  checks.push_back({"search is per tenant: same words and vectors elsewhere change no result, score, cursor or error",
                    [](ArtifactStore& s) {
    const auto a = fresh_tenant("twin-a");
    const auto c = fresh_tenant("twin-c");
    const auto b = fresh_tenant("other-b");
    const auto model = detail::vector_model(s);
    const bool vectors = s.keeps_embeddings();
    const auto put = [&](const std::string& tenant, const std::string& id, const std::string& text, unsigned v) {
      auto r = note(tenant, id, text).build();
      (void)(vectors ? s.store_embedded(*r, Embedding{model.first, detail::random_vector(model.second, v)}) : s.store(*r));
    };
    for (const auto& tenant : {a, c, b}) {
      put(tenant, "plan", "secret plan of the quarter", 1);
      put(tenant, "memo", "plan review notes", 2);
      put(tenant, "misc", "lunch menu", 3);
    }
    // b has more: more documents with the words (which would change a's BM25 if statistics leaked) and its own.
    for (int i = 0; i < 6; ++i) put(b, fmt::format("b{}", i), "plan plan secret zebra", 60 + static_cast<unsigned>(i));
    const auto b_only = detail::random_vector(model.second, 60);
    std::vector<SearchQuery> queries;
    for (const char* text : {"plan", "secret", "zebra", "plan -lunch", "\"secret plan\""}) {
      SearchQuery q;
      q.mode = SearchMode::text;
      q.text = text;
      queries.push_back(q);
    }
    SearchQuery by_prefix;
    by_prefix.filter.id_prefix = "b";
    queries.push_back(by_prefix);
    if (vectors) {
      SearchQuery q;
      q.mode = SearchMode::similarity;
      q.vector = Embedding{model.first, b_only};
      for (const bool exact : {true, false}) {
        q.exact = exact;
        queries.push_back(q);
      }
      q.mode = SearchMode::hybrid;
      q.text = "plan OR zebra";
      queries.push_back(q);
    }
    for (auto q : queries) {
      for (const bool every : {false, true}) {
        q.all_versions = every;
        q.limit = 100;
        const auto in_a = s.search(a, q);
        const auto in_c = s.search(c, q);
        CAIRN_CONFORM(in_a.hits.size() == in_c.hits.size());
        for (std::size_t i = 0; i < in_a.hits.size(); ++i) {
          CAIRN_CONFORM(in_a.hits[i].record->tenant_id() == a);
          CAIRN_CONFORM(in_a.hits[i].record->id() == in_c.hits[i].record->id());
          CAIRN_CONFORM(std::abs(in_a.hits[i].score - in_c.hits[i].score) <= 1e-9 * std::abs(in_c.hits[i].score));
          CAIRN_CONFORM(in_a.hits[i].record->id().rfind('b', 0) != 0);
        }
        // b's cursor names a place in b's results: in a it shows only a's.
        SearchQuery paged = q;
        paged.limit = 1;
        const auto first_b = s.search(b, paged);
        if (first_b.next_cursor) {
          paged.cursor = *first_b.next_cursor;
          for (const auto& h : s.search(a, paged).hits) CAIRN_CONFORM(h.record->tenant_id() == a);
        }
      }
    }
    // Errors in a never name b.
    std::vector<std::string> errors;
    SearchQuery bad;
    bad.text = "\"open";
    errors.push_back(CAIRN_CONFORM_THROWS(invalid_argument, s.search(a, bad)));
    errors.push_back(CAIRN_CONFORM_THROWS(not_found, s.remove("b0", a)));
    if (vectors) {
      errors.push_back(CAIRN_CONFORM_THROWS(
          invalid_argument, s.store_embedded(*note(a, "b0", "x").build(), Embedding{model.first, {}})));
    }
    for (const auto& e : errors) CAIRN_CONFORM(e.find(b) == std::string::npos && e.find("zebra") == std::string::npos);
    CAIRN_CONFORM(s.fetch("b0", a) == nullptr);
  }});

  checks.push_back({"search under concurrent writers: hits exist or existed, removed ones never, stored ones always",
                    [](ArtifactStore& s) {
    const auto t = fresh_tenant("busy");
    const auto model = detail::vector_model(s);
    const bool vectors = s.keeps_embeddings();
    constexpr int writers = 3, per_writer = 10, searchers = 2, queries = 10;
    std::mutex mutex;
    std::set<std::string> announced, removed, kept;  // kept: stored, store returned, never removed
    std::atomic<bool> failed{false};
    std::vector<std::string> failures;
    const auto fail = [&](std::string what) {
      std::lock_guard<std::mutex> lock(mutex);
      failures.push_back(std::move(what));
      failed = true;
    };
    std::vector<std::thread> pool;
    for (int w = 0; w < writers; ++w) {
      pool.emplace_back([&, w] {
        try {
          for (int n = 0; n < per_writer; ++n) {
            const std::string id = fmt::format("w{}-{}", w, n);
            {
              std::lock_guard<std::mutex> lock(mutex);
              announced.insert(id);
            }
            auto r = note(t, id, json{{"text", "common words"}, {"id", id}}).build();
            (void)(vectors ? s.store_embedded(*r, Embedding{model.first, detail::random_vector(model.second, static_cast<unsigned>(w * 100 + n))})
                           : s.store(*r));
            if (n % 2 == 1) {
              s.remove(id, t);
              std::lock_guard<std::mutex> lock(mutex);
              removed.insert(id);
            } else {
              std::lock_guard<std::mutex> lock(mutex);
              kept.insert(id);
            }
          }
        } catch (const std::exception& e) {
          fail(std::string("writer: ") + e.what());
        }
      });
    }
    for (int r = 0; r < searchers; ++r) {
      pool.emplace_back([&, r] {
        try {
          for (int n = 0; n < queries; ++n) {
            SearchQuery q;
            q.limit = 100;
            const int kind = (n + r) % (vectors ? 4 : 2);
            q.mode = kind == 0 ? SearchMode::text : kind == 1 ? SearchMode::automatic : SearchMode::similarity;
            if (kind == 0) q.text = "common";
            if (kind == 1) q.filter.id_prefix = "w";
            if (kind >= 2) {
              q.vector = Embedding{model.first, detail::random_vector(model.second, static_cast<unsigned>(n))};
              q.exact = kind == 2;
            }
            std::set<std::string> gone_before, kept_before;
            {
              std::lock_guard<std::mutex> lock(mutex);
              gone_before = removed;
              kept_before = kept;
            }
            const auto page = s.search(t, q);
            std::lock_guard<std::mutex> lock(mutex);
            std::set<std::string> seen;
            for (const auto& h : page.hits) {
              const std::string& id = h.record->id();
              seen.insert(id);
              if (!announced.count(id) || h.record->value().value("id", "") != id || h.record->tenant_id() != t) {
                failures.push_back("a hit that was never stored: " + id);
                failed = true;
              }
              if (gone_before.count(id)) {
                failures.push_back("a hit removed before the query began: " + id);
                failed = true;
              }
            }
            if (kind != 3) {  // the approximate mode may miss under writes; words, filters and exact may not
              for (const auto& id : kept_before) {
                if (!seen.count(id)) {
                  failures.push_back(fmt::format("query kind {}: {} was stored before it and is missing", kind, id));
                  failed = true;
                }
              }
            }
          }
        } catch (const std::exception& e) {
          fail(std::string("searcher: ") + e.what());
        }
      });
    }
    for (auto& th : pool) th.join();
    if (failed) throw conformance_failure("concurrent search: " + failures.front());
    SearchQuery all;
    all.mode = SearchMode::text;
    all.text = "common";
    all.limit = 100;
    std::set<std::string> found;
    for (const auto& h : s.search(t, all).hits) found.insert(h.record->id());
    CAIRN_CONFORM(found == kept);
  }});

  checks.push_back({"a store that indexes as it stores reports nothing unindexed, and reindex has nothing to do",
                    [](ArtifactStore& s) {
    const auto t = fresh_tenant("indexed");
    const auto model = detail::vector_model(s);
    (void)s.store(*note(t, "plain", "indexed words").build());
    if (s.keeps_embeddings()) {
      (void)s.store_embedded(*note(t, "given", "indexed vector").build(),
                             Embedding{model.first, detail::random_vector(model.second, 5)});
    }
    std::vector<SearchQuery> queries(3);
    queries[0].mode = SearchMode::text;
    queries[0].text = "indexed";
    queries[1].filter.id_prefix = "p";
    queries[2].text = "indexed";  // automatic: hybrid on a store with an embedder
    if (s.keeps_embeddings()) {
      SearchQuery q;
      q.vector = Embedding{model.first, detail::random_vector(model.second, 5)};
      queries.push_back(q);
    }
    for (const auto& q : queries) CAIRN_CONFORM(s.search(t, q).unindexed == 0);
    CAIRN_CONFORM(s.reindex(t) == 0);
    CAIRN_CONFORM(s.reindex(fresh_tenant("empty")) == 0);
    CAIRN_CONFORM(s.search(t, queries[0]).hits.size() == (s.keeps_embeddings() ? 2u : 1u));
  }});

  checks.push_back({"search refuses contradictory modes and oversized filters, naming them", [](ArtifactStore& s) {
    const auto t = fresh_tenant("bad-mode");
    (void)s.store(*note(t, "kept", "still here").build());
    SearchQuery q;
    q.mode = SearchMode::text;
    CAIRN_CONFORM(CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q)).find("mode text") != std::string::npos);
    q.mode = SearchMode::hybrid;
    q.vector = Embedding{"m", {1.0f}};
    CAIRN_CONFORM(CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q)).find("hybrid") != std::string::npos);
    if (!s.embedder()) {
      q.vector.reset();
      q.text = "still";
      q.mode = SearchMode::similarity;
      CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q));
    }
    SearchQuery f;
    f.text = "still";
    f.mode = SearchMode::text;
    f.filter.created_after = 10;
    f.filter.created_before = 10;
    CAIRN_CONFORM(CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, f)).find("created_after") != std::string::npos);
    f.filter = {};
    for (std::size_t i = 0; i <= SearchQuery::max_conditions; ++i) f.filter.metadata.push_back({"/a", FieldOp::exists, nullptr});
    CAIRN_CONFORM_THROWS(limit_exceeded, s.search(t, f));
    f.filter.metadata = {{"/a", FieldOp::in, json(std::vector<int>(SearchQuery::max_in_values + 1, 1))}};
    CAIRN_CONFORM(CAIRN_CONFORM_THROWS(limit_exceeded, s.search(t, f)).find("filter.metadata[0]") != std::string::npos);
    f.filter.metadata = {{"/a", FieldOp::eq, json::array({1})}};
    CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, f));
    f.filter.metadata = {{"/a", FieldOp::gt, std::numeric_limits<double>::quiet_NaN()}};
    CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, f));
    f.filter.metadata = {};
    CAIRN_CONFORM_THROWS(invalid_argument, s.search("", f));
    // A query vector of another model or dimension compares with nothing: no hits, no error.
    if (s.keeps_embeddings()) {
      SearchQuery other;
      other.mode = SearchMode::similarity;
      other.vector = Embedding{"conformance-unknown-model", {1.0f, 2.0f, 3.0f}};
      CAIRN_CONFORM(s.search(t, other).hits.empty());
      other.exact = true;
      CAIRN_CONFORM(s.search(t, other).hits.empty());
    }
    CAIRN_CONFORM(s.fetch("kept", t) != nullptr);
  }});

  return checks;
}

#undef CAIRN_CONFORM
#undef CAIRN_CONFORM_THROWS

}  // namespace testing
CAIRN_END_NAMESPACE
