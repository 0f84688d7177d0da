// cairn (private) — SqliteArtifactStore::Impl, what the store's files share: its connections (opening one, the
// pool), decoding a row, the tenants' numbers and indexing a version's words, pruning the change sequence, and the
// store's search helpers (sqlite_search.cpp). The schema is sqlite_schema.cpp's, the SQL sqlite_statements.cpp's;
// construction and CRUD are sqlite_store.cpp.
#pragma once

#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cairn/artifact/search/filter_columns.hpp"
#include "cairn/artifact/search/vector_cache.hpp"
#include "cairn/store/sqlite_store.hpp"
#include "cairn/version.hpp"

#include "../common/connection_pool.hpp"
#include "../common/record_cache.hpp"
#include "../common/record_columns.hpp"
#include "../common/sqlite_connection.hpp"
#include "sqlite_columns.hpp"
#include "sqlite_statements.hpp"

CAIRN_BEGIN_NAMESPACE

// The store's files name what detail::sqlite holds (statements, columns) unqualified, as they did when all of it
// lived in one file's unnamed namespace.
using namespace detail::sqlite;

struct SqliteArtifactStore::Impl {
  using Connection = detail::SqliteConnection<statement_count>;
  using Query = detail::SqliteQuery<Connection>;
  using WriteTransaction = detail::SqliteWriteTransaction<Connection>;

  // The store's tables and their migrations (sqlite_schema.cpp), for detail::sqlite_migrate.
  static const detail::SqliteSchema schema;

  Impl(std::string p, SqliteOptions o)
      : path(std::move(p)),
        options(o),
        where(fmt::format("sqlite store '{}'", detail::excerpt(path, 200))),
        pool(o.max_connections, [this] { return open(); }) {}

  // A new connection to the file, its statements' SQL statement_sql's, cairn_hits registered (sqlite_store.cpp).
  std::unique_ptr<Connection> open() const;

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

  /// Indexes the words of the versions that have none (stored before the file had search; of one tenant, or of
  /// all), 256 a transaction, so an interrupted run keeps what it did and the next goes on; `batch_done(rows)` after
  /// each. Returns how many it indexed.
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

  /// What a filter reads of the version in the current row of `q`, from column `at` on (type, mime_type,
  /// created_by, created_at, metadata: detail::kept_filter_fields), added by change `seq`; null when the row has no
  /// record (gone since).
  static std::shared_ptr<const void> filter_fields(const Query& q, int at, std::uint64_t seq, const JsonLimits& limits);

  /// The change sequence of a (tenant, model) for detail::VectorCache, read in the caller's read transaction on
  /// `conn`: after 0, every current vector (each an add at the newest sequence number), else the changes after
  /// `after`.
  /// detail::ReadVectorChanges on `conn`: the changes are handed to `sink` as they are read (one change object, its
  /// vector's memory reused row after row).
  static bool read_changes(Connection& conn, const std::string& tenant, const std::string& model, std::uint64_t after,
                           const JsonLimits& limits, const detail::VectorChangeSink& sink);

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
  /// The record of (id, version), or null when there is none or it cannot be read (rank_keyed_page's `read`).
  ArtifactPtr version_record(Connection& conn, const std::string& tenant, const std::string& id,
                             std::uint64_t version) const;
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

  // The bytes of the text in the current row of `q` (columns in `record_columns` order), as RecordCache counts them.
  static std::size_t record_text_bytes(const Query& q) {
    std::size_t bytes = 0;
    for (const int col : {0, 1, 3, 4, 5, 6, 7, 8, 9, 11, 12, 14}) bytes += q.text(col).size();
    return bytes;
  }

  ArtifactPtr put(const ArtifactRecord& record, const std::uint64_t* expected, const std::optional<Embedding>& vector);

  // The record's vector, made before any transaction (the embedder may be slow).
  std::optional<Embedding> embed(const ArtifactRecord& record) const {
    if (!options.embedder) return std::nullopt;
    return std::move(detail::embed_checked(*options.embedder, {options.embedder->text_of(record)}).front());
  }

  mutable detail::VectorCache vectors{detail::VectorCache::default_max_entries, detail::VectorCache::default_max_bytes,
                                      detail::fields_column_reader()};
  // search_similar's count of unindexed versions per (tenant, model), with the change sequence it was made at.
  mutable std::mutex unindexed_mutex;
  mutable std::map<std::pair<std::string, std::string>, std::pair<std::uint64_t, std::size_t>> unindexed_counts;

  std::string path;
  SqliteOptions options;
  std::string where;
  // The records similarity pages read, decoded (options.record_cache_bytes; similar_candidates says when one is used).
  mutable detail::RecordCache records{options.record_cache_bytes};
  mutable detail::ConnectionPool<Connection> pool;
};

CAIRN_END_NAMESPACE
