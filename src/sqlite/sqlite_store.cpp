// SqliteArtifactStore: the SQL, the connection pool and the schema migrations.
#include "cairn/store/sqlite_store.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <vector>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "cairn/artifact/search/filter_columns.hpp"
#include "cairn/artifact/search/vector_cache.hpp"

#include "../common/connection_pool.hpp"
#include "../common/record_columns.hpp"
#include "../common/sqlite_connection.hpp"

CAIRN_BEGIN_NAMESPACE
namespace {

// Migration i brings a file from schema version i to i + 1. Never edit a released entry: append a new one.
constexpr std::array<const char*, SqliteArtifactStore::schema_version> migrations = {
    // 0 -> 1: every version of every artifact, and one head row per (tenant, id) holding the latest version
    // and the fields list() filters on.
    R"sql(
CREATE TABLE cairn_artifacts (
  tenant_id   TEXT    NOT NULL,
  id          TEXT    NOT NULL,
  version     INTEGER NOT NULL,
  type        TEXT    NOT NULL,
  title       TEXT    NOT NULL,
  description TEXT    NOT NULL,
  purpose     TEXT    NOT NULL,
  value       TEXT,
  storage_url TEXT,
  mime_type   TEXT,
  size_bytes  INTEGER,
  schema_url  TEXT,
  created_by  TEXT,
  created_at  INTEGER NOT NULL,
  metadata    TEXT    NOT NULL,
  PRIMARY KEY (tenant_id, id, version)
) WITHOUT ROWID;
CREATE TABLE cairn_heads (
  tenant_id  TEXT    NOT NULL,
  id         TEXT    NOT NULL,
  latest     INTEGER NOT NULL,
  type       TEXT    NOT NULL,
  created_by TEXT,
  PRIMARY KEY (tenant_id, id)
) WITHOUT ROWID;
)sql",
    // 1 -> 2: search by words (docs/search.md, "Per backend"). One row per stored version in cairn_search_docs
    // (its word count; its rowid is its row in the FTS5 table), the words themselves in cairn_search_text, each
    // token prefixed with the tenant's number from cairn_search_tenants ("12xrevenue"), so a tenant's words are
    // its own terms in the index: no query reads another tenant's postings. Records already in the file are
    // indexed when the store opens (cairn_search_state.words_done says whether that finished).
    R"sql(
CREATE TABLE cairn_search_tenants (
  n         INTEGER PRIMARY KEY,
  tenant_id TEXT NOT NULL UNIQUE
);
CREATE TABLE cairn_search_docs (
  doc       INTEGER PRIMARY KEY,
  tenant_id TEXT    NOT NULL,
  id        TEXT    NOT NULL,
  version   INTEGER NOT NULL,
  length    INTEGER NOT NULL,
  UNIQUE (tenant_id, id, version)
);
CREATE VIRTUAL TABLE cairn_search_text USING fts5(title, description, value, tokenize = 'ascii', columnsize = 0);
CREATE TABLE cairn_search_state (words_done INTEGER NOT NULL);
INSERT INTO cairn_search_state (words_done) VALUES (0);
)sql",
    // 2 -> 3: vectors for similarity search, one per version (raw float32, as the embedder or host gave it), and
    // the change sequence the in-process vector indexes catch up from (docs/search.md, "The in-process index
    // on SQL backends"): an add per stored vector, a removal (model '': every model) of the previous latest version
    // on a new version and of every version on remove.
    R"sql(
CREATE TABLE cairn_search_vectors (
  tenant_id TEXT    NOT NULL,
  id        TEXT    NOT NULL,
  version   INTEGER NOT NULL,
  model     TEXT    NOT NULL,
  dim       INTEGER NOT NULL,
  vec       BLOB    NOT NULL,
  PRIMARY KEY (tenant_id, id, version)
) WITHOUT ROWID;
CREATE TABLE cairn_search_changes (
  seq       INTEGER PRIMARY KEY,
  tenant_id TEXT    NOT NULL,
  model     TEXT    NOT NULL,
  id        TEXT    NOT NULL,
  version   INTEGER NOT NULL,
  removed   INTEGER NOT NULL
);
CREATE INDEX cairn_search_changes_by_tenant ON cairn_search_changes (tenant_id, model, seq);
)sql",
    // 3 -> 4: the change sequence is pruned (SqliteOptions::search_changes_kept): changes up to `through` are
    // gone, so a process's index that has seen less than that starts over from the current vectors.
    R"sql(
CREATE TABLE cairn_search_pruned (through INTEGER NOT NULL);
INSERT INTO cairn_search_pruned (through) VALUES (0);
)sql",
    // 4 -> 5: BM25's statistics per tenant, so a word search reads them instead of counting the tenant's versions:
    // its ids (heads), its latest versions with words and their words (docs, doc_words), and its versions with
    // words and their words (versions, version_words). Triggers keep them in the writing transaction, whatever
    // statement changes a head or a words row: each adds the change's share of the heads-to-docs join from the
    // other table as it is at that moment, so any order of writes leaves them exact. And each words row gets its
    // version's type, so a word search filters by type without reading the versions' records.
    R"sql(
ALTER TABLE cairn_search_docs ADD COLUMN type TEXT;
UPDATE cairn_search_docs SET type = (SELECT a.type FROM cairn_artifacts a
  WHERE a.tenant_id = cairn_search_docs.tenant_id AND a.id = cairn_search_docs.id
  AND a.version = cairn_search_docs.version);
CREATE TABLE cairn_search_stats (
  tenant_id     TEXT    PRIMARY KEY,
  heads         INTEGER NOT NULL DEFAULT 0,
  docs          INTEGER NOT NULL DEFAULT 0,
  doc_words     INTEGER NOT NULL DEFAULT 0,
  versions      INTEGER NOT NULL DEFAULT 0,
  version_words INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
INSERT INTO cairn_search_stats (tenant_id, heads, docs, doc_words, versions, version_words)
SELECT tenant_id, sum(heads), sum(docs), sum(doc_words), sum(versions), sum(version_words) FROM (
  SELECT tenant_id, count(*) AS heads, 0 AS docs, 0 AS doc_words, 0 AS versions, 0 AS version_words
  FROM cairn_heads GROUP BY tenant_id
  UNION ALL
  SELECT h.tenant_id, 0, count(*), sum(d.length), 0, 0 FROM cairn_heads h JOIN cairn_search_docs d
  ON d.tenant_id = h.tenant_id AND d.id = h.id AND d.version = h.latest GROUP BY h.tenant_id
  UNION ALL
  SELECT tenant_id, 0, 0, 0, count(*), sum(length) FROM cairn_search_docs GROUP BY tenant_id)
GROUP BY tenant_id;
CREATE TRIGGER cairn_search_stats_doc_insert AFTER INSERT ON cairn_search_docs BEGIN
  INSERT INTO cairn_search_stats (tenant_id, versions, version_words) VALUES (NEW.tenant_id, 0, 0)
    ON CONFLICT DO NOTHING;
  UPDATE cairn_search_stats SET versions = versions + 1, version_words = version_words + NEW.length,
      docs = docs + x.latest, doc_words = doc_words + x.latest * NEW.length
    FROM (SELECT EXISTS (SELECT 1 FROM cairn_heads h WHERE h.tenant_id = NEW.tenant_id AND h.id = NEW.id
                         AND h.latest = NEW.version) AS latest) x
    WHERE tenant_id = NEW.tenant_id;
END;
CREATE TRIGGER cairn_search_stats_doc_delete AFTER DELETE ON cairn_search_docs BEGIN
  UPDATE cairn_search_stats SET versions = versions - 1, version_words = version_words - OLD.length,
      docs = docs - x.latest, doc_words = doc_words - x.latest * OLD.length
    FROM (SELECT EXISTS (SELECT 1 FROM cairn_heads h WHERE h.tenant_id = OLD.tenant_id AND h.id = OLD.id
                         AND h.latest = OLD.version) AS latest) x
    WHERE tenant_id = OLD.tenant_id;
END;
CREATE TRIGGER cairn_search_stats_head_insert AFTER INSERT ON cairn_heads BEGIN
  INSERT INTO cairn_search_stats (tenant_id, heads) VALUES (NEW.tenant_id, 0) ON CONFLICT DO NOTHING;
  UPDATE cairn_search_stats SET heads = heads + 1, docs = docs + (x.length IS NOT NULL),
      doc_words = doc_words + coalesce(x.length, 0)
    FROM (SELECT (SELECT d.length FROM cairn_search_docs d WHERE d.tenant_id = NEW.tenant_id AND d.id = NEW.id
                  AND d.version = NEW.latest) AS length) x
    WHERE tenant_id = NEW.tenant_id;
END;
CREATE TRIGGER cairn_search_stats_head_update AFTER UPDATE OF tenant_id, id, latest ON cairn_heads BEGIN
  UPDATE cairn_search_stats SET heads = heads - 1, docs = docs - (x.length IS NOT NULL),
      doc_words = doc_words - coalesce(x.length, 0)
    FROM (SELECT (SELECT d.length FROM cairn_search_docs d WHERE d.tenant_id = OLD.tenant_id AND d.id = OLD.id
                  AND d.version = OLD.latest) AS length) x
    WHERE tenant_id = OLD.tenant_id;
  INSERT INTO cairn_search_stats (tenant_id, heads) VALUES (NEW.tenant_id, 0) ON CONFLICT DO NOTHING;
  UPDATE cairn_search_stats SET heads = heads + 1, docs = docs + (x.length IS NOT NULL),
      doc_words = doc_words + coalesce(x.length, 0)
    FROM (SELECT (SELECT d.length FROM cairn_search_docs d WHERE d.tenant_id = NEW.tenant_id AND d.id = NEW.id
                  AND d.version = NEW.latest) AS length) x
    WHERE tenant_id = NEW.tenant_id;
END;
CREATE TRIGGER cairn_search_stats_head_delete AFTER DELETE ON cairn_heads BEGIN
  UPDATE cairn_search_stats SET heads = heads - 1, docs = docs - (x.length IS NOT NULL),
      doc_words = doc_words - coalesce(x.length, 0)
    FROM (SELECT (SELECT d.length FROM cairn_search_docs d WHERE d.tenant_id = OLD.tenant_id AND d.id = OLD.id
                  AND d.version = OLD.latest) AS length) x
    WHERE tenant_id = OLD.tenant_id;
END;
)sql",
};

