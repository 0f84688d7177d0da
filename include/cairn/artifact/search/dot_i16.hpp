// cairn::detail — the exact integer dot product of the vector index's 16-bit copies
// (artifact/search/vector_index.hpp, "The exact scan" in docs/search.md).
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace detail {

/// The dot product of two vectors of 16-bit integers, exact (SSE2's pmaddwd where there is SSE2). Each |a[i]| and
/// |b[i]| is at most 32767 and the lengths of `a` and `b` are below 46,340 (VectorIndex's copies are), so that no
/// partial sum leaves 32 bits.
inline std::int64_t dot_i16(const std::int16_t* a, const std::int16_t* b, std::size_t n) noexcept {
  std::int64_t dot = 0;
  std::size_t i = 0;
#if defined(__SSE2__)
  __m128i even = _mm_setzero_si128(), odd = _mm_setzero_si128();  // two sums, so that the adds overlap
  for (; i + 16 <= n; i += 16) {
    const auto* pa = reinterpret_cast<const __m128i*>(a + i);
    const auto* pb = reinterpret_cast<const __m128i*>(b + i);
    even = _mm_add_epi32(even, _mm_madd_epi16(_mm_loadu_si128(pa), _mm_loadu_si128(pb)));
    odd = _mm_add_epi32(odd, _mm_madd_epi16(_mm_loadu_si128(pa + 1), _mm_loadu_si128(pb + 1)));
  }
  alignas(16) std::int32_t lanes[8];
  _mm_store_si128(reinterpret_cast<__m128i*>(lanes), even);
  _mm_store_si128(reinterpret_cast<__m128i*>(lanes + 4), odd);
  for (const std::int32_t lane : lanes) dot += lane;
#endif
  for (; i < n; ++i) dot += static_cast<std::int32_t>(a[i]) * b[i];
  return dot;
}

}  // namespace detail
CAIRN_END_NAMESPACE
