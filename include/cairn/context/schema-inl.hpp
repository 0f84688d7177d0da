// cairn — the function bodies of cairn/context/schema.hpp (docs/api.md, "Compiled mode"). Header-only, the
// default, that header includes this file and CAIRN_INLINE is `inline`; with CAIRN_COMPILED_LIB they are
// compiled once, into cairn::compiled (src/compiled/), and the header only declares them, so that a
// CAIRN_WITH_SCHEMA build keeps RE2's header out of every includer of cairn/context/tool.hpp.
//
// A JSON Schema (draft 7) is compiled into a graph of nodes, one per subschema, with every `$ref` resolved to the
// node it names. Compiling refuses what could make a check unbounded: a schema nested deeper than
// SchemaLimits::max_schema_depth (checked without recursion, before anything else walks it), a loop of `$ref`s and
// in-place subschemas that never moves into the value (it would recurse forever), a `$ref` chain longer than
// max_ref_chain, a pattern RE2 cannot run in linear time. Checking walks the value and the graph together, counting
// steps (a budget growing with the value) and depth (max_check_depth); uniqueItems sorts (O(n log n) comparisons).
#pragma once

#include <cctype>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <unordered_map>

#include "cairn/context/schema.hpp"
#include "cairn/detail/json.hpp"
#include "cairn/version.hpp"

#if CAIRN_WITH_SCHEMA
#include <re2/re2.h>
#endif

// The compiled schema refers to its nodes by int index (a node's children, $ref targets, the loop search); the
// indexes are checked where they are made, so the sign conversions at each use are safe.
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-conversion"
#endif
CAIRN_BEGIN_NAMESPACE

namespace detail {

/// The draft-07 meta-schema (json-schema.org/draft-07/schema), against which every schema is checked first so that
/// a malformed keyword is reported with its place in the schema. A `$ref` to its URI resolves to it.
inline constexpr std::string_view draft7_meta_schema =
    R"cairn({"$schema":"http://json-schema.org/draft-07/schema#","$id":"http://json-schema.org/draft-07/schema#")cairn"
    R"cairn(,"title":"Core schema meta-schema","definitions":{"schemaArray":{"type":"array","minItems":1,"items")cairn"
    R"cairn(:{"$ref":"#"}},"nonNegativeInteger":{"type":"integer","minimum":0},"nonNegativeIntegerDefault0":{"al)cairn"
    R"cairn(lOf":[{"$ref":"#/definitions/nonNegativeInteger"},{"default":0}]},"simpleTypes":{"enum":["array","bo)cairn"
    R"cairn(olean","integer","null","number","object","string"]},"stringArray":{"type":"array","items":{"type":")cairn"
    R"cairn(string"},"uniqueItems":true,"default":[]}},"type":["object","boolean"],"properties":{"$id":{"type":")cairn"
    R"cairn(string","format":"uri-reference"},"$schema":{"type":"string","format":"uri"},"$ref":{"type":"string")cairn"
    R"cairn(,"format":"uri-reference"},"$comment":{"type":"string"},"title":{"type":"string"},"description":{"ty)cairn"
    R"cairn(pe":"string"},"default":true,"readOnly":{"type":"boolean","default":false},"examples":{"type":"array)cairn"
    R"cairn(","items":true},"multipleOf":{"type":"number","exclusiveMinimum":0},"maximum":{"type":"number"},"exc)cairn"
    R"cairn(lusiveMaximum":{"type":"number"},"minimum":{"type":"number"},"exclusiveMinimum":{"type":"number"},"m)cairn"
    R"cairn(axLength":{"$ref":"#/definitions/nonNegativeInteger"},"minLength":{"$ref":"#/definitions/nonNegative)cairn"
    R"cairn(IntegerDefault0"},"pattern":{"type":"string","format":"regex"},"additionalItems":{"$ref":"#"},"items)cairn"
    R"cairn(":{"anyOf":[{"$ref":"#"},{"$ref":"#/definitions/schemaArray"}],"default":true},"maxItems":{"$ref":"#)cairn"
    R"cairn(/definitions/nonNegativeInteger"},"minItems":{"$ref":"#/definitions/nonNegativeIntegerDefault0"},"un)cairn"
    R"cairn(iqueItems":{"type":"boolean","default":false},"contains":{"$ref":"#"},"maxProperties":{"$ref":"#/def)cairn"
    R"cairn(initions/nonNegativeInteger"},"minProperties":{"$ref":"#/definitions/nonNegativeIntegerDefault0"},"r)cairn"
    R"cairn(equired":{"$ref":"#/definitions/stringArray"},"additionalProperties":{"$ref":"#"},"definitions":{"ty)cairn"
    R"cairn(pe":"object","additionalProperties":{"$ref":"#"},"default":{}},"properties":{"type":"object","additi)cairn"
    R"cairn(onalProperties":{"$ref":"#"},"default":{}},"patternProperties":{"type":"object","additionalPropertie)cairn"
    R"cairn(s":{"$ref":"#"},"propertyNames":{"format":"regex"},"default":{}},"dependencies":{"type":"object","ad)cairn"
    R"cairn(ditionalProperties":{"anyOf":[{"$ref":"#"},{"$ref":"#/definitions/stringArray"}]}},"propertyNames":{)cairn"
    R"cairn("$ref":"#"},"const":true,"enum":{"type":"array","items":true},"type":{"anyOf":[{"$ref":"#/definition)cairn"
    R"cairn(s/simpleTypes"},{"type":"array","items":{"$ref":"#/definitions/simpleTypes"},"minItems":1,"uniqueIte)cairn"
    R"cairn(ms":true}]},"format":{"type":"string"},"contentMediaType":{"type":"string"},"contentEncoding":{"type)cairn"
    R"cairn(":"string"},"if":{"$ref":"#"},"then":{"$ref":"#"},"else":{"$ref":"#"},"allOf":{"$ref":"#/definitions)cairn"
    R"cairn(/schemaArray"},"anyOf":{"$ref":"#/definitions/schemaArray"},"oneOf":{"$ref":"#/definitions/schemaArr)cairn"
    R"cairn(ay"},"not":{"$ref":"#"}},"default":true})cairn";

/// The meta-schema's URI without its empty fragment.
inline constexpr std::string_view draft7_meta_uri = "http://json-schema.org/draft-07/schema";

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

namespace schema {

enum : unsigned {
  t_null = 1,
  t_boolean = 2,
  t_integer = 4,
  t_number = 8,
  t_string = 16,
  t_array = 32,
  t_object = 64,
};

/// The type bits a JSON value has: an integer (or a number with no fraction, as draft 6 and later count it) is
/// both integer and number.
inline unsigned type_bits(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::null: return t_null;
    case nlohmann::json::value_t::boolean: return t_boolean;
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned: return t_integer | t_number;
    case nlohmann::json::value_t::number_float: {
      const double d = v.get<double>();
      return std::isfinite(d) && std::floor(d) == d ? (t_integer | t_number) : t_number;
    }
    case nlohmann::json::value_t::string: return t_string;
    case nlohmann::json::value_t::array: return t_array;
    case nlohmann::json::value_t::object: return t_object;
    default: return 0;
  }
}

