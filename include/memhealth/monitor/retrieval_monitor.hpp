#pragma once
/// @file retrieval_monitor.hpp
/// `monitor_retrievals`: windowed retrieval-quality metrics per partition, alerts against
/// absolute thresholds and a baseline, and integrity checks of what was served (SPEC section 2,
/// level 3; section 5: scope leaks, ghost results, queries embedded by another model).
///
/// ## Windows
/// Events are grouped by partition and by fixed UTC windows aligned to the epoch
/// ([k w, (k+1) w) for window length w, default one hour: clock hours). Per window:
/// retrievals, empty-result rate, mean top-1 and mean top-k similarity (non-empty results,
/// first `top_k` by rank), P50/P95/P99 latency (`latency_sketch`, DDSketch, relative error 1%),
/// duplicate share of the top-k, feedback counts and the negative-feedback rate.
///
/// **Duplicate share**: a served result is a duplicate when its stored embedding has kernel
/// similarity >= `duplicate_threshold` with a higher-ranked result of the same list (the same
/// kernel, on unit-normalised store vectors, and the same default threshold 0.92 as
/// `duplicate_detector`). Share = duplicate results / top-k results with a usable embedding:
/// the fraction of served slots wasted on copies. (Unlike the detector it ignores scopes and
/// negation cues: what matters here is what the user was shown.)
///
/// ## Alerts (findings, detector "retrieval_monitor")
/// | kind | severity | absolute threshold | against the baseline |
/// |---|---|---|---|
/// | latency_regression | warning | P95 > max_p95_latency_ms | P95 >= p95_ratio x baseline P95 |
/// | similarity_drop | warning | mean top-1 < min_mean_top1_similarity | baseline median top-1 -
/// mean top-1 >= max(min_similarity_drop, similarity_drop_sd x robust sd / sqrt(n)) | |
/// duplicate_share_high | warning | share > max_duplicate_share | share - baseline >=
/// duplicate_share_increase | | empty_results | warning | empty rate > max_empty_rate | rate -
/// baseline >= empty_rate_increase | | feedback_negative | warning | negative rate >
/// max_negative_feedback_rate | rate - baseline >= negative_rate_increase |
///
/// Metric alerts need at least `min_retrievals` retrievals in the window (`min_feedback`
/// feedback events for feedback_negative). Robust sd = 1.4826 x MAD of the baseline's per-query
/// top-1 similarities (Hampel). Evidence: `partition`, `window_start`, `window_end`, the metric,
/// the threshold(s), `baseline_*` when a baseline exists, and `against` = "absolute",
/// "baseline" or "absolute+baseline".
///
/// **Baseline**: given explicitly (`compute_baseline` over a reference event stream: one
/// aggregate per partition), else rolling: the pooled metrics of the partition's earlier
/// windows that raised no metric alert (so a spike never becomes the norm). A baseline with
/// fewer than `min_retrievals` retrievals is not used.
///
/// ## Integrity (every window, no minimum)
/// | kind | severity | when |
/// |---|---|---|
/// | ghost_result | error | a served id has no record in the store (reason "missing") or its status
/// is archived / pending_review | | scope_leak | critical | a served record's scope is outside
/// every requested scope (requested_scopes, else the partition); with `allow_ancestor_scopes` a
/// record of an enclosing scope is allowed; a record without scope is a leak | |
/// query_version_mismatch | error | the query's embedding version differs from a served record's
/// embedding_version (or, for an empty result, from the store's majority version) | One finding per
/// (partition, window, kind, reason): `record_ids` = the distinct ids involved (first
/// `max_listed_ids`), evidence `occurrences` (result slots), `events` (retrievals), `reason`.
/// Checks that need a field the record type lacks (scope, status, version) are compiled out.
///
/// `suggested_repair` names what `make_plan` does with a finding (plan_table.hpp,
/// `retrieval_plan_table`): ghost_result "clean_index", latency_regression and similarity_drop
/// "check_rebuild_index", scope_leak "manual_review", query_version_mismatch "start_migration";
/// the kinds the planner only notes: duplicate_share_high "merge_duplicates", empty_results
/// "rebuild_index", feedback_negative "manual_review".
///
/// Errors: bad input never throws (events are data); a window length <= 0 throws
/// memhealth::error(invalid_argument).

