// The vector index search shares across stores (cairn/artifact/search/vector_index.hpp): an exact scan by default
// at every size, an hnswlib graph for searches that ask for it (ef) in this build (CAIRN_WITH_HNSWLIB). Its answers are
// checked against an exact scan of the same random vectors; removal, replacement, the filter and concurrent use
// are checked directly.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cairn/artifact/record.hpp"
#include "cairn/artifact/search/filter_columns.hpp"
#include "cairn/artifact/search/vector_cache.hpp"
#include "cairn/artifact/search/vector_index.hpp"
#include "cairn/detail/mapped_array.hpp"
#include "catch.hpp"

using cairn::detail::VectorHit;
using cairn::detail::VectorIndex;

namespace {

std::vector<float> random_unit(std::mt19937& rng, std::size_t dim) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(dim);
  double norm = 0;
  for (auto& x : v) {
    x = normal(rng);
    norm += static_cast<double>(x) * x;
  }
  for (auto& x : v) x = static_cast<float>(x / std::sqrt(norm));
  return v;
}

std::vector<std::string> exact_top(const std::vector<std::vector<float>>& all, const std::vector<float>& q,
                                   std::size_t k, const std::set<std::size_t>& skip = {}) {
  std::vector<std::pair<double, std::size_t>> scored;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (skip.count(i)) continue;
    double dot = 0;
    for (std::size_t d = 0; d < q.size(); ++d) dot += static_cast<double>(q[d]) * all[i][d];
    scored.emplace_back(dot, i);
  }
  std::sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::string> out;
  for (std::size_t i = 0; i < k && i < scored.size(); ++i) out.push_back("a" + std::to_string(scored[i].second));
  return out;
}

double recall(const std::vector<VectorHit>& got, const std::vector<std::string>& truth) {
  std::set<std::string> t(truth.begin(), truth.end());
  std::size_t found = 0;
  for (const auto& h : got) found += t.count(h.id);
  return truth.empty() ? 1.0 : static_cast<double>(found) / static_cast<double>(truth.size());
}

}  // namespace

TEST_CASE(
    "vector index: past exact_scan_below a search is still exact by default, with ef it goes through the "
    "graph (recall@10 >= 0.95 here), best first, cosine scores") {
  std::mt19937 rng(7);
  const std::size_t dim = 32;
  std::vector<std::vector<float>> all;
  VectorIndex index(dim);
  for (std::size_t i = 0; i < 3000; ++i) {
    all.push_back(random_unit(rng, dim));
    index.add("a" + std::to_string(i), 1, all.back());
  }
  CHECK(index.size() == 3000);
  CHECK_FALSE(index.searches_graph());  // nobody asked for the graph: none is made
  for (int q = 0; q < 20; ++q) {
    const auto query = random_unit(rng, dim);
    const auto hits = index.search(query, 10, nullptr);
    const auto truth = exact_top(all, query, 10);
    REQUIRE(hits.size() == 10);
    for (std::size_t i = 0; i < hits.size(); ++i) CHECK(hits[i].id == truth[i]);
  }
  // The first search with ef asks for the graph; it is filled as versions are added (or by build_graph()), and the
  // scan answers until it holds them all.
  const auto first = random_unit(rng, dim);
  const auto scanned = index.search(first, 10, nullptr, 0, 64);
  const auto first_truth = exact_top(all, first, 10);
  REQUIRE(scanned.size() == 10);
  for (std::size_t i = 0; i < scanned.size(); ++i) CHECK(scanned[i].id == first_truth[i]);
  CHECK_FALSE(index.searches_graph());
  index.build_graph();
  CHECK(index.searches_graph() == VectorIndex::approximate());
  double total = 0;
  for (int q = 0; q < 50; ++q) {
    const auto query = random_unit(rng, dim);
    const auto hits = index.search(query, 10, nullptr, 0, 64);
    REQUIRE(hits.size() == 10);
    for (std::size_t i = 1; i < hits.size(); ++i) CHECK(hits[i - 1].similarity >= hits[i].similarity);
    const auto i0 = std::stoul(hits[0].id.substr(1));
    double dot = 0;
    for (std::size_t d = 0; d < dim; ++d) dot += static_cast<double>(query[d]) * all[i0][d];
    CHECK(hits[0].similarity == Approx(dot).margin(1e-5));
    total += recall(hits, exact_top(all, query, 10));
  }
  CHECK(total / 50 >= 0.95);
}

TEST_CASE(
    "vector index: where the graph's recall is poor (uniform vectors in many dimensions, ef 10) the default "
    "stays exact, and a selective filter with ef gets the exact filtered page") {
  std::mt19937 rng(17);
  const std::size_t dim = 128;
  std::vector<std::vector<float>> all;
  VectorIndex index(dim);
  index.want_graph();  // filled as the versions are added
  const std::size_t n = 2500;
  for (std::size_t i = 0; i < n; ++i) {
    all.push_back(random_unit(rng, dim));
    index.add("a" + std::to_string(i), 1, all.back());
  }
  index.build_graph();
  CHECK(index.searches_graph() == VectorIndex::approximate());
  std::set<std::size_t> rare;  // every version but 1 in 100 is filtered out
  for (std::size_t i = 0; i < n; ++i) {
    if (i % 100 != 0) rare.insert(i);
  }
  const auto pass_rare = [](const std::string& id, std::uint64_t) { return std::stoul(id.substr(1)) % 100 == 0; };
  double exact_recall = 0, graph_recall = 0;
  for (int q = 0; q < 20; ++q) {
    const auto query = random_unit(rng, dim);
    const auto truth = exact_top(all, query, 10);
    const auto hits = index.search(query, 10, nullptr);
    REQUIRE(hits.size() == 10);
    for (std::size_t i = 0; i < hits.size(); ++i) CHECK(hits[i].id == truth[i]);
    exact_recall += recall(hits, truth) / 20;
    graph_recall += recall(index.search(query, 10, nullptr, 0, 10), truth) / 20;
    const auto filtered = index.search(query, 10, pass_rare, 0, 10);
    const auto filtered_truth = exact_top(all, query, 10, rare);
    REQUIRE(filtered.size() == 10);
    for (std::size_t i = 0; i < filtered.size(); ++i) CHECK(filtered[i].id == filtered_truth[i]);
  }
  CHECK(exact_recall == Approx(1.0));
  // What the knob trades: with hnswlib, the graph at ef 10 misses some of these (it is approximate); the default
  // never does.
  if (VectorIndex::approximate()) CHECK(graph_recall < 1.0);
}

