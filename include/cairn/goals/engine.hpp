// cairn — GoalEngine: one conversation driven by a stack of hierarchical goals (seed 002, with DESIGN.md's fixes).
//
// handle(message) runs a whole turn: the interpreter says what the message means, the engine applies it, then works
// the stack depth-first until it must wait for the user, the stack is empty, or the top goal is blocked. Composite
// goals are split by the planner (AND: every child, OR: the first child that succeeds), primitives act: gather_info
// and confirm ask and wait, present_info says, execute completes, use_tool runs a tool from the ToolRegistry with
// arguments taken from the evidence. Evidence goes on the goal and, as an artifact, into the ExecutionContext.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/artifact/record.hpp"
#include "cairn/artifact/type.hpp"
#include "cairn/context/execution_context.hpp"
#include "cairn/context/tool.hpp"
#include "cairn/detail/json.hpp"
#include "cairn/detail/text.hpp"
#include "cairn/error.hpp"
#include "cairn/goals/goal.hpp"
#include "cairn/goals/goal_stack.hpp"
#include "cairn/goals/interfaces.hpp"
#include "cairn/observe/observer.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

/// One change of a goal's status, as the observer sees it. `from` is empty when the goal was just created.
struct GoalTransition {
  std::string goal_id;
  std::string gloss;
  std::optional<GoalStatus> from;
  GoalStatus to = GoalStatus::pending;
  std::string reason;
};

/// Called for every transition, in order, while the engine works (it must not call back into the engine). The typed
/// shortcut for the engine's EventKind::goal_transition events (whose payload, Event::goal, is the same
/// GoalTransition); unlike an Observer it may throw, and the exception leaves handle() as it always did.
using GoalObserver = std::function<void(const GoalTransition&)>;

/// An Observer that hands the payload of each goal_transition event to `fn` and ignores every other event: a
/// GoalObserver for a place that takes an Observer (fan_out, a store decorator). What `fn` throws is dropped.
std::shared_ptr<Observer> goal_observer(GoalObserver fn);

/// Turns the value a present_info goal shows into the text said to the user.
using GoalPresenter = std::function<std::string(const Goal& goal, const nlohmann::json& value)>;

/// The host's parts. The interpreter and the planner are required; without an evaluator a predicate_true condition
/// never holds (the goal blocks and says so); without a question writer gather_info asks default_question().
struct GoalEngineParts {
  GoalEngineParts(std::shared_ptr<MessageInterpreter> interpreter_, std::shared_ptr<GoalPlanner> planner_,
                  std::shared_ptr<ConditionEvaluator> evaluator_ = nullptr,
                  std::shared_ptr<QuestionWriter> question_writer_ = nullptr)
      : interpreter(std::move(interpreter_)),
        planner(std::move(planner_)),
        evaluator(std::move(evaluator_)),
        question_writer(std::move(question_writer_)) {}

  std::shared_ptr<MessageInterpreter> interpreter;
  std::shared_ptr<GoalPlanner> planner;
  std::shared_ptr<ConditionEvaluator> evaluator;
  std::shared_ptr<QuestionWriter> question_writer;
};

struct GoalEngineOptions {
  std::size_t max_depth = 10;  ///< deepest goal allowed (a root is at depth 0, its children at 1, ...)
  std::size_t max_goals = 50;  ///< most unfinished goals (pending, active or blocked) at any time
  GoalPresenter presenter;     ///< how present_info shows a value; default: the gloss, then the value as lines
  GoalObserver observer;       ///< told of every transition (typed, may throw)
  /// Told of every transition as an EventKind::goal_transition Event (operation: the new status, subject: the goal
  /// id, tenant: the context's, goal: the transition). Independent of `observer`: set both and each hears each
  /// transition once. For tool calls and resolutions, set an observer on the ExecutionContext too.
  std::shared_ptr<Observer> event_observer{};
  /// Stamps goals (created_at, updated_at); null: the context's clock (which is the system clock unless the
  /// context was given one).
  std::shared_ptr<Clock> clock{};
  /// Decides a use_tool call that a durable run holds in doubt (passed to execute() as ExecuteOptions::in_doubt:
  /// retry, give up, or done with the outcome the host found). Unset: such a call's cairn::call_in_doubt leaves
  /// handle(), as every error of the run or the store does.
  std::function<InDoubtAction(const RecordedCall&)> in_doubt{};
};

/// The first line of what a present_info goal says: its `text` argument, else its gloss.
std::string presentation_heading(const Goal& goal);

/// The text a present_info goal says by default: the heading (see presentation_heading), a colon, then the value (a
/// string as it is, an array one item per line, an object one `key: value` per line, anything else as JSON).
std::string default_presentation(const Goal& goal, const nlohmann::json& value);

