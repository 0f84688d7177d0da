// cairn — the function bodies of cairn/goals/engine.hpp (docs/api.md, "Compiled mode"). Header-only, the
// default, that header includes this file and CAIRN_INLINE is `inline`; with CAIRN_COMPILED_LIB they are
// compiled once, into cairn::compiled (src/compiled/), and the header only declares them.
#pragma once

#include "cairn/goals/engine.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

CAIRN_INLINE std::shared_ptr<Observer> goal_observer(GoalObserver fn) {
  return observe_with([fn = std::move(fn)](const Event& e) {
    if (e.kind == EventKind::goal_transition && e.goal && fn) fn(*e.goal);
  });
}

CAIRN_INLINE std::string presentation_heading(const Goal& goal) {
  const auto it = goal.predicate.args.find("text");
  return it != goal.predicate.args.end() && it->is_string() && !it->get_ref<const std::string&>().empty()
             ? it->get<std::string>()
             : goal.gloss;
}

CAIRN_INLINE std::string default_presentation(const Goal& goal, const nlohmann::json& value) {
  auto text = [](const nlohmann::json& v) {
    return v.is_string() ? v.get<std::string>() : v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  std::string out = presentation_heading(goal) + ":";
  if (value.is_array()) {
    for (const auto& item : value) out += "\n- " + text(item);
  } else if (value.is_object()) {
    for (const auto& [k, v] : value.items()) out += fmt::format("\n- {}: {}", k, text(v));
  } else {
    out += " " + text(value);
  }
  return out;
}

CAIRN_INLINE GoalEngine::GoalEngine(ExecutionContext& context, const ToolRegistry& tools, GoalEngineParts parts,
                                    GoalEngineOptions options)
    : ctx_(context), tools_(tools), parts_(std::move(parts)), options_(std::move(options)) {
  if (!parts_.interpreter) throw invalid_argument("GoalEngine: an interpreter is required");
  if (!parts_.planner) throw invalid_argument("GoalEngine: a planner is required");
  (void)ctx_.require_store("GoalEngine");  // evidence and tool outputs are artifacts
  if (!options_.presenter) options_.presenter = default_presentation;
  if (!options_.clock) options_.clock = ctx_.clock();
  stack_ = GoalStack(options_.clock);
}

CAIRN_INLINE void GoalEngine::attach(Run& run) {
  if (run_) throw invalid_argument("attach: the goal engine is attached to a run already");
  run.attach(static_cast<RunParticipant&>(*this));
  run_ = &run;
  recorded_ = to_json();
}

CAIRN_INLINE void GoalEngine::detach() noexcept {
  if (run_) run_->detach(static_cast<const RunParticipant&>(*this));
  run_ = nullptr;
}

CAIRN_INLINE std::vector<std::string> GoalEngine::handle(const std::string& message) {
  if (!run_) return handle_turn(message);
  auto turn = run_->batch();
  auto said = handle_turn(message);
  record_change();
  turn.commit();
  return said;
}

CAIRN_INLINE std::vector<std::string> GoalEngine::handle_turn(const std::string& message) {
  const Goal* current = stack_.peek();
  const nlohmann::json evidence = current ? visible_evidence(current->id) : nlohmann::json::object();
  Interpretation in = parts_.interpreter->interpret(message, current, evidence);
  check_interpretation(in);
  if (in.action == Interpretation::Action::abandon_goal && !in.target.empty() && !stack_.find(in.target)) {
    throw invalid_argument(
        fmt::format("interpretation: abandon_goal names goal '{}', which does not exist", detail::excerpt(in.target)));
  }

  std::vector<std::string> said;
  said_ = &said;
  struct Reset {
    std::vector<std::string>** p;
    ~Reset() { *p = nullptr; }
  } reset{&said_};
  ctx_.add_message(Role::user, message);
  apply(in, message);
  // A goal blocked at the top gets one more try each turn: the missing tool may have been registered since.
  if (const Goal* top = stack_.peek(); top && top->status == GoalStatus::blocked) {
    set_status(top->id, GoalStatus::active, "retrying");
  }
  process();
  return said;
}

CAIRN_INLINE void GoalEngine::record_change() {
  nlohmann::json now = to_json();
  nlohmann::json patch = nlohmann::json::diff(recorded_, now);
  if (patch.empty()) return;
  run_->record("goals", "patch", std::move(patch));
  recorded_ = std::move(now);
}

CAIRN_INLINE void GoalEngine::restore_participant(const nlohmann::json& state) {
  restore_state(state);
  recorded_ = state;
  patched_seq_ = 0;
}

// A replay applies each patch to the recorded state in place (O(the patch)) and rebuilds the engine from it once,
// when the replay ends (participant_restored): not the whole state per patch.
CAIRN_INLINE void GoalEngine::apply_participant_entry(std::string_view kind, const JournalEntry& e) {
  if (kind != "patch") throw state_error(fmt::format("goals: unknown journal entry kind 'goals.{}'", kind));
  recorded_.patch_inplace(e.data);
  patched_seq_ = e.seq;
}

CAIRN_INLINE void GoalEngine::participant_restored() {
  const std::uint64_t seq = std::exchange(patched_seq_, 0);
  if (seq == 0) return;
  try {
    restore_state(recorded_);
  } catch (const std::exception& ex) {
    throw state_error(fmt::format("entry {} (goals.patch) leaves a state the engine cannot take: {}", seq, ex.what()));
  }
}

CAIRN_INLINE nlohmann::json GoalEngine::visible_evidence(const std::string& id) const {
  std::vector<const Goal*> chain;
  for (const Goal* g = must_find(id); g; g = g->parent.empty() ? nullptr : stack_.find(g->parent)) chain.push_back(g);
  nlohmann::json out = nlohmann::json::object();
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    for (const auto& [k, v] : (*it)->evidence.items()) out[k] = v;
  }
  return out;
}

