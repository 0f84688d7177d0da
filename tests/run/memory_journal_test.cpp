#include "cairn/run/memory_journal.hpp"

#include <atomic>
#include <memory>
#include <string>
#include <thread>

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
