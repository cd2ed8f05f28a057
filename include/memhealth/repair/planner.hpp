#pragma once
/// @file planner.hpp
/// The repair planner: from a detection `report` to a `repair_plan` (SPEC section 3). Planning
/// only reads the store; the executor (executor.hpp) applies plans through the write-ahead log.
///
/// ## What each finding becomes
/// | finding kind | action | tier | automation | edits |
/// |---|---|---|---|---|
/// | metadata_schema_violation | fill_metadata_defaults | 1 | auto | `edit_fill_metadata` per
/// missing key that has a configured default; other keys and wrong types: a `deferred` note | |
/// illegal_status | set_status_pending_review | 1 | auto | `edit_set_status("pending_review")` | |
/// timestamp_inconsistent | normalize_timestamps, when the record has a local (non-UTC) offset | 1
/// | auto | `edit_normalize_timestamps`; the instants are unchanged, so an instant-level
/// inconsistency is also noted in `deferred` for a person | | dangling_reference |
/// drop_dangling_links | 1 | auto | `edit_append_notes("dropped dangling link <field> -> <id>")`,
/// then `edit_drop_links` | | merged_but_active | archive_merged | 1 | auto |
/// `edit_set_status("archived")` | | conflict, decided by the rule chain | resolve_conflict | 2 |
/// confirm | winner `edit_add_supersedes(loser)`, loser `edit_set_status("archived")` | |
/// exact_duplicate, near_duplicate | merge_duplicates | 2 | confirm | primary `edit_append_notes`
/// (unique text / metadata of the others), each other record `edit_set_duplicate_of(primary)` +
/// `edit_set_status("archived")` | | stale | downweight | 2 | confirm | `edit_set_weight(w)` (see
/// "Stale weights") | | embedding_missing / _dim_mismatch / _non_finite / _zero_norm /
/// _not_normalized / _zero_padded, mixed_embedding_version | reembed, one action per batch of
/// `reembed_batch_size` records | 3 | manual | `edit_replace_embedding({}, reembed_version)`: the
/// executor fills the vector from the user's embedder | | (the same kinds, once per plan that has
/// reembed actions) | rebuild_index, targets = every re-embedded record | 1 | auto | none: the
/// executor calls the user's index policy after the batches (index_policy.hpp) | | conflict with
/// evidence needs_human = true, or undecided by the chain | send_to_review | 3 | manual |
/// `edit_set_status("pending_review")` on both records when `review_sets_pending` (see below) | |
/// cross_scope_duplicate, cross_scope_link, junk_content, mojibake, oversized_content,
/// content_time_mismatch, duplicate_id, reference_cycle, content_empty, missing_scope,
/// missing_source | send_to_review | 3 | manual | none: a person decides (scope changes,
/// deletions and id fixes are tier 3 and outside the edit vocabulary) | | secret_in_content |
/// send_to_review (quarantine) | 3 | manual | `edit_set_status("pending_review")`: approving it
/// takes the record out of retrieval until a person removes the secret (never deleted here) | |
/// check_skipped | nothing (information only) | | | | | any other kind | nothing; a `deferred` note
/// names it | | | |
///
/// ## Retrieval alarms (issue 21; `retrieval_plan_table`)
/// Findings of the retrieval monitor (monitor/retrieval_monitor.hpp) given to `make_plan` with
/// the store check's become index actions and review items; none edits a record:
/// | alarm | action | tier | automation |
/// |---|---|---|---|
/// | ghost_result | clean_index, one per plan, targets = every served id whose record is missing,
/// archived or pending_review now (a live one gets a `deferred` note) | 1 | auto |
/// | latency_regression, similarity_drop | check_rebuild_index, one per plan, no targets, a reason
/// per alarm with its figure and the baseline's | 1 | auto |
/// | scope_leak | send_to_review, reasons starting "critical:", priority `critical_review` | 3 |
/// manual |
/// | query_version_mismatch | start_migration per query version Q, proposing `memhealth migrate
/// start --to Q`; nothing when Q is the target of a declared migration
/// (`planner_options::migration_to`) or already the store's majority (the
/// mixed_embedding_version repair re-embeds the rest): a `deferred` note | 3 | manual |
/// The executor runs them through the index policy (index_policy.hpp, "Retrieval alarms");
/// `start_migration` is never run by `apply` (a person starts the migration).
///
/// ## Invariants
/// - **Nothing is deleted**: there is no delete edit, and the only statuses the planner sets are
///   "archived" and "pending_review".
/// - **Secrets are not copied**: a merge note carries the merged record's text with every secret
///   masked (`mask_secrets`, secrets.hpp), so a plan never holds a credential in full.
/// - **Merges never cross scopes**: a duplicate cluster whose records are in different scopes is
///   refused (no action; a `deferred` note), whatever the detector said.
/// - **Tier 2 is always `automation::confirm`**: the planner never records an approval. Approving
///   tier 2 (by a confirming rule, a time window or a flag) is the executor's decision; tier 3 is
///   `manual` and needs a person.
/// - **Deterministic**: the same store, report and options give the same plan, byte for byte.
///   Actions are sorted by priority (higher first), then type, then targets, then idempotency key.
///   The idempotency key is the hex FNV-1a 64-bit hash (Fowler, Noll, Vo) of the type, targets and
///   canonically serialised edits (`compute_idempotency_key`); actions with equal keys are kept
///   once.
///
/// ## Undecided conflicts
/// SPEC: undecided -> pending_review queue, nothing deleted. The plan's `send_to_review` actions
/// *are* that queue. With `review_sets_pending` (default true) a conflict's review action carries
/// `edit_set_status("pending_review")` for both records: it is tier 3 / manual, so it only runs
/// when a person approves it, and approving it takes both contradicting records out of retrieval
/// until the person resolves them. Set it to false to queue the review without touching the
/// records (both stay active and retrievable meanwhile).
///
/// A person resolves such an item by choosing the winner (`resolve_review_item`,
/// live/sqlite_review.hpp; `memhealth review resolve`): it is replaced by a `resolve_conflict`
/// action (tier 3, manual, approved by that person) with the edits of a rule-decided conflict,
/// kept record `edit_add_supersedes(others)` (and `edit_set_status("active")` when it is
/// pending_review), each other record `edit_set_status("archived")`; with a new text, the kept
/// record first gets `edit_set_content(text)` and `edit_replace_embedding({}, version)`, the
/// vector computed by the executor from the new text. `edit_set_content` is the only edit that
/// writes content, and only a person's resolution carries it: the planner never plans one.
///
/// ## Stale weights
/// The staleness detector's evidence `weight` is `curve_weight` times the stored effective_weight.
/// Writing that product back would compound on every run (each run multiplies the decay in again:
/// a slow repair loop), so `stale_weight_mode::detector_weight` writes the pure decay
/// `curve_weight` (falling back to `weight` when absent), raised to at least `weight_floor`;
/// `stale_weight_mode::floor` writes `weight_floor`. A record whose stored weight is already at or
/// below the target gets no action (down-weighting never raises a weight), which makes the repair
/// idempotent across runs.
///
/// ## Limits (guardrails at planning time)
/// Actions are taken in execution order while the distinct records they edit fit in
/// `max_records_per_run`; the others are left out with `deferred` notes (the next run plans them
/// again). When the records edited by the kept actions, plus the index entries its index actions
/// remove or rewrite (`blast_radius::index_entries`: a `clean_index` counts its targets), exceed
/// `blast_radius_threshold`, the plan is `suspended` with a reason: nothing may run without
/// approval. The plan records the threshold (`repair_plan::blast_radius_threshold`), and the
/// executor holds an index action that would remove or rewrite more entries than it at apply time
/// (executor.hpp, `apply_options::index_blast_limit`). Rate limits, concurrency, retries and runs
/// per day are enforced while executing (guardrails.hpp).
///
/// `repair_plan::deferred` holds each note once, in the order the notes came; a note given
/// several times (several findings of one kind and records, e.g. an alarm without record ids in
/// three monitor windows) ends with " (N times)".
///
/// ## The store a plan was made for
/// Every plan records the fingerprint of the store it was made from (`repair_plan::store`,
/// `plan_store_of`: record counts, a digest and a sample of the record ids); `check_plan_store`
/// (store_identity.hpp) tells the caller of `apply_plan` whether a store is that one (perhaps
/// edited since), another store, or one emptied or cut since (then index actions must not run:
/// `apply_options::index_refused`).
///
/// ## Priorities
/// tier 1 = 400, conflicts = 300, merges = 200, down-weights = 100, re-embedding = 10, index
/// clean-up = 7, index rebuild = 5, index check = 4, critical review = 1, review = 0. The executor
/// runs actions in this order (guardrails.hpp, `execution_order`).
///
/// ## Re-embedding and the index
/// These finding kinds say a record's vector is unusable or from another model: missing,
/// another dimension than the index's, non-finite, zero, not unit length, zero-padded, or a
/// minority embedding_version (for mixed_embedding_version: every record of the store with a
/// vector off the target version, `reembed_version` when set, else the finding's majority, however
/// many; the finding lists at most 20; nothing during a declared migration, whose `migrate run`
/// re-embeds them: a note in `deferred`). Re-embedding them changes vectors the user's index still
/// holds, so the index is inconsistent with the store until rebuilt: the plan follows the `reembed`
/// batches with one `rebuild_index` action (tier 1: SPEC "rebuild a corrupt index"; it carries
/// no record edit, and the executor rebuilds only the targets the run actually re-embedded, so it
/// does nothing while the tier-3 batches wait for approval). Every re-embedding is tagged with an
/// embedding_version (`reembed_version`, else `apply_options::embed_version`; the executor refuses
/// an untagged one). The old vector is kept as the before-image in the write-ahead log for at
/// least `wal_compact_options::old_vector_retention` (default 14 days; SPEC: 7-15 days): WAL
/// compaction never drops a committed before-image and refuses logs younger than the retention
/// (wal_compact.hpp).

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "memhealth/detect/finding.hpp"
#include "memhealth/detect/scope.hpp"
#include "memhealth/record/memory_record.hpp"
#include "memhealth/record/time.hpp"
#include "memhealth/record/traits.hpp"
#include "memhealth/repair/action.hpp"
#include "memhealth/repair/conflict_rules.hpp"
#include "memhealth/repair/idempotency.hpp"
#include "memhealth/repair/plan_steps.hpp"
#include "memhealth/repair/plan_table.hpp"
#include "memhealth/store/store.hpp"
#include "memhealth/text/normalize.hpp"

