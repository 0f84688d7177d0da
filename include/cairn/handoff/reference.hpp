// cairn — <artifact id="…" summary="…" /> references: rendering them, and finding them in any text.
//
// A reference is the lightweight stand-in for stored content that agents pass to each other. render_reference
// writes one with XML-escaped attributes; scan_references finds every reference in a text in one linear pass, in
// the forms models actually write: either quote style, any attribute order, extra whitespace (line breaks too),
// self-closing or with a matching close tag. References inside fenced code blocks are left alone: they are examples,
// not references.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/detail/text.hpp"
#include "cairn/handoff/artifact_block.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

/// Escapes text for an XML attribute value: & < > " ' become entities, and tab, line feed and carriage return
/// become character references, so a reference always stays on one line.
std::string xml_escape(std::string_view text);

/// Undoes xml_escape, and reads any numeric character reference (`&#233;`, `&#xE9;`). An entity it does not know,
/// or a malformed one, stays as written.
std::string xml_unescape(std::string_view text);

/// `<artifact id="…" summary="…" />`, or `<artifact id="…" />` when the summary is empty.
///
///     cairn::render_reference("draft_k3x9", "Add \"dark\" mode");
///     // <artifact id="draft_k3x9" summary="Add &quot;dark&quot; mode" />
std::string render_reference(std::string_view id, std::string_view summary = {});

/// One reference found in a text.
struct ArtifactReference {
  std::size_t begin = 0;               ///< offset of the `<` that opens it
  std::size_t end = 0;                 ///< offset just past it (past `</artifact>` when it had a close tag)
  std::string id;                      ///< the id attribute, unescaped
  std::optional<std::string> summary;  ///< the summary attribute, unescaped, when present
  bool self_closing = true;            ///< false for `<artifact …>…</artifact>` (or a lone `<artifact …>`)
};

/// Calls `on_reference(const ArtifactReference&)` for each reference in `text`, in order, in time linear in the
/// size of the text. What counts as a reference:
///
/// - `<artifact` (any letter case), then attributes `name="value"` or `name='value'` separated by whitespace, then
///   `/>` or `>`. An `id` attribute is required; other attributes are allowed and ignored. A tag without an id,
///   with the same attribute twice, with an unquoted value, or with `<` or a line break inside a quoted value is
///   not a reference.
/// - After `<artifact …>` (not self-closing), text up to a matching `</artifact>` belongs to the reference and is
///   replaced with it, as long as no other `<artifact` or code fence comes first. Otherwise the open tag alone is
///   the reference and the text after it stays.
/// - A tag that is never finished (`<artifact id="x"` and the text ends) is not a reference.
/// - Lines inside a fenced code block (``` or ~~~, CommonMark rules) are skipped.
template <typename OnReference>
void scan_references(std::string_view text, OnReference&& on_reference);

/// Every reference in `text` (see scan_references).
std::vector<ArtifactReference> find_references(std::string_view text);

