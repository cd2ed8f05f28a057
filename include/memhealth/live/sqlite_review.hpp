#pragma once
/// @file sqlite_review.hpp
/// Working the review queue (issue 21, first part): the items `memhealth watch` queued in the
/// state database (`sqlite_state::queue_review`, table `review_items`) are approved, rejected or
/// deferred by a named person with a reason (`memhealth review`).
///
/// `approve_review_items` applies approved items through the write-ahead log like any action
/// (`apply_plan` of one action at a time, tiers 2 and 3 approved, the state database's repair
/// history, one store transaction per action on a transactional store, no retry), and records
/// the decision only for the items that took effect (applied, or already holding their
/// after-images). An item whose records changed since it was queued (its `fingerprint`), or
/// whose action failed, stays pending with the reason returned: a person approved what they saw,
/// not what the records became. `reject` and `defer` are
/// `sqlite_state::decide_review`; a rejected item is not proposed again until its records change
/// (its fingerprint, see `queue_review`).
///
/// `resolve_review_item` resolves a conflict's item by a person's choice of the winner (and,
/// optionally, a new text for it): the item's action is replaced by a `resolve_conflict` action
/// (`make_resolution_action`) applied as `approve_review_items` applies one, through the same
/// path (`detail::apply_review_items`).
///
/// Errors: `memhealth::error` from the log, the store and the state database propagate (what
/// committed before stays committed and logged); an item whose stored action does not parse is
/// error(parse) naming its key, before anything is applied.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memhealth/detect/secrets.hpp"
#include "memhealth/live/sqlite_repair_history.hpp"
#include "memhealth/live/watch_repair.hpp"
#include "memhealth/record/time.hpp"
#include "memhealth/repair/executor.hpp"
#include "memhealth/repair/idempotency.hpp"
#include "memhealth/repair/plan_json.hpp"
#include "memhealth/repair/wal_writer.hpp"
#include "memhealth/store/sqlite_state.hpp"
#include "memhealth/store/store.hpp"

