#pragma once
/// @file kernels.hpp
/// Similarity kernels: the metric of every pairwise comparison, as a callable template parameter
/// (the USearch style), never a virtual interface.
///
/// A kernel K has two forms:
/// - scalar: `float k(std::span<const float> a, std::span<const float> b) const` (a.size() ==
/// b.size());
/// - batch: `k.tile(A, B, S)` writes the ra x rb similarity tile of the rows of A (ra x d) against
///   the rows of B (rb x d) into S, a preallocated ra x rb row-major float32 buffer
///   (`S.noalias() = A * B.transpose()` for dot-product kernels). It never allocates.
///   The built-in kernels also take a GEMM backend, `k.tile(A, B, S, g)`, which computes A * B^T
///   with `g.gemm_nt` (similarity/gemm_backend.hpp); the joins use that form when a kernel has it.
/// Larger is always more similar, so a threshold join keeps pairs with `k(a, b) >= t`.
///
/// | kernel | value | range | when |
/// |---|---|---|---|
/// | `cosine_kernel` | a . b of unit rows | [-1, 1] | the caller normalises rows once
/// (detection_context does) | | `inner_product_kernel` | a . b | any | maximum-inner-product
/// stores, unnormalised rows | | `l2_kernel` | -‖a - b‖² | (-inf, 0] | Euclidean stores; for unit
/// rows -‖a-b‖² = 2 cos - 2 |

#include <Eigen/Core>

#include <concepts>
#include <cstddef>
#include <span>

#include "memhealth/config.hpp"

namespace memhealth {

/// Row-major float32 matrix (rows x d), the layout of every embedding block in memhealth.
using row_matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// A writable view of (part of) a preallocated tile buffer: ra x rb, row-major float32, any
/// outer stride (so `buffer.topLeftCorner(ra, rb)` binds without copying).
using tile_ref = Eigen::Ref<row_matrix, 0, Eigen::OuterStride<>>;

/// A read-only view of a block of rows (r x d, row-major float32, any outer stride).
using rows_cref = Eigen::Ref<const row_matrix, 0, Eigen::OuterStride<>>;

/// Concept for a similarity kernel: a scalar call on two spans and a batch `tile` call.
template <class K>
concept similarity_kernel = requires(const K& k, std::span<const float> a, const rows_cref& A,
                                     tile_ref S) {
  { k(a, a) } -> std::convertible_to<float>;
  k.tile(A, A, S);
};

namespace detail {
inline Eigen::Map<const Eigen::RowVectorXf> as_row(std::span<const float> a) noexcept {
  return Eigen::Map<const Eigen::RowVectorXf>(a.data(), static_cast<Eigen::Index>(a.size()));
}
}  // namespace detail

/// Inner product a . b. For unit-normalised rows this is the cosine; no normalisation is done.
/// @complexity scalar O(d); tile O(ra * rb * d) through Eigen's GEMM.
struct inner_product_kernel {
  /// a . b. @pre a.size() == b.size() (MEMHEALTH_ASSERT).
  [[nodiscard]] float operator()(std::span<const float> a, std::span<const float> b) const {
    MEMHEALTH_ASSERT(a.size() == b.size(), "similarity kernel: vectors of different length");
    return detail::as_row(a).dot(detail::as_row(b));
  }
  /// S = A * B^T. @pre S is A.rows() x B.rows(); A and B have the same number of columns.
  template <class = void>  // deferred: Eigen's GEMM is instantiated only where this form is called
  void tile(const rows_cref& a, const rows_cref& b, tile_ref s) const {
    s.noalias() = a * b.transpose();
  }
  /// S = A * B^T computed by the GEMM backend `g` (`g.gemm_nt(A, B, S)`, see gemm_backend.hpp).
  template <class G>
  requires requires(const G& g, const rows_cref& x, tile_ref y) { g.gemm_nt(x, x, y); }
  void tile(const rows_cref& a, const rows_cref& b, tile_ref s, const G& g) const {
    g.gemm_nt(a, b, s);
  }
};

/// Cosine similarity of rows that the caller has already normalised to unit length (the
/// detection context does this once per run): a dot product, in [-1, 1].
/// Feeding unnormalised rows gives the inner product, not the cosine; use `cosine_of` for a
/// one-off comparison of raw vectors.
struct cosine_kernel : inner_product_kernel {
  /// Cosine of two *raw* vectors (normalises on the fly). Zero vectors give 0.
  [[nodiscard]] static float cosine_of(std::span<const float> a, std::span<const float> b) {
    MEMHEALTH_ASSERT(a.size() == b.size(), "cosine_of: vectors of different length");
    const float na = detail::as_row(a).norm(), nb = detail::as_row(b).norm();
    if (na == 0.0f || nb == 0.0f) return 0.0f;
    return detail::as_row(a).dot(detail::as_row(b)) / (na * nb);
  }
};

/// Negative squared Euclidean distance, -‖a - b‖², in (-inf, 0]; 0 means identical. A threshold
/// t keeps pairs within distance sqrt(-t). For unit rows, -‖a-b‖² = 2·cos(a,b) - 2, so cosine
/// threshold c corresponds to t = 2c - 2.
/// Tile form: S = 2 A B^T - ‖a_i‖² - ‖b_j‖², computed in place (no temporary).
struct l2_kernel {
  /// -‖a - b‖². @pre a.size() == b.size().
  [[nodiscard]] float operator()(std::span<const float> a, std::span<const float> b) const {
    MEMHEALTH_ASSERT(a.size() == b.size(), "similarity kernel: vectors of different length");
    return -(detail::as_row(a) - detail::as_row(b)).squaredNorm();
  }
  /// S(i,j) = -‖a_i - b_j‖². @pre S is A.rows() x B.rows().
  template <class = void>  // deferred, as above
  void tile(const rows_cref& a, const rows_cref& b, tile_ref s) const {
    s.noalias() = a * b.transpose();
    finish_tile(a, b, s);
  }
  /// The same with A * B^T computed by the GEMM backend `g` (see gemm_backend.hpp).
  template <class G>
  requires requires(const G& g, const rows_cref& x, tile_ref y) { g.gemm_nt(x, x, y); }
  void tile(const rows_cref& a, const rows_cref& b, tile_ref s, const G& g) const {
    g.gemm_nt(a, b, s);
    finish_tile(a, b, s);
  }
  /// The l2 threshold equivalent to cosine threshold c on unit rows: 2c - 2.
  [[nodiscard]] static constexpr float from_cosine(float c) noexcept { return 2.0f * c - 2.0f; }

 private:
  static void finish_tile(const rows_cref& a, const rows_cref& b, tile_ref s) {
    for (Eigen::Index j = 0; j < s.cols(); ++j) {
      const float nb = b.row(j).squaredNorm();
      for (Eigen::Index i = 0; i < s.rows(); ++i) s(i, j) = 2.0f * s(i, j) - nb;
    }
    for (Eigen::Index i = 0; i < s.rows(); ++i) s.row(i).array() -= a.row(i).squaredNorm();
  }
};

static_assert(similarity_kernel<cosine_kernel>);
static_assert(similarity_kernel<inner_product_kernel>);
static_assert(similarity_kernel<l2_kernel>);

}  // namespace memhealth
