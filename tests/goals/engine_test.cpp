// GoalEngine: whole turns on a real ExecutionContext, ToolRegistry and in-memory store, with rule-based host parts.
// Every semantic rule of DESIGN.md's goals/ section has a test here; the train booking runs end to end through the
// SopPlanner and the showcase's SOP file.
#include <memory>
#include <string>
#include <vector>

#include "cairn/context/prompt.hpp"
#include "cairn/goals/engine.hpp"
#include "cairn/goals/sop.hpp"
#include "catch.hpp"
#include "goals_test_support.hpp"

using cairn::Condition;
using cairn::Decomposition;
using cairn::GoalEngine;
using cairn::GoalPlan;
using cairn::GoalStatus;
using cairn::Predicate;
using cairn::Role;
using goals_test::FnEvaluator;
using goals_test::FnPlanner;
using goals_test::json;
using goals_test::plan_of;
using goals_test::Rig;
using goals_test::sub;
using Strings = std::vector<std::string>;

namespace {

constexpr auto AND = Decomposition::Kind::all;
constexpr auto OR = Decomposition::Kind::any;

std::shared_ptr<cairn::SopPlanner> train_planner(std::shared_ptr<cairn::GoalPlanner> fallback = nullptr) {
  auto sops = std::make_shared<cairn::SopRegistry>();
  sops->load_file(goals_test::source_path("examples/sops/train-booking.json"));
  cairn::SopPlannerOptions options;
  options.fallback = std::move(fallback);
  return std::make_shared<cairn::SopPlanner>(sops, options);
}

// A planner that answers by the gloss of the goal.
std::shared_ptr<FnPlanner> planner_by_gloss(std::function<GoalPlan(const std::string&)> f) {
  return std::make_shared<FnPlanner>([f](const cairn::Goal& g, const json&) { return f(g.gloss); });
}

GoalStatus status(const GoalEngine& e, const std::string& id) { return e.goals().find(id)->status; }

cairn::Tool tool(std::string name, json schema, std::function<cairn::ToolResult(const json&)> fn) {
  return cairn::Tool{std::move(name), "test tool", std::move(schema), std::move(fn)};
}

}  // namespace

TEST_CASE("the train booking runs end to end through the SopPlanner, one whole turn per message") {
  Rig rig;
  auto searches = std::make_shared<std::vector<json>>();
  auto bookings = std::make_shared<std::vector<json>>();
  rig.tools.add(goals_test::train_search_tool(searches));
  rig.tools.add(goals_test::train_booking_tool(bookings));
  GoalEngine engine(rig.ctx, rig.tools, {rig.interpreter, train_planner()});

  REQUIRE(engine.handle("new: Find me a train to Paris") == Strings{"Where are you travelling from?"});
  const cairn::Goal* root = engine.goals().find("g1");
  REQUIRE(root->decomposition->kind == AND);
  REQUIRE(root->decomposition->children.size() == 9);
  REQUIRE(root->status == GoalStatus::blocked);
  REQUIRE(root->reason == "waiting for 9 subgoals");
  // children pushed so that the first is on top
  REQUIRE(engine.goals().ids() == Strings{"g1", "g10", "g9", "g8", "g7", "g6", "g5", "g4", "g3", "g2"});
  REQUIRE(engine.goals().find("g2")->gloss == "Gather origin");
  REQUIRE(engine.goals().find("g2")->status == GoalStatus::active);

  REQUIRE(engine.handle("ev: origin = London") == Strings{"Where are you travelling to?"});
  REQUIRE(status(engine, "g2") == GoalStatus::achieved);
  REQUIRE(engine.handle("ev: destination = Paris") == Strings{"On which day do you want to travel (YYYY-MM-DD)?"});

  const Strings turn4 = engine.handle("ev: date = 2025-10-01");
  REQUIRE(turn4.size() == 2);
  REQUIRE(turn4[0] ==
          "Present the available trains:\n"
          "- {\"arrives\":\"12:20\",\"departs\":\"09:01\",\"id\":\"ES9014\",\"price\":89}\n"
          "- {\"arrives\":\"13:47\",\"departs\":\"10:31\",\"id\":\"ES9024\",\"price\":64}");
  REQUIRE(turn4[1] == "Which train would you like (its time or its id)?");
  // the tool got its arguments from the evidence: exactly the schema's properties that are known
  REQUIRE(searches->size() == 1);
  REQUIRE(searches->at(0) == json{{"origin", "London"}, {"destination", "Paris"}, {"date", "2025-10-01"}});

  REQUIRE(engine.handle(R"(ev: selectedTrain = {"id": "ES9024", "departs": "10:31"})") ==
          Strings{"Shall I book it? (yes/no)"});
  const Strings last = engine.handle("ev: confirmation = yes");
  REQUIRE(last.size() == 2);
  REQUIRE(last[0] ==
          "Show the booking reference:\n- reference: CRN-ES9024\n- train: {\"departs\":\"10:31\",\"id\":\"ES9024\"}");
  REQUIRE(last[1] == "Done: Find me a train to Paris.");
  REQUIRE(bookings->at(0) == json{{"selectedTrain", {{"id", "ES9024"}, {"departs", "10:31"}}}, {"date", "2025-10-01"}});

  REQUIRE(engine.goals().empty());
  for (const auto& g : engine.goals().goals()) REQUIRE(g.status == GoalStatus::achieved);
  // everything learned ends up on the root goal (seed 002 §13.1)
  const json& evidence = engine.goals().find("g1")->evidence;
  REQUIRE(evidence["origin"] == "London");
  REQUIRE(evidence["destination"] == "Paris");
  REQUIRE(evidence["date"] == "2025-10-01");
  REQUIRE(evidence["trainList"].size() == 2);
  REQUIRE(evidence["selectedTrain"]["id"] == "ES9024");
  REQUIRE(evidence["confirmation"] == true);
  REQUIRE(evidence["booking"]["reference"] == "CRN-ES9024");
  // and every piece of evidence is an artifact of the context
  std::vector<std::string> names;
  for (const auto& a : rig.ctx.list_artifacts()) names.push_back(a.name);
  REQUIRE(names == Strings{"origin", "destination", "date", "trainList", "selectedTrain", "confirmation", "booking"});
  REQUIRE(rig.ctx.get_artifact("trainList")->metadata()["tool_name"] == "train-search-api");
  REQUIRE(rig.ctx.get_artifact("origin")->metadata()["goal_id"] == "g2");
  REQUIRE(*rig.ctx.get_artifact_value("booking") == evidence["booking"]);
  // the conversation is in the context too
  REQUIRE(rig.ctx.message(0).role == Role::user);
  REQUIRE(rig.ctx.message(0).content == "new: Find me a train to Paris");
  REQUIRE(rig.ctx.message(1).content == "Where are you travelling from?");
  // the interpreter was shown the current goal and what it can see
  REQUIRE(rig.interpreter->seen_current == Strings{"", "g2", "g3", "g4", "g7", "g8"});
  REQUIRE(rig.interpreter->seen_evidence[4]["trainList"].size() == 2);
}

