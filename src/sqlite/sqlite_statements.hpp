// cairn (private) — the SqliteArtifactStore's prepared statements: the enum that names them, and the SQL of each
// (sqlite_statements.cpp). A connection prepares each the first time it runs it (detail::SqliteConnection).
#pragma once

#include <cstddef>
#include <string>

#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace detail {
namespace sqlite {

enum Stmt : std::size_t {
  head_latest,
  head_insert,
  head_update,
  artifact_insert,
  fetch_latest,
  fetch_version,
  versions_of,
  head_delete,
  artifacts_delete,
  list_bounded,
  list_open,
  tenant_number,
  tenant_insert,
  doc_insert,
  text_insert,
  text_delete_id,
  docs_delete_id,
  unindexed_next,
  words_done_get,
  words_done_set,
  vector_insert,
  vector_get,
  vectors_delete_id,
  change_insert,
  change_remove,
  changes_after,
  changes_last,
  changes_pruned,
  prune_due,
  changes_prune,
  pruned_set,
  vectors_current,
  heads_count,
  candidate_get,
  candidate_record,
  unindexed_vectors,
  unembedded_next,
  vector_upsert,
  unindexed_all,
  unembedded_all,
  search_stats,
  search_df_rows,
  search_df_latest,
  // The matches in four variants, + (all versions ? 1 : 0) + (a prefix with an upper bound ? 2 : 0).
  search_match,
  // ... each without its record (the versions' keys only: the page's records are read after the ranking).
  search_match_keys = search_match + 4,
  statement_count = search_match_keys + 4
};

/// The SQL of statement `s`.
std::string statement_sql(Stmt s);

}  // namespace sqlite
}  // namespace detail
CAIRN_END_NAMESPACE
