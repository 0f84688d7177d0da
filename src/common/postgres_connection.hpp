// cairn (private) — what the PostgreSQL store and the PostgreSQL run journal share of talking to libpq: a result
// that clears itself, a statement's parameters, the exception a lost connection throws and which SQLSTATEs count
// as one, checking a conninfo without repeating it, and quiet server notices. Connecting and waiting with
// deadlines, re-opening and running a call once more are src/common/postgres_session.hpp; the connection pool is
// src/common/connection_pool.hpp. Each user keeps its own deadlines and error mapping, its own statements and its
// own schema.
#pragma once

#include <libpq-fe.h>

#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "cairn/detail/text.hpp"
#include "cairn/error.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace detail {
namespace pg {

using Result = std::unique_ptr<PGresult, decltype(&PQclear)>;

/// The connection broke (the server went away, the network went), or no reply came in time: whether the statement
/// took effect is unknown. Thrown inside the store and the journal; a call reconnects and retries once.
class connection_lost : public storage_error {
 public:
  using storage_error::storage_error;
};

/// Up to `N` text parameters; null pointers are SQL NULLs.
template <std::size_t N>
struct Params {
  std::array<const char*, N> values{};
  int count = 0;
  Params& add(const std::string& s) {
    values[static_cast<std::size_t>(count++)] = s.c_str();
    return *this;
  }
  Params& add(const std::optional<std::string>& s) {
    values[static_cast<std::size_t>(count++)] = s ? s->c_str() : nullptr;
    return *this;
  }
  Params& add(const char* s) {
    values[static_cast<std::size_t>(count++)] = s;
    return *this;
  }
  // The values are pointers into the strings: a temporary would be gone before the statement runs.
  Params& add(std::string&&) = delete;
  Params& add(const std::string&&) = delete;
  Params& add(std::optional<std::string>&&) = delete;
  Params& add(const std::optional<std::string>&&) = delete;
};

/// Whether PostgreSQL text can hold `s` (no NUL, valid UTF-8): what it cannot hold was never stored.
inline bool fits_pg_text(std::string_view s) noexcept {
  return s.find('\0') == std::string_view::npos && detail::is_valid_utf8(s);
}

/// A libpq message without its trailing newline.
inline std::string trimmed(const char* msg) {
  std::string s = msg ? msg : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

/// Whether a SQLSTATE says the connection is gone: class 08 (connection exception), or the server shutting down
/// or not yet accepting connections (57P01, 57P02, 57P03).
inline bool connection_gone(std::string_view code) noexcept {
  return code.substr(0, 2) == "08" || code == "57P01" || code == "57P02" || code == "57P03";
}

/// Server notices ("relation already exists, skipping") are not errors; libpq would print them to stderr.
inline void ignore_notices(PGconn* conn) {
  PQsetNoticeProcessor(
      conn, [](void*, const char*) {}, nullptr);
}

/// Throws cairn::invalid_argument when `conninfo` is not libpq connection info. A malformed conninfo is reported
/// without libpq's message, which can quote the text (and a password in it). `where`: "postgres store".
inline void check_conninfo(const std::string& conninfo, const char* where) {
  char* parse_error = nullptr;
  PQconninfoOption* parsed = PQconninfoParse(conninfo.c_str(), &parse_error);
  if (!parsed) {
    PQfreemem(parse_error);
    throw invalid_argument(
        fmt::format("{}: the conninfo is not valid libpq connection info "
                    "(expected \"key=value ...\" or a postgresql:// URI)",
                    where));
  }
  PQconninfoFree(parsed);
}

}  // namespace pg
}  // namespace detail
CAIRN_END_NAMESPACE
