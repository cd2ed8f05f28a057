#pragma once
/// @file watch_repair.hpp
/// Repairs planned and applied by `memhealth watch` (issue 20): the findings of a poll become a
/// plan (`make_plan`, over the poll's snapshot), and the plan's actions go three ways:
/// - **tier 1** (`automation::automatic`) is applied at once;
/// - **tier 2** (`automation::confirm`) is applied at once when its action type is named in
///   `watch_repair_options::tier2_apply` (the reference's "confirmed by a rule"), else queued:
///   with a `tier2_veto_window` it is applied by a later run once the window has passed unless
///   a person rejected or deferred it ("or a short time window"); without one it waits for a
///   person. The window applies the due items in the plan's order (priority, highest first:
///   merges before down-weights), and never an item a person decided before (a deferral that
///   ended, a rejection or an approval proposed again: `review_items_past_veto`); an item that
///   failed for another reason than its records waits for a person from then on;
/// - **tier 3** (`automation::manual`), the index actions (`rebuild_index`, and `clean_index` /
///   `check_rebuild_index` from retrieval alarms: the watch has no index policy) and
///   every action of a suspended plan (blast radius over the threshold) go to the review queue
///   (`sqlite_state::queue_review`, table `review_items`), once per idempotency key, and once
///   per proposal (type, targets, their images) while an earlier item of it waits or was
///   rejected (a down-weight's key changes with the clock).
///
/// Applying runs `apply_plan` on the live store through a write-ahead log, one action at a time
/// and one store transaction per action, with the repair history of the state database (the
/// loop guard and the manual queue across polls). The live store must be transactional and its
/// writes compare-and-swap (`sqlite_store`): an action whose records the agent changed after the
/// poll's snapshot is skipped, never applied to content the plan did not see (see
/// `repair_watch_findings`). An action that ends `failed` (an error, a loop, held by the history)
/// is queued for review too.
///
/// After a crash nothing needs undoing: the store applies each action in one transaction (all
/// or nothing), and an action the log shows open is either in the store whole or not at all.
/// `memhealth recover` is not run on the watch's log (it would roll back what the agent wrote
/// since); the open intents stay in the log as an unfinished run.
///
/// **Review items that can no longer apply.** A pending item whose records changed in what it
/// rests on (`review_fingerprint`: content, scope, times, status; not the weight, links,
/// metadata or embedding that memhealth's own repairs write) or were retired since it was queued
/// is closed as "obsolete" at the start of each run (`close_changed_review_items`); an action
/// whose records this run's own repairs changed that way is not queued (planned again by the
/// next poll). A failed action done in an earlier run (the agent wrote the fault back) reopens
/// its approved review item for a person (`sqlite_state::queue_review`).
///
/// Every applied action's faults (the findings it addresses, `findings_addressed`) go to the
/// findings history (`sqlite_state::note_repaired_faults`, under `history_scope`), so the watch's
/// later runs measure whether they come back (store/run_history.hpp); a queued item keeps its
/// faults (`review_item::faults`), noted the same way when a person's approval, a resolution or
/// the veto window applies it.
///
/// Errors: `memhealth::error` from the log (io, busy, precondition for a log of another store),
/// the state database and the store propagate; whatever committed before stays committed and
/// logged.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <functional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memhealth/detect/finding.hpp"
#include "memhealth/live/sqlite_repair_history.hpp"
#include "memhealth/record/time.hpp"
#include "memhealth/repair/executor.hpp"
#include "memhealth/repair/finding_identity.hpp"
#include "memhealth/repair/plan_json.hpp"
#include "memhealth/repair/planner.hpp"
#include "memhealth/repair/store_identity.hpp"
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
  /// Planning (weights, metadata defaults, blast radius). By default the plan itself is not
  /// capped and never suspended: `max_records` caps what a run applies, and what is left is
  /// planned again by the next run. Set `planner.blast_radius_threshold` to suspend (queue
  /// whole) any plan touching more records.
  planner_options planner = [] {
    planner_options p;
    p.max_records_per_run = static_cast<std::size_t>(-1);
    p.blast_radius_threshold = static_cast<std::size_t>(-1);
    return p;
  }();
  /// Records changed per repair run (>= 1); the actions left are counted in `deferred`.
  std::size_t max_records = 200;
  /// Failures (across runs) after which an action goes to the manual queue, minus one.
  int retry_limit = 3;
  /// Name of the store in the repair history (its absolute path), so one state database can
  /// serve several stores.
  std::string history_scope;
  /// Veto window for tier-2 actions no rule applies (the reference's "confirmed by a rule or a
  /// short time window"): > 0 queues each with `apply_after_ms` = now + window, and a later run
  /// applies it once that time has come unless a person rejected it (`memhealth review reject`)
  /// or deferred it; 0 = such actions wait for a person.
  std::chrono::milliseconds tier2_veto_window{0};
};

