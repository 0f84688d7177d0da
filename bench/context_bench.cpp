// ExecutionContext: fork() must stay flat whatever the context holds; a lookup after a chain of 1,000 forks must
// cost what it costs in an unforked context; resolve() must stay close to a plain deep copy of the same JSON; and
// the catalog of 1,000 artifacts is timed against the same text formatted from a ready-made list. Schema validation:
// execute() of a tool with a realistic input schema against the same tool with the default schema, and the compiled
// schema alone against the same rules written by hand.
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
#include "cairn/context/schema.hpp"
#include "cairn/context/tool.hpp"

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

// Schema validation. An input schema of 8 properties with types, an enum, bounds, a nested object and an array of
// objects, and inputs that satisfy it (the usual case: a valid call).
const json& fetch_schema() {
  static const json s = json::parse(R"({
    "type": "object",
    "required": ["url", "method"],
    "additionalProperties": false,
    "properties": {
      "url": {"type": "string", "minLength": 1},
      "port": {"type": "integer", "minimum": 1, "maximum": 65535},
      "method": {"enum": ["GET", "POST", "PUT", "DELETE"]},
      "timeout_ms": {"type": "number", "minimum": 0},
      "follow_redirects": {"type": "boolean"},
      "headers": {"type": "array", "items": {"type": "object", "required": ["name"],
                  "properties": {"name": {"type": "string"}, "value": {"type": "string"}}}},
      "query": {"type": "object", "additionalProperties": {"type": "string"}},
      "auth": {"type": "object", "required": ["kind"],
               "properties": {"kind": {"enum": ["basic", "bearer"]}, "token": {"type": "string"}}}
    }
  })");
  return s;
}

const json& fetch_inputs() {
  static const json in = json::parse(R"({
    "url": "https://example.com/search", "port": 443, "method": "GET", "timeout_ms": 2500.0,
    "follow_redirects": true,
    "headers": [{"name": "Accept", "value": "text/html"}, {"name": "User-Agent", "value": "cairn"}, {"name": "DNT"}],
    "query": {"q": "json schema", "page": "2"},
    "auth": {"kind": "bearer", "token": "abc"}
  })");
  return in;
}

// The same rules written by hand, as a host would without a validator.
bool hand_check(const json& in) {
  static const char* const known[] = {"url",     "port",  "method", "timeout_ms", "follow_redirects",
                                      "headers", "query", "auth"};
  if (!in.is_object()) return false;
  for (const auto& [key, value] : in.items()) {
    bool ok = false;
    for (const char* k : known) ok = ok || key == k;
    if (!ok) return false;
  }
  const auto url = in.find("url");
  if (url == in.end() || !url->is_string() || url->get_ref<const std::string&>().empty()) return false;
  const auto method = in.find("method");
  if (method == in.end() || !method->is_string()) return false;
  const std::string& m = method->get_ref<const std::string&>();
  if (m != "GET" && m != "POST" && m != "PUT" && m != "DELETE") return false;
  if (const auto p = in.find("port"); p != in.end()) {
    if (!p->is_number_integer() || p->get<long long>() < 1 || p->get<long long>() > 65535) return false;
  }
  if (const auto t = in.find("timeout_ms"); t != in.end() && (!t->is_number() || t->get<double>() < 0)) return false;
  if (const auto f = in.find("follow_redirects"); f != in.end() && !f->is_boolean()) return false;
  if (const auto h = in.find("headers"); h != in.end()) {
    if (!h->is_array()) return false;
    for (const auto& e : *h) {
      if (!e.is_object()) return false;
      const auto n = e.find("name");
      if (n == e.end() || !n->is_string()) return false;
      if (const auto v = e.find("value"); v != e.end() && !v->is_string()) return false;
    }
  }
  if (const auto q = in.find("query"); q != in.end()) {
    if (!q->is_object()) return false;
    for (const auto& [k, v] : q->items()) {
      if (!v.is_string()) return false;
    }
  }
  if (const auto a = in.find("auth"); a != in.end()) {
    if (!a->is_object()) return false;
    const auto kind = a->find("kind");
    if (kind == a->end() || !kind->is_string()) return false;
    if (*kind != "basic" && *kind != "bearer") return false;
    if (const auto tok = a->find("token"); tok != a->end() && !tok->is_string()) return false;
  }
  return true;
}

void BM_SchemaValidate_Floor(benchmark::State& state) {
  const json& in = fetch_inputs();
  for (auto _ : state) benchmark::DoNotOptimize(hand_check(in));
}
void BM_SchemaValidate_Cairn(benchmark::State& state) {
  const cairn::CompiledSchema schema(fetch_schema(), "bench");
  const json& in = fetch_inputs();
  if (!schema.validate(in).empty() || !hand_check(in)) state.SkipWithError("the bench inputs are not valid");
  for (auto _ : state) benchmark::DoNotOptimize(schema.validate(in));
}
BENCHMARK(BM_SchemaValidate_Floor);
BENCHMARK(BM_SchemaValidate_Cairn);

// execute() of one call (no outputs, so the store does not grow): the tool with the default schema
// {"type":"object"} against the same tool with the schema above.
void execute_fetch(benchmark::State& state, json schema) {
  cairn::ToolRegistry registry;
  registry.add(cairn::Tool{"fetch_page", "fetches a page", std::move(schema),
                           [](const json& in) { return cairn::ToolResult::ok(in.size()); }});
  ExecutionContext ctx(shared_store(), "bench");
  const cairn::ToolCall call{"fetch_page", fetch_inputs(), {}};
  for (auto _ : state) {
    auto result = cairn::execute(call, ctx, registry);
    benchmark::DoNotOptimize(result);
  }
}
void BM_ExecuteSchema_Floor(benchmark::State& state) { execute_fetch(state, json{{"type", "object"}}); }
void BM_ExecuteSchema_Cairn(benchmark::State& state) { execute_fetch(state, fetch_schema()); }
BENCHMARK(BM_ExecuteSchema_Floor);
BENCHMARK(BM_ExecuteSchema_Cairn);

}  // namespace

BENCHMARK_MAIN();
