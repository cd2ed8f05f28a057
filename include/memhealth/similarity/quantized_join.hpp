#pragma once
/// @file quantized_join.hpp
/// Int8 prefilter for the exact cosine / inner-product threshold join: a quantised candidate pass
/// with a proven error bound, then exact float32 rescoring of the candidates only.
///
/// **Quantisation** (`quantize_rows`). Row x (d floats) with m = max_k |x_k| is stored twice:
/// - "left" form: scale s = m/127, q = round(x/s) in [-127, 127], kept as u = q + 128 (uint8);
/// - "right" form: scale r = m/63, p = round(x/r) in [-63, 63] (int8).
/// The left form of row i meets the right form of row j in AVX2's `vpmaddubsw` (uint8 x int8):
/// the sum of two adjacent products is at most 2 · 255 · 63 = 32130 < 2^15, so it never
/// saturates, and Σ u_k p_k − 128 Σ p_k = Σ q_k p_k exactly (int32). Reconstructions:
/// x̂ = s·q (left), ŷ = r·p (right); errors e_x = x − x̂, e_y = y − ŷ.
///
/// **Error bound.** approx(i, j) = s_i r_j (q_i . p_j) = x̂ . ŷ. Since
/// x.y − x̂.ŷ = x.(y − ŷ) + (x − x̂).ŷ = x.e_y + e_x.ŷ, Cauchy–Schwarz gives
///
///     |x.y − approx| <= ‖x‖·‖e_y‖ + ‖e_x‖·‖ŷ‖                                  (1)
///
/// with the four norms computed per row at quantisation time (in double). The float32 join's own
/// score differs from x.y by at most γ·‖x‖·‖y‖ with γ = d·2^-24/(1 − d·2^-24) (Higham, Accuracy
/// and Stability of Numerical Algorithms, §3.1), and the candidate test itself rounds; the filter
/// therefore uses slack γ' = 2γ + 32·2^-24 (about (d + 16)·2^-23; `float_join_slack` in
/// join.hpp), and keeps pair (i, j) iff
///
///     approx(i, j) + ‖x_i‖·(‖e_j‖ + γ'‖y_j‖) + ‖e_i‖·‖ŷ_j‖ >= t.              (2)
///
/// Every pair the float32 join reports (score >= t) satisfies (2), so the candidates are a
/// superset of the exact pairs: recall 1.0 by construction, no empirical margin (the norms are
/// the exact ones of each row's rounding, rounded up; the one exception is float underflow, for
/// rows whose products fall below 2^-126, which matters only for |t| that small). The
/// per-element error is about s/2 (left) and r/2 (right), so ‖e‖ ≈ √d·m/254 resp. √d·m/126 at
/// most; for unit rows
/// of d = 384 with m ≈ 0.2 the bound (1) is ≈ 0.01–0.03 (a few times the typical error, as
/// Cauchy–Schwarz is worst case). Candidates are then rescored with a float32 dot product and
/// kept iff the score is >= t; a pair within ~d·2^-24 of t may fall on the other side than in the
/// GEMM join (rounding, as between two GEMM backends).
///
/// **Prefix bound** (`quantized_join_options::prefix_dims`, on by default for d >= 128: p = d/3
/// rounded down to a multiple of 32, longer than join.hpp's d/4 because every candidate costs a
/// full-width rescore). Only the first p columns x' are quantised (scales from their own maximum),
/// and each row keeps u = ‖x''‖ + √ε‖x‖ of the rest (ε = γ' above, in double, rounded up). With
/// approx', ‖x'‖, e' and ŷ' of the prefix, x.y = x'.y' + x''.y'' gives
///
///     x_i.y_j <= approx'(i, j) + ‖x_i'‖·e'_j + ‖e_i'‖·‖ŷ_j'‖ + ‖x_i''‖·‖y_j''‖,
///
/// and u_i·u_j >= ‖x_i''‖·‖y_j''‖ + γ'‖x_i‖·‖y_j‖ covers the float32 join's rounding. The kernels
/// evaluate two products per pair, so the first and the last term are merged by Cauchy–Schwarz in
/// R² (a·b + c·d <= √(λa² + c²)·√(b²/λ + d²) for any λ > 0):
///
///     approx'(i, j) + √(λ‖x_i'‖² + u_i²)·√(e'_j²/λ + u_j²) + ‖e_i'‖·‖ŷ_j'‖ >= t,      (3)
///
/// with λ = mean e' / mean ‖x'‖ of the two sides, which makes the merge nearly tight when the rows
/// have similar norms (unit rows). (3) is again a superset of the exact pairs (recall 1.0), and it
/// costs p/d of the int8 work of (2). For unit Gaussian rows of d = 384 (p = 128), approx' is
/// about ±0.03 and the merged term about 0.67, so at t = 0.92 only near-duplicates are candidates.
/// On rows that are all alike every pair passes (3) and is rescored: use prefix_dims = -1 there.
///
/// **Non-finite rows** (a NaN or ±inf anywhere) are quantised to zero with infinite norms, so (2)
/// passes them against every row that is not all zeros (and the all-zero case is NaN in float32
/// too): they are rescored exactly, and report exactly what the float32 join reports (NaN scores
/// never pass; +inf scores do).
///
/// **Speed.** The candidate pass runs the best of four kernels the CPU has, each compiled with
/// `__attribute__((target(...)))` and chosen at run time (`__builtin_cpu_supports`, CPUID), so
/// the library builds without -mavx2:
/// - AVX-512 VNNI: a 32 x 8 microkernel over a band re-laid in panels of 16 rows x 4 bytes, so
///   one `vpdpbusd` with a broadcast right-row operand adds 4 products to each of 16 rows' dot
///   products (the register layout of int8 GEMM microkernels such as oneDNN's; no horizontal
///   sums): 64 products per instruction;
/// - AVX-VNNI (ymm): a 4 x 2 row-dot microkernel, one `vpdpbusd` per 32 products, horizontal
///   sums per block;
/// - AVX2: the same with `vpmaddubsw` + `vpmaddwd`;
/// - a portable scalar kernel elsewhere.
/// All compute the same integers and the same test, so they give the same candidates
/// (`quantized_join_options::kernel` caps the choice). The test (2) is fused into the
/// microkernel: no similarity tile is written. Output order, threads and the pair budget behave
/// as in join.hpp (sorted by (i, j); identical for every thread count; with `max_pairs` the
/// pairs are the first ones in (i, j) order).

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define MEMHEALTH_INT8_X86 1
#include <cpuid.h>
#include <immintrin.h>
// AVX-VNNI (vpdpbusd on ymm): GCC >= 11, Clang >= 12
#if (defined(__clang__) && __clang_major__ >= 12) || (!defined(__clang__) && __GNUC__ >= 11)
#define MEMHEALTH_INT8_VNNI 1
#else
#define MEMHEALTH_INT8_VNNI 0
#endif
// AVX-512 VNNI (vpdpbusd on zmm, and "avx512vnni" in __builtin_cpu_supports): GCC >= 8, Clang >= 8
#if (defined(__clang__) && __clang_major__ >= 8) || (!defined(__clang__) && __GNUC__ >= 8)
#define MEMHEALTH_INT8_AVX512 1
#else
#define MEMHEALTH_INT8_AVX512 0
#endif
#else
#define MEMHEALTH_INT8_X86 0
#define MEMHEALTH_INT8_VNNI 0
#define MEMHEALTH_INT8_AVX512 0
#endif

