// Tests of level-3 detection: retrieval events, windowed metrics and alerts, integrity of served
// results (monitor/), embedding drift and the migration gate (drift/), the latter on real vectors
// (the weaviate-jeopardy-embeddings data set: 10 texts, all-MiniLM-L6-v2 384-d, ada-002 1536-d,
// ada-002 re-run). Expected values were worked out by hand or with a one-off Python script
// (pure Python over the JSON files), not copied from this code's output.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "memhealth/drift/drift.hpp"
#include "memhealth/drift/migration_gate.hpp"
#include "memhealth/monitor/events.hpp"
#include "memhealth/monitor/latency_sketch.hpp"
#include "memhealth/monitor/retrieval_monitor.hpp"
#include "memhealth/record/memory_record.hpp"
#include "memhealth/repair/executor.hpp"
#include "memhealth/repair/planner.hpp"
#include "memhealth/store/memory_store.hpp"

#include "../examples/flat_index.hpp"
#include "repair_test_support.hpp"
#include "test_data.hpp"

namespace monitor_drift_test {
using namespace memhealth;

namespace {

// ---------- the simulated store and event streams ----------

constexpr std::size_t dim = 64;

std::vector<float> basis(std::size_t i) {
  std::vector<float> v(dim, 0.0f);
  v[i] = 1.0f;
  return v;
}

memory_record rec(std::string id, std::string scope, std::vector<float> e,
                  std::string status = "active") {
  memory_record r;
  r.id = std::move(id);
  r.content = "memory " + r.id;
  r.embedding = std::move(e);
  r.embedding_version = "model-v1";
  r.scope = std::move(scope);
  r.status = std::move(status);
  r.source = "user_declared";
  r.kind = "fact";
  return r;
}

// m0..m29 in user:1 and m30..m39 in user:2 on orthogonal axes (cosine 0 between them);
// d0..d4 near-copies of m0..m4: (e_i + 0.1 e_{40+i}) / |.|, cosine 1/sqrt(1.01) = 0.995 >= 0.92;
// a0 archived, p0 pending_review; "gone-1" is not in the store (deleted).
memory_store<> make_store() {
  std::vector<memory_record> rs;
  for (std::size_t i = 0; i < 40; ++i)
    rs.push_back(rec("m" + std::to_string(i), i < 30 ? "user:1" : "user:2", basis(i)));
  for (std::size_t i = 0; i < 5; ++i) {
    auto v = basis(i);
    v[40 + i] = 0.1f;
    const float n = std::sqrt(1.01f);
    for (float& x : v) x /= n;
    rs.push_back(rec("d" + std::to_string(i), "user:1", std::move(v)));
  }
  rs.push_back(rec("a0", "user:1", basis(50), "archived"));
  rs.push_back(rec("p0", "user:1", basis(51), "pending_review"));
  return memory_store<>::from_records(std::move(rs), dim);
}

const timestamp t0 = *parse_timestamp("2024-07-01T00:00:00Z");

struct stream {
  std::vector<retrieval_event> retrievals;
  std::vector<feedback_event> feedback;
};

struct plants {
  bool latency_spike = false;    // hour 2: latencies x10
  bool duplicate_surge = false;  // hour 3: every list holds two near-duplicate pairs
  bool scope_leak = false;       // hour 4: 3 retrievals serve m31 (scope user:2)
  bool ghosts = false;           // hour 5: 4 retrievals serve "gone-1", 2 serve "a0"
  bool long_spike = false;       // hours 2 and 3: latencies x10
  bool similarity_drop = false;  // hour 1: top-1 similarity 0.6 instead of 0.8
  bool empties = false;          // hour 2: 10 of 50 retrievals return nothing
  bool negative = false;         // hour 3: 6 of 10 feedback events rejected
};

// Six hourly windows of partition user:1, 50 retrievals and 10 feedback events each (1 rejected).
stream simulate(const plants& p, std::uint64_t seed = 7) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> lat(20.0, 40.0), jitter(-0.05, 0.05);
  std::uniform_int_distribution<int> pick(5, 29);
  stream s;
  for (int h = 0; h < 6; ++h) {
    for (int j = 0; j < 50; ++j) {
      retrieval_event e;
      e.time = timestamp_from_epoch_ms(epoch_ms(t0) + h * 3'600'000LL + j * 60'000LL);
      e.partition = "user:1";
      e.requested_scopes = {"user:1"};
      e.query_embedding_version = "model-v1";
      const bool spike = (p.latency_spike && h == 2) || (p.long_spike && (h == 2 || h == 3));
      e.latency_ms = lat(rng) * (spike ? 10.0 : 1.0);
      std::vector<std::string> ids;
      if (p.duplicate_surge && h == 3) {
        const int a = j % 5, b = (j + 1) % 5;
        ids = {"m" + std::to_string(a), "d" + std::to_string(a), "m" + std::to_string(b),
               "d" + std::to_string(b)};
        ids.push_back("m" + std::to_string(pick(rng)));
      } else {
        while (ids.size() < 5) {
          std::string id = "m" + std::to_string(pick(rng));
          if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(std::move(id));
        }
      }
      if (p.scope_leak && h == 4 && j < 3) ids[4] = "m31";
      if (p.ghosts && h == 5 && j < 4) ids[3] = "gone-1";
      if (p.ghosts && h == 5 && j >= 10 && j < 12) ids[4] = "a0";
      if (p.empties && h == 2 && j % 5 == 0) ids.clear();
      const double top = (p.similarity_drop && h == 1 ? 0.6 : 0.8) + jitter(rng);
      for (std::size_t r = 0; r < ids.size(); ++r)
        e.results.push_back(
            {ids[r], top - 0.02 * static_cast<double>(r), static_cast<std::uint32_t>(r + 1)});
      s.retrievals.push_back(std::move(e));
    }
    for (int j = 0; j < 10; ++j) {
      feedback_event f;
      f.time = timestamp_from_epoch_ms(epoch_ms(t0) + h * 3'600'000LL + j * 300'000LL);
      f.partition = "user:1";
      f.feedback = j == 0 || (p.negative && h == 3 && j < 6) ? feedback_kind::rejected
                                                             : feedback_kind::accepted;
      f.id = "m" + std::to_string(5 + j);
      s.feedback.push_back(std::move(f));
    }
  }
  return s;
}

std::string ev_text(const finding& f, const char* key) {
  const auto* v = f.evidence_of(key);
  return v && std::holds_alternative<std::string>(*v) ? std::get<std::string>(*v) : std::string();
}
double ev_num(const finding& f, const char* key) {
  const auto* v = f.evidence_of(key);
  if (!v) return std::nan("");
  if (std::holds_alternative<double>(*v)) return std::get<double>(*v);
  if (std::holds_alternative<std::int64_t>(*v))
    return static_cast<double>(std::get<std::int64_t>(*v));
  return std::nan("");
}

// ---------- the jeopardy vectors ----------

row_matrix load_vectors(const char* file, const char* key) {
  const auto p = ::memhealth::test::find_data(std::string("weaviate-jeopardy-embeddings/") + file);
  REQUIRE_MESSAGE(
      p, ::memhealth::test::skip_message(std::string("weaviate-jeopardy-embeddings/") + file));
  std::ifstream in(*p);
  REQUIRE(in.good());
  const auto j = nlohmann::json::parse(in);
  REQUIRE(j.is_array());
  const auto d = static_cast<Eigen::Index>(j.at(0).at(key).size());
  row_matrix m(static_cast<Eigen::Index>(j.size()), d);
  for (std::size_t i = 0; i < j.size(); ++i)
    for (Eigen::Index c = 0; c < d; ++c)
      m(static_cast<Eigen::Index>(i), c) = j[i][key][static_cast<std::size_t>(c)].get<float>();
  return m;
}

row_matrix minilm() {
  return load_vectors("jeopardy_tiny_with_vectors_all-MiniLM-L6-v2.json", "vector");
}
row_matrix ada() {
  return load_vectors("jeopardy_tiny_with_vectors_all-OpenAI-ada-002.json", "vector");
}
row_matrix ada_rerun() {
  return load_vectors("jeopardy_tiny+vectors.json", "Vector");
}

}  // namespace

TEST_CASE("latency_sketch: quantiles of a hand-made list within the documented relative error") {
  latency_sketch s(0.01);
  for (int i = 1; i <= 100; ++i) s.add(i);
  // lower nearest rank r = floor(q (n - 1)): P50 -> x_49 = 50, P95 -> x_94 = 95, P99 -> x_98 = 99
  CHECK(std::abs(s.quantile(0.50) - 50.0) <= 0.01 * 50.0);
  CHECK(std::abs(s.quantile(0.95) - 95.0) <= 0.01 * 95.0);
  CHECK(std::abs(s.quantile(0.99) - 99.0) <= 0.01 * 99.0);
  CHECK(std::abs(s.quantile(0.0) - 1.0) <= 0.01);
  CHECK(s.count() == 100);

  latency_sketch lo(0.01), hi(0.01);
  for (int i = 1; i <= 50; ++i) lo.add(i);
  for (int i = 51; i <= 100; ++i) hi.add(i);
  lo.merge(hi);
  CHECK(lo.quantile(0.95) == s.quantile(0.95));  // merge is exact: same buckets

  latency_sketch z;
  for (double x : {0.0, 0.0, 0.0, 10.0}) z.add(x);
  CHECK(z.quantile(0.5) == 0.0);  // x_1 = 0
  CHECK(std::abs(z.quantile(1.0) - 10.0) <= 0.1);
  CHECK(latency_sketch{}.quantile(0.5) == 0.0);
  CHECK_THROWS_AS(latency_sketch(1.5), error);
}

TEST_CASE("events: JSONL round trip and bad lines become load issues") {
  retrieval_event e;
  e.time = *parse_timestamp("2024-07-01T08:30:00+08:00");
  e.partition = "user:1";
  e.requested_scopes = {"user:1", "user:1/project:a"};
  e.query_embedding_version = "model-v1";
  e.latency_ms = 12.5;
  e.results = {{"m1", 0.91, 1}, {"m2", 0.5, 2}};
  feedback_event f{*parse_timestamp("2024-07-01T01:00:00Z"), "user:1",
                   feedback_kind::memory_deleted, "m2"};
  const std::string text =
      to_jsonl(e) + "\n" + to_jsonl(f) + "\nnot json\n" +
      R"({"type":"retrieval","partition":"x"})" + "\n" +
      R"({"type":"feedback","time":1719795600000,"feedback":"loved_it","id":"m1"})" + "\n" +
      R"({"type":"retrieval","time":1719795600000,"partition":"user:1","latency_ms":-3,"results":[{"id":"m9","similarity":0.7}]})" +
      "\n";
  const auto r = parse_events_jsonl(text, "ev.jsonl");
  REQUIRE(r.retrievals.size() == 2);
  REQUIRE(r.feedback.size() == 1);
  CHECK(r.lines_read == 6);
  CHECK(r.retrievals[0].time == e.time);
  CHECK(epoch_ms(r.retrievals[0].time) == 1719793800000LL);  // 00:30Z
  CHECK(r.retrievals[0].requested_scopes == e.requested_scopes);
  CHECK(r.retrievals[0].latency_ms == 12.5);
  REQUIRE(r.retrievals[0].results.size() == 2);
  CHECK(r.retrievals[0].results[1].id == "m2");
  CHECK(r.retrievals[0].results[1].rank == 2);
  CHECK(r.feedback[0].feedback == feedback_kind::memory_deleted);
  CHECK(r.retrievals[1].results[0].rank == 1);  // rank defaults to list position
  CHECK(r.retrievals[1].latency_ms == 0.0);
  // not json (line 3), no time (4), unknown feedback (5): skipped; negative latency (6): kept
  REQUIRE(r.issues.size() == 4);
  CHECK(r.issues[0].line == 3);
  CHECK_FALSE(r.issues[0].record_kept);
  CHECK(r.issues[1].field == "time");
  CHECK(r.issues[2].field == "feedback");
  CHECK(r.issues[3].field == "latency_ms");
  CHECK(r.issues[3].record_kept);
}

TEST_CASE("monitor: the clean stream raises nothing") {
  const auto store = make_store();
  const auto s = simulate({});
  const auto res = monitor_retrievals(store, std::span(s.retrievals), std::span(s.feedback));
  CHECK(res.findings.findings.empty());
  REQUIRE(res.windows.size() == 6);
  for (std::size_t h = 0; h < 6; ++h) {
    const auto& w = res.windows[h];
    CHECK(w.partition == "user:1");
    CHECK(epoch_ms(w.start) == epoch_ms(t0) + static_cast<std::int64_t>(h) * 3'600'000LL);
    CHECK(w.retrievals == 50);
    CHECK(w.empty == 0);
    CHECK(w.topk_compared == 250);
    CHECK(w.duplicate_results == 0);
    CHECK(w.feedback_total == 10);
    CHECK(w.negative_feedback_rate == doctest::Approx(0.1));
    CHECK(w.p95_latency_ms <= 40.0 * 1.01);
    CHECK(w.p50_latency_ms >= 20.0 * 0.99);
    CHECK(w.mean_top1_similarity == doctest::Approx(0.8).epsilon(0.02));
    // mean top-k = mean top-1 - 0.02 x mean(0..4) = top-1 - 0.04
    CHECK(w.mean_topk_similarity == doctest::Approx(w.mean_top1_similarity - 0.04));
  }
}

TEST_CASE(
    "monitor: planted latency spike, duplicate surge, scope leak and ghosts, each in its window") {
  const auto store = make_store();
  const auto s = simulate({true, true, true, true});
  const auto res = monitor_retrievals(store, std::span(s.retrievals), std::span(s.feedback));
  const auto& fs = res.findings.findings;
  REQUIRE(res.windows.size() == 6);
  CHECK(res.findings.count(finding_kinds::latency_regression) == 1);
  CHECK(res.findings.count(finding_kinds::duplicate_share_high) == 1);
  CHECK(res.findings.count(finding_kinds::scope_leak) == 1);
  CHECK(res.findings.count(finding_kinds::ghost_result) == 2);
  CHECK(fs.size() == 5);  // nothing else: no similarity, empty-result or feedback alert

  for (const auto& f : fs) {
    CHECK(f.detector == "retrieval_monitor");
    CHECK(ev_text(f, "partition") == "user:1");
    if (f.kind == finding_kinds::latency_regression) {
      CHECK(ev_text(f, "window_start") == "2024-07-01T02:00:00.000Z");
      CHECK(ev_text(f, "against") ==
            "baseline");  // P95 about 400 ms < 1000 ms, but >= 3x the baseline
      CHECK(ev_num(f, "p95_latency_ms") >= 3.0 * ev_num(f, "baseline_p95_latency_ms"));
      CHECK(f.severity == severity::warning);
    } else if (f.kind == finding_kinds::duplicate_share_high) {
      CHECK(ev_text(f, "window_start") == "2024-07-01T03:00:00.000Z");
      CHECK(ev_num(f, "duplicate_share") ==
            doctest::Approx(0.4));  // 2 copies in each list of 5: 100 / 250
      CHECK(ev_text(f, "against") == "absolute+baseline");
      CHECK(f.record_ids ==
            std::vector<std::string>{"d0", "d1", "d2", "d3", "d4"});  // distinct, first-seen order
    } else if (f.kind == finding_kinds::scope_leak) {
      CHECK(ev_text(f, "window_start") == "2024-07-01T04:00:00.000Z");
      CHECK(f.severity == severity::critical);
      CHECK(f.record_ids == std::vector<std::string>{"m31"});
      CHECK(ev_num(f, "occurrences") == 3);
      CHECK(ev_num(f, "events") == 3);
      CHECK(ev_text(f, "record_scope") == "user:2");
    } else if (f.kind == finding_kinds::ghost_result) {
      CHECK(ev_text(f, "window_start") == "2024-07-01T05:00:00.000Z");
      CHECK(f.severity == severity::error);
      if (ev_text(f, "reason") == "missing") {
        CHECK(f.record_ids == std::vector<std::string>{"gone-1"});
        CHECK(ev_num(f, "occurrences") == 4);
      } else {
        CHECK(ev_text(f, "reason") == "archived");
        CHECK(f.record_ids == std::vector<std::string>{"a0"});
        CHECK(ev_num(f, "occurrences") == 2);
      }
    }
  }
  CHECK(res.windows[3].duplicate_results == 100);
  CHECK(res.windows[3].topk_compared == 250);
  CHECK(res.windows[4].scope_leaks == 3);
  CHECK(res.windows[5].ghost_results == 6);
}

TEST_CASE("summarize_retrievals: pooled P95, duplicate share and integrity counts by hand") {
  const auto store = make_store();
  // 20 retrievals, latency i+1 ms (1..20). i<5: [m0, d0] (d0 a near copy of m0: 1 duplicate of 2
  // compared); i 5..7: [gone-1, m1] (a ghost, not compared; m1 compared); i 8,9: [m31] (scope
  // user:2 for a user:1 query: a leak); i>=10: [m<i>]. Query model-v2 at i=19 (m19 is v1).
  std::vector<retrieval_event> ev;
  for (int i = 0; i < 20; ++i) {
    retrieval_event e;
    e.time = timestamp_from_epoch_ms(epoch_ms(t0) + i * 60'000LL);
    e.partition = "user:1";
    e.requested_scopes = {"user:1"};
    e.query_embedding_version = i == 19 ? "model-v2" : "model-v1";
    e.latency_ms = i + 1;
    std::vector<std::string> ids;
    if (i < 5)
      ids = {"m0", "d0"};
    else if (i < 8)
      ids = {"gone-1", "m1"};
    else if (i < 10)
      ids = {"m31"};
    else
      ids = {"m" + std::to_string(i)};
    for (std::size_t r = 0; r < ids.size(); ++r)
      e.results.push_back(
          {ids[r], 0.9 - 0.1 * static_cast<double>(r), static_cast<std::uint32_t>(r + 1)});
    ev.push_back(std::move(e));
  }
  const auto f = summarize_retrievals(store, std::span(ev));
  CHECK(f.retrievals == 20);
  // P95 = x_r, r = floor(0.95 x 19) = 18: the 19th smallest, 19 ms (within 1%)
  CHECK(f.p95_latency_ms == doctest::Approx(19.0).epsilon(0.01));
  CHECK(f.topk_compared == 25);  // 5 x 2 + 3 x 1 + 2 x 1 + 10 x 1
  CHECK(f.duplicate_results == 5);
  CHECK(f.duplicate_share == doctest::Approx(0.2));
  CHECK(f.ghost_results == 3);
  CHECK(f.scope_leaks == 2);
  CHECK(f.version_mismatches == 1);
  const auto none = summarize_retrievals(store, std::span<const retrieval_event>{});
  CHECK(none.retrievals == 0);
  CHECK(none.p95_latency_ms == 0.0);
  CHECK(none.duplicate_share == 0.0);
}

TEST_CASE("alarms end to end: ghost results served -> clean-up planned -> flat index cleaned") {
  // k1 (1,0), k2 (0,1), k3 (0.6,0.8) active; k4 (1,0) archived; "gone" is not in the store.
  auto krec = [](std::string id, std::vector<float> e, std::string status) {
    memory_record r = rec(std::move(id), "user:1", {}, std::move(status));
    r.embedding = std::move(e);
    return r;
  };
  auto store = memory_store<>::from_records(
      {krec("k1", {1.0f, 0.0f}, "active"), krec("k2", {0.0f, 1.0f}, "active"),
       krec("k3", {0.6f, 0.8f}, "active"), krec("k4", {1.0f, 0.0f}, "archived")},
      2);
  // 12 retrievals in one hour, 10 ms each: i<3 serve [k1, gone], i 3,4 serve [k1, k4], the rest
  // [k1, k2]. Ghost slots 3 + 2 = 5; compared 12 x 2 - 3 = 21, duplicates 2 (k4 = k1).
  std::vector<retrieval_event> ev;
  for (int i = 0; i < 12; ++i) {
    retrieval_event e;
    e.time = timestamp_from_epoch_ms(epoch_ms(t0) + i * 60'000LL);
    e.partition = "user:1";
    e.query_embedding_version = "model-v1";
    e.latency_ms = 10;
    const std::string second = i < 3 ? "gone" : i < 5 ? "k4" : "k2";
    e.results = {{"k1", 0.95, 1}, {second, 0.5, 2}};
    ev.push_back(std::move(e));
  }
  const auto mon = monitor_retrievals(store, std::span(ev), std::span<const feedback_event>{});
  REQUIRE(mon.findings.findings.size() == 2);  // two ghost findings (missing, archived), no alert
  const auto plan = make_plan(store, mon.findings, planner_options{});
  REQUIRE(plan.actions.size() == 1);
  CHECK(plan.actions[0].type == action_types::clean_index);
  CHECK(plan.actions[0].targets == std::vector<std::string>{"gone", "k4"});
  const auto before = summarize_retrievals(store, std::span(ev));
  CHECK(before.ghost_results == 5);
  CHECK(before.duplicate_results == 2);
  CHECK(before.topk_compared == 21);

  memhealth::test::scratch_dir dir("alarms-e2e", "memhealth-monitor-test");
  const auto ix_path = dir.path / "index.jsonl";
  examples::flat_index ix(2, "model-v1");  // 5 vectors: the 3 live records and the 2 ghosts
  ix.upsert("k1", {1.0f, 0.0f});
  ix.upsert("k2", {0.0f, 1.0f});
  ix.upsert("k3", {0.6f, 0.8f});
  ix.upsert("gone", {0.0f, 1.0f});
  ix.upsert("k4", {1.0f, 0.0f});
  ix.save(ix_path);
  examples::flat_index_policy<memory_store<>> policy(ix_path, store);
  {
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    apply_options opt;
    opt.index = make_index_hooks(policy);
    const auto res = apply_plan(store, plan, wal, opt);
    CHECK(res.applied.size() == 1);
    CHECK(res.records_changed == 0);
  }
  const auto cleaned = examples::flat_index::load(ix_path);
  CHECK(cleaned.ids() == std::vector<std::string>{"k1", "k2", "k3"});  // exactly the 2 removed
  // after: the same queries (1,0) served by the cleaned index, top 2: k1 (1.0), k3 (0.6)
  std::vector<retrieval_event> after_ev;
  for (int i = 0; i < 12; ++i) {
    retrieval_event e = ev[static_cast<std::size_t>(i)];
    e.results.clear();
    std::uint32_t rank = 1;
    for (const auto& [id, sim] : cleaned.search(std::vector<float>{1.0f, 0.0f}, 2))
      e.results.push_back({id, sim, rank++});
    after_ev.push_back(std::move(e));
  }
  const auto after = summarize_retrievals(store, std::span(after_ev));
  CHECK(after.ghost_results == 0);
  CHECK(after.duplicate_results == 0);  // cos(k1, k3) = 0.6 < 0.92
  CHECK(after.topk_compared == 24);
  CHECK(after.p95_latency_ms == doctest::Approx(10.0).epsilon(0.01));
}

TEST_CASE("monitor: a window that alerted stays out of the rolling baseline") {
  // Hours 2 and 3 are both slow. Hour 2 alerts and is not pooled, so hour 3 is compared with
  // hours 0-1 and alerts too; had hour 2 been pooled, a third of the baseline would be slow and
  // its P95 (rank 142 of 150) would be a slow latency, hiding hour 3.
  const auto store = make_store();
  plants p;
  p.long_spike = true;
  const auto s = simulate(p);
  const auto res = monitor_retrievals(store, std::span(s.retrievals), std::span(s.feedback));
  REQUIRE(res.findings.findings.size() == 2);
  CHECK(ev_text(res.findings.findings[0], "window_start") == "2024-07-01T02:00:00.000Z");
  CHECK(ev_text(res.findings.findings[1], "window_start") == "2024-07-01T03:00:00.000Z");
  for (const auto& f : res.findings.findings) CHECK(f.kind == finding_kinds::latency_regression);
}

TEST_CASE(
    "monitor: planted similarity drop, empty results and negative feedback, each in its window") {
  const auto store = make_store();
  plants p;
  p.similarity_drop = p.empties = p.negative = true;
  const auto s = simulate(p);
  const auto res = monitor_retrievals(store, std::span(s.retrievals), std::span(s.feedback));
  const auto& fs = res.findings.findings;
  REQUIRE(fs.size() == 3);
  CHECK(fs[0].kind == finding_kinds::similarity_drop);
  CHECK(ev_text(fs[0], "window_start") == "2024-07-01T01:00:00.000Z");
  CHECK(ev_text(fs[0], "against") == "baseline");  // 0.6 is above the absolute floor 0.2
  CHECK(ev_num(fs[0], "mean_top1_similarity") == doctest::Approx(0.6).epsilon(0.03));
  CHECK(fs[1].kind == finding_kinds::empty_results);
  CHECK(ev_text(fs[1], "window_start") == "2024-07-01T02:00:00.000Z");
  CHECK(ev_num(fs[1], "empty_rate") == 0.2);  // 10 / 50
  CHECK(ev_text(fs[1], "against") == "absolute+baseline");
  CHECK(fs[2].kind == finding_kinds::feedback_negative);
  CHECK(ev_text(fs[2], "window_start") == "2024-07-01T03:00:00.000Z");
  CHECK(ev_num(fs[2], "negative_feedback_rate") == doctest::Approx(0.6));  // 6 / 10
  CHECK(fs[2].record_ids == std::vector<std::string>{"m5", "m6", "m7", "m8", "m9", "m10"});
  CHECK(res.windows[2].empty == 10);
}

TEST_CASE(
    "monitor: hand-made windows give exact metrics, absolute thresholds, explicit baseline, "
    "version mismatch") {
  const auto store = make_store();
  monitor_options o;
  o.min_retrievals = 4;
  o.min_feedback = 2;
  o.top_k = 2;
  std::vector<retrieval_event> rs;
  // one window (00:00-01:00), 4 retrievals: latencies 10, 20, 30, 2000 ms; one empty
  const double lats[] = {10, 20, 30, 2000};
  for (int j = 0; j < 4; ++j) {
    retrieval_event e;
    e.time = timestamp_from_epoch_ms(epoch_ms(t0) + j * 1000);
    e.partition = "user:1";
    e.query_embedding_version = j == 0 ? "model-v2" : "model-v1";
    e.latency_ms = lats[j];
    if (j < 3) e.results = {{"m1", 0.9 - 0.1 * j, 1}, {"d1", 0.5, 2}, {"m2", 0.4, 3}};
    rs.push_back(std::move(e));
  }
  std::vector<feedback_event> fb = {{t0, "user:1", feedback_kind::memory_edited, "m1"},
                                    {t0, "user:1", feedback_kind::rejected, "m2"},
                                    {t0, "user:1", feedback_kind::accepted, "m3"}};
  const auto res = monitor_retrievals(store, std::span(rs), std::span(fb), o);
  REQUIRE(res.windows.size() == 1);
  const auto& w = res.windows[0];
  CHECK(w.empty == 1);
  CHECK(w.empty_rate == 0.25);
  CHECK(w.mean_top1_similarity == doctest::Approx((0.9 + 0.8 + 0.7) / 3));
  CHECK(w.mean_topk_similarity == doctest::Approx((0.9 + 0.8 + 0.7 + 3 * 0.5) / 6));  // top_k = 2
  CHECK(w.topk_compared == 6);
  CHECK(w.duplicate_results == 3);  // d1 under m1 in each non-empty list
  CHECK(w.duplicate_share == 0.5);
  // nearest rank floor(0.95 x 3) = 2 -> 30 ms; floor(0.99 x 3) = 2 -> 30 ms; P50 floor(1.5) = 1 ->
  // 20 ms
  CHECK(std::abs(w.p95_latency_ms - 30.0) <= 0.3);
  CHECK(std::abs(w.p50_latency_ms - 20.0) <= 0.2);
  CHECK(w.negative_feedback_rate == doctest::Approx(2.0 / 3.0));
  CHECK(w.version_mismatches == 1);
  const auto& r = res.findings;
  CHECK(r.count(finding_kinds::empty_results) == 1);         // 0.25 > 0.10
  CHECK(r.count(finding_kinds::duplicate_share_high) == 1);  // 0.5 > 0.2
  CHECK(r.count(finding_kinds::feedback_negative) == 1);     // 2/3 > 0.5
  CHECK(r.count(finding_kinds::latency_regression) ==
        0);  // P95 30 ms: the 2000 ms outlier is above P95 of 4
  CHECK(r.count(finding_kinds::query_version_mismatch) == 1);
  for (const auto& f : r.findings)
    if (f.kind == finding_kinds::feedback_negative)
      CHECK(f.record_ids == std::vector<std::string>{"m1", "m2"});

  // an explicit baseline with the same events: nothing rises against it, absolute alerts stay
  const baseline_map base = compute_baseline(store, std::span(rs), std::span(fb), o);
  REQUIRE(base.count("user:1") == 1);
  CHECK(base.at("user:1").duplicate_share == 0.5);
  CHECK(base.at("user:1").median_top1_similarity == doctest::Approx(0.8));
  CHECK(base.at("user:1").robust_sd_top1 == doctest::Approx(1.4826 * 0.1));
  const auto again = monitor_retrievals(store, std::span(rs), std::span(fb), o, &base);
  for (const auto& f : again.findings.findings)
    if (f.evidence_of("against")) CHECK(ev_text(f, "against") == "absolute");

  o.window = std::chrono::milliseconds{0};
  CHECK_THROWS_AS(monitor_retrievals(store, std::span(rs), std::span(fb), o), error);
}

TEST_CASE("migration gate: hand-made overlap@k and Spearman") {
  const std::vector<std::size_t> a{1, 2, 3, 4}, b{2, 5, 1, 7};
  CHECK(overlap_at_k(a, b, 3) == doctest::Approx(2.0 / 3.0));
  CHECK(overlap_at_k(a, b, 4) == 0.5);
  CHECK(overlap_at_k(a, a, 4) == 1.0);
  const std::vector<double> x{1, 2, 3, 4}, y{1, 3, 2, 4};
  CHECK(spearman_rho(x, y) == doctest::Approx(0.8));  // 1 - 6 x 2 / (4 x 15)
  const std::vector<double> xt{1, 2, 2, 3}, yt{1, 2, 3, 4};
  CHECK(spearman_rho(xt, yt) == doctest::Approx(4.5 / std::sqrt(22.5)));  // ties: average ranks

  // texts 1 and 2 swap places between the spaces: A = (1,0), (0.9,0.1), (0,1); B = (1,0), (0,1),
  // (0.9,0.1). Nearest in A: 0->1, 1->0, 2->1; in B: 0->2, 1->2, 2->0: every nearest neighbour
  // changes (overlap@1 = 0), and over each union of two the order is reversed (rho = -1).
  row_matrix A(3, 2), B(3, 2);
  A << 1, 0, 0.9f, 0.1f, 0, 1;
  B << 1, 0, 0, 1, 0.9f, 0.1f;
  const auto g = migration_gate(A, B, {.k = 1});
  CHECK(g.mean_overlap == 0.0);
  CHECK(g.mean_rank_correlation == doctest::Approx(-1.0));
  CHECK_FALSE(g.passed);
  REQUIRE(g.findings.size() == 1);
  CHECK(g.findings[0].kind == finding_kinds::migration_gate_failed);
  row_matrix C(4, 2);
  CHECK_THROWS_AS(migration_gate(A, C), error);
}

TEST_CASE("migration gate on real vectors: fails across models, passes for the ada-002 re-run") {
  const row_matrix mini = minilm(), a1 = ada(), a2 = ada_rerun();
  REQUIRE(mini.cols() == 384);
  REQUIRE(a1.cols() == 1536);
  REQUIRE(a2.cols() == 1536);
  // k = 3 (with 10 texts k >= 9 would make overlap trivially 1). Python reference values:
  // MiniLM -> ada: mean overlap@3 0.4, worst text 0, mean rho -0.5628571; re-run: 1, 1, 1.
  const auto cross = migration_gate(mini, a1, {.k = 3});
  CHECK(cross.k == 3);
  CHECK(cross.mean_overlap == doctest::Approx(0.4));
  CHECK(cross.min_query_overlap == 0.0);
  CHECK(cross.mean_rank_correlation == doctest::Approx(-0.562857142857143));
  CHECK_FALSE(cross.passed);
  CHECK(cross.findings.size() == 1);
  const auto rerun = migration_gate(a1, a2, {.k = 3});
  CHECK(rerun.mean_overlap == 1.0);
  CHECK(rerun.mean_rank_correlation == doctest::Approx(1.0));
  CHECK(rerun.passed);
  CHECK(rerun.findings.empty());
  // k = 5: one swap at the boundary in the re-run (mean 0.98, worst 0.8, rho 0.9942857), still
  // passes
  const auto rerun5 = migration_gate(a1, a2, {.k = 5});
  CHECK(rerun5.mean_overlap == doctest::Approx(0.98));
  CHECK(rerun5.min_query_overlap == doctest::Approx(0.8));
  CHECK(rerun5.mean_rank_correlation == doctest::Approx(0.9942857142857143));
  CHECK(rerun5.passed);
  const auto cross5 = migration_gate(mini, a1, {.k = 5});
  CHECK(cross5.mean_overlap == doctest::Approx(0.64));
  CHECK_FALSE(cross5.passed);
}

TEST_CASE("drift on real vectors: shift across models, none for the re-run") {
  const row_matrix mini = minilm(), a1 = ada(), a2 = ada_rerun();
  // same model re-run (pair cosines 0.99980..0.999999): exact permutation test over all
  // C(20, 10) = 184,756 splits; Python: MMD 0.0045179, h 0.531785, p 0.997434 -> nothing reported
  const auto same = detect_drift(a1, a2);
  REQUIRE(same.mmd);
  CHECK(same.mmd->exact);
  CHECK(same.mmd->splits == 184756);
  CHECK(same.mmd->mmd == doctest::Approx(0.004517949805914911).epsilon(1e-4));
  CHECK(same.mmd->bandwidth == doctest::Approx(0.5317845428440503).epsilon(1e-5));
  CHECK(same.mmd->p_value == doctest::Approx(0.9974344540908009).epsilon(1e-3));
  CHECK(same.mmd->noise_floor == doctest::Approx(0.08672856103271723).epsilon(1e-4));
  CHECK(same.findings.empty());

  // across models the dimension changes (384 -> 1536): a distribution_shift with test
  // dimension_changed; both are unit length, so no norm_shift
  const auto cross = detect_drift(mini, a1);
  REQUIRE(cross.findings.size() == 1);
  CHECK(cross.findings[0].kind == finding_kinds::distribution_shift);
  CHECK(ev_text(cross.findings[0], "test") == "dimension_changed");
  CHECK(ev_num(cross.findings[0], "reference_dim") == 384);
  CHECK(ev_num(cross.findings[0], "current_dim") == 1536);
  CHECK_FALSE(cross.mmd);

  // same width, other model: ada-002 silently truncated to 384 dims (a fault SPEC section 5 names)
  // against MiniLM. Python: MMD 0.779232, p = 2 / 184,756 (only the split itself and its mirror);
  // the truncated rows keep ~0.749 of their norm, so norm_shift too.
  const row_matrix trunc = a1.leftCols(384);
  const auto t = detect_drift(mini, trunc);
  REQUIRE(t.mmd);
  CHECK(t.mmd->mmd == doctest::Approx(0.7792323231707398).epsilon(1e-4));
  CHECK(t.mmd->p_value == doctest::Approx(2.0 / 184756.0));
  CHECK(t.current.mean == doctest::Approx(0.7493205199411738).epsilon(1e-5));
  CHECK(t.reference.unit_share == 1.0);
  CHECK(t.current.unit_share == 0.0);
  REQUIRE(t.findings.size() == 2);
  CHECK(t.findings[0].kind == finding_kinds::norm_shift);
  CHECK(t.findings[1].kind == finding_kinds::distribution_shift);
  CHECK(ev_text(t.findings[1], "test") == "mmd_permutation");

  // the noise floor holds at any sample size: the re-run stacked 3 times (30 vs 30 rows, random
  // splits) is still not reported
  row_matrix r3(30, 1536), s3(30, 1536);
  r3 << a1, a1, a1;
  s3 << a2, a2, a2;
  const auto big = detect_drift(r3, s3);
  REQUIRE(big.mmd);
  CHECK_FALSE(big.mmd->exact);
  CHECK(big.mmd->mmd < big.mmd->noise_floor);
  CHECK(big.findings.empty());
}

TEST_CASE("drift: too few rows is a check_skipped, never a crash") {
  row_matrix a(2, 3), b(2, 3);
  a << 1, 0, 0, 0, 1, 0;
  b << 1, 0, 0, 0, 0, 1;
  const auto r = detect_drift(a, b);
  REQUIRE(r.findings.size() == 1);
  CHECK(r.findings[0].kind == finding_kinds::check_skipped);
}

TEST_CASE("drift and the migration gate: empty samples are empty results, never an error") {
  const row_matrix none(0, 384), unset(0, 0), some = row_matrix::Identity(3, 384);
  // norms of nothing: all zero
  const auto ns = summarize_norms(none);
  CHECK(ns.n == 0);
  CHECK(ns.mean == 0.0);
  CHECK(ns.unit_share == 0.0);
  // MMD of an empty side: no split, p = 1, also against a sample of another width (0 x 0)
  for (const auto* x : {&none, &unset}) {
    mmd_result m;
    CHECK_NOTHROW(m = mmd_test(*x, some));
    CHECK(m.splits == 0);
    CHECK(m.p_value == 1.0);
    CHECK(m.mmd == 0.0);
    CHECK_NOTHROW(m = mmd_test(some, *x));
    CHECK(m.p_value == 1.0);
  }
  CHECK(mmd_test(none, none).splits == 0);
  // detect_drift: no shift reported, the test says it was skipped (too few rows)
  for (const auto* x : {&none, &unset}) {
    drift_result d;
    CHECK_NOTHROW(d = detect_drift(*x, *x));
    CHECK(d.reference.n == 0);
    CHECK(d.current.n == 0);
    REQUIRE(d.findings.size() == 1);
    CHECK(d.findings[0].kind == finding_kinds::check_skipped);
    CHECK_NOTHROW(d = detect_drift(*x, some));  // 0 x 0 against 384 columns: no "dimension_changed"
    REQUIRE(d.findings.size() == 1);
    CHECK(d.findings[0].kind == finding_kinds::check_skipped);
  }
  // the gate on zero texts: one check_skipped, not passed, no per-text rows
  const auto g = migration_gate(none, unset);
  CHECK(g.n == 0);
  CHECK_FALSE(g.passed);
  CHECK(g.overlap.empty());
  REQUIRE(g.findings.size() == 1);
  CHECK(g.findings[0].kind == finding_kinds::check_skipped);
}

// Found by fuzz/fuzz_events.cpp (libFuzzer): line 88 of its 38 KB input, verbatim. "type" (or
// "feedback") that is not a string made nlohmann's json::value throw type_error 302 out of
// parse_events_jsonl, which never throws for bad content. Now the line is skipped with an issue.
TEST_CASE(
    "parse_events_jsonl: fuzz regression: a type or feedback that is not a string is an issue, not "
    "a throw") {
  const std::string text =
      std::string(
          R"({"type":[{"id":"mem-1041","similarity":0.769,"rank":1},{"id":"mem-1044","similarity":0.728,"rank":2},{"id":"mem-1038","similarity":0.697,"rank":3},{"id":"mem-1035","similarity":0.644,"rank":4},{"id":"mem-1046","similarity":0.594,"rank":5}]})") +
      "\n" +
      R"({"type":"feedback","time":"2024-07-14T10:00:00Z","feedback":{"k":1},"id":"m1"})"
      "\n" +
      R"({"type":"feedback","time":"2024-07-14T10:00:00Z","feedback":"accepted","id":"m1"})"
      "\n";
  memhealth::event_load_result r;
  REQUIRE_NOTHROW(r = memhealth::parse_events_jsonl(text, "fuzz.jsonl"));
  CHECK(r.lines_read == 3);
  CHECK(r.retrievals.empty());
  REQUIRE(r.feedback.size() == 1);
  CHECK(r.feedback[0].id == "m1");
  REQUIRE(r.issues.size() == 2);
  CHECK(r.issues[0].line == 1);
  CHECK(r.issues[0].field == "type");
  CHECK(!r.issues[0].record_kept);
  CHECK(r.issues[1].line == 2);
  CHECK(r.issues[1].field == "feedback");
  CHECK(!r.issues[1].record_kept);
}
}  // namespace monitor_drift_test