inline unsigned type_bit_of(std::string_view name) {
  if (name == "null") return t_null;
  if (name == "boolean") return t_boolean;
  if (name == "integer") return t_integer;
  if (name == "number") return t_number | t_integer;
  if (name == "string") return t_string;
  if (name == "array") return t_array;
  if (name == "object") return t_object;
  return 0;
}

/// -1, 0 or 1: `a` against `b`, both numbers; integers exactly, anything with a fraction as doubles.
inline int number_compare(const nlohmann::json& a, const nlohmann::json& b) {
  auto sign = [](auto x, auto y) { return x < y ? -1 : (y < x ? 1 : 0); };
  if (!a.is_number_float() && !b.is_number_float()) {
    const bool an = a.is_number_integer() && !a.is_number_unsigned() && a.get<std::int64_t>() < 0;
    const bool bn = b.is_number_integer() && !b.is_number_unsigned() && b.get<std::int64_t>() < 0;
    if (an != bn) return an ? -1 : 1;
    if (an) return sign(a.get<std::int64_t>(), b.get<std::int64_t>());
    return sign(a.get<std::uint64_t>(), b.get<std::uint64_t>());
  }
  return sign(a.get<double>(), b.get<double>());
}

inline int type_rank(const nlohmann::json& v) {
  if (v.is_null()) return 0;
  if (v.is_boolean()) return 1;
  if (v.is_number()) return 2;
  if (v.is_string()) return 3;
  if (v.is_array()) return 4;
  return 5;
}

/// A total order of JSON values that agrees with JSON Schema's equality (1 and 1.0 are equal; objects compare by
/// their sorted members). Recursive over the value's depth, which a check bounds first.
inline int json_compare(const nlohmann::json& a, const nlohmann::json& b, std::size_t& steps) {
  ++steps;
  const int ra = type_rank(a);
  const int rb = type_rank(b);
  if (ra != rb) return ra < rb ? -1 : 1;
  switch (ra) {
    case 0: return 0;
    case 1: return a.get<bool>() == b.get<bool>() ? 0 : (a.get<bool>() ? 1 : -1);
    case 2: return number_compare(a, b);
    case 3: {
      const int c = a.get_ref<const std::string&>().compare(b.get_ref<const std::string&>());
      return c < 0 ? -1 : (c > 0 ? 1 : 0);
    }
    case 4: {
      const std::size_t n = std::min(a.size(), b.size());
      for (std::size_t i = 0; i < n; ++i) {
        if (const int c = json_compare(a[i], b[i], steps)) return c;
      }
      return a.size() == b.size() ? 0 : (a.size() < b.size() ? -1 : 1);
    }
    default: {
      if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
      for (auto x = a.begin(), y = b.begin(); x != a.end(); ++x, ++y) {  // std::map: sorted by key
        const int k = x.key().compare(y.key());
        if (k != 0) return k < 0 ? -1 : 1;
        if (const int c = json_compare(*x, *y, steps)) return c;
      }
      return 0;
    }
  }
}

/// Unicode code points in a UTF-8 string (its bytes that do not continue a sequence).
inline std::size_t code_points(const std::string& s) {
  std::size_t n = 0;
  for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

inline bool digits(std::string_view s, std::size_t at, std::size_t count, int& out) {
  if (at + count > s.size()) return false;
  out = 0;
  for (std::size_t i = at; i < at + count; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    out = out * 10 + (s[i] - '0');
  }
  return true;
}

/// RFC 3339 full-date: YYYY-MM-DD with a day that exists in that month.
inline bool is_date(std::string_view s) {
  int y = 0, m = 0, d = 0;
  if (s.size() != 10 || s[4] != '-' || s[7] != '-' || !digits(s, 0, 4, y) || !digits(s, 5, 2, m) ||
      !digits(s, 8, 2, d)) {
    return false;
  }
  static constexpr int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (m < 1 || m > 12 || d < 1) return false;
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return d <= days[m - 1] + (m == 2 && leap ? 1 : 0);
}

/// RFC 3339 full-time: HH:MM:SS[.fraction](Z|+HH:MM|-HH:MM).
inline bool is_time(std::string_view s) {
  int h = 0, m = 0, sec = 0;
  if (s.size() < 9 || s[2] != ':' || s[5] != ':' || !digits(s, 0, 2, h) || !digits(s, 3, 2, m) ||
      !digits(s, 6, 2, sec) || h > 23 || m > 59 || sec > 60) {
    return false;
  }
  std::size_t i = 8;
  if (i < s.size() && s[i] == '.') {
    const std::size_t start = ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    if (i == start) return false;
  }
  if (i < s.size() && (s[i] == 'Z' || s[i] == 'z')) return i + 1 == s.size();
  int oh = 0, om = 0;
  return i + 6 == s.size() && (s[i] == '+' || s[i] == '-') && s[i + 3] == ':' && digits(s, i + 1, 2, oh) &&
         digits(s, i + 4, 2, om) && oh <= 23 && om <= 59;
}

inline bool is_date_time(std::string_view s) {
  return s.size() > 11 && (s[10] == 'T' || s[10] == 't') && is_date(s.substr(0, 10)) && is_time(s.substr(11));
}

enum class Format { none, date, time, date_time };

/// One compiled subschema. Pointers point into the documents Compiled owns.
struct Node {
  std::string at;      // its JSON pointer in the schema ("" the root; "<meta>/..." inside the meta-schema)
  int boolean = -1;    // 1: the schema `true`, 0: `false`, -1: an object
  int ref = -1;        // draft 7: the other keywords of a schema with `$ref` are ignored
  unsigned types = 0;  // 0: any
  const nlohmann::json* type = nullptr;
  const nlohmann::json* enum_values = nullptr;
  const nlohmann::json* const_value = nullptr;
  const nlohmann::json* minimum = nullptr;
  const nlohmann::json* maximum = nullptr;
  const nlohmann::json* exclusive_minimum = nullptr;
  const nlohmann::json* exclusive_maximum = nullptr;
  const nlohmann::json* multiple_of = nullptr;
  std::optional<std::size_t> min_length, max_length, min_items, max_items, min_properties, max_properties;
  int pattern = -1;  // index into Compiled::regexes
  Format format = Format::none;
  bool unique_items = false;
  int items = -1;  // one schema for every item
  std::vector<int> item_list;
  bool items_is_list = false;
  int additional_items = -1;
  int contains = -1;
  std::vector<std::pair<const std::string*, int>> properties;  // sorted by name
  std::vector<std::pair<int, int>> pattern_properties;         // regex, node
  bool pattern_properties_unchecked = false;
  int additional_properties = -1;
  std::vector<const std::string*> required;
  int property_names = -1;
  std::vector<std::pair<const std::string*, std::vector<const std::string*>>> dependent_required;
  std::vector<std::pair<const std::string*, int>> dependent_schemas;
  std::vector<int> all_of, any_of, one_of;
  int not_ = -1, if_ = -1, then_ = -1, else_ = -1;
  const nlohmann::json* pattern_text = nullptr;
};

}  // namespace schema

}  // namespace detail

