// Exact threshold join at the GEMM limit, its GEMM backends, and the int8 prefilter, against
// FAISS IndexFlatIP::range_search (issue #6 items 1-2).
//
// Data (generated once per process, deterministic):
// - planted: n unit vectors, d = 384, Gaussian, with 400 planted near-duplicate pairs (cosine
//   drawn in [0.935, 0.99]); n = $MEMHEALTH_BENCH_JOIN_N (default 20,000).
// - real: LoCoMo's three conversations as imported by import_locomo (tests/data/locomo) and the
//   distinct sentences of SICK_train (../shared/data/sick; without it the *_real benchmarks
//   skip with a message), embedded with lexical_embedder
//   (d = 384, unit rows). These are the only real texts there in any number (the Weaviate
//   Jeopardy file has 10 model vectors): about 10,000 rows, many of them near paraphrases.
// $MEMHEALTH_BENCH_TINY=1 makes every benchmark here tiny (n = 500 planted, the last 500 real
// rows) so CI runs them in seconds.
//
// Threshold t = 0.92, two threads, wall-clock time, one iteration each (Iterations(1)).
// Correctness (every benchmark, every size): the exact pairs are computed once per data set by
// the join with eigen_gemm (threads = 1) and cross-checked against a double-precision brute force
// at the tiny size; an exact variant must reproduce them (recall 1.0 and no extra pair), the int8
// variant needs recall >= 0.999 (by its bound it is 1.0), FAISS recall is reported. The CBLAS
// backend's equivalence with Eigen is checked here (the unit tests link no BLAS).
//
// Benchmarks (run them in one process for the ratios):
//   join/gemm_only          the full-width tiles of join/memhealth_full (default backend), no scan
//   join/memhealth          threshold_join, default backend (default_gemm = avx512_gemm here: the
//                           widest own kernel the CPU has, AVX-512F or AVX2/FMA, chosen at run
//                           time), default options: the prefix bound (GEMM of the first d/4
//                           columns, then the suffix only for pairs the norm bound keeps; join.hpp)
//   join/memhealth_full     the same with the bound off (prefix_dims = d): one full-width GEMM per
//                           tile, the scan fused; join/memhealth_full / join/gemm_only is the cost
//                           of the scan and the pair emission
//   join/memhealth_avx2     threshold_join, avx2_gemm (CPUs without AVX-512F), prefix bound on
//   join/gemm_only_eigen    the same tiles, eigen_gemm (SSE2 unless built with -mavx2 -mfma)
//   join/memhealth_eigen    threshold_join, eigen_gemm
//   join/gemm_only_cblas    the same tiles, cblas_gemm (OpenBLAS, one BLAS thread per worker)
//   join/memhealth_cblas    threshold_join, cblas_gemm
//   join/memhealth_int8     quantized_threshold_join (quantisation included in the time), the
//                           best kernel of the CPU (AVX-512 VNNI where present)
//   join/memhealth_int8_avxvnni  the same limited to the 256-bit AVX-VNNI kernel
//   join/memhealth_int8_avx2  the same limited to the AVX2 kernel (CPUs without VNNI)
//   join/faiss              IndexFlatIP add + range_search(radius t), pairs i < j kept
//   join/*_real             the same on the real rows (memhealth, memhealth_int8, faiss)
// Counters: pairs, recall, GFLOPs (useful flops n(n-1)/2·2d per second), cpu_s (process CPU
// time of all threads: steadier than wall time when other work shares the cores), loadavg_1m,
// for the exact joins the prefix bound's candidates and dense tiles (join_stats),
// and for the int8 join the candidates rescored and the kernel (0 portable, 1 AVX2, 2 AVX-VNNI,
// 3 AVX-512 VNNI).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "memhealth/embed/lexical_embedder.hpp"
#include "memhealth/io/import_locomo.hpp"
#include "memhealth/similarity/gemm_backend.hpp"
#include "memhealth/similarity/join.hpp"
#include "memhealth/similarity/quantized_join.hpp"

#include "bench_common.hpp"

#if MEMHEALTH_BENCH_HAVE_OPENBLAS
#include "memhealth/similarity/cblas_backend.hpp"
#endif
#if MEMHEALTH_BENCH_HAVE_FAISS
#include <faiss/IndexFlat.h>
#include <faiss/impl/AuxIndexStructures.h>
#endif

