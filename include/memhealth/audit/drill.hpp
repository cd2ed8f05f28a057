#pragma once
/// @file drill.hpp
/// Fault drill: inject every kind of anomaly at a known rate into a copy of a store, run detect,
/// plan and apply, and measure what was found and fixed (SPEC section 4; the chaos-engineering
/// idea of fault injection applied to a memory store).
///
/// ## Procedure (`run_drill`)
/// 1. **Baseline.** Detect on the records as given (the original store). Records the baseline
///    flags (see "Flagged" below), and records not active or without an id, content, a scope or
///    a finite embedding of the store's dimension, are not *eligible* as targets. The embedder
///    of injected text is chosen here (see "Real text").
/// 2. **Inject.** The eligible records are shuffled with the seed; each fault kind takes the next
///    `max(1, round(rate x eligible))` of them as targets (targets never overlap), at most
///    `max(1, eligible / kinds)` so that at a high rate every kind gets its share (the kind's
///    `note` says when it was capped). Faults either
///    change the target or add new records next to it (table below). New ids start with
///    "drill-". mixed_embedding_version takes at most a quarter of the eligible records, and
///    fewer when renaming them would hand the majority to another version the store already
///    has (the kind's `note` says so).
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
/// | paraphrased_duplicate | a paraphrase pair (a, b) of real text: the target's content becomes a,
/// a copy of the target (same scope, kind, source, times, metadata) under a new id says b, both
/// embedded from their text | near_duplicate | | conflicting_claim | two new fact records in the
/// target's scope, same entity and attribute, different values, random vectors | conflict | |
/// free_text_conflict | a contradiction pair (a, b) of real text: the target says a, a copy of it
/// in its scope, unlinked and written a day before the clock, says b, both embedded from their
/// text | conflict | | dimension_error | target's vector cut to half its length |
/// embedding_dim_mismatch | | nan_vector | one coordinate of the target's vector
/// set to NaN | embedding_non_finite | | missing_metadata | a required key removed (the schema's
/// first required key; without a schema, a key every record has, which the drill then requires) |
/// metadata_schema_violation | | dangling_link | a related id that names no record |
/// dangling_reference | | scope_leak | copy of the target in another scope | cross_scope_duplicate
/// | | mixed_embedding_version | the target's embedding_version renamed | mixed_embedding_version |
/// | zero_padded_vector | vector replaced by a dense quarter-length unit vector padded with zeros |
/// embedding_zero_padded | | stale_record | all times moved back 200 days, doubled until the kind's
/// own decay curve is below half the stale threshold (kind set to episodic only for a kind that
/// never decays), weight cleared | stale | | junk_content | content replaced by "lorem ipsum dolor
/// sit amet N" | junk_content |
///
/// ## Real text
/// The two text faults draw their pairs from `drill_options::pairs` (drill_pairs.hpp; default:
/// the built-in judge-pair rows), each pool in its own seeded order (a second splitmix64 stream,
/// so the targets do not depend on the pairs), without repeats until a pool is used up. Their
/// vectors are computed the way the store's were when the drill can reproduce them: the
/// embedder is `drill_options::embed` when given, else a `lexical_embedder` when the store's
/// majority version is one's ("lexical-v1-d<d>-s<seed>", no synonyms); it reproduces the store
/// when, on the first 8 eligible records in store order, its vector of the record's content has
/// cosine >= 0.999 with the stored one. Otherwise (vectors of an unknown model) both the target
/// and the copy are embedded by `lexical_embedder(d, 0)`, and `text_embedder_note` says that
/// the duplicate and conflict checks then see lexical similarity, not the store model's.
///
/// ## Flagged
/// A record is *flagged* by a report when a finding other than `check_skipped` (which says a
/// check was not done, not that a record is faulty) names its id in `record_ids`, or, for
/// `mixed_embedding_version` (whose finding lists at most 20 ids), when it has an embedding whose
/// version differs from the finding's `majority_version`. Records are counted one by one (two
/// records with one id are both flagged when the id is named).
///
/// ## Metrics
/// Every rate comes with its 95% Wilson score interval (`wilson_interval`, drill_pairs.hpp).
/// - coverage = detected / injected, per kind and overall;
/// - *untouched* records: the original records neither targeted nor added;
/// - false-positive rate = untouched records flagged by the injected run, over all untouched
///   records, whatever flagged them and whether or not the original store was flagged there too;
/// - baseline flag rate = untouched records flagged by the baseline run on the original store,
///   over the same untouched records: what the detectors flag before any injection;
/// - false-positive rate net of the baseline = untouched records flagged by the injected run and
///   not by the baseline, over the untouched records (those the injection made the detectors
///   flag; at most the gross rate, and it differs from gross - baseline when the injection
///   clears a baseline flag);
/// - repair success = repaired / attempted;
/// - harm = healthy records (untouched and not flagged by the baseline) whose image changed in
///   apply.
///
/// Deterministic for a seed (and, with `drill_options::embed`, an embedder that is): the random
/// streams are splitmix64 (no standard-library distribution, whose output differs between
/// implementations).
///
/// ## Record types
/// Any record type with an image (`imaged_record`, repair/record_image.hpp: the apply step logs
/// through the write-ahead log) and an id and content. Each fault writes only the fields it needs
/// (table in drill_faults.hpp); a type that lacks one gets none of that fault, and the kind's
/// `note` names the field. Eligibility asks only for what the type has (a scope when it has
/// scopes, status "active" when it has a status, a finite vector when it has embeddings).
///
/// The steps above are the members of `detail::drill::session` (baseline, inject_all, detect,
/// plan_and_apply, verify, totals), each a function of the session's state.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "memhealth/audit/drill_faults.hpp"
#include "memhealth/audit/drill_pairs.hpp"
#include "memhealth/config.hpp"
#include "memhealth/detect/default_pipeline.hpp"
#include "memhealth/embed/lexical_embedder.hpp"
#include "memhealth/record/memory_record.hpp"
#include "memhealth/record/traits.hpp"
#include "memhealth/repair/executor.hpp"
#include "memhealth/repair/planner.hpp"
#include "memhealth/repair/record_image.hpp"
#include "memhealth/repair/wal.hpp"
#include "memhealth/store/memory_store.hpp"

