#pragma once
/// @file store_identity.hpp
/// Which store a write-ahead log belongs to: a fingerprint of the store's record ids.
///
/// A repair never adds, removes or renames a record, so the set of record ids is the part of a
/// store that a run leaves alone: the store before `apply`, the store it wrote and the store a
/// later run reads all share it, while another store (another user's, another dataset) has
/// another. `wal_writer` writes the identity into the log's header and refuses to append a run
/// for a store whose fingerprint differs; `rollback` and `recover` (rollback.hpp) refuse a log
/// whose records mostly are not in the store they are given (see `check_log_store`).
///
/// The fingerprint is the CRC-64/XZ (checksum.hpp) of the distinct ids in byte order, each
/// followed by '\n', as 16 hex digits. It is not a secret and not authentication: it tells
/// stores apart, it does not prove where a log came from.
///
/// A store that has an id of its own (a `database_id()` member returning text, such as the
/// SQLite store's random 128-bit id in `memhealth_meta`) has it recorded too; when the log and
/// the store both have one, it decides: the same id is the same store whatever records were
/// inserted or deleted since, another id is another store even with the same record ids (two
/// databases imported from one file). A file copy of a database keeps its id.

///
/// ## Which store a plan was made for
/// A plan names records by id and its index actions act on the user's vector index, so a plan
/// applied to another store, or to a store emptied or cut since, must not run blindly: a
/// `clean_index` removes served ids that have no live record *in the store given*, and a
/// `check_rebuild_index` rebuilds the index from it. `make_plan` and `make_plan_file` record
/// the store's `plan_store_fingerprint` in the plan (`plan_store_of`): records, distinct ids,
/// live records, the CRC-64/XZ of the sorted ids (as above) and a sample of the ids: the
/// `plan_store_sample_size` (128) smallest `id_sample_hash` values (FNV-1a 64 of the id, then
/// the SplitMix64 finaliser), a uniform sample that does not depend on the store's order.
/// `check_plan_store` compares it with the store given, in O(n log n):
/// - `kept`: the share of the sampled ids still in the store (the share of the plan's ids kept);
/// - `foreign`: of the store's ids whose hash falls in the sample's range (at most the largest
///   sampled hash; every id when the sample holds all of the plan's ids), the share not sampled:
///   ids the plan's store did not have (exact over that range: every plan id in it is sampled).
/// The verdict, in this order:
/// - **other**: the store has ids, `kept` < 1/2 and `foreign` > 1/2: most of the plan's ids are
///   gone and most of the store's are new. Another store: `apply` refuses the plan.
/// - **shrunk**: the store has no live record, or `kept` < 1/2 (it lost most of the plan's
///   records), or fewer than half of the plan's live records are live now. Index actions are
///   refused (a rebuild or clean-up from what is left would empty the index); record actions run,
///   each checked against the records as they are.
/// - **changed**: anything else with another digest or other counts: records edited, added or
///   removed since the plan; each action is checked against the records as they are now.
/// - **same**: the same ids and counts.
/// With 128 sampled ids, `kept` is within 0.09 of the true share (one standard deviation, at
/// most); for a plan's store of 128 ids or fewer it is exact.

#include <algorithm>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memhealth/record/traits.hpp"
#include "memhealth/repair/action.hpp"
#include "memhealth/repair/checksum.hpp"
#include "memhealth/repair/idempotency.hpp"
#include "memhealth/repair/index_policy.hpp"
#include "memhealth/store/store.hpp"

