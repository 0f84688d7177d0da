#include "cairn/run/memory_journal.hpp"

#include <atomic>
#include <memory>
#include <thread>
#include <string>

#include "cairn/testing/journal_conformance.hpp"
#include "catch.hpp"

using namespace cairn;

TEST_CASE("InMemoryRunJournal passes the journal conformance suite, each check on a new journal") {
  for (const auto& check : testing::journal_conformance_checks()) {
    INFO(check.name);
    InMemoryRunJournal journal;
    CHECK_NOTHROW(check.run(journal));
  }
}

TEST_CASE("InMemoryRunJournal passes the journal conformance suite on one journal shared by every check") {
  InMemoryRunJournal journal;
  for (const auto& check : testing::journal_conformance_checks()) {
    INFO(check.name);
    CHECK_NOTHROW(check.run(journal));
  }
}

TEST_CASE("InMemoryRunJournal: a fork racing a prune never points at pruned entries") {
  // Each round, one thread prunes a run while another forks it at an early point. Whichever wins, the journal
  // stays whole: either the fork exists and reads its entries, or the fork or the prune was refused.
  InMemoryRunJournal journal;
  int forks_made = 0, prunes_refused = 0, forks_refused = 0;
  for (int round = 0; round < 300; ++round) {
    const std::string run = "run-" + std::to_string(round);
    const std::string fork = "fork-" + std::to_string(round);
    std::uint64_t seq = 0;
    for (int i = 1; i <= 20; ++i) {
      JournalEntry e;
      e.kind = i % 10 == 0 ? "snapshot" : "step";
      e.data = i;
      seq = journal.append("t", run, seq, {e});
    }
    std::atomic<int> ready{0};
    bool forked = false, pruned = false;
    std::thread pruner([&] {
      ++ready;
      while (ready < 2) {
      }
      try {
        journal.prune("t", run);
        pruned = true;
      } catch (const state_error&) {
      }
    });
    std::thread forker([&] {
      ++ready;
      while (ready < 2) {
      }
      try {
        journal.fork("t", run, 3, fork);
        forked = true;
      } catch (const invalid_argument&) {  // pruned first: seq 3 is gone
      }
    });
    pruner.join();
    forker.join();
    prunes_refused += !pruned;
    forks_refused += !forked;
    if (forked) {
      ++forks_made;
      const auto entries = journal.read("t", fork);
      REQUIRE(entries.size() == 3);
      CHECK(entries.back().seq == 3);
    }
  }
  CHECK(forks_made + forks_refused == 300);
  UNSCOPED_INFO("forks made " << forks_made << ", forks refused " << forks_refused << ", prunes refused "
                              << prunes_refused);
}
