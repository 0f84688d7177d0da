// cairn::detail — search's words: the word query (alternatives of words and phrases, exclusions) and its parser, a
// record's words, and whether they match a query.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/artifact/record.hpp"
#include "cairn/artifact/search.hpp"
#include "cairn/artifact/search/text.hpp"
#include "cairn/detail/text.hpp"
#include "cairn/error.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace detail {

// ---- the word query: alternatives of terms (a term is a word or a phrase); every alternative group must match,
// no excluded term may.

struct QueryTerm {
  std::vector<std::string> words;  // one word, or a phrase's words in order
  std::string text() const {
    std::string s;
    for (const auto& w : words) s += (s.empty() ? "" : " ") + w;
    return s;
  }
};

struct WordQuery {
  std::vector<std::vector<QueryTerm>> all_of;  // each group: any of its terms
  std::vector<QueryTerm> none_of;
  bool empty() const noexcept { return all_of.empty(); }
  /// Every distinct word of the groups (not of the exclusions), in order of appearance.
  std::vector<std::string> words() const {
    std::vector<std::string> out;
    for (const auto& g : all_of) {
      for (const auto& t : g) {
        for (const auto& w : t.words) {
          if (std::find(out.begin(), out.end(), w) == out.end()) out.push_back(w);
        }
      }
    }
    return out;
  }
};

/// Parses the query text: `word`, `"a phrase"`, `-word` / `-"a phrase"` (excluded, where a term starts), `a OR b`
/// (alternatives).
/// Punctuation outside quotes separates words, as in the text searched. Throws cairn::invalid_argument naming the
/// byte position for an unclosed quote, a dangling OR, or a query of exclusions only; limit_exceeded past the limits.
inline WordQuery parse_word_query(std::string_view text) {
  if (text.size() > SearchQuery::max_text_bytes) {
    throw limit_exceeded(fmt::format("search: query text is {} bytes, more than the limit of {}", text.size(),
                                     SearchQuery::max_text_bytes));
  }
  if (!is_valid_utf8(text)) throw invalid_argument("search: query text is not valid UTF-8");
  struct Token {
    QueryTerm term;
    bool excluded;
    bool is_or;
    std::size_t at;
  };
  std::vector<Token> tokens;
  std::size_t words = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    // A minus excludes only where a term starts (at the start or after a space): inside "a-b" it separates.
    const bool term_start = i == 0 || text[i - 1] == ' ' || text[i - 1] == '\t' || text[i - 1] == '\n';
    const bool minus = c == '-' && term_start && i + 1 < text.size() &&
                       (text[i + 1] == '"' || is_word_byte(static_cast<unsigned char>(text[i + 1])));
    if (!minus && c != '"' && !is_word_byte(c)) {
      ++i;
      continue;
    }
    const std::size_t at = i;
    if (minus) ++i;
    QueryTerm term;
    if (text[i] == '"') {
      const std::size_t close = text.find('"', i + 1);
      if (close == std::string_view::npos) {
        throw invalid_argument(fmt::format("search: query text: the quote at byte {} is not closed", i));
      }
      term.words = words_of(text.substr(i + 1, close - i - 1));
      i = close + 1;
      if (term.words.empty()) continue;  // "" or "!!": nothing to find
    } else {
      std::size_t end = i;
      while (end < text.size() && is_word_byte(static_cast<unsigned char>(text[end]))) ++end;
      const std::string_view raw = text.substr(i, end - i);
      i = end;
      if (!minus && raw == "OR") {
        tokens.push_back({{}, false, true, at});
        continue;
      }
      term.words = words_of(raw);
    }
    words += term.words.size();
    if (words > SearchQuery::max_words) {
      throw limit_exceeded(fmt::format("search: query text has more than {} words", SearchQuery::max_words));
    }
    tokens.push_back({std::move(term), minus, false, at});
  }
  WordQuery q;
  for (std::size_t k = 0; k < tokens.size(); ++k) {
    Token& t = tokens[k];
    if (t.is_or) {
      const bool joins = k > 0 && k + 1 < tokens.size() && !tokens[k - 1].is_or && !tokens[k - 1].excluded &&
                         !tokens[k + 1].is_or && !tokens[k + 1].excluded;
      if (!joins) {
        throw invalid_argument(
            fmt::format("search: query text: OR at byte {} must stand between two words or phrases", t.at));
      }
      q.all_of.back().push_back(std::move(tokens[k + 1].term));
      ++k;
      continue;
    }
    if (t.excluded) {
      q.none_of.push_back(std::move(t.term));
    } else {
      q.all_of.push_back({std::move(t.term)});
    }
  }
  if (q.all_of.empty() && !q.none_of.empty()) {
    throw invalid_argument("search: query text excludes words but asks for none");
  }
  return q;
}

// ---- what a record's words are

struct RecordWords {
  std::vector<std::string> title, description, value;
  std::size_t length() const noexcept { return title.size() + description.size() + value.size(); }
};

inline RecordWords record_words(const ArtifactRecord& r) {
  RecordWords w;
  w.title = words_of(r.title());
  w.description = words_of(r.description());
  if (r.has_value()) w.value = words_of(value_text(r.value()));
  return w;
}

inline bool contains_term(const std::vector<std::string>& words, const QueryTerm& t) {
  if (t.words.empty() || words.size() < t.words.size()) return false;
  for (std::size_t i = 0; i + t.words.size() <= words.size(); ++i) {
    if (std::equal(t.words.begin(), t.words.end(), words.begin() + static_cast<std::ptrdiff_t>(i))) return true;
  }
  return false;
}

inline bool contains_term(const RecordWords& w, const QueryTerm& t) {
  return contains_term(w.title, t) || contains_term(w.description, t) || contains_term(w.value, t);
}

/// True when the record's words satisfy the word query (every group has a term in it, no exclusion is in it).
inline bool matches_words(const RecordWords& w, const WordQuery& q) {
  for (const auto& group : q.all_of) {
    bool any = false;
    for (const auto& t : group) any = any || contains_term(w, t);
    if (!any) return false;
  }
  for (const auto& t : q.none_of) {
    if (contains_term(w, t)) return false;
  }
  return true;
}

}  // namespace detail
CAIRN_END_NAMESPACE
