#pragma once
/// @file kmeans_blocking.hpp
/// Partition-then-join candidate generation for one very large scope: spherical k-means
/// partitions with multi-probe, then the exact tiled threshold join (join.hpp) inside each
/// partition.
///
/// ## Algorithm
/// 1. **Train** k unit centroids by spherical k-means (cosine assignment, centroid = normalised
///    mean of its members) on a seeded random sample of `sample_per_partition` x k rows,
///    initialised with the first k sampled rows, `iterations` Lloyd rounds (stops early when no
///    assignment changes). k = ceil(n / `partition_size`) unless `partitions` is set; k <= n.
/// 2. **Assign** every row to its nearest centroid, its *owner* partition (the inverted-file
///    list of IVF, Jegou, Douze, Schmid, "Product quantization for nearest neighbor search",
///    IEEE TPAMI 33(1), 2011), and let it *probe* its `probes` nearest centroids, the further
///    ones only while their similarity is within `probe_margin` of the nearest (multi-probe, in
///    the spirit of Lv, Josephson, Wang, Charikar, Li, "Multi-probe LSH", VLDB 2007: look in the
///    neighbouring buckets instead of building more tables).
/// 3. **Join** inside each partition c, exactly: the owners of c against each other
///    (`threshold_join`) and the rows that probe c without owning it against the owners (`join`).
///    Rows are gathered per partition into one reusable buffer per thread; the n x d block is
///    never copied as a whole. A pair found from both sides is emitted once (from the side of the
///    smaller row when each row probes the other's owner).
///
/// A pair (a, b) is found exactly when owner(b) is among a's probes or owner(a) among b's, so
/// recall is 1 when `probes` >= k (every partition probed) and otherwise depends on how the data
/// falls around the partition borders; every emitted pair is verified by the exact kernel, so
/// there are never false pairs. This is the blocking of SemDeDup (Abbas, Tirumala, Simig,
/// Ganguli, Morcos, "SemDeDup: Data-efficient learning at web-scale through semantic
/// deduplication", 2023: k-means on embeddings, then all pairs inside each cluster), with
/// multi-probe added for the pairs that straddle a border.
///
/// ## Cost
/// Training O(iterations · s · k · d) for s sampled rows; assignment O(n · k · d) (GEMMs of
/// `chunk` rows through join.hpp's `default_gemm` backend, as the joins);
/// joins about O(n · (n / k) · d · (1 + extra probes)) when partitions are balanced. With
/// k ~ sqrt(probes · n) the two halves balance. Memory: k x d centroids, n · (probes + 1)
/// 32-bit partition labels, one chunk x k similarity buffer and one partition's rows per thread,
/// plus the pairs found (kept until they are emitted in sorted order).
///
/// The partitioning assumes unit rows compared by cosine (or any kernel monotone in the cosine
/// of unit rows, such as `l2_kernel`); the join itself uses the given kernel. Rows with NaN or
/// infinite values take part in nothing (the exact join never pairs them either: a NaN
/// similarity is never >= t). Intended for thresholds t > 0: a zero row has similarity 0 with
/// everything and is paired by the exact join when t <= 0, but here only within its partition.

#include <Eigen/Core>
#include <Eigen/Eigenvalues>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <typeindex>
#include <typeinfo>
#include <utility>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/similarity/blocking.hpp"
#include "memhealth/similarity/join.hpp"
#include "memhealth/similarity/kernels.hpp"
#include "memhealth/similarity/lsh.hpp"
#include "memhealth/worker_thread.hpp"