constexpr const char* record_columns =
    "tenant_id, id, version, type, title, description, purpose, value, storage_url, mime_type, size_bytes, "
    "schema_url, created_by, created_at, metadata";

// The record columns of cairn_artifacts joined as `a`, in `record_columns` order.
constexpr const char* artifact_columns =
    "a.tenant_id, a.id, a.version, a.type, a.title, a.description, a.purpose, a.value, a.storage_url, "
    "a.mime_type, a.size_bytes, a.schema_url, a.created_by, a.created_at, a.metadata";

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
      return fmt::format("INSERT INTO cairn_artifacts ({}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
                         "?12, ?13, ?14, ?15)",
                         record_columns);
    case fetch_latest:
      return fmt::format("SELECT {} FROM cairn_artifacts WHERE tenant_id = ?1 AND id = ?2 "
                         "ORDER BY version DESC LIMIT 1",
                         record_columns);
    case fetch_version:
      return fmt::format("SELECT {} FROM cairn_artifacts WHERE tenant_id = ?1 AND id = ?2 AND version = ?3",
                         record_columns);
    case versions_of:
      return "SELECT version FROM cairn_artifacts WHERE tenant_id = ?1 AND id = ?2 ORDER BY version";
    case head_delete: return "DELETE FROM cairn_heads WHERE tenant_id = ?1 AND id = ?2";
    case artifacts_delete: return "DELETE FROM cairn_artifacts WHERE tenant_id = ?1 AND id = ?2";
    case list_bounded: return fmt::format(list_select, "AND h.id < ?3");
    case list_open: return fmt::format(list_select, "AND ?3 IS NULL");
    case tenant_number: return "SELECT n FROM cairn_search_tenants WHERE tenant_id = ?1";
    case tenant_insert: return "INSERT INTO cairn_search_tenants (tenant_id) VALUES (?1)";
    case doc_insert:
      return "INSERT INTO cairn_search_docs (tenant_id, id, version, length, type) VALUES (?1, ?2, ?3, ?4, ?5) "
             "ON CONFLICT DO NOTHING";
    case text_insert:
      return "INSERT INTO cairn_search_text (rowid, title, description, value) VALUES (?1, ?2, ?3, ?4)";
    case text_delete_id:
      return "DELETE FROM cairn_search_text WHERE rowid IN "
             "(SELECT doc FROM cairn_search_docs WHERE tenant_id = ?1 AND id = ?2)";
    case docs_delete_id: return "DELETE FROM cairn_search_docs WHERE tenant_id = ?1 AND id = ?2";
    case unindexed_next:
      // The next versions (in key order after ?1..?3) that have no search row; ?4: one tenant, or NULL for all.
      return fmt::format("SELECT {} FROM cairn_artifacts a WHERE (a.tenant_id, a.id, a.version) > (?1, ?2, ?3) "
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
      return fmt::format("SELECT {}, v.vec FROM cairn_artifacts a JOIN cairn_search_vectors v "
                         "ON v.tenant_id = a.tenant_id AND v.id = a.id AND v.version = a.version "
                         "WHERE a.tenant_id = ?1 AND a.id = ?2 AND a.version = ?3 AND v.model = ?4 "
                         "AND NOT EXISTS (SELECT 1 FROM cairn_artifacts n WHERE n.tenant_id = ?1 AND n.id = ?2 "
                         "AND n.version > ?3)",
                         artifact_columns);
    case candidate_record:
      // ... its record alone, for a hit whose exact score the index gave: the vector's row (past SQLite's 1 KB of a
      // WITHOUT ROWID row kept in its page, a second page) is not read.
      return fmt::format("SELECT {} FROM cairn_artifacts a WHERE a.tenant_id = ?1 AND a.id = ?2 AND a.version = ?3 "
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
      return fmt::format("SELECT {} FROM cairn_artifacts a WHERE a.tenant_id = ?1 AND (a.id, a.version) > (?2, ?3) "
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
          artifact_columns,
          scope);
    }
  }
  return {};
}

/// FTS5 auxiliary function cairn_hits(table): where the query's phrases occur in the current row, as a BLOB of
/// int32 counts, phrase by phrase, column by column (title, description, value). cairn scores BM25 from them with
/// the tenant's own statistics (FTS5's bm25() would count every tenant of the file).
void fts5_hits(const Fts5ExtensionApi* api, Fts5Context* fts, sqlite3_context* out, int, sqlite3_value**) {
  const int phrases = api->xPhraseCount(fts);
  const int columns = api->xColumnCount(fts);
  std::vector<std::int32_t> counts(static_cast<std::size_t>(phrases) * static_cast<std::size_t>(columns), 0);
  int instances = 0;
  if (const int rc = api->xInstCount(fts, &instances); rc != SQLITE_OK) {
    sqlite3_result_error_code(out, rc);
    return;
  }
  for (int i = 0; i < instances; ++i) {
    int phrase = 0, column = 0, offset = 0;
    if (const int rc = api->xInst(fts, i, &phrase, &column, &offset); rc != SQLITE_OK) {
      sqlite3_result_error_code(out, rc);
      return;
    }
    if (phrase >= 0 && phrase < phrases && column >= 0 && column < columns) {
      ++counts[static_cast<std::size_t>(phrase * columns + column)];
    }
  }
  sqlite3_result_blob64(out, counts.data(), counts.size() * sizeof(std::int32_t), SQLITE_TRANSIENT);
}

/// Registers cairn_hits on a connection (FTS5 is in Debian's SQLite; a build without it fails here, clearly).
void register_fts5_functions(sqlite3* db, const std::string& where) {
  fts5_api* api = nullptr;
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, "SELECT fts5(?1)", -1, &st, nullptr) == SQLITE_OK) {
    sqlite3_bind_pointer(st, 1, static_cast<void*>(&api), "fts5_api_ptr", nullptr);
    sqlite3_step(st);
  }
  sqlite3_finalize(st);
  if (!api || api->iVersion < 2 ||
      api->xCreateFunction(api, "cairn_hits", nullptr, &fts5_hits, nullptr) != SQLITE_OK) {
    throw storage_error(fmt::format("{}: this SQLite has no FTS5, which search needs", where));
  }
}

/// The words of a field as the FTS5 table holds them: each prefixed with the tenant's number.
std::string prefixed_words(const std::vector<std::string>& words, const std::string& prefix) {
  std::string out;
  for (const auto& w : words) {
    if (!out.empty()) out.push_back(' ');
    out += prefix;
    out += w;
  }
  return out;
}

std::string tenant_prefix(std::int64_t n) { return fmt::format("{}x", n); }

