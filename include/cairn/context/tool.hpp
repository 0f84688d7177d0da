// cairn — tools with named outputs: Tool, ToolRegistry, ToolCall (parsed from model output) and execute().
//
// A model asks for a tool as JSON: {"tool": ..., "inputs": {... "@name" ...}, "outputs": [{name, type,
// description, purpose}]}. execute() resolves the inputs against an ExecutionContext, runs the tool, stores one
// artifact record per output spec and binds it under the spec's name, so the next call can say "@that_name".
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
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
#include "cairn/context/resolve.hpp"
#include "cairn/context/schema.hpp"
#include "cairn/detail/json.hpp"
#include "cairn/detail/random.hpp"
#include "cairn/detail/sha256.hpp"
#include "cairn/detail/text.hpp"
#include "cairn/error.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

/// What a tool returns. `data` holds the output value, or an object with one member per output name.
struct ToolResult {
  bool success = true;
  nlohmann::json data;
  nlohmann::json metadata = nlohmann::json::object();  ///< merged into the metadata of every output record
  std::string error;                                   ///< why it failed, when it did

  static ToolResult ok(nlohmann::json data, nlohmann::json metadata = nlohmann::json::object());
  static ToolResult failure(std::string error, nlohmann::json metadata = nlohmann::json::object());
};

/// Which call a tool is running for, handed to a tool that asks for it (see ToolFunction).
struct ToolInvocation {
  /// The call's id: ToolCall::id, else the id execute() gave it in an attached run (`call-<n>`); "" for a call
  /// without an id in a context without a run.
  std::string call_id;
  /// 32 lowercase hex digits that are the same for this call across crashes, resumes, retries and workers: pass it
  /// to the outside system so that it can deduplicate (a payment API's Idempotency-Key, a message id). In a run:
  /// the first 128 bits of SHA-256 over the tenant, the run id and the call id (docs/runs.md, "Tool calls"). Without
  /// a run: the same over the tenant and ToolCall::id (so stable wherever that tenant uses that id), or random for a
  /// call without an id (stable only within that one execute()).
  std::string idempotency_key;
  /// 1 for the first run of the call, n for the (n-1)th retry of it after it was in doubt.
  std::uint32_t attempt = 1;
};

/// The function behind a tool: resolved inputs in, a result out. Throwing counts as failing. Built from a callable
/// taking the inputs, `ToolResult(const nlohmann::json&)`, or the inputs and the call it runs for,
/// `ToolResult(const nlohmann::json&, const ToolInvocation&)` (to pass the idempotency key on).
class ToolFunction {
 public:
  using Signature = ToolResult(const nlohmann::json& inputs, const ToolInvocation& invocation);

  ToolFunction() = default;
  ToolFunction(std::nullptr_t) {}  // no function, as with std::function

  /// A callable that takes the inputs and the invocation (implicit, like std::function).
  template <class F, std::enable_if_t<!std::is_same_v<std::decay_t<F>, ToolFunction> &&
                                          std::is_invocable_r_v<ToolResult, std::decay_t<F>&, const nlohmann::json&,
                                                                const ToolInvocation&>,
                                      int> = 0>
  ToolFunction(F&& f) : fn_(std::forward<F>(f)) {}

  /// A callable that takes only the inputs: every tool written before ToolInvocation existed (implicit).
  template <class F,
            std::enable_if_t<!std::is_same_v<std::decay_t<F>, ToolFunction> &&
                                 !std::is_invocable_v<std::decay_t<F>&, const nlohmann::json&, const ToolInvocation&> &&
                                 std::is_invocable_r_v<ToolResult, std::decay_t<F>&, const nlohmann::json&>,
                             long> = 0>
  ToolFunction(F&& f) : fn_(inputs_only(std::decay_t<F>(std::forward<F>(f)))) {}

  explicit operator bool() const noexcept { return static_cast<bool>(fn_); }

  ToolResult operator()(const nlohmann::json& inputs, const ToolInvocation& invocation) const {
    return fn_(inputs, invocation);
  }
  /// Runs it for a call without an id outside any run (attempt 1, an empty key).
  ToolResult operator()(const nlohmann::json& inputs) const { return fn_(inputs, ToolInvocation{}); }

 private:
  template <class G>
  struct is_std_function : std::false_type {};
  template <class R, class... A>
  struct is_std_function<std::function<R(A...)>> : std::true_type {};