namespace memhealth {

/// Settings of a drill.
struct drill_options {
  std::uint64_t seed = 1;  ///< random stream seed (same seed, same drill)
  /// Share of eligible records given each fault kind, in (0, 1]; each kind gets at least one.
  double rate = 0.02;
  std::vector<fault_kind> kinds{all_fault_kinds.begin(),
                                all_fault_kinds.end()};  ///< kinds injected
  /// Detection settings of all three runs. A drill without a schema derives one (see the table).
  default_check_settings check{};
  /// Detection clock (UTC); stale faults are placed 200 days before it.
  utc_time now =
      std::chrono::time_point_cast<std::chrono::milliseconds>(std::chrono::system_clock::now());
  planner_options plan{};  ///< planning (record limits are raised to the store size)
  /// Applying: tier 2 approved by default; set `approve_tier3` and `embed` to let re-embedding run.
  apply_options apply = [] {
    apply_options a;
    a.approve_tier2 = true;
    return a;
  }();
  /// Write-ahead log of the drill's apply; empty = a temporary file, removed afterwards.
  std::filesystem::path wal_path;
  /// Real text for paraphrased_duplicate and free_text_conflict (see "Real text"); null = the
  /// built-in pairs (`builtin_drill_pairs`). A pool without pairs injects none of its kind.
  std::shared_ptr<const drill_pairs> pairs;
  /// Embedder of injected text: text -> a vector of the store's dimension (any other size, or an
  /// exception, is the caller's error and propagates). Used only when it reproduces the store's
  /// vectors (see "Real text"); unset = a lexical embedder the store's version names.
  std::function<std::vector<float>(std::string_view)> embed;
  std::string embed_version{};  ///< `embed`'s version, for the report
};

/// One injected fault and what became of it.
struct drill_fault {
  fault_kind kind = fault_kind::exact_duplicate;  ///< the kind
  std::string target;                             ///< id of the eligible record it was placed on
  std::vector<std::string> ids;  ///< records that carry the fault (target and/or new ids)
  std::string pair_id;           ///< the text pair's id (the two text faults), else empty
  bool detected = false;         ///< a finding of the expected kind named it
  bool attempted = false;        ///< an applied action edited one of `ids`
  bool repaired = false;         ///< attempted and no longer detected
};

/// Counts for one fault kind.
struct drill_kind_result {
  fault_kind kind = fault_kind::exact_duplicate;  ///< the kind
  std::size_t injected = 0;                       ///< faults placed
  std::size_t detected = 0;                       ///< of those, detected
  std::size_t attempted = 0;                      ///< of those, edited by an applied action
  std::size_t repaired = 0;                       ///< of those, gone after apply
  double coverage = 0;              ///< detected / injected (0 when nothing was injected)
  proportion_interval coverage_ci;  ///< 95% Wilson interval of coverage ([0, 1] when none)
  std::string note;                 ///< why fewer were injected than asked, or empty
};

/// Result of a drill.
struct drill_result {
  std::vector<drill_kind_result> per_kind;  ///< one entry per requested kind, in request order
  std::vector<drill_fault> faults;          ///< every fault, in injection order
  std::size_t records = 0;                  ///< records given
  std::size_t eligible = 0;                 ///< of those, eligible as targets
  std::size_t injected = 0, detected = 0;   ///< totals over kinds
  double coverage = 0;                      ///< detected / injected
  proportion_interval coverage_ci;          ///< its 95% Wilson interval
  std::size_t untouched = 0;                ///< original records neither targeted nor added
  /// Untouched records flagged by the injected run (see "Flagged"), baseline flags included.
  std::size_t false_positive_records = 0;
  double false_positive_rate = 0;            ///< false_positive_records / untouched (0 when none)
  proportion_interval false_positive_ci;     ///< its 95% Wilson interval
  std::size_t baseline_flagged_records = 0;  ///< untouched records flagged on the original store
  double baseline_flag_rate = 0;             ///< baseline_flagged_records / untouched
  proportion_interval baseline_flag_ci;      ///< its 95% Wilson interval
  /// Untouched records flagged by the injected run and not by the baseline.
  std::size_t false_positive_records_net = 0;
  double false_positive_rate_net = 0;           ///< false_positive_records_net / untouched
  proportion_interval false_positive_net_ci;    ///< its 95% Wilson interval
  std::vector<std::string> false_positive_ids;  ///< the first 20 net ones' ids, for diagnosis
  std::string pairs_source;                     ///< where the injected text pairs came from
  std::string text_embedder;  ///< version of the embedder of injected text ("" = none used)
  std::size_t text_embedder_checked = 0;  ///< records its reproduction was checked on
  /// Empty when the text embedder reproduces the store's vectors; else the limitation.
  std::string text_embedder_note;
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

// Which records of `store` report r flags (see "Flagged" in the file comment), by index.
template <class R>
std::vector<char> flagged(const report& r, const memory_store<R>& store) {
  const std::size_t n = store.size();
  std::vector<char> out(n, 0);
  std::map<std::string, std::vector<std::size_t>, std::less<>> by_id;
  for (std::size_t i = 0; i < n; ++i) by_id[std::string(field::id(store.record(i)))].push_back(i);
  for (const auto& f : r.findings) {
    if (f.kind == finding_kinds::check_skipped) continue;
    for (const auto& id : f.record_ids)
      if (const auto it = by_id.find(id); it != by_id.end())
        for (std::size_t i : it->second) out[i] = 1;
    if constexpr (versioned_embedding_record<R> && embedded_record<R>) {
      if (f.kind != finding_kinds::mixed_embedding_version) continue;
      const auto* major = f.evidence_of("majority_version");
      const auto* text = major ? std::get_if<std::string>(major) : nullptr;
      if (!text) continue;
      for (std::size_t i = 0; i < n; ++i)
        if (!store.embedding(i).empty() && field::embedding_version(store.record(i)) != *text)
          out[i] = 1;
    }
  }
  return out;
}

// "lexical-v1-d<d>-s<seed>" exactly (no synonym table): the seed; else nullopt.
inline std::optional<std::uint64_t> lexical_seed_of(std::string_view version, std::size_t d) {
  const std::string head = "lexical-v1-d" + std::to_string(d) + "-s";
  if (!version.starts_with(head) || version.size() == head.size() ||
      version.size() > head.size() + 20)
    return std::nullopt;
  std::uint64_t seed = 0;
  for (char ch : version.substr(head.size())) {
    if (ch < '0' || ch > '9') return std::nullopt;
    seed = seed * 10 + static_cast<std::uint64_t>(ch - '0');
  }
  return seed;
}

inline double cosine_of(std::span<const float> x, std::span<const float> y) {
  if (x.size() != y.size() || x.empty()) return 0.0;
  double xy = 0, xx = 0, yy = 0;
  for (std::size_t k = 0; k < x.size(); ++k) {
    xy += static_cast<double>(x[k]) * y[k];
    xx += static_cast<double>(x[k]) * x[k];
    yy += static_cast<double>(y[k]) * y[k];
  }
  return xx > 0 && yy > 0 ? xy / std::sqrt(xx * yy) : 0.0;
}

inline std::map<std::string, std::size_t> counts(const report& r) {
  std::map<std::string, std::size_t> m;
  for (const auto& f : r.findings) ++m[f.kind];
  return m;
}

// Whether report r shows fault f (see the file comment).
template <class R>
bool shows(const report& r, const drill_fault& f, const memory_store<R>& store) {
  const std::string_view want = expected_finding(f.kind);
  for (const auto& fd : r.findings) {
    if (fd.kind != want) continue;
    auto names = [&](const std::string& id) {
      return std::find(fd.record_ids.begin(), fd.record_ids.end(), id) != fd.record_ids.end();
    };
    if (f.kind == fault_kind::conflicting_claim || f.kind == fault_kind::free_text_conflict) {
      if (names(f.ids[0]) && names(f.ids[1])) return true;
      continue;
    }
    for (const auto& id : f.ids) {
      if (names(id)) return true;
      if constexpr (versioned_embedding_record<R>) {
        if (f.kind == fault_kind::mixed_embedding_version) {
          const auto* major = fd.evidence_of("majority_version");
          const auto i = store.find(id);
          const auto* text = major ? std::get_if<std::string>(major) : nullptr;
          if (text && i && field::embedding_version(store.record(*i)) != *text) return true;
        }
      }
    }
  }
  return false;
}

template <class V>
std::string text_of(const V& v) {
  if constexpr (std::is_same_v<V, metadata_value>) {
    if (const auto* s = std::get_if<std::string>(&v)) return *s;
  }
  return {};
}

/// One drill: its inputs, the state each step leaves for the next, and the result it fills.
template <class R>
struct session {
  static constexpr std::int64_t day_ms = 86'400'000;