#include <Eigen/Core>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/detect/finding.hpp"
#include "memhealth/detect/scope.hpp"
#include "memhealth/detect/vocabulary.hpp"
#include "memhealth/monitor/events.hpp"
#include "memhealth/monitor/latency_sketch.hpp"
#include "memhealth/record/time.hpp"
#include "memhealth/record/traits.hpp"
#include "memhealth/similarity/kernels.hpp"
#include "memhealth/store/store.hpp"

namespace memhealth {

// The finding kinds of this monitor (latency_regression ... query_version_mismatch) are declared
// in detect/vocabulary.hpp (`all_retrieval_finding_kinds`), so the planner can name them.

/// Knobs of the retrieval monitor (see the file comment for how each is used). Similarities are
/// in the store's kernel units (cosine in [-1, 1] by default); rates and shares in [0, 1].
struct monitor_options {
  std::chrono::milliseconds window{
      std::chrono::hours{1}};            ///< window length (> 0), aligned to the epoch
  std::size_t top_k = 10;                ///< results per retrieval used for top-k metrics (0 = all)
  float duplicate_threshold = 0.92f;     ///< near-duplicate threshold, as duplicate_detector
  double latency_relative_error = 0.01;  ///< relative error of P50/P95/P99
  std::size_t min_retrievals = 10;       ///< fewer retrievals in a window: no metric alert
  std::size_t min_feedback = 5;          ///< fewer feedback events: no feedback_negative
  bool allow_ancestor_scopes =
      true;  ///< a record of an enclosing scope of a requested scope is not a leak
  std::size_t max_listed_ids = 20;  ///< record ids listed per finding
  // absolute thresholds
  double max_p95_latency_ms = 1000;       ///< P95 above this: latency_regression
  double min_mean_top1_similarity = 0.2;  ///< mean top-1 below this: similarity_drop
  double max_duplicate_share = 0.20;      ///< duplicate share above this: duplicate_share_high
  double max_empty_rate = 0.10;           ///< empty-result rate above this: empty_results
  double max_negative_feedback_rate =
      0.5;  ///< negative share of feedback above this: feedback_negative
  // against the baseline
  double p95_ratio = 3.0;                  ///< P95 this many times the baseline's
  double similarity_drop_sd = 3.0;         ///< drop in robust standard errors of the mean
  double min_similarity_drop = 0.05;       ///< and at least this much (kernel units)
  double duplicate_share_increase = 0.10;  ///< absolute increase of the share
  double empty_rate_increase = 0.10;       ///< absolute increase of the empty rate
  double negative_rate_increase = 0.20;    ///< absolute increase of the negative-feedback rate
};

/// Metrics of one partition in one window. Latencies in ms; similarities in kernel units.
struct window_metrics {
  std::string partition;              ///< partition (scope) of the events
  timestamp start;                    ///< window start (inclusive, UTC)
  timestamp end;                      ///< window end (exclusive, UTC)
  std::size_t retrievals = 0;         ///< retrieval events
  std::size_t empty = 0;              ///< retrievals with no result
  double empty_rate = 0;              ///< empty / retrievals, in [0, 1]
  double mean_top1_similarity = 0;    ///< mean over non-empty retrievals of the rank-1 similarity
  double mean_topk_similarity = 0;    ///< mean over all top-k results of non-empty retrievals
  double p50_latency_ms = 0;          ///< median latency (relative error latency_relative_error)
  double p95_latency_ms = 0;          ///< 95th percentile latency
  double p99_latency_ms = 0;          ///< 99th percentile latency
  std::size_t topk_compared = 0;      ///< top-k results with a usable store embedding
  std::size_t duplicate_results = 0;  ///< of those, near duplicates of a higher-ranked result
  double duplicate_share = 0;         ///< duplicate_results / topk_compared, in [0, 1]
  std::size_t feedback_total = 0;     ///< feedback events
  std::size_t edited = 0, deleted = 0, accepted = 0, rejected = 0;  ///< feedback by kind
  double negative_feedback_rate = 0;   ///< (edited + deleted + rejected) / feedback_total
  std::size_t ghost_results = 0;       ///< ghost result slots
  std::size_t scope_leaks = 0;         ///< leaked result slots
  std::size_t version_mismatches = 0;  ///< retrievals with a query_version_mismatch
};

/// Reference metrics of one partition that windows are compared with.
struct baseline_metrics {
  std::size_t retrievals = 0;         ///< retrievals pooled
  double p95_latency_ms = 0;          ///< pooled P95
  double median_top1_similarity = 0;  ///< median of per-query top-1 similarities
  double robust_sd_top1 = 0;          ///< 1.4826 x MAD of them
  double duplicate_share = 0;         ///< pooled duplicate share
  double empty_rate = 0;              ///< pooled empty rate
  std::size_t feedback_total = 0;     ///< feedback events pooled
  double negative_feedback_rate = 0;  ///< pooled negative-feedback rate
};

/// Baselines per partition (sorted by partition).
using baseline_map = std::map<std::string, baseline_metrics, std::less<>>;

/// What a monitor run produces: the metrics of every (partition, window) with events, in
/// partition then time order, and the findings (metric alerts and integrity findings).
struct monitor_result {
  std::vector<window_metrics> windows;  ///< one per partition x window with events
  report findings;                      ///< records_total = store size, records_checked = 0
};

namespace detail {

struct window_accum {
  latency_sketch sketch;
  std::vector<double> top1;
  double topk_sum = 0;
  std::size_t topk_n = 0, retrievals = 0, empty = 0, compared = 0, dups = 0;
  std::size_t fb[4] = {0, 0, 0, 0};
  std::vector<std::string> dup_ids, negative_ids;
  explicit window_accum(double rel) : sketch(rel) {}
  void merge(const window_accum& o) {
    sketch.merge(o.sketch);
    top1.insert(top1.end(), o.top1.begin(), o.top1.end());
    topk_sum += o.topk_sum;
    topk_n += o.topk_n;
    retrievals += o.retrievals;
    empty += o.empty;
    compared += o.compared;
    dups += o.dups;
    for (int i = 0; i < 4; ++i) fb[i] += o.fb[i];
  }
  [[nodiscard]] std::size_t feedback_total() const { return fb[0] + fb[1] + fb[2] + fb[3]; }
  [[nodiscard]] double negative_rate() const {
    const std::size_t t = feedback_total();
    return t ? static_cast<double>(fb[0] + fb[1] + fb[3]) / static_cast<double>(t) : 0.0;
  }
};

// One integrity finding under construction: (kind, reason) within a window.
struct integrity_accum {
  std::vector<std::string> ids;
  std::set<std::string, std::less<>> seen;
  std::size_t occurrences = 0, events = 0;
  std::string detail_key, detail_value;  // e.g. record_scope / query_version
};

inline double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  const std::size_t m = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(m), v.end());
  const double hi = v[m];
  if (v.size() % 2) return hi;
  const double lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(m));
  return (lo + hi) / 2;
}

