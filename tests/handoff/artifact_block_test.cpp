#include "cairn/handoff/artifact_block.hpp"

#include <random>
#include <string>
#include <vector>

#include "catch.hpp"

using namespace cairn;

namespace {
ArtifactBlock artifact_of(const std::string& reply) {
  ParsedReply r = parse_reply(reply);
  REQUIRE(r.is_artifact());
  CHECK(r.text.empty());
  return *r.artifact;
}

void check_plain(const std::string& reply) {
  ParsedReply r = parse_reply(reply);
  CHECK_FALSE(r.is_artifact());
  CHECK(r.text == reply);
}
}  // namespace

TEST_CASE("the seed's form: ARTIFACT, SUMMARY, a ~~~markdown fence") {
  const auto b = artifact_of(
      "ARTIFACT\nSUMMARY: Add dark mode theme\n\n~~~markdown\n[Feature]: Dark mode\n\n"
      "Users want a dark theme.\n~~~\n");
  CHECK(b.summary == "Add dark mode theme");
  CHECK(b.content == "[Feature]: Dark mode\n\nUsers want a dark theme.");
  CHECK(b.fence_info == "markdown");
}

TEST_CASE("ARTIFACT_SUMMARY and any letter case of the key are accepted, the marker itself is exact") {
  CHECK(artifact_of("ARTIFACT\nARTIFACT_SUMMARY: one\nbody").summary == "one");
  CHECK(artifact_of("ARTIFACT\nsummary:two\nbody").summary == "two");
  CHECK(artifact_of("ARTIFACT\nArtifact_Summary:   three  \nbody").summary == "three");
  check_plain("artifact\nSUMMARY: lower-case marker\nbody");
  check_plain("Artifact\nSUMMARY: x\nbody");
}

TEST_CASE("CRLF line breaks are accepted and the content comes back with LF") {
  const auto b = artifact_of("ARTIFACT\r\nSUMMARY: Q3 numbers\r\n\r\n```csv\r\nq,revenue\r\n3,12\r\n```\r\n");
  CHECK(b.summary == "Q3 numbers");
  CHECK(b.content == "q,revenue\n3,12");
  CHECK(b.fence_info == "csv");
}

TEST_CASE("leading blank lines, blank-looking lines and a byte order mark before the marker are skipped") {
  CHECK(artifact_of("\n\n   \n\tARTIFACT  \nSUMMARY: s\nbody").content == "body");
  CHECK(artifact_of("\xEF\xBB\xBF"
                    "ARTIFACT\nSUMMARY: s\nbody")
            .content == "body");
  CHECK(artifact_of("\r\n\r\nARTIFACT\r\n\r\nSUMMARY: s\r\n\r\n\r\nbody\r\n\r\n").content == "body");
}

TEST_CASE("content without a fence is kept as written, blank lines around it dropped") {
  const auto b = artifact_of("ARTIFACT\nSUMMARY: s\n\n\n# Title\n\n  indented line  \nlast\n\n\n");
  CHECK(b.content == "# Title\n\n  indented line  \nlast");
  CHECK(b.fence_info.empty());
}

TEST_CASE("a fence around the whole content is unwrapped, inner fences stay") {
  SECTION("backtick fence with an info string of several words") {
    const auto b = artifact_of("ARTIFACT\nSUMMARY: s\n```python title=x.py\ndef f():\n    return 1\n```");
    CHECK(b.content == "def f():\n    return 1");
    CHECK(b.fence_info == "python");
  }
  SECTION("a longer outer fence around a document with its own code blocks") {
    const auto b = artifact_of("ARTIFACT\nSUMMARY: s\n````markdown\n# Doc\n```sh\nls\n```\nend\n````\n");
    CHECK(b.content == "# Doc\n```sh\nls\n```\nend");
  }
  SECTION("a ~~~ fence with backtick blocks inside") {
    const auto b = artifact_of("ARTIFACT\nSUMMARY: s\n~~~\n```js\nx()\n```\n~~~");
    CHECK(b.content == "```js\nx()\n```");
    CHECK(b.fence_info.empty());
  }
  SECTION("the same fence inside: the last line closes the wrapper (models nest fences like this)") {
    const auto b = artifact_of("ARTIFACT\nSUMMARY: s\n```markdown\nintro\n```python\ncode\n```\noutro\n```");
    CHECK(b.content == "intro\n```python\ncode\n```\noutro");
  }
  SECTION("blank lines just inside the fence are dropped") {
    CHECK(artifact_of("ARTIFACT\nSUMMARY: s\n~~~\n\n\nbody\n\n~~~").content == "body");
  }
}

TEST_CASE("a fence closed before the end is part of the content") {
  const auto b = artifact_of("ARTIFACT\nSUMMARY: s\n```\ncode\n```\nSome explanation after the code.");
  CHECK(b.content == "```\ncode\n```\nSome explanation after the code.");
  CHECK(b.fence_info.empty());
}

TEST_CASE("a fence that is never closed runs to the end of the reply") {
  const auto b = artifact_of("ARTIFACT\nSUMMARY: s\n~~~markdown\n# Truncated\nthe model stopped here\n");
  CHECK(b.content == "# Truncated\nthe model stopped here");
  CHECK(b.fence_info == "markdown");
}

TEST_CASE("a closing fence must match the opening one") {
  // ~~~ cannot close ```, and a shorter run cannot close a longer one: the fence is unclosed, so it runs to the end.
  CHECK(artifact_of("ARTIFACT\nSUMMARY: s\n```\nbody\n~~~").content == "body\n~~~");
  CHECK(artifact_of("ARTIFACT\nSUMMARY: s\n````\nbody\n```").content == "body\n```");
}

