#pragma once
/// @file planner.hpp
/// The repair planner: from a detection `report` to a `repair_plan` (SPEC section 3). Planning
/// only reads the store; the executor (executor.hpp) applies plans through the write-ahead log.
///
/// ## What each finding becomes
/// | finding kind | action | tier | automation | edits |
/// |---|---|---|---|---|
/// | metadata_schema_violation | fill_metadata_defaults | 1 | auto | `edit_fill_metadata` per missing key that has a configured default; other keys and wrong types: a `deferred` note |
/// | illegal_status | set_status_pending_review | 1 | auto | `edit_set_status("pending_review")` |
/// | timestamp_inconsistent | normalize_timestamps, when the record has a local (non-UTC) offset | 1 | auto | `edit_normalize_timestamps`; the instants are unchanged, so an instant-level inconsistency is also noted in `deferred` for a person |
/// | dangling_reference | drop_dangling_links | 1 | auto | `edit_append_notes("dropped dangling link <field> -> <id>")`, then `edit_drop_links` |
/// | merged_but_active | archive_merged | 1 | auto | `edit_set_status("archived")` |
/// | conflict, decided by the rule chain | resolve_conflict | 2 | confirm | winner `edit_add_supersedes(loser)`, loser `edit_set_status("archived")` |
/// | exact_duplicate, near_duplicate | merge_duplicates | 2 | confirm | primary `edit_append_notes` (unique text / metadata of the others), each other record `edit_set_duplicate_of(primary)` + `edit_set_status("archived")` |
/// | stale | downweight | 2 | confirm | `edit_set_weight(w)` (see "Stale weights") |
/// | embedding_missing / _dim_mismatch / _non_finite / _zero_norm / _not_normalized / _zero_padded, mixed_embedding_version | reembed, one action per batch of `reembed_batch_size` records | 3 | manual | `edit_replace_embedding({}, reembed_version)`: the executor fills the vector from the user's embedder |
/// | (the same kinds, once per plan that has reembed actions) | rebuild_index, targets = every re-embedded record | 1 | auto | none: the executor calls the user's index policy after the batches (index_policy.hpp) |
/// | conflict with evidence needs_human = true, or undecided by the chain | send_to_review | 3 | manual | `edit_set_status("pending_review")` on both records when `review_sets_pending` (see below) |
/// | cross_scope_duplicate, cross_scope_link, junk_content, duplicate_id, reference_cycle, content_empty, missing_scope, missing_source | send_to_review | 3 | manual | none: a person decides (scope changes, deletions and id fixes are tier 3 and outside the edit vocabulary) |
/// | check_skipped | nothing (information only) | | | |
/// | any other kind | nothing; a `deferred` note names it | | | |
///
/// ## Invariants
/// - **Nothing is deleted**: there is no delete edit, and the only statuses the planner sets are
///   "archived" and "pending_review".
/// - **Merges never cross scopes**: a duplicate cluster whose records are in different scopes is
///   refused (no action; a `deferred` note), whatever the detector said.
/// - **Tier 2 is always `automation::confirm`**: the planner never records an approval. Approving
///   tier 2 (by a confirming rule, a time window or a flag) is the executor's decision; tier 3 is
///   `manual` and needs a person.
/// - **Deterministic**: the same store, report and options give the same plan, byte for byte.
///   Actions are sorted by priority (higher first), then type, then targets, then idempotency key.
///   The idempotency key is the hex FNV-1a 64-bit hash (Fowler, Noll, Vo) of the type, targets and
///   canonically serialised edits (`compute_idempotency_key`); actions with equal keys are kept once.
///
/// ## Undecided conflicts
/// SPEC: undecided -> pending_review queue, nothing deleted. The plan's `send_to_review` actions
/// *are* that queue. With `review_sets_pending` (default true) a conflict's review action carries
/// `edit_set_status("pending_review")` for both records: it is tier 3 / manual, so it only runs
/// when a person approves it, and approving it takes both contradicting records out of retrieval
/// until the person resolves them. Set it to false to queue the review without touching the
/// records (both stay active and retrievable meanwhile).
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
/// again). When the records edited by the kept actions exceed `blast_radius_threshold`, the plan is
/// `suspended` with a reason: nothing may run without approval. Rate limits, concurrency, retries
/// and runs per day are enforced while executing (guardrails.hpp).
///
/// ## Priorities
/// tier 1 = 400, conflicts = 300, merges = 200, down-weights = 100, re-embedding = 10, index
/// rebuild = 5, review = 0. The executor runs actions in this order (guardrails.hpp,
/// `execution_order`).
///
/// ## Re-embedding and the index
/// These finding kinds say a record's vector is unusable or from another model: missing,
/// another dimension than the index's, non-finite, zero, not unit length, zero-padded, or a
/// minority embedding_version. Re-embedding them changes vectors the user's index still holds,
/// so the index is inconsistent with the store until rebuilt: the plan follows the `reembed`
/// batches with one `rebuild_index` action (tier 1: SPEC "rebuild a corrupt index"; it carries
/// no record edit, and the executor rebuilds only the targets the run actually re-embedded, so it
/// does nothing while the tier-3 batches wait for approval). Every re-embedding is tagged with an
/// embedding_version (`reembed_version`, else `apply_options::embed_version`; the executor refuses
/// an untagged one). The old vector is kept as the before-image in the write-ahead log for at
/// least `wal_compact_options::old_vector_retention` (default 14 days; SPEC: 7-15 days): WAL compaction never drops a
/// committed before-image and refuses logs younger than the retention (wal_compact.hpp).

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
#include "memhealth/store/store.hpp"
#include "memhealth/text/normalize.hpp"