/// A vector column's floats (float32 in the machine's byte order, as stored).
std::vector<float> floats_of(std::string_view blob) {
  std::vector<float> out(blob.size() / sizeof(float));
  if (!out.empty()) std::memcpy(out.data(), blob.data(), out.size() * sizeof(float));
  return out;
}

/// The smallest string above every string that starts with `prefix` (byte-wise), or nothing when there is none.
std::optional<std::string> prefix_upper_bound(std::string prefix) {
  while (!prefix.empty() && static_cast<unsigned char>(prefix.back()) == 0xFF) prefix.pop_back();
  if (prefix.empty()) return std::nullopt;
  prefix.back() = static_cast<char>(static_cast<unsigned char>(prefix.back()) + 1);
  return prefix;
}

}  // namespace

struct SqliteArtifactStore::Impl {
  using Connection = detail::SqliteConnection<statement_count>;
  using Query = detail::SqliteQuery<Connection>;
  using WriteTransaction = detail::SqliteWriteTransaction<Connection>;

  static constexpr detail::SqliteSchema schema{"cairn_schema", SqliteArtifactStore::schema_version,
                                               migrations.data(), "the database has"};

  Impl(std::string p, SqliteOptions o)
      : path(std::move(p)),
        options(o),
        where(fmt::format("sqlite store '{}'", detail::excerpt(path, 200))),
        pool(o.max_connections, [this] { return open(); }) {}

  std::unique_ptr<Connection> open() const {
    auto c = std::make_unique<Connection>(
        detail::SqliteOpen{path, where, options.busy_timeout_ms,
                           options.synchronous == SqliteOptions::Synchronous::full, options.page_size},
        [](std::size_t s) { return statement_sql(static_cast<Stmt>(s)); });
    register_fts5_functions(c->db(), where);
    if (options.mmap_bytes > 0) c->exec(fmt::format("PRAGMA mmap_size = {}", options.mmap_bytes).c_str());
    return c;
  }

  /// The tenant's number in cairn_search_tenants (its words' prefix); inside a write transaction, a new tenant
  /// gets one.
  static std::optional<std::int64_t> tenant_of(Connection& c, const std::string& tenant, bool create) {
    {
      Query q(c, tenant_number);
      q.bind(1, tenant);
      if (q.step()) return q.int64(0);
    }
    if (!create) return std::nullopt;
    Query(c, tenant_insert).bind(1, tenant).run();
    return sqlite3_last_insert_rowid(c.db());
  }

  /// Adds a stored version's words (and its type) to the search tables (inside the caller's write transaction).
  static bool index_words(Connection& c, const std::string& tenant, const std::string& id, std::int64_t version,
                          const std::string& type, const detail::RecordWords& words) {
    const std::string prefix = tenant_prefix(*tenant_of(c, tenant, true));
    Query(c, doc_insert)
        .bind(1, tenant)
        .bind(2, id)
        .bind(3, version)
        .bind(4, static_cast<std::int64_t>(words.length()))
        .bind(5, type)
        .run();
    if (sqlite3_changes(c.db()) == 0) return false;  // indexed already
    const std::int64_t doc = sqlite3_last_insert_rowid(c.db());
    const std::string title = prefixed_words(words.title, prefix);
    const std::string description = prefixed_words(words.description, prefix);
    const std::string value = prefixed_words(words.value, prefix);
    Query(c, text_insert).bind(1, doc).bind(2, title).bind(3, description).bind(4, value).run();
    return true;
  }

  /// Indexes the words of versions stored before the file had search (one tenant, or every one): in batches, each
  /// its own transaction, so an interrupted run keeps what it did and the next goes on. Returns how many.
  /// Tells the observer (if any) how far an indexing is: `done` of `total` items.
  void report_index(std::string_view operation, std::string_view tenant, std::uint64_t done,
                    std::uint64_t total) const {
    if (!options.observer) return;
    Event e;
    e.kind = EventKind::index;
    e.operation = operation;
    e.tenant = tenant;
    e.items = done;
    e.total = total;
    options.observer->on_event(e);
  }

  /// Inside the caller's write transaction: whether (tenant, id, version) is still `read`, the record read before
  /// the transaction. An id removed and stored again meanwhile has versions from 1 again, which are other records:
  /// what was made from the one read (its words, its vector) must not be written for them.
  bool still_the_record(Connection& c, const ArtifactRecord& read) const {
    Query q(c, fetch_version);
    q.bind(1, read.tenant_id()).bind(2, read.id()).bind(3, static_cast<std::int64_t>(read.version()));
    if (!q.step()) return false;
    try {
      return *record(q) == read;
    } catch (const storage_error&) {
      return false;  // unreadable now: nothing to index
    }
  }

  /// How many versions `s` (unindexed_all, unembedded_all) counts.
  static std::uint64_t count_of(Connection& c, Stmt s, const std::optional<std::string>& tenant,
                                const std::optional<std::string>& model = std::nullopt) {
    Query q(c, s);
    q.bind(1, tenant);
    if (model) q.bind(2, *model);
    return q.step() ? static_cast<std::uint64_t>(q.int64(0)) : 0;
  }

  /// Indexes the words of the versions that have none (of one tenant, or of all), 256 a transaction;
  /// `batch_done(rows)` after each. Returns how many it indexed.
  std::size_t index_unindexed(Connection& c, const std::optional<std::string>& tenant,
                              const std::function<void(std::size_t)>& batch_done = {}) const {
    std::size_t done = 0;
    std::string after_tenant, after_id;
    std::int64_t after_version = 0;
    for (;;) {
      std::vector<ArtifactPtr> batch;
      std::size_t rows = 0;
      {
        Query q(c, unindexed_next);
        q.bind(1, after_tenant).bind(2, after_id).bind(3, after_version).bind(4, tenant);
        while (q.step()) {
          ++rows;
          after_tenant = std::string(q.text(0));
          after_id = std::string(q.text(1));
          after_version = q.int64(2);
          try {
            batch.push_back(record(q));
          } catch (const storage_error&) {
            // An unreadable row: list() and the scan skip it too; fetch names it.
          }
        }
      }
      if (rows == 0) break;
      WriteTransaction tx(c);
      for (const auto& r : batch) {
        // Another process that opened the file may have indexed it meanwhile: then nothing is added. Removed, or
        // removed and stored again, since it was read: its words are not the version's.
        if (!still_the_record(c, *r)) continue;
        if (index_words(c, r->tenant_id(), r->id(), static_cast<std::int64_t>(r->version()), r->type().str(),
                        detail::record_words(*r))) {
          ++done;
        }
      }
      tx.commit();
      if (batch_done) batch_done(rows);
    }
    return done;
  }

  /// In a write transaction that wrote changes: once the sequence holds `search_changes_kept` and a sixteenth more
  /// changes than at the last pruning, the oldest go (so a write deletes about one row on average, in batches).
  void prune_changes(Connection& conn) const {
    const std::uint64_t kept = options.search_changes_kept;
    if (kept == 0) return;
    std::int64_t newest = 0, through = 0;
    {
      Query q(conn, prune_due);
      if (!q.step() || q.is_null(0)) return;
      newest = q.int64(0);
      through = q.int64(1);
    }
    const auto k = static_cast<std::int64_t>(std::min<std::uint64_t>(kept, std::numeric_limits<std::int32_t>::max()));
    if (newest - through < k + k / 16 + 1) return;
    Query(conn, changes_prune).bind(1, newest - k).run();
    Query(conn, pruned_set).bind(1, newest - k).run();
  }

  /// A read transaction: what it reads is one snapshot. Rolled back (nothing to keep) when it goes.
  struct ReadTransaction {
    explicit ReadTransaction(Connection& conn) : c(conn) { c.begin(); }
    ~ReadTransaction() { c.rollback(); }
    ReadTransaction(const ReadTransaction&) = delete;
    ReadTransaction& operator=(const ReadTransaction&) = delete;
    Connection& c;
  };

  /// The change sequence of a (tenant, model) for detail::VectorCache, read in the caller's read transaction on
  /// `conn`: after 0, every current vector (each an add at the newest sequence number), else the changes after
  /// `after`.
  /// What a filter reads of the version in the current row of `q`, from column `at` on (type, mime_type,
  /// created_by, created_at, metadata: detail::kept_filter_fields); null when the row has no record (gone since).
  static std::shared_ptr<const void> filter_fields(const Query& q, int at, const JsonLimits& limits) {
    if (q.is_null(at)) return nullptr;
    const auto optional_text = [&q](int col) {
      return q.is_null(col) ? std::nullopt : std::optional<std::string_view>(q.text(col));
    };
    return detail::kept_filter_fields(q.text(at), optional_text(at + 1), optional_text(at + 2), q.int64(at + 3),
                                      q.text(at + 4), limits);
  }

