// Fuzzes workflow templates (JSON, and YAML when cairn::yaml is built): outside text is either rejected with a
// cairn::error or gives a template that survives its JSON round trip and can be started and advanced.
#include <cstdint>
#include <filesystem>
#include <string_view>

#include "cairn/workflow/machine.hpp"
#include "cairn/workflow/template.hpp"
#if defined(CAIRN_FUZZ_YAML)
#include "cairn/workflow/yaml.hpp"
#endif
#include "fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  cairn::JsonLimits limits;
  limits.max_bytes = 1 << 20;
  limits.max_depth = 64;
  try {
#if defined(CAIRN_FUZZ_YAML)
    cairn::YamlLimits yaml_limits;
    yaml_limits.max_bytes = 1 << 20;
    auto tmpl = cairn::load_template_yaml(text, yaml_limits);
#else
    auto tmpl = cairn::WorkflowTemplate::parse(text, limits);
#endif
    CAIRN_FUZZ_CHECK(cairn::WorkflowTemplate::from_json(tmpl.to_json()) == tmpl);
    // A machine over any valid template starts and advances without anything but cairn errors; it never touches
    // the disk unless artefacts are registered, which this does not do.
    cairn::WorkflowMachine machine(tmpl, std::filesystem::temp_directory_path());
    machine.start("fuzz");
    for (int i = 0; i < 8; ++i) {
      try {
        machine.advance("output " + std::to_string(i));
      } catch (const cairn::error&) {
        break;
      }
    }
    const auto j = machine.to_json();
    CAIRN_FUZZ_CHECK(cairn::WorkflowMachine::from_json(j, std::filesystem::temp_directory_path()).to_json() == j);
  } catch (const cairn::error&) {
  }
  return 0;
}