  std::vector<R> records;  // the drill's own copy, injected in place
  const drill_options& opt;
  drill_result res{};
  default_check_settings check;
  detect_options when{};
  std::optional<decltype(make_default_pipeline(std::declval<const default_check_settings&>()))>
      pipeline;
  std::int64_t now_ms = 0;

  // baseline
  std::string derived_key;            // the required key the drill chose (no schema given)
  metadata_value derived_default;     // its most common value, the repair default
  std::string required_key;           // the key missing_metadata removes
  std::size_t d = 0;                  // the store's dimension
  std::vector<char> base_flags;       // by index of the original records: flagged by the baseline
  std::set<std::string> in_baseline;  // their ids
  std::vector<std::size_t> eligible;  // shuffled
  std::vector<std::string> scopes;    // sorted, distinct
  // most mixed_embedding_version targets that leave the majority version the majority (the
  // targets are of it: every record of another version is flagged)
  std::size_t version_cap = 0;
  std::size_t version_lead = 0;  // majority count - runner-up count
  rng g;
  // real text: the pairs, their own random stream, each pool's order and cursor, the embedder
  const drill_pairs* pairs = nullptr;
  rng pg;
  std::vector<std::size_t> order_par, order_con;
  std::size_t next_par = 0, next_con = 0;
  std::function<std::vector<float>(std::string_view)> embed_text;

