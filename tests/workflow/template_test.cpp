#include "cairn/workflow/template.hpp"

#include <random>
#include <string>

#include "catch.hpp"
#include "workspace.hpp"

using namespace cairn;
using cairn_test::ContainsSubstring;
using nlohmann::json;

namespace {

json minimal() {
  return json::parse(R"({"name": "t", "steps": [{"id": "a", "type": "action", "instructions": "Do a."}]})");
}

std::string error_of(const json& j) {
  try {
    WorkflowTemplate::from_json(j);
  } catch (const invalid_template& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("a template reads every field and round-trips through JSON") {
  const auto t = cairn_test::feature_template();
  CHECK(t.name() == "feature");
  CHECK(t.description() == "Plan, implement task by task, review");
  REQUIRE(t.steps().size() == 4);
  CHECK(t.steps()[0].type == StepType::action);
  CHECK(t.steps()[0].artifacts);
  CHECK_FALSE(t.steps()[1].artifacts);
  CHECK(t.steps()[2].type == StepType::loop);
  CHECK(t.steps()[3].type == StepType::ralph);
  CHECK(t.steps()[3].n == 2);
  REQUIRE(t.loop("implement"));
  CHECK(t.loop("implement")->size() == 2);
  CHECK(t.loop("implement")->at(0).agent == std::optional<std::string>("coder"));
  CHECK(t.loop("implement")->at(0).artifacts);
  CHECK(t.loop("implement")->at(1).on_fail == OnFail::retry);
  CHECK(t.loop("nope") == nullptr);
  CHECK(t.agents().at("coder").description == "Writes code");
  CHECK(t.agents().at("coder").settings == json{{"model", "fast"}});
  CHECK(t.step_index("review") == std::optional<std::size_t>(3));
  CHECK_FALSE(t.step_index("nope"));

  const auto again = WorkflowTemplate::from_json(t.to_json());
  CHECK(again == t);
  CHECK(again.to_json() == t.to_json());
}

TEST_CASE("on_fail defaults to retry and accepts skip and abort") {
  auto j = json::parse(R"({"name": "t", "loops": {"l": [
      {"id": "a", "instructions": "x"}, {"id": "b", "instructions": "x", "on_fail": "skip"},
      {"id": "c", "instructions": "x", "on_fail": "abort"}]},
      "steps": [{"id": "l", "type": "loop"}]})");
  const auto t = WorkflowTemplate::from_json(j);
  CHECK(t.loop("l")->at(0).on_fail == OnFail::retry);
  CHECK(t.loop("l")->at(1).on_fail == OnFail::skip);
  CHECK(t.loop("l")->at(2).on_fail == OnFail::abort);
}

TEST_CASE("ralph n accepts a whole float and rejects everything that is not a positive integer") {
  auto j = minimal();
  j["steps"][0] = {{"id", "r"}, {"type", "ralph"}, {"instructions", "x"}, {"n", 3.0}};
  CHECK(WorkflowTemplate::from_json(j).steps()[0].n == 3);
  for (const json& bad : {json(0), json(-1), json(2.5), json("2"), json(nullptr), json(true), json(1e300)}) {
    j["steps"][0]["n"] = bad;
    CHECK(error_of(j) ==
          (bad == json(1e300) ? "steps[0].n must be at most 10000" : "steps[0].n must be a positive integer"));
  }
  j["steps"][0].erase("n");
  CHECK(error_of(j) == "steps[0].n must be a positive integer");
}

