// W6 (issue 27, docs/search.md "Benchmark W6"): search on every backend against its floors, side by side in one run.
//
// The corpus: N artifacts (CAIRN_W6_ARTIFACTS, default 100,000; rounded down to a multiple of the tenants) over 100
// tenants (CAIRN_W6_TENANTS: 1 puts them all in one tenant),
// each a title of 4 words, a description of 8 and a value that is a ~1 KB string of words drawn from a vocabulary of
// 5,000 (a skewed draw, so some words are common and most are rare), with one of three types. Vectors come from a
// deterministic host embedder: feature hashing of the words (FNV-1a 32, 384 dimensions, signed weights 1-4),
// L2-normalised. bench/peers/w6_langgraph.mjs builds the same corpus, the same queries and the same vectors bit for
// bit (both print the fingerprint of every vector: BM_W6IndexMem_Floor's counter `fingerprint`).
//
// 200 queries, asked in whole passes; each is drawn from one artifact of its tenant: two of its words, its type, and
// 12 of its words embedded for the similarity query. Rows (ratios.py pairs each _<Variant> with the _Floor of its
// group):
//   W6IndexMem/IndexSql/IndexPg  time to store all N, per artifact: cairn's store() (record, words, vector) against
//                                a floor doing the same work by hand (in memory: plain structs, postings and
//                                hnswlib; SQLite: one transaction per row into an FTS5 table and a vectors table;
//                                PostgreSQL: one INSERT into a table with a tsvector column under GIN and the vector)
//   W6Words / W6WordsPg          a filtered full-text query (type + two words, top 10, records read): cairn's
//                                search(mode text) against raw FTS5 (MATCH, bm25(), WHERE on plain columns) and raw
//                                PostgreSQL full text (@@, ts_rank_cd, GIN); W6WordsPg is the first row after the
//                                store's last write (each query asked for the first time, right after a load);
//                                W6WordsPgAgain: each query asked once before, untimed (the store keeps the words'
//                                document counts of an unchanged tenant)
//   W6Similar                    top-10 similarity in the tenant: cairn's search(vector) against hnswlib alone (one
//                                index per tenant: InnerProductSpace, M 16, ef_construction 200, ef 64); Exact is the
//                                brute-force scan; LangGraph comes from the peer script
//   W6SimilarSql / W6SimilarPg   the same on the SQLite and PostgreSQL stores, which answer with records they read
//                                from their rows: hnswlib's top 10 and a raw read of those 10 rows (sqlite3; one
//                                libpq round trip)
//   W6SimilarMatched[Sql|Pg]     the same queries against hnswlib alone at the recall cairn promises: the least ef of
//                                64, 128, ... whose recall@10 is >= 0.95 (counter `ef`), plus the raw row read on SQL
//   W6SimilarExact[Pg]           SearchQuery::exact against a plain float scan of the tenant's vectors
//   W6Filtered[Sql|Pg]/<p>       similarity with a metadata filter `bucket < p` (p % of the tenant passes) against a
//                                filtered float scan (+ the raw row read on SQL); `recall_at_10` against its truth
//   ..._SqliteRows, _PostgresRows the SQL rows above through a store object that keeps no records
//                                (record_cache_bytes 0): each page reads and decodes its rows, as a first page does
//   W6Hybrid / W6HybridPg        words and vector fused (reciprocal rank fusion of the top 40 of each, k 60): cairn's
//                                search(mode hybrid) against the raw full text + hnswlib + the same fusion
//   W6HybridOr[Pg]               the same with four other words of the artifact joined by OR (as a user types a
//                                query: "a OR b OR c OR d"; FTS5 `"a" OR "b" ...`, tsquery 'a' | 'b' ...)
//   W6Hybrid[Or]Words[Pg]       the words half of those queries asked alone (their text and filters, mode text):
//                                with W6Similar, what a hybrid query costs asked apart. These rows and the hybrid
//                                rows ask each query once untimed first (PostgreSQL then knows its words' counts)
//   W6Bytes                      heap bytes per artifact kept by the in-memory store and by the in-memory floor
//                                (mallinfo2 deltas over the build, malloc's headers included)
//   W6IndexBytes/<n>             heap bytes per version of one tenant's vector index holding n of W6's vectors:
//                                cairn's detail::VectorIndex (every store's) against hnswlib alone with room for n
//   W6DiskSql / W6DiskPg         bytes per artifact on disk: the SQLite file and its WAL; pg_database_size deltas
//   W6Restart[Pg]                a restarted worker: a new store object on the same database (the file or server as
//                                the last one left it, warm in the OS's cache) and its first similarity query of
//                                one tenant, timed in wall time, 3 times (counter `first_query_ms`: the median)
//   W6Clustered                  a second vector set, clustered by topic as a model's vectors are (ClusteredSet):
//                                cairn's default and ef 64 against a float scan and hnswlib at ef 64, with recall
//   W6RoundTripPg                one prepared statement that reads nothing (`SELECT $1`), wall time: the least an
//                                answer from the server costs, beside the in-process peers' times
//   W6Recall                     recall@10 of each approximate similarity against the exact top 10 (a hit counts when
//                                it is in the exact top 10 or ties its 10th similarity within 1e-5)
// PostgreSQL rows run only when CAIRN_BENCH_PG_CONNINFO or CAIRN_TEST_PG_CONNINFO names a server (scripts/bench
// starts one); they use a database of their own, cairn_w6_bench, dropped and made again at the start, with
// synchronous_commit off for the floor and cairn alike (as SQLite's synchronous = NORMAL on both), and JIT off for
// the floor as cairn's sessions have it.
//
// Times are this thread's CPU time (the machine is shared: wall time would measure the neighbours), except the
// PostgreSQL rows, floor and cairn alike, which are wall time (their work runs in the server).
//
// cairn's rows go through the public API only (store(), search()), so they pick up the backends' indexes as they
// are built; a backend without them answers by its exact scan. Where the SQLite and PostgreSQL options have no
// `embedder` yet, those stores keep no vectors and their similarity, hybrid and recall rows say so instead of a time.
#include <malloc.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <hnswlib/hnswlib.h>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/artifact/search.hpp"
#include "cairn/store/sqlite_store.hpp"

#if defined(CAIRN_HAS_POSTGRES)
#include <libpq-fe.h>

#include "cairn/store/postgres_store.hpp"
#endif

namespace {

using nlohmann::json;

// CAIRN_W6_TENANTS (default 100): how many tenants share the corpus; 1 puts all of it in one tenant (a company's
// knowledge base), past every switch-over line of the indexes.
int tenants_from_environment() {
  const char* s = std::getenv("CAIRN_W6_TENANTS");
  const int v = s ? std::atoi(s) : 100;
  return std::max(1, std::min(v, 1000));
}
const int kTenants = tenants_from_environment();
constexpr std::size_t kDim = 384;
constexpr std::uint32_t kVocabulary = 5000;
constexpr int kQueries = 200;
constexpr std::size_t kLimit = 10;
constexpr std::size_t kFused = 4 * kLimit;  // candidates per list that hybrid fuses
constexpr double kRrfK = 60;
constexpr std::size_t kM = 16, kEfConstruction = 200, kEf = 64;
const char* const kModel = "w6-feature-hash-384";
const char* const kTypes[] = {"document", "dataset", "report"};

// ---- what the stores are given -----------------------------------------------------------------------------------

// The durable stores' options get an `embedder` like InMemoryStoreOptions'; until then they keep no vectors (and
// their similarity rows say so), and once they do, these rows measure them with no change here.
template <class O, class = void>
struct has_embedder_field : std::false_type {};
template <class O>
struct has_embedder_field<O, std::void_t<decltype(std::declval<O&>().embedder)>> : std::true_type {};

// ---- the corpus: the same in bench/peers/w6_langgraph.mjs, bit for bit -----------------------------------------

struct Rng {  // xorshift32, seeded per (stream, item)
  std::uint32_t x;
  Rng(std::uint32_t stream, std::uint32_t item) : x(((item + 1u) * 0x9E3779B1u) ^ (stream * 0x85EBCA77u)) {
    if (x == 0) x = 1;
    for (int k = 0; k < 4; ++k) next();
  }
  std::uint32_t next() {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return x;
  }
};

std::string word_of(std::uint32_t k) {  // syllables of k + 70 in base 70, least significant first: unique
  static const char cons[] = "bdfgklmnprstvz";
  static const char vows[] = "aeiou";
  std::string w;
  for (std::uint32_t n = k + 70; n != 0; n /= 70) {
    w.push_back(cons[(n % 70) / 5]);
    w.push_back(vows[(n % 70) % 5]);
  }
  return w;
}

const std::vector<std::string>& vocabulary() {
  static const std::vector<std::string> v = [] {
    std::vector<std::string> out;
    for (std::uint32_t k = 0; k < kVocabulary; ++k) out.push_back(word_of(k));
    return out;
  }();
  return v;
}

const std::string& draw_word(Rng& r) {  // the product of two uniform draws: low ranks are common
  const std::uint64_t a = r.next() % kVocabulary;
  const std::uint64_t b = r.next() % kVocabulary;
  return vocabulary()[static_cast<std::size_t>(a * b / kVocabulary)];
}

std::string words(Rng& r, int n) {
  std::string s;
  for (int k = 0; k < n; ++k) (s.empty() ? s : s += ' ') += draw_word(r);
  return s;
}

std::uint32_t fnv1a(std::string_view s, std::uint32_t h = 2166136261u) {
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  return h;
}

// The host's embedder: feature hashing of the text's words, L2-normalised. The sums are integers (exact in a
// double), so JavaScript's doubles and Math.fround give the same floats.
std::vector<float> embed_text(std::string_view text) {
  double acc[kDim] = {};
  cairn::detail::for_each_word(text, [&acc](const std::string& w) {
    const std::uint32_t h = fnv1a(w);
    acc[h % kDim] += ((h >> 31) != 0 ? -1.0 : 1.0) * static_cast<double>(1 + ((h >> 9) & 3));
  });
  double sq = 0;
  for (double a : acc) sq += a * a;
  const double norm = std::sqrt(sq);
  std::vector<float> v(kDim);
  for (std::size_t d = 0; d < kDim; ++d) v[d] = static_cast<float>(acc[d] / norm);
  return v;
}

class W6Embedder final : public cairn::Embedder {
 public:
  std::string model() const override { return kModel; }
  std::size_t dimension() const override { return kDim; }
  std::vector<std::vector<float>> embed(const std::vector<std::string>& texts) override {
    std::vector<std::vector<float>> out;
    out.reserve(texts.size());
    for (const auto& t : texts) out.push_back(embed_text(t));
    return out;
  }
};

struct Doc {
  std::string tenant, id, type, title, description, body;
  std::string embedded_text() const { return title + "\n" + description + "\n" + body; }  // Embedder::text_of
};

int artifact_count() {
  static const int n = [] {
    const char* s = std::getenv("CAIRN_W6_ARTIFACTS");
    const int v = s ? std::atoi(s) : 100000;
    return std::max(kTenants, v - v % kTenants);
  }();
  return n;
}

Doc doc_of(int i) {
  Rng r(1, static_cast<std::uint32_t>(i));
  Doc d;
  d.tenant = fmt::format("tenant-{:03}", i % kTenants);
  d.id = fmt::format("doc-{:06}", i);
  d.type = kTypes[(i / kTenants) % 3];
  d.title = words(r, 4);
  d.description = words(r, 8);
  while (d.body.size() < 1000) (d.body.empty() ? d.body : d.body += ' ') += draw_word(r);
  return d;
}
int index_of(const std::string& id) { return std::atoi(id.c_str() + 4); }  // "doc-000123"
// Each record's metadata `bucket`: 0-99, spread evenly within each tenant and unrelated to its words and vector, so
// that `bucket < p` passes p % of a tenant (the filtered rows).
int bucket_of(int i) { return (i / kTenants) % 100; }

struct Query {
  int tenant = 0;
  std::string tenant_name, type, words;  // words: two of the source artifact's, both required
  std::string any_words;                 // four more of its words, any of them (W6HybridOr: joined by OR)
  std::vector<float> vector;             // 12 of its words, embedded
};

const std::vector<Query>& queries() {
  static const std::vector<Query> qs = [] {
    std::vector<Query> out;
    const auto per_tenant = static_cast<std::uint32_t>(artifact_count() / kTenants);
    for (int q = 0; q < kQueries; ++q) {
      Rng r(2, static_cast<std::uint32_t>(q));
      Query x;
      x.tenant = q % kTenants;
      const Doc d = doc_of(x.tenant + kTenants * static_cast<int>(r.next() % per_tenant));
      const auto body = cairn::detail::words_of(d.body);
      const auto pick = [&]() -> const std::string& { return body[r.next() % body.size()]; };
      x.tenant_name = d.tenant;
      x.type = d.type;
      x.words = pick();
      x.words += ' ';
      x.words += pick();
      std::string text;
      for (int k = 0; k < 12; ++k) (text.empty() ? text : text += ' ') += pick();
      x.vector = embed_text(text);
      for (int k = 0; k < 4; ++k) (x.any_words.empty() ? x.any_words : x.any_words += ' ') += pick();
      out.push_back(std::move(x));
    }
    return out;
  }();
  return qs;
}

std::uint32_t fingerprint_of(const std::vector<float>& v, std::uint32_t h) {
  for (float f : v) {
    std::uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    h = (h ^ bits) * 16777619u;
  }
  return h;
}

// glibc malloc's bytes in use: its arenas' (uordblks) and the blocks it mapped on their own (hblkhd: every block
// above the mmap threshold, 128 KiB at first, such as an index's arrays). 0 under AddressSanitizer, which replaces
// malloc: the Bytes rows are then 0.
std::size_t heap_in_use() {
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

// Times: this thread's CPU time for everything that runs in this process (the machines these run on are shared, and
// wall time there measures the neighbours); wall time for PostgreSQL, whose work runs in the server, for its floor
// and cairn alike. CAIRN_W6_WALL=1 makes every row wall time (what a user waits; for a quiet machine).
enum class Timing { cpu, wall };
bool all_wall() {
  static const bool wall = [] {
    const char* s = std::getenv("CAIRN_W6_WALL");
    return s && std::string(s) == "1";
  }();
  return wall;
}
double now_seconds(Timing t) {
  if (t == Timing::wall || all_wall()) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::string bench_dir() {
  static const std::string dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("cairn-w6-bench-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(
          std::filesystem::temp_directory_path() / ("cairn-w6-bench-" + std::to_string(::getpid())), ec);
    });
    return d.string();
  }();
  return dir;
}

