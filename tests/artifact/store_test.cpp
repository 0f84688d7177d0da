// The parts of the ArtifactStore interface that every backend shares.
#include "cairn/artifact/store.hpp"

#include <algorithm>
#include <set>

#include "cairn/artifact/memory_store.hpp"
#include "catch.hpp"

using namespace cairn;
using cairn_test::ContainsSubstring;

TEST_CASE("store(ArtifactPtr) stores the pointee and rejects null") {
  InMemoryArtifactStore s;
  ArtifactStore& iface = s;
  auto r = ArtifactRecord::builder().tenant_id("t").type("data").title("x").value(1).build();
  CHECK(iface.store(r)->version() == 1);
  CHECK_THROWS_WITH(iface.store(ArtifactPtr{}), "store: record must not be null");
}

TEST_CASE("the shared helpers give one message for missing and foreign ids") {
  CHECK(detail::artifact_missing_message("x", "t") == "artifact 'x' not found in tenant 't'");
  CHECK_THROWS_WITH(detail::check_tenant(""), "tenant_id: must not be empty");
  ListQuery q;
  q.limit = 0;
  CHECK_THROWS_WITH(detail::check_list_query(q), "list: limit must be between 1 and 1000 (got 0)");
  q.limit = 1000;
  CHECK_NOTHROW(detail::check_list_query(q));
}

TEST_CASE("stamp sets id and version, keeps a given created_at and shares the value") {
  auto r = ArtifactRecord::builder().tenant_id("t").type("data").title("x").value("v").build();
  auto s = detail::stamp(*r, "id", 4);
  CHECK(s->id() == "id");
  CHECK(s->version() == 4);
  CHECK(s->created_at() > 0);
  CHECK(s->shared_value().get() == r->shared_value().get());
  auto dated = ArtifactRecord::builder().tenant_id("t").type("data").title("x").value("v").created_at(7).build();
  CHECK(detail::stamp(*dated, "id", 1)->created_at() == 7);
}

TEST_CASE("uuid_v4 and random_string draw from the CSPRNG in the right shape") {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const auto u = detail::uuid_v4();
    REQUIRE(u.size() == 36);
    CHECK(u[14] == '4');
    CHECK(std::string("89ab").find(u[19]) != std::string::npos);
    seen.insert(u);
  }
  CHECK(seen.size() == 1000);
  const auto s = detail::random_string(4000, "ab");
  CHECK(s.size() == 4000);
  const auto as = std::count(s.begin(), s.end(), 'a');
  CHECK(as > 1700);  // a fair coin: 2000 ± 3 sigma is about ±95
  CHECK(as < 2300);
  CHECK_THROWS_AS(detail::random_string(1, ""), invalid_argument);
}

TEST_CASE("iso8601_ms formats like JavaScript's toISOString") {
  CHECK(detail::iso8601_ms(0) == "1970-01-01T00:00:00.000Z");
  CHECK(detail::iso8601_ms(1700000000123) == "2023-11-14T22:13:20.123Z");
  CHECK(detail::iso8601_ms(951782400000) == "2000-02-29T00:00:00.000Z");
  CHECK(detail::iso8601_ms(-1) == "1969-12-31T23:59:59.999Z");
}
