#pragma once
/// @file drift.hpp
/// Embedding drift between a reference sample and a current sample (SPEC section 2, drift):
/// `norm_shift` and `distribution_shift`. Version mixing inside one index is the structural
/// detector's `mixed_embedding_version` (detect/structural.hpp); this header does not repeat it.
///
/// ## norm_shift (error)
/// L2 norms of both samples are summarised (`norm_summary`); a shift is reported when the mean
/// norm moves by more than `norm_tolerance` (relative to the reference mean) or the share of
/// unit-length vectors (|norm - 1| <= unit_tolerance) moves by more than `unit_share_tolerance`
/// (e.g. vectors stop being normalised after a pipeline change). Norms compare across
/// dimensions, so this check runs even when the dimension changed.
///
/// ## distribution_shift (error)
/// Test: the kernel two-sample test of Gretton, Borgwardt, Rasch, Schölkopf and Smola, "A Kernel
/// Two-Sample Test", JMLR 13, 2012: squared MMD (biased V-statistic) with the Gaussian kernel
/// k(x, y) = exp(-‖x - y‖² / h) on unit-normalised rows, h = the median of the pooled pairwise
/// squared distances (the median heuristic), and a **permutation** p-value.
/// Why MMD and not centroid/covariance shift: a centroid test misses changes that keep the mean
/// (a rotation of the space about its centroid, a change of spread), and a covariance estimate
/// with n << d (10 texts, 1536 dims) is singular; MMD with a characteristic kernel detects any
/// difference of distributions. Why a permutation p-value: it is exact in finite samples under
/// exchangeability (no asymptotic null distribution), so it is valid at n = 10. When
/// C(n + m, n) <= max_exact_splits every split is enumerated (C(20, 10) = 184,756; the smallest
/// p is then 2 / 184,756 for equal sizes); otherwise `permutations` seeded random splits with
/// p = (1 + #{stat >= observed}) / (1 + permutations) (Phipson and Smyth 2010).
///
/// **Re-embedding noise**: a significant p-value is not enough. Shift is reported only when also
/// MMD = sqrt(MMD²) > noise floor = sqrt(4 (1 - noise_cosine) / h). Rationale: if every current
/// vector were a re-embedding of a reference vector with cosine >= c, then
/// ‖x - y‖² <= 2 (1 - c), ‖φ(x) - φ(y)‖² = 2 - 2 exp(-‖x - y‖² / h) <= 4 (1 - c) / h, and by the
/// triangle inequality MMD <= mean ‖φ(x_i) - φ(y_i)‖ <= sqrt(4 (1 - c) / h). So the same model
/// re-run (cosines >= 0.999, the default c) can never be reported, at any sample size.
/// Samples of different dimension are not comparable: that is reported as distribution_shift
/// with `test` = "dimension_changed" (no p-value), because a new dimension is a new space.
///
/// Complexity: O((n + m)² d) for the Gram matrix, then O(splits x n²).
/// Errors: none thrown for data; rows with zero or non-finite norm are left out of the MMD test
/// (counted in evidence `excluded`), a sample below `min_samples` gives a check_skipped finding.

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/detect/finding.hpp"
#include "memhealth/similarity/kernels.hpp"

namespace memhealth {

namespace finding_kinds {
// drift (drift/drift.hpp, drift/migration_gate.hpp)
inline constexpr std::string_view norm_shift = "norm_shift";
inline constexpr std::string_view distribution_shift = "distribution_shift";
inline constexpr std::string_view migration_gate_failed = "migration_gate_failed";
}  // namespace finding_kinds

/// Summary of the L2 norms of a sample's rows.
struct norm_summary {
  std::size_t n = 0;      ///< rows
  double mean = 0;        ///< mean norm
  double sd = 0;          ///< standard deviation of the norms (population)
  double min = 0;         ///< smallest norm
  double max = 0;         ///< largest norm
  double unit_share = 0;  ///< share of rows with |norm - 1| <= unit_tolerance, in [0, 1]
};

/// Norm summary of the rows of X (n x d, row-major float32). Non-finite norms count as 0.
/// @complexity O(n d).
template <class = void>  // deferred instantiation, see memhealth.hpp
norm_summary summarize_norms(const rows_cref& X, float unit_tolerance = 1e-3f) {
  norm_summary s;
  s.n = static_cast<std::size_t>(X.rows());
  if (s.n == 0) return s;
  double sum = 0, sq = 0, unit = 0;
  s.min = std::numeric_limits<double>::infinity();
  s.max = 0;
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    double v = X.row(i).cast<double>().norm();
    if (!std::isfinite(v)) v = 0;
    sum += v, sq += v * v;
    s.min = std::min(s.min, v), s.max = std::max(s.max, v);
    unit += std::abs(v - 1.0) <= unit_tolerance;
  }
  const double n = static_cast<double>(s.n);
  s.mean = sum / n;
  s.sd = std::sqrt(std::max(0.0, sq / n - s.mean * s.mean));
  s.unit_share = unit / n;
  return s;
}