TEST_CASE("every validation rule names the path") {
  auto step = [](json s) {
    auto j = minimal();
    j["steps"].push_back(std::move(s));
    return j;
  };
  CHECK(error_of(json::array()) == "workflow template must be an object (a mapping of name, steps, ...)");
  CHECK(error_of(json::object()) == "name is required");
  CHECK(error_of({{"name", "  "}, {"steps", json::array()}}) == "name must not be empty");
  CHECK(error_of({{"name", 3}}) == "name must be a string");
  CHECK(error_of({{"name", "t"}}) == "steps is required");
  CHECK(error_of({{"name", "t"}, {"steps", json::array()}}) == "steps must be a non-empty array");
  CHECK(error_of({{"name", "t"}, {"steps", json::object()}}) == "steps must be a non-empty array");
  CHECK(error_of(step(json::array())) == "steps[1] must be an object");
  CHECK(error_of(step({{"type", "action"}, {"instructions", "x"}})) == "steps[1].id is required");
  CHECK(error_of(step({{"id", "a.b"}, {"type", "action"}, {"instructions", "x"}})) ==
        "steps[1].id 'a.b' is not a valid id (1 to 128 characters of A-Z, a-z, 0-9, '_' and '-')");
  CHECK(error_of(step({{"id", "a"}, {"type", "action"}, {"instructions", "x"}})) ==
        "steps[1].id 'a' is used by an earlier step");
  CHECK(error_of(step({{"id", "b"}, {"type", "task"}, {"instructions", "x"}})) ==
        "steps[1].type must be one of action, loop, ralph");
  CHECK(error_of(step({{"id", "b"}, {"instructions", "x"}})) == "steps[1].type is required");
  CHECK(error_of(step({{"id", "b"}, {"type", "action"}})) == "steps[1].instructions is required");
  CHECK(error_of(step({{"id", "b"}, {"type", "action"}, {"instructions", " \n"}})) ==
        "steps[1].instructions must not be empty");
  CHECK(error_of(step({{"id", "b"}, {"type", "ralph"}, {"n", 2}})) == "steps[1].instructions is required");
  CHECK(error_of(step({{"id", "b"}, {"type", "action"}, {"instructions", "x"}, {"n", 2}})) ==
        "steps[1].n is only allowed on ralph steps");
  CHECK(error_of(step({{"id", "b"}, {"type", "loop"}})) ==
        "steps[1].id 'b' names no loop: a loop step's id must be a key of loops");
  CHECK(error_of(step({{"id", "b"}, {"type", "action"}, {"instructions", "x"}, {"agent", "ghost"}})) ==
        "steps[1].agent 'ghost' is not declared in agents");
  CHECK(error_of(step({{"id", "b"}, {"type", "action"}, {"instructions", "x"}, {"agent", 1}})) ==
        "steps[1].agent must be a string");
  CHECK(error_of(step({{"id", "b"}, {"type", "action"}, {"instructions", "x"}, {"artefacts", "yes"}})) ==
        "steps[1].artefacts must be true or false");
  CHECK(error_of(step({{"id", "b"}, {"type", "action"}, {"instructions", "x"}, {"artifacts", true}})) ==
        "steps[1].artifacts is not a known field (did you mean 'artefacts'?)");
  auto top = minimal();
  top["version"] = 2;
  CHECK(error_of(top) == "version is not a known field");
}

TEST_CASE("agents and loops are validated with their paths") {
  auto j = minimal();
  j["agents"] = json::array();
  CHECK(error_of(j) == "agents must be an object of name: {description}");
  j["agents"] = {{"bad name", {{"description", "x"}}}};
  CHECK_THAT(error_of(j), ContainsSubstring("agents: 'bad name' is not a valid agent name"));
  j["agents"] = {{"coder", "text"}};
  CHECK(error_of(j) == "agents.coder must be an object");
  j["agents"] = {{"coder", {{"description", 5}}}};
  CHECK(error_of(j) == "agents.coder.description must be a string");
  j.erase("agents");

  j["loops"] = json::array();
  CHECK(error_of(j) == "loops must be an object of loop id: [sub-steps]");
  j["loops"] = {{"l", json::array()}};
  CHECK(error_of(j) == "loops.l must be a non-empty array of sub-steps");
  j["loops"] = {{"l", {{{"id", "a"}}}}};
  CHECK(error_of(j) == "loops.l[0].instructions is required");
  j["loops"] = {{"l", {{{"id", "a"}, {"instructions", "x"}}, {{"id", "a"}, {"instructions", "y"}}}}};
  CHECK(error_of(j) == "loops.l[1].id 'a' is used twice in loops.l");
  j["loops"] = {{"l", {{{"id", "a"}, {"instructions", "x"}, {"on_fail", "ignore"}}}}};
  CHECK(error_of(j) == "loops.l[0].on_fail must be one of retry, skip, abort");
  j["loops"] = {{"l", {{{"id", "a"}, {"instructions", "x"}, {"agent", "ghost"}}}}};
  CHECK(error_of(j) == "loops.l[0].agent 'ghost' is not declared in agents");
  j["loops"] = {{"l", {{{"id", "a"}, {"instructions", "x"}, {"n", 2}}}}};
  CHECK(error_of(j) == "loops.l[0].n is not a known field");
}

TEST_CASE("parse applies the JSON limits and reports malformed text") {
  CHECK_THROWS_AS(WorkflowTemplate::parse("{\"name\": "), parse_error);
  CHECK_THROWS_WITH(WorkflowTemplate::parse("{\"name\": "), ContainsSubstring("workflow template: invalid JSON"));
  JsonLimits small;
  small.max_bytes = 10;
  CHECK_THROWS_AS(WorkflowTemplate::parse(cairn_test::feature_template_json(), small), limit_exceeded);
  std::string deep(100000, '[');
  CHECK_THROWS_AS(WorkflowTemplate::parse(deep), limit_exceeded);
}

TEST_CASE("mutated template text is rejected with cairn errors only, never a crash") {
  const std::string base = cairn_test::feature_template_json();
  std::mt19937 rng(12345);
  int accepted = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string text = base;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = rng() % text.size();
      switch (rng() % 3) {
        case 0: text[at] = static_cast<char>(rng() % 256); break;
        case 1: text.erase(at, 1 + rng() % 8); break;
        default: text.insert(at, 1, "{}[]\",:0an-"[rng() % 11]); break;
      }
      if (text.empty()) text = "x";
    }
    try {
      WorkflowTemplate::parse(text);
      ++accepted;
    } catch (const cairn::error&) {
    }
  }
  CHECK(accepted < 3000);
}