inline baseline_metrics to_baseline(const window_accum& a) {
  baseline_metrics b;
  b.retrievals = a.retrievals;
  b.p95_latency_ms = a.sketch.quantile(0.95);
  b.median_top1_similarity = median_of(a.top1);
  std::vector<double> dev(a.top1.size());
  for (std::size_t i = 0; i < a.top1.size(); ++i)
    dev[i] = std::abs(a.top1[i] - b.median_top1_similarity);
  b.robust_sd_top1 = 1.4826 * median_of(std::move(dev));
  b.duplicate_share =
      a.compared ? static_cast<double>(a.dups) / static_cast<double>(a.compared) : 0.0;
  b.empty_rate =
      a.retrievals ? static_cast<double>(a.empty) / static_cast<double>(a.retrievals) : 0.0;
  b.feedback_total = a.feedback_total();
  b.negative_feedback_rate = a.negative_rate();
  return b;
}

inline std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}

template <class S>
std::string majority_version(const S& store) {
  using R = typename S::record_type;
  if constexpr (versioned_embedding_record<R>) {
    std::map<std::string, std::size_t, std::less<>> counts;
    for (std::size_t i = 0; i < store.size(); ++i)
      if (!store.embedding(i).empty())
        ++counts[std::string(field::embedding_version(store.record(i)))];
    std::string best;
    std::size_t n = 0;
    for (const auto& [v, c] : counts)
      if (c > n) best = v, n = c;
    return best;
  } else {
    (void)store;
    return {};
  }
}

