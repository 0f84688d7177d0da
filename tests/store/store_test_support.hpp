// Checks shared by the durable-store tests: records that stress the round trip, tenant isolation call by call,
// and a temporary folder.
#pragma once

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/artifact/store.hpp"
#include "cairn/testing/journal_conformance.hpp"
#include "catch.hpp"

namespace store_test {

/// A folder under the system temp dir, removed with everything in it when the object goes.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "cairn-store-test-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

/// Records whose values and metadata are hard to keep exactly: big integers, unicode, NUL characters, floats of
/// every kind, deep-ish nesting, empty containers, every optional field set or unset.
/// The statements that make a trigger on `table` record, in table seen_jit, the `jit` setting of each session that
/// inserts a row: run on a raw connection, they show what a PostgreSQL store's or journal's own sessions set.
inline std::vector<std::string> record_jit_sql(const std::string& table) {
  return {"CREATE TABLE seen_jit (setting text)",
          "CREATE FUNCTION record_jit() RETURNS trigger LANGUAGE plpgsql AS "
          "$$ BEGIN INSERT INTO seen_jit VALUES (current_setting('jit')); RETURN NEW; END $$",
          "CREATE TRIGGER record_jit AFTER INSERT ON " + table + " FOR EACH ROW EXECUTE FUNCTION record_jit()"};
}

inline std::vector<cairn::ArtifactPtr> tricky_records(const std::string& tenant) {
  using nlohmann::json;
  std::vector<cairn::ArtifactPtr> out;
  const json value = {
      {"big", 9007199254740993ULL},
      {"u64max", std::numeric_limits<std::uint64_t>::max()},
      {"i64min", std::numeric_limits<std::int64_t>::min()},
      {"neg", -7},
      {"zero", 0},
      {"pi", 3.141592653589793},
      {"tiny", 5e-324},
      {"huge", 1.7976931348623157e308},
      {"e19", 1e19},
      {"negzero", -0.0},
      {"one_point_zero", 1.0},
      {"text", "Grüße, 世界 🚀 \"quoted\" \\ back\nslash\ttab"},
      {"nul", std::string("a\0b", 3)},
      {"empty_obj", json::object()},
      {"empty_arr", json::array()},
      {"nested", {{"z", {1, {2, {3, {4, {{"deep", true}}}}}}}, {"a", nullptr}}},
      {"keys order", {{"b", 1}, {"a", 2}, {"", 3}, {"\u00e9", 4}}},
  };
  out.push_back(cairn::ArtifactRecord::builder()
                    .tenant_id(tenant)
                    .id("tricky/äöü 1")
                    .type("dataset")
                    .title("Tricky ✓")
                    .description("a value that is hard to keep exactly")
                    .purpose("round trip")
                    .value(value)
                    .storage_url("s3://bucket/key with space?x=1&y=%20")
                    .mime_type("application/json; charset=utf-8")
                    .size_bytes(std::numeric_limits<std::uint64_t>::max())
                    .schema_url("https://example.com/s.json")
                    .created_by("agent-ü")
                    .created_at(1700000000123)
                    .metadata({{"tool_name", "collect"},
                               {"success", false},
                               {"score", 0.1},
                               {"n", 18446744073709551615ULL},
                               {"input_artifacts", {"a", "b"}},
                               {std::string("nul key\0", 8), std::string("x\0y", 3)}})
                    .build());
  out.push_back(cairn::ArtifactRecord::builder()
                    .tenant_id(tenant)
                    .id("plain")
                    .type("document")
                    .title("")
                    .description("only a description")
                    .value("just a string")
                    .created_at(1)
                    .build());
  out.push_back(cairn::ArtifactRecord::builder()
                    .tenant_id(tenant)
                    .id("url-only")
                    .type("image")
                    .title("chart")
                    .storage_url("file:///tmp/chart.png")
                    .size_bytes(0)
                    .created_at(4102444800000)  // 2100-01-01
                    .build());
  for (const json& v : {json(false), json(0), json(-1.5), json::array({json::array()}), json("")}) {
    out.push_back(cairn::ArtifactRecord::builder()
                      .tenant_id(tenant)
                      .id("scalars")
                      .type("data")
                      .title("s")
                      .value(v)
                      .created_at(2)
                      .build());
  }
  return out;
}

/// `a` and `b` hold the same record, down to the JSON text of value and metadata (so 1.0 vs 1 or -0.0 vs 0.0
/// would show).
inline void require_identical(const cairn::ArtifactRecord& a, const cairn::ArtifactRecord& b) {
  INFO("id " << a.id() << " version " << a.version());
  CHECK(a == b);
  CHECK(a.value().dump() == b.value().dump());
  CHECK(a.metadata().dump() == b.metadata().dump());
  // (Non-negative integers may come back as unsigned: JSON text does not tell them apart, and they compare equal.)
  CHECK(a.purpose() == b.purpose());
}

/// Stores `owner`'s artifacts, then makes every call as another tenant with owner's ids (and prefixes and
/// cursors), and checks that nothing of owner's is seen, changed or removed.
inline void check_tenant_isolation(cairn::ArtifactStore& s) {
  using cairn::ListQuery;
  const std::string owner = "owner-" + cairn::detail::random_string(8, "abcdefghijklmnopqrstuvwxyz");
  const std::string intruder = "intruder-" + cairn::detail::random_string(8, "abcdefghijklmnopqrstuvwxyz");
  std::vector<std::string> ids = {"report", "report/2", "a%", "x_y"};
  for (const auto& id : ids) {
    for (int v = 0; v < 2; ++v) {
      (void)s.store(*cairn::ArtifactRecord::builder()
                         .tenant_id(owner)
                         .id(id)
                         .type("document")
                         .title(id)
                         .created_by("owner-agent")
                         .value(v)
                         .build());
    }
  }
  const auto before = s.list(owner, ListQuery{"", {}, {}, 100, ""});
  REQUIRE(before.items.size() == ids.size());

  for (const auto& id : ids) {
    INFO("id " << id);
    CHECK(s.fetch(id, intruder) == nullptr);
    CHECK(s.fetch(id, intruder, 1) == nullptr);
    CHECK(s.fetch(id, intruder, 2) == nullptr);
    CHECK(s.versions(id, intruder).empty());
    try {
      s.remove(id, intruder);
      FAIL("remove of a foreign id did not throw");
    } catch (const cairn::not_found& e) {
      // The same text as for an id that never existed anywhere.
      CHECK(std::string(e.what()) == cairn::detail::artifact_missing_message(id, intruder));
    }
    CHECK(s.list(intruder, ListQuery{id, {}, {}, 10, ""}).items.empty());
    CHECK(s.list(intruder, ListQuery{"", {}, {}, 10, id}).items.empty());
  }
  CHECK(s.list(intruder).items.empty());
  CHECK(
      s.list(intruder, ListQuery{"", cairn::ArtifactType::document, std::string("owner-agent"), 10, ""}).items.empty());

  // The intruder storing the same id gets its own version 1 and changes nothing of the owner's.
  auto mine = s.store(*cairn::ArtifactRecord::builder()
                           .tenant_id(intruder)
                           .id("report")
                           .type("code")
                           .title("mine")
                           .value("intruder")
                           .build());
  CHECK(mine->version() == 1);
  s.remove("report", intruder);

  const auto after = s.list(owner, ListQuery{"", {}, {}, 100, ""});
  REQUIRE(after.items.size() == before.items.size());
  for (std::size_t i = 0; i < after.items.size(); ++i) CHECK(*after.items[i] == *before.items[i]);
  for (const auto& id : ids) CHECK(s.versions(id, owner) == std::vector<std::uint64_t>{1, 2});
}

/// Two processes, each with `threads` threads and its own store object from `open`, race conditional writes on
/// one tenant: every thread tries to create each of `ids` ids, then runs read-modify-write rounds on one counter.
/// Checks that each id was created exactly once and that each counter version was won by exactly one writer, that
/// every win was a replacement of the version the winner read, and that the store holds exactly the won versions.
inline void check_store_if_race_across_processes(const std::function<std::unique_ptr<cairn::ArtifactStore>()>& open,
                                                 const std::string& tenant, const std::string& scratch_file,
                                                 int threads = 4, int ids = 30, int rounds = 40) {
  using nlohmann::json;
  auto note = [&](const std::string& id, json v) {
    return cairn::ArtifactRecord::builder()
        .tenant_id(tenant)
        .id(id)
        .type("document")
        .title(id)
        .value(std::move(v))
        .build();
  };
  // Returns "c <id>" for each creation won and "r <version>" for each replacement won; "bad" for a wrong answer.
  auto race = [&](const std::string& who) {
    auto store = open();
    std::vector<std::vector<std::string>> wins(static_cast<std::size_t>(threads));
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        auto& mine = wins[static_cast<std::size_t>(t)];
        for (int k = 0; k < ids; ++k) {
          const std::string id = "created-" + std::to_string(k);
          try {
            (void)store->store_if(*note(id, json{{"who", who}, {"t", t}}), cairn::ArtifactStore::absent);
            mine.push_back("c " + id);
          } catch (const cairn::conflict& c) {
            if (c.expected() != 0 || c.actual() != 1) mine.push_back("bad");
          }
        }
        for (int k = 0; k < rounds; ++k) {
          const auto seen = store->fetch("counter", tenant);
          const std::uint64_t v = seen ? seen->version() : 0;
          try {
            const auto got = store->store_if(*note("counter", json{{"who", who}, {"t", t}, {"k", k}}), v);
            mine.push_back(got->version() == v + 1 ? "r " + std::to_string(got->version()) : "bad");
          } catch (const cairn::conflict& c) {
            if (c.expected() != v || c.actual() <= v) mine.push_back("bad");
          }
        }
      });
    }
    for (auto& th : pool) th.join();
    std::vector<std::string> all;
    for (auto& w : wins) all.insert(all.end(), w.begin(), w.end());
    return all;
  };

  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    int code = 0;
    try {
      std::ofstream out(scratch_file);
      for (const auto& line : race("child")) out << line << '\n';
    } catch (...) {
      code = 1;
    }
    _exit(code);
  }
  auto wins = race("parent");
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  std::ifstream in(scratch_file);
  for (std::string line; std::getline(in, line);) wins.push_back(line);

  CHECK(std::count(wins.begin(), wins.end(), "bad") == 0);
  std::vector<std::string> created;
  std::vector<std::uint64_t> replaced;
  for (const auto& w : wins) {
    if (w.rfind("c ", 0) == 0) created.push_back(w.substr(2));
    if (w.rfind("r ", 0) == 0) replaced.push_back(std::stoull(w.substr(2)));
  }
  std::sort(created.begin(), created.end());
  CHECK(created.size() == static_cast<std::size_t>(ids));
  CHECK(std::adjacent_find(created.begin(), created.end()) == created.end());
  std::sort(replaced.begin(), replaced.end());
  REQUIRE(!replaced.empty());
  CHECK(std::adjacent_find(replaced.begin(), replaced.end()) == replaced.end());
  CHECK(replaced.front() == 1);
  CHECK(replaced.back() == replaced.size());
  auto store = open();
  CHECK(store->versions("counter", tenant).size() == replaced.size());
  for (int k = 0; k < ids; ++k) CHECK(store->versions("created-" + std::to_string(k), tenant).size() == 1);
  // Both processes won some of the races.
  std::set<std::string> winners;
  for (auto v : store->versions("counter", tenant)) {
    winners.insert(store->fetch("counter", tenant, v)->value()["who"].get<std::string>());
  }
  CHECK(winners.size() == 2);
}

