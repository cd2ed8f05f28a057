// Scale benchmarks (issue #6 items 3-5): one 1M-row scope, a blocked 1M-record store, and the
// level-1 structural scan over 1M records.
//
// - scope1m/memhealth: near-duplicate scan of N x 384 unit float32 vectors (random Gaussian,
//   normalised; deterministic) with planted pairs at cosine 0.93-0.99, threshold 0.92, by
//   k-means blocking (similarity/kmeans_blocking.hpp: kmeans_threshold_join, 2 threads).
// - scope1m/hnswlib: the same job with hnswlib (InnerProductSpace, M = 16, efConstruction and
//   ef from the environment, default 64 / 64): build over 2 threads, then 10-NN of every row
//   over 2 threads, pairs = neighbours with inner product >= 0.92.
// - blocked1m/memhealth: N records in scopes of 300, planted pairs inside scopes, the full
//   duplicate detector (exact, near, cross-scope) with kmeans_blocking on 2 threads (scopes of
//   300 are below min_partitioned, so each scope gets the exact tiled join; scopes run in
//   parallel).
// - structural1m/memhealth: the level-1 structural detector of the default pipeline over the
//   same N-record store, `threads` = 2 (planted NaN and zero vectors must be found, and the
//   findings must equal a one-thread run's).
//
// Sizes: N = $MEMHEALTH_BENCH_SCALE_N (default 1,000,000); $MEMHEALTH_BENCH_TINY=1 makes N =
// 5,000 for the matrix and 40,000 for the store (the CI smoke run; an explicit
// MEMHEALTH_BENCH_SCALE_N wins). hnswlib may run on a prefix: $MEMHEALTH_BENCH_HNSW_N.
// Data is generated once per process (excluded from the timings) and reused; the matrix and the
// store are not held at the same time. Each benchmark checks its own result (recall of the
// planted pairs >= 0.99, expected findings) and fails with SkipWithError otherwise.
// Counters: seconds, records_per_s, recall, pairs, peak_rss_MB (VmHWM, reset before each
// benchmark through /proc/self/clear_refs), load_avg (1-minute, at the end).
//   ./memhealth-bench --benchmark_filter='scope1m|blocked1m|structural1m'
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <memory>
#include <numbers>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "memhealth/detect/duplicates.hpp"
#include "memhealth/detect/pipeline.hpp"
#include "memhealth/detect/structural.hpp"
#include "memhealth/similarity/kmeans_blocking.hpp"
#include "memhealth/store/memory_store.hpp"

#include "bench_common.hpp"

#ifndef MEMHEALTH_BENCH_HAVE_HNSWLIB
#define MEMHEALTH_BENCH_HAVE_HNSWLIB 0
#endif
#if MEMHEALTH_BENCH_HAVE_HNSWLIB
#include <hnswlib/hnswlib.h>
#endif

