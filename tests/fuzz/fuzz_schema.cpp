// Fuzzes the JSON Schema check (issue 25): random schemas × random values. The input is a schema's JSON text and a
// value's JSON text separated by a line holding only `---`. A schema either compiles or is refused with a
// cairn::error; a value is then checked without crashing, hanging (the step budget) or overflowing the stack (the
// depth limits), and the check is consistent: the same answer twice, the fast path (no messages) agreeing with
// the counted one, `true` accepting everything, `false` refusing everything.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "cairn/context/schema.hpp"
#include "cairn/detail/json.hpp"
#include "fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto split = text.find("\n---\n");
  const std::string_view schema_text = text.substr(0, split);
  const std::string_view value_text =
      split == std::string_view::npos ? std::string_view("null") : text.substr(split + 5);
  cairn::JsonLimits limits;
  limits.max_bytes = 1 << 16;
  limits.max_depth = 200;
  nlohmann::json schema, value;
  try {
    schema = cairn::detail::parse_json(schema_text, limits, "schema");
    value = cairn::detail::parse_json(value_text, limits, "value");
  } catch (const cairn::error&) {
    return 0;
  }
  cairn::SchemaLimits bounds;
  bounds.max_check_steps = 20000;  // keeps every run short; the budget's own path is fuzzed too
  bounds.check_steps_per_value_node = 8;
  std::optional<cairn::CompiledSchema> compiled;
  try {
    compiled.emplace(schema, "fuzz", bounds);
  } catch (const cairn::invalid_argument&) {
    return 0;
  }
  for (const nlohmann::json* v : {&value, &schema}) {
    std::size_t total = 0;
    const auto first = compiled->validate(*v, 3, &total);
    CAIRN_FUZZ_CHECK(first.size() <= 3);
    CAIRN_FUZZ_CHECK(first.empty() == (total == 0));
    CAIRN_FUZZ_CHECK(first.size() <= total);
    std::size_t again_total = 0;
    const auto again = compiled->validate(*v, 0, &again_total);
    CAIRN_FUZZ_CHECK(again.empty());
    CAIRN_FUZZ_CHECK(again_total == total);
    for (const auto& violation : first) CAIRN_FUZZ_CHECK(!violation.rule.empty() && !violation.message.empty());
    if (schema.is_boolean()) CAIRN_FUZZ_CHECK(first.empty() == schema.get<bool>());
  }
  return 0;
}
