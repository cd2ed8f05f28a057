#pragma once
/// @file plan_table.hpp
/// What the planner does with each finding kind, as data: the options of `make_plan`
/// (planner.hpp), the execution priorities, and the finding-kind-to-action table.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "memhealth/detect/vocabulary.hpp"
#include "memhealth/record/memory_record.hpp"
#include "memhealth/repair/action.hpp"
#include "memhealth/text/normalize.hpp"

namespace memhealth {

/// How `downweight` actions choose the new effective_weight (see "Stale weights").
enum class stale_weight_mode : std::uint8_t {
  detector_weight,  ///< the detector's decay `curve_weight` (else `weight`), at least
                    ///< `weight_floor`
  floor,            ///< always `weight_floor`
};

/// Execution priorities of planned actions (higher runs first).
namespace action_priority {
inline constexpr int tier1 = 400;        ///< automatic structural fixes
inline constexpr int conflict = 300;     ///< resolve_conflict
inline constexpr int merge = 200;        ///< merge_duplicates
inline constexpr int downweight = 100;   ///< downweight
inline constexpr int reembed = 10;       ///< reembed batches (tier 3)
inline constexpr int index_cleanup = 7;  ///< clean_index (ghost results), after the reembed batches
inline constexpr int index_rebuild = 5;  ///< rebuild_index, after the reembed batches (tier 1)
inline constexpr int index_check = 4;    ///< check_rebuild_index, after the other index actions
inline constexpr int critical_review = 1;  ///< send_to_review of a critical alarm (scope leak)
inline constexpr int review = 0;           ///< send_to_review, start_migration (tier 3)
}  // namespace action_priority

/// Options of `make_plan` (named option pack).
///
/// There is deliberately no "approve tier 2" flag: the plan records who *may* run an action
/// (tier 2 is always `automation::confirm`); approval is applied by the executor.
struct planner_options {
  /// Defaults for `fill_metadata_defaults`: key -> value written when the key is missing.
  metadata_map metadata_defaults;
  /// Most distinct records the kept actions may edit; actions beyond are deferred. >= 0.
  std::size_t max_records_per_run = 1000;
  /// When the kept actions edit more distinct records than this, the plan is suspended.
  std::size_t blast_radius_threshold = 500;
  /// Records per `reembed` action (>= 1; 0 is treated as 1).
  std::size_t reembed_batch_size = 100;
  /// embedding_version written by `edit_replace_embedding`; empty = `apply_options::embed_version`
  /// names it at apply time (the executor refuses a re-embedding left untagged).
  std::string reembed_version;
  /// How stale records are down-weighted.
  stale_weight_mode stale_weight = stale_weight_mode::detector_weight;
  /// Lowest weight a down-weight writes, in [0,1].
  double weight_floor = 0.05;
  /// Review actions of undecided conflicts set both records to pending_review when approved.
  bool review_sets_pending = true;
  /// Merges also note metadata keys that only the merged records carry.
  bool note_metadata_on_merge = true;
  /// Normaliser deciding whether a merged record's text differs from the primary's.
  text_normalizer normalizer{};
  /// The embedding version a declared migration moves to ("" = none; the tool reads it from the
  /// store's state database): a `query_version_mismatch` whose queries are on it is progress of
  /// that migration, not a reason to propose one.
  std::string migration_to{};
};

// ---------------------------------------------------------------- the finding-kind table

/// How `make_plan` handles one finding kind: which planning step it goes through.
enum class plan_step : std::uint8_t {
  skip,             ///< information only (check_skipped): nothing planned, no note
  merge,            ///< merge a duplicate cluster (same scope only)
  conflict,         ///< decide by the rule chain; undecided or needs_human -> `review_action`
  downweight,       ///< down-weight a stale record (never raises a weight)
  fill_metadata,    ///< fill configured defaults of missing metadata keys (per record)
  set_pending,      ///< set an illegal status to pending_review (per record)
  normalize_times,  ///< normalise local timestamp offsets to UTC (per record)
  drop_links,       ///< drop a dangling link (per record)
  archive,          ///< archive a record merged into another but still active (per record)
  reembed,          ///< queue the record for re-embedding batches (+ one rebuild_index)
  review,           ///< send to a person (tier 3)
  quarantine,       ///< send to a person (tier 3) and, once approved, set pending_review
  index_cleanup,    ///< ghost ids served: one `clean_index` action over all of them (tier 1)
  index_check,      ///< a retrieval metric alarm: one `check_rebuild_index` action (tier 1)
  critical_review,  ///< send to a person (tier 3) as a critical item, never automatic
  migration,        ///< queries on another model: a `start_migration` proposal (tier 3)
};

/// One row of the planner's finding-kind-to-action table (the file comment's table, as code).
struct kind_plan_entry {
  std::string_view kind;             ///< a `finding_kinds` constant
  plan_step step;                    ///< the planning step
  std::string_view action;           ///< the `action_types` constant it plans (empty for `skip`)
  int tier;                          ///< 1, 2 or 3 (0 for `skip`)
  memhealth::automation automation;  ///< who may run it
  int priority;                      ///< an `action_priority` value
};

/// The finding-kind-to-action table of `make_plan`, one row per kind in `all_finding_kinds`.
/// A conflict the rules cannot decide becomes `review_action` instead of its row's action.
/// A kind not in the table gets no action and a `deferred` note.
inline constexpr std::array<kind_plan_entry, 29> kind_plan_table{{
    {finding_kinds::content_empty, plan_step::review, action_types::send_to_review, 3,
     automation::manual, action_priority::review},
    {finding_kinds::embedding_missing, plan_step::reembed, action_types::reembed, 3,
     automation::manual, action_priority::reembed},
    {finding_kinds::embedding_dim_mismatch, plan_step::reembed, action_types::reembed, 3,
     automation::manual, action_priority::reembed},
    {finding_kinds::embedding_non_finite, plan_step::reembed, action_types::reembed, 3,
     automation::manual, action_priority::reembed},
    {finding_kinds::embedding_zero_norm, plan_step::reembed, action_types::reembed, 3,
     automation::manual, action_priority::reembed},
    {finding_kinds::embedding_not_normalized, plan_step::reembed, action_types::reembed, 3,
     automation::manual, action_priority::reembed},
    {finding_kinds::embedding_zero_padded, plan_step::reembed, action_types::reembed, 3,
     automation::manual, action_priority::reembed},
    {finding_kinds::illegal_status, plan_step::set_pending, action_types::set_status_pending_review,
     1, automation::automatic, action_priority::tier1},
    {finding_kinds::missing_source, plan_step::review, action_types::send_to_review, 3,
     automation::manual, action_priority::review},
    {finding_kinds::missing_scope, plan_step::review, action_types::send_to_review, 3,
     automation::manual, action_priority::review},
    {finding_kinds::metadata_schema_violation, plan_step::fill_metadata,
     action_types::fill_metadata_defaults, 1, automation::automatic, action_priority::tier1},
    {finding_kinds::duplicate_id, plan_step::review, action_types::send_to_review, 3,
     automation::manual, action_priority::review},
    {finding_kinds::dangling_reference, plan_step::drop_links, action_types::drop_dangling_links, 1,
     automation::automatic, action_priority::tier1},
    {finding_kinds::reference_cycle, plan_step::review, action_types::send_to_review, 3,
     automation::manual, action_priority::review},
    {finding_kinds::merged_but_active, plan_step::archive, action_types::archive_merged, 1,
     automation::automatic, action_priority::tier1},
    {finding_kinds::timestamp_inconsistent, plan_step::normalize_times,
     action_types::normalize_timestamps, 1, automation::automatic, action_priority::tier1},
    {finding_kinds::mixed_embedding_version, plan_step::reembed, action_types::reembed, 3,
     automation::manual, action_priority::reembed},
    {finding_kinds::exact_duplicate, plan_step::merge, action_types::merge_duplicates, 2,
     automation::confirm, action_priority::merge},
    {finding_kinds::near_duplicate, plan_step::merge, action_types::merge_duplicates, 2,
     automation::confirm, action_priority::merge},
    {finding_kinds::cross_scope_duplicate, plan_step::review, action_types::send_to_review, 3,
     automation::manual, action_priority::review},
    {finding_kinds::conflict, plan_step::conflict, action_types::resolve_conflict, 2,
     automation::confirm, action_priority::conflict},
    {finding_kinds::stale, plan_step::downweight, action_types::downweight, 2, automation::confirm,
     action_priority::downweight},
    {finding_kinds::cross_scope_link, plan_step::review, action_types::send_to_review, 3,
     automation::manual, action_priority::review},
    {finding_kinds::junk_content, plan_step::review, action_types::send_to_review, 3,
     automation::manual, action_priority::review},
    {finding_kinds::secret_in_content, plan_step::quarantine, action_types::send_to_review, 3,
     automation::manual, action_priority::review},
    {finding_kinds::mojibake, plan_step::review, action_types::send_to_review, 3,
     automation::manual, action_priority::review},
    {finding_kinds::oversized_content, plan_step::review, action_types::send_to_review, 3,
     automation::manual, action_priority::review},
    {finding_kinds::content_time_mismatch, plan_step::review, action_types::send_to_review, 3,
     automation::manual, action_priority::review},
    {finding_kinds::check_skipped, plan_step::skip, {}, 0, automation::automatic, 0},
}};

/// What `make_plan` does with the alarms of the retrieval monitor (`all_retrieval_finding_kinds`;
/// kinds without a row, duplicate_share_high, empty_results and feedback_negative, get a
/// `deferred` note: the store check's duplicate detectors and a person handle them):
/// | alarm | action | tier |
/// |---|---|---|
/// | ghost_result | clean_index over every served id without a live record (one per plan) | 1 |
/// | latency_regression, similarity_drop | check_rebuild_index (one per plan, no targets) | 1 |
/// | scope_leak | send_to_review, reasons starting "critical:", priority `critical_review` | 3 |
/// | query_version_mismatch | start_migration proposing `memhealth migrate start --to Q` | 3 |
inline constexpr std::array<kind_plan_entry, 5> retrieval_plan_table{{
    {finding_kinds::latency_regression, plan_step::index_check, action_types::check_rebuild_index,
     1, automation::automatic, action_priority::index_check},
    {finding_kinds::similarity_drop, plan_step::index_check, action_types::check_rebuild_index, 1,
     automation::automatic, action_priority::index_check},
    {finding_kinds::ghost_result, plan_step::index_cleanup, action_types::clean_index, 1,
     automation::automatic, action_priority::index_cleanup},
    {finding_kinds::scope_leak, plan_step::critical_review, action_types::send_to_review, 3,
     automation::manual, action_priority::critical_review},
    {finding_kinds::query_version_mismatch, plan_step::migration, action_types::start_migration, 3,
     automation::manual, action_priority::review},
}};

/// The review action that replaces a conflict's row when the rules cannot decide it.
inline constexpr kind_plan_entry review_action{
    finding_kinds::conflict, plan_step::review,      action_types::send_to_review, 3,
    automation::manual,      action_priority::review};

/// The table row of `kind` (`kind_plan_table`, then `retrieval_plan_table`), or nullptr for a
/// kind the planner does not know. @complexity O(table).
constexpr const kind_plan_entry* find_kind_plan(std::string_view kind) noexcept {
  for (const auto& e : kind_plan_table)
    if (e.kind == kind) return &e;
  for (const auto& e : retrieval_plan_table)
    if (e.kind == kind) return &e;
  return nullptr;
}

}  // namespace memhealth
