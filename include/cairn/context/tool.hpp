// cairn — tools with named outputs: Tool, ToolRegistry, ToolCall (parsed from model output) and execute().
//
// A model asks for a tool as JSON: {"tool": ..., "inputs": {... "@name" ...}, "outputs": [{name, type,
// description, purpose}]}. execute() resolves the inputs against an ExecutionContext, runs the tool, stores one
// artifact record per output spec and binds it under the spec's name, so the next call can say "@that_name".
#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
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

  static ToolResult ok(nlohmann::json data, nlohmann::json metadata = nlohmann::json::object()) {
    return ToolResult{true, std::move(data), std::move(metadata), {}};
  }
  static ToolResult failure(std::string error, nlohmann::json metadata = nlohmann::json::object()) {
    return ToolResult{false, nullptr, std::move(metadata), std::move(error)};
  }
};

/// The function behind a tool: resolved inputs in, a result out. Throwing counts as failing.
using ToolFunction = std::function<ToolResult(const nlohmann::json& inputs)>;

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
};

/// A tool as a ToolRegistry keeps it: the tool and its schemas, compiled once when it was registered.
struct RegisteredTool {
  Tool tool;
  CompiledSchema input;
  std::optional<CompiledSchema> output;  ///< when the tool declares an output_schema
};

/// True when `name` is 1 to 128 characters of [A-Za-z0-9_.-].
inline bool is_valid_tool_name(std::string_view name) noexcept {
  if (name.empty() || name.size() > 128) return false;
  for (char c : name) {
    if (!detail::is_ascii_alpha(c) && !detail::is_ascii_digit(c) && c != '_' && c != '-' && c != '.') return false;
  }
  return true;
}

/// The tools a run may use, by name, in registration order. Thread-safe: forks on several threads may look tools
/// up while another thread adds one. A tool's function may then run on several threads at once.
class ToolRegistry {
 public:
  /// Registers `tool` and compiles its schemas (once: execute() then only checks values). Throws
  /// cairn::invalid_argument for a malformed or taken name, a missing function, an input schema that is not a JSON
  /// object, or a schema that is not a valid JSON Schema (`tool 'fetch': input_schema: not a valid JSON Schema: at
  /// /properties/port/type: ...`); nothing is registered then.
  void add(Tool tool) {
    if (!is_valid_tool_name(tool.name)) {
      throw invalid_argument(fmt::format(
          "tool name: '{}' is not valid (expected 1 to 128 characters of [A-Za-z0-9_.-])", detail::excerpt(tool.name)));
    }
    if (!tool.function) throw invalid_argument(fmt::format("tool '{}': function must be set", tool.name));
    if (!tool.input_schema.is_object()) {
      throw invalid_argument(fmt::format("tool '{}': input_schema must be a JSON object, got {}", tool.name,
                                         tool.input_schema.type_name()));
    }
    CompiledSchema input(tool.input_schema, fmt::format("tool '{}': input_schema", tool.name));
    std::optional<CompiledSchema> output;
    if (tool.output_schema) output.emplace(*tool.output_schema, fmt::format("tool '{}': output_schema", tool.name));
    auto shared = std::make_shared<const RegisteredTool>(RegisteredTool{std::move(tool), std::move(input),
                                                                        std::move(output)});
    std::unique_lock lock(mutex_);
    if (!by_name_.emplace(shared->tool.name, shared).second) {
      throw invalid_argument(fmt::format("tool '{}': a tool of that name is registered already", shared->tool.name));
    }
    order_.push_back(std::move(shared));
  }

  /// The tool named `name`, or null.
  std::shared_ptr<const Tool> find(std::string_view name) const {
    auto entry = find_registered(name);
    return entry ? std::shared_ptr<const Tool>(entry, &entry->tool) : nullptr;
  }

  /// The tool named `name` with its compiled schemas, or null.
  std::shared_ptr<const RegisteredTool> find_registered(std::string_view name) const {
    std::shared_lock lock(mutex_);
    const auto it = by_name_.find(std::string(name));
    return it == by_name_.end() ? nullptr : it->second;
  }

  /// Every tool, in registration order.
  std::vector<std::shared_ptr<const Tool>> list() const {
    std::shared_lock lock(mutex_);
    std::vector<std::shared_ptr<const Tool>> out;
    out.reserve(order_.size());
    for (const auto& entry : order_) out.emplace_back(entry, &entry->tool);
    return out;
  }

