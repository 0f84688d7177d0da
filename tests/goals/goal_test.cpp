// Goal, Predicate, Condition, Decomposition, GoalStatus: names, JSON both ways, and every malformed field rejected
// with its name.
#include <string>

#include "cairn/goals/goal.hpp"
#include "catch.hpp"

using cairn::Condition;
using cairn::Goal;
using cairn::GoalStatus;
using cairn::Predicate;
using nlohmann::json;

namespace {

json sample() {
  return json::parse(R"({
    "id": "g2", "gloss": "Search trains", "parent": "g1",
    "predicate": {"name": "use_tool", "args": {"tool": "train-search-api", "output": "trainList"}},
    "decomposition": null, "status": "blocked",
    "done_when": [{"kind": "has_evidence", "key": "trainList"},
                  {"kind": "predicate_true", "predicate": {"name": "verify_payment", "args": {"x": 1}}}],
    "evidence": {"origin": "London"}, "provenance": {"sop_id": "train-booking", "step_index": 0},
    "reason": "tool 'train-search-api' is not available", "created_at": 5, "updated_at": 7})");
}

}  // namespace

TEST_CASE("GoalStatus names and finality") {
  for (auto s :
       {GoalStatus::pending, GoalStatus::active, GoalStatus::achieved, GoalStatus::abandoned, GoalStatus::blocked}) {
    REQUIRE(cairn::goal_status_from_string(cairn::to_string(s)) == s);
  }
  REQUIRE_FALSE(cairn::goal_status_from_string("done"));
  REQUIRE(cairn::is_final(GoalStatus::achieved));
  REQUIRE(cairn::is_final(GoalStatus::abandoned));
  REQUIRE_FALSE(cairn::is_final(GoalStatus::blocked));
  REQUIRE(cairn::decomposition_kind_from_string("OR") == cairn::Decomposition::Kind::any);
  REQUIRE_FALSE(cairn::decomposition_kind_from_string("or"));
  REQUIRE(cairn::is_goal_predicate("present_info"));
  REQUIRE_FALSE(cairn::is_goal_predicate("verify_payment"));
}

TEST_CASE("a goal reads from JSON and writes back the same") {
  const Goal g = cairn::goal_from_json(sample());
  REQUIRE(g.id == "g2");
  REQUIRE(g.parent == "g1");
  REQUIRE(g.predicate == Predicate{"use_tool", {{"tool", "train-search-api"}, {"output", "trainList"}}});
  REQUIRE(g.status == GoalStatus::blocked);
  REQUIRE(g.done_when.size() == 2);
  REQUIRE(g.done_when[0] == Condition::has_evidence("trainList"));
  REQUIRE(g.done_when[1] == Condition::predicate_true(Predicate{"verify_payment", {{"x", 1}}}));
  REQUIRE(g.created_at == 5);
  REQUIRE(g.updated_at == 7);
  REQUIRE(json(g) == sample());

  Goal root;
  root.id = "g1";
  root.gloss = "Book";
  root.decomposition = cairn::Decomposition{cairn::Decomposition::Kind::any, {"g2", "g3"}};
  const json j = root;
  REQUIRE(j["parent"].is_null());
  REQUIRE(j["decomposition"] == json{{"kind", "OR"}, {"children", {"g2", "g3"}}});
  const Goal back = j.get<Goal>();
  REQUIRE(back.decomposition == root.decomposition);
  REQUIRE(back.is_root());
  REQUIRE(back.is_composite());
}

TEST_CASE("a malformed goal is rejected with the field named") {
  auto with = [](const char* pointer, json value) {
    json j = sample();
    j[json::json_pointer(pointer)] = std::move(value);
    return j;
  };
  auto without = [](const char* key) {
    json j = sample();
    j.erase(key);
    return j;
  };
  REQUIRE_THROWS_WITH(cairn::goal_from_json(json::array()), "goal: expected an object, got array");
  REQUIRE_THROWS_WITH(cairn::goal_from_json(without("id")), "goal: id: missing");
  REQUIRE_THROWS_WITH(cairn::goal_from_json(with("/gloss", "")), "goal g2: gloss: must not be empty");
  REQUIRE_THROWS_WITH(cairn::goal_from_json(without("predicate")), "goal g2: predicate: missing");
  REQUIRE_THROWS_WITH(cairn::goal_from_json(with("/predicate/name", "fly")),
                      "goal g2: predicate.name: 'fly' is not one of composite, use_tool, gather_info, confirm, "
                      "present_info, execute");
  REQUIRE_THROWS_WITH(cairn::goal_from_json(with("/predicate/args", json::object())),
                      "goal g2: predicate.args.tool: missing (a use_tool goal needs it)");
  REQUIRE_THROWS_WITH(cairn::goal_from_json(with("/predicate/args/output", "not a key")),
                      "goal g2: predicate.args.output: 'not a key' is not a valid evidence key (expected "
                      "[A-Za-z_][A-Za-z0-9_-]{0,127})");
  REQUIRE_THROWS_WITH(cairn::goal_from_json(with("/predicate", {{"name", "gather_info"}, {"args", {{"key", 3}}}})),
                      "goal g2: predicate.args.key: expected a string, got number");
  REQUIRE_THROWS_WITH(cairn::goal_from_json(with("/predicate/args", 5)),
                      "goal g2: predicate.args: expected an object, got number");
  REQUIRE_THROWS_WITH(cairn::goal_from_json(with("/status", "done")),
                      "goal g2: status: 'done' is not one of pending, active, achieved, abandoned, blocked");
  REQUIRE_THROWS_WITH(cairn::goal_from_json(with("/done_when/0/kind", "js")),
                      "goal g2: done_when[0].kind: 'js' is not one of has_evidence, predicate_true");
  REQUIRE_THROWS_WITH(cairn::goal_from_json(with("/done_when/0/key", "a b")),
                      "goal g2: done_when[0].key: 'a b' is not a valid evidence key (expected "
                      "[A-Za-z_][A-Za-z0-9_-]{0,127})");
  REQUIRE_THROWS_WITH(cairn::goal_from_json(with("/done_when/1/predicate", json::object())),
                      "goal g2: done_when[1].predicate.name: missing");
  REQUIRE_THROWS_WITH(cairn::goal_from_json(with("/done_when", "x")),
                      "goal g2: done_when: expected an array, got string");
  REQUIRE_THROWS_WITH(cairn::goal_from_json(with("/decomposition", {{"kind", "AND"}, {"children", {"g3"}}})),
                      "goal g2: decomposition: only a composite goal has a decomposition");
  REQUIRE_THROWS_WITH(cairn::goal_from_json(with("/decomposition", {{"kind", "XOR"}, {"children", {"g3"}}})),
                      "goal g2: decomposition.kind: 'XOR' is not AND or OR");
  REQUIRE_THROWS_WITH(cairn::goal_from_json(with("/decomposition", {{"kind", "AND"}, {"children", json::array()}})),
                      "goal g2: decomposition.children: must not be empty");
  REQUIRE_THROWS_WITH(cairn::goal_from_json(with("/evidence", json::array())),
                      "goal g2: evidence: expected an object, got array");
  REQUIRE_THROWS_WITH(cairn::goal_from_json(with("/created_at", "yesterday")),
                      "goal g2: created_at: expected an integer, got string");
  REQUIRE_THROWS_AS(cairn::goal_from_json(with("/predicate/name", "fly")), cairn::invalid_goal);
  REQUIRE_THROWS_AS(cairn::goal_from_json(with("/status", 1)), cairn::parse_error);
}
