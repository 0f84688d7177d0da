// PostgresArtifactStore: the SQL, the connection pool, reconnecting, and the schema migrations.
#include "cairn/store/postgres_store.hpp"

#include <libpq-fe.h>

#include <poll.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "../common/connection_pool.hpp"
#include "../common/record_columns.hpp"
#include "cairn/detail/text.hpp"
#include "cairn/detail/filter_columns.hpp"
#include "cairn/detail/vector_cache.hpp"

CAIRN_BEGIN_NAMESPACE
namespace {

// Migration i brings a database from schema version i to i + 1. Never edit a released entry: append a new one.
//
// Ids and tenants use the "C" collation so that ORDER BY and the prefix ranges of list() compare bytes (which, for
// UTF-8, is code point order) whatever the database's locale. Values and metadata are jsonb; the *_text columns
// hold the exact JSON text only when jsonb would not give it back exactly (a float, or U+0000, which jsonb
// cannot hold). write_token lets a store retried after a lost connection find out whether its first try committed.
constexpr std::array<const char*, PostgresArtifactStore::schema_version> migrations = {
    R"sql(
CREATE TABLE cairn_artifacts (
  tenant_id     text COLLATE "C" NOT NULL,
  id            text COLLATE "C" NOT NULL,
  version       bigint NOT NULL,
  type          text   NOT NULL,
  title         text   NOT NULL,
  description   text   NOT NULL,
  purpose       text   NOT NULL,
  value         jsonb,
  value_text    text,
  storage_url   text,
  mime_type     text,
  size_bytes    bigint,
  schema_url    text,
  created_by    text COLLATE "C",
  created_at    bigint NOT NULL,
  metadata      jsonb,
  metadata_text text,
  write_token   text   NOT NULL,
  PRIMARY KEY (tenant_id, id, version)
);
CREATE TABLE cairn_heads (
  tenant_id  text COLLATE "C" NOT NULL,
  id         text COLLATE "C" NOT NULL,
  latest     bigint NOT NULL,
  type       text   NOT NULL,
  created_by text COLLATE "C",
  PRIMARY KEY (tenant_id, id)
);
-- Removing is two statements in one transaction: the head row first (which waits for a store of the same id in
-- flight), then the versions, read with a snapshot taken after that store committed, so none is left behind.
CREATE FUNCTION cairn_remove_artifact(p_tenant text, p_id text) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM cairn_heads WHERE tenant_id = p_tenant AND id = p_id;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  DELETE FROM cairn_artifacts WHERE tenant_id = p_tenant AND id = p_id;
  RETURN true;
END
$$;
)sql",
    // A store retried after a lost connection must never be written twice, even when its first try is still
    // waiting on the head row's lock while the retry looks for its token (and commits afterwards): with this index,
    // of a first try and its retry exactly one can commit, and the other fails with a unique violation of
    // cairn_artifacts_write_token. Databases written before it may hold such doubled writes; their later copies
    // get a distinct token (the old one with "#<version>" appended), so the index can be built. Nothing is deleted.
    R"sql(
UPDATE cairn_artifacts a SET write_token = a.write_token || '#' || a.version
WHERE EXISTS (SELECT 1 FROM cairn_artifacts b
              WHERE b.tenant_id = a.tenant_id AND b.id = a.id AND b.write_token = a.write_token
                AND b.version < a.version);
CREATE UNIQUE INDEX cairn_artifacts_write_token ON cairn_artifacts (tenant_id, id, write_token);
)sql",
    // Search by words (docs/search.md): each version's distinct words as cairn's tokenizer makes them (so every
    // backend finds the same words), in a tsvector under a GIN index, and how many words it has (BM25's document
    // length). Rows written before this have NULL here: SearchPage::unindexed counts them until reindex() fills
    // them in. The records themselves are untouched.
    R"sql(
ALTER TABLE cairn_artifacts ADD COLUMN words tsvector, ADD COLUMN word_count integer;
CREATE INDEX cairn_artifacts_words ON cairn_artifacts USING gin (words);
)sql",
    // Search by meaning (docs/search.md): one vector per version and model (float32, little-endian, as stored by
    // the host's embedder: not normalised), and the change sequence every process's approximate index catches up
    // from. A tenant's sequence numbers come from its row in cairn_search_seq, bumped in the writing transaction,
    // whose row lock orders the tenant's vector writes: numbers are committed in order, so a reader that has seen
    // number n never sees a smaller one commit later. Removing an artifact removes its vectors and, when it had
    // any, records the removal (model '' : every model) in the same transaction.
    R"sql(
CREATE TABLE cairn_search_vectors (
  tenant_id text COLLATE "C" NOT NULL,
  id        text COLLATE "C" NOT NULL,
  version   bigint  NOT NULL,
  model     text COLLATE "C" NOT NULL,
  dim       integer NOT NULL,
  vec       bytea   NOT NULL,
  PRIMARY KEY (tenant_id, model, id, version)
);
CREATE TABLE cairn_search_seq (
  tenant_id text COLLATE "C" PRIMARY KEY,
  seq       bigint NOT NULL
);
CREATE TABLE cairn_search_changes (
  tenant_id text COLLATE "C" NOT NULL,
  seq       bigint  NOT NULL,
  id        text COLLATE "C" NOT NULL,
  version   bigint  NOT NULL,
  model     text COLLATE "C" NOT NULL,
  removed   boolean NOT NULL,
  PRIMARY KEY (tenant_id, seq)
);
CREATE OR REPLACE FUNCTION cairn_remove_artifact(p_tenant text, p_id text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  v_seq bigint;
BEGIN
  DELETE FROM cairn_heads WHERE tenant_id = p_tenant AND id = p_id;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  DELETE FROM cairn_artifacts WHERE tenant_id = p_tenant AND id = p_id;
  PERFORM 1 FROM cairn_search_vectors WHERE tenant_id = p_tenant AND id = p_id;
  IF FOUND THEN
    DELETE FROM cairn_search_vectors WHERE tenant_id = p_tenant AND id = p_id;
    INSERT INTO cairn_search_seq AS s (tenant_id, seq) VALUES (p_tenant, 1)
      ON CONFLICT (tenant_id) DO UPDATE SET seq = s.seq + 1 RETURNING seq INTO v_seq;
    INSERT INTO cairn_search_changes (tenant_id, seq, id, version, model, removed)
      VALUES (p_tenant, v_seq, p_id, 0, '', true);
  END IF;
  RETURN true;
END
$$;
)sql",
    // Words per tenant (docs/search.md, "The PostgreSQL store"), and a change sequence that is pruned (the changes up
    // to pruned_through are deleted: PostgresOptions::search_changes_kept): each tenant gets a number (`no`, never
    // reused; a tenant's row is never deleted), and its lexemes become "<no>:<word>", so the GIN index keeps one
    // posting list per tenant and word instead of one per word across every tenant. The tenant's row also keeps BM25's
    // statistics, updated by every write in its own statement: the latest versions with words (docs), their words
    // (doc_words) and the latest versions without (docs_unindexed), and the same over every version. A head row keeps
    // its latest version's word count (NULL: no words yet) and, after an update, the count it replaced
    // (prev_word_count), which the write's statement reads to update the statistics. The tenant row's lock orders
    // the tenant's writes; every write locks its head row first, so the two are always taken in one order.
    R"sql(
CREATE SEQUENCE cairn_search_tenant_no;
ALTER TABLE cairn_search_seq ADD COLUMN no bigint,
  ADD COLUMN docs bigint NOT NULL DEFAULT 0, ADD COLUMN doc_words bigint NOT NULL DEFAULT 0,
  ADD COLUMN docs_unindexed bigint NOT NULL DEFAULT 0, ADD COLUMN versions bigint NOT NULL DEFAULT 0,
  ADD COLUMN version_words bigint NOT NULL DEFAULT 0, ADD COLUMN versions_unindexed bigint NOT NULL DEFAULT 0,
  ADD COLUMN pruned_through bigint NOT NULL DEFAULT 0;
INSERT INTO cairn_search_seq (tenant_id, seq) SELECT DISTINCT tenant_id, 0 FROM cairn_artifacts
  ON CONFLICT (tenant_id) DO NOTHING;
UPDATE cairn_search_seq SET no = nextval('cairn_search_tenant_no');
ALTER TABLE cairn_search_seq ALTER COLUMN no SET NOT NULL,
  ALTER COLUMN no SET DEFAULT nextval('cairn_search_tenant_no'),
  ADD CONSTRAINT cairn_search_seq_no UNIQUE (no);
ALTER TABLE cairn_heads ADD COLUMN word_count integer, ADD COLUMN prev_word_count integer;
UPDATE cairn_heads h SET word_count = a.word_count FROM cairn_artifacts a
  WHERE a.tenant_id = h.tenant_id AND a.id = h.id AND a.version = h.latest AND a.word_count IS NOT NULL;
UPDATE cairn_search_seq s SET docs = x.docs, doc_words = x.doc_words, docs_unindexed = x.docs_unindexed
  FROM (SELECT h.tenant_id, count(a.words) AS docs, coalesce(sum(a.word_count), 0) AS doc_words,
               count(*) - count(a.words) AS docs_unindexed
        FROM cairn_heads h JOIN cairn_artifacts a ON a.tenant_id = h.tenant_id AND a.id = h.id AND a.version = h.latest
        GROUP BY h.tenant_id) x
  WHERE s.tenant_id = x.tenant_id;
UPDATE cairn_search_seq s SET versions = x.versions, version_words = x.version_words,
    versions_unindexed = x.versions_unindexed
  FROM (SELECT tenant_id, count(words) AS versions, coalesce(sum(word_count), 0) AS version_words,
               count(*) - count(words) AS versions_unindexed
        FROM cairn_artifacts GROUP BY tenant_id) x
  WHERE s.tenant_id = x.tenant_id;
DROP INDEX cairn_artifacts_words;
UPDATE cairn_artifacts a SET words = array_to_tsvector(ARRAY(
    SELECT s.no || ':' || l FROM unnest(tsvector_to_array(a.words)) AS l))
  FROM cairn_search_seq s WHERE s.tenant_id = a.tenant_id AND a.words IS NOT NULL;
CREATE INDEX cairn_artifacts_words ON cairn_artifacts USING gin (words);
-- A word search (docs/search.md): the candidates, whose words match p_match (and the filters SQL can check), and
-- the statistics BM25 scores them with, from one snapshot: the tenant's documents, their words and those not
-- indexed yet (from its row), and how many documents hold each query word (p_df, one tsquery per word). One row
-- with NULL record columns when nothing matches. The latest version of each id, or every version (p_all).
-- A function, for the two settings its plans need: a prepared statement's plan is generic (it knows no word, so
-- it cannot tell a rare word from a common one), and without stats fresh from a VACUUM the planner may think a
-- scan of the whole table cheaper than the GIN index (at 100,000 artifacts just stored: 534 ms instead of 2).
-- The only other way to the rows is every row of the tenant by its key: the tenant conditions on the version rows
-- are written (...) IS TRUE, which no index answers.
CREATE OR REPLACE FUNCTION cairn_search_words(p_all boolean, p_tenant text, p_from text, p_to text, p_df tsquery[],
    p_match tsquery, p_type text, p_mime text, p_creator text, p_after bigint, p_before bigint)
RETURNS TABLE (r_tenant_id text, r_id text, r_version bigint, r_type text, r_title text, r_description text,
    r_purpose text, r_value text, r_storage_url text, r_mime_type text, r_size_bytes bigint, r_schema_url text,
    r_created_by text, r_created_at bigint, r_metadata text, r_docs bigint, r_words bigint, r_unindexed bigint,
    r_df bigint[])
LANGUAGE plpgsql STABLE SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS $$
BEGIN
  RETURN QUERY
  SELECT f.*, CASE WHEN p_all THEN s.versions ELSE s.docs END,
         CASE WHEN p_all THEN s.version_words ELSE s.doc_words END,
         CASE WHEN p_all THEN s.versions_unindexed ELSE s.docs_unindexed END, d.df
  FROM (SELECT 1) one LEFT JOIN cairn_search_seq s ON s.tenant_id = p_tenant
  CROSS JOIN (SELECT ARRAY(SELECT (SELECT count(*) FROM cairn_artifacts a
                                   WHERE (a.tenant_id = p_tenant) IS TRUE AND a.words @@ w.q
                                     AND (p_all OR EXISTS (SELECT 1 FROM cairn_heads h WHERE h.tenant_id = p_tenant
                                                           AND h.id = a.id AND h.latest = a.version)))
                           FROM unnest(p_df) WITH ORDINALITY AS w(q, i) ORDER BY w.i) AS df) d
  LEFT JOIN (SELECT a.tenant_id::text, a.id::text, a.version, a.type, a.title, a.description, a.purpose,
                    coalesce(a.value_text, a.value::text), a.storage_url, a.mime_type, a.size_bytes, a.schema_url,
                    a.created_by::text, a.created_at, coalesce(a.metadata_text, a.metadata::text)
             FROM cairn_artifacts a
             WHERE (a.tenant_id = p_tenant AND a.id >= p_from AND (p_to IS NULL OR a.id < p_to)) IS TRUE
               AND a.words @@ p_match AND (p_type IS NULL OR a.type = p_type)
               AND (p_mime IS NULL OR a.mime_type = p_mime) AND (p_creator IS NULL OR a.created_by = p_creator)
               AND (p_after IS NULL OR a.created_at >= p_after) AND (p_before IS NULL OR a.created_at < p_before)
               AND (p_all OR EXISTS (SELECT 1 FROM cairn_heads h WHERE h.tenant_id = p_tenant AND h.id = a.id
                                     AND h.latest = a.version))) f
  ON true;
