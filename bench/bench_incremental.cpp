// check_incremental (issue 20 item 2): an incremental `memhealth check` (the default pipeline
// with a changed mask) on N records in N / 100 scopes at d = 384 with 10 changed records, one in
// each of 10 scopes spread over the store.
//
// - check_incremental/full_mask: `pipeline::run(store, options)` with the mask: every text is
//   normalised and the unit matrix of every record is built, O(n x d).
// - check_incremental/subset_cold: `run_incremental` (detect/incremental.hpp): the duplicate,
//   conflict and hygiene detectors run on the scopes of the changed records (1,000 records
//   here); choosing them normalises every text once (no cache).
// - check_incremental/subset_warm: the same with a warm `normalized_text_hashes` cache (what the
//   watcher keeps across polls): choosing the subset hashes contents instead of normalising.
// Each subset run checks that its findings equal the full-mask run's (kind, severity, ids,
// evidence; SkipWithError otherwise) and that the planted exact duplicate (one per changed
// scope) is found. Counters: seconds, records, subset (records the scope-local detectors saw),
// findings.
// Size: N = $MEMHEALTH_BENCH_INCR_N (default 100,000; 2,000 with MEMHEALTH_BENCH_TINY=1). Run
//   ./memhealth-bench --benchmark_filter='check_incremental'
// The store is generated once per process (excluded from the timings).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "memhealth/memhealth.hpp"

#include "bench_common.hpp"

namespace bench_incremental {

using namespace memhealth;

constexpr std::size_t k_dim = 384, k_per_scope = 100, k_changed = 10;

struct incremental_data {
  memory_store<> store;
  detect_options options;
  std::size_t planted = 0;  // exact duplicates planted (one per changed scope)
};

const incremental_data& data() {
  static const incremental_data d = [] {
    const std::size_t n = memhealth_bench::size_from_env("MEMHEALTH_BENCH_INCR_N", 100000, 2000);
    const std::size_t scopes = std::max<std::size_t>(1, n / k_per_scope);
    std::mt19937 gen(20);
    std::normal_distribution<float> normal;
    const auto t0 = parse_timestamp("2025-01-01T00:00:00Z").value();
    std::vector<memory_record> rs(n);
    for (std::size_t i = 0; i < n; ++i) {
      auto& r = rs[i];
      const std::size_t s = i % scopes;  // scopes interleaved: a scope's records are spread out
      r.id = "rec-" + std::to_string(i);
      r.content = "memory note " + std::to_string(i) + " about topic " + std::to_string(i % 97) +
                  " for user " + std::to_string(s);
      r.scope = "user:" + std::to_string(s);
      r.kind = "fact";
      r.status = "active";
      r.source = "user_declared";
      r.embedding_version = "m1";
      r.created_at = r.updated_at = r.last_accessed_at = t0;
      r.embedding.resize(k_dim);
      float sq = 0;
      for (auto& x : r.embedding) {
        x = normal(gen);
        sq += x * x;
      }
      for (auto& x : r.embedding) x /= std::sqrt(sq);
    }
    // the changed records: the first record of 10 scopes spread over the store, each restating
    // (in other case) the next record of its scope: one exact duplicate per changed scope
    auto mask = std::make_shared<std::vector<bool>>(n, false);
    std::size_t planted = 0;
    for (std::size_t c = 0; c < k_changed && c < scopes; ++c) {
      const std::size_t s = c * scopes / k_changed;
      const std::size_t i = s, j = s + scopes;  // records 0 and 1 of scope s
      if (j >= n) continue;
      rs[i].content = "The user prefers window seats on flight " + std::to_string(s) + ".";
      rs[j].content = "the user prefers window seats on flight " + std::to_string(s);
      (*mask)[i] = true;
      ++planted;
    }
    incremental_data out{memory_store<>::from_records(std::move(rs), k_dim), {}, planted};
    out.options.now = parse_timestamp("2025-01-15T00:00:00Z")->instant;
    out.options.changed = std::move(mask);
    return out;
  }();
  return d;
}

using memhealth_bench::seconds_since;

const report& full_mask_report() {
  static const report r = make_default_pipeline().run(data().store, data().options);
  return r;
}

bool same_findings(const report& a, const report& b) {
  if (a.findings.size() != b.findings.size() || a.records_checked != b.records_checked ||
      a.records_total != b.records_total)
    return false;
  for (std::size_t k = 0; k < a.findings.size(); ++k) {
    const auto &x = a.findings[k], &y = b.findings[k];
    if (x.kind != y.kind || x.severity != y.severity || x.record_ids != y.record_ids ||
        x.evidence != y.evidence)
      return false;
  }
  return true;
}

void finish(benchmark::State& state, const report& r, double sec, std::size_t subset) {
  const auto& d = data();
  state.counters["seconds"] = sec;
  state.counters["records"] = static_cast<double>(d.store.size());
  state.counters["subset"] = static_cast<double>(subset);
  state.counters["findings"] = static_cast<double>(r.findings.size());
  std::size_t exact = 0;
  for (const auto& f : r.findings) exact += f.kind == finding_kinds::exact_duplicate;
  if (exact != d.planted)
    state.SkipWithError("the planted exact duplicates of the changed scopes were not all found");
}

void check_incremental_full_mask(benchmark::State& state) {
  const auto& d = data();
  const auto p = make_default_pipeline();
  report r;
  double sec = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    r = p.run(d.store, d.options);
    sec = seconds_since(t0);
    state.SetIterationTime(sec);
  }
  finish(state, r, sec, d.store.size());
}
BENCHMARK(check_incremental_full_mask)
    ->Name("check_incremental/full_mask")
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

void subset_run(benchmark::State& state, bool warm) {
  const auto& d = data();
  const auto p = make_default_pipeline();
  normalized_text_hashes cache;
  std::vector<bool> changed(d.options.changed->begin(), d.options.changed->end());
  if (warm) (void)incremental_subset(d.store, changed, text_normalizer{}, &cache);
  report r;
  double sec = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    r = run_incremental(p, d.store, d.options, text_normalizer{}, warm ? &cache : nullptr);
    sec = seconds_since(t0);
    state.SetIterationTime(sec);
  }
  const std::size_t subset = incremental_subset(d.store, changed).size();
  finish(state, r, sec, subset);
  if (!same_findings(r, full_mask_report()))
    state.SkipWithError("the subset run's findings differ from the full-mask run's");
}

void check_incremental_subset_cold(benchmark::State& state) {
  subset_run(state, false);
}
BENCHMARK(check_incremental_subset_cold)
    ->Name("check_incremental/subset_cold")
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

void check_incremental_subset_warm(benchmark::State& state) {
  subset_run(state, true);
}
BENCHMARK(check_incremental_subset_warm)
    ->Name("check_incremental/subset_warm")
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace bench_incremental
