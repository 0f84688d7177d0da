// cairn — open_store(url) and open_run_journal(url): the store and the run journal a URL names, for programs that
// let their user choose where artifacts and runs live. One URL opens both: a SQLite file or a PostgreSQL database
// holds the artifacts and the runs side by side (each with its own tables).
//
//     memory:                   an InMemoryArtifactStore (always available)
//     sqlite:<path>             a SqliteArtifactStore on that file        (needs cairn::sqlite)
//     sqlite:<path>?synchronous=normal   the same with PRAGMA synchronous = NORMAL (=full: FULL, the default);
//                               in a sqlite: URL everything after the first '?' is options
//     postgres:<conninfo>       a PostgresArtifactStore, conninfo as libpq takes it, e.g.
//                               postgres:host=db.internal dbname=agents   (needs cairn::postgres)
//     postgres://... or postgresql://...   the same, the whole URL handed to libpq as a connection URI
//
// open_store(url, options) takes what a URL cannot carry: the host's Embedder (OpenStoreOptions::embedder), handed
// to whichever store the URL opens (InMemoryStoreOptions / SqliteOptions / PostgresOptions::embedder), so that a
// program that lets its user choose the backend still gets similarity search (docs/search.md).
//
// Which backends exist is known at compile time: linking cairn::sqlite defines CAIRN_HAS_SQLITE and linking
// cairn::postgres defines CAIRN_HAS_POSTGRES (both as usage requirements of those targets), and this header
// includes and dispatches to exactly those. A URL for a backend that is not linked is a clear
// cairn::invalid_argument, never a link error. Not part of cairn/cairn.hpp, because the backends are compiled.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/artifact/store.hpp"
#include "cairn/detail/text.hpp"
#include "cairn/error.hpp"
#include "cairn/run/memory_journal.hpp"

#if defined(CAIRN_HAS_SQLITE)
#include "cairn/store/sqlite_journal.hpp"
#include "cairn/store/sqlite_store.hpp"
#endif
#if defined(CAIRN_HAS_POSTGRES)
#include "cairn/store/postgres_journal.hpp"
#include "cairn/store/postgres_store.hpp"
#include "cairn/version.hpp"
#endif

CAIRN_BEGIN_NAMESPACE

namespace detail {

/// A store URL taken apart: the backend and what it needs (a path, a conninfo). Throws cairn::invalid_argument
/// for what is not a store URL; error messages never repeat a postgres conninfo, which may hold a password.
struct StoreUrl {
  enum class Backend { memory, sqlite, postgres } backend;
  std::string target;  // the sqlite path or the postgres conninfo
  // sqlite: `?synchronous=normal|full` after the path; unset: the backend's default (full)
  enum class Synchronous { normal, full };
  std::optional<Synchronous> synchronous{};
};

// The options after `?` of a sqlite: URL ("synchronous=normal", joined by '&'). Throws cairn::invalid_argument
// naming the part of the URL it cannot take.
void parse_sqlite_url_options(const std::string& url, std::string_view query, const char* call, StoreUrl& out);

StoreUrl parse_store_url(const std::string& url, const char* call);

invalid_argument backend_not_built(const char* call, const char* scheme, const char* target, const char* option);

}  // namespace detail

/// What open_store(url, options) hands to the store it opens, besides what the URL says.
struct OpenStoreOptions {
  /// The host's embedder: each store embeds records as it stores them and answers similarity queries by text
  /// (docs/search.md). Null: no embedder, as open_store(url).
  std::shared_ptr<Embedder> embedder{};
};

// open_store's body depends on which backends the including file links. An inline namespace per combination
// gives each its own name, so two files of one program built with different backends do not break the
// one-definition rule; callers still write cairn::open_store.
#if defined(CAIRN_HAS_SQLITE) && defined(CAIRN_HAS_POSTGRES)
#define CAIRN_DETAIL_OPEN_STORE_NS open_store_with_sqlite_postgres
#elif defined(CAIRN_HAS_SQLITE)
#define CAIRN_DETAIL_OPEN_STORE_NS open_store_with_sqlite
#elif defined(CAIRN_HAS_POSTGRES)
#define CAIRN_DETAIL_OPEN_STORE_NS open_store_with_postgres
#else
#define CAIRN_DETAIL_OPEN_STORE_NS open_store_with_memory
#endif

