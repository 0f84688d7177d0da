// InMemoryArtifactStore with a bound on its parsed values (InMemoryStoreOptions::max_parsed_bytes): records beyond
// it are kept packed and decoded when read; reads give back exactly what was stored.
#include <atomic>
#include <limits>
#include <thread>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/artifact/packed.hpp"
#include "cairn/testing/store_conformance.hpp"
#include "catch.hpp"

using namespace cairn;
using json = nlohmann::json;

namespace {

InMemoryArtifactStore bounded_store(std::size_t max_parsed_bytes, std::size_t shards = 16) {
  InMemoryStoreOptions options;
  options.shards = shards;
  options.max_parsed_bytes = max_parsed_bytes;
  return InMemoryArtifactStore(std::move(options));
}

// A value with every kind of JSON a record can hold.
json every_kind() {
  json v = {{"int", -42},
            {"unsigned", std::numeric_limits<std::uint64_t>::max()},
            {"min", std::numeric_limits<std::int64_t>::min()},
            {"float", 0.1},
            {"neg_zero", -0.0},
            {"big", 1.7976931348623157e308},
            {"text", "h\u00e9llo \u2603 \xf0\x9f\x98\x80 \"quoted\"\n"},
            {"empty", ""},
            {"long", std::string(300, 'z')},
            {"flags", {true, false, nullptr}},
            {"nested", {{"a", {{"b", {{"c", json::array()}}}}}, {"o", json::object()}}}};
  v["bytes"] = json::binary({0x00, 0xff, 0x10}, 7);
  return v;
}

ArtifactPtr full_record(const std::string& id) {
  return ArtifactRecord::builder()
      .tenant_id("acme")
      .id(id)
      .type(ArtifactType::document)
      .title("T\u00eftle")
      .description("what it is")
      .purpose("why it exists")
      .value(every_kind())
      .storage_url("s3://bucket/" + id)
      .mime_type("application/json")
      .size_bytes(1234)
      .schema_url("https://example.com/schema.json")
      .created_by("agent-7")
      .metadata({{"tool_name", "search"}, {"success", true}})
      .build();
}

json document(int seed) {
  json rows = json::array();
  for (int r = 0; r < 16; ++r) {
    rows.push_back({{"id", seed * 16 + r}, {"name", "row-" + std::to_string(r)}, {"tags", {"alpha", "beta"}}});
  }
  return json{{"rows", std::move(rows)}};
}

ArtifactPtr doc_record(const std::string& id, int seed) {
  return ArtifactRecord::builder().tenant_id("t").id(id).type("data").title(id).value(document(seed)).build();
}

}  // namespace

TEST_CASE("a packed record unpacks to an equal record, every field and kind of value included") {
  auto r = full_record("a");
  const std::string packed = detail::RecordPacker::pack(*r);
  CHECK(packed.size() < r->value().dump().size() + 200);
  auto back = detail::RecordPacker::unpack(packed);
  CHECK(*back == *r);
  CHECK(back->purpose() == "why it exists");
  CHECK(back->value().at("bytes").get_binary().subtype() == 7);
  CHECK(std::signbit(back->value().at("neg_zero").get<double>()));
  CHECK(back->value().at("min").get<std::int64_t>() == std::numeric_limits<std::int64_t>::min());

  // No value (storage_url only), purpose equal to the description, empty metadata.
  auto bare = ArtifactRecord::builder()
                  .tenant_id("t")
                  .id("b")
                  .type("file")
                  .description("d")
                  .purpose("d")
                  .storage_url("file:///x")
                  .build();
  auto bare_back = detail::RecordPacker::unpack(detail::RecordPacker::pack(*bare));
  CHECK(*bare_back == *bare);
  CHECK_FALSE(bare_back->has_value());
  CHECK(bare_back->metadata() == json::object());
}

TEST_CASE("bytes that are not a packed record are a storage_error, never a crash") {
  const std::string good = detail::RecordPacker::pack(*full_record("a"));
  CHECK_THROWS_AS(detail::RecordPacker::unpack(""), storage_error);
  CHECK_THROWS_AS(detail::RecordPacker::unpack(good.substr(0, 3)), storage_error);
  CHECK_THROWS_AS(detail::RecordPacker::unpack(good.substr(0, 40)), storage_error);
  std::string long_header = good;
  long_header[3] = '\x7f';
  CHECK_THROWS_WITH(detail::RecordPacker::unpack(long_header), Catch::Contains("header longer"));
  CHECK_THROWS_AS(detail::RecordPacker::unpack(std::string("\x01\0\0\0\xf6", 5)), storage_error);
}

TEST_CASE("InMemoryArtifactStore keeping every record packed passes the conformance suite") {
  for (const auto& check : testing::store_conformance_checks()) {
    INFO(check.name);
    auto store = bounded_store(0);
    CHECK_NOTHROW(check.run(store));
  }
}

