#pragma once
/// @file union_find.hpp
/// Disjoint sets over the integers [0, n): union by rank with path compression
/// (Tarjan 1975, "Efficiency of a good but not linear set union algorithm"). Used to turn
/// duplicate pairs into clusters.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

#include "memhealth/config.hpp"

namespace memhealth {

/// Disjoint-set forest over [0, n).
/// @complexity `find`/`unite` amortised O(α(n)); memory O(n).
class union_find {
 public:
  /// n singleton sets {0}, {1}, ..., {n-1}.
  explicit union_find(std::size_t n = 0) : parent_(n), rank_(n, 0) {
    std::iota(parent_.begin(), parent_.end(), std::size_t{0});
  }

  /// Number of elements n.
  [[nodiscard]] std::size_t size() const noexcept { return parent_.size(); }

  /// Representative of x's set (compresses the path: x and its ancestors then point at the root).
  /// @pre x < size() (MEMHEALTH_ASSERT).
  std::size_t find(std::size_t x) {
    MEMHEALTH_ASSERT(x < parent_.size(), "union_find::find: element out of range");
    std::size_t root = x;
    while (parent_[root] != root) root = parent_[root];
    while (parent_[x] != root) x = std::exchange(parent_[x], root);
    return root;
  }

  /// Merges the sets of a and b (the lower-rank root goes under the higher).
  /// @return true when they were in different sets.
  bool unite(std::size_t a, std::size_t b) {
    a = find(a);
    b = find(b);
    if (a == b) return false;
    if (rank_[a] < rank_[b]) std::swap(a, b);
    parent_[b] = a;
    if (rank_[a] == rank_[b]) ++rank_[a];
    return true;
  }

  /// True when a and b are in the same set.
  bool same(std::size_t a, std::size_t b) { return find(a) == find(b); }

  /// The sets with at least `min_size` members, each sorted ascending, ordered by their smallest
  /// element (deterministic). @complexity O(n α(n)).
  [[nodiscard]] std::vector<std::vector<std::size_t>> groups(std::size_t min_size = 1) {
    // sizes first, so only the sets kept are built (a million singletons cost no vectors)
    constexpr std::size_t mark = std::size_t{1} << 63;  // slot >= mark: mark + the set's index
    constexpr std::size_t dropped = static_cast<std::size_t>(-1);
    std::vector<std::size_t> slot(parent_.size(), 0);  // per root: the set's size first
    for (std::size_t x = 0; x < parent_.size(); ++x) ++slot[find(x)];
    std::vector<std::vector<std::size_t>> out;
    for (std::size_t x = 0; x < parent_.size(); ++x) {  // x ascending: sets by smallest element
      std::size_t& s = slot[find(x)];
      if (s == dropped) continue;
      if (s >= mark) {
        out[s - mark].push_back(x);
      } else if (s < std::max<std::size_t>(min_size, 1)) {
        s = dropped;
      } else {
        out.emplace_back().reserve(s);
        out.back().push_back(x);
        s = mark + out.size() - 1;
      }
    }
    return out;
  }

 private:
  std::vector<std::size_t> parent_;
  std::vector<std::uint8_t> rank_;
};

}  // namespace memhealth
