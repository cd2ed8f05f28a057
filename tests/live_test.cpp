// Tests of continuous operation (issue 20): the write-time gate. Cosines are worked out by hand
// in the comments (4-d unit vectors with no trailing zero, so no zero-padding finding).
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "memhealth/detect/default_pipeline.hpp"
#include "memhealth/live/scheduler.hpp"
#include "memhealth/live/write_gate.hpp"
#include "memhealth/store/memory_store.hpp"

#include "test_records.hpp"

namespace live_test {
namespace mh = memhealth;

namespace {

// a . b for the vectors below (each has norm 1):
//   A = (0.5, 0.5, 0.5, 0.5)
//   B = (0.7, 0.1, 0.1, 0.7):        A.B = 0.5 * 1.6 = 0.80   (a conflict candidate, >= 0.6)
//   C = (0.6, 0.4, 0.4, sqrt(0.32)): A.C = 0.5 * (1.4 + 0.5657) = 0.983 (a near duplicate)
//   U = (0.5, -0.5, 0.5, -0.5):      A.U = 0, B.U = 0, C.U = 0.5*(0.6-0.4+0.4-0.5657) = 0.017
//   W = (0.5, 0.5, -0.5, -0.5):      A.W = 0, U.W = 0, C.W = 0.5*(1.0-0.9657) = 0.017
const std::vector<float> A{0.5f, 0.5f, 0.5f, 0.5f};
const std::vector<float> B{0.7f, 0.1f, 0.1f, 0.7f};
const std::vector<float> C{0.6f, 0.4f, 0.4f, 0.565685425f};
const std::vector<float> U{0.5f, -0.5f, 0.5f, -0.5f};
const std::vector<float> W{0.5f, 0.5f, -0.5f, -0.5f};

mh::memory_record rec(std::string id, std::string text, std::vector<float> e,
                      const char* updated = "2024-03-01T10:00:00Z", std::string scope = "user:1") {
  return mh::test::make_record(std::move(id), std::move(text), std::move(e),
                               {"e5-small-v1", std::move(scope), "preference", updated, ""});
}

const mh::utc_time k_now = mh::parse_timestamp("2024-07-15T00:00:00Z")->instant;

bool has_kind(const mh::gate_verdict& v, std::string_view kind) {
  return std::any_of(v.findings.begin(), v.findings.end(),
                     [&](const mh::finding& f) { return f.kind == kind; });
}

}  // namespace

TEST_CASE("write_gate: exact and near duplicates in the candidate's scope only") {
  mh::write_gate<> gate;
  gate.observe(rec("a", "User prefers window seats on long flights", A));
  gate.observe(rec("u", "User's sister lives in Lyon", U));
  CHECK(gate.size() == 2);
  CHECK(gate.dimension() == 4);

  // same text after normalisation (case, punctuation), any vector: exact duplicate of a
  auto v = gate.inspect(rec("x", "user prefers WINDOW seats on long flights!", U), {}, k_now);
  CHECK(v.decision == mh::gate_decision::store_as_duplicate);
  CHECK(v.target_id == "a");
  CHECK(has_kind(v, mh::finding_kinds::exact_duplicate));

  // cosine 0.983 >= 0.92 and no negation, number or role difference: near duplicate of a
  v = gate.inspect(rec("y", "User likes window seats on long flights", C), {}, k_now);
  CHECK(v.decision == mh::gate_decision::store_as_duplicate);
  CHECK(v.target_id == "a");
  REQUIRE(has_kind(v, mh::finding_kinds::near_duplicate));
  CHECK(std::abs(std::get<double>(*v.findings.back().evidence_of("cosine")) - 0.98284) < 1e-3);

  // the same text in another scope is nobody's duplicate
  v = gate.inspect(
      rec("z", "User prefers window seats on long flights", A, "2024-03-01T10:00:00Z", "user:2"),
      {}, k_now);
  CHECK(v.decision == mh::gate_decision::store);
  CHECK(v.findings.empty());

  // unrelated text and an orthogonal vector: store
  v = gate.inspect(rec("w", "User plays the cello on Sundays", W), {}, k_now);
  CHECK(v.decision == mh::gate_decision::store);

  // a number that differs keeps a near pair apart (duplicate guard), so it is stored
  gate.observe(rec("n", "User runs 5 km every morning", A));
  v = gate.inspect(rec("m", "User runs 10 km every morning", C), {}, k_now);
  CHECK(v.decision != mh::gate_decision::store_as_duplicate);
}

TEST_CASE("write_gate: a conflict is superseded by a newer record and held when older") {
  mh::write_gate<> gate;
  gate.observe(rec("a", "User loves jazz", A, "2024-03-01T10:00:00Z"));

  // cosine 0.80 >= 0.6 reaches the judge: "loves" / "can't stand" jazz is a conflict; the rules
  // (more specific scope: equal; newer updated_at: the candidate) pick the candidate
  auto v = gate.inspect(rec("b", "User can't stand jazz", B, "2024-05-01T10:00:00Z"), {}, k_now);
  CHECK(v.decision == mh::gate_decision::supersede);
  CHECK(v.superseded_ids == std::vector<std::string>{"a"});
  REQUIRE(has_kind(v, mh::finding_kinds::conflict));

  // the same statement dated before the existing one: the rules keep the existing record
  v = gate.inspect(rec("c", "User can't stand jazz", B, "2023-05-01T10:00:00Z"), {}, k_now);
  CHECK(v.decision == mh::gate_decision::hold_for_review);
  CHECK(v.target_id == "a");
  CHECK(v.superseded_ids.empty());

  // below the candidate threshold (cosine 0 with A) the judge is not asked
  v = gate.inspect(rec("d", "User can't stand jazz", U, "2024-05-01T10:00:00Z"), {}, k_now);
  CHECK(v.decision == mh::gate_decision::store);

  // structured claims of one key decide without vectors: another value of one attribute
  mh::write_gate<> g2;
  auto p = rec("p1", "Bob works on Atlas", {}, "2024-03-01T10:00:00Z");
  p.claim = mh::fact_claim{"bob", "current_project", "atlas"};
  g2.observe(p);
  auto q = rec("p2", "Bob's project", {}, "2024-05-01T10:00:00Z");
  q.claim = mh::fact_claim{"Bob", "current_project", "Borealis"};
  v = g2.inspect(q, {}, k_now);
  CHECK(v.decision == mh::gate_decision::supersede);
  CHECK(v.target_id == "p1");
}

TEST_CASE("write_gate: invalid records are rejected, other own findings are reported") {
  mh::write_gate<> gate;
  gate.observe(rec("a", "User loves jazz", A));

  auto v = gate.inspect(rec("e", "   ", U), {}, k_now);
  CHECK(v.decision == mh::gate_decision::reject);
  CHECK(has_kind(v, mh::finding_kinds::content_empty));

  v = gate.inspect(rec("f", "User drinks tea", {0.6f, 0.8f, 0.1f}), {}, k_now);  // 3 of 4
  CHECK(v.decision == mh::gate_decision::reject);
  CHECK(has_kind(v, mh::finding_kinds::embedding_dim_mismatch));

  v = gate.inspect(rec("g", "User drinks tea", {NAN, 0.5f, 0.5f, 0.5f}), {}, k_now);
  CHECK(v.decision == mh::gate_decision::reject);

  auto s = rec("h", "User drinks tea", U);
  s.status = "actve";
  CHECK(gate.inspect(s, {}, k_now).decision == mh::gate_decision::reject);

  // an insert with an observed id is a duplicate id; the same record as an update is fine
  v = gate.inspect(rec("a", "User drinks tea", U), mh::write_kind::insert, k_now);
  CHECK(v.decision == mh::gate_decision::reject);
  CHECK(has_kind(v, mh::finding_kinds::duplicate_id));
  v = gate.inspect(rec("a", "User loves jazz", A), mh::write_kind::update, k_now);
  CHECK(v.decision == mh::gate_decision::store);  // not a duplicate of its own old version

  // a link to an unknown id and a vector of another model: findings, not a rejection
  auto l = rec("i", "User drinks green tea", U);
  l.links.related_ids = {"a", "nope"};
  l.embedding_version = "bge-m3";
  v = gate.inspect(l, {}, k_now);
  CHECK(v.decision == mh::gate_decision::store);
  REQUIRE(has_kind(v, mh::finding_kinds::dangling_reference));
  REQUIRE(has_kind(v, mh::finding_kinds::mixed_embedding_version));
  for (const auto& f : v.findings)
    if (f.kind == mh::finding_kinds::dangling_reference) {
      REQUIRE(f.evidence.size() == 1);  // "a" is known, only "nope" dangles
      CHECK(std::get<std::string>(f.evidence[0].second) == "nope");
    }
}

TEST_CASE("write_gate: an update of an unknown id is a finding, timestamp problems are one") {
  mh::write_gate<> gate;
  gate.observe(rec("a", "User loves jazz", A));
  // an update naming an id the gate never observed: a warning, decided as a new record (store)
  auto v = gate.inspect(rec("zz", "User drinks tea", U), mh::write_kind::update, k_now);
  CHECK(v.decision == mh::gate_decision::store);
  REQUIRE(v.findings.size() == 1);
  const mh::finding& f = v.findings[0];
  CHECK(f.kind == mh::finding_kinds::dangling_reference);
  CHECK(f.severity == mh::severity::warning);
  CHECK(f.suggested_repair == "manual_review");
  CHECK(f.record_ids == std::vector<std::string>{"zz"});
  REQUIRE(f.evidence_of(mh::evidence_keys::problem));
  CHECK(std::get<std::string>(*f.evidence_of(mh::evidence_keys::problem)) ==
        "update_of_unknown_id");
  // the same candidate as an upsert or an insert is a plain new record
  CHECK(gate.inspect(rec("zz", "User drinks tea", U), mh::write_kind::upsert, k_now)
            .findings.empty());
  CHECK(gate.inspect(rec("zz", "User drinks tea", U), mh::write_kind::insert, k_now)
            .findings.empty());
  // updated before created (warning) and created in the future (error): one finding, severity
  // error, both problems in its evidence
  auto t = rec("t", "User drinks tea", U, "2024-09-01T00:00:00Z");
  t.updated_at = mh::parse_timestamp("2024-08-01T00:00:00Z");
  v = gate.inspect(t, {}, k_now);
  const auto n = std::count_if(v.findings.begin(), v.findings.end(), [](const mh::finding& x) {
    return x.kind == mh::finding_kinds::timestamp_inconsistent;
  });
  CHECK(n == 1);
  for (const auto& x : v.findings)
    if (x.kind == mh::finding_kinds::timestamp_inconsistent) {
      CHECK(x.severity == mh::severity::error);
      std::multiset<std::string> problems;
      for (const auto& [k, val] : x.evidence)
        if (k == mh::evidence_keys::problem) problems.insert(std::get<std::string>(val));
      CHECK(problems ==
            std::multiset<std::string>{"in_future", "in_future", "updated_before_created"});
    }
}

TEST_CASE("write_gate: observe replaces, forget removes") {
  mh::write_gate<> gate;
  gate.observe(rec("a", "User loves jazz", A));
  CHECK(gate.inspect(rec("b", "User loves jazz", U), {}, k_now).decision ==
        mh::gate_decision::store_as_duplicate);
  // a's new version has other text: the old text is no longer indexed
  gate.observe(rec("a", "User collects stamps", A));
  CHECK(gate.size() == 1);
  CHECK(gate.inspect(rec("b", "User loves jazz", U), {}, k_now).decision ==
        mh::gate_decision::store);
  CHECK(gate.inspect(rec("c", "User collects stamps", U), {}, k_now).target_id == "a");
  CHECK(gate.forget("a"));
  CHECK(!gate.forget("a"));
  CHECK(gate.size() == 0);
  CHECK(gate.inspect(rec("c", "User collects stamps", U), {}, k_now).decision ==
        mh::gate_decision::store);
  // a freed vector row is reused and holds the new vector
  gate.observe(rec("d", "User prefers window seats on long flights", A));
  gate.observe(rec("e", "User's sister lives in Lyon", U));
  auto v = gate.inspect(rec("y", "User likes window seats on long flights", C), {}, k_now);
  CHECK(v.target_id == "d");
}

TEST_CASE("write_gate agrees with the duplicate detector on a random store") {
  // 600 records in 12 scopes, 16-d: a third copy an earlier text of their scope (exact), a
  // third perturb an earlier record's vector slightly with a new text (near), a third are new.
  // Each record is inspected before it is observed. Every duplicate the gate reports must be in
  // the same cluster of the batch duplicate detector run over the whole store, and every record
  // whose normalised text repeats an earlier one of its scope must be reported as exact.
  std::mt19937 rng(7);
  std::normal_distribution<float> g;
  std::uniform_int_distribution<int> pick(0, 2);
  const std::size_t d = 16, n = 600;
  std::vector<mh::memory_record> records;
  const char* words[] = {"tea", "jazz", "hiking", "sushi", "chess", "opera", "cycling", "tennis"};
  for (std::size_t i = 0; i < n; ++i) {
    const std::string scope = "user:" + std::to_string(i % 12);
    std::vector<std::size_t> same;
    for (std::size_t j = 0; j < i; ++j)
      if (records[j].scope == scope) same.push_back(j);
    std::vector<float> e(d);
    for (auto& x : e) x = g(rng);
    std::uniform_int_distribution<int> w(0, 7);
    std::string text = std::string("User enjoys ") + words[w(rng)] + " and " + words[w(rng)] +
                       " with " + words[w(rng)];
    const int kind = same.empty() ? 2 : pick(rng);
    if (kind == 0) {
      text = records[same[i % same.size()]].content;
    } else if (kind == 1) {
      e = records[same[i % same.size()]].embedding;
      for (auto& x : e) x += 0.01f * g(rng);
      text = std::string("User likes ") + words[w(rng)] + " and " + words[w(rng)];
    }
    for (auto& x : e) x += (x == 0.0f) ? 1e-3f : 0.0f;
    records.push_back(rec("r" + std::to_string(i), text, e, "2024-03-01T10:00:00Z", scope));
  }
  mh::write_gate<> gate;
  std::vector<std::pair<std::string, std::string>> pairs;
  std::set<std::string> exact_reported;
  std::set<std::pair<std::string, std::string>> seen_text;
  std::size_t exact_expected = 0;
  mh::text_normalizer norm;
  for (const auto& r : records) {
    const auto v = gate.inspect(r, {}, k_now);
    if (v.decision == mh::gate_decision::store_as_duplicate) pairs.emplace_back(r.id, v.target_id);
    if (has_kind(v, mh::finding_kinds::exact_duplicate)) exact_reported.insert(r.id);
    if (!seen_text.emplace(r.scope, norm(r.content)).second) ++exact_expected;
    gate.observe(r);
  }
  CHECK(exact_reported.size() == exact_expected);
  CHECK(pairs.size() > exact_expected);  // near duplicates were found too

  auto store = mh::memory_store<>::from_records(records);
  mh::detect_options o;
  o.now = k_now;
  std::vector<mh::finding> found;
  mh::detection_context<mh::memory_store<>> ctx(store, o);
  mh::duplicate_detector<> dup;
  dup.skip_guarded = true;
  dup.skip_judged_conflicts = true;
  dup.run(ctx, found);
  std::map<std::string, std::size_t> cluster;
  for (std::size_t k = 0; k < found.size(); ++k)
    if (found[k].kind == mh::finding_kinds::exact_duplicate ||
        found[k].kind == mh::finding_kinds::near_duplicate)
      for (const auto& id : found[k].record_ids) cluster[id] = k;
  for (const auto& pair : pairs) {
    const std::string& a = pair.first;   // not a structured binding: clang 14 cannot capture one
    const std::string& b = pair.second;  // in INFO's lambda
    INFO(a << " duplicate of " << b);
    REQUIRE(cluster.count(a) == 1);
    REQUIRE(cluster.count(b) == 1);
    CHECK(cluster[a] == cluster[b]);
  }
}

TEST_CASE("write_gate: the int8 filter misses no near duplicate (d = 384, cosines near 0.92)") {
  // 1,500 random unit vectors in one scope; 300 candidates, each at a chosen cosine in
  // [0.88, 0.96] to a random observed vector (c v + sqrt(1 - c^2) w, w a random unit vector
  // orthogonal to v). Guards and the judge are off, so the gate's near duplicate must be exactly
  // the observed record of highest cosine when that cosine is >= 0.92 (brute force in double),
  // and none otherwise.
  const std::size_t d = 384, n = 1500;
  std::mt19937 rng(11);
  std::normal_distribution<double> g;
  const auto unit = [&] {
    std::vector<double> v(d);
    double s = 0;
    for (auto& x : v) x = g(rng), s += x * x;
    for (auto& x : v) x /= std::sqrt(s);
    return v;
  };
  const auto to_float = [](const std::vector<double>& v) {
    return std::vector<float>(v.begin(), v.end());
  };
  mh::write_gate_settings st;
  st.skip_guarded = st.skip_negation_mismatch = st.skip_judged_conflicts = false;
  st.conflict_candidate_threshold = 2.0f;  // never judged
  mh::write_gate<> gate(st);
  std::vector<std::vector<float>> rows;
  for (std::size_t i = 0; i < n; ++i) {
    rows.push_back(to_float(unit()));
    gate.observe(rec("o" + std::to_string(i),
                     "observed text " + std::string(1, char('a' + i % 26)) + std::to_string(i),
                     rows.back()));
  }
  std::uniform_real_distribution<double> cos_at(0.88, 0.96);
  std::uniform_int_distribution<std::size_t> any(0, n - 1);
  std::size_t above = 0;
  for (int c = 0; c < 300; ++c) {
    const auto& v = rows[any(rng)];
    auto w = unit();
    double vw = 0;
    for (std::size_t k = 0; k < d; ++k) vw += v[k] * w[k];
    double wn = 0;
    for (std::size_t k = 0; k < d; ++k) w[k] -= vw * v[k], wn += w[k] * w[k];
    const double target = cos_at(rng);
    std::vector<double> x(d);
    for (std::size_t k = 0; k < d; ++k)
      x[k] = target * v[k] + std::sqrt(1 - target * target) * w[k] / std::sqrt(wn);
    const auto xf = to_float(x);
    double best = -2;
    std::size_t best_i = 0;
    for (std::size_t i = 0; i < n; ++i) {
      double dot = 0, nx = 0, nr = 0;
      for (std::size_t k = 0; k < d; ++k)
        dot += double(xf[k]) * rows[i][k], nx += double(xf[k]) * xf[k],
            nr += double(rows[i][k]) * rows[i][k];
      const double cs = dot / std::sqrt(nx * nr);
      if (cs > best) best = cs, best_i = i;
    }
    if (std::abs(best - 0.92) < 1e-4) continue;  // too close to call in float32
    const auto verdict = gate.inspect(rec("cand", "candidate text", xf), {}, k_now);
    INFO("best cosine " << best);
    if (best >= 0.92) {
      ++above;
      CHECK(verdict.decision == mh::gate_decision::store_as_duplicate);
      CHECK(verdict.target_id == "o" + std::to_string(best_i));
    } else {
      CHECK(verdict.decision == mh::gate_decision::store);
    }
  }
  CHECK(above > 100);  // both sides of the threshold were exercised
}

TEST_CASE("write_gate: many readers inspect while one writer observes") {
  mh::write_gate<> gate;
  std::atomic<bool> stop{false};
  std::atomic<std::size_t> inspected{0}, rejected{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t)
    readers.emplace_back([&] {
      while (!stop.load()) {
        const auto v = gate.inspect(rec("q", "User loves jazz", A), {}, k_now);
        if (v.decision == mh::gate_decision::reject) rejected.fetch_add(1);
        inspected.fetch_add(1);
      }
    });
  while (inspected.load() == 0) std::this_thread::yield();  // readers are running
  for (int i = 0; i < 300; ++i)
    gate.observe(rec("w" + std::to_string(i), "User note " + std::to_string(i), i % 2 ? A : B));
  stop = true;
  for (auto& t : readers) t.join();
  CHECK(gate.size() == 300);
  CHECK(rejected.load() == 0);
}

TEST_CASE("incremental staleness reports a record once: when it crossed the threshold") {
  // kind episodic: half-life 30 days, stale below weight 0.2, i.e. older than
  // 30 * log2(5) = 69.66 days. Clock 2024-07-15, cursor 2024-06-01.
  //   a, updated 2024-03-01: 136 days now, 92 at the cursor: stale then already -> not again
  //   b, updated 2024-05-01:  75 days now, 31 at the cursor: became stale since -> reported
  //   c, updated 2024-07-01:  14 days now: fresh
  std::vector<mh::memory_record> v;
  for (auto [id, at] : {std::pair{"a", "2024-03-01T00:00:00Z"},
                        {"b", "2024-05-01T00:00:00Z"},
                        {"c", "2024-07-01T00:00:00Z"}}) {
    auto r = rec(id, std::string("User went to event ") + id, A, at);
    r.kind = "episodic";
    v.push_back(r);
  }
  const auto store = mh::memory_store<>::from_records(v);
  mh::pipeline p{mh::staleness_detector{}};
  mh::detect_options o;
  o.now = k_now;
  const auto ids = [](const mh::report& r) {
    std::vector<std::string> out;
    for (const auto& f : r.findings) out.push_back(f.record_ids.at(0));
    return out;
  };
  CHECK(ids(p.run(store, o)) == std::vector<std::string>{"a", "b"});
  o.since = mh::parse_timestamp("2024-06-01T00:00:00Z")->instant;
  CHECK(ids(p.run(store, o)) == std::vector<std::string>{"b"});
  // a record changed since the cursor is judged as in a full run
  o.changed = std::make_shared<const std::vector<bool>>(std::vector<bool>{true, false, false});
  CHECK(ids(p.run(store, o)) == std::vector<std::string>{"a", "b"});
}

// ---------------------------------------------------------------- scheduler (fake clock)

TEST_CASE("scheduler: due times on a fake clock, triggers, no catch-up burst, restore") {
  using namespace std::chrono;
  const mh::utc_time t0 = k_now;
  mh::scheduler s({{"structural", minutes{5}}, {"full", hours{24}}, {"drift", milliseconds{0}}});
  // never run: the periodic tasks are due at once, the trigger-only one is not
  CHECK(s.due(t0) == std::vector<std::string>{"structural", "full"});
  CHECK(s.next_due(t0) == t0);
  s.completed("structural", t0);
  s.completed("full", t0);
  CHECK(s.due(t0).empty());
  // due exactly when the period has passed, not a millisecond before
  CHECK(s.due(t0 + minutes{5} - milliseconds{1}).empty());
  CHECK(s.due(t0 + minutes{5}) == std::vector<std::string>{"structural"});
  CHECK(s.next_due(t0 + minutes{1}) == t0 + minutes{5});
  // a run 17.5 min late is one run, and the next is a period after it (no catch-up burst)
  const auto late = t0 + minutes{22} + seconds{30};
  CHECK(s.due(late) == std::vector<std::string>{"structural"});
  CHECK(s.completed("structural", late).next == late + minutes{5});
  CHECK(s.due(late + minutes{4}).empty());
  // a trigger makes a task due at once, whatever its period; a repeated reason is kept once
  CHECK(s.trigger("drift", "new embedding version"));
  CHECK(s.trigger("drift", "new embedding version"));
  CHECK(s.trigger("full", "write burst"));
  CHECK_FALSE(s.trigger("nonexistent", "x"));
  CHECK(s.state_of("drift").triggers == std::vector<std::string>{"new embedding version"});
  CHECK(s.due(late + seconds{1}) == std::vector<std::string>{"full", "drift"});
  CHECK_FALSE(s.completed("drift", late + seconds{1}).next.has_value());
  CHECK(s.state_of("drift").triggers.empty());
  CHECK(s.completed("full", late + seconds{1}).next == late + seconds{1} + hours{24});
  CHECK(s.due(late + hours{23}) == std::vector<std::string>{"structural"});
  // restore after a restart; a shortened period brings the next run forward
  mh::scheduler r({{"structural", minutes{1}}, {"full", hours{24}}});
  r.restore("structural", t0, t0 + minutes{5});  // written under a 5 min period
  r.restore("full", t0, t0 + hours{24});
  r.restore("removed_task", t0, t0);  // ignored
  CHECK(r.state_of("structural").next == t0 + minutes{1});
  CHECK(r.due(t0 + seconds{59}).empty());
  CHECK(r.due(t0 + minutes{1}) == std::vector<std::string>{"structural"});
  CHECK(r.next_due(t0 + seconds{1}) == t0 + minutes{1});
  // bad task lists
  CHECK_THROWS_AS(mh::scheduler({{"a", seconds{1}}, {"a", seconds{2}}}), mh::error);
  CHECK_THROWS_AS(mh::scheduler({{"", seconds{1}}}), mh::error);
  CHECK_THROWS_AS(mh::scheduler({{"a", seconds{-1}}}), mh::error);
  // nothing periodic: nothing is ever due without a trigger
  mh::scheduler only_triggers({{"drift", milliseconds{0}}});
  CHECK(only_triggers.due(t0 + hours{1000}).empty());
  CHECK_FALSE(only_triggers.next_due(t0).has_value());
}
}  // namespace live_test
