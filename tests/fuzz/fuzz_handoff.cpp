// Fuzzes the ARTIFACT reply parser and the <artifact/> tag scanner: they must never crash, references must be
// ordered spans inside the text, plain replies must come back unchanged, and revealing a text with no tag in it
// must be the identity.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>
#include <string_view>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/handoff/artifact_block.hpp"
#include "cairn/handoff/reference.hpp"
#include "cairn/handoff/reveal.hpp"
#include "fuzz.hpp"

namespace {
const cairn::InMemoryArtifactStore& store() {
  static const auto* s = [] {
    auto* st = new cairn::InMemoryArtifactStore();
    for (const char* id : {"a", "draft_k3x9", "x\"y"}) {
      (void)st->store(*cairn::ArtifactRecord::builder()
                           .tenant_id("t")
                           .id(id)
                           .type("document")
                           .title("T")
                           .description("S <&>")
                           .value(std::string("content of ") + id)
                           .build());
    }
    return st;
  }();
  return *s;
}

bool mentions_tag(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower.find("<artifact") != std::string::npos;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  try {
    const auto reply = cairn::parse_reply(text);
    if (reply.is_artifact()) {
      CAIRN_FUZZ_CHECK(reply.text.empty());
      CAIRN_FUZZ_CHECK(reply.artifact->content.find_first_not_of(" \t\r\n") != std::string::npos);
    } else {
      CAIRN_FUZZ_CHECK(reply.text == text);
    }
  } catch (const cairn::error&) {
  }

  const auto refs = cairn::find_references(text);
  std::size_t last_end = 0;
  for (const auto& r : refs) {
    CAIRN_FUZZ_CHECK(r.begin >= last_end);
    CAIRN_FUZZ_CHECK(r.begin < r.end);
    CAIRN_FUZZ_CHECK(r.end <= text.size());
    last_end = r.end;
  }

  for (auto policy : {cairn::RevealPolicy::none, cairn::RevealPolicy::summary, cairn::RevealPolicy::full}) {
    try {
      const auto out = cairn::reveal(text, policy, store(), "t");
      if (!mentions_tag(text)) {
        CAIRN_FUZZ_CHECK(out.text == text);
        CAIRN_FUZZ_CHECK(out.resolved.empty() && out.unresolved.empty());
      }
      CAIRN_FUZZ_CHECK(out.resolved.size() + out.unresolved.size() <= refs.size());
    } catch (const cairn::error&) {
    }
  }
  return 0;
}