namespace memhealth {

/// Settings of k-means blocking (see the file comment). The defaults were tuned on the hardest
/// case, 10^5 - 10^6 random Gaussian unit vectors of 384 dimensions (no cluster structure at all)
/// with pairs at cosine 0.93 - 0.99 and threshold 0.92: recall 0.998 of those pairs at 10^6 rows
/// (0.999 at 10^5) with about 8.3 extra probes per row (bench/README.md, scope1m). Real
/// embeddings cluster, so fewer probes usually reach the same recall. Projecting the
/// partitioning to `assign_dims` = 64 cut the recall to 0.955 at 10^5 on that data: off by
/// default.
struct kmeans_blocking_options {
  std::size_t partition_size = 512;  ///< target mean rows per partition: k = ceil(n / this) (>= 1)
  std::size_t partitions = 0;        ///< k fixed explicitly (clamped to n); 0 = from partition_size
  std::size_t min_partitioned =
      4096;              ///< a group with fewer usable rows is joined exactly, unpartitioned
  unsigned probes = 16;  ///< most partitions searched per row, its own included (>= 1)
  /// A further centroid is probed only when its cosine with the row is within this of the
  /// nearest centroid's (>= 2 = always probe `probes`).
  float probe_margin = 0.04f;
  std::size_t sample_per_partition = 16;  ///< training sample = min(n, this x k) rows
  unsigned iterations = 5;                ///< Lloyd rounds of spherical k-means (>= 1)
  /// Partitioning runs on the rows projected onto their top `assign_dims` principal directions
  /// (of the training sample; re-normalised), which makes training and assignment d / assign_dims
  /// times cheaper; 0 or >= d = the full dimension. The joins always use the full rows.
  std::size_t assign_dims = 0;
  std::uint64_t seed = 0x6b6d65616e73ULL;  ///< seed of the training sample
  unsigned threads = 1;       ///< worker threads (>= 1); the output does not depend on it
  Eigen::Index tile = 512;    ///< tile of the joins inside partitions
  Eigen::Index chunk = 1024;  ///< rows per assignment GEMM (chunk x k floats per thread)
};

/// What one partitioned join did.
struct kmeans_join_stats {
  std::size_t partitions = 0;     ///< k used (1 when the group was joined unpartitioned)
  std::size_t pairs = 0;          ///< pairs emitted
  std::size_t probe_rows = 0;     ///< (row, partition) visits beyond the owner (extra probes made)
  std::size_t max_partition = 0;  ///< owners in the largest partition
  bool truncated = false;         ///< the pair budget was exceeded: nothing was emitted
  std::chrono::duration<double> train{};   ///< wall time of the k-means training (seconds)
  std::chrono::duration<double> assign{};  ///< wall time of assigning every row (seconds)
  std::chrono::duration<double> joins{};   ///< wall time of the joins inside partitions (seconds)
};

namespace detail {

// Runs fn(task, worker) for task in [0, tasks) on `threads` workers pulling tasks in order.
template <class Fn>
void kmeans_parallel(std::size_t tasks, unsigned threads, Fn&& fn) {
  const std::size_t workers = std::min<std::size_t>(std::max(1u, threads), tasks);
  if (workers <= 1) {
    for (std::size_t t = 0; t < tasks; ++t) fn(t, std::size_t{0});
    return;
  }
  std::atomic<std::size_t> next{0};
  run_workers(workers, [&](std::size_t w) {
    try {
      for (std::size_t t; (t = next.fetch_add(1, std::memory_order_relaxed)) < tasks;) fn(t, w);
    } catch (...) {  // run_workers rethrows it on the calling thread; the others stop taking tasks
      next.store(tasks);
      throw;
    }
  });
}

// Rows `rows` (positions into X; empty = all rows) seen through a local index 0..size()-1.
// The functions below are templates (X = rows_cref, M = row_matrix) only so that a translation
// unit that includes this header without calling it instantiates none of their Eigen code.
template <class X>
struct kmeans_rows {
  const X& x;
  std::span<const std::uint32_t> rows;
  [[nodiscard]] std::size_t size() const noexcept {
    return rows.empty() ? static_cast<std::size_t>(x.rows()) : rows.size();
  }
  [[nodiscard]] Eigen::Index at(std::size_t local) const noexcept {
    return static_cast<Eigen::Index>(rows.empty() ? local : rows[local]);
  }
  // Copies the rows of `locals` into `m` (|locals| x d), reusing its storage when large enough.
  template <class M>
  void gather(std::span<const std::uint32_t> locals, M& m) const {
    m.resize(static_cast<Eigen::Index>(locals.size()), x.cols());
    for (std::size_t r = 0; r < locals.size(); ++r)
      m.row(static_cast<Eigen::Index>(r)) = x.row(at(locals[r]));
  }
};

// Similarities of the local rows `locals` to the centroids C into sims (|locals| x k). With a
// basis (d x r), rows are first projected onto it and re-normalised (C is then k x r).
template <class Rows, class M>
void kmeans_similarities(const Rows& xs, std::span<const std::uint32_t> locals, const M& basis,
                         const M& c, M& gathered, M& proj, M& sims) {
  xs.gather(locals, gathered);
  sims.resize(gathered.rows(), c.rows());
  if (basis.size() == 0) {
    default_gemm{}.gemm_nt(
        gathered, c, sims);  // join.hpp's GEMM backend (AVX-512F or AVX2/FMA when the CPU has it)
    return;
  }
  proj.resize(gathered.rows(), basis.cols());
  proj.noalias() = gathered * basis;
  for (Eigen::Index r = 0; r < proj.rows(); ++r) {
    const float norm = proj.row(r).norm();
    if (norm > 0) proj.row(r) /= norm;
  }
  default_gemm{}.gemm_nt(proj, c, sims);
}

// The rows of `locals` in the space of the centroids (projected and re-normalised with a basis).
template <class Rows, class M>
M kmeans_space_rows(const Rows& xs, std::span<const std::uint32_t> locals, const M& basis) {
  M g, proj;
  xs.gather(locals, g);
  if (basis.size() == 0) return g;
  proj.noalias() = g * basis;
  for (Eigen::Index r = 0; r < proj.rows(); ++r) {
    const float norm = proj.row(r).norm();
    if (norm > 0) proj.row(r) /= norm;
  }
  return proj;
}

// Normalised sums of the members of each centroid; a centroid without members (or whose
// members cancel out) keeps its previous value.
template <class M>
void kmeans_update(const M& y, std::span<const std::uint32_t> label, M& c) {
  Eigen::MatrixXd sums = Eigen::MatrixXd::Zero(c.rows(), c.cols());
  for (Eigen::Index s = 0; s < y.rows(); ++s)
    sums.row(static_cast<Eigen::Index>(label[static_cast<std::size_t>(s)])) +=
        y.row(s).template cast<double>();
  for (Eigen::Index k = 0; k < c.rows(); ++k) {
    const double norm = sums.row(k).norm();
    if (norm > 0 && std::isfinite(norm)) c.row(k) = (sums.row(k) / norm).cast<float>();
  }
}

// Chunked argmax assignment of the rows of y to the centroids C (deterministic for any thread
// count: every chunk is the same GEMM whatever thread runs it).
template <class M>
void kmeans_assign_nearest(const M& y, const M& c, const kmeans_blocking_options& opt,
                           std::span<std::uint32_t> label) {
  const auto chunk = std::max<Eigen::Index>(1, opt.chunk);
  const auto chunks = static_cast<std::size_t>((y.rows() + chunk - 1) / chunk);
  std::vector<M> sims(std::max(1u, opt.threads));
  kmeans_parallel(chunks, opt.threads, [&](std::size_t ch, std::size_t w) {
    const Eigen::Index r0 = static_cast<Eigen::Index>(ch) * chunk,
                       r1 = std::min(y.rows(), r0 + chunk);
    sims[w].resize(r1 - r0, c.rows());
    default_gemm{}.gemm_nt(y.middleRows(r0, r1 - r0), c, sims[w]);
    for (Eigen::Index r = r0; r < r1; ++r) {
      Eigen::Index best = 0;
      sims[w].row(r - r0).maxCoeff(&best);
      label[static_cast<std::size_t>(r)] = static_cast<std::uint32_t>(best);
    }
  });
}

// Top-`r` principal directions (uncentred: the second-moment matrix, which keeps the common
// direction of anisotropic embeddings) of the rows of y, as a d x r orthonormal basis.
template <class M>
M kmeans_basis(const M& y, Eigen::Index r) {
  const Eigen::MatrixXd m = (y.transpose() * y).template cast<double>();
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(m);  // eigenvalues ascending
  const Eigen::Index d = y.cols();
  M basis(d, r);
  for (Eigen::Index k = 0; k < r; ++k) {
    Eigen::VectorXd v = es.eigenvectors().col(d - 1 - k);
    // fix the sign (first non-negligible coordinate positive) for a deterministic basis
    Eigen::Index lead = 0;
    v.cwiseAbs().maxCoeff(&lead);
    if (v(lead) < 0) v = -v;
    basis.col(k) = v.cast<float>();
  }
  return basis;
}

// splitmix64-driven partial Fisher-Yates: the first m entries of a permutation of `valid`.
inline std::vector<std::uint32_t> kmeans_sample(std::vector<std::uint32_t> valid, std::size_t m,
                                                std::uint64_t seed) {
  std::uint64_t state = seed;
  m = std::min(m, valid.size());
  for (std::size_t i = 0; i < m; ++i) {
    const std::size_t j = i + static_cast<std::size_t>(lsh_splitmix64(state) % (valid.size() - i));
    std::swap(valid[i], valid[j]);
  }
  valid.resize(m);
  return valid;
}

}  // namespace detail

namespace detail {
// Trained partitioning: an optional projection basis (d x r; empty = none) and k unit centroids
// in the projected space.
struct kmeans_model {
  row_matrix basis;
  row_matrix centroids;
};

template <class Rows>
kmeans_model kmeans_train(const Rows& xs, std::vector<std::uint32_t> valid, std::size_t k,
                          const kmeans_blocking_options& opt, Eigen::Index dims) {
  kmeans_model m;
  k = std::min(k, valid.size());
  if (k == 0) {
    m.centroids.resize(0, xs.x.cols());
    return m;
  }
  const std::size_t per = std::max<std::size_t>(1, opt.sample_per_partition);
  const std::size_t want =
      k > std::numeric_limits<std::size_t>::max() / per ? valid.size() : per * k;
  std::vector<std::uint32_t> sample = kmeans_sample(std::move(valid), std::max(want, k), opt.seed);
  // the first k sampled rows start the centroids; the rest is kept in memory order
  std::vector<std::uint32_t> init(sample.begin(), sample.begin() + static_cast<std::ptrdiff_t>(k));
  std::sort(sample.begin(), sample.end());
  row_matrix y = kmeans_space_rows(xs, sample, m.basis);
  if (dims > 0 && dims < xs.x.cols()) {
    m.basis = kmeans_basis(y, dims);
    y = kmeans_space_rows(xs, sample, m.basis);
  }
  m.centroids = kmeans_space_rows(xs, init, m.basis);
  std::vector<std::uint32_t> label(sample.size(), std::numeric_limits<std::uint32_t>::max()),
      next(sample.size());
  for (unsigned it = 0; it < opt.iterations; ++it) {
    kmeans_assign_nearest(y, m.centroids, opt, next);
    if (next == label) break;
    label.swap(next);
    kmeans_update(y, label, m.centroids);
  }
  return m;
}

template <class Rows>
std::vector<std::uint32_t> kmeans_finite_rows(const Rows& xs) {
  std::vector<std::uint32_t> valid;
  valid.reserve(xs.size());
  for (std::size_t r = 0; r < xs.size(); ++r)
    if (xs.x.row(xs.at(r)).allFinite()) valid.push_back(static_cast<std::uint32_t>(r));
  return valid;
}
}  // namespace detail

/// Spherical k-means centroids of the finite rows of X (Lloyd's algorithm with cosine
/// assignment and normalised-mean centroids; Dhillon and Modha, "Concept decompositions for
/// large sparse text data using clustering", Machine Learning 42, 2001), trained on a seeded
/// sample of `opt.sample_per_partition` x k rows, initialised with the first k sampled rows.
/// Deterministic for a seed, whatever `opt.threads`. Uses the full dimension (no projection).
/// @param X n x d row-major float32 (anything bindable to `rows_cref`), unit rows. @param k
/// centroids wanted (>= 1; clamped to the
///          number of finite rows).
/// @return k' x d unit centroids, k' = min(k, finite rows) (0 x d when there is none).
/// @throws memhealth::error(precondition) for k == 0 or iterations == 0.
/// @complexity O(iterations · s · k · d), s = min(n, sample_per_partition · k).
template <class Derived>
[[nodiscard]] row_matrix spherical_kmeans(const Eigen::MatrixBase<Derived>& X, std::size_t k,
                                          const kmeans_blocking_options& opt = {}) {
  MEMHEALTH_ASSERT(k >= 1, "spherical_kmeans: k must be >= 1");
  MEMHEALTH_ASSERT(opt.iterations >= 1, "spherical_kmeans: iterations must be >= 1");
  const rows_cref x(X);
  const detail::kmeans_rows<rows_cref> xs{x, {}};
  return detail::kmeans_train(xs, detail::kmeans_finite_rows(xs), k, opt, 0).centroids;
}

/// One part of a partitioned join spread over several processes (detect/pg_workers.hpp): part
/// `index` of `count` joins only the partitions whose place in the join order (largest first,
/// ties by partition number) is `index` modulo `count`; the unpartitioned (small group) join is
/// all in part 0. Training and assignment are the same in every part (seeded), so the pairs of
/// the `count` parts together, sorted by (i, j) and made unique, are exactly the pairs of the
/// whole join, with the same scores; a part over the pair budget means the whole join is.
struct kmeans_part {
  std::size_t index = 0;  ///< this part, in [0, count)
  std::size_t count = 1;  ///< parts in all (>= 1; 1 = the whole join)
};

namespace detail {

// The partitioned join over `rows` of X (see the file comment); pairs as local indices
// (positions in `rows`, or rows of X when `rows` is empty), sorted by (i, j), unique. With
// budget > 0 and more qualifying pairs than that, `out` is left empty and truncated is set.
// `part`: only that part of the partitions (see kmeans_part).
template <class Kernel>
kmeans_join_stats kmeans_pairs(const rows_cref& X, std::span<const std::uint32_t> rows, float t,
                               const kmeans_blocking_options& opt, std::size_t budget,
                               const Kernel& kernel, std::vector<scored_pair>& out,
                               const kmeans_part& part = {}) {
  MEMHEALTH_ASSERT(part.count >= 1 && part.index < part.count,
                   "kmeans_blocking: a part must be one of count >= 1 parts");
  MEMHEALTH_ASSERT(opt.partition_size >= 1, "kmeans_blocking: partition_size must be >= 1");
  MEMHEALTH_ASSERT(opt.probes >= 1, "kmeans_blocking: probes must be >= 1");
  MEMHEALTH_ASSERT(opt.threads >= 1, "kmeans_blocking: threads must be >= 1");
  MEMHEALTH_ASSERT(opt.tile >= 1 && opt.chunk >= 1, "kmeans_blocking: tile and chunk must be >= 1");
  MEMHEALTH_ASSERT(X.rows() < (Eigen::Index{1} << 32), "kmeans_blocking: more than 2^32 rows");
  out.clear();
  kmeans_join_stats stats;
  const kmeans_rows<rows_cref> xs{X, rows};
  const std::vector<std::uint32_t> valid = kmeans_finite_rows(xs);
  if (valid.size() < 2) return stats;
  const std::size_t raw_cap = budget == 0 ? 0 : 2 * budget + 2;  // each pair is seen at most twice
  std::size_t k = opt.partitions ? opt.partitions
                                 : (valid.size() + opt.partition_size - 1) / opt.partition_size;
  k = std::min(k, valid.size());
  row_matrix buffer;
  if (k <= 1 || valid.size() < opt.min_partitioned) {  // small group: one exact join
    if (part.index != 0) return stats;                 // (all of it in part 0)
    stats.partitions = 1;
    stats.max_partition = valid.size();
    xs.gather(valid, buffer);
    join_options jo{opt.tile, opt.threads, raw_cap};
    const auto st = threshold_join(
        buffer, t,
        [&](std::uint32_t a, std::uint32_t b, float s) {
          out.push_back({valid[a], valid[b], s});
        },
        jo, kernel);
    if (st.truncated || (budget && out.size() > budget)) {
      out.clear();
      stats.truncated = true;
    }
    stats.pairs = out.size();
    return stats;
  }
  using clock = std::chrono::steady_clock;
  auto t0 = clock::now();
  const kmeans_model model =
      kmeans_train(xs, valid, k, opt, static_cast<Eigen::Index>(opt.assign_dims));
  const row_matrix& c = model.centroids;
  stats.train = clock::now() - t0;
  t0 = clock::now();
  k = static_cast<std::size_t>(c.rows());
  stats.partitions = k;
  const std::size_t p = std::min<std::size_t>(opt.probes, k);
  constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();
  // probe[v * p + 0] = owner of valid[v]; further entries: extra probes or `none`.
  std::vector<std::uint32_t> probe(valid.size() * p, none);
  {
    const std::size_t chunk = static_cast<std::size_t>(opt.chunk);
    const std::size_t chunks = (valid.size() + chunk - 1) / chunk;
    std::vector<row_matrix> gathered(opt.threads), proj(opt.threads), sims(opt.threads);
    kmeans_parallel(chunks, opt.threads, [&](std::size_t ch, std::size_t w) {
      const std::size_t r0 = ch * chunk, r1 = std::min(valid.size(), r0 + chunk);
      kmeans_similarities(xs, std::span<const std::uint32_t>(valid).subspan(r0, r1 - r0),
                          model.basis, c, gathered[w], proj[w], sims[w]);
      std::vector<std::pair<float, std::uint32_t>> top;  // candidates within the margin, best first
      for (std::size_t r = r0; r < r1; ++r) {
        const auto row = sims[w].row(static_cast<Eigen::Index>(r - r0));
        Eigen::Index best = 0;
        const float hi = row.maxCoeff(&best);
        std::uint32_t* dst = probe.data() + r * p;
        dst[0] = static_cast<std::uint32_t>(best);
        if (p == 1) continue;
        const float lo = hi - opt.probe_margin;
        const float* s = row.data();
        top.clear();
        for (std::size_t j = 0; j < k; ++j)
          if (s[j] >= lo && j != static_cast<std::size_t>(best))
            top.emplace_back(s[j], static_cast<std::uint32_t>(j));
        const std::size_t keep = std::min(top.size(), p - 1);
        std::partial_sort(top.begin(), top.begin() + static_cast<std::ptrdiff_t>(keep), top.end(),
                          [](const auto& a, const auto& b) {
                            return a.first != b.first ? a.first > b.first : a.second < b.second;
                          });
        for (std::size_t q = 0; q < keep; ++q) dst[q + 1] = top[q].second;
      }
    });
  }
  stats.assign = clock::now() - t0;
  t0 = clock::now();
  // CSR lists: owners of each partition, and rows probing it without owning it (both by valid
  // position, ascending).
  std::vector<std::size_t> own_off(k + 1, 0), ext_off(k + 1, 0);
  for (std::size_t v = 0; v < valid.size(); ++v) {
    ++own_off[probe[v * p] + 1];
    for (std::size_t q = 1; q < p; ++q)
      if (probe[v * p + q] != none) ++ext_off[probe[v * p + q] + 1];
  }
  for (std::size_t j = 0; j < k; ++j) {
    own_off[j + 1] += own_off[j];
    ext_off[j + 1] += ext_off[j];
  }
  stats.probe_rows = ext_off[k];
  std::vector<std::uint32_t> owners(valid.size()), extras(ext_off[k]);
  {
    std::vector<std::size_t> po(own_off.begin(), own_off.end() - 1),
        pe(ext_off.begin(), ext_off.end() - 1);
    for (std::size_t v = 0; v < valid.size(); ++v) {
      owners[po[probe[v * p]]++] = static_cast<std::uint32_t>(v);
      for (std::size_t q = 1; q < p; ++q)
        if (probe[v * p + q] != none)
          extras[pe[probe[v * p + q]]++] = static_cast<std::uint32_t>(v);
    }
  }
  for (std::size_t j = 0; j < k; ++j)
    stats.max_partition = std::max(stats.max_partition, own_off[j + 1] - own_off[j]);
  auto probes_of = [&](std::uint32_t v, std::uint32_t pt) {
    for (std::size_t q = 0; q < p; ++q)
      if (probe[v * p + q] == pt) return true;
    return false;
  };
  // Joins, partition by partition; the largest partitions first (better balance over threads).
  std::vector<std::uint32_t> order(k);
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return own_off[a + 1] - own_off[a] > own_off[b + 1] - own_off[b];
  });
  std::vector<std::vector<scored_pair>> found(k);
  std::vector<row_matrix> own_rows(opt.threads), ext_rows(opt.threads);
  std::atomic<std::size_t> total{0};
  std::atomic<bool> cut{false};
  const join_options jo{opt.tile, 1, raw_cap};
  kmeans_parallel(k, opt.threads, [&](std::size_t task, std::size_t w) {
    if (cut.load(std::memory_order_relaxed) || task % part.count != part.index) return;
    const std::uint32_t pn = order[task];
    const std::span<const std::uint32_t> own(owners.data() + own_off[pn],
                                             own_off[pn + 1] - own_off[pn]);
    const std::span<const std::uint32_t> ext(extras.data() + ext_off[pn],
                                             ext_off[pn + 1] - ext_off[pn]);
    if (own.empty() || (own.size() < 2 && ext.empty())) return;
    auto& hits = found[pn];
    std::vector<std::uint32_t> local(own.size());
    for (std::size_t r = 0; r < own.size(); ++r) local[r] = valid[own[r]];
    xs.gather(local, own_rows[w]);
    bool over = false;
    if (own.size() >= 2)
      over = threshold_join(
                 own_rows[w], t,
                 [&](std::uint32_t a, std::uint32_t b, float s) {
                   hits.push_back({valid[own[a]], valid[own[b]], s});
                 },
                 jo, kernel)
                 .truncated;
    if (!ext.empty() && !over) {
      local.resize(ext.size());
      for (std::size_t r = 0; r < ext.size(); ++r) local[r] = valid[ext[r]];
      xs.gather(local, ext_rows[w]);
      over = join(
                 ext_rows[w], own_rows[w], t,
                 [&](std::uint32_t a, std::uint32_t b, float s) {
                   const std::uint32_t va = ext[a], vb = own[b];
                   // found from both sides when b also probes a's owner: keep the side of the
                   // smaller row
                   if (probes_of(vb, probe[static_cast<std::size_t>(va) * p]) && vb < va) return;
                   const std::uint32_t x = valid[va], y = valid[vb];
                   hits.push_back({std::min(x, y), std::max(x, y), s});
                 },
                 jo, kernel)
                 .truncated;
    }
    if (over || (budget && total.fetch_add(hits.size()) + hits.size() > budget)) cut.store(true);
  });
  stats.joins = clock::now() - t0;
  if (cut.load()) {
    stats.truncated = true;
    return stats;
  }
  std::size_t count = 0;
  for (const auto& f : found) count += f.size();
  out.reserve(count);
  for (auto& f : found) {
    out.insert(out.end(), f.begin(), f.end());
    std::vector<scored_pair>().swap(f);
  }
  std::sort(out.begin(), out.end(), pair_less);
  out.erase(std::unique(out.begin(), out.end(),
                        [](const scored_pair& a, const scored_pair& b) {
                          return a.i == b.i && a.j == b.j;
                        }),
            out.end());
  stats.pairs = out.size();
  return stats;
}

}  // namespace detail

