// cairn::testing — scripted stand-ins for the models a host plugs into cairn, usable from any test framework.
//
// Each fake answers from a queue of replies the test wrote, records every prompt it was given, checks optional
// expectations on each prompt, and fails with a cairn::testing::script_error that names the fake, the call number
// and an excerpt of the prompt when the script runs out or an expectation does not hold. Because a component may
// catch what a fake throws (the goal engine turns a planner's exception into the reason a goal was abandoned), every
// failure is also remembered, and verify() — called at the end of a test — reports it together with the replies that
// were never used.
//
//     cairn::testing::ScriptedModel model("interpreter");
//     model.reply(R"({"action": "new_goal", "goal": {"gloss": "Book a train"}, "reasoning": "asks"})",
//                 {cairn::testing::prompt_contains("Book a train to Paris")});
//     auto interpreter = std::make_shared<cairn::ModelInterpreter>(model);   // a copy: it shares the script
//     ...
//     model.verify();                                                         // throws when something went wrong
#pragma once

#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/detail/text.hpp"
#include "cairn/error.hpp"
#include "cairn/goals/goal.hpp"
#include "cairn/goals/interfaces.hpp"
#include "cairn/goals/model_adapters.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace testing {

/// A scripted fake was used in a way its script did not foresee: no reply left, an expectation on a prompt that
/// did not hold, or (from verify()) replies never used. The message names the fake, the call and the prompt.
class script_error : public cairn::error {
  CAIRN_DETAIL_ERROR_CONSTRUCTORS(script_error, cairn::error)
};

/// A check on the prompt of one call: `check` returns true when the prompt is as expected; `description` completes
/// "expected the prompt to ..." in the failure message.
struct PromptExpectation {
  std::string description;
  std::function<bool(const std::string& prompt)> check;
};

/// The prompt contains `text`.
inline PromptExpectation prompt_contains(std::string text) {
  std::string description = fmt::format("contain \"{}\"", cairn::detail::excerpt(text, 200));
  return {std::move(description), [text = std::move(text)](const std::string& p) { return p.find(text) != std::string::npos; }};
}

/// The prompt does not contain `text`.
inline PromptExpectation prompt_lacks(std::string text) {
  std::string description = fmt::format("not contain \"{}\"", cairn::detail::excerpt(text, 200));
  return {std::move(description), [text = std::move(text)](const std::string& p) { return p.find(text) == std::string::npos; }};
}

/// The prompt satisfies `predicate`; `description` says what that means ("mention the user's city").
inline PromptExpectation prompt_satisfies(std::string description, std::function<bool(const std::string&)> predicate) {
  return {std::move(description), std::move(predicate)};
}

namespace script_detail {

inline std::string prompt_excerpt(const std::string& prompt) {
  return fmt::format("\"{}\"", cairn::detail::excerpt(prompt, 300));
}

/// The queue, the record of prompts and the failures of one fake. Thread-safe: one mutex; expectations and replies
/// are evaluated outside it.
template <class Reply>
class Script {
 public:
  Script(std::string kind, std::string name) : kind_(std::move(kind)), name_(std::move(name)) {}

  void push(Reply reply, std::vector<PromptExpectation> expect) {
    std::lock_guard lock(mutex_);
    steps_.push_back(Step{std::move(reply), nullptr, std::move(expect)});
  }
  void push_error(std::exception_ptr error, std::vector<PromptExpectation> expect) {
    if (!error) throw invalid_argument(fmt::format("{}: reply_error needs an exception", who()));
    std::lock_guard lock(mutex_);
    steps_.push_back(Step{std::nullopt, std::move(error), std::move(expect)});
  }
  void otherwise(std::optional<Reply> reply) {
    std::lock_guard lock(mutex_);
    otherwise_ = std::move(reply);
  }