namespace memhealth {

/// The identity of a store as written in a log header (`"store":{...}`).
struct store_identity {
  std::string path;  ///< where the store was read when the log was made (for people; not compared)
  std::string fingerprint;  ///< CRC-64/XZ of the sorted distinct record ids, 16 hex digits
  std::size_t records = 0;  ///< records in the store at that time (duplicates included)
  std::string database_id;  ///< the store's own id (`S::database_id()`), empty when it has none
  friend bool operator==(const store_identity&, const store_identity&) = default;
};

/// Computes the identity of `store` (see the file comment); `path` is recorded as given.
/// @complexity O(n log n) in the number of records (the ids are sorted), O(total id bytes) memory.
template <record_store S>
[[nodiscard]] store_identity identify_store(const S& store, std::string path = {}) {
  std::vector<std::string> ids;  // copies: a store's record(i) may return a temporary
  ids.reserve(store.size());
  for (std::size_t i = 0; i < store.size(); ++i) ids.emplace_back(field::id(store.record(i)));
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  crc64_engine e;
  for (const std::string& id : ids) {
    e.process_bytes(id.data(), id.size());
    e.process_byte('\n');
  }
  store_identity out{std::move(path), hex16(e.checksum()), store.size(), {}};
  if constexpr (requires {
                  { store.database_id() } -> std::convertible_to<std::string_view>;
                })
    out.database_id = std::string(std::string_view(store.database_id()));
  return out;
}

/// How many ids a plan's store fingerprint samples (`plan_store_fingerprint::sample`).
inline constexpr std::size_t plan_store_sample_size = 128;

/// The hash by which a plan's fingerprint samples ids: FNV-1a 64 of the id's bytes, then the
/// SplitMix64 finaliser (so the smallest values are a uniform sample of the ids).
[[nodiscard]] constexpr std::uint64_t id_sample_hash(std::string_view id) noexcept {
  std::uint64_t x = fnv1a_64(id);
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

namespace detail {
// The distinct record ids of a store, sorted (copies: a store's record(i) may return a
// temporary).
template <record_store S>
std::vector<std::string> sorted_distinct_ids(const S& store) {
  std::vector<std::string> ids;
  ids.reserve(store.size());
  for (std::size_t i = 0; i < store.size(); ++i) ids.emplace_back(field::id(store.record(i)));
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}
}  // namespace detail

/// The fingerprint of `store` that a plan records (see "Which store a plan was made for").
/// @complexity O(n log n) in the number of records; O(total id bytes) memory.
template <record_store S>
[[nodiscard]] plan_store_fingerprint plan_store_of(const S& store) {
  plan_store_fingerprint f;
  f.records = store.size();
  for (std::size_t i = 0; i < store.size(); ++i) f.live += index_live(store, i) ? 1 : 0;
  const std::vector<std::string> ids = detail::sorted_distinct_ids(store);
  f.ids = ids.size();
  crc64_engine e;
  std::vector<std::uint64_t> hashes;
  hashes.reserve(ids.size());
  for (const std::string& id : ids) {
    e.process_bytes(id.data(), id.size());
    e.process_byte('\n');
    hashes.push_back(id_sample_hash(id));
  }
  f.ids_crc64 = hex16(e.checksum());
  const std::size_t k = std::min(plan_store_sample_size, hashes.size());
  std::partial_sort(hashes.begin(), hashes.begin() + static_cast<std::ptrdiff_t>(k), hashes.end());
  f.sample.assign(hashes.begin(), hashes.begin() + static_cast<std::ptrdiff_t>(k));
  return f;
}

/// How a store compares with the one a plan was made from (`check_plan_store`).
enum class plan_store_verdict : std::uint8_t {
  same,     ///< the same ids and counts
  changed,  ///< records edited, added or removed since the plan, most ids kept
  shrunk,   ///< no live record now, or most of the plan's (live) records gone: no index actions
  other,    ///< another store: most of the plan's ids gone and most of the store's ids new
};

/// Text of a verdict ("same", "changed", "shrunk", "other").
constexpr std::string_view to_string(plan_store_verdict v) noexcept {
  constexpr std::string_view names[] = {"same", "changed", "shrunk", "other"};
  return names[static_cast<int>(v)];
}

/// Result of `check_plan_store`.
struct plan_store_check {
  plan_store_verdict verdict = plan_store_verdict::same;  ///< see the file comment
  double kept = 1;             ///< share of the plan's sampled ids still in the store
  double foreign = 0;          ///< share of the store's ids in the sample's range that are new
  std::size_t sampled = 0;     ///< ids the plan sampled
  std::size_t in_range = 0;    ///< the store's ids in the sample's hash range
  plan_store_fingerprint now;  ///< the store's own fingerprint
  std::string reason;          ///< a sentence for people (empty for `same`)
};

/// Compares `store` with the fingerprint `planned` of the store a plan was made from (see the
/// file comment for the rule). Never throws but for allocation.
/// @complexity O(n log n) in the number of records.
template <record_store S>
[[nodiscard]] plan_store_check check_plan_store(const plan_store_fingerprint& planned,
                                                const S& store) {
  plan_store_check c;
  c.now = plan_store_of(store);
  std::vector<std::uint64_t> here;  // the sample hash of every distinct id, sorted
  here.reserve(c.now.ids);
  for (const auto& id : detail::sorted_distinct_ids(store)) here.push_back(id_sample_hash(id));
  std::sort(here.begin(), here.end());
  std::vector<std::uint64_t> sample = planned.sample;
  std::sort(sample.begin(), sample.end());
  sample.erase(std::unique(sample.begin(), sample.end()), sample.end());
  c.sampled = sample.size();
  std::size_t kept = 0;
  for (const std::uint64_t h : sample) kept += std::binary_search(here.begin(), here.end(), h);
  if (!sample.empty()) c.kept = static_cast<double>(kept) / static_cast<double>(sample.size());
  // the sample's range: every plan id whose hash is at most this was sampled
  const std::uint64_t top = sample.empty() ? 0
                            : sample.size() >= planned.ids
                                ? std::numeric_limits<std::uint64_t>::max()
                                : sample.back();
  std::size_t fresh = 0;
  if (!sample.empty())
    for (const std::uint64_t h : here) {
      if (h > top) break;
      ++c.in_range;
      fresh += !std::binary_search(sample.begin(), sample.end(), h);
    }
  if (c.in_range) c.foreign = static_cast<double>(fresh) / static_cast<double>(c.in_range);
  const auto pct = [](double x) { return std::to_string(static_cast<int>(x * 100 + 0.5)) + "%"; };
  const std::string counts =
      "the plan was made from a store of " + std::to_string(planned.records) + " records (" +
      std::to_string(planned.live) + " live), this one has " + std::to_string(c.now.records) +
      " (" + std::to_string(c.now.live) + " live)";
  if (c.now.ids > 0 && !sample.empty() && c.kept < 0.5 && c.foreign > 0.5) {
    c.verdict = plan_store_verdict::other;
    c.reason = "most record ids differ: " + pct(c.kept) +
               " of the plan's sampled record ids are in it and " + pct(c.foreign) +
               " of its ids (of " + std::to_string(c.in_range) +
               " in the sample's range) were not in the plan's store; " + counts;
  } else if (c.now.live == 0 || (!sample.empty() && c.kept < 0.5) ||
             c.now.live * 2 < planned.live) {
    c.verdict = plan_store_verdict::shrunk;
    if (c.now.live == 0)
      c.reason = "the store has no live record (" + counts + ")";
    else if (!sample.empty() && c.kept < 0.5)
      c.reason = "the store lost most of its records since the plan (" + pct(c.kept) +
                 " of the plan's sampled record ids are in it; " + counts + ")";
    else
      c.reason =
          "the store lost most of its live records since the plan (archived, pending "
          "review or removed; " +
          counts + ")";
  } else if (c.now.ids_crc64 != planned.ids_crc64 || c.now.records != planned.records ||
             c.now.live != planned.live) {
    c.verdict = plan_store_verdict::changed;
    c.reason = "the store changed since the plan (" + pct(c.kept) +
               " of the plan's sampled record ids are in it; " + counts + ")";
  }
  return c;
}

/// The digest of what a plan's decision about one record rests on, recorded per record an action
/// reads (`repair_action::seen`) and compared by `apply_plan` before it runs the action: CRC-64/XZ
/// over the record's id, content, scope, and the instants (UTC milliseconds) of created_at and
/// updated_at, for the fields the record type has (an absent optional field counts as "-").
/// Status, effective_weight, links, metadata and the embedding are left out on purpose: the
/// plan's own actions write them (an earlier run's tier-1 action must not make a later run's
/// tier-2 action over the same record look stale), and a writer that changes them normally
/// bumps updated_at, which is in. @complexity O(size of those fields).
template <class R>
requires basic_record<R>
[[nodiscard]] std::uint64_t record_decision_digest(const R& r) {
  crc64_engine e;
  const auto put = [&](std::string_view tag, std::string_view v) {
    e.process_bytes(tag.data(), tag.size());
    e.process_byte('=');
    const std::string n = std::to_string(v.size());
    e.process_bytes(n.data(), n.size());  // length first: no two field lists give one stream
    e.process_byte(':');
    e.process_bytes(v.data(), v.size());
    e.process_byte('\n');
  };
  const auto put_time = [&](std::string_view tag, const std::optional<timestamp>& t) {
    put(tag, t ? std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    t->instant.time_since_epoch())
                                    .count())
               : std::string("-"));
  };
  put("id", field::id(r));
  put("content", field::content(r));
  if constexpr (detail::field_scope::available<const R>) put("scope", field::scope(r));
  if constexpr (detail::field_created_at::available<const R>) {
    const std::optional<timestamp> t = field::created_at(r);
    put_time("created_at", t);
  }
  if constexpr (detail::field_updated_at::available<const R>) {
    const std::optional<timestamp> t = field::updated_at(r);
    put_time("updated_at", t);
  }
  return e.checksum();
}

/// Records in `a.seen` the `record_decision_digest` of every record of `store` the action names
/// (its targets and its edits' records; an id not in the store is left out). Index actions
/// (`is_index_action`) and actions without edits record nothing: they change no record.
template <record_store S>
void note_seen_records(const S& store, repair_action& a) {
  a.seen.clear();
  if (is_index_action(a.type) || a.edits.empty()) return;
  const auto note = [&](const std::string& id) {
    if (a.seen.count(id)) return;
    if (const auto i = store.find(id)) a.seen[id] = record_decision_digest(store.record(*i));
  };
  for (const auto& id : a.targets) note(id);
  for (const auto& e : a.edits) note(e.record_id);
}

}  // namespace memhealth