  std::size_t size() const {
    std::shared_lock lock(mutex_);
    return order_.size();
  }

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

inline void to_json(nlohmann::json& j, const OutputSpec& o) {
  j = {{"name", o.name}, {"type", o.type.str()}, {"description", o.description},
       {"purpose", o.purpose.empty() ? o.description : o.purpose}};
}

inline void to_json(nlohmann::json& j, const ToolCall& c) {
  j = {{"tool", c.tool}, {"inputs", c.inputs}, {"outputs", c.outputs}};
  if (!c.id.empty()) j["id"] = c.id;
}

namespace detail {

/// Builds "<label>: <path>: <message>" errors for the readers of model output.
class ModelInput {
 public:
  ModelInput(std::string_view label, std::string path) : label_(label), path_(std::move(path)) {}

  std::string at(std::string_view field) const {
    if (path_.empty()) return std::string(field);
    if (field.empty()) return path_;
    return field[0] == '[' ? path_ + std::string(field) : path_ + "." + std::string(field);
  }

  [[noreturn]] void fail(std::string_view field, std::string_view message) const {
    const std::string where = at(field);
    if (where.empty()) throw parse_error(fmt::format("{}: {}", label_, message));
    throw parse_error(fmt::format("{}: {}: {}", label_, where, message));
  }

  const nlohmann::json* member(const nlohmann::json& obj, const char* key) const {
    const auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
  }

  const std::string& string_member(const nlohmann::json& obj, const char* key, std::string_view field) const {
    const auto* v = member(obj, key);
    if (!v || v->is_null()) fail(field, "missing");
    if (!v->is_string()) fail(field, fmt::format("expected a string, got {}", v->type_name()));
    return v->get_ref<const std::string&>();
  }

  ModelInput child(std::string_view field) const { return ModelInput(label_, at(field)); }
  std::string_view label() const { return label_; }

