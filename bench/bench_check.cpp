// check1m/one_scope (issue 20 item 6): the whole default pipeline (`make_default_pipeline(s).run`,
// what `memhealth check` runs: structural, duplicates, conflicts, staleness, scope, hygiene) over
// ONE scope of N records, 384-d random Gaussian unit embeddings (deterministic), 2 threads, the
// default `block_scopes_above` (50,000): above it the duplicate and conflict candidates come from
// k-means blocking with multi-probe (similarity/kmeans_blocking.hpp, `scope_size_blocking`).
//
// Planted: P = min(1000, N / 20) near-duplicate pairs at cosine 0.93-0.99 (texts differ, no
// number or negation), and one conflict pair ("I am vegetarian" / "I am not vegetarian", cosine
// ~0.96). Checks (SkipWithError otherwise): no check_skipped finding; recall of the planted
// pairs >= 0.99 against the exact join; no near-duplicate cluster other than a planted pair; the
// planted conflict found.
//
// Recall against the exact join: the exact join finds exactly the pairs at cosine >= 0.92, and
// random 384-d unit vectors never reach that (cosine ~ N(0, 1/384): 0.92 is 18 sigma), so its
// pairs are the planted pairs whose cosine reaches 0.92 (checked when they are planted). When N
// <= 20,000 the benchmark also runs the pipeline with block_scopes_above = 0 (the exact join,
// untimed) and requires that it finds exactly the planted pairs, that the blocked run's pairs are
// a subset of them (k-means may miss a pair, never adds one) and the same conflicts.
//
// Sizes: N = $MEMHEALTH_BENCH_SCALE_N (default 1,000,000; $MEMHEALTH_BENCH_TINY=1: 5,000). Below
// 100,000 records the threshold is lowered to N / 2 so that the scope is still partitioned (the
// tiny CI run goes through the k-means path). Data is generated once, outside the timing.
// Counters: seconds, records_per_s, recall, planted, pairs (near pairs found), conflicts,
// findings, peak_rss_MB (VmHWM, reset before the run: the store is included), load_avg.
//   MEMHEALTH_BENCH_SCALE_N=100000 ./memhealth-bench --benchmark_filter='check1m'
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <numbers>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "memhealth/detect/default_pipeline.hpp"
#include "memhealth/store/memory_store.hpp"

#include "bench_common.hpp"

namespace bench_check {

using namespace memhealth;
constexpr std::size_t dim = 384;
constexpr float threshold = 0.92f;  // the default near-duplicate threshold

// splitmix64 + Box-Muller (the cosine half only), seeded per row (rows can be generated on any
// thread).
struct gauss {
  std::uint64_t state;
  double uniform() { return memhealth_bench::splitmix_uniform(state); }
  double next() {
    return std::sqrt(-2.0 * std::log(uniform())) * std::cos(2.0 * std::numbers::pi * uniform());
  }
};

void random_row(std::size_t i, float* out) {
  gauss g{0xc4ec1000ULL ^ (i * 0x9E3779B97F4A7C15ULL)};
  memhealth_bench::gaussian_unit_row(g, out, dim);
}

// b = normalise(a + sigma g), sigma from a target cosine uniform in [lo, hi].
void near_copy(std::size_t seed, const float* a, float* b, double lo, double hi) {
  gauss g{0x5eedc0deULL ^ (seed * 0xBF58476D1CE4E5B9ULL)};
  const double target = lo + (hi - lo) * g.uniform();
  memhealth_bench::perturbed_copy(g, target, a, b, dim);
}

float dot(const float* a, const float* b) {
  double s = 0;
  for (std::size_t c = 0; c < dim; ++c) s += static_cast<double>(a[c]) * b[c];
  return static_cast<float>(s);
}

using id_pair = std::pair<std::string, std::string>;
using memhealth_bench::note;
using memhealth_bench::seconds_since;

// One scope "s" of N records: id, digit-free content (texts with differing numbers are never
// near duplicates), status, source, kind, timestamps, 384-d embedding. Planted pairs (a, b):
// a = q * (N / P), b a later row of the same stride; the conflict pair: rows 3 and about N - 3.
struct one_scope_store {
  memory_store<memory_record> store{dim};
  std::set<id_pair> pairs;  // planted pairs the exact join finds (cosine >= threshold)
  std::size_t planted = 0;
  id_pair conflict;
  timestamp t0{std::chrono::time_point_cast<std::chrono::milliseconds>(
      std::chrono::sys_days{std::chrono::year{2026} / 1 / 1})};

