// SqliteArtifactStore: the schema and its migrations (SqliteArtifactStore::Impl::schema), which
// detail::sqlite_migrate brings a file up to when a store opens it.
#include <array>

#include "sqlite_store_impl.hpp"

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

}  // namespace

const detail::SqliteSchema SqliteArtifactStore::Impl::schema{"cairn_schema", SqliteArtifactStore::schema_version,
                                                             migrations.data(), "the database has"};

CAIRN_END_NAMESPACE
