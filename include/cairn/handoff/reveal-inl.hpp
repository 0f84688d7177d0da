// cairn — the function bodies of cairn/handoff/reveal.hpp (docs/api.md, "Compiled mode"). Header-only, the
// default, that header includes this file and CAIRN_INLINE is `inline`; with CAIRN_COMPILED_LIB they are
// compiled once, into cairn::compiled (src/compiled/), and the header only declares them.
#pragma once

#include "cairn/handoff/reveal.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

CAIRN_INLINE const std::string& artifact_summary(const ArtifactRecord& record) noexcept {
  return record.description().empty() ? record.title() : record.description();
}

CAIRN_INLINE std::string_view to_string(RevealPolicy policy) noexcept {
  switch (policy) {
    case RevealPolicy::none: return "none";
    case RevealPolicy::summary: return "summary";
    case RevealPolicy::full: return "full";
  }
  return "unknown";
}

CAIRN_INLINE RevealPolicy parse_reveal_policy(std::string_view name) {
  if (name == "none") return RevealPolicy::none;
  if (name == "summary") return RevealPolicy::summary;
  if (name == "full") return RevealPolicy::full;
  throw invalid_argument(fmt::format("reveal policy: '{}' is not one of none, summary, full", detail::excerpt(name)));
}

CAIRN_INLINE std::optional<std::string> artifact_text(const ArtifactRecord& record) {
  if (!record.has_value()) return std::nullopt;
  if (record.value().is_string()) return record.value().get<std::string>();
  return record.value().dump(2);
}

CAIRN_INLINE RevealResult reveal(std::string_view text, RevealPolicy policy, const ArtifactStore& store,
                                 const std::string& tenant_id, const RevealOptions& options) {
  detail::check_tenant(tenant_id);
  if (text.size() > options.max_input_bytes) {
    throw limit_exceeded(
        fmt::format("reveal: text is {} bytes, more than the limit of {} bytes "
                    "(RevealOptions::max_input_bytes)",
                    text.size(), options.max_input_bytes));
  }

  // One lookup per id. A string value is appended straight from the shared record, never copied into the cache.
  struct Lookup {
    ArtifactPtr record;       // null: unresolved
    std::string replacement;  // what replaces the reference, unless it is the record's string value
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
      throw limit_exceeded(fmt::format(
          "reveal: the text would grow past {} bytes (RevealOptions::max_output_bytes) "
          "at {} at offset {}",
          options.max_output_bytes, id ? fmt::format("the reference to '{}'", detail::excerpt(*id)) : "text", at));
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

CAIRN_INLINE RevealResult expand_references(std::string_view text, const ArtifactStore& store,
                                            const std::string& tenant_id, const RevealOptions& options) {
  return reveal(text, RevealPolicy::full, store, tenant_id, options);
}

CAIRN_END_NAMESPACE
