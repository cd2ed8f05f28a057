#pragma once
/// @file report.hpp
/// The audit report of a repair run (SPEC section 4): what was found, what was done about each
/// kind of problem, how the store's key metrics moved, what waits for a person, where the
/// problems come from (root-cause hints) and how to prevent them. Rendered as Markdown (people),
/// JSON (machines) or one self-contained HTML file with inline SVG charts (no scripts from
/// anywhere else, no network).
///
/// ## Metrics (before and after)
/// - findings by kind;
/// - duplicate share: records that are redundant copies (members of exact or near duplicate
///   clusters other than the primary) over all records;
/// - conflicts open: `conflict` findings;
/// - stale share: records named by `stale` findings over all records.
///
/// ## Root-cause hints
/// For each finding kind of the "before" report, the records it names are compared with the whole
/// store along a few attributes: the values of `audit_options::batch_keys` metadata keys (ingest
/// batch), `source`, `embedding_version` and the UTC day of `created_at`. A value is a hint when it
/// holds at least `min_records` of the flagged records, at least `min_share` of them, and is at
/// least `min_lift` times more common among flagged records than in the store (lift = share among
/// flagged / share among all). This is the "diagnosis by concentration" of incident analysis:
/// a bulk import that dropped a field shows up as one ingest batch holding most of the
/// violations.
///
/// ## Similarity distribution (HTML)
/// The cosine of each active record's nearest active neighbour in its own scope (unit-normalised
/// embeddings of the store's dimension; at most `similarity_sample` records per scope, the first
/// ones in store order), as a histogram with the near-duplicate threshold marked.

#include <Eigen/Core>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "memhealth/detect/finding.hpp"
#include "memhealth/detect/secrets.hpp"
#include "memhealth/io/printable.hpp"
#include "memhealth/record/memory_record.hpp"
#include "memhealth/record/time.hpp"
#include "memhealth/repair/action.hpp"
#include "memhealth/repair/executor.hpp"
#include "memhealth/store/run_history.hpp"
#include "memhealth/store/store.hpp"

namespace memhealth {

/// Settings of `make_audit_report`.
struct audit_options {
  std::string title = "memhealth repair run";  ///< heading of the report
  /// Metadata keys that name an ingest batch (root-cause attribute); missing keys are skipped.
  std::vector<std::string> batch_keys{"ingest_batch", "batch", "import_batch", "source_batch"};
  std::size_t min_records = 3;  ///< a hint needs at least this many flagged records with the value
  double min_share = 0.5;       ///< ... at least this share of the kind's flagged records
  double min_lift = 2.0;        ///< ... and this over-representation against the whole store
  float threshold = 0.92f;      ///< near-duplicate threshold drawn on the similarity chart
  std::size_t similarity_sample = 2000;  ///< records per scope in the similarity distribution
  /// Rules of the secret masking: a pending record's content is shown with every secret span
  /// masked (`mask_secrets`), in every format.
  secret_rules secrets{};
};

/// Key metrics of one detection run.
struct audit_metrics {
  std::map<std::string, std::size_t> findings_by_kind;  ///< kind -> findings
  std::size_t findings = 0;                             ///< all findings
  std::size_t records = 0;                              ///< records in the store
  double duplicate_share = 0;                           ///< redundant copies / records
  std::size_t conflicts_open = 0;                       ///< conflict findings
  double stale_share = 0;                               ///< stale records / records
};

/// What was done about one finding kind.
struct kind_strategy {
  std::string kind;                      ///< finding kind
  std::size_t before = 0, after = 0;     ///< findings before / after the run
  std::set<std::string> actions;         ///< action types planned for it
  std::set<int> tiers;                   ///< their tiers
  std::size_t planned = 0, applied = 0;  ///< actions planned / applied for it
};

/// One root-cause hint (see the file comment).
struct root_cause_hint {
  std::string kind;       ///< the finding kind
  std::string attribute;  ///< "metadata.<key>", "source", "embedding_version" or "created_day"
  std::string value;      ///< the over-represented value
  std::size_t flagged_with_value = 0;  ///< flagged records with the value
  std::size_t flagged = 0;             ///< flagged records of the kind
  std::size_t store_with_value = 0;    ///< records of the store with the value
  std::size_t store = 0;               ///< records of the store
  double share = 0;                    ///< flagged_with_value / flagged
  double lift = 0;                     ///< share / (store_with_value / store)
  std::string text;                    ///< one readable sentence
};

/// One entry of the pending-review list.
struct pending_item {
  std::string id;       ///< record id (or the first target of an action)
  std::string reason;   ///< "status pending_review" or "tier-3 action <type> awaits a person"
  std::string content;  ///< the record's text, when known, secrets masked (`mask_secrets`)
};

/// Retrieval figures of the events served before or after a repair run, pooled over the events
/// file (`summarize_retrievals` in monitor/retrieval_monitor.hpp; `memhealth apply` fills them
/// from `--events` or the plan's events, and `--events-after`).
struct audit_retrieval {
  std::string when;                    ///< "before" or "after"
  std::string events;                  ///< the events file
  std::size_t retrievals = 0;          ///< retrieval events
  double p95_latency_ms = 0;           ///< pooled P95 latency
  double duplicate_share = 0;          ///< near-duplicate results of top-k (share)
  std::size_t duplicate_results = 0;   ///< near-duplicate results of top-k (count)
  std::size_t topk_compared = 0;       ///< top-k results compared
  std::size_t ghost_results = 0;       ///< results serving an id without a live record
  std::size_t scope_leaks = 0;         ///< results outside the requested scopes
  std::size_t version_mismatches = 0;  ///< retrievals whose query model differs from a result's
};

/// "P95 latency 340.0 ms, duplicate share of top-k 0.355 (11 of 31), ghost results 3, scope
/// leaks 2, query-model mismatches 6, over 192 retrievals": the figures in one line (Markdown,
/// and the tool's messages).
inline std::string retrieval_text(const audit_retrieval& f) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "P95 latency %.1f ms, duplicate share of top-k %.3f (%zu of %zu), ghost results "
                "%zu, scope leaks %zu, query-model mismatches %zu, over %zu retrievals",
                f.p95_latency_ms, f.duplicate_share, f.duplicate_results, f.topk_compared,
                f.ghost_results, f.scope_leaks, f.version_mismatches, f.retrievals);
  return buf;
}