CAIRN_INLINE nlohmann::json GoalEngine::to_json() const {
  nlohmann::json j = stack_.to_json();
  nlohmann::json artifacts = nlohmann::json::array();
  for (const auto& a : artifacts_) artifacts.push_back({{"name", a.name}, {"id", a.id}, {"version", a.version}});
  return {{"format", "cairn.goal_engine"},
          {"version", 1},
          {"next_id", next_id_},
          {"goals", std::move(j["goals"])},
          {"stack", std::move(j["stack"])},
          {"artifacts", std::move(artifacts)}};
}

CAIRN_INLINE void GoalEngine::restore(const nlohmann::json& state) {
  restore_state(state);
  if (run_) {
    run_->record("goals", "state", state);
    recorded_ = state;
  }
}

CAIRN_INLINE void GoalEngine::restore_state(const nlohmann::json& state) {
  const detail::GoalReader in("goal engine state");
  in.object(state, "");
  if (in.string(state, "format", "") != "cairn.goal_engine") in.fail("format", "expected \"cairn.goal_engine\"");
  const auto* version = detail::GoalReader::find(state, "version");
  if (!version || !version->is_number_integer() || version->get<std::int64_t>() != 1) {
    in.fail("version", "expected 1");
  }
  const auto* next = detail::GoalReader::find(state, "next_id");
  if (!next || !next->is_number_unsigned()) in.fail("next_id", "expected a non-negative integer");
  const auto* goals = detail::GoalReader::find(state, "goals");
  const auto* on_stack = detail::GoalReader::find(state, "stack");
  if (!goals || !goals->is_array()) in.fail("goals", "expected an array");
  if (!on_stack || !on_stack->is_array()) in.fail("stack", "expected an array");
  GoalStack stack = GoalStack::from_json(*goals, *on_stack, options_.clock);
  // The engine walks parent chains recursively when goals finish, so a state deeper than the limit is refused.
  for (const Goal& g : stack.goals()) {
    std::size_t depth = 0;
    for (const Goal* p = &g; !p->parent.empty(); p = stack.find(p->parent)) {
      if (++depth > options_.max_depth) {
        throw invalid_goal(
            fmt::format("goal engine state: goal {} is deeper than max_depth {}", g.id, options_.max_depth));
      }
    }
  }
  std::vector<Binding> bindings;
  std::vector<std::pair<std::string, ArtifactPtr>> rebind;
  const auto* artifacts = detail::GoalReader::find(state, "artifacts");
  if (artifacts && !artifacts->is_array()) in.fail("artifacts", "expected an array");
  for (std::size_t i = 0; artifacts && i < artifacts->size(); ++i) {
    const std::string path = fmt::format("artifacts[{}]", i);
    const auto& a = (*artifacts)[i];
    in.object(a, path);
    Binding b{in.string(a, "name", path), in.string(a, "id", path, true, true), 0};
    const auto* v = detail::GoalReader::find(a, "version");
    if (!v || !v->is_number_unsigned() || v->get<std::uint64_t>() == 0)
      in.fail(path + ".version", "expected a positive integer");
    b.version = v->get<std::uint64_t>();
    if (!ExecutionContext::is_valid_name(b.name)) in.fail(path + ".name", "not a valid artifact name");
    if (!ctx_.has_artifact(b.name)) {
      auto record = ctx_.store()->fetch(b.id, ctx_.tenant_id(), b.version);
      if (!record) {
        throw state_error(fmt::format("goal engine state: {}: artifact @{} (id {}, version {}) is not in the store",
                                      path, b.name, detail::excerpt(b.id), b.version));
      }
      rebind.emplace_back(b.name, std::move(record));
    }
    bindings.push_back(std::move(b));
  }
  for (auto& [name, record] : rebind) ctx_.bind(name, std::move(record));
  stack_ = std::move(stack);
  next_id_ = next->get<std::uint64_t>();
  artifacts_ = std::move(bindings);
  binding_index_.clear();
  for (std::size_t i = 0; i < artifacts_.size(); ++i) binding_index_[artifacts_[i].name] = i;
}

