// cairn — the function bodies of cairn/mcp/server.hpp (docs/api.md, "Compiled mode"). Header-only, the
// default, that header includes this file and CAIRN_INLINE is `inline`; with CAIRN_COMPILED_LIB they are
// compiled once, into cairn::compiled (src/compiled/), and the header only declares them.
#pragma once

#include "cairn/mcp/server.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

namespace mcp {
CAIRN_INLINE const std::vector<std::string>& supported_protocol_versions() {
  static const std::vector<std::string> versions = {"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26",
                                                    "2024-11-05"};
  return versions;
}

CAIRN_INLINE const std::vector<std::string>& modern_protocol_versions() {
  static const std::vector<std::string> versions = {"2026-07-28"};
  return versions;
}

CAIRN_INLINE const std::vector<std::string>& legacy_protocol_versions() {
  static const std::vector<std::string> versions = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};
  return versions;
}

CAIRN_INLINE Server::Server(std::vector<Tool> tools, ServerConfig config)
    : tools_(std::move(tools)), config_(std::move(config)) {
  for (std::size_t i = 0; i < tools_.size(); ++i) {
    const auto& t = tools_[i];
    if (t.name.empty()) throw invalid_argument(fmt::format("mcp::Server: tools[{}] has no name", i));
    if (!t.handler) throw invalid_argument(fmt::format("mcp::Server: tool '{}' has no handler", t.name));
    if (!index_.emplace(t.name, i).second) {
      throw invalid_argument(fmt::format("mcp::Server: tool '{}' is given twice", t.name));
    }
  }
}

CAIRN_INLINE std::optional<nlohmann::json> Server::handle_line(std::string_view line) noexcept {
  try {
    return handle_text(line);
  } catch (const std::exception& e) {
    log(fmt::format("internal error: {}", e.what()));
    return error_response(nullptr, error_code::internal_error, "internal error");
  }
}

CAIRN_INLINE void Server::serve(std::istream& in, std::ostream& out) {
  std::string line;
  for (;;) {
    const auto got = read_line(in, line);
    if (got == line_status::end) break;
    std::optional<nlohmann::json> reply;
    if (got == line_status::too_long) {
      log(fmt::format("skipped a message longer than {} bytes", config_.max_message_bytes));
      reply = error_response(nullptr, error_code::invalid_request,
                             fmt::format("message is longer than the limit of {} bytes", config_.max_message_bytes));
    } else {
      reply = handle_line(line);
    }
    if (reply) {
      out << reply->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
      out.flush();
      if (!out) {
        log("output closed; stopping");
        break;
      }
    }
  }
}

CAIRN_INLINE const std::string& Server::protocol_version() const noexcept {
  static const std::string none;
  return protocol_version_ ? *protocol_version_ : none;
}

CAIRN_INLINE Server::line_status Server::read_line(std::istream& in, std::string& line) const {
  line.clear();
  bool too_long = false;
  bool any = false;
  char chunk[1 << 16];
  for (;;) {
    in.get(chunk, sizeof chunk, '\n');
    const auto n = static_cast<std::size_t>(in.gcount());
    if (n > 0) {
      any = true;
      if (!too_long) {
        if (line.size() + n > config_.max_message_bytes + 1) {  // +1: a trailing '\r' is not counted
          too_long = true;
          line.clear();
          line.shrink_to_fit();
        } else {
          line.append(chunk, n);
        }
      }
    }
    if (in.eof()) break;
    if (in.fail()) in.clear();  // get() stored nothing: the next character is the newline
    if (in.peek() == '\n') {
      in.ignore();
      any = true;
      break;
    }
    if (in.eof()) break;
  }
  if (!any) return line_status::end;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (!too_long && line.size() > config_.max_message_bytes) too_long = true;
  if (too_long) {
    line.clear();
    return line_status::too_long;
  }
  return line_status::line;
}

CAIRN_INLINE void Server::log(const std::string& message) const {
  if (config_.log) config_.log(message);
}