TEST_CASE("vector index: below exact_scan_below versions a search is exact: the scan's top k, its order and ties") {
  std::mt19937 rng(11);
  const std::size_t dim = 48;
  std::vector<std::vector<float>> all;
  VectorIndex index(dim);
  const std::size_t n = std::min<std::size_t>(1500, VectorIndex::exact_scan_below - 1);
  for (std::size_t i = 0; i < n; ++i) {
    all.push_back(random_unit(rng, dim));
    index.add("a" + std::to_string(i), 1, all.back());
  }
  std::set<std::size_t> removed;
  for (std::size_t i = 0; i < n; i += 7) {
    index.remove("a" + std::to_string(i), 1);
    removed.insert(i);
  }
  for (int q = 0; q < 40; ++q) {
    const auto query = random_unit(rng, dim);
    const auto hits = index.search(query, 10, nullptr);
    const auto truth = exact_top(all, query, 10, removed);
    REQUIRE(hits.size() == truth.size());
    for (std::size_t i = 0; i < hits.size(); ++i) CHECK(hits[i].id == truth[i]);
    // A filter: only odd numbers; still the scan's top 10 of what passes.
    std::set<std::size_t> skip = removed;
    for (std::size_t i = 0; i < n; i += 2) skip.insert(i);
    const auto odd =
        index.search(query, 10, [](const std::string& id, std::uint64_t) { return std::stoul(id.substr(1)) % 2 == 1; });
    const auto odd_truth = exact_top(all, query, 10, skip);
    REQUIRE(odd.size() == odd_truth.size());
    for (std::size_t i = 0; i < odd.size(); ++i) CHECK(odd[i].id == odd_truth[i]);
  }
  // Ties: the same vector under three ids and two versions comes back in ascending id, newer version first, even
  // when k cuts through them.
  const auto same = random_unit(rng, dim);
  for (const char* id : {"z-tie", "b-tie", "m-tie"}) index.add(id, 1, same);
  index.add("b-tie", 2, same);
  const auto tied = index.search(same, 2, nullptr);
  REQUIRE(tied.size() == 2);
  CHECK(tied[0].id == "b-tie");
  CHECK(tied[0].version == 2);
  CHECK(tied[1].id == "b-tie");
  CHECK(tied[1].version == 1);
  const auto three = index.search(same, 3, nullptr);
  REQUIRE(three.size() == 3);
  CHECK(three[2].id == "m-tie");
}

TEST_CASE("vector index: the scan ranks by the exact cosine where its 16-bit copies cannot tell versions apart") {
  // Every vector is the query plus a small perturbation of its own: their cosines with the query lie within 1e-4 of
  // each other, 1e-7 apart, far below what the 16-bit copies resolve (about 3.5e-4). The scan must still return the
  // exact top k, in the exact order, with or without a filter, at dimensions with and without a tail.
  for (const std::size_t dim : {std::size_t{1}, std::size_t{7}, std::size_t{64}, std::size_t{389}}) {
    std::mt19937 rng(static_cast<unsigned>(dim));
    std::uniform_real_distribution<double> spread(0.010, 0.014);
    const std::vector<float> query = random_unit(rng, dim);
    VectorIndex index(dim);
    std::vector<std::vector<float>> all;
    const std::size_t n = std::min<std::size_t>(1200, VectorIndex::exact_scan_below - 1);
    for (std::size_t i = 0; i < n; ++i) {
      const std::vector<float> w = random_unit(rng, dim);
      const double eps = dim == 1 ? 0 : spread(rng);  // one dimension: every vector ties with the query
      std::vector<float> v(dim);
      for (std::size_t d = 0; d < dim; ++d) v[d] = static_cast<float>(query[d] + eps * w[d]);
      all.push_back(v);
      index.add("a" + std::to_string(i), 1, v);
    }
    const auto exact_order = [&](const std::function<bool(std::size_t)>& pass) {
      std::vector<std::pair<double, std::string>> scored;
      for (std::size_t i = 0; i < all.size(); ++i) {
        if (!pass(i)) continue;
        scored.emplace_back(cairn::detail::cosine_of(query.data(), all[i].data(), dim), "a" + std::to_string(i));
      }
      std::sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) {
        return a.first != b.first ? a.first > b.first : a.second < b.second;
      });
      return scored;
    };
    for (const bool filtered : {false, true}) {
      const auto pass = [filtered](std::size_t i) { return !filtered || i % 3 == 0; };
      const auto truth = exact_order(pass);
      const auto hits =
          index.search(query, 10, [&](const std::string& id, std::uint64_t) { return pass(std::stoul(id.substr(1))); });
      REQUIRE(hits.size() == 10);
      for (std::size_t i = 0; i < hits.size(); ++i) {
        CHECK(hits[i].id == truth[i].second);
        REQUIRE(hits[i].exact.has_value());
        CHECK(*hits[i].exact == truth[i].first);
        CHECK(hits[i].similarity == truth[i].first);
      }
      // With `near`, every version within it of the 10th comes too, and nothing below it.
      const auto near = index.search(
          query, 10, [&](const std::string& id, std::uint64_t) { return pass(std::stoul(id.substr(1))); }, 3e-7);
      std::size_t within = 0;
      while (within < truth.size() && truth[within].first >= truth[9].first - 3e-7) ++within;
      REQUIRE(near.size() == within);
      for (std::size_t i = 0; i < near.size(); ++i) CHECK(near[i].id == truth[i].second);
    }
  }
}

TEST_CASE("vector index: dot_i16 is the exact integer dot product at every length") {
  std::mt19937 rng(9);
  std::uniform_int_distribution<int> value(-2000, 2000);
  for (std::size_t n = 0; n <= 70; ++n) {
    std::vector<std::int16_t> a(n), b(n);
    std::int64_t expected = 0;
    for (std::size_t i = 0; i < n; ++i) {
      a[i] = static_cast<std::int16_t>(value(rng));
      b[i] = static_cast<std::int16_t>(value(rng));
      expected += std::int64_t{a[i]} * b[i];
    }
    CHECK(cairn::detail::dot_i16(a.data(), b.data(), n) == expected);
  }
  // The largest a unit vector's copy holds, in the last place of a 16-wide step and in the tail.
  for (const std::size_t n : {std::size_t{16}, std::size_t{19}}) {
    std::vector<std::int16_t> a(n, 0), b(n, 0);
    a[n - 1] = 32767;
    b[n - 1] = -32767;
    CHECK(cairn::detail::dot_i16(a.data(), b.data(), n) == -std::int64_t{32767} * 32767);
  }
}

