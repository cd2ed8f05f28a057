#pragma once
/// @file information_score.hpp
/// The information score of a record: how much a record is worth keeping as the **primary** of a
/// duplicate cluster (SPEC section 3: "the primary is the record with the highest information
/// score (text length, metadata completeness, source credibility, recency)"). Used by the
/// duplicate detector to order a cluster and by the repair planner to pick the merge target.
///
/// ## Formula
///     score = w_length   · log2(1 + code points of content)
///           + w_metadata · (metadata keys whose value is not null and not an empty string)
///           + w_source   · source_rank(source)                 (0..4, see memory_record.hpp)
///           + w_recency  · 2^(-age / recency_half_life)         (age = now - updated_at, >= 0;
///                                                               created_at when updated_at is
///                                                               missing; 0 when both are missing)
/// Defaults: w_length 1, w_metadata 0.5, w_source 1, w_recency 1, half-life 30 days. So doubling
/// the text length is worth one source-rank step, two metadata keys or a fresh-versus-stale
/// timestamp. Terms whose field the record type does not map are 0.
///
/// ## Tie-break
/// Higher score first; equal scores (exactly equal doubles) by lexicographically smaller id, then
/// by smaller store index: the choice is deterministic.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/record/memory_record.hpp"
#include "memhealth/record/time.hpp"
#include "memhealth/record/traits.hpp"

namespace memhealth {

/// Weights of the information score (see the file comment for the formula).
struct information_score_weights {
  double length = 1.0;    ///< per doubling of the text length (log2 of code points + 1)
  double metadata = 0.5;  ///< per non-null metadata key
  double source = 1.0;    ///< per source-rank step (0..4)
  double recency = 1.0;   ///< weight of the recency term in [0, 1]
  std::chrono::milliseconds recency_half_life =
      std::chrono::hours(24 * 30);  ///< age at which recency = 0.5
};

namespace detail {
inline std::size_t utf8_code_points(std::string_view s) noexcept {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}
}  // namespace detail

/// The information score of `r` at time `now` (UTC). Never throws; any record type works
/// (missing capabilities contribute 0).
/// @complexity O(length of content + number of metadata keys).
template <class R>
[[nodiscard]] double information_score(const R& r, utc_time now,
                                       const information_score_weights& w = {}) {
  double score =
      w.length * std::log2(1.0 + static_cast<double>(detail::utf8_code_points(field::content(r))));
  if constexpr (metadata_record<R>) {
    std::size_t filled = 0;
    for (const auto& [key, value] : field::metadata(r)) {
      if constexpr (std::is_same_v<std::remove_cvref_t<decltype(value)>, metadata_value>) {
        const auto* s = std::get_if<std::string>(&value);
        filled += !std::holds_alternative<std::monostate>(value) && !(s && s->empty());
      } else {
        ++filled;
      }
    }
    score += w.metadata * static_cast<double>(filled);
  }
  if constexpr (sourced_record<R>) score += w.source * source_rank(field::source(r));
  if constexpr (timestamped_record<R>) {
    auto t = field::updated_at(r);
    if (!t) t = field::created_at(r);
    if (t && w.recency_half_life.count() > 0) {
      const double age = std::max(0.0, static_cast<double>((now - t->instant).count()));
      score += w.recency * std::exp2(-age / static_cast<double>(w.recency_half_life.count()));
    }
  }
  return score;
}

/// Orders `indices` (store indices) by information score, best first, with the documented
/// tie-break (smaller id, then smaller index). @return the ordered indices.
/// @complexity O(m log m) comparisons after m score evaluations.
template <class S>
[[nodiscard]] std::vector<std::size_t> order_by_information(
    const S& store, std::span<const std::size_t> indices, utc_time now,
    const information_score_weights& w = {}) {
  struct entry {
    double score;
    std::string_view id;
    std::size_t index;
  };
  std::vector<entry> e;
  e.reserve(indices.size());
  for (std::size_t i : indices) {
    const auto& r = store.record(i);
    e.push_back({information_score(r, now, w), field::id(r), i});
  }
  std::sort(e.begin(), e.end(), [](const entry& a, const entry& b) {
    if (a.score != b.score) return a.score > b.score;
    if (a.id != b.id) return a.id < b.id;
    return a.index < b.index;
  });
  std::vector<std::size_t> out;
  out.reserve(e.size());
  for (const auto& x : e) out.push_back(x.index);
  return out;
}

/// The primary of a cluster: the first of `order_by_information`. @pre !indices.empty().
template <class S>
[[nodiscard]] std::size_t choose_primary(const S& store, std::span<const std::size_t> indices,
                                         utc_time now, const information_score_weights& w = {}) {
  MEMHEALTH_ASSERT(!indices.empty(), "choose_primary: empty cluster");
  return order_by_information(store, indices, now, w).front();
}

}  // namespace memhealth