/// The audit report of one repair run.
struct audit_report {
  std::string title;                           ///< heading
  audit_metrics before, after;                 ///< key metrics
  std::vector<kind_strategy> strategies;       ///< per finding kind of before or after, by kind
  std::size_t actions = 0;                     ///< planned actions
  std::array<std::size_t, 3> by_automation{};  ///< planned actions that are auto, confirm, manual
  std::size_t applied = 0, already_applied = 0, unapproved = 0, deferred = 0,
              failed = 0;           ///< outcomes
  std::size_t records_changed = 0;  ///< record writes committed
  /// Of `deferred`: actions skipped because their records changed since the plan
  /// (`action_outcome::stale()`); written (JSON "stale", a Markdown note) only when not 0.
  std::size_t stale = 0;
  bool suspended = false;               ///< the plan's blast radius suspended it
  std::vector<pending_item> pending;    ///< what waits for a person
  std::vector<root_cause_hint> hints;   ///< root-cause hints, strongest first
  std::vector<std::string> prevention;  ///< prevention notes for the kinds found
  std::vector<float> nn_cosines;        ///< nearest-neighbour cosine per sampled record (after)
  float threshold = 0.92f;              ///< the threshold drawn on the chart
  /// The figures that span runs (repair success by recurrence, uptime) from the state
  /// database's findings history, when the caller has one (`sqlite_state::history_figures_of`;
  /// `memhealth apply --report` with a state database); nullopt: the section is left out.
  std::optional<run_history_figures> history;
  /// Retrieval figures before and after the repair (in that order), when the caller has events
  /// (`memhealth apply --events/--events-after`, or the events the plan was made from); empty:
  /// the section is left out.
  std::vector<audit_retrieval> retrieval;
};

/// The prevention note for a finding kind (empty when there is none).
inline std::string_view prevention_note(std::string_view kind) noexcept {
  struct entry {
    std::string_view kind, note;
  };
  static constexpr std::array<entry, 18> notes{{
      {"exact_duplicate",
       "Deduplicate at write time: hash the normalised text (scope + text) before inserting a "
       "memory."},
      {"near_duplicate",
       "Check new memories against their nearest neighbours in the scope before writing; update "
       "the existing record instead of adding a restatement."},
      {"conflict",
       "Give the extractor a conflict rule: when a new fact or preference contradicts an active "
       "one, supersede the old record in the same write."},
      {"stale",
       "Set per-kind decay at write time (temporary and episodic memories get short half-lives) so "
       "old records fade without a repair run."},
      {"metadata_schema_violation",
       "Validate metadata against the schema at ingest; reject or default missing fields in the "
       "import pipeline, not afterwards."},
      {"mixed_embedding_version",
       "Switch embedding models as one migration: re-embed everything, check the migration gate "
       "(memhealth gate), then switch queries."},
      {"embedding_dim_mismatch",
       "Assert the vector length against the index dimension before insert."},
      {"embedding_non_finite",
       "Reject NaN and infinite vectors at insert; they usually come from a failed model call."},
      {"embedding_zero_padded",
       "Never pad a smaller model's vectors to the index dimension; re-embed with the index's "
       "model."},
      {"cross_scope_duplicate",
       "Write memories with the caller's scope only and test tenant isolation; a copy in another "
       "scope is a leak."},
      {"dangling_reference",
       "Drop or rewrite links in the same transaction that archives or removes their target."},
      {"junk_content",
       "Filter prompt-template fragments and placeholders before extraction writes them as "
       "memories."},
      {"illegal_status", "Restrict status to the documented values in the write path."},
      {"secret_in_content",
       "Scan memories for credentials before writing them (the write gate or a gitleaks-style "
       "filter in the extractor); rotate every key found, it has been stored in plain text."},
      {"mojibake",
       "Decode every input as UTF-8 once, at the boundary; never re-encode text that is already "
       "decoded, and reject bytes that are not valid UTF-8."},
      {"oversized_content",
       "Cap memory length at ingest; store documents and transcripts elsewhere and keep a short "
       "memory that points to them."},
      {"content_time_mismatch",
       "Set created_at from the event's own time source, and resolve dates the extractor writes "
       "against that clock."},
      {"timestamp_inconsistent",
       "Write timestamps in UTC from one clock; reject updates older than creation."},
  }};
  for (const auto& e : notes)
    if (e.kind == kind) return e.note;
  return {};
}

