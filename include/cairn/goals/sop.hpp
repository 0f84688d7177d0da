// cairn — standard operating procedures (SOPs) and the SopPlanner that turns them into goal plans.
//
// An SOP is a JSON document: title, intent, description, inputs `{name: {description, type, required, prompt?}}`
// and steps `[{gloss, suggested_tools?, done_when?, prompt?}]` (the prompts are cairn's addition: the question a
// gather or confirm goal asks). The planner matches a composite goal to an SOP (by words, or
// by a host matcher), asks for the required inputs the evidence lacks, and maps each step to a predicate by the verb
// its gloss starts with:
//
//   gather, collect, ask          -> gather_info  (key: done_when[0], else the words after the verb)
//   search, retrieve, call, execute -> use_tool   (the first suggested tool; result key: done_when[0], else the tool)
//   present, show, display        -> present_info (shows the result of the latest tool step before it)
//   confirm                       -> confirm      (answer key: done_when[0], else "confirmation")
//   verify, validate              -> confirm, done when predicate_true{<words of the gloss>} holds
//   anything else                 -> execute
//
// A step's done_when may only name the key its own action produces (one key, or none for present, verify and
// execute steps): a key no action makes would leave the goal waiting for ever, so such an SOP is rejected on load.
#pragma once

#include <algorithm>
#include <cstddef>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/context/resolve.hpp"
#include "cairn/detail/json.hpp"
#include "cairn/detail/text.hpp"
#include "cairn/error.hpp"
#include "cairn/goals/goal.hpp"
#include "cairn/goals/interfaces.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

/// An input an SOP needs.
struct SopInput {
  std::string name;  ///< also the evidence key
  std::string description;
  std::string type = "string";
  bool required = false;
  std::string prompt;  ///< the question to ask for it ("" means the default question)
};

/// One step of an SOP, as written.
struct SopStep {
  std::string gloss;
  std::vector<std::string> suggested_tools;
  std::vector<std::string> done_when;  ///< evidence keys
  std::string prompt;  ///< gather and confirm steps: the question to ask ("" means the default question)
};

/// A standard operating procedure. Build one with Sop::parse / Sop::from_json, which check it.
struct Sop {
  std::string id;  ///< defaults to the title made lowercase with dashes
  std::string title;
  std::string intent;
  std::string description;
  std::vector<SopInput> inputs;  ///< in the order the document lists them
  std::vector<SopStep> steps;

  /// Reads an SOP from JSON text within `limits`, keeping the order of `inputs`. Throws cairn::parse_error /
  /// cairn::limit_exceeded for bad JSON and cairn::invalid_template naming the field for a bad SOP:
  /// "sop 'train-booking': steps[3].done_when: a present step produces no evidence, so 'x' would never appear".
  static Sop parse(std::string_view text, const JsonLimits& limits = {}, std::string_view what = "sop");

  /// The same from a parsed value. nlohmann::json keeps object members sorted, so `inputs` come in name order here;
  /// parse() keeps the document's order.
  static Sop from_json(const nlohmann::json& j, std::string_view what = "sop");
  /// nlohmann::ordered_json keeps the document's order. A template only so that a program that never passes an
  /// ordered_json does not instantiate a second JSON type (about a tenth of what including cairn.hpp costs).
  template <class OrderedJson,
            std::enable_if_t<std::is_same_v<OrderedJson, nlohmann::ordered_json>, int> = 0>
  static Sop from_json(const OrderedJson& j, std::string_view what = "sop");

  /// The subgoal for step `index` (what the verb table above says). Throws cairn::invalid_template for a step
  /// that cannot be mapped; from_json runs it for every step, so a loaded SOP never throws here.
  SubgoalSpec step_goal(std::size_t index) const;
};