END
$$;
CREATE OR REPLACE FUNCTION cairn_remove_artifact(p_tenant text, p_id text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  v_seq bigint;
  v_latest_words integer;
  v_versions bigint;
  v_version_words bigint;
  v_unindexed bigint;
  v_vectors boolean;
BEGIN
  DELETE FROM cairn_heads WHERE tenant_id = p_tenant AND id = p_id RETURNING word_count INTO v_latest_words;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  WITH gone AS (DELETE FROM cairn_artifacts WHERE tenant_id = p_tenant AND id = p_id RETURNING word_count)
  SELECT count(word_count), coalesce(sum(word_count), 0), count(*) - count(word_count)
    INTO v_versions, v_version_words, v_unindexed FROM gone;
  PERFORM 1 FROM cairn_search_vectors WHERE tenant_id = p_tenant AND id = p_id;
  v_vectors := FOUND;
  IF v_vectors THEN
    DELETE FROM cairn_search_vectors WHERE tenant_id = p_tenant AND id = p_id;
  END IF;
  UPDATE cairn_search_seq SET seq = seq + v_vectors::integer,
      docs = docs - (v_latest_words IS NOT NULL)::integer, doc_words = doc_words - coalesce(v_latest_words, 0),
      docs_unindexed = docs_unindexed - (v_latest_words IS NULL)::integer,
      versions = versions - v_versions, version_words = version_words - v_version_words,
      versions_unindexed = versions_unindexed - v_unindexed
    WHERE tenant_id = p_tenant RETURNING seq INTO v_seq;
  IF v_vectors THEN
    INSERT INTO cairn_search_changes (tenant_id, seq, id, version, model, removed)
      VALUES (p_tenant, v_seq, p_id, 0, '', true);
  END IF;
  RETURN true;
END
$$;
)sql",
    // A word search of a tenant whose versions with words are all latest ones (no history: its row's versions equal
    // its docs) counts a word's documents and takes its matches without looking at cairn_heads: every version the
    // GIN index holds for it is one searched. Otherwise as before (migration 5).
    R"sql(
CREATE OR REPLACE FUNCTION cairn_search_words(p_all boolean, p_tenant text, p_from text, p_to text, p_df tsquery[],
    p_match tsquery, p_type text, p_mime text, p_creator text, p_after bigint, p_before bigint)
RETURNS TABLE (r_tenant_id text, r_id text, r_version bigint, r_type text, r_title text, r_description text,
    r_purpose text, r_value text, r_storage_url text, r_mime_type text, r_size_bytes bigint, r_schema_url text,
    r_created_by text, r_created_at bigint, r_metadata text, r_docs bigint, r_words bigint, r_unindexed bigint,
    r_df bigint[])
LANGUAGE plpgsql STABLE SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  v_every boolean;  -- every version with words is one searched
BEGIN
  SELECT p_all OR coalesce(s.versions = s.docs, false) INTO v_every
    FROM (SELECT 1) one LEFT JOIN cairn_search_seq s ON s.tenant_id = p_tenant;
  RETURN QUERY
  SELECT f.*, CASE WHEN p_all THEN s.versions ELSE s.docs END,
         CASE WHEN p_all THEN s.version_words ELSE s.doc_words END,
         CASE WHEN p_all THEN s.versions_unindexed ELSE s.docs_unindexed END, d.df
  FROM (SELECT 1) one LEFT JOIN cairn_search_seq s ON s.tenant_id = p_tenant
  CROSS JOIN (SELECT ARRAY(SELECT (SELECT count(*) FROM cairn_artifacts a
                                   WHERE (a.tenant_id = p_tenant) IS TRUE AND a.words @@ w.q
                                     AND (v_every OR EXISTS (SELECT 1 FROM cairn_heads h WHERE h.tenant_id = p_tenant
                                                             AND h.id = a.id AND h.latest = a.version)))
                           FROM unnest(p_df) WITH ORDINALITY AS w(q, i) ORDER BY w.i) AS df) d
  LEFT JOIN (SELECT a.tenant_id::text, a.id::text, a.version, a.type, a.title, a.description, a.purpose,
                    coalesce(a.value_text, a.value::text), a.storage_url, a.mime_type, a.size_bytes, a.schema_url,
                    a.created_by::text, a.created_at, coalesce(a.metadata_text, a.metadata::text)
             FROM cairn_artifacts a
             WHERE (a.tenant_id = p_tenant AND a.id >= p_from AND (p_to IS NULL OR a.id < p_to)) IS TRUE
               AND a.words @@ p_match AND (p_type IS NULL OR a.type = p_type)
               AND (p_mime IS NULL OR a.mime_type = p_mime) AND (p_creator IS NULL OR a.created_by = p_creator)
               AND (p_after IS NULL OR a.created_at >= p_after) AND (p_before IS NULL OR a.created_at < p_before)
               AND (v_every OR EXISTS (SELECT 1 FROM cairn_heads h WHERE h.tenant_id = p_tenant AND h.id = a.id
                                       AND h.latest = a.version))) f
  ON true;
END
$$;
)sql",
};

// The unique index that makes a retried write happen at most once (migration 2).
constexpr std::string_view write_token_index = "cairn_artifacts_write_token";

// Any number, as long as every cairn uses the same one: it serializes migrations of concurrent processes.
constexpr const char* migration_lock = "SELECT pg_advisory_xact_lock(7361283749120)";

constexpr const char* record_columns =
    "tenant_id, id, version, type, title, description, purpose, coalesce(value_text, value::text), storage_url, "
    "mime_type, size_bytes, schema_url, created_by, created_at, coalesce(metadata_text, metadata::text)";

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

constexpr std::array<const char*, statement_count> statement_names = {
    "cairn_store", "cairn_store_create", "cairn_store_replace", "cairn_head_version", "cairn_find_token",
    "cairn_fetch_latest", "cairn_fetch_version", "cairn_versions", "cairn_remove", "cairn_list_bounded",
    "cairn_list_open", "cairn_search_latest", "cairn_search_all", "cairn_fetch_vector", "cairn_read_changes",
    "cairn_fetch_candidates", "cairn_reindex_count", "cairn_reindex_batch", "cairn_reindex_words",
    "cairn_reindex_vector", "cairn_vectors_latest", "cairn_vectors_all", "cairn_tenant_number", "cairn_tenant_create",
    "cairn_prune_changes", "cairn_all_vectors", "cairn_reindex_finish"};

