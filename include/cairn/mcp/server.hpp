// cairn — mcp::Server: an MCP server (JSON-RPC 2.0, one message per line) over any set of tools shaped like
// WorkflowTool ({name, description, input_schema, handler, title, annotations, output_schema}). cairn-mcp serves the
// workflow and artifact tools with it over stdio; a host can serve its own tools the same way, or call handle_line
// from its own transport.
//
// Every revision a client may speak, chosen per request as the 2026-07-28 backward-compatibility rules say:
// - 2026-07-28 (modern, stateless): a request whose params._meta carries `io.modelcontextprotocol/protocolVersion`
//   (and `io.modelcontextprotocol/clientCapabilities`), and every `server/discover`, is served on its own, whatever
//   came before: `server/discover`, `tools/list`, `tools/call`; results carry `resultType` and the server's identity
//   in `_meta`; a version the server does not speak gets -32022 (UnsupportedProtocolVersion) listing those it does.
// - 2024-11-05 to 2025-11-25 (legacy): `initialize` (protocol version negotiation), `notifications/initialized`,
//   `ping`, `tools/list`, `tools/call`, for this connection.
// Protocol errors are JSON-RPC errors (-32700 parse error, -32600 invalid request, -32601 method not found, -32602
// invalid params, -32603 internal error, -32022 unsupported protocol version); a tool's own failure is a result with
// `isError: true`. Nothing a client sends stops the server: every bad message gets its error and the next line is
// read.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <istream>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/detail/json.hpp"
#include "cairn/detail/text.hpp"
#include "cairn/error.hpp"
#include "cairn/version.hpp"
#include "cairn/workflow/tools.hpp"

CAIRN_BEGIN_NAMESPACE
namespace mcp {

/// A served tool: `name`, `description`, `input_schema` (a JSON Schema object) and a handler taking the call's
/// `arguments` and returning an MCP CallToolResult. The same shape as the workflow tools, so all tools are alike.
using Tool = WorkflowTool;

/// JSON-RPC 2.0 error codes used by the server.
namespace error_code {
inline constexpr int parse_error = -32700;
inline constexpr int invalid_request = -32600;
inline constexpr int method_not_found = -32601;
inline constexpr int invalid_params = -32602;
inline constexpr int internal_error = -32603;
inline constexpr int header_mismatch = -32020;               ///< 2026-07-28: HTTP headers disagree with the body
inline constexpr int unsupported_protocol_version = -32022;  ///< 2026-07-28: data {supported, requested}
}  // namespace error_code

/// The `_meta` keys of 2026-07-28 requests and results.
namespace meta_key {
inline constexpr const char* protocol_version = "io.modelcontextprotocol/protocolVersion";
inline constexpr const char* client_capabilities = "io.modelcontextprotocol/clientCapabilities";
inline constexpr const char* client_info = "io.modelcontextprotocol/clientInfo";
inline constexpr const char* server_info = "io.modelcontextprotocol/serverInfo";
}  // namespace meta_key

/// Every protocol version the server speaks, newest first: the modern ones, then the legacy ones.
const std::vector<std::string>& supported_protocol_versions();
/// The versions served statelessly, each request carrying its version in `_meta` (2026-07-28).
const std::vector<std::string>& modern_protocol_versions();
/// The versions negotiated with `initialize` for a connection (2025-11-25 down to 2024-11-05), newest first.
const std::vector<std::string>& legacy_protocol_versions();

/// How the server presents itself and what it accepts.
struct ServerConfig {
  std::string name = "cairn-mcp";                       ///< serverInfo.name
  std::string version = version_string();               ///< serverInfo.version
  std::optional<std::string> title;                     ///< serverInfo.title (2025-06-18 and later)
  std::optional<std::string> instructions;              ///< InitializeResult.instructions: how to use the tools
  std::size_t max_message_bytes = 16u * 1024u * 1024u;  ///< longest accepted line (one message)
  int max_depth = 64;                                   ///< deepest accepted JSON nesting in a message
  std::size_t max_batch = 1000;                         ///< most messages in one batch (2025-03-26 only)
  /// 2026-07-28 `ttlMs` of tools/list and server/discover: how long a client may keep them (the tools of a server
  /// do not change while it runs). Their `cacheScope` is "private": instructions may name the tenant.
  std::uint64_t cache_ttl_ms = 300000;
  /// Where diagnostics go (never stdout: that carries only JSON-RPC). Unset: nowhere.
  std::function<void(std::string_view)> log;
};

/// An MCP server for one client connection (stdio: one per process).
/// Not thread-safe: one owner (a connection's messages are handled in order); the tools may be shared.
///
///     cairn::mcp::Server server(tools, {});
///     server.serve(std::cin, std::cout);       // until stdin closes
///     // {"id":1,"jsonrpc":"2.0","result":{}}
///     auto reply = server.handle_line(R"({"jsonrpc":"2.0","id":1,"method":"ping"})");
class Server {
 public:
  /// Serves `tools`; throws cairn::invalid_argument for a tool without a name or handler, or a name given twice.
  explicit Server(std::vector<Tool> tools, ServerConfig config = {});