std::uintmax_t file_bytes(const std::string& path) {
  std::uintmax_t total = 0;
  for (const char* suffix : {"", "-wal"}) {
    std::error_code ec;
    const auto n = std::filesystem::file_size(path + suffix, ec);
    if (!ec) total += n;
  }
  return total;
}

// What every built subject reports: seconds and heap (or disk) bytes of its build.
struct Build {
  double seconds = 0;
  double bytes = 0;
};

// ---- the in-memory floor: plain structs, postings per word, one hnswlib index per tenant -----------------------

struct Hit {  // what a floor returns: the artifact's number and what a caller reads of it
  int index;
  double score;
};

class MemFloor {
 public:
  MemFloor() : space_(kDim) {
    const auto per_tenant = static_cast<std::size_t>(artifact_count() / kTenants);
    for (auto& t : tenants_) {
      t.index = std::make_unique<hnswlib::HierarchicalNSW<float>>(&space_, per_tenant, kM, kEfConstruction);
      t.index->setEf(kEf);
    }
  }
  void add(int i, Doc d) {
    Tenant& t = tenants_[static_cast<std::size_t>(i % kTenants)];
    const auto v = embed_text(d.embedded_text());
    const auto local = static_cast<std::uint32_t>(t.docs.size());
    std::unordered_map<std::string, std::uint32_t> tf;
    cairn::detail::for_each_word(d.embedded_text(), [&tf](const std::string& w) { ++tf[w]; });
    for (auto& [w, n] : tf) t.postings[w].emplace_back(local, n);
    t.index->addPoint(v.data(), static_cast<hnswlib::labeltype>(i));
    t.docs.push_back(std::move(d));
  }
  // hnswlib alone: the top 10 of the tenant, best first, and the artifacts they name.
  std::vector<Hit> similar(int tenant, const std::vector<float>& q, std::size_t k) const {
    const Tenant& t = tenants_[static_cast<std::size_t>(tenant)];
    auto heap = t.index->searchKnn(q.data(), k);
    std::vector<Hit> out(heap.size());
    for (std::size_t n = heap.size(); n-- > 0; heap.pop()) {
      out[n] = {static_cast<int>(heap.top().second), 1.0 - static_cast<double>(heap.top().first)};
    }
    return out;
  }
  // hnswlib alone looking at `ef` candidates (its other rows use kEf), the top k.
  std::vector<Hit> similar_at(int tenant, const std::vector<float>& q, std::size_t k, std::size_t ef) const {
    auto& index = *tenants_[static_cast<std::size_t>(tenant)].index;
    index.setEf(ef);
    auto out = similar(tenant, q, k);
    index.setEf(kEf);
    return out;
  }
  // The exact top k: every vector of the tenant, scanned (a plain float scan); with `below` < 100, of the artifacts
  // whose bucket is below it (the filter checked first, on a plain int, as a filtered scan does).
  std::vector<Hit> exact(int tenant, const std::vector<float>& q, std::size_t k, int below = 100) const {
    const auto& index = *tenants_[static_cast<std::size_t>(tenant)].index;
    std::vector<Hit> all;
    all.reserve(index.cur_element_count);
    for (hnswlib::tableint id = 0; id < index.cur_element_count; ++id) {
      const int label = static_cast<int>(index.getExternalLabel(id));
      if (below < 100 && bucket_of(label) >= below) continue;
      const auto* v = reinterpret_cast<const float*>(index.getDataByInternalId(id));
      float dot = 0;
      for (std::size_t d = 0; d < kDim; ++d) dot += v[d] * q[d];
      all.push_back({label, static_cast<double>(dot)});
    }
    const auto better = [](const Hit& a, const Hit& b) {
      return a.score > b.score || (a.score == b.score && a.index < b.index);
    };
    k = std::min(k, all.size());
    std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(k), all.end(), better);
    all.resize(k);
    return all;
  }
  const Doc& doc(int i) const {
    return tenants_[static_cast<std::size_t>(i % kTenants)].docs[static_cast<std::size_t>(i / kTenants)];
  }
  double similarity(int i, const std::vector<float>& q) const {
    const auto v = tenants_[static_cast<std::size_t>(i % kTenants)].index->getDataByLabel<float>(
        static_cast<hnswlib::labeltype>(i));
    double dot = 0;
    for (std::size_t d = 0; d < kDim; ++d) dot += static_cast<double>(v[d]) * q[d];
    return dot;
  }

 private:
  struct Tenant {
    std::vector<Doc> docs;
    std::unordered_map<std::string, std::vector<std::pair<std::uint32_t, std::uint32_t>>> postings;
    std::unique_ptr<hnswlib::HierarchicalNSW<float>> index;
  };
  hnswlib::InnerProductSpace space_;
  std::vector<Tenant> tenants_ = std::vector<Tenant>(static_cast<std::size_t>(kTenants));
};

// Reciprocal rank fusion of two best-first lists, the top `limit`.
std::vector<Hit> fuse(const std::vector<Hit>& a, const std::vector<Hit>& b, std::size_t limit) {
  std::unordered_map<int, double> score;
  for (std::size_t r = 0; r < a.size(); ++r) score[a[r].index] += 1.0 / (kRrfK + static_cast<double>(r + 1));
  for (std::size_t r = 0; r < b.size(); ++r) score[b[r].index] += 1.0 / (kRrfK + static_cast<double>(r + 1));
  std::vector<Hit> out;
  for (const auto& [i, s] : score) out.push_back({i, s});
  const auto better = [](const Hit& x, const Hit& y) {
    return x.score > y.score || (x.score == y.score && x.index < y.index);
  };
  limit = std::min(limit, out.size());
  std::partial_sort(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(limit), out.end(), better);
  out.resize(limit);
  return out;
}

// ---- raw FTS5: one row per artifact, filters as WHERE on plain (UNINDEXED) columns -----------------------------

struct Row {  // a record as the floors read it back
  std::string id, title, body;
  double score;
};

class FtsFloor {
 public:
  explicit FtsFloor(const std::string& path) : path_(path) {
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) throw std::runtime_error("sqlite3_open " + path);
    exec("PRAGMA journal_mode = WAL");
    exec("PRAGMA synchronous = NORMAL");
    exec(
        "CREATE VIRTUAL TABLE docs USING fts5(tenant UNINDEXED, id UNINDEXED, type UNINDEXED, title, description, "
        "body, tokenize = 'ascii')");
    exec("CREATE TABLE vectors (tenant TEXT, id TEXT, vec BLOB, PRIMARY KEY (tenant, id)) WITHOUT ROWID");
    begin_ = prepare("BEGIN IMMEDIATE");
    commit_ = prepare("COMMIT");
    insert_doc_ = prepare(
        "INSERT INTO docs (rowid, tenant, id, type, title, description, body) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    insert_vec_ = prepare("INSERT INTO vectors VALUES (?1, ?2, ?3)");
    words_ = prepare(
        "SELECT id, title, body, bm25(docs) FROM docs WHERE docs MATCH ?1 AND tenant = ?2 AND "
        "type = ?3 ORDER BY bm25(docs) LIMIT ?4");
    ranked_ = prepare(
        "SELECT rowid, bm25(docs) FROM docs WHERE docs MATCH ?1 AND tenant = ?2 ORDER BY bm25(docs) "
        "LIMIT ?3");
    row_ = prepare("SELECT id, title, body FROM docs WHERE rowid = ?1");
  }
  ~FtsFloor() {
    for (auto* s : {begin_, commit_, insert_doc_, insert_vec_, words_, ranked_, row_}) sqlite3_finalize(s);
    sqlite3_close(db_);
  }
  FtsFloor(const FtsFloor&) = delete;
  FtsFloor& operator=(const FtsFloor&) = delete;