  /// Records `prompt`, takes the next step and checks it; returns the reply or throws (the scripted error, or a
  /// script_error that is also remembered for verify()).
  Reply next(const std::string& prompt) {
    std::size_t call = 0;
    std::optional<Step> step;
    std::optional<Reply> fallback;
    std::size_t scripted = 0;
    {
      std::lock_guard lock(mutex_);
      prompts_.push_back(prompt);
      call = prompts_.size();
      if (!steps_.empty()) {
        step = std::move(steps_.front());
        steps_.pop_front();
      } else {
        fallback = otherwise_;
        scripted = used_;
      }
      if (step) ++used_;
    }
    if (!step) {
      if (fallback) return *fallback;
      fail(fmt::format("{}: call {}: the script has no reply left ({} scripted, all used); prompt: {}", who(), call,
                       scripted, prompt_excerpt(prompt)));
    }
    for (const PromptExpectation& e : step->expect) {
      bool ok = false;
      try {
        ok = e.check && e.check(prompt);
      } catch (const std::exception& ex) {
        fail(fmt::format("{}: call {}: the expectation that the prompt would {} threw: {}; prompt: {}", who(), call,
                         e.description, ex.what(), prompt_excerpt(prompt)));
      }
      if (!ok) {
        fail(fmt::format("{}: call {}: expected the prompt to {}; prompt: {}", who(), call, e.description,
                         prompt_excerpt(prompt)));
      }
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
    return failures_;
  }

  void verify() const {
    std::lock_guard lock(mutex_);
    std::vector<std::string> problems = failures_;
    if (!steps_.empty()) {
      problems.push_back(fmt::format("{}: {} scripted repl{} never used (the next one was for call {}; {} call{} "
                                     "made)",
                                     who(), steps_.size(), steps_.size() == 1 ? "y was" : "ies were",
                                     prompts_.size() + 1, prompts_.size(), prompts_.size() == 1 ? " was" : "s were"));
    }
    if (problems.empty()) return;
    std::string text = problems.front();
    for (std::size_t i = 1; i < problems.size(); ++i) text += "\n" + problems[i];
    throw script_error(text);
  }

  std::string who() const { return fmt::format("{} '{}'", kind_, name_); }

 private:
  struct Step {
    std::optional<Reply> reply;
    std::exception_ptr error;
    std::vector<PromptExpectation> expect;
  };

  [[noreturn]] void fail(std::string message) {
    {
      std::lock_guard lock(mutex_);
      failures_.push_back(message);
    }
    throw script_error(message);
  }

  const std::string kind_;
  const std::string name_;
  mutable std::mutex mutex_;
  std::deque<Step> steps_;
  std::optional<Reply> otherwise_;
  std::vector<std::string> prompts_;
  std::vector<std::string> failures_;
  std::size_t used_ = 0;
};

/// What every fake offers on top of its interface; `Derived` returns itself from the chaining calls.
template <class Derived, class Reply>
class ScriptedBase {
 public:
  /// Queues `reply`, checked against `expect` when it is taken.
  Derived& reply(Reply reply, std::vector<PromptExpectation> expect = {}) {
    script_->push(std::move(reply), std::move(expect));
    return static_cast<Derived&>(*this);
  }
  /// Queues a call that throws `error` (a model timing out, say) after the expectations are checked.
  template <class E>
  Derived& reply_error(E error, std::vector<PromptExpectation> expect = {}) {
    script_->push_error(std::make_exception_ptr(std::move(error)), std::move(expect));
    return static_cast<Derived&>(*this);
  }
  /// What to answer, without expectations, once the queue is empty (instead of failing). std::nullopt fails again.
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
  /// Throws script_error listing every failure so far and the replies never used; does nothing when all is well.
  void verify() const { script_->verify(); }

 protected:
  ScriptedBase(std::string kind, std::string name)
      : script_(std::make_shared<Script<Reply>>(std::move(kind), std::move(name))) {}
  Reply next(const std::string& prompt) { return script_->next(prompt); }