namespace detail {

inline bool is_sop_stopword(std::string_view w) {
  static const std::unordered_set<std::string_view> words = {
      "a",    "an",  "the",  "to",    "for",  "of",   "me",   "my",    "i",     "you",  "your", "and",
      "or",   "in",  "on",   "at",    "with", "from", "by",   "please", "some", "any",  "this", "that",
      "is",   "are", "be",   "it",    "its",  "which", "what", "will",  "would", "can", "could", "all",
      "them", "their", "they", "we",  "our",  "us",   "want", "wants", "need",  "needs", "get"};
  return words.count(w) > 0;
}

/// Lowercase words of `text` (letters and digits), in order.
inline std::vector<std::string> sop_words(std::string_view text) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : text) {
    if (is_ascii_alpha(c) || is_ascii_digit(c)) {
      cur.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c));
    } else if (!cur.empty()) {
      out.push_back(std::move(cur));
      cur.clear();
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

/// A word reduced for matching: "trains" and "train" match.
inline std::string sop_stem(std::string w) {
  if (w.size() > 3 && w.back() == 's' && w[w.size() - 2] != 's') w.pop_back();
  return w;
}

/// The content words of `text` joined with '_' ("Ask which seat they want" -> "seat"), a valid evidence key or "".
inline std::string sop_slug(const std::vector<std::string>& words, std::size_t from) {
  std::string out;
  for (std::size_t i = from; i < words.size(); ++i) {
    if (is_sop_stopword(words[i])) continue;
    if (!out.empty()) out.push_back('_');
    out += words[i];
  }
  if (!out.empty() && is_ascii_digit(out[0])) out.insert(out.begin(), '_');
  if (out.size() > max_artifact_name_length) out.resize(max_artifact_name_length);
  return out;
}

/// The evidence key a tool's result gets when the step names none: the tool name with '.' as '_'.
inline std::string sop_tool_key(std::string tool) {
  for (char& c : tool) {
    if (c == '.') c = '_';
  }
  if (tool.empty() || (!is_ascii_alpha(tool[0]) && tool[0] != '_')) tool.insert(tool.begin(), '_');
  if (tool.size() > max_artifact_name_length) tool.resize(max_artifact_name_length);
  return tool;
}

enum class SopVerb { gather, tool, present, confirm, verify, execute };

inline SopVerb sop_verb(std::string_view word) {
  if (word == "gather" || word == "collect" || word == "ask") return SopVerb::gather;
  if (word == "search" || word == "retrieve" || word == "call" || word == "execute") return SopVerb::tool;
  if (word == "present" || word == "show" || word == "display") return SopVerb::present;
  if (word == "confirm") return SopVerb::confirm;
  if (word == "verify" || word == "validate") return SopVerb::verify;
  return SopVerb::execute;
}

inline std::string_view to_string(SopVerb v) {
  switch (v) {
    case SopVerb::gather: return "gather";
    case SopVerb::tool: return "tool";
    case SopVerb::present: return "present";
    case SopVerb::confirm: return "confirm";
    case SopVerb::verify: return "verify";
    case SopVerb::execute: return "execute";
  }
  return "execute";
}

template <class Json>
class SopReader {
 public:
  explicit SopReader(std::string label) : label_(std::move(label)) {}
  [[noreturn]] void fail(std::string_view path, std::string_view message) const {
    if (path.empty()) throw invalid_template(fmt::format("{}: {}", label_, message));
    throw invalid_template(fmt::format("{}: {}: {}", label_, path, message));
  }
  void relabel(std::string label) { label_ = std::move(label); }
  const Json* find(const Json& obj, const char* key) const {
    const auto it = obj.find(key);
    return it == obj.end() || it->is_null() ? nullptr : &*it;
  }
  std::string str(const Json& obj, const char* key, const std::string& path, bool required) const {
    const Json* v = find(obj, key);
    const std::string where = path.empty() ? key : path + "." + key;
    if (!v) {
      if (required) fail(where, "missing");
      return {};
    }
    if (!v->is_string()) fail(where, fmt::format("expected a string, got {}", v->type_name()));
    return v->template get<std::string>();
  }
  std::vector<std::string> strings(const Json& obj, const char* key, const std::string& path) const {
    std::vector<std::string> out;
    const Json* v = find(obj, key);
    if (!v) return out;
    const std::string where = path + "." + key;
    if (!v->is_array()) fail(where, fmt::format("expected an array of strings, got {}", v->type_name()));
    for (std::size_t i = 0; i < v->size(); ++i) {
      const Json& s = (*v)[i];
      if (!s.is_string() || s.template get_ref<const std::string&>().empty()) {
        fail(fmt::format("{}[{}]", where, i), "expected a non-empty string");
      }
      out.push_back(s.template get<std::string>());
    }
    return out;
  }

 private:
  std::string label_;
};

template <class Json>
Sop read_sop(const Json& j, std::string_view what) {
  SopReader<Json> in{std::string(what)};
  if (!j.is_object()) in.fail("", fmt::format("expected an object, got {}", j.type_name()));
  Sop sop;
  sop.title = in.str(j, "title", "", true);
  if (sop.title.empty()) in.fail("title", "must not be empty");
  sop.id = in.str(j, "id", "", false);
  if (sop.id.empty()) {
    for (const std::string& w : sop_words(sop.title)) sop.id += (sop.id.empty() ? "" : "-") + w;
  }
  if (sop.id.empty()) in.fail("title", "needs at least one letter or digit to make an id from");
  in.relabel(fmt::format("{} '{}'", what, excerpt(sop.id)));
  sop.intent = in.str(j, "intent", "", false);
  sop.description = in.str(j, "description", "", false);
  if (const Json* inputs = in.find(j, "inputs")) {
    if (!inputs->is_object()) in.fail("inputs", fmt::format("expected an object, got {}", inputs->type_name()));
    for (auto it = inputs->begin(); it != inputs->end(); ++it) {
      const std::string path = "inputs." + it.key();
      if (!is_valid_artifact_name(it.key())) {
        in.fail(path, "the input name is not a valid evidence key (expected [A-Za-z_][A-Za-z0-9_-]{0,127})");
      }
      const Json& spec = it.value();
      if (!spec.is_object()) in.fail(path, fmt::format("expected an object, got {}", spec.type_name()));
      SopInput input;
      input.name = it.key();
      input.description = in.str(spec, "description", path, false);
      input.type = in.str(spec, "type", path, false);
      if (input.type.empty()) input.type = "string";
      input.prompt = in.str(spec, "prompt", path, false);
      if (const Json* r = in.find(spec, "required")) {
        if (!r->is_boolean()) in.fail(path + ".required", fmt::format("expected a boolean, got {}", r->type_name()));
        input.required = r->template get<bool>();
      }
      sop.inputs.push_back(std::move(input));
    }
  }
  const Json* steps = in.find(j, "steps");
  if (!steps) in.fail("steps", "missing");
  if (!steps->is_array()) in.fail("steps", fmt::format("expected an array, got {}", steps->type_name()));
  if (steps->empty()) in.fail("steps", "must not be empty");
  for (std::size_t i = 0; i < steps->size(); ++i) {
    const std::string path = fmt::format("steps[{}]", i);
    const Json& s = (*steps)[i];
    if (!s.is_object()) in.fail(path, fmt::format("expected an object, got {}", s.type_name()));
    SopStep step;
    step.gloss = in.str(s, "gloss", path, true);
    if (sop_words(step.gloss).empty()) in.fail(path + ".gloss", "must hold at least one word");
    step.suggested_tools = in.strings(s, "suggested_tools", path);
    step.done_when = in.strings(s, "done_when", path);
    step.prompt = in.str(s, "prompt", path, false);
    sop.steps.push_back(std::move(step));
  }
  for (std::size_t i = 0; i < sop.steps.size(); ++i) {
    try {
      (void)sop.step_goal(i);
    } catch (const invalid_template& e) {
      in.fail("", e.what());
    }
  }
  return sop;
}

}  // namespace detail