TEST_CASE("InMemoryArtifactStore with a small parsed budget on one shard passes the conformance suite") {
  for (const auto& check : testing::store_conformance_checks()) {
    INFO(check.name);
    auto store = bounded_store(4096, 1);
    CHECK_NOTHROW(check.run(store));
  }
}

TEST_CASE("a packed store gives back every field, every version and every listing as stored") {
  auto store = bounded_store(0);
  auto v1 = store.store(*full_record("a"));
  auto v2 = store.store(*full_record("a")->revise().title("second").build());
  CHECK(v2->version() == 2);
  CHECK(*store.fetch("a", "acme") == *v2);
  CHECK(*store.fetch("a", "acme", 1) == *v1);
  CHECK(*store.fetch("a", "acme", 2) == *v2);
  CHECK(store.fetch("a", "acme", 3) == nullptr);
  CHECK(store.versions("a", "acme") == std::vector<std::uint64_t>{1, 2});
  // Kept packed: a fetch decodes a new record each time, equal to the stored one.
  CHECK(store.fetch("a", "acme").get() != v2.get());
  auto page = store.list("acme");
  REQUIRE(page.items.size() == 1);
  CHECK(*page.items[0] == *v2);
  ListQuery q;
  q.created_by = "agent-7";
  CHECK(store.list("acme", q).items.size() == 1);
  q.created_by = "someone-else";
  CHECK(store.list("acme", q).items.empty());
  CHECK_THROWS_AS(store.store_if(*full_record("a"), 1), conflict);
  CHECK(store.store_if(*full_record("a"), 2)->version() == 3);
  store.remove("a", "acme");
  CHECK(store.fetch("a", "acme") == nullptr);
  CHECK(store.list("acme").items.empty());
}

TEST_CASE("a bounded store keeps the records fetched most recently parsed and packs the others") {
  const std::size_t one = detail::json_heap_estimate(document(0));
  CHECK(one > 3 * document(0).dump().size());        // what packing is for
  auto store = bounded_store(3 * one + one / 2, 1);  // room for three parsed documents
  std::vector<ArtifactPtr> stored;
  for (int i = 0; i < 6; ++i) stored.push_back(store.store(*doc_record("d" + std::to_string(i), i)));
  stored.clear();  // the store is the only holder now
  // The three stored last are parsed: a fetch hands out the kept pointer.
  std::vector<ArtifactPtr> held(6);
  for (int i = 3; i < 6; ++i) {
    const std::string id = "d" + std::to_string(i);
    held[static_cast<std::size_t>(i)] = store.fetch(id, "t");
    CHECK(store.fetch(id, "t").get() == held[static_cast<std::size_t>(i)].get());
  }
  // d0 was packed: the fetch decodes it and keeps what it decoded.
  auto d0 = store.fetch("d0", "t");
  CHECK(d0->value() == document(0));
  CHECK(store.fetch("d0", "t").get() == d0.get());
  // Making room for it packed d3, used longest ago; d4 and d5 are still the records handed out before.
  CHECK(store.fetch("d4", "t").get() == held[4].get());
  CHECK(store.fetch("d5", "t").get() == held[5].get());
  auto d3 = store.fetch("d3", "t");
  CHECK(d3.get() != held[3].get());
  CHECK(*d3 == *held[3]);
  for (int i = 0; i < 6; ++i) CHECK(store.fetch("d" + std::to_string(i), "t")->value() == document(i));
}

TEST_CASE("a record larger than the whole budget is never kept parsed") {
  auto store = bounded_store(100, 1);
  (void)store.store(*doc_record("big", 1));
  CHECK(store.fetch("big", "t").get() != store.fetch("big", "t").get());
  CHECK(store.fetch("big", "t")->value() == document(1));
}

TEST_CASE("a bounded store stays consistent under concurrent stores, fetches, lists and removes") {
  auto store = bounded_store(4 * detail::json_heap_estimate(document(0)), 2);
  constexpr int threads = 4;
  constexpr int ops = 150;
  std::atomic<int> bad{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int i = 0; i < ops; ++i) {
        const std::string id = "k" + std::to_string(i % 10);
        switch ((i + t) % 4) {
          case 0: (void)store.store(*doc_record(id, i % 10)); break;
          case 1:
            if (auto r = store.fetch(id, "t"); r && r->value() != document(i % 10)) ++bad;
            break;
          case 2:
            for (const auto& r : store.list("t").items) {
              if (r->value().at("rows").size() != 16) ++bad;
            }
            break;
          default:
            try {
              if (i % 20 == 3) store.remove(id, "t");
            } catch (const not_found&) {
            }
            break;
        }
      }
    });
  }
  for (auto& th : pool) th.join();
  CHECK(bad == 0);
  for (const auto& r : store.list("t").items) {
    CHECK(store.versions(r->id(), "t").size() == r->version());
    CHECK(*store.fetch(r->id(), "t") == *r);
  }
}
