// cairn — conversion between ArtifactRecord and the A2A v0.3.0 `Artifact` object.
//
// The value becomes a TextPart (strings) or a DataPart (objects; other JSON values are wrapped as {"value": v}),
// a storage_url becomes a FilePart with `uri`. Fields A2A has no place for travel in `metadata.cairn`, so a record
// survives to_a2a → from_a2a unchanged. Artifacts made by other A2A agents convert too (see from_a2a).
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
}  // namespace detail

/// The record as an A2A v0.3.0 Artifact (JSON that validates against `#/definitions/Artifact`).
nlohmann::json to_a2a(const ArtifactRecord& r);

/// A record from an A2A Artifact, owned by `tenant_id`. The tenant always comes from the caller, never from the
/// artifact's metadata: data from another agent cannot place itself in a tenant.
///
/// For artifacts that cairn did not make: one text part gives a string value (several are joined, as A2A
/// streams append them), one data part its object, a mix gives an array of the parts' contents; the first
/// FilePart with a `uri` gives storage_url and mime_type, one with `bytes` gives the base64 text as value with
/// metadata.encoding = "base64". The type is `file`, `structured` or `document` by the parts seen; the title is the
/// artifact's `name`, else its id. Other metadata is kept under metadata.a2a_metadata.
/// Throws cairn::parse_error naming the member when the JSON is not an A2A Artifact, cairn::invalid_artifact when
/// the result is not a valid record, cairn::limit_exceeded when it nests deeper than JsonLimits{}.max_depth (256).
ArtifactPtr from_a2a(const nlohmann::json& a, const std::string& tenant_id);

CAIRN_END_NAMESPACE

#ifndef CAIRN_COMPILED_LIB
#include "cairn/artifact/a2a-inl.hpp"
#endif