  // An empty std::function or a null function pointer given in the one-argument form is no function either.
  template <class G>
  static std::function<Signature> inputs_only(G g) {
    if constexpr (std::is_pointer_v<G> || is_std_function<G>::value) {
      if (!g) return nullptr;
    }
    return [g = std::move(g)](const nlohmann::json& inputs, const ToolInvocation&) mutable {
      return static_cast<ToolResult>(g(inputs));
    };
  }

  std::function<Signature> fn_;
};

/// A tool a model may call.
struct Tool {
  std::string name;  ///< 1 to 128 characters of [A-Za-z0-9_.-]
  std::string description;
  /// A JSON Schema object, shown to the model; execute() checks the resolved inputs against it (docs/context.md).
  nlohmann::json input_schema = nlohmann::json{{"type", "object"}};
  ToolFunction function;
  /// Running it twice with the same inputs has the effect of running it once (a read, a PUT, an upsert keyed by
  /// the inputs). A durable run retries such a tool's in-doubt calls by itself; others go to the host.
  bool idempotent = false;
  /// A JSON Schema the tool's returned `data` must satisfy before any output is stored; none by default. A result
  /// that does not is a failure of the tool (nothing stored).
  std::optional<nlohmann::json> output_schema = std::nullopt;
  /// Registers the tool even where this build cannot check every keyword of its schemas: without
  /// CAIRN_WITH_SCHEMA, `pattern` is then not checked and, where `patternProperties` appears, neither are its
  /// subschemas nor `additionalProperties`. **Unsafe for inputs a model supplies**: such a value reaches the tool
  /// unchecked. False (the default): ToolRegistry::add refuses such a schema, naming what it cannot check.
  bool unchecked_schema = false;
};

/// A tool as a ToolRegistry keeps it: the tool and its schemas, compiled once when it was registered.
struct RegisteredTool {
  Tool tool;
  CompiledSchema input;
  std::optional<CompiledSchema> output;  ///< when the tool declares an output_schema
};

/// True when `name` is 1 to 128 characters of [A-Za-z0-9_.-].
bool is_valid_tool_name(std::string_view name) noexcept;

/// The tools a run may use, by name, in registration order. Thread-safe: forks on several threads may look tools
/// up while another thread adds one. A tool's function may then run on several threads at once.
class ToolRegistry {
 public:
  /// Registers `tool` and compiles its schemas (once: execute() then only checks values). Throws
  /// cairn::invalid_argument for a malformed or taken name, a missing function, an input schema that is not a JSON
  /// object, or a schema that is not a valid JSON Schema (`tool 'fetch': input_schema: not a valid JSON Schema: at
  /// /properties/port/type: ...`) or that cairn will not run (nested too deep, a `$ref` loop or too long a `$ref`
  /// chain, a pattern RE2 cannot run, a pattern this build cannot check: see CompiledSchema); nothing is registered
  /// then.
  void add(Tool tool);

  /// The tool named `name`, or null.
  std::shared_ptr<const Tool> find(std::string_view name) const;

  /// The tool named `name` with its compiled schemas, or null.
  std::shared_ptr<const RegisteredTool> find_registered(std::string_view name) const;

  /// Every tool, in registration order.
  std::vector<std::shared_ptr<const Tool>> list() const;

  std::size_t size() const;

 private:
  mutable std::shared_mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<const RegisteredTool>> by_name_;
  std::vector<std::shared_ptr<const RegisteredTool>> order_;
};

/// One output a tool call asks for: the artifact to store and the name to bind it to.
struct OutputSpec {
  std::string name;
  ArtifactType type;
  std::string description;
  std::string purpose;  ///< "" means: the description
};

/// A model's request to run a tool.
struct ToolCall {
  std::string tool;
  nlohmann::json inputs = nlohmann::json::object();
  std::vector<OutputSpec> outputs;
  /// Names the call within a run (a model's tool_call_id, or a step name the host chooses). In a context attached
  /// to a run, a call whose id was recorded as finished never runs again: execute() answers it from the journal.
  /// Empty: execute() numbers the call itself (`call-<n>`).
  std::string id = {};

  /// Reads a call from its JSON form. Throws cairn::parse_error naming what is missing or mistyped and where:
  /// "tool call: outputs[1].name: expected a string, got number". Unknown members are ignored; `inputs` and
  /// `outputs` may be absent or null (no inputs, no outputs). A value nested deeper than `limits.max_depth` is
  /// cairn::limit_exceeded (checked without recursion, before anything is copied).
  static ToolCall from_json(const nlohmann::json& j, const JsonLimits& limits = {});

