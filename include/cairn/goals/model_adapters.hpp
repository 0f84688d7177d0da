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

inline std::string json_text(const nlohmann::json& v, int indent = -1) {
  return v.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

inline std::string output_instructions(const nlohmann::json& schema) {
  return "Reply with one JSON object, and nothing else, that matches this JSON Schema:\n" + json_text(schema, 2);
}

/// Asks `model`, reads the reply with `read`, and asks once more with the error when the reply is rejected.
template <class Read>
auto ask_model(const ModelFunction& model, const std::string& prompt, std::string_view what,
               const ModelAdapterOptions& options, Read read) -> decltype(read(nlohmann::json())) {
  if (!model) throw invalid_argument(fmt::format("{}: no model function is set", what));
  std::string error;
  for (int attempt = 0; attempt < 2; ++attempt) {
    const std::string text =
        attempt == 0 ? prompt
                     : fmt::format("{}\n\nYour previous reply was rejected: {}\nReply again, with JSON only.", prompt,
                                   error);
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
  const nlohmann::json& object(const nlohmann::json& j, std::string_view field) const {
    if (!j.is_object()) fail(field.empty() ? "the reply" : field, fmt::format("expected an object, got {}", j.type_name()));
    return j;
  }
  std::string string(const nlohmann::json& obj, const char* key, std::string_view field, bool required) const {
    const auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) {
      if (required) fail(field, "missing");
      return {};
    }
    if (!it->is_string()) fail(field, fmt::format("expected a string, got {}", it->type_name()));
    return it->get<std::string>();
  }

 private:
  std::string_view what_;
};

}  // namespace detail

// ---- interpret-message ---------------------------------------------------------------------------------------------

/// The response schema of interpret-message.
inline nlohmann::json interpret_message_schema() {
  return nlohmann::json::parse(R"({
  "type": "object",
  "properties": {
    "action": {"type": "string", "enum": ["new_goal", "add_evidence", "abandon_goal", "continue"]},
    "goal": {"type": "object", "properties": {"gloss": {"type": "string"}, "context": {"type": "object"}}},
    "evidence": {"type": "object", "properties": {"key": {"type": "string"}, "value": {}}},
    "reasoning": {"type": "string"}
  },
  "required": ["action", "reasoning"]
})");
}

/// The interpret-message prompt for `message`, the current goal (or none) and the evidence it sees.
inline std::string render_interpret_prompt(const std::string& message, const Goal* current,
                                           const nlohmann::json& evidence) {
  std::string goal = "none";
  if (current) {
    goal = fmt::format("{} ({}", current->gloss, current->predicate.name);
    const auto key = current->predicate.args.find("key");
    if (key != current->predicate.args.end() && key->is_string()) goal += ", asking for " + key->get<std::string>();
    goal += ")";
  }
  return fmt::format(
      "Decide what this user message means for the goal being worked on.\n\n"
      "User message: {}\n\nCurrent goal: {}\nEvidence collected: {}\n\n"
      "The user is either\n"
      "1. asking for something new (action: new_goal, with goal.gloss and any facts already given in goal.context),\n"
      "2. giving information the current goal needs (action: add_evidence, with evidence.key and evidence.value),\n"
      "3. giving up on the current goal (action: abandon_goal), or\n"
      "4. just talking (action: continue).\n\n{}",
      message, goal, detail::json_text(evidence), detail::output_instructions(interpret_message_schema()));
}

/// Reads an interpret-message reply. Throws cairn::parse_error naming the field.
inline Interpretation read_interpretation(const nlohmann::json& j) {
  const detail::ReplyReader in("interpret-message");
  in.object(j, "");
  const std::string action = in.string(j, "action", "action", true);
  Interpretation out;
  out.reasoning = in.string(j, "reasoning", "reasoning", true);
  if (action == "new_goal") {
    const auto g = j.find("goal");
    if (g == j.end() || g->is_null()) in.fail("goal", "missing (new_goal needs it)");
    in.object(*g, "goal");
    out.action = Interpretation::Action::new_goal;
    out.gloss = in.string(*g, "gloss", "goal.gloss", true);
    if (out.gloss.empty()) in.fail("goal.gloss", "must not be empty");
    if (const auto c = g->find("context"); c != g->end() && !c->is_null()) {
      in.object(*c, "goal.context");
      out.context = *c;
    }
  } else if (action == "add_evidence") {
    const auto e = j.find("evidence");
    if (e == j.end() || e->is_null()) in.fail("evidence", "missing (add_evidence needs it)");
    in.object(*e, "evidence");
    out.action = Interpretation::Action::add_evidence;
    out.key = in.string(*e, "key", "evidence.key", true);
    const auto v = e->find("value");
    if (v == e->end() || v->is_null()) in.fail("evidence.value", "missing");
    out.value = *v;
  } else if (action == "abandon_goal") {
    out.action = Interpretation::Action::abandon_goal;
  } else if (action == "continue") {
    out.action = Interpretation::Action::continue_;
  } else {
    in.fail("action", fmt::format("'{}' is not one of new_goal, add_evidence, abandon_goal, continue",
                                  detail::excerpt(action)));
  }
  try {
    check_interpretation(out);
  } catch (const invalid_argument& e) {
    throw parse_error(fmt::format("interpret-message reply: {}", e.what()));
  }
  return out;
}

