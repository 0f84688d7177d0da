// cairn — the function bodies of cairn/artifact/message_part.hpp (docs/api.md, "Compiled mode"). Header-only, the
// default, that header includes this file and CAIRN_INLINE is `inline`; with CAIRN_COMPILED_LIB they are
// compiled once, into cairn::compiled (src/compiled/), and the header only declares them.
#pragma once

#include "cairn/artifact/message_part.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

namespace detail {
CAIRN_INLINE const nlohmann::json& require_member(const nlohmann::json& j, const char* part, const char* key) {
  if (!j.is_object()) throw parse_error(fmt::format("{}: expected a JSON object, got {}", part, j.type_name()));
  const auto it = j.find(key);
  if (it == j.end()) throw parse_error(fmt::format("{}: missing required member '{}'", part, key));
  return *it;
}

CAIRN_INLINE std::string require_string(const nlohmann::json& j, const char* part, const char* key) {
  const auto& v = require_member(j, part, key);
  if (!v.is_string()) throw parse_error(fmt::format("{}.{}: expected a string, got {}", part, key, v.type_name()));
  return v.get<std::string>();
}

CAIRN_INLINE std::optional<std::string> optional_string(const nlohmann::json& j, const char* part, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) {
    throw parse_error(fmt::format("{}.{}: expected a string, got {}", part, key, it->type_name()));
  }
  return it->get<std::string>();
}

}

CAIRN_INLINE void to_json(nlohmann::json& j, const FilePart& p) {
  nlohmann::json file = nlohmann::json::object();
  if (p.uri) file["uri"] = *p.uri;
  if (p.bytes) file["bytes"] = *p.bytes;
  if (p.mime_type) file["mimeType"] = *p.mime_type;
  if (p.name) file["name"] = *p.name;
  j = {{"kind", "file"}, {"file", std::move(file)}};
}

CAIRN_INLINE void from_json(const nlohmann::json& j, FilePart& p) {
  const auto& file = detail::require_member(j, "FilePart", "file");
  if (!file.is_object()) throw parse_error(fmt::format("FilePart.file: expected a JSON object, got {}",
      file.type_name()));
  p.uri = detail::optional_string(file, "FilePart.file", "uri");
  p.bytes = detail::optional_string(file, "FilePart.file", "bytes");
  p.mime_type = detail::optional_string(file, "FilePart.file", "mimeType");
  p.name = detail::optional_string(file, "FilePart.file", "name");
  if (p.uri.has_value() == p.bytes.has_value()) {
    throw parse_error("FilePart.file: needs exactly one of 'uri' and 'bytes'");
  }
}

CAIRN_INLINE void from_json(const nlohmann::json& j, DataPart& p) {
  const auto& data = detail::require_member(j, "DataPart", "data");
  if (!data.is_object()) throw parse_error(fmt::format("DataPart.data: expected a JSON object, got {}",
      data.type_name()));
  p.data = data;
}

CAIRN_INLINE void to_json(nlohmann::json& j, const ArtifactPart& p) {
  j = {{"kind", "artifact"}, {"artifact_id", p.artifact_id}};
  if (p.title) j["title"] = *p.title;
}

CAIRN_INLINE void from_json(const nlohmann::json& j, ArtifactPart& p) {
  p.artifact_id = detail::require_string(j, "ArtifactPart", "artifact_id");
  // The id of a record: the same rules as ArtifactRecord ids (detail::identifier_problem).
  if (std::string problem = detail::identifier_problem(p.artifact_id); !problem.empty()) {
    throw parse_error(fmt::format("ArtifactPart.artifact_id: {}", problem));
  }
  p.title = detail::optional_string(j, "ArtifactPart", "title");
}

CAIRN_INLINE MessagePart message_part_from_json(const nlohmann::json& j) {
  const std::string kind = detail::require_string(j, "MessagePart", "kind");
  if (kind == "text") return j.get<TextPart>();
  if (kind == "file") return j.get<FilePart>();
  if (kind == "data") return j.get<DataPart>();
  if (kind == "artifact") return j.get<ArtifactPart>();
  throw parse_error(fmt::format("MessagePart.kind: unknown kind '{}' (expected text, file, data or artifact)", kind));
}

CAIRN_END_NAMESPACE
