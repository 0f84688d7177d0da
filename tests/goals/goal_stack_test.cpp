// GoalStack: push, pop, peek, find, update_status, add_evidence, removal, the unfinished count, copies, and JSON
// with every inconsistency of a goal tree (unknown parents, cycles, bad stack entries) rejected.
#include <string>
#include <vector>

#include "cairn/goals/goal_stack.hpp"
#include "catch.hpp"

using cairn::Decomposition;
using cairn::Goal;
using cairn::GoalStack;
using cairn::GoalStatus;
using nlohmann::json;
using Strings = std::vector<std::string>;

namespace {

Goal goal(std::string id, std::string parent = {}) {
  Goal g;
  g.id = std::move(id);
  g.gloss = "goal " + g.id;
  g.parent = std::move(parent);
  return g;
}

// root g1 (AND) -> g2, g3; g3 (OR) -> g4
GoalStack tree() {
  GoalStack s;
  s.push(goal("g1"));
  s.add(goal("g2", "g1"));
  s.add(goal("g3", "g1"));
  s.add(goal("g4", "g3"));
  s.set_decomposition("g1", {cairn::Decomposition::Kind::all, {"g2", "g3"}});
  s.set_decomposition("g3", {cairn::Decomposition::Kind::any, {"g4"}});
  s.push_id("g3");
  s.push_id("g2");
  return s;
}

}  // namespace

TEST_CASE("push, peek, pop and find") {
  GoalStack s;
  REQUIRE(s.peek() == nullptr);
  REQUIRE(s.pop() == nullptr);
  Goal a = goal("a");
  a.status = GoalStatus::active;  // push always starts a goal as pending
  s.push(a);
  s.push(goal("b"));
  REQUIRE(s.size() == 2);
  REQUIRE(s.peek()->id == "b");
  REQUIRE(s.find("a")->status == GoalStatus::pending);
  REQUIRE(s.find("a")->created_at > 0);
  REQUIRE(s.find("zzz") == nullptr);
  REQUIRE(s.pop()->id == "b");
  REQUIRE(s.peek()->id == "a");
  REQUIRE(s.find("b") != nullptr);  // popped goals stay registered
  REQUIRE(s.goal_count() == 2);
  REQUIRE_THROWS_WITH(s.push(goal("a")), "goal stack: a goal with id 'a' exists already");
  REQUIRE_THROWS_WITH(s.push(goal("")), "goal stack: a goal needs an id");
  REQUIRE_THROWS_WITH(s.push_id("nope"), "goal stack: no goal with id 'nope'");
}

TEST_CASE("update_status, add_evidence and the unfinished count") {
  GoalStack s = tree();
  REQUIRE(s.unfinished_count() == 4);
  s.update_status("g2", GoalStatus::achieved, "done");
  REQUIRE(s.unfinished_count() == 3);
  REQUIRE(s.find("g2")->reason == "done");
  s.update_status("g2", GoalStatus::achieved);  // no reason given: the old one stays
  REQUIRE(s.find("g2")->reason == "done");
  s.update_status("g2", GoalStatus::blocked, "again");
  REQUIRE(s.unfinished_count() == 4);
  s.add_evidence("g2", "origin", "London");
  s.add_evidence("g2", "origin", "Leeds");
  REQUIRE(s.find("g2")->evidence == json{{"origin", "Leeds"}});
  REQUIRE_THROWS_AS(s.update_status("g9", GoalStatus::active), cairn::not_found);
  REQUIRE_THROWS_AS(s.add_evidence("g9", "k", 1), cairn::not_found);
  REQUIRE_THROWS_WITH(s.set_decomposition("g2", {cairn::Decomposition::Kind::all, {"g4"}}),
                      "goal stack: 'g4' is not a registered child of 'g2'");
}