  // detail::ReadVectorChanges on `conn`: the changes after `after` handed to `sink` as they are read (one change
  // object, its vector's memory reused row after row).
  static bool read_changes(Connection& conn, const std::string& tenant, const std::string& model, std::uint64_t after,
                           const JsonLimits& limits, const detail::VectorChangeSink& sink) {
    detail::VectorChange c;
    const auto vector_of = [&c](std::string_view blob) {
      c.vector.resize(blob.size() / sizeof(float));
      if (!c.vector.empty()) std::memcpy(c.vector.data(), blob.data(), c.vector.size() * sizeof(float));
    };
    if (after == 0) {
      std::uint64_t last = 0;
      {
        Query q(conn, changes_last);
        if (q.step() && !q.is_null(0)) last = static_cast<std::uint64_t>(q.int64(0));
      }
      if (last == 0) return false;
      {
        Query n(conn, heads_count);
        n.bind(1, tenant);
        if (n.step() && n.int64(0) > 0) {
          c.coming = static_cast<std::size_t>(n.int64(0));
          sink(c);
          c.coming = 0;
        }
      }
      Query q(conn, vectors_current);
      q.bind(1, tenant).bind(2, model);
      bool any = false;
      while (q.step()) {
        c.seq = last;
        c.id.assign(q.text(0));
        c.version = static_cast<std::uint64_t>(q.int64(1));
        vector_of(q.blob(2));
        c.fields = filter_fields(q, 3, limits);
        sink(c);
        any = true;
      }
      if (!any) {
        // Nothing of this model yet: a change that changes nothing, so the next read starts after `last`.
        detail::VectorChange none;
        none.seq = last;
        none.removed = true;
        sink(none);
      }
      return true;
    }
    {
      // Changes up to `through` were pruned: an index that has seen less has missed some of them, and starts over.
      Query t(conn, changes_pruned);
      if (t.step() && static_cast<std::uint64_t>(t.int64(0)) > after) {
        detail::VectorChange reset;
        reset.reset = true;
        sink(reset);
        read_changes(conn, tenant, model, 0, limits, sink);
        return true;
      }
    }
    Query q(conn, changes_after);
    q.bind(1, tenant).bind(2, model).bind(3, static_cast<std::int64_t>(after));
    bool any = false;
    while (q.step()) {
      c.seq = static_cast<std::uint64_t>(q.int64(0));
      c.id.assign(q.text(1));
      c.version = static_cast<std::uint64_t>(q.int64(2));
      c.removed = q.int64(3) != 0;
      c.vector.clear();
      c.fields = nullptr;
      if (!c.removed) {
        vector_of(q.blob(4));  // empty when gone since: not indexed
        if (!c.vector.empty()) c.fields = filter_fields(q, 5, limits);
      }
      sink(c);
      any = true;
    }
    return any;
  }

  SearchPage search_similar(const std::string& tenant, const SearchQuery& q, const detail::PreparedSearch& p) const;
  SearchPage search_words(const std::string& tenant, const SearchQuery& q, const detail::PreparedSearch& p) const;
  SearchPage search_hybrid(const std::string& tenant, const SearchQuery& q, const detail::PreparedSearch& p) const;

  // The parts of those, each inside the caller's read transaction on `conn` (one snapshot per query).
  /// A version the word query matched: its key, its BM25 score and what matched, and its record when read.
  struct WordMatch {
    std::string id;
    std::int64_t version = 0;
    detail::SearchCandidate candidate;
  };
  /// The versions the word query matches, with the filters, each with its BM25 score and what matched; `unindexed`
  /// gets the count of the tenant's latest versions without words. With `records` false, the records are read only
  /// where the query needs them to decide (metadata conditions, words that occur only inside phrases).
  std::vector<WordMatch> word_matches(Connection& conn, const std::string& tenant, const SearchQuery& q,
                                      const detail::PreparedSearch& p, std::size_t& unindexed, bool records) const;
  /// The same, every one with its record (as hybrid fuses them).
  std::vector<detail::SearchCandidate> word_candidates(Connection& conn, const std::string& tenant,
                                                       const SearchQuery& q, const detail::PreparedSearch& p,
                                                       std::size_t& unindexed) const;
  /// A page of words alone ranked from the matches' keys (rank_search_page's order, ranks, cursor and page), the
  /// records of that page alone read (and the next one's, to know there is a next page).
  SearchPage word_page(Connection& conn, const std::string& tenant, const SearchQuery& q,
                       const detail::PreparedSearch& p, std::vector<WordMatch>& found) const;
  /// The (tenant, model) index, caught up from the change sequence; `unindexed` gets the count of the tenant's
  /// latest versions without a vector of the model (0 on a store without that embedder).
  std::shared_ptr<const detail::VectorIndex> vector_index(Connection& conn, const std::string& tenant,
                                                          const Embedding& query, std::size_t& unindexed) const;
  /// The `want` versions the index finds nearest that pass the rows (still the latest version, with a vector of
  /// the model), the filters and (when `paged`) the cursor, each scored with the exact cosine of its stored vector,
  /// best first. The index asks about each candidate as it walks, so a selective filter costs one walk, not rounds
  /// of ever larger pages: from the fields the index keeps beside each vector (detail::FilterFields), in memory,
  /// the page's rows read after the walk; or, for a version without them and for a page after a cursor, from its
  /// row. `ranked_before` (paged): how many versions that pass rank before the cursor.
  std::vector<detail::SearchCandidate> similar_candidates(Connection& conn, const std::string& tenant,
                                                          const SearchQuery& q, const detail::PreparedSearch& p,
                                                          const detail::VectorIndex& index, std::size_t want,
                                                          bool paged, std::size_t* ranked_before = nullptr) const;

  // The record in the current row of `q` (columns in `record_columns` order).
  ArtifactPtr record(const Query& q) const {
    detail::RecordRow row;
    row.tenant_id = q.text(0);
    row.id = q.text(1);
    row.version = q.int64(2);
    row.type = q.text(3);
    row.title = q.text(4);
    row.description = q.text(5);
    row.purpose = q.text(6);
    row.value = q.maybe_text(7);
    row.storage_url = q.maybe_text(8);
    row.mime_type = q.maybe_text(9);
    if (!q.is_null(10)) row.size_bytes = q.int64(10);
    row.schema_url = q.maybe_text(11);
    row.created_by = q.maybe_text(12);
    row.created_at = q.int64(13);
    row.metadata = q.text(14);
    return detail::decode_row(row, options.json_limits, where);
  }

  ArtifactPtr put(const ArtifactRecord& record, const std::uint64_t* expected, const std::optional<Embedding>& vector);

  // The record's vector, made before any transaction (the embedder may be slow).
  std::optional<Embedding> embed(const ArtifactRecord& record) const {
    if (!options.embedder) return std::nullopt;
    return std::move(detail::embed_checked(*options.embedder, {options.embedder->text_of(record)}).front());
  }

  mutable detail::VectorCache vectors{detail::VectorCache::default_max_entries,
                                      detail::VectorCache::default_max_bytes, detail::fields_column_reader()};
  // search_similar's count of unindexed versions per (tenant, model), with the change sequence it was made at.
  mutable std::mutex unindexed_mutex;
  mutable std::map<std::pair<std::string, std::string>, std::pair<std::uint64_t, std::size_t>> unindexed_counts;

  std::string path;
  SqliteOptions options;
  std::string where;
  mutable detail::ConnectionPool<Connection> pool;
};