/// What one repair run did.
struct watch_repair_result {
  std::size_t actions = 0;          ///< actions in the plan
  std::size_t applied = 0;          ///< applied and committed
  std::size_t already_applied = 0;  ///< the store already held every after-image (or no edits)
  std::size_t deferred = 0;         ///< over the record budget: planned again by a later run
  std::size_t failed = 0;           ///< failed or held (queued for review)
  /// skipped: the agent changed their records after the snapshot (planned again later)
  std::size_t changed_meanwhile = 0;
  std::size_t not_run = 0;  ///< left when `stop` returned true (planned again by the next run)
  /// actions the planner left out of the plan for the record budget (`max_records_per_run`)
  std::size_t plan_deferred = 0;
  std::size_t queued = 0;           ///< newly added to the review queue
  std::size_t records_changed = 0;  ///< records written
  /// tier-2 review items applied because their veto window passed without a veto
  std::size_t veto_applied = 0;
  /// such items that could not be applied (their records changed since: they stay pending and
  /// are queued again with a new window when the fault still holds; or the action failed)
  std::size_t veto_failed = 0;
  bool suspended = false;      ///< the plan's blast radius suspended it (everything queued)
  std::string suspend_reason;  ///< why
  /// "type key: reason" of each failed action newly queued for review
  std::vector<std::string> failures;
  /// "type key: reason" of each failed action whose review item already waits for a person
  /// (queued by an earlier run, not changed): the run still says why it did not apply it
  std::vector<std::string> failures_waiting;
  /// actions skipped, or not queued for review, because this run's own earlier repairs changed
  /// their records after the snapshot (planned again from the new content by a later poll)
  std::size_t changed_by_repairs = 0;
  /// pending review items closed as "obsolete" (their records changed or were retired since
  /// they were queued: `close_changed_review_items`)
  std::size_t closed = 0;
  /// veto-window items that failed for another reason than changed records: no longer applied
  /// by the window, they wait for a person (`sqlite_state::hold_review`)
  std::size_t veto_held = 0;
};