inline Sop Sop::parse(std::string_view text, const JsonLimits& limits, std::string_view what) {
  const nlohmann::json j = detail::parse_json(text, limits, what);  // size, depth and syntax, with cairn's messages
  // nlohmann::json sorts object members, and `inputs` are asked in the document's order: a second pass records the
  // order of the keys of the top-level "inputs" object (the keys of the top-level object are at depth 1, those of
  // its member objects at depth 2). A parser callback, as in parse_json, so no second JSON type is instantiated.
  std::vector<std::string> order;
  std::unordered_set<std::string> seen;
  bool in_inputs = false;
  auto record = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    if (event == nlohmann::json::parse_event_t::key && parsed.is_string()) {
      const auto& key = parsed.get_ref<const std::string&>();
      if (depth == 1) {
        in_inputs = key == "inputs";
      } else if (depth == 2 && in_inputs && seen.insert(key).second) {
        order.push_back(key);  // a repeated key keeps its first place, as nlohmann::ordered_json does
      }
    }
    return true;
  };
  [[maybe_unused]] const nlohmann::json again = nlohmann::json::parse(text.begin(), text.end(), record);
  Sop sop = detail::read_sop(j, what);
  std::unordered_map<std::string_view, std::size_t> rank;
  for (std::size_t i = 0; i < order.size(); ++i) rank.emplace(order[i], i);
  std::stable_sort(sop.inputs.begin(), sop.inputs.end(), [&rank](const SopInput& a, const SopInput& b) {
    const auto ra = rank.find(a.name);
    const auto rb = rank.find(b.name);
    return (ra == rank.end() ? rank.size() : ra->second) < (rb == rank.end() ? rank.size() : rb->second);
  });
  return sop;
}