namespace bench_scale {

using namespace memhealth;
constexpr Eigen::Index dim = 384;
constexpr float threshold = 0.92f;
constexpr std::size_t scope_size = 300;

#if MEMHEALTH_BENCH_HAVE_HNSWLIB  // only the hnswlib peer reads sizes from the environment
std::size_t env_size(const char* name, std::size_t fallback) {
  if (const char* e = std::getenv(name))
    if (long v = std::atol(e); v > 0) return static_cast<std::size_t>(v);
  return fallback;
}
#endif
std::size_t scale_n() {
  return memhealth_bench::size_from_env("MEMHEALTH_BENCH_SCALE_N", 1'000'000, 5000);
}

using memhealth_bench::load_avg;
using memhealth_bench::peak_rss_mb;
using memhealth_bench::reset_peak;

// Deterministic Gaussian stream per row (splitmix64 + Box-Muller), so rows can be generated on
// any thread.
struct gauss {
  std::uint64_t state;
  double spare = 0;
  bool has_spare = false;
  double uniform() { return memhealth_bench::splitmix_uniform(state); }
  double next() {
    if (has_spare) {
      has_spare = false;
      return spare;
    }
    const double r = std::sqrt(-2.0 * std::log(uniform())), a = 2.0 * std::numbers::pi * uniform();
    spare = r * std::sin(a);
    has_spare = true;
    return r * std::cos(a);
  }
};

// Row i: a unit Gaussian vector (seeded by i). Planted: b = normalise(a + sigma g) with sigma
// from a target cosine uniform in [0.93, 0.99] (cos ~ 1 / sqrt(1 + sigma^2)).
void random_row(std::size_t i, float* out) {
  gauss g{0x5ca1e000ULL ^ (i * 0x9E3779B97F4A7C15ULL)};
  memhealth_bench::gaussian_unit_row(g, out, static_cast<std::size_t>(dim));
}
void near_copy(std::size_t seed, const float* a, float* b) {
  gauss g{0xc0b1e5ULL ^ (seed * 0xBF58476D1CE4E5B9ULL)};
  const double target = 0.93 + 0.06 * g.uniform();
  memhealth_bench::perturbed_copy(g, target, a, b, static_cast<std::size_t>(dim));
}

using memhealth_bench::parallel_rows;
using memhealth_bench::seconds_since;

using id_pair = std::pair<std::uint32_t, std::uint32_t>;

// N x 384 matrix with P = min(1000, N / 20) planted pairs (a, b), a = q * (N / P), b in the
// same stride; only pairs whose cosine is >= the threshold count (all of them, by construction).
struct planted_matrix {
  row_matrix x;
  std::vector<id_pair> pairs;  // sorted
  explicit planted_matrix(std::size_t n) : x(static_cast<Eigen::Index>(n), dim) {
    parallel_rows(
        n, [&](std::size_t i) { random_row(i, x.row(static_cast<Eigen::Index>(i)).data()); });
    const memhealth_bench::planted_layout layout(n);
    for (std::size_t q = 0; q < layout.planted; ++q) {
      const std::size_t a = layout.a(q), b = layout.b(q);
      near_copy(q, x.row(static_cast<Eigen::Index>(a)).data(),
                x.row(static_cast<Eigen::Index>(b)).data());
      if (x.row(static_cast<Eigen::Index>(a)).dot(x.row(static_cast<Eigen::Index>(b))) >= threshold)
        pairs.emplace_back(static_cast<std::uint32_t>(a), static_cast<std::uint32_t>(b));
    }
  }
  [[nodiscard]] double recall(std::vector<id_pair> found,
                              std::size_t limit = static_cast<std::size_t>(-1)) const {
    std::sort(found.begin(), found.end());
    std::size_t hit = 0, total = 0;
    for (const auto& p : pairs) {
      if (p.second >= limit) continue;
      ++total;
      hit += std::binary_search(found.begin(), found.end(), p);
    }
    return total ? static_cast<double>(hit) / static_cast<double>(total) : 1.0;
  }
};

// N records in scopes of 300, record = short id/content, scope, status, source, timestamps,
// embedding version, 384-d embedding. In every third scope the second record is a near copy of
// the first (planted pair). Records 1000 * m + 500 get a NaN coordinate, 1000 * m + 501 a zero
// vector (structural findings expected).
struct planted_store {
  memory_store<memory_record> store{static_cast<std::size_t>(dim)};
  std::vector<std::pair<std::string, std::string>> pairs;  // planted (id a, id b)
  std::size_t nan_rows = 0, zero_rows = 0;
  explicit planted_store(std::size_t n) {
    const timestamp t0{std::chrono::time_point_cast<std::chrono::milliseconds>(
        std::chrono::sys_days{std::chrono::year{2026} / 1 / 1})};
    constexpr std::size_t batch = 8192;
    std::vector<float> block(batch * dim);
    auto anomaly = [](std::size_t i) { return i % 1000 == 500 || i % 1000 == 501; };
    for (std::size_t b0 = 0; b0 < n; b0 += batch) {
      const std::size_t b1 = std::min(n, b0 + batch);
      parallel_rows(b1 - b0, [&](std::size_t k) { random_row(b0 + k, block.data() + k * dim); });
      for (std::size_t i = b0; i < b1; ++i) {
        float* e = block.data() + (i - b0) * dim;
        const std::size_t s = i / scope_size, pos = i % scope_size;
        const bool plant = pos == 1 && s % 3 == 0 && i >= b0 + 1 && !anomaly(i) && !anomaly(i - 1);
        if (plant) near_copy(s, e - dim, e);
        memory_record r;
        char buf[32];
        std::snprintf(buf, sizeof buf, "m%07zu", i);
        r.id = buf;
        r.content = memhealth_bench::note(i);  // a digit-free tag
        std::snprintf(buf, sizeof buf, "s%05zu", s);
        r.scope = buf;
        memhealth_bench::set_generated_fields(r, t0, e, static_cast<std::size_t>(dim));
        if (i % 1000 == 500) {
          r.embedding[7] = std::numeric_limits<float>::quiet_NaN();
          ++nan_rows;
        } else if (i % 1000 == 501) {
          std::fill(r.embedding.begin(), r.embedding.end(), 0.0f);
          ++zero_rows;
        }
        // a planted pair counts when its cosine reaches the threshold (almost all: see near_copy)
        if (plant && Eigen::Map<const Eigen::RowVectorXf>(e - dim, dim)
                             .dot(Eigen::Map<const Eigen::RowVectorXf>(e, dim)) >= threshold)
          pairs.emplace_back(store.record(i - 1).id, r.id);
        store.insert(std::move(r));
      }
    }
  }
};

std::unique_ptr<planted_matrix> g_matrix;
std::unique_ptr<planted_store> g_store;

planted_matrix& matrix() {
  g_store.reset();
  if (!g_matrix) g_matrix = std::make_unique<planted_matrix>(scale_n());
  return *g_matrix;
}
planted_store& store() {
  g_matrix.reset();
  // tiny mode: 40,000 records, enough for the structural scan's two-thread path (2 x 16,384)
  if (!g_store)
    g_store = std::make_unique<planted_store>(
        memhealth_bench::size_from_env("MEMHEALTH_BENCH_SCALE_N", 1'000'000, 40'000));
  return *g_store;
}

// Sets the common counters and prints them on stderr too (an errored run shows no counters).
void finish(benchmark::State& state, const char* name, double seconds, std::size_t records,
            double recall, std::size_t pairs) {
  std::fprintf(stderr,
               "%s: n=%zu seconds=%.3f records_per_s=%.0f recall=%.4f pairs=%zu peak_rss_MB=%.0f "
               "load_avg=%.2f\n",
               name, records, seconds, static_cast<double>(records) / seconds, recall, pairs,
               peak_rss_mb(), load_avg());
  state.counters["seconds"] = seconds;
  state.counters["records_per_s"] = static_cast<double>(records) / seconds;
  state.counters["recall"] = recall;
  state.counters["pairs"] = static_cast<double>(pairs);
  state.counters["peak_rss_MB"] = peak_rss_mb();
  state.counters["load_avg"] = load_avg();
  state.counters["n"] = static_cast<double>(records);
}

void scope1m_memhealth(benchmark::State& state) {
  auto& m = matrix();
  kmeans_blocking_options opt;
  opt.threads = 2;
  std::vector<id_pair> found;
  kmeans_join_stats st;
  double sec = 0;
  for (auto _ : state) {
    found.clear();
    reset_peak();
    const auto t0 = std::chrono::steady_clock::now();
    st = kmeans_threshold_join(
        m.x, threshold, [&](std::uint32_t i, std::uint32_t j, float) { found.emplace_back(i, j); },
        opt);
    sec = seconds_since(t0);
    state.SetIterationTime(sec);
  }
  const double recall = m.recall(found);
  finish(state, "scope1m/memhealth", sec, static_cast<std::size_t>(m.x.rows()), recall,
         found.size());
  state.counters["partitions"] = static_cast<double>(st.partitions);
  state.counters["extra_probes_per_row"] =
      static_cast<double>(st.probe_rows) / static_cast<double>(m.x.rows());
  state.counters["train_s"] = st.train.count();
  state.counters["assign_s"] = st.assign.count();
  state.counters["join_s"] = st.joins.count();
  if (recall < 0.99) state.SkipWithError("recall of the planted pairs below 0.99");
}
BENCHMARK(scope1m_memhealth)
    ->Name("scope1m/memhealth")
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kSecond);

#if MEMHEALTH_BENCH_HAVE_HNSWLIB
void scope1m_hnswlib(benchmark::State& state) {
  auto& m = matrix();
  const std::size_t n =
      std::min(env_size("MEMHEALTH_BENCH_HNSW_N", scale_n()), static_cast<std::size_t>(m.x.rows()));
  const std::size_t efc = env_size("MEMHEALTH_BENCH_HNSW_EFC", 64),
                    ef = env_size("MEMHEALTH_BENCH_HNSW_EF", 64);
  constexpr std::size_t M = 16, k = 10;
  std::vector<id_pair> found;
  double build_s = 0, query_s = 0;
  for (auto _ : state) {
    found.clear();
    reset_peak();
    hnswlib::InnerProductSpace space(static_cast<std::size_t>(dim));
    hnswlib::HierarchicalNSW<float> index(&space, n, M, efc, 100);
    auto t0 = std::chrono::steady_clock::now();
    index.addPoint(m.x.row(0).data(), 0);
    std::atomic<std::size_t> next{1};
    {
      std::vector<std::jthread> pool;
      for (int w = 0; w < 2; ++w)
        pool.emplace_back([&] {
          for (std::size_t i; (i = next.fetch_add(1)) < n;)
            index.addPoint(m.x.row(static_cast<Eigen::Index>(i)).data(), i);
        });
    }
    build_s = seconds_since(t0);
    index.setEf(ef);
    t0 = std::chrono::steady_clock::now();
    std::vector<std::vector<id_pair>> per(2);
    next = 0;
    {
      std::vector<std::jthread> pool;
      for (int w = 0; w < 2; ++w)
        pool.emplace_back([&, w] {
          for (std::size_t i; (i = next.fetch_add(1)) < n;) {
            auto res = index.searchKnn(m.x.row(static_cast<Eigen::Index>(i)).data(), k);
            for (; !res.empty(); res.pop()) {
              const auto [dist, label] = res.top();  // inner-product space: distance = 1 - a.b
              if (label != i && 1.0f - dist >= threshold)
                per[static_cast<std::size_t>(w)].emplace_back(
                    static_cast<std::uint32_t>(std::min<std::size_t>(i, label)),
                    static_cast<std::uint32_t>(std::max<std::size_t>(i, label)));
            }
          }
        });
    }
    for (auto& v : per) found.insert(found.end(), v.begin(), v.end());
    std::sort(found.begin(), found.end());
    found.erase(std::unique(found.begin(), found.end()), found.end());
    query_s = seconds_since(t0);
    state.SetIterationTime(build_s + query_s);
  }
  const double recall = m.recall(found, n);
  finish(state, "scope1m/hnswlib", build_s + query_s, n, recall, found.size());
  state.counters["build_s"] = build_s;
  state.counters["query_s"] = query_s;
  state.counters["M"] = M;
  state.counters["ef_construction"] = static_cast<double>(efc);
  state.counters["ef"] = static_cast<double>(ef);
  std::fprintf(stderr,
               "scope1m/hnswlib: build_s=%.2f query_s=%.2f M=%zu ef_construction=%zu ef=%zu\n",
               build_s, query_s, M, efc, ef);
  if (recall < 0.99)
    state.SkipWithError(
        "hnswlib: recall of the planted pairs below 0.99 (raise ef / efConstruction)");
}
BENCHMARK(scope1m_hnswlib)
    ->Name("scope1m/hnswlib")
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kSecond);
#endif

// Runs pipeline p over the store once per benchmark iteration (manual time = the run, peak RSS
// reset before each); returns the last report, its time in `seconds`.
template <class Pipeline, class Store>
report timed_runs(benchmark::State& state, const Pipeline& p, const Store& store, double& seconds) {
  report r;
  for (auto _ : state) {
    reset_peak();
    const auto t0 = std::chrono::steady_clock::now();
    r = p.run(store, detect_options{});
    seconds = seconds_since(t0);
    state.SetIterationTime(seconds);
  }
  return r;
}

void blocked1m_memhealth(benchmark::State& state) {
  auto& s = store();
  duplicate_detector<kmeans_blocking> det;
  det.candidates.kmeans.threads = 2;
  const pipeline p{det};
  double sec = 0;
  const report r = timed_runs(state, p, s.store, sec);
  std::set<std::pair<std::string, std::string>> near;
  std::size_t clusters = 0;
  for (const auto& f : r.findings)
    if (f.kind == finding_kinds::near_duplicate) {
      ++clusters;
      if (f.record_ids.size() == 2)
        near.emplace(std::min(f.record_ids[0], f.record_ids[1]),
                     std::max(f.record_ids[0], f.record_ids[1]));
    }
  std::size_t hit = 0;
  for (const auto& q : s.pairs) hit += near.count(q);
  const double recall =
      s.pairs.empty() ? 1.0 : static_cast<double>(hit) / static_cast<double>(s.pairs.size());
  finish(state, "blocked1m/memhealth", sec, s.store.size(), recall, clusters);
  state.counters["findings"] = static_cast<double>(r.findings.size());
  state.counters["planted"] = static_cast<double>(s.pairs.size());
  state.counters["unplanted_clusters"] = static_cast<double>(clusters - hit);
  if (recall < 0.99)
    state.SkipWithError("recall of the planted pairs below 0.99");
  else if (clusters != hit)
    state.SkipWithError("near-duplicate clusters other than the planted pairs");
}
BENCHMARK(blocked1m_memhealth)
    ->Name("blocked1m/memhealth")
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kSecond);

