#pragma once
/// @file cblas_backend.hpp
/// Optional GEMM backend for the tiled joins: any CBLAS (`cblas_sgemm` from `<cblas.h>`), e.g.
/// OpenBLAS from Debian (libopenblas-dev; link -lopenblas or CMake's BLAS::BLAS).
///
/// Not included by memhealth.hpp: including this header is the opt-in, and the program must link
/// a CBLAS. Usage: `threshold_join(X, t, emit, {.threads = 2}, cosine_kernel{}, cblas_gemm{})`.
///
/// Threads: the join already runs `join_options::threads` workers, each calling `cblas_sgemm` on
/// its own tile. A multithreaded BLAS would start its own threads inside each call and
/// oversubscribe the cores; with OpenBLAS call `openblas_set_num_threads(1)` once before a
/// multithreaded join (or use the join with threads = 1 and let the BLAS parallelise each tile,
/// which is slower because the scan then runs on one core).
///
/// Without `<cblas.h>` on the include path this header defines nothing but
/// `MEMHEALTH_HAVE_CBLAS` = 0 (so a header-set check on a machine without a BLAS still passes);
/// with it, `MEMHEALTH_HAVE_CBLAS` = 1 and `cblas_gemm` below.

#if __has_include(<cblas.h>)
#define MEMHEALTH_HAVE_CBLAS 1
#include <cblas.h>
#else
#define MEMHEALTH_HAVE_CBLAS 0
#endif

#include "memhealth/config.hpp"
#include "memhealth/similarity/gemm_backend.hpp"

#if MEMHEALTH_HAVE_CBLAS
namespace memhealth {

/// GEMM backend calling `cblas_sgemm(RowMajor, NoTrans, Trans, ...)`: S = A * B^T.
/// Views of any outer stride are passed as leading dimensions (no copy).
/// @complexity O(ra · rb · d) flops in the BLAS's own kernel (chosen at run time by OpenBLAS).
struct cblas_gemm {
  /// S = A * B^T. @pre S is A.rows() x B.rows(); A and B have the same number of columns; every
  /// size fits the BLAS integer type (`blasint`, 32-bit in Debian's OpenBLAS).
  void gemm_nt(const rows_cref& a, const rows_cref& b, tile_ref s) const {
    MEMHEALTH_ASSERT(s.rows() == a.rows() && s.cols() == b.rows() && a.cols() == b.cols(),
                     "cblas_gemm: shapes do not match");
    if (s.size() == 0) return;
    if (a.cols() == 0) {
      s.setZero();
      return;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(a.rows()),
                static_cast<int>(b.rows()), static_cast<int>(a.cols()), 1.0f, a.data(),
                static_cast<int>(a.outerStride()), b.data(), static_cast<int>(b.outerStride()),
                0.0f, s.data(), static_cast<int>(s.outerStride()));
  }
};

static_assert(gemm_backend<cblas_gemm>);

}  // namespace memhealth
#endif  // MEMHEALTH_HAVE_CBLAS
