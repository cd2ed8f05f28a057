// Tests of audit/: the fault drill (drill.hpp: what each fault does, which ones the default tiers
// repair, its measurements on the sample store and LoCoMo), threshold tuning (tune.hpp), the claim
// judge's sweep (tune_judge.hpp), the snapshot diff (snapshot_diff.hpp) and the figures that span
// runs (run_history.hpp: repair success by recurrence, uptime).
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "memhealth/audit/drill.hpp"
#include "memhealth/audit/report.hpp"
#include "memhealth/audit/snapshot_diff.hpp"
#include "memhealth/audit/tune.hpp"
#include "memhealth/audit/tune_judge.hpp"
#include "memhealth/detect/default_pipeline.hpp"
#include "memhealth/detect/metadata_schema.hpp"
#include "memhealth/detect/report_json.hpp"
#include "memhealth/embed/embedder.hpp"
#include "memhealth/embed/lexical_embedder.hpp"
#include "memhealth/io/import_locomo.hpp"
#include "memhealth/io/jsonl.hpp"
#include "memhealth/io/metadata_schema_json.hpp"
#include "memhealth/repair/finding_identity.hpp"
#include "memhealth/repair/plan_json.hpp"
#include "memhealth/repair/planner.hpp"
#include "memhealth/store/run_history.hpp"

#include "repair_test_support.hpp"
#include "test_data.hpp"

#ifndef MEMHEALTH_SOURCE_DIR
#define MEMHEALTH_SOURCE_DIR "."
#endif