SqliteArtifactStore::SqliteArtifactStore(std::string path, SqliteOptions options) {
  if (path.empty() || path == ":memory:" || path.rfind("file::memory:", 0) == 0) {
    throw invalid_argument(fmt::format(
        "sqlite store: path '{}' names an in-memory database, which each connection would see empty; "
        "give a file path, or use InMemoryArtifactStore",
        path));
  }
  if (options.busy_timeout_ms < 0) {
    throw invalid_argument(
        fmt::format("sqlite store: busy_timeout_ms must not be negative (got {})", options.busy_timeout_ms));
  }
  if (options.mmap_bytes < 0) {
    throw invalid_argument(
        fmt::format("sqlite store: mmap_bytes must not be negative (got {}; 0 turns the map off)", options.mmap_bytes));
  }
  if (options.page_size < 512 || options.page_size > 65536 || (options.page_size & (options.page_size - 1)) != 0) {
    throw invalid_argument(fmt::format(
        "sqlite store: page_size must be a power of two from 512 to 65536 (got {})", options.page_size));
  }
  impl_ = std::make_unique<Impl>(std::move(path), options);
  auto first = impl_->open();
  detail::sqlite_migrate(*first, Impl::schema);
  // A file from before search: index the words of what it holds (once; resumed by the next open if interrupted).
  bool words_done = false;
  {
    Impl::Query q(*first, words_done_get);
    words_done = q.step() && q.int64(0) != 0;
  }
  if (!words_done) {
    const std::uint64_t total = Impl::count_of(*first, unindexed_all, std::nullopt);
    std::uint64_t seen = 0;
    impl_->index_unindexed(*first, std::nullopt, [&](std::size_t rows) {
      seen += rows;
      impl_->report_index("open", "", std::min(seen, total), total);
    });
    Impl::WriteTransaction tx(*first);
    Impl::Query(*first, words_done_set).run();
    tx.commit();
  }
  impl_->pool.adopt(std::move(first));
}

SqliteArtifactStore::~SqliteArtifactStore() = default;

const std::string& SqliteArtifactStore::path() const noexcept { return impl_->path; }

SqliteOptions::Synchronous SqliteArtifactStore::synchronous() const noexcept { return impl_->options.synchronous; }

ArtifactPtr SqliteArtifactStore::store(const ArtifactRecord& record) {
  return impl_->put(record, nullptr, impl_->embed(record));
}

ArtifactPtr SqliteArtifactStore::store_embedded(const ArtifactRecord& record, const Embedding& embedding) {
  detail::check_tenant(record.tenant_id());
  detail::check_vector("store_embedded", embedding, impl_->options.embedder.get());
  return impl_->put(record, nullptr, embedding);
}

std::shared_ptr<Embedder> SqliteArtifactStore::embedder() const { return impl_->options.embedder; }

std::optional<Embedding> SqliteArtifactStore::embedding(const std::string& id, const std::string& tenant_id,
                                                        std::uint64_t version) const {
  detail::check_tenant(tenant_id);
  if (version == 0 || version > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    return std::nullopt;
  }
  auto conn = impl_->pool.acquire();
  Impl::Query q(*conn, vector_get);
  q.bind(1, tenant_id).bind(2, id).bind(3, static_cast<std::int64_t>(version));
  if (!q.step()) return std::nullopt;
  Embedding e;
  e.model = std::string(q.text(0));
  e.values = floats_of(q.blob(1));
  return e;
}

ArtifactPtr SqliteArtifactStore::store_if(const ArtifactRecord& record, std::uint64_t expected_version) {
  detail::check_store_if(record, expected_version);
  return impl_->put(record, &expected_version, impl_->embed(record));
}

ArtifactPtr SqliteArtifactStore::Impl::put(const ArtifactRecord& record, const std::uint64_t* expected,
                                           const std::optional<Embedding>& vector) {
  // Everything that can fail on bad input fails before the transaction starts.
  const auto& limits = options.json_limits;
  const std::optional<std::string> value =
      record.has_value() ? std::optional<std::string>(detail::dump_json_column(record.value(), "value", limits))
                         : std::nullopt;
  const std::string metadata = detail::dump_json_column(record.metadata(), "metadata", limits);
  const detail::RecordWords words = detail::record_words(record);
  std::string id = record.id().empty() ? detail::new_uuid(options.ids.get()) : record.id();
  const std::int64_t created_at =
      record.created_at() == 0 ? detail::now_ms(options.clock.get()) : record.created_at();

  auto conn = pool.acquire();
  std::int64_t version = 1;
  {
    WriteTransaction tx(*conn);
    {
      Query q(*conn, head_latest);
      q.bind(1, record.tenant_id()).bind(2, id);
      if (q.step()) version = q.int64(0) + 1;
    }
    // Checked inside the write transaction, which holds the database's write lock: nobody can move the id on
    // between this check and the insert.
    if (expected && static_cast<std::uint64_t>(version - 1) != *expected) {
      throw detail::version_conflict(record, *expected, static_cast<std::uint64_t>(version - 1));
    }
    Query(*conn, version == 1 ? head_insert : head_update)
        .bind(1, record.tenant_id())
        .bind(2, id)
        .bind(3, version)
        .bind(4, record.type().str())
        .bind(5, record.created_by())
        .run();
    Query ins(*conn, artifact_insert);
    ins.bind(1, record.tenant_id())
        .bind(2, id)
        .bind(3, version)
        .bind(4, record.type().str())
        .bind(5, record.title())
        .bind(6, record.description())
        .bind(7, record.purpose())
        .bind(8, value)
        .bind(9, record.storage_url())
        .bind(10, record.mime_type());
    if (record.size_bytes()) {
      ins.bind(11, detail::to_sql_int(*record.size_bytes()));
    } else {
      ins.bind_null(11);
    }
    ins.bind(12, record.schema_url()).bind(13, record.created_by()).bind(14, created_at).bind(15, metadata);
    ins.run();
    index_words(*conn, record.tenant_id(), id, version, record.type().str(), words);
    // The previous latest version leaves the indexes; a first version removes nothing but moves the sequence too.
    Query(*conn, change_remove).bind(1, record.tenant_id()).bind(2, id).bind(3, version - 1).run();
    if (vector) {
      Query(*conn, vector_insert)
          .bind(1, record.tenant_id())
          .bind(2, id)
          .bind(3, version)
          .bind(4, vector->model)
          .bind(5, static_cast<std::int64_t>(vector->values.size()))
          .bind_blob(6, vector->values.data(), vector->values.size() * sizeof(float))
          .run();
      Query(*conn, change_insert)
          .bind(1, record.tenant_id())
          .bind(2, vector->model)
          .bind(3, id)
          .bind(4, version)
          .bind(5, std::int64_t{0})
          .run();
    }
    prune_changes(*conn);
    tx.commit();
  }
  auto b = record.to_builder();
  b.id(std::move(id)).version(static_cast<std::uint64_t>(version)).created_at(created_at);
  return b.build();
}

