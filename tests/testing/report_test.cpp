// cairn/testing/report.hpp, catch2.hpp, gtest.hpp: fakes verify themselves when destroyed, and the failure reaches
// the test framework (or, with no framework reporter, stderr and the exit status) without crashing the runner.
#include "cairn/testing/report.hpp"

#include <sys/wait.h>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "cairn/testing/scripted_goals.hpp"
#include "cairn/testing/scripted_model.hpp"
#include "captured_failures.hpp"
#include "catch.hpp"
// This program's kit failures are FAIL_CHECKs of the running test (the tests below capture them on purpose).
#include "cairn/testing/catch2.hpp"

namespace ct = cairn::testing;
using cairn_test::Captured;
using cairn_test::ContainsSubstring;

namespace {

struct Child {
  int status = -1;
  std::string output;
};

/// Runs `command` with stderr joined to stdout; its exit status and everything it printed.
Child run(const std::string& command) {
  Child child;
  std::FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  REQUIRE(pipe);
  char buffer[4096];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) child.output.append(buffer, n);
  const int status = pclose(pipe);
  child.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return child;
}

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("a fake destroyed with a reply never used reports it, once, naming the fake") {
  Captured captured;
  {
    ct::ScriptedModel model("classifier");
    model.reply("invoice").reply("receipt");
    CHECK(model("first") == "invoice");
  }
  REQUIRE(captured.messages.size() == 1);
  CHECK(captured.messages[0] ==
        "scripted model 'classifier' was destroyed unverified:\n"
        "scripted model 'classifier': 1 scripted reply was never used (the next one was for call 2; 1 call was made)");
}

TEST_CASE("a failure a component swallowed is reported when the fake is destroyed") {
  Captured captured;
  {
    ct::ScriptedModel model("vendor lookup");
    model.reply("ok", {ct::prompt_contains("ACME")});
    try {
      model("Globex");
    } catch (const ct::script_error&) {
      // what an agent that swallows exceptions does
    }
  }
  REQUIRE(captured.messages.size() == 1);
  CHECK_THAT(captured.messages[0], ContainsSubstring("scripted model 'vendor lookup' was destroyed unverified:\n"
                                                     "scripted model 'vendor lookup': call 1: expected the prompt to "
                                                     "contain \"ACME\""));
}

TEST_CASE("the last copy of a fake verifies: copies share one script") {
  Captured captured;
  std::function<std::string(const std::string&)> inside_the_agent;
  {
    ct::ScriptedModel model;
    model.reply("a").reply("b");
    inside_the_agent = model;
    inside_the_agent("x");
  }
  CHECK(captured.messages.empty());  // the copy still lives
  inside_the_agent = nullptr;
  CHECK(captured.messages.size() == 1);
}

TEST_CASE("a verified fake, or one whose every reply was used, reports nothing when destroyed") {
  Captured captured;
  {
    ct::ScriptedModel used;
    used.reply("a");
    used("x");
    ct::ScriptedModel checked;
    checked.reply("a");
    CHECK_THROWS_AS(checked.verify(), ct::script_error);  // reported by verify(): not again
    ct::ScriptedModel disarmed;
    disarmed.reply("never");
    disarmed.disarm();
    auto planner = std::make_shared<ct::ScriptedPlanner>();
    ct::ScriptedModel answers;
    answers.answer({ct::prompt_contains("x")}, "y", ct::any_number());
  }
  CHECK(captured.messages.empty());
}

TEST_CASE("what happens after verify() is reported at destruction") {
  Captured captured;
  {
    ct::ScriptedModel model("m");
    model.reply("a");
    model("x");
    model.verify();
    model.reply("b");
  }
  REQUIRE(captured.messages.size() == 1);
  CHECK_THAT(captured.messages[0], ContainsSubstring("1 scripted reply was never used"));
}

TEST_CASE("an answer asked fewer times than it must is reported at destruction") {
  Captured captured;
  {
    ct::ScriptedModel model("m");
    model.answer({ct::prompt_contains("vendor")}, "ACME", ct::at_least(1));
  }
  REQUIRE(captured.messages.size() == 1);
  CHECK_THAT(captured.messages[0], ContainsSubstring("answer 1 (for prompts that contain \"vendor\") was to answer at "
                                                     "least 1 time; it answered 0"));
}

TEST_CASE("a fake destroyed while an exception unwinds reports without throwing (no std::terminate)") {
  Captured captured;
  try {
    ct::ScriptedModel model("m");
    model.reply("never used");
    throw std::runtime_error("the test failed here");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()) == "the test failed here");
  }
  CHECK(captured.messages.size() == 1);
}

// The demonstrations below run in child processes (hidden here: tag [.]).

TEST_CASE("demo: a fake left unverified fails its test through Catch2", "[.self-verify-demo]") {
  ct::ScriptedModel model("classifier");
  model.reply("invoice").reply("never used");
  CHECK(model("classify") == "invoice");
}

TEST_CASE("demo: a test that throws with an unverified fake fails, and the runner goes on", "[.self-verify-demo]") {
  ct::ScriptedModel model("lookup");
  model.reply("never used");
  throw std::runtime_error("the agent threw");
}

