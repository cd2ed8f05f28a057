// Claims from free text (issue 18): extraction speed, and a full check with the claim judge
// against the cue judge it replaces, in one run.
//
// - claims/extract: `default_claim_extractor` over N memory statements (default 100,000; two
//   thirds English, one third Chinese, made from templates: holders, attitudes of both
//   polarities, negations, changes, attributes, rates, preferences between two options),
//   statements per second on one thread (counter items_per_second).
// - check100k/cue_judge and check100k/claim_judge: the default pipeline (structural,
//   duplicates, conflicts, staleness, scope, and the hygiene detectors: hygiene, secrets,
//   mojibake, content size, content time) over N records of the same statements in scopes of 50
//   records (one user each), embedded with the lexical stand-in model (384 dimensions), once with
//   the cue judge (`default_conflict_judge`, the judge before issue 18) in the conflict detector
//   and once as `make_default_pipeline` builds it (claim_conflict_judge); nothing else differs.
//   (Until 2026-12-07 the cue variant ran only the first six detectors: the hygiene detectors
//   joined the default pipeline after this benchmark was written, so the ratio counted their
//   cost against the claim judge.) Counters: seconds, conflicts found, findings and
//   findings_digest (32-bit FNV-1a of every finding; equal digests: the same findings, but for
//   a 1 in 2^32 chance). Goal: the claim judge's check at most 1.3x the cue judge's.
// - check100k/claim_judge_no_dup_guards: as check100k/claim_judge with the duplicate guards off
//   (`default_check_settings::duplicate_guards` = false, as before they were on by default), for
//   the cost of the guards; counter near_duplicates as well.
// - check100k_distinct/cue_judge and check100k_distinct/claim_judge: as check100k, but over N
//   records whose texts all differ (the statements above repeat: 100,000 records hold about
//   2,300 distinct texts, and the judge reads each distinct text once, so check100k hides the
//   cost of reading). Made from holders x predicates x objects x qualifiers x numbers (English)
//   and holders x qualifiers x verbs x objects x numbers (Chinese), two thirds English, one
//   third Chinese, in scopes of 50; each scope also holds a near copy of one of its statements
//   ("really" added) and a planted conflict ("I like X ..." against "I don't like X ...",
//   "小张…很喜欢X…" against "小张…不喜欢X…"). Fails unless all N texts differ, and unless each
//   judge finds a plausible number of conflicts (at least a quarter of the planted pairs, fewer
//   than one conflict per record). Counters as check100k, plus planted and planted_found. Compare
//   cpu_time (one process, one store): goal claim/cue <= 1.3.
//
// Sizes: N = $MEMHEALTH_BENCH_CLAIMS_N (default 100,000); MEMHEALTH_BENCH_TINY=1 makes it 3,000.
//   ./memhealth-bench --benchmark_filter='claims|check100k' --benchmark_repetitions=5
//     --benchmark_enable_random_interleaving=true   (repetitions interleaved: a shared machine)
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_set>
#include <variant>
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

// A store of `texts` in scopes of 50 records (one user each), embedded with the lexical stand-in.
mh::memory_store<> store_of(const std::vector<std::string>& texts) {
  {
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
  }
}

const mh::memory_store<>& check_store() {
  static const mh::memory_store<> store = store_of(statements());
  return store;
}

// Statements that all differ (see the file comment). Record i is in scope i / 50; positions 46
// and 47 of a scope are a statement and its near copy, 48 and 49 a planted conflict.
constexpr std::size_t planted_at = 48;

