// An ExecutionContext attached to a Run: every change is journalled, a new context rebuilds the same state from the
// journal at any point, tool calls are recorded around their effect, and two workers can never both write.
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/context/execution_context.hpp"
#include "cairn/context/tool.hpp"
#include "cairn/run/memory_journal.hpp"
#include "cairn/run/run.hpp"
#include "catch.hpp"

using namespace cairn;
using nlohmann::json;

namespace {

ArtifactRecord::Builder data(json v) {
  auto b = ArtifactRecord::builder();
  b.type(ArtifactType::data).description("a value").value(std::move(v));
  return b;
}

struct Fixture {
  std::shared_ptr<InMemoryArtifactStore> store = std::make_shared<InMemoryArtifactStore>();
  std::shared_ptr<InMemoryRunJournal> journal = std::make_shared<InMemoryRunJournal>();
  std::atomic<int> fired{0};  // how many times the side-effecting tool really ran
  ToolRegistry registry;

  Fixture() {
    registry.add(
        Tool{"send_email", "sends an email (not idempotent)", json{{"type", "object"}}, [this](const json& in) {
               ++fired;
               return ToolResult::ok(json{{"receipt", "sent to " + in.value("to", std::string("?"))}});
             }});
    Tool lookup{"lookup", "reads a value (idempotent)", json{{"type", "object"}}, [](const json& in) {
                  return ToolResult::ok(json{{"answer", in.value("q", 0) * 2}});
                }};
    lookup.idempotent = true;
    registry.add(lookup);
    registry.add(Tool{"broken", "always fails", json{{"type", "object"}},
                      [](const json&) { return ToolResult::failure("the service said no"); }});
  }

  ToolCall email(std::string id, std::string to) {
    ToolCall c;
    c.id = std::move(id);
    c.tool = "send_email";
    c.inputs = {{"to", std::move(to)}};
    c.outputs = {OutputSpec{"receipt", ArtifactType::data, "the receipt", ""}};
    return c;
  }

  // The state of a context rebuilt from the journal at `seq` (0: the end).
  json restored_state(const std::string& run_id, std::uint64_t seq = 0) {
    auto run = seq == 0 ? std::make_unique<Run>(journal, "acme", run_id)
                        : std::make_unique<Run>(journal, "acme", run_id, RunAt{seq});
    ExecutionContext ctx(store, "acme");
    ctx.attach(*run);
    auto state = ctx.state();
    ctx.detach();
    return state;
  }
};

}  // namespace

TEST_CASE("a context attached to a run is rebuilt byte for byte at every sequence number") {
  Fixture f;
  std::vector<std::pair<std::uint64_t, std::string>> states;  // seq -> the original's state JSON then
  {
    Run run(f.journal, "acme", "r1", RunOptions{5});  // a snapshot every 5 entries
    ExecutionContext ctx(f.store, "acme");
    ctx.add_artifact("before", data("held before attaching"));  // recorded as the state at attach
    ctx.attach(run);
    states.emplace_back(run.seq(), ctx.state().dump());
    for (int i = 0; i < 12; ++i) {
      ctx.add_artifact("n" + std::to_string(i % 4), data(i));  // rebinds keep their place
      states.emplace_back(run.seq(), ctx.state().dump());
      ctx.add_message(Role::user, "message " + std::to_string(i) + " ✓");
      states.emplace_back(run.seq(), ctx.state().dump());
    }
    (void)execute(f.email("mail-1", "ada@example.com"), ctx, f.registry);
    states.emplace_back(run.seq(), ctx.state().dump());
    (void)execute(ToolCall{"broken", json::object(), {}}, ctx, f.registry);
    states.emplace_back(run.seq(), ctx.state().dump());
  }
  REQUIRE(states.size() == 27);
  for (const auto& [seq, state] : states) {
    INFO("seq " << seq);
    CHECK(f.restored_state("r1", seq).dump() == state);
  }
  CHECK(f.restored_state("r1").dump() == states.back().second);
  // Snapshots bound what a restore reads.
  const auto info = f.journal->info("acme", "r1");
  CHECK(f.journal->read_for_restore("acme", "r1").size() <= 6);
  CHECK(info->last_seq > 30);
}