/// Partitioned threshold join over the rows of X: `emit(i, j, score)` for the pairs i < j that
/// share a probed partition (see the file comment) and have `kernel` similarity >= t, in
/// increasing (i, j) order. A subset of `threshold_join`'s pairs; all of them when
/// `opt.probes` >= the number of partitions.
/// @param X n x d row-major float32, unit rows (cosine). Non-finite rows are never paired.
/// @param max_pairs pair budget (0 = none): with more qualifying pairs than that, nothing is
///        emitted and the result says `truncated`.
/// @return partitions used, pairs emitted, extra probes, largest partition, truncated.
/// @throws memhealth::error(precondition) for a zero partition_size, probes, threads, tile or
///         chunk, or n >= 2^32.
/// @complexity see the file comment; pairs are buffered (O(pairs) memory) to be sorted.
template <class Out, class Kernel = cosine_kernel>
kmeans_join_stats kmeans_threshold_join(const rows_cref& X, float t, Out&& emit,
                                        const kmeans_blocking_options& opt = {},
                                        std::size_t max_pairs = 0, const Kernel& kernel = {}) {
  std::vector<scored_pair> pairs;
  const auto st = detail::kmeans_pairs(X, {}, t, opt, max_pairs, kernel, pairs);
  for (const auto& q : pairs) emit(q.i, q.j, q.score);
  return st;
}