inline Sop Sop::from_json(const nlohmann::json& j, std::string_view what) { return detail::read_sop(j, what); }
template <class OrderedJson, std::enable_if_t<std::is_same_v<OrderedJson, nlohmann::ordered_json>, int>>
Sop Sop::from_json(const OrderedJson& j, std::string_view what) {
  return detail::read_sop(j, what);
}

inline SubgoalSpec Sop::step_goal(std::size_t index) const {
  if (index >= steps.size()) {
    throw invalid_argument(fmt::format("sop '{}': step {} is out of range ({} steps)", id, index, steps.size()));
  }
  const SopStep& step = steps[index];
  const std::string where = fmt::format("steps[{}]", index);
  auto fail = [&](std::string_view field, std::string_view message) -> void {
    throw invalid_template(fmt::format("{}{}: {}", where, field, message));
  };
  const std::vector<std::string> words = detail::sop_words(step.gloss);
  const detail::SopVerb verb = detail::sop_verb(words.front());
  auto article = [](detail::SopVerb v) {
    const std::string_view name = detail::to_string(v);
    return fmt::format("{} {}", name.front() == 'e' ? "an" : "a", name);
  };
  for (std::size_t k = 0; k < step.done_when.size(); ++k) {
    if (!is_valid_artifact_name(step.done_when[k])) {
      fail(fmt::format(".done_when[{}]", k), fmt::format("'{}' is not a valid evidence key", detail::excerpt(step.done_when[k])));
    }
  }
  // The one key the step's action produces, when it produces one.
  auto produced_key = [&](std::string fallback) {
    if (step.done_when.size() > 1) {
      fail(".done_when", fmt::format("{} step produces one key, so '{}' would never appear", article(verb),
                                     step.done_when[1]));
    }
    return step.done_when.empty() ? std::move(fallback) : step.done_when.front();
  };
  auto produces_nothing = [&]() {
    if (!step.done_when.empty()) {
      fail(".done_when", fmt::format("{} step produces no evidence, so '{}' would never appear", article(verb),
                                     step.done_when.front()));
    }
  };

  SubgoalSpec spec;
  spec.gloss = step.gloss;
  spec.provenance = {{"sop_id", id}, {"sop_title", title}, {"step_index", index}};
  switch (verb) {
    case detail::SopVerb::gather: {
      const std::string key = produced_key(detail::sop_slug(words, 1));
      if (key.empty()) fail(".gloss", "a gather step needs words after the verb (or a done_when key) to name what it gathers");
      spec.predicate = Predicate{std::string(Predicate::gather_info), {{"key", key}}};
      if (!step.prompt.empty()) spec.predicate.args["prompt"] = step.prompt;
      spec.done_when = {Condition::has_evidence(key)};
      break;
    }
    case detail::SopVerb::tool: {
      if (step.suggested_tools.empty()) {
        fail(".suggested_tools", fmt::format("a '{}' step needs a tool to call", words.front()));
      }
      const std::string& tool = step.suggested_tools.front();
      const std::string key = produced_key(detail::sop_tool_key(tool));
      spec.predicate = Predicate{std::string(Predicate::use_tool), {{"tool", tool}, {"output", key}}};
      spec.done_when = {Condition::has_evidence(key)};
      spec.provenance["suggested_tool"] = tool;
      break;
    }
    case detail::SopVerb::present: {
      produces_nothing();
      spec.predicate = Predicate{std::string(Predicate::present_info), nlohmann::json::object()};
      for (std::size_t k = index; k-- > 0;) {  // the latest tool step before this one
        const auto w = detail::sop_words(steps[k].gloss);
        if (detail::sop_verb(w.front()) == detail::SopVerb::tool && !steps[k].suggested_tools.empty()) {
          spec.predicate.args["key"] = steps[k].done_when.empty()
                                           ? detail::sop_tool_key(steps[k].suggested_tools.front())
                                           : steps[k].done_when.front();
          break;
        }
      }
      break;
    }
    case detail::SopVerb::confirm: {
      const std::string key = produced_key("confirmation");
      spec.predicate = Predicate{std::string(Predicate::confirm), {{"key", key}}};
      if (!step.prompt.empty()) spec.predicate.args["question"] = step.prompt;
      spec.done_when = {Condition::has_evidence(key)};
      break;
    }
    case detail::SopVerb::verify: {
      produces_nothing();
      std::string name = detail::sop_slug(words, 0);
      spec.predicate = Predicate{std::string(Predicate::confirm), nlohmann::json::object()};
      if (!step.prompt.empty()) spec.predicate.args["question"] = step.prompt;
      spec.done_when = {Condition::predicate_true(
          Predicate{name, {{"gloss", step.gloss}, {"sop_id", id}, {"step_index", index}}})};
      break;
    }
    case detail::SopVerb::execute: {
      produces_nothing();
      spec.predicate = Predicate{std::string(Predicate::execute), nlohmann::json::object()};
      break;
    }
  }
  return spec;
}