  /// Handles one message (the text of one line, without its newline) and returns the response to write, or
  /// nothing when there is none (notifications, responses from the client, blank lines). Never throws.
  std::optional<nlohmann::json> handle_line(std::string_view line) noexcept;

  /// Reads newline-delimited messages from `in` until it ends and writes each response to `out` as one line.
  /// A line longer than max_message_bytes is skipped without being held in memory and answered with an error.
  void serve(std::istream& in, std::ostream& out);

  /// True once `initialize` has been answered (2026-07-28 requests need no initialize, and do not set this).
  bool initialized() const noexcept { return protocol_version_.has_value(); }
  /// The protocol version negotiated by `initialize` (empty before it).
  const std::string& protocol_version() const noexcept;
  /// True once the client sent `notifications/initialized`.
  bool client_ready() const noexcept { return client_ready_; }

  const std::vector<Tool>& tools() const noexcept { return tools_; }
  const ServerConfig& config() const noexcept { return config_; }

 private:
  enum class line_status { line, too_long, end };

  // Reads one line into `line` (without "\n" or a trailing "\r"), in chunks, so a line past the limit costs no more
  // memory than the limit. The last line may lack its newline.
  line_status read_line(std::istream& in, std::string& line) const;

  void log(const std::string& message) const;

  static nlohmann::json error_response(nlohmann::json id, int code, std::string message,
                                       std::optional<nlohmann::json> data = std::nullopt);
  // Error messages quote the input, which may hold invalid UTF-8 (the parser's "last read: ..." does): such bytes
  // become U+FFFD, so every reply can be dumped strictly.
  static std::string valid_utf8(std::string text);
  static nlohmann::json result_response(nlohmann::json id, nlohmann::json result);

  static bool is_blank(std::string_view s);

  std::optional<nlohmann::json> handle_text(std::string_view text);

  // JSON-RPC batches were part of MCP 2025-03-26 only (added then, removed in 2025-06-18).
  std::optional<nlohmann::json> handle_batch(const nlohmann::json& batch);

  std::optional<nlohmann::json> handle_message(const nlohmann::json& m, bool in_batch);

  void handle_notification(const std::string& method);

  nlohmann::json handle_request(const nlohmann::json& id, const std::string& method, const nlohmann::json& params,
                                bool in_batch);

  // A 2026-07-28 request: everything it needs is in it, so this touches no state of the connection.
  nlohmann::json handle_modern(const nlohmann::json& id, const std::string& method, const nlohmann::json& params,
                               bool in_batch) const;

  // A response to a 2026-07-28 request: a result gets resultType and the server's identity in its _meta.
  nlohmann::json modern_response(nlohmann::json response) const;

  nlohmann::json server_info(const std::string& version) const;

  nlohmann::json initialize(const nlohmann::json& id, const nlohmann::json& params);

  nlohmann::json list_tools(const nlohmann::json& id, const nlohmann::json& params, const std::string& version) const;

  nlohmann::json call_tool(const nlohmann::json& id, const nlohmann::json& params, const std::string& version) const;

  std::vector<Tool> tools_;
  ServerConfig config_;
  std::unordered_map<std::string, std::size_t> index_;
  std::optional<std::string> protocol_version_;
  bool client_ready_ = false;
};

}  // namespace mcp
CAIRN_END_NAMESPACE

#ifndef CAIRN_COMPILED_LIB
#include "cairn/mcp/server-inl.hpp"
#endif
