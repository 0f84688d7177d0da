// cairn — relevance_query: the search for what is relevant to a free text (a goal, a user's request), shared by the
// layers above search: SopPlanner's retrieval (goals/sop.hpp) and the prompt catalog's relevant_to
// (context/prompt.hpp). docs/search.md, "The layers above".
#pragma once

#include <algorithm>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/artifact/search.hpp"
#include "cairn/artifact/search/embedding.hpp"
#include "cairn/artifact/search/text.hpp"
#include "cairn/artifact/store.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

/// A query for what is relevant to `text` in `store`: the distinct words of `text` (search's tokenizer; those
/// `skip` refuses left out; at most SearchQuery::max_words) joined by OR, so a record needs only some of them and
/// BM25 ranks how many and how rare; and, when the store keeps vectors and has an embedder, the vector of `text`
/// itself (not of the OR query), so the search is hybrid. Its `text` is "" when `text` has no word to search by; the
/// caller sets the filter and the limit. Throws what the embedder throws (embedding is checked as a store's is).
inline SearchQuery relevance_query(const ArtifactStore& store, std::string_view text,
                                   const std::function<bool(std::string_view)>& skip = {}) {
  SearchQuery q;
  text = text.substr(0, detail::valid_utf8_prefix_length(text));  // the query must be valid UTF-8
  std::vector<std::string> words;
  for (std::string& w : detail::words_of(text)) {
    if (words.size() == SearchQuery::max_words) break;
    if ((!skip || !skip(w)) && std::find(words.begin(), words.end(), w) == words.end()) words.push_back(std::move(w));
  }
  // The query text is at most SearchQuery::max_text_bytes: the words that fit are kept.
  for (const auto& w : words) {
    const std::size_t grown = q.text.size() + (q.text.empty() ? 0 : 4) + w.size();
    if (grown > SearchQuery::max_text_bytes) break;
    q.text += (q.text.empty() ? "" : " OR ") + w;
  }
  if (q.text.empty()) return q;
  const auto embedder = store.keeps_embeddings() ? store.embedder() : nullptr;
  if (embedder) {
    std::string whole(text.substr(0, 8 * 1024));
    whole.resize(detail::valid_utf8_prefix_length(whole));
    q.vector = detail::embed_checked(*embedder, {whole}).front();
  }
  return q;
}

CAIRN_END_NAMESPACE