namespace bench_join {

namespace mh = memhealth;

constexpr float kT = 0.92f;
constexpr Eigen::Index kD = 384;
constexpr unsigned kThreads = 2;
constexpr Eigen::Index kTile = 512;

using memhealth_bench::tiny;

Eigen::Index planted_n() {
  return std::max<Eigen::Index>(16, static_cast<Eigen::Index>(memhealth_bench::size_from_env(
                                        "MEMHEALTH_BENCH_JOIN_N", 20'000, 500)));
}

mh::row_matrix make_planted(Eigen::Index n) {
  std::mt19937_64 rng(20'260'601);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::uniform_real_distribution<float> cosine(0.935f, 0.99f);
  mh::row_matrix X(n, kD);
  for (Eigen::Index i = 0; i < n; ++i) {
    for (Eigen::Index k = 0; k < kD; ++k) X(i, k) = g(rng);
    X.row(i).normalize();
  }
  // pair p: row 2p (source) and row n-1-2p (noisy copy): y = x + σ·z/√d has cosine ≈ 1/√(1+σ²)
  const Eigen::Index planted = std::min<Eigen::Index>(400, n / 4);
  for (Eigen::Index p = 0; p < planted; ++p) {
    const float c = cosine(rng), sigma = std::sqrt(1.0f / (c * c) - 1.0f);
    const Eigen::Index src = 2 * p, dst = n - 1 - 2 * p;
    for (Eigen::Index k = 0; k < kD; ++k)
      X(dst, k) = X(src, k) + sigma * g(rng) / std::sqrt(float(kD));
    X.row(dst).normalize();
  }
  return X;
}

// The real texts: LoCoMo's three conversations (tests/data/locomo, bundled, else
// ../shared/data/locomo) and SICK_train (../shared/data/sick only). `missing` names what was not
// found; the real benchmarks then skip instead of timing a smaller, different set.
mh::row_matrix make_real(std::string& missing) {
  std::vector<std::string> texts;
  std::unordered_set<std::string> seen;
  const std::filesystem::path bundled =
      std::filesystem::path(MEMHEALTH_SOURCE_DIR) / "tests" / "data";
  const std::filesystem::path shared = MEMHEALTH_SHARED_DATA_DIR;
  const auto find = [&](const std::filesystem::path& rel) -> std::filesystem::path {
    for (const auto& dir : {bundled, shared})
      if (std::filesystem::exists(dir / rel)) return dir / rel;
    missing += (missing.empty() ? "" : ", ") + rel.string();
    return {};
  };
  std::vector<std::filesystem::path> convs;
  for (const char* conv : {"26.json", "30.json", "41.json"})
    convs.push_back(find(std::filesystem::path("locomo") / conv));
  const auto sick_file = find(std::filesystem::path("sick") / "SICK_train.txt");
  if (!missing.empty()) {
    missing = "skipped: real data not found (" + missing + ") in " + bundled.string() + " or " +
              shared.string();
    return {};
  }
  for (const auto& file : convs)
    for (auto& r : mh::import_locomo(file).records)
      if (seen.insert(r.content).second) texts.push_back(std::move(r.content));
  std::ifstream sick(sick_file);
  std::string line;
  std::getline(sick, line);  // header
  while (std::getline(sick, line)) {
    std::istringstream cols(line);
    std::string id, a, b;
    std::getline(cols, id, '\t');
    std::getline(cols, a, '\t');
    std::getline(cols, b, '\t');
    for (auto* s : {&a, &b})
      if (!s->empty() && seen.insert(*s).second) texts.push_back(*s);
  }
  // tiny: the last 500 texts (SICK sentence pairs, some of them near paraphrases)
  if (tiny() && texts.size() > 500) texts.erase(texts.begin(), texts.end() - 500);
  const mh::lexical_embedder emb;
  mh::row_matrix X(static_cast<Eigen::Index>(texts.size()), kD);
  for (std::size_t i = 0; i < texts.size(); ++i)
    emb.embed(texts[i], std::span<float>(X.row(static_cast<Eigen::Index>(i)).data(), kD));
  return X;
}

struct data_set {
  mh::row_matrix X;
  std::vector<mh::scored_pair> exact;  // eigen_gemm join, threads = 1, sorted by (i, j)
  std::string error;                   // non-empty when the reference failed its own checks
  std::string missing;                 // non-empty when the data set's files are absent (skipped)
};

data_set build(mh::row_matrix X, bool planted) {
  data_set ds;
  ds.X = std::move(X);
  // the reference: full-width tiles (no prefix bound), Eigen, one thread
  ds.exact =
      mh::threshold_join_pairs(ds.X, kT, {.tile = kTile, .threads = 1, .prefix_dims = ds.X.cols()},
                               mh::cosine_kernel{}, mh::eigen_gemm{});
  const Eigen::Index n = ds.X.rows();
  if (planted) {  // every planted pair is found
    std::set<std::pair<std::uint32_t, std::uint32_t>> got;
    for (const auto& p : ds.exact) got.emplace(p.i, p.j);
    for (Eigen::Index p = 0; p < std::min<Eigen::Index>(400, n / 4); ++p)
      if (!got.contains(
              {static_cast<std::uint32_t>(2 * p), static_cast<std::uint32_t>(n - 1 - 2 * p)}))
        ds.error = "reference join misses a planted pair";
  }
  if (n <= 2000) {  // brute force in double (pairs whose score is within 1e-5 of t may differ)
    std::size_t agree = 0, strict = 0;
    for (Eigen::Index i = 0; i < n; ++i)
      for (Eigen::Index j = i + 1; j < n; ++j) {
        const double s = ds.X.row(i).cast<double>().dot(ds.X.row(j).cast<double>());
        if (s >= kT + 1e-5) {
          ++strict;
          agree += std::binary_search(
              ds.exact.begin(), ds.exact.end(),
              mh::scored_pair{static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(j), 0},
              mh::detail::pair_less);
        }
      }
    if (agree != strict) ds.error = "reference join differs from the brute force";
  }
  return ds;
}

const data_set& planted() {
  static const data_set ds = build(make_planted(planted_n()), true);
  return ds;
}
const data_set& real() {
  static const data_set ds = [] {
    std::string missing;
    auto X = make_real(missing);
    if (!missing.empty()) {
      data_set none;
      none.missing = std::move(missing);
      return none;
    }
    return build(std::move(X), false);
  }();
  return ds;
}

// Skips a benchmark with `why` (SkipWithMessage where Google Benchmark has it, >= 1.8; else
// SkipWithError, which 1.7 prints as "ERROR OCCURRED: ..." without failing the run).
template <class State>
void skip(State& state, const std::string& why) {
  if constexpr (requires { state.SkipWithMessage(why); })
    state.SkipWithMessage(why);
  else
    state.SkipWithError(why.c_str());
}

// True (and the benchmark skipped) when the data set's files are absent.
bool skip_if_missing(benchmark::State& state, const data_set& ds) {
  if (ds.missing.empty()) return false;
  skip(state, ds.missing);
  return true;
}

// process CPU time (all threads), seconds
double process_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// recall of `got` against the exact pairs; `extra` counts pairs not in the exact set
double recall(const std::vector<mh::scored_pair>& exact, std::vector<mh::scored_pair> got,
              std::size_t& extra) {
  std::sort(got.begin(), got.end(), mh::detail::pair_less);
  std::size_t hit = 0;
  extra = 0;
  for (const auto& p : got) {
    if (std::binary_search(exact.begin(), exact.end(), p, mh::detail::pair_less))
      ++hit;
    else
      ++extra;
  }
  return exact.empty() ? 1.0 : static_cast<double>(hit) / static_cast<double>(exact.size());
}

void report(benchmark::State& state, const data_set& ds, const std::vector<mh::scored_pair>& got,
            double min_recall, bool exact_variant, double cpu0) {
  state.counters["cpu_s"] = (process_cpu_s() - cpu0) / static_cast<double>(state.iterations());
  if (!ds.error.empty()) {
    state.SkipWithError(ds.error.c_str());
    return;
  }
  std::size_t extra = 0;
  const double r = recall(ds.exact, got, extra);
  const double n = static_cast<double>(ds.X.rows());
  state.counters["n"] = n;
  state.counters["pairs"] = static_cast<double>(got.size());
  state.counters["exact_pairs"] = static_cast<double>(ds.exact.size());
  state.counters["recall"] = r;
  state.counters["GFLOPs"] = benchmark::Counter(
      n * (n - 1) / 2 * 2 * static_cast<double>(ds.X.cols()) * 1e-9 * state.iterations(),
      benchmark::Counter::kIsRate);
  double load[1] = {0};
  if (getloadavg(load, 1) == 1) state.counters["loadavg_1m"] = load[0];
  if (r < min_recall)
    state.SkipWithError("recall below the goal");
  else if (exact_variant && extra != 0)
    state.SkipWithError("pairs that the exact join does not have");
}

// prefix_dims: 0 = the join's default (prefix bound at d/4), d = full-width tiles
template <class Backend>
void run_exact(benchmark::State& state, const data_set& ds, const Backend& backend,
               Eigen::Index prefix_dims = 0) {
  if (skip_if_missing(state, ds)) return;
  std::vector<mh::scored_pair> got;
  got.reserve(ds.exact.size() + 1024);
  mh::join_stats st;
  const double cpu0 = process_cpu_s();
  for (auto _ : state) {
    got.clear();
    st = mh::threshold_join(
        ds.X, kT,
        [&](std::uint32_t i, std::uint32_t j, float s) {
          got.push_back({i, j, s});
        },
        {.tile = kTile, .threads = kThreads, .prefix_dims = prefix_dims}, mh::cosine_kernel{},
        backend);
    benchmark::DoNotOptimize(got.data());
  }
  report(state, ds, got, 1.0, true, cpu0);
  state.counters["candidates"] = static_cast<double>(st.candidates);
  state.counters["dense_tiles"] = static_cast<double>(st.dense_tiles);
}

template <class Backend>
void run_gemm_only(benchmark::State& state, const data_set& ds, const Backend& backend) {
  if (skip_if_missing(state, ds)) return;
  const double cpu0 = process_cpu_s();
  for (auto _ : state) {
    auto none = [](std::uint32_t, std::uint32_t, float) {};
    mh::detail::run_join<false>(ds.X, ds.X, true, kT, none, {.tile = kTile, .threads = kThreads},
                                mh::cosine_kernel{}, backend);
  }
  report(state, ds, ds.exact, 1.0, true, cpu0);  // no pairs of its own: counters only
}

void run_int8(benchmark::State& state, const data_set& ds,
              mh::int8_kernel kernel = mh::int8_kernel::avx512_vnni) {
  if (skip_if_missing(state, ds)) return;
  std::vector<mh::scored_pair> got;
  mh::quantized_join_stats st;
  const double cpu0 = process_cpu_s();
  for (auto _ : state) {
    got.clear();
    st = mh::quantized_threshold_join(ds.X, kT,
                                      [&](std::uint32_t i, std::uint32_t j, float s) {
                                        got.push_back({i, j, s});
                                      },
                                      {.tile = 256, .threads = kThreads, .kernel = kernel});
    benchmark::DoNotOptimize(got.data());
  }
  state.counters["candidates"] = static_cast<double>(st.candidates);
  state.counters["kernel"] = mh::detail::int8_kernel_level(static_cast<int>(kernel));
  report(state, ds, got, 0.999, false, cpu0);
}

#if MEMHEALTH_BENCH_HAVE_FAISS
void run_faiss(benchmark::State& state, const data_set& ds) {
  if (skip_if_missing(state, ds)) return;
  std::vector<mh::scored_pair> got;
  const auto n = static_cast<faiss::Index::idx_t>(ds.X.rows());
#if MEMHEALTH_BENCH_HAVE_OPENBLAS && (defined(OPENBLAS_THREAD) || defined(OPENBLAS_SEQUENTIAL))
  openblas_set_num_threads(static_cast<int>(kThreads));  // FAISS's sgemm may use both cores
#endif
  const double cpu0 = process_cpu_s();
  for (auto _ : state) {
    got.clear();
    faiss::IndexFlatIP index(static_cast<int>(ds.X.cols()));
    index.add(n, ds.X.data());
    faiss::RangeSearchResult res(n);
    // FAISS keeps IP results strictly above the radius: a hair below t, then >= t below
    index.range_search(n, ds.X.data(), std::nextafter(kT, 0.0f), &res);
    for (faiss::Index::idx_t i = 0; i < n; ++i)
      for (std::size_t k = res.lims[i]; k < res.lims[i + 1]; ++k)
        if (res.labels[k] > i && res.distances[k] >= kT)
          got.push_back({static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(res.labels[k]),
                         res.distances[k]});
  }
  report(state, ds, got, 0.0, false, cpu0);  // reported, not required (another library's rounding)
}
#endif

void BM_join_gemm_only(benchmark::State& s) {
  run_gemm_only(s, planted(), mh::default_gemm{});
}
void BM_join_memhealth(benchmark::State& s) {
  run_exact(s, planted(), mh::default_gemm{});
}
void BM_join_memhealth_full(benchmark::State& s) {
  run_exact(s, planted(), mh::default_gemm{}, kD);
}
void BM_join_memhealth_avx2(benchmark::State& s) {
  run_exact(s, planted(), mh::avx2_gemm{});
}
void BM_join_gemm_only_eigen(benchmark::State& s) {
  run_gemm_only(s, planted(), mh::eigen_gemm{});
}
void BM_join_memhealth_eigen(benchmark::State& s) {
  run_exact(s, planted(), mh::eigen_gemm{});
}
void BM_join_memhealth_int8(benchmark::State& s) {
  run_int8(s, planted());
}
void BM_join_memhealth_int8_avxvnni(benchmark::State& s) {
  run_int8(s, planted(), mh::int8_kernel::avx_vnni);
}
void BM_join_memhealth_int8_avx2(benchmark::State& s) {
  run_int8(s, planted(), mh::int8_kernel::avx2);
}
void BM_join_memhealth_real(benchmark::State& s) {
  run_exact(s, real(), mh::default_gemm{});
}
void BM_join_memhealth_int8_real(benchmark::State& s) {
  run_int8(s, real());
}
BENCHMARK(BM_join_gemm_only)
    ->Name("join/gemm_only")
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_join_memhealth)
    ->Name("join/memhealth")
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_join_memhealth_full)
    ->Name("join/memhealth_full")
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_join_memhealth_avx2)
    ->Name("join/memhealth_avx2")
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_join_gemm_only_eigen)
    ->Name("join/gemm_only_eigen")
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_join_memhealth_eigen)
    ->Name("join/memhealth_eigen")
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

