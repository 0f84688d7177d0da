// cairn::testing — search checks: what a backend with its own word and vector indexes must still show. Filters,
// words, hybrid and similarity together find what the scan of the same records finds, and a store that indexes as
// it stores has nothing left to reindex.
// search_conformance_checks() (cairn/testing/search_conformance.hpp) names each and runs them in its fixed order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/artifact/record.hpp"
#include "cairn/artifact/store.hpp"
#include "cairn/error.hpp"
#include "cairn/testing/conformance_check.hpp"
#include "cairn/testing/search_conformance/support.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace testing {

#define CAIRN_CONFORM(cond) \
  ::cairn::testing::detail::expect(static_cast<bool>(cond), #cond, __LINE__, "search_conformance/indexes.hpp")
#define CAIRN_CONFORM_THROWS(E, expr) \
  ::cairn::testing::detail::expect_throw<E>([&] { (void)(expr); }, #expr, __LINE__, "search_conformance/indexes.hpp")

namespace detail {
namespace search_checks {

inline void agrees_with_the_scan(ArtifactStore& s) {
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
      (void)s.store_embedded(
          *b.build(), Embedding{model.first, detail::random_vector(model.second, 500 + static_cast<unsigned>(i))});
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
}

inline void indexes_as_it_stores(ArtifactStore& s) {
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
}

}  // namespace search_checks
}  // namespace detail

#undef CAIRN_CONFORM
#undef CAIRN_CONFORM_THROWS

}  // namespace testing
CAIRN_END_NAMESPACE