TEST_CASE("remove, subtree and depth") {
  GoalStack s = tree();
  REQUIRE(s.ids() == Strings{"g1", "g3", "g2"});
  REQUIRE(s.depth("g4") == 2);
  std::vector<std::string> sub;
  for (const Goal* g : s.subtree("g1")) sub.push_back(g->id);
  REQUIRE(sub == Strings{"g1", "g2", "g3", "g4"});
  s.remove({"g3"});
  REQUIRE(s.ids() == Strings{"g1", "g2"});
  s.remove({"g2"});
  REQUIRE(s.ids() == Strings{"g1"});
  s.remove({});
  REQUIRE(s.ids() == Strings{"g1"});
  s.push_id("g2");
  s.push_id("g3");
  s.remove_one("g2");  // not the top
  REQUIRE(s.ids() == Strings{"g1", "g3"});
  s.remove_one("g3");  // the top
  s.remove_one("g4");  // not on the stack: nothing happens
  REQUIRE(s.ids() == Strings{"g1"});
}

TEST_CASE("a copy is independent of the original") {
  GoalStack a = tree();
  GoalStack b = a;
  b.add_evidence("g2", "k", 1);
  b.pop();
  REQUIRE(a.find("g2")->evidence.empty());
  REQUIRE(a.size() == 3);
  REQUIRE(b.find("g2")->evidence == json{{"k", 1}});
  a = b;
  REQUIRE(a.find("g2")->evidence == json{{"k", 1}});
  GoalStack c = std::move(a);
  REQUIRE(c.find("g4")->parent == "g3");
}

TEST_CASE("JSON round trip") {
  GoalStack s = tree();
  s.add_evidence("g1", "city", "Oslo");
  const json j = s.to_json();
  REQUIRE(j["stack"] == json{"g1", "g3", "g2"});
  const GoalStack back = GoalStack::from_json(json::parse(j.dump()));
  REQUIRE(back.to_json() == j);
  REQUIRE(back.unfinished_count() == 4);
  REQUIRE(back.peek()->id == "g2");
}

TEST_CASE("an inconsistent tree is rejected with the goal named") {
  const json good = tree().to_json();
  auto broken = [&](auto edit) {
    json j = good;
    edit(j);
    return j;
  };
  REQUIRE_THROWS_WITH(GoalStack::from_json(json::array()), "goal stack: expected an object, got array");
  REQUIRE_THROWS_WITH(GoalStack::from_json(broken([](json& j) { j.erase("stack"); })),
                      "goal stack: stack: expected an array");
  REQUIRE_THROWS_WITH(GoalStack::from_json(broken([](json& j) { j["goals"][1]["id"] = "g1"; })),
                      "goal stack: goals[1]: id 'g1' is used twice");
  REQUIRE_THROWS_WITH(GoalStack::from_json(broken([](json& j) { j["goals"][1]["parent"] = "g7"; })),
                      "goal stack: goal g1: child g2 names another parent");
  REQUIRE_THROWS_WITH(
      GoalStack::from_json(broken([](json& j) { j["goals"][0]["decomposition"]["children"] = {"g3"}; })),
      "goal stack: goal g2: its parent g1 does not list it as a child");
  REQUIRE_THROWS_WITH(GoalStack::from_json(broken([](json& j) { j["goals"][3]["parent"] = "g9"; })),
                      "goal stack: goal g3: child g4 names another parent");
  REQUIRE_THROWS_WITH(GoalStack::from_json(broken([](json& j) {
                        j["goals"][2]["decomposition"]["children"] = {"g4", "g4"};
                      })),
                      "goal stack: goal g3: child g4 is listed twice");
  REQUIRE_THROWS_WITH(GoalStack::from_json(broken([](json& j) {
                        j["goals"][2]["decomposition"]["children"] = {"g4", "g8"};
                      })),
                      "goal stack: goal g3: child 'g8' does not exist");
  // g1 and g2 each other's parent and child: every link agrees, only the walk up finds the loop
  REQUIRE_THROWS_WITH(GoalStack::from_json(broken([](json& j) {
                        j["goals"][0]["parent"] = "g2";
                        j["goals"][1]["predicate"] = {{"name", "composite"}, {"args", json::object()}};
                        j["goals"][1]["decomposition"] = {{"kind", "AND"}, {"children", {"g1"}}};
                      })),
                      "goal stack: goal g1: its parent ids form a cycle");
  // a long chain is checked in linear time, and a loop at its top is still found
  json chain = {{"goals", json::array()}, {"stack", json::array()}};
  const int n = 20000;
  for (int i = 1; i <= n; ++i) {
    json g = {{"id", "c" + std::to_string(i)},
              {"gloss", "link"},
              {"status", "achieved"},
              {"predicate", {{"name", i == n ? "execute" : "composite"}}}};
    if (i > 1) g["parent"] = "c" + std::to_string(i - 1);
    if (i < n) g["decomposition"] = {{"kind", "AND"}, {"children", {"c" + std::to_string(i + 1)}}};
    chain["goals"].push_back(g);
  }
  REQUIRE(GoalStack::from_json(chain).depth("c20000") == 19999);
  chain["goals"][0]["parent"] = "c2";
  chain["goals"][1]["decomposition"]["children"] = {"c3", "c1"};
  REQUIRE_THROWS_WITH(GoalStack::from_json(chain), "goal stack: goal c1: its parent ids form a cycle");
  REQUIRE_THROWS_WITH(GoalStack::from_json(broken([](json& j) { j["stack"].push_back(4); })),
                      "goal stack: stack[3]: expected a goal id");
  REQUIRE_THROWS_WITH(GoalStack::from_json(broken([](json& j) { j["stack"].push_back("g1"); })),
                      "goal stack: stack[3]: goal g1 is on the stack twice");
  REQUIRE_THROWS_WITH(GoalStack::from_json(broken([](json& j) { j["goals"][1]["status"] = "abandoned"; })),
                      "goal stack: stack[2]: goal g2 is abandoned and cannot be on the stack");
  REQUIRE_THROWS_WITH(GoalStack::from_json(broken([](json& j) { j["goals"][1]["gloss"] = 1; })),
                      "goal stack: goals[1] g2: gloss: expected a string, got number");
}

