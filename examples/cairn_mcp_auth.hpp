// cairn-mcp --http as an OAuth 2.1 resource server (2026-07-28 basic/authorization): bearer JWTs signed RS256 or
// ES256, verified with libjwt (Debian libjwt-dev) against public keys the operator configures; audience, expiry (and
// issuer, when configured) checked; a claim the operator names gives the tenant, the `scope` claim what the token may
// call. Part of the executable only (docs/mcp.md, "Authorization").
#pragma once

#include <jwt.h>

#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace cairn_mcp {

struct AuthOptions {
  std::vector<std::string> keys;                   ///< PEM public keys (RSA or EC P-256); a token may match any
  std::string audience;                            ///< the `aud` every token must carry: this server's URL
  std::optional<std::string> issuer;               ///< when set, the `iss` every token must carry
  std::vector<std::string> authorization_servers;  ///< listed in the protected resource metadata (RFC 9728)
  std::string tenant_claim = "tenant";             ///< the claim naming the token's tenant
  std::string read_scope = "cairn:read";           ///< read-only tools
  std::string write_scope = "cairn:write";         ///< tools that change something without destroying it
  std::string delete_scope = "cairn:delete";       ///< destructive tools (artifact_delete, workflow_set_tasks)
  long leeway_seconds = 60;                        ///< clock skew allowed on exp and nbf

  bool enabled() const { return !keys.empty(); }
};

/// Who a verified token speaks for.
struct Principal {
  std::string tenant;
  std::set<std::string> scopes;
};

/// Why a token was refused: 401 with `error="invalid_token"`, or none at all (no Authorization header).
struct AuthFailure {
  std::string error;        ///< "invalid_request" or "invalid_token"; empty: no credentials were given
  std::string description;  ///< for error_description and the log
};

class TokenVerifier {
 public:
  explicit TokenVerifier(AuthOptions options) : options_(std::move(options)) {}

  const AuthOptions& options() const { return options_; }

  /// The principal of an `Authorization: Bearer <jwt>` header value, or why there is none.
  std::pair<std::optional<Principal>, AuthFailure> verify(const std::string& authorization) const {
    if (authorization.empty()) return {std::nullopt, {"", "no bearer token"}};
    static const std::string prefix = "bearer ";
    if (authorization.size() <= prefix.size() || !iequals(authorization.substr(0, prefix.size()), prefix)) {
      return {std::nullopt, {"invalid_request", "the Authorization header must be 'Bearer <token>'"}};
    }
    const std::string token = authorization.substr(prefix.size());
    if (token.size() > 16384) return {std::nullopt, {"invalid_token", "the token is longer than 16384 bytes"}};
    jwt_t* decoded = nullptr;
    for (const auto& key : options_.keys) {
      if (jwt_decode(&decoded, token.c_str(), reinterpret_cast<const unsigned char*>(key.data()),
                     static_cast<int>(key.size())) == 0) {
        break;
      }
      decoded = nullptr;
    }
    if (!decoded) return {std::nullopt, {"invalid_token", "the token's signature matches no configured key"}};
    std::unique_ptr<jwt_t, void (*)(jwt_t*)> owner(decoded, jwt_free);
    // Only the asymmetric algorithms: an HS256 token "signed" with a public key as its secret must not pass.
    const auto alg = jwt_get_alg(decoded);
    if (alg != JWT_ALG_RS256 && alg != JWT_ALG_ES256) {
      return {std::nullopt, {"invalid_token", "the token must be signed RS256 or ES256"}};
    }
    char* grants_text = jwt_get_grants_json(decoded, nullptr);
    if (!grants_text) return {std::nullopt, {"invalid_token", "the token has no claims"}};
    nlohmann::json claims = nlohmann::json::parse(grants_text, nullptr, false);
    std::free(grants_text);
    if (!claims.is_object()) return {std::nullopt, {"invalid_token", "the token's claims are not a JSON object"}};

    const long now = static_cast<long>(std::time(nullptr));
    const auto exp = claims.find("exp");
    if (exp == claims.end() || !exp->is_number()) return {std::nullopt, {"invalid_token", "the token has no exp"}};
    if (exp->get<double>() + static_cast<double>(options_.leeway_seconds) < static_cast<double>(now)) {
      return {std::nullopt, {"invalid_token", "the token has expired"}};
    }
    if (const auto nbf = claims.find("nbf"); nbf != claims.end() && nbf->is_number() &&
                                             nbf->get<double>() > static_cast<double>(now + options_.leeway_seconds)) {
      return {std::nullopt, {"invalid_token", "the token is not valid yet (nbf)"}};
    }
    bool audience_ok = false;
    if (const auto aud = claims.find("aud"); aud != claims.end()) {
      if (aud->is_string()) audience_ok = *aud == options_.audience;
      if (aud->is_array()) {
        for (const auto& a : *aud) audience_ok = audience_ok || (a.is_string() && a == options_.audience);
      }
    }
    if (!audience_ok) {
      return {std::nullopt, {"invalid_token", "the token's audience is not " + options_.audience}};
    }
    if (options_.issuer) {
      const auto iss = claims.find("iss");
      if (iss == claims.end() || !iss->is_string() || *iss != *options_.issuer) {
        return {std::nullopt, {"invalid_token", "the token's issuer is not " + *options_.issuer}};
      }
    }
    Principal p;
    const auto tenant = claims.find(options_.tenant_claim);
    if (tenant == claims.end() || !tenant->is_string() || tenant->get_ref<const std::string&>().empty()) {
      return {std::nullopt, {"invalid_token", "the token names no tenant (claim '" + options_.tenant_claim + "')"}};
    }
    p.tenant = tenant->get<std::string>();
    if (const auto scope = claims.find("scope"); scope != claims.end() && scope->is_string()) {
      std::istringstream words(scope->get<std::string>());
      for (std::string w; words >> w;) p.scopes.insert(w);
    }
    if (const auto scp = claims.find("scp"); scp != claims.end() && scp->is_array()) {
      for (const auto& s : *scp) {
        if (s.is_string()) p.scopes.insert(s.get<std::string>());
      }
    }
    return {std::move(p), {}};
  }

  /// The scope a tool needs, from its annotations: read-only tools the read scope, destructive ones the delete
  /// scope, the others the write scope.
  const std::string& scope_for(const nlohmann::json& annotations) const {
    if (annotations.is_object() && annotations.value("readOnlyHint", false)) return options_.read_scope;
    if (annotations.is_object() && annotations.value("destructiveHint", true)) return options_.delete_scope;
    return options_.write_scope;
  }

 private:
  static bool iequals(const std::string& a, const std::string& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) {
        return false;
      }
    }
    return true;
  }

  AuthOptions options_;
};

}  // namespace cairn_mcp
