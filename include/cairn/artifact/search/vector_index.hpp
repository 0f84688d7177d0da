// cairn::detail — the vector index of search, shared by every store (docs/search.md), keyed by (artifact id,
// version), comparing by cosine similarity. It keeps each vector as given, scaled by a power of two, with its inverse
// length beside it, so a hit's exact cosine (the one the stores rank by) comes from the index's own copy, with no
// second read of the vector. A search is exact by default, at every size and with any filter: a scan of a 16-bit
// copy of each vector whose error is bounded, reading the full copy only of the versions that bound cannot rule out.
// A search that asks for it (`ef`, docs/search.md) goes through an hnswlib HNSW graph (libhnswlib-dev) instead,
// approximate: made only once some search asked, filled a few versions an add, and left for the scan whenever the
// graph's candidates hold fewer than k that pass the filter. Built with CAIRN_WITH_HNSWLIB; without it every search
// scans (approximate() says which), so a store's code is the same in both builds.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cairn/artifact/search/cosine.hpp"
#include "cairn/artifact/search/dot_i16.hpp"
#include "cairn/artifact/search/hnsw.hpp"
#include "cairn/detail/mapped_array.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace detail {

/// One candidate an index returned: a version of an artifact and its cosine similarity to the query.
struct VectorHit {
  std::string id;
  std::uint64_t version = 0;
  /// What the index ranked the candidate by: from a scan (a small index, or no hnswlib), the exact cosine (equal to
  /// `exact` where that is there); from the graph, its float arithmetic.
  double similarity = 0;
  /// How many versions `accept` had let through before this one in the search that returned it: a caller that keeps
  /// what it looked up in `accept` (in the order it said yes) finds it here again without a second lookup.
  std::size_t accepted = 0;
  /// detail::cosine of the query and the vector as they were given, to the last bit, from the index's own copy.
  /// Absent in the one case where that copy is not exact: a vector longer than 2 with a component so much smaller
  /// than its length that scaling it down made it subnormal (below 2^-126 after the scaling); read the stored vector.
  std::optional<double> exact;
  std::size_t label = 0;  ///< the index's own number of the version
};

/// An index of one (tenant, model): vectors of one dimension. Thread-safe: searches run together, a change waits
/// for them (one std::shared_mutex).
class VectorIndex {
 public:
  static constexpr std::size_t graph_degree = 16;  ///< hnswlib's M
  static constexpr std::size_t ef_construction = 200;
  /// The most candidates an approximate search may ask the graph for (SearchQuery::max_ef).
  static constexpr std::size_t max_ef = 10000;
  /// An index with fewer live versions than this is always searched by the scan, even when a search asks for the
  /// graph (`ef`): the scan is exact and faster than the graph at that size (docs/search.md).
  static constexpr std::size_t exact_scan_below = 2048;
  /// How many versions the graph has room for when it is made; it doubles when full.
  static constexpr std::size_t initial_capacity = 4096;
  /// The graph is made when a search has asked for it (`ef`, or want_graph()) and the index holds exact_scan_below
  /// live versions (an hnswlib 0.6.2 graph reserves 2.6 MB whatever its size); then each add moves this many
  /// versions into it, oldest first (its own joins the queue), so that no add pays for building it whole: the queue
  /// shrinks by 3 an add (build_graph() fills it at once). Searches with `ef` go through the graph once it holds
  /// every version (searches_graph()); until then they scan.
  static constexpr std::size_t graph_steps_per_add = 4;
  /// The most columns (Bound) an index keeps: 9 bytes a version each; past it the least recently named goes.
  static constexpr std::size_t max_columns = 16;
  /// Removed versions keep their copies until they are this many and as many as the live ones; then the index is
  /// compacted (without a graph), so that what it holds stays within twice what its live versions need.
  static constexpr std::size_t compact_from = 1024;
  /// What a unit vector's components are multiplied by in its 16-bit copy (then rounded).
  static constexpr double coarse_scale = 32767;
  /// What a search's `near` is for a caller that ranks by the exact cosine (VectorHit::exact): the index's float
  /// similarities differ from those by far less than this, so versions this close to the last one taken may rank
  /// either side of it there.
  static constexpr double near_tie = 1e-4;

  /// A search's filter: (id, version, the tag add() was given) -> whether the version may be a hit.
  using Accept = std::function<bool(const std::string&, std::uint64_t, const void*)>;