TEST_CASE("vector index: removed versions never come back, re-adding a key replaces its vector") {
  std::mt19937 rng(11);
  const std::size_t dim = 16;
  VectorIndex index(dim);
  std::vector<std::vector<float>> all;
  for (std::size_t i = 0; i < 500; ++i) {
    all.push_back(random_unit(rng, dim));
    index.add("a" + std::to_string(i), 1, all.back());
  }
  // The best match of each of these queries is removed: it must not be found again.
  std::set<std::size_t> removed;
  for (int round = 0; round < 20; ++round) {
    const auto query = random_unit(rng, dim);
    const auto best = index.search(query, 1, nullptr);
    REQUIRE(best.size() == 1);
    index.remove(best[0].id, best[0].version);
    removed.insert(std::stoul(best[0].id.substr(1)));
    for (const auto& h : index.search(query, 50, nullptr)) CHECK(removed.count(std::stoul(h.id.substr(1))) == 0);
  }
  CHECK(index.size() == 500 - removed.size());
  index.remove("a-none", 1);  // nothing there: nothing happens
  CHECK(index.size() == 500 - removed.size());

  // Replacing a key: the query equal to the new vector finds it first, with similarity 1.
  const auto fresh = random_unit(rng, dim);
  index.add("a1", 1, fresh);
  const auto hits = index.search(fresh, 1, nullptr);
  REQUIRE(hits.size() == 1);
  CHECK(hits[0].id == "a1");
  CHECK(hits[0].similarity == Approx(1.0).margin(1e-5));
  CHECK(index.size() == 500 - removed.size() + (removed.count(1) ? 1 : 0));

  // remove_all takes every version of an id.
  index.add("multi", 1, random_unit(rng, dim));
  index.add("multi", 2, random_unit(rng, dim));
  index.remove_all("multi");
  for (const auto& h : index.search(fresh, 600, nullptr)) CHECK(h.id != "multi");
}

TEST_CASE(
    "vector index: removed versions' copies are given back once they outnumber the live ones, and every "
    "search stays exact, with each version's tag") {
  std::mt19937 rng(23);
  const std::size_t dim = 8;
  VectorIndex index(dim);
  std::vector<std::vector<float>> all;
  std::vector<int> tags(3000);
  for (std::size_t i = 0; i < 3000; ++i) {
    all.push_back(random_unit(rng, dim));
    index.add("a" + std::to_string(i), 1, all.back(), &tags[i]);
  }
  std::vector<std::size_t> order(3000);
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  std::set<std::size_t> removed;
  std::size_t most_held = 0;
  for (std::size_t n = 0; n < 2900; ++n) {
    index.remove("a" + std::to_string(order[n]), 1);
    removed.insert(order[n]);
    CHECK(index.size() == 3000 - removed.size());
    CHECK(index.held() < index.size() + std::max(VectorIndex::compact_from, index.size()));
    most_held = std::max(most_held, index.held());
    if (n % 97 != 0) continue;
    const auto query = random_unit(rng, dim);
    const auto hits = index.search_tagged(query, 10, [&tags](const std::string& id, std::uint64_t, const void* tag) {
      return tag == &tags[std::stoul(id.substr(1))];  // the tag is still the version's own
    });
    std::vector<std::string> got;
    for (const auto& h : hits) got.push_back(h.id);
    CHECK(got == exact_top(all, query, 10, removed));
  }
  CHECK(index.held() < 3000);  // compacted at least once
  // Adding after a compaction goes on from the compacted labels; re-adding a removed key finds it.
  index.add("a" + std::to_string(order[0]), 1, all[order[0]], &tags[order[0]]);
  const auto back = index.search(all[order[0]], 1, nullptr);
  REQUIRE(back.size() == 1);
  CHECK(back[0].id == "a" + std::to_string(order[0]));
}

TEST_CASE(
    "filter bounds: every record a filter matches passes every bound it implies (numbers of every kind, "
    "strings, type, MIME type, creator, time)") {
  using cairn::detail::filter_bounds;
  using cairn::detail::filter_column;
  using nlohmann::json;
  std::mt19937 rng(41);
  const std::vector<json> values = {json(0),
                                    json(1),
                                    json(-1),
                                    json(2.5),
                                    json(-0.0),
                                    json(9007199254740993ull),
                                    json(9007199254740992ll),
                                    json(std::numeric_limits<std::int64_t>::min()),
                                    json(std::numeric_limits<std::uint64_t>::max()),
                                    json(1e300),
                                    json("a"),
                                    json("b"),
                                    json(""),
                                    json(true),
                                    json(nullptr),
                                    json::array({1, 2})};
  const std::vector<cairn::FieldOp> ops = {cairn::FieldOp::eq, cairn::FieldOp::ne,    cairn::FieldOp::lt,
                                           cairn::FieldOp::le, cairn::FieldOp::gt,    cairn::FieldOp::ge,
                                           cairn::FieldOp::in, cairn::FieldOp::exists};
  std::size_t matched = 0, bounded = 0;
  for (int round = 0; round < 20000; ++round) {
    const json& x = values[rng() % values.size()];
    auto builder = cairn::ArtifactRecord::builder().tenant_id("t").id("a").title("a").value(1);
    builder.type(rng() % 2 ? "note" : "plan");
    if (rng() % 2) builder.mime_type(rng() % 2 ? "text/plain" : "text/html");
    if (rng() % 2) builder.created_by(rng() % 2 ? "ann" : "bob");
    builder.metadata(rng() % 4 ? json{{"f", x}, {"g", {{"h", x}}}} : json::object());
    const auto r = builder.build();
    cairn::SearchFilter f;
    if (rng() % 3 == 0) f.type = cairn::ArtifactType(rng() % 2 ? "note" : "plan");
    if (rng() % 3 == 0) f.mime_type = rng() % 2 ? "text/plain" : "text/html";
    if (rng() % 3 == 0) f.created_by = rng() % 2 ? "ann" : "bob";
    if (rng() % 3 == 0) f.created_after = r->created_at() + static_cast<std::int64_t>(rng() % 3) - 1;
    if (rng() % 3 == 0) f.created_before = r->created_at() + static_cast<std::int64_t>(rng() % 3) - 1;
    cairn::FieldCondition c{rng() % 2 ? "/f" : "/g/h", ops[rng() % ops.size()], values[rng() % values.size()]};
    if (c.op == cairn::FieldOp::in) c.value = json::array({values[rng() % values.size()], values[rng() % 10]});
    if (c.op == cairn::FieldOp::in && c.value.is_array() && c.value[0].is_array()) continue;
    f.metadata.push_back(c);
    const auto bounds = filter_bounds(f);
    bounded += bounds.empty() ? 0 : 1;
    if (!cairn::detail::matches_filter(*r, f)) continue;
    ++matched;
    cairn::detail::FilterFields kept;  // what a SQL store keeps of the record: the same columns
    kept.type = r->type().str();
    kept.mime_type = r->mime_type();
    kept.created_by = r->created_by();
    kept.created_at = r->created_at();
    kept.metadata = std::make_shared<const json>(r->metadata());
    for (const auto& b : bounds) {
      const auto v = filter_column(b.column, *r);
      const auto k = filter_column(b.column, kept);
      CHECK(k.kind == v.kind);
      CHECK(k.value == v.value);
      INFO("column " << b.column << " [" << b.low << ", " << b.high << "], value " << x.dump() << ", condition "
                     << c.value.dump());
      CHECK(v.kind != cairn::detail::VectorIndex::ColumnValue::none);
      if (v.kind == cairn::detail::VectorIndex::ColumnValue::number) CHECK((v.value >= b.low && v.value <= b.high));
    }
  }
  CHECK(matched > 1000);
  CHECK(bounded > 10000);
}

