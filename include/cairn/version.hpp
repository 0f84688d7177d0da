// cairn — the library's version, in one place.
//
// CMake reads these three macros to set the project version, so this file is the only place to change it.
#pragma once

#define CAIRN_VERSION_MAJOR 0
#define CAIRN_VERSION_MINOR 1
#define CAIRN_VERSION_PATCH 0

namespace cairn {

inline constexpr int version_major = CAIRN_VERSION_MAJOR;
inline constexpr int version_minor = CAIRN_VERSION_MINOR;
inline constexpr int version_patch = CAIRN_VERSION_PATCH;

#define CAIRN_DETAIL_STR2(x) #x
#define CAIRN_DETAIL_STR(x) CAIRN_DETAIL_STR2(x)

/// "MAJOR.MINOR.PATCH"
inline constexpr const char* version_string() noexcept {
  return CAIRN_DETAIL_STR(CAIRN_VERSION_MAJOR) "." CAIRN_DETAIL_STR(CAIRN_VERSION_MINOR) "." CAIRN_DETAIL_STR(
      CAIRN_VERSION_PATCH);
}

}  // namespace cairn