// Accumulates events into windows and integrity findings; shared by monitor and baseline.
template <class S, class Kernel>
class monitor_engine {
 public:
  using key = std::pair<std::string, std::int64_t>;  // partition, window index

  monitor_engine(const S& store, const monitor_options& o, const Kernel& k)
      : store_(store), o_(o), kernel_(k), majority_(majority_version(store)) {
    if (o.window.count() <= 0)
      throw error(error_code::invalid_argument, "monitor: window must be positive");
  }

  std::int64_t window_of(const timestamp& t) const {
    return floor_div(epoch_ms(t), o_.window.count());
  }

  window_accum& accum(const key& k) {
    auto it = windows_.find(k);
    if (it == windows_.end())
      it = windows_.emplace(k, window_accum(o_.latency_relative_error)).first;
    return it->second;
  }

  void add(const retrieval_event& e) {
    const key k{e.partition, window_of(e.time)};
    window_accum& a = accum(k);
    ++a.retrievals;
    a.sketch.add(e.latency_ms);
    std::vector<const retrieved_item*> items;
    items.reserve(e.results.size());
    for (const auto& r : e.results) items.push_back(&r);
    std::stable_sort(items.begin(), items.end(),
                     [](auto* x, auto* y) { return x->rank < y->rank; });
    if (items.empty())
      ++a.empty;
    else
      a.top1.push_back(items.front()->similarity);
    const std::size_t kk = o_.top_k ? std::min(o_.top_k, items.size()) : items.size();
    std::vector<std::optional<std::size_t>> idx(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) idx[i] = store_.find(items[i]->id);
    // top-k similarity and duplicate share
    std::vector<const std::vector<float>*> units;
    for (std::size_t i = 0; i < kk; ++i) {
      a.topk_sum += items[i]->similarity;
      ++a.topk_n;
      const std::vector<float>* u = idx[i] ? unit(*idx[i]) : nullptr;
      if (!u) continue;
      ++a.compared;
      for (const auto* prev : units)
        if (prev->size() == u->size() &&
            kernel_(std::span<const float>(*prev), std::span<const float>(*u)) >=
                o_.duplicate_threshold) {
          ++a.dups;
          if (a.dup_ids.size() < o_.max_listed_ids &&
              std::find(a.dup_ids.begin(), a.dup_ids.end(), items[i]->id) == a.dup_ids.end())
            a.dup_ids.push_back(items[i]->id);
          break;
        }
      units.push_back(u);
    }
    integrity(e, k, items, idx);
  }

  void add(const feedback_event& e) {
    window_accum& a = accum({e.partition, window_of(e.time)});
    ++a.fb[static_cast<int>(e.feedback)];
    if (is_negative(e.feedback) && !e.id.empty() && a.negative_ids.size() < o_.max_listed_ids &&
        std::find(a.negative_ids.begin(), a.negative_ids.end(), e.id) == a.negative_ids.end())
      a.negative_ids.push_back(e.id);
  }

  std::map<key, window_accum>& windows() { return windows_; }
  auto& integrity_findings() { return integrity_; }

 private:
  using ikey = std::tuple<std::string, std::int64_t, std::string_view,
                          std::string>;  // partition, window, kind, reason

  const std::vector<float>* unit(std::size_t i) {
    auto it = units_.find(i);
    if (it != units_.end()) return it->second.empty() ? nullptr : &it->second;
    std::vector<float> v;
    const std::span<const float> e = store_.embedding(i);
    if (!e.empty()) {
      const float n =
          Eigen::Map<const Eigen::VectorXf>(e.data(), static_cast<Eigen::Index>(e.size())).norm();
      if (std::isfinite(n) && n > 0) {
        v.assign(e.begin(), e.end());
        for (float& x : v) x /= n;
      }
    }
    auto& slot = units_.emplace(i, std::move(v)).first->second;
    return slot.empty() ? nullptr : &slot;
  }