TEST_CASE("the SUMMARY line is optional, then the content starts at the first non-blank line") {
  const auto b = artifact_of("ARTIFACT\n\n# Report\nbody");
  CHECK(b.summary.empty());
  CHECK(b.content == "# Report\nbody");
}

TEST_CASE("quotes, angle brackets and later SUMMARY lines are kept as written") {
  const auto b = artifact_of("ARTIFACT\nSUMMARY: The \"best\" <option> & 'more'\nline\nSUMMARY: not a key here");
  CHECK(b.summary == "The \"best\" <option> & 'more'");
  CHECK(b.content == "line\nSUMMARY: not a key here");
}

TEST_CASE("replies that are not artifacts come back as plain text, unchanged") {
  check_plain("");
  check_plain("Here is the draft you asked for.\r\nARTIFACT\nSUMMARY: s\nbody");
  check_plain("ARTIFACTS\nSUMMARY: s\nbody");
  check_plain("ARTIFACT: inline\nbody");
  check_plain("ARTIFACT SUMMARY: s\nbody");
  check_plain("   \n\n");
}

TEST_CASE("an empty body is not an artifact") {
  check_plain("ARTIFACT");
  check_plain("ARTIFACT\n");
  check_plain("ARTIFACT\nSUMMARY: nothing follows");
  check_plain("ARTIFACT\nSUMMARY: blank lines follow\n\n  \t\n\r\n");
  check_plain("ARTIFACT\nSUMMARY: an empty fence\n~~~markdown\n~~~\n");
  check_plain("ARTIFACT\nSUMMARY: a fence of blank lines\n```\n\n   \n```");
  check_plain("ARTIFACT\nSUMMARY: an unclosed empty fence\n```json\n");
}

TEST_CASE("a reply over the size limit is rejected with the sizes named") {
  ReplyLimits limits;
  limits.max_bytes = 64;
  const std::string ok = "ARTIFACT\nSUMMARY: s\n" + std::string(64 - 20, 'x');
  REQUIRE(ok.size() == 64);
  CHECK(parse_reply(ok, limits).artifact->content == std::string(44, 'x'));
  const std::string big = ok + "y";
  CHECK_THROWS_AS(parse_reply(big, limits), limit_exceeded);
  CHECK_THROWS_WITH(parse_reply(big, limits),
                    "agent reply: 65 bytes, more than the limit of 64 bytes (ReplyLimits::max_bytes)");
  CHECK_THROWS_AS(parse_reply(std::string(65, 'p'), limits), limit_exceeded);  // plain text is bounded too
}

TEST_CASE("a summary over its limit is rejected naming the line") {
  ReplyLimits limits;
  limits.max_summary_chars = 10;
  CHECK(parse_reply(
            "ARTIFACT\nSUMMARY: \xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\nb",
            limits)
            .artifact->summary.size() == 20);  // 10 two-byte characters fit: the limit counts characters
  CHECK_THROWS_AS(parse_reply("\nARTIFACT\n\nSUMMARY: eleven chars\nbody", limits), limit_exceeded);
  CHECK_THROWS_WITH(parse_reply("\nARTIFACT\n\nSUMMARY: eleven chars\nbody", limits),
                    cairn_test::ContainsSubstring("line 4: the summary is 12 characters"));
}

TEST_CASE("a 10 MB reply parses within the default limits") {
  std::string content;
  content.reserve(10u * 1024u * 1024u + 64);
  const std::string line = "| row | some table data for a large artifact, 64 bytes a line |\n";
  while (content.size() < 10u * 1024u * 1024u) content += line;
  content.pop_back();  // no trailing line break
  const std::string reply = "ARTIFACT\r\nSUMMARY: ten megabytes\r\n~~~markdown\n" + content + "\n~~~\n";
  const auto b = artifact_of(reply);
  CHECK(b.summary == "ten megabytes");
  CHECK(b.content.size() == content.size());
  CHECK(b.content == content);
}

TEST_CASE("fuzz: random replies never crash, and what parses as an artifact is well-formed") {
  std::mt19937 rng(4242);
  const std::vector<std::string> pieces = {"ARTIFACT",     "SUMMARY:", "ARTIFACT_SUMMARY:",
                                           "summary:",     "```",      "~~~",
                                           "````",         "markdown", "\n",
                                           "\r\n",         "\r",       " ",
                                           "\t",           "x",        "body",
                                           "\xEF\xBB\xBF", "\xC3\xA9", "<artifact id=\"a\" />"};
  std::uniform_int_distribution<std::size_t> pick(0, pieces.size() - 1);
  std::uniform_int_distribution<int> length(0, 40);
  for (int round = 0; round < 20000; ++round) {
    std::string reply = round % 2 ? "ARTIFACT\n" : "";
    for (int n = length(rng); n > 0; --n) reply += pieces[pick(rng)];
    INFO(reply);
    const ParsedReply r = parse_reply(reply);
    if (!r.is_artifact()) {
      REQUIRE(r.text == reply);
      continue;
    }
    REQUIRE(r.artifact->content.find_first_not_of(" \t\r\n") != std::string::npos);
    REQUIRE(r.artifact->summary.find('\n') == std::string::npos);
    REQUIRE(r.artifact->content.size() <= reply.size());
  }
}
