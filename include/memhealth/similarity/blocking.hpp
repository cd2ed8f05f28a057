#pragma once
/// @file blocking.hpp
/// Candidate generation for pairwise detectors (duplicates, conflicts): which pairs of records are
/// compared at all. One policy family, one shape:
///
///     template <class Ctx, class Kernel, class Emit>
///     void operator()(Ctx& ctx, const candidate_request& req, const Kernel& k, Emit&& emit) const;
///
/// `ctx` is a `detection_context`; the policy calls `emit(std::size_t i, std::size_t j, float s)`
/// for pairs of **record indices** i < j that
/// - both have a usable unit embedding (`ctx.unit_row_of(i) >= 0`) and are `req.eligible`,
/// - have the same scope (pairs never cross scopes; records of a type without a scope all share
///   one),
/// - have at least one side `ctx.is_changed` (incremental runs), and
/// - have kernel similarity s >= `req.threshold` on the unit rows (verified exactly).
/// Each pair is emitted once. The order is deterministic but unspecified (callers sort).
///
/// **Pair budget.** With `req.max_pairs_per_group` > 0, a group (a scope, or a scope + block key)
/// that has more qualifying pairs than that is cut: at most that many of its pairs are emitted and
/// its member record indices are appended to `*req.truncated` (when set), so the caller can drop
/// the group's partial pairs and report the check as skipped. This bounds time and memory when
/// thousands of records share one vector (an ingestion bug writing a placeholder embedding):
/// without it the pairs alone are quadratic.
///
/// Policies differ in **which** qualifying pairs they can find:
/// - `exact_all_pairs`: all of them (tiled exact join within each scope; O(n_s² d) per scope s);
/// - `key_blocking`: only pairs sharing a block key (claim subject) and, optionally, created
///   within a time window of each other (the article's "normalised entity + time window");
/// - `lsh_blocking` (lsh.hpp): pairs colliding in a random-hyperplane LSH table (probabilistic).

#include <Eigen/Core>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "memhealth/record/traits.hpp"
#include "memhealth/similarity/join.hpp"
#include "memhealth/similarity/kernels.hpp"

