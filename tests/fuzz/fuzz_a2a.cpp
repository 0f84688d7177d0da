// Fuzzes from_a2a and message_part_from_json with outside JSON of either A2A version: every input is either refused
// with a cairn::error or gives a record (a part) that comes back unchanged through to_a2a (to_a2a_part) of both
// v1.0 and v0.3.0, through JSON text too.
#include <cstdint>
#include <string_view>

#include "cairn/artifact/a2a.hpp"
#include "cairn/artifact/message_part.hpp"
#include "fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  cairn::JsonLimits limits;
  limits.max_bytes = 1 << 20;
  limits.max_depth = 64;
  nlohmann::json j;
  try {
    j = cairn::detail::parse_json(text, limits, "fuzz input");
  } catch (const cairn::error&) {
    return 0;
  }
  constexpr cairn::A2AVersion versions[] = {cairn::A2AVersion::v1_0, cairn::A2AVersion::v0_3};
  try {
    auto r = cairn::from_a2a(j, "fuzz-tenant");
    CAIRN_FUZZ_CHECK(r->tenant_id() == "fuzz-tenant");
    for (const auto v : versions) {
      const nlohmann::json a = cairn::to_a2a(*r, v);
      CAIRN_FUZZ_CHECK(*cairn::from_a2a(a, "fuzz-tenant") == *r);
      CAIRN_FUZZ_CHECK(*cairn::from_a2a(nlohmann::json::parse(a.dump()), "fuzz-tenant") == *r);
      // Never the tenant: the same record in another tenant gives the same artifact.
      CAIRN_FUZZ_CHECK(cairn::to_a2a(*r->to_builder().tenant_id("other").build(), v) == a);
    }
  } catch (const cairn::error&) {
  }
  try {
    const auto part = cairn::message_part_from_json(j);
    for (const auto v : versions) {
      CAIRN_FUZZ_CHECK(cairn::message_part_from_json(cairn::to_a2a_part(part, v)) == part);
    }
  } catch (const cairn::error&) {
  }
  return 0;
}
