#pragma once
/// @file vocabulary.hpp
/// One vocabulary shared by the detectors, the planner, the audit report and the tool: the finding
/// kinds memhealth's detectors raise, the change kinds of the snapshot diff, and the evidence keys
/// the planner reads back from findings. A
/// detector and the planner name a kind or key through these constants, so they cannot drift apart
/// (repair_plan_test checks that every kind has a planner table entry and that the names are
/// unique). Action types live with the actions (repair/action.hpp, `action_types`).

#include <array>
#include <string_view>

namespace memhealth {

/// The fixed vocabulary of finding kinds raised by memhealth's own detectors.
namespace finding_kinds {
// level 1, structural
inline constexpr std::string_view content_empty = "content_empty";
inline constexpr std::string_view embedding_missing = "embedding_missing";
inline constexpr std::string_view embedding_dim_mismatch = "embedding_dim_mismatch";
inline constexpr std::string_view embedding_non_finite = "embedding_non_finite";
inline constexpr std::string_view embedding_zero_norm = "embedding_zero_norm";
inline constexpr std::string_view embedding_not_normalized = "embedding_not_normalized";
inline constexpr std::string_view embedding_zero_padded = "embedding_zero_padded";
inline constexpr std::string_view illegal_status = "illegal_status";
inline constexpr std::string_view missing_source = "missing_source";
inline constexpr std::string_view missing_scope = "missing_scope";
inline constexpr std::string_view metadata_schema_violation = "metadata_schema_violation";
inline constexpr std::string_view duplicate_id = "duplicate_id";
inline constexpr std::string_view dangling_reference = "dangling_reference";
inline constexpr std::string_view reference_cycle = "reference_cycle";
inline constexpr std::string_view merged_but_active = "merged_but_active";
inline constexpr std::string_view timestamp_inconsistent = "timestamp_inconsistent";
inline constexpr std::string_view mixed_embedding_version = "mixed_embedding_version";
// level 2, semantic
inline constexpr std::string_view exact_duplicate = "exact_duplicate";
inline constexpr std::string_view near_duplicate = "near_duplicate";
inline constexpr std::string_view cross_scope_duplicate = "cross_scope_duplicate";
inline constexpr std::string_view conflict = "conflict";
inline constexpr std::string_view stale = "stale";
inline constexpr std::string_view cross_scope_link = "cross_scope_link";
inline constexpr std::string_view junk_content = "junk_content";
// content hygiene (SPEC section 6): secrets.hpp, mojibake.hpp, content_size.hpp, content_time.hpp
inline constexpr std::string_view secret_in_content = "secret_in_content";
inline constexpr std::string_view mojibake = "mojibake";
inline constexpr std::string_view oversized_content = "oversized_content";
inline constexpr std::string_view content_time_mismatch = "content_time_mismatch";
// coverage: a check that could not run on some records (e.g. no embeddings to compare)
inline constexpr std::string_view check_skipped = "check_skipped";
}  // namespace finding_kinds

/// Every kind in `finding_kinds`, in declaration order (for tables and tests).
inline constexpr std::array<std::string_view, 29> all_finding_kinds{
    finding_kinds::content_empty,
    finding_kinds::embedding_missing,
    finding_kinds::embedding_dim_mismatch,
    finding_kinds::embedding_non_finite,
    finding_kinds::embedding_zero_norm,
    finding_kinds::embedding_not_normalized,
    finding_kinds::embedding_zero_padded,
    finding_kinds::illegal_status,
    finding_kinds::missing_source,
    finding_kinds::missing_scope,
    finding_kinds::metadata_schema_violation,
    finding_kinds::duplicate_id,
    finding_kinds::dangling_reference,
    finding_kinds::reference_cycle,
    finding_kinds::merged_but_active,
    finding_kinds::timestamp_inconsistent,
    finding_kinds::mixed_embedding_version,
    finding_kinds::exact_duplicate,
    finding_kinds::near_duplicate,
    finding_kinds::cross_scope_duplicate,
    finding_kinds::conflict,
    finding_kinds::stale,
    finding_kinds::cross_scope_link,
    finding_kinds::junk_content,
    finding_kinds::secret_in_content,
    finding_kinds::mojibake,
    finding_kinds::oversized_content,
    finding_kinds::content_time_mismatch,
    finding_kinds::check_skipped};

/// Level-3 finding kinds of the retrieval monitor (monitor/retrieval_monitor.hpp, raised by
/// `monitor_retrievals` over retrieval events, not by the store check). Declared here so the
/// planner can name the alarms it turns into repairs (plan_table.hpp, `retrieval_plan_table`)
/// without including the monitor.
namespace finding_kinds {
inline constexpr std::string_view latency_regression = "latency_regression";
inline constexpr std::string_view similarity_drop = "similarity_drop";
inline constexpr std::string_view duplicate_share_high = "duplicate_share_high";
inline constexpr std::string_view empty_results = "empty_results";
inline constexpr std::string_view feedback_negative = "feedback_negative";
inline constexpr std::string_view ghost_result = "ghost_result";
inline constexpr std::string_view scope_leak = "scope_leak";
inline constexpr std::string_view query_version_mismatch = "query_version_mismatch";
}  // namespace finding_kinds

/// Every retrieval-monitor kind, in declaration order (for tables and tests).
inline constexpr std::array<std::string_view, 8> all_retrieval_finding_kinds{
    finding_kinds::latency_regression,   finding_kinds::similarity_drop,
    finding_kinds::duplicate_share_high, finding_kinds::empty_results,
    finding_kinds::feedback_negative,    finding_kinds::ghost_result,
    finding_kinds::scope_leak,           finding_kinds::query_version_mismatch};

/// The kinds of change `diff_snapshots` (audit/snapshot_diff.hpp) reports between two snapshots
/// of a store: changes that the write-ahead log of the operations between them does not explain.
namespace diff_kinds {
inline constexpr std::string_view unlogged_removal =
    "unlogged_removal";  ///< a record is gone (memhealth never deletes)
inline constexpr std::string_view unlogged_overwrite =
    "unlogged_overwrite";  ///< a record changed without a matching logged image pair
inline constexpr std::string_view unlogged_addition =
    "unlogged_addition";  ///< a new id, or more copies of an id than before
inline constexpr std::string_view bulk_removal =
    "bulk_removal";  ///< two or more records removed from one scope
}  // namespace diff_kinds

/// Every kind in `diff_kinds`, in declaration order (for tables and tests).
inline constexpr std::array<std::string_view, 4> all_diff_kinds{
    diff_kinds::unlogged_removal, diff_kinds::unlogged_overwrite, diff_kinds::unlogged_addition,
    diff_kinds::bulk_removal};

/// Evidence keys that detectors write and the planner reads (`finding::with` / `evidence_of`).
namespace evidence_keys {
inline constexpr std::string_view field = "field";  ///< text: the record field at fault
inline constexpr std::string_view target =
    "target";  ///< text: id a dangling/cross-scope link points to
inline constexpr std::string_view missing =
    "missing";  ///< text, repeated: a required metadata key absent
inline constexpr std::string_view wrong_type =
    "wrong_type";  ///< text, repeated: a metadata key of the wrong type
inline constexpr std::string_view expected =
    "expected";                                       ///< text: the schema's type for `wrong_type`
inline constexpr std::string_view actual = "actual";  ///< text: the record's type for `wrong_type`
inline constexpr std::string_view problem =
    "problem";  ///< text: what is inconsistent about timestamps
inline constexpr std::string_view minority_count =
    "minority_count";  ///< integer: records of minority embedding versions
inline constexpr std::string_view reason = "reason";  ///< text: why a conflict/skip was raised
inline constexpr std::string_view needs_human =
    "needs_human";  ///< flag: a conflict the rules must not decide
inline constexpr std::string_view curve_weight =
    "curve_weight";  ///< number in [0,1]: pure decay of a stale record
inline constexpr std::string_view weight =
    "weight";  ///< number in [0,1]: decay times stored weight
inline constexpr std::string_view scope =
    "scope";  ///< text: the scope a finding or change is about
inline constexpr std::string_view count =
    "count";  ///< integer: how many records a finding or change covers
}  // namespace evidence_keys

/// Every key in `evidence_keys` (for tests).
inline constexpr std::array<std::string_view, 14> all_evidence_keys{
    evidence_keys::field,       evidence_keys::target,         evidence_keys::missing,
    evidence_keys::wrong_type,  evidence_keys::expected,       evidence_keys::actual,
    evidence_keys::problem,     evidence_keys::minority_count, evidence_keys::reason,
    evidence_keys::needs_human, evidence_keys::curve_weight,   evidence_keys::weight,
    evidence_keys::scope,       evidence_keys::count};

}  // namespace memhealth