/// A conversation steered by a goal stack.
///
/// Not thread-safe: one owner. The engine keeps references to `context` and `tools`, which must outlive it; the
/// ExecutionContext it writes is itself one-owner, so one engine per context (a sub-agent gets its own fork()).
///
///     cairn::GoalEngine engine(ctx, tools, {interpreter, std::make_shared<cairn::SopPlanner>(sops)});
///     for (const auto& line : engine.handle("Find me a train to Paris")) std::cout << line << '\n';
///     auto saved = engine.to_json();   // later: engine2.restore(saved) continues where this one stopped
class GoalEngine : private RunParticipant {
 public:
  /// Throws cairn::invalid_argument when the interpreter or the planner is missing.
  GoalEngine(ExecutionContext& context, const ToolRegistry& tools, GoalEngineParts parts,
             GoalEngineOptions options = {});

  GoalEngine(const GoalEngine&) = delete;
  GoalEngine& operator=(const GoalEngine&) = delete;
  ~GoalEngine() override { detach(); }

  /// Records this engine in `run` from now on (see cairn/run/run.hpp): when the run holds a goal engine already,
  /// this engine's state is replaced by the run's. Attach the context first: the engine's artifacts are bound in
  /// it. Each turn (handle) is recorded as one append: the context's entries of the turn and a JSON Patch
  /// (RFC 6902) from the engine's state before the turn to its state after, so storage grows with what a turn
  /// changed, not with the goal tree. A tool call inside a turn still commits its intended entry before the tool
  /// runs. The run must outlive the attachment (detach() or the engine's end).
  void attach(Run& run);
  void detach() noexcept;
  Run* run() const noexcept { return run_; }

  /// Runs one turn for `message` and returns what the assistant says, in order (also logged in the context).
  /// Throws what the interpreter throws, and cairn::invalid_argument for an interpretation that cannot be applied,
  /// before anything changes. A use_tool goal whose tool fails (returns a failure, throws, or gets inputs its schema
  /// refuses) is abandoned with the reason, as always; but what stops the run itself stops the turn and leaves
  /// handle(): cairn::conflict (another worker moved the run on), cairn::call_in_doubt (a call in doubt and no
  /// in_doubt policy), cairn::state_error (the journal and the call disagree), cairn::storage_error and every other
  /// error of the journal or the store. The turn's batch is then not committed, and the engine and its context hold
  /// changes the run does not: reopen the run (a new Run, context and engine attached to it) before going on.
  std::vector<std::string> handle(const std::string& message);

  /// Sets GoalEngineOptions::in_doubt.
  void set_in_doubt(std::function<InDoubtAction(const RecordedCall&)> policy) { options_.in_doubt = std::move(policy); }

 private:
  std::vector<std::string> handle_turn(const std::string& message);

  // Records the change since the last recorded state as a patch (nothing when the state did not change).
  void record_change();

  std::string participant_name() const override { return "goals"; }
  void participant_detached() noexcept override { run_ = nullptr; }
  nlohmann::json participant_state() const override { return to_json(); }
  CAIRN_INLINE void restore_participant(const nlohmann::json& state) override;
  CAIRN_INLINE void apply_participant_entry(std::string_view kind, const JournalEntry& e) override;
  CAIRN_INLINE void participant_restored() override;

 public:
  /// All goals and the stack.
  const GoalStack& goals() const noexcept { return stack_; }
  const GoalEngineOptions& options() const noexcept { return options_; }
  void set_observer(GoalObserver observer) { options_.observer = std::move(observer); }
  /// Sets GoalEngineOptions::event_observer (an empty shared_ptr: none). A template so that `set_observer(nullptr)`
  /// and `set_observer({})` still mean the GoalObserver overload, as they always did.
  template <class O, std::enable_if_t<std::is_base_of_v<Observer, O>, int> = 0>
  void set_observer(std::shared_ptr<O> observer) {
    options_.event_observer = std::move(observer);
  }

  /// What goal `id` can see: its ancestors' evidence, overlaid by nearer ones and finally its own.
  nlohmann::json visible_evidence(const std::string& id) const;

  /// The whole state: `{"format": "cairn.goal_engine", "version": 1, "next_id", "goals", "stack", "artifacts"}`,
  /// where artifacts are the context bindings the engine made (`{name, id, version}`).
  nlohmann::json to_json() const;

