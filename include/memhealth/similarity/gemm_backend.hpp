#pragma once
/// @file gemm_backend.hpp
/// GEMM backend policy of the tiled joins: who computes the similarity tile S = A * B^T.
///
/// A backend G is a small copyable value with one call, `g.gemm_nt(A, B, S)`: A is ra x d, B is
/// rb x d (row-major float32 views, any outer stride), S a preallocated ra x rb row-major float32
/// tile; it writes S(i, j) = A.row(i) . B.row(j) and never allocates S. It is passed by value to
/// `threshold_join` / `join` (a template parameter with a default, never a virtual interface).
///
/// | backend | header | needs | notes |
/// |---|---|---|---|
/// | `eigen_gemm` | this one | Eigen (header-only) | SIMD width fixed at compile time: SSE2 only
/// unless the program is compiled with -mavx2 -mfma (or -march=native) | | `avx2_gemm` | this one |
/// nothing (header-only) | memhealth's own 6 x 16 AVX2/FMA micro-kernel, compiled with a `target`
/// attribute and chosen at run time (`__builtin_cpu_supports`); `portable_gemm` on CPUs without
/// AVX2/FMA and on other architectures | | `portable_gemm` | this one | nothing (header-only) | the
/// same loop nest with a plain C++ 6 x 8 micro-kernel the compiler vectorises for the compile
/// flags' SIMD | | `avx512_gemm` | this one | nothing (header-only) | the same design with a 6 x 32
/// AVX-512F micro-kernel where the CPU has it, else `avx2_gemm` | | `cblas_gemm` |
/// similarity/cblas_backend.hpp | a CBLAS (`<cblas.h>`, e.g. OpenBLAS, linked by the user) |
/// OpenBLAS picks its AVX2/AVX-512 kernel at run time, whatever the compile flags |
///
/// `default_gemm`, the joins' default, is Eigen's GEMM whenever Eigen itself is compiled for
/// AVX-512F (the program is built with -mavx512f or -march=native on such a CPU, or on a non-x86
/// target), and `avx512_gemm` on x86 with GCC or Clang otherwise: a header-only library is
/// compiled with the user's flags, usually without -mavx2, and Eigen's SSE2 GEMM then runs at a
/// quarter of what the CPU can do (2.3-5x slower than `avx2_gemm`, measured in bench/README.md).
/// The micro-kernel follows the BLIS design (Van Zee & van de Geijn, "BLIS: A Framework for Rapidly
/// Instantiating BLAS Functionality", ACM TOMS 2015): B is packed into 16-column panels per
/// 256-deep slice of k, each 6 x 16 block of S lives in 12 ymm registers.
///
/// cblas_backend.hpp is not included by memhealth.hpp: a user who links a CBLAS opts in by
/// including it.

#include <Eigen/Core>

#include <algorithm>
#include <vector>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define MEMHEALTH_GEMM_X86 1
#include <immintrin.h>
#else
#define MEMHEALTH_GEMM_X86 0
#endif

#include "memhealth/similarity/kernels.hpp"