std::string statement_sql(Stmt s) {
  // One statement bumps (or creates) the head row and inserts the version it got: the head row's lock orders
  // concurrent writers of one id, and the primary key would refuse a duplicate version if anything went wrong.
  const std::string list_select = fmt::format(
      "SELECT a.tenant_id, a.id, a.version, a.type, a.title, a.description, a.purpose, "
      "coalesce(a.value_text, a.value::text), a.storage_url, a.mime_type, a.size_bytes, a.schema_url, a.created_by, "
      "a.created_at, coalesce(a.metadata_text, a.metadata::text) "
      "FROM cairn_heads h JOIN cairn_artifacts a "
      "ON a.tenant_id = h.tenant_id AND a.id = h.id AND a.version = h.latest "
      "WHERE h.tenant_id = $1::text AND h.id >= $2::text {{}} AND h.id > $4::text "
      "AND ($5::text IS NULL OR h.type = $5::text) AND ($6::text IS NULL OR h.created_by = $6::text) "
      "ORDER BY h.id LIMIT $7::bigint");
  // The version row is inserted from what the head statement returned: when a conditional head statement
  // matches nothing (the id exists, or moved on), nothing at all is written and the statement returns no row.
  //
  // Then the tenant's row (made before the tenant's first write, for the number that prefixes its lexemes in $18):
  // BM25's statistics move by what the head statement replaced (head.prev_word_count, the previous latest
  // version's word count: NULL when it had no words or the id is new, head.latest = 1), and the change sequence
  // by one when the record has a vector.
  const std::string insert_version =
      ", t AS (INSERT INTO cairn_search_seq AS s (tenant_id, no, seq, docs, doc_words, docs_unindexed, versions, "
      "version_words, versions_unindexed) "
      "SELECT $1::text, CASE WHEN EXISTS (SELECT 1 FROM cairn_search_seq WHERE tenant_id = $1::text) THEN 0 "
      "ELSE nextval('cairn_search_tenant_no') END, CASE WHEN $20::bytea IS NULL THEN 0 ELSE 1 END, "
      "CASE WHEN head.latest = 1 OR head.prev_word_count IS NULL THEN 1 ELSE 0 END, "
      "$19::integer - coalesce(head.prev_word_count, 0), "
      "CASE WHEN head.latest > 1 AND head.prev_word_count IS NULL THEN -1 ELSE 0 END, 1, $19::integer, 0 FROM head "
      "ON CONFLICT (tenant_id) DO UPDATE SET seq = s.seq + EXCLUDED.seq, docs = s.docs + EXCLUDED.docs, "
      "doc_words = s.doc_words + EXCLUDED.doc_words, docs_unindexed = s.docs_unindexed + EXCLUDED.docs_unindexed, "
      "versions = s.versions + 1, version_words = s.version_words + EXCLUDED.version_words "
      "RETURNING no, seq, pruned_through), "
      "ins AS (INSERT INTO cairn_artifacts (tenant_id, id, version, type, title, description, purpose, value, "
      "value_text, storage_url, mime_type, created_by, size_bytes, schema_url, created_at, metadata, "
      "metadata_text, write_token, words, word_count) "
      "SELECT $1::text, $2::text, head.latest, $3::text, $4::text, $5::text, $6::text, $7::jsonb, $8::text, "
      "$9::text, $10::text, $11::text, $12::bigint, $13::text, $14::bigint, $15::jsonb, $16::text, $17::text, "
      "$18::tsvector, $19::integer FROM head RETURNING version)";
  // The version's vector ($20, float32 bytes; $21 its model) and its change, in the same statement: nothing when
  // the record has none, or when the version row was not written.
  const std::string insert_vector =
      ", vec AS (INSERT INTO cairn_search_vectors (tenant_id, id, version, model, dim, vec) "
      "SELECT $1::text, $2::text, version, $21::text, length($20::bytea) / 4, $20::bytea FROM ins "
      "WHERE $20::bytea IS NOT NULL), "
      "chg AS (INSERT INTO cairn_search_changes (tenant_id, seq, id, version, model, removed) "
      "SELECT $1::text, t.seq, $2::text, ins.version, $21::text, false FROM t, ins WHERE $20::bytea IS NOT NULL) "
      "SELECT ins.version, t.seq, t.pruned_through FROM ins, t";
  // The rows exact similarity looks at: the latest version of each id, or every version, of the tenant's ids in
  // [$2, $3) (the filter's id prefix). (Word searches are cairn_search_words, migration 5.)
  const std::string scope_latest =
      "FROM cairn_heads h JOIN cairn_artifacts a "
      "ON a.tenant_id = h.tenant_id AND a.id = h.id AND a.version = h.latest "
      "WHERE h.tenant_id = $1::text AND h.id >= $2::text AND ($3::text IS NULL OR h.id < $3::text)";
  const std::string scope_all =
      "FROM cairn_artifacts a WHERE a.tenant_id = $1::text AND a.id >= $2::text "
      "AND ($3::text IS NULL OR a.id < $3::text)";
  // A word search is the function cairn_search_words (migration 5: why a function), its parameters this statement's.
  const auto search_sql = [](const char* all_versions) {
    return fmt::format("SELECT * FROM cairn_search_words({}, $1::text, $2::text, $3::text, $4::tsquery[], "
                       "$5::tsquery, $6::text, $7::text, $8::text, $9::bigint, $10::bigint)",
                       all_versions);
  };
  // Exact similarity: every version in scope with a vector of the model $4 and dimension $5, after the filters.
  const auto vectors_sql = [](std::string scope) {
    scope.insert(scope.find(" WHERE "), " JOIN cairn_search_vectors v ON v.tenant_id = a.tenant_id "
                                        "AND v.model = $4::text AND v.id = a.id AND v.version = a.version "
                                        "AND v.dim = $5::integer");
    return fmt::format(
        "SELECT a.tenant_id, a.id, a.version, a.type, a.title, a.description, a.purpose, "
        "coalesce(a.value_text, a.value::text), a.storage_url, a.mime_type, a.size_bytes, a.schema_url, "
        "a.created_by, a.created_at, coalesce(a.metadata_text, a.metadata::text), v.vec {} "
        "AND ($6::text IS NULL OR a.type = $6::text) AND ($7::text IS NULL OR a.mime_type = $7::text) "
        "AND ($8::text IS NULL OR a.created_by = $8::text) AND ($9::bigint IS NULL OR a.created_at >= $9::bigint) "
        "AND ($10::bigint IS NULL OR a.created_at < $10::bigint)",
        scope);
  };
  // A version reindex() has work for: no words yet, or (with a model $2) no vector of that model.
  const std::string unindexed_version =
      "(a.words IS NULL OR ($2::text IS NOT NULL AND NOT EXISTS (SELECT 1 FROM cairn_search_vectors v "
      "WHERE v.tenant_id = a.tenant_id AND v.model = $2::text AND v.id = a.id AND v.version = a.version)))";
  switch (s) {
    case store_version:
      return "WITH head AS ("
             "INSERT INTO cairn_heads AS h (tenant_id, id, latest, type, created_by, word_count) "
             "VALUES ($1::text, $2::text, 1, $3::text, $11::text, $19::integer) "
             "ON CONFLICT (tenant_id, id) DO UPDATE "
             "SET latest = h.latest + 1, type = EXCLUDED.type, created_by = EXCLUDED.created_by, "
             "word_count = EXCLUDED.word_count, prev_word_count = h.word_count "
             "RETURNING latest, prev_word_count)" +
             insert_version + insert_vector;
    case store_create:
      // ON CONFLICT DO NOTHING waits for a concurrent creator of the same id and then does nothing.
      return "WITH head AS ("
             "INSERT INTO cairn_heads (tenant_id, id, latest, type, created_by, word_count) "
             "VALUES ($1::text, $2::text, 1, $3::text, $11::text, $19::integer) "
             "ON CONFLICT (tenant_id, id) DO NOTHING RETURNING latest, prev_word_count)" +
             insert_version + insert_vector;
    case store_replace:
      // Under READ COMMITTED an UPDATE that waited for a concurrent writer's row lock re-checks its WHERE clause
      // on the row that writer left: if it moved the version on, this matches nothing.
      return "WITH head AS ("
             "UPDATE cairn_heads SET latest = latest + 1, type = $3::text, created_by = $11::text, "
             "word_count = $19::integer, prev_word_count = word_count "
             "WHERE tenant_id = $1::text AND id = $2::text AND latest = $22::bigint "
             "RETURNING latest, prev_word_count)" +
             insert_version + insert_vector;
    case head_version:
      return "SELECT latest FROM cairn_heads WHERE tenant_id = $1::text AND id = $2::text";
    case find_token:
      return "SELECT version FROM cairn_artifacts "
             "WHERE tenant_id = $1::text AND id = $2::text AND write_token = $3::text";
    case fetch_latest:
      return fmt::format("SELECT {} FROM cairn_artifacts WHERE tenant_id = $1::text AND id = $2::text "
                         "ORDER BY version DESC LIMIT 1",
                         record_columns);
    case fetch_version:
      return fmt::format("SELECT {} FROM cairn_artifacts "
                         "WHERE tenant_id = $1::text AND id = $2::text AND version = $3::bigint",
                         record_columns);
    case versions_of:
      return "SELECT version FROM cairn_artifacts WHERE tenant_id = $1::text AND id = $2::text ORDER BY version";
    case remove_artifact: return "SELECT cairn_remove_artifact($1::text, $2::text)";
    case list_bounded: return fmt::format(list_select, "AND h.id < $3::text");
    case list_open: return fmt::format(list_select, "AND $3::text IS NULL");
    case search_latest: return search_sql("false");
    case vectors_latest: return vectors_sql(scope_latest);
    case vectors_all: return vectors_sql(scope_all);
    case search_all: return search_sql("true");
    case fetch_vector:
      // The store's model first when it has one ($4), else any (the first by name).
      return "SELECT model, vec FROM cairn_search_vectors "
             "WHERE tenant_id = $1::text AND id = $2::text AND version = $3::bigint "
             "ORDER BY model = $4::text DESC, model LIMIT 1";
    case read_changes:
      // A (tenant, model)'s changes after $2, with the vectors they add (gone when removed since: nothing to add).
      // Column 5 (on every row; one row with NULL change columns when there is none): the sequence number up to
      // which changes were pruned.
      // Columns 6-10: what a filter reads of each added version (detail::FilterFields), kept beside its vector.
      return "SELECT c.seq, c.id, c.version, c.removed, c.vec, s.pruned_through, c.type, c.mime_type, "
             "c.created_by, c.created_at, c.metadata FROM cairn_search_seq s "
             "LEFT JOIN (SELECT c.seq, c.id, c.version, c.removed, v.vec, a.type, a.mime_type, a.created_by, "
             "a.created_at, coalesce(a.metadata_text, a.metadata::text) AS metadata FROM cairn_search_changes c "
             "LEFT JOIN cairn_search_vectors v ON v.tenant_id = c.tenant_id AND v.model = c.model AND v.id = c.id "
             "AND v.version = c.version AND v.dim = $4::integer "
             "LEFT JOIN cairn_artifacts a ON a.tenant_id = v.tenant_id AND a.id = v.id AND a.version = v.version "
             "WHERE c.tenant_id = $1::text AND c.seq > $2::bigint AND (c.model = $3::text OR c.removed) "
             "ORDER BY c.seq LIMIT 1000) c ON true WHERE s.tenant_id = $1::text ORDER BY c.seq";
    case fetch_candidates:
      // The versions an approximate index proposed ($2 ids, $3 versions) that are still there, still the latest
      // unless every version is searched ($5), and have a vector of the model $4: the rows decide, not the index.
      // The vector itself only where $7 asks for it (the index's copy gives the rest their exact cosine).
      // And, from the same snapshot, whether the (tenant, model) changed after $6, the change the index has seen
      // (column 16, on every row; one row with NULL record columns when no candidate is there): when it did not,
      // the index held every change committed before this statement, and one round trip answers the query.
      return fmt::format(
          "SELECT f.*, ch.changed FROM (SELECT EXISTS (SELECT 1 FROM cairn_search_changes x "
          "WHERE x.tenant_id = $1::text AND x.seq > $6::bigint AND (x.model = $4::text OR x.removed)) AS changed) ch "
          "LEFT JOIN (SELECT {}, CASE WHEN c.read THEN v.vec END FROM "
          "unnest($2::text[], $3::bigint[], $7::boolean[]) AS c(id, version, read) "
          "JOIN cairn_artifacts a ON a.tenant_id = $1::text AND a.id = c.id AND a.version = c.version "
          "JOIN cairn_search_vectors v ON v.tenant_id = $1::text AND v.model = $4::text AND v.id = c.id "
          "AND v.version = c.version "
          "WHERE $5::boolean OR EXISTS (SELECT 1 FROM cairn_heads h WHERE h.tenant_id = $1::text AND h.id = a.id "
          "AND h.latest = a.version)) f ON true",
          "a.tenant_id, a.id, a.version, a.type, a.title, a.description, a.purpose, "
          "coalesce(a.value_text, a.value::text), a.storage_url, a.mime_type, a.size_bytes, a.schema_url, "
          "a.created_by, a.created_at, coalesce(a.metadata_text, a.metadata::text)");
    case reindex_count:
      return "SELECT count(*) FROM cairn_artifacts a WHERE a.tenant_id = $1::text AND " + unindexed_version;
    case reindex_batch:
      // In (id, version) order after ($3, $4), so a call never looks at a version twice (one that cannot be
      // read is passed over) and a later call starts again from what is still not indexed.
      return fmt::format(
          "SELECT {}, a.words IS NULL, a.write_token FROM cairn_artifacts a WHERE a.tenant_id = $1::text AND "
          "(a.id > $3::text OR (a.id = $3::text AND a.version > $4::bigint)) AND {} "
          "ORDER BY a.id, a.version LIMIT 64",
          "a.tenant_id, a.id, a.version, a.type, a.title, a.description, a.purpose, "
          "coalesce(a.value_text, a.value::text), a.storage_url, a.mime_type, a.size_bytes, a.schema_url, "
          "a.created_by, a.created_at, coalesce(a.metadata_text, a.metadata::text)",
          unindexed_version);
    case reindex_words:
      // The head row is locked first (as every write does), then the version gets its words unless it has some
      // by now, and when it is the latest, its head row gets its word count. One row when it was written: whether
      // it is the latest (for the statistics, which reindex_finish updates). Only while the version is the record
      // reindex read (its write token $6, new at every store): an id removed and stored again has versions from 1
      // again, other records.
      return "WITH head AS (SELECT latest FROM cairn_heads WHERE tenant_id = $1::text AND id = $2::text FOR UPDATE), "
             "up AS (UPDATE cairn_artifacts a SET words = $4::tsvector, word_count = $5::integer FROM head "
             "WHERE a.tenant_id = $1::text AND a.id = $2::text AND a.version = $3::bigint "
             "AND a.words IS NULL AND a.write_token = $6::text RETURNING a.version = head.latest AS latest), "
             "h AS (UPDATE cairn_heads SET word_count = $5::integer FROM up "
             "WHERE up.latest AND tenant_id = $1::text AND id = $2::text) "
             "SELECT latest FROM up";
    case reindex_vector:
      // The head row is locked first, so a removal of the id waits for this (or went first: then nothing is
      // written), and no vector outlives its artifact. Written only for the record it was made from (its write
      // token $6): not for a record stored again under the id since, whose versions start at 1 again.
      return "WITH head AS (SELECT 1 FROM cairn_heads WHERE tenant_id = $1::text AND id = $2::text FOR SHARE), "
             "vec AS (INSERT INTO cairn_search_vectors (tenant_id, id, version, model, dim, vec) "
             "SELECT $1::text, $2::text, $3::bigint, $4::text, length($5::bytea) / 4, $5::bytea FROM head "
             "WHERE EXISTS (SELECT 1 FROM cairn_artifacts WHERE tenant_id = $1::text AND id = $2::text "
             "AND version = $3::bigint AND write_token = $6::text) ON CONFLICT DO NOTHING RETURNING version) "
             "SELECT count(*) FROM vec";
    case tenant_number: return "SELECT no FROM cairn_search_seq WHERE tenant_id = $1::text";
    case prune_sequence:
      // The changes up to $2 go, and the tenant's row says so, in one statement: a reader sees both or neither.
      return "WITH t AS (UPDATE cairn_search_seq SET pruned_through = $2::bigint "
             "WHERE tenant_id = $1::text AND pruned_through < $2::bigint RETURNING pruned_through) "
             "DELETE FROM cairn_search_changes c USING t WHERE c.tenant_id = $1::text AND c.seq <= t.pruned_through";
    case all_vectors:
      // Every vector of (tenant $1, model $2, dimension $3) and the sequence number they are current at, from one
      // snapshot (the first row has them; NULL vector columns when there is none): how an index starts.
      // Columns 4-8: what a filter reads of each version (detail::FilterFields), kept beside its vector.
      return "SELECT s.seq, v.id, v.version, v.vec, a.type, a.mime_type, a.created_by, a.created_at, "
             "coalesce(a.metadata_text, a.metadata::text) FROM cairn_search_seq s "
             "LEFT JOIN cairn_search_vectors v ON v.tenant_id = s.tenant_id AND v.model = $2::text "
             "AND v.dim = $3::integer "
             "LEFT JOIN cairn_artifacts a ON a.tenant_id = v.tenant_id AND a.id = v.id AND a.version = v.version "
             "WHERE s.tenant_id = $1::text";
    case tenant_create:
      // Returns no row when another process is creating the tenant's row at the same moment: ask again.
      return "WITH ins AS (INSERT INTO cairn_search_seq (tenant_id, no, seq) "
             "SELECT $1::text, nextval('cairn_search_tenant_no'), 0 "
             "WHERE NOT EXISTS (SELECT 1 FROM cairn_search_seq WHERE tenant_id = $1::text) "
             "ON CONFLICT (tenant_id) DO NOTHING RETURNING no) "
             "SELECT no FROM ins UNION ALL SELECT no FROM cairn_search_seq WHERE tenant_id = $1::text";
    case reindex_finish:
      // A reindex batch's last statement: the tenant's statistics count the versions it gave words ($2 of them
      // latest, with $3 words; $4 versions in all, with $5 words), and the vectors it added ($6 ids, $7 versions,
      // of the model $8) get their changes, numbered in order. Its items did not touch the tenant's row: a write
      // locks its head row and then the tenant's, so a batch that held the tenant's row while it locked more head
      // rows could deadlock with one.
      return "WITH t AS (INSERT INTO cairn_search_seq AS s (tenant_id, no, seq, docs, doc_words, docs_unindexed, "
             "versions, version_words, versions_unindexed) "
             "SELECT $1::text, CASE WHEN EXISTS (SELECT 1 FROM cairn_search_seq WHERE tenant_id = $1::text) THEN 0 "
             "ELSE nextval('cairn_search_tenant_no') END, cardinality($6::text[]), $2::bigint, $3::bigint, "
             "-$2::bigint, $4::bigint, $5::bigint, -$4::bigint "
             "ON CONFLICT (tenant_id) DO UPDATE SET seq = s.seq + EXCLUDED.seq, docs = s.docs + EXCLUDED.docs, "
             "doc_words = s.doc_words + EXCLUDED.doc_words, "
             "docs_unindexed = s.docs_unindexed + EXCLUDED.docs_unindexed, "
             "versions = s.versions + EXCLUDED.versions, version_words = s.version_words + EXCLUDED.version_words, "
             "versions_unindexed = s.versions_unindexed + EXCLUDED.versions_unindexed RETURNING seq) "
             "INSERT INTO cairn_search_changes (tenant_id, seq, id, version, model, removed) "
             "SELECT $1::text, t.seq - cardinality($6::text[]) + c.n, c.id, c.version, $8::text, false "
             "FROM t, unnest($6::text[], $7::bigint[]) WITH ORDINALITY AS c(id, version, n)";
    case statement_count: break;
  }
  return {};
}

/// Thrown inside the store when the server went away; the call reconnects and retries once.
class connection_lost : public storage_error {
 public:
  using storage_error::storage_error;
};

/// Thrown when a write failed because a write with its token is already there (the index write_token_index): a
/// first try of the same call committed, or will, first. Nothing of this statement was written.
class token_taken : public storage_error {
 public:
  using storage_error::storage_error;
};

/// Thrown when a statement lost a race it may simply run again: a serialization failure or deadlock (under a
/// stricter default isolation level than READ COMMITTED), or a unique violation. The statement was rolled back.
class write_conflict : public storage_error {
 public:
  using storage_error::storage_error;
};

using Result = std::unique_ptr<PGresult, decltype(&PQclear)>;

bool fits_pg_text(std::string_view s) noexcept {
  return s.find('\0') == std::string_view::npos && detail::is_valid_utf8(s);
}

/// The smallest UTF-8 string above every string that starts with `prefix` (valid UTF-8) in code point order, or
/// nothing when there is none.
std::optional<std::string> utf8_upper_bound(const std::string& prefix) {
  std::vector<std::uint32_t> cps;
  for (std::size_t i = 0; i < prefix.size();) {
    const auto c = static_cast<unsigned char>(prefix[i]);
    const std::size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : 4;
    std::uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1Fu) : len == 3 ? (c & 0x0Fu) : (c & 0x07u);
    for (std::size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(prefix[i + k]) & 0x3Fu);
    cps.push_back(cp);
    i += len;
  }
  while (!cps.empty() && cps.back() == 0x10FFFF) cps.pop_back();
  if (cps.empty()) return std::nullopt;
  cps.back() = cps.back() == 0xD7FF ? 0xE000 : cps.back() + 1;
  std::string out;
  for (std::uint32_t cp : cps) detail::append_utf8(out, cp);

  return out;
}

