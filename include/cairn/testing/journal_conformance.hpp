// cairn::testing — the behaviour every RunJournal must show, as checks any test framework can run.
//
//     for (const auto& check : cairn::testing::journal_conformance_checks()) {
//       check.run(*my_journal);  // throws cairn::testing::conformance_failure on a violation
//     }
//
// The fork/prune race (ForkPruneRace) also comes in pieces, so a durable journal's own tests can run its two sides
// in two processes; its round count comes from CAIRN_TEST_RACE_ROUNDS (default 20).
//
// Checks use tenants with random names, so they also run against a durable journal that already holds runs. One
// check sets the journal's clock while it runs and puts the system clock back afterwards.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/error.hpp"
#include "cairn/run/journal.hpp"
#include "cairn/testing/store_conformance.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace testing {

/// One named behaviour check of a journal.
struct JournalCheck {
  std::string name;
  std::function<void(RunJournal&)> run;
};

namespace detail {

#define CAIRN_JCONFORM(cond) ::cairn::testing::detail::expect(static_cast<bool>(cond), #cond, __LINE__)
#define CAIRN_JCONFORM_THROWS(E, expr) ::cairn::testing::detail::expect_throw<E>([&] { (void)(expr); }, #expr, __LINE__)

inline JournalEntry entry(std::string kind, nlohmann::json data) {
  JournalEntry e;
  e.kind = std::move(kind);
  e.data = std::move(data);
  return e;
}

inline std::vector<JournalEntry> entries(std::initializer_list<std::pair<const char*, nlohmann::json>> list) {
  std::vector<JournalEntry> out;
  for (const auto& [kind, data] : list) out.push_back(entry(kind, data));
  return out;
}

inline std::vector<std::uint64_t> seqs(const std::vector<JournalEntry>& es) {
  std::vector<std::uint64_t> out;
  for (const auto& e : es) out.push_back(e.seq);
  return out;
}

/// The conflict `f` throws (fails when it throws nothing or something else).
template <typename F>
conflict conflict_of(F&& f, int line) {
  try {
    f();
  } catch (const conflict& e) {
    return e;
  } catch (const std::exception& e) {
    throw conformance_failure(fmt::format("journal_conformance.hpp:{}: expected a conflict, got: {}", line, e.what()));
  }
  throw conformance_failure(fmt::format("journal_conformance.hpp:{}: expected a conflict, nothing was thrown", line));
}

class FixedClock final : public Clock {
 public:
  std::int64_t now_ms() const override { return now.load(); }
  std::atomic<std::int64_t> now{0};
};

}  // namespace detail

/// What one side of a fork/prune race got: it did its work, or it was refused with the error the rules allow.
enum class RaceOutcome : char { done = 'd', refused = 'r' };

/// The race of issue 25: `fork(src, 2)` against `prune(src)`, where src holds 8 entries with a snapshot at 6 (so
/// a prune that sees no fork drops seq 1 to 5). Whichever wins, the rules hold: either the fork exists and reads
/// seq 1 and 2 exactly (and the prune kept them, or was refused with state_error), or the fork was refused with
/// invalid_argument and the prune dropped seq 1 to 5. Never a fork pointing at pruned entries.
///
/// The pieces run on any journal objects, threads or processes: prepare() writes round `round`'s source, fork()
/// and prune() are the two sides (each throws conformance_failure on an error the rules do not allow), check()
/// compares the whole state of both runs with what the two outcomes allow.
class ForkPruneRace {
 public:
  static constexpr std::uint64_t fork_at = 2;
  static constexpr std::uint64_t snapshot_seq = 6;
  static constexpr std::uint64_t source_length = 8;

  explicit ForkPruneRace(std::string tenant) : tenant_(std::move(tenant)) {}

  /// Rounds to run: CAIRN_TEST_RACE_ROUNDS when set (a positive number), else `fallback`.
  static int rounds(int fallback = 20) {
    const char* env = std::getenv("CAIRN_TEST_RACE_ROUNDS");
    const int n = env ? std::atoi(env) : 0;
    return n > 0 ? n : fallback;
  }