  void add(int i, const Doc& d, const std::vector<float>& v) {
    step(begin_);
    sqlite3_bind_int64(insert_doc_, 1, i);
    const std::string* cols[] = {&d.tenant, &d.id, &d.type, &d.title, &d.description, &d.body};
    for (int c = 0; c < 6; ++c) bind(insert_doc_, c + 2, *cols[c]);
    step(insert_doc_);
    bind(insert_vec_, 1, d.tenant);
    bind(insert_vec_, 2, d.id);
    sqlite3_bind_blob(insert_vec_, 3, v.data(), static_cast<int>(v.size() * sizeof(float)), SQLITE_STATIC);
    step(insert_vec_);
    step(commit_);
  }
  // Two words, both required (each a quoted token: no query syntax reaches FTS5), in the tenant, of the type.
  std::vector<Row> words(const Query& q, std::size_t limit) {
    const std::string match = match_of(q.words);
    bind(words_, 1, match);
    bind(words_, 2, q.tenant_name);
    bind(words_, 3, q.type);
    sqlite3_bind_int64(words_, 4, static_cast<sqlite3_int64>(limit));
    std::vector<Row> out;
    while (sqlite3_step(words_) == SQLITE_ROW)
      out.push_back({text(words_, 0), text(words_, 1), text(words_, 2), sqlite3_column_double(words_, 3)});
    sqlite3_reset(words_);
    return out;
  }
  // The word list of hybrid: the top `limit` of the tenant, best first (bm25() is lower for better).
  // `any`: of q.any_words, any of them (OR).
  std::vector<Hit> ranked(const Query& q, std::size_t limit, bool any = false) {
    bind(ranked_, 1, any ? match_of(q.any_words, " OR ") : match_of(q.words));
    bind(ranked_, 2, q.tenant_name);
    sqlite3_bind_int64(ranked_, 3, static_cast<sqlite3_int64>(limit));
    std::vector<Hit> out;
    while (sqlite3_step(ranked_) == SQLITE_ROW) {
      out.push_back({static_cast<int>(sqlite3_column_int64(ranked_, 0)), -sqlite3_column_double(ranked_, 1)});
    }
    sqlite3_reset(ranked_);
    return out;
  }
  Row row(int i, double score) {
    sqlite3_bind_int64(row_, 1, i);
    Row r{{}, {}, {}, score};
    if (sqlite3_step(row_) == SQLITE_ROW) r = {text(row_, 0), text(row_, 1), text(row_, 2), score};
    sqlite3_reset(row_);
    return r;
  }
  std::uintmax_t bytes() const { return file_bytes(path_); }

 private:
  static std::string match_of(const std::string& words, const char* join = " ") {
    std::string m;
    for (const auto& w : cairn::detail::words_of(words)) (m.empty() ? m : m += join) += "\"" + w + "\"";
    return m;
  }
  static std::string text(sqlite3_stmt* s, int c) {
    return {reinterpret_cast<const char*>(sqlite3_column_text(s, c)),
            static_cast<std::size_t>(sqlite3_column_bytes(s, c))};
  }
  static void bind(sqlite3_stmt* s, int at, const std::string& v) {
    sqlite3_bind_text(s, at, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void exec(const char* sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
      const std::string m = err ? err : "?";
      sqlite3_free(err);
      throw std::runtime_error(m + " in " + sql);
    }
  }
  sqlite3_stmt* prepare(const char* sql) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) != SQLITE_OK) throw std::runtime_error(sqlite3_errmsg(db_));
    return s;
  }
  void step(sqlite3_stmt* s) {
    const int rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) throw std::runtime_error(sqlite3_errmsg(db_));
  }

  std::string path_;
  sqlite3* db_ = nullptr;
  sqlite3_stmt *begin_, *commit_, *insert_doc_, *insert_vec_, *words_, *ranked_, *row_;
};

#if defined(CAIRN_HAS_POSTGRES)
// ---- raw PostgreSQL full text: a tsvector column under GIN, @@ and ts_rank_cd ----------------------------------

const char* pg_conninfo() {
  if (const char* c = std::getenv("CAIRN_BENCH_PG_CONNINFO")) return c;
  return std::getenv("CAIRN_TEST_PG_CONNINFO");
}

class Pg {
 public:
  explicit Pg(const std::string& conninfo) : conn_(PQconnectdb(conninfo.c_str())) {
    if (PQstatus(conn_) != CONNECTION_OK) throw std::runtime_error(std::string("PostgreSQL: ") + PQerrorMessage(conn_));
    PQsetNoticeProcessor(
        conn_, [](void*, const char*) {}, nullptr);
  }
  ~Pg() { PQfinish(conn_); }
  Pg(const Pg&) = delete;
  Pg& operator=(const Pg&) = delete;
  PGresult* run(const char* sql) { return check(PQexec(conn_, sql), sql); }
  void exec(const char* sql) { PQclear(run(sql)); }
  void prepare(const char* name, const char* sql) { PQclear(check(PQprepare(conn_, name, sql, 0, nullptr), sql)); }
  PGresult* call(const char* name, std::vector<const char*> values, std::vector<int> lengths = {},
                 std::vector<int> formats = {}) {
    return check(
        PQexecPrepared(conn_, name, static_cast<int>(values.size()), values.data(),
                       lengths.empty() ? nullptr : lengths.data(), formats.empty() ? nullptr : formats.data(), 0),
        name);
  }
  double database_bytes() {
    PGresult* r = run("SELECT pg_database_size(current_database())");
    const double n = std::atof(PQgetvalue(r, 0, 0));
    PQclear(r);
    return n;
  }

 private:
  PGresult* check(PGresult* r, const char* what) {
    const auto s = PQresultStatus(r);
    if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
      const std::string m = PQresultErrorMessage(r);
      PQclear(r);
      throw std::runtime_error(fmt::format("PostgreSQL: {} ({})", m, what));
    }
    return r;
  }
  PGconn* conn_;
};

// The bench's own database, made afresh once per run.
const std::string& pg_bench_conninfo() {
  static const std::string c = [] {
    Pg admin(pg_conninfo());
    admin.exec("DROP DATABASE IF EXISTS cairn_w6_bench WITH (FORCE)");
    admin.exec("CREATE DATABASE cairn_w6_bench");
    // Commits that do not wait for the WAL flush, for the floor and cairn alike (as SQLite's synchronous = NORMAL
    // on both): what is measured is the work, not this machine's fsync.
    admin.exec("ALTER DATABASE cairn_w6_bench SET synchronous_commit = off");
    // cairn's sessions turn JIT off (docs/stores.md); the floor's statements get the same setting.
    admin.exec("ALTER DATABASE cairn_w6_bench SET jit = off");
    return std::string(pg_conninfo()) + " dbname=cairn_w6_bench";
  }();
  return c;
}

class PgFloor {
 public:
  PgFloor() : pg_(pg_bench_conninfo()) {
    pg_.exec(
        "CREATE TABLE w6_floor (n integer PRIMARY KEY, tenant text NOT NULL, id text NOT NULL, type text NOT NULL, "
        "title text NOT NULL, description text NOT NULL, body text NOT NULL, vec bytea NOT NULL, "
        "tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', title || ' ' || description || ' ' || body)) "
        "STORED)");
    pg_.exec("CREATE INDEX w6_floor_tsv ON w6_floor USING gin (tsv)");
    pg_.prepare("ins", "INSERT INTO w6_floor VALUES ($1::integer, $2, $3, $4, $5, $6, $7, $8::bytea)");
    pg_.prepare("words",
                "SELECT id, title, body, ts_rank_cd(tsv, q) AS r FROM w6_floor, to_tsquery('simple', $1) q "
                "WHERE tsv @@ q AND tenant = $2 AND type = $3 ORDER BY r DESC, id LIMIT $4::integer");
    pg_.prepare("ranked",
                "SELECT n, ts_rank_cd(tsv, q) AS r FROM w6_floor, to_tsquery('simple', $1) q "
                "WHERE tsv @@ q AND tenant = $2 ORDER BY r DESC, n LIMIT $3::integer");
    pg_.prepare("rows", "SELECT id, title, body FROM w6_floor WHERE n = ANY($1::integer[])");
  }
  void add(int i, const Doc& d, const std::vector<float>& v) {
    const std::string n = std::to_string(i);
    const char* bin = reinterpret_cast<const char*>(v.data());
    const int vlen = static_cast<int>(v.size() * sizeof(float));
    PQclear(pg_.call("ins",
                     {n.c_str(), d.tenant.c_str(), d.id.c_str(), d.type.c_str(), d.title.c_str(), d.description.c_str(),
                      d.body.c_str(), bin},
                     {0, 0, 0, 0, 0, 0, 0, vlen}, {0, 0, 0, 0, 0, 0, 0, 1}));
  }
  std::vector<Row> words(const Query& q, std::size_t limit) {
    const std::string tsq = tsquery_of(q.words), lim = std::to_string(limit);
    PGresult* r = pg_.call("words", {tsq.c_str(), q.tenant_name.c_str(), q.type.c_str(), lim.c_str()});
    std::vector<Row> out;
    for (int k = 0; k < PQntuples(r); ++k) {
      out.push_back({PQgetvalue(r, k, 0), PQgetvalue(r, k, 1), PQgetvalue(r, k, 2), std::atof(PQgetvalue(r, k, 3))});
    }
    PQclear(r);
    return out;
  }
  std::vector<Hit> ranked(const Query& q, std::size_t limit, bool any = false) {
    const std::string tsq = any ? tsquery_of(q.any_words, " | ") : tsquery_of(q.words), lim = std::to_string(limit);
    PGresult* r = pg_.call("ranked", {tsq.c_str(), q.tenant_name.c_str(), lim.c_str()});
    std::vector<Hit> out;
    for (int k = 0; k < PQntuples(r); ++k)
      out.push_back({std::atoi(PQgetvalue(r, k, 0)), std::atof(PQgetvalue(r, k, 1))});
    PQclear(r);
    return out;
  }
  std::vector<Row> rows(const std::vector<Hit>& hits) {
    std::string arr = "{";
    for (const auto& h : hits) arr += (arr.size() > 1 ? "," : "") + std::to_string(h.index);
    arr += "}";
    PGresult* r = pg_.call("rows", {arr.c_str()});
    std::vector<Row> out;
    for (int k = 0; k < PQntuples(r); ++k)
      out.push_back({PQgetvalue(r, k, 0), PQgetvalue(r, k, 1), PQgetvalue(r, k, 2), 0});
    PQclear(r);
    return out;
  }
  Pg& pg() { return pg_; }

 private:
  // Quoted lexemes joined by & (or `join`): no syntax reaches it.
  static std::string tsquery_of(const std::string& words, const char* join = " & ") {
    std::string t;
    for (const auto& w : cairn::detail::words_of(words)) (t.empty() ? t : t += join) += "'" + w + "'";
    return t;
  }
  Pg pg_;
};

// The raw writes of the same rows keyed and indexed as cairn keeps them: the primary key (tenant, id) that a fetch
// by id needs, and each distinct word once behind its tenant's number ("7:word", docs/search.md), so that every
// tenant has its own entries in the GIN index. Storing only (row W6IndexPgKeyed): what it costs beside the plain
// floor is what those two cost PostgreSQL, with 100 tenants written in turn or one.
class PgKeyedFloor {
 public:
  PgKeyedFloor() : pg_(pg_bench_conninfo()) {
    pg_.exec(
        "CREATE TABLE w6_floor_keyed (n integer NOT NULL, tenant text COLLATE \"C\" NOT NULL, "
        "id text COLLATE \"C\" NOT NULL, "
        "type text NOT NULL, title text NOT NULL, description text NOT NULL, body text NOT NULL, vec bytea NOT NULL, "
        "tsv tsvector NOT NULL, PRIMARY KEY (tenant, id))");
    pg_.exec("CREATE INDEX w6_floor_keyed_tsv ON w6_floor_keyed USING gin (tsv)");
    pg_.prepare("ins_keyed",
                "INSERT INTO w6_floor_keyed VALUES ($1::integer, $2, $3, $4, $5, $6, $7, $8::bytea, "
                "array_to_tsvector($9::text[]))");
  }
  void add(int i, const Doc& d, const std::vector<float>& v) {
    const std::string n = std::to_string(i);
    const char* bin = reinterpret_cast<const char*>(v.data());
    const int vlen = static_cast<int>(v.size() * sizeof(float));
    const std::string prefix = std::to_string(i % kTenants + 1) + ":";
    std::set<std::string> distinct;
    for (auto& w : cairn::detail::words_of(d.title + ' ' + d.description + ' ' + d.body)) distinct.insert(prefix + w);
    std::string lexemes = "{";
    for (const auto& w : distinct) (lexemes.size() > 1 ? lexemes += ',' : lexemes) += "\"" + w + "\"";
    lexemes += "}";
    PQclear(pg_.call("ins_keyed",
                     {n.c_str(), d.tenant.c_str(), d.id.c_str(), d.type.c_str(), d.title.c_str(), d.description.c_str(),
                      d.body.c_str(), bin, lexemes.c_str()},
                     {0, 0, 0, 0, 0, 0, 0, vlen, 0}, {0, 0, 0, 0, 0, 0, 0, 1, 0}));
  }

