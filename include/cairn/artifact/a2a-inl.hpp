// cairn — the function bodies of cairn/artifact/a2a.hpp (docs/api.md, "Compiled mode"). Header-only, the
// default, that header includes this file and CAIRN_INLINE is `inline`; with CAIRN_COMPILED_LIB they are
// compiled once, into cairn::compiled (src/compiled/), and the header only declares them.
#pragma once

#include <utility>
#include <vector>

#include "cairn/artifact/a2a.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

namespace detail {
CAIRN_INLINE bool flag(const nlohmann::json& obj, const char* key) {
  const auto it = obj.find(key);
  return it != obj.end() && it->is_boolean() && it->get<bool>();
}

CAIRN_INLINE std::optional<std::string> a2a_filename(const ArtifactRecord& r) {
  if (const auto it = r.metadata().find("filename");
      it != r.metadata().end() && it->is_string() && !it->get_ref<const std::string&>().empty()) {
    return it->get<std::string>();
  }
  if (!r.storage_url()) return std::nullopt;
  std::string_view url = *r.storage_url();
  url = url.substr(0, url.find_first_of("?#"));
  if (const auto scheme = url.find("://"); scheme != std::string_view::npos) {
    const auto path = url.find('/', scheme + 3);
    if (path == std::string_view::npos) return std::nullopt;  // "https://host": no path, no name
    url = url.substr(path);
  }
  const auto slash = url.rfind('/');
  if (slash == std::string_view::npos) return std::nullopt;
  const std::string_view segment = url.substr(slash + 1);
  if (segment.empty()) return std::nullopt;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string decoded;
  for (std::size_t i = 0; i < segment.size(); ++i) {
    if (segment[i] == '%' && i + 2 < segment.size() && hex(segment[i + 1]) >= 0 && hex(segment[i + 2]) >= 0) {
      decoded.push_back(static_cast<char>(hex(segment[i + 1]) * 16 + hex(segment[i + 2])));
      i += 2;
    } else {
      decoded.push_back(segment[i]);
    }
  }
  // A name that decodes to a path, control characters or broken UTF-8 is not a clean file name: keep it encoded.
  if (decoded.empty() || !is_valid_utf8(decoded) || has_control_char(decoded) ||
      decoded.find('/') != std::string::npos) {
    return std::string(segment);
  }
  return decoded;
}

// The record's value holds base64 bytes: metadata.encoding = "base64" and text that is base64.
CAIRN_INLINE bool a2a_value_is_bytes(const ArtifactRecord& r) {
  if (!r.value().is_string()) return false;
  const auto it = r.metadata().find("encoding");
  return it != r.metadata().end() && it->is_string() && *it == "base64" &&
         base64_problem(r.value().get_ref<const std::string&>()).empty();
}

// The member of a part that holds its content, as the part's version names it, for error messages.
CAIRN_INLINE const char* a2a_content_member(const A2APart& p) {
  using Content = A2APart::Content;
  switch (p.content) {
    case Content::text: return "text";
    case Content::raw: return p.v0_3 ? "file.bytes" : "raw";
    case Content::url: return p.v0_3 ? "file.uri" : "url";
    case Content::data: break;
  }
  return "data";
}
}  // namespace detail

CAIRN_INLINE nlohmann::json to_a2a(const ArtifactRecord& r, A2AVersion version) {
  const bool v1 = version == A2AVersion::v1_0;
  const std::string uri(a2a_extension_uri);
  const auto filename = detail::a2a_filename(r);
  nlohmann::json parts = nlohmann::json::array();
  // mediaType and filename ride on the part that carries the content: the url part when there is one, else the
  // value's (v0.3.0 has them on file parts only).
  if (r.has_value()) {
    const bool on_value = !r.storage_url();
    if (detail::a2a_value_is_bytes(r)) {
      parts.push_back(to_a2a_part(FilePart{std::nullopt, r.value().get<std::string>(),
                                           on_value ? r.mime_type() : std::nullopt, on_value ? filename : std::nullopt},
                                  version));
    } else {
      nlohmann::json part = r.value().is_string() ? to_a2a_part(TextPart{r.value().get<std::string>()}, version)
                                                  : to_a2a_part(DataPart{r.value()}, version);
      if (v1 && on_value && filename) part["filename"] = *filename;
      if (v1 && on_value && r.mime_type()) part["mediaType"] = *r.mime_type();
      parts.push_back(std::move(part));
    }
  }
  if (r.storage_url()) {
    parts.push_back(to_a2a_part(FilePart{*r.storage_url(), std::nullopt, r.mime_type(), filename}, version));
  }

  nlohmann::json ext = {{"id", r.id()}, {"version", r.version()}, {"type", r.type().str()}};
  if (r.purpose() != r.description()) ext["purpose"] = r.purpose();
  if (r.created_at() != 0) ext["created_at"] = r.created_at();
  if (!r.metadata().empty()) ext["metadata"] = r.metadata();
  if (r.mime_type()) ext["mime_type"] = *r.mime_type();
  if (r.size_bytes()) ext["size_bytes"] = *r.size_bytes();
  if (r.schema_url()) ext["schema_url"] = *r.schema_url();
  if (r.created_by()) ext["created_by"] = *r.created_by();
  if (r.title().empty()) ext["untitled"] = true;

  nlohmann::json a = {{"artifactId", r.id()}};
  if (!r.title().empty()) a["name"] = r.title();
  if (!r.description().empty()) a["description"] = r.description();
  a["parts"] = std::move(parts);
  a["metadata"] = {{uri, std::move(ext)}};
  a["extensions"] = nlohmann::json::array({uri});
  return a;
}

