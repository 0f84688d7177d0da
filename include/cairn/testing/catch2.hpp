// cairn::testing — Catch2 reports the kit's failures. Including this header (in any one test file, or in all: the
// reporter is installed once per program) makes every failure the kit cannot throw — a fake destroyed unverified, a
// golden file that differs — a failed check of the test that is running, placed at the line of its TEST_CASE: the
// test fails, the runner goes on.
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

#if defined(CATCH_VERSION_MAJOR) && CATCH_VERSION_MAJOR >= 3
#include <catch2/catch_test_case_info.hpp>
#include <catch2/interfaces/catch_interfaces_capture.hpp>
#include <catch2/interfaces/catch_interfaces_registry_hub.hpp>
#include <catch2/interfaces/catch_interfaces_testcase.hpp>
#endif

#include <string>

#include "cairn/testing/report.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace testing {
namespace catch2_detail {

/// The line of the TEST_CASE that is running (where Catch2 also places an exception that escapes it); `fallback`
/// when it is not found. Throws, as FAIL_CHECK does, when no test case runs.
inline Catch::SourceLineInfo running_test_case(const Catch::SourceLineInfo& fallback) {
  const std::string name = Catch::getResultCapture().getCurrentTestName();
  const auto& registry = Catch::getRegistryHub().getTestCaseRegistry();
#if defined(CATCH_VERSION_MAJOR) && CATCH_VERSION_MAJOR >= 3
  for (const Catch::TestCaseInfo* info : registry.getAllInfos()) {
    if (info && info->name == name) return info->lineInfo;
  }
#else
  for (const Catch::TestCase& test : registry.getAllTests()) {
    if (test.name == name) return test.lineInfo;
  }
#endif
  return fallback;
}

/// FAIL_CHECK(message), placed at the running test case instead of this line.
inline void report(const std::string& message) {
  Catch::AssertionHandler handler("FAIL_CHECK", running_test_case(CATCH_INTERNAL_LINEINFO), Catch::StringRef(),
                                  Catch::ResultDisposition::ContinueOnFailure);
  handler.handleMessage(Catch::ResultWas::ExplicitFailure, std::string(message));
  handler.complete();
}

/// Installed once per program, before main, by the first translation unit that includes this header.
inline const bool installed = (set_failure_reporter(&report), true);

}  // namespace catch2_detail
}  // namespace testing
CAIRN_END_NAMESPACE