#include "memhealth/config.hpp"
#include "memhealth/similarity/int8_rows.hpp"
#include "memhealth/similarity/join.hpp"
#include "memhealth/similarity/kernels.hpp"
#include "memhealth/worker_thread.hpp"

namespace memhealth {

/// Which candidate kernel a quantised join may use; it runs the best one the CPU has up to this.
/// All give the same candidates (exact integer dot products, the same test).
enum class int8_kernel {
  portable = 0,     ///< scalar C++ (any CPU)
  avx2 = 1,         ///< vpmaddubsw + vpmaddwd (x86 with AVX2 and FMA)
  avx_vnni = 2,     ///< vpdpbusd on ymm (x86 with AVX-VNNI)
  avx512_vnni = 3,  ///< vpdpbusd on zmm with broadcast operands (x86 with AVX-512 BW + VNNI), the
                    ///< default ceiling
};

/// Tuning of the quantised joins.
struct quantized_join_options {
  /// Rows per band (>= 4, rounded down to a multiple of 4); one band is one unit of work.
  Eigen::Index tile = 256;
  /// Worker threads (>= 1); the output is identical for every value.
  unsigned threads = 1;
  /// Stop after this many pairs (0 = no limit); a cut join keeps the first pairs in (i, j) order.
  std::size_t max_pairs = 0;
  /// The fastest kernel allowed (benchmarks and tests lower it to compare kernels).
  int8_kernel kernel = int8_kernel::avx512_vnni;
  /// Prefix width of the joins that quantise for themselves (`quantize_rows`' `prefix_dims`):
  /// 0 = automatic (d/3 rounded down to a multiple of 32 when d >= 128), >= d or < 0 = every
  /// column. A join given an `int8_rows` uses the form it was built with.
  Eigen::Index prefix_dims = 0;
};

/// What a quantised join did: the `join_stats` fields; `candidates` counts the pairs that passed
/// the int8 test ((2), or (3) with a prefix) and were rescored (`dense_tiles` stays 0).
struct quantized_join_stats : join_stats {};

namespace detail {

struct int8_test_ctx {
  const int8_rows* a;
  const int8_rows* b;
  float t;
  bool self;
  const float* a_norm;       // the first factor of (2) per row of a: a->norm, or (3) with a prefix
  const float* b_right_err;  // the second per row of b: b->right_err, or (3) with a prefix
};

// Candidate test (2) for a block of pairs, scalar form; appends (i, j) for passing real pairs.
inline void int8_block_scalar(const int8_test_ctx& c, Eigen::Index i0, Eigen::Index i1,
                              Eigen::Index j0, Eigen::Index j1, std::vector<std::uint64_t>& cand) {
  const int8_rows& a = *c.a;
  const int8_rows& b = *c.b;
  for (Eigen::Index i = i0; i < i1; ++i)
    for (Eigen::Index j = c.self ? std::max(j0, i + 1) : j0; j < j1; ++j) {
      const auto ui = static_cast<std::size_t>(i), uj = static_cast<std::size_t>(j);
      const float up = int8_approx_dot(a, i, b, j) +
                       (c.a_norm[ui] * c.b_right_err[uj] + a.left_err[ui] * b.right_hat[uj]);
      if (up >= c.t)
        cand.push_back(static_cast<std::uint64_t>(i) << 32 | static_cast<std::uint64_t>(j));
    }
}

#if MEMHEALTH_INT8_X86
// Lanes (v[i], v[i], v[i+1], v[i+1], ..., v[i+3], v[i+3]): row i + lane/2 of a 4 x 2 block.
__attribute__((target("avx2,fma"))) inline __m256 int8_pattern_rows(const float* v) {
  return _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(v)),
                                  _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3));
}
// Lanes (v[j], v[j+1]) repeated four times: column j + lane%2 of a 4 x 2 block (32-bit values).
__attribute__((target("avx2,fma"))) inline __m256 int8_pattern_cols(const void* v) {
  double pair;
  std::memcpy(&pair, v, sizeof pair);
  return _mm256_castpd_ps(_mm256_set1_pd(pair));
}

