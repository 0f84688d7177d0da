// Tool calls in a durable run, as a host relies on them for effects that happen once: the stable key a tool is given,
// automatic ids that survive a resume, the retry claim that lets only one of two resuming workers fire (two
// connections to one SQLite file), output ids that follow from the call, and the host's "it already happened".
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/context/execution_context.hpp"
#include "cairn/context/tool.hpp"
#include "cairn/detail/sha256.hpp"
#include "cairn/run/memory_journal.hpp"
#include "cairn/run/run.hpp"
#include "cairn/store/sqlite_journal.hpp"
#include "cairn/store/sqlite_store.hpp"
#include "cairn/testing/clock.hpp"
#include "catch.hpp"

using namespace cairn;
using nlohmann::json;

namespace {

// The outside world: every time a tool really ran, with the invocation it was given.
struct World {
  std::shared_ptr<testing::ManualClock> clock = std::make_shared<testing::ManualClock>();
  std::shared_ptr<InMemoryArtifactStore> store;
  std::shared_ptr<InMemoryRunJournal> journal = std::make_shared<InMemoryRunJournal>();
  std::shared_ptr<std::vector<ToolInvocation>> sent = std::make_shared<std::vector<ToolInvocation>>();
  std::shared_ptr<std::vector<ToolInvocation>> looked_up = std::make_shared<std::vector<ToolInvocation>>();
  ToolRegistry registry;

  World() {
    InMemoryStoreOptions options;
    options.clock = clock;
    store = std::make_shared<InMemoryArtifactStore>(options);
    auto sent_ = sent;
    registry.add(Tool{"send_email", "sends an email (not idempotent)", json{{"type", "object"}},
                      [sent_](const json& in, const ToolInvocation& call) {
                        sent_->push_back(call);
                        return ToolResult::ok(json{{"receipt", "sent to " + in.value("to", std::string("?"))}});
                      }});
    auto looked_up_ = looked_up;
    Tool lookup{"lookup", "reads a value (idempotent)", json{{"type", "object"}},
                [looked_up_](const json& in, const ToolInvocation& call) {
                  looked_up_->push_back(call);
                  return ToolResult::ok(json{{"answer", in.value("q", 0) * 2}});
                }};
    lookup.idempotent = true;
    registry.add(lookup);
  }

