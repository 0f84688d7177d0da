// cairn — plans: a model's task decomposition ({"subtasks": [{description, tool, inputs, outputs}]}) run in order.
//
// Each subtask is a ToolCall with a description. run_plan() executes them one after the other in one context, so a
// subtask can use "@name" for the outputs of the subtasks before it. The first failure stops the plan; what the
// finished subtasks stored stays.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/context/execution_context.hpp"
#include "cairn/context/resolve.hpp"
#include "cairn/context/tool.hpp"
#include "cairn/detail/json.hpp"
#include "cairn/error.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

/// One step of a plan.
struct PlanStep {
  std::string description;
  ToolCall call;
};

/// A task decomposition.
struct Plan {
  static constexpr std::size_t max_subtasks = 1000;

  std::vector<PlanStep> subtasks;

  /// Reads a plan from its JSON form. Throws cairn::parse_error naming what is wrong and where
  /// ("plan: subtasks[2].outputs[0].type: missing"), cairn::limit_exceeded for more than max_subtasks steps or
  /// nesting deeper than `limits.max_depth`.
  static Plan from_json(const nlohmann::json& j, const JsonLimits& limits = {}) {
    detail::check_model_json_depth(j, limits, "plan");
    return read(j);
  }

  /// Parses a model's reply (JSON text, optionally in a Markdown code fence).
  static Plan parse(std::string_view text, const JsonLimits& limits = {}) {
    return read(detail::parse_json(detail::strip_code_fence(text), limits, "plan"));
  }

 private:
  static Plan read(const nlohmann::json& j) {
    const detail::ModelInput in("plan", "");
    if (!j.is_object()) in.fail("", fmt::format("expected a JSON object, got {}", j.type_name()));
    const auto* subtasks = in.member(j, "subtasks");
    if (!subtasks || subtasks->is_null()) in.fail("subtasks", "missing");
    if (!subtasks->is_array()) in.fail("subtasks", fmt::format("expected an array, got {}", subtasks->type_name()));
    if (subtasks->size() > max_subtasks) {
      throw limit_exceeded(fmt::format("plan: subtasks: {} subtasks, more than the limit of {}", subtasks->size(),
                                       max_subtasks));
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
};

inline void to_json(nlohmann::json& j, const PlanStep& s) {
  j = s.call;
  j["description"] = s.description;
}

inline void to_json(nlohmann::json& j, const Plan& p) { j = {{"subtasks", p.subtasks}}; }

/// What run_plan() did.
struct PlanResult {
  bool success = false;
  std::vector<ExecutionResult> steps;  ///< one per subtask that ran, in order (the failed one last)
  std::optional<std::size_t> failed_step;  ///< index of the subtask that stopped the plan
  std::string error;                       ///< why it stopped; empty on success
};

/// Why a plan cannot start: the subtask at fault and the reason.
struct PlanProblem {
  std::size_t step;
  std::string reason;
};

/// The first problem that would stop `plan` before any tool runs, or nothing: a tool the registry lacks, or a
/// reference to a name that neither `ctx` holds nor an earlier subtask outputs.
inline std::optional<PlanProblem> check_plan(const Plan& plan, const ExecutionContext& ctx,
                                             const ToolRegistry& registry, const ResolveOptions& options = {}) {
  std::unordered_set<std::string> produced;
  for (std::size_t i = 0; i < plan.subtasks.size(); ++i) {
    const ToolCall& call = plan.subtasks[i].call;
    if (!registry.find(call.tool)) {
      return PlanProblem{i, fmt::format("Tool not found: {}", detail::excerpt(call.tool))};
    }
    for (const std::string& name : references(call.inputs, options)) {
      if (!produced.count(name) && !ctx.has_artifact(name)) {
        return PlanProblem{
            i, fmt::format("@{} is neither in the context nor an output of an earlier subtask", name)};
      }
    }
    for (const OutputSpec& o : call.outputs) produced.insert(o.name);
  }
  return std::nullopt;
}

/// Runs the subtasks of `plan` in order in `ctx`. Before anything runs, check_plan() must pass; otherwise nothing
/// runs and the result says why (failed_step is the subtask at fault). A subtask that fails (the tool fails, or
/// execute() throws a cairn::error) stops the plan: the outputs of the finished subtasks stay bound, the failure is
/// logged (`Plan stopped at subtask <i> (<description>): <reason>`, role system) and reported.
inline PlanResult run_plan(const Plan& plan, ExecutionContext& ctx, const ToolRegistry& registry,
                           const ResolveOptions& options = {}) {
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

CAIRN_END_NAMESPACE
