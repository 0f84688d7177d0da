// Model adapters, driven by scripted callables (plain lambdas returning canned replies: the adapters' real
// interface). The prompts carry their inputs and response schemas; replies are checked; a bad reply is retried once
// with the error shown to the model, and a second bad reply is a clear error.
#include <memory>
#include <string>
#include <vector>

#include "cairn/goals/engine.hpp"
#include "cairn/goals/model_adapters.hpp"
#include "catch.hpp"
#include "goals_test_support.hpp"

using cairn::Interpretation;
using cairn::ModelConditionEvaluator;
using cairn::ModelInterpreter;
using cairn::ModelQuestionWriter;
using cairn_test::ContainsSubstring;
using nlohmann::json;
using Strings = std::vector<std::string>;

namespace {

// Replies in order and keeps the prompts it was given.
struct Script {
  std::shared_ptr<Strings> replies = std::make_shared<Strings>();
  std::shared_ptr<Strings> prompts = std::make_shared<Strings>();

  cairn::ModelFunction fn() const {
    auto r = replies;
    auto p = prompts;
    return [r, p](const std::string& prompt) {
      p->push_back(prompt);
      if (p->size() > r->size()) throw std::runtime_error("no more replies");
      return (*r)[p->size() - 1];
    };
  }
};

// The JSON Schema at the end of a prompt.
json schema_in(const std::string& prompt) {
  const std::string marker = "matches this JSON Schema:\n";
  const auto at = prompt.find(marker);
  REQUIRE(at != std::string::npos);
  return json::parse(prompt.substr(at + marker.size()));
}

cairn::Goal gather_goal() {
  cairn::Goal g;
  g.id = "g2";
  g.gloss = "Gather date";
  g.predicate = cairn::Predicate{"gather_info", {{"key", "date"}}};
  return g;
}

}  // namespace

TEST_CASE("interpret-message: the prompt shows the message, the goal, the evidence and the schema") {
  const cairn::Goal g = gather_goal();
  const std::string prompt = cairn::render_interpret_prompt("Next Friday", &g, {{"origin", "London"}});
  REQUIRE_THAT(prompt, ContainsSubstring("User message: Next Friday"));
  REQUIRE_THAT(prompt, ContainsSubstring("Current goal: Gather date (gather_info, asking for date)"));
  REQUIRE_THAT(prompt, ContainsSubstring("Evidence collected: {\"origin\":\"London\"}"));
  REQUIRE(schema_in(prompt) == cairn::interpret_message_schema());
  REQUIRE_THAT(cairn::render_interpret_prompt("hi", nullptr, json::object()), ContainsSubstring("Current goal: none"));
  REQUIRE(cairn::interpret_message_schema()["properties"]["action"]["enum"].size() == 4);
}

TEST_CASE("ModelInterpreter reads each action") {
  Script s;
  *s.replies = {
      "```json\n{\"action\": \"new_goal\", \"goal\": {\"gloss\": \"Book a train\", \"context\": {\"destination\": "
      "\"Paris\"}}, \"reasoning\": \"asks for a train\"}\n```",
      R"({"action": "add_evidence", "evidence": {"key": "date", "value": "2025-10-01"}, "reasoning": "a date"})",
      R"({"action": "abandon_goal", "reasoning": "gives up"})",
      R"({"action": "continue", "reasoning": "small talk", "goal": null})"};
  ModelInterpreter interpreter(s.fn());
  const cairn::Goal g = gather_goal();
  Interpretation i = interpreter.interpret("Book me a train to Paris", nullptr, json::object());
  REQUIRE(i.action == Interpretation::Action::new_goal);
  REQUIRE(i.gloss == "Book a train");
  REQUIRE(i.context == json{{"destination", "Paris"}});
  REQUIRE(i.reasoning == "asks for a train");
  i = interpreter.interpret("1 Oct", &g, json::object());
  REQUIRE(i.action == Interpretation::Action::add_evidence);
  REQUIRE(i.key == "date");
  REQUIRE(i.value == "2025-10-01");
  REQUIRE(interpreter.interpret("stop", &g, json::object()).action == Interpretation::Action::abandon_goal);
  REQUIRE(interpreter.interpret("nice", &g, json::object()).action == Interpretation::Action::continue_);
  REQUIRE(s.prompts->size() == 4);
}

