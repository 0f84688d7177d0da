// search — agents produce artifacts; a later agent finds them by meaning and by words, narrowed by filters.
//
// Three agents (each its own ExecutionContext on one shared store and tenant) run tools whose results the context
// stores as artifacts: a researcher's market notes, an analyst's datasets (with region and quarter metadata), a
// writer's summary. A fourth agent, started later, knows none of their ids or names; it searches:
//   - by meaning: "revenue forecasting" finds the analyst's "Revenue forecast" though neither word is in it as
//     written ("forecasting" is not "forecast"), so a search by words alone finds nothing;
//   - by words with filters: datasets of EMEA or APAC whose text holds "churn";
//   - and it binds what it found and shows its model the catalog ranked by relevance to its task.
//
// The embedder below is a STAND-IN for a real embedding model (a host would call e.g. all-MiniLM-L6-v2 here;
// cairn never calls a model itself). It hashes character trigrams of each word into 256 dimensions: deterministic,
// no downloads, and close enough to meaning for word forms ("forecast" / "forecasting") to meet.
#include <cctype>
#include <cstdint>
#include <iostream>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/artifact/search.hpp"
#include "cairn/cairn.hpp"

namespace {

using nlohmann::json;

// STAND-IN for the host's embedding model: character trigrams of " word " (ASCII letters and digits, lowercased)
// hashed (FNV-1a) into 255 dimensions, and a constant 256th so that no vector is all zeros.
class TrigramEmbedder final : public cairn::Embedder {
 public:
  std::string model() const override { return "example-trigram-256"; }
  std::size_t dimension() const override { return 256; }
  std::vector<std::vector<float>> embed(const std::vector<std::string>& texts) override {
    std::vector<std::vector<float>> out;
    for (const auto& text : texts) {
      std::vector<float> v(256, 0.0f);
      v[255] = 0.01f;  // never all zeros
      std::string word;
      for (std::size_t i = 0; i <= text.size(); ++i) {
        const char c = i < text.size() ? text[i] : ' ';
        if (std::isalnum(static_cast<unsigned char>(c))) {
          word.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
          continue;
        }
        if (word.empty()) continue;
        const std::string w = " " + word + " ";
        for (std::size_t k = 0; k + 3 <= w.size(); ++k) {
          std::uint32_t h = 2166136261u;
          for (std::size_t j = k; j < k + 3; ++j) h = (h ^ static_cast<unsigned char>(w[j])) * 16777619u;
          v[h % 255] += 1.0f;
        }
        word.clear();
      }
      out.push_back(std::move(v));
    }
    return out;
  }
};

// A tool that "produces" what its inputs describe: the result is the text, the metadata the labels.
cairn::ToolResult produce(const json& in) {
  return cairn::ToolResult::ok(in.at("text"), in.value("labels", json::object()));
}

cairn::ExecutionResult run(cairn::ExecutionContext& agent, const cairn::ToolRegistry& tools, const std::string& name,
                           const char* type, const std::string& title, const std::string& text, json labels = {}) {
  cairn::ToolCall call;
  call.tool = "produce";
  call.inputs = {{"text", text}, {"labels", labels.is_null() ? json::object() : labels}};
  call.outputs.push_back({name, cairn::ArtifactType{type}, title, ""});
  auto r = cairn::execute(call, agent, tools);
  if (!r.success) throw std::runtime_error("tool failed: " + r.error);
  return r;
}

std::vector<std::string> titles(const cairn::SearchPage& page) {
  std::vector<std::string> out;
  for (const auto& h : page.hits) out.push_back(h.record->description());
  return out;
}

void show(const std::string& what, const cairn::SearchPage& page) {
  std::cout << what << ":\n";
  for (const auto& h : page.hits) {
    std::cout << fmt::format("  {:.4f}  {} ({})", h.score, h.record->description(), h.record->type().str());
    if (!h.matched.words.empty()) std::cout << fmt::format("  words: {}", fmt::join(h.matched.words, ","));
    if (h.matched.similarity) std::cout << fmt::format("  similarity: {:.3f}", *h.matched.similarity);
    std::cout << "\n";
  }
  if (page.hits.empty()) std::cout << "  (nothing)\n";
}

}  // namespace

