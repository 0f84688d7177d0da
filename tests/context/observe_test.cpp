// Observability hooks (cairn/observe.hpp): the observed store and journal, resolve and tool_call events from an
// ExecutionContext, goal and workflow transitions, the thread-safety promise and what a throwing observer does.
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/context/execution_context.hpp"
#include "cairn/context/tool.hpp"
#include "cairn/observe.hpp"
#include "cairn/run/memory_journal.hpp"
#include "catch.hpp"

using cairn::ArtifactRecord;
using cairn::Event;
using cairn::EventKind;
using nlohmann::json;

namespace {

// An event with its views copied out, so a test can look at it after on_event returned.
struct Seen {
  EventKind kind;
  std::string operation, tenant, subject, message;
  std::int64_t nanos;
  std::uint64_t bytes_in, bytes_out, items;
  cairn::errc error;
};

class Recorder final : public cairn::Observer {
 public:
  void on_event(const Event& e) noexcept override {
    std::lock_guard<std::mutex> lock(mutex_);
    seen_.push_back(Seen{e.kind, std::string(e.operation), std::string(e.tenant), std::string(e.subject),
                         std::string(e.message), static_cast<std::int64_t>(e.duration.count()), e.bytes_in, e.bytes_out,
                         e.items, e.error});
  }
  std::vector<Seen> of(EventKind kind) const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<Seen> out;
    for (const auto& s : seen_) {
      if (s.kind == kind) out.push_back(s);
    }
    return out;
  }
  std::vector<Seen> all() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return seen_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<Seen> seen_;
};

cairn::ArtifactRecord::Builder doc(json value) {
  return ArtifactRecord::builder()
      .tenant_id("acme")
      .type(cairn::ArtifactType::data)
      .description("d")
      .value(std::move(value));
}

}  // namespace

TEST_CASE("observed store reports one event per call, with sizes, and failures with their code") {
  auto rec = std::make_shared<Recorder>();
  auto store = cairn::observed(std::make_shared<cairn::InMemoryArtifactStore>(), rec);

  auto v1 = store->store(*doc({{"k", "vvvv"}}).id("a1").build());
  REQUIRE(v1->version() == 1);
  (void)store->store_if(*doc(json(1)).id("a1").build(), 1);
  REQUIRE(store->fetch("a1", "acme")->value() == json(1));
  REQUIRE(store->fetch("nope", "acme") == nullptr);
  REQUIRE(store->versions("a1", "acme").size() == 2);
  REQUIRE(store->list("acme").items.size() == 1);
  store->remove("a1", "acme");
  REQUIRE_THROWS_AS(store->remove("a1", "acme"), cairn::not_found);
  auto drawn = store->store(*doc(json("x")).build());  // the store draws the id: the event names it

  const auto ev = rec->all();
  REQUIRE(ev.size() == 9);
  for (const auto& e : ev) {
    CHECK(e.kind == EventKind::store);
    CHECK(e.tenant == "acme");
    CHECK(e.nanos > 0);
  }
  CHECK(ev[0].operation == "store");
  CHECK(ev[0].subject == "a1");
  CHECK(ev[0].bytes_in == json({{"k", "vvvv"}}).dump().size());
  CHECK(ev[1].operation == "store_if");
  CHECK(ev[2].operation == "fetch");
  CHECK(ev[2].items == 1);
  CHECK(ev[2].bytes_out == 1);
  CHECK(ev[3].items == 0);
  CHECK(ev[4].operation == "versions");
  CHECK(ev[4].items == 2);
  CHECK(ev[5].operation == "list");
  CHECK(ev[5].items == 1);
  CHECK(ev[6].operation == "remove");
  CHECK(ev[6].error == cairn::errc{});
  CHECK(ev[7].operation == "remove");
  CHECK(ev[7].error == cairn::errc::not_found);
  CHECK(ev[7].message == "artifact 'a1' not found in tenant 'acme'");
  CHECK(ev[8].subject == drawn->id());

  SECTION("a null observer is a plain pass-through, a null store an error") {
    auto plain = cairn::observed(std::make_shared<cairn::InMemoryArtifactStore>(), nullptr);
    REQUIRE(plain->store(*doc(json(2)).id("b").build())->version() == 1);
    REQUIRE_THROWS_AS(cairn::observed(nullptr, rec), cairn::invalid_argument);
  }
}

TEST_CASE("journal reports appends, reads and failures for any backend") {
  auto rec = std::make_shared<Recorder>();
  cairn::InMemoryRunJournal journal;
  journal.set_observer(rec);
  const std::uint64_t seq =
      journal.append("acme", "run-1", 0, {{0, "note", json{{"a", 1}}, 0}, {0, "note", json(2), 0}});
  REQUIRE(seq == 2);
  REQUIRE_THROWS_AS((void)journal.append("acme", "run-1", 0, {{0, "note", json(3), 0}}), cairn::conflict);
  REQUIRE(journal.read("acme", "run-1").size() == 2);
  journal.set_observer(nullptr);
  (void)journal.info("acme", "run-1");  // not reported

  const auto ev = rec->of(EventKind::journal);
  REQUIRE(ev.size() == 3);
  CHECK(ev[0].operation == "append");
  CHECK(ev[0].subject == "run-1");
  CHECK(ev[0].items == 2);
  CHECK(ev[0].bytes_in == json{{"a", 1}}.dump().size() + 1);
  CHECK(ev[0].nanos > 0);
  CHECK(ev[1].error == cairn::errc::conflict);
  CHECK_FALSE(ev[1].message.empty());
  CHECK(ev[2].operation == "read");
  CHECK(ev[2].items == 2);
  CHECK(ev[2].bytes_out == ev[0].bytes_in);
}

