// cairn/testing/scripted_model.hpp: scripted replies, recorded prompts, expectations, and failures that name the
// fake, the call and the prompt — for the plain model function and each goal-engine interface.
#include "cairn/testing/scripted_model.hpp"
#include "cairn/testing/scripted_goals.hpp"

#include <set>
#include <thread>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/context/execution_context.hpp"
#include "cairn/context/tool.hpp"
#include "cairn/goals/engine.hpp"
#include "catch.hpp"

using cairn::testing::prompt_contains;
using cairn::testing::prompt_lacks;
using cairn::testing::prompt_satisfies;
using cairn::testing::script_error;
using cairn::testing::ScriptedModel;
using cairn_test::ContainsSubstring;
using nlohmann::json;

namespace {

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const script_error& e) {
    return e.what();
  }
  FAIL("no script_error was thrown");
  return {};
}

}  // namespace

TEST_CASE("ScriptedModel answers its replies in order and records every prompt") {
  ScriptedModel model("writer");
  model.reply("one").reply("two");
  CHECK(model.remaining() == 2);
  CHECK(model("first prompt") == "one");
  cairn::ModelFunction f = model;  // a copy shares the script
  CHECK(f("second prompt") == "two");
  CHECK(model.calls() == 2);
  CHECK(model.prompts() == std::vector<std::string>{"first prompt", "second prompt"});
  CHECK(model.prompt(2) == "second prompt");
  CHECK_THROWS_AS(model.prompt(3), script_error);
  CHECK_NOTHROW(model.verify());
}

TEST_CASE("a ScriptedModel whose script ran out names itself, the call and the whole prompt, lines as lines") {
  ScriptedModel model("writer");
  model.reply("only");
  model("a");
  const std::string message = error_of([&] { model("Please write\nthe report"); });
  CHECK(message ==
        "scripted model 'writer': call 2: the script has no reply left (1 scripted, all used)\n"
        "the prompt (2 lines, 23 bytes):\n"
        "1 | Please write\n"
        "2 | the report");
  // verify() reports it again: a component may have caught it.
  CHECK_THROWS_WITH(model.verify(), message);
  CHECK(model.failures().size() == 1);
}

TEST_CASE("ScriptedModel checks expectations on prompts") {
  ScriptedModel model("interpreter");
  model.reply("ok", {prompt_contains("Paris"), prompt_lacks("London")})
      .reply("ok", {prompt_satisfies("be short", [](const std::string& p) { return p.size() < 10; })});

  SECTION("met") {
    CHECK(model("a train to Paris") == "ok");
    CHECK(model("short") == "ok");
    CHECK_NOTHROW(model.verify());
  }
  SECTION("a substring that is missing") {
    CHECK(error_of([&] { model("a train to Rome"); }) ==
          "scripted model 'interpreter': call 1: expected the prompt to contain \"Paris\"\n"
          "the prompt (1 line, 15 bytes):\n"
          "1 | a train to Rome");
    model.disarm();
  }
  SECTION("a substring that should not be there: the failure marks where it is") {
    CHECK(error_of([&] { model("Paris or\nLondon, rather"); }) ==
          "scripted model 'interpreter': call 1: expected the prompt to not contain \"London\"\n"
          "the prompt (2 lines, 23 bytes):\n"
          "1 | Paris or\n"
          "2 | London, rather\n"
          "  | ^^^^^^ here");
    model.disarm();
  }
  SECTION("a predicate") {
    model("Paris");
    CHECK_THAT(error_of([&] { model("a much longer prompt"); }),
               ContainsSubstring("call 2: expected the prompt to be short"));
    CHECK_THROWS_AS(model.verify(), script_error);
  }
  SECTION("a predicate that throws") {
    ScriptedModel m("m");
    m.reply("x", {prompt_satisfies("parse", [](const std::string& p) { return json::parse(p).is_object(); })});
    CHECK_THAT(error_of([&] { m("not json"); }),
               ContainsSubstring("call 1: the expectation that the prompt would parse threw"));
    CHECK_THROWS_AS(m.verify(), script_error);
    model.disarm();
  }
}

TEST_CASE("ScriptedModel::verify reports replies that were never used") {
  ScriptedModel model("planner model");
  model.reply("a").reply("b").reply("c");
  model("x");
  CHECK_THROWS_WITH(model.verify(),
                    "scripted model 'planner model': 2 scripted replies were never used (the next one "
                    "was for call 2; 1 call was made)");
}