  /// Parses a model's reply: JSON text, optionally wrapped in a Markdown code fence (```json ... ```).
  /// Throws cairn::parse_error / cairn::limit_exceeded for text that is not JSON or is too large or deep, and
  /// everything from_json throws.
  static ToolCall parse(std::string_view text, const JsonLimits& limits = {});
};

void to_json(nlohmann::json& j, const OutputSpec& o);

void to_json(nlohmann::json& j, const ToolCall& c);

namespace detail {

/// Builds "<label>: <path>: <message>" errors for the readers of model output.
class ModelInput {
 public:
  ModelInput(std::string_view label, std::string path) : label_(label), path_(std::move(path)) {}

  std::string at(std::string_view field) const;

  [[noreturn]] void fail(std::string_view field, std::string_view message) const;

  const nlohmann::json* member(const nlohmann::json& obj, const char* key) const;

  const std::string& string_member(const nlohmann::json& obj, const char* key, std::string_view field) const;

  ModelInput child(std::string_view field) const { return ModelInput(label_, at(field)); }
  std::string_view label() const { return label_; }

 private:
  std::string_view label_;
  std::string path_;
};

ToolCall tool_call_from_json(const nlohmann::json& j, const ModelInput& in);

/// `text` without surrounding whitespace and without a Markdown code fence around it.
std::string_view strip_code_fence(std::string_view text);

}  // namespace detail

namespace detail {

void check_model_json_depth(const nlohmann::json& j, const JsonLimits& limits, std::string_view what);

}  // namespace detail

/// What execute() did.
struct ExecutionResult {
  std::string tool;
  bool success = false;
  ToolResult result;                   ///< what the tool returned (a failure with the reason when it threw)
  std::string error;                   ///< why the call failed; empty on success
  std::vector<NamedArtifact> outputs;  ///< the stored and bound outputs, in the call's order
  std::string call_id;                 ///< the call's id in the attached run ("" when the context has no run)
  bool replayed = false;               ///< answered from the run's journal: the tool did not run this time
  std::string idempotency_key;         ///< the key the tool was (or would have been) given (ToolInvocation)
  std::uint32_t attempt = 0;           ///< the attempt this execute() made (0: none, answered from the journal)
};

/// A call the attached run recorded as intended but never as finished or failed: the process running it stopped
/// in between, so whether its effect happened is unknown. execute() throws this for such a call of a tool that is
/// not idempotent, unless ExecuteOptions::in_doubt decides. The host decides: check the effect, then retry or give
/// up (see docs/runs.md).
class call_in_doubt : public state_error {
 public:
  call_in_doubt(const std::string& what, RecordedCall call)
      : state_error(what, errc::call_in_doubt), call_(std::move(call)) {}
  const RecordedCall& call() const noexcept { return call_; }

 private:
  RecordedCall call_;
};

/// What to do with a call that is in doubt.
enum class InDoubtDecision {
  retry,    ///< run the tool again (its effect may then happen twice, unless the outside system deduplicates by key)
  give_up,  ///< record the call as failed ("in doubt after a crash") without running it
};

/// What to do with a call that is in doubt: an InDoubtDecision, or "it already happened" with its outcome.
///
///     options.in_doubt = [&](const cairn::RecordedCall& c) {
///       if (auto receipt = mail_server.find(ctx.call_key(c.call_id))) {  // the key the tool passed on
///         return cairn::InDoubtAction::done(cairn::ToolResult::ok(*receipt));
///       }
///       return cairn::InDoubtAction::retry();
///     };
class InDoubtAction {
 public:
  enum class Kind { retry, give_up, done };

  InDoubtAction(InDoubtDecision decision)  // NOLINT: implicit, so callbacks returning the enum keep working
      : kind_(decision == InDoubtDecision::retry ? Kind::retry : Kind::give_up) {}

  /// Claim the call in the run, then run the tool again (attempt n+1, the same idempotency key).
  static InDoubtAction retry() { return InDoubtAction(InDoubtDecision::retry); }
  /// Record the call as failed without running it.
  static InDoubtAction give_up() { return InDoubtAction(InDoubtDecision::give_up); }
  /// The host checked the outside world and found that the effect happened: record the call as finished with
  /// `result` as if the tool had returned it (outputs stored and bound, the finished entry committed), without
  /// running the tool. A failed `result` records the call as failed with its error.
  static InDoubtAction done(ToolResult result) { return InDoubtAction(Kind::done, std::move(result)); }

  Kind kind() const noexcept { return kind_; }
  /// The outcome done() was given (empty otherwise).
  const ToolResult& result() const noexcept { return result_; }

