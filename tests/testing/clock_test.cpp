// cairn/testing/clock.hpp: ManualClock and SequentialIds, and every layer that stamps times or draws ids taking
// them from the injected source (stores, ExecutionContext and its forks, GoalStack and GoalEngine, Handoff), so that
// a whole run is reproducible byte for byte.
#include "cairn/testing/clock.hpp"

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <regex>
#include <set>
#include <thread>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/context/execution_context.hpp"
#include "cairn/context/tool.hpp"
#include "cairn/goals/engine.hpp"
#include "cairn/goals/goal_stack.hpp"
#include "cairn/handoff/handoff.hpp"
#include "cairn/testing/scripted_goals.hpp"
#include "catch.hpp"
#if defined(CAIRN_TESTING_WITH_SQLITE)
#include "cairn/store/sqlite_store.hpp"
#endif
#if defined(CAIRN_TESTING_WITH_POSTGRES)
#include "cairn/store/postgres_store.hpp"
#endif

using cairn::testing::ManualClock;
using cairn::testing::SequentialIds;
using nlohmann::json;

namespace {

cairn::ArtifactRecord::Builder note(const std::string& text) {
  auto b = cairn::ArtifactRecord::builder();
  b.tenant_id("acme").type(cairn::ArtifactType::document).title("note").value(text);
  return b;
}

void check_deterministic_store(cairn::ArtifactStore& store, ManualClock& clock) {
  clock.set(1700000000123);
  const auto first = store.store(*note("one").build());
  CHECK(first->id() == "00000000-0000-4000-8000-000000000001");
  CHECK(first->created_at() == 1700000000123);
  clock.advance(5);
  const auto second = store.store(*note("two").build());
  CHECK(second->id() == "00000000-0000-4000-8000-000000000002");
  CHECK(second->created_at() == 1700000000128);
  // A record that brings its own id and time keeps them; the clock and ids are only asked for what is missing.
  const auto own = store.store(*note("three").id("mine").created_at(42).build());
  CHECK(own->id() == "mine");
  CHECK(own->created_at() == 42);
  const auto again = store.fetch(first->id(), "acme");
  REQUIRE(again);
  CHECK(again->created_at() == 1700000000123);
}

}  // namespace

