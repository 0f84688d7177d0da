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

#include "cairn/artifact/relevance.hpp"
#include "cairn/artifact/store.hpp"
#include "cairn/context/resolve.hpp"
#include "cairn/detail/enum_ostream.hpp"
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
  template <class OrderedJson, std::enable_if_t<std::is_same_v<OrderedJson, nlohmann::ordered_json>, int> = 0>
  static Sop from_json(const OrderedJson& j, std::string_view what = "sop");

  /// The subgoal for step `index` (what the verb table above says). Throws cairn::invalid_template for a step
  /// that cannot be mapped; from_json runs it for every step, so a loaded SOP never throws here.
  SubgoalSpec step_goal(std::size_t index) const;
};

namespace detail {

bool is_sop_stopword(std::string_view w);

/// Lowercase words of `text` (letters and digits), in order.
std::vector<std::string> sop_words(std::string_view text);

/// A word reduced for matching: "trains" and "train" match.
std::string sop_stem(std::string w);

/// The content words of `text` joined with '_' ("Ask which seat they want" -> "seat"), a valid evidence key or "".
std::string sop_slug(const std::vector<std::string>& words, std::size_t from);

/// The evidence key a tool's result gets when the step names none: the tool name with '.' as '_'.
std::string sop_tool_key(std::string tool);

enum class SopVerb { gather, tool, present, confirm, verify, execute };

SopVerb sop_verb(std::string_view word);

std::string_view to_string(SopVerb v);
CAIRN_DETAIL_ENUM_OSTREAM(SopVerb)

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

template <class OrderedJson, std::enable_if_t<std::is_same_v<OrderedJson, nlohmann::ordered_json>, int>>
Sop Sop::from_json(const OrderedJson& j, std::string_view what) {
  return detail::read_sop(j, what);
}

void to_json(nlohmann::json& j, const Sop& s);

/// SOPs by id, in the order they were added.
///
/// Not thread-safe for adding; once filled, any number of threads may read it (the planner only reads).
class SopRegistry {
 public:
  /// Adds `sop`. Throws cairn::invalid_argument when its id is taken.
  void add(Sop sop);

  /// Reads an SOP file (JSON, at most `limits.max_bytes`) and adds it. Throws cairn::not_found when the file cannot
  /// be read, and what Sop::parse and add throw; the message names the file.
  std::shared_ptr<const Sop> load_file(const std::string& path, const JsonLimits& limits = {});

  /// The SOP `id`, or null.
  std::shared_ptr<const Sop> find(std::string_view id) const;

  /// The type of the artifacts index() stores, and the prefix of their ids ("sop:" + the SOP's id).
  static constexpr std::string_view artifact_type = "sop";
  static constexpr std::string_view artifact_prefix = "sop:";

  /// Stores each SOP in `store` under `tenant` as an artifact that search can find (SopPlannerOptions::retrieve):
  /// id `sop:<id>`, type `sop`, title the SOP's title, description its intent, value a text of its description,
  /// inputs and steps, metadata `{"sop_id": <id>}` (embedded by the store's embedder, if it has one). An SOP whose
  /// artifact already says the same is not stored again; `sop:` artifacts of SOPs no longer in the registry are
  /// removed, so the store mirrors the registry. Returns how many artifacts were stored or removed. Throws what
  /// the store throws (an embedder's failure, a storage error); what was stored before stays.
  std::size_t index(ArtifactStore& store, const std::string& tenant) const;

  /// The record index() stores for `sop` (in `tenant`).
  static ArtifactPtr sop_record(const Sop& sop, const std::string& tenant);
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
SopMatch lexical_match(std::string_view gloss, const SopRegistry& registry);

/// Chooses the SOP for a goal; null means none fits.
using SopMatcher = std::function<std::shared_ptr<const Sop>(const Goal& goal, const nlohmann::json& evidence,
                                                            const SopRegistry& registry)>;

/// Where SopPlanner retrieves SOPs by search when none matches by name: the artifacts SopRegistry::index stored.
///
/// The query is the goal's gloss and, for a goal the user asked for, the user's request (the goal's
/// `provenance.request`, which GoalEngine records): its content words joined by OR (so an SOP needs only some of
/// them, BM25 ranks how many and how rare), and, when the store has an embedder, the vector of the same text
/// (hybrid ranking by reciprocal rank fusion). A hit counts when its score reaches `min_score`: the cosine
/// similarity to the query when the store keeps vectors, else the share of the query's content words the SOP holds
/// (0 to 1, as lexical_match scores). Of the first `k` hits, the best that counts and names an SOP still in the
/// registry is chosen.
struct SopRetrieval {
  std::shared_ptr<const ArtifactStore> store;
  std::string tenant;
  std::size_t k = 5;       ///< hits asked for (1 to SearchQuery::max_limit)
  double min_score = 0.5;  ///< hits scoring lower do not count
};

struct SopPlannerOptions {
  double min_score = 0.5;                 ///< lexical matches scoring lower do not count
  SopMatcher matcher;                     ///< replaces the lexical match when set
  std::shared_ptr<GoalPlanner> fallback;  ///< plans goals no SOP fits
  /// When set, goals no SOP matches by name (the matcher, else the lexical match) are matched by search.
  std::optional<SopRetrieval> retrieve;
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
  explicit SopPlanner(std::shared_ptr<const SopRegistry> registry, SopPlannerOptions options = {});

  /// The SOP chosen for `goal`, or null: by the matcher (else the lexical match), then by retrieval when set.
  /// Throws what the store's search throws (a store that is down, an embedder that fails).
  std::shared_ptr<const Sop> match(const Goal& goal, const nlohmann::json& evidence) const;

  /// The SOP retrieval finds for `goal` and its score, or a null sop (also when retrieval is not set).
  SopMatch retrieve(const Goal& goal) const;

  /// The plan an SOP gives for a goal with `evidence`: a gather_info subgoal for each required input the evidence
  /// lacks, then one subgoal per step, all of them needed (AND).
  static GoalPlan plan_from(const Sop& sop, const nlohmann::json& evidence);

  /// Throws cairn::not_found when no SOP fits and there is no fallback (the engine abandons the goal with it).
  CAIRN_INLINE GoalPlan plan(const Goal& goal, const nlohmann::json& evidence) override;

 private:
  std::shared_ptr<const SopRegistry> registry_;
  SopPlannerOptions options_;
};

CAIRN_END_NAMESPACE

#ifndef CAIRN_COMPILED_LIB
#include "cairn/goals/sop-inl.hpp"
#endif