// Rows [i0, i1) x columns [j0, j1): i0 multiple of 4, j0 even; the padding rows exist.
// STEP(acc, u, p) adds the partial int32 sums of 32 uint8 x int8 products to acc. A macro, not a
// template, because each instance needs its own target attribute (GCC refuses to inline across).
#define MEMHEALTH_INT8_BLOCK(NAME, TARGET, STEP)                                                   \
  __attribute__((target(TARGET))) inline void NAME(                                                \
      const int8_test_ctx& c, Eigen::Index i0, Eigen::Index i1, Eigen::Index j0, Eigen::Index j1,  \
      std::vector<std::uint64_t>& cand) {                                                          \
    const int8_rows& a = *c.a;                                                                     \
    const int8_rows& b = *c.b;                                                                     \
    const Eigen::Index st = a.stride, chunks = st / 32;                                            \
    const __m256 tv = _mm256_set1_ps(c.t);                                                         \
    for (Eigen::Index i = i0; i < i1; i += 4) {                                                    \
      const __m256 sa = int8_pattern_rows(a.left_scale.data() + i),                                \
                   na = int8_pattern_rows(c.a_norm + i),                                           \
                   ea = int8_pattern_rows(a.left_err.data() + i);                                  \
      const std::uint8_t* pa = a.left.data() + i * st;                                             \
      Eigen::Index jb = j0;                                                                        \
      if (c.self) jb = std::max(j0, i & ~Eigen::Index{1});                                         \
      for (Eigen::Index j = jb; j < j1; j += 2) {                                                  \
        const std::int8_t* pb = b.right.data() + j * st;                                           \
        __m256i acc[8];                                                                            \
        for (auto& v : acc) v = _mm256_setzero_si256();                                            \
        for (Eigen::Index k = 0; k < chunks; ++k) {                                                \
          const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb + k * 32));    \
          const __m256i b1 =                                                                       \
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb + st + k * 32));              \
          for (int r = 0; r < 4; ++r) {                                                            \
            const __m256i av =                                                                     \
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pa + r * st + k * 32));        \
            acc[2 * r] = STEP(acc[2 * r], av, b0);                                                 \
            acc[2 * r + 1] = STEP(acc[2 * r + 1], av, b1);                                         \
          }                                                                                        \
        }                                                                                          \
        const __m256i h01 = _mm256_hadd_epi32(acc[0], acc[1]),                                     \
                      h23 = _mm256_hadd_epi32(acc[2], acc[3]);                                     \
        const __m256i h45 = _mm256_hadd_epi32(acc[4], acc[5]),                                     \
                      h67 = _mm256_hadd_epi32(acc[6], acc[7]);                                     \
        const __m256i g0 = _mm256_hadd_epi32(h01, h23), g1 = _mm256_hadd_epi32(h45, h67);          \
        __m256i dot = _mm256_add_epi32(_mm256_permute2x128_si256(g0, g1, 0x20),                    \
                                       _mm256_permute2x128_si256(g0, g1, 0x31));                   \
        const auto uj = static_cast<std::size_t>(j);                                               \
        dot = _mm256_sub_epi32(                                                                    \
            dot, _mm256_castps_si256(int8_pattern_cols(b.right_sum128.data() + uj)));              \
        const __m256 approx =                                                                      \
            _mm256_mul_ps(_mm256_cvtepi32_ps(dot),                                                 \
                          _mm256_mul_ps(sa, int8_pattern_cols(b.right_scale.data() + uj)));        \
        __m256 upv = _mm256_fmadd_ps(na, int8_pattern_cols(c.b_right_err + uj), approx);           \
        upv = _mm256_fmadd_ps(ea, int8_pattern_cols(b.right_hat.data() + uj), upv);                \
        auto mask = static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(upv, tv, _CMP_GE_OQ))); \
        while (mask != 0) {                                                                        \
          const int lane = __builtin_ctz(mask);                                                    \
          mask &= mask - 1;                                                                        \
          const Eigen::Index gi = i + lane / 2, gj = j + lane % 2;                                 \
          if (gi >= a.rows || gj >= j1 || gj >= b.rows || (c.self && gj <= gi)) continue;          \
          cand.push_back(static_cast<std::uint64_t>(gi) << 32 | static_cast<std::uint64_t>(gj));   \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  }

