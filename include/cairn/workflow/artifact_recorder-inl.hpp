// cairn — the function bodies of cairn/workflow/artifact_recorder.hpp (docs/api.md, "Compiled mode"). Header-only, the
// default, that header includes this file and CAIRN_INLINE is `inline`; with CAIRN_COMPILED_LIB they are
// compiled once, into cairn::compiled (src/compiled/), and the header only declares them.
#pragma once

#include "cairn/version.hpp"
#include "cairn/workflow/artifact_recorder.hpp"

CAIRN_BEGIN_NAMESPACE

CAIRN_INLINE ArtifactObserver artifact_recorder(std::shared_ptr<ArtifactStore> store, std::string tenant_id,
                                                std::optional<std::string> created_by) {
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

CAIRN_END_NAMESPACE