/// The compiled form: the schema (and the meta-schema when a `$ref` names it), its nodes and its regexes.
/// Immutable once built; RE2 objects are thread-safe for matching.
struct CompiledSchema::Compiled {
  nlohmann::json source;
  std::deque<nlohmann::json> extra;  // documents a $ref reached besides the schema (the meta-schema)
  std::vector<detail::schema::Node> nodes;
#if CAIRN_WITH_SCHEMA
  std::vector<std::unique_ptr<re2::RE2>> regexes;
#endif
  SchemaLimits limits;
  bool counts_characters = false;  // minLength / maxLength somewhere: strings are checked to be UTF-8 first
  bool compares_values = false;    // enum / const / uniqueItems somewhere: values are compared (recursively)
};

namespace detail {
namespace schema {

/// Why RE2 cannot run `pattern`, or "" when it can; `translated` receives the pattern in RE2's syntax
/// (ECMAScript's `\uXXXX` as `\x{XXXX}`).
inline std::string ecma_to_re2(const std::string& pattern, std::string& translated) {
  translated.clear();
  bool in_class = false;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char n = pattern[i + 1];
      if (!in_class && n >= '1' && n <= '9') return fmt::format("\\{} is a backreference", n);
      if (n == 'k' && i + 2 < pattern.size() && pattern[i + 2] == '<') return "\\k<...> is a backreference";
      if (n == 'u' && i + 6 <= pattern.size()) {
        bool hex = true;
        for (std::size_t k = i + 2; k < i + 6; ++k) hex = hex && std::isxdigit(static_cast<unsigned char>(pattern[k]));
        if (hex) {
          translated += "\\x{" + pattern.substr(i + 2, 4) + "}";
          i += 5;
          continue;
        }
      }
      translated += c;
      translated += n;
      ++i;
      continue;
    }
    if (c == '[' && !in_class)
      in_class = true;
    else if (c == ']' && in_class)
      in_class = false;
    if (!in_class && c == '(' && i + 2 < pattern.size() && pattern[i + 1] == '?') {
      const char k = pattern[i + 2];
      if (k == '=' || k == '!') return fmt::format("(?{} is a lookahead", k);
      if (k == '<' && i + 3 < pattern.size() && (pattern[i + 3] == '=' || pattern[i + 3] == '!')) {
        return fmt::format("(?<{} is a lookbehind", pattern[i + 3]);
      }
    }
    translated += c;
  }
  return "";
}

/// Builds the nodes of a schema.
class Compiler {
 public:
  Compiler(CompiledSchema::Compiled& c, std::string_view what, bool unchecked_regexes)
      : c_(c), what_(what), unchecked_(unchecked_regexes) {}

  [[noreturn]] void refuse(const std::string& at, std::string_view why) const {
    throw invalid_argument(fmt::format("{}: not a usable JSON Schema: at {}: {}", what_,
                                       at.empty() ? "(top level)" : excerpt(at, 200), why));
  }

  void run() {
    c_.nodes.reserve(64);
    compile(c_.source, "", base_of_root(c_.source), 0);
    for (std::size_t i = 0; i < pending_.size(); ++i) resolve(pending_[i]);  // grows while it runs
    check_in_place_graph();
  }

 private:
  struct Pending {
    int node;
    std::string ref;
    std::string base;
  };

  static bool has_scheme(std::string_view uri) {
    const auto colon = uri.find(':');
    if (colon == std::string_view::npos || colon == 0) return false;
    return uri.find_first_of("/?#") > colon;
  }
  static std::string without_fragment(std::string_view uri) { return std::string(uri.substr(0, uri.find('#'))); }
  /// `ref` resolved against `base` (RFC 3986, without dot-segment removal).
  static std::string resolve_uri(const std::string& base, const std::string& ref) {
    if (has_scheme(ref)) return ref;
    const std::string b = without_fragment(base);
    if (ref.empty()) return b;
    if (ref[0] == '#') return b + ref;
    if (ref.rfind("//", 0) == 0) {
      const auto colon = b.find(':');
      return colon == std::string::npos ? ref : b.substr(0, colon + 1) + ref;
    }
    if (ref[0] == '/') {
      const auto authority = b.find("://");
      if (authority == std::string::npos) return ref;
      const auto path = b.find('/', authority + 3);
      return (path == std::string::npos ? b : b.substr(0, path)) + ref;
    }
    const auto slash = b.rfind('/');
    return slash == std::string::npos ? ref : b.substr(0, slash + 1) + ref;
  }
  std::string base_of_root(const nlohmann::json& s) const {
    if (s.is_object()) {
      if (const auto id = s.find("$id"); id != s.end() && id->is_string())
        return resolve_uri("", id->get<std::string>());
    }
    return "";
  }

  static std::string child(const std::string& at, std::string_view token) {
    std::string out = at;
    append_pointer_token(out, token);
    return out;
  }

