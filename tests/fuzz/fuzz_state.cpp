// Fuzzes saved workflow states (the JSON a state file holds): bad states are rejected with a cairn::error, good
// ones round-trip and keep running.
#include <cstdint>
#include <filesystem>
#include <string_view>

#include "cairn/workflow/machine.hpp"
#include "fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  cairn::JsonLimits limits;
  limits.max_bytes = 1 << 20;
  limits.max_depth = 64;
  const auto root = std::filesystem::temp_directory_path();
  try {
    auto machine = cairn::WorkflowMachine::from_json(cairn::detail::parse_json(text, limits, "state"), root);
    const auto j = machine.to_json();
    CAIRN_FUZZ_CHECK(cairn::WorkflowMachine::from_json(j, root).to_json() == j);
    for (int i = 0; i < 4; ++i) {
      try {
        machine.advance("more");
      } catch (const cairn::error&) {
        break;
      }
    }
  } catch (const cairn::error&) {
  }
  return 0;
}