namespace detail::audit {

template <record_store S>
audit_metrics metrics_of(const S& store, const report& r) {
  audit_metrics m;
  for (const auto& [k, n] : r.counts_by_kind()) m.findings_by_kind[k] = n;
  m.findings = r.findings.size();
  m.records = store.size();
  std::size_t redundant = 0;
  std::set<std::string> stale;
  for (const auto& f : r.findings) {
    if ((f.kind == finding_kinds::exact_duplicate || f.kind == finding_kinds::near_duplicate) &&
        !f.record_ids.empty())
      redundant += f.record_ids.size() - 1;
    if (f.kind == finding_kinds::conflict) ++m.conflicts_open;
    if (f.kind == finding_kinds::stale)
      for (const auto& id : f.record_ids) stale.insert(id);
  }
  if (m.records) {
    m.duplicate_share = static_cast<double>(redundant) / static_cast<double>(m.records);
    m.stale_share = static_cast<double>(stale.size()) / static_cast<double>(m.records);
  }
  return m;
}

template <class R>
std::vector<std::pair<std::string, std::string>> attributes_of(const R& r,
                                                               const audit_options& opt) {
  std::vector<std::pair<std::string, std::string>> out;
  if constexpr (std::is_same_v<R, memory_record>) {
    for (const auto& key : opt.batch_keys)
      if (auto it = r.metadata.find(key); it != r.metadata.end())
        if (const auto* s = std::get_if<std::string>(&it->second))
          out.emplace_back("metadata." + key, *s);
    if (!r.source.empty()) out.emplace_back("source", r.source);
    if (!r.embedding_version.empty()) out.emplace_back("embedding_version", r.embedding_version);
    if (r.created_at)
      out.emplace_back("created_day",
                       format_timestamp(timestamp{r.created_at->instant, 0}).substr(0, 10));
  }
  return out;
}

// Cosine of each sampled record's nearest neighbour in its scope.
template <record_store S>
std::vector<float> nearest_neighbour_cosines(const S& store, std::size_t per_scope) {
  const std::size_t d = store.dimension();
  std::vector<float> out;
  if (d == 0) return out;
  std::map<std::string, std::vector<std::size_t>> by_scope;
  for (std::size_t i = 0; i < store.size(); ++i) {
    const auto e = store.embedding(i);
    if (e.size() != d) continue;
    if constexpr (status_record<typename S::record_type>)
      if (field::status(store.record(i)) != "active") continue;
    std::string scope;
    if constexpr (scoped_record<typename S::record_type>)
      scope = std::string(field::scope(store.record(i)));
    auto& v = by_scope[scope];
    if (v.size() < per_scope) v.push_back(i);
  }
  using mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  for (const auto& [scope, members] : by_scope) {
    if (members.size() < 2) continue;
    mat x(static_cast<Eigen::Index>(members.size()), static_cast<Eigen::Index>(d));
    std::vector<std::uint8_t> ok(members.size(), 1);
    for (std::size_t r = 0; r < members.size(); ++r) {
      const auto e = store.embedding(members[r]);
      for (std::size_t c = 0; c < d; ++c)
        x(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(c)) = e[c];
      const float n = x.row(static_cast<Eigen::Index>(r)).norm();
      if (!(n > 0) || !std::isfinite(n)) {
        ok[r] = 0;
        x.row(static_cast<Eigen::Index>(r)).setZero();
      } else {
        x.row(static_cast<Eigen::Index>(r)) /= n;
      }
    }
    const mat s = x * x.transpose();
    for (std::size_t r = 0; r < members.size(); ++r) {
      if (!ok[r]) continue;
      float best = -2.0f;
      for (std::size_t c = 0; c < members.size(); ++c)
        if (c != r && ok[c])
          best = std::max(best, s(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(c)));
      if (best > -2.0f) out.push_back(std::min(best, 1.0f));
    }
  }
  return out;
}

inline std::string html_escape(std::string_view s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      case '\'':
        o += "&#39;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

inline std::string pct(double x) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(1);
  s << 100.0 * x << "%";
  return s.str();
}

}  // namespace detail::audit

/// A duration as people write it: "7d", "36h", "90m", "45s" (the largest unit that divides it;
/// milliseconds as "250ms").
inline std::string span_text(std::chrono::milliseconds d) {
  const auto n = d.count();
  if (n != 0 && n % 86'400'000 == 0) return std::to_string(n / 86'400'000) + "d";
  if (n != 0 && n % 3'600'000 == 0) return std::to_string(n / 3'600'000) + "h";
  if (n != 0 && n % 60'000 == 0) return std::to_string(n / 60'000) + "m";
  if (n % 1000 == 0) return std::to_string(n / 1000) + "s";
  return std::to_string(n) + "ms";
}

/// The figures that span runs in two sentences (Markdown and `memhealth history`): repair
/// success, then uptime. Faults still inside their window are named as such and never counted as
/// successes; a figure without data says so instead of a rate.
inline std::vector<std::string> history_sentences(const run_history_figures& h) {
  using detail::audit::pct;
  std::vector<std::string> out;
  const auto& rs = h.repair;
  std::string window;
  if (rs.window.span.count() > 0) window = span_text(rs.window.span);
  if (rs.window.runs > 0)
    window += (window.empty() ? "for " : " and ") + std::to_string(rs.window.runs) +
              (rs.window.runs == 1 ? " full check run" : " full check runs");
  if (window.empty()) window = "0s";
  std::string a = "Repair success (a repaired fault counts as held once it stayed away " + window +
                  "): " + std::to_string(rs.repaired) + " faults repaired, " +
                  std::to_string(rs.held) + " held, " + std::to_string(rs.recurred) +
                  " recurred, " + std::to_string(rs.too_early) + " too early to say; ";
  if (rs.success_rate)
    a += "success rate " + pct(*rs.success_rate) + " (" + std::to_string(rs.held) + " of " +
         std::to_string(rs.held + rs.recurred) +
         " with a verdict; faults still inside their window are not counted).";
  else
    a += "no success rate yet (no repaired fault has a verdict).";
  out.push_back(std::move(a));
  const auto& u = h.uptime;
  const auto window_len = std::chrono::duration_cast<std::chrono::milliseconds>(u.to - u.from);
  std::string b = "Uptime over the last " + span_text(window_len) + ": ";
  if (u.time_share) {
    std::ostringstream hours;
    hours.setf(std::ios::fixed);
    hours.precision(1);
    hours << static_cast<double>(u.clean.count()) / 3.6e6 << " h of "
          << static_cast<double>(u.measured.count()) / 3.6e6 << " h";
    b += pct(*u.time_share) + " of the time without an open error or critical finding (" +
         hours.str() + " measured since " + format_timestamp(timestamp{u.measured_from, 0}) + ")";
  } else {
    b += "no time measured yet (no check run before the last moment of the window)";
  }
  if (u.run_share)
    b += ", " + pct(*u.run_share) + " of full check runs (" + std::to_string(u.clean_runs) +
         " of " + std::to_string(u.runs) + ").";
  else
    b += ", no full check run in the window.";
  out.push_back(std::move(b));
  return out;
}

