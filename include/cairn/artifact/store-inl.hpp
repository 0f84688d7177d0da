// cairn — the bodies of artifact/store.hpp's search: prepare_search for a store, the default scan
// (detail::default_search) and ArtifactStore::search. Header-only, store.hpp includes this file and CAIRN_INLINE is
// `inline`; with CAIRN_COMPILED_LIB they are compiled once into cairn::compiled (src/compiled/artifact.cpp), and a
// host's file that includes store.hpp does not parse the search engine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cairn/artifact/search/pipeline.hpp"
#include "cairn/artifact/store.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

namespace detail {

/// prepare_search (artifact/search/pipeline.hpp) for `store`, after checking the tenant.
CAIRN_INLINE PreparedSearch prepare_search(const ArtifactStore& store, const std::string& tenant_id,
                                           const SearchQuery& q) {
  check_tenant(tenant_id);
  return prepare_search(store.embedder(), store.keeps_embeddings(), q);
}

}  // namespace detail

namespace detail {

/// The default search of `store` for a prepared query: an exact scan of the tenant's artifacts (see
/// ArtifactStore::search). BM25's statistics are those of every version searched in the tenant (the latest of each
/// id, or all), whatever the filters. A store routes what its indexes do not answer here, with the query it prepared.
CAIRN_INLINE SearchPage default_search(const ArtifactStore& store, const std::string& tenant_id, const SearchQuery& q,
                                       const PreparedSearch& p) {
  // Every version searched: the latest of each id (or all of them), read page by page.
  std::vector<ArtifactPtr> searched;
  ListQuery lq;
  lq.limit = ListQuery::max_limit;
  for (;;) {
    ListPage page = store.list(tenant_id, lq);
    for (auto& r : page.items) {
      if (!q.all_versions) {
        searched.push_back(std::move(r));
        continue;
      }
      for (const std::uint64_t v : store.versions(r->id(), tenant_id)) {
        if (v == r->version()) {
          searched.push_back(r);
        } else if (auto older = store.fetch(r->id(), tenant_id, v)) {
          searched.push_back(std::move(older));
        }
      }
    }
    if (!page.next_cursor) break;
    lq.cursor = *page.next_cursor;
  }

  std::vector<SearchCandidate> found;
  Bm25 bm25(p.words.words());
  std::vector<RecordWords> searched_words;
  if (p.by_text) {
    searched_words.reserve(searched.size());
    for (const auto& r : searched) {
      searched_words.push_back(record_words(*r));
      bm25.add(searched_words.back());
    }
  }
  for (std::size_t i = 0; i < searched.size(); ++i) {
    const ArtifactPtr& r = searched[i];
    if (!matches_filter(*r, q.filter)) continue;
    SearchCandidate c{r, std::nullopt, std::nullopt, {}};
    if (p.by_text && matches_words(searched_words[i], p.words)) {
      c.bm25 = bm25.score(searched_words[i]);
      describe_word_match(searched_words[i], p.words.words(), c.matched);
    }
    if (p.by_vector) {
      const auto e = store.embedding(r->id(), tenant_id, r->version());
      if (e && e->model == p.vector->model && e->values.size() == p.vector->values.size()) {
        c.similarity = cosine(p.vector->values, e->values);
        c.matched.similarity = c.similarity;
      }
    }
    found.push_back(std::move(c));
  }
  return rank_search_page(std::move(found), q, p);
}

}  // namespace detail

CAIRN_INLINE SearchPage ArtifactStore::search(const std::string& tenant_id, const SearchQuery& q) const {
  return detail::default_search(*this, tenant_id, q, detail::prepare_search(*this, tenant_id, q));
}

CAIRN_END_NAMESPACE