  explicit one_scope_store(std::size_t n) {
    const memhealth_bench::planted_layout layout(n);
    planted = layout.planted;
    const std::size_t stride = layout.stride;
    std::vector<std::size_t> copy_of(n, n);  // b -> a for planted rows
    for (std::size_t q = 0; q < planted; ++q) copy_of[layout.b(q)] = layout.a(q);
    // the conflict pair: rows 3 and N - 3 (N - 4 when N - 3 starts a planted pair)
    const std::size_t ca = 3, cb = (n - 3) % stride == 0 ? n - 4 : n - 3;
    copy_of[cb] = n;
    constexpr std::size_t batch = 8192;
    std::vector<float> block(batch * dim);
    std::vector<float> keep_a(dim), keep_conflict(dim), planted_a(n / stride * dim + dim);
    for (std::size_t b0 = 0; b0 < n; b0 += batch) {
      const std::size_t b1 = std::min(n, b0 + batch);
      memhealth_bench::parallel_rows(
          b1 - b0, [&](std::size_t k) { random_row(b0 + k, block.data() + k * dim); });
      for (std::size_t i = b0; i < b1; ++i) {
        float* e = block.data() + (i - b0) * dim;
        if (i % stride == 0 && i / stride < planted)
          std::copy(e, e + dim, planted_a.begin() + static_cast<std::ptrdiff_t>(i / stride * dim));
        memory_record r;
        char buf[32];
        std::snprintf(buf, sizeof buf, "m%07zu", i);
        r.id = buf;
        r.content = note(i);
        if (copy_of[i] < n) {
          const std::size_t a = copy_of[i];
          const float* pa = planted_a.data() + a / stride * dim;
          near_copy(a, pa, e, 0.93, 0.99);
          r.content = "copy of " + note(a);  // the same tag: a tag like "jul" is a date
          if (dot(pa, e) >= threshold) {
            std::snprintf(buf, sizeof buf, "m%07zu", a);
            pairs.emplace(buf, r.id);
          }
        }
        if (i == ca) {
          r.content = "I am vegetarian";
          std::copy(e, e + dim, keep_conflict.begin());
          conflict.first = r.id;
        } else if (i == cb) {
          near_copy(ca, keep_conflict.data(), e, 0.95, 0.97);
          r.content = "I am not vegetarian";
          conflict.second = r.id;
        }
        r.scope = "s";
        memhealth_bench::set_generated_fields(r, t0, e, dim);
        store.insert(std::move(r));
      }
    }
  }
};

struct outcome {
  std::set<id_pair> near;       // near-duplicate clusters of two records
  std::size_t clusters = 0;     // near-duplicate clusters (any size)
  std::set<id_pair> conflicts;  // conflict pairs
  std::size_t skipped = 0;      // check_skipped findings
};

outcome summarise(const report& r) {
  outcome o;
  for (const auto& f : r.findings) {
    o.skipped += f.kind == finding_kinds::check_skipped;
    if (f.kind == finding_kinds::near_duplicate) {
      ++o.clusters;
      if (f.record_ids.size() == 2)  // (the primary record first: put the pair in id order)
        o.near.emplace(std::min(f.record_ids[0], f.record_ids[1]),
                       std::max(f.record_ids[0], f.record_ids[1]));
    } else if (f.kind == finding_kinds::conflict && f.record_ids.size() == 2) {
      o.conflicts.emplace(f.record_ids[0], f.record_ids[1]);
    }
  }
  return o;
}

void check1m_one_scope(benchmark::State& state) {
  const std::size_t n = memhealth_bench::size_from_env("MEMHEALTH_BENCH_SCALE_N", 1'000'000, 5000);
  const auto data = std::make_unique<one_scope_store>(n);
  default_check_settings s;
  s.threads = 2;
  if (n < 100'000) s.block_scopes_above = n / 2;  // small runs still take the k-means path
  const auto p = make_default_pipeline(s);
  detect_options d;
  d.now = data->t0.instant + std::chrono::hours(24);  // fresh records: no staleness findings
  report r;
  double sec = 0;
  for (auto _ : state) {
    memhealth_bench::reset_peak();
    const auto t0 = std::chrono::steady_clock::now();
    r = p.run(data->store, d);
    sec = seconds_since(t0);
    state.SetIterationTime(sec);
  }
  const double peak = memhealth_bench::peak_rss_mb();
  const outcome o = summarise(r);
  std::size_t hit = 0;
  for (const auto& q : data->pairs) hit += o.near.count(q);
  const double recall = data->pairs.empty()
                            ? 1.0
                            : static_cast<double>(hit) / static_cast<double>(data->pairs.size());
  std::fprintf(stderr,
               "check1m/one_scope: n=%zu block_above=%zu seconds=%.3f recall=%.4f (%zu of %zu "
               "planted) clusters=%zu conflicts=%zu check_skipped=%zu findings=%zu "
               "peak_rss_MB=%.0f load_avg=%.2f\n",
               n, s.block_scopes_above, sec, recall, hit, data->pairs.size(), o.clusters,
               o.conflicts.size(), o.skipped, r.findings.size(), peak, memhealth_bench::load_avg());
  state.counters["seconds"] = sec;
  state.counters["records_per_s"] = static_cast<double>(n) / sec;
  state.counters["recall"] = recall;
  state.counters["planted"] = static_cast<double>(data->pairs.size());
  state.counters["pairs"] = static_cast<double>(o.near.size());
  state.counters["conflicts"] = static_cast<double>(o.conflicts.size());
  state.counters["findings"] = static_cast<double>(r.findings.size());
  state.counters["peak_rss_MB"] = peak;
  state.counters["load_avg"] = memhealth_bench::load_avg();
  state.counters["n"] = static_cast<double>(n);
  if (o.skipped != 0) return state.SkipWithError("a check_skipped finding");
  if (recall < 0.99) return state.SkipWithError("recall of the planted pairs below 0.99");
  if (o.clusters != hit) return state.SkipWithError("near-duplicate clusters other than planted");
  if (o.conflicts != std::set<id_pair>{data->conflict})
    return state.SkipWithError("the planted conflict is not the only conflict found");
  if (n <= 20'000) {  // the exact join (untimed): the planted pairs; the blocked run's a subset
    s.block_scopes_above = 0;
    const outcome e = summarise(make_default_pipeline(s).run(data->store, d));
    const bool subset = std::includes(e.near.begin(), e.near.end(), o.near.begin(), o.near.end());
    std::fprintf(stderr,
                 "check1m/one_scope: exact join: %zu pairs (%s the planted), %zu conflicts\n",
                 e.near.size(), e.near == data->pairs ? "=" : "!=", e.conflicts.size());
    if (e.near != data->pairs || !subset || e.conflicts != o.conflicts)
      state.SkipWithError("findings differ from the exact join's beyond missed pairs");
  }
}
BENCHMARK(check1m_one_scope)
    ->Name("check1m/one_scope")
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kSecond);

}  // namespace bench_check
