// cairn-mcp's Streamable HTTP transport (cairn-mcp --http HOST:PORT), on cpp-httplib (Debian libcpp-httplib-dev).
// Part of the executable only: the library does not depend on an HTTP server (docs/mcp.md, "Streamable HTTP").
//
// One endpoint, POST /mcp. A request is served as its revision says:
// - 2026-07-28 (its body's params._meta carries io.modelcontextprotocol/protocolVersion, or its MCP-Protocol-Version
//   header names 2026-07-28): stateless, by one shared mcp::Server, after checking that MCP-Protocol-Version,
//   Mcp-Method and Mcp-Name agree with the body (else 400 with -32020 HeaderMismatch).
// - 2025-03-26 to 2025-11-25: `initialize` opens a session (Mcp-Session-Id), one mcp::Server each; later requests
//   name it; DELETE ends it; an unknown session is 404.
// Every reply is one JSON object (application/json), or one SSE event when the client accepts only
// text/event-stream; notifications get 202. Origin is checked (403), bodies and sessions are bounded.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <httplib.h>
#include <cairn/mcp/server.hpp>

#include "cairn_mcp_auth.hpp"
#include "cairn_mcp_http_server.hpp"

namespace cairn_mcp {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 0;                              ///< 0: any free port (printed on stderr)
  std::vector<std::string> allowed_origins;  ///< besides http(s)://{localhost,127.0.0.1,[::1]}[:port]
  std::size_t max_body_bytes = 16u << 20;    ///< longer: 413
  int read_timeout_seconds = 10;             ///< a client silent this long mid-request is dropped
  int write_timeout_seconds = 10;
  int request_timeout_seconds = 30;         ///< a request not whole this long after its first byte: 408
  int idle_timeout_seconds = 10;            ///< a connection with no request in progress this long is closed
  std::size_t threads = 32;                 ///< requests served at once
  std::size_t max_connections = 1000;       ///< connections open at once; one more: 503
  std::size_t max_sessions = 1000;          ///< legacy sessions held at once; more: 503
  std::chrono::seconds session_idle{1800};  ///< a legacy session unused this long is ended
  std::size_t max_tenants = 10000;          ///< tenants (from tokens) whose tools are held at once; more: 503
};

/// The tools of one tenant (cairn-mcp builds them per tenant: with authorization each token names its own).
using ToolFactory = std::function<std::vector<cairn::mcp::Tool>(const std::string& tenant)>;