/// The ids that start with the bytes of a list() prefix, as a range [lower, upper) of PostgreSQL text ("C"
/// collation: byte order, which for UTF-8 is code point order); no upper bound when `upper` is unset.
struct PrefixRange {
  std::string lower;
  std::optional<std::string> upper;
};

/// The range of valid UTF-8 strings that start with the bytes of `prefix`, or nothing when none can (stored ids
/// are valid UTF-8). list() matches prefixes byte-wise on every backend, so a prefix cut inside a UTF-8 sequence
/// ("caf\xC3", the start of "café") matches the ids whose next code point begins with those bytes; PostgreSQL text
/// cannot hold the cut prefix itself, so the range is spelled with whole code points.
std::optional<PrefixRange> prefix_range(const std::string& prefix) {
  const std::size_t head = detail::valid_utf8_prefix_length(prefix);
  if (head == prefix.size()) return PrefixRange{prefix, utf8_upper_bound(prefix)};
  const std::string_view tail = std::string_view(prefix).substr(head);
  const auto lead = static_cast<unsigned char>(tail[0]);
  const std::size_t len = lead >= 0xC2 && lead <= 0xDF ? 2 : lead >= 0xE0 && lead <= 0xEF ? 3
                          : lead >= 0xF0 && lead <= 0xF4 ? 4 : 0;
  // A byte that cannot start a sequence, or a whole (so invalid) sequence, or more text after a cut one.
  if (len == 0 || tail.size() >= len) return std::nullopt;
  std::uint32_t lo = lead & (len == 2 ? 0x1Fu : len == 3 ? 0x0Fu : 0x07u);
  for (std::size_t k = 1; k < tail.size(); ++k) {
    const auto c = static_cast<unsigned char>(tail[k]);
    if ((c & 0xC0) != 0x80) return std::nullopt;
    lo = (lo << 6) | (c & 0x3Fu);
  }
  std::uint32_t hi = lo;
  for (std::size_t k = tail.size(); k < len; ++k) {
    lo <<= 6;
    hi = (hi << 6) | 0x3Fu;
  }
  // Only the code points this length may encode (no overlong forms), and no surrogates.
  lo = std::max(lo, len == 2 ? 0x80u : len == 3 ? 0x800u : 0x10000u);
  hi = std::min(hi, len == 2 ? 0x7FFu : len == 3 ? 0xFFFFu : 0x10FFFFu);
  if (lo >= 0xD800 && lo <= 0xDFFF) lo = 0xE000;
  if (hi >= 0xD800 && hi <= 0xDFFF) hi = 0xD7FF;
  if (lo > hi) return std::nullopt;
  PrefixRange range{prefix.substr(0, head), std::nullopt};
  detail::append_utf8(range.lower, lo);
  std::string top = prefix.substr(0, head);
  detail::append_utf8(top, hi);
  range.upper = utf8_upper_bound(top);
  return range;
}

/// The conditions of a search filter that SQL checks (the id prefix as a range, type, creation time; MIME type and
/// creator are passed as they are), as statement parameters; nothing when no stored row can match.
struct SqlFilter {
  PrefixRange range;
  std::optional<std::string> type, after, before;
};

std::optional<SqlFilter> sql_filter(const std::string& tenant_id, const SearchFilter& f) {
  auto range = f.id_prefix.find('\0') == std::string::npos ? prefix_range(f.id_prefix) : std::nullopt;
  if (!fits_pg_text(tenant_id) || !range || (f.mime_type && !fits_pg_text(*f.mime_type)) ||
      (f.created_by && !fits_pg_text(*f.created_by))) {
    return std::nullopt;
  }
  const auto int_text = [](const std::optional<std::int64_t>& v) {
    return v ? std::optional<std::string>(std::to_string(*v)) : std::nullopt;
  };
  return SqlFilter{std::move(*range), f.type ? std::optional<std::string>(f.type->str()) : std::nullopt,
                   int_text(f.created_after), int_text(f.created_before)};
}

/// A JSON value as the two columns keep it: `jsonb` for SQL, `text` only when jsonb would change it.
struct JsonColumns {
  std::optional<std::string> jsonb;
  std::optional<std::string> text;
};

JsonColumns json_columns(const nlohmann::json& j, const char* field, const JsonLimits& limits) {
  std::string text = detail::dump_json_column(j, field, limits);
  // jsonb keeps integers and strings exactly, but rewrites numbers with a fraction or exponent (1e19 comes back
  // as an integer, -0.0 as 0) and refuses U+0000. Walk the value once to see which case this is.
  bool has_float = false;
  bool has_nul = false;
  std::vector<const nlohmann::json*> todo{&j};
  while (!todo.empty() && !has_nul) {
    const auto* node = todo.back();
    todo.pop_back();
    if (node->is_number_float()) {
      has_float = true;
    } else if (node->is_string()) {
      has_nul = node->get_ref<const std::string&>().find('\0') != std::string::npos;
    } else if (node->is_object()) {
      for (const auto& [key, child] : node->items()) {
        if (key.find('\0') != std::string::npos) has_nul = true;
        todo.push_back(&child);
      }
    } else if (node->is_array()) {
      for (const auto& child : *node) todo.push_back(&child);
    }
  }
  if (has_nul) return {std::nullopt, std::move(text)};
  if (has_float) return {text, text};
  return {std::move(text), std::nullopt};
}

std::int64_t to_int64(std::string_view s) {
  std::int64_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

// ---- words (docs/search.md): PostgreSQL gets the tokens cairn made, never its own parser's, and never query text.

/// A word as a tsvector lexeme. PostgreSQL refuses lexemes of 2 KiB or more, so a longer word is cut (at a
/// character boundary) and told apart from other long words by a hash of the whole word after '#' (which no word
/// holds). Candidates are checked against the record's own words afterwards, so a hash collision finds nothing
/// more.
std::string lexeme(const std::string& word) {
  constexpr std::size_t max_bytes = 2000;
  if (word.size() <= max_bytes) return word;
  std::string out = word.substr(0, detail::valid_utf8_prefix_length(std::string_view(word).substr(0, 1900)));
  std::uint64_t h = 1469598103934665603ULL;
  for (const char c : word) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return out + fmt::format("#{:016x}", h);
}

/// A lexeme quoted for tsvector and tsquery input: in single quotes, quotes and backslashes doubled. (cairn's
/// words hold neither, but the quoting does not depend on that.)
std::string quoted(const std::string& lex) {
  std::string out = "'";
  for (const char c : lex) {
    if (c == '\'' || c == '\\') out.push_back(c);
    out.push_back(c);
  }
  return out + "'";
}

/// A PostgreSQL array literal of `items`, each element double-quoted with quotes and backslashes escaped.
std::string array_literal(const std::vector<std::string>& items) {
  std::string out = "{";
  for (const auto& item : items) {
    out += out.size() > 1 ? ",\"" : "\"";
    for (const char c : item) {
      if (c == '"' || c == '\\') out.push_back('\\');
      out.push_back(c);
    }
    out += '"';
  }
  return out + "}";
}

/// What the words and word_count columns hold for a record: its distinct lexemes (without the tenant's prefix),
/// and how many words it has (BM25's document length).
struct IndexedWords {
  std::vector<std::string> lexemes;
  std::string count;
};

IndexedWords indexed_words(const ArtifactRecord& r) {
  const detail::RecordWords w = detail::record_words(r);
  std::vector<std::string> all;
  all.reserve(w.length());
  for (const auto* field : {&w.title, &w.description, &w.value}) {
    for (const auto& word : *field) all.push_back(lexeme(word));
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return {std::move(all), std::to_string(w.length())};
}

/// The words column's tsvector literal: each lexeme with the tenant's prefix ("<no>:"). The server refuses one
/// past its size limit (1 MiB of lexemes) with its own message, and nothing is written.
std::string tsvector_literal(const IndexedWords& words, const std::string& tenant_prefix) {
  std::string out;
  for (const auto& lex : words.lexemes) out += (out.empty() ? "" : " ") + quoted(tenant_prefix + lex);
  return out;
}

/// The tsquery that finds a superset of what `q` matches: every group (any of its terms; a phrase as all of its
/// words), and none of the excluded single words. Phrases and excluded phrases are checked in cairn afterwards,
/// on the record's own words (so tsvector positions, which PostgreSQL caps, are not needed).
std::string word_tsquery(const detail::WordQuery& q, const std::string& tenant_prefix) {
  const auto term = [&](const detail::QueryTerm& t) {
    std::string out;
    for (const auto& w : t.words) out += (out.empty() ? "" : " & ") + quoted(tenant_prefix + lexeme(w));
    return t.words.size() > 1 ? "(" + out + ")" : out;
  };
  std::string out;
  for (const auto& group : q.all_of) {
    std::string any;
    for (const auto& t : group) any += (any.empty() ? "" : " | ") + term(t);
    out += (out.empty() ? "" : " & ") + (group.size() > 1 ? "(" + any + ")" : any);
  }
  for (const auto& t : q.none_of) {
    if (t.words.size() == 1 && lexeme(t.words[0]) == t.words[0]) out += " & !" + quoted(tenant_prefix + t.words[0]);
  }
  return out;
}

/// A tsquery[] literal of one single-word tsquery per word (for their document frequencies).
std::string word_tsquery_array(const std::vector<std::string>& words, const std::string& tenant_prefix) {
  std::vector<std::string> queries;
  for (const auto& w : words) queries.push_back(quoted(tenant_prefix + lexeme(w)));
  return array_literal(queries);
}

// ---- vectors: bytea of float32, little-endian (the byte order of every machine cairn builds on is checked below)

static_assert(sizeof(float) == 4, "vectors are stored as 4-byte floats");

/// A vector as bytea input text ("\\x" and two hex digits per byte).
std::string vector_bytea(const std::vector<float>& v) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out = "\\x";
  out.reserve(2 + v.size() * 8);
  for (const float x : v) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &x, sizeof bits);
    for (int b = 0; b < 4; ++b) {  // little-endian, whatever the machine's order
      const auto byte = static_cast<unsigned>((bits >> (8 * b)) & 0xFFu);
      out.push_back(hex[byte >> 4]);
      out.push_back(hex[byte & 0xFu]);
    }
  }
  return out;
}

/// The vector a bytea column's text ("\\x...") holds; nothing when it is not whole floats.
/// A bigint column in PostgreSQL's binary format: 8 bytes, most significant first.
std::int64_t binary_int64(const char* bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = v << 8 | static_cast<unsigned char>(bytes[i]);
  return static_cast<std::int64_t>(v);
}

std::optional<std::vector<float>> bytea_vector(std::string_view text) {
  if (text.size() < 2 || text[0] != '\\' || text[1] != 'x' || (text.size() - 2) % 8 != 0) return std::nullopt;
  const auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
  };
  std::vector<float> out((text.size() - 2) / 8);
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::uint32_t bits = 0;
    for (int b = 0; b < 4; ++b) {
      const int hi = nibble(text[2 + i * 8 + static_cast<std::size_t>(b) * 2]);
      const int lo = nibble(text[3 + i * 8 + static_cast<std::size_t>(b) * 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      bits |= static_cast<std::uint32_t>(hi << 4 | lo) << (8 * b);
    }
    std::memcpy(&out[i], &bits, sizeof bits);
  }
  return out;
}

}  // namespace

struct PostgresArtifactStore::Impl {
  using Clock = std::chrono::steady_clock;

  struct Connection {
    PGconn* conn = nullptr;  // null until opened, and after it was abandoned
    bool prepared = false;
    Connection() = default;
    ~Connection() { PQfinish(conn); }
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;
    void close() noexcept {
      // Non-blocking: closing never waits for a server that stopped answering.
      PQfinish(conn);
      conn = nullptr;
      prepared = false;
    }
  };

  /// Up to 22 text parameters; null pointers are SQL NULLs.
  struct Params {
    std::array<const char*, 22> values{};
    int count = 0;
    Params& add(const std::string& s) {
      values[static_cast<std::size_t>(count++)] = s.c_str();
      return *this;
    }
    Params& add(const std::optional<std::string>& s) {
      values[static_cast<std::size_t>(count++)] = s ? s->c_str() : nullptr;
      return *this;
    }
    // The values are pointers into the strings: a temporary would be gone before the statement runs.
    Params& add(std::string&&) = delete;
    Params& add(const std::string&&) = delete;
    Params& add(std::optional<std::string>&&) = delete;
    Params& add(const std::optional<std::string>&&) = delete;
  };

  Impl(std::string c, PostgresOptions o)
      : conninfo(std::move(c)),
        options(o),
        session_sql(fmt::format("SET client_encoding = 'UTF8'; SET statement_timeout = {}", o.statement_timeout_ms)),
        // A pooled connection is opened by with_connection(), under the call's deadline.
        pool(o.pool_size, [] { return std::make_unique<Connection>(); }, std::chrono::milliseconds(o.pool_wait_ms),
             "postgres store", "PostgresOptions::pool_size or pool_wait_ms") {}

  /// The time a statement may take: the server cancels it after statement_timeout_ms, and the client waits one
  /// second more for that answer before it gives the connection up as dead. Never, when the timeout is 0.
  Clock::time_point statement_deadline() const {
    if (options.statement_timeout_ms == 0) return Clock::time_point::max();
    return Clock::now() + std::chrono::milliseconds(options.statement_timeout_ms) + std::chrono::seconds(1);
  }

