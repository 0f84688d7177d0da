// Fuzzes ToolCall parsing (a model's reply) and @name resolution: bad replies are rejected with a cairn::error,
// good ones round-trip through JSON, inputs without references resolve to themselves, and a reference to a name
// the context lacks never resolves silently.
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "cairn/artifact/memory_store.hpp"
#include "cairn/context/execution_context.hpp"
#include "cairn/context/resolve.hpp"
#include "cairn/context/tool.hpp"
#include "fuzz.hpp"

namespace {
cairn::ExecutionContext& context() {
  static auto* ctx = [] {
    auto* c = new cairn::ExecutionContext(std::make_shared<cairn::InMemoryArtifactStore>(), "fuzz");
    c->add_artifact(
        "a",
        cairn::ArtifactRecord::builder().tenant_id("fuzz").type("data").title("a").value("/tmp/a.txt").build_value());
    c->add_artifact("cfg", cairn::ArtifactRecord::builder()
                               .tenant_id("fuzz")
                               .type("config")
                               .title("cfg")
                               .value({{"port", 3000}, {"list", {1, 2, {{"x~/y", true}}}}})
                               .build_value());
    return c;
  }();
  return *ctx;
}

bool has_at_string(const nlohmann::json& j) {
  std::vector<const nlohmann::json*> todo{&j};
  while (!todo.empty()) {
    const auto* n = todo.back();
    todo.pop_back();
    if (n->is_string() && !n->get_ref<const std::string&>().empty() && n->get_ref<const std::string&>()[0] == '@') {
      return true;
    }
    if (n->is_structured()) {
      for (const auto& c : *n) todo.push_back(&c);
    }
  }
  return false;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  cairn::JsonLimits limits;
  limits.max_bytes = 1 << 20;
  limits.max_depth = 64;
  cairn::ToolCall call;
  try {
    call = cairn::ToolCall::parse(text, limits);
  } catch (const cairn::error&) {
    return 0;
  }
  const nlohmann::json j = call;
  const auto again = cairn::ToolCall::from_json(j, limits);
  CAIRN_FUZZ_CHECK(nlohmann::json(again) == j);

  auto& ctx = context();
  std::vector<std::string> refs;
  try {
    refs = cairn::references(call.inputs);
  } catch (const cairn::error&) {
    return 0;
  }
  bool unknown = false;
  for (const auto& name : refs) unknown = unknown || !ctx.get_artifact(name);
  try {
    const auto resolved = ctx.resolve(call.inputs);
    CAIRN_FUZZ_CHECK(!unknown);
    if (!has_at_string(call.inputs)) CAIRN_FUZZ_CHECK(resolved == call.inputs);
  } catch (const cairn::error&) {
  }
  return 0;
}
