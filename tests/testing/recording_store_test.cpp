// cairn/testing/recording_store.hpp: every call recorded; the Nth call, the Nth of an operation, or calls matching a
// predicate failed with a storage error or a lost connection before or after the write was applied.
#include "cairn/testing/recording_store.hpp"

#include <thread>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/context/execution_context.hpp"
#include "cairn/context/tool.hpp"
#include "cairn/testing/store_conformance.hpp"
#include "catch.hpp"

using cairn::testing::CallOutcome;
using cairn::testing::Fault;
using cairn::testing::RecordingStore;
using cairn::testing::StoreOperation;
using cairn_test::ContainsSubstring;

namespace {

cairn::ArtifactPtr note(const std::string& id, const std::string& tenant = "acme") {
  return cairn::ArtifactRecord::builder()
      .tenant_id(tenant)
      .id(id)
      .type(cairn::ArtifactType::document)
      .title("note")
      .value(id)
      .build();
}

}  // namespace

TEST_CASE("RecordingStore passes the store conformance suite and records what each check did") {
  for (const auto& check : cairn::testing::store_conformance_checks()) {
    INFO(check.name);
    RecordingStore store(std::make_shared<cairn::InMemoryArtifactStore>());
    check.run(store);
    CHECK(!store.calls().empty());
  }
}

TEST_CASE("RecordingStore records operation, tenant, id, version and outcome of every call") {
  auto inner = std::make_shared<cairn::InMemoryArtifactStore>();
  RecordingStore store(inner);
  (void)store.store(note("a"));
  (void)store.store(note("a"));
  CHECK(store.fetch("a", "acme", 1)->version() == 1);
  CHECK(store.fetch("zzz", "acme") == nullptr);
  CHECK(store.versions("a", "acme").size() == 2);
  (void)store.list("acme", cairn::ListQuery{"a", {}, {}, 10, {}});
  store.remove("a", "acme");
  CHECK_THROWS_AS(store.remove("a", "acme"), cairn::not_found);

  const auto calls = store.calls();
  REQUIRE(calls.size() == 8);
  CHECK(calls[0].operation == StoreOperation::store);
  CHECK(calls[0].number == 1);
  CHECK(calls[0].id == "a");
  CHECK(calls[0].version == 1);
  CHECK(calls[1].version == 2);
  CHECK(calls[1].operation_number == 2);
  CHECK(calls[1].record->version() == 2);
  CHECK(calls[2].operation == StoreOperation::fetch);
  CHECK(calls[2].version == 1);
  CHECK(calls[3].record == nullptr);
  CHECK(calls[3].outcome == CallOutcome::ok);
  CHECK(calls[4].operation == StoreOperation::versions);
  CHECK(calls[5].operation == StoreOperation::list);
  CHECK(calls[5].id == "a");
  CHECK(calls[6].operation == StoreOperation::remove);
  CHECK(calls[7].outcome == CallOutcome::error);
  CHECK_THAT(calls[7].error, ContainsSubstring("not found"));
  CHECK(store.count(StoreOperation::store) == 2);
  CHECK(store.count(StoreOperation::store, "acme", "a") == 2);
  CHECK(store.count(StoreOperation::store, "other", "a") == 0);
  CHECK(store.calls([](const cairn::testing::StoreCall& c) { return c.tenant_id == "acme"; }).size() == 8);
  store.clear_calls();
  CHECK(store.calls().empty());
  (void)store.fetch("a", "acme");
  CHECK(store.calls().front().number == 9);
}

TEST_CASE("a store call the store picks the id for is recorded under the id it got") {
  RecordingStore store(std::make_shared<cairn::InMemoryArtifactStore>());
  const auto stored =
      store.store(*cairn::ArtifactRecord::builder().tenant_id("acme").type("document").title("t").value(1).build());
  CHECK(store.calls().front().id == stored->id());
  CHECK(store.count(StoreOperation::store, "acme", stored->id()) == 1);
}

TEST_CASE("RecordingStore fails the Nth call, or the Nth of one operation, with a storage_error before applying it") {
  auto inner = std::make_shared<cairn::InMemoryArtifactStore>();
  RecordingStore store(inner);

  SECTION("the Nth call") {
    store.fail_call(2);
    (void)store.store(note("a"));
    CHECK_THROWS_WITH(store.store(note("b")),
                      "RecordingStore: injected storage error on call 2 (store #2, tenant 'acme', id 'b')");
    CHECK(inner->fetch("b", "acme") == nullptr);  // nothing reached the store
    (void)store.store(note("b"));                 // the rule was used up
    CHECK(store.calls()[1].outcome == CallOutcome::injected);
    CHECK(store.count(StoreOperation::store, "acme", "b") == 1);
  }
  SECTION("the Nth fetch") {
    (void)store.store(note("a"));
    store.fail_nth(StoreOperation::fetch, 2);
    CHECK(store.fetch("a", "acme"));
    CHECK_THROWS_AS(store.fetch("a", "acme"), cairn::storage_error);
    CHECK(store.fetch("a", "acme"));
  }
}

