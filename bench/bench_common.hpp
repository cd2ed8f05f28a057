// Shared by the bench/*.cpp benchmarks: sizes from the environment and the tiny mode CI uses,
// memory and load figures, and the pieces of the generated stores (deterministic per-row Gaussian
// unit vectors, planted near copies, digit-free texts, the fields every generated record shares).
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "memhealth/record/memory_record.hpp"

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

/// Seconds from `t0` to now (steady clock).
inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Calls `fn(i)` for every i in [0, n) on 2 threads (even i on one, odd on the other).
template <class Fn>
void parallel_rows(std::size_t n, Fn&& fn) {
  std::vector<std::jthread> pool;
  for (unsigned w = 0; w < 2; ++w)
    pool.emplace_back([&, w] {
      for (std::size_t i = w; i < n; i += 2) fn(i);
    });
}

/// One splitmix64 step of `state`, as a double uniform in (0, 1): the base of the deterministic
/// per-row Gaussian streams of the generated stores (rows can be generated on any thread).
inline double splitmix_uniform(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return (static_cast<double>(z >> 11) + 0.5) * 0x1.0p-53;
}

/// Scales v[0, dim) to unit length (squared norm summed in double, in order).
inline void normalize_row(float* v, std::size_t dim) {
  double sq = 0;
  for (std::size_t c = 0; c < dim; ++c) sq += static_cast<double>(v[c]) * v[c];
  const float inv = static_cast<float>(1.0 / std::sqrt(sq));
  for (std::size_t c = 0; c < dim; ++c) v[c] *= inv;
}

/// out[0, dim) = `dim` samples of `g.next()` (a Gaussian stream), scaled to unit length.
template <class Gauss>
void gaussian_unit_row(Gauss& g, float* out, std::size_t dim) {
  for (std::size_t c = 0; c < dim; ++c) out[c] = static_cast<float>(g.next());
  normalize_row(out, dim);
}

/// b = normalise(a + sigma g) with sigma from the cosine `target` wanted between the unit vectors
/// a and b (cos ~ 1 / sqrt(1 + sigma^2 dim)); `g` a Gaussian stream.
template <class Gauss>
void perturbed_copy(Gauss& g, double target, const float* a, float* b, std::size_t dim) {
  const double sigma =
      std::sqrt(1.0 / (target * target) - 1.0) / std::sqrt(static_cast<double>(dim));
  for (std::size_t c = 0; c < dim; ++c) b[c] = a[c] + static_cast<float>(sigma * g.next());
  normalize_row(b, dim);
}

/// "note " + a digit-free tag of i (base 26, "a", "b", ..., "ba", ...): texts with differing
/// numbers are never near duplicates (the duplicate guards), and a planted pair must be one.
inline std::string note(std::size_t i) {
  std::string s = "note ";
  for (std::size_t v = i;; v /= 26) {
    s += static_cast<char>('a' + v % 26);
    if (v < 26) break;
  }
  return s;
}

/// The planted near-duplicate pairs of the generated stores: P = min(1000, N / 20) pairs (a, b),
/// a = q * (N / P), b a later row of the same stride.
struct planted_layout {
  std::size_t planted, stride;
  explicit planted_layout(std::size_t n)
      : planted(std::min<std::size_t>(1000, n / 20)), stride(n / planted) {}
  [[nodiscard]] std::size_t a(std::size_t q) const { return q * stride; }
  [[nodiscard]] std::size_t b(std::size_t q) const { return a(q) + 1 + (q * 7919) % (stride - 1); }
};

/// Sets the fields every generated record shares: active, user-declared fact, embedding version
/// "v1", created and updated at `t0`, embedding e[0, dim).
inline void set_generated_fields(memhealth::memory_record& r, memhealth::timestamp t0,
                                 const float* e, std::size_t dim) {
  r.status = "active";
  r.source = "user_declared";
  r.kind = "fact";
  r.embedding_version = "v1";
  r.created_at = t0;
  r.updated_at = t0;
  r.embedding.assign(e, e + dim);
}

}  // namespace memhealth_bench