TEST_CASE("mapped array: grows past the mapped size keeping its values, new elements are zero, shrinking forgets") {
  using cairn::detail::MappedArray;
  MappedArray<std::int16_t> a;
  CHECK(a.empty());
  const std::size_t big = 3 * MappedArray<std::int16_t>::map_from / sizeof(std::int16_t) + 17;  // mapped, 3 steps
  for (std::size_t n : {std::size_t{5}, std::size_t{1000}, big / 2, big}) {
    const std::size_t before = a.size();
    a.resize(n);
    REQUIRE(a.size() == n);
    for (std::size_t i = before; i < n; ++i) REQUIRE(a[i] == 0);
    for (std::size_t i = 0; i < before; ++i) REQUIRE(a[i] == static_cast<std::int16_t>(i * 7));
    for (std::size_t i = before; i < n; ++i) a[i] = static_cast<std::int16_t>(i * 7);
  }
  a.resize(10);
  a.resize(20);
  for (std::size_t i = 10; i < 20; ++i) CHECK(a[i] == 0);  // what was there before is not seen again
  MappedArray<std::int16_t> b(std::move(a));
  CHECK(b.size() == 20);
  CHECK(b[9] == 63);
  CHECK(a.empty());
  b.reserve(big);
  const std::int16_t* at = b.data();
  b.resize(big);
  CHECK(b.data() == at);  // reserve made the room: nothing moved
  b.clear();
  CHECK(b.size() == 0);
  CHECK(b.capacity() == 0);
}

TEST_CASE("vector index: a filter that passes few versions still gets k of them (the search widens)") {
  std::mt19937 rng(3);
  const std::size_t dim = 16;
  VectorIndex index(dim);
  std::vector<std::vector<float>> all;
  for (std::size_t i = 0; i < 2000; ++i) {
    all.push_back(random_unit(rng, dim));
    index.add("a" + std::to_string(i), 1, all.back());
  }
  // Only every 100th version passes: 20 of 2000.
  auto accept = [](const std::string& id, std::uint64_t) { return std::stoul(id.substr(1)) % 100 == 0; };
  const auto query = random_unit(rng, dim);
  const auto hits = index.search(query, 10, accept);
  REQUIRE(hits.size() == 10);
  for (const auto& h : hits) CHECK(std::stoul(h.id.substr(1)) % 100 == 0);
  std::set<std::size_t> others;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (i % 100 != 0) others.insert(i);
  }
  CHECK(recall(hits, exact_top(all, query, 10, others)) >= 0.9);
  // A filter nothing passes: empty, no hang.
  CHECK(index.search(query, 10, [](const std::string&, std::uint64_t) { return false; }).empty());
}

TEST_CASE("vector index: search_tagged hands each version's tag to accept, and a hit says which accept it was") {
  std::mt19937 rng(5);
  const std::size_t dim = 16;
  for (const std::size_t n : {std::size_t{300}, std::size_t{3000}}) {  // the scan and the graph
    VectorIndex index(dim);
    std::vector<int> tags(n);
    for (std::size_t i = 0; i < n; ++i) index.add("a" + std::to_string(i), 1, random_unit(rng, dim), &tags[i]);
    index.build_graph();
    CHECK(index.searches_graph() == (n == 3000 && VectorIndex::approximate()));
    int replaced = 0;
    index.add("a0", 1, random_unit(rng, dim), &replaced);     // re-adding a key replaces its tag too
    std::vector<std::pair<std::string, const void*>> passed;  // what accept let through, in order
    const auto accept = [&](const std::string& id, std::uint64_t, const void* tag) {
      const std::size_t i = std::stoul(id.substr(1));
      CHECK(tag == (i == 0 ? static_cast<const void*>(&replaced) : static_cast<const void*>(&tags[i])));
      if (i % 2 != 0) return false;
      passed.emplace_back(id, tag);
      return true;
    };
    const auto hits = index.search_tagged(random_unit(rng, dim), 10, accept, 0, 64);
    REQUIRE(hits.size() == 10);
    for (const auto& h : hits) {
      REQUIRE(h.accepted < passed.size());
      CHECK(passed[h.accepted].first == h.id);
    }
  }
}

