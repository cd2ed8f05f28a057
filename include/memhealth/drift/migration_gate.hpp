#pragma once
/// @file migration_gate.hpp
/// The migration gate (SPEC section 3, "model switch = dual space"): before queries switch to a
/// new embedding space, the same sample of texts embedded by the old and the new model must
/// agree on their nearest neighbours.
///
/// For each text i (row i of both matrices), its top-k neighbours (the other rows, by cosine,
/// descending; ties by smaller row) are found in each space:
/// - **overlap@k** = |N_old(i) ∩ N_new(i)| / k, in [0, 1];
/// - **rank correlation** = Spearman's rho between the old-space and new-space ranks (1 = most
///   similar, over all n - 1 other rows) of the items in N_old(i) ∪ N_new(i), in [-1, 1]
///   (1 when the union has one item). It also sees order changes inside an unchanged top-k, and
///   is negative when the two top-k lists disagree.
/// The gate passes when the mean overlap >= `min_overlap` and the mean rho >=
/// `min_rank_correlation`. k is clamped to n - 1; with k = n - 1 overlap is always 1 and only the
/// rank correlation decides (evidence `overlap_informative` = false).
/// Spaces may have different dimensions (that is the point of a migration).
///
/// Complexity: O(n² (d_old + d_new)) for the two Gram matrices plus O(n² log n) for the
/// rankings; meant for a sample (hundreds to a few thousand texts).
/// Errors: matrices with different row counts throw memhealth::error(invalid_argument) (the rows
/// must be the same texts); fewer than 3 rows give a failed gate with a check_skipped finding.

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/detect/finding.hpp"
#include "memhealth/drift/drift.hpp"
#include "memhealth/similarity/kernels.hpp"

