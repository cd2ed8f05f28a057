#pragma once
/// @file memory_store.hpp
/// `memhealth::memory_store<R>`: the in-memory store backend.
///
/// Layout: records in a `std::vector<R>`; an id index in a Boost.Container `flat_map` (sorted
/// vector: one allocation, binary search); every embedding whose length equals the store's
/// dimension d in **one contiguous n_rows x d row-major float32 block**, so similarity kernels map
/// it (`matrix()`) without copying. Records whose embedding is missing or has another length are
/// kept as they are (the structural check reports them); nothing is dropped.
///
/// When R's embedding field is a writable `std::vector<float>` (as in `memory_record`), the
/// vector is moved into the block on insert and the stored record's own vector is left empty:
/// read embeddings through `embedding(i)` and complete records through `extract(i)`.

#include <Eigen/Core>
#include <boost/container/flat_map.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/record/memory_record.hpp"
#include "memhealth/record/traits.hpp"
#include "memhealth/store/store.hpp"

namespace memhealth {

/// Row-major float32 matrix view over foreign memory (n x d).
using embedding_matrix_view =
    Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;

/// In-memory store of records of type R (default `memory_record`). Satisfies `record_store`;
/// satisfies `mutable_record_store` (extract, restore) for every record type.
/// Not thread-safe for concurrent mutation; concurrent reads are fine.
template <class R = memory_record>
class memory_store {
  static_assert(basic_record<R>,
                "memhealth: memory_store<R> needs the record capability 'basic_record' (fields id "
                "and content). Map them with memhealth::record_traits<R>, members, or ADL "
                "functions memhealth_id(r) / memhealth_content(r).");

 public:
  using record_type = R;
  static constexpr std::int64_t no_row = -1;

  /// An empty store. @param dimension embedding dimension d of the index; 0 = take it from the
  /// first record inserted with a non-empty embedding.
  explicit memory_store(std::size_t dimension = 0) : dim_(dimension) {}