namespace detail::handoff {

/// Reads the numeric character reference `&#…;` / `&#x…;` at `entity` (which includes `&` and `;`).
inline std::optional<std::uint32_t> numeric_reference(std::string_view entity) noexcept {
  if (entity.size() < 4 || entity[1] != '#') return std::nullopt;
  std::string_view digits = entity.substr(2, entity.size() - 3);
  unsigned base = 10;
  if (!digits.empty() && (digits[0] == 'x' || digits[0] == 'X')) {
    base = 16;
    digits.remove_prefix(1);
  }
  if (digits.empty() || digits.size() > 8) return std::nullopt;
  std::uint32_t cp = 0;
  for (char c : digits) {
    unsigned d;
    if (c >= '0' && c <= '9') d = static_cast<unsigned>(c - '0');
    else if (base == 16 && c >= 'a' && c <= 'f') d = static_cast<unsigned>(c - 'a' + 10);
    else if (base == 16 && c >= 'A' && c <= 'F') d = static_cast<unsigned>(c - 'A' + 10);
    else return std::nullopt;
    cp = cp * base + d;
  }
  // XML allows no NUL, no surrogates and nothing past U+10FFFF.
  if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return std::nullopt;
  return cp;
}

inline bool is_xml_space(char c) noexcept { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

inline bool is_attribute_name_start(char c) noexcept { return is_ascii_alpha(c) || c == '_' || c == ':'; }

inline bool is_attribute_name_char(char c) noexcept {
  return is_attribute_name_start(c) || is_ascii_digit(c) || c == '-' || c == '.';
}

/// True when `text` at `pos` starts with `word` in any ASCII letter case.
inline bool at_word_nocase(std::string_view text, std::size_t pos, std::string_view word) noexcept {
  return pos <= text.size() && starts_with_nocase(text.substr(pos), word);
}

/// True when `<artifact` at `pos` is the tag name itself, not the start of `<artifacts` or `<artifact-list`.
inline bool at_artifact_open(std::string_view text, std::size_t pos) noexcept {
  if (!at_word_nocase(text, pos, "<artifact")) return false;
  const std::size_t next = pos + 9;
  return next == text.size() || is_xml_space(text[next]) || text[next] == '/' || text[next] == '>';
}

/// Parses the open tag at `pos` (which holds `<artifact`). On success fills `ref` (id, summary, self_closing) and
/// returns the offset just past the tag. Every exit happens at or before the first `<` after `pos`, which is what
/// keeps the whole scan linear.
inline std::optional<std::size_t> parse_open_tag(std::string_view text, std::size_t pos, ArtifactReference& ref) {
  std::size_t i = pos + 9;
  bool have_id = false;
  bool have_summary = false;
  while (true) {
    const std::size_t before_space = i;
    while (i < text.size() && is_xml_space(text[i])) ++i;
    if (i >= text.size()) return std::nullopt;
    if (text[i] == '/') {
      if (i + 1 < text.size() && text[i + 1] == '>' && have_id) {
        ref.self_closing = true;
        return i + 2;
      }
      return std::nullopt;
    }
    if (text[i] == '>') {
      if (!have_id) return std::nullopt;
      ref.self_closing = false;
      return i + 1;
    }
    // An attribute: name, '=', quoted value. The first one needs the whitespace after the tag name.
    if (i == pos + 9 && i == before_space) return std::nullopt;
    if (!is_attribute_name_start(text[i])) return std::nullopt;
    const std::size_t name_start = i;
    while (i < text.size() && is_attribute_name_char(text[i])) ++i;
    const std::string_view name = text.substr(name_start, i - name_start);
    while (i < text.size() && is_xml_space(text[i])) ++i;
    if (i >= text.size() || text[i] != '=') return std::nullopt;
    ++i;
    while (i < text.size() && is_xml_space(text[i])) ++i;
    if (i >= text.size() || (text[i] != '"' && text[i] != '\'')) return std::nullopt;
    const char quote = text[i++];
    const std::size_t value_start = i;
    while (i < text.size() && text[i] != quote && text[i] != '<' && text[i] != '\n') ++i;
    if (i >= text.size() || text[i] != quote) return std::nullopt;
    const std::string_view value = text.substr(value_start, i - value_start);
    ++i;
    if (name.size() == 2 && starts_with_nocase(name, "id")) {
      if (have_id) return std::nullopt;
      have_id = true;
      ref.id = xml_unescape(value);
    } else if (name.size() == 7 && starts_with_nocase(name, "summary")) {
      if (have_summary) return std::nullopt;
      have_summary = true;
      ref.summary = xml_unescape(value);
    }
  }
}

/// After `<artifact …>` ending at `pos`: the offset just past a matching `</artifact>`, if one comes before the
/// next `<artifact`, the next fence line, or the end of the text.
inline std::optional<std::size_t> find_close_tag(std::string_view text, std::size_t pos) {
  std::size_t i = pos;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '\n') {
      const std::size_t line_start = i + 1;
      const std::size_t nl = text.find('\n', line_start);
      // Only the first few bytes can make a fence line; look no further than that.
      const std::size_t probe_end = nl == std::string_view::npos ? text.size() : nl;
      std::string_view line = text.substr(line_start, probe_end - line_start);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (fence_line(line)) return std::nullopt;
      i = line_start;
      continue;
    }
    if (c == '<') {
      if (at_artifact_open(text, i)) return std::nullopt;
      if (at_word_nocase(text, i, "</artifact")) {
        std::size_t j = i + 10;
        while (j < text.size() && is_xml_space(text[j])) ++j;
        if (j < text.size() && text[j] == '>') return j + 1;
      }
    }
    ++i;
  }
  return std::nullopt;
}

}  // namespace detail::handoff