/// A MessageInterpreter that asks a model with the interpret-message prompt.
///
/// As thread-safe as the model function (it keeps no state of its own).
class ModelInterpreter : public MessageInterpreter {
 public:
  explicit ModelInterpreter(ModelFunction model, ModelAdapterOptions options = {})
      : model_(std::move(model)), options_(options) {}

  Interpretation interpret(const std::string& message, const Goal* current, const nlohmann::json& evidence) override {
    return detail::ask_model(model_, render_interpret_prompt(message, current, evidence), "interpret-message",
                             options_, read_interpretation);
  }

 private:
  ModelFunction model_;
  ModelAdapterOptions options_;
};

// ---- execute-gather ------------------------------------------------------------------------------------------------

/// The response schema of execute-gather.
inline nlohmann::json execute_gather_schema() {
  return nlohmann::json::parse(R"({
  "type": "object",
  "properties": {
    "question": {"type": "string"},
    "suggestions": {"type": "array", "items": {"type": "string"}}
  },
  "required": ["question"]
})");
}

/// The execute-gather prompt: ask the user for `key`, guided by `prompt`, knowing `evidence`.
inline std::string render_gather_prompt(const std::string& key, const std::string& prompt,
                                        const nlohmann::json& evidence) {
  return fmt::format(
      "Write the question that asks the user for one piece of information.\n\n"
      "Information needed: {}\nWhat to ask about: {}\nWhat is known already: {}\n\n"
      "Ask one short, friendly question. Offer a few likely answers as suggestions when that helps.\n\n{}",
      key, default_question(key, prompt), detail::json_text(evidence),
      detail::output_instructions(execute_gather_schema()));
}

/// Reads an execute-gather reply. Throws cairn::parse_error naming the field.
inline Question read_question(const nlohmann::json& j) {
  const detail::ReplyReader in("execute-gather");
  in.object(j, "");
  Question q;
  q.text = in.string(j, "question", "question", true);
  if (q.text.empty()) in.fail("question", "must not be empty");
  if (const auto s = j.find("suggestions"); s != j.end() && !s->is_null()) {
    if (!s->is_array()) in.fail("suggestions", fmt::format("expected an array, got {}", s->type_name()));
    for (std::size_t i = 0; i < s->size(); ++i) {
      if (!(*s)[i].is_string()) in.fail(fmt::format("suggestions[{}]", i), "expected a string");
      q.suggestions.push_back((*s)[i].get<std::string>());
    }
  }
  return q;
}

/// A QuestionWriter that asks a model with the execute-gather prompt.
class ModelQuestionWriter : public QuestionWriter {
 public:
  explicit ModelQuestionWriter(ModelFunction model, ModelAdapterOptions options = {})
      : model_(std::move(model)), options_(options) {}

  Question write(const Goal&, const std::string& key, const std::string& prompt,
                 const nlohmann::json& evidence) override {
    return detail::ask_model(model_, render_gather_prompt(key, prompt, evidence), "execute-gather", options_,
                             read_question);
  }

 private:
  ModelFunction model_;
  ModelAdapterOptions options_;
};

// ---- check-completion ----------------------------------------------------------------------------------------------

/// The response schema of check-completion.
inline nlohmann::json check_completion_schema() {
  return nlohmann::json::parse(R"({
  "type": "object",
  "properties": {
    "satisfied": {"type": "boolean"},
    "reasoning": {"type": "string"}
  },
  "required": ["satisfied", "reasoning"]
})");
}

/// The check-completion prompt: does `predicate` hold, given `evidence`, for the goal `gloss`?
inline std::string render_completion_prompt(const Predicate& predicate, const nlohmann::json& evidence,
                                            const std::string& gloss) {
  return fmt::format(
      "Decide whether a condition holds, using only the evidence below.\n\n"
      "Condition: {}\nEvidence: {}\nContext: the goal \"{}\"\n\n"
      "Say satisfied: true only when the evidence shows the condition holds.\n\n{}",
      detail::json_text(nlohmann::json(predicate)), detail::json_text(evidence), gloss,
      detail::output_instructions(check_completion_schema()));
}

/// Reads a check-completion reply: the value of `satisfied`. Throws cairn::parse_error naming the field.
inline bool read_completion(const nlohmann::json& j) {
  const detail::ReplyReader in("check-completion");
  in.object(j, "");
  const auto s = j.find("satisfied");
  if (s == j.end() || s->is_null()) in.fail("satisfied", "missing");
  if (!s->is_boolean()) in.fail("satisfied", fmt::format("expected a boolean, got {}", s->type_name()));
  (void)in.string(j, "reasoning", "reasoning", true);
  return s->get<bool>();
}

/// A ConditionEvaluator that asks a model with the check-completion prompt.
class ModelConditionEvaluator : public ConditionEvaluator {
 public:
  explicit ModelConditionEvaluator(ModelFunction model, ModelAdapterOptions options = {})
      : model_(std::move(model)), options_(options) {}

  bool evaluate(const Predicate& predicate, const Goal& goal, const nlohmann::json& evidence) override {
    return detail::ask_model(model_, render_completion_prompt(predicate, evidence, goal.gloss), "check-completion",
                             options_, read_completion);
  }

 private:
  ModelFunction model_;
  ModelAdapterOptions options_;
};

CAIRN_END_NAMESPACE