/// Options of the MMD permutation test.
struct mmd_options {
  std::size_t max_exact_splits = 200'000;  ///< enumerate all splits up to this many
  std::size_t permutations = 999;          ///< random splits otherwise
  std::uint64_t seed = 20240715;           ///< seed of the random splits (deterministic)
  double noise_cosine = 0.999;             ///< re-embedding noise level to ignore (cosine)
};

/// Result of `mmd_test`.
struct mmd_result {
  double mmd2 = 0;         ///< squared MMD, biased V-statistic, in [0, 2]
  double mmd = 0;          ///< sqrt(mmd2)
  double bandwidth = 0;    ///< h of the Gaussian kernel (median pooled squared distance)
  double p_value = 1;      ///< permutation p-value, in (0, 1]
  std::size_t splits = 0;  ///< splits evaluated (all of them when `exact`)
  bool exact = false;      ///< every split enumerated
  double noise_floor =
      0;  ///< sqrt(4 (1 - noise_cosine) / h): MMD of pure re-embedding noise is below it
  std::size_t excluded = 0;  ///< rows left out (zero or non-finite norm)
};

namespace detail {
template <class = void>  // deferred instantiation, see memhealth.hpp
Eigen::MatrixXd unit_rows_d(const rows_cref& X, std::size_t& excluded) {
  std::vector<Eigen::Index> keep;
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    const double n = X.row(i).cast<double>().norm();
    if (std::isfinite(n) && n > 0)
      keep.push_back(i);
    else
      ++excluded;
  }
  Eigen::MatrixXd out(static_cast<Eigen::Index>(keep.size()), X.cols());
  for (std::size_t r = 0; r < keep.size(); ++r) {
    const Eigen::RowVectorXd v = X.row(keep[r]).cast<double>();
    out.row(static_cast<Eigen::Index>(r)) = v / v.norm();
  }
  return out;
}

inline double binomial(std::size_t n, std::size_t k) {
  double r = 1;
  for (std::size_t i = 1; i <= k; ++i)
    r = r * static_cast<double>(n - k + i) / static_cast<double>(i);
  return r;
}
}  // namespace detail

