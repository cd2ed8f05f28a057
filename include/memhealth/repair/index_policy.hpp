#pragma once
/// @file index_policy.hpp
/// The index policy: the user's vector index, which memhealth never owns, seen through one
/// required operation, `rebuild()`, and three optional ones: `rebuild(ids)` (a partial rebuild of
/// those records), `remove(ids)` (clean up served ids that have no live record: ghosts) and
/// `check(expected)` (is the index consistent with the store?). A policy with only `rebuild()`
/// still satisfies `index_policy`; the optional operations are found by the concepts below.
///
/// ## Re-embedding
/// Re-embedding changes vectors in the store; until the index that serves queries is rebuilt it
/// still holds the old vectors (or vectors of another dimension or model version): the index is
/// inconsistent with the store. The planner therefore follows every set of `reembed` batches with
/// one tier-1 `rebuild_index` action whose targets are the re-embedded records (planner.hpp), and
/// `apply_plan` runs it after the batches through `apply_options::rebuild_index`:
/// - with a policy, it is called once with the targets whose records this run actually changed
///   (`rebuild(ids)` when the policy has it, else `rebuild()`); no such target: nothing to rebuild
///   (status `noop`);
/// - without a policy the action goes to the manual queue (status `failed`, reason "no index
///   policy ...") so a person rebuilds the index;
/// - the rebuild is not logged in the WAL (it changes no record). After a `rollback` the index
///   must be rebuilt again, from the restored store.
///
/// ## Retrieval alarms (issue 21)
/// The planner turns alarms of the retrieval monitor into index actions (plan_table.hpp,
/// `retrieval_plan_table`), which `apply_plan` runs through `apply_options::index`
/// (`make_index_hooks`):
/// - `clean_index` (tier 1, from `ghost_result`): `remove(ids)` with the served ids that have no
///   live record *at apply time* (an id whose record is live again is left in the index); no
///   `remove`: the manual queue;
/// - `check_rebuild_index` (tier 1, from `latency_regression` and `similarity_drop`):
///   `check(expected_index(store))`; consistent: nothing rebuilt (`noop`, the alarm's cause is
///   elsewhere); inconsistent: `rebuild()`, then `check` again, which must pass (else `failed`,
///   the manual queue); a policy without `check` is rebuilt without one.
/// Neither changes a record, so neither writes to the write-ahead log (as `rebuild_index`); the
/// way back is a rebuild from the store, which gives back every entry a live record has (a ghost
/// has none, so it does not come back).
///
/// "Live" is what the retrieval monitor does not call a ghost: a record whose status is neither
/// archived nor pending_review (record types without a status: every record).
///
/// Example:
/// @code
/// struct my_index {
///   void rebuild();                                            // required
///   void rebuild(std::span<const std::string> ids);            // optional
///   std::size_t remove(std::span<const std::string> ids);      // optional: entries removed
///   index_check check(const index_expectation& expected);      // optional
/// };
/// my_index idx;
/// apply_options opt;
/// opt.rebuild_index = make_index_rebuilder(idx);  // idx must outlive the run
/// opt.index = make_index_hooks(idx);
/// @endcode

#include <algorithm>
#include <bit>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memhealth/record/traits.hpp"
#include "memhealth/store/store.hpp"

