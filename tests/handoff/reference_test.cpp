#include "cairn/handoff/reference.hpp"

#include <random>
#include <string>
#include <vector>

#include "catch.hpp"

using namespace cairn;

namespace {
// The one reference in `text`; fails the test when there is not exactly one.
ArtifactReference only_reference(const std::string& text) {
  const auto refs = find_references(text);
  REQUIRE(refs.size() == 1);
  return refs[0];
}

std::vector<std::string> ids_in(const std::string& text) {
  std::vector<std::string> ids;
  for (const auto& r : find_references(text)) ids.push_back(r.id);
  return ids;
}
}  // namespace

TEST_CASE("xml_escape escapes the five XML characters and line breaks, xml_unescape undoes it") {
  CHECK(xml_escape("a&b<c>d\"e'f") == "a&amp;b&lt;c&gt;d&quot;e&apos;f");
  CHECK(xml_escape("tab\tlf\ncr\r") == "tab&#9;lf&#10;cr&#13;");
  CHECK(xml_escape("plain \xC3\xA9t\xC3\xA9") == "plain \xC3\xA9t\xC3\xA9");
  for (const std::string s :
       {"", "a&b<c>d\"e'f", "&amp; already escaped", "tab\tlf\ncr\r", "\xF0\x9F\x99\x82 &&;;", "&#10; literal"}) {
    CHECK(xml_unescape(xml_escape(s)) == s);
  }
}

TEST_CASE("xml_unescape reads numeric references and leaves unknown or malformed entities as written") {
  CHECK(xml_unescape("&#233;&#xE9;&#XE9;&#x1F642;") == "\xC3\xA9\xC3\xA9\xC3\xA9\xF0\x9F\x99\x82");
  CHECK(xml_unescape("&nbsp; &copy;") == "&nbsp; &copy;");
  CHECK(xml_unescape("&#xZZ; &#0; &#xD800; &#x110000; &#; &#x;") == "&#xZZ; &#0; &#xD800; &#x110000; &#; &#x;");
  CHECK(xml_unescape("& &amp &lt") == "& &amp &lt");
  CHECK(xml_unescape("&&amp;&") == "&&&");
}

TEST_CASE("render_reference writes the seed's form with escaped attributes") {
  CHECK(render_reference("draft_k3x9", "Add dark mode theme") ==
        "<artifact id=\"draft_k3x9\" summary=\"Add dark mode theme\" />");
  CHECK(render_reference("draft_k3x9") == "<artifact id=\"draft_k3x9\" />");
  CHECK(render_reference("a\"b", "Say \"hi\" & <bye>") ==
        "<artifact id=\"a&quot;b\" summary=\"Say &quot;hi&quot; &amp; &lt;bye&gt;\" />");
}

TEST_CASE("a rendered reference is found again with the same id and summary") {
  const std::string text = "Draft ready: " + render_reference("draft_k3x9", "Add \"dark\" mode") + " thanks";
  const auto r = only_reference(text);
  CHECK(r.id == "draft_k3x9");
  CHECK(r.summary == std::optional<std::string>("Add \"dark\" mode"));
  CHECK(r.self_closing);
  CHECK(r.begin == 13);
  CHECK(text.substr(r.begin, r.end - r.begin) == render_reference("draft_k3x9", "Add \"dark\" mode"));
}

