// cairn::detail — the in-memory store's word index: per tenant, the versions that hold each word (postings, with how
// often each holds it) and BM25's statistics over the latest versions and over all, made by the tenant's first
// search by words and kept current by every write after (docs/search.md, "The in-memory store").
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "cairn/artifact/record.hpp"
#include "cairn/artifact/search/words.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace detail {

// The distinct words of a record, in the order they first occur, and its length in words, for the word index (the
// same words as record_words).
struct RecordTerms {
  std::vector<std::string> distinct;
  std::vector<std::uint8_t> counts;  // how often each occurs, at most 255 (WordIndex::Postings::counts)
  std::size_t length = 0;
};
inline RecordTerms record_terms(const ArtifactRecord& record) {
  RecordWords w = record_words(record);
  RecordTerms t;
  t.length = w.length();
  // Each word looked up in a table of places in `distinct` (open addressing, a power of two at least twice the
  // words): one hash and about one comparison a word, where sorting them took a dozen comparisons each.
  std::size_t size = 16;
  while (size < 2 * t.length) size *= 2;
  std::vector<std::uint32_t> slots(size, 0);  // a place in `distinct` plus 1; 0: empty
  const std::hash<std::string_view> hash;
  for (auto* field : {&w.title, &w.description, &w.value}) {
    for (auto& word : *field) {
      for (std::size_t i = hash(word) & (size - 1);; i = (i + 1) & (size - 1)) {
        if (slots[i] == 0) {
          slots[i] = static_cast<std::uint32_t>(t.distinct.size() + 1);
          t.distinct.push_back(std::move(word));
          t.counts.push_back(1);
          break;
        }
        const std::size_t at = slots[i] - 1;
        if (t.distinct[at] == word) {
          if (t.counts[at] < 255) ++t.counts[at];
          break;
        }
      }
    }
  }
  return t;
}

// A tenant's word index (InMemoryArtifactStore's; Entry: the store's node of an artifact, named by pointer only),
// under its shard's lock: the versions that hold each word (postings) and BM25's statistics over the latest
// versions and over all of them. It keeps no version's words: those of a version are made again from its record
// where they are needed (when a newer version replaces it as the latest, and when its artifact is removed), so that
// the index costs a few bytes per distinct word of a version and ~100 bytes per version.
template <class Entry>
struct WordIndex {
  static constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();
  struct Doc {
    const Entry* entry;  // its artifact's entry (the node lives as long as the artifact)
    std::uint64_t version;
    std::uint32_t length : 31;  // in words
    std::uint32_t latest : 1;
    std::uint32_t before;  // the doc of the artifact's version before this one, or none
  };
  struct Postings {
    // The docs that hold the word, ascending: docs are numbered as they are added, so adding one appends.
    std::vector<std::uint32_t> docs;
    // Beside each doc, how often it holds the word; 255 stands for 255 or more (that doc's record is counted
    // again when scored).
    std::vector<std::uint8_t> counts;
    std::size_t latest = 0;  // how many of them are latest versions
  };
  std::unordered_map<std::uint32_t, Doc> docs;
  std::unordered_map<const Entry*, std::uint32_t> latest_doc;  // each artifact's latest version's doc
  std::unordered_map<std::string, Postings> postings;
  std::uint32_t next_doc = 0;  // numbers are not reused: past 2^32 - 1 adds the index is dropped and made anew
  std::size_t documents = 0, length = 0, latest_documents = 0, latest_length = 0;

  bool full() const noexcept { return next_doc == none; }

  // Adds version `version` of `entry`, which holds `words`; `replaced`: the words of the entry's latest version
  // until now (null when the index holds none of its versions).
  void add(const Entry* entry, std::uint64_t version, const RecordTerms& words, const RecordTerms* replaced) {
    const auto latest_it = latest_doc.try_emplace(entry, none).first;
    if (latest_it->second != none && replaced) {  // the latest version until now is an older one from here on
      Doc& b = docs.at(latest_it->second);
      b.latest = 0;
      --latest_documents;
      latest_length -= b.length;
      for (const auto& word : replaced->distinct) --postings.find(word)->second.latest;
    }
    const std::uint32_t n = next_doc++;
    // A length past 2^31 - 1 words cannot happen (a value's text is cut at 64 KiB for words); masked for the field.
    docs.emplace(n, Doc{entry, version, static_cast<std::uint32_t>(words.length) & 0x7fffffffu, 1, latest_it->second});
    for (std::size_t i = 0; i < words.distinct.size(); ++i) {
      Postings& p = postings[words.distinct[i]];
      p.docs.push_back(n);
      p.counts.push_back(words.counts[i]);
      ++p.latest;
    }
    latest_it->second = n;
    ++documents;
    length += words.length;
    ++latest_documents;
    latest_length += words.length;
  }