TEST_CASE("facts given with a new goal become its evidence, so the SOP does not ask for them") {
  Rig rig;
  auto searches = std::make_shared<std::vector<json>>();
  rig.tools.add(goals_test::train_search_tool(searches));
  GoalEngine engine(rig.ctx, rig.tools, {rig.interpreter, train_planner()});
  const Strings out = engine.handle(R"(new: Find me a train to Paris | {"destination": "Paris", "origin": "York"})");
  REQUIRE(out == Strings{"On which day do you want to travel (YYYY-MM-DD)?"});
  REQUIRE(engine.goals().find("g1")->evidence == json{{"destination", "Paris"}, {"origin", "York"}});
  REQUIRE(engine.goals().find("g1")->decomposition->children.size() == 7);  // one gather, six steps
  REQUIRE(*rig.ctx.get_artifact_value("origin") == "York");
}

TEST_CASE("AND fails when one child is abandoned: the other children leave the stack") {
  Rig rig;
  rig.tools.add(tool("broken", json{{"type", "object"}},
                     [](const json&) { return cairn::ToolResult::failure("service unavailable"); }));
  auto planner = planner_by_gloss([](const std::string&) {
    return plan_of(AND, {sub("Prepare", "execute"), sub("Fetch data", "use_tool", {{"tool", "broken"}}),
                         sub("Ask name", "gather_info", {{"key", "name"}})});
  });
  GoalEngine engine(rig.ctx, rig.tools, {rig.interpreter, planner});
  const Strings out = engine.handle("new: Do the thing");
  REQUIRE(out == Strings{"Could not fetch data: tool broken failed: service unavailable.",
                         "I have abandoned 'Do the thing': subgoal 'Fetch data' was abandoned (tool broken failed: "
                         "service unavailable)."});
  REQUIRE(status(engine, "g2") == GoalStatus::achieved);
  REQUIRE(status(engine, "g3") == GoalStatus::abandoned);
  REQUIRE(status(engine, "g4") == GoalStatus::abandoned);
  REQUIRE(engine.goals().find("g4")->reason == "its ancestor 'Do the thing' was abandoned");
  REQUIRE(status(engine, "g1") == GoalStatus::abandoned);
  REQUIRE(engine.goals().empty());
  REQUIRE(engine.goals().unfinished_count() == 0);
  REQUIRE_FALSE(rig.ctx.has_artifact("broken"));
}

TEST_CASE("OR takes the first child that succeeds: a failed alternative falls back to the next") {
  Rig rig;
  rig.tools.add(
      tool("primary", json{{"type", "object"}}, [](const json&) { return cairn::ToolResult::failure("timeout"); }));
  rig.tools.add(tool("backup", json{{"type", "object"}}, [](const json&) {
    return cairn::ToolResult::ok({{"forecast", "sunny"}});
  }));
  int third_called = 0;
  rig.tools.add(tool("third", json{{"type", "object"}}, [&third_called](const json&) {
    ++third_called;
    return cairn::ToolResult::ok(1);
  }));
  auto planner = planner_by_gloss([](const std::string&) {
    return plan_of(OR, {sub("Ask the primary service", "use_tool", {{"tool", "primary"}, {"output", "forecast"}}),
                        sub("Ask the backup service", "use_tool", {{"tool", "backup"}, {"output", "forecast"}}),
                        sub("Ask a third service", "use_tool", {{"tool", "third"}, {"output", "forecast"}})});
  });
  GoalEngine engine(rig.ctx, rig.tools, {rig.interpreter, planner});
  const Strings out = engine.handle("new: Get the weather");
  REQUIRE(out == Strings{"Could not ask the primary service: tool primary failed: timeout.", "Done: Get the weather."});
  REQUIRE(status(engine, "g2") == GoalStatus::abandoned);
  REQUIRE(status(engine, "g3") == GoalStatus::achieved);
  REQUIRE(status(engine, "g4") == GoalStatus::abandoned);
  REQUIRE(engine.goals().find("g4")->reason == "not needed: alternative 'Ask the backup service' was achieved");
  REQUIRE(third_called == 0);
  REQUIRE(status(engine, "g1") == GoalStatus::achieved);
  REQUIRE(engine.goals().find("g1")->reason == "an alternative was achieved");
  // a result object holding the output key gives that member (the context layer's rule)
  REQUIRE(engine.goals().find("g1")->evidence["forecast"] == "sunny");
  REQUIRE(engine.goals().empty());
}

TEST_CASE("OR fails when every alternative is abandoned") {
  Rig rig;
  rig.tools.add(tool("down", json{{"type", "object"}},
                     [](const json&) -> cairn::ToolResult { throw std::runtime_error("connection refused"); }));
  auto planner = planner_by_gloss([](const std::string&) {
    return plan_of(OR, {sub("Try A", "use_tool", {{"tool", "down"}}), sub("Try B", "use_tool", {{"tool", "down"}})});
  });
  GoalEngine engine(rig.ctx, rig.tools, {rig.interpreter, planner});
  const Strings out = engine.handle("new: Reach someone");
  REQUIRE(out.size() == 3);
  REQUIRE(out[0] == "Could not try A: tool down failed: the tool threw: connection refused.");
  REQUIRE(out[2] == "I have abandoned 'Reach someone': all 2 alternatives were abandoned.");
  REQUIRE(status(engine, "g1") == GoalStatus::abandoned);
}