/// Candidate policy (blocking.hpp shape) for very large scopes: each scope with at least
/// `kmeans.min_partitioned` usable rows is partitioned by spherical k-means and joined inside
/// partitions with multi-probe (`kmeans_threshold_join`); smaller scopes get the exact join.
/// No pair crosses scopes. With `kmeans.threads` > 1, small scopes are joined in parallel (one
/// scope per thread) and large scopes use every thread inside; the output is the same for every
/// thread count and is emitted scope by scope (scopes in key order), pairs by (i, j).
/// Pair budget: a scope with more than `req.max_pairs_per_group` qualifying pairs emits none
/// and is listed in `req.truncated`. Incremental runs: pairs are computed for every scope with a
/// changed member, and only those with a changed side are emitted (the budget counts all).
/// @complexity per large scope as `kmeans_threshold_join`, per small scope as `exact_all_pairs`;
///             memory: the context's unit rows (no further copy of them) plus the pairs of the
///             scopes in flight.
struct kmeans_blocking {
  kmeans_blocking_options kmeans{};  ///< partitions, probes, threads (see kmeans_blocking_options)

  /// See blocking.hpp for the contract.
  template <class Ctx, class Kernel, class Emit>
  void operator()(Ctx& ctx, const candidate_request& req, const Kernel& kernel, Emit&& emit) const {
    const auto& store = ctx.store();
    auto groups = detail::group_embedded(ctx, req, [&](std::size_t i) {
      return std::string(detail::semantic_scope_of(store.record(i)));
    });
    std::erase_if(groups, [&](const std::vector<std::size_t>& g) {
      return std::none_of(g.begin(), g.end(), [&](std::size_t i) { return ctx.is_changed(i); });
    });
    const auto& units = ctx.unit_embeddings();
    const rows_cref x(units);
    auto run_group = [&](const std::vector<std::size_t>& g, unsigned threads,
                         std::vector<scored_pair>& pairs) {
      std::vector<std::uint32_t> rows(g.size());
      for (std::size_t r = 0; r < g.size(); ++r)
        rows[r] = static_cast<std::uint32_t>(ctx.unit_row_of(g[r]));
      kmeans_blocking_options o = kmeans;
      o.threads = threads;
      return detail::kmeans_pairs(x, rows, req.threshold, o, req.max_pairs_per_group, kernel, pairs)
          .truncated;
    };
    auto flush = [&](const std::vector<std::size_t>& g, const std::vector<scored_pair>& pairs,
                     bool truncated) {
      if (truncated) {
        detail::note_truncated(req, g);
        return;
      }
      for (const auto& q : pairs) {
        const std::size_t a = g[q.i], b = g[q.j];
        if (ctx.is_changed(a) || ctx.is_changed(b)) emit(a, b, q.score);
      }
    };
    // Small scopes in parallel, in batches so that at most a batch of pair lists is held.
    constexpr std::size_t batch = 256;
    std::vector<std::vector<scored_pair>> pairs(batch);
    std::vector<std::uint8_t> cut(batch);
    for (std::size_t g0 = 0; g0 < groups.size();) {
      if (groups[g0].size() >= kmeans.min_partitioned) {
        std::vector<scored_pair> big;
        const bool truncated = run_group(groups[g0], std::max(1u, kmeans.threads), big);
        flush(groups[g0], big, truncated);
        ++g0;
        continue;
      }
      std::size_t g1 = g0;
      while (g1 < groups.size() && g1 - g0 < batch && groups[g1].size() < kmeans.min_partitioned)
        ++g1;
      detail::kmeans_parallel(g1 - g0, kmeans.threads, [&](std::size_t task, std::size_t) {
        cut[task] = run_group(groups[g0 + task], 1, pairs[task]);
      });
      for (std::size_t g = g0; g < g1; ++g) flush(groups[g], pairs[g - g0], cut[g - g0] != 0);
      g0 = g1;
    }
  }
};