/// The figures that span runs as JSON: `store`, `window` (`ms`, `runs`), `repaired`, `held`,
/// `recurred`, `too_early`, `success_rate` (null without a verdict), `uptime` (`from`, `to`,
/// `measured_from` as RFC 3339; `measured_ms`, `clean_ms`, `time_share`, `runs`, `clean_runs`,
/// `run_share`; shares null when nothing was measured) and `faults` (newest first: `kind`,
/// `finding` (its key, fields joined by " | "), `action_key` (without the store's scope),
/// `repaired_at`, `recurred_at` (null when not seen again), `verdict`).
template <class = void>  // deferred instantiation, see memhealth.hpp
nlohmann::ordered_json history_json(const run_history_figures& h) {
  const auto when = [](utc_time t) { return format_timestamp(timestamp{t, 0}); };
  const auto share = [](const std::optional<double>& x) {
    return x ? nlohmann::ordered_json(*x) : nlohmann::ordered_json(nullptr);
  };
  nlohmann::ordered_json j;
  j["store"] = h.store;
  j["window"] = {{"ms", h.repair.window.span.count()}, {"runs", h.repair.window.runs}};
  j["repaired"] = h.repair.repaired;
  j["held"] = h.repair.held;
  j["recurred"] = h.repair.recurred;
  j["too_early"] = h.repair.too_early;
  j["success_rate"] = share(h.repair.success_rate);
  const auto& u = h.uptime;
  j["uptime"] = {{"from", when(u.from)},
                 {"to", when(u.to)},
                 {"measured_from", when(u.measured_from)},
                 {"measured_ms", u.measured.count()},
                 {"clean_ms", u.clean.count()},
                 {"time_share", share(u.time_share)},
                 {"runs", u.runs},
                 {"clean_runs", u.clean_runs},
                 {"run_share", share(u.run_share)}};
  j["faults"] = nlohmann::ordered_json::array();
  for (std::size_t k = 0; k < h.faults.size(); ++k) {
    const auto& f = h.faults[k];
    std::string key = f.finding_key;
    for (std::size_t p = key.find('\x1f'); p != std::string::npos; p = key.find('\x1f', p + 3))
      key.replace(p, 1, " | ");
    j["faults"].push_back(
        {{"kind", f.kind},
         {"finding", key},
         {"action_key", f.action_key.substr(f.action_key.rfind('\x1f') + 1)},
         {"repaired_at", when(f.repaired_at)},
         {"recurred_at", f.recurred_at ? nlohmann::ordered_json(when(*f.recurred_at))
                                       : nlohmann::ordered_json(nullptr)},
         {"verdict", std::string(to_string(k < h.verdicts.size() ? h.verdicts[k]
                                                                 : repair_verdict::too_early))}});
  }
  return j;
}