CAIRN_INLINE nlohmann::json Server::error_response(nlohmann::json id, int code, std::string message,
                                                   std::optional<nlohmann::json> data) {
  nlohmann::json err = {{"code", code}, {"message", valid_utf8(std::move(message))}};
  if (data) err["data"] = std::move(*data);
  return {{"jsonrpc", "2.0"}, {"id", std::move(id)}, {"error", std::move(err)}};
}

CAIRN_INLINE std::string Server::valid_utf8(std::string text) {
  const auto dumped = nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return nlohmann::json::parse(dumped).get<std::string>();
}

CAIRN_INLINE nlohmann::json Server::result_response(nlohmann::json id, nlohmann::json result) {
  return {{"jsonrpc", "2.0"}, {"id", std::move(id)}, {"result", std::move(result)}};
}

CAIRN_INLINE bool Server::is_blank(std::string_view s) {
  for (char c : s) {
    if (c != ' ' && c != '\t' && c != '\r' && c != '\n') return false;
  }
  return true;
}

CAIRN_INLINE std::optional<nlohmann::json> Server::handle_text(std::string_view text) {
  if (is_blank(text)) return std::nullopt;  // stray blank lines between messages are tolerated
  if (text.size() > config_.max_message_bytes) {
    return error_response(nullptr, error_code::invalid_request,
                          fmt::format("message is longer than the limit of {} bytes", config_.max_message_bytes));
  }
  nlohmann::json message;
  try {
    message = detail::parse_json(text, JsonLimits{config_.max_message_bytes, config_.max_depth}, "message");
  } catch (const limit_exceeded& e) {
    log(e.what());
    return error_response(nullptr, error_code::invalid_request, e.what());
  } catch (const parse_error& e) {
    log(e.what());
    return error_response(nullptr, error_code::parse_error, e.what());
  }
  if (message.is_array()) return handle_batch(message);
  return handle_message(message, false);
}

CAIRN_INLINE std::optional<nlohmann::json> Server::handle_batch(const nlohmann::json& batch) {
  if (protocol_version_ != std::optional<std::string>("2025-03-26")) {
    return error_response(nullptr, error_code::invalid_request,
                          initialized() ? fmt::format("JSON-RPC batches are not supported in protocol version {} "
                                                      "(only in 2025-03-26)",
                                                      *protocol_version_)
                                        : std::string("a batch cannot come before initialize"));
  }
  if (batch.empty()) return error_response(nullptr, error_code::invalid_request, "empty batch");
  if (batch.size() > config_.max_batch) {
    return error_response(
        nullptr, error_code::invalid_request,
        fmt::format("batch of {} messages, more than the limit of {}", batch.size(), config_.max_batch));
  }
  nlohmann::json replies = nlohmann::json::array();
  for (const auto& m : batch) {
    if (auto r = handle_message(m, true)) replies.push_back(std::move(*r));
  }
  if (replies.empty()) return std::nullopt;
  return replies;
}

