// cairn — reveal policies: how much of the artifacts behind <artifact/> references an agent gets to see.
//
// `none` shows only ids, `summary` ids and summaries, `full` the content itself. reveal() rewrites every reference
// in a text under a policy, looking each id up in the store within one tenant; expand_references() is the `full`
// policy, for the final answer to the user. Ids the store does not know (or that belong to another tenant) stay
// exactly as written and are reported, so a host can tell the user or the model.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "cairn/artifact/store.hpp"
#include "cairn/detail/enum_ostream.hpp"
#include "cairn/error.hpp"
#include "cairn/handoff/reference.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

/// What a reader of a text sees of the artifacts it references.
enum class RevealPolicy {
  none,     ///< `<artifact id="…" />`
  summary,  ///< `<artifact id="…" summary="…" />`
  full,     ///< the artifact's content in place of the reference
};

/// "none", "summary" or "full".
std::string_view to_string(RevealPolicy policy) noexcept;
CAIRN_DETAIL_ENUM_OSTREAM(RevealPolicy)

/// Reads "none", "summary" or "full" (as written in configuration). Throws cairn::invalid_argument otherwise.
RevealPolicy parse_reveal_policy(std::string_view name);

/// Limits of one reveal() call.
struct RevealOptions {
  std::size_t max_input_bytes = 64u * 1024u * 1024u;   ///< longest text accepted (64 MiB)
  std::size_t max_output_bytes = 64u * 1024u * 1024u;  ///< longest text produced; `full` can grow a text a lot
};

/// What reveal() made of a text.
struct RevealResult {
  std::string text;                     ///< the text with its references rewritten
  std::vector<std::string> resolved;    ///< ids rewritten under the policy, each once, in order of appearance
  std::vector<std::string> unresolved;  ///< ids left as written, each once, in order of appearance
};

/// Rewrites every reference in `text` (found as scan_references describes) under `policy`, reading artifacts of
/// `tenant_id` from `store`:
///
/// - `none` and `summary` write the reference in its canonical form; the summary comes from the stored record
///   (its description, else its title), not from the text, so a stale or forged summary is corrected.
/// - `full` writes the content: a string value as it is, any other JSON value pretty-printed. The content is not
///   scanned again, so references inside it stay as they are and cycles cannot happen.
/// - A reference whose id the tenant does not have (another tenant's id included), or, under `full`, whose record
///   holds no inline value (only a storage_url), stays exactly as written and its id is listed in `unresolved`.
///
/// Each id is fetched once per call, however often it appears.
///
///     auto r = cairn::reveal("Draft: <artifact id=\"draft_k3x9\" />", cairn::RevealPolicy::full, store, "acme");
///     // r.text == "Draft: # Dark mode\n...", r.resolved == {"draft_k3x9"}
///
/// Throws cairn::invalid_argument for an empty tenant, cairn::limit_exceeded when the text or the result is
/// longer than the options allow; the store's own errors pass through.
RevealResult reveal(std::string_view text, RevealPolicy policy, const ArtifactStore& store,
                    const std::string& tenant_id, const RevealOptions& options = {});

/// `reveal(text, RevealPolicy::full, …)`: the final answer for the user, with every reference replaced by its
/// content.
RevealResult expand_references(std::string_view text, const ArtifactStore& store, const std::string& tenant_id,
                               const RevealOptions& options = {});

/// What the `full` policy shows of a record: its value as text (a string as it is, other JSON pretty-printed), or
/// nothing when the record has no inline value.
std::optional<std::string> artifact_text(const ArtifactRecord& record);

/// The summary a reference to `record` carries: its description, else its title.
const std::string& artifact_summary(const ArtifactRecord& record) noexcept;

std::string_view to_string(RevealPolicy policy) noexcept;

RevealPolicy parse_reveal_policy(std::string_view name);

std::optional<std::string> artifact_text(const ArtifactRecord& record);

RevealResult reveal(std::string_view text, RevealPolicy policy, const ArtifactStore& store,
                    const std::string& tenant_id, const RevealOptions& options);

RevealResult expand_references(std::string_view text, const ArtifactStore& store, const std::string& tenant_id,
                               const RevealOptions& options);

CAIRN_END_NAMESPACE

#ifndef CAIRN_COMPILED_LIB
#include "cairn/handoff/reveal-inl.hpp"
#endif