namespace detail {

/// The complete record at index i of `store`, embedding included (its image).
template <record_store S>
typename S::record_type whole_record(const S& store, std::size_t i) {
  if constexpr (mutable_record_store<S>) {
    return store.extract(i);
  } else {
    typename S::record_type r = store.record(i);
    const auto e = store.embedding(i);
    r.embedding.assign(e.begin(), e.end());
    return r;
  }
}

/// Checksum of what a review item's decision rests on, over the records `ids` of `store`: per
/// record its `record_decision_digest` (id, content, scope, created_at, updated_at) and its
/// status (a missing record counts as "-"). The effective weight, links, metadata and the
/// embedding are left out, as the executor's stale check leaves them out: memhealth's own
/// repairs write them (a down-weight applied by the watch must not make a merge or a conflict
/// over the same records look changed, nor reopen a rejection); a status change (a record
/// archived by a later repair, or set active again by the agent) counts. So a rejected item is
/// proposed again only when its records changed in what it was decided on.
template <record_store S>
std::string review_fingerprint(const S& store, const std::vector<std::string>& ids) {
  std::string all;
  for (const auto& id : ids) {
    const auto i = store.find(id);
    if (!i) {
      all += "-\n";
      continue;
    }
    const auto& rec = store.record(*i);
    all += std::to_string(record_decision_digest(rec));
    if constexpr (status_record<typename S::record_type>) {
      all += ' ';
      all += field::status(rec);
    }
    all += "\n";
  }
  return std::to_string(repair_image_checksum(all));
}

/// True when the records `ids` of `live` hold the images they have in `snapshot` (absent from
/// both counts as the same).
template <record_store S>
bool same_as_snapshot(const memory_store<>& snapshot, const S& live,
                      const std::vector<std::string>& ids) {
  for (const auto& id : ids) {
    const auto si = snapshot.find(id);
    const auto li = live.find(id);
    if (!si || !li) {
      if (si.has_value() != li.has_value()) return false;
      continue;
    }
    if (encode_image(whole_record(snapshot, *si)) != encode_image(whole_record(live, *li)))
      return false;
  }
  return true;
}

/// True for the failure of a compare-and-swap write (`sqlite_store`: another writer changed the
/// record after it was read).
inline bool concurrent_change(std::string_view reason) {
  return reason.find("changed by another writer") != std::string_view::npos;
}

/// The watch's repair history: the state database's, except that a concurrent change is not
/// counted as a failure (the action was not wrong; its records moved on).
class watch_history final : public repair_history {
 public:
  watch_history(sqlite_state& state, std::int64_t max_failures, const std::string& scope)
      : inner_(state, max_failures, scope, scope) {}
  std::optional<repair_history_entry> attempts(std::string_view key) override {
    return inner_.attempts(key);
  }
  void note_attempt(std::string_view key, bool ok, std::string_view err) override {
    if (!ok && concurrent_change(err)) return;
    inner_.note_attempt(key, ok, err);
  }
  void hold_for_review(std::string_view key, std::string_view reason) override {
    inner_.hold_for_review(key, reason);
  }
  bool replaced_image(std::string_view id, std::uint64_t sum) override {
    return inner_.replaced_image(id, sum);
  }
  void note_images(std::string_view key, std::span<const repair_image_note> images) override {
    inner_.note_images(key, images);
  }
  std::int64_t proposals(std::string_view proposal_key) override {
    return inner_.proposals(proposal_key);
  }
  void note_proposal(std::string_view proposal_key, std::string_view key, bool applied) override {
    inner_.note_proposal(proposal_key, key, applied);
  }