inline void to_json(nlohmann::json& j, const Sop& s) {
  nlohmann::json inputs = nlohmann::json::object();
  for (const SopInput& i : s.inputs) {
    inputs[i.name] = {{"description", i.description}, {"type", i.type}, {"required", i.required}};
    if (!i.prompt.empty()) inputs[i.name]["prompt"] = i.prompt;
  }
  nlohmann::json steps = nlohmann::json::array();
  for (const SopStep& st : s.steps) {
    nlohmann::json o = {{"gloss", st.gloss}};
    if (!st.suggested_tools.empty()) o["suggested_tools"] = st.suggested_tools;
    if (!st.done_when.empty()) o["done_when"] = st.done_when;
    if (!st.prompt.empty()) o["prompt"] = st.prompt;
    steps.push_back(std::move(o));
  }
  j = {{"id", s.id},         {"title", s.title},   {"intent", s.intent}, {"description", s.description},
       {"inputs", inputs},   {"steps", steps}};
}

/// SOPs by id, in the order they were added.
///
/// Not thread-safe for adding; once filled, any number of threads may read it (the planner only reads).
class SopRegistry {
 public:
  /// Adds `sop`. Throws cairn::invalid_argument when its id is taken.
  void add(Sop sop) {
    if (by_id_.count(sop.id)) {
      throw invalid_argument(fmt::format("sop registry: an SOP with id '{}' exists already", detail::excerpt(sop.id)));
    }
    auto shared = std::make_shared<const Sop>(std::move(sop));
    by_id_.emplace(shared->id, shared);
    order_.push_back(std::move(shared));
  }

  /// Reads an SOP file (JSON, at most `limits.max_bytes`) and adds it. Throws cairn::not_found when the file cannot
  /// be read, and what Sop::parse and add throw; the message names the file.
  std::shared_ptr<const Sop> load_file(const std::string& path, const JsonLimits& limits = {}) {
    std::ifstream file(path, std::ios::binary);
    if (!file) throw not_found(fmt::format("sop file {}: cannot be opened", path));
    std::string text;
    char buf[65536];
    while (file.read(buf, sizeof buf) || file.gcount() > 0) {
      text.append(buf, static_cast<std::size_t>(file.gcount()));
      if (text.size() > limits.max_bytes) {
        throw limit_exceeded(fmt::format("sop file {}: more than the limit of {} bytes", path, limits.max_bytes));
      }
    }
    Sop sop = Sop::parse(text, limits, fmt::format("sop file {}", path));
    const std::string id = sop.id;
    add(std::move(sop));
    return find(id);
  }

  /// The SOP `id`, or null.
  std::shared_ptr<const Sop> find(std::string_view id) const {
    const auto it = by_id_.find(std::string(id));
    return it == by_id_.end() ? nullptr : it->second;
  }
  const std::vector<std::shared_ptr<const Sop>>& list() const noexcept { return order_; }
  std::size_t size() const noexcept { return order_.size(); }

 private:
  std::unordered_map<std::string, std::shared_ptr<const Sop>> by_id_;
  std::vector<std::shared_ptr<const Sop>> order_;
};

/// The SOP whose title and intent share the most words with a goal, and how many of the goal's words it shares.
struct SopMatch {
  std::shared_ptr<const Sop> sop;
  double score = 0;  ///< shared content words / content words of the gloss, 0 to 1
};