// AVX2: |u0 p0 + u1 p1| <= 2 · 255 · 63 < 2^15, so vpmaddubsw never saturates (file comment).
#define MEMHEALTH_INT8_STEP_AVX2(acc, u, p) \
  _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, p), _mm256_set1_epi16(1)))
MEMHEALTH_INT8_BLOCK(int8_block_avx2, "avx2,fma", MEMHEALTH_INT8_STEP_AVX2)
#undef MEMHEALTH_INT8_STEP_AVX2

#if MEMHEALTH_INT8_VNNI
// AVX-VNNI: 32 uint8 x int8 products summed straight into int32 lanes.
#define MEMHEALTH_INT8_STEP_VNNI(acc, u, p) _mm256_dpbusd_avx_epi32(acc, u, p)
MEMHEALTH_INT8_BLOCK(int8_block_vnni, "avx2,fma,avxvnni", MEMHEALTH_INT8_STEP_VNNI)
#undef MEMHEALTH_INT8_STEP_VNNI
#endif
#undef MEMHEALTH_INT8_BLOCK

#if MEMHEALTH_INT8_AVX512
// The AVX-512 kernel's view of one band [r0, r1) of the left form: panels of 16 rows; inside a
// panel, for each group of 4 columns, the 4 bytes of each of the 16 rows (64 bytes, one zmm:
// bytes 4l..4l+3 are row 16·panel + l). vpdpbusd then multiplies a whole panel by 4 bytes of one
// right row broadcast to all lanes, and lane l accumulates row l's dot product: no horizontal
// sums (the layout of int8 GEMM microkernels, e.g. oneDNN's). Rows past r1 are zero (u = 128).
struct int8_band_panels {
  std::vector<std::uint8_t> u;          // (rows / 16) x (stride / 4) x 64 bytes
  std::vector<float> scale, norm, err;  // left_scale, norm, left_err per band row (rounded up to
                                        // a multiple of 32), 0 past r1
};

inline void int8_pack_band(const int8_rows& a, const float* norm, Eigen::Index r0, Eigen::Index r1,
                           int8_band_panels& p) {
  const Eigen::Index st = a.stride, groups = st / 4;
  const Eigen::Index rows = (r1 - r0 + 31) / 32 * 32;  // whole 32-row blocks for the micro-kernel
  p.u.assign(static_cast<std::size_t>(rows * st), 128);
  for (auto* v : {&p.scale, &p.norm, &p.err}) v->assign(static_cast<std::size_t>(rows), 0.0f);
  for (Eigen::Index i = r0; i < r1; ++i) {
    const Eigen::Index li = i - r0;
    const auto ui = static_cast<std::size_t>(i), uli = static_cast<std::size_t>(li);
    const std::uint8_t* src = a.left.data() + i * st;
    std::uint8_t* dst = p.u.data() + (li / 16) * groups * 64 + (li % 16) * 4;
    for (Eigen::Index g = 0; g < groups; ++g) std::memcpy(dst + g * 64, src + 4 * g, 4);
    p.scale[uli] = a.left_scale[ui];
    p.norm[uli] = norm[ui];
    p.err[uli] = a.left_err[ui];
  }
}