namespace memhealth {

/// An index that can be rebuilt from the store: `p.rebuild()` rebuilds everything. Exceptions it
/// throws are the action's failure (retried like any failed action, then the manual queue).
template <class P>
concept index_policy = requires(P& p) {
  p.rebuild();
};

/// An index that can also rebuild only some records: `p.rebuild(ids)` with ids as a span of
/// record ids (sorted, unique).
template <class P>
concept partial_index_policy = index_policy<P> && requires(P& p, std::span<const std::string> ids) {
  p.rebuild(ids);
};

/// Type-erased rebuild callback stored in `apply_options::rebuild_index`: called with the ids of
/// the records to re-index.
using index_rebuilder = std::function<void(std::span<const std::string> ids)>;

/// Wraps an index policy (by reference: it must outlive the run) into an `index_rebuilder`: a
/// `partial_index_policy` gets `rebuild(ids)`, any other `index_policy` gets `rebuild()`.
template <index_policy P>
index_rebuilder make_index_rebuilder(P& policy) {
  return [&policy](std::span<const std::string> ids) {
    if constexpr (partial_index_policy<P>)
      policy.rebuild(ids);
    else
      policy.rebuild();
  };
}

/// What a store expects its vector index to hold (`expected_index`): the live records with a
/// usable vector of the index's dimension and model version.
struct index_expectation {
  std::vector<std::string> ids;              ///< sorted, unique record ids
  std::vector<std::uint64_t> vector_hashes;  ///< `vector_hash` of each id's vector (same order)
  std::size_t dimension = 0;                 ///< vector length (the most common among live records)
  std::string embedding_version;  ///< model version (the most common at that dimension; "" = none)
  /// Live records with a vector that cannot go into this index (another dimension or version, a
  /// non-finite value, a second record of one id): re-embedding them is a store repair
  /// (reembed), not an index one.
  std::size_t left_out = 0;
};

/// What `check` found (see `index_expectation`). `consistent` is true exactly when `problems` is
/// empty.
struct index_check {
  bool consistent = true;             ///< the index holds exactly what the store expects
  std::size_t entries = 0;            ///< entries in the index
  std::size_t expected = 0;           ///< entries the store expects (`index_expectation::ids`)
  std::size_t missing = 0;            ///< expected ids the index lacks
  std::size_t extra = 0;              ///< index ids without a live record (ghosts)
  std::size_t stale = 0;              ///< ids whose indexed vector differs from the store's
  std::size_t dimension = 0;          ///< the index's vector length
  std::string embedding_version;      ///< the index's model version
  std::vector<std::string> problems;  ///< one line per problem ("2 ids without a live record ...")
};

/// An index that can remove served ids: `p.remove(ids)` (ids sorted, unique) returns how many
/// entries it removed (ids it does not hold are not an error). Exceptions are the action's
/// failure (retried, then the manual queue).
template <class P>
concept cleanable_index_policy = index_policy<P> &&
    requires(P& p, std::span<const std::string> ids) {
  { p.remove(ids) } -> std::convertible_to<std::size_t>;
};

/// An index that can compare itself with what the store expects: `p.check(expected)`.
template <class P>
concept checkable_index_policy = index_policy<P> && requires(P& p, const index_expectation& e) {
  { p.check(e) } -> std::convertible_to<index_check>;
};

/// The type-erased index policy of `apply_options::index` (`make_index_hooks`); an unset member
/// is an operation the policy does not have.
struct index_hooks {
  std::function<void()> rebuild;                                    ///< full rebuild
  std::function<std::size_t(std::span<const std::string>)> remove;  ///< clean up ids
  std::function<index_check(const index_expectation&)> check;       ///< consistency check
};

/// Wraps an index policy (by reference: it must outlive the run) into `index_hooks`: `rebuild`
/// always, `remove` and `check` when the policy has them.
template <index_policy P>
index_hooks make_index_hooks(P& policy) {
  index_hooks h;
  h.rebuild = [&policy] { policy.rebuild(); };
  if constexpr (cleanable_index_policy<P>)
    h.remove = [&policy](std::span<const std::string> ids) {
      return static_cast<std::size_t>(policy.remove(ids));
    };
  if constexpr (checkable_index_policy<P>)
    h.check = [&policy](const index_expectation& e) { return index_check(policy.check(e)); };
  return h;
}

/// FNV-1a 64 over the bit patterns of a vector's floats (so -0 and 0, or two NaNs of different
/// payloads, differ): how `index_expectation` and a policy's `check` compare vectors.
inline std::uint64_t vector_hash(std::span<const float> v) noexcept {
  std::uint64_t h = 14695981039346656037ull;
  for (float x : v) {
    std::uint32_t b = std::bit_cast<std::uint32_t>(x);
    for (int k = 0; k < 4; ++k, b >>= 8) h = (h ^ (b & 0xffu)) * 1099511628211ull;
  }
  return h;
}

/// True when the record at `i` may be served: its status is neither archived nor pending_review
/// (every record of a type without a status). The retrieval monitor calls a served record that is
/// not live a ghost.
template <record_store S>
bool index_live(const S& store, std::size_t i) {
  if constexpr (status_record<typename S::record_type>) {
    const std::string_view st = field::status(store.record(i));
    return st != "archived" && st != "pending_review";
  } else {
    (void)store, (void)i;
    return true;
  }
}

/// What the store expects its index to hold now: every live record (`index_live`) whose vector
/// is non-empty, finite, of the most common length among live records and (for versioned
/// records) of the most common version at that length; the others with a vector are counted in
/// `left_out`. Ties go to the smaller length / the version that sorts first. @complexity O(n d).
template <record_store S>
index_expectation expected_index(const S& store) {
  using R = typename S::record_type;
  index_expectation e;
  std::map<std::size_t, std::size_t> dims;
  std::size_t with_vector = 0;
  auto finite = [](std::span<const float> v) {
    return std::all_of(v.begin(), v.end(), [](float x) { return std::isfinite(x); });
  };
  for (std::size_t i = 0; i < store.size(); ++i)
    if (index_live(store, i) && !store.embedding(i).empty())
      ++dims[store.embedding(i).size()], ++with_vector;
  std::size_t best = 0;
  for (const auto& [d, n] : dims)
    if (n > best) best = n, e.dimension = d;
  if constexpr (versioned_embedding_record<R>) {
    std::map<std::string, std::size_t, std::less<>> versions;
    for (std::size_t i = 0; i < store.size(); ++i)
      if (index_live(store, i) && store.embedding(i).size() == e.dimension && e.dimension)
        ++versions[std::string(field::embedding_version(store.record(i)))];
    std::size_t vbest = 0;
    for (const auto& [v, n] : versions)
      if (n > vbest) vbest = n, e.embedding_version = v;
  }
  std::vector<std::pair<std::string, std::uint64_t>> rows;
  for (std::size_t i = 0; i < store.size(); ++i) {
    const auto v = store.embedding(i);
    if (!index_live(store, i) || v.empty() || v.size() != e.dimension || !finite(v)) continue;
    if constexpr (versioned_embedding_record<R>)
      if (field::embedding_version(store.record(i)) != e.embedding_version) continue;
    rows.emplace_back(std::string(field::id(store.record(i))), vector_hash(v));
  }
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end(),
                         [](const auto& a, const auto& b) { return a.first == b.first; }),
             rows.end());
  e.ids.reserve(rows.size());
  e.vector_hashes.reserve(rows.size());
  for (auto& r : rows) e.ids.push_back(std::move(r.first)), e.vector_hashes.push_back(r.second);
  e.left_out = with_vector - rows.size();
  return e;
}

}  // namespace memhealth