TEST_CASE("demo: a test after those passes", "[.self-verify-demo]") {
  ct::ScriptedModel model("m");
  model.reply("used");
  CHECK(model("x") == "used");
}

// A fake's own failure that escapes the test: the framework reports the exception (once), and the failure the
// component swallowed, found when the fake is destroyed, is placed at the test case's line.
TEST_CASE("demo: a fake's failure escapes the test", "[.escape-demo]") {
  ct::ScriptedModel model("escaping");
  model.reply("yes", {ct::prompt_contains("ACME")});
  model("Globex");
}

static const int swallow_demo_line = __LINE__ + 1;
TEST_CASE("demo: a fake's failure a component swallowed", "[.escape-demo]") {
  ct::ScriptedModel model("swallowed");
  try {
    model("anything");
  } catch (const ct::script_error&) {
  }
}

TEST_CASE("Catch2: a fake's failure that escapes is reported once, a failure found later is placed at the test") {
  const Child child = run(std::string("'") + CAIRN_TESTING_TESTS_EXE + "' '[.escape-demo]'");
  INFO(child.output);
  CHECK(child.status == 2);
  CHECK(occurrences(child.output, "scripted model 'escaping': call 1: expected the prompt to contain \"ACME\"") == 1);
  CHECK(occurrences(child.output, "scripted model 'swallowed': call 1: the script has no reply left") == 1);
  CHECK(occurrences(child.output, "catch2.hpp") == 0);
  CHECK_THAT(child.output, ContainsSubstring("report_test.cpp:" + std::to_string(swallow_demo_line) + ": FAILED:"));
  CHECK_THAT(child.output, ContainsSubstring("test cases: 2 | 2 failed"));
}

TEST_CASE("Catch2: an unverified fake fails its test case, and the runner runs on to the end") {
  const Child child = run(std::string("'") + CAIRN_TESTING_TESTS_EXE + "' '[.self-verify-demo]'");
  INFO(child.output);
  CHECK(child.status == 3);  // Catch2 exits with the number of failed assertions: two reports and one exception
  CHECK(occurrences(child.output, "was destroyed unverified") == 2);
  CHECK(occurrences(child.output, "catch2.hpp") == 0);  // placed at the test case, not in the kit
  CHECK_THAT(child.output, ContainsSubstring("scripted model 'classifier': 1 scripted reply was never used"));
  CHECK_THAT(child.output, ContainsSubstring("the agent threw"));
  CHECK_THAT(child.output, ContainsSubstring("test cases: 3 | 1 passed | 2 failed"));
}

TEST_CASE("GoogleTest: an unverified fake fails its test, and the runner runs on to the end") {
  const Child child = run(std::string("'") + CAIRN_AGENT_GTEST_EXE +
                          "' --gtest_also_run_disabled_tests --gtest_filter='SelfVerifyDemo.*'");
  INFO(child.output);
  CHECK(child.status == 1);
  CHECK(occurrences(child.output, "was destroyed unverified") == 2);
  CHECK_THAT(child.output, ContainsSubstring("[  PASSED  ] 1 test."));
  CHECK_THAT(child.output, ContainsSubstring("[  FAILED  ] 2 tests, listed below:"));
  CHECK(occurrences(child.output, "gtest.hpp") == 0);  // placed at the test, not in the kit
}

TEST_CASE("GoogleTest: a fake's failure that escapes is reported once, a failure found later is placed at the test") {
  const Child child =
      run(std::string("'") + CAIRN_AGENT_GTEST_EXE + "' --gtest_also_run_disabled_tests --gtest_filter='EscapeDemo.*'");
  INFO(child.output);
  CHECK(child.status == 1);
  CHECK(occurrences(child.output, "scripted model 'escaping': call 1: expected the prompt to contain \"ACME\"") == 1);
  CHECK(occurrences(child.output, "scripted model 'swallowed': call 1: the script has no reply left") == 1);
  CHECK(occurrences(child.output, "gtest.hpp") == 0);
  CHECK_THAT(child.output, ContainsSubstring("weather_agent_gtest_test.cpp:"));
  CHECK_THAT(child.output, ContainsSubstring("[  FAILED  ] 2 tests, listed below:"));
}

TEST_CASE("with no framework reporter, the failure goes to stderr and the process exits with status 1") {
  const Child child = run(std::string("'") + CAIRN_TESTING_DEFAULT_REPORT_EXE + "'");
  INFO(child.output);
  CHECK(child.status == 1);
  CHECK(child.output ==
        "cairn::testing failure:\n"
        "scripted model 'classifier' was destroyed unverified:\n"
        "scripted model 'classifier': 1 scripted reply was never used (the next one was for call 1; 0 calls were "
        "made)\n"
        "cairn::testing failure:\n"
        "reported while the installed reporter throws\n"
        "main: done, 2 failures to the default reporter, returning 0\n"
        "cairn::testing: 2 failures were reported with no test framework reporter installed (see above); exiting "
        "with status 1\n");
}
