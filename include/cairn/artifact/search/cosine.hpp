// cairn::detail — the cosine similarity every store ranks by (detail::cosine in rank.hpp) over plain arrays, so
// the vector index can score the copies it keeps with the same arithmetic, to the last bit.
#pragma once

#include <cmath>
#include <cstddef>

#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace detail {

/// The sum of a[i] * b[i] in double, in a fixed order: eight partial sums (the j-th adds the products of i = j,
/// j + 8, j + 16, ... below the last multiple of 8), added as ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)),
/// then the last n % 8 products in index order. Eight independent sums, not one chain: about eight times faster than
/// index order, and the same bits wherever it runs (no reassociation is left to the compiler).
inline double dot_of(const float* a, const float* b, std::size_t n) noexcept {
  double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (std::size_t j = 0; j < 8; ++j) s[j] += static_cast<double>(a[i + j]) * b[i + j];
  }
  double dot = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
  for (; i < n; ++i) dot += static_cast<double>(a[i]) * b[i];
  return dot;
}

/// The cosine from a dot product and the two sums of squares (0 when either is 0).
inline double cosine_from(double dot, double squares_a, double squares_b) noexcept {
  return squares_a > 0 && squares_b > 0 ? dot / (std::sqrt(squares_a) * std::sqrt(squares_b)) : 0;
}

/// Cosine similarity of a[0, n) and b[0, n), summed in double as dot_of sums (0 when either has no length). Each
/// sum is its own, so a caller that keeps a vector's sum of squares (dot_of(v, v, n)) gets the same bits from
/// cosine_from.
inline double cosine_of(const float* a, const float* b, std::size_t n) noexcept {
  return cosine_from(dot_of(a, b, n), dot_of(a, a, n), dot_of(b, b, n));
}

}  // namespace detail
CAIRN_END_NAMESPACE
