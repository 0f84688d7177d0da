// cairn — the function bodies of cairn/artifact/message_part.hpp (docs/api.md, "Compiled mode"). Header-only, the
// default, that header includes this file and CAIRN_INLINE is `inline`; with CAIRN_COMPILED_LIB they are
// compiled once, into cairn::compiled (src/compiled/), and the header only declares them.
#pragma once

#include <utility>

#include "cairn/artifact/message_part.hpp"
#include "cairn/detail/json.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

CAIRN_INLINE bool operator==(const DataPart& a, const DataPart& b) { return a.data == b.data; }

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

CAIRN_INLINE std::string base64_problem(std::string_view s) {
  std::size_t pad = 0;
  while (pad < s.size() && s[s.size() - 1 - pad] == '=') ++pad;
  if (pad > 2) return "is not base64: more than two '=' at its end";
  const std::size_t body = s.size() - pad;
  for (std::size_t i = 0; i < body; ++i) {
    const char c = s[i];
    if (!is_ascii_alpha(c) && !is_ascii_digit(c) && c != '+' && c != '/' && c != '-' && c != '_') {
      return fmt::format("is not base64: '{}' at offset {}", excerpt(s.substr(i, 1)), i);
    }
  }
  if (pad != 0 && s.size() % 4 != 0) return "is not base64: padded with '=' to a length that is not a multiple of 4";
  if (body % 4 == 1) return "is not base64: its length leaves one character over";
  return {};
}

CAIRN_INLINE bool A2APart::is_reference() const {
  if (content != Content::data || !metadata.is_object()) return false;
  const auto it = metadata.find(std::string(a2a_extension_uri));
  return it != metadata.end() && it->is_string() && it->get_ref<const std::string&>() == "reference";
}

// The metadata of a part: absent or null is none; anything but an object is an error.
CAIRN_INLINE nlohmann::json a2a_part_metadata(const nlohmann::json& j, const std::string& where) {
  const auto it = j.find("metadata");
  if (it == j.end() || it->is_null()) return nullptr;
  if (!it->is_object()) {
    throw parse_error(fmt::format("{}.metadata: expected an object, got {}", where, it->type_name()));
  }
  return *it;
}

CAIRN_INLINE void a2a_check_raw(const std::string& raw, const std::string& where) {
  if (std::string problem = base64_problem(raw); !problem.empty()) {
    throw parse_error(fmt::format("{}: {}", where, problem));
  }
}

CAIRN_INLINE void a2a_check_url(const std::string& url, const std::string& where) {
  if (url.empty()) throw parse_error(fmt::format("{}: must not be empty", where));
}

CAIRN_INLINE A2APart read_a2a_v1_part(const nlohmann::json& j, const std::string& where) {
  static constexpr const char* contents[] = {"text", "raw", "url", "data"};
  const char* found = nullptr;
  for (const char* key : contents) {
    if (!j.contains(key)) continue;
    if (found) {
      throw parse_error(
          fmt::format("{}: has both '{}' and '{}' (a Part holds exactly one of text, raw, url and "
                      "data)",
                      where, found, key));
    }
    found = key;
  }
  if (!found) {
    throw parse_error(
        fmt::format("{}: has none of 'text', 'raw', 'url' and 'data' (a v1.0 Part holds one of them; "
                    "a v0.3.0 part has 'kind')",
                    where));
  }
  A2APart p;
  const std::string key = found;
  if (key == "data") {
    p.content = A2APart::Content::data;
    p.value = j["data"];
  } else {
    p.value = require_string(j, where.c_str(), found);
    if (key == "text") {
      p.content = A2APart::Content::text;
    } else if (key == "raw") {
      p.content = A2APart::Content::raw;
      a2a_check_raw(p.value.get_ref<const std::string&>(), where + ".raw");
    } else {
      p.content = A2APart::Content::url;
      a2a_check_url(p.value.get_ref<const std::string&>(), where + ".url");
    }
  }
  p.filename = optional_string(j, where.c_str(), "filename");
  p.media_type = optional_string(j, where.c_str(), "mediaType");
  if (!p.media_type) p.media_type = optional_string(j, where.c_str(), "media_type");  // ProtoJSON reads both names
  p.metadata = a2a_part_metadata(j, where);
  return p;
}

