// The store the Python module works on: records in memory, their embeddings in one n x d
// row-major float32 block that is either the store's own or a NumPy array's buffer, read in place
// (no copy). A `record_store`, `mutable_record_store` and `contiguous_embedding_store`
// (store/store.hpp), so the library's pipeline, planner, executor and rollback run on it unchanged.
#pragma once

#include <boost/container/flat_map.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/record/memory_record.hpp"
#include "memhealth/store/memory_store.hpp"
#include "memhealth/store/store.hpp"

namespace memhealth::python {

/// Records plus one embedding block (see the file comment). Not thread-safe for mutation.
class py_store {
 public:
  using record_type = memory_record;
  static constexpr std::int64_t no_row = -1;

  /// Records whose embeddings (of the most common length, or `dimension` when > 0) move into a
  /// block the store owns; other embeddings stay on their records (the structural check reports
  /// them).
  static py_store owning(std::vector<memory_record> records, std::size_t dimension = 0) {
    if (dimension == 0) dimension = memory_store<>::most_common_dimension(records);
    py_store s;
    s.dim_ = dimension;
    std::size_t rows = 0;
    for (const auto& r : records) rows += dimension > 0 && r.embedding.size() == dimension;
    s.owned_.reserve(rows * dimension);
    s.row_of_.reserve(records.size());
    for (auto& r : records) {
      if (dimension > 0 && r.embedding.size() == dimension) {
        s.row_of_.push_back(static_cast<std::int64_t>(s.rows_++));
        s.owned_.insert(s.owned_.end(), r.embedding.begin(), r.embedding.end());
        r.embedding.clear();
        r.embedding.shrink_to_fit();
      } else {
        s.row_of_.push_back(no_row);
      }
    }
    s.block_ = s.owned_.data();
    s.records_ = std::move(records);
    s.index();
    return s;
  }

  /// Records whose embeddings are the rows of a foreign n x d row-major float32 block
  /// (`data`, n = records.size()), read in place: the block must outlive the store and not
  /// change while it is read. Embeddings on the records themselves are refused.
  /// @throws error(invalid_argument) when a record carries its own embedding.
  static py_store borrowing(std::vector<memory_record> records, const float* data,
                            std::size_t dimension) {
    py_store s;
    s.dim_ = dimension;
    s.rows_ = records.size();
    s.block_ = data;
    s.borrowed_ = true;
    s.row_of_.resize(records.size());
    for (std::size_t i = 0; i < records.size(); ++i) {
      if (!records[i].embedding.empty())
        throw error(error_code::invalid_argument,
                    "record '" + records[i].id +
                        "' has an 'embedding' field and the embeddings array gives it a row too; "
                        "give embeddings in one place");
      s.row_of_[i] = static_cast<std::int64_t>(i);
    }
    s.records_ = std::move(records);
    s.index();
    return s;
  }

  // ------------------------------------------------------------ record_store
  [[nodiscard]] std::size_t size() const noexcept { return records_.size(); }
  [[nodiscard]] const memory_record& record(std::size_t i) const { return records_[i]; }
  [[nodiscard]] std::span<const float> embedding(std::size_t i) const {
    const std::int64_t row = row_of_[i];
    if (row == no_row) return records_[i].embedding;
    return {block_ + static_cast<std::size_t>(row) * dim_, dim_};
  }
  [[nodiscard]] std::optional<std::size_t> find(std::string_view id) const {
    const auto it = index_.find(id);
    if (it == index_.end()) return std::nullopt;
    return it->second;
  }
  [[nodiscard]] std::size_t dimension() const noexcept { return dim_; }
  /// The block, rows() x d (contiguous_embedding_store).
  [[nodiscard]] embedding_matrix_view matrix() const {
    return embedding_matrix_view(block_, static_cast<Eigen::Index>(rows_),
                                 static_cast<Eigen::Index>(dim_));
  }

  // ------------------------------------------------------------ mutable_record_store
  [[nodiscard]] memory_record extract(std::size_t i) const {
    if (i >= records_.size())
      throw error(error_code::not_found, "py_store: record index out of range");
    memory_record copy = records_[i];
    if (row_of_[i] != no_row) {
      const auto e = embedding(i);
      copy.embedding.assign(e.begin(), e.end());
    }
    return copy;
  }
  /// Writes a whole record at index i; a changed vector is written to the store's own block (a
  /// borrowed block is copied once first: the caller's array is never written).
  memory_record restore(std::size_t i, const memory_record& image) {
    memory_record before = extract(i);
    memory_record after = image;
    const std::int64_t row = row_of_[i];
    if (dim_ > 0 && after.embedding.size() == dim_) {
      const auto cur = embedding(i);
      if (row == no_row || !std::equal(cur.begin(), cur.end(), after.embedding.begin())) {
        own();
        if (row == no_row) {
          row_of_[i] = static_cast<std::int64_t>(rows_++);
          owned_.insert(owned_.end(), after.embedding.begin(), after.embedding.end());
          block_ = owned_.data();
        } else {
          std::copy(after.embedding.begin(), after.embedding.end(),
                    owned_.begin() + row * static_cast<std::int64_t>(dim_));
        }
      }
      after.embedding.clear();
      after.embedding.shrink_to_fit();
    } else if (row != no_row) {
      row_of_[i] = no_row;  // the row stays, unreferenced; the vector (or none) is on the record
    }
    const std::string old_id = records_[i].id;
    records_[i] = std::move(after);
    if (records_[i].id != old_id) {
      const auto it = index_.find(old_id);
      if (it != index_.end() && it->second == i) index_.erase(it);
      index_.emplace(records_[i].id, i);
    }
    return before;
  }

  // ------------------------------------------------------------ the module's own
  /// True while the block is a caller's buffer (no copy made).
  [[nodiscard]] bool borrows() const noexcept { return borrowed_; }
  /// Address of the block (the debug accessor of the zero-copy test).
  [[nodiscard]] const float* block_data() const noexcept { return block_; }
  /// Rows of the block.
  [[nodiscard]] std::size_t block_rows() const noexcept { return rows_; }
  /// Block row of record i, or -1.
  [[nodiscard]] std::int64_t row_of(std::size_t i) const noexcept { return row_of_[i]; }

 private:
  // The id index in one sort (the first record of an id wins, as in memory_store).
  void index() {
    std::vector<std::pair<std::string, std::size_t>> v;
    v.reserve(records_.size());
    for (std::size_t i = 0; i < records_.size(); ++i) v.emplace_back(records_[i].id, i);
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end(),
                        [](const auto& a, const auto& b) { return a.first == b.first; }),
            v.end());
    index_.clear();
    index_.insert(boost::container::ordered_unique_range, std::make_move_iterator(v.begin()),
                  std::make_move_iterator(v.end()));
  }
  void own() {
    if (!borrowed_) return;
    owned_.assign(block_, block_ + rows_ * dim_);
    block_ = owned_.data();
    borrowed_ = false;
  }

  std::vector<memory_record> records_;
  std::vector<std::int64_t> row_of_;
  const float* block_ = nullptr;
  std::size_t rows_ = 0;
  std::size_t dim_ = 0;
  bool borrowed_ = false;
  std::vector<float> owned_;
  boost::container::flat_map<std::string, std::size_t, std::less<>> index_;
};

static_assert(mutable_record_store<py_store>);
static_assert(contiguous_embedding_store<py_store>);

}  // namespace memhealth::python