namespace memhealth {

/// What approving one review item did.
using review_outcome = detail::review_apply_outcome;

/// Reads the action a review item holds (plan JSON form). @throws error(parse) naming the key.
using detail::review_item_action;

/// Applies the actions of `items` to `live` through `wal` (tiers 2 and 3 approved: a person
/// approved them) with the repair history of `state` under `history_scope`, and marks each item
/// that took effect "approved" by `reviewer` for `note` at `now`. An item whose action the
/// history holds (state "manual": failed, a loop, a third proposal over the same before-images;
/// or "done" in an earlier run) is released first (`sqlite_state::release_action`, recorded with
/// `reviewer` and "approved in review: " + `note`), so the approval runs it.
/// @param opt apply options to start from (embedder, index policy, limits); approvals and the
///        history are set here. @return one outcome per item, in order.
/// @throws error(invalid_argument) for an empty reviewer or note; as the file comment says.
template <transactional_record_store S>
std::vector<review_outcome> approve_review_items(S& live, const std::vector<review_item>& items,
                                                 wal_writer& wal, sqlite_state& state,
                                                 const std::string& history_scope,
                                                 std::string_view reviewer, std::string_view note,
                                                 utc_time now, apply_options opt = {}) {
  if (reviewer.empty() || note.empty())
    throw error(error_code::invalid_argument,
                "approve_review_items: a reviewer name and a reason are required");
  // a person's approval releases what the repair history holds the action for (failed, a loop,
  // a third proposal, done before): recorded as a release by the same reviewer
  const auto now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  for (const auto& it : items)
    if (const auto a = state.attempt(it.key); a && a->state != "retry")
      (void)state.release_action(it.key, reviewer, "approved in review: " + std::string(note),
                                 now_ms);
  return detail::apply_review_items(live, items, wal, state, history_scope, reviewer, note, now,
                                    std::move(opt));
}

/// True when `a` (the action a review item holds) is about a conflict: a `resolve_conflict`
/// action, or a `send_to_review` one planned for a conflict finding (a reason "conflict: ...").
inline bool is_conflict_action(const repair_action& a) {
  if (a.type == action_types::resolve_conflict) return true;
  if (a.type != action_types::send_to_review) return false;
  return std::any_of(a.reasons.begin(), a.reasons.end(),
                     [](const std::string& r) { return r.starts_with("conflict: "); });
}

/// The `resolve_conflict` action a person's resolution of a conflict's review item stands for,
/// built from the records of `live` as they are now: tier 3, manual; targets `keep_id` first,
/// then the item's other targets in their order; edits, in order: with `new_text`,
/// `edit_set_content(*new_text)` and `edit_replace_embedding({}, embed_version)` on the kept
/// record (the executor embeds the new text); `edit_add_supersedes(others)` on it, and
/// `edit_set_status("active")` when it is "pending_review" now; `edit_set_status("archived")` on
/// each other target. Blast radius: every target and their scopes (those found in `live`);
/// reasons: the item's, then "resolved by REVIEWER: KEEP wins" (", text edited"); the
/// idempotency key of the result (`compute_idempotency_key`).
/// @throws error(parse) when the item's action does not parse; error(invalid_argument) when it
///         is not a conflict's (`is_conflict_action`), has fewer than two targets, or `keep_id`
///         is not one of them.
template <record_store S>
repair_action make_resolution_action(const S& live, const review_item& item,
                                     const std::string& keep_id,
                                     const std::optional<std::string>& new_text,
                                     std::string_view embed_version, std::string_view reviewer) {
  const repair_action queued = review_item_action(item);
  if (!is_conflict_action(queued))
    throw error(error_code::invalid_argument,
                "review item " + detail::review_item_label(item.key) + " is a " + queued.type +
                    " action, not a conflict's: only a conflict is resolved by choosing a winner "
                    "(approve, reject or defer it)");
  std::vector<std::string> targets;
  for (const auto& t : queued.targets)
    if (std::find(targets.begin(), targets.end(), t) == targets.end()) targets.push_back(t);
  if (targets.size() < 2)
    throw error(error_code::invalid_argument,
                "review item " + detail::review_item_label(item.key) +
                    " names fewer than two records: nothing to choose from");
  if (std::find(targets.begin(), targets.end(), keep_id) == targets.end()) {
    std::string names;
    for (const auto& t : targets) names += (names.empty() ? "" : ", ") + t;
    throw error(error_code::invalid_argument,
                "record '" + keep_id + "' is not a target of review item " +
                    detail::review_item_label(item.key) + " (its records: " + names + ")");
  }
  std::vector<std::string> others;
  for (const auto& t : targets)
    if (t != keep_id) others.push_back(t);
  repair_action a;
  a.type = std::string(action_types::resolve_conflict);
  a.tier = 3;
  a.automation = automation::manual;
  a.priority = queued.priority;
  a.rollback_method = "restore_before_images";
  a.targets.push_back(keep_id);
  a.targets.insert(a.targets.end(), others.begin(), others.end());
  if (new_text) {
    a.edits.push_back({keep_id, edit_set_content{*new_text}});
    a.edits.push_back({keep_id, edit_replace_embedding{{}, std::string(embed_version)}});
  }
  a.edits.push_back({keep_id, edit_add_supersedes{others}});
  if constexpr (status_record<typename S::record_type>)
    if (const auto i = live.find(keep_id);
        i && field::status(live.record(*i)) == to_string(record_status::pending_review))
      a.edits.push_back({keep_id, edit_set_status{std::string(to_string(record_status::active))}});
  for (const auto& o : others)
    a.edits.push_back({o, edit_set_status{std::string(to_string(record_status::archived))}});
  a.blast.records = a.targets.size();
  if constexpr (scoped_record<typename S::record_type>) {
    for (const auto& t : a.targets)
      if (const auto i = live.find(t)) a.blast.scopes.emplace_back(field::scope(live.record(*i)));
    std::sort(a.blast.scopes.begin(), a.blast.scopes.end());
    a.blast.scopes.erase(std::unique(a.blast.scopes.begin(), a.blast.scopes.end()),
                         a.blast.scopes.end());
  }
  a.reasons = queued.reasons;
  a.reasons.push_back("resolved by " + std::string(reviewer) + ": " + keep_id + " wins" +
                      (new_text ? ", text edited" : ""));
  a.idempotency_key = compute_idempotency_key(a);
  return a;
}

/// Refuses a new text for a conflict's kept record: empty or only spaces, or holding a secret.
/// @throws error(invalid_argument) naming why (a secret by its rule, the value masked:
///         `find_secrets`, `mask_secret`); never for nullopt.
inline void check_resolution_text(const std::optional<std::string>& new_text) {
  if (!new_text) return;
  if (new_text->find_first_not_of(" \t\r\n\f\v") == std::string::npos)
    throw error(error_code::invalid_argument,
                "the new text is empty: a memory needs content (resolve without a text keeps the "
                "record's own)");
  if (const auto found = find_secrets(*new_text); !found.empty())
    throw error(error_code::invalid_argument,
                "the new text holds a secret (" + std::string(found.front().rule) + ": " +
                    mask_secret(std::string_view(*new_text).substr(
                        found.front().begin, found.front().end - found.front().begin)) +
                    "): a secret is never written to memory; remove it and resolve again");
}

/// Every check `resolve_review_item` makes before it changes anything, and the action it would
/// apply (`make_resolution_action`), so a caller can refuse before it opens its log.
/// @throws as `resolve_review_item` says, apart from what applying throws.
template <record_store S>
repair_action check_review_resolution(const S& live, const review_item& item,
                                      const std::string& keep_id,
                                      const std::optional<std::string>& new_text,
                                      const apply_options& opt, std::string_view reviewer,
                                      std::string_view note, utc_time now) {
  if (reviewer.empty() || note.empty())
    throw error(error_code::invalid_argument,
                "resolve_review_item: a reviewer name and a reason are required");
  const auto now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  const bool open =
      item.status == "pending" || (item.status == "deferred" && item.defer_until_ms <= now_ms);
  if (!open)
    throw error(error_code::invalid_argument,
                "review item " + detail::review_item_label(item.key) + " is " + item.status +
                    (item.decided_by.empty() ? std::string() : " (by " + item.decided_by + ")") +
                    ": only a pending item is resolved");
  check_resolution_text(new_text);
  if (new_text && !opt.embed)
    throw error(error_code::invalid_argument,
                "a new text is re-embedded: resolve_review_item needs an embedder "
                "(apply_options::embed)");
  if (new_text && opt.embed_version.empty())
    throw error(error_code::invalid_argument,
                "a new text is re-embedded: resolve_review_item needs the embedder's version "
                "(apply_options::embed_version; a vector is never written untagged)");
  return make_resolution_action(live, item, keep_id, new_text, opt.embed_version, reviewer);
}

/// Resolves the conflict that review item `item` holds by a person's choice: `keep_id` wins,
/// the item's other targets are archived (and superseded by it), and with `new_text` the kept
/// record's content becomes that text and is re-embedded from it by `opt.embed`, tagged
/// `opt.embed_version`, in the same action (all or nothing). The action
/// (`make_resolution_action`) is applied through `wal` as `approve_review_items` applies an
/// item (its fingerprint check included: records changed since the item was queued leave it
/// pending, nothing applied), and the item is recorded "approved" by `reviewer` with the
/// decision note "keep KEEP (archived: A, B)[, text edited]: NOTE". `memhealth rollback` of the
/// log restores every record's before-image, old text and old vector included.
/// @param item a pending item (or a deferred one whose time came at `now`) of a conflict.
/// @param new_text the kept record's new text (nullopt: its text stays); never a secret.
/// @param opt apply options to start from; with `new_text`, `opt.embed` and `opt.embed_version`
///        must be set.
/// @return the outcome (applied; already_applied when the store already held the result;
///         failed with a reason when the records changed since or the action failed: the item
///         stays pending).
/// @throws error(invalid_argument), before anything changes, for an empty reviewer or note, an
///         item already decided (approved, rejected, or deferred beyond `now`), an item not of a
///         conflict or with fewer than two targets, a `keep_id` that is not one of its targets,
///         an empty (or all-space) `new_text`, a `new_text` holding a secret
///         (`check_resolution_text`), a `new_text` without `opt.embed` or without an
///         `opt.embed_version`; error(parse) for an item whose action does not parse; as the
///         file comment says.
template <transactional_record_store S>
review_outcome resolve_review_item(S& live, const review_item& item, const std::string& keep_id,
                                   const std::optional<std::string>& new_text, wal_writer& wal,
                                   sqlite_state& state, const std::string& history_scope,
                                   std::string_view reviewer, std::string_view note, utc_time now,
                                   apply_options opt = {}) {
  const repair_action a =
      check_review_resolution(live, item, keep_id, new_text, opt, reviewer, note, now);
  std::string archived;
  for (std::size_t k = 1; k < a.targets.size(); ++k)
    archived += (archived.empty() ? "" : ", ") + a.targets[k];
  const std::string decision = "keep " + keep_id + " (archived: " + archived + ")" +
                               (new_text ? ", text edited" : "") + ": " + std::string(note);
  review_item replaced = item;
  replaced.action_json = detail::to_review_item(a, {}, now).action_json;
  auto out = detail::apply_review_items(live, {replaced}, wal, state, history_scope, reviewer,
                                        decision, now, std::move(opt));
  return std::move(out.front());
}

}  // namespace memhealth