  void note(const key& k, std::string_view kind, std::string reason, const std::string& id,
            bool new_event, std::string detail_key = {}, std::string detail_value = {}) {
    auto& a = integrity_[ikey{k.first, k.second, kind, std::move(reason)}];
    ++a.occurrences;
    if (new_event) ++a.events;
    if (!id.empty() && !a.seen.count(id)) {
      a.seen.insert(id);
      if (a.ids.size() < o_.max_listed_ids) a.ids.push_back(id);
    }
    if (a.detail_key.empty() && !detail_key.empty())
      a.detail_key = std::move(detail_key), a.detail_value = std::move(detail_value);
  }

  void integrity(const retrieval_event& e, const key& k,
                 const std::vector<const retrieved_item*>& items,
                 const std::vector<std::optional<std::size_t>>& idx) {
    using R = typename S::record_type;
    std::set<std::string, std::less<>> counted;  // kind+reason already counted for this event
    auto first = [&](std::string_view kind, const std::string& reason) {
      return counted.insert(std::string(kind) + '\0' + reason).second;
    };
    bool version_noted = false;
    for (std::size_t i = 0; i < items.size(); ++i) {
      const std::string& id = items[i]->id;
      if (!idx[i]) {
        note(k, finding_kinds::ghost_result, "missing", id,
             first(finding_kinds::ghost_result, "missing"));
        continue;
      }
      const R& r = store_.record(*idx[i]);
      if constexpr (status_record<R>) {
        const std::string status(field::status(r));
        if (status == "archived" || status == "pending_review")
          note(k, finding_kinds::ghost_result, status, id,
               first(finding_kinds::ghost_result, status));
      }
      if constexpr (scoped_record<R>) {
        const std::string_view rs = field::scope(r);
        bool allowed = false;
        auto check = [&](std::string_view req) {
          if (req.empty()) return;
          if (!rs.empty() && (scope_is_ancestor_or_self(req, rs) ||
                              (o_.allow_ancestor_scopes && scope_is_ancestor_or_self(rs, req))))
            allowed = true;
        };
        bool any_request = false;
        for (const auto& req : e.requested_scopes) any_request |= !req.empty(), check(req);
        if (!any_request) any_request = !e.partition.empty(), check(e.partition);
        if (any_request && !allowed) {
          const std::string reason =
              rs.empty() ? "record_without_scope" : "outside_requested_scopes";
          note(k, finding_kinds::scope_leak, reason, id, first(finding_kinds::scope_leak, reason),
               "record_scope", std::string(rs));
        }
      }
      if constexpr (versioned_embedding_record<R>) {
        const std::string_view rv = field::embedding_version(r);
        if (!e.query_embedding_version.empty() && !rv.empty() && rv != e.query_embedding_version &&
            !version_noted) {
          version_noted = true;
          note(k, finding_kinds::query_version_mismatch,
               "query " + e.query_embedding_version + " vs stored " + std::string(rv), id, true,
               "query_embedding_version", e.query_embedding_version);
        }
      }
    }
    if (items.empty() && !e.query_embedding_version.empty() && !majority_.empty() &&
        majority_ != e.query_embedding_version)
      note(k, finding_kinds::query_version_mismatch,
           "query " + e.query_embedding_version + " vs stored " + majority_, {}, true,
           "query_embedding_version", e.query_embedding_version);
  }

  const S& store_;
  const monitor_options& o_;
  const Kernel& kernel_;
  std::string majority_;
  std::map<key, window_accum> windows_;
  std::unordered_map<std::size_t, std::vector<float>> units_;
  std::map<ikey, integrity_accum> integrity_;
};

inline std::string window_text(std::int64_t w, std::chrono::milliseconds len) {
  return format_timestamp(timestamp_from_epoch_ms(w * len.count()));
}

}  // namespace detail

