// cairn — the function bodies of cairn/context/schema.hpp (docs/api.md, "Compiled mode"). Header-only, the
// default, that header includes this file and CAIRN_INLINE is `inline`; with CAIRN_COMPILED_LIB they are
// compiled once, into cairn::compiled (src/compiled/), and the header only declares them, so that a
// CAIRN_WITH_SCHEMA build keeps valijson out of every includer of cairn/context/tool.hpp.
#pragma once

#include "cairn/context/schema.hpp"
#include "cairn/version.hpp"

#if CAIRN_WITH_SCHEMA
// Without exceptions valijson prints and calls abort() on a schema it cannot use: cairn needs it to throw.
#ifndef VALIJSON_USE_EXCEPTIONS
#define VALIJSON_USE_EXCEPTIONS 1
#endif
#if !VALIJSON_USE_EXCEPTIONS
#error "cairn's schema validation needs VALIJSON_USE_EXCEPTIONS=1 (valijson aborts the process otherwise)"
#endif
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>
#endif

CAIRN_BEGIN_NAMESPACE

#if CAIRN_WITH_SCHEMA

namespace detail {

/// The draft-07 meta-schema (json-schema.org/draft-07/schema), against which every schema is checked first so that
/// a malformed keyword is reported with its place in the schema.
inline constexpr std::string_view draft7_meta_schema = R"cairn({"$schema":"http://json-schema.org/draft-07/schema#","$id":"http://json-schema.org/draft-07/schema#","title":"Core schema meta-schema","definitions":{"schemaArray":{"type":"array","minItems":1,"items":{"$ref":"#"}},"nonNegativeInteger":{"type":"integer","minimum":0},"nonNegativeIntegerDefault0":{"allOf":[{"$ref":"#/definitions/nonNegativeInteger"},{"default":0}]},"simpleTypes":{"enum":["array","boolean","integer","null","number","object","string"]},"stringArray":{"type":"array","items":{"type":"string"},"uniqueItems":true,"default":[]}},"type":["object","boolean"],"properties":{"$id":{"type":"string","format":"uri-reference"},"$schema":{"type":"string","format":"uri"},"$ref":{"type":"string","format":"uri-reference"},"$comment":{"type":"string"},"title":{"type":"string"},"description":{"type":"string"},"default":true,"readOnly":{"type":"boolean","default":false},"examples":{"type":"array","items":true},"multipleOf":{"type":"number","exclusiveMinimum":0},"maximum":{"type":"number"},"exclusiveMaximum":{"type":"number"},"minimum":{"type":"number"},"exclusiveMinimum":{"type":"number"},"maxLength":{"$ref":"#/definitions/nonNegativeInteger"},"minLength":{"$ref":"#/definitions/nonNegativeIntegerDefault0"},"pattern":{"type":"string","format":"regex"},"additionalItems":{"$ref":"#"},"items":{"anyOf":[{"$ref":"#"},{"$ref":"#/definitions/schemaArray"}],"default":true},"maxItems":{"$ref":"#/definitions/nonNegativeInteger"},"minItems":{"$ref":"#/definitions/nonNegativeIntegerDefault0"},"uniqueItems":{"type":"boolean","default":false},"contains":{"$ref":"#"},"maxProperties":{"$ref":"#/definitions/nonNegativeInteger"},"minProperties":{"$ref":"#/definitions/nonNegativeIntegerDefault0"},"required":{"$ref":"#/definitions/stringArray"},"additionalProperties":{"$ref":"#"},"definitions":{"type":"object","additionalProperties":{"$ref":"#"},"default":{}},"properties":{"type":"object","additionalProperties":{"$ref":"#"},"default":{}},"patternProperties":{"type":"object","additionalProperties":{"$ref":"#"},"propertyNames":{"format":"regex"},"default":{}},"dependencies":{"type":"object","additionalProperties":{"anyOf":[{"$ref":"#"},{"$ref":"#/definitions/stringArray"}]}},"propertyNames":{"$ref":"#"},"const":true,"enum":{"type":"array","items":true},"type":{"anyOf":[{"$ref":"#/definitions/simpleTypes"},{"type":"array","items":{"$ref":"#/definitions/simpleTypes"},"minItems":1,"uniqueItems":true}]},"format":{"type":"string"},"contentMediaType":{"type":"string"},"contentEncoding":{"type":"string"},"if":{"$ref":"#"},"then":{"$ref":"#"},"else":{"$ref":"#"},"allOf":{"$ref":"#/definitions/schemaArray"},"anyOf":{"$ref":"#/definitions/schemaArray"},"oneOf":{"$ref":"#/definitions/schemaArray"},"not":{"$ref":"#"}},"default":true})cairn";

using ValijsonAdapter = valijson::adapters::NlohmannJsonAdapter;

/// Follows local `$ref`s ("#/definitions/x") from `s`, at most 32 of them (a cycle ends there).
CAIRN_INLINE const nlohmann::json* follow_refs(const nlohmann::json& root, const nlohmann::json* s) {
  for (int hops = 0; s && s->is_object() && hops < 32; ++hops) {
    const auto ref = s->find("$ref");
    if (ref == s->end() || !ref->is_string()) return s;
    const std::string& text = ref->get_ref<const std::string&>();
    if (text.empty() || text[0] != '#') return nullptr;
    try {
      const nlohmann::json::json_pointer p(text.substr(1));
      if (!root.contains(p)) return nullptr;
      s = &root.at(p);
    } catch (const std::exception&) {
      return nullptr;
    }
  }
  return s;
}

/// The subschema that applies to the value at `tokens` when it is found through properties / items (no
/// combinators): enough to name the expected type, enum or bound in a message. Null when it cannot tell.
CAIRN_INLINE const nlohmann::json* subschema_at(const nlohmann::json& root, const nlohmann::json& value,
                                          const std::vector<std::string>& tokens) {
  const nlohmann::json* s = follow_refs(root, &root);
  const nlohmann::json* v = &value;
  for (const std::string& t : tokens) {
    if (!s || !s->is_object() || !v) return nullptr;
    if (v->is_object()) {
      const auto props = s->find("properties");
      const nlohmann::json* next = nullptr;
      if (props != s->end() && props->is_object()) {
        if (const auto p = props->find(t); p != props->end()) next = &*p;
      }
      if (!next) {
        const auto extra = s->find("additionalProperties");
        if (extra != s->end() && extra->is_object()) next = &*extra;
      }
      const auto member = v->find(t);
      v = member == v->end() ? nullptr : &*member;
      s = follow_refs(root, next);
    } else if (v->is_array()) {
      std::size_t index = 0;
      try {
        index = static_cast<std::size_t>(std::stoull(t));
      } catch (const std::exception&) {
        return nullptr;
      }
      const auto items = s->find("items");
      if (items == s->end()) return nullptr;
      const nlohmann::json* next = items->is_object() ? &*items : nullptr;
      if (items->is_array()) next = index < items->size() ? &(*items)[index] : nullptr;
      v = index < v->size() ? &(*v)[index] : nullptr;
      s = follow_refs(root, next);
    } else {
      return nullptr;
    }
  }
  return s;
}

CAIRN_INLINE std::string lower_first_without_dot(std::string text) {
  if (!text.empty() && text.back() == '.') text.pop_back();
  if (!text.empty() && text[0] >= 'A' && text[0] <= 'Z') text[0] = static_cast<char>(text[0] - 'A' + 'a');
  return text;
}

/// Turns one valijson error into a violation with a JSON pointer, a rule (keyword) and a short message.
CAIRN_INLINE SchemaViolation to_violation(const nlohmann::json& schema, const nlohmann::json& value,
                                    const valijson::ValidationResults::Error& e) {
  SchemaViolation out;
  std::vector<std::string> tokens;
  const nlohmann::json* v = &value;
  for (std::size_t i = 1; i < e.context.size(); ++i) {  // context[0] is "<root>", then "[token]" per level
    std::string t = e.context[i];
    if (t.size() >= 2 && t.front() == '[' && t.back() == ']') t = t.substr(1, t.size() - 2);
    append_pointer_token(out.pointer, t);
    if (v && v->is_object()) {
      const auto m = v->find(t);
      v = m == v->end() ? nullptr : &*m;
    } else if (v && v->is_array()) {
      std::size_t index = 0;
      try {
        index = static_cast<std::size_t>(std::stoull(t));
      } catch (const std::exception&) {
        index = v->size();
      }
      v = index < v->size() ? &(*v)[index] : nullptr;
    } else {
      v = nullptr;
    }
    tokens.push_back(std::move(t));
  }
  const std::string& d = e.description;
  auto has = [&](std::string_view s) { return d.find(s) != std::string::npos; };
  const nlohmann::json* sub = subschema_at(schema, value, tokens);
  auto keyword = [&](const char* k) -> const nlohmann::json* {
    if (!sub || !sub->is_object()) return nullptr;
    const auto it = sub->find(k);
    return it == sub->end() ? nullptr : &*it;
  };
  auto got = [&] { return v ? fmt::format("got {}", json_type_word(*v)) : std::string("got another type"); };
  auto got_value = [&] { return v ? excerpt(v->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)) : ""; };
  if (has("'type' constraint")) {
    out.rule = "type";
    std::string expected;
    if (const auto* t = keyword("type"); t && t->is_string()) {
      expected = t->get<std::string>();
    } else if (t && t->is_array()) {
      for (const auto& one : *t) {
        if (!one.is_string()) continue;
        if (!expected.empty()) expected += " or ";
        expected += one.get<std::string>();
      }
    }
    out.message = expected.empty() ? fmt::format("not a type the schema allows, {}", got())
                                   : fmt::format("expected type {}, {}", expected, got());
  } else if (has("Missing required property")) {
    out.rule = "required";
    out.message = lower_first_without_dot(d);
  } else if (has("enum values")) {
    out.rule = "enum";
    const auto* values = keyword("enum");
    out.message = values ? fmt::format("expected one of {}, got {}", excerpt(values->dump()), got_value())
                         : fmt::format("not one of the enum's values, got {}", got_value());
  } else if (has("Expected number greater than") || has("Expected number less than")) {
    const bool lower = has("greater");
    const bool inclusive = has("or equal");
    const char* exclusive_kw = lower ? "exclusiveMinimum" : "exclusiveMaximum";
    const auto* exclusive = keyword(exclusive_kw);
    out.rule = inclusive || !exclusive || !exclusive->is_number() ? (lower ? "minimum" : "maximum") : exclusive_kw;
    const auto* bound = keyword(out.rule.c_str());
    out.message = bound ? fmt::format("expected a number {} {}, got {}", lower ? (inclusive ? ">=" : ">")
                                                                               : (inclusive ? "<=" : "<"),
                                      bound->dump(), got_value())
                        : lower_first_without_dot(d);
  } else if (has("could not be validated using 'properties' or 'additionalProperties'")) {
    out.rule = "additionalProperties";
    const auto quote = d.find(": '");
    out.message = quote == std::string::npos
                      ? lower_first_without_dot(d)
                      : fmt::format("property {} is not allowed", lower_first_without_dot(d.substr(quote + 2)));
  } else {
    static constexpr std::pair<std::string_view, std::string_view> rules[] = {
        {"'pattern'", "pattern"},       {"String should be no more", "maxLength"},
        {"String should be no fewer", "minLength"}, {"Array should contain no more", "maxItems"},
        {"Array should contain no fewer", "minItems"}, {"Object should have no more", "maxProperties"},
        {"Object should have no fewer", "minProperties"}, {"multiple of", "multipleOf"},
        {"anyOf", "anyOf"},              {"exactly one", "oneOf"},
        {"allOf", "allOf"},              {"'not'", "not"},
        {"'const'", "const"},            {"'contains'", "contains"},
        {"Elements at indexes", "uniqueItems"}, {"String should be a valid", "format"},
        {"dependency", "dependencies"},  {"dependent schema", "dependencies"},
        {"if-then-else", "if"},          {"property name", "propertyNames"},
        {"more items than allowed", "additionalItems"}};
    out.rule = "schema";
    for (const auto& [needle, rule] : rules) {
      if (has(needle)) {
        out.rule = std::string(rule);
        break;
      }
    }
    out.message = lower_first_without_dot(d);
  }
  return out;
}