inline std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      case '\t': out += "&#9;"; break;
      case '\n': out += "&#10;"; break;
      case '\r': out += "&#13;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

inline std::string xml_unescape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t amp = text.find('&', i);
    if (amp == std::string_view::npos) {
      out.append(text.data() + i, text.size() - i);
      break;
    }
    out.append(text.data() + i, amp - i);
    // Entities are short: looking 12 bytes ahead for ';' keeps this linear on text full of '&'.
    const std::size_t semi = text.substr(amp, 12).find(';');
    if (semi == std::string_view::npos) {
      out.push_back('&');
      i = amp + 1;
      continue;
    }
    const std::string_view entity = text.substr(amp, semi + 1);
    if (entity == "&amp;") out.push_back('&');
    else if (entity == "&lt;") out.push_back('<');
    else if (entity == "&gt;") out.push_back('>');
    else if (entity == "&quot;") out.push_back('"');
    else if (entity == "&apos;") out.push_back('\'');
    else if (const auto cp = detail::handoff::numeric_reference(entity)) detail::append_utf8(out, *cp);
    else {
      out.push_back('&');
      i = amp + 1;
      continue;
    }
    i = amp + entity.size();
  }
  return out;
}

inline std::string render_reference(std::string_view id, std::string_view summary) {
  std::string out = "<artifact id=\"";
  out += xml_escape(id);
  out += '"';
  if (!summary.empty()) {
    out += " summary=\"";
    out += xml_escape(summary);
    out += '"';
  }
  out += " />";
  return out;
}

template <typename OnReference>
void scan_references(std::string_view text, OnReference&& on_reference) {
  std::optional<detail::handoff::Fence> open_fence;
  std::size_t line_start = 0;
  while (line_start < text.size()) {
    std::size_t nl = text.find('\n', line_start);
    std::size_t line_end = nl == std::string_view::npos ? text.size() : nl;
    std::string_view line = text.substr(line_start, line_end - line_start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (open_fence) {
      if (detail::handoff::closes_fence(line, *open_fence)) open_fence.reset();
      line_start = line_end + 1;
      continue;
    }
    if (const auto fence = detail::handoff::fence_line(line)) {
      open_fence = fence;
      line_start = line_end + 1;
      continue;
    }
    std::size_t i = line_start;
    while (i < line_end) {
      const void* hit = std::memchr(text.data() + i, '<', line_end - i);
      if (!hit) break;
      const std::size_t lt = static_cast<std::size_t>(static_cast<const char*>(hit) - text.data());
      if (!detail::handoff::at_artifact_open(text, lt)) {
        i = lt + 1;
        continue;
      }
      ArtifactReference ref;
      const auto tag_end = detail::handoff::parse_open_tag(text, lt, ref);
      if (!tag_end) {
        i = lt + 1;
        continue;
      }
      ref.begin = lt;
      ref.end = *tag_end;
      if (!ref.self_closing) {
        if (const auto close_end = detail::handoff::find_close_tag(text, *tag_end)) ref.end = *close_end;
      }
      i = ref.end;
      on_reference(static_cast<const ArtifactReference&>(ref));
      // A reference can span lines; the rest of the line it ends on is scanned as text, never as a fence.
      if (i > line_end) {
        nl = text.find('\n', i);
        line_end = nl == std::string_view::npos ? text.size() : nl;
      }
    }
    line_start = line_end + 1;
  }
}

inline std::vector<ArtifactReference> find_references(std::string_view text) {
  std::vector<ArtifactReference> out;
  scan_references(text, [&out](const ArtifactReference& r) { out.push_back(r); });
  return out;
}

CAIRN_END_NAMESPACE
