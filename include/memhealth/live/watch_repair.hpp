#pragma once
/// @file watch_repair.hpp
/// Repairs planned and applied by `memhealth watch` (issue 20): the findings of a poll become a
/// plan (`make_plan`, over the poll's snapshot), and the plan's actions go three ways:
/// - **tier 1** (`automation::automatic`) is applied at once;
/// - **tier 2** (`automation::confirm`) is applied at once when its action type is named in
///   `watch_repair_options::tier2_apply` (the reference's "confirmed by a rule"), else queued;
/// - **tier 3** (`automation::manual`), `rebuild_index` (the watch has no index policy) and
///   every action of a suspended plan (blast radius over the threshold) go to the review queue
///   (`sqlite_state::queue_review`, table `review_items`), once per idempotency key.
///
/// Applying runs `apply_plan` on the live store through a write-ahead log, one store
/// transaction per action, with the repair history of the state database (retries, the loop
/// guard and the manual queue across polls). The live store must be transactional and its
/// writes compare-and-swap (`sqlite_store`): a record the agent changed after it was read is
/// never overwritten, the action is retried on the new content. An action that ends `failed`
/// (attempts exhausted, a loop, held by the history) is queued for review too.
///
/// `recover_watch_log` finishes what a crash left open in the log, at start.
///
/// Errors: `memhealth::error` from the log (io, busy, precondition for a log of another store),
/// the state database and the store propagate; whatever committed before stays committed and
/// logged.

#include <algorithm>
#include <cstddef>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memhealth/detect/finding.hpp"
#include "memhealth/live/sqlite_repair_history.hpp"
#include "memhealth/record/time.hpp"
#include "memhealth/repair/executor.hpp"
#include "memhealth/repair/plan_json.hpp"
#include "memhealth/repair/planner.hpp"
#include "memhealth/repair/rollback.hpp"
#include "memhealth/repair/wal_read.hpp"
#include "memhealth/repair/wal_writer.hpp"
#include "memhealth/store/memory_store.hpp"
#include "memhealth/store/sqlite_state.hpp"
#include "memhealth/store/store.hpp"

