// cairn::detail — search's pipeline, shared by the default scan and every built-in store: a query checked and
// prepared (what it ranks by, its vector, its words, its cursor), then what the store found ranked into a page (the
// rank in each list, the score, fusion, order, the cursor, the limit). Every store routes a query the same way:
// prepare, then branch on what it ranks by (PreparedSearch::by_text, by_vector).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cairn/artifact/search.hpp"
#include "cairn/artifact/search/embedding.hpp"
#include "cairn/artifact/search/filter.hpp"
#include "cairn/artifact/search/rank.hpp"
#include "cairn/artifact/search/words.hpp"
#include "cairn/error.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace detail {

/// What a search asks for, checked, shared by the default scan and the built-in stores' indexes.
struct PreparedSearch {
  std::optional<Embedding> vector;  // the query's own, or its text embedded by the store's embedder
  bool by_text = false;
  bool by_vector = false;
  WordQuery words;
  std::optional<SearchCursor> cursor;
};

/// Checks `q` for a store whose embedder is `embedder` (null: none; called here, so the caller must not hold a lock:
/// it embeds the query's text when the query brings no vector) and that keeps vectors or not (`keeps_embeddings`),
/// and says what it ranks by. Throws invalid_argument / limit_exceeded as ArtifactStore::search documents. Stores
/// call it through prepare_search(store, tenant, q) in artifact/store.hpp, which checks the tenant first.
inline PreparedSearch prepare_search(const std::shared_ptr<Embedder>& embedder, bool keeps_embeddings,
                                     const SearchQuery& q) {
  check_search_query(q);
  PreparedSearch p;
  p.cursor = decode_cursor(q);
  p.vector = q.vector;
  if (!p.vector && !q.text.empty() && q.mode != SearchMode::text) {
    if (embedder) p.vector = std::move(embed_checked(*embedder, {q.text}).front());
  }
  if ((q.mode == SearchMode::similarity || q.mode == SearchMode::hybrid) && !p.vector) {
    throw invalid_argument(
        "search: mode similarity and mode hybrid need a vector, or query text and a store with "
        "an embedder");
  }
  if (q.mode == SearchMode::hybrid && q.text.empty()) throw invalid_argument("search: mode hybrid needs query text");
  p.by_text = !q.text.empty() && q.mode != SearchMode::similarity;
  p.by_vector = p.vector && q.mode != SearchMode::text;
  if (p.by_text) p.words = parse_word_query(q.text);
  if (p.by_text && p.words.empty()) {
    throw invalid_argument("search: query text has no words to find (only punctuation or spaces)");
  }
  if (p.by_vector && !keeps_embeddings) {
    throw invalid_argument(
        "search: this store keeps no vectors, so it cannot search by similarity "
        "(give it an Embedder, or search by words and filters)");
  }
  return p;
}

/// A version a search found (it passed the filters): its BM25 score when its words matched, its similarity when its
/// vector was compared, and why.
struct SearchCandidate {
  ArtifactPtr record;
  std::optional<double> bm25;
  std::optional<double> similarity;
  SearchMatch matched;
};

/// Ranks what a search found and cuts the page: the rank in each list, then the score (BM25, cosine, their
/// reciprocal rank fusion, or 0 for filters alone), results order, the cursor, the limit. `vector_ranked_before`: how
/// many versions the similarity ranking holds before `found`'s (a store that left out those before the cursor).
inline SearchPage rank_search_page(std::vector<SearchCandidate> found, const SearchQuery& q, const PreparedSearch& p,
                                   std::size_t vector_ranked_before = 0) {
  // A version takes part when it matched what the query ranks by (either list, for hybrid).
  found.erase(std::remove_if(found.begin(), found.end(),
                             [&p](const SearchCandidate& c) {
                               const bool text_hit = c.bm25.has_value(), vector_hit = c.similarity.has_value();
                               return (p.by_text && !p.by_vector && !text_hit) ||
                                      (p.by_vector && !p.by_text && !vector_hit) ||
                                      (p.by_text && p.by_vector && !text_hit && !vector_hit);
                             }),
              found.end());
  const auto rank_by = [&found](auto key, auto set_rank) {
    std::vector<SearchCandidate*> list;
    for (auto& c : found) {
      if (key(c)) list.push_back(&c);
    }
    std::sort(list.begin(), list.end(), [&key](const SearchCandidate* a, const SearchCandidate* b) {
      return hit_before(*key(*a), *a->record, *key(*b), *b->record);
    });
    for (std::size_t i = 0; i < list.size(); ++i) set_rank(*list[i], i + 1);
  };
  if (p.by_text) {
    rank_by([](const SearchCandidate& c) { return c.bm25; },
            [](SearchCandidate& c, std::size_t rank) { c.matched.text_rank = rank; });
  }
  if (p.by_vector) {
    rank_by([](const SearchCandidate& c) { return c.similarity; },
            [vector_ranked_before](SearchCandidate& c, std::size_t rank) {
              c.matched.vector_rank = vector_ranked_before + rank;
            });
  }
  std::vector<SearchHit> hits;
  hits.reserve(found.size());
  for (auto& c : found) {
    const double score = p.by_text && p.by_vector ? rrf(c.matched.text_rank, c.matched.vector_rank)
                         : p.by_text              ? c.bm25.value_or(0)
                         : p.by_vector            ? c.similarity.value_or(0)
                                                  : 0.0;
    if (p.cursor && !after_cursor(*p.cursor, score, *c.record)) continue;
    hits.push_back(SearchHit{std::move(c.record), score, std::move(c.matched)});
  }
  std::sort(hits.begin(), hits.end(),
            [](const SearchHit& a, const SearchHit& b) { return hit_before(a.score, *a.record, b.score, *b.record); });
  SearchPage page;
  if (hits.size() > q.limit) {
    hits.resize(q.limit);
    page.next_cursor = encode_cursor(q, hits.back());
  }
  page.hits = std::move(hits);
  return page;
}