/// True when `schema` has a member named `key` at any depth (walked without recursion).
CAIRN_INLINE bool has_key_anywhere(const nlohmann::json& schema, std::string_view key) {
  std::vector<const nlohmann::json*> todo{&schema};
  while (!todo.empty()) {
    const nlohmann::json* j = todo.back();
    todo.pop_back();
    if (j->is_object()) {
      for (auto it = j->begin(); it != j->end(); ++it) {
        if (it.key() == key) return true;
        if (it->is_structured()) todo.push_back(&*it);
      }
    } else if (j->is_array()) {
      for (const auto& e : *j) {
        if (e.is_structured()) todo.push_back(&e);
      }
    }
  }
  return false;
}

/// The pointer of the first string in `value` (or member name) that is not valid UTF-8, if any. valijson counts
/// the characters of a string for minLength / maxLength with a decoder that reads past its table on malformed
/// sequences, so such strings never reach it.
CAIRN_INLINE std::optional<std::string> invalid_utf8_at(const nlohmann::json& value) {
  {  // the usual case, everything valid: one walk that builds no pointers
    std::vector<const nlohmann::json*> scan{&value};
    bool all_valid = true;
    while (all_valid && !scan.empty()) {
      const nlohmann::json* j = scan.back();
      scan.pop_back();
      if (j->is_string()) {
        all_valid = is_valid_utf8(j->get_ref<const std::string&>());
      } else if (j->is_object()) {
        for (auto it = j->begin(); all_valid && it != j->end(); ++it) {
          all_valid = is_valid_utf8(it.key());
          if (!it->is_primitive() || it->is_string()) scan.push_back(&*it);
        }
      } else if (j->is_array()) {
        for (const auto& e : *j) {
          if (!e.is_primitive() || e.is_string()) scan.push_back(&e);
        }
      }
    }
    if (all_valid) return std::nullopt;
  }
  std::vector<std::pair<const nlohmann::json*, std::string>> todo;
  todo.emplace_back(&value, "");
  while (!todo.empty()) {
    auto [j, at] = std::move(todo.back());
    todo.pop_back();
    if (j->is_string()) {
      if (!is_valid_utf8(j->get_ref<const std::string&>())) return at;
    } else if (j->is_object()) {
      for (auto it = j->begin(); it != j->end(); ++it) {
        std::string child = at;
        append_pointer_token(child, it.key());
        if (!is_valid_utf8(it.key())) return child;
        todo.emplace_back(&*it, std::move(child));
      }
    } else if (j->is_array()) {
      for (std::size_t i = 0; i < j->size(); ++i) todo.emplace_back(&(*j)[i], at + "/" + std::to_string(i));
    }
  }
  return std::nullopt;
}