TEST_CASE("abandoning in the middle of a subtree abandons the subtree and fails the AND above") {
  Rig rig;
  // Trip (AND) -> [Plan route (AND) -> [ask from, ask to], Pay]
  auto planner = planner_by_gloss([](const std::string& gloss) {
    if (gloss == "Trip") return plan_of(AND, {sub("Plan route", "composite"), sub("Pay", "execute")});
    return plan_of(AND,
                   {sub("Ask from", "gather_info", {{"key", "from"}}), sub("Ask to", "gather_info", {{"key", "to"}})});
  });
  GoalEngine engine(rig.ctx, rig.tools, {rig.interpreter, planner});
  REQUIRE(engine.handle("new: Trip") == Strings{"Please provide from"});
  REQUIRE(engine.goals().ids() == Strings{"g1", "g3", "g2", "g5", "g4"});

  SECTION("abandon the current goal") {
    const Strings out = engine.handle("abandon");
    REQUIRE(out == Strings{"OK, I have abandoned 'Ask from'.",
                           "I have abandoned 'Trip': subgoal 'Plan route' was abandoned (subgoal 'Ask from' was "
                           "abandoned (abandoned by the user))."});
    for (const char* id : {"g1", "g2", "g3", "g4", "g5"}) REQUIRE(status(engine, id) == GoalStatus::abandoned);
    REQUIRE(engine.goals().find("g3")->reason == "its ancestor 'Trip' was abandoned");
    REQUIRE(engine.goals().empty());
  }
  SECTION("abandon a goal in the middle by id") {
    const Strings out = engine.handle("abandon: g2");
    REQUIRE(out[0] == "OK, I have abandoned 'Plan route'.");
    REQUIRE(status(engine, "g4") == GoalStatus::abandoned);
    REQUIRE(status(engine, "g5") == GoalStatus::abandoned);
    REQUIRE(engine.goals().find("g5")->reason == "its ancestor 'Plan route' was abandoned");
    REQUIRE(status(engine, "g1") == GoalStatus::abandoned);
    REQUIRE(engine.goals().empty());
  }
  SECTION("an unknown id is refused before anything changes") {
    const auto messages = rig.ctx.message_count();
    REQUIRE_THROWS_AS(engine.handle("abandon: g99"), cairn::invalid_argument);
    REQUIRE(rig.ctx.message_count() == messages);
    REQUIRE(status(engine, "g4") == GoalStatus::active);
  }
}

TEST_CASE("the user abandoning one alternative of an OR moves on to the next") {
  Rig rig;
  auto planner = planner_by_gloss([](const std::string&) {
    return plan_of(
        OR, {sub("Ask phone", "gather_info", {{"key", "phone"}}), sub("Ask email", "gather_info", {{"key", "email"}})});
  });
  GoalEngine engine(rig.ctx, rig.tools, {rig.interpreter, planner});
  REQUIRE(engine.handle("new: Get a contact") == Strings{"Please provide phone"});
  REQUIRE(engine.handle("abandon") == Strings{"OK, I have abandoned 'Ask phone'.", "Please provide email"});
  REQUIRE(engine.handle("ev: email = a@b.org") == Strings{"Done: Get a contact."});
}

TEST_CASE("gather_info asks and waits, the question comes again until the answer arrives") {
  Rig rig;
  auto planner = planner_by_gloss([](const std::string&) {
    return plan_of(AND, {sub("Ask date", "gather_info", {{"key", "date"}, {"prompt", "When?"}}),
                         sub("Ask seat", "gather_info", {{"key", "seat"}})});
  });
  GoalEngine engine(rig.ctx, rig.tools, {rig.interpreter, planner});
  REQUIRE(engine.handle("new: Reserve") == Strings{"When?"});
  REQUIRE(engine.handle("hello there") == Strings{"When?"});
  // evidence for another key lands on the current goal and does not finish it
  REQUIRE(engine.handle("ev: seat = 12A") == Strings{"When?"});
  REQUIRE(engine.goals().find("g2")->evidence == json{{"seat", "12A"}});
  // once "Ask date" is achieved its evidence moves up, so "Ask seat" is satisfied without asking
  REQUIRE(engine.handle("ev: date = friday") == Strings{"Done: Reserve."});
  REQUIRE(engine.goals().find("g3")->reason == "seat is known");
}

TEST_CASE("a QuestionWriter words gather_info questions, with suggestions") {
  struct Writer : cairn::QuestionWriter {
    json seen;
    cairn::Question write(const cairn::Goal& g, const std::string& key, const std::string& prompt,
                          const json& evidence) override {
      seen = {{"goal", g.id}, {"key", key}, {"prompt", prompt}, {"evidence", evidence}};
      return {"Which " + key + "?", {"window", "aisle"}};
    }
  };
  Rig rig;
  auto writer = std::make_shared<Writer>();
  auto planner = planner_by_gloss([](const std::string&) {
    return plan_of(AND, {sub("Ask seat", "gather_info", {{"key", "seat"}, {"prompt", "Seat?"}})});
  });
  GoalEngine engine(rig.ctx, rig.tools, {rig.interpreter, planner, nullptr, writer});
  REQUIRE(engine.handle(R"(new: Reserve | {"train": "ES9024"})") == Strings{"Which seat?\nSuggestions: window, aisle"});
  REQUIRE(writer->seen ==
          json{{"goal", "g2"}, {"key", "seat"}, {"prompt", "Seat?"}, {"evidence", {{"train", "ES9024"}}}});
}

TEST_CASE("confirm asks and waits for yes or no, no abandons") {
  Rig rig;
  auto planner = planner_by_gloss([](const std::string&) {
    return plan_of(AND, {sub("Confirm the order", "confirm"), sub("Finish", "execute")});
  });
  GoalEngine engine(rig.ctx, rig.tools, {rig.interpreter, planner});
  REQUIRE(engine.handle("new: Order") == Strings{"Confirm the order? (yes/no)"});

  SECTION("yes") {
    REQUIRE(engine.handle("ev: confirmation = Yes!") == Strings{"Done: Order."});
    REQUIRE(engine.goals().find("g1")->evidence["confirmation"] == true);
  }
  SECTION("no") {
    REQUIRE(engine.handle("ev: confirmation = no") ==
            Strings{"Could not confirm the order: the user said no.",
                    "I have abandoned 'Order': subgoal 'Confirm the order' was abandoned (the user said no)."});
    REQUIRE(status(engine, "g3") == GoalStatus::abandoned);
  }
  SECTION("anything else is asked again and not stored") {
    REQUIRE(engine.handle("ev: confirmation = perhaps") ==
            Strings{"Please answer yes or no.", "Confirm the order? (yes/no)"});
    REQUIRE(engine.goals().find("g2")->evidence.empty());
    REQUIRE_FALSE(rig.ctx.has_artifact("confirmation"));
    REQUIRE(engine.handle("ev: confirmation = true") == Strings{"Done: Order."});
  }
}