class HttpTransport {
 public:
  /// Serves `default_tenant` to every request when `auth` is not enabled; else the tenant of each request's token.
  HttpTransport(ToolFactory make_tools, std::string default_tenant, cairn::mcp::ServerConfig config,
                HttpOptions options, AuthOptions auth = {})
      : make_tools_(std::move(make_tools)),
        default_tenant_(std::move(default_tenant)),
        config_(std::move(config)),
        options_(std::move(options)),
        verifier_(std::move(auth)),
        http_(connection_limits(options_)) {
    if (!verifier_.options().enabled()) tenant_tools(default_tenant_);  // built now: a bad store fails at start
    http_.set_payload_max_length(options_.max_body_bytes);
    http_.set_keep_alive_max_count(1000);
    http_.Post("/mcp", [this](const httplib::Request& req, httplib::Response& res) { post(req, res); });
    http_.Get("/mcp", [this](const httplib::Request& req, httplib::Response& res) {
      if (!origin_ok(req, res)) return;
      transport_error(res, 405, cairn::mcp::error_code::invalid_request,
                      "GET is not served: this server sends no messages of its own (POST requests to /mcp)");
      res.set_header("Allow", "POST, DELETE");
    });
    http_.Delete("/mcp", [this](const httplib::Request& req, httplib::Response& res) { end_session(req, res); });
    // RFC 9728: where a client learns which authorization server issues tokens for this resource.
    const auto metadata = [this](const httplib::Request&, httplib::Response& res) {
      if (!verifier_.options().enabled()) {
        transport_error(res, 404, cairn::mcp::error_code::invalid_request, "not found: authorization is not enabled");
        return;
      }
      const auto& a = verifier_.options();
      const nlohmann::json body = {{"resource", a.audience},
                                   {"authorization_servers", a.authorization_servers},
                                   {"scopes_supported", {a.read_scope, a.write_scope, a.delete_scope}},
                                   {"bearer_methods_supported", {"header"}},
                                   {"resource_name", config_.title.value_or(config_.name)}};
      res.status = 200;
      res.set_content(body.dump(), "application/json");
    };
    http_.Get("/.well-known/oauth-protected-resource", metadata);
    http_.Get("/.well-known/oauth-protected-resource/mcp", metadata);
    http_.set_error_handler([this](const httplib::Request&, httplib::Response& res) {
      if (!res.body.empty()) return;
      if (res.status == 413) {
        transport_error(res, 413, cairn::mcp::error_code::invalid_request,
                        "the body is longer than the limit of " + std::to_string(options_.max_body_bytes) + " bytes");
      } else if (res.status == 404) {
        transport_error(res, 404, cairn::mcp::error_code::invalid_request, "not found: the MCP endpoint is /mcp");
      } else if (res.status == 400 && BoundedHttpServer::request_timed_out()) {
        transport_error(res, 408, cairn::mcp::error_code::invalid_request,
                        "the request body did not arrive whole within " +
                            std::to_string(options_.request_timeout_seconds) + " s of its first byte, or paused " +
                            std::to_string(options_.read_timeout_seconds) + " s; the connection is closed");
      } else if (res.status == 400) {
        transport_error(res, 400, cairn::mcp::error_code::invalid_request,
                        "Bad Request: a malformed request line, header or body");
      }
    });
    http_.set_exception_handler([this](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
      log("internal error while serving an HTTP request");
      transport_error(res, 500, cairn::mcp::error_code::internal_error, "internal error");
    });
  }

  /// Binds the address; returns the port (the chosen one for port 0). Throws cairn::invalid_argument when it cannot.
  int bind() {
    int port = options_.port;
    if (port == 0) {
      port = http_.bind_to_any_port(options_.host);
      if (port < 0) throw cairn::invalid_argument("--http: cannot bind " + options_.host);
    } else if (!http_.bind_to_port(options_.host, port)) {
      throw cairn::invalid_argument("--http: cannot bind " + options_.host + ":" + std::to_string(port));
    }
    bound_port_ = port;
    return port;
  }

  /// Serves until stop().
  void run() { http_.listen_after_bind(); }
  void stop() { http_.stop(); }

 private:
  struct Session {
    std::mutex mutex;
    std::string tenant;
    std::unique_ptr<cairn::mcp::Server> server;
    std::chrono::steady_clock::time_point used;
  };

  static ConnectionLimits connection_limits(const HttpOptions& o) {
    ConnectionLimits limits;
    limits.threads = o.threads;
    limits.max_connections = o.max_connections;
    limits.request_timeout = std::chrono::seconds(o.request_timeout_seconds);
    limits.idle_timeout = std::chrono::seconds(o.idle_timeout_seconds);
    limits.read_timeout = std::chrono::seconds(o.read_timeout_seconds);
    limits.write_timeout = std::chrono::seconds(o.write_timeout_seconds);
    return limits;
  }

  // One tenant's tools, the scope each needs, and the Server of its 2026-07-28 requests.
  struct Tenant {
    std::vector<cairn::mcp::Tool> tools;
    std::map<std::string, std::string> scope;
    std::unique_ptr<cairn::mcp::Server> stateless;
  };

  std::shared_ptr<const Tenant> tenant_tools(const std::string& tenant) {
    std::lock_guard<std::mutex> lock(tenants_mutex_);
    if (const auto found = tenants_.find(tenant); found != tenants_.end()) return found->second;
    if (tenants_.size() >= options_.max_tenants) return nullptr;
    auto t = std::make_shared<Tenant>();
    t->tools = make_tools_(tenant);
    for (const auto& tool : t->tools) t->scope[tool.name] = verifier_.scope_for(tool.annotations);
    t->stateless = std::make_unique<cairn::mcp::Server>(t->tools, config_);
    tenants_.emplace(tenant, t);
    return t;
  }

