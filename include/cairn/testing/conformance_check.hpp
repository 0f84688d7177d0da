// cairn::testing — what the conformance suites are made of: a named check, the failure it throws, and the helpers
// the store and search checks share (cairn/testing/store_conformance.hpp, cairn/testing/search_conformance.hpp).
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cairn/artifact/record.hpp"
#include "cairn/artifact/store.hpp"
#include "cairn/detail/random.hpp"
#include "cairn/error.hpp"
#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace testing {
/// Thrown by a check that found the store misbehaving; the message says what was expected and where.
class conformance_failure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One named behaviour check.
struct ConformanceCheck {
  std::string name;
  std::function<void(ArtifactStore&)> run;
};

namespace detail {

inline void expect(bool ok, const std::string& what, int line, const char* file = "store_conformance.hpp") {
  if (!ok) throw conformance_failure(fmt::format("{}:{}: expected {}", file, line, what));
}

/// Runs `f` and returns the message of the exception of type E it throws; fails when it throws nothing or
/// something else.
template <typename E, typename F>
std::string expect_throw(F&& f, const char* what, int line, const char* file = "store_conformance.hpp") {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    throw conformance_failure(fmt::format("{}:{}: {} threw the wrong exception: {}", file, line, what, e.what()));
  }
  throw conformance_failure(fmt::format("{}:{}: {} did not throw", file, line, what));
}

inline std::string fresh_tenant(const char* tag) {
  return fmt::format("conformance-{}-{}", tag,
                     cairn::detail::random_string(10, "abcdefghijklmnopqrstuvwxyz0123456789"));
}

inline ArtifactRecord::Builder note(const std::string& tenant, const std::string& id, nlohmann::json value) {
  auto b = ArtifactRecord::builder();
  b.tenant_id(tenant).id(id).type(ArtifactType::document).title("note " + id).value(std::move(value));
  return b;
}

}  // namespace detail
}  // namespace testing
CAIRN_END_NAMESPACE
