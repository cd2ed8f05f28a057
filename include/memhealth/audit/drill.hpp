#pragma once
/// @file drill.hpp
/// Fault drill: inject every kind of anomaly at a known rate into a copy of a store, run detect,
/// plan and apply, and measure what was found and fixed (SPEC section 4; the chaos-engineering
/// idea of fault injection applied to a memory store).
///
/// ## Procedure (`run_drill`)
/// 1. **Baseline.** Detect on the records as given. Records in no baseline finding, active, with
///    an id, content, a scope and a finite embedding of the store's dimension are *eligible*.
/// 2. **Inject.** The eligible records are shuffled with the seed; each fault kind takes the next
///    `max(1, round(rate x eligible))` of them as targets (targets never overlap). Faults either
///    change the target or add new records next to it (table below). New ids start with
///    "drill-".
/// 3. **Detect** on the injected store. A fault is *detected* when a finding of its expected kind
///    names its record (for `mixed_embedding_version`, whose finding lists at most 20 ids, the
///    record's version differing from the reported majority also counts).
/// 4. **Plan and apply** with `opt.plan` / `opt.apply` (by default tier 1 and tier 2 run; tier 3,
///    re-embedding and manual review, does not). The drill raises the per-run record limits and
///    the blast-radius threshold to the store size and turns the rate limiter off: it measures
///    repairs, not guardrails.
/// 5. **Verify:** detect again. A detected fault is *attempted* when an applied action edited one
///    of its records, and *repaired* when it is attempted and no longer detected.
///
/// | fault | injection | expected finding |
/// |---|---|---|
/// | exact_duplicate | byte-identical copy of the target under a new id | exact_duplicate |
/// | paraphrased_duplicate | copy with "To repeat: " before the text and a vector at cosine 0.97 to the target's (as a sentence model would place a paraphrase) | near_duplicate |
/// | conflicting_claim | two new fact records in the target's scope, same entity and attribute, different values, random vectors | conflict |
/// | dimension_error | target's vector cut to half its length | embedding_dim_mismatch |
/// | nan_vector | one coordinate of the target's vector set to NaN | embedding_non_finite |
/// | missing_metadata | a required key removed (the schema's first required key; without a schema, a key every record has, which the drill then requires) | metadata_schema_violation |
/// | dangling_link | a related id that names no record | dangling_reference |
/// | scope_leak | copy of the target in another scope | cross_scope_duplicate |
/// | mixed_embedding_version | the target's embedding_version renamed | mixed_embedding_version |
/// | zero_padded_vector | vector replaced by a dense quarter-length unit vector padded with zeros | embedding_zero_padded |
/// | stale_record | all times moved back 200 days, doubled until the kind's own decay curve is below half the stale threshold (kind set to episodic only for a kind that never decays), weight cleared | stale |
/// | junk_content | content replaced by "lorem ipsum dolor sit amet N" | junk_content |
///
/// ## Metrics
/// - coverage = detected / injected, per kind and overall;
/// - false-positive rate = untouched records (neither targets nor new) named by an injected-run
///   finding whose (kind, id) the baseline did not have, over all untouched records;
/// - repair success = repaired / attempted;
/// - harm = healthy records (untouched and in no baseline finding) whose image changed in apply.
///
/// Deterministic for a seed: the random stream is splitmix64 (no standard-library distribution,
/// whose output differs between implementations).
///
/// Records must be `memory_record` (the drill edits every field).

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <numbers>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/detect/default_pipeline.hpp"
#include "memhealth/io/jsonl.hpp"
#include "memhealth/record/memory_record.hpp"
#include "memhealth/repair/executor.hpp"
#include "memhealth/repair/planner.hpp"
#include "memhealth/repair/wal.hpp"
#include "memhealth/similarity/lsh.hpp"
#include "memhealth/store/memory_store.hpp"