ArtifactPtr SqliteArtifactStore::fetch(const std::string& id, const std::string& tenant_id,
                                       std::uint64_t version) const {
  detail::check_tenant(tenant_id);
  if (version > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return nullptr;
  auto conn = impl_->pool.acquire();
  Impl::Query q(*conn, version == latest ? fetch_latest : fetch_version);
  q.bind(1, tenant_id).bind(2, id);
  if (version != latest) q.bind(3, static_cast<std::int64_t>(version));
  if (!q.step()) return nullptr;
  return impl_->record(q);
}

void SqliteArtifactStore::remove(const std::string& id, const std::string& tenant_id) {
  detail::check_tenant(tenant_id);
  auto conn = impl_->pool.acquire();
  Impl::WriteTransaction tx(*conn);
  Impl::Query(*conn, head_delete).bind(1, tenant_id).bind(2, id).run();
  if (sqlite3_changes(conn->db()) == 0) throw not_found(detail::artifact_missing_message(id, tenant_id));
  Impl::Query(*conn, artifacts_delete).bind(1, tenant_id).bind(2, id).run();
  Impl::Query(*conn, text_delete_id).bind(1, tenant_id).bind(2, id).run();
  Impl::Query(*conn, change_remove).bind(1, tenant_id).bind(2, id).bind(3, std::int64_t{0}).run();
  Impl::Query(*conn, vectors_delete_id).bind(1, tenant_id).bind(2, id).run();
  Impl::Query(*conn, docs_delete_id).bind(1, tenant_id).bind(2, id).run();
  impl_->prune_changes(*conn);
  tx.commit();
}

std::vector<std::uint64_t> SqliteArtifactStore::versions(const std::string& id, const std::string& tenant_id) const {
  detail::check_tenant(tenant_id);
  auto conn = impl_->pool.acquire();
  Impl::Query q(*conn, versions_of);
  q.bind(1, tenant_id).bind(2, id);
  std::vector<std::uint64_t> out;
  while (q.step()) out.push_back(static_cast<std::uint64_t>(q.int64(0)));
  return out;
}

ListPage SqliteArtifactStore::list(const std::string& tenant_id, const ListQuery& query) const {
  detail::check_tenant(tenant_id);
  detail::check_list_query(query);
  // The walk starts at the prefix, or just after the cursor when that is further on ("c" + '\0' is the smallest
  // string above "c"), so a later page never rescans the earlier ones.
  std::string lower = query.prefix;
  if (!query.cursor.empty() && query.cursor >= query.prefix) {
    lower = query.cursor;
    lower.push_back('\0');
  }
  const auto upper = prefix_upper_bound(query.prefix);
  const std::optional<std::string> type =
      query.type ? std::optional<std::string>(query.type->str()) : std::nullopt;

  auto conn = impl_->pool.acquire();
  Impl::Query q(*conn, upper ? list_bounded : list_open);
  q.bind(1, tenant_id).bind(2, std::string_view(lower)).bind(3, upper).bind(4, type).bind(5, query.created_by);
  q.bind(6, static_cast<std::int64_t>(query.limit) + 1);  // one more than asked says whether another page follows
  ListPage page;
  std::size_t rows = 0;
  bool last_readable = true;
  while (q.step()) {
    if (rows == query.limit) {
      page.next_cursor = last_readable ? page.items.back()->id() : page.unreadable.back();
      break;
    }
    ++rows;
    // One row that no longer makes a valid record must not make the whole tenant unlistable.
    try {
      page.items.push_back(impl_->record(q));
      last_readable = true;
    } catch (const storage_error&) {
      page.unreadable.emplace_back(q.text(1));
      last_readable = false;
    }
  }
  return page;
}

SearchPage SqliteArtifactStore::search(const std::string& tenant_id, const SearchQuery& query) const {
  // Words alone run on the FTS5 index; similarity alone (latest versions) on the vector index, exact unless the
  // query sets ef; hybrid (latest versions, not exact) fuses the two; everything else (filters alone, exact hybrid,
  // all versions with a vector) is the default scan.
  const bool automatic = query.mode == SearchMode::automatic;
  const bool embeds = query.vector.has_value() || impl_->options.embedder != nullptr;
  const bool words_only = !query.text.empty() && (query.mode == SearchMode::text || (automatic && !embeds));
  const bool on_index = !query.all_versions;
  const bool similar_only =
      on_index && (query.mode == SearchMode::similarity || (automatic && query.text.empty() && query.vector));
  const bool hybrid = on_index && !query.exact && !query.text.empty() &&
                      (query.mode == SearchMode::hybrid || (automatic && embeds));
  if (!words_only && !similar_only && !hybrid) return ArtifactStore::search(tenant_id, query);
  const detail::PreparedSearch p = detail::prepare_search(*this, tenant_id, query);
  if (p.by_text && p.by_vector) return impl_->search_hybrid(tenant_id, query, p);
  return p.by_vector ? impl_->search_similar(tenant_id, query, p) : impl_->search_words(tenant_id, query, p);
}

std::size_t SqliteArtifactStore::reindex(const std::string& tenant_id) {
  detail::check_tenant(tenant_id);
  auto conn = impl_->pool.acquire();
  const auto& embedder = impl_->options.embedder;
  // Progress: the versions without words, and those without a vector of the model, counted now.
  const std::uint64_t total = Impl::count_of(*conn, unindexed_all, tenant_id) +
                              (embedder ? Impl::count_of(*conn, unembedded_all, tenant_id, embedder->model()) : 0);
  std::uint64_t seen = 0;
  const auto advanced = [&](std::size_t rows) {
    seen += rows;
    impl_->report_index("reindex", tenant_id, std::min(seen, total), total);
  };
  std::size_t done = impl_->index_unindexed(*conn, tenant_id, advanced);
  if (!embedder) return done;
  // Versions without a vector of the embedder's model: embedded in batches outside any transaction, each batch
  // then kept in one (a version removed, or replaced by a record stored again under its id, meanwhile is skipped),
  // so an interrupted reindex keeps what it did.
  const std::string model = embedder->model();
  std::string after_id;
  std::int64_t after_version = 0;
  for (;;) {
    std::vector<ArtifactPtr> batch;
    std::size_t rows = 0;
    {
      Impl::Query q(*conn, unembedded_next);
      q.bind(1, tenant_id).bind(2, after_id).bind(3, after_version).bind(4, model);
      while (q.step()) {
        ++rows;
        after_id = std::string(q.text(1));
        after_version = q.int64(2);
        try {
          batch.push_back(impl_->record(q));
        } catch (const storage_error&) {
        }
      }
    }
    if (rows == 0) break;
    std::vector<std::string> texts;
    for (const auto& r : batch) texts.push_back(embedder->text_of(*r));
    const std::vector<Embedding> made = detail::embed_checked(*embedder, texts);
    Impl::WriteTransaction tx(*conn);
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const auto& r = *batch[i];
      const auto version = static_cast<std::int64_t>(r.version());
      const auto& v = made[i].values;
      // Removed, or removed and stored again (versions from 1 again), while it was embedded: the vector is the
      // text of a record that is gone, not of the version there now.
      if (!impl_->still_the_record(*conn, r)) continue;
      Impl::Query(*conn, vector_upsert)
          .bind(1, tenant_id)
          .bind(2, r.id())
          .bind(3, version)
          .bind(4, model)
          .bind(5, static_cast<std::int64_t>(v.size()))
          .bind_blob(6, v.data(), v.size() * sizeof(float))
          .run();
      if (sqlite3_changes(conn->db()) == 0) continue;  // it has a vector of the model by now
      // A vector of another model it replaced leaves that model's index; the new one joins this model's.
      // Only a latest version joins an index (older ones are searched by the scan, with all_versions).
      Impl::Query(*conn, change_insert).bind(1, tenant_id).bind(2, std::string_view("", 0)).bind(3, r.id())
          .bind(4, version).bind(5, std::int64_t{1}).run();
      bool latest = false;
      {
        Impl::Query h(*conn, head_latest);
        h.bind(1, tenant_id).bind(2, r.id());
        latest = h.step() && h.int64(0) == version;
      }
      if (latest) {
        Impl::Query(*conn, change_insert).bind(1, tenant_id).bind(2, model).bind(3, r.id()).bind(4, version)
            .bind(5, std::int64_t{0}).run();
      }
      ++done;
    }
    impl_->prune_changes(*conn);
    tx.commit();
    advanced(rows);
  }
  return done;
}

std::shared_ptr<const detail::VectorIndex> SqliteArtifactStore::Impl::vector_index(Connection& conn,
                                                                                  const std::string& tenant,
                                                                                  const Embedding& query,
                                                                                  std::size_t& unindexed) const {
  std::uint64_t seen = 0;
  auto index = vectors.current(
      tenant, query.model, query.values.size(),
      [this, &conn](const std::string& t, const std::string& m, std::uint64_t after,
                    const detail::VectorChangeSink& sink) {
        return read_changes(conn, t, m, after, options.json_limits, sink);
      },
      &seen);
  // Unindexed: versions that reindex would embed (none on a store without an embedder: nothing would). Counting
  // them probes a vector row per latest version of the tenant, so the count is kept per (tenant, model) and made
  // again only when the index applied a change since (every new version, removal and vector is one).
  unindexed = 0;
  if (!options.embedder || options.embedder->model() != query.model) return index;
  const auto key = std::make_pair(tenant, query.model);
  {
    std::lock_guard lock(unindexed_mutex);
    const auto it = unindexed_counts.find(key);
    if (it != unindexed_counts.end() && it->second.first == seen) {
      unindexed = it->second.second;
      return index;
    }
  }
  {
    Query u(conn, unindexed_vectors);
    u.bind(1, tenant).bind(2, query.model);
    unindexed = u.step() ? static_cast<std::size_t>(u.int64(0)) : 0;
  }
  // Kept only when this snapshot holds every change the index applied (another query may have caught the index up
  // in a newer snapshot than this one): then it is the count at `seen`, and any later change moves the sequence.
  std::uint64_t last = 0;
  {
    Query l(conn, changes_last);
    if (l.step() && !l.is_null(0)) last = static_cast<std::uint64_t>(l.int64(0));
  }
  if (last >= seen) {
    std::lock_guard lock(unindexed_mutex);
    unindexed_counts[key] = {seen, unindexed};
  }
  return index;
}

