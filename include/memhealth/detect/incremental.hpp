#pragma once
/// @file incremental.hpp
/// Incremental detection that costs what changed (issue 20): `run_incremental(pipeline, store,
/// options)` gives the report `pipeline.run(store, options)` gives, but runs the scope-local
/// detectors (duplicates, conflicts, hygiene) on a `subset_store` of the records they can need,
/// so they neither normalise every text nor build the unit-vector matrix of every record.
///
/// ## The subset (`incremental_subset`)
/// For the changed records C of a run (what `detection_context::is_changed` selects: `since`
/// and/or the `changed` mask), the subset is, in store order:
/// 1. every record of every scope that holds a record of C (records of a type without a scope
///    all share one scope), and
/// 2. every record, in any scope and of any status, whose normalised text is non-empty and equal
///    to the normalised text of a record of C.
///
/// Why the scope-local detectors then report exactly what a full run reports:
/// - exact and near duplicate clusters and conflict pairs never span two scopes, and are
///   reported only when a member is changed: the scope of such a member is whole in the subset,
///   so the same pairs, clusters, members, primaries and similarities are found (the unit rows of
///   a record do not depend on the other rows). The partial scopes that rule 2 brings in hold no
///   changed record, so nothing is reported from them (the candidate joins skip groups without a
///   changed record, so no pair-budget finding either).
/// - a cross_scope_duplicate is reported for a text when a record holding it is changed, and
///   lists every record holding it: rule 2 brings them all in, in store order.
/// - hygiene looks at changed records only.
/// - Orders are kept: the subset keeps the store order, and every detector orders its findings
///   by record index (or by sets of them), which a strictly increasing map leaves as they are.
///
/// The other detectors (structural, scope, staleness, and any detector without
/// `scope_local_detector`) run on the whole store as before: their store-wide checks (duplicate
/// ids with their indices, reference cycles, merged-but-active records, the store-wide majority
/// embedding version, cross-scope links, staleness of unchanged records) are exact that way, and
/// none of them normalises texts or builds the unit matrix, so they cost O(n) without the d
/// factor (the structural scan reads the vectors of changed records only; it asks every record
/// whether it has an embedding, which a `memory_store` answers without reading the vector).
///
/// ## Cost
/// Choosing the subset costs O(n) scope comparisons plus the normalised-text hash of every
/// record: O(total text length) on a cold `normalized_text_hashes` cache, O(n) hash look-ups on
/// a warm one (the watcher keeps one across polls). The scope-local detectors then cost
/// O(m x d + Σ_s n_s x k_s x d) for the m subset records (k_s changed of n_s in scope s), not
/// O(n x d).
///
/// ## Known differences from a full run
/// - conflict_detector reports a claim-key group whose cross pairs exceed `max_pairs_per_scope`
///   (check_skipped) on every run, changed or not; `run_incremental` reports only those of the
///   scopes in the subset (a group of an untouched scope is not looked at). Needs more than
///   1,000,000 cross pairs under one claim key by default.
/// - a 64-bit collision of the content keys of `normalized_text_hashes` (hash + length) could
///   leave out a record of rule 2 (probability about 2^-64 per pair of distinct texts); a
///   collision of normalised-text hashes only adds records, which changes nothing.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "memhealth/detect/conflicts.hpp"
#include "memhealth/detect/content_size.hpp"
#include "memhealth/detect/content_time.hpp"
#include "memhealth/detect/duplicates.hpp"
#include "memhealth/detect/finding.hpp"
#include "memhealth/detect/hygiene.hpp"
#include "memhealth/detect/mojibake.hpp"
#include "memhealth/detect/pipeline.hpp"
#include "memhealth/detect/secrets.hpp"
#include "memhealth/record/traits.hpp"
#include "memhealth/similarity/blocking.hpp"
#include "memhealth/similarity/kmeans_blocking.hpp"
#include "memhealth/store/store.hpp"
#include "memhealth/store/subset_store.hpp"
#include "memhealth/text/normalize.hpp"

