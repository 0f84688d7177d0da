// cairn::testing — search checks: what every backend must refuse, naming what and where. Bad queries, contradictory
// modes and oversized filters; nothing stored is lost on the way.
// search_conformance_checks() (cairn/testing/search_conformance.hpp) names each and runs them in its fixed order.
#pragma once

#include <cstddef>
#include <limits>
#include <string>
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
  ::cairn::testing::detail::expect(static_cast<bool>(cond), #cond, __LINE__, "search_conformance/refusals.hpp")
#define CAIRN_CONFORM_THROWS(E, expr) \
  ::cairn::testing::detail::expect_throw<E>([&] { (void)(expr); }, #expr, __LINE__, "search_conformance/refusals.hpp")

namespace detail {
namespace search_checks {

using nlohmann::json;

inline void refuses_bad_queries(ArtifactStore& s) {
  const auto t = fresh_tenant("bad");
  (void)s.store(*note(t, "kept", "still here").metadata("tags", json::array({"ok"})).build());
  SearchQuery q;
  CAIRN_CONFORM(CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q)).find("nothing to search by") !=
                std::string::npos);
  q.text = "ok";
  q.limit = 0;
  CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q));
  q.limit = SearchQuery::max_limit + 1;
  CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q));
  q.limit = 10;
  q.text = "\"unclosed quote";
  CAIRN_CONFORM(CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q)).find("byte 0") != std::string::npos);
  q.text = "a OR";
  CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q));
  q.text = " ?! ";
  CAIRN_CONFORM(CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q)).find("no words") != std::string::npos);
  q.text = "-only -exclusions";
  CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q));
  q.text = std::string(SearchQuery::max_text_bytes + 1, 'a');
  CAIRN_CONFORM_THROWS(limit_exceeded, s.search(t, q));
  q.text = "\xff\xfe";
  CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q));
  q.text = "ok";
  q.filter.metadata = {{"no-slash", FieldOp::eq, 1}};
  CAIRN_CONFORM(CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q)).find("filter.metadata[0]") != std::string::npos);
  q.filter.metadata = {{"/a", FieldOp::lt, json::object()}};
  CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q));
  // An array index past 64 bits (the record's tags are an array): a cairn error naming the condition, not the JSON
  // library's. By words that match the record, so a store that checks the filter on matches alone meets it too.
  q.text = "still";
  q.filter.metadata = {{"/tags/99999999999999999999", FieldOp::eq, "x"}};
  CAIRN_CONFORM(CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q)).find("filter.metadata[0]") != std::string::npos);
  q.filter.metadata = {{"/tags/9223372036854775808", FieldOp::exists, nullptr}};
  CAIRN_CONFORM(CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q)).find("'9223372036854775808'") !=
                std::string::npos);
  q.text = "ok";
  q.filter.metadata = {{"/a", FieldOp::in, json::array()}};
  CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q));
  q.filter.metadata = {};
  q.vector = Embedding{"model", {1.0f, std::numeric_limits<float>::quiet_NaN()}};
  CAIRN_CONFORM(CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q)).find("vector[1]") != std::string::npos);
  q.vector = Embedding{"model", {0.0f, 0.0f}};
  CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q));
  q.vector = Embedding{"model", {}};
  CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q));
  q.vector = Embedding{"model", {1.0f, 0.0f}};
  if (!s.keeps_embeddings()) CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q));
  q.cursor = "not-a-cursor";
  CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q));
  CAIRN_CONFORM(s.fetch("kept", t) != nullptr);  // nothing lost
}

inline void refuses_contradictory_modes(ArtifactStore& s) {
  const auto t = fresh_tenant("bad-mode");
  (void)s.store(*note(t, "kept", "still here").build());
  SearchQuery q;
  q.mode = SearchMode::text;
  CAIRN_CONFORM(CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q)).find("mode text") != std::string::npos);
  q.mode = SearchMode::hybrid;
  q.vector = Embedding{"m", {1.0f}};
  CAIRN_CONFORM(CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q)).find("hybrid") != std::string::npos);
  if (!s.embedder()) {
    q.vector.reset();
    q.text = "still";
    q.mode = SearchMode::similarity;
    CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, q));
  }
  SearchQuery f;
  f.text = "still";
  f.mode = SearchMode::text;
  f.filter.created_after = 10;
  f.filter.created_before = 10;
  CAIRN_CONFORM(CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, f)).find("created_after") != std::string::npos);
  f.filter = {};
  for (std::size_t i = 0; i <= SearchQuery::max_conditions; ++i) {
    f.filter.metadata.push_back({"/a", FieldOp::exists, nullptr});
  }
  CAIRN_CONFORM_THROWS(limit_exceeded, s.search(t, f));
  f.filter.metadata = {{"/a", FieldOp::in, json(std::vector<int>(SearchQuery::max_in_values + 1, 1))}};
  CAIRN_CONFORM(CAIRN_CONFORM_THROWS(limit_exceeded, s.search(t, f)).find("filter.metadata[0]") != std::string::npos);
  f.filter.metadata = {{"/a", FieldOp::eq, json::array({1})}};
  CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, f));
  f.filter.metadata = {{"/a", FieldOp::gt, std::numeric_limits<double>::quiet_NaN()}};
  CAIRN_CONFORM_THROWS(invalid_argument, s.search(t, f));
  f.filter.metadata = {};
  CAIRN_CONFORM_THROWS(invalid_argument, s.search("", f));
  // A query vector of another model or dimension compares with nothing: no hits, no error.
  if (s.keeps_embeddings()) {
    SearchQuery other;
    other.mode = SearchMode::similarity;
    other.vector = Embedding{"conformance-unknown-model", {1.0f, 2.0f, 3.0f}};
    CAIRN_CONFORM(s.search(t, other).hits.empty());
    other.exact = true;
    CAIRN_CONFORM(s.search(t, other).hits.empty());
  }
  CAIRN_CONFORM(s.fetch("kept", t) != nullptr);
}

}  // namespace search_checks
}  // namespace detail

#undef CAIRN_CONFORM
#undef CAIRN_CONFORM_THROWS

}  // namespace testing
CAIRN_END_NAMESPACE
