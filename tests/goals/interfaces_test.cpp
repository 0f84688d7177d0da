// The host interfaces' value types: Interpretation checks, GoalPlan JSON, check_plan's rejection of bad planner
// output (unknown predicate, empty subgoals, cycles of parent ids, ...) and the default question.
#include <algorithm>
#include <string>

#include "cairn/goals/interfaces.hpp"
#include "catch.hpp"

using cairn::GoalPlan;
using cairn::Interpretation;
using cairn::SubgoalSpec;
using nlohmann::json;

namespace {

SubgoalSpec spec(std::string gloss, std::string predicate, json args = json::object()) {
  SubgoalSpec s;
  s.gloss = std::move(gloss);
  s.predicate = cairn::Predicate{std::move(predicate), std::move(args)};
  return s;
}

}  // namespace

TEST_CASE("interpretations are checked before they are applied") {
  REQUIRE_NOTHROW(cairn::check_interpretation(Interpretation::new_goal("Book", {{"destination", "Paris"}})));
  REQUIRE_NOTHROW(cairn::check_interpretation(Interpretation::add_evidence("date", "2025-10-01")));
  REQUIRE_NOTHROW(cairn::check_interpretation(Interpretation::abandon_goal()));
  REQUIRE_NOTHROW(cairn::check_interpretation(Interpretation::continue_conversation()));
  REQUIRE_THROWS_WITH(cairn::check_interpretation(Interpretation::new_goal("Book", json::array())),
                      "interpretation: new_goal context must be an object, got array");
  REQUIRE_THROWS_WITH(cairn::check_interpretation(Interpretation::new_goal("Book", {{"two words", 1}})),
                      "interpretation: context key 'two words' is not a valid evidence key (expected "
                      "[A-Za-z_][A-Za-z0-9_-]{0,127})");
  REQUIRE_THROWS_WITH(cairn::check_interpretation(Interpretation::add_evidence("", 1)),
                      "interpretation: evidence key '' is not valid (expected [A-Za-z_][A-Za-z0-9_-]{0,127})");
  REQUIRE(cairn::to_string(Interpretation::Action::continue_) == "continue");
  REQUIRE(cairn::to_string(Interpretation::Action::abandon_goal) == "abandon_goal");
}

TEST_CASE("a plan reads from JSON, and writes back") {
  const json j = json::parse(R"({"decomposition": "OR", "source": "model", "subgoals": [
      {"gloss": "Try A", "predicate": {"name": "use_tool", "args": {"tool": "a"}},
       "done_when": [{"kind": "has_evidence", "key": "a"}], "provenance": {"why": "first"}},
      {"gloss": "Group", "predicate": {"name": "composite"}, "id": "grp", "decomposition": "OR"},
      {"gloss": "Inner", "predicate": {"name": "execute"}, "parent": "grp"}]})");
  const GoalPlan p = GoalPlan::from_json(j);
  REQUIRE(p.kind == cairn::Decomposition::Kind::any);
  REQUIRE(p.source == "model");
  REQUIRE(p.subgoals.size() == 3);
  REQUIRE(p.subgoals[0].done_when[0] == cairn::Condition::has_evidence("a"));
  REQUIRE(p.subgoals[1].kind == cairn::Decomposition::Kind::any);
  REQUIRE(p.subgoals[2].parent == "grp");
  REQUIRE_NOTHROW(cairn::check_plan(p, "g1"));
  const GoalPlan again = GoalPlan::from_json(json(p));
  REQUIRE(json(again) == json(p));

  REQUIRE_THROWS_WITH(GoalPlan::from_json(json::array()), "plan: expected an object, got array");
  REQUIRE_THROWS_WITH(GoalPlan::from_json(json::object()), "plan: subgoals: missing");
  REQUIRE_THROWS_WITH(GoalPlan::from_json({{"subgoals", 1}}), "plan: subgoals: expected an array, got number");
  REQUIRE_THROWS_WITH(GoalPlan::from_json({{"decomposition", "XOR"}, {"subgoals", json::array()}}),
                      "plan: decomposition: 'XOR' is not AND or OR");
  REQUIRE_THROWS_WITH(GoalPlan::from_json({{"subgoals", {{{"gloss", "x"}}}}}), "plan: subgoals[0].predicate: missing");
  REQUIRE_THROWS_WITH(GoalPlan::from_json({{"subgoals", {{{"predicate", {{"name", "execute"}}}}}}}),
                      "plan: subgoals[0].gloss: missing");
  REQUIRE_THROWS_WITH(
      GoalPlan::from_json({{"subgoals", {{{"gloss", "x"}, {"predicate", {{"name", "execute"}}}, {"done_when", {1}}}}}}),
      "plan: subgoals[0].done_when[0]: expected an object, got number");
}

