// cairn — the function bodies of cairn/context/plan.hpp (docs/api.md, "Compiled mode"). Header-only, the
// default, that header includes this file and CAIRN_INLINE is `inline`; with CAIRN_COMPILED_LIB they are
// compiled once, into cairn::compiled (src/compiled/), and the header only declares them.
#pragma once

#include "cairn/context/plan.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

CAIRN_INLINE Plan Plan::from_json(const nlohmann::json& j, const JsonLimits& limits) {
  detail::check_model_json_depth(j, limits, "plan");
  return read(j);
}

CAIRN_INLINE Plan Plan::parse(std::string_view text, const JsonLimits& limits) {
  return read(detail::parse_json(detail::strip_code_fence(text), limits, "plan"));
}

CAIRN_INLINE Plan Plan::read(const nlohmann::json& j) {
  const detail::ModelInput in("plan", "");
  if (!j.is_object()) in.fail("", fmt::format("expected a JSON object, got {}", j.type_name()));
  const auto* subtasks = in.member(j, "subtasks");
  if (!subtasks || subtasks->is_null()) in.fail("subtasks", "missing");
  if (!subtasks->is_array()) in.fail("subtasks", fmt::format("expected an array, got {}", subtasks->type_name()));
  if (subtasks->size() > max_subtasks) {
    throw limit_exceeded(
        fmt::format("plan: subtasks: {} subtasks, more than the limit of {}", subtasks->size(), max_subtasks));
  }
  Plan plan;
  plan.subtasks.reserve(subtasks->size());
  for (std::size_t i = 0; i < subtasks->size(); ++i) {
    const nlohmann::json& s = (*subtasks)[i];
    const detail::ModelInput step = in.child(fmt::format("subtasks[{}]", i));
    if (!s.is_object()) step.fail("", fmt::format("expected an object, got {}", s.type_name()));
    std::string description = step.string_member(s, "description", "description");
    plan.subtasks.push_back(PlanStep{std::move(description), detail::tool_call_from_json(s, step)});
  }
  return plan;
}

CAIRN_INLINE void to_json(nlohmann::json& j, const PlanStep& s) {
  j = s.call;
  j["description"] = s.description;
}

CAIRN_INLINE std::optional<PlanProblem> check_plan(const Plan& plan, const ExecutionContext& ctx,
                                                   const ToolRegistry& registry, const ResolveOptions& options) {
  std::unordered_set<std::string> produced;
  for (std::size_t i = 0; i < plan.subtasks.size(); ++i) {
    const ToolCall& call = plan.subtasks[i].call;
    if (!registry.find(call.tool)) {
      return PlanProblem{i, fmt::format("Tool not found: {}", detail::excerpt(call.tool))};
    }
    for (const std::string& name : references(call.inputs, options)) {
      if (!produced.count(name) && !ctx.has_artifact(name)) {
        return PlanProblem{i, fmt::format("@{} is neither in the context nor an output of an earlier subtask", name)};
      }
    }
    for (const OutputSpec& o : call.outputs) produced.insert(o.name);
  }
  return std::nullopt;
}

CAIRN_INLINE PlanResult run_plan(const Plan& plan, ExecutionContext& ctx, const ToolRegistry& registry,
                                 const ResolveOptions& options) {
  PlanResult result;
  auto stop = [&](std::size_t i, std::string why) {
    result.failed_step = i;
    result.error = std::move(why);
    ctx.add_message(Role::system, fmt::format("Plan stopped at subtask {} ({}): {}", i,
                                              detail::excerpt(plan.subtasks[i].description), result.error));
    return result;
  };
  if (auto problem = check_plan(plan, ctx, registry, options)) return stop(problem->step, problem->reason);
  for (std::size_t i = 0; i < plan.subtasks.size(); ++i) {
    try {
      ExecutionResult step = execute(plan.subtasks[i].call, ctx, registry, options);
      const bool ok = step.success;
      std::string error = step.error;
      result.steps.push_back(std::move(step));
      if (!ok) return stop(i, std::move(error));
    } catch (const error& e) {
      ExecutionResult failed;
      failed.tool = plan.subtasks[i].call.tool;
      failed.error = e.what();
      failed.result = ToolResult::failure(e.what());
      result.steps.push_back(std::move(failed));
      return stop(i, e.what());
    }
  }
  result.success = true;
  return result;
}

CAIRN_INLINE void to_json(nlohmann::json& j, const Plan& p) { j = {{"subtasks", p.subtasks}}; }

CAIRN_END_NAMESPACE
