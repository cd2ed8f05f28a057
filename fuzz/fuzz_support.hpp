#pragma once
// Shared by the libFuzzer targets (fuzz/*.cpp): the bytes as a string_view, and a trap for a
// broken invariant (so the fuzzer reports it as a crash, with the input).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string_view>

namespace memhealth_fuzz {

inline std::string_view text(const std::uint8_t* data, std::size_t size) noexcept {
  return {reinterpret_cast<const char*>(data), size};
}

// A documented guarantee does not hold: print it and crash.
#define MEMHEALTH_FUZZ_CHECK(cond)                                                            \
  do {                                                                                        \
    if (!(cond)) {                                                                            \
      std::fprintf(stderr, "memhealth fuzz: invariant failed: %s (%s:%d)\n", #cond, __FILE__, \
                   __LINE__);                                                                 \
      __builtin_trap();                                                                       \
    }                                                                                         \
  } while (0)

}  // namespace memhealth_fuzz