TEST_CASE(
    "vector index: bounds on columns are checked before accept, which sees only the versions that pass them, "
    "and the page is the exact filtered one, through adds, removals and compaction") {
  std::mt19937 rng(31);
  const std::size_t dim = 16;
  for (const std::size_t ef : {std::size_t{0}, std::size_t{64}}) {  // the scan, and the graph where it answers
    VectorIndex index(dim);
    std::vector<int> bucket(6000);  // the tags: a version's bucket, 0-99; -1: not known to the reader
    for (std::size_t i = 0; i < bucket.size(); ++i) bucket[i] = i % 37 == 0 ? -1 : static_cast<int>(i % 100);
    std::size_t reads = 0;
    index.set_column_reader([&reads](const std::string& column, const std::string&, std::uint64_t, const void* tag) {
      ++reads;
      const int b = *static_cast<const int*>(tag);
      using Value = VectorIndex::ColumnValue;
      if (column != "bucket") return Value{Value::none, 0};  // a column nobody has: no version passes
      return b < 0 ? Value{} : Value{Value::number, static_cast<double>(b)};
    });
    std::vector<std::vector<float>> all;
    for (std::size_t i = 0; i < 3000; ++i) {
      all.push_back(random_unit(rng, dim));
      index.add("a" + std::to_string(i), 1, all.back(), &bucket[i]);
    }
    if (ef > 0) index.build_graph();
    std::set<std::size_t> removed;
    // The filter lo <= bucket <= hi, and its bound on the column.
    const auto check_page = [&](int lo, int hi) {
      std::size_t asked = 0;
      const auto accept = [&](const std::string&, std::uint64_t, const void* tag) {
        ++asked;
        const int b = *static_cast<const int*>(tag);
        CHECK((b < 0 || (b >= lo && b <= hi)));  // the bounds let nothing else through
        return b >= lo && b <= hi;
      };
      const auto query = random_unit(rng, dim);
      const std::vector<VectorIndex::Bound> bounds = {{"bucket", static_cast<double>(lo), static_cast<double>(hi)}};
      const auto hits = index.search_tagged(query, 10, accept, 0, ef, false, bounds);
      std::set<std::size_t> fail = removed;  // the exact filtered page
      for (std::size_t i = 0; i < all.size(); ++i) {
        if (bucket[i] < lo || bucket[i] > hi) fail.insert(i);
      }
      std::vector<std::string> got;
      for (const auto& h : hits) got.push_back(h.id);
      if (ef == 0) CHECK(got == exact_top(all, query, 10, fail));
      CHECK(got.size() == 10);
      return asked;
    };
    // 2 % pass the bound, and 1 in 37 is unknown to the reader: accept sees about 4.7 % of the versions at most.
    const std::size_t asked = check_page(0, 1);
    if (ef == 0) CHECK(asked <= 3000 * 5 / 100);
    CHECK(reads == 3000);  // the column was made once, by the first search that named it
    check_page(0, 1);
    CHECK(reads == 3000);
    // A column nobody has passes nothing.
    CHECK(index.search_tagged(random_unit(rng, dim), 10, nullptr, 0, 0, false, {{"nobody", 0, 1}}).empty());
    CHECK(reads == 6000);
    // Adds read the columns made so far; removals and compaction keep every version's number with it.
    for (std::size_t i = 3000; i < 6000; ++i) {
      all.push_back(random_unit(rng, dim));
      index.add("a" + std::to_string(i), 1, all.back(), &bucket[i]);
    }
    CHECK(reads == 6000 + 2 * 3000);  // "bucket" and "nobody", for each new version
    for (std::size_t i = 0; i < 6000; i += 2) {
      index.remove("a" + std::to_string(i), 1);
      removed.insert(i);
    }
    check_page(50, 53);  // the even versions are gone: 51 and 53 are left
    check_page(11, 11);
  }
}

TEST_CASE(
    "vector index: once asked for, the graph is made at exact_scan_below versions and filled a few versions "
    "an add, and every search on the way is exact") {
  std::mt19937 rng(21);
  const std::size_t dim = 12;
  VectorIndex index(dim);
  index.want_graph();
  std::vector<std::vector<float>> all;
  std::set<std::size_t> removed;
  const auto check_exact = [&](int queries) {
    for (int q = 0; q < queries; ++q) {
      const auto query = random_unit(rng, dim);
      const auto hits = index.search(query, 10, nullptr);
      const auto truth = exact_top(all, query, 10, removed);
      REQUIRE(hits.size() == truth.size());
      for (std::size_t i = 0; i < hits.size(); ++i) CHECK(hits[i].id == truth[i]);
    }
  };
  const auto add = [&] {
    all.push_back(random_unit(rng, dim));
    index.add("a" + std::to_string(all.size() - 1), 1, all.back());
  };
  while (all.size() < VectorIndex::exact_scan_below - 1) add();
  CHECK_FALSE(index.searches_graph());
  // Versions removed before the graph is made are never moved into it, nor found.
  for (std::size_t i = 0; i < 300; i += 3) {
    index.remove("a" + std::to_string(i), 1);
    removed.insert(i);
  }
  while (index.size() < VectorIndex::exact_scan_below) add();
  // The graph is being filled: the scan still answers, exactly, and removals on the way (some moved into the graph
  // already, some not) never come back.
  std::size_t adds = 0;
  while (!index.searches_graph() && VectorIndex::approximate()) {
    add();
    ++adds;
    if (adds % 50 == 0) {
      const std::size_t victim = adds * 3;  // one the graph has (moved earlier) or is yet to move
      if (!removed.count(victim)) {
        index.remove("a" + std::to_string(victim), 1);
        removed.insert(victim);
      }
      check_exact(2);
    }
    REQUIRE(adds <= VectorIndex::exact_scan_below);  // it ends
  }
  // The queue (at most exact_scan_below versions) shrinks by graph_steps_per_add - 1 an add.
  CHECK(adds <= VectorIndex::exact_scan_below / (VectorIndex::graph_steps_per_add - 1) + 1);
  // Filled: the graph answers (ef), and what was removed is not in it.
  for (int q = 0; q < 20; ++q) {
    for (const auto& h : index.search(random_unit(rng, dim), 50, nullptr, 0, 64)) {
      CHECK(removed.count(std::stoul(h.id.substr(1))) == 0);
    }
  }
  CHECK(index.size() == all.size() - removed.size());
}

TEST_CASE("vector index: wrong dimensions are never indexed or searched, an empty index finds nothing") {
  VectorIndex index(4);
  CHECK(index.search({1, 0, 0, 0}, 5, nullptr).empty());
  index.add("x", 1, {1, 0, 0});  // 3 of 4
  CHECK(index.size() == 0);
  index.add("y", 1, {1, 0, 0, 0});
  CHECK(index.search({1, 0, 0}, 5, nullptr).empty());
  CHECK(index.search({1, 0, 0, 0}, 0, nullptr).empty());
  CHECK(index.search({1, 0, 0, 0}, 5, nullptr).size() == 1);
}

