// A program with no test framework: a fake destroyed unverified goes to cairn::testing's default reporter, which
// prints it to stderr and makes the process exit with status 1 although main returns 0. A reporter that throws
// falls back to the default too. report_test.cpp runs this and checks its output and exit status.
#include <cstdio>
#include <stdexcept>
#include <string>

#include "cairn/testing/report.hpp"
#include "cairn/testing/scripted_model.hpp"

int main() {
  {
    cairn::testing::ScriptedModel model("classifier");
    model.reply("invoice");
  }
  {
    cairn::testing::ScopedFailureReporter refusing([](const std::string&) { throw std::logic_error("no test runs"); });
    cairn::testing::report_failure("reported while the installed reporter throws");
  }
  std::printf("main: done, %zu failures to the default reporter, returning 0\n",
              cairn::testing::default_reported_failures());
  std::fflush(stdout);
  return 0;
}
