#pragma once
/// @file lsh.hpp
/// Random-hyperplane locality-sensitive hashing for cosine similarity (Charikar 2002,
/// "Similarity estimation techniques from rounding algorithms", STOC): one bit per random
/// Gaussian hyperplane h, bit = [h . x >= 0], so two vectors at angle θ agree on a bit with
/// probability 1 - θ/π.
///
/// Banding: `tables` (L) tables of `bits` (k) bits each. Two rows are candidates when all k bits
/// agree in at least one table, probability P(θ) = 1 - (1 - (1 - θ/π)^k)^L. Candidates are then
/// verified by the exact kernel, so LSH can only lose pairs (recall < 1), never add false ones.
///
/// Defaults L = 24, k = 14: cosine 0.95 (θ = 0.318) -> P = 0.998; cosine 0.92 -> P = 0.978;
/// unrelated rows (cosine 0, θ = π/2) -> P = 24 / 2^14 = 0.15 %, so about 0.15 % of all pairs
/// are verified instead of 100 %.
///
/// Hyperplanes come from a seeded splitmix64 stream through Box-Muller, so the same seed gives the
/// same candidates on every compiler and standard library.

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <numbers>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/similarity/blocking.hpp"
#include "memhealth/similarity/kernels.hpp"

namespace memhealth {

/// LSH parameters.
struct lsh_options {
  unsigned tables = 24;                        ///< L, number of hash tables (>= 1)
  unsigned bits = 14;                          ///< k, bits per table (1..32)
  std::uint64_t seed = 0x6d656d6865616c74ULL;  ///< seed of the hyperplanes
  Eigen::Index chunk = 4096;  ///< rows projected at once (bounds memory to chunk x L·k floats)
};

namespace detail {
inline std::uint64_t lsh_splitmix64(std::uint64_t& state) noexcept {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
inline double uniform_open(std::uint64_t& state) noexcept {  // (0, 1)
  return (static_cast<double>(lsh_splitmix64(state) >> 11) + 0.5) * 0x1.0p-53;
}
}  // namespace detail

/// Candidate pairs (i < j, row indices) of the rows of X that collide in at least one LSH table
/// and have the same `group` label (e.g. a scope id; empty span = one group). Sorted, unique.
/// @param X n x d row-major float32 (the sign of h . x does not depend on the norm, so rows need
///          not be unit).
/// @param max_per_group most raw collisions (summed over tables, before de-duplication) kept per
///          group; 0 = no limit. A group over it keeps the collisions found first (table order)
///          and its label is appended to `*cut_groups` (when set), once. Bounds memory when many
///          rows share one signature (identical vectors collide in every table).
/// @throws memhealth::error(precondition) for tables == 0, bits outside 1..32, or a group span
///         whose size is not n.
/// @complexity O(n d L k) for the projections, O(L n log n) for bucketing, plus the candidates.
template <class = void>  // deferred instantiation, see memhealth.hpp
[[nodiscard]] std::vector<std::pair<std::uint32_t, std::uint32_t>> lsh_candidates(
    const rows_cref& X, std::span<const std::uint32_t> group = {}, const lsh_options& opt = {},
    std::size_t max_per_group = 0, std::vector<std::uint32_t>* cut_groups = nullptr) {
  MEMHEALTH_ASSERT(opt.tables >= 1, "lsh: tables must be >= 1");
  MEMHEALTH_ASSERT(opt.bits >= 1 && opt.bits <= 32, "lsh: bits must be in 1..32");
  MEMHEALTH_ASSERT(group.empty() || group.size() == static_cast<std::size_t>(X.rows()),
                   "lsh: group size != rows");
  MEMHEALTH_ASSERT(opt.chunk >= 1, "lsh: chunk must be >= 1");
  const Eigen::Index n = X.rows(), d = X.cols();
  const Eigen::Index planes = static_cast<Eigen::Index>(opt.tables) * opt.bits;
  row_matrix h(planes, d);
  std::uint64_t state = opt.seed;
  for (Eigen::Index p = 0; p < planes; ++p)
    for (Eigen::Index c = 0; c < d; ++c) {
      const double u1 = detail::uniform_open(state), u2 = detail::uniform_open(state);
      h(p, c) = static_cast<float>(std::sqrt(-2.0 * std::log(u1)) *
                                   std::cos(2.0 * std::numbers::pi * u2));
    }
  // signatures: n x tables
  std::vector<std::uint32_t> sig(static_cast<std::size_t>(n) * opt.tables, 0);
  row_matrix proj;
  for (Eigen::Index r0 = 0; r0 < n; r0 += opt.chunk) {
    const Eigen::Index rows = std::min(opt.chunk, n - r0);
    proj.resize(rows, planes);
    // through the Ref types of kernels.hpp: the same GEMM instantiation as cosine_kernel::tile
    const rows_cref xs = X.middleRows(r0, rows), hs = h;
    tile_ref ps = proj;
    ps.noalias() = xs * hs.transpose();
    for (Eigen::Index r = 0; r < rows; ++r)
      for (unsigned t = 0; t < opt.tables; ++t) {
        std::uint32_t key = 0;
        for (unsigned b = 0; b < opt.bits; ++b)
          key |= static_cast<std::uint32_t>(proj(r, static_cast<Eigen::Index>(t) * opt.bits + b) >=
                                            0.0f)
                 << b;
        sig[static_cast<std::size_t>(r0 + r) * opt.tables + t] = key;
      }
  }
  std::vector<std::pair<std::uint32_t, std::uint32_t>> out;
  std::map<std::uint32_t, std::size_t> per_group;  // raw collisions kept per group label
  std::set<std::uint32_t> cut;
  std::vector<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>> bucket;  // (group, key, row)
  bucket.reserve(static_cast<std::size_t>(n));
  for (unsigned t = 0; t < opt.tables; ++t) {
    bucket.clear();
    for (Eigen::Index r = 0; r < n; ++r) {
      const auto row = static_cast<std::uint32_t>(r);
      bucket.emplace_back(group.empty() ? 0u : group[row],
                          sig[static_cast<std::size_t>(r) * opt.tables + t], row);
    }
    std::sort(bucket.begin(), bucket.end());
    for (std::size_t a = 0; a < bucket.size();) {
      std::size_t b = a + 1;
      while (b < bucket.size() && std::get<0>(bucket[b]) == std::get<0>(bucket[a]) &&
             std::get<1>(bucket[b]) == std::get<1>(bucket[a]))
        ++b;
      const std::uint32_t g = std::get<0>(bucket[a]);
      const std::size_t pairs = (b - a) * (b - a - 1) / 2;
      if (max_per_group != 0 && pairs > 0) {
        std::size_t& used = per_group[g];
        const std::size_t room = max_per_group - std::min(used, max_per_group);
        if (pairs > room) cut.insert(g);
        std::size_t take = std::min(pairs, room);
        used += take;
        for (std::size_t x = a; x < b && take > 0; ++x)
          for (std::size_t y = x + 1; y < b && take > 0; ++y, --take)
            out.emplace_back(std::get<2>(bucket[x]), std::get<2>(bucket[y]));
      } else {
        for (std::size_t x = a; x < b; ++x)
          for (std::size_t y = x + 1; y < b; ++y)
            out.emplace_back(std::get<2>(bucket[x]), std::get<2>(bucket[y]));
      }
      a = b;
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  if (cut_groups) cut_groups->insert(cut_groups->end(), cut.begin(), cut.end());
  return out;
}

/// LSH threshold join: the candidates of `lsh_candidates` verified by `kernel` >= t, emitted as
/// `emit(i, j, score)` in increasing (i, j) order. A subset of the exact join's pairs.
/// @param X n x d row-major float32 (unit rows for `cosine_kernel`).
template <class Out, class Kernel = cosine_kernel>
void lsh_join(const rows_cref& X, float t, Out&& emit, std::span<const std::uint32_t> group = {},
              const lsh_options& opt = {}, const Kernel& kernel = {}) {
  const auto d = static_cast<std::size_t>(X.cols());
  for (auto [i, j] : lsh_candidates(X, group, opt)) {
    const float s = kernel(std::span<const float>(X.row(i).data(), d),
                           std::span<const float>(X.row(j).data(), d));
    if (s >= t) emit(i, j, s);
  }
}

/// Candidate policy (see blocking.hpp) backed by random-hyperplane LSH over the unit embeddings;
/// scopes are separate groups, so no cross-scope pair is produced. Probabilistic recall (see the
/// file comment); every emitted pair is verified exactly. Honours `req.max_pairs_per_group` per
/// scope (raw collisions are capped at that times `tables`).
struct lsh_blocking {
  lsh_options lsh{};  ///< tables, bits, seed

  /// See blocking.hpp for the contract.
  template <class Ctx, class Kernel, class Emit>
  void operator()(Ctx& ctx, const candidate_request& req, const Kernel& kernel, Emit&& emit) const {
    const auto& store = ctx.store();
    std::vector<std::size_t> members;  // record index per local row
    for (std::size_t i = 0; i < store.size(); ++i)
      if (detail::semantic_eligible(req, i) && ctx.unit_row_of(i) >= 0) members.push_back(i);
    if (members.size() < 2) return;
    std::vector<std::string_view> sv;
    sv.reserve(members.size());
    for (std::size_t i : members) sv.push_back(detail::semantic_scope_of(store.record(i)));
    std::vector<std::string_view> distinct = sv;
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    std::vector<std::uint32_t> group(members.size());
    for (std::size_t r = 0; r < members.size(); ++r)
      group[r] = static_cast<std::uint32_t>(
          std::lower_bound(distinct.begin(), distinct.end(), sv[r]) - distinct.begin());
    row_matrix m;
    detail::gather_rows(ctx, members, m);
    const auto d = static_cast<std::size_t>(m.cols());
    const std::size_t budget = req.max_pairs_per_group;
    // Raw collisions are at most `tables` per verified pair; cap them at budget x tables.
    const std::size_t raw_cap = budget == 0 ? 0
                                : budget > std::numeric_limits<std::size_t>::max() / lsh.tables
                                    ? std::numeric_limits<std::size_t>::max()
                                    : budget * lsh.tables;
    std::vector<std::uint32_t> cut_groups;
    std::vector<std::size_t> emitted(distinct.size(), 0);
    for (auto [a, b] : lsh_candidates(m, group, lsh, raw_cap, &cut_groups)) {
      const std::size_t x = members[a], y = members[b];
      if (!ctx.is_changed(x) && !ctx.is_changed(y)) continue;
      const float s = kernel(std::span<const float>(m.row(a).data(), d),
                             std::span<const float>(m.row(b).data(), d));
      if (s < req.threshold) continue;
      std::size_t& used = emitted[group[a]];
      if (budget != 0 && used == budget) {
        cut_groups.push_back(group[a]);
        continue;
      }
      ++used;
      emit(x, y, s);
    }
    std::sort(cut_groups.begin(), cut_groups.end());
    cut_groups.erase(std::unique(cut_groups.begin(), cut_groups.end()), cut_groups.end());
    for (std::uint32_t g : cut_groups) {
      std::vector<std::size_t> cut_members;
      for (std::size_t r = 0; r < members.size(); ++r)
        if (group[r] == g) cut_members.push_back(members[r]);
      detail::note_truncated(req, cut_members);
    }
  }
};

}  // namespace memhealth