TEST_CASE("a failed prompt_contains marks the longest start of the text the prompt has, in a prompt of many lines") {
  ScriptedModel model("classifier");
  model.reply("invoice", {prompt_contains("Vendor: ACME GmbH\nTotal: 120.00 EUR")});
  std::string prompt = "You classify documents.\n";
  for (int i = 0; i < 12; ++i) prompt += "Rule " + std::to_string(i) + ": a rule the model must follow.\n";
  prompt += "Document:\nVendor: ACME GmbH\nTotal: 120.50 EUR\nEnd.";
  const std::string message = error_of([&] { model(prompt); });
  // The whole prompt, each line numbered, nothing cut at 300 characters and no \x0a.
  CHECK_THAT(message, ContainsSubstring("expected the prompt to contain \"Vendor: ACME GmbH\\nTotal: 120.00 EUR\"\n"
                                        "the prompt (17 lines, 532 bytes):\n"
                                        " 1 | You classify documents.\n"));
  CHECK_THAT(message, ContainsSubstring(" 9 | Rule 7: a rule the model must follow.\n"));
  CHECK_THAT(message, ContainsSubstring("15 | Vendor: ACME GmbH\n"
                                        "   | ^^^^^^^^^^^^^^^^^ the longest start of the text found (29 of 35 bytes, "
                                        "line 15, column 1); then the text has \"00 EUR\" where the prompt has "
                                        "\"50 EUR\\nEnd.\"\n"
                                        "16 | Total: 120.50 EUR\n"
                                        "17 | End."));
  CHECK(message.find("\\x0a") == std::string::npos);
  CHECK_THROWS_AS(model.verify(), script_error);
}

TEST_CASE("a prompt of over 200 lines shows the 25 lines either side of the mark") {
  ScriptedModel model;
  model.reply("x", {prompt_lacks("needle")});
  std::string prompt;
  for (int i = 1; i <= 300; ++i) prompt += (i == 150 ? std::string("a needle") : "line " + std::to_string(i)) + "\n";
  const std::string message = error_of([&] { model(prompt); });
  CHECK_THAT(message, ContainsSubstring("the prompt (301 lines, "));
  CHECK_THAT(message, ContainsSubstring("    | ... 124 lines not shown\n125 | line 125\n"));
  CHECK_THAT(message, ContainsSubstring("150 | a needle\n    |   ^^^^^^ here\n"));
  CHECK_THAT(message, ContainsSubstring("175 | line 175\n    | ... 126 lines not shown"));
  CHECK(message.find("line 124\n") == std::string::npos);
  CHECK_THROWS_AS(model.verify(), script_error);
}