void structural1m_memhealth(benchmark::State& state) {
  auto& s = store();
  structural_detector det;
  det.threads = 2;
  const pipeline p{det};
  double sec = 0;
  const report r = timed_runs(state, p, s.store, sec);
  std::size_t nan = 0, zero = 0;
  for (const auto& f : r.findings) {
    nan += f.kind == finding_kinds::embedding_non_finite;
    zero += f.kind == finding_kinds::embedding_zero_norm;
  }
  finish(state, "structural1m/memhealth", sec, s.store.size(), 1.0, 0);
  state.counters["findings"] = static_cast<double>(r.findings.size());
  // the two-thread scan must report exactly what the one-thread scan does (untimed)
  const auto one = pipeline{structural_detector{}}.run(s.store, detect_options{});
  bool same = one.findings.size() == r.findings.size();
  for (std::size_t k = 0; same && k < one.findings.size(); ++k)
    same = one.findings[k].kind == r.findings[k].kind &&
           one.findings[k].record_ids == r.findings[k].record_ids &&
           one.findings[k].evidence == r.findings[k].evidence;
  if (!same)
    state.SkipWithError("structural findings on two threads differ from one thread");
  else if (nan != s.nan_rows || zero != s.zero_rows || r.findings.size() != nan + zero)
    state.SkipWithError("structural findings differ from the planted NaN and zero vectors");
}
BENCHMARK(structural1m_memhealth)
    ->Name("structural1m/memhealth")
    ->Iterations(3)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace bench_scale
