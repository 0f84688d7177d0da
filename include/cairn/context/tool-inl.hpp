// cairn — the function bodies of cairn/context/tool.hpp (docs/api.md, "Compiled mode"). Header-only, the
// default, that header includes this file and CAIRN_INLINE is `inline`; with CAIRN_COMPILED_LIB they are
// compiled once, into cairn::compiled (src/compiled/), and the header only declares them.
#pragma once

#include "cairn/context/tool.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

CAIRN_INLINE ToolResult ToolResult::ok(nlohmann::json data, nlohmann::json metadata) {
  return ToolResult{true, std::move(data), std::move(metadata), {}};
}

CAIRN_INLINE ToolResult ToolResult::failure(std::string error, nlohmann::json metadata) {
  return ToolResult{false, nullptr, std::move(metadata), std::move(error)};
}

CAIRN_INLINE bool is_valid_tool_name(std::string_view name) noexcept {
  if (name.empty() || name.size() > 128) return false;
  for (char c : name) {
    if (!detail::is_ascii_alpha(c) && !detail::is_ascii_digit(c) && c != '_' && c != '-' && c != '.') return false;
  }
  return true;
}

CAIRN_INLINE void ToolRegistry::add(Tool tool) {
  if (!is_valid_tool_name(tool.name)) {
    throw invalid_argument(fmt::format("tool name: '{}' is not valid (expected 1 to 128 characters of [A-Za-z0-9_.-])",
                                       detail::excerpt(tool.name)));
  }
  if (!tool.function) throw invalid_argument(fmt::format("tool '{}': function must be set", tool.name));
  if (!tool.input_schema.is_object()) {
    throw invalid_argument(
        fmt::format("tool '{}': input_schema must be a JSON object, got {}", tool.name, tool.input_schema.type_name()));
  }
  CompiledSchema input(tool.input_schema, fmt::format("tool '{}': input_schema", tool.name), SchemaLimits{},
                       tool.unchecked_schema);
  std::optional<CompiledSchema> output;
  if (tool.output_schema) {
    output.emplace(*tool.output_schema, fmt::format("tool '{}': output_schema", tool.name), SchemaLimits{},
                   tool.unchecked_schema);
  }
  auto shared =
      std::make_shared<const RegisteredTool>(RegisteredTool{std::move(tool), std::move(input), std::move(output)});
  std::unique_lock lock(mutex_);
  if (!by_name_.emplace(shared->tool.name, shared).second) {
    throw invalid_argument(fmt::format("tool '{}': a tool of that name is registered already", shared->tool.name));
  }
  order_.push_back(std::move(shared));
}

CAIRN_INLINE std::shared_ptr<const Tool> ToolRegistry::find(std::string_view name) const {
  auto entry = find_registered(name);
  return entry ? std::shared_ptr<const Tool>(entry, &entry->tool) : nullptr;
}

CAIRN_INLINE std::shared_ptr<const RegisteredTool> ToolRegistry::find_registered(std::string_view name) const {
  std::shared_lock lock(mutex_);
  const auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : it->second;
}

CAIRN_INLINE std::vector<std::shared_ptr<const Tool>> ToolRegistry::list() const {
  std::shared_lock lock(mutex_);
  std::vector<std::shared_ptr<const Tool>> out;
  out.reserve(order_.size());
  for (const auto& entry : order_) out.emplace_back(entry, &entry->tool);
  return out;
}

CAIRN_INLINE std::size_t ToolRegistry::size() const {
  std::shared_lock lock(mutex_);
  return order_.size();
}

CAIRN_INLINE void to_json(nlohmann::json& j, const OutputSpec& o) {
  j = {{"name", o.name},
       {"type", o.type.str()},
       {"description", o.description},
       {"purpose", o.purpose.empty() ? o.description : o.purpose}};
}

CAIRN_INLINE void to_json(nlohmann::json& j, const ToolCall& c) {
  j = {{"tool", c.tool}, {"inputs", c.inputs}, {"outputs", c.outputs}};
  if (!c.id.empty()) j["id"] = c.id;
}

