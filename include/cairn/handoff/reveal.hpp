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
inline const std::string& artifact_summary(const ArtifactRecord& record) noexcept {
  return record.description().empty() ? record.title() : record.description();
}

inline std::string_view to_string(RevealPolicy policy) noexcept {
  switch (policy) {
    case RevealPolicy::none: return "none";
    case RevealPolicy::summary: return "summary";
    case RevealPolicy::full: return "full";
  }
  return "unknown";
}

inline RevealPolicy parse_reveal_policy(std::string_view name) {
  if (name == "none") return RevealPolicy::none;
  if (name == "summary") return RevealPolicy::summary;
  if (name == "full") return RevealPolicy::full;
  throw invalid_argument(
      fmt::format("reveal policy: '{}' is not one of none, summary, full", detail::excerpt(name)));
}

inline std::optional<std::string> artifact_text(const ArtifactRecord& record) {
  if (!record.has_value()) return std::nullopt;
  if (record.value().is_string()) return record.value().get<std::string>();
  return record.value().dump(2);
}

inline RevealResult reveal(std::string_view text, RevealPolicy policy, const ArtifactStore& store,
                           const std::string& tenant_id, const RevealOptions& options) {
  detail::check_tenant(tenant_id);
  if (text.size() > options.max_input_bytes) {
    throw limit_exceeded(fmt::format("reveal: text is {} bytes, more than the limit of {} bytes "
                                     "(RevealOptions::max_input_bytes)",
                                     text.size(), options.max_input_bytes));
  }

  // One lookup per id. A string value is appended straight from the shared record, never copied into the cache.
  struct Lookup {
    ArtifactPtr record;          // null: unresolved
    std::string replacement;     // what replaces the reference, unless it is the record's string value
    bool use_string_value = false;
  };
  std::unordered_map<std::string, Lookup> cache;
  std::unordered_set<std::string> reported;
  RevealResult result;
  result.text.reserve(text.size());

  auto lookup = [&](const std::string& id) -> const Lookup& {
    auto [it, inserted] = cache.try_emplace(id);
    if (!inserted) return it->second;
    Lookup& l = it->second;
    // An id no record could have is not worth a round trip (and some backends reject it).
    if (id.empty() || id.size() > ArtifactRecord::max_id_length) return l;
    l.record = store.fetch(id, tenant_id);
    if (!l.record) return l;
    switch (policy) {
      case RevealPolicy::none: l.replacement = render_reference(id); break;
      case RevealPolicy::summary: l.replacement = render_reference(id, artifact_summary(*l.record)); break;
      case RevealPolicy::full:
        if (!l.record->has_value()) {
          l.record = nullptr;  // nothing inline to show
        } else if (l.record->value().is_string()) {
          l.use_string_value = true;
        } else {
          l.replacement = l.record->value().dump(2);
        }
        break;
    }
    return l;
  };

  // `id` is null for plain text between references.
  auto append = [&](std::string_view piece, std::size_t at, const std::string* id) {
    if (result.text.size() + piece.size() > options.max_output_bytes) {
      throw limit_exceeded(fmt::format("reveal: the text would grow past {} bytes (RevealOptions::max_output_bytes) "
                                       "at {} at offset {}",
                                       options.max_output_bytes,
                                       id ? fmt::format("the reference to '{}'", detail::excerpt(*id)) : "text",
                                       at));
    }
    result.text.append(piece.data(), piece.size());
  };

  std::size_t copied = 0;
  scan_references(text, [&](const ArtifactReference& ref) {
    const Lookup& l = lookup(ref.id);
    if (reported.insert(ref.id).second) (l.record ? result.resolved : result.unresolved).push_back(ref.id);
    if (!l.record) return;  // stays as written; copied with the text around it
    append(text.substr(copied, ref.begin - copied), copied, nullptr);
    if (l.use_string_value) {
      append(l.record->value().get_ref<const std::string&>(), ref.begin, &ref.id);
    } else {
      append(l.replacement, ref.begin, &ref.id);
    }
    copied = ref.end;
  });
  append(text.substr(copied), copied, nullptr);
  return result;
}

inline RevealResult expand_references(std::string_view text, const ArtifactStore& store, const std::string& tenant_id,
                                      const RevealOptions& options) {
  return reveal(text, RevealPolicy::full, store, tenant_id, options);
}

CAIRN_END_NAMESPACE