  int compile(const nlohmann::json& s, const std::string& at, std::string base, std::size_t depth) {
    if (const auto it = index_.find(&s); it != index_.end()) return it->second;
    if (!s.is_object() && !s.is_boolean())
      refuse(at, fmt::format("a schema must be an object or a boolean, got {}", s.type_name()));
    const int me = static_cast<int>(c_.nodes.size());
    index_.emplace(&s, me);
    c_.nodes.emplace_back();
    c_.nodes[me].at = at;
    if (s.is_boolean()) {
      c_.nodes[me].boolean = s.get<bool>() ? 1 : 0;
      return me;
    }
    const bool is_ref = s.contains("$ref") && s["$ref"].is_string();
    if (!is_ref) {
      if (const auto id = s.find("$id"); id != s.end() && id->is_string()) {
        const std::string& text = id->get_ref<const std::string&>();
        const std::string uri = resolve_uri(base, text);
        if (!text.empty() && text[0] == '#') {
          ids_.emplace(uri, &s);  // a plain-name fragment: location-independent
        } else {
          base = without_fragment(uri);
          ids_.emplace(base, &s);
        }
      }
    }
    auto sub = [&](const nlohmann::json& j, std::string_view token) {
      return compile(j, child(at, token), base, depth + 1);
    };
    auto sub2 = [&](const nlohmann::json& j, std::string_view token, std::string_view token2) {
      return compile(j, child(child(at, token), token2), base, depth + 2);
    };
    auto need = [&](const nlohmann::json& v, bool ok, const char* key, const char* expected) {
      if (!ok) refuse(child(at, key), fmt::format("expected {}, got {}", expected, v.type_name()));
    };
    auto count = [&](const char* key) -> std::optional<std::size_t> {
      const auto it = s.find(key);
      if (it == s.end()) return std::nullopt;
      const unsigned bits = type_bits(*it);
      need(*it, (bits & t_integer) && it->get<double>() >= 0, key, "a non-negative integer");
      const double d = it->get<double>();
      return d >= 1.8e19 ? std::numeric_limits<std::size_t>::max() : static_cast<std::size_t>(it->get<double>());
    };
    auto number = [&](const char* key) -> const nlohmann::json* {
      const auto it = s.find(key);
      if (it == s.end()) return nullptr;
      need(*it, it->is_number(), key, "a number");
      return &*it;
    };
    // Definitions are compiled for the $ids they hold (a $ref may name them), whatever else the schema is.
    if (const auto d = s.find("definitions"); d != s.end() && d->is_object()) {
      for (auto it = d->begin(); it != d->end(); ++it) {
        if (it->is_object() || it->is_boolean()) sub2(*it, "definitions", it.key());
      }
    }
    if (is_ref) {
      pending_.push_back(Pending{me, s["$ref"].get<std::string>(), base});
      return me;
    }
    Node n;
    n.at = at;
    if (const auto t = s.find("type"); t != s.end()) {
      n.type = &*t;
      if (t->is_string()) {
        n.types = type_bit_of(t->get_ref<const std::string&>());
        if (!n.types) refuse(child(at, "type"), fmt::format("unknown type '{}'", excerpt(t->get<std::string>())));
      } else if (t->is_array()) {
        for (const auto& one : *t) {
          const unsigned bit = one.is_string() ? type_bit_of(one.get_ref<const std::string&>()) : 0;
          if (!bit) refuse(child(at, "type"), "expected type names");
          n.types |= bit;
        }
      } else {
        need(*t, false, "type", "a string or an array");
      }
    }
    if (const auto e = s.find("enum"); e != s.end()) {
      need(*e, e->is_array(), "enum", "an array");
      n.enum_values = &*e;
      c_.compares_values = true;
    }
    if (const auto e = s.find("const"); e != s.end()) {
      n.const_value = &*e;
      c_.compares_values = true;
    }
    n.minimum = number("minimum");
    n.maximum = number("maximum");
    n.exclusive_minimum = number("exclusiveMinimum");
    n.exclusive_maximum = number("exclusiveMaximum");
    n.multiple_of = number("multipleOf");
    if (n.multiple_of && !(n.multiple_of->get<double>() > 0)) refuse(child(at, "multipleOf"), "must be greater than 0");
    n.min_length = count("minLength");
    n.max_length = count("maxLength");
    n.min_items = count("minItems");
    n.max_items = count("maxItems");
    n.min_properties = count("minProperties");
    n.max_properties = count("maxProperties");
    if (n.min_length || n.max_length) c_.counts_characters = true;
    if (const auto p = s.find("pattern"); p != s.end()) {
      need(*p, p->is_string(), "pattern", "a string");
      n.pattern_text = &*p;
      n.pattern = add_regex(p->get_ref<const std::string&>(), child(at, "pattern"));
    }
    if (const auto f = s.find("format"); f != s.end() && f->is_string()) {
      const std::string& name = f->get_ref<const std::string&>();
      n.format = name == "date"        ? Format::date
                 : name == "time"      ? Format::time
                 : name == "date-time" ? Format::date_time
                                       : Format::none;
    }
    if (const auto u = s.find("uniqueItems"); u != s.end()) {
      need(*u, u->is_boolean(), "uniqueItems", "a boolean");
      n.unique_items = u->get<bool>();
      c_.compares_values = c_.compares_values || n.unique_items;
    }
    if (const auto it = s.find("items"); it != s.end()) {
      if (it->is_array()) {
        n.items_is_list = true;
        for (std::size_t i = 0; i < it->size(); ++i) n.item_list.push_back(sub2((*it)[i], "items", std::to_string(i)));
      } else {
        n.items = sub(*it, "items");
      }
    }
    if (const auto it = s.find("additionalItems"); it != s.end()) n.additional_items = sub(*it, "additionalItems");
    if (const auto it = s.find("contains"); it != s.end()) n.contains = sub(*it, "contains");
    if (const auto it = s.find("properties"); it != s.end()) {
      need(*it, it->is_object(), "properties", "an object");
      for (auto p = it->begin(); p != it->end(); ++p)
        n.properties.emplace_back(&p.key(), sub2(*p, "properties", p.key()));
    }
    if (const auto it = s.find("patternProperties"); it != s.end()) {
      need(*it, it->is_object(), "patternProperties", "an object");
      for (auto p = it->begin(); p != it->end(); ++p) {
        const int re = add_regex(p.key(), child(child(at, "patternProperties"), p.key()));
        if (re < 0) {
          n.pattern_properties_unchecked = true;
        } else {
          n.pattern_properties.emplace_back(re, sub2(*p, "patternProperties", p.key()));
        }
      }
    }
    if (const auto it = s.find("additionalProperties"); it != s.end()) {
      n.additional_properties = sub(*it, "additionalProperties");
    }
    if (const auto it = s.find("required"); it != s.end()) {
      need(*it, it->is_array(), "required", "an array of strings");
      for (const auto& k : *it) {
        need(k, k.is_string(), "required", "an array of strings");
        n.required.push_back(&k.get_ref<const std::string&>());
      }
    }
    if (const auto it = s.find("propertyNames"); it != s.end()) n.property_names = sub(*it, "propertyNames");
    if (const auto it = s.find("dependencies"); it != s.end()) {
      need(*it, it->is_object(), "dependencies", "an object");
      for (auto d = it->begin(); d != it->end(); ++d) {
        if (d->is_array()) {
          std::vector<const std::string*> keys;
          for (const auto& k : *d) {
            need(k, k.is_string(), "dependencies", "arrays of strings or schemas");
            keys.push_back(&k.get_ref<const std::string&>());
          }
          n.dependent_required.emplace_back(&d.key(), std::move(keys));
        } else {
          n.dependent_schemas.emplace_back(&d.key(), sub2(*d, "dependencies", d.key()));
        }
      }
    }
    for (const char* key : {"allOf", "anyOf", "oneOf"}) {
      const auto it = s.find(key);
      if (it == s.end()) continue;
      need(*it, it->is_array() && !it->empty(), key, "a non-empty array");
      std::vector<int>& list = key[0] == 'o' ? n.one_of : (key[1] == 'l' ? n.all_of : n.any_of);
      for (std::size_t i = 0; i < it->size(); ++i) list.push_back(sub2((*it)[i], key, std::to_string(i)));
    }
    if (const auto it = s.find("not"); it != s.end()) n.not_ = sub(*it, "not");
    if (const auto it = s.find("if"); it != s.end()) n.if_ = sub(*it, "if");
    if (const auto it = s.find("then"); it != s.end()) n.then_ = sub(*it, "then");
    if (const auto it = s.find("else"); it != s.end()) n.else_ = sub(*it, "else");
    std::sort(n.properties.begin(), n.properties.end(),
              [](const auto& a, const auto& b) { return *a.first < *b.first; });
    c_.nodes[me] = std::move(n);
    (void)depth;
    return me;
  }

