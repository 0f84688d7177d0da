// Shared by the fuzz harnesses: a property that fails aborts, so libFuzzer (and the replay runner) report it.
#pragma once

#include <cstdio>
#include <cstdlib>

#define CAIRN_FUZZ_CHECK(cond)                                                           \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "%s:%d: property violated: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)
