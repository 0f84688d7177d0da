// cairn::detail — random bytes from the operating system's CSPRNG, and UUID v4 / short random ids built on them.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "cairn/error.hpp"
#include "cairn/version.hpp"

#if defined(__linux__)
#include <sys/random.h>
#include <cerrno>
#else
#include <random>
#endif

CAIRN_BEGIN_NAMESPACE
namespace detail {

/// Fills `out` with `size` bytes from the kernel's CSPRNG (getrandom(2) on Linux).
inline void secure_random_bytes(void* out, std::size_t size) {
#if defined(__linux__)
  auto* p = static_cast<unsigned char*>(out);
  while (size > 0) {
    const ssize_t got = ::getrandom(p, size, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      throw error("getrandom failed: cannot obtain secure random bytes");
    }
    p += got;
    size -= static_cast<std::size_t>(got);
  }
#else
  // std::random_device is a CSPRNG on the platforms cairn supports besides Linux (macOS, Windows).
  static thread_local std::random_device device;
  auto* p = static_cast<unsigned char*>(out);
  for (std::size_t i = 0; i < size; ++i) p[i] = static_cast<unsigned char>(device());
#endif
}

/// A random (version 4, RFC 9562) UUID in its canonical lowercase 8-4-4-4-12 form.
inline std::string uuid_v4() {
  std::array<unsigned char, 16> b{};
  secure_random_bytes(b.data(), b.size());
  b[6] = static_cast<unsigned char>((b[6] & 0x0F) | 0x40);  // version 4
  b[8] = static_cast<unsigned char>((b[8] & 0x3F) | 0x80);  // variant 10
  static constexpr char hex[] = "0123456789abcdef";
  std::string s;
  s.reserve(36);
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s.push_back('-');
    s.push_back(hex[b[i] >> 4]);
    s.push_back(hex[b[i] & 0x0F]);
  }
  return s;
}

/// `length` characters drawn uniformly from `alphabet` (rejection sampling, so no character is favoured).
inline std::string random_string(std::size_t length, const std::string& alphabet) {
  if (alphabet.empty() || alphabet.size() > 256) {
    throw invalid_argument("random_string: alphabet must hold 1 to 256 characters");
  }
  const unsigned limit = 256 - (256 % static_cast<unsigned>(alphabet.size()));
  std::string s;
  s.reserve(length);
  std::array<unsigned char, 64> pool{};
  std::size_t used = pool.size();
  while (s.size() < length) {
    if (used == pool.size()) {
      secure_random_bytes(pool.data(), pool.size());
      used = 0;
    }
    const unsigned v = pool[used++];
    if (v < limit) s.push_back(alphabet[v % alphabet.size()]);
  }
  return s;
}

}  // namespace detail
CAIRN_END_NAMESPACE