CAIRN_INLINE std::optional<nlohmann::json> Server::handle_message(const nlohmann::json& m, bool in_batch) {
  if (!m.is_object()) {
    return error_response(nullptr, error_code::invalid_request,
                          fmt::format("a message must be a JSON object, not {}", m.type_name()));
  }
  // The id, when usable: MCP ids are strings or integers, never null.
  nlohmann::json id = nullptr;
  bool has_id = false;
  if (const auto it = m.find("id"); it != m.end()) {
    if (it->is_string() || it->is_number_integer()) {
      id = *it;
      has_id = true;
    } else {
      return error_response(nullptr, error_code::invalid_request,
                            fmt::format("id must be a string or an integer, not {}", it->type_name()));
    }
  }
  const auto jsonrpc = m.find("jsonrpc");
  if (jsonrpc == m.end() || *jsonrpc != "2.0") {
    return error_response(id, error_code::invalid_request, "jsonrpc must be \"2.0\"");
  }
  const auto method_it = m.find("method");
  if (method_it == m.end()) {
    if (m.contains("result") || m.contains("error")) {
      // A response; this server sends no requests, so there is nothing it could answer.
      log("ignored a response from the client (this server sends no requests)");
      return std::nullopt;
    }
    return error_response(id, error_code::invalid_request, "method is missing");
  }
  if (!method_it->is_string()) {
    return error_response(id, error_code::invalid_request,
                          fmt::format("method must be a string, not {}", method_it->type_name()));
  }
  const std::string& method = method_it->get_ref<const std::string&>();
  static const nlohmann::json no_params = nlohmann::json::object();
  const nlohmann::json* params = &no_params;
  if (const auto p = m.find("params"); p != m.end() && !p->is_null()) {
    if (!p->is_object()) {
      if (!has_id) return std::nullopt;
      return error_response(id, p->is_array() ? error_code::invalid_params : error_code::invalid_request,
                            fmt::format("params must be an object, not {}", p->type_name()));
    }
    params = &*p;
  }

  if (!has_id) {
    handle_notification(method);
    return std::nullopt;
  }
  // A request is modern (2026-07-28) when it says so in its _meta, and server/discover always is; initialize always
  // opens a legacy connection (versioning.mdx, "Backward Compatibility with Initialization-Based Versions").
  if (method != "initialize") {
    const auto meta = params->find("_meta");
    const bool says_modern = meta != params->end() && meta->is_object() && meta->contains(meta_key::protocol_version);
    if (says_modern || method == "server/discover") return handle_modern(id, method, *params, in_batch);
  }
  return handle_request(id, method, *params, in_batch);
}

CAIRN_INLINE void Server::handle_notification(const std::string& method) {
  if (method == "notifications/initialized") {
    if (!initialized())
      log("notifications/initialized before initialize; ignored");
    else
      client_ready_ = true;
  } else if (method != "notifications/cancelled") {
    // Requests are handled one at a time, so a cancellation always arrives too late; other notifications
    // (progress, roots changed, ...) concern capabilities this server does not declare.
    log(fmt::format("ignored notification '{}'", detail::excerpt(method)));
  }
}

CAIRN_INLINE nlohmann::json Server::handle_request(const nlohmann::json& id, const std::string& method,
                                                   const nlohmann::json& params, bool in_batch) {
  if (method == "initialize") {
    if (in_batch) return error_response(id, error_code::invalid_request, "initialize must not be part of a batch");
    return initialize(id, params);
  }
  if (method == "ping") return result_response(id, nlohmann::json::object());
  if (!initialized()) {
    return error_response(id, error_code::invalid_request,
                          fmt::format("server not initialized: '{}' before initialize (send initialize first, or "
                                      "give params._meta[\"{}\"] \"2026-07-28\" to use it without one)",
                                      detail::excerpt(method), meta_key::protocol_version));
  }
  if (method == "tools/list") return list_tools(id, params, *protocol_version_);
  if (method == "tools/call") return call_tool(id, params, *protocol_version_);
  return error_response(id, error_code::method_not_found,
                        fmt::format("method not found: '{}'", detail::excerpt(method)));
}

