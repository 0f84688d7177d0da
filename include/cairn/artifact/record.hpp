// cairn — ArtifactRecord: an immutable description of something an agent produced.
//
// A record is built and validated by ArtifactRecord::Builder and shared as std::shared_ptr<const ArtifactRecord>:
// handing it around never copies it, and nobody can change what another holder sees. A record is its identity (id,
// version, created_at: what a store stamps) and a shared, immutable body holding everything else, so a store stamping
// the record it is given allocates one small object and copies no string; the value and metadata are held behind
// shared pointers too, so deriving a new version never copies them.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/artifact/type.hpp"
#include "cairn/detail/json.hpp"
#include "cairn/detail/text.hpp"
#include "cairn/detail/time.hpp"
#include "cairn/error.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

class ArtifactRecord;
using ArtifactPtr = std::shared_ptr<const ArtifactRecord>;

namespace detail {
class RecordPacker;  // cairn/artifact/packed.hpp
}  // namespace detail

/// An immutable artifact record. Thread-safe: nothing about it can change after it is built.
///
///     auto report = cairn::ArtifactRecord::builder()
///                       .tenant_id("acme")
///                       .type(cairn::ArtifactType::document)
///                       .title("Quarterly report")
///                       .value("# Q3\n...")
///                       .build();  // std::shared_ptr<const ArtifactRecord>, validated
class ArtifactRecord {
  // The fields many records leave unset, allocated only for a record that sets one (they would double the size of
  // every other record). `purpose` is empty when it is the description (not a second copy).
  struct Extras {
    std::string purpose;
    std::optional<std::string> storage_url;
    std::optional<std::string> mime_type;
    std::optional<std::uint64_t> size_bytes;
    std::optional<std::string> schema_url;
    std::optional<std::string> created_by;
  };
  // Every field but the identity a store stamps (version, created_at and, when it assigns one, the id): shared by a
  // record and every record stamped from it.
  struct Body {
    explicit Body(ArtifactType t) : type(std::move(t)) {}
    std::string id;  // the id the record was built with
    std::string tenant_id;
    ArtifactType type;
    std::string title;
    std::string description;
    std::shared_ptr<const nlohmann::json> value;
    std::shared_ptr<const nlohmann::json> metadata;  // null: the empty object (no reference count to touch)
    std::unique_ptr<const Extras> extras;            // null: none set
  };
  const Extras& extras() const noexcept {
    static const Extras none;
    return body_->extras ? *body_->extras : none;
  }

 public:
  class Builder;

  static constexpr std::size_t max_title_length = 500;                        ///< in Unicode code points
  static constexpr std::size_t max_id_length = detail::max_identifier_bytes;  ///< bytes: id, tenant_id, created_by

  /// A builder with nothing set.
  static Builder builder();
  /// A builder holding every field of this record: the way to rebuild a record exactly (backends use it).
  Builder to_builder() const;
  /// A builder for the next version of this record: every field but `version` and `created_at`, which the store
  /// assigns when the new version is stored.
  Builder revise() const;

  /// This record as a store keeps it: the same fields with `id`, `version` and `created_at` replaced (the id is
  /// validated; nothing else changed, so nothing else is checked again). Shares the value and metadata.
  ArtifactPtr with_identity(std::string id, std::uint64_t version, std::int64_t created_at) const;
  /// The same, keeping this record's id (which must be set): a store stamping a record stored under the id it was
  /// built with. Allocates one small object and copies no string.
  ArtifactPtr with_version(std::uint64_t version, std::int64_t created_at) const;

  const std::string& id() const noexcept { return id_.empty() ? body_->id : id_; }
  const std::string& tenant_id() const noexcept { return body_->tenant_id; }
  /// 1 for the first stored version of an id; 0 for a record that has not been stored.
  std::uint64_t version() const noexcept { return version_; }
  const ArtifactType& type() const noexcept { return body_->type; }
  const std::string& title() const noexcept { return body_->title; }
  const std::string& description() const noexcept { return body_->description; }
  /// Why the artifact exists; the description when none was given.
  const std::string& purpose() const noexcept {
    return body_->extras && !body_->extras->purpose.empty() ? body_->extras->purpose : body_->description;
  }
  /// The thing itself (a path for `file`, the data for `data`); null when the content lives at storage_url only.
  const nlohmann::json& value() const noexcept { return *value_; }
  bool has_value() const noexcept { return !value_->is_null(); }
  const std::optional<std::string>& storage_url() const noexcept { return extras().storage_url; }
  const std::optional<std::string>& mime_type() const noexcept { return extras().mime_type; }
  const std::optional<std::uint64_t>& size_bytes() const noexcept { return extras().size_bytes; }
  const std::optional<std::string>& schema_url() const noexcept { return extras().schema_url; }
  const std::optional<std::string>& created_by() const noexcept { return extras().created_by; }
  /// Milliseconds since the Unix epoch (UTC); 0 until stored, unless the builder set it.
  std::int64_t created_at() const noexcept { return created_at_; }
  /// A JSON object: tool_name, success, input_artifacts, and anything the host adds.
  const nlohmann::json& metadata() const noexcept;