namespace memhealth {

/// What a candidate policy is asked for.
struct candidate_request {
  /// Similarity threshold in the kernel's units (cosine in [-1, 1]); pairs below are not emitted.
  float threshold = 0.92f;
  /// Per record index: nonzero = the record takes part. Empty span = every record takes part.
  std::span<const std::uint8_t> eligible;
  /// Most pairs emitted per group (scope, or scope + block key); 0 = no limit.
  std::size_t max_pairs_per_group = 0;
  /// When set, receives the members (record indices, ascending) of every group that was cut.
  std::vector<std::vector<std::size_t>>* truncated = nullptr;
};

namespace detail {

template <class R>
std::string_view semantic_scope_of(const R& r) {
  if constexpr (scoped_record<R>)
    return field::scope(r);
  else
    return {};
}

inline bool semantic_eligible(const candidate_request& req, std::size_t i) noexcept {
  return req.eligible.empty() || req.eligible[i] != 0;
}

// Eligible embedded records grouped by a key, groups ordered by key, members ascending.
template <class Ctx, class KeyOf>
std::vector<std::vector<std::size_t>> group_embedded(Ctx& ctx, const candidate_request& req,
                                                     KeyOf&& key_of) {
  std::map<std::string, std::vector<std::size_t>, std::less<>> groups;
  const std::size_t n = ctx.store().size();
  for (std::size_t i = 0; i < n; ++i) {
    if (!semantic_eligible(req, i) || ctx.unit_row_of(i) < 0) continue;
    groups[key_of(i)].push_back(i);
  }
  std::vector<std::vector<std::size_t>> out;
  out.reserve(groups.size());
  for (auto& [k, members] : groups)
    if (members.size() >= 2) out.push_back(std::move(members));
  return out;
}

// Copies the unit rows of `members` into `m` (|members| x d).
template <class Ctx>
void gather_rows(Ctx& ctx, std::span<const std::size_t> members, row_matrix& m) {
  const auto& units = ctx.unit_embeddings();
  m.resize(static_cast<Eigen::Index>(members.size()), units.cols());
  for (std::size_t r = 0; r < members.size(); ++r)
    m.row(static_cast<Eigen::Index>(r)) = units.row(ctx.unit_row_of(members[r]));
}

// Records a cut group in the request's `truncated` list.
inline void note_truncated(const candidate_request& req, std::span<const std::size_t> members) {
  if (req.truncated) req.truncated->emplace_back(members.begin(), members.end());
}

// Exact join inside one group of record indices, honouring the incremental rule and the pair
// budget of `req`.
template <class Ctx, class Kernel, class Emit>
void join_group(Ctx& ctx, std::span<const std::size_t> members, const candidate_request& req,
                const Kernel& kernel, join_options opt, Emit& emit) {
  const float t = req.threshold;
  opt.max_pairs = req.max_pairs_per_group;
  std::vector<std::size_t> changed;
  for (std::size_t i : members)
    if (ctx.is_changed(i)) changed.push_back(i);
  if (changed.empty()) return;
  row_matrix all;
  gather_rows(ctx, members, all);
  if (changed.size() == members.size()) {
    const auto st = threshold_join(
        all, t, [&](std::uint32_t a, std::uint32_t b, float s) { emit(members[a], members[b], s); },
        opt, kernel);
    if (st.truncated) note_truncated(req, members);
    return;
  }
  row_matrix some;
  gather_rows(ctx, changed, some);
  // The join's budget counts raw (changed, member) hits, a superset of the emitted pairs.
  const auto st = join(
      some, all, t,
      [&](std::uint32_t a, std::uint32_t b, float s) {
        const std::size_t x = changed[a], y = members[b];
        if (x == y) return;
        if (ctx.is_changed(y) && y < x) return;  // both changed: emitted from the smaller side
        emit(std::min(x, y), std::max(x, y), s);
      },
      opt, kernel);
  if (st.truncated) note_truncated(req, members);
}

template <class R>
std::optional<utc_time> semantic_created_at(const R& r) {
  if constexpr (timestamped_record<R>) {
    if (auto c = field::created_at(r)) return c->instant;
  }
  return std::nullopt;
}

}  // namespace detail

/// Every qualifying pair: the exact tiled join (join.hpp) run within each scope separately (rows
/// are grouped by scope first, so no cross-scope pair is ever computed).
/// @complexity O(Σ_s n_s² d) flops over scopes s; memory O(n_s d) for the scope's rows + tiles.
struct exact_all_pairs {
  join_options join{};  ///< tile size and threads of the underlying join

  /// See the file comment for the contract.
  template <class Ctx, class Kernel, class Emit>
  void operator()(Ctx& ctx, const candidate_request& req, const Kernel& kernel, Emit&& emit) const {
    const auto& store = ctx.store();
    auto groups = detail::group_embedded(ctx, req, [&](std::size_t i) {
      return std::string(detail::semantic_scope_of(store.record(i)));
    });
    for (const auto& g : groups) detail::join_group(ctx, g, req, kernel, join, emit);
  }
};

/// Default block key: the normalised claim subject. Fact claims block on "f:" + entity,
/// preference claims on "p:" + preference (the thing liked or disliked); records without a claim
/// (or of a type without claims) share the empty key. The scope is always added by
/// `key_blocking` itself.
struct default_block_key {
  /// @return the block key of record i (any string; equal strings = same block).
  template <class Ctx>
  [[nodiscard]] std::string operator()(Ctx& ctx, std::size_t i) const {
    using R = typename Ctx::record_type;
    if constexpr (claimed_record<R>) {
      if (const claim* c = field::claim(ctx.store().record(i))) {
        if (const auto* f = std::get_if<fact_claim>(c)) return "f:" + ctx.normalizer()(f->entity);
        if (const auto* p = std::get_if<preference_claim>(c))
          return "p:" + ctx.normalizer()(p->preference);
      }
    }
    return {};
  }
};

/// Blocking by a key function and an optional time window (the article's candidate generation:
/// normalised entity + time window). Only pairs with the same scope **and** the same key are
/// compared; with `window` set, only pairs whose `created_at` differ by at most `window`
/// (records without `created_at` are compared with every member of their block).
/// Recall is bounded by the key: paraphrases filed under different subjects are not compared.
/// @tparam KeyFn callable `std::string (Ctx&, std::size_t record_index)`.
/// @complexity O(Σ_b n_b² d) without a window; with a window O(Σ_b n_b log n_b + pairs in window ·
/// d).
template <class KeyFn = default_block_key>
struct key_blocking {
  KeyFn key{};  ///< block key per record
  std::optional<std::chrono::milliseconds>
      window{};         ///< max |created_at difference|; nullopt = none
  join_options join{};  ///< tiles/threads for window-less blocks

