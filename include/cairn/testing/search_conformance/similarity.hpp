// cairn::testing — search checks: search by meaning. store_embedded and its refusals, exact similarity against a
// brute-force cosine, recall past every switch-over line of an index, filtered pages, vectors of any length. Each
// runs on stores that keep vectors (keeps_embeddings()); on a store with an embedder, given vectors are of its model
// and dimension.
// search_conformance_checks() (cairn/testing/search_conformance.hpp) names each and runs them in its fixed order.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/artifact/record.hpp"
#include "cairn/artifact/search/rank.hpp"
#include "cairn/artifact/store.hpp"
#include "cairn/error.hpp"
#include "cairn/testing/conformance_check.hpp"
#include "cairn/testing/search_conformance/support.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace testing {

#define CAIRN_CONFORM(cond) \
  ::cairn::testing::detail::expect(static_cast<bool>(cond), #cond, __LINE__, "search_conformance/similarity.hpp")
#define CAIRN_CONFORM_THROWS(E, expr) \
  ::cairn::testing::detail::expect_throw<E>([&] { (void)(expr); }, #expr, __LINE__, "search_conformance/similarity.hpp")

namespace detail {
namespace search_checks {

inline void keeps_given_vectors(ArtifactStore& s) {
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
}

inline void exact_similarity_is_brute_force(ArtifactStore& s) {
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
  const auto same_order = [](const std::vector<SearchHit>& hits,
                             const std::vector<std::pair<double, std::string>>& want) {
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
}

inline void keeps_its_recall(ArtifactStore& s) {
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
    throw conformance_failure(
        fmt::format("search_conformance/similarity.hpp: similarity recall@10 of the default mode at {} "
                    "vectors is {:.3f}, below 0.95",
                    n, found / asked));
  }
}

inline void filtered_similarity_is_exact(ArtifactStore& s) {
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
  // A new version whose bucket moved: the old one's filter result no longer counts.
  for (int i = 0; i < 240; i += 7) put(i, 1);
  for (int i = 6; i < 240; i += 30) {  // removed: never found again
    s.remove(fmt::format("f{:03}", i), t);
    latest.erase(fmt::format("f{:03}", i));
  }
  const auto query = detail::random_vector(model.second, 77);
  std::vector<std::pair<double, std::string>> want;
  for (const auto& [id, k] : latest) {
    if (k.passes) want.emplace_back(cairn::detail::cosine(query, k.vector), id);
  }
  std::sort(want.begin(), want.end(),
            [](const auto& x, const auto& y) { return x.first != y.first ? x.first > y.first : x.second < y.second; });
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
}

inline void ignores_vector_length(ArtifactStore& s) {
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
}

}  // namespace search_checks
}  // namespace detail

#undef CAIRN_CONFORM
#undef CAIRN_CONFORM_THROWS

}  // namespace testing
CAIRN_END_NAMESPACE
