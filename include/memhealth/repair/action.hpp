#pragma once
/// @file action.hpp
/// The repair vocabulary shared by the planner, the executor and the write-ahead log: record
/// edits, actions and plans.
///
/// An **action** is one unit of repair (merge one duplicate cluster, resolve one conflict,
/// down-weight one stale record, ...). It names its targets and carries a list of **record
/// edits**, each a small operation applied to the *current* state of one record at apply time
/// (not a precomputed after-image), so a plan made a while ago still applies correctly and an
/// action can be recognised as already applied (idempotency). An action is applied all or
/// nothing: the executor logs the before- and after-image of every record it touches, then
/// applies, then commits (see executor.hpp / wal.hpp).
///
/// Nothing here deletes a record: there is no delete edit. Deletion is tier 3, only ever by a
/// person, outside memhealth.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "memhealth/record/memory_record.hpp"

namespace memhealth {

// ---------------------------------------------------------------- record edits

/// Set the status text (e.g. "archived", "pending_review").
struct edit_set_status {
  std::string status;
  friend bool operator==(const edit_set_status&, const edit_set_status&) = default;
};
/// Set duplicate_of (the primary this record was merged into; empty clears it).
struct edit_set_duplicate_of {
  std::string primary_id;
  friend bool operator==(const edit_set_duplicate_of&, const edit_set_duplicate_of&) = default;
};
/// Add ids to supersedes (the winner of a conflict supersedes the loser); ids already present are
/// not added twice.
struct edit_add_supersedes {
  std::vector<std::string> ids;
  friend bool operator==(const edit_add_supersedes&, const edit_add_supersedes&) = default;
};
/// Append notes to related_notes (unique information of merged records, dropped links); a note
/// already present is not added twice.
struct edit_append_notes {
  std::vector<std::string> notes;
  friend bool operator==(const edit_append_notes&, const edit_append_notes&) = default;
};
/// Remove these ids from duplicate_of / related_ids / supersedes (dangling links; the planner
/// pairs this with an edit_append_notes recording them).
struct edit_drop_links {
  std::vector<std::string> ids;
  friend bool operator==(const edit_drop_links&, const edit_drop_links&) = default;
};
/// Set effective_weight, in [0,1] (down-weighting; never deletion).
struct edit_set_weight {
  double weight = 1.0;
  friend bool operator==(const edit_set_weight&, const edit_set_weight&) = default;
};
/// Set a metadata key only when it is missing (fill from configured defaults).
struct edit_fill_metadata {
  std::string key;
  metadata_value value;
  friend bool operator==(const edit_fill_metadata&, const edit_fill_metadata&) = default;
};
/// Rewrite every timestamp of the record in UTC (offset 0); the instants do not change.
struct edit_normalize_timestamps {
  friend bool operator==(const edit_normalize_timestamps&,
                         const edit_normalize_timestamps&) = default;
};
/// Replace embedding and embedding_version together (re-embedding, tier 3). `embedding` is
/// filled by the executor from the user's embedder at apply time when empty; an empty `version`
/// is filled from `apply_options::embed_version` (a re-embedding is never written untagged).
/// The old vector is not edited in place and not lost: it is the before-image in the write-ahead
/// log, kept at least 14 days (`wal_compact_options::old_vector_retention`) for rollback.
struct edit_replace_embedding {
  std::vector<float> embedding;
  std::string version;
  friend bool operator==(const edit_replace_embedding&, const edit_replace_embedding&) = default;
};

/// Replace the record's content with `content` (a person's edit of a conflict's surviving text,
/// `resolve_review_item`; never planned by the rules). Not empty. The old text is not lost: it is
/// the before-image in the write-ahead log, and `rollback` restores it. Paired in one action with
/// an `edit_replace_embedding` with an empty vector *after* it, the executor embeds the new text.
struct edit_set_content {
  std::string content;
  friend bool operator==(const edit_set_content&, const edit_set_content&) = default;
};

/// One operation on one record.
using record_edit_op =
    std::variant<edit_set_status, edit_set_duplicate_of, edit_add_supersedes, edit_append_notes,
                 edit_drop_links, edit_set_weight, edit_fill_metadata, edit_normalize_timestamps,
                 edit_replace_embedding, edit_set_content>;

/// An edit of one record, addressed by id.
struct record_edit {
  std::string record_id;  ///< target record id
  record_edit_op op;      ///< what to do
  friend bool operator==(const record_edit&, const record_edit&) = default;
};

// ---------------------------------------------------------------- actions and plans

/// Who may run an action: tier 1 `automatic`; tier 2 `confirm` (a confirming rule or an approval
/// flag); tier 3 `manual` (a person).
enum class automation : std::uint8_t { automatic, confirm, manual };

/// Text of an automation level: "auto", "confirm", "manual".
constexpr std::string_view to_string(automation a) noexcept {
  return a == automation::automatic ? "auto" : a == automation::confirm ? "confirm" : "manual";
}

/// Action type names used by the planner (the executor does not interpret them).
namespace action_types {
inline constexpr std::string_view fill_metadata_defaults = "fill_metadata_defaults";  ///< tier 1
inline constexpr std::string_view set_status_pending_review =
    "set_status_pending_review";                                                  ///< tier 1
inline constexpr std::string_view normalize_timestamps = "normalize_timestamps";  ///< tier 1
inline constexpr std::string_view drop_dangling_links = "drop_dangling_links";    ///< tier 1
inline constexpr std::string_view archive_merged = "archive_merged";              ///< tier 1
inline constexpr std::string_view rebuild_index = "rebuild_index";                ///< tier 1
inline constexpr std::string_view merge_duplicates = "merge_duplicates";          ///< tier 2
inline constexpr std::string_view resolve_conflict = "resolve_conflict";          ///< tier 2
inline constexpr std::string_view downweight = "downweight";                      ///< tier 2
inline constexpr std::string_view send_to_review = "send_to_review";              ///< tier 3
inline constexpr std::string_view reembed = "reembed";                            ///< tier 3
/// Tier 1, from `ghost_result` alarms: remove served ids without a live record from the index
/// (index_policy.hpp; no record edit).
inline constexpr std::string_view clean_index = "clean_index";
/// Tier 1, from `latency_regression` / `similarity_drop` alarms: check the index against the
/// store, rebuild it when inconsistent (index_policy.hpp; no record edit).
inline constexpr std::string_view check_rebuild_index = "check_rebuild_index";
/// Tier 3, from `query_version_mismatch` alarms: a person starts the embedding-model migration
/// (`memhealth migrate start --to VERSION`); `apply` never starts one (no record edit).
inline constexpr std::string_view start_migration = "start_migration";
}  // namespace action_types

/// True for the action types that act on the user's vector index rather than on records
/// (`rebuild_index`, `clean_index`, `check_rebuild_index`): they need an index policy, change no
/// record and write nothing to the write-ahead log.
constexpr bool is_index_action(std::string_view type) noexcept {
  return type == action_types::rebuild_index || type == action_types::clean_index ||
         type == action_types::check_rebuild_index;
}

/// How many records, index entries and scopes an action (or plan) touches.
struct blast_radius {
  std::size_t records = 0;          ///< distinct records edited
  std::vector<std::string> scopes;  ///< distinct scopes of those records, sorted
  /// Entries of the user's vector index the action removes or rewrites (`clean_index`: its
  /// targets, the served ids without a live record); 0 for record actions. Written in a plan
  /// only when not 0 (`"index_entries"`); the planner's blast-radius suspension counts them with
  /// the records (planner.hpp, "Limits").
  std::size_t index_entries = 0;
  friend bool operator==(const blast_radius&, const blast_radius&) = default;
};

/// One repair action.
struct repair_action {
  std::string type;  ///< from `action_types` (or a user planner's own)
  int tier = 1;      ///< 1, 2 or 3
  memhealth::automation automation = memhealth::automation::automatic;  ///< who may run it
  std::vector<std::string> targets;  ///< record ids the action is about (primary first for merges)
  std::vector<record_edit> edits;    ///< the concrete edits, applied in order, all or nothing
  memhealth::blast_radius blast;     ///< records and scopes touched
  std::string rollback_method;       ///< e.g. "restore_before_images" (the WAL's per-record undo)
  std::string idempotency_key;       ///< stable hash of type, targets and edits (hex)
  std::vector<std::string> reasons;  ///< the findings behind it ("kind: ids ...")
  int priority = 0;                  ///< higher runs first under the rate limiter
  /// The records the plan decided on, as it saw them: record id -> `record_decision_digest`
  /// (store_identity.hpp; content, scope, created_at and updated_at). `apply_plan` skips the
  /// action (deferred, reason "stale: ...") when a record's digest differs now. Plan JSON
  /// `"seen"`: an object of id -> 16 hex digits, written only when not empty; empty for index
  /// actions and for plans made before it existed (then nothing is checked). Not part of the
  /// idempotency key.
  std::map<std::string, std::uint64_t> seen;
  friend bool operator==(const repair_action&, const repair_action&) = default;
};

/// The detection options a plan was made with, so that `apply` can verify with the same
/// detection (plan JSON "detection", an object of strings; see plan_json.hpp). Every field is
/// optional: an unset field is not recorded (and not written).
struct detection_provenance {
  std::optional<float>
      threshold;  ///< "threshold": near-duplicate cosine in [-1,1] (shortest decimal text)
  std::optional<std::string>
      window;  ///< "window": near-duplicate created_at window as given, e.g. "7d"
  std::optional<std::string>
      schema;  ///< "schema": metadata schema file path (absolute, normalised)
  std::optional<std::uint64_t>
      schema_fnv1a64;  ///< "schema_fnv1a64": FNV-1a 64 of the schema file's bytes (16 hex digits)
  std::optional<utc_time> now;     ///< "now": the detection clock (ISO-8601 UTC, milliseconds)
  std::optional<std::size_t> dim;  ///< "dim": the embedding dimension detection used (decimal)
  std::map<std::string, std::string>
      other;  ///< any other key of a plan written elsewhere, kept verbatim
  /// True when nothing is recorded.
  [[nodiscard]] bool empty() const noexcept {
    return !threshold && !window && !schema && !schema_fnv1a64 && !now && !dim && other.empty();
  }
  friend bool operator==(const detection_provenance&, const detection_provenance&) = default;
};

/// Which store a plan was made from (the plan's `"store"`; `plan_store_of` and
/// `check_plan_store` in store_identity.hpp compute and compare it): counts, a digest of the
/// record ids, and a sample of them by hash, so that `apply` can tell the store the plan was made
/// for (perhaps edited since) from another store or an emptied one.
struct plan_store_fingerprint {
  std::size_t records = 0;  ///< records (a duplicate id counted each time)
  std::size_t ids = 0;      ///< distinct record ids
  std::size_t live = 0;     ///< records an index may serve (`index_live`, index_policy.hpp)
  /// CRC-64/XZ of the distinct ids in byte order, each followed by '\n', as 16 lower-case hex
  /// digits (the `store_identity::fingerprint` of a log header).
  std::string ids_crc64;
  /// The smallest `id_sample_hash` values of the distinct ids, ascending, at most
  /// `plan_store_sample_size` (all of them for a smaller store): a uniform sample of the ids.
  std::vector<std::uint64_t> sample;
  friend bool operator==(const plan_store_fingerprint&, const plan_store_fingerprint&) = default;
};

/// A repair plan: actions in execution order, plus guardrail outcomes.
struct repair_plan {
  std::vector<repair_action> actions;  ///< in execution order
  bool suspended =
      false;  ///< true: the blast radius exceeded the threshold; nothing may run without approval
  std::string suspend_reason;  ///< why, when suspended
  std::vector<std::string>
      deferred;  ///< notes on work left out by limits (max records per run, ...)
  /// The detection options the plan was made from, so `apply` can verify with the same
  /// detection; empty when unknown.
  detection_provenance detection;
  /// The store the plan was made from (`make_plan` and `make_plan_file` record it); unset for a
  /// plan made before fingerprints existed (apply then cannot tell stores apart).
  std::optional<plan_store_fingerprint> store;
  /// `planner_options::blast_radius_threshold` the plan was made with (records and index entries
  /// past which it was suspended); `apply` holds an index action that would remove or rewrite
  /// more index entries than this (executor.hpp). Unset for older plans.
  std::optional<std::size_t> blast_radius_threshold;
  friend bool operator==(const repair_plan&, const repair_plan&) = default;
};

}  // namespace memhealth