namespace audit_test {
namespace mh = memhealth;

namespace {

constexpr std::int64_t day = 86'400'000;
// UTC instant of an ISO 8601 text (the test's own literals, always valid).
mh::utc_time at(const char* iso) {
  return mh::parse_timestamp(iso).value().instant;
}
const std::int64_t now_ms = at("2024-07-15T00:00:00Z").time_since_epoch().count();

// 40 healthy records: two scopes, dense random unit vectors (d = 16, seeded), metadata topic,
// recent times, one model version.
std::vector<mh::memory_record> healthy_store() {
  mh::detail::drill::rng g{99};
  std::vector<mh::memory_record> v;
  for (int k = 0; k < 40; ++k) {
    mh::memory_record r;
    r.id = "m" + std::to_string(100 + k);
    r.content = "Memory number " + std::to_string(k) + " about topic " + std::to_string(k * 7);
    r.embedding = mh::detail::drill::random_unit(16, g);
    r.embedding_version = "model-a";
    r.scope = k % 2 ? "user:1" : "user:2";
    r.status = "active";
    r.source = "user_declared";
    r.kind = "fact";
    r.metadata.emplace("topic", std::string(k % 3 ? "work" : "home"));
    r.created_at = mh::timestamp_from_epoch_ms(now_ms - 5 * day);
    r.updated_at = mh::timestamp_from_epoch_ms(now_ms - 2 * day);
    v.push_back(std::move(r));
  }
  return v;
}

// Unit vector c e_i + sqrt(1 - c^2) e_j of dimension 16 (c = 1: e_i).
std::vector<float> mix(std::size_t i, std::size_t j, double c) {
  std::vector<float> v(16, 0.0f);
  v[i] = static_cast<float>(c);
  v[j] += static_cast<float>(std::sqrt(1 - c * c));
  return v;
}

// A stand-in model that reproduces a store: each record's content maps to its stored vector,
// and the test's pair texts to vectors placed by hand (unknown text: a zero vector).
struct fake_model {
  std::map<std::string, std::vector<float>, std::less<>> vectors;
  std::vector<float> operator()(std::string_view text) const {
    const auto it = vectors.find(text);
    return it != vectors.end() ? it->second : std::vector<float>(16, 0.0f);
  }
};

// Two labelled pairs of pairs.tsv placed by the fake model: the paraphrase at cosine 0.97 (over
// the near-duplicate threshold 0.92), the contradiction at 0.9 (over the conflict candidate
// threshold 0.6), on axes e0..e3, away from the store's random vectors.
std::shared_ptr<const mh::drill_pairs> test_pairs() {
  auto p = std::make_shared<mh::drill_pairs>();
  p->paraphrases.push_back({"en-par-002", "paraphrase", "User is allergic to shellfish",
                            "User has a shellfish allergy"});
  p->contradictions.push_back(
      {"en-ant-001", "antonym", "User loves jazz", "User can't stand jazz"});
  p->source = "two test pairs";
  return p;
}

template <class Records>
void use_fake_model(mh::drill_options& opt, const Records& recs) {
  fake_model m;
  for (const auto& r : recs)
    m.vectors[std::string(mh::field::content(r))] =
        std::vector<float>(mh::field::embedding(r).begin(), mh::field::embedding(r).end());
  m.vectors["User is allergic to shellfish"] = mix(0, 1, 1.0);
  m.vectors["User has a shellfish allergy"] = mix(0, 1, 0.97);
  m.vectors["User loves jazz"] = mix(2, 3, 1.0);
  m.vectors["User can't stand jazz"] = mix(2, 3, 0.9);
  opt.embed = m;
  opt.embed_version = "fake-model";
  opt.pairs = test_pairs();
}

bool is_text_kind(mh::fault_kind k) {
  return k == mh::fault_kind::paraphrased_duplicate || k == mh::fault_kind::free_text_conflict;
}

// The text faults of a drill on the built-in pairs: each pair is one of the built-in set, and a
// detected one has, under the store's embedder e, at least the cosine its detector needs (near
// duplicate 0.92, conflict candidate 0.6): the drill measured the detectors on the pairs' own
// vectors. Returns how many text faults there were.
std::size_t check_text_faults(const mh::drill_result& r, const mh::lexical_embedder& e) {
  const auto& b = mh::builtin_drill_pairs();
  std::size_t n = 0;
  for (const auto& f : r.faults) {
    if (!is_text_kind(f.kind)) continue;
    ++n;
    CAPTURE(f.pair_id);
    const auto& pool =
        f.kind == mh::fault_kind::paraphrased_duplicate ? b.paraphrases : b.contradictions;
    const auto it = std::find_if(pool.begin(), pool.end(),
                                 [&](const mh::drill_text_pair& p) { return p.id == f.pair_id; });
    REQUIRE(it != pool.end());
    std::vector<float> x(e.dimension()), y(e.dimension());
    e.embed(it->a, x);
    e.embed(it->b, y);
    double dot = 0;
    for (std::size_t k = 0; k < x.size(); ++k) dot += static_cast<double>(x[k]) * y[k];
    const double need = f.kind == mh::fault_kind::paraphrased_duplicate ? 0.92 : 0.6;
    if (f.detected) CHECK(dot >= need - 1e-6);
  }
  CHECK(n >= 2);
  return n;
}

const mh::drill_kind_result& kind_of(const mh::drill_result& r, mh::fault_kind k) {
  auto it = std::find_if(r.per_kind.begin(), r.per_kind.end(),
                         [&](const auto& x) { return x.kind == k; });
  REQUIRE(it != r.per_kind.end());
  return *it;
}

}  // namespace

TEST_CASE("drill: every fault on a healthy hand-built store, and which tiers repair it") {
  mh::drill_options opt;
  opt.seed = 7;
  opt.rate = 0.025;  // round(0.025 x 40 eligible) = 1 fault per kind
  opt.now = mh::timestamp_from_epoch_ms(now_ms).instant;
  use_fake_model(opt, healthy_store());
  const auto r = mh::run_drill(healthy_store(), opt);
  CHECK(r.records == 40);
  CHECK(r.eligible == 40);
  CHECK(r.findings_baseline.empty());
  CHECK(r.schema_note.find("'topic'") != std::string::npos);
  // the fake model reproduces the store (first 8 eligible records checked): it embeds the text
  CHECK(r.text_embedder == "fake-model");
  CHECK(r.text_embedder_checked == 8);
  CHECK(r.text_embedder_note.empty());
  CHECK(r.pairs_source == "two test pairs");
  REQUIRE(r.per_kind.size() == 13);
  REQUIRE(r.faults.size() == 13);
  // 13 targets; exact, paraphrase and scope-leak add one record each, each conflict two
  CHECK(r.untouched == 40 - 13);
  for (const auto& k : r.per_kind) {
    CAPTURE(mh::to_string(k.kind));
    CHECK(k.injected == 1);
    CHECK(k.detected == 1);
    CHECK(k.coverage == 1.0);
    // Wilson 95% for 1 of 1: [1 / (1 + z^2), 1] = [0.20654931, 1]
    CHECK(k.coverage_ci.low == doctest::Approx(0.20654931).epsilon(1e-6));
    CHECK(k.coverage_ci.high == 1.0);
  }
  CHECK(r.coverage == 1.0);
  // 13 of 13: [13 / (13 + z^2), 1] = [0.77190463, 1]
  CHECK(r.coverage_ci.low == doctest::Approx(0.77190463).epsilon(1e-6));
  CHECK(r.false_positive_records == 0);
  CHECK(r.baseline_flagged_records == 0);
  CHECK(r.false_positive_records_net == 0);
  // 0 of 27 untouched: [0, z^2 / (27 + z^2)] = [0, 0.12455503]
  CHECK(r.false_positive_ci.low == 0.0);
  CHECK(r.false_positive_ci.high == doctest::Approx(0.12455503).epsilon(1e-6));
  CHECK(r.healthy_records_changed == 0);
  // tier 1 and approved tier 2 repair: merges (exact, paraphrase), conflict resolution, metadata
  // defaults, dangling links, down-weighting. Re-embedding and manual review are tier 3.
  using fk = mh::fault_kind;
  for (fk k : {fk::exact_duplicate, fk::paraphrased_duplicate, fk::conflicting_claim,
               fk::free_text_conflict, fk::missing_metadata, fk::dangling_link, fk::stale_record}) {
    CAPTURE(mh::to_string(k));
    CHECK(kind_of(r, k).attempted == 1);
    CHECK(kind_of(r, k).repaired == 1);
  }
  for (fk k : {fk::dimension_error, fk::nan_vector, fk::mixed_embedding_version,
               fk::zero_padded_vector, fk::scope_leak, fk::junk_content}) {
    CAPTURE(mh::to_string(k));
    CHECK(kind_of(r, k).attempted == 0);
  }
  CHECK(r.attempted == 7);
  CHECK(r.repaired == 7);
  CHECK(r.repair_success == 1.0);
  // shapes of the faults
  for (const auto& f : r.faults) {
    CAPTURE(mh::to_string(f.kind));
    if (f.kind == fk::conflicting_claim) {
      REQUIRE(f.ids.size() == 2);
      CHECK(f.ids[0].rfind("drill-" + std::string(mh::to_string(f.kind)) + "-", 0) == 0);
    } else if (f.kind == fk::free_text_conflict) {  // the target says a, its copy b
      REQUIRE(f.ids.size() == 2);
      CHECK(f.ids[0] == f.target);
      CHECK(f.ids[1].rfind("drill-free_text_conflict-", 0) == 0);
      CHECK(f.pair_id == "en-ant-001");
    } else if (f.kind == fk::exact_duplicate || f.kind == fk::paraphrased_duplicate) {
      REQUIRE(f.ids.size() == 2);
      CHECK(f.ids[1] == f.target);
      CHECK(f.pair_id == (f.kind == fk::paraphrased_duplicate ? "en-par-002" : ""));
    } else if (f.kind == fk::scope_leak) {
      REQUIRE(f.ids.size() == 1);
      CHECK(f.ids[0] != f.target);
    } else {
      CHECK(f.ids == std::vector<std::string>{f.target});
    }
  }
  CHECK(r.findings_injected.at("conflict") == 2);  // the structured one and the free-text one
  CHECK(r.findings_injected.at("stale") == 1);
}

TEST_CASE("drill: deterministic for a seed, different for another") {
  mh::drill_options opt;
  opt.now = mh::timestamp_from_epoch_ms(now_ms).instant;
  opt.rate = 0.05;  // round(0.05 x 40) = 2 per kind (mixed versions capped at 40 / 4 = 10: not hit)
  const auto a = mh::run_drill(healthy_store(), opt);
  const auto b = mh::run_drill(healthy_store(), opt);
  opt.seed = 2;
  const auto c = mh::run_drill(healthy_store(), opt);
  auto targets = [](const mh::drill_result& r) {
    std::vector<std::string> t;
    for (const auto& f : r.faults) t.push_back(f.target);
    return t;
  };
  CHECK(a.injected == 26);
  CHECK(targets(a) == targets(b));
  CHECK(a.findings_injected == b.findings_injected);
  CHECK(targets(a) != targets(c));
}

TEST_CASE("drill: bad options are errors, a store too small says so") {
  mh::drill_options opt;
  opt.rate = 0;
  CHECK_THROWS_AS(mh::run_drill(healthy_store(), opt), mh::error);
  opt.rate = 1.5;
  CHECK_THROWS_AS(mh::run_drill(healthy_store(), opt), mh::error);
  opt.rate = 0.02;
  opt.kinds.clear();
  CHECK_THROWS_AS(mh::run_drill(healthy_store(), opt), mh::error);
  // 5 records, 12 kinds of one fault each: the first 5 kinds get a target, the rest note why not
  auto few = healthy_store();
  few.resize(5);
  mh::drill_options o2;
  o2.now = mh::timestamp_from_epoch_ms(now_ms).instant;
  const auto r = mh::run_drill(few, o2);
  CHECK(r.injected == 5);
  CHECK(r.per_kind[5].injected == 0);
  CHECK(r.per_kind[5].note == "ran out of eligible records");
}

TEST_CASE("drill: Wilson score interval, worked by hand") {
  // z = 1.959963984540054, z^2 = 3.8414588207
  // 5 of 10: centre 0.5, half = z / (1 + z^2/10) * sqrt(0.025 + z^2/400) = 0.26340691;
  // Newcombe (Statistics in Medicine 17, 1998, table I) gives 0.2366 to 0.7634
  auto ci = mh::wilson_interval(5, 10);
  CHECK(ci.low == doctest::Approx(0.23659309).epsilon(1e-6));
  CHECK(ci.high == doctest::Approx(0.76340691).epsilon(1e-6));
  // 0 of 10: [0, z^2 / (10 + z^2)]; 10 of 10: [10 / (10 + z^2), 1]
  ci = mh::wilson_interval(0, 10);
  CHECK(ci.low == 0.0);
  CHECK(ci.high == doctest::Approx(0.27753280).epsilon(1e-6));
  ci = mh::wilson_interval(10, 10);
  CHECK(ci.low == doctest::Approx(0.72246720).epsilon(1e-6));
  CHECK(ci.high == 1.0);
  ci = mh::wilson_interval(0, 0);  // no trials: no information
  CHECK(ci.low == 0.0);
  CHECK(ci.high == 1.0);
  ci = mh::wilson_interval(12, 10);  // k > n is read as n
  CHECK(ci.low == doctest::Approx(0.72246720).epsilon(1e-6));
}

TEST_CASE(
    "drill: false-positive rate, baseline and net on a store whose flagged records are known") {
  // One scope. 40 healthy records; u-jazz, healthy, "User adores jazz" on a vector at cosine 0.97
  // to e2; 25 records of embedding version model-b against 44 of model-a (one mixed-version
  // finding, which lists only 20 of the 25: all 25 are flagged); a junk record; an exact
  // duplicate pair. Flagged on the original store: 25 + 1 + 2 = 28 records.
  auto recs = healthy_store();
  for (auto& r : recs) r.scope = "user:1";
  const auto like = [&](std::string id, std::string content, std::vector<float> e) {
    mh::memory_record r = recs.front();
    r.id = std::move(id);
    r.content = std::move(content);
    r.embedding = std::move(e);
    return r;
  };
  std::vector<mh::memory_record> extra;
  extra.push_back(like("u-jazz", "User adores jazz", mix(2, 4, 0.97)));
  mh::detail::drill::rng g{5};
  for (int k = 0; k < 25; ++k) {
    auto r =
        like("b" + std::to_string(k),
             "Minority memory " + std::to_string(k) + " about subject " + std::to_string(k * 11),
             mh::detail::drill::random_unit(16, g));
    r.embedding_version = "model-b";
    extra.push_back(std::move(r));
  }
  extra.push_back(
      like("junk-1", "lorem ipsum dolor sit amet", mh::detail::drill::random_unit(16, g)));
  const auto shared = mh::detail::drill::random_unit(16, g);
  extra.push_back(like("dup-1", "User keeps a spare key under the mat", shared));
  extra.push_back(like("dup-2", "User keeps a spare key under the mat", shared));
  for (auto& r : extra) recs.push_back(std::move(r));
  REQUIRE(recs.size() == 69);

  // One free-text contradiction (rate 0.02 x 41 eligible -> 1): the target says "User loves
  // jazz" (e2), its copy "User can't stand jazz" (cosine 0.9 to e2). u-jazz is then at 0.97 to
  // the target (a near duplicate of it) and at 0.873 to the copy (a candidate the judge reads as
  // adores / can't stand): the injection makes the detectors flag this one healthy record.
  mh::drill_options opt;
  opt.now = mh::timestamp_from_epoch_ms(now_ms).instant;
  opt.kinds = {mh::fault_kind::free_text_conflict};
  use_fake_model(opt, recs);
  const auto r = mh::run_drill(recs, opt);
  CHECK(r.records == 69);
  CHECK(r.eligible == 41);  // 40 healthy + u-jazz; the 5 unlisted model-b records are flagged too
  REQUIRE(r.faults.size() == 1);
  REQUIRE(r.faults[0].target != "u-jazz");  // seed 1 picks a healthy record
  CHECK(r.detected == 1);
  CHECK(r.untouched == 68);  // the 69 original records but the target
  CHECK(r.baseline_flagged_records == 28);
  CHECK(r.false_positive_records == 29);  // the 28 still flagged, and u-jazz
  CHECK(r.false_positive_records_net == 1);
  CHECK(r.false_positive_ids == std::vector<std::string>{"u-jazz"});
  CHECK(r.baseline_flag_rate == doctest::Approx(28.0 / 68));
  CHECK(r.false_positive_rate == doctest::Approx(29.0 / 68));
  CHECK(r.false_positive_rate_net == doctest::Approx(1.0 / 68));
  CHECK(r.faults[0].pair_id == "en-ant-001");
  // Wilson 95% intervals, by the formula: 28/68, 29/68, 1/68
  CHECK(r.baseline_flag_ci.low == doctest::Approx(0.30258020).epsilon(1e-6));
  CHECK(r.baseline_flag_ci.high == doctest::Approx(0.53038533).epsilon(1e-6));
  CHECK(r.false_positive_ci.low == doctest::Approx(0.31597243).epsilon(1e-6));
  CHECK(r.false_positive_ci.high == doctest::Approx(0.54483218).epsilon(1e-6));
  CHECK(r.false_positive_net_ci.low == doctest::Approx(0.00260068).epsilon(1e-6));
  CHECK(r.false_positive_net_ci.high == doctest::Approx(0.07870973).epsilon(1e-6));
  // and the repair acts on the false positive: u-jazz, healthy, is merged into or loses to an
  // injected record (the only healthy record any finding names)
  CHECK(r.healthy_records_changed == 1);
}

TEST_CASE(
    "drill: the built-in text pairs, a pairs file, and a store whose vectors it cannot reproduce") {
  // The built-in pairs are exactly the paraphrase rows and the conflict rows of the four
  // judge-pair files, in file order.
  std::vector<mh::judge_pair> par, con;
  for (const char* f : {"pairs.tsv", "dev_pairs.tsv", "dev_pairs_c.tsv", "heldout_c.tsv"}) {
    const auto set = mh::read_judge_pairs(std::filesystem::path(MEMHEALTH_SOURCE_DIR) /
                                          "tests/data/judge_pairs" / f);
    for (const auto& p : set.pairs) {
      if (p.category == "paraphrase") par.push_back(p);
      if (p.label == mh::judge_label::conflict) con.push_back(p);
    }
  }
  const auto& b = mh::builtin_drill_pairs();
  REQUIRE(b.paraphrases.size() == 42);      // 15 + 8 + 10 + 9 (the READMEs' tables)
  REQUIRE(b.contradictions.size() == 505);  // 131 + 84 + 160 + 130
  REQUIRE(par.size() == 42);
  REQUIRE(con.size() == 505);
  for (std::size_t k = 0; k < par.size(); ++k) {
    CAPTURE(par[k].id);
    CHECK(b.paraphrases[k].id == par[k].id);
    CHECK(b.paraphrases[k].a == par[k].a);
    CHECK(b.paraphrases[k].b == par[k].b);
  }
  for (std::size_t k = 0; k < con.size(); ++k) {
    CAPTURE(con[k].id);
    CHECK(b.contradictions[k].id == con[k].id);
    CHECK(b.contradictions[k].category == con[k].category);
    CHECK(b.contradictions[k].a == con[k].a);
    CHECK(b.contradictions[k].b == con[k].b);
  }

  // A SICK file gives contradictions only (no paraphrase label): the paraphrase kind is not
  // injected and says why.
  const auto dir = std::filesystem::temp_directory_path() / "memhealth-audit-drill-pairs";
  std::filesystem::create_directories(dir);
  const auto sick = dir / "sick.txt";
  {
    std::ofstream out(sick);
    out << "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n"
        << "1\tA man is playing a guitar\tA man is not playing a guitar\t3.9\tCONTRADICTION\n"
        << "2\tA dog runs\tAn animal runs\t4.1\tENTAILMENT\n";
  }
  const auto pairs = std::make_shared<const mh::drill_pairs>(mh::read_drill_pairs(sick));
  CHECK(pairs->paraphrases.empty());
  REQUIRE(pairs->contradictions.size() == 1);
  CHECK(pairs->contradictions[0].a == "A man is playing a guitar");
  mh::drill_options opt;
  opt.now = mh::timestamp_from_epoch_ms(now_ms).instant;
  opt.kinds = {mh::fault_kind::paraphrased_duplicate, mh::fault_kind::free_text_conflict};
  opt.pairs = pairs;
  const auto r = mh::run_drill(healthy_store(), opt);
  CHECK(r.pairs_source == sick.string());
  CHECK(kind_of(r, mh::fault_kind::paraphrased_duplicate).injected == 0);
  CHECK(kind_of(r, mh::fault_kind::paraphrased_duplicate).note ==
        "no paraphrase pairs in " + sick.string());
  CHECK(kind_of(r, mh::fault_kind::free_text_conflict).injected == 1);
  CHECK(r.faults.at(0).pair_id == "1");
  // healthy_store's vectors are random ("model-a"): no embedder reproduces them, so the target
  // and its copy are embedded by the lexical embedder of the store's dimension, and the result
  // says so
  CHECK(r.text_embedder == "lexical-v1-d16-s0");
  CHECK(r.text_embedder_checked == 8);
  CHECK(r.text_embedder_note.find("'model-a'") != std::string::npos);
  CHECK(r.text_embedder_note.find("lexical, not the store model's") != std::string::npos);
  std::filesystem::remove_all(dir);
}

namespace drillnote {
// A user's record type with other field names, second-resolution times and no claim, metadata,
// related ids, kind or weight; its image is an ADL pair.
struct note {
  std::string key, text, owner, model, state = "active", merged_into;
  std::vector<float> vec;
  std::chrono::sys_seconds created{}, modified{};
  std::vector<std::string> history;
};
std::string memhealth_encode_image(const note& n) {
  return nlohmann::json{{"key", n.key},
                        {"text", n.text},
                        {"owner", n.owner},
                        {"model", n.model},
                        {"state", n.state},
                        {"merged_into", n.merged_into},
                        {"vec", n.vec},
                        {"created", n.created.time_since_epoch().count()},
                        {"modified", n.modified.time_since_epoch().count()},
                        {"history", n.history}}
      .dump();
}
note memhealth_decode_image(std::string_view s, std::type_identity<note>) {
  const auto j = nlohmann::json::parse(s);
  note n;
  n.key = j.at("key").get<std::string>();
  n.text = j.at("text").get<std::string>();
  n.owner = j.at("owner").get<std::string>();
  n.model = j.at("model").get<std::string>();
  n.state = j.at("state").get<std::string>();
  n.merged_into = j.at("merged_into").get<std::string>();
  n.vec = j.at("vec").get<std::vector<float>>();
  n.created = std::chrono::sys_seconds{std::chrono::seconds{j.at("created").get<std::int64_t>()}};
  n.modified = std::chrono::sys_seconds{std::chrono::seconds{j.at("modified").get<std::int64_t>()}};
  n.history = j.at("history").get<std::vector<std::string>>();
  return n;
}
}  // namespace drillnote

}  // namespace audit_test
template <>
struct memhealth::record_traits<audit_test::drillnote::note> {
  static constexpr auto id = &audit_test::drillnote::note::key;
  static constexpr auto content = &audit_test::drillnote::note::text;
  static constexpr auto embedding = &audit_test::drillnote::note::vec;
  static constexpr auto embedding_version = &audit_test::drillnote::note::model;
  static constexpr auto scope = &audit_test::drillnote::note::owner;
  static constexpr auto status = &audit_test::drillnote::note::state;
  static constexpr auto created_at = &audit_test::drillnote::note::created;
  static constexpr auto updated_at = &audit_test::drillnote::note::modified;
  static constexpr auto duplicate_of = &audit_test::drillnote::note::merged_into;
  static constexpr auto related_notes = &audit_test::drillnote::note::history;
};