  ExecutionContext context() { return ExecutionContext(store, "acme", clock); }
};

ToolCall email(std::string to, std::string output, std::string id = {}) {
  return ToolCall{"send_email",
                  {{"to", std::move(to)}},
                  {OutputSpec{std::move(output), ArtifactType::data, "the receipt", ""}},
                  std::move(id)};
}

ToolCall lookup(int q, std::string output, std::string id = {}) {
  return ToolCall{
      "lookup", {{"q", q}}, {OutputSpec{std::move(output), ArtifactType::data, "the answer", ""}}, std::move(id)};
}

// Every record in the store, as text: id, version, created_at and value.
std::vector<std::string> store_contents(const ArtifactStore& store) {
  std::vector<std::string> out;
  ListQuery all;
  all.limit = ListQuery::max_limit;
  for (const auto& r : store.list("acme", all).items) {
    for (auto v : store.versions(r->id(), "acme")) {
      auto at = store.fetch(r->id(), "acme", v);
      out.push_back(at->id() + " v" + std::to_string(at->version()) + " " + std::to_string(at->created_at()) + " " +
                    at->value().dump());
    }
  }
  return out;
}

std::vector<std::string> kinds(const RunJournal& journal, const std::string& run) {
  std::vector<std::string> out;
  for (const auto& e : journal.read("acme", run)) out.push_back(e.kind);
  return out;
}

bool is_hex(const std::string& s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

struct TempFile {
  std::string dir;
  TempFile() {
    char name[] = "/tmp/cairn-tool-call-XXXXXX";
    if (!mkdtemp(name)) throw std::runtime_error("mkdtemp failed");
    dir = name;
  }
  ~TempFile() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  std::string file(const std::string& name) const { return dir + "/" + name; }
};

}  // namespace

TEST_CASE("SHA-256 and the documented forms of a call's key and of its output ids") {
  using detail::hex_prefix;
  using detail::sha256;
  CHECK(hex_prefix(sha256(""), 32) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(hex_prefix(sha256("abc"), 32) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(hex_prefix(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"), 32) ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(hex_prefix(sha256(std::string(1000, 'a')), 32) ==
        "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
  const std::string key = detail::call_key("acme", "order-42", "mail-1");
  CHECK(key == hex_prefix(sha256("cairn.tool_call.v14:acme8:order-426:mail-1"), 16));
  CHECK(key.size() == 32);
  CHECK(is_hex(key));
  CHECK(detail::call_output_id("acme", "order-42", "mail-1", "receipt") ==
        "tool-" + hex_prefix(sha256("cairn.tool_output.v14:acme8:order-426:mail-17:receipt"), 16));
  // Lengths in front: moving a byte from one part to the next is another key.
  CHECK(detail::call_key("acme", "order-4", "2mail-1") != key);
  CHECK(detail::call_key("acmf", "order-42", "mail-1") != key);
}

TEST_CASE("a tool gets its call id, a key that survives crashes, retries and workers, and its attempt") {
  World w;
  std::string key_1, key_2;
  {
    Run run(w.journal, "acme", "order-42");
    auto ctx = w.context();
    ctx.attach(run);
    auto r = execute(email("ada@example.com", "receipt", "mail-1"), ctx, w.registry);
    REQUIRE(w.sent->size() == 1);
    key_1 = ctx.call_key("mail-1");
    CHECK(w.sent->at(0).call_id == "mail-1");
    CHECK(w.sent->at(0).idempotency_key == key_1);
    CHECK(w.sent->at(0).attempt == 1);
    CHECK(key_1 == detail::call_key("acme", "order-42", "mail-1"));
    CHECK(r.idempotency_key == key_1);
    CHECK(r.attempt == 1);
    // A call without an id is told the id execute() gave it.
    (void)execute(email("bob@example.com", "receipt_2"), ctx, w.registry);
    CHECK(w.sent->at(1).call_id == "call-2");
    CHECK(w.sent->at(1).idempotency_key == detail::call_key("acme", "order-42", "call-2"));
    // The worker dies right after committing the intended entry of mail-2 (execute() does this first).
    key_2 = ctx.call_key("mail-2");
    ctx.record_call_intended("mail-2", "send_email", detail::input_hash(json{{"to", "eve@example.com"}}));
  }
  {
    // Another worker resumes and retries; that attempt is claimed, then the worker dies again before the tool ran.
    Run run(w.journal, "acme", "order-42");
    auto ctx = w.context();
    ctx.attach(run);
    CHECK(ctx.call_key("mail-2") == key_2);
    ctx.record_call_retry("mail-2", 2);
    CHECK(ctx.state().at("calls").at("mail-2").at("attempt") == 2);
  }
  Run run(w.journal, "acme", "order-42");
  auto ctx = w.context();
  ctx.attach(run);
  REQUIRE(ctx.recorded_call("mail-2"));
  CHECK(ctx.recorded_call("mail-2")->attempt == 2);
  ExecuteOptions retry;
  retry.in_doubt = [](const RecordedCall&) { return InDoubtAction::retry(); };
  auto r = execute(email("eve@example.com", "receipt_3", "mail-2"), ctx, w.registry, retry);
  CHECK(r.success);
  REQUIRE(w.sent->size() == 3);
  CHECK(w.sent->at(2).call_id == "mail-2");
  CHECK(w.sent->at(2).idempotency_key == key_2);  // the same key the first worker's tool would have been given
  CHECK(w.sent->at(2).attempt == 3);
  CHECK(r.attempt == 3);
  // Settled, the call looks as it would in a run that never crashed.
  CHECK_FALSE(ctx.state().at("calls").at("mail-2").contains("attempt"));
  // A replay makes no attempt and hands out the same key.
  auto again = execute(email("ada@example.com", "receipt", "mail-1"), ctx, w.registry);
  CHECK(again.replayed);
  CHECK(again.attempt == 0);
  CHECK(again.idempotency_key == key_1);
  CHECK(w.sent->size() == 3);
  // Only a call in doubt can be claimed.
  CHECK_THROWS_AS(ctx.record_call_retry("mail-1", 2), state_error);
  CHECK_THROWS_AS(ctx.record_call_retry("nope", 2), state_error);
}

TEST_CASE("without a run a tool still gets a key: from the tenant and the call id, or random without an id") {
  World w;
  auto a = w.context();
  auto b = w.context();
  (void)execute(email("ada@example.com", "receipt", "mail-1"), a, w.registry);
  (void)execute(email("ada@example.com", "receipt", "mail-1"), b, w.registry);
  REQUIRE(w.sent->size() == 2);
  CHECK(w.sent->at(0).call_id == "mail-1");
  CHECK(w.sent->at(0).idempotency_key == detail::call_key("acme", "", "mail-1"));
  CHECK(w.sent->at(1).idempotency_key == w.sent->at(0).idempotency_key);
  (void)execute(email("ada@example.com", "receipt"), a, w.registry);
  (void)execute(email("ada@example.com", "receipt"), a, w.registry);
  REQUIRE(w.sent->size() == 4);
  CHECK(w.sent->at(2).call_id.empty());
  CHECK(w.sent->at(2).idempotency_key.size() == 32);
  CHECK(is_hex(w.sent->at(2).idempotency_key));
  CHECK(w.sent->at(2).idempotency_key != w.sent->at(3).idempotency_key);
  // Outputs of a context without a run keep store-assigned ids (UUIDs), never the derived ones.
  const auto stored = a.get_artifact("receipt");
  CHECK(stored->id().size() == 36);
  CHECK(stored->id() != b.get_artifact("receipt")->id());
}

TEST_CASE("tools written for the inputs alone still work, an empty function is refused") {
  ToolRegistry registry;
  registry.add(Tool{"old", "one argument", json{{"type", "object"}},
                    [](const json& in) { return ToolResult::ok(in.value("x", 0) + 1); }});
  std::function<ToolResult(const json&)> stored = [](const json&) { return ToolResult::ok(7); };
  registry.add(Tool{"stored", "a std::function", json{{"type", "object"}}, stored});
  ToolResult (*plain)(const json&) = [](const json&) { return ToolResult::ok(8); };
  registry.add(Tool{"plain", "a function pointer", json{{"type", "object"}}, plain});
  CHECK(registry.find("old")->function(json{{"x", 1}}).data == 2);
  CHECK(registry.find("stored")->function(json::object(), ToolInvocation{}).data == 7);
  CHECK(registry.find("plain")->function(json::object()).data == 8);
  std::function<ToolResult(const json&)> empty;
  CHECK_THROWS_WITH(registry.add(Tool{"empty", "no function", json{{"type", "object"}}, empty}),
                    "tool 'empty': function must be set");
  ToolResult (*null)(const json&) = nullptr;
  CHECK_THROWS_WITH(registry.add(Tool{"null", "no function", json{{"type", "object"}}, null}),
                    "tool 'null': function must be set");
}

TEST_CASE(
    "a resumed run with automatic call ids re-executes the call in doubt under its own id and ends byte for "
    "byte as the uninterrupted run") {
  // The host carries on where the run stopped: it re-issues the call in doubt, then goes on.
  auto first = [](ExecutionContext& ctx, const ToolRegistry& tools, const ExecuteOptions& o) {
    return execute(lookup(21, "answer"), ctx, tools, o).call_id;
  };
  auto second = [](ExecutionContext& ctx, const ToolRegistry& tools, const ExecuteOptions& o) {
    return execute(email("ada@example.com", "receipt"), ctx, tools, o).call_id;
  };
  auto third = [](ExecutionContext& ctx, const ToolRegistry& tools, const ExecuteOptions& o) {
    return execute(email("bob@example.com", "receipt_2"), ctx, tools, o).call_id;
  };
  ExecuteOptions retry;
  std::vector<std::string> asked;
  retry.in_doubt = [&asked](const RecordedCall& c) {
    asked.push_back(c.call_id);
    return InDoubtDecision::retry;  // the enum still converts
  };

  World straight;
  std::string expected_state;
  std::vector<std::string> expected_store;
  {
    Run run(straight.journal, "acme", "order-42");
    auto ctx = straight.context();
    ctx.attach(run);
    CHECK(first(ctx, straight.registry, retry) == "call-1");
    CHECK(second(ctx, straight.registry, retry) == "call-2");
    CHECK(third(ctx, straight.registry, retry) == "call-3");
    expected_state = ctx.state().dump();
    expected_store = store_contents(*straight.store);
  }

  // The crashed worker ran call-2's tool and stored its output, then died before the finished entry: the journal
  // ends with call-2's intended entry, the store holds the unbound output.
  World w;
  {
    Run run(w.journal, "acme", "order-42");
    auto ctx = w.context();
    ctx.attach(run);
    (void)first(ctx, w.registry, retry);
    (void)second(ctx, w.registry, retry);
  }
  REQUIRE(w.sent->size() == 1);
  const auto all = w.journal->read("acme", "order-42");
  std::vector<JournalEntry> kept;
  for (const auto& e : all) {
    kept.push_back(e);
    if (e.kind == "context.tool_intended" && e.data.at("call") == "call-2") break;
  }
  REQUIRE(kept.size() < all.size());
  w.journal->remove("acme", "order-42");
  (void)w.journal->append("acme", "order-42", 0, kept);

  Run run(w.journal, "acme", "order-42");
  auto ctx = w.context();
  ctx.attach(run);
  REQUIRE(ctx.in_doubt_calls().size() == 1);
  CHECK(ctx.in_doubt_calls()[0].call_id == "call-2");
  CHECK(ctx.next_call_id() == "call-2");
  CHECK(second(ctx, w.registry, retry) == "call-2");  // in doubt again: asked, then retried
  CHECK(asked == std::vector<std::string>{"call-2"});
  CHECK(third(ctx, w.registry, retry) == "call-3");  // numbered as in the uninterrupted run
  REQUIRE(w.sent->size() == 3);
  CHECK(w.sent->at(1).idempotency_key == w.sent->at(0).idempotency_key);  // the retry's key is the first try's
  CHECK(w.sent->at(1).attempt == 2);
  // Bindings (ids, versions, ordering keys), messages and calls; and the store: the retry removed the orphan and
  // stored version 1 under the same id.
  CHECK(ctx.state().dump() == expected_state);
  CHECK(store_contents(*w.store) == expected_store);
}

TEST_CASE("split brain: of two workers resuming one run on one SQLite file, exactly one fires the call in doubt") {
  TempFile tmp;
  const std::string path = tmp.file("agents.db");
  auto journal_a = std::make_shared<SqliteRunJournal>(path);
  auto journal_b = std::make_shared<SqliteRunJournal>(path);  // a second connection: another worker
  auto store_a = std::make_shared<SqliteArtifactStore>(path);
  auto store_b = std::make_shared<SqliteArtifactStore>(path);
  int fired = 0;
  std::string b_saw;  // what happened to worker b, which tried while a's tool was running
  ExecuteOptions retry;
  retry.in_doubt = [](const RecordedCall&) { return InDoubtAction::retry(); };
  ToolRegistry registry;
  std::function<void()> while_running;
  registry.add(Tool{"send_email", "sends an email", json{{"type", "object"}}, [&](const json& in) {
                      ++fired;
                      if (while_running) std::exchange(while_running, nullptr)();
                      return ToolResult::ok(json{{"receipt", "sent to " + in.at("to").get<std::string>()}});
                    }});
  const ToolCall call = email("ada@example.com", "receipt", "mail-1");
  {
    Run run(journal_a, "acme", "order-42");
    ExecutionContext ctx(store_a, "acme");
    ctx.attach(run);
    ctx.record_call_intended("mail-1", "send_email", detail::input_hash(call.inputs));  // and the worker dies
  }
  Run run_a(journal_a, "acme", "order-42");
  ExecutionContext ctx_a(store_a, "acme");
  ctx_a.attach(run_a);
  Run run_b(journal_b, "acme", "order-42");
  ExecutionContext ctx_b(store_b, "acme");
  ctx_b.attach(run_b);
  REQUIRE(ctx_a.in_doubt_calls().size() == 1);
  REQUIRE(ctx_b.in_doubt_calls().size() == 1);

  SECTION("b tries while a's tool runs") {
    while_running = [&] {
      try {
        (void)execute(call, ctx_b, registry, retry);
        b_saw = "ran";
      } catch (const conflict&) {
        b_saw = "conflict";
      }
    };
    auto r = execute(call, ctx_a, registry, retry);
    CHECK(r.success);
    CHECK(b_saw == "conflict");
  }
  SECTION("b tries after a finished") {
    auto r = execute(call, ctx_a, registry, retry);
    CHECK(r.success);
    CHECK_THROWS_AS(execute(call, ctx_b, registry, retry), conflict);
  }
  CHECK(fired == 1);
  // b changed nothing, in memory or in the journal: the call is still in doubt there, at its first attempt.
  CHECK(ctx_b.recorded_call("mail-1")->status == RecordedCall::Status::intended);
  CHECK(ctx_b.recorded_call("mail-1")->attempt == 1);
  const auto k = kinds(*journal_a, "order-42");
  CHECK(std::count(k.begin(), k.end(), "context.tool_retry") == 1);
  CHECK(k.back() == "context.tool_finished");
  // Reopened, b sees a's outcome and never fires.
  ctx_b.detach();
  Run reopened(journal_b, "acme", "order-42");
  ExecutionContext again(store_b, "acme");
  again.attach(reopened);
  auto replay = execute(call, again, registry, retry);
  CHECK(replay.replayed);
  CHECK(replay.outputs.at(0).record->value() == "sent to ada@example.com");
  CHECK(fired == 1);
}

TEST_CASE("done: a host that found the effect records the call as finished with its outcome, without running it") {
  World w;
  const ToolCall call = email("ada@example.com", "receipt", "mail-1");
  const std::string output_id = detail::call_output_id("acme", "order-42", "mail-1", "receipt");
  {
    Run run(w.journal, "acme", "order-42");
    auto ctx = w.context();
    ctx.attach(run);
    ctx.record_call_intended("mail-1", "send_email", detail::input_hash(call.inputs));
    // The dead worker's tool had run and stored its output, unbound: an orphan under the call's output id.
    (void)w.store->store(*ArtifactRecord::builder()
                              .id(output_id)
                              .tenant_id("acme")
                              .type(ArtifactType::data)
                              .description("x")
                              .value("orphan")
                              .build());
  }
  Run run(w.journal, "acme", "order-42");
  auto ctx = w.context();
  ctx.attach(run);
  ExecuteOptions found;
  std::string key_seen;
  found.in_doubt = [&](const RecordedCall& c) {
    key_seen = ctx.call_key(c.call_id);  // what the host looks the effect up by
    return InDoubtAction::done(ToolResult::ok(json{{"receipt", "found in the outbox"}}, json{{"checked", true}}));
  };
  auto r = execute(call, ctx, w.registry, found);
  CHECK(w.sent->empty());  // the tool did not run
  CHECK(r.success);
  CHECK_FALSE(r.replayed);
  CHECK(r.attempt == 2);
  CHECK(key_seen == detail::call_key("acme", "order-42", "mail-1"));
  const auto bound = ctx.get_artifact("receipt");
  REQUIRE(bound);
  CHECK(bound->value() == "found in the outbox");
  CHECK(bound->id() == output_id);
  CHECK(bound->version() == 1);  // the orphan was removed first
  CHECK(bound->metadata().at("checked") == true);
  CHECK(w.store->versions(output_id, "acme") == std::vector<std::uint64_t>{1});
  CHECK(ctx.recorded_call("mail-1")->status == RecordedCall::Status::finished);
  CHECK(ctx.messages().back().content == "Executed send_email and stored output as @receipt");
  const auto k = kinds(*w.journal, "order-42");
  REQUIRE(k.size() >= 2);
  CHECK(k[k.size() - 2] == "context.tool_retry");
  CHECK(k.back() == "context.tool_finished");
  // The journal holds it as any finished call: a new worker replays it.
  Run later(w.journal, "acme", "order-42");
  auto ctx2 = w.context();
  ctx2.attach(later);
  CHECK(ctx2.state().dump() == ctx.state().dump());
  CHECK(execute(call, ctx2, w.registry, found).replayed);
  CHECK(w.sent->empty());

  SECTION("an outcome that is a failure records the call as failed") {
    World v;
    {
      Run first(v.journal, "acme", "r");
      auto c = v.context();
      c.attach(first);
      c.record_call_intended("mail-1", "send_email", detail::input_hash(call.inputs));
    }
    Run resumed(v.journal, "acme", "r");
    auto c = v.context();
    c.attach(resumed);
    ExecuteOptions bounced;
    bounced.in_doubt = [](const RecordedCall&) {
      return InDoubtAction::done(ToolResult::failure("the mail server bounced it"));
    };
    auto f = execute(call, c, v.registry, bounced);
    CHECK_FALSE(f.success);
    CHECK(f.error == "the mail server bounced it");
    CHECK(c.recorded_call("mail-1")->status == RecordedCall::Status::failed);
    CHECK(v.sent->empty());
  }
}

TEST_CASE("an idempotent tool in doubt is retried (claimed) without asking in_doubt, others are asked once") {
  World w;
  {
    Run run(w.journal, "acme", "r");
    auto ctx = w.context();
    ctx.attach(run);
    ctx.record_call_intended("q-1", "lookup", detail::input_hash(json{{"q", 21}}));
    ctx.record_call_intended("mail-1", "send_email", detail::input_hash(json{{"to", "ada@example.com"}}));
  }
  Run run(w.journal, "acme", "r");
  auto ctx = w.context();
  ctx.attach(run);
  std::vector<std::string> asked;
  ExecuteOptions options;
  options.in_doubt = [&asked](const RecordedCall& c) {
    asked.push_back(c.call_id);
    return InDoubtAction::give_up();
  };
  auto q = execute(lookup(21, "answer", "q-1"), ctx, w.registry, options);
  CHECK(q.success);
  CHECK(asked.empty());
  REQUIRE(w.looked_up->size() == 1);
  CHECK(w.looked_up->at(0).attempt == 2);
  auto m = execute(email("ada@example.com", "receipt", "mail-1"), ctx, w.registry, options);
  CHECK_FALSE(m.success);
  CHECK(asked == std::vector<std::string>{"mail-1"});
  CHECK(w.sent->empty());
  const auto k = kinds(*w.journal, "r");
  CHECK(std::count(k.begin(), k.end(), "context.tool_retry") == 1);  // the idempotent retry's claim; give_up needs none
}

// ---- the call lease (RunOptions::call_lease): a claim younger than the lease is in flight, not in doubt ----------

namespace {

// Two workers on one run: one in-memory journal and store shared, or two connections to one SQLite file. Every
// journal and store reads the same manual clock.
struct TwoWorkers {
  std::shared_ptr<testing::ManualClock> clock = std::make_shared<testing::ManualClock>();
  std::shared_ptr<RunJournal> journal_a, journal_b;
  std::shared_ptr<ArtifactStore> store_a, store_b;
  std::unique_ptr<TempFile> tmp;

  explicit TwoWorkers(bool sqlite) {
    if (!sqlite) {
      journal_a = journal_b = std::make_shared<InMemoryRunJournal>(clock);
      InMemoryStoreOptions o;
      o.clock = clock;
      store_a = store_b = std::make_shared<InMemoryArtifactStore>(o);
      return;
    }
    tmp = std::make_unique<TempFile>();
    const std::string path = tmp->file("agents.db");
    SqliteJournalOptions jo;
    jo.clock = clock;
    journal_a = std::make_shared<SqliteRunJournal>(path, jo);
    journal_b = std::make_shared<SqliteRunJournal>(path, jo);
    SqliteOptions so;
    so.clock = clock;
    store_a = std::make_shared<SqliteArtifactStore>(path, so);
    store_b = std::make_shared<SqliteArtifactStore>(path, so);
  }
};

RunOptions leased(std::chrono::milliseconds lease) {
  RunOptions o;
  o.call_lease = lease;
  return o;
}

}  // namespace

TEST_CASE("call lease: a worker reopening a run while another's claimed retry runs gets call_in_flight, never fires") {
  const bool sqlite = GENERATE(false, true);
  INFO((sqlite ? "SQLite file, two connections" : "in-memory journal and store"));
  TwoWorkers w(sqlite);
  const auto lease = std::chrono::milliseconds(30000);
  const ToolCall call = email("ada@example.com", "receipt", "mail-1");
  std::vector<std::string> ledger;  // the outside world: a key per effect that happened
  std::function<void()> while_running;
  ToolRegistry registry;
  registry.add(
      Tool{"send_email", "sends an email", json{{"type", "object"}}, [&](const json& in, const ToolInvocation& inv) {
             if (while_running) std::exchange(while_running, nullptr)();
             ledger.push_back(inv.idempotency_key);  // the effect lands after b's first look
             return ToolResult::ok(json{{"receipt", "sent to " + in.at("to").get<std::string>()}});
           }});
  int asked_b = 0;
  // The fleet's policy: the effect in the ledger: done; not there: retry.
  auto policy = [&ledger](int& asked) {
    ExecuteOptions o;
    o.in_doubt = [&ledger, &asked](const RecordedCall& c) {
      ++asked;
      const std::string key = detail::call_key("acme", "order-42", c.call_id);
      if (std::find(ledger.begin(), ledger.end(), key) != ledger.end()) {
        return InDoubtAction::done(ToolResult::ok(json{{"receipt", "found in the ledger"}}));
      }
      return InDoubtAction::retry();
    };
    return o;
  };
  {
    Run run(w.journal_a, "acme", "order-42", leased(lease));
    ExecutionContext ctx(w.store_a, "acme", w.clock);
    ctx.attach(run);
    ctx.record_call_intended("mail-1", "send_email", detail::input_hash(call.inputs));  // and the worker dies
  }
  w.clock->advance(lease + std::chrono::milliseconds(1));  // the first attempt's lease has ended: in doubt
  Run run_a(w.journal_a, "acme", "order-42", leased(lease));
  ExecutionContext ctx_a(w.store_a, "acme", w.clock);
  ctx_a.attach(run_a);
  REQUIRE(ctx_a.in_doubt_calls().size() == 1);
  CHECK(ctx_a.in_flight_calls().empty());
  const std::int64_t claimed = w.clock->peek();

  std::string b_state, b_error;
  std::int64_t b_lease_end = 0;
  while_running = [&] {
    // a's claim (attempt 2) is committed and its tool is running; b reopens the run 1 ms before the lease ends.
    w.clock->advance(lease - std::chrono::milliseconds(1));
    Run run_b(w.journal_b, "acme", "order-42", leased(lease));
    ExecutionContext ctx_b(w.store_b, "acme", w.clock);
    ctx_b.attach(run_b);
    CHECK(ctx_b.in_doubt_calls().empty());
    REQUIRE(ctx_b.in_flight_calls().size() == 1);
    CHECK(ctx_b.in_flight_calls()[0].attempt == 2);
    CHECK(ctx_b.lease_end(*ctx_b.recorded_call("mail-1")) == claimed + lease.count());
    b_state = ctx_b.state().dump();
    auto o = policy(asked_b);
    try {
      (void)execute(call, ctx_b, registry, o);
      b_error = "none";
    } catch (const call_in_flight& e) {
      b_error = e.what();
      b_lease_end = e.lease_ends_at();
      CHECK(e.code() == errc::call_in_flight);
      CHECK(e.call().call_id == "mail-1");
    }
    CHECK(ctx_b.state().dump() == b_state);                                 // b changed nothing
    CHECK_THROWS_AS(ctx_b.record_call_retry("mail-1", 3), call_in_flight);  // nor can it claim
    CHECK(ctx_b.state().dump() == b_state);
  };
  int asked_a = 0;
  auto a_opts = policy(asked_a);  // a's own policy: retry (the ledger is empty)
  auto r = execute(call, ctx_a, registry, a_opts);
  CHECK(r.success);
  CHECK(r.attempt == 2);
  CHECK(asked_a == 1);
  CHECK(asked_b == 0);  // b's policy was never asked: it would have found no effect and retried
  CHECK(b_lease_end == claimed + lease.count());
  CHECK(b_error.find("call 'mail-1' of send_email in run 'order-42' is in flight") != std::string::npos);
  CHECK(b_error.find("claimed 29999 ms ago") != std::string::npos);
  CHECK(b_error.find("ends in 1 ms") != std::string::npos);
  REQUIRE(ledger.size() == 1);  // fired once
  const auto k = kinds(*w.journal_a, "order-42");
  CHECK(std::count(k.begin(), k.end(), "context.tool_retry") == 1);
  CHECK(k.back() == "context.tool_finished");
}

TEST_CASE("call lease: after the lease, a second worker decides about a claimed call that never finished") {
  const bool sqlite = GENERATE(false, true);
  INFO((sqlite ? "SQLite file, two connections" : "in-memory journal and store"));
  TwoWorkers w(sqlite);
  const auto lease = std::chrono::milliseconds(5000);
  const ToolCall call = email("ada@example.com", "receipt", "mail-1");
  const std::string key = detail::call_key("acme", "order-42", "mail-1");
  std::vector<std::string> ledger;
  std::function<void()> while_running;
  ToolRegistry registry;
  registry.add(
      Tool{"send_email", "sends an email", json{{"type", "object"}}, [&](const json& in, const ToolInvocation& inv) {
             ledger.push_back(inv.idempotency_key);                       // the effect happens ...
             if (while_running) std::exchange(while_running, nullptr)();  // ... and a is slow after it
             return ToolResult::ok(json{{"receipt", "sent to " + in.at("to").get<std::string>()}});
           }});
  int asked = 0;  // by b
  ExecuteOptions policy;
  policy.in_doubt = [&](const RecordedCall& c) {
    ++asked;
    CHECK(c.call_id == "mail-1");
    if (std::find(ledger.begin(), ledger.end(), key) != ledger.end()) {
      return InDoubtAction::done(ToolResult::ok(json{{"receipt", "found in the ledger"}}));
    }
    return InDoubtAction::retry();
  };
  const bool retried = GENERATE(false, true);  // a's attempt is the first one, or a claimed retry
  INFO((retried ? "a's attempt is a claimed retry" : "a's attempt is the first one"));
  if (retried) {
    Run run(w.journal_a, "acme", "order-42", leased(lease));
    ExecutionContext ctx(w.store_a, "acme", w.clock);
    ctx.attach(run);
    ctx.record_call_intended("mail-1", "send_email", detail::input_hash(call.inputs));  // and the worker dies
    w.clock->advance(lease);  // exactly at the lease's end: in doubt
  }
  Run run_a(w.journal_a, "acme", "order-42", leased(lease));
  ExecutionContext ctx_a(w.store_a, "acme", w.clock);
  ctx_a.attach(run_a);
  std::string b_saw;
  while_running = [&] {
    for (const int after : {0, 4999, 5000}) {
      w.clock->advance(std::chrono::milliseconds(after == 0 ? 0 : after == 4999 ? 4999 : 1));
      Run run_b(w.journal_b, "acme", "order-42", leased(lease));
      ExecutionContext ctx_b(w.store_b, "acme", w.clock);
      ctx_b.attach(run_b);
      try {
        auto r = execute(call, ctx_b, registry, policy);
        CHECK(r.success);
        CHECK(r.outputs.at(0).record->value() == "found in the ledger");
        b_saw += "done@" + std::to_string(after);
        CHECK(ctx_b.in_doubt_calls().empty());
      } catch (const call_in_flight&) {
        b_saw += "in-flight@" + std::to_string(after) + " ";
        CHECK(asked == 0);
      }
    }
  };
  ExecuteOptions retry;
  retry.in_doubt = [](const RecordedCall&) { return InDoubtAction::retry(); };
  CHECK_THROWS_AS(execute(call, ctx_a, registry, retry), conflict);  // b recorded the outcome first
  CHECK(b_saw == "in-flight@0 in-flight@4999 done@5000");
  CHECK(asked == 1);
  CHECK(ledger.size() == 1);  // fired once: b found a's effect
  const auto k = kinds(*w.journal_a, "order-42");
  CHECK(std::count(k.begin(), k.end(), "context.tool_retry") == (retried ? 2 : 1));
  CHECK(std::count(k.begin(), k.end(), "context.tool_intended") == 1);
  CHECK(k.back() == "context.tool_finished");
  // Reopened, the run answers the call with b's outcome, from the store.
  Run later(w.journal_b, "acme", "order-42", leased(lease));
  ExecutionContext again(w.store_b, "acme", w.clock);
  again.attach(later);
  auto replay = execute(call, again, registry, policy);
  CHECK(replay.replayed);
  CHECK(replay.outputs.at(0).record->value() == "found in the ledger");
}

TEST_CASE("call lease: 0 (the default) leaves every unsettled call in doubt at once") {
  World w;
  {
    Run run(w.journal, "acme", "r");
    auto ctx = w.context();
    ctx.attach(run);
    ctx.record_call_intended("mail-1", "send_email", detail::input_hash(json{{"to", "ada"}}));
  }
  Run run(w.journal, "acme", "r");
  CHECK(run.options().call_lease.count() == 0);
  auto ctx = w.context();
  ctx.attach(run);
  CHECK(ctx.in_doubt_calls().size() == 1);
  CHECK(ctx.in_flight_calls().empty());
  CHECK_FALSE(ctx.lease_end(*ctx.recorded_call("mail-1")));
}

// ---- add_artifact in a run (ExecutionContext::store_to_bind): a step done again after a crash stores what an
// uninterrupted run stored --------------------------------------------------------------------------------------------

namespace {

ArtifactRecord::Builder note(const std::string& text, std::string id = {}) {
  auto b = ArtifactRecord::builder();
  b.type(ArtifactType::data).description("a note").value(text);
  if (!id.empty()) b.id(std::move(id));
  return b;
}

// The step `add` done by a worker that crashes before its binding is committed (its batch is abandoned), then done
// again by a worker that resumes the run; and the same step done once, uninterrupted, on a fresh backend. Returns
// the resumed run's context state and store beside the uninterrupted one's.
struct Redone {
  std::string state, expected_state;
  std::vector<std::string> store, expected_store;
};

Redone redo(bool sqlite, const std::function<void(ExecutionContext&)>& before,
            const std::function<void(ExecutionContext&)>& lost, const std::function<void(ExecutionContext&)>& again) {
  Redone out;
  {
    TwoWorkers ref(sqlite);
    Run run(ref.journal_a, "acme", "order-42");
    ExecutionContext ctx(ref.store_a, "acme", ref.clock);
    ctx.attach(run);
    before(ctx);
    again(ctx);
    out.expected_state = ctx.state().dump();
    out.expected_store = store_contents(*ref.store_a);
  }
  TwoWorkers w(sqlite);
  {
    Run run(w.journal_a, "acme", "order-42");
    ExecutionContext ctx(w.store_a, "acme", w.clock);
    ctx.attach(run);
    before(ctx);
    try {
      auto group = run.batch();
      lost(ctx);
      throw std::runtime_error("the worker dies before the batch commits");
    } catch (const std::runtime_error&) {
    }
  }
  Run run(w.journal_b, "acme", "order-42");
  ExecutionContext ctx(w.store_b, "acme", w.clock);
  ctx.attach(run);
  again(ctx);
  out.state = ctx.state().dump();
  out.store = store_contents(*w.store_b);
  // A third worker reopening the run sees the same.
  Run reopened(w.journal_a, "acme", "order-42");
  ExecutionContext third(w.store_a, "acme", w.clock);
  third.attach(reopened);
  CHECK(third.state().dump() == out.state);
  return out;
}

}  // namespace

TEST_CASE("add_artifact in a run derives a missing id from the tenant, the run, the name and the ordering key") {
  World w;
  Run run(w.journal, "acme", "order-42");
  auto ctx = w.context();
  ctx.attach(run);
  auto first = ctx.add_artifact("notes", note("one"));
  auto second = ctx.add_artifact("notes", note("two"));
  const json s = ctx.state();
  REQUIRE(s["bindings"].size() == 1);
  const std::string write = std::to_string(s["bindings"][0]["write"].get<std::uint64_t>());
  auto documented = [](const std::string& key) {
    const std::string text = "cairn.binding.v14:acme8:order-425:notes" + std::to_string(key.size()) + ":" + key;
    return "bind-" + detail::hex_prefix(detail::sha256(text), 16);
  };
  CHECK(second->id() == documented(write));
  CHECK(second->version() == 1);
  CHECK(first->id() != second->id());  // another binding, another ordering key
  CHECK(first->id() == documented(std::to_string(s["bindings"][0]["first"].get<std::uint64_t>())));
  // Without a run, the store's own ids.
  auto plain = w.context();
  CHECK(plain.add_artifact("notes", note("one"))->id().rfind("bind-", 0) == std::string::npos);
}

TEST_CASE("add_artifact done again after a crash reuses what the lost attempt stored, or replaces it") {
  const bool sqlite = GENERATE(false, true);
  INFO((sqlite ? "SQLite file" : "in-memory store and journal"));
  auto before = [](ExecutionContext& ctx) { ctx.add_message(Role::user, "take notes"); };
  SECTION("the same content: the lost attempt's record is bound") {
    auto r = redo(
        sqlite, before, [](ExecutionContext& ctx) { (void)ctx.add_artifact("notes", note("the minutes")); },
        [](ExecutionContext& ctx) { (void)ctx.add_artifact("notes", note("the minutes")); });
    CHECK(r.state == r.expected_state);
    CHECK(r.store == r.expected_store);
    CHECK(r.store.size() == 1);
  }
  SECTION("other content (the step is not deterministic): the lost attempt's record is replaced") {
    auto r = redo(
        sqlite, before, [](ExecutionContext& ctx) { (void)ctx.add_artifact("notes", note("a first draft")); },
        [](ExecutionContext& ctx) { (void)ctx.add_artifact("notes", note("the minutes")); });
    CHECK(r.state == r.expected_state);
    CHECK(r.store == r.expected_store);
    CHECK(r.store.size() == 1);
  }
  SECTION("a host's own id: its identical, unbound latest version is reused, not stored as version 2") {
    auto r = redo(
        sqlite, before, [](ExecutionContext& ctx) { (void)ctx.add_artifact("brief", note("ship 2.0", "brief-1")); },
        [](ExecutionContext& ctx) { (void)ctx.add_artifact("brief", note("ship 2.0", "brief-1")); });
    CHECK(r.state == r.expected_state);
    CHECK(r.store == r.expected_store);
    REQUIRE(r.store.size() == 1);
    CHECK(r.store[0].rfind("brief-1 v1 ", 0) == 0);
  }
  SECTION("a host's own id added twice with the same content in one lost step: done again, it ends at version 2") {
    auto twice = [](ExecutionContext& ctx) {
      (void)ctx.add_artifact("brief", note("ship 2.0", "brief-1"));
      (void)ctx.add_artifact("brief", note("ship 2.0", "brief-1"));
    };
    auto r = redo(sqlite, before, twice, twice);
    CHECK(r.state == r.expected_state);
    CHECK(r.store == r.expected_store);
    REQUIRE(r.store.size() == 2);
    CHECK(r.store[1].rfind("brief-1 v2 ", 0) == 0);
  }
  SECTION("a host's own id bound to its latest version already: the same content added again is version 2") {
    auto first = [&before](ExecutionContext& ctx) {
      before(ctx);
      (void)ctx.add_artifact("brief", note("ship 2.0", "brief-1"));  // committed: bound to version 1
    };
    auto again = [](ExecutionContext& ctx) { (void)ctx.add_artifact("brief", note("ship 2.0", "brief-1")); };
    auto r = redo(sqlite, first, again, again);
    CHECK(r.state == r.expected_state);
    CHECK(r.store == r.expected_store);
    REQUIRE(r.store.size() == 2);
    CHECK(r.store[1].rfind("brief-1 v2 ", 0) == 0);
  }
}

TEST_CASE("a first attempt stores its outputs create-only: a worker that lost the call adds no second version") {
  const bool sqlite = GENERATE(false, true);
  INFO((sqlite ? "SQLite file, two connections" : "in-memory journal and store"));
  const ToolCall call = email("ada@example.com", "receipt", "mail-1");
  std::function<void()> while_running;
  int fired = 0;
  ToolRegistry registry;
  registry.add(Tool{"send_email", "sends an email", json{{"type", "object"}}, [&](const json& in) {
                      ++fired;
                      if (while_running) std::exchange(while_running, nullptr)();
                      return ToolResult::ok(json{{"receipt", "sent to " + in.at("to").get<std::string>()}});
                    }});
  ExecuteOptions retry;
  retry.in_doubt = [](const RecordedCall&) { return InDoubtAction::retry(); };
  std::string expected_state;
  std::vector<std::string> expected_store;
  {
    TwoWorkers ref(sqlite);
    Run run(ref.journal_a, "acme", "order-42");
    ExecutionContext ctx(ref.store_a, "acme", ref.clock);
    ctx.attach(run);
    (void)execute(call, ctx, registry);
    expected_state = ctx.state().dump();
    expected_store = store_contents(*ref.store_a);
  }
  fired = 0;
  TwoWorkers w(sqlite);
  Run run_b(w.journal_b, "acme", "order-42");  // the first worker: its first attempt is slow
  ExecutionContext ctx_b(w.store_b, "acme", w.clock);
  ctx_b.attach(run_b);
  while_running = [&] {
    // Meanwhile a second worker (no lease) finds the call in doubt, claims it, runs it and records its outcome.
    Run run_a(w.journal_a, "acme", "order-42");
    ExecutionContext ctx_a(w.store_a, "acme", w.clock);
    ctx_a.attach(run_a);
    REQUIRE(ctx_a.in_doubt_calls().size() == 1);
    auto r = execute(call, ctx_a, registry, retry);
    CHECK(r.success);
    CHECK(r.attempt == 2);
  };
  CHECK_THROWS_AS(execute(call, ctx_b, registry), conflict);  // its late store conflicts: nothing added
  CHECK(fired == 2);  // without a lease both fired (the key is the outside system's to deduplicate)
  CHECK(store_contents(*w.store_a) == expected_store);
  Run reopened(w.journal_b, "acme", "order-42");
  ExecutionContext again(w.store_b, "acme", w.clock);
  again.attach(reopened);
  CHECK(again.state().dump() == expected_state);
}
