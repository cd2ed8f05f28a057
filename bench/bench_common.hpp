// Shared by the bench/*.cpp benchmarks: sizes from the environment and the tiny mode CI uses.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <string>

namespace memhealth_bench {

/// True when MEMHEALTH_BENCH_TINY is set to anything but "" or "0": every benchmark then runs at
/// a tiny size (seconds in all), so CI keeps them compiling and checks their correctness
/// assertions without timing anything.
inline bool tiny() {
  const char* e = std::getenv("MEMHEALTH_BENCH_TINY");
  return e != nullptr && *e != '\0' && std::string(e) != "0";
}

/// A benchmark size: the positive integer in environment variable `env` when set, else `tiny_n`
/// in tiny mode, else `full_n`.
inline std::size_t size_from_env(const char* env, std::size_t full_n, std::size_t tiny_n) {
  if (const char* e = std::getenv(env))
    if (long v = std::atol(e); v > 0) return static_cast<std::size_t>(v);
  return tiny() ? tiny_n : full_n;
}

}  // namespace memhealth_bench
