// The cairn-mcp command line: every bad command line exits with status 2 and one line on stderr (docs/mcp.md);
// --help and --version exit 0. Runs the real executable (CAIRN_MCP_EXE) with stdin from /dev/null.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "catch.hpp"

extern char** environ;

namespace {

struct Outcome {
  int status = -1;  // the exit status, or -1 when the process did not exit normally
  std::string out;
  std::string err;
};

std::string slurp(const std::string& path) {
  std::string text;
  if (FILE* f = std::fopen(path.c_str(), "rb")) {
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
    std::fclose(f);
  }
  return text;
}

// Runs cairn-mcp with `args`, stdout and stderr to files (no pipe can fill up and block the child).
Outcome run_mcp(const std::vector<std::string>& args) {
  char dir_template[] = "/tmp/cairn-mcp-cli-XXXXXX";
  const char* dir = mkdtemp(dir_template);
  REQUIRE(dir != nullptr);
  const std::string out_path = std::string(dir) + "/out";
  const std::string err_path = std::string(dir) + "/err";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<std::string> argv_strings{CAIRN_MCP_EXE};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_strings) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, CAIRN_MCP_EXE, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  REQUIRE(rc == 0);
  int wstatus = 0;
  REQUIRE(waitpid(pid, &wstatus, 0) == pid);
  Outcome o;
  if (WIFEXITED(wstatus)) o.status = WEXITSTATUS(wstatus);
  o.out = slurp(out_path);
  o.err = slurp(err_path);
  std::remove(out_path.c_str());
  std::remove(err_path.c_str());
  rmdir(dir);
  return o;
}

// Exactly one line, starting with "cairn-mcp: ".
bool one_line(const std::string& err) {
  return err.rfind("cairn-mcp: ", 0) == 0 && !err.empty() && err.back() == '\n' && err.find('\n') == err.size() - 1;
}

}  // namespace

TEST_CASE("cairn-mcp: every bad command line exits 2 with one line on stderr") {
  struct Case {
    std::vector<std::string> args;
    const char* says;
  };
  const std::vector<Case> cases = {
      {{"--workspace", "/no/such/folder/cairn"}, "--workspace"},
      {{"--workspace"}, "--workspace"},
      {{"--no-such-option"}, "--no-such-option"},
      {{"extra-argument"}, "extra-argument"},
      {{"--tenant="}, "--tenant"},
      {{"--tenant"}, "--tenant"},
      {{"--workflow", "/no/such/template.json"}, "--workflow"},
      {{"--store", "nosuch:thing"}, "--store"},
      {{"--quiet", "--store", "nosuch:thing"}, "--store"},
      {{"--quiet=maybe"}, "--quiet"},
      // --http: a bad address, and one that cannot be bound here (TEST-NET-1 is no local address). A build without
      // cpp-httplib refuses every --http the same way, naming it.
      {{"--http", "nonsense"}, "--http"},
      {{"--http", "127.0.0.1:99999"}, "--http"},
      {{"--http", "127.0.0.1:"}, "--http"},
      {{"--http", ":8080"}, "--http"},
      {{"--http", "192.0.2.1:8080"}, "--http"},
      {{"--http", "8080", "--http-threads", "0"}, "--http-threads"},
      {{"--http", "8080", "--http-max-connections", "0"}, "--http-max-connections"},
      {{"--http", "8080", "--http-request-timeout", "0"}, "--http-request-timeout"},
      {{"--http", "8080", "--http-idle-timeout", "1"}, "--http-idle-timeout"},
      {{"--http", "8080", "--http-idle-timeout", "soon"}, "--http-idle-timeout"},
      // Tokens only over HTTP, and never without the audience they must carry.
      {{"--auth-key", CAIRN_MCP_EXE}, "--auth-key needs --http"},
      {{"--http", "127.0.0.1:0", "--auth-key", CAIRN_MCP_EXE}, "--auth"},
      {{"--auth-key", "/no/such/key.pem"}, "--auth-key"},
  };
  for (const auto& c : cases) {
    std::string joined;
    for (const auto& a : c.args) joined += " [" + a + "]";
    INFO("cairn-mcp" << joined);
    const Outcome o = run_mcp(c.args);
    INFO("stderr: " << o.err);
    CHECK(o.status == 2);
    CHECK(one_line(o.err));
    CHECK(o.err.find(c.says) != std::string::npos);
    CHECK(o.out.empty());  // stdout carries JSON-RPC only
  }
}

TEST_CASE("cairn-mcp: --help and --version exit 0 on stdout") {
  Outcome help = run_mcp({"--help"});
  CHECK(help.status == 0);
  CHECK(help.out.find("--workspace") != std::string::npos);
  CHECK(help.err.empty());
  Outcome version = run_mcp({"--version"});
  CHECK(version.status == 0);
  CHECK(version.out.rfind("cairn-mcp ", 0) == 0);
}