namespace audit_test {
TEST_CASE(
    "drill: a user's record type takes the faults its fields allow, and says which it cannot") {
  // The same 40 healthy records as memory_record, mapped onto drillnote::note.
  std::vector<drillnote::note> notes;
  for (const auto& r : healthy_store()) {
    drillnote::note n;
    n.key = r.id;
    n.text = r.content;
    n.owner = r.scope;
    n.model = r.embedding_version;
    n.vec = r.embedding;
    n.created = std::chrono::floor<std::chrono::seconds>(r.created_at->instant);
    n.modified = std::chrono::floor<std::chrono::seconds>(r.updated_at->instant);
    notes.push_back(std::move(n));
  }
  using fk = mh::fault_kind;
  // What each fault needs, worked out from the type: no claim, metadata or related ids.
  CHECK(mh::detail::drill::missing_fields<drillnote::note>(fk::conflicting_claim) ==
        "claim (assignable from fact_claim)");
  CHECK(mh::detail::drill::missing_fields<drillnote::note>(fk::missing_metadata) ==
        "metadata (a map with erase(key))");
  CHECK(mh::detail::drill::missing_fields<drillnote::note>(fk::dangling_link) ==
        "related_ids (a list with push_back)");
  CHECK(mh::detail::drill::missing_fields<drillnote::note>(fk::stale_record)
            .empty());  // sys_seconds times
  CHECK(mh::detail::drill::missing_fields<mh::memory_record>(fk::conflicting_claim).empty());

  mh::drill_options opt;
  opt.seed = 7;
  opt.rate = 0.025;  // one fault per kind
  opt.now = mh::timestamp_from_epoch_ms(now_ms).instant;
  use_fake_model(opt, healthy_store());
  const auto r = mh::run_drill(notes, opt);
  CHECK(r.records == 40);
  CHECK(r.eligible == 40);
  CHECK(r.findings_baseline.empty());
  CHECK(r.schema_note.empty());  // no metadata: no key to require
  REQUIRE(r.per_kind.size() == 13);
  const std::set<fk> cannot{fk::conflicting_claim, fk::missing_metadata, fk::dangling_link};
  for (const auto& k : r.per_kind) {
    CAPTURE(mh::to_string(k.kind));
    if (cannot.contains(k.kind)) {
      CHECK(k.injected == 0);
      CHECK(k.note.rfind("the record type has no writable ", 0) == 0);
    } else {
      CHECK(k.injected == 1);
      CHECK(k.detected == 1);
      CHECK(k.note.empty());
    }
  }
  CHECK(r.injected == 10);
  CHECK(r.coverage == 1.0);
  CHECK(r.untouched == 40 - 10);  // one target per injected kind
  CHECK(r.false_positive_records == 0);
  CHECK(r.healthy_records_changed == 0);
  // Merges write status, duplicate_of and related_notes, which the type has: both duplicates are
  // repaired. Down-weighting needs effective_weight, which it lacks: the stale record is found and
  // its action refused (not attempted). The rest are tier 3, as for memory_record.
  CHECK(kind_of(r, fk::exact_duplicate).repaired == 1);
  CHECK(kind_of(r, fk::paraphrased_duplicate).repaired == 1);
  CHECK(kind_of(r, fk::stale_record).attempted == 0);
  // the free-text conflict needs only id, content and an embedding: injected and found; its
  // resolution links the winner to the loser (supersedes), a field the type lacks: refused
  CHECK(kind_of(r, fk::free_text_conflict).detected == 1);
  CHECK(kind_of(r, fk::free_text_conflict).attempted == 0);
  CHECK(r.attempted == 2);
  CHECK(r.repaired == 2);
  // The faults' shapes: the copy's new id, the paraphrase's text.
  for (const auto& f : r.faults) {
    CAPTURE(mh::to_string(f.kind));
    if (f.kind == fk::exact_duplicate || f.kind == fk::paraphrased_duplicate) {
      REQUIRE(f.ids.size() == 2);
      CHECK(f.ids[0].rfind("drill-" + std::string(mh::to_string(f.kind)) + "-", 0) == 0);
      CHECK(f.ids[1] == f.target);
    }
  }
}

TEST_CASE("drill: the bundled sample store (with its schema)") {
  const auto loaded =
      mh::read_jsonl(std::filesystem::path(MEMHEALTH_SOURCE_DIR) / "data/sample_store.jsonl");
  REQUIRE(loaded.issues.empty());
  mh::drill_options opt;
  opt.now = at("2024-07-15T00:00:00Z");
  opt.check.schema.required["topic"] = mh::metadata_types::string;
  opt.plan.metadata_defaults["topic"] = std::string("general");
  const auto r = mh::run_drill(loaded.records, opt);
  CHECK(r.records == 51);
  // The store's first 25 records are embedded by lexical_embedder(384, 1), the other 26 by
  // (384, 2) (a model switch halfway, examples/make_sample_store.cpp): every -s1 record is
  // flagged (minority version), so no target is one, and renaming a single -s2 record would
  // tie the two versions (a tie goes to the smaller text, -s1): no mixed-version fault.
  CHECK(r.baseline_flagged_records >= 25);
  const auto& mixed = kind_of(r, mh::fault_kind::mixed_embedding_version);
  CHECK(mixed.injected == 0);
  CHECK(mixed.note ==
        "capped at 0 so that the store's majority version stays the majority (it leads the next "
        "version by 1 record)");
  CHECK(r.injected == 12);
  // the drill reproduces the eligible records' vectors (-s2) and embeds the injected text so
  CHECK(r.text_embedder == "lexical-v1-d384-s2");
  CHECK(r.text_embedder_note.empty());
  for (const auto& k : r.per_kind) {
    CAPTURE(mh::to_string(k.kind));
    if (k.kind == mh::fault_kind::mixed_embedding_version || is_text_kind(k.kind)) continue;
    CHECK(k.injected == 1);
    CHECK(k.coverage >= 0.95);
  }
  check_text_faults(r, mh::lexical_embedder(384, 2));
  CHECK(r.false_positive_rate_net <= 0.02);
  CHECK(r.healthy_records_changed == 0);
  CHECK(r.repair_success == 1.0);
}

TEST_CASE("drill: LoCoMo conversations embedded by the lexical embedder") {
  MEMHEALTH_TEST_DATA(locomo, "locomo");
  std::vector<mh::memory_record> recs;
  for (const char* f : {"26.json", "30.json", "41.json"}) {
    auto one = mh::import_locomo(locomo / f);
    for (auto& r : one.records) recs.push_back(std::move(r));
  }
  REQUIRE(recs.size() == 677);
  mh::embed_missing(recs, mh::lexical_embedder(384, 1));
  mh::drill_options opt;
  opt.seed = 11;
  opt.now = at("2023-12-31T00:00:00Z");
  const auto r = mh::run_drill(std::move(recs), opt);
  CAPTURE(r.eligible);
  CHECK(r.text_embedder == "lexical-v1-d384-s1");
  CHECK(r.text_embedder_note.empty());
  CHECK(r.injected >= 13 * 5);
  for (const auto& k : r.per_kind) {
    CAPTURE(mh::to_string(k.kind));
    if (is_text_kind(k.kind)) continue;  // measured below, not gated
    CHECK(k.coverage >= 0.95);
  }
  check_text_faults(r, mh::lexical_embedder(384, 1));
  CHECK(r.false_positive_rate_net <= 0.02);
  CHECK(r.healthy_records_changed == 0);
  CHECK(r.repair_success >= 0.95);
}

// ------------------------------------------------------------------------------------ tuning

TEST_CASE("tune: threshold sweep and metrics on hand-made scores") {
  const auto t = mh::threshold_sweep(0.80, 0.99, 0.01);
  REQUIRE(t.size() == 20);
  CHECK(t.front() == 0.80);
  CHECK(t[7] == 0.87);
  CHECK(t.back() == 0.99);
  CHECK(mh::threshold_sweep(0.5, 0.5, 0.1) == std::vector<double>{0.5});
  CHECK_THROWS_AS(mh::threshold_sweep(0.9, 0.8, 0.01), mh::error);
  CHECK_THROWS_AS(mh::threshold_sweep(0.8, 0.9, 0.0), mh::error);
  // scores (label): 0.95 (1), 0.91 (1), 0.90 (0), 0.85 (1), 0.70 (0), +inf (1), -inf (1), 0.93 (0)
  const std::vector<double> s{0.95, 0.91, 0.90, 0.85, 0.70, INFINITY, -INFINITY, 0.93};
  const std::vector<std::uint8_t> l{1, 1, 0, 1, 0, 1, 1, 0};
  const std::vector<double> th{0.80, 0.90, 0.92, 0.96};
  const auto r = mh::sweep_thresholds(s, l, th, 0.34);
  CHECK(r.pairs == 8);
  CHECK(r.positives == 5);
  REQUIRE(r.rows.size() == 4);
  // t = 0.80: flagged 0.95 0.91 0.90 0.85 inf 0.93 -> tp 4 (0.95 0.91 0.85 inf), fp 2, fn 1 (-inf),
  // tn 1 (0.70)
  CHECK(r.rows[0].tp == 4);
  CHECK(r.rows[0].fp == 2);
  CHECK(r.rows[0].fn == 1);
  CHECK(r.rows[0].tn == 1);
  CHECK(r.rows[0].precision == doctest::Approx(4.0 / 6));
  CHECK(r.rows[0].recall == doctest::Approx(0.8));
  CHECK(r.rows[0].false_positive_rate == doctest::Approx(2.0 / 3));
  CHECK(r.rows[0].f1 == doctest::Approx(2 * (4.0 / 6) * 0.8 / (4.0 / 6 + 0.8)));  // 0.7273
  // t = 0.90: flagged 0.95 0.91 0.90 inf 0.93 -> tp 3, fp 2, fn 2, tn 1; f1 = 2*0.6*0.6/1.2 = 0.6
  CHECK(r.rows[1].f1 == doctest::Approx(0.6));
  // t = 0.92: flagged 0.95 inf 0.93 -> tp 2, fp 1, fn 3, tn 2; fpr 1/3; f1 = 2*(2/3)(2/5)/(2/3+2/5)
  // = 0.5
  CHECK(r.rows[2].false_positive_rate == doctest::Approx(1.0 / 3));
  CHECK(r.rows[2].f1 == doctest::Approx(0.5));
  // t = 0.96: flagged inf only -> tp 1, fp 0: precision 1, recall 0.2, fpr 0
  CHECK(r.rows[3].precision == 1.0);
  CHECK(r.rows[3].false_positive_rate == 0.0);
  REQUIRE(r.best_f1);
  CHECK(r.best_f1->threshold == 0.80);
  REQUIRE(r.at_target_fpr);
  CHECK(r.at_target_fpr->threshold == 0.92);  // the lowest t with fpr <= 0.34
  CHECK_THROWS_AS(mh::sweep_thresholds(s, std::vector<std::uint8_t>{1}, th), mh::error);
}

TEST_CASE("tune: reading STS Benchmark and SICK, bad input") {
  const auto sts = mh::parse_labelled_pairs(
      "main-captions\timages\t2014\t0000\t4.2\tA cat on a branch.\tA cat sits on a branch.\n"
      "main-news\theadlines\t2015\t0001\t3.99\tStocks fell.\tShares dropped.\textra\tcols\n"
      "broken line\n"
      "main-news\theadlines\t2015\t0002\tfour\ta\tb\n");
  CHECK(sts.format == "sts");
  REQUIRE(sts.pairs.size() == 2);
  CHECK(sts.pairs[0].duplicate);
  CHECK(sts.pairs[0].b == "A cat sits on a branch.");
  CHECK_FALSE(sts.pairs[1].duplicate);  // 3.99 < 4.0
  CHECK(sts.skipped_lines == 2);
  CHECK(sts.skipped_line_numbers == std::vector<std::size_t>{3, 4});
  {  // blank lines count as lines; past the first 10 numbers only the count grows
    std::string text = "main-captions\timages\t2014\t0000\t4.2\tA cat.\tA cat sits.\n\n\r\n";
    for (int k = 0; k < 12; ++k) text += "broken\n";  // lines 4 to 15
    const auto many = mh::parse_labelled_pairs(text);
    CHECK(many.skipped_lines == 12);
    CHECK(many.skipped_line_numbers == std::vector<std::size_t>{4, 5, 6, 7, 8, 9, 10, 11, 12, 13});
  }
  const auto sick = mh::parse_labelled_pairs(
      "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\r\n"
      "1\tA man plays.\tA man is playing.\t4.7\tENTAILMENT\r\n"
      "2\tA man plays.\tA man is not playing.\t4.4\tCONTRADICTION\r\n"
      "3\tA dog runs.\tA dog is running fast.\t3.9\tENTAILMENT\r\n");
  CHECK(sick.format == "sick");
  REQUIRE(sick.pairs.size() == 3);
  CHECK(sick.pairs[0].duplicate);
  CHECK_FALSE(sick.pairs[1].duplicate);
  CHECK(sick.pairs[1].label == "CONTRADICTION");
  CHECK_FALSE(sick.pairs[2].duplicate);  // relatedness 3.9 < 4.0
  CHECK_THROWS_AS(mh::parse_labelled_pairs("just some text\n"), mh::error);
  CHECK_THROWS_AS(mh::read_labelled_pairs("/nonexistent/pairs.tsv"), mh::error);
}

namespace {
// The sweep's invariants on a real labelled set: `positives` counted independently.
void check_real_sweep(const mh::labelled_pairs& set, std::size_t positives) {
  const mh::lexical_embedder e(384, 1);
  const auto r = mh::tune_pairs(set.pairs, e);
  CHECK(r.pairs == set.pairs.size());
  CHECK(r.positives == positives);
  REQUIRE(r.rows.size() == 20);
  for (std::size_t k = 1; k < r.rows.size(); ++k) {  // raising t never flags more
    CHECK(r.rows[k].tp + r.rows[k].fp <= r.rows[k - 1].tp + r.rows[k - 1].fp);
    CHECK(r.rows[k].recall <= r.rows[k - 1].recall);
    CHECK(r.rows[k].false_positive_rate <= r.rows[k - 1].false_positive_rate);
    CHECK(r.rows[k].tp + r.rows[k].fn == r.positives);
  }
  REQUIRE(r.best_f1);
}
}  // namespace

TEST_CASE("tune: STS-B dev with the lexical embedder") {
  MEMHEALTH_TEST_DATA(path, "sts-benchmark/sts-dev.no-msr-no-answers-forums.csv");
  const auto sts = mh::read_labelled_pairs(path);
  // counted with a one-off python3 script: 625 rows, 137 with score >= 4.0
  CHECK(sts.pairs.size() == 625);
  CHECK(sts.skipped_lines == 0);
  check_real_sweep(sts, 137);
}

TEST_CASE("tune: SICK train with the lexical embedder" * doctest::test_suite("real_data")) {
  MEMHEALTH_TEST_DATA(path, "sick/SICK_train.txt");
  const auto sick = mh::read_labelled_pairs(path);
  // counted with a one-off python3 script: 4,500 pairs, 1,229 ENTAILMENT with relatedness >= 4.0
  CHECK(sick.pairs.size() == 4500);
  check_real_sweep(sick, 1229);
  // the negation guard keeps SICK's CONTRADICTION pairs out: at t = 0.80 with the guard fewer of
  // them are flagged than without it
  const mh::lexical_embedder e(384, 1);
  mh::tune_options no_guard;
  no_guard.negation_guard = false;
  std::vector<mh::labelled_pair> contra;
  for (const auto& p : sick.pairs)
    if (p.label == "CONTRADICTION") contra.push_back(p);
  REQUIRE(contra.size() == 665);
  const auto with = mh::tune_pairs(contra, e);
  const auto without = mh::tune_pairs(contra, e, no_guard);
  CHECK(with.rows[0].fp < without.rows[0].fp);
}

// ------------------------------------------------------------------------------------ report

// ------------------------------------------------------------------------- tune: the claim judge

namespace {
// Ten pairs whose verdicts follow from the rules of claim_judge.hpp, at every setting:
//  1 sv   conflict     lives in Porto / Madrid: one single-valued attribute, two values (always)
//  2 neg  conflict     does not eat pork / eats pork: opposite polarity (always)
//  3 ant  conflict     a morning person / hates getting up early: an idiom, never read (never)
//  4 hol  no_conflict  the user's sister / the user: different holders (never)
//  5 obj  no_conflict  does not enjoy opera / enjoys musicals: opera is not denied (never)
//  6 sve  review       is vegan / ate a cheeseburger yesterday: state against event (always)
//  7 deg  conflict     every day (1/day) / twice a week (2/7): 3.5x apart, flagged at ratio <= 3.5
//  8 deg  no_conflict  every day / six days a week (6/7): 7/6 = 1.17x, flagged at ratio <= 1.17
//  9 isa  conflict     no person / a man: "man" is a kind of "person", 1 hypernym step
// 10 isa  conflict     no animal / a dog: "dog" -> "canine"... "animal", flagged from depth 2
constexpr const char* hand_judge_pairs =
    "id\tlang\tcategory\tlabel\ta\tb\tnote\n"
    "p1\ten\tsingle_value\tconflict\tUser lives in Porto\tUser lives in Madrid\t\n"
    "p2\ten\tnegation\tconflict\tUser does not eat pork\tUser eats pork\t\n"
    "p3\ten\tantonym\tconflict\tMaria is a morning person\tMaria hates getting up early\thard\n"
    "p4\ten\tdifferent_holder\tno_conflict\tThe user's sister lives in Porto\tUser lives in "
    "Madrid\t\n"
    "p5\ten\tdifferent_object\tno_conflict\tUser does not enjoy opera\tUser enjoys musicals\t\n"
    "p6\ten\tstate_vs_event\treview\tUser is vegan\tUser ate a cheeseburger yesterday\t\n"
    "p7\ten\tdegree\tconflict\tUser runs every day\tUser runs twice a week\t\n"
    "p8\ten\tdegree\tno_conflict\tUser drinks coffee every day\tUser drinks coffee six days a "
    "week\t\n"
    "p9\ten\tis_a\tconflict\tNo person is swimming\tA man is swimming\t\n"
    "p10\ten\tis_a\tconflict\tThere is no animal in the garden\tA dog is in the garden\n"
    "bad\ten\tdegree\tmaybe\tx\ty\t\n"
    "short\ten\tdegree\n";
}  // namespace

TEST_CASE("tune judge: reading judge-pair TSV and SICK, bad input") {
  const auto set = mh::parse_judge_pairs(hand_judge_pairs);
  CHECK(set.format == "judge_pairs");
  REQUIRE(set.pairs.size() == 10);
  CHECK(set.skipped_lines == 2);  // an unknown label, too few columns
  CHECK(set.skipped_line_numbers == std::vector<std::size_t>{12, 13});  // after 1 header + 10
  CHECK(set.pairs[0].id == "p1");
  CHECK(set.pairs[0].category == "single_value");
  CHECK(set.pairs[0].label == mh::judge_label::conflict);
  CHECK(set.pairs[3].label == mh::judge_label::no_conflict);
  CHECK(set.pairs[5].label == mh::judge_label::review);
  CHECK(set.pairs[9].b == "A dog is in the garden");  // no note column
  CHECK(mh::to_string(mh::judge_label::review) == "review");
  const auto sick = mh::parse_judge_pairs(
      "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\r\n"
      "1\tA man plays.\tA man is playing.\t4.7\tENTAILMENT\r\n"
      "2\tA man plays.\tA man is not playing.\t4.4\tCONTRADICTION\r\n"
      "3\tA dog runs.\tA cat sleeps.\t1.9\tNEUTRAL\r\n"
      "4\tA dog runs.\tA cat sleeps.\t1.9\tUNKNOWN\r\n");
  CHECK(sick.format == "sick");
  REQUIRE(sick.pairs.size() == 3);
  CHECK(sick.skipped_lines == 1);
  CHECK(sick.pairs[0].label == mh::judge_label::no_conflict);
  CHECK(sick.pairs[1].label == mh::judge_label::conflict);
  CHECK(sick.pairs[2].label == mh::judge_label::no_conflict);
  CHECK(sick.pairs[1].category.empty());
  // STS Benchmark has no conflict labels; an empty text has no header
  CHECK_THROWS_AS(mh::parse_judge_pairs("main-captions\timages\t2014\t0000\t4.2\ta\tb\n"),
                  mh::error);
  CHECK_THROWS_AS(mh::parse_judge_pairs(""), mh::error);
  try {
    (void)mh::parse_judge_pairs("just some text\n");
    FAIL("no error");
  } catch (const mh::error& e) {
    CHECK(e.code() == mh::error_code::parse);
  }
  try {
    (void)mh::read_judge_pairs("/nonexistent/pairs.tsv");
    FAIL("no error");
  } catch (const mh::error& e) {
    CHECK(e.code() == mh::error_code::io);
  }
  // bad sweeps
  const std::vector<mh::judge_pair> none;
  mh::tune_judge_options bad;
  bad.max_is_a_depths = {};
  CHECK_THROWS_AS(mh::tune_judge(none, bad), mh::error);
  bad.max_is_a_depths = {-1};
  CHECK_THROWS_AS(mh::tune_judge(none, bad), mh::error);
  bad.max_is_a_depths = {1};
  bad.min_frequency_ratios = {0.5};
  CHECK_THROWS_AS(mh::tune_judge(none, bad), mh::error);
  bad.min_frequency_ratios = {std::nan("")};
  CHECK_THROWS_AS(mh::tune_judge(none, bad), mh::error);
  bad.min_frequency_ratios = {2};
  bad.target_precision = 1.5;
  CHECK_THROWS_AS(mh::tune_judge(none, bad), mh::error);
}

TEST_CASE("tune judge: sweep on ten hand-worked pairs") {
  const auto set = mh::parse_judge_pairs(hand_judge_pairs);
  mh::tune_judge_options opt;
  opt.max_is_a_depths = {0, 2};
  opt.min_frequency_ratios = {1.1, 4};
  const auto r = mh::tune_judge(set.pairs, opt);
  CHECK(r.pairs == 10);
  CHECK(r.conflicts == 6);
  CHECK(r.no_conflicts == 3);
  CHECK(r.reviews == 1);
  CHECK(r.fallback_pairs == 0);  // every text is read into claims
  REQUIRE(r.rows.size() == 4);
  auto row = [&](int depth, double ratio) -> const mh::judge_row& {
    for (const auto& x : r.rows)
      if (x.setting == mh::judge_setting{depth, ratio}) return x;
    FAIL("no row");
    return r.rows.front();
  };
  // depths outer, ratios inner
  CHECK(r.rows[1].setting == mh::judge_setting{0, 4});
  CHECK(r.rows[2].setting == mh::judge_setting{2, 1.1});
  // depth 0, ratio 1.1: flagged 1 2 7 (8: fp); missed 3 9 10 -> tp 3 fp 1 fn 3 tn 2
  const auto& a = row(0, 1.1).all;
  CHECK(a.tp == 3);
  CHECK(a.fp == 1);
  CHECK(a.fn == 3);
  CHECK(a.tn == 2);
  CHECK(a.precision == doctest::Approx(0.75));
  CHECK(a.recall == doctest::Approx(0.5));
  CHECK(a.false_positive_rate == doctest::Approx(1.0 / 3));
  CHECK(a.f1 == doctest::Approx(0.6));  // 2 * 0.75 * 0.5 / 1.25
  // depth 0, ratio 4: flagged 1 2 -> tp 2 fn 4 tn 3; precision 1, recall 1/3, f1 0.5
  const auto& b = row(0, 4).all;
  CHECK(b.tp == 2);
  CHECK(b.fp == 0);
  CHECK(b.fn == 4);
  CHECK(b.tn == 3);
  CHECK(b.f1 == doctest::Approx(0.5));
  // depth 2, ratio 1.1: flagged 1 2 7 9 10 (8: fp) -> tp 5 fp 1 fn 1 tn 2; f1 5/6
  const auto& c = row(2, 1.1).all;
  CHECK(c.tp == 5);
  CHECK(c.fp == 1);
  CHECK(c.fn == 1);
  CHECK(c.f1 == doctest::Approx(5.0 / 6));
  // depth 2, ratio 4: flagged 1 2 9 10 -> tp 4 fn 2 tn 3; precision 1, recall 2/3, f1 0.8
  const auto& d = row(2, 4).all;
  CHECK(d.tp == 4);
  CHECK(d.fp == 0);
  CHECK(d.recall == doctest::Approx(2.0 / 3));
  CHECK(d.f1 == doctest::Approx(0.8));
  // the review pair is flagged (needing a person) at every setting, and counted apart
  for (const auto& x : r.rows) {
    CHECK(x.all.reviews == 1);
    CHECK(x.all.reviews_flagged == 1);
    CHECK(x.needs_human == 1);
    CHECK(x.asymmetric == 0);
    CHECK(x.all.tp + x.all.fp + x.all.fn + x.all.tn == 9);
  }
  // per category
  CHECK(row(2, 1.1).per_category.at("degree").tp == 1);
  CHECK(row(2, 1.1).per_category.at("degree").fp == 1);
  CHECK(row(2, 4).per_category.at("degree").fn == 1);
  CHECK(row(2, 4).per_category.at("degree").tn == 1);
  CHECK(row(0, 4).per_category.at("is_a").fn == 2);
  CHECK(row(2, 4).per_category.at("is_a").tp == 2);
  CHECK(row(2, 4).per_category.at("antonym").fn == 1);
  CHECK(row(2, 4).per_category.at("state_vs_event").reviews_flagged == 1);
  CHECK(row(2, 4).per_category.size() == 8);
  // best F1: depth 2, ratio 1.1; most recall at precision >= 0.95: depth 2, ratio 4
  REQUIRE(r.best_f1);
  CHECK(r.best_f1->setting == mh::judge_setting{2, 1.1});
  REQUIRE(r.at_target_precision);
  CHECK(r.at_target_precision->setting == mh::judge_setting{2, 4});
  // a target nothing reaches with a flag
  opt.target_precision = 1.0;
  opt.min_frequency_ratios = {1.1};
  CHECK_FALSE(mh::tune_judge(set.pairs, opt).at_target_precision);
  // SICK-like pairs have no categories
  auto plain = set.pairs;
  for (auto& p : plain) p.category.clear();
  CHECK(mh::tune_judge(plain, opt).rows.front().per_category.empty());
}

TEST_CASE("tune judge: tests/data/judge_pairs against the judge called directly") {
  MEMHEALTH_TEST_DATA(path, "judge_pairs/pairs.tsv");
  const auto set = mh::read_judge_pairs(path);
  CHECK(set.format == "judge_pairs");
  CHECK(set.skipped_lines == 0);
  REQUIRE(set.pairs.size() == 275);  // tests/data/judge_pairs/README.md
  mh::tune_judge_options opt;
  opt.max_is_a_depths = {0, 2};
  opt.min_frequency_ratios = {1.5, 3};
  const auto r = mh::tune_judge(set.pairs, opt);
  CHECK(r.conflicts == 131);
  CHECK(r.no_conflicts == 128);
  CHECK(r.reviews == 16);
  REQUIRE(r.rows.size() == 4);
  // the same counts by the judge the conflict detector runs, one pair at a time
  const mh::text_normalizer norm;
  for (const auto& row : r.rows) {
    CAPTURE(row.setting.max_is_a_depth);
    CAPTURE(row.setting.min_frequency_ratio);
    mh::claim_conflict_judge<> j;
    j.rules.max_is_a_depth = row.setting.max_is_a_depth;
    j.rules.min_frequency_ratio = row.setting.min_frequency_ratio;
    std::map<std::string, std::array<std::size_t, 4>> by;  // category -> tp fp fn tn
    std::size_t tp = 0, fp = 0, fn = 0, tn = 0, review_flagged = 0;
    for (const auto& p : set.pairs) {
      mh::memory_record ra, rb;
      ra.content = p.a;
      rb.content = p.b;
      const bool flagged = j(ra, norm(p.a), rb, norm(p.b), 1.0f).conflict ||
                           j(rb, norm(p.b), ra, norm(p.a), 1.0f).conflict;
      if (p.label == mh::judge_label::review) {
        review_flagged += flagged;
        continue;
      }
      const bool truth = p.label == mh::judge_label::conflict;
      const std::size_t cell = truth ? (flagged ? 0 : 2) : (flagged ? 1 : 3);
      ++by[p.category][cell];
      ++(cell == 0 ? tp : cell == 1 ? fp : cell == 2 ? fn : tn);
    }
    CHECK(row.all.tp == tp);
    CHECK(row.all.fp == fp);
    CHECK(row.all.fn == fn);
    CHECK(row.all.tn == tn);
    CHECK(row.all.reviews_flagged == review_flagged);
    for (const auto& kv : by) {  // (no structured binding: clang cannot CAPTURE one)
      const std::string& cat = kv.first;
      const auto& n = kv.second;
      CAPTURE(cat);
      const auto& c = row.per_category.at(cat);
      CHECK(c.tp == n[0]);
      CHECK(c.fp == n[1]);
      CHECK(c.fn == n[2]);
      CHECK(c.tn == n[3]);
    }
    MESSAGE("judge_pairs at depth " << row.setting.max_is_a_depth << ", ratio "
                                    << row.setting.min_frequency_ratio << ": tp " << tp << " fp "
                                    << fp << " fn " << fn << " tn " << tn);
  }
  // the README's figure at the defaults (depth 2, ratio 3): precision 1.0, recall 88 of 131
  CHECK(r.rows[3].all.fp == 0);
  CHECK(r.rows[3].all.tp >= 85);
}

TEST_CASE("tune judge: SICK train" * doctest::test_suite("real_data")) {
  MEMHEALTH_TEST_DATA(path, "sick/SICK_train.txt");
  const auto set = mh::read_judge_pairs(path);
  CHECK(set.format == "sick");
  REQUIRE(set.pairs.size() == 4500);
  mh::tune_judge_options opt;
  opt.max_is_a_depths = {2};
  opt.min_frequency_ratios = {3};
  const auto r = mh::tune_judge(set.pairs, opt);
  // python3: 665 CONTRADICTION pairs in SICK_train.txt (1299 ENTAILMENT, 2536 NEUTRAL)
  CHECK(r.conflicts == 665);
  CHECK(r.no_conflicts == 3835);
  const auto& c = r.rows.front().all;
  MESSAGE("SICK train, judge defaults: tp " << c.tp << " fp " << c.fp << " precision "
                                            << c.precision << " recall " << c.recall);
  CHECK(c.tp + c.fn == 665);
  // as claims_test.cpp measures it: tp 554 fp 26 (precision 0.955, recall 0.833; 2026-12-07)
  CHECK(c.precision >= 0.95);
  CHECK(c.recall >= 0.83);
}

TEST_CASE("audit report: the sample store's repair run") {
  const auto loaded =
      mh::read_jsonl(std::filesystem::path(MEMHEALTH_SOURCE_DIR) / "data/sample_store.jsonl");
  REQUIRE(loaded.issues.empty());
  auto store = mh::memory_store<>::from_records(loaded.records);
  const auto original = store;
  mh::default_check_settings settings;
  settings.schema =
      mh::load_schema_json(std::filesystem::path(MEMHEALTH_SOURCE_DIR) / "data/sample_schema.json");
  mh::detect_options when;
  when.now = at("2024-07-15T00:00:00Z");
  auto pipeline = mh::make_default_pipeline(settings);
  const auto before = pipeline.run(store, when);
  mh::planner_options po;
  po.metadata_defaults["topic"] = std::string("unknown");
  const auto plan = mh::make_plan(store, before, po);
  mh::apply_options ao;
  ao.approve_tier2 = true;
  const auto wal = std::filesystem::temp_directory_path() / "memhealth-audit-report-test.wal";
  std::filesystem::remove(wal);
  mh::apply_result res;
  {
    mh::wal_writer w(wal, mh::wal_sync::none);
    res = mh::apply_plan(store, plan, w, ao);
  }
  std::filesystem::remove(wal);
  const auto after = pipeline.run(store, when);
  const auto rep = mh::make_audit_report(original, store, before, after, plan, res);

  CHECK(rep.before.records == 51);
  CHECK(rep.before.findings == before.findings.size());
  CHECK(rep.after.findings == after.findings.size());
  CHECK(rep.actions == plan.actions.size());
  CHECK(rep.by_automation[0] + rep.by_automation[1] + rep.by_automation[2] == plan.actions.size());
  CHECK(rep.applied == res.applied.size());
  // The bulk import: 7 records miss "topic" (mem-1039..1044, mem-1046); 6 of them carry
  // ingest_batch bulk-2024-05, which 6 of the 51 records carry (counted with python3):
  // share 6/7 = 0.857, lift (6/7) / (6/51) = 7.29.
  const mh::root_cause_hint* bulk = nullptr;
  for (const auto& h : rep.hints)
    if (h.kind == "metadata_schema_violation" && h.attribute == "metadata.ingest_batch") bulk = &h;
  REQUIRE(bulk != nullptr);
  CHECK(bulk->value == "bulk-2024-05");
  CHECK(bulk->flagged == 7);
  CHECK(bulk->flagged_with_value == 6);
  CHECK(bulk->store_with_value == 6);
  CHECK(bulk->store == 51);
  CHECK(bulk->share == doctest::Approx(6.0 / 7));
  CHECK(bulk->lift == doctest::Approx(51.0 / 7));
  CHECK(bulk->text ==
        "metadata_schema_violation: 6 of 7 flagged records (85.7%) have metadata.ingest_batch = "
        "bulk-2024-05, which "
        "holds 11.8% of the store (7.3x over-represented)");
  // strategies: every kind found before has a row; merges answer the duplicates
  bool exact_row = false;
  for (const auto& st : rep.strategies)
    if (st.kind == "exact_duplicate") {
      exact_row = true;
      CHECK(st.actions.count("merge_duplicates") == 1);
      CHECK(st.before == before.count("exact_duplicate"));
    }
  CHECK(exact_row);
  // the sample store mixes two embedding versions (25 s1, 26 s2 records): the re-embedding
  // actions (tier 3, not approved here) answer that kind, though their reasons name record ids
  // first ("mem-1001: mixed_embedding_version")
  REQUIRE(before.count("mixed_embedding_version") == 1);
  std::size_t reembed_actions = 0;
  for (const auto& a : plan.actions) reembed_actions += a.type == "reembed";
  REQUIRE(reembed_actions >= 1);
  bool mixed_row = false;
  for (const auto& st : rep.strategies)
    if (st.kind == "mixed_embedding_version") {
      mixed_row = true;
      CHECK(st.actions == std::set<std::string>{"reembed"});
      CHECK(st.tiers == std::set<int>{3});
      CHECK(st.planned == reembed_actions);
      CHECK(st.applied == 0);
    }
  CHECK(mixed_row);
  CHECK_FALSE(rep.prevention.empty());
  CHECK(std::string(mh::prevention_note("exact_duplicate")).find("Deduplicate") == 0);
  CHECK(mh::prevention_note("no_such_kind").empty());
  // similarity chart input: one nearest-neighbour cosine per embedded record in a scope of >= 2
  CHECK_FALSE(rep.nn_cosines.empty());
  CHECK(std::all_of(rep.nn_cosines.begin(), rep.nn_cosines.end(),
                    [](float c) { return c >= -1.0f && c <= 1.0f; }));

  const auto md = mh::to_markdown(rep);
  CHECK(md.find("## Root-cause hints") != std::string::npos);
  CHECK(md.find(bulk->text) != std::string::npos);
  const auto j = mh::to_json(rep);
  CHECK(j["outcomes"]["applied"] == res.applied.size());
  CHECK(j["similarity"]["nearest_neighbour_cosine_bins"].size() == 20);
  const auto html = mh::to_html(rep);
  std::set<std::string> kinds;
  for (const auto& f : before.findings) kinds.insert(f.kind);
  for (const auto& f : after.findings) kinds.insert(f.kind);
  std::size_t groups = 0;
  for (auto p = html.find("<g class=\"kind\""); p != std::string::npos;
       p = html.find("<g class=\"kind\"", p + 1))
    ++groups;
  CHECK(groups == kinds.size());
  CHECK(html.find("id=\"threshold\"") != std::string::npos);
  CHECK(html.find("<script src") == std::string::npos);  // self-contained
  // escaping
  CHECK(mh::detail::audit::html_escape("<a href=\"x\">&'") ==
        "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
  // a result that does not belong to the plan is an error
  mh::apply_result wrong;
  CHECK_THROWS_AS(mh::make_audit_report(original, store, before, after, plan, wrong), mh::error);
}

// ---------------------------------------------------------------- snapshot diff

namespace diffnote {
// A user's record type with an id, content and a scope, and an image (ADL pair).
struct note {
  std::string id, content, scope;
};
std::string memhealth_encode_image(const note& n) {
  return nlohmann::json{{"id", n.id}, {"content", n.content}, {"scope", n.scope}}.dump();
}
note memhealth_decode_image(std::string_view s, std::type_identity<note>) {
  const auto j = nlohmann::json::parse(s);
  return {j.at("id").get<std::string>(), j.at("content").get<std::string>(),
          j.at("scope").get<std::string>()};
}
}  // namespace diffnote

namespace {

mh::memory_record diff_rec(const char* id, const char* scope, const char* content) {
  mh::memory_record r;
  r.id = id;
  r.scope = scope;
  r.content = content;
  r.status = "active";
  return r;
}

// One logged record: its index, id and before/after images.
template <class R>
mh::wal_record_image logged(std::size_t index, const R& before, const R& after) {
  mh::wal_record_image w;
  w.index = index;
  w.id = std::string(mh::field::id(before));
  w.before_json = mh::encode_image(before);
  w.after_json = mh::encode_image(after);
  return w;
}

}  // namespace

TEST_CASE("snapshot diff: which changes a log explains, hand-worked on five records") {
  // before: a, b (scope s1), c, d (s2), e (s3).
  const std::vector<mh::memory_record> before{
      diff_rec("a", "s1", "alpha"), diff_rec("b", "s1", "beta"), diff_rec("c", "s2", "gamma"),
      diff_rec("d", "s2", "delta"), diff_rec("e", "s3", "epsilon")};
  // after: a and b changed, c and d gone, e copied in twice, f new.
  const std::vector<mh::memory_record> after{
      diff_rec("a", "s1", "alpha v2"), diff_rec("b", "s1", "beta v2"),
      diff_rec("e", "s3", "epsilon"), diff_rec("e", "s3", "epsilon"), diff_rec("f", "s1", "phi")};
  // The log: a's change committed, b's aborted (an aborted intent explains nothing).
  mh::test::scratch_dir dir("snapshot-diff");
  {
    mh::wal_writer w(dir.path / "run.wal", mh::wal_sync::none);
    w.append_run_begin(2);
    const std::vector<mh::wal_record_image> ia{logged(0, before[0], after[0])};
    const std::vector<mh::wal_record_image> ib{logged(1, before[1], after[1])};
    w.append_commit(w.append_intent(0, "edit-a", 1, ia), 0, "edit-a");
    w.append_abort(w.append_intent(1, "edit-b", 1, ib), 1, "edit-b", "test");
    w.sync();
  }
  const auto log = mh::read_wal_file(dir.path / "run.wal");
  REQUIRE(log.clean());

  namespace dk = mh::diff_kinds;
  using sev = mh::severity;
  constexpr auto none = mh::snapshot_change::no_index;
  const std::string overwrite = "record changed in place without a matching log entry";
  SUBCASE("with the log: a is explained; c and d lie outside the logged scope s1") {
    const auto d = mh::diff_snapshots(before, after, &log);
    REQUIRE(d.changes.size() == 6);
    struct want {
      std::string_view kind;
      sev severity;
      std::string id;
      std::size_t index;
      std::string scope;
      std::string detail;
      std::size_t count;
    };
    const std::vector<want> expected{
        {dk::unlogged_overwrite, sev::error, "b", 1, "s1", overwrite, 1},
        {dk::unlogged_removal, sev::critical, "c", 2, "s2",
         "record removed, outside every scope the logged operation touched", 1},
        {dk::unlogged_removal, sev::critical, "d", 3, "s2",
         "record removed, outside every scope the logged operation touched", 1},
        {dk::unlogged_addition, sev::warning, "f", 4, "s1", "record added without a log entry", 1},
        {dk::unlogged_addition, sev::error, "e", 3, "s3",
         "1 more record(s) with this id than before", 1},
        {dk::bulk_removal, sev::critical, "", none, "s2", "", 2}};
    for (std::size_t i = 0; i < expected.size(); ++i) {
      CAPTURE(i);
      const auto& c = d.changes[i];
      CHECK(c.kind == expected[i].kind);
      CHECK(c.severity == expected[i].severity);
      CHECK(c.id == expected[i].id);
      CHECK(c.index == expected[i].index);
      CHECK(c.scope == expected[i].scope);
      CHECK(c.detail == expected[i].detail);
      CHECK(c.count == expected[i].count);
    }
    CHECK(d.count(dk::unlogged_removal) == 2);
    CHECK_FALSE(d.clean());

    const auto f = mh::to_findings(d);
    REQUIRE(f.size() == 6);
    CHECK(f[0].detector == "diff");
    CHECK(f[0].record_ids == std::vector<std::string>{"b"});
    CHECK(std::get<std::string>(*f[0].evidence_of("reason")) == overwrite);
    CHECK(f[5].record_ids.empty());
    CHECK(std::get<std::int64_t>(*f[5].evidence_of("count")) == 2);
    const auto j = mh::snapshot_diff_json(d, "b.jsonl", "a.jsonl", "run.wal");
    CHECK(
        j.dump().find(
            R"({"schema_version":1,"before":"b.jsonl","after":"a.jsonl","wal":"run.wal","findings":[)") ==
        0);
    CHECK(
        j["findings"][5].dump() ==
        R"({"kind":"bulk_removal","severity":"critical","record_ids":[],"evidence":{"scope":"s2","count":2}})");
  }
  SUBCASE("without a log: every difference, and no removal is outside a logged scope") {
    const auto d = mh::diff_snapshots(before, after);
    REQUIRE(d.changes.size() == 7);
    CHECK(d.changes[0].kind == dk::unlogged_overwrite);
    CHECK(d.changes[0].id == "a");
    CHECK(d.changes[1].id == "b");
    CHECK(d.changes[2].severity == sev::error);  // c: removed, no scope to be outside of
    CHECK(d.changes[2].detail == "record removed without a log entry");
    CHECK(d.count(dk::unlogged_addition) == 2);
    CHECK(d.changes[6].kind == dk::bulk_removal);
  }
  SUBCASE("identical snapshots are clean") {
    CHECK(mh::diff_snapshots(before, before, &log).clean());
  }
}

TEST_CASE("snapshot diff: a user's record type, scopes read from its logged images") {
  using diffnote::note;
  static_assert(mh::imaged_record<note> && mh::scoped_record<note>);
  const std::vector<note> before{{"n1", "x", "s1"}, {"n2", "y", "s2"}, {"n3", "z", "s1"}};
  const std::vector<note> after{{"n1", "x2", "s1"}, {"n3", "z", "s1"}};
  mh::test::scratch_dir dir("snapshot-diff-note");
  {
    mh::wal_writer w(dir.path / "run.wal", mh::wal_sync::none);
    const std::vector<mh::wal_record_image> i1{logged(0, before[0], after[0])};
    w.append_commit(w.append_intent(0, "edit-n1", 1, i1), 0, "edit-n1");
  }
  const auto log = mh::read_wal_file(dir.path / "run.wal");
  const auto d = mh::diff_snapshots(before, after, &log);
  REQUIRE(d.changes.size() ==
          1);  // n1 explained; n2 removed outside s1; one removal is no bulk removal
  CHECK(d.changes[0].kind == mh::diff_kinds::unlogged_removal);
  CHECK(d.changes[0].id == "n2");
  CHECK(d.changes[0].index == 1);
  CHECK(d.changes[0].scope == "s2");
  CHECK(d.changes[0].severity == mh::severity::critical);
}

TEST_CASE("secrets are masked in every output: findings, plan, audit report JSON / MD / HTML") {
  // fake values of the real shapes, never issued
  const std::vector<std::string> secrets{"AKIAQ4ZT7M2FAKEXK9LP", "Hunter2024xQ",
                                         "ghp_Zq3FAKEy8Lw2Nd5Kp7Rt1Vb4Xc6Hj9Mf0Sa2"};
  std::vector<mh::memory_record> rs = healthy_store();
  auto secret_record = [&](std::string id, std::string content, std::string status,
                           std::vector<float> e) {
    mh::memory_record r = rs.front();
    r.id = std::move(id);
    r.content = std::move(content);
    r.status = std::move(status);
    r.embedding = std::move(e);
    r.scope = "user:9";
    return r;
  };
  std::vector<float> e(16, 0.0f);
  e[0] = 1.0f;
  // a near-duplicate pair (same vector, different text): the merge notes the other's text
  rs.push_back(secret_record("sec-1", "The deploy key is " + secrets[0], "active", e));
  rs.push_back(secret_record("sec-2", "Deploy key " + secrets[0] + ", keep it safe", "active", e));
  e[0] = 0.0f;
  e[1] = 1.0f;
  rs.push_back(secret_record("sec-3", "My email password is " + secrets[1], "active", e));
  e[1] = 0.0f;
  e[2] = 1.0f;
  rs.push_back(secret_record("sec-4", "CI token " + secrets[2], "pending_review", e));
  auto store = mh::memory_store<>::from_records(rs);
  const auto original = store;
  mh::detect_options when;
  when.now = at("2024-07-15T00:00:00Z");
  auto pipeline = mh::make_default_pipeline();
  const auto before = pipeline.run(store, when);
  CHECK(before.count(mh::finding_kinds::secret_in_content) == 4);
  const auto plan = mh::make_plan(store, before, mh::planner_options{});
  // each secret record is quarantined: tier 3, manual, pending_review once a person approves
  std::size_t quarantines = 0;
  for (const auto& a : plan.actions)
    for (const auto& why : a.reasons)
      if (why.starts_with("secret_in_content")) {
        ++quarantines;
        CHECK(a.type == mh::action_types::send_to_review);
        CHECK(a.tier == 3);
        CHECK(a.automation == mh::automation::manual);
        REQUIRE(a.edits.size() == 1);
        CHECK(std::get<mh::edit_set_status>(a.edits[0].op).status == "pending_review");
      }
  CHECK(quarantines == 4);
  mh::apply_options ao;
  ao.approve_tier2 = true;  // the merge runs; the tier-3 quarantines wait for a person
  const auto wal = std::filesystem::temp_directory_path() / "memhealth-secret-mask-test.wal";
  std::filesystem::remove(wal);
  mh::apply_result res;
  {
    mh::wal_writer w(wal, mh::wal_sync::none);
    res = mh::apply_plan(store, plan, w, ao);
  }
  std::filesystem::remove(wal);
  CHECK(res.applied.size() >= 1);  // the merge of sec-1 / sec-2
  const auto after = pipeline.run(store, when);
  const auto rep = mh::make_audit_report(original, store, before, after, plan, res);
  bool pending_masked = false;
  for (const auto& p : rep.pending)
    pending_masked = pending_masked || p.content.find("[secret ") != std::string::npos;
  CHECK(pending_masked);
  const std::vector<std::pair<const char*, std::string>> outputs{
      {"findings JSON", mh::findings_json(before).dump()},
      {"plan JSON", mh::plan_to_json(plan).dump()},
      {"audit JSON", mh::to_json(rep).dump()},
      {"audit Markdown", mh::to_markdown(rep)},
      {"audit HTML", mh::to_html(rep)}};
  for (const auto& out : outputs) {  // not a structured binding: CAPTURE's lambda (clang 14)
    const char* what = out.first;
    const std::string& text = out.second;
    CAPTURE(what);
    const bool masked_form = text.find("…(") != std::string::npos;  // evidence or span mask
    CHECK(masked_form);
    for (const auto& s : secrets) {
      CAPTURE(s);
      CHECK(text.find(s) == std::string::npos);
    }
  }
}

// ---------------------------------------------------------------- across runs (run_history.hpp)

namespace {

// t0 + h hours.
mh::utc_time hours_after(double h) {
  return at("2026-01-01T00:00:00Z") +
         std::chrono::milliseconds{static_cast<std::int64_t>(h * 3'600'000.0)};
}

// Ten full runs over five days (hours 0 ... 110), an error open after runs 3 and 4 (24 h, 30 h).
std::vector<mh::history_run> ten_runs() {
  std::vector<mh::history_run> v;
  const double hs[] = {0, 10, 24, 30, 50, 60, 72, 90, 100, 110};
  for (int k = 0; k < 10; ++k) v.push_back({hours_after(hs[k]), true, k == 2 || k == 3 ? 1u : 0u});
  return v;
}

}  // namespace

TEST_CASE("uptime: 10 runs over 5 days with an error in runs 3-4") {
  using namespace std::chrono;
  auto runs = ten_runs();
  std::reverse(runs.begin(), runs.end());  // any order
  SUBCASE("the whole five days") {
    // the error is open from the run at 24 h to the run at 50 h: 26 h of 120 h; clean 94 h
    const auto u = mh::uptime(runs, hours_after(0), hours_after(120));
    CHECK(u.measured == hours{120});
    CHECK(u.clean == hours{94});
    REQUIRE(u.time_share);
    CHECK(*u.time_share == doctest::Approx(94.0 / 120.0));  // 78.33 %
    CHECK(u.runs == 10);
    CHECK(u.clean_runs == 8);
    REQUIRE(u.run_share);
    CHECK(*u.run_share == doctest::Approx(0.8));
    CHECK(u.measured_from == hours_after(0));
  }
  SUBCASE("a window that opens while the error is open") {
    // [27 h, 120 h]: the run at 24 h left an error open: dirty 27-50 (23 h), clean 50-120 (70 h);
    // full runs inside: 30 (dirty), 50, 60, 72, 90, 100, 110
    const auto u = mh::uptime(runs, hours_after(27), hours_after(120));
    CHECK(u.measured == hours{93});
    CHECK(u.clean == hours{70});
    CHECK(*u.time_share == doctest::Approx(70.0 / 93.0));
    CHECK(u.runs == 7);
    CHECK(u.clean_runs == 6);
    CHECK(u.measured_from == hours_after(27));
  }
  SUBCASE("a window before the first run: nothing is known") {
    // from -10 h to 5 h: the state starts with the run at 0 h (clean): 5 h measured, all clean
    const auto u = mh::uptime(runs, hours_after(-10), hours_after(5));
    CHECK(u.measured_from == hours_after(0));
    CHECK(u.measured == hours{5});
    CHECK(*u.time_share == doctest::Approx(1.0));
    CHECK(u.runs == 1);
    const auto none = mh::uptime(runs, hours_after(-10), hours_after(-5));
    CHECK(!none.time_share);
    CHECK(!none.run_share);
    CHECK(none.measured.count() == 0);
  }
  SUBCASE("a state change between full runs counts in the time, not in the runs") {
    runs.push_back({hours_after(80), false, 2});  // errors from 80 h to the full run at 90 h
    const auto u = mh::uptime(runs, hours_after(0), hours_after(120));
    CHECK(u.clean == hours{84});  // 94 - 10
    CHECK(*u.time_share == doctest::Approx(0.7));
    CHECK(u.runs == 10);
    CHECK(u.clean_runs == 8);
  }
}

TEST_CASE("repair success: held, recurred, too early to say, never a success inside the window") {
  using namespace std::chrono;
  const auto runs = ten_runs();
  const mh::recurrence_window two_days{hours{48}, 0};
  mh::repaired_fault f{"k", "near_duplicate", "act", hours_after(12), std::nullopt};
  // the window closes at 12 + 48 = 60 h
  CHECK(mh::window_close(f.repaired_at, runs, two_days) == hours_after(60));
  CHECK(mh::judge_repair(f, runs, two_days, hours_after(59)) == mh::repair_verdict::too_early);
  CHECK(mh::judge_repair(f, runs, two_days, hours_after(60)) == mh::repair_verdict::held);
  // three full runs after 12 h: 24, 30, 50 -> closes at 50 h; with 2 days too: max(60, 50) = 60
  const mh::recurrence_window three_runs{hours{0}, 3};
  CHECK(mh::window_close(f.repaired_at, runs, three_runs) == hours_after(50));
  CHECK(mh::window_close(f.repaired_at, runs, {hours{48}, 3}) == hours_after(60));
  CHECK(mh::judge_repair(f, runs, three_runs, hours_after(50)) == mh::repair_verdict::held);
  // ten full runs after 100 h have not happened: no close, too early
  CHECK(!mh::window_close(hours_after(100), runs, {hours{0}, 10}));
  // found again at 30 h: recurred (inside both windows)
  f.recurred_at = hours_after(30);
  CHECK(mh::judge_repair(f, runs, two_days, hours_after(40)) == mh::repair_verdict::recurred);
  // found again at 70 h, after the 2-day window closed at 60 h: it held for the window
  f.recurred_at = hours_after(70);
  CHECK(mh::judge_repair(f, runs, two_days, hours_after(80)) == mh::repair_verdict::held);
  CHECK(mh::judge_repair(f, runs, three_runs, hours_after(80)) == mh::repair_verdict::held);

  // four faults at 120 h, 2-day window: held (12 h, never seen), recurred (12 h, seen at 30 h),
  // too early (100 h, window to 148 h), recurred while the window is open (100 h, seen at 110 h)
  const std::vector<mh::repaired_fault> faults{
      {"k1", "near_duplicate", "a1", hours_after(12), std::nullopt},
      {"k2", "conflict", "a1", hours_after(12), hours_after(30)},
      {"k3", "stale", "a2", hours_after(100), std::nullopt},
      {"k4", "conflict", "a3", hours_after(100), hours_after(110)}};
  const auto s = mh::repair_success(faults, runs, two_days, hours_after(120));
  CHECK(s.repaired == 4);
  CHECK(s.held == 1);
  CHECK(s.recurred == 2);
  CHECK(s.too_early == 1);
  REQUIRE(s.success_rate);
  CHECK(*s.success_rate == doctest::Approx(1.0 / 3.0));
  // only faults inside their window: no rate at all (never 100 %)
  const auto early = mh::repair_success({faults[2]}, runs, two_days, hours_after(120));
  CHECK(early.too_early == 1);
  CHECK(!early.success_rate);

  // the audit report shows the counts and the rates in every format
  mh::audit_report rep;
  rep.history =
      mh::history_figures("store-a", faults, runs, two_days, hours{120}, hours_after(120));
  CHECK(rep.history->faults.front().finding_key == "k3");  // newest first (k3, k4 at 100 h)
  const std::string md = mh::to_markdown(rep);
  CHECK(md.find("## Across runs") != std::string::npos);
  CHECK(md.find("4 faults repaired, 1 held, 2 recurred, 1 too early to say; success rate 33.3% "
                "(1 of 3 with a verdict") != std::string::npos);
  CHECK(md.find("stayed away 2d)") != std::string::npos);
  CHECK(md.find("Uptime over the last 5d: 78.3% of the time without an open error or critical "
                "finding (94.0 h of 120.0 h measured since 2026-01-01T00:00:00") !=
        std::string::npos);
  CHECK(md.find("80.0% of full check runs (8 of 10)") != std::string::npos);
  CHECK(md.find("| conflict | too early to say |") == std::string::npos);
  CHECK(md.find("| stale | too early to say |") != std::string::npos);
  const auto j = mh::to_json(rep)["across_runs"];
  CHECK(j["repaired"] == 4);
  CHECK(j["held"] == 1);
  CHECK(j["recurred"] == 2);
  CHECK(j["too_early"] == 1);
  CHECK(j["success_rate"].get<double>() == doctest::Approx(1.0 / 3.0));
  CHECK(j["window"]["ms"] == 48 * 3'600'000);
  CHECK(j["uptime"]["clean_ms"] == 94 * 3'600'000);
  CHECK(j["uptime"]["measured_ms"] == 120 * 3'600'000);
  CHECK(j["uptime"]["runs"] == 10);
  CHECK(j["uptime"]["clean_runs"] == 8);
  CHECK(j["faults"].size() == 4);
  CHECK(j["faults"][0]["verdict"] == "too early to say");
  CHECK(j["faults"][0]["recurred_at"].is_null());
  const std::string html = mh::to_html(rep);
  CHECK(html.find("id=\"across-runs\" data-repaired=\"4\" data-held=\"1\" data-recurred=\"2\" "
                  "data-too-early=\"1\"") != std::string::npos);
  // nothing repaired yet: the JSON says so with nulls, the text with words
  rep.history = mh::history_figures("store-b", {}, {}, two_days, hours{120}, hours_after(120));
  const auto j2 = mh::to_json(rep)["across_runs"];
  CHECK(j2["success_rate"].is_null());
  CHECK(j2["uptime"]["time_share"].is_null());
  CHECK(mh::to_markdown(rep).find("no success rate yet") != std::string::npos);
}

TEST_CASE("finding_key and findings_addressed link a repair to the faults it repaired") {
  mh::finding f;
  f.detector = "duplicates";
  f.kind = "near_duplicate";
  f.record_ids = {"b", "a"};
  f.with("field", std::string("x"));
  CHECK(mh::finding_key(f) ==
        "duplicates\x1fnear_duplicate\x1f"
        "a\x1f"
        "b\x1f"
        "field=x");
  mh::finding g = f;
  g.record_ids = {"a"};
  g.detector.clear();
  mh::repair_action act;
  act.reasons = {"near_duplicate: b a (duplicates)", "suggested: merge"};
  // f's reason is "near_duplicate: b a (duplicates)"; g's is "near_duplicate: a" (not a prefix
  // of any reason followed by a space or the end)
  CHECK(mh::findings_addressed(act, {f, g}) == std::vector<std::size_t>{0});
  act.reasons = {"near_duplicate: a -> b"};
  CHECK(mh::findings_addressed(act, {f, g}) == std::vector<std::size_t>{1});
  // with the planner's own reasons: an illegal status on r1 is addressed by the action planned
  // for it, and the finding about r2 is not
  std::vector<mh::memory_record> recs(2);
  for (std::size_t k = 0; k < 2; ++k) {
    recs[k].id = "r" + std::to_string(k + 1);
    recs[k].content = "the user has pet number " + std::to_string(k + 1);
    recs[k].embedding = {1.0f, 0.0f};
    recs[k].scope = "user:1";
    recs[k].source = "user_declared";
    recs[k].kind = "fact";
    recs[k].status = "bogus";
  }
  auto store = mh::memory_store<>::from_records(std::move(recs));
  mh::report rep;
  for (const char* id : {"r1", "r2"}) {
    mh::finding s;
    s.detector = "structural";
    s.kind = std::string(mh::finding_kinds::illegal_status);
    s.severity = mh::severity::error;
    s.record_ids = {id};
    rep.findings.push_back(s);
  }
  const auto plan = mh::make_plan(store, rep, mh::planner_options{});
  std::set<std::size_t> addressed;
  for (const auto& a : plan.actions) {
    const auto hit = mh::findings_addressed(a, rep.findings);
    REQUIRE(hit.size() == 1);  // each action addresses the finding of its own record
    CHECK(rep.findings[hit[0]].record_ids == a.targets);
    addressed.insert(hit[0]);
  }
  CHECK(addressed == std::set<std::size_t>{0, 1});
}

// Texts from the store reach the Markdown report with their control characters as \xNN: a
// record whose text holds an OSC title sequence, a clear-screen sequence or a newline (a tester
// found them copied raw into `apply --report r.md`, so `cat r.md` restyled the terminal).
TEST_CASE(
    "audit report: control characters of ids and texts are shown as hex escapes in Markdown") {
  CHECK(mh::printable("a\x1b[2Jb\x07"
                      "c\nd\x7f\te") == "a\\x1b[2Jb\\x07c\\x0ad\\x7f\\x09e");
  CHECK(mh::printable("line1\nline2\tx\x1b", true) == "line1\nline2\tx\\x1b");
  CHECK(mh::printable("用户 naïve ✓") == "用户 naïve ✓");  // UTF-8 as it is
  CHECK(mh::printable(std::string("nul\0in", 6)) == "nul\\x00in");
  mh::audit_report r;
  r.title = "t";
  r.pending.push_back({"id\nforged", "status pending_review", "Same \x1b]0;pwned\x07 text"});
  const std::string md = mh::to_markdown(r);
  CHECK(md.find("- `id\\x0aforged`: status pending_review -- Same \\x1b]0;pwned\\x07 text\n") !=
        std::string::npos);
  CHECK(md.find('\x1b') == std::string::npos);
  CHECK(md.find('\x07') == std::string::npos);
}

TEST_CASE("audit report: retrieval figures before and after in Markdown, JSON and HTML") {
  mh::audit_report r;
  r.title = "t";
  CHECK(mh::to_markdown(r).find("## Retrieval") == std::string::npos);  // no events: no section
  CHECK(mh::to_html(r).find("<h2>Retrieval</h2>") == std::string::npos);
  CHECK_FALSE(mh::to_json(r).contains("retrieval"));
  mh::audit_retrieval b;
  b.when = "before";
  b.events = "ev.jsonl";
  b.retrievals = 192;
  b.p95_latency_ms = 340.0;
  b.duplicate_share = 11.0 / 31.0;  // 0.3548...: "0.355"
  b.duplicate_results = 11;
  b.topk_compared = 31;
  b.ghost_results = 3;
  b.scope_leaks = 2;
  b.version_mismatches = 6;
  mh::audit_retrieval a;
  a.when = "after";
  a.events = "<after>.jsonl";
  a.retrievals = 10;
  a.p95_latency_ms = 10.04;  // "10.0"
  r.retrieval = {b, a};
  CHECK(mh::retrieval_text(b) ==
        "P95 latency 340.0 ms, duplicate share of top-k 0.355 (11 of 31), ghost results 3, scope "
        "leaks 2, query-model mismatches 6, over 192 retrievals");
  const std::string md = mh::to_markdown(r);
  CHECK(
      md.ends_with("\n## Retrieval\n\n- before (ev.jsonl): P95 latency 340.0 ms, duplicate "
                   "share of top-k 0.355 (11 of 31), ghost results 3, scope leaks 2, query-model "
                   "mismatches 6, over 192 retrievals\n- after (<after>.jsonl): P95 latency 10.0 "
                   "ms, duplicate share of top-k 0.000 (0 of 0), ghost results 0, scope leaks 0, "
                   "query-model mismatches 0, over 10 retrievals\n"));
  const std::string html = mh::to_html(r);
  CHECK(html.find("<h2>Retrieval</h2>\n<table id=\"retrieval\">") != std::string::npos);
  CHECK(html.find("<tr data-when=\"before\" data-ghost-results=\"3\" data-p95-latency-ms=\"340.0\">"
                  "<td>before</td><td>ev.jsonl</td><td>192</td><td>340.0</td><td>0.355 (11 of "
                  "31)</td><td>3</td><td>2</td><td>6</td></tr>") != std::string::npos);
  // the file name is escaped
  CHECK(html.find("<td>&lt;after&gt;.jsonl</td>") != std::string::npos);
  const auto j = mh::to_json(r);
  REQUIRE(j["retrieval"].size() == 2);
  CHECK(j["retrieval"][0]["when"] == "before");
  CHECK(j["retrieval"][0]["ghost_results"] == 3);
  CHECK(j["retrieval"][1]["events"] == "<after>.jsonl");
  CHECK(j["retrieval"][1]["p95_latency_ms"] == 10.04);
}

}  // namespace audit_test