TEST_CASE("present_info says and completes, a missing value blocks it") {
  Rig rig;
  auto planner = planner_by_gloss([](const std::string& gloss) {
    if (gloss == "Show") {
      return plan_of(AND, {sub("The options", "present_info", {{"key", "options"}}),
                           sub("A note", "present_info", {{"text", "Thanks for waiting"}}),
                           sub("Data", "present_info", {{"data", 42}})});
    }
    return plan_of(AND, {sub("Nothing yet", "present_info", {{"key", "missing"}})});
  });
  SECTION("default presentation") {
    GoalEngine engine(rig.ctx, rig.tools, {rig.interpreter, planner});
    REQUIRE(engine.handle(R"(new: Show | {"options": ["a", {"b": 1}]})") ==
            Strings{"The options:\n- a\n- {\"b\":1}", "Thanks for waiting", "Data: 42", "Done: Show."});
  }
  SECTION("a host presenter") {
    cairn::GoalEngineOptions options;
    options.presenter = [](const cairn::Goal& g, const json& v) { return g.id + "=" + v.dump(); };
    GoalEngine engine(rig.ctx, rig.tools, {rig.interpreter, planner}, options);
    REQUIRE(engine.handle(R"(new: Show | {"options": [1]})") ==
            Strings{"g2=[1]", "Thanks for waiting", "g4=42", "Done: Show."});
  }
  SECTION("nothing to present") {
    GoalEngine engine(rig.ctx, rig.tools, {rig.interpreter, planner});
    REQUIRE(engine.handle("new: Empty") ==
            Strings{"I have nothing to show for 'Nothing yet': missing is not known yet."});
    REQUIRE(status(engine, "g2") == GoalStatus::blocked);
    REQUIRE(engine.goals().find("g2")->reason == "there is nothing to present: no evidence 'missing'");
    // blocked goals are retried each turn
    REQUIRE(engine.handle("ev: missing = found") == Strings{"Nothing yet: found", "Done: Empty."});
  }
}

TEST_CASE("the vanilla decomposition of seed 002 §13.2 runs to the end in one turn") {
  Rig rig;
  auto vanilla = planner_by_gloss([](const std::string&) {
    GoalPlan p = plan_of(AND, {sub("Choose a cache store", "execute"), sub("Define the cache interface", "execute"),
                               sub("Implement the cache layer", "execute"), sub("Add invalidation", "execute")});
    p.source = "vanilla";
    return p;
  });
  // the SOP planner finds no SOP for this goal and hands it to the fallback
  GoalEngine engine(rig.ctx, rig.tools, {rig.interpreter, train_planner(vanilla)});
  REQUIRE(engine.handle("new: Create a caching layer") == Strings{"Done: Create a caching layer."});
  REQUIRE(engine.goals().goal_count() == 5);
  for (const auto& g : engine.goals().goals()) REQUIRE(g.status == GoalStatus::achieved);
  REQUIRE(engine.goals().find("g2")->provenance["source"] == "vanilla");
  // a goal the user asked for keeps the user's words (SopPlanner retrieval searches by them)
  REQUIRE(engine.goals().find("g1")->provenance ==
          json{{"source", "user"}, {"request", "new: Create a caching layer"}});
  REQUIRE(engine.goals().find("g2")->reason == "executed");
  REQUIRE(engine.goals().find("g1")->reason == "all 4 subgoals were achieved");
}

TEST_CASE("use_tool takes its arguments from its own evidence, then its ancestors', then the context") {
  Rig rig;
  auto seen = std::make_shared<json>();
  rig.tools.add(tool("echo", json::parse(R"({"type": "object", "properties": {"a": {}, "b": {}, "c": {}, "d": {},
                       "bad name": {}}})"),
                     [seen](const json& in) {
                       *seen = in;
                       return cairn::ToolResult::ok({{"echo", in}});
                     }));
  rig.ctx.add_artifact("c", cairn::ArtifactRecord::builder().type("data").description("from the context").value("ctx"));
  rig.ctx.add_artifact("b", cairn::ArtifactRecord::builder().type("data").description("shadowed").value("ctx-b"));
  auto planner = planner_by_gloss([](const std::string& gloss) {
    if (gloss == "Top") return plan_of(AND, {sub("Middle", "composite")});
    return plan_of(AND, {sub("Call echo", "use_tool", {{"tool", "echo"}, {"output", "result"}})});
  });
  GoalEngine engine(rig.ctx, rig.tools, {rig.interpreter, planner});
  // a: root evidence that looks like a reference: passed as data, never resolved
  REQUIRE(engine.handle(R"(new: Top | {"a": "@c", "b": "root-b"})") == Strings{"Done: Top."});
  REQUIRE(*seen == json{{"a", "@c"}, {"b", "root-b"}, {"c", "ctx"}});
  // the result is evidence of the goal (then of its ancestors) and an artifact with the tool's metadata
  REQUIRE(engine.goals().find("g1")->evidence["result"] == json{{"echo", *seen}});
  const auto record = rig.ctx.get_artifact("result");
  REQUIRE(record->value() == json{{"echo", *seen}});
  REQUIRE(record->description() == "Result from echo");
  REQUIRE(record->metadata()["tool_name"] == "echo");
  REQUIRE(rig.ctx.last_messages(2)[0].content == "Executed echo and stored output as @result");
}

TEST_CASE("a missing tool blocks the goal with a message, and the goal is tried again next turn") {
  Rig rig;
  auto planner = planner_by_gloss([](const std::string&) {
    return plan_of(AND, {sub("Search trains", "use_tool", {{"tool", "train-search-api"}, {"output", "trainList"}})});
  });
  GoalEngine engine(rig.ctx, rig.tools, {rig.interpreter, planner});
  REQUIRE(engine.handle(R"(new: Trains | {"origin": "A", "destination": "B", "date": "C"})") ==
          Strings{"I need the train-search-api tool but it is not available."});
  REQUIRE(status(engine, "g2") == GoalStatus::blocked);
  REQUIRE(engine.goals().find("g2")->reason == "tool 'train-search-api' is not available");
  REQUIRE(engine.handle("still there?") == Strings{"I need the train-search-api tool but it is not available."});

  auto calls = std::make_shared<std::vector<json>>();
  rig.tools.add(goals_test::train_search_tool(calls));
  REQUIRE(engine.handle("try again") == Strings{"Done: Trains."});
  REQUIRE(calls->size() == 1);
}

TEST_CASE("a required tool argument that nothing provides blocks the goal") {
  Rig rig;
  auto calls = std::make_shared<std::vector<json>>();
  rig.tools.add(goals_test::train_search_tool(calls));
  auto planner = planner_by_gloss([](const std::string&) {
    return plan_of(AND, {sub("Search trains", "use_tool", {{"tool", "train-search-api"}})});
  });
  GoalEngine engine(rig.ctx, rig.tools, {rig.interpreter, planner});
  REQUIRE(engine.handle(R"(new: Trains | {"origin": "A", "destination": "B"})") ==
          Strings{"I cannot search trains yet: train-search-api needs date."});
  REQUIRE(engine.goals().find("g2")->reason ==
          "tool 'train-search-api' needs 'date', which neither the evidence nor the artifacts hold");
  REQUIRE(calls->empty());
  // evidence added to the blocked goal unblocks it; the default output key is the tool name
  REQUIRE(engine.handle("ev: date = 2025-10-01") == Strings{"Done: Trains."});
  REQUIRE(engine.goals().find("g1")->evidence.contains("train-search-api"));
}

