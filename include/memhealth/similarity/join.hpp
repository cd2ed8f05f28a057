#pragma once
/// @file join.hpp
/// Exact all-pairs threshold joins by tiled GEMM: every pair of rows whose kernel similarity is
/// >= t, without ever forming the n x n similarity matrix.
///
/// The rows are cut into tiles of `join_options::tile` rows; each tile pair is one GEMM
/// (`S.noalias() = A * B.transpose()`) into one preallocated tile buffer, and the threshold scan
/// runs over the tile while it is hot in cache. Memory: tile² floats per thread plus the output.
/// No allocation happens inside the tile loop apart from the growth of the per-band pair buffer
/// (amortised, capacity kept between bands).
///
/// The GEMM of each tile goes through a backend policy (similarity/gemm_backend.hpp):
/// `default_gemm` (memhealth's AVX-512F or AVX2/FMA kernel chosen at run time, else `portable_gemm`), `eigen_gemm`, or
/// a CBLAS such as OpenBLAS (include similarity/cblas_backend.hpp and pass `cblas_gemm{}`).
/// The threshold scan is fused per tile: it reads the tile while it is in cache, 16 scores per
/// compare-and-mask step (SSE2 on x86-64, scalar elsewhere), and touches the pair buffer only for
/// the rare step with a hit. The tile buffer is allocated once per worker; the own kernels
/// (`avx512_gemm`, `avx2_gemm`, `portable_gemm`) also keep one thread-local packing buffer per
/// thread.
///
/// Output order is deterministic: pairs come out sorted by (i, j), whatever the tile size or the
/// number of threads (each band of tile rows is sorted before it is emitted; threads work on
/// consecutive bands in rounds of one band per thread and the round is emitted in band order, so
/// at most `threads` bands of pairs are buffered at any time).
///
/// **Pair budget.** Near-identical rows make the output itself quadratic (60,000 copies of one
/// placeholder vector are 1.8 billion pairs). `join_options::max_pairs` stops a join after that
/// many pairs; the returned `join_stats` says whether it was cut. A cut join has emitted
/// `max_pairs` pairs, sorted by (i, j), which are the pairs found first in tile order (the same set
/// for every thread count at one tile size; not necessarily the smallest (i, j)). Memory stays
/// O(tile · n_b · threads) pairs at worst, never O(n²).

#include <Eigen/Core>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <type_traits>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "memhealth/config.hpp"
#include "memhealth/similarity/gemm_backend.hpp"
#include "memhealth/similarity/kernels.hpp"
#include "memhealth/worker_thread.hpp"