/// True when `e` only says that something below it failed (valijson reports the parent too).
CAIRN_INLINE bool is_wrapper_error(const valijson::ValidationResults::Error& e,
                             const std::deque<valijson::ValidationResults::Error>& all) {
  if (e.description.rfind("Failed to validate", 0) != 0) return false;
  for (const auto& other : all) {
    if (other.context.size() > e.context.size() &&
        std::equal(e.context.begin(), e.context.end(), other.context.begin())) {
      return true;
    }
  }
  return false;
}

}  // namespace detail

/// The compiled form and a small pool of validators: a valijson::Validator caches the regexes of `pattern` and is
/// not thread-safe, so each call borrows one (or makes one) and gives it back.
struct CompiledSchema::Compiled {
  valijson::Schema schema;
  mutable std::mutex mutex;
  mutable std::vector<std::unique_ptr<valijson::Validator>> idle;

  std::unique_ptr<valijson::Validator> borrow() const {
    std::lock_guard lock(mutex);
    if (idle.empty()) return std::make_unique<valijson::Validator>(valijson::Validator::kStrongTypes);
    auto v = std::move(idle.back());
    idle.pop_back();
    return v;
  }
  void give_back(std::unique_ptr<valijson::Validator> v) const {
    std::lock_guard lock(mutex);
    if (idle.size() < 16) idle.push_back(std::move(v));
  }
};

