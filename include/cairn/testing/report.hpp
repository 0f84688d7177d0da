// cairn::testing — how the kit reports a failure that no exception can carry: a fake destroyed with replies never
// used or failures never verified, a golden file that differs. Such a failure is found in a destructor (which must
// not throw, least of all while a failing test unwinds) or after the test's last check, so it goes through a
// reporter the host installs once for its test framework:
//
//     #include <gtest/gtest.h>
//     #include "cairn/testing/gtest.hpp"      // ADD_FAILURE() for every kit failure; or cairn/testing/catch2.hpp
//
// With no reporter installed, the default prints the message to stderr and makes the process exit with status 1
// when it ends, so a test runner that passed the test still fails the run (ctest shows the output).
#pragma once

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <utility>

#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace testing {

/// Receives the message of one failure. It must not throw when it can help it (what it throws is caught, and the
/// failure then goes to the default reporter as well).
using FailureReporter = std::function<void(const std::string& message)>;

namespace report_detail {

struct State {
  std::mutex mutex;
  FailureReporter reporter;
  std::size_t default_reports = 0;
  bool exit_hook = false;
};

inline State& state() {
  static State s;
  return s;
}

inline void exit_failing() noexcept {
  State& s = state();
  std::size_t n = 0;
  {
    std::lock_guard lock(s.mutex);
    n = s.default_reports;
  }
  if (n == 0) return;
  std::fprintf(stderr,
               "cairn::testing: %zu failure%s reported with no test framework reporter installed (see above); exiting "
               "with status 1\n",
               n, n == 1 ? " was" : "s were");
  std::fflush(nullptr);
  std::_Exit(EXIT_FAILURE);
}

inline void report_default(const std::string& message) noexcept {
  State& s = state();
  bool hook = false;
  {
    std::lock_guard lock(s.mutex);
    ++s.default_reports;
    hook = !s.exit_hook;
    s.exit_hook = true;
  }
  if (hook) std::atexit(&exit_failing);
  std::fprintf(stderr, "cairn::testing failure:\n%s\n", message.c_str());
  std::fflush(stderr);
}

}  // namespace report_detail

/// Installs `reporter` for every later failure (null: the default) and returns the one it replaces. Installing it
/// once, before the tests run, is what cairn/testing/catch2.hpp and cairn/testing/gtest.hpp do.
inline FailureReporter set_failure_reporter(FailureReporter reporter) {
  report_detail::State& s = report_detail::state();
  std::lock_guard lock(s.mutex);
  std::swap(s.reporter, reporter);
  return reporter;
}

/// Reports one failure through the installed reporter, or the default one. Never throws: safe in a destructor,
/// also while an exception unwinds.
inline void report_failure(const std::string& message) noexcept {
  FailureReporter reporter;
  {
    report_detail::State& s = report_detail::state();
    std::lock_guard lock(s.mutex);
    reporter = s.reporter;
  }
  if (reporter) {
    try {
      reporter(message);
      return;
    } catch (...) {
      // The framework refused (no test running, say): fall through to the default, which cannot fail.
    }
  }
  report_detail::report_default(message);
}

/// How many failures went to the default reporter so far (each of them makes the process exit with status 1).
inline std::size_t default_reported_failures() noexcept {
  report_detail::State& s = report_detail::state();
  std::lock_guard lock(s.mutex);
  return s.default_reports;
}

/// Installs a reporter for the scope of one object and puts the previous one back when it ends (for tests of code
/// that reports failures, such as the kit's own).
class ScopedFailureReporter {
 public:
  explicit ScopedFailureReporter(FailureReporter reporter) : previous_(set_failure_reporter(std::move(reporter))) {}
  ~ScopedFailureReporter() { set_failure_reporter(std::move(previous_)); }
  ScopedFailureReporter(const ScopedFailureReporter&) = delete;
  ScopedFailureReporter& operator=(const ScopedFailureReporter&) = delete;

 private:
  FailureReporter previous_;
};

}  // namespace testing
CAIRN_END_NAMESPACE
