// durable_store — an agent's artifacts outlive the agent: store, "crash", reopen, carry on.
//
// Usage: durable_store [store-url]   (default: a SQLite file in the temp folder; try memory:, sqlite:agents.db or
//                                     postgres:host=127.0.0.1 dbname=agents)
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>

#include <cairn/cairn.hpp>
#include <cairn/store/open_store.hpp>

int main(int argc, char** argv) {
  using cairn::ArtifactRecord;

  const bool own_file = argc < 2;
  const std::string file = (std::filesystem::temp_directory_path() / "cairn-durable-store-example.db").string();
  if (own_file) std::filesystem::remove(file);
  const std::string url = own_file ? "sqlite:" + file : argv[1];

  try {
    std::string id;
    {
      // 1. The first run of an agent stores a plan, then revises it.
      auto store = cairn::open_store(url);
      auto plan = store->store(*ArtifactRecord::builder()
                                    .tenant_id("acme")
                                    .type(cairn::ArtifactType::document)
                                    .title("Migration plan")
                                    .value({{"steps", {"export", "transform"}}, {"owner", "planner"}})
                                    .created_by("planner")
                                    .build());
      (void)store->store(
          *plan->revise().value({{"steps", {"export", "transform", "import"}}, {"owner", "planner"}}).build());
      id = plan->id();
      std::cout << "run 1: stored '" << id << "' versions 1 and 2 in " << url.substr(0, url.find(':') + 1) << "\n";
    }  // the store is gone, as if the process had crashed

    // 2. The next run opens the same URL and finds everything as it was.
    auto store = cairn::open_store(url);
    auto latest = store->fetch(id, "acme");
    if (!latest) {
      std::cout << "run 2: the plan is gone (memory: keeps nothing between runs)\n";
      return 0;
    }
    std::cout << "run 2: found version " << latest->version() << " of " << store->versions(id, "acme").size()
              << ", steps " << latest->value()["steps"].dump() << "\n";
    std::cout << "run 2: version 1 still had steps " << store->fetch(id, "acme", 1)->value()["steps"].dump() << "\n";
    store->remove(id, "acme");
  } catch (const cairn::error& e) {
    std::cerr << "durable_store: " << e.what() << "\n";
    return 1;
  }
  if (own_file) {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(file + suffix);
  }
  return 0;
}
