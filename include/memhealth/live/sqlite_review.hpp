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
/// Errors: `memhealth::error` from the log, the store and the state database propagate (what
/// committed before stays committed and logged); an item whose stored action does not parse is
/// error(parse) naming its key, before anything is applied.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "memhealth/live/sqlite_repair_history.hpp"
#include "memhealth/live/watch_repair.hpp"
#include "memhealth/record/time.hpp"
#include "memhealth/repair/executor.hpp"
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
/// that took effect "approved" by `reviewer` for `note` at `now`.
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
  return detail::apply_review_items(live, items, wal, state, history_scope, reviewer, note, now,
                                    std::move(opt));
}

}  // namespace memhealth