  /// See the file comment for the contract.
  template <class Ctx, class Kernel, class Emit>
  void operator()(Ctx& ctx, const candidate_request& req, const Kernel& kernel, Emit&& emit) const {
    const auto& store = ctx.store();
    auto blocks = detail::group_embedded(ctx, req, [&](std::size_t i) {
      std::string k(detail::semantic_scope_of(store.record(i)));
      k.push_back('\x1f');
      k += key(ctx, i);
      return k;
    });
    for (const auto& b : blocks) {
      if (!window) {
        detail::join_group(ctx, b, req, kernel, join, emit);
        continue;
      }
      windowed(ctx, b, req, kernel, emit);
    }
  }

 private:
  template <class Ctx, class Kernel, class Emit>
  void windowed(Ctx& ctx, const std::vector<std::size_t>& block, const candidate_request& req,
                const Kernel& kernel, Emit& emit) const {
    const float t = req.threshold;
    const std::size_t budget = req.max_pairs_per_group;
    const auto& units = ctx.unit_embeddings();
    const auto d = static_cast<std::size_t>(units.cols());
    auto row = [&](std::size_t i) {
      return std::span<const float>(units.row(ctx.unit_row_of(i)).data(), d);
    };
    std::vector<std::pair<utc_time, std::size_t>> timed;
    std::vector<std::size_t> untimed;
    for (std::size_t i : block) {
      if (auto c = detail::semantic_created_at(ctx.store().record(i)))
        timed.emplace_back(*c, i);
      else
        untimed.push_back(i);
    }
    std::sort(timed.begin(), timed.end());
    std::size_t emitted = 0;
    bool cut = false;
    // Verifies one pair; false once the budget is exceeded (the pair is then not emitted).
    auto visit = [&](std::size_t x, std::size_t y) {
      if (x > y) std::swap(x, y);
      if (!ctx.is_changed(x) && !ctx.is_changed(y)) return true;
      const float s = kernel(row(x), row(y));
      if (s < t) return true;
      if (budget != 0 && emitted == budget) return !(cut = true);
      emit(x, y, s);
      ++emitted;
      return true;
    };
    for (std::size_t a = 0; a < timed.size() && !cut; ++a)
      for (std::size_t b = a + 1; b < timed.size() && timed[b].first - timed[a].first <= *window;
           ++b)
        if (!visit(timed[a].second, timed[b].second)) break;
    for (std::size_t u = 0; u < untimed.size() && !cut; ++u)
      for (std::size_t i : block)
        if (i != untimed[u] &&
            (std::find(untimed.begin(), untimed.end(), i) == untimed.end() || i > untimed[u]))
          if (!visit(untimed[u], i)) break;
    if (cut) detail::note_truncated(req, block);
  }
};

/// Deduction guide (clang 14 has no aggregate CTAD).
template <class KeyFn>
key_blocking(KeyFn) -> key_blocking<KeyFn>;

}  // namespace memhealth
