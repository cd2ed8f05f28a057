#pragma once
/// @file index_policy.hpp
/// The index policy: the user's vector index, which memhealth never owns, seen through one
/// operation, `rebuild()` (and optionally `rebuild(ids)`, a partial rebuild of those records).
///
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
/// Example:
/// @code
/// struct my_index { void rebuild(); void rebuild(std::span<const std::string> ids); };
/// my_index idx;
/// apply_options opt;
/// opt.rebuild_index = make_index_rebuilder(idx);  // idx must outlive the run
/// @endcode

#include <concepts>
#include <functional>
#include <span>
#include <string>

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

}  // namespace memhealth