CAIRN_INLINE nlohmann::json Server::handle_modern(const nlohmann::json& id, const std::string& method,
                                                  const nlohmann::json& params, bool in_batch) const {
  if (in_batch) {
    return error_response(id, error_code::invalid_request,
                          "a 2026-07-28 request must not be part of a batch (batches were part of 2025-03-26 only)");
  }
  const auto meta = params.find("_meta");
  if (meta == params.end() || !meta->is_object()) {
    return error_response(
        id, error_code::invalid_params,
        fmt::format("{}: params._meta is required (an object with \"{}\" and \"{}\")", detail::excerpt(method),
                    meta_key::protocol_version, meta_key::client_capabilities));
  }
  const auto v = meta->find(meta_key::protocol_version);
  if (v == meta->end() || !v->is_string()) {
    return error_response(id, error_code::invalid_params,
                          fmt::format("{}: params._meta[\"{}\"] is required (a string such as \"2026-07-28\")",
                                      detail::excerpt(method), meta_key::protocol_version));
  }
  const auto& version = v->get_ref<const std::string&>();
  const auto& modern = modern_protocol_versions();
  if (std::find(modern.begin(), modern.end(), version) == modern.end()) {
    std::string spoken;
    for (const auto& s : supported_protocol_versions()) spoken += (spoken.empty() ? "" : ", ") + s;
    const auto& legacy = legacy_protocol_versions();
    const bool is_legacy = std::find(legacy.begin(), legacy.end(), version) != legacy.end();
    log(fmt::format("request for protocol version '{}' in _meta refused", detail::excerpt(version)));
    return error_response(
        id, error_code::unsupported_protocol_version,
        is_legacy ? fmt::format("Unsupported protocol version: {} is spoken after initialize, not with a per-request "
                                "_meta (that is 2026-07-28)",
                                version)
                  : fmt::format("Unsupported protocol version: '{}' (this server speaks {})", detail::excerpt(version),
                                spoken),
        nlohmann::json{{"supported", supported_protocol_versions()}, {"requested", version}});
  }
  const auto caps = meta->find(meta_key::client_capabilities);
  if (caps == meta->end() || !caps->is_object()) {
    return error_response(id, error_code::invalid_params,
                          fmt::format("{}: params._meta[\"{}\"] is required (an object; {{}} when the client has "
                                      "none)",
                                      detail::excerpt(method), meta_key::client_capabilities));
  }
  if (const auto info = meta->find(meta_key::client_info); info != meta->end() && !info->is_object()) {
    return error_response(
        id, error_code::invalid_params,
        fmt::format("{}: params._meta[\"{}\"] must be an object", detail::excerpt(method), meta_key::client_info));
  }
  if (method == "server/discover") {
    nlohmann::json result = {{"supportedVersions", supported_protocol_versions()},
                             {"capabilities", {{"tools", nlohmann::json::object()}}},
                             {"ttlMs", config_.cache_ttl_ms},
                             {"cacheScope", "private"}};
    if (config_.instructions) result["instructions"] = *config_.instructions;
    return modern_response(result_response(id, std::move(result)));
  }
  if (method == "tools/list") return modern_response(list_tools(id, params, version));
  if (method == "tools/call") return modern_response(call_tool(id, params, version));
  return error_response(id, error_code::method_not_found,
                        method == "ping" || method == "logging/setLevel"
                            ? fmt::format("method not found: '{}' is not part of protocol version {}", method, version)
                            : fmt::format("method not found: '{}'", detail::excerpt(method)));
}

CAIRN_INLINE nlohmann::json Server::modern_response(nlohmann::json response) const {
  const auto result = response.find("result");
  if (result == response.end()) return response;
  (*result)["resultType"] = "complete";
  auto& meta = (*result)["_meta"];
  if (!meta.is_object()) meta = nlohmann::json::object();
  meta[meta_key::server_info] = server_info(modern_protocol_versions().front());
  return response;
}

CAIRN_INLINE nlohmann::json Server::server_info(const std::string& version) const {
  nlohmann::json info = {{"name", config_.name}, {"version", config_.version}};
  if (config_.title && version >= "2025-06-18") info["title"] = *config_.title;
  return info;
}

CAIRN_INLINE nlohmann::json Server::initialize(const nlohmann::json& id, const nlohmann::json& params) {
  if (initialized()) {
    return error_response(id, error_code::invalid_request,
                          fmt::format("already initialized (protocol version {})", *protocol_version_));
  }
  const auto v = params.find("protocolVersion");
  if (v == params.end() || !v->is_string()) {
    return error_response(id, error_code::invalid_params, "initialize: params.protocolVersion must be a string");
  }
  if (const auto caps = params.find("capabilities"); caps != params.end() && !caps->is_object()) {
    return error_response(id, error_code::invalid_params, "initialize: params.capabilities must be an object");
  }
  if (const auto info = params.find("clientInfo"); info != params.end()) {
    if (!info->is_object()) {
      return error_response(id, error_code::invalid_params, "initialize: params.clientInfo must be an object");
    }
    const auto name = info->find("name");
    log(fmt::format("client: {}", name != info->end() && name->is_string()
                                      ? detail::excerpt(name->get_ref<const std::string&>())
                                      : std::string("(unnamed)")));
  }
  // The requested version when we speak it, else our newest: the client then decides whether to go on.
  // initialize negotiates the legacy versions only (2026-07-28 has no initialize).
  const auto& requested = v->get_ref<const std::string&>();
  std::string chosen = legacy_protocol_versions().front();
  for (const auto& s : legacy_protocol_versions()) {
    if (s == requested) chosen = s;
  }
  if (chosen != requested) {
    log(fmt::format("client asked for protocol version '{}'; offering {}", detail::excerpt(requested), chosen));
  }
  protocol_version_ = chosen;

  nlohmann::json result = {{"protocolVersion", chosen},
                           {"capabilities", {{"tools", {{"listChanged", false}}}}},
                           {"serverInfo", server_info(chosen)}};
  if (config_.instructions) result["instructions"] = *config_.instructions;
  return result_response(id, std::move(result));
}

