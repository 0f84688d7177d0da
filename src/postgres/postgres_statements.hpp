// cairn (private) — the PostgresArtifactStore's prepared statements: their names, and the SQL of each
// (postgres_statements.cpp). Every connection prepares all of them when it opens (PostgresArtifactStore::Impl).
#pragma once

#include <array>
#include <cstddef>
#include <string>

#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace detail {
namespace pg {

enum Stmt : std::size_t {
  store_version,
  store_create,
  store_replace,
  head_version,
  find_token,
  fetch_latest,
  fetch_version,
  versions_of,
  remove_artifact,
  list_bounded,
  list_open,
  search_latest,
  search_all,
  fetch_vector,
  read_changes,
  fetch_candidates,
  reindex_count,
  reindex_batch,
  reindex_words,
  reindex_vector,
  vectors_latest,
  vectors_all,
  tenant_number,
  tenant_create,
  prune_sequence,
  all_vectors,
  reindex_finish,
  statement_count
};

inline constexpr std::array<const char*, statement_count> statement_names = {
    "cairn_store",          "cairn_store_create",  "cairn_store_replace", "cairn_head_version",
    "cairn_find_token",     "cairn_fetch_latest",  "cairn_fetch_version", "cairn_versions",
    "cairn_remove",         "cairn_list_bounded",  "cairn_list_open",     "cairn_search_latest",
    "cairn_search_all",     "cairn_fetch_vector",  "cairn_read_changes",  "cairn_fetch_candidates",
    "cairn_reindex_count",  "cairn_reindex_batch", "cairn_reindex_words", "cairn_reindex_vector",
    "cairn_vectors_latest", "cairn_vectors_all",   "cairn_tenant_number", "cairn_tenant_create",
    "cairn_prune_changes",  "cairn_all_vectors",   "cairn_reindex_finish"};

/// The SQL of statement `s`.
std::string statement_sql(Stmt s);

}  // namespace pg
}  // namespace detail
CAIRN_END_NAMESPACE
