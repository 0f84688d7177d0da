// tool_chain — seed 000's flow for real: a model's plan writes a server script, reads a JSON config and starts the
// script as a real process, each step handing its output to the next as "@name".
//
// Everything happens in a fresh temporary folder: file_write writes a real file (output server_file, its path),
// file_read parses a real JSON file (output app_config, the data), and run_command receives "@server_file" and
// "@app_config", spawns a real short-lived child process with the config as its environment, waits for it and
// records its pid and exit code (output server_process). Then it prints the conversation, the artifact catalog
// and the prompt the model would see next.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cairn/cairn.hpp"

extern char** environ;

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

cairn::ToolResult file_write(const json& in) {
  const std::string path = in.at("filepath").get<std::string>();
  const std::string content = in.at("content").get<std::string>();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return cairn::ToolResult::failure(fmt::format("cannot open {} for writing", path));
  out << content;
  out.close();
  if (!out) return cairn::ToolResult::failure(fmt::format("cannot write {}", path));
  return cairn::ToolResult::ok(path, {{"size", content.size()}, {"encoding", "utf-8"}});
}

cairn::ToolResult file_read(const json& in) {
  const std::string path = in.at("filepath").get<std::string>();
  std::ifstream file(path, std::ios::binary);
  if (!file) return cairn::ToolResult::failure(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  // The file is outside input: parse it within limits.
  return cairn::ToolResult::ok(cairn::detail::parse_json(text, cairn::JsonLimits{}, path), {{"source", path}});
}

// Starts `command args...` with `env` (an object) added to the environment, captures its standard output, waits
// for it, and returns {pid, exit_code, stdout}.
cairn::ToolResult run_command(const json& in) {
  std::vector<std::string> argv_text{in.at("command").get<std::string>()};
  const json args = in.value("args", json::array());
  const json env = in.value("env", json::object());
  for (const auto& a : args) argv_text.push_back(a.get<std::string>());
  std::vector<std::string> env_text;
  for (char** e = environ; *e; ++e) env_text.emplace_back(*e);
  for (const auto& [key, value] : env.items()) {
    env_text.push_back(key + "=" + (value.is_string() ? value.get<std::string>() : value.dump()));
  }
  std::vector<char*> argv, envp;
  for (auto& s : argv_text) argv.push_back(s.data());
  argv.push_back(nullptr);
  for (auto& s : env_text) envp.push_back(s.data());
  envp.push_back(nullptr);

  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return cairn::ToolResult::failure(fmt::format("pipe: {}", std::strerror(errno)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[1]);
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  if (rc != 0) {
    ::close(pipe_fds[0]);
    return cairn::ToolResult::failure(fmt::format("cannot start {}: {}", argv_text[0], std::strerror(rc)));
  }
  std::string output;
  char buf[4096];
  for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    output.append(buf, static_cast<std::size_t>(n));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const int exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return cairn::ToolResult::ok({{"pid", pid}, {"exit_code", exit_code}, {"stdout", output}},
                               {{"command", argv_text[0]}});
}

}  // namespace

int main() {
  // A fresh temporary folder, removed at the end.
  std::string pattern = (fs::temp_directory_path() / "cairn-tool-chain-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) {
    std::perror("mkdtemp");
    return 1;
  }
  const fs::path dir = pattern;
  const fs::path config_path = dir / "app.json";
  const fs::path server_path = dir / "server.sh";
  std::ofstream(config_path) << R"({"HOST": "127.0.0.1", "PORT": 3000})";

  cairn::ToolRegistry tools;
  tools.add({"file_write", "Writes text to a file and outputs its path",
             json::parse(R"({"type": "object", "required": ["filepath", "content"],
                             "properties": {"filepath": {"type": "string"}, "content": {"type": "string"}}})"),
             file_write});
  tools.add({"file_read", "Reads a JSON file and outputs its data",
             json::parse(R"({"type": "object", "required": ["filepath"],
                             "properties": {"filepath": {"type": "string"}}})"),
             file_read});
  tools.add({"run_command", "Runs a command to completion and outputs its pid, exit code and output",
             json::parse(R"({"type": "object", "required": ["command"],
                             "properties": {"command": {"type": "string"},
                                            "args": {"type": "array", "items": {"type": "string"}},
                                            "env": {"type": "object"}}})"),
             run_command});

  auto store = std::make_shared<cairn::InMemoryArtifactStore>();
  cairn::ExecutionContext ctx(store, "demo");
  ctx.add_message(cairn::Role::user, "Create a web server for my application");

  // What a model would answer to build_prompt: the seed's task decomposition.
  const json plan_json = {
      {"subtasks",
       {{{"description", "Write server code to file"},
         {"tool", "file_write"},
         {"inputs",
          {{"filepath", server_path.string()}, {"content", "echo \"server listening on $HOST:$PORT\"\nexit 0\n"}}},
         {"outputs",
          {{{"name", "server_file"},
            {"type", "file"},
            {"description", "Server implementation file"},
            {"purpose", "File containing the server code"}}}}},
        {{"description", "Read configuration file"},
         {"tool", "file_read"},
         {"inputs", {{"filepath", config_path.string()}}},
         {"outputs",
          {{{"name", "app_config"},
            {"type", "data"},
            {"description", "Application configuration data"},
            {"purpose", "Configuration needed for server setup"}}}}},
        {{"description", "Start the server"},
         {"tool", "run_command"},
         {"inputs", {{"command", "sh"}, {"args", {"@server_file"}}, {"env", "@app_config"}}},
         {"outputs",
          {{{"name", "server_process"},
            {"type", "process"},
            {"description", "Server process"},
            {"purpose", "The process that served the request"}}}}}}}};
  const cairn::Plan plan = cairn::Plan::parse(plan_json.dump(2));
  const cairn::PlanResult result = cairn::run_plan(plan, ctx, tools);
  if (!result.success) {
    std::cerr << "plan failed at subtask " << *result.failed_step << ": " << result.error << "\n";
    return 1;
  }
  ctx.add_message(cairn::Role::assistant, "The server ran: see @server_process");

  std::cout << "== Conversation history\n" << cairn::format_conversation_history(ctx) << "\n\n";
  std::cout << "== Artifact catalog\n" << cairn::format_artifacts_catalog(ctx) << "\n\n";
  std::cout << "== Next prompt" << cairn::build_prompt("Check that the server answered", ctx, tools) << "\n\n";

  const json process = *ctx.get_artifact_value("server_process");
  const std::string written = [&] {
    std::ifstream f(server_path);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  }();
  std::cout << "== Process output\n" << process["stdout"].get<std::string>();
  const bool ok = process["exit_code"] == 0 && process["stdout"] == "server listening on 127.0.0.1:3000\n" &&
                  written.rfind("echo", 0) == 0 && process["pid"].get<long>() > 0;
  fs::remove_all(dir);
  std::cout << fmt::format("tool_chain: server_process pid={} exit_code={} {}\n", process["pid"].get<long>(),
                           process["exit_code"].get<int>(), ok ? "OK" : "UNEXPECTED");
  return ok ? 0 : 1;
}
