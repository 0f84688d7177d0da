// cairn::detail — hnswlib for the vector index (artifact/search/vector_index.hpp): whether this translation unit
// uses it (CAIRN_DETAIL_HNSWLIB: built with CAIRN_WITH_HNSWLIB, not under ThreadSanitizer), hnswlib's headers
// included so that two translation units still link, and the cosine space over the index's copies.
#pragma once

#include <cstddef>

#include "cairn/detail/build_config.hpp"

// Under ThreadSanitizer the index answers exactly, without hnswlib: hnswlib 0.6.2's addPoint takes its own mutexes
// in an order TSan reports as a potential deadlock (an element's link-list lock, then its `global` lock), and once
// resizeIndex has replaced its mutexes TSan loses the stacks a suppression would match. That cycle cannot close here
// (every add and remove holds this class's exclusive lock), and the locking TSan checks is this class's own, the
// same in both implementations; ASan, UBSan and the plain builds run hnswlib.
#if CAIRN_WITH_HNSWLIB && !defined(__SANITIZE_THREAD__)
#if defined(__has_feature)
#if !__has_feature(thread_sanitizer)
#define CAIRN_DETAIL_HNSWLIB 1
#endif
#else
#define CAIRN_DETAIL_HNSWLIB 1
#endif
#endif

#if defined(CAIRN_DETAIL_HNSWLIB)
// hnswlib 0.6.2's headers define functions and variables that are not inline (cpuid, AVXCapable, the SIMD function
// pointers), so two translation units that include them do not link. They are included inside an unnamed namespace
// (each translation unit gets its own copy, of internal linkage); the headers they use are included first, so that
// their include guards keep them out of that namespace. VectorIndex holds hnswlib's objects type-erased, so no
// member of it has a type of the unnamed namespace.
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cmath>
#include <deque>
#include <fstream>
#include <iostream>
#include <list>
#include <mutex>
#include <queue>
#include <random>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>
#include <vector>
#if defined(__SSE__) && !defined(_MSC_VER)
#include <cpuid.h>
#include <x86intrin.h>
#endif
// Under AddressSanitizer or UndefinedBehaviorSanitizer, hnswlib goes without its SSE code: its search prefetches
// one element past a link list (searchBaseLayer), which ASan stops at, and the garbage label there makes a pointer
// addition overflow, which UBSan reports (harmless in a release build: a prefetch of a wild address does nothing).
// The distances are then computed without SIMD (equal up to float rounding).
#if defined(__SANITIZE_ADDRESS__)
#define CAIRN_HNSWLIB_PLAIN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(undefined_behavior_sanitizer)
#define CAIRN_HNSWLIB_PLAIN 1
#endif
#endif
#if defined(CAIRN_HNSWLIB_PLAIN) && !defined(NO_MANUAL_VECTORIZATION)
#define NO_MANUAL_VECTORIZATION
#define CAIRN_UNDEF_NO_MANUAL_VECTORIZATION
#endif
namespace {
#include <hnswlib/hnswlib.h>
}  // namespace
#if defined(CAIRN_UNDEF_NO_MANUAL_VECTORIZATION)
#undef NO_MANUAL_VECTORIZATION
#undef CAIRN_UNDEF_NO_MANUAL_VECTORIZATION
#endif
namespace {
namespace cairn_hnswlib {
// Cosine distance over the index's layout: `dimension` floats (a vector scaled by a power of two), then its inverse
// length; a query's last float is 1 (it is scaled to length 1). hnswlib's own inner product (with its SIMD code)
// runs over the first `dimension` floats.
class CosineSpace final : public hnswlib::SpaceInterface<float> {
 public:
  explicit CosineSpace(std::size_t dimension)
      : inner_(dimension),
        inner_distance_(inner_.get_dist_func()),
        inner_param_(inner_.get_dist_func_param()),
        dimension_(dimension) {}
  CosineSpace(const CosineSpace&) = delete;
  CosineSpace& operator=(const CosineSpace&) = delete;
  std::size_t get_data_size() override { return (dimension_ + 1) * sizeof(float); }
  hnswlib::DISTFUNC<float> get_dist_func() override { return &distance; }
  void* get_dist_func_param() override { return this; }

 private:
  static float distance(const void* a, const void* b, const void* param) {
    const auto* space = static_cast<const CosineSpace*>(param);
    const float dot = 1.0f - space->inner_distance_(a, b, space->inner_param_);  // hnswlib's is 1 - a.b
    const float inverse_a = static_cast<const float*>(a)[space->dimension_];
    const float inverse_b = static_cast<const float*>(b)[space->dimension_];
    return 1.0f - dot * inverse_a * inverse_b;
  }

  hnswlib::InnerProductSpace inner_;
  hnswlib::DISTFUNC<float> inner_distance_;
  void* inner_param_;
  std::size_t dimension_;
};
}  // namespace cairn_hnswlib
}  // namespace
#endif