 private:
  std::string_view label_;
  std::string path_;
};

inline ToolCall tool_call_from_json(const nlohmann::json& j, const ModelInput& in) {
  if (!j.is_object()) in.fail("", fmt::format("expected a JSON object, got {}", j.type_name()));
  ToolCall call;
  if (const auto* id = in.member(j, "id"); id && !id->is_null()) {
    if (!id->is_string()) in.fail("id", fmt::format("expected a string, got {}", id->type_name()));
    call.id = id->get<std::string>();
    if (call.id.empty() || call.id.size() > 256 || has_control_char(call.id) || !is_valid_utf8(call.id)) {
      in.fail("id", fmt::format("'{}' is not a valid call id (1 to 256 bytes of printable UTF-8)", excerpt(call.id)));
    }
  }
  call.tool = in.string_member(j, "tool", "tool");
  if (!is_valid_tool_name(call.tool)) {
    in.fail("tool", fmt::format("'{}' is not a valid tool name (expected 1 to 128 characters of [A-Za-z0-9_.-])",
                                excerpt(call.tool)));
  }
  if (const auto* inputs = in.member(j, "inputs"); inputs && !inputs->is_null()) {
    if (!inputs->is_object()) in.fail("inputs", fmt::format("expected an object, got {}", inputs->type_name()));
    call.inputs = *inputs;
  }
  const auto* outputs = in.member(j, "outputs");
  if (!outputs || outputs->is_null()) return call;
  if (!outputs->is_array()) in.fail("outputs", fmt::format("expected an array, got {}", outputs->type_name()));
  std::unordered_map<std::string, std::size_t> seen;
  for (std::size_t i = 0; i < outputs->size(); ++i) {
    const nlohmann::json& o = (*outputs)[i];
    const ModelInput out = in.child(fmt::format("outputs[{}]", i));
    if (!o.is_object()) out.fail("", fmt::format("expected an object, got {}", o.type_name()));
    const std::string& name = out.string_member(o, "name", "name");
    if (!is_valid_artifact_name(name)) {
      out.fail("name", fmt::format("'{}' is not a valid artifact name (expected [A-Za-z_][A-Za-z0-9_-]{{0,127}})",
                                   excerpt(name)));
    }
    if (const auto [it, fresh] = seen.emplace(name, i); !fresh) {
      out.fail("name", fmt::format("'{}' is used by outputs[{}] already", name, it->second));
    }
    const std::string& type = out.string_member(o, "type", "type");
    if (!ArtifactType::is_valid(type)) {
      out.fail("type", fmt::format("'{}' is not a valid artifact type (expected a lowercase token matching "
                                   "[a-z][a-z0-9_-]{{0,63}})",
                                   excerpt(type)));
    }
    const std::string& description = out.string_member(o, "description", "description");
    if (description.empty()) out.fail("description", "must not be empty");
    std::string purpose;
    if (const auto* p = out.member(o, "purpose"); p && !p->is_null()) {
      if (!p->is_string()) out.fail("purpose", fmt::format("expected a string, got {}", p->type_name()));
      purpose = p->get<std::string>();
    }
    call.outputs.push_back(OutputSpec{name, ArtifactType{type}, description, std::move(purpose)});
  }
  return call;
}

/// `text` without surrounding whitespace and without a Markdown code fence around it.
inline std::string_view strip_code_fence(std::string_view text) {
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  if (text.size() >= 6 && text.substr(0, 3) == "```" && text.substr(text.size() - 3) == "```") {
    const auto eol = text.find('\n');
    if (eol != std::string_view::npos && eol < text.size() - 3) text = text.substr(eol + 1, text.size() - 3 - eol - 1);
  }
  return text;
}

}  // namespace detail

namespace detail {

inline void check_model_json_depth(const nlohmann::json& j, const JsonLimits& limits, std::string_view what) {
  if (json_depth(j, limits.max_depth) > limits.max_depth) {
    throw limit_exceeded(fmt::format("{}: JSON nesting is deeper than the limit of {} levels", what, limits.max_depth));
  }
}

}  // namespace detail

inline ToolCall ToolCall::from_json(const nlohmann::json& j, const JsonLimits& limits) {
  detail::check_model_json_depth(j, limits, "tool call");
  return detail::tool_call_from_json(j, detail::ModelInput("tool call", ""));
}

inline ToolCall ToolCall::parse(std::string_view text, const JsonLimits& limits) {
  return detail::tool_call_from_json(detail::parse_json(detail::strip_code_fence(text), limits, "tool call"),
                                     detail::ModelInput("tool call", ""));
}

/// What execute() did.
struct ExecutionResult {
  std::string tool;
  bool success = false;
  ToolResult result;                   ///< what the tool returned (a failure with the reason when it threw)
  std::string error;                   ///< why the call failed; empty on success
  std::vector<NamedArtifact> outputs;  ///< the stored and bound outputs, in the call's order
  std::string call_id;                 ///< the call's id in the attached run ("" when the context has no run)
  bool replayed = false;               ///< answered from the run's journal: the tool did not run this time
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
  retry,    ///< run the tool again (its effect may then happen twice)
  give_up,  ///< record the call as failed ("in doubt after a crash") without running it
};

/// How execute() runs a call.
struct ExecuteOptions {
  ResolveOptions resolve{};
  /// Asked about a call in doubt (see call_in_doubt). Unset: idempotent tools are retried, others throw.
  std::function<InDoubtDecision(const RecordedCall&)> in_doubt;
};

namespace detail {

/// FNV-1a (64 bit) of the resolved inputs' JSON text, as 16 hex digits: tells a re-issued call from another one
/// under the same id. Not a security measure.
inline std::string input_hash(const nlohmann::json& inputs) {
  std::uint64_t h = 1469598103934665603ULL;
  for (char c : inputs.dump()) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return fmt::format("{:016x}", h);
}

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
/// is in doubt: an idempotent tool runs again, anything else goes to `options.in_doubt`, or throws call_in_doubt.
///
/// With an observer on the context (ExecutionContext::set_observer), the call is reported as one
/// EventKind::tool_call event when it ends: subject the tool's name, operation "execute" ("replay" when answered from
/// the journal), the whole call's duration, bytes_in the resolved inputs' JSON text, bytes_out the stored outputs',
/// items the outputs stored; a failed tool reports errc::generic and its reason, a throw the exception's code.
[[nodiscard]]
inline ExecutionResult execute(const ToolCall& call, ExecutionContext& ctx, const ToolRegistry& registry,
                               const ExecuteOptions& options);

namespace detail {

inline ExecutionResult execute_unobserved(const ToolCall& call, ExecutionContext& ctx, const ToolRegistry& registry,
                                          const ExecuteOptions& options, std::uint64_t* input_bytes) {
  const auto entry = registry.find_registered(call.tool);
  const Tool* tool = entry ? &entry->tool : nullptr;
  if (!tool) throw not_found(fmt::format("Tool not found: {}", detail::excerpt(call.tool)));
  std::unordered_set<std::string_view> names;
  for (const OutputSpec& o : call.outputs) {
    if (!is_valid_artifact_name(o.name)) {
      throw invalid_argument(fmt::format("{}: output name '{}' is not a valid artifact name", call.tool,
                                         detail::excerpt(o.name)));
    }
    if (!names.insert(o.name).second) {
      throw invalid_argument(fmt::format("{}: output name '{}' is given twice", call.tool, o.name));
    }
  }
  nlohmann::json inputs = ctx.resolve(call.inputs, options.resolve);
  if (input_bytes) *input_bytes = detail::json_bytes(inputs);
  std::vector<std::string> input_artifacts = references(call.inputs, options.resolve);  // cannot throw now
  {
    std::size_t total = 0;
    const auto violations = entry->input.validate(inputs, CompiledSchema::default_max_reported, &total);
    if (!violations.empty()) {
      throw invalid_argument(fmt::format("{}: {}", call.tool, describe_violations("input", violations, total)));
    }
  }

  ExecutionResult out;
  out.tool = call.tool;
  const bool durable = ctx.run() != nullptr;
  std::string hash;
  if (durable) {
    out.call_id = call.id.empty() ? ctx.next_call_id() : call.id;
    hash = detail::input_hash(inputs);
    if (auto seen = ctx.recorded_call(out.call_id)) {
      if (seen->tool != call.tool || seen->input_hash != hash) {
        throw state_error(fmt::format(
            "call '{}': the run recorded it as a call of {} with inputs {}; now it is {} with inputs {} (give each "
            "call its own id)",
            detail::excerpt(out.call_id), seen->tool, seen->input_hash, call.tool, hash));
      }
      if (seen->status != RecordedCall::Status::intended) {
        out.replayed = true;
        out.success = seen->status == RecordedCall::Status::finished;
        out.error = seen->error;
        out.result = out.success ? ToolResult::ok(nullptr) : ToolResult::failure(seen->error);
        for (const auto& [name, ref] : seen->outputs) {
          auto record = ctx.store()->fetch(ref.first, ctx.tenant_id(), ref.second);
          if (!record) {
            throw state_error(fmt::format("call '{}': output '{}' (artifact '{}' version {}) is not in the store",
                                          detail::excerpt(out.call_id), name, detail::excerpt(ref.first), ref.second));
          }
          out.outputs.push_back(NamedArtifact{name, std::move(record)});
        }
        return out;
      }
      // In doubt: the intended entry is there, its outcome is not.
      InDoubtDecision decision = InDoubtDecision::retry;
      if (options.in_doubt) {
        decision = options.in_doubt(*seen);
      } else if (!tool->idempotent) {
        throw call_in_doubt(
            fmt::format("call '{}' of {} is in doubt: it was started and never finished (the process stopped); its "
                        "effect may or may not have happened. Check, then decide with ExecuteOptions::in_doubt",
                        detail::excerpt(out.call_id), call.tool),
            *seen);
      }
      if (decision == InDoubtDecision::give_up) {
        out.success = false;
        out.error = "in doubt after a crash; the host gave up on it";
        out.result = ToolResult::failure(out.error);
        ctx.record_call_failed(out.call_id, call.tool, hash, out.error,
                               Message{Role::tool, fmt::format("Tool {} failed: {}", call.tool, out.error),
                                       detail::now_ms(ctx.clock().get())});
        return out;
      }
    } else {
      ctx.record_call_intended(out.call_id, call.tool, hash);
    }
  }

  try {
    out.result = tool->function(inputs);
  } catch (const std::exception& e) {
    out.result = ToolResult::failure(fmt::format("the tool threw: {}", e.what()));
  } catch (...) {
    out.result = ToolResult::failure("the tool threw an exception that is not a std::exception");
  }

  auto fail = [&](std::string why) {
    out.success = false;
    out.error = std::move(why);
    Message m{Role::tool, fmt::format("Tool {} failed: {}", call.tool, out.error), detail::now_ms(ctx.clock().get())};
    if (durable) {
      ctx.record_call_failed(out.call_id, call.tool, hash, out.error, m);
    } else {
      ctx.add_message(std::move(m));
    }
    return out;
  };
  if (!out.result.success) return fail(out.result.error.empty() ? "no reason given" : out.result.error);
  if (!out.result.metadata.is_null() && !out.result.metadata.is_object()) {
    return fail(fmt::format("the tool returned metadata that is not an object ({})", out.result.metadata.type_name()));
  }

  if (entry->output) {
    std::size_t total = 0;
    const auto violations = entry->output->validate(out.result.data, CompiledSchema::default_max_reported, &total);
    if (!violations.empty()) {
      return fail(fmt::format("the tool's result does not match its output_schema: {}",
                              describe_violations("output", violations, total)));
    }
  }

  nlohmann::json metadata = {
      {"tool_name", call.tool}, {"success", true}, {"input_artifacts", std::move(input_artifacts)}};
  if (out.result.metadata.is_object()) {
    for (const auto& [key, value] : out.result.metadata.items()) metadata[key] = value;  // the tool's keys last
  }
  const nlohmann::json& data = out.result.data;
  std::vector<ArtifactPtr> records;
  records.reserve(call.outputs.size());
  for (const OutputSpec& spec : call.outputs) {
    const auto member = data.is_object() ? data.find(spec.name) : data.end();
    const nlohmann::json& value = data.is_object() && member != data.end() ? *member : data;
    if (value.is_null()) return fail(fmt::format("the tool returned no value for output '{}'", spec.name));
    records.push_back(ArtifactRecord::builder()
                          .tenant_id(ctx.tenant_id())
                          .type(spec.type)
                          .description(spec.description)
                          .purpose(spec.purpose)
                          .value(value)
                          .metadata(metadata)
                          .build());
  }
  std::vector<ArtifactPtr> stored;
  stored.reserve(records.size());
  for (const ArtifactPtr& r : records) stored.push_back(ctx.store()->store(*r));
  for (std::size_t i = 0; i < stored.size(); ++i) out.outputs.push_back(NamedArtifact{call.outputs[i].name, stored[i]});
  if (durable) {
    std::vector<Message> messages;
    for (const auto& o : out.outputs) {
      messages.push_back(Message{Role::assistant, fmt::format("Executed {} and stored output as @{}", call.tool, o.name),
                                 detail::now_ms(ctx.clock().get())});
    }
    ctx.record_call_finished(out.call_id, call.tool, hash, out.outputs, messages);
  } else {
    for (const auto& o : out.outputs) {
      ctx.bind(o.name, o.record);
      ctx.add_message(Role::assistant, fmt::format("Executed {} and stored output as @{}", call.tool, o.name));
    }
  }
  out.success = true;
  return out;
}

}  // namespace detail

inline ExecutionResult execute(const ToolCall& call, ExecutionContext& ctx, const ToolRegistry& registry,
                               const ExecuteOptions& options) {
  Observer* observer = ctx.observer().get();
  if (!observer) return detail::execute_unobserved(call, ctx, registry, options, nullptr);
  std::uint64_t input_bytes = 0;
  return detail::observe_call(
      observer, EventKind::tool_call, "execute", ctx.tenant_id(), call.tool,
      [&] { return detail::execute_unobserved(call, ctx, registry, options, &input_bytes); },
      [&](Event& e, const ExecutionResult& r) {
        if (r.replayed) e.operation = "replay";
        e.bytes_in = input_bytes;
        e.items = r.outputs.size();
        for (const auto& o : r.outputs) e.bytes_out += o.record ? detail::json_bytes(o.record->value()) : 0;
        if (!r.success) {
          e.error = errc::generic;
          e.message = r.error;
        }
      });
}

/// The same with only resolve options.
[[nodiscard]]
inline ExecutionResult execute(const ToolCall& call, ExecutionContext& ctx, const ToolRegistry& registry,
                               const ResolveOptions& options = {}) {
  ExecuteOptions o;
  o.resolve = options;
  return execute(call, ctx, registry, o);
}

CAIRN_END_NAMESPACE
