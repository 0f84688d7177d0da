// The one place that knows which Catch2 is installed: Catch2 3 (split headers) or Catch2 2.13 (single header).
// Test files include this and use only macros that both versions have.
#pragma once

#if defined(CAIRN_CATCH3)
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#else
#include <catch2/catch.hpp>
#endif

namespace cairn_test {
#if defined(CAIRN_CATCH3)
using Catch::Matchers::ContainsSubstring;
#else
inline auto ContainsSubstring(const std::string& s) { return Catch::Matchers::Contains(s); }
#endif
}  // namespace cairn_test