TEST_CASE("the scanner accepts the forms models write") {
  SECTION("single quotes") {
    const auto r = only_reference("<artifact id='x1' summary='it&apos;s \"fine\"'/>");
    CHECK(r.id == "x1");
    CHECK(r.summary == std::optional<std::string>("it's \"fine\""));
  }
  SECTION("any attribute order, mixed quotes") {
    const auto r = only_reference("<artifact summary=\"S\" id='x2' />");
    CHECK(r.id == "x2");
    CHECK(r.summary == std::optional<std::string>("S"));
  }
  SECTION("extra whitespace, tabs and line breaks between attributes") {
    const std::string text = "see <artifact\n   id = \"x3\"\t\r\n   summary=\"S\"\n/> now";
    const auto r = only_reference(text);
    CHECK(r.id == "x3");
    CHECK(text.substr(r.end) == " now");
  }
  SECTION("no space before />, no space between attributes") {
    CHECK(ids_in("<artifact id=\"a\"/><artifact id=\"b\"summary=\"s\"/>") == std::vector<std::string>{"a", "b"});
  }
  SECTION("any letter case of the tag and attribute names") {
    CHECK(ids_in("<ARTIFACT ID=\"up\" SUMMARY=\"s\" />") == std::vector<std::string>{"up"});
  }
  SECTION("other attributes are ignored") {
    const auto r = only_reference("<artifact title=\"T\" id=\"x4\" data-x='1' />");
    CHECK(r.id == "x4");
    CHECK_FALSE(r.summary);
  }
  SECTION("not self-closing, with no close tag: the open tag alone is the reference") {
    const std::string text = "<artifact id=\"x5\"> and more";
    const auto r = only_reference(text);
    CHECK_FALSE(r.self_closing);
    CHECK(text.substr(r.end) == " and more");
  }
  SECTION("with a close tag: the element and its body are the reference") {
    const std::string text = "a <artifact id=\"x6\">the draft</artifact > b";
    const auto r = only_reference(text);
    CHECK_FALSE(r.self_closing);
    CHECK(text.substr(0, r.begin) == "a ");
    CHECK(text.substr(r.end) == " b");
  }
  SECTION("a close tag after another <artifact belongs to that one") {
    const std::string text = "<artifact id=\"p\"> text <artifact id=\"q\">body</artifact> tail";
    const auto refs = find_references(text);
    REQUIRE(refs.size() == 2);
    CHECK(text.substr(refs[0].end, refs[1].begin - refs[0].end) == " text ");
    CHECK(text.substr(refs[1].end) == " tail");
  }
  SECTION("a close tag does not reach across a code fence") {
    const std::string text = "<artifact id=\"p\">\n```\n</artifact>\n```\nafter";
    const auto r = only_reference(text);
    CHECK(r.end == text.find('>') + 1);
  }
}

TEST_CASE("things that look like references but are not stay text") {
  CHECK(find_references("<artifacts id=\"x\"/>").empty());
  CHECK(find_references("<artifact-list id=\"x\"/>").empty());
  CHECK(find_references("<artifact/>").empty());
  CHECK(find_references("<artifact>body</artifact>").empty());
  CHECK(find_references("<artifact summary=\"no id\" />").empty());
  CHECK(find_references("<artifact id=\"a\" id=\"b\" />").empty());  // duplicate attribute
  CHECK(find_references("<artifact id=\"a\" summary=\"1\" summary=\"2\" />").empty());
  CHECK(find_references("<artifact id=x />").empty());  // unquoted value
  CHECK(find_references("<artifact id=\"x\" / >").empty());
  CHECK(find_references("<artifact id=\"x\" = />").empty());
  CHECK(find_references("<artifactid=\"x\"/>").empty());
  CHECK(find_references("a < b and <artifact").empty());
}

TEST_CASE("unterminated tags are left alone and do not swallow later references") {
  CHECK(find_references("<artifact id=\"x\"").empty());
  CHECK(find_references("<artifact id=\"x\" summary=\"never closed").empty());
  CHECK(ids_in("<artifact id=\"broken <artifact id=\"ok\" />") == std::vector<std::string>{"ok"});
  CHECK(ids_in("<artifact id=\"line\nbreak\" /> <artifact id=\"ok\" />") == std::vector<std::string>{"ok"});
  CHECK(ids_in("<artifact id='x' summary=\"a > b\" /> tail") == std::vector<std::string>{"x"});
}

