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
/// `default_gemm` (memhealth's AVX-512F or AVX2/FMA kernel chosen at run time, else
/// `portable_gemm`), `eigen_gemm`, or a CBLAS such as OpenBLAS (include
/// similarity/cblas_backend.hpp and pass `cblas_gemm{}`). The threshold scan is fused per tile: it
/// reads the tile while it is in cache, 16 scores per compare-and-mask step (SSE2 on x86-64, scalar
/// elsewhere), and touches the pair buffer only for the rare step with a hit. The tile buffer is
/// allocated once per worker; the own kernels
/// (`avx512_gemm`, `avx2_gemm`, `portable_gemm`) also keep one thread-local packing buffer per
/// thread.
///
/// Output order is deterministic: pairs come out sorted by (i, j), whatever the tile size or the
/// number of threads (each band of tile rows is sorted before it is emitted; threads work on
/// consecutive bands in rounds of one band per thread and the round is emitted in band order, so
/// at most `threads` bands of pairs are buffered at any time).
///
/// **Prefix bound** (dot-product kernels: `cosine_kernel`, `inner_product_kernel`). Split every
/// row x = [x', x''] after its first p columns (`join_options::prefix_dims`, by default d/4
/// rounded down to a multiple of 16 when d >= 128). By Cauchy–Schwarz,
///
///     x . y = x' . y' + x'' . y''  <=  x' . y' + ‖x''‖·‖y''‖,
///
/// so a tile first computes the GEMM of the p prefix columns only, and a pair whose prefix score
/// plus the product of the two suffix norms is below t cannot reach t: it is dropped without
/// touching its remaining d − p columns. This is the prefix L2-norm bound of L2AP (Anastasiu and
/// Karypis, "L2AP: Fast Cosine Similarity Search With Prefix L-2 Norm Bounds", ICDE 2014), applied
/// to dense tiles. The surviving candidates get the exact dot product of their suffix columns; a
/// tile where more than 1/16 of the pairs survive (rows that are all alike) gets the GEMM of the
/// suffix columns instead, so such data costs one full-width GEMM plus a scan, as without the
/// bound. For unit rows of d = 384 that are not near each other (x' . y' is about ±0.03 and the
/// suffix norms are about 0.87) no pair survives at t = 0.92 except the near-duplicates: the join
/// does about a quarter of the GEMM's flops.
/// Rounding: the filter uses u_i = ‖x_i''‖ + √ε·‖x_i‖ (in double, rounded up, floored at FLT_MIN)
/// with ε = 2γ_d + 32·2^-24, γ_d = d·2^-24/(1 − d·2^-24) (about (d + 16)·2^-23), and keeps (i, j)
/// iff prefix(i, j) + u_i·u_j >= t. Since u_i·u_j >= ‖x_i''‖·‖x_j''‖ + ε·‖x_i‖·‖x_j‖, and ε covers
/// the rounding of the prefix GEMM (γ_p <= γ_d, Higham, Accuracy and Stability of Numerical
/// Algorithms, §3.1), of a full-width float32 score (γ_d) and of the test itself, every pair whose
/// full-width GEMM score is >= t is kept: the bound never loses a pair (the one exception is
/// float underflow, for rows whose products fall below 2^-126, which matters only for |t| that
/// small). NaN rows pass nothing, as in the full-width join; rows with ±inf are completed and
/// report what the full-width join reports. The reported score is prefix + suffix in float32,
/// equal to the full-width score up to ~d·2^-24 (summation order).
///
/// **Pair budget.** Near-identical rows make the output itself quadratic (60,000 copies of one
/// placeholder vector are 1.8 billion pairs). `join_options::max_pairs` stops a join after that
/// many pairs; the returned `join_stats` says whether it was cut. A cut join has emitted
/// `max_pairs` pairs, sorted by (i, j), which are the pairs found first in tile order (the same set
/// for every thread count at one tile size; not necessarily the smallest (i, j)). Memory stays
/// O(tile · n_b · threads) pairs at worst, never O(n²).

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
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
  /// Columns of the prefix pass of the norm bound (see "Prefix bound" in the file comment), for
  /// the dot-product kernels (`cosine_kernel`, `inner_product_kernel`); other kernels ignore it.
  /// 0 = automatic: d/4 rounded down to a multiple of 16 when d >= 128, else off. A value >= d
  /// or < 0 turns the bound off (one full-width GEMM per tile). The pairs are the same either way,
  /// up to rounding of scores within ~d·2^-24 of t.
  Eigen::Index prefix_dims = 0;
};

