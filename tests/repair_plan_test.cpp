// Tests of the repair planner, conflict rules, guardrails and plan JSON (repair/*.hpp).
// Every expected value below was worked out by hand from the inputs (comments show how).

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "memhealth/detect/duplicates.hpp"
#include "memhealth/detect/finding.hpp"
#include "memhealth/detect/pipeline.hpp"
#include "memhealth/detect/structural.hpp"
#include "memhealth/record/memory_record.hpp"
#include "memhealth/repair/action.hpp"
#include "memhealth/repair/conflict_rules.hpp"
#include "memhealth/repair/guardrails.hpp"
#include "memhealth/repair/plan_file.hpp"
#include "memhealth/repair/plan_json.hpp"
#include "memhealth/repair/plan_stream.hpp"
#include "memhealth/repair/planner.hpp"
#include "memhealth/store/memory_store.hpp"

#include <unistd.h>
#include <zlib.h>

namespace repair_plan_test {
using namespace memhealth;
using namespace std::chrono_literals;

namespace {

timestamp ts(std::string_view s) {
  auto t = parse_timestamp(s);
  REQUIRE(t.has_value());
  return *t;
}

memory_record rec(std::string id, std::string content, std::string scope = "user:7",
                  std::string source = "model_extracted",
                  std::string updated = "2024-01-01T00:00:00Z") {
  memory_record r;
  r.id = std::move(id);
  r.content = std::move(content);
  r.scope = std::move(scope);
  r.source = std::move(source);
  r.status = "active";
  r.kind = "fact";
  r.created_at = ts("2023-12-01T00:00:00Z");
  r.updated_at = ts(updated);
  return r;
}

finding make_finding(std::string_view kind, std::vector<std::string> ids,
                     std::string detector = "test") {
  finding f;
  f.kind = std::string(kind);
  f.detector = std::move(detector);
  f.record_ids = std::move(ids);
  return f;
}

std::string test_slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

template <class Op>
const Op* op_of(const record_edit& e) {
  return std::get_if<Op>(&e.op);
}

const repair_action* find_action(const repair_plan& p, std::string_view type,
                                 std::string_view target) {
  for (const auto& a : p.actions)
    if (a.type == type && std::find(a.targets.begin(), a.targets.end(), target) != a.targets.end())
      return &a;
  return nullptr;
}

bool deferred_contains(const repair_plan& p, std::string_view needle) {
  return std::any_of(p.deferred.begin(), p.deferred.end(),
                     [&](const std::string& d) { return d.find(needle) != std::string::npos; });
}

// A user rule: a record whose metadata has pinned=true wins.
struct prefer_pinned {
  static constexpr std::string_view name = "prefer_pinned";
  rule_verdict operator()(const memory_record& a, const memory_record& b) const {
    auto pinned = [](const memory_record& r) {
      auto it = r.metadata.find("pinned");
      return it != r.metadata.end() && it->second == metadata_value(true);
    };
    if (pinned(a) != pinned(b)) return pinned(a) ? rule_verdict::winner_a : rule_verdict::winner_b;
    return rule_verdict::undecided;
  }
};

}  // namespace

// ---------------------------------------------------------------- conflict rules

TEST_CASE("conflict rules: recency compares UTC instants, not text") {
  // 07:00+08:00 on 1 March is 23:00Z on 29 February: earlier than 00:30Z on 1 March (by 1.5 h),
  // although its text sorts later.
  const auto a = rec("a", "x", "user:7", "model_extracted", "2024-03-01T07:00:00+08:00");
  const auto b = rec("b", "y", "user:7", "model_extracted", "2024-03-01T00:30:00Z");
  CHECK(std::string("2024-03-01T07:00:00+08:00") > std::string("2024-03-01T00:30:00Z"));
  CHECK(newer_updated_at{}(a, b) == rule_verdict::winner_b);
  CHECK(newer_updated_at{}(b, a) == rule_verdict::winner_a);
  // minimum gap: 90 minutes apart
  CHECK(newer_updated_at{std::chrono::milliseconds(2h)}(a, b) == rule_verdict::undecided);
  CHECK(newer_updated_at{std::chrono::milliseconds(1h)}(a, b) == rule_verdict::winner_b);
  CHECK(newer_updated_at{std::chrono::milliseconds(90min)}(a, b) == rule_verdict::undecided);
  // equal instants written with different offsets, and a missing updated_at: undecided
  const auto c = rec("c", "x", "user:7", "model_extracted", "2024-03-01T08:00:00+08:00");
  const auto d = rec("d", "y", "user:7", "model_extracted", "2024-03-01T00:00:00Z");
  CHECK(newer_updated_at{}(c, d) == rule_verdict::undecided);
  auto e = d;
  e.updated_at.reset();
  CHECK(newer_updated_at{}(c, e) == rule_verdict::undecided);
}

TEST_CASE("conflict rules: more specific scope only between ancestor and descendant") {
  const auto proj = rec("p", "x", "user:7/project:a");
  const auto user = rec("u", "y", "user:7");
  CHECK(more_specific_scope{}(proj, user) == rule_verdict::winner_a);
  CHECK(more_specific_scope{}(user, proj) == rule_verdict::winner_b);
  CHECK(more_specific_scope{}(proj, rec("q", "z", "user:7/project:b")) ==
        rule_verdict::undecided);  // siblings
  CHECK(more_specific_scope{}(rec("r", "z", "user:70/project:a"), user) ==
        rule_verdict::undecided);  // not inside
  CHECK(more_specific_scope{}(user, rec("s", "z", "user:7")) == rule_verdict::undecided);
  CHECK(more_specific_scope{}(proj, rec("t", "z", "")) ==
        rule_verdict::undecided);  // missing scope
}

TEST_CASE("conflict rules: the default chain puts scope before recency") {
  // the project record is older (2023) but more specific: it wins by rule 0
  const auto proj = rec("p", "x", "user:7/project:a", "system_log", "2023-01-01T00:00:00Z");
  const auto user = rec("u", "y", "user:7", "user_declared", "2024-06-01T00:00:00Z");
  const default_conflict_rules rules;
  const auto d = rules.decide(proj, user);
  CHECK(d.verdict == rule_verdict::winner_a);
  CHECK(d.rule_index == 0);
  CHECK(d.rule_name == "more_specific_scope");
  // same scope: recency decides (rule 1) even against a more trusted source
  const auto older = rec("o", "x", "user:7", "user_declared", "2023-01-01T00:00:00Z");
  const auto newer_log = rec("n", "y", "user:7", "system_log", "2024-01-01T00:00:00Z");
  const auto d2 = rules.decide(older, newer_log);
  CHECK(d2.verdict == rule_verdict::winner_b);
  CHECK(d2.rule_name == "newer_updated_at");
  // equal scope and instant: the source decides (rule 2)
  const auto s1 = rec("s1", "x", "user:7", "user_declared", "2024-03-01T08:00:00+08:00");
  const auto s2 = rec("s2", "y", "user:7", "model_extracted", "2024-03-01T00:00:00Z");
  CHECK(rules.decide(s1, s2).rule_name == "more_trusted_source");
  CHECK(rules(s1, s2) == rule_verdict::winner_a);
  // everything equal: undecided, rule_index == size
  const auto e1 = rec("e1", "x", "user:7", "model_extracted", "2024-03-01T08:00:00+08:00");
  const auto e2 = rec("e2", "y", "user:7", "model_extracted", "2024-03-01T00:00:00Z");
  const auto d3 = rules.decide(e1, e2);
  CHECK(d3.verdict == rule_verdict::undecided);
  CHECK(d3.rule_index == 4);
  CHECK(d3.rule_name.empty());
}

TEST_CASE("conflict rules: source trust order") {
  auto src = [](std::string s) { return rec("x", "c", "user:7", std::move(s)); };
  const more_trusted_source trust;
  CHECK(trust(src("user_declared"), src("model_extracted")) == rule_verdict::winner_a);
  CHECK(trust(src("user_declared"), src("system_config")) == rule_verdict::winner_a);
  CHECK(trust(src("system_config"), src("model_extracted")) == rule_verdict::winner_a);
  CHECK(trust(src("system_log"), src("model_extracted")) == rule_verdict::winner_b);
  CHECK(trust(src(""), src("system_log")) == rule_verdict::winner_b);  // missing ranks lowest
  CHECK(trust(src("manual_entry"), src("system_config")) == rule_verdict::undecided);
  const configured_over_extracted conf;
  CHECK(conf(src("system_config"), src("model_extracted")) == rule_verdict::winner_a);
  CHECK(conf(src("system_log"), src("manual_entry")) == rule_verdict::winner_b);
  CHECK(conf(src("user_declared"), src("system_log")) == rule_verdict::undecided);
  CHECK(conf(src("model_extracted"), src("system_log")) == rule_verdict::undecided);
  CHECK(conf(src("manual_entry"), src("system_config")) == rule_verdict::undecided);
}

TEST_CASE("conflict rules: a user rule inserted first wins") {
  auto pinned = rec("p", "x", "user:7", "system_log", "2023-01-01T00:00:00Z");
  pinned.metadata["pinned"] = true;
  const auto newer = rec("n", "y", "user:7", "user_declared", "2024-01-01T00:00:00Z");
  CHECK(default_conflict_rules{}(pinned, newer) == rule_verdict::winner_b);
  const auto chain = prepend_rule(prefer_pinned{}, default_conflict_rules{});
  static_assert(
      std::is_same_v<std::remove_const_t<decltype(chain)>,
                     conflict_rule_chain<prefer_pinned, more_specific_scope, newer_updated_at,
                                         more_trusted_source, configured_over_extracted>>);
  const auto d = chain.decide(pinned, newer);
  CHECK(d.verdict == rule_verdict::winner_a);
  CHECK(d.rule_index == 0);
  CHECK(d.rule_name == "prefer_pinned");
  // appended last it only decides what the others leave open: here recency decides first
  const auto late = append_rule(default_conflict_rules{}, prefer_pinned{});
  CHECK(late(pinned, newer) == rule_verdict::winner_b);
  // deduction guide: a chain from values, with a configured rule
  const conflict_rule_chain custom{prefer_pinned{},
                                   newer_updated_at{std::chrono::milliseconds(1h)}};
  static_assert(std::is_same_v<std::remove_const_t<decltype(custom)>,
                               conflict_rule_chain<prefer_pinned, newer_updated_at>>);
  CHECK(std::get<1>(custom.rules).min_gap == std::chrono::milliseconds(1h));
  static_assert(conflict_rule<default_conflict_rules, memory_record>);
}

// ---------------------------------------------------------------- planner

namespace {

struct fixture {
  memory_store<memory_record> store;
  report rep;