namespace detail {

// The pairs of one partitioned scope, kept by `scope_size_blocking` for the next request of a
// detector sharing it (see `scope_size_blocking::share`). Key: the unit matrix (address, shape and
// a checksum of the scope's rows), the scope's rows, the kernel type and the k-means settings that
// shape the output; the entry is taken (and cleared) by the first request that can use it.
struct kmeans_scope_cache {
  struct entry {
    const float* data = nullptr;
    Eigen::Index n = 0, d = 0;
    std::uint64_t checksum = 0;
    std::vector<std::uint32_t> rows;
    std::type_index kernel = typeid(void);
    std::tuple<std::size_t, std::size_t, unsigned, float, std::size_t, unsigned, std::size_t,
               std::uint64_t, Eigen::Index>
        settings{};
    float threshold = 0;             // the pairs are all those >= this (found by the blocking)
    std::vector<scored_pair> pairs;  // local indices (positions in `rows`), sorted, unique
    [[nodiscard]] bool same_input(const entry& o) const {
      return data == o.data && n == o.n && d == o.d && checksum == o.checksum &&
             kernel == o.kernel && settings == o.settings && rows == o.rows;
    }
  };
  std::mutex mutex;
  std::optional<entry> kept;
};

// The k-means settings that can change the pairs found (threads cannot).
inline auto kmeans_output_settings(const kmeans_blocking_options& o) {
  return std::tuple(o.partition_size, o.partitions, o.probes, o.probe_margin,
                    o.sample_per_partition, o.iterations, o.assign_dims, o.seed, o.tile);
}

// Order-dependent checksum of the bit patterns of the rows `rows` of X (one pass over them).
inline std::uint64_t kmeans_rows_checksum(const rows_cref& x, std::span<const std::uint32_t> rows) {
  std::uint64_t h = 0x6a09e667f3bcc908ULL;
  for (std::uint32_t r : rows) {
    const float* p = x.row(static_cast<Eigen::Index>(r)).data();
    std::uint64_t acc = r;
    for (Eigen::Index c = 0; c < x.cols(); ++c) {
      acc = (acc ^ std::bit_cast<std::uint32_t>(p[c])) * 0x100000001b3ULL;
    }
    h = (h ^ acc) * 0x9E3779B97F4A7C15ULL;
    h ^= h >> 29;
  }
  return h;
}

}  // namespace detail