  /// Replaces the state with one to_json() wrote, so the engine continues exactly where that one stopped. Artifact
  /// bindings the context lacks are bound again from the store (so a durable store survives a restart). Throws
  /// cairn::parse_error / cairn::invalid_goal for a malformed or inconsistent state and cairn::state_error for an
  /// artifact the store no longer has; nothing changes then.
  void restore(const nlohmann::json& state);

 private:
  void restore_state(const nlohmann::json& state);

 public:
  /// The same from text (a file, a database column), parsed within `limits`.
  void restore_text(std::string_view text, const JsonLimits& limits = {});

 private:
  struct Binding {
    std::string name;
    std::string id;
    std::uint64_t version = 0;
  };
  enum class Step { next, stop };

  // ---- small helpers ----------------------------------------------------------------------------------------------

  const Goal* must_find(const std::string& id) const;

  void say(std::string text);

  bool observed() const noexcept { return options_.observer || options_.event_observer; }

  // One transition, built once, told to both observers.
  void notify(const Goal& g, std::optional<GoalStatus> from);

  void set_status(const std::string& id, GoalStatus to, std::string reason);

  std::string new_id();

  void remember_binding(const std::string& name, const ArtifactPtr& record);

  /// Evidence from the user (or a new goal's context): on the goal and, as an artifact named after the key, in the
  /// context, where tools of other goals can find it.
  void record_evidence(const std::string* goal_id, const std::string& key, const nlohmann::json& value,
                       std::string_view source);

  bool has_visible(const Goal& goal, const std::string& key) const;

  const nlohmann::json* find_visible(const Goal& goal, const std::string& key) const;

  /// The first done_when condition that does not hold, described; nothing when all hold. A confirm goal's
  /// has_evidence conditions count only its own evidence: what the user answered while it was asking. The answer
  /// to an earlier confirm flows up into the parent when that goal is achieved, and must never answer this one.
  std::optional<std::string> unmet(const Goal& g);

  static std::string string_arg(const Goal& g, const char* key);

  static std::string confirm_key(const Goal& g);

  /// The evidence key a use_tool goal stores its result under: args.output, else the tool name made a valid name.
  static std::string tool_output_key(const Goal& g);

  /// yes/no answers: true, false, or strings like "yes", "y", "ok", "no", "n". Nothing for anything else.
  static std::optional<bool> yes_no(const nlohmann::json& v);

  /// `@x` strings would be read as artifact references by execute(); evidence is data, so it goes in as `@@x`.
  static void escape_references(nlohmann::json& v);

  // ---- applying an interpretation ---------------------------------------------------------------------------------

  void apply(const Interpretation& in, const std::string& message);

  // ---- finishing goals and what follows ---------------------------------------------------------------------------

  /// Marks `id` achieved or abandoned, takes it and its subtree off the stack (unfinished descendants are
  /// abandoned), hands an achieved goal's evidence to its parent and lets the parent react.
  void finish(const std::string& id, GoalStatus status, const std::string& reason, bool announce_root = true);

  void child_finished(const std::string& parent_id, const std::string& child_id);

  bool children_finished(const Goal& g) const;

  /// A goal whose own action is done: achieved when its done_when holds, else blocked with the reason.
  Step complete_action(const std::string& id, std::string_view what);

  void block(const std::string& id, std::string reason) { set_status(id, GoalStatus::blocked, std::move(reason)); }

  /// Abandons goal `id` because something failed, and says so.
  void fail(const std::string& id, const std::string& reason);

  static std::string lowercase_first(std::string s);

  // ---- the processing loop ----------------------------------------------------------------------------------------

  void process();

  Step step(const std::string& id);

  Step settle(const std::string& id);

  void stack_children(const std::string& id);

  Step expand(const std::string& id);

  // ---- primitives -------------------------------------------------------------------------------------------------

  Step gather(const std::string& id);

  Step confirm(const std::string& id);

  Step present(const std::string& id);

  Step use_tool(const std::string& id);

  ExecutionContext& ctx_;
  const ToolRegistry& tools_;
  GoalEngineParts parts_;
  GoalEngineOptions options_;
  GoalStack stack_;
  std::uint64_t next_id_ = 0;
  std::vector<Binding> artifacts_;
  std::unordered_map<std::string, std::size_t> binding_index_;
  std::vector<std::string>* said_ = nullptr;  // the messages of the turn being handled
  Run* run_ = nullptr;
  nlohmann::json recorded_;        // the state as the run last recorded it (the base of the next patch)
  std::uint64_t patched_seq_ = 0;  // the last patch a replay applied to recorded_, not rebuilt from yet (0: none)
};

CAIRN_END_NAMESPACE

#ifndef CAIRN_COMPILED_LIB
#include "cairn/goals/engine-inl.hpp"
#endif