  /// Builds a store from records in one pass. @param dimension d; 0 = the most common non-zero
  /// embedding length among `records` (ties: the smaller length).
  /// @complexity O(n log n) for the id index plus one copy of the embeddings.
  static memory_store from_records(std::vector<R> records, std::size_t dimension = 0) {
    if (dimension == 0 && embedded_record<R>) dimension = most_common_dimension(records);
    memory_store s(dimension);
    std::size_t with_dim = 0;
    if constexpr (embedded_record<R>)
      for (const auto& r : records)
        with_dim += field::embedding(r).size() == dimension && dimension > 0;
    s.block_.reserve(with_dim * dimension);
    s.row_of_.reserve(records.size());
    // The records stay in the vector they came in (no second array of n records at any time):
    // each is filed in place, its embedding moved into the block.
    s.records_ = std::move(records);
    for (std::size_t i = 0; i < s.records_.size(); ++i) s.file_embedding(i);
    std::vector<std::pair<std::string_view, std::size_t>> keys;
    keys.reserve(s.records_.size());
    for (std::size_t i = 0; i < s.records_.size(); ++i)
      keys.emplace_back(field::id(s.records_[i]), i);
    std::stable_sort(keys.begin(), keys.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    keys.erase(std::unique(keys.begin(), keys.end(),
                           [](const auto& a, const auto& b) { return a.first == b.first; }),
               keys.end());
    s.index_.reserve(keys.size());
    for (const auto& [id, i] : keys)
      s.index_.emplace_hint(s.index_.end(), std::string(id), i);  // sorted: appended in O(1)
    return s;
  }

  /// The most common non-zero embedding length among `records` (0 if none has an embedding).
  static std::size_t most_common_dimension(const std::vector<R>& records) {
    if constexpr (embedded_record<R>) {
      std::map<std::size_t, std::size_t> counts;
      for (const auto& r : records)
        if (auto n = field::embedding(r).size()) ++counts[n];
      std::size_t best = 0, best_count = 0;
      for (auto [d, c] : counts)
        if (c > best_count) best = d, best_count = c;
      return best;
    } else {
      return 0;
    }
  }

  /// Appends a record (kept even when its id already exists or its embedding is malformed).
  /// @return its index. @complexity O(log n + n) for the id index insert (flat_map).
  std::size_t insert(R r) {
    const std::size_t i = records_.size();
    std::string id(field::id(r));
    push(std::move(r));
    index_.emplace(std::move(id), i);  // keeps the first index for a duplicate id
    return i;
  }

  /// Number of records. @complexity O(1)
  [[nodiscard]] std::size_t size() const noexcept { return records_.size(); }
  /// Embedding dimension d of the block (0 = unknown).
  [[nodiscard]] std::size_t dimension() const noexcept { return dim_; }
  /// The record at index i, as stored (its embedding vector may be empty: use `embedding(i)`).
  /// @pre i < size() (checked with MEMHEALTH_ASSERT).
  [[nodiscard]] const R& record(std::size_t i) const {
    MEMHEALTH_ASSERT(i < records_.size(), "memory_store::record: index out of range");
    return records_[i];
  }
  /// The embedding of record i: d floats from the block, or the record's own vector when its
  /// length is not d (possibly empty = missing).
  [[nodiscard]] std::span<const float> embedding(std::size_t i) const {
    MEMHEALTH_ASSERT(i < records_.size(), "memory_store::embedding: index out of range");
    if (row_of_[i] != no_row)
      return {block_.data() + static_cast<std::size_t>(row_of_[i]) * dim_, dim_};
    if constexpr (embedded_record<R>) return field::embedding(records_[i]);
    return {};
  }
  /// Row of record i in the block, or `no_row` when its embedding is not of length d.
  [[nodiscard]] std::int64_t block_row(std::size_t i) const { return row_of_.at(i); }
  /// Number of rows in the block (records whose embedding has length d).
  [[nodiscard]] std::size_t block_rows() const noexcept { return dim_ ? block_.size() / dim_ : 0; }
  /// Record index of each block row (block_rows() entries); a row orphaned by a mutation that
  /// changed the record's dimension holds `std::size_t(-1)` and zeros. Mutations may reallocate
  /// the block: spans and maps taken before a mutation are invalidated.
  [[nodiscard]] std::span<const std::size_t> block_records() const noexcept {
    return record_of_row_;
  }
  /// The block as an Eigen row-major block_rows() x d float32 map (no copy).
  [[nodiscard]] embedding_matrix_view matrix() const noexcept {
    return embedding_matrix_view(block_.data(), static_cast<Eigen::Index>(block_rows()),
                                 static_cast<Eigen::Index>(dim_));
  }
  /// Index of the first record with this id. @complexity O(log n)
  [[nodiscard]] std::optional<std::size_t> find(std::string_view id) const {
    auto it = index_.find(id);
    if (it == index_.end()) return std::nullopt;
    return it->second;
  }

  /// The complete record at index i, embedding included (a before-image).
  [[nodiscard]] R extract(std::size_t i) const {
    R copy = record(i);
    if constexpr (movable_embedding)
      if (row_of_[i] != no_row) {
        auto e = embedding(i);
        field::raw::embedding(copy).assign(e.begin(), e.end());
      }
    return copy;
  }

  // ------------------------------------------------------------ mutation (repairs only)
  /// Puts a complete record at index i (what the repair executor writes: after-images on apply,
  /// before-images on rollback). Works for any record type. @return the record it replaced.
  /// @throws error(not_found) for a bad index.
  R restore(std::size_t i, const R& image) {
    return mutate(i, [&](R& r) { r = image; });
  }

 private:
  static constexpr bool movable_embedding = [] {
    if constexpr (embedded_record<R>)
      return std::is_same_v<decltype(field::raw::embedding(std::declval<R&>())),
                            std::vector<float>&>;
    else
      return false;
  }();

  void push(R r) {
    records_.push_back(std::move(r));
    file_embedding(records_.size() - 1);
  }

  // Files the embedding of records_[i] (records are filed in index order: i == row_of_.size()):
  // a row of the block when it has length d (the record's own vector is then emptied), else no row.
  void file_embedding(std::size_t i) {
    std::int64_t row = no_row;
    if constexpr (embedded_record<R>) {
      R& r = records_[i];
      auto e = field::embedding(r);
      if (dim_ == 0 && !e.empty()) dim_ = e.size();
      if (!e.empty() && e.size() == dim_) {
        row = static_cast<std::int64_t>(block_rows());
        block_.insert(block_.end(), e.begin(), e.end());
        record_of_row_.push_back(i);
        if constexpr (movable_embedding) {
          auto& v = field::raw::embedding(r);
          v.clear();
          v.shrink_to_fit();
        }
      }
    }
    row_of_.push_back(row);
  }

  // Applies f to the complete record at i and re-files its embedding. The block row of a record
  // is reused when the new embedding still has length d; otherwise the row is left orphaned
  // (zeroed, unreferenced) and the vector stays on the record.
  template <class F>
  R mutate(std::size_t i, F&& f) {
    if (i >= records_.size())
      throw error(error_code::not_found, "memory_store: record index out of range");
    R before = extract(i);
    R after = before;
    f(after);
    const std::string old_id(field::id(records_[i]));
    if constexpr (embedded_record<R>) {
      auto e = field::embedding(after);
      const std::int64_t row = row_of_[i];
      if (row != no_row && e.size() == dim_) {
        std::copy(e.begin(), e.end(), block_.begin() + row * static_cast<std::int64_t>(dim_));
        if constexpr (movable_embedding) {
          auto& v = field::raw::embedding(after);
          v.clear();
          v.shrink_to_fit();
        }
      } else if (row == no_row && dim_ > 0 && e.size() == dim_) {
        row_of_[i] = static_cast<std::int64_t>(block_rows());
        block_.insert(block_.end(), e.begin(), e.end());
        record_of_row_.push_back(i);
        if constexpr (movable_embedding) {
          auto& v = field::raw::embedding(after);
          v.clear();
          v.shrink_to_fit();
        }
      } else if (row != no_row) {
        std::fill_n(block_.begin() + row * static_cast<std::int64_t>(dim_), dim_, 0.0f);
        record_of_row_[static_cast<std::size_t>(row)] = static_cast<std::size_t>(-1);
        row_of_[i] = no_row;
      }
    }
    records_[i] = std::move(after);
    if (field::id(records_[i]) != old_id) {
      auto it = index_.find(old_id);
      if (it != index_.end() && it->second == i) index_.erase(it);
      index_.emplace(std::string(field::id(records_[i])), i);
    }
    return before;
  }

  std::size_t dim_ = 0;
  std::vector<R> records_;
  std::vector<std::int64_t> row_of_;        // record index -> block row or no_row
  std::vector<std::size_t> record_of_row_;  // block row -> record index
  std::vector<float> block_;                // block_rows() x dim_, row-major
  boost::container::flat_map<std::string, std::size_t, std::less<>> index_;
};

}  // namespace memhealth