/// Pools a reference event stream into one baseline per partition (all its events, any time).
/// @param store the store the events were served from (for duplicate share).
/// @complexity O(events x top_k^2 x d) for duplicate share, plus O(events log events).
template <record_store S, similarity_kernel Kernel = cosine_kernel>
baseline_map compute_baseline(const S& store, std::span<const retrieval_event> retrievals,
                              std::span<const feedback_event> feedback,
                              const monitor_options& options = {}, const Kernel& kernel = {}) {
  detail::monitor_engine<S, Kernel> eng(store, options, kernel);
  for (const auto& e : retrievals) eng.add(e);
  for (const auto& e : feedback) eng.add(e);
  std::map<std::string, detail::window_accum, std::less<>> pooled;
  for (const auto& [k, a] : eng.windows()) {
    auto it = pooled.find(k.first);
    if (it == pooled.end())
      it = pooled.emplace(k.first, detail::window_accum(options.latency_relative_error)).first;
    it->second.merge(a);
  }
  baseline_map out;
  for (const auto& [p, a] : pooled) out.emplace(p, detail::to_baseline(a));
  return out;
}

/// The retrieval figures of a whole event stream, pooled over partitions and windows: what
/// `memhealth apply` shows before and after a repair (issue 21, "verification includes the
/// retrieval metrics"). Latencies in ms; shares in [0, 1].
struct retrieval_figures {
  std::size_t retrievals = 0;     ///< retrieval events
  double p95_latency_ms = 0;      ///< pooled P95 latency (relative error latency_relative_error)
  std::size_t topk_compared = 0;  ///< top-k results with a usable store embedding
  std::size_t duplicate_results = 0;   ///< of those, near duplicates of a higher-ranked result
  double duplicate_share = 0;          ///< duplicate_results / topk_compared (0 when none compared)
  std::size_t ghost_results = 0;       ///< result slots serving an id without a live record
  std::size_t scope_leaks = 0;         ///< result slots outside the requested scopes
  std::size_t version_mismatches = 0;  ///< retrievals whose query model differs from a result's
};

/// Pools `retrievals` served from `store` into one `retrieval_figures` (the same definitions as
/// the per-window metrics of `monitor_retrievals`, see the file comment). Empty input: all zero.
/// @throws memhealth::error(invalid_argument) for a window length <= 0 (the window does not
/// change the pooled figures). @complexity O(events x top_k^2 x d).
template <record_store S, similarity_kernel Kernel = cosine_kernel>
retrieval_figures summarize_retrievals(const S& store, std::span<const retrieval_event> retrievals,
                                       const monitor_options& options = {},
                                       const Kernel& kernel = {}) {
  detail::monitor_engine<S, Kernel> eng(store, options, kernel);
  for (const auto& e : retrievals) eng.add(e);
  detail::window_accum all(options.latency_relative_error);
  for (const auto& entry : eng.windows()) all.merge(entry.second);
  retrieval_figures out;
  out.retrievals = all.retrievals;
  out.p95_latency_ms = all.retrievals ? all.sketch.quantile(0.95) : 0.0;
  out.topk_compared = all.compared;
  out.duplicate_results = all.dups;
  out.duplicate_share =
      all.compared ? static_cast<double>(all.dups) / static_cast<double>(all.compared) : 0.0;
  for (const auto& entry : eng.integrity_findings()) {
    const std::string_view kind = std::get<2>(entry.first);
    if (kind == finding_kinds::ghost_result)
      out.ghost_results += entry.second.occurrences;
    else if (kind == finding_kinds::scope_leak)
      out.scope_leaks += entry.second.occurrences;
    else if (kind == finding_kinds::query_version_mismatch)
      out.version_mismatches += entry.second.events;
  }
  return out;
}

