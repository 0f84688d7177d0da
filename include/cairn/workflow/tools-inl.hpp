// cairn — the function bodies of cairn/workflow/tools.hpp (docs/api.md, "Compiled mode"). Header-only, the
// default, that header includes this file and CAIRN_INLINE is `inline`; with CAIRN_COMPILED_LIB they are
// compiled once, into cairn::compiled (src/compiled/), and the header only declares them.
#pragma once

#include "cairn/version.hpp"
#include "cairn/workflow/tools.hpp"

CAIRN_BEGIN_NAMESPACE

CAIRN_INLINE WorkflowTools::WorkflowTools(StateFile file, WorkflowTemplate tmpl, ArtifactObserver observer,
                                          std::shared_ptr<Observer> events)
    : impl_(std::make_shared<const Impl>(
          Impl{std::make_shared<const Keeper<StateFile>>(with_events(std::move(file), std::move(events))),
               std::move(tmpl), std::move(observer)})) {
  build();
}

CAIRN_INLINE WorkflowTools::WorkflowTools(RunWorkflowState state, WorkflowTemplate tmpl, ArtifactObserver observer,
                                          std::shared_ptr<Observer> events)
    : impl_(std::make_shared<const Impl>(
          Impl{std::make_shared<const Keeper<RunWorkflowState>>(with_events(std::move(state), std::move(events))),
               std::move(tmpl), std::move(observer)})) {
  build();
}

CAIRN_INLINE nlohmann::json WorkflowTools::definition(const WorkflowTool& t) {
  nlohmann::json d = {{"name", t.name}};
  if (!t.title.empty()) d["title"] = t.title;
  d["description"] = t.description;
  d["inputSchema"] = t.input_schema;
  if (!t.output_schema.is_null()) d["outputSchema"] = t.output_schema;
  if (!t.annotations.is_null()) d["annotations"] = t.annotations;
  return d;
}

CAIRN_INLINE nlohmann::json WorkflowTools::list() const {
  nlohmann::json out = {{"tools", nlohmann::json::array()}};
  for (const auto& t : tools_) out["tools"].push_back(definition(t));
  return out;
}

CAIRN_INLINE nlohmann::json WorkflowTools::hints(bool read_only, bool destructive, bool idempotent) {
  return {{"readOnlyHint", read_only},
          {+"destructiveHint", destructive},
          {+"idempotentHint", idempotent},
          {"openWorldHint", false}};
}

CAIRN_INLINE void WorkflowTools::describe(WorkflowTool& tool, std::string title, nlohmann::json annotations,
                                          nlohmann::json output_schema) {
  tool.title = std::move(title);
  tool.annotations = std::move(annotations);
  tool.output_schema = std::move(output_schema);
}

CAIRN_INLINE nlohmann::json WorkflowTools::call(std::string_view name, const nlohmann::json& arguments) const {
  for (const auto& t : tools_) {
    if (t.name == name) return t.handler(arguments);
  }
  return error_result(fmt::format("unknown tool '{}'", detail::excerpt(name)));
}

CAIRN_INLINE nlohmann::json WorkflowTools::ok_result(const nlohmann::json& value) {
  return {{"content", {{{"type", "text"}, {"text", dump(value)}}}}, {+"structuredContent", value}, {"isError", false}};
}

CAIRN_INLINE nlohmann::json WorkflowTools::error_result(const std::string& message) {
  const nlohmann::json value = {{"error", message}};
  return {{"content", {{{"type", "text"}, {"text", dump(value)}}}}, {+"structuredContent", value}, {"isError", true}};
}