namespace memhealth {

/// Tuning of the tiled joins.
struct join_options {
  /// Rows per tile (>= 1). 512 keeps a 512 x 512 float tile (1 MiB) in L2/L3.
  Eigen::Index tile = 512;
  /// Worker threads (>= 1). 1 = run on the calling thread (the default: a library does not start
  /// threads unless asked). The output is identical for every value.
  unsigned threads = 1;
  /// Stop after this many pairs (0 = no limit). See "Pair budget" in the file comment.
  std::size_t max_pairs = 0;
};

/// What a join did.
struct join_stats {
  std::size_t pairs = 0;   ///< pairs emitted
  bool truncated = false;  ///< true when `max_pairs` stopped the join before the end
};

/// One pair found by a join: row indices and their similarity.
struct scored_pair {
  std::uint32_t i = 0;  ///< row in the first (or only) matrix
  std::uint32_t j = 0;  ///< row in the second matrix (self join: j > i)
  float score = 0;      ///< kernel similarity, >= the threshold
  friend bool operator==(const scored_pair&, const scored_pair&) = default;
};

namespace detail {

inline bool pair_less(const scored_pair& a, const scored_pair& b) noexcept {
  return a.i != b.i ? a.i < b.i : a.j < b.j;
}

inline constexpr std::size_t no_pair_cap = static_cast<std::size_t>(-1);

// Appends every j in [j0, j1) with row[j] >= t (NaN never passes) as pair (gi, c0 + j).
inline void scan_row(const float* row, Eigen::Index j0, Eigen::Index j1, float t, Eigen::Index gi, Eigen::Index c0,
                     std::vector<scored_pair>& hits) {
  Eigen::Index j = j0;
  auto push = [&](Eigen::Index k) {
    hits.push_back({static_cast<std::uint32_t>(gi), static_cast<std::uint32_t>(c0 + k), row[k]});
  };
#if defined(__SSE2__)
  const __m128 tv = _mm_set1_ps(t);
  for (; j + 16 <= j1; j += 16) {
    const __m128 m0 = _mm_or_ps(_mm_cmpge_ps(_mm_loadu_ps(row + j), tv), _mm_cmpge_ps(_mm_loadu_ps(row + j + 4), tv));
    const __m128 m1 =
        _mm_or_ps(_mm_cmpge_ps(_mm_loadu_ps(row + j + 8), tv), _mm_cmpge_ps(_mm_loadu_ps(row + j + 12), tv));
    if (_mm_movemask_ps(_mm_or_ps(m0, m1)) == 0) continue;
    for (Eigen::Index k = j; k < j + 16; ++k)
      if (row[k] >= t) push(k);
  }
#endif
  for (; j < j1; ++j)
    if (row[j] >= t) push(j);
}

// Scans band [r0, r1) of A against all of B (or its upper triangle when self), appending hits.
// Stops once it holds cap + 1 hits (the extra one proves the cap is exceeded) and returns false.
// Scan = false computes the same GEMM tiles and skips the scan (the benchmarks' bare-GEMM
// reference).
template <bool Scan = true, class Kernel, class Backend>
bool join_band(const rows_cref& a, const rows_cref& b, bool self, Eigen::Index r0, Eigen::Index r1, float t,
               Eigen::Index tile, const Kernel& kernel, const Backend& backend, row_matrix& buffer,
               std::vector<scored_pair>& hits, std::size_t cap) {
  const Eigen::Index nb = b.rows();
  const Eigen::Index c_begin = self ? r0 : 0;
  bool complete = true;
  for (Eigen::Index c0 = c_begin; c0 < nb && complete; c0 += tile) {
    const Eigen::Index c1 = std::min(nb, c0 + tile);
    const Eigen::Index ra = r1 - r0, rb = c1 - c0;
    auto s = buffer.topLeftCorner(ra, rb);
    kernel_tile(kernel, a.middleRows(r0, ra), b.middleRows(c0, rb), s, backend);
    if constexpr (!Scan) continue;
    for (Eigen::Index i = 0; i < ra; ++i) {
      const Eigen::Index gi = r0 + i;
      // self join: only j > i (the diagonal tile is scanned from its upper triangle)
      const Eigen::Index j_begin = self ? std::max<Eigen::Index>(0, gi + 1 - c0) : 0;
      scan_row(s.row(i).data(), j_begin, rb, t, gi, c0, hits);
      if (hits.size() > cap) {
        hits.resize(cap + 1);
        complete = false;
        break;
      }
    }
  }
  // With a budget the caller may keep only a prefix (in tile order) and sorts that itself.
  if (cap == no_pair_cap) std::sort(hits.begin(), hits.end(), pair_less);
  return complete;
}

// A caller's pair callback behind one pointer and one function pointer. The public joins pass
// their `emit` through it, so `run_join` (with its thread pool) is compiled once per kernel and
// backend, not once per caller's lambda; the indirect call costs nothing next to the GEMM (it
// runs once per emitted pair).
struct pair_sink {
  void* target;
  void (*call)(void*, std::uint32_t, std::uint32_t, float);
  template <class F>
  static pair_sink of(F& f) noexcept {
    return {const_cast<void*>(static_cast<const void*>(std::addressof(f))),
            [](void* o, std::uint32_t i, std::uint32_t j, float s) { (*static_cast<F*>(o))(i, j, s); }};
  }
  void operator()(std::uint32_t i, std::uint32_t j, float s) const { call(target, i, j, s); }
};

// What a pair_sink erases for `emit`: a reference to a callable object, or a pointer to a plain
// function (a function is not an object, so its address cannot go through void*).
template <class Out>
auto sink_target(Out& emit) noexcept {
  if constexpr (std::is_function_v<Out>)
    return &emit;
  else
    return std::ref(emit);
}

template <bool Scan = true, class Kernel, class Out, class Backend = default_gemm>
join_stats run_join(const rows_cref& a, const rows_cref& b, bool self, float t, Out& emit, const join_options& opt,
                    const Kernel& kernel, const Backend& backend = {}) {
  MEMHEALTH_ASSERT(opt.tile >= 1, "threshold_join: tile must be >= 1");
  MEMHEALTH_ASSERT(opt.threads >= 1, "threshold_join: threads must be >= 1");
  MEMHEALTH_ASSERT(a.cols() == b.cols(), "threshold_join: matrices of different dimension");
  MEMHEALTH_ASSERT(a.rows() < (Eigen::Index{1} << 32) && b.rows() < (Eigen::Index{1} << 32),
                   "threshold_join: more than 2^32 rows");
  join_stats stats;
  const Eigen::Index n = a.rows();
  if (n == 0 || b.rows() == 0) return stats;
  const Eigen::Index tile = opt.tile;
  const Eigen::Index bands = (n + tile - 1) / tile;
  const Eigen::Index tile_cols = std::min(tile, b.rows());
  const std::size_t budget = opt.max_pairs;
  // Emits one band's hits (with a budget: the first ones in tile order that fit, then sorted, so
  // the set does not depend on how many bands ran at once); false once the budget is spent.
  auto drain = [&](std::vector<scored_pair>& hits, bool band_complete) {
    if (budget != 0) {
      const std::size_t room = budget - stats.pairs;
      if (hits.size() > room) {
        hits.resize(room);
        band_complete = false;
      }
      std::sort(hits.begin(), hits.end(), pair_less);
    }
    for (const auto& p : hits) emit(p.i, p.j, p.score);
    stats.pairs += hits.size();
    if (!band_complete) stats.truncated = true;
    return band_complete;
  };
  auto remaining = [&] { return budget == 0 ? no_pair_cap : budget - stats.pairs; };
  const auto workers = static_cast<Eigen::Index>(std::min<Eigen::Index>(opt.threads, bands));
  if (workers == 1) {
    row_matrix buffer(std::min(tile, n), tile_cols);
    std::vector<scored_pair> hits;
    for (Eigen::Index band = 0; band < bands; ++band) {
      hits.clear();
      const bool complete = join_band<Scan>(a, b, self, band * tile, std::min(n, (band + 1) * tile), t, tile,
                                            kernel, backend, buffer, hits, remaining());
      if (!drain(hits, complete)) break;
    }
    return stats;
  }
  // Rounds of `workers` consecutive bands: each worker keeps its tile buffer for the whole join.
  std::vector<std::vector<scored_pair>> per_band(static_cast<std::size_t>(workers));
  std::vector<std::uint8_t> complete(static_cast<std::size_t>(workers), 1);
  std::vector<row_matrix> buffers(static_cast<std::size_t>(workers));
  for (Eigen::Index round = 0; round < bands; round += workers) {
    const std::size_t cap = remaining();
    const Eigen::Index active = std::min(workers, bands - round);  // bands in this round
    run_workers(static_cast<std::size_t>(active), [&](std::size_t k) {
      const Eigen::Index band = round + static_cast<Eigen::Index>(k);
      if (buffers[k].size() == 0) buffers[k].resize(std::min(tile, n), tile_cols);
      per_band[k].clear();
      complete[k] = join_band<Scan>(a, b, self, band * tile, std::min(n, (band + 1) * tile), t, tile,
                                    kernel, backend, buffers[k], per_band[k], cap);
    });
    for (Eigen::Index w = 0; w < active; ++w) {
      const auto k = static_cast<std::size_t>(w);
      if (!drain(per_band[k], complete[k] != 0)) return stats;
    }
  }
  return stats;
}

}  // namespace detail

/// Exact symmetric threshold join: calls `emit(i, j, score)` for every pair of rows i < j of X
/// with `kernel` similarity >= t, in increasing (i, j) order.
///
/// @param X n x d, row-major, float32 (for `cosine_kernel`: unit rows, normalised by the caller).
///          Anything bindable to `rows_cref` (a `row_matrix`, a `Map`, a block of rows).
/// @param t threshold in the kernel's units (cosine in [-1, 1]).
/// @param emit callable `(std::uint32_t i, std::uint32_t j, float score)`.
/// @return pairs emitted, and whether `opt.max_pairs` cut the join.
/// @param backend GEMM backend of the tiles (gemm_backend.hpp): `default_gemm` (AVX-512F or
///          AVX2/FMA kernel when the CPU has it, else `portable_gemm`), `eigen_gemm`, or `cblas_gemm` from cblas_backend.hpp
///          for a linked CBLAS. The pairs are the same set for
///          every backend up to rounding of scores within ~d·2^-24 of t.
/// @throws memhealth::error(precondition) for tile < 1, threads < 1 or n >= 2^32.
/// @complexity O(n² d / 2) flops in tiles of `opt.tile`²; memory O(tile² · threads) floats plus
///             at most `threads` bands of pairs.
template <class Out, class Kernel = cosine_kernel, class Backend = default_gemm>
join_stats threshold_join(const rows_cref& X, float t, Out&& emit, const join_options& opt = {},
                          const Kernel& kernel = {}, const Backend& backend = {}) {
  auto target = detail::sink_target(emit);
  auto sink = detail::pair_sink::of(target);
  return detail::run_join(X, X, true, t, sink, opt, kernel, backend);
}

/// Exact two-set threshold join: `emit(i, j, score)` for every row i of A and row j of B with
/// similarity >= t, in increasing (i, j) order.
/// @param A na x d, @param B nb x d, both row-major float32 (unit rows for cosine).
/// @return pairs emitted, and whether `opt.max_pairs` cut the join.
/// @throws memhealth::error(precondition) when A and B have different column counts.
/// @param backend GEMM backend of the tiles, as for `threshold_join`.
/// @complexity O(na · nb · d) flops; memory O(tile² · threads + output).
template <class Out, class Kernel = cosine_kernel, class Backend = default_gemm>
join_stats join(const rows_cref& A, const rows_cref& B, float t, Out&& emit, const join_options& opt = {},
                const Kernel& kernel = {}, const Backend& backend = {}) {
  auto target = detail::sink_target(emit);
  auto sink = detail::pair_sink::of(target);
  return detail::run_join(A, B, false, t, sink, opt, kernel, backend);
}

/// Convenience: the symmetric join's pairs as a vector, sorted by (i, j).
template <class Kernel = cosine_kernel, class Backend = default_gemm>
[[nodiscard]] std::vector<scored_pair> threshold_join_pairs(const rows_cref& X, float t, const join_options& opt = {},
                                                            const Kernel& kernel = {}, const Backend& backend = {}) {
  std::vector<scored_pair> out;
  threshold_join(
      X, t, [&](std::uint32_t i, std::uint32_t j, float s) { out.push_back({i, j, s}); }, opt, kernel, backend);
  return out;
}

/// Convenience: the two-set join's pairs as a vector, sorted by (i, j).
template <class Kernel = cosine_kernel, class Backend = default_gemm>
[[nodiscard]] std::vector<scored_pair> join_pairs(const rows_cref& A, const rows_cref& B, float t,
                                                  const join_options& opt = {}, const Kernel& kernel = {},
                                                  const Backend& backend = {}) {
  std::vector<scored_pair> out;
  join(A, B, t, [&](std::uint32_t i, std::uint32_t j, float s) { out.push_back({i, j, s}); }, opt, kernel,
       backend);
  return out;
}

}  // namespace memhealth