  // Waits until the connection's socket is readable (or writable) or the deadline passed; false on the deadline.
  static bool wait_socket(PGconn* conn, bool read, bool write, Clock::time_point deadline) {
    const int fd = PQsocket(conn);
    if (fd < 0) return true;  // libpq reports the broken connection on the next call
    for (;;) {
      int timeout = -1;
      if (deadline != Clock::time_point::max()) {
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left <= 0) return false;
        timeout = static_cast<int>(std::min<std::int64_t>(left, std::numeric_limits<int>::max()));
      }
      pollfd p{fd, static_cast<short>((read ? POLLIN : 0) | (write ? POLLOUT : 0)), 0};
      const int r = ::poll(&p, 1, timeout);
      if (r > 0) return true;
      if (r == 0) {
        if (Clock::now() >= deadline) return false;
        continue;
      }
      if (errno != EINTR) return true;
    }
  }

  static long long ms_until(Clock::time_point from, Clock::time_point deadline) {
    return static_cast<long long>(std::chrono::ceil<std::chrono::milliseconds>(deadline - from).count());
  }

  // Opens c.conn without blocking past the deadline: PQconnectStart + PQconnectPoll, waiting with poll() for the
  // remaining time (PQconnectdb and PQreset would wait for a silent server as long as the kernel lets them).
  // Throws connection_lost when the server cannot be reached in time, so callers may try again.
  // `budget_ms` is the time the error message names (by default, what was left of the deadline).
  void open(Connection& c, Clock::time_point deadline, std::optional<long long> budget_ms = std::nullopt) {
    c.close();
    if (!budget_ms) budget_ms = std::max(0LL, ms_until(Clock::now(), deadline));
    c.conn = PQconnectStart(conninfo.c_str());
    if (!c.conn) throw storage_error(fmt::format("{}: out of memory while connecting", where));
    auto status = PQstatus(c.conn) == CONNECTION_BAD ? PGRES_POLLING_FAILED : PGRES_POLLING_WRITING;
    while (status != PGRES_POLLING_OK) {
      if (status == PGRES_POLLING_FAILED) {
        throw connection_lost(fmt::format("{}: cannot connect: {}", where, trimmed(PQerrorMessage(c.conn))));
      }
      if (!wait_socket(c.conn, status == PGRES_POLLING_READING, status == PGRES_POLLING_WRITING, deadline)) {
        c.close();
        throw connection_lost(
            fmt::format("{}: cannot connect: no answer from the server within {} ms", where, *budget_ms));
      }
      status = PQconnectPoll(c.conn);
    }
    // Server notices ("relation already exists, skipping") are not errors; libpq would print them to stderr.
    PQsetNoticeProcessor(c.conn, [](void*, const char*) {}, nullptr);
    // Non-blocking, so that sending a large statement to a server that stopped reading never blocks past the
    // deadline either.
    if (PQsetnonblocking(c.conn, 1) != 0) fail(c, nullptr, "connecting");
  }

  static std::string trimmed(const char* msg) {
    std::string s = msg ? msg : "";
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
  }

  // Throws connection_lost when the failure is the connection's (the server restarted, the network went), a
  // plain storage_error otherwise.
  [[noreturn]] void fail(const Connection& c, const PGresult* res, const char* what) const {
    const char* state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
    const std::string_view code = state ? state : "";
    const char* constraint = res ? PQresultErrorField(res, PG_DIAG_CONSTRAINT_NAME) : nullptr;
    const std::string msg = trimmed(res ? PQresultErrorMessage(res) : PQerrorMessage(c.conn));
    const bool lost = PQstatus(c.conn) == CONNECTION_BAD || code.substr(0, 2) == "08" || code == "57P01" ||
                      code == "57P02" || code == "57P03";
    const std::string text = fmt::format("{}: {}: {}", where, what, msg.empty() ? "no reply from the server" : msg);
    if (lost) throw connection_lost(text);
    if (code == "23505" && constraint && constraint == write_token_index) throw token_taken(text);
    if (code == "40001" || code == "40P01" || code == "23505") throw write_conflict(text);
    throw storage_error(text);
  }

  // Gives up a connection whose server did not answer in time: closed without waiting (the server's own
  // statement_timeout ends whatever it was running), so the call can reconnect.
  [[noreturn]] void abandon(Connection& c, const char* what) const {
    c.close();
    throw connection_lost(fmt::format("{}: {}: no reply from the server in time (statement_timeout_ms = {}); "
                                      "the connection was closed",
                                      where, what, options.statement_timeout_ms));
  }

  // Sends what `send` queues on the connection and collects the results, waiting at most until `deadline`.
  // The result of the last statement comes back; the first error is thrown (see fail()).
  template <typename Send>
  Result exec(Connection& c, Send&& send, const char* what, Clock::time_point deadline) const {
    if (!c.conn || PQstatus(c.conn) != CONNECTION_OK) fail(c, nullptr, what);
    if (!send(c.conn)) fail(c, nullptr, what);
    for (;;) {
      const int flushed = PQflush(c.conn);
      if (flushed == 0) break;
      if (flushed < 0) fail(c, nullptr, what);
      if (!wait_socket(c.conn, true, true, deadline)) abandon(c, what);
      if (PQconsumeInput(c.conn) == 0) fail(c, nullptr, what);
    }
    Result last(nullptr, &PQclear);
    Result error(nullptr, &PQclear);
    for (;;) {
      while (PQisBusy(c.conn)) {
        if (!wait_socket(c.conn, true, false, deadline)) abandon(c, what);
        if (PQconsumeInput(c.conn) == 0) fail(c, nullptr, what);
      }
      Result res(PQgetResult(c.conn), &PQclear);
      if (!res) break;
      const auto status = PQresultStatus(res.get());
      if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
        if (!error) error = std::move(res);
      } else {
        last = std::move(res);
      }
    }
    if (error) fail(c, error.get(), what);
    if (!last) fail(c, nullptr, what);
    return last;
  }

  // Runs a prepared statement; with `binary`, its rows come in PostgreSQL's binary format (binary_int64).
  Result run(Connection& c, Stmt s, const Params& p, bool binary = false) const {
    return exec(
        c,
        [&](PGconn* conn) {
          return PQsendQueryPrepared(conn, statement_names[s], p.count, p.values.data(), nullptr, nullptr,
                                     binary ? 1 : 0) == 1;
        },
        statement_names[s], statement_deadline());
  }

  Result simple(Connection& c, const std::string& sql, const char* what = "migrating the schema",
                std::optional<Clock::time_point> deadline = std::nullopt) const {
    return exec(
        c, [&](PGconn* conn) { return PQsendQuery(conn, sql.c_str()) == 1; }, what,
        deadline ? *deadline : statement_deadline());
  }

  // The session's settings (client encoding UTF8, statement_timeout), for a connection just opened.
  void set_up_session(Connection& c, Clock::time_point deadline) {
    simple(c, session_sql, "setting up the session", deadline);
  }

  // Prepares every statement, all or nothing: the connection counts as prepared only when all were, and a
  // session that may hold some from a try that failed half-way (a statement the server refused) drops them first,
  // so the next try never meets "prepared statement already exists".
  void prepare(Connection& c, bool fresh_session, std::optional<Clock::time_point> deadline = std::nullopt) {
    c.prepared = false;
    if (!fresh_session) simple(c, "DEALLOCATE ALL", "preparing statements", deadline);
    for (std::size_t i = 0; i < statement_count; ++i) {
      const std::string sql = statement_sql(static_cast<Stmt>(i));
      exec(
          c, [&](PGconn* conn) { return PQsendPrepare(conn, statement_names[i], sql.c_str(), 0, nullptr) == 1; },
          "preparing statements", deadline ? *deadline : statement_deadline());
    }
    c.prepared = true;
  }

  /// The first try at connecting waits at least this long, so that reconnect_timeout_ms = 0 (or a few ms) still
  /// means "one try" rather than "never".
  static constexpr int min_first_try_ms = 1000;

  // The first connection, for the constructor: one try, within reconnect_timeout_ms (at least min_first_try_ms).
  std::unique_ptr<Connection> connect() {
    auto c = std::make_unique<Connection>();
    const int budget_ms = std::max(options.reconnect_timeout_ms, min_first_try_ms);
    const auto deadline = Clock::now() + std::chrono::milliseconds(budget_ms);
    try {
      open(*c, deadline, budget_ms);
      set_up_session(*c, deadline);
    } catch (const connection_lost& e) {
      throw storage_error(e.what());
    }
    return c;
  }

  // Opens a connection that is not open yet, or re-opens a broken one (`broken`: counted in reconnects()), trying
  // again with a growing pause until reconnect_timeout_ms has passed; every try (connecting, setting up,
  // preparing) waits only for what is left.
  void reconnect(Connection& c, bool broken) {
    const auto start = Clock::now();
    const auto deadline = start + std::chrono::milliseconds(options.reconnect_timeout_ms);
    auto pause = std::chrono::milliseconds(20);
    for (bool first = true;; first = false) {
      std::string last_error;
      try {
        const auto try_deadline = first ? std::max(deadline, start + std::chrono::milliseconds(min_first_try_ms))
                                        : deadline;
        open(c, try_deadline);
        set_up_session(c, try_deadline);
        prepare(c, true, try_deadline);
        if (broken) reconnect_count.fetch_add(1, std::memory_order_relaxed);
        return;
      } catch (const connection_lost& e) {
        // the server went away again (or is still starting up); keep trying
        last_error = e.what();
      }
      if (Clock::now() + pause > deadline) {
        c.close();
        throw storage_error(fmt::format("{}: lost the connection to the server and could not reconnect within {} ms "
                                        "(last try: {})",
                                        where, options.reconnect_timeout_ms, last_error));
      }
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::milliseconds(1000));
    }
  }

  // Runs `op(connection, retry)` on a pooled connection. When the connection turns out broken (or the server
  // stopped answering), it is re-opened and `op` runs once more with retry = true: op decides what is safe to
  // repeat (reads are; writes go through write_once()).
  template <typename Op>
  auto with_connection(Op&& op) {
    auto lease = pool.acquire();
    bool need_reconnect = PQstatus(lease->conn) != CONNECTION_OK;
    const bool retry = lease->conn != nullptr;  // a connection never opened (or closed by an earlier call) ran nothing
    if (!need_reconnect) {
      try {
        if (!lease->prepared) prepare(*lease, false);
        return op(*lease, false);
      } catch (const connection_lost&) {
        need_reconnect = true;
      }
    }
    reconnect(*lease, retry);
    try {
      return op(*lease, retry);
    } catch (const connection_lost& e) {
      throw storage_error(e.what());
    }
  }

  // A write that may be sent twice (its first try's connection broke: the first try may have committed, may
  // still be running on the server, or may have been rolled back) and must happen at most once. Every such write
  // carries a fresh token under the unique index write_token_index, so of all tries exactly one commits.
  //   find(c) -> std::optional<T>: what the write that carries the token did, if it committed;
  //   apply(c) -> T: the write itself.
  // A retry first looks for the token (the first try committed: its result is the answer). Then the write runs;
  // when it collides with the token (the first try committed meanwhile, having waited on a lock while the retry
  // looked), it was rolled back as a whole and the first try's result is the answer. A conditional write that is
  // refused on a retry (say, its expected version moved on) looks once more too, since the first try may be the
  // write that moved it.
  template <typename T, typename Find, typename Apply>
  T write_once(Connection& c, bool retry, Find&& find, Apply&& apply) {
    if (retry) {
      if (std::optional<T> done = find(c)) return *done;
    }
    try {
      return apply(c);
    } catch (const token_taken& e) {
      if (std::optional<T> done = find(c)) return *done;
      throw storage_error(fmt::format("{} (and no write with this token was found)", e.what()));
    } catch (const connection_lost&) {
      throw;
    } catch (const error&) {
      if (retry) {
        if (std::optional<T> done = find(c)) return *done;
      }
      throw;
    }
  }

  ArtifactPtr decode(const PGresult* res, int row) const {
    auto text = [&](int col) {
      return std::string_view(PQgetvalue(res, row, col), static_cast<std::size_t>(PQgetlength(res, row, col)));
    };
    auto maybe = [&](int col) -> std::optional<std::string_view> {
      if (PQgetisnull(res, row, col)) return std::nullopt;
      return text(col);
    };
    detail::RecordRow r;
    r.tenant_id = text(0);
    r.id = text(1);
    r.version = to_int64(text(2));
    r.type = text(3);
    r.title = text(4);
    r.description = text(5);
    r.purpose = text(6);
    r.value = maybe(7);
    r.storage_url = maybe(8);
    r.mime_type = maybe(9);
    if (!PQgetisnull(res, row, 10)) r.size_bytes = to_int64(text(10));
    r.schema_url = maybe(11);
    r.created_by = maybe(12);
    r.created_at = to_int64(text(13));
    r.metadata = PQgetisnull(res, row, 14) ? std::string_view("{}") : text(14);
    return detail::decode_row(r, options.json_limits, where);
  }

  /// The rows of a statement that returns record columns and a vector (column 15), as similarity candidates:
  /// those that decode, pass the filter and hold a vector of the query's dimension, scored by exact cosine.
  // The candidates in `res` (records, then their vector in column 15) that pass `filter`, each with its exact
  // cosine to `vector`: from `hits` (an index's, which computed it from its copy) where a hit has it, else from the
  // row's vector.
  std::vector<detail::SearchCandidate> similar_rows(const PGresult* res, const Embedding& vector,
                                                    const SearchFilter& filter,
                                                    const std::vector<detail::VectorHit>* hits = nullptr) const {
    std::unordered_map<std::string, double> exact;  // "id\0version" -> the hit's exact cosine
    if (hits) {
      for (const auto& h : *hits) {
        if (h.exact) exact.emplace(h.id + '\0' + std::to_string(h.version), *h.exact);
      }
    }
    std::vector<detail::SearchCandidate> out;
    for (int i = 0; i < PQntuples(res); ++i) {
      if (PQgetisnull(res, i, 1)) continue;  // no candidate: the row carries other columns only
      ArtifactPtr r;
      try {
        r = decode(res, i);
      } catch (const storage_error&) {
        continue;  // a damaged row: list() does not show it either (fetch it to get the error)
      }
      if (!detail::matches_filter(*r, filter)) continue;
      double similarity = 0;
      if (const auto it = exact.find(r->id() + '\0' + std::to_string(r->version())); it != exact.end()) {
        similarity = it->second;
      } else {
        const auto values = PQgetisnull(res, i, 15) ? std::nullopt : bytea_vector(PQgetvalue(res, i, 15));
        if (!values || values->size() != vector.values.size()) continue;
        similarity = detail::cosine(vector.values, *values);
      }
      detail::SearchCandidate c{std::move(r), std::nullopt, similarity, {}};
      c.matched.similarity = c.similarity;
      out.push_back(std::move(c));
    }
    return out;
  }

  void migrate(Connection& c) {
    if (read_schema_version(c) == PostgresArtifactStore::schema_version) return;
    simple(c, "BEGIN");
    try {
      simple(c, migration_lock);
      simple(c, "CREATE TABLE IF NOT EXISTS cairn_schema (version integer NOT NULL)");
      int version = read_schema_version(c);  // again, under the lock: another process may have migrated
      if (version < 0) {
        simple(c, "INSERT INTO cairn_schema (version) VALUES (0)");
        version = 0;
      }
      if (version > PostgresArtifactStore::schema_version) {
        throw storage_error(fmt::format(
            "{}: the database has schema version {}, newer than the version {} this cairn knows; "
            "use a newer cairn",
            where, version, PostgresArtifactStore::schema_version));
      }
      for (int v = version; v < PostgresArtifactStore::schema_version; ++v) simple(c, migrations[v]);
      simple(c, fmt::format("UPDATE cairn_schema SET version = {}", PostgresArtifactStore::schema_version));
      simple(c, "COMMIT");
    } catch (...) {
      try {
        simple(c, "ROLLBACK");
      } catch (const error&) {
        // the connection is gone, and the transaction with it
      }
      throw;
    }
  }

  // -1 when the database has no cairn schema yet.
  int read_schema_version(Connection& c) {
    auto exists = simple(c, "SELECT to_regclass('cairn_schema') IS NOT NULL");
    if (PQgetvalue(exists.get(), 0, 0)[0] != 't') return -1;
    auto res = simple(c, "SELECT coalesce(max(version), -1) FROM cairn_schema");
    return static_cast<int>(to_int64(PQgetvalue(res.get(), 0, 0)));
  }

  std::string conninfo;
  PostgresOptions options;
  std::string session_sql;
  std::string where = "postgres store";
  detail::ConnectionPool<Connection> pool;
  std::atomic<std::uint64_t> reconnect_count{0};
  // this process's indexes, caught up from cairn_search_changes
  mutable detail::VectorCache vectors{detail::VectorCache::default_max_entries,
                                      detail::VectorCache::default_max_bytes, detail::fields_column_reader()};

  /// The prefix of a tenant's lexemes ("<no>:", migration 5). A tenant that never wrote has none: nothing, or
  /// with `create` (a write), its row is made first, with a new number. Numbers never change, so each is asked
  /// for once per store object.
  std::optional<std::string> lexeme_prefix(Connection& c, const std::string& tenant_id, bool create = false) {
    {
      std::lock_guard<std::mutex> lock(prefixes_mutex);
      const auto it = prefixes.find(tenant_id);
      if (it != prefixes.end()) return it->second;
    }
    Params p;
    p.add(tenant_id);
    Result res = run(c, tenant_number, p);
    // Writers of a new tenant race to make its row: the losers find it on a later try (under a stricter default
    // isolation level than READ COMMITTED, a try may also fail as a serialization conflict).
    for (int attempt = 0; create && PQntuples(res.get()) == 0 && attempt < 50; ++attempt) {
      if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(std::min(attempt * 2, 50)));
      try {
        res = run(c, tenant_create, p);
      } catch (const write_conflict&) {
        if (attempt == 49) throw;
      }
    }
    if (PQntuples(res.get()) == 0) {
      if (!create) return std::nullopt;
      throw storage_error(fmt::format("{}: could not create the search row of tenant '{}'", where, tenant_id));
    }
    std::string prefix = std::string(PQgetvalue(res.get(), 0, 0)) + ":";
    std::lock_guard<std::mutex> lock(prefixes_mutex);
    return prefixes.emplace(tenant_id, std::move(prefix)).first->second;
  }
  std::mutex prefixes_mutex;
  std::map<std::string, std::string, std::less<>> prefixes;  // tenant -> "<no>:"

  /// After a write that left the tenant's change sequence at `newest`, pruned through `through`: once the
  /// sequence holds search_changes_kept and a sixteenth more, the oldest go (a batch every sixteenth). The write
  /// is done and acknowledged whatever happens here: a failure leaves the changes for a later write to prune.
  void prune_changes(const std::string& tenant_id, std::int64_t newest, std::int64_t through) {
    if (options.search_changes_kept == 0) return;
    const auto k = static_cast<std::int64_t>(
        std::min<std::size_t>(options.search_changes_kept, std::numeric_limits<std::int32_t>::max()));
    if (newest - through < k + k / 16 + 1) return;
    const std::string upto = std::to_string(newest - k);
    try {
      with_connection([&](Connection& c, bool) {
        Params p;
        p.add(tenant_id).add(upto);
        run(c, prune_sequence, p);
        return 0;
      });
    } catch (const error&) {
      // the next write that finds the sequence due prunes it
    }
  }
};