TEST_CASE(
    "count(operation) counts every finished call of it, failed ones too, the three-argument form only those "
    "that took effect") {
  RecordingStore store(std::make_shared<cairn::InMemoryArtifactStore>());
  store.fail_nth(StoreOperation::store, 1).fail_nth(StoreOperation::store, 2, Fault::lost_connection_after_apply);
  CHECK_THROWS_AS(store.store(note("a")), cairn::storage_error);  // injected: nothing stored
  CHECK_THROWS_AS(store.store(note("a")), cairn::storage_error);  // stored, then "lost"
  CHECK(store.count(StoreOperation::store) == 2);
  CHECK(store.count(StoreOperation::store, "acme", "a") == 1);
  // StoreCall::version of a store is the version the store assigned, 0 when it assigned none.
  CHECK(store.calls()[0].version == 0);
  CHECK(store.calls()[1].version == 1);
}

TEST_CASE("fail_write(n) fails the agent's Nth write, whatever it read in between") {
  auto inner = std::make_shared<cairn::InMemoryArtifactStore>();
  RecordingStore store(inner);
  store.fail_write(2);
  (void)store.store(note("a"));     // write 1
  CHECK(store.fetch("a", "acme"));  // reads are not counted
  (void)store.list("acme");
  CHECK_THROWS_WITH(store.store(note("b")),  // write 2
                    "RecordingStore: injected storage error on call 4 (store #2, tenant 'acme', id 'b')");
  store.remove("a", "acme");  // write 3
  const auto calls = store.calls();
  REQUIRE(calls.size() == 5);
  CHECK(calls[0].write_number == 1);
  CHECK(calls[1].write_number == 0);
  CHECK(calls[3].write_number == 2);
  CHECK(calls[4].write_number == 3);
  CHECK(cairn::testing::is_write(StoreOperation::store_if));
  CHECK_FALSE(cairn::testing::is_write(StoreOperation::versions));
}

TEST_CASE("start_counting() numbers calls from 1 again, for the record and for the fault rules") {
  auto inner = std::make_shared<cairn::InMemoryArtifactStore>();
  RecordingStore store(inner);
  // The test's setup, through the recording store: three writes and a read.
  (void)store.store(note("seed1"));
  (void)store.store(note("seed2"));
  (void)store.fetch("seed1", "acme");
  store.remove("seed2", "acme");

  SECTION("fail_call counts from the point the test chose") {
    store.start_counting();
    store.fail_call(2);
    (void)store.fetch("seed1", "acme");                             // call 1
    CHECK_THROWS_AS(store.store(note("x")), cairn::storage_error);  // call 2
    const auto calls = store.calls();
    REQUIRE(calls.size() == 2);
    CHECK(calls[0].number == 1);
    CHECK(calls[1].number == 2);
    CHECK(calls[1].operation_number == 1);
    CHECK(calls[1].write_number == 1);
  }
  SECTION("a rule added before it matches the new numbers") {
    store.fail_write(1);
    store.start_counting();
    CHECK_THROWS_AS(store.store(note("x")), cairn::storage_error);
    (void)store.store(note("x"));
  }
  SECTION("clear_calls() forgets the record but keeps counting") {
    store.clear_calls();
    (void)store.fetch("seed1", "acme");
    CHECK(store.calls().front().number == 5);
  }
}

TEST_CASE("RecordingStore fails calls that match a predicate, as often as asked") {
  RecordingStore store(std::make_shared<cairn::InMemoryArtifactStore>());
  store.fail_when(
      [](const cairn::testing::StoreCall& c) { return c.operation == StoreOperation::store && c.tenant_id == "flaky"; },
      Fault::storage_error, 2);
  CHECK_THROWS_AS(store.store(note("a", "flaky")), cairn::storage_error);
  (void)store.store(note("a", "acme"));
  CHECK_THROWS_AS(store.store(note("a", "flaky")), cairn::storage_error);
  CHECK(store.store(note("a", "flaky"))->version() == 1);

  SECTION("the predicate sees the record being stored") {
    store.fail_when([](const cairn::testing::StoreCall& c) { return c.record && c.record->value() == "poison"; });
    CHECK_THROWS_AS(store.store(note("poison")), cairn::storage_error);
    store.clear_faults();
    CHECK(store.store(note("poison")));
  }
}

TEST_CASE("a lost connection after the write was applied: the caller sees an error, the store has the record") {
  auto inner = std::make_shared<cairn::InMemoryArtifactStore>();
  RecordingStore store(inner);
  store.fail_nth(StoreOperation::store, 1, Fault::lost_connection_after_apply);
  CHECK_THROWS_WITH(
      store.store(note("report")),
      "RecordingStore: simulated lost connection after call 1 (store #1, tenant 'acme', id 'report') was applied");
  REQUIRE(inner->fetch("report", "acme"));
  CHECK(store.calls().front().outcome == CallOutcome::lost_after_apply);
  CHECK(store.calls().front().version == 1);
  // A host that retries blindly adds a second version: exactly what this fault is there to show.
  (void)store.store(note("report"));
  CHECK(inner->versions("report", "acme").size() == 2);
  CHECK(store.count(StoreOperation::store, "acme", "report") == 2);
}