namespace memhealth {

/// How `downweight` actions choose the new effective_weight (see "Stale weights").
enum class stale_weight_mode : std::uint8_t {
  detector_weight,  ///< the detector's decay `curve_weight` (else `weight`), at least `weight_floor`
  floor,            ///< always `weight_floor`
};

/// Execution priorities of planned actions (higher runs first).
namespace action_priority {
inline constexpr int tier1 = 400;       ///< automatic structural fixes
inline constexpr int conflict = 300;    ///< resolve_conflict
inline constexpr int merge = 200;       ///< merge_duplicates
inline constexpr int downweight = 100;  ///< downweight
inline constexpr int reembed = 10;      ///< reembed batches (tier 3)
inline constexpr int index_rebuild = 5; ///< rebuild_index, after the reembed batches (tier 1)
inline constexpr int review = 0;        ///< send_to_review (tier 3)
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
};

// ---------------------------------------------------------------- idempotency keys

/// FNV-1a 64-bit hash of bytes, continuing from `h` (Fowler-Noll-Vo; offset basis
/// 0xcbf29ce484222325, prime 0x100000001b3). Stable across platforms and runs.
constexpr std::uint64_t fnv1a_64(std::string_view bytes, std::uint64_t h = 0xcbf29ce484222325ULL) noexcept {
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

namespace detail {

inline void put_field(std::string& out, std::string_view s) {
  out += std::to_string(s.size());
  out += ':';
  out += s;
}

inline std::string hex64(std::uint64_t v) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[static_cast<std::size_t>(i)] = digits[v & 0xF];
  return s;
}

inline void put_metadata_value(std::string& out, const metadata_value& v) {
  out += metadata_type_name(v);
  out += '=';
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
        } else if constexpr (std::is_same_v<T, bool>) {
          out += x ? "true" : "false";
        } else if constexpr (std::is_same_v<T, std::int64_t>) {
          out += std::to_string(x);
        } else if constexpr (std::is_same_v<T, double>) {
          out += hex64(std::bit_cast<std::uint64_t>(x));
        } else if constexpr (std::is_same_v<T, std::string>) {
          put_field(out, x);
        } else {
          put_field(out, x.text);
        }
      },
      v);
}

/// Canonical, unambiguous text of one edit (length-prefixed strings, floats by bit pattern).
inline void put_edit(std::string& out, const record_edit& e) {
  put_field(out, e.record_id);
  std::visit(
      [&](const auto& op) {
        using T = std::decay_t<decltype(op)>;
        auto ids = [&](const std::vector<std::string>& v) {
          out += std::to_string(v.size());
          for (const auto& s : v) put_field(out, s);
        };
        if constexpr (std::is_same_v<T, edit_set_status>) {
          out += "S";
          put_field(out, op.status);
        } else if constexpr (std::is_same_v<T, edit_set_duplicate_of>) {
          out += "D";
          put_field(out, op.primary_id);
        } else if constexpr (std::is_same_v<T, edit_add_supersedes>) {
          out += "P";
          ids(op.ids);
        } else if constexpr (std::is_same_v<T, edit_append_notes>) {
          out += "N";
          ids(op.notes);
        } else if constexpr (std::is_same_v<T, edit_drop_links>) {
          out += "L";
          ids(op.ids);
        } else if constexpr (std::is_same_v<T, edit_set_weight>) {
          out += "W";
          out += hex64(std::bit_cast<std::uint64_t>(op.weight));
        } else if constexpr (std::is_same_v<T, edit_fill_metadata>) {
          out += "M";
          put_field(out, op.key);
          put_metadata_value(out, op.value);
        } else if constexpr (std::is_same_v<T, edit_normalize_timestamps>) {
          out += "T";
        } else {
          out += "E";
          out += std::to_string(op.embedding.size());
          for (float f : op.embedding) out += hex64(std::bit_cast<std::uint32_t>(f));
          put_field(out, op.version);
        }
      },
      e.op);
  out += ';';
}

}  // namespace detail

