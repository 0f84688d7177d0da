// cairn — conversion between ArtifactRecord and the A2A `Artifact` object: v1.0 by default, v0.3.0 when asked.
//
// The value becomes one part that carries it whole (v1.0: `text` for a string, `data` for any other JSON value,
// `raw` for base64 bytes marked metadata.encoding = "base64"), a storage_url a `url` part with a real `filename`
// and `mediaType`. The record fields A2A has no place for travel in the artifact's metadata under cairn's extension
// URI (a2a_extension_uri), so a record survives to_a2a → from_a2a unchanged. Artifacts made by other A2A agents,
// of either version, convert too (see from_a2a).
#pragma once

#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/artifact/message_part.hpp"
#include "cairn/artifact/record.hpp"
#include "cairn/detail/json.hpp"
#include "cairn/error.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

namespace detail {
/// True only when `obj[key]` is the JSON boolean true (outside data may put anything there).
bool flag(const nlohmann::json& obj, const char* key);
/// The file name a record's file goes by in A2A: metadata.filename when it is a non-empty string, else the last
/// path segment of storage_url (percent-decoded when that gives a clean name), else none. Never the title.
std::optional<std::string> a2a_filename(const ArtifactRecord& r);
}  // namespace detail

/// The record as an A2A Artifact of `version`: A2A v1.0 by default (ProtoJSON, as the proto in the a2aproject/A2A
/// repository defines it), v0.3.0 (JSON that validates against `#/definitions/Artifact` of its schema) when asked:
///
///     nlohmann::json v1 = cairn::to_a2a(*record);                            // {"parts": [{"text": …}], …}
///     nlohmann::json v03 = cairn::to_a2a(*record, cairn::A2AVersion::v0_3);  // {"parts": [{"kind": "text", …}]}
///
/// The record's identity (id and version; never the tenant) and every field A2A lacks are in
/// `metadata["urn:cairn:a2a:v1"]`, and `extensions` lists that URI.
nlohmann::json to_a2a(const ArtifactRecord& r, A2AVersion version = A2AVersion::v1_0);

/// A record from an A2A Artifact of either version (told apart part by part: a v0.3.0 part has `kind`), owned by
/// `tenant_id`. The tenant always comes from the caller, never from the artifact: data from another agent cannot
/// place itself in a tenant.
///
/// For artifacts that cairn did not make: one text part gives a string value (several are joined, as A2A
/// streams append them), one data part its value (the SDKs' `data_part_compat` wrapping undone), a mix gives an
/// array of the parts' contents; a url part gives storage_url, a raw part the base64 text as value with
/// metadata.encoding = "base64". The file's part gives mime_type and metadata.filename; what the other parts carry
/// besides content (`mediaType`, `filename`, `metadata`) is kept in metadata.a2a_parts. The type is `file`,
/// `structured` or `document` by the parts seen; the title is the artifact's `name`, else its id. Other artifact
/// metadata is kept under metadata.a2a_metadata, other extension URIs under metadata.a2a_extensions.
/// Throws cairn::parse_error naming the part and member when the JSON is not an A2A Artifact or holds what a record
/// cannot (two url parts; inline bytes beside other content), cairn::invalid_artifact when the result is not a
/// valid record, cairn::limit_exceeded when it nests deeper than JsonLimits{}.max_depth (256).
ArtifactPtr from_a2a(const nlohmann::json& a, const std::string& tenant_id);

CAIRN_END_NAMESPACE

#ifndef CAIRN_COMPILED_LIB
#include "cairn/artifact/a2a-inl.hpp"
#endif
