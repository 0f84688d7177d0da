// PostgresArtifactStore: the SQL of its prepared statements.
#include "postgres_statements.hpp"

#include <string>

#include <fmt/format.h>

CAIRN_BEGIN_NAMESPACE
namespace detail {
namespace pg {
namespace {

constexpr const char* record_columns =
    "tenant_id, id, version, type, title, description, purpose, coalesce(value_text, value::text), storage_url, "
    "mime_type, size_bytes, schema_url, created_by, created_at, coalesce(metadata_text, metadata::text)";

}  // namespace

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
  // A word search is the function cairn_search_words (migration 5: why a function; migration 7: the document
  // counts the caller has, $11, of the statistics state $12; migration 10: the words' lexemes, $13, whose counts it
  // reads), its parameters this statement's.
  const auto search_sql = [](const char* all_versions) {
    return fmt::format(
        "SELECT * FROM cairn_search_words({}, $1::text, $2::text, $3::text, $4::tsquery[], $13::text[], "
        "$5::tsquery, $6::text, $7::text, $8::text, $9::bigint, $10::bigint, $11::bigint[], "
        "$12::text)",
        all_versions);
  };
  // Exact similarity: every version in scope with a vector of the model $4 and dimension $5, after the filters.
  const auto vectors_sql = [](std::string scope) {
    scope.insert(scope.find(" WHERE "),
                 " JOIN cairn_search_vectors v ON v.tenant_id = a.tenant_id "
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
    case head_version: return "SELECT latest FROM cairn_heads WHERE tenant_id = $1::text AND id = $2::text";
    case find_token:
      return "SELECT version FROM cairn_artifacts "
             "WHERE tenant_id = $1::text AND id = $2::text AND write_token = $3::text";
    case fetch_latest:
      return fmt::format(
          "SELECT {} FROM cairn_artifacts WHERE tenant_id = $1::text AND id = $2::text "
          "ORDER BY version DESC LIMIT 1",
          record_columns);
    case fetch_version:
      return fmt::format(
          "SELECT {} FROM cairn_artifacts "
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
      // The versions an index proposed ($2 ids, $3 versions) that are still there and still the latest unless
      // every version is searched ($5): the rows decide, not the index. The vector of the model $4 only where $7
      // asks for it (the index's copy gives the rest their exact cosine; a version it has no vector of is dropped
      // by the caller): the vectors' table is not read for the others. Where $8 says the caller keeps the record
      // (RecordCache), the row carries the tenant, id and version alone (its type NULL), after the same check.
      // And, from the same snapshot, whether the (tenant, model) changed after $6, the change the index has seen
      // (column 16, on every row; one row with NULL record columns when no candidate is there): when it did not,
      // the index held every change committed before this statement, and one round trip answers the query.
      return fmt::format(
          "SELECT f.*, ch.changed FROM (SELECT EXISTS (SELECT 1 FROM cairn_search_changes x "
          "WHERE x.tenant_id = $1::text AND x.seq > $6::bigint AND (x.model = $4::text OR x.removed)) AS changed) ch "
          "LEFT JOIN (SELECT {}, CASE WHEN c.read THEN (SELECT v.vec FROM cairn_search_vectors v "
          "WHERE v.tenant_id = $1::text AND v.model = $4::text AND v.id = c.id AND v.version = c.version) END FROM "
          "unnest($2::text[], $3::bigint[], $7::boolean[], $8::boolean[]) AS c(id, version, read, kept) "
          "JOIN cairn_artifacts a ON a.tenant_id = $1::text AND a.id = c.id AND a.version = c.version "
          "WHERE NOT c.kept AND ($5::boolean OR EXISTS (SELECT 1 FROM cairn_heads h WHERE h.tenant_id = $1::text "
          "AND h.id = a.id AND h.latest = a.version)) "
          "UNION ALL SELECT $1::text, c.id, c.version, {} "
          "FROM unnest($2::text[], $3::bigint[], $8::boolean[]) AS c(id, version, kept) "
          "WHERE c.kept AND ($5::boolean OR EXISTS (SELECT 1 FROM cairn_heads h WHERE h.tenant_id = $1::text "
          "AND h.id = c.id AND h.latest = c.version))) f ON true",
          "a.tenant_id, a.id, a.version, a.type, a.title, a.description, a.purpose, "
          "coalesce(a.value_text, a.value::text), a.storage_url, a.mime_type, a.size_bytes, a.schema_url, "
          "a.created_by, a.created_at, coalesce(a.metadata_text, a.metadata::text)",
          "NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::bigint, "
          "NULL::text, NULL::text, NULL::bigint, NULL::text, NULL::bytea");
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
      // Columns 4-8: what a filter reads of each version (detail::FilterFields), kept beside its vector; column 9:
      // how many versions the tenant has (what the index makes room for before the rows come).
      return "SELECT s.seq, v.id, v.version, v.vec, a.type, a.mime_type, a.created_by, a.created_at, "
             "coalesce(a.metadata_text, a.metadata::text), s.versions FROM cairn_search_seq s "
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

}  // namespace pg
}  // namespace detail
CAIRN_END_NAMESPACE