  fixture() {
    std::vector<memory_record> rs;
    // duplicate cluster, primary m1
    auto m1 = rec("m1", "I live in Berlin.", "user:7", "user_declared");
    m1.metadata["topic"] = std::string("home");
    auto m2 = rec("m2", "i live in berlin");
    m2.metadata["topic"] = std::string("home");
    m2.metadata["batch"] = std::int64_t{3};
    auto m3 = rec("m3", "I live in Berlin, Germany");
    rs.push_back(m1);
    rs.push_back(m2);
    rs.push_back(m3);
    // cross-scope copies
    rs.push_back(rec("x1", "likes tea", "user:7"));
    rs.push_back(rec("x2", "likes tea", "user:8"));
    // conflicts: recency decides (c2 is later in UTC)
    rs.push_back(
        rec("c1", "diet: vegan", "user:7", "model_extracted", "2024-03-01T07:00:00+08:00"));
    rs.push_back(rec("c2", "diet: omnivore", "user:7", "model_extracted", "2024-03-01T00:30:00Z"));
    // equal evidence: undecided
    rs.push_back(rec("c3", "city: Rome", "user:7", "model_extracted", "2024-03-01T08:00:00+08:00"));
    rs.push_back(rec("c4", "city: Oslo", "user:7", "model_extracted", "2024-03-01T00:00:00Z"));
    // state vs event: decidable by recency, but the detector says a person must decide
    rs.push_back(rec("c5", "is vegetarian", "user:7", "model_extracted", "2024-01-01T00:00:00Z"));
    rs.push_back(
        rec("c6", "had steak yesterday", "user:7", "model_extracted", "2024-02-01T00:00:00Z"));
    // stale
    rs.push_back(rec("s1", "old note"));
    auto s2 = rec("s2", "older note");
    s2.effective_weight = 0.5;
    rs.push_back(s2);
    auto s3 = rec("s3", "already low");
    s3.effective_weight = 0.1;
    rs.push_back(s3);
    // tier 1
    rs.push_back(rec("t1", "missing metadata"));
    auto t2 = rec("t2", "bad status");
    t2.status = "actve";
    rs.push_back(t2);
    auto t3 = rec("t3", "dangling");
    t3.links.related_ids = {"ghost"};
    rs.push_back(t3);
    auto t4 = rec("t4", "merged but active");
    t4.links.duplicate_of = "m1";
    rs.push_back(t4);
    auto t5 = rec("t5", "local times", "user:7", "model_extracted", "2023-11-30T20:00:00-08:00");
    rs.push_back(t5);
    rs.push_back(rec("t6", "utc times", "user:7", "model_extracted", "2023-11-01T00:00:00Z"));
    // broken vectors
    for (const char* id : {"e1", "e2", "e3", "e4", "e5"})
      rs.push_back(rec(id, std::string("vec ") + id));
    // a junk record
    rs.push_back(rec("j1", "{{system_prompt}}"));
    store = memory_store<memory_record>::from_records(std::move(rs));

    auto& F = rep.findings;
    F.push_back(make_finding(finding_kinds::near_duplicate, {"m1", "m2", "m3"}, "duplicates"));
    F.push_back(make_finding(finding_kinds::exact_duplicate, {"x1", "x2"}, "duplicates"));
    F.push_back(make_finding(finding_kinds::conflict, {"c1", "c2"}, "conflicts")
                    .with("needs_human", false));
    F.push_back(make_finding(finding_kinds::conflict, {"c3", "c4"}, "conflicts")
                    .with("needs_human", false));
    F.push_back(
        make_finding(finding_kinds::conflict, {"c5", "c6"}, "conflicts").with("needs_human", true));
    F.push_back(make_finding(finding_kinds::stale, {"s1"}, "staleness")
                    .with("curve_weight", 0.125)
                    .with("weight", 0.125));
    F.push_back(make_finding(finding_kinds::stale, {"s2"}, "staleness")
                    .with("curve_weight", 0.25)
                    .with("weight", 0.125));
    F.push_back(make_finding(finding_kinds::stale, {"s3"}, "staleness")
                    .with("curve_weight", 0.3)
                    .with("weight", 0.03));
    F.push_back(make_finding(finding_kinds::metadata_schema_violation, {"t1"}, "structural")
                    .with("field", std::string("metadata"))
                    .with("missing", std::string("topic"))
                    .with("missing", std::string("lang")));
    F.push_back(make_finding(finding_kinds::illegal_status, {"t2"}, "structural")
                    .with("value", std::string("actve")));
    F.push_back(make_finding(finding_kinds::dangling_reference, {"t3"}, "structural")
                    .with("field", std::string("related_ids"))
                    .with("target", std::string("ghost")));
    F.push_back(make_finding(finding_kinds::merged_but_active, {"t4"}, "structural"));
    F.push_back(make_finding(finding_kinds::timestamp_inconsistent, {"t5"}, "structural")
                    .with("problem", std::string("updated_before_created")));
    F.push_back(make_finding(finding_kinds::timestamp_inconsistent, {"t6"}, "structural")
                    .with("problem", std::string("updated_before_created")));
    for (const char* id : {"e5", "e3", "e1", "e4"})
      F.push_back(make_finding(finding_kinds::embedding_dim_mismatch, {id}, "structural"));
    F.push_back(make_finding(finding_kinds::embedding_non_finite, {"e2"}, "structural"));
    F.push_back(make_finding(finding_kinds::embedding_zero_norm, {"e2"}, "structural"));
    F.push_back(make_finding(finding_kinds::junk_content, {"j1"}, "hygiene"));
    F.push_back(make_finding(finding_kinds::check_skipped, {"e1"}, "duplicates"));
    F.push_back(make_finding("user_kind", {"m1"}, "mine"));
    F.push_back(make_finding(finding_kinds::conflict, {"c1", "nope"}, "conflicts"));
  }

