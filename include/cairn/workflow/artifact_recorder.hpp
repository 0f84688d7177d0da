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
#include "cairn/version.hpp"
#include "cairn/workflow/machine.hpp"

CAIRN_BEGIN_NAMESPACE

/// An observer that stores one `file` record per newly registered artefact in `store`, under `tenant_id`:
/// value = the absolute path, title = the workspace-relative path, size_bytes, and metadata
/// `{source: "register_artefacts", workflow, step, task_id?, sub_step?, relative_path}`. The store assigns the id.
/// Thread-safe when the store is (every ArtifactStore is).
///
///     machine.set_artifact_observer(cairn::artifact_recorder(store, "acme", "coder"));
ArtifactObserver artifact_recorder(std::shared_ptr<ArtifactStore> store, std::string tenant_id,
                                   std::optional<std::string> created_by = std::nullopt);

/// The spelling of cairn 0.1, kept for one release (docs/api.md).
[[deprecated("use cairn::artifact_recorder")]] inline ArtifactObserver artefact_recorder(
    std::shared_ptr<ArtifactStore> store, std::string tenant_id, std::optional<std::string> created_by = std::nullopt) {
  return artifact_recorder(std::move(store), std::move(tenant_id), std::move(created_by));
}

CAIRN_END_NAMESPACE

#ifndef CAIRN_COMPILED_LIB
#include "cairn/workflow/artifact_recorder-inl.hpp"
#endif