namespace memhealth {

/// The anomalies a drill injects (see the table in the file comment).
enum class fault_kind : std::uint8_t {
  exact_duplicate,
  paraphrased_duplicate,
  conflicting_claim,
  dimension_error,
  nan_vector,
  missing_metadata,
  dangling_link,
  scope_leak,
  mixed_embedding_version,
  zero_padded_vector,
  stale_record,
  junk_content,
};

/// Every fault kind, in declaration order.
inline constexpr std::array<fault_kind, 12> all_fault_kinds{
    fault_kind::exact_duplicate,  fault_kind::paraphrased_duplicate, fault_kind::conflicting_claim,
    fault_kind::dimension_error,  fault_kind::nan_vector,            fault_kind::missing_metadata,
    fault_kind::dangling_link,    fault_kind::scope_leak,            fault_kind::mixed_embedding_version,
    fault_kind::zero_padded_vector, fault_kind::stale_record,        fault_kind::junk_content};

/// Name of a fault kind ("exact_duplicate", ...).
constexpr std::string_view to_string(fault_kind k) noexcept {
  constexpr std::array<std::string_view, 12> names{
      "exact_duplicate", "paraphrased_duplicate", "conflicting_claim", "dimension_error",
      "nan_vector",      "missing_metadata",      "dangling_link",     "scope_leak",
      "mixed_embedding_version", "zero_padded_vector", "stale_record", "junk_content"};
  return names[static_cast<std::size_t>(k)];
}

/// The finding kind that counts as detecting a fault of kind k.
constexpr std::string_view expected_finding(fault_kind k) noexcept {
  constexpr std::array<std::string_view, 12> kinds{
      finding_kinds::exact_duplicate,         finding_kinds::near_duplicate,
      finding_kinds::conflict,                finding_kinds::embedding_dim_mismatch,
      finding_kinds::embedding_non_finite,    finding_kinds::metadata_schema_violation,
      finding_kinds::dangling_reference,      finding_kinds::cross_scope_duplicate,
      finding_kinds::mixed_embedding_version, finding_kinds::embedding_zero_padded,
      finding_kinds::stale,                   finding_kinds::junk_content};
  return kinds[static_cast<std::size_t>(k)];
}

/// Settings of a drill.
struct drill_options {
  std::uint64_t seed = 1;  ///< random stream seed (same seed, same drill)
  /// Share of eligible records given each fault kind, in (0, 1]; each kind gets at least one.
  double rate = 0.02;
  std::vector<fault_kind> kinds{all_fault_kinds.begin(), all_fault_kinds.end()};  ///< kinds injected
  /// Detection settings of all three runs. A drill without a schema derives one (see the table).
  default_check_settings check{};
  /// Detection clock (UTC); stale faults are placed 200 days before it.
  utc_time now = std::chrono::time_point_cast<std::chrono::milliseconds>(std::chrono::system_clock::now());
  planner_options plan{};  ///< planning (record limits are raised to the store size)
  /// Applying: tier 2 approved by default; set `approve_tier3` and `embed` to let re-embedding run.
  apply_options apply = [] {
    apply_options a;
    a.approve_tier2 = true;
    return a;
  }();
  /// Write-ahead log of the drill's apply; empty = a temporary file, removed afterwards.
  std::filesystem::path wal_path;
};

/// One injected fault and what became of it.
struct drill_fault {
  fault_kind kind = fault_kind::exact_duplicate;  ///< the kind
  std::string target;                    ///< id of the eligible record it was placed on
  std::vector<std::string> ids;          ///< records that carry the fault (target and/or new ids)
  bool detected = false;                 ///< a finding of the expected kind named it
  bool attempted = false;                ///< an applied action edited one of `ids`
  bool repaired = false;                 ///< attempted and no longer detected
};

/// Counts for one fault kind.
struct drill_kind_result {
  fault_kind kind = fault_kind::exact_duplicate;  ///< the kind
  std::size_t injected = 0;   ///< faults placed
  std::size_t detected = 0;   ///< of those, detected
  std::size_t attempted = 0;  ///< of those, edited by an applied action
  std::size_t repaired = 0;   ///< of those, gone after apply
  double coverage = 0;        ///< detected / injected (0 when nothing was injected)
  std::string note;           ///< why fewer were injected than asked, or empty
};

/// Result of a drill.
struct drill_result {
  std::vector<drill_kind_result> per_kind;  ///< one entry per requested kind, in request order
  std::vector<drill_fault> faults;          ///< every fault, in injection order
  std::size_t records = 0;                  ///< records given
  std::size_t eligible = 0;                 ///< of those, eligible as targets
  std::size_t injected = 0, detected = 0;   ///< totals over kinds
  double coverage = 0;                      ///< detected / injected
  std::size_t untouched = 0;                ///< records neither targeted nor added
  std::size_t false_positive_records = 0;   ///< untouched records newly named by a finding
  double false_positive_rate = 0;           ///< false_positive_records / untouched
  std::vector<std::string> false_positive_ids;  ///< the first 20 of them, for diagnosis
  std::size_t attempted = 0, repaired = 0;  ///< totals over detected faults
  double repair_success = 0;                ///< repaired / attempted (0 when nothing was attempted)
  std::size_t healthy_records_changed = 0;  ///< harm: healthy untouched records changed by apply
  std::map<std::string, std::size_t> findings_baseline;  ///< findings by kind, before injection
  std::map<std::string, std::size_t> findings_injected;  ///< after injection
  std::map<std::string, std::size_t> findings_repaired;  ///< after apply
  std::size_t actions_planned = 0, actions_applied = 0;  ///< the plan and what ran
  std::string schema_note;  ///< the derived required key, when the drill chose one
};

namespace detail::drill {

// splitmix64 stream (Steele, Lea, Flood, "Fast splittable pseudorandom number generators",
// OOPSLA 2014), the one lsh.hpp uses: the same numbers on every platform.
struct rng {
  std::uint64_t state;
  std::uint64_t next() noexcept { return lsh_splitmix64(state); }
  double uniform() noexcept { return uniform_open(state); }  // (0,1)
  std::size_t below(std::size_t n) noexcept { return static_cast<std::size_t>(next() % n); }
  float gaussian() noexcept {  // Box-Muller
    const double u1 = uniform(), u2 = uniform();
    return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2));
  }
};