TEST_CASE(
    "vector index: vectors of any length rank by cosine, and each hit's exact cosine is detail::cosine's to "
    "the last bit") {
  const std::size_t dim = 24;
  const std::vector<float> scales = {1e-30f, 3e-5f, 0.7f, 1.0f, 13.3f, 4.2e6f, 1e30f};
  // Below exact_scan_below the index scans; once the graph holds every version, the graph answers (with hnswlib).
  const std::size_t graphed =
      VectorIndex::exact_scan_below + VectorIndex::exact_scan_below / (VectorIndex::graph_steps_per_add - 1) + 1;
  for (const std::size_t n : {std::size_t{300}, graphed + 100}) {
    std::mt19937 rng(static_cast<unsigned>(n));
    VectorIndex index(dim);
    index.want_graph();
    std::vector<std::vector<float>> stored, units;
    for (std::size_t i = 0; i < n; ++i) {
      units.push_back(random_unit(rng, dim));
      std::vector<float> v = units.back();
      for (auto& x : v) x *= scales[i % scales.size()];
      stored.push_back(v);
      index.add("a" + std::to_string(i), 1, v);
    }
    REQUIRE(index.size() == n);
    CHECK(index.searches_graph() == (n > graphed && VectorIndex::approximate()));
    double found = 0;
    for (int round = 0; round < 20; ++round) {
      std::vector<float> query = random_unit(rng, dim);
      for (auto& x : query) x *= scales[static_cast<std::size_t>(round) % scales.size()];
      const auto hits = index.search(query, 10, nullptr, 0, 64);
      REQUIRE(hits.size() == 10);
      for (const auto& h : hits) {
        const std::vector<float>& v = stored.at(std::stoul(h.id.substr(1)));
        REQUIRE(h.exact.has_value());
        CHECK(*h.exact == cairn::detail::cosine_of(query.data(), v.data(), dim));  // bit for bit
        CHECK(std::abs(h.similarity - *h.exact) < 1e-5);
      }
      found += recall(hits, exact_top(units, query, 10)) / 20;  // lengths do not matter to cosine
    }
    CHECK(found >= 0.95);
  }
}

TEST_CASE(
    "vector index: a vector whose copy cannot be exact is still found, without an exact cosine, and one of no "
    "length has similarity 0") {
  VectorIndex index(4);
  // Scaled down to a length in [1, 2), the small component falls below the floats: the copy is not exact.
  index.add("tiny-part", 1, {1e30f, 1e-30f, 0, 0});
  index.add("none", 1, {0, 0, 0, 0});
  index.add("plain", 1, {0, 0, 2, 0});
  const auto hits = index.search({1, 0, 0, 0}, 3, nullptr);
  REQUIRE(hits.size() == 3);
  CHECK(hits[0].id == "tiny-part");
  CHECK_FALSE(hits[0].exact.has_value());
  CHECK(std::abs(hits[0].similarity - 1) < 1e-6);
  for (const auto& h : {hits[1], hits[2]}) {
    REQUIRE(h.exact.has_value());
    CHECK(*h.exact == 0);
  }
  CHECK(index.search({0, 0, 0, 0}, 3, nullptr).empty());  // a query of no length ranks nothing
}

