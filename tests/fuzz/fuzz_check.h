// A check for fuzz targets: on failure prints what broke and aborts, which libFuzzer reports
// as a crash and saves the input that caused it.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#define FUZZ_CHECK(condition, detail)                                                            \
  do {                                                                                           \
    if (!(condition)) {                                                                          \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK(%s) failed: %s\n", __FILE__, __LINE__, #condition, \
                   std::string(detail).c_str());                                                 \
      std::abort();                                                                              \
    }                                                                                            \
  } while (false)