  // Removes every version of `entry`; `words_of(version)` makes the words of one.
  template <class WordsOf>
  void remove(const Entry* entry, WordsOf&& words_of) {
    const auto it = latest_doc.find(entry);
    if (it == latest_doc.end()) return;
    for (std::uint32_t n = it->second; n != none;) {
      const auto d = docs.find(n);
      const Doc& doc = d->second;
      for (const auto& word : words_of(doc.version).distinct) {
        const auto pit = postings.find(word);
        auto& held = pit->second.docs;
        const auto at = std::lower_bound(held.begin(), held.end(), n);
        pit->second.counts.erase(pit->second.counts.begin() + (at - held.begin()));
        held.erase(at);
        if (doc.latest) --pit->second.latest;
        if (held.empty()) postings.erase(pit);
      }
      --documents;
      length -= doc.length;
      if (doc.latest) {
        --latest_documents;
        latest_length -= doc.length;
      }
      n = doc.before;
      docs.erase(d);
    }
    latest_doc.erase(it);
  }

  // A query of single words (no phrase, no exclusion): the docs that match it, each with how often it holds each
  // of `words` (the query's words, WordQuery::words()) from the postings, no record read. Nothing (and false)
  // for any other query.
  bool counted_matches(const WordQuery& q, const std::vector<std::string>& words,
                       std::vector<std::pair<std::uint32_t, std::vector<std::uint8_t>>>& out) const {
    if (!q.none_of.empty()) return false;
    for (const auto& group : q.all_of) {
      for (const auto& t : group) {
        if (t.words.size() != 1) return false;
      }
    }
    std::unordered_map<std::uint32_t, std::size_t> at;  // doc -> its place in out
    for (std::size_t i = 0; i < words.size(); ++i) {
      const auto it = postings.find(words[i]);
      if (it == postings.end()) continue;
      const Postings& p = it->second;
      for (std::size_t k = 0; k < p.docs.size(); ++k) {
        const auto [slot, added] = at.try_emplace(p.docs[k], out.size());
        if (added) out.emplace_back(p.docs[k], std::vector<std::uint8_t>(words.size(), 0));
        out[slot->second].second[i] = p.counts[k];
      }
    }
    // Every group holds one of its words.
    std::vector<std::vector<std::size_t>> groups;  // each group's words, as places in `words`
    for (const auto& group : q.all_of) {
      auto& g = groups.emplace_back();
      for (const auto& t : group)
        g.push_back(static_cast<std::size_t>(std::find(words.begin(), words.end(), t.words.front()) - words.begin()));
    }
    out.erase(std::remove_if(out.begin(), out.end(),
                             [&groups](const std::pair<std::uint32_t, std::vector<std::uint8_t>>& d) {
                               for (const auto& g : groups) {
                                 if (std::none_of(g.begin(), g.end(), [&d](std::size_t i) { return d.second[i]; }))
                                   return true;
                               }
                               return false;
                             }),
              out.end());
    return true;
  }

  // Docs that may match `q`: in every group, one that holds every word of one of the group's terms (the rarest
  // word's postings stand for a term; matches_words checks phrases and exclusions on the record).
  std::vector<std::uint64_t> word_candidates(const WordQuery& q) const {
    std::vector<std::unordered_set<std::uint64_t>> groups;
    for (const auto& group : q.all_of) {
      std::unordered_set<std::uint64_t> any;
      for (const auto& term : group) {
        const Postings* rarest = nullptr;
        bool missing = false;
        for (const auto& w : term.words) {
          const auto it = postings.find(w);
          if (it == postings.end()) {
            missing = true;
            break;
          }
          if (!rarest || it->second.docs.size() < rarest->docs.size()) rarest = &it->second;
        }
        if (missing || !rarest) continue;
        any.insert(rarest->docs.begin(), rarest->docs.end());
      }
      if (any.empty()) return {};
      groups.push_back(std::move(any));
    }
    if (groups.empty()) return {};
    const auto smallest = std::min_element(groups.begin(), groups.end(),
                                           [](const auto& a, const auto& b) { return a.size() < b.size(); });
    std::vector<std::uint64_t> out;
    for (const std::uint64_t n : *smallest) {
      bool everywhere = true;
      for (const auto& g : groups) everywhere = everywhere && (&g == &*smallest || g.count(n) > 0);
      if (everywhere) out.push_back(n);
    }
    return out;
  }
};

}  // namespace detail
CAIRN_END_NAMESPACE