PostgresArtifactStore::PostgresArtifactStore(std::string conninfo, PostgresOptions options) {
  // A malformed conninfo is reported without libpq's message, which can quote the text (and a password in it).
  char* parse_error = nullptr;
  PQconninfoOption* parsed = PQconninfoParse(conninfo.c_str(), &parse_error);
  if (!parsed) {
    PQfreemem(parse_error);
    throw invalid_argument("postgres store: the conninfo is not valid libpq connection info "
                           "(expected \"key=value ...\" or a postgresql:// URI)");
  }
  PQconninfoFree(parsed);
  if (options.reconnect_timeout_ms < 0) {
    throw invalid_argument(fmt::format("postgres store: reconnect_timeout_ms must not be negative (got {})",
                                       options.reconnect_timeout_ms));
  }
  if (options.statement_timeout_ms < 0) {
    throw invalid_argument(fmt::format("postgres store: statement_timeout_ms must not be negative (got {})",
                                       options.statement_timeout_ms));
  }
  if (options.pool_wait_ms < 0) {
    throw invalid_argument(
        fmt::format("postgres store: pool_wait_ms must not be negative (got {})", options.pool_wait_ms));
  }
  impl_ = std::make_unique<Impl>(std::move(conninfo), options);
  auto first = impl_->connect();
  impl_->migrate(*first);
  impl_->pool.adopt(std::move(first));
}

PostgresArtifactStore::~PostgresArtifactStore() = default;

std::uint64_t PostgresArtifactStore::reconnects() const noexcept {
  return impl_->reconnect_count.load(std::memory_order_relaxed);
}

namespace {

void require_pg_text(const char* field, const std::string& v) {
  if (v.find('\0') != std::string::npos) {
    throw invalid_argument(fmt::format("postgres store: {}: holds a NUL character, which PostgreSQL text cannot keep",
                                       field));
  }
  if (!detail::is_valid_utf8(v)) {
    throw invalid_argument(fmt::format("postgres store: {}: is not valid UTF-8 ('{}')", field, detail::excerpt(v)));
  }
}
void require_pg_text(const char* field, const std::optional<std::string>& v) {
  if (v) require_pg_text(field, *v);
}

}  // namespace

// The record's vector, made before anything is sent (never a model call inside a transaction).
std::optional<Embedding> PostgresArtifactStore::embed(const ArtifactRecord& record) const {
  const auto& e = impl_->options.embedder;
  if (!e) return std::nullopt;
  return std::move(detail::embed_checked(*e, {e->text_of(record)}).front());
}

ArtifactPtr PostgresArtifactStore::store(const ArtifactRecord& record) { return put(record, nullptr, embed(record)); }

ArtifactPtr PostgresArtifactStore::store_if(const ArtifactRecord& record, std::uint64_t expected_version) {
  detail::check_store_if(record, expected_version);
  return put(record, &expected_version, embed(record));
}

ArtifactPtr PostgresArtifactStore::store_embedded(const ArtifactRecord& record, const Embedding& embedding) {
  if (!impl_->options.embedder) return ArtifactStore::store_embedded(record, embedding);  // refuses: no vectors kept
  detail::check_vector("store_embedded", embedding, impl_->options.embedder.get());
  require_pg_text("store_embedded: vector.model", embedding.model);
  return put(record, nullptr, embedding);
}

std::optional<Embedding> PostgresArtifactStore::embedding(const std::string& id, const std::string& tenant_id,
                                                          std::uint64_t version) const {
  detail::check_tenant(tenant_id);
  if (!fits_pg_text(id) || !fits_pg_text(tenant_id)) return std::nullopt;
  if (version == latest || version > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    return std::nullopt;
  }
  const std::string version_text = std::to_string(version);
  const std::string model = impl_->options.embedder ? impl_->options.embedder->model() : std::string();
  return impl_->with_connection([&](Impl::Connection& c, bool) -> std::optional<Embedding> {
    Impl::Params p;
    p.add(tenant_id).add(id).add(version_text).add(model);
    auto res = impl_->run(c, fetch_vector, p);
    if (PQntuples(res.get()) == 0) return std::nullopt;
    auto values = bytea_vector(PQgetvalue(res.get(), 0, 1));
    if (!values) {
      throw storage_error(fmt::format("{}: the vector of artifact '{}' version {} in tenant '{}' is damaged",
                                      impl_->where, detail::excerpt(id), version, detail::excerpt(tenant_id)));
    }
    return Embedding{PQgetvalue(res.get(), 0, 0), std::move(*values)};
  });
}

bool PostgresArtifactStore::keeps_embeddings() const noexcept { return impl_->options.embedder != nullptr; }

std::shared_ptr<Embedder> PostgresArtifactStore::embedder() const { return impl_->options.embedder; }

ArtifactPtr PostgresArtifactStore::put(const ArtifactRecord& record, const std::uint64_t* expected,
                                       const std::optional<Embedding>& vector) {
  // Everything that can fail on bad input fails before anything is sent.
  require_pg_text("tenant_id", record.tenant_id());
  require_pg_text("id", record.id());
  require_pg_text("title", record.title());
  require_pg_text("description", record.description());
  require_pg_text("purpose", record.purpose());
  require_pg_text("storage_url", record.storage_url());
  require_pg_text("mime_type", record.mime_type());
  require_pg_text("schema_url", record.schema_url());
  require_pg_text("created_by", record.created_by());
  const auto& limits = impl_->options.json_limits;
  const JsonColumns value = record.has_value() ? json_columns(record.value(), "value", limits) : JsonColumns{};
  const JsonColumns metadata = json_columns(record.metadata(), "metadata", limits);

  const std::string id = record.id().empty() ? detail::new_uuid(impl_->options.ids.get()) : record.id();
  const std::int64_t created_at =
      record.created_at() == 0 ? detail::now_ms(impl_->options.clock.get()) : record.created_at();
  const std::string created_at_text = std::to_string(created_at);
  const std::optional<std::string> size_text =
      record.size_bytes() ? std::optional<std::string>(std::to_string(detail::to_sql_int(*record.size_bytes())))
                          : std::nullopt;
  const std::string token = detail::uuid_v4();
  const std::optional<std::string> expected_text =
      expected && *expected != absent ? std::optional<std::string>(std::to_string(*expected)) : std::nullopt;
  const IndexedWords words = indexed_words(record);
  const std::optional<std::string> vector_bytes =
      vector ? std::optional<std::string>(vector_bytea(vector->values)) : std::nullopt;
  const std::optional<std::string> vector_model = vector ? std::optional<std::string>(vector->model) : std::nullopt;
  const Stmt statement = !expected ? store_version : *expected == absent ? store_create : store_replace;

  // The tenant's change sequence after the write: its newest number and the number pruned through.
  std::optional<std::pair<std::int64_t, std::int64_t>> sequence;
  // The version the write that carries this token got, if it committed.
  auto find = [&](Impl::Connection& c) -> std::optional<std::int64_t> {
    Impl::Params p;
    p.add(record.tenant_id()).add(id).add(token);
    auto found = impl_->run(c, find_token, p);
    if (PQntuples(found.get()) == 1) return to_int64(PQgetvalue(found.get(), 0, 0));
    return std::nullopt;
  };
  auto apply = [&](Impl::Connection& c) -> std::int64_t {
    const std::string tsvector = tsvector_literal(words, *impl_->lexeme_prefix(c, record.tenant_id(), true));
    Impl::Params p;
    p.add(record.tenant_id())
        .add(id)
        .add(record.type().str())
        .add(record.title())
        .add(record.description())
        .add(record.purpose())
        .add(value.jsonb)
        .add(value.text)
        .add(record.storage_url())
        .add(record.mime_type())
        .add(record.created_by())
        .add(size_text)
        .add(record.schema_url())
        .add(created_at_text)
        .add(metadata.jsonb)
        .add(metadata.text)
        .add(token)
        .add(tsvector)
        .add(words.count)
        .add(vector_bytes)
        .add(vector_model);
    if (expected_text) p.add(expected_text);
    // The statement assigns versions without races under READ COMMITTED; a database whose default isolation is
    // stricter may still report a conflict, and the statement, rolled back as a whole, can run again.
    for (int attempt = 1;; ++attempt) {
      try {
        auto res = impl_->run(c, statement, p);
        if (PQntuples(res.get()) == 1) {
          sequence.emplace(to_int64(PQgetvalue(res.get(), 0, 1)), to_int64(PQgetvalue(res.get(), 0, 2)));
          return to_int64(PQgetvalue(res.get(), 0, 0));
        }
        // Only a conditional store returns no row: the id was not at the expected version, nothing was written.
        Impl::Params q;
        q.add(record.tenant_id()).add(id);
        auto head = impl_->run(c, head_version, q);
        // Thrown inside the write, so that a retry refused this way looks for its token once more (write_once):
        // the first try may be the very write that moved the version on.
        throw detail::version_conflict(
            record, *expected,
            PQntuples(head.get()) == 1 ? static_cast<std::uint64_t>(to_int64(PQgetvalue(head.get(), 0, 0))) : 0);
      } catch (const write_conflict&) {
        if (attempt == 50) throw;
        std::this_thread::sleep_for(std::chrono::milliseconds(std::min(attempt * 2, 50)));
      }
    }
  };
  // The common path is one statement; only a retry after a lost connection looks for the token first.
  const std::int64_t version = impl_->with_connection([&](Impl::Connection& c, bool retry) {
    return impl_->write_once<std::int64_t>(c, retry, find, apply);
  });
  if (sequence) impl_->prune_changes(record.tenant_id(), sequence->first, sequence->second);

  auto b = record.to_builder();
  b.id(id).version(static_cast<std::uint64_t>(version)).created_at(created_at);
  return b.build();
}