 private:
  sqlite_repair_history inner_;
};

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

/// The faults of `item` (`review_item::faults`, JSON [[finding_key, kind], ...]) as pairs;
/// none when it is empty or does not parse (an item queued before the column).
inline std::vector<std::pair<std::string, std::string>> review_item_faults(
    const review_item& item) {
  std::vector<std::pair<std::string, std::string>> out;
  const auto j = nlohmann::json::parse(item.faults, nullptr, false);
  if (!j.is_array()) return out;
  for (const auto& f : j)
    if (f.is_array() && f.size() == 2 && f[0].is_string() && f[1].is_string())
      out.emplace_back(f[0].get<std::string>(), f[1].get<std::string>());
  return out;
}

/// Notes the faults of applied review item `item` as repaired (`note_repaired_faults` under
/// `history_scope`, action key the item's), so repair success and uptime count a repair a
/// person approved or resolved, or the veto window applied, like the watch's own.
inline void note_item_faults(sqlite_state& state, const std::string& history_scope,
                             const review_item& item, utc_time now) {
  const auto faults = review_item_faults(item);
  state.note_repaired_faults(history_scope, item.key, faults, now);
}

/// The faults `a` addresses among `findings` (`findings_addressed`), as `review_item::faults`
/// JSON ([[finding_key, kind], ...]).
inline std::string review_faults_json(const repair_action& a,
                                      const std::vector<finding>& findings) {
  nlohmann::json j = nlohmann::json::array();
  for (const std::size_t i : findings_addressed(a, findings))
    j.push_back({finding_key(findings[i]), findings[i].kind});
  return j.dump();
}

/// What applying one review item did (`approve_review_items`, the veto window).
struct review_apply_outcome {
  std::string key;                                 ///< the item's key
  action_status status = action_status::deferred;  ///< the action's outcome
  std::size_t records_changed = 0;                 ///< records written
  std::string reason;                              ///< why it failed or was skipped
};

/// A review item's key as messages name it: "ID of STORE" for a key scoped by its store
/// (`STORE` '\x1f' `ID`, the watch's keys), else the key as it is; the unit separator never
/// reaches a message (a terminal shows it as nothing, running store and id together).
inline std::string review_item_label(std::string_view key) {
  const auto p = key.rfind('\x1f');
  if (p == std::string_view::npos) return std::string(key);
  return std::string(key.substr(p + 1)) + " of " + std::string(key.substr(0, p));
}

/// Reads the action a review item holds (plan JSON form). @throws error(parse) naming the key.
inline repair_action review_item_action(const review_item& item) {
  try {
    repair_plan empty;
    nlohmann::json j = plan_to_json(empty);
    j["actions"] = nlohmann::json::array({nlohmann::json::parse(item.action_json)});
    auto p = plan_from_json(j);
    if (p.actions.size() != 1) throw error(error_code::parse, "not one action");
    return std::move(p.actions.front());
  } catch (const std::exception& e) {
    throw error(error_code::parse, "review item " + review_item_label(item.key) +
                                       ": its stored action does not parse: " + e.what());
  }
}

/// Applies the actions of `items` one at a time through `wal` (tiers 2 and 3 approved, no
/// retry, the state's history under `history_scope`) and marks each that took effect
/// "approved" by `reviewer` for `note`; an item whose records changed since it was queued (its
/// fingerprint), or that a newer proposal superseded (status "superseded"), is not applied.
template <transactional_record_store S>
std::vector<review_apply_outcome> apply_review_items(S& live, const std::vector<review_item>& items,
                                                     wal_writer& wal, sqlite_state& state,
                                                     const std::string& history_scope,
                                                     std::string_view reviewer,
                                                     std::string_view note, utc_time now,
                                                     apply_options opt) {
  std::vector<repair_action> actions;
  for (const auto& it : items) actions.push_back(review_item_action(it));
  watch_history history(state, opt.retry_limit + 1, history_scope);
  opt.approve_tier2 = true;
  opt.approve_tier3 = true;
  opt.approve_suspended = true;  // each item was decided on its own
  opt.retry_limit = 0;           // never on content the reviewer did not see
  opt.history = &history;
  const auto now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  std::vector<review_apply_outcome> out;
  for (std::size_t k = 0; k < items.size(); ++k) {
    review_apply_outcome r{items[k].key, action_status::failed, 0, {}};
    if (items[k].status == "superseded" || items[k].status == "obsolete") {  // closed
      r.reason =
          items[k].decision_note.empty() ? "it is " + items[k].status : items[k].decision_note;
      out.push_back(std::move(r));
      continue;
    }
    // the fingerprint is over the targets as queued (`review_item::targets`, in their order): a
    // person's replacement action (`resolve_review_item`) may list them in another order
    std::vector<std::string> queued_targets = actions[k].targets;
    if (const auto t = nlohmann::json::parse(items[k].targets, nullptr, false);
        t.is_array() &&
        std::all_of(t.begin(), t.end(), [](const auto& x) { return x.is_string(); }))
      queued_targets = t.get<std::vector<std::string>>();
    if (!items[k].fingerprint.empty() &&
        review_fingerprint(live, queued_targets) != items[k].fingerprint) {
      r.reason =
          "its records changed since it was queued (memhealth review show displays them "
          "now; the watch proposes it again while it still holds)";
      out.push_back(std::move(r));
      continue;
    }
    repair_plan one;
    one.actions.push_back(actions[k]);
    const apply_result res = apply_plan(live, one, wal, opt);
    const auto& oc = res.outcomes.front();
    r.status = oc.status;
    r.records_changed = oc.records_changed;
    r.reason = oc.reason;
    if (oc.status == action_status::applied || oc.status == action_status::already_applied ||
        oc.status == action_status::noop)
      state.decide_review(r.key, "approved", reviewer, note, now_ms);
    // an applied repair counts in repair success like the watch's own (the findings history)
    if (oc.status == action_status::applied) note_item_faults(state, history_scope, items[k], now);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace detail

/// The pending tier-2 items of `history_scope` in `state` whose veto window has passed at
/// `now` (`review_item::apply_after_ms` in (0, now]) and that no person decided before (status
/// "pending", not a deferred item whose time came: a deferral ends pending for a person; not an
/// item a person rejected, deferred or approved before and that was proposed again:
/// `review_decided_by_person`), in the plan's order: by the action's priority, highest first
/// (merges 200 before down-weights 100), then oldest first. Items whose action does not parse
/// come last (applying them reports it).
inline std::vector<review_item> review_items_past_veto(const sqlite_state& state,
                                                       const std::string& history_scope,
                                                       utc_time now) {
  const auto now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  const std::string prefix = history_scope.empty() ? std::string() : history_scope + '\x1f';
  std::vector<std::pair<int, review_item>> due;
  for (auto& it : state.review_items("pending", 0))
    if (it.status == "pending" && it.apply_after_ms > 0 && it.apply_after_ms <= now_ms &&
        it.key.starts_with(prefix) && !review_decided_by_person(it.decided_by)) {
      int priority = -1;
      try {
        priority = detail::review_item_action(it).priority;
      } catch (const error&) {
      }
      due.emplace_back(priority, std::move(it));
    }
  std::stable_sort(due.begin(), due.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<review_item> out;
  out.reserve(due.size());
  for (auto& d : due) out.push_back(std::move(d.second));
  return out;
}

/// Closes the pending items of `history_scope` in `state` whose records changed in what they
/// were decided on since they were queued (`review_fingerprint` of `live` differs from the
/// item's; items without a fingerprint are left alone): status "obsolete" (`close_review`),
/// note "its records changed or were retired since it was queued (by the agent or a repair):
/// proposed again while its fault holds". Such an item can never be applied as queued (approving
/// it fails); the watch queues the fault again from the records as they are, when it holds.
/// @return the items closed.
template <record_store S>
std::size_t close_changed_review_items(const S& live, sqlite_state& state,
                                       const std::string& history_scope, utc_time now) {
  const auto now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  const std::string prefix = history_scope.empty() ? std::string() : history_scope + '\x1f';
  std::size_t closed = 0;
  for (const auto& it : state.review_items("pending", 0)) {
    if (it.fingerprint.empty() || !it.key.starts_with(prefix)) continue;
    std::vector<std::string> targets;
    if (const auto t = nlohmann::json::parse(it.targets, nullptr, false); t.is_array())
      for (const auto& x : t)
        if (x.is_string()) targets.push_back(x.get<std::string>());
    if (detail::review_fingerprint(live, targets) == it.fingerprint) continue;
    closed += state.close_review(it.key, "obsolete",
                                 "its records changed or were retired since it was queued (by "
                                 "the agent or a repair): proposed again while its fault holds",
                                 now_ms)
                  ? 1
                  : 0;
  }
  return closed;
}

/// Plans repairs for `findings` over `snapshot` (the poll's copy of the store) and carries them
/// out on `live` (the same store, open for writing) as the file comment says.
///
/// **Beside a writer.** An action runs only while its records in `live` are as the plan saw them
/// in `snapshot` (same image, embedding included): an action whose records the agent changed
/// since is skipped (`changed_meanwhile`) and planned again from the new content by a later poll,
/// never applied on top of the agent's write. Each action is applied on its own (`apply_plan` of
/// one action, no retry), right after that check; a change in between is caught by the store's
/// compare-and-swap write and counts the same way (not a failure: the repair history does not
/// count it against the action).
/// @tparam S a `transactional_record_store` of `memory_record` (`sqlite_store<>`).
/// @param wal the write-ahead log (opened for this store). @param state the state database
///        (history and review queue). @param now the clock (queue times).
/// @param stop polled between actions: when it returns true the run ends there (the rest is
///        counted in `not_run`), e.g. a SIGTERM handler's flag.
/// @throws as the file comment says.
template <transactional_record_store S>
watch_repair_result repair_watch_findings(const memory_store<>& snapshot,
                                          std::vector<finding> findings, S& live, wal_writer& wal,
                                          sqlite_state& state, const watch_repair_options& o,
                                          utc_time now, const std::function<bool()>& stop = {}) {
  static_assert(std::is_same_v<typename S::record_type, memory_record>,
                "repair_watch_findings: the live store's records must be memory_record");
  watch_repair_result res;
  const auto now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  // first the tier-2 items whose veto window passed without a veto (a person rejects or defers
  // one to stop it), in the plan's order (merges before down-weights)
  std::set<std::string, std::less<>> touched;  // records this run's repairs changed
  // "TYPE\x1fRECORD" for every action this run applied: the plan, made from the poll's snapshot
  // before them, proposes the same repair again (a down-weight's key follows the clock), and
  // queuing it would apply it twice (found by a tester: every stale record down-weighted twice
  // by the veto window, and counted twice in the repair history)
  std::set<std::string, std::less<>> repaired;
  const auto note_repaired = [&repaired](const repair_action& a) {
    for (const auto& id : a.targets) repaired.insert(a.type + '\x1f' + id);
  };
  if (auto due = review_items_past_veto(state, o.history_scope, now); !due.empty()) {
    apply_options vo;
    vo.batch_size = 1;
    const auto outs =
        detail::apply_review_items(live, due, wal, state, o.history_scope, "veto-window",
                                   "no veto within the window", now, vo);
    for (std::size_t k = 0; k < outs.size(); ++k) {
      const auto& out = outs[k];
      const bool ok = out.status == action_status::applied ||
                      out.status == action_status::already_applied ||
                      out.status == action_status::noop;
      ++(ok ? res.veto_applied : res.veto_failed);
      res.records_changed += out.records_changed;
      if (out.records_changed > 0) {
        const repair_action applied = detail::review_item_action(due[k]);
        touched.insert(applied.targets.begin(), applied.targets.end());
        note_repaired(applied);
      }
      // failed for another reason than its records (those are closed just below): a person
      // decides, the window does not try it again at every poll
      if (!ok && out.status == action_status::failed &&
          !out.reason.starts_with("its records changed since it was queued") &&
          state.hold_review(
              out.key,
              "not applied when its veto window passed (" + out.reason + "): a person decides",
              now_ms))
        ++res.veto_held;
    }
  }
  // pending items whose records changed or were retired since (by the agent, the veto window or
  // an earlier repair) can never be applied as queued: closed, proposed again while they hold
  res.closed += close_changed_review_items(live, state, o.history_scope, now);
  if (findings.empty()) return res;
  report r;
  r.findings = std::move(findings);
  repair_plan plan = make_plan(snapshot, r, o.planner);
  res.actions = plan.actions.size();
  res.suspended = plan.suspended;
  res.suspend_reason = plan.suspend_reason;
  for (const auto& note : plan.deferred) {  // "max_records_per_run N: K actions deferred in total"
    const auto at = note.find(" actions deferred in total");
    const auto colon = at == std::string::npos ? at : note.rfind(": ", at);
    if (note.starts_with("max_records_per_run") && colon != std::string::npos)
      res.plan_deferred = static_cast<std::size_t>(
          std::strtoull(note.substr(colon + 2, at - colon - 2).c_str(), nullptr, 10));
  }
  const auto scoped = [&](const std::string& key) {
    return sqlite_repair_history::scoped(o.history_scope, key);
  };
  const auto queue = [&](const repair_action& a, std::string reason, std::int64_t apply_after_ms,
                         bool fault_came_back) {
    auto item = detail::to_review_item(a, std::move(reason), now);
    item.key = scoped(item.key);
    item.apply_after_ms = apply_after_ms;
    item.fingerprint = detail::review_fingerprint(snapshot, a.targets);
    item.faults = detail::review_faults_json(a, r.findings);
    res.queued += state.queue_review(item, fault_came_back) ? 1 : 0;
  };
  // review items are queued after the run's own repairs: one whose records those changed (in
  // what `review_fingerprint` covers) was planned on content that is gone (it could never apply)
  // and is planned again by a later poll
  struct to_queue {
    const repair_action* a;
    std::string reason;
    std::int64_t apply_after_ms;
  };
  std::vector<to_queue> later;
  const auto enqueue = [&](const repair_action& a, std::string reason,
                           std::int64_t apply_after_ms = 0) {
    later.push_back({&a, std::move(reason), apply_after_ms});
  };
  const auto touches = [&](const repair_action& a) {
    return std::any_of(a.targets.begin(), a.targets.end(),
                       [&](const std::string& id) { return touched.contains(id); });
  };
  const auto repeats = [&](const repair_action& a) {  // the same repair of a record, again
    return std::any_of(a.targets.begin(), a.targets.end(), [&](const std::string& id) {
      return repaired.contains(a.type + '\x1f' + id);
    });
  };
  const auto queue_later = [&] {
    for (auto& q : later) {
      // changed by this run in what the item rests on (not only a weight): it could never be
      // applied as queued; or the same repair of one of its records this run already made
      if (repeats(*q.a) ||
          (touches(*q.a) && detail::review_fingerprint(live, q.a->targets) !=
                                detail::review_fingerprint(snapshot, q.a->targets))) {
        ++res.changed_by_repairs;
        continue;
      }
      queue(*q.a, std::move(q.reason), q.apply_after_ms, false);
    }
  };
  std::vector<repair_action> run;
  for (auto& a : plan.actions) {
    if (plan.suspended) {
      enqueue(a, "plan suspended: " + plan.suspend_reason);
    } else if (is_index_action(a.type)) {
      enqueue(a,
              a.type == action_types::rebuild_index
                  ? "index rebuild: the watch has no index policy"
                  : a.type + ": the watch has no index policy (memhealth apply --index runs it)");
    } else if (a.automation == automation::manual) {
      const bool critical =
          std::any_of(a.reasons.begin(), a.reasons.end(),
                      [](const std::string& why) { return why.starts_with("critical:"); });
      enqueue(a, critical ? "tier 3, critical: a person decides, before the other reviews"
                          : "tier 3: a person decides");
    } else if (a.automation == automation::confirm && !o.tier2_apply.contains(a.type) &&
               o.tier2_veto_window.count() > 0) {
      const auto at = now + o.tier2_veto_window;
      enqueue(a,
              "tier 2: applied at " + format_timestamp(timestamp{at, 0}) +
                  " unless vetoed (memhealth review reject) ([repair] tier2_veto_window)",
              std::chrono::duration_cast<std::chrono::milliseconds>(at.time_since_epoch()).count());
    } else if (a.automation == automation::confirm && !o.tier2_apply.contains(a.type)) {
      enqueue(a, "tier 2: no rule applies " + a.type + " at once ([repair] tier2_apply)");
    } else {
      run.push_back(std::move(a));
    }
  }
  if (run.empty()) {
    queue_later();
    return res;
  }
  detail::watch_history history(state, o.retry_limit + 1, o.history_scope);
  apply_options ao;
  ao.approve_tier2 = true;  // only the tier-2 types named by the rule are in `run`
  ao.approve_tier3 = false;
  ao.retry_limit = 0;  // a retry would apply the edit to content the plan never saw
  ao.batch_size = 1;
  ao.history = &history;
  // the faults an applied action repaired, to the findings history (a later run that finds one
  // again marks it recurred: repair success is measured by what does not come back)
  const auto note_faults = [&](const repair_action& act) {
    std::vector<std::pair<std::string, std::string>> faults;
    for (const std::size_t i : findings_addressed(act, r.findings))
      faults.emplace_back(finding_key(r.findings[i]), r.findings[i].kind);
    state.note_repaired_faults(o.history_scope, scoped(act.idempotency_key), faults, now);
  };
  std::size_t used = 0;
  for (std::size_t k = 0; k < run.size(); ++k) {
    const repair_action& a = run[k];
    if (stop && stop()) {
      res.not_run = run.size() - k;
      break;
    }
    if (used >= o.max_records) {
      res.deferred += run.size() - k;
      break;
    }
    if (!detail::same_as_snapshot(snapshot, live, a.targets)) {
      ++(touches(a) ? res.changed_by_repairs : res.changed_meanwhile);
      continue;
    }
    repair_plan one;
    one.detection = plan.detection;
    one.actions.push_back(a);
    ao.max_records = o.max_records - used;
    const apply_result out = apply_plan(live, one, wal, ao);
    for (const auto& oc : out.outcomes) {
      switch (oc.status) {
        case action_status::applied:
          ++res.applied;
          res.records_changed += oc.records_changed;
          used += oc.records_changed;
          note_faults(a);
          note_repaired(a);
          for (const auto& e : a.edits) touched.insert(e.record_id);
          touched.insert(a.targets.begin(), a.targets.end());
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
          if (detail::concurrent_change(oc.reason)) {
            ++(touches(a) ? res.changed_by_repairs : res.changed_meanwhile);
            break;
          }
          ++res.failed;
          const std::size_t before = res.queued;
          // done before and failed now: the fault came back after the repair (the agent wrote
          // it back): an approved item of it is reopened for a person
          queue(a, "failed: " + oc.reason, 0, oc.reason.starts_with("done in an earlier run"));
          (res.queued > before ? res.failures : res.failures_waiting)
              .push_back(a.type + " " + a.idempotency_key + ": " + oc.reason);
          break;
      }
    }
  }
  queue_later();
  return res;
}

}  // namespace memhealth