TEST_CASE("answer(): a reply for any matching prompt, in any order, a bounded number of times") {
  ScriptedModel model("classifier");
  SECTION("any number of times, before the queue") {
    model.answer({prompt_contains("Classify")}, "invoice");
    model.reply("queued");
    CHECK(model("Classify this") == "invoice");
    CHECK(model("something else") == "queued");
    CHECK(model("Classify that") == "invoice");
    CHECK(model("Classify again") == "invoice");
    CHECK_NOTHROW(model.verify());
  }
  SECTION("an unordered set: each answer with times(1) is asked once, in whatever order") {
    model.answer({prompt_contains("vendor")}, "ACME", cairn::testing::times(1))
        .answer({prompt_contains("total")}, "120.00", cairn::testing::times(1));
    CHECK(model("the total?") == "120.00");
    CHECK(model("the vendor?") == "ACME");
    CHECK_NOTHROW(model.verify());
    // Used up: a third ask finds nothing, and the failure says what each answer wanted.
    CHECK(error_of([&] { model("the vendor, again?"); }) ==
          "scripted model 'classifier': call 3: the script has no reply left (0 scripted, all used)\n"
          "the prompt (1 line, 18 bytes):\n"
          "1 | the vendor, again?");
    CHECK_THROWS_AS(model.verify(), script_error);
  }
  SECTION("an answer that matches nothing is listed with the reason") {
    model.answer({prompt_contains("vendor")}, "ACME", cairn::testing::at_most(2));
    CHECK(error_of([&] { model("the date?"); }) ==
          "scripted model 'classifier': call 1: the script has no reply left (0 scripted, all used; no answer matches "
          "the prompt)\n"
          "  answer 1 (for prompts that contain \"vendor\", at most 2 times): the prompt does not contain \"vendor\"\n"
          "the prompt (1 line, 9 bytes):\n"
          "1 | the date?");
    CHECK_THROWS_AS(model.verify(), script_error);
  }
  SECTION("times(n) is a bound: the n+1th ask goes to the queue, and fewer than n fail verify()") {
    model.answer({prompt_contains("vendor")}, "ACME", cairn::testing::times(2)).reply("from the queue");
    CHECK(model("vendor?") == "ACME");
    CHECK_THROWS_WITH(model.verify(),
                      "scripted model 'classifier': 1 scripted reply was never used (the next one was for call 2; 1 "
                      "call was made)\n"
                      "scripted model 'classifier': answer 1 (for prompts that contain \"vendor\") was to answer "
                      "exactly 2 times; it answered 1");
    CHECK(model("vendor?") == "ACME");
    CHECK(model("vendor?") == "from the queue");
    CHECK_NOTHROW(model.verify());
  }
  SECTION("at_least(n) and an answer that throws") {
    model.answer_error({prompt_contains("down")}, cairn::storage_error("model unavailable"),
                       cairn::testing::at_least(1));
    CHECK_THROWS_WITH(model("down?"), "model unavailable");
    CHECK_THROWS_WITH(model("down again?"), "model unavailable");
    CHECK_NOTHROW(model.verify());
  }
  SECTION("a count no call can meet is refused") {
    CHECK_THROWS_AS(model.answer({}, "x", cairn::testing::times(0)), cairn::invalid_argument);
    CHECK_THROWS_AS(model.answer({}, "x", cairn::testing::Times{3, 2}), cairn::invalid_argument);
  }
  CHECK(cairn::testing::times(1).text() == "exactly 1 time");
  CHECK(cairn::testing::at_least(2).text() == "at least 2 times");
  CHECK(cairn::testing::at_most(3).text() == "at most 3 times");
  CHECK(cairn::testing::any_number().text() == "any number of times");
}

TEST_CASE("ScriptedModel can throw on a call and answer a fallback once the queue is empty") {
  ScriptedModel model;
  model.reply_error(cairn::storage_error("model endpoint timed out"), {prompt_contains("q")});
  CHECK_THROWS_WITH(model("q"), "model endpoint timed out");
  model.otherwise("default");
  CHECK(model("anything") == "default");
  CHECK(model("again") == "default");
  CHECK_NOTHROW(model.verify());
  model.otherwise(std::nullopt);
  CHECK_THROWS_AS(model("now"), script_error);
  CHECK_THROWS_AS(model.verify(), script_error);
}

TEST_CASE("ScriptedModel is thread-safe: every reply is taken exactly once") {
  ScriptedModel model;
  for (int i = 0; i < 400; ++i) model.reply(std::to_string(i));
  std::vector<std::vector<std::string>> got(4);
  std::vector<std::thread> threads;
  for (auto& g : got) {
    threads.emplace_back([&model, &g] {
      for (int i = 0; i < 100; ++i) g.push_back(model("p"));
    });
  }
  for (auto& t : threads) t.join();
  std::set<std::string> all;
  for (const auto& g : got) all.insert(g.begin(), g.end());
  CHECK(all.size() == 400);
  CHECK(model.calls() == 400);
  CHECK_NOTHROW(model.verify());
}

TEST_CASE("the model adapters run on a ScriptedModel, and its expectations see their prompts") {
  ScriptedModel model("interpreter model");
  model.reply(R"({"action": "add_evidence", "evidence": {"key": "city", "value": "Oslo"}, "reasoning": "r"})",
              {prompt_contains("User message: Oslo please")});
  cairn::ModelInterpreter interpreter(model);
  const auto in = interpreter.interpret("Oslo please", nullptr, json::object());
  CHECK(in.action == cairn::Interpretation::Action::add_evidence);
  CHECK(in.value == "Oslo");

  SECTION("a reply the adapter rejects is asked again, and the second prompt is recorded too") {
    model.reply("not json")
        .reply(R"({"action": "continue", "reasoning": "r"})", {prompt_contains("Your previous reply was rejected")});
    CHECK(interpreter.interpret("hm", nullptr, json::object()).action == cairn::Interpretation::Action::continue_);
    CHECK(model.calls() == 3);
  }
  CHECK_NOTHROW(model.verify());
}