namespace memhealth {

/// Thresholds of the migration gate.
struct gate_options {
  std::size_t k = 10;                 ///< neighbours per text (clamped to n - 1)
  double min_overlap = 0.8;           ///< least mean overlap@k to pass, in [0, 1]
  double min_rank_correlation = 0.5;  ///< least mean Spearman rho to pass, in [-1, 1]
};

/// Outcome of the gate.
struct gate_result {
  std::size_t n = 0;                     ///< texts compared
  std::size_t k = 0;                     ///< effective k
  double mean_overlap = 0;               ///< mean overlap@k, in [0, 1]
  double min_query_overlap = 0;          ///< worst single-text overlap@k
  double mean_rank_correlation = 0;      ///< mean Spearman rho, in [-1, 1]
  bool passed = false;                   ///< both thresholds met
  std::vector<double> overlap;           ///< per text (row order)
  std::vector<double> rank_correlation;  ///< per text (row order)
  std::vector<finding> findings;         ///< migration_gate_failed (error) or check_skipped
};

/// |first k of a ∩ first k of b| / k for two ranked lists (each without repeats); k > 0.
/// Lists shorter than k count what they have. @return value in [0, 1]. @complexity O(k²).
inline double overlap_at_k(std::span<const std::size_t> a, std::span<const std::size_t> b,
                           std::size_t k) {
  MEMHEALTH_ASSERT(k > 0, "overlap_at_k: k must be positive");
  const std::size_t ka = std::min(k, a.size()), kb = std::min(k, b.size());
  std::size_t hit = 0;
  for (std::size_t i = 0; i < ka; ++i)
    hit += std::find(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(kb), a[i]) !=
           b.begin() + static_cast<std::ptrdiff_t>(kb);
  return static_cast<double>(hit) / static_cast<double>(k);
}

/// Spearman's rank correlation of paired values (ties get average ranks): the Pearson
/// correlation of the ranks. @return 1 when fewer than 2 values or a side is constant and equal
/// to the other; 0 when exactly one side is constant. @pre x.size() == y.size().
inline double spearman_rho(std::span<const double> x, std::span<const double> y) {
  MEMHEALTH_ASSERT(x.size() == y.size(), "spearman_rho: different lengths");
  const std::size_t n = x.size();
  if (n < 2) return 1.0;
  auto ranks = [n](std::span<const double> v) {
    std::vector<std::size_t> idx(n);
    std::iota(idx.begin(), idx.end(), std::size_t{0});
    std::stable_sort(idx.begin(), idx.end(),
                     [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
    std::vector<double> r(n);
    for (std::size_t i = 0; i < n;) {
      std::size_t j = i;
      while (j + 1 < n && v[idx[j + 1]] == v[idx[i]]) ++j;
      for (std::size_t t = i; t <= j; ++t) r[idx[t]] = static_cast<double>(i + j) / 2 + 1;
      i = j + 1;
    }
    return r;
  };
  const auto rx = ranks(x), ry = ranks(y);
  const double mx = std::accumulate(rx.begin(), rx.end(), 0.0) / static_cast<double>(n);
  const double my = std::accumulate(ry.begin(), ry.end(), 0.0) / static_cast<double>(n);
  double sxy = 0, sxx = 0, syy = 0;
  for (std::size_t i = 0; i < n; ++i) {
    sxy += (rx[i] - mx) * (ry[i] - my);
    sxx += (rx[i] - mx) * (rx[i] - mx);
    syy += (ry[i] - my) * (ry[i] - my);
  }
  if (sxx == 0 && syy == 0) return 1.0;
  if (sxx == 0 || syy == 0) return 0.0;
  return sxy / std::sqrt(sxx * syy);
}

namespace detail {
// Rows of X ordered by cosine to row i (descending, ties by smaller index), i excluded.
template <class = void>  // deferred instantiation, see memhealth.hpp
std::vector<std::vector<std::size_t>> neighbour_orders(const rows_cref& X) {
  const Eigen::Index n = X.rows();
  Eigen::MatrixXd U = X.cast<double>();
  for (Eigen::Index i = 0; i < n; ++i) {
    const double nr = U.row(i).norm();
    if (std::isfinite(nr) && nr > 0)
      U.row(i) /= nr;
    else
      U.row(i).setZero();
  }
  Eigen::MatrixXd S;
  S.noalias() = U * U.transpose();
  std::vector<std::vector<std::size_t>> out(static_cast<std::size_t>(n));
  for (Eigen::Index i = 0; i < n; ++i) {
    auto& o = out[static_cast<std::size_t>(i)];
    for (Eigen::Index j = 0; j < n; ++j)
      if (j != i) o.push_back(static_cast<std::size_t>(j));
    std::stable_sort(o.begin(), o.end(), [&](std::size_t a, std::size_t b) {
      return S(i, static_cast<Eigen::Index>(a)) > S(i, static_cast<Eigen::Index>(b));
    });
  }
  return out;
}
}  // namespace detail

/// Runs the gate on the same n texts embedded in the old space (n x d_old) and the new space
/// (n x d_new), row-major float32; row i of both is text i. `ids` (optional, n entries) name the
/// texts in the finding (the 20 worst first). See the file comment.
/// @throws memhealth::error(invalid_argument) when the row counts differ or ids has another size.
template <class = void>  // deferred instantiation, see memhealth.hpp
gate_result migration_gate(const rows_cref& old_space, const rows_cref& new_space,
                           const gate_options& o = {}, std::span<const std::string> ids = {}) {
  if (old_space.rows() != new_space.rows())
    throw error(error_code::invalid_argument,
                "migration_gate: the old and new samples must be the same texts (row counts " +
                    std::to_string(old_space.rows()) + " vs " + std::to_string(new_space.rows()) +
                    ")");
  if (!ids.empty() && ids.size() != static_cast<std::size_t>(old_space.rows()))
    throw error(error_code::invalid_argument, "migration_gate: ids must name every row");
  gate_result r;
  r.n = static_cast<std::size_t>(old_space.rows());
  if (r.n < 3 || o.k == 0) {
    finding f;
    f.kind = std::string(finding_kinds::check_skipped);
    f.severity = severity::warning;
    f.detector = "migration_gate";
    f.with("check", std::string("migration_gate")).with("texts", static_cast<std::int64_t>(r.n));
    f.with("reason", std::string("need at least 3 texts and k > 0"));
    r.findings.push_back(std::move(f));
    return r;
  }
  r.k = std::min(o.k, r.n - 1);
  const auto old_order = detail::neighbour_orders(old_space),
             new_order = detail::neighbour_orders(new_space);
  r.min_query_overlap = 1.0;
  for (std::size_t i = 0; i < r.n; ++i) {
    const auto& a = old_order[i];
    const auto& b = new_order[i];
    const double ov = overlap_at_k(a, b, r.k);
    std::vector<double> rank_old(r.n, 0), rank_new(r.n, 0);
    for (std::size_t t = 0; t < a.size(); ++t) rank_old[a[t]] = static_cast<double>(t + 1);
    for (std::size_t t = 0; t < b.size(); ++t) rank_new[b[t]] = static_cast<double>(t + 1);
    std::vector<std::size_t> uni(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(r.k));
    for (std::size_t t = 0; t < r.k; ++t)
      if (std::find(uni.begin(), uni.end(), b[t]) == uni.end()) uni.push_back(b[t]);
    std::vector<double> x, y;
    for (std::size_t u : uni) x.push_back(rank_old[u]), y.push_back(rank_new[u]);
    const double rho = spearman_rho(x, y);
    r.overlap.push_back(ov);
    r.rank_correlation.push_back(rho);
    r.mean_overlap += ov;
    r.mean_rank_correlation += rho;
    r.min_query_overlap = std::min(r.min_query_overlap, ov);
  }
  r.mean_overlap /= static_cast<double>(r.n);
  r.mean_rank_correlation /= static_cast<double>(r.n);
  r.passed = r.mean_overlap >= o.min_overlap && r.mean_rank_correlation >= o.min_rank_correlation;
  if (!r.passed) {
    finding f;
    f.kind = std::string(finding_kinds::migration_gate_failed);
    f.severity = severity::error;
    f.detector = "migration_gate";
    if (!ids.empty()) {
      std::vector<std::size_t> worst(r.n);
      std::iota(worst.begin(), worst.end(), std::size_t{0});
      std::stable_sort(worst.begin(), worst.end(),
                       [&](std::size_t a, std::size_t b) { return r.overlap[a] < r.overlap[b]; });
      for (std::size_t t = 0; t < worst.size() && t < 20 && r.overlap[worst[t]] < 1.0; ++t)
        f.record_ids.push_back(ids[worst[t]]);
    }
    f.with("texts", static_cast<std::int64_t>(r.n)).with("k", static_cast<std::int64_t>(r.k));
    f.with("mean_overlap", r.mean_overlap).with("min_overlap", o.min_overlap);
    f.with("min_query_overlap", r.min_query_overlap);
    f.with("mean_rank_correlation", r.mean_rank_correlation)
        .with("min_rank_correlation", o.min_rank_correlation);
    f.with("overlap_informative", r.k < r.n - 1);
    f.suggested_repair = "keep_old_space";
    r.findings.push_back(std::move(f));
  }
  return r;
}

}  // namespace memhealth