TEST_CASE("done_when: empty means done when the action is, satisfied means done without acting, unmet blocks") {
  Rig rig;
  int runs = 0;
  rig.tools.add(tool("counter", json{{"type", "object"}}, [&runs](const json&) {
    ++runs;
    return cairn::ToolResult::ok(runs);
  }));
  SECTION("a done_when already satisfied skips the action") {
    auto planner = planner_by_gloss([](const std::string&) {
      return plan_of(
          AND, {sub("Count", "use_tool", {{"tool", "counter"}, {"output", "n"}}, {Condition::has_evidence("n")})});
    });
    GoalEngine engine(rig.ctx, rig.tools, {rig.interpreter, planner});
    REQUIRE(engine.handle(R"(new: Go | {"n": 7})") == Strings{"Done: Go."});
    REQUIRE(runs == 0);
  }
  SECTION("no done_when: achieved when the tool returns") {
    auto planner = planner_by_gloss([](const std::string&) {
      return plan_of(AND, {sub("Count", "use_tool", {{"tool", "counter"}, {"output", "n"}})});
    });
    GoalEngine engine(rig.ctx, rig.tools, {rig.interpreter, planner});
    REQUIRE(engine.handle("new: Go") == Strings{"Done: Go."});
    REQUIRE(runs == 1);
    REQUIRE(engine.goals().find("g2")->reason == "counter returned n");
  }
  SECTION("a done_when the action did not make true blocks") {
    auto planner = planner_by_gloss([](const std::string&) {
      return plan_of(
          AND, {sub("Count", "use_tool", {{"tool", "counter"}, {"output", "n"}}, {Condition::has_evidence("other")})});
    });
    GoalEngine engine(rig.ctx, rig.tools, {rig.interpreter, planner});
    REQUIRE(engine.handle("new: Go") == Strings{"I could not finish 'Count': has_evidence(other) does not hold."});
    REQUIRE(engine.goals().find("g2")->reason ==
            "counter returned n, but its done_when is not satisfied: has_evidence(other)");
    REQUIRE(status(engine, "g2") == GoalStatus::blocked);
  }
}

TEST_CASE("evidence is visible to descendants, not to ancestors until a goal is achieved") {
  Rig rig;
  auto planner = planner_by_gloss([](const std::string& gloss) {
    if (gloss == "Root") return plan_of(AND, {sub("Mid", "composite"), sub("After", "gather_info", {{"key", "x"}})});
    return plan_of(AND, {sub("Leaf", "gather_info", {{"key", "city"}}), sub("Leaf 2", "gather_info", {{"key", "x"}})});
  });
  GoalEngine engine(rig.ctx, rig.tools, {rig.interpreter, planner});
  // "city" is known at the root, so the leaf two levels down does not ask for it
  REQUIRE(engine.handle(R"(new: Root | {"city": "Oslo"})") == Strings{"Please provide x"});
  REQUIRE(status(engine, "g4") == GoalStatus::achieved);
  REQUIRE(engine.visible_evidence("g5") == json{{"city", "Oslo"}});
  REQUIRE(engine.handle("ev: x = 1") == Strings{"Done: Root."});
  REQUIRE(engine.goals().find("g2")->evidence == json{{"x", 1}});  // handed up from Leaf 2
  REQUIRE(engine.goals().find("g3")->reason == "x is known");
}

TEST_CASE("predicate_true conditions go through the ConditionEvaluator") {
  Rig rig;
  auto planner = planner_by_gloss([](const std::string&) {
    return plan_of(AND, {sub("Check payment", "confirm", json::object(),
                             {Condition::predicate_true(Predicate{"verify_payment", {{"amount", 64}}})})});
  });
  json seen;
  bool answer = false;
  auto evaluator = std::make_shared<FnEvaluator>([&](const Predicate& p, const cairn::Goal& g, const json& e) {
    seen = {{"predicate", p.name}, {"args", p.args}, {"goal", g.id}, {"evidence", e}};
    return answer;
  });
  SECTION("true before acting: achieved without asking") {
    answer = true;
    GoalEngine engine(rig.ctx, rig.tools, {rig.interpreter, planner, evaluator});
    REQUIRE(engine.handle(R"(new: Pay | {"paid": true})") == Strings{"Done: Pay."});
    REQUIRE(seen == json{{"predicate", "verify_payment"},
                         {"args", {{"amount", 64}}},
                         {"goal", "g2"},
                         {"evidence", {{"paid", true}}}});
  }
  SECTION("false: the goal acts, then blocks when the condition still fails") {
    GoalEngine engine(rig.ctx, rig.tools, {rig.interpreter, planner, evaluator});
    REQUIRE(engine.handle("new: Pay") == Strings{"Check payment? (yes/no)"});
    REQUIRE(engine.handle("ev: confirmation = yes") ==
            Strings{"I could not finish 'Check payment': predicate_true(verify_payment) does not hold."});
    REQUIRE(seen["evidence"]["confirmation"] == true);
    answer = true;
    REQUIRE(engine.handle("check again") == Strings{"Done: Pay."});
  }
  SECTION("no evaluator: the goal blocks and says why") {
    GoalEngine engine(rig.ctx, rig.tools, {rig.interpreter, planner});
    REQUIRE(engine.handle("new: Pay") == Strings{"Check payment? (yes/no)"});
    engine.handle("ev: confirmation = yes");
    REQUIRE(engine.goals().find("g2")->reason ==
            "the user confirmed, but its done_when is not satisfied: predicate_true(verify_payment) (no "
            "ConditionEvaluator is set)");
  }
}

