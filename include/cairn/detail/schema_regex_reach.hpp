// cairn (detail) — which strings of a value a JSON Schema could run a regular expression on.
//
// valijson checks `pattern`, `patternProperties` (on member names) and the `date` / `time` / `date-time` formats
// with libstdc++'s std::regex, which recurses once or more per character of the subject: a string of some tens of
// thousands of characters overflows the stack and kills the process. cairn/context/schema.hpp therefore refuses,
// before valijson runs, a value with a string (or member name) longer than max_pattern_subject_bytes at a place
// where such a regex could apply. "Could": the walk below follows every subschema that may apply at a place
// (properties, every patternProperties entry, additionalProperties, items, additionalItems, contains, allOf, anyOf,
// oneOf, not, if / then / else, dependencies, local $refs), without evaluating conditions, so it may over-approximate
// but never misses one; a $ref it cannot follow counts as "a regex may apply below".
#pragma once

#include <cstddef>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cairn/detail/text.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

/// The longest string, in bytes, that a schema check lets a regular expression (`pattern`, `patternProperties`,
/// the `date` / `time` / `date-time` formats) run on; a longer one at such a place is refused (docs/context.md).
/// std::regex needs up to about 0.75 KB of stack per character, so this stays within a few MB of stack.
inline constexpr std::size_t max_pattern_subject_bytes = 4096;

namespace detail {

/// True when `value` holds a string or member name longer than `limit` bytes (one walk, no pointers built).
inline bool has_string_longer_than(const nlohmann::json& value, std::size_t limit) {
  std::vector<const nlohmann::json*> todo{&value};
  while (!todo.empty()) {
    const nlohmann::json* j = todo.back();
    todo.pop_back();
    if (j->is_string()) {
      if (j->get_ref<const std::string&>().size() > limit) return true;
    } else if (j->is_object()) {
      for (auto it = j->begin(); it != j->end(); ++it) {
        if (it.key().size() > limit) return true;
        if (it->is_structured() || it->is_string()) todo.push_back(&*it);
      }
    } else if (j->is_array()) {
      for (const auto& e : *j) {
        if (e.is_structured() || e.is_string()) todo.push_back(&e);
      }
    }
  }
  return false;
}

/// True when a subschema of `schema` runs a regex on a string: it has `pattern`, or a `format` valijson checks.
inline bool runs_regex(const nlohmann::json& schema) {
  if (!schema.is_object()) return false;
  if (const auto p = schema.find("pattern"); p != schema.end() && p->is_string()) return true;
  if (const auto f = schema.find("format"); f != schema.end() && f->is_string()) {
    const auto& name = f->get_ref<const std::string&>();
    return name == "date" || name == "time" || name == "date-time";
  }
  return false;
}

/// Adds to `schemas` every subschema that applies in place to the same value (allOf, anyOf, oneOf, not, if, then,
/// else, dependencies, $ref), transitively. False when a $ref cannot be followed (not a local JSON pointer).
inline bool close_in_place(const nlohmann::json& root, std::vector<const nlohmann::json*>& schemas) {
  bool known = true;
  auto add = [&](const nlohmann::json& s) {
    for (const auto* have : schemas) {
      if (have == &s) return;
    }
    schemas.push_back(&s);
  };
  for (std::size_t i = 0; i < schemas.size(); ++i) {  // grows while it runs
    const nlohmann::json& s = *schemas[i];
    if (!s.is_object()) continue;
    for (const char* list : {"allOf", "anyOf", "oneOf"}) {
      if (const auto it = s.find(list); it != s.end() && it->is_array()) {
        for (const auto& e : *it) add(e);
      }
    }
    for (const char* one : {"not", "if", "then", "else"}) {
      if (const auto it = s.find(one); it != s.end()) add(*it);
    }
    if (const auto it = s.find("dependencies"); it != s.end() && it->is_object()) {
      for (const auto& d : *it) {
        if (d.is_object() || d.is_boolean()) add(d);
      }
    }
    if (const auto it = s.find("$ref"); it != s.end() && it->is_string()) {
      const auto& ref = it->get_ref<const std::string&>();
      const nlohmann::json* target = nullptr;
      if (!ref.empty() && ref[0] == '#') {
        try {
          const nlohmann::json::json_pointer pointer(ref.substr(1));
          if (root.contains(pointer)) target = &root.at(pointer);
        } catch (const std::exception&) {
        }
      }
      if (target) {
        add(*target);
      } else {
        known = false;
      }
    }
  }
  return known;
}

/// A string or member name too long for a regex, found by long_string_under_regex.
struct LongRegexSubject {
  std::string pointer;  // JSON pointer of the string, or of the member whose name it is
  std::size_t bytes = 0;
  bool member_name = false;

