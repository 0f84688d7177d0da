// cairn — the function bodies of cairn/artifact/a2a.hpp (docs/api.md, "Compiled mode"). Header-only, the
// default, that header includes this file and CAIRN_INLINE is `inline`; with CAIRN_COMPILED_LIB they are
// compiled once, into cairn::compiled (src/compiled/), and the header only declares them.
#pragma once

#include "cairn/artifact/a2a.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

namespace detail {
CAIRN_INLINE bool flag(const nlohmann::json& obj, const char* key) {
  const auto it = obj.find(key);
  return it != obj.end() && it->is_boolean() && it->get<bool>();
}

}

CAIRN_INLINE nlohmann::json to_a2a(const ArtifactRecord& r) {
  nlohmann::json parts = nlohmann::json::array();
  if (r.has_value()) {
    if (r.value().is_string()) {
      parts.push_back({{"kind", "text"}, {"text", r.value()}});
    } else if (r.value().is_object()) {
      parts.push_back({{"kind", "data"}, {"data", r.value()}});
    } else {
      parts.push_back({{"kind", "data"}, {"data", {{"value", r.value()}}}, {"metadata", {{"cairn_wrapped", true}}}});
    }
  }
  if (r.storage_url()) {
    nlohmann::json file = {{"uri", *r.storage_url()}};
    if (r.mime_type()) file["mimeType"] = *r.mime_type();
    if (!r.title().empty()) file["name"] = r.title();
    parts.push_back({{"kind", "file"}, {"file", std::move(file)}});
  }
  nlohmann::json cairn_meta = {{"tenant_id", r.tenant_id()},
                               {"version", r.version()},
                               {"type", r.type().str()},
                               {"purpose", r.purpose()},
                               {"created_at", r.created_at()},
                               {"metadata", r.metadata()}};
  if (r.mime_type()) cairn_meta["mime_type"] = *r.mime_type();
  if (r.size_bytes()) cairn_meta["size_bytes"] = *r.size_bytes();
  if (r.schema_url()) cairn_meta["schema_url"] = *r.schema_url();
  if (r.created_by()) cairn_meta["created_by"] = *r.created_by();
  if (r.title().empty()) cairn_meta["untitled"] = true;

  nlohmann::json a = {{"artifactId", r.id()}, {"parts", std::move(parts)}};
  if (!r.title().empty()) a["name"] = r.title();
  if (!r.description().empty()) a["description"] = r.description();
  a["metadata"] = {{"cairn", std::move(cairn_meta)}};
  return a;
}

CAIRN_INLINE ArtifactPtr from_a2a(const nlohmann::json& a, const std::string& tenant_id) {
  if (!a.is_object()) throw parse_error(fmt::format("A2A Artifact: expected a JSON object, got {}", a.type_name()));
  // Another agent's JSON, parsed by the host without cairn's limits: copying a part recurses once per level.
  if (const int max = JsonLimits{}.max_depth; detail::json_depth(a, max) > max) {
    throw limit_exceeded(fmt::format("A2A Artifact: JSON nesting is deeper than the limit of {} levels", max));
  }
  const std::string id = detail::require_string(a, "A2A Artifact", "artifactId");
  // An empty artifactId would let the store pick a new id: an artifact from outside keeps the id it names.
  if (std::string problem = detail::identifier_problem(id); !problem.empty()) {
    throw invalid_artifact(fmt::format("A2A Artifact.artifactId: {}", problem));
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

  const nlohmann::json* cairn_meta = nullptr;
  nlohmann::json foreign_meta = nlohmann::json::object();
  if (const auto it = a.find("metadata"); it != a.end() && !it->is_null()) {
    if (!it->is_object()) {
      throw parse_error(fmt::format("A2A Artifact.metadata: expected an object, got {}", it->type_name()));
    }
    for (const auto& [key, val] : it->items()) {
      if (key == "cairn" && val.is_object()) {
        cairn_meta = &val;
      } else {
        foreign_meta[key] = val;
      }
    }
  }

  std::string text;
  int text_parts = 0;
  nlohmann::json contents = nlohmann::json::array();
  bool saw_file = false, saw_data = false, base64 = false;
  std::optional<std::string> file_mime;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const auto& p = parts[i];
    const std::string where = fmt::format("A2A Artifact.parts[{}]", i);
    MessagePart part;
    try {
      part = message_part_from_json(p);
    } catch (const parse_error& e) {
      throw parse_error(fmt::format("{}: {}", where, e.what()));
    }
    if (const auto* t = std::get_if<TextPart>(&part)) {
      text += t->text;
      ++text_parts;
      contents.push_back(t->text);
    } else if (const auto* d = std::get_if<DataPart>(&part)) {
      saw_data = true;
      const auto m = p.find("metadata");
      const bool wrapped = m != p.end() && m->is_object() && detail::flag(*m, "cairn_wrapped");
      contents.push_back(wrapped && d->data.contains("value") ? d->data["value"] : d->data);
    } else if (const auto* f = std::get_if<FilePart>(&part)) {
      if (saw_file) continue;
      saw_file = true;
      file_mime = f->mime_type;
      if (f->uri) {
        b.storage_url(*f->uri);
      } else {
        contents.push_back(*f->bytes);
        base64 = true;
      }
    } else {
      throw parse_error(fmt::format("{}: kind 'artifact' is not an A2A part", where));
    }
  }
  if (contents.size() == 1) {
    b.value(contents[0]);
  } else if (text_parts == static_cast<int>(contents.size()) && text_parts > 0) {
    b.value(text);
  } else if (!contents.empty()) {
    b.value(contents);
  }

  nlohmann::json metadata = nlohmann::json::object();
  if (cairn_meta) {
    const auto& m = *cairn_meta;
    if (const auto* v = detail::member(m, "type")) b.type(v->get<ArtifactType>());
    if (auto v = detail::integer_field<std::uint64_t>(m, "version")) b.version(*v);
    if (auto v = detail::integer_field<std::int64_t>(m, "created_at")) b.created_at(*v);
    if (auto v = detail::integer_field<std::uint64_t>(m, "size_bytes")) b.size_bytes(*v);
    if (detail::member(m, "purpose")) b.purpose(detail::string_field(m, "purpose"));
    if (detail::member(m, "mime_type")) b.mime_type(detail::string_field(m, "mime_type"));
    if (detail::member(m, "schema_url")) b.schema_url(detail::string_field(m, "schema_url"));
    if (detail::member(m, "created_by")) b.created_by(detail::string_field(m, "created_by"));
    if (const auto* v = detail::member(m, "metadata")) metadata = *v;
    if (!detail::flag(m, "untitled")) b.title(name.value_or(id));
  } else {
    b.type(saw_file ? ArtifactType::file : saw_data ? ArtifactType::structured : ArtifactType::document);
    b.title(name ? *name : id);
    if (file_mime) b.mime_type(*file_mime);
  }
  if (base64 && metadata.is_object()) metadata["encoding"] = "base64";
  if (!foreign_meta.empty() && metadata.is_object()) metadata["a2a_metadata"] = std::move(foreign_meta);
  b.metadata(std::move(metadata));
  return b.build();
}

CAIRN_END_NAMESPACE