  /// What a column (below) holds for a version: a number, none (the version passes no bound on the column), or
  /// not known here (it passes every bound; `accept` decides).
  struct ColumnValue {
    enum Kind : std::uint8_t { number, none, unknown };
    Kind kind = unknown;
    double value = 0;
  };
  /// Reads a column's value of a version from what the store handed add() (its tag) and its key. Set once, by the
  /// store that owns the index (set_column_reader), and called under the index's locks: it must not call back.
  using ColumnReader = std::function<ColumnValue(const std::string& column, const std::string& id,
                                                 std::uint64_t version, const void* tag)>;
  /// A necessary condition of a search's filter, on a column: the version's number lies in [low, high]. A search
  /// given bounds checks them over every live version first, from numbers the index keeps in one array per column
  /// (made by the first search that names the column, kept current by add()), and only what passes them is scanned
  /// and put to `accept`: a filter that passes 1 % of the versions costs 1 % of a scan, not a walk past the 99 %
  /// (docs/search.md, "Filters"). Bounds may pass more than the filter (accept decides), never less.
  struct Bound {
    std::string column;
    double low = -std::numeric_limits<double>::infinity();
    double high = std::numeric_limits<double>::infinity();
  };

  explicit VectorIndex(std::size_t dimension) : dimension_(dimension) {}
  VectorIndex(const VectorIndex&) = delete;
  VectorIndex& operator=(const VectorIndex&) = delete;

  /// True when built with hnswlib (a search with `ef` may go through the graph); false when every search scans.
  static constexpr bool approximate() noexcept {
#if defined(CAIRN_DETAIL_HNSWLIB)
    return true;
#else
    return false;
#endif
  }

  std::size_t dimension() const noexcept { return dimension_; }

  /// Versions searchable now.
  std::size_t size() const {
    std::shared_lock lock(mutex_);
    return live_;
  }

  /// How many versions the index keeps copies of: the live ones and removed ones not yet compacted away (fewer than
  /// max(compact_from, size()) of those, while there is no graph).
  std::size_t held() const {
    std::shared_lock lock(mutex_);
    return entries_.size();
  }

  /// Adds a version's vector (dimension() long, as stored: the index scales its copy). Adding a key that is already
  /// there replaces it. A vector of no length is kept with similarity 0 to every query, as detail::cosine says.
  /// `tag` is the caller's, handed back to search_tagged()'s accept with the version (e.g. where the caller keeps
  /// the record: the caller keeps it valid while the version is in the index). Or `owned`: what the index keeps
  /// with the version until it is removed or replaced, handed back as the tag (e.g. what a filter reads of the
  /// version, so that a store whose records live in a database checks a filter without reading the row).
  void add(const std::string& id, std::uint64_t version, const std::vector<float>& values, const void* tag = nullptr,
           std::shared_ptr<const void> owned = nullptr) {
    add(id, version, values.data(), values.size(), tag, std::move(owned));
  }

  /// add(), of `size` floats at `values`.
  void add(const std::string& id, std::uint64_t version, const float* values, std::size_t size,
           const void* tag = nullptr, std::shared_ptr<const void> owned = nullptr) {
    if (size != dimension_) return;  // callers check dimensions; a stray vector is never indexed
    const double squares = dot_of(values, values, dimension_);  // for the scale only
    if (!std::isfinite(squares)) return;  // not finite: stores refuse such vectors before they get here
    std::unique_lock lock(mutex_);
    auto& versions = labels_[id];
    if (const std::size_t* old = versions.find(version)) {
      erase_label(*old);
      versions.erase(version);
    }
    const std::size_t label = entries_.size(), stride = dimension_ + 1;
    const std::size_t slot = copies_.size() / stride;
    // The arrays first: a throw here leaves the next add the same label and slot.
    coarse_.resize((label + 1) * dimension_);
    copies_.resize((slot + 1) * stride);
    Entry entry{id, version, true, true, 0, 0, 0, slot, false, tag ? tag : owned.get(), std::move(owned)};
    float* copy = copies_.data() + slot * stride;
    fill_copy(values, squares, copy, entry.exact, entry.squares);
    fill_coarse(values, squares, coarse_.data() + label * dimension_, entry.coarse_length, entry.coarse_error);
#if defined(CAIRN_DETAIL_HNSWLIB)
    if (graph_ && graphed_ == label) {  // the graph holds every version before this one: this one goes in too
      entry.slot = graph_insert(copy, label);
      entry.in_graph = true;
      copies_.resize(slot * stride);
    }
#endif
    entries_.push_back(std::move(entry));
    versions.insert(version, label);
    ++live_;
    if (!columns_.empty()) {
      const Entry& e = entries_.back();
      std::lock_guard columns(columns_mutex_);
      for (auto& [name, kept] : columns_) kept.column->set(label, reader_(name, e.id, e.version, e.tag));
    }
#if defined(CAIRN_DETAIL_HNSWLIB)
    if (entries_.back().in_graph) graphed_ = label + 1;
    grow_graph();
#endif
    compact();
  }

  /// Makes room for `versions` more versions, so that adding them moves no copy (a store reading a tenant's vectors
  /// says how many come).
  void reserve(std::size_t versions) {
    std::unique_lock lock(mutex_);
    entries_.reserve(entries_.size() + versions);
    labels_.reserve(labels_.size() + versions);
    coarse_.reserve(coarse_.size() + versions * dimension_);
    copies_.reserve(copies_.size() + versions * (dimension_ + 1));
  }