/// Where `scope_size_blocking` takes the pairs of a partitioned scope from instead of computing
/// them (`scope_size_blocking::source`): the hook that spreads one scope's partitioned join over
/// several processes (detect/pg_workers.hpp: block jobs compute their `kmeans_part`, the scope's
/// job is supplied with the union). Only the cosine kernel's joins are asked (the default
/// pipeline's); other kernels always compute their pairs. Implementations need not be
/// thread-safe: a pipeline asks from one thread at a time.
class partitioned_pair_source {
 public:
  virtual ~partitioned_pair_source() = default;
  /// The pairs of `detail::kmeans_pairs(x, rows, t, o, budget, cosine_kernel{}, out)`: local
  /// indices (positions in `rows`), sorted by (i, j), unique, each with its score; `out` empty
  /// when over the budget. @return whether the join went over the pair budget (true: `out`
  /// empty), or nullopt when this source does not have these pairs (then the caller computes
  /// them itself). May throw to stop the detection that asked (a block job does, once it has
  /// what it came for).
  virtual std::optional<bool> pairs(const rows_cref& x, std::span<const std::uint32_t> rows,
                                    float t, const kmeans_blocking_options& o, std::size_t budget,
                                    std::vector<scored_pair>& out) = 0;
  /// True when scopes joined exactly (not partitioned) are to be left out: nothing is emitted for
  /// them (a block job wants the partitioned joins only). Default false.
  [[nodiscard]] virtual bool skip_exact() const { return false; }

