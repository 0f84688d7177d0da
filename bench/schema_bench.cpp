// Schema checks under load and under abuse (issue 25). A 1 MB input checked against a schema with patterns,
// uniqueItems and $refs, against a plain hand-written check of the same rules in the same run (the same RE2
// patterns, std::sort for uniqueness); and the worst case of each pathological input of the issue, in absolute
// time: an exponential-backtracking pattern, uniqueItems over 100,000 items, a $ref loop and a schema nested
// 20,000 deep given to registration, a value nested 20,000 deep under a recursive schema, and a schema whose
// anyOf branches double at each of 24 levels (stopped by the step budget). scripts/bench prints the ratios.
#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>
#include <re2/re2.h>

#include "cairn/context/schema.hpp"
#include "cairn/context/tool.hpp"

namespace {

using nlohmann::json;

const json& mb_schema() {
  static const json s = json::parse(R"({
    "definitions": {
      "name": {"type": "string", "pattern": "^[a-z][a-z0-9_]{0,31}$"},
      "record": {"type": "object", "required": ["id", "name", "email"], "additionalProperties": false,
                 "properties": {"id": {"type": "integer", "minimum": 0},
                                "name": {"$ref": "#/definitions/name"},
                                "email": {"type": "string", "pattern": "^[^@ ]+@[^@ ]+\\.[a-z]+$"},
                                "tags": {"type": "array", "uniqueItems": true,
                                         "items": {"$ref": "#/definitions/name"}}}}
    },
    "type": "object", "required": ["records", "ids"],
    "properties": {"records": {"type": "array", "items": {"$ref": "#/definitions/record"}},
                   "ids": {"type": "array", "uniqueItems": true, "items": {"type": "integer"}}}
  })");
  return s;
}

const json& mb_input() {
  static const json in = [] {
    json records = json::array();
    json ids = json::array();
    std::size_t bytes = 0;
    for (int i = 0; bytes < (1u << 20); ++i) {
      json r = {{"id", i},
                {"name", "user_" + std::to_string(i)},
                {"email", "user" + std::to_string(i) + "@example.org"},
                {"tags", {"t" + std::to_string(i % 7), "t" + std::to_string(i % 7 + 7), "common"}}};
      bytes += r.dump().size() + 8;
      records.push_back(std::move(r));
      ids.push_back(i * 3);
    }
    return json{{"records", std::move(records)}, {"ids", std::move(ids)}};
  }();
  return in;
}

// The same rules by hand: the same RE2 patterns, uniqueness by sorting.
bool hand_check(const json& in) {
  static const re2::RE2 name_re("^[a-z][a-z0-9_]{0,31}$");
  static const re2::RE2 email_re("^[^@ ]+@[^@ ]+\\.[a-z]+$");
  auto is_name = [&](const json& v) {
    return v.is_string() && re2::RE2::PartialMatch(v.get_ref<const std::string&>(), name_re);
  };
  if (!in.is_object()) return false;
  const auto records = in.find("records");
  const auto ids = in.find("ids");
  if (records == in.end() || ids == in.end() || !records->is_array() || !ids->is_array()) return false;
  for (const json& r : *records) {
    if (!r.is_object()) return false;
    for (const auto& [k, v] : r.items()) {
      if (k != "id" && k != "name" && k != "email" && k != "tags") return false;
    }
    const auto id = r.find("id");
    const auto name = r.find("name");
    const auto email = r.find("email");
    if (id == r.end() || name == r.end() || email == r.end()) return false;
    if (!id->is_number_integer() || id->get<long long>() < 0) return false;
    if (!is_name(*name)) return false;
    if (!email->is_string() || !re2::RE2::PartialMatch(email->get_ref<const std::string&>(), email_re)) return false;
    if (const auto tags = r.find("tags"); tags != r.end()) {
      if (!tags->is_array()) return false;
      std::vector<const std::string*> seen;
      for (const json& t : *tags) {
        if (!is_name(t)) return false;
        seen.push_back(&t.get_ref<const std::string&>());
      }
      std::sort(seen.begin(), seen.end(), [](const auto* a, const auto* b) { return *a < *b; });
      for (std::size_t i = 1; i < seen.size(); ++i) {
        if (*seen[i - 1] == *seen[i]) return false;
      }
    }
  }
  std::vector<long long> values;
  values.reserve(ids->size());
  for (const json& v : *ids) {
    if (!v.is_number_integer()) return false;
    values.push_back(v.get<long long>());
  }
  std::sort(values.begin(), values.end());
  return std::adjacent_find(values.begin(), values.end()) == values.end();
}

void set_bytes(benchmark::State& state, const json& in) {
  const auto bytes = static_cast<std::int64_t>(in.dump().size());
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * bytes);
  state.counters["input_bytes"] = static_cast<double>(bytes);
}