  std::string source(int round) const { return "race-src-" + std::to_string(round); }
  std::string fork_name(int round) const { return "race-fork-" + std::to_string(round); }

  /// Entry i (1-based) of every round's source.
  static JournalEntry source_entry(std::uint64_t i) {
    JournalEntry e;
    e.kind = i == snapshot_seq ? std::string(snapshot_kind) : "step";
    e.data = nlohmann::json{{"i", i}};
    return e;
  }

  void prepare(RunJournal& j, int round) const {
    std::vector<JournalEntry> es;
    for (std::uint64_t i = 1; i <= source_length; ++i) es.push_back(source_entry(i));
    (void)j.append(tenant_, source(round), 0, es);
  }

  RaceOutcome fork(RunJournal& j, int round) const {
    try {
      j.fork(tenant_, source(round), fork_at, fork_name(round));
      return RaceOutcome::done;
    } catch (const invalid_argument&) {  // pruned first: seq 2 is gone
      return RaceOutcome::refused;
    } catch (const std::exception& e) {
      fail(round, "fork", e.what());
    }
  }

  RaceOutcome prune(RunJournal& j, int round) const {
    try {
      (void)j.prune(tenant_, source(round));
      return RaceOutcome::done;
    } catch (const state_error&) {  // the fork came in between its look at the forks and its delete
      return RaceOutcome::refused;
    } catch (const std::exception& e) {
      fail(round, "prune", e.what());
    }
  }

  void check(RunJournal& j, int round, RaceOutcome forked, RaceOutcome pruned) const {
    const std::string src = source(round), fork = fork_name(round);
    auto expect = [&](bool ok, const char* what) {
      if (!ok) {
        throw conformance_failure(fmt::format("fork/prune race, round {} (fork {}, prune {}): {}", round,
                                              forked == RaceOutcome::done ? "done" : "refused",
                                              pruned == RaceOutcome::done ? "done" : "refused", what));
      }
    };
    auto same = [&](const std::vector<JournalEntry>& got, std::uint64_t from, std::uint64_t to) {
      if (got.size() != to - from + 1) return false;
      for (std::uint64_t i = from; i <= to; ++i) {
        const JournalEntry& e = got[i - from];
        const JournalEntry want = source_entry(i);
        if (e.seq != i || e.kind != want.kind || e.data != want.data) return false;
      }
      return true;
    };
    const auto info = j.info(tenant_, src);
    expect(info && info->last_seq == source_length && !info->forked_from, "the source's row changed");
    const auto fork_info = j.info(tenant_, fork);
    if (forked == RaceOutcome::done) {
      expect(fork_info && fork_info->forked_from == std::optional<std::string>(src) && fork_info->fork_seq == fork_at &&
                 fork_info->last_seq == fork_at,
             "the fork's row is not the fork that was made");
      std::vector<JournalEntry> got;
      try {
        got = j.read(tenant_, fork);
      } catch (const std::exception& e) {
        expect(false, e.what());
      }
      expect(same(got, 1, fork_at), "the fork does not read seq 1 and 2 of its source");
      expect(same(j.read_for_restore(tenant_, fork), 1, fork_at), "the fork does not restore from seq 1");
      expect(info->kept_from == 1, "the source was pruned below its fork point");
      expect(same(j.read(tenant_, src), 1, source_length), "the source's entries changed");
    } else {
      expect(!fork_info, "a refused fork left a run");
      expect(pruned == RaceOutcome::done, "both sides were refused");
      expect(info->kept_from == snapshot_seq, "the prune did not drop seq 1 to 5");
      expect(same(j.read(tenant_, src, snapshot_seq), snapshot_seq, source_length), "the kept entries changed");
      expect(same(j.read_for_restore(tenant_, src), snapshot_seq, source_length), "the source does not restore");
    }
  }

 private:
  [[noreturn]] void fail(int round, const char* side, const char* what) const {
    throw conformance_failure(
        fmt::format("fork/prune race, round {}: {} threw an error the rules do not allow: {}", round, side, what));
  }

  std::string tenant_;
};