 protected:
  partitioned_pair_source() = default;
  partitioned_pair_source(const partitioned_pair_source&) = default;
  partitioned_pair_source& operator=(const partitioned_pair_source&) = default;
};

/// Candidate policy (blocking.hpp shape) that picks the candidate generation per scope by its
/// size, so one pipeline type serves small and very large stores: a scope with at most
/// `block_above` eligible embedded records (or any scope when `block_above` is 0) gets the exact
/// tiled join, as `exact_all_pairs` (every qualifying pair, `join` settings); a larger scope is
/// partitioned by spherical k-means and joined inside the partitions with multi-probe
/// (`kmeans_threshold_join` with `kmeans` settings, partitioning forced whatever
/// `kmeans.min_partitioned` says): the inverted-file (IVF) blocking of Jegou, Douze, Schmid,
/// "Product quantization for nearest neighbor search", IEEE TPAMI 33(1), 2011, probed as in Lv et
/// al., "Multi-probe LSH", VLDB 2007. Its pairs are a subset of the exact join's (every pair is
/// verified by the kernel, never a false pair); on random 384-d unit vectors it finds 0.996 -
/// 0.998 of the pairs at cosine >= 0.92 at 10^6 rows (bench/README.md, scope1m;
/// bench/bench_check.cpp, check1m/one_scope).
///
/// Scopes are processed one after another in key order; `join.threads` workers run an exact
/// join, `kmeans.threads` workers a partitioned one (the default pipeline sets both to its
/// `threads`). The pairs do not depend on the thread counts: k-means is seeded
/// (`kmeans.seed`). Pair budget and incremental runs as in blocking.hpp: an exact scope is cut
/// as `exact_all_pairs` cuts it (at most the budget emitted, then listed in `req.truncated`); a
/// partitioned scope with more than `req.max_pairs_per_group` qualifying pairs emits none and is
/// listed. In an incremental run a partitioned scope with a changed member has all its pairs
/// computed and only those with a changed side emitted.
/// @complexity exact scopes O(n_s^2 d); partitioned scopes about O(n_s (k + (1 + extra probes)
///             n_s / k) d) with k = n_s / `kmeans.partition_size` (see the file comment).
///             Memory: the exact join copies the scope's rows (n_s x d floats); the partitioned
///             one reads the context's unit rows in place (labels, one partition's rows per
///             thread and the scope's pairs on top).
/// @throws memhealth::error(precondition) for invalid `kmeans` settings (see
///         `kmeans_threshold_join`), only when a scope is partitioned.
struct scope_size_blocking {
  /// Largest scope (eligible records with a usable embedding) joined exactly; larger scopes are
  /// partitioned. 0 = never partition (always the exact join).
  std::size_t block_above = 50'000;
  join_options join{};               ///< tile and threads of the exact join of small scopes
  kmeans_blocking_options kmeans{};  ///< partitions, probes, seed and threads of large scopes
  /// Pair cache shared by the detectors of one pipeline (null = none). A partitioned scope's
  /// pairs are computed down to min(`share_threshold`, the request's threshold) and kept here;
  /// the next request for the same scope (same unit rows, checked by a checksum of them; same
  /// kernel type and k-means settings) with a threshold at or above that takes them, filtered,
  /// instead of partitioning and joining again. `make_default_pipeline` gives its duplicate and
  /// conflict detectors one cache and `share_threshold` = the lower of their thresholds, so a
  /// large scope is partitioned and joined once per run, not twice. The pairs are the same as
  /// without the cache (partition membership does not depend on the threshold); a score may
  /// differ in its last bits (the join's tiles round differently at another threshold). Holds
  /// at most one scope's pairs (at most the pair budget) until taken. Thread-safe.
  std::shared_ptr<detail::kmeans_scope_cache> share{};
  float share_threshold = 1.0f;  ///< lowest threshold the shared pairs are computed down to
  /// Where the pairs of a partitioned scope come from (null = computed here, the default): each
  /// partitioned join this policy would run (with the cosine kernel) is asked of the source
  /// first, and computed here only when the source does not have it (see
  /// `partitioned_pair_source`). The cache above works as without a source.
  std::shared_ptr<partitioned_pair_source> source{};