/// A version a SQL store found, known by its key until a page needs its record: the store reads the records of the
/// page alone (rank_keyed_page). `candidate.record` is null until read, or the record when the store had it anyway.
struct KeyedCandidate {
  std::string id;
  std::uint64_t version = 0;
  SearchCandidate candidate;
};

/// Hybrid: the versions a similarity search found (`near`, with their records) joined to those the words found
/// (`found`, by key): a version in both keeps its words and takes the similarity (and the record, if it had none);
/// one found by similarity alone is added.
inline void add_similar(std::vector<KeyedCandidate>& found, std::vector<SearchCandidate> near) {
  found.reserve(found.size() + near.size());  // no reallocation below: `at` points into found's ids
  std::map<std::pair<std::string_view, std::uint64_t>, std::size_t> at;  // (id, version) -> its place in found
  for (std::size_t i = 0; i < found.size(); ++i) {
    at.emplace(std::pair<std::string_view, std::uint64_t>(found[i].id, found[i].version), i);
  }
  for (auto& c : near) {
    const auto it = at.find({c.record->id(), c.record->version()});
    if (it == at.end()) {
      found.push_back({c.record->id(), c.record->version(), std::move(c)});
      continue;
    }
    SearchCandidate& w = found[it->second].candidate;
    w.similarity = c.similarity;
    w.matched.similarity = c.similarity;
    if (!w.record) w.record = std::move(c.record);
  }
}

/// rank_search_page for candidates known by their keys, each of which passed the filters: the same ranks in each
/// list, score, order, cursor and page, with a record read (`read(id, version)`, an ArtifactPtr) only for the hits
/// the page shows and the one after it (to know a next page exists). A version whose record cannot be read (null)
/// is left out of the page, as the default scan leaves it out; unlike the scan, which never sees it, it keeps its
/// place in the ranks, which are counted over the keys.
template <class Read>
SearchPage rank_keyed_page(std::vector<KeyedCandidate> found, const SearchQuery& q, const PreparedSearch& p,
                           Read&& read) {
  // detail::hit_before and detail::after_cursor, on the keys.
  const auto before = [](double sa, const KeyedCandidate& a, double sb, const KeyedCandidate& b) {
    if (sa != sb) return sa > sb;
    if (const int c = a.id.compare(b.id); c != 0) return c < 0;
    return a.version > b.version;
  };
  const auto rank_by = [&found, &before](auto key, auto set_rank) {
    std::vector<KeyedCandidate*> list;
    for (auto& c : found) {
      if (key(c)) list.push_back(&c);
    }
    std::sort(list.begin(), list.end(), [&key, &before](const KeyedCandidate* a, const KeyedCandidate* b) {
      return before(*key(*a), *a, *key(*b), *b);
    });
    for (std::size_t i = 0; i < list.size(); ++i) set_rank(*list[i], i + 1);
  };
  if (p.by_text) {
    rank_by([](const KeyedCandidate& c) { return c.candidate.bm25; },
            [](KeyedCandidate& c, std::size_t rank) { c.candidate.matched.text_rank = rank; });
  }
  if (p.by_vector) {
    rank_by([](const KeyedCandidate& c) { return c.candidate.similarity; },
            [](KeyedCandidate& c, std::size_t rank) { c.candidate.matched.vector_rank = rank; });
  }
  std::vector<std::pair<double, KeyedCandidate*>> ranked;
  ranked.reserve(found.size());
  for (auto& c : found) {
    const SearchCandidate& k = c.candidate;
    const double score = p.by_text && p.by_vector ? rrf(k.matched.text_rank, k.matched.vector_rank)
                         : p.by_text              ? k.bm25.value_or(0)
                                                  : k.similarity.value_or(0);
    if (p.cursor) {
      const SearchCursor& at = *p.cursor;
      const bool after = score != at.score ? score < at.score : c.id != at.id ? c.id > at.id : c.version < at.version;
      if (!after) continue;
    }
    ranked.emplace_back(score, &c);
  }
  std::sort(ranked.begin(), ranked.end(),
            [&before](const auto& a, const auto& b) { return before(a.first, *a.second, b.first, *b.second); });
  SearchPage page;
  for (auto& [score, c] : ranked) {
    ArtifactPtr record = c->candidate.record ? std::move(c->candidate.record) : read(c->id, c->version);
    if (!record) continue;
    if (page.hits.size() == q.limit) {
      page.next_cursor = encode_cursor(q, page.hits.back());
      break;
    }
    page.hits.push_back(SearchHit{std::move(record), score, std::move(c->candidate.matched)});
  }
  return page;
}

}  // namespace detail
CAIRN_END_NAMESPACE