 private:
  Pg pg_;
};
#endif

// ---- the subjects, each built once (by its Index benchmark, or by the first benchmark that needs it) -----------

struct Subjects {
  std::unique_ptr<MemFloor> mem_floor;
  Build mem_floor_build;
  std::uint32_t fingerprint = 2166136261u;
  std::shared_ptr<cairn::InMemoryArtifactStore> mem_store;
  Build mem_store_build;
  std::unique_ptr<FtsFloor> fts_floor;
  Build fts_floor_build;
  std::shared_ptr<cairn::SqliteArtifactStore> sqlite_store;
  std::shared_ptr<cairn::SqliteArtifactStore> sqlite_rows_store;
  Build sqlite_store_build;
#if defined(CAIRN_HAS_POSTGRES)
  std::unique_ptr<PgFloor> pg_floor;
  Build pg_floor_build;
  std::unique_ptr<PgKeyedFloor> pg_keyed_floor;
  Build pg_keyed_floor_build;
  std::shared_ptr<cairn::PostgresArtifactStore> pg_store;
  std::shared_ptr<cairn::PostgresArtifactStore> pg_rows_store;
  Build pg_store_build;
#endif
};
Subjects& subjects() {
  static Subjects s;
  return s;
}

cairn::ArtifactPtr record_of(const Doc& d) {
  return cairn::ArtifactRecord::builder()
      .tenant_id(d.tenant)
      .id(d.id)
      .type(d.type)
      .title(d.title)
      .description(d.description)
      .created_by("agent-w6")
      .value(json(d.body))
      .metadata(json{{"bucket", bucket_of(index_of(d.id))}})
      .build();
}

// Calls add(i, doc) for every artifact: the time of the calls alone (the corpus is made in chunks outside the
// clock, and freed again), and the heap that is still in use after them, per artifact.
template <class Add>
Build build_all(Add&& add, Timing timing = Timing::cpu) {
  const int n = artifact_count();
  constexpr int kChunk = 1000;
  Build b;
  const std::size_t heap0 = heap_in_use();
  for (int start = 0; start < n; start += kChunk) {
    const int end = std::min(n, start + kChunk);
    std::vector<Doc> docs;
    for (int i = start; i < end; ++i) docs.push_back(doc_of(i));
    const double t0 = now_seconds(timing);
    for (int i = start; i < end; ++i) add(i, docs[static_cast<std::size_t>(i - start)]);
    b.seconds += now_seconds(timing) - t0;
  }
  b.bytes = (static_cast<double>(heap_in_use()) - static_cast<double>(heap0)) / n;
  return b;
}

MemFloor& mem_floor() {
  auto& s = subjects();
  if (!s.mem_floor) {
    const std::size_t heap0 = heap_in_use();
    s.mem_floor = std::make_unique<MemFloor>();
    const double setup = static_cast<double>(heap_in_use() - heap0);  // the indexes' reserved capacity counts too
    s.mem_floor_build = build_all([&](int i, Doc& d) { s.mem_floor->add(i, std::move(d)); });
    s.mem_floor_build.bytes += setup / artifact_count();
    for (int i = 0; i < artifact_count(); ++i) {
      s.fingerprint = fingerprint_of(embed_text(doc_of(i).embedded_text()), s.fingerprint);
    }
    for (const auto& q : queries()) s.fingerprint = fingerprint_of(q.vector, s.fingerprint);
  }
  return *s.mem_floor;
}

cairn::InMemoryArtifactStore& mem_store() {
  auto& s = subjects();
  if (!s.mem_store) {
    const std::size_t heap0 = heap_in_use();
    cairn::InMemoryStoreOptions o;
    o.embedder = std::make_shared<W6Embedder>();
    s.mem_store = std::make_shared<cairn::InMemoryArtifactStore>(o);
    const double setup = static_cast<double>(heap_in_use() - heap0);
    s.mem_store_build = build_all([&](int, Doc& d) { benchmark::DoNotOptimize(s.mem_store->store(record_of(d))); });
    s.mem_store_build.bytes += setup / artifact_count();
  }
  return *s.mem_store;
}

FtsFloor& fts_floor() {
  auto& s = subjects();
  if (!s.fts_floor) {
    s.fts_floor = std::make_unique<FtsFloor>(bench_dir() + "/floor.db");
    s.fts_floor_build = build_all([&](int i, Doc& d) { s.fts_floor->add(i, d, embed_text(d.embedded_text())); });
    s.fts_floor_build.bytes = static_cast<double>(s.fts_floor->bytes()) / artifact_count();
  }
  return *s.fts_floor;
}

template <class Options>
void give_embedder(Options& o) {
  if constexpr (has_embedder_field<Options>::value) o.embedder = std::make_shared<W6Embedder>();
}

cairn::SqliteArtifactStore& sqlite_store() {
  auto& s = subjects();
  if (!s.sqlite_store) {
    cairn::SqliteOptions o;
    o.synchronous = cairn::SqliteOptions::Synchronous::normal;  // as the floor: no fsync per commit
    give_embedder(o);
    const std::string path = bench_dir() + "/cairn.db";
    s.sqlite_store = std::make_shared<cairn::SqliteArtifactStore>(path, o);
    s.sqlite_store_build =
        build_all([&](int, Doc& d) { benchmark::DoNotOptimize(s.sqlite_store->store(record_of(d))); });
    s.sqlite_store_build.bytes = static_cast<double>(file_bytes(path)) / artifact_count();
  }
  return *s.sqlite_store;
}

// Another store object on sqlite_store()'s file that keeps no records (record_cache_bytes 0): every page reads its
// rows, as the first page of a record does.
cairn::SqliteArtifactStore& sqlite_rows_store() {
  auto& s = subjects();
  if (!s.sqlite_rows_store) {
    sqlite_store();
    cairn::SqliteOptions o;
    o.synchronous = cairn::SqliteOptions::Synchronous::normal;
    o.record_cache_bytes = 0;
    give_embedder(o);
    s.sqlite_rows_store = std::make_shared<cairn::SqliteArtifactStore>(bench_dir() + "/cairn.db", o);
  }
  return *s.sqlite_rows_store;
}

#if defined(CAIRN_HAS_POSTGRES)
PgFloor& pg_floor() {
  auto& s = subjects();
  if (!s.pg_floor) {
    s.pg_floor = std::make_unique<PgFloor>();
    const double before = s.pg_floor->pg().database_bytes();
    s.pg_floor_build =
        build_all([&](int i, Doc& d) { s.pg_floor->add(i, d, embed_text(d.embedded_text())); }, Timing::wall);
    s.pg_floor->pg().exec("CHECKPOINT");
    s.pg_floor_build.bytes = (s.pg_floor->pg().database_bytes() - before) / artifact_count();
  }
  return *s.pg_floor;
}

PgKeyedFloor& pg_keyed_floor() {
  auto& s = subjects();
  if (!s.pg_keyed_floor) {
    s.pg_keyed_floor = std::make_unique<PgKeyedFloor>();
    s.pg_keyed_floor_build =
        build_all([&](int i, Doc& d) { s.pg_keyed_floor->add(i, d, embed_text(d.embedded_text())); }, Timing::wall);
  }
  return *s.pg_keyed_floor;
}

cairn::PostgresArtifactStore& pg_store() {
  auto& s = subjects();
  if (!s.pg_store) {
    Pg admin(pg_bench_conninfo());
    const double before = admin.database_bytes();
    cairn::PostgresOptions o;
    give_embedder(o);
    s.pg_store = std::make_shared<cairn::PostgresArtifactStore>(pg_bench_conninfo(), o);
    s.pg_store_build =
        build_all([&](int, Doc& d) { benchmark::DoNotOptimize(s.pg_store->store(record_of(d))); }, Timing::wall);
    admin.exec("CHECKPOINT");
    s.pg_store_build.bytes = (admin.database_bytes() - before) / artifact_count();
  }
  return *s.pg_store;
}

// pg_store()'s database through a store object that keeps no records (as sqlite_rows_store()).
cairn::PostgresArtifactStore& pg_rows_store() {
  auto& s = subjects();
  if (!s.pg_rows_store) {
    pg_store();
    cairn::PostgresOptions o;
    o.record_cache_bytes = 0;
    give_embedder(o);
    s.pg_rows_store = std::make_shared<cairn::PostgresArtifactStore>(pg_bench_conninfo(), o);
  }
  return *s.pg_rows_store;
}
#endif

// ---- benchmarks --------------------------------------------------------------------------------------------------

void report_index(benchmark::State& state, const Build& b) {
  for (auto _ : state) state.SetIterationTime(b.seconds / artifact_count());
  state.counters["artifacts"] = artifact_count();
}
void report_bytes(benchmark::State& state, const Build& b) {
  for (auto _ : state) state.SetIterationTime(1e-9);
  state.counters["bytes_per_artifact"] = b.bytes;
  state.counters["artifacts"] = artifact_count();
}

void BM_W6IndexMem_Floor(benchmark::State& state) {
  mem_floor();
  report_index(state, subjects().mem_floor_build);
  state.counters["fingerprint"] = subjects().fingerprint;
}
void BM_W6IndexMem_Memory(benchmark::State& state) {
  mem_store();
  report_index(state, subjects().mem_store_build);
}
void BM_W6IndexSql_Floor(benchmark::State& state) {
  fts_floor();
  report_index(state, subjects().fts_floor_build);
}
void BM_W6IndexSql_Sqlite(benchmark::State& state) {
  sqlite_store();
  report_index(state, subjects().sqlite_store_build);
}
void BM_W6Bytes_Floor(benchmark::State& state) {
  mem_floor();
  report_bytes(state, subjects().mem_floor_build);
}
void BM_W6Bytes_Memory(benchmark::State& state) {
  mem_store();
  report_bytes(state, subjects().mem_store_build);
}
void BM_W6DiskSql_Floor(benchmark::State& state) {
  fts_floor();
  report_bytes(state, subjects().fts_floor_build);
}
void BM_W6DiskSql_Sqlite(benchmark::State& state) {
  sqlite_store();
  report_bytes(state, subjects().sqlite_store_build);
}

// Each iteration answers one query, timed alone, in whole passes over the 200 (KeepRunningBatch): a row's time is
// the mean over every query however slow the row is, so a row and its floor are means over the same queries. (Run
// one at a time until Google Benchmark's minimum time was filled, PostgreSQL's first-time word row at 100,000 in one
// tenant ran the first 37 queries and its floor the first 112, and their ratio compared different queries.)
template <class Body>
void each_query(benchmark::State& state, Body&& body, Timing timing = Timing::cpu) {
  const auto& all = queries();
  std::size_t k = 0;
  std::size_t found = 0;
  std::vector<double> times;  // of each query, for the median and the slowest beside the mean
  while (state.KeepRunningBatch(static_cast<benchmark::IterationCount>(all.size()))) {
    double seconds = 0;
    for (const auto& q : all) {
      const double t0 = now_seconds(timing);
      found += body(q);
      const double took = now_seconds(timing) - t0;
      seconds += took;
      times.push_back(took);
      ++k;
    }
    state.SetIterationTime(seconds);
  }
  state.counters["hits_per_query"] = static_cast<double>(found) / static_cast<double>(std::max<std::size_t>(1, k));
  if (!times.empty()) {
    std::sort(times.begin(), times.end());
    state.counters["p50_us"] = 1e6 * times[times.size() / 2];
    state.counters["max_us"] = 1e6 * times.back();
  }
}

