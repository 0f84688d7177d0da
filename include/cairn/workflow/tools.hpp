// cairn — WorkflowTools: the workflow as six JSON-in/JSON-out tools (workflow_start, workflow_set_tasks,
// workflow_status, workflow_advance, workflow_context, register_artefacts), each with its JSON Schema, ready to be
// served over MCP.
//
// Every handler takes the tool's `arguments` object and returns an MCP `CallToolResult`:
//
//     {"content": [{"type": "text", "text": "<the result as JSON text>"}],
//      "structuredContent": <the result as JSON>, "isError": false}
//
// Bad arguments and refused transitions come back as results too, with `isError: true` and the result
// `{"error": "<message>"}`, so the model sees what went wrong; handlers never throw. The state lives in a StateFile
// (every call one load-modify-save under its lock, so several server processes may serve the same workspace) or in
// a run of a run journal (RunWorkflowState: every change one conditional append, so several servers on several
// machines may serve the same workflow).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/error.hpp"
#include "cairn/version.hpp"
#include "cairn/workflow/machine.hpp"
#include "cairn/workflow/run_state.hpp"
#include "cairn/workflow/state_file.hpp"
#include "cairn/workflow/template.hpp"

CAIRN_BEGIN_NAMESPACE

/// One tool: what an MCP server lists (`name`, `description`, `inputSchema`, `title`, `annotations`,
/// `outputSchema`) and the handler it calls. The last three are optional: a tool made with the first four only
/// (`{name, description, schema, handler}`) is listed without them.
struct WorkflowTool {
  std::string name;
  std::string description;
  nlohmann::json input_schema;
  std::function<nlohmann::json(const nlohmann::json& arguments)> handler;  ///< returns a CallToolResult
  std::string title = {};  ///< a human-readable name for hosts to show; empty: none
  /// MCP ToolAnnotations: {"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"} (hints a host may
  /// use to auto-approve reads or warn before deletes); null: none.
  nlohmann::json annotations = {};
  /// JSON Schema of the handler's `structuredContent` when the call succeeds (an error result carries
  /// {"error": message} instead, which mcp::Server sends as text only); null: none.
  nlohmann::json output_schema = {};
};

/// The workflow tools of one workspace. Thread-safe; the handlers stay valid after this object is gone.
///
///     cairn::WorkflowTools tools(cairn::StateFile(workspace), tmpl);
///     auto result = tools.call("workflow_advance", {{"output", "Plan written to plan.md"}});
///     bool failed = result["isError"];
class WorkflowTools {
 public:
  static constexpr std::size_t max_output_bytes = 1u << 20;  ///< of one workflow_advance output
  static constexpr std::size_t max_paths = 10000;            ///< per register_artefacts call

  /// Tools over `file`; workflow_start starts `tmpl` when the workspace has no state yet (a saved workflow keeps
  /// the template it was started with). `observer`, when set, hears of every newly registered artefact (see
  /// artifact_recorder for one that stores `file` artifacts). `events`, when set, is the machines' event observer
  /// (StateFile::set_observer: workflow transitions and registrations, docs/observe.md).
  WorkflowTools(StateFile file, WorkflowTemplate tmpl, ArtifactObserver observer = {},
                std::shared_ptr<Observer> events = nullptr);

  /// Tools over the workflow of a run in a run journal (see RunWorkflowState); otherwise as above.
  WorkflowTools(RunWorkflowState state, WorkflowTemplate tmpl, ArtifactObserver observer = {},
                std::shared_ptr<Observer> events = nullptr);

  const std::vector<WorkflowTool>& tools() const noexcept { return tools_; }

  /// What MCP `tools/list` shows of one tool: name, title (when set), description, inputSchema, outputSchema and
  /// annotations (when set).
  static nlohmann::json definition(const WorkflowTool& tool);

  /// The result of MCP `tools/list`: `{"tools": [{"name", "title", "description", "inputSchema", "outputSchema",
  /// "annotations"}, ...]}`.
  nlohmann::json list() const;

  /// Calls tool `name`; an unknown name is an error result, like any other.
  nlohmann::json call(std::string_view name, const nlohmann::json& arguments) const;

  /// A successful CallToolResult carrying `value`.
  // +"structuredContent": see the note above the tool schemas below (include cost).
  static nlohmann::json ok_result(const nlohmann::json& value);

  /// A failed CallToolResult carrying `{"error": message}`.
  static nlohmann::json error_result(const std::string& message);

  /// MCP ToolAnnotations for a tool that works only on the workspace or the store (`openWorldHint` false).
  static nlohmann::json hints(bool read_only, bool destructive, bool idempotent);

  /// Sets a tool's title, annotations and output schema.
  static void describe(WorkflowTool& tool, std::string title, nlohmann::json annotations, nlohmann::json output_schema);

 private:
  // Where the state lives: a StateFile or a RunWorkflowState, behind one interface.
  struct StateKeeper {
    virtual ~StateKeeper() = default;
    virtual StatusReport start(const WorkflowTemplate& tmpl, const std::optional<std::string>& summary) const = 0;
    virtual void update(const std::function<void(WorkflowMachine&)>& f) const = 0;
    virtual bool read(const std::function<void(const WorkflowMachine&)>& f) const = 0;
  };
  template <class S>
  struct Keeper final : StateKeeper {
    explicit Keeper(S s) : state(std::move(s)) {}
    StatusReport start(const WorkflowTemplate& tmpl, const std::optional<std::string>& summary) const override {
      return state.start(tmpl, summary);
    }
    void update(const std::function<void(WorkflowMachine&)>& f) const override { state.update(f); }
    bool read(const std::function<void(const WorkflowMachine&)>& f) const override {
      return state
          .read([&](const WorkflowMachine& m) {
            f(m);
            return true;
          })
          .has_value();
    }
    S state;
  };
  struct Impl {
    std::shared_ptr<const StateKeeper> file;
    WorkflowTemplate tmpl;
    ArtifactObserver observer;

    template <class F>
    auto update(F&& f) const {
      std::optional<std::invoke_result_t<F, WorkflowMachine&>> out;
      file->update([&](WorkflowMachine& m) { out = f(m); });
      return std::move(*out);
    }
    template <class F>
    auto read(F&& f) const {
      std::optional<std::invoke_result_t<F, const WorkflowMachine&>> out;
      file->read([&](const WorkflowMachine& m) { out = f(m); });
      return out;
    }
  };
  using Args = const nlohmann::json&;

  template <class S>
  static S with_events(S state, std::shared_ptr<Observer> events) {
    if (events) state.set_observer(std::move(events));
    return state;
  }

  static std::string dump(const nlohmann::json& v);

  // Argument readers: each names the tool and the argument.
  static void check_args(std::string_view tool, Args a, std::initializer_list<std::string_view> known);
  static std::optional<std::string> opt_string(std::string_view tool, Args a, const char* key);

  static nlohmann::json guarded(const std::function<nlohmann::json()>& body);

  static std::vector<Task> read_tasks(Args list);

  void build();

  std::shared_ptr<const Impl> impl_;
  std::vector<WorkflowTool> tools_;
};

CAIRN_END_NAMESPACE

#ifndef CAIRN_COMPILED_LIB
#include "cairn/workflow/tools-inl.hpp"
#endif