  // inject
  std::set<std::string> touched;  // targets and new records
  std::size_t original = 0;       // records before the added ones
  std::size_t serial = 0;

  // detect, plan, apply
  std::optional<memory_store<R>> store;
  report injected;
  std::set<std::string> edited;  // ids an applied action edited

  session(std::vector<R> recs, const drill_options& o)
      : records(std::move(recs)),
        opt(o),
        check(o.check),
        g{o.seed},
        pairs(o.pairs ? o.pairs.get() : &builtin_drill_pairs()),
        pg{o.seed ^ 0x7061697273ull} {  // "pairs"
    res.pairs_source = pairs->source;
    when.now = opt.now;
    now_ms = opt.now.time_since_epoch().count();
    res.records = records.size();
  }

  // ------------------------------------------------------------ 1. baseline

  /// Without a schema: a metadata key present in every record becomes required, and its most
  /// common text value the repair default.
  void derive_schema() {
    if constexpr (metadata_record<R>) {
      if (!check.schema.required.empty() || records.empty()) return;
      std::map<std::string, std::size_t> have;
      for (const auto& r : records)
        for (const auto& [k, v] : field::metadata(r)) ++have[std::string(k)];
      for (const auto& [k, c] : have)
        if (c == records.size()) {
          derived_key = k;
          break;
        }
      if (derived_key.empty()) return;
      check.schema.required[derived_key] = metadata_types::any;
      std::map<std::string, std::size_t> values;
      for (const auto& r : records)
        for (const auto& [k, v] : field::metadata(r))
          if (k == derived_key) ++values[text_of(v)];
      std::string best;
      std::size_t best_n = 0;
      for (const auto& [v, c] : values)
        if (c > best_n) best = v, best_n = c;
      derived_default = best;
      res.schema_note = "required metadata key '" + derived_key + "' (present in every record)";
    }
  }