namespace memhealth {

// ---------------------------------------------------------------- make_plan

/// Plans repairs for the findings of `r` against the current state of `store` (read only).
///
/// @tparam S a `record_store`; fields the record type does not map are skipped where optional
///         (scopes, statuses, timestamps, metadata, weights).
/// @tparam Rules the conflict rule chain (or any `conflict_rule` for the record type).
/// @param store the store the report was made from (records are looked up by id: a finding whose
///        record no longer exists is noted in `deferred`, not planned).
/// @param r the detection report. @param opt options (see `planner_options`).
/// @param rules the conflict rules, default the SPEC order.
/// @return the plan (see the file comment for what each finding becomes). Never throws on bad
///         findings (they become `deferred` notes); throws only what allocation throws.
/// @complexity O(F log F + E) for F findings and E edits, plus one `store.find` per referenced id
///         and one normalisation per merged record.
template <record_store S, class Rules = default_conflict_rules>
repair_plan make_plan(const S& store, const report& r, const planner_options& opt,
                      const Rules& rules = {}) {
  using R = typename S::record_type;
  static_assert(
      conflict_rule<Rules, R>,
      "memhealth: make_plan's Rules must be callable as `rule_verdict operator()(const R&, "
      "const R&) const` for the store's record type (e.g. a conflict_rule_chain).");
  detail::memory_actions actions;
  detail::plan_builder<S, Rules> b(store, opt, rules, actions);
  for (const finding& f : r.findings) b.add(f, find_kind_plan(f.kind));
  auto [plan, order] = std::move(b).finish();
  plan.actions.reserve(order.size());
  for (std::size_t h : order) plan.actions.push_back(actions.take(h));
  return std::move(plan);
}

/// Blast radius of a whole plan: distinct records edited by its actions, the index entries its
/// index actions remove or rewrite (the sum of theirs), and their scopes (the union of the
/// actions' `blast` scopes), sorted. @complexity O(E log E).
inline blast_radius plan_blast_radius(const repair_plan& p) {
  std::set<std::string_view> ids, scopes;
  blast_radius b;
  for (const auto& a : p.actions) {
    for (const auto& e : a.edits) ids.insert(e.record_id);
    scopes.insert(a.blast.scopes.begin(), a.blast.scopes.end());
    b.index_entries += a.blast.index_entries;
  }
  b.records = ids.size();
  b.scopes.assign(scopes.begin(), scopes.end());
  return b;
}

}  // namespace memhealth
