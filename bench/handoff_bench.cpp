// expand_references against its floor, at 100 KB, 1 MB and 10 MB of text with 1,000 references per MB.
//
// - Expand: cairn's expand_references (fence-aware scanner, any quote style, store lookups per tenant) against
//   what a host would write by hand: find `<artifact id="`, find `" />`, look the id up in an unordered_map, append.
// - Scan: finding the references without replacing them, against a plain copy of the same text.
// - Hostile: text made only of unterminated `<artifact id="` tags, against a plain copy: the scanner stays linear
//   on input built to make a backtracking parser quadratic.
// Each is run at three sizes; bytes_per_second staying flat across sizes is the linearity. scripts/bench prints
// the ratios.
#include <cstddef>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <benchmark/benchmark.h>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/handoff/reveal.hpp"

namespace {

constexpr std::size_t kMiB = 1024 * 1024;
constexpr int kDistinctArtifacts = 50;
const std::string kTenant = "bench";

std::string id_of(int i) { return "draft_" + std::to_string(1000 + i); }

std::string content_of(int i) { return "Artifact " + std::to_string(i) + ": " + std::string(180, 'c') + "\n"; }

/// `bytes` of prose with one reference per ~1 KB (1,000 per MB), in the canonical self-closing form.
const std::string& text_of_size(std::size_t bytes) {
  static std::unordered_map<std::size_t, std::string> cache;
  auto& text = cache[bytes];
  if (!text.empty()) return text;
  const std::size_t references = bytes * 1000 / kMiB;
  const std::size_t gap = bytes / (references + 1);
  const std::string line = "The quick brown fox jumps over the lazy dog; a < b & c > d in plain text.\n";
  text.reserve(bytes + 128);
  for (std::size_t r = 0; r < references; ++r) {
    const std::size_t target = (r + 1) * gap;
    while (text.size() + line.size() < target) text += line;
    text += cairn::render_reference(id_of(static_cast<int>(r % kDistinctArtifacts)), "summary of the artifact");
    text += '\n';
  }
  while (text.size() + line.size() <= bytes) text += line;
  return text;
}

const std::string& hostile_of_size(std::size_t bytes) {
  static std::unordered_map<std::size_t, std::string> cache;
  auto& text = cache[bytes];
  if (text.empty()) {
    while (text.size() < bytes) text += "<artifact id=\"";
  }
  return text;
}

std::shared_ptr<cairn::InMemoryArtifactStore> make_store() {
  auto store = std::make_shared<cairn::InMemoryArtifactStore>();
  for (int i = 0; i < kDistinctArtifacts; ++i) {
    (void)store->store(*cairn::ArtifactRecord::builder()
                            .tenant_id(kTenant)
                            .id(id_of(i))
                            .type(cairn::ArtifactType::document)
                            .title("Artifact " + std::to_string(i))
                            .description("summary of the artifact")
                            .value(content_of(i))
                            .build());
  }
  return store;
}

// The floor: the hand-written replacement of the canonical form only, from a map the host already holds.
std::string floor_expand(const std::string& text, const std::unordered_map<std::string, std::string>& contents) {
  static const std::string open = "<artifact id=\"";
  std::string out;
  out.reserve(text.size());
  std::size_t copied = 0;
  std::size_t at = text.find(open);
  while (at != std::string::npos) {
    const std::size_t id_start = at + open.size();
    const std::size_t quote = text.find('"', id_start);
    const std::size_t close = quote == std::string::npos ? quote : text.find("/>", quote);
    if (close == std::string::npos) break;
    const auto it = contents.find(text.substr(id_start, quote - id_start));
    if (it != contents.end()) {
      out.append(text, copied, at - copied);
      out += it->second;
      copied = close + 2;
    }
    at = text.find(open, close);
  }
  out.append(text, copied, std::string::npos);
  return out;
}

void set_throughput(benchmark::State& state, std::size_t bytes) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
}

void BM_Expand_Floor(benchmark::State& state) {
  const std::string& text = text_of_size(static_cast<std::size_t>(state.range(0)));
  std::unordered_map<std::string, std::string> contents;
  for (int i = 0; i < kDistinctArtifacts; ++i) contents[id_of(i)] = content_of(i);
  for (auto _ : state) benchmark::DoNotOptimize(floor_expand(text, contents));
  set_throughput(state, text.size());
}

void BM_Expand_Cairn(benchmark::State& state) {
  const std::string& text = text_of_size(static_cast<std::size_t>(state.range(0)));
  const auto store = make_store();
  std::size_t resolved = 0;
  for (auto _ : state) {
    auto r = cairn::expand_references(text, *store, kTenant);
    resolved = r.resolved.size();
    benchmark::DoNotOptimize(r.text.data());
  }
  if (resolved != kDistinctArtifacts) state.SkipWithError("not every reference was resolved");
  set_throughput(state, text.size());
  state.counters["references"] = static_cast<double>(cairn::find_references(text).size());
}

void BM_Scan_Floor(benchmark::State& state) {
  const std::string& text = text_of_size(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) {
    std::string copy = text;
    benchmark::DoNotOptimize(copy.data());
  }
  set_throughput(state, text.size());
}

void BM_Scan_Cairn(benchmark::State& state) {
  const std::string& text = text_of_size(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) {
    std::size_t found = 0;
    cairn::scan_references(text, [&found](const cairn::ArtifactReference&) { ++found; });
    benchmark::DoNotOptimize(found);
  }
  set_throughput(state, text.size());
}

void BM_Hostile_Floor(benchmark::State& state) {
  const std::string& text = hostile_of_size(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) {
    std::string copy = text;
    benchmark::DoNotOptimize(copy.data());
  }
  set_throughput(state, text.size());
}

void BM_Hostile_Cairn(benchmark::State& state) {
  const std::string& text = hostile_of_size(static_cast<std::size_t>(state.range(0)));
  const auto store = make_store();
  for (auto _ : state) benchmark::DoNotOptimize(cairn::expand_references(text, *store, kTenant).text.data());
  set_throughput(state, text.size());
}

#define CAIRN_SIZES Arg(100 * 1024)->Arg(kMiB)->Arg(10 * kMiB)->Unit(benchmark::kMicrosecond)

}  // namespace

BENCHMARK(BM_Expand_Floor)->CAIRN_SIZES;
BENCHMARK(BM_Expand_Cairn)->CAIRN_SIZES;
BENCHMARK(BM_Scan_Floor)->CAIRN_SIZES;
BENCHMARK(BM_Scan_Cairn)->CAIRN_SIZES;
BENCHMARK(BM_Hostile_Floor)->CAIRN_SIZES;
BENCHMARK(BM_Hostile_Cairn)->CAIRN_SIZES;

BENCHMARK_MAIN();