  /// Detects on the records as given and picks the eligible targets, shuffled with the seed.
  void baseline() {
    derive_schema();
    pipeline.emplace(make_default_pipeline(check));
    required_key =
        check.schema.required.empty() ? std::string() : check.schema.required.begin()->first;
    auto base_store = memory_store<R>::from_records(records);
    d = base_store.dimension();
    const report base = pipeline->run(base_store, when);
    res.findings_baseline = counts(base);
    base_flags = flagged(base, base_store);
    for (std::size_t i = 0; i < records.size(); ++i)
      if (base_flags[i]) in_baseline.emplace(field::id(records[i]));

    for (std::size_t i = 0; i < records.size(); ++i) {
      const auto& r = records[i];
      const std::string id(field::id(r));
      bool ok = !id.empty() && !field::content(r).empty() && !base_flags[i] &&
                !in_baseline.contains(id) && base_store.find(id) == i;
      if constexpr (scoped_record<R>) ok = ok && !field::scope(r).empty();
      if constexpr (status_record<R>) ok = ok && field::status(r) == "active";
      if constexpr (embedded_record<R>) {
        const auto e = base_store.embedding(i);
        ok = ok && d > 0 && e.size() == d &&
             std::all_of(e.begin(), e.end(), [](float x) { return std::isfinite(x); });
      }
      if (ok) eligible.push_back(i);
    }
    res.eligible = eligible.size();
    for (std::size_t k = eligible.size(); k > 1; --k)
      std::swap(eligible[k - 1], eligible[g.below(k)]);

    if constexpr (scoped_record<R>) {
      for (const auto& r : records) scopes.emplace_back(field::scope(r));
      std::sort(scopes.begin(), scopes.end());
      scopes.erase(std::unique(scopes.begin(), scopes.end()), scopes.end());
    }
    if constexpr (versioned_embedding_record<R> && embedded_record<R>) {
      std::map<std::string, std::size_t> versions;  // as the structural check counts them
      for (std::size_t i = 0; i < records.size(); ++i)
        if (!base_store.embedding(i).empty())
          ++versions[std::string(field::embedding_version(records[i]))];
      std::size_t first = 0, second = 0;
      for (const auto& [v, c] : versions) {
        if (c > first)
          second = first, first = c;
        else if (c > second)
          second = c;
      }
      // t targets leave first - t records of the majority against the runner-up and the t
      // renamed ones: both must stay strictly fewer (a tie goes to the smaller version text)
      version_lead = first - second;
      version_cap = first > second ? std::min(first - second - 1, (first - 1) / 2) : 0;
    }
    choose_text_embedder(base_store);
  }