/// The idempotency key of an action: 16 lower-case hex digits of FNV-1a 64 over its type, targets
/// and canonically serialised edits (floats by bit pattern). Tier, priority, reasons and blast
/// radius do not enter it. @complexity O(size of the action).
inline std::string compute_idempotency_key(const repair_action& a) {
  std::string buf;
  detail::put_field(buf, a.type);
  buf += std::to_string(a.targets.size());
  for (const auto& t : a.targets) detail::put_field(buf, t);
  buf += std::to_string(a.edits.size());
  for (const auto& e : a.edits) detail::put_edit(buf, e);
  return detail::hex64(fnv1a_64(buf));
}

// ---------------------------------------------------------------- planner internals

namespace detail {

inline const std::string* evidence_text(const finding& f, std::string_view key) {
  const auto* v = f.evidence_of(key);
  return v ? std::get_if<std::string>(v) : nullptr;
}
inline std::optional<double> evidence_number(const finding& f, std::string_view key) {
  const auto* v = f.evidence_of(key);
  if (!v) return std::nullopt;
  if (const auto* d = std::get_if<double>(v)) return *d;
  if (const auto* i = std::get_if<std::int64_t>(v)) return static_cast<double>(*i);
  return std::nullopt;
}
inline bool evidence_flag(const finding& f, std::string_view key) {
  const auto* v = f.evidence_of(key);
  const bool* b = v ? std::get_if<bool>(v) : nullptr;
  return b && *b;
}
inline std::vector<std::string> evidence_texts(const finding& f, std::string_view key) {
  std::vector<std::string> out;
  for (const auto& [k, v] : f.evidence)
    if (k == key)
      if (const auto* s = std::get_if<std::string>(&v)) out.push_back(*s);
  return out;
}

inline std::string join_ids(const std::vector<std::string>& ids, std::size_t max_listed = 16) {
  std::string s;
  for (std::size_t i = 0; i < ids.size() && i < max_listed; ++i) {
    if (i) s += ' ';
    s += ids[i];
  }
  if (ids.size() > max_listed) s += " ... (" + std::to_string(ids.size()) + " ids)";
  return s;
}

inline std::string reason_of(const finding& f) {
  std::string s = f.kind + ": " + join_ids(f.record_ids);
  if (!f.detector.empty()) s += " (" + f.detector + ")";
  return s;
}

inline std::string metadata_text(const metadata_value& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return "null";
        } else if constexpr (std::is_same_v<T, bool>) {
          return x ? "true" : "false";
        } else if constexpr (std::is_same_v<T, std::int64_t>) {
          return std::to_string(x);
        } else if constexpr (std::is_same_v<T, double>) {
          char buf[32];
          auto r = std::to_chars(buf, buf + sizeof buf, x);
          return std::string(buf, r.ptr);
        } else if constexpr (std::is_same_v<T, std::string>) {
          return x;
        } else {
          return x.text;
        }
      },
      v);
}

template <class R>
bool has_local_timestamp(const R& r) {
  bool local = false;
  auto check = [&](const std::optional<timestamp>& t) { local = local || (t && t->is_local()); };
  if constexpr (field_created_at::available<const R>) check(field::created_at(r));
  if constexpr (field_updated_at::available<const R>) check(field::updated_at(r));
  if constexpr (field_last_accessed_at::available<const R>) check(field::last_accessed_at(r));
  return local;
}

template <class S>
std::string_view scope_at(const S& store, std::size_t i) {
  using R = typename S::record_type;
  if constexpr (scoped_record<R>)
    return trim_scope(field::scope(store.record(i)));
  else
    return {};
}

inline repair_action new_action(std::string_view type, int tier, automation who, int priority) {
  repair_action a;
  a.type = std::string(type);
  a.tier = tier;
  a.automation = who;
  a.priority = priority;
  a.rollback_method = "restore_before_images";
  return a;
}

template <class Op>
void add_edit(repair_action& a, std::string_view id, Op op) {
  record_edit e{std::string(id), record_edit_op(std::move(op))};
  if (std::find(a.edits.begin(), a.edits.end(), e) == a.edits.end()) a.edits.push_back(std::move(e));
}

// Per-record tier-1 actions: several findings of one record and type become one action.
struct tier1_table {
  std::map<std::pair<std::string, std::string>, repair_action> by_type_and_id;