int main() {
  cairn::InMemoryStoreOptions options;
  options.embedder = std::make_shared<TrigramEmbedder>();  // every artifact is embedded as it is stored
  auto store = std::make_shared<cairn::InMemoryArtifactStore>(options);
  cairn::ToolRegistry tools;
  tools.add({"produce", "Produces an artifact from a text", json::parse(R"({"type": "object", "required": ["text"],
                             "properties": {"text": {"type": "string"}, "labels": {"type": "object"}}})"),
             produce});

  // The producing agents: each has its own context (its own names), all on one store and tenant.
  cairn::ExecutionContext researcher(store, "acme");
  cairn::ExecutionContext analyst(store, "acme");
  cairn::ExecutionContext writer(store, "acme");
  run(researcher, tools, "notes", "document", "Market notes",
      "Competitors cut prices in EMEA; customers ask for annual plans.");
  run(analyst, tools, "forecast", "dataset", "Revenue forecast",
      "Quarterly revenue forecast by region: EMEA up 4%, APAC up 9%.", {{"region", "emea"}, {"quarter", 3}});
  run(analyst, tools, "churn_emea", "dataset", "Customer churn EMEA", "Monthly churn fell to 2.1% after the price cut.",
      {{"region", "emea"}, {"quarter", 3}});
  run(analyst, tools, "churn_us", "dataset", "Customer churn US", "Monthly churn rose to 3.4%.",
      {{"region", "us"}, {"quarter", 3}});
  run(writer, tools, "summary", "document", "Board summary", "Growth is strongest in APAC; churn is under control.");

  // A later agent: it knows none of those ids or names.
  cairn::ExecutionContext reviewer(store, "acme");

  cairn::SearchQuery by_words;
  by_words.text = "revenue forecasting";
  by_words.mode = cairn::SearchMode::text;
  const auto words_page = store->search("acme", by_words);
  show("by words, 'revenue forecasting'", words_page);  // "forecasting" is in nothing: no hit

  cairn::SearchQuery by_meaning;
  by_meaning.text = "revenue forecasting";
  by_meaning.mode = cairn::SearchMode::similarity;  // the store embeds the query text with its embedder
  by_meaning.limit = 3;
  const auto meaning_page = store->search("acme", by_meaning);
  show("by meaning, 'revenue forecasting'", meaning_page);

  cairn::SearchQuery filtered;
  filtered.text = "churn";
  filtered.mode = cairn::SearchMode::text;
  filtered.filter.type = cairn::ArtifactType::dataset;
  filtered.filter.metadata.push_back({"/region", cairn::FieldOp::in, json::array({"emea", "apac"})});
  filtered.filter.metadata.push_back({"/quarter", cairn::FieldOp::ge, 3});
  const auto filtered_page = store->search("acme", filtered);
  show("by words with filters, 'churn' in datasets of EMEA or APAC", filtered_page);

  // The reviewer binds what it found and shows its model the catalog ranked for its task, within a budget.
  std::set<std::string> bound;
  for (const auto* page : {&meaning_page, &filtered_page}) {
    for (const auto& h : page->hits) {
      if (bound.insert(h.record->id()).second) reviewer.bind(fmt::format("found_{}", bound.size()), h.record);
    }
  }
  cairn::CatalogOptions catalog;
  catalog.relevant_to = "Check the revenue forecast against churn";
  catalog.max_chars = 320;  // room for two entries: the less relevant are left out
  std::cout << "\nthe reviewer's catalog, most relevant to its task first:\n"
            << cairn::format_artifacts_catalog(reviewer, catalog) << "\n\n";

  const bool ok = words_page.hits.empty() && !meaning_page.hits.empty() &&
                  titles(meaning_page).front() == "Revenue forecast" &&
                  titles(filtered_page) == std::vector<std::string>{"Customer churn EMEA"};
  if (!ok) {
    std::cerr << "search example: unexpected results\n";
    return 1;
  }
  std::cout << "search example: found 'Revenue forecast' by meaning (not by words) and 'Customer churn EMEA' by words "
               "with filters\n";
  return 0;
}