  planner_options options() const {
    planner_options opt;
    opt.metadata_defaults["topic"] = std::string("general");
    opt.reembed_batch_size = 2;
    opt.reembed_version = "model-v2";
    return opt;
  }
};

}  // namespace

TEST_CASE(
    "planner: merge keeps the primary, archives the others with duplicate_of, notes unique info") {
  fixture fx;
  const auto plan = make_plan(fx.store, fx.rep, fx.options());
  const auto* a = find_action(plan, action_types::merge_duplicates, "m1");
  REQUIRE(a != nullptr);
  CHECK(a->tier == 2);
  CHECK(a->automation == automation::confirm);
  CHECK(a->targets == std::vector<std::string>{"m1", "m2", "m3"});
  CHECK(a->rollback_method == "restore_before_images");
  CHECK(a->priority == action_priority::merge);
  // m2 has the primary's text after normalisation (case, final '.'), but a metadata key m1 lacks;
  // m3's text differs.
  const std::vector<record_edit> expected = {
      {"m1", edit_append_notes{{"merged from m2: metadata batch=3",
                                "merged from m3: I live in Berlin, Germany"}}},
      {"m2", edit_set_duplicate_of{"m1"}},
      {"m2", edit_set_status{"archived"}},
      {"m3", edit_set_duplicate_of{"m1"}},
      {"m3", edit_set_status{"archived"}},
  };
  CHECK(a->edits == expected);
  CHECK(a->blast.records == 3);
  CHECK(a->blast.scopes == std::vector<std::string>{"user:7"});
  // no edit touches the primary's status
  for (const auto& e : a->edits)
    if (e.record_id == "m1") CHECK(op_of<edit_set_status>(e) == nullptr);
}

TEST_CASE("planner: no merge crosses scopes") {
  fixture fx;
  const auto plan = make_plan(fx.store, fx.rep, fx.options());
  CHECK(find_action(plan, action_types::merge_duplicates, "x1") == nullptr);
  CHECK(deferred_contains(plan, "refused merge across scopes: x1 x2 (scopes user:7, user:8)"));
  for (const auto& a : plan.actions)
    if (a.type == action_types::merge_duplicates) CHECK(a.blast.scopes.size() == 1);
}

TEST_CASE("planner: conflicts resolved by the rule chain, undecided and needs_human go to review") {
  fixture fx;
  const auto plan = make_plan(fx.store, fx.rep, fx.options());
  const auto* r = find_action(plan, action_types::resolve_conflict, "c1");
  REQUIRE(r != nullptr);
  CHECK(r->tier == 2);
  CHECK(r->automation == automation::confirm);
  CHECK(r->targets ==
        std::vector<std::string>{"c2", "c1"});  // winner first: c2 is 1.5 h later in UTC
  CHECK(r->edits == std::vector<record_edit>{{"c2", edit_add_supersedes{{"c1"}}},
                                             {"c1", edit_set_status{"archived"}}});
  CHECK(std::find(r->reasons.begin(), r->reasons.end(), "decided by newer_updated_at: c2 wins") !=
        r->reasons.end());

  const auto* u = find_action(plan, action_types::send_to_review, "c3");
  REQUIRE(u != nullptr);
  CHECK(u->tier == 3);
  CHECK(u->automation == automation::manual);
  CHECK(u->edits == std::vector<record_edit>{{"c3", edit_set_status{"pending_review"}},
                                             {"c4", edit_set_status{"pending_review"}}});
  CHECK(find_action(plan, action_types::resolve_conflict, "c3") == nullptr);

  const auto* h = find_action(plan, action_types::send_to_review, "c5");
  REQUIRE(h != nullptr);
  CHECK(find_action(plan, action_types::resolve_conflict, "c5") == nullptr);
  CHECK(std::find(h->reasons.begin(), h->reasons.end(), "needs a person (needs_human)") !=
        h->reasons.end());

  // a conflict naming a record that is not in the store is not planned
  CHECK(deferred_contains(plan, "conflict: record 'nope' not found"));

  // review without touching the records
  auto opt = fx.options();
  opt.review_sets_pending = false;
  const auto quiet = make_plan(fx.store, fx.rep, opt);
  const auto* q = find_action(quiet, action_types::send_to_review, "c3");
  REQUIRE(q != nullptr);
  CHECK(q->edits.empty());
  CHECK(q->blast.records == 0);
}

TEST_CASE("planner: a user rule chain changes the conflict outcome") {
  fixture fx;
  auto c1 = fx.store.extract(*fx.store.find("c1"));
  c1.metadata["pinned"] = true;
  fx.store.restore(*fx.store.find("c1"), c1);
  const auto plan = make_plan(fx.store, fx.rep, fx.options(),
                              prepend_rule(prefer_pinned{}, default_conflict_rules{}));
  const auto* r = find_action(plan, action_types::resolve_conflict, "c1");
  REQUIRE(r != nullptr);
  CHECK(r->targets == std::vector<std::string>{"c1", "c2"});
  // the pinned rule also decides c3/c4? no: neither is pinned, so they stay undecided
  CHECK(find_action(plan, action_types::send_to_review, "c3") != nullptr);
}

TEST_CASE("planner: stale records are down-weighted, never raised, never deleted") {
  fixture fx;
  auto plan = make_plan(fx.store, fx.rep, fx.options());
  const auto* s1 = find_action(plan, action_types::downweight, "s1");
  REQUIRE(s1 != nullptr);
  CHECK(s1->tier == 2);
  CHECK(s1->automation == automation::confirm);
  CHECK(s1->edits == std::vector<record_edit>{{"s1", edit_set_weight{0.125}}});
  // s2: stored 0.5 x curve 0.25 = evidence weight 0.125; the pure decay 0.25 is written
  const auto* s2 = find_action(plan, action_types::downweight, "s2");
  REQUIRE(s2 != nullptr);
  CHECK(s2->edits == std::vector<record_edit>{{"s2", edit_set_weight{0.25}}});
  // s3 is stored at 0.1 < 0.3: no action
  CHECK(find_action(plan, action_types::downweight, "s3") == nullptr);

  auto opt = fx.options();
  opt.stale_weight = stale_weight_mode::floor;
  opt.weight_floor = 0.05;
  plan = make_plan(fx.store, fx.rep, opt);
  CHECK(find_action(plan, action_types::downweight, "s3")->edits ==
        std::vector<record_edit>{{"s3", edit_set_weight{0.05}}});
  // floor above the decay: 0.2 > 0.125
  opt.stale_weight = stale_weight_mode::detector_weight;
  opt.weight_floor = 0.2;
  plan = make_plan(fx.store, fx.rep, opt);
  CHECK(find_action(plan, action_types::downweight, "s1")->edits ==
        std::vector<record_edit>{{"s1", edit_set_weight{0.2}}});
}

TEST_CASE("planner: tier 1 automatic fixes") {
  fixture fx;
  const auto plan = make_plan(fx.store, fx.rep, fx.options());
  const auto* t1 = find_action(plan, action_types::fill_metadata_defaults, "t1");
  REQUIRE(t1 != nullptr);
  CHECK(t1->tier == 1);
  CHECK(t1->automation == automation::automatic);
  CHECK(t1->edits ==
        std::vector<record_edit>{{"t1", edit_fill_metadata{"topic", std::string("general")}}});
  CHECK(deferred_contains(plan, "t1: no default configured for missing key 'lang'"));

  const auto* t2 = find_action(plan, action_types::set_status_pending_review, "t2");
  REQUIRE(t2 != nullptr);
  CHECK(t2->edits == std::vector<record_edit>{{"t2", edit_set_status{"pending_review"}}});

  const auto* t3 = find_action(plan, action_types::drop_dangling_links, "t3");
  REQUIRE(t3 != nullptr);
  CHECK(t3->edits == std::vector<record_edit>{
                         {"t3", edit_append_notes{{"dropped dangling link related_ids -> ghost"}}},
                         {"t3", edit_drop_links{{"ghost"}}}});

  const auto* t4 = find_action(plan, action_types::archive_merged, "t4");
  REQUIRE(t4 != nullptr);
  CHECK(t4->edits == std::vector<record_edit>{{"t4", edit_set_status{"archived"}}});

  // t5 carries a -08:00 offset: normalised; t6 is all UTC: a person must look
  const auto* t5 = find_action(plan, action_types::normalize_timestamps, "t5");
  REQUIRE(t5 != nullptr);
  CHECK(t5->edits == std::vector<record_edit>{{"t5", edit_normalize_timestamps{}}});
  CHECK(find_action(plan, action_types::normalize_timestamps, "t6") == nullptr);
  CHECK(deferred_contains(plan,
                          "timestamp_inconsistent t6 (updated_before_created): all timestamps are "
                          "UTC; needs a person"));

  CHECK(deferred_contains(plan, "no repair planned for finding kind 'user_kind'"));
}

TEST_CASE("planner: one deferred note per distinct text, in the order they came, counted") {
  // the same unplanned finding three times (e.g. one per window or detector pass), and another
  fixture fx;
  report r;
  for (int k = 0; k < 3; ++k) {
    finding f;
    f.kind = "user_kind";
    f.record_ids = {"m1"};
    r.findings.push_back(f);
  }
  finding g;
  g.kind = "other_kind";
  g.record_ids = {"m2"};
  r.findings.push_back(g);
  r.findings.push_back(r.findings.front());
  const auto plan = make_plan(fx.store, r, fx.options());
  CHECK(plan.deferred ==
        std::vector<std::string>{"no repair planned for finding kind 'user_kind': m1 (4 times)",
                                 "no repair planned for finding kind 'other_kind': m2"});
  // alarms without record ids, one per monitor window: one note, counted
  report w;
  for (int k = 0; k < 3; ++k) {
    finding f;
    f.kind = "empty_results";
    w.findings.push_back(f);
  }
  CHECK(
      make_plan(fx.store, w, fx.options()).deferred ==
      std::vector<std::string>{"empty_results: finding without record ids; not planned (3 times)"});
}

TEST_CASE(
    "planner: broken vectors are re-embedded in tier-3 batches, review kinds carry no edits") {
  fixture fx;
  const auto plan = make_plan(fx.store, fx.rep, fx.options());
  std::vector<const repair_action*> batches;
  for (const auto& a : plan.actions)
    if (a.type == action_types::reembed) batches.push_back(&a);
  // e1..e5 (e2 reported twice), batch size 2, sorted by id: {e1,e2} {e3,e4} {e5}
  REQUIRE(batches.size() == 3);
  CHECK(batches[0]->targets == std::vector<std::string>{"e1", "e2"});
  CHECK(batches[1]->targets == std::vector<std::string>{"e3", "e4"});
  CHECK(batches[2]->targets == std::vector<std::string>{"e5"});
  for (const auto* b : batches) {
    CHECK(b->tier == 3);
    CHECK(b->automation == automation::manual);
    CHECK(b->edits.size() == b->targets.size());
    for (const auto& e : b->edits) {
      const auto* r = op_of<edit_replace_embedding>(e);
      REQUIRE(r != nullptr);
      CHECK(r->embedding.empty());
      CHECK(r->version == "model-v2");
    }
  }
  CHECK(batches[0]->reasons[1] == "e2: embedding_non_finite, embedding_zero_norm");
  // one index rebuild follows the batches: tier 1, no record edits, every re-embedded record
  std::vector<const repair_action*> rebuilds;
  for (const auto& a : plan.actions)
    if (a.type == action_types::rebuild_index) rebuilds.push_back(&a);
  REQUIRE(rebuilds.size() == 1);
  CHECK(rebuilds[0]->tier == 1);
  CHECK(rebuilds[0]->automation == automation::automatic);
  CHECK(rebuilds[0]->priority == 5);
  CHECK(rebuilds[0]->edits.empty());
  CHECK(rebuilds[0]->targets == std::vector<std::string>{"e1", "e2", "e3", "e4", "e5"});

  const auto* j = find_action(plan, action_types::send_to_review, "j1");
  REQUIRE(j != nullptr);
  CHECK(j->tier == 3);
  CHECK(j->edits.empty());
}

TEST_CASE(
    "planner: invariants: nothing deleted, statuses only archived or pending_review, tiers and "
    "order") {
  fixture fx;
  const auto plan = make_plan(fx.store, fx.rep, fx.options());
  REQUIRE(!plan.actions.empty());
  CHECK_FALSE(plan.suspended);
  std::set<std::string> keys;
  for (std::size_t i = 0; i < plan.actions.size(); ++i) {
    const auto& a = plan.actions[i];
    CHECK((a.tier >= 1 && a.tier <= 3));
    CHECK(a.automation == (a.tier == 1   ? automation::automatic
                           : a.tier == 2 ? automation::confirm
                                         : automation::manual));
    CHECK(a.idempotency_key == compute_idempotency_key(a));
    CHECK(a.idempotency_key.size() == 16);
    CHECK(keys.insert(a.idempotency_key).second);
    if (i > 0) CHECK(plan.actions[i - 1].priority >= a.priority);
    for (const auto& e : a.edits) {
      if (const auto* s = op_of<edit_set_status>(e))
        CHECK((s->status == "archived" || s->status == "pending_review"));
      if (const auto* w = op_of<edit_set_weight>(e)) CHECK((w->weight >= 0.0 && w->weight <= 1.0));
      // the target of every edit exists in the store
      CHECK(fx.store.find(e.record_id).has_value());
    }
  }
  // execution order: tier 1 first, then conflicts, merges, down-weights, tier 3
  CHECK(plan.actions.front().tier == 1);
  CHECK(plan.actions.back().tier == 3);
  auto first_of = [&](std::string_view type) {
    for (std::size_t i = 0; i < plan.actions.size(); ++i)
      if (plan.actions[i].type == type) return i;
    return plan.actions.size();
  };
  CHECK(first_of(action_types::resolve_conflict) < first_of(action_types::merge_duplicates));
  CHECK(first_of(action_types::merge_duplicates) < first_of(action_types::downweight));
  CHECK(first_of(action_types::downweight) < first_of(action_types::reembed));
  CHECK(first_of(action_types::reembed) < first_of(action_types::rebuild_index));
  CHECK(first_of(action_types::rebuild_index) < first_of(action_types::send_to_review));
  // 6 tier-1 actions (t1..t5 minus t6) + c1 + m1 + s1,s2 + 3 reembed + 1 rebuild_index + review
  // c3,c5,j1
  CHECK(plan.actions.size() == 5 + 1 + 1 + 2 + 3 + 1 + 3);
  const auto b = plan_blast_radius(plan);
  // edited: t1..t5 (5), c1 c2, m1 m2 m3, s1 s2, e1..e5, c3 c4 c5 c6 = 5+2+3+2+5+4 = 21
  CHECK(b.records == 21);
  CHECK(b.scopes == std::vector<std::string>{"user:7"});
}

TEST_CASE("planner: deterministic, and an idempotency key hashes type, targets and edits") {
  fixture fx;
  const auto p1 = make_plan(fx.store, fx.rep, fx.options());
  const auto p2 = make_plan(fx.store, fx.rep, fx.options());
  CHECK(plan_to_json(p1).dump() == plan_to_json(p2).dump());
  // findings in another order give the same actions
  report shuffled = fx.rep;
  std::reverse(shuffled.findings.begin(), shuffled.findings.end());
  const auto p3 = make_plan(fx.store, shuffled, fx.options());
  CHECK(p3.actions == p1.actions);
  REQUIRE(p3.actions.size() == p1.actions.size());
  for (std::size_t i = 0; i < p1.actions.size(); ++i)
    CHECK(p3.actions[i].idempotency_key == p1.actions[i].idempotency_key);

  // FNV-1a 64 test vectors (Fowler-Noll-Vo reference values)
  CHECK(fnv1a_64("") == 0xcbf29ce484222325ULL);
  CHECK(fnv1a_64("a") == 0xaf63dc4c8601ec8cULL);
  CHECK(fnv1a_64("foobar") == 0x85944171f73967e8ULL);
  repair_action a;
  a.type = "downweight";
  a.targets = {"s1"};
  a.edits = {{"s1", edit_set_weight{0.125}}};
  const auto k = compute_idempotency_key(a);
  a.priority = 7;
  a.reasons = {"anything"};
  CHECK(compute_idempotency_key(a) == k);  // reasons and priority do not enter
  a.edits = {{"s1", edit_set_weight{0.25}}};
  CHECK(compute_idempotency_key(a) != k);
  a.edits = {{"s1", edit_set_weight{0.125}}};
  a.targets = {"s2"};
  CHECK(compute_idempotency_key(a) != k);
}

TEST_CASE(
    "planner: a burst of 10,000 findings respects max_records_per_run, the blast radius suspends") {
  std::vector<memory_record> rs;
  report rep;
  for (int i = 0; i < 10000; ++i) {
    char id[16];
    std::snprintf(id, sizeof id, "s%05d", i);
    rs.push_back(rec(id, "note"));
    rep.findings.push_back(
        make_finding(finding_kinds::stale, {id}, "staleness").with("curve_weight", 0.1));
  }
  const auto store = memory_store<memory_record>::from_records(std::move(rs));
  planner_options opt;
  opt.max_records_per_run = 1000;
  opt.blast_radius_threshold = 5000;
  auto plan = make_plan(store, rep, opt);
  REQUIRE(plan.actions.size() == 1000);
  CHECK_FALSE(plan.suspended);
  CHECK(plan_blast_radius(plan).records == 1000);
  // the first 1000 ids in order are kept: s00000 .. s00999
  CHECK(plan.actions.front().targets[0] == "s00000");
  CHECK(plan.actions.back().targets[0] == "s00999");
  // 100 listed notes + 1 summary
  CHECK(plan.deferred.size() == 101);
  CHECK(plan.deferred.back() ==
        "max_records_per_run 1000: 9000 actions deferred in total (downweight 9000)");

  opt.blast_radius_threshold = 500;
  plan = make_plan(store, rep, opt);
  CHECK(plan.suspended);
  CHECK(plan.suspend_reason ==
        "blast radius 1000 records in 1 scopes exceeds the threshold of 500 records; approve the "
        "plan to run it");
  CHECK(plan.actions.size() == 1000);  // the plan is kept for approval, not emptied
}

TEST_CASE("planner: end to end from the real duplicate and structural detectors") {
  auto a1 = rec("a1", "I like green tea.", "user:7", "user_declared");
  a1.metadata["topic"] = std::string("drinks");
  auto a2 = rec("a2", "i like green tea");
  auto b1 = rec("b1", "I like green tea.", "user:8");
  auto d1 = rec("d1", "unrelated", "user:7");
  d1.links.related_ids = {"ghost"};
  // unit vectors without trailing zeros (a zero tail reads as zero-padding); cos(a, d) = 0.152
  a1.embedding = {0.48f, 0.6f, 0.64f};
  a2.embedding = {0.48f, 0.6f, 0.64f};
  b1.embedding = {0.48f, 0.6f, 0.64f};
  d1.embedding = {0.0f, -0.6f, 0.8f};
  const auto store = memory_store<memory_record>::from_records({a1, a2, b1, d1});
  const pipeline p{structural_detector{}, duplicate_detector<>{}};
  detect_options dopt;
  dopt.now = utc_time{std::chrono::sys_days{std::chrono::year{2024} / 1 / 2}};
  const report rep = p.run(store, dopt);
  REQUIRE(rep.count(finding_kinds::exact_duplicate) == 1);
  REQUIRE(rep.count(finding_kinds::dangling_reference) == 1);
  const auto plan = make_plan(store, rep, planner_options{});
  CHECK(plan.actions.size() == 3);  // merge, drop dangling link, review of the cross-scope copy
  // a1 is the primary (longer text, metadata, user_declared source); a2 has the same normalised
  // text and no metadata, so nothing is noted
  const auto* m = find_action(plan, action_types::merge_duplicates, "a1");
  REQUIRE(m != nullptr);
  CHECK(m->targets == std::vector<std::string>{"a1", "a2"});
  CHECK(m->edits == std::vector<record_edit>{{"a2", edit_set_duplicate_of{"a1"}},
                                             {"a2", edit_set_status{"archived"}}});
  // the copy in user:8 is a leak for a person, never merged or archived
  for (const auto& a : plan.actions)
    for (const auto& e : a.edits) CHECK(e.record_id != "b1");
  CHECK(rep.count(finding_kinds::cross_scope_duplicate) == 1);
  CHECK(find_action(plan, action_types::send_to_review, "b1") != nullptr);
  const auto* d = find_action(plan, action_types::drop_dangling_links, "d1");
  REQUIRE(d != nullptr);
  CHECK(d->edits == std::vector<record_edit>{
                        {"d1", edit_append_notes{{"dropped dangling link related_ids -> ghost"}}},
                        {"d1", edit_drop_links{{"ghost"}}}});
}

TEST_CASE("make_plan_file: the bytes write_plan(make_plan) writes, plain and gzip") {
  fixture fx;
  const auto dir = std::filesystem::temp_directory_path() /
                   ("memhealth-plan-stream-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  detection_provenance prov;
  prov.now = ts("2024-07-15T00:00:00Z").instant;
  for (const std::size_t budget : {std::size_t{1000}, std::size_t{5}}) {
    CAPTURE(budget);
    planner_options o = fx.options();
    o.max_records_per_run = budget;  // 5: the budget leaves actions out and notes them
    o.blast_radius_threshold = 3;    // and suspends the plan
    repair_plan whole = make_plan(fx.store, fx.rep, o);
    whole.detection = prov;
    write_plan((dir / "a.jsonl").string(), whole);
    const auto feed = [&](const auto& add) {
      for (const finding& f : fx.rep.findings) add(f);
    };
    const plan_file_summary sum =
        make_plan_file(fx.store, feed, o, (dir / "b.jsonl").string(), prov);
    CHECK(test_slurp(dir / "b.jsonl") == test_slurp(dir / "a.jsonl"));
    CHECK(sum.header == header_of(whole));
    CHECK(sum.blast_records == plan_blast_radius(whole).records);
    std::size_t counted = 0;
    for (const auto& [k, n] : sum.by_tier_and_type) counted += n;
    CHECK(counted == whole.actions.size());
    // .gz: gzip (magic 1f 8b), which zlib's own gzread turns back into the same lines
    make_plan_file(fx.store, feed, o, (dir / "c.jsonl.gz").string(), prov);
    const std::string gz = test_slurp(dir / "c.jsonl.gz");
    REQUIRE(gz.size() > 2);
    CHECK(static_cast<unsigned char>(gz[0]) == 0x1f);
    CHECK(static_cast<unsigned char>(gz[1]) == 0x8b);
    gzFile g = gzopen((dir / "c.jsonl.gz").c_str(), "rb");
    REQUIRE(g != nullptr);
    std::string plain;
    char buf[4096];
    for (int n; (n = gzread(g, buf, sizeof buf)) > 0;)
      plain.append(buf, static_cast<std::size_t>(n));
    gzclose(g);
    CHECK(plain == test_slurp(dir / "a.jsonl"));
    CHECK(read_plan((dir / "c.jsonl.gz").string()) == whole);
  }
  // damaged compressed data is an error(parse), not a shorter plan
  std::string gz = test_slurp(dir / "c.jsonl.gz");
  gz[gz.size() / 2] = static_cast<char>(gz[gz.size() / 2] ^ 0x55);
  CHECK_THROWS_AS(parse_plan(gz), error);
  std::filesystem::remove_all(dir);
}

TEST_CASE(
    "make_plan_file: findings of one record and tier-1 type that come apart make one action") {
  // d1 has two dangling links, reported by two findings with a finding about d2 between them:
  // one drop_dangling_links action for d1, its reasons in finding order, both links dropped
  std::vector<memory_record> rs{rec("d1", "one"), rec("d2", "two")};
  const auto store = memory_store<memory_record>::from_records(std::move(rs));
  report r;
  for (const auto& [id, target] :
       std::vector<std::pair<std::string, std::string>>{{"d1", "g1"}, {"d2", "g3"}, {"d1", "g2"}}) {
    finding f = make_finding(finding_kinds::dangling_reference, {id}, "structural");
    f.with(evidence_keys::field, std::string("related_ids"));
    f.with(evidence_keys::target, target);
    r.findings.push_back(f);
  }
  const auto plan = make_plan(store, r, planner_options{});
  REQUIRE(plan.actions.size() == 2);
  const auto* d1 = find_action(plan, action_types::drop_dangling_links, "d1");
  REQUIRE(d1 != nullptr);
  CHECK(d1->reasons == std::vector<std::string>{"dangling_reference: d1 (structural) -> g1",
                                                "dangling_reference: d1 (structural) -> g2"});
  CHECK(d1->edits == std::vector<record_edit>{
                         {"d1", edit_append_notes{{"dropped dangling link related_ids -> g1"}}},
                         {"d1", edit_drop_links{{"g1"}}},
                         {"d1", edit_append_notes{{"dropped dangling link related_ids -> g2"}}},
                         {"d1", edit_drop_links{{"g2"}}}});
  CHECK(d1->blast.records == 1);
  CHECK(d1->idempotency_key == compute_idempotency_key(*d1));
  // the file form makes the same action
  const auto dir = std::filesystem::temp_directory_path() /
                   ("memhealth-plan-tier1-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  make_plan_file(
      store,
      [&](const auto& add) {
        for (const auto& f : r.findings) add(f);
      },
      planner_options{}, (dir / "p.jsonl").string());
  CHECK(read_plan((dir / "p.jsonl").string()) == plan);
  std::filesystem::remove_all(dir);
}

TEST_CASE("pipeline::run_each: the findings of run, in order, handed over part by part") {
  // 40,000 records (blocks of 16,384, 16,384 and 7,232 in the structural scan) on 2 threads;
  // every 7th lacks its scope (missing_scope: 0, 7, ..., 39998: 5,715), every 11th has an illegal
  // status (0, 11, ..., 39996: 3,637); none has an embedding (embedding_missing for each)
  std::vector<memory_record> rs;
  rs.reserve(40000);
  for (int i = 0; i < 40000; ++i) {
    memory_record m = rec("r" + std::to_string(i), "text " + std::to_string(i));
    if (i % 7 == 0) m.scope.clear();
    if (i % 11 == 0) m.status = "bogus";
    rs.push_back(std::move(m));
  }
  const auto store = memory_store<memory_record>::from_records(std::move(rs));
  structural_detector sd;
  sd.threads = 2;
  sd.require_updated_at = false;
  const pipeline p{sd};
  detect_options d;
  d.now = ts("2024-07-15T00:00:00Z").instant;
  const report whole = p.run(store, d);
  std::vector<std::string> streamed;
  std::size_t parts = 0;
  (void)p.run_each(
      store,
      [&](std::vector<finding>& part) {
        ++parts;
        for (const auto& f : part) streamed.push_back(f.kind + ":" + f.record_ids.front());
      },
      d);
  CHECK(whole.count(finding_kinds::missing_scope) == 5715);
  CHECK(whole.count(finding_kinds::illegal_status) == 3637);
  REQUIRE(streamed.size() == whole.findings.size());
  for (std::size_t k = 0; k < streamed.size(); ++k)
    CHECK(streamed[k] == whole.findings[k].kind + ":" + whole.findings[k].record_ids.front());
  CHECK(parts == 3);  // one part per block of the scan
}

// ---------------------------------------------------------------- guardrails

TEST_CASE("guardrails: token bucket, capacity 10 and refill 5/s") {
  const utc_time t0{std::chrono::milliseconds(1'700'000'000'000)};
  token_bucket b(10, 5, t0);
  int passed = 0;
  for (int i = 0; i < 20; ++i) passed += b.try_acquire(t0);
  CHECK(passed == 10);
  passed = 0;
  for (int i = 0; i < 20; ++i) passed += b.try_acquire(t0 + 1s);
  CHECK(passed == 5);
  // 200 ms later: 5/s x 0.2 s = 1 token
  CHECK(b.try_acquire(t0 + 1200ms));
  CHECK_FALSE(b.try_acquire(t0 + 1200ms));
  // time going backwards adds nothing
  CHECK_FALSE(b.try_acquire(t0));
  // a long pause refills only to capacity
  CHECK(b.available(t0 + 3600s) == doctest::Approx(10.0));
  CHECK_THROWS_AS(token_bucket(0, 1), error);
}

TEST_CASE("guardrails: repair queue respects priority, the concurrency cap and the rate limit") {
  const utc_time t0{std::chrono::milliseconds(0)};
  auto act = [](std::string key, int priority) {
    repair_action a;
    a.idempotency_key = std::move(key);
    a.priority = priority;
    return a;
  };
  repair_queue q({100, 100, 2, {}}, t0);
  CHECK(q.push(act("low", 0)));
  CHECK(q.push(act("t1a", 400)));
  CHECK(q.push(act("down", 100)));
  CHECK(q.push(act("t1b", 400)));
  CHECK(q.push(act("merge", 200)));
  CHECK_FALSE(q.push(act("merge", 200)));  // same key: not queued twice
  CHECK(q.pop_ready(t0)->idempotency_key == "t1a");
  CHECK(q.pop_ready(t0)->idempotency_key == "t1b");
  CHECK_FALSE(q.pop_ready(t0).has_value());  // cap 2 reached
  CHECK(q.in_flight() == 2);
  q.complete("t1a");
  CHECK(q.pop_ready(t0)->idempotency_key == "merge");
  CHECK_FALSE(q.pop_ready(t0).has_value());
  q.complete("t1b");
  q.complete("merge");
  CHECK(q.pop_ready(t0)->idempotency_key == "down");
  CHECK(q.pop_ready(t0)->idempotency_key == "low");
  CHECK(q.queued() == 0);
  CHECK_THROWS_AS(q.complete("unknown"), error);

  // rate limit inside the queue: burst 3, 1/s, cap 10
  repair_queue r({3, 1, 10, {}}, t0);
  for (int i = 0; i < 6; ++i) r.push(act("k" + std::to_string(i), 0));
  int started = 0;
  while (r.pop_ready(t0)) ++started;
  CHECK(started == 3);
  CHECK(r.pop_ready(t0 + 1s).has_value());
  CHECK_FALSE(r.pop_ready(t0 + 1s).has_value());
  CHECK(r.in_flight() == 4);
}

TEST_CASE("guardrails: at most 3 retries, then the manual queue") {
  const utc_time t0{};
  repair_action a;
  a.idempotency_key = "k";
  repair_queue q({100, 100, 1, retry_policy{3}}, t0);
  q.push(a);
  std::vector<bool> requeued;
  for (int run = 0; run < 4; ++run) {
    REQUIRE(q.pop_ready(t0).has_value());
    requeued.push_back(q.fail("k"));
  }
  CHECK(requeued == std::vector<bool>{true, true, true, false});  // 1 run + 3 retries
  CHECK(q.manual().size() == 1);
  CHECK(q.queued() == 0);
  CHECK_FALSE(q.pop_ready(t0).has_value());
  CHECK(q.push(a));  // a person may queue it again
}

TEST_CASE("guardrails: runs per UTC day") {
  run_budget budget{2, {}};
  const utc_time day = utc_time{std::chrono::sys_days{std::chrono::year{2024} / 3 / 1}};
  CHECK(run_budget::day_of(day) == 19783);  // days from 1970-01-01 to 2024-03-01
  CHECK(budget.allow(day + 10h));
  CHECK(budget.remaining(day + 10h) == 1);
  CHECK(budget.allow(day + 11h));
  CHECK_FALSE(budget.allow(day + 23h + 59min));
  CHECK(budget.state == run_budget_state{19783, 2});
  CHECK(budget.allow(day + 24h));  // next UTC day
  CHECK(budget.state == run_budget_state{19784, 1});
  CHECK_FALSE(budget.allow(day + 10h));  // clock moved back a day
  run_budget restored{2, budget.state};  // persisted state carries over
  CHECK(restored.allow(day + 25h));
  CHECK_FALSE(restored.allow(day + 26h));
}

TEST_CASE("guardrails: loop detector reports a record changed back to an earlier state") {
  loop_detector loops;
  CHECK(loops.begin_run() == 1);
  CHECK_FALSE(loops.observe("r", 0xA, 0xB).has_value());
  CHECK_FALSE(loops.observe("q", 0xA, 0xB).has_value());
  CHECK(loops.begin_run() == 2);
  const auto loop = loops.observe("r", 0xB, 0xA);
  REQUIRE(loop.has_value());
  CHECK(loop->record_id == "r");
  CHECK(loop->state_hash == 0xA);
  CHECK(loop->first_seen_run == 1);
  CHECK(loop->run == 2);
  // q goes on to new states: no loop until it comes back
  CHECK_FALSE(loops.observe("q", 0xB, 0xC).has_value());
  CHECK_FALSE(loops.observe("q", 0xC, 0xC).has_value());  // no change
  CHECK(loops.observe("q", 0xC, 0xA).has_value());
  loops.forget("q");
  CHECK_FALSE(loops.observe("q", 0xC, 0xA).has_value());
}

// ---------------------------------------------------------------- plan JSON

TEST_CASE("plan JSON: exact round trip, every edit and metadata type") {
  fixture fx;
  auto plan = make_plan(fx.store, fx.rep, fx.options());
  repair_action extra;
  extra.type = "user_action";
  extra.tier = 3;
  extra.automation = automation::manual;
  extra.targets = {"z"};
  extra.edits = {
      {"z", edit_fill_metadata{"n", std::monostate{}}},
      {"z", edit_fill_metadata{"b", true}},
      {"z", edit_fill_metadata{"i", std::int64_t{-9007199254740993}}},
      {"z", edit_fill_metadata{"d", 0.1}},
      {"z", edit_fill_metadata{"d2", 2.0}},
      {"z", edit_fill_metadata{"s", std::string("text \"quoted\" \u00e9")}},
      {"z", edit_fill_metadata{"j", raw_json{"[1,{\"a\":2}]"}}},
      {"z", edit_set_weight{1.0 / 3.0}},
      {"z", edit_set_weight{std::numeric_limits<double>::infinity()}},
      {"z", edit_replace_embedding{{0.1f, -1e-38f, 3.4028235e38f, 1.0f / 3.0f}, "v2"}},
      {"z", edit_drop_links{{"a", "b"}}},
      {"z", edit_add_supersedes{{"c"}}},
      {"z", edit_set_duplicate_of{""}},
      {"z", edit_set_content{"User moved to \"Lyon\" \u00e9\n(2024)"}},
  };
  extra.blast = {1, {"user:9"}};
  extra.priority = -5;
  extra.idempotency_key = compute_idempotency_key(extra);
  plan.actions.push_back(extra);
  plan.suspended = true;
  plan.suspend_reason = "because";

  const auto j = plan_to_json(plan);
  CHECK(j["schema_version"] == 1);
  const auto back = plan_from_json(j);
  CHECK(back == plan);
  // through text as well
  const auto again = plan_from_json(nlohmann::json::parse(j.dump(2)));
  CHECK(again == plan);
  CHECK(plan_to_json(again).dump() == j.dump());
  // floats are bit-exact
  const auto& emb = std::get<edit_replace_embedding>(again.actions.back().edits[9].op).embedding;
  CHECK(emb[3] == 1.0f / 3.0f);
  CHECK(std::get<edit_set_weight>(again.actions.back().edits[7].op).weight == 1.0 / 3.0);
  // a person's new text: its own op, the text exact, and part of the idempotency key
  CHECK(j["actions"].back()["edits"][13]["op"] == "set_content");
  CHECK(j["actions"].back()["edits"][13]["content"] == "User moved to \"Lyon\" \u00e9\n(2024)");
  CHECK(std::get<edit_set_content>(again.actions.back().edits[13].op).content ==
        "User moved to \"Lyon\" \u00e9\n(2024)");
  {
    repair_action other = extra;
    other.edits.back() = {"z", edit_set_content{"User moved to Lyon."}};
    CHECK(compute_idempotency_key(other) != extra.idempotency_key);
    nlohmann::json bad = j;
    bad["actions"].back()["edits"][13].erase("content");
    CHECK_THROWS_WITH_AS(plan_from_json(bad), doctest::Contains("/edits/13/content: missing"),
                         error);
  }

  // files
  const auto dir = std::filesystem::temp_directory_path() / "memhealth_repair_plan_test";
  std::filesystem::create_directories(dir);
  const auto path = (dir / "plan.json").string();
  write_plan(path, plan);
  CHECK(read_plan(path) == plan);
  CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
  std::filesystem::remove_all(dir);
  CHECK_THROWS_AS(read_plan((dir / "missing.json").string()), error);

  // The file is JSON Lines: a header announcing 4 actions, then one line per action.
  const std::string text = plan_to_text(plan);
  CHECK(std::count(text.begin(), text.end(), '\n') == 1 + static_cast<long>(plan.actions.size()));
  const auto header = nlohmann::json::parse(text.substr(0, text.find('\n')));
  CHECK(header["schema_version"] == 2);
  CHECK(header["actions"] == plan.actions.size());
  CHECK(header["suspended"] == true);
  CHECK(parse_plan(text) == plan);
  {  // doubles read back as the same doubles, the sign of zero included
    repair_plan z;
    repair_action za;
    za.edits.push_back({"m1", edit_set_weight{-0.0}});
    za.edits.push_back({"m1", edit_set_weight{1.0}});
    za.edits.push_back({"m1", edit_fill_metadata{"k", 2.0}});
    z.actions.push_back(za);
    const repair_plan back = parse_plan(plan_to_text(z));
    CHECK(std::signbit(std::get<edit_set_weight>(back.actions[0].edits[0].op).weight));
    CHECK(std::get<edit_fill_metadata>(back.actions[0].edits[2].op).value == metadata_value{2.0});
    CHECK(plan_to_text(back) == plan_to_text(z));
  }
  // every action line is the action object of the document form, minified
  std::size_t at = text.find('\n') + 1;
  for (std::size_t i = 0; i < plan.actions.size(); ++i) {
    const std::size_t end = text.find('\n', at);
    CHECK(nlohmann::json::parse(text.substr(at, end - at)) == j["actions"][i]);
    at = end + 1;
  }
  // the 0.1 document form is still read, indented or on one line
  CHECK(parse_plan(j.dump(2)) == plan);
  CHECK(parse_plan(j.dump()) == plan);
  // reading one action at a time
  plan_reader r(text, "<t>");
  CHECK(r.header().actions == plan.actions.size());
  CHECK(r.header().schema_version == 2);
  repair_action a;
  std::size_t n = 0;
  while (r.next(a)) CHECK(a == plan.actions[n++]);
  CHECK(n == plan.actions.size());
}

TEST_CASE("plan file: a cut, padded or damaged file is an error naming the line") {
  fixture fx;
  const auto plan = make_plan(fx.store, fx.rep, fx.options());
  REQUIRE(plan.actions.size() >= 3);
  const std::string text = plan_to_text(plan);
  auto message = [](const std::string& t) -> std::string {
    try {
      (void)parse_plan(t, "p.jsonl");
    } catch (const error& e) {
      return std::string(e.code() == error_code::parse ? "parse: " : "other: ") + e.what();
    }
    return "no error";
  };
  // cut after the second action line
  std::size_t cut = 0;
  for (int i = 0; i < 3; ++i) cut = text.find('\n', cut) + 1;
  CHECK(message(text.substr(0, cut))
            .find("'p.jsonl' ends after 2 of the " + std::to_string(plan.actions.size()) +
                  " actions") != std::string::npos);
  CHECK(message(text + text.substr(text.find('\n') + 1))
            .find("has more lines than the " + std::to_string(plan.actions.size()) + " actions") !=
        std::string::npos);
  // a bad op on the third line (the second action): line 3, pointer /actions/1/...
  std::string bad = text;
  const std::size_t line3 = bad.find('\n', bad.find('\n') + 1) + 1;
  const std::size_t op = bad.find("\"op\":\"", line3);
  bad.replace(op, bad.find('"', op + 6) - op + 1, "\"op\":\"delete\"");
  CHECK(message(bad) ==
        "parse: parse: read_plan: 'p.jsonl' line 3: plan JSON: /actions/1/edits/0/op: "
        "unknown edit op 'delete'");
  CHECK(message(text.substr(0, line3) + "{not json\n").find("line 3: not JSON") !=
        std::string::npos);
  CHECK(message("").find("is empty") != std::string::npos);
  // a header of another version
  std::string v3 = text;
  v3.replace(v3.find("\"schema_version\":2"), 18, "\"schema_version\":3");
  try {
    (void)parse_plan(v3);
    FAIL("expected error(schema)");
  } catch (const error& e) {
    CHECK(e.code() == error_code::schema);
  }
  // the stream writer refuses a generator that does not give the header's count
  const auto dir = std::filesystem::temp_directory_path() / "memhealth_plan_file_test";
  std::filesystem::create_directories(dir);
  plan_header h = header_of(plan);
  ++h.actions;
  CHECK_THROWS_AS(write_plan_stream((dir / "p.jsonl").string(), h,
                                    [&](const auto& emit) {
                                      for (const auto& a : plan.actions) emit(a);
                                    }),
                  error);
  CHECK_FALSE(std::filesystem::exists(dir / "p.jsonl"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("plan JSON: errors name the bad field") {
  fixture fx;
  const auto plan = make_plan(fx.store, fx.rep, fx.options());
  auto code_and_message = [](const nlohmann::json& j) -> std::pair<error_code, std::string> {
    try {
      (void)plan_from_json(j);
    } catch (const error& e) {
      return {e.code(), e.what()};
    }
    return {error_code::io, "no error"};
  };
  auto j = plan_to_json(plan);
  j["actions"][0]["edits"][0]["op"] = "delete";
  auto [c1, m1] = code_and_message(j);
  CHECK(c1 == error_code::parse);
  CHECK(m1 == "parse: plan JSON: /actions/0/edits/0/op: unknown edit op 'delete'");

  j = plan_to_json(plan);
  j["actions"][1].erase("tier");
  auto [c2, m2] = code_and_message(j);
  CHECK(c2 == error_code::parse);
  CHECK(m2 == "parse: plan JSON: /actions/1/tier: missing");

  j = plan_to_json(plan);
  j["actions"][2]["automation"] = "sometimes";
  CHECK(code_and_message(j).second ==
        "parse: plan JSON: /actions/2/automation: expected \"auto\", \"confirm\" or \"manual\"");

  j = plan_to_json(plan);
  j["schema_version"] = 2;
  CHECK(code_and_message(j).first == error_code::schema);

  CHECK(code_and_message(nlohmann::json::array()).second ==
        "parse: plan JSON: /: expected an object");
}

TEST_CASE("vocabulary: every finding kind has one planner table row, and the names are unique") {
  // 29 kinds in finding_kinds (17 structural, 7 semantic, 4 content hygiene, check_skipped), one
  // row each, same order.
  REQUIRE(kind_plan_table.size() == all_finding_kinds.size());
  for (std::size_t i = 0; i < all_finding_kinds.size(); ++i) {
    CAPTURE(all_finding_kinds[i]);
    CHECK(kind_plan_table[i].kind == all_finding_kinds[i]);
    CHECK(find_kind_plan(all_finding_kinds[i]) == &kind_plan_table[i]);
  }
  CHECK(find_kind_plan("no_such_kind") == nullptr);
  const std::set<std::string_view> kinds(all_finding_kinds.begin(), all_finding_kinds.end());
  CHECK(kinds.size() == 29);
  const std::set<std::string_view> keys(all_evidence_keys.begin(), all_evidence_keys.end());
  CHECK(keys.size() == 14);
  const std::set<std::string_view> diffs(all_diff_kinds.begin(), all_diff_kinds.end());
  CHECK(diffs.size() == 4);
  for (auto k : all_diff_kinds) CHECK(!kinds.count(k));  // no diff kind is also a finding kind
  // The file comment's table: tier 1 auto, tier 2 confirm, tier 3 manual; check_skipped plans
  // nothing.
  for (const auto& e : kind_plan_table) {
    CAPTURE(e.kind);
    if (e.step == plan_step::skip) {
      CHECK(e.action.empty());
      continue;
    }
    CHECK(!e.action.empty());
    const automation want = e.tier == 1   ? automation::automatic
                            : e.tier == 2 ? automation::confirm
                                          : automation::manual;
    CHECK(e.automation == want);
  }
  CHECK(find_kind_plan(finding_kinds::stale)->action == action_types::downweight);
  CHECK(find_kind_plan(finding_kinds::stale)->priority == 100);
  CHECK(find_kind_plan(finding_kinds::junk_content)->action == action_types::send_to_review);
  CHECK(find_kind_plan(finding_kinds::embedding_zero_padded)->tier == 3);
  CHECK(find_kind_plan(finding_kinds::dangling_reference)->priority == 400);
  // a secret is quarantined for a person, never handled automatically
  CHECK(find_kind_plan(finding_kinds::secret_in_content)->step == plan_step::quarantine);
  CHECK(find_kind_plan(finding_kinds::secret_in_content)->tier == 3);
}

// Found by fuzz/fuzz_plan.cpp (libFuzzer; the exact input "2.8e444"): nlohmann's parser throws
// json::out_of_range (406, number overflow), not parse_error, for a number beyond double; it
// escaped parse_plan / read_plan as a foreign exception. Now error(parse), like any text that is
// not JSON.
TEST_CASE("vocabulary: the retrieval alarms the planner repairs, and the ones it only notes") {
  // 8 retrieval kinds; 5 have a row (ghosts, latency, similarity, scope leak, query model)
  const std::set<std::string_view> rk(all_retrieval_finding_kinds.begin(),
                                      all_retrieval_finding_kinds.end());
  CHECK(rk.size() == 8);
  for (auto k : all_finding_kinds) CHECK(!rk.count(k));  // no store-check kind among them
  std::size_t rows = 0;
  for (auto k : all_retrieval_finding_kinds) rows += find_kind_plan(k) != nullptr;
  CHECK(rows == 5);
  for (const auto& e : retrieval_plan_table) {
    CAPTURE(e.kind);
    CHECK(rk.count(e.kind));
    CHECK(find_kind_plan(e.kind) == &e);
    CHECK(e.automation == (e.tier == 1 ? automation::automatic : automation::manual));
  }
  CHECK(find_kind_plan(finding_kinds::ghost_result)->action == action_types::clean_index);
  CHECK(find_kind_plan(finding_kinds::latency_regression)->action ==
        action_types::check_rebuild_index);
  CHECK(find_kind_plan(finding_kinds::similarity_drop)->action ==
        action_types::check_rebuild_index);
  CHECK(find_kind_plan(finding_kinds::scope_leak)->tier == 3);  // never automatic
  CHECK(find_kind_plan(finding_kinds::query_version_mismatch)->action ==
        action_types::start_migration);
  CHECK(find_kind_plan(finding_kinds::duplicate_share_high) == nullptr);
  CHECK(is_index_action(action_types::rebuild_index));
  CHECK(is_index_action(action_types::clean_index));
  CHECK(is_index_action(action_types::check_rebuild_index));
  CHECK_FALSE(is_index_action(action_types::start_migration));
}

TEST_CASE("parse_plan: fuzz regression: a number beyond double is error(parse)") {
  for (const char* text : {"2.8e444", R"({"schema_version": 1, "actions": [], "x": -1e999})"}) {
    try {
      (void)memhealth::parse_plan(text);
      FAIL("expected memhealth::error");
    } catch (const memhealth::error& e) {
      CHECK(e.code() == memhealth::error_code::parse);
      INFO(e.what());
      CHECK(std::string(e.what()).find("is not a plan file (not JSON: ") != std::string::npos);
    }
  }
  const memhealth::repair_plan p = memhealth::parse_plan(
      R"({"schema_version": 1, "suspended": false, "suspend_reason": "", "deferred": [], "actions": []})");
  CHECK(p.actions.empty());
}
}  // namespace repair_plan_test