  repair_action& get(std::string_view type, const std::string& id) {
    auto [it, fresh] = by_type_and_id.try_emplace({std::string(type), id});
    if (fresh) {
      it->second = new_action(type, 1, automation::automatic, action_priority::tier1);
      it->second.targets = {id};
    }
    return it->second;
  }
};

template <class S>
void finalize_action(const S& store, repair_action& a) {
  std::set<std::string_view> ids;
  for (const auto& e : a.edits) ids.insert(e.record_id);
  std::set<std::string_view> scopes;
  for (auto id : ids)
    if (auto i = store.find(id)) {
      const auto sc = scope_at(store, *i);
      if (!sc.empty()) scopes.insert(sc);
    }
  a.blast.records = ids.size();
  a.blast.scopes.assign(scopes.begin(), scopes.end());
  a.idempotency_key = compute_idempotency_key(a);
}

}  // namespace detail

// ---------------------------------------------------------------- the finding-kind table

/// How `make_plan` handles one finding kind: which planning step it goes through.
enum class plan_step : std::uint8_t {
  skip,               ///< information only (check_skipped): nothing planned, no note
  merge,              ///< merge a duplicate cluster (same scope only)
  conflict,           ///< decide by the rule chain; undecided or needs_human -> `review_action`
  downweight,         ///< down-weight a stale record (never raises a weight)
  fill_metadata,      ///< fill configured defaults of missing metadata keys (per record)
  set_pending,        ///< set an illegal status to pending_review (per record)
  normalize_times,    ///< normalise local timestamp offsets to UTC (per record)
  drop_links,         ///< drop a dangling link (per record)
  archive,            ///< archive a record merged into another but still active (per record)
  reembed,            ///< queue the record for re-embedding batches (+ one rebuild_index)
  review,             ///< send to a person (tier 3)
};

/// One row of the planner's finding-kind-to-action table (the file comment's table, as code).
struct kind_plan_entry {
  std::string_view kind;     ///< a `finding_kinds` constant
  plan_step step;            ///< the planning step
  std::string_view action;   ///< the `action_types` constant it plans (empty for `skip`)
  int tier;                  ///< 1, 2 or 3 (0 for `skip`)
  memhealth::automation automation;  ///< who may run it
  int priority;              ///< an `action_priority` value
};

/// The finding-kind-to-action table of `make_plan`, one row per kind in `all_finding_kinds`.
/// A conflict the rules cannot decide becomes `review_action` instead of its row's action.
/// A kind not in the table gets no action and a `deferred` note.
inline constexpr std::array<kind_plan_entry, 25> kind_plan_table{{
    {finding_kinds::content_empty, plan_step::review, action_types::send_to_review, 3, automation::manual, action_priority::review},
    {finding_kinds::embedding_missing, plan_step::reembed, action_types::reembed, 3, automation::manual, action_priority::reembed},
    {finding_kinds::embedding_dim_mismatch, plan_step::reembed, action_types::reembed, 3, automation::manual, action_priority::reembed},
    {finding_kinds::embedding_non_finite, plan_step::reembed, action_types::reembed, 3, automation::manual, action_priority::reembed},
    {finding_kinds::embedding_zero_norm, plan_step::reembed, action_types::reembed, 3, automation::manual, action_priority::reembed},
    {finding_kinds::embedding_not_normalized, plan_step::reembed, action_types::reembed, 3, automation::manual, action_priority::reembed},
    {finding_kinds::embedding_zero_padded, plan_step::reembed, action_types::reembed, 3, automation::manual, action_priority::reembed},
    {finding_kinds::illegal_status, plan_step::set_pending, action_types::set_status_pending_review, 1, automation::automatic, action_priority::tier1},
    {finding_kinds::missing_source, plan_step::review, action_types::send_to_review, 3, automation::manual, action_priority::review},
    {finding_kinds::missing_scope, plan_step::review, action_types::send_to_review, 3, automation::manual, action_priority::review},
    {finding_kinds::metadata_schema_violation, plan_step::fill_metadata, action_types::fill_metadata_defaults, 1, automation::automatic, action_priority::tier1},
    {finding_kinds::duplicate_id, plan_step::review, action_types::send_to_review, 3, automation::manual, action_priority::review},
    {finding_kinds::dangling_reference, plan_step::drop_links, action_types::drop_dangling_links, 1, automation::automatic, action_priority::tier1},
    {finding_kinds::reference_cycle, plan_step::review, action_types::send_to_review, 3, automation::manual, action_priority::review},
    {finding_kinds::merged_but_active, plan_step::archive, action_types::archive_merged, 1, automation::automatic, action_priority::tier1},
    {finding_kinds::timestamp_inconsistent, plan_step::normalize_times, action_types::normalize_timestamps, 1, automation::automatic, action_priority::tier1},
    {finding_kinds::mixed_embedding_version, plan_step::reembed, action_types::reembed, 3, automation::manual, action_priority::reembed},
    {finding_kinds::exact_duplicate, plan_step::merge, action_types::merge_duplicates, 2, automation::confirm, action_priority::merge},
    {finding_kinds::near_duplicate, plan_step::merge, action_types::merge_duplicates, 2, automation::confirm, action_priority::merge},
    {finding_kinds::cross_scope_duplicate, plan_step::review, action_types::send_to_review, 3, automation::manual, action_priority::review},
    {finding_kinds::conflict, plan_step::conflict, action_types::resolve_conflict, 2, automation::confirm, action_priority::conflict},
    {finding_kinds::stale, plan_step::downweight, action_types::downweight, 2, automation::confirm, action_priority::downweight},
    {finding_kinds::cross_scope_link, plan_step::review, action_types::send_to_review, 3, automation::manual, action_priority::review},
    {finding_kinds::junk_content, plan_step::review, action_types::send_to_review, 3, automation::manual, action_priority::review},
    {finding_kinds::check_skipped, plan_step::skip, {}, 0, automation::automatic, 0},
}};

