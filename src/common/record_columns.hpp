// cairn (private) — turning an ArtifactRecord into SQL column values and back, shared by the SQLite and PostgreSQL
// stores, so that both keep exactly the same fields the same way.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/artifact/packed.hpp"
#include "cairn/artifact/record.hpp"
#include "cairn/artifact/search.hpp"
#include "cairn/artifact/search/filter.hpp"
#include "cairn/detail/json.hpp"
#include "cairn/detail/text.hpp"
#include "cairn/error.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace detail {

/// The JSON text of a record's value or metadata as the store keeps it. Values deeper or larger than `limits` are
/// refused here, so that nothing is stored that the store could not read back.
inline std::string dump_json_column(const nlohmann::json& j, const char* field, const JsonLimits& limits) {
  if (const int depth = json_depth(j, limits.max_depth); depth > limits.max_depth) {
    throw limit_exceeded(
        fmt::format("{}: JSON nesting is deeper than the store's limit of {} levels", field, limits.max_depth));
  }
  std::string text;
  try {
    text = j.dump();
  } catch (const nlohmann::json::type_error&) {
    throw invalid_artifact(fmt::format("{}: holds a string that is not valid UTF-8; stores keep JSON text", field));
  }
  if (text.size() > limits.max_bytes) {
    throw limit_exceeded(fmt::format("{}: JSON text is {} bytes, more than the store's limit of {} bytes", field,
                                     text.size(), limits.max_bytes));
  }
  return text;
}

// SQL integers are signed 64-bit; size_bytes is unsigned. The bits are kept as they are, so every value
// round-trips exactly (values above 2^63 - 1 read as negative numbers in SQL).
inline std::int64_t to_sql_int(std::uint64_t v) noexcept {
  std::int64_t out;
  std::memcpy(&out, &v, sizeof out);
  return out;
}
inline std::uint64_t from_sql_int(std::int64_t v) noexcept {
  std::uint64_t out;
  std::memcpy(&out, &v, sizeof out);
  return out;
}

/// The contents of a JSON string literal that needs no decoding (`"..."` with no escape, no control character, no
/// quote inside, valid UTF-8: what nlohmann's parser would accept and return unchanged), or nothing. A value that is
/// one text (the common case) then costs a validation pass instead of nlohmann's lexer, a character at a time.
inline std::optional<std::string_view> plain_json_string(std::string_view text) noexcept {
  if (text.size() < 2 || text.front() != '"' || text.back() != '"') return std::nullopt;
  const std::string_view inner = text.substr(1, text.size() - 2);
  for (std::size_t i = 0; i < inner.size();) {
    const auto c = static_cast<unsigned char>(inner[i]);
    if (c < 0x80) {
      if (c < 0x20 || c == '"' || c == '\\') return std::nullopt;
      ++i;
      continue;
    }
    // UTF-8 as RFC 3629 says (nlohmann checks the same): no overlong form, no surrogate, nothing above U+10FFFF.
    const std::size_t n = detail::utf8_sequence_length(inner.substr(i));
    if (n == 0) return std::nullopt;
    i += n;
  }
  return inner;
}

/// Parses JSON text that the store itself wrote, still within `limits` (a file can be edited behind the store's
/// back). A quick scan of the nesting lets well-formed text take nlohmann's plain parser, which is much faster than
/// the depth-checking callback parser of parse_json; anything deeper goes the checked way and fails there.
inline nlohmann::json parse_json_column(std::string_view text, const JsonLimits& limits, std::string_view what) {
  if (text == "{}") return nlohmann::json::object();                          // the metadata of most records
  if (text.size() > limits.max_bytes) return parse_json(text, limits, what);  // throws limit_exceeded
  if (const auto plain = plain_json_string(text)) return nlohmann::json(std::string(*plain));  // a text value
  int depth = 0;
  int deepest = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest) deepest = depth;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  if (deepest >= limits.max_depth) return parse_json(text, limits, what);
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error&) {
    return parse_json(text, limits, what);  // for its error message
  }
}

/// One row as a backend read it. The views point into the backend's result and must outlive decode_row.
struct RecordRow {
  std::string_view tenant_id;
  std::string_view id;
  std::int64_t version = 0;
  std::string_view type;
  std::string_view title;
  std::string_view description;
  std::string_view purpose;
  std::optional<std::string_view> value;  ///< JSON text
  std::optional<std::string_view> storage_url;
  std::optional<std::string_view> mime_type;
  std::optional<std::int64_t> size_bytes;
  std::optional<std::string_view> schema_url;
  std::optional<std::string_view> created_by;
  std::int64_t created_at = 0;
  std::string_view metadata;  ///< JSON text
};

/// Rebuilds the stored record. A row that does not make a valid record (a file edited by hand, a bug) is a
/// cairn::storage_error naming the artifact, never a crash. `where` names the store ("sqlite store 'a.db'").
inline ArtifactPtr decode_row(const RecordRow& row, const JsonLimits& limits, std::string_view where) {
  try {
    auto b = ArtifactRecord::builder();
    b.tenant_id(std::string(row.tenant_id))
        .id(std::string(row.id))
        .version(static_cast<std::uint64_t>(row.version))
        .type(std::string(row.type))
        .title(std::string(row.title))
        .description(std::string(row.description))
        .purpose(std::string(row.purpose))
        .created_at(row.created_at);
    nlohmann::json metadata = parse_json_column(row.metadata, limits, "metadata");
    std::optional<nlohmann::json> value;
    if (row.value) value = parse_json_column(*row.value, limits, "value");
    RecordPacker::set_parsed(b, std::move(value), std::move(metadata));
    if (row.storage_url) b.storage_url(std::string(*row.storage_url));
    if (row.mime_type) b.mime_type(std::string(*row.mime_type));
    if (row.size_bytes) b.size_bytes(from_sql_int(*row.size_bytes));
    if (row.schema_url) b.schema_url(std::string(*row.schema_url));
    if (row.created_by) b.created_by(std::string(*row.created_by));
    return b.build();
  } catch (const error& e) {
    throw storage_error(fmt::format("{}: artifact '{}' version {} in tenant '{}' is unreadable: {}", where,
                                    excerpt(row.id, 300), row.version, excerpt(row.tenant_id, 300), e.what()));
  }
}

/// What a filter reads of a version, as a SQL store keeps it beside the version's vector (detail::FilterFields): its
/// type, MIME type, creator, creation time and metadata (`metadata` JSON text). Metadata longer than
/// FilterFields::max_kept_metadata_bytes, or that does not parse, is not kept: the row decides for that version (and
/// says so when read). `seq`: the change that added the version (FilterFields::seq).
inline std::shared_ptr<const FilterFields> kept_filter_fields(std::uint64_t seq, std::string_view type,
                                                              std::optional<std::string_view> mime_type,
                                                              std::optional<std::string_view> created_by,
                                                              std::int64_t created_at, std::string_view metadata,
                                                              const JsonLimits& limits) {
  auto f = std::make_shared<FilterFields>();
  f->seq = seq;
  f->type = std::string(type);
  if (mime_type) f->mime_type = std::string(*mime_type);
  if (created_by) f->created_by = std::string(*created_by);
  f->created_at = created_at;
  if (metadata.size() <= FilterFields::max_kept_metadata_bytes) {
    try {
      f->metadata = std::make_shared<const nlohmann::json>(parse_json_column(metadata, limits, "metadata"));
    } catch (const error&) {
      // unreadable: not kept
    }
  }
  return f;
}

}  // namespace detail
CAIRN_END_NAMESPACE