TEST_CASE(
    "vector index: searches run while other threads add and remove, naming columns made, kept and evicted "
    "meanwhile, through compaction (ThreadSanitizer checks this)") {
  const std::size_t dim = 8;
  VectorIndex index(dim);
  index.set_column_reader([](const std::string& column, const std::string& id, std::uint64_t, const void*) {
    return VectorIndex::ColumnValue{VectorIndex::ColumnValue::number,
                                    static_cast<double>((std::hash<std::string>()(id) + column.size()) % 10)};
  });
  std::mt19937 seed_rng(5);
  for (std::size_t i = 0; i < 200; ++i) index.add("base" + std::to_string(i), 1, random_unit(seed_rng, dim));
  std::vector<std::thread> threads;
  std::atomic<int> short_pages{0};  // Catch's CHECK is not thread-safe: the threads count, the test checks
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&index, t] {
      std::mt19937 rng(static_cast<unsigned>(100 + t));
      for (int i = 0; i < 1500; ++i) {
        const std::string id = "t" + std::to_string(t) + "-" + std::to_string(i);
        index.add(id, 1, random_unit(rng, dim));
        if (i % 3 != 2) index.remove(id, 1);  // removed ones outnumber the live: compacted on the way
      }
    });
    threads.emplace_back([&index, &short_pages, t] {
      std::mt19937 rng(static_cast<unsigned>(200 + t));
      for (int i = 0; i < 600; ++i) {
        // Every version passes these bounds; 20 names cycle through 16 places, so columns are evicted too.
        const std::vector<VectorIndex::Bound> bounds = {{"c" + std::to_string(i % 20), 0, 9}, {"k", -1, 10}};
        const auto hits = i % 2 ? index.search(random_unit(rng, dim), 5, nullptr)
                                : index.search_tagged(random_unit(rng, dim), 5, nullptr, 0, 0, false, bounds);
        if (hits.size() != 5) ++short_pages;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(short_pages == 0);
  CHECK(index.size() == 200 + 2 * 500);
  CHECK(index.held() < 3200);
}

TEST_CASE(
    "vector cache: an index catches up with a change sequence, per (tenant, model), and a failed read keeps "
    "what was applied") {
  using cairn::detail::VectorCache;
  using cairn::detail::VectorChange;
  std::vector<VectorChange> log;  // the "database": the change sequence of tenant t, model m
  auto add = [&log](const std::string& id, std::uint64_t v, std::vector<float> vec) {
    log.push_back(VectorChange{log.size() + 1, id, v, false, std::move(vec)});
  };
  auto remove_id = [&log](const std::string& id) { log.push_back(VectorChange{log.size() + 1, id, 0, true, {}}); };
  int reads = 0;
  bool fail = false;
  auto read = [&](const std::string& tenant, const std::string& model, std::uint64_t after,
                  const cairn::detail::VectorChangeSink& sink) {
    ++reads;
    if (fail) throw std::runtime_error("database gone");
    bool any = false;
    if (tenant != "t" || model != "m") return any;
    for (VectorChange c : log) {
      if (c.seq > after) {
        sink(c);
        any = true;
      }
    }
    return any;
  };
  VectorCache cache;
  add("a", 1, {1, 0});
  add("b", 1, {0, 1});
  auto index = cache.current("t", "m", 2, read);
  CHECK(index->size() == 2);
  CHECK(index->search({1, 0}, 1, nullptr).at(0).id == "a");

  add("a", 2, {0.6f, 0.8f});
  remove_id("b");
  fail = true;
  CHECK_THROWS_WITH(cache.current("t", "m", 2, read), "database gone");
  fail = false;
  index = cache.current("t", "m", 2, read);
  CHECK(index->size() == 2);  // a@1, a@2; b gone
  for (const auto& h : index->search({0, 1}, 10, nullptr)) CHECK(h.id == "a");

  // Nothing new: one read, nothing applied twice.
  reads = 0;
  index = cache.current("t", "m", 2, read);
  CHECK(reads == 1);
  CHECK(index->size() == 2);
  // Another tenant or model is another index.
  CHECK(cache.current("u", "m", 2, read)->size() == 0);
  CHECK(cache.current("t", "other", 2, read)->size() == 0);
  cache.clear();
  CHECK(cache.current("t", "m", 2, read)->size() == 2);  // rebuilt from the whole sequence
}

TEST_CASE(
    "vector cache: a reset starts a new index (a search holding the old one keeps it whole), then the changes "
    "after it apply") {
  using cairn::detail::VectorCache;
  using cairn::detail::VectorChange;
  std::vector<VectorChange> answer;
  std::vector<std::uint64_t> asked;
  auto read = [&](const std::string&, const std::string&, std::uint64_t after,
                  const cairn::detail::VectorChangeSink& sink) {
    asked.push_back(after);
    std::vector<VectorChange> out = std::exchange(answer, {});
    for (auto& c : out) sink(c);
    return !out.empty();
  };
  VectorCache cache;
  answer = {VectorChange{1, "a", 1, false, {1, 0}}, VectorChange{2, "b", 1, false, {0, 1}}};
  const auto old = cache.current("t", "m", 2, read);
  REQUIRE(old->size() == 2);
  // What a store whose changes up to 7 were pruned answers a reader at 2: a reset, then every current vector.
  VectorChange reset;
  reset.reset = true;
  answer = {reset, VectorChange{9, "c", 1, false, {0.6f, 0.8f}}, VectorChange{9, "b", 1, false, {0, 1}}};
  std::uint64_t seen = 0;
  const auto now = cache.current("t", "m", 2, read, &seen);
  CHECK(seen == 9);
  CHECK(now != old);
  CHECK(now->size() == 2);  // b and c; a is gone with the old index
  for (const auto& h : now->search({1, 0}, 10, nullptr)) CHECK(h.id != "a");
  CHECK(old->size() == 2);                                 // unchanged for whoever still searches it
  CHECK(asked == std::vector<std::uint64_t>{0, 2, 2, 9});  // each catch-up reads until nothing new
}

namespace {

// A change sequence for the cache tests: per tenant, vectors of model "m" (of any dimension), each read counted.
struct CacheLog {
  std::map<std::string, std::vector<cairn::detail::VectorChange>> log;
  std::vector<std::pair<std::string, std::uint64_t>> asked;  // (tenant/model/dimension asked, after)
  void add(const std::string& tenant, const std::string& id, std::vector<float> v) {
    auto& l = log[tenant];
    l.push_back(cairn::detail::VectorChange{l.size() + 1, id, 1, false, std::move(v)});
  }
  cairn::detail::ReadVectorChanges reader() {
    return [this](const std::string& tenant, const std::string& model, std::uint64_t after,
                  const cairn::detail::VectorChangeSink& sink) {
      asked.emplace_back(tenant + "/" + model, after);
      bool any = false;
      if (model != "m") return any;
      for (cairn::detail::VectorChange c : log[tenant]) {
        if (c.seq > after) {
          sink(c);
          any = true;
        }
      }
      return any;
    };
  }
};

}  // namespace

TEST_CASE("vector cache: a query of another dimension or model does not evict the tenant's index") {
  using cairn::detail::VectorCache;
  CacheLog db;
  db.add("t", "a", {1, 0});
  db.add("t", "b", {0, 1});
  VectorCache cache;
  const auto read = db.reader();
  const auto built = cache.current("t", "m", 2, read);
  CHECK(built->size() == 2);
  CHECK(cache.builds() == 1);
  // A stray query vector of 3 dimensions (nothing stored has 3): an empty index, kept nowhere.
  CHECK(cache.current("t", "m", 3, read)->size() == 0);
  CHECK(cache.current("t", "other-model", 2, read)->size() == 0);
  CHECK(cache.entries() == 1);
  // The next normal query finds its index as it was: one read after what it had seen, no build from nothing.
  const std::uint64_t builds = cache.builds();
  db.asked.clear();
  const auto again = cache.current("t", "m", 2, read);
  CHECK(again == built);
  CHECK(cache.builds() == builds);
  CHECK(db.asked == std::vector<std::pair<std::string, std::uint64_t>>{{"t/m", 2}});
}

TEST_CASE("vector cache: a (tenant, model, dimension) with nothing stored keeps no entry, however many are asked") {
  using cairn::detail::VectorCache;
  CacheLog db;
  db.add("t", "a", {1, 0});
  VectorCache cache;
  const auto read = db.reader();
  for (int i = 0; i < 2000; ++i) {
    CHECK(cache.current("t", "model-" + std::to_string(i) + std::string(1000, 'x'), 2, read)->size() == 0);
    CHECK(cache.current("t", "m", 3 + static_cast<std::size_t>(i), read)->size() == 0);
    CHECK(cache.current("tenant-" + std::to_string(i), "m", 2, read)->size() == 0);
  }
  CHECK(cache.entries() == 0);
  CHECK(cache.bytes() == 0);
  CHECK(cache.current("t", "m", 2, read)->size() == 1);
  CHECK(cache.entries() == 1);
  CHECK(cache.bytes() == VectorCache::index_bytes(1, 2));
  // An index whose last vector was removed goes too (the next query finds nothing to build, cheaply).
  db.log["t"].push_back(cairn::detail::VectorChange{2, "a", 0, true, {}});
  CHECK(cache.current("t", "m", 2, read)->size() == 0);
  CHECK(cache.entries() == 0);
}

TEST_CASE(
    "vector cache: past max_entries or max_bytes the least recently used index goes, and is built again when "
    "asked for") {
  using cairn::detail::VectorCache;
  CacheLog db;
  for (const char* t : {"t1", "t2", "t3", "t4"}) {
    db.add(t, "a", {1, 0});
    db.add(t, "b", {0, 1});
  }
  const auto read = db.reader();
  {
    VectorCache cache(2);
    (void)cache.current("t1", "m", 2, read);
    (void)cache.current("t2", "m", 2, read);
    (void)cache.current("t1", "m", 2, read);  // t1 is now the most recent: t2 goes next
    (void)cache.current("t3", "m", 2, read);
    CHECK(cache.entries() == 2);
    CHECK(cache.builds() == 3);
    (void)cache.current("t1", "m", 2, read);  // kept
    CHECK(cache.builds() == 3);
    db.asked.clear();
    CHECK(cache.current("t2", "m", 2, read)->size() == 2);  // evicted: built again from the rows
    CHECK(cache.builds() == 4);
    CHECK(db.asked.front() == std::make_pair(std::string("t2/m"), std::uint64_t{0}));
    CHECK(cache.entries() == 2);
  }
  {
    // Room for 3 versions of 2 dimensions: one index of 2 at a time.
    const std::size_t bound = VectorCache::index_bytes(3, 2);
    VectorCache cache(100, bound);
    (void)cache.current("t1", "m", 2, read);
    (void)cache.current("t2", "m", 2, read);
    CHECK(cache.entries() == 1);
    CHECK(cache.bytes() == VectorCache::index_bytes(2, 2));
    CHECK(cache.bytes() <= bound);
    // One index larger than the bound alone stays (the most recently used is never evicted).
    VectorCache tiny(100, 10);
    CHECK(tiny.current("t3", "m", 2, read)->size() == 2);
    CHECK(tiny.entries() == 1);
    CHECK(tiny.current("t3", "m", 2, read)->size() == 2);
    CHECK(tiny.builds() == 1);
  }
}

TEST_CASE("vector index: what add() is given to own is the version's tag until the version goes, then released") {
  std::mt19937 rng(11);
  const std::size_t dim = 8;
  VectorIndex index(dim);
  auto first = std::make_shared<const int>(1), second = std::make_shared<const int>(2);
  auto other = std::make_shared<const int>(3);
  index.add("a", 1, random_unit(rng, dim), nullptr, first);
  index.add("b", 1, random_unit(rng, dim), nullptr, other);
  CHECK(first.use_count() == 2);
  std::map<std::string, int> seen;
  const auto accept = [&](const std::string& id, std::uint64_t, const void* tag) {
    seen[id] = *static_cast<const int*>(tag);
    return true;
  };
  CHECK(index.search_tagged(random_unit(rng, dim), 5, accept).size() == 2);
  CHECK(seen == std::map<std::string, int>{{"a", 1}, {"b", 3}});
  index.add("a", 1, random_unit(rng, dim), nullptr, second);  // replacing the key releases what it owned
  CHECK(first.use_count() == 1);
  seen.clear();
  index.search_tagged(random_unit(rng, dim), 5, accept);
  CHECK(seen.at("a") == 2);
  index.remove("a", 1);
  CHECK(second.use_count() == 1);
  index.remove_all("b");
  CHECK(other.use_count() == 1);
  CHECK(index.size() == 0);
}

TEST_CASE("vector index: newest_only finds each id's newest version in the index only, scan and graph alike") {
  std::mt19937 rng(12);
  const std::size_t dim = 16;
  for (const std::size_t n : {std::size_t{300}, std::size_t{2500}}) {
    VectorIndex index(dim);
    for (std::size_t i = 0; i < n; ++i) {
      const std::string id = "a" + std::to_string(i);
      index.add(id, 1, random_unit(rng, dim));
      if (i % 3 == 0) index.add(id, 2, random_unit(rng, dim));  // a newer version: version 1 is no longer a hit
    }
    index.build_graph();
    const std::vector<float> q = random_unit(rng, dim);
    for (const std::size_t ef : {std::size_t{0}, std::size_t{400}}) {
      const auto hits = index.search(q, 50, nullptr, 0, ef, true);
      REQUIRE(hits.size() == 50);
      for (const auto& h : hits) {
        const std::size_t i = std::stoul(h.id.substr(1));
        CHECK(h.version == (i % 3 == 0 ? 2u : 1u));
      }
      bool older = false;  // without it, an older version is a candidate too
      for (const auto& h : index.search(q, n, nullptr, 0, ef)) {
        older = older || (h.version == 1 && std::stoul(h.id.substr(1)) % 3 == 0);
      }
      CHECK(older);
    }
    // Removing the newest makes the one before it the newest again.
    index.remove("a0", 2);
    bool found_a0 = false;
    for (const auto& h : index.search(q, n, nullptr, 0, 0, true)) {
      if (h.id == "a0") {
        found_a0 = true;
        CHECK(h.version == 1u);
      }
    }
    CHECK(found_a0);
  }
}

TEST_CASE("vector index: an id's versions stay right through adds, re-adds, removals and compactions in any order") {
  // A model of what the index holds (id -> version -> vector), and random writes to both: ids with one version and
  // with several, versions added out of order, re-added, removed one by one or all at once, past compactions.
  std::mt19937 rng(31);
  const std::size_t dim = 4;
  VectorIndex index(dim);
  std::map<std::string, std::map<std::uint64_t, std::vector<float>>> model;
  std::size_t compacted = 0, previous_held = 0;
  for (int op = 0; op < 12000; ++op) {
    const std::string id = "a" + std::to_string(rng() % 40);
    const std::uint64_t version = 1 + rng() % 5;
    const unsigned what = rng() % 10;
    if (what < 6) {
      auto v = random_unit(rng, dim);
      index.add(id, version, v);
      model[id][version] = std::move(v);
    } else if (what < 9) {
      index.remove(id, version);
      if (const auto it = model.find(id); it != model.end()) {
        it->second.erase(version);
        if (it->second.empty()) model.erase(it);
      }
    } else {
      index.remove_all(id);
      model.erase(id);
    }
    if (index.held() < previous_held) ++compacted;
    previous_held = index.held();
    if (op % 500 != 0) continue;
    std::size_t versions = 0;
    for (const auto& [i, vs] : model) versions += vs.size();
    REQUIRE(index.size() == versions);
    const auto q = random_unit(rng, dim);
    // Every version, each once, and each id's newest alone with newest_only.
    std::set<std::pair<std::string, std::uint64_t>> all, newest;
    for (const auto& h : index.search(q, versions + 1, nullptr)) all.emplace(h.id, h.version);
    for (const auto& h : index.search(q, versions + 1, nullptr, 0, 0, true)) newest.emplace(h.id, h.version);
    std::set<std::pair<std::string, std::uint64_t>> want_all, want_newest;
    for (const auto& [i, vs] : model) {
      for (const auto& [v, vec] : vs) want_all.emplace(i, v);
      want_newest.emplace(i, vs.rbegin()->first);
    }
    CHECK(all == want_all);
    CHECK(newest == want_newest);
    // A version's own vector finds it first (similarity 1).
    if (!model.empty()) {
      const auto& picked = *std::next(model.begin(), static_cast<std::ptrdiff_t>(rng() % model.size()));
      const std::string i = picked.first;
      const std::uint64_t v = picked.second.rbegin()->first;
      const std::vector<float>& vec = picked.second.rbegin()->second;
      const auto hits =
          index.search(vec, 1, [&](const std::string& hid, std::uint64_t hv) { return hid == i && hv == v; });
      REQUIRE(hits.size() == 1);
      CHECK(hits[0].similarity == Approx(1.0).margin(1e-6));
    }
  }
  CHECK(compacted > 0);  // the writes went past at least one compaction
}
