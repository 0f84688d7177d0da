#include "cairn/version.hpp"

#include <cstring>
#include <string>
#include <type_traits>
#include <typeinfo>

#include <fmt/format.h>

#include "cairn/error.hpp"
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
  const int from_cmake =
      CAIRN_CMAKE_VERSION_MAJOR * 10000 + CAIRN_CMAKE_VERSION_MINOR * 100 + CAIRN_CMAKE_VERSION_PATCH;
  CHECK(from_cmake == CAIRN_VERSION);
}

TEST_CASE("cairn's names live in the inline ABI namespace, which shows in their mangled names") {
  static_assert(std::is_same_v<cairn::error, cairn::CAIRN_ABI_NAMESPACE::error>);
#if defined(__GNUC__) || defined(__clang__)
  // Itanium C++ ABI (g++, clang): cairn::v0::error mangles as N5cairn2v05errorE.
  CHECK(std::string(typeid(cairn::error).name()) ==
        "N5cairn" + std::to_string(std::strlen(CAIRN_DETAIL_STR(CAIRN_ABI_NAMESPACE))) +
            CAIRN_DETAIL_STR(CAIRN_ABI_NAMESPACE) + "5errorE");
#endif
}
