// YAML workflow templates: yaml-cpp's event parser feeding a JSON builder that enforces cairn's limits.
//
// The event API (not YAML::Load) is used so that depth and size are checked while parsing: the builder throws at
// the depth limit before yaml-cpp recurses any deeper, and aliases are expanded with their node counts charged.
#include "cairn/workflow/yaml.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include "cairn/detail/text.hpp"
#include "cairn/error.hpp"

CAIRN_BEGIN_NAMESPACE
namespace {

bool is_int_text(const std::string& v) {
  std::size_t i = (v[0] == '-' || v[0] == '+') ? 1 : 0;
  if (i >= v.size()) return false;
  for (; i < v.size(); ++i) {
    if (!detail::is_ascii_digit(v[i])) return false;
  }
  return true;
}

bool is_float_text(const std::string& v) {
  // [-+]? ( \.[0-9]+ | [0-9]+ ( \.[0-9]* )? ) ( [eE] [-+]? [0-9]+ )?
  std::size_t i = (v[0] == '-' || v[0] == '+') ? 1 : 0;
  std::size_t digits = 0;
  while (i < v.size() && detail::is_ascii_digit(v[i])) ++i, ++digits;
  if (i < v.size() && v[i] == '.') {
    ++i;
    while (i < v.size() && detail::is_ascii_digit(v[i])) ++i, ++digits;
  }
  if (digits == 0) return false;
  if (i < v.size() && (v[i] == 'e' || v[i] == 'E')) {
    ++i;
    if (i < v.size() && (v[i] == '-' || v[i] == '+')) ++i;
    std::size_t exp = 0;
    while (i < v.size() && detail::is_ascii_digit(v[i])) ++i, ++exp;
    if (exp == 0) return false;
  }
  return i == v.size();
}

// The YAML 1.2 core schema for a plain (untagged, unquoted) scalar.
nlohmann::json resolve_plain(const std::string& v) {
  if (v.empty() || v == "~" || v == "null" || v == "Null" || v == "NULL") return nullptr;
  if (v == "true" || v == "True" || v == "TRUE") return true;
  if (v == "false" || v == "False" || v == "FALSE") return false;
  // from_chars: no locale, no exceptions, and no leading '+' (skipped here; the text checks allow one).
  const char* first = v.data() + (v[0] == '+' ? 1 : 0);
  const char* last = v.data() + v.size();
  const auto whole = [last](std::from_chars_result r) { return r.ec == std::errc() && r.ptr == last; };
  if (is_int_text(v)) {
    if (v[0] == '-') {
      std::int64_t i = 0;
      if (whole(std::from_chars(first, last, i))) return i;
    } else {
      std::uint64_t u = 0;
      if (whole(std::from_chars(first, last, u))) return u;
    }
    // Too big for a 64-bit integer: read as a double below, like a JSON parser would.
  }
  if (is_int_text(v) || is_float_text(v)) {
    double d = 0;
    // A number beyond double's range either way (1e999, 1e-999) stays text: JSON has no infinity, and turning it
    // into 0 or null would change what the author wrote without a word.
    if (whole(std::from_chars(first, last, d)) && std::isfinite(d)) return d;
  }
  return v;
}

class JsonBuilder final : public YAML::EventHandler {
 public:
  JsonBuilder(const YamlLimits& limits, std::string what) : limits_(limits), what_(std::move(what)) {}

  nlohmann::json take() { return root_ ? std::move(*root_) : nlohmann::json(); }