CAIRN_INLINE std::string WorkflowTools::dump(const nlohmann::json& v) {
  return v.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

CAIRN_INLINE void WorkflowTools::check_args(std::string_view tool, Args a,
                                            std::initializer_list<std::string_view> known) {
  // MCP lets a client leave `arguments` out: null reads as {}.
  if (!a.is_object() && !a.is_null()) {
    throw invalid_argument(fmt::format("{}: arguments must be a JSON object", tool));
  }
  for (const auto& item : a.items()) {
    bool ok = false;
    for (auto k : known) ok = ok || item.key() == k;
    if (!ok) throw invalid_argument(fmt::format("{}: unknown argument '{}'", tool, detail::excerpt(item.key())));
  }
}

CAIRN_INLINE std::optional<std::string> WorkflowTools::opt_string(std::string_view tool, Args a, const char* key) {
  const auto it = a.find(key);
  if (it == a.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) throw invalid_argument(fmt::format("{}: {} must be a string", tool, key));
  return it->get<std::string>();
}

CAIRN_INLINE nlohmann::json WorkflowTools::guarded(const std::function<nlohmann::json()>& body) {
  try {
    return ok_result(body());
  } catch (const std::exception& e) {
    return error_result(e.what());
  }
}

CAIRN_INLINE std::vector<Task> WorkflowTools::read_tasks(Args list) {
  constexpr std::string_view tool = "workflow_set_tasks";
  if (!list.is_array()) throw invalid_argument(fmt::format("{}: tasks must be an array", tool));
  if (list.size() > WorkflowMachine::max_tasks) {
    throw limit_exceeded(
        fmt::format("{}: {} tasks, more than the limit of {}", tool, list.size(), WorkflowMachine::max_tasks));
  }
  std::vector<Task> tasks;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto& t = list[i];
    const std::string where = fmt::format("{}: tasks[{}]", tool, i);
    if (!t.is_object()) throw invalid_argument(where + " must be an object");
    for (const auto& item : t.items()) {
      if (item.key() != "id" && item.key() != "title" && item.key() != "description" && item.key() != "depends_on") {
        throw invalid_argument(fmt::format("{}.{} is not a known field", where, detail::excerpt(item.key())));
      }
    }
    Task task;
    const auto id = t.find("id");
    if (id == t.end() || !id->is_string()) throw invalid_argument(where + ".id must be a string");
    task.id = id->get<std::string>();
    const auto title = t.find("title");
    if (title == t.end() || !title->is_string()) throw invalid_argument(where + ".title must be a string");
    task.title = title->get<std::string>();
    if (const auto d = t.find("description"); d != t.end() && !d->is_null()) {
      if (!d->is_string()) throw invalid_argument(where + ".description must be a string");
      task.description = d->get<std::string>();
    }
    if (const auto deps = t.find("depends_on"); deps != t.end() && !deps->is_null()) {
      if (!deps->is_array()) throw invalid_argument(where + ".depends_on must be an array of task ids");
      for (const auto& dep : *deps) {
        if (!dep.is_string()) throw invalid_argument(where + ".depends_on must be an array of task ids");
        task.depends_on.push_back(dep.get<std::string>());
      }
    }
    tasks.push_back(std::move(task));
  }
  return tasks;
}

