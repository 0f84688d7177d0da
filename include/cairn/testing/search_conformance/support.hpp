// cairn::testing — what the search checks share (cairn/testing/search_conformance/): the vectors they give a store,
// and comparing a search's page with what the scan over the same records finds.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cairn/artifact/search/rank.hpp"
#include "cairn/artifact/store.hpp"
#include "cairn/testing/conformance_check.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace testing {

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
      if (key(h) != key(want.hits[i]) || h.score != 0) {
        fail(fmt::format("hit {} is {}, the scan's is {}", i, key(h), key(want.hits[i])));
      }
      continue;
    }
    if (i > 0 && h.score > got.hits[i - 1].score) {
      fail(fmt::format("hit {} ({}) scores above the one before", i, key(h)));
    }
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
}  // namespace testing
CAIRN_END_NAMESPACE
