// cairn — ArtifactBlock: reading an agent's reply that hands over large content as an ARTIFACT block.
//
// An agent that produced something large answers in this form (seed 003):
//
//     ARTIFACT
//     SUMMARY: Add a dark mode theme          <- or ARTIFACT_SUMMARY: ...
//
//     ~~~markdown
//     [Feature]: Dark mode ...
//     ~~~
//
// parse_reply tells such a reply apart from plain text and takes it apart; the Handoff helper then stores the
// content and passes on only a reference to it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "cairn/detail/text.hpp"
#include "cairn/error.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

/// The parts of an ARTIFACT reply.
struct ArtifactBlock {
  std::string summary;     ///< the SUMMARY line, trimmed; empty when the reply had none
  std::string content;     ///< the content, fences stripped, line breaks as "\n"; never blank
  std::string fence_info;  ///< first word of the fence's info string ("markdown"); empty when there was no fence
};

/// Limits applied to a reply before it is parsed.
struct ReplyLimits {
  std::size_t max_bytes = 16u * 1024u * 1024u;  ///< longest accepted reply (16 MiB)
  std::size_t max_summary_chars = 1000;         ///< longest accepted SUMMARY, in Unicode code points
};

/// A parsed reply: an artifact, or plain text.
struct ParsedReply {
  std::optional<ArtifactBlock> artifact;  ///< set when the reply is an ARTIFACT block
  std::string text;                       ///< the reply exactly as given when it is plain text; empty otherwise

  bool is_artifact() const noexcept { return artifact.has_value(); }
};

/// Reads an agent's reply. It is an artifact when its first non-blank line is `ARTIFACT`; the next non-blank line
/// may be `SUMMARY: …` or `ARTIFACT_SUMMARY: …` (key case-insensitive); everything after is the content. CRLF line
/// breaks and leading blank lines are accepted; content wrapped in one ``` or ~~~ fence (with an optional info
/// string) is unwrapped. A reply whose content is blank is plain text, and so is anything without the marker.
///
///     auto r = cairn::parse_reply("ARTIFACT\nSUMMARY: Q3 numbers\n\n```csv\nq,revenue\n3,12\n```\n");
///     // r.artifact->summary == "Q3 numbers", r.artifact->content == "q,revenue\n3,12", fence_info == "csv"
///
/// Throws cairn::limit_exceeded when the reply is longer than `limits.max_bytes` or its summary is longer than
/// `limits.max_summary_chars`.
ParsedReply parse_reply(std::string_view reply, const ReplyLimits& limits = {});

namespace detail::handoff {

/// Walks text line by line; a line excludes its "\n" and a "\r" before it.
class LineCursor {
 public:
  explicit LineCursor(std::string_view text, std::size_t pos = 0) : text_(text), pos_(pos) {}

  bool done() const noexcept { return pos_ >= text_.size(); }
  std::size_t pos() const noexcept { return pos_; }
  std::size_t line_number() const noexcept { return line_; }

  /// The next line; advances past it.
  std::string_view next() noexcept;

 private:
  std::string_view text_;
  std::size_t pos_;
  std::size_t line_ = 0;
};

bool is_blank(std::string_view s) noexcept;

std::string_view trim_blanks(std::string_view s) noexcept;

bool starts_with_nocase(std::string_view s, std::string_view prefix) noexcept;

/// A Markdown code fence line (CommonMark): up to 3 spaces, then 3 or more ` or ~, then an info string.
struct Fence {
  char ch = 0;
  std::size_t length = 0;
  std::string_view info;
};

std::optional<Fence> fence_line(std::string_view line) noexcept;

/// True when `line` closes a fence opened by `open`: same character, at least as long, nothing after it.
bool closes_fence(std::string_view line, const Fence& open) noexcept;

}  // namespace detail::handoff

ParsedReply parse_reply(std::string_view reply, const ReplyLimits& limits);

CAIRN_END_NAMESPACE

#ifndef CAIRN_COMPILED_LIB
#include "cairn/handoff/artifact_block-inl.hpp"
#endif