TEST_CASE("ExecutionContext reports resolutions and tool calls, forks inherit the observer") {
  auto rec = std::make_shared<Recorder>();
  cairn::ExecutionContext ctx(std::make_shared<cairn::InMemoryArtifactStore>(), "acme");
  ctx.set_observer(rec);
  ctx.add_artifact("cfg", doc({{"port", 3000}}));
  REQUIRE(ctx.resolve(json{{"a", "@cfg"}, {"b", "@cfg#/port"}})["b"] == 3000);
  REQUIRE_THROWS_AS((void)ctx.resolve(json{{"a", "@missing"}}), cairn::artifact_not_found);

  auto res = rec->of(EventKind::resolve);
  REQUIRE(res.size() == 2);
  CHECK(res[0].items == 2);
  CHECK(res[0].tenant == "acme");
  CHECK(res[0].bytes_out == json{{"a", {{"port", 3000}}}, {"b", 3000}}.dump().size());
  CHECK(res[1].error == cairn::errc::artifact_not_found);
  CHECK(res[1].message == "Artifact not found: @missing at /a");

  cairn::ToolRegistry tools;
  tools.add(cairn::Tool{"double", "doubles", json{{"type", "object"}}, [](const json& in) {
                          if (in.at("n").get<int>() < 0) return cairn::ToolResult::failure("negative");
                          return cairn::ToolResult::ok(json{{"out", in.at("n").get<int>() * 2}});
                        }});
  auto child = ctx.fork();
  const auto ok = cairn::execute(cairn::ToolCall::parse(R"({"tool":"double","inputs":{"n":"@cfg#/port"},
      "outputs":[{"name":"out","type":"data","description":"twice"}]})"),
                                 child, tools);
  REQUIRE(ok.success);
  const auto bad = cairn::execute(cairn::ToolCall::parse(R"({"tool":"double","inputs":{"n":-1}})"), ctx, tools);
  REQUIRE_FALSE(bad.success);
  REQUIRE_THROWS_AS((void)cairn::execute(cairn::ToolCall::parse(R"({"tool":"nope","inputs":{}})"), ctx, tools),
                    cairn::not_found);

  const auto calls = rec->of(EventKind::tool_call);
  REQUIRE(calls.size() == 3);
  CHECK(calls[0].operation == "execute");
  CHECK(calls[0].subject == "double");
  CHECK(calls[0].nanos > 0);
  CHECK(calls[0].bytes_in == json{{"n", 3000}}.dump().size());
  CHECK(calls[0].bytes_out == 4);  // 6000
  CHECK(calls[0].items == 1);
  CHECK(calls[0].error == cairn::errc{});
  CHECK(calls[1].error == cairn::errc::generic);
  CHECK(calls[1].message == "negative");
  CHECK(calls[1].items == 0);
  CHECK(calls[2].subject == "nope");
  CHECK(calls[2].error == cairn::errc::not_found);
  CHECK(calls[2].message == "Tool not found: nope");
  // Each execute resolves its inputs first: nested resolve events (the unknown tool fails before that).
  CHECK(rec->of(EventKind::resolve).size() == 4);
}

TEST_CASE("observers: function adapters drop what they throw, fan_out tells each, thread-safe counting") {
  std::atomic<int> a{0};
  std::atomic<int> b{0};
  auto throwing = cairn::observe_with([&a](const Event&) {
    ++a;
    throw std::runtime_error("observer bug");
  });
  auto counting = cairn::observe_with([&b](const Event&) { ++b; });
  REQUIRE(cairn::fan_out({nullptr, nullptr}) == nullptr);
  REQUIRE(cairn::fan_out({counting, nullptr}) == counting);
  auto store = cairn::observed(std::make_shared<cairn::InMemoryArtifactStore>(), cairn::fan_out(throwing, counting));
  // The throw is dropped: the store call succeeds and the next observer still hears the event.
  REQUIRE(store->store(*doc(json(1)).id("x").build())->version() == 1);
  CHECK(a == 1);
  CHECK(b == 1);

  SECTION("four threads on one observed store: every call heard exactly once") {
    std::atomic<std::uint64_t> count{0};
    auto counter = cairn::observe_with([&count](const Event&) { count.fetch_add(1, std::memory_order_relaxed); });
    auto shared = cairn::observed(std::make_shared<cairn::InMemoryArtifactStore>(), counter);
    constexpr int per_thread = 200;
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&shared, t] {
        for (int i = 0; i < per_thread; ++i) {
          const std::string id = "t" + std::to_string(t) + "-" + std::to_string(i % 10);
          (void)shared->store(*doc(json(i)).id(id).build());
          (void)shared->fetch(id, "acme");
        }
      });
    }
    for (auto& th : threads) th.join();
    CHECK(count.load() == 4u * per_thread * 2u);
    CHECK(shared->list("acme").items.size() == 40);
  }
}

TEST_CASE("event sizes are the length of the value's compact JSON text, numbers and escapes included") {
  const json values[] = {json(0.5),
                         json(3.0),
                         json(-0.0),
                         json(1e20),
                         json(1.5e-7),
                         json(123456789.125),
                         json(-2.5e-300),
                         json(1.7976931348623157e308),
                         json(4.9e-324),
                         json(0.1),
                         json(-7),
                         json(std::uint64_t{18446744073709551615u}),
                         json("quote \" backslash \\ newline \n tab \t bell \x07 snow \u2603"),
                         json(nullptr),
                         json(true),
                         json(false),
                         json::array(),
                         json::object(),
                         json{{"a", {1, 2.25, "x"}}, {"b", json::object()}, {"c", nullptr}},
                         json::array({json::array(), json::object(), 1e-5, 100.0})};
  for (const auto& v : values) {
    INFO(v.dump());
    CHECK(cairn::detail::json_bytes(v) == v.dump().size());
  }
}