TEST_CASE("check_plan rejects bad planner output with the subgoal named") {
  GoalPlan p;
  REQUIRE_THROWS_WITH(cairn::check_plan(p, "g1"), "plan for goal g1: the planner returned no subgoals");

  p.subgoals = {spec("Fly", "fly")};
  REQUIRE_THROWS_WITH(cairn::check_plan(p, "g1"),
                      "plan for goal g1: subgoals[0]: predicate.name: 'fly' is not one of composite, use_tool, "
                      "gather_info, confirm, present_info, execute");
  REQUIRE_THROWS_AS(cairn::check_plan(p, "g1"), cairn::invalid_goal);

  p.subgoals = {spec("", "execute")};
  REQUIRE_THROWS_WITH(cairn::check_plan(p, "g1"), "plan for goal g1: subgoals[0]: gloss must not be empty");

  p.subgoals = {spec("Search", "use_tool")};
  REQUIRE_THROWS_WITH(cairn::check_plan(p, "g1"),
                      "plan for goal g1: subgoals[0]: predicate.args.tool: missing (a use_tool goal needs it)");

  p.subgoals = {spec("Ask", "gather_info", {{"key", "bad key"}})};
  REQUIRE_THROWS_WITH(cairn::check_plan(p, "g1"),
                      "plan for goal g1: subgoals[0]: predicate.args.key: 'bad key' is not a valid evidence key "
                      "(expected [A-Za-z_][A-Za-z0-9_-]{0,127})");

  p.subgoals = {spec("Ok", "execute")};
  p.subgoals[0].done_when = {cairn::Condition::has_evidence("a b")};
  REQUIRE_THROWS_WITH(cairn::check_plan(p, "g1"),
                      "plan for goal g1: subgoals[0]: done_when[0].key: 'a b' is not a valid evidence key");
  p.subgoals[0].done_when = {cairn::Condition::predicate_true({})};
  REQUIRE_THROWS_WITH(cairn::check_plan(p, "g1"),
                      "plan for goal g1: subgoals[0]: done_when[0].predicate.name must not be empty");

  auto a = spec("A", "composite");
  a.id = "a";
  auto b = spec("B", "composite");
  b.id = "b";
  a.parent = "b";
  b.parent = "a";
  p.subgoals = {a, b};
  REQUIRE_THROWS_WITH(cairn::check_plan(p, "g1"),
                      "plan for goal g1: subgoals[0]: parent ids form a cycle ('a' is its own ancestor)");

  auto self = spec("Self", "composite");
  self.id = "s";
  self.parent = "s";
  p.subgoals = {self};
  REQUIRE_THROWS_WITH(cairn::check_plan(p, "g1"),
                      "plan for goal g1: subgoals[0]: parent ids form a cycle ('s' is its own ancestor)");

  auto orphan = spec("Orphan", "execute");
  orphan.parent = "nobody";
  p.subgoals = {orphan};
  REQUIRE_THROWS_WITH(cairn::check_plan(p, "g1"),
                      "plan for goal g1: subgoals[0]: parent 'nobody' is not the id of a subgoal in this plan");

  auto leaf = spec("Leaf", "execute");
  leaf.id = "leaf";
  auto under = spec("Under", "execute");
  under.parent = "leaf";
  p.subgoals = {leaf, under};
  REQUIRE_THROWS_WITH(cairn::check_plan(p, "g1"),
                      "plan for goal g1: subgoals[1]: parent 'leaf' is not a composite subgoal");

  auto x1 = spec("X", "execute");
  x1.id = "x";
  auto x2 = spec("X again", "execute");
  x2.id = "x";
  p.subgoals = {x1, x2};
  REQUIRE_THROWS_WITH(cairn::check_plan(p, "g1"),
                      "plan for goal g1: subgoals[1]: id 'x' is used by subgoals[0] already");
}

