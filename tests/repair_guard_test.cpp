// Tests of the executor's guardrails (priority order, token-bucket rate limit with a fake clock,
// concurrency cap, runs-per-day ledger), WAL compaction, index rebuild and re-embedding tags, and
// the repair history's hold on an action proposed a third time over the same before-images.
// Every expected number is worked out by hand in the comment next to it.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <memhealth/detect/finding.hpp>
#include <memhealth/io/jsonl.hpp>
#include <memhealth/repair/executor.hpp>
#include <memhealth/repair/guardrails.hpp>
#include <memhealth/repair/index_policy.hpp>
#include <memhealth/repair/plan_file.hpp>
#include <memhealth/repair/plan_json.hpp>
#include <memhealth/repair/planner.hpp>
#include <memhealth/repair/repair_history.hpp>
#include <memhealth/repair/rollback.hpp>
#include <memhealth/repair/run_ledger.hpp>
#include <memhealth/repair/store_identity.hpp>
#include <memhealth/repair/wal.hpp>
#include <memhealth/repair/wal_compact.hpp>
#include <memhealth/store/memory_store.hpp>

#include "../examples/flat_index.hpp"
#include "repair_test_support.hpp"
#include <unistd.h>

namespace repair_guard_test {
namespace fs = std::filesystem;
using namespace memhealth;
using namespace std::chrono_literals;

namespace {

using store_t = memory_store<memory_record>;

memory_record make_rec(int i, std::string status = "active") {
  memory_record r;
  r.id = "g" + std::to_string(i);
  r.content = "guarded memory " + std::to_string(i);
  r.embedding = {1.0f, 0.0f, 0.0f, 0.0f};
  r.embedding_version = "m1";
  r.scope = "user:1";
  r.source = "user_declared";
  r.status = std::move(status);
  r.kind = "fact";
  return r;
}

store_t make_store(int n, std::string status = "active") {
  std::vector<memory_record> v;
  for (int i = 0; i < n; ++i) v.push_back(make_rec(i, status));
  return store_t::from_records(std::move(v));
}

std::vector<std::string> images(const store_t& s) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < s.size(); ++i) out.push_back(to_json(s.extract(i)));
  return out;
}

struct scratch_dir : test::scratch_dir {
  explicit scratch_dir(const std::string& name) : test::scratch_dir(name, "memhealth-guard-test") {}
};
using test::slurp;

// A fake clock: `sleep` advances it; nothing ever really waits.
struct fake_clock {
  std::shared_ptr<utc_time> t =
      std::make_shared<utc_time>(utc_time{std::chrono::milliseconds{1'700'000'000'000}});
  std::shared_ptr<std::chrono::milliseconds> slept = std::make_shared<std::chrono::milliseconds>(0);
  void install(execution_limits& l) const {
    auto tt = t;
    auto ss = slept;
    l.clock = [tt] { return *tt; };
    l.sleep = [tt, ss](std::chrono::milliseconds d) {
      *tt += d;
      *ss += d;
    };
  }
};

// 10,000 illegal_status findings over a store of 10,000 records with status "actve".
struct burst_fixture {
  store_t store = make_store(10'000, "actve");
  report rep;
  burst_fixture() {
    for (int i = 0; i < 10'000; ++i) {
      finding f;
      f.kind = std::string(finding_kinds::illegal_status);
      f.detector = "structural";
      f.record_ids = {"g" + std::to_string(i)};
      rep.findings.push_back(std::move(f));
    }
  }
  repair_plan plan(std::size_t max_records) const {
    planner_options po;
    po.max_records_per_run = max_records;
    po.blast_radius_threshold = max_records;
    return make_plan(store, rep, po);
  }
};

std::size_t count_status(const store_t& s, std::string_view status) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < s.size(); ++i) n += s.record(i).status == status;
  return n;
}

}  // namespace

TEST_CASE("execution_order: higher priority first, equal priorities in plan order") {
  repair_plan p;
  for (int pri : {0, 400, 10, 400, 5}) {
    repair_action a;
    a.priority = pri;
    p.actions.push_back(a);
  }
  // 400 (#1), 400 (#3), 10 (#2), 5 (#4), 0 (#0)
  CHECK(execution_order(p) == std::vector<std::size_t>{1, 3, 2, 4, 0});
}

TEST_CASE("action_rate_gate: burst, then waits on the fake clock, then refuses past max_wait") {
  fake_clock fc;
  execution_limits l;
  l.burst = 2;
  l.per_second = 0.5;  // one token per 2000 ms
  l.max_wait = 5000ms;
  fc.install(l);
  action_rate_gate g(l);
  CHECK(g.admit());  // burst token 1
  CHECK(g.admit());  // burst token 2
  CHECK_FALSE(g.ready());
  CHECK(g.admit());        // waits 2000 ms
  CHECK(g.admit());        // waits 2000 ms more: 4000 in total
  CHECK_FALSE(g.admit());  // would need 6000 > 5000: refused, nothing waited
  CHECK(g.waited() == 4000ms);
  CHECK(g.waits() == 2);
  CHECK(*fc.slept == 4000ms);

  execution_limits z;
  z.burst = 1;
  z.per_second = 0;  // never refills
  fake_clock fz;
  fz.install(z);
  action_rate_gate gz(z);
  CHECK(gz.admit());
  CHECK_FALSE(gz.admit());
  CHECK(*fz.slept == 0ms);
}