  /// The regex's index, or -1 when this build skips it (unchecked). Refuses a pattern RE2 cannot run.
  int add_regex(const std::string& pattern, const std::string& at) {
#if CAIRN_WITH_SCHEMA
    (void)unchecked_;
    std::string translated;
    if (std::string why = ecma_to_re2(pattern, translated); !why.empty()) {
      refuse(at, fmt::format("the pattern '{}' cannot be checked: {}, which RE2 (linear-time matching) does not run",
                             excerpt(pattern), why));
    }
    RE2::Options options;
    options.set_log_errors(false);
    options.set_max_mem(8 << 20);
    auto re = std::make_unique<re2::RE2>(translated, options);
    if (!re->ok())
      refuse(at, fmt::format("the pattern '{}' is not one RE2 accepts: {}", excerpt(pattern), re->error()));
    c_.regexes.push_back(std::move(re));
    return static_cast<int>(c_.regexes.size() - 1);
#else
    if (unchecked_) return -1;
    throw invalid_argument(fmt::format(
        "{}: at {}: this build cannot check the regular expression '{}' (pattern and patternProperties need RE2: "
        "build cairn with CAIRN_WITH_SCHEMA=ON), and the schema is not marked unchecked (Tool::unchecked_schema)",
        what_, excerpt(at, 200), excerpt(pattern)));
#endif
  }

  const nlohmann::json* document(const std::string& uri) {
    if (const auto it = ids_.find(uri); it != ids_.end()) return it->second;
    if (uri.empty()) return &c_.source;
    if (uri == draft7_meta_uri) {
      c_.extra.push_back(nlohmann::json::parse(draft7_meta_schema));
      const nlohmann::json& meta = c_.extra.back();
      ids_.emplace(uri, &meta);
      compile(meta, "<the draft-07 meta-schema>", std::string(draft7_meta_uri), 0);
      return &meta;
    }
    return nullptr;
  }

  static std::string percent_decoded(const std::string& s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '%' && i + 3 <= s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
          std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
        out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
        i += 2;
      } else {
        out += s[i];
      }
    }
    return out;
  }

  void resolve(const Pending p) {  // a copy: compiling a target may grow pending_
    const std::string at = child(c_.nodes[p.node].at, "$ref");
    const std::string uri = resolve_uri(p.base, p.ref);
    const auto hash = uri.find('#');
    const std::string doc_uri = uri.substr(0, hash);
    const std::string fragment = hash == std::string::npos ? "" : uri.substr(hash + 1);
    const nlohmann::json* target = nullptr;
    std::string target_at;
    if (!fragment.empty() && fragment[0] != '/') {  // a plain name ($id "#name")
      if (const auto it = ids_.find(doc_uri + "#" + fragment); it != ids_.end()) target = it->second;
    } else if (const nlohmann::json* doc = document(doc_uri)) {
      try {
        const nlohmann::json::json_pointer pointer(percent_decoded(fragment));
        if (doc->contains(pointer)) target = &doc->at(pointer);
      } catch (const std::exception& e) {
        refuse(at, fmt::format("'{}' is not a JSON pointer: {}", excerpt(p.ref), e.what()));
      }
      target_at = (doc == &c_.source ? "" : (doc_uri == draft7_meta_uri ? "<the draft-07 meta-schema>" : doc_uri)) +
                  percent_decoded(fragment);
    } else {
      refuse(at, fmt::format("'{}' points outside the schema (remote documents are never fetched)", excerpt(p.ref)));
    }
    if (!target) refuse(at, fmt::format("'{}' does not resolve to anything in the schema", excerpt(p.ref)));
    if (target_at.empty() && target != &c_.source) {
      if (const auto it = index_.find(target); it != index_.end()) target_at = c_.nodes[it->second].at;
    }
    // Refs into a document are compiled with the document's base: good enough for the $ids of draft 7.
    c_.nodes[p.node].ref = compile(*target, target_at, doc_uri, 0);
  }

  /// Refuses a loop of in-place subschemas (one that never moves into the value: `$ref`, allOf, anyOf, oneOf,
  /// not, if/then/else, dependencies) and a chain of more than max_ref_chain `$ref`s. Iterative depth-first search.
  void check_in_place_graph() {
    const std::size_t n = c_.nodes.size();
    std::vector<std::vector<std::pair<int, bool>>> edges(n);  // target, is a $ref
    for (std::size_t i = 0; i < n; ++i) {
      const Node& node = c_.nodes[i];
      auto& e = edges[i];
      if (node.ref >= 0) e.emplace_back(node.ref, true);
      for (const auto* list : {&node.all_of, &node.any_of, &node.one_of}) {
        for (int t : *list) e.emplace_back(t, false);
      }
      for (int t : {node.not_, node.if_, node.then_, node.else_}) {
        if (t >= 0) e.emplace_back(t, false);
      }
      for (const auto& d : node.dependent_schemas) e.emplace_back(d.second, false);
    }
    std::vector<int> state(n, 0);  // 0 new, 1 on the stack, 2 done
    std::vector<std::size_t> chain(n, 0);
    for (std::size_t root = 0; root < n; ++root) {
      if (state[root]) continue;
      std::vector<std::pair<int, std::size_t>> stack{{static_cast<int>(root), 0}};
      state[root] = 1;
      while (!stack.empty()) {
        auto& [v, next] = stack.back();
        if (next < edges[v].size()) {
          const int w = edges[v][next++].first;
          if (state[w] == 1) {
            std::string loop;
            bool in = false;
            for (const auto& frame : stack) {
              in = in || frame.first == w;
              if (in)
                loop += fmt::format("{} -> ", c_.nodes[frame.first].at.empty() ? "#" : "#" + c_.nodes[frame.first].at);
            }
            loop += c_.nodes[w].at.empty() ? "#" : "#" + c_.nodes[w].at;
            refuse(c_.nodes[w].at, fmt::format("a loop of $ref / in-place subschemas that never moves into the "
                                               "value, so a check would never end: {}",
                                               excerpt(loop, 300)));
          }
          if (state[w] == 0) {
            state[w] = 1;
            stack.emplace_back(w, 0);
          }
          continue;
        }
        std::size_t longest = 0;
        for (const auto& [w, is_ref] : edges[v]) longest = std::max(longest, chain[w] + (is_ref ? 1 : 0));
        chain[v] = longest;
        if (longest > c_.limits.max_ref_chain) {
          refuse(c_.nodes[v].at, fmt::format("a chain of {} $refs one after another, more than the limit of {}",
                                             longest, c_.limits.max_ref_chain));
        }
        state[v] = 2;
        stack.pop_back();
      }
    }
  }

  CompiledSchema::Compiled& c_;
  std::string_view what_;
  bool unchecked_;
  std::unordered_map<const nlohmann::json*, int> index_;
  std::map<std::string, const nlohmann::json*> ids_;
  std::vector<Pending> pending_;
};

struct BudgetExceeded {};
struct TooDeep {};

/// One check of one value: the walk, its step and depth counters, and the violations it found.
class Checker {
 public:
  Checker(const CompiledSchema::Compiled& c, std::size_t max_reported, std::size_t budget)
      : c_(c), max_reported_(max_reported), budget_(budget) {}

  bool check(int index, const nlohmann::json& v, bool collect) {
    if (++steps_ > budget_) throw BudgetExceeded{};
    if (depth_ >= c_.limits.max_check_depth) throw TooDeep{};
    ++depth_;
    const bool ok = check_node(c_.nodes[static_cast<std::size_t>(index)], v, collect);
    --depth_;
    return ok;
  }

  std::vector<SchemaViolation> violations;
  std::size_t total = 0;
  std::size_t steps_ = 0;

 private:
  struct Token {
    const std::string* key;
    std::size_t index;
  };