TEST_CASE("a finished call is never run again, its outputs come from the journal") {
  Fixture f;
  {
    Run run(f.journal, "acme", "r2");
    ExecutionContext ctx(f.store, "acme");
    ctx.attach(run);
    auto first = execute(f.email("mail-1", "ada@example.com"), ctx, f.registry);
    REQUIRE(first.success);
    CHECK_FALSE(first.replayed);
    CHECK(first.call_id == "mail-1");
  }
  REQUIRE(f.fired == 1);
  // A new process resumes the run and re-issues the same call.
  Run run(f.journal, "acme", "r2");
  ExecutionContext ctx(f.store, "acme");
  ctx.attach(run);
  const auto seq = run.seq();
  auto again = execute(f.email("mail-1", "ada@example.com"), ctx, f.registry);
  CHECK(f.fired == 1);
  CHECK(again.replayed);
  CHECK(again.success);
  REQUIRE(again.outputs.size() == 1);
  CHECK(again.outputs[0].record->value() == "sent to ada@example.com");
  CHECK(*ctx.get_artifact_value("receipt") == "sent to ada@example.com");
  CHECK(run.seq() == seq);  // a replay records nothing
  // The same id with other inputs is a mistake, not a new call.
  CHECK_THROWS_AS(execute(f.email("mail-1", "bob@example.com"), ctx, f.registry), state_error);
  CHECK(f.fired == 1);
  // A failed call is answered from the journal too.
  (void)execute(ToolCall{"broken", json::object(), {}, "b1"}, ctx, f.registry);
  auto failed_again = execute(ToolCall{"broken", json::object(), {}, "b1"}, ctx, f.registry);
  CHECK(failed_again.replayed);
  CHECK_FALSE(failed_again.success);
  CHECK(failed_again.error == "the service said no");
}

TEST_CASE("a call intended but never finished is in doubt and is never silently run again") {
  Fixture f;
  {
    Run run(f.journal, "acme", "r3");
    ExecutionContext ctx(f.store, "acme");
    ctx.attach(run);
    // What execute() commits before running the tool; the process dies before the outcome is recorded.
    ctx.record_call_intended("mail-9", "send_email", detail::input_hash(json{{"to", "ada@example.com"}}));
    ctx.record_call_intended("q-1", "lookup", detail::input_hash(json{{"q", 21}}));
  }
  Run run(f.journal, "acme", "r3");
  ExecutionContext ctx(f.store, "acme");
  ctx.attach(run);
  const auto doubts = ctx.in_doubt_calls();
  REQUIRE(doubts.size() == 2);
  CHECK(doubts[0].call_id == "mail-9");
  CHECK(doubts[1].call_id == "q-1");

  // Not idempotent, no decision: an error that names the call, and the tool does not run.
  try {
    (void)execute(f.email("mail-9", "ada@example.com"), ctx, f.registry);
    FAIL("no call_in_doubt");
  } catch (const call_in_doubt& e) {
    CHECK(e.call().call_id == "mail-9");
    CHECK_THAT(e.what(), cairn_test::ContainsSubstring("call 'mail-9' of send_email is in doubt"));
  }
  CHECK(f.fired == 0);

  // Idempotent: retried by itself.
  ToolCall q{"lookup", json{{"q", 21}}, {OutputSpec{"answer", ArtifactType::data, "the answer", ""}}, "q-1"};
  auto answered = execute(q, ctx, f.registry);
  CHECK(answered.success);
  CHECK_FALSE(answered.replayed);
  CHECK(*ctx.get_artifact_value("answer") == 42);

  // The host decides: give up records a failure without running the tool.
  ExecuteOptions give_up;
  give_up.in_doubt = [](const RecordedCall& c) {
    CHECK(c.tool == "send_email");
    return InDoubtDecision::give_up;
  };
  auto abandoned = execute(f.email("mail-9", "ada@example.com"), ctx, f.registry, give_up);
  CHECK_FALSE(abandoned.success);
  CHECK(f.fired == 0);
  CHECK(ctx.in_doubt_calls().empty());
  CHECK(ctx.recorded_call("mail-9")->status == RecordedCall::Status::failed);
}