/// Runs `rounds` rounds of the fork/prune race with two threads, one on `a` and one on `b` (they may be the same
/// object: a pooled journal then races on two connections). Even rounds fork on `a` and prune on `b`, odd rounds
/// the other way; each round one side, picked at random, starts up to 200 µs late, so both orders happen. Returns
/// how many rounds ended with the fork made (the others with the prune first).
inline int race_fork_and_prune(RunJournal& a, RunJournal& b, int rounds, const std::string& tenant) {
  const ForkPruneRace race(tenant);
  std::mt19937 rng(std::random_device{}());
  int forks_made = 0;
  for (int round = 0; round < rounds; ++round) {
    race.prepare(a, round);
    RunJournal& forker = round % 2 == 0 ? a : b;
    RunJournal& pruner = round % 2 == 0 ? b : a;
    const bool fork_late = rng() % 2 == 0;
    const auto delay = std::chrono::microseconds(rng() % 200);
    std::atomic<int> ready{0};
    auto start = [&](bool late) {
      ++ready;
      while (ready.load() < 2) std::this_thread::yield();
      if (late) std::this_thread::sleep_for(delay);
    };
    RaceOutcome forked = RaceOutcome::refused, pruned = RaceOutcome::refused;
    std::string error;
    std::thread t([&] {
      start(!fork_late);
      try {
        pruned = race.prune(pruner, round);
      } catch (const std::exception& e) {
        error = e.what();
      }
    });
    start(fork_late);
    std::string fork_error;
    try {
      forked = race.fork(forker, round);
    } catch (const std::exception& e) {
      fork_error = e.what();
    }
    t.join();
    if (!error.empty()) throw conformance_failure(error);
    if (!fork_error.empty()) throw conformance_failure(fork_error);
    race.check(a, round, forked, pruned);
    forks_made += forked == RaceOutcome::done;
  }
  return forks_made;
}

