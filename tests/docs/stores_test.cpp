// The C++ snippets of docs/stores.md, each between `// [docs:<name>]` and `// [docs:end]` (check_snippets.cmake
// checks that the page shows exactly these lines). Snippets stand at column 0, as on the page; an #include line in
// one is a no-op here (the header is included above). The SQLite and PostgreSQL ones are compiled, not run (their
// file name and connection string are placeholders), when those backends are built.
#include <memory>
#include <string>

#include "cairn/store/open_store.hpp"
#include "cairn/testing/embedder.hpp"
#include "catch.hpp"
#if defined(CAIRN_HAS_SQLITE)
#include "cairn/store/sqlite_store.hpp"
#endif
#if defined(CAIRN_HAS_POSTGRES)
#include "cairn/store/postgres_store.hpp"
#endif

namespace {

using MyEmbedder = cairn::testing::WordHashEmbedder;

std::shared_ptr<cairn::ArtifactStore> open_from_arguments(int argc, char** argv) {
// [docs:open-store]
#include <cairn/store/open_store.hpp>
  auto store = cairn::open_store(argc > 1 ? argv[1] : "memory:");  // std::shared_ptr<cairn::ArtifactStore>
                                                                   // [docs:end]
  return store;
}

std::shared_ptr<cairn::ArtifactStore> open_with_embedder(const std::string& url) {
  // [docs:embedder]
  cairn::OpenStoreOptions options;
  options.embedder = std::make_shared<MyEmbedder>();
  auto store = cairn::open_store(url, options);
  // [docs:end]
  return store;
}

}  // namespace

TEST_CASE("docs/stores.md: open_store from the command line, with an embedder") {
  char program[] = "host";
  char url[] = "memory:";
  char* argv[] = {program, url, nullptr};
  CHECK(open_from_arguments(1, argv) != nullptr);
  CHECK(open_from_arguments(2, argv) != nullptr);
  auto store = open_with_embedder("memory:");
  REQUIRE(store != nullptr);
  CHECK(store
            ->store(*cairn::ArtifactRecord::builder()
                         .tenant_id("acme")
                         .id("n")
                         .type(cairn::ArtifactType::document)
                         .title("Trip")
                         .value("train to Paris")
                         .build())
            ->version() == 1);
  cairn::SearchQuery query;
  query.text = "Paris train";
  query.mode = cairn::SearchMode::similarity;
  CHECK(store->search("acme", query).hits.size() == 1);
}

namespace docs_stores {

#if defined(CAIRN_HAS_SQLITE)
void sqlite_options() {
  // [docs:sqlite-options]
  cairn::SqliteOptions options;                                   // busy_timeout_ms = 10000, max_connections = 8,
  options.synchronous = cairn::SqliteOptions::Synchronous::full;  // (default) ; json_limits = {64 MiB, depth 256}
  cairn::SqliteArtifactStore store("agents.db", options);
  // [docs:end]
}
#endif

#if defined(CAIRN_HAS_POSTGRES)
void postgres_options() {
  // [docs:postgres-options]
  cairn::PostgresOptions options;  // pool_size = 4, reconnect_timeout_ms = 15000, json_limits,
                                   // statement_timeout_ms = 30000, clock, ids, pool_wait_ms = 30000,
                                   // embedder, search_changes_kept = 10000, record_cache_bytes = 64 MiB,
                                   // observer, fold_words_in_background = true
  cairn::PostgresArtifactStore store("host=db.internal dbname=agents user=cairn", options);
  // [docs:end]
}
#endif

}  // namespace docs_stores
