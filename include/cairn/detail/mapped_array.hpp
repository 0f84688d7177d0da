// cairn::detail — a growable array of trivially copyable values for the vector index's big arrays (the 16-bit and
// float copies of every vector: hundreds of megabytes in a tenant of 100,000). On Linux it lives in anonymous memory
// of its own, on transparent huge pages, made resident ahead of the writes that fill it (MADV_POPULATE_WRITE): the
// first fill of such an array is then a copy, not one page fault per 4 KiB (on some virtual machines a fault costs
// several microseconds, 1 s for 230 MB). Elsewhere, and where the kernel declines, it is plain heap memory.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "cairn/version.hpp"

CAIRN_BEGIN_NAMESPACE
namespace detail {

/// A growable array of T (trivially copyable) whose new elements are zero. Not thread-safe (its owner locks).
template <typename T>
class MappedArray {
  static_assert(std::is_trivially_copyable_v<T>, "MappedArray holds plain values");

 public:
  /// Arrays below this many bytes stay on the heap; at or above it they are mapped on their own (Linux).
  static constexpr std::size_t map_from = std::size_t{1} << 21;  // a huge page

  MappedArray() = default;
  MappedArray(const MappedArray&) = delete;
  MappedArray& operator=(const MappedArray&) = delete;
  MappedArray(MappedArray&& other) noexcept { swap(other); }
  MappedArray& operator=(MappedArray&& other) noexcept {
    MappedArray(std::move(other)).swap(*this);
    return *this;
  }
  ~MappedArray() { release(data_, bytes_, mapped_); }

  std::size_t size() const noexcept { return size_; }
  std::size_t capacity() const noexcept { return capacity_; }
  bool empty() const noexcept { return size_ == 0; }
  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
  T& operator[](std::size_t i) noexcept { return data_[i]; }
  const T& operator[](std::size_t i) const noexcept { return data_[i]; }

  /// Room for `n` elements without moving them.
  void reserve(std::size_t n) {
    if (n > capacity_) reallocate(n);
  }

  /// Grows to (or shrinks to) `n` elements; the new ones are zero. Throws std::bad_alloc and changes nothing when
  /// the memory cannot be had.
  void resize(std::size_t n) {
    if (n > capacity_) reallocate(std::max(n, capacity_ + capacity_ / 2));
    if (n > size_) {
      populate(n);
    } else if (n < size_) {
      std::memset(static_cast<void*>(data_ + n), 0, (size_ - n) * sizeof(T));  // a later grow reads zeros
    }
    size_ = n;
  }

  /// Drops every element and the memory.
  void clear() noexcept { MappedArray().swap(*this); }

  void swap(MappedArray& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(capacity_, other.capacity_);
    std::swap(bytes_, other.bytes_);
    std::swap(resident_, other.resident_);
    std::swap(mapped_, other.mapped_);
  }

 private:
  // A new block of room for `n` (zero-filled), the elements moved into it, the old one given back.
  void reallocate(std::size_t n) {
    if (n > static_cast<std::size_t>(-1) / sizeof(T) - map_from) throw std::bad_alloc();
    std::size_t bytes = n * sizeof(T);
    bool mapped = false;
    void* block = nullptr;
#if defined(__linux__)
    if (bytes >= map_from) {
      bytes = (bytes + map_from - 1) / map_from * map_from;
      block = map(bytes);
      mapped = block != nullptr;
    }
#endif
    if (!block) {
      block = ::operator new(bytes);
      std::memset(block, 0, bytes);
    }
    if (size_ > 0) std::memcpy(block, static_cast<const void*>(data_), size_ * sizeof(T));
    release(data_, bytes_, mapped_);
    data_ = static_cast<T*>(block);
    bytes_ = bytes;
    capacity_ = bytes / sizeof(T);
    resident_ = mapped ? size_ * sizeof(T) : bytes;
    mapped_ = mapped;
  }

  // Makes the pages of the first `n` elements resident ahead of their writes, a step at a time (an eighth of the
  // capacity, at least a huge page), so that a mapped array costs the memory its elements take, not its capacity.
  void populate(std::size_t n) {
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
    const std::size_t need = n * sizeof(T), end = bytes_;
    if (!mapped_ || need <= resident_) return;
    std::size_t to = std::min(end, std::max(need, resident_ + std::max(map_from, end / 8)));
    to = std::min(end, (to + map_from - 1) / map_from * map_from);
    auto* base = reinterpret_cast<char*>(data_);
    // Declined (an old kernel, memory short): the pages come one fault at a time, as on the heap.
    (void)::madvise(base + resident_, to - resident_, MADV_POPULATE_WRITE);
    resident_ = to;
#else
    (void)n;
#endif
  }

#if defined(__linux__)
  // `bytes` (a multiple of map_from) of zeroed memory aligned to a huge page, marked for huge pages; null when the
  // kernel has none to give (then the heap is tried).
  static void* map(std::size_t bytes) noexcept {
    const std::size_t span = bytes + map_from;
    void* raw = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return nullptr;
    const auto start = reinterpret_cast<std::uintptr_t>(raw);
    const std::uintptr_t aligned = (start + map_from - 1) / map_from * map_from;
    if (aligned > start) ::munmap(raw, aligned - start);
    const std::uintptr_t tail = aligned + bytes, stop = start + span;
    if (stop > tail) ::munmap(reinterpret_cast<void*>(tail), stop - tail);
    void* block = reinterpret_cast<void*>(aligned);
#if defined(MADV_HUGEPAGE)
    (void)::madvise(block, bytes, MADV_HUGEPAGE);
#endif
    return block;
  }
#endif

  static void release(T* data, std::size_t bytes, bool mapped) noexcept {
    if (!data) return;
#if defined(__linux__)
    if (mapped) {
      ::munmap(static_cast<void*>(data), bytes);
      return;
    }
#else
    (void)bytes;
    (void)mapped;
#endif
    ::operator delete(static_cast<void*>(data));
  }

  T* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
  std::size_t bytes_ = 0;     // the block's size
  std::size_t resident_ = 0;  // bytes made resident ahead (mapped only)
  bool mapped_ = false;
};

}  // namespace detail
CAIRN_END_NAMESPACE
