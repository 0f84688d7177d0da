#include "cairn/handoff/handoff.hpp"

#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cairn/artifact/memory_store.hpp"
#include "catch.hpp"

using namespace cairn;

namespace {
using Ids = std::vector<std::string>;

HandoffOptions with_prefix(std::string prefix, std::size_t length = 4, int attempts = 16) {
  HandoffOptions o;
  o.id_prefix = std::move(prefix);
  o.id_length = length;
  o.max_id_attempts = attempts;
  return o;
}

bool is_id_char(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

std::size_t count(const ArtifactStore& store, const std::string& tenant) {
  ListQuery q;
  q.limit = ListQuery::max_limit;
  return store.list(tenant, q).items.size();
}

const std::string draft_reply =
    "ARTIFACT\nSUMMARY: Add \"dark\" mode & <themes>\n\n~~~markdown\n[Feature]: Dark mode\n\nUsers want it.\n~~~\n";
}  // namespace

TEST_CASE("the constructor rejects what can never work") {
  auto store = std::make_shared<InMemoryArtifactStore>();
  CHECK_THROWS_AS(Handoff(nullptr, "t"), invalid_argument);
  CHECK_THROWS_AS(Handoff(store, ""), invalid_argument);
  for (const std::string& prefix :
       std::vector<std::string>{"", "dr aft", "_x", "-x", "x/y", "caf\xC3\xA9", std::string(65, 'p')}) {
    INFO(prefix);
    CHECK_THROWS_AS(Handoff(store, "t", with_prefix(prefix)), invalid_argument);
  }
  CHECK_THROWS_WITH(Handoff(store, "t", with_prefix("dr aft")),
                    "HandoffOptions::id_prefix: 'dr aft' must match [A-Za-z0-9][A-Za-z0-9_-]{0,63}");
  CHECK_THROWS_AS(Handoff(store, "t", with_prefix("d", 0)), invalid_argument);
  CHECK_THROWS_AS(Handoff(store, "t", with_prefix("d", 65)), invalid_argument);
  CHECK_THROWS_WITH(Handoff(store, "t", with_prefix("d", 4, 0)),
                    "HandoffOptions::max_id_attempts: must be at least 1 (got 0)");
  CHECK_NOTHROW(Handoff(store, "t", with_prefix(std::string(64, 'p'), 64)));
  CHECK_NOTHROW(Handoff(store, "t", with_prefix("Draft-2_x")));
}

TEST_CASE("new ids are <prefix>_<4 random [a-z0-9]>") {
  auto store = std::make_shared<InMemoryArtifactStore>();
  Handoff handoff(store, "t", with_prefix("draft"));
  std::set<std::string> seen;
  std::set<char> chars;
  for (int i = 0; i < 1000; ++i) {
    const std::string id = handoff.new_id();
    REQUIRE(id.size() == 10);
    REQUIRE(id.compare(0, 6, "draft_") == 0);
    for (char c : id.substr(6)) {
      REQUIRE(is_id_char(c));
      chars.insert(c);
    }
    seen.insert(id);
  }
  CHECK(seen.size() >= 990);  // 36^4 ids: a handful of repeats at most among 1,000 draws
  CHECK(chars.size() == 36);  // 4,000 draws cover the whole alphabet
  Handoff longer(store, "t", with_prefix("x", 12));
  CHECK(longer.new_id().size() == 14);
}

TEST_CASE("a taken id is retried, when every id is taken the error is clear and nothing is lost") {
  auto store = std::make_shared<InMemoryArtifactStore>();
  const std::string alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  for (char c : alphabet.substr(1)) {  // every one-character id but "a_a"
    (void)store->store(*ArtifactRecord::builder()
                            .tenant_id("t")
                            .id(std::string("a_") + c)
                            .type("document")
                            .title("taken")
                            .value("old")
                            .build());
  }
  // One free id in 36: 5,000 attempts find it except with probability (35/36)^5000, about 1e-61.
  Handoff one_left(store, "t", with_prefix("a", 1, 5000));
  const auto stored = one_left.accept_reply("ARTIFACT\nSUMMARY: s\nnew content", "writer");
  REQUIRE(stored.artifact);
  CHECK(stored.artifact->id() == "a_a");
  CHECK(stored.artifact->version() == 1);

  Handoff full(store, "t", with_prefix("a", 1, 50));
  CHECK_THROWS_AS(full.accept_reply("ARTIFACT\nSUMMARY: s\nmore", "writer"), limit_exceeded);
  CHECK_THROWS_WITH(full.accept_reply("ARTIFACT\nSUMMARY: s\nmore", "writer"),
                    "handoff: no free artifact id 'a_' + 1 random characters after 50 attempts in "
                    "tenant 't'; raise HandoffOptions::id_length");
  CHECK(count(*store, "t") == 36);
  for (char c : alphabet) CHECK(store->versions(std::string("a_") + c, "t") == std::vector<std::uint64_t>{1});
  // Another tenant has all of its ids free.
  CHECK(Handoff(store, "u", with_prefix("a", 1)).accept_reply("ARTIFACT\nx", "w").artifact->version() == 1);
}

TEST_CASE("handoffs racing for the same ids never share one: each id is taken once, at version 1") {
  // 36 possible ids and 8 threads drawing them: collisions happen all the time, and each must be a fresh draw,
  // never a version 2 over another agent's artifact.
  auto store = std::make_shared<InMemoryArtifactStore>();
  Handoff handoff(store, "t", with_prefix("r", 1, 1000));
  constexpr int threads = 8;
  std::vector<std::vector<std::pair<std::string, std::string>>> got(threads);  // id, content
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) {
    pool.emplace_back([&, i] {
      for (int k = 0; k < 10; ++k) {
        const std::string body = "from " + std::to_string(i) + "/" + std::to_string(k);
        try {
          got[i].emplace_back(handoff.accept_reply("ARTIFACT\n" + body, "w").artifact->id(), body);
        } catch (const limit_exceeded&) {
          // every id is taken
        }
      }
    });
  }
  for (auto& t : pool) t.join();
  std::set<std::string> ids;
  std::size_t stored = 0;
  for (const auto& per_thread : got) {
    for (const auto& [id, body] : per_thread) {
      ids.insert(id);
      ++stored;
      CHECK(store->fetch(id, "t")->value() == body);  // what this agent's reference shows is what it handed off
      CHECK(store->versions(id, "t") == std::vector<std::uint64_t>{1});
    }
  }
  CHECK(stored == ids.size());  // no id handed to two agents
  CHECK(stored == 36);          // 80 handoffs for 36 ids: every id was taken in the end
}

