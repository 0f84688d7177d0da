// The C++ snippets of docs/api.md, each between `// [docs:<name>]` and `// [docs:end]` (check_snippets.cmake checks
// that the page shows exactly these lines). Snippets stand at column 0, as on the page.
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cairn/artifact/memory_store.hpp"
#include "catch.hpp"

namespace {

struct Log {
  std::string last;
  template <class... Args>
  void error(fmt::format_string<Args...> format, Args&&... args) {
    last = fmt::format(format, std::forward<Args>(args)...);
  }
};

// Stores `draft` over the version `seen`; a conflict retries once, any other error is logged.
void save(cairn::InMemoryArtifactStore& store, const cairn::ArtifactPtr& draft, const cairn::ArtifactPtr& seen,
          Log& log, int& retries) {
  auto retry = [&] { ++retries; };
  // [docs:errors]
  try {
    auto stored = store.store_if(*draft, seen->version());  // replaces only the version read
  } catch (const cairn::error& e) {
    if (e.code() == cairn::errc::conflict) return retry();
    log.error("cairn {}: {}", cairn::to_string(e.code()), e.what());
  }
  // [docs:end]
}

}  // namespace

TEST_CASE("docs/api.md: a conflict is told apart by its code") {
  cairn::InMemoryArtifactStore store;
  auto record = [](const char* value) {
    return cairn::ArtifactRecord::builder()
        .tenant_id("acme")
        .id("plan")
        .type(cairn::ArtifactType::document)
        .title("Plan")
        .value(value)
        .build();
  };
  auto v1 = store.store(*record("one"));
  CHECK(store.store(*record("two"))->version() == 2);  // v1 is stale
  Log log;
  int retries = 0;
  save(store, record("three"), v1, log, retries);
  CHECK(retries == 1);
  CHECK(log.last.empty());
}
