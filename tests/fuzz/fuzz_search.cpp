// Fuzzes search's query text (a model or an MCP client writes it): the parser and the default search must never
// crash or hang; a query that parses finds only records that hold every group's term and no excluded one, best
// first, at most `limit`; a query that does not parse fails with invalid_argument or limit_exceeded only.
#include <cstdint>
#include <string>
#include <string_view>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/artifact/search.hpp"
#include "cairn/artifact/search/words.hpp"
#include "fuzz.hpp"

namespace {
const cairn::InMemoryArtifactStore& store() {
  static const auto* s = [] {
    auto* st = new cairn::InMemoryArtifactStore();
    const char* values[] = {"alpha beta gamma", "beta beta delta", "Grüße aus Köln", "a-b c_d \"quoted\"", "",
                            "OR or -minus"};
    int i = 0;
    for (const char* v : values) {
      (void)st->store(*cairn::ArtifactRecord::builder()
                           .tenant_id("t")
                           .id("r" + std::to_string(i++))
                           .type("document")
                           .title("title alpha")
                           .value(nlohmann::json{{"text", v}, {"n", i}})
                           .build());
    }
    return st;
  }();
  return *s;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  cairn::SearchQuery q;
  q.text = std::string(text);
  q.limit = 1 + size % 4;
  cairn::detail::WordQuery parsed;
  try {
    parsed = cairn::detail::parse_word_query(text);
  } catch (const cairn::invalid_argument&) {
    return 0;
  } catch (const cairn::limit_exceeded&) {
    return 0;
  }
  if (text.empty()) return 0;
  cairn::SearchPage page;
  try {
    page = store().search("t", q);
  } catch (const cairn::invalid_argument&) {
    return 0;  // a query of punctuation only: no words to find
  }
  CAIRN_FUZZ_CHECK(page.hits.size() <= q.limit);
  for (std::size_t i = 0; i < page.hits.size(); ++i) {
    CAIRN_FUZZ_CHECK(cairn::detail::matches_words(cairn::detail::record_words(*page.hits[i].record), parsed));
    if (i > 0) CAIRN_FUZZ_CHECK(page.hits[i - 1].score >= page.hits[i].score);
  }
  return 0;
}
