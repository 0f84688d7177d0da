#include "cairn/workflow/yaml.hpp"

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <random>
#include <string>

#include "catch.hpp"
#include "workspace.hpp"

using namespace cairn;
using cairn_test::ContainsSubstring;
using nlohmann::json;

namespace {

const char* feature_yaml = R"(
name: feature
description: Plan, implement task by task, review
agents:
  coder: {description: Writes code, model: fast}
  tester:
    description: Tests
loops:
  implement:
    - id: code
      agent: coder
      instructions: "Implement {task.id}: {task.title}. {task.description}"
      artefacts: true
    - id: test
      agent: tester
      instructions: Test {task.title}
      on_fail: retry
steps:
  - id: plan
    type: action
    instructions: Write a plan.
    artefacts: true
  - {id: define_tasks, type: action, instructions: Split the plan into tasks.}
  - id: implement
    type: loop
  - id: review
    type: ralph
    n: 2
    instructions: |-
      Review the change.
)";

std::string template_error(const std::string& yaml) {
  try {
    load_template_yaml(yaml);
  } catch (const invalid_template& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("a YAML template equals the same template in JSON") {
  CHECK(load_template_yaml(feature_yaml) == cairn_test::feature_template());
}

TEST_CASE("plain scalars are typed by the core schema, quoted ones stay strings") {
  const json j = yaml_to_json(
      "a: 12\nb: -3\nc: 1.5\nd: true\ne: ~\nf: '12'\ng: \"true\"\nh: hello\ni:\nj: 1e3\n"
      "k: !!str 5\nl: .5\nm: 99999999999999999999999\n");
  CHECK(j.at("a") == 12);
  CHECK(j.at("b") == -3);
  CHECK(j.at("c") == 1.5);
  CHECK(j.at("d") == true);
  CHECK(j.at("e") == nullptr);
  CHECK(j.at("f") == "12");
  CHECK(j.at("g") == "true");
  CHECK(j.at("h") == "hello");
  CHECK(j.at("i") == nullptr);
  CHECK(j.at("j") == 1000.0);
  CHECK(j.at("k") == "5");
  CHECK(j.at("l") == 0.5);
  CHECK(j.at("m").is_number_float());
  CHECK(j.at("m").get<double>() == 1e23);
  CHECK(yaml_to_json("+7") == 7);
  CHECK(yaml_to_json("-9223372036854775808") == std::numeric_limits<std::int64_t>::min());
  CHECK(yaml_to_json("18446744073709551615") == std::numeric_limits<std::uint64_t>::max());
  CHECK(yaml_to_json("-.25") == -0.25);
  CHECK(yaml_to_json("[1e999, -1e999, 1e-999]") == json::array({"1e999", "-1e999", "1e-999"}));
  CHECK(yaml_to_json(std::string(400, '4')) == std::string(400, '4'));
  const std::string big(300, '4');
  CHECK(yaml_to_json(big).get<double>() == std::strtod(big.c_str(), nullptr));
  CHECK(yaml_to_json("[1.2.3, 1e, +, -, .e5, 0x1A]") == json::array({"1.2.3", "1e", "+", "-", ".e5", "0x1A"}));
  CHECK(yaml_to_json("[1, [2, {x: y}]]") == json::parse(R"([1, [2, {"x": "y"}]])"));
  CHECK(yaml_to_json("1: one") == json{{"1", "one"}});
  CHECK(yaml_to_json("") == nullptr);
}

TEST_CASE("YAML templates fail validation with the same paths as JSON") {
  CHECK(template_error("name: t\nsteps:\n  - {id: a, type: ralph, instructions: x, n: 0}\n") ==
        "steps[0].n must be a positive integer");
  CHECK(template_error("name: t\nsteps:\n  - {id: a, type: ralph, instructions: x, n: '2'}\n") ==
        "steps[0].n must be a positive integer");
  CHECK(template_error("name: t\nsteps:\n  - {id: a, type: action}\n") == "steps[0].instructions is required");
  CHECK(template_error("name: t\nsteps: []\n") == "steps must be a non-empty array");
  CHECK(template_error("- a\n- b\n") == "workflow template must be an object (a mapping of name, steps, ...)");
  CHECK(template_error("") == "workflow template must be an object (a mapping of name, steps, ...)");
}

TEST_CASE("malformed YAML is a parse error with line and column") {
  CHECK_THROWS_AS(load_template_yaml("name: [unclosed\n"), parse_error);
  CHECK_THROWS_WITH(load_template_yaml("name: t\nsteps:\n  - id: a\n   bad: indent: here\n"),
                    ContainsSubstring("workflow template (YAML): line "));
  CHECK_THROWS_WITH(yaml_to_json("a: 1\na: 2\n"), "YAML: line 2, column 1: duplicate key 'a'");
  CHECK_THROWS_WITH(yaml_to_json("? [a]\n: b\n"), ContainsSubstring("a mapping key must be a scalar"));
  CHECK_THROWS_WITH(yaml_to_json("a: 1\n---\nb: 2\n"), ContainsSubstring("found a second one"));
  CHECK_THROWS_AS(yaml_to_json("a: *nothing\n"), parse_error);
}

TEST_CASE("YAML limits: size, depth, and alias expansion") {
  YamlLimits small;
  small.max_bytes = 10;
  CHECK_THROWS_AS(load_template_yaml(feature_yaml, small), limit_exceeded);
  CHECK_THROWS_WITH(yaml_to_json(std::string(100000, '[') + std::string(100000, ']')),
                    ContainsSubstring("nesting is deeper than the limit of 64"));
  std::string block;
  for (int i = 0; i < 200; ++i) block += std::string(static_cast<std::size_t>(i) * 2, ' ') + "k:\n";
  CHECK_THROWS_AS(yaml_to_json(block), limit_exceeded);
  // "Billion laughs": each level doubles; expanding would need 2^30 values.
  std::string bomb = "a0: &a0 [x, x]\n";
  for (int i = 1; i <= 30; ++i) {
    bomb += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [*a" + std::to_string(i - 1) + ", *a" +
            std::to_string(i - 1) + "]\n";
  }
  CHECK_THROWS_WITH(yaml_to_json(bomb), ContainsSubstring("more than 100000 values"));
  // Aliases within the limit are expanded.
  CHECK(yaml_to_json("base: &b {x: 1}\ncopy: *b\n") == json::parse(R"({"base": {"x": 1}, "copy": {"x": 1}})"));
}

TEST_CASE("load_template_yaml_file reads a file and names it in errors") {
  cairn_test::TempWorkspace ws;
  const auto good = ws.write("feature.yaml", feature_yaml);
  CHECK(load_template_yaml_file(good) == cairn_test::feature_template());
  const auto bad = ws.write("bad.yaml", "name: t\nsteps:\n  - {id: a, type: loop}\n");
  CHECK_THROWS_WITH(load_template_yaml_file(bad),
                    "workflow template '" + bad.string() +
                        "': steps[0].id 'a' names no loop: a loop step's id must be a key of loops");
  CHECK_THROWS_AS(load_template_yaml_file(ws.path() / "missing.yaml"), storage_error);
}

TEST_CASE("mutated YAML is rejected with cairn errors only, never a crash") {
  const std::string base = feature_yaml;
  std::mt19937 rng(777);
  for (int i = 0; i < 3000; ++i) {
    std::string text = base;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = rng() % text.size();
      switch (rng() % 3) {
        case 0: text[at] = static_cast<char>(rng() % 256); break;
        case 1: text.erase(at, 1 + rng() % 8); break;
        default: text.insert(at, 1, "{}[]-:&*!|>'\"#\n "[rng() % 16]); break;
      }
      if (text.empty()) text = "x";
    }
    try {
      load_template_yaml(text);
    } catch (const cairn::error&) {
    }
  }
  SUCCEED("no crash and no foreign exception");
}