TEST_CASE("a lost connection before the write reached the store: nothing is applied") {
  auto inner = std::make_shared<cairn::InMemoryArtifactStore>();
  RecordingStore store(inner);
  store.fail_call(1, Fault::lost_connection_before_apply);
  CHECK_THROWS_WITH(store.store(note("report")), ContainsSubstring("simulated lost connection before call 1"));
  CHECK(inner->fetch("report", "acme") == nullptr);
  CHECK(store.calls().front().outcome == CallOutcome::injected);
  CHECK(store.count(StoreOperation::store, "acme", "report") == 0);
}

TEST_CASE("RecordingStore under ExecutionContext and execute: the tool output was stored once") {
  auto store = std::make_shared<RecordingStore>(std::make_shared<cairn::InMemoryArtifactStore>());
  cairn::ExecutionContext ctx(store, "acme");
  cairn::ToolRegistry tools;
  tools.add(cairn::Tool{"double", "doubles", {{"type", "object"}}, [](const nlohmann::json& in) {
                          return cairn::ToolResult::ok(in.at("x").get<int>() * 2);
                        }});
  const auto result = cairn::execute(
      cairn::ToolCall{"double", {{"x", 21}}, {{"doubled", cairn::ArtifactType::data, "twice x", ""}}}, ctx, tools);
  REQUIRE(result.success);
  const auto id = ctx.get_artifact("doubled")->id();
  CHECK(store->count(StoreOperation::store, "acme", id) == 1);

  SECTION("a failed store makes the tool call fail and binds nothing") {
    store->fail_nth(StoreOperation::store, 2);
    CHECK_THROWS_AS(
        cairn::execute(cairn::ToolCall{"double", {{"x", 1}}, {{"again", cairn::ArtifactType::data, "x", ""}}}, ctx,
                       tools),
        cairn::storage_error);
    CHECK_FALSE(ctx.has_artifact("again"));
  }
}

TEST_CASE("RecordingStore is thread-safe: every call of many threads is recorded once, with distinct numbers") {
  RecordingStore store(std::make_shared<cairn::InMemoryArtifactStore>());
  store.fail_when([](const cairn::testing::StoreCall& c) { return c.number % 10 == 0; });
  std::vector<std::thread> threads;
  std::atomic<int> failed{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&store, &failed, t] {
      for (int i = 0; i < 100; ++i) {
        try {
          (void)store.store(note("n" + std::to_string(i), "t" + std::to_string(t)));
        } catch (const cairn::storage_error&) {
          ++failed;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  const auto calls = store.calls();
  REQUIRE(calls.size() == 400);
  for (std::size_t i = 0; i < calls.size(); ++i) CHECK(calls[i].number == i + 1);
  CHECK(failed == 40);
}

TEST_CASE("RecordingStore refuses a null inner store and a null predicate") {
  CHECK_THROWS_AS(RecordingStore(nullptr), cairn::invalid_argument);
  RecordingStore store(std::make_shared<cairn::InMemoryArtifactStore>());
  CHECK_THROWS_AS(store.fail_when(nullptr), cairn::invalid_argument);
}

TEST_CASE("RecordingStore forwards search and vectors, records them, and injects faults into them") {
  auto inner = std::make_shared<cairn::InMemoryArtifactStore>();
  RecordingStore store(inner);
  CHECK(store.keeps_embeddings());
  const auto stored = store.store_embedded(*note("v"), cairn::Embedding{"m", {1.0f, 0.0f}});
  CHECK(stored->version() == 1);
  REQUIRE(inner->embedding("v", "acme", 1));
  CHECK(store.embedding("v", "acme", 1)->values == std::vector<float>{1.0f, 0.0f});
  cairn::SearchQuery q;
  q.vector = cairn::Embedding{"m", {1.0f, 0.1f}};
  REQUIRE(store.search("acme", q).hits.size() == 1);
  CHECK(store.reindex("acme") == 0);
  const auto calls = store.calls();
  REQUIRE(calls.size() == 3);
  CHECK(calls[0].operation == StoreOperation::store_embedded);
  CHECK(calls[0].write_number == 1);
  CHECK(calls[0].version == 1);
  CHECK(calls[1].operation == StoreOperation::search);
  CHECK(calls[2].operation == StoreOperation::reindex);
  store.fail_nth(StoreOperation::search, 2);
  CHECK_THROWS_AS(store.search("acme", q), cairn::storage_error);
  store.fail_nth(StoreOperation::store_embedded, 2, Fault::lost_connection_after_apply);
  CHECK_THROWS_AS(store.store_embedded(*note("w"), cairn::Embedding{"m", {0.0f, 1.0f}}), cairn::storage_error);
  CHECK(inner->embedding("w", "acme", 1));  // applied, then "lost"
}