  /// Picks the embedder of injected text (see "Real text" in the file comment): the caller's or
  /// the lexical one the store's majority version names when it reproduces the first 8 eligible
  /// records' vectors, else lexical_embedder(d, 0) with a note saying so.
  void choose_text_embedder(const memory_store<R>& base_store) {
    if constexpr (embedded_record<R>) {
      const bool wanted_text = std::any_of(opt.kinds.begin(), opt.kinds.end(), [](fault_kind k) {
        return k == fault_kind::paraphrased_duplicate || k == fault_kind::free_text_conflict;
      });
      if (!wanted_text || d == 0 || eligible.empty()) return;
      std::vector<std::size_t> sample(eligible);
      std::sort(sample.begin(), sample.end());
      sample.resize(std::min<std::size_t>(sample.size(), 8));
      std::string store_version;
      if constexpr (versioned_embedding_record<R>) {
        std::map<std::string, std::size_t> versions;
        for (std::size_t i : eligible)
          ++versions[std::string(field::embedding_version(records[i]))];
        std::size_t best = 0;
        for (const auto& [v, c] : versions)
          if (c > best) store_version = v, best = c;
      }
      std::function<std::vector<float>(std::string_view)> candidate;
      std::string candidate_version;
      if (opt.embed) {
        candidate = opt.embed;
        candidate_version = opt.embed_version.empty() ? "the given embedder" : opt.embed_version;
      } else if (const auto seed = lexical_seed_of(store_version, d)) {
        auto e = std::make_shared<const lexical_embedder>(d, *seed);
        candidate = [e](std::string_view text) {
          std::vector<float> v(e->dimension());
          e->embed(text, v);
          return v;
        };
        candidate_version = std::string(e->version());
      }
      std::size_t reproduced = 0;
      if (candidate)
        for (std::size_t i : sample) {
          const auto v = candidate(field::content(records[i]));
          reproduced += v.size() == d && cosine_of(v, base_store.embedding(i)) >= 0.999;
        }
      res.text_embedder_checked = sample.size();
      if (candidate && reproduced == sample.size()) {
        embed_text = std::move(candidate);
        res.text_embedder = candidate_version;
        return;
      }
      auto lex = std::make_shared<const lexical_embedder>(d, 0);
      embed_text = [lex](std::string_view text) {
        std::vector<float> v(lex->dimension());
        lex->embed(text, v);
        return v;
      };
      res.text_embedder = std::string(lex->version());
      res.text_embedder_note =
          (candidate ? candidate_version + " reproduced " + std::to_string(reproduced) + " of " +
                           std::to_string(sample.size()) + " checked records' vectors"
                     : "no embedder that reproduces the store's vectors" +
                           (store_version.empty() ? std::string()
                                                  : " (version '" + store_version + "')")) +
          ": the targets and copies of paraphrased_duplicate and free_text_conflict are embedded "
          "by " +
          res.text_embedder +
          " instead, so their similarity is lexical, not the store model's (pass the store's "
          "embedder to measure those two kinds as the store would see them)";
    }
  }

  /// The next pair of a pool, in the pool's own seeded order (reshuffled when used up).
  const drill_text_pair& draw(const std::vector<drill_text_pair>& pool,
                              std::vector<std::size_t>& order, std::size_t& next) {
    if (order.empty() || next == order.size()) {
      order.resize(pool.size());
      for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
      for (std::size_t k = order.size(); k > 1; --k) std::swap(order[k - 1], order[pg.below(k)]);
      next = 0;
    }
    return pool[order[next++]];
  }

  // ------------------------------------------------------------ 2. inject

  /// How many targets kind k gets, and why fewer than asked (empty note = as asked).
  std::size_t wanted(fault_kind kind, std::size_t per_kind, std::string& note) const {
    if (const auto lacks = missing_fields<R>(kind); !lacks.empty()) {
      note = "the record type has no writable " + lacks + ": none injected";
      return 0;
    }
    if (kind == fault_kind::paraphrased_duplicate && pairs->paraphrases.empty()) {
      note = "no paraphrase pairs in " + pairs->source;
      return 0;
    }
    if (kind == fault_kind::free_text_conflict && pairs->contradictions.empty()) {
      note = "no contradiction pairs in " + pairs->source;
      return 0;
    }
    if (kind == fault_kind::missing_metadata && required_key.empty()) {
      note =
          "no metadata key is present in every record and no schema was given: nothing to remove";
      return 0;
    }
    if (kind == fault_kind::mixed_embedding_version) {
      // stay a minority, or the injected version becomes the majority
      const std::size_t cap = eligible.size() / 4;
      if (per_kind > cap && cap <= version_cap) {
        note =
            "capped at a quarter of the eligible records so the injected version stays a minority";
        return cap;
      }
      // nor may the renamed targets hand the majority to another version of the store: every
      // record of the old majority would then be flagged
      if (per_kind > version_cap) {
        note = "capped at " + std::to_string(version_cap) +
               " so that the store's majority version stays the majority (it leads the next "
               "version by " +
               std::to_string(version_lead) + (version_lead == 1 ? " record)" : " records)");
        return version_cap;
      }
    }
    return per_kind;
  }