  // The RFC 9728 metadata URL of the resource `audience` names: /.well-known/oauth-protected-resource before its path.
  std::string metadata_url() const {
    const auto& aud = verifier_.options().audience;
    const auto scheme = aud.find("://");
    const auto path = scheme == std::string::npos ? std::string::npos : aud.find('/', scheme + 3);
    if (path == std::string::npos) return aud + "/.well-known/oauth-protected-resource";
    return aud.substr(0, path) + "/.well-known/oauth-protected-resource" + aud.substr(path);
  }

  void unauthorized(httplib::Response& res, const AuthFailure& why) const {
    std::string challenge = "Bearer resource_metadata=\"" + metadata_url() + "\"";
    if (!why.error.empty()) {
      challenge += ", error=\"" + why.error + "\", error_description=\"" + why.description + "\"";
    }
    res.set_header("WWW-Authenticate", challenge);
    transport_error(res, 401, cairn::mcp::error_code::invalid_request, "Unauthorized: " + why.description);
  }

  void insufficient_scope(httplib::Response& res, const nlohmann::json& id, const std::string& tool,
                          const std::string& scope) const {
    res.set_header("WWW-Authenticate", "Bearer error=\"insufficient_scope\", scope=\"" + scope +
                                           "\", resource_metadata=\"" + metadata_url() + "\"");
    res.status = 403;
    const nlohmann::json body = {
        {"jsonrpc", "2.0"},
        {"id", id},
        {"error",
         {{"code", cairn::mcp::error_code::invalid_request},
          {"message", "Forbidden: insufficient_scope: tool '" + tool + "' needs scope '" + scope + "'"}}}};
    res.set_content(body.dump(), "application/json");
  }

  // Checks a tools/call against the token's scopes; false (with the 403 written) when it may not be made.
  bool may_call(const Tenant& t, const std::optional<Principal>& who, const nlohmann::json& body,
                httplib::Response& res) const {
    if (!who || !body.is_object() || body.value("method", "") != "tools/call") return true;
    const auto params = body.find("params");
    if (params == body.end() || !params->is_object()) return true;
    const auto name = params->find("name");
    if (name == params->end() || !name->is_string()) return true;
    const auto needed = t.scope.find(name->get<std::string>());
    if (needed == t.scope.end() || who->scopes.count(needed->second)) return true;
    insufficient_scope(res, body.value("id", nlohmann::json()), name->get<std::string>(), needed->second);
    return false;
  }

  // tools/list shows a token only the tools it may call.
  void filter_list(const Tenant& t, const std::optional<Principal>& who, const nlohmann::json& body,
                   nlohmann::json& answer) const {
    if (!who || !body.is_object() || body.value("method", "") != "tools/list") return;
    const auto result = answer.find("result");
    if (result == answer.end() || !result->contains("tools")) return;
    nlohmann::json kept = nlohmann::json::array();
    for (auto& tool : (*result)["tools"]) {
      const auto needed = t.scope.find(tool.value("name", ""));
      if (needed != t.scope.end() && who->scopes.count(needed->second)) kept.push_back(std::move(tool));
    }
    (*result)["tools"] = std::move(kept);
  }

  void log(const std::string& message) const {
    if (config_.log) config_.log(message);
  }

  static void transport_error(httplib::Response& res, int status, int code, const std::string& message) {
    // A JSON-RPC error with no id: the request's id is unknown, or the request was never read.
    const nlohmann::json body = {{"jsonrpc", "2.0"}, {"error", {{"code", code}, {"message", message}}}};
    res.status = status;
    res.set_content(body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "application/json");
  }