std::vector<std::string> make_distinct_statements(std::size_t n) {
  static const char* const en_holders[] = {"User", "The user",      "Priya",          "Tom",
                                           "Ana",  "User's sister", "User's manager", "Mr. Chen"};
  static const char* const en_preds[] = {
      "loves",         "likes",     "enjoys",     "hates",      "doesn't like", "can't stand",
      "no longer has", "often has", "rarely has", "avoids",     "is into",      "never skips",
      "started",       "quit",      "gave up",    "is tired of"};
  static const char* const en_objects[] = {
      "jazz",      "coffee",  "spicy food", "cilantro", "hiking",         "opera",
      "green tea", "running", "pork",       "sushi",    "dark chocolate", "podcasts",
      "red wine",  "yoga",    "tennis",     "seafood",  "horror films",   "board games",
      "mushrooms", "cycling", "oat milk",   "karaoke",  "curry",          "chess"};
  static const char* const en_quals[] = {
      "at home",       "on weekends",     "in the morning", "at business dinners",
      "with friends",  "when travelling", "after work",     "in winter",
      "at the office", "on holidays",     "with the kids",  "before bed"};
  static const char* const en_numbers[] = {"once a week", "twice a week",  "3 times a week",
                                           "every day",   "twice a month", "since 2018",
                                           "since 2021",  "for 5 years",   "for 2 years"};
  static const char* const zh_holders[] = {"用户",       "我",   "用户的妈妈",
                                           "用户的哥哥", "小林", "老王"};
  static const char* const zh_quals[] = {"在家", "周末", "早上",   "出差时", "和朋友一起",
                                         "晚上", "冬天", "在公司", "假期里", "下班后"};
  static const char* const zh_verbs[] = {"喜欢",   "爱吃", "不喜欢", "讨厌",   "不吃",   "常吃",
                                         "很少吃", "戒了", "不再吃", "开始吃", "受不了", "很喜欢"};
  static const char* const zh_objects[] = {"咖啡", "绿茶", "香菜", "火锅", "寿司",   "辣的", "面条",
                                           "米饭", "牛肉", "羊肉", "豆腐", "巧克力", "啤酒", "红酒",
                                           "饺子", "包子", "榴莲", "芒果", "酸奶",   "海鲜"};
  static const char* const zh_numbers[] = {"每周一次",   "每周两次",   "每周三次",
                                           "每天",       "每个月两次", "从2018年起",
                                           "从2021年起", "已经五年了", "有两年了"};
  constexpr std::size_t en_h = std::size(en_holders), en_p = std::size(en_preds),
                        en_o = std::size(en_objects), en_q = std::size(en_quals),
                        en_n = std::size(en_numbers);
  constexpr std::size_t zh_h = std::size(zh_holders), zh_q = std::size(zh_quals),
                        zh_v = std::size(zh_verbs), zh_o = std::size(zh_objects),
                        zh_n = std::size(zh_numbers);
  constexpr std::size_t en_m = en_h * en_p * en_o * en_q * en_n;  // 331,776
  constexpr std::size_t zh_m = zh_h * zh_q * zh_v * zh_o * zh_n;  // 129,600
  // t -> t * 48271 mod m is a bijection (48271 is a prime not dividing m): the k-th statement of
  // a language is combination (k * 48271) % m, so none repeats while k < m.
  constexpr std::uint64_t spread = 48271;
  // `adverb` goes after the holder: "" for the statement, "really" for its near copy
  auto english = [&](std::size_t k, std::string_view adverb) {
    std::size_t j = static_cast<std::size_t>((k % en_m) * spread % en_m);
    const std::size_t o = j % en_o;
    j /= en_o;
    const std::size_t q = j % en_q;
    j /= en_q;
    const std::size_t x = j % en_n;
    j /= en_n;
    const std::size_t p = j % en_p;
    j /= en_p;
    std::string t = en_holders[j % en_h];
    if (!adverb.empty()) (t += ' ') += adverb;
    return t + " " + en_preds[p] + " " + en_objects[o] + " " + en_quals[q] + " " + en_numbers[x];
  };
  auto chinese = [&](std::size_t k, std::string_view adverb) {
    std::size_t j = static_cast<std::size_t>((k % zh_m) * spread % zh_m);
    const std::size_t o = j % zh_o;
    j /= zh_o;
    const std::size_t q = j % zh_q;
    j /= zh_q;
    const std::size_t x = j % zh_n;
    j /= zh_n;
    const std::size_t v = j % zh_v;
    j /= zh_v;
    return std::string(zh_holders[j % zh_h]) + std::string(adverb) + zh_quals[q] + zh_verbs[v] +
           zh_objects[o] + "，" + zh_numbers[x];
  };
  std::vector<std::string> out;
  out.reserve(n);
  std::size_t en_k = 0, zh_k = 0;
  bool last_zh = false;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t at = i % 50, scope = i / 50;
    if (at == planted_at - 1 && i > 0) {
      // a near copy of the statement before
      out.push_back(last_zh ? chinese(zh_k - 1, "真的") : english(en_k - 1, "really"));
    } else if (at >= planted_at) {
      // the planted conflict: one object, scene and number per scope, and a holder no other
      // statement has ("I", 小张), so no statement repeats it
      const bool zh = scope % 3 == 2, second = at == planted_at + 1;
      const std::size_t k = zh ? scope / 3 : scope - scope / 3;
      if (zh)
        out.push_back(std::string("小张") + zh_quals[(k / zh_o) % zh_q] +
                      (second ? "不喜欢" : "很喜欢") + zh_objects[k % zh_o] + "，" +
                      zh_numbers[(k / (zh_o * zh_q)) % zh_n]);
      else
        out.push_back(std::string(second ? "I don't like " : "I like ") + en_objects[k % en_o] +
                      " " + en_quals[(k / en_o) % en_q] + " " +
                      en_numbers[(k / (en_o * en_q)) % en_n]);
    } else {
      last_zh = i % 3 == 2;
      out.push_back(last_zh ? chinese(zh_k++, "") : english(en_k++, ""));
    }
  }
  return out;
}

