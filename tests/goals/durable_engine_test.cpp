// A GoalEngine attached to a run: each turn is one append (the context's entries and a JSON Patch of the engine
// state), a new engine resumes from the journal at any point byte for byte, and a resumed conversation books once.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "cairn/goals/engine.hpp"
#include "cairn/goals/sop.hpp"
#include "cairn/run/memory_journal.hpp"
#include "cairn/run/run.hpp"
#include "cairn/testing/clock.hpp"
#include "catch.hpp"
#include "goals_test_support.hpp"

using cairn::ExecutionContext;
using cairn::GoalEngine;
using cairn::Run;
using cairn::RunAt;
using goals_test::json;
using Strings = std::vector<std::string>;

namespace {

std::shared_ptr<cairn::SopPlanner> train_planner() {
  auto sops = std::make_shared<cairn::SopRegistry>();
  sops->load_file(goals_test::source_path("examples/sops/train-booking.json"));
  return std::make_shared<cairn::SopPlanner>(sops);
}

const Strings conversation = {"new: Find me a train to Paris",
                              "ev: origin = London",
                              "ev: destination = Paris",
                              "ev: date = 2025-10-01",
                              R"(ev: selectedTrain = {"id": "ES9024", "departs": "10:31"})",
                              "ev: confirmation = yes"};

struct World {
  std::shared_ptr<cairn::InMemoryArtifactStore> store = std::make_shared<cairn::InMemoryArtifactStore>();
  std::shared_ptr<cairn::InMemoryRunJournal> journal = std::make_shared<cairn::InMemoryRunJournal>();
  std::shared_ptr<std::vector<json>> searches = std::make_shared<std::vector<json>>();
  std::shared_ptr<std::vector<json>> bookings = std::make_shared<std::vector<json>>();
  cairn::ToolRegistry tools;
  std::shared_ptr<cairn::SopPlanner> planner = train_planner();
  World() {
    tools.add(goals_test::train_search_tool(searches));
    tools.add(goals_test::train_booking_tool(bookings));
  }
};

// One process's view of the run: a context and an engine attached to it.
struct Agent {
  Run run;
  ExecutionContext ctx;
  GoalEngine engine;
  Agent(World& w, const std::string& run_id, std::uint64_t at = 0)
      : run(at == 0 ? Run(w.journal, "acme", run_id) : Run(w.journal, "acme", run_id, RunAt{at})),
        ctx(w.store, "acme"),
        engine(ctx, w.tools, {std::make_shared<goals_test::TextInterpreter>(), w.planner}) {
    ctx.attach(run);
    engine.attach(run);
  }
  std::string state() const { return engine.to_json().dump() + "\n" + ctx.state().dump(); }
};

}  // namespace

TEST_CASE("every turn of a journalled goal engine is rebuilt byte for byte from the journal") {
  World w;
  std::vector<std::pair<std::uint64_t, std::string>> after_turn;
  {
    Agent a(w, "booking");
    after_turn.emplace_back(a.run.seq(), a.state());
    for (const auto& message : conversation) {
      a.engine.handle(message);
      after_turn.emplace_back(a.run.seq(), a.state());
    }
    REQUIRE(a.engine.goals().empty());
  }
  for (const auto& [seq, state] : after_turn) {
    INFO("seq " << seq);
    Agent b(w, "booking", seq);
    CHECK(b.state() == state);
  }
  // After the first turn (which plans the whole tree), each turn is stored as a patch much smaller than the state.
  int patches = 0;
  for (const auto& e : w.journal->read("acme", "booking")) {
    if (e.kind != "goals.patch" || ++patches == 1) continue;
    CHECK(e.data.dump().size() * 2 < after_turn.back().second.size());
  }
  CHECK(patches == static_cast<int>(conversation.size()));
}

TEST_CASE("a conversation resumed by a new process after each turn ends as the uninterrupted one, booking once") {
  World straight;
  std::string expected;
  std::vector<std::string> expected_log;
  {
    Agent a(straight, "booking");
    for (const auto& message : conversation) a.engine.handle(message);
    expected = goals_test::without_times(a.engine.to_json()).dump();
    for (const auto& m : a.ctx.messages()) expected_log.push_back(m.content);
  }
  World w;
  for (const auto& message : conversation) {
    Agent a(w, "booking");  // every turn in a new "process"
    a.engine.handle(message);
  }
  Agent last(w, "booking");
  CHECK(goals_test::without_times(last.engine.to_json()).dump() == expected);
  CHECK(w.bookings->size() == 1);
  CHECK(w.searches->size() == 1);
  std::vector<std::string> log;
  for (const auto& m : last.ctx.messages()) log.push_back(m.content);
  CHECK(log == expected_log);
}

namespace {

// The process that ran the last turn of `w` died right after the booking tool's intended entry was committed (it is
// committed on its own, before the tool runs) and before the turn's append: `into` gets the journal up to that
// entry, and the same store.
void crash_before_booking_finished(World& w, World& into) {
  {
    Agent a(w, "booking");
    for (const auto& message : conversation) a.engine.handle(message);
    REQUIRE(w.bookings->size() == 1);
  }
  const auto all = w.journal->read("acme", "booking");
  auto intended = std::find_if(all.rbegin(), all.rend(), [](const cairn::JournalEntry& e) {
    return e.kind == "context.tool_intended" && e.data.at("tool") == "train-booking-api";
  });
  REQUIRE(intended != all.rend());
  into.store = w.store;
  (void)into.journal->append("acme", "booking", 0, std::vector<cairn::JournalEntry>(all.begin(), intended.base()));
}

}  // namespace