  void reply(const httplib::Request& req, httplib::Response& res, int status, const nlohmann::json& message) const {
    const auto text = message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    res.status = status;
    const auto accept = req.get_header_value("Accept");
    const bool sse_only = accept.find("text/event-stream") != std::string::npos &&
                          accept.find("application/json") == std::string::npos &&
                          accept.find("*/*") == std::string::npos;
    if (sse_only) {
      res.set_header("X-Accel-Buffering", "no");
      res.set_content("event: message\ndata: " + text + "\n\n", "text/event-stream");
    } else {
      res.set_content(text, "application/json");
    }
  }

  // DNS rebinding: a browser page of another site must not reach this server. No Origin (a non-browser client)
  // passes; a loopback origin passes; anything else must be in allowed_origins.
  bool origin_ok(const httplib::Request& req, httplib::Response& res) const {
    if (!req.has_header("Origin")) return true;
    const auto origin = req.get_header_value("Origin");
    for (const char* scheme : {"http://", "https://"}) {
      for (const char* host : {"localhost", "127.0.0.1", "[::1]"}) {
        const std::string base = std::string(scheme) + host;
        if (origin == base || origin == base + ":" + std::to_string(bound_port_)) return true;
      }
    }
    if (std::find(options_.allowed_origins.begin(), options_.allowed_origins.end(), origin) !=
        options_.allowed_origins.end()) {
      return true;
    }
    log("refused a request from origin " + cairn::detail::excerpt(origin));
    transport_error(res, 403, cairn::mcp::error_code::invalid_request,
                    "Forbidden: origin '" + cairn::detail::excerpt(origin) +
                        "' is not allowed (cairn-mcp --allow-origin adds one)");
    return false;
  }

  static bool header_value_ok(const std::string& v) {
    for (const char c : v) {
      const auto u = static_cast<unsigned char>(c);
      if (!(u == '\t' || (u >= 0x20 && u <= 0x7e))) return false;
    }
    return true;
  }

  // Mcp-Name and Mcp-Param-* values may be "=?base64?<base64 of UTF-8>?=" (streamable-http.mdx, "Value Encoding").
  static std::optional<std::string> decode_header_value(const std::string& v) {
    static const std::string open = "=?base64?";
    static const std::string close = "?=";
    if (v.size() < open.size() + close.size() || v.compare(0, open.size(), open) != 0 ||
        v.compare(v.size() - close.size(), close.size(), close) != 0) {
      return v;
    }
    const auto b64 = v.substr(open.size(), v.size() - open.size() - close.size());
    std::string out;
    std::uint32_t acc = 0;
    int bits = 0;
    std::size_t pad = 0;
    for (const char c : b64) {
      int d;
      if (c >= 'A' && c <= 'Z')
        d = c - 'A';
      else if (c >= 'a' && c <= 'z')
        d = c - 'a' + 26;
      else if (c >= '0' && c <= '9')
        d = c - '0' + 52;
      else if (c == '+')
        d = 62;
      else if (c == '/')
        d = 63;
      else if (c == '=') {
        ++pad;
        continue;
      } else
        return std::nullopt;
      if (pad) return std::nullopt;  // data after padding
      acc = (acc << 6) | static_cast<std::uint32_t>(d);
      bits += 6;
      if (bits >= 8) {
        bits -= 8;
        out.push_back(static_cast<char>((acc >> bits) & 0xff));
      }
    }
    if (pad > 2 || (b64.size() % 4) != 0) return std::nullopt;
    return out;
  }

  static bool is_modern_version(const std::string& v) {
    const auto& modern = cairn::mcp::modern_protocol_versions();
    return std::find(modern.begin(), modern.end(), v) != modern.end();
  }

  // The HTTP status of a reply to a 2026-07-28 request: 400 for a malformed one, 404 for an unknown method.
  static int modern_status(const nlohmann::json& reply) {
    const auto e = reply.find("error");
    if (e == reply.end()) return 200;
    const int code = e->value("code", 0);
    if (code == cairn::mcp::error_code::method_not_found) return 404;
    if (code == cairn::mcp::error_code::internal_error) return 500;
    return 400;
  }

