#include "cairn/version.hpp"

#include <fmt/format.h>

#include "catch.hpp"

TEST_CASE("the version string agrees with the version numbers") {
  CHECK(fmt::format("{}.{}.{}", cairn::version_major, cairn::version_minor, cairn::version_patch) ==
        cairn::version_string());
  CHECK(CAIRN_VERSION_MAJOR == cairn::version_major);
}
