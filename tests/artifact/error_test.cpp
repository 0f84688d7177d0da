#include "cairn/error.hpp"

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