namespace memhealth {

/// Concept for a GEMM backend: `g.gemm_nt(A, B, S)` writes S = A * B^T (see the file comment).
template <class G>
concept gemm_backend = requires(const G& g, const rows_cref& a, tile_ref s) {
  g.gemm_nt(a, a, s);
};

/// Eigen's GEMM (`S.noalias() = A * B.transpose()`), header-only; the default when Eigen is
/// compiled for AVX-512F or the target is not x86 (see `default_gemm`).
/// @complexity O(ra · rb · d) flops; no allocation beyond Eigen's packing blocks.
struct eigen_gemm {
  /// S = A * B^T. @pre S is A.rows() x B.rows(); A and B have the same number of columns.
  template <class = void>  // deferred: Eigen's GEMM is instantiated only where it is called
  void gemm_nt(const rows_cref& a, const rows_cref& b, tile_ref s) const {
    s.noalias() = a * b.transpose();
  }
};

static_assert(gemm_backend<eigen_gemm>);

namespace detail {

// C (m x n, row stride ldc) = A (m x k) · B (n x k)^T, all row-major float32, through a 6 x NR
// micro-kernel: B packed into NR-column panels per 256-deep slice of k (the BLIS loop nest).
template <Eigen::Index NR, class Micro>
void sgemm_nt_packed(const float* a, Eigen::Index lda, const float* b, Eigen::Index ldb, float* c,
                     Eigen::Index ldc, Eigen::Index m, Eigen::Index n, Eigen::Index k,
                     Micro micro) {
  constexpr Eigen::Index kKc = 256;
  thread_local std::vector<float> pack;  // grows to the largest tile seen, then is reused
  const Eigen::Index panels = (n + NR - 1) / NR;
  if (k == 0) {
    for (Eigen::Index i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
    return;
  }
  for (Eigen::Index k0 = 0; k0 < k; k0 += kKc) {
    const Eigen::Index kc = std::min(kKc, k - k0);
    const auto need = static_cast<std::size_t>(panels * kc * NR);
    if (pack.size() < need) pack.resize(need);
    for (Eigen::Index p = 0; p < panels; ++p) {
      float* dst = pack.data() + p * kc * NR;
      for (Eigen::Index jj = 0; jj < NR; ++jj) {
        const Eigen::Index j = p * NR + jj;
        if (j < n) {
          const float* src = b + j * ldb + k0;
          for (Eigen::Index kk = 0; kk < kc; ++kk) dst[kk * NR + jj] = src[kk];
        } else {
          for (Eigen::Index kk = 0; kk < kc; ++kk) dst[kk * NR + jj] = 0.0f;
        }
      }
    }
    for (Eigen::Index p = 0; p < panels; ++p) {
      const float* bp = pack.data() + p * kc * NR;
      const Eigen::Index j0 = p * NR, nc = std::min<Eigen::Index>(NR, n - j0);
      for (Eigen::Index i0 = 0; i0 < m; i0 += 6)
        micro(a + i0 * lda + k0, lda, std::min<Eigen::Index>(6, m - i0), bp, kc, c + i0 * ldc + j0,
              ldc, nc, k0 > 0);
    }
  }
}

// Portable 6 x 8 block of C (+)= A(6 x kc) · Bp (Bp = kc x 8 packed panel) in plain C++: the
// compiler vectorises the 8-wide inner loops for the target's baseline SIMD (SSE2 on x86-64,
// NEON on AArch64). Same contract as the intrinsic micro-kernels: rows r >= mr read row 0 and
// are not stored; columns >= nc are not stored.
inline void sgemm_micro_6x8(const float* a, Eigen::Index lda, Eigen::Index mr, const float* bp,
                            Eigen::Index kc, float* c, Eigen::Index ldc, Eigen::Index nc,
                            bool accumulate) {
  const float* ar[6];
  for (Eigen::Index r = 0; r < 6; ++r) ar[r] = r < mr ? a + r * lda : a;
  float acc[6][8] = {};
  for (Eigen::Index k = 0; k < kc; ++k) {
    const float* b = bp + 8 * k;
    for (int r = 0; r < 6; ++r) {
      const float v = ar[r][k];
      for (int j = 0; j < 8; ++j) acc[r][j] += v * b[j];
    }
  }
  for (Eigen::Index r = 0; r < mr; ++r)
    for (Eigen::Index j = 0; j < nc; ++j)
      c[r * ldc + j] = accumulate ? c[r * ldc + j] + acc[r][j] : acc[r][j];
}

}  // namespace detail

/// memhealth's own portable GEMM: the BLIS loop nest of `avx2_gemm` with a plain C++ 6 x 8
/// micro-kernel that the compiler vectorises for the compile flags' SIMD; no intrinsics, any
/// architecture. The fallback of `avx2_gemm` (and so of `default_gemm` on x86) on CPUs without
/// AVX2/FMA, in place of Eigen's GEMM, which is a heavy template to compile. Same contract and
/// rounding bound as `avx2_gemm` (not benchmarked against `eigen_gemm`).
/// @complexity O(ra · rb · d) flops; packs B (rb x d floats) into a thread-local buffer.
struct portable_gemm {
  /// S = A * B^T. @pre S is A.rows() x B.rows(); A and B have the same number of columns.
  void gemm_nt(const rows_cref& a, const rows_cref& b, tile_ref s) const {
    MEMHEALTH_ASSERT(s.rows() == a.rows() && s.cols() == b.rows() && a.cols() == b.cols(),
                     "portable_gemm: shapes do not match");
    if (s.size() == 0) return;
    detail::sgemm_nt_packed<8>(a.data(), a.outerStride(), b.data(), b.outerStride(), s.data(),
                               s.outerStride(), a.rows(), b.rows(), a.cols(),
                               detail::sgemm_micro_6x8);
  }
};

static_assert(gemm_backend<portable_gemm>);

namespace detail {

#if MEMHEALTH_GEMM_X86
// One row of a micro-kernel block: straight into C (+=) when the block is whole, else to tmp.
__attribute__((target("avx2,fma"))) inline void sgemm_put_row(bool full, bool accumulate,
                                                              float* row, float* tmp, __m256 lo,
                                                              __m256 hi) {
  if (!full) {
    _mm256_store_ps(tmp, lo);
    _mm256_store_ps(tmp + 8, hi);
    return;
  }
  if (accumulate) {
    lo = _mm256_add_ps(lo, _mm256_loadu_ps(row));
    hi = _mm256_add_ps(hi, _mm256_loadu_ps(row + 8));
  }
  _mm256_storeu_ps(row, lo);
  _mm256_storeu_ps(row + 8, hi);
}

// 6 x 16 block of C (+)= A(6 x kc) · Bp, Bp = kc x 16 packed panel. Rows r >= mr read row 0 and
// are not stored; columns >= nc are not stored.
__attribute__((target("avx2,fma"))) inline void sgemm_micro_6x16(const float* a, Eigen::Index lda,
                                                                 Eigen::Index mr, const float* bp,
                                                                 Eigen::Index kc, float* c,
                                                                 Eigen::Index ldc, Eigen::Index nc,
                                                                 bool accumulate) {
  const float* a0 = a;
  const float* a1 = mr > 1 ? a + lda : a;
  const float* a2 = mr > 2 ? a + 2 * lda : a;
  const float* a3 = mr > 3 ? a + 3 * lda : a;
  const float* a4 = mr > 4 ? a + 4 * lda : a;
  const float* a5 = mr > 5 ? a + 5 * lda : a;
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  for (Eigen::Index k = 0; k < kc; ++k) {
    const __m256 b0 = _mm256_loadu_ps(bp + 16 * k), b1 = _mm256_loadu_ps(bp + 16 * k + 8);
    __m256 v = _mm256_broadcast_ss(a0 + k);
    c00 = _mm256_fmadd_ps(v, b0, c00);
    c01 = _mm256_fmadd_ps(v, b1, c01);
    v = _mm256_broadcast_ss(a1 + k);
    c10 = _mm256_fmadd_ps(v, b0, c10);
    c11 = _mm256_fmadd_ps(v, b1, c11);
    v = _mm256_broadcast_ss(a2 + k);
    c20 = _mm256_fmadd_ps(v, b0, c20);
    c21 = _mm256_fmadd_ps(v, b1, c21);
    v = _mm256_broadcast_ss(a3 + k);
    c30 = _mm256_fmadd_ps(v, b0, c30);
    c31 = _mm256_fmadd_ps(v, b1, c31);
    v = _mm256_broadcast_ss(a4 + k);
    c40 = _mm256_fmadd_ps(v, b0, c40);
    c41 = _mm256_fmadd_ps(v, b1, c41);
    v = _mm256_broadcast_ss(a5 + k);
    c50 = _mm256_fmadd_ps(v, b0, c50);
    c51 = _mm256_fmadd_ps(v, b1, c51);
  }
  alignas(32) float tmp[6][16];
  const bool full = mr == 6 && nc == 16;
  sgemm_put_row(full, accumulate, c, tmp[0], c00, c01);
  sgemm_put_row(full, accumulate, c + ldc, tmp[1], c10, c11);
  sgemm_put_row(full, accumulate, c + 2 * ldc, tmp[2], c20, c21);
  sgemm_put_row(full, accumulate, c + 3 * ldc, tmp[3], c30, c31);
  sgemm_put_row(full, accumulate, c + 4 * ldc, tmp[4], c40, c41);
  sgemm_put_row(full, accumulate, c + 5 * ldc, tmp[5], c50, c51);
  if (full) return;
  for (Eigen::Index r = 0; r < mr; ++r)
    for (Eigen::Index j = 0; j < nc; ++j)
      c[r * ldc + j] = accumulate ? c[r * ldc + j] + tmp[r][j] : tmp[r][j];
}

inline void sgemm_nt_avx2(const float* a, Eigen::Index lda, const float* b, Eigen::Index ldb,
                          float* c, Eigen::Index ldc, Eigen::Index m, Eigen::Index n,
                          Eigen::Index k) {
  sgemm_nt_packed<16>(a, lda, b, ldb, c, ldc, m, n, k, sgemm_micro_6x16);
}

// The AVX-512F forms of the two above: 6 x 32 blocks in 12 zmm accumulators, 32-column panels.
__attribute__((target("avx512f"))) inline void sgemm_put_row_avx512(bool full, bool accumulate,
                                                                    float* row, float* tmp,
                                                                    __m512 lo, __m512 hi) {
  if (!full) {
    _mm512_store_ps(tmp, lo);
    _mm512_store_ps(tmp + 16, hi);
    return;
  }
  if (accumulate) {
    lo = _mm512_add_ps(lo, _mm512_loadu_ps(row));
    hi = _mm512_add_ps(hi, _mm512_loadu_ps(row + 16));
  }
  _mm512_storeu_ps(row, lo);
  _mm512_storeu_ps(row + 16, hi);
}

__attribute__((target("avx512f"))) inline void sgemm_micro_6x32(const float* a, Eigen::Index lda,
                                                                Eigen::Index mr, const float* bp,
                                                                Eigen::Index kc, float* c,
                                                                Eigen::Index ldc, Eigen::Index nc,
                                                                bool accumulate) {
  const float* ar[6];
  for (Eigen::Index r = 0; r < 6; ++r) ar[r] = r < mr ? a + r * lda : a;
  __m512 acc[6][2];
  for (auto& row : acc) row[0] = row[1] = _mm512_setzero_ps();
  for (Eigen::Index k = 0; k < kc; ++k) {
    const __m512 b0 = _mm512_loadu_ps(bp + 32 * k), b1 = _mm512_loadu_ps(bp + 32 * k + 16);
    for (int r = 0; r < 6; ++r) {
      const __m512 v = _mm512_set1_ps(ar[r][k]);
      acc[r][0] = _mm512_fmadd_ps(v, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(v, b1, acc[r][1]);
    }
  }
  alignas(64) float tmp[6][32];
  const bool full = mr == 6 && nc == 32;
  for (int r = 0; r < 6; ++r)
    sgemm_put_row_avx512(full, accumulate, c + r * ldc, tmp[r], acc[r][0], acc[r][1]);
  if (full) return;
  for (Eigen::Index r = 0; r < mr; ++r)
    for (Eigen::Index j = 0; j < nc; ++j)
      c[r * ldc + j] = accumulate ? c[r * ldc + j] + tmp[r][j] : tmp[r][j];
}

inline void sgemm_nt_avx512(const float* a, Eigen::Index lda, const float* b, Eigen::Index ldb,
                            float* c, Eigen::Index ldc, Eigen::Index m, Eigen::Index n,
                            Eigen::Index k) {
  sgemm_nt_packed<32>(a, lda, b, ldb, c, ldc, m, n, k, sgemm_micro_6x32);
}
#endif

// True when the AVX2/FMA kernels can run on this CPU (checked once).
inline bool gemm_have_avx2() noexcept {
#if MEMHEALTH_GEMM_X86
  static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return ok;
#else
  return false;
#endif
}

}  // namespace detail

/// memhealth's own AVX2/FMA GEMM (see the file comment), chosen at run time; `portable_gemm`
/// on CPUs without AVX2/FMA and on non-x86 targets. Results equal Eigen's up to float rounding
/// (different summation order: |difference| <= 2·d·2^-24·‖a‖·‖b‖).
/// @complexity O(ra · rb · d) flops; packs B (rb x d floats) into a thread-local buffer that is
///             allocated once per thread and reused.
struct avx2_gemm {
  /// S = A * B^T. @pre S is A.rows() x B.rows(); A and B have the same number of columns.
  void gemm_nt(const rows_cref& a, const rows_cref& b, tile_ref s) const {
    MEMHEALTH_ASSERT(s.rows() == a.rows() && s.cols() == b.rows() && a.cols() == b.cols(),
                     "avx2_gemm: shapes do not match");
#if MEMHEALTH_GEMM_X86
    if (detail::gemm_have_avx2()) {
      if (s.size() == 0) return;
      detail::sgemm_nt_avx2(a.data(), a.outerStride(), b.data(), b.outerStride(), s.data(),
                            s.outerStride(), a.rows(), b.rows(), a.cols());
      return;
    }
#endif
    portable_gemm{}.gemm_nt(a, b, s);
  }
};

static_assert(gemm_backend<avx2_gemm>);

namespace detail {
// True when the AVX-512F kernel can run on this CPU (the compiler runtime's check covers the
// OS's saving of zmm state; checked once).
inline bool gemm_have_avx512() noexcept {
#if MEMHEALTH_GEMM_X86
  static const bool ok = __builtin_cpu_supports("avx512f");
  return ok;
#else
  return false;
#endif
}
}  // namespace detail

/// memhealth's own AVX-512F GEMM: the same BLIS design as `avx2_gemm` with 6 x 32 blocks in 12
/// zmm registers and 32-column panels, chosen at run time; `avx2_gemm` (and through it
/// `portable_gemm`) on CPUs without AVX-512F. Same contract and rounding bound as `avx2_gemm`.
/// @complexity O(ra · rb · d) flops; packs B (rb x d floats) into a thread-local buffer.
struct avx512_gemm {
  /// S = A * B^T. @pre S is A.rows() x B.rows(); A and B have the same number of columns.
  void gemm_nt(const rows_cref& a, const rows_cref& b, tile_ref s) const {
#if MEMHEALTH_GEMM_X86
    if (detail::gemm_have_avx512()) {
      MEMHEALTH_ASSERT(s.rows() == a.rows() && s.cols() == b.rows() && a.cols() == b.cols(),
                       "avx512_gemm: shapes do not match");
      if (s.size() == 0) return;
      detail::sgemm_nt_avx512(a.data(), a.outerStride(), b.data(), b.outerStride(), s.data(),
                              s.outerStride(), a.rows(), b.rows(), a.cols());
      return;
    }
#endif
    avx2_gemm{}.gemm_nt(a, b, s);
  }
};

static_assert(gemm_backend<avx512_gemm>);

/// The joins' default backend: `eigen_gemm` when Eigen is compiled for AVX-512F (or off x86),
/// else `avx512_gemm` on x86 with GCC/Clang, which runs the widest kernel the CPU has (AVX-512F,
/// then AVX2/FMA, then `portable_gemm` with the compile flags' SIMD).
#if MEMHEALTH_GEMM_X86 && !defined(__AVX512F__)
using default_gemm = avx512_gemm;
#else
using default_gemm = eigen_gemm;
#endif

namespace detail {
// Kernels with a backend-aware tile form (`k.tile(A, B, S, g)`) use the backend; any other
// kernel (a user's own) keeps its three-argument tile form.
template <class Kernel, class Backend>
void kernel_tile(const Kernel& k, const rows_cref& a, const rows_cref& b, tile_ref s,
                 const Backend& g) {
  if constexpr (requires { k.tile(a, b, s, g); })
    k.tile(a, b, s, g);
  else
    k.tile(a, b, s);
}
}  // namespace detail

}  // namespace memhealth