CAIRN_INLINE void GoalEngine::restore_text(std::string_view text, const JsonLimits& limits) {
  restore(detail::parse_json(text, limits, "goal engine state"));
}

CAIRN_INLINE const Goal* GoalEngine::must_find(const std::string& id) const {
  const Goal* g = stack_.find(id);
  if (!g) throw not_found(fmt::format("goal engine: no goal with id '{}'", detail::excerpt(id)));
  return g;
}

CAIRN_INLINE void GoalEngine::say(std::string text) {
  ctx_.add_message(Role::assistant, text);
  if (said_) said_->push_back(std::move(text));
}

CAIRN_INLINE void GoalEngine::notify(const Goal& g, std::optional<GoalStatus> from) {
  if (!observed()) return;
  const GoalTransition t{g.id, g.gloss, from, g.status, g.reason};
  if (options_.event_observer) {
    Event e;
    e.kind = EventKind::goal_transition;
    e.operation = to_string(t.to);
    e.tenant = ctx_.tenant_id();
    e.subject = t.goal_id;
    e.goal = &t;
    options_.event_observer->on_event(e);
  }
  if (options_.observer) options_.observer(t);
}

CAIRN_INLINE void GoalEngine::set_status(const std::string& id, GoalStatus to, std::string reason) {
  const GoalStatus from = stack_.update_status(id, to, std::move(reason));
  if (observed()) notify(*must_find(id), from);
}

CAIRN_INLINE std::string GoalEngine::new_id() {
  std::string id;
  do {
    id = fmt::format("g{}", ++next_id_);
  } while (stack_.find(id));
  return id;
}

CAIRN_INLINE void GoalEngine::remember_binding(const std::string& name, const ArtifactPtr& record) {
  Binding b{name, record->id(), record->version()};
  if (const auto it = binding_index_.find(name); it != binding_index_.end()) {
    artifacts_[it->second] = std::move(b);
  } else {
    binding_index_[name] = artifacts_.size();
    artifacts_.push_back(std::move(b));
  }
}

CAIRN_INLINE void GoalEngine::record_evidence(const std::string* goal_id, const std::string& key,
                                              const nlohmann::json& value, std::string_view source) {
  nlohmann::json metadata = {{"source", source}};
  std::string description = fmt::format("Evidence {}", key);
  if (goal_id) {
    const Goal* g = must_find(*goal_id);
    metadata["goal_id"] = g->id;
    description = fmt::format("Evidence {} for goal '{}'", key, g->gloss);
  }
  auto stored = ctx_.add_artifact(
      key, ArtifactRecord::builder().type(ArtifactType::data).description(description).value(value).metadata(metadata));
  remember_binding(key, stored);
  if (goal_id) stack_.add_evidence(*goal_id, key, value);
}

