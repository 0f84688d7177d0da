#include "cairn/version.hpp"

#include <fmt/format.h>

#include <string>

#include "catch.hpp"

TEST_CASE("the version string agrees with the version numbers") {
  CHECK(fmt::format("{}.{}.{}", cairn::version_major, cairn::version_minor, cairn::version_patch) ==
        cairn::version_string());
  CHECK(CAIRN_VERSION_MAJOR == cairn::version_major);
}

TEST_CASE("CAIRN_VERSION packs the three numbers like FMT_VERSION and agrees with CMake's project version") {
  static_assert(CAIRN_VERSION == CAIRN_VERSION_MAJOR * 10000 + CAIRN_VERSION_MINOR * 100 + CAIRN_VERSION_PATCH);
  static_assert(cairn::version_number == CAIRN_VERSION);
#if !(CAIRN_VERSION >= 0)
#error "CAIRN_VERSION must be usable in #if"
#endif
  // CAIRN_CMAKE_PROJECT_VERSION is ${PROJECT_VERSION}, passed by tests/artifact/CMakeLists.txt.
  CHECK(std::string(CAIRN_CMAKE_PROJECT_VERSION) == cairn::version_string());
  const int from_cmake = CAIRN_CMAKE_VERSION_MAJOR * 10000 + CAIRN_CMAKE_VERSION_MINOR * 100 + CAIRN_CMAKE_VERSION_PATCH;
  CHECK(from_cmake == CAIRN_VERSION);
}
