// cairn — the function bodies of cairn/context/prompt.hpp (docs/api.md, "Compiled mode"). Header-only, the
// default, that header includes this file and CAIRN_INLINE is `inline`; with CAIRN_COMPILED_LIB they are
// compiled once, into cairn::compiled (src/compiled/), and the header only declares them.
#pragma once

#include "cairn/context/prompt.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

CAIRN_INLINE std::string artifact_size_text(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null: return "empty";
    case nlohmann::json::value_t::string:
      return fmt::format("{} chars", detail::utf8_length(value.get_ref<const std::string&>()));
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float: return "number";
    case nlohmann::json::value_t::boolean: return "boolean";
    case nlohmann::json::value_t::array: return fmt::format("array[{}]", value.size());
    case nlohmann::json::value_t::object: return fmt::format("object{{{} keys}}", value.size());
    case nlohmann::json::value_t::binary: return fmt::format("binary[{}]", value.get_binary().size());
    case nlohmann::json::value_t::discarded: break;
  }
  return "empty";
}

CAIRN_INLINE std::string_view role_label(Role role) noexcept {
  switch (role) {
    case Role::user: return "User";
    case Role::assistant: return "Assistant";
    case Role::system: return "System";
    case Role::tool: return "Tool";
  }
  return "System";
}

CAIRN_INLINE std::string format_conversation_history(const ExecutionContext& ctx, std::size_t limit) {
  const std::vector<Message> messages = limit == 0 ? ctx.messages() : ctx.last_messages(limit);
  if (messages.empty()) return "No previous conversation.";
  std::string out;
  for (const Message& m : messages) {
    if (!out.empty()) out.push_back('\n');
    out += role_label(m.role);
    out += ": ";
    out += m.content;
  }
  return out;
}

CAIRN_INLINE std::string format_catalog_entry(const std::string& name, const ArtifactRecord& r) {
  const std::string& description = r.description().empty() ? r.title() : r.description();
  const std::string& purpose = r.purpose().empty() ? description : r.purpose();
  return fmt::format("- @{} ({}): {}\n  Purpose: {}\n  Created: {}\n  Size: {}", name, r.type().str(), description,
                     purpose, detail::iso8601_ms(r.created_at()), artifact_size_text(r.value()));
}

CAIRN_INLINE std::string format_artifacts_catalog(const ExecutionContext& ctx, const CatalogOptions& options) {
  const std::vector<NamedArtifact> artifacts = ctx.list_artifacts();
  if (artifacts.empty()) return "No artifacts available.";
  const std::string heading = fmt::format("Available Artifacts ({}):", artifacts.size());
  std::vector<std::string> entries;
  entries.reserve(artifacts.size());
  for (const NamedArtifact& a : artifacts) entries.push_back(format_catalog_entry(a.name, *a.record));

  // The entries in the order they earn a place: newest first, or most relevant first.
  std::vector<std::size_t> order(entries.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = order.size() - 1 - i;
  const bool by_relevance = !options.relevant_to.empty();
  if (by_relevance) {
    std::unordered_map<std::string, std::size_t> rank;  // id -> place in the search's results
    SearchQuery q = relevance_query(*ctx.store(), options.relevant_to);
    if (!q.text.empty()) {
      std::unordered_set<std::string> bound;
      for (const NamedArtifact& a : artifacts) bound.insert(a.record->id());
      q.limit = SearchQuery::max_limit;
      for (std::size_t read = 0;;) {
        const SearchPage page = ctx.store()->search(ctx.tenant_id(), q);
        for (const SearchHit& h : page.hits) {
          if (bound.count(h.record->id())) rank.emplace(h.record->id(), read);
          ++read;
        }
        if (!page.next_cursor || rank.size() == bound.size() || read >= options.relevant_depth) break;
        q.cursor = *page.next_cursor;
      }
    }
    const auto place = [&](std::size_t i) {
      const auto it = rank.find(artifacts[i].record->id());
      return it == rank.end() ? SIZE_MAX : it->second;
    };
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return place(a) < place(b); });
  }

  auto note = [by_relevance](std::size_t omitted) {
    return fmt::format("({} {} artifact{} not shown)", omitted, by_relevance ? "less relevant" : "older",
                       omitted == 1 ? "" : "s");
  };
  std::size_t kept = entries.size();
  if (options.max_chars != 0) {
    // Keep the longest run of the first entries of `order` that fits, counting the heading, the note and the
    // newlines, all in code points (the heading and the note are ASCII).
    kept = 0;
    std::size_t body = 0;
    while (kept < entries.size()) {
      const std::size_t next_body = body + 1 + detail::utf8_length(entries[order[kept]]);
      const std::size_t omitted = entries.size() - kept - 1;
      const std::size_t total = heading.size() + next_body + (omitted ? 1 + note(omitted).size() : 0);
      if (total > options.max_chars) break;
      body = next_body;
      ++kept;
    }
  }
  order.resize(kept);
  if (!by_relevance) std::reverse(order.begin(), order.end());  // the newest kept, shown in insertion order
  std::string out = heading;
  if (const std::size_t omitted = entries.size() - kept; omitted > 0) {
    out.push_back('\n');
    out += note(omitted);
  }
  for (const std::size_t i : order) {
    out.push_back('\n');
    out += entries[i];
  }
  return out;
}

CAIRN_INLINE std::string format_tools(const ToolRegistry& tools) {
  const auto list = tools.list();
  if (list.empty()) return "No tools available.";
  std::string out;
  for (const auto& t : list) {
    if (!out.empty()) out.push_back('\n');
    out += fmt::format("- {}: {}\n  Input schema: {}", t->name, t->description,
                       t->input_schema.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  return out;
}

CAIRN_END_NAMESPACE