  void OnDocumentStart(const YAML::Mark& mark) override {
    if (documents_++ > 0) fail(mark, "a template is one YAML document, found a second one");
  }
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { add(mark, nullptr, anchor, 1, "~"); }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    const auto it = anchors_.find(anchor);
    if (it == anchors_.end()) fail(mark, "alias refers to an unknown anchor");
    add(mark, it->second.first, 0, it->second.second, std::nullopt);
  }

  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    nlohmann::json v;
    if (tag == "?") {
      v = resolve_plain(value);
    } else if (tag == "tag:yaml.org,2002:int" || tag == "tag:yaml.org,2002:float" || tag == "tag:yaml.org,2002:bool" ||
               tag == "tag:yaml.org,2002:null") {
      v = resolve_plain(value);
    } else {
      v = value;  // quoted ("!"), !!str, or a tag cairn does not know: the text itself
    }
    add(mark, std::move(v), anchor, 1, value);
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    push(mark, nlohmann::json::array(), anchor);
  }
  void OnSequenceEnd() override { pop(); }

  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    push(mark, nlohmann::json::object(), anchor);
  }
  void OnMapEnd() override { pop(); }

 private:
  struct Frame {
    nlohmann::json value;
    YAML::anchor_t anchor;
    std::size_t nodes_at_start;
    YAML::Mark mark;
    std::optional<std::string> key;  // a mapping's key waiting for its value
  };

  [[noreturn]] void fail(const YAML::Mark& mark, const std::string& msg) const {
    throw parse_error(fmt::format("{}: line {}, column {}: {}", what_, mark.line + 1, mark.column + 1, msg));
  }

  void count(const YAML::Mark& mark, std::size_t n) {
    nodes_ += n;
    if (nodes_ > limits_.max_nodes) {
      throw limit_exceeded(fmt::format("{}: line {}: more than {} values (after expanding aliases)", what_,
                                       mark.line + 1, limits_.max_nodes));
    }
  }

  void push(const YAML::Mark& mark, nlohmann::json value, YAML::anchor_t anchor) {
    if (static_cast<int>(stack_.size()) >= limits_.max_depth) {
      throw limit_exceeded(fmt::format("{}: line {}: nesting is deeper than the limit of {} levels", what_,
                                       mark.line + 1, limits_.max_depth));
    }
    if (!stack_.empty() && stack_.back().value.is_object() && !stack_.back().key) {
      fail(mark, "a mapping key must be a scalar");
    }
    count(mark, 1);
    stack_.push_back(Frame{std::move(value), anchor, nodes_ - 1, mark, std::nullopt});
  }

  void pop() {
    Frame f = std::move(stack_.back());
    stack_.pop_back();
    const std::size_t n = nodes_ - f.nodes_at_start;
    attach(f.mark, std::move(f.value), f.anchor, n, std::nullopt);
  }

  void add(const YAML::Mark& mark, nlohmann::json value, YAML::anchor_t anchor, std::size_t n,
           const std::optional<std::string>& text) {
    count(mark, n);
    attach(mark, std::move(value), anchor, n, text);
  }

  void attach(const YAML::Mark& mark, nlohmann::json value, YAML::anchor_t anchor, std::size_t n,
              const std::optional<std::string>& text) {
    if (anchor != 0) anchors_[anchor] = {value, n};
    if (stack_.empty()) {
      root_ = std::move(value);
      return;
    }
    Frame& top = stack_.back();
    if (top.value.is_array()) {
      top.value.push_back(std::move(value));
      return;
    }
    if (!top.key) {
      // A key: any scalar, by its text (`1: x` has the key "1").
      if (!text || value.is_structured()) fail(mark, "a mapping key must be a scalar");
      if (top.value.contains(*text)) fail(mark, fmt::format("duplicate key '{}'", detail::excerpt(*text)));
      top.key = *text;
      return;
    }
    top.value[*top.key] = std::move(value);
    top.key.reset();
  }

  const YamlLimits& limits_;
  std::string what_;
  std::vector<Frame> stack_;
  std::optional<nlohmann::json> root_;
  std::map<YAML::anchor_t, std::pair<nlohmann::json, std::size_t>> anchors_;
  std::size_t nodes_ = 0;
  int documents_ = 0;
};

}  // namespace

nlohmann::json yaml_to_json(std::string_view text, const YamlLimits& limits, std::string_view what) {
  if (text.size() > limits.max_bytes) {
    throw limit_exceeded(
        fmt::format("{}: input is {} bytes, more than the limit of {} bytes", what, text.size(), limits.max_bytes));
  }
  std::istringstream in{std::string(text)};
  JsonBuilder builder(limits, std::string(what));
  try {
    YAML::Parser parser(in);
    while (parser.HandleNextDocument(builder)) {
    }
  } catch (const YAML::Exception& e) {
    throw parse_error(
        fmt::format("{}: line {}, column {}: invalid YAML: {}", what, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  return builder.take();
}

WorkflowTemplate load_template_yaml(std::string_view text, const YamlLimits& limits) {
  return WorkflowTemplate::from_json(yaml_to_json(text, limits, "workflow template (YAML)"));
}

WorkflowTemplate load_template_yaml_file(const std::filesystem::path& path, const YamlLimits& limits) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw storage_error(fmt::format("cannot open workflow template '{}'", path.string()));
  std::string text;
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<std::size_t>(in.gcount()));
    if (text.size() > limits.max_bytes) {
      throw limit_exceeded(
          fmt::format("workflow template '{}' is larger than the limit of {} bytes", path.string(), limits.max_bytes));
    }
  }
  const std::string what = fmt::format("workflow template '{}'", path.string());
  try {
    return WorkflowTemplate::from_json(yaml_to_json(text, limits, what));
  } catch (const invalid_template& e) {
    throw invalid_template(fmt::format("{}: {}", what, e.what()));
  }
}

CAIRN_END_NAMESPACE
