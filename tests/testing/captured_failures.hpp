// What the kit's own tests use to look at reported failures: every failure reported while a Captured lives is kept
// in `messages` instead of reaching the test framework.
#pragma once

#include <string>
#include <vector>

#include "cairn/testing/report.hpp"

namespace cairn_test {

struct Captured {
  std::vector<std::string> messages;
  cairn::testing::ScopedFailureReporter scope{[this](const std::string& m) { messages.push_back(m); }};
};

}  // namespace cairn_test