inline void normalize(std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += static_cast<double>(x) * x;
  if (s == 0) return;
  const auto inv = static_cast<float>(1.0 / std::sqrt(s));
  for (float& x : v) x *= inv;
}

inline std::vector<float> random_unit(std::size_t d, rng& g) {
  std::vector<float> v(d);
  for (float& x : v) x = g.gaussian();
  normalize(v);
  return v;
}

// A unit vector at cosine c to x: c x + sqrt(1 - c^2) z, x normalised, z a random unit vector
// orthogonal to x.
inline std::vector<float> at_cosine(std::vector<float> x, float c, rng& g) {
  normalize(x);
  auto z = random_unit(x.size(), g);
  double dot = 0;
  for (std::size_t k = 0; k < x.size(); ++k) dot += static_cast<double>(x[k]) * z[k];
  for (std::size_t k = 0; k < x.size(); ++k) z[k] -= static_cast<float>(dot) * x[k];
  normalize(z);
  std::vector<float> y(x.size());
  const float s = std::sqrt(1.0f - c * c);
  for (std::size_t k = 0; k < x.size(); ++k) y[k] = c * x[k] + s * z[k];
  normalize(y);
  return y;
}

using pair_key = std::pair<std::string, std::string>;  // (finding kind, record id)

inline std::set<pair_key> named(const report& r) {
  std::set<pair_key> out;
  for (const auto& f : r.findings)
    for (const auto& id : f.record_ids) out.emplace(f.kind, id);
  return out;
}

inline std::map<std::string, std::size_t> counts(const report& r) {
  std::map<std::string, std::size_t> m;
  for (const auto& f : r.findings) ++m[f.kind];
  return m;
}

// Whether report r shows fault f (see the file comment).
inline bool shows(const report& r, const drill_fault& f, const memory_store<memory_record>& store) {
  const std::string_view want = expected_finding(f.kind);
  for (const auto& fd : r.findings) {
    if (fd.kind != want) continue;
    auto names = [&](const std::string& id) { return std::find(fd.record_ids.begin(), fd.record_ids.end(), id) != fd.record_ids.end(); };
    if (f.kind == fault_kind::conflicting_claim) {
      if (names(f.ids[0]) && names(f.ids[1])) return true;
      continue;
    }
    for (const auto& id : f.ids) {
      if (names(id)) return true;
      if (f.kind == fault_kind::mixed_embedding_version) {
        const auto* major = fd.evidence_of("majority_version");
        const auto i = store.find(id);
        if (major && i && std::get_if<std::string>(major) &&
            store.record(*i).embedding_version != *std::get_if<std::string>(major))
          return true;
      }
    }
  }
  return false;
}

inline std::string text_of(const metadata_value& v) {
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  return {};
}

}  // namespace detail::drill