TEST_CASE("an ARTIFACT reply is stored as a document and replaced by its reference") {
  auto store = std::make_shared<InMemoryArtifactStore>();
  Handoff handoff(store, "acme", with_prefix("draft"));
  const HandoffResult r = handoff.accept_reply(draft_reply, "writer");
  REQUIRE(r.artifact);
  const ArtifactRecord& a = *r.artifact;
  CHECK(r.text == "<artifact id=\"" + a.id() + "\" summary=\"Add &quot;dark&quot; mode &amp; &lt;themes&gt;\" />");
  CHECK(a.tenant_id() == "acme");
  CHECK(a.type() == ArtifactType::document);
  CHECK(a.description() == "Add \"dark\" mode & <themes>");
  CHECK(a.title() == "Add \"dark\" mode & <themes>");
  CHECK(a.value() == "[Feature]: Dark mode\n\nUsers want it.");
  CHECK(a.created_by() == std::optional<std::string>("writer"));
  CHECK(a.mime_type() == std::optional<std::string>("text/markdown"));
  CHECK(a.size_bytes() == std::optional<std::uint64_t>(36));
  CHECK(a.metadata().at("fence_info") == "markdown");
  CHECK(a.version() == 1);
  CHECK(*store->fetch(a.id(), "acme") == a);
  // The reference reads back to the same id and summary.
  const auto refs = find_references(r.text);
  REQUIRE(refs.size() == 1);
  CHECK(refs[0].id == a.id());
  CHECK(refs[0].summary == std::optional<std::string>(a.description()));
}

TEST_CASE("a plain reply comes back unchanged and stores nothing") {
  auto store = std::make_shared<InMemoryArtifactStore>();
  Handoff handoff(store, "t");
  for (const std::string reply : {"No duplicates found.", "", "ARTIFACT\nSUMMARY: but no body\n"}) {
    const HandoffResult r = handoff.accept_reply(reply, "analyst");
    CHECK(r.text == reply);
    CHECK_FALSE(r.artifact);
  }
  CHECK(count(*store, "t") == 0);
}