ArtifactPtr PostgresArtifactStore::fetch(const std::string& id, const std::string& tenant_id,
                                         std::uint64_t version) const {
  detail::check_tenant(tenant_id);
  // What PostgreSQL text cannot hold was never stored: such an id is simply missing.
  if (!fits_pg_text(id) || !fits_pg_text(tenant_id)) return nullptr;
  if (version > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return nullptr;
  const std::string version_text = std::to_string(version);
  return impl_->with_connection([&](Impl::Connection& c, bool) -> ArtifactPtr {
    Impl::Params p;
    p.add(tenant_id).add(id);
    if (version != latest) p.add(version_text);
    auto res = impl_->run(c, version == latest ? fetch_latest : fetch_version, p);
    if (PQntuples(res.get()) == 0) return nullptr;
    return impl_->decode(res.get(), 0);
  });
}

void PostgresArtifactStore::remove(const std::string& id, const std::string& tenant_id) {
  detail::check_tenant(tenant_id);
  bool removed = false;
  if (fits_pg_text(id) && fits_pg_text(tenant_id)) {
    // Removing twice removes nothing more, so a retry after a lost connection is safe.
    removed = impl_->with_connection([&](Impl::Connection& c, bool) {
      Impl::Params p;
      p.add(tenant_id).add(id);
      auto res = impl_->run(c, remove_artifact, p);
      // A retry that finds nothing cannot tell "the first try removed it" from "it was never there", and
      // reports not_found: true either way, as the artifact is not there.
      return PQgetvalue(res.get(), 0, 0)[0] == 't';
    });
  }
  if (!removed) throw not_found(detail::artifact_missing_message(id, tenant_id));
}

std::vector<std::uint64_t> PostgresArtifactStore::versions(const std::string& id,
                                                           const std::string& tenant_id) const {
  detail::check_tenant(tenant_id);
  if (!fits_pg_text(id) || !fits_pg_text(tenant_id)) return {};
  return impl_->with_connection([&](Impl::Connection& c, bool) {
    Impl::Params p;
    p.add(tenant_id).add(id);
    auto res = impl_->run(c, versions_of, p);
    std::vector<std::uint64_t> out;
    const int n = PQntuples(res.get());
    out.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) out.push_back(static_cast<std::uint64_t>(to_int64(PQgetvalue(res.get(), i, 0))));
    return out;
  });
}

ListPage PostgresArtifactStore::list(const std::string& tenant_id, const ListQuery& query) const {
  detail::check_tenant(tenant_id);
  detail::check_list_query(query);
  const auto range = query.prefix.find('\0') == std::string::npos ? prefix_range(query.prefix) : std::nullopt;
  if (!fits_pg_text(tenant_id) || !range || (query.created_by && !fits_pg_text(*query.created_by))) {
    return {};  // no stored id or creator can match
  }
  if (!fits_pg_text(query.cursor)) {
    throw invalid_argument("list: cursor is not a cursor this store handed out (not valid UTF-8)");
  }
  const auto& upper = range->upper;
  const std::optional<std::string> type = query.type ? std::optional<std::string>(query.type->str()) : std::nullopt;
  const std::string limit_text = std::to_string(query.limit + 1);  // one more says whether another page follows
  return impl_->with_connection([&](Impl::Connection& c, bool) {
    Impl::Params p;
    p.add(tenant_id).add(range->lower).add(upper).add(query.cursor).add(type).add(query.created_by).add(limit_text);
    auto res = impl_->run(c, upper ? list_bounded : list_open, p);
    ListPage page;
    const int n = PQntuples(res.get());
    bool last_readable = true;
    for (int i = 0; i < n; ++i) {
      if (static_cast<std::size_t>(i) == query.limit) {
        page.next_cursor = last_readable ? page.items.back()->id() : page.unreadable.back();
        break;
      }
      // One row that no longer makes a valid record must not make the whole tenant unlistable.
      try {
        page.items.push_back(impl_->decode(res.get(), i));
        last_readable = true;
      } catch (const storage_error&) {
        page.unreadable.emplace_back(PQgetvalue(res.get(), i, 1),
                                     static_cast<std::size_t>(PQgetlength(res.get(), i, 1)));
        last_readable = false;
      }
    }
    return page;
  });
}

CAIRN_END_NAMESPACE

CAIRN_BEGIN_NAMESPACE

SearchPage PostgresArtifactStore::search(const std::string& tenant_id, const SearchQuery& q) const {
  // The default search's checks, choices and errors (detail::prepare_search); filters alone are its scan of list()
  // pages.
  const detail::PreparedSearch p = detail::prepare_search(*this, tenant_id, q);
  if (!p.by_text && !p.by_vector) return ArtifactStore::search(tenant_id, q);
  // Similarity alone: this process's vector index (exact unless the query sets ef).
  if (p.by_vector && !p.by_text) {
    SearchPage page;
    (void)near_hits(tenant_id, q, p, 0, &page);
    return page;
  }
  // Otherwise every version the words match (the GIN index's candidates with their BM25 scores), and the vectors:
  // for hybrid the 4 x limit nearest that pass the filters through the approximate index (as the other stores;
  // the cursor applies to the fused ranking), for exact similarity every vector of the tenant's scope; ranked as the
  // default scan ranks (detail::rank_search_page).
  std::size_t unindexed = 0;
  std::vector<detail::SearchCandidate> found;
  if (p.by_text) found = word_hits(tenant_id, q, p.words, &unindexed);
  if (p.by_vector && p.by_text && !q.exact) {
    detail::add_similar(found, near_hits(tenant_id, q, p, 4 * q.limit, nullptr));
  } else if (p.by_vector) {
    detail::add_similar(found, vector_hits(tenant_id, q, *p.vector));
  }
  SearchPage page = detail::rank_search_page(std::move(found), q, p);
  page.unindexed = unindexed;
  return page;
}

std::vector<detail::SearchCandidate> PostgresArtifactStore::word_hits(const std::string& tenant_id,
                                                                     const SearchQuery& q,
                                                                     const detail::WordQuery& words,
                                                                     std::size_t* unindexed) const {
  std::vector<detail::SearchCandidate> hits;
  const auto& f = q.filter;
  const auto sql = sql_filter(tenant_id, f);
  if (!sql) return hits;  // nothing stored can match
  const std::vector<std::string> query_words = words.words();
  Result res = impl_->with_connection([&](Impl::Connection& c, bool) -> Result {
    const std::optional<std::string> prefix = impl_->lexeme_prefix(c, tenant_id);
    if (!prefix) return Result(nullptr, &PQclear);  // the tenant never wrote: no words, nothing unindexed
    const std::string df_queries = word_tsquery_array(query_words, *prefix);
    const std::string match = word_tsquery(words, *prefix);
    Impl::Params p;
    p.add(tenant_id).add(sql->range.lower).add(sql->range.upper).add(df_queries).add(match).add(sql->type);
    p.add(f.mime_type).add(f.created_by).add(sql->after).add(sql->before);
    return impl_->run(c, q.all_versions ? search_all : search_latest, p);
  });
  if (!res) {
    if (unindexed) *unindexed = 0;
    return hits;
  }

  // The statistics (the same on every row), then the candidates, scored in cairn exactly as the default scan does.
  constexpr int stats_column = 15;
  const auto number = [&](int col) { return static_cast<std::size_t>(to_int64(PQgetvalue(res.get(), 0, col))); };
  const std::size_t documents = number(stats_column), total_length = number(stats_column + 1);
  if (unindexed) *unindexed = number(stats_column + 2);
  std::vector<std::size_t> df;
  const std::string_view df_text = PQgetvalue(res.get(), 0, stats_column + 3);  // "{3,1}"
  for (std::size_t i = 1; i < df_text.size();) {
    const std::size_t end = std::min(df_text.find_first_of(",}", i), df_text.size());
    df.push_back(static_cast<std::size_t>(to_int64(df_text.substr(i, end - i))));
    i = end + 1;
  }
  const detail::Bm25 bm25(query_words, documents, total_length, std::move(df));

  const int rows = PQntuples(res.get());
  for (int i = 0; i < rows; ++i) {
    if (PQgetisnull(res.get(), i, 1)) continue;  // no candidate: the row carries the statistics only
    ArtifactPtr r;
    try {
      r = impl_->decode(res.get(), i);
    } catch (const storage_error&) {
      continue;  // a damaged row: list() does not show it either (fetch it to get the error)
    }
    if (!detail::matches_filter(*r, f)) continue;
    const detail::RecordWords rw = detail::record_words(*r);
    if (!detail::matches_words(rw, words)) continue;
    detail::SearchCandidate c{std::move(r), bm25.score(rw), std::nullopt, {}};
    detail::describe_word_match(rw, query_words, c.matched);
    hits.push_back(std::move(c));
  }
  return hits;
}

std::vector<detail::SearchCandidate> PostgresArtifactStore::vector_hits(const std::string& tenant_id,
                                                                       const SearchQuery& q,
                                                                       const Embedding& vector) const {
  const auto& f = q.filter;
  const auto sql = sql_filter(tenant_id, f);
  if (!sql || !fits_pg_text(vector.model)) return {};  // nothing stored can match
  const std::string dimension = std::to_string(vector.values.size());
  // One statement: the tenant's versions in scope with a vector of the model, after the filters SQL can check.
  Result res = impl_->with_connection([&](Impl::Connection& c, bool) {
    Impl::Params p;
    p.add(tenant_id).add(sql->range.lower).add(sql->range.upper).add(vector.model).add(dimension).add(sql->type);
    p.add(f.mime_type).add(f.created_by).add(sql->after).add(sql->before);
    return impl_->run(c, q.all_versions ? vectors_all : vectors_latest, p);
  });
  return impl_->similar_rows(res.get(), vector, f);
}

CAIRN_END_NAMESPACE

CAIRN_BEGIN_NAMESPACE

