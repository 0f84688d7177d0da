// cairn — the function bodies of cairn/handoff/reference.hpp (docs/api.md, "Compiled mode"). Header-only, the
// default, that header includes this file and CAIRN_INLINE is `inline`; with CAIRN_COMPILED_LIB they are
// compiled once, into cairn::compiled (src/compiled/), and the header only declares them.
#pragma once

#include "cairn/handoff/reference.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

namespace detail::handoff {
CAIRN_INLINE std::optional<std::uint32_t> numeric_reference(std::string_view entity) noexcept {
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
    if (c >= '0' && c <= '9')
      d = static_cast<unsigned>(c - '0');
    else if (base == 16 && c >= 'a' && c <= 'f')
      d = static_cast<unsigned>(c - 'a' + 10);
    else if (base == 16 && c >= 'A' && c <= 'F')
      d = static_cast<unsigned>(c - 'A' + 10);
    else
      return std::nullopt;
    cp = cp * base + d;
  }
  // XML allows no NUL, no surrogates and nothing past U+10FFFF.
  if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return std::nullopt;
  return cp;
}

CAIRN_INLINE bool is_attribute_name_char(char c) noexcept {
  return is_attribute_name_start(c) || is_ascii_digit(c) || c == '-' || c == '.';
}

CAIRN_INLINE bool at_word_nocase(std::string_view text, std::size_t pos, std::string_view word) noexcept {
  return pos <= text.size() && starts_with_nocase(text.substr(pos), word);
}

CAIRN_INLINE bool at_artifact_open(std::string_view text, std::size_t pos) noexcept {
  if (!at_word_nocase(text, pos, "<artifact")) return false;
  const std::size_t next = pos + 9;
  return next == text.size() || is_xml_space(text[next]) || text[next] == '/' || text[next] == '>';
}

CAIRN_INLINE std::optional<std::size_t> parse_open_tag(std::string_view text, std::size_t pos, ArtifactReference& ref) {
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

CAIRN_INLINE std::optional<std::size_t> find_close_tag(std::string_view text, std::size_t pos) {
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

CAIRN_INLINE std::string xml_escape(std::string_view text) {
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

CAIRN_INLINE std::string xml_unescape(std::string_view text) {
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
    if (entity == "&amp;")
      out.push_back('&');
    else if (entity == "&lt;")
      out.push_back('<');
    else if (entity == "&gt;")
      out.push_back('>');
    else if (entity == "&quot;")
      out.push_back('"');
    else if (entity == "&apos;")
      out.push_back('\'');
    else if (const auto cp = detail::handoff::numeric_reference(entity))
      detail::append_utf8(out, *cp);
    else {
      out.push_back('&');
      i = amp + 1;
      continue;
    }
    i = amp + entity.size();
  }
  return out;
}

CAIRN_INLINE std::string render_reference(std::string_view id, std::string_view summary) {
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

CAIRN_INLINE std::vector<ArtifactReference> find_references(std::string_view text) {
  std::vector<ArtifactReference> out;
  scan_references(text, [&out](const ArtifactReference& r) { out.push_back(r); });
  return out;
}

CAIRN_END_NAMESPACE