  std::string pointer() const {
    std::string out;
    for (const Token& t : path_) {
      if (t.key) {
        append_pointer_token(out, *t.key);
      } else {
        out += '/';
        out += std::to_string(t.index);
      }
    }
    return out;
  }

  template <typename F>
  void add(const char* rule, F&& message) {
    ++total;
    if (violations.size() < max_reported_) violations.push_back(SchemaViolation{pointer(), rule, message()});
  }

  bool at_key(int index, const std::string& key, const nlohmann::json& v, bool collect) {
    if (!collect) return check(index, v, false);
    path_.push_back(Token{&key, 0});
    const bool ok = check(index, v, true);
    path_.pop_back();
    return ok;
  }
  bool at_index(int index, std::size_t i, const nlohmann::json& v, bool collect) {
    if (!collect) return check(index, v, false);
    path_.push_back(Token{nullptr, i});
    const bool ok = check(index, v, true);
    path_.pop_back();
    return ok;
  }

  static std::string got_value(const nlohmann::json& v) {
    return excerpt(v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }

  bool matches(int regex, const std::string& text) {
#if CAIRN_WITH_SCHEMA
    steps_ += text.size() / 64;
    if (steps_ > budget_) throw BudgetExceeded{};
    return re2::RE2::PartialMatch(text, *c_.regexes[static_cast<std::size_t>(regex)]);
#else
    (void)regex;
    (void)text;
    return true;
#endif
  }

  bool check_node(const Node& n, const nlohmann::json& v, bool collect) {
    if (n.boolean == 1) return true;
    if (n.boolean == 0) {
      if (collect) add("false", [] { return std::string("the schema allows no value here"); });
      return false;
    }
    if (n.ref >= 0) return check(n.ref, v, collect);
    bool ok = true;
// Records a violation; outside collecting, the first one ends the check of this node.
#define CAIRN_SCHEMA_FAIL(rule, message) \
  do {                                   \
    if (!collect) return false;          \
    ok = false;                          \
    add(rule, [&] { return message; });  \
  } while (0)
    const unsigned bits = type_bits(v);
    if (n.types && !(n.types & bits)) {
      CAIRN_SCHEMA_FAIL("type", type_message(n, v));
    }
    if (n.enum_values) {
      bool found = false;
      for (const auto& e : *n.enum_values) {
        if (json_compare(e, v, steps_) == 0) {
          found = true;
          break;
        }
      }
      if (steps_ > budget_) throw BudgetExceeded{};
      if (!found)
        CAIRN_SCHEMA_FAIL("enum",
                          fmt::format("expected one of {}, got {}", excerpt(n.enum_values->dump()), got_value(v)));
    }
    if (n.const_value && json_compare(*n.const_value, v, steps_) != 0) {
      CAIRN_SCHEMA_FAIL("const", fmt::format("expected {}, got {}", excerpt(n.const_value->dump()), got_value(v)));
    }
    if (bits & t_number) {
      if (n.minimum && number_compare(v, *n.minimum) < 0) {
        CAIRN_SCHEMA_FAIL("minimum", fmt::format("expected a number >= {}, got {}", n.minimum->dump(), v.dump()));
      }
      if (n.maximum && number_compare(v, *n.maximum) > 0) {
        CAIRN_SCHEMA_FAIL("maximum", fmt::format("expected a number <= {}, got {}", n.maximum->dump(), v.dump()));
      }
      if (n.exclusive_minimum && number_compare(v, *n.exclusive_minimum) <= 0) {
        CAIRN_SCHEMA_FAIL("exclusiveMinimum",
                          fmt::format("expected a number > {}, got {}", n.exclusive_minimum->dump(), v.dump()));
      }
      if (n.exclusive_maximum && number_compare(v, *n.exclusive_maximum) >= 0) {
        CAIRN_SCHEMA_FAIL("exclusiveMaximum",
                          fmt::format("expected a number < {}, got {}", n.exclusive_maximum->dump(), v.dump()));
      }
      if (n.multiple_of && !is_multiple(v, *n.multiple_of)) {
        CAIRN_SCHEMA_FAIL("multipleOf",
                          fmt::format("expected a multiple of {}, got {}", n.multiple_of->dump(), v.dump()));
      }
    }
    if (bits & t_string) {
      const std::string& s = v.get_ref<const std::string&>();
      if (n.min_length || n.max_length) {
        const std::size_t length = code_points(s);
        if (n.min_length && length < *n.min_length) {
          CAIRN_SCHEMA_FAIL("minLength", fmt::format("expected at least {} characters, got {}", *n.min_length, length));
        }
        if (n.max_length && length > *n.max_length) {
          CAIRN_SCHEMA_FAIL("maxLength", fmt::format("expected at most {} characters, got {}", *n.max_length, length));
        }
      }
      if (n.pattern >= 0 && !matches(n.pattern, s)) {
        CAIRN_SCHEMA_FAIL("pattern", fmt::format("{} does not match the pattern '{}'", got_value(v),
                                                 excerpt(n.pattern_text->get_ref<const std::string&>())));
      }
      if (n.format != Format::none) {
        const bool good = n.format == Format::date   ? is_date(s)
                          : n.format == Format::time ? is_time(s)
                                                     : is_date_time(s);
        if (!good) {
          CAIRN_SCHEMA_FAIL("format", fmt::format("{} is not a valid {}", got_value(v),
                                                  n.format == Format::date   ? "date (RFC 3339 full-date)"
                                                  : n.format == Format::time ? "time (RFC 3339 full-time)"
                                                                             : "date-time (RFC 3339)"));
        }
      }
    }
    if (bits & t_array) {
      const std::size_t size = v.size();
      if (n.min_items && size < *n.min_items) {
        CAIRN_SCHEMA_FAIL("minItems", fmt::format("expected at least {} items, got {}", *n.min_items, size));
      }
      if (n.max_items && size > *n.max_items) {
        CAIRN_SCHEMA_FAIL("maxItems", fmt::format("expected at most {} items, got {}", *n.max_items, size));
      }
      if (n.unique_items && size > 1) {
        if (const auto pair = first_duplicate(v)) {
          CAIRN_SCHEMA_FAIL("uniqueItems", fmt::format("items {} and {} are equal", pair->first, pair->second));
        }
      }
      for (std::size_t i = 0; i < size; ++i) {
        int schema = n.items;
        if (n.items_is_list) schema = i < n.item_list.size() ? n.item_list[i] : n.additional_items;
        if (schema < 0) continue;
        if (n.items_is_list && i >= n.item_list.size() && c_.nodes[static_cast<std::size_t>(schema)].boolean == 0) {
          CAIRN_SCHEMA_FAIL("additionalItems",
                            fmt::format("expected at most {} items, got {}", n.item_list.size(), size));
          break;
        }
        if (!at_index(schema, i, v[i], collect)) {
          if (!collect) return false;
          ok = false;
        }
      }
      if (n.contains >= 0) {
        bool any = false;
        for (std::size_t i = 0; i < size && !any; ++i) any = check(n.contains, v[i], false);
        if (!any) CAIRN_SCHEMA_FAIL("contains", std::string("no item matches the schema of 'contains'"));
      }
    }
    if (bits & t_object) {
      if (n.min_properties && v.size() < *n.min_properties) {
        CAIRN_SCHEMA_FAIL("minProperties",
                          fmt::format("expected at least {} properties, got {}", *n.min_properties, v.size()));
      }
      if (n.max_properties && v.size() > *n.max_properties) {
        CAIRN_SCHEMA_FAIL("maxProperties",
                          fmt::format("expected at most {} properties, got {}", *n.max_properties, v.size()));
      }
      for (const std::string* key : n.required) {
        if (!v.contains(*key))
          CAIRN_SCHEMA_FAIL("required", fmt::format("missing required property '{}'", excerpt(*key)));
      }
      for (const auto& dependency : n.dependent_required) {
        const std::string& key = *dependency.first;
        if (!v.contains(key)) continue;
        for (const std::string* other : dependency.second) {
          if (!v.contains(*other)) {
            CAIRN_SCHEMA_FAIL("dependencies",
                              fmt::format("property '{}' requires property '{}'", excerpt(key), excerpt(*other)));
          }
        }
      }
      for (const auto& [key, schema] : n.dependent_schemas) {
        if (v.contains(*key) && !check(schema, v, collect)) {
          if (!collect) return false;
          ok = false;
        }
      }
      const bool object_walk = !n.properties.empty() || !n.pattern_properties.empty() || n.additional_properties >= 0 ||
                               n.property_names >= 0;
      if (object_walk) {
        for (auto it = v.begin(); it != v.end(); ++it) {
          const std::string& key = it.key();
          bool matched = false;
          if (n.property_names >= 0) {
            nlohmann::json name = key;
            if (!check(n.property_names, name, false)) {
              CAIRN_SCHEMA_FAIL("propertyNames",
                                fmt::format("the member name '{}' is not allowed by propertyNames", excerpt(key)));
            }
          }
          const auto p = std::lower_bound(n.properties.begin(), n.properties.end(), key,
                                          [](const auto& entry, const std::string& k) { return *entry.first < k; });
          if (p != n.properties.end() && *p->first == key) {
            matched = true;
            if (!at_key(p->second, key, *it, collect)) {
              if (!collect) return false;
              ok = false;
            }
          }
          for (const auto& [regex, schema] : n.pattern_properties) {
            if (!matches(regex, key)) continue;
            matched = true;
            if (!at_key(schema, key, *it, collect)) {
              if (!collect) return false;
              ok = false;
            }
          }
          if (matched || n.additional_properties < 0 || n.pattern_properties_unchecked) continue;
          if (c_.nodes[static_cast<std::size_t>(n.additional_properties)].boolean == 0) {
            CAIRN_SCHEMA_FAIL("additionalProperties", fmt::format("property '{}' is not allowed", excerpt(key)));
          } else if (!at_key(n.additional_properties, key, *it, collect)) {
            if (!collect) return false;
            ok = false;
          }
        }
      }
    }
    for (int s : n.all_of) {
      if (!check(s, v, collect)) {
        if (!collect) return false;
        ok = false;
      }
    }
    if (!n.any_of.empty()) {
      bool any = false;
      for (std::size_t i = 0; i < n.any_of.size() && !any; ++i) any = check(n.any_of[i], v, false);
      if (!any)
        CAIRN_SCHEMA_FAIL("anyOf", fmt::format("the value matches none of the {} schemas of anyOf", n.any_of.size()));
    }
    if (!n.one_of.empty()) {
      std::vector<std::size_t> matching;
      for (std::size_t i = 0; i < n.one_of.size() && matching.size() < 2; ++i) {
        if (check(n.one_of[i], v, false)) matching.push_back(i);
      }
      if (matching.empty()) {
        CAIRN_SCHEMA_FAIL("oneOf", fmt::format("the value matches none of the {} schemas of oneOf", n.one_of.size()));
      } else if (matching.size() > 1) {
        CAIRN_SCHEMA_FAIL("oneOf", fmt::format("the value matches schemas {} and {} of oneOf; exactly one must match",
                                               matching[0], matching[1]));
      }
    }
    if (n.not_ >= 0 && check(n.not_, v, false)) {
      CAIRN_SCHEMA_FAIL("not", std::string("the value matches the schema of 'not'"));
    }
    if (n.if_ >= 0) {
      const int branch = check(n.if_, v, false) ? n.then_ : n.else_;
      if (branch >= 0 && !check(branch, v, collect)) {
        if (!collect) return false;
        ok = false;
      }
    }
#undef CAIRN_SCHEMA_FAIL
    return ok;
  }

  static std::string type_message(const Node& n, const nlohmann::json& v) {
    std::string expected;
    if (n.type->is_string()) {
      expected = n.type->get<std::string>();
    } else {
      for (const auto& one : *n.type) {
        if (!expected.empty()) expected += " or ";
        expected += one.get<std::string>();
      }
    }
    const char* got = v.is_number_integer() ? "integer" : v.is_number() ? "number" : v.type_name();
    return fmt::format("expected type {}, got {}", expected, got);
  }

  static bool is_multiple(const nlohmann::json& v, const nlohmann::json& m) {
    if (!v.is_number_float() && !m.is_number_float()) {
      if (m.is_number_unsigned() || m.get<std::int64_t>() > 0) {
        const std::uint64_t d = m.get<std::uint64_t>();
        if (v.is_number_unsigned()) return v.get<std::uint64_t>() % d == 0;
        const std::int64_t x = v.get<std::int64_t>();
        const std::uint64_t magnitude = x < 0 ? (~static_cast<std::uint64_t>(x) + 1) : static_cast<std::uint64_t>(x);
        return magnitude % d == 0;
      }
    }
    const double q = v.get<double>() / m.get<double>();
    if (!std::isfinite(q)) return false;
    return std::fabs(q - std::round(q)) <= 1e-9 * std::max(1.0, std::fabs(q));
  }

  /// The indexes of two equal items, if any: sorting item indexes with json_compare, O(n log n) comparisons.
  std::optional<std::pair<std::size_t, std::size_t>> first_duplicate(const nlohmann::json& v) {
    // The common cases, an array of integers or of strings, sort plain keys (the same order and equality).
    bool integers = true, strings = true;
    for (const auto& e : v) {
      integers = integers && e.is_number_integer();
      strings = strings && e.is_string();
    }
    if (integers || strings) {
      steps_ += v.size();
      if (steps_ > budget_) throw BudgetExceeded{};
      return integers ? first_equal_key(v,
                                        [](const nlohmann::json& e) {
                                          // Negative values (two's complement keeps their order) before the others.
                                          return e.is_number_unsigned() || e.get<std::int64_t>() >= 0
                                                     ? std::pair<int, std::uint64_t>{1, e.get<std::uint64_t>()}
                                                     : std::pair<int, std::uint64_t>{
                                                           0, static_cast<std::uint64_t>(e.get<std::int64_t>())};
                                        })
                      : first_equal_key(v, [](const nlohmann::json& e) {
                          return std::string_view(e.get_ref<const std::string&>());
                        });
    }
    std::vector<std::size_t> order(v.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      const int c = json_compare(v[a], v[b], steps_);
      return c < 0 || (c == 0 && a < b);
    });
    if (steps_ > budget_) throw BudgetExceeded{};
    std::optional<std::pair<std::size_t, std::size_t>> best;
    for (std::size_t i = 1; i < order.size(); ++i) {
      if (json_compare(v[order[i - 1]], v[order[i]], steps_) == 0) {
        const std::pair<std::size_t, std::size_t> found{order[i - 1], order[i]};
        if (!best || found.second < best->second) best = found;
      }
    }
    return best;
  }