/// Runs the retrieval monitor over events served from `store` (see the file comment).
/// @param retrievals, feedback events in any order. @param baseline explicit baselines per
///        partition; nullptr (or a partition missing from it) = rolling baseline.
/// @return metrics per partition and window, and findings (alerts first per window, then
///         integrity findings, in partition and time order).
/// @throws memhealth::error(invalid_argument) for a window length <= 0; bad events never throw.
/// @complexity O(events x (log events + top_k^2 x d)).
template <record_store S, similarity_kernel Kernel = cosine_kernel>
monitor_result monitor_retrievals(const S& store, std::span<const retrieval_event> retrievals,
                                  std::span<const feedback_event> feedback,
                                  const monitor_options& options = {},
                                  const baseline_map* baseline = nullptr,
                                  const Kernel& kernel = {}) {
  detail::monitor_engine<S, Kernel> eng(store, options, kernel);
  for (const auto& e : retrievals) eng.add(e);
  for (const auto& e : feedback) eng.add(e);
  monitor_result out;
  out.findings.records_total = store.size();
  const auto& o = options;
  std::map<std::string, detail::window_accum, std::less<>> rolling;
  auto& integ = eng.integrity_findings();
  for (auto& entry : eng.windows()) {
    const auto& k = entry.first;  // not a structured binding: clang 14 cannot capture those
    const detail::window_accum& a = entry.second;
    window_metrics m;
    m.partition = k.first;
    m.start = timestamp_from_epoch_ms(k.second * o.window.count());
    m.end = timestamp_from_epoch_ms((k.second + 1) * o.window.count());
    m.retrievals = a.retrievals;
    m.empty = a.empty;
    m.empty_rate =
        a.retrievals ? static_cast<double>(a.empty) / static_cast<double>(a.retrievals) : 0.0;
    double s1 = 0;
    for (double x : a.top1) s1 += x;
    m.mean_top1_similarity = a.top1.empty() ? 0.0 : s1 / static_cast<double>(a.top1.size());
    m.mean_topk_similarity = a.topk_n ? a.topk_sum / static_cast<double>(a.topk_n) : 0.0;
    m.p50_latency_ms = a.sketch.quantile(0.50);
    m.p95_latency_ms = a.sketch.quantile(0.95);
    m.p99_latency_ms = a.sketch.quantile(0.99);
    m.topk_compared = a.compared;
    m.duplicate_results = a.dups;
    m.duplicate_share =
        a.compared ? static_cast<double>(a.dups) / static_cast<double>(a.compared) : 0.0;
    m.edited = a.fb[0], m.deleted = a.fb[1], m.accepted = a.fb[2], m.rejected = a.fb[3];
    m.feedback_total = a.feedback_total();
    m.negative_feedback_rate = a.negative_rate();

    std::optional<baseline_metrics> base;
    if (baseline) {
      if (auto it = baseline->find(k.first); it != baseline->end()) base = it->second;
    }
    if (!base) {
      if (auto it = rolling.find(k.first); it != rolling.end())
        base = detail::to_baseline(it->second);
    }
    if (base && base->retrievals < o.min_retrievals) base.reset();

    const std::string ws = detail::window_text(k.second, o.window),
                      we = detail::window_text(k.second + 1, o.window);
    bool alerted = false;
    auto alert = [&](std::string_view kind, bool abs_hit, bool base_hit, std::string metric,
                     double value, double threshold, std::string base_key, double base_value,
                     std::string repair, const std::vector<std::string>& ids) {
      if (!abs_hit && !base_hit) return;
      alerted = true;
      finding f;
      f.kind = std::string(kind);
      f.severity = severity::warning;
      f.detector = "retrieval_monitor";
      f.record_ids = ids;
      f.with("partition", k.first).with("window_start", ws).with("window_end", we);
      f.with("retrievals", static_cast<std::int64_t>(a.retrievals));
      f.with(std::move(metric), value).with("threshold", threshold);
      if (base) f.with(std::move(base_key), base_value);
      f.with("against", std::string(abs_hit && base_hit ? "absolute+baseline"
                                    : abs_hit           ? "absolute"
                                                        : "baseline"));
      f.suggested_repair = std::move(repair);
      out.findings.findings.push_back(std::move(f));
    };
    if (a.retrievals >= o.min_retrievals) {
      alert(finding_kinds::latency_regression, m.p95_latency_ms > o.max_p95_latency_ms,
            base && base->p95_latency_ms > 0 &&
                m.p95_latency_ms >= o.p95_ratio * base->p95_latency_ms,
            "p95_latency_ms", m.p95_latency_ms, o.max_p95_latency_ms, "baseline_p95_latency_ms",
            base ? base->p95_latency_ms : 0.0, "check_rebuild_index", {});
      if (!a.top1.empty()) {
        bool base_hit = false;
        if (base) {
          const double drop = base->median_top1_similarity - m.mean_top1_similarity;
          const double se = base->robust_sd_top1 / std::sqrt(static_cast<double>(a.top1.size()));
          base_hit = drop >= std::max(o.min_similarity_drop, o.similarity_drop_sd * se);
        }
        alert(finding_kinds::similarity_drop, m.mean_top1_similarity < o.min_mean_top1_similarity,
              base_hit, "mean_top1_similarity", m.mean_top1_similarity, o.min_mean_top1_similarity,
              "baseline_median_top1_similarity", base ? base->median_top1_similarity : 0.0,
              "check_rebuild_index", {});
      }
      alert(finding_kinds::duplicate_share_high, m.duplicate_share > o.max_duplicate_share,
            base && m.duplicate_share - base->duplicate_share >= o.duplicate_share_increase,
            "duplicate_share", m.duplicate_share, o.max_duplicate_share, "baseline_duplicate_share",
            base ? base->duplicate_share : 0.0, "merge_duplicates", a.dup_ids);
      alert(finding_kinds::empty_results, m.empty_rate > o.max_empty_rate,
            base && m.empty_rate - base->empty_rate >= o.empty_rate_increase, "empty_rate",
            m.empty_rate, o.max_empty_rate, "baseline_empty_rate", base ? base->empty_rate : 0.0,
            "rebuild_index", {});
    }
    if (m.feedback_total >= o.min_feedback) {
      const bool base_fb =
          base && base->feedback_total >= o.min_feedback &&
          m.negative_feedback_rate - base->negative_feedback_rate >= o.negative_rate_increase;
      alert(finding_kinds::feedback_negative,
            m.negative_feedback_rate > o.max_negative_feedback_rate, base_fb,
            "negative_feedback_rate", m.negative_feedback_rate, o.max_negative_feedback_rate,
            "baseline_negative_feedback_rate", base ? base->negative_feedback_rate : 0.0,
            "manual_review", a.negative_ids);
    }
    // integrity findings of this window
    for (auto it = integ.lower_bound({k.first, k.second, std::string_view{}, std::string{}});
         it != integ.end() && std::get<0>(it->first) == k.first &&
         std::get<1>(it->first) == k.second;
         ++it) {
      const auto& [p, w, kind, reason] = it->first;
      const auto& ia = it->second;
      finding f;
      f.kind = std::string(kind);
      f.severity = kind == finding_kinds::scope_leak ? severity::critical : severity::error;
      f.detector = "retrieval_monitor";
      f.record_ids = ia.ids;
      f.with("partition", p).with("window_start", ws).with("window_end", we).with("reason", reason);
      f.with("occurrences", static_cast<std::int64_t>(ia.occurrences))
          .with("events", static_cast<std::int64_t>(ia.events));
      f.with("distinct_ids", static_cast<std::int64_t>(ia.seen.size()));
      if (!ia.detail_key.empty()) f.with(ia.detail_key, ia.detail_value);
      // what make_plan does with it (plan_table.hpp, retrieval_plan_table)
      f.suggested_repair = kind == finding_kinds::scope_leak     ? "manual_review"
                           : kind == finding_kinds::ghost_result ? "clean_index"
                                                                 : "start_migration";
      if (kind == finding_kinds::ghost_result)
        m.ghost_results += ia.occurrences;
      else if (kind == finding_kinds::scope_leak)
        m.scope_leaks += ia.occurrences;
      else
        m.version_mismatches += ia.events;
      out.findings.findings.push_back(std::move(f));
    }
    if (!alerted) {
      auto it = rolling.find(k.first);
      if (it == rolling.end())
        it = rolling.emplace(k.first, detail::window_accum(o.latency_relative_error)).first;
      it->second.merge(a);
    }
    out.windows.push_back(std::move(m));
  }
  return out;
}

}  // namespace memhealth
