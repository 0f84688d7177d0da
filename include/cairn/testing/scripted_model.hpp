// cairn::testing — a scripted stand-in for the model a host plugs into cairn (`std::string(const std::string&)`),
// usable from any test framework. The typed fakes of the goal engine's interfaces are in
// cairn/testing/scripted_goals.hpp, so that a test of a plain model call does not compile the goals layer.
//
// A fake answers from what the test wrote: a queue of replies taken in order (`reply`), and replies that answer any
// prompt matching their expectations, a bounded number of times (`answer`). It records every prompt, and fails with a
// cairn::testing::script_error naming the fake, the call and the prompt (all of it, lines as lines, the place an
// expectation was about marked) when the script has nothing for a call or an expectation does not hold. A component
// may catch what a fake throws, so every failure is also remembered, and the fake verifies itself when its last copy
// is destroyed: failures and replies never used go to the test framework (cairn/testing/report.hpp). A failure whose
// exception is unwinding the stack as the fake is destroyed (it escaped the test, which the framework reports) is not
// reported again.
//
//     cairn::testing::ScriptedModel model("interpreter");
//     model.reply(R"({"action": "new_goal", "goal": {"gloss": "Book a train"}, "reasoning": "asks"})",
//                 {cairn::testing::prompt_contains("Book a train to Paris")});
//     model.answer({cairn::testing::prompt_contains("Classify")}, "invoice", cairn::testing::any_number());
//     auto interpreter = std::make_shared<cairn::ModelInterpreter>(model);   // a copy: it shares the script
#pragma once

#include <algorithm>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cairn/detail/text.hpp"
#include "cairn/error.hpp"
#include "cairn/testing/report.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace testing {

/// A scripted fake was used in a way its script did not foresee: no reply for a call, an expectation on a prompt that
/// did not hold, or (from verify()) replies never used. The message names the fake, the call and the prompt.
class script_error : public cairn::error {
  CAIRN_DETAIL_ERROR_CONSTRUCTORS(script_error, cairn::error)
};

/// A place in a prompt a failure message marks: `length` bytes from `offset`, with a note.
struct PromptMark {
  std::size_t offset = 0;
  std::size_t length = 0;
  std::string note;
};

/// A check on the prompt of one call: `check` returns true when the prompt is as expected; `description` completes
/// "expected the prompt to ..." in the failure message; `locate`, when set, finds the place to mark when it fails.
struct PromptExpectation {
  std::string description;
  std::function<bool(const std::string& prompt)> check;
  std::function<std::optional<PromptMark>(const std::string& prompt)> locate = {};
};

/// How many calls a reply given with answer() may (and must) answer.
struct Times {
  std::size_t min = 1;
  std::size_t max = 1;

  static constexpr std::size_t unbounded = std::numeric_limits<std::size_t>::max();

  /// "exactly 2 times", "at least 1 time", "at most 3 times", "any number of times".
  std::string text() const {
    const auto n = [](std::size_t k) { return fmt::format("{} time{}", k, k == 1 ? "" : "s"); };
    if (min == max) return "exactly " + n(min);
    if (max == unbounded) return min == 0 ? "any number of times" : "at least " + n(min);
    if (min == 0) return "at most " + n(max);
    return fmt::format("{} to {} times", min, max);
  }
};

/// Exactly `n` calls (fewer fail verify(); the `n+1`th is not answered by this reply).
inline Times times(std::size_t n) { return {n, n}; }
/// At least `n` calls.
inline Times at_least(std::size_t n) { return {n, Times::unbounded}; }
/// At most `n` calls (none is fine).
inline Times at_most(std::size_t n) { return {0, n}; }
/// Any number of calls, none included.
inline Times any_number() { return {0, Times::unbounded}; }

