// PostgresArtifactStore: the schema, its migrations, and migrating a database when a store connects.
#include <array>

#include <fmt/format.h>

#include "postgres_store_impl.hpp"

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
    // A word search handed the document counts of its words that the caller already has: p_known[i] for p_df[i]
    // (-1: not known), valid while the tenant's statistics row is in the state p_stats names, as r_stats gave it (the
    // row's version, its sequence and figures). Every write that can change how many documents hold a word updates
    // that row (a store, a removal, a reindex), and so its version. Counting a common word's documents visits every
    // one of them in the table (14,000 rows, 17 ms, at 100,000 artifacts in one tenant); a process keeps the counts
    // it was given (docs/search.md, "The PostgreSQL store"). The counts asked for are still computed in the query's
    // snapshot, and the function of migration 6 stays for processes of the version before.
    R"sql(
CREATE OR REPLACE FUNCTION cairn_search_words(p_all boolean, p_tenant text, p_from text, p_to text, p_df tsquery[],
    p_match tsquery, p_type text, p_mime text, p_creator text, p_after bigint, p_before bigint, p_known bigint[],
    p_stats text)
RETURNS TABLE (r_tenant_id text, r_id text, r_version bigint, r_type text, r_title text, r_description text,
    r_purpose text, r_value text, r_storage_url text, r_mime_type text, r_size_bytes bigint, r_schema_url text,
    r_created_by text, r_created_at bigint, r_metadata text, r_docs bigint, r_words bigint, r_unindexed bigint,
    r_df bigint[], r_stats text)
LANGUAGE plpgsql STABLE SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  v_every boolean;  -- every version with words is one searched
  v_stats text;     -- the statistics row's state: its version (xmin), sequence and figures
  v_known boolean;  -- p_known holds counts of this state