// Band rows [r0 + ib, r0 + ib + 32) (two panels) x right rows [j, j + NJ), all real: 2·NJ zmm
// accumulators, per group of 4 columns two panel loads and NJ broadcasts. The test (2) is
// evaluated with the same float operations, in the same order, as the AVX2 kernel's.
template <int NJ>
__attribute__((target("avx512f,avx512bw,avx512vnni"))) inline void int8_avx512_tile(
    const int8_test_ctx& c, const int8_band_panels& p, Eigen::Index r0, Eigen::Index r1,
    Eigen::Index ib, Eigen::Index j, std::vector<std::uint64_t>& cand) {
  const int8_rows& b = *c.b;
  const Eigen::Index st = b.stride, groups = st / 4;
  const std::uint8_t* pa = p.u.data() + (ib / 16) * groups * 64;
  const std::int8_t* pb = b.right.data() + j * st;
  __m512i acc[2][NJ];
  for (int jj = 0; jj < NJ; ++jj) acc[0][jj] = acc[1][jj] = _mm512_setzero_si512();
  for (Eigen::Index g = 0; g < groups; ++g) {
    const __m512i u0 = _mm512_loadu_si512(pa + g * 64);
    const __m512i u1 = _mm512_loadu_si512(pa + (groups + g) * 64);
    for (int jj = 0; jj < NJ; ++jj) {
      std::int32_t w;
      std::memcpy(&w, pb + jj * st + 4 * g, sizeof w);
      const __m512i bv = _mm512_set1_epi32(w);
      acc[0][jj] = _mm512_dpbusd_epi32(acc[0][jj], u0, bv);
      acc[1][jj] = _mm512_dpbusd_epi32(acc[1][jj], u1, bv);
    }
  }
  const __m512 tv = _mm512_set1_ps(c.t);
  for (int h = 0; h < 2; ++h) {
    const auto lo = static_cast<std::size_t>(ib + 16 * h);
    const __m512 sa = _mm512_loadu_ps(p.scale.data() + lo),
                 na = _mm512_loadu_ps(p.norm.data() + lo), ea = _mm512_loadu_ps(p.err.data() + lo);
    for (int jj = 0; jj < NJ; ++jj) {
      const auto uj = static_cast<std::size_t>(j + jj);
      const __m512i dot = _mm512_sub_epi32(acc[h][jj], _mm512_set1_epi32(b.right_sum128[uj]));
      // the masked form with an explicit source: GCC 12 warns (-Wuninitialized) on the plain one
      const __m512 dotf = _mm512_mask_cvtepi32_ps(_mm512_setzero_ps(), 0xFFFF, dot);
      const __m512 approx =
          _mm512_mul_ps(dotf, _mm512_mul_ps(sa, _mm512_set1_ps(b.right_scale[uj])));
      __m512 upv = _mm512_fmadd_ps(na, _mm512_set1_ps(c.b_right_err[uj]), approx);
      upv = _mm512_fmadd_ps(ea, _mm512_set1_ps(b.right_hat[uj]), upv);
      auto mask = static_cast<unsigned>(_mm512_cmp_ps_mask(upv, tv, _CMP_GE_OQ));
      while (mask != 0) {
        const int lane = __builtin_ctz(mask);
        mask &= mask - 1;
        const Eigen::Index gi = r0 + ib + 16 * h + lane, gj = j + jj;
        if (gi >= r1 || (c.self && gj <= gi)) continue;
        cand.push_back(static_cast<std::uint64_t>(gi) << 32 | static_cast<std::uint64_t>(gj));
      }
    }
  }
}

// Band [r0, r1) (packed in p) x columns [j0, j1): blocks of 32 rows x 8 columns, narrower
// blocks for the last columns, so no right row at or past j1 is read.
inline void int8_block_avx512(const int8_test_ctx& c, const int8_band_panels& p, Eigen::Index r0,
                              Eigen::Index r1, Eigen::Index j0, Eigen::Index j1,
                              std::vector<std::uint64_t>& cand) {
  for (Eigen::Index ib = 0; ib < r1 - r0; ib += 32) {
    Eigen::Index j = c.self ? std::max(j0, r0 + ib + 1) : j0;
    for (; j1 - j >= 8; j += 8) int8_avx512_tile<8>(c, p, r0, r1, ib, j, cand);
    for (; j1 - j >= 4; j += 4) int8_avx512_tile<4>(c, p, r0, r1, ib, j, cand);
    for (; j1 - j >= 1; j += 1) int8_avx512_tile<1>(c, p, r0, r1, ib, j, cand);
  }
}
#endif
#endif

