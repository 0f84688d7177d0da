// The parts of RunJournal every backend shares: validation, reading through forks, prune and sweep rules. Run on
// the in-memory journal; the conformance suite runs the same behaviour on every backend.
#include "cairn/run/journal.hpp"

#include <string>
#include <vector>

#include "cairn/run/memory_journal.hpp"
#include "catch.hpp"

using namespace cairn;
using nlohmann::json;

namespace {
std::vector<JournalEntry> one(std::string kind, json data) {
  JournalEntry e;
  e.kind = std::move(kind);
  e.data = std::move(data);
  return {e};
}

class StepClock final : public Clock {
 public:
  std::int64_t now_ms() const override { return now; }
  std::int64_t now = 1000;
};
}  // namespace

TEST_CASE("append stamps entries with the journal's clock and numbers them after the expected seq") {
  auto clock = std::make_shared<StepClock>();
  InMemoryRunJournal journal(clock);
  CHECK(journal.append("t", "r", 0, one("a", 1)) == 1);
  clock->now = 2000;
  CHECK(journal.append("t", "r", 1, one("b", 2)) == 2);
  const auto entries = journal.read("t", "r");
  REQUIRE(entries.size() == 2);
  CHECK(entries[0].time == 1000);
  CHECK(entries[1].time == 2000);
  CHECK(entries[1].seq == 2);
  const auto info = journal.info("t", "r");
  CHECK(info->created_at == 1000);
  CHECK(info->updated_at == 2000);
}

TEST_CASE("error messages name the run, the call and what was wrong") {
  InMemoryRunJournal journal;
  (void)journal.append("t", "r", 0, one("a", 1));
  CHECK_THROWS_WITH(journal.append("t", "r", 0, one("a", 1)),
                    "append to run 'r': expected it to end at seq 0, it ends at seq 1");
  CHECK_THROWS_WITH(journal.read("t", "gone"), "read: run 'gone' not found in tenant 't'");
  CHECK_THROWS_WITH(journal.append("t", "bad\tid", 0, one("a", 1)),
                    "append: run id 'bad\\x09id' must be 1 to 256 bytes of printable UTF-8");
  CHECK_THROWS_WITH(journal.append("", "r", 0, one("a", 1)), "tenant_id: must not be empty");
  CHECK_THROWS_WITH(journal.append("t", "r", 1, {}), "append to run 'r': no entries");
  CHECK_THROWS_WITH(journal.read_for_restore("t", "r", 9), "read_for_restore: run 'r' ends at seq 1 (asked for 9)");
  CHECK_THROWS_AS(journal.append("t", "r", RunJournal::max_seq, one("a", 1)), invalid_argument);
}

TEST_CASE("a long chain of forks reads through every link") {
  InMemoryRunJournal journal;
  (void)journal.append("t", "r0", 0, one("step", 0));
  for (int i = 1; i <= 50; ++i) {
    const std::string from = "r" + std::to_string(i - 1);
    const std::string to = "r" + std::to_string(i);
    journal.fork("t", from, static_cast<std::uint64_t>(i), to);
    (void)journal.append("t", to, static_cast<std::uint64_t>(i), one("step", i));
  }
  const auto all = journal.read("t", "r50");
  REQUIRE(all.size() == 51);
  for (std::size_t i = 0; i < all.size(); ++i) {
    CHECK(all[i].seq == i + 1);
    CHECK(all[i].data == static_cast<int>(i));
  }
  // Every link is pinned by the fork after it.
  CHECK_THROWS_AS(journal.remove("t", "r10"), state_error);
}
