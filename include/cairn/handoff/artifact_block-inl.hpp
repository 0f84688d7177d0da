// cairn — the function bodies of cairn/handoff/artifact_block.hpp (docs/api.md, "Compiled mode"). Header-only, the
// default, that header includes this file and CAIRN_INLINE is `inline`; with CAIRN_COMPILED_LIB they are
// compiled once, into cairn::compiled (src/compiled/), and the header only declares them.
#pragma once

#include "cairn/handoff/artifact_block.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

namespace detail::handoff {
CAIRN_INLINE std::string_view LineCursor::next() noexcept {
  const std::size_t nl = text_.find('\n', pos_);
  const std::size_t end = nl == std::string_view::npos ? text_.size() : nl;
  std::string_view line = text_.substr(pos_, end - pos_);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  pos_ = nl == std::string_view::npos ? text_.size() : nl + 1;
  ++line_;
  return line;
}

CAIRN_INLINE bool is_blank(std::string_view s) noexcept {
  for (char c : s) {
    if (c != ' ' && c != '\t') return false;
  }
  return true;
}

CAIRN_INLINE std::string_view trim_blanks(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

CAIRN_INLINE bool starts_with_nocase(std::string_view s, std::string_view prefix) noexcept {
  if (s.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    char c = s[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    char p = prefix[i];
    if (p >= 'A' && p <= 'Z') p = static_cast<char>(p - 'A' + 'a');
    if (c != p) return false;
  }
  return true;
}

CAIRN_INLINE std::optional<Fence> fence_line(std::string_view line) noexcept {
  std::size_t i = 0;
  while (i < line.size() && i < 3 && line[i] == ' ') ++i;
  if (i >= line.size() || (line[i] != '`' && line[i] != '~')) return std::nullopt;
  const char ch = line[i];
  const std::size_t start = i;
  while (i < line.size() && line[i] == ch) ++i;
  if (i - start < 3) return std::nullopt;
  const std::string_view info = trim_blanks(line.substr(i));
  if (ch == '`' && info.find('`') != std::string_view::npos) return std::nullopt;  // an inline code span, not a fence
  return Fence{ch, i - start, info};
}

CAIRN_INLINE bool closes_fence(std::string_view line, const Fence& open) noexcept {
  const auto f = fence_line(line);
  return f && f->ch == open.ch && f->length >= open.length && f->info.empty();
}

}  // namespace detail::handoff

CAIRN_INLINE ParsedReply parse_reply(std::string_view reply, const ReplyLimits& limits) {
  if (reply.size() > limits.max_bytes) {
    throw limit_exceeded(fmt::format("agent reply: {} bytes, more than the limit of {} bytes (ReplyLimits::max_bytes)",
                                     reply.size(), limits.max_bytes));
  }
  ParsedReply plain;
  auto as_plain = [&]() {
    plain.text.assign(reply.data(), reply.size());
    return std::move(plain);
  };

  std::string_view body = reply;
  if (body.substr(0, 3) == "\xEF\xBB\xBF") body.remove_prefix(3);  // a UTF-8 byte order mark
  detail::handoff::LineCursor cursor(body);
  std::string_view line;
  do {
    if (cursor.done()) return as_plain();
    line = cursor.next();
  } while (detail::handoff::is_blank(line));
  if (detail::handoff::trim_blanks(line) != "ARTIFACT") return as_plain();

  // The summary line is optional: without one, the first non-blank line already belongs to the content.
  ArtifactBlock block;
  std::size_t content_start = cursor.pos();
  while (!cursor.done()) {
    const std::size_t line_start = cursor.pos();
    line = cursor.next();
    if (detail::handoff::is_blank(line)) continue;
    const std::string_view trimmed = detail::handoff::trim_blanks(line);
    std::string_view rest;
    if (detail::handoff::starts_with_nocase(trimmed, "ARTIFACT_SUMMARY:")) {
      rest = trimmed.substr(17);
    } else if (detail::handoff::starts_with_nocase(trimmed, "SUMMARY:")) {
      rest = trimmed.substr(8);
    } else {
      content_start = line_start;
      break;
    }
    block.summary = std::string(detail::handoff::trim_blanks(rest));
    if (const auto n = detail::utf8_length(block.summary); n > limits.max_summary_chars) {
      throw limit_exceeded(
          fmt::format("agent reply, line {}: the summary is {} characters, more than the limit of {} "
                      "(ReplyLimits::max_summary_chars)",
                      cursor.line_number(), n, limits.max_summary_chars));
    }
    content_start = cursor.pos();
    break;
  }

  // The content's lines, without the blank lines around them.
  const std::string_view rest = body.substr(content_start);
  std::size_t first = std::string_view::npos, first_end = 0;  // first non-blank line: [first, first_end)
  std::size_t last = 0, last_end = 0;                         // last non-blank line
  std::size_t last_next = 0;                                  // where the line after the last non-blank one starts
  {
    detail::handoff::LineCursor c(rest);
    while (!c.done()) {
      const std::size_t start = c.pos();
      const std::string_view l = c.next();
      if (detail::handoff::is_blank(l)) continue;
      if (first == std::string_view::npos) {
        first = start;
        first_end = c.pos();
      }
      last = start;
      last_end = start + l.size();
      last_next = c.pos();
    }
  }
  if (first == std::string_view::npos) return as_plain();  // an empty body is not an artifact
  std::size_t from = first;
  std::size_t to = last_end;

  detail::handoff::LineCursor head(rest, first);
  if (const auto open = detail::handoff::fence_line(head.next())) {
    // Unwrap only a fence around the whole content: closed by the last line, or never closed (CommonMark runs an
    // unclosed fence to the end). A fence closed earlier is part of the content (code followed by prose).
    const std::string_view last_line = detail::handoff::LineCursor(rest, last).next();
    if (last != first && detail::handoff::closes_fence(last_line, *open)) {
      from = first_end;
      to = last;
    } else {
      bool closed_early = false;
      detail::handoff::LineCursor c(rest, first_end);
      while (!c.done() && !closed_early) closed_early = detail::handoff::closes_fence(c.next(), *open);
      if (!closed_early) {
        from = first_end;
        to = last_next;
      }
    }
    if (from != first) {
      const std::string_view info = open->info;
      block.fence_info = std::string(info.substr(0, info.find_first_of(" \t")));
    }
  }

  // Copy the content with "\n" line breaks and without the trailing line break.
  std::string content;
  content.reserve(to > from ? to - from : 0);
  detail::handoff::LineCursor c(rest.substr(0, to), from);
  bool first_line = true;
  while (!c.done()) {
    if (!first_line) content.push_back('\n');
    const std::string_view l = c.next();
    content.append(l.data(), l.size());
    first_line = false;
  }
  // Blank lines just inside the fence go too; the content starts and ends with a line that says something.
  const std::size_t first_char = content.find_first_not_of(" \t\r\n");
  if (first_char == std::string::npos) return as_plain();  // an empty body is not an artifact
  const std::size_t tail = content.find('\n', content.find_last_not_of(" \t\r\n"));
  if (tail != std::string::npos) content.resize(tail);
  const std::size_t head_nl = content.rfind('\n', first_char);
  if (head_nl != std::string::npos) content.erase(0, head_nl + 1);
  block.content = std::move(content);
  ParsedReply out;
  out.artifact = std::move(block);
  return out;
}

CAIRN_END_NAMESPACE
