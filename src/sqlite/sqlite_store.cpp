// SqliteArtifactStore: opening the file, and storing, fetching, removing and listing records. Search and reindex
// are sqlite_search.cpp; the connections and what the files share, SqliteArtifactStore::Impl, are
// sqlite_store_impl.hpp.
#include "cairn/store/sqlite_store.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "sqlite_store_impl.hpp"

CAIRN_BEGIN_NAMESPACE
namespace {

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
  if (!api || api->iVersion < 2 || api->xCreateFunction(api, "cairn_hits", nullptr, &fts5_hits, nullptr) != SQLITE_OK) {
    throw storage_error(fmt::format("{}: this SQLite has no FTS5, which search needs", where));
  }
}

}  // namespace

std::unique_ptr<SqliteArtifactStore::Impl::Connection> SqliteArtifactStore::Impl::open() const {
  auto c = std::make_unique<Connection>(
      detail::SqliteOpen{path, where, options.busy_timeout_ms, options.synchronous == SqliteOptions::Synchronous::full,
                         options.page_size},
      [](std::size_t s) { return statement_sql(static_cast<Stmt>(s)); });
  register_fts5_functions(c->db(), where);
  if (options.mmap_bytes > 0) c->exec(fmt::format("PRAGMA mmap_size = {}", options.mmap_bytes).c_str());
  return c;
}

SqliteArtifactStore::SqliteArtifactStore(std::string path, SqliteOptions options) {
  if (path.empty() || path == ":memory:" || path.rfind("file::memory:", 0) == 0) {
    throw invalid_argument(
        fmt::format("sqlite store: path '{}' names an in-memory database, which each connection would see empty; "
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
    throw invalid_argument(
        fmt::format("sqlite store: page_size must be a power of two from 512 to 65536 (got {})", options.page_size));
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
  const std::int64_t created_at = record.created_at() == 0 ? detail::now_ms(options.clock.get()) : record.created_at();

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
  const std::optional<std::string> type = query.type ? std::optional<std::string>(query.type->str()) : std::nullopt;

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

CAIRN_END_NAMESPACE
