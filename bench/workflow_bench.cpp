// Workflow state against its floors, in a temporary folder on the real disk:
// - AdvanceSave: WorkflowMachine::advance + StateFile::save (flock, temp file, fsync, rename, fsync of the folder)
//   against writing the same bytes by hand with write + fsync + rename.
// - UpdateAdvance: the whole load-modify-save of StateFile::update (what every workflow_advance tool call costs),
//   against the same floor.
// - RegisterArtefacts: register_artefacts with 1,000 paths against realpath + stat + a prefix check + a hash set.
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unordered_set>
#include <vector>

#include <benchmark/benchmark.h>

#include "cairn/workflow/state_file.hpp"

namespace {

namespace fs = std::filesystem;

constexpr int kCycle = 200;  // advances before the state is reset, so the file stays the same size on average

class TempDir {
 public:
  TempDir() {
    std::string p = (fs::temp_directory_path() / "cairn-wf-bench-XXXXXX").string();
    if (!::mkdtemp(p.data())) std::abort();
    path_ = p;
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

cairn::WorkflowTemplate ralph_template() {
  return cairn::WorkflowTemplate::parse(
      R"({"name": "bench", "steps": [{"id": "r", "type": "ralph", "n": 10000, "instructions": "Again."}]})");
}

std::string output_text(int i) { return "iteration " + std::to_string(i) + ": refined the draft and fixed 3 issues"; }

// The bytes StateFile writes for the machine after each of the first kCycle advances.
std::vector<std::string> state_bytes(const fs::path& root) {
  cairn::WorkflowMachine m(ralph_template(), root);
  m.start("benchmark");
  std::vector<std::string> out;
  for (int i = 0; i < kCycle; ++i) {
    m.advance(output_text(i));
    nlohmann::json j = m.to_json();
    j["format_version"] = cairn::StateFile::format_version;
    out.push_back(j.dump(2) + "\n");
  }
  return out;
}

void BM_AdvanceSave_Floor(benchmark::State& state) {
  TempDir dir;
  const auto bytes = state_bytes(dir.path());
  const std::string tmp = (dir.path() / "state.tmp").string();
  const std::string dst = (dir.path() / "state.json").string();
  std::size_t i = 0;
  for (auto _ : state) {
    const std::string& b = bytes[i++ % bytes.size()];
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ::write(fd, b.data(), b.size()) != static_cast<ssize_t>(b.size()) || ::fsync(fd) != 0) std::abort();
    ::close(fd);
    if (::rename(tmp.c_str(), dst.c_str()) != 0) std::abort();
  }
}

void BM_AdvanceSave_Cairn(benchmark::State& state) {
  TempDir dir;
  const cairn::StateFile file(dir.path());
  cairn::WorkflowMachine start(ralph_template(), dir.path());
  start.start("benchmark");
  cairn::WorkflowMachine m = start;
  int i = 0;
  for (auto _ : state) {
    m.advance(output_text(i));
    file.save(m);
    if (++i % kCycle == 0) {
      state.PauseTiming();
      m = start;
      i = 0;
      state.ResumeTiming();
    }
  }
}

void BM_UpdateAdvance_Floor(benchmark::State& state) { BM_AdvanceSave_Floor(state); }

void BM_UpdateAdvance_Cairn(benchmark::State& state) {
  TempDir dir;
  const cairn::StateFile file(dir.path());
  cairn::WorkflowMachine start(ralph_template(), dir.path());
  start.start("benchmark");
  file.save(start);
  int i = 0;
  for (auto _ : state) {
    file.update([&](cairn::WorkflowMachine& m) { m.advance(output_text(i)); });
    if (++i % kCycle == 0) {
      state.PauseTiming();
      file.save(start);
      i = 0;
      state.ResumeTiming();
    }
  }
}

struct ArtefactFiles {
  TempDir dir;
  std::vector<std::string> paths;  // relative, as an agent would pass them
  ArtefactFiles() {
    for (int i = 0; i < 1000; ++i) {
      const std::string rel = "out/part-" + std::to_string(i / 100) + "/file-" + std::to_string(i) + ".txt";
      fs::create_directories((dir.path() / rel).parent_path());
      std::ofstream(dir.path() / rel) << "content " << i;
      paths.push_back(rel);
    }
  }
};

void BM_RegisterArtefacts_Floor(benchmark::State& state) {
  ArtefactFiles files;
  const std::string root = fs::canonical(files.dir.path()).string();
  for (auto _ : state) {
    std::unordered_set<std::string> seen;
    std::vector<std::string> registered;
    char buf[PATH_MAX];
    for (const auto& rel : files.paths) {
      const std::string p = root + "/" + rel;
      struct stat st {};
      if (!::realpath(p.c_str(), buf) || ::stat(buf, &st) != 0 || !S_ISREG(st.st_mode)) continue;
      const std::string real = buf;
      if (real.compare(0, root.size() + 1, root + "/") != 0) continue;
      if (seen.insert(real).second) registered.push_back(real);
    }
    benchmark::DoNotOptimize(registered.data());
  }
  state.SetItemsProcessed(state.iterations() * 1000);
}

void BM_RegisterArtefacts_Cairn(benchmark::State& state) {
  ArtefactFiles files;
  cairn::WorkflowMachine start(ralph_template(), files.dir.path());
  start.start();
  for (auto _ : state) {
    state.PauseTiming();
    cairn::WorkflowMachine m = start;
    state.ResumeTiming();
    auto r = m.register_artifacts(files.paths);
    if (r.registered.size() != 1000) std::abort();
    benchmark::DoNotOptimize(r.registered.data());
  }
  state.SetItemsProcessed(state.iterations() * 1000);
}

}  // namespace

BENCHMARK(BM_AdvanceSave_Floor)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_AdvanceSave_Cairn)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_UpdateAdvance_Floor)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_UpdateAdvance_Cairn)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RegisterArtefacts_Floor)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RegisterArtefacts_Cairn)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
