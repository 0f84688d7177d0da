// cairn — MessagePart: the parts of a message between agents, including references to stored artifacts.
//
// TextPart, FilePart and DataPart are A2A's parts; ArtifactPart carries only an artifact id, so an orchestrator can
// pass work between agents without copying content (the consumer fetches it from the store). On the wire every part
// is a valid A2A part, v1.0 by default (`{"text"}`, `{"url"|"raw", "filename", "mediaType"}`, `{"data"}`) or v0.3.0
// when asked (`{"kind": …}`); an ArtifactPart is a data part marked with cairn's A2A extension (a2a_extension_uri),
// which a peer that does not know the extension reads as plain data: `{"artifact_id": …, "title": …}`.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/detail/text.hpp"
#include "cairn/error.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

/// The A2A protocol version of the JSON cairn writes. Reading takes both, told apart by shape (a v0.3.0 part has
/// `kind`; a v1.0 part has one of `text`, `raw`, `url`, `data`).
enum class A2AVersion {
  v1_0,  ///< A2A v1.0 (the a2aproject/A2A proto, ProtoJSON): the default
  v0_3,  ///< A2A v0.3.0 (spec/a2a-v0.3.0.schema.json), for peers that have not moved
};

/// cairn's A2A extension (docs/artifacts.md, "cairn's A2A extension"): the key under which an Artifact's `metadata`
/// carries the record fields A2A has no place for, the URI in its `extensions`, and the key whose value
/// "reference" marks a data part as a reference to a stored artifact. A name, not a location.
inline constexpr std::string_view a2a_extension_uri = "urn:cairn:a2a:v1";

struct TextPart {
  std::string text;
  friend bool operator==(const TextPart& a, const TextPart& b) { return a.text == b.text; }
};

/// A file, by URI or by base64 bytes (exactly one of them).
struct FilePart {
  std::optional<std::string> uri;
  std::optional<std::string> bytes;  ///< base64
  std::optional<std::string> mime_type;
  std::optional<std::string> name;  ///< a file name ("report.pdf")
  friend bool operator==(const FilePart& a, const FilePart& b) {
    return a.uri == b.uri && a.bytes == b.bytes && a.mime_type == b.mime_type && a.name == b.name;
  }
};

/// Structured data: any JSON value (v1.0). Written as v0.3.0, a value that is not an object travels as
/// `{"value": v}` with metadata `data_part_compat: true`, as the A2A SDKs do.
struct DataPart {
  nlohmann::json data = nlohmann::json::object();
  friend bool operator==(const DataPart& a, const DataPart& b);
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

/// What is wrong with `s` as base64 (standard or URL-safe alphabet, padded or not, as ProtoJSON reads `bytes`),
/// or "" when nothing is.
std::string base64_problem(std::string_view s);

/// One A2A part of either version, in v1.0's terms (v0.3.0: file.uri → url, file.bytes → raw, file.name →
/// filename, mimeType → media_type; a data part's `data_part_compat` wrapping undone as the SDKs do).
struct A2APart {
  enum class Content { text, raw, url, data };
  Content content = Content::text;
  nlohmann::json value;  ///< the string for text, raw (base64) and url; any JSON for data
  std::optional<std::string> filename;
  std::optional<std::string> media_type;
  nlohmann::json metadata;  ///< null or an object (without the SDK's data_part_compat flag)
  bool v0_3 = false;        ///< it came in v0.3.0's shape
  /// A data part marked as a cairn reference (metadata[a2a_extension_uri] == "reference").
  bool is_reference() const;
};

/// Reads one part of either version. `where` names it in errors: "A2A Artifact.parts[0].url: expected a string".
/// Throws cairn::parse_error.
A2APart read_a2a_part(const nlohmann::json& j, const std::string& where);
}  // namespace detail

/// The part as A2A JSON of `version` (v1.0 by default). to_json (found by ADL) writes v1.0.
nlohmann::json to_a2a_part(const MessagePart& p, A2AVersion version = A2AVersion::v1_0);

void to_json(nlohmann::json& j, const TextPart& p);
void to_json(nlohmann::json& j, const FilePart& p);
void to_json(nlohmann::json& j, const DataPart& p);
void to_json(nlohmann::json& j, const ArtifactPart& p);

/// Reads any part of either version by its shape (and cairn's legacy `{"kind": "artifact"}`). Throws
/// cairn::parse_error naming the part and the member that is wrong, cairn::limit_exceeded when it nests deeper than
/// JsonLimits{}.max_depth (256).
MessagePart message_part_from_json(const nlohmann::json& j);

CAIRN_END_NAMESPACE

namespace nlohmann {
template <>
struct adl_serializer<cairn::MessagePart> {
  static cairn::MessagePart from_json(const json& j) { return cairn::message_part_from_json(j); }
  static void to_json(json& j, const cairn::MessagePart& p) { j = cairn::to_a2a_part(p); }
};
}  // namespace nlohmann

#ifndef CAIRN_COMPILED_LIB
#include "cairn/artifact/message_part-inl.hpp"
#endif
