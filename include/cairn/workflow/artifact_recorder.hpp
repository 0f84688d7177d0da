// cairn — artifact_recorder: an ArtifactObserver that stores every registered workflow artefact as a `file`
// artifact, so the files an agent produced can be found through an ArtifactStore like anything else it made.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/artifact/record.hpp"
#include "cairn/artifact/store.hpp"
#include "cairn/artifact/type.hpp"
#include "cairn/detail/text.hpp"
#include "cairn/error.hpp"
#include "cairn/workflow/machine.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

/// An observer that stores one `file` record per newly registered artefact in `store`, under `tenant_id`:
/// value = the absolute path, title = the workspace-relative path, size_bytes, and metadata
/// `{source: "register_artefacts", workflow, step, task_id?, sub_step?, relative_path}`. The store assigns the id.
/// Thread-safe when the store is (every ArtifactStore is).
///
///     machine.set_artifact_observer(cairn::artifact_recorder(store, "acme", "coder"));
inline ArtifactObserver artifact_recorder(std::shared_ptr<ArtifactStore> store, std::string tenant_id,
                                          std::optional<std::string> created_by = std::nullopt) {
  if (!store) throw invalid_argument("artifact_recorder: store must not be null");
  detail::check_tenant(tenant_id);
  return [store = std::move(store), tenant_id = std::move(tenant_id),
          created_by = std::move(created_by)](const ArtifactEvent& e) {
    nlohmann::json meta = {{"source", "register_artefacts"},
                           {"workflow", e.workflow},
                           {"step", e.step},
                           {"relative_path", e.relative_path}};
    if (e.task_id) meta["task_id"] = *e.task_id;
    if (e.sub_step) meta["sub_step"] = *e.sub_step;
    // A title holds at most 500 code points; a deeper path keeps its file name.
    std::string title = e.relative_path;
    if (detail::utf8_length(title) > ArtifactRecord::max_title_length) {
      const auto slash = title.find_last_of('/');
      title = slash == std::string::npos ? title.substr(0, 400) : title.substr(slash + 1);
      if (detail::utf8_length(title) > ArtifactRecord::max_title_length) title = "artefact";
    }
    auto b = ArtifactRecord::builder();
    b.tenant_id(tenant_id)
        .type(ArtifactType::file)
        .title(std::move(title))
        .description(fmt::format("File registered at step '{}' of workflow '{}'", e.step, e.workflow))
        .value(e.absolute_path)
        .size_bytes(e.size_bytes)
        .metadata(std::move(meta));
    if (created_by) b.created_by(*created_by);
    (void)store->store(*b.build());
  };
}

/// The spelling of cairn 0.1, kept for one release (docs/api.md).
[[deprecated("use cairn::artifact_recorder")]] inline ArtifactObserver artefact_recorder(
    std::shared_ptr<ArtifactStore> store, std::string tenant_id, std::optional<std::string> created_by = std::nullopt) {
  return artifact_recorder(std::move(store), std::move(tenant_id), std::move(created_by));
}

CAIRN_END_NAMESPACE
