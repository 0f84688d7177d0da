// Goal engine benchmarks: a plan of N goals (a root AND over N/100 composites of 99 execute goals each) processed to
// completion in one turn, and a JSON round trip of the finished state.
//
//   Process/N:   GoalEngine::handle, planning included   vs   a hand-written depth-first walk over the same tree
//                                                              (vectors of structs, an index stack, status flags)
//   RoundTrip/N: to_json + dump + restore_text (parse with limits, check the tree, rebuild the index)
//                                                         vs   dump + nlohmann::json::parse of the same state
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/context/execution_context.hpp"
#include "cairn/context/tool.hpp"
#include "cairn/goals/engine.hpp"

using nlohmann::json;

namespace {

constexpr std::size_t per_group = 99;

struct NewGoal : cairn::MessageInterpreter {
  cairn::Interpretation interpret(const std::string& m, const cairn::Goal*, const json&) override {
    return cairn::Interpretation::new_goal(m);
  }
};

// Root -> groups composites; each composite -> 99 execute goals.
struct WidePlanner : cairn::GoalPlanner {
  std::size_t groups;
  explicit WidePlanner(std::size_t g) : groups(g) {}
  cairn::GoalPlan plan(const cairn::Goal& goal, const json&) override {
    cairn::GoalPlan p;
    const bool root = goal.is_root();
    const std::size_t n = root ? groups : per_group;
    p.subgoals.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      cairn::SubgoalSpec s;
      s.gloss = (root ? "Group " : "Step ") + std::to_string(i);
      s.predicate = cairn::Predicate{root ? "composite" : "execute", json::object()};
      p.subgoals.push_back(std::move(s));
    }
    return p;
  }
};

std::size_t groups_for(std::int64_t goals) { return static_cast<std::size_t>(goals) / (per_group + 1); }

cairn::GoalEngineOptions big_limits() {
  cairn::GoalEngineOptions o;
  o.max_goals = 1'000'000;
  return o;
}

void BM_Process_Cairn(benchmark::State& state) {
  const std::size_t groups = groups_for(state.range(0));
  auto interpreter = std::make_shared<NewGoal>();
  auto planner = std::make_shared<WidePlanner>(groups);
  cairn::ToolRegistry tools;
  std::size_t goals = 0;
  for (auto _ : state) {
    auto store = std::make_shared<cairn::InMemoryArtifactStore>();
    cairn::ExecutionContext ctx(store, "bench");
    cairn::GoalEngine engine(ctx, tools, {interpreter, planner}, big_limits());
    auto out = engine.handle("Run the big plan");
    if (out.size() != 1 || engine.goals().unfinished_count() != 0) state.SkipWithError("plan did not complete");
    goals = engine.goals().goal_count();
    benchmark::DoNotOptimize(out);
  }
  state.counters["goals"] = static_cast<double>(goals);
}

// The least work any engine must do: build the same tree (with its glosses) and walk it depth first, marking each
// goal done and checking each parent once its children are.
void BM_Process_Floor(benchmark::State& state) {
  const std::size_t groups = groups_for(state.range(0));
  struct Node {
    std::string gloss;
    std::size_t parent;
    std::vector<std::size_t> children;
    bool composite;
    int status;  // 0 pending, 1 blocked, 2 achieved
  };
  std::size_t goals = 0;
  for (auto _ : state) {
    std::vector<Node> nodes;
    nodes.push_back({"Run the big plan", 0, {}, true, 0});
    std::vector<std::size_t> stack{0};
    while (!stack.empty()) {
      const std::size_t top = stack.back();
      if (nodes[top].status == 1) {  // children done
        nodes[top].status = 2;
        stack.pop_back();
        continue;
      }
      if (!nodes[top].composite) {
        nodes[top].status = 2;
        stack.pop_back();
        continue;
      }
      const bool root = top == 0;
      const std::size_t n = root ? groups : per_group;
      for (std::size_t i = 0; i < n; ++i) {
        nodes.push_back({(root ? "Group " : "Step ") + std::to_string(i), top, {}, root, 0});
        nodes[top].children.push_back(nodes.size() - 1);
      }
      nodes[top].status = 1;
      for (auto it = nodes[top].children.rbegin(); it != nodes[top].children.rend(); ++it) stack.push_back(*it);
    }
    goals = nodes.size();
    benchmark::DoNotOptimize(nodes.data());
  }
  state.counters["goals"] = static_cast<double>(goals);
}

json finished_state(std::size_t groups) {
  auto store = std::make_shared<cairn::InMemoryArtifactStore>();
  cairn::ExecutionContext ctx(store, "bench");
  cairn::ToolRegistry tools;
  cairn::GoalEngine engine(ctx, tools, {std::make_shared<NewGoal>(), std::make_shared<WidePlanner>(groups)},
                           big_limits());
  engine.handle("Run the big plan");
  return engine.to_json();
}

void BM_RoundTrip_Cairn(benchmark::State& state) {
  const std::size_t groups = groups_for(state.range(0));
  auto store = std::make_shared<cairn::InMemoryArtifactStore>();
  cairn::ExecutionContext ctx(store, "bench");
  cairn::ToolRegistry tools;
  cairn::GoalEngine source(ctx, tools, {std::make_shared<NewGoal>(), std::make_shared<WidePlanner>(groups)},
                           big_limits());
  source.handle("Run the big plan");
  cairn::GoalEngine target(ctx, tools, {std::make_shared<NewGoal>(), std::make_shared<WidePlanner>(groups)},
                           big_limits());
  std::size_t bytes = 0;
  for (auto _ : state) {
    const std::string text = source.to_json().dump();
    target.restore_text(text);
    bytes = text.size();
    benchmark::DoNotOptimize(target.goals().goal_count());
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}

void BM_RoundTrip_Floor(benchmark::State& state) {
  const json saved = finished_state(groups_for(state.range(0)));
  std::size_t bytes = 0;
  for (auto _ : state) {
    const std::string text = saved.dump();
    json back = json::parse(text);
    bytes = text.size();
    benchmark::DoNotOptimize(back);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}

}  // namespace

BENCHMARK(BM_Process_Floor)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Process_Cairn)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RoundTrip_Floor)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RoundTrip_Cairn)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