  /// The value shared with every record derived from this one (never null; holds JSON null when absent).
  const std::shared_ptr<const nlohmann::json>& shared_value() const noexcept { return body_->value; }

  /// Parses and validates a record from its JSON form (see to_json). Throws cairn::invalid_artifact naming the
  /// field, cairn::parse_error / cairn::limit_exceeded for text that is not JSON or too large.
  [[nodiscard]] static ArtifactPtr from_json(const nlohmann::json& j);
  [[nodiscard]] static ArtifactPtr parse(std::string_view text, const JsonLimits& limits = {});

  friend bool operator==(const ArtifactRecord& a, const ArtifactRecord& b);
  friend bool operator!=(const ArtifactRecord& a, const ArtifactRecord& b) { return !(a == b); }

 private:
  friend class Builder;
  explicit ArtifactRecord(Builder&& b);  // validates
  // A stamped record: `body` of an existing (valid) record, `id` empty when it is the body's.
  ArtifactRecord(std::shared_ptr<const Body> body, std::string id, std::uint64_t version, std::int64_t created_at)
      : body_(std::move(body)),
        value_(body_->value.get()),
        id_(std::move(id)),
        version_(version),
        created_at_(created_at) {}
  ArtifactPtr stamped(std::string id, std::uint64_t version, std::int64_t created_at) const;

  std::shared_ptr<const Body> body_;
  // body_->value.get(), kept here so that reading a fetched record's value is one hop, as with a plain struct.
  const nlohmann::json* value_ = nullptr;
  std::string id_;  // empty: body_->id (set only when stamped with another id than the record was built with)
  std::uint64_t version_ = 0;
  std::int64_t created_at_ = 0;
};

/// Collects the fields of a record; build() validates them. Not thread-safe: one owner.
class ArtifactRecord::Builder {
 public:
  // User-provided, so that `Builder{}` does not zero the whole builder before constructing its members.
  Builder() noexcept {}  // NOLINT(modernize-use-equals-default)

  Builder& id(std::string v) {
    id_ = std::move(v);
    return *this;
  }
  Builder& tenant_id(std::string v) {
    tenant_id_ = std::move(v);
    return *this;
  }
  Builder& version(std::uint64_t v) {
    version_ = v;
    return *this;
  }
  Builder& type(ArtifactType v) {
    type_ = std::move(v);
    return *this;
  }
  /// Throws cairn::invalid_artifact for a malformed token.
  Builder& type(std::string v) {
    type_ = ArtifactType{std::move(v)};
    return *this;
  }
  Builder& type(const char* v) { return type(std::string(v)); }
  Builder& title(std::string v) {
    title_ = std::move(v);
    return *this;
  }
  Builder& description(std::string v) {
    description_ = std::move(v);
    return *this;
  }
  Builder& purpose(std::string v) {
    purpose_ = std::move(v);
    return *this;
  }
  Builder& value(nlohmann::json v);
  /// Shares an existing value without copying it. The value must not change afterwards (records are immutable):
  /// a document shared into many records is checked once per thread while it lives, not once per record.
  Builder& shared_value(std::shared_ptr<const nlohmann::json> v) {
    value_ = std::move(v);
    value_checked_ = false;
    return *this;
  }
  Builder& storage_url(std::string v) {
    storage_url_ = std::move(v);
    return *this;
  }
  Builder& mime_type(std::string v) {
    mime_type_ = std::move(v);
    return *this;
  }
  Builder& size_bytes(std::uint64_t v) {
    size_bytes_ = v;
    return *this;
  }
  Builder& schema_url(std::string v) {
    schema_url_ = std::move(v);
    return *this;
  }
  Builder& created_by(std::string v) {
    created_by_ = std::move(v);
    return *this;
  }
  Builder& created_at(std::int64_t ms) {
    created_at_ = ms;
    return *this;
  }
  /// Replaces the metadata; it must be a JSON object.
  Builder& metadata(nlohmann::json v);
  /// Sets one metadata key, keeping the others.
  Builder& metadata(const std::string& key, nlohmann::json v);