CAIRN_INLINE nlohmann::json Server::list_tools(const nlohmann::json& id, const nlohmann::json& params,
                                               const std::string& version) const {
  // Every tool fits in one page, so the only cursor there could be is none.
  if (const auto c = params.find("cursor"); c != params.end() && !c->is_null()) {
    return error_response(id, error_code::invalid_params, "tools/list: invalid cursor (this server has one page)");
  }
  // Each revision's Tool: annotations came with 2025-03-26, title and outputSchema with 2025-06-18.
  nlohmann::json list = nlohmann::json::array();
  for (const auto& t : tools_) {
    auto d = WorkflowTools::definition(t);
    if (version < "2025-06-18") {
      d.erase("title");
      d.erase("outputSchema");
    }
    if (version < "2025-03-26") d.erase("annotations");
    list.push_back(std::move(d));
  }
  nlohmann::json result = {{"tools", std::move(list)}};
  if (version >= modern_protocol_versions().back()) {
    result["ttlMs"] = config_.cache_ttl_ms;
    result["cacheScope"] = "private";
  }
  return result_response(id, std::move(result));
}

CAIRN_INLINE nlohmann::json Server::call_tool(const nlohmann::json& id, const nlohmann::json& params,
                                              const std::string& version) const {
  const auto name = params.find("name");
  if (name == params.end() || !name->is_string()) {
    return error_response(id, error_code::invalid_params, "tools/call: params.name must be a string");
  }
  const auto& tool_name = name->get_ref<const std::string&>();
  const auto found = index_.find(tool_name);
  if (found == index_.end()) {
    return error_response(id, error_code::invalid_params,
                          fmt::format("tools/call: unknown tool '{}'", detail::excerpt(tool_name)));
  }
  static const nlohmann::json no_arguments = nlohmann::json::object();
  const nlohmann::json* arguments = &no_arguments;
  if (const auto a = params.find("arguments"); a != params.end() && !a->is_null()) {
    if (!a->is_object()) {
      return error_response(id, error_code::invalid_params,
                            fmt::format("tools/call: params.arguments must be an object, not {}", a->type_name()));
    }
    arguments = &*a;
  }
  nlohmann::json result;
  try {
    result = tools_[found->second].handler(*arguments);
  } catch (const std::exception& e) {
    // Handlers should turn their failures into results; one that throws still fails only its own call.
    log(fmt::format("tool '{}' threw: {}", tool_name, e.what()));
    result = WorkflowTools::error_result(fmt::format("{}: {}", tool_name, e.what()));
  }
  // structuredContent came with 2025-06-18; older clients get the same result as text content only. A tool with an
  // outputSchema promises structuredContent that follows it, which {"error": ...} does not: a failed call of such a
  // tool carries its error as text only (clients check structuredContent against the schema even when isError).
  if (result.is_object()) {
    const auto failed = result.find("isError");
    const bool is_error = failed != result.end() && failed->is_boolean() && failed->get<bool>();
    const auto& tool = tools_[found->second];
    if (version < "2025-06-18" || (is_error && !tool.output_schema.is_null())) result.erase("structuredContent");
  }
  return result_response(id, std::move(result));
}

}  // namespace mcp

CAIRN_END_NAMESPACE