cairn::SearchQuery words_query(const Query& q) {
  cairn::SearchQuery s;
  s.text = q.words;
  s.mode = cairn::SearchMode::text;
  s.filter.type = cairn::ArtifactType{q.type};
  s.limit = kLimit;
  return s;
}
cairn::SearchQuery similar_query(const Query& q) {
  cairn::SearchQuery s;
  s.vector = cairn::Embedding{kModel, q.vector};
  s.mode = cairn::SearchMode::similarity;
  s.limit = kLimit;
  s.exact = false;  // the default: exact answers (SearchQuery::ef 0), by the index's scan
  return s;
}
cairn::SearchQuery filtered_query(const Query& q, int below) {
  cairn::SearchQuery s = similar_query(q);
  s.filter.metadata.push_back({"/bucket", cairn::FieldOp::lt, below});
  return s;
}
cairn::SearchQuery hybrid_query(const Query& q) {
  cairn::SearchQuery s = similar_query(q);
  s.text = q.words;
  s.mode = cairn::SearchMode::hybrid;
  return s;
}
// Hybrid as a user types it: four words, any of them ("a OR b OR c OR d").
cairn::SearchQuery hybrid_or_query(const Query& q) {
  cairn::SearchQuery s = hybrid_query(q);
  s.text.clear();
  for (const auto& w : cairn::detail::words_of(q.any_words)) (s.text.empty() ? s.text : s.text += " OR ") += w;
  return s;
}

template <class Store>
bool skip_without_vectors(benchmark::State& state, const Store& store) {
  if (store.keeps_embeddings()) return false;
  state.SkipWithError("this store keeps no vectors yet (no embedder option): no similarity to measure");
  return true;
}

void BM_W6Words_Floor(benchmark::State& state) {
  auto& f = fts_floor();
  each_query(state, [&](const Query& q) {
    auto rows = f.words(q, kLimit);
    benchmark::DoNotOptimize(rows);
    return rows.size();
  });
}
// A store makes an index of a tenant at the tenant's first query of a kind (`make`): the SQL stores their process's
// vector index (docs/search.md, "The in-process index on SQL backends"), the in-memory store its word and vector
// indexes. That first query of each tenant is timed apart, untimed in the row, which measures what a process that
// has served the tenant before answers: `first_query_ms` is the mean of the tenants' first queries.
template <class Store>
void first_queries(benchmark::State& state, const Store& store, Timing timing,
                   cairn::SearchQuery (*make)(const Query&) = similar_query) {
  std::map<int, const Query*> first;
  for (const auto& q : queries()) first.emplace(q.tenant, &q);
  double seconds = 0;
  for (const auto& [tenant, q] : first) {
    const double t0 = now_seconds(timing);
    auto page = store.search(q->tenant_name, make(*q));
    benchmark::DoNotOptimize(page);
    seconds += now_seconds(timing) - t0;
  }
  state.counters["first_query_ms"] = 1000 * seconds / static_cast<double>(std::max<std::size_t>(1, first.size()));
}

template <class Store>
void words_cairn(benchmark::State& state, const Store& store, Timing timing = Timing::cpu, bool first_time = false) {
  // The in-memory store makes a tenant's word index at its first search by words: timed apart, as the similarity
  // rows' first queries are (counter `first_query_ms`). With `first_time` (PostgreSQL, which has no such index but
  // counts the documents of words it is asked for the first time), no query is asked before the row's one pass.
  static std::map<const void*, double> first_ms;
  if (!first_time && !first_ms.count(&store)) {
    first_queries(state, store, timing, words_query);
    first_ms[&store] = state.counters["first_query_ms"];
  }
  if (!first_time) state.counters["first_query_ms"] = first_ms[&store];
  each_query(
      state,
      [&](const Query& q) {
        auto page = store.search(q.tenant_name, words_query(q));
        benchmark::DoNotOptimize(page);
        return page.hits.size();
      },
      timing);
}
void BM_W6Words_Memory(benchmark::State& state) { words_cairn(state, mem_store()); }
void BM_W6Words_Sqlite(benchmark::State& state) { words_cairn(state, sqlite_store()); }

void BM_W6Similar_Floor(benchmark::State& state) {
  const auto& f = mem_floor();
  each_query(state, [&](const Query& q) {
    auto hits = f.similar(q.tenant, q.vector, kLimit);
    const Doc* first = hits.empty() ? nullptr : &f.doc(hits.front().index);
    benchmark::DoNotOptimize(first);
    return hits.size();
  });
}
void BM_W6Similar_Exact(benchmark::State& state) {
  const auto& f = mem_floor();
  each_query(state, [&](const Query& q) {
    auto hits = f.exact(q.tenant, q.vector, kLimit);
    benchmark::DoNotOptimize(hits);
    return hits.size();
  });
}
template <class Store>
void similar_cairn(benchmark::State& state, const Store& store, Timing timing = Timing::cpu) {
  if (skip_without_vectors(state, store)) return;
  static std::map<const void*, double> first_ms;  // once per store: a later run of the row finds the tenants built
  if (!first_ms.count(&store)) {
    first_queries(state, store, timing);
    first_ms[&store] = state.counters["first_query_ms"];
  }
  state.counters["first_query_ms"] = first_ms[&store];
  each_query(
      state,
      [&](const Query& q) {
        auto page = store.search(q.tenant_name, similar_query(q));
        benchmark::DoNotOptimize(page);
        return page.hits.size();
      },
      timing);
}
void BM_W6Similar_Memory(benchmark::State& state) { similar_cairn(state, mem_store()); }

// The library alone at the recall cairn promises: hnswlib with the least ef of 64, 128, ... 8,192 whose recall@10
// over the 200 queries is at least 0.95 (found once, outside the clock; counters `ef` and `recall_at_10`).
template <class Answer>
double recall_of(Answer&& answer);
std::size_t matched_ef(double* recall_at_10) {
  static std::pair<std::size_t, double> found = [] {
    const auto& f = mem_floor();
    std::size_t ef = kEf;
    double r = 0;
    for (; ef <= 8192; ef *= 2) {
      r = recall_of([&](const Query& q) {
        std::vector<int> out;
        for (const auto& h : f.similar_at(q.tenant, q.vector, kLimit, ef)) out.push_back(h.index);
        return out;
      });
      if (r >= 0.95) break;
    }
    return std::pair{std::min<std::size_t>(ef, 8192), r};
  }();
  *recall_at_10 = found.second;
  return found.first;
}
void BM_W6SimilarMatched_Floor(benchmark::State& state) {
  const auto& f = mem_floor();
  double r = 0;
  const std::size_t ef = matched_ef(&r);
  each_query(state, [&](const Query& q) {
    auto hits = f.similar_at(q.tenant, q.vector, kLimit, ef);
    const Doc* first = hits.empty() ? nullptr : &f.doc(hits.front().index);
    benchmark::DoNotOptimize(first);
    return hits.size();
  });
  state.counters["ef"] = static_cast<double>(ef);
  state.counters["floor_recall_at_10"] = r;
}
void BM_W6SimilarMatched_Memory(benchmark::State& state) { similar_cairn(state, mem_store()); }
// A store in a file: the library at that recall and a raw sqlite3 read of the 10 rows.
void BM_W6SimilarMatchedSql_Floor(benchmark::State& state) {
  auto& fts = fts_floor();
  const auto& mem = mem_floor();
  double r = 0;
  const std::size_t ef = matched_ef(&r);
  each_query(state, [&](const Query& q) {
    std::vector<Row> rows;
    for (const auto& h : mem.similar_at(q.tenant, q.vector, kLimit, ef)) rows.push_back(fts.row(h.index, h.score));
    benchmark::DoNotOptimize(rows);
    return rows.size();
  });
  state.counters["ef"] = static_cast<double>(ef);
}
void BM_W6SimilarMatchedSql_Sqlite(benchmark::State& state) { similar_cairn(state, sqlite_store()); }

// Exact similarity (SearchQuery::exact) against a plain float scan of the tenant's vectors.
void BM_W6SimilarExact_Floor(benchmark::State& state) { BM_W6Similar_Exact(state); }
template <class Store>
void exact_cairn(benchmark::State& state, const Store& store, Timing timing = Timing::cpu) {
  if (skip_without_vectors(state, store)) return;
  each_query(
      state,
      [&](const Query& q) {
        cairn::SearchQuery s = similar_query(q);
        s.exact = true;
        auto page = store.search(q.tenant_name, s);
        benchmark::DoNotOptimize(page);
        return page.hits.size();
      },
      timing);
}
void BM_W6SimilarExact_Memory(benchmark::State& state) { exact_cairn(state, mem_store()); }
void BM_W6SimilarExact_Sqlite(benchmark::State& state) { exact_cairn(state, sqlite_store()); }

// Filtered similarity, `bucket < p` (the row's argument: p % of the tenant passes): cairn's default against a
// filtered float scan (the filter on a plain int first, then the dot products of what passes); the SQL stores
// against that scan and a raw read of the 10 rows. `recall_at_10` (tie-aware) against the filtered exact top 10.
template <class Answer>
double filtered_recall(int below, Answer&& answer) {
  const auto& f = mem_floor();
  double found = 0, wanted = 0;
  for (const auto& q : queries()) {
    const auto truth = f.exact(q.tenant, q.vector, kLimit, below);
    if (truth.empty()) continue;
    const double tenth = truth.back().score;
    for (int i : answer(q)) {
      const bool in_truth = std::any_of(truth.begin(), truth.end(), [i](const Hit& h) { return h.index == i; });
      found += bucket_of(i) < below && (in_truth || f.similarity(i, q.vector) >= tenth - 1e-5) ? 1 : 0;
    }
    wanted += static_cast<double>(truth.size());
  }
  return wanted > 0 ? found / wanted : 1.0;
}
void BM_W6Filtered_Floor(benchmark::State& state) {
  const auto& f = mem_floor();
  const int below = static_cast<int>(state.range(0));
  each_query(state, [&](const Query& q) {
    auto hits = f.exact(q.tenant, q.vector, kLimit, below);
    const Doc* first = hits.empty() ? nullptr : &f.doc(hits.front().index);
    benchmark::DoNotOptimize(first);
    return hits.size();
  });
}
template <class Store>
void filtered_cairn(benchmark::State& state, const Store& store, Timing timing = Timing::cpu) {
  if (skip_without_vectors(state, store)) return;
  const int below = static_cast<int>(state.range(0));
  // A SQL store's process builds its index of a tenant at the tenant's first similarity query: done here, untimed
  // (similar_cairn's first_query_ms reports it).
  std::set<int> warm;
  for (const auto& q : queries()) {
    if (warm.insert(q.tenant).second) benchmark::DoNotOptimize(store.search(q.tenant_name, similar_query(q)));
  }
  each_query(
      state,
      [&](const Query& q) {
        auto page = store.search(q.tenant_name, filtered_query(q, below));
        benchmark::DoNotOptimize(page);
        return page.hits.size();
      },
      timing);
  state.counters["recall_at_10"] = filtered_recall(below, [&](const Query& q) {
    std::vector<int> out;
    for (const auto& h : store.search(q.tenant_name, filtered_query(q, below)).hits) {
      out.push_back(index_of(h.record->id()));
    }
    return out;
  });
}
void BM_W6Filtered_Memory(benchmark::State& state) { filtered_cairn(state, mem_store()); }
void BM_W6FilteredSql_Floor(benchmark::State& state) {
  auto& fts = fts_floor();
  const auto& mem = mem_floor();
  const int below = static_cast<int>(state.range(0));
  each_query(state, [&](const Query& q) {
    std::vector<Row> rows;
    for (const auto& h : mem.exact(q.tenant, q.vector, kLimit, below)) rows.push_back(fts.row(h.index, h.score));
    benchmark::DoNotOptimize(rows);
    return rows.size();
  });
}
void BM_W6FilteredSql_Sqlite(benchmark::State& state) { filtered_cairn(state, sqlite_store()); }
void BM_W6FilteredSql_SqliteRows(benchmark::State& state) { filtered_cairn(state, sqlite_rows_store()); }
// A store in a file answers with records it reads from the file: its floor is the library's top 10 and a raw
// sqlite3 read of those 10 rows (the ratio to the library alone is in docs/search.md too).
void BM_W6SimilarSql_Floor(benchmark::State& state) {
  auto& fts = fts_floor();
  const auto& mem = mem_floor();
  each_query(state, [&](const Query& q) {
    std::vector<Row> rows;
    for (const auto& h : mem.similar(q.tenant, q.vector, kLimit)) rows.push_back(fts.row(h.index, h.score));
    benchmark::DoNotOptimize(rows);
    return rows.size();
  });
}
void BM_W6SimilarSql_Sqlite(benchmark::State& state) { similar_cairn(state, sqlite_store()); }
void BM_W6SimilarSql_SqliteRows(benchmark::State& state) { similar_cairn(state, sqlite_rows_store()); }

