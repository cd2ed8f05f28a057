// End-to-end detection with the default pipeline on the bundled sample store and on the real
// LoCoMo conversations, plus plan -> apply -> rollback through the write-ahead log.
// Expected values: the sample store's faults are planted by examples/make_sample_store.cpp (the
// comments there list them); the LoCoMo figures were counted with a one-off Python script over
// the JSON files (see each comment) and the near-duplicate clusters were read by hand.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "memhealth/memhealth.hpp"

#include "test_data.hpp"

namespace pipeline_test {
namespace mh = memhealth;
using strings = std::vector<std::string>;

namespace {

const std::string k_source = MEMHEALTH_SOURCE_DIR;

mh::detect_options at(const char* iso) {
  mh::detect_options d;
  d.now = mh::parse_timestamp(iso)->instant;
  return d;
}

std::vector<const mh::finding*> of_kind(const mh::report& r, std::string_view kind) {
  std::vector<const mh::finding*> out;
  for (const auto& f : r.findings)
    if (f.kind == kind) out.push_back(&f);
  return out;
}

std::set<std::string> ids_of(const mh::finding& f) {
  return {f.record_ids.begin(), f.record_ids.end()};
}

bool has_finding(const mh::report& r, std::string_view kind, const std::set<std::string>& ids) {
  for (const auto* f : of_kind(r, kind))
    if (ids_of(*f) == ids) return true;
  return false;
}

mh::memory_store<> sample_store() {
  auto lr = mh::read_jsonl(k_source + "/data/sample_store.jsonl");
  REQUIRE(lr.issues.empty());
  REQUIRE(lr.records.size() == 51);
  return mh::memory_store<>::from_records(std::move(lr.records));
}

mh::default_check_settings sample_settings() {
  mh::default_check_settings s;
  s.schema = mh::load_schema_json(k_source + "/data/sample_schema.json");
  return s;
}

}  // namespace

TEST_CASE("default pipeline finds every fault planted in the sample store") {
  const auto store = sample_store();
  const auto r =
      mh::make_default_pipeline(sample_settings()).run(store, at("2024-07-15T00:00:00Z"));

  // repeated facts: "Alice lives in Berlin." x3 with case/punctuation differences; 陈先生不吃辣 x2
  CHECK(has_finding(r, "exact_duplicate", {"mem-1002", "mem-1003", "mem-1004"}));
  CHECK(has_finding(r, "exact_duplicate", {"mem-1029", "mem-1030"}));
  CHECK(r.count("exact_duplicate") == 2);
  // the primary of the Berlin cluster is listed first and is one of its members
  for (const auto* f : of_kind(r, "exact_duplicate"))
    CHECK(ids_of(*f).count(f->record_ids.front()) == 1);
  // the changed preference (claims with opposite polarity) and the project switch (fact claims)
  CHECK(has_finding(r, "conflict", {"mem-1000", "mem-1001"}));
  CHECK(has_finding(r, "conflict", {"mem-1016", "mem-1017"}));
  // the user's brother is vegetarian, the user is not: different holders, no conflict
  CHECK_FALSE(has_finding(r, "conflict", {"mem-1012", "mem-1013"}));
  // "no sugar" is not a contradiction of "Bob's coffee: black."
  CHECK_FALSE(has_finding(r, "conflict", {"mem-1025", "mem-1048"}));
  // a fact copied into another user's scope
  CHECK(has_finding(r, "cross_scope_duplicate", {"mem-1006", "mem-1045"}));
  // the bulk import that dropped "topic" (6 records) and the prompt fragment without a topic
  const auto schema = of_kind(r, "metadata_schema_violation");
  CHECK(schema.size() == 7);
  CHECK(has_finding(r, "metadata_schema_violation", {"mem-1046"}));
  for (const char* id : {"mem-1039", "mem-1040", "mem-1041", "mem-1042", "mem-1043", "mem-1044"})
    CHECK(has_finding(r, "metadata_schema_violation", {id}));
  // single-record faults
  CHECK(has_finding(r, "dangling_reference", {"mem-1047"}));
  CHECK(has_finding(r, "merged_but_active", {"mem-1048"}));
  CHECK(has_finding(r, "illegal_status", {"mem-1049"}));
  CHECK(has_finding(r, "junk_content", {"mem-1046"}));
  // the embedding-model switch halfway: records 0..24 by model s1, 25..50 by s2
  REQUIRE(r.count("mixed_embedding_version") == 1);
  // stale at 2024-07-15: the passport reminder (temporary, day 12: 3-day TTL long past), the
  // dentist reminder (temporary, day 22), and "had ramen today" (episodic, day 14: 2^(-182/30)
  // = 0.015 < 0.2); nothing else (facts decay with a 365-day half-life, preferences 180 days)
  CHECK(r.count("stale") == 3);
  CHECK(has_finding(r, "stale", {"mem-1014"}));
  CHECK(has_finding(r, "stale", {"mem-1015"}));
  CHECK(has_finding(r, "stale", {"mem-1028"}));
  // the bundled store has no broken vectors: the lexical embedder's sparse vectors are not
  // mistaken for zero padding
  CHECK(r.count("embedding_zero_padded") == 0);
  CHECK(r.count("embedding_not_normalized") == 0);
}

TEST_CASE("default pipeline: the duplicate guards are on, and settings turn them off") {
  CHECK(mh::duplicate_detector<>{}.skip_guarded);
  CHECK(mh::duplicate_detector<>{}.skip_judged_conflicts);
  // Four pairs, each in its own scope with both records on one vector (cosine 1), so only the
  // texts decide: a date that differs, swapped roles, a single-valued attribute with two values
  // (the claim judge's conflict; no guard applies), and a real restatement.
  const std::vector<std::pair<std::string, std::string>> pairs{
      {"User's dentist appointment is on 3 May", "User's dentist appointment is on 5 May"},
      {"User prefers tea over coffee", "User prefers coffee over tea"},
      {"User lives in Porto", "User lives in Lisbon"},
      {"likes green tea", "really likes green tea"}};
  CHECK(mh::near_duplicate_guard("user lives in porto", "user lives in lisbon") ==
        mh::duplicate_guard::none);
  std::vector<mh::memory_record> rs;
  for (std::size_t k = 0; k < pairs.size(); ++k)
    for (const auto& [side, text] : {std::pair{"a", pairs[k].first}, {"b", pairs[k].second}}) {
      mh::memory_record r;
      r.id = "p" + std::to_string(k) + side;
      r.content = text;
      r.scope = "s" + std::to_string(k);
      r.status = "active";
      r.embedding = {0.6f, 0.8f, 0.0f};
      rs.push_back(std::move(r));
    }
  const auto store = mh::memory_store<>::from_records(std::move(rs));
  auto near_scopes = [&](const mh::default_check_settings& s) {
    std::set<std::string> scopes;
    const auto r = mh::make_default_pipeline(s).run(store, at("2024-07-15T00:00:00Z"));
    for (const auto* f : of_kind(r, mh::finding_kinds::near_duplicate))
      scopes.insert(f->record_ids.front().substr(0, 2));
    return scopes;
  };
  // guarded (the default): only the restatement is a near duplicate
  CHECK(near_scopes({}) == std::set<std::string>{"p3"});
  // without the guards every pair is (none differs by a negation or change cue)
  mh::default_check_settings off;
  off.duplicate_guards = false;
  CHECK(near_scopes(off) == std::set<std::string>{"p0", "p1", "p2", "p3"});
  // the pair the judge calls a conflict is reported as one, not merged
  CHECK(has_finding(mh::make_default_pipeline().run(store, at("2024-07-15T00:00:00Z")),
                    mh::finding_kinds::conflict, {"p2a", "p2b"}));
}

TEST_CASE("LoCoMo: the three conversations import cleanly and their restated facts are found") {
  MEMHEALTH_TEST_DATA(locomo, "locomo");
  std::vector<mh::memory_record> all;
  for (const char* f : {"26", "30", "41"}) {
    auto part = mh::import_locomo(locomo / (std::string(f) + ".json"));
    for (auto& r : part.records) all.push_back(std::move(r));
  }
  REQUIRE(all.size() == 677);  // 184 + 169 + 324 observations
  CHECK(mh::embed_missing(all, mh::lexical_embedder(384, 0)) == 677);
  const auto store = mh::memory_store<>::from_records(std::move(all));

  // At the default threshold 0.92 the lexical stand-in model finds no near duplicate here: its
  // cosines for paraphrases are lower than a sentence model's. At 0.7 it finds three clusters,
  // each a fact restated in a later session (read by hand):
  mh::default_check_settings s;
  s.near_duplicate_threshold = 0.7f;
  const auto r = mh::make_default_pipeline(s).run(store, at("2024-03-01T00:00:00Z"));
  // "Jon is starting his own dance studio due to his passion for dancing." (session 1),
  // "...searching for a place to open his dance studio." (3), "Jon is prepping for his own dance
  // studio." (13)
  CHECK(has_finding(r, "near_duplicate",
                    {"locomo-30-s1-Jon-2", "locomo-30-s3-Jon-1", "locomo-30-s13-Jon-1"}));
  // "Maria volunteers at a homeless shelter." in sessions 1, 8 and 26
  CHECK(has_finding(r, "near_duplicate",
                    {"locomo-41-s1-Maria-1", "locomo-41-s8-Maria-2", "locomo-41-s26-Maria-2"}));
  // "Maria agrees with John on the ... education and infrastructure" in sessions 12 and 22
  CHECK(has_finding(r, "near_duplicate", {"locomo-41-s12-Maria-1", "locomo-41-s22-Maria-1"}));
  CHECK(r.count("near_duplicate") == 3);
  // clean data: no structural, conflict, scope or hygiene finding; nothing stale on 2024-03-01
  CHECK(r.findings.size() == 3);

  // Two and a half years on, facts (365-day half-life) older than 365 * log2(5) = 847.5 days,
  // i.e. created before 2023-02-04T11:54Z, fall below weight 0.2: Python counts 84 such
  // observations (sessions of 30.json and 41.json dated before that instant).
  const auto later = mh::make_default_pipeline().run(store, at("2025-06-01T00:00:00Z"));
  CHECK(later.count("stale") == 84);
}

TEST_CASE("sample store: plan, apply through the log, verify, roll back byte for byte") {
  auto store = sample_store();
  const auto original = mh::to_jsonl(store);
  const auto settings = sample_settings();
  const auto now = at("2024-07-15T00:00:00Z");
  const auto before = mh::make_default_pipeline(settings).run(store, now);
  mh::planner_options po;
  po.metadata_defaults["topic"] = std::string("unknown");
  const auto plan = mh::make_plan(store, before, po);

  // nothing in the plan deletes or merges across scopes
  for (const auto& a : plan.actions) {
    for (const auto& e : a.edits)
      if (const auto* st = std::get_if<mh::edit_set_status>(&e.op))
        CHECK((st->status == "archived" || st->status == "pending_review"));
    if (a.type == mh::action_types::merge_duplicates) CHECK(a.blast.scopes.size() == 1);
  }

  const auto dir = std::filesystem::temp_directory_path() / "memhealth_pipeline_test";
  std::filesystem::create_directories(dir);
  const auto wal_path = dir / "run.wal";
  std::filesystem::remove(wal_path);
  mh::apply_options ao;
  ao.approve_tier2 = true;
  mh::apply_result res;
  {
    mh::wal_writer w(wal_path, mh::wal_sync::none);
    res = mh::apply_plan(store, plan, w, ao);
  }
  CHECK(res.failed.empty());
  CHECK(!res.applied.empty());
  // verification: the tier-1 and tier-2 findings are gone after apply
  const auto after = mh::make_default_pipeline(settings).run(store, now);
  for (const char* kind : {"exact_duplicate", "conflict", "dangling_reference", "merged_but_active",
                           "illegal_status", "metadata_schema_violation", "stale"}) {
    CAPTURE(kind);
    CHECK(after.count(kind) == 0);
  }
  // tier 3 (re-embedding, cross-scope copy, junk) waits for a person
  CHECK(after.count("mixed_embedding_version") == 1);
  CHECK(after.count("cross_scope_duplicate") == 1);
  CHECK(after.count("junk_content") == 1);
  // the merged copies are archived with duplicate_of, not deleted
  CHECK(store.size() == 51);
  std::size_t archived_copies = 0;
  for (std::size_t i = 0; i < store.size(); ++i)
    archived_copies +=
        store.record(i).status == "archived" && !store.record(i).links.duplicate_of.empty();
  CHECK(archived_copies >=
        3);  // 2 Berlin copies + 1 陈先生 copy (+ the planted merged-but-active record)

  // roll back from the log: the original bytes come back
  const auto log = mh::read_wal_file(wal_path);
  CHECK_FALSE(log.problem.has_value());
  const auto rb = mh::rollback(store, log);
  CHECK(rb.conflicts.empty());
  CHECK(mh::to_jsonl(store) == original);
  std::filesystem::remove_all(dir);
}

TEST_CASE("default pipeline: threads = 2 gives the findings of one thread (36,000 records)") {
  // 36,000 healthy records (>= 2 x 16,384, so the structural scan really splits in two ranges)
  // in 30 scopes of 1,200 (three 512-row bands per scope, so each scope's duplicate and conflict
  // joins run on two threads), with random 128-d unit embeddings (the cosine of two random 128-d
  // unit vectors has standard deviation 1/sqrt(128) = 0.088, so 0.6 is 6.8 sd away: no pair of
  // the 21.6 million reaches the conflict judge or the near-duplicate threshold by chance), and
  // faults planted on both sides of the split at 18,000:
  // NaN embeddings at 10 and 30,000, a zero vector at 20,000, record 31,000 reusing the id of
  // record 5, a dangling related_ids link at 17,000, and a restated fact (the same 64 values in
  // the same scope, text differing in case) at 25,000 / 25,001.
  constexpr std::size_t n = 36'000, dim = 128;
  std::mt19937 gen(7);
  std::normal_distribution<float> normal;
  std::vector<mh::memory_record> rs(n);
  const auto created = mh::parse_timestamp("2024-07-01T00:00:00Z").value();
  for (std::size_t i = 0; i < n; ++i) {
    auto& r = rs[i];
    r.id = "rec-" + std::to_string(i);
    r.content = "note number " + std::to_string(i);
    r.scope = "user:" + std::to_string(i / 1200);
    r.kind = "fact";
    r.status = "active";
    r.source = "user_declared";
    r.embedding_version = "m1";
    r.created_at = created;
    r.updated_at = created;
    r.last_accessed_at = created;
    r.embedding.resize(dim);
    float sq = 0;
    for (auto& v : r.embedding) {
      v = normal(gen);
      sq += v * v;
    }
    for (auto& v : r.embedding) v /= std::sqrt(sq);
  }
  rs[10].embedding[3] = std::numeric_limits<float>::quiet_NaN();
  rs[30'000].embedding[0] = std::numeric_limits<float>::quiet_NaN();
  std::fill(rs[20'000].embedding.begin(), rs[20'000].embedding.end(), 0.0f);
  rs[31'000].id = rs[5].id;
  rs[17'000].links.related_ids = {"rec-ghost"};
  rs[25'001].embedding = rs[25'000].embedding;
  rs[25'000].content = "The user prefers green tea.";
  rs[25'001].content = "the user prefers green tea.";
  const auto store = mh::memory_store<>::from_records(rs, dim);

  auto run = [&](unsigned threads) {
    mh::default_check_settings s;
    s.threads = threads;
    return mh::make_default_pipeline(s).run(store, at("2024-07-15T00:00:00Z"));
  };
  const auto one = run(1), two = run(2);
  CHECK(one.count("embedding_non_finite") == 2);
  CHECK(one.count("embedding_zero_norm") == 1);
  CHECK(one.count("duplicate_id") == 1);
  CHECK(one.count("dangling_reference") == 1);
  CHECK(has_finding(one, "exact_duplicate", {"rec-25000", "rec-25001"}));
  CHECK(one.count("conflict") == 0);
  REQUIRE(two.findings.size() == one.findings.size());
  for (std::size_t k = 0; k < one.findings.size(); ++k) {
    const auto &a = one.findings[k], &b = two.findings[k];
    CHECK(a.kind == b.kind);
    CHECK(a.severity == b.severity);
    CHECK(a.record_ids == b.record_ids);
    CHECK(a.evidence == b.evidence);
  }
}

TEST_CASE("report JSON: the check document, repeated evidence keys, severities in order") {
  mh::report r;
  r.records_total = 3;
  r.records_checked = 2;
  mh::finding a;
  a.kind = "metadata_schema_violation";
  a.severity = mh::severity::error;
  a.detector = "structural";
  a.record_ids = {"m1"};
  a.with("missing", std::string("topic")).with("missing", std::string("lang")).with("weight", 0.5);
  mh::finding b;
  b.kind = "stale";
  b.severity = mh::severity::info;
  b.detector = "staleness";
  b.record_ids = {"m2"};
  b.suggested_repair = "downweight";
  b.with("count", std::int64_t{2}).with("needs_human", true);
  r.findings = {a, b};
  const auto f = mh::findings_json(r);
  CHECK(
      f[0].dump() ==
      R"({"kind":"metadata_schema_violation","severity":"error","detector":"structural","record_ids":["m1"],)"
      R"("evidence":{"missing":["topic","lang"],"weight":0.5},"suggested_repair":""})");
  CHECK(f[1]["evidence"].dump() == R"({"count":2,"needs_human":true})");
  CHECK(
      mh::summary_json(r, 1).dump() ==
      R"({"records_total":3,"records_checked":2,"findings":2,"load_issues":1,)"
      R"("by_kind":{"metadata_schema_violation":1,"stale":1},"by_severity":{"info":1,"error":1}})");
  const std::vector<mh::load_issue> issues{{"s.jsonl", 7, "", "not JSON", false}};
  CHECK(mh::load_issues_json(issues).dump() ==
        R"([{"field":"","file":"s.jsonl","line":7,"reason":"not JSON","record_kept":false}])");
  mh::detect_options d = at("2024-07-15T00:00:00Z");
  d.dimension = 384;
  const auto j = mh::check_report_json(r, "s.jsonl", d, issues);
  CHECK(
      j.dump().find(
          R"({"schema_version":1,"store":"s.jsonl","now":"2024-07-15T00:00:00.000Z","dimension":384,"summary":)") ==
      0);
  CHECK(j["load_issues"].size() == 1);
  CHECK(j["findings"] == f);
}

// ------------------------------------------------------------------ incremental (issue 20)

namespace {

// 40 scopes x 25 records ("r-S-J" is record J of scope "tenant:S", index 25 S + J), random
// 96-d unit embeddings (the cosine of two random 96-d unit vectors has standard deviation
// 1/sqrt(96) = 0.10, so the conflict candidate threshold 0.6 is 5.9 sd away and the 0.92
// near-duplicate threshold further: no unplanted pair is similar), all healthy except:
// - exact duplicates: r-2-3 / r-2-4 (scope 2, changed) and r-30-1 / r-30-2 (scope 30,
//   unchanged: not reported);
// - a near duplicate: r-5-7 is r-5-6's vector plus noise of norm about 0.2 (cosine about
//   0.98), text with one more word;
// - a cross-scope duplicate: one text in r-7-3 (changed), r-33-10 and r-38-2; another in
//   r-20-1 / r-21-1 (both unchanged: not reported);
// - a conflict: fact claims user/city Paris (r-9-1) vs Berlin (r-9-2);
// - a dangling related_ids link from r-11-4;
// - reference cycles r-13-1 <-> r-13-2 (duplicate_of both ways) and r-17-0 <-> r-25-0 (across
//   scopes: also two cross_scope_links);
// - r-19-5 reuses the id of r-3-5 (duplicate_id);
// - r-21-7's content is "TODO" (junk_content);
// - 30 records (every 33rd) have embedding_version "m2", the rest "m1";
// - 12 records (r-S-20 for S = 0, 3, 6, ..., 33) are "temporary" and 10 days old (stale).
// Changed (by the mask): one or two records in each of 15 scopes; r-29-9 is changed by
// `since` only (updated after the cursor).
constexpr std::size_t k_scopes = 40, k_per_scope = 25, k_dim = 96;

std::size_t rix(std::size_t s, std::size_t j) {
  return s * k_per_scope + j;
}
std::string rid(std::size_t s, std::size_t j) {
  return "r-" + std::to_string(s) + "-" + std::to_string(j);
}

std::vector<mh::memory_record> incremental_records() {
  std::mt19937 gen(20);
  std::normal_distribution<float> normal;
  auto unit = [&](std::vector<float> v) {
    float sq = 0;
    for (float x : v) sq += x * x;
    for (auto& x : v) x /= std::sqrt(sq);
    return v;
  };
  const auto t0 = mh::parse_timestamp("2024-07-01T00:00:00Z").value();
  std::vector<mh::memory_record> rs(k_scopes * k_per_scope);
  for (std::size_t s = 0; s < k_scopes; ++s)
    for (std::size_t j = 0; j < k_per_scope; ++j) {
      auto& r = rs[rix(s, j)];
      r.id = rid(s, j);
      r.content = "memory " + std::to_string(j) + " of tenant " + std::to_string(s);
      r.scope = "tenant:" + std::to_string(s);
      r.kind = "fact";
      r.status = "active";
      r.source = "user_declared";
      r.embedding_version = "m1";
      r.created_at = r.updated_at = r.last_accessed_at = t0;
      std::vector<float> e(k_dim);
      for (auto& x : e) x = normal(gen);
      r.embedding = unit(std::move(e));
    }
  rs[rix(2, 3)].content = "The user has a dog named Rex.";
  rs[rix(2, 4)].content = "the user has a dog named rex";
  rs[rix(30, 1)].content = "The user owns a red bicycle.";
  rs[rix(30, 2)].content = "the user owns a red bicycle";
  rs[rix(5, 6)].content = "The user enjoys hiking in the Alps.";
  rs[rix(5, 7)].content = "The user really enjoys hiking in the Alps.";
  {
    auto e = rs[rix(5, 6)].embedding;
    for (auto& x : e) x += 0.02f * normal(gen);
    rs[rix(5, 7)].embedding = unit(std::move(e));
  }
  for (auto [s, j] : {std::pair<std::size_t, std::size_t>{7, 3}, {33, 10}, {38, 2}})
    rs[rix(s, j)].content = "The launch code word is bluebird.";
  rs[rix(20, 1)].content = "The office wifi password is hunter2.";
  rs[rix(21, 1)].content = "the office wifi password is hunter2";
  rs[rix(9, 1)].content = "The user lives in Paris.";
  rs[rix(9, 1)].claim = mh::fact_claim{"user", "city", "Paris"};
  rs[rix(9, 2)].content = "The user lives in Berlin.";
  rs[rix(9, 2)].claim = mh::fact_claim{"user", "city", "Berlin"};
  rs[rix(11, 4)].links.related_ids = {"ghost-record"};
  rs[rix(13, 1)].links.duplicate_of = rid(13, 2);
  rs[rix(13, 2)].links.duplicate_of = rid(13, 1);
  rs[rix(17, 0)].links.duplicate_of = rid(25, 0);
  rs[rix(25, 0)].links.duplicate_of = rid(17, 0);
  rs[rix(19, 5)].id = rid(3, 5);
  rs[rix(21, 7)].content = "TODO";
  for (std::size_t i = 0; i < rs.size(); i += 33) rs[i].embedding_version = "m2";
  const auto old = mh::parse_timestamp("2024-07-05T00:00:00Z").value();
  for (std::size_t s = 0; s < 36; s += 3) {
    auto& r = rs[rix(s, 20)];
    r.kind = "temporary";
    r.created_at = r.updated_at = r.last_accessed_at = old;
  }
  rs[rix(29, 9)].updated_at = mh::parse_timestamp("2024-07-12T00:00:00Z").value();
  return rs;
}

// The changed mask: 17 records in 15 scopes.
std::shared_ptr<const std::vector<bool>> incremental_mask() {
  auto m = std::make_shared<std::vector<bool>>(k_scopes * k_per_scope, false);
  for (auto [s, j] : {std::pair<std::size_t, std::size_t>{0, 0},
                      {2, 3},
                      {4, 10},
                      {5, 6},
                      {7, 3},
                      {9, 1},
                      {11, 4},
                      {11, 5},
                      {13, 1},
                      {17, 0},
                      {19, 5},
                      {21, 7},
                      {23, 3},
                      {27, 8},
                      {35, 12},
                      {39, 24},
                      {39, 0}})
    (*m)[rix(s, j)] = true;
  return m;
}

void check_same_report(const mh::report& a, const mh::report& b) {
  CHECK(a.records_total == b.records_total);
  CHECK(a.records_checked == b.records_checked);
  REQUIRE(a.findings.size() == b.findings.size());
  for (std::size_t k = 0; k < a.findings.size(); ++k) {
    const auto &x = a.findings[k], &y = b.findings[k];
    CAPTURE(k);
    CAPTURE(x.kind);
    CHECK(x.kind == y.kind);
    CHECK(x.detector == y.detector);
    CHECK(x.severity == y.severity);
    CHECK(x.record_ids == y.record_ids);
    CHECK(x.evidence == y.evidence);
    CHECK(x.suggested_repair == y.suggested_repair);
  }
}

}  // namespace

TEST_CASE("incremental: the subset run finds what the full run finds (40 scopes x 25 records)") {
  // the default pipeline's duplicate and conflict detectors run on the subset (else this test
  // would compare the whole-store run with itself for them)
  using default_detectors = std::remove_cvref_t<decltype(mh::make_default_pipeline().detectors())>;
  static_assert(mh::scope_local_detector<std::tuple_element_t<1, default_detectors>>::value);
  static_assert(mh::scope_local_detector<std::tuple_element_t<2, default_detectors>>::value);
  const auto store = mh::memory_store<>::from_records(incremental_records(), k_dim);
  const auto p = mh::make_default_pipeline();
  auto d = at("2024-07-15T00:00:00Z");
  d.changed = incremental_mask();

  SUBCASE("changed mask only") {
    const auto full = p.run(store, d);
    const auto part = mh::run_incremental(p, store, d);
    check_same_report(full, part);
    // Independently counted (see incremental_records): the planted faults of changed records.
    CHECK(full.records_checked == 17);
    CHECK(full.count("exact_duplicate") == 1);
    CHECK(has_finding(full, "exact_duplicate", {rid(2, 3), rid(2, 4)}));
    CHECK(full.count("near_duplicate") == 1);
    CHECK(has_finding(full, "near_duplicate", {rid(5, 6), rid(5, 7)}));
    CHECK(full.count("cross_scope_duplicate") == 1);
    CHECK(has_finding(full, "cross_scope_duplicate", {rid(7, 3), rid(33, 10), rid(38, 2)}));
    CHECK(full.count("conflict") == 1);
    CHECK(has_finding(full, "conflict", {rid(9, 1), rid(9, 2)}));
    CHECK(full.count("dangling_reference") == 1);
    CHECK(full.count("reference_cycle") == 2);
    CHECK(full.count("cross_scope_link") == 2);
    CHECK(full.count("duplicate_id") == 1);
    CHECK(full.count("junk_content") == 1);
    REQUIRE(full.count("mixed_embedding_version") == 1);
    const auto* mixed = of_kind(full, "mixed_embedding_version").front();
    // every 33rd record, 0 to 990: 31 records of "m2"
    const auto* minority = mixed->evidence_of("minority_count");
    REQUIRE(minority != nullptr);
    CHECK(std::get<std::int64_t>(*minority) == 31);
    // stale: all 12 temporary records, changed or not (no cursor: every stale record is new)
    CHECK(full.count("stale") == 12);
  }
  SUBCASE("cursor and mask: r-29-9 is changed by its updated_at") {
    d.since = mh::parse_timestamp("2024-07-10T00:00:00Z")->instant;
    const auto full = p.run(store, d);
    const auto part = mh::run_incremental(p, store, d);
    check_same_report(full, part);
    CHECK(full.records_checked == 18);
  }
  SUBCASE("a warm normalised-text cache gives the same report") {
    mh::normalized_text_hashes cache;
    const auto full = p.run(store, d);
    (void)mh::run_incremental(p, store, d, mh::text_normalizer{}, &cache);
    CHECK(cache.size() == store.size() - 2);  // one content is planted three times
    check_same_report(full, mh::run_incremental(p, store, d, mh::text_normalizer{}, &cache));
  }
}

TEST_CASE("incremental: one changed record selects its scope, plus its text's other holders") {
  const auto store = mh::memory_store<>::from_records(incremental_records(), k_dim);
  std::vector<bool> changed(store.size(), false);
  changed[rix(12, 7)] = true;
  std::vector<std::size_t> scope12;
  for (std::size_t j = 0; j < k_per_scope; ++j) scope12.push_back(rix(12, j));
  CHECK(mh::incremental_subset(store, changed) == scope12);

  // r-7-3's text is also held by r-33-10 and r-38-2 (a cross-scope duplicate)
  changed.assign(store.size(), false);
  changed[rix(7, 3)] = true;
  std::vector<std::size_t> want;
  for (std::size_t j = 0; j < k_per_scope; ++j) want.push_back(rix(7, j));
  want.push_back(rix(33, 10));
  want.push_back(rix(38, 2));
  CHECK(mh::incremental_subset(store, changed) == want);

  // nothing changed: nothing selected; a wrong-sized mask is a precondition error
  changed.assign(store.size(), false);
  CHECK(mh::incremental_subset(store, changed).empty());
  changed.pop_back();
  CHECK_THROWS_AS((void)mh::incremental_subset(store, changed), mh::error);

  // the view: records, embeddings and ids of the selection only, mapped back to the store
  const mh::subset_store<mh::memory_store<>> sub(store, want);
  static_assert(mh::record_store<mh::subset_store<mh::memory_store<>>>);
  REQUIRE(sub.size() == 27);
  CHECK(sub.record(25).id == rid(33, 10));
  CHECK(sub.source_index(25) == rix(33, 10));
  CHECK(sub.embedding(26).data() == store.embedding(rix(38, 2)).data());
  CHECK(sub.find(rid(38, 2)) == std::optional<std::size_t>(26));
  CHECK_FALSE(sub.find(rid(0, 0)).has_value());
  CHECK(sub.dimension() == k_dim);
  CHECK_THROWS_AS(mh::subset_store<mh::memory_store<>>(store, {3, 2}), mh::error);
  CHECK_THROWS_AS(mh::subset_store<mh::memory_store<>>(store, {store.size()}), mh::error);
}
}  // namespace pipeline_test