namespace memhealth {

/// Whether detector D reports the same findings about changed records on the subset of
/// `incremental_subset` as on the whole store (see the file comment); `run_incremental` runs
/// such detectors on the subset and all others on the whole store. False by default (always
/// correct); true for `hygiene_detector` and for `duplicate_detector` / `conflict_detector`
/// with the `exact_all_pairs`, `key_blocking` or `scope_size_blocking` (the default pipeline's)
/// candidate policies (their groups lie inside one scope and depend on nothing else; LSH and the
/// store-wide k-means blocking fit their model to all the rows they see, so they stay on the whole
/// store). Specialise it (derive from std::true_type) for your
/// own detector when its findings about a changed record depend only on the records of that
/// record's scope and those with the same normalised text.
template <class D>
struct scope_local_detector : std::false_type {};

namespace detail {
template <class C>
struct scope_local_candidates : std::false_type {};
template <>
struct scope_local_candidates<exact_all_pairs> : std::true_type {};
template <class K>
struct scope_local_candidates<key_blocking<K>> : std::true_type {};
/// The default pipeline's policy: the exact join per scope, or k-means fitted to that one
/// scope's rows (seeded, in store order, which the subset keeps), so a whole scope gives the
/// same pairs on the subset.
template <>
struct scope_local_candidates<scope_size_blocking> : std::true_type {};
}  // namespace detail

/// `hygiene_detector` looks at changed records only.
template <>
struct scope_local_detector<hygiene_detector> : std::true_type {};
/// The content hygiene detectors look at changed records only.
template <>
struct scope_local_detector<secret_detector> : std::true_type {};
template <>
struct scope_local_detector<mojibake_detector> : std::true_type {};
template <>
struct scope_local_detector<content_size_detector> : std::true_type {};
template <>
struct scope_local_detector<content_time_detector> : std::true_type {};
/// Duplicates with a scope-local candidate policy.
template <class C, class K>
struct scope_local_detector<duplicate_detector<C, K>> : detail::scope_local_candidates<C> {};
/// Conflicts with a scope-local candidate policy (any judge: it sees one pair at a time).
template <class J, class C, class K>
struct scope_local_detector<conflict_detector<J, C, K>> : detail::scope_local_candidates<C> {};

/// A cache of normalised-text hashes by content, kept across incremental runs (the watcher
/// keeps one) so choosing the subset does not normalise unchanged texts again. Keyed by the
/// 64-bit hash and the length of the raw content; the value is a 64-bit hash of the normalised
/// text, 0 for an empty one. Valid for one normaliser: `clear()` it when the normaliser changes.
/// Not thread-safe.
class normalized_text_hashes {
 public:
  /// Hash of `normalizer(content)` (0 when that is empty), from the cache or computed and
  /// cached. @complexity O(|content|) for the content hash, plus normalisation on a miss.
  template <text_normalization_policy N>
  [[nodiscard]] std::uint64_t operator()(std::string_view content, const N& normalizer) {
    const key k{static_cast<std::uint64_t>(std::hash<std::string_view>{}(content)), content.size()};
    if (const auto it = map_.find(k); it != map_.end()) return it->second;
    const std::uint64_t h = hash_normalized(normalizer(content));
    map_.emplace(k, h);
    return h;
  }
  /// The hash stored for a normalised text: 0 for empty, never 0 otherwise.
  [[nodiscard]] static std::uint64_t hash_normalized(std::string_view normalized) noexcept {
    if (normalized.empty()) return 0;
    const auto h = static_cast<std::uint64_t>(std::hash<std::string_view>{}(normalized));
    return h == 0 ? 1 : h;
  }
  /// Number of cached contents.
  [[nodiscard]] std::size_t size() const noexcept { return map_.size(); }
  /// Forgets every entry.
  void clear() noexcept { map_.clear(); }