CAIRN_INLINE A2APart read_a2a_v0_3_part(const nlohmann::json& j, const std::string& where) {
  const std::string kind = require_string(j, where.c_str(), "kind");
  A2APart p;
  p.v0_3 = true;
  p.metadata = a2a_part_metadata(j, where);
  if (kind == "text") {
    p.value = require_string(j, where.c_str(), "text");
  } else if (kind == "file") {
    const std::string at = where + ".file";
    const auto& file = require_member(j, where.c_str(), "file");
    if (!file.is_object()) throw parse_error(fmt::format("{}: expected a JSON object, got {}", at, file.type_name()));
    auto uri = optional_string(file, at.c_str(), "uri");
    auto bytes = optional_string(file, at.c_str(), "bytes");
    if (uri.has_value() == bytes.has_value()) {
      throw parse_error(fmt::format("{}: needs exactly one of 'uri' and 'bytes'", at));
    }
    if (uri) {
      a2a_check_url(*uri, at + ".uri");
      p.content = A2APart::Content::url;
      p.value = std::move(*uri);
    } else {
      a2a_check_raw(*bytes, at + ".bytes");
      p.content = A2APart::Content::raw;
      p.value = std::move(*bytes);
    }
    p.filename = optional_string(file, at.c_str(), "name");
    p.media_type = optional_string(file, at.c_str(), "mimeType");
  } else if (kind == "data") {
    p.content = A2APart::Content::data;
    p.value = require_member(j, where.c_str(), "data");
    // The SDKs' rule (@a2a-js/sdk 1.3.0, toCorePart): with data_part_compat true, an object's "value" is the data,
    // and the flag leaves the metadata. cairn before v1.0 support wrote cairn_wrapped; it reads the same way.
    if (p.metadata.is_object()) {
      for (const char* flag : {"data_part_compat", "cairn_wrapped"}) {
        const auto it = p.metadata.find(flag);
        if (it == p.metadata.end() || !it->is_boolean() || !it->get<bool>()) continue;
        if (p.value.is_object() && p.value.contains("value")) {
          nlohmann::json inner = std::move(p.value["value"]);
          p.value = std::move(inner);
        }
        p.metadata.erase(flag);
        break;
      }
      if (p.metadata.empty()) p.metadata = nullptr;
    }
  } else {
    throw parse_error(
        fmt::format("{}.kind: unknown kind '{}' (a v0.3.0 part is text, file or data)", where, excerpt(kind)));
  }
  return p;
}

CAIRN_INLINE A2APart read_a2a_part(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw parse_error(fmt::format("{}: expected a JSON object, got {}", where, j.type_name()));
  return j.contains("kind") ? read_a2a_v0_3_part(j, where) : read_a2a_v1_part(j, where);
}

}  // namespace detail