namespace detail {

CAIRN_INLINE const CompiledSchema& draft7_meta() {
  // Immutable after its (thread-safe) first use: a cache of a constant, not state.
  static const CompiledSchema meta(nlohmann::json::parse(draft7_meta_schema), "the draft-07 meta-schema");
  return meta;
}

}  // namespace detail

CAIRN_INLINE CompiledSchema::CompiledSchema(const nlohmann::json& schema, std::string_view what) : source_(schema) {
  if (!schema.is_object() && !schema.is_boolean()) {
    throw invalid_argument(fmt::format("{}: a JSON Schema must be an object or a boolean, got {}", what,
                                       schema.type_name()));
  }
  if (what != "the draft-07 meta-schema") {
    std::size_t total = 0;
    const auto bad = detail::draft7_meta().validate(schema, 1, &total);
    if (!bad.empty()) {
      throw invalid_argument(
          fmt::format("{}: not a valid JSON Schema: {}", what, describe_violations("at", bad, total)));
    }
  }
  auto compiled = std::make_shared<Compiled>();
  try {
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
    parser.populateSchema(detail::ValijsonAdapter(schema), compiled->schema);
  } catch (const std::exception& e) {
    throw invalid_argument(fmt::format("{}: not a usable JSON Schema: {}", what, e.what()));
  }
  compiled_ = std::move(compiled);
  counts_characters_ = detail::has_key_anywhere(schema, "minLength") || detail::has_key_anywhere(schema, "maxLength");
  runs_regexes_ = detail::has_key_anywhere(schema, "pattern") || detail::has_key_anywhere(schema, "patternProperties") ||
                  detail::has_key_anywhere(schema, "format");
}

