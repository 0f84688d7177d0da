// cairn — the function bodies of cairn/goals/model_adapters.hpp (docs/api.md, "Compiled mode"). Header-only, the
// default, that header includes this file and CAIRN_INLINE is `inline`; with CAIRN_COMPILED_LIB they are
// compiled once, into cairn::compiled (src/compiled/), and the header only declares them.
#pragma once

#include "cairn/goals/model_adapters.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

namespace detail {
CAIRN_INLINE std::string json_text(const nlohmann::json& v, int indent) {
  return v.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

CAIRN_INLINE std::string output_instructions(const nlohmann::json& schema) {
  return "Reply with one JSON object, and nothing else, that matches this JSON Schema:\n" + json_text(schema, 2);
}

CAIRN_INLINE const nlohmann::json& ReplyReader::object(const nlohmann::json& j, std::string_view field) const {
  if (!j.is_object())
    fail(field.empty() ? "the reply" : field, fmt::format("expected an object, got {}", j.type_name()));
  return j;
}

CAIRN_INLINE std::string ReplyReader::string(const nlohmann::json& obj, const char* key, std::string_view field,
                                             bool required) const {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) {
    if (required) fail(field, "missing");
    return {};
  }
  if (!it->is_string()) fail(field, fmt::format("expected a string, got {}", it->type_name()));
  return it->get<std::string>();
}

}  // namespace detail

CAIRN_INLINE nlohmann::json interpret_message_schema() {
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

CAIRN_INLINE std::string render_interpret_prompt(const std::string& message, const Goal* current,
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

CAIRN_INLINE Interpretation read_interpretation(const nlohmann::json& j) {
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
    in.fail("action",
            fmt::format("'{}' is not one of new_goal, add_evidence, abandon_goal, continue", detail::excerpt(action)));
  }
  try {
    check_interpretation(out);
  } catch (const invalid_argument& e) {
    throw parse_error(fmt::format("interpret-message reply: {}", e.what()));
  }
  return out;
}

CAIRN_INLINE Interpretation ModelInterpreter::interpret(const std::string& message, const Goal* current,
                                                        const nlohmann::json& evidence) {
  return detail::ask_model(model_, render_interpret_prompt(message, current, evidence), "interpret-message", options_,
                           read_interpretation);
}

CAIRN_INLINE nlohmann::json execute_gather_schema() {
  return nlohmann::json::parse(R"({
  "type": "object",
  "properties": {
    "question": {"type": "string"},
    "suggestions": {"type": "array", "items": {"type": "string"}}
  },
  "required": ["question"]
})");
}

CAIRN_INLINE std::string render_gather_prompt(const std::string& key, const std::string& prompt,
                                              const nlohmann::json& evidence) {
  return fmt::format(
      "Write the question that asks the user for one piece of information.\n\n"
      "Information needed: {}\nWhat to ask about: {}\nWhat is known already: {}\n\n"
      "Ask one short, friendly question. Offer a few likely answers as suggestions when that helps.\n\n{}",
      key, default_question(key, prompt), detail::json_text(evidence),
      detail::output_instructions(execute_gather_schema()));
}

CAIRN_INLINE Question read_question(const nlohmann::json& j) {
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

CAIRN_INLINE Question ModelQuestionWriter::write(const Goal&, const std::string& key, const std::string& prompt,
                                                 const nlohmann::json& evidence) {
  return detail::ask_model(model_, render_gather_prompt(key, prompt, evidence), "execute-gather", options_,
                           read_question);
}

CAIRN_INLINE nlohmann::json check_completion_schema() {
  return nlohmann::json::parse(R"({
  "type": "object",
  "properties": {
    "satisfied": {"type": "boolean"},
    "reasoning": {"type": "string"}
  },
  "required": ["satisfied", "reasoning"]
})");
}

CAIRN_INLINE std::string render_completion_prompt(const Predicate& predicate, const nlohmann::json& evidence,
                                                  const std::string& gloss) {
  return fmt::format(
      "Decide whether a condition holds, using only the evidence below.\n\n"
      "Condition: {}\nEvidence: {}\nContext: the goal \"{}\"\n\n"
      "Say satisfied: true only when the evidence shows the condition holds.\n\n{}",
      detail::json_text(nlohmann::json(predicate)), detail::json_text(evidence), gloss,
      detail::output_instructions(check_completion_schema()));
}

CAIRN_INLINE bool read_completion(const nlohmann::json& j) {
  const detail::ReplyReader in("check-completion");
  in.object(j, "");
  const auto s = j.find("satisfied");
  if (s == j.end() || s->is_null()) in.fail("satisfied", "missing");
  if (!s->is_boolean()) in.fail("satisfied", fmt::format("expected a boolean, got {}", s->type_name()));
  (void)in.string(j, "reasoning", "reasoning", true);
  return s->get<bool>();
}

CAIRN_INLINE bool ModelConditionEvaluator::evaluate(const Predicate& predicate, const Goal& goal,
                                                    const nlohmann::json& evidence) {
  return detail::ask_model(model_, render_completion_prompt(predicate, evidence, goal.gloss), "check-completion",
                           options_, read_completion);
}

CAIRN_END_NAMESPACE
