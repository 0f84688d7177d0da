// cairn — the switches of cairn's optional parts, as the installed cairn was built (docs/api.md, "Optional parts").
//
// CMake writes <cairn/build_config.hpp> from the CAIRN_WITH_* options and installs it, so every translation unit
// of a program sees the same values without a compile definition in cairn's usage requirements. A copy of
// include/ without it (vendored) has every optional part off, unless the host defines the macro itself.
#pragma once

#if defined(__has_include)
#if __has_include(<cairn/build_config.hpp>)
#include <cairn/build_config.hpp>
#endif
#endif

#ifndef CAIRN_WITH_SCHEMA
#define CAIRN_WITH_SCHEMA 0
#endif
#ifndef CAIRN_WITH_HNSWLIB
#define CAIRN_WITH_HNSWLIB 0
#endif
