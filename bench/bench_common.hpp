// Shared by the bench/*.cpp benchmarks: sizes from the environment and the tiny mode CI uses.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <fstream>
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

/// Peak resident set (VmHWM of /proc/self/status) in MB; 0 where there is none (not Linux).
inline double peak_rss_mb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::atof(line.c_str() + 6) / 1024.0;
  return 0;
}

/// Starts a new peak: VmHWM drops to the current resident set (Linux >= 4.0,
/// /proc/self/clear_refs).
inline void reset_peak() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
}

/// The 1-minute load average (-1 when unknown): how shared the machine was during a run.
inline double load_avg() {
  double l[1] = {0};
  return getloadavg(l, 1) == 1 ? l[0] : -1;
}

}  // namespace memhealth_bench
