// cairn — the goal engine's host interfaces backed by a language model the host already has.
//
// Each adapter takes any callable `std::string(const std::string& prompt)`, renders one of seed 002's three prompts
// (interpret-message, execute-gather, check-completion) with its response schema, and checks the reply: JSON (a
// Markdown fence around it is fine) within size and depth limits, of the schema's shape. A reply that fails is sent
// back once with the error, so the model can correct itself; a second failure is a cairn::parse_error naming the
// prompt and what was wrong. cairn never calls a model itself: the callable is the host's.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/context/resolve.hpp"
#include "cairn/context/tool.hpp"
#include "cairn/detail/json.hpp"
#include "cairn/detail/text.hpp"
#include "cairn/error.hpp"
#include "cairn/goals/goal.hpp"
#include "cairn/goals/interfaces.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

/// The host's model: a prompt in, the reply text out. It may throw; the adapters let that through.
using ModelFunction = std::function<std::string(const std::string& prompt)>;

/// Limits on a model's reply (it is outside input).
struct ModelAdapterOptions {
  JsonLimits limits{1024u * 1024u, 32};
};

namespace detail {

std::string json_text(const nlohmann::json& v, int indent = -1);

std::string output_instructions(const nlohmann::json& schema);

/// Asks `model`, reads the reply with `read`, and asks once more with the error when the reply is rejected.
template <class Read>
auto ask_model(const ModelFunction& model, const std::string& prompt, std::string_view what,
               const ModelAdapterOptions& options, Read read) -> decltype(read(nlohmann::json())) {
  if (!model) throw invalid_argument(fmt::format("{}: no model function is set", what));
  std::string error;
  for (int attempt = 0; attempt < 2; ++attempt) {
    const std::string text =
        attempt == 0
            ? prompt
            : fmt::format("{}\n\nYour previous reply was rejected: {}\nReply again, with JSON only.", prompt, error);
    const std::string reply = model(text);
    try {
      return read(parse_json(strip_code_fence(reply), options.limits, fmt::format("{} reply", what)));
    } catch (const parse_error& e) {
      error = e.what();
    } catch (const limit_exceeded& e) {
      error = e.what();
    }
  }
  throw parse_error(fmt::format("{}: the model's reply was rejected twice; the last time: {}", what, error));
}

/// Reads replies of the three prompts; errors read "<prompt> reply: <field>: <problem>".
class ReplyReader {
 public:
  explicit ReplyReader(std::string_view what) : what_(what) {}
  [[noreturn]] void fail(std::string_view field, std::string_view message) const {
    throw parse_error(fmt::format("{} reply: {}: {}", what_, field, message));
  }
  const nlohmann::json& object(const nlohmann::json& j, std::string_view field) const;
  std::string string(const nlohmann::json& obj, const char* key, std::string_view field, bool required) const;

 private:
  std::string_view what_;
};

}  // namespace detail

// ---- interpret-message ---------------------------------------------------------------------------------------------

/// The response schema of interpret-message.
nlohmann::json interpret_message_schema();

/// The interpret-message prompt for `message`, the current goal (or none) and the evidence it sees.
std::string render_interpret_prompt(const std::string& message, const Goal* current, const nlohmann::json& evidence);

/// Reads an interpret-message reply. Throws cairn::parse_error naming the field.
Interpretation read_interpretation(const nlohmann::json& j);

/// A MessageInterpreter that asks a model with the interpret-message prompt.
///
/// As thread-safe as the model function (it keeps no state of its own).
class ModelInterpreter : public MessageInterpreter {
 public:
  explicit ModelInterpreter(ModelFunction model, ModelAdapterOptions options = {})
      : model_(std::move(model)), options_(options) {}

  CAIRN_INLINE Interpretation interpret(const std::string& message, const Goal* current,
                                        const nlohmann::json& evidence) override;

 private:
  ModelFunction model_;
  ModelAdapterOptions options_;
};

// ---- execute-gather ------------------------------------------------------------------------------------------------

/// The response schema of execute-gather.
nlohmann::json execute_gather_schema();

/// The execute-gather prompt: ask the user for `key`, guided by `prompt`, knowing `evidence`.
std::string render_gather_prompt(const std::string& key, const std::string& prompt, const nlohmann::json& evidence);

/// Reads an execute-gather reply. Throws cairn::parse_error naming the field.
Question read_question(const nlohmann::json& j);

/// A QuestionWriter that asks a model with the execute-gather prompt.
class ModelQuestionWriter : public QuestionWriter {
 public:
  explicit ModelQuestionWriter(ModelFunction model, ModelAdapterOptions options = {})
      : model_(std::move(model)), options_(options) {}

  CAIRN_INLINE Question write(const Goal&, const std::string& key, const std::string& prompt,
                              const nlohmann::json& evidence) override;

 private:
  ModelFunction model_;
  ModelAdapterOptions options_;
};

// ---- check-completion ----------------------------------------------------------------------------------------------

/// The response schema of check-completion.
nlohmann::json check_completion_schema();

/// The check-completion prompt: does `predicate` hold, given `evidence`, for the goal `gloss`?
std::string render_completion_prompt(const Predicate& predicate, const nlohmann::json& evidence,
                                     const std::string& gloss);

/// Reads a check-completion reply: the value of `satisfied`. Throws cairn::parse_error naming the field.
bool read_completion(const nlohmann::json& j);

/// A ConditionEvaluator that asks a model with the check-completion prompt.
class ModelConditionEvaluator : public ConditionEvaluator {
 public:
  explicit ModelConditionEvaluator(ModelFunction model, ModelAdapterOptions options = {})
      : model_(std::move(model)), options_(options) {}

  CAIRN_INLINE bool evaluate(const Predicate& predicate, const Goal& goal, const nlohmann::json& evidence) override;

 private:
  ModelFunction model_;
  ModelAdapterOptions options_;
};

CAIRN_END_NAMESPACE

#ifndef CAIRN_COMPILED_LIB
#include "cairn/goals/model_adapters-inl.hpp"
#endif