  /// Removes a version; nothing when it is not there.
  void remove(const std::string& id, std::uint64_t version) {
    std::unique_lock lock(mutex_);
    const auto versions = labels_.find(id);
    if (versions == labels_.end()) return;
    const std::size_t* label = versions->second.find(version);
    if (!label) return;
    erase_label(*label);
    versions->second.erase(version);
    if (versions->second.empty()) labels_.erase(versions);
    compact();
  }

  /// Removes every version of `id`.
  void remove_all(const std::string& id) {
    std::unique_lock lock(mutex_);
    const auto versions = labels_.find(id);
    if (versions == labels_.end()) return;
    versions->second.for_each([this](std::uint64_t, std::size_t label) { erase_label(label); });
    labels_.erase(versions);
    compact();
  }

  /// Up to `k` versions most similar to `query` (dimension() long, as given) that `accept(id, version)` lets through,
  /// best first (ties: ascending id, then newer version); `accept` runs under the index's shared lock, so it must not
  /// call back into this index. With `near` > 0, the versions that pass within `near` of the k-th one's similarity
  /// come too (more than k), so that a caller ranking by the exact cosine (near_tie) gets the exact scan's top k
  /// even where the graph's float similarities disagree with it in the last bits. Each hit carries its exact cosine.
  ///
  /// With `ef` 0 (the default) the search is exact at every size: a scan that asks `accept` about versions from the
  /// highest bound of their cosine down; the hits are every version it passed whose cosine is at least the k-th best
  /// one's less `near`, ranked by that cosine. With `ef` > 0 it is approximate where it can be (approximate(), the
  /// index holds exact_scan_below live versions and its graph holds them all; the first such search asks for the
  /// graph, want_graph()): the graph's max(ef, k) best candidates (hnswlib's ef, one query), of which those `accept`
  /// passes, ranked by the graph's float similarity. When fewer than k of them pass (a selective filter), the scan
  /// answers instead, so a filter never thins an approximate page.
  ///
  /// With `newest_only`, a version is a candidate only while it is the newest version of its id in the index (an
  /// index that keeps older versions too, searched for the latest ones).
  /// Sets what reads a column of a version (Bound); the columns made before are dropped.
  void set_column_reader(ColumnReader reader) {
    std::unique_lock lock(mutex_);
    std::lock_guard columns(columns_mutex_);
    reader_ = std::move(reader);
    columns_.clear();
  }

  std::vector<VectorHit> search(const std::vector<float>& query, std::size_t k,
                                const std::function<bool(const std::string&, std::uint64_t)>& accept, double near = 0,
                                std::size_t ef = 0, bool newest_only = false) const {
    if (!accept) return search_tagged(query, k, nullptr, near, ef, newest_only);
    return search_tagged(
        query, k, [&accept](const std::string& id, std::uint64_t version, const void*) { return accept(id, version); },
        near, ef, newest_only);
  }

  /// True when a search with `ef` goes through the graph: with hnswlib, once a search asked for the graph, the index
  /// has held exact_scan_below live versions and every version has been moved into the graph since
  /// (graph_steps_per_add at each add, or build_graph()), while it holds at least that many.
  bool searches_graph() const {
    std::shared_lock lock(mutex_);
#if defined(CAIRN_DETAIL_HNSWLIB)
    return live_ >= exact_scan_below && graph_holds_all();
#else
    return false;
#endif
  }

  /// Asks for the graph that searches with `ef` go through: from now on, while the index holds exact_scan_below live
  /// versions or more, each add moves graph_steps_per_add versions into it. An index nobody asked keeps no graph.
  void want_graph() const noexcept { graph_wanted_.store(true, std::memory_order_relaxed); }

  /// Asks for the graph and fills it now with every version (when the index holds exact_scan_below live versions or
  /// more, with hnswlib; nothing otherwise). Takes about as long as adding them all to an hnswlib graph.
  void build_graph() {
    want_graph();
#if defined(CAIRN_DETAIL_HNSWLIB)
    std::unique_lock lock(mutex_);
    while (live_ >= exact_scan_below && !graph_holds_all()) grow_graph();
#endif
  }