  /// The first pair of items with equal keys (smallest second index), by sorting (key, index).
  template <typename Key>
  static std::optional<std::pair<std::size_t, std::size_t>> first_equal_key(const nlohmann::json& v, Key key) {
    using K = decltype(key(v[0]));
    std::vector<std::pair<K, std::size_t>> keyed;
    keyed.reserve(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) keyed.emplace_back(key(v[i]), i);
    std::sort(keyed.begin(), keyed.end());
    std::optional<std::pair<std::size_t, std::size_t>> best;
    for (std::size_t i = 1; i < keyed.size(); ++i) {
      if (keyed[i - 1].first == keyed[i].first && (!best || keyed[i].second < best->second)) {
        best = std::pair<std::size_t, std::size_t>{keyed[i - 1].second, keyed[i].second};
      }
    }
    return best;
  }

  const CompiledSchema::Compiled& c_;
  std::size_t max_reported_;
  std::size_t budget_;
  std::size_t depth_ = 0;
  std::vector<Token> path_;
};

}  // namespace schema

CAIRN_INLINE const CompiledSchema& draft7_meta() {
  // Immutable after its (thread-safe) first use: a cache of a constant, not state.
  static const CompiledSchema meta(nlohmann::json::parse(draft7_meta_schema), "the draft-07 meta-schema");
  return meta;
}

