// cairn — the prompt text a model sees: the conversation, the artifact catalog and the whole prompt.
//
// The formats are seed 000's (§4–5) to the character, so prompts written for it keep working:
//
//     User: Create a web server for my application
//     Assistant: Executed file_write and stored output as @server_file
//
//     Available Artifacts (1):
//     - @server_file (file): Server implementation file
//       Purpose: File containing the Express server code
//       Created: 2024-05-01T12:00:00.000Z
//       Size: 14 chars
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/context/execution_context.hpp"
#include "cairn/context/tool.hpp"
#include "cairn/detail/text.hpp"
#include "cairn/detail/time.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

/// The size word of the catalog: `empty` (null), `N chars` (strings, counted in Unicode code points), `number`,
/// `boolean`, `array[N]`, `object{N keys}` (and `binary[N]` for binary values, which JSON text cannot hold).
inline std::string artifact_size_text(const nlohmann::json& value) {
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

/// How the role of a message is shown: User, Assistant, System, Tool.
inline std::string_view role_label(Role role) noexcept {
  switch (role) {
    case Role::user: return "User";
    case Role::assistant: return "Assistant";
    case Role::system: return "System";
    case Role::tool: return "Tool";
  }
  return "System";
}

/// The newest `limit` messages, one `Role: content` line each, oldest first; `No previous conversation.` when
/// there is none. A limit of 0 means no limit (every message), as CatalogOptions::max_chars of 0 does.
inline std::string format_conversation_history(const ExecutionContext& ctx, std::size_t limit = 10) {
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

/// Options of format_artifacts_catalog.
struct CatalogOptions {
  /// Longest catalog text in characters (Unicode code points, as detail::utf8_length counts them; newlines count
  /// one each); 0 means no limit. Over the limit, the oldest entries are left out (the newest kept whole, never
  /// cut) and a line `(N older artifacts not shown)` follows the heading. The heading and that line are always
  /// shown, even when they alone exceed the limit.
  std::size_t max_chars = 0;
};

/// One catalog entry (four lines, no trailing newline). A record with no description shows its title; the purpose
/// defaults to what the description line shows.
inline std::string format_catalog_entry(const std::string& name, const ArtifactRecord& r) {
  const std::string& description = r.description().empty() ? r.title() : r.description();
  const std::string& purpose = r.purpose().empty() ? description : r.purpose();
  return fmt::format("- @{} ({}): {}\n  Purpose: {}\n  Created: {}\n  Size: {}", name, r.type().str(), description,
                     purpose, detail::iso8601_ms(r.created_at()), artifact_size_text(r.value()));
}

/// `Available Artifacts (N):` and one entry per binding in insertion order; `No artifacts available.` when the
/// context holds none.
inline std::string format_artifacts_catalog(const ExecutionContext& ctx, const CatalogOptions& options = {}) {
  const std::vector<NamedArtifact> artifacts = ctx.list_artifacts();
  if (artifacts.empty()) return "No artifacts available.";
  const std::string heading = fmt::format("Available Artifacts ({}):", artifacts.size());
  std::vector<std::string> entries;
  entries.reserve(artifacts.size());
  for (const NamedArtifact& a : artifacts) entries.push_back(format_catalog_entry(a.name, *a.record));

  auto note = [](std::size_t omitted) {
    return fmt::format("({} older artifact{} not shown)", omitted, omitted == 1 ? "" : "s");
  };
  std::size_t kept = entries.size();
  if (options.max_chars != 0) {
    // Keep the longest run of newest entries that fits, counting the heading, the note and the newlines, all in
    // code points (the heading and the note are ASCII).
    kept = 0;
    std::size_t body = 0;
    while (kept < entries.size()) {
      const std::size_t next_body = body + 1 + detail::utf8_length(entries[entries.size() - 1 - kept]);
      const std::size_t omitted = entries.size() - kept - 1;
      const std::size_t total = heading.size() + next_body + (omitted ? 1 + note(omitted).size() : 0);
      if (total > options.max_chars) break;
      body = next_body;
      ++kept;
    }
  }
  std::string out = heading;
  const std::size_t first = entries.size() - kept;
  if (first > 0) {
    out.push_back('\n');
    out += note(first);
  }
  for (std::size_t i = first; i < entries.size(); ++i) {
    out.push_back('\n');
    out += entries[i];
  }
  return out;
}

/// Options of build_prompt.
struct PromptOptions {
  std::size_t history_limit = 10;  ///< newest messages shown; 0 shows them all
  CatalogOptions catalog;
};

/// `- name: description` and `  Input schema: {...}` per tool, in registration order; `No tools available.` when
/// there are none.
inline std::string format_tools(const ToolRegistry& tools) {
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

/// The whole prompt: seed 000's template (conversation, artifacts, task, instructions) with an `## Available Tools`
/// section after the artifacts. Starts with a newline and ends with `Your response:`, as the seed's does.
inline std::string build_prompt(std::string_view task, const ExecutionContext& ctx, const ToolRegistry& tools,
                                const PromptOptions& options = {}) {
  return fmt::format(R"(
## Conversation History
{}

## Available Artifacts
{}

## Available Tools
{}

## Current Task
{}

## Instructions

When you need to use a tool, specify it in this format:
{{
  "tool": "tool_name",
  "inputs": {{
    "parameter1": "direct value or @artifact_name",
    "parameter2": "@another_artifact"
  }},
  "outputs": [
    {{
      "name": "output_artifact_name",
      "type": "file|data|process|config|etc",
      "description": "Clear description of what this output is",
      "purpose": "Why this output is needed for the task"
    }}
  ]
}}

Important:
- Reference existing artifacts using @artifact_name in tool inputs
- Always specify meaningful names for outputs
- Each output MUST have a specific type (file, data, process, config, etc.)
- Include clear descriptions and purposes for outputs
- Artifact names should be descriptive (e.g., "server_config", "user_data", "api_response")

Your response:)",
                     format_conversation_history(ctx, options.history_limit),
                     format_artifacts_catalog(ctx, options.catalog), format_tools(tools), task);
}

CAIRN_END_NAMESPACE