TEST_CASE("the title is the summary's first line, cut to 500 characters, or the content's first line") {
  auto store = std::make_shared<InMemoryArtifactStore>();
  Handoff handoff(store, "t");
  std::string long_summary;
  for (int i = 0; i < 600; ++i) long_summary += "\xC3\xA9";  // 600 two-byte characters
  const auto a = handoff.accept_reply("ARTIFACT\nSUMMARY: " + long_summary + "\nbody", "w").artifact;
  CHECK(a->title() == long_summary.substr(0, 1000));
  CHECK(a->description() == long_summary);

  const auto b = handoff.accept_reply("ARTIFACT\n\n```\n\n  # Report title  \nrest\n```", "w").artifact;
  CHECK(b->title() == "# Report title");
  CHECK(b->description().empty());
  CHECK_FALSE(b->mime_type());
  const auto ref = handoff.accept_reply("ARTIFACT\n\n```\n\n  # Report title  \nrest\n```", "w").text;
  CHECK(ref == "<artifact id=\"" + find_references(ref).at(0).id + "\" />");
  // With no summary, the summary policy shows the title.
  CHECK_THAT(handoff.reveal(ref, RevealPolicy::summary).text,
             cairn_test::ContainsSubstring("summary=\"# Report title\""));
}

TEST_CASE("bad replies and bad agent names are rejected and store nothing") {
  auto store = std::make_shared<InMemoryArtifactStore>();
  HandoffOptions options;
  options.reply_limits.max_bytes = 100;
  Handoff handoff(store, "t", options);
  CHECK_THROWS_AS(handoff.accept_reply("ARTIFACT\nSUMMARY: s\n" + std::string(100, 'x'), "w"), limit_exceeded);
  CHECK_THROWS_AS(handoff.accept_reply(draft_reply, "bad\nname"), invalid_artifact);
  CHECK_THROWS_WITH(handoff.accept_reply(draft_reply, ""), "created_by: must not be empty");
  CHECK_THROWS_AS(handoff.store_artifact(ArtifactBlock{"s", " \n\t", ""}, "w"), invalid_argument);
  CHECK(count(*store, "t") == 0);
}

TEST_CASE("transfer shows each target the history under its own policy") {
  auto store = std::make_shared<InMemoryArtifactStore>();
  Handoff handoff(store, "acme", with_prefix("draft"));
  const auto draft = handoff.accept_reply(draft_reply, "writer");
  std::vector<HandoffMessage> history{{"user", "File an issue for dark mode"},
                                      {"writer", draft.text},
                                      {"manager", "Check <artifact id=\"draft_zzzz\" /> too"}};

  std::vector<std::string> seen;
  auto echo = [&seen](const std::string& input) {
    seen.push_back(input);
    return std::string("ok");
  };
  const std::string id = draft.artifact->id();
  const std::string head = "user: File an issue for dark mode\n\nwriter: ";
  const std::string tail = "\n\nmanager: Check <artifact id=\"draft_zzzz\" /> too";

  auto none = handoff.transfer({"a", echo, RevealPolicy::none}, history);
  CHECK(seen.back() == head + "<artifact id=\"" + id + "\" />" + tail);
  CHECK(none.input == seen.back());
  CHECK(none.text == "ok");
  CHECK_FALSE(none.artifact);
  CHECK(none.unresolved == Ids{"draft_zzzz"});

  handoff.transfer({"b", echo, RevealPolicy::summary}, history);
  CHECK(seen.back() == head + draft.text + tail);

  handoff.transfer({"c", echo, RevealPolicy::full}, history);
  CHECK(seen.back() == head + "[Feature]: Dark mode\n\nUsers want it." + tail);

  CHECK(Handoff::format_history({{"", "just content"}, {"r", "x"}}) == "just content\n\nr: x");
  CHECK(Handoff::format_history({}).empty());
}

TEST_CASE("transfer stores what the target hands back, under the target's name") {
  auto store = std::make_shared<InMemoryArtifactStore>();
  Handoff handoff(store, "acme");
  HandoffTarget writer{"writer", [](const std::string&) { return draft_reply; }, RevealPolicy::summary};
  const auto r = handoff.transfer(writer, {{"manager", "Draft it"}});
  REQUIRE(r.artifact);
  CHECK(r.artifact->created_by() == std::optional<std::string>("writer"));
  CHECK(r.input == "manager: Draft it");
  CHECK(r.text == render_reference(r.artifact->id(), r.artifact->description()));
}

