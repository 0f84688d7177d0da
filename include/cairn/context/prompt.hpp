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

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/artifact/relevance.hpp"
#include "cairn/context/execution_context.hpp"
#include "cairn/context/tool.hpp"
#include "cairn/detail/text.hpp"
#include "cairn/detail/time.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE

/// The size word of the catalog: `empty` (null), `N chars` (strings, counted in Unicode code points), `number`,
/// `boolean`, `array[N]`, `object{N keys}` (and `binary[N]` for binary values, which JSON text cannot hold).
std::string artifact_size_text(const nlohmann::json& value);

/// How the role of a message is shown: User, Assistant, System, Tool.
std::string_view role_label(Role role) noexcept;

/// The newest `limit` messages, one `Role: content` line each, oldest first; `No previous conversation.` when
/// there is none. A limit of 0 means no limit (every message), as CatalogOptions::max_chars of 0 does.
std::string format_conversation_history(const ExecutionContext& ctx, std::size_t limit = 10);

/// Options of format_artifacts_catalog.
struct CatalogOptions {
  /// Longest catalog text in characters (Unicode code points, as detail::utf8_length counts them; newlines count
  /// one each); 0 means no limit. Over the limit, the oldest entries are left out (the newest kept whole, never
  /// cut) and a line `(N older artifacts not shown)` follows the heading. The heading and that line are always
  /// shown, even when they alone exceed the limit.
  std::size_t max_chars = 0;
  /// When not empty (the current goal, the task), the bound artifacts are ranked by how relevant they are to this
  /// text: the context's store searches its tenant with relevance_query (any of the text's words, BM25; and the
  /// text's meaning too when the store has an embedder: hybrid), and the entries are shown most relevant first,
  /// then those the search did not rank (none of the words, no vector), newest first. Over max_chars the least
  /// relevant are left out, and the line says `(N less relevant artifacts not shown)`. A bound artifact is ranked
  /// by its id (the latest version of it). Throws what the store's search throws.
  std::string relevant_to;
  /// At most this many hits are read while looking for the bound artifacts (pages of SearchQuery::max_limit); bound
  /// artifacts ranked lower count as not ranked.
  std::size_t relevant_depth = 1000;
};

/// One catalog entry (four lines, no trailing newline). A record with no description shows its title; the purpose
/// defaults to what the description line shows.
std::string format_catalog_entry(const std::string& name, const ArtifactRecord& r);

/// `Available Artifacts (N):` and one entry per binding in insertion order (most relevant first with
/// CatalogOptions::relevant_to); `No artifacts available.` when the context holds none.
std::string format_artifacts_catalog(const ExecutionContext& ctx, const CatalogOptions& options = {});

/// Options of build_prompt.
struct PromptOptions {
  std::size_t history_limit = 10;  ///< newest messages shown; 0 shows them all
  CatalogOptions catalog;
};

/// `- name: description` and `  Input schema: {...}` per tool, in registration order; `No tools available.` when
/// there are none.
std::string format_tools(const ToolRegistry& tools);

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

#ifndef CAIRN_COMPILED_LIB
#include "cairn/context/prompt-inl.hpp"
#endif