// True when the AVX2 kernel can run on this CPU: the GEMM backend's check (gemm_backend.hpp),
// whose x86 condition is this header's MEMHEALTH_INT8_X86.
inline bool int8_have_avx2() noexcept {
  return gemm_have_avx2();
}

// True when the CPU also has AVX-VNNI (CPUID leaf 7 sub-leaf 1, EAX bit 4) and the compiler
// can emit it. The OS's saving of ymm state is already implied by int8_have_avx2.
inline bool int8_have_vnni() noexcept {
#if MEMHEALTH_INT8_VNNI
  static const bool ok = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!int8_have_avx2() || __get_cpuid_max(0, nullptr) < 7) return false;
    __cpuid_count(7, 1, eax, ebx, ecx, edx);
    return (eax & (1u << 4)) != 0;
  }();
  return ok;
#else
  return false;
#endif
}

// True when the CPU has AVX-512 F, BW and VNNI and the OS saves zmm state (the compiler
// runtime's check covers XCR0), and the compiler can emit them.
inline bool int8_have_avx512_vnni() noexcept {
#if MEMHEALTH_INT8_AVX512
  static const bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                         __builtin_cpu_supports("avx512vnni");
  return ok;
#else
  return false;
#endif
}

// True when the CPU can run kernel `level` (0 = portable, 1 = AVX2, 2 = AVX-VNNI, 3 = AVX-512
// VNNI). The levels do not nest: Zen 4 and Ice Lake have AVX-512 VNNI but not AVX-VNNI.
inline bool int8_level_available(int level) noexcept {
  switch (level) {
    case 0:
      return true;
    case 1:
      return int8_have_avx2();
    case 2:
      return int8_have_vnni();
    case 3:
      return int8_have_avx512_vnni();
    default:
      return false;
  }
}

// The best kernel the CPU has, at most `cap` (same integers, same test for every kernel).
inline int int8_kernel_level(int cap = 3) noexcept {
  for (int level = std::min(cap, 3); level > 0; --level)
    if (int8_level_available(level)) return level;
  return 0;
}

// Candidates of band [r0, r1) (r0 multiple of 4) against b, column tiles of 64 rows, with kernel
// `level`, which the caller has checked with int8_level_available (0 always runs).
inline void int8_band_candidates(const int8_test_ctx& c, Eigen::Index r0, Eigen::Index r1,
                                 int level, std::vector<std::uint64_t>& cand) {
  const Eigen::Index nb = c.b->rows;
  constexpr Eigen::Index col_tile = 64;
  const Eigen::Index c_begin = c.self ? r0 : 0;
#if MEMHEALTH_INT8_AVX512
  if (level == 3) {
    thread_local int8_band_panels panels;
    int8_pack_band(*c.a, c.a_norm, r0, r1, panels);
    for (Eigen::Index c0 = c_begin; c0 < nb; c0 += col_tile)
      int8_block_avx512(c, panels, r0, r1, c0, std::min(nb, c0 + col_tile), cand);
    return;
  }
#endif
  for (Eigen::Index c0 = c_begin; c0 < nb; c0 += col_tile) {
    const Eigen::Index c1 = std::min(nb, c0 + col_tile);
#if MEMHEALTH_INT8_VNNI
    if (level == 2) {
      int8_block_vnni(c, r0, r1, c0, c1, cand);
      continue;
    }
#endif
#if MEMHEALTH_INT8_X86
    if (level == 1) {
      int8_block_avx2(c, r0, r1, c0, c1, cand);
      continue;
    }
#endif
    (void)level;
    int8_block_scalar(c, r0, r1, c0, c1, cand);
  }
}

