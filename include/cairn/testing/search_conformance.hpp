// cairn::testing — the search behaviour every ArtifactStore must show (words, similarity, hybrid, filters in a
// search, recall, pages of a search), as checks any test framework can run. store_conformance_checks()
// (cairn/testing/store_conformance.hpp) runs these after its own; a host may also run them alone:
//
//     for (const auto& check : cairn::testing::search_conformance_checks()) check.run(*make_my_store());
//
// Checks use tenants with random names, so they also run against a durable store that already holds data.
//
// This is the header to include. The checks live in cairn/testing/search_conformance/, one file per job:
// finding.hpp (words, filters, pages), visibility.hpp (tenants, versions, removals, concurrent writers),
// refusals.hpp (bad queries, contradictory modes, oversized filters), similarity.hpp (given vectors, exact and
// default similarity, recall, vector lengths), indexes.hpp (indexes against the scan); support.hpp holds what they
// share. A failing check names its file there and the line.
#pragma once

#include <vector>

#include "cairn/testing/conformance_check.hpp"
#include "cairn/testing/search_conformance/finding.hpp"
#include "cairn/testing/search_conformance/indexes.hpp"
#include "cairn/testing/search_conformance/refusals.hpp"
#include "cairn/testing/search_conformance/similarity.hpp"
#include "cairn/testing/search_conformance/visibility.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace testing {

/// The search checks, in a fixed order (store_conformance_checks() ends with them).
[[nodiscard]] inline std::vector<ConformanceCheck> search_conformance_checks() {
  namespace check = detail::search_checks;
  return {
      // ---- search (cairn/artifact/search.hpp): what every backend must find, and refuse
      {"search finds by words, best first, and says what matched", check::finds_by_words},
      {"search filters by fields, metadata and time", check::filters_by_fields},
      {"search never shows another tenant's artifacts", check::never_shows_another_tenant},
      {"search sees the latest version unless asked, and never a removed artifact", check::sees_the_latest_version},
      {"search pages with a cursor: every hit once, in order", check::pages_with_a_cursor},
      {"search refuses bad queries with what and where", check::refuses_bad_queries},
      // ---- search over indexes: what a backend with its own word and vector indexes must still show. Checks with
      // vectors run on stores that keep them (keeps_embeddings()); on a store with an embedder, given vectors are
      // of its model and dimension.
      {"store_embedded keeps the vector and search finds it; bad vectors are refused, nothing stored",
       check::keeps_given_vectors},
      {"exact similarity ranks like a brute-force cosine; the default agrees with it on a small corpus",
       check::exact_similarity_is_brute_force},
      {"similarity keeps its recall past every switch-over line: 2,500 vectors, recall@10 >= 0.95 in the default mode, "
       "unfiltered and with a filter 1 in 50 pass",
       check::keeps_its_recall},
      {"a filtered similarity page is the exact filtered page whatever each record's metadata size, with every filter "
       "field, after re-stores and removals",
       check::filtered_similarity_is_exact},
      {"similarity ignores a vector's length: vectors from 1e-20 to 1e30 long score as the exact scan does",
       check::ignores_vector_length},
      {"filters, words and similarity together find what the scan of the same records finds",
       check::agrees_with_the_scan},
      {"a removed or replaced record never comes back: by words, by meaning, by filters, on a later page",
       check::removed_never_comes_back},
      {"search is per tenant: same words and vectors elsewhere change no result, score, cursor or error",
       check::is_per_tenant},
      {"search under concurrent writers: hits exist or existed, removed ones never, stored ones always",
       check::under_concurrent_writers},
      {"filtered similarity while a writer replaces and removes the versions it walks: hits pass and were stored",
       check::under_replacing_writers},
      {"a store that indexes as it stores reports nothing unindexed, and reindex has nothing to do",
       check::indexes_as_it_stores},
      {"search refuses contradictory modes and oversized filters, naming them", check::refuses_contradictory_modes},
  };
}

}  // namespace testing
CAIRN_END_NAMESPACE