// Issue 25: a restored state (a journal row) whose goal listed 200,000 children took minutes to check (each child
// searched its parent's list: 20,000 took 1 s). A goal has at most Decomposition::max_children, as a plan does,
// and each link is one lookup.
TEST_CASE("a goal with more than Decomposition::max_children children is refused when restored or set") {
  auto family = [](std::size_t n) {
    json j = {{"goals", json::array()}, {"stack", json::array()}};
    json root = {{"id", "r"}, {"gloss", "root"}, {"status", "blocked"}, {"predicate", {{"name", "composite"}}}};
    json kids = json::array();
    for (std::size_t i = 0; i < n; ++i) kids.push_back("c" + std::to_string(i));
    root["decomposition"] = {{"kind", "AND"}, {"children", kids}};
    j["goals"].push_back(root);
    for (std::size_t i = 0; i < n; ++i) {
      j["goals"].push_back({{"id", "c" + std::to_string(i)},
                            {"gloss", "c"},
                            {"status", "achieved"},
                            {"parent", "r"},
                            {"predicate", {{"name", "execute"}}}});
    }
    return j;
  };
  const auto full = GoalStack::from_json(family(Decomposition::max_children));
  REQUIRE(full.find("r")->decomposition->children.size() == Decomposition::max_children);
  REQUIRE_THROWS_AS(GoalStack::from_json(family(Decomposition::max_children + 1)), cairn::parse_error);
  REQUIRE_THROWS_WITH(GoalStack::from_json(family(Decomposition::max_children + 1)),
                      "goal stack: goals[0] r: decomposition.children: 1001 children, more than the limit of 1000 "
                      "(Decomposition::max_children)");
  // A child missing from a full list is still found.
  auto missing = family(Decomposition::max_children);
  missing["goals"][0]["decomposition"]["children"].erase(999);
  REQUIRE_THROWS_WITH(GoalStack::from_json(missing), "goal stack: goal c999: its parent r does not list it as a child");

  GoalStack stack = GoalStack::from_json(family(Decomposition::max_children));
  Decomposition more = *stack.find("r")->decomposition;
  more.children.push_back("c0");
  REQUIRE_THROWS_AS(stack.set_decomposition("r", more), cairn::limit_exceeded);
  REQUIRE(stack.find("r")->decomposition->children.size() == Decomposition::max_children);
}