  void post(const httplib::Request& req, httplib::Response& res) {
    namespace ec = cairn::mcp::error_code;
    if (!origin_ok(req, res)) return;
    const auto type = req.get_header_value("Content-Type");
    if (type.compare(0, 16, "application/json") != 0) {
      transport_error(res, 415, ec::invalid_request,
                      "Content-Type must be application/json (got '" + cairn::detail::excerpt(type) + "')");
      return;
    }
    std::optional<Principal> who;
    std::string tenant = default_tenant_;
    if (verifier_.options().enabled()) {
      auto verified = verifier_.verify(req.get_header_value("Authorization"));
      if (!verified.first) {
        log("refused a request: " + verified.second.description);
        unauthorized(res, verified.second);
        return;
      }
      who = std::move(verified.first);
      tenant = who->tenant;
    }
    nlohmann::json body;
    try {
      body = cairn::detail::parse_json(req.body, cairn::JsonLimits{config_.max_message_bytes, config_.max_depth},
                                       "message");
    } catch (const cairn::limit_exceeded& e) {
      transport_error(res, 400, ec::invalid_request, e.what());
      return;
    } catch (const cairn::error& e) {
      transport_error(res, 400, ec::parse_error, e.what());
      return;
    }
    const auto version_header = req.get_header_value("MCP-Protocol-Version");
    for (const char* h : {"MCP-Protocol-Version", "Mcp-Method", "Mcp-Name", "Mcp-Session-Id"}) {
      if (!header_value_ok(req.get_header_value(h))) {
        transport_error(res, 400, ec::header_mismatch,
                        std::string("Header mismatch: ") + h + " holds characters a header value may not");
        return;
      }
    }
    std::string method;
    const nlohmann::json* params = nullptr;
    bool has_id = false;
    if (body.is_object()) {
      if (const auto m = body.find("method"); m != body.end() && m->is_string()) method = m->get<std::string>();
      if (const auto p = body.find("params"); p != body.end() && p->is_object()) params = &*p;
      has_id = body.contains("id");
    }
    std::optional<std::string> meta_version;
    if (params) {
      if (const auto meta = params->find("_meta"); meta != params->end() && meta->is_object()) {
        if (const auto v = meta->find(cairn::mcp::meta_key::protocol_version); v != meta->end() && v->is_string()) {
          meta_version = v->get<std::string>();
        }
      }
    }
    const bool modern =
        method != "initialize" && (meta_version || is_modern_version(version_header) || method == "server/discover");
    if (modern) {
      const auto t = tenant_tools(tenant);
      if (!t) {
        transport_error(res, 503, ec::internal_error, "too many tenants at once; try again later");
        return;
      }
      if (!may_call(*t, who, body, res)) return;
      serve_modern(req, res, *t, who, body, method, params, meta_version, version_header, has_id);
    } else {
      serve_legacy(req, res, tenant, who, body, method, has_id, version_header);
    }
  }