TEST_CASE("max_depth and max_goals are enforced with clear reasons") {
  Rig rig;
  SECTION("depth") {
    auto planner = planner_by_gloss([](const std::string& g) { return plan_of(AND, {sub(g + "+", "composite")}); });
    cairn::GoalEngineOptions options;
    options.max_depth = 3;
    GoalEngine engine(rig.ctx, rig.tools, {rig.interpreter, planner}, options);
    const Strings out = engine.handle("new: Deep");
    REQUIRE(out.front() == "Could not deep+++: its subgoals would be at depth 4, deeper than max_depth 3.");
    REQUIRE(out.back().rfind("I have abandoned 'Deep': subgoal 'Deep+' was abandoned", 0) == 0);
    REQUIRE(engine.goals().goal_count() == 4);
    REQUIRE(engine.goals().depth("g4") == 3);
  }
  SECTION("depth of a multi-level plan") {
    auto planner = planner_by_gloss([](const std::string&) {
      auto a = sub("A", "composite");
      a.id = "a";
      auto b = sub("B", "execute");
      b.parent = "a";
      return plan_of(AND, {a, b});
    });
    cairn::GoalEngineOptions options;
    options.max_depth = 1;
    GoalEngine engine(rig.ctx, rig.tools, {rig.interpreter, planner}, options);
    REQUIRE(engine.handle("new: Two levels") ==
            Strings{"Could not two levels: its plan reaches depth 2, deeper than max_depth 1.",
                    "I have abandoned 'Two levels': its plan reaches depth 2, deeper than max_depth 1."});
    REQUIRE(engine.goals().goal_count() == 1);
  }
  SECTION("goal count") {
    auto planner = planner_by_gloss([](const std::string&) {
      return plan_of(AND, {sub("1", "gather_info", {{"key", "a"}}), sub("2", "execute"), sub("3", "execute")});
    });
    cairn::GoalEngineOptions options;
    options.max_goals = 3;
    GoalEngine engine(rig.ctx, rig.tools, {rig.interpreter, planner}, options);
    REQUIRE(engine.handle("new: Big") ==
            Strings{"Could not big: its plan has 3 subgoals; with 1 unfinished goals that is more than max_goals 3.",
                    "I have abandoned 'Big': its plan has 3 subgoals; with 1 unfinished goals that is more than "
                    "max_goals 3."});
    options.max_goals = 4;
    GoalEngine fits(rig.ctx, rig.tools, {rig.interpreter, planner}, options);
    REQUIRE(fits.handle("new: Big") == Strings{"Please provide a"});
    REQUIRE(fits.handle("new: One more") ==
            Strings{"I cannot take on 'One more': 4 goals are unfinished and the limit (max_goals) is 4.",
                    "Please provide a"});
    REQUIRE(fits.goals().goal_count() == 4);
  }
}

TEST_CASE("bad planner output is rejected with a clear reason and abandons the goal") {
  Rig rig;
  GoalPlan bad;
  auto planner = std::make_shared<FnPlanner>([&bad](const cairn::Goal&, const json&) { return bad; });
  GoalEngine engine(rig.ctx, rig.tools, {rig.interpreter, planner});
  SECTION("unknown predicate") {
    bad = plan_of(AND, {sub("Fly", "fly")});
    REQUIRE(engine.handle("new: Go") ==
            Strings{"Could not go: planning failed: plan for goal g1: subgoals[0]: predicate.name: 'fly' is not one of "
                    "composite, use_tool, gather_info, confirm, present_info, execute.",
                    "I have abandoned 'Go': planning failed: plan for goal g1: subgoals[0]: predicate.name: 'fly' is "
                    "not one of composite, use_tool, gather_info, confirm, present_info, execute."});
  }
  SECTION("empty subgoals") {
    bad = plan_of(AND, {});
    REQUIRE(engine.handle("new: Go")[0] ==
            "Could not go: planning failed: plan for goal g1: the planner returned no subgoals.");
  }
  SECTION("a cycle of parent ids") {
    auto a = sub("A", "composite");
    a.id = "a";
    a.parent = "b";
    auto b = sub("B", "composite");
    b.id = "b";
    b.parent = "a";
    bad = plan_of(AND, {sub("C", "execute"), a, b});
    REQUIRE(engine.handle("new: Go")[0] ==
            "Could not go: planning failed: plan for goal g1: subgoals[1]: parent ids form a cycle ('a' is its own "
            "ancestor).");
  }
  SECTION("a planner that throws") {
    planner->fn = [](const cairn::Goal&, const json&) -> GoalPlan { throw std::runtime_error("model offline"); };
    REQUIRE(engine.handle("new: Go")[0] == "Could not go: planning failed: model offline.");
  }
  REQUIRE(status(engine, "g1") == GoalStatus::abandoned);
  REQUIRE(engine.goals().goal_count() == 1);  // nothing of the bad plan was created
  REQUIRE(engine.goals().empty());
}

TEST_CASE("a multi-level plan creates the whole tree and works it depth first") {
  Rig rig;
  auto planner = planner_by_gloss([](const std::string&) {
    auto pick = sub("Pick a source", "composite");
    pick.id = "pick";
    pick.kind = OR;
    auto a = sub("Ask A", "gather_info", {{"key", "a"}});
    a.parent = "pick";
    auto b = sub("Ask B", "gather_info", {{"key", "b"}});
    b.parent = "pick";
    return plan_of(AND, {a, pick, sub("Wrap up", "execute"), b});
  });
  GoalEngine engine(rig.ctx, rig.tools, {rig.interpreter, planner});
  REQUIRE(engine.handle("new: Multi") == Strings{"Please provide a"});
  REQUIRE(engine.goals().find("g1")->decomposition->children == Strings{"g3", "g4"});
  REQUIRE(engine.goals().find("g3")->decomposition->kind == OR);
  REQUIRE(engine.goals().find("g3")->decomposition->children == Strings{"g2", "g5"});
  REQUIRE(engine.handle("abandon") == Strings{"OK, I have abandoned 'Ask A'.", "Please provide b"});
  REQUIRE(engine.handle("ev: b = 2") == Strings{"Done: Multi."});
}

TEST_CASE("a new goal goes on top of the stack, the earlier one continues afterwards") {
  Rig rig;
  auto planner = planner_by_gloss([](const std::string& gloss) {
    return plan_of(AND, {sub("Ask " + gloss, "gather_info", {{"key", gloss}})});
  });
  GoalEngine engine(rig.ctx, rig.tools, {rig.interpreter, planner});
  REQUIRE(engine.handle("new: first") == Strings{"Please provide first"});
  REQUIRE(engine.handle("new: second") == Strings{"Please provide second"});
  REQUIRE(engine.handle("ev: second = 2") == Strings{"Done: second.", "Please provide first"});
  REQUIRE(engine.handle("ev: first = 1") == Strings{"Done: first."});
}

TEST_CASE("evidence with no goal is kept as an artifact, nothing to abandon is said so") {
  Rig rig;
  auto planner = planner_by_gloss([](const std::string&) { return plan_of(AND, {sub("x", "execute")}); });
  GoalEngine engine(rig.ctx, rig.tools, {rig.interpreter, planner});
  REQUIRE(engine.handle("ev: city = Rome") == Strings{"Noted city."});
  REQUIRE(*rig.ctx.get_artifact_value("city") == "Rome");
  REQUIRE(engine.handle("abandon") == Strings{"There is no goal to abandon."});
  REQUIRE(engine.handle("just chatting").empty());
}