std::vector<detail::SearchCandidate> SqliteArtifactStore::Impl::similar_candidates(
    Connection& conn, const std::string& tenant, const SearchQuery& q, const detail::PreparedSearch& p,
    const detail::VectorIndex& index, std::size_t want, bool paged, std::size_t* ranked_before) const {
  const Embedding& query = *p.vector;
  const auto& cursor = p.cursor;
  const std::size_t dimension = query.values.size();
  using Found = detail::SearchCandidate;
  struct Accepted {
    ArtifactPtr record;         // null: accepted by its kept fields, its row read after the walk
    std::vector<float> vector;  // the row's, for a hit whose index copy cannot give the exact cosine
  };
  // A candidate's row: still the latest version, with its record and (unless `record_only`: its exact score is
  // known) a vector of the model.
  const auto read_row = [&](const std::string& id, std::uint64_t version, Accepted& out, bool record_only = false) {
    if (version > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return false;
    Query row(conn, record_only ? candidate_record : candidate_get);
    row.bind(1, tenant).bind(2, id).bind(3, static_cast<std::int64_t>(version));
    if (!record_only) row.bind(4, query.model);
    if (!row.step()) return false;  // removed or replaced since the index saw it: never comes back
    try {
      out.record = record(row);
    } catch (const storage_error&) {
      return false;  // unreadable: the scan skips it too
    }
    if (record_only) return true;
    const std::string_view v = row.blob(15);
    if (v.size() != dimension * sizeof(float)) return false;
    out.vector = floats_of(v);
    return true;
  };
  // With `kept` (no cursor to page from: that needs each candidate's exact cosine), a version whose fields the index
  // kept (detail::FilterFields) is checked against the filter in memory and only the page's rows are read after the
  // walk; a version without them is read as it is reached. Without `kept`, every candidate's row is read.
  const auto walk = [&](bool kept, std::vector<Accepted>& accepted, std::size_t& before) {
    std::set<std::pair<std::string, std::uint64_t>> before_cursor;  // asked twice when the graph falls back
    const auto accept = [&](const std::string& id, std::uint64_t version, const void* tag) {
      if (id.compare(0, q.filter.id_prefix.size(), q.filter.id_prefix) != 0) return false;
      const auto* fields = static_cast<const detail::FilterFields*>(tag);
      if (kept && fields && fields->metadata) {
        if (!detail::matches_filter(id, *fields, q.filter)) return false;
        accepted.push_back({});
        return true;
      }
      Accepted a;
      if (!read_row(id, version, a) || !detail::matches_filter(*a.record, q.filter)) return false;
      if (paged && cursor && !detail::after_cursor(*cursor, detail::cosine(query.values, a.vector), *a.record)) {
        before_cursor.emplace(id, version);
        return false;
      }
      accepted.push_back(std::move(a));
      return true;
    };
    // A page ranks by the exact cosine: versions near the k-th come too (hybrid's list is the index's k, as the
    // in-memory store's).
    std::vector<detail::VectorHit> hits =
        index.search_tagged(query.values, want, accept, paged ? detail::VectorIndex::near_tie : 0, q.ef, false,
                            detail::filter_bounds(q.filter));
    before = before_cursor.size();
    return hits;
  };
  const bool kept = !(paged && cursor);
  std::vector<Accepted> accepted;  // what accept() let through, in that order (VectorHit::accepted)
  std::size_t before = 0;
  std::vector<detail::VectorHit> hits = walk(kept, accepted, before);
  if (kept) {
    // The page's rows. The index was caught up in this read transaction, so each is there and passes; one that is
    // not (another thread caught the shared index up past this snapshot) sends the query the way of the rows.
    for (const auto& hit : hits) {
      Accepted& a = accepted.at(hit.accepted);
      if (a.record) continue;
      const bool record_only = hit.exact.has_value();
      if (!read_row(hit.id, hit.version, a, record_only) || !detail::matches_filter(*a.record, q.filter)) {
        accepted.clear();
        hits = walk(false, accepted, before);
        break;
      }
    }
  }
  std::vector<Found> found;
  for (const auto& hit : hits) {
    Accepted& a = accepted.at(hit.accepted);
    // The exact score, as the scan's: from the index's copy of the vector, or from the row's when that copy is not
    // exact (VectorHit::exact).
    const double similarity = hit.exact ? *hit.exact : detail::cosine(query.values, a.vector);
    SearchMatch m;
    m.similarity = similarity;
    found.push_back({std::move(a.record), std::nullopt, similarity, std::move(m)});
  }
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
    return detail::hit_before(*a.similarity, *a.record, *b.similarity, *b.record);
  });
  if (ranked_before) *ranked_before = before;
  return found;
}

SearchPage SqliteArtifactStore::Impl::search_similar(const std::string& tenant, const SearchQuery& q,
                                                     const detail::PreparedSearch& p) const {
  auto conn = pool.acquire();
  ReadTransaction read(*conn);  // the index's catch-up and the candidates' rows see the same snapshot
  std::size_t unindexed = 0;
  const auto index = vector_index(*conn, tenant, *p.vector, unindexed);
  // A page and one more first (the candidates a plain hnswlib query returns).
  std::size_t ranked_before = 0;
  std::vector<detail::SearchCandidate> found =
      similar_candidates(*conn, tenant, q, p, *index, q.limit + 1, true, &ranked_before);
  SearchPage page = detail::rank_search_page(std::move(found), q, p, ranked_before);
  page.unindexed = unindexed;
  return page;
}

SearchPage SqliteArtifactStore::Impl::search_hybrid(const std::string& tenant, const SearchQuery& q,
                                                    const detail::PreparedSearch& p) const {
  auto conn = pool.acquire();
  ReadTransaction read(*conn);  // the words, the index's catch-up and the candidates see the same snapshot
  std::size_t word_unindexed = 0, vector_unindexed = 0;
  // Every version the words match (as search by words), fused with the 4 x limit nearest that pass the filters (as
  // the in-memory store; the cursor is applied to the fused ranking).
  std::vector<detail::SearchCandidate> found = word_candidates(*conn, tenant, q, p, word_unindexed);
  const auto index = vector_index(*conn, tenant, *p.vector, vector_unindexed);
  const std::size_t want = 4 * q.limit;
  std::vector<detail::SearchCandidate> near = similar_candidates(*conn, tenant, q, p, *index, want, false);
  if (near.size() > want) near.resize(want);
  detail::add_similar(found, std::move(near));
  SearchPage page = detail::rank_search_page(std::move(found), q, p);
  // Versions that either list could not see: the larger of the two counts.
  page.unindexed = std::max(word_unindexed, vector_unindexed);
  return page;
}

SearchPage SqliteArtifactStore::Impl::search_words(const std::string& tenant, const SearchQuery& q,
                                                   const detail::PreparedSearch& p) const {
  auto conn = pool.acquire();
  ReadTransaction read(*conn);  // the statistics, the matches and the page's records see the same snapshot
  std::size_t unindexed = 0;
  // The matches' keys and scores, ranked, and the records of the page alone; where the query needed a match's
  // record to decide it, every match was read with its record.
  std::vector<WordMatch> found = word_matches(*conn, tenant, q, p, unindexed, false);
  SearchPage page;
  if (std::any_of(found.begin(), found.end(), [](const WordMatch& m) { return m.candidate.record != nullptr; })) {
    std::vector<detail::SearchCandidate> candidates;
    for (auto& m : found) candidates.push_back(std::move(m.candidate));
    page = detail::rank_search_page(std::move(candidates), q, p);
  } else {
    page = word_page(*conn, tenant, q, p, found);
  }
  page.unindexed = unindexed;
  return page;
}

SearchPage SqliteArtifactStore::Impl::word_page(Connection& conn, const std::string& tenant, const SearchQuery& q,
                                                const detail::PreparedSearch& p, std::vector<WordMatch>& found) const {
  // detail::hit_before and detail::after_cursor, on the keys.
  std::sort(found.begin(), found.end(), [](const WordMatch& a, const WordMatch& b) {
    if (*a.candidate.bm25 != *b.candidate.bm25) return *a.candidate.bm25 > *b.candidate.bm25;
    if (const int c = a.id.compare(b.id); c != 0) return c < 0;
    return a.version > b.version;
  });
  const auto after_cursor = [&p](const WordMatch& m) {
    const detail::SearchCursor& at = *p.cursor;
    if (*m.candidate.bm25 != at.score) return *m.candidate.bm25 < at.score;
    if (const int c = m.id.compare(at.id); c != 0) return c > 0;
    return static_cast<std::uint64_t>(m.version) < at.version;
  };
  // A record that cannot be read is left out of the page (as the scan leaves it out); unlike the scan, which never
  // sees it, it keeps its place in the ranks, which are counted over the matches without reading them.
  SearchPage page;
  for (std::size_t i = 0; i < found.size(); ++i) {
    WordMatch& m = found[i];
    if (p.cursor && !after_cursor(m)) continue;
    Query r(conn, fetch_version);
    r.bind(1, tenant).bind(2, m.id).bind(3, m.version);
    if (!r.step()) continue;
    ArtifactPtr record_read;
    try {
      record_read = record(r);
    } catch (const storage_error&) {
      continue;
    }
    if (page.hits.size() == q.limit) {
      page.next_cursor = detail::encode_cursor(q, page.hits.back());
      break;
    }
    m.candidate.matched.text_rank = i + 1;
    page.hits.push_back(SearchHit{std::move(record_read), *m.candidate.bm25, std::move(m.candidate.matched)});
  }
  return page;
}