/// Builds the audit report of one run.
/// @param before_store the store the plan was made from (root causes are attributed on it).
/// @param after_store the store after apply (metrics after, pending list, similarity chart).
/// @param before / after detection on before_store / after_store with the same options.
/// @param plan the plan that ran; @param res what `apply_plan` returned for it.
/// @throws memhealth::error(invalid_argument) when `res.outcomes` does not match the plan.
/// @complexity O(findings + records x attributes) plus, for the chart, O(Σ m_s² d) over the
///             sampled scope sizes m_s <= similarity_sample.
template <record_store S1, record_store S2>
audit_report make_audit_report(const S1& before_store, const S2& after_store, const report& before,
                               const report& after, const repair_plan& plan,
                               const apply_result& res, const audit_options& opt = {}) {
  if (res.outcomes.size() != plan.actions.size())
    throw error(error_code::invalid_argument,
                "audit report: apply result does not belong to this plan");
  namespace da = detail::audit;
  audit_report rep;
  rep.title = opt.title;
  rep.threshold = opt.threshold;
  rep.before = da::metrics_of(before_store, before);
  rep.after = da::metrics_of(after_store, after);
  rep.actions = plan.actions.size();
  rep.suspended = plan.suspended;
  rep.applied = res.applied.size();
  rep.already_applied = res.skipped_already_applied.size();
  rep.unapproved = res.skipped_unapproved.size();
  rep.deferred = res.deferred.size();
  rep.failed = res.failed.size();
  rep.records_changed = res.records_changed;
  for (const auto& o : res.outcomes) rep.stale += o.stale() ? 1 : 0;

  // strategies: the kinds behind each action come from its reasons ("kind: ...")
  std::map<std::string, kind_strategy> by_kind;
  for (const auto& [k, n] : rep.before.findings_by_kind) by_kind[k].before = n;
  for (const auto& [k, n] : rep.after.findings_by_kind) by_kind[k].after = n;
  for (std::size_t a = 0; a < plan.actions.size(); ++a) {
    const auto& act = plan.actions[a];
    ++rep.by_automation[static_cast<std::size_t>(act.automation)];
    // Reasons read "kind: ids ...", except a re-embedding's, which read "<record id>: kind, kind"
    // (one per record of the batch); other notes name no kind.
    auto is_kind = [&](const std::string& k) {
      return rep.before.findings_by_kind.count(k) != 0 || rep.after.findings_by_kind.count(k) != 0;
    };
    std::set<std::string> kinds;
    for (const auto& reason : act.reasons) {
      const auto colon = reason.find(':');
      if (auto k = reason.substr(0, colon); is_kind(k)) {
        kinds.insert(std::move(k));
        continue;
      }
      if (act.type != action_types::reembed || colon == std::string::npos) continue;
      for (std::size_t pos = colon + 1; pos < reason.size();) {
        const auto comma = std::min(reason.find(',', pos), reason.size());
        const auto first = reason.find_first_not_of(' ', pos);
        if (first < comma)
          if (auto k = reason.substr(first, comma - first); is_kind(k)) kinds.insert(std::move(k));
        pos = comma + 1;
      }
    }
    for (const auto& k : kinds) {
      auto& st = by_kind[k];
      st.actions.insert(act.type);
      st.tiers.insert(act.tier);
      ++st.planned;
      st.applied += res.outcomes[a].status == action_status::applied;
    }
  }
  for (auto& [k, st] : by_kind) {
    st.kind = k;
    rep.strategies.push_back(st);
  }

  // pending review
  for (std::size_t i = 0; i < after_store.size(); ++i) {
    const auto& r = after_store.record(i);
    if constexpr (status_record<typename S2::record_type>) {
      if (field::status(r) == "pending_review")
        rep.pending.push_back({std::string(field::id(r)), "status pending_review",
                               mask_secrets(field::content(r), opt.secrets)});
    }
  }
  for (std::size_t a = 0; a < plan.actions.size(); ++a)
    if (plan.actions[a].tier == 3 && res.outcomes[a].status != action_status::applied &&
        res.outcomes[a].status != action_status::already_applied &&
        !plan.actions[a].targets.empty()) {
      std::string content;
      if (auto i = after_store.find(plan.actions[a].targets.front()))
        content = mask_secrets(field::content(after_store.record(*i)), opt.secrets);
      rep.pending.push_back({plan.actions[a].targets.front(),
                             "tier-3 action " + plan.actions[a].type + " awaits a person (" +
                                 std::to_string(plan.actions[a].targets.size()) + " records)",
                             std::move(content)});
    }

  // root-cause hints on the store the problems were found in
  const std::size_t n = before_store.size();
  std::map<std::pair<std::string, std::string>, std::size_t> in_store;
  std::vector<std::vector<std::pair<std::string, std::string>>> attrs(n);
  for (std::size_t i = 0; i < n; ++i) {
    attrs[i] = da::attributes_of(before_store.record(i), opt);
    for (const auto& av : attrs[i]) ++in_store[av];
  }
  std::map<std::string, std::set<std::size_t>> flagged;
  for (const auto& f : before.findings)
    for (const auto& id : f.record_ids)
      if (auto i = before_store.find(id)) flagged[f.kind].insert(*i);
  for (const auto& [kind, recs] : flagged) {
    std::map<std::pair<std::string, std::string>, std::size_t> counts;
    for (std::size_t i : recs)
      for (const auto& av : attrs[i]) ++counts[av];
    for (const auto& [av, c] : counts) {
      const double share = static_cast<double>(c) / static_cast<double>(recs.size());
      const double base = static_cast<double>(in_store[av]) / static_cast<double>(n);
      const double lift = base > 0 ? share / base : 0;
      if (c < opt.min_records || share < opt.min_share || lift < opt.min_lift) continue;
      root_cause_hint h{kind,         av.first, av.second, c,    recs.size(),
                        in_store[av], n,        share,     lift, {}};
      std::ostringstream t;
      t.setf(std::ios::fixed);
      t.precision(1);
      t << kind << ": " << c << " of " << recs.size() << " flagged records (" << da::pct(share)
        << ") have " << av.first << " = " << av.second << ", which holds " << da::pct(base)
        << " of the store (" << lift << "x over-represented)";
      h.text = t.str();
      rep.hints.push_back(std::move(h));
    }
  }
  std::stable_sort(rep.hints.begin(), rep.hints.end(), [](const auto& a, const auto& b) {
    return a.share * a.lift > b.share * b.lift;
  });
  for (const auto& [kind, count] : rep.before.findings_by_kind)
    if (auto note = prevention_note(kind); !note.empty())
      rep.prevention.push_back(kind + ": " + std::string(note));
  rep.nn_cosines = da::nearest_neighbour_cosines(after_store, opt.similarity_sample);
  return rep;
}

/// The report as JSON: `title`, `before`/`after` metrics, `strategies`, `automation`
/// (`auto`/`confirm`/`manual` planned counts), `outcomes`, `pending`, `root_causes`,
/// `prevention`, `similarity` (histogram of nearest-neighbour cosines in 20 bins over [0,1] and
/// the threshold), and `across_runs` / `retrieval` (the figures before and after: `when`,
/// `events`, `retrievals`, `p95_latency_ms`, `duplicate_share`, `duplicate_results`,
/// `topk_compared`, `ghost_results`, `scope_leaks`, `query_model_mismatches`) when the report
/// has them.
template <class = void>  // deferred instantiation, see memhealth.hpp
nlohmann::ordered_json to_json(const audit_report& r) {
  auto metrics = [](const audit_metrics& m) {
    nlohmann::ordered_json j;
    j["records"] = m.records;
    j["findings"] = m.findings;
    j["findings_by_kind"] = m.findings_by_kind;
    j["duplicate_share"] = m.duplicate_share;
    j["conflicts_open"] = m.conflicts_open;
    j["stale_share"] = m.stale_share;
    return j;
  };
  nlohmann::ordered_json j;
  j["schema_version"] = 1;
  j["title"] = r.title;
  j["before"] = metrics(r.before);
  j["after"] = metrics(r.after);
  j["strategies"] = nlohmann::ordered_json::array();
  for (const auto& s : r.strategies)
    j["strategies"].push_back({{"kind", s.kind},
                               {"before", s.before},
                               {"after", s.after},
                               {"actions", s.actions},
                               {"tiers", s.tiers},
                               {"planned", s.planned},
                               {"applied", s.applied}});
  j["automation"] = {{"auto", r.by_automation[0]},
                     {"confirm", r.by_automation[1]},
                     {"manual", r.by_automation[2]}};
  j["outcomes"] = {{"actions", r.actions},
                   {"applied", r.applied},
                   {"already_applied", r.already_applied},
                   {"unapproved", r.unapproved},
                   {"deferred", r.deferred},
                   {"failed", r.failed},
                   {"records_changed", r.records_changed},
                   {"suspended", r.suspended}};
  if (r.stale) j["outcomes"]["stale"] = r.stale;
  j["pending"] = nlohmann::ordered_json::array();
  for (const auto& p : r.pending)
    j["pending"].push_back({{"id", p.id}, {"reason", p.reason}, {"content", p.content}});
  j["root_causes"] = nlohmann::ordered_json::array();
  for (const auto& h : r.hints)
    j["root_causes"].push_back({{"kind", h.kind},
                                {"attribute", h.attribute},
                                {"value", h.value},
                                {"flagged_with_value", h.flagged_with_value},
                                {"flagged", h.flagged},
                                {"store_with_value", h.store_with_value},
                                {"store", h.store},
                                {"share", h.share},
                                {"lift", h.lift},
                                {"text", h.text}});
  j["prevention"] = r.prevention;
  std::vector<std::size_t> bins(20, 0);
  for (float c : r.nn_cosines)
    bins[std::min<std::size_t>(19, static_cast<std::size_t>(std::max(0.0f, c) * 20))]++;
  j["similarity"] = {{"nearest_neighbour_cosine_bins", bins},
                     {"bin_width", 0.05},
                     {"records", r.nn_cosines.size()},
                     {"threshold", r.threshold}};
  if (r.history) j["across_runs"] = history_json(*r.history);
  if (!r.retrieval.empty()) {
    j["retrieval"] = nlohmann::ordered_json::array();
    for (const auto& f : r.retrieval)
      j["retrieval"].push_back({{"when", f.when},
                                {"events", f.events},
                                {"retrievals", f.retrievals},
                                {"p95_latency_ms", f.p95_latency_ms},
                                {"duplicate_share", f.duplicate_share},
                                {"duplicate_results", f.duplicate_results},
                                {"topk_compared", f.topk_compared},
                                {"ghost_results", f.ghost_results},
                                {"scope_leaks", f.scope_leaks},
                                {"query_model_mismatches", f.version_mismatches}});
  }
  return j;
}