// A restarted worker: `open()` makes a new store object on the same database; its first similarity query builds the
// process's index from the rows (docs/search.md, "The in-process index on SQL backends").
template <class Open>
void restart_cairn(benchmark::State& state, Open&& open) {
  const Query& q = queries().front();
  std::vector<double> ms;
  for (auto _ : state) {
    for (int round = 0; round < 3; ++round) {
      auto store = open();
      const double t0 = now_seconds(Timing::wall);
      auto page = store->search(q.tenant_name, similar_query(q));
      benchmark::DoNotOptimize(page);
      ms.push_back(1000 * (now_seconds(Timing::wall) - t0));
    }
    state.SetIterationTime(ms.back() / 1000);
  }
  std::sort(ms.begin(), ms.end());
  state.counters["first_query_ms"] = ms[ms.size() / 2];
  state.counters["versions_in_tenant"] = static_cast<double>(artifact_count() / kTenants);
}
void BM_W6Restart_Sqlite(benchmark::State& state) {
  sqlite_store();  // the database, built once
  restart_cairn(state, [] {
    cairn::SqliteOptions o;
    o.synchronous = cairn::SqliteOptions::Synchronous::normal;
    give_embedder(o);
    return std::make_shared<cairn::SqliteArtifactStore>(bench_dir() + "/cairn.db", o);
  });
}

void hybrid_floor(benchmark::State& state, bool any) {
  auto& fts = fts_floor();
  const auto& mem = mem_floor();
  each_query(state, [&](const Query& q) {
    const auto fused = fuse(fts.ranked(q, kFused, any), mem.similar(q.tenant, q.vector, kFused), kLimit);
    std::vector<Row> rows;
    for (const auto& h : fused) rows.push_back(fts.row(h.index, h.score));
    benchmark::DoNotOptimize(rows);
    return rows.size();
  });
}
void BM_W6Hybrid_Floor(benchmark::State& state) { hybrid_floor(state, false); }
void BM_W6HybridOr_Floor(benchmark::State& state) { hybrid_floor(state, true); }
template <class Store>
void hybrid_cairn(benchmark::State& state, const Store& store, Timing timing = Timing::cpu, bool any = false) {
  if (skip_without_vectors(state, store)) return;
  // Every query asked once, untimed: each tenant's first query makes its indexes (timed by the words and similarity
  // rows), and the PostgreSQL store keeps the document counts of a query's words (asked for the first time: the
  // W6WordsPg row), so hybrid and its words half (W6HybridWords) are both timed as asked again.
  for (const auto& q : queries()) {
    benchmark::DoNotOptimize(store.search(q.tenant_name, any ? hybrid_or_query(q) : hybrid_query(q)));
  }
  each_query(
      state,
      [&](const Query& q) {
        auto page = store.search(q.tenant_name, any ? hybrid_or_query(q) : hybrid_query(q));
        benchmark::DoNotOptimize(page);
        return page.hits.size();
      },
      timing);
}
// The words half of a hybrid query asked alone: its text, its filters (none), mode text. With W6Similar, the sum a
// hybrid row is held to ("asked apart"; W6Words has a type filter the hybrid query has not).
template <class Store>
void hybrid_words_cairn(benchmark::State& state, const Store& store, Timing timing = Timing::cpu, bool any = false) {
  const auto words_half = [any](const Query& q) {
    cairn::SearchQuery s = any ? hybrid_or_query(q) : hybrid_query(q);
    s.vector.reset();
    s.mode = cairn::SearchMode::text;
    return s;
  };
  for (const auto& q : queries())
    benchmark::DoNotOptimize(store.search(q.tenant_name, words_half(q)));  // as hybrid_cairn
  each_query(
      state,
      [&](const Query& q) {
        auto page = store.search(q.tenant_name, words_half(q));
        benchmark::DoNotOptimize(page);
        return page.hits.size();
      },
      timing);
}
void BM_W6HybridWords_Memory(benchmark::State& state) { hybrid_words_cairn(state, mem_store()); }
void BM_W6HybridWords_Sqlite(benchmark::State& state) { hybrid_words_cairn(state, sqlite_store()); }
void BM_W6HybridOrWords_Memory(benchmark::State& state) { hybrid_words_cairn(state, mem_store(), Timing::cpu, true); }
void BM_W6HybridOrWords_Sqlite(benchmark::State& state) {
  hybrid_words_cairn(state, sqlite_store(), Timing::cpu, true);
}
void BM_W6Hybrid_Memory(benchmark::State& state) { hybrid_cairn(state, mem_store()); }
void BM_W6Hybrid_Sqlite(benchmark::State& state) { hybrid_cairn(state, sqlite_store()); }
void BM_W6HybridOr_Memory(benchmark::State& state) { hybrid_cairn(state, mem_store(), Timing::cpu, true); }
void BM_W6HybridOr_Sqlite(benchmark::State& state) { hybrid_cairn(state, sqlite_store(), Timing::cpu, true); }

// recall@10 against the exact top 10 over all queries (the truth: MemFloor::exact, every vector scanned).
template <class Answer>
double recall_of(Answer&& answer) {
  const auto& f = mem_floor();
  double found = 0, wanted = 0;
  for (const auto& q : queries()) {
    const auto truth = f.exact(q.tenant, q.vector, kLimit);
    const double tenth = truth.back().score;
    for (int i : answer(q)) {
      const bool in_truth = std::any_of(truth.begin(), truth.end(), [i](const Hit& h) { return h.index == i; });
      found += (in_truth || f.similarity(i, q.vector) >= tenth - 1e-5) ? 1 : 0;
    }
    wanted += static_cast<double>(truth.size());
  }
  return found / wanted;
}
template <class Answer>
void recall(benchmark::State& state, Answer&& answer) {
  double r = 0;
  for (auto _ : state) r = recall_of(answer);
  state.counters["recall_at_10"] = r;
}
std::vector<int> indexes_of(const cairn::SearchPage& page) {
  std::vector<int> out;
  for (const auto& h : page.hits) out.push_back(index_of(h.record->id()));
  return out;
}
void BM_W6Recall_Floor(benchmark::State& state) {
  const auto& f = mem_floor();
  recall(state, [&](const Query& q) {
    std::vector<int> out;
    for (const auto& h : f.exact(q.tenant, q.vector, kLimit)) out.push_back(h.index);
    return out;
  });
}
void BM_W6Recall_Hnswlib(benchmark::State& state) {
  const auto& f = mem_floor();
  recall(state, [&](const Query& q) {
    std::vector<int> out;
    for (const auto& h : f.similar(q.tenant, q.vector, kLimit)) out.push_back(h.index);
    return out;
  });
}
template <class Store>
void recall_cairn(benchmark::State& state, const Store& store) {
  if (skip_without_vectors(state, store)) return;
  recall(state, [&](const Query& q) { return indexes_of(store.search(q.tenant_name, similar_query(q))); });
}
void BM_W6Recall_Memory(benchmark::State& state) { recall_cairn(state, mem_store()); }
void BM_W6Recall_Sqlite(benchmark::State& state) { recall_cairn(state, sqlite_store()); }

