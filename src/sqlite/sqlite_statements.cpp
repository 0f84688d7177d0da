// SqliteArtifactStore: the SQL of its prepared statements.
#include "sqlite_statements.hpp"

#include <string>

#include <fmt/format.h>

CAIRN_BEGIN_NAMESPACE
namespace detail {
namespace sqlite {
namespace {

constexpr const char* record_columns =
    "tenant_id, id, version, type, title, description, purpose, value, storage_url, mime_type, size_bytes, "
    "schema_url, created_by, created_at, metadata";

// The record columns of cairn_artifacts joined as `a`, in `record_columns` order.
constexpr const char* artifact_columns =
    "a.tenant_id, a.id, a.version, a.type, a.title, a.description, a.purpose, a.value, a.storage_url, "
    "a.mime_type, a.size_bytes, a.schema_url, a.created_by, a.created_at, a.metadata";

}  // namespace

std::string statement_sql(Stmt s) {
  // The list statements walk the (tenant_id, id) key of cairn_heads from a lower bound, so a page costs what
  // the tenant holds around it, never what other tenants hold. Prefixes are ranges, not LIKE patterns, so '%' and
  // '_' in ids mean themselves.
  const std::string list_select = fmt::format(
      "SELECT {} FROM cairn_heads h JOIN cairn_artifacts a "
      "ON a.tenant_id = h.tenant_id AND a.id = h.id AND a.version = h.latest "
      "WHERE h.tenant_id = ?1 AND h.id >= ?2 {{}} "
      "AND (?4 IS NULL OR h.type = ?4) AND (?5 IS NULL OR h.created_by = ?5) ORDER BY h.id LIMIT ?6",
      artifact_columns);
  switch (s) {
    case head_latest: return "SELECT latest FROM cairn_heads WHERE tenant_id = ?1 AND id = ?2";
    case head_insert:
      return "INSERT INTO cairn_heads (tenant_id, id, latest, type, created_by) VALUES (?1, ?2, ?3, ?4, ?5)";
    case head_update:
      // In place: cheaper than INSERT OR REPLACE, which deletes and re-inserts the row.
      return "UPDATE cairn_heads SET latest = ?3, type = ?4, created_by = ?5 WHERE tenant_id = ?1 AND id = ?2";
    case artifact_insert:
      return fmt::format(
          "INSERT INTO cairn_artifacts ({}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
          "?12, ?13, ?14, ?15)",
          record_columns);
    case fetch_latest:
      return fmt::format(
          "SELECT {} FROM cairn_artifacts WHERE tenant_id = ?1 AND id = ?2 "
          "ORDER BY version DESC LIMIT 1",
          record_columns);
    case fetch_version:
      return fmt::format("SELECT {} FROM cairn_artifacts WHERE tenant_id = ?1 AND id = ?2 AND version = ?3",
                         record_columns);
    case versions_of: return "SELECT version FROM cairn_artifacts WHERE tenant_id = ?1 AND id = ?2 ORDER BY version";
    case head_delete: return "DELETE FROM cairn_heads WHERE tenant_id = ?1 AND id = ?2";
    case artifacts_delete: return "DELETE FROM cairn_artifacts WHERE tenant_id = ?1 AND id = ?2";
    case list_bounded: return fmt::format(list_select, "AND h.id < ?3");
    case list_open: return fmt::format(list_select, "AND ?3 IS NULL");
    case tenant_number: return "SELECT n FROM cairn_search_tenants WHERE tenant_id = ?1";
    case tenant_insert: return "INSERT INTO cairn_search_tenants (tenant_id) VALUES (?1)";
    case doc_insert:
      return "INSERT INTO cairn_search_docs (tenant_id, id, version, length, type) VALUES (?1, ?2, ?3, ?4, ?5) "
             "ON CONFLICT DO NOTHING";
    case text_insert: return "INSERT INTO cairn_search_text (rowid, title, description, value) VALUES (?1, ?2, ?3, ?4)";
    case text_delete_id:
      return "DELETE FROM cairn_search_text WHERE rowid IN "
             "(SELECT doc FROM cairn_search_docs WHERE tenant_id = ?1 AND id = ?2)";
    case docs_delete_id: return "DELETE FROM cairn_search_docs WHERE tenant_id = ?1 AND id = ?2";
    case unindexed_next:
      // The next versions (in key order after ?1..?3) that have no search row; ?4: one tenant, or NULL for all.
      return fmt::format(
          "SELECT {} FROM cairn_artifacts a WHERE (a.tenant_id, a.id, a.version) > (?1, ?2, ?3) "
          "AND (?4 IS NULL OR a.tenant_id = ?4) AND NOT EXISTS (SELECT 1 FROM cairn_search_docs d "
          "WHERE d.tenant_id = a.tenant_id AND d.id = a.id AND d.version = a.version) "
          "ORDER BY a.tenant_id, a.id, a.version LIMIT 256",
          artifact_columns);
    case words_done_get: return "SELECT words_done FROM cairn_search_state";
    case words_done_set: return "UPDATE cairn_search_state SET words_done = 1";
    case vector_insert:
      return "INSERT INTO cairn_search_vectors (tenant_id, id, version, model, dim, vec) "
             "VALUES (?1, ?2, ?3, ?4, ?5, ?6)";
    case vector_get:
      return "SELECT model, vec FROM cairn_search_vectors WHERE tenant_id = ?1 AND id = ?2 AND version = ?3";
    case vectors_delete_id: return "DELETE FROM cairn_search_vectors WHERE tenant_id = ?1 AND id = ?2";
    case change_insert:
      return "INSERT INTO cairn_search_changes (tenant_id, model, id, version, removed) VALUES (?1, ?2, ?3, ?4, ?5)";
    case change_remove:
      // A removal for the indexes (?3: one version, 0: all of them), written whether or not a vector goes with it:
      // every write that changes the tenant's latest versions moves the tenant's sequence, which is what a query's
      // count of unindexed versions is kept by (a removal of nothing changes no index).
      return "INSERT INTO cairn_search_changes (tenant_id, model, id, version, removed) VALUES (?1, '', ?2, ?3, 1)";
    case changes_after:
      // The (tenant, model)'s changes after ?3, each add with its vector (NULL when that version is gone since).
      // Columns 5-9: what a filter reads of the version (detail::FilterFields), kept beside its vector.
      return "SELECT c.seq, c.id, c.version, c.removed, v.vec, a.type, a.mime_type, a.created_by, a.created_at, "
             "a.metadata FROM cairn_search_changes c "
             "LEFT JOIN cairn_search_vectors v ON v.tenant_id = c.tenant_id AND v.id = c.id "
             "AND v.version = c.version AND v.model = c.model "
             "LEFT JOIN cairn_artifacts a ON a.tenant_id = c.tenant_id AND a.id = c.id AND a.version = c.version "
             "WHERE c.tenant_id = ?1 AND c.model IN (?2, '') AND c.seq > ?3 ORDER BY c.seq LIMIT 4096";
    case changes_last: return "SELECT max(seq) FROM cairn_search_changes";
    case changes_pruned: return "SELECT through FROM cairn_search_pruned";
    case prune_due:
      return "SELECT (SELECT max(seq) FROM cairn_search_changes), (SELECT through FROM cairn_search_pruned)";
    case changes_prune: return "DELETE FROM cairn_search_changes WHERE seq <= ?1";
    case pruned_set: return "UPDATE cairn_search_pruned SET through = ?1";
    case vectors_current:
      // Every latest version's vector of the (tenant, model): how an index is first built.
      // Columns 3-7: what a filter reads of the version (detail::FilterFields), kept beside its vector.
      return "SELECT v.id, v.version, v.vec, a.type, a.mime_type, a.created_by, a.created_at, a.metadata "
             "FROM cairn_search_vectors v JOIN cairn_heads h "
             "ON h.tenant_id = v.tenant_id AND h.id = v.id AND h.latest = v.version "
             "JOIN cairn_artifacts a ON a.tenant_id = v.tenant_id AND a.id = v.id AND a.version = v.version "
             "WHERE v.tenant_id = ?1 AND v.model = ?2";
    case heads_count:
      // The tenant's ids (its heads: small rows), what a first read makes room for (as many latest versions).
      return "SELECT count(*) FROM cairn_heads WHERE tenant_id = ?1";
    case candidate_get:
      // A candidate of the vector index checked against the rows: still the latest version (no newer one of
      // the id: a probe next to its own row, where cairn_heads would be another page to read), with its record and
      // vector of the model.
      return fmt::format(
          "SELECT {}, v.vec FROM cairn_artifacts a JOIN cairn_search_vectors v "
          "ON v.tenant_id = a.tenant_id AND v.id = a.id AND v.version = a.version "
          "WHERE a.tenant_id = ?1 AND a.id = ?2 AND a.version = ?3 AND v.model = ?4 "
          "AND NOT EXISTS (SELECT 1 FROM cairn_artifacts n WHERE n.tenant_id = ?1 AND n.id = ?2 "
          "AND n.version > ?3)",
          artifact_columns);
    case candidate_record:
      // ... its record alone, for a hit whose exact score the index gave: the vector's row (past SQLite's 1 KB of a
      // WITHOUT ROWID row kept in its page, a second page) is not read.
      return fmt::format(
          "SELECT {} FROM cairn_artifacts a WHERE a.tenant_id = ?1 AND a.id = ?2 AND a.version = ?3 "
          "AND NOT EXISTS (SELECT 1 FROM cairn_artifacts n WHERE n.tenant_id = ?1 AND n.id = ?2 "
          "AND n.version > ?3)",
          artifact_columns);
    case unindexed_vectors:
      // ... without a vector of the model ?2.
      return "SELECT count(*) FROM cairn_heads h WHERE h.tenant_id = ?1 AND NOT EXISTS (SELECT 1 FROM "
             "cairn_search_vectors v WHERE v.tenant_id = h.tenant_id AND v.id = h.id AND v.version = h.latest "
             "AND v.model = ?2)";
    case unembedded_next:
      // The tenant's next versions (in id, version order after ?2, ?3) without a vector of the model ?4.
      return fmt::format(
          "SELECT {} FROM cairn_artifacts a WHERE a.tenant_id = ?1 AND (a.id, a.version) > (?2, ?3) "
          "AND NOT EXISTS (SELECT 1 FROM cairn_search_vectors v WHERE v.tenant_id = a.tenant_id "
          "AND v.id = a.id AND v.version = a.version AND v.model = ?4) "
          "ORDER BY a.id, a.version LIMIT 64",
          artifact_columns);
    case unindexed_all:
      // How many versions have no search row (what unindexed_next walks); ?1: one tenant, or NULL for all.
      return "SELECT count(*) FROM cairn_artifacts a WHERE (?1 IS NULL OR a.tenant_id = ?1) AND NOT EXISTS "
             "(SELECT 1 FROM cairn_search_docs d WHERE d.tenant_id = a.tenant_id AND d.id = a.id AND "
             "d.version = a.version)";
    case unembedded_all:
      // How many of the tenant's versions have no vector of the model ?2 (what unembedded_next walks).
      return "SELECT count(*) FROM cairn_artifacts a WHERE a.tenant_id = ?1 AND NOT EXISTS (SELECT 1 FROM "
             "cairn_search_vectors v WHERE v.tenant_id = a.tenant_id AND v.id = a.id AND v.version = a.version "
             "AND v.model = ?2)";
    case vector_upsert:
      // A version's vector by reindex (the caller checked, in the same transaction, that the version is the record
      // it embedded): replaces a vector of another model, never one of this model, which the version got since
      // (from its store, or another reindex) and which may be the host's own.
      return "INSERT INTO cairn_search_vectors (tenant_id, id, version, model, dim, vec) "
             "SELECT ?1, ?2, ?3, ?4, ?5, ?6 WHERE EXISTS (SELECT 1 FROM cairn_artifacts WHERE tenant_id = ?1 "
             "AND id = ?2 AND version = ?3) ON CONFLICT (tenant_id, id, version) DO UPDATE SET model = excluded.model, "
             "dim = excluded.dim, vec = excluded.vec WHERE model <> excluded.model";
    case search_stats:
      // The tenant's statistics (migration 5): BM25's N and total length over its latest versions and over all of
      // them, and its ids (those without words are SearchPage::unindexed).
      return "SELECT heads, docs, doc_words, versions, version_words FROM cairn_search_stats WHERE tenant_id = ?1";
    case search_df_rows:
      // In how many rows of the index a word ?1 (with its tenant's prefix) occurs: its document frequency over
      // all of the tenant's versions, from the postings alone.
      return "SELECT count(*) FROM cairn_search_text WHERE cairn_search_text MATCH ?1";
    case search_df_latest:
      // ... over the tenant ?2's latest versions: each posting's version checked against its head.
      // CROSS JOIN: FTS5 drives (the word's postings), never one MATCH per row of the tenant's docs.
      return "SELECT count(*) FROM cairn_search_text t CROSS JOIN cairn_search_docs d ON d.doc = t.rowid "
             "JOIN cairn_heads h ON h.tenant_id = d.tenant_id AND h.id = d.id AND h.latest = d.version "
             "WHERE d.tenant_id = ?2 AND t.cairn_search_text MATCH ?1";
    case statement_count: break;
    default: {
      // The versions searched are the tenant's ?2 (latest, unless all versions) under the id prefix [?3, ?4).
      const std::size_t variant = (s - search_match) % 4;
      const bool keys = s >= search_match_keys;
      const std::string versions =
          (variant & 1) != 0
              ? ""
              : "JOIN cairn_heads h ON h.tenant_id = d.tenant_id AND h.id = d.id AND h.latest = d.version";
      const std::string scope = fmt::format("{} WHERE d.tenant_id = ?2 AND d.id >= ?3 AND {}", versions,
                                            (variant & 2) != 0 ? "d.id < ?4" : "?4 IS NULL");
      if (keys) {
        // The versions the word query matches, with the filters SQL can check, each with its length and where the
        // query's phrases occur in it (cairn_hits); the type from the words row, the version's row read only for a
        // filter that needs it.
        return fmt::format(
            "SELECT d.id, d.version, cairn_hits(cairn_search_text), d.length FROM cairn_search_text "
            "CROSS JOIN cairn_search_docs d ON d.doc = cairn_search_text.rowid "
            "{} AND cairn_search_text MATCH ?1 AND (?5 IS NULL OR d.type = ?5) "
            "AND (coalesce(?6, ?7, ?8, ?9) IS NULL OR EXISTS (SELECT 1 FROM cairn_artifacts a "
            "WHERE a.tenant_id = d.tenant_id AND a.id = d.id AND a.version = d.version "
            "AND (?6 IS NULL OR a.mime_type = ?6) AND (?7 IS NULL OR a.created_by = ?7) "
            "AND (?8 IS NULL OR a.created_at >= ?8) AND (?9 IS NULL OR a.created_at < ?9))) "
            "AND cairn_search_text.rowid NOT IN "
            "(SELECT rowid FROM cairn_search_text WHERE cairn_search_text MATCH ?10)",
            scope);
      }
      // ... each with its record.
      return fmt::format(
          "SELECT {}, cairn_hits(cairn_search_text), d.length FROM cairn_search_text "
          "CROSS JOIN cairn_search_docs d ON d.doc = cairn_search_text.rowid "
          "CROSS JOIN cairn_artifacts a ON a.tenant_id = d.tenant_id AND a.id = d.id AND a.version = d.version "
          "{} AND cairn_search_text MATCH ?1 AND (?5 IS NULL OR a.type = ?5) AND (?6 IS NULL OR a.mime_type = ?6) "
          "AND (?7 IS NULL OR a.created_by = ?7) AND (?8 IS NULL OR a.created_at >= ?8) "
          "AND (?9 IS NULL OR a.created_at < ?9) AND cairn_search_text.rowid NOT IN "
          "(SELECT rowid FROM cairn_search_text WHERE cairn_search_text MATCH ?10)",
          artifact_columns, scope);
    }
  }
  return {};
}

}  // namespace sqlite
}  // namespace detail
CAIRN_END_NAMESPACE