TEST_CASE("the default question is the prompt, else 'Please provide <key>'") {
  REQUIRE(cairn::default_question("date", "") == "Please provide date");
  REQUIRE(cairn::default_question("date", "When?") == "When?");
}

// Issue 25: a model's plan of many chained subgoals took quadratic time to check (8,000 in a chain: 3.9 s; the
// 100,000 that fit in a 7 MB reply, minutes). A plan is now at most GoalPlan::max_subgoals, checked in linear time.
TEST_CASE("a plan with more than max_subgoals subgoals is refused, from JSON and by check_plan") {
  json j = {{"decomposition", "AND"}, {"subgoals", json::array()}};
  GoalPlan p;
  for (std::size_t i = 0; i <= GoalPlan::max_subgoals; ++i) {
    j["subgoals"].push_back({{"gloss", "step"}, {"predicate", {{"name", "execute"}, {"args", json::object()}}}});
    p.subgoals.push_back(spec("Step", "execute"));
  }
  REQUIRE_THROWS_AS(GoalPlan::from_json(j), cairn::limit_exceeded);
  REQUIRE_THROWS_WITH(GoalPlan::from_json(j),
                      "plan: subgoals: 1001 subgoals, more than the limit of 1000 (GoalPlan::max_subgoals)");
  REQUIRE_THROWS_WITH(cairn::check_plan(p, "g1"),
                      "plan for goal g1: 1001 subgoals, more than the limit of 1000 (GoalPlan::max_subgoals)");
  p.subgoals.pop_back();
  j["subgoals"].erase(j["subgoals"].size() - 1);
  REQUIRE_NOTHROW(cairn::check_plan(p, "g1"));
  REQUIRE(GoalPlan::from_json(j).subgoals.size() == GoalPlan::max_subgoals);
}

TEST_CASE("a chain of max_subgoals subgoals gets its depths in one pass, a cycle at its top is still found") {
  GoalPlan p;
  for (std::size_t i = 0; i < GoalPlan::max_subgoals; ++i) {
    auto s = spec("Link", "composite");
    s.id = "c" + std::to_string(i);
    if (i > 0) s.parent = "c" + std::to_string(i - 1);
    p.subgoals.push_back(s);
  }
  std::reverse(p.subgoals.begin(), p.subgoals.end());  // children before their parents: the longest walks first
  REQUIRE_NOTHROW(cairn::check_plan(p, "g1"));
  const auto depths = cairn::detail::subgoal_depths(p, "plan");
  for (std::size_t i = 0; i < depths.size(); ++i) REQUIRE(depths[i] == GoalPlan::max_subgoals - i);
  p.subgoals.back().parent = "c999";  // c0 under the chain's last link
  REQUIRE_THROWS_WITH(cairn::check_plan(p, "g1"),
                      "plan for goal g1: subgoals[0]: parent ids form a cycle ('c999' is its own ancestor)");
}

TEST_CASE("GoalPlan::from_json refuses JSON nested deeper than the default depth limit") {
  // A host that parsed a model's reply without cairn's limits: copying provenance used to crash (SIGSEGV).
  const int n = 200000;
  json j = {
      {"subgoals", json::array({{{"gloss", "g"}, {"predicate", {{"name", "execute"}, {"args", json::object()}}}}})}};
  j["subgoals"][0]["provenance"] = json::object();
  j["subgoals"][0]["provenance"]["v"] = json::parse(std::string(n, '[') + std::string(n, ']'));  // moved, not copied
  REQUIRE_THROWS_AS(GoalPlan::from_json(j), cairn::limit_exceeded);
  REQUIRE_THROWS_WITH(GoalPlan::from_json(j), "plan: JSON nesting is deeper than the limit of 256 levels");
  j["subgoals"][0]["provenance"] = {{"v", json::parse(std::string(250, '[') + std::string(250, ']'))}};
  REQUIRE(GoalPlan::from_json(j).subgoals.size() == 1);
}