  /// Validates and returns the record. Throws cairn::invalid_artifact with a message naming the field.
  [[nodiscard]] ArtifactPtr build() const& { return make(Builder(*this)); }
  /// The same, moving the fields out of a builder that is not needed afterwards.
  [[nodiscard]] ArtifactPtr build() && { return make(std::move(*this)); }
  /// The same, as a plain value (for containers that hold records by value).
  ArtifactRecord build_value() const { return ArtifactRecord(Builder(*this)); }

 private:
  friend class ArtifactRecord;
  friend class detail::RecordPacker;
  static ArtifactPtr make(Builder&& b);

  std::string id_;
  std::string tenant_id_;
  std::uint64_t version_ = 0;
  std::optional<ArtifactType> type_;
  std::string title_;
  std::string description_;
  std::optional<std::string> purpose_;
  std::shared_ptr<const nlohmann::json> value_;
  std::optional<std::string> storage_url_;
  std::optional<std::string> mime_type_;
  std::optional<std::uint64_t> size_bytes_;
  std::optional<std::string> schema_url_;
  std::optional<std::string> created_by_;
  std::int64_t created_at_ = 0;
  std::shared_ptr<const nlohmann::json> metadata_;
  // True while value_ / metadata_ are those of a built record (they were checked then and cannot change).
  bool value_checked_ = false;
  bool metadata_checked_ = false;
};

namespace detail {

/// `type/subtype` with optional `; name=value` parameters, as in RFC 6838 and RFC 2045.
bool is_mime_type(std::string_view s) noexcept;
/// Throws cairn::invalid_artifact naming `field` when `v` is not an identifier (empty is one unless `required`).
void check_identifier(std::string_view field, const std::string& v, bool required);
/// Free text (title, description, purpose, URLs, MIME type) must be valid UTF-8: every store and every JSON
/// form keeps text, and JSON text is UTF-8.
void check_utf8(std::string_view field, std::string_view v);
void check_url(std::string_view field, const std::optional<std::string>& v);
/// Checks what JSON text can hold, in one iterative pass over `root` (a record's value or metadata): every string
/// and object key is valid UTF-8 and every number is finite (JSON has no NaN or Infinity). Throws
/// cairn::invalid_artifact naming `field` and the JSON pointer of the first problem.
void check_json_content(const char* field, const nlohmann::json& root);
/// check_json_content for a value held behind a shared_ptr, remembering per thread the last value that passed.
void check_shared_json_content(const char* field, const std::shared_ptr<const nlohmann::json>& v);

/// The value of records built without one (JSON null), shared like empty_metadata.
const std::shared_ptr<const nlohmann::json>& null_value();

/// The metadata of records built without any: one shared empty object rather than one allocation per record.
const std::shared_ptr<const nlohmann::json>& empty_metadata();

}  // namespace detail

inline ArtifactRecord::Builder ArtifactRecord::builder() { return Builder{}; }

inline const nlohmann::json& ArtifactRecord::metadata() const noexcept {
  return body_->metadata ? *body_->metadata : *detail::empty_metadata();
}

/// The JSON form: snake_case keys as in DESIGN.md; optional fields are left out when unset, `value` when absent.
void to_json(nlohmann::json& j, const ArtifactRecord& r);

namespace detail {

/// The member `key` of the object `j`, or null when it is missing or JSON null.
inline const nlohmann::json* member(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

/// The string member `key` ("" when missing). Throws cairn::invalid_artifact when it is not a string.
std::string string_field(const nlohmann::json& j, const char* key);

template <typename Int>
inline std::optional<Int> integer_field(const nlohmann::json& j, const char* key) {
  const auto* v = member(j, key);
  if (!v) return std::nullopt;
  if (v->is_number_unsigned()) {
    const auto u = v->get<std::uint64_t>();
    if (u <= static_cast<std::uint64_t>(std::numeric_limits<Int>::max())) return static_cast<Int>(u);
  } else if (v->is_number_integer()) {
    const auto i = v->get<std::int64_t>();
    if (i >= 0) return static_cast<Int>(i);
  }
  throw invalid_artifact(fmt::format("{}: expected a non-negative integer, got {}", key, v->dump()));
}

}  // namespace detail

CAIRN_END_NAMESPACE

namespace nlohmann {
/// Lets `j.get<cairn::ArtifactRecord>()` work although the record has no default constructor.
template <>
struct adl_serializer<cairn::ArtifactRecord> {
  static cairn::ArtifactRecord from_json(const json& j) { return *cairn::ArtifactRecord::from_json(j); }
  static void to_json(json& j, const cairn::ArtifactRecord& r) { cairn::to_json(j, r); }
};
}  // namespace nlohmann

#ifndef CAIRN_COMPILED_LIB
#include "cairn/artifact/record-inl.hpp"
#endif
