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
std::optional<std::uint32_t> numeric_reference(std::string_view entity) noexcept;

inline bool is_xml_space(char c) noexcept { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

inline bool is_attribute_name_start(char c) noexcept { return is_ascii_alpha(c) || c == '_' || c == ':'; }

bool is_attribute_name_char(char c) noexcept;

/// True when `text` at `pos` starts with `word` in any ASCII letter case.
bool at_word_nocase(std::string_view text, std::size_t pos, std::string_view word) noexcept;

/// True when `<artifact` at `pos` is the tag name itself, not the start of `<artifacts` or `<artifact-list`.
bool at_artifact_open(std::string_view text, std::size_t pos) noexcept;

/// Parses the open tag at `pos` (which holds `<artifact`). On success fills `ref` (id, summary, self_closing) and
/// returns the offset just past the tag. Every exit happens at or before the first `<` after `pos`, which is what
/// keeps the whole scan linear.
std::optional<std::size_t> parse_open_tag(std::string_view text, std::size_t pos, ArtifactReference& ref);

/// After `<artifact …>` ending at `pos`: the offset just past a matching `</artifact>`, if one comes before the
/// next `<artifact`, the next fence line, or the end of the text.
std::optional<std::size_t> find_close_tag(std::string_view text, std::size_t pos);

}  // namespace detail::handoff

std::string xml_escape(std::string_view text);

std::string xml_unescape(std::string_view text);

std::string render_reference(std::string_view id, std::string_view summary);

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

std::vector<ArtifactReference> find_references(std::string_view text);

CAIRN_END_NAMESPACE

#ifndef CAIRN_COMPILED_LIB
#include "cairn/handoff/reference-inl.hpp"
#endif
