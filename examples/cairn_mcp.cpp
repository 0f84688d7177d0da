// cairn-mcp — an MCP server over stdio that gives any MCP host (Claude Desktop, an IDE, an agent runtime) cairn's
// workflow tools and artifact tools, without writing C++.
//
//   cairn-mcp --workspace /path/to/repo --workflow feature.yaml --tenant acme [--store memory:]
//   cairn-mcp --workspace /srv/repo --workflow feature.yaml --tenant acme --store postgres://db/agents --run feat-42
//
// With a durable store (sqlite: or postgres:) the workflow state lives in a run of that store's run journal, so
// several servers (on several machines) serve one workflow; with memory: it lives in <workspace>/workflow-state.json.
//
// Over stdio, stdout carries only JSON-RPC messages (one per line); every diagnostic goes to stderr. With
// --http HOST:PORT (when built with cpp-httplib) it serves Streamable HTTP on http://HOST:PORT/mcp instead. See
// docs/mcp.md.
#include <pthread.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <cairn/cairn.hpp>
#include <cairn/mcp/artifact_tools.hpp>
#include <cairn/mcp/server.hpp>
#include <cairn/store/open_store.hpp>
#if CAIRN_MCP_WITH_YAML
#include <cairn/workflow/yaml.hpp>
#endif
#if CAIRN_MCP_WITH_HTTP
#include "cairn_mcp_http.hpp"
#endif

namespace fs = std::filesystem;