CAIRN_INLINE std::vector<SchemaViolation> CompiledSchema::validate(const nlohmann::json& value,
                                                                   std::size_t max_reported,
                                                             std::size_t* total) const {
  std::vector<SchemaViolation> out;
  if (total) *total = 0;
  if (counts_characters_) {
    if (auto at = detail::invalid_utf8_at(value)) {
      out.push_back(SchemaViolation{std::move(*at), "string", "not valid UTF-8"});
      if (total) *total = 1;
      return out;
    }
  }
  // std::regex recurses per character: a long string must never reach one (cairn/detail/schema_regex_reach.hpp).
  if (runs_regexes_ && detail::has_string_longer_than(value, max_pattern_subject_bytes)) {
    if (auto at = detail::long_string_under_regex(source_, value, max_pattern_subject_bytes)) {
      out.push_back(SchemaViolation{at->pointer, "pattern", at->describe(max_pattern_subject_bytes)});
      if (total) *total = 1;
      return out;
    }
  }
  auto validator = compiled_->borrow();
  const detail::ValijsonAdapter target(value);
  try {
    if (validator->validate(compiled_->schema, target, nullptr)) {
      compiled_->give_back(std::move(validator));
      return out;
    }
    valijson::ValidationResults results;
    validator->validate(compiled_->schema, target, &results);
    compiled_->give_back(std::move(validator));
    std::deque<valijson::ValidationResults::Error> errors(results.begin(), results.end());
    std::size_t count = 0;
    for (const auto& e : errors) {
      if (detail::is_wrapper_error(e, errors)) continue;
      ++count;
      if (out.size() < max_reported) out.push_back(detail::to_violation(source_, value, e));
    }
    if (count == 0) {  // only wrappers: report the first
      count = 1;
      if (max_reported > 0) out.push_back(detail::to_violation(source_, value, errors.front()));
    }
    if (total) *total = count;
  } catch (const std::exception& e) {
    // valijson throws on a few schema/value pairs it cannot judge (a `pattern` std::regex rejects, `format` on a
    // value that is not a string): a value cairn cannot vouch for is refused, never let through.
    out.clear();
    out.push_back(SchemaViolation{"", "schema", fmt::format("the validator could not check the value: {}", e.what())});
    if (total) *total = 1;
  }
  return out;
}

#else  // !CAIRN_WITH_SCHEMA: the top-level `required` keys only

CAIRN_INLINE CompiledSchema::CompiledSchema(const nlohmann::json& schema, std::string_view what) : source_(schema) {
  if (!schema.is_object()) {
    throw invalid_argument(fmt::format("{}: must be a JSON object, got {}", what, schema.type_name()));
  }
  if (const auto it = schema.find("required"); it != schema.end() && it->is_array()) {
    for (const auto& key : *it) {
      if (key.is_string()) required_.push_back(key.get<std::string>());
    }
  }
}

CAIRN_INLINE std::vector<SchemaViolation> CompiledSchema::validate(const nlohmann::json& value,
                                                                   std::size_t max_reported,
                                                             std::size_t* total) const {
  std::vector<SchemaViolation> out;
  std::size_t count = 0;
  for (const std::string& key : required_) {
    if (value.is_object() && value.contains(key)) continue;
    ++count;
    if (out.size() < max_reported) {
      out.push_back(
          SchemaViolation{"", "required", fmt::format("missing required property '{}'", detail::excerpt(key))});
    }
  }
  if (total) *total = count;
  return out;
}

#endif

CAIRN_END_NAMESPACE