/// The fork/prune race of the journal conformance suite (cairn::testing::ForkPruneRace) across two processes, each
/// with its own journal from `open`: each round the parent writes the source, then one process forks while the
/// other prunes (the roles swap every round, and a random side starts up to 200 µs late), and the parent compares
/// the whole state with what the two outcomes allow. Returns how many rounds ended with the fork made.
inline int check_fork_prune_race_across_processes(const std::function<std::unique_ptr<cairn::RunJournal>()>& open,
                                                  const std::string& tenant, int rounds) {
  using cairn::testing::RaceOutcome;
  const cairn::testing::ForkPruneRace race(tenant);
  int to_child[2], to_parent[2];
  REQUIRE(pipe(to_child) == 0);
  REQUIRE(pipe(to_parent) == 0);
  // One byte per round to the child: 'f' fork, 'p' prune (upper case: start late). One byte back: its outcome, or
  // 'x' when it got an error the rules do not allow (its message on stderr).
  auto side = [&](cairn::RunJournal& j, char role, int round) {
    if (std::isupper(static_cast<unsigned char>(role))) {
      std::this_thread::sleep_for(std::chrono::microseconds(std::rand() % 200));
    }
    return std::tolower(static_cast<unsigned char>(role)) == 'f' ? race.fork(j, round) : race.prune(j, round);
  };
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    close(to_child[1]);
    close(to_parent[0]);
    int code = 0;
    try {
      auto journal = open();
      char role = 0;
      for (int round = 0; read(to_child[0], &role, 1) == 1; ++round) {
        char out = 'x';
        try {
          out = static_cast<char>(side(*journal, role, round));
        } catch (const std::exception& e) {
          std::fprintf(stderr, "child: %s\n", e.what());
        }
        if (write(to_parent[1], &out, 1) != 1) code = 1;
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
      code = 1;
    }
    _exit(code);
  }
  close(to_child[0]);
  close(to_parent[1]);
  auto journal = open();
  std::mt19937 rng(std::random_device{}());
  int forks_made = 0;
  for (int round = 0; round < rounds; ++round) {
    INFO("round " << round);
    race.prepare(*journal, round);
    const bool child_forks = round % 2 == 0;
    const bool child_late = rng() % 2 == 0;
    char role = child_forks ? 'f' : 'p';
    if (child_late) role = static_cast<char>(std::toupper(role));
    REQUIRE(write(to_child[1], &role, 1) == 1);
    const RaceOutcome mine = side(*journal, child_late ? (child_forks ? 'p' : 'f') : (child_forks ? 'P' : 'F'), round);
    char theirs = 0;
    REQUIRE(read(to_parent[0], &theirs, 1) == 1);
    REQUIRE(theirs != 'x');
    const auto other = static_cast<RaceOutcome>(theirs);
    const RaceOutcome forked = child_forks ? other : mine;
    const RaceOutcome pruned = child_forks ? mine : other;
    race.check(*journal, round, forked, pruned);
    forks_made += forked == RaceOutcome::done;
  }
  close(to_child[1]);
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  close(to_parent[0]);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  return forks_made;
}