CAIRN_INLINE bool GoalEngine::has_visible(const Goal& goal, const std::string& key) const {
  for (const Goal* g = &goal; g; g = g->parent.empty() ? nullptr : stack_.find(g->parent)) {
    if (g->evidence.contains(key)) return true;
  }
  return false;
}

CAIRN_INLINE const nlohmann::json* GoalEngine::find_visible(const Goal& goal, const std::string& key) const {
  for (const Goal* g = &goal; g; g = g->parent.empty() ? nullptr : stack_.find(g->parent)) {
    if (const auto it = g->evidence.find(key); it != g->evidence.end()) return &*it;
  }
  return nullptr;
}

CAIRN_INLINE std::optional<std::string> GoalEngine::unmet(const Goal& g) {
  const bool own_only = g.predicate.name == Predicate::confirm;
  for (const Condition& c : g.done_when) {
    if (c.kind == Condition::Kind::has_evidence) {
      if (own_only ? !g.evidence.contains(c.key) : !has_visible(g, c.key)) {
        return fmt::format("has_evidence({})", c.key);
      }
    } else {
      if (!parts_.evaluator) return fmt::format("predicate_true({}) (no ConditionEvaluator is set)", c.predicate.name);
      const std::string id = g.id;
      if (!parts_.evaluator->evaluate(c.predicate, g, visible_evidence(id))) {
        return fmt::format("predicate_true({})", c.predicate.name);
      }
    }
  }
  return std::nullopt;
}

CAIRN_INLINE std::string GoalEngine::string_arg(const Goal& g, const char* key) {
  const auto it = g.predicate.args.find(key);
  return it != g.predicate.args.end() && it->is_string() ? it->get<std::string>() : std::string();
}

CAIRN_INLINE std::string GoalEngine::confirm_key(const Goal& g) {
  std::string k = string_arg(g, "key");
  return k.empty() ? "confirmation" : k;
}

CAIRN_INLINE std::string GoalEngine::tool_output_key(const Goal& g) {
  std::string k = string_arg(g, "output");
  if (!k.empty()) return k;
  k = string_arg(g, "tool");
  for (char& c : k) {
    if (c == '.') c = '_';
  }
  if (k.empty() || (!detail::is_ascii_alpha(k[0]) && k[0] != '_')) k.insert(k.begin(), '_');
  return k.substr(0, max_artifact_name_length);
}

CAIRN_INLINE std::optional<bool> GoalEngine::yes_no(const nlohmann::json& v) {
  if (v.is_boolean()) return v.get<bool>();
  if (!v.is_string()) return std::nullopt;
  std::string s;
  for (char c : v.get_ref<const std::string&>()) {
    if (c != ' ' && c != '.' && c != '!') s.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c));
  }
  for (const char* y : {"yes", "y", "true", "ok", "okay", "sure", "yesplease", "confirm", "confirmed"}) {
    if (s == y) return true;
  }
  for (const char* n : {"no", "n", "false", "nope", "nothanks", "cancel"}) {
    if (s == n) return false;
  }
  return std::nullopt;
}

CAIRN_INLINE void GoalEngine::escape_references(nlohmann::json& v) {
  if (v.is_string()) {
    auto& s = v.get_ref<std::string&>();
    if (!s.empty() && s[0] == '@') s.insert(s.begin(), '@');
  } else if (v.is_structured()) {
    for (auto& child : v) escape_references(child);
  }
}