BEGIN
  SELECT p_all OR coalesce(s.versions = s.docs, false),
         concat_ws(':', s.xmin, s.seq, s.docs, s.doc_words, s.docs_unindexed, s.versions, s.version_words,
                   s.versions_unindexed)
    INTO v_every, v_stats
    FROM (SELECT 1) one LEFT JOIN cairn_search_seq s ON s.tenant_id = p_tenant;
  v_known := coalesce(v_stats <> '' AND v_stats = p_stats, false);
  RETURN QUERY
  SELECT f.*, CASE WHEN p_all THEN s.versions ELSE s.docs END,
         CASE WHEN p_all THEN s.version_words ELSE s.doc_words END,
         CASE WHEN p_all THEN s.versions_unindexed ELSE s.docs_unindexed END, d.df, v_stats
  FROM (SELECT 1) one LEFT JOIN cairn_search_seq s ON s.tenant_id = p_tenant
  CROSS JOIN (SELECT ARRAY(SELECT CASE WHEN v_known AND coalesce(p_known[w.i] >= 0, false) THEN p_known[w.i]
                                  ELSE (SELECT count(*) FROM cairn_artifacts a
                                        WHERE (a.tenant_id = p_tenant) IS TRUE AND a.words @@ w.q
                                          AND (v_every OR EXISTS (SELECT 1 FROM cairn_heads h
                                                                  WHERE h.tenant_id = p_tenant AND h.id = a.id
                                                                    AND h.latest = a.version))) END
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
    // The words index without GIN's pending list (fastupdate off): every write puts its words into the index
    // itself. With the list, a store just loaded held 73 MB of entries no cleanup had merged (9,403 pages, against
    // gin_pending_list_limit's 4 MB), and every word search read all of them: 25 ms instead of 1 for a tenant of
    // 1,000, until autovacuum merged them. The list is merged here once.
    R"sql(
ALTER INDEX cairn_artifacts_words SET (fastupdate = off);
SELECT gin_clean_pending_list('cairn_artifacts_words');
)sql",
    // The pending list back on, and autovacuum unthrottled on the table that holds it. The list of migration 8 grew
    // past its limit because autovacuum's cleanup of it (VACUUM's and ANALYZE's alike) holds the index's metapage
    // lock while it sleeps between pages (autovacuum_vacuum_cost_delay, 2 ms by default), and an insert that finds
    // the list over its limit and that lock taken skips its own cleanup (ginfast.c, ginInsertCleanup): a loading
    // writer appended faster than the throttled worker merged. Without the delay, the worker merges the list in one
    // pass and writes clean up after themselves again, so a write costs what it does with the list (not a walk of
    // every long posting tree it touches) and the list stays near gin_pending_list_limit.
    R"sql(
ALTER INDEX cairn_artifacts_words SET (fastupdate = on);
ALTER TABLE cairn_artifacts SET (autovacuum_vacuum_cost_delay = 0);
)sql",
    // How many latest versions, and how many versions, hold each word, kept as the writes change them, so a word
    // search reads a word's count instead of counting its documents (a common word at 100,000 artifacts in one
    // tenant: 14,000 rows visited, 17 ms, for every query that was not asked before in the process). A write does
    // not update the counts of its ~200 words itself (that cost 0.8-1.2 ms a write): triggers on cairn_artifacts
    // append the words a statement added or took away to cairn_word_log, one row per version (+1/-1 for the latest
    // versions, +1/-1 for every version), and a word's count is its row in cairn_word_counts plus the tenant's log
    // rows that hold it. A store that brings its tenant's versions to a multiple of cairn.word_log_fold (a
    // setting, 256 when unset), and a removal's or reindex's log row with a chance of one in that many, folds the
    // tenant's log into the counts: one upsert per distinct word of the log, in word order, under a per-tenant
    // advisory lock it only tries (a fold running elsewhere leaves this one to the next). Not every multiple of the
    // log's own numbers: tenants written in turn would fold some and never others (at 100 tenants and 256, one in
    // four). Triggers, not the write statements: every statement that changes a version's words keeps the counts
    // (a store, a removal, a reindex, a later migration). The lexemes are the tenant's ("<no>:<word>"): a count row
    // belongs to one tenant.
    // A version inserted is its id's latest (the one before it, version - 1, no longer is); a statement that
    // deletes versions deletes every version of an id (a removal), whose highest was the latest; an update that
    // gives a version words (reindex) checks the head row. The insert trigger is a row trigger (a store inserts one
    // version); the others are statement triggers (a removal deletes every version at once). The counts start from
    // the rows, after the triggers exist
    // (creating them waits for the writes in progress and holds off new ones until this migration commits).
    R"sql(