  /// search(), with each version's tag (add()) handed to `accept` too, and `bounds` (Bound; none without a column
  /// reader) checked before it. An `owned` tag is valid while `accept` runs (under the shared lock): once the search
  /// returns, another thread may remove or replace the version and the tag with it, so `accept` copies what the
  /// caller reads of it later.
  std::vector<VectorHit> search_tagged(const std::vector<float>& query, std::size_t k, const Accept& accept,
                                       double near = 0, std::size_t ef = 0, bool newest_only = false,
                                       const std::vector<Bound>& bounds = {}) const {
    if (k == 0 || query.size() != dimension_) return {};
    // detail::cosine's arithmetic for the exact cosines, each sum of squares computed once (the same bits).
    const double query_squares = dot_of(query.data(), query.data(), dimension_);
    if (!(query_squares > 0) || !std::isfinite(query_squares)) return {};  // no length: nothing to rank by
    std::size_t passed = 0;  // how many versions `accept` let through, in this whole search (VectorHit::accepted)
#if defined(CAIRN_DETAIL_HNSWLIB)
    if (ef > 0) want_graph();
#endif
    std::shared_lock lock(mutex_);
    if (live_ == 0) return {};
    const std::vector<std::shared_ptr<const Column>> columns = columns_of(bounds);
#if defined(CAIRN_DETAIL_HNSWLIB)
    if (ef > 0 && live_ >= exact_scan_below && graph_holds_all()) {
      const Within within = [&columns, &bounds](std::size_t label) {
        for (std::size_t i = 0; i < columns.size(); ++i) {
          if (!columns[i]->passes(label, bounds[i])) return false;
        }
        return true;
      };
      const Within* bounded = columns.empty() ? nullptr : &within;
      std::vector<VectorHit> hits =
          search_graph(query, query_squares, k, accept, near, ef, newest_only, passed, bounded);
      if (hits.size() >= k) return hits;
    }
#else
    (void)ef;
#endif
    if (columns.empty()) return scan(query, query_squares, k, accept, near, newest_only, passed, nullptr);
    // The labels that pass the bounds, from the columns' arrays alone (a tight loop, no call a label): the scan
    // looks at those only.
    std::vector<std::size_t> within_bounds;
    for (std::size_t label = 0; label < entries_.size(); ++label) {
      bool in = true;
      for (std::size_t i = 0; in && i < columns.size(); ++i) in = columns[i]->passes(label, bounds[i]);
      if (in) within_bounds.push_back(label);
    }
    return scan(query, query_squares, k, accept, near, newest_only, passed, &within_bounds);
  }

 private:
  using Within = std::function<bool(std::size_t)>;  // a label passes a search's bounds

  // A column (Bound): a number and its kind per label, made by columns_of and kept current by add() and compact().
  struct Column {
    std::vector<double> values;
    std::vector<ColumnValue::Kind> kinds;
    void set(std::size_t label, const ColumnValue& v) {
      if (values.size() <= label) {
        values.resize(label + 1, 0);
        kinds.resize(label + 1, ColumnValue::none);
      }
      values[label] = v.value;
      kinds[label] = v.kind;
    }
    bool passes(std::size_t label, const Bound& b) const {
      if (kinds[label] == ColumnValue::unknown) return true;
      return kinds[label] == ColumnValue::number && values[label] >= b.low && values[label] <= b.high;
    }
  };

  struct ColumnSlot {
    std::shared_ptr<Column> column;
    std::uint64_t used = 0;  // column_clock_ when a search last named it
  };

  // The columns `bounds` name, in their order, each made now if it was not (under columns_mutex_, with the shared
  // lock held: adds wait, other searches naming columns wait for it); none without a reader. Past max_columns the
  // least recently named goes (a search still holding it keeps it until it ends).
  std::vector<std::shared_ptr<const Column>> columns_of(const std::vector<Bound>& bounds) const {
    std::vector<std::shared_ptr<const Column>> out;
    if (bounds.empty() || !reader_) return out;
    std::lock_guard lock(columns_mutex_);
    for (const Bound& b : bounds) {
      const auto it = columns_.find(b.column);
      if (it != columns_.end()) {
        it->second.used = ++column_clock_;
        out.push_back(it->second.column);
        continue;
      }
      auto made = std::make_shared<Column>();
      made->values.assign(entries_.size(), 0);
      made->kinds.assign(entries_.size(), ColumnValue::none);
      for (std::size_t label = 0; label < entries_.size(); ++label) {
        const Entry& e = entries_[label];
        if (e.live) made->set(label, reader_(b.column, e.id, e.version, e.tag));
      }
      if (columns_.size() >= max_columns) {
        columns_.erase(std::min_element(columns_.begin(), columns_.end(),
                                        [](const auto& x, const auto& y) { return x.second.used < y.second.used; }));
      }
      out.push_back(made);
      columns_.emplace(b.column, ColumnSlot{std::move(made), ++column_clock_});
    }
    return out;
  }

  struct Entry {  // what a label holds
    std::string id;
    std::uint64_t version = 0;
    bool live = false;
    bool exact = true;         // its copy scaled back gives the vector added (fill_copy)
    double squares = 0;        // its copy's sum of squares (dot_of(copy, copy))
    double coarse_length = 0;  // its 16-bit copy's length and error (Coarse)
    double coarse_error = 0;
    std::size_t slot = 0;   // where its copy is (copy_of): hnswlib's internal id, or its place in copies_
    bool in_graph = false;  // the copy is in the graph (slot: its internal id), not in copies_
    const void* tag = nullptr;
    std::shared_ptr<const void> owned;  // add()'s `owned`, released when the version goes
  };