inline namespace CAIRN_DETAIL_OPEN_STORE_NS {

/// The store `url` names (see the top of this header). Throws cairn::invalid_argument for an unknown scheme, a
/// backend this program was not built with, or a missing path; the backends' own errors (cairn::storage_error)
/// pass through. Error messages never repeat a postgres conninfo, which may hold a password.
///
///     auto store = cairn::open_store(argc > 1 ? argv[1] : "memory:");
[[nodiscard]] inline std::shared_ptr<ArtifactStore> open_store(const std::string& url,
                                                               const OpenStoreOptions& open_options) {
  const auto parsed = detail::parse_store_url(url, "open_store");
  switch (parsed.backend) {
    case detail::StoreUrl::Backend::memory: {
      InMemoryStoreOptions options;
      options.embedder = open_options.embedder;
      return std::make_shared<InMemoryArtifactStore>(std::move(options));
    }
    case detail::StoreUrl::Backend::sqlite:
#if defined(CAIRN_HAS_SQLITE)
    {
      SqliteOptions options;
      if (parsed.synchronous == detail::StoreUrl::Synchronous::normal)
        options.synchronous = SqliteOptions::Synchronous::normal;
      options.embedder = open_options.embedder;
      return std::make_shared<SqliteArtifactStore>(parsed.target, options);
    }
#else
      throw detail::backend_not_built("open_store", "sqlite", "cairn::sqlite", "CAIRN_WITH_SQLITE");
#endif
    case detail::StoreUrl::Backend::postgres:
#if defined(CAIRN_HAS_POSTGRES)
    {
      PostgresOptions options;
      options.embedder = open_options.embedder;
      return std::make_shared<PostgresArtifactStore>(parsed.target, std::move(options));
    }
#else
      throw detail::backend_not_built("open_store", "postgres", "cairn::postgres", "CAIRN_WITH_POSTGRES");
#endif
  }
  return nullptr;
}

/// The store `url` names, without an embedder: open_store(url, {}).
[[nodiscard]] inline std::shared_ptr<ArtifactStore> open_store(const std::string& url) {
  return open_store(url, OpenStoreOptions{});
}

/// The run journal `url` names: `memory:` a new InMemoryRunJournal, `sqlite:<path>` a SqliteRunJournal on that
/// file, `postgres:<conninfo>` a PostgresRunJournal — the same file or database open_store(url) uses, so one URL
/// keeps a run's artifacts and its journal together. Throws like open_store.
///
///     auto store = cairn::open_store(url);
///     auto journal = cairn::open_run_journal(url);
///     cairn::Run run(journal, "acme", "order-42");
[[nodiscard]] inline std::shared_ptr<RunJournal> open_run_journal(const std::string& url) {
  const auto parsed = detail::parse_store_url(url, "open_run_journal");
  switch (parsed.backend) {
    case detail::StoreUrl::Backend::memory: return std::make_shared<InMemoryRunJournal>();
    case detail::StoreUrl::Backend::sqlite:
#if defined(CAIRN_HAS_SQLITE)
    {
      SqliteJournalOptions options;
      if (parsed.synchronous == detail::StoreUrl::Synchronous::normal) {
        options.synchronous = SqliteJournalOptions::Synchronous::normal;
      }
      return std::make_shared<SqliteRunJournal>(parsed.target, options);
    }
#else
      throw detail::backend_not_built("open_run_journal", "sqlite", "cairn::sqlite", "CAIRN_WITH_SQLITE");
#endif
    case detail::StoreUrl::Backend::postgres:
#if defined(CAIRN_HAS_POSTGRES)
      return std::make_shared<PostgresRunJournal>(parsed.target);
#else
      throw detail::backend_not_built("open_run_journal", "postgres", "cairn::postgres", "CAIRN_WITH_POSTGRES");
#endif
  }
  return nullptr;
}

}  // namespace CAIRN_DETAIL_OPEN_STORE_NS
#undef CAIRN_DETAIL_OPEN_STORE_NS

CAIRN_END_NAMESPACE

#ifndef CAIRN_COMPILED_LIB
#include "cairn/store/open_store-inl.hpp"
#endif