CAIRN_INLINE ArtifactPtr from_a2a(const nlohmann::json& a, const std::string& tenant_id) {
  if (!a.is_object()) throw parse_error(fmt::format("A2A Artifact: expected a JSON object, got {}", a.type_name()));
  // Another agent's JSON, parsed by the host without cairn's limits: copying a part recurses once per level.
  if (const int max = JsonLimits{}.max_depth; detail::json_depth(a, max) > max) {
    throw limit_exceeded(fmt::format("A2A Artifact: JSON nesting is deeper than the limit of {} levels", max));
  }
  // ProtoJSON parsers read the proto field name too.
  const char* id_key = !a.contains("artifactId") && a.contains("artifact_id") ? "artifact_id" : "artifactId";
  const std::string id = detail::require_string(a, "A2A Artifact", id_key);
  // An empty artifactId would let the store pick a new id: an artifact from outside keeps the id it names.
  if (std::string problem = detail::identifier_problem(id); !problem.empty()) {
    throw invalid_artifact(fmt::format("A2A Artifact.{}: {}", id_key, problem));
  }
  const auto& parts = detail::require_member(a, "A2A Artifact", "parts");
  if (!parts.is_array()) {
    throw parse_error(fmt::format("A2A Artifact.parts: expected an array, got {}", parts.type_name()));
  }
  auto b = ArtifactRecord::builder();
  b.id(id).tenant_id(tenant_id);
  const auto name = detail::optional_string(a, "A2A Artifact", "name");
  const auto description = detail::optional_string(a, "A2A Artifact", "description");
  if (description) b.description(*description);

  const std::string uri(a2a_extension_uri);
  const nlohmann::json* ext = nullptr;
  std::string ext_where;
  nlohmann::json foreign_meta = nlohmann::json::object();
  if (const auto it = a.find("metadata"); it != a.end() && !it->is_null()) {
    if (!it->is_object()) {
      throw parse_error(fmt::format("A2A Artifact.metadata: expected an object, got {}", it->type_name()));
    }
    if (const auto mine = it->find(uri); mine != it->end()) {
      if (!mine->is_object()) {
        throw parse_error(
            fmt::format("A2A Artifact.metadata[\"{}\"]: expected an object, got {}", uri, mine->type_name()));
      }
      ext = &*mine;
      ext_where = fmt::format("A2A Artifact.metadata[\"{}\"]", uri);
    } else if (const auto legacy = it->find("cairn"); legacy != it->end() && legacy->is_object()) {
      ext = &*legacy;  // what cairn wrote before its A2A extension
      ext_where = "A2A Artifact.metadata.cairn";
    }
    for (const auto& [key, val] : it->items()) {
      if (ext != &val) foreign_meta[key] = val;
    }
  }
  nlohmann::json foreign_extensions = nlohmann::json::array();
  if (const auto it = a.find("extensions"); it != a.end() && !it->is_null()) {
    if (!it->is_array()) {
      throw parse_error(fmt::format("A2A Artifact.extensions: expected an array, got {}", it->type_name()));
    }
    for (std::size_t i = 0; i < it->size(); ++i) {
      const auto& e = (*it)[i];
      if (!e.is_string()) {
        throw parse_error(fmt::format("A2A Artifact.extensions[{}]: expected a string, got {}", i, e.type_name()));
      }
      if (e != uri) foreign_extensions.push_back(e);
    }
  }

  // The parts, in v1.0's terms: at most one url part (a record has one storage_url); text, raw and data parts give
  // the value.
  using Content = detail::A2APart::Content;
  std::vector<detail::A2APart> read;
  std::vector<std::string> where;
  read.reserve(parts.size());
  std::ptrdiff_t url_at = -1;
  std::vector<std::size_t> content_at;
  bool all_text = true, saw_data = false, saw_raw = false;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    where.push_back(fmt::format("A2A Artifact.parts[{}]", i));
    read.push_back(detail::read_a2a_part(parts[i], where.back()));
    const auto& p = read.back();
    if (p.content == Content::url) {
      if (url_at >= 0) {
        throw parse_error(fmt::format("{}.{}: a record holds one storage_url, and parts[{}] gave it", where.back(),
                                      detail::a2a_content_member(p), url_at));
      }
      url_at = static_cast<std::ptrdiff_t>(i);
      continue;
    }
    content_at.push_back(i);
    all_text = all_text && p.content == Content::text;
    saw_data = saw_data || p.content == Content::data;
    saw_raw = saw_raw || p.content == Content::raw;
  }
  if (saw_raw && content_at.size() > 1) {
    for (std::size_t i : content_at) {
      if (read[i].content != Content::raw) continue;
      throw parse_error(
          fmt::format("{}.{}: inline bytes must be the only text, raw or data part of an artifact (a "
                      "record holds them as its one base64 value); this one has {}",
                      where[i], detail::a2a_content_member(read[i]), content_at.size()));
    }
  }
  if (url_at >= 0) b.storage_url(read[static_cast<std::size_t>(url_at)].value.get<std::string>());
  if (content_at.size() == 1) {
    b.value(std::move(read[content_at[0]].value));
  } else if (all_text && !content_at.empty()) {
    std::string text;
    for (std::size_t i : content_at) text += read[i].value.get_ref<const std::string&>();
    b.value(std::move(text));
  } else if (!content_at.empty()) {
    nlohmann::json values = nlohmann::json::array();
    for (std::size_t i : content_at) values.push_back(std::move(read[i].value));
    b.value(std::move(values));
  }

  // The file's part (the url part, else the only content part) gives mime_type and filename; what the other parts
  // carry besides their content, and every part's metadata, is kept in a2a_parts.
  const std::ptrdiff_t primary = url_at >= 0              ? url_at
                                 : content_at.size() == 1 ? static_cast<std::ptrdiff_t>(content_at[0])
                                                          : -1;
  nlohmann::json a2a_parts = nlohmann::json::array();
  bool kept = false;
  for (std::size_t i = 0; i < read.size(); ++i) {
    nlohmann::json entry = nlohmann::json::object();
    if (static_cast<std::ptrdiff_t>(i) != primary) {
      if (read[i].media_type) entry["mediaType"] = *read[i].media_type;
      if (read[i].filename) entry["filename"] = *read[i].filename;
    }
    if (!read[i].metadata.is_null()) entry["metadata"] = std::move(read[i].metadata);
    kept = kept || !entry.empty();
    a2a_parts.push_back(std::move(entry));
  }

  nlohmann::json metadata = nlohmann::json::object();
  if (ext) {
    const auto& m = *ext;
    try {
      if (const auto* v = detail::member(m, "type")) b.type(v->get<ArtifactType>());
      if (auto v = detail::integer_field<std::uint64_t>(m, "version")) b.version(*v);
      if (auto v = detail::integer_field<std::int64_t>(m, "created_at")) b.created_at(*v);
      if (auto v = detail::integer_field<std::uint64_t>(m, "size_bytes")) b.size_bytes(*v);
      if (detail::member(m, "purpose")) b.purpose(detail::string_field(m, "purpose"));
      if (detail::member(m, "mime_type")) b.mime_type(detail::string_field(m, "mime_type"));
      if (detail::member(m, "schema_url")) b.schema_url(detail::string_field(m, "schema_url"));
      if (detail::member(m, "created_by")) b.created_by(detail::string_field(m, "created_by"));
    } catch (const invalid_artifact& e) {
      throw invalid_artifact(fmt::format("{}.{}", ext_where, e.what()));
    }
    if (const auto* v = detail::member(m, "metadata")) {
      if (!v->is_object()) {
        throw invalid_artifact(fmt::format("{}.metadata: expected an object, got {}", ext_where, v->type_name()));
      }
      metadata = *v;
    }
    if (!detail::flag(m, "untitled")) b.title(name.value_or(id));
  } else {
    b.type(url_at >= 0 || saw_raw ? ArtifactType::file : saw_data ? ArtifactType::structured : ArtifactType::document);
    b.title(name ? *name : id);
    if (primary >= 0) {
      const auto& p = read[static_cast<std::size_t>(primary)];
      if (p.media_type) {
        if (!detail::is_mime_type(*p.media_type)) {
          throw invalid_artifact(fmt::format("{}.{}: '{}' is not a MIME type of the form type/subtype",
                                             where[static_cast<std::size_t>(primary)],
                                             p.v0_3 ? "file.mimeType" : "mediaType", detail::excerpt(*p.media_type)));
        }
        b.mime_type(*p.media_type);
      }
      if (p.filename) metadata["filename"] = *p.filename;
    }
    if (saw_raw) metadata["encoding"] = "base64";  // then the raw part is the only content part
  }
  if (kept) metadata["a2a_parts"] = std::move(a2a_parts);
  if (!foreign_meta.empty()) metadata["a2a_metadata"] = std::move(foreign_meta);
  if (!foreign_extensions.empty()) metadata["a2a_extensions"] = std::move(foreign_extensions);
  b.metadata(std::move(metadata));
  return b.build();
}

CAIRN_END_NAMESPACE