  // A vector's 16-bit copy: c[i] = round(coarse_scale * v[i] / |v|), within +-coarse_scale, with the lengths of c
  // and of its error e = c - coarse_scale * v / |v| (all 0 for a vector of no length). For a query q and a vector
  // v: coarse_scale² * cos(q, v) = (c_q - e_q).(c_v - e_v), so by Cauchy-Schwarz cos(q, v) is within
  // (|c_q| |e_v| + |e_q| |c_v| + |e_q| |e_v|) / coarse_scale² of c_q.c_v / coarse_scale² (an exact integer). The
  // components' errors are at most 1/2 (sqrt(dimension / 12) for the length, typically): about 3.5e-4 at any
  // dimension.
  struct Coarse {
    std::vector<std::int16_t> values;
    double length = 0;
    double error = 0;
  };
  Coarse coarse_copy(const std::vector<float>& v) const {
    Coarse c;
    c.values.assign(dimension_, 0);
    double squares = 0;
    for (const float x : v) squares += static_cast<double>(x) * x;
    fill_coarse(v.data(), squares, c.values.data(), c.length, c.error);
    return c;
  }
  // The 16-bit copy of `v` (sum of squares `squares`) into out[0, dimension()), with its length and error.
  void fill_coarse(const float* v, double squares, std::int16_t* out, double& length, double& error) const {
    length = error = 0;
    if (!(squares > 0) || !std::isfinite(squares)) {
      std::fill(out, out + dimension_, std::int16_t{0});
      return;
    }
    const double scale = coarse_scale / std::sqrt(squares);
    // Rounded to nearest, ties to even, as std::nearbyint does in the default rounding mode, without its call: a
    // double of magnitude below 2^51 plus 1.5 * 2^52 keeps no fraction bits. |x| <= coarse_scale (and a little
    // more from rounding in `scale`, clamped after).
    // The two sums in 8 lanes, as dot_of sums (the compiler keeps them in vector registers): one sum would be one
    // chain of dependent additions, 4 cycles a dimension.
    constexpr double round_to_integer = 6755399441055744.0;
    const auto one = [&](std::size_t i, double& len, double& err) {
      const double x = scale * v[i];
      const double rounded = std::min(coarse_scale, std::max(-coarse_scale, (x + round_to_integer) - round_to_integer));
      out[i] = static_cast<std::int16_t>(rounded);
      len += rounded * rounded;
      err += (rounded - x) * (rounded - x);
    };
    double lengths[8] = {0, 0, 0, 0, 0, 0, 0, 0}, errors[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    std::size_t i = 0;
    for (; i + 8 <= dimension_; i += 8) {
      for (std::size_t j = 0; j < 8; ++j) one(i + j, lengths[j], errors[j]);
    }
    for (; i < dimension_; ++i) one(i, lengths[0], errors[0]);
    for (std::size_t j = 0; j < 8; ++j) {
      length += lengths[j];
      error += errors[j];
    }
    length = std::sqrt(length);
    error = std::sqrt(error);
  }

  // How far the exact cosine the stores compute (detail::cosine, in doubles) may be from the real-number one the
  // bounds are about, and from an inexact copy's (whose lost components are below 2^-126 of its length): 1e-9 is
  // far above either (about dimension * 1e-16) at any dimension a store takes.
  static constexpr double rounding_slack = 1e-9;

  // The scan (exact_scan_below): every live version's bound on its cosine from the 16-bit copies (16 bytes of
  // each vector read per 8 dimensions, not 32; with `only`, of those labels alone: the ones a search's bounds pass),
  // then, from the highest bound down, `accept` and the exact cosine
  // from the full copy, until the next bound is below the k-th best cosine taken less `near`. A version not looked
  // at cannot rank at or above that; the hits are those of the exact scan.
  std::vector<VectorHit> scan(const std::vector<float>& query, double query_squares, std::size_t k,
                              const Accept& accept, double near, bool newest_only, std::size_t& passed,
                              const std::vector<std::size_t>* only) const {
    const Coarse q = coarse_copy(query);
    constexpr double inverse_squared_scale = 1 / (coarse_scale * coarse_scale);
    struct Candidate {
      double upper;  // the cosine is at most this
      std::size_t label;
    };
    std::vector<Candidate> all;
    all.reserve(only ? only->size() : live_);
    const auto bound_of = [&](std::size_t label) {
      const Entry& e = entries_[label];
      if (!e.live) return;
      const auto dot = static_cast<double>(dot_i16(q.values.data(), coarse_.data() + label * dimension_, dimension_));
      const double bound = q.length * e.coarse_error + q.error * e.coarse_length + q.error * e.coarse_error;
      all.push_back(Candidate{(dot + bound * (1 + 1e-9)) * inverse_squared_scale + rounding_slack, label});
    };
    if (only) {
      for (const std::size_t label : *only) bound_of(label);
    } else {
      for (std::size_t label = 0; label < entries_.size(); ++label) bound_of(label);
    }
    // The bounds as a max-heap: made in linear time, each version walked then costs O(log n), so a selective
    // filter's long walk costs O(n + walked log n) and an unfiltered search's short one little more than O(n).
    const auto lower = [](const Candidate& a, const Candidate& b) {
      return a.upper < b.upper || (a.upper == b.upper && a.label > b.label);
    };
    std::make_heap(all.begin(), all.end(), lower);
    std::vector<VectorHit> out;
    std::vector<double> best;  // the k highest cosines (lower ends, for an inexact copy) taken: a min-heap
    const auto lowest_first = [](double a, double b) { return a > b; };
    while (!all.empty()) {
      std::pop_heap(all.begin(), all.end(), lower);
      const Candidate c = all.back();
      all.pop_back();
      if (best.size() == k && c.upper < best.front() - near) break;  // nor can any after it
      const std::size_t before = out.size();
      append_if(out, c.label, 0, accept, newest_only, passed);
      if (out.size() == before) continue;
      VectorHit& hit = out.back();
      const Entry& e = entries_[c.label];
      hit.similarity = cosine_from(dot_of(query.data(), copy_of(c.label), dimension_), query_squares, e.squares);
      if (e.exact) hit.exact = hit.similarity;
      best.push_back(e.exact ? hit.similarity : hit.similarity - rounding_slack);
      std::push_heap(best.begin(), best.end(), lowest_first);
      if (best.size() > k) {
        std::pop_heap(best.begin(), best.end(), lowest_first);
        best.pop_back();
      }
    }
    sort_hits(out);
    if (out.size() > k) {  // k, then those within `near` of the k-th (an inexact copy's cosine may be a little higher)
      std::size_t keep = k;
      if (near > 0) {
        const double least = out[k - 1].similarity - near;
        for (; keep < out.size(); ++keep) {
          if (out[keep].similarity + (out[keep].exact ? 0 : rounding_slack) < least) break;
        }
      }
      out.resize(keep);
    }
    return out;
  }

#if defined(CAIRN_DETAIL_HNSWLIB)
  // The graph (a search with `ef`, exact_scan_below live versions or more): hnswlib's max(ef, k) best candidates
  // (its ef is 1, so a query for n looks at n), those `accept` passes, ranked by the graph's float similarity, each
  // with its exact cosine from the copy. Fewer than k: the caller scans instead.
  std::vector<VectorHit> search_graph(const std::vector<float>& query, double query_squares, std::size_t k,
                                      const Accept& accept, double near, std::size_t ef, bool newest_only,
                                      std::size_t& passed, const Within* within) const {
    const std::vector<float> unit = query_copy(query);
    auto* graph =
        const_cast<hnswlib::HierarchicalNSW<float>*>(static_cast<const hnswlib::HierarchicalNSW<float>*>(graph_.get()));
    std::vector<VectorHit> out;
    auto found = graph->searchKnn(unit.data(), std::min(std::max(std::min(ef, max_ef), k), live_));
    out.reserve(found.size());
    while (!found.empty()) {  // farthest first
      const auto [distance, label] = found.top();
      found.pop();
      if (within && !(*within)(static_cast<std::size_t>(label))) continue;
      append_if(out, static_cast<std::size_t>(label), 1.0 - static_cast<double>(distance), accept, newest_only, passed);
    }
    if (out.size() < k) return out;
    sort_hits(out);
    if (out.size() > k) {
      std::size_t keep = k;
      if (near > 0) {
        while (keep < out.size() && out[keep].similarity >= out[k - 1].similarity - near) ++keep;
      }
      out.resize(keep);
    }
    for (auto& hit : out) {
      const Entry& e = entries_[hit.label];
      if (e.exact) {
        hit.exact = cosine_from(dot_of(query.data(), copy_of(hit.label), dimension_), query_squares, e.squares);
      }
    }
    return out;
  }

  // A query as the graph compares it: scaled to length 1, then 1 for its inverse length (its length is finite and
  // not 0: search_tagged checked).
  std::vector<float> query_copy(const std::vector<float>& query) const {
    double squares = 0;
    for (const float x : query) squares += static_cast<double>(x) * x;
    const double length = std::sqrt(squares);
    std::vector<float> unit(dimension_ + 1, 1.0f);
    for (std::size_t i = 0; i < dimension_; ++i) unit[i] = static_cast<float>(query[i] / length);
    return unit;
  }
#endif

  static void sort_hits(std::vector<VectorHit>& hits) {
    std::sort(hits.begin(), hits.end(), [](const VectorHit& a, const VectorHit& b) {
      if (a.similarity != b.similarity) return a.similarity > b.similarity;
      if (a.id != b.id) return a.id < b.id;
      return a.version > b.version;
    });
  }

  // The copy of a vector the index keeps, written to out[0, dimension() + 1): the vector scaled by a power of two
  // to a length in [1, 2), then the inverse of that length. Scaling a float by a power of two changes no bit of its
  // significand while it stays normal, and the double sums of detail::cosine scale with it exactly, so the copy
  // gives the cosine of the vector itself to the last bit; `exact` is false when a component did not come back
  // (scaled down below the normal floats). `squares` is the vector's sum of squares (finite).
  void fill_copy(const float* values, double squares, float* out, bool& exact, double& scaled_squares) const {
    exact = true;
    scaled_squares = 0;
    if (squares == 0) {  // no length: every similarity is 0, as detail::cosine says
      std::fill(out, out + dimension_ + 1, 0.0f);
      return;
    }
    const int scale = std::ilogb(std::sqrt(squares));
    if (scale > -126 && scale < 127) {
      // Multiplying by a power of two that is a normal float is ldexp's scaling, and several times faster.
      const float down = std::ldexp(1.0f, -scale), up = std::ldexp(1.0f, scale);
      int lost = 0;  // not `exact && ...`: a branch in the loop would keep it from being vectorised
      for (std::size_t i = 0; i < dimension_; ++i) {
        out[i] = values[i] * down;
        lost |= out[i] * up != values[i];
      }
      exact = lost == 0;
    } else {
      for (std::size_t i = 0; i < dimension_; ++i) {
        out[i] = std::ldexp(values[i], -scale);
        exact = exact && std::ldexp(out[i], scale) == values[i];
      }
    }
    scaled_squares = dot_of(out, out, dimension_);
    out[dimension_] = static_cast<float>(1.0 / std::sqrt(scaled_squares));
  }

  // A label's kept copy (its first dimension() floats are the scaled vector).
  const float* copy_of(std::size_t label) const {
    const Entry& e = entries_[label];
#if defined(CAIRN_DETAIL_HNSWLIB)
    if (e.in_graph) {
      const auto* graph = static_cast<const hnswlib::HierarchicalNSW<float>*>(graph_.get());
      return reinterpret_cast<const float*>(graph->getDataByInternalId(static_cast<hnswlib::tableint>(e.slot)));
    }
#endif
    return copies_.data() + e.slot * (dimension_ + 1);
  }

  // compact_from: the live versions' entries and copies moved down to labels and slots 0, 1, ... in their order
  // (labels change: a search holds the shared lock, so none outlives one), the removed ones' given back.
  void compact() {
    const std::size_t dead = entries_.size() - live_;
    if (dead < compact_from || dead < live_) return;
#if defined(CAIRN_DETAIL_HNSWLIB)
    if (graph_) return;  // its labels are hnswlib's
#endif
    const std::size_t stride = dimension_ + 1;
    std::vector<Entry> entries;
    entries.reserve(live_);
    MappedArray<std::int16_t> coarse;
    MappedArray<float> copies;
    coarse.resize(live_ * dimension_);
    copies.resize(live_ * stride);
    std::lock_guard lock(columns_mutex_);
    std::map<std::string, ColumnSlot> columns;
    for (const auto& [name, slot] : columns_) {
      auto& c = columns[name];
      c = ColumnSlot{std::make_shared<Column>(), slot.used};
      c.column->values.reserve(live_);
      c.column->kinds.reserve(live_);
    }
    for (std::size_t label = 0; label < entries_.size(); ++label) {
      const Entry& e = entries_[label];
      if (!e.live) continue;
      const std::size_t to = entries.size();
      std::copy_n(coarse_.data() + label * dimension_, dimension_, coarse.data() + to * dimension_);
      std::copy_n(copies_.data() + e.slot * stride, stride, copies.data() + to * stride);
      entries.push_back(e);
      entries.back().slot = to;
      for (const auto& [name, slot] : columns_) {
        columns[name].column->set(to, ColumnValue{slot.column->kinds[label], slot.column->values[label]});
      }
    }
    // Nothing above changed the index; nothing below throws.
    for (std::size_t label = 0; label < entries.size(); ++label) {
      *labels_.at(entries[label].id).find(entries[label].version) = label;
    }
    entries_.swap(entries);
    coarse_.swap(coarse);
    copies_.swap(copies);
    columns_.swap(columns);
  }

  void erase_label(std::size_t label) {
    Entry& e = entries_[label];
#if defined(CAIRN_DETAIL_HNSWLIB)
    if (e.in_graph) static_cast<hnswlib::HierarchicalNSW<float>*>(graph_.get())->markDelete(label);
#endif
    e.live = false;
    e.tag = nullptr;
    e.owned.reset();
    --live_;
  }

#if defined(CAIRN_DETAIL_HNSWLIB)
  bool graph_holds_all() const { return graph_ && graphed_ == entries_.size(); }

  // Puts a copy into the graph under `label` (room made first); returns its internal id.
  std::size_t graph_insert(const float* copy, std::size_t label) {
    auto* graph = static_cast<hnswlib::HierarchicalNSW<float>*>(graph_.get());
    if (graph->cur_element_count >= graph->max_elements_) graph->resizeIndex(graph->max_elements_ * 2);
    graph->addPoint(copy, label);
    return graph->label_lookup_.at(label);
  }

  // Makes the graph when a search asked for it and the index holds exact_scan_below live versions, then moves up
  // to graph_steps_per_add versions' copies from copies_ into it, oldest first (a removed one is skipped: its copy
  // is gone). graphed_ counts the labels done.
  void grow_graph() {
    if (!graph_) {
      if (live_ < exact_scan_below || !graph_wanted_.load(std::memory_order_relaxed)) return;
      auto space = std::make_shared<cairn_hnswlib::CosineSpace>(dimension_);
      auto graph = std::make_shared<hnswlib::HierarchicalNSW<float>>(space.get(), std::max(initial_capacity, 2 * live_),
                                                                     graph_degree, ef_construction);
      graph->setEf(1);  // a query for n candidates looks at n (search_graph asks for max(ef, k))
      space_ = std::move(space);
      graph_ = std::move(graph);
    }
    for (std::size_t moved = 0; graphed_ < entries_.size() && moved < graph_steps_per_add; ++graphed_) {
      Entry& e = entries_[graphed_];
      if (!e.live || e.in_graph) continue;
      e.slot = graph_insert(copies_.data() + e.slot * (dimension_ + 1), graphed_);
      e.in_graph = true;
      ++moved;
    }
  }
#endif

  void append_if(std::vector<VectorHit>& out, std::size_t label, double similarity, const Accept& accept,
                 bool newest_only, std::size_t& passed) const {
    const Entry& e = entries_[label];
    if (!e.live) return;  // removed (hnswlib skips marked ones; the scan skips them here)
    if (newest_only && labels_.at(e.id).newest() != e.version) return;  // a live label's id has versions
    if (accept && !accept(e.id, e.version, e.tag)) return;
    out.push_back(VectorHit{e.id, e.version, similarity, passed++, std::nullopt, label});
  }

  std::size_t dimension_;
  mutable std::shared_mutex mutex_;
  std::vector<Entry> entries_;  // label -> what it holds; labels are never reused
  // An id's live versions and their labels, ascending by version: one kept inline (most ids hold one version), more
  // in a sorted vector, so that an id costs its hash node and nothing else.
  class VersionLabels {
   public:
    using Slot = std::pair<std::uint64_t, std::size_t>;  // a version and its label
    std::size_t* find(std::uint64_t version) {
      if (more_.empty()) return has_one_ && one_.first == version ? &one_.second : nullptr;
      const auto it = lower(version);
      return it != more_.end() && it->first == version ? &it->second : nullptr;
    }
    void insert(std::uint64_t version, std::size_t label) {  // a version not there
      if (more_.empty() && !has_one_) {
        one_ = {version, label};
        has_one_ = true;
        return;
      }
      if (more_.empty()) more_.push_back(one_);
      has_one_ = false;
      more_.insert(lower(version), {version, label});
    }
    void erase(std::uint64_t version) {  // a version there
      if (more_.empty()) {
        has_one_ = false;
        return;
      }
      more_.erase(lower(version));
      if (more_.size() == 1) {
        one_ = more_.front();
        has_one_ = true;
        std::vector<Slot>().swap(more_);
      }
    }
    bool empty() const { return !has_one_ && more_.empty(); }
    std::uint64_t newest() const { return more_.empty() ? one_.first : more_.back().first; }
    template <class F>
    void for_each(F&& f) const {
      if (has_one_) f(one_.first, one_.second);
      for (const auto& [version, label] : more_) f(version, label);
    }

   private:
    std::vector<Slot>::iterator lower(std::uint64_t version) {
      return std::lower_bound(more_.begin(), more_.end(), version,
                              [](const Slot& s, std::uint64_t v) { return s.first < v; });
    }
    Slot one_{0, 0};
    bool has_one_ = false;
    std::vector<Slot> more_;  // two or more: every one (one_ unused)
  };
  // id -> its versions' labels, live ones only: removing an id touches its own versions, not the whole index
  std::unordered_map<std::string, VersionLabels> labels_;
  std::size_t live_ = 0;
  mutable std::atomic<bool> graph_wanted_{false};  // a search asked for the graph (want_graph())
  ColumnReader reader_;                            // set_column_reader()
  // column name -> Column: made under columns_mutex_ while the shared lock is held (columns_of), changed only under
  // the exclusive lock (add, compact), so a search reads the columns it was handed without columns_mutex_
  mutable std::mutex columns_mutex_;
  mutable std::map<std::string, ColumnSlot> columns_;
  mutable std::uint64_t column_clock_ = 0;
  MappedArray<std::int16_t> coarse_;  // label -> its 16-bit copy (Coarse), dimension() values at label * dimension()
  // slot -> the copy (fill_copy) of a version not in the graph, dimension() + 1 floats at slot * (dimension() + 1);
  // a removed version's or one moved into the graph stays until compact()
  MappedArray<float> copies_;
#if defined(CAIRN_DETAIL_HNSWLIB)
  std::shared_ptr<void> space_;  // cairn_hnswlib::CosineSpace (its distance function); the graph points into it
  std::shared_ptr<void> graph_;  // hnswlib::HierarchicalNSW<float>, destroyed before space_; made by grow_graph
  std::size_t graphed_ = 0;      // labels below this are in the graph or were removed before their turn
#endif
};

}  // namespace detail
CAIRN_END_NAMESPACE