/// Kernel two-sample test (Gretton et al. 2012) between the rows of X (n x d) and Y (m x d),
/// both row-major float32 of the same dimension d; rows are unit-normalised first (see the
/// file comment for kernel, bandwidth and p-value). @pre X.cols() == Y.cols() (MEMHEALTH_ASSERT)
/// when both samples have rows; an empty sample gives the default result (no split, p = 1). With
/// fewer than 2 usable rows on either side the result has p_value 1 and mmd 0.
template <class = void>  // deferred instantiation, see memhealth.hpp
mmd_result mmd_test(const rows_cref& X, const rows_cref& Y, const mmd_options& o = {}) {
  // an empty sample (any width, e.g. a default-constructed 0 x 0 matrix) leaves nothing to test
  MEMHEALTH_ASSERT(X.cols() == Y.cols() || X.rows() == 0 || Y.rows() == 0,
                   "mmd_test: samples of different dimension");
  mmd_result res;
  const Eigen::MatrixXd A = detail::unit_rows_d(X, res.excluded),
                        B = detail::unit_rows_d(Y, res.excluded);
  const std::size_t n = static_cast<std::size_t>(A.rows()), m = static_cast<std::size_t>(B.rows()),
                    N = n + m;
  if (n < 2 || m < 2) return res;
  Eigen::MatrixXd Z(static_cast<Eigen::Index>(N), A.cols());
  Z << A, B;
  Eigen::MatrixXd G;
  G.noalias() = Z * Z.transpose();
  Eigen::MatrixXd D(G.rows(), G.cols());
  std::vector<double> off;
  off.reserve(N * (N - 1) / 2);
  for (Eigen::Index i = 0; i < G.rows(); ++i)
    for (Eigen::Index j = 0; j < G.cols(); ++j) {
      D(i, j) = std::max(0.0, G(i, i) + G(j, j) - 2 * G(i, j));
      if (j > i) off.push_back(D(i, j));
    }
  std::sort(off.begin(), off.end());
  double h =
      off.size() % 2 ? off[off.size() / 2] : (off[off.size() / 2 - 1] + off[off.size() / 2]) / 2;
  if (!(h > 0)) h = 1;
  res.bandwidth = h;
  const Eigen::MatrixXd K = (-D / h).array().exp().matrix();
  const Eigen::VectorXd row = K.rowwise().sum();
  const double total = row.sum();
  // statistic of a split given the indices of the first sample (size n)
  auto stat = [&](const std::vector<std::size_t>& a) {
    double saa = 0, ra = 0;
    for (std::size_t i : a) {
      ra += row(static_cast<Eigen::Index>(i));
      for (std::size_t j : a) saa += K(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j));
    }
    const double sab = ra - saa, sbb = total - saa - 2 * sab;
    const double dn = static_cast<double>(n), dm = static_cast<double>(m);
    return saa / (dn * dn) + sbb / (dm * dm) - 2 * sab / (dn * dm);
  };
  std::vector<std::size_t> a(n);
  for (std::size_t i = 0; i < n; ++i) a[i] = i;
  res.mmd2 = std::max(0.0, stat(a));
  res.mmd = std::sqrt(res.mmd2);
  res.noise_floor = std::sqrt(4 * (1 - o.noise_cosine) / h);
  const double observed = stat(a) - 1e-12;
  std::size_t hits = 0;
  if (detail::binomial(N, n) <= static_cast<double>(o.max_exact_splits)) {
    res.exact = true;
    for (;;) {  // lexicographic combinations of n out of N
      ++res.splits;
      hits += stat(a) >= observed;
      std::size_t i = n;
      while (i > 0 && a[i - 1] == N - n + i - 1) --i;
      if (i == 0) break;
      ++a[i - 1];
      for (std::size_t j = i; j < n; ++j) a[j] = a[j - 1] + 1;
    }
    res.p_value = static_cast<double>(hits) / static_cast<double>(res.splits);
  } else {
    std::mt19937_64 rng(o.seed);
    std::vector<std::size_t> perm(N);
    for (std::size_t i = 0; i < N; ++i) perm[i] = i;
    for (std::size_t b = 0; b < o.permutations; ++b) {
      std::shuffle(perm.begin(), perm.end(), rng);
      a.assign(perm.begin(), perm.begin() + static_cast<std::ptrdiff_t>(n));
      hits += stat(a) >= observed;
    }
    res.splits = o.permutations;
    res.p_value = static_cast<double>(1 + hits) / static_cast<double>(1 + o.permutations);
  }
  return res;
}

/// Options of `detect_drift`.
struct drift_options {
  double alpha = 0.01;                 ///< significance level of the MMD test
  mmd_options mmd;                     ///< test settings, including the noise cosine (0.999)
  double norm_tolerance = 0.01;        ///< relative change of the mean norm reported as norm_shift
  double unit_share_tolerance = 0.10;  ///< change of the unit-norm share reported as norm_shift
  float unit_tolerance = 1e-3f;        ///< |norm - 1| counted as unit length
  std::size_t min_samples = 5;         ///< fewer usable rows on a side: check_skipped
};

/// What `detect_drift` measured, and its findings (detector "drift").
struct drift_result {
  norm_summary reference;         ///< norms of the reference sample
  norm_summary current;           ///< norms of the current sample
  std::optional<mmd_result> mmd;  ///< the test, when both samples have the same dimension
  double centroid_cosine =
      std::numeric_limits<double>::quiet_NaN();  ///< cosine of the mean unit vectors (same
                                                 ///< dimension only)
  std::vector<finding> findings;                 ///< norm_shift, distribution_shift, check_skipped
};