  void serve_modern(const httplib::Request& req, httplib::Response& res, const Tenant& t,
                    const std::optional<Principal>& who, const nlohmann::json& body, const std::string& method,
                    const nlohmann::json* params, const std::optional<std::string>& meta_version,
                    const std::string& version_header, bool has_id) {
    namespace ec = cairn::mcp::error_code;
    const nlohmann::json id = body.is_object() && body.contains("id") ? body["id"] : nlohmann::json(nullptr);
    const auto mismatch = [&](const std::string& what) {
      reply(req, res, 400,
            {{"jsonrpc", "2.0"},
             {"id", id},
             {"error", {{"code", ec::header_mismatch}, {"message", "Header mismatch: " + what}}}});
    };
    if (version_header.empty()) return mismatch("the MCP-Protocol-Version header is required");
    if (meta_version && *meta_version != version_header) {
      return mismatch("MCP-Protocol-Version header value '" + cairn::detail::excerpt(version_header) +
                      "' does not match body value '" + cairn::detail::excerpt(*meta_version) + "'");
    }
    // A version the server does not speak: the Server answers -32022 from the body (400 below).
    if (meta_version && is_modern_version(*meta_version)) {
      if (!req.has_header("Mcp-Method")) return mismatch("the Mcp-Method header is required");
      if (req.get_header_value("Mcp-Method") != method) {
        return mismatch("Mcp-Method header value '" + cairn::detail::excerpt(req.get_header_value("Mcp-Method")) +
                        "' does not match body value '" + cairn::detail::excerpt(method) + "'");
      }
      if (method == "tools/call" || method == "resources/read" || method == "prompts/get") {
        const char* key = method == "resources/read" ? "uri" : "name";
        std::string value;
        if (params) {
          if (const auto field = params->find(key); field != params->end() && field->is_string()) {
            value = field->get<std::string>();
          }
        }
        if (!req.has_header("Mcp-Name")) return mismatch("the Mcp-Name header is required for " + method);
        const auto name = decode_header_value(req.get_header_value("Mcp-Name"));
        if (!name) return mismatch("the Mcp-Name header is not valid =?base64?...?= text");
        if (*name != value) {
          return mismatch("Mcp-Name header value '" + cairn::detail::excerpt(*name) + "' does not match body value '" +
                          cairn::detail::excerpt(value) + "'");
        }
      }
    }
    if (!has_id) {
      (void)t.stateless->handle_line(req.body);  // a notification: nothing to answer
      res.status = 202;
      return;
    }
    std::optional<nlohmann::json> answer;
    if (!meta_version) {
      // The header says 2026-07-28 but the body carries no _meta version: a malformed request (-32602).
      answer = nlohmann::json{{"jsonrpc", "2.0"},
                              {"id", id},
                              {"error",
                               {{"code", ec::invalid_params},
                                {"message", method + ": params._meta[\"" + cairn::mcp::meta_key::protocol_version +
                                                "\"] is required (a string such as \"2026-07-28\")"}}}};
    } else {
      answer = t.stateless->handle_line(req.body);
    }
    if (!answer) {
      res.status = 202;
      return;
    }
    filter_list(t, who, body, *answer);
    reply(req, res, modern_status(*answer), *answer);
  }

  void serve_legacy(const httplib::Request& req, httplib::Response& res, const std::string& tenant,
                    const std::optional<Principal>& who, const nlohmann::json& body, const std::string& method,
                    bool has_id, const std::string& version_header) {
    namespace ec = cairn::mcp::error_code;
    const auto session_id = req.get_header_value("Mcp-Session-Id");
    const auto t = tenant_tools(tenant);
    if (!t) {
      transport_error(res, 503, ec::internal_error, "too many tenants at once; try again later");
      return;
    }
    if (method == "initialize" && session_id.empty()) {
      auto session = std::make_shared<Session>();
      session->tenant = tenant;
      session->server = std::make_unique<cairn::mcp::Server>(t->tools, config_);
      session->used = std::chrono::steady_clock::now();
      const auto answer = session->server->handle_line(req.body);
      if (!answer) {
        res.status = 202;
        return;
      }
      if (session->server->initialized()) {
        const auto id = new_session_id();
        std::lock_guard<std::mutex> lock(sessions_mutex_);
        purge_idle_locked();
        if (sessions_.size() >= options_.max_sessions) {
          transport_error(res, 503, ec::internal_error,
                          "too many sessions (" + std::to_string(options_.max_sessions) + "); try again later");
          return;
        }
        sessions_.emplace(id, std::move(session));
        res.set_header("Mcp-Session-Id", id);
      }
      reply(req, res, 200, *answer);
      return;
    }
    if (session_id.empty()) {
      transport_error(res, 400, ec::invalid_request,
                      "Bad Request: no Mcp-Session-Id; send initialize first (2025-11-25 and earlier), or give "
                      "params._meta[\"io.modelcontextprotocol/protocolVersion\"] \"2026-07-28\" and the "
                      "MCP-Protocol-Version header");
      return;
    }
    std::shared_ptr<Session> session;
    {
      std::lock_guard<std::mutex> lock(sessions_mutex_);
      purge_idle_locked();
      const auto found = sessions_.find(session_id);
      if (found != sessions_.end()) session = found->second;
    }
    if (!session) {
      transport_error(res, 404, ec::invalid_request, "Not Found: unknown or expired session; send initialize again");
      return;
    }
    if (session->tenant != tenant) {
      // Another tenant's session reads exactly like an unknown one.
      transport_error(res, 404, ec::invalid_request, "Not Found: unknown or expired session; send initialize again");
      return;
    }
    if (!may_call(*t, who, body, res)) return;
    std::lock_guard<std::mutex> lock(session->mutex);
    session->used = std::chrono::steady_clock::now();
    // The header must name a version this server speaks in sessions (2025-11-25's rule); the session keeps the one
    // initialize negotiated (the conformance suite sends 2025-03-26 on a 2025-11-25 session, for one).
    const auto& legacy = cairn::mcp::legacy_protocol_versions();
    if (!version_header.empty() && std::find(legacy.begin(), legacy.end(), version_header) == legacy.end()) {
      transport_error(res, 400, ec::invalid_request,
                      "Bad Request: unsupported MCP-Protocol-Version '" + cairn::detail::excerpt(version_header) +
                          "' for a session (this session speaks " + session->server->protocol_version() + ")");
      return;
    }
    auto answer = session->server->handle_line(req.body);
    if (!answer || !has_id) {
      res.status = 202;
      return;
    }
    filter_list(*t, who, body, *answer);
    reply(req, res, 200, *answer);
  }

