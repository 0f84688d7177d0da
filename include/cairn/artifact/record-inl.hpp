// cairn — the function bodies of cairn/artifact/record.hpp (docs/api.md, "Compiled mode"). Header-only, the
// default, that header includes this file and CAIRN_INLINE is `inline`; with CAIRN_COMPILED_LIB they are
// compiled once, into cairn::compiled (src/compiled/), and the header only declares them.
#pragma once

#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/artifact/record.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

namespace detail {

CAIRN_INLINE bool is_mime_name_char(char c) noexcept {
  return is_ascii_alpha(c) || is_ascii_digit(c) || c == '!' || c == '#' || c == '$' || c == '&' || c == '-' ||
         c == '^' || c == '_' || c == '.' || c == '+';
}

// RFC 6838 restricted-name: 1 to 127 characters, starting with a letter or digit.
CAIRN_INLINE bool is_mime_name(std::string_view s) noexcept {
  if (s.empty() || s.size() > 127 || !(is_ascii_alpha(s[0]) || is_ascii_digit(s[0]))) return false;
  for (char c : s) {
    if (!is_mime_name_char(c)) return false;
  }
  return true;
}

CAIRN_INLINE std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

/// `type/subtype` with optional `; name=value` parameters, as in RFC 6838 and RFC 2045.
CAIRN_INLINE bool is_mime_type(std::string_view s) noexcept {
  if (has_control_char(s)) return false;
  const auto semi = s.find(';');
  const std::string_view essence = trim(s.substr(0, semi));
  const auto slash = essence.find('/');
  if (slash == std::string_view::npos) return false;
  if (!is_mime_name(essence.substr(0, slash)) || !is_mime_name(essence.substr(slash + 1))) return false;
  std::string_view rest = semi == std::string_view::npos ? std::string_view{} : s.substr(semi + 1);
  while (semi != std::string_view::npos) {
    const auto next = rest.find(';');
    const std::string_view param = trim(rest.substr(0, next));
    const auto eq = param.find('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == param.size()) return false;
    for (char c : param.substr(0, eq)) {
      if (!is_mime_name_char(c)) return false;
    }
    if (next == std::string_view::npos) break;
    rest = rest.substr(next + 1);
  }
  return true;
}

CAIRN_INLINE void check_identifier(std::string_view field, const std::string& v, bool required) {
  if (v.empty() && !required) return;
  if (std::string problem = identifier_problem(v); !problem.empty()) {
    throw invalid_artifact(fmt::format("{}: {}", field, problem));
  }
}

/// Free text (title, description, purpose, URLs, MIME type) must be valid UTF-8: every store and every JSON
/// form keeps text, and JSON text is UTF-8.
CAIRN_INLINE void check_utf8(std::string_view field, std::string_view v) {
  if (!is_valid_utf8(v)) throw invalid_artifact(fmt::format("{}: is not valid UTF-8 ('{}')", field, excerpt(v)));
}

CAIRN_INLINE void check_url(std::string_view field, const std::optional<std::string>& v) {
  if (!v) return;
  if (v->empty()) throw invalid_artifact(fmt::format("{}: must not be empty when set", field));
  check_utf8(field, *v);
  if (has_control_char(*v)) {
    throw invalid_artifact(fmt::format("{}: must not contain control characters ('{}')", field, excerpt(*v)));
  }
}

/// Checks what JSON text can hold, in one iterative pass over `root` (a record's value or metadata): every string
/// and object key is valid UTF-8 and every number is finite (JSON has no NaN or Infinity). Throws
/// cairn::invalid_artifact naming `field` and the JSON pointer of the first problem.
CAIRN_INLINE void check_json_content(const char* field, const nlohmann::json& root) {
  using json = nlohmann::json;
  struct Frame {
    const json* node;
    json::object_t::const_iterator next, end;  // objects: the member after the current one
    const std::string* key = nullptr;          // objects: the current member's key
    std::size_t index = 0;                     // arrays: one past the current element
  };
  std::vector<Frame> frames;
  // The pointer of the element the walk is at (escaped for the message: a bad key is part of it).
  auto where = [&frames]() {
    std::string ptr;
    for (const Frame& f : frames) {
      if (f.node->is_object()) {
        append_pointer_token(ptr, *f.key);
      } else {
        ptr.push_back('/');
        ptr += std::to_string(f.index - 1);
      }
    }
    return ptr.empty() ? std::string("the top level") : excerpt(ptr, 300);
  };
  // A scalar's problem, or nothing; containers are opened by the caller.
  auto check_scalar = [&](const json& v) {
    if (v.is_string()) {
      const std::string& s = *v.get_ptr<const json::string_t*>();
      if (!is_valid_utf8(s)) {
        throw invalid_artifact(
            fmt::format("{}: holds a string that is not valid UTF-8 at {} ('{}')", field, where(), excerpt(s)));
      }
    } else if (v.is_number_float()) {
      const double d = *v.get_ptr<const json::number_float_t*>();
      if (!std::isfinite(d)) {
        throw invalid_artifact(fmt::format("{}: holds a non-finite number ({}) at {}; JSON has no NaN or Infinity",
                                           field,
                                           std::isnan(d) ? "NaN"
                                           : d > 0       ? "Infinity"
                                                         : "-Infinity",
                                           where()));
      }
    }
  };
  auto open = [&frames](const json& node) {
    if (node.is_object()) {
      const auto& obj = *node.get_ptr<const json::object_t*>();
      frames.push_back(Frame{&node, obj.begin(), obj.end()});
    } else {
      frames.push_back(Frame{&node, {}, {}});
    }
  };
  if (!root.is_structured()) {
    check_scalar(root);
    return;
  }
  if (root.empty()) return;  // nothing to walk (the common empty metadata): no frame stack to allocate
  open(root);
  while (!frames.empty()) {
    Frame& f = frames.back();
    const json* child = nullptr;
    if (f.node->is_object()) {
      if (f.next == f.end) {
        frames.pop_back();
        continue;
      }
      f.key = &f.next->first;
      child = &f.next->second;
      ++f.next;
      if (!is_valid_utf8(*f.key)) {
        throw invalid_artifact(fmt::format("{}: holds an object key that is not valid UTF-8 at {}", field, where()));
      }
    } else {
      const auto& arr = *f.node->get_ptr<const json::array_t*>();
      if (f.index == arr.size()) {
        frames.pop_back();
        continue;
      }
      child = &arr[f.index++];
    }
    if (child->is_structured()) {
      open(*child);  // invalidates f
    } else {
      check_scalar(*child);
    }
  }
}

/// check_json_content for a value held behind a shared_ptr, remembering per thread the last value that passed: the
/// same immutable document shared into record after record (one payload referenced by many artifacts) is walked
/// once, not once per record. The memo holds a weak_ptr, so a value freed and another allocated at the same address
/// is never mistaken for it.
CAIRN_INLINE void check_shared_json_content(const char* field, const std::shared_ptr<const nlohmann::json>& v) {
  struct Memo {
    std::weak_ptr<const nlohmann::json> owner;
    const nlohmann::json* at = nullptr;
  };
  thread_local Memo memo;
  // Scalars cost less to check than to remember.
  if (!v->is_structured()) return check_json_content(field, *v);
  if (memo.at == v.get() && !memo.owner.owner_before(v) && !v.owner_before(memo.owner) && !memo.owner.expired()) {
    return;
  }
  check_json_content(field, *v);
  memo.owner = v;
  memo.at = v.get();
}

}  // namespace detail

CAIRN_INLINE ArtifactRecord::ArtifactRecord(Builder&& b) : version_(b.version_), created_at_(b.created_at_) {
  auto body = std::make_shared<Body>(b.type_ ? std::move(*b.type_) : ArtifactType::data);
  Body& r = *body;
  r.id = std::move(b.id_);
  r.tenant_id = std::move(b.tenant_id_);
  r.title = std::move(b.title_);
  r.description = std::move(b.description_);
  // A purpose equal to the description is kept once (purpose() returns the description).
  Extras e;
  if (b.purpose_ && *b.purpose_ != r.description) e.purpose = std::move(*b.purpose_);
  r.value = b.value_ ? std::move(b.value_) : detail::null_value();
  e.storage_url = std::move(b.storage_url_);
  e.mime_type = std::move(b.mime_type_);
  e.size_bytes = b.size_bytes_;
  e.schema_url = std::move(b.schema_url_);
  e.created_by = std::move(b.created_by_);
  if (b.metadata_ && b.metadata_ != detail::empty_metadata()) r.metadata = std::move(b.metadata_);
  detail::check_identifier("id", r.id, false);
  detail::check_identifier("tenant_id", r.tenant_id, true);
  if (!b.type_) throw invalid_artifact("type: must be set");  // b.type_ was only moved from, still engaged
  detail::check_utf8("title", r.title);
  detail::check_utf8("description", r.description);
  detail::check_utf8("purpose", e.purpose);
  if (r.title.empty() && r.description.empty()) {
    throw invalid_artifact("title, description: at least one of them must be non-empty");
  }
  if (const auto n = detail::utf8_length(r.title); n > max_title_length) {
    throw invalid_artifact(fmt::format("title: must be at most {} characters (got {})", max_title_length, n));
  }
  detail::check_url("storage_url", e.storage_url);
  detail::check_url("schema_url", e.schema_url);
  if (r.value->is_null() && !e.storage_url) {
    throw invalid_artifact("value, storage_url: a record needs a value or a storage_url (or both)");
  }
  if (e.mime_type) detail::check_utf8("mime_type", *e.mime_type);
  if (e.mime_type && !detail::is_mime_type(*e.mime_type)) {
    throw invalid_artifact(
        fmt::format("mime_type: '{}' is not a MIME type of the form type/subtype", detail::excerpt(*e.mime_type)));
  }
  if (e.created_by) detail::check_identifier("created_by", *e.created_by, true);
  if (created_at_ < 0) throw invalid_artifact(fmt::format("created_at: must not be negative (got {})", created_at_));
  if (r.metadata && !r.metadata->is_object()) {
    throw invalid_artifact(fmt::format("metadata: must be a JSON object, got {}", r.metadata->type_name()));
  }
  // Last: the only checks that walk a whole value. A value or metadata shared from a built record (revise,
  // to_builder) was checked when that record was built, and is immutable.
  if (!b.value_checked_) detail::check_shared_json_content("value", r.value);
  if (!b.metadata_checked_ && r.metadata) detail::check_json_content("metadata", *r.metadata);
  if (!e.purpose.empty() || e.storage_url || e.mime_type || e.size_bytes || e.schema_url || e.created_by) {
    r.extras = std::make_unique<const Extras>(std::move(e));
  }
  value_ = r.value.get();
  body_ = std::move(body);
}

CAIRN_INLINE ArtifactPtr ArtifactRecord::Builder::make(Builder&& b) {
  // One allocation for the record and its control block, as std::make_shared gives, despite the private
  // constructor.
  struct Shared : ArtifactRecord {
    explicit Shared(Builder&& b) : ArtifactRecord(std::move(b)) {}
  };
  return std::make_shared<const Shared>(std::move(b));
}

CAIRN_INLINE ArtifactPtr ArtifactRecord::stamped(std::string id, std::uint64_t version, std::int64_t created_at) const {
  if (created_at < 0) throw invalid_artifact(fmt::format("created_at: must not be negative (got {})", created_at));
  struct Shared : ArtifactRecord {
    Shared(std::shared_ptr<const Body> body, std::string id, std::uint64_t version, std::int64_t created_at)
        : ArtifactRecord(std::move(body), std::move(id), version, created_at) {}
  };
  return std::make_shared<const Shared>(body_, std::move(id), version, created_at);
}

CAIRN_INLINE ArtifactPtr ArtifactRecord::with_identity(std::string id, std::uint64_t version,
                                                       std::int64_t created_at) const {
  // The id the record was built with passed this check then; only another one is looked at.
  if (id.empty() || id != body_->id) {
    detail::check_identifier("id", id, true);
  } else {
    id.clear();
  }
  return stamped(std::move(id), version, created_at);
}

CAIRN_INLINE ArtifactPtr ArtifactRecord::with_version(std::uint64_t version, std::int64_t created_at) const {
  if (id().empty()) throw invalid_artifact("id: must not be empty");
  return stamped(id_, version, created_at);
}

CAIRN_INLINE ArtifactRecord::Builder ArtifactRecord::to_builder() const {
  Builder b = revise();
  b.version_ = version_;
  b.created_at_ = created_at_;
  return b;
}

CAIRN_INLINE ArtifactRecord::Builder ArtifactRecord::revise() const {
  const Body& r = *body_;
  Builder b;
  b.id_ = id();
  b.tenant_id_ = r.tenant_id;
  b.type_ = r.type;
  b.title_ = r.title;
  b.description_ = r.description;
  b.purpose_ = purpose();
  b.value_ = r.value;
  b.storage_url_ = storage_url();
  b.mime_type_ = mime_type();
  b.size_bytes_ = size_bytes();
  b.schema_url_ = schema_url();
  b.created_by_ = created_by();
  b.metadata_ = r.metadata;
  b.value_checked_ = true;
  b.metadata_checked_ = true;
  return b;
}

/// The JSON form: snake_case keys as in DESIGN.md; optional fields are left out when unset, `value` when absent.
CAIRN_INLINE void to_json(nlohmann::json& j, const ArtifactRecord& r) {
  j = nlohmann::json::object();
  j["id"] = r.id();
  j["tenant_id"] = r.tenant_id();
  j["version"] = r.version();
  j["type"] = r.type().str();
  j["title"] = r.title();
  j["description"] = r.description();
  j["purpose"] = r.purpose();
  if (r.has_value()) j["value"] = r.value();
  if (r.storage_url()) j["storage_url"] = *r.storage_url();
  if (r.mime_type()) j["mime_type"] = *r.mime_type();
  if (r.size_bytes()) j["size_bytes"] = *r.size_bytes();
  if (r.schema_url()) j["schema_url"] = *r.schema_url();
  if (r.created_by()) j["created_by"] = *r.created_by();
  j["created_at"] = r.created_at();
  j["metadata"] = r.metadata();
}

namespace detail {

CAIRN_INLINE std::string string_field(const nlohmann::json& j, const char* key) {
  const auto* v = member(j, key);
  if (!v) return {};
  if (!v->is_string()) throw invalid_artifact(fmt::format("{}: expected a string, got {}", key, v->type_name()));
  return v->get<std::string>();
}

}  // namespace detail

CAIRN_INLINE ArtifactPtr ArtifactRecord::from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw invalid_artifact(fmt::format("record: expected a JSON object, got {}", j.type_name()));
  Builder b;
  b.id(detail::string_field(j, "id"))
      .tenant_id(detail::string_field(j, "tenant_id"))
      .title(detail::string_field(j, "title"))
      .description(detail::string_field(j, "description"))
      .purpose(detail::string_field(j, "purpose"));
  if (const auto* t = detail::member(j, "type")) b.type(t->get<ArtifactType>());
  if (auto v = detail::integer_field<std::uint64_t>(j, "version")) b.version(*v);
  if (const auto* v = detail::member(j, "value")) b.value(*v);
  if (detail::member(j, "storage_url")) b.storage_url(detail::string_field(j, "storage_url"));
  if (detail::member(j, "mime_type")) b.mime_type(detail::string_field(j, "mime_type"));
  if (auto v = detail::integer_field<std::uint64_t>(j, "size_bytes")) b.size_bytes(*v);
  if (detail::member(j, "schema_url")) b.schema_url(detail::string_field(j, "schema_url"));
  if (detail::member(j, "created_by")) b.created_by(detail::string_field(j, "created_by"));
  if (auto v = detail::integer_field<std::int64_t>(j, "created_at")) b.created_at(*v);
  if (const auto* m = detail::member(j, "metadata")) b.metadata(*m);
  return b.build();
}