/// Compares a reference sample R (n x d1) with a current sample C (m x d2), row-major float32.
/// See the file comment. Never throws for data; an empty sample (0 rows, any width) gives one
/// check_skipped and no shift.
template <class = void>  // deferred instantiation, see memhealth.hpp
drift_result detect_drift(const rows_cref& R, const rows_cref& C, const drift_options& o = {}) {
  drift_result out;
  out.reference = summarize_norms(R, o.unit_tolerance);
  out.current = summarize_norms(C, o.unit_tolerance);
  const auto base = [](std::string_view kind, severity s) {
    finding f;
    f.kind = std::string(kind);
    f.severity = s;
    f.detector = "drift";
    return f;
  };
  const double rel = out.reference.mean > 0
                         ? std::abs(out.current.mean - out.reference.mean) / out.reference.mean
                         : (out.current.mean > 0 ? 1.0 : 0.0);
  const double dshare = std::abs(out.current.unit_share - out.reference.unit_share);
  if (out.reference.n && out.current.n &&
      (rel > o.norm_tolerance || dshare > o.unit_share_tolerance)) {
    finding f = base(finding_kinds::norm_shift, severity::error);
    f.with("reference_mean_norm", out.reference.mean).with("current_mean_norm", out.current.mean);
    f.with("relative_change", rel).with("reference_unit_share", out.reference.unit_share);
    f.with("current_unit_share", out.current.unit_share)
        .with("reference_sd", out.reference.sd)
        .with("current_sd", out.current.sd);
    f.suggested_repair = "reembed";
    out.findings.push_back(std::move(f));
  }
  // an empty sample has no space of its own (a 0 x 0 matrix is no dimension change): skipped below
  if (R.cols() != C.cols() && R.rows() > 0 && C.rows() > 0) {
    finding f = base(finding_kinds::distribution_shift, severity::error);
    f.with("test", std::string("dimension_changed"))
        .with("reference_dim", static_cast<std::int64_t>(R.cols()))
        .with("current_dim", static_cast<std::int64_t>(C.cols()))
        .with("reason",
              std::string(
                  "vectors of different dimensions live in different spaces: no distribution test "
                  "applies; re-embed and pass the migration gate before switching"));
    f.suggested_repair = "reembed";
    out.findings.push_back(std::move(f));
    return out;
  }
  mmd_result t = mmd_test(R, C, o.mmd);
  const std::size_t usable_r = static_cast<std::size_t>(R.rows()),
                    usable_c = static_cast<std::size_t>(C.rows());
  if (usable_r < o.min_samples || usable_c < o.min_samples) {
    finding f = base(finding_kinds::check_skipped, severity::info);
    f.with("check", std::string("distribution_shift"))
        .with("reference_rows", static_cast<std::int64_t>(usable_r));
    f.with("current_rows", static_cast<std::int64_t>(usable_c))
        .with("min_samples", static_cast<std::int64_t>(o.min_samples));
    out.findings.push_back(std::move(f));
    out.mmd = t;
    return out;
  }
  {
    Eigen::RowVectorXd cr = Eigen::RowVectorXd::Zero(R.cols()),
                       cc = Eigen::RowVectorXd::Zero(C.cols());
    for (Eigen::Index i = 0; i < R.rows(); ++i) {
      const double n = R.row(i).cast<double>().norm();
      if (std::isfinite(n) && n > 0) cr += R.row(i).cast<double>() / n;
    }
    for (Eigen::Index i = 0; i < C.rows(); ++i) {
      const double n = C.row(i).cast<double>().norm();
      if (std::isfinite(n) && n > 0) cc += C.row(i).cast<double>() / n;
    }
    const double d = cr.norm() * cc.norm();
    if (d > 0) out.centroid_cosine = cr.dot(cc) / d;
  }
  if (t.p_value <= o.alpha && t.mmd > t.noise_floor) {
    finding f = base(finding_kinds::distribution_shift, severity::error);
    f.with("test", std::string("mmd_permutation"))
        .with("mmd", t.mmd)
        .with("mmd2", t.mmd2)
        .with("p_value", t.p_value);
    f.with("alpha", o.alpha).with("noise_floor", t.noise_floor).with("bandwidth", t.bandwidth);
    f.with("splits", static_cast<std::int64_t>(t.splits)).with("exact", t.exact);
    if (!std::isnan(out.centroid_cosine)) f.with("centroid_cosine", out.centroid_cosine);
    f.suggested_repair = "reembed";
    out.findings.push_back(std::move(f));
  }
  out.mmd = t;
  return out;
}

}  // namespace memhealth