TEST_CASE("a turn re-sent after a crash does not book twice: the call in doubt stops the turn and reaches the host") {
  World w, w2;
  crash_before_booking_finished(w, w2);
  Agent b(w2, "booking");
  REQUIRE(b.ctx.in_doubt_calls().size() == 1);
  const cairn::RecordedCall doubt = b.ctx.in_doubt_calls()[0];
  CHECK(doubt.tool == "train-booking-api");
  CHECK(doubt.call_id.rfind("goal-g", 0) == 0);  // named after its goal
  try {
    (void)b.engine.handle(conversation.back());  // the host re-sends the message it got no answer to
    FAIL("handle() returned");
  } catch (const cairn::call_in_doubt& e) {  // no policy: the host's to decide
    CHECK(e.call().call_id == doubt.call_id);
  }
  CHECK(w2.bookings->empty());  // not fired again without the host's word
  CHECK(b.ctx.in_doubt_calls().size() == 1);
  // The goal was not abandoned for it: the failure was the run's, not the tool's.
  for (const auto& g : b.engine.goals().goals()) CHECK(g.reason.find("in doubt") == std::string::npos);
}

TEST_CASE("the engine's in-doubt policy decides a re-sent turn's call: give up, done, or retry") {
  World straight;
  std::string expected;
  {
    Agent a(straight, "booking");
    for (const auto& message : conversation) a.engine.handle(message);
    expected = goals_test::without_times(a.engine.to_json()).dump();
  }
  World w, w2;
  crash_before_booking_finished(w, w2);
  Agent b(w2, "booking");
  std::vector<std::string> asked;

  SECTION("give up: the goal fails with that reason, nothing is booked") {
    b.engine.set_in_doubt([&](const cairn::RecordedCall& c) {
      asked.push_back(c.call_id);
      return cairn::InDoubtDecision::give_up;
    });
    const auto said = b.engine.handle(conversation.back());
    CHECK(w2.bookings->empty());
    std::string all;
    for (const auto& line : said) all += line + "\n";
    CHECK_THAT(all, cairn_test::ContainsSubstring("in doubt after a crash; the host gave up on it"));
  }
  SECTION("done: the host found the booking; the turn ends as the uninterrupted one, without booking again") {
    b.engine.set_in_doubt([&](const cairn::RecordedCall& c) {
      asked.push_back(c.call_id);
      const json train = {{"id", "ES9024"}, {"departs", "10:31"}};
      return cairn::InDoubtAction::done(cairn::ToolResult::ok({{"reference", "CRN-ES9024"}, {"train", train}}));
    });
    (void)b.engine.handle(conversation.back());
    CHECK(w2.bookings->empty());
    CHECK(goals_test::without_times(b.engine.to_json()).dump() == expected);
  }
  SECTION("retry: booked once more, as the policy said") {
    b.engine.set_in_doubt([&](const cairn::RecordedCall& c) {
      asked.push_back(c.call_id);
      return cairn::InDoubtAction::retry();
    });
    (void)b.engine.handle(conversation.back());
    CHECK(w2.bookings->size() == 1);
    CHECK(goals_test::without_times(b.engine.to_json()).dump() == expected);
  }
  REQUIRE(asked.size() == 1);
  CHECK(asked[0].rfind("goal-g", 0) == 0);
  CHECK(b.ctx.in_doubt_calls().empty());
  // Settled in the journal too: a new process replays the call.
  Agent c(w2, "booking");
  CHECK(c.ctx.in_doubt_calls().empty());
  CHECK(c.engine.to_json().dump() == b.engine.to_json().dump());
}

TEST_CASE("a re-sent turn whose call was claimed within the call lease stops with call_in_flight, asking nothing") {
  World w, w2;
  crash_before_booking_finished(w, w2);  // the booking's intended entry was stamped just now, by the system clock
  cairn::RunOptions leased;
  leased.call_lease = std::chrono::hours(1);
  int asked = 0;
  auto turn = [&](bool in_flight) {
    Run run(w2.journal, "acme", "booking", leased);
    ExecutionContext ctx(w2.store, "acme");
    ctx.attach(run);
    GoalEngine engine(ctx, w2.tools, {std::make_shared<goals_test::TextInterpreter>(), w2.planner});
    engine.set_in_doubt([&](const cairn::RecordedCall&) {
      ++asked;
      return cairn::InDoubtAction::retry();
    });
    engine.attach(run);
    CHECK(ctx.in_doubt_calls().size() == (in_flight ? 0U : 1U));
    CHECK(ctx.in_flight_calls().size() == (in_flight ? 1U : 0U));
    const auto seq = run.seq();
    if (in_flight) {
      CHECK_THROWS_AS(engine.handle(conversation.back()), cairn::call_in_flight);
      CHECK(w2.journal->info("acme", "booking")->last_seq == seq);  // nothing of the turn was committed
    } else {
      (void)engine.handle(conversation.back());
    }
  };
  turn(true);
  CHECK(asked == 0);
  CHECK(w2.bookings->empty());
  // Two hours on by the journal's clock, the lease has ended: the call is in doubt and the policy decides.
  w2.journal->set_clock(std::make_shared<cairn::testing::ManualClock>(cairn::detail::now_ms() + 2 * 3600 * 1000));
  turn(false);
  CHECK(asked == 1);
  CHECK(w2.bookings->size() == 1);
}

TEST_CASE("a conflict in a turn with a tool call reaches the host, and the tool never fires") {
  World w;
  {
    Agent a(w, "booking");
    for (std::size_t i = 0; i + 1 < conversation.size(); ++i) a.engine.handle(conversation[i]);
  }
  Agent first(w, "booking");
  Agent second(w, "booking");  // two workers resume the same run
  first.engine.handle(conversation.back());
  REQUIRE(w.bookings->size() == 1);
  CHECK_THROWS_AS(second.engine.handle(conversation.back()), cairn::conflict);
  CHECK(w.bookings->size() == 1);
}
