#include "cairn/error.hpp"

#include <functional>
#include <set>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/context/tool.hpp"
#include "cairn/goals/goal.hpp"
#include "cairn/testing/scripted_model.hpp"
#include "catch.hpp"

TEST_CASE("every cairn exception is a cairn::error and a std::runtime_error") {
  auto check = [](auto e) {
    const cairn::error& base = e;
    const std::runtime_error& std_base = e;
    CHECK(std::string(base.what()) == "boom");
    CHECK(std::string(std_base.what()) == "boom");
  };
  check(cairn::invalid_argument("boom"));
  check(cairn::invalid_artifact("boom"));
  check(cairn::not_found("boom"));
  check(cairn::artifact_not_found("boom"));
  check(cairn::invalid_template("boom"));
  check(cairn::state_error("boom"));
  check(cairn::limit_exceeded("boom"));
  check(cairn::parse_error("boom"));
  check(cairn::storage_error("boom"));
  // artifact_not_found is a kind of not_found, so a host can catch both at once.
  CHECK_THROWS_AS(throw cairn::artifact_not_found("x"), cairn::not_found);
}

TEST_CASE("the numeric value of every error code is pinned (they are a stable interface)") {
  using cairn::errc;
  // Changing a number here breaks every host that stored or compared one: add new codes at the end instead.
  CHECK(static_cast<int>(errc::generic) == 1);
  CHECK(static_cast<int>(errc::invalid_argument) == 2);
  CHECK(static_cast<int>(errc::invalid_artifact) == 3);
  CHECK(static_cast<int>(errc::not_found) == 4);
  CHECK(static_cast<int>(errc::artifact_not_found) == 5);
  CHECK(static_cast<int>(errc::invalid_template) == 6);
  CHECK(static_cast<int>(errc::state_error) == 7);
  CHECK(static_cast<int>(errc::limit_exceeded) == 8);
  CHECK(static_cast<int>(errc::parse_error) == 9);
  CHECK(static_cast<int>(errc::conflict) == 10);
  CHECK(static_cast<int>(errc::storage_error) == 11);
  CHECK(static_cast<int>(errc::invalid_goal) == 12);
  CHECK(static_cast<int>(errc::call_in_doubt) == 13);
  CHECK(static_cast<int>(errc::script_error) == 14);
  CHECK(static_cast<int>(errc::call_in_flight) == 15);
}

TEST_CASE("every code has a distinct name spelled as its enumerator, an unknown value is 'unknown'") {
  std::set<std::string_view> names;
  for (int v = 1; v <= 15; ++v) {
    auto name = cairn::to_string(static_cast<cairn::errc>(v));
    INFO(v);
    CHECK(name != "unknown");
    CHECK(names.insert(name).second);
  }
  CHECK(cairn::to_string(cairn::errc::not_found) == "not_found");
  CHECK(cairn::to_string(cairn::errc::storage_error) == "storage_error");
  CHECK(cairn::to_string(cairn::errc{}) == "unknown");
  CHECK(cairn::to_string(static_cast<cairn::errc>(16)) == "unknown");
  static_assert(cairn::to_string(cairn::errc::conflict) == "conflict", "to_string is usable at compile time");
}

TEST_CASE("each exception class reports its own code, the most specific one") {
  using cairn::errc;
  CHECK(cairn::error("x").code() == errc::generic);
  CHECK(cairn::invalid_argument("x").code() == errc::invalid_argument);
  CHECK(cairn::invalid_artifact(std::string("x")).code() == errc::invalid_artifact);
  CHECK(cairn::not_found("x").code() == errc::not_found);
  CHECK(cairn::artifact_not_found("x").code() == errc::artifact_not_found);
  CHECK(cairn::invalid_template("x").code() == errc::invalid_template);
  CHECK(cairn::state_error("x").code() == errc::state_error);
  CHECK(cairn::limit_exceeded("x").code() == errc::limit_exceeded);
  CHECK(cairn::parse_error("x").code() == errc::parse_error);
  CHECK(cairn::conflict("x", 1, 2).code() == errc::conflict);
  CHECK(cairn::storage_error("x").code() == errc::storage_error);
  CHECK(cairn::invalid_goal("x").code() == errc::invalid_goal);
  CHECK(cairn::testing::script_error("x").code() == errc::script_error);
  cairn::call_in_doubt in_doubt("x", cairn::RecordedCall{});
  CHECK(in_doubt.code() == errc::call_in_doubt);
  cairn::call_in_flight in_flight("x", cairn::RecordedCall{}, 7, 1000);
  CHECK(in_flight.code() == errc::call_in_flight);
  CHECK(in_flight.expected() == 7);
  CHECK(in_flight.lease_ends_at() == 1000);
  CHECK(dynamic_cast<const cairn::conflict*>(&in_flight) != nullptr);  // a host that reopens on conflict is right
  // Caught through a base, the code is still the thrown class's.
  try {
    throw cairn::artifact_not_found("x");
  } catch (const cairn::error& e) {
    CHECK(e.code() == errc::artifact_not_found);
  }
  // A copy keeps the code.
  cairn::error copy = cairn::limit_exceeded("x");
  CHECK(copy.code() == errc::limit_exceeded);
}

namespace {

cairn::errc code_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const cairn::error& e) {
    return e.code();
  }
  FAIL("nothing was thrown");
  return {};
}

cairn::ArtifactPtr note(const std::string& id) {
  return cairn::ArtifactRecord::builder().tenant_id("t").id(id).type("data").title(id).value(1).build();
}

}  // namespace

TEST_CASE("errors thrown by the library carry their code, so a host can branch without reading the message") {
  using cairn::errc;
  cairn::InMemoryArtifactStore store;
  auto stored = store.store(*note("a"));
  CHECK(store.fetch("missing", "t") == nullptr);  // a miss on fetch is not an error; removing one is
  CHECK(code_of([&] { store.remove("missing", "t"); }) == errc::not_found);
  CHECK(code_of([&] { (void)store.store_if(*note("a"), stored->version() + 5); }) == errc::conflict);
  CHECK(code_of([&] { (void)store.fetch("a", ""); }) == errc::invalid_argument);
  CHECK(code_of([] { (void)cairn::ArtifactRecord::parse("{not json"); }) == errc::parse_error);
  cairn::JsonLimits small;
  small.max_bytes = 10;
  CHECK(code_of([&] { (void)cairn::ArtifactRecord::parse(R"({"tenant_id":"t","type":"data","value":1})", small); }) ==
        errc::limit_exceeded);
  CHECK(code_of([] {
          (void)cairn::ArtifactRecord::from_json(nlohmann::json{{"tenant_id", "t"}});
        }) == errc::invalid_artifact);
  // The conflict's numbers are still there next to the code.
  try {
    (void)store.store_if(*note("a"), stored->version() + 5);
  } catch (const cairn::conflict& e) {
    CHECK(e.expected() == stored->version() + 5);
    CHECK(e.actual() == stored->version());
  }
}