// ---- random corpora for the search tests: records, word queries and vectors from a seeded generator ----------

inline const std::vector<std::string> search_vocabulary = {"alpha", "beta", "gamma", "delta", "Revenue", "région",
                                                           "q3",    "emea", "apac",  "x-ray", "ALPHA",   "7"};

inline std::string random_words(std::mt19937& rng, std::size_t most) {
  std::string out;
  const std::size_t n = std::uniform_int_distribution<std::size_t>(0, most)(rng);
  for (std::size_t i = 0; i < n; ++i) {
    out += (i ? (rng() % 5 == 0 ? ", " : " ") : "") + search_vocabulary[rng() % search_vocabulary.size()];
  }
  return out;
}

inline cairn::ArtifactPtr random_record(std::mt19937& rng, const std::string& tenant, const std::string& id) {
  nlohmann::json value;
  switch (rng() % 3) {
    case 0: value = random_words(rng, 12); break;
    case 1: value = {{"body", random_words(rng, 8)}, {random_words(rng, 1) + "k", {random_words(rng, 3), 7}}}; break;
    default: value = rng() % 2; break;
  }
  auto b = cairn::ArtifactRecord::builder();
  b.tenant_id(tenant)
      .id(id)
      .type(rng() % 2 ? "document" : "dataset")
      .title(random_words(rng, 4) + " t")
      .description(random_words(rng, 6))
      .value(std::move(value))
      .metadata(nlohmann::json{{"n", static_cast<int>(rng() % 5)}, {"region", rng() % 2 ? "emea" : "apac"}})
      .created_at(1700000000000 + static_cast<std::int64_t>(rng() % 10));
  if (rng() % 2) b.created_by(rng() % 2 ? "agent-a" : "agent-b");
  if (rng() % 3 == 0) b.mime_type("text/plain");
  return b.build();
}