TEST_CASE("cairn/clock.hpp: SystemClock and RandomIds are the real sources, and null means them too") {
  cairn::SystemClock system;
  const auto before = cairn::detail::now_ms();
  const auto t = system.now_ms();
  CHECK(t >= before);
  CHECK(t <= cairn::detail::now_ms());
  CHECK(cairn::detail::now_ms(nullptr) >= t);
  ManualClock manual(77);
  CHECK(cairn::detail::now_ms(&manual) == 77);

  cairn::RandomIds random;
  const std::regex v4("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
  CHECK(std::regex_match(random.uuid(), v4));
  CHECK(random.uuid() != random.uuid());
  CHECK(std::regex_match(cairn::detail::new_uuid(nullptr), v4));
  CHECK(random.token(8, "xy").find_first_not_of("xy") == std::string::npos);
  SequentialIds ids;
  CHECK(cairn::detail::new_uuid(&ids) == "00000000-0000-4000-8000-000000000001");
  CHECK(cairn::detail::new_token(&ids, 3, "ab") == "aab");
  CHECK(cairn::detail::new_token(nullptr, 3, "ab").size() == 3);
}

TEST_CASE("ManualClock stands still, moves when told, and can advance itself on every read") {
  ManualClock clock;
  CHECK(clock.now_ms() == ManualClock::default_start_ms);
  CHECK(clock.now_ms() == ManualClock::default_start_ms);
  CHECK(clock.advance(250) == ManualClock::default_start_ms + 250);
  CHECK(clock.advance(std::chrono::seconds(1)) == ManualClock::default_start_ms + 1250);
  clock.set(5);
  CHECK(clock.now_ms() == 5);
  clock.set_auto_advance(10);
  CHECK(clock.now_ms() == 5);
  CHECK(clock.now_ms() == 15);
  CHECK(clock.peek() == 25);
  CHECK(clock.reads() == 5);

  ManualClock ticking(100, 1);
  CHECK(ticking.now_ms() == 100);
  CHECK(ticking.now_ms() == 101);
}

TEST_CASE("ManualClock with auto-advance hands every reader of many threads a different time") {
  ManualClock clock(1000, 1);
  std::vector<std::vector<std::int64_t>> seen(4);
  std::vector<std::thread> threads;
  for (auto& s : seen) {
    threads.emplace_back([&clock, &s] {
      for (int i = 0; i < 1000; ++i) s.push_back(clock.now_ms());
    });
  }
  for (auto& t : threads) t.join();
  std::set<std::int64_t> all;
  for (const auto& s : seen) all.insert(s.begin(), s.end());
  CHECK(all.size() == 4000);
  CHECK(*all.begin() == 1000);
  CHECK(*all.rbegin() == 4999);
}

TEST_CASE("SequentialIds counts uuids and tokens separately, in well-formed text") {
  SequentialIds ids;
  CHECK(ids.uuid() == "00000000-0000-4000-8000-000000000001");
  CHECK(ids.uuid() == "00000000-0000-4000-8000-000000000002");
  CHECK(ids.token(4, "abcdefghijklmnopqrstuvwxyz0123456789") == "aaab");
  CHECK(ids.token(4, "abcdefghijklmnopqrstuvwxyz0123456789") == "aaac");
  CHECK(ids.uuid() == "00000000-0000-4000-8000-000000000003");
  CHECK(ids.uuids_issued() == 3);
  CHECK(ids.tokens_issued() == 2);
  const std::regex v4("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
  CHECK(std::regex_match(SequentialIds::format_uuid(0xabcdef), v4));
  CHECK(SequentialIds::format_uuid(0xabcdef) == "00000000-0000-4000-8000-000000abcdef");

  SECTION("tokens are the counter in the alphabet's base and wrap when they no longer fit") {
    SequentialIds binary(5);
    CHECK(binary.token(4, "01") == "0101");
    CHECK(binary.token(2, "01") == "10");  // 6 = 110, the top digit does not fit
    CHECK(binary.token(0, "01").empty());
    CHECK_THROWS_AS(binary.token(3, ""), cairn::invalid_argument);
  }
}

TEST_CASE("SequentialIds never hands out the same uuid twice across threads") {
  SequentialIds ids;
  std::vector<std::vector<std::string>> seen(4);
  std::vector<std::thread> threads;
  for (auto& s : seen) {
    threads.emplace_back([&ids, &s] {
      for (int i = 0; i < 500; ++i) s.push_back(ids.uuid());
    });
  }
  for (auto& t : threads) t.join();
  std::set<std::string> all;
  for (const auto& s : seen) all.insert(s.begin(), s.end());
  CHECK(all.size() == 2000);
  CHECK(all.count(SequentialIds::format_uuid(2000)) == 1);
}

TEST_CASE("InMemoryArtifactStore takes created_at and missing ids from the injected clock and ids") {
  auto clock = std::make_shared<ManualClock>();
  cairn::InMemoryStoreOptions options;
  options.clock = clock;
  options.ids = std::make_shared<SequentialIds>();
  options.shards = 2;
  cairn::InMemoryArtifactStore store(options);
  check_deterministic_store(store, *clock);

  SECTION("without them it uses the system clock and random UUIDs, as before") {
    cairn::InMemoryArtifactStore plain;
    const auto before = cairn::detail::now_ms();
    const auto r = plain.store(*note("x").build());
    CHECK(r->created_at() >= before);
    CHECK(r->id() != "00000000-0000-4000-8000-000000000001");
    CHECK(r->id().size() == 36);
  }
}

#if defined(CAIRN_TESTING_WITH_SQLITE)
TEST_CASE("SqliteArtifactStore takes created_at and missing ids from SqliteOptions") {
  std::string dir = (std::filesystem::temp_directory_path() / "cairn-clock-test-XXXXXX").string();
  REQUIRE(mkdtemp(dir.data()));
  {
    auto clock = std::make_shared<ManualClock>();
    cairn::SqliteOptions options;
    options.clock = clock;
    options.ids = std::make_shared<SequentialIds>();
    cairn::SqliteArtifactStore store(dir + "/clock.db", options);
    check_deterministic_store(store, *clock);
  }
  std::filesystem::remove_all(dir);
}
#endif

#if defined(CAIRN_TESTING_WITH_POSTGRES)
TEST_CASE("PostgresArtifactStore takes created_at and missing ids from PostgresOptions") {
  const char* conninfo = std::getenv("CAIRN_TEST_PG_CONNINFO");
  if (!conninfo || !*conninfo) {
    FAIL("CAIRN_TEST_PG_CONNINFO is not set: run the tests with scripts/test, which starts a PostgreSQL server");
  }
  auto clock = std::make_shared<ManualClock>();
  cairn::PostgresOptions options;
  options.clock = clock;
  // Sequential ids from a random start, so that reruns against the same database do not meet old artifacts.
  options.ids = std::make_shared<SequentialIds>(std::random_device{}() * 1000ull + 1);
  cairn::PostgresArtifactStore store(conninfo, options);
  const std::string tenant = "clock-" + cairn::detail::random_string(10, "abcdefghijklmnopqrstuvwxyz");
  clock->set(1700000000777);
  const auto first = store.store(*note("one").tenant_id(tenant).build());
  CHECK(first->id().rfind("00000000-0000-4000-8000-", 0) == 0);
  CHECK(first->created_at() == 1700000000777);
  const auto second = store.store(*note("two").tenant_id(tenant).build());
  CHECK(second->id() != first->id());
  const auto again = store.fetch(first->id(), tenant);
  REQUIRE(again);
  CHECK(again->created_at() == 1700000000777);
}
#endif

TEST_CASE("ExecutionContext stamps messages with its clock, and its forks share that clock") {
  auto clock = std::make_shared<ManualClock>(1000);
  cairn::ExecutionContext ctx(std::make_shared<cairn::InMemoryArtifactStore>(), "acme", clock);
  CHECK(ctx.clock() == clock);
  ctx.add_message(cairn::Role::user, "hello");
  clock->advance(10);
  auto child = ctx.fork();
  child.add_message(cairn::Role::assistant, "hi");
  CHECK(ctx.message(0).timestamp == 1000);
  CHECK(child.message(1).timestamp == 1010);
  ctx.merge(child);
  CHECK(ctx.message(1).timestamp == 1010);

  cairn::ExecutionContext plain(std::make_shared<cairn::InMemoryArtifactStore>(), "acme");
  CHECK(plain.clock() == nullptr);
  plain.add_message(cairn::Role::user, "x");
  CHECK(plain.message(0).timestamp > ManualClock::default_start_ms);
}

TEST_CASE("GoalStack stamps goals with its clock, keeps it when copied and when read back") {
  auto clock = std::make_shared<ManualClock>(500);
  cairn::GoalStack stack(clock);
  cairn::Goal g;
  g.id = "g1";
  g.gloss = "Do it";
  stack.push(g);
  CHECK(stack.find("g1")->created_at == 500);
  clock->advance(7);
  stack.add_evidence("g1", "k", 1);
  CHECK(stack.find("g1")->updated_at == 507);
  cairn::GoalStack copy = stack;
  clock->advance(1);
  copy.update_status("g1", cairn::GoalStatus::active);
  CHECK(copy.find("g1")->updated_at == 508);
  auto read = cairn::GoalStack::from_json(stack.to_json(), clock);
  CHECK(read.clock() == clock);
  clock->advance(1);
  read.update_status("g1", cairn::GoalStatus::achieved);
  CHECK(read.find("g1")->updated_at == 509);
}

TEST_CASE("GoalEngine stamps goals with the context's clock unless its options name another") {
  auto context_clock = std::make_shared<ManualClock>(2000);
  auto store = std::make_shared<cairn::InMemoryArtifactStore>();
  cairn::ExecutionContext ctx(store, "acme", context_clock);
  cairn::ToolRegistry tools;
  auto interpreter = std::make_shared<cairn::testing::ScriptedInterpreter>();
  auto planner = std::make_shared<cairn::testing::ScriptedPlanner>();
  interpreter->reply(cairn::Interpretation::new_goal("Say hello"));
  cairn::GoalPlan plan;
  cairn::SubgoalSpec say;
  say.gloss = "Greet";
  say.predicate = cairn::Predicate{"present_info", {{"data", "hello"}}};
  plan.subgoals = {say};
  planner->reply(plan);

  SECTION("the context's clock") {
    cairn::GoalEngine engine(ctx, tools, {interpreter, planner});
    CHECK(engine.goals().clock() == context_clock);
    engine.handle("hi");
    for (const auto& g : engine.goals().goals()) {
      CHECK(g.created_at == 2000);
      CHECK(g.updated_at == 2000);
    }
    // A restored engine keeps stamping with it.
    cairn::GoalEngine restored(ctx, tools, {interpreter, planner});
    restored.restore(engine.to_json());
    CHECK(restored.goals().clock() == context_clock);
  }
  SECTION("a clock of its own") {
    cairn::GoalEngineOptions options;
    options.clock = std::make_shared<ManualClock>(3000);
    cairn::GoalEngine engine(ctx, tools, {interpreter, planner}, options);
    engine.handle("hi");
    for (const auto& g : engine.goals().goals()) CHECK(g.created_at == 3000);
    CHECK(ctx.message(0).timestamp == 2000);  // messages still come from the context's clock
  }
  interpreter->verify();
  planner->verify();
}

TEST_CASE("Handoff draws the random part of its ids from HandoffOptions::ids") {
  auto store = std::make_shared<cairn::InMemoryArtifactStore>();
  cairn::HandoffOptions options;
  options.id_prefix = "doc";
  options.ids = std::make_shared<SequentialIds>();
  cairn::Handoff handoff(store, "acme", options);
  CHECK(handoff.accept_reply("ARTIFACT\nSUMMARY: s\nbody", "writer").artifact->id() == "doc_aaab");
  CHECK(handoff.accept_reply("ARTIFACT\nSUMMARY: s\nbody", "writer").artifact->id() == "doc_aaac");

  SECTION("a taken id makes it draw the next one") {
    (void)store->store(*note("squatter").tenant_id("acme").id("doc_aaae").build());
    CHECK(handoff.accept_reply("ARTIFACT\nSUMMARY: s\nbody", "writer").artifact->id() == "doc_aaad");
    CHECK(handoff.accept_reply("ARTIFACT\nSUMMARY: s\nbody", "writer").artifact->id() == "doc_aaaf");
  }
}

namespace {

// One run through every layer: a store, a context, a goal engine (with a tool), a handoff. Returns all of it as
// JSON text.
std::string whole_run() {
  auto clock = std::make_shared<ManualClock>(ManualClock::default_start_ms, 1);
  auto ids = std::make_shared<SequentialIds>();
  cairn::InMemoryStoreOptions store_options;
  store_options.clock = clock;
  store_options.ids = ids;
  auto store = std::make_shared<cairn::InMemoryArtifactStore>(store_options);
  cairn::ExecutionContext ctx(store, "acme", clock);
  cairn::HandoffOptions handoff_options;
  handoff_options.ids = ids;
  cairn::Handoff handoff(store, "acme", handoff_options);

  cairn::ToolRegistry tools;
  tools.add(cairn::Tool{"summarize",
                        "Has a writer summarize the topic",
                        {{"type", "object"}, {"properties", {{"topic", {{"type", "string"}}}}}},
                        [&handoff](const json& in) {
                          const auto r = handoff.accept_reply(
                              "ARTIFACT\nSUMMARY: about " + in.at("topic").get<std::string>() + "\nLong text.",
                              "writer");
                          return cairn::ToolResult::ok(r.text);
                        }});
  auto interpreter = std::make_shared<cairn::testing::ScriptedInterpreter>();
  interpreter->reply(cairn::Interpretation::new_goal("Summarize", {{"topic", "rivers"}}));
  auto planner = std::make_shared<cairn::testing::ScriptedPlanner>();
  cairn::GoalPlan plan;
  cairn::SubgoalSpec use;
  use.gloss = "Summarize it";
  use.predicate = cairn::Predicate{"use_tool", {{"tool", "summarize"}, {"output", "summary"}}};
  cairn::SubgoalSpec show;
  show.gloss = "Show it";
  show.predicate = cairn::Predicate{"present_info", {{"key", "summary"}}};
  plan.subgoals = {use, show};
  planner->reply(plan);
  cairn::GoalEngine engine(ctx, tools, {interpreter, planner});
  engine.handle("Summarize rivers for me");
  ctx.add_artifact("extra", note("untimed"));  // a record without id or time: both come from the fakes

  json bindings = json::array();
  for (const auto& a : ctx.list_artifacts()) bindings.push_back({{"name", a.name}, {"record", *a.record}});
  json messages = json::array();
  for (const auto& m : ctx.messages()) messages.push_back(m);
  return json{{"bindings", bindings},
              {"messages", messages},
              {"engine", engine.to_json()},
              {"store", store->list("acme").items.size()}}
      .dump(2);
}

}  // namespace

TEST_CASE(
    "a whole run (store, context, goals, handoff) with ManualClock and SequentialIds is reproducible byte for byte") {
  const std::string first = whole_run();
  const std::string second = whole_run();
  CHECK(first == second);
  // And it really went through the fakes: no wall-clock time, no random id.
  CHECK(first.find("\"00000000-0000-4000-8000-000000000001\"") != std::string::npos);
  CHECK(first.find("artifact_aaab") != std::string::npos);
  CHECK(first.find("\"timestamp\": 1700000000000") != std::string::npos);
  const auto parsed = json::parse(first);
  for (const auto& g : parsed["engine"]["goals"]) CHECK(g["created_at"].get<std::int64_t>() < 1700000001000);
}