CAIRN_INLINE void GoalEngine::apply(const Interpretation& in, const std::string& message) {
  const Goal* current = stack_.peek();
  switch (in.action) {
    case Interpretation::Action::new_goal: {
      if (stack_.unfinished_count() + 1 > options_.max_goals) {
        say(fmt::format("I cannot take on '{}': {} goals are unfinished and the limit (max_goals) is {}.", in.gloss,
                        stack_.unfinished_count(), options_.max_goals));
        return;
      }
      Goal g;
      g.id = new_id();
      g.gloss = in.gloss;
      g.provenance = {{"source", "user"}, {"request", message}};  // the words SopPlanner retrieval searches by
      const Goal& pushed = stack_.push(std::move(g));
      notify(pushed, std::nullopt);
      const std::string id = pushed.id;
      for (const auto& [key, value] : in.context.items()) record_evidence(&id, key, value, "user");
      return;
    }
    case Interpretation::Action::add_evidence: {
      if (!current) {
        record_evidence(nullptr, in.key, in.value, "user");
        say(fmt::format("Noted {}.", in.key));
        return;
      }
      nlohmann::json value = in.value;
      if (current->predicate.name == Predicate::confirm && in.key == confirm_key(*current)) {
        const auto answer = yes_no(value);
        if (!answer) {
          say("Please answer yes or no.");
          return;
        }
        value = *answer;
      }
      const std::string id = current->id;
      record_evidence(&id, in.key, value, "user");
      return;
    }
    case Interpretation::Action::abandon_goal: {
      const std::string target = in.target.empty() ? (current ? current->id : std::string()) : in.target;
      if (target.empty()) {
        say("There is no goal to abandon.");
        return;
      }
      const Goal* g = must_find(target);
      if (is_final(g->status)) {
        say(fmt::format("'{}' is {} already.", g->gloss, to_string(g->status)));
        return;
      }
      say(fmt::format("OK, I have abandoned '{}'.", g->gloss));
      finish(target, GoalStatus::abandoned, "abandoned by the user", /*announce_root=*/false);
      return;
    }
    case Interpretation::Action::continue_: return;
  }
}

CAIRN_INLINE void GoalEngine::finish(const std::string& id, GoalStatus status, const std::string& reason,
                                     bool announce_root) {
  const Goal* g = must_find(id);
  if (is_final(g->status)) return;
  set_status(id, status, reason);
  if (g->decomposition) {
    std::unordered_set<std::string> off{id};
    const std::string why = fmt::format("its ancestor '{}' was {}", g->gloss, to_string(status));
    for (const Goal* d : stack_.subtree(id)) {
      if (d->id == id) continue;
      off.insert(d->id);
      if (!is_final(d->status)) set_status(d->id, GoalStatus::abandoned, why);
    }
    stack_.remove(off);
  } else {
    stack_.remove_one(id);
  }
  if (g->parent.empty()) {
    if (!announce_root) return;
    if (status == GoalStatus::achieved) {
      say(fmt::format("Done: {}.", g->gloss));
    } else {
      say(fmt::format("I have abandoned '{}': {}.", g->gloss, reason));
    }
    return;
  }
  const std::string parent = g->parent;
  if (status == GoalStatus::achieved) {
    for (const auto& [k, v] : g->evidence.items()) stack_.add_evidence(parent, k, v);
  }
  child_finished(parent, id);
}

CAIRN_INLINE void GoalEngine::child_finished(const std::string& parent_id, const std::string& child_id) {
  const Goal* p = must_find(parent_id);
  const Goal* c = must_find(child_id);
  if (is_final(p->status) || !p->decomposition) return;
  if (p->decomposition->kind == Decomposition::Kind::all && c->status == GoalStatus::abandoned) {
    finish(parent_id, GoalStatus::abandoned, fmt::format("subgoal '{}' was abandoned ({})", c->gloss, c->reason));
  } else if (p->decomposition->kind == Decomposition::Kind::any && c->status == GoalStatus::achieved) {
    const std::string why = fmt::format("not needed: alternative '{}' was achieved", c->gloss);
    const std::vector<std::string> siblings = p->decomposition->children;
    for (const std::string& s : siblings) {
      if (!is_final(must_find(s)->status)) finish(s, GoalStatus::abandoned, why);
    }
  }
  // AND with every child achieved, OR with every child abandoned: settled when the parent is back on top.
}

CAIRN_INLINE bool GoalEngine::children_finished(const Goal& g) const {
  for (const std::string& c : g.decomposition->children) {
    if (!is_final(must_find(c)->status)) return false;
  }
  return true;
}

CAIRN_INLINE GoalEngine::Step GoalEngine::complete_action(const std::string& id, std::string_view what) {
  const auto missing = unmet(*must_find(id));
  if (!missing) {
    finish(id, GoalStatus::achieved, std::string(what));
    return Step::next;
  }
  const Goal* g = must_find(id);
  block(id, fmt::format("{}, but its done_when is not satisfied: {}", what, *missing));
  say(fmt::format("I could not finish '{}': {} does not hold.", g->gloss, *missing));
  return Step::stop;
}