namespace detail {
CAIRN_INLINE std::string ModelInput::at(std::string_view field) const {
  if (path_.empty()) return std::string(field);
  if (field.empty()) return path_;
  return field[0] == '[' ? path_ + std::string(field) : path_ + "." + std::string(field);
}

CAIRN_INLINE const nlohmann::json* ModelInput::member(const nlohmann::json& obj, const char* key) const {
  const auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

CAIRN_INLINE const std::string& ModelInput::string_member(const nlohmann::json& obj, const char* key,
                                                          std::string_view field) const {
  const auto* v = member(obj, key);
  if (!v || v->is_null()) fail(field, "missing");
  if (!v->is_string()) fail(field, fmt::format("expected a string, got {}", v->type_name()));
  return v->get_ref<const std::string&>();
}

CAIRN_INLINE ToolCall tool_call_from_json(const nlohmann::json& j, const ModelInput& in) {
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

CAIRN_INLINE std::string_view strip_code_fence(std::string_view text) {
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  if (text.size() >= 6 && text.substr(0, 3) == "```" && text.substr(text.size() - 3) == "```") {
    const auto eol = text.find('\n');
    if (eol != std::string_view::npos && eol < text.size() - 3) text = text.substr(eol + 1, text.size() - 3 - eol - 1);
  }
  return text;
}

CAIRN_INLINE void check_model_json_depth(const nlohmann::json& j, const JsonLimits& limits, std::string_view what) {
  if (json_depth(j, limits.max_depth) > limits.max_depth) {
    throw limit_exceeded(fmt::format("{}: JSON nesting is deeper than the limit of {} levels", what, limits.max_depth));
  }
}

}  // namespace detail

CAIRN_INLINE ToolCall ToolCall::from_json(const nlohmann::json& j, const JsonLimits& limits) {
  detail::check_model_json_depth(j, limits, "tool call");
  return detail::tool_call_from_json(j, detail::ModelInput("tool call", ""));
}

CAIRN_INLINE ToolCall ToolCall::parse(std::string_view text, const JsonLimits& limits) {
  return detail::tool_call_from_json(detail::parse_json(detail::strip_code_fence(text), limits, "tool call"),
                                     detail::ModelInput("tool call", ""));
}

namespace detail {
CAIRN_INLINE std::string input_hash(const nlohmann::json& inputs) {
  std::uint64_t h = 1469598103934665603ULL;
  for (char c : inputs.dump()) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return fmt::format("{:016x}", h);
}

CAIRN_INLINE ExecutionResult execute_unobserved(const ToolCall& call, ExecutionContext& ctx,
                                                const ToolRegistry& registry, const ExecuteOptions& options,
                                                std::uint64_t* input_bytes) {
  const auto entry = registry.find_registered(call.tool);
  const Tool* tool = entry ? &entry->tool : nullptr;
  if (!tool) throw not_found(fmt::format("Tool not found: {}", detail::excerpt(call.tool)));
  std::unordered_set<std::string_view> names;
  for (const OutputSpec& o : call.outputs) {
    if (!is_valid_artifact_name(o.name)) {
      throw invalid_argument(
          fmt::format("{}: output name '{}' is not a valid artifact name", call.tool, detail::excerpt(o.name)));
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
  bool claimed_retry = false;          // an attempt after the first: earlier attempts may have left outputs
  std::optional<ToolResult> supplied;  // the host's "it already happened"
  ToolInvocation invocation;
  if (durable) {
    out.call_id = call.id.empty() ? ctx.next_call_id() : call.id;
    out.idempotency_key = ctx.call_key(out.call_id);
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
      // Claimed less than RunOptions::call_lease ago: in flight on another worker (or one that died within the
      // lease), not in doubt. Nothing is decided, nothing is asked, nothing runs.
      ctx.check_not_in_flight(*seen, "execute");
      // In doubt: the intended entry is there, its outcome is not. Idempotent tools are retried without asking.
      InDoubtAction action = InDoubtAction::retry();
      if (!tool->idempotent) {
        if (!options.in_doubt) {
          throw call_in_doubt(
              fmt::format("call '{}' of {} is in doubt: it was started and never finished (the process stopped); "
                          "its effect may or may not have happened. Check, then decide with ExecuteOptions::in_doubt",
                          detail::excerpt(out.call_id), call.tool),
              *seen);
        }
        action = options.in_doubt(*seen);
      }
      if (action.kind() == InDoubtAction::Kind::give_up) {
        out.success = false;
        out.error = "in doubt after a crash; the host gave up on it";
        out.result = ToolResult::failure(out.error);
        ctx.record_call_failed(out.call_id, call.tool, hash, out.error,
                               Message{Role::tool, fmt::format("Tool {} failed: {}", call.tool, out.error),
                                       detail::now_ms(ctx.clock().get())});
        return out;
      }
      // Claim the attempt before anything of it happens: a second worker resuming the run conflicts here.
      out.attempt = seen->attempt + 1;
      ctx.record_call_retry(out.call_id, out.attempt);
      claimed_retry = true;
      if (action.kind() == InDoubtAction::Kind::done) supplied = action.result();
    } else {
      ctx.record_call_intended(out.call_id, call.tool, hash);
      out.attempt = 1;
    }
    invocation = ToolInvocation{out.call_id, out.idempotency_key, out.attempt};
  } else {
    out.attempt = 1;
    if (call.id.empty()) {
      std::array<unsigned char, 16> random{};
      detail::secure_random_bytes(random.data(), random.size());
      out.idempotency_key = detail::hex_prefix(random, random.size());
    } else {
      out.idempotency_key = ctx.call_key(call.id);
    }
    invocation = ToolInvocation{call.id, out.idempotency_key, 1};
  }

  if (supplied) {
    out.result = std::move(*supplied);
  } else {
    try {
      out.result = tool->function(inputs, invocation);
    } catch (const std::exception& e) {
      out.result = ToolResult::failure(fmt::format("the tool threw: {}", e.what()));
    } catch (...) {
      out.result = ToolResult::failure("the tool threw an exception that is not a std::exception");
    }
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
    auto builder = ArtifactRecord::builder();
    builder.tenant_id(ctx.tenant_id())
        .type(spec.type)
        .description(spec.description)
        .purpose(spec.purpose)
        .value(value)
        .metadata(metadata);
    // In a run, the ids follow from the call, so a resumed run stores what an uninterrupted one would have.
    if (durable) builder.id(detail::call_output_id(ctx.tenant_id(), ctx.run()->run_id(), out.call_id, spec.name));
    records.push_back(builder.build());
  }
  if (claimed_retry) {
    // What lies under the output ids is an earlier attempt's orphan only while no other worker has moved the run on
    // since this attempt's claim: one that has (it claimed the call after this worker's lease ended and may have
    // bound its own outputs there) must not have them removed by this late attempt. The check and the removal are
    // not one step; a late attempt that stores at the very moment the other stores conflicts in store_if instead.
    const auto head = ctx.run()->journal()->info(ctx.tenant_id(), ctx.run()->run_id());
    if (head && head->last_seq != ctx.run()->seq()) {
      throw conflict(
          fmt::format("call '{}': another worker moved run '{}' on (to seq {}) while attempt {} ran; its "
                      "outputs are not stored (reopen the run)",
                      detail::excerpt(out.call_id), detail::excerpt(ctx.run()->run_id()), head->last_seq, out.attempt),
          ctx.run()->seq(), head->last_seq);
    }
  }
  std::vector<ArtifactPtr> stored;
  stored.reserve(records.size());
  for (const ArtifactPtr& r : records) {
    if (claimed_retry) {
      // What an earlier attempt stored under this id is an orphan: only the call's finished entry binds it, and
      // there is none. Removed, so that this attempt stores version 1 as an uninterrupted run did; store_if makes a
      // still-running earlier worker (a zombie) that stores at the same moment a conflict, never a mix.
      try {
        ctx.store()->remove(r->id(), ctx.tenant_id());
      } catch (const not_found&) {  // nothing left, or another claimant removed it first
      }
      stored.push_back(ctx.store()->store_if(*r, ArtifactStore::absent));
    } else if (durable) {
      // Nothing is under a derived id yet unless a worker that lost the run to this one is still storing: its
      // late write then conflicts here (or there) instead of adding a second version beside this one.
      stored.push_back(ctx.store()->store_if(*r, ArtifactStore::absent));
    } else {
      stored.push_back(ctx.store()->store(*r));
    }
  }
  for (std::size_t i = 0; i < stored.size(); ++i) out.outputs.push_back(NamedArtifact{call.outputs[i].name, stored[i]});
  if (durable) {
    std::vector<Message> messages;
    for (const auto& o : out.outputs) {
      messages.push_back(Message{Role::assistant,
                                 fmt::format("Executed {} and stored output as @{}", call.tool, o.name),
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

CAIRN_INLINE ExecutionResult execute(const ToolCall& call, ExecutionContext& ctx, const ToolRegistry& registry,
                                     const ExecuteOptions& options) {
  (void)ctx.require_store("execute");  // outputs are stored, replayed calls fetched: a conversation-only context can't
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

CAIRN_INLINE ExecutionResult execute(const ToolCall& call, ExecutionContext& ctx, const ToolRegistry& registry,
                                     const ResolveOptions& options) {
  ExecuteOptions o;
  o.resolve = options;
  return execute(call, ctx, registry, o);
}

CAIRN_INLINE void detail::ModelInput::fail(std::string_view field, std::string_view message) const {
  const std::string where = at(field);
  if (where.empty()) throw parse_error(fmt::format("{}: {}", label_, message));
  throw parse_error(fmt::format("{}: {}: {}", label_, where, message));
}

CAIRN_END_NAMESPACE
