// cairn::testing — Catch2 reports the kit's failures. Including this header (in any one test file, or in all: the
// reporter is installed once per program) makes every failure the kit cannot throw — a fake destroyed unverified, a
// golden file that differs — a FAIL_CHECK of the test that is running: the test fails, the runner goes on.
//
//     #include <catch2/catch.hpp>              // or Catch2 3's headers; included here when not yet
//     #include "cairn/testing/catch2.hpp"
//
// A failure reported when no test case runs (a fake destroyed at exit) goes to the default reporter instead
// (stderr, exit status 1; cairn/testing/report.hpp).
#pragma once

#if !defined(FAIL_CHECK)
#if __has_include(<catch2/catch_test_macros.hpp>)
#include <catch2/catch_test_macros.hpp>
#elif __has_include(<catch2/catch.hpp>)
#include <catch2/catch.hpp>
#else
#error "cairn/testing/catch2.hpp: include Catch2 first (no <catch2/catch_test_macros.hpp> or <catch2/catch.hpp> found)"
#endif
#endif

#include <string>

#include "cairn/testing/report.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace testing {
namespace catch2_detail {

inline void report(const std::string& message) { FAIL_CHECK(message); }

/// Installed once per program, before main, by the first translation unit that includes this header.
inline const bool installed = (set_failure_reporter(&report), true);

}  // namespace catch2_detail
}  // namespace testing
CAIRN_END_NAMESPACE