CAIRN_INLINE void GoalEngine::fail(const std::string& id, const std::string& reason) {
  say(fmt::format("Could not {}: {}.", lowercase_first(must_find(id)->gloss), reason));
  finish(id, GoalStatus::abandoned, reason);
}

CAIRN_INLINE std::string GoalEngine::lowercase_first(std::string s) {
  if (!s.empty() && s[0] >= 'A' && s[0] <= 'Z' && (s.size() < 2 || !(s[1] >= 'A' && s[1] <= 'Z'))) {
    s[0] = static_cast<char>(s[0] - 'A' + 'a');
  }
  return s;
}

CAIRN_INLINE void GoalEngine::process() {
  while (const Goal* top = stack_.peek()) {
    const std::string id = top->id;
    if (is_final(top->status)) {  // cannot happen (finish() takes goals off), but never loop on one
      stack_.pop();
      continue;
    }
    if (top->status == GoalStatus::blocked) {
      if (!top->decomposition || !children_finished(*top)) return;  // stuck until the next turn
    } else if (top->status == GoalStatus::pending) {
      set_status(id, GoalStatus::active, "");
    }
    if (step(id) == Step::stop) return;
  }
}

CAIRN_INLINE GoalEngine::Step GoalEngine::step(const std::string& id) {
  const Goal& g = *must_find(id);
  if (g.decomposition) {
    if (children_finished(g)) return settle(id);
    // Children a multi-level plan made at once: put them on the stack now, like a fresh expansion.
    stack_children(id);
    return Step::next;
  }
  // A confirm goal holding its answer reads it first: a "no" abandons it even when done_when names the answer key.
  const bool answered = g.predicate.name == Predicate::confirm && g.evidence.contains(confirm_key(g));
  if (!g.done_when.empty() && !answered && !unmet(g)) {
    finish(id, GoalStatus::achieved, "its done_when is satisfied");
    return Step::next;
  }
  const std::string& name = g.predicate.name;
  if (name == Predicate::composite) return expand(id);
  if (name == Predicate::gather_info) return gather(id);
  if (name == Predicate::confirm) return confirm(id);
  if (name == Predicate::present_info) return present(id);
  if (name == Predicate::use_tool) return use_tool(id);
  return complete_action(id, "executed");  // execute
}

CAIRN_INLINE GoalEngine::Step GoalEngine::settle(const std::string& id) {
  const Goal& g = *must_find(id);
  std::size_t achieved = 0;
  const Goal* failed = nullptr;
  for (const std::string& c : g.decomposition->children) {
    const Goal* child = must_find(c);
    if (child->status == GoalStatus::achieved) ++achieved;
    if (child->status == GoalStatus::abandoned && !failed) failed = child;
  }
  const std::size_t n = g.decomposition->children.size();
  if (g.decomposition->kind == Decomposition::Kind::all) {
    if (failed) {
      finish(id, GoalStatus::abandoned, fmt::format("subgoal '{}' was abandoned ({})", failed->gloss, failed->reason));
      return Step::next;
    }
    return complete_action(id, fmt::format("all {} subgoals were achieved", n));
  }
  if (achieved == 0) {
    finish(id, GoalStatus::abandoned, fmt::format("all {} alternatives were abandoned", n));
    return Step::next;
  }
  return complete_action(id, "an alternative was achieved");
}

CAIRN_INLINE void GoalEngine::stack_children(const std::string& id) {
  const std::vector<std::string> children = must_find(id)->decomposition->children;
  std::size_t open = 0;
  for (auto it = children.rbegin(); it != children.rend(); ++it) {
    if (is_final(must_find(*it)->status)) continue;
    stack_.push_id(*it);
    ++open;
  }
  block(id, fmt::format("waiting for {} subgoal{}", open, open == 1 ? "" : "s"));
}