namespace {

// The store behind `--store <url>`: whatever cairn::open_store knows in this build (memory:, sqlite:, postgres:).
std::shared_ptr<cairn::ArtifactStore> open_artifact_store(const std::string& url) {
  try {
    return cairn::open_store(url);
  } catch (const cairn::error& e) {
    throw cairn::invalid_argument(std::string("--store: ") + e.what());
  }
}

// A workflow template from a .yaml/.yml file (when built with cairn::yaml) or a JSON file.
cairn::WorkflowTemplate load_template(const fs::path& path) {
  const auto ext = path.extension().string();
  if (ext == ".yaml" || ext == ".yml") {
#if CAIRN_MCP_WITH_YAML
    return cairn::load_template_yaml_file(path);
#else
    throw cairn::invalid_argument(path.string() + ": YAML templates need cairn::yaml (build with CAIRN_WITH_YAML=ON)");
#endif
  }
  constexpr std::uintmax_t max_bytes = 4u * 1024u * 1024u;
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) throw cairn::storage_error(path.string() + ": " + ec.message());
  if (size > max_bytes) {
    throw cairn::limit_exceeded(path.string() + ": " + std::to_string(size) + " bytes, more than the limit of " +
                                std::to_string(max_bytes));
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) throw cairn::storage_error(path.string() + ": cannot be read");
  try {
    return cairn::WorkflowTemplate::parse(text.str());
  } catch (const cairn::error& e) {
    throw cairn::invalid_template(path.string() + ": " + e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"cairn-mcp: cairn's workflow and artifact tools as an MCP server over stdio", "cairn-mcp"};
  std::string workspace = ".";
  std::string workflow;
  std::string tenant = "default";
  std::string store_url = "memory:";
  std::string workflow_state = "auto";
  std::string run_id;
  bool quiet = false;
  std::string http;
  std::vector<std::string> allowed_origins;
  std::size_t http_threads = 32;
  std::size_t http_max_connections = 1000;
  int http_request_timeout = 30;
  int http_idle_timeout = 10;
  std::vector<std::string> auth_keys;
  std::string auth_audience;
  std::string auth_issuer;
  std::vector<std::string> auth_servers;
  std::string tenant_claim = "tenant";
  app.add_option("--workspace", workspace,
                 "Folder the workflow works in: holds workflow-state.json; register_artefacts paths resolve in it")
      ->check(CLI::ExistingDirectory)
      ->capture_default_str();
  app.add_option("--workflow", workflow, "Workflow template (.json, or .yaml/.yml); without it no workflow tools")
      ->check(CLI::ExistingFile);
  app.add_option("--tenant", tenant, "The one tenant every artifact tool works in")->capture_default_str();
  app.add_option("--store", store_url, "Store URL: memory:, sqlite:<path>, postgres:<conninfo> or postgresql://...")
      ->capture_default_str();
  app.add_option("--workflow-state", workflow_state,
                 "Where the workflow state lives: file (workflow-state.json in the workspace), journal (a run in "
                 "the --store's run journal, shared by every server on that store), auto (journal with a sqlite: "
                 "or postgres: store, else file)")
      ->check(CLI::IsMember({"auto", "file", "journal"}))
      ->capture_default_str();
  app.add_option("--run", run_id, "The run holding the workflow in the journal (default: the template's name)");
  app.add_flag("--quiet", quiet, "No diagnostics on stderr");
  app.add_option("--http", http,
                 "Serve Streamable HTTP on http://HOST:PORT/mcp instead of stdio (PORT alone: 127.0.0.1:PORT; "
                 "port 0: any free port, printed on stderr)");
  app.add_option("--allow-origin", allowed_origins,
                 "With --http: a browser Origin allowed besides loopback ones (repeatable), e.g. https://app.example");
  app.add_option("--http-threads", http_threads, "With --http: requests served at once")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_option("--http-max-connections", http_max_connections,
                 "With --http: connections open at once; one more is answered 503 and closed")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--http-request-timeout", http_request_timeout,
                 "With --http: seconds from a request's first byte until it must have arrived whole; else 408")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  app.add_option("--http-idle-timeout", http_idle_timeout,
                 "With --http: seconds a connection with no request in progress stays open (Keep-Alive advertises "
                 "half)")
      ->check(CLI::Range(2, 3600))
      ->capture_default_str();
  app.add_option("--auth-key", auth_keys,
                 "With --http: a PEM public key (RSA or EC P-256) that signs bearer tokens (repeatable); with it every "
                 "request needs a token, and the token's tenant claim replaces --tenant")
      ->check(CLI::ExistingFile);
  app.add_option("--auth-audience", auth_audience,
                 "With --auth-key: the audience tokens must carry, this server's public URL (e.g. "
                 "https://mcp.example.com/mcp)");
  app.add_option("--auth-issuer", auth_issuer, "With --auth-key: the issuer tokens must carry (iss)");
  app.add_option("--authorization-server", auth_servers,
                 "With --auth-key: an authorization server's issuer URL, listed in the protected resource metadata");
  app.add_option("--tenant-claim", tenant_claim, "With --auth-key: the token claim naming the tenant")
      ->capture_default_str();
  app.set_version_flag("--version", std::string("cairn-mcp ") + cairn::version_string());
  // A bad command line exits 2 with one line on stderr, as docs/mcp.md promises (CLI11's own codes, 105 to 114,
  // and its multi-line usage text are not what a script checking the status expects); --help and --version exit 0.
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string line = std::string("cairn-mcp: ") + e.what();
    for (char& c : line) {
      if (c == '\n' || c == '\r') c = ' ';
    }
    line += " (see cairn-mcp --help)\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
    return 2;
  }

  auto log = [quiet](std::string_view message) {
    if (quiet) return;
    // One write per line: a reader of the pipe never sees half a line, even when it reads between our writes.
    std::string line = "cairn-mcp: ";
    line.append(message).push_back('\n');
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
  };

  std::vector<cairn::mcp::Tool> tools;
  // The tools of one tenant: --tenant's, or (with --auth-key) each token's. Everything that can be wrong is
  // checked here, before anything is served.
  std::function<std::vector<cairn::mcp::Tool>(const std::string&)> make_tools;
  try {
    if (tenant.empty()) throw cairn::invalid_argument("--tenant must not be empty");
    if (!auth_keys.empty() && http.empty()) {
      throw cairn::invalid_argument("--auth-key needs --http (over stdio the tenant is --tenant)");
    }
    auto store = open_artifact_store(store_url);
    std::optional<cairn::WorkflowTemplate> tmpl;
    std::optional<fs::path> root;
    std::shared_ptr<cairn::RunJournal> journal;
    if (!workflow.empty()) {
      root = fs::canonical(workspace);
      tmpl = load_template(workflow);
      const bool durable_store = store_url.rfind("memory:", 0) != 0;
      const bool in_journal = workflow_state == "journal" || (workflow_state == "auto" && durable_store);
      if (in_journal && !durable_store) {
        throw cairn::invalid_argument(
            "--workflow-state journal needs a sqlite: or postgres: --store (a memory: "
            "journal would die with this process)");
      }
      if (!run_id.empty() && !in_journal) throw cairn::invalid_argument("--run is only used with a journal");
      if (!auth_keys.empty() && !in_journal) {
        throw cairn::invalid_argument(
            "--auth-key with --workflow needs the journal (--workflow-state journal): the "
            "state file is one per workspace, not one per tenant");
      }
      if (in_journal) {
        if (run_id.empty()) run_id = tmpl->name();
        try {
          journal = cairn::open_run_journal(store_url);
        } catch (const cairn::error& e) {
          throw cairn::invalid_argument(std::string("--store: ") + e.what());
        }
        log("workflow '" + workflow + "' in run '" + run_id + "' of the store's journal; workspace " + root->string());
      } else {
        log("workflow '" + workflow + "' in " + root->string());
      }
    }
    make_tools = [store, tmpl, root, journal, run_id](const std::string& t) {
      std::vector<cairn::mcp::Tool> out;
      if (tmpl) {
        // Registered files are also stored as `file` artifacts of the tenant, so artifact_list finds them.
        auto recorder = cairn::artifact_recorder(store, t);
        if (journal) {
          out = cairn::WorkflowTools(cairn::RunWorkflowState(journal, t, run_id, *root), *tmpl, recorder).tools();
        } else {
          out = cairn::WorkflowTools(cairn::StateFile(*root), *tmpl, recorder).tools();
        }
      }
      cairn::mcp::ArtifactTools artifacts(store, t);
      out.insert(out.end(), artifacts.tools().begin(), artifacts.tools().end());
      return out;
    };
    tools = make_tools(tenant);
  } catch (const std::exception& e) {
    std::string line = std::string("cairn-mcp: ") + e.what();
    for (char& c : line) {
      if (c == '\n' || c == '\r') c = ' ';
    }
    line.push_back('\n');
    std::fwrite(line.data(), 1, line.size(), stderr);
    return 2;
  }

  cairn::mcp::ServerConfig config;
  config.title = "cairn";
  config.instructions =
      "cairn keeps what agents produce and steers what they do next. "
      "Workflow tools (when a workflow is configured): call workflow_start, follow the instructions of each step, "
      "call workflow_advance with what you did, register files you create with register_artefacts. "
      "Artifact tools store, fetch, list, version and delete artifacts of tenant '" +
      tenant + "'.";
  config.log = log;
  cairn::mcp::Server server(std::move(tools), config);

  std::signal(SIGPIPE, SIG_IGN);  // a client that hangs up ends the loop through a failed write, not a signal
  if (!http.empty()) {
#if CAIRN_MCP_WITH_HTTP
    cairn_mcp::HttpOptions options;
    const auto colon = http.rfind(':');
    std::string port_text = colon == std::string::npos ? http : http.substr(colon + 1);
    if (colon != std::string::npos) options.host = http.substr(0, colon);
    if (options.host.size() > 2 && options.host.front() == '[' && options.host.back() == ']') {
      options.host = options.host.substr(1, options.host.size() - 2);
    }
    char* end = nullptr;
    const long port = std::strtol(port_text.c_str(), &end, 10);
    if (port_text.empty() || *end != '\0' || port < 0 || port > 65535 || options.host.empty()) {
      std::string line = "cairn-mcp: --http: expected HOST:PORT or PORT (got '" + http + "') (see cairn-mcp --help)\n";
      std::fwrite(line.data(), 1, line.size(), stderr);
      return 2;
    }
    options.port = static_cast<int>(port);
    options.allowed_origins = allowed_origins;
    options.max_body_bytes = config.max_message_bytes;
    options.threads = http_threads;
    options.max_connections = http_max_connections;
    options.request_timeout_seconds = http_request_timeout;
    options.idle_timeout_seconds = http_idle_timeout;
    cairn_mcp::AuthOptions auth;
    for (const auto& key_file : auth_keys) {
      std::ifstream in(key_file, std::ios::binary);
      std::ostringstream pem;
      pem << in.rdbuf();
      auth.keys.push_back(pem.str());
    }
    auth.audience = auth_audience;
    if (!auth_issuer.empty()) auth.issuer = auth_issuer;
    auth.authorization_servers = auth_servers;
    auth.tenant_claim = tenant_claim;
    if (auth.enabled() && auth.audience.empty()) {
      const std::string line = "cairn-mcp: --auth-key needs --auth-audience (see cairn-mcp --help)\n";
      std::fwrite(line.data(), 1, line.size(), stderr);
      return 2;
    }
    // SIGINT and SIGTERM stop the server from a thread of their own (the HTTP threads inherit the blocked mask).
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
    const auto tool_count = server.tools().size();
    cairn_mcp::HttpTransport transport(make_tools, tenant, config, options, auth);
    int bound = 0;
    try {
      bound = transport.bind();
    } catch (const std::exception& e) {
      std::string line = std::string("cairn-mcp: ") + e.what() + "\n";
      std::fwrite(line.data(), 1, line.size(), stderr);
      return 2;
    }
    std::thread waiter([&transport, stop_signals] {
      int sig = 0;
      sigwait(&stop_signals, &sig);
      transport.stop();
    });
    const bool ipv6 = options.host.find(':') != std::string::npos;
    log("serving " + std::to_string(tool_count) + " tools to " +
        (auth.enabled() ? "the tenant of each token" : "tenant '" + tenant + "'") + " on http://" +
        (ipv6 ? "[" + options.host + "]" : options.host) + ":" + std::to_string(bound) + "/mcp");
    transport.run();
    pthread_kill(waiter.native_handle(), SIGTERM);  // stopped some other way: end the waiter too
    waiter.join();
    log("stopped; bye");
    return 0;
#else
    const std::string line =
        "cairn-mcp: --http needs a cairn-mcp built with cpp-httplib and libjwt (libcpp-httplib-dev, libjwt-dev)\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
    return 2;
#endif
  }
  std::ios::sync_with_stdio(false);
  std::cin.tie(nullptr);
  log("serving " + std::to_string(server.tools().size()) + " tools to tenant '" + tenant + "' on stdio");
  server.serve(std::cin, std::cout);
  log("stdin closed; bye");
  return 0;
}