  /// Places every requested kind on its share of the eligible records; added records go last.
  void inject_all() {
    const std::size_t asked = std::max<std::size_t>(
        1, static_cast<std::size_t>(std::llround(opt.rate * static_cast<double>(eligible.size()))));
    // at a rate above 1 / kinds the kinds would take each other's targets in order (the first
    // ones all of them): every requested kind gets an equal share of the eligible records
    const std::size_t share = std::max<std::size_t>(1, eligible.size() / opt.kinds.size());
    const std::size_t per_kind = std::min(asked, share);
    std::size_t next = 0;
    std::vector<R> added;
    auto new_id = [this](fault_kind k) {
      return "drill-" + std::string(to_string(k)) + "-" + std::to_string(serial++);
    };
    auto weight_at = [this](const R& t, std::int64_t days_back) {
      std::string_view kind;
      if constexpr (kinded_record<R>) kind = field::kind(t);
      return evaluate(check.decay.curve_for(kind), std::chrono::milliseconds{days_back * day_ms});
    };
    inject_context<decltype(new_id), decltype(weight_at)> ctx{
        g, d, scopes, now_ms, required_key, serial, new_id, weight_at, check.stale_threshold};
    ctx.embed = embed_text;
    for (fault_kind kind : opt.kinds) {
      drill_kind_result kr;
      kr.kind = kind;
      const std::size_t want = wanted(kind, per_kind, kr.note);
      if (kr.note.empty() && per_kind < asked)
        kr.note = "capped at " + std::to_string(per_kind) + " of the " + std::to_string(asked) +
                  " the rate asks: " + std::to_string(eligible.size()) +
                  " eligible records shared by " + std::to_string(opt.kinds.size()) + " kinds";
      for (std::size_t c = 0; c < want; ++c) {
        if (next == eligible.size()) {
          kr.note = "ran out of eligible records";
          break;
        }
        R& t = records[eligible[next++]];
        drill_fault f;
        f.kind = kind;
        f.target = std::string(field::id(t));
        touched.insert(f.target);
        ctx.pair = nullptr;
        if (kind == fault_kind::paraphrased_duplicate)
          ctx.pair = &draw(pairs->paraphrases, order_par, next_par);
        else if (kind == fault_kind::free_text_conflict)
          ctx.pair = &draw(pairs->contradictions, order_con, next_con);
        if (ctx.pair) f.pair_id = ctx.pair->id;
        f.ids = inject(kind, t, ctx, added);
        for (const auto& id : f.ids) touched.insert(id);
        ++kr.injected;
        res.faults.push_back(std::move(f));
      }
      res.per_kind.push_back(std::move(kr));
    }
    original = records.size();
    for (auto& m : added) records.push_back(std::move(m));
  }

  // ------------------------------------------------------------ 3. detect

  /// Detects on the injected store: which faults show, and the false positives (gross, the
  /// baseline's and net; see "Metrics" in the file comment).
  void detect() {
    store.emplace(memory_store<R>::from_records(std::move(records), d));
    injected = pipeline->run(*store, when);
    res.findings_injected = counts(injected);
    for (auto& f : res.faults) f.detected = shows(injected, f, *store);

    const auto now_flags = flagged(injected, *store);
    res.untouched = 0;
    for (std::size_t i = 0; i < original; ++i) {  // the original records keep their indices
      const std::string id(field::id(store->record(i)));
      if (touched.contains(id)) continue;
      ++res.untouched;
      res.baseline_flagged_records += base_flags[i] != 0;
      if (!now_flags[i]) continue;
      ++res.false_positive_records;
      if (base_flags[i]) continue;
      ++res.false_positive_records_net;
      if (res.false_positive_ids.size() < 20) res.false_positive_ids.push_back(id);
    }
    auto rate = [this](std::size_t k) {
      return res.untouched ? static_cast<double>(k) / static_cast<double>(res.untouched) : 0.0;
    };
    res.false_positive_rate = rate(res.false_positive_records);
    res.false_positive_ci = wilson_interval(res.false_positive_records, res.untouched);
    res.baseline_flag_rate = rate(res.baseline_flagged_records);
    res.baseline_flag_ci = wilson_interval(res.baseline_flagged_records, res.untouched);
    res.false_positive_rate_net = rate(res.false_positive_records_net);
    res.false_positive_net_ci = wilson_interval(res.false_positive_records_net, res.untouched);
  }

  // ------------------------------------------------------------ 4. plan and apply