/// The report as Markdown.
template <class = void>  // deferred instantiation, see memhealth.hpp
std::string to_markdown(const audit_report& r) {
  namespace da = detail::audit;
  std::ostringstream s;
  s << "# " << r.title << "\n\n";
  s << "- plan: " << r.actions << " actions (" << r.by_automation[0] << " automatic, "
    << r.by_automation[1] << " need a rule or approval, " << r.by_automation[2] << " need a person)"
    << (r.suspended ? ", suspended" : "") << "\n";
  s << "- applied " << r.applied << ", already applied " << r.already_applied
    << ", awaiting approval " << r.unapproved << ", deferred " << r.deferred
    << ", failed (manual queue) " << r.failed << "; records changed " << r.records_changed << "\n";
  if (r.stale)
    s << "- stale: " << r.stale
      << " actions skipped because their records changed since the plan (make a new plan)\n";
  if (r.actions)
    s << "- automatic share: "
      << da::pct(static_cast<double>(r.by_automation[0]) / static_cast<double>(r.actions))
      << " of the actions\n";
  s << "\n## Key metrics\n\n| metric | before | after |\n|---|---:|---:|\n";
  s << "| findings | " << r.before.findings << " | " << r.after.findings << " |\n";
  s << "| duplicate share | " << da::pct(r.before.duplicate_share) << " | "
    << da::pct(r.after.duplicate_share) << " |\n";
  s << "| conflicts open | " << r.before.conflicts_open << " | " << r.after.conflicts_open
    << " |\n";
  s << "| stale share | " << da::pct(r.before.stale_share) << " | " << da::pct(r.after.stale_share)
    << " |\n";
  s << "\n## Problems and strategy by kind\n\n| kind | before | after | actions | tiers | applied "
       "/ planned |\n"
       "|---|---:|---:|---|---|---:|\n";
  for (const auto& st : r.strategies) {
    std::string acts, tiers;
    for (const auto& a : st.actions) acts += (acts.empty() ? "" : ", ") + a;
    for (int t : st.tiers) tiers += (tiers.empty() ? "" : ", ") + std::to_string(t);
    s << "| " << st.kind << " | " << st.before << " | " << st.after << " | "
      << (acts.empty() ? "-" : acts) << " | " << (tiers.empty() ? "-" : tiers) << " | "
      << st.applied << " / " << st.planned << " |\n";
  }
  if (r.history) {
    s << "\n## Across runs\n\n";
    for (const auto& line : history_sentences(*r.history)) s << line << "\n\n";
    if (!r.history->faults.empty()) {
      s << "| repaired | fault | verdict |\n|---|---|---|\n";
      for (std::size_t k = 0; k < r.history->faults.size() && k < 20; ++k) {
        const auto& f = r.history->faults[k];
        s << "| " << format_timestamp(timestamp{f.repaired_at, 0}) << " | " << f.kind << " | "
          << to_string(r.history->verdicts[k]) << " |\n";
      }
      if (r.history->faults.size() > 20)
        s << "\n(" << r.history->faults.size() - 20 << " older repaired faults not listed)\n";
    }
  }
  s << "\n## Pending review\n\n";
  if (r.pending.empty()) s << "nothing\n";
  for (const auto& p : r.pending)  // texts from the store: control characters as \xNN
    s << "- `" << printable(p.id) << "`: " << printable(p.reason)
      << (p.content.empty() ? "" : " -- " + printable(p.content)) << "\n";
  s << "\n## Root-cause hints\n\n";
  if (r.hints.empty())
    s << "none: no finding kind concentrates in one batch, source, model version or day\n";
  for (const auto& h : r.hints) s << "- " << printable(h.text) << "\n";
  s << "\n## Prevention\n\n";
  if (r.prevention.empty()) s << "nothing to add\n";
  for (const auto& p : r.prevention) s << "- " << p << "\n";
  if (!r.retrieval.empty()) {
    s << "\n## Retrieval\n\n";
    for (const auto& f : r.retrieval)
      s << "- " << f.when << " (" << f.events << "): " << retrieval_text(f) << "\n";
  }
  return s.str();
}