CAIRN_INLINE nlohmann::json to_a2a_part(const MessagePart& part, A2AVersion version) {
  const bool v1 = version == A2AVersion::v1_0;
  nlohmann::json j;
  if (const auto* t = std::get_if<TextPart>(&part)) {
    j = v1 ? nlohmann::json{{"text", t->text}} : nlohmann::json{{"kind", "text"}, {"text", t->text}};
  } else if (const auto* f = std::get_if<FilePart>(&part)) {
    if (f->uri.has_value() == f->bytes.has_value()) {
      throw invalid_argument("FilePart: needs exactly one of uri and bytes");
    }
    if (v1) {
      j = f->uri ? nlohmann::json{{"url", *f->uri}} : nlohmann::json{{"raw", *f->bytes}};
      if (f->name) j["filename"] = *f->name;
      if (f->mime_type) j["mediaType"] = *f->mime_type;
    } else {
      nlohmann::json file = f->uri ? nlohmann::json{{"uri", *f->uri}} : nlohmann::json{{"bytes", *f->bytes}};
      if (f->mime_type) file["mimeType"] = *f->mime_type;
      if (f->name) file["name"] = *f->name;
      j = {{"kind", "file"}, {"file", std::move(file)}};
    }
  } else if (const auto* d = std::get_if<DataPart>(&part)) {
    if (v1) {
      j = {{"data", d->data}};
    } else if (d->data.is_object()) {
      j = {{"kind", "data"}, {"data", d->data}};
    } else {
      j = {{"kind", "data"}, {"data", {{"value", d->data}}}, {"metadata", {{"data_part_compat", true}}}};
    }
  } else {
    const auto& a = std::get<ArtifactPart>(part);
    nlohmann::json data = {{"artifact_id", a.artifact_id}};
    if (a.title) data["title"] = *a.title;
    j = {{"data", std::move(data)}, {"metadata", {{std::string(a2a_extension_uri), "reference"}}}};
    if (!v1) j["kind"] = "data";
  }
  return j;
}

CAIRN_INLINE MessagePart message_part_from_json(const nlohmann::json& j) {
  // Another agent's JSON, parsed by the host without cairn's limits: copying a part recurses once per level.
  if (const int max = JsonLimits{}.max_depth; detail::json_depth(j, max) > max) {
    throw limit_exceeded(fmt::format("MessagePart: JSON nesting is deeper than the limit of {} levels", max));
  }
  if (j.is_object()) {
    // cairn's own part kind before it spoke A2A v1.0: read, never written.
    if (const auto it = j.find("kind"); it != j.end() && it->is_string() && *it == "artifact") {
      ArtifactPart a;
      a.artifact_id = detail::require_string(j, "MessagePart", "artifact_id");
      if (std::string problem = detail::identifier_problem(a.artifact_id); !problem.empty()) {
        throw parse_error(fmt::format("MessagePart.artifact_id: {}", problem));
      }
      a.title = detail::optional_string(j, "MessagePart", "title");
      return a;
    }
  }
  detail::A2APart p = detail::read_a2a_part(j, "MessagePart");
  using Content = detail::A2APart::Content;
  switch (p.content) {
    case Content::text: return TextPart{p.value.get<std::string>()};
    case Content::raw:
      return FilePart{std::nullopt, p.value.get<std::string>(), std::move(p.media_type), std::move(p.filename)};
    case Content::url:
      return FilePart{p.value.get<std::string>(), std::nullopt, std::move(p.media_type), std::move(p.filename)};
    case Content::data: break;
  }
  if (!p.is_reference()) return DataPart{std::move(p.value)};
  const char* where = "MessagePart.data";
  if (!p.value.is_object()) {
    throw parse_error(fmt::format("{}: a cairn reference holds an object, got {}", where, p.value.type_name()));
  }
  ArtifactPart a;
  a.artifact_id = detail::require_string(p.value, where, "artifact_id");
  if (std::string problem = detail::identifier_problem(a.artifact_id); !problem.empty()) {
    throw parse_error(fmt::format("{}.artifact_id: {}", where, problem));
  }
  a.title = detail::optional_string(p.value, where, "title");
  return a;
}

CAIRN_INLINE void to_json(nlohmann::json& j, const TextPart& p) { j = to_a2a_part(p); }
CAIRN_INLINE void to_json(nlohmann::json& j, const FilePart& p) { j = to_a2a_part(p); }
CAIRN_INLINE void to_json(nlohmann::json& j, const DataPart& p) { j = to_a2a_part(p); }
CAIRN_INLINE void to_json(nlohmann::json& j, const ArtifactPart& p) { j = to_a2a_part(p); }

CAIRN_END_NAMESPACE