std::vector<detail::SearchCandidate> SqliteArtifactStore::Impl::word_candidates(Connection& conn,
                                                                                const std::string& tenant,
                                                                                const SearchQuery& q,
                                                                                const detail::PreparedSearch& p,
                                                                                std::size_t& unindexed) const {
  std::vector<detail::SearchCandidate> out;
  for (auto& m : word_matches(conn, tenant, q, p, unindexed, true)) out.push_back(std::move(m.candidate));
  return out;
}

std::vector<SqliteArtifactStore::Impl::WordMatch> SqliteArtifactStore::Impl::word_matches(
    Connection& conn, const std::string& tenant, const SearchQuery& q, const detail::PreparedSearch& p,
    std::size_t& unindexed, bool records) const {
  const detail::WordQuery& words = p.words;
  std::vector<WordMatch> found;
  // The tenant's statistics, kept by the writes (migration 5): BM25's N and average length over the versions
  // searched, whatever the filters (as the scan), and its latest versions without words (SearchPage::unindexed).
  std::int64_t heads = 0, latest = 0, latest_words = 0, versions = 0, version_words = 0;
  {
    Query s(conn, search_stats);
    s.bind(1, tenant);
    if (s.step()) {
      heads = s.int64(0);
      latest = s.int64(1);
      latest_words = s.int64(2);
      versions = s.int64(3);
      version_words = s.int64(4);
    }
  }
  unindexed = static_cast<std::size_t>(std::max<std::int64_t>(0, heads - latest));
  const auto number = tenant_of(conn, tenant, false);
  if (!number) return found;  // the tenant never stored anything
  const std::string prefix = tenant_prefix(*number);
  const auto upper = prefix_upper_bound(q.filter.id_prefix);
  // With every version that has words a latest one (no history), the tenant's rows of the index are the versions
  // searched: the postings alone count a word's documents, and a match needs no look at its head.
  const bool history = !q.all_versions && versions != latest;
  const std::size_t variant = (history ? 0 : 1) + (upper ? 2 : 0);
  const auto bind_scope = [&](Query& s) {
    s.bind(2, tenant).bind(3, q.filter.id_prefix).bind(4, upper);
  };
  const std::size_t documents = static_cast<std::size_t>(q.all_versions ? versions : latest);
  const std::size_t total_length = static_cast<std::size_t>(q.all_versions ? version_words : latest_words);
  const auto phrase = [&prefix](const detail::QueryTerm& t) {
    std::string out = "\"";
    for (const auto& w : t.words) out += (out.size() > 1 ? " " : "") + prefix + w;
    return out + "\"";
  };
  const std::vector<std::string> scored = words.words();
  std::vector<std::size_t> df(scored.size(), 0);
  for (std::size_t i = 0; i < scored.size(); ++i) {
    Query s(conn, history ? search_df_latest : search_df_rows);
    if (history) s.bind(2, tenant);
    const std::string match = phrase(detail::QueryTerm{{scored[i]}});
    s.bind(1, match);
    if (s.step()) df[i] = static_cast<std::size_t>(s.int64(0));
  }
  const double average = documents > 0 ? static_cast<double>(total_length) / static_cast<double>(documents) : 0;

  // The MATCH expression, from cairn's tokens, each quoted by cairn: (a OR b) AND (c) NOT (d) ... Phrases are
  // numbered in the order they appear, which is the order of cairn_hits's counts.
  std::string match;
  std::vector<int> phrase_of(scored.size(), -1);  // the single-word phrase that counts each scored word
  int phrases = 0;
  for (const auto& group : words.all_of) {
    match += match.empty() ? "(" : " AND (";
    for (std::size_t k = 0; k < group.size(); ++k) {
      match += (k ? " OR " : "") + phrase(group[k]);
      if (group[k].words.size() == 1) {
        const auto at = std::find(scored.begin(), scored.end(), group[k].words[0]) - scored.begin();
        if (phrase_of[static_cast<std::size_t>(at)] < 0) phrase_of[static_cast<std::size_t>(at)] = phrases;
      }
      ++phrases;
    }
    match += ")";
  }
  // Exclusions are a second MATCH the rows must not be in, not FTS5's NOT: under a NOT, FTS5 (3.40) reports no
  // instances of the phrases of an OR, which would lose words from the scores. With none, a term no row holds
  // (tenant numbers start at 1, so "0x" is nobody's).
  std::string excluded;
  for (const auto& t : words.none_of) excluded += (excluded.empty() ? "" : " OR ") + phrase(t);
  if (excluded.empty()) excluded = "\"0x\"";

  // The records are read with the matches where the query needs them to decide.
  records = records || !q.filter.metadata.empty() ||
            std::any_of(phrase_of.begin(), phrase_of.end(), [](int at) { return at < 0; });
  {
    Query s(conn, (records ? search_match : search_match_keys) + variant);
    bind_scope(s);
    s.bind(1, match).bind(10, excluded);
    const auto& f = q.filter;
    // Bound without a copy (SQLITE_STATIC): every bound string lives until the statement is done.
    const std::optional<std::string> type = f.type ? std::optional<std::string>(f.type->str()) : std::nullopt;
    s.bind(5, type)
        .bind(6, f.mime_type)
        .bind(7, f.created_by);
    if (f.created_after) s.bind(8, *f.created_after);
    if (f.created_before) s.bind(9, *f.created_before);
    constexpr int columns = 3;  // title, description, value
    const int hits_column = records ? 15 : 2;  // after the record's columns, or the key's
    while (s.step()) {
      WordMatch match;
      ArtifactPtr r;
      if (records) {
        try {
          r = record(s);
        } catch (const storage_error&) {
          continue;  // unreadable: the scan skips it too
        }
        if (!detail::matches_filter(*r, f)) continue;  // metadata conditions (and the rest again)
        match.id = r->id();
        match.version = static_cast<std::int64_t>(r->version());
      } else {
        match.id = std::string(s.text(0));
        match.version = s.int64(1);
      }
      const std::string_view hits = s.blob(hits_column);
      const auto length = static_cast<double>(s.int64(hits_column + 1));
      const auto count = [&hits](int phrase_index, int column) {
        std::int32_t n = 0;
        const std::size_t at = (static_cast<std::size_t>(phrase_index) * columns + static_cast<std::size_t>(column)) *
                               sizeof n;
        if (at + sizeof n <= hits.size()) std::memcpy(&n, hits.data() + at, sizeof n);
        return n;
      };
      // Words that only occur inside phrases have no count of their own: those records are read word by word.
      std::optional<detail::RecordWords> own;
      detail::SearchCandidate out{std::move(r), 0.0, std::nullopt, {}};
      bool in_title = false, in_description = false, in_value = false;
      for (std::size_t i = 0; i < scored.size(); ++i) {
        std::int32_t t = 0, d = 0, v = 0;
        if (phrase_of[i] >= 0) {
          t = count(phrase_of[i], 0);
          d = count(phrase_of[i], 1);
          v = count(phrase_of[i], 2);
        } else {
          if (!own) own = detail::record_words(*out.record);
          const auto n = [&](const std::vector<std::string>& ws) {
            return static_cast<std::int32_t>(std::count(ws.begin(), ws.end(), scored[i]));
          };
          t = n(own->title);
          d = n(own->description);
          v = n(own->value);
        }
        const double tf = static_cast<double>(t) + static_cast<double>(d) + static_cast<double>(v);
        if (tf == 0) continue;
        *out.bm25 += detail::Bm25::weight(tf, static_cast<double>(df[i]), static_cast<double>(documents), length,
                                          average);
        out.matched.words.push_back(scored[i]);
        in_title = in_title || t > 0;
        in_description = in_description || d > 0;
        in_value = in_value || v > 0;
      }
      if (in_title) out.matched.fields.emplace_back("title");
      if (in_description) out.matched.fields.emplace_back("description");
      if (in_value) out.matched.fields.emplace_back("value");
      match.candidate = std::move(out);
      found.push_back(std::move(match));
    }
  }
  return found;
}

CAIRN_END_NAMESPACE
