// Claims from free text (issue 18): extraction speed, and a full check with the claim judge
// against the cue judge it replaces, in one run.
//
// - claims/extract: `default_claim_extractor` over N memory statements (default 100,000; two
//   thirds English, one third Chinese, made from templates: holders, attitudes of both
//   polarities, negations, changes, attributes, rates, preferences between two options),
//   statements per second on one thread (counter items_per_second).
// - check100k/cue_judge and check100k/claim_judge: the default pipeline (structural,
//   duplicates, conflicts, staleness, scope, hygiene) over N records of the same statements in
//   scopes of 50 records (one user each), embedded with the lexical stand-in model (384
//   dimensions), once with `conflict_detector<default_conflict_judge>` (the judge before issue
//   18) and once with the default `conflict_detector<>` (claim_conflict_judge). Counters:
//   seconds, conflicts found. Goal: the claim judge's check at most 1.3x the cue judge's.
// - check100k/claim_judge_no_dup_guards: as check100k/claim_judge with the duplicate guards off
//   (`default_check_settings::duplicate_guards` = false, as before they were on by default), for
//   the cost of the guards; counter near_duplicates as well.
//
// Sizes: N = $MEMHEALTH_BENCH_CLAIMS_N (default 100,000); MEMHEALTH_BENCH_TINY=1 makes it 3,000.
//   ./memhealth-bench --benchmark_filter='claims|check100k'
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "memhealth/detect/claim_judge.hpp"
#include "memhealth/detect/default_pipeline.hpp"
#include "memhealth/embed/lexical_embedder.hpp"
#include "memhealth/store/memory_store.hpp"
#include "memhealth/text/claims.hpp"

#include "bench_common.hpp"

namespace bench_claims {

namespace mh = memhealth;

std::size_t claims_n() {
  return memhealth_bench::size_from_env("MEMHEALTH_BENCH_CLAIMS_N", 100000, 3000);
}

// Deterministic statements from templates (a small LCG picks the parts).
std::vector<std::string> make_statements(std::size_t n) {
  static const char* const en_holders[] = {
      "User", "I", "Priya", "The user's sister", "Tom", "User's manager"};
  static const char* const objects[] = {"jazz",   "coffee", "spicy food",     "cilantro",
                                        "hiking", "opera",  "green tea",      "running",
                                        "pork",   "sushi",  "dark chocolate", "podcasts"};
  static const char* const cities[] = {"Porto", "Madrid", "Lyon", "Graz", "Leeds", "Osaka"};
  static const char* const en_templates[] = {
      "%H loves %O",
      "%H doesn't like %O",
      "%H no longer eats %O",
      "%H can't stand %O",
      "%H lives in %C",
      "%H moved to %C",
      "%H drinks %O every morning",
      "%H rarely has %O",
      "%H switched from %O to %P",
      "%H prefers %O over %P",
      "%H avoids %O at business dinners",
      "%H has two kids and works at a bank in %C",
      "%H quit the choir last spring",
      "%H's favourite food is %O",
      "%H runs three times a week but never on Sundays",
  };
  static const char* const zh_templates[] = {
      "用户喜欢吃辣的",     "用户不吃香菜",     "我现在搬到深圳了", "用户每周健身三次",
      "用户的妈妈讨厌咖啡", "用户已经戒烟了",   "用户住在杭州",     "用户喜欢茶胜过咖啡",
      "用户出差时不喝酒",   "小林每天晚上跑步", "用户很少网购",     "用户的生日是5月20日",
  };
  std::uint64_t s = 0x9E3779B97F4A7C15ull;
  auto next = [&s](std::size_t mod) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::size_t>((s >> 33) % mod);
  };
  std::vector<std::string> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (i % 3 == 2) {
      out.emplace_back(zh_templates[next(std::size(zh_templates))]);
      continue;
    }
    std::string t = en_templates[next(std::size(en_templates))];
    auto put = [&](const char* key, const std::string& v) {
      if (const auto p = t.find(key); p != std::string::npos) t.replace(p, 2, v);
    };
    put("%H", en_holders[next(std::size(en_holders))]);
    const std::size_t o = next(std::size(objects));
    put("%O", objects[o]);
    put("%P", objects[(o + 1 + next(std::size(objects) - 1)) % std::size(objects)]);
    put("%C", cities[next(std::size(cities))]);
    out.push_back(std::move(t));
  }
  return out;
}