/// The JSON pointer of the first place in `j` nested deeper than `limit` levels, if any (without recursion).
CAIRN_INLINE std::optional<std::string> deeper_than(const nlohmann::json& j, std::size_t limit) {
  if (json_depth(j, static_cast<int>(std::min<std::size_t>(limit, 1 << 30))) <= static_cast<int>(limit))
    return std::nullopt;
  std::vector<std::pair<const nlohmann::json*, std::string>> todo{{&j, ""}};
  std::vector<std::size_t> depth{0};
  while (!todo.empty()) {
    auto [node, at] = std::move(todo.back());
    const std::size_t d = depth.back();
    todo.pop_back();
    depth.pop_back();
    if (!node->is_structured()) continue;
    if (d + 1 > limit) return at;
    if (node->is_object()) {
      for (auto it = node->begin(); it != node->end(); ++it) {
        std::string next = at;
        append_pointer_token(next, it.key());
        todo.emplace_back(&*it, std::move(next));
        depth.push_back(d + 1);
      }
    } else {
      for (std::size_t i = 0; i < node->size(); ++i) {
        todo.emplace_back(&(*node)[i], at + "/" + std::to_string(i));
        depth.push_back(d + 1);
      }
    }
  }
  return std::nullopt;
}

}  // namespace detail

CAIRN_INLINE CompiledSchema::CompiledSchema(const nlohmann::json& schema, std::string_view what,
                                            const SchemaLimits& limits, bool unchecked_regexes) {
  if (!schema.is_object() && !schema.is_boolean()) {
    throw invalid_argument(
        fmt::format("{}: a JSON Schema must be an object or a boolean, got {}", what, schema.type_name()));
  }
  if (const auto deep = detail::deeper_than(schema, limits.max_schema_depth)) {
    throw invalid_argument(fmt::format("{}: at {}: the schema is nested deeper than the limit of {} levels", what,
                                       detail::excerpt(*deep, 200), limits.max_schema_depth));
  }
  const bool is_meta = what == "the draft-07 meta-schema";
  if (!is_meta) {
    std::size_t total = 0;
    const auto bad = detail::draft7_meta().validate(schema, 1, &total);
    if (!bad.empty()) {
      throw invalid_argument(
          fmt::format("{}: not a valid JSON Schema: {}", what, describe_violations("at", bad, total)));
    }
  }
  auto compiled = std::make_shared<Compiled>();
  compiled->source = schema;
  compiled->limits = limits;
  detail::schema::Compiler(*compiled, what, unchecked_regexes).run();
  compiled_ = std::move(compiled);
}

CAIRN_INLINE const nlohmann::json& CompiledSchema::source() const { return compiled_->source; }

CAIRN_INLINE std::vector<SchemaViolation> CompiledSchema::validate(const nlohmann::json& value,
                                                                   std::size_t max_reported, std::size_t* total) const {
  std::vector<SchemaViolation> out;
  if (total) *total = 0;
  auto one = [&](std::string pointer, const char* rule, std::string message) {
    out.clear();
    out.push_back(SchemaViolation{std::move(pointer), rule, std::move(message)});
    if (total) *total = 1;
    return out;
  };
  if (compiled_->counts_characters) {
    if (auto at = detail::invalid_utf8_at(value)) return one(std::move(*at), "string", "not valid UTF-8");
  }
  const SchemaLimits& limits = compiled_->limits;
  // Comparing values (enum, const, uniqueItems) and describing them recurse over their depth: bound it first.
  if (compiled_->compares_values &&
      detail::json_depth(value, static_cast<int>(limits.max_check_depth)) > static_cast<int>(limits.max_check_depth)) {
    return one("", "depth",
               fmt::format("the value is nested deeper than {} levels (SchemaLimits::max_check_depth); the value is "
                           "refused",
                           limits.max_check_depth));
  }
  // The budget: a base, and so many steps per node of the value (counted without recursion).
  std::size_t nodes = 0;
  {
    std::vector<const nlohmann::json*> todo{&value};
    while (!todo.empty()) {
      const nlohmann::json* j = todo.back();
      todo.pop_back();
      ++nodes;
      if (j->is_structured()) {
        for (const auto& child : *j) todo.push_back(&child);
      }
    }
  }
  const std::size_t budget = limits.max_check_steps + limits.check_steps_per_value_node * nodes;
  try {
    {
      detail::schema::Checker fast(*compiled_, 0, budget);
      if (fast.check(0, value, false)) return out;
    }
    detail::schema::Checker full(*compiled_, max_reported, budget);
    full.check(0, value, true);
    if (full.total == 0) {  // cannot happen: the fast path found a violation
      return one("", "schema", "the value does not match the schema");
    }
    if (total) *total = full.total;
    return std::move(full.violations);
  } catch (const detail::schema::BudgetExceeded&) {
    return one("", "budget",
               fmt::format("checking the value took more than its budget of {} steps (SchemaLimits: {} and {} per "
                           "node of the value); the value is refused",
                           budget, limits.max_check_steps, limits.check_steps_per_value_node));
  } catch (const detail::schema::TooDeep&) {
    return one("", "depth",
               fmt::format("checking the value nested more than {} subschemas deep (SchemaLimits::max_check_depth); "
                           "the value is refused",
                           limits.max_check_depth));
  }
}

CAIRN_END_NAMESPACE
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