TEST_CASE("guardrails hold under a burst of 10,000 findings") {
  burst_fixture fx;
  scratch_dir dir("burst");

  SUBCASE(
      "planner: max_records_per_run keeps 1000 of 10,000 actions, the rest deferred with a note") {
    const auto p = fx.plan(1000);
    CHECK(p.actions.size() == 1000);
    CHECK_FALSE(p.suspended);
    CHECK(std::any_of(p.deferred.begin(), p.deferred.end(), [](const std::string& d) {
      return d ==
             "max_records_per_run 1000: 9000 actions deferred in total (set_status_pending_review "
             "9000)";
    }));
  }

  const auto plan = fx.plan(10'000);
  REQUIRE(plan.actions.size() == 10'000);
  REQUIRE_FALSE(plan.suspended);  // 10,000 records is not above the threshold of 10,000

  SUBCASE(
      "token bucket: burst 10 + 5/s x 100 s of waiting = 510 applied, 9490 deferred, none "
      "dropped") {
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    fake_clock fc;
    apply_options opt;
    opt.max_records = 20'000;
    opt.batch_size = 64;
    opt.limits.burst = 10;
    opt.limits.per_second = 5;   // a token every 200 ms
    opt.limits.max_wait = 100s;  // 100 s / 200 ms = 500 waits
    fc.install(opt.limits);
    std::size_t batches = 0;
    opt.crash_hook = [&](std::string_view point) { batches += point == "after_intent"; };
    const auto res = apply_plan(fx.store, plan, wal, opt);
    CHECK(res.applied.size() == 510);
    CHECK(res.deferred.size() == 9490);
    CHECK(res.applied.size() + res.deferred.size() == 10'000);
    CHECK(res.failed.empty());
    CHECK(res.rate_limit_waits == 500);
    CHECK(res.rate_limit_waited == 100'000ms);
    CHECK(*fc.slept == 100'000ms);
    CHECK(res.records_changed == 510);
    CHECK(count_status(fx.store, "pending_review") == 510);
    CHECK(count_status(fx.store, "actve") == 9490);
    // the burst of 10 goes in one batch; after that the bucket is empty before every action,
    // so each of the 500 waited-for actions is its own batch: 1 + 500
    CHECK(batches == 501);
    const auto& d = res.outcomes[9999];
    CHECK(d.status == action_status::deferred);
    CHECK(d.reason.find("rate limit") != std::string::npos);
    // the next run (a new token bucket) picks up where this one stopped: the first 510 are
    // already applied, the next 510 run
    fake_clock fc2;
    fc2.install(opt.limits);
    const auto again = apply_plan(fx.store, plan, wal, opt);
    CHECK(again.skipped_already_applied.size() == 510);
    CHECK(again.applied.size() == 510);
    CHECK(count_status(fx.store, "pending_review") == 1020);
  }

  SUBCASE(
      "concurrency cap: at most max_in_flight actions and max_records_in_flight records per "
      "batch") {
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    apply_options opt;
    opt.max_records = 20'000;
    opt.limits.rate_limited = false;
    opt.batch_size = 64;
    opt.limits.max_in_flight = 16;
    std::size_t batches = 0, in_batch = 0, largest = 0;
    opt.crash_hook = [&](std::string_view point) {
      if (point == "after_intent") ++batches, in_batch = 0;
      if (point == "after_commit") largest = std::max(largest, ++in_batch);
    };
    auto res = apply_plan(fx.store, plan, wal, opt);
    CHECK(res.applied.size() == 10'000);
    CHECK(batches == 625);  // 10,000 / min(64, 16)
    CHECK(largest == 16);
    const auto log = read_wal_file(dir.path / "run.wal");
    std::size_t intents = 0;
    for (const auto& e : log.entries) intents += e.type == wal_frame_type::intent;
    CHECK(intents == 10'000);
  }

  SUBCASE("records in flight: 1 record per action, cap 10 -> batches of 10") {
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    apply_options opt;
    opt.max_records = 20'000;
    opt.limits.rate_limited = false;
    opt.batch_size = 64;
    opt.limits.max_records_in_flight = 10;
    std::size_t batches = 0;
    opt.crash_hook = [&](std::string_view point) { batches += point == "after_intent"; };
    auto res = apply_plan(fx.store, plan, wal, opt);
    CHECK(res.applied.size() == 10'000);
    CHECK(batches == 1000);
  }

  SUBCASE("max_records per run: 300 applied, 9700 deferred") {
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    apply_options opt;
    opt.max_records = 300;
    opt.limits.rate_limited = false;
    auto res = apply_plan(fx.store, plan, wal, opt);
    CHECK(res.applied.size() == 300);
    CHECK(res.deferred.size() == 9700);
    CHECK(count_status(fx.store, "pending_review") == 300);
  }
}

TEST_CASE("run ledger: at most max_runs_per_day per UTC day, persisted between processes") {
  scratch_dir dir("ledger");
  const fs::path ledger = dir.path / std::string(run_ledger_file_name);
  const utc_time day1 = parse_timestamp("2024-07-15T08:00:00Z")->instant;
  const utc_time day1_late = parse_timestamp("2024-07-15T23:59:59.999Z")->instant;
  const utc_time day2 = parse_timestamp("2024-07-16T00:00:00Z")->instant;
  CHECK(load_run_ledger(ledger) == run_budget_state{});
  CHECK(take_run(ledger, 2, day1).allowed);
  CHECK(take_run(ledger, 2, day1_late).allowed);
  const auto third = take_run(ledger, 2, day1_late);
  CHECK_FALSE(third.allowed);
  CHECK(third.state == run_budget_state{19919, 2});  // 2024-07-15 is day 19919 since 1970-01-01
  CHECK(load_run_ledger(ledger) == run_budget_state{19919, 2});
  CHECK(slurp(ledger) ==
        "{\"schema_version\":1,\"day\":19919,\"day_utc\":\"2024-07-15\",\"count\":2}\n");
  const auto next = take_run(ledger, 2, day2);
  CHECK(next.allowed);
  CHECK(next.state == run_budget_state{19920, 1});
  CHECK_FALSE(take_run(ledger, 2, day1).allowed);  // the clock went back a day: refused
  std::ofstream(ledger) << "not json";
  CHECK_THROWS_AS(load_run_ledger(ledger), error);
}

namespace {

using test::flaky_store;

repair_action weight_action(std::string key, std::string id, double w) {
  repair_action a;
  a.type = "test";
  a.targets = {id};
  a.edits = {{id, edit_set_weight{w}}};
  a.idempotency_key = std::move(key);
  return a;
}

}  // namespace

TEST_CASE(
    "compact_wal: refuses young logs, drops aborted intents, stray frames, torn tail, rollback "
    "unchanged") {
  scratch_dir dir("compact");
  const fs::path path = dir.path / "run.wal";
  flaky_store s{make_store(6), 2, 2};  // index 2 fails twice: two aborted attempts, then it commits
  const auto original = images(s.inner);
  repair_plan plan;
  for (int k = 0; k < 6; ++k)
    plan.actions.push_back(weight_action("w" + std::to_string(k), "g" + std::to_string(k), 0.5));
  std::uint64_t first_intent = 0;
  {
    wal_writer wal(path, wal_sync::none);
    auto res = apply_plan(s, plan, wal);
    REQUIRE(res.applied.size() == 6);
    const auto log = read_wal_file(path);
    for (const auto& e : log.entries)
      if (e.type == wal_frame_type::intent) {
        first_intent = e.seq;
        break;
      }
    wal.append_commit(first_intent, 0,
                      "w0");  // a duplicate commit: superseded, dropped by compaction
  }
  {
    std::ofstream(path, std::ios::binary | std::ios::app) << std::string("\x40\x00\x00\x00torn", 8);
  }
  const std::string before_bytes = slurp(path);
  const auto log0 = read_wal(before_bytes);
  REQUIRE(log0.problem.has_value());
  const utc_time created = parse_timestamp(log0.created_at)->instant;

  // 8 intents (2 aborted + 6 committed), 2 aborts, 7 commits (one duplicate), run_begin, run_end
  std::size_t n_intent = 0, n_abort = 0, n_commit = 0;
  for (const auto& e : log0.entries) {
    n_intent += e.type == wal_frame_type::intent;
    n_abort += e.type == wal_frame_type::abort;
    n_commit += e.type == wal_frame_type::commit;
  }
  CHECK(n_intent == 8);
  CHECK(n_abort == 2);
  CHECK(n_commit == 7);

  // the store as the run left it, for rollback from either log
  const store_t applied = s.inner;

  SUBCASE("a log younger than 30 days is refused and untouched") {
    const auto r = compact_wal(path, created + std::chrono::days{29});
    CHECK_FALSE(r.compacted);
    CHECK(r.refused.find("traces are kept at least 30.0 days") != std::string::npos);
    CHECK(slurp(path) == before_bytes);
  }
  SUBCASE("a retention below 30 days needs the explicit override") {
    wal_compact_options o;
    o.retention = std::chrono::days{7};
    CHECK_THROWS_AS(compact_wal(path, created + std::chrono::days{40}, o), error);
    o.allow_short_retention = true;
    const auto r = compact_wal(path, created + std::chrono::days{8}, o);
    CHECK(r.compacted);
  }
  SUBCASE("an old log is compacted; rollback from it gives the same store") {
    const auto r = compact_wal(path, created + std::chrono::days{31});
    REQUIRE(r.compacted);
    CHECK(r.refused.empty());
    CHECK(r.aborted_dropped == 2);
    CHECK(r.stray_dropped == 1);
    CHECK(r.intents_kept == 6);
    CHECK(r.torn_bytes_dropped == 8);
    // frames: header + 8 intents + 2 aborts + 7 commits + run_begin + run_end = 20 before;
    // after: header + 6 intents + 6 commits + run_begin + run_end = 15
    CHECK(r.frames_before == 20);
    CHECK(r.frames_after == 15);
    CHECK(r.bytes_before == before_bytes.size());
    CHECK(r.bytes_after == slurp(path).size());
    CHECK(r.bytes_after < r.bytes_before);
    const auto compacted = read_wal_file(path);
    CHECK(compacted.clean());
    CHECK(compacted.run == log0.run);
    CHECK(compacted.created_at == log0.created_at);

    store_t from_original = applied, from_compacted = applied;
    rollback(from_original, log0);
    rollback(from_compacted, compacted);
    CHECK(images(from_compacted) == images(from_original));
    CHECK(images(from_compacted) == original);
    // recovery from the store before the run reaches the applied state with either log
    store_t rec_original = make_store(6), rec_compacted = make_store(6);
    recover(rec_original, log0);
    recover(rec_compacted, compacted);
    CHECK(images(rec_compacted) == images(rec_original));
    CHECK(images(rec_compacted) == images(applied));

    // compacting again: nothing left to drop, the file stays as it is
    const std::string once = slurp(path);
    const auto r2 = compact_wal(path, created + std::chrono::days{31});
    CHECK_FALSE(r2.compacted);
    CHECK(r2.refused.empty());
    CHECK(slurp(path) == once);
  }
  SUBCASE("dry run writes nothing") {
    wal_compact_options o;
    o.dry_run = true;
    const auto r = compact_wal(path, created + std::chrono::days{31}, o);
    CHECK_FALSE(r.compacted);
    CHECK(r.bytes_after < r.bytes_before);
    CHECK(slurp(path) == before_bytes);
  }
  SUBCASE("not a log") {
    std::ofstream(dir.path / "x.wal") << "hello";
    CHECK_FALSE(compact_wal(dir.path / "x.wal", created + std::chrono::days{31}).refused.empty());
  }
}

namespace {

struct full_index {
  int calls = 0;
  void rebuild() { ++calls; }
};
struct partial_index {
  int full_calls = 0;
  std::vector<std::vector<std::string>> partial;
  void rebuild() { ++full_calls; }
  void rebuild(std::span<const std::string> ids) { partial.emplace_back(ids.begin(), ids.end()); }
};
static_assert(index_policy<full_index> && !partial_index_policy<full_index>);
static_assert(partial_index_policy<partial_index>);

// 5 records; g1 g3 g4 have a vector of the wrong dimension.
struct reembed_fixture {
  store_t store;
  report rep;
  reembed_fixture() {
    std::vector<memory_record> v;
    for (int i = 0; i < 5; ++i) v.push_back(make_rec(i));
    for (int i : {1, 3, 4}) v[static_cast<std::size_t>(i)].embedding = {1.0f, 0.0f};
    store = store_t::from_records(std::move(v), 4);
    for (int i : {1, 3, 4}) {
      finding f;
      f.kind = std::string(finding_kinds::embedding_dim_mismatch);
      f.record_ids = {"g" + std::to_string(i)};
      rep.findings.push_back(std::move(f));
    }
  }
  repair_plan plan(std::string version) const {
    planner_options po;
    po.reembed_batch_size = 2;
    po.reembed_version = std::move(version);
    return make_plan(store, rep, po);
  }
};

std::vector<float> unit_x(const memory_record&) {
  return {0.0f, 1.0f, 0.0f, 0.0f};
}

}  // namespace

TEST_CASE(
    "re-embedding: batches, version tag, old vector in the log, index rebuilt after the batches") {
  reembed_fixture fx;
  scratch_dir dir("reembed");
  const auto original = images(fx.store);
  const auto plan = fx.plan("m2");
  // 3 records in batches of 2: {g1,g3} {g4}, then one rebuild_index over g1 g3 g4
  REQUIRE(plan.actions.size() == 3);
  CHECK(plan.actions[0].type == action_types::reembed);
  CHECK(plan.actions[0].targets == std::vector<std::string>{"g1", "g3"});
  CHECK(plan.actions[1].targets == std::vector<std::string>{"g4"});
  CHECK(plan.actions[2].type == action_types::rebuild_index);
  CHECK(plan.actions[2].targets == std::vector<std::string>{"g1", "g3", "g4"});

  SUBCASE("with a partial index policy: called once, after both batches, with the changed ids") {
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    partial_index idx;
    apply_options opt;
    opt.approve_tier3 = true;
    opt.embed = unit_x;
    std::size_t commits_at_rebuild = 0;
    std::size_t commits = 0;
    opt.crash_hook = [&](std::string_view p) { commits += p == "after_commit"; };
    opt.rebuild_index = [&, inner = make_index_rebuilder(idx)](std::span<const std::string> ids) {
      commits_at_rebuild = commits;
      inner(ids);
    };
    auto res = apply_plan(fx.store, plan, wal, opt);
    CHECK(res.applied.size() == 3);
    CHECK(commits_at_rebuild == 2);  // both batches committed before the rebuild
    REQUIRE(idx.partial.size() == 1);
    CHECK(idx.partial[0] == std::vector<std::string>{"g1", "g3", "g4"});
    CHECK(idx.full_calls == 0);
    for (int i : {1, 3, 4}) {
      const auto& r = fx.store.record(static_cast<std::size_t>(i));
      CHECK(r.embedding_version == "m2");
      CHECK(std::vector<float>(fx.store.embedding(static_cast<std::size_t>(i)).begin(),
                               fx.store.embedding(static_cast<std::size_t>(i)).end()) ==
            std::vector<float>{0.0f, 1.0f, 0.0f, 0.0f});
    }
    CHECK(fx.store.record(0).embedding_version == "m1");
    // the old vectors are the log's before-images: rollback gives them back
    const auto log = read_wal_file(dir.path / "run.wal");
    std::size_t old_vectors = 0;
    for (const auto& e : log.entries)
      for (const auto& r : e.records)
        old_vectors += r.before.embedding == std::vector<float>{1.0f, 0.0f};
    CHECK(old_vectors == 3);
    rollback(fx.store, log);
    CHECK(images(fx.store) == original);
  }
  SUBCASE("a full-rebuild policy is called once") {
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    full_index idx;
    apply_options opt;
    opt.approve_tier3 = true;
    opt.embed = unit_x;
    opt.rebuild_index = make_index_rebuilder(idx);
    auto res = apply_plan(fx.store, plan, wal, opt);
    CHECK(res.applied.size() == 3);
    CHECK(idx.calls == 1);
  }
  SUBCASE("without a policy the rebuild goes to the manual queue") {
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    apply_options opt;
    opt.approve_tier3 = true;
    opt.embed = unit_x;
    auto res = apply_plan(fx.store, plan, wal, opt);
    CHECK(res.applied.size() == 2);
    REQUIRE(res.failed.size() == 1);
    CHECK(res.outcomes[2].reason.find("no index policy") != std::string::npos);
  }
  SUBCASE("re-embedding not approved: nothing changed, nothing to re-index") {
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    full_index idx;
    apply_options opt;
    opt.embed = unit_x;
    opt.rebuild_index = make_index_rebuilder(idx);
    auto res = apply_plan(fx.store, plan, wal, opt);
    CHECK(res.skipped_unapproved.size() == 2);
    CHECK(res.outcomes[2].status == action_status::noop);
    CHECK(idx.calls == 0);
  }
  SUBCASE("an untagged re-embedding is refused; apply_options::embed_version tags it") {
    const auto untagged = fx.plan("");
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    apply_options opt;
    opt.approve_tier3 = true;
    opt.embed = unit_x;
    auto res = apply_plan(fx.store, untagged, wal, opt);
    CHECK(res.failed.size() == 2);  // both batches refused
    CHECK(res.outcomes[2].status ==
          action_status::noop);  // nothing re-embedded: nothing to re-index
    CHECK(res.outcomes[0].reason.find("without an embedding_version tag") != std::string::npos);
    CHECK(images(fx.store) == original);
    opt.embed_version = "m3";
    full_index idx;
    opt.rebuild_index = make_index_rebuilder(idx);
    auto res2 = apply_plan(fx.store, untagged, wal, opt);
    CHECK(res2.applied.size() == 3);
    CHECK(fx.store.record(1).embedding_version == "m3");
  }
}

// ---------------------------------------------------------------- retrieval alarms (issue 21)

namespace {

// a1 (1,0), a2 (0,1), a3 (0.6,0.8) active; "old" (1,0) archived; all on model m1, scope user:1.
store_t alarm_store() {
  std::vector<memory_record> v;
  const std::vector<std::pair<std::string, std::vector<float>>> rows = {
      {"a1", {1.0f, 0.0f}}, {"a2", {0.0f, 1.0f}}, {"a3", {0.6f, 0.8f}}, {"old", {1.0f, 0.0f}}};
  for (const auto& [id, e] : rows) {
    memory_record r = make_rec(0);
    r.id = id;
    r.content = "alarm memory " + id;
    r.embedding = e;
    if (id == "old") r.status = "archived";
    v.push_back(std::move(r));
  }
  return store_t::from_records(std::move(v), 2);
}

finding alarm(std::string_view kind, std::vector<std::string> ids) {
  finding f;
  f.kind = std::string(kind);
  f.detector = "retrieval_monitor";
  f.record_ids = std::move(ids);
  f.with("partition", std::string("user:1"))
      .with("window_start", std::string("2024-07-14T09:00:00.000Z"))
      .with("window_end", std::string("2024-07-14T10:00:00.000Z"));
  return f;
}

// The monitor's alarms of one window, as it writes them (retrieval_monitor.hpp): two ghosts (one
// missing, one archived), a ghost that is live (a1), a latency regression, a similarity drop, a
// scope leak (a2), queries on m2 (the store holds m1) and on m1.
report alarm_report() {
  report r;
  auto g1 = alarm(finding_kinds::ghost_result, {"ghost"});
  g1.with("reason", std::string("missing")).with("distinct_ids", std::int64_t{1});
  auto g2 = alarm(finding_kinds::ghost_result, {"old"});
  g2.with("reason", std::string("archived")).with("distinct_ids", std::int64_t{1});
  auto g3 = alarm(finding_kinds::ghost_result, {"a1"});
  g3.with("reason", std::string("missing")).with("distinct_ids", std::int64_t{1});
  auto lat = alarm(finding_kinds::latency_regression, {});
  lat.with("p95_latency_ms", 340.0).with("baseline_p95_latency_ms", 33.0);
  auto sim = alarm(finding_kinds::similarity_drop, {});
  sim.with("mean_top1_similarity", 0.5).with("baseline_median_top1_similarity", 0.8);
  auto leak = alarm(finding_kinds::scope_leak, {"a2"});
  leak.with("reason", std::string("outside_requested_scopes"))
      .with("record_scope", std::string("user:1"));
  auto q2 = alarm(finding_kinds::query_version_mismatch, {"a3"});
  q2.with("reason", std::string("query m2 vs stored m1"))
      .with("query_embedding_version", std::string("m2"));
  auto q1 = alarm(finding_kinds::query_version_mismatch, {"a3"});
  q1.with("reason", std::string("query m1 vs stored m0"))
      .with("query_embedding_version", std::string("m1"));
  r.findings = {g1, g2, g3, lat, sim, leak, q2, q1};
  return r;
}

// Writes a flat index file of this dimension and model version with the given entries.
void write_index(const fs::path& p, std::size_t dim, const std::string& version,
                 const std::vector<std::pair<std::string, std::vector<float>>>& entries) {
  examples::flat_index ix(dim, version);
  for (const auto& [id, v] : entries) ix.upsert(id, v);
  ix.save(p);
}

std::size_t intents(const fs::path& wal) {
  std::size_t n = 0;
  for (const auto& e : read_wal_file(wal).entries) n += e.type == wal_frame_type::intent;
  return n;
}

}  // namespace

static_assert(index_policy<examples::flat_index_policy<store_t>> &&
              partial_index_policy<examples::flat_index_policy<store_t>> &&
              cleanable_index_policy<examples::flat_index_policy<store_t>> &&
              checkable_index_policy<examples::flat_index_policy<store_t>>);
static_assert(!cleanable_index_policy<full_index> && !checkable_index_policy<full_index>);

TEST_CASE("alarms: the planner turns retrieval alarms into index actions and review items") {
  const auto store = alarm_store();
  const auto plan = make_plan(store, alarm_report(), planner_options{});
  // priorities: clean_index 7, check_rebuild_index 4, critical review 1, start_migration 0
  REQUIRE(plan.actions.size() == 4);
  const auto& clean = plan.actions[0];
  CHECK(clean.type == action_types::clean_index);
  CHECK(clean.tier == 1);
  CHECK(clean.automation == automation::automatic);
  CHECK(clean.targets == std::vector<std::string>{"ghost", "old"});  // a1 is live: not a target
  CHECK(clean.edits.empty());
  const auto& check = plan.actions[1];
  CHECK(check.type == action_types::check_rebuild_index);
  CHECK(check.tier == 1);
  CHECK(check.targets.empty());
  REQUIRE(check.reasons.size() == 3);  // one per alarm, then what the action does
  CHECK(check.reasons[0] ==
        "latency_regression in user:1 [2024-07-14T09:00:00.000Z, 2024-07-14T10:00:00.000Z) "
        "p95_latency_ms=340 baseline_p95_latency_ms=33");
  CHECK(check.reasons[1].find("mean_top1_similarity=0.5 baseline_median_top1_similarity=0.8") !=
        std::string::npos);
  const auto& leak = plan.actions[2];
  CHECK(leak.type == action_types::send_to_review);
  CHECK(leak.tier == 3);
  CHECK(leak.automation == automation::manual);
  CHECK(leak.priority == action_priority::critical_review);
  CHECK(leak.targets == std::vector<std::string>{"a2"});
  CHECK(leak.edits.empty());
  REQUIRE(!leak.reasons.empty());
  CHECK(leak.reasons[0].starts_with("critical: scope_leak in user:1"));
  const auto& mig = plan.actions[3];
  CHECK(mig.type == action_types::start_migration);
  CHECK(mig.tier == 3);
  CHECK(mig.targets == std::vector<std::string>{"a3"});
  CHECK(std::any_of(mig.reasons.begin(), mig.reasons.end(), [](const std::string& r) {
    return r.starts_with("proposed: memhealth migrate start STORE --to m2 ");
  }));
  // the live ghost and the queries on the store's own majority version are notes, not actions
  CHECK(std::any_of(plan.deferred.begin(), plan.deferred.end(), [](const std::string& d) {
    return d.find("'a1' is a live record of the store now") != std::string::npos;
  }));
  CHECK(std::any_of(plan.deferred.begin(), plan.deferred.end(), [](const std::string& d) {
    return d.starts_with("query_version_mismatch: queries on m1, which most records already hold");
  }));
  // during a declared migration to m2, queries on m2 are its progress: no proposal
  planner_options po;
  po.migration_to = "m2";
  const auto during = make_plan(store, alarm_report(), po);
  CHECK(during.actions.size() == 3);
  CHECK(std::none_of(during.actions.begin(), during.actions.end(), [](const repair_action& a) {
    return a.type == action_types::start_migration;
  }));
  // the plan JSON keeps the new action types
  CHECK(plan_from_json(plan_to_json(plan)) == plan);
  // the clean-up's blast radius: the 2 index entries it removes; the plan records its store
  // (4 records, 3 live) and the threshold it was made with
  CHECK(clean.blast.records == 0);
  CHECK(clean.blast.index_entries == 2);
  CHECK(check.blast.index_entries == 0);  // unknown until apply checks the index
  CHECK(plan_blast_radius(plan).index_entries == 2);
  CHECK_FALSE(plan.suspended);
  CHECK(plan.blast_radius_threshold == std::optional<std::size_t>(500));
  REQUIRE(plan.store.has_value());
  CHECK(plan.store->records == 4);
  CHECK(plan.store->ids == 4);
  CHECK(plan.store->live == 3);
  CHECK(plan.store->sample.size() == 4);  // a store of 4 ids: every id sampled
  // the plan file keeps them too ("index_entries" in the action line, "store" in the header)
  const std::string text = plan_to_text(plan);
  CHECK(text.find("\"blast_radius\":{\"records\":0,\"index_entries\":2,\"scopes\":[]}") !=
        std::string::npos);
  CHECK(text.find("\"blast_radius_threshold\":500,\"store\":{") != std::string::npos);
  CHECK(parse_plan(text) == plan);
  // counted by the suspension with the records: a threshold of 1 suspends the plan
  planner_options tight;
  tight.blast_radius_threshold = 1;
  const auto held = make_plan(store, alarm_report(), tight);
  CHECK(held.suspended);
  CHECK(held.suspend_reason ==
        "blast radius 0 records in 0 scopes and 2 index entries exceeds the threshold of 1 "
        "(records and index entries together); approve the plan to run it");
  tight.blast_radius_threshold = 2;  // 2 entries do not exceed 2
  CHECK_FALSE(make_plan(store, alarm_report(), tight).suspended);
}

TEST_CASE(
    "alarms: apply cleans ghosts out of a flat index and checks it, writing nothing to the log") {
  scratch_dir dir("alarms");
  const fs::path ix = dir.path / "index.flat.jsonl";
  auto store = alarm_store();
  const auto before = images(store);
  const auto plan = make_plan(store, alarm_report(), planner_options{});
  REQUIRE(plan.actions.size() == 4);
  // 5 entries: the 3 live records, "ghost" (no record) and "old" (archived)
  write_index(ix, 2, "m1",
              {{"a1", {1.0f, 0.0f}},
               {"a2", {0.0f, 1.0f}},
               {"a3", {0.6f, 0.8f}},
               {"ghost", {0.0f, 1.0f}},
               {"old", {1.0f, 0.0f}}});
  examples::flat_index_policy<store_t> policy(ix, store);
  REQUIRE(examples::flat_index::load(ix).size() == 5);
  // before: 2 ids without a live record
  const auto c0 = policy.check(expected_index(store));
  CHECK_FALSE(c0.consistent);
  CHECK(c0.entries == 5);
  CHECK(c0.expected == 3);
  CHECK(c0.extra == 2);
  CHECK(c0.missing == 0);
  CHECK(c0.stale == 0);

  SUBCASE("clean-up removes exactly the 2 ghosts; the check then finds the index consistent") {
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    apply_options opt;
    opt.rebuild_index = make_index_rebuilder(policy);
    opt.index = make_index_hooks(policy);
    const auto res = apply_plan(store, plan, wal, opt);
    CHECK(res.outcomes[0].status == action_status::applied);
    CHECK(res.outcomes[0].reason == "removed 2 of 2 ids from the index");
    CHECK(res.outcomes[1].status == action_status::noop);  // consistent after the clean-up
    CHECK(res.outcomes[1].reason.starts_with("index consistent with the store (3 entries"));
    CHECK(res.outcomes[2].status == action_status::unapproved);  // the scope leak: a person
    CHECK(res.outcomes[3].status == action_status::unapproved);  // the migration: a person
    const auto after = examples::flat_index::load(ix);
    CHECK(after.ids() == std::vector<std::string>{"a1", "a2", "a3"});
    CHECK(policy.check(expected_index(store)).consistent);
    CHECK(res.records_changed == 0);
    CHECK(images(store) == before);
    wal.sync();
    CHECK(intents(dir.path / "run.wal") == 0);  // no record changed: nothing logged
  }
  SUBCASE("an index with a stale vector is rebuilt, then consistent") {
    // the index holds a3 = (1,0) while the store has (0.6,0.8): 1 stale vector besides the ghosts
    write_index(ix, 2, "m1",
                {{"a1", {1.0f, 0.0f}},
                 {"a2", {0.0f, 1.0f}},
                 {"a3", {1.0f, 0.0f}},
                 {"ghost", {0.0f, 1.0f}},
                 {"old", {1.0f, 0.0f}}});
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    apply_options opt;
    opt.index = make_index_hooks(policy);
    const auto res = apply_plan(store, plan, wal, opt);
    CHECK(res.outcomes[0].status == action_status::applied);
    CHECK(res.outcomes[1].status == action_status::applied);
    CHECK(res.outcomes[1].reason ==
          "index inconsistent (1 vectors differ from the store's); rebuilt: 3 entries");
    const auto after = examples::flat_index::load(ix);
    REQUIRE(after.size() == 3);
    const auto hits = after.search(std::vector<float>{0.6f, 0.8f}, 1);
    REQUIRE(hits.size() == 1);
    CHECK(hits[0].first == "a3");
    CHECK(hits[0].second == doctest::Approx(1.0));
  }
  SUBCASE("a ghost that became a live record again is kept in the index") {
    // "old" is active again by apply time: only "ghost" is removed
    const std::size_t at = *store.find("old");
    auto r = store.extract(at);
    r.status = "active";
    store.restore(at, r);
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    apply_options opt;
    opt.index = make_index_hooks(policy);
    const auto res = apply_plan(store, plan, wal, opt);
    CHECK(res.outcomes[0].reason ==
          "removed 1 of 1 ids from the index (1 ids are live records now: kept)");
    CHECK(examples::flat_index::load(ix).ids() ==
          std::vector<std::string>{"a1", "a2", "a3", "old"});
  }
  SUBCASE("without an index policy both index actions go to the manual queue") {
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    const auto res = apply_plan(store, plan, wal, apply_options{});
    CHECK(res.failed.size() == 2);
    CHECK(res.outcomes[0].reason.starts_with("no index clean-up"));
    CHECK(res.outcomes[1].reason.starts_with("no index policy"));
    CHECK(examples::flat_index::load(ix).size() == 5);  // untouched
  }
  SUBCASE("a policy with only rebuild(): no clean-up, a rebuild without a check") {
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    full_index idx;
    apply_options opt;
    opt.index = make_index_hooks(idx);
    const auto res = apply_plan(store, plan, wal, opt);
    CHECK(res.outcomes[0].status == action_status::failed);
    CHECK(res.outcomes[1].status == action_status::applied);
    CHECK(res.outcomes[1].reason == "index rebuilt (the index policy has no check)");
    CHECK(idx.calls == 1);
  }
  SUBCASE("index actions refused (a store emptied or cut since the plan): the index untouched") {
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    apply_options opt;
    opt.index = make_index_hooks(policy);
    opt.index_refused = "the store has no live record";
    const auto res = apply_plan(store, plan, wal, opt);
    CHECK(res.outcomes[0].status == action_status::failed);
    CHECK(res.outcomes[0].reason == "index actions refused: the store has no live record");
    CHECK(res.outcomes[1].status == action_status::failed);
    CHECK(res.outcomes[1].reason == "index actions refused: the store has no live record");
    CHECK(slurp(ix).find("\"ghost\"") != std::string::npos);
    CHECK(examples::flat_index::load(ix).size() == 5);
  }
  SUBCASE("blast radius: an index action removing more entries than the limit is held") {
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    apply_options opt;
    opt.index = make_index_hooks(policy);
    opt.index_blast_limit = 1;  // the clean-up removes 2; the rebuild would remove those 2
    const std::string file_before = slurp(ix);
    const auto res = apply_plan(store, plan, wal, opt);
    CHECK(res.outcomes[0].status == action_status::unapproved);
    CHECK(res.outcomes[0].reason ==
          "held for review: it would remove 2 ids from the index (2 index entries, more than the "
          "blast-radius threshold of 1); approve suspended work to run it");
    CHECK(res.outcomes[1].status == action_status::unapproved);
    CHECK(res.outcomes[1].reason ==
          "held for review: it would rebuild the index, removing or rewriting 2 of its 5 entries "
          "(2 index entries, more than the blast-radius threshold of 1); approve suspended work "
          "to run it");
    CHECK(slurp(ix) == file_before);  // byte for byte
    // 2 is not more than a limit of 2; and an approval of suspended work runs it over 1
    opt.index_blast_limit = 2;
    wal_writer wal2(dir.path / "run2.wal", wal_sync::none);
    CHECK(apply_plan(store, plan, wal2, opt).outcomes[0].status == action_status::applied);
    write_index(ix, 2, "m1",
                {{"a1", {1.0f, 0.0f}},
                 {"a2", {0.0f, 1.0f}},
                 {"a3", {0.6f, 0.8f}},
                 {"ghost", {0.0f, 1.0f}},
                 {"old", {1.0f, 0.0f}}});
    opt.index_blast_limit = 1;
    opt.approve_suspended = true;
    wal_writer wal3(dir.path / "run3.wal", wal_sync::none);
    const auto res3 = apply_plan(store, plan, wal3, opt);
    CHECK(res3.outcomes[0].status == action_status::applied);
    CHECK(examples::flat_index::load(ix).size() == 3);
  }
  SUBCASE("approved, the migration proposal is a no-op: apply never starts a migration") {
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    apply_options opt;
    opt.approve_tier3 = true;
    opt.index = make_index_hooks(policy);
    const auto res = apply_plan(store, plan, wal, opt);
    CHECK(res.outcomes[3].status == action_status::noop);
    CHECK(res.outcomes[3].reason.find("memhealth migrate start") != std::string::npos);
    CHECK(res.outcomes[2].status == action_status::noop);  // the review carries no edit
    CHECK(images(store) == before);
  }
}

// ---------------------------------------------------------------- which store a plan was made for

namespace {

// A store of these ids (make_rec's records renamed), every record active unless in `archived`.
store_t store_of_ids(const std::vector<std::string>& ids,
                     const std::set<std::string>& archived = {}) {
  std::vector<memory_record> v;
  for (const auto& id : ids) {
    memory_record r = make_rec(0, archived.count(id) ? "archived" : "active");
    r.id = id;
    v.push_back(std::move(r));
  }
  return store_t::from_records(std::move(v));
}

// "p0" .. "p<n-1>"
std::vector<std::string> ids_of(const std::string& prefix, int n, int from = 0) {
  std::vector<std::string> out;
  for (int i = from; i < from + n; ++i) out.push_back(prefix + std::to_string(i));
  return out;
}

std::vector<std::string> joined(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

TEST_CASE("plan store fingerprint: counts, the digest of the sorted ids and a sample of them") {
  // g0..g9 (make_store): sorted byte-wise g0 < g1 < ... < g9
  const auto s = make_store(10);
  const plan_store_fingerprint f = plan_store_of(s);
  CHECK(f.records == 10);
  CHECK(f.ids == 10);
  CHECK(f.live == 10);
  CHECK(f.ids_crc64 == hex16(crc64("g0\ng1\ng2\ng3\ng4\ng5\ng6\ng7\ng8\ng9\n")));
  REQUIRE(f.sample.size() == 10);  // fewer ids than plan_store_sample_size: all of them
  std::vector<std::uint64_t> want;
  for (int i = 0; i < 10; ++i) want.push_back(id_sample_hash("g" + std::to_string(i)));
  std::sort(want.begin(), want.end());
  CHECK(f.sample == want);
  // the hash: FNV-1a 64 of "g0" finalised by SplitMix64 (worked out step by step here)
  std::uint64_t x = 0xcbf29ce484222325ULL;
  for (const unsigned char c : std::string("g0")) x = (x ^ c) * 0x100000001b3ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  x ^= x >> 31;
  CHECK(id_sample_hash("g0") == x);
  // a duplicate id counts as a record, not as an id; archived records are not live
  const auto dup = store_of_ids({"a", "a", "b"}, {"b"});
  const auto fd = plan_store_of(dup);
  CHECK(fd.records == 3);
  CHECK(fd.ids == 2);
  CHECK(fd.live == 2);
  CHECK(fd.sample.size() == 2);
  // a large store samples 128 ids: the 128 smallest hashes
  const auto big = store_of_ids(ids_of("g", 1000));
  const auto fb = plan_store_of(big);
  REQUIRE(fb.sample.size() == plan_store_sample_size);
  std::vector<std::uint64_t> all;
  for (const auto& id : ids_of("g", 1000)) all.push_back(id_sample_hash(id));
  std::sort(all.begin(), all.end());
  all.resize(128);
  CHECK(fb.sample == all);
}

TEST_CASE("plan store fingerprint: the same store, an edited one, another one, a cut one") {
  const auto ten = ids_of("g", 10);
  const plan_store_fingerprint f = plan_store_of(store_of_ids(ten));
  SUBCASE("the same ids and counts") {
    const auto c = check_plan_store(f, store_of_ids(ten));
    CHECK(c.verdict == plan_store_verdict::same);
    CHECK(c.kept == 1.0);
    CHECK(c.foreign == 0.0);
    CHECK(c.reason.empty());
  }
  SUBCASE("a record added: changed (10 of 10 kept; 1 of the 11 ids new)") {
    const auto c = check_plan_store(f, store_of_ids(joined(ten, {"g10"})));
    CHECK(c.verdict == plan_store_verdict::changed);
    CHECK(c.kept == 1.0);
    CHECK(c.in_range == 11);  // the sample holds every plan id: every id is in its range
    CHECK(c.foreign == doctest::Approx(1.0 / 11));
  }
  SUBCASE("a record removed: changed (9 of 10 kept)") {
    const auto c = check_plan_store(f, store_of_ids(ids_of("g", 9)));
    CHECK(c.verdict == plan_store_verdict::changed);
    CHECK(c.kept == doctest::Approx(0.9));
    CHECK(c.reason.starts_with("the store changed since the plan (90% of the plan's sampled"));
  }
  SUBCASE("half the ids replaced: 5 of 10 kept is not 'most gone', so still changed") {
    const auto c = check_plan_store(f, store_of_ids(joined(ids_of("g", 5), ids_of("h", 5))));
    CHECK(c.kept == doctest::Approx(0.5));
    CHECK(c.foreign == doctest::Approx(0.5));
    CHECK(c.verdict == plan_store_verdict::changed);
  }
  SUBCASE("another store: no plan id in it, every id new") {
    const auto c = check_plan_store(f, store_of_ids(ids_of("h", 10)));
    CHECK(c.verdict == plan_store_verdict::other);
    CHECK(c.kept == 0.0);
    CHECK(c.foreign == 1.0);
    CHECK(
        c.reason.starts_with("most record ids differ: 0% of the plan's sampled record ids are "
                             "in it and "
                             "100% of its ids (of 10 in the sample's range)"));
  }
  SUBCASE("6 of 10 ids replaced: another store") {
    const auto c = check_plan_store(f, store_of_ids(joined(ids_of("g", 4), ids_of("h", 6))));
    CHECK(c.kept == doctest::Approx(0.4));
    CHECK(c.foreign == doctest::Approx(0.6));
    CHECK(c.verdict == plan_store_verdict::other);
  }
  SUBCASE("emptied: shrunk (no live record)") {
    const auto c = check_plan_store(f, store_of_ids({}));
    CHECK(c.verdict == plan_store_verdict::shrunk);
    CHECK(c.reason ==
          "the store has no live record (the plan was made from a store of 10 records (10 "
          "live), this one has 0 (0 live))");
  }
  SUBCASE("cut to 3 records: shrunk (3 of 10 kept, nothing new)") {
    const auto c = check_plan_store(f, store_of_ids(ids_of("g", 3)));
    CHECK(c.verdict == plan_store_verdict::shrunk);
    CHECK(c.kept == doctest::Approx(0.3));
    CHECK(c.foreign == 0.0);
  }
  SUBCASE("every id kept but 6 of 10 archived: shrunk (4 live of the plan's 10)") {
    const auto c = check_plan_store(f, store_of_ids(ten, {"g0", "g1", "g2", "g3", "g4", "g5"}));
    CHECK(c.verdict == plan_store_verdict::shrunk);
    CHECK(c.kept == 1.0);
  }
  SUBCASE("5 of 10 archived: 5 live is half, not fewer: changed") {
    const auto c = check_plan_store(f, store_of_ids(ten, {"g0", "g1", "g2", "g3", "g4"}));
    CHECK(c.verdict == plan_store_verdict::changed);
  }
}

TEST_CASE("plan store fingerprint: a sample of 128 ids tells large stores apart") {
  const auto g = ids_of("g", 1000);
  const plan_store_fingerprint f = plan_store_of(store_of_ids(g));
  // another store of 1000 ids: none of the 128 sampled ids in it, and of its ids in the sample's
  // range (about 128 expected) none was sampled
  const auto other = check_plan_store(f, store_of_ids(ids_of("x", 1000)));
  CHECK(other.verdict == plan_store_verdict::other);
  CHECK(other.kept == 0.0);
  CHECK(other.in_range > 0);
  CHECK(other.foreign == 1.0);
  // cut to its first 100 records: every id in the sample's range was sampled (foreign exactly
  // 0, whatever the sample), about 10% kept
  const auto cut = check_plan_store(f, store_of_ids(ids_of("g", 100)));
  CHECK(cut.verdict == plan_store_verdict::shrunk);
  CHECK(cut.foreign == 0.0);
  CHECK(cut.kept < 0.5);
  // grown to 4000 ids: every sampled id kept (exactly 1), most of the ids in range new
  const auto grown = check_plan_store(f, store_of_ids(joined(g, ids_of("y", 3000))));
  CHECK(grown.verdict == plan_store_verdict::changed);
  CHECK(grown.kept == 1.0);
  CHECK(grown.foreign > 0.5);
}

namespace {

// An index that only removes: records what it was asked to remove.
struct ghost_index {
  std::vector<std::string> removed;
  void rebuild() {}
  std::size_t remove(std::span<const std::string> ids) {
    removed.insert(removed.end(), ids.begin(), ids.end());
    return ids.size();
  }
};

// A plan made from g0..g9: a weight of 0.5 for g1 (tier 1), then a clean-up of "ghost".
repair_plan fingerprinted_plan() {
  repair_plan plan;
  repair_action w = weight_action("k-weight", "g1", 0.5);
  w.priority = action_priority::tier1;
  repair_action c;
  c.type = std::string(action_types::clean_index);
  c.priority = action_priority::index_cleanup;
  c.targets = {"ghost"};
  c.idempotency_key = "k-clean";
  plan.actions = {w, c};
  plan.store = plan_store_of(store_of_ids(ids_of("g", 10)));
  return plan;
}

}  // namespace

TEST_CASE("apply_plan checks the plan's store itself: another store, a cut one, an opt-out") {
  scratch_dir dir("plan-store");
  const repair_plan plan = fingerprinted_plan();
  ghost_index idx;
  apply_options opt;
  opt.index = make_index_hooks(idx);
  SUBCASE("another store (h0..h9): error(precondition), nothing written, index untouched") {
    auto other = store_of_ids(ids_of("h", 10));
    const auto before = images(other);
    const fs::path log = dir.path / "run.wal";
    {
      wal_writer wal(log, wal_sync::none);
      try {
        (void)apply_plan(other, plan, wal, opt);
        FAIL("apply_plan accepted a plan of another store");
      } catch (const error& e) {
        CHECK(e.code() == error_code::precondition);
        CHECK(std::string(e.what()).find(
                  "apply_plan: the plan was made for another store: most record ids differ: 0% "
                  "of the plan's sampled record ids are in it and 100% of its ids") !=
              std::string::npos);
        CHECK(std::string(e.what()).find("nothing was written") != std::string::npos);
      }
      apply_options dry = opt;  // a dry run is refused the same way
      dry.dry_run = true;
      CHECK_THROWS_AS((void)apply_plan(other, plan, wal, dry), error);
      // the plan file, applied action by action, is refused before its first action
      write_plan((dir.path / "p.jsonl").string(), plan);
      plan_reader reader((dir.path / "p.jsonl").string());
      std::size_t seen = 0;
      CHECK_THROWS_AS(
          (void)apply_plan_stream(other, reader, wal, opt,
                                  [&](const action_outcome&, const repair_action&) { ++seen; }),
          error);
      CHECK(seen == 0);
      wal.sync();
    }
    CHECK(read_wal_file(log).entries.empty());  // no run_begin, no intent
    CHECK(images(other) == before);
    CHECK(idx.removed.empty());
  }
  SUBCASE("cut to g0..g2 (3 of 10 ids kept): the record action runs, the clean-up is refused") {
    auto cut = store_of_ids(ids_of("g", 3));
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    const auto res = apply_plan(cut, plan, wal, opt);
    CHECK(res.outcomes[0].status == action_status::applied);
    CHECK(cut.record(*cut.find("g1")).effective_weight == 0.5);
    CHECK(res.outcomes[1].status == action_status::failed);
    CHECK(res.outcomes[1].reason ==
          "index actions refused: the store lost most of its records since the plan (30% of the "
          "plan's sampled record ids are in it; the plan was made from a store of 10 records (10 "
          "live), this one has 3 (3 live))");
    CHECK(idx.removed.empty());
    // a reason the caller set wins
    auto cut2 = store_of_ids(ids_of("g", 3));
    apply_options mine = opt;
    mine.index_refused = "host says no";
    wal_writer wal2(dir.path / "run2.wal", wal_sync::none);
    CHECK(apply_plan(cut2, plan, wal2, mine).outcomes[1].reason ==
          "index actions refused: host says no");
  }
  SUBCASE("the same store: both run") {
    auto same = store_of_ids(ids_of("g", 10));
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    const auto res = apply_plan(same, plan, wal, opt);
    CHECK(res.outcomes[0].status == action_status::applied);
    CHECK(res.outcomes[1].status == action_status::applied);
    CHECK(idx.removed == std::vector<std::string>{"ghost"});
  }
  SUBCASE("skip_store_check: the host checked itself; another store is not refused") {
    auto other = store_of_ids(ids_of("h", 10));
    opt.skip_store_check = true;
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    const auto res = apply_plan(other, plan, wal, opt);
    CHECK(res.outcomes[0].status == action_status::failed);  // g1 is not in it
    CHECK(res.outcomes[1].status == action_status::applied);
    CHECK(idx.removed == std::vector<std::string>{"ghost"});
  }
  SUBCASE("a plan without a fingerprint (an older plan) is not checked") {
    repair_plan old = plan;
    old.store.reset();
    auto other = store_of_ids(ids_of("h", 10));
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    CHECK_NOTHROW((void)apply_plan(other, old, wal, opt));
  }
}

TEST_CASE("re-embedding under the index blast-radius limit: batches held, rebuild within it") {
  // g1 g3 g4 to re-embed in batches {g1,g3} {g4}, then rebuild_index over what changed
  reembed_fixture fx;
  scratch_dir dir("reembed-blast");
  const auto plan = fx.plan("m2");
  REQUIRE(plan.actions.size() == 3);
  partial_index idx;
  apply_options opt;
  opt.approve_tier3 = true;
  opt.embed = unit_x;
  opt.rebuild_index = make_index_rebuilder(idx);
  SUBCASE("limit 2: the first batch (2 records) runs, the second would make 3: held") {
    opt.index_blast_limit = 2;
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    const auto res = apply_plan(fx.store, plan, wal, opt);
    CHECK(res.outcomes[0].status == action_status::applied);
    CHECK(res.outcomes[1].status == action_status::unapproved);
    CHECK(res.outcomes[1].attempts == 0);
    CHECK(res.outcomes[1].reason ==
          "held for review: it would re-embed 1 records, and the index rebuild after the "
          "re-embedding would then rewrite the entries of 3 records (3 index entries, more than "
          "the blast-radius threshold of 2); approve suspended work to run it");
    CHECK(res.outcomes[2].status == action_status::applied);
    REQUIRE(idx.partial.size() == 1);
    CHECK(idx.partial[0] == std::vector<std::string>{"g1", "g3"});
    CHECK(fx.store.record(4).embedding_version == "m1");  // g4 not re-embedded
  }
  SUBCASE("limit 1: the 2-record batch is held, the 1-record batch runs and is re-indexed") {
    opt.index_blast_limit = 1;
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    const auto res = apply_plan(fx.store, plan, wal, opt);
    CHECK(res.outcomes[0].status == action_status::unapproved);
    CHECK(res.outcomes[1].status == action_status::applied);
    REQUIRE(idx.partial.size() == 1);
    CHECK(idx.partial[0] == std::vector<std::string>{"g4"});
    CHECK(fx.store.record(1).embedding_version == "m1");
  }
  SUBCASE("limit 1 without an index policy: nothing rewrites the index, nothing is held") {
    opt.rebuild_index = nullptr;
    opt.index_blast_limit = 1;
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    const auto res = apply_plan(fx.store, plan, wal, opt);
    CHECK(res.outcomes[0].status == action_status::applied);
    CHECK(res.outcomes[1].status == action_status::applied);
    CHECK(res.outcomes[2].status == action_status::failed);
    CHECK(res.outcomes[2].reason ==
          "no index policy (apply_options::rebuild_index): rebuild the index by hand for 3 "
          "re-embedded records");
  }
  SUBCASE("limit 1 with approve_suspended: everything runs") {
    opt.index_blast_limit = 1;
    opt.approve_suspended = true;
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    const auto res = apply_plan(fx.store, plan, wal, opt);
    CHECK(res.applied.size() == 3);
    REQUIRE(idx.partial.size() == 1);
    CHECK(idx.partial[0] == std::vector<std::string>{"g1", "g3", "g4"});
  }
  SUBCASE("vectors changed by another action type: the rebuild itself is held") {
    // one action (not a reembed) replaces the vectors of g1 and g3, then a rebuild over both
    repair_plan p;
    repair_action e;
    e.type = "test";
    e.targets = {"g1", "g3"};
    e.edits = {{"g1", edit_replace_embedding{{0.0f, 1.0f, 0.0f, 0.0f}, "m2"}},
               {"g3", edit_replace_embedding{{0.0f, 1.0f, 0.0f, 0.0f}, "m2"}}};
    e.idempotency_key = "k-vec";
    e.priority = action_priority::tier1;
    p.actions = {e, plan.actions[2]};
    opt.index_blast_limit = 1;
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    const auto res = apply_plan(fx.store, p, wal, opt);
    CHECK(res.outcomes[0].status == action_status::applied);
    CHECK(res.outcomes[1].status == action_status::unapproved);
    CHECK(res.outcomes[1].reason ==
          "held for review: it would rewrite the index entries of 2 re-embedded records (they "
          "stay stale in the index until it is rebuilt) (2 index entries, more than the "
          "blast-radius threshold of 1); approve suspended work to run it");
    CHECK(idx.partial.empty());
  }
}

TEST_CASE("flat index: file round trip, exact cosine search, and bad files as errors") {
  scratch_dir dir("flat-index");
  const fs::path p = dir.path / "ix.jsonl";
  const auto store = alarm_store();
  // built from the store: the 3 live records (the archived one is left out), dimension 2, m1
  const auto built = examples::flat_index::build(store);
  CHECK(built.ids() == std::vector<std::string>{"a1", "a2", "a3"});
  CHECK(built.dimension() == 2);
  CHECK(built.embedding_version() == "m1");
  built.save(p);
  const auto back = examples::flat_index::load(p);
  CHECK(back.ids() == built.ids());
  CHECK(back.check(expected_index(store)).consistent);  // the floats read back bit for bit
  // query (1,0): cosines a1 1, a3 0.6, a2 0
  const auto hits = back.search(std::vector<float>{1.0f, 0.0f}, 2);
  REQUIRE(hits.size() == 2);
  CHECK(hits[0].first == "a1");
  CHECK(hits[0].second == doctest::Approx(1.0));
  CHECK(hits[1].first == "a3");
  CHECK(hits[1].second == doctest::Approx(0.6).epsilon(1e-6));
  auto code_of = [](const fs::path& f) {
    try {
      (void)examples::flat_index::load(f);
    } catch (const memhealth::error& e) {
      return std::make_pair(e.code(), std::string(e.what()));
    }
    return std::make_pair(error_code::precondition, std::string("no error"));
  };
  const auto header =
      std::string("{\"memhealth_flat_index\":1,\"dimension\":2,\"embedding_version\":\"m1\"}\n");
  std::ofstream(dir.path / "long.jsonl") << header << "{\"id\":\"x\",\"vector\":[1,2,3]}\n";
  auto [c1, m1] = code_of(dir.path / "long.jsonl");
  CHECK(c1 == error_code::parse);
  CHECK(m1.find("long.jsonl:2: vector of length 3") != std::string::npos);
  std::ofstream(dir.path / "twice.jsonl")
      << header << "{\"id\":\"x\",\"vector\":[1,2]}\n{\"id\":\"x\",\"vector\":[2,1]}\n";
  auto [c2, m2] = code_of(dir.path / "twice.jsonl");
  CHECK(c2 == error_code::parse);
  CHECK(m2.find("twice.jsonl:3: id 'x' given twice") != std::string::npos);
  std::ofstream(dir.path / "nohead.jsonl") << "{\"id\":\"x\",\"vector\":[1,2]}\n";
  CHECK(code_of(dir.path / "nohead.jsonl").first == error_code::parse);
  CHECK(code_of(dir.path / "missing.jsonl").first == error_code::io);
  // an index of another model version and dimension: both named
  examples::flat_index other;
  other.upsert("a1", {1.0f, 0.0f, 0.0f});
  const auto c = other.check(expected_index(store));
  CHECK_FALSE(c.consistent);
  REQUIRE(c.problems.size() == 4);
  CHECK(c.problems[0] == "dimension 3, the store's is 2");
  CHECK(c.problems[1] == "model version '', the store's is 'm1'");
  CHECK(c.problems[2] == "2 live records not in the index");
  CHECK(c.problems[3] == "1 vectors differ from the store's");
  // the ids behind those counts: a2 and a3 not in the index, a1's vector differs (3 floats, the
  // store's 2); the archived record's id added to the index is a ghost; a limit cuts each list
  auto named = other.ids_of_problems(expected_index(store));
  CHECK(named.missing == std::vector<std::string>{"a2", "a3"});
  CHECK(named.stale == std::vector<std::string>{"a1"});
  CHECK(named.extra.empty());
  other.upsert("old", {0.0f, 0.0f, 1.0f});
  named = other.ids_of_problems(expected_index(store), 1);
  CHECK(named.missing == std::vector<std::string>{"a2"});
  CHECK(named.extra == std::vector<std::string>{"old"});
  CHECK(named.stale == std::vector<std::string>{"a1"});
}

TEST_CASE("compact_wal: a log holding re-embeddings keeps its old vectors at least 14 days") {
  reembed_fixture fx;
  scratch_dir dir("compact-reembed");
  const fs::path path = dir.path / "run.wal";
  {
    wal_writer wal(path, wal_sync::none);
    apply_options opt;
    opt.approve_tier3 = true;
    opt.embed = unit_x;
    apply_plan(fx.store, fx.plan("m2"), wal, opt);
  }
  const utc_time created = parse_timestamp(read_wal_file(path).created_at)->instant;
  wal_compact_options o;
  o.retention = std::chrono::days{7};
  o.allow_short_retention = true;
  o.dry_run = true;
  const auto young = compact_wal(path, created + std::chrono::days{10}, o);
  CHECK(young.refused.find("old vectors") != std::string::npos);
  CHECK(young.old_vectors_kept == 3);
  const auto old = compact_wal(path, created + std::chrono::days{15}, o);
  CHECK(old.refused.empty());
  CHECK(old.old_vectors_kept == 3);
}

TEST_CASE("read_plan: a store or other JSON given as a plan is 'not a plan file', error(parse)") {
  const auto refused = [](const std::string& text, const std::string& why) {
    try {
      (void)parse_plan(text, "s.jsonl");
      FAIL("accepted as a plan: " << text);
    } catch (const error& e) {
      CHECK(e.code() == error_code::parse);
      CHECK_MESSAGE(std::string(e.what()).find("read_plan: 's.jsonl' is not a plan file (" + why) !=
                        std::string::npos,
                    e.what());
      CHECK(std::string(e.what()).find("json.exception") == std::string::npos);
    }
  };
  // a store of two records, and of one
  refused("{\"id\":\"a\",\"content\":\"x\"}\n{\"id\":\"b\",\"content\":\"y\"}\n",
          "its first line is a memory record: is it a store?");
  refused("{\"id\":\"a\",\"content\":\"x\"}\n", "its first line is a memory record");
  refused("{\"x\":1}\n", "its first line is JSON without \"actions\" or \"schema_version\"");
  refused("[1,2]\n", "its first line is JSON without");
  // an indented document (first line "{") without actions; text that is not JSON
  refused("{\n  \"x\": 1\n}\n", "a JSON document without \"actions\"");
  refused("{\n  not json\n", "not JSON: ");
  // an indented plan of schema_version 1 still reads
  CHECK(parse_plan(plan_to_json(repair_plan{}).dump(2)) == repair_plan{});
}

TEST_CASE("plan JSON: detection options round-trip, absent means empty") {
  repair_plan p;
  p.detection.now = parse_timestamp("2024-07-15T00:00:00Z")->instant;
  p.detection.schema = "data/s.json";
  p.detection.threshold = 0.92f;
  const auto j = plan_to_json(p);
  CHECK(j.at("detection").dump() ==
        R"({"now":"2024-07-15T00:00:00.000Z","schema":"data/s.json","threshold":"0.92"})");
  CHECK(plan_from_json(j) == p);
  repair_plan q;
  const auto jq = plan_to_json(q);
  CHECK_FALSE(jq.contains("detection"));
  CHECK(plan_from_json(jq).detection.empty());
  auto bad = j;
  bad["detection"]["now"] = 5;
  CHECK_THROWS_AS(plan_from_json(bad), error);
}

TEST_CASE(
    "plan JSON: a plan's detection strings read into typed fields and write back the same bytes") {
  // As `memhealth plan` has always written it (keys sorted), plus a key of another tool.
  const std::string text =
      R"({"dim":"384","extra_key":"kept","now":"2024-07-15T00:00:00.000Z","schema":"/data/sample_schema.json",)"
      R"("schema_fnv1a64":"c0fb9f84cb6afba0","threshold":"0.9","window":"7d"})";
  const auto d = detection_from_json(nlohmann::json::parse(text));
  CHECK(d.threshold == 0.9f);
  CHECK(d.window == "7d");
  CHECK(d.schema == "/data/sample_schema.json");
  CHECK(d.schema_fnv1a64 == 0xc0fb9f84cb6afba0ULL);
  CHECK(d.now == parse_timestamp("2024-07-15T00:00:00Z")->instant);
  CHECK(d.dim == 384);
  CHECK(d.other == std::map<std::string, std::string>{{"extra_key", "kept"}});
  CHECK(detection_to_json(d).dump() == text);
  CHECK(detection_to_json(detection_provenance{}).dump() == "{}");
  CHECK(detection_provenance{}.empty());
  auto message = [](const char* json) {
    try {
      (void)detection_from_json(nlohmann::json::parse(json));
    } catch (const error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(message(R"({"threshold":"high"})").find("/detection/threshold: expected a number") !=
        std::string::npos);
  CHECK(message(R"({"dim":"-3"})").find("/detection/dim") != std::string::npos);
  CHECK(message(R"({"schema_fnv1a64":"c0fb9f84cb6afba0ff"})").find("/detection/schema_fnv1a64") !=
        std::string::npos);
  CHECK(message(R"({"now":"yesterday"})").find("/detection/now: expected an ISO-8601 time") !=
        std::string::npos);
  CHECK(message(R"(["now"])").find("/detection: expected an object") != std::string::npos);
}

TEST_CASE(
    "repair history: the third proposal over the same before-images is held, whatever its key") {
  scratch_dir dir("proposals");
  store_t store = make_store(2);
  const memory_record g0 = store.extract(0);
  memory_repair_history hist;
  // a down-weight whose key changes every run (its weight is computed from the clock)
  const auto weight = [](std::string key, const char* id, double w) {
    repair_action a;
    a.type = "downweight";
    a.tier = 1;
    a.automation = automation::automatic;
    a.targets = {id};
    a.edits.push_back({id, edit_set_weight{w}});
    a.idempotency_key = std::move(key);
    return a;
  };
  int runs = 0;
  const auto run = [&](const repair_action& a) {
    repair_plan p;
    p.actions.push_back(a);
    wal_writer w(dir.path / ("r" + std::to_string(++runs) + ".wal"), wal_sync::none);
    apply_options o;
    o.history = &hist;
    return apply_plan(store, p, w, o);
  };
  // runs 1 and 2 apply it; another writer puts g0 back into the same image after each
  CHECK(run(weight("w-1", "g0", 0.5)).applied == std::vector<std::string>{"w-1"});
  (void)store.restore(0, g0);
  CHECK(run(weight("w-2", "g0", 0.45)).applied == std::vector<std::string>{"w-2"});
  (void)store.restore(0, g0);
  std::vector<repair_image_note> before{{"g0", repair_image_checksum(to_json(g0))}};
  CHECK(hist.proposals(repair_proposal_key("downweight", before)) == 2);
  // run 3: proposed a third time over that image: held (manual queue), nothing written
  const auto r3 = run(weight("w-3", "g0", 0.4));
  CHECK(r3.failed == std::vector<std::string>{"w-3"});
  CHECK(r3.outcomes[0].reason.find("proposed again over the same before-images, after 2 "
                                   "applications") != std::string::npos);
  CHECK(!store.record(0).effective_weight);
  CHECK(to_json(store.extract(0)) == to_json(g0));
  CHECK(hist.manual_queue() == std::set<std::string>{"w-3"});
  // and held in the next run too (the history's manual queue)
  CHECK(run(weight("w-3", "g0", 0.4)).failed == std::vector<std::string>{"w-3"});
  // another record, and another type over g0's image, have counts of their own
  CHECK(run(weight("w-g1", "g1", 0.5)).applied == std::vector<std::string>{"w-g1"});
  CHECK(repair_proposal_key("downweight", before) != repair_proposal_key("archive", before));
  // the key does not depend on the order of the records
  const std::vector<repair_image_note> ab{{"a", 1}, {"b", 2}}, ba{{"b", 2}, {"a", 1}};
  CHECK(repair_proposal_key("t", ab) == repair_proposal_key("t", ba));
  CHECK(repair_proposal_key("t", ab).size() == 16);
}
// Found by a tester: a plan dropped a link to a missing record; the agent then added that
// record, and apply still dropped the link (now valid). The link's target is checked at apply.
TEST_CASE("apply skips dropping a link whose target the store holds now (stale), the rest run") {
  scratch_dir dir("links");
  std::vector<memory_record> recs{make_rec(0), make_rec(1), make_rec(2)};
  recs[0].links.related_ids = {"x1", "g2"};
  recs[1].links.supersedes = {"x2"};
  store_t store = store_t::from_records(std::move(recs));
  report rep;
  for (const auto& [id, field, target] : std::vector<std::array<std::string, 3>>{
           {"g0", "related_ids", "x1"}, {"g1", "supersedes", "x2"}}) {
    finding f;
    f.kind = std::string(finding_kinds::dangling_reference);
    f.detector = "structural";
    f.record_ids = {id};
    f.with(evidence_keys::field, field).with(evidence_keys::target, target);
    rep.findings.push_back(std::move(f));
  }
  const repair_plan plan = make_plan(store, rep, planner_options{});
  REQUIRE(plan.actions.size() == 2);
  // the agent adds x1 after the plan (a new record with no links of its own)
  memory_record x1 = make_rec(3);
  x1.id = "x1";
  store = store_t::from_records({store.extract(0), store.extract(1), store.extract(2), x1});
  wal_writer wal(dir.path / "run.wal", wal_sync::none);
  const auto res = apply_plan(store, plan, wal);
  REQUIRE(res.outcomes.size() == 2);
  for (std::size_t a = 0; a < 2; ++a) {
    const auto& o = res.outcomes[a];
    if (plan.actions[a].targets[0] == "g0") {
      CHECK(o.status == action_status::deferred);
      CHECK(o.stale());
      CHECK(o.reason ==
            "stale: the links it drops are no longer dangling (x1 in the store now): not run; "
            "make a new plan");
    } else {
      CHECK(o.status == action_status::applied);
    }
  }
  CHECK(store.record(*store.find("g0")).links.related_ids == std::vector<std::string>{"x1", "g2"});
  CHECK(store.record(*store.find("g0")).links.related_notes.empty());
  CHECK(store.record(*store.find("g1")).links.supersedes.empty());
}

// A merge or a conflict resolution retires records in favour of one it keeps. When the agent has
// archived that kept record since the plan (status is not in the decision digest), running it
// would leave no active record of the fact: stale. Unless the action sets the kept record's
// status itself (a person's resolution that revives it). (A tester: both cilantro memories ended
// up archived.)
TEST_CASE("apply skips a merge or resolution whose kept record is archived now (stale)") {
  scratch_dir dir("kept-archived");
  store_t store = make_store(4);
  const auto act = [](std::string type, std::vector<std::string> targets,
                      std::vector<record_edit> edits) {
    repair_action a;
    a.type = std::move(type);
    a.automation = automation::automatic;  // tier 1: runs without approval here
    a.tier = 1;
    a.targets = std::move(targets);
    a.edits = std::move(edits);
    a.idempotency_key = compute_idempotency_key(a);
    return a;
  };
  repair_plan plan;
  // g1 merged into g0; g3 loses a conflict to g2; g3 loses to g2 again, g2 revived by a person
  plan.actions.push_back(
      act(std::string(action_types::merge_duplicates), {"g0", "g1"},
          {{"g1", edit_set_duplicate_of{"g0"}}, {"g1", edit_set_status{"archived"}}}));
  plan.actions.push_back(
      act(std::string(action_types::resolve_conflict), {"g2", "g3"},
          {{"g2", edit_add_supersedes{{"g3"}}}, {"g3", edit_set_status{"archived"}}}));
  plan.actions.push_back(act(std::string(action_types::resolve_conflict), {"g2", "g3"},
                             {{"g2", edit_set_status{"active"}},
                              {"g2", edit_add_supersedes{{"g3"}}},
                              {"g3", edit_set_status{"archived"}}}));
  for (const char* id : {"g0", "g2"}) {  // the agent archives both kept records
    memory_record r = store.extract(*store.find(id));
    r.status = "archived";
    store.restore(*store.find(id), r);
  }
  wal_writer wal(dir.path / "run.wal", wal_sync::none);
  const auto res = apply_plan(store, plan, wal);
  CHECK(res.outcomes[0].stale());
  CHECK(res.outcomes[0].reason ==
        "stale: the record it keeps is archived now (g0): retiring the other would leave none "
        "active; not run; make a new plan");
  CHECK(res.outcomes[1].stale());
  CHECK(res.outcomes[1].reason.find("(g2)") != std::string::npos);
  CHECK(store.record(*store.find("g1")).status == "active");
  // the person's resolution revives g2 and retires g3
  CHECK(res.outcomes[2].status == action_status::applied);
  CHECK(store.record(*store.find("g2")).status == "active");
  CHECK(store.record(*store.find("g3")).status == "archived");
}

TEST_CASE("apply skips an action whose records changed since the plan (stale), the rest run") {
  scratch_dir dir("stale");
  store_t store = make_store(4, "actve");  // illegal status: one tier-1 action per record
  report rep;
  for (int i = 0; i < 4; ++i) {
    finding f;
    f.kind = std::string(finding_kinds::illegal_status);
    f.detector = "structural";
    f.record_ids = {"g" + std::to_string(i)};
    rep.findings.push_back(std::move(f));
  }
  const repair_plan plan = make_plan(store, rep, planner_options{});
  REQUIRE(plan.actions.size() == 4);
  std::map<std::string, std::size_t> action_of;  // target -> plan index
  for (std::size_t a = 0; a < plan.actions.size(); ++a) {
    const auto& act = plan.actions[a];
    REQUIRE(act.targets.size() == 1);
    action_of[act.targets[0]] = a;
    // the plan saw exactly the record it edits, as it was
    REQUIRE(act.seen.size() == 1);
    CHECK(act.seen.begin()->first == act.targets[0]);
    CHECK(act.seen.begin()->second ==
          record_decision_digest(store.record(*store.find(act.targets[0]))));
  }
  // the digests survive the plan's JSON and plan-file line forms
  CHECK(plan_from_json(plan_to_json(plan)).actions == plan.actions);
  std::string line;
  append_plan_action_line(line, plan.actions[0]);
  CHECK(line.find("\"seen\":{\"g") != std::string::npos);
  CHECK(parse_plan_action_line(line, "/actions/0") == plan.actions[0]);

  SUBCASE("g1's text and g2's updated_at changed: those two skipped, g0 and g3 applied") {
    memory_record g1 = store.extract(*store.find("g1"));
    g1.content = "Alice adopted a dog named Rex.";
    store.restore(*store.find("g1"), g1);
    memory_record g2 = store.extract(*store.find("g2"));
    g2.updated_at = parse_timestamp("2024-07-15T00:00:00Z");
    store.restore(*store.find("g2"), g2);
    const std::string g1_before = to_json(store.extract(*store.find("g1")));
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    const auto res = apply_plan(store, plan, wal);
    CHECK(res.applied.size() == 2);
    CHECK(res.deferred.size() == 2);
    CHECK(res.failed.empty());
    for (const char* id : {"g1", "g2"}) {
      const auto& o = res.outcomes[action_of.at(id)];
      CHECK(o.status == action_status::deferred);
      CHECK(o.stale());
      CHECK(o.attempts == 0);
      CHECK(o.reason == std::string("stale: its records changed since the plan (") + id +
                            "): not run; make a new plan");
    }
    for (const char* id : {"g0", "g3"}) {
      CHECK(res.outcomes[action_of.at(id)].status == action_status::applied);
      CHECK_FALSE(res.outcomes[action_of.at(id)].stale());
      CHECK(store.record(*store.find(id)).status == "pending_review");
    }
    // the changed records are untouched: byte for byte as the writer left them
    CHECK(to_json(store.extract(*store.find("g1"))) == g1_before);
    CHECK(store.record(*store.find("g1")).content == "Alice adopted a dog named Rex.");
    CHECK(store.record(*store.find("g2")).status == "actve");
    // nothing of the skipped actions is in the log: two intents, two commits
    std::size_t intents = 0;
    for (const auto& e : read_wal_file(dir.path / "run.wal").entries)
      intents += e.type == wal_frame_type::intent;
    CHECK(intents == 2);
  }
  SUBCASE("g1 is gone since the plan: its action is stale, not a missing id for the manual queue") {
    std::vector<memory_record> rest;
    for (std::size_t i = 0; i < store.size(); ++i)
      if (store.record(i).id != "g1") rest.push_back(store.extract(i));
    store_t without = store_t::from_records(std::move(rest));
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    const auto res = apply_plan(without, plan, wal);
    CHECK(res.failed.empty());
    CHECK(res.applied.size() == 3);
    const auto& o = res.outcomes[action_of.at("g1")];
    CHECK(o.stale());
    CHECK(o.attempts == 0);
    CHECK(o.reason == "stale: its records changed since the plan (g1): not run; make a new plan");
  }
  SUBCASE("status, weight and metadata are not in the digest: a rerun after a run is idempotent") {
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    CHECK(apply_plan(store, plan, wal).applied.size() == 4);
    const auto again = apply_plan(store, plan, wal);
    CHECK(again.skipped_already_applied.size() == 4);
    CHECK(again.deferred.empty());
  }
  SUBCASE("a plan without digests (an older memhealth's) applies as before, changes unseen") {
    repair_plan old = plan_from_json(plan_to_json(plan));
    for (auto& a : old.actions) a.seen.clear();
    CHECK_FALSE(plan_to_json(old)["actions"][0].contains("seen"));
    memory_record g1 = store.extract(*store.find("g1"));
    g1.content = "changed";
    store.restore(*store.find("g1"), g1);
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    CHECK(apply_plan(store, old, wal).applied.size() == 4);
  }
  SUBCASE("a \"seen\" value that is not 16 hex digits is a parse error naming it") {
    auto j = plan_to_json(plan);
    j["actions"][0]["seen"]["g0"] = "xyz";
    CHECK_THROWS_WITH_AS(plan_from_json(j), doctest::Contains("/actions/0/seen/g0"),
                         memhealth::error);
  }
}

}  // namespace repair_guard_test