CAIRN_INLINE GoalEngine::Step GoalEngine::expand(const std::string& id) {
  const std::size_t depth = stack_.depth(id);
  if (depth + 1 > options_.max_depth) {
    fail(id, fmt::format("its subgoals would be at depth {}, deeper than max_depth {}", depth + 1, options_.max_depth));
    return Step::next;
  }
  GoalPlan plan;
  try {
    plan = parts_.planner->plan(*must_find(id), visible_evidence(id));
    check_plan(plan, id);
  } catch (const std::exception& e) {
    fail(id, fmt::format("planning failed: {}", e.what()));
    return Step::next;
  }
  // Depth of each subgoal below the planned goal (1 for direct children); parents are known to be acyclic.
  std::unordered_map<std::string, std::size_t> local;
  for (std::size_t i = 0; i < plan.subgoals.size(); ++i) {
    if (!plan.subgoals[i].id.empty()) local[plan.subgoals[i].id] = i;
  }
  const auto depths = detail::subgoal_depths(plan, fmt::format("plan for goal {}", id));
  const std::size_t deepest = *std::max_element(depths.begin(), depths.end());
  if (depth + deepest > options_.max_depth) {
    fail(id, fmt::format("its plan reaches depth {}, deeper than max_depth {}", depth + deepest, options_.max_depth));
    return Step::next;
  }
  if (stack_.unfinished_count() + plan.subgoals.size() > options_.max_goals) {
    fail(id, fmt::format("its plan has {} subgoals; with {} unfinished goals that is more than max_goals {}",
                         plan.subgoals.size(), stack_.unfinished_count(), options_.max_goals));
    return Step::next;
  }

  std::vector<std::string> ids;
  ids.reserve(plan.subgoals.size());
  for (std::size_t i = 0; i < plan.subgoals.size(); ++i) ids.push_back(new_id());
  std::unordered_map<std::string, std::vector<std::string>> children;  // goal id -> child ids, in plan order
  for (std::size_t i = 0; i < plan.subgoals.size(); ++i) {
    SubgoalSpec& s = plan.subgoals[i];
    Goal g;
    g.id = ids[i];
    g.gloss = std::move(s.gloss);
    g.predicate = std::move(s.predicate);
    g.parent = s.parent.empty() ? id : ids[local.at(s.parent)];
    g.done_when = std::move(s.done_when);
    g.provenance = std::move(s.provenance);
    if (!plan.source.empty() && !g.provenance.contains("source")) g.provenance["source"] = plan.source;
    children[g.parent].push_back(g.id);
    notify(stack_.add(std::move(g)), std::nullopt);
  }
  for (std::size_t i = 0; i < plan.subgoals.size(); ++i) {
    if (const auto it = children.find(ids[i]); it != children.end()) {
      stack_.set_decomposition(ids[i], Decomposition{plan.subgoals[i].kind, it->second});
    }
  }
  stack_.set_decomposition(id, Decomposition{plan.kind, children[id]});
  stack_children(id);
  return Step::next;
}

CAIRN_INLINE GoalEngine::Step GoalEngine::gather(const std::string& id) {
  const Goal& g = *must_find(id);
  const std::string key = string_arg(g, "key");
  if (has_visible(g, key)) return complete_action(id, fmt::format("{} is known", key));
  const std::string prompt = string_arg(g, "prompt");
  if (!parts_.question_writer) {
    say(default_question(key, prompt));
    return Step::stop;
  }
  Question q = parts_.question_writer->write(g, key, prompt, visible_evidence(id));
  std::string text = q.text.empty() ? default_question(key, prompt) : std::move(q.text);
  if (!q.suggestions.empty()) {
    text += "\nSuggestions: ";
    for (std::size_t i = 0; i < q.suggestions.size(); ++i) text += (i ? ", " : "") + q.suggestions[i];
  }
  say(std::move(text));
  return Step::stop;
}

CAIRN_INLINE GoalEngine::Step GoalEngine::confirm(const std::string& id) {
  const Goal& g = *must_find(id);
  const std::string key = confirm_key(g);
  if (const auto it = g.evidence.find(key); it != g.evidence.end()) {
    if (const auto answer = yes_no(*it)) {
      if (*answer) return complete_action(id, "the user confirmed");
      fail(id, "the user said no");
      return Step::next;
    }
  }
  std::string question = string_arg(g, "question");
  if (question.empty()) {
    question = !g.gloss.empty() && g.gloss.back() == '?' ? g.gloss + " (yes/no)" : g.gloss + "? (yes/no)";
  }
  say(std::move(question));
  return Step::stop;
}