const std::vector<std::string>& distinct_statements() {
  static const std::vector<std::string> s = make_distinct_statements(claims_n());
  return s;
}

const mh::memory_store<>& distinct_store() {
  static const mh::memory_store<> store = store_of(distinct_statements());
  return store;
}

// The conflict detector of the default pipeline with the cue judge (the judge before issue 18)
// in place of the claim judge: same candidates, thresholds and budgets.
template <class D>
auto cue_judged(const D& d) {
  if constexpr (std::is_same_v<D, mh::conflict_detector<mh::claim_conflict_judge<>,
                                                        mh::scope_size_blocking>>) {
    mh::conflict_detector<mh::default_conflict_judge, mh::scope_size_blocking> cue;
    cue.candidate_threshold = d.candidate_threshold;
    cue.max_subject_block = d.max_subject_block;
    cue.max_pairs_per_scope = d.max_pairs_per_scope;
    cue.candidates = d.candidates;
    cue.kernel = d.kernel;
    return cue;
  } else {
    return d;
  }
}

// The default pipeline `p` with the cue judge: every detector of `p` (the hygiene detectors
// too), the conflict detector's judge swapped.
template <class P>
auto with_cue_judge(const P& p) {
  return std::apply([](const auto&... d) { return mh::pipeline{cue_judged(d)...}; }, p.detectors());
}

// A 32-bit FNV-1a digest of every finding of a report (kind, severity, detector, record ids,
// evidence keys and values, repair), exact as a double counter: two runs with one digest found
// the same findings (a speed change to a judge must leave it as it was).
std::uint32_t findings_digest(const mh::report& r) {
  std::uint32_t h = 2166136261u;
  const auto eat = [&h](std::string_view s) {
    for (const char c : s) h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
    h = (h ^ 0xffu) * 16777619u;  // a separator: ("ab", "c") differs from ("a", "bc")
  };
  for (const auto& f : r.findings) {
    eat(f.kind);
    eat(std::to_string(static_cast<int>(f.severity)));
    eat(f.detector);
    for (const auto& id : f.record_ids) eat(id);
    for (const auto& [key, value] : f.evidence) {
      eat(key);
      if (const auto* d = std::get_if<double>(&value)) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.17g", *d);
        eat(buf);
      } else if (const auto* i = std::get_if<std::int64_t>(&value)) {
        eat(std::to_string(*i));
      } else if (const auto* t = std::get_if<std::string>(&value)) {
        eat(*t);
      } else {
        eat(std::get<bool>(value) ? "true" : "false");
      }
    }
    eat(f.suggested_repair);
  }
  return h;
}