  /// "a string of 200000 bytes, longer than the 4096 bytes ...", for a SchemaViolation's message.
  std::string describe(std::size_t limit) const {
    return std::string(member_name ? "a member name of " : "a string of ") + std::to_string(bytes) +
           " bytes, longer than the " + std::to_string(limit) +
           " bytes a regular expression (pattern, patternProperties, a date or time format) is run on";
  }
};

/// The first string (or member name) of `value` longer than `limit` bytes that a regex of `schema` could run on;
/// nullopt when there is none.
inline std::optional<LongRegexSubject> long_string_under_regex(const nlohmann::json& schema, const nlohmann::json& value,
                                                          std::size_t limit) {
  struct Place {
    const nlohmann::json* value;
    std::string pointer;
    std::vector<const nlohmann::json*> schemas;
    bool unknown;  // a $ref below could not be followed: any regex may apply here
  };
  std::vector<Place> todo;
  todo.push_back(Place{&value, "", {&schema}, false});
  while (!todo.empty()) {
    Place place = std::move(todo.back());
    todo.pop_back();
    if (!close_in_place(schema, place.schemas)) place.unknown = true;
    const nlohmann::json& v = *place.value;
    bool regex_here = place.unknown;
    for (const auto* s : place.schemas) regex_here = regex_here || runs_regex(*s);
    if (v.is_string()) {
      const std::size_t size = v.get_ref<const std::string&>().size();
      if (regex_here && size > limit) return LongRegexSubject{std::move(place.pointer), size, false};
      continue;
    }
    if (v.is_object()) {
      // Member names meet the regexes of patternProperties, and those of propertyNames' subschemas.
      bool regex_on_names = place.unknown;
      std::vector<const nlohmann::json*> name_schemas;
      for (const auto* s : place.schemas) {
        if (!s->is_object()) continue;
        if (const auto pp = s->find("patternProperties"); pp != s->end() && pp->is_object() && !pp->empty()) {
          regex_on_names = true;
        }
        if (const auto pn = s->find("propertyNames"); pn != s->end()) name_schemas.push_back(&*pn);
      }
      if (!name_schemas.empty()) {
        if (!close_in_place(schema, name_schemas)) regex_on_names = true;
        for (const auto* s : name_schemas) regex_on_names = regex_on_names || runs_regex(*s);
      }
      for (auto it = v.begin(); it != v.end(); ++it) {
        std::string at = place.pointer;
        append_pointer_token(at, it.key());
        if (regex_on_names && it.key().size() > limit) return LongRegexSubject{std::move(at), it.key().size(), true};
        if (!it->is_structured() && !(it->is_string() && it->get_ref<const std::string&>().size() > limit)) continue;
        Place child{&*it, std::move(at), {}, place.unknown};
        for (const auto* s : place.schemas) {
          if (!s->is_object()) continue;
          if (const auto p = s->find("properties"); p != s->end() && p->is_object()) {
            if (const auto m = p->find(it.key()); m != p->end()) child.schemas.push_back(&*m);
          }
          if (const auto pp = s->find("patternProperties"); pp != s->end() && pp->is_object()) {
            for (const auto& e : *pp) child.schemas.push_back(&e);  // every one: the regexes are not run here
          }
          if (const auto ap = s->find("additionalProperties"); ap != s->end()) child.schemas.push_back(&*ap);
        }
        todo.push_back(std::move(child));
      }
      continue;
    }
    if (v.is_array()) {
      for (std::size_t i = 0; i < v.size(); ++i) {
        const nlohmann::json& e = v[i];
        if (!e.is_structured() && !(e.is_string() && e.get_ref<const std::string&>().size() > limit)) continue;
        Place child{&e, place.pointer + "/" + std::to_string(i), {}, place.unknown};
        for (const auto* s : place.schemas) {
          if (!s->is_object()) continue;
          if (const auto items = s->find("items"); items != s->end()) {
            if (items->is_array()) {
              if (i < items->size()) {
                child.schemas.push_back(&(*items)[i]);
              } else if (const auto more = s->find("additionalItems"); more != s->end()) {
                child.schemas.push_back(&*more);
              }
            } else {
              child.schemas.push_back(&*items);
            }
          }
          if (const auto c = s->find("contains"); c != s->end()) child.schemas.push_back(&*c);
        }
        todo.push_back(std::move(child));
      }
    }
  }
  return std::nullopt;
}

}  // namespace detail

CAIRN_END_NAMESPACE
