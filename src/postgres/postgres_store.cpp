// PostgresArtifactStore: connecting, and storing, fetching, removing and listing records. Search and reindex are
// postgres_search.cpp; the connections, PostgresArtifactStore::Impl, are postgres_store_impl.hpp.
#include "cairn/store/postgres_store.hpp"

#include <libpq-fe.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "postgres_store_impl.hpp"

CAIRN_BEGIN_NAMESPACE
namespace {

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

}  // namespace

PostgresArtifactStore::PostgresArtifactStore(std::string conninfo, PostgresOptions options) {
  check_conninfo(conninfo, "postgres store");
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
  impl_->start_folder();
  // The common path is one statement; only a retry after a lost connection looks for the token first.
  const std::int64_t version = impl_->with_connection(
      [&](Impl::Connection& c, bool retry) { return impl_->write_once<std::int64_t>(c, retry, find, apply); });
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
    impl_->start_folder();
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

std::vector<std::uint64_t> PostgresArtifactStore::versions(const std::string& id, const std::string& tenant_id) const {
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
