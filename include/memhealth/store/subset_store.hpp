#pragma once
/// @file subset_store.hpp
/// `memhealth::subset_store<S>`: a read-only `record_store` over some records of another store,
/// in the other store's order. Incremental detection (detect/incremental.hpp) runs the
/// scope-local detectors on such a view (the scopes that hold a changed record), so their cost
/// follows what changed, not the size of the store.
///
/// The view holds a reference to the underlying store and a strictly ascending vector of its
/// record indices (`source_index`). Index i of the view is record `source_index(i)` of the
/// underlying store; `record`, `embedding` and `dimension` forward to it; `find` looks only at
/// the selected records. The underlying store must outlive the view and must not change while
/// the view is used.

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/record/traits.hpp"
#include "memhealth/store/store.hpp"

namespace memhealth {

/// A read-only view of the records of `S` at given indices (see the file comment).
/// Satisfies `record_store` (not `mutable_record_store`: repairs go to the underlying store).
/// @tparam S a `record_store`.
template <record_store S>
class subset_store {
 public:
  /// The record type of the underlying store.
  using record_type = typename S::record_type;

  /// A view of `base` at `indices` (record indices of `base`, strictly ascending, each
  /// < base.size()). Builds the id index of the selected records: O(m log m) for m indices.
  /// @throws error(precondition) when the indices are not strictly ascending or out of range.
  subset_store(const S& base, std::vector<std::size_t> indices)
      : base_(&base), indices_(std::move(indices)) {
    const std::size_t n = base.size();
    for (std::size_t k = 0; k < indices_.size(); ++k) {
      if (indices_[k] >= n)
        throw error(error_code::precondition, "subset_store: index " + std::to_string(indices_[k]) +
                                                  " is out of range for a store of " +
                                                  std::to_string(n) + " records");
      if (k > 0 && indices_[k] <= indices_[k - 1])
        throw error(error_code::precondition, "subset_store: indices must be strictly ascending (" +
                                                  std::to_string(indices_[k - 1]) + " then " +
                                                  std::to_string(indices_[k]) + ")");
    }
    for (std::size_t k = 0; k < indices_.size(); ++k)
      ids_.try_emplace(std::string(field::id(base.record(indices_[k]))), k);  // first wins
  }

  /// Number of selected records.
  [[nodiscard]] std::size_t size() const noexcept { return indices_.size(); }
  /// The selected record i (i < size()): `base().record(source_index(i))`, same return type.
  [[nodiscard]] decltype(auto) record(std::size_t i) const { return base_->record(indices_.at(i)); }
  /// The embedding of selected record i (i < size()): d floats, empty = missing.
  [[nodiscard]] std::span<const float> embedding(std::size_t i) const {
    return base_->embedding(indices_.at(i));
  }
  /// View index of the first selected record (in store order) with that id, or nullopt when no
  /// selected record has it (even when the underlying store has one). O(log m).
  [[nodiscard]] std::optional<std::size_t> find(std::string_view id) const {
    const auto it = ids_.find(id);
    if (it == ids_.end()) return std::nullopt;
    return it->second;
  }
  /// The embedding dimension of the underlying store (0 = unknown).
  [[nodiscard]] std::size_t dimension() const { return base_->dimension(); }

  /// Record index in the underlying store of selected record i (i < size()).
  /// @throws std::out_of_range for i >= size().
  [[nodiscard]] std::size_t source_index(std::size_t i) const { return indices_.at(i); }
  /// All selected record indices of the underlying store, ascending (size() entries).
  [[nodiscard]] const std::vector<std::size_t>& source_indices() const noexcept { return indices_; }
  /// The underlying store.
  [[nodiscard]] const S& base() const noexcept { return *base_; }

 private:
  const S* base_;
  std::vector<std::size_t> indices_;
  std::map<std::string, std::size_t, std::less<>> ids_;  // id -> first view index
};

}  // namespace memhealth
