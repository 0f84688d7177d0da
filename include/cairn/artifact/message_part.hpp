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
const nlohmann::json& require_member(const nlohmann::json& j, const char* part, const char* key);
std::string require_string(const nlohmann::json& j, const char* part, const char* key);
std::optional<std::string> optional_string(const nlohmann::json& j, const char* part, const char* key);
}  // namespace detail

inline void to_json(nlohmann::json& j, const TextPart& p) { j = {{"kind", "text"}, {"text", p.text}}; }
inline void from_json(const nlohmann::json& j, TextPart& p) { p.text = detail::require_string(j, "TextPart", "text"); }

void to_json(nlohmann::json& j, const FilePart& p);
void from_json(const nlohmann::json& j, FilePart& p);

inline void to_json(nlohmann::json& j, const DataPart& p) { j = {{"kind", "data"}, {"data", p.data}}; }
void from_json(const nlohmann::json& j, DataPart& p);

void to_json(nlohmann::json& j, const ArtifactPart& p);
void from_json(const nlohmann::json& j, ArtifactPart& p);

/// Reads any part by its `kind`. Throws cairn::parse_error naming the part and the member that is wrong.
MessagePart message_part_from_json(const nlohmann::json& j);

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

#ifndef CAIRN_COMPILED_LIB
#include "cairn/artifact/message_part-inl.hpp"
#endif