// The two folded factors of test (3) ("Prefix bound" in the file comment): per row of a,
// sqrt(λ‖x_i'‖² + u_i²); per row of b, sqrt(e_j²/λ + u_j²) with e_j = b.right_err; λ = mean e /
// mean ‖x'‖ over the finite rows (any λ > 0 is valid; this one is nearly tight for typical rows).
// Rounded up; a zero row (and the padding) keeps 0, a non-finite row +inf.
inline void int8_fold_prefix(const int8_rows& a, const int8_rows& b, std::vector<float>& fa,
                             std::vector<float>& fb) {
  double sum_n = 0, sum_e = 0;
  std::size_t cnt_n = 0, cnt_e = 0;
  for (Eigen::Index i = 0; i < a.rows; ++i)
    if (const float v = a.norm[static_cast<std::size_t>(i)]; std::isfinite(v) && v > 0)
      sum_n += v, ++cnt_n;
  for (Eigen::Index j = 0; j < b.rows; ++j)
    if (const float v = b.right_err[static_cast<std::size_t>(j)]; std::isfinite(v) && v > 0)
      sum_e += v, ++cnt_e;
  double lambda = 1;
  if (cnt_n > 0 && cnt_e > 0)
    lambda = (sum_e / static_cast<double>(cnt_e)) / (sum_n / static_cast<double>(cnt_n));
  if (!(lambda > 0) || !std::isfinite(lambda)) lambda = 1;
  auto fold = [](double x, double u, double w) -> float {
    if (x == 0 && u == 0) return 0.0f;
    return std::max(round_up_to_float(std::sqrt(w * x * x + u * u)),
                    std::numeric_limits<float>::min());
  };
  fa.assign(a.norm.size(), 0.0f);
  fb.assign(b.right_err.size(), 0.0f);
  for (std::size_t i = 0; i < fa.size(); ++i) fa[i] = fold(a.norm[i], a.suffix[i], lambda);
  for (std::size_t j = 0; j < fb.size(); ++j) fb[j] = fold(b.right_err[j], b.suffix[j], 1 / lambda);
}

// Rescores a band's candidates (sorted by (i, j) first) and appends the pairs with score >= t.
inline void rescore(const rows_cref& a, const rows_cref& b, float t,
                    std::vector<std::uint64_t>& cand, std::vector<scored_pair>& out) {
  std::sort(cand.begin(), cand.end());
  for (const std::uint64_t key : cand) {
    const auto i = static_cast<std::uint32_t>(key >> 32),
               j = static_cast<std::uint32_t>(key & 0xffffffffu);
    const float s = a.row(i).dot(b.row(j));
    if (s >= t) out.push_back({i, j, s});
  }
}

template <class Out>
quantized_join_stats run_quantized_join(const rows_cref& a, const int8_rows& qa, const rows_cref& b,
                                        const int8_rows& qb, bool self, float t, Out& emit,
                                        const quantized_join_options& opt) {
  MEMHEALTH_ASSERT(opt.tile >= 4, "quantized join: tile must be >= 4");
  MEMHEALTH_ASSERT(opt.threads >= 1, "quantized join: threads must be >= 1");
  MEMHEALTH_ASSERT(a.cols() == b.cols() || a.rows() == 0 || b.rows() == 0,
                   "quantized join: matrices of different dimension");
  MEMHEALTH_ASSERT(
      qa.rows == a.rows() && qb.rows == b.rows() && qa.dim == a.cols() && qb.dim == b.cols(),
      "quantized join: quantised rows do not match the matrices");
  // the prefix form holds one suffix factor per padded row (none for zero rows: an empty side is
  // in the prefix form as much as in the full one, so only the widths are compared)
  const auto form_ok = [](const int8_rows& q) {
    return q.cols == q.dim ? q.suffix.empty()
                           : q.suffix.size() == static_cast<std::size_t>(q.rows_padded());
  };
  MEMHEALTH_ASSERT(
      (qa.cols == qb.cols || qa.rows == 0 || qb.rows == 0) && form_ok(qa) && form_ok(qb),
      "quantized join: the two sides were quantised with different prefix widths");
  quantized_join_stats stats;
  const Eigen::Index n = a.rows();
  if (n == 0 || b.rows() == 0) return stats;  // an empty side: no pair
  const Eigen::Index tile = opt.tile / 4 * 4;
  const Eigen::Index bands = (n + tile - 1) / tile;
  const int level = int8_kernel_level(static_cast<int>(opt.kernel));
  std::vector<float> folded_a, folded_b;  // test (3) with a prefix, else (2) on the rows' own norms
  if (qa.cols < qa.dim) int8_fold_prefix(qa, qb, folded_a, folded_b);
  const int8_test_ctx ctx{&qa,
                          &qb,
                          t,
                          self,
                          folded_a.empty() ? qa.norm.data() : folded_a.data(),
                          folded_b.empty() ? qb.right_err.data() : folded_b.data()};
  const auto workers = static_cast<std::size_t>(std::min<Eigen::Index>(opt.threads, bands));
  std::vector<std::vector<std::uint64_t>> cand(workers);
  std::vector<std::vector<scored_pair>> pairs(workers);
  auto work = [&](std::size_t w, Eigen::Index band) {
    cand[w].clear();
    pairs[w].clear();
    int8_band_candidates(ctx, band * tile, std::min(n, (band + 1) * tile), level, cand[w]);
    rescore(a, b, t, cand[w], pairs[w]);
  };
  for (Eigen::Index round = 0; round < bands; round += static_cast<Eigen::Index>(workers)) {
    const std::size_t active =
        std::min<std::size_t>(workers, static_cast<std::size_t>(bands - round));
    if (active == 1) {
      work(0, round);
    } else {
      detail::run_workers(active,
                          [&](std::size_t w) { work(w, round + static_cast<Eigen::Index>(w)); });
    }
    for (std::size_t w = 0; w < active; ++w) {
      stats.candidates += cand[w].size();
      auto& p = pairs[w];
      if (opt.max_pairs != 0 && stats.pairs + p.size() > opt.max_pairs) {
        p.resize(opt.max_pairs - stats.pairs);
        stats.truncated = true;
      }
      for (const auto& x : p) emit(x.i, x.j, x.score);
      stats.pairs += p.size();
      if (stats.truncated) return stats;
    }
  }
  return stats;
}

}  // namespace detail

