// durable_search — the README's second taste: a SQLite store with an embedder, a run that stops and resumes where
// it was, and search by meaning and by words over what the run stored.
//
// Usage: durable_search [store-url]   (default: a fresh SQLite file in the temp folder; postgres:... works too)
//
// The embedder is the testing kit's WordHashEmbedder, a deterministic stand-in for a real embedding model (texts
// that share words point the same way); a host passes its own cairn::Embedder.
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <string>

#include <cairn/cairn.hpp>
#include <cairn/run/run.hpp>
#include <cairn/store/open_store.hpp>
#include <cairn/testing/embedder.hpp>

int main(int argc, char** argv) {
  const bool own_file = argc < 2;
  const std::string file = (std::filesystem::temp_directory_path() / "cairn-durable-search-example.db").string();
  if (own_file) std::filesystem::remove(file);
  const std::string url = own_file ? "sqlite:" + file : argv[1];
  const std::string trip = "trip-" + std::to_string(::getpid());  // a new run each time on a shared database

  try {
    {
      // The first process: the run binds two artifacts and a message, then stops (a crash would do the same).
      cairn::OpenStoreOptions options;
      options.embedder = std::make_shared<cairn::testing::WordHashEmbedder>();
      auto store = cairn::open_store(url, options);
      cairn::Run run(cairn::open_run_journal(url), "acme", trip);
      cairn::ExecutionContext ctx(store, "acme");
      ctx.attach(run);
      ctx.add_message(cairn::Role::user, "Find me a train to Paris on Friday");
      ctx.add_artifact("itinerary", cairn::ArtifactRecord::builder()
                                        .type(cairn::ArtifactType::document)
                                        .title("Itinerary")
                                        .value("Train from Lyon to Paris, Friday 09:12, seat 42"));
      ctx.add_artifact("budget", cairn::ArtifactRecord::builder()
                                     .type(cairn::ArtifactType::dataset)
                                     .title("Travel budget")
                                     .value({{"limit_eur", 120}}));
    }

    // [docs:readme-taste]
    cairn::OpenStoreOptions options;
    options.embedder = std::make_shared<cairn::testing::WordHashEmbedder>();  // or your model's cairn::Embedder
    auto store = cairn::open_store(url, options);  // sqlite:agents.db: every version embedded as it is stored
    cairn::Run run(cairn::open_run_journal(url), "acme", trip);  // the same run: resumed where it stopped
    cairn::ExecutionContext ctx(store, "acme");
    ctx.attach(run);                                 // its names and messages are back
    auto itinerary = ctx.get_artifact("itinerary");  // bound by the first process

    cairn::SearchQuery query;
    query.text = "train to paris";
    query.mode = cairn::SearchMode::hybrid;    // words (BM25) and meaning (the embedder), fused
    auto page = store->search("acme", query);  // page.hits[0].record is the best match
    // [docs:end]

    if (!itinerary || ctx.messages().size() != 1 || page.hits.empty() ||
        page.hits.front().record->title() != "Itinerary") {
      std::cerr << "durable_search: the resumed run or the search did not find what the first process stored\n";
      return 1;
    }
    std::cout << "durable_search: resumed run '" << trip << "' with " << ctx.messages().size()
              << " message and 'itinerary' bound; search 'train to paris' found '" << page.hits.front().record->title()
              << "' first (" << page.hits.size() << " hits)\n";
    return 0;
  } catch (const cairn::error& e) {
    std::cerr << "durable_search: " << cairn::to_string(e.code()) << ": " << e.what() << "\n";
    return 1;
  }
}