/// What a join did.
struct join_stats {
  std::size_t pairs = 0;   ///< pairs emitted
  bool truncated = false;  ///< true when `max_pairs` stopped the join before the end
  /// Pairs that passed a candidate filter and were completed one by one: the prefix bound's
  /// survivors (completed by a suffix dot product), or the int8 test's (rescored in float32).
  /// 0 without a filter. With `max_pairs` cutting the join, the count includes the work of the
  /// whole last round of bands, so it can differ between thread counts (the pairs do not).
  std::size_t candidates = 0;
  /// Prefix bound only: tiles where more than 1/16 of the pairs passed the bound, so the GEMM of
  /// the suffix columns ran (0 on rows that are not all alike; many when they are). Same caveat
  /// as `candidates` under `max_pairs`.
  std::size_t dense_tiles = 0;
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
inline void scan_row(const float* row, Eigen::Index j0, Eigen::Index j1, float t, Eigen::Index gi,
                     Eigen::Index c0, std::vector<scored_pair>& hits) {
  Eigen::Index j = j0;
  auto push = [&](Eigen::Index k) {
    hits.push_back({static_cast<std::uint32_t>(gi), static_cast<std::uint32_t>(c0 + k), row[k]});
  };
#if defined(__SSE2__)
  const __m128 tv = _mm_set1_ps(t);
  for (; j + 16 <= j1; j += 16) {
    const __m128 m0 = _mm_or_ps(_mm_cmpge_ps(_mm_loadu_ps(row + j), tv),
                                _mm_cmpge_ps(_mm_loadu_ps(row + j + 4), tv));
    const __m128 m1 = _mm_or_ps(_mm_cmpge_ps(_mm_loadu_ps(row + j + 8), tv),
                                _mm_cmpge_ps(_mm_loadu_ps(row + j + 12), tv));
    if (_mm_movemask_ps(_mm_or_ps(m0, m1)) == 0) continue;
    for (Eigen::Index k = j; k < j + 16; ++k)
      if (row[k] >= t) push(k);
  }
#endif
  for (; j < j1; ++j)
    if (row[j] >= t) push(j);
}

// The prefix bound of a join ("Prefix bound" in the file comment): the first p columns, and the
// per-row factors u of A and B. p == 0: off.
struct prefix_bound {
  Eigen::Index p = 0;
  std::vector<float> ua, ub;  // ub empty in a self join (the factors of B are ua)
  [[nodiscard]] const float* b_factors() const noexcept {
    return ub.empty() ? ua.data() : ub.data();
  }
};

// A join is free to use the bound only with kernels whose tile is exactly A * B^T.
template <class Kernel>
inline constexpr bool dot_product_kernel_v =
    std::is_same_v<Kernel, cosine_kernel> || std::is_same_v<Kernel, inner_product_kernel>;

// The prefix width for d columns and the option value `requested` (0 = automatic).
inline Eigen::Index prefix_width(Eigen::Index d, Eigen::Index requested) noexcept {
  if (requested < 0) return 0;
  const Eigen::Index p = requested == 0 ? (d >= 128 ? d / 4 / 16 * 16 : 0) : requested;
  return p >= d ? 0 : p;
}

// Σ x_k² of n contiguous floats, in double, with eight independent accumulators (Eigen does
// not vectorise a float-to-double reduction: its squaredNorm of a cast is one serial chain).
inline double sum_squares(const float* x, Eigen::Index n) noexcept {
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  Eigen::Index k = 0;
  for (; k + 8 <= n; k += 8)
    for (int l = 0; l < 8; ++l)
      acc[l] += static_cast<double>(x[k + l]) * static_cast<double>(x[k + l]);
  for (; k < n; ++k) acc[0] += static_cast<double>(x[k]) * static_cast<double>(x[k]);
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

// The slack of the bounds, ε = 2γ_d + 32·2^-24 with γ_d = d·2^-24 / (1 − d·2^-24) (Higham, §3.1):
// the rounding of a prefix GEMM (γ_p <= γ_d), of a full-width float32 score (γ_d) and of the
// filter test itself. About (d + 16)·2^-23 for d up to a few thousand; +inf when d·2^-24 >= 1.
inline double float_join_slack(Eigen::Index d) noexcept {
  const double du = static_cast<double>(d) * 0x1p-24;
  if (du >= 1) return std::numeric_limits<double>::infinity();
  return 2 * du / (1 - du) + 32 * 0x1p-24;
}

// Double to float rounded up (+inf above FLT_MAX, NaN stays NaN; no out-of-range conversion).
inline float round_up_to_float(double v) noexcept {
  if (v > static_cast<double>(std::numeric_limits<float>::max()))
    return std::numeric_limits<float>::infinity();
  float f = static_cast<float>(v);
  if (static_cast<double>(f) < v) f = std::nextafter(f, std::numeric_limits<float>::infinity());
  return f;
}

// u_i = ‖x_i[p:]‖ + sqrt(ε)·‖x_i‖ (ε = float_join_slack(d)), computed in double, rounded up to
// float and floored at FLT_MIN (so a zero row against an infinite factor gives +inf, never
// 0 · inf = NaN). A NaN row gives NaN (no pair passes), an infinite one +inf.
template <class = void>  // deferred instantiation, see memhealth.hpp
std::vector<float> prefix_bound_factors(const rows_cref& x, Eigen::Index p) {
  const Eigen::Index d = x.cols();
  const double root_eps = std::sqrt(float_join_slack(d));
  std::vector<float> u(static_cast<std::size_t>(x.rows()));
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    const float* r = x.row(i).data();
    const double head = sum_squares(r, p), tail = sum_squares(r + p, d - p);
    const double v = std::sqrt(tail) + root_eps * std::sqrt(head + tail);
    u[static_cast<std::size_t>(i)] =
        std::isnan(v) ? static_cast<float>(v)
                      : std::max(round_up_to_float(v), std::numeric_limits<float>::min());
  }
  return u;
}

// Σ a_k·b_k of n contiguous floats with eight independent float accumulators (plain loops, so
// no Eigen expression is instantiated per join; the compiler vectorises the lanes).
inline float dot_f32(const float* a, const float* b, Eigen::Index n) noexcept {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  Eigen::Index k = 0;
  for (; k + 8 <= n; k += 8)
    for (int l = 0; l < 8; ++l) acc[l] += a[k + l] * b[k + l];
  for (; k < n; ++k) acc[0] += a[k] * b[k];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

// One worker's buffers: the tile, the suffix tile of a dense prefix-bound tile (allocated on
// first use), and the candidates of the bound scan (local i << 32 | local j).
struct band_scratch {
  row_matrix tile, tail;
  std::vector<std::uint64_t> cand;
  std::size_t candidates = 0, dense_tiles = 0;  // prefix bound counters (join_stats)
};

// Appends local (i, j) for every j in [j0, j1) with row[j] + ui·ub[j] >= t (NaN never passes) to
// cand; false as soon as cand holds more than `limit` entries.
inline bool bound_scan_row(const float* row, const float* ub, float ui, Eigen::Index j0,
                           Eigen::Index j1, float t, Eigen::Index i,
                           std::vector<std::uint64_t>& cand, std::size_t limit) {
  Eigen::Index j = j0;
  const auto key = [i](Eigen::Index k) {
    return (static_cast<std::uint64_t>(i) << 32) | static_cast<std::uint64_t>(k);
  };
#if defined(__SSE2__)
  const __m128 tv = _mm_set1_ps(t), uv = _mm_set1_ps(ui);
  for (; j + 8 <= j1; j += 8) {
    const __m128 s0 = _mm_add_ps(_mm_loadu_ps(row + j), _mm_mul_ps(uv, _mm_loadu_ps(ub + j)));
    const __m128 s1 =
        _mm_add_ps(_mm_loadu_ps(row + j + 4), _mm_mul_ps(uv, _mm_loadu_ps(ub + j + 4)));
    const int m =
        _mm_movemask_ps(_mm_cmpge_ps(s0, tv)) | (_mm_movemask_ps(_mm_cmpge_ps(s1, tv)) << 4);
    if (m == 0) continue;
    for (int k = 0; k < 8; ++k)
      if ((m >> k) & 1) cand.push_back(key(j + k));
    if (cand.size() > limit) return false;
  }
#endif
  for (; j < j1; ++j)
    if (row[j] + ui * ub[j] >= t) cand.push_back(key(j));
  return cand.size() <= limit;
}

// Scans rows [0, s.rows()) of a finished tile (band rows from r0, columns from c0) for scores
// >= t; false once hits holds more than cap entries (then cut to cap + 1).
inline bool scan_tile(const tile_ref& s, bool self, Eigen::Index r0, Eigen::Index c0, float t,
                      std::vector<scored_pair>& hits, std::size_t cap) {
  for (Eigen::Index i = 0; i < s.rows(); ++i) {
    const Eigen::Index gi = r0 + i;
    // self join: only j > i (the diagonal tile is scanned from its upper triangle)
    const Eigen::Index j_begin = self ? std::max<Eigen::Index>(0, gi + 1 - c0) : 0;
    scan_row(s.row(i).data(), j_begin, s.cols(), t, gi, c0, hits);
    if (hits.size() > cap) {
      hits.resize(cap + 1);
      return false;
    }
  }
  return true;
}

// Scans band [r0, r1) of A against all of B (or its upper triangle when self), appending hits.
// Stops once it holds cap + 1 hits (the extra one proves the cap is exceeded) and returns false.
// Scan = false computes the same full-width GEMM tiles and skips the scan (the benchmarks'
// bare-GEMM reference). With the prefix bound (pb.p > 0) a tile is the GEMM of the first p
// columns, a bound scan, and then either an exact dot product of the remaining columns per
// candidate or, when more than 1/16 of the tile are candidates, the GEMM of the remaining columns
// added to the tile and the plain scan.
template <bool Scan = true, class Kernel, class Backend>
bool join_band(const rows_cref& a, const rows_cref& b, bool self, Eigen::Index r0, Eigen::Index r1,
               float t, Eigen::Index tile, const Kernel& kernel, const Backend& backend,
               const prefix_bound& pb, band_scratch& sc, std::vector<scored_pair>& hits,
               std::size_t cap) {
  const Eigen::Index nb = b.rows(), d = a.cols(), p = pb.p;
  const Eigen::Index c_begin = self ? r0 : 0;
  bool complete = true;
  for (Eigen::Index c0 = c_begin; c0 < nb && complete; c0 += tile) {
    const Eigen::Index c1 = std::min(nb, c0 + tile);
    const Eigen::Index ra = r1 - r0, rb = c1 - c0;
    auto s = sc.tile.topLeftCorner(ra, rb);
    const auto ab = a.middleRows(r0, ra);
    const auto bb = b.middleRows(c0, rb);
    if (!Scan || p == 0) {
      kernel_tile(kernel, ab, bb, s, backend);
      if constexpr (Scan) complete = scan_tile(s, self, r0, c0, t, hits, cap);
      continue;
    }
    kernel_tile(kernel, ab.leftCols(p), bb.leftCols(p), s, backend);
    const std::size_t limit = static_cast<std::size_t>(ra * rb / 16);
    const float* ub = pb.b_factors() + c0;
    sc.cand.clear();
    bool sparse = true;
    for (Eigen::Index i = 0; i < ra && sparse; ++i) {
      const Eigen::Index j_begin = self ? std::max<Eigen::Index>(0, r0 + i + 1 - c0) : 0;
      sparse = bound_scan_row(s.row(i).data(), ub, pb.ua[static_cast<std::size_t>(r0 + i)], j_begin,
                              rb, t, i, sc.cand, limit);
    }
    if (!sparse) {  // a dense tile: the rest of the GEMM is cheaper than a dot product per
                    // candidate
      if (sc.tail.size() == 0) sc.tail.resize(sc.tile.rows(), sc.tile.cols());
      auto rest = sc.tail.topLeftCorner(ra, rb);
      kernel_tile(kernel, ab.rightCols(d - p), bb.rightCols(d - p), rest, backend);
      for (Eigen::Index i = 0; i < ra; ++i) {
        float* dst = s.row(i).data();
        const float* src = rest.row(i).data();
        for (Eigen::Index j = 0; j < rb; ++j) dst[j] += src[j];
      }
      ++sc.dense_tiles;
      complete = scan_tile(s, self, r0, c0, t, hits, cap);
      continue;
    }
    sc.candidates += sc.cand.size();
    for (const std::uint64_t c : sc.cand) {
      const auto i = static_cast<Eigen::Index>(c >> 32),
                 j = static_cast<Eigen::Index>(c & 0xffffffffu);
      const float score = s(i, j) + dot_f32(ab.row(i).data() + p, bb.row(j).data() + p, d - p);
      if (!(score >= t)) continue;
      hits.push_back(
          {static_cast<std::uint32_t>(r0 + i), static_cast<std::uint32_t>(c0 + j), score});
      if (hits.size() > cap) {
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
    return {
        const_cast<void*>(static_cast<const void*>(std::addressof(f))),
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
join_stats run_join(const rows_cref& a, const rows_cref& b, bool self, float t, Out& emit,
                    const join_options& opt, const Kernel& kernel, const Backend& backend = {}) {
  MEMHEALTH_ASSERT(opt.tile >= 1, "threshold_join: tile must be >= 1");
  MEMHEALTH_ASSERT(opt.threads >= 1, "threshold_join: threads must be >= 1");
  // an empty side is an empty result whatever its column count (a default-constructed matrix is 0 x
  // 0)
  MEMHEALTH_ASSERT(a.cols() == b.cols() || a.rows() == 0 || b.rows() == 0,
                   "threshold_join: matrices of different dimension");
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
  prefix_bound pb;
  if constexpr (Scan && dot_product_kernel_v<Kernel>) {
    pb.p = prefix_width(a.cols(), opt.prefix_dims);
    if (pb.p > 0) {
      pb.ua = prefix_bound_factors(a, pb.p);
      if (!self) pb.ub = prefix_bound_factors(b, pb.p);
    }
  }
  const auto workers = static_cast<Eigen::Index>(std::min<Eigen::Index>(opt.threads, bands));
  if (workers == 1) {
    band_scratch sc;
    sc.tile.resize(std::min(tile, n), tile_cols);
    std::vector<scored_pair> hits;
    for (Eigen::Index band = 0; band < bands; ++band) {
      hits.clear();
      const bool complete = join_band<Scan>(a, b, self, band * tile, std::min(n, (band + 1) * tile),
                                            t, tile, kernel, backend, pb, sc, hits, remaining());
      if (!drain(hits, complete)) break;
    }
    stats.candidates = sc.candidates;
    stats.dense_tiles = sc.dense_tiles;
    return stats;
  }
  // Rounds of `workers` consecutive bands: each worker keeps its buffers for the whole join.
  std::vector<std::vector<scored_pair>> per_band(static_cast<std::size_t>(workers));
  std::vector<std::uint8_t> complete(static_cast<std::size_t>(workers), 1);
  std::vector<band_scratch> scratch(static_cast<std::size_t>(workers));
  for (Eigen::Index round = 0; round < bands; round += workers) {
    const std::size_t cap = remaining();
    const Eigen::Index active = std::min(workers, bands - round);  // bands in this round
    run_workers(static_cast<std::size_t>(active), [&](std::size_t k) {
      const Eigen::Index band = round + static_cast<Eigen::Index>(k);
      if (scratch[k].tile.size() == 0) scratch[k].tile.resize(std::min(tile, n), tile_cols);
      per_band[k].clear();
      complete[k] = join_band<Scan>(a, b, self, band * tile, std::min(n, (band + 1) * tile), t,
                                    tile, kernel, backend, pb, scratch[k], per_band[k], cap);
    });
    bool more = true;
    for (Eigen::Index w = 0; w < active && more; ++w) {
      const auto k = static_cast<std::size_t>(w);
      more = drain(per_band[k], complete[k] != 0);
    }
    if (!more) break;
  }
  for (const auto& sc : scratch) {
    stats.candidates += sc.candidates;
    stats.dense_tiles += sc.dense_tiles;
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
///          AVX2/FMA kernel when the CPU has it, else `portable_gemm`), `eigen_gemm`, or
///          `cblas_gemm` from cblas_backend.hpp for a linked CBLAS. The pairs are the same set for
///          every backend up to rounding of scores within ~d·2^-24 of t.
/// @throws memhealth::error(precondition) for tile < 1, threads < 1 or n >= 2^32.
/// @complexity at most O(n² d / 2) flops in tiles of `opt.tile`² (about a quarter of that with
///             the prefix bound on rows that are not all alike); memory O(tile² · threads) floats
///             (twice that when a tile falls back to the suffix GEMM) plus at most `threads`
///             bands of pairs, plus n floats of bound factors.
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
/// @throws memhealth::error(precondition) when A and B, both with rows, have different column
///         counts (an empty side gives no pair, whatever its width).
/// @param backend GEMM backend of the tiles, as for `threshold_join`.
/// @complexity O(na · nb · d) flops; memory O(tile² · threads + output).
template <class Out, class Kernel = cosine_kernel, class Backend = default_gemm>
join_stats join(const rows_cref& A, const rows_cref& B, float t, Out&& emit,
                const join_options& opt = {}, const Kernel& kernel = {},
                const Backend& backend = {}) {
  auto target = detail::sink_target(emit);
  auto sink = detail::pair_sink::of(target);
  return detail::run_join(A, B, false, t, sink, opt, kernel, backend);
}

/// Convenience: the symmetric join's pairs as a vector, sorted by (i, j).
template <class Kernel = cosine_kernel, class Backend = default_gemm>
[[nodiscard]] std::vector<scored_pair> threshold_join_pairs(const rows_cref& X, float t,
                                                            const join_options& opt = {},
                                                            const Kernel& kernel = {},
                                                            const Backend& backend = {}) {
  std::vector<scored_pair> out;
  threshold_join(
      X, t,
      [&](std::uint32_t i, std::uint32_t j, float s) {
        out.push_back({i, j, s});
      },
      opt, kernel, backend);
  return out;
}

/// Convenience: the two-set join's pairs as a vector, sorted by (i, j).
template <class Kernel = cosine_kernel, class Backend = default_gemm>
[[nodiscard]] std::vector<scored_pair> join_pairs(const rows_cref& A, const rows_cref& B, float t,
                                                  const join_options& opt = {},
                                                  const Kernel& kernel = {},
                                                  const Backend& backend = {}) {
  std::vector<scored_pair> out;
  join(
      A, B, t,
      [&](std::uint32_t i, std::uint32_t j, float s) {
        out.push_back({i, j, s});
      },
      opt, kernel, backend);
  return out;
}

}  // namespace memhealth