/// Symmetric threshold join through the int8 prefilter: `emit(i, j, score)` for every pair i < j
/// of rows of X with x_i . x_j >= t (cosine for unit rows), score = the float32 dot product, in
/// increasing (i, j) order. Same pairs as `threshold_join` (recall 1.0, see the file comment).
/// @param X n x d, row-major float32 (unit rows for cosine). @param q `quantize_rows(X)`.
/// @throws memhealth::error(precondition) for tile < 4, threads < 1, or q not made from X's shape.
/// @complexity O(n² · q.cols / 2) int8 multiply-adds + O(candidates · d) float; memory O(n d) bytes
/// for
///             q plus at most `threads` bands of candidates.
template <class Out>
quantized_join_stats quantized_threshold_join(const rows_cref& X, const int8_rows& q, float t,
                                              Out&& emit, const quantized_join_options& opt = {}) {
  return detail::run_quantized_join(X, q, X, q, true, t, emit, opt);
}

/// The same, quantising X itself (O(n d), on `opt.threads` threads).
template <class Out>
quantized_join_stats quantized_threshold_join(const rows_cref& X, float t, Out&& emit,
                                              const quantized_join_options& opt = {}) {
  const int8_rows q = quantize_rows(X, opt.threads, opt.prefix_dims);
  return detail::run_quantized_join(X, q, X, q, true, t, emit, opt);
}

/// Two-set join through the int8 prefilter: every row i of A and j of B with a_i . b_j >= t,
/// in increasing (i, j) order; same pairs as `join`.
/// @param A na x d, @param B nb x d, row-major float32. Quantises both (O((na + nb) d)).
/// @throws memhealth::error(precondition) when the column counts differ and both sides have rows
///         (an empty side gives no pair).
template <class Out>
quantized_join_stats quantized_join(const rows_cref& A, const rows_cref& B, float t, Out&& emit,
                                    const quantized_join_options& opt = {}) {
  MEMHEALTH_ASSERT(A.cols() == B.cols() || A.rows() == 0 || B.rows() == 0,
                   "quantized_join: matrices of different dimension");
  const int8_rows qa = quantize_rows(A, opt.threads, opt.prefix_dims),
                  qb = quantize_rows(B, opt.threads, opt.prefix_dims);
  return detail::run_quantized_join(A, qa, B, qb, false, t, emit, opt);
}

/// Convenience: `quantized_threshold_join`'s pairs as a vector, sorted by (i, j).
template <class = void>  // deferred instantiation, see memhealth.hpp
[[nodiscard]] std::vector<scored_pair> quantized_threshold_join_pairs(
    const rows_cref& X, float t, const quantized_join_options& opt = {}) {
  std::vector<scored_pair> out;
  quantized_threshold_join(
      X, t,
      [&](std::uint32_t i, std::uint32_t j, float s) {
        out.push_back({i, j, s});
      },
      opt);
  return out;
}

/// Convenience: `quantized_join`'s pairs as a vector, sorted by (i, j).
template <class = void>  // deferred instantiation, see memhealth.hpp
[[nodiscard]] std::vector<scored_pair> quantized_join_pairs(
    const rows_cref& A, const rows_cref& B, float t, const quantized_join_options& opt = {}) {
  std::vector<scored_pair> out;
  quantized_join(
      A, B, t,
      [&](std::uint32_t i, std::uint32_t j, float s) {
        out.push_back({i, j, s});
      },
      opt);
  return out;
}

}  // namespace memhealth
