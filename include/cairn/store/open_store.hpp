// cairn — open_store(url): the store a URL names, for programs that let their user choose where artifacts live.
//
//     memory:                   an InMemoryArtifactStore (always available)
//     sqlite:<path>             a SqliteArtifactStore on that file        (needs cairn::sqlite)
//     postgres:<conninfo>       a PostgresArtifactStore, conninfo as libpq takes it, e.g.
//                               postgres:host=db.internal dbname=agents   (needs cairn::postgres)
//     postgres://... or postgresql://...   the same, the whole URL handed to libpq as a connection URI
//
// Which backends exist is known at compile time: linking cairn::sqlite defines CAIRN_HAS_SQLITE and linking
// cairn::postgres defines CAIRN_HAS_POSTGRES (both as usage requirements of those targets), and this header
// includes and dispatches to exactly those. A URL for a backend that is not linked is a clear
// cairn::invalid_argument, never a link error. Not part of cairn/cairn.hpp, because the backends are compiled.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/artifact/store.hpp"
#include "cairn/detail/text.hpp"
#include "cairn/error.hpp"

#if defined(CAIRN_HAS_SQLITE)
#include "cairn/store/sqlite_store.hpp"
#endif
#if defined(CAIRN_HAS_POSTGRES)
#include "cairn/store/postgres_store.hpp"
#endif

namespace cairn {

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
inline std::shared_ptr<ArtifactStore> open_store(const std::string& url) {
  const auto colon = url.find(':');
  if (colon == std::string::npos || colon == 0) {
    throw invalid_argument(fmt::format(
        "open_store: '{}' is not a store URL (expected memory:, sqlite:<path> or postgres:<conninfo>)",
        detail::excerpt(url, 40)));
  }
  const std::string scheme = url.substr(0, colon);
  const std::string rest = url.substr(colon + 1);
  [[maybe_unused]] auto not_built = [&](const char* target, const char* option) {
    return invalid_argument(fmt::format(
        "open_store: '{}:' URLs need {}, which this program was not built with (configure cairn with {}=ON and "
        "link {})",
        scheme, target, option, target));
  };

  if (scheme == "memory") {
    if (!rest.empty()) {
      throw invalid_argument(fmt::format("open_store: 'memory:' takes nothing after the colon (got '{}')",
                                         detail::excerpt(rest, 40)));
    }
    return std::make_shared<InMemoryArtifactStore>();
  }
  if (scheme == "sqlite") {
    if (rest.empty()) throw invalid_argument("open_store: 'sqlite:' needs a file path, as in sqlite:agents.db");
#if defined(CAIRN_HAS_SQLITE)
    return std::make_shared<SqliteArtifactStore>(rest);
#else
    throw not_built("cairn::sqlite", "CAIRN_WITH_SQLITE");
#endif
  }
  if (scheme == "postgres" || scheme == "postgresql") {
    // "postgres://..." is a libpq connection URI as a whole; "postgres:<conninfo>" carries the conninfo after
    // the colon.
    const bool uri = rest.rfind("//", 0) == 0;
    const std::string conninfo = uri ? url : rest;
    if (!uri && scheme == "postgresql") {
      throw invalid_argument("open_store: write 'postgres:<conninfo>' or a 'postgresql://' URI");
    }
#if defined(CAIRN_HAS_POSTGRES)
    return std::make_shared<PostgresArtifactStore>(conninfo);
#else
    (void)conninfo;
    throw not_built("cairn::postgres", "CAIRN_WITH_POSTGRES");
#endif
  }
  throw invalid_argument(fmt::format(
      "open_store: unknown store URL scheme '{}' (expected memory:, sqlite:<path> or postgres:<conninfo>)",
      detail::excerpt(scheme, 40)));
}

}  // inline namespace CAIRN_DETAIL_OPEN_STORE_NS
#undef CAIRN_DETAIL_OPEN_STORE_NS

}  // namespace cairn