TEST_CASE("a malformed reply is retried once with the error shown to the model") {
  Script s;
  *s.replies = {R"({"action": "add_evidence", "reasoning": "x"})",
                R"({"action": "add_evidence", "evidence": {"key": "date", "value": "friday"}, "reasoning": "x"})"};
  ModelInterpreter interpreter(s.fn());
  const Interpretation i = interpreter.interpret("friday", nullptr, json::object());
  REQUIRE(i.value == "friday");
  REQUIRE(s.prompts->size() == 2);
  REQUIRE(s.prompts->at(1).rfind(s.prompts->at(0), 0) == 0);  // the same prompt, then the error
  REQUIRE_THAT(s.prompts->at(1),
               ContainsSubstring("Your previous reply was rejected: interpret-message reply: evidence: missing "
                                 "(add_evidence needs it)\nReply again, with JSON only."));
}

TEST_CASE("a second malformed reply is a clear error") {
  auto fails_with = [](Strings replies) {
    Script s;
    *s.replies = std::move(replies);
    ModelInterpreter interpreter(s.fn());
    try {
      interpreter.interpret("x", nullptr, json::object());
    } catch (const cairn::parse_error& e) {
      REQUIRE(s.prompts->size() == 2);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string prefix = "interpret-message: the model's reply was rejected twice; the last time: ";
  REQUIRE(fails_with({"not json", "still not json"}) ==
          prefix +
              "interpret-message reply: invalid JSON: parse error at line 1, column 1: syntax error while parsing "
              "value - invalid literal; last read: 's'");
  REQUIRE(fails_with({"{}", R"({"action": "fly", "reasoning": "x"})"}) ==
          prefix +
              "interpret-message reply: action: 'fly' is not one of new_goal, add_evidence, abandon_goal, "
              "continue");
  REQUIRE(fails_with({"{}", R"({"action": "continue"})"}) == prefix + "interpret-message reply: reasoning: missing");
  REQUIRE(fails_with({"{}", R"([1])"}) == prefix + "interpret-message reply: the reply: expected an object, got array");
  REQUIRE(fails_with({"{}", R"({"action": "new_goal", "goal": {"gloss": ""}, "reasoning": "x"})"}) ==
          prefix + "interpret-message reply: goal.gloss: must not be empty");
  REQUIRE(fails_with({"{}", R"({"action": "new_goal", "goal": {"gloss": "x", "context": 1}, "reasoning": "x"})"}) ==
          prefix + "interpret-message reply: goal.context: expected an object, got number");
  REQUIRE(
      fails_with({"{}", R"({"action": "add_evidence", "evidence": {"key": "a b", "value": 1}, "reasoning": "x"})"}) ==
      prefix +
          "interpret-message reply: interpretation: evidence key 'a b' is not valid (expected "
          "[A-Za-z_][A-Za-z0-9_-]{0,127})");
  REQUIRE(fails_with({"{}", R"({"action": "add_evidence", "evidence": {"key": "a"}, "reasoning": "x"})"}) ==
          prefix + "interpret-message reply: evidence.value: missing");
  REQUIRE(fails_with({"{}", std::string(100, '[')}) ==
          prefix + "interpret-message reply: JSON nesting is deeper than the limit of 32 levels");
  REQUIRE(fails_with({"{}", "\"" + std::string(2 * 1024 * 1024 - 2, 'a') + "\""}) ==
          prefix + "interpret-message reply: input is 2097152 bytes, more than the limit of 1048576 bytes");
}

TEST_CASE("the model's own failure goes through untouched") {
  ModelInterpreter interpreter([](const std::string&) -> std::string { throw std::runtime_error("rate limited"); });
  REQUIRE_THROWS_WITH(interpreter.interpret("x", nullptr, json::object()), "rate limited");
  REQUIRE_THROWS_WITH(ModelInterpreter(nullptr).interpret("x", nullptr, json::object()),
                      "interpret-message: no model function is set");
}

TEST_CASE("ModelQuestionWriter renders execute-gather and reads the question and suggestions") {
  Script s;
  *s.replies = {R"({"question": "Which day?", "suggestions": ["today", "tomorrow"]})", R"({"question": 3})",
                R"({"question": "When?", "suggestions": [1]})"};
  ModelQuestionWriter writer(s.fn());
  const cairn::Question q = writer.write(gather_goal(), "date", "", {{"origin", "London"}});
  REQUIRE(q.text == "Which day?");
  REQUIRE(q.suggestions == Strings{"today", "tomorrow"});
  REQUIRE_THAT(s.prompts->at(0), ContainsSubstring("Information needed: date\nWhat to ask about: Please provide date\n"
                                                   "What is known already: {\"origin\":\"London\"}"));
  REQUIRE(schema_in(s.prompts->at(0)) == cairn::execute_gather_schema());
  REQUIRE_THROWS_WITH(writer.write(gather_goal(), "date", "When?", json::object()),
                      "execute-gather: the model's reply was rejected twice; the last time: execute-gather reply: "
                      "suggestions[0]: expected a string");
  REQUIRE_THAT(s.prompts->at(2), ContainsSubstring("execute-gather reply: question: expected a string, got number"));
}

TEST_CASE("ModelConditionEvaluator renders check-completion and reads satisfied") {
  Script s;
  *s.replies = {R"({"satisfied": true, "reasoning": "paid"})", R"({"satisfied": "yes", "reasoning": "x"})",
                R"({"satisfied": false, "reasoning": "not paid"})"};
  ModelConditionEvaluator evaluator(s.fn());
  cairn::Goal g = gather_goal();
  const cairn::Predicate p{"verify_payment", {{"amount", 64}}};
  REQUIRE(evaluator.evaluate(p, g, {{"paid", true}}));
  REQUIRE_THAT(s.prompts->at(0), ContainsSubstring("Condition: {\"args\":{\"amount\":64},\"name\":\"verify_payment\"}\n"
                                                   "Evidence: {\"paid\":true}\nContext: the goal \"Gather date\""));
  REQUIRE(schema_in(s.prompts->at(0)) == cairn::check_completion_schema());
  REQUIRE_FALSE(evaluator.evaluate(p, g, json::object()));  // after one retry
  REQUIRE_THAT(s.prompts->at(2),
               ContainsSubstring("check-completion reply: satisfied: expected a boolean, got string"));
}

TEST_CASE("an engine runs on model adapters") {
  goals_test::Rig rig;
  Script interp;
  *interp.replies = {R"({"action": "new_goal", "goal": {"gloss": "Pay"}, "reasoning": "r"})",
                     R"({"action": "add_evidence", "evidence": {"key": "card", "value": "4242"}, "reasoning": "r"})"};
  Script model;
  auto planner = std::make_shared<goals_test::FnPlanner>([](const cairn::Goal&, const json&) {
    return goals_test::plan_of(cairn::Decomposition::Kind::all,
                               {goals_test::sub("Ask card", "gather_info", {{"key", "card"}},
                                                {cairn::Condition::predicate_true({"card_valid", json::object()})})});
  });
  cairn::GoalEngine engine(
      rig.ctx, rig.tools,
      {std::make_shared<ModelInterpreter>(interp.fn()), planner, std::make_shared<ModelConditionEvaluator>(model.fn()),
       std::make_shared<ModelQuestionWriter>(model.fn())});
  // one model behind both adapters: the condition is checked first (no), then the question is written; after the
  // answer the condition is checked again (yes)
  *model.replies = {R"({"satisfied": false, "reasoning": "no card yet"})", R"({"question": "Which card?"})",
                    R"({"satisfied": true, "reasoning": "valid"})"};
  REQUIRE(engine.handle("I need to pay") == Strings{"Which card?"});
  REQUIRE(engine.handle("the 4242 one") == Strings{"Done: Pay."});
  REQUIRE(model.prompts->size() == 3);
  REQUIRE_THAT(model.prompts->at(2), ContainsSubstring("Evidence: {\"card\":\"4242\"}"));
}