std::vector<detail::SearchCandidate> PostgresArtifactStore::near_hits(const std::string& tenant_id,
                                                                    const SearchQuery& q,
                                                                    const detail::PreparedSearch& p, std::size_t want,
                                                                    SearchPage* page) const {
  const Embedding& vector = *p.vector;
  if (!fits_pg_text(tenant_id) || !fits_pg_text(vector.model)) return {};  // nothing stored can match
  const std::size_t dimension = vector.values.size();
  const std::string dimension_text = std::to_string(dimension);
  // This process's index of (tenant, model), caught up with every change committed before this call. At first,
  // and when the changes it has not seen were pruned since, it starts from every current vector instead.
  const detail::ReadVectorChanges read = [&](const std::string& tenant, const std::string& model,
                                             std::uint64_t after, const detail::VectorChangeSink& sink) {
    return impl_->with_connection([&](Impl::Connection& c, bool) {
      bool any = false;
      detail::VectorChange ch;  // one change object, handed to `sink` row after row
      const auto hand = [&] {
        sink(ch);
        any = true;
      };
      const auto vector_of = [&](const PGresult* res, int row, int column) -> std::optional<std::vector<float>> {
        if (PQgetisnull(res, row, column)) return std::nullopt;
        auto values = bytea_vector(PQgetvalue(res, row, column));
        if (!values || values->size() != dimension) return std::nullopt;  // of another dimension: not indexed
        return values;
      };
      // What a filter reads of the version in `row`, from column `at` on (type, mime_type, created_by,
      // created_at, metadata); metadata longer than FilterFields::max_kept_metadata_bytes, or unreadable, is not
      // kept (the row decides for that version).
      const auto fields_of = [&](const PGresult* res, int row, int at,
                                 bool binary = false) -> std::shared_ptr<const void> {
        if (PQgetisnull(res, row, at)) return nullptr;
        const auto text = [&](int col) {
          return std::string(PQgetvalue(res, row, col), static_cast<std::size_t>(PQgetlength(res, row, col)));
        };
        auto f = std::make_shared<detail::FilterFields>();
        f->type = text(at);
        if (!PQgetisnull(res, row, at + 1)) f->mime_type = text(at + 1);
        if (!PQgetisnull(res, row, at + 2)) f->created_by = text(at + 2);
        f->created_at = binary ? binary_int64(PQgetvalue(res, row, at + 3)) : to_int64(PQgetvalue(res, row, at + 3));
        const std::string metadata = PQgetisnull(res, row, at + 4) ? std::string("{}") : text(at + 4);
        if (metadata.size() <= detail::FilterFields::max_kept_metadata_bytes) {
          try {
            f->metadata = std::make_shared<const nlohmann::json>(
                detail::parse_json_column(metadata, impl_->options.json_limits, "metadata"));
          } catch (const error&) {
            // unreadable: the row decides (and says so when read)
          }
        }
        return f;
      };
      // Every vector, in PostgreSQL's binary format (raw bytes: half what hex text takes, and no parsing).
      const auto start_over = [&] {
        Impl::Params p;
        p.add(tenant).add(model).add(dimension_text);
        auto res = impl_->run(c, all_vectors, p, true);
        const PGresult* r = res.get();
        if (PQntuples(r) == 0) return;  // the tenant never wrote
        const auto seq = static_cast<std::uint64_t>(binary_int64(PQgetvalue(r, 0, 0)));
        if (seq == 0) return;
        ch = detail::VectorChange();
        ch.coming = static_cast<std::size_t>(PQntuples(r));
        hand();
        ch.coming = 0;
        bool added = false;
        for (int i = 0; i < PQntuples(r); ++i) {
          const auto bytes = static_cast<std::size_t>(PQgetlength(r, i, 3));
          if (PQgetisnull(r, i, 3) || bytes != dimension * sizeof(float)) continue;  // none, or another dimension
          ch.vector.resize(dimension);
          const auto* raw = reinterpret_cast<const unsigned char*>(PQgetvalue(r, i, 3));
          for (std::size_t k = 0; k < dimension; ++k, raw += 4) {  // float32, little-endian, as stored
            const std::uint32_t bits = std::uint32_t{raw[0]} | std::uint32_t{raw[1]} << 8 |
                                       std::uint32_t{raw[2]} << 16 | std::uint32_t{raw[3]} << 24;
            std::memcpy(&ch.vector[k], &bits, sizeof bits);
          }
          ch.seq = seq;
          ch.id.assign(PQgetvalue(r, i, 1), static_cast<std::size_t>(PQgetlength(r, i, 1)));
          ch.version = static_cast<std::uint64_t>(binary_int64(PQgetvalue(r, i, 2)));
          ch.fields = fields_of(r, i, 4, true);
          hand();
          added = true;
        }
        // Nothing of this model yet: a change that changes nothing, so the next read starts after `seq`.
        if (!added) {
          ch = detail::VectorChange();
          ch.seq = seq;
          ch.removed = true;
          hand();
        }
      };
      if (after == 0) {
        start_over();
        return any;
      }
      const std::string after_text = std::to_string(after);
      Impl::Params p;
      p.add(tenant).add(after_text).add(model).add(dimension_text);
      auto res = impl_->run(c, read_changes, p);
      if (PQntuples(res.get()) == 0) return any;
      if (static_cast<std::uint64_t>(to_int64(PQgetvalue(res.get(), 0, 5))) > after) {
        // Changes this index has not seen were pruned: it starts over.
        ch.reset = true;
        hand();
        ch.reset = false;
        start_over();
        return any;
      }
      for (int i = 0; i < PQntuples(res.get()); ++i) {
        if (PQgetisnull(res.get(), i, 0)) continue;  // no change: the row carries pruned_through only
        ch = detail::VectorChange();
        ch.seq = static_cast<std::uint64_t>(to_int64(PQgetvalue(res.get(), i, 0)));
        ch.id.assign(PQgetvalue(res.get(), i, 1), static_cast<std::size_t>(PQgetlength(res.get(), i, 1)));
        ch.version = static_cast<std::uint64_t>(to_int64(PQgetvalue(res.get(), i, 2)));
        ch.removed = PQgetvalue(res.get(), i, 3)[0] == 't';
        if (!ch.removed) {
          auto values = vector_of(res.get(), i, 4);
          if (values) {
            ch.vector = std::move(*values);
            ch.fields = fields_of(res.get(), i, 6);
          } else {
            ch.removed = true;  // the vector is gone since (its removal follows), or of another dimension
          }
        }
        hand();
      }
      return any;
    });
  };
  // The index as this process has it, without asking the server (`seen`: the last change it applied). The first
  // fetch of candidates also says whether anything changed since (same snapshot): usually not, and then the warm
  // query is one round trip. When something did (or the index has seen nothing yet), it catches up from
  // cairn_search_changes and asks again; from then on the index holds every change committed before this call, so
  // changes committed later do not send it back (the rows decide what is returned, as always).
  std::uint64_t seen = 0;
  const detail::ReadVectorChanges nothing = [](const std::string&, const std::string&, std::uint64_t,
                                                const detail::VectorChangeSink&) { return false; };
  auto index = impl_->vectors.current(tenant_id, vector.model, dimension, nothing, &seen);
  bool caught_up = seen == 0;
  if (caught_up) index = impl_->vectors.current(tenant_id, vector.model, dimension, read, &seen);
  const std::string all_versions = q.all_versions ? "true" : "false";

  // Candidates from the index, checked against the rows (present, the latest unless all versions are searched,
  // the filters) and scored by the exact cosine of the stored vectors: a page and one more first (what a plain
  // hnswlib query returns), 4 times as many each round after, until a page and one more pass or the index has no
  // more. The index's walk already skips what its kept fields and versions rule out, so the first round usually
  // answers; later rounds are for rows the index could not judge (metadata it did not keep, a newer version without
  // a vector, a page after a cursor).
  const std::size_t first = page ? q.limit + 1 : want;
  const detail::VectorIndex::Accept accept = [&q](const std::string& id, std::uint64_t, const void* tag) {
    if (id.compare(0, q.filter.id_prefix.size(), q.filter.id_prefix) != 0) return false;
    const auto* fields = static_cast<const detail::FilterFields*>(tag);
    return !fields || !fields->metadata || detail::matches_filter(id, *fields, q.filter);
  };
  const std::vector<detail::VectorIndex::Bound> bounds = detail::filter_bounds(q.filter);
  for (std::size_t k = first;;) {
    // A page ranks by the exact cosine: versions near the k-th come too (hybrid's list is cut at `want` as the
    // other stores cut theirs).
    // The filter is checked in memory where the index kept the version's fields (detail::FilterFields), so that
    // a selective filter costs one walk; the rows check it again.
    const std::vector<detail::VectorHit> found = index->search_tagged(
        vector.values, k, accept, page ? detail::VectorIndex::near_tie : 0, q.ef, !q.all_versions, bounds);
    // The rows' vectors are read only where the index's copy does not give the exact cosine (VectorHit::exact).
    std::vector<std::string> ids, versions, read_vector;
    for (const auto& h : found) {
      ids.push_back(h.id);
      versions.push_back(std::to_string(h.version));
      read_vector.emplace_back(h.exact ? "f" : "t");
    }
    const std::string ids_text = array_literal(ids), versions_text = array_literal(versions);
    const std::string read_vector_text = array_literal(read_vector);
    const std::string seen_text = std::to_string(seen);
    Result res = impl_->with_connection([&](Impl::Connection& c, bool) {
      Impl::Params params;
      params.add(tenant_id).add(ids_text).add(versions_text).add(vector.model).add(all_versions).add(seen_text);
      params.add(read_vector_text);
      return impl_->run(c, fetch_candidates, params);
    });
    if (!caught_up && PQgetvalue(res.get(), 0, 16)[0] == 't') {
      index = impl_->vectors.current(tenant_id, vector.model, dimension, read, &seen);
      caught_up = true;
      k = first;
      continue;
    }
    caught_up = true;  // nothing changed up to this snapshot: the index held every change before the call
    std::vector<detail::SearchCandidate> near = impl_->similar_rows(res.get(), vector, q.filter, &found);
    if (page) {
      *page = detail::rank_search_page(near, q, p);
      if (page->next_cursor || found.size() < k) return near;
    } else if (near.size() >= want || found.size() < k) {
      std::sort(near.begin(), near.end(), [](const detail::SearchCandidate& a, const detail::SearchCandidate& b) {
        return detail::hit_before(*a.similarity, *a.record, *b.similarity, *b.record);  // the scan's order
      });
      if (near.size() > want) near.resize(want);
      return near;
    }
    k *= 4;
  }
}

CAIRN_END_NAMESPACE

CAIRN_BEGIN_NAMESPACE

std::size_t PostgresArtifactStore::reindex(const std::string& tenant_id) {
  detail::check_tenant(tenant_id);
  if (!fits_pg_text(tenant_id)) return 0;
  const auto& embedder = impl_->options.embedder;
  const std::optional<std::string> model = embedder ? std::optional<std::string>(embedder->model()) : std::nullopt;
  if (model) require_pg_text("reindex: embedder.model", *model);
  const auto count = [&] {
    return impl_->with_connection([&](Impl::Connection& c, bool) {
      Impl::Params p;
      p.add(tenant_id).add(model);
      auto res = impl_->run(c, reindex_count, p);
      return static_cast<std::uint64_t>(to_int64(PQgetvalue(res.get(), 0, 0)));
    });
  };
  const std::uint64_t total = count();
  const auto report = [&](std::uint64_t done) {
    if (!impl_->options.observer) return;
    Event e;
    e.kind = EventKind::index;
    e.operation = "reindex";
    e.tenant = tenant_id;
    e.items = done;
    e.total = total;
    impl_->options.observer->on_event(e);
  };
  std::size_t indexed = 0;
  std::uint64_t done = 0;
  std::string after_id;
  std::string after_version = "0";
  for (;;) {
    // A batch: read, then tokenize and embed (outside any transaction), then write in one transaction.
    struct Item {
      ArtifactPtr record;
      std::string write_token;  // which record this version is: the words and vector are written for it alone
      bool needs_words;
      std::optional<IndexedWords> words;
      std::optional<std::string> vector;
    };
    std::vector<Item> items;
    std::size_t rows = 0;
    impl_->with_connection([&](Impl::Connection& c, bool) {
      Impl::Params p;
      p.add(tenant_id).add(model).add(after_id).add(after_version);
      auto res = impl_->run(c, reindex_batch, p);
      rows = static_cast<std::size_t>(PQntuples(res.get()));
      items.clear();
      for (int i = 0; i < PQntuples(res.get()); ++i) {
        after_id.assign(PQgetvalue(res.get(), i, 1), static_cast<std::size_t>(PQgetlength(res.get(), i, 1)));
        after_version = PQgetvalue(res.get(), i, 2);
        try {
          items.push_back({impl_->decode(res.get(), i),
                           std::string(PQgetvalue(res.get(), i, 16),
                                       static_cast<std::size_t>(PQgetlength(res.get(), i, 16))),
                           PQgetvalue(res.get(), i, 15)[0] == 't', {}, {}});
        } catch (const storage_error&) {
          // a damaged row: left as it is (fetch it to get the error); it stays unindexed
        }
      }
      return 0;
    });
    if (rows == 0) break;
    std::vector<std::string> texts;
    for (auto& item : items) {
      if (item.needs_words) item.words = indexed_words(*item.record);
      if (embedder) texts.push_back(embedder->text_of(*item.record));
    }
    if (embedder) {
      // Versions that have a vector of the model already get the same one again: it is not written twice.
      auto vectors = detail::embed_checked(*embedder, texts);
      for (std::size_t i = 0; i < items.size(); ++i) items[i].vector = vector_bytea(vectors[i].values);
    }
    indexed += impl_->with_connection([&](Impl::Connection& c, bool) {
      const std::string prefix = *impl_->lexeme_prefix(c, tenant_id, true);
      std::size_t n = 0;
      std::int64_t latest = 0, latest_words = 0, versions = 0, version_words = 0;
      std::vector<std::string> vector_ids, vector_versions;
      impl_->simple(c, "BEGIN", "reindexing");
      try {
        for (const auto& item : items) {
          const std::string version = std::to_string(item.record->version());
          bool wrote = false;
          if (item.words) {
            const std::string tsvector = tsvector_literal(*item.words, prefix);
            Impl::Params p;
            p.add(tenant_id).add(item.record->id()).add(version).add(tsvector).add(item.words->count);
            p.add(item.write_token);
            auto res = impl_->run(c, reindex_words, p);
            if (PQntuples(res.get()) == 1) {
              wrote = true;
              const std::int64_t words = to_int64(item.words->count);
              ++versions;
              version_words += words;
              if (PQgetvalue(res.get(), 0, 0)[0] == 't') {
                ++latest;
                latest_words += words;
              }
            }
          }
          if (item.vector) {
            Impl::Params p;
            p.add(tenant_id).add(item.record->id()).add(version).add(model).add(item.vector).add(item.write_token);
            auto res = impl_->run(c, reindex_vector, p);
            if (PQgetvalue(res.get(), 0, 0)[0] != '0') {
              wrote = true;
              vector_ids.push_back(item.record->id());
              vector_versions.push_back(version);
            }
          }
          if (wrote) ++n;
        }
        if (n > 0) {
          const std::string latest_text = std::to_string(latest), latest_words_text = std::to_string(latest_words);
          const std::string versions_text = std::to_string(versions);
          const std::string version_words_text = std::to_string(version_words);
          const std::string ids = array_literal(vector_ids), numbers = array_literal(vector_versions);
          const std::string model_text = model ? *model : std::string();
          Impl::Params p;
          p.add(tenant_id).add(latest_text).add(latest_words_text).add(versions_text).add(version_words_text);
          p.add(ids).add(numbers).add(model_text);
          impl_->run(c, reindex_finish, p);
        }
        impl_->simple(c, "COMMIT", "reindexing");
      } catch (...) {
        try {
          impl_->simple(c, "ROLLBACK", "reindexing");
        } catch (const error&) {
          // the connection is gone, and the transaction with it
        }
        throw;
      }
      return n;
    });
    done += rows;
    report(std::min(done, total));
  }
  return indexed;
}

CAIRN_END_NAMESPACE