 private:
  InDoubtAction(Kind kind, ToolResult result) : kind_(kind), result_(std::move(result)) {}
  Kind kind_;
  ToolResult result_;
};

/// How execute() runs a call.
struct ExecuteOptions {
  ResolveOptions resolve{};
  /// Asked about a call in doubt of a tool that is not idempotent (see call_in_doubt); idempotent tools are retried
  /// without asking. Unset: such a call throws call_in_doubt.
  std::function<InDoubtAction(const RecordedCall&)> in_doubt;
};

namespace detail {

/// FNV-1a (64 bit) of the resolved inputs' JSON text, as 16 hex digits: tells a re-issued call from another one
/// under the same id. Not a security measure.
std::string input_hash(const nlohmann::json& inputs);

}  // namespace detail

/// Runs `call` against `ctx`:
///  1. checks the call (throws cairn::not_found "Tool not found: <name>", cairn::invalid_argument for malformed or
///     repeated output names), resolves its inputs (throws what ExecutionContext::resolve throws) and checks the
///     resolved inputs against the tool's input schema (cairn::invalid_argument naming the tool, the JSON pointer
///     and the rule: `fetch: input /port: type: expected type integer, got string`). Nothing has run and nothing
///     changed (no journal entry either) when it throws.
///  2. runs the tool on the resolved inputs. A tool that returns success = false, throws, or returns data that does
///     not match its output_schema has failed: no output is stored, `Tool <name> failed: <reason>` is logged (role
///     tool) and the result says why.
///  3. for each output spec, stores a record {type, value, description, purpose, metadata {tool_name, success,
///     input_artifacts, ...the tool's metadata}} and binds it under the spec's name, logging
///     `Executed <tool> and stored output as @<name>` (role assistant). The value is `data[name]` when data is an
///     object with that member (even 0, false, "" or null), else `data` itself. An output whose value would be
///     null fails the call as in step 2. Bindings are all-or-nothing: every record is stored before any is bound.
///
/// In a context attached to a run (ExecutionContext::attach), the call is journalled around its effect: an
/// "intended" entry (call id, tool, hash of the resolved inputs) is committed before the tool runs, and the outputs,
/// their bindings and log messages are committed as one "finished" (or "failed") entry after. A call whose id the
/// run recorded as finished or failed is answered from the journal (ExecutionResult::replayed) and never runs
/// again; the same id with another tool or other inputs is a cairn::state_error. A call recorded as intended only
/// is in doubt: an idempotent tool runs again, anything else goes to `options.in_doubt` (retry, give up, or done
/// with a host-supplied result), or throws call_in_doubt. A retry (and a done) first commits a claim
/// (`context.tool_retry`), so of two workers resuming one run only one goes on; the other gets cairn::conflict
/// before anything runs. A call claimed (intended or retried) less than RunOptions::call_lease ago is in flight, not
/// in doubt: execute() throws cairn::call_in_flight (a conflict) without running it or asking. Outputs of a call in
/// a run are stored under ids derived from the run, the call and the output name (detail::call_output_id), so a
/// resumed run holds the same ids as an uninterrupted one; a claimed retry first checks that no other worker moved
/// the run on since its claim (else cairn::conflict), then removes what an earlier, unbound attempt left under them.
/// The tool is given a ToolInvocation with the call id, its idempotency key and the attempt (docs/runs.md, "Tool
/// calls").
///
/// With an observer on the context (ExecutionContext::set_observer), the call is reported as one
/// EventKind::tool_call event when it ends: subject the tool's name, operation "execute" ("replay" when answered from
/// the journal), the whole call's duration, bytes_in the resolved inputs' JSON text, bytes_out the stored outputs',
/// items the outputs stored; a failed tool reports errc::generic and its reason, a throw the exception's code.
[[nodiscard]] ExecutionResult execute(const ToolCall& call, ExecutionContext& ctx, const ToolRegistry& registry,
                                      const ExecuteOptions& options);

namespace detail {

ExecutionResult execute_unobserved(const ToolCall& call, ExecutionContext& ctx, const ToolRegistry& registry,
                                   const ExecuteOptions& options, std::uint64_t* input_bytes);

}  // namespace detail

/// The same with only resolve options.
[[nodiscard]] ExecutionResult execute(const ToolCall& call, ExecutionContext& ctx, const ToolRegistry& registry,
                                      const ResolveOptions& options = {});

CAIRN_END_NAMESPACE

#ifndef CAIRN_COMPILED_LIB
#include "cairn/context/tool-inl.hpp"
#endif