/// Runs a fault drill on a copy of `records` (see the file comment).
/// @param records the store's records (taken by value: the drill works on its own copy).
/// @return the measurements; `per_kind` follows `opt.kinds`.
/// @throws memhealth::error(invalid_argument) for a rate outside (0, 1] or an empty kind list;
///         memhealth::error(io) when the log cannot be written. A store too small for a kind is
///         not an error: fewer faults are injected and `note` says why.
/// @note A template only so that its body (the pipeline run, make_plan, apply_plan on a
///       memory_store) is compiled in the translation units that call it, not in every TU that
///       includes memhealth.hpp; `Record` is always deduced (or defaulted) as memory_record.
template <class Record = memory_record>
drill_result run_drill(std::vector<Record> records, const drill_options& opt) {
  static_assert(std::is_same_v<Record, memory_record>, "run_drill works on memory_record");
  namespace dd = detail::drill;
  if (!(opt.rate > 0.0 && opt.rate <= 1.0))
    throw error(error_code::invalid_argument, "drill: rate must be in (0, 1]");
  if (opt.kinds.empty()) throw error(error_code::invalid_argument, "drill: no fault kinds requested");
  drill_result res;
  res.records = records.size();
  default_check_settings check = opt.check;
  detect_options when;
  when.now = opt.now;

  // ------------------------------------------------------------ baseline
  std::string derived_key;
  metadata_value derived_default;
  if (check.schema.required.empty() && !records.empty()) {
    // a key present in every record, the most common value as the repair default
    std::map<std::string, std::size_t> have;
    for (const auto& r : records)
      for (const auto& [k, v] : r.metadata) ++have[k];
    for (const auto& [k, c] : have)
      if (c == records.size()) {
        derived_key = k;
        break;
      }
    if (!derived_key.empty()) {
      check.schema.required[derived_key] = metadata_types::any;
      std::map<std::string, std::size_t> values;
      for (const auto& r : records)
        if (auto it = r.metadata.find(derived_key); it != r.metadata.end()) ++values[dd::text_of(it->second)];
      std::string best;
      std::size_t best_n = 0;
      for (const auto& [v, c] : values)
        if (c > best_n) best = v, best_n = c;
      derived_default = best;
      res.schema_note = "required metadata key '" + derived_key + "' (present in every record)";
    }
  }
  const std::string required_key = check.schema.required.empty() ? std::string() : check.schema.required.begin()->first;
  auto pipeline = make_default_pipeline(check);

  auto base_store = memory_store<memory_record>::from_records(records);
  const std::size_t d = base_store.dimension();
  const report baseline = pipeline.run(base_store, when);
  res.findings_baseline = dd::counts(baseline);
  const auto baseline_named = dd::named(baseline);
  std::set<std::string> in_baseline;
  for (const auto& [k, id] : baseline_named) in_baseline.insert(id);

  std::vector<std::size_t> eligible;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto& r = records[i];
    const auto e = base_store.embedding(i);
    const bool finite = std::all_of(e.begin(), e.end(), [](float x) { return std::isfinite(x); });
    if (!r.id.empty() && !r.content.empty() && !r.scope.empty() && r.status == "active" && d > 0 &&
        e.size() == d && finite && !in_baseline.contains(r.id) && base_store.find(r.id) == i)
      eligible.push_back(i);
  }
  res.eligible = eligible.size();
  dd::rng g{opt.seed};
  for (std::size_t k = eligible.size(); k > 1; --k) std::swap(eligible[k - 1], eligible[g.below(k)]);

  std::vector<std::string> scopes;
  for (const auto& r : records) scopes.push_back(r.scope);
  std::sort(scopes.begin(), scopes.end());
  scopes.erase(std::unique(scopes.begin(), scopes.end()), scopes.end());

  // ------------------------------------------------------------ inject
  const std::size_t per_kind =
      std::max<std::size_t>(1, static_cast<std::size_t>(std::llround(opt.rate * static_cast<double>(eligible.size()))));
  std::size_t next = 0;
  std::vector<memory_record> added;
  std::set<std::string> touched;
  std::size_t serial = 0;
  auto new_id = [&](fault_kind k) { return "drill-" + std::string(to_string(k)) + "-" + std::to_string(serial++); };
  const auto day_ms = std::int64_t{86'400'000};
  const std::int64_t now_ms = opt.now.time_since_epoch().count();

  for (fault_kind kind : opt.kinds) {
    drill_kind_result kr;
    kr.kind = kind;
    std::size_t want = per_kind;
    if (kind == fault_kind::missing_metadata && required_key.empty()) {
      kr.note = "no metadata key is present in every record and no schema was given: nothing to remove";
      want = 0;
    }
    if (kind == fault_kind::mixed_embedding_version) {
      // stay a minority, or the injected version becomes the majority
      const std::size_t cap = eligible.size() / 4;
      if (want > cap) {
        want = cap;
        kr.note = "capped at a quarter of the eligible records so the injected version stays a minority";
      }
    }
    for (std::size_t c = 0; c < want; ++c) {
      if (next == eligible.size()) {
        kr.note = "ran out of eligible records";
        break;
      }
      memory_record& t = records[eligible[next++]];
      drill_fault f;
      f.kind = kind;
      f.target = t.id;
      touched.insert(t.id);
      switch (kind) {
        case fault_kind::exact_duplicate: {
          memory_record copy = t;
          copy.id = new_id(kind);
          f.ids = {copy.id, t.id};
          added.push_back(std::move(copy));
          break;
        }
        case fault_kind::paraphrased_duplicate: {
          memory_record copy = t;
          copy.id = new_id(kind);
          copy.content = "To repeat: " + t.content;
          copy.embedding = dd::at_cosine(t.embedding, 0.97f, g);
          f.ids = {copy.id, t.id};
          added.push_back(std::move(copy));
          break;
        }
        case fault_kind::conflicting_claim: {
          const std::string entity = "drill item " + std::to_string(serial);
          for (int side = 0; side < 2; ++side) {
            memory_record m = t;
            m.id = new_id(kind);
            const std::string value = side == 0 ? "box " + std::to_string(12 + serial) : "shelf " + std::to_string(40 + serial);
            m.content = "The " + entity + " is kept in the " + value;
            m.kind = std::string(kinds::fact);
            m.claim = fact_claim{entity, "location", value};
            m.embedding = dd::random_unit(d, g);
            m.links = {};
            m.source = side == 0 ? "model_extracted" : "user_declared";
            m.updated_at = timestamp_from_epoch_ms(now_ms - (side == 0 ? 10 : 1) * day_ms);
            m.created_at = m.updated_at;
            m.last_accessed_at.reset();
            m.effective_weight.reset();
            f.ids.push_back(m.id);
            added.push_back(std::move(m));
          }
          break;
        }
        case fault_kind::dimension_error:
          t.embedding.resize(d / 2);
          f.ids = {t.id};
          break;
        case fault_kind::nan_vector:
          t.embedding[d / 3] = std::numeric_limits<float>::quiet_NaN();
          f.ids = {t.id};
          break;
        case fault_kind::missing_metadata:
          t.metadata.erase(required_key);
          f.ids = {t.id};
          break;
        case fault_kind::dangling_link:
          t.links.related_ids.push_back(new_id(kind) + "-missing");
          f.ids = {t.id};
          break;
        case fault_kind::scope_leak: {
          memory_record copy = t;
          copy.id = new_id(kind);
          auto other = std::upper_bound(scopes.begin(), scopes.end(), t.scope);
          copy.scope = other != scopes.end() ? *other : scopes.front() != t.scope ? scopes.front() : "drill:other-tenant";
          copy.links = {};
          f.ids = {copy.id};
          added.push_back(std::move(copy));
          break;
        }
        case fault_kind::mixed_embedding_version:
          t.embedding_version = (t.embedding_version.empty() ? std::string("unversioned") : t.embedding_version) +
                                "-drill-other-model";
          f.ids = {t.id};
          break;
        case fault_kind::zero_padded_vector: {
          const std::size_t head = std::max<std::size_t>(2, d / 4);
          auto v = dd::random_unit(std::min(head, d), g);
          v.resize(d, 0.0f);
          t.embedding = std::move(v);
          f.ids = {t.id};
          break;
        }
        case fault_kind::stale_record: {
          // Aged under its own kind's curve: changing the kind (say to episodic) would also make
          // the conflict judge's state-vs-event rule pair it with its untouched neighbours.
          const auto weight_at = [&](std::int64_t days_back) {
            return evaluate(check.decay.curve_for(t.kind), std::chrono::milliseconds{days_back * day_ms});
          };
          std::int64_t back = 200;
          while (back < 40'000 && !(weight_at(back) < check.stale_threshold / 2)) back *= 2;
          if (!(weight_at(back) < check.stale_threshold / 2)) {  // a kind that never decays
            t.kind = std::string(kinds::episodic);
            back = 200;
          }
          t.created_at = t.updated_at = t.last_accessed_at = timestamp_from_epoch_ms(now_ms - back * day_ms);
          t.effective_weight.reset();
          f.ids = {t.id};
          break;
        }
        case fault_kind::junk_content:
          t.content = "lorem ipsum dolor sit amet " + std::to_string(serial++);
          f.ids = {t.id};
          break;
      }
      for (const auto& id : f.ids) touched.insert(id);
      ++kr.injected;
      res.faults.push_back(std::move(f));
    }
    res.per_kind.push_back(std::move(kr));
  }
  const std::size_t original = records.size();
  for (auto& m : added) records.push_back(std::move(m));

  // ------------------------------------------------------------ detect
  auto store = memory_store<memory_record>::from_records(std::move(records), d);
  const report injected = pipeline.run(store, when);
  res.findings_injected = dd::counts(injected);
  for (auto& f : res.faults) f.detected = dd::shows(injected, f, store);

  std::set<std::string> fp;
  for (const auto& [kind, id] : dd::named(injected))
    if (!touched.contains(id) && !baseline_named.contains({kind, id})) fp.insert(id);
  res.untouched = 0;
  for (std::size_t i = 0; i < original; ++i) res.untouched += !touched.contains(store.record(i).id);
  res.false_positive_records = fp.size();
  res.false_positive_rate = res.untouched ? static_cast<double>(fp.size()) / static_cast<double>(res.untouched) : 0.0;
  for (const auto& id : fp) {
    if (res.false_positive_ids.size() == 20) break;
    res.false_positive_ids.push_back(id);
  }

  // ------------------------------------------------------------ plan, apply, verify
  planner_options popt = opt.plan;
  popt.max_records_per_run = std::max(popt.max_records_per_run, store.size());
  popt.blast_radius_threshold = std::max(popt.blast_radius_threshold, store.size());
  if (!derived_key.empty() && !popt.metadata_defaults.contains(derived_key))
    popt.metadata_defaults[derived_key] = derived_default;
  const repair_plan plan = make_plan(store, injected, popt);
  res.actions_planned = plan.actions.size();

  std::vector<std::string> healthy_before;  // canonical images of healthy untouched records
  std::vector<std::size_t> healthy;
  for (std::size_t i = 0; i < original; ++i) {
    const auto& id = store.record(i).id;
    if (!touched.contains(id) && !in_baseline.contains(id)) {
      healthy.push_back(i);
      healthy_before.push_back(to_json(store.extract(i)));
    }
  }

  apply_options aopt = opt.apply;
  aopt.max_records = std::max(aopt.max_records, store.size());
  aopt.dry_run = false;
  aopt.limits.rate_limited = false;  // a drill measures repairs, not the rate limiter
  const bool temp_wal = opt.wal_path.empty();
  const std::filesystem::path wal_path =
      temp_wal ? std::filesystem::temp_directory_path() /
                     ("memhealth-drill-" + std::to_string(opt.seed) + "-" + std::to_string(now_ms) + "-" +
                      std::to_string(reinterpret_cast<std::uintptr_t>(&res)) + ".wal")
               : opt.wal_path;
  apply_result applied;
  {
    wal_writer wal(wal_path, wal_sync::none);
    applied = apply_plan(store, plan, wal, aopt);
  }
  if (temp_wal) {
    std::error_code ec;
    std::filesystem::remove(wal_path, ec);
  }
  res.actions_applied = applied.applied.size();
  std::set<std::string> edited;
  for (const auto& o : applied.outcomes)
    if (o.status == action_status::applied)
      for (const auto& e : plan.actions[o.action].edits) edited.insert(e.record_id);

  const report after = pipeline.run(store, when);
  res.findings_repaired = dd::counts(after);
  for (auto& f : res.faults) {
    if (!f.detected) continue;
    f.attempted = std::any_of(f.ids.begin(), f.ids.end(), [&](const std::string& id) { return edited.contains(id); });
    f.repaired = f.attempted && !dd::shows(after, f, store);
  }
  for (std::size_t k = 0; k < healthy.size(); ++k)
    res.healthy_records_changed += to_json(store.extract(healthy[k])) != healthy_before[k];

  // ------------------------------------------------------------ totals
  for (auto& kr : res.per_kind) {
    for (const auto& f : res.faults) {
      if (f.kind != kr.kind) continue;
      kr.detected += f.detected;
      kr.attempted += f.attempted;
      kr.repaired += f.repaired;
    }
    kr.coverage = kr.injected ? static_cast<double>(kr.detected) / static_cast<double>(kr.injected) : 0.0;
    res.injected += kr.injected;
    res.detected += kr.detected;
    res.attempted += kr.attempted;
    res.repaired += kr.repaired;
  }
  res.coverage = res.injected ? static_cast<double>(res.detected) / static_cast<double>(res.injected) : 0.0;
  res.repair_success = res.attempted ? static_cast<double>(res.repaired) / static_cast<double>(res.attempted) : 0.0;
  return res;
}

}  // namespace memhealth