CAIRN_INLINE GoalEngine::Step GoalEngine::present(const std::string& id) {
  const Goal& g = *must_find(id);
  const std::string key = string_arg(g, "key");
  nlohmann::json value;
  if (const auto it = g.predicate.args.find("data"); it != g.predicate.args.end()) {
    value = *it;
  } else if (!key.empty()) {
    if (const nlohmann::json* found = find_visible(g, key)) {
      value = *found;
    } else if (const auto artifact = ctx_.get_artifact_value(key)) {
      value = *artifact;
    } else {
      block(id, fmt::format("there is nothing to present: no evidence '{}'", key));
      say(fmt::format("I have nothing to show for '{}': {} is not known yet.", g.gloss, key));
      return Step::stop;
    }
  }
  say(value.is_null() ? presentation_heading(g) : options_.presenter(g, value));
  return complete_action(id, "presented");
}

CAIRN_INLINE GoalEngine::Step GoalEngine::use_tool(const std::string& id) {
  const Goal& g = *must_find(id);
  const std::string tool_name = string_arg(g, "tool");
  const auto tool = tools_.find(tool_name);
  if (!tool) {
    block(id, fmt::format("tool '{}' is not available", tool_name));
    say(fmt::format("I need the {} tool but it is not available.", tool_name));
    return Step::stop;
  }
  // Arguments: the schema's properties, looked up in the goal's own evidence, its ancestors', then the context.
  nlohmann::json args = nlohmann::json::object();
  if (const auto props = tool->input_schema.find("properties");
      props != tool->input_schema.end() && props->is_object()) {
    for (const auto& [name, schema] : props->items()) {
      if (const nlohmann::json* v = find_visible(g, name)) {
        args[name] = *v;
      } else if (ExecutionContext::is_valid_name(name)) {
        if (const auto value = ctx_.get_artifact_value(name)) args[name] = *value;
      }
    }
  }
  if (const auto req = tool->input_schema.find("required"); req != tool->input_schema.end() && req->is_array()) {
    for (const auto& r : *req) {
      if (r.is_string() && !args.contains(r.get_ref<const std::string&>())) {
        const std::string missing = r.get<std::string>();
        block(id, fmt::format("tool '{}' needs '{}', which neither the evidence nor the artifacts hold", tool_name,
                              missing));
        say(fmt::format("I cannot {} yet: {} needs {}.", lowercase_first(g.gloss), tool_name, missing));
        return Step::stop;
      }
    }
  }
  if (detail::json_depth(args, ResolveOptions{}.max_depth) > ResolveOptions{}.max_depth) {
    fail(id, fmt::format("the arguments for {} are nested too deeply", tool_name));
    return Step::next;
  }
  escape_references(args);
  const std::string key = tool_output_key(g);
  // The call is named after its goal, so a turn re-handled after a crash asks for the same call, which a durable
  // run then answers from its journal instead of running the tool again.
  ToolCall call{tool_name,
                std::move(args),
                {OutputSpec{key, ArtifactType::data, fmt::format("Result from {}", tool_name),
                            fmt::format("Evidence {} for goal '{}'", key, g.gloss)}},
                "goal-" + id};
  ExecuteOptions run_options;
  run_options.in_doubt = options_.in_doubt;
  ExecutionResult result;
  try {
    result = execute(call, ctx_, tools_, run_options);
  } catch (const invalid_argument& e) {  // the arguments the evidence gave do not fit the tool's input schema
    fail(id, fmt::format("tool {} could not run: {}", tool_name, e.what()));
    return Step::next;
  } catch (const limit_exceeded& e) {  // or are too large to resolve
    fail(id, fmt::format("tool {} could not run: {}", tool_name, e.what()));
    return Step::next;
  }
  // Anything else (conflict, call_in_doubt, state_error, storage_error, ...) is the run's or the store's problem, not
  // the goal's: it leaves handle() and the turn is not committed.
  if (!result.success) {
    fail(id, fmt::format("tool {} failed: {}", tool_name, result.error));
    return Step::next;
  }
  const ArtifactPtr& stored = result.outputs.front().record;
  remember_binding(key, stored);
  stack_.add_evidence(id, key, stored->value());
  return complete_action(id, fmt::format("{} returned {}", tool_name, key));
}

CAIRN_END_NAMESPACE