namespace memhealth {

/// How the watch repairs (see the file comment).
struct watch_repair_options {
  /// Tier-2 action types applied without a person (e.g. "merge_duplicates", "downweight",
  /// "resolve_conflict"); the others are queued for review.
  std::set<std::string, std::less<>> tier2_apply;
  planner_options planner{};       ///< planning (blast radius, record budget, weights)
  std::size_t max_records = 1000;  ///< records changed per repair run; the rest wait (deferred)
  int retry_limit = 3;             ///< retries after a failed attempt, per run
  std::size_t batch_size = 16;     ///< actions per group commit of the log
  /// Name of the store in the repair history (its absolute path), so one state database can
  /// serve several stores.
  std::string history_scope;
};

/// What one repair run did.
struct watch_repair_result {
  std::size_t actions = 0;            ///< actions in the plan
  std::size_t applied = 0;            ///< applied and committed
  std::size_t already_applied = 0;    ///< the store already held every after-image (or no edits)
  std::size_t deferred = 0;           ///< over the record budget: planned again by a later run
  std::size_t failed = 0;             ///< failed or held (queued for review)
  std::size_t queued = 0;             ///< newly added to the review queue
  std::size_t records_changed = 0;    ///< records written
  bool suspended = false;             ///< the plan's blast radius suspended it (everything queued)
  std::string suspend_reason;         ///< why
  std::vector<std::string> failures;  ///< "type key: reason" of each failed action
};

namespace detail {

inline review_item to_review_item(const repair_action& a, std::string reason, utc_time now) {
  review_item it;
  it.key = a.idempotency_key;
  it.type = a.type;
  it.tier = a.tier;
  it.targets = nlohmann::json(a.targets).dump();
  repair_plan one;
  one.actions.push_back(a);
  it.action_json = plan_to_json(one)["actions"][0].dump();
  it.reason = std::move(reason);
  it.queued_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  return it;
}

}  // namespace detail

/// Plans repairs for `findings` over `snapshot` (the poll's copy of the store) and carries them
/// out on `live` (the same store, open for writing) as the file comment says.
/// @tparam S a `transactional_record_store` of `memory_record` (`sqlite_store<>`).
/// @param wal the write-ahead log of the run (opened for this store; the caller keeps it or
///        opens one per run). @param state the state database (history and review queue).
/// @param now the clock (queue times). @throws as the file comment says.
template <transactional_record_store S>
watch_repair_result repair_watch_findings(const memory_store<>& snapshot,
                                          std::vector<finding> findings, S& live, wal_writer& wal,
                                          sqlite_state& state, const watch_repair_options& o,
                                          utc_time now) {
  static_assert(std::is_same_v<typename S::record_type, memory_record>,
                "repair_watch_findings: the live store's records must be memory_record");
  watch_repair_result res;
  if (findings.empty()) return res;
  report r;
  r.findings = std::move(findings);
  repair_plan plan = make_plan(snapshot, r, o.planner);
  res.actions = plan.actions.size();
  res.suspended = plan.suspended;
  res.suspend_reason = plan.suspend_reason;
  const auto scoped = [&](const std::string& key) {
    return sqlite_repair_history::scoped(o.history_scope, key);
  };
  const auto queue = [&](const repair_action& a, std::string reason) {
    auto item = detail::to_review_item(a, std::move(reason), now);
    item.key = scoped(item.key);
    res.queued += state.queue_review(item) ? 1 : 0;
  };
  repair_plan run;
  run.detection = plan.detection;
  for (auto& a : plan.actions) {
    if (plan.suspended) {
      queue(a, "plan suspended: " + plan.suspend_reason);
    } else if (a.type == action_types::rebuild_index) {
      queue(a, "index rebuild: the watch has no index policy");
    } else if (a.automation == automation::manual) {
      queue(a, "tier 3: a person decides");
    } else if (a.automation == automation::confirm && !o.tier2_apply.contains(a.type)) {
      queue(a, "tier 2: no rule applies " + a.type + " at once ([repair] tier2_apply)");
    } else {
      run.actions.push_back(std::move(a));
    }
  }
  if (run.actions.empty()) return res;
  sqlite_repair_history history(state, o.retry_limit + 1, o.history_scope, o.history_scope);
  apply_options ao;
  ao.approve_tier2 = true;  // only the tier-2 types named by the rule are in `run`
  ao.approve_tier3 = false;
  ao.max_records = o.max_records;
  ao.retry_limit = o.retry_limit;
  ao.batch_size = std::max<std::size_t>(1, o.batch_size);
  ao.history = &history;
  const apply_result out = apply_plan(live, run, wal, ao);
  for (const auto& oc : out.outcomes) {
    const repair_action& a = run.actions[oc.action];
    switch (oc.status) {
      case action_status::applied:
        ++res.applied;
        res.records_changed += oc.records_changed;
        break;
      case action_status::already_applied:
      case action_status::noop:
        ++res.already_applied;
        break;
      case action_status::deferred:
        ++res.deferred;
        break;
      case action_status::unapproved:  // not expected: only approved actions are in `run`
      case action_status::failed:
        ++res.failed;
        res.failures.push_back(a.type + " " + a.idempotency_key + ": " + oc.reason);
        queue(a, "failed: " + oc.reason);
        break;
    }
  }
  return res;
}

/// At start: finishes what a crash left open in the watch's log at `wal_path` (open actions are
/// undone from their before-images; see `recover`). A missing or empty log is nothing to do.
/// @return the recovery result (empty when there was no log). @throws error(parse/schema) for
///         a file that is not a memhealth log, error(precondition) for a log of another store,
///         and what `recover` throws.
template <transactional_record_store S>
recover_result recover_watch_log(S& live, const std::filesystem::path& wal_path,
                                 std::string database_id) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(wal_path, ec) ||
      std::filesystem::file_size(wal_path, ec) == 0)
    return {};
  const wal_contents log = read_wal_file(wal_path);
  recover_options ro;
  ro.open_actions = open_action_policy::undo;
  ro.database_id = std::move(database_id);
  return recover(live, log, ro);
}

}  // namespace memhealth