/// The review action that replaces a conflict's row when the rules cannot decide it.
inline constexpr kind_plan_entry review_action{finding_kinds::conflict, plan_step::review, action_types::send_to_review,
                                               3, automation::manual, action_priority::review};

/// The table row of `kind`, or nullptr for a kind the planner does not know. @complexity O(table).
constexpr const kind_plan_entry* find_kind_plan(std::string_view kind) noexcept {
  for (const auto& e : kind_plan_table)
    if (e.kind == kind) return &e;
  return nullptr;
}

namespace detail {

inline repair_action new_action(const kind_plan_entry& e) {
  return new_action(e.action, e.tier, e.automation, e.priority);
}

}  // namespace detail

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
repair_plan make_plan(const S& store, const report& r, const planner_options& opt, const Rules& rules = {}) {
  using R = typename S::record_type;
  static_assert(conflict_rule<Rules, R>,
                "memhealth: make_plan's Rules must be callable as `rule_verdict operator()(const R&, "
                "const R&) const` for the store's record type (e.g. a conflict_rule_chain).");
  namespace fk = finding_kinds;
  repair_plan plan;
  std::vector<repair_action> actions;
  detail::tier1_table tier1;
  std::map<std::string, std::vector<std::string>> reembed;  // id -> reasons (sorted ids)
  auto& deferred = plan.deferred;

  auto locate = [&](const finding& f, std::vector<std::size_t>& idx) {
    idx.clear();
    for (const auto& id : f.record_ids) {
      auto i = store.find(id);
      if (!i) {
        deferred.push_back(f.kind + ": record '" + id + "' not found in the store; not planned");
        return false;
      }
      idx.push_back(*i);
    }
    return true;
  };
  std::vector<std::size_t> idx;

  for (const finding& f : r.findings) {
    const std::string_view kind = f.kind;
    const kind_plan_entry* row = find_kind_plan(kind);
    if (row && row->step == plan_step::skip) continue;
    if (f.record_ids.empty()) {
      deferred.push_back(f.kind + ": finding without record ids; not planned");
      continue;
    }
    if (!row) {
      deferred.push_back("no repair planned for finding kind '" + f.kind + "': " + detail::join_ids(f.record_ids));
      continue;
    }

    switch (row->step) {
    case plan_step::skip:
      break;
    case plan_step::merge: {
      if (f.record_ids.size() < 2 || !locate(f, idx)) continue;
      const std::string_view scope0 = detail::scope_at(store, idx[0]);
      bool same_scope = true;
      for (std::size_t i : idx) same_scope = same_scope && detail::scope_at(store, i) == scope0;
      if (!same_scope) {
        std::string scopes;
        for (std::size_t i : idx) scopes += (scopes.empty() ? "" : ", ") + std::string(detail::scope_at(store, i));
        deferred.push_back("refused merge across scopes: " + detail::join_ids(f.record_ids) + " (scopes " + scopes + ")");
        continue;
      }
      const std::string& primary = f.record_ids[0];
      const R& p = store.record(idx[0]);
      const std::string p_norm = opt.normalizer(field::content(p));
      repair_action a = detail::new_action(*row);
      a.targets = f.record_ids;
      a.reasons.push_back(detail::reason_of(f));
      std::vector<std::string> notes;
      for (std::size_t k = 1; k < idx.size(); ++k) {
        const R& s = store.record(idx[k]);
        const std::string& sid = f.record_ids[k];
        if (sid == primary) continue;
        if (opt.normalizer(field::content(s)) != p_norm)
          notes.push_back("merged from " + sid + ": " + std::string(field::content(s)));
        if constexpr (metadata_record<R>) {
          using map_t = std::remove_cvref_t<decltype(field::metadata(p))>;
          if constexpr (std::is_same_v<map_t, metadata_map>) {
            if (opt.note_metadata_on_merge) {
              const auto& pm = field::metadata(p);
              for (const auto& [key, value] : field::metadata(s)) {
                if (std::holds_alternative<std::monostate>(value) || pm.find(key) != pm.end()) continue;
                notes.push_back("merged from " + sid + ": metadata " + key + "=" + detail::metadata_text(value));
              }
            }
          }
        }
      }
      if (!notes.empty()) detail::add_edit(a, primary, edit_append_notes{std::move(notes)});
      for (std::size_t k = 1; k < idx.size(); ++k) {
        const std::string& sid = f.record_ids[k];
        if (sid == primary) continue;
        detail::add_edit(a, sid, edit_set_duplicate_of{primary});
        detail::add_edit(a, sid, edit_set_status{std::string(to_string(record_status::archived))});
      }
      actions.push_back(std::move(a));
      break;
    }
    case plan_step::conflict: {
      if (f.record_ids.size() != 2 || !locate(f, idx)) {
        if (f.record_ids.size() != 2) deferred.push_back("conflict: expected two record ids: " + detail::join_ids(f.record_ids));
        continue;
      }
      const bool needs_human = detail::evidence_flag(f, evidence_keys::needs_human);
      rule_decision d;
      d.rule_index = 0;
      if (!needs_human) {
        if constexpr (requires { rules.decide(store.record(idx[0]), store.record(idx[1])); })
          d = rules.decide(store.record(idx[0]), store.record(idx[1]));
        else
          d.verdict = rules(store.record(idx[0]), store.record(idx[1]));
      }
      std::string reason = detail::reason_of(f);
      if (const auto* why = detail::evidence_text(f, evidence_keys::reason)) reason += " reason=" + *why;
      if (d.verdict == rule_verdict::undecided) {
        repair_action a = detail::new_action(review_action);
        a.targets = f.record_ids;
        a.reasons.push_back(std::move(reason));
        a.reasons.push_back(needs_human ? "needs a person (needs_human)" : "undecided by the conflict rules");
        if (opt.review_sets_pending)
          for (const auto& id : f.record_ids)
            detail::add_edit(a, id, edit_set_status{std::string(to_string(record_status::pending_review))});
        actions.push_back(std::move(a));
      } else {
        const bool a_wins = d.verdict == rule_verdict::winner_a;
        const std::string& winner = f.record_ids[a_wins ? 0 : 1];
        const std::string& loser = f.record_ids[a_wins ? 1 : 0];
        repair_action a = detail::new_action(*row);
        a.targets = {winner, loser};
        a.reasons.push_back(std::move(reason));
        std::string by = d.rule_name.empty() ? std::string("rule") : std::string(d.rule_name);
        a.reasons.push_back("decided by " + by + ": " + winner + " wins");
        detail::add_edit(a, winner, edit_add_supersedes{{loser}});
        detail::add_edit(a, loser, edit_set_status{std::string(to_string(record_status::archived))});
        actions.push_back(std::move(a));
      }
      break;
    }
    case plan_step::downweight: {
      if (!locate(f, idx)) continue;
      double target = opt.weight_floor;
      if (opt.stale_weight == stale_weight_mode::detector_weight) {
        auto w = detail::evidence_number(f, evidence_keys::curve_weight);
        if (!w) w = detail::evidence_number(f, evidence_keys::weight);
        if (w && std::isfinite(*w)) target = std::max(*w, opt.weight_floor);
      }
      target = std::isfinite(target) ? std::clamp(target, 0.0, 1.0) : 0.0;
      for (std::size_t k = 0; k < idx.size(); ++k) {
        double current = 1.0;
        if constexpr (weighted_record<R>)
          if (auto w = field::effective_weight(store.record(idx[k]))) current = *w;
        if (std::isfinite(current) && current <= target) continue;  // never raise a weight
        repair_action a = detail::new_action(*row);
        a.targets = {f.record_ids[k]};
        a.reasons.push_back(detail::reason_of(f));
        detail::add_edit(a, f.record_ids[k], edit_set_weight{target});
        actions.push_back(std::move(a));
      }
      break;
    }
    case plan_step::fill_metadata: {
      if (!locate(f, idx)) continue;
      const std::string& id = f.record_ids[0];
      std::vector<std::pair<std::string, metadata_value>> fills;
      for (const auto& key : detail::evidence_texts(f, evidence_keys::missing)) {
        auto it = opt.metadata_defaults.find(key);
        if (it == opt.metadata_defaults.end())
          deferred.push_back("metadata_schema_violation " + id + ": no default configured for missing key '" + key + "'");
        else
          fills.emplace_back(key, it->second);
      }
      for (const auto& key : detail::evidence_texts(f, evidence_keys::wrong_type))
        deferred.push_back("metadata_schema_violation " + id + ": key '" + key + "' has the wrong type; needs a person");
      if (fills.empty()) continue;
      auto& a = tier1.get(row->action, id);
      a.reasons.push_back(detail::reason_of(f));
      for (auto& [key, value] : fills) detail::add_edit(a, id, edit_fill_metadata{key, value});
      break;
    }
    case plan_step::set_pending: {
      if (!locate(f, idx)) continue;
      auto& a = tier1.get(row->action, f.record_ids[0]);
      a.reasons.push_back(detail::reason_of(f));
      detail::add_edit(a, f.record_ids[0], edit_set_status{std::string(to_string(record_status::pending_review))});
      break;
    }
    case plan_step::normalize_times: {
      if (!locate(f, idx)) continue;
      const std::string& id = f.record_ids[0];
      const auto* problem = detail::evidence_text(f, evidence_keys::problem);
      const std::string what = problem ? *problem : std::string("unknown problem");
      if (detail::has_local_timestamp(store.record(idx[0]))) {
        auto& a = tier1.get(row->action, id);
        a.reasons.push_back(detail::reason_of(f) + " problem=" + what);
        detail::add_edit(a, id, edit_normalize_timestamps{});
        deferred.push_back("timestamp_inconsistent " + id + " (" + what +
                           "): local offsets normalised to UTC, but the instants themselves need a person");
      } else {
        deferred.push_back("timestamp_inconsistent " + id + " (" + what + "): all timestamps are UTC; needs a person");
      }
      break;
    }
    case plan_step::drop_links: {
      const std::string& id = f.record_ids[0];
      if (!store.find(id)) {
        deferred.push_back(f.kind + ": record '" + id + "' not found in the store; not planned");
        continue;
      }
      const auto* target = detail::evidence_text(f, evidence_keys::target);
      if (!target) {
        deferred.push_back("dangling_reference " + id + ": no target in evidence; not planned");
        continue;
      }
      const auto* fld = detail::evidence_text(f, evidence_keys::field);
      auto& a = tier1.get(row->action, id);
      a.reasons.push_back(detail::reason_of(f) + " -> " + *target);
      detail::add_edit(a, id, edit_append_notes{{"dropped dangling link " + (fld ? *fld : std::string("link")) + " -> " + *target}});
      detail::add_edit(a, id, edit_drop_links{{*target}});
      break;
    }
    case plan_step::archive: {
      if (!locate(f, idx)) continue;
      auto& a = tier1.get(row->action, f.record_ids[0]);
      a.reasons.push_back(detail::reason_of(f));
      detail::add_edit(a, f.record_ids[0], edit_set_status{std::string(to_string(record_status::archived))});
      break;
    }
    case plan_step::reembed: {
      for (const auto& id : f.record_ids) {
        if (!store.find(id)) {
          deferred.push_back(f.kind + ": record '" + id + "' not found in the store; not planned");
          continue;
        }
        reembed[id].push_back(f.kind);
      }
      if (kind == fk::mixed_embedding_version) {
        const auto total = detail::evidence_number(f, evidence_keys::minority_count);
        if (total && *total > static_cast<double>(f.record_ids.size()))
          deferred.push_back("mixed_embedding_version: " + std::to_string(static_cast<std::int64_t>(*total)) +
                             " minority records, " + std::to_string(f.record_ids.size()) +
                             " listed in the finding; the rest are planned after the next detection run");
      }
      break;
    }
    case plan_step::review: {
      repair_action a = detail::new_action(*row);
      a.targets = f.record_ids;
      a.reasons.push_back(detail::reason_of(f));
      if (!f.suggested_repair.empty()) a.reasons.push_back("suggested: " + f.suggested_repair);
      actions.push_back(std::move(a));
      break;
    }
    }
  }

  for (auto& [key, a] : tier1.by_type_and_id) actions.push_back(std::move(a));
  {
    const std::size_t batch = std::max<std::size_t>(1, opt.reembed_batch_size);
    auto it = reembed.begin();
    while (it != reembed.end()) {
      repair_action a = detail::new_action(action_types::reembed, 3, automation::manual, action_priority::reembed);
      for (std::size_t k = 0; k < batch && it != reembed.end(); ++k, ++it) {
        a.targets.push_back(it->first);
        auto& kinds_of = it->second;  // sorted and unique: independent of finding order
        std::sort(kinds_of.begin(), kinds_of.end());
        kinds_of.erase(std::unique(kinds_of.begin(), kinds_of.end()), kinds_of.end());
        std::string why;
        for (const auto& kd : kinds_of) why += (why.empty() ? "" : ", ") + kd;
        a.reasons.push_back(it->first + ": " + why);
        detail::add_edit(a, it->first, edit_replace_embedding{{}, opt.reembed_version});
      }
      actions.push_back(std::move(a));
    }
    if (!reembed.empty()) {  // the index holds the old vectors until it is rebuilt
      repair_action a = detail::new_action(action_types::rebuild_index, 1, automation::automatic, action_priority::index_rebuild);
      a.rollback_method = "rebuild_index_again";
      for (const auto& [id, kinds_of] : reembed) a.targets.push_back(id);
      a.reasons.push_back("re-embedding " + std::to_string(reembed.size()) +
                          " records leaves the vector index inconsistent with the store until it is rebuilt");
      actions.push_back(std::move(a));
    }
  }

  for (auto& a : actions) detail::finalize_action(store, a);
  std::sort(actions.begin(), actions.end(), [](const repair_action& x, const repair_action& y) {
    if (x.priority != y.priority) return x.priority > y.priority;
    if (x.type != y.type) return x.type < y.type;
    if (x.targets != y.targets) return x.targets < y.targets;
    return x.idempotency_key < y.idempotency_key;
  });
  actions.erase(std::unique(actions.begin(), actions.end(),
                            [](const repair_action& x, const repair_action& y) {
                              return x.idempotency_key == y.idempotency_key && x.type == y.type && x.targets == y.targets;
                            }),
                actions.end());

  // max_records_per_run: take actions in order while their new records fit.
  std::set<std::string> used;
  std::size_t left_out = 0;
  std::map<std::string, std::size_t> left_out_by_type;
  constexpr std::size_t listed_limit = 100;
  for (auto& a : actions) {
    std::vector<std::string_view> fresh;
    for (const auto& e : a.edits)
      if (!used.count(e.record_id) && std::find(fresh.begin(), fresh.end(), e.record_id) == fresh.end())
        fresh.push_back(e.record_id);
    if (used.size() + fresh.size() > opt.max_records_per_run) {
      if (left_out < listed_limit)
        deferred.push_back("max_records_per_run " + std::to_string(opt.max_records_per_run) + ": deferred " + a.type +
                           " " + detail::join_ids(a.targets, 4) + " [" + a.idempotency_key + "]");
      ++left_out;
      ++left_out_by_type[a.type];
      continue;
    }
    for (auto id : fresh) used.emplace(id);
    plan.actions.push_back(std::move(a));
  }
  if (left_out > 0) {
    std::string by;
    for (const auto& [t, n] : left_out_by_type) by += (by.empty() ? "" : ", ") + t + " " + std::to_string(n);
    deferred.push_back("max_records_per_run " + std::to_string(opt.max_records_per_run) + ": " +
                       std::to_string(left_out) + " actions deferred in total (" + by + ")");
  }

  if (used.size() > opt.blast_radius_threshold) {
    plan.suspended = true;
    std::set<std::string_view> scopes;
    for (const auto& a : plan.actions) scopes.insert(a.blast.scopes.begin(), a.blast.scopes.end());
    plan.suspend_reason = "blast radius " + std::to_string(used.size()) + " records in " +
                          std::to_string(scopes.size()) + " scopes exceeds the threshold of " +
                          std::to_string(opt.blast_radius_threshold) + " records; approve the plan to run it";
  }
  return plan;
}

/// Blast radius of a whole plan: distinct records edited by its actions and their scopes
/// (the union of the actions' `blast` scopes), sorted. @complexity O(E log E).
inline blast_radius plan_blast_radius(const repair_plan& p) {
  std::set<std::string_view> ids, scopes;
  for (const auto& a : p.actions) {
    for (const auto& e : a.edits) ids.insert(e.record_id);
    scopes.insert(a.blast.scopes.begin(), a.blast.scopes.end());
  }
  blast_radius b;
  b.records = ids.size();
  b.scopes.assign(scopes.begin(), scopes.end());
  return b;
}

}  // namespace memhealth