  /// True when a scope of `members` eligible embedded records is partitioned.
  [[nodiscard]] constexpr bool partitions(std::size_t members) const noexcept {
    return block_above != 0 && members > block_above;
  }

  /// See blocking.hpp for the contract.
  template <class Ctx, class Kernel, class Emit>
  void operator()(Ctx& ctx, const candidate_request& req, const Kernel& kernel, Emit&& emit) const {
    const auto& store = ctx.store();
    const auto groups = detail::group_embedded(ctx, req, [&](std::size_t i) {
      return std::string(detail::semantic_scope_of(store.record(i)));
    });
    for (const auto& g : groups) {
      if (!partitions(g.size())) {
        if (!(source && source->skip_exact())) detail::join_group(ctx, g, req, kernel, join, emit);
        continue;
      }
      if (std::none_of(g.begin(), g.end(), [&](std::size_t i) { return ctx.is_changed(i); }))
        continue;
      const rows_cref x(ctx.unit_embeddings());
      std::vector<std::uint32_t> rows(g.size());
      for (std::size_t r = 0; r < g.size(); ++r)
        rows[r] = static_cast<std::uint32_t>(ctx.unit_row_of(g[r]));
      std::vector<scored_pair> pairs;
      if (!partitioned_pairs(x, rows, req, kernel, pairs)) {
        detail::note_truncated(req, g);
        continue;
      }
      for (const auto& q : pairs) {
        const std::size_t a = g[q.i], b = g[q.j];
        if (ctx.is_changed(a) || ctx.is_changed(b)) emit(a, b, q.score);
      }
    }
  }

 private:
  // The pairs >= req.threshold of the scope whose unit rows are `rows` (local indices, sorted),
  // from the shared cache when it holds them; false when the scope exceeds the pair budget.
  template <class Kernel>
  bool partitioned_pairs(const rows_cref& x, const std::vector<std::uint32_t>& rows,
                         const candidate_request& req, const Kernel& kernel,
                         std::vector<scored_pair>& pairs) const {
    kmeans_blocking_options o = kmeans;
    o.min_partitioned = 0;
    o.threads = std::max(1u, o.threads);
    const std::size_t budget = req.max_pairs_per_group;
    // the join at threshold t into `pairs` (from the source when it has it); true = truncated
    auto joined = [&](float t) {
      if constexpr (std::is_same_v<Kernel, cosine_kernel>)
        if (source)
          if (const auto cut = source->pairs(x, rows, t, o, budget, pairs)) return *cut;
      return detail::kmeans_pairs(x, rows, t, o, budget, kernel, pairs).truncated;
    };
    auto within_budget = [&] {
      std::erase_if(pairs, [&](const scored_pair& q) { return !(q.score >= req.threshold); });
      return budget == 0 || pairs.size() <= budget;
    };
    if (!share) return !joined(req.threshold);
    detail::kmeans_scope_cache::entry e;
    e.data = x.data();
    e.n = x.rows();
    e.d = x.cols();
    e.checksum = detail::kmeans_rows_checksum(x, rows);
    e.rows = rows;
    e.kernel = typeid(Kernel);
    e.settings = detail::kmeans_output_settings(o);
    {
      std::lock_guard lock(share->mutex);
      if (share->kept && share->kept->same_input(e) && req.threshold >= share->kept->threshold) {
        pairs = std::move(share->kept->pairs);
        share->kept.reset();
        return within_budget();
      }
    }
    // Computes the pairs down to t and keeps them for the next request; false when truncated.
    auto compute = [&](float t) {
      if (joined(t)) return false;
      e.threshold = t;
      e.pairs = pairs;
      std::lock_guard lock(share->mutex);
      share->kept = std::move(e);
      return true;
    };
    const float low = std::min(share_threshold, req.threshold);
    if (low < req.threshold && compute(low)) return within_budget();
    // no lower threshold asked for, or too many pairs down to it: this request's own pairs
    const bool truncated = !compute(req.threshold);
    return !truncated;
  }
};

}  // namespace memhealth