TEST_CASE("references inside fenced code blocks are left alone") {
  const std::string text =
      "before <artifact id=\"a\" />\n"
      "```xml\n<artifact id=\"in-backticks\" />\n```\n"
      "middle <artifact id=\"b\" />\n"
      "~~~\n<artifact id=\"in-tildes\" />\n```\n<artifact id=\"still-in-tildes\" />\n~~~\n"
      "   ```\n<artifact id=\"indented-fence\" />\n   ```\n"
      "after <artifact id=\"c\" />";
  CHECK(ids_in(text) == std::vector<std::string>{"a", "b", "c"});
}

TEST_CASE("an unclosed fence hides the rest of the text, inline code and 4-space indents do not") {
  CHECK(ids_in("<artifact id=\"a\" />\n```\n<artifact id=\"b\" />") == std::vector<std::string>{"a"});
  // Only fenced blocks count: inline code and indented code are scanned (documented in docs/handoff.md).
  CHECK(ids_in("use `<artifact id=\"inline\" />` like this") == std::vector<std::string>{"inline"});
  CHECK(ids_in("    ```\n<artifact id=\"not-fenced\" />") == std::vector<std::string>{"not-fenced"});
}

TEST_CASE("CRLF text: fences and references work the same") {
  CHECK(ids_in("<artifact id=\"a\" />\r\n```\r\n<artifact id=\"b\" />\r\n```\r\n<artifact id=\"c\" />\r\n") ==
        std::vector<std::string>{"a", "c"});
}

TEST_CASE("ids with odd characters survive rendering and scanning") {
  for (const std::string id : {"a\"b", "it's", "x&y<z>", "with space", "\xC3\xBCn\xC3\xAF/\xF0\x9F\x99\x82",
                               "tab\there", "line\nbreak", "&amp;", "-._:/?#[]@!$()*+,;="}) {
    INFO(id);
    const auto r = only_reference("x " + render_reference(id, id) + " y");
    CHECK(r.id == id);
    CHECK(r.summary == std::optional<std::string>(id));
  }
  CHECK(only_reference("<artifact id=\"\" />").id.empty());  // an empty id is a reference, to nothing
}

TEST_CASE("many references and hostile input are handled in one pass") {
  std::string text;
  for (int i = 0; i < 10000; ++i) text += "word " + render_reference("id" + std::to_string(i), "s") + "\n";
  const auto refs = find_references(text);
  REQUIRE(refs.size() == 10000);
  CHECK(refs[9999].id == "id9999");

  std::string hostile;
  for (int i = 0; i < 100000; ++i) hostile += "<artifact id=\"";  // every tag unterminated
  CHECK(find_references(hostile).empty());
  std::string open_tags;
  for (int i = 0; i < 100000; ++i) open_tags += "<artifact id=\"o\">";  // never closed
  CHECK(find_references(open_tags).size() == 100000);
}

TEST_CASE("fuzz: random tag-like text never crashes and references are well-formed spans") {
  // A fixed seed keeps failures reproducible; the pieces are what the scanner branches on.
  std::mt19937 rng(20261121);
  const std::vector<std::string> pieces = {
      "<artifact",   "<ARTIFACT",  " id=", " summary=", "id=",        "\"",   "'",        "/>", ">",
      "</artifact>", "</artifact", "```",  "~~~",       "\n",         "\r\n", " ",        "\t", "&amp;",
      "&#x41;",      "&",          "<",    "x",         "draft_k3x9", "=",    "\xC3\xA9", "`"};
  std::uniform_int_distribution<std::size_t> pick(0, pieces.size() - 1);
  std::uniform_int_distribution<int> length(0, 60);
  for (int round = 0; round < 20000; ++round) {
    std::string text;
    for (int n = length(rng); n > 0; --n) text += pieces[pick(rng)];
    INFO(text);
    std::size_t previous_end = 0;
    for (const auto& r : find_references(text)) {
      REQUIRE(r.begin >= previous_end);
      REQUIRE(r.end > r.begin);
      REQUIRE(r.end <= text.size());
      REQUIRE(detail::handoff::starts_with_nocase(text.substr(r.begin), "<artifact"));
      REQUIRE(text[r.end - 1] == '>');
      previous_end = r.end;
    }
  }
}