#if defined(CAIRN_HAS_POSTGRES)
void BM_W6IndexPg_Floor(benchmark::State& state) {
  pg_floor();
  report_index(state, subjects().pg_floor_build);
}
void BM_W6IndexPg_Postgres(benchmark::State& state) {
  pg_store();
  report_index(state, subjects().pg_store_build);
}
void BM_W6IndexPgKeyed_Floor(benchmark::State& state) {
  pg_keyed_floor();
  report_index(state, subjects().pg_keyed_floor_build);
}
void BM_W6IndexPgKeyed_Postgres(benchmark::State& state) { BM_W6IndexPg_Postgres(state); }
void BM_W6DiskPg_Floor(benchmark::State& state) {
  pg_floor();
  report_bytes(state, subjects().pg_floor_build);
}
void BM_W6DiskPg_Postgres(benchmark::State& state) {
  pg_store();
  report_bytes(state, subjects().pg_store_build);
}
void BM_W6WordsPg_Floor(benchmark::State& state) {
  auto& f = pg_floor();
  each_query(
      state,
      [&](const Query& q) {
        auto rows = f.words(q, kLimit);
        benchmark::DoNotOptimize(rows);
        return rows.size();
      },
      Timing::wall);
}
// Each query asked for the first time: one pass over the 200 (registered with 200 iterations), none asked before.
void BM_W6WordsPg_Postgres(benchmark::State& state) { words_cairn(state, pg_store(), Timing::wall, true); }
// The same queries each asked once before, untimed (a next page, a retry, an agent asking again): the store has the
// words' document counts of an unchanged tenant, and the server counts nothing.
void BM_W6WordsPgAgain_Postgres(benchmark::State& state) {
  for (const auto& q : queries()) benchmark::DoNotOptimize(pg_store().search(q.tenant_name, words_query(q)));
  words_cairn(state, pg_store(), Timing::wall);
}
// A store whose rows are on a server answers with records it reads from there: its floor is the library's top 10
// and one raw libpq round trip reading those 10 rows (wall time, as cairn's PostgreSQL rows; the ratio to
// BM_W6Similar_Floor, hnswlib alone in CPU time, is in docs/search.md too).
void BM_W6SimilarPg_Floor(benchmark::State& state) {
  auto& pg = pg_floor();
  const auto& mem = mem_floor();
  each_query(
      state,
      [&](const Query& q) {
        auto rows = pg.rows(mem.similar(q.tenant, q.vector, kLimit));
        benchmark::DoNotOptimize(rows);
        return rows.size();
      },
      Timing::wall);
}
void BM_W6SimilarPg_Postgres(benchmark::State& state) { similar_cairn(state, pg_store(), Timing::wall); }
// The least any answer from the server costs: one prepared statement that reads nothing (`SELECT $1`), on the bench's
// database, in wall time. A store that answers from its server cannot be faster than this; docs/search.md compares
// it with the in-process peers' times.
void BM_W6RoundTripPg_Floor(benchmark::State& state) {
  auto& pg = pg_floor().pg();
  static const bool prepared = (pg.prepare("round_trip", "SELECT $1::integer"), true);
  benchmark::DoNotOptimize(prepared);
  each_query(
      state,
      [&](const Query& q) {
        const std::string n = std::to_string(q.tenant);
        PGresult* r = pg.call("round_trip", {n.c_str()});
        const std::size_t got = static_cast<std::size_t>(PQntuples(r));
        PQclear(r);
        return got;
      },
      Timing::wall);
}
void BM_W6SimilarPg_PostgresRows(benchmark::State& state) { similar_cairn(state, pg_rows_store(), Timing::wall); }
void hybrid_pg_floor(benchmark::State& state, bool any) {
  auto& pg = pg_floor();
  const auto& mem = mem_floor();
  each_query(
      state,
      [&](const Query& q) {
        auto rows = pg.rows(fuse(pg.ranked(q, kFused, any), mem.similar(q.tenant, q.vector, kFused), kLimit));
        benchmark::DoNotOptimize(rows);
        return rows.size();
      },
      Timing::wall);
}
void BM_W6HybridPg_Floor(benchmark::State& state) { hybrid_pg_floor(state, false); }
void BM_W6HybridPg_Postgres(benchmark::State& state) { hybrid_cairn(state, pg_store(), Timing::wall); }
void BM_W6HybridOrPg_Floor(benchmark::State& state) { hybrid_pg_floor(state, true); }
void BM_W6HybridOrPg_Postgres(benchmark::State& state) { hybrid_cairn(state, pg_store(), Timing::wall, true); }
void BM_W6HybridWordsPg_Postgres(benchmark::State& state) { hybrid_words_cairn(state, pg_store(), Timing::wall); }
void BM_W6HybridOrWordsPg_Postgres(benchmark::State& state) {
  hybrid_words_cairn(state, pg_store(), Timing::wall, true);
}
void BM_W6Recall_Postgres(benchmark::State& state) { recall_cairn(state, pg_store()); }
void BM_W6SimilarMatchedPg_Floor(benchmark::State& state) {
  auto& pg = pg_floor();
  const auto& mem = mem_floor();
  double r = 0;
  const std::size_t ef = matched_ef(&r);
  each_query(
      state,
      [&](const Query& q) {
        auto rows = pg.rows(mem.similar_at(q.tenant, q.vector, kLimit, ef));
        benchmark::DoNotOptimize(rows);
        return rows.size();
      },
      Timing::wall);
  state.counters["ef"] = static_cast<double>(ef);
}
void BM_W6SimilarMatchedPg_Postgres(benchmark::State& state) { similar_cairn(state, pg_store(), Timing::wall); }
void BM_W6SimilarExactPg_Floor(benchmark::State& state) { BM_W6Similar_Exact(state); }
void BM_W6SimilarExactPg_Postgres(benchmark::State& state) { exact_cairn(state, pg_store(), Timing::wall); }
void BM_W6FilteredPg_Floor(benchmark::State& state) {
  auto& pg = pg_floor();
  const auto& mem = mem_floor();
  const int below = static_cast<int>(state.range(0));
  each_query(
      state,
      [&](const Query& q) {
        auto rows = pg.rows(mem.exact(q.tenant, q.vector, kLimit, below));
        benchmark::DoNotOptimize(rows);
        return rows.size();
      },
      Timing::wall);
}
void BM_W6FilteredPg_Postgres(benchmark::State& state) { filtered_cairn(state, pg_store(), Timing::wall); }
void BM_W6FilteredPg_PostgresRows(benchmark::State& state) { filtered_cairn(state, pg_rows_store(), Timing::wall); }
void BM_W6RestartPg_Postgres(benchmark::State& state) {
  pg_store();
  restart_cairn(state, [] {
    cairn::PostgresOptions o;
    give_embedder(o);
    return std::make_shared<cairn::PostgresArtifactStore>(pg_bench_conninfo(), o);
  });
}
#endif

// One index of the first n artifacts' vectors (n from the row's argument): the heap it keeps, per version.
template <class Index>
void index_bytes(benchmark::State& state, const std::function<std::unique_ptr<Index>(std::size_t)>& make,
                 const std::function<void(Index&, std::size_t, const std::vector<float>&)>& add) {
  const auto n = static_cast<std::size_t>(state.range(0));
  std::vector<std::vector<float>> vectors;
  for (std::size_t i = 0; i < n; ++i) vectors.push_back(embed_text(doc_of(static_cast<int>(i)).embedded_text()));
  double bytes = 0;
  for (auto _ : state) {
    const std::size_t heap0 = heap_in_use();
    auto index = make(n);
    for (std::size_t i = 0; i < n; ++i) add(*index, i, vectors[i]);
    bytes = static_cast<double>(heap_in_use() - heap0);
    state.SetIterationTime(1e-9);
  }
  state.counters["bytes_per_artifact"] = bytes / static_cast<double>(n);  // one version of each artifact
  state.counters["bytes_per_index"] = bytes;
}
void BM_W6IndexBytes_Floor(benchmark::State& state) {
  hnswlib::InnerProductSpace space(kDim);
  using Graph = hnswlib::HierarchicalNSW<float>;
  index_bytes<Graph>(
      state, [&space](std::size_t n) { return std::make_unique<Graph>(&space, n, kM, kEfConstruction); },
      [](Graph& g, std::size_t i, const std::vector<float>& v) { g.addPoint(v.data(), i); });
}
void BM_W6IndexBytes_Memory(benchmark::State& state) {
  using Index = cairn::detail::VectorIndex;
  index_bytes<Index>(
      state, [](std::size_t) { return std::make_unique<Index>(kDim); },
      [](Index& index, std::size_t i, const std::vector<float>& v) { index.add("a" + std::to_string(i), 1, v); });
}

// ---- W6Clustered: a second vector set, clustered as an embedding model's vectors are ------------------------------
// W6's hash vectors are near-uniform on the sphere, the hardest case for a graph. A model's vectors are not: they share
// a mean direction and gather by topic. Here each tenant has one topic per 50 of its artifacts; an artifact's vector is
// normalize(0.5 m + c + 0.6 n) (m: the shared direction, c: its topic's, n: its own noise, each a unit vector), so two
// of a topic have cosine about 0.8 and two of different topics about 0.15. A query is a new member of the topic of one
// of the tenant's artifacts. The layout is the corpus's (CAIRN_W6_TENANTS). Rows: the in-memory store's default
// (exact) and SearchQuery::ef 64 (the graph, where the tenant holds 2,048 versions or more) against a plain float
// scan (the truth) and hnswlib alone at ef 64; counter `recall_at_10`, tie-aware as W6Recall's.
class ClusteredSet {
 public:
  static constexpr std::size_t kPerTopic = 50;
  ClusteredSet() : space_(kDim) {
    const auto per_tenant = static_cast<std::size_t>(artifact_count() / kTenants);
    const std::vector<float> shared = unit(Rng(40, 0));
    const std::size_t topics = std::max<std::size_t>(1, per_tenant / kPerTopic);
    tenants_.resize(static_cast<std::size_t>(kTenants));
    for (int t = 0; t < kTenants; ++t) {
      Tenant& x = tenants_[static_cast<std::size_t>(t)];
      x.name = "c" + std::to_string(t);
      for (std::size_t c = 0; c < topics; ++c) {
        x.topics.push_back(unit(Rng(41, static_cast<std::uint32_t>(t * 100000 + static_cast<int>(c)))));
      }
      x.index = std::make_unique<hnswlib::HierarchicalNSW<float>>(&space_, per_tenant, kM, kEfConstruction);
      x.index->setEf(kEf);
      for (std::size_t i = 0; i < per_tenant; ++i) {
        const auto n = static_cast<std::uint32_t>(t * 1000000 + static_cast<int>(i));
        x.vectors.push_back(member(shared, x.topics[i % topics], Rng(42, n)));
        x.index->addPoint(x.vectors.back().data(), i);
        const auto r = cairn::ArtifactRecord::builder()
                           .id("v" + std::to_string(i))
                           .tenant_id(x.name)
                           .type("text")
                           .title("clustered")
                           .value("a clustered vector")
                           .build();
        benchmark::DoNotOptimize(store_.store_embedded(*r, cairn::Embedding{kModel, x.vectors.back()}));
      }
    }
    for (int q = 0; q < kQueries; ++q) {
      Rng r(43, static_cast<std::uint32_t>(q));
      const int t = q % kTenants;
      const Tenant& x = tenants_[static_cast<std::size_t>(t)];
      queries_.push_back({t, member(shared, x.topics[r.next() % x.topics.size()], r)});
    }
  }
  struct Query {
    int tenant;
    std::vector<float> vector;
  };
  const std::vector<Query>& queries() const { return queries_; }
  const std::string& tenant_name(int t) const { return tenants_[static_cast<std::size_t>(t)].name; }
  const cairn::InMemoryArtifactStore& store() const { return store_; }
  std::vector<Hit> exact(const Query& q, std::size_t k) const {
    const Tenant& x = tenants_[static_cast<std::size_t>(q.tenant)];
    std::vector<Hit> all;
    all.reserve(x.vectors.size());
    for (std::size_t i = 0; i < x.vectors.size(); ++i) {
      float dot = 0;
      for (std::size_t d = 0; d < kDim; ++d) dot += x.vectors[i][d] * q.vector[d];
      all.push_back({static_cast<int>(i), static_cast<double>(dot)});
    }
    k = std::min(k, all.size());
    std::partial_sort(
        all.begin(), all.begin() + static_cast<std::ptrdiff_t>(k), all.end(),
        [](const Hit& a, const Hit& b) { return a.score > b.score || (a.score == b.score && a.index < b.index); });
    all.resize(k);
    return all;
  }
  std::vector<Hit> similar(const Query& q, std::size_t k) const {
    auto heap = tenants_[static_cast<std::size_t>(q.tenant)].index->searchKnn(q.vector.data(), k);
    std::vector<Hit> out(heap.size());
    for (std::size_t n = heap.size(); n-- > 0; heap.pop()) {
      out[n] = {static_cast<int>(heap.top().second), 1.0 - static_cast<double>(heap.top().first)};
    }
    return out;
  }
  double similarity(const Query& q, int i) const {
    const auto& v = tenants_[static_cast<std::size_t>(q.tenant)].vectors[static_cast<std::size_t>(i)];
    double dot = 0;
    for (std::size_t d = 0; d < kDim; ++d) dot += static_cast<double>(v[d]) * q.vector[d];
    return dot;
  }

