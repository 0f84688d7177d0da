// cairn — the library's version, in one place.
//
// CMake reads these three macros to set the project version, so this file is the only place to change it.
#pragma once

#define CAIRN_VERSION_MAJOR 0
#define CAIRN_VERSION_MINOR 1
#define CAIRN_VERSION_PATCH 0

/// The version as one integer, MAJOR * 10000 + MINOR * 100 + PATCH (0.1.0 is 100, 1.2.3 is 10203), like FMT_VERSION
/// and SPDLOG_VERSION, for `#if CAIRN_VERSION >= 10000`. Computed from the three macros above, so it cannot disagree
/// with them or with CMake's project version (tests/artifact/version_test.cpp checks that too).
#define CAIRN_VERSION (CAIRN_VERSION_MAJOR * 10000 + CAIRN_VERSION_MINOR * 100 + CAIRN_VERSION_PATCH)

#if CAIRN_VERSION_MINOR > 99 || CAIRN_VERSION_PATCH > 99
#error "cairn: CAIRN_VERSION packs minor and patch into two decimal digits each; they must stay below 100"
#endif

/// The inline ABI namespace every cairn declaration lives in (cairn::v0::ArtifactRecord, spelled
/// cairn::ArtifactRecord): it is part of every mangled name, so linking two cairn versions with different ABIs fails
/// at link time instead of mixing them silently. It changes only when the ABI does. Headers open and close it with
/// the two macros below, as fmt does with FMT_BEGIN_NAMESPACE. See docs/api.md.
#define CAIRN_ABI_NAMESPACE v0
#define CAIRN_BEGIN_NAMESPACE \
  namespace cairn {           \
  inline namespace v0 {
#define CAIRN_END_NAMESPACE \
  }                         \
  }

/// Compiled mode (docs/api.md, "Compiled mode"). Header-only, the default, every header includes the bodies of its
/// functions (its `*-inl.hpp` file) and CAIRN_INLINE is `inline`. With CAIRN_COMPILED_LIB defined, as linking
/// cairn::compiled does, the heavy headers only declare, and the bodies are compiled once into cairn::compiled with
/// CAIRN_INLINE empty. One mode per program: every translation unit must agree. A moved virtual function is declared
/// CAIRN_INLINE in its class too: header-only, the class then has no key function, as when the body was in the class,
/// so its vtable (and every virtual body) is emitted only where the class is used, not in every includer.
#ifdef CAIRN_COMPILED_LIB
#define CAIRN_INLINE
#else
#define CAIRN_INLINE inline
#endif

CAIRN_BEGIN_NAMESPACE

inline constexpr int version_major = CAIRN_VERSION_MAJOR;
inline constexpr int version_minor = CAIRN_VERSION_MINOR;
inline constexpr int version_patch = CAIRN_VERSION_PATCH;
/// CAIRN_VERSION as a constant, for code that prefers it to the macro. (Not `version`: a namespace-scope name that
/// common would make every parameter called `version`, in cairn and in its users, a -Wshadow warning.)
inline constexpr int version_number = CAIRN_VERSION;

#define CAIRN_DETAIL_STR2(x) #x
#define CAIRN_DETAIL_STR(x) CAIRN_DETAIL_STR2(x)

/// "MAJOR.MINOR.PATCH"
inline constexpr const char* version_string() noexcept {
  return CAIRN_DETAIL_STR(CAIRN_VERSION_MAJOR) "." CAIRN_DETAIL_STR(CAIRN_VERSION_MINOR) "." CAIRN_DETAIL_STR(
      CAIRN_VERSION_PATCH);
}

CAIRN_END_NAMESPACE