#if MEMHEALTH_BENCH_HAVE_OPENBLAS
void one_blas_thread() {
#if defined(OPENBLAS_THREAD) || defined(OPENBLAS_SEQUENTIAL)
  openblas_set_num_threads(1);  // the join's own workers own the cores
#endif
}
void BM_join_gemm_only_cblas(benchmark::State& s) {
  one_blas_thread();
  run_gemm_only(s, planted(), mh::cblas_gemm{});
}
void BM_join_memhealth_cblas(benchmark::State& s) {
  one_blas_thread();
  run_exact(s, planted(), mh::cblas_gemm{});
}
BENCHMARK(BM_join_gemm_only_cblas)
    ->Name("join/gemm_only_cblas")
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_join_memhealth_cblas)
    ->Name("join/memhealth_cblas")
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
#endif

BENCHMARK(BM_join_memhealth_int8)
    ->Name("join/memhealth_int8")
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_join_memhealth_int8_avxvnni)
    ->Name("join/memhealth_int8_avxvnni")
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_join_memhealth_int8_avx2)
    ->Name("join/memhealth_int8_avx2")
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

#if MEMHEALTH_BENCH_HAVE_FAISS
void BM_join_faiss(benchmark::State& s) {
  run_faiss(s, planted());
}
void BM_join_faiss_real(benchmark::State& s) {
  run_faiss(s, real());
}
BENCHMARK(BM_join_faiss)
    ->Name("join/faiss")
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
#endif

BENCHMARK(BM_join_memhealth_real)
    ->Name("join/memhealth_real")
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_join_memhealth_int8_real)
    ->Name("join/memhealth_int8_real")
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
#if MEMHEALTH_BENCH_HAVE_FAISS
BENCHMARK(BM_join_faiss_real)
    ->Name("join/faiss_real")
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
#endif

}  // namespace bench_join