 private:
  struct Tenant {
    std::string name;
    std::vector<std::vector<float>> topics, vectors;
    std::unique_ptr<hnswlib::HierarchicalNSW<float>> index;
  };
  static std::vector<float> unit(Rng r) {  // a direction drawn evenly (Gaussian components: four uniforms summed)
    std::vector<float> v(kDim);
    double squares = 0;
    for (auto& x : v) {
      double g = -2.0;
      for (int k = 0; k < 4; ++k) g += r.next() / 4294967296.0;
      x = static_cast<float>(g);
      squares += g * g;
    }
    for (auto& x : v) x = static_cast<float>(x / std::sqrt(squares));
    return v;
  }
  static std::vector<float> member(const std::vector<float>& shared, const std::vector<float>& topic, Rng r) {
    const std::vector<float> noise = unit(r);
    std::vector<float> v(kDim);
    double squares = 0;
    for (std::size_t d = 0; d < kDim; ++d) {
      v[d] = 0.5f * shared[d] + topic[d] + 0.6f * noise[d];
      squares += static_cast<double>(v[d]) * v[d];
    }
    for (auto& x : v) x = static_cast<float>(x / std::sqrt(squares));
    return v;
  }
  hnswlib::InnerProductSpace space_;
  std::vector<Tenant> tenants_;
  std::vector<Query> queries_;
  cairn::InMemoryArtifactStore store_;
};
const ClusteredSet& clustered() {
  static const ClusteredSet set;
  return set;
}
// Times `answer` over the clustered queries, in whole passes, and reports its recall@10 against the plain scan's top
// 10.
template <class Answer>
void clustered_row(benchmark::State& state, Answer&& answer) {
  const auto& set = clustered();
  for (const auto& q : set.queries()) benchmark::DoNotOptimize(answer(q));  // each tenant's index made, untimed
  while (state.KeepRunningBatch(static_cast<benchmark::IterationCount>(set.queries().size()))) {  // whole passes
    double seconds = 0;
    for (const auto& q : set.queries()) {
      const double t0 = now_seconds(Timing::cpu);
      auto hits = answer(q);
      benchmark::DoNotOptimize(hits);
      seconds += now_seconds(Timing::cpu) - t0;
    }
    state.SetIterationTime(seconds);
  }
  double found = 0, wanted = 0;
  for (const auto& q : set.queries()) {
    const auto truth = set.exact(q, kLimit);
    const double tenth = truth.back().score;
    for (int i : answer(q)) {
      const bool in_truth = std::any_of(truth.begin(), truth.end(), [i](const Hit& h) { return h.index == i; });
      found += in_truth || set.similarity(q, i) >= tenth - 1e-5 ? 1 : 0;
    }
    wanted += static_cast<double>(truth.size());
  }
  state.counters["recall_at_10"] = found / wanted;
}
std::vector<int> clustered_indexes(const std::vector<Hit>& hits) {
  std::vector<int> out;
  for (const auto& h : hits) out.push_back(h.index);
  return out;
}
void BM_W6Clustered_Floor(benchmark::State& state) {
  clustered_row(state, [](const ClusteredSet::Query& q) { return clustered_indexes(clustered().exact(q, kLimit)); });
}
void BM_W6Clustered_Hnswlib(benchmark::State& state) {
  clustered_row(state, [](const ClusteredSet::Query& q) { return clustered_indexes(clustered().similar(q, kLimit)); });
}
void clustered_cairn(benchmark::State& state, std::size_t ef) {
  clustered_row(state, [ef](const ClusteredSet::Query& q) {
    cairn::SearchQuery s;
    s.vector = cairn::Embedding{kModel, q.vector};
    s.mode = cairn::SearchMode::similarity;
    s.limit = kLimit;
    s.ef = ef;
    std::vector<int> out;
    for (const auto& h : clustered().store().search(clustered().tenant_name(q.tenant), s).hits) {
      out.push_back(std::stoi(h.record->id().substr(1)));
    }
    return out;
  });
}
void BM_W6Clustered_Memory(benchmark::State& state) { clustered_cairn(state, 0); }
void BM_W6Clustered_MemoryEf(benchmark::State& state) { clustered_cairn(state, kEf); }

const bool registered = [] {
  const auto index = [](const char* name, void (*f)(benchmark::State&)) {
    benchmark::RegisterBenchmark(name, f)->Iterations(1)->UseManualTime()->Unit(benchmark::kMicrosecond);
  };
  const auto bytes = [](const char* name, void (*f)(benchmark::State&)) {
    benchmark::RegisterBenchmark(name, f)->Iterations(1)->UseManualTime();
  };
  const auto query = [](const char* name, void (*f)(benchmark::State&)) {
    benchmark::RegisterBenchmark(name, f)->UseManualTime()->Unit(benchmark::kMicrosecond);
  };
  const auto once = [](const char* name, void (*f)(benchmark::State&)) {
    benchmark::RegisterBenchmark(name, f)->Iterations(1)->UseRealTime()->Unit(benchmark::kMillisecond);
  };
  index("BM_W6IndexMem_Floor", BM_W6IndexMem_Floor);
  index("BM_W6IndexMem_Memory", BM_W6IndexMem_Memory);
  index("BM_W6IndexSql_Floor", BM_W6IndexSql_Floor);
  index("BM_W6IndexSql_Sqlite", BM_W6IndexSql_Sqlite);
  bytes("BM_W6Bytes_Floor", BM_W6Bytes_Floor);
  bytes("BM_W6Bytes_Memory", BM_W6Bytes_Memory);
  for (const auto& [name, f] : {std::pair{"BM_W6IndexBytes_Floor", BM_W6IndexBytes_Floor},
                                std::pair{"BM_W6IndexBytes_Memory", BM_W6IndexBytes_Memory}}) {
    benchmark::RegisterBenchmark(name, f)->Iterations(1)->UseManualTime()->Arg(1)->Arg(1000)->Arg(4000)->Arg(8000);
  }
  bytes("BM_W6DiskSql_Floor", BM_W6DiskSql_Floor);
  bytes("BM_W6DiskSql_Sqlite", BM_W6DiskSql_Sqlite);
  query("BM_W6Words_Floor", BM_W6Words_Floor);
  query("BM_W6Words_Memory", BM_W6Words_Memory);
  query("BM_W6Words_Sqlite", BM_W6Words_Sqlite);
  query("BM_W6Similar_Floor", BM_W6Similar_Floor);
  query("BM_W6Similar_Exact", BM_W6Similar_Exact);
  query("BM_W6Similar_Memory", BM_W6Similar_Memory);
  query("BM_W6SimilarSql_Floor", BM_W6SimilarSql_Floor);
  query("BM_W6SimilarSql_Sqlite", BM_W6SimilarSql_Sqlite);
  query("BM_W6SimilarSql_SqliteRows", BM_W6SimilarSql_SqliteRows);
  query("BM_W6SimilarMatched_Floor", BM_W6SimilarMatched_Floor);
  query("BM_W6SimilarMatched_Memory", BM_W6SimilarMatched_Memory);
  query("BM_W6SimilarMatchedSql_Floor", BM_W6SimilarMatchedSql_Floor);
  query("BM_W6SimilarMatchedSql_Sqlite", BM_W6SimilarMatchedSql_Sqlite);
  query("BM_W6SimilarExact_Floor", BM_W6SimilarExact_Floor);
  query("BM_W6SimilarExact_Memory", BM_W6SimilarExact_Memory);
  query("BM_W6SimilarExact_Sqlite", BM_W6SimilarExact_Sqlite);
  const auto filtered = [](const char* name, void (*f)(benchmark::State&)) {
    benchmark::RegisterBenchmark(name, f)->UseManualTime()->Unit(benchmark::kMicrosecond)->Arg(1)->Arg(10)->Arg(50);
  };
  filtered("BM_W6Filtered_Floor", BM_W6Filtered_Floor);
  filtered("BM_W6Filtered_Memory", BM_W6Filtered_Memory);
  filtered("BM_W6FilteredSql_Floor", BM_W6FilteredSql_Floor);
  filtered("BM_W6FilteredSql_Sqlite", BM_W6FilteredSql_Sqlite);
  filtered("BM_W6FilteredSql_SqliteRows", BM_W6FilteredSql_SqliteRows);
  query("BM_W6Hybrid_Floor", BM_W6Hybrid_Floor);
  query("BM_W6Hybrid_Memory", BM_W6Hybrid_Memory);
  query("BM_W6Hybrid_Sqlite", BM_W6Hybrid_Sqlite);
  query("BM_W6HybridOr_Floor", BM_W6HybridOr_Floor);
  query("BM_W6HybridOr_Memory", BM_W6HybridOr_Memory);
  query("BM_W6HybridOr_Sqlite", BM_W6HybridOr_Sqlite);
  query("BM_W6HybridWords_Memory", BM_W6HybridWords_Memory);
  query("BM_W6HybridWords_Sqlite", BM_W6HybridWords_Sqlite);
  query("BM_W6HybridOrWords_Memory", BM_W6HybridOrWords_Memory);
  query("BM_W6HybridOrWords_Sqlite", BM_W6HybridOrWords_Sqlite);
  once("BM_W6Recall_Floor", BM_W6Recall_Floor);
  once("BM_W6Recall_Hnswlib", BM_W6Recall_Hnswlib);
  once("BM_W6Recall_Memory", BM_W6Recall_Memory);
  once("BM_W6Recall_Sqlite", BM_W6Recall_Sqlite);
  query("BM_W6Clustered_Floor", BM_W6Clustered_Floor);
  query("BM_W6Clustered_Hnswlib", BM_W6Clustered_Hnswlib);
  query("BM_W6Clustered_Memory", BM_W6Clustered_Memory);
  query("BM_W6Clustered_MemoryEf", BM_W6Clustered_MemoryEf);
  benchmark::RegisterBenchmark("BM_W6Restart_Sqlite", BM_W6Restart_Sqlite)
      ->Iterations(1)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
#if defined(CAIRN_HAS_POSTGRES)
  if (pg_conninfo()) {
    index("BM_W6IndexPg_Floor", BM_W6IndexPg_Floor);
    index("BM_W6IndexPg_Postgres", BM_W6IndexPg_Postgres);
    // Words asked for the first time right after the tenants were stored, as a host that loads and then searches
    // asks them: no other row runs between the store's last write and this row's first query.
    benchmark::RegisterBenchmark("BM_W6WordsPg_Postgres", BM_W6WordsPg_Postgres)
        ->Iterations(kQueries)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
    query("BM_W6WordsPg_Floor", BM_W6WordsPg_Floor);
    index("BM_W6IndexPgKeyed_Floor", BM_W6IndexPgKeyed_Floor);
    index("BM_W6IndexPgKeyed_Postgres", BM_W6IndexPgKeyed_Postgres);
    bytes("BM_W6DiskPg_Floor", BM_W6DiskPg_Floor);
    bytes("BM_W6DiskPg_Postgres", BM_W6DiskPg_Postgres);
    query("BM_W6WordsPgAgain_Postgres", BM_W6WordsPgAgain_Postgres);
    query("BM_W6RoundTripPg_Floor", BM_W6RoundTripPg_Floor);
    query("BM_W6SimilarPg_Floor", BM_W6SimilarPg_Floor);
    query("BM_W6SimilarPg_Postgres", BM_W6SimilarPg_Postgres);
    query("BM_W6SimilarPg_PostgresRows", BM_W6SimilarPg_PostgresRows);
    query("BM_W6HybridPg_Floor", BM_W6HybridPg_Floor);
    query("BM_W6HybridPg_Postgres", BM_W6HybridPg_Postgres);
    query("BM_W6HybridOrPg_Floor", BM_W6HybridOrPg_Floor);
    query("BM_W6HybridOrPg_Postgres", BM_W6HybridOrPg_Postgres);
    query("BM_W6HybridWordsPg_Postgres", BM_W6HybridWordsPg_Postgres);
    query("BM_W6HybridOrWordsPg_Postgres", BM_W6HybridOrWordsPg_Postgres);
    once("BM_W6Recall_Postgres", BM_W6Recall_Postgres);
    query("BM_W6SimilarMatchedPg_Floor", BM_W6SimilarMatchedPg_Floor);
    query("BM_W6SimilarMatchedPg_Postgres", BM_W6SimilarMatchedPg_Postgres);
    query("BM_W6SimilarExactPg_Floor", BM_W6SimilarExactPg_Floor);
    query("BM_W6SimilarExactPg_Postgres", BM_W6SimilarExactPg_Postgres);
    filtered("BM_W6FilteredPg_Floor", BM_W6FilteredPg_Floor);
    filtered("BM_W6FilteredPg_Postgres", BM_W6FilteredPg_Postgres);
    filtered("BM_W6FilteredPg_PostgresRows", BM_W6FilteredPg_PostgresRows);
    benchmark::RegisterBenchmark("BM_W6RestartPg_Postgres", BM_W6RestartPg_Postgres)
        ->Iterations(1)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
#endif
  return true;
}();

}  // namespace

BENCHMARK_MAIN();
