// cairn::testing — search checks: what a search may show. One tenant's records only (and statistics that never
// leak between tenants), the latest version unless asked, never a removed or replaced record (by words, by meaning,
// by filters, on a later page), and hits that exist or existed while writers run.
// search_conformance_checks() (cairn/testing/search_conformance.hpp) names each and runs them in its fixed order.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
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
  ::cairn::testing::detail::expect(static_cast<bool>(cond), #cond, __LINE__, "search_conformance/visibility.hpp")
#define CAIRN_CONFORM_THROWS(E, expr) \
  ::cairn::testing::detail::expect_throw<E>([&] { (void)(expr); }, #expr, __LINE__, "search_conformance/visibility.hpp")

namespace detail {
namespace search_checks {

using nlohmann::json;

inline void never_shows_another_tenant(ArtifactStore& s) {
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
}

inline void sees_the_latest_version(ArtifactStore& s) {
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
}

inline void removed_never_comes_back(ArtifactStore& s) {
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

  // A record removed between pages is not on a later page; the others come once each. Each query below removes
  // one of these, and the last needs six.
  for (int i = 0; i < 10; ++i) {
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
      SearchQuery both = near;  // hybrid: the fused ranking, paged by its cursor
      both.mode = SearchMode::hybrid;
      both.text = "needle";
      paged.push_back(both);
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
    for (const auto& id : seen) {
      CAIRN_CONFORM(std::count(order.begin(), order.end(), std::make_pair(id, std::uint64_t{1})) == 1);
    }
    if (q.mode == SearchMode::similarity) {
      // Similarities do not depend on the other records: every other hit comes exactly once. (BM25 scores do —
      // a removal changes the corpus statistics, and with them where the cursor's score falls.)
      CAIRN_CONFORM(std::set<std::string>(seen.begin(), seen.end()).size() == seen.size());
      CAIRN_CONFORM(seen.size() == order.size() - 1);
    }
  }
}

inline void is_per_tenant(ArtifactStore& s) {
  const auto a = fresh_tenant("twin-a");
  const auto c = fresh_tenant("twin-c");
  const auto b = fresh_tenant("other-b");
  const auto model = detail::vector_model(s);
  const bool vectors = s.keeps_embeddings();
  const auto put = [&](const std::string& tenant, const std::string& id, const std::string& text, unsigned v) {
    auto r = note(tenant, id, text).build();
    (void)(vectors ? s.store_embedded(*r, Embedding{model.first, detail::random_vector(model.second, v)})
                   : s.store(*r));
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
    errors.push_back(CAIRN_CONFORM_THROWS(invalid_argument,
                                          s.store_embedded(*note(a, "b0", "x").build(), Embedding{model.first, {}})));
  }
  for (const auto& e : errors) CAIRN_CONFORM(e.find(b) == std::string::npos && e.find("zebra") == std::string::npos);
  CAIRN_CONFORM(s.fetch("b0", a) == nullptr);
}

inline void under_concurrent_writers(ArtifactStore& s) {
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
          const auto v = detail::random_vector(model.second, static_cast<unsigned>(w * 100 + n));
          (void)(vectors ? s.store_embedded(*r, Embedding{model.first, v}) : s.store(*r));
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
}

// Filtered similarity searches while a writer replaces and removes the versions they walk. A store whose index keeps
// what a filter reads beside each vector (detail::FilterFields) drops it with the version when a search catches the
// index up; a search that walked past the version before must not read it after (sanitizer builds see a read of
// freed memory). Every hit passes the filter and is a version that was stored.
inline void under_replacing_writers(ArtifactStore& s) {
  if (!s.keeps_embeddings()) return;
  const auto t = fresh_tenant("churn");
  const auto model = detail::vector_model(s);
  constexpr int ids = 8, rounds = 30, searchers = 2;
  std::atomic<bool> writing{true};
  std::atomic<int> queries{0};
  std::mutex mutex;
  std::vector<std::string> failures;
  const auto fail = [&](std::string what) {
    std::lock_guard<std::mutex> lock(mutex);
    failures.push_back(std::move(what));
  };
  std::map<std::string, std::pair<int, std::vector<float>>> last;  // the writer's: each present id's bucket, vector
  std::vector<std::thread> pool;
  pool.emplace_back([&] {
    try {
      for (int r = 0; r < rounds; ++r) {
        for (int i = 0; i < ids; ++i) {
          const std::string id = fmt::format("c{}", i);
          if ((i + r) % 5 == 4 && last.count(id)) {
            s.remove(id, t);
            last.erase(id);
            continue;
          }
          auto record = note(t, id, json{{"id", id}, {"round", r}}).metadata(json{{"bucket", (i + r) % 2}}).build();
          auto v = detail::random_vector(model.second, static_cast<unsigned>(r * ids + i));
          (void)s.store_embedded(*record, Embedding{model.first, v});
          last[id] = {(i + r) % 2, std::move(v)};
        }
      }
    } catch (const std::exception& e) {
      fail(std::string("writer: ") + e.what());
    }
    writing = false;
  });
  for (int k = 0; k < searchers; ++k) {
    pool.emplace_back([&, k] {
      try {
        for (unsigned n = 0; writing || n == 0; ++n) {
          SearchQuery q;
          q.mode = SearchMode::similarity;
          q.limit = 3;
          q.vector =
              Embedding{model.first, detail::random_vector(model.second, 7919u * static_cast<unsigned>(k + 1) + n)};
          q.filter.metadata.push_back({"/bucket", FieldOp::eq, 0});
          for (const auto& h : s.search(t, q).hits) {
            const auto& r = *h.record;
            if (r.tenant_id() != t || r.id().rfind('c', 0) != 0 || r.value().value("id", "") != r.id() ||
                r.metadata().value("bucket", -1) != 0) {
              fail("a hit that does not pass the filter or was never stored: " + r.id());
            }
          }
          ++queries;
        }
      } catch (const std::exception& e) {
        fail(std::string("searcher: ") + e.what());
      }
    });
  }
  for (auto& th : pool) th.join();
  if (!failures.empty()) throw conformance_failure("search under replacing writers: " + failures.front());
  CAIRN_CONFORM(queries >= searchers);
  // Once the writer is done, every store answers as an exact scan of what it left: the index the searchers' catch-ups
  // built while it wrote holds each id's last version only.
  for (unsigned n = 0; n < 4; ++n) {
    const auto query = detail::random_vector(model.second, 104729u + n);
    std::vector<std::pair<double, std::string>> want;
    for (const auto& [id, kept] : last) {
      if (kept.first == 0) want.emplace_back(cairn::detail::cosine(query, kept.second), id);
    }
    std::sort(want.begin(), want.end(), [](const auto& x, const auto& y) {
      return x.first != y.first ? x.first > y.first : x.second < y.second;
    });
    SearchQuery q;
    q.mode = SearchMode::similarity;
    q.limit = ids;
    q.vector = Embedding{model.first, query};
    q.filter.metadata.push_back({"/bucket", FieldOp::eq, 0});
    const auto hits = s.search(t, q).hits;
    CAIRN_CONFORM(hits.size() == want.size());
    for (std::size_t i = 0; i < hits.size(); ++i) {
      CAIRN_CONFORM(hits[i].record->id() == want[i].second || std::abs(hits[i].score - want[i].first) < 1e-6);
      CAIRN_CONFORM(hits[i].record->value().value("round", -1) == rounds - 1);
    }
  }
}

}  // namespace search_checks
}  // namespace detail

#undef CAIRN_CONFORM
#undef CAIRN_CONFORM_THROWS

}  // namespace testing
CAIRN_END_NAMESPACE
