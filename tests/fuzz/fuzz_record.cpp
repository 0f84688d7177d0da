// Fuzzes the record and A2A parsers: outside JSON must either be rejected with a cairn::error or give a record
// that survives its JSON and A2A round trips unchanged (A2A: when it has an id; without one from_a2a refuses it).
#include <cstdint>
#include <string_view>

#include "cairn/artifact/a2a.hpp"
#include "cairn/artifact/message_part.hpp"
#include "cairn/artifact/record.hpp"
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
  try {
    auto r = cairn::ArtifactRecord::from_json(j);
    nlohmann::json again = *r;
    CAIRN_FUZZ_CHECK(*cairn::ArtifactRecord::from_json(again) == *r);
    if (r->id().empty()) {
      // A record not stored yet has no id, and an A2A artifactId must not be empty: from_a2a refuses it rather
      // than let a store pick a new id.
      bool refused = false;
      try {
        cairn::from_a2a(cairn::to_a2a(*r), r->tenant_id());
      } catch (const cairn::invalid_artifact&) {
        refused = true;
      }
      CAIRN_FUZZ_CHECK(refused);
    } else {
      CAIRN_FUZZ_CHECK(*cairn::from_a2a(cairn::to_a2a(*r), r->tenant_id()) == *r);
    }
  } catch (const cairn::error&) {
  }
  try {
    auto r = cairn::from_a2a(j, "fuzz-tenant");
    CAIRN_FUZZ_CHECK(r->tenant_id() == "fuzz-tenant");
    CAIRN_FUZZ_CHECK(*cairn::from_a2a(cairn::to_a2a(*r), "fuzz-tenant") == *r);
  } catch (const cairn::error&) {
  }
  try {
    auto part = cairn::message_part_from_json(j);
    nlohmann::json again = part;
    CAIRN_FUZZ_CHECK(cairn::message_part_from_json(again) == part);
  } catch (const cairn::error&) {
  }
  return 0;
}