  /// Plans with the record limits raised to the store size and applies through a log (the
  /// caller's, or a temporary file removed afterwards). Returns the healthy records' images
  /// before apply, by index, for the harm count.
  std::vector<std::pair<std::size_t, std::string>> plan_and_apply() {
    auto& s = *store;
    planner_options popt = opt.plan;
    popt.max_records_per_run = std::max(popt.max_records_per_run, s.size());
    popt.blast_radius_threshold = std::max(popt.blast_radius_threshold, s.size());
    if (!derived_key.empty() && !popt.metadata_defaults.contains(derived_key))
      popt.metadata_defaults[derived_key] = derived_default;
    const repair_plan plan = make_plan(s, injected, popt);
    res.actions_planned = plan.actions.size();

    std::vector<std::pair<std::size_t, std::string>>
        healthy;  // (index, image) of healthy untouched records
    for (std::size_t i = 0; i < original; ++i) {
      const std::string id(field::id(s.record(i)));
      if (!touched.contains(id) && !in_baseline.contains(id))
        healthy.emplace_back(i, encode_image(s.extract(i)));
    }

    apply_options aopt = opt.apply;
    aopt.max_records = std::max(aopt.max_records, s.size());
    aopt.dry_run = false;
    aopt.limits.rate_limited = false;  // a drill measures repairs, not the rate limiter
    const bool temp_wal = opt.wal_path.empty();
    const std::filesystem::path wal_path =
        temp_wal
            ? std::filesystem::temp_directory_path() /
                  ("memhealth-drill-" + std::to_string(opt.seed) + "-" + std::to_string(now_ms) +
                   "-" + std::to_string(reinterpret_cast<std::uintptr_t>(&res)) + ".wal")
            : opt.wal_path;
    apply_result applied;
    {
      wal_writer wal(wal_path, wal_sync::none);
      applied = apply_plan(s, plan, wal, aopt);
    }
    if (temp_wal) {
      std::error_code ec;
      std::filesystem::remove(wal_path, ec);
    }
    res.actions_applied = applied.applied.size();
    for (const auto& o : applied.outcomes)
      if (o.status == action_status::applied)
        for (const auto& e : plan.actions[o.action].edits) edited.insert(e.record_id);
    return healthy;
  }

  // ------------------------------------------------------------ 5. verify

  /// Detects again: which detected faults were attempted and repaired, and the harm.
  void verify(const std::vector<std::pair<std::size_t, std::string>>& healthy) {
    const report after = pipeline->run(*store, when);
    res.findings_repaired = counts(after);
    for (auto& f : res.faults) {
      if (!f.detected) continue;
      f.attempted = std::any_of(f.ids.begin(), f.ids.end(),
                                [&](const std::string& id) { return edited.contains(id); });
      f.repaired = f.attempted && !shows(after, f, *store);
    }
    for (const auto& [i, image] : healthy)
      res.healthy_records_changed += encode_image(store->extract(i)) != image;
  }

  // ------------------------------------------------------------ 6. totals

  void totals() {
    for (auto& kr : res.per_kind) {
      for (const auto& f : res.faults) {
        if (f.kind != kr.kind) continue;
        kr.detected += f.detected;
        kr.attempted += f.attempted;
        kr.repaired += f.repaired;
      }
      kr.coverage =
          kr.injected ? static_cast<double>(kr.detected) / static_cast<double>(kr.injected) : 0.0;
      kr.coverage_ci = wilson_interval(kr.detected, kr.injected);
      res.injected += kr.injected;
      res.detected += kr.detected;
      res.attempted += kr.attempted;
      res.repaired += kr.repaired;
    }
    res.coverage =
        res.injected ? static_cast<double>(res.detected) / static_cast<double>(res.injected) : 0.0;
    res.coverage_ci = wilson_interval(res.detected, res.injected);
    res.repair_success =
        res.attempted ? static_cast<double>(res.repaired) / static_cast<double>(res.attempted)
                      : 0.0;
  }
};

}  // namespace detail::drill

/// Runs a fault drill on a copy of `records` (see the file comment).
/// @tparam Record any record type with an image and an id and content (see "Record types").
/// @param records the store's records (taken by value: the drill works on its own copy).
/// @return the measurements; `per_kind` follows `opt.kinds`.
/// @throws memhealth::error(invalid_argument) for a rate outside (0, 1] or an empty kind list;
///         memhealth::error(io) when the log cannot be written. A store too small for a kind, or
///         a record type without a field a kind writes, is not an error: fewer faults are
///         injected and the kind's `note` says why.
template <class Record = memory_record>
drill_result run_drill(std::vector<Record> records, const drill_options& opt) {
  MEMHEALTH_REQUIRE_CAPABILITY(basic_record, Record, "run_drill", "id, content");
  MEMHEALTH_REQUIRE_IMAGE(Record, "run_drill");
  if (!(opt.rate > 0.0 && opt.rate <= 1.0))
    throw error(error_code::invalid_argument, "drill: rate must be in (0, 1]");
  if (opt.kinds.empty())
    throw error(error_code::invalid_argument, "drill: no fault kinds requested");
  detail::drill::session<Record> s(std::move(records), opt);
  s.baseline();
  s.inject_all();
  s.detect();
  s.verify(s.plan_and_apply());
  s.totals();
  return std::move(s.res);
}

}  // namespace memhealth