 private:
  struct key {
    std::uint64_t hash;
    std::size_t length;
    bool operator==(const key&) const = default;
  };
  struct key_hash {
    std::size_t operator()(const key& k) const noexcept {
      return static_cast<std::size_t>(k.hash ^ (k.length * 0x9e3779b97f4a7c15ULL));
    }
  };
  std::unordered_map<key, std::uint64_t, key_hash> map_;
};

/// The records an incremental run's scope-local detectors need (rules 1 and 2 of the file
/// comment), as ascending record indices of `store`.
/// @param changed one flag per record (true = checked in this run), e.g. from
///        `changed_records`. @param normalizer the run's normaliser. @param cache optional
///        normalised-text hash cache (null: every text is normalised once here).
/// @throws error(precondition) when `changed.size() != store.size()`.
/// @complexity O(n) scope comparisons + normalised-text hashes (see `normalized_text_hashes`).
template <record_store S, text_normalization_policy N = text_normalizer>
[[nodiscard]] std::vector<std::size_t> incremental_subset(const S& store,
                                                          const std::vector<bool>& changed,
                                                          const N& normalizer = {},
                                                          normalized_text_hashes* cache = nullptr) {
  const std::size_t n = store.size();
  if (changed.size() != n)
    throw error(error_code::precondition, "incremental_subset: " + std::to_string(changed.size()) +
                                              " changed flags for a store of " + std::to_string(n) +
                                              " records");
  std::unordered_set<std::string> scopes;
  std::unordered_set<std::uint64_t> texts;
  std::vector<std::uint64_t> text_hash(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const auto& r = store.record(i);
    text_hash[i] = cache ? (*cache)(field::content(r), normalizer)
                         : normalized_text_hashes::hash_normalized(normalizer(field::content(r)));
    if (!changed[i]) continue;
    scopes.emplace(detail::semantic_scope_of(r));
    if (text_hash[i] != 0) texts.insert(text_hash[i]);
  }
  std::vector<std::size_t> out;
  if (scopes.empty()) return out;
  std::string scope_copy;
  for (std::size_t i = 0; i < n; ++i) {
    if (changed[i] || (text_hash[i] != 0 && texts.count(text_hash[i]))) {
      out.push_back(i);
      continue;
    }
    scope_copy.assign(detail::semantic_scope_of(store.record(i)));
    if (scopes.count(scope_copy)) out.push_back(i);
  }
  return out;
}

/// The changed flags of a run over `store` with `options` (what `detection_context::is_changed`
/// gives: `since` and/or the `changed` mask; all true for a full run).
/// @throws error(precondition) when `options.changed` has not `store.size()` entries.
template <record_store S>
[[nodiscard]] std::vector<bool> changed_records(const S& store, const detect_options& options) {
  detection_context<S> ctx(store, options);
  std::vector<bool> out(store.size());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = ctx.is_changed(i);
  return out;
}

/// Runs `p` over `store` as `p.run(store, options, normalizer)` does, with the same findings in
/// the same order and the same counts, but runs the `scope_local_detector`s of an incremental
/// run (`options.since` or `options.changed` set) on the `incremental_subset` of the store (see
/// the file comment). A full run, or one whose subset is the whole store, is `p.run` itself.
/// @param cache optional normalised-text hash cache for choosing the subset (for `normalizer`).
/// @throws what `p.run` throws (error(precondition) for a `changed` mask of the wrong size).
template <class... Ds, record_store S, text_normalization_policy N = text_normalizer>
[[nodiscard]] report run_incremental(const pipeline<Ds...>& p, const S& store,
                                     detect_options options = {}, N normalizer = {},
                                     normalized_text_hashes* cache = nullptr) {
  constexpr bool any_local = (scope_local_detector<Ds>::value || ...);
  if (!any_local || (!options.since && !options.changed))
    return p.run(store, std::move(options), std::move(normalizer));
  detection_context<S, N> whole(store, std::move(options), normalizer);
  std::vector<bool> changed(store.size());
  for (std::size_t i = 0; i < changed.size(); ++i) changed[i] = whole.is_changed(i);
  auto idx = incremental_subset(store, changed, normalizer, cache);
  if (idx.size() == store.size()) return p.run(whole);

  auto mask = std::make_shared<std::vector<bool>>(idx.size());
  for (std::size_t k = 0; k < idx.size(); ++k) (*mask)[k] = changed[idx[k]];
  subset_store<S> sub(store, std::move(idx));
  detect_options sub_options = whole.options();  // dimension resolved, same clock and cursor
  sub_options.changed = std::move(mask);
  detection_context<subset_store<S>, N> part(sub, std::move(sub_options), std::move(normalizer));

  report r;
  r.records_total = store.size();
  r.records_checked = whole.changed_count();
  auto run_one = [&](const auto& d) {
    using D = std::remove_cvref_t<decltype(d)>;
    if constexpr (scope_local_detector<D>::value) {
      static_assert(detector_for<D, decltype(part)>);
      d.run(part, r.findings);
    } else {
      static_assert(detector_for<D, decltype(whole)>);
      d.run(whole, r.findings);
    }
  };
  std::apply([&](const auto&... d) { (run_one(d), ...); }, p.detectors());
  return r;
}

}  // namespace memhealth
