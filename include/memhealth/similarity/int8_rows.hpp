#pragma once
/// @file int8_rows.hpp
/// The int8 forms of float32 rows that the quantised join (quantized_join.hpp) filters with:
/// `int8_rows` (a "left" uint8 form and a "right" int8 form per row, with per-row scales and the
/// norms of each form's rounding error), `quantize_rows`, and per pair the exact integer dot
/// product, its float estimate and the proven bound on that estimate's error. The scheme and the
/// proofs of the bounds are in quantized_join.hpp's file comment ("Quantisation", "Error bound",
/// "Prefix bound", "Non-finite rows").

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/similarity/join.hpp"
#include "memhealth/similarity/kernels.hpp"
#include "memhealth/worker_thread.hpp"

namespace memhealth {

/// Rows quantised to int8 with per-row scales, both forms (see quantized_join.hpp's file comment),
/// padded to a multiple of 4 rows (zero rows) and of 32 columns (zeros). Built by `quantize_rows`.
struct int8_rows {
  Eigen::Index rows = 0;    ///< n, real rows
  Eigen::Index dim = 0;     ///< d
  Eigen::Index cols = 0;    ///< columns quantised: d, or the prefix width p (see "Prefix bound")
  Eigen::Index stride = 0;  ///< padded row length in bytes (multiple of 32, >= cols)
  std::vector<std::uint8_t> left;  ///< rows_padded x stride: q + 128, q in [-127, 127]
  std::vector<std::int8_t> right;  ///< rows_padded x stride: p in [-63, 63]
  std::vector<float> left_scale;   ///< s = m/127 per row (0 for zero and non-finite rows)
  std::vector<float> right_scale;  ///< r = m/63 per row
  std::vector<std::int32_t>
      right_sum128;             ///< 128 · Σ_k p_k per row (the uint8 offset's correction)
  std::vector<float> norm;      ///< ‖x‖ (+inf for a non-finite row)
  std::vector<float> left_err;  ///< ‖x − x̂‖ of the left form (+inf for a non-finite row)
  std::vector<float> right_err;  ///< ‖y − ŷ‖ + γ'·‖y‖ of the right form, γ' = 2γ_d + 32·2^-24
  std::vector<float> right_hat;  ///< ‖ŷ‖ of the right form (+inf for a non-finite row)
  /// Prefix form only (cols < dim), else empty: u = ‖x''‖ + √ε·‖x‖ of the columns after the
  /// prefix, ε = γ', rounded up (+inf for a non-finite row). The fields above then describe the
  /// prefix x' only (an all-zero prefix of a nonzero row: the smallest normal float each).
  std::vector<float> suffix;
  /// Rows including the zero padding (a multiple of 4).
  [[nodiscard]] Eigen::Index rows_padded() const noexcept { return (rows + 3) / 4 * 4; }
};

namespace detail {

// Round to nearest, ties to even, for |v| < 2^22 (the quantised values are within ±127.5): the
// float add of 1.5·2^23 drops the fraction. No libm call, unlike std::nearbyint without SSE4.1.
// (Under -ffast-math the compiler may fold it into a truncation; the bound stays valid, as it is
// computed from the integers actually stored.)
inline float round_small(float v) noexcept {
  constexpr float magic = 12582912.0f;  // 1.5 · 2^23
  return (v + magic) - magic;
}

// The prefix width of the int8 form for d columns and the option value `requested`: as
// prefix_width (join.hpp), but automatic is d/3 rounded down to a multiple of 32 (the int8 pass
// is cheaper per column than the float32 one, and each candidate costs a full-width rescore, so
// a longer prefix with fewer candidates pays off).
inline Eigen::Index int8_prefix_width(Eigen::Index d, Eigen::Index requested) noexcept {
  return prefix_width(d, requested == 0 ? (d >= 128 ? d / 3 / 32 * 32 : d) : requested);
}

// Quantises rows [r0, r1) of X into q (already sized).
inline void quantize_range(const rows_cref& X, int8_rows& q, Eigen::Index r0, Eigen::Index r1) {
  const double gamma = float_join_slack(q.dim);  // γ' = 2γ_d + 32·2^-24 (join.hpp)
  constexpr double up = 1.0 + 0x1p-20;           // float norms rounded up
  constexpr float inf = std::numeric_limits<float>::infinity();
  for (Eigen::Index i = r0; i < r1; ++i) {
    const auto ui = static_cast<std::size_t>(i);
    const float* x = X.row(i).data();
    // vectorised: the largest |x_k| is NaN for a NaN anywhere and +inf for an inf
    const float all_max = X.row(i).cwiseAbs().template maxCoeff<Eigen::PropagateNaN>();
    const bool finite = q.dim == 0 || all_max <= std::numeric_limits<float>::max();
    // the prefix's own maximum only in the prefix form (the full form reuses all_max)
    const float m = !finite || q.cols == 0 ? 0.0f
                    : q.cols == q.dim      ? all_max
                                           : X.row(i).head(q.cols).cwiseAbs().maxCoeff();
    if (!finite) {
      q.norm[ui] = q.left_err[ui] = q.right_err[ui] = q.right_hat[ui] = inf;
      if (!q.suffix.empty()) q.suffix[ui] = inf;
      continue;
    }
    if (!q.suffix.empty()) {  // prefix form: the suffix factor u, in double, rounded up
      const double head = sum_squares(x, q.cols), tail = sum_squares(x + q.cols, q.dim - q.cols);
      q.suffix[ui] = round_up_to_float((std::sqrt(tail) + std::sqrt(gamma * (head + tail))) * up);
    }
    constexpr double tiny = std::numeric_limits<float>::min();
    if (m == 0) {
      // an all-zero prefix: approx' = 0 and no quantisation error, but if the suffix is not zero
      // the row is, so the floors below apply (a non-finite partner must give +inf, not NaN)
      if (!q.suffix.empty() && q.suffix[ui] > 0)
        q.norm[ui] = q.left_err[ui] = q.right_err[ui] = q.right_hat[ui] = static_cast<float>(tiny);
      continue;
    }
    const float s = m / 127.0f, r = m / 63.0f;
    const float inv_s = 127.0f / m, inv_r = 63.0f / m;
    q.left_scale[ui] = s;
    q.right_scale[ui] = r;
    std::uint8_t* lu = q.left.data() + ui * static_cast<std::size_t>(q.stride);
    std::int8_t* rp = q.right.data() + ui * static_cast<std::size_t>(q.stride);
    double nx = 0, el = 0, er = 0, nh = 0;
    std::int32_t psum = 0;
    for (Eigen::Index k = 0; k < q.cols; ++k) {
      // any rounding is valid: the bound uses the error actually made, computed in double
      const int ql = static_cast<int>(std::clamp(round_small(x[k] * inv_s), -127.0f, 127.0f));
      const int pr = static_cast<int>(std::clamp(round_small(x[k] * inv_r), -63.0f, 63.0f));
      lu[k] = static_cast<std::uint8_t>(ql + 128);
      rp[k] = static_cast<std::int8_t>(pr);
      psum += pr;
      const double v = x[k], xl = static_cast<double>(s) * ql, xr = static_cast<double>(r) * pr;
      nx += v * v;
      el += (v - xl) * (v - xl);
      er += (v - xr) * (v - xr);
      nh += xr * xr;
    }
    // Floors at the smallest normal float keep every term of (2) > 0 for a nonzero row, so a
    // non-finite partner gives +inf (never 0 · inf = NaN) and stays a candidate.
    q.norm[ui] = static_cast<float>(std::max(std::sqrt(nx) * up, tiny));
    q.left_err[ui] = static_cast<float>(std::max(std::sqrt(el) * up, tiny));
    q.right_err[ui] =
        static_cast<float>(std::max((std::sqrt(er) + gamma * std::sqrt(nx)) * up, tiny));
    q.right_hat[ui] = static_cast<float>(std::max(std::sqrt(nh) * up, tiny));
    q.right_sum128[ui] = 128 * psum;
  }
}

}  // namespace detail

/// Quantises the rows of X (n x d, row-major float32, any values) to `int8_rows`, on `threads`
/// threads (>= 1; the result does not depend on it).
/// @param prefix_dims < 0 or >= d (the default): every column; 0: automatic (d/3 rounded down
///        to a multiple of 32 when d >= 128, else every column);
///        p in (0, d): the prefix form, the first p columns plus the suffix factor (see "Prefix
///        bound" in quantized_join.hpp's file comment).
/// @throws memhealth::error(precondition) when d > 65,536 (int32 accumulators), n >= 2^32 or
///         threads == 0.
/// @complexity O(n·d) time, 2·n·stride bytes plus 8 four-byte values per row (7 without a
///             prefix).
[[nodiscard]] inline int8_rows quantize_rows(const rows_cref& X, unsigned threads = 1,
                                             Eigen::Index prefix_dims = -1) {
  MEMHEALTH_ASSERT(X.cols() <= 65'536, "quantize_rows: d > 65536");
  MEMHEALTH_ASSERT(X.rows() < (Eigen::Index{1} << 32), "quantize_rows: more than 2^32 rows");
  MEMHEALTH_ASSERT(threads >= 1, "quantize_rows: threads must be >= 1");
  int8_rows q;
  q.rows = X.rows();
  q.dim = X.cols();
  const Eigen::Index p = detail::int8_prefix_width(q.dim, prefix_dims);
  q.cols = p > 0 ? p : q.dim;
  q.stride = std::max<Eigen::Index>(32, (q.cols + 31) / 32 * 32);
  const Eigen::Index np = q.rows_padded();
  const auto total = static_cast<std::size_t>(np * q.stride);
  q.left.assign(total, 128);
  q.right.assign(total, 0);
  for (auto* v : {&q.left_scale, &q.right_scale, &q.norm, &q.left_err, &q.right_err, &q.right_hat})
    v->assign(static_cast<std::size_t>(np), 0.0f);
  q.right_sum128.assign(static_cast<std::size_t>(np), 0);
  if (q.cols < q.dim) q.suffix.assign(static_cast<std::size_t>(np), 0.0f);
  const auto workers = std::min<Eigen::Index>(threads, std::max<Eigen::Index>(1, q.rows / 256));
  if (workers <= 1) {
    detail::quantize_range(X, q, 0, q.rows);
    return q;
  }
  detail::run_workers(static_cast<std::size_t>(workers), [&](std::size_t w) {
    const auto k = static_cast<Eigen::Index>(w);
    detail::quantize_range(X, q, q.rows * k / workers, q.rows * (k + 1) / workers);
  });
  return q;
}

/// Integer dot product q_i . p_j of the left form of row i of `a` and the right form of row j of
/// `b` (exact). @pre same d; i < a.rows_padded(), j < b.rows_padded().
[[nodiscard]] inline std::int32_t int8_dot(const int8_rows& a, Eigen::Index i, const int8_rows& b,
                                           Eigen::Index j) {
  MEMHEALTH_ASSERT(a.dim == b.dim && a.cols == b.cols, "int8_dot: different dimensions");
  const std::uint8_t* u = a.left.data() + i * a.stride;
  const std::int8_t* p = b.right.data() + j * b.stride;
  std::int32_t acc = 0;
  for (Eigen::Index k = 0; k < a.stride; ++k) acc += (static_cast<std::int32_t>(u[k]) - 128) * p[k];
  return acc;
}

/// approx(i, j) = s_i · r_j · (q_i . p_j): the quantised estimate of x_i . y_j (of the prefixes
/// x_i' . y_j' for rows in the prefix form).
[[nodiscard]] inline float int8_approx_dot(const int8_rows& a, Eigen::Index i, const int8_rows& b,
                                           Eigen::Index j) {
  return static_cast<float>(int8_dot(a, i, b, j)) *
         (a.left_scale[static_cast<std::size_t>(i)] * b.right_scale[static_cast<std::size_t>(j)]);
}

/// The bound of (2) in quantized_join.hpp's file comment: |x_i . y_j − approx(i, j)| <= this, and
/// it also covers the float32 join's rounding. +inf or NaN for non-finite rows. For rows in the
/// prefix form
/// (`suffix` not empty) it bounds the prefixes' error only; the joins then use test (3).
[[nodiscard]] inline float int8_error_bound(const int8_rows& a, Eigen::Index i, const int8_rows& b,
                                            Eigen::Index j) {
  const auto ui = static_cast<std::size_t>(i), uj = static_cast<std::size_t>(j);
  return a.norm[ui] * b.right_err[uj] + a.left_err[ui] * b.right_hat[uj];
}

}  // namespace memhealth
