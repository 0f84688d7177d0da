// cairn — MessagePart: the parts of a message between agents, including references to stored artifacts.
//
// TextPart, FilePart and DataPart mirror A2A v0.3.0's parts; ArtifactPart carries only an artifact id, so an
// orchestrator can pass work between agents without copying content (the consumer fetches it from the store).
// JSON uses A2A's `kind` discriminator: "text", "file", "data", and "artifact" for ArtifactPart.
#pragma once

#include <optional>
#include <string>
#include <variant>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/detail/text.hpp"
#include "cairn/error.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

struct TextPart {
  std::string text;
  friend bool operator==(const TextPart& a, const TextPart& b) { return a.text == b.text; }
};

/// A file, by URI or by base64 bytes (exactly one of them).
struct FilePart {
  std::optional<std::string> uri;
  std::optional<std::string> bytes;  ///< base64
  std::optional<std::string> mime_type;
  std::optional<std::string> name;
  friend bool operator==(const FilePart& a, const FilePart& b) {
    return a.uri == b.uri && a.bytes == b.bytes && a.mime_type == b.mime_type && a.name == b.name;
  }
};

/// Structured data: always a JSON object, as in A2A.
struct DataPart {
  nlohmann::json data = nlohmann::json::object();
  friend bool operator==(const DataPart& a, const DataPart& b) { return a.data == b.data; }
};

/// A reference to a stored artifact; `title` is a human-readable hint, not authoritative.
struct ArtifactPart {
  std::string artifact_id;
  std::optional<std::string> title;
  friend bool operator==(const ArtifactPart& a, const ArtifactPart& b) {
    return a.artifact_id == b.artifact_id && a.title == b.title;
  }
};

using MessagePart = std::variant<TextPart, FilePart, DataPart, ArtifactPart>;

namespace detail {
inline const nlohmann::json& require_member(const nlohmann::json& j, const char* part, const char* key) {
  if (!j.is_object()) throw parse_error(fmt::format("{}: expected a JSON object, got {}", part, j.type_name()));
  const auto it = j.find(key);
  if (it == j.end()) throw parse_error(fmt::format("{}: missing required member '{}'", part, key));
  return *it;
}
inline std::string require_string(const nlohmann::json& j, const char* part, const char* key) {
  const auto& v = require_member(j, part, key);
  if (!v.is_string()) throw parse_error(fmt::format("{}.{}: expected a string, got {}", part, key, v.type_name()));
  return v.get<std::string>();
}
inline std::optional<std::string> optional_string(const nlohmann::json& j, const char* part, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) {
    throw parse_error(fmt::format("{}.{}: expected a string, got {}", part, key, it->type_name()));
  }
  return it->get<std::string>();
}
}  // namespace detail

inline void to_json(nlohmann::json& j, const TextPart& p) { j = {{"kind", "text"}, {"text", p.text}}; }
inline void from_json(const nlohmann::json& j, TextPart& p) { p.text = detail::require_string(j, "TextPart", "text"); }

inline void to_json(nlohmann::json& j, const FilePart& p) {
  nlohmann::json file = nlohmann::json::object();
  if (p.uri) file["uri"] = *p.uri;
  if (p.bytes) file["bytes"] = *p.bytes;
  if (p.mime_type) file["mimeType"] = *p.mime_type;
  if (p.name) file["name"] = *p.name;
  j = {{"kind", "file"}, {"file", std::move(file)}};
}
inline void from_json(const nlohmann::json& j, FilePart& p) {
  const auto& file = detail::require_member(j, "FilePart", "file");
  if (!file.is_object()) throw parse_error(fmt::format("FilePart.file: expected a JSON object, got {}", file.type_name()));
  p.uri = detail::optional_string(file, "FilePart.file", "uri");
  p.bytes = detail::optional_string(file, "FilePart.file", "bytes");
  p.mime_type = detail::optional_string(file, "FilePart.file", "mimeType");
  p.name = detail::optional_string(file, "FilePart.file", "name");
  if (p.uri.has_value() == p.bytes.has_value()) {
    throw parse_error("FilePart.file: needs exactly one of 'uri' and 'bytes'");
  }
}

inline void to_json(nlohmann::json& j, const DataPart& p) { j = {{"kind", "data"}, {"data", p.data}}; }
inline void from_json(const nlohmann::json& j, DataPart& p) {
  const auto& data = detail::require_member(j, "DataPart", "data");
  if (!data.is_object()) throw parse_error(fmt::format("DataPart.data: expected a JSON object, got {}", data.type_name()));
  p.data = data;
}

inline void to_json(nlohmann::json& j, const ArtifactPart& p) {
  j = {{"kind", "artifact"}, {"artifact_id", p.artifact_id}};
  if (p.title) j["title"] = *p.title;
}
inline void from_json(const nlohmann::json& j, ArtifactPart& p) {
  p.artifact_id = detail::require_string(j, "ArtifactPart", "artifact_id");
  // The id of a record: the same rules as ArtifactRecord ids (detail::identifier_problem).
  if (std::string problem = detail::identifier_problem(p.artifact_id); !problem.empty()) {
    throw parse_error(fmt::format("ArtifactPart.artifact_id: {}", problem));
  }
  p.title = detail::optional_string(j, "ArtifactPart", "title");
}

/// Reads any part by its `kind`. Throws cairn::parse_error naming the part and the member that is wrong.
inline MessagePart message_part_from_json(const nlohmann::json& j) {
  const std::string kind = detail::require_string(j, "MessagePart", "kind");
  if (kind == "text") return j.get<TextPart>();
  if (kind == "file") return j.get<FilePart>();
  if (kind == "data") return j.get<DataPart>();
  if (kind == "artifact") return j.get<ArtifactPart>();
  throw parse_error(fmt::format("MessagePart.kind: unknown kind '{}' (expected text, file, data or artifact)", kind));
}

CAIRN_END_NAMESPACE

namespace nlohmann {
template <>
struct adl_serializer<cairn::MessagePart> {
  static cairn::MessagePart from_json(const json& j) { return cairn::message_part_from_json(j); }
  static void to_json(json& j, const cairn::MessagePart& p) {
    std::visit([&j](const auto& part) { j = part; }, p);
  }
};
}  // namespace nlohmann