CAIRN_INLINE ArtifactPtr ArtifactRecord::parse(std::string_view text, const JsonLimits& limits) {
  return from_json(detail::parse_json(text, limits, "artifact record"));
}

CAIRN_INLINE bool operator==(const ArtifactRecord& a, const ArtifactRecord& b) {
  if (a.id() != b.id() || a.version_ != b.version_ || a.created_at_ != b.created_at_) return false;
  if (a.body_ == b.body_) return true;
  const ArtifactRecord::Body& x = *a.body_;
  const ArtifactRecord::Body& y = *b.body_;
  return x.tenant_id == y.tenant_id && x.type == y.type && x.title == y.title && x.description == y.description &&
         a.purpose() == b.purpose() && *x.value == *y.value && a.storage_url() == b.storage_url() &&
         a.mime_type() == b.mime_type() && a.size_bytes() == b.size_bytes() && a.schema_url() == b.schema_url() &&
         a.created_by() == b.created_by() && a.metadata() == b.metadata();
}

CAIRN_INLINE ArtifactRecord::Builder& ArtifactRecord::Builder::value(nlohmann::json v) {
  value_ = std::make_shared<const nlohmann::json>(std::move(v));
  value_checked_ = false;
  return *this;
}

CAIRN_INLINE ArtifactRecord::Builder& ArtifactRecord::Builder::metadata(nlohmann::json v) {
  metadata_ = std::make_shared<const nlohmann::json>(std::move(v));
  metadata_checked_ = false;
  return *this;
}

CAIRN_INLINE ArtifactRecord::Builder& ArtifactRecord::Builder::metadata(const std::string& key, nlohmann::json v) {
  nlohmann::json m = metadata_ ? *metadata_ : nlohmann::json::object();
  if (!m.is_object()) m = nlohmann::json::object();
  m[key] = std::move(v);
  metadata_ = std::make_shared<const nlohmann::json>(std::move(m));
  metadata_checked_ = false;
  return *this;
}

namespace detail {
CAIRN_INLINE const std::shared_ptr<const nlohmann::json>& null_value() {
  static const auto null = std::make_shared<const nlohmann::json>();
  return null;
}

CAIRN_INLINE const std::shared_ptr<const nlohmann::json>& empty_metadata() {
  static const auto empty = std::make_shared<const nlohmann::json>(nlohmann::json::object());
  return empty;
}
}  // namespace detail

CAIRN_END_NAMESPACE