TEST_CASE("a target that fails or is missing stores nothing") {
  auto store = std::make_shared<InMemoryArtifactStore>();
  Handoff handoff(store, "t");
  HandoffTarget failing{"flaky", [](const std::string&) -> std::string { throw std::runtime_error("model down"); }};
  CHECK_THROWS_WITH(handoff.transfer(failing, {{"m", "go"}}), "model down");
  CHECK_THROWS_AS(handoff.transfer({"", [](const std::string&) { return std::string(); }}, {}), invalid_argument);
  CHECK_THROWS_WITH(handoff.transfer({"nobody", nullptr}, {}), "handoff: target 'nobody' has no agent function");
  CHECK(count(*store, "t") == 0);
}

TEST_CASE("manager, writer and analyst: the manager holds a reference, the user gets the content") {
  auto store = std::make_shared<InMemoryArtifactStore>();
  Handoff handoff(store, "acme", with_prefix("draft"));
  std::string analyst_saw;
  HandoffTarget writer{"writer", [](const std::string&) { return draft_reply; }, RevealPolicy::summary};
  HandoffTarget analyst{"analyst",
                        [&analyst_saw](const std::string& input) {
                          analyst_saw = input;
                          return std::string("No duplicates.");
                        },
                        RevealPolicy::full};
  std::vector<HandoffMessage> history{{"user", "Please file a dark mode issue"}};
  history.push_back({"writer", handoff.transfer(writer, history).text});
  history.push_back({"analyst", handoff.transfer(analyst, history).text});

  const std::string manager_view = Handoff::format_history(history);
  CHECK(manager_view.find("Users want it.") == std::string::npos);
  CHECK_THAT(analyst_saw, cairn_test::ContainsSubstring("[Feature]: Dark mode\n\nUsers want it."));
  const auto final_answer = handoff.expand_references("Here is your issue:\n" + history[1].content);
  CHECK(final_answer.text == "Here is your issue:\n[Feature]: Dark mode\n\nUsers want it.");
  CHECK(final_answer.unresolved.empty());
  // The same reference means nothing in another tenant.
  Handoff other(store, "globex");
  CHECK(other.expand_references(history[1].content).text == history[1].content);
  CHECK(other.expand_references(history[1].content).unresolved.size() == 1);
}

TEST_CASE("a 10 MB reply is handed off as a small reference and expands back") {
  auto store = std::make_shared<InMemoryArtifactStore>();
  Handoff handoff(store, "t");
  std::string content;
  while (content.size() < 10u * 1024u * 1024u) content += "data line of a large dataset export, 50 bytes ...\n";
  content.pop_back();
  const auto r = handoff.accept_reply("ARTIFACT\nSUMMARY: export\n```csv\n" + content + "\n```", "exporter");
  REQUIRE(r.artifact);
  CHECK(r.text.size() < 100);
  CHECK(r.artifact->mime_type() == std::optional<std::string>("text/csv"));
  CHECK(handoff.expand_references(r.text).text == content);
}

TEST_CASE("one Handoff is shared by many threads") {
  auto store = std::make_shared<InMemoryArtifactStore>();
  Handoff handoff(store, "t", with_prefix("p", 8));
  constexpr int threads = 8;
  constexpr int per_thread = 50;
  std::vector<std::vector<std::string>> refs(threads);
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) {
    pool.emplace_back([&, i] {
      for (int k = 0; k < per_thread; ++k) {
        const std::string body = "from " + std::to_string(i) + "/" + std::to_string(k);
        refs[i].push_back(handoff.accept_reply("ARTIFACT\nSUMMARY: s\n" + body, "agent-" + std::to_string(i)).text);
      }
    });
  }
  for (auto& t : pool) t.join();
  CHECK(count(*store, "t") == threads * per_thread);
  for (int i = 0; i < threads; ++i) {
    for (int k = 0; k < per_thread; ++k) {
      CHECK(handoff.expand_references(refs[i][k]).text == "from " + std::to_string(i) + "/" + std::to_string(k));
    }
  }
}