TEST_CASE("an interpretation that cannot be applied is refused before anything changes") {
  Rig rig;
  struct Bad : cairn::MessageInterpreter {
    cairn::Interpretation next;
    cairn::Interpretation interpret(const std::string&, const cairn::Goal*, const json&) override { return next; }
  };
  auto bad = std::make_shared<Bad>();
  auto planner = planner_by_gloss([](const std::string&) { return plan_of(AND, {sub("x", "execute")}); });
  GoalEngine engine(rig.ctx, rig.tools, {bad, planner});
  bad->next = cairn::Interpretation::add_evidence("bad key", 1);
  REQUIRE_THROWS_WITH(engine.handle("hi"),
                      "interpretation: evidence key 'bad key' is not valid (expected [A-Za-z_][A-Za-z0-9_-]{0,127})");
  bad->next = cairn::Interpretation::add_evidence("k", nullptr);
  REQUIRE_THROWS_WITH(engine.handle("hi"), "interpretation: evidence k has no value");
  bad->next = cairn::Interpretation::new_goal("");
  REQUIRE_THROWS_WITH(engine.handle("hi"), "interpretation: new_goal needs a gloss");
  bad->next = cairn::Interpretation::new_goal("x", {{"k", nullptr}});
  REQUIRE_THROWS_WITH(engine.handle("hi"), "interpretation: context.k must not be null");
  REQUIRE(rig.ctx.message_count() == 0);
  REQUIRE(engine.goals().goal_count() == 0);
  REQUIRE_THROWS_WITH(GoalEngine(rig.ctx, rig.tools, {nullptr, planner}), "GoalEngine: an interpreter is required");
  REQUIRE_THROWS_WITH(GoalEngine(rig.ctx, rig.tools, {bad, nullptr}), "GoalEngine: a planner is required");
}

TEST_CASE("the observer sees every transition in order") {
  Rig rig;
  auto planner = planner_by_gloss([](const std::string&) {
    return plan_of(AND, {sub("Ask", "gather_info", {{"key", "k"}}), sub("Run", "execute")});
  });
  std::vector<std::string> log;
  cairn::GoalEngineOptions options;
  options.observer = [&log](const cairn::GoalTransition& t) {
    log.push_back(t.goal_id + ":" + (t.from ? std::string(cairn::to_string(*t.from)) : "-") + ">" +
                  std::string(cairn::to_string(t.to)));
  };
  GoalEngine engine(rig.ctx, rig.tools, {rig.interpreter, planner}, options);
  engine.handle("new: Obs");
  REQUIRE(log == Strings{"g1:->pending", "g1:pending>active", "g2:->pending", "g3:->pending", "g1:active>blocked",
                         "g2:pending>active"});
  log.clear();
  engine.handle("ev: k = 1");
  REQUIRE(log == Strings{"g2:active>achieved", "g3:pending>active", "g3:active>achieved", "g1:blocked>achieved"});
}

TEST_CASE("goal transitions are events too: an Observer and the GoalObserver each hear each transition once") {
  Rig rig;
  auto planner = planner_by_gloss([](const std::string&) {
    return plan_of(AND, {sub("Ask", "gather_info", {{"key", "k"}}), sub("Run", "execute")});
  });
  auto text = [](const cairn::GoalTransition& t) {
    return t.goal_id + ":" + (t.from ? std::string(cairn::to_string(*t.from)) : "-") + ">" +
           std::string(cairn::to_string(t.to));
  };
  Strings typed, events, adapted, other_kinds;
  cairn::GoalEngineOptions options;
  options.observer = [&](const cairn::GoalTransition& t) { typed.push_back(text(t)); };
  options.event_observer =
      cairn::fan_out(cairn::observe_with([&](const cairn::Event& e) {
                       if (e.kind != cairn::EventKind::goal_transition)
                         return other_kinds.push_back(std::string(e.operation));
                       REQUIRE(e.goal != nullptr);
                       CHECK(e.subject == e.goal->goal_id);
                       CHECK(e.operation == cairn::to_string(e.goal->to));
                       CHECK(e.tenant == rig.ctx.tenant_id());
                       events.push_back(text(*e.goal));
                     }),
                     cairn::goal_observer([&](const cairn::GoalTransition& t) { adapted.push_back(text(t)); }));
  GoalEngine engine(rig.ctx, rig.tools, {rig.interpreter, planner}, options);
  engine.handle("new: Obs");
  engine.handle("ev: k = 1");
  const Strings all{"g1:->pending",       "g1:pending>active",  "g2:->pending",       "g3:->pending",
                    "g1:active>blocked",  "g2:pending>active",  "g2:active>achieved", "g3:pending>active",
                    "g3:active>achieved", "g1:blocked>achieved"};
  CHECK(typed == all);
  CHECK(events == all);
  CHECK(adapted == all);
  CHECK(other_kinds.empty());  // the engine reports transitions only (tool calls come from the context)

  engine.set_observer(nullptr);  // the GoalObserver, as before
  typed.clear();
  events.clear();
  engine.handle("new: Again");
  CHECK(typed.empty());
  CHECK_FALSE(events.empty());  // the event observer stays
  engine.set_observer(std::shared_ptr<cairn::Observer>());
  events.clear();
  engine.handle("new: Once more");
  CHECK(events.empty());
}

