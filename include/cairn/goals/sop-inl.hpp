// cairn — the function bodies of cairn/goals/sop.hpp (docs/api.md, "Compiled mode"). Header-only, the
// default, that header includes this file and CAIRN_INLINE is `inline`; with CAIRN_COMPILED_LIB they are
// compiled once, into cairn::compiled (src/compiled/), and the header only declares them.
#pragma once

#include <fstream>

#include "cairn/artifact/search/words.hpp"
#include "cairn/goals/sop.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

CAIRN_INLINE Sop Sop::from_json(const nlohmann::json& j, std::string_view what) { return detail::read_sop(j, what); }

namespace detail {
CAIRN_INLINE bool is_sop_stopword(std::string_view w) {
  static const std::unordered_set<std::string_view> words = {
      "a",    "an",    "the",  "to", "for",  "of",    "me",   "my",     "i",     "you",   "your",  "and",
      "or",   "in",    "on",   "at", "with", "from",  "by",   "please", "some",  "any",   "this",  "that",
      "is",   "are",   "be",   "it", "its",  "which", "what", "will",   "would", "can",   "could", "all",
      "them", "their", "they", "we", "our",  "us",    "want", "wants",  "need",  "needs", "get"};
  return words.count(w) > 0;
}

CAIRN_INLINE std::vector<std::string> sop_words(std::string_view text) {
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

CAIRN_INLINE std::string sop_stem(std::string w) {
  if (w.size() > 3 && w.back() == 's' && w[w.size() - 2] != 's') w.pop_back();
  return w;
}

CAIRN_INLINE std::string sop_slug(const std::vector<std::string>& words, std::size_t from) {
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

CAIRN_INLINE std::string sop_tool_key(std::string tool) {
  for (char& c : tool) {
    if (c == '.') c = '_';
  }
  if (tool.empty() || (!is_ascii_alpha(tool[0]) && tool[0] != '_')) tool.insert(tool.begin(), '_');
  if (tool.size() > max_artifact_name_length) tool.resize(max_artifact_name_length);
  return tool;
}

CAIRN_INLINE SopVerb sop_verb(std::string_view word) {
  if (word == "gather" || word == "collect" || word == "ask") return SopVerb::gather;
  if (word == "search" || word == "retrieve" || word == "call" || word == "execute") return SopVerb::tool;
  if (word == "present" || word == "show" || word == "display") return SopVerb::present;
  if (word == "confirm") return SopVerb::confirm;
  if (word == "verify" || word == "validate") return SopVerb::verify;
  return SopVerb::execute;
}

CAIRN_INLINE std::string_view to_string(SopVerb v) {
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

}  // namespace detail

CAIRN_INLINE Sop Sop::parse(std::string_view text, const JsonLimits& limits, std::string_view what) {
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

CAIRN_INLINE SubgoalSpec Sop::step_goal(std::size_t index) const {
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
      fail(fmt::format(".done_when[{}]", k),
           fmt::format("'{}' is not a valid evidence key", detail::excerpt(step.done_when[k])));
    }
  }
  // The one key the step's action produces, when it produces one.
  auto produced_key = [&](std::string fallback) {
    if (step.done_when.size() > 1) {
      fail(".done_when",
           fmt::format("{} step produces one key, so '{}' would never appear", article(verb), step.done_when[1]));
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
      if (key.empty())
        fail(".gloss", "a gather step needs words after the verb (or a done_when key) to name what it gathers");
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
      spec.done_when = {
          Condition::predicate_true(Predicate{name, {{"gloss", step.gloss}, {"sop_id", id}, {"step_index", index}}})};
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

CAIRN_INLINE void to_json(nlohmann::json& j, const Sop& s) {
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
  j = {{"id", s.id},       {"title", s.title}, {"intent", s.intent}, {"description", s.description},
       {"inputs", inputs}, {"steps", steps}};
}

CAIRN_INLINE void SopRegistry::add(Sop sop) {
  if (by_id_.count(sop.id)) {
    throw invalid_argument(fmt::format("sop registry: an SOP with id '{}' exists already", detail::excerpt(sop.id)));
  }
  auto shared = std::make_shared<const Sop>(std::move(sop));
  by_id_.emplace(shared->id, shared);
  order_.push_back(std::move(shared));
}

CAIRN_INLINE std::shared_ptr<const Sop> SopRegistry::load_file(const std::string& path, const JsonLimits& limits) {
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

CAIRN_INLINE std::shared_ptr<const Sop> SopRegistry::find(std::string_view id) const {
  const auto it = by_id_.find(std::string(id));
  return it == by_id_.end() ? nullptr : it->second;
}

CAIRN_INLINE ArtifactPtr SopRegistry::sop_record(const Sop& sop, const std::string& tenant) {
  std::string text = sop.description;
  for (const SopInput& i : sop.inputs) {
    text += fmt::format("{}Input {}{}{}", text.empty() ? "" : "\n", i.name, i.description.empty() ? "" : ": ",
                        i.description);
  }
  for (const SopStep& st : sop.steps) text += (text.empty() ? "" : "\n") + st.gloss;
  return ArtifactRecord::builder()
      .tenant_id(tenant)
      .id(std::string(artifact_prefix) + sop.id)
      .type(std::string(artifact_type))
      .title(sop.title)
      .description(sop.intent)
      .value(std::move(text))
      .metadata("sop_id", sop.id)
      .build();
}

CAIRN_INLINE std::size_t SopRegistry::index(ArtifactStore& store, const std::string& tenant) const {
  std::size_t changed = 0;
  for (const auto& sop : order_) {
    const ArtifactPtr record = sop_record(*sop, tenant);
    const ArtifactPtr old = store.fetch(record->id(), tenant);
    if (old && old->type() == record->type() && old->title() == record->title() &&
        old->description() == record->description() && old->value() == record->value() &&
        old->metadata() == record->metadata()) {
      continue;
    }
    (void)store.store(*record);
    ++changed;
  }
  ListQuery q;
  q.prefix = std::string(artifact_prefix);
  q.type = ArtifactType{std::string(artifact_type)};
  std::vector<std::string> stale;
  for (;;) {
    const ListPage page = store.list(tenant, q);
    for (const auto& r : page.items) {
      if (!find(std::string_view(r->id()).substr(artifact_prefix.size()))) stale.push_back(r->id());
    }
    if (!page.next_cursor) break;
    q.cursor = *page.next_cursor;
  }
  for (const auto& id : stale) {
    store.remove(id, tenant);
    ++changed;
  }
  return changed;
}

CAIRN_INLINE SopMatch lexical_match(std::string_view gloss, const SopRegistry& registry) {
  std::unordered_set<std::string> goal_words;
  for (std::string& w : detail::sop_words(gloss)) {
    if (!detail::is_sop_stopword(w)) goal_words.insert(detail::sop_stem(std::move(w)));
  }
  SopMatch best;
  if (goal_words.empty()) return best;
  for (const auto& sop : registry.list()) {
    std::unordered_set<std::string> words;
    for (std::string& w : detail::sop_words(sop->title + " " + sop->intent))
      words.insert(detail::sop_stem(std::move(w)));
    std::size_t shared = 0;
    for (const std::string& w : goal_words) shared += words.count(w);
    const double score = static_cast<double>(shared) / static_cast<double>(goal_words.size());
    if (shared > 0 && score > best.score) best = SopMatch{sop, score};
  }
  return best;
}

CAIRN_INLINE SopPlanner::SopPlanner(std::shared_ptr<const SopRegistry> registry, SopPlannerOptions options)
    : registry_(std::move(registry)), options_(std::move(options)) {
  if (!registry_) throw invalid_argument("SopPlanner: registry must not be null");
  if (const auto& r = options_.retrieve) {
    if (!r->store) throw invalid_argument("SopPlanner: retrieve.store must not be null");
    if (r->tenant.empty()) throw invalid_argument("SopPlanner: retrieve.tenant must not be empty");
    if (r->k == 0 || r->k > SearchQuery::max_limit) {
      throw invalid_argument(
          fmt::format("SopPlanner: retrieve.k must be between 1 and {} (got {})", SearchQuery::max_limit, r->k));
    }
  }
}

CAIRN_INLINE std::shared_ptr<const Sop> SopPlanner::match(const Goal& goal, const nlohmann::json& evidence) const {
  std::shared_ptr<const Sop> found;
  if (options_.matcher) {
    found = options_.matcher(goal, evidence, *registry_);
  } else {
    SopMatch m = lexical_match(goal.gloss, *registry_);
    if (m.score >= options_.min_score) found = std::move(m.sop);
  }
  if (!found && options_.retrieve) found = retrieve(goal).sop;
  return found;
}

CAIRN_INLINE SopMatch SopPlanner::retrieve(const Goal& goal) const {
  SopMatch best;
  if (!options_.retrieve) return best;
  const SopRetrieval& r = *options_.retrieve;
  std::string text = goal.gloss;
  if (const auto it = goal.provenance.find("request"); it != goal.provenance.end() && it->is_string()) {
    text += "\n" + it->get<std::string>();
  }
  SearchQuery q = relevance_query(*r.store, text, [](std::string_view w) { return detail::is_sop_stopword(w); });
  if (q.text.empty()) return best;
  const std::size_t words = detail::parse_word_query(q.text).words().size();
  q.filter.type = ArtifactType{std::string(SopRegistry::artifact_type)};
  q.filter.id_prefix = std::string(SopRegistry::artifact_prefix);
  q.limit = r.k;
  const SearchPage page = r.store->search(r.tenant, q);
  for (const SearchHit& hit : page.hits) {
    const double score = hit.matched.similarity
                             ? *hit.matched.similarity
                             : static_cast<double>(hit.matched.words.size()) / static_cast<double>(words);
    if (score < r.min_score) continue;
    const auto id = hit.record->metadata().find("sop_id");
    if (id == hit.record->metadata().end() || !id->is_string()) continue;
    if (auto sop = registry_->find(id->get<std::string>())) return SopMatch{std::move(sop), score};
  }
  return best;
}

CAIRN_INLINE GoalPlan SopPlanner::plan_from(const Sop& sop, const nlohmann::json& evidence) {
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

CAIRN_INLINE GoalPlan SopPlanner::plan(const Goal& goal, const nlohmann::json& evidence) {
  if (const auto sop = match(goal, evidence)) return plan_from(*sop, evidence);
  if (!options_.fallback) {
    throw not_found(fmt::format("no SOP matches '{}' and there is no fallback planner", detail::excerpt(goal.gloss)));
  }
  return options_.fallback->plan(goal, evidence);
}

CAIRN_END_NAMESPACE