inline std::string random_query(std::mt19937& rng) {
  std::string q;
  const std::size_t terms = 1 + rng() % 3;
  for (std::size_t i = 0; i < terms; ++i) {
    if (i) q += rng() % 4 == 0 ? " OR " : " ";
    const auto word = [&] { return search_vocabulary[rng() % search_vocabulary.size()]; };
    switch (rng() % 4) {
      case 0: q += "\"" + word() + " " + word() + "\""; break;
      default: q += word(); break;
    }
  }
  if (rng() % 4 == 0) q += " -" + search_vocabulary[rng() % search_vocabulary.size()];
  if (rng() % 8 == 0) q += " -\"" + search_vocabulary[rng() % 4] + " " + search_vocabulary[rng() % 4] + "\"";
  return q;
}

inline std::vector<float> random_vector(std::mt19937& rng, std::size_t dimension) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(dimension);
  for (auto& x : v) x = d(rng);
  return v;
}

/// Hybrid on a store's indexes against the in-memory store's, over the same records and vectors (of `model`,
/// `dimension` floats): `steps` times, 50 random stores, new versions and removals through `writer` (and the
/// in-memory store), then `rounds` random hybrid queries (filters too) read through `reader` (another store object
/// on the same data, whose index learns only from what the writer wrote), compared page by page with
/// `same_page(got, want, what)`. Returns how many hits were compared.
template <class Store, class SamePage>
std::size_t compare_hybrid_with_memory(Store& writer, const Store& reader, std::mt19937& rng, const std::string& model,
                                       std::size_t dimension, int steps, int rounds, SamePage&& same_page) {
  cairn::InMemoryArtifactStore memory;
  const std::vector<std::string> tenants = {"t1", "t2"};
  std::size_t hits_compared = 0;
  for (int step = 0; step < steps; ++step) {
    for (int i = 0; i < 50; ++i) {
      const std::string& tenant = tenants[rng() % tenants.size()];
      const std::string id = (rng() % 3 == 0 ? "reports/" : "notes/") + std::to_string(rng() % 40);
      if (rng() % 10 == 0 && !writer.versions(id, tenant).empty()) {
        writer.remove(id, tenant);
        memory.remove(id, tenant);
      } else {
        const auto r = random_record(rng, tenant, id);
        const cairn::Embedding e{model, random_vector(rng, dimension)};
        const auto a = writer.store_embedded(*r, e);
        const auto b = memory.store_embedded(*r, e);
        REQUIRE(a->version() == b->version());
      }
    }
    for (int round = 0; round < rounds; ++round) {
      cairn::SearchQuery q;
      q.text = random_query(rng);
      q.vector = cairn::Embedding{model, random_vector(rng, dimension)};
      q.mode = rng() % 2 ? cairn::SearchMode::hybrid : cairn::SearchMode::automatic;
      q.limit = 1 + rng() % 6;
      if (rng() % 4 == 0) q.filter.id_prefix = rng() % 2 ? "reports/" : "notes/1";
      if (rng() % 5 == 0) q.filter.type = cairn::ArtifactType{rng() % 2 ? "document" : "dataset"};
      if (rng() % 6 == 0) q.filter.created_by = "agent-a";
      if (rng() % 5 == 0) q.filter.created_after = 1700000000000 + static_cast<std::int64_t>(rng() % 10);
      if (rng() % 4 == 0) q.filter.metadata.push_back({"/n", cairn::FieldOp::ge, static_cast<int>(rng() % 5)});
      const std::string& tenant = tenants[rng() % tenants.size()];
      for (int pages = 0; pages < 20; ++pages) {
        const std::string what = "step " + std::to_string(step) + " round " + std::to_string(round) + " page " +
                                 std::to_string(pages) + ": '" + q.text + "' in '" + tenant + "', limit " +
                                 std::to_string(q.limit);
        cairn::SearchPage want;
        try {
          want = memory.search(tenant, q);
        } catch (const cairn::invalid_argument& e) {
          CHECK_THROWS_WITH(reader.search(tenant, q), e.what());
          break;
        }
        const cairn::SearchPage got = reader.search(tenant, q);
        same_page(got, want, what);
        hits_compared += got.hits.size();
        if (!want.next_cursor) break;
        q.cursor = *want.next_cursor;
      }
    }
  }
  return hits_compared;
}

/// Writes at random into tenant "t" of a store: new ids (at most 80 live), new versions of live ones, and
/// removals; `live` is what a search of the tenant's latest versions should find. What the pruning tests write.
template <class Store>
struct RandomWriter {
  Store& store;
  std::mt19937 rng{20261126};
  std::set<std::string> live{};
  std::size_t next_id = 0;

  void write(std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      const auto roll = rng() % 10;
      if (roll < 2 && !live.empty()) {
        auto it = live.begin();
        std::advance(it, static_cast<long>(rng() % live.size()));
        store.remove(*it, "t");
        live.erase(it);
        continue;
      }
      std::string id;
      if ((roll < 6 && live.size() < 80) || live.empty()) {
        id = "n" + std::to_string(next_id++);
      } else {
        auto it = live.begin();
        std::advance(it, static_cast<long>(rng() % live.size()));
        id = *it;
      }
      (void)store.store(*cairn::ArtifactRecord::builder()
                             .tenant_id("t")
                             .id(id)
                             .type("document")
                             .title("note " + id)
                             .value(random_words(rng, 6))
                             .build());
      live.insert(id);
    }
  }
};

}  // namespace store_test