/// Every check; each takes the journal to test.
[[nodiscard]] inline std::vector<JournalCheck> journal_conformance_checks() {
  using detail::entries;
  using detail::fresh_tenant;
  using detail::seqs;
  using nlohmann::json;
  std::vector<JournalCheck> checks;

  checks.push_back(
      {"append creates a run and extends it; entries come back exactly, in order", [](RunJournal& j) {
         const auto t = fresh_tenant("jappend");
         CAIRN_JCONFORM(!j.info(t, "run").has_value());
         CAIRN_JCONFORM(j.append(t, "run", 0, entries({{"context.bind", {{"name", "a"}}}})) == 1);
         const json tricky = {{"big", 18446744073709551615ULL},
                              {"neg", -9007199254740993LL},
                              {"pi", 3.141592653589793},
                              {"text", "Grüße 世界 🚀 \"q\" \\ \n\t"},
                              {"nested", {{"z", {1, {2, {}}}}, {"a", nullptr}}},
                              {"empty", json::object()},
                              {"one_point_zero", 1.0}};
         CAIRN_JCONFORM(
             j.append(t, "run", 1, entries({{"context.message", tricky}, {"tool.intended", {{"call", "c1"}}}})) == 3);
         const auto all = j.read(t, "run");
         CAIRN_JCONFORM((seqs(all) == std::vector<std::uint64_t>{1, 2, 3}));
         CAIRN_JCONFORM(all[1].kind == "context.message");
         CAIRN_JCONFORM(all[1].data == tricky);
         CAIRN_JCONFORM(all[1].data.dump() == tricky.dump());
         CAIRN_JCONFORM(all[2].data == json({{"call", "c1"}}));
         CAIRN_JCONFORM(all[0].time > 0);
         const auto info = j.info(t, "run");
         CAIRN_JCONFORM(info && info->last_seq == 3 && info->run_id == "run" && !info->forked_from);
         CAIRN_JCONFORM(info->created_at > 0 && info->updated_at >= info->created_at);
         CAIRN_JCONFORM((seqs(j.read(t, "run", 2, 2)) == std::vector<std::uint64_t>{2}));
         CAIRN_JCONFORM((seqs(j.read(t, "run", 3)) == std::vector<std::uint64_t>{3}));
         CAIRN_JCONFORM(j.read(t, "run", 4).empty());
         // A time given by the writer is kept.
         auto timed = detail::entry("note", 1);
         timed.time = 1700000000123;
         (void)j.append(t, "run", 3, {timed});
         CAIRN_JCONFORM(j.read(t, "run", 4)[0].time == 1700000000123);
       }});

  checks.push_back(
      {"an append that does not follow the run's last entry is a conflict and writes nothing", [](RunJournal& j) {
         const auto t = fresh_tenant("jconflict");
         (void)j.append(t, "r", 0, entries({{"a", 1}, {"b", 2}}));
         auto c = detail::conflict_of([&] { (void)j.append(t, "r", 1, entries({{"late", 3}})); }, __LINE__);
         CAIRN_JCONFORM(c.expected() == 1 && c.actual() == 2);
         CAIRN_JCONFORM(std::string(c.what()).find("'r'") != std::string::npos);
         c = detail::conflict_of([&] { (void)j.append(t, "r", 0, entries({{"again", 0}})); }, __LINE__);
         CAIRN_JCONFORM(c.expected() == 0 && c.actual() == 2);
         c = detail::conflict_of([&] { (void)j.append(t, "r", 5, entries({{"ahead", 0}})); }, __LINE__);
         CAIRN_JCONFORM(c.actual() == 2);
         c = detail::conflict_of([&] { (void)j.append(t, "missing", 3, entries({{"x", 0}})); }, __LINE__);
         CAIRN_JCONFORM(c.expected() == 3 && c.actual() == 0);
         CAIRN_JCONFORM(!j.info(t, "missing"));
         CAIRN_JCONFORM((seqs(j.read(t, "r")) == std::vector<std::uint64_t>{1, 2}));
         CAIRN_JCONFORM(j.read(t, "r")[1].data == 2);
       }});

  checks.push_back(
      {"bad input is refused with a clear error and writes nothing", [](RunJournal& j) {
         const auto t = fresh_tenant("jbad");
         (void)j.append(t, "ok", 0, entries({{"a", 1}}));
         CAIRN_JCONFORM_THROWS(invalid_argument, j.append("", "ok", 1, entries({{"a", 1}})));
         CAIRN_JCONFORM_THROWS(invalid_argument, j.append(t, "", 0, entries({{"a", 1}})));
         CAIRN_JCONFORM_THROWS(invalid_argument, j.append(t, "bad\nid", 0, entries({{"a", 1}})));
         CAIRN_JCONFORM_THROWS(invalid_argument, j.append(t, "caf\xC3", 0, entries({{"a", 1}})));
         CAIRN_JCONFORM_THROWS(invalid_argument, j.append(t, std::string(257, 'r'), 0, entries({{"a", 1}})));
         CAIRN_JCONFORM_THROWS(invalid_argument, j.append(t, "ok", 1, {}));
         CAIRN_JCONFORM_THROWS(invalid_argument, j.append(t, "ok", 1, entries({{"good", 1}, {"", 2}})));
         CAIRN_JCONFORM_THROWS(invalid_argument, j.append(t, "ok", 1, entries({{"bad\x01kind", 2}})));
         const auto msg =
             CAIRN_JCONFORM_THROWS(invalid_argument, j.append(t, "ok", 1, entries({{"good", 1}, {"", 2}})));
         CAIRN_JCONFORM(msg.find("entries[1].kind") != std::string::npos);
         CAIRN_JCONFORM_THROWS(not_found, j.read(t, "nope"));
         CAIRN_JCONFORM_THROWS(not_found, j.read_for_restore(t, "nope"));
         CAIRN_JCONFORM_THROWS(not_found, j.remove(t, "nope"));
         CAIRN_JCONFORM_THROWS(invalid_argument, j.read_for_restore(t, "ok", 2));
         CAIRN_JCONFORM(j.info(t, "ok")->last_seq == 1);
         CAIRN_JCONFORM(j.read(t, "ok").size() == 1);
       }});

  checks.push_back(
      {"another tenant's run is indistinguishable from a missing one", [](RunJournal& j) {
         const auto a = fresh_tenant("jiso-a");
         const auto b = fresh_tenant("jiso-b");
         (void)j.append(b, "secret", 0, entries({{"a", "b's"}}));
         CAIRN_JCONFORM(!j.info(a, "secret"));
         CAIRN_JCONFORM_THROWS(not_found, j.read(a, "secret"));
         CAIRN_JCONFORM_THROWS(not_found, j.fork(a, "secret", 1, "mine"));
         CAIRN_JCONFORM_THROWS(not_found, j.remove(a, "secret"));
         CAIRN_JCONFORM(detail::conflict_of(
                            [&] {
                              (void)j.append(a, "secret", 1, entries({{"x", 1}}));
                            },
                            __LINE__)
                            .actual() == 0);
         CAIRN_JCONFORM(j.append(a, "secret", 0, entries({{"a", "a's"}})) == 1);  // a's own run of that name
         CAIRN_JCONFORM(j.read(b, "secret")[0].data == "b's");
         CAIRN_JCONFORM(j.sweep(a, std::numeric_limits<std::int64_t>::max()).size() == 1);
         CAIRN_JCONFORM(j.info(b, "secret").has_value());
       }});

  checks.push_back(
      {"read_for_restore starts at the newest snapshot at or before the point asked for", [](RunJournal& j) {
         const auto t = fresh_tenant("jsnap");
         (void)j.append(t, "r", 0, entries({{"a", 1}, {"b", 2}}));
         CAIRN_JCONFORM((seqs(j.read_for_restore(t, "r")) == std::vector<std::uint64_t>{1, 2}));
         (void)j.append(t, "r", 2, entries({{snapshot_kind, {{"state", 2}}}, {"c", 4}, {"d", 5}}));
         (void)j.append(t, "r", 5, entries({{snapshot_kind, {{"state", 5}}}, {"e", 7}}));
         CAIRN_JCONFORM((seqs(j.read_for_restore(t, "r")) == std::vector<std::uint64_t>{6, 7}));
         CAIRN_JCONFORM((seqs(j.read_for_restore(t, "r", 5)) == std::vector<std::uint64_t>{3, 4, 5}));
         CAIRN_JCONFORM((seqs(j.read_for_restore(t, "r", 3)) == std::vector<std::uint64_t>{3}));
         CAIRN_JCONFORM((seqs(j.read_for_restore(t, "r", 2)) == std::vector<std::uint64_t>{1, 2}));
         CAIRN_JCONFORM(j.read_for_restore(t, "r", 0).empty());
       }});

  checks.push_back(
      {"fork starts a run from any past point of another; both go their own way", [](RunJournal& j) {
         const auto t = fresh_tenant("jfork");
         (void)j.append(t, "main", 0, entries({{"a", 1}, {snapshot_kind, {{"s", 2}}}, {"c", 3}, {"d", 4}}));
         j.fork(t, "main", 3, "alt");
         const auto alt = j.info(t, "alt");
         CAIRN_JCONFORM(alt && alt->forked_from == std::optional<std::string>("main") && alt->fork_seq == 3);
         CAIRN_JCONFORM(alt->last_seq == 3);
         CAIRN_JCONFORM((seqs(j.read(t, "alt")) == std::vector<std::uint64_t>{1, 2, 3}));
         CAIRN_JCONFORM(detail::conflict_of(
                            [&] {
                              (void)j.append(t, "alt", 4, entries({{"x", 0}}));
                            },
                            __LINE__)
                            .actual() == 3);
         CAIRN_JCONFORM(j.append(t, "alt", 3, entries({{"alt-d", 40}})) == 4);
         (void)j.append(t, "main", 4, entries({{"e", 5}}));
         const auto main_entries = j.read(t, "main");
         const auto alt_entries = j.read(t, "alt");
         CAIRN_JCONFORM(main_entries[3].data == 4 && main_entries.size() == 5);
         CAIRN_JCONFORM(alt_entries[3].data == 40 && alt_entries.size() == 4);
         CAIRN_JCONFORM(alt_entries[2] == main_entries[2]);
         CAIRN_JCONFORM((seqs(j.read_for_restore(t, "alt")) == std::vector<std::uint64_t>{2, 3, 4}));
         // A fork of a fork, at a point inside the first fork's inherited part and at its own part.
         j.fork(t, "alt", 2, "alt2");
         CAIRN_JCONFORM((seqs(j.read(t, "alt2")) == std::vector<std::uint64_t>{1, 2}));
         j.fork(t, "alt", 4, "alt3");
         CAIRN_JCONFORM(j.read(t, "alt3").back().data == 40);
         CAIRN_JCONFORM(j.append(t, "alt3", 4, entries({{snapshot_kind, {{"s", 5}}}})) == 5);
         CAIRN_JCONFORM((seqs(j.read_for_restore(t, "alt3")) == std::vector<std::uint64_t>{5}));
         // Forking at 0 gives an empty run that starts again at 1.
         j.fork(t, "main", 0, "empty");
         CAIRN_JCONFORM(j.read(t, "empty").empty());
         CAIRN_JCONFORM(j.append(t, "empty", 0, entries({{"first", 1}})) == 1);
         // What cannot be forked.
         CAIRN_JCONFORM(detail::conflict_of([&] { j.fork(t, "main", 1, "alt"); }, __LINE__).expected() == 0);
         CAIRN_JCONFORM_THROWS(invalid_argument, j.fork(t, "main", 6, "beyond"));
         CAIRN_JCONFORM_THROWS(not_found, j.fork(t, "nope", 0, "x"));
         CAIRN_JCONFORM(!j.info(t, "beyond") && !j.info(t, "x"));
       }});

  checks.push_back({"remove takes a run away, but never one that forks still read", [](RunJournal& j) {
                      const auto t = fresh_tenant("jremove");
                      (void)j.append(t, "src", 0, entries({{"a", 1}, {"b", 2}}));
                      j.fork(t, "src", 1, "child");
                      const auto msg = CAIRN_JCONFORM_THROWS(state_error, j.remove(t, "src"));
                      CAIRN_JCONFORM(msg.find("'child'") != std::string::npos);
                      CAIRN_JCONFORM(j.read(t, "child").size() == 1);
                      j.remove(t, "child");
                      j.remove(t, "src");
                      CAIRN_JCONFORM(!j.info(t, "src") && !j.info(t, "child"));
                      CAIRN_JCONFORM_THROWS(not_found, j.remove(t, "src"));
                      CAIRN_JCONFORM(j.append(t, "src", 0, entries({{"again", 1}})) == 1);  // the name is free again
                    }});

  checks.push_back(
      {"prune drops what no restore needs and keeps what forks read", [](RunJournal& j) {
         const auto t = fresh_tenant("jprune");
         (void)j.append(
             t, "r", 0,
             entries(
                 {{"a", 1}, {"b", 2}, {snapshot_kind, {{"s", 3}}}, {"d", 4}, {snapshot_kind, {{"s", 5}}}, {"f", 6}}));
         j.fork(t, "r", 4, "fork");  // restoring the fork needs r's snapshot 3 and entry 4
         CAIRN_JCONFORM(j.prune(t, "r") == 2);
         CAIRN_JCONFORM(j.info(t, "r")->kept_from == 3);
         CAIRN_JCONFORM_THROWS(state_error, j.read(t, "r"));
         CAIRN_JCONFORM((seqs(j.read(t, "r", 3)) == std::vector<std::uint64_t>{3, 4, 5, 6}));
         CAIRN_JCONFORM((seqs(j.read_for_restore(t, "r")) == std::vector<std::uint64_t>{5, 6}));
         CAIRN_JCONFORM((seqs(j.read_for_restore(t, "fork")) == std::vector<std::uint64_t>{3, 4}));
         CAIRN_JCONFORM_THROWS(invalid_argument, j.fork(t, "r", 2, "too-old"));
         j.remove(t, "fork");
         CAIRN_JCONFORM(j.prune(t, "r") == 2);
         CAIRN_JCONFORM((seqs(j.read_for_restore(t, "r")) == std::vector<std::uint64_t>{5, 6}));
         CAIRN_JCONFORM(j.prune(t, "r") == 0);
         CAIRN_JCONFORM(j.append(t, "r", 6, entries({{"g", 7}})) == 7);
         (void)j.append(t, "plain", 0, entries({{"a", 1}}));
         CAIRN_JCONFORM(j.prune(t, "plain") == 0);  // no snapshot: everything is needed
         CAIRN_JCONFORM(j.read(t, "plain").size() == 1);
       }});

  checks.push_back({"sweep removes runs idle since a time, but not the sources of live forks", [](RunJournal& j) {
                      const auto t = fresh_tenant("jsweep");
                      auto clock = std::make_shared<detail::FixedClock>();
                      j.set_clock(clock);
                      try {
                        clock->now = 1000;
                        (void)j.append(t, "old", 0, entries({{"a", 1}}));
                        (void)j.append(t, "old-source", 0, entries({{"a", 1}}));
                        (void)j.append(t, "old-with-old-fork", 0, entries({{"a", 1}}));
                        j.fork(t, "old-with-old-fork", 1, "old-fork");
                        clock->now = 5000;
                        (void)j.append(t, "fresh", 0, entries({{"a", 1}}));
                        j.fork(t, "old-source", 1, "fresh-fork");
                        auto removed = j.sweep(t, 3000);
                        std::sort(removed.begin(), removed.end());
                        CAIRN_JCONFORM((removed == std::vector<std::string>{"old", "old-fork", "old-with-old-fork"}));
                        CAIRN_JCONFORM(j.info(t, "old-source") && j.info(t, "fresh") && j.info(t, "fresh-fork"));
                        CAIRN_JCONFORM(j.read(t, "fresh-fork").size() == 1);
                      } catch (...) {
                        j.set_clock(nullptr);
                        throw;
                      }
                      j.set_clock(nullptr);
                    }});

  checks.push_back(
      {"writers racing on one run never fork it: each sequence number is won once", [](RunJournal& j) {
         const auto t = fresh_tenant("jrace");
         constexpr int threads = 8;
         constexpr int attempts = 40;
         std::vector<std::vector<std::uint64_t>> won(threads);
         std::atomic<bool> failed{false};
         std::vector<std::thread> pool;
         for (int i = 0; i < threads; ++i) {
           pool.emplace_back([&, i] {
             try {
               for (int k = 0; k < attempts; ++k) {
                 const auto info = j.info(t, "shared");
                 const std::uint64_t last = info ? info->last_seq : 0;
                 try {
                   const auto seq = j.append(t, "shared", last, entries({{"step", {{"thread", i}, {"k", k}}}}));
                   won[static_cast<std::size_t>(i)].push_back(seq);
                 } catch (const conflict& c) {
                   if (c.expected() != last || c.actual() == last) failed = true;
                 }
               }
             } catch (...) {
               failed = true;
             }
           });
         }
         for (auto& th : pool) th.join();
         CAIRN_JCONFORM(!failed);
         std::vector<std::uint64_t> all;
         for (const auto& w : won) all.insert(all.end(), w.begin(), w.end());
         std::sort(all.begin(), all.end());
         CAIRN_JCONFORM(!all.empty());
         CAIRN_JCONFORM(std::adjacent_find(all.begin(), all.end()) == all.end());
         CAIRN_JCONFORM(all.front() == 1 && all.back() == all.size());
         const auto stored = j.read(t, "shared");
         CAIRN_JCONFORM(stored.size() == all.size());
         for (int i = 0; i < threads; ++i) {  // each acknowledged entry is in the run, at the seq its writer was told
           for (std::size_t n = 0; n < won[static_cast<std::size_t>(i)].size(); ++n) {
             const auto& e = stored[won[static_cast<std::size_t>(i)][n] - 1];
             CAIRN_JCONFORM(e.data["thread"] == i);
           }
         }
       }});

  checks.push_back(
      {"a fork racing a prune leaves a fork that reads its entries or a clear refusal, in either order",
       [](RunJournal& j) { (void)race_fork_and_prune(j, j, ForkPruneRace::rounds(), fresh_tenant("jforkprune")); }});

  return checks;
}

#undef CAIRN_JCONFORM
#undef CAIRN_JCONFORM_THROWS

}  // namespace testing
CAIRN_END_NAMESPACE
