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
  static Plan from_json(const nlohmann::json& j, const JsonLimits& limits = {});

  /// Parses a model's reply (JSON text, optionally in a Markdown code fence).
  static Plan parse(std::string_view text, const JsonLimits& limits = {});

 private:
  static Plan read(const nlohmann::json& j);
};

void to_json(nlohmann::json& j, const PlanStep& s);

void to_json(nlohmann::json& j, const Plan& p);

/// What run_plan() did.
struct PlanResult {
  bool success = false;
  std::vector<ExecutionResult> steps;      ///< one per subtask that ran, in order (the failed one last)
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
std::optional<PlanProblem> check_plan(const Plan& plan, const ExecutionContext& ctx, const ToolRegistry& registry,
                                      const ResolveOptions& options = {});

/// Runs the subtasks of `plan` in order in `ctx`. Before anything runs, check_plan() must pass; otherwise nothing
/// runs and the result says why (failed_step is the subtask at fault). A subtask that fails (the tool fails, or
/// execute() throws a cairn::error) stops the plan: the outputs of the finished subtasks stay bound, the failure is
/// logged (`Plan stopped at subtask <i> (<description>): <reason>`, role system) and reported.
PlanResult run_plan(const Plan& plan, ExecutionContext& ctx, const ToolRegistry& registry,
                    const ResolveOptions& options = {});

CAIRN_END_NAMESPACE

#ifndef CAIRN_COMPILED_LIB
#include "cairn/context/plan-inl.hpp"
#endif