CREATE TABLE cairn_word_counts (
  lexeme   text COLLATE "C" PRIMARY KEY,
  docs     bigint NOT NULL,
  versions bigint NOT NULL
) WITH (fillfactor = 70);
CREATE TABLE cairn_word_log (
  n         bigserial PRIMARY KEY,
  tenant_id text COLLATE "C" NOT NULL,
  words     text[] NOT NULL,
  docs      integer NOT NULL,
  versions  integer NOT NULL
);
CREATE INDEX cairn_word_log_tenant ON cairn_word_log (tenant_id, n);
CREATE FUNCTION cairn_fold_words(p_tenant text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF NOT pg_try_advisory_xact_lock(736128374, hashtext(p_tenant)) THEN
    RETURN;
  END IF;
  WITH moved AS (DELETE FROM cairn_word_log WHERE tenant_id = p_tenant RETURNING words, docs, versions)
  INSERT INTO cairn_word_counts AS c (lexeme, docs, versions)
  SELECT w, sum(m.docs), sum(m.versions) FROM moved m, unnest(m.words) AS w GROUP BY w ORDER BY w
  ON CONFLICT (lexeme) DO UPDATE SET docs = c.docs + EXCLUDED.docs, versions = c.versions + EXCLUDED.versions;
END
$$;
CREATE FUNCTION cairn_fold_after(p_tenants text[], p_numbers bigint[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  v_every bigint := greatest(coalesce(nullif(current_setting('cairn.word_log_fold', true), '')::bigint, 256), 1);
  v_tenant text;
BEGIN
  FOR v_tenant IN SELECT DISTINCT x.t FROM unnest(p_tenants, p_numbers) AS x(t, n) WHERE hashint8(x.n) % v_every = 0
  LOOP
    PERFORM cairn_fold_words(v_tenant);
  END LOOP;
END
$$;
CREATE FUNCTION cairn_words_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  v_every bigint := greatest(coalesce(nullif(current_setting('cairn.word_log_fold', true), '')::bigint, 256), 1);
  v_before tsvector;
BEGIN
  IF NEW.words IS NOT NULL THEN
    INSERT INTO cairn_word_log (tenant_id, words, docs, versions)
      VALUES (NEW.tenant_id, tsvector_to_array(NEW.words), 1, 1);
  END IF;
  IF NEW.version > 1 THEN
    SELECT a.words INTO v_before FROM cairn_artifacts a
      WHERE a.tenant_id = NEW.tenant_id AND a.id = NEW.id AND a.version = NEW.version - 1;
    IF v_before IS NOT NULL THEN
      INSERT INTO cairn_word_log (tenant_id, words, docs, versions)
        VALUES (NEW.tenant_id, tsvector_to_array(v_before), -1, 0);
    END IF;
  END IF;
  IF (SELECT s.versions FROM cairn_search_seq s WHERE s.tenant_id = NEW.tenant_id) % v_every = 0 THEN
    PERFORM cairn_fold_words(NEW.tenant_id);
  END IF;
  RETURN NULL;
END
$$;
CREATE FUNCTION cairn_words_updated() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  v_tenants text[];
  v_numbers bigint[];
BEGIN
  WITH c AS (SELECT o.tenant_id, o.words AS was, n.words AS now,
                    EXISTS (SELECT 1 FROM cairn_heads h WHERE h.tenant_id = n.tenant_id AND h.id = n.id
                            AND h.latest = n.version) AS latest
             FROM cairn_before o JOIN cairn_after n
               ON n.tenant_id = o.tenant_id AND n.id = o.id AND n.version = o.version
             WHERE o.words IS DISTINCT FROM n.words),
  l AS (INSERT INTO cairn_word_log (tenant_id, words, docs, versions)
        SELECT tenant_id, tsvector_to_array(now), latest::integer, 1 FROM c WHERE now IS NOT NULL
        UNION ALL
        SELECT tenant_id, tsvector_to_array(was), -latest::integer, -1 FROM c WHERE was IS NOT NULL
        RETURNING tenant_id, n)
  SELECT array_agg(tenant_id), array_agg(n) INTO v_tenants, v_numbers FROM l;
  PERFORM cairn_fold_after(v_tenants, v_numbers);
  RETURN NULL;
END
$$;
CREATE FUNCTION cairn_words_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  v_tenants text[];
  v_numbers bigint[];
BEGIN
  WITH l AS (INSERT INTO cairn_word_log (tenant_id, words, docs, versions)
             SELECT g.tenant_id, tsvector_to_array(g.words), -(g.version = g.top)::integer, -1
             FROM (SELECT tenant_id, words, version, max(version) OVER (PARTITION BY tenant_id, id) AS top
                   FROM cairn_gone) g
             WHERE g.words IS NOT NULL
             RETURNING tenant_id, n)
  SELECT array_agg(tenant_id), array_agg(n) INTO v_tenants, v_numbers FROM l;
  PERFORM cairn_fold_after(v_tenants, v_numbers);
  RETURN NULL;
END
$$;
CREATE TRIGGER cairn_words_inserted AFTER INSERT ON cairn_artifacts
  FOR EACH ROW EXECUTE FUNCTION cairn_words_inserted();
CREATE TRIGGER cairn_words_updated AFTER UPDATE ON cairn_artifacts
  REFERENCING OLD TABLE AS cairn_before NEW TABLE AS cairn_after
  FOR EACH STATEMENT EXECUTE FUNCTION cairn_words_updated();
CREATE TRIGGER cairn_words_deleted AFTER DELETE ON cairn_artifacts REFERENCING OLD TABLE AS cairn_gone
  FOR EACH STATEMENT EXECUTE FUNCTION cairn_words_deleted();
INSERT INTO cairn_word_counts (lexeme, docs, versions)
SELECT w, count(*) FILTER (WHERE h.id IS NOT NULL), count(*)
FROM cairn_artifacts a LEFT JOIN cairn_heads h ON h.tenant_id = a.tenant_id AND h.id = a.id AND h.latest = a.version,
     unnest(tsvector_to_array(a.words)) AS w
WHERE a.words IS NOT NULL GROUP BY w;
-- A word search that reads its words' document counts (p_lexemes: the tenant's lexeme of each query word) from
-- cairn_word_counts and the tenant's unfolded log, in the query's snapshot, or counts them (p_df, as migration 7's
-- does) when fewer than 2,048 versions are searched: there a word's rows are fewer than the log's (W6 at 1,000 a
-- tenant: 1.5 ms a query counted, 3 to 13 ms reading a log of 128 to 1,000 rows). Counts the caller has for the
-- statistics state p_stats (p_known) are not read again.
CREATE FUNCTION cairn_search_words(p_all boolean, p_tenant text, p_from text, p_to text, p_df tsquery[],
    p_lexemes text[], p_match tsquery, p_type text, p_mime text, p_creator text, p_after bigint, p_before bigint,
    p_known bigint[], p_stats text)
RETURNS TABLE (r_tenant_id text, r_id text, r_version bigint, r_type text, r_title text, r_description text,
    r_purpose text, r_value text, r_storage_url text, r_mime_type text, r_size_bytes bigint, r_schema_url text,
    r_created_by text, r_created_at bigint, r_metadata text, r_docs bigint, r_words bigint, r_unindexed bigint,
    r_df bigint[], r_stats text)
LANGUAGE plpgsql STABLE SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  v_every boolean;  -- every version with words is one searched
  v_stats text;     -- the statistics row's state: its version (xmin), sequence and figures
  v_known boolean;  -- p_known holds counts of this state
  v_small boolean;  -- fewer than 2,048 versions searched: counting them costs less than reading the log
BEGIN
  SELECT p_all OR coalesce(s.versions = s.docs, false),
         concat_ws(':', s.xmin, s.seq, s.docs, s.doc_words, s.docs_unindexed, s.versions, s.version_words,
                   s.versions_unindexed),
         coalesce(CASE WHEN p_all THEN s.versions ELSE s.docs END < 2048, true)
    INTO v_every, v_stats, v_small
    FROM (SELECT 1) one LEFT JOIN cairn_search_seq s ON s.tenant_id = p_tenant;
  v_known := coalesce(v_stats <> '' AND v_stats = p_stats, false);
  RETURN QUERY
  SELECT f.*, CASE WHEN p_all THEN s.versions ELSE s.docs END,
         CASE WHEN p_all THEN s.version_words ELSE s.doc_words END,
         CASE WHEN p_all THEN s.versions_unindexed ELSE s.docs_unindexed END, d.df, v_stats
  FROM (SELECT 1) one LEFT JOIN cairn_search_seq s ON s.tenant_id = p_tenant
  CROSS JOIN (SELECT ARRAY(SELECT CASE WHEN v_known AND coalesce(p_known[w.i] >= 0, false) THEN p_known[w.i]
                                  WHEN v_small THEN
                                    (SELECT count(*) FROM cairn_artifacts a
                                     WHERE (a.tenant_id = p_tenant) IS TRUE AND a.words @@ w.q
                                       AND (v_every OR EXISTS (SELECT 1 FROM cairn_heads h
                                                               WHERE h.tenant_id = p_tenant AND h.id = a.id
                                                                 AND h.latest = a.version)))
                                  ELSE coalesce((SELECT CASE WHEN p_all THEN c.versions ELSE c.docs END
                                                 FROM cairn_word_counts c WHERE c.lexeme = w.l), 0)
                                       + coalesce((SELECT sum(CASE WHEN p_all THEN g.versions ELSE g.docs END)
                                                   FROM cairn_word_log g
                                                   WHERE g.tenant_id = p_tenant AND g.words @> ARRAY[w.l]), 0) END
                           FROM unnest(p_df, p_lexemes) WITH ORDINALITY AS w(q, l, i) ORDER BY w.i) AS df) d
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
    // Folds off the writer's path (schema 11): a fold grouped 256 versions' words in the transaction of the write
    // that made it due, 30 to 60 ms that one store call in 256 waited for. A session that says a thread of its
    // store object listens (cairn.word_fold = 'notify', which PostgresOptions::fold_words_in_background sets) now
    // sends a notification on cairn_word_fold with the tenant instead, and that thread folds on a connection of its
    // own (postgres_word_fold.cpp). Every 8th due point folds in the transaction anyway, so a log whose
    // notifications found no listener (the thread not yet connected, a pooler that does not pass LISTEN) stays
    // bounded; so does every due point of a session that says nothing (another cairn, psql). A setting that is not
    // a whole number of up to 12 digits counts as unset (256) instead of failing every write with a cast error.
    R"sql(
CREATE FUNCTION cairn_word_log_every() RETURNS bigint LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN s ~ '^\s*[0-9]{1,12}\s*$' THEN greatest(s::bigint, 1) ELSE 256 END
  FROM (SELECT coalesce(current_setting('cairn.word_log_fold', true), '') AS s) x
$$;
CREATE FUNCTION cairn_fold_due(p_tenant text, p_n bigint) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  v_every bigint := cairn_word_log_every();
BEGIN
  IF p_n IS NULL OR p_n % v_every <> 0 THEN
    RETURN;
  END IF;
  IF coalesce(current_setting('cairn.word_fold', true), '') = 'notify' AND p_n % (v_every * 8) <> 0
     AND octet_length(p_tenant) < 7000 THEN
    PERFORM pg_notify('cairn_word_fold', p_tenant);
  ELSE
    PERFORM cairn_fold_words(p_tenant);
  END IF;
END
$$;
CREATE OR REPLACE FUNCTION cairn_fold_after(p_tenants text[], p_numbers bigint[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  v_due record;
BEGIN
  FOR v_due IN SELECT x.t, min(hashint8(x.n)::bigint) AS h FROM unnest(p_tenants, p_numbers) AS x(t, n)
               WHERE hashint8(x.n) % cairn_word_log_every() = 0 GROUP BY x.t
  LOOP
    PERFORM cairn_fold_due(v_due.t, v_due.h);
  END LOOP;
END
$$;
CREATE OR REPLACE FUNCTION cairn_words_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  v_before tsvector;
BEGIN
  IF NEW.words IS NOT NULL THEN
    INSERT INTO cairn_word_log (tenant_id, words, docs, versions)
      VALUES (NEW.tenant_id, tsvector_to_array(NEW.words), 1, 1);
  END IF;
  IF NEW.version > 1 THEN
    SELECT a.words INTO v_before FROM cairn_artifacts a
      WHERE a.tenant_id = NEW.tenant_id AND a.id = NEW.id AND a.version = NEW.version - 1;
    IF v_before IS NOT NULL THEN
      INSERT INTO cairn_word_log (tenant_id, words, docs, versions)
        VALUES (NEW.tenant_id, tsvector_to_array(v_before), -1, 0);
    END IF;
  END IF;
  PERFORM cairn_fold_due(NEW.tenant_id, (SELECT s.versions FROM cairn_search_seq s
                                         WHERE s.tenant_id = NEW.tenant_id));
  RETURN NULL;
END
$$;
)sql",
    // The word log keeps each version's lexemes as a tsvector without positions (strip), not a text[], in the row
    // itself: a word query of a big tenant checks every row of the tenant's log for each of its words, and a
    // tsvector is searched for a lexeme by bisection where an array is compared element by element. A version's
    // lexemes (about 2 KB at W6's 200 words) barely compress, so by default the toaster moved them to the TOAST
    // table and every check fetched them from there; with toast_tuple_target at its largest, a row of up to 8 KB
    // stays in the heap as it is (a larger one is still compressed or moved). By hand, the log right after 100,000
    // versions were stored (about 160 rows): 1.05 ms a word as arrays, 0.38 ms as tsvectors in TOAST, 0.10 ms in
    // the row (the last two each over 400 of the tenant's words). The check is the query's own single-word tsquery
    // (p_df), which the tenant's lexeme matches exactly; folds take the lexemes out with tsvector_to_array.
    R"sql(
ALTER TABLE cairn_word_log SET (toast_tuple_target = 8160);
ALTER TABLE cairn_word_log ALTER COLUMN words TYPE tsvector USING array_to_tsvector(words);
CREATE OR REPLACE FUNCTION cairn_fold_words(p_tenant text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF NOT pg_try_advisory_xact_lock(736128374, hashtext(p_tenant)) THEN
    RETURN;
  END IF;
  WITH moved AS (DELETE FROM cairn_word_log WHERE tenant_id = p_tenant RETURNING words, docs, versions)
  INSERT INTO cairn_word_counts AS c (lexeme, docs, versions)
  SELECT w, sum(m.docs), sum(m.versions) FROM moved m, unnest(tsvector_to_array(m.words)) AS w GROUP BY w ORDER BY w
  ON CONFLICT (lexeme) DO UPDATE SET docs = c.docs + EXCLUDED.docs, versions = c.versions + EXCLUDED.versions;
END
$$;
CREATE OR REPLACE FUNCTION cairn_words_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  v_before tsvector;
BEGIN
  IF NEW.words IS NOT NULL THEN
    INSERT INTO cairn_word_log (tenant_id, words, docs, versions)
      VALUES (NEW.tenant_id, strip(NEW.words), 1, 1);
  END IF;
  IF NEW.version > 1 THEN
    SELECT a.words INTO v_before FROM cairn_artifacts a
      WHERE a.tenant_id = NEW.tenant_id AND a.id = NEW.id AND a.version = NEW.version - 1;
    IF v_before IS NOT NULL THEN
      INSERT INTO cairn_word_log (tenant_id, words, docs, versions)
        VALUES (NEW.tenant_id, strip(v_before), -1, 0);
    END IF;
  END IF;
  PERFORM cairn_fold_due(NEW.tenant_id, (SELECT s.versions FROM cairn_search_seq s
                                         WHERE s.tenant_id = NEW.tenant_id));
  RETURN NULL;
END
$$;
CREATE OR REPLACE FUNCTION cairn_words_updated() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  v_tenants text[];
  v_numbers bigint[];
BEGIN
  WITH c AS (SELECT o.tenant_id, o.words AS was, n.words AS now,
                    EXISTS (SELECT 1 FROM cairn_heads h WHERE h.tenant_id = n.tenant_id AND h.id = n.id
                            AND h.latest = n.version) AS latest
             FROM cairn_before o JOIN cairn_after n
               ON n.tenant_id = o.tenant_id AND n.id = o.id AND n.version = o.version
             WHERE o.words IS DISTINCT FROM n.words),
  l AS (INSERT INTO cairn_word_log (tenant_id, words, docs, versions)
        SELECT tenant_id, strip(now), latest::integer, 1 FROM c WHERE now IS NOT NULL
        UNION ALL
        SELECT tenant_id, strip(was), -latest::integer, -1 FROM c WHERE was IS NOT NULL
        RETURNING tenant_id, n)
  SELECT array_agg(tenant_id), array_agg(n) INTO v_tenants, v_numbers FROM l;
  PERFORM cairn_fold_after(v_tenants, v_numbers);
  RETURN NULL;
END
$$;
CREATE OR REPLACE FUNCTION cairn_words_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  v_tenants text[];
  v_numbers bigint[];
BEGIN
  WITH l AS (INSERT INTO cairn_word_log (tenant_id, words, docs, versions)
             SELECT g.tenant_id, strip(g.words), -(g.version = g.top)::integer, -1
             FROM (SELECT tenant_id, words, version, max(version) OVER (PARTITION BY tenant_id, id) AS top
                   FROM cairn_gone) g
             WHERE g.words IS NOT NULL
             RETURNING tenant_id, n)
  SELECT array_agg(tenant_id), array_agg(n) INTO v_tenants, v_numbers FROM l;
  PERFORM cairn_fold_after(v_tenants, v_numbers);
  RETURN NULL;
END
$$;
CREATE OR REPLACE FUNCTION cairn_search_words(p_all boolean, p_tenant text, p_from text, p_to text, p_df tsquery[],
    p_lexemes text[], p_match tsquery, p_type text, p_mime text, p_creator text, p_after bigint, p_before bigint,
    p_known bigint[], p_stats text)
RETURNS TABLE (r_tenant_id text, r_id text, r_version bigint, r_type text, r_title text, r_description text,
    r_purpose text, r_value text, r_storage_url text, r_mime_type text, r_size_bytes bigint, r_schema_url text,
    r_created_by text, r_created_at bigint, r_metadata text, r_docs bigint, r_words bigint, r_unindexed bigint,
    r_df bigint[], r_stats text)
LANGUAGE plpgsql STABLE SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  v_every boolean;  -- every version with words is one searched
  v_stats text;     -- the statistics row's state: its version (xmin), sequence and figures
  v_known boolean;  -- p_known holds counts of this state
  v_small boolean;  -- fewer than 2,048 versions searched: counting them costs less than reading the log
BEGIN
  SELECT p_all OR coalesce(s.versions = s.docs, false),
         concat_ws(':', s.xmin, s.seq, s.docs, s.doc_words, s.docs_unindexed, s.versions, s.version_words,
                   s.versions_unindexed),
         coalesce(CASE WHEN p_all THEN s.versions ELSE s.docs END < 2048, true)
    INTO v_every, v_stats, v_small
    FROM (SELECT 1) one LEFT JOIN cairn_search_seq s ON s.tenant_id = p_tenant;
  v_known := coalesce(v_stats <> '' AND v_stats = p_stats, false);
  RETURN QUERY
  SELECT f.*, CASE WHEN p_all THEN s.versions ELSE s.docs END,
         CASE WHEN p_all THEN s.version_words ELSE s.doc_words END,
         CASE WHEN p_all THEN s.versions_unindexed ELSE s.docs_unindexed END, d.df, v_stats
  FROM (SELECT 1) one LEFT JOIN cairn_search_seq s ON s.tenant_id = p_tenant
  CROSS JOIN (SELECT ARRAY(SELECT CASE WHEN v_known AND coalesce(p_known[w.i] >= 0, false) THEN p_known[w.i]
                                  WHEN v_small THEN
                                    (SELECT count(*) FROM cairn_artifacts a
                                     WHERE (a.tenant_id = p_tenant) IS TRUE AND a.words @@ w.q
                                       AND (v_every OR EXISTS (SELECT 1 FROM cairn_heads h
                                                               WHERE h.tenant_id = p_tenant AND h.id = a.id
                                                                 AND h.latest = a.version)))
                                  ELSE coalesce((SELECT CASE WHEN p_all THEN c.versions ELSE c.docs END
                                                 FROM cairn_word_counts c WHERE c.lexeme = w.l), 0)
                                       + coalesce((SELECT sum(CASE WHEN p_all THEN g.versions ELSE g.docs END)
                                                   FROM cairn_word_log g
                                                   WHERE g.tenant_id = p_tenant AND g.words @@ w.q), 0) END
                           FROM unnest(p_df, p_lexemes) WITH ORDINALITY AS w(q, l, i) ORDER BY w.i) AS df) d
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

// Any number, as long as every cairn uses the same one: it serializes migrations of concurrent processes.
constexpr const char* migration_lock = "SELECT pg_advisory_xact_lock(7361283749120)";

}  // namespace

void PostgresArtifactStore::Impl::migrate(Connection& c) {
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
      throw storage_error(
          fmt::format("{}: the database has schema version {}, newer than the version {} this cairn knows; "
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

int PostgresArtifactStore::Impl::read_schema_version(Connection& c) {
  auto exists = simple(c, "SELECT to_regclass('cairn_schema') IS NOT NULL");
  if (PQgetvalue(exists.get(), 0, 0)[0] != 't') return -1;
  auto res = simple(c, "SELECT coalesce(max(version), -1) FROM cairn_schema");
  return static_cast<int>(to_int64(PQgetvalue(res.get(), 0, 0)));
}

CAIRN_END_NAMESPACE
