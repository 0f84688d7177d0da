// ExecutionContext: fork() must stay flat whatever the context holds; a lookup after a chain of 1,000 forks must
// cost what it costs in an unforked context; resolve() must stay close to a plain deep copy of the same JSON; and
// the catalog of 1,000 artifacts is timed against the same text formatted from a ready-made list.
// scripts/bench prints the ratios.
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/context/execution_context.hpp"
#include "cairn/context/prompt.hpp"

namespace {

using cairn::ArtifactPtr;
using cairn::ArtifactRecord;
using cairn::ExecutionContext;
using nlohmann::json;

std::shared_ptr<cairn::InMemoryArtifactStore> shared_store() {
  static auto store = std::make_shared<cairn::InMemoryArtifactStore>();
  return store;
}

ArtifactPtr stored_record(const json& value) {
  return shared_store()->store(
      *ArtifactRecord::builder().tenant_id("bench").type("data").description("bench data").value(value).build());
}

// A context holding `n` bindings. Filled once per size; the million shares one stored record (bind() does not
// store again), which keeps the memory to the trie itself.
ExecutionContext& context_of(std::size_t n) {
  static std::vector<std::pair<std::size_t, std::unique_ptr<ExecutionContext>>> made;
  for (auto& [size, ctx] : made) {
    if (size == n) return *ctx;
  }
  auto ctx = std::make_unique<ExecutionContext>(shared_store(), "bench");
  const ArtifactPtr record = stored_record("value");
  for (std::size_t i = 0; i < n; ++i) ctx->bind("a" + std::to_string(i), record);
  made.emplace_back(n, std::move(ctx));
  return *made.back().second;
}

void BM_Fork(benchmark::State& state) {
  ExecutionContext& ctx = context_of(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) {
    ExecutionContext child = ctx.fork();
    benchmark::DoNotOptimize(&child);
  }
}
BENCHMARK(BM_Fork)->Arg(10)->Arg(10000)->Arg(1000000);

// Lookups of names bound in the root, from the root itself (floor) and from the end of a chain of 1,000 forks,
// each fork having written a binding of its own.
constexpr std::size_t lookup_names = 10000;

struct ForkChain {
  std::vector<ExecutionContext> chain;
  std::vector<std::string> names;

  ForkChain() {
    chain.emplace_back(shared_store(), "bench");
    const ArtifactPtr record = stored_record(1);
    for (std::size_t i = 0; i < lookup_names; ++i) {
      names.push_back("n" + std::to_string(i));
      chain.back().bind(names.back(), record);
    }
    for (int i = 0; i < 1000; ++i) {
      chain.push_back(chain.back().fork());
      chain.back().bind("level" + std::to_string(i), record);
    }
  }
};

ForkChain& fork_chain() {
  static ForkChain c;
  return c;
}

void lookups(benchmark::State& state, const ExecutionContext& ctx) {
  const auto& names = fork_chain().names;
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(ctx.get_artifact(names[i]));
    i = (i + 7919) % names.size();
  }
}

void BM_LookupAfterForks_Floor(benchmark::State& state) { lookups(state, fork_chain().chain.front()); }
void BM_LookupAfterForks_Cairn(benchmark::State& state) { lookups(state, fork_chain().chain.back()); }
BENCHMARK(BM_LookupAfterForks_Floor);
BENCHMARK(BM_LookupAfterForks_Cairn);

// A 10,101-node input: 100 arrays of 20 objects of 4 members; 1,000 of the 2,000 "ref" members are references to
// artifacts whose values are strings of the same size.
struct ResolveInput {
  std::unique_ptr<ExecutionContext> ctx = std::make_unique<ExecutionContext>(shared_store(), "bench");
  json input = json::object();

  ResolveInput() {
    for (int i = 0; i < 1000; ++i) {
      ctx->bind("art" + std::to_string(i), stored_record("/tmp/art_" + std::to_string(i)));
    }
    int ref = 0;
    for (int k = 0; k < 100; ++k) {
      json arr = json::array();
      for (int j = 0; j < 20; ++j) {
        const bool is_ref = (j % 2) == 0;
        arr.push_back({{"id", k * 20 + j},
                       {"name", "item " + std::to_string(j)},
                       {"ref", is_ref ? "@art" + std::to_string(ref++) : std::string("plain text")},
                       {"flag", true}});
      }
      input["k" + std::to_string(k)] = std::move(arr);
    }
  }
};

ResolveInput& resolve_input() {
  static ResolveInput r;
  return r;
}

void BM_Resolve_Floor(benchmark::State& state) {
  const json& input = resolve_input().input;
  for (auto _ : state) {
    json copy = input;
    benchmark::DoNotOptimize(copy);
  }
}
void BM_Resolve_Cairn(benchmark::State& state) {
  const ResolveInput& r = resolve_input();
  for (auto _ : state) {
    json out = r.ctx->resolve(r.input);
    benchmark::DoNotOptimize(out);
  }
}
// The same with a depth limit above 1,000, where resolve builds the copy iteratively instead of copying and patching.
void BM_Resolve_Iterative(benchmark::State& state) {
  const ResolveInput& r = resolve_input();
  cairn::ResolveOptions options;
  options.max_depth = 100000;
  for (auto _ : state) {
    json out = r.ctx->resolve(r.input, options);
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(BM_Resolve_Floor);
BENCHMARK(BM_Resolve_Cairn);
BENCHMARK(BM_Resolve_Iterative);

// The catalog of 1,000 artifacts, against the same entries formatted from a list already in order.
ExecutionContext& catalog_context() {
  static ExecutionContext ctx = [] {
    ExecutionContext c(shared_store(), "bench");
    for (int i = 0; i < 1000; ++i) {
      c.add_artifact("artifact_" + std::to_string(i), ArtifactRecord::builder()
                                                           .type("data")
                                                           .description("Artifact number " + std::to_string(i))
                                                           .purpose("Benchmark input")
                                                           .value({{"index", i}, {"name", "x"}}));
    }
    return c;
  }();
  return ctx;
}

void BM_FormatCatalog_Floor(benchmark::State& state) {
  const auto list = catalog_context().list_artifacts();
  for (auto _ : state) {
    std::string out = fmt::format("Available Artifacts ({}):", list.size());
    for (const auto& a : list) {
      out.push_back('\n');
      out += cairn::format_catalog_entry(a.name, *a.record);
    }
    benchmark::DoNotOptimize(out);
  }
}
void BM_FormatCatalog_Cairn(benchmark::State& state) {
  const ExecutionContext& ctx = catalog_context();
  for (auto _ : state) {
    std::string out = cairn::format_artifacts_catalog(ctx);
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(BM_FormatCatalog_Floor);
BENCHMARK(BM_FormatCatalog_Cairn);

}  // namespace

BENCHMARK_MAIN();