CAIRN_INLINE void WorkflowTools::build() {
  const auto impl = impl_;
  // Long string literals in these JSON initializer lists are written +"..." so that they decay to const char*:
  // nlohmann instantiates its constructors once per char-array length, and every distinct length costs each
  // translation unit that includes cairn ~40 ms of g++ (docs/performance.md, "Cost of including cairn").
  const nlohmann::json no_args = {
      {"type", "object"}, {"properties", nlohmann::json::object()}, {+"additionalProperties", false}};
  // What the tools return (outputSchema): a StatusReport, as status, start and advance give it.
  const nlohmann::json text = {{"type", "string"}};
  const nlohmann::json natural = {{"type", "integer"}, {"minimum", 0}};
  const nlohmann::json texts = {{"type", "array"}, {"items", text}};
  const nlohmann::json status_schema = {
      {"type", "object"},
      {"properties",
       {{"status", {{"type", "string"}, {"enum", {"running", "complete", "failed"}}}},
        {"step", text},
        {"step_type", {{"type", "string"}, {"enum", {"action", "loop", "ralph"}}}},
        {"task",
         {{"type", "object"},
          {"properties",
           {{"index", natural}, {"id", text}, {"title", text}, {"total", natural}, {"description", text}}},
          {"required", {"index", "id", "title", "total"}}}},
        {"sub_step", text},
        {"sub_step_index", natural},
        {"total_sub_steps", natural},
        {"ralph_iteration", natural},
        {"ralph_total", natural},
        {"attempt", natural},
        {+"waiting_for_tasks", {{"type", "boolean"}}},
        {"agent", {{"type", {"string", "null"}}, {"description", +"The sub-agent to delegate to, if any."}}},
        {"delegate", {{"type", "boolean"}}},
        {"instructions", text},
        {"progress",
         {{"type", "object"},
          {"properties",
           {{"current_step", natural},
            {"total_steps", natural},
            {"completed_tasks", natural},
            {"failed_tasks", natural},
            {"total_tasks", natural},
            {+"current_task_progress", text}}},
          {"required", {"current_step", "total_steps"}}}},
        {"artefacts", texts},
        {"summary", text},
        {"failure_reason", text}}},
      {"required",
       {"status", "step", "step_type", "attempt", "agent", "delegate", "instructions", "progress", "artefacts"}}};

  tools_.push_back(
      {"workflow_start",
       "Start the workflow and return the first step's instructions. If the workflow was started before, return "
       "its current status instead (nothing is reset).",
       {{"type", "object"},
        {"properties",
         {{"summary",
           {{"type", "string"},
            {"description", +"A short summary of the user's request (at most 100 characters are kept)."}}}}},
        {+"additionalProperties", false}},
       [impl](Args a) {
         return guarded([&] {
           check_args("workflow_start", a, {"summary"});
           const auto summary = opt_string("workflow_start", a, "summary");
           return nlohmann::json(impl->file->start(impl->tmpl, summary));
         });
       }});

  describe(tools_.back(), "Start the workflow", hints(false, false, true), status_schema);

  tools_.push_back(
      {"workflow_set_tasks",
       "Set the tasks a loop step works through; each task goes through every sub-step of the loop. Tasks may be "
       "set ahead, before the loop is reached. Tasks run in dependency order (depends_on); an empty list skips "
       "the loop.",
       {{"type", "object"},
        {"properties",
         {{"loop_id", {{"type", "string"}, {"description", +"The id of the loop step."}}},
          {"tasks",
           {{"type", "array"},
            {"maxItems", WorkflowMachine::max_tasks},
            {"items",
             {{"type", "object"},
              {"properties",
               {{"id",
                 {{"type", "string"}, {"pattern", +"^[A-Za-z0-9_-]{1,128}$"}, {"description", "Unique task id."}}},
                {"title", {{"type", "string"}, {"minLength", 1}, {"description", "Short title."}}},
                {"description", {{"type", "string"}, {"description", +"Optional details."}}},
                {"depends_on",
                 {{"type", "array"},
                  {"items", {{"type", "string"}}},
                  {"description", +"Ids of tasks of this loop that must be done first."}}}}},
              {"required", {"id", "title"}},
              {+"additionalProperties", false}}}}}}},
        {"required", {"loop_id", "tasks"}},
        {+"additionalProperties", false}},
       [impl](Args a) {
         return guarded([&] {
           constexpr std::string_view tool = "workflow_set_tasks";
           check_args(tool, a, {"loop_id", "tasks"});
           const auto loop_id = opt_string(tool, a, "loop_id");
           if (!loop_id) throw invalid_argument("workflow_set_tasks: loop_id is required");
           const auto tasks_arg = a.find("tasks");
           if (tasks_arg == a.end()) throw invalid_argument("workflow_set_tasks: tasks is required");
           auto tasks = read_tasks(*tasks_arg);
           const std::size_t count = tasks.size();
           return impl->update([&](WorkflowMachine& m) {
             nlohmann::json status = m.set_tasks(*loop_id, tasks);  // a copy: the call may be tried again
             nlohmann::json order = nlohmann::json::array();
             for (const auto& t : m.state().tasks.at(*loop_id)) order.push_back(t.id);
             return nlohmann::json{{"tasks_set", count}, {"order", order}, {"status", status}};
           });
         });
       }});

  describe(tools_.back(), "Set a loop's tasks", hints(false, true, true),
           {{"type", "object"},
            {"properties", {{"tasks_set", natural}, {"order", texts}, {"status", status_schema}}},
            {"required", {"tasks_set", "order", "status"}}});

  tools_.push_back({"workflow_status",
                    "The current position with everything needed to act: step, task and sub-step (in loops), "
                    "ralph_iteration and ralph_total (in ralph steps), the agent to delegate to, instructions, "
                    "progress and registered artefacts.",
                    no_args, [impl](Args a) {
                      return guarded([&] {
                        check_args("workflow_status", a, {});
                        auto status = impl->read([](const WorkflowMachine& m) { return m.status(); });
                        if (!status) throw state_error("the workflow is not started: call workflow_start first");
                        return nlohmann::json(*status);
                      });
                    }});

  describe(tools_.back(), "Workflow status", hints(true, false, true), status_schema);

  tools_.push_back(
      {"workflow_advance",
       "Finish the current step (or sub-step, or ralph iteration) and move to the next. Give the output: a "
       "summary of what was done; later steps can read it with workflow_context. Set success to false when the "
       "work failed: a loop sub-step then follows its on_fail rule (retry, skip the task, or abort the "
       "workflow); other steps are retried. A ralph step returns the SAME step again until its last iteration: "
       "work on it again to improve the result.",
       {{"type", "object"},
        {"properties",
         {{"output",
           {{"type", "string"}, {"maxLength", max_output_bytes}, {"description", +"What was done at this step."}}},
          {"success",
           {{"type", "boolean"}, {"default", true}, {"description", +"false when the work at this step failed."}}}}},
        {"required", {"output"}},
        {+"additionalProperties", false}},
       [impl](Args a) {
         return guarded([&] {
           constexpr std::string_view tool = "workflow_advance";
           check_args(tool, a, {"output", "success"});
           const auto output = opt_string(tool, a, "output");
           if (!output) throw invalid_argument("workflow_advance: output is required");
           if (output->size() > max_output_bytes) {
             throw limit_exceeded(fmt::format("workflow_advance: output is {} bytes, more than the limit of {}",
                                              output->size(), max_output_bytes));
           }
           bool success = true;
           if (const auto s = a.find("success"); s != a.end() && !s->is_null()) {
             if (!s->is_boolean()) throw invalid_argument("workflow_advance: success must be true or false");
             success = s->get<bool>();
           }
           return nlohmann::json(impl->update([&](WorkflowMachine& m) {
             return m.advance(*output, success ? StepResult::succeeded : StepResult::failed);
           }));
         });
       }});

  describe(tools_.back(), "Finish the current step", hints(false, false, false), status_schema);

  tools_.push_back({"workflow_context",
                    "The outputs of the steps done so far, keyed by step path: \"plan\", \"review.2\" (ralph "
                    "iteration), \"implement.task-1.test\" (loop step, task, sub-step).",
                    no_args, [impl](Args a) {
                      return guarded([&] {
                        check_args("workflow_context", a, {});
                        auto context = impl->read([](const WorkflowMachine& m) { return m.context(); });
                        if (!context) throw state_error("the workflow is not started: call workflow_start first");
                        return nlohmann::json(*context);
                      });
                    }});

  describe(tools_.back(), "Outputs of the steps done", hints(true, false, true),
           {{"type", "object"},
            {"description", +"Each finished step's output, keyed by step path."},
            {+"additionalProperties", text}});

  tools_.push_back(
      {"register_artefacts",
       "Register files created during the current step as artefacts of the workflow; they are listed in every "
       "status. Paths are absolute or relative to the workspace and must name existing files inside it. Returns "
       "which paths were registered, which were already registered (duplicates) and which were invalid.",
       {{"type", "object"},
        {"properties",
         {{"paths",
           {{"type", "array"},
            {"maxItems", max_paths},
            {"items", {{"type", "string"}}},
            {"description", +"File paths, absolute or relative to the workspace root."}}}}},
        {"required", {"paths"}},
        {+"additionalProperties", false}},
       [impl](Args a) {
         return guarded([&] {
           constexpr std::string_view tool = "register_artefacts";
           check_args(tool, a, {"paths"});
           const auto p = a.find("paths");
           if (p == a.end() || !p->is_array()) throw invalid_argument("register_artefacts: paths must be an array");
           if (p->size() > max_paths) {
             throw limit_exceeded(
                 fmt::format("register_artefacts: {} paths, more than the limit of {}", p->size(), max_paths));
           }
           // A path that is not a string is reported as invalid (as its JSON text), like a missing file.
           std::vector<std::string> paths;
           std::vector<std::string> not_strings;
           for (const auto& v : *p) {
             if (v.is_string())
               paths.push_back(v.get<std::string>());
             else
               not_strings.push_back(v.dump());
           }
           auto result = impl->update([&](WorkflowMachine& m) {
             if (impl->observer) m.set_artifact_observer(impl->observer);
             return m.register_artifacts(paths);
           });
           for (auto& v : not_strings) result.refuse(std::move(v), "not a string");
           return nlohmann::json(result);
         });
       }});

  describe(
      tools_.back(), "Register files as artefacts", hints(false, false, true),
      {{"type", "object"},
       {"properties", {{"registered", texts}, {"duplicates", texts}, {"invalid", texts}, {"invalid_reasons", texts}}},
       {"required", {"registered", "duplicates", "invalid", "invalid_reasons"}}});
}

CAIRN_END_NAMESPACE
