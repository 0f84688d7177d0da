// cairn — mcp::ArtifactTools: an ArtifactStore as six MCP tools (artifact_store, artifact_fetch, artifact_list,
// artifact_versions, artifact_delete, search_artifacts) for ONE tenant, fixed when the tools are made.
//
// Shaped like the workflow tools ({name, description, input_schema, handler}, handlers returning a CallToolResult
// and never throwing), so mcp::Server serves both alike. No argument names a tenant: `tenant_id` is refused with
// an error result, so a client can neither read nor write another tenant's artifacts, and another tenant's id
// reads exactly like a missing one.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/artifact/a2a.hpp"
#include "cairn/artifact/record.hpp"
#include "cairn/artifact/store.hpp"
#include "cairn/artifact/type.hpp"
#include "cairn/detail/text.hpp"
#include "cairn/error.hpp"
#include "cairn/mcp/server.hpp"
#include "cairn/version.hpp"
#include "cairn/workflow/tools.hpp"

CAIRN_BEGIN_NAMESPACE
namespace mcp {

/// The artifact tools of one tenant. Thread-safe when the store is (every ArtifactStore is); the handlers keep the
/// store alive and stay valid after this object is gone.
///
///     cairn::mcp::ArtifactTools artifacts(std::make_shared<cairn::InMemoryArtifactStore>(), "acme");
///     auto r = artifacts.call("artifact_store", {{"type", "document"}, {"title", "Plan"}, {"value", "# Plan"}});
///     std::string id = r["structuredContent"]["id"];
class ArtifactTools {
 public:
  /// Throws cairn::invalid_argument for a null store or an empty tenant.
  ArtifactTools(std::shared_ptr<ArtifactStore> store, std::string tenant_id);

  const std::vector<Tool>& tools() const noexcept { return tools_; }

  /// Calls tool `name`; an unknown name is an error result.
  nlohmann::json call(std::string_view name, const nlohmann::json& arguments) const;

 private:
  struct Impl {
    std::shared_ptr<ArtifactStore> store;
    std::string tenant;
  };
  using ImplPtr = std::shared_ptr<const Impl>;
  using Args = const nlohmann::json&;

  static void check_args(std::string_view tool, Args a, std::initializer_list<std::string_view> known);
  static std::optional<std::string> opt_string(std::string_view tool, Args a, const char* key);
  static std::string required_string(std::string_view tool, Args a, const char* key);
  static std::optional<std::uint64_t> opt_positive(std::string_view tool, Args a, const char* key, std::uint64_t max);

  static nlohmann::json guarded(const std::function<nlohmann::json()>& body);

  // search_artifacts' filter argument; throws cairn::invalid_argument naming the field (filter.metadata[1].op).
  static SearchFilter search_filter(Args f);

  // What lists show of a record: everything but the value, which may be large.
  static nlohmann::json summary(const ArtifactRecord& r);

  void build(const ImplPtr& impl);

  std::vector<Tool> tools_;
};

}  // namespace mcp
CAIRN_END_NAMESPACE

#ifndef CAIRN_COMPILED_LIB
#include "cairn/mcp/artifact_tools-inl.hpp"
#endif