 private:
  std::shared_ptr<Script<Reply>> script_;
};

}  // namespace script_detail

/// The plain model: `std::string(const std::string& prompt)`, what ModelInterpreter, ModelQuestionWriter,
/// ModelConditionEvaluator and any host code that "calls the model" take. Copies share one script, so the copy
/// inside a std::function (a cairn::ModelFunction) is the same fake the test holds. Thread-safe.
///
///     cairn::testing::ScriptedModel model("writer");
///     model.reply("ARTIFACT\nSUMMARY: the report\n# Report ...").reply_error(cairn::storage_error("timeout"));
///     cairn::ModelFunction f = model;      // f("...") answers the first reply, then throws
class ScriptedModel : public script_detail::ScriptedBase<ScriptedModel, std::string> {
 public:
  explicit ScriptedModel(std::string name = "model") : ScriptedBase("scripted model", std::move(name)) {}

  std::string operator()(const std::string& prompt) { return next(prompt); }
  /// The fake as a cairn::ModelFunction (sharing this script).
  ModelFunction function() const { return ModelFunction(*this); }
};

/// A MessageInterpreter that answers scripted Interpretations. The recorded prompt is the adapter's
/// interpret-message prompt for the call (user message, current goal, evidence). Thread-safe.
class ScriptedInterpreter final : public MessageInterpreter,
                                  public script_detail::ScriptedBase<ScriptedInterpreter, Interpretation> {
 public:
  explicit ScriptedInterpreter(std::string name = "interpreter") : ScriptedBase("scripted interpreter", std::move(name)) {}

  Interpretation interpret(const std::string& message, const Goal* current, const nlohmann::json& evidence) override {
    return next(render_interpret_prompt(message, current, evidence));
  }
};

/// A GoalPlanner that answers scripted GoalPlans. The recorded prompt reads
/// `Plan goal <id>: <gloss>\nPredicate: <json>\nEvidence: <json>`. Thread-safe.
class ScriptedPlanner final : public GoalPlanner, public script_detail::ScriptedBase<ScriptedPlanner, GoalPlan> {
 public:
  explicit ScriptedPlanner(std::string name = "planner") : ScriptedBase("scripted planner", std::move(name)) {}

  GoalPlan plan(const Goal& goal, const nlohmann::json& evidence) override {
    return next(fmt::format("Plan goal {}: {}\nPredicate: {}\nEvidence: {}", goal.id, goal.gloss,
                            cairn::detail::json_text(nlohmann::json(goal.predicate)),
                            cairn::detail::json_text(evidence)));
  }
};

/// A ConditionEvaluator that answers scripted booleans. The recorded prompt is the adapter's check-completion
/// prompt. Thread-safe.
class ScriptedEvaluator final : public ConditionEvaluator, public script_detail::ScriptedBase<ScriptedEvaluator, bool> {
 public:
  explicit ScriptedEvaluator(std::string name = "evaluator") : ScriptedBase("scripted evaluator", std::move(name)) {}

  bool evaluate(const Predicate& predicate, const Goal& goal, const nlohmann::json& evidence) override {
    return next(render_completion_prompt(predicate, evidence, goal.gloss));
  }
};

/// A QuestionWriter that answers scripted Questions. The recorded prompt is the adapter's execute-gather prompt.
/// Thread-safe.
class ScriptedQuestionWriter final : public QuestionWriter,
                                     public script_detail::ScriptedBase<ScriptedQuestionWriter, Question> {
 public:
  explicit ScriptedQuestionWriter(std::string name = "question writer")
      : ScriptedBase("scripted question writer", std::move(name)) {}

  Question write(const Goal&, const std::string& key, const std::string& prompt, const nlohmann::json& evidence) override {
    return next(render_gather_prompt(key, prompt, evidence));
  }
};

}  // namespace testing
CAIRN_END_NAMESPACE