namespace script_detail {

/// `text` in double quotes, newlines as \n, tabs as \t, quotes as \", other control characters and malformed UTF-8
/// as \xNN; cut after `max` bytes (never inside a UTF-8 sequence) with "..." after the closing quote.
inline std::string quoted(std::string_view text, std::size_t max = 400) {
  std::string out = "\"";
  std::size_t i = 0;
  while (i < text.size() && i < max) {
    const auto c = static_cast<unsigned char>(text[i]);
    const std::size_t len = c >= 0x80 ? cairn::detail::utf8_sequence_length(text.substr(i)) : 1;
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c >= 0x20 && c < 0x7f) {
      out.push_back(static_cast<char>(c));
    } else if (c >= 0x80 && len != 0) {
      out.append(text.substr(i, len));
      i += len;
      continue;
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
    ++i;
  }
  out += i < text.size() ? "\"..." : "\"";
  return out;
}

/// One line of a prompt for a failure message: control characters but tabs as \xNN, malformed UTF-8 as \xNN.
inline std::string printable_line(std::string_view line) {
  std::string out;
  std::size_t i = 0;
  while (i < line.size()) {
    const auto c = static_cast<unsigned char>(line[i]);
    if (c == '\t' || (c >= 0x20 && c < 0x7f)) {
      out.push_back(static_cast<char>(c));
      ++i;
    } else if (c >= 0x80 && cairn::detail::utf8_sequence_length(line.substr(i)) != 0) {
      const std::size_t len = cairn::detail::utf8_sequence_length(line.substr(i));
      out.append(line.substr(i, len));
      i += len;
    } else {
      out += fmt::format("\\x{:02x}", c);
      ++i;
    }
  }
  return out;
}

/// The prompt for a failure message: every line as a line, numbered, and under the line holding `mark` a caret at
/// its column with the mark's note. A prompt over 200 lines shows the 25 lines either side of the mark (or its first
/// 50 lines), saying how many it left out.
inline std::string show_prompt(const std::string& prompt, const std::optional<PromptMark>& mark = std::nullopt) {
  std::vector<std::string_view> lines;
  std::vector<std::size_t> starts;
  {
    std::size_t start = 0;
    while (true) {
      const std::size_t end = prompt.find('\n', start);
      starts.push_back(start);
      lines.push_back(
          std::string_view(prompt).substr(start, end == std::string::npos ? std::string::npos : end - start));
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  std::size_t mark_line = lines.size();
  if (mark) {
    for (std::size_t i = 0; i < lines.size(); ++i) {
      if (mark->offset >= starts[i] && mark->offset <= starts[i] + lines[i].size()) {
        mark_line = i;
        break;
      }
    }
  }
  std::size_t first = 0;
  std::size_t last = lines.size();
  if (lines.size() > 200) {
    if (mark_line < lines.size()) {
      first = mark_line > 25 ? mark_line - 25 : 0;
      last = std::min(lines.size(), mark_line + 26);
    } else {
      last = 50;
    }
  }
  const std::size_t width = fmt::format("{}", lines.size()).size();
  std::string out =
      fmt::format("the prompt ({} line{}, {} bytes):", lines.size(), lines.size() == 1 ? "" : "s", prompt.size());
  if (first > 0) out += fmt::format("\n{:>{}} | ... {} line{} not shown", "", width, first, first == 1 ? "" : "s");
  for (std::size_t i = first; i < last; ++i) {
    out += fmt::format("\n{:>{}} | {}", i + 1, width, printable_line(lines[i]));
    if (i == mark_line) {
      const std::string before = printable_line(lines[i].substr(0, mark->offset - starts[i]));
      const std::size_t column = cairn::detail::utf8_length(before);
      const std::size_t span = std::max<std::size_t>(
          1, cairn::detail::utf8_length(printable_line(std::string_view(prompt).substr(
                 mark->offset, std::min(mark->length, starts[i] + lines[i].size() - mark->offset)))));
      out += fmt::format("\n{:>{}} | {}{} {}", "", width, std::string(column, ' '), std::string(span, '^'), mark->note);
    }
  }
  if (last < lines.size()) {
    out += fmt::format("\n{:>{}} | ... {} line{} not shown", "", width, lines.size() - last,
                       lines.size() - last == 1 ? "" : "s");
  }
  return out;
}

/// Line and column (1-based, columns in code points) of byte `offset` of `text`.
inline std::pair<std::size_t, std::size_t> line_column(const std::string& text, std::size_t offset) {
  const std::string_view head = std::string_view(text).substr(0, offset);
  const std::size_t line = static_cast<std::size_t>(std::count(head.begin(), head.end(), '\n')) + 1;
  const std::size_t nl = head.rfind('\n');
  return {line, cairn::detail::utf8_length(nl == std::string_view::npos ? head : head.substr(nl + 1)) + 1};
}

}  // namespace script_detail

/// The prompt contains `text`. When it does not, the failure marks the longest start of `text` the prompt has.
inline PromptExpectation prompt_contains(std::string text) {
  std::string description = "contain " + script_detail::quoted(text);
  auto locate = [text](const std::string& p) -> std::optional<PromptMark> {
    // The longest prefix of `text` found in the prompt (every shorter prefix is found too: binary search).
    std::size_t lo = 0;
    std::size_t hi = text.size();
    std::size_t at = std::string::npos;
    while (lo < hi) {
      const std::size_t mid = lo + (hi - lo + 1) / 2;
      const std::size_t pos = p.find(std::string_view(text).substr(0, mid));
      if (pos != std::string::npos) {
        lo = mid;
        at = pos;
      } else {
        hi = mid - 1;
      }
    }
    if (lo == 0) return std::nullopt;
    const auto [line, column] = script_detail::line_column(p, at);
    std::string note = fmt::format(
        "the longest start of the text found ({} of {} bytes, line {}, column {}); then "
        "the text has {} where the prompt has {}",
        lo, text.size(), line, column, script_detail::quoted(text.substr(lo), 20),
        script_detail::quoted(p.substr(at + lo), 20));
    return PromptMark{at, lo, std::move(note)};
  };
  return {std::move(description),
          [text = std::move(text)](const std::string& p) { return p.find(text) != std::string::npos; },
          std::move(locate)};
}

/// The prompt does not contain `text`. When it does, the failure marks where.
inline PromptExpectation prompt_lacks(std::string text) {
  std::string description = "not contain " + script_detail::quoted(text);
  auto locate = [text](const std::string& p) -> std::optional<PromptMark> {
    const std::size_t at = p.find(text);
    if (at == std::string::npos) return std::nullopt;
    return PromptMark{at, text.size(), "here"};
  };
  return {std::move(description),
          [text = std::move(text)](const std::string& p) { return p.find(text) == std::string::npos; },
          std::move(locate)};
}

/// The prompt satisfies `predicate`; `description` says what that means ("mention the user's city").
inline PromptExpectation prompt_satisfies(std::string description, std::function<bool(const std::string&)> predicate) {
  return {std::move(description), std::move(predicate)};
}

namespace script_detail {

/// The descriptions of `expect` joined with " and ".
inline std::string describe(const std::vector<PromptExpectation>& expect) {
  if (expect.empty()) return "any prompt";
  std::string out = "prompts that " + expect.front().description;
  for (std::size_t i = 1; i < expect.size(); ++i) out += " and " + expect[i].description;
  return out;
}

/// The first expectation of `expect` that `prompt` fails (expect.size() when none does); one that throws fails.
inline std::size_t first_unmet(const std::vector<PromptExpectation>& expect, const std::string& prompt,
                               std::string* thrown = nullptr) {
  for (std::size_t i = 0; i < expect.size(); ++i) {
    bool ok = false;
    try {
      ok = expect[i].check && expect[i].check(prompt);
    } catch (const std::exception& e) {
      if (thrown) *thrown = e.what();
    }
    if (!ok) return i;
  }
  return expect.size();
}

/// The script_error a fake throws for a failure: while it lives (unwinding, or held by an exception_ptr), the fake
/// knows that failure is still on its way to whoever catches it.
class thrown_failure final : public script_error {
 public:
  thrown_failure(const std::string& what, std::shared_ptr<const int> token)
      : script_error(what), token_(std::move(token)) {}

 private:
  std::shared_ptr<const int> token_;
};

/// The script of one fake: the queue, the answers, the record of prompts and the failures. Thread-safe: one mutex;
/// expectations are evaluated outside it. Verifies itself when destroyed (the last copy of the fake goes), leaving out
/// a failure whose exception is what unwinds the stack then: that one escaped the test, and the framework reports it.
template <class Reply>
class Script {
 public:
  Script(std::string kind, std::string name) : kind_(std::move(kind)), name_(std::move(name)) {}
  Script(const Script&) = delete;
  Script& operator=(const Script&) = delete;

  ~Script() {
    try {
      std::vector<std::string> problems;
      {
        std::lock_guard lock(mutex_);
        if (!verify_on_destruction_) return;
        problems = problems_locked(true, std::uncaught_exceptions() > 0);
      }
      if (problems.empty()) return;
      std::string text = fmt::format("{} was destroyed unverified:", who());
      for (const std::string& p : problems) text += "\n" + p;
      report_failure(text);
    } catch (...) {
      report_failure("a scripted fake was destroyed unverified (out of memory while describing it)");
    }
  }

  void push(std::optional<Reply> reply, std::exception_ptr error, std::vector<PromptExpectation> expect) {
    std::lock_guard lock(mutex_);
    steps_.push_back(Step{std::move(reply), std::move(error), std::move(expect)});
  }
  void add_answer(std::optional<Reply> reply, std::exception_ptr error, std::vector<PromptExpectation> match,
                  Times times) {
    if (times.max == 0 || times.min > times.max) {
      throw invalid_argument(fmt::format("{}: answer: {} is not a count a call can meet", who(), times.text()));
    }
    std::lock_guard lock(mutex_);
    answers_.push_back(Answer{std::move(reply), std::move(error), std::move(match), times, 0});
  }
  void otherwise(std::optional<Reply> reply) {
    std::lock_guard lock(mutex_);
    otherwise_ = std::move(reply);
  }

  /// Records `prompt`, finds what answers it — the first answer() whose expectations all hold and that has calls
  /// left, else the queue's next reply, whose expectations must hold, else otherwise() — and returns its reply, or
  /// throws (the scripted error, or a script_error that is also remembered for verify()).
  Reply next(const std::string& prompt) {
    std::size_t call = 0;
    std::vector<std::pair<std::size_t, Answer>> answers;
    {
      std::lock_guard lock(mutex_);
      prompts_.push_back(prompt);
      call = prompts_.size();
      for (std::size_t i = 0; i < answers_.size(); ++i) {
        if (answers_[i].used < answers_[i].times.max) answers.emplace_back(i, answers_[i]);
      }
    }
    std::vector<std::string> misses;
    for (auto& [index, answer] : answers) {
      const std::size_t unmet = first_unmet(answer.match, prompt);
      if (unmet < answer.match.size()) {
        misses.push_back(fmt::format("answer {} (for {}, {}): the prompt does not {}", index + 1,
                                     describe(answer.match), answer.times.text(), answer.match[unmet].description));
        continue;
      }
      {
        std::lock_guard lock(mutex_);
        if (answers_[index].used >= answers_[index].times.max) continue;  // another thread took its last call
        ++answers_[index].used;
      }
      if (answer.error) std::rethrow_exception(answer.error);
      return std::move(*answer.reply);
    }

    std::optional<Step> step;
    std::optional<Reply> fallback;
    std::size_t queued = 0;
    {
      std::lock_guard lock(mutex_);
      if (!steps_.empty()) {
        step = std::move(steps_.front());
        steps_.pop_front();
        ++used_;
      } else {
        fallback = otherwise_;
        queued = used_;
      }
    }
    if (!step) {
      if (fallback) return *fallback;
      std::string message = fmt::format("{}: call {}: the script has no reply left ({} scripted, all used{})", who(),
                                        call, queued, misses.empty() ? "" : "; no answer matches the prompt");
      for (const std::string& m : misses) message += "\n  " + m;
      fail(message + "\n" + show_prompt(prompt));
    }
    std::string thrown;
    const std::size_t unmet = first_unmet(step->expect, prompt, &thrown);
    if (unmet < step->expect.size()) {
      const PromptExpectation& e = step->expect[unmet];
      if (!thrown.empty()) {
        fail(fmt::format("{}: call {}: the expectation that the prompt would {} threw: {}\n{}", who(), call,
                         e.description, thrown, show_prompt(prompt)));
      }
      std::optional<PromptMark> mark;
      if (e.locate) {
        try {
          mark = e.locate(prompt);
        } catch (...) {
          mark.reset();
        }
      }
      fail(fmt::format("{}: call {}: expected the prompt to {}\n{}", who(), call, e.description,
                       show_prompt(prompt, mark)));
    }
    if (step->error) std::rethrow_exception(step->error);
    return std::move(*step->reply);
  }

  std::vector<std::string> prompts() const {
    std::lock_guard lock(mutex_);
    return prompts_;
  }
  std::size_t calls() const {
    std::lock_guard lock(mutex_);
    return prompts_.size();
  }
  std::size_t remaining() const {
    std::lock_guard lock(mutex_);
    return steps_.size();
  }
  std::vector<std::string> failures() const {
    std::lock_guard lock(mutex_);
    std::vector<std::string> out;
    out.reserve(failures_.size());
    for (const Failure& f : failures_) out.push_back(f.message);
    return out;
  }

  void verify() {
    std::vector<std::string> problems;
    {
      std::lock_guard lock(mutex_);
      problems = problems_locked(false, false);
      reported_failures_ = failures_.size();
      reported_steps_ = steps_.size();
      reported_calls_ = prompts_.size();
      verified_ = true;
    }
    if (problems.empty()) return;
    std::string text = problems.front();
    for (std::size_t i = 1; i < problems.size(); ++i) text += "\n" + problems[i];
    throw script_error(text);
  }

  void disarm() {
    std::lock_guard lock(mutex_);
    verify_on_destruction_ = false;
  }

  std::string who() const { return fmt::format("{} '{}'", kind_, name_); }

 private:
  struct Step {
    std::optional<Reply> reply;
    std::exception_ptr error;
    std::vector<PromptExpectation> expect;
  };
  struct Answer {
    std::optional<Reply> reply;
    std::exception_ptr error;
    std::vector<PromptExpectation> match;
    Times times;
    std::size_t used = 0;
  };
  struct Failure {
    std::string message;
    std::weak_ptr<const int> thrown;  // alive while the exception thrown for it is
  };

  // Failures, replies never used and answers used too few times; `unreported` leaves out what the last verify()
  // already reported (nothing new happened since), `unwinding` the failures whose exception is still alive (the one
  // unwinding the stack: the test framework reports it).
  std::vector<std::string> problems_locked(bool unreported, bool unwinding) const {
    const bool changed =
        !unreported || !verified_ || prompts_.size() != reported_calls_ || steps_.size() != reported_steps_;
    std::vector<std::string> problems;
    for (std::size_t i = unreported ? reported_failures_ : 0; i < failures_.size(); ++i) {
      if (unwinding && !failures_[i].thrown.expired()) continue;
      problems.push_back(failures_[i].message);
    }
    if (!changed) return problems;
    if (!steps_.empty()) {
      problems.push_back(fmt::format("{}: {} scripted repl{} never used (the next one was for call {}; {} call{} made)",
                                     who(), steps_.size(), steps_.size() == 1 ? "y was" : "ies were",
                                     prompts_.size() + 1, prompts_.size(), prompts_.size() == 1 ? " was" : "s were"));
    }
    for (std::size_t i = 0; i < answers_.size(); ++i) {
      const Answer& a = answers_[i];
      if (a.used < a.times.min) {
        problems.push_back(fmt::format("{}: answer {} (for {}) was to answer {}; it answered {}", who(), i + 1,
                                       describe(a.match), a.times.text(), a.used));
      }
    }
    return problems;
  }

  [[noreturn]] void fail(std::string message) {
    auto token = std::make_shared<const int>(0);
    {
      std::lock_guard lock(mutex_);
      failures_.push_back(Failure{message, token});
    }
    throw thrown_failure(message, std::move(token));
  }

  const std::string kind_;
  const std::string name_;
  mutable std::mutex mutex_;
  std::deque<Step> steps_;
  std::vector<Answer> answers_;
  std::optional<Reply> otherwise_;
  std::vector<std::string> prompts_;
  std::vector<Failure> failures_;
  std::size_t used_ = 0;
  std::size_t reported_failures_ = 0;
  std::size_t reported_steps_ = 0;
  std::size_t reported_calls_ = 0;
  bool verified_ = false;
  bool verify_on_destruction_ = true;
};

/// What every fake offers on top of its interface; `Derived` returns itself from the chaining calls.
template <class Derived, class Reply>
class ScriptedBase {
 public:
  /// Queues `reply`, taken by the next call no answer() matches; `expect` must hold for that call's prompt.
  Derived& reply(Reply reply, std::vector<PromptExpectation> expect = {}) {
    script_->push(std::move(reply), nullptr, std::move(expect));
    return static_cast<Derived&>(*this);
  }
  /// Queues a call that throws `error` (a model timing out, say) after the expectations are checked.
  template <class E>
  Derived& reply_error(E error, std::vector<PromptExpectation> expect = {}) {
    script_->push(std::nullopt, std::make_exception_ptr(std::move(error)), std::move(expect));
    return static_cast<Derived&>(*this);
  }
  /// `reply` answers every call whose prompt meets all of `match`, in any order, as often as `count` allows
  /// (times(n), at_least(n), at_most(n), any_number()); verify() fails when it answered fewer than `count` asks.
  /// Answers are tried before the queue, in the order they were added; one used up no longer matches. Several
  /// answers with times(1) are an unordered set: each must be asked once, in whatever order the agent asks.
  Derived& answer(std::vector<PromptExpectation> match, Reply reply, Times count = any_number()) {
    script_->add_answer(std::move(reply), nullptr, std::move(match), count);
    return static_cast<Derived&>(*this);
  }
  /// Like answer(), the matching calls throwing `error`.
  template <class E>
  Derived& answer_error(std::vector<PromptExpectation> match, E error, Times count = any_number()) {
    script_->add_answer(std::nullopt, std::make_exception_ptr(std::move(error)), std::move(match), count);
    return static_cast<Derived&>(*this);
  }
  /// What to answer, without expectations, once the queue is empty and no answer matches (instead of failing).
  /// std::nullopt fails again.
  Derived& otherwise(std::optional<Reply> reply) {
    script_->otherwise(std::move(reply));
    return static_cast<Derived&>(*this);
  }

  /// Every prompt given so far, oldest first (for the typed fakes: the text the matching model adapter would have
  /// sent, so the same expectations read alike for both).
  std::vector<std::string> prompts() const { return script_->prompts(); }
  /// The prompt of call `n` (1-based); throws script_error when there was no such call.
  std::string prompt(std::size_t n) const {
    auto all = script_->prompts();
    if (n == 0 || n > all.size()) {
      throw script_error(fmt::format("{}: there is no call {} ({} made)", script_->who(), n, all.size()));
    }
    return std::move(all[n - 1]);
  }
  std::size_t calls() const { return script_->calls(); }
  /// Replies queued and not yet taken.
  std::size_t remaining() const { return script_->remaining(); }
  /// Every script_error thrown so far (a component may have caught them).
  std::vector<std::string> failures() const { return script_->failures(); }
  /// Throws script_error listing every failure so far, the replies never used and the answers asked too few times;
  /// does nothing when all is well. What it reported is not reported again when the fake is destroyed.
  void verify() const { script_->verify(); }
  /// The fake no longer verifies itself when destroyed (for a test that looks at the failures itself).
  void disarm() const { script_->disarm(); }

 protected:
  ScriptedBase(std::string kind, std::string name)
      : script_(std::make_shared<Script<Reply>>(std::move(kind), std::move(name))) {}
  Reply next(const std::string& prompt) { return script_->next(prompt); }

 private:
  std::shared_ptr<Script<Reply>> script_;
};

}  // namespace script_detail

/// The plain model: `std::string(const std::string& prompt)`, what ModelInterpreter, ModelQuestionWriter,
/// ModelConditionEvaluator, a handoff target and any host code that "calls the model" take. Copies share one
/// script, so the copy inside a std::function (a cairn::ModelFunction) is the same fake the test holds, and the
/// script verifies itself when the last copy goes. Thread-safe.
///
///     cairn::testing::ScriptedModel model("writer");
///     model.reply("ARTIFACT\nSUMMARY: the report\n# Report ...").reply_error(cairn::storage_error("timeout"));
///     cairn::ModelFunction f = model;      // f("...") answers the first reply, then throws
class ScriptedModel : public script_detail::ScriptedBase<ScriptedModel, std::string> {
 public:
  explicit ScriptedModel(std::string name = "model") : ScriptedBase("scripted model", std::move(name)) {}

  std::string operator()(const std::string& prompt) { return next(prompt); }
  /// The fake as a std::function (cairn::ModelFunction), sharing this script.
  std::function<std::string(const std::string&)> function() const {
    return std::function<std::string(const std::string&)>(*this);
  }
};

}  // namespace testing
CAIRN_END_NAMESPACE