// The distinct-text store's check: fails (SkipWithError) unless all texts differ and the judge
// found a plausible number of conflicts.
constexpr bool distinct_texts = true;

template <class Judge, bool DuplicateGuards = true, bool Distinct = false>
void check_with(benchmark::State& state) {
  const auto& store = Distinct ? distinct_store() : check_store();
  if constexpr (Distinct) {
    const auto& texts = distinct_statements();
    const std::unordered_set<std::string_view> differ(texts.begin(), texts.end());
    state.counters["distinct_texts"] = static_cast<double>(differ.size());
    if (differ.size() != texts.size()) {
      state.SkipWithError("the distinct-text store repeats a text");
      return;
    }
  }
  // the lexicon loads once per process, outside the timing, whichever benchmark runs first (the
  // duplicate guards read claims under either judge)
  (void)mh::default_claim_extractor{}("warm up the lexicon");
  mh::detect_options d;
  d.now = mh::parse_timestamp("2026-12-01T00:00:00Z")->instant;
  d.dimension = 384;
  mh::default_check_settings settings;
  settings.duplicate_guards = DuplicateGuards;
  auto p = mh::make_default_pipeline(settings);
  const auto cue = with_cue_judge(p);
  std::size_t conflicts = 0, near_duplicates = 0, planted_found = 0, findings = 0;
  std::uint32_t digest = 0;
  double seconds = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    mh::report r;
    if constexpr (std::is_same_v<Judge, mh::default_conflict_judge>)
      r = cue.run(store, d);
    else
      r = p.run(store, d);
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto counts = r.counts_by_kind();
    const auto it = counts.find("conflict");
    conflicts = it == counts.end() ? 0 : it->second;
    const auto nd = counts.find("near_duplicate");
    near_duplicates = nd == counts.end() ? 0 : nd->second;
    planted_found = 0;
    if constexpr (Distinct)
      for (const auto& f : r.findings)
        if (f.kind == "conflict" && f.record_ids.size() == 2) {
          const std::size_t i = std::stoul(f.record_ids[0].substr(1));
          planted_found += i % 50 == planted_at && f.record_ids[1] == "m" + std::to_string(i + 1);
        }
    findings = r.findings.size();
    digest = findings_digest(r);
    benchmark::DoNotOptimize(r);
  }
  state.counters["seconds"] = seconds;
  state.counters["findings"] = static_cast<double>(findings);
  state.counters["findings_digest"] = static_cast<double>(digest);
  state.counters["conflicts"] = static_cast<double>(conflicts);
  state.counters["near_duplicates"] = static_cast<double>(near_duplicates);
  state.counters["records"] = static_cast<double>(store.size());
  if constexpr (Distinct) {
    const std::size_t planted = (store.size() + 50 - planted_at - 2) / 50;  // scopes with a pair
    state.counters["planted"] = static_cast<double>(planted);
    state.counters["planted_found"] = static_cast<double>(planted_found);
    if (planted_found * 4 < planted || conflicts >= store.size()) {
      const std::string why = "implausible conflict count: " + std::to_string(conflicts) +
                              " conflicts, " + std::to_string(planted_found) + " of " +
                              std::to_string(planted) + " planted pairs";
      state.SkipWithError(why.c_str());
    }
  }
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

BENCHMARK(check_with<mh::default_conflict_judge, true, distinct_texts>)
    ->Name("check100k_distinct/cue_judge")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK(check_with<mh::claim_conflict_judge<>, true, distinct_texts>)
    ->Name("check100k_distinct/claim_judge")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace bench_claims