/// The best lexical match for `gloss`: content words (stopwords left out, plural 's' ignored) of the gloss found in
/// an SOP's title or intent, over the gloss's content words. The first SOP wins a tie; null sop when none shares a
/// word.
inline SopMatch lexical_match(std::string_view gloss, const SopRegistry& registry) {
  std::unordered_set<std::string> goal_words;
  for (std::string& w : detail::sop_words(gloss)) {
    if (!detail::is_sop_stopword(w)) goal_words.insert(detail::sop_stem(std::move(w)));
  }
  SopMatch best;
  if (goal_words.empty()) return best;
  for (const auto& sop : registry.list()) {
    std::unordered_set<std::string> words;
    for (std::string& w : detail::sop_words(sop->title + " " + sop->intent)) words.insert(detail::sop_stem(std::move(w)));
    std::size_t shared = 0;
    for (const std::string& w : goal_words) shared += words.count(w);
    const double score = static_cast<double>(shared) / static_cast<double>(goal_words.size());
    if (shared > 0 && score > best.score) best = SopMatch{sop, score};
  }
  return best;
}

/// Chooses the SOP for a goal; null means none fits.
using SopMatcher = std::function<std::shared_ptr<const Sop>(const Goal& goal, const nlohmann::json& evidence,
                                                            const SopRegistry& registry)>;

struct SopPlannerOptions {
  double min_score = 0.5;  ///< lexical matches scoring lower do not count
  SopMatcher matcher;      ///< replaces the lexical match when set
  std::shared_ptr<GoalPlanner> fallback;  ///< plans goals no SOP fits
};

/// A GoalPlanner that follows SOPs, and hands goals no SOP fits to a fallback planner.
///
/// As thread-safe as its registry, matcher and fallback: it keeps no state of its own.
///
///     auto sops = std::make_shared<cairn::SopRegistry>();
///     sops->load_file("sops/train-booking.json");
///     auto planner = std::make_shared<cairn::SopPlanner>(sops, cairn::SopPlannerOptions{0.5, {}, vanilla});
class SopPlanner : public GoalPlanner {
 public:
  explicit SopPlanner(std::shared_ptr<const SopRegistry> registry, SopPlannerOptions options = {})
      : registry_(std::move(registry)), options_(std::move(options)) {
    if (!registry_) throw invalid_argument("SopPlanner: registry must not be null");
  }

  /// The SOP chosen for `goal`, or null.
  std::shared_ptr<const Sop> match(const Goal& goal, const nlohmann::json& evidence) const {
    if (options_.matcher) return options_.matcher(goal, evidence, *registry_);
    SopMatch m = lexical_match(goal.gloss, *registry_);
    return m.score >= options_.min_score ? m.sop : nullptr;
  }

  /// The plan an SOP gives for a goal with `evidence`: a gather_info subgoal for each required input the evidence
  /// lacks, then one subgoal per step, all of them needed (AND).
  static GoalPlan plan_from(const Sop& sop, const nlohmann::json& evidence) {
    GoalPlan plan;
    plan.kind = Decomposition::Kind::all;
    plan.source = "sop";
    for (const SopInput& input : sop.inputs) {
      if (!input.required || (evidence.is_object() && evidence.contains(input.name))) continue;
      SubgoalSpec s;
      s.gloss = fmt::format("Gather {}", input.name);
      s.predicate = Predicate{std::string(Predicate::gather_info), {{"key", input.name}}};
      if (!input.prompt.empty()) s.predicate.args["prompt"] = input.prompt;
      s.done_when = {Condition::has_evidence(input.name)};
      s.provenance = {{"sop_id", sop.id}, {"sop_title", sop.title}, {"input", input.name}};
      plan.subgoals.push_back(std::move(s));
    }
    for (std::size_t i = 0; i < sop.steps.size(); ++i) plan.subgoals.push_back(sop.step_goal(i));
    return plan;
  }

  /// Throws cairn::not_found when no SOP fits and there is no fallback (the engine abandons the goal with it).
  GoalPlan plan(const Goal& goal, const nlohmann::json& evidence) override {
    if (const auto sop = match(goal, evidence)) return plan_from(*sop, evidence);
    if (!options_.fallback) {
      throw not_found(fmt::format("no SOP matches '{}' and there is no fallback planner", detail::excerpt(goal.gloss)));
    }
    return options_.fallback->plan(goal, evidence);
  }

 private:
  std::shared_ptr<const SopRegistry> registry_;
  SopPlannerOptions options_;
};

CAIRN_END_NAMESPACE