TEST_CASE("ScriptedInterpreter, ScriptedPlanner, ScriptedEvaluator and ScriptedQuestionWriter drive a GoalEngine") {
  auto store = std::make_shared<cairn::InMemoryArtifactStore>();
  cairn::ExecutionContext ctx(store, "acme");
  cairn::ToolRegistry tools;
  auto interpreter = std::make_shared<cairn::testing::ScriptedInterpreter>();
  auto planner = std::make_shared<cairn::testing::ScriptedPlanner>();
  auto evaluator = std::make_shared<cairn::testing::ScriptedEvaluator>();
  auto writer = std::make_shared<cairn::testing::ScriptedQuestionWriter>();

  interpreter->reply(cairn::Interpretation::new_goal("Plan a trip"), {prompt_contains("User message: Trip please")})
      .reply(cairn::Interpretation::add_evidence("date", "tomorrow"), {prompt_contains("asking for date")});
  cairn::GoalPlan plan;
  cairn::SubgoalSpec ask;
  ask.gloss = "Ask the date";
  ask.predicate = cairn::Predicate{"gather_info", {{"key", "date"}}};
  cairn::SubgoalSpec check;
  check.gloss = "Check the date";
  check.predicate = cairn::Predicate{"execute", json::object()};
  check.done_when = {cairn::Condition::predicate_true(cairn::Predicate{"date_is_valid", json::object()})};
  plan.subgoals = {ask, check};
  planner->reply(plan, {prompt_contains("Plan goal g1: Plan a trip")});
  writer->reply(cairn::Question{"When do you leave?", {"today", "tomorrow"}},
                {prompt_contains("Information needed: date")});
  evaluator->reply(true, {prompt_contains("date_is_valid"), prompt_contains("tomorrow")}).otherwise(true);

  cairn::GoalEngine engine(ctx, tools, {interpreter, planner, evaluator, writer});
  CHECK(engine.handle("Trip please") == std::vector<std::string>{"When do you leave?\nSuggestions: today, tomorrow"});
  engine.handle("tomorrow");
  CHECK(engine.goals().find("g1")->status == cairn::GoalStatus::achieved);
  CHECK(evaluator->calls() >= 1);
  CHECK_THAT(planner->prompt(1), ContainsSubstring("Predicate: {\"args\":{},\"name\":\"composite\"}"));

  interpreter->verify();
  planner->verify();
  writer->verify();
  evaluator->verify();
}

TEST_CASE("a script_error a component swallows is still reported by verify()") {
  // The goal engine turns a planner's exception into the reason the goal was abandoned.
  auto store = std::make_shared<cairn::InMemoryArtifactStore>();
  cairn::ExecutionContext ctx(store, "acme");
  cairn::ToolRegistry tools;
  auto interpreter = std::make_shared<cairn::testing::ScriptedInterpreter>("turns");
  auto planner = std::make_shared<cairn::testing::ScriptedPlanner>("steps");
  interpreter->reply(cairn::Interpretation::new_goal("Do something"));
  cairn::GoalEngine engine(ctx, tools, {interpreter, planner});
  engine.handle("go");
  const cairn::Goal* g1 = engine.goals().find("g1");
  REQUIRE(g1);
  CHECK(g1->status == cairn::GoalStatus::abandoned);
  CHECK_THAT(g1->reason, ContainsSubstring("scripted planner 'steps': call 1: the script has no reply left"));
  CHECK_THROWS_WITH(planner->verify(), ContainsSubstring("scripted planner 'steps': call 1"));
  CHECK_NOTHROW(interpreter->verify());
  CHECK_THAT(error_of([&] { interpreter->interpret("more", nullptr, json::object()); }),
             ContainsSubstring("scripted interpreter 'turns': call 2"));
  CHECK_THROWS_WITH(interpreter->verify(), ContainsSubstring("scripted interpreter 'turns': call 2"));
}

TEST_CASE("expectations describe their text with UTF-8 kept and newlines, tabs and quotes escaped") {
  CHECK(prompt_contains("Zürich\n\t\"x\"\x01").description == "contain \"Zürich\\n\\t\\\"x\\\"\\x01\"");
  CHECK(prompt_lacks(std::string(500, 'a')).description == "not contain \"" + std::string(400, 'a') + "\"...");
}