  void end_session(const httplib::Request& req, httplib::Response& res) {
    if (!origin_ok(req, res)) return;
    std::string tenant = default_tenant_;
    if (verifier_.options().enabled()) {
      auto verified = verifier_.verify(req.get_header_value("Authorization"));
      if (!verified.first) {
        unauthorized(res, verified.second);
        return;
      }
      tenant = verified.first->tenant;
    }
    const auto id = req.get_header_value("Mcp-Session-Id");
    if (id.empty()) {
      transport_error(res, 405, cairn::mcp::error_code::invalid_request,
                      "DELETE ends a session: give its Mcp-Session-Id (2026-07-28 has no sessions)");
      return;
    }
    std::lock_guard<std::mutex> lock(sessions_mutex_);
    const auto found = sessions_.find(id);
    if (found == sessions_.end() || found->second->tenant != tenant || (sessions_.erase(found), false)) {
      transport_error(res, 404, cairn::mcp::error_code::invalid_request, "Not Found: unknown or expired session");
      return;
    }
    res.status = 204;
  }

  void purge_idle_locked() {
    const auto now = std::chrono::steady_clock::now();
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      std::unique_lock<std::mutex> busy(it->second->mutex, std::try_to_lock);
      if (busy.owns_lock() && now - it->second->used > options_.session_idle) {
        busy.unlock();
        it = sessions_.erase(it);
      } else {
        ++it;
      }
    }
  }

  std::string new_session_id() {
    std::lock_guard<std::mutex> lock(random_mutex_);
    static const char* hex = "0123456789abcdef";
    std::string id;
    for (int i = 0; i < 32; ++i) id.push_back(hex[random_() & 15u]);
    return id;
  }

  ToolFactory make_tools_;
  std::string default_tenant_;
  cairn::mcp::ServerConfig config_;
  HttpOptions options_;
  TokenVerifier verifier_;
  // Each tenant's Tenant::stateless serves its 2026-07-28 requests from every thread: they read no state of the
  // Server, and `initialize`, the only request that writes it, never reaches it (it opens a session).
  std::mutex tenants_mutex_;
  std::map<std::string, std::shared_ptr<const Tenant>> tenants_;
  BoundedHttpServer http_;
  int bound_port_ = 0;
  std::mutex sessions_mutex_;
  std::map<std::string, std::shared_ptr<Session>> sessions_;
  std::mutex random_mutex_;
  std::random_device random_;
};

}  // namespace cairn_mcp
