// cairn — YAML workflow templates (the compiled cairn::yaml target; CAIRN_WITH_YAML=ON, links yaml-cpp).
//
// The YAML is turned into JSON (YAML 1.2 core schema: plain `true`, `12`, `1.5`, `null`/`~` are typed, quoted
// scalars are strings) and validated exactly like a JSON template, so errors name the same paths
// (`steps[2].n must be a positive integer`).
#pragma once

#include <cstddef>
#include <filesystem>
#include <string_view>

#include <nlohmann/json.hpp>

#include "cairn/version.hpp"
#include "cairn/workflow/template.hpp"

CAIRN_BEGIN_NAMESPACE

/// Limits applied to YAML from outside the program.
struct YamlLimits {
  std::size_t max_bytes = 4u * 1024u * 1024u;  ///< longest accepted text
  int max_depth = 64;                          ///< deepest nesting of mappings and sequences
  std::size_t max_nodes = 100000;              ///< values after expanding aliases (stops "billion laughs")
};

/// One YAML document as JSON. `what` names the input in errors. Throws cairn::parse_error for malformed YAML (with
/// line and column), several documents, a non-scalar or repeated mapping key, or an unknown alias, and
/// cairn::limit_exceeded past `limits`.
nlohmann::json yaml_to_json(std::string_view text, const YamlLimits& limits = {}, std::string_view what = "YAML");

/// A template from YAML text: yaml_to_json, then WorkflowTemplate::from_json (cairn::invalid_template naming the
/// path).
///
///     auto tmpl = cairn::load_template_yaml("name: fix\nsteps:\n  - {id: fix, type: action, instructions: Fix}\n");
WorkflowTemplate load_template_yaml(std::string_view text, const YamlLimits& limits = {});

/// A template from a YAML file. Throws cairn::storage_error when the file cannot be read, and what
/// load_template_yaml throws (messages start with the file's path).
WorkflowTemplate load_template_yaml_file(const std::filesystem::path& path, const YamlLimits& limits = {});

CAIRN_END_NAMESPACE
