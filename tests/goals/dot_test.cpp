// Graphviz export: one node per goal with its gloss, predicate and status (coloured), AND/OR edges, the stack shown
// by border width, and text escaped so that any gloss gives a valid DOT file.
#include <string>

#include "cairn/goals/dot.hpp"
#include "catch.hpp"

using cairn::Goal;
using cairn::GoalStack;
using cairn::GoalStatus;
using cairn_test::ContainsSubstring;

TEST_CASE("the goal tree exports to DOT with statuses and decompositions") {
  GoalStack s;
  Goal root;
  root.id = "g1";
  root.gloss = "Book \"the\" train\\now";
  s.push(root);
  Goal a;
  a.id = "g2";
  a.gloss = "Ask\ndate";
  a.parent = "g1";
  a.predicate = cairn::Predicate{"gather_info", {{"key", "date"}}};
  Goal b = a;
  b.id = "g3";
  b.gloss = "Search";
  b.predicate = cairn::Predicate{"execute", nlohmann::json::object()};
  s.add(a);
  s.add(b);
  s.set_decomposition("g1", {cairn::Decomposition::Kind::any, {"g2", "g3"}});
  s.update_status("g1", GoalStatus::blocked, "waiting for 2 subgoals");
  s.update_status("g3", GoalStatus::abandoned, "not needed");
  s.push_id("g2");

  const std::string dot = cairn::to_dot(s, "trip");
  REQUIRE(dot.rfind("digraph \"trip\" {\n", 0) == 0);
  REQUIRE(dot.substr(dot.size() - 2) == "}\n");
  REQUIRE_THAT(
      dot, ContainsSubstring(R"("g1" [label="Book \"the\" train\\now\ncomposite · blocked\nwaiting for 2 subgoals", )"
                             R"(fillcolor="khaki", penwidth=2];)"));
  REQUIRE_THAT(dot,
               ContainsSubstring(R"("g2" [label="Ask\ndate\ngather_info · pending", fillcolor="white", penwidth=3];)"));
  REQUIRE_THAT(dot,
               ContainsSubstring(R"("g3" [label="Search\nexecute · abandoned\nnot needed", fillcolor="lightpink"];)"));
  REQUIRE_THAT(dot, ContainsSubstring(R"("g1" -> "g2" [label="OR"];)"));
  REQUIRE_THAT(dot, ContainsSubstring(R"("g1" -> "g3" [label="OR"];)"));
  REQUIRE(
      cairn::to_dot(GoalStack()) ==
      "digraph \"goals\" {\n  rankdir=TB;\n  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\"];\n}\n");
}
