// cairn — the function bodies of cairn/store/open_store.hpp that do not depend on the backends the including file
// links (docs/api.md, "Compiled mode"): taking a store URL apart. Header-only, the default, that header includes
// this file and CAIRN_INLINE is `inline`; with CAIRN_COMPILED_LIB they are compiled once, into cairn::compiled
// (src/compiled/), and the header only declares them.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "cairn/detail/text.hpp"
#include "cairn/error.hpp"
#include "cairn/store/open_store.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

namespace detail {

CAIRN_INLINE void parse_sqlite_url_options(const std::string& url, std::string_view query, const char* call,
                                           StoreUrl& out) {
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view part = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const auto eq = part.find('=');
    const std::string_view key = part.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? std::string_view() : part.substr(eq + 1);
    if (key == "synchronous") {
      if (value == "normal" || value == "NORMAL") {
        out.synchronous = StoreUrl::Synchronous::normal;
      } else if (value == "full" || value == "FULL") {
        out.synchronous = StoreUrl::Synchronous::full;
      } else {
        throw invalid_argument(fmt::format("{}: '{}' in the URL '{}': synchronous must be normal or full", call,
                                           excerpt(std::string(part), 40), excerpt(url, 80)));
      }
    } else {
      throw invalid_argument(
          fmt::format("{}: unknown option '{}' in the URL '{}' (a sqlite: URL takes "
                      "?synchronous=normal|full)",
                      call, excerpt(std::string(part), 40), excerpt(url, 80)));
    }
  }
}

CAIRN_INLINE StoreUrl parse_store_url(const std::string& url, const char* call) {
  const auto colon = url.find(':');
  if (colon == std::string::npos || colon == 0) {
    throw invalid_argument(
        fmt::format("{}: '{}' is not a store URL (expected memory:, sqlite:<path> or postgres:<conninfo>)", call,
                    excerpt(url, 40)));
  }
  const std::string scheme = url.substr(0, colon);
  std::string rest = url.substr(colon + 1);
  if (scheme == "memory") {
    if (!rest.empty()) {
      throw invalid_argument(
          fmt::format("{}: 'memory:' takes nothing after the colon (got '{}')", call, excerpt(rest, 40)));
    }
    return {StoreUrl::Backend::memory, {}};
  }
  if (scheme == "sqlite") {
    StoreUrl out{StoreUrl::Backend::sqlite, {}};
    const auto question = rest.find('?');
    if (question != std::string::npos) {
      parse_sqlite_url_options(url, std::string_view(rest).substr(question + 1), call, out);
      rest.erase(question);
    }
    if (rest.empty())
      throw invalid_argument(fmt::format("{}: 'sqlite:' needs a file path, as in sqlite:agents.db", call));
    out.target = std::move(rest);
    return out;
  }
  if (scheme == "postgres" || scheme == "postgresql") {
    // "postgres://..." is a libpq connection URI as a whole; "postgres:<conninfo>" carries the conninfo after
    // the colon.
    const bool uri = rest.rfind("//", 0) == 0;
    if (!uri && scheme == "postgresql") {
      throw invalid_argument(fmt::format("{}: write 'postgres:<conninfo>' or a 'postgresql://' URI", call));
    }
    return {StoreUrl::Backend::postgres, uri ? url : std::move(rest)};
  }
  throw invalid_argument(
      fmt::format("{}: unknown store URL scheme '{}' (expected memory:, sqlite:<path> or postgres:<conninfo>)", call,
                  excerpt(scheme, 40)));
}

CAIRN_INLINE invalid_argument backend_not_built(const char* call, const char* scheme, const char* target,
                                                const char* option) {
  return invalid_argument(fmt::format(
      "{}: '{}:' URLs need {}, which this program was not built with (configure cairn with {}=ON and link {})", call,
      scheme, target, option, target));
}

}  // namespace detail

CAIRN_END_NAMESPACE