TEST_CASE("the host may retry a call in doubt after checking its effect") {
  Fixture f;
  {
    Run run(f.journal, "acme", "r4");
    ExecutionContext ctx(f.store, "acme");
    ctx.attach(run);
    ctx.record_call_intended("mail-1", "send_email", detail::input_hash(json{{"to", "ada@example.com"}}));
  }
  Run run(f.journal, "acme", "r4");
  ExecutionContext ctx(f.store, "acme");
  ctx.attach(run);
  ExecuteOptions retry;
  retry.in_doubt = [](const RecordedCall&) { return InDoubtDecision::retry; };
  auto r = execute(f.email("mail-1", "ada@example.com"), ctx, f.registry, retry);
  CHECK(r.success);
  CHECK(f.fired == 1);
  CHECK(ctx.recorded_call("mail-1")->status == RecordedCall::Status::finished);
  // And now it is finished: never again.
  (void)execute(f.email("mail-1", "ada@example.com"), ctx, f.registry, retry);
  CHECK(f.fired == 1);
}

TEST_CASE("two workers on one run: the second to write gets a conflict and changes nothing") {
  Fixture f;
  Run a(f.journal, "acme", "shared");
  ExecutionContext ca(f.store, "acme");
  ca.attach(a);
  ca.add_message(Role::user, "hello");

  Run b(f.journal, "acme", "shared");  // a second worker opens the same run
  ExecutionContext cb(f.store, "acme");
  cb.attach(b);
  REQUIRE(cb.message_count() == 1);

  ca.add_message(Role::assistant, "from a");
  CHECK_THROWS_AS(cb.add_message(Role::assistant, "from b"), conflict);
  CHECK(cb.message_count() == 1);  // the failed change did not happen here either
  CHECK_THROWS_AS(execute(f.email("mail-b", "x@example.com"), cb, f.registry), conflict);
  CHECK(f.fired == 0);  // the intended entry could not be written, so the tool never ran
  CHECK(f.restored_state("shared").at("messages").size() == 2);
}

TEST_CASE("merge and forks of a journalled context are recorded and rebuilt in order") {
  Fixture f;
  std::string original;
  {
    Run run(f.journal, "acme", "r5");
    ExecutionContext parent(f.store, "acme");
    parent.attach(run);
    parent.add_artifact("a", data(1));
    auto child = parent.fork();
    child.add_artifact("from_child", data(2));  // first bound before the parent's b
    parent.add_artifact("b", data(3));
    child.add_message(Role::assistant, "child done");
    parent.merge(child);
    original = parent.state().dump();
  }
  CHECK(f.restored_state("r5").dump() == original);
  std::vector<std::string> names;
  const json parsed = json::parse(original);
  for (const auto& b : parsed.at("bindings")) names.push_back(b.at("name").get<std::string>());
  CHECK(names == std::vector<std::string>{"a", "from_child", "b"});
}

TEST_CASE("time travel: a run opened at a past point is that state, a fork goes on from there") {
  Fixture f;
  std::uint64_t middle = 0;
  std::string middle_state;
  {
    Run run(f.journal, "acme", "r6");
    ExecutionContext ctx(f.store, "acme");
    ctx.attach(run);
    ctx.add_message(Role::user, "one");
    middle = run.seq();
    middle_state = ctx.state().dump();
    ctx.add_message(Role::user, "two");
  }
  Run past(f.journal, "acme", "r6", RunAt{middle});
  ExecutionContext then(f.store, "acme");
  then.attach(past);
  CHECK(then.state().dump() == middle_state);
  CHECK_THROWS_AS(then.add_message(Role::user, "cannot rewrite history"), conflict);
  then.detach();

  f.journal->fork("acme", "r6", middle, "r6-alt");
  Run alt(f.journal, "acme", "r6-alt");
  ExecutionContext branch(f.store, "acme");
  branch.attach(alt);
  branch.add_message(Role::user, "two, differently");
  CHECK(branch.message(1).content == "two, differently");
  CHECK(f.restored_state("r6").at("messages")[1].at("content") == "two");
}