void BM_SchemaMB_Floor(benchmark::State& state) {
  const json& in = mb_input();
  if (!hand_check(in)) state.SkipWithError("the bench input is not valid");
  for (auto _ : state) benchmark::DoNotOptimize(hand_check(in));
  set_bytes(state, in);
}
void BM_SchemaMB_Cairn(benchmark::State& state) {
  const cairn::CompiledSchema schema(mb_schema(), "bench");
  const json& in = mb_input();
  if (!schema.validate(in).empty()) state.SkipWithError("the bench input is not valid");
  for (auto _ : state) benchmark::DoNotOptimize(schema.validate(in));
  set_bytes(state, in);
}
BENCHMARK(BM_SchemaMB_Floor)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SchemaMB_Cairn)->Unit(benchmark::kMillisecond);

// The worst cases: absolute time, target <= 50 ms each.
void BM_Worst_ExponentialPattern(benchmark::State& state) {
  const cairn::CompiledSchema schema(json::parse(R"({"type": "string", "pattern": "^(\\w+\\s?)*$"})"), "bench");
  const json in = std::string(static_cast<std::size_t>(state.range(0)), 'a') + "!";
  for (auto _ : state) {
    auto v = schema.validate(in);
    if (v.empty()) state.SkipWithError("the input should be refused");
    benchmark::DoNotOptimize(v);
  }
}
BENCHMARK(BM_Worst_ExponentialPattern)->Arg(40)->Arg(1 << 20)->Unit(benchmark::kMillisecond);

void BM_Worst_UniqueItems100k(benchmark::State& state) {
  const cairn::CompiledSchema schema(json::parse(R"({"type": "array", "uniqueItems": true})"), "bench");
  json in = json::array();
  for (int i = 0; i < 100000; ++i) in.push_back(i * 7);
  for (auto _ : state) {
    auto v = schema.validate(in);
    if (!v.empty()) state.SkipWithError("the input should pass");
    benchmark::DoNotOptimize(v);
  }
  set_bytes(state, in);
}
BENCHMARK(BM_Worst_UniqueItems100k)->Unit(benchmark::kMillisecond);

void refused_at_registration(benchmark::State& state, const json& schema) {
  for (auto _ : state) {
    cairn::ToolRegistry registry;
    try {
      registry.add(cairn::Tool{"t", "t", schema, [](const json&) { return cairn::ToolResult::ok(1); }});
      state.SkipWithError("the schema should be refused");
    } catch (const cairn::invalid_argument& e) {
      benchmark::DoNotOptimize(e.what());
    }
  }
}
void BM_Worst_RefLoop(benchmark::State& state) {
  refused_at_registration(state, json::parse(R"({"type": "object", "definitions": {"a": {"$ref": "#/definitions/b"},
      "b": {"$ref": "#/definitions/a"}}, "properties": {"x": {"$ref": "#/definitions/a"}}})"));
}
BENCHMARK(BM_Worst_RefLoop)->Unit(benchmark::kMillisecond);

json nested_items(std::size_t levels) {
  json schema = json::object();
  for (std::size_t i = 0; i < levels; ++i) schema = json{{"items", std::move(schema)}};
  return schema;
}
void BM_Worst_DeepSchema20000(benchmark::State& state) {
  static const json deep = json{{"type", "object"}, {"properties", {{"list", nested_items(20000)}}}};
  refused_at_registration(state, deep);
}
BENCHMARK(BM_Worst_DeepSchema20000)->Unit(benchmark::kMillisecond);

void BM_Worst_DeepValue20000(benchmark::State& state) {
  const cairn::CompiledSchema schema(json::parse(R"({"type": "array", "items": {"$ref": "#"}})"), "bench");
  static json* value = [] {
    auto* v = new json(json::array());  // never destroyed: nlohmann's destructor recurses
    for (int i = 0; i < 20000; ++i) *v = json::array({std::move(*v)});
    return v;
  }();
  for (auto _ : state) {
    auto v = schema.validate(*value);
    if (v.empty() || v[0].rule != "depth") state.SkipWithError("the value should be refused for its depth");
    benchmark::DoNotOptimize(v);
  }
}
BENCHMARK(BM_Worst_DeepValue20000)->Unit(benchmark::kMillisecond);

void BM_Worst_StepBudget(benchmark::State& state) {
  json defs = json::object();
  for (int i = 0; i < 24; ++i) {
    const json next = {{"$ref", "#/definitions/l" + std::to_string(i + 1)}};
    defs["l" + std::to_string(i)] = {{"anyOf", json::array({{{"allOf", json::array({next, {{"type", "string"}}})}},
                                                            {{"allOf", json::array({next, {{"type", "null"}}})}}})}};
  }
  defs["l24"] = {{"type", "string"}};
  const cairn::CompiledSchema schema(json{{"definitions", defs}, {"$ref", "#/definitions/l0"}}, "bench");
  for (auto _ : state) {
    auto v = schema.validate(1);
    if (v.empty() || v[0].rule != "budget") state.SkipWithError("the check should stop at its budget");
    benchmark::DoNotOptimize(v);
  }
}
BENCHMARK(BM_Worst_StepBudget)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
