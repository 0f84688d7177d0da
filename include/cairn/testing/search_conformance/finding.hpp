// cairn::testing — search checks: what every backend must find. Words best first with what matched, filters by
// fields, metadata and time, and every hit once, in order, on pages walked with a cursor.
// search_conformance_checks() (cairn/testing/search_conformance.hpp) names each and runs them in its fixed order.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <set>
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
  ::cairn::testing::detail::expect(static_cast<bool>(cond), #cond, __LINE__, "search_conformance/finding.hpp")
#define CAIRN_CONFORM_THROWS(E, expr) \
  ::cairn::testing::detail::expect_throw<E>([&] { (void)(expr); }, #expr, __LINE__, "search_conformance/finding.hpp")

namespace detail {
namespace search_checks {

using nlohmann::json;

inline void finds_by_words(ArtifactStore& s) {
  const auto t = fresh_tenant("words");
  (void)s.store(
      *note(t, "a", "revenue grew in emea").title("Revenue report").description("quarterly revenue by region").build());
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
}

inline void filters_by_fields(ArtifactStore& s) {
  const auto t = fresh_tenant("filter");
  const auto put = [&s, &t](const std::string& id, const char* type, json metadata, std::int64_t at) {
    (void)s.store(*note(t, id, "same words")
                       .type(type)
                       .mime_type(std::string(type) == "dataset" ? "text/csv" : "text/plain")
                       .created_by(id == "m1" ? "agent-a" : "agent-b")
                       .created_at(at)
                       .metadata(std::move(metadata))
                       .build());
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
}

inline void pages_with_a_cursor(ArtifactStore& s) {
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
}

}  // namespace search_checks
}  // namespace detail

#undef CAIRN_CONFORM
#undef CAIRN_CONFORM_THROWS

}  // namespace testing
CAIRN_END_NAMESPACE