TEST_CASE("an engine restored mid-conversation continues exactly as the original") {
  Rig rig;
  auto searches = std::make_shared<std::vector<json>>();
  auto bookings = std::make_shared<std::vector<json>>();
  rig.tools.add(goals_test::train_search_tool(searches));
  rig.tools.add(goals_test::train_booking_tool(bookings));
  GoalEngine original(rig.ctx, rig.tools, {rig.interpreter, train_planner()});
  original.handle("new: Find me a train to Paris");
  original.handle("ev: origin = London");
  original.handle("ev: destination = Paris");
  original.handle("ev: date = 2025-10-01");

  const Strings rest{R"(ev: selectedTrain = {"id": "ES9014"})", "hmm", "ev: confirmation = y"};

  SECTION("side by side, on a fork of the context") {
    const json saved = original.to_json();
    cairn::ExecutionContext copy = rig.ctx.fork();
    GoalEngine restored(copy, rig.tools, {std::make_shared<goals_test::TextInterpreter>(), train_planner()});
    restored.restore(json::parse(saved.dump()));
    REQUIRE(goals_test::without_times(restored.to_json()) == goals_test::without_times(saved));
    for (const std::string& m : rest) REQUIRE(restored.handle(m) == original.handle(m));
    REQUIRE(goals_test::without_times(restored.to_json()) == goals_test::without_times(original.to_json()));
    REQUIRE(cairn::format_artifacts_catalog(copy).size() == cairn::format_artifacts_catalog(rig.ctx).size());
    REQUIRE(bookings->size() == 2);
    REQUIRE(bookings->at(0) == bookings->at(1));
  }
  SECTION("from text, in a new context on the same store: the engine's artifacts are bound again") {
    const std::string text = original.to_json().dump();
    cairn::ExecutionContext fresh(rig.store, "acme");
    GoalEngine restored(fresh, rig.tools, {std::make_shared<goals_test::TextInterpreter>(), train_planner()});
    restored.restore_text(text);
    REQUIRE(*fresh.get_artifact_value("origin") == "London");
    REQUIRE(fresh.get_artifact_value("trainList")->size() == 2);
    for (const std::string& m : rest) REQUIRE(restored.handle(m) == original.handle(m));
    REQUIRE(restored.goals().find("g1")->status == GoalStatus::achieved);
  }
  SECTION("a broken state is refused and the engine keeps what it had") {
    GoalEngine other(rig.ctx, rig.tools, {rig.interpreter, train_planner()});
    other.handle("ev: note = 1");  // one artifact binding of its own
    const json before = other.to_json();
    json state = original.to_json();

    json bad = state;
    bad["format"] = "something";
    REQUIRE_THROWS_WITH(other.restore(bad), "goal engine state: format: expected \"cairn.goal_engine\"");
    bad = state;
    bad["goals"][1]["parent"] = "g5";
    REQUIRE_THROWS_WITH(other.restore(bad), "goal stack: goal g1: child g2 names another parent");
    bad = state;
    bad["goals"][0]["parent"] = "g2";  // g1 <-> g2
    bad["goals"][1]["decomposition"] = {{"kind", "AND"}, {"children", {"g1"}}};
    bad["goals"][1]["predicate"] = {{"name", "composite"}, {"args", json::object()}};
    REQUIRE_THROWS_AS(other.restore(bad), cairn::invalid_goal);
    bad = state;
    bad["stack"].push_back("g404");
    REQUIRE_THROWS_WITH(other.restore(bad), "goal stack: stack[5]: goal 'g404' does not exist");
    bad = state;
    bad["stack"].push_back("g2");
    REQUIRE_THROWS_WITH(other.restore(bad), "goal stack: stack[5]: goal g2 is achieved and cannot be on the stack");
    bad = state;
    bad["goals"][3]["status"] = "done";
    REQUIRE_THROWS_WITH(other.restore(bad),
                        "goal stack: goals[3] g4: status: 'done' is not one of pending, active, "
                        "achieved, abandoned, blocked");
    bad = state;
    bad["artifacts"][0]["id"] = "no-such-id";
    cairn::ExecutionContext empty(rig.store, "acme");
    GoalEngine elsewhere(empty, rig.tools, {rig.interpreter, train_planner()});
    REQUIRE_THROWS_WITH(elsewhere.restore(bad),
                        "goal engine state: artifacts[0]: artifact @origin (id no-such-id, "
                        "version 1) is not in the store");
    REQUIRE(empty.artifact_count() == 0);
    REQUIRE_THROWS_AS(other.restore_text("{\"format\": "), cairn::parse_error);
    cairn::GoalEngineOptions shallow;
    shallow.max_depth = 0;
    GoalEngine flat(rig.ctx, rig.tools, {rig.interpreter, train_planner()}, shallow);
    REQUIRE_THROWS_WITH(flat.restore(state), "goal engine state: goal g2 is deeper than max_depth 0");
    REQUIRE(other.to_json() == before);
  }
}

// Issue 13.1: every confirm goal of an SOP is done when has_evidence(confirmation) holds, and the first "yes" flows up
// into the parent when its goal is achieved. A second confirmation must still be asked, and answered, on its own.
TEST_CASE("two confirms of one SOP are asked in turn, the first yes never answers the second") {
  Rig rig;
  auto sops = std::make_shared<cairn::SopRegistry>();
  sops->add(cairn::Sop::parse(R"({"id": "transfer", "title": "Transfer money", "intent": "Send money",
    "steps": [{"gloss": "Confirm the amount", "prompt": "Send 100 EUR?"},
              {"gloss": "Confirm the recipient", "prompt": "To Bob?"},
              {"gloss": "Send the transfer"}]})"));
  auto planner = std::make_shared<cairn::SopPlanner>(sops);
  auto engine = std::make_unique<GoalEngine>(rig.ctx, rig.tools, cairn::GoalEngineParts{rig.interpreter, planner});
  REQUIRE(engine->handle("new: Transfer money") == Strings{"Send 100 EUR?"});
  REQUIRE(engine->handle("ev: confirmation = yes") == Strings{"To Bob?"});
  REQUIRE(status(*engine, "g2") == GoalStatus::achieved);
  REQUIRE(status(*engine, "g3") == GoalStatus::active);
  REQUIRE(engine->goals().find("g1")->evidence["confirmation"] == true);  // the first answer flowed up
  REQUIRE(engine->goals().find("g3")->evidence.empty());

  SECTION("no to the second abandons what it guards") {
    REQUIRE(engine->handle("ev: confirmation = no") ==
            Strings{"Could not confirm the recipient: the user said no.",
                    "I have abandoned 'Transfer money': subgoal 'Confirm the recipient' was abandoned (the user said "
                    "no)."});
    REQUIRE(status(*engine, "g4") == GoalStatus::abandoned);
  }
  SECTION("a restore between the two keeps the second unanswered") {
    const std::string saved = engine->to_json().dump();
    cairn::ExecutionContext fresh(rig.store, "acme");
    GoalEngine restored(fresh, rig.tools, {std::make_shared<goals_test::TextInterpreter>(), planner});
    restored.restore_text(saved);
    REQUIRE(restored.handle("hmm") == Strings{"To Bob?"});
    REQUIRE(restored.handle("ev: confirmation = no") ==
            Strings{"Could not confirm the recipient: the user said no.",
                    "I have abandoned 'Transfer money': subgoal 'Confirm the recipient' was abandoned (the user said "
                    "no)."});
    REQUIRE(status(restored, "g4") == GoalStatus::abandoned);
  }
  SECTION("yes to both finishes") {
    REQUIRE(engine->handle("ev: confirmation = yes") == Strings{"Done: Transfer money."});
  }
}

// The same for confirm goals a host planner makes: a confirm that lists another goal's answer key in its done_when
// still asks its own question.
TEST_CASE("a confirm goal is done only by an answer given to it, whatever its done_when names") {
  Rig rig;
  auto planner = planner_by_gloss([](const std::string&) {
    return plan_of(AND, {sub("First", "confirm"),
                         sub("Second", "confirm", {{"key", "ok"}}, {Condition::has_evidence("confirmation")}),
                         sub("Finish", "execute")});
  });
  GoalEngine engine(rig.ctx, rig.tools, {rig.interpreter, planner});
  REQUIRE(engine.handle("new: Order") == Strings{"First? (yes/no)"});
  REQUIRE(engine.handle("ev: confirmation = yes") == Strings{"Second? (yes/no)"});
  REQUIRE(engine.handle("ev: ok = no") ==
          Strings{"Could not second: the user said no.",
                  "I have abandoned 'Order': subgoal 'Second' was abandoned (the user said no)."});
}
