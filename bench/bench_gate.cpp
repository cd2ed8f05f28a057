// gate/inspect: latency of `write_gate::inspect` (live/write_gate.hpp) at write time, one thread.
//
// One scope of n records (d = 384 random unit vectors, texts "User enjoys <a> and <b> on
// <weekday>s" from small word lists) is observed; then candidates are inspected one at a time:
// 9 in 10 a new random vector with a new text, 1 in 10 a slightly perturbed copy of an observed
// record's vector with its text reworded ("enjoys" -> "likes"): a near duplicate the gate must
// find, through the guards and the judge. Each inspect is timed alone (steady_clock); counters
// p50_ms, p99_ms, max_ms and found_near (near duplicates found among the planted ones, must be all
// of them). Sizes: scope 10,000 and 100,000 (MEMHEALTH_BENCH_GATE_N overrides the larger; tiny mode
// 500 and 2,000). Goal (issue 20): p99 <= 1 ms at 10,000 and <= 10 ms at 100,000.
//   ./memhealth-bench --benchmark_filter='gate/' --benchmark_out=gate.json
//   --benchmark_out_format=json
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "memhealth/live/write_gate.hpp"

#include "bench_common.hpp"

namespace bench_gate {

namespace mh = memhealth;

constexpr std::size_t k_dim = 384;
const char* const k_things[] = {"tea",   "jazz",    "hiking", "sushi",  "chess",   "opera",
                                "pizza", "cycling", "tennis", "poetry", "karaoke", "museums"};
const char* const k_days[] = {"Monday", "Tuesday",  "Wednesday", "Thursday",
                              "Friday", "Saturday", "Sunday"};

std::vector<float> random_unit(std::mt19937_64& rng) {
  std::normal_distribution<float> g;
  std::vector<float> v(k_dim);
  double s = 0;
  for (auto& x : v) x = g(rng), s += static_cast<double>(x) * x;
  for (auto& x : v) x = static_cast<float>(x / std::sqrt(s));
  return v;
}

mh::memory_record make(std::size_t i, std::string text, std::vector<float> e) {
  mh::memory_record r;
  r.id = "m" + std::to_string(i);
  r.content = std::move(text);
  r.embedding = std::move(e);
  r.embedding_version = "e5-small-v1";
  r.scope = "user:1";
  r.status = "active";
  r.source = "user_declared";
  r.kind = "preference";
  r.created_at = mh::parse_timestamp("2024-03-01T10:00:00Z");
  r.updated_at = r.created_at;
  return r;
}

std::string text_of(std::mt19937_64& rng, const char* verb) {
  std::uniform_int_distribution<std::size_t> t(0, 11), d(0, 6);
  return std::string("User ") + verb + " " + k_things[t(rng)] + " and " + k_things[t(rng)] +
         " on " + k_days[d(rng)] + "s";
}

void gate_inspect(benchmark::State& state) {
  const bool big = state.range(0) == 1;
  const std::size_t n = big ? memhealth_bench::size_from_env("MEMHEALTH_BENCH_GATE_N", 100000, 2000)
                            : (memhealth_bench::tiny() ? 500 : 10000);
  std::mt19937_64 rng(42);
  mh::write_gate<> gate;
  std::vector<std::vector<float>> vectors;
  std::vector<std::string> texts;
  std::vector<mh::memory_record> batch;
  batch.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    auto e = random_unit(rng);
    vectors.push_back(e);
    texts.push_back(text_of(rng, "enjoys"));
    batch.push_back(make(i, texts.back(), std::move(e)));
  }
  gate.observe_all(batch);
  batch.clear();
  const mh::utc_time now = mh::parse_timestamp("2024-07-15T00:00:00Z")->instant;

  std::vector<double> ms;
  std::size_t planted = 0, found = 0, next = n;
  std::normal_distribution<float> g;
  std::uniform_int_distribution<std::size_t> any(0, n - 1);
  for (auto _ : state) {
    std::vector<float> e;
    const bool near = next % 10 == 0;
    std::string text;
    if (near) {
      const std::size_t of = any(rng);
      e = vectors[of];
      for (auto& x : e) x += 0.002f * g(rng);
      text = "User likes" + texts[of].substr(std::string("User enjoys").size());
      ++planted;
    } else {
      e = random_unit(rng);
      text = text_of(rng, "enjoys");
    }
    const auto c = make(next++, std::move(text), std::move(e));
    const auto t0 = std::chrono::steady_clock::now();
    const auto v = gate.inspect(c, mh::write_kind::insert, now);
    const double t =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    benchmark::DoNotOptimize(v);
    ms.push_back(t);
    state.SetIterationTime(t / 1000.0);
    if (near && v.decision != mh::gate_decision::reject &&
        std::any_of(v.findings.begin(), v.findings.end(), [](const mh::finding& f) {
          return f.kind == mh::finding_kinds::near_duplicate ||
                 f.kind == mh::finding_kinds::conflict;
        }))
      ++found;
  }
  std::sort(ms.begin(), ms.end());
  const auto at = [&](double p) {
    return ms.empty() ? 0.0
                      : ms[std::min(ms.size() - 1,
                                    static_cast<std::size_t>(p * static_cast<double>(ms.size())))];
  };
  state.counters["scope_records"] = static_cast<double>(n);
  state.counters["p50_ms"] = at(0.50);
  state.counters["p99_ms"] = at(0.99);
  state.counters["max_ms"] = ms.empty() ? 0.0 : ms.back();
  state.counters["planted_near"] = static_cast<double>(planted);
  state.counters["found_near"] = static_cast<double>(found);
  if (found != planted) state.SkipWithError("a planted near duplicate was not found");
}

BENCHMARK(gate_inspect)
    ->Name("gate/inspect")
    ->ArgName("scope_100k")
    ->Arg(0)
    ->Arg(1)
    ->Iterations(400)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace bench_gate
