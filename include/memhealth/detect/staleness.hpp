#pragma once
/// @file staleness.hpp
/// Detector "staleness": active records whose decayed weight fell below a threshold
/// (SPEC section 2, staleness). The repair is down-weighting, never deletion.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memhealth/detect/decay.hpp"
#include "memhealth/detect/finding.hpp"
#include "memhealth/record/traits.hpp"

namespace memhealth {

namespace detail {
template <class R>
inline constexpr bool has_any_time_field =
    field_updated_at::available<const R> || field_last_accessed_at::available<const R> ||
    field_created_at::available<const R>;
}  // namespace detail

/// Detector "staleness".
///
/// For each checked record that is active (status "active"; every record when R has no status),
/// the age is `ctx.now()` minus the later of updated_at and last_accessed_at (created_at when
/// both are absent; negative ages count as 0). The weight is `curves.curve_for(kind)(age)`, times
/// the stored effective_weight when R maps one and the record has it. A record whose stored
/// effective_weight is already at or below the curve's value, or below `threshold`, has been
/// down-weighted and is not reported again (so a repair converges, floor or not). A weight below
/// `threshold` emits `stale` with record_ids {id}, evidence `age_days` (double), `curve` (e.g.
/// "exponential(half_life=30d)"), `curve_weight`, `weight` (the product, in [0,1]), `kind`, and
/// repair "downweight". A stored weight outside [0,1] is used as is (the product is reported).
/// Severity: warning when weight < threshold / 2, else info.
/// Records without any timestamp are skipped (the structural detector reports them).
///
/// Incremental runs: a record goes stale precisely by *not* changing, so by default every record
/// is checked even when the run has a cursor (`check_unchanged`); set it to false to follow
/// `ctx.is_changed` like the other detectors. An unchanged record is reported only when it
/// crossed the threshold after the cursor (`detect_options::since`): one already stale then was
/// reported by the run that set the cursor, and is not reported again.
///
/// Capabilities: needs at least one of updated_at / last_accessed_at / created_at (refused at
/// compile time otherwise); uses kind (`kinded_record`; else the fallback curve), status
/// (`status_record`) and effective_weight (`weighted_record`) when present.
/// @complexity O(n log k) for n records and k kinds in the table; no allocation for fresh records.
struct staleness_detector {
  static constexpr std::string_view name = "staleness";
  kind_decay curves;            ///< decay curve per kind (defaults in `kind_decay`)
  double threshold = 0.2;       ///< weights below this are stale; in [0,1]
  bool check_unchanged = true;  ///< check records the incremental cursor did not mark changed

  /// Appends stale findings; never mutates the store.
  template <class Ctx>
  void run(Ctx& ctx, std::vector<finding>& out) const {
    using R = typename Ctx::record_type;
    static_assert(detail::has_any_time_field<R>,
                  "memhealth: staleness_detector needs a timestamp field (updated_at, "
                  "last_accessed_at or created_at) on the record type. Map one with "
                  "memhealth::record_traits<R>, a data member of that name, or an ADL function "
                  "memhealth_<field>(r).");
    const auto& store = ctx.store();
    const std::size_t n = store.size();
    for (std::size_t i = 0; i < n; ++i) {
      if (!check_unchanged && !ctx.is_changed(i)) continue;
      const R& r = store.record(i);
      if constexpr (status_record<R>)
        if (field::status(r) != "active") continue;
      std::optional<timestamp> t;
      if constexpr (detail::field_updated_at::available<const R>) t = field::updated_at(r);
      if constexpr (detail::field_last_accessed_at::available<const R>) {
        const auto a = field::last_accessed_at(r);
        if (a && (!t || *t < *a)) t = a;
      }
      if constexpr (detail::field_created_at::available<const R>)
        if (!t) t = field::created_at(r);
      if (!t) continue;
      auto age = ctx.now() - t->instant;
      if (age.count() < 0) age = std::chrono::milliseconds{0};
      std::string_view kind;
      if constexpr (kinded_record<R>) kind = field::kind(r);
      const decay_curve& curve = curves.curve_for(kind);
      const double curve_weight = evaluate(curve, std::chrono::milliseconds{age});
      double weight = curve_weight;
      double stored_factor = 1.0;  // a stored effective weight multiplies the curve's
      if constexpr (weighted_record<R>) {
        if (const auto stored = field::effective_weight(r)) {
          // Already down-weighted, to at most what the curve says or below the threshold (a
          // repair's floor): done; reporting it again would make every run lower it once more.
          if (*stored <= curve_weight + 1e-9 || *stored < threshold) continue;
          weight *= *stored;
          stored_factor = *stored;
        }
      }
      if (!(weight < threshold)) continue;
      if (const auto& since = ctx.options().since; since && !ctx.is_changed(i)) {
        // stale already at the cursor: the earlier run reported it
        auto then = *since - t->instant;
        if (then.count() < 0) then = std::chrono::milliseconds{0};
        if (evaluate(curve, std::chrono::milliseconds{then}) * stored_factor < threshold) continue;
      }
      finding f;
      f.kind = std::string(finding_kinds::stale);
      f.severity = weight < threshold / 2 ? severity::warning : severity::info;
      f.detector = std::string(name);
      f.record_ids = {std::string(field::id(r))};
      f.with("age_days", decay_days(age).count())
          .with("curve", describe(curve))
          .with(evidence_keys::curve_weight, curve_weight)
          .with(evidence_keys::weight, weight)
          .with("kind", std::string(kind));
      f.suggested_repair = "downweight";
      out.push_back(std::move(f));
    }
  }
};

}  // namespace memhealth