TEST_CASE("a journal entry that names a missing artifact is a clear error when resuming") {
  Fixture f;
  std::string id;
  {
    Run run(f.journal, "acme", "r7");
    ExecutionContext ctx(f.store, "acme");
    ctx.attach(run);
    id = ctx.add_artifact("doc", data("x"))->id();
  }
  f.store->remove(id, "acme");
  Run run(f.journal, "acme", "r7");
  ExecutionContext ctx(f.store, "acme");
  CHECK_THROWS_WITH(ctx.attach(run), cairn_test::ContainsSubstring("binding 'doc': artifact '" + id +
                                                                   "' version 1 is not in the store"));
  CHECK(ctx.run() == nullptr);
  // Another participant of the same name cannot attach twice.
  ExecutionContext other(f.store, "acme");
  Run fresh(f.journal, "acme", "r8");
  other.attach(fresh);
  ExecutionContext third(f.store, "acme");
  CHECK_THROWS_AS(third.attach(fresh), invalid_argument);
}

TEST_CASE("a run that ends before its context leaves the context unattached, recording nothing more") {
  Fixture f;
  ExecutionContext ctx(f.store, "acme");
  {
    Run run(f.journal, "acme", "short");
    ctx.attach(run);
    ctx.add_message(Role::user, "recorded");
  }
  CHECK(ctx.run() == nullptr);
  ctx.add_message(Role::user, "not recorded");
  CHECK(ctx.message_count() == 2);
  CHECK(f.restored_state("short").at("messages").size() == 1);
}

TEST_CASE("a context for a conversation only needs no store: its run resumes, artifact calls are clear errors") {
  auto journal = std::make_shared<InMemoryRunJournal>();
  std::string expected;
  {
    Run run(journal, "acme", "chat");
    ExecutionContext ctx("acme");
    ctx.attach(run);
    ctx.add_message(Role::user, "hello");
    ctx.add_message(Role::assistant, "hi there");
    CHECK(ctx.store() == nullptr);
    CHECK_THROWS_AS(ctx.add_artifact("x", data(1)), state_error);
    CHECK_THROWS_WITH(ctx.add_artifact("x", data(1)),
                      cairn_test::ContainsSubstring("add_artifact: this ExecutionContext has no "
                                                    "artifact store"));
    CHECK_THROWS_WITH(ctx.bind("x", nullptr),
                      cairn_test::ContainsSubstring("bind: this ExecutionContext has no artifact store"));
    ToolRegistry tools;
    tools.add(Tool{"echo", "echo", json{{"type", "object"}}, [](const json& in) { return ToolResult::ok(in); }});
    ToolCall call;
    call.id = "c1";
    call.tool = "echo";
    call.outputs = {OutputSpec{"out", ArtifactType::data, "", ""}};
    CHECK_THROWS_WITH(execute(call, ctx, tools),
                      cairn_test::ContainsSubstring("execute: this ExecutionContext has no artifact store"));
    CHECK(ctx.artifact_count() == 0);
    CHECK(ctx.message_count() == 2);  // nothing changed, nothing recorded by the refused calls
    CHECK(journal->read("acme", "chat").size() == 3);
    expected = ctx.state().dump();
  }
  Run run(journal, "acme", "chat");
  ExecutionContext resumed("acme");
  resumed.attach(run);
  CHECK(resumed.state().dump() == expected);
  CHECK_THROWS_AS(ExecutionContext(""), invalid_argument);
}