const std::vector<std::string>& statements() {
  static const std::vector<std::string> s = make_statements(claims_n());
  return s;
}

void claims_extract(benchmark::State& state) {
  const auto& texts = statements();
  const mh::default_claim_extractor read;
  (void)read("warm up the lexicon");
  std::size_t parsed = 0;
  for (auto _ : state) {
    parsed = 0;
    for (const auto& t : texts) parsed += read(t).parsed() ? 1 : 0;
    benchmark::DoNotOptimize(parsed);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * texts.size()));
  state.counters["statements"] = static_cast<double>(texts.size());
  state.counters["read_share"] = static_cast<double>(parsed) / static_cast<double>(texts.size());
  if (parsed * 10 < texts.size() * 9) state.SkipWithError("fewer than 90% of statements read");
}
BENCHMARK(claims_extract)->Name("claims/extract")->Unit(benchmark::kMillisecond)->UseRealTime();

const mh::memory_store<>& check_store() {
  static const mh::memory_store<> store = [] {
    const auto& texts = statements();
    const mh::lexical_embedder embed(384, 0);
    std::vector<mh::memory_record> recs(texts.size());
    for (std::size_t i = 0; i < texts.size(); ++i) {
      auto& r = recs[i];
      r.id = "m" + std::to_string(i);
      r.content = texts[i];
      r.scope = "user-" + std::to_string(i / 50);
      r.kind = "preference";
      r.status = "active";
      r.source = "user_declared";
      r.created_at = mh::parse_timestamp("2026-06-01T00:00:00Z");
      r.updated_at = r.created_at;
      r.embedding.resize(384);
      embed.embed(r.content, r.embedding);
    }
    return mh::memory_store<>::from_records(std::move(recs));
  }();
  return store;
}

template <class Judge, bool DuplicateGuards = true>
void check_with(benchmark::State& state) {
  const auto& store = check_store();
  mh::detect_options d;
  d.now = mh::parse_timestamp("2026-12-01T00:00:00Z")->instant;
  d.dimension = 384;
  mh::default_check_settings settings;
  settings.duplicate_guards = DuplicateGuards;
  auto p = mh::make_default_pipeline(settings);
  using cue_conflicts = mh::conflict_detector<mh::default_conflict_judge>;
  std::size_t conflicts = 0, near_duplicates = 0;
  double seconds = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    mh::report r;
    if constexpr (std::is_same_v<Judge, mh::default_conflict_judge>) {
      auto& c = std::get<2>(p.detectors());
      cue_conflicts cue;
      cue.candidate_threshold = c.candidate_threshold;
      cue.max_pairs_per_scope = c.max_pairs_per_scope;
      mh::pipeline q{
          std::get<0>(p.detectors()), std::get<1>(p.detectors()), cue,
          std::get<3>(p.detectors()), std::get<4>(p.detectors()), std::get<5>(p.detectors())};
      r = q.run(store, d);
    } else {
      r = p.run(store, d);
    }
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto counts = r.counts_by_kind();
    const auto it = counts.find("conflict");
    conflicts = it == counts.end() ? 0 : it->second;
    const auto nd = counts.find("near_duplicate");
    near_duplicates = nd == counts.end() ? 0 : nd->second;
    benchmark::DoNotOptimize(r);
  }
  state.counters["seconds"] = seconds;
  state.counters["conflicts"] = static_cast<double>(conflicts);
  state.counters["near_duplicates"] = static_cast<double>(near_duplicates);
  state.counters["records"] = static_cast<double>(store.size());
}
BENCHMARK(check_with<mh::default_conflict_judge>)
    ->Name("check100k/cue_judge")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->UseRealTime();
BENCHMARK(check_with<mh::claim_conflict_judge<>>)
    ->Name("check100k/claim_judge")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->UseRealTime();
BENCHMARK(check_with<mh::claim_conflict_judge<>, false>)
    ->Name("check100k/claim_judge_no_dup_guards")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->UseRealTime();

}  // namespace bench_claims