/// The report as one self-contained HTML page (inline CSS and SVG; a few lines of inline script
/// only fill in a rendered-chart count, so a headless browser can confirm the page rendered).
/// Charts: findings by kind before/after, key metrics before/after, nearest-neighbour cosine
/// histogram with the threshold marked. Elements carry `data-*` attributes with the numbers.
template <class = void>  // deferred instantiation, see memhealth.hpp
std::string to_html(const audit_report& r) {
  namespace da = detail::audit;
  using da::html_escape;
  std::ostringstream s;
  s << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>"
    << html_escape(r.title)
    << "</"
       "title>\n<style>body{font-family:sans-serif;margin:2em;max-width:60em}table{border-collapse:"
       "collapse}"
       "td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left}svg{display:block;margin:1em "
       "0}"
       ".before{fill:#d9822b}.after{fill:#2b7bd9}.thr{stroke:#c00;stroke-width:2}</style></"
       "head><body>\n";
  s << "<h1>" << html_escape(r.title) << "</h1>\n";
  s << "<p id=\"summary\" data-actions=\"" << r.actions << "\" data-applied=\"" << r.applied
    << "\">" << r.actions << " actions planned (" << r.by_automation[0] << " automatic, "
    << r.by_automation[1] << " confirm, " << r.by_automation[2] << " manual); " << r.applied
    << " applied, " << r.failed << " failed, " << r.unapproved << " awaiting approval; "
    << r.records_changed << " records changed.</p>\n";

  // chart 1: findings by kind, before and after
  std::set<std::string> kinds;
  for (const auto& [k, n] : r.before.findings_by_kind) kinds.insert(k);
  for (const auto& [k, n] : r.after.findings_by_kind) kinds.insert(k);
  std::size_t maxc = 1;
  for (const auto& k : kinds) {
    auto b = r.before.findings_by_kind.count(k) ? r.before.findings_by_kind.at(k) : 0;
    auto a = r.after.findings_by_kind.count(k) ? r.after.findings_by_kind.at(k) : 0;
    maxc = std::max({maxc, b, a});
  }
  const int row_h = 26, label_w = 230, bar_w = 400;
  s << "<h2>Findings by kind</h2>\n<svg class=\"chart\" id=\"findings-chart\" width=\""
    << label_w + bar_w + 60 << "\" height=\"" << row_h * static_cast<int>(kinds.size()) + 10
    << "\" role=\"img\" aria-label=\"findings by kind\">\n";
  int y = 5;
  for (const auto& k : kinds) {
    auto b = r.before.findings_by_kind.count(k) ? r.before.findings_by_kind.at(k) : 0;
    auto a = r.after.findings_by_kind.count(k) ? r.after.findings_by_kind.at(k) : 0;
    const auto wb = static_cast<int>(static_cast<double>(bar_w) * static_cast<double>(b) /
                                     static_cast<double>(maxc));
    const auto wa = static_cast<int>(static_cast<double>(bar_w) * static_cast<double>(a) /
                                     static_cast<double>(maxc));
    s << "<g class=\"kind\" data-kind=\"" << html_escape(k) << "\" data-before=\"" << b
      << "\" data-after=\"" << a << "\"><text x=\"0\" y=\"" << y + 14 << "\" font-size=\"12\">"
      << html_escape(k) << "</text>"
      << "<rect class=\"before\" x=\"" << label_w << "\" y=\"" << y << "\" width=\"" << wb
      << "\" height=\"10\"/>"
      << "<rect class=\"after\" x=\"" << label_w << "\" y=\"" << y + 11 << "\" width=\"" << wa
      << "\" height=\"10\"/>"
      << "<text x=\"" << label_w + std::max(wb, wa) + 4 << "\" y=\"" << y + 14
      << "\" font-size=\"11\">" << b << " → " << a << "</text></g>\n";
    y += row_h;
  }
  s << "</svg>\n<p><span "
       "style=\"display:inline-block;width:12px;height:12px;background:#d9822b\"></span> before "
       "<span style=\"display:inline-block;width:12px;height:12px;background:#2b7bd9\"></span> "
       "after</p>\n";

  // chart 2: key metrics
  s << "<h2>Key metrics</h2>\n<table "
       "id=\"metrics\"><tr><th>metric</th><th>before</th><th>after</th></tr>"
    << "<tr><td>findings</td><td>" << r.before.findings << "</td><td>" << r.after.findings
    << "</td></tr>"
    << "<tr><td>duplicate share</td><td>" << da::pct(r.before.duplicate_share) << "</td><td>"
    << da::pct(r.after.duplicate_share) << "</td></tr>"
    << "<tr><td>conflicts open</td><td>" << r.before.conflicts_open << "</td><td>"
    << r.after.conflicts_open << "</td></tr>"
    << "<tr><td>stale share</td><td>" << da::pct(r.before.stale_share) << "</td><td>"
    << da::pct(r.after.stale_share) << "</td></tr></table>\n";

  // chart 3: nearest-neighbour cosine histogram with the threshold
  std::vector<std::size_t> bins(20, 0);
  for (float c : r.nn_cosines)
    bins[std::min<std::size_t>(19, static_cast<std::size_t>(std::max(0.0f, c) * 20))]++;
  const std::size_t maxb = std::max<std::size_t>(1, *std::max_element(bins.begin(), bins.end()));
  const int hw = 600, hh = 160, bw = hw / 20;
  s << "<h2>Similarity distribution</h2>\n<p>Cosine of each active record's nearest active "
       "neighbour in its scope ("
    << r.nn_cosines.size() << " records); the red line is the near-duplicate threshold "
    << r.threshold << ".</p>\n";
  s << "<svg class=\"chart\" id=\"similarity-chart\" width=\"" << hw + 20 << "\" height=\""
    << hh + 30 << "\" data-records=\"" << r.nn_cosines.size() << "\" data-threshold=\""
    << r.threshold << "\">\n";
  for (std::size_t k = 0; k < bins.size(); ++k) {
    const auto h = static_cast<int>(static_cast<double>(hh) * static_cast<double>(bins[k]) /
                                    static_cast<double>(maxb));
    s << "<rect class=\"after bin\" data-count=\"" << bins[k] << "\" x=\""
      << 10 + static_cast<int>(k) * bw << "\" y=\"" << hh - h << "\" width=\"" << bw - 2
      << "\" height=\"" << h << "\"/>\n";
  }
  const int tx =
      10 + static_cast<int>(static_cast<float>(hw) * std::clamp(r.threshold, 0.0f, 1.0f));
  s << "<line class=\"thr\" id=\"threshold\" x1=\"" << tx << "\" y1=\"0\" x2=\"" << tx << "\" y2=\""
    << hh << "\"/>\n";
  for (int t = 0; t <= 10; t += 2)
    s << "<text x=\"" << 10 + hw * t / 10 - 6 << "\" y=\"" << hh + 18 << "\" font-size=\"11\">"
      << t / 10 << "." << t % 10 << "</text>\n";
  s << "</svg>\n";

  // tables
  s << "<h2>Problems and strategy by kind</h2>\n<table "
       "id=\"strategies\"><tr><th>kind</th><th>before</th><th>after</th>"
       "<th>actions</th><th>applied / planned</th></tr>\n";
  for (const auto& st : r.strategies) {
    std::string acts;
    for (const auto& a : st.actions) acts += (acts.empty() ? "" : ", ") + a;
    s << "<tr><td>" << html_escape(st.kind) << "</td><td>" << st.before << "</td><td>" << st.after
      << "</td><td>" << html_escape(acts.empty() ? "-" : acts) << "</td><td>" << st.applied << " / "
      << st.planned << "</td></tr>\n";
  }
  s << "</table>\n";
  if (r.history) {
    const auto& h = *r.history;
    const auto share = [](const std::optional<double>& x) {
      return x ? std::to_string(*x) : std::string();
    };
    s << "<h2>Across runs</h2>\n<p id=\"across-runs\" data-repaired=\"" << h.repair.repaired
      << "\" data-held=\"" << h.repair.held << "\" data-recurred=\"" << h.repair.recurred
      << "\" data-too-early=\"" << h.repair.too_early << "\" data-success-rate=\""
      << share(h.repair.success_rate) << "\" data-uptime-time=\"" << share(h.uptime.time_share)
      << "\" data-uptime-runs=\"" << share(h.uptime.run_share) << "\">";
    for (const auto& line : history_sentences(h)) s << html_escape(line) << "<br>\n";
    s << "</p>\n";
    if (!h.faults.empty()) {
      s << "<table "
           "id=\"repaired-faults\"><tr><th>repaired</th><th>fault</th><th>verdict</th></tr>\n";
      for (std::size_t k = 0; k < h.faults.size() && k < 20; ++k)
        s << "<tr><td>" << html_escape(format_timestamp(timestamp{h.faults[k].repaired_at, 0}))
          << "</td><td>" << html_escape(h.faults[k].kind) << "</td><td>"
          << html_escape(to_string(h.verdicts[k])) << "</td></tr>\n";
      s << "</table>\n";
    }
  }
  if (!r.retrieval.empty()) {
    s << "<h2>Retrieval</h2>\n<table id=\"retrieval\"><tr><th></th><th>events</th>"
         "<th>retrievals</th><th>P95 latency (ms)</th><th>duplicate share of top-k</th>"
         "<th>ghost results</th><th>scope leaks</th><th>query-model mismatches</th></tr>\n";
    for (const auto& f : r.retrieval) {
      char p95[32], dup[32];
      std::snprintf(p95, sizeof p95, "%.1f", f.p95_latency_ms);
      std::snprintf(dup, sizeof dup, "%.3f", f.duplicate_share);
      s << "<tr data-when=\"" << html_escape(f.when) << "\" data-ghost-results=\""
        << f.ghost_results << "\" data-p95-latency-ms=\"" << p95 << "\"><td>" << html_escape(f.when)
        << "</td><td>" << html_escape(f.events) << "</td><td>" << f.retrievals << "</td><td>" << p95
        << "</td><td>" << dup << " (" << f.duplicate_results << " of " << f.topk_compared
        << ")</td><td>" << f.ghost_results << "</td><td>" << f.scope_leaks << "</td><td>"
        << f.version_mismatches << "</td></tr>\n";
    }
    s << "</table>\n";
  }
  s << "<h2>Pending review</h2>\n<ul id=\"pending\">\n";
  if (r.pending.empty()) s << "<li>nothing</li>\n";
  for (const auto& p : r.pending)
    s << "<li><code>" << html_escape(p.id) << "</code>: " << html_escape(p.reason)
      << (p.content.empty() ? "" : " — " + html_escape(p.content)) << "</li>\n";
  s << "</ul>\n<h2>Root-cause hints</h2>\n<ul id=\"root-causes\">\n";
  if (r.hints.empty()) s << "<li>none</li>\n";
  for (const auto& h : r.hints)
    s << "<li data-kind=\"" << html_escape(h.kind) << "\">" << html_escape(h.text) << "</li>\n";
  s << "</ul>\n<h2>Prevention</h2>\n<ul id=\"prevention\">\n";
  for (const auto& p : r.prevention) s << "<li>" << html_escape(p) << "</li>\n";
  s << "</ul>\n<p id=\"rendered\"></p>\n<script>document.getElementById('rendered').textContent = "
       "'rendered charts=' + "
       "document.querySelectorAll('svg.chart').length + ' kinds=' + "
       "document.querySelectorAll('g.kind').length + "
       "' bins=' + document.querySelectorAll('rect.bin').length;</script>\n</body></html>\n";
  return s.str();
}

}  // namespace memhealth
