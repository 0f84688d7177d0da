// cairn::testing — GoogleTest reports the kit's failures. Including this header (in any one test file, or in all: the
// reporter is installed once per program) makes every failure the kit cannot throw — a fake destroyed unverified, a
// golden file that differs — an ADD_FAILURE() of the test that is running, placed at the line of its TEST: the test
// fails, the runner goes on.
//
//     #include <gtest/gtest.h>
//     #include "cairn/testing/gtest.hpp"
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "cairn/testing/report.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace testing {
namespace gtest_detail {

inline void report(const std::string& message) {
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  if (test && test->file()) {
    ADD_FAILURE_AT(test->file(), test->line()) << message;
  } else {
    ADD_FAILURE() << message;
  }
}

/// Installed once per program, before main, by the first translation unit that includes this header.
inline const bool installed = (set_failure_reporter(&report), true);

}  // namespace gtest_detail
}  // namespace testing
CAIRN_END_NAMESPACE
