// incident_replay: a memory incident, end to end, on the bundled sample store.
//
//   incident_replay [STORE.jsonl SCHEMA.json EVENTS.jsonl OUT_DIR]
//
// 1. Alerts: the retrieval monitor over the event log (P95 latency, duplicate share of top-k,
//    served records that are missing, out of scope or from another model) and the store check.
// 2. Diagnosis: causes named from the data: findings concentrated in one ingest batch (a bulk
//    import), two embedding versions in one index (a model switch), contradictions stored side by
//    side (no conflict rule at write time); each retrieval alert traced to the store findings that
//    name the same records.
// 3. Plan: every action with its tier and rollback method.
// 4. Apply: tier 1, and tier 2 approved explicitly by this program, through a write-ahead log.
// 5. Verify: detection again (findings by kind before -> after); a rollback into a copy must give
//    the original store back byte for byte.
// 6. Report: the audit report as Markdown, HTML and JSON.
//
// A library user's program (no CLI code). The clock is fixed (2024-07-15) and nothing printed
// depends on the wall clock, so the output is the same on every run. Exit status 0 when every
// invariant holds (findings went down, nothing failed, rollback restored the bytes, the reports
// exist), 1 when one does not, 2 for unreadable input.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "memhealth/memhealth.hpp"

#ifndef MEMHEALTH_SOURCE_DIR
#define MEMHEALTH_SOURCE_DIR "."
#endif

namespace {

namespace fs = std::filesystem;
using namespace memhealth;

constexpr const char* clock_text = "2024-07-15T00:00:00Z";

// ---------------------------------------------------------------- small helpers

std::string fmt(const char* f, double x) {
  char b[64];
  std::snprintf(b, sizeof b, f, x);
  return b;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void section(int n, const std::string& title) {
  std::string line = "== " + std::to_string(n) + ". " + title + " ";
  line.resize(std::max<std::size_t>(line.size(), 78), '=');
  std::cout << "\n" << line << "\n";
}

// "mem-1 mem-2 mem-3 +4" (at most `max` ids).
std::string ids_text(const std::vector<std::string>& ids, std::size_t max = 3) {
  std::string s;
  for (std::size_t i = 0; i < ids.size() && i < max; ++i) s += (i ? " " : "") + ids[i];
  if (ids.size() > max) s += " +" + std::to_string(ids.size() - max);
  return s;
}

std::string hhmm(const std::string& iso) {
  return iso.size() >= 16 ? iso.substr(11, 5) : iso;
}

double number(const finding& f, std::string_view key) {
  const auto* v = f.evidence_of(key);
  if (!v) return 0;
  if (const auto* d = std::get_if<double>(v)) return *d;
  if (const auto* i = std::get_if<std::int64_t>(v)) return static_cast<double>(*i);
  return 0;
}

std::string text(const finding& f, std::string_view key) {
  const auto* v = f.evidence_of(key);
  const auto* s = v ? std::get_if<std::string>(v) : nullptr;
  return s ? *s : std::string();
}

// Every string the finding names: its record ids and string evidence (e.g. a dangling link target).
std::set<std::string> named_ids(const finding& f) {
  std::set<std::string> s(f.record_ids.begin(), f.record_ids.end());
  for (const auto& [k, v] : f.evidence)
    if (const auto* t = std::get_if<std::string>(&v)) s.insert(*t);
  return s;
}

// Counts by kind, three to a line.
std::string counts_lines(const report& r) {
  std::string s;
  int col = 0;
  for (const auto& [k, n] : r.counts_by_kind()) {
    char b[64];
    std::snprintf(b, sizeof b, "  %-26s %2zu", k.c_str(), n);
    s += (col % 3 ? "  " : "") + std::string(b);
    if (++col % 3 == 0) s += "\n";
  }
  if (col % 3) s += "\n";
  return s;
}

// Canonical JSONL bytes of a store (what write_jsonl writes).
std::string store_bytes(const memory_store<>& s) {
  return to_jsonl(s);
}

std::string hex(std::uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

struct checks {
  int failed = 0;
  void expect(bool ok, const std::string& what) {
    if (!ok) {
      ++failed;
      std::cout << "CHECK FAILED: " << what << "\n";
    }
  }
};

// ---------------------------------------------------------------- 1. alerts

// How to summarise one monitor alert kind: the metric, its baseline key, and whether worse is
// lower.
struct metric_keys {
  std::string_view kind, metric, baseline, unit;
  bool lower_is_worse;
};
constexpr metric_keys metric_table[] = {
    {finding_kinds::latency_regression, "p95_latency_ms", "baseline_p95_latency_ms", " ms", false},
    {finding_kinds::duplicate_share_high, "duplicate_share", "baseline_duplicate_share", "", false},
    {finding_kinds::similarity_drop, "mean_top1_similarity", "baseline_median_top1_similarity", "",
     true},
    {finding_kinds::empty_results, "empty_rate", "baseline_empty_rate", "", false},
    {finding_kinds::feedback_negative, "negative_feedback_rate", "baseline_negative_feedback_rate",
     "", false},
};

struct alert_group {
  std::string kind;
  severity sev = severity::info;
  std::size_t windows = 0;
  std::set<std::string> partitions;
  std::vector<std::string> ids;  // distinct, first-seen order
  std::string first_window, last_window_end;
  const finding* worst = nullptr;
  std::set<std::string> reasons;
};

std::map<std::string, alert_group> group_alerts(const report& r) {
  std::map<std::string, alert_group> g;
  for (const auto& f : r.findings) {
    auto& a = g[f.kind];
    a.kind = f.kind;
    a.sev = std::max(a.sev, f.severity);
    ++a.windows;
    a.partitions.insert(text(f, "partition"));
    for (const auto& id : f.record_ids)
      if (std::find(a.ids.begin(), a.ids.end(), id) == a.ids.end()) a.ids.push_back(id);
    const std::string ws = text(f, "window_start"), we = text(f, "window_end");
    if (a.first_window.empty() || ws < a.first_window) a.first_window = ws;
    if (we > a.last_window_end) a.last_window_end = we;
    if (auto r2 = text(f, "reason"); !r2.empty()) a.reasons.insert(r2);
    for (const auto& m : metric_table)
      if (m.kind == f.kind &&
          (!a.worst || (m.lower_is_worse ? number(f, m.metric) < number(*a.worst, m.metric)
                                         : number(f, m.metric) > number(*a.worst, m.metric))))
        a.worst = &f;
  }
  return g;
}

// Store finding kinds that can explain a retrieval alert on the same records (library knowledge,
// not knowledge of this store): copies in top-k are duplicates, a missing result is a dangling
// link, a leak is a cross-scope copy or link, a version mismatch is a mixed or broken embedding.
bool explains(std::string_view alert, std::string_view store_kind) {
  namespace k = finding_kinds;
  if (alert == k::duplicate_share_high)
    return store_kind == k::exact_duplicate || store_kind == k::near_duplicate;
  if (alert == k::ghost_result)
    return store_kind == k::dangling_reference || store_kind == k::merged_but_active;
  if (alert == k::scope_leak)
    return store_kind == k::cross_scope_duplicate || store_kind == k::cross_scope_link;
  if (alert == k::query_version_mismatch)
    return store_kind == k::mixed_embedding_version || store_kind.starts_with("embedding_");
  return false;
}

std::string alert_detail(const alert_group& a) {
  for (const auto& m : metric_table)
    if (m.kind == a.kind && a.worst) {
      const bool share = m.unit.empty();
      const char* f = share ? "%.3f" : "%.0f";
      std::string s = "worst " + fmt(f, number(*a.worst, m.metric)) + std::string(m.unit);
      if (a.worst->evidence_of(m.baseline))
        s += " vs baseline " + fmt(f, number(*a.worst, m.baseline)) + std::string(m.unit);
      if (!a.ids.empty()) s += "; served " + ids_text(a.ids);
      return s;
    }
  std::string s = ids_text(a.ids, 2);
  for (const auto& r : a.reasons) s += (s.empty() ? "" : " ") + ("(" + r + ")");
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const fs::path src = MEMHEALTH_SOURCE_DIR;
  if (argc != 1 && argc != 5) {
    std::cerr << "usage: incident_replay [STORE.jsonl SCHEMA.json EVENTS.jsonl OUT_DIR]\n"
                 "defaults: the bundled data/sample_*.jsonl and data/sample_schema.json, OUT_DIR "
                 "incident-replay\n";
    return 2;
  }
  const fs::path store_path = argc == 5 ? fs::path(argv[1]) : src / "data/sample_store.jsonl";
  const fs::path schema_path = argc == 5 ? fs::path(argv[2]) : src / "data/sample_schema.json";
  const fs::path events_path = argc == 5 ? fs::path(argv[3]) : src / "data/sample_events.jsonl";
  const fs::path out = argc == 5 ? fs::path(argv[4]) : fs::path("incident-replay");
  checks check;
  try {
    fs::create_directories(out);
    const fs::path wal_path = out / "run.wal", repaired_path = out / "repaired.jsonl",
                   restored_path = out / "restored.jsonl";
    fs::remove(wal_path);  // the writer appends to an existing log: each replay starts a new one

    // ---- load
    auto loaded = read_jsonl(store_path);
    const std::size_t load_issues = loaded.issues.size();
    memory_store<> store = memory_store<>::from_records(std::move(loaded.records));
    const memory_store<> before_store = store;  // the audit report attributes causes on it
    const std::string original_bytes = slurp(store_path);
    const auto events = read_events_jsonl(events_path);

    default_check_settings settings;
    settings.schema = load_schema_json(schema_path);
    detect_options dopt;
    dopt.now = parse_timestamp(clock_text)->instant;
    dopt.dimension = store.dimension();
    const auto pipeline = make_default_pipeline(settings);

    std::cout << "memhealth incident replay: " << store_path.filename().string() << " ("
              << store.size() << " records, " << load_issues << " load issues), "
              << events.retrievals.size() << " retrieval events from "
              << events_path.filename().string() << ", clock " << clock_text << "\n";

    // ---- 1. alerts
    section(1, "Alerts");
    monitor_options mo;  // hourly windows, rolling baseline, thresholds as documented
    const monitor_result mon =
        monitor_retrievals(store, std::span(events.retrievals), std::span(events.feedback), mo);
    std::set<std::string> partitions;
    for (const auto& w : mon.windows) partitions.insert(w.partition);
    std::cout << "retrieval monitor: " << mon.windows.size() << " windows of 1h over "
              << partitions.size()
              << " partitions, baseline = each partition's earlier windows without alerts\n";
    const auto alerts = group_alerts(mon.findings);
    std::string first_alert;
    for (const auto& [k, a] : alerts)
      if (first_alert.empty() || a.first_window < first_alert) first_alert = a.first_window;
    {  // what normal looked like: the windows before the first alert
      double p95 = 0, dup = 0, top1 = 0;
      std::size_t n = 0;
      for (const auto& w : mon.windows)
        if (format_timestamp(w.end) <= first_alert && w.retrievals >= mo.min_retrievals)
          p95 = std::max(p95, w.p95_latency_ms), dup = std::max(dup, w.duplicate_share),
          top1 += w.mean_top1_similarity, ++n;
      if (n)
        std::cout << "  before " << hhmm(first_alert) << ": P95 latency <= " << fmt("%.0f", p95)
                  << " ms, duplicate share <= " << fmt("%.3f", dup) << ", mean top-1 similarity "
                  << fmt("%.2f", top1 / static_cast<double>(n)) << "\n";
    }
    std::cout << (alerts.empty() ? "  no alerts\n" : "  from " + hhmm(first_alert) + ":\n");
    for (const auto& [k, a] : alerts) {
      std::string parts;
      for (const auto& p : a.partitions) parts += (parts.empty() ? "" : ",") + p;
      std::printf("  %-23s %-8s %zu windows  %-21s %s\n", k.c_str(),
                  std::string(to_string(a.sev)).c_str(), a.windows, parts.c_str(),
                  alert_detail(a).c_str());
    }
    std::cout.flush();
    const report before = pipeline.run(store, dopt);
    std::set<std::string> suspicious;
    for (const auto& f : before.findings)
      suspicious.insert(f.record_ids.begin(), f.record_ids.end());
    std::cout << "store check (default pipeline, schema " << schema_path.filename().string()
              << "): " << before.findings.size() << " findings naming " << suspicious.size()
              << " suspicious records of " << store.size() << "\n"
              << counts_lines(before);
    check.expect(!mon.findings.findings.empty(), "the monitor raised alerts on the event log");

    // ---- 2. diagnosis
    section(2, "Diagnosis");
    // Root-cause hints need only the state before repair: an audit report of an empty run.
    audit_options ao;
    const audit_report pre = make_audit_report(before_store, before_store, before, before,
                                               repair_plan{}, apply_result{}, ao);
    int cause = 0;
    // (a) a bulk import: a finding kind concentrated in one ingest batch
    for (const auto& h : pre.hints) {
      if (!h.attribute.starts_with("metadata.")) continue;
      std::cout << "cause " << ++cause << ": bulk import '" << h.value << "' (" << h.attribute
                << ")\n  " << h.text << "\n";
      std::map<std::string, std::size_t> missing;  // what the batch dropped
      std::set<std::string> same_records;
      for (const auto& f : before.findings) {
        if (f.kind != h.kind) continue;
        const auto i =
            f.record_ids.empty() ? std::nullopt : before_store.find(f.record_ids.front());
        if (!i) continue;
        const auto& md = before_store.record(*i).metadata;
        const auto it = md.find(h.attribute.substr(9));
        const auto* v = it == md.end() ? nullptr : std::get_if<std::string>(&it->second);
        if (!v || *v != h.value) continue;
        for (const auto& [key, v] : f.evidence)
          if (key == "missing")
            if (const auto* s = std::get_if<std::string>(&v)) ++missing[*s];
      }
      for (const auto& [key, n] : missing)
        std::cout << "  the batch's records lack metadata '" << key << "' (" << n << " records)\n";
      for (const auto& o : pre.hints)  // same records, seen through other attributes
        if (o.kind == h.kind && &o != &h && o.flagged_with_value == h.flagged_with_value)
          std::cout << "  same records: " << o.attribute << " = " << o.value << " (lift "
                    << fmt("%.1f", o.lift) << "x)\n";
    }
    // (b) an embedding-model switch: two versions in one index
    for (const auto& f : before.findings) {
      if (f.kind != finding_kinds::mixed_embedding_version) continue;
      std::string versions;
      for (const auto& [k, v] : f.evidence)
        if (k.starts_with("version:"))
          versions +=
              (versions.empty() ? "" : ", ") + k.substr(8) + " x" + fmt("%.0f", number(f, k));
      std::cout << "cause " << ++cause << ": embedding-model switch: " << versions
                << " in one index\n";
      std::cout << "  majority " << text(f, "majority_version") << "; "
                << fmt("%.0f", number(f, "minority_count"))
                << " records hold vectors of another model (not comparable with the majority's)\n";
      if (auto it = alerts.find(std::string(finding_kinds::query_version_mismatch));
          it != alerts.end())
        std::cout << "  retrieval: " << *it->second.reasons.begin() << " in " << it->second.windows
                  << " windows from " << hhmm(it->second.first_window) << "\n";
    }
    // (c) no conflict rule at write time: contradictions stored side by side
    {
      const default_conflict_rules rules;
      std::size_t stored_both = 0, undecided = 0;
      std::vector<std::string> lines;
      for (const auto& f : before.findings) {
        if (f.kind != finding_kinds::conflict || f.record_ids.size() != 2) continue;
        const auto a = before_store.find(f.record_ids[0]), b = before_store.find(f.record_ids[1]);
        if (!a || !b) continue;
        const memory_record &ra = before_store.record(*a), &rb = before_store.record(*b);
        auto supersedes = [](const memory_record& x, const std::string& id) {
          return std::find(x.links.supersedes.begin(), x.links.supersedes.end(), id) !=
                 x.links.supersedes.end();
        };
        if (supersedes(ra, rb.id) || supersedes(rb, ra.id)) continue;
        ++stored_both;
        const rule_decision d = rules.decide(ra, rb);
        std::string verdict = d.verdict == rule_verdict::undecided
                                  ? std::string("undecided: needs a person or a new rule")
                                  : "repair rule " + std::string(d.rule_name) + " keeps " +
                                        (d.verdict == rule_verdict::winner_a ? ra.id : rb.id);
        const auto* nh = f.evidence_of("needs_human");
        if (d.verdict == rule_verdict::undecided ||
            (nh && std::get_if<bool>(nh) && *std::get_if<bool>(nh)))
          ++undecided;
        lines.push_back("  " + ra.id + " vs " + rb.id + " (" + text(f, "reason") + "): " + verdict);
      }
      if (stored_both) {
        std::cout
            << "cause " << ++cause << ": no conflict rule at write time: " << stored_both
            << " contradictions stored as two active records, neither superseding the other\n";
        for (const auto& l : lines) std::cout << l << "\n";
        std::cout << "  " << stored_both - undecided
                  << " decided by the repair rule chain (tier 2), " << undecided
                  << " left for a person\n";
      }
    }
    check.expect(cause >= 3,
                 "the diagnosis names a bulk import, a model switch and missing conflict rules");
    // each retrieval alert traced to the store findings of a related kind that name the same
    // records
    std::cout << "retrieval alerts traced to the store:\n";
    for (const auto& [k, a] : alerts) {
      std::string s;
      for (const auto& f : before.findings) {
        if (!explains(k, f.kind)) continue;
        const auto named = named_ids(f);
        std::vector<std::string> common;
        for (const auto& id : a.ids)
          if (named.count(id)) common.push_back(id);
        if (!common.empty())
          s += (s.empty() ? "" : ", ") + f.kind + " " + ids_text(f.record_ids, 2);
      }
      if (!s.empty())
        std::printf("  %-23s served %-20s <- %s\n", k.c_str(), ids_text(a.ids, 2).c_str(),
                    s.c_str());
    }
    {  // alerts without record ids: which alert with ids started in the same window
      const auto mismatch = alerts.find(std::string(finding_kinds::query_version_mismatch));
      std::string same_start;
      for (const auto& [k, a] : alerts)
        if (a.ids.empty() && mismatch != alerts.end() &&
            a.first_window == mismatch->second.first_window)
          same_start += (same_start.empty() ? "" : ", ") + k;
      if (!same_start.empty())
        std::printf("  %s: no record ids; they start at %s, when the queries' model changed\n",
                    same_start.c_str(), hhmm(mismatch->second.first_window).c_str());
    }
    std::cout.flush();

    // ---- 3. plan
    section(3, "Plan");
    planner_options po;
    for (const auto& [key, types] :
         settings.schema.required)  // a missing required text key gets "unknown"
      if (types & metadata_types::string) po.metadata_defaults[key] = std::string("unknown");
    const repair_plan plan = make_plan(store, before, po);
    std::printf("  %-2s %-4s %-7s %-25s %-27s %s\n", "#", "tier", "who", "action", "targets",
                "rollback");
    std::map<int, std::size_t> per_tier;
    for (std::size_t i = 0; i < plan.actions.size(); ++i) {
      const auto& a = plan.actions[i];
      ++per_tier[a.tier];
      std::printf("  %-2zu %-4d %-7s %-25s %-27s %s\n", i + 1, a.tier,
                  std::string(to_string(a.automation)).c_str(), a.type.c_str(),
                  ids_text(a.targets, 2).c_str(),
                  a.rollback_method.empty() ? "-" : a.rollback_method.c_str());
    }
    std::cout.flush();
    std::cout << plan.actions.size() << " actions: tier 1 " << per_tier[1]
              << " (automatic), tier 2 " << per_tier[2] << " (a rule or an approval), tier 3 "
              << per_tier[3] << " (a person); blast radius " << plan_blast_radius(plan).records
              << " records" << (plan.suspended ? ", SUSPENDED: " + plan.suspend_reason : "")
              << "\n";

    // ---- 4. apply
    section(4, "Apply");
    apply_options opt;
    opt.approve_tier2 = true;  // this replay approves tier 2 explicitly; tier 3 stays with a person
    opt.limits.rate_limited = false;
    apply_result res;
    {
      wal_writer wal(wal_path, wal_sync::per_batch, "incident-replay");
      res = apply_plan(store, plan, wal, opt);
      wal.sync();
    }
    write_jsonl(repaired_path, store);
    std::cout << "approved: tier 1 (automatic) and tier 2 (approve_tier2 = true, set by this "
                 "replay); tier 3 waits for a person\n"
              << "applied " << res.applied.size() << ", already applied "
              << res.skipped_already_applied.size() << ", no-op " << res.skipped_noop.size()
              << ", awaiting a person " << res.skipped_unapproved.size() << ", deferred "
              << res.deferred.size() << ", manual queue " << res.failed.size() << "; "
              << res.records_changed << " record writes, each logged before and after in "
              << wal_path.filename().string() << "\n";
    for (std::size_t i = 0; i < plan.actions.size(); ++i)
      if (res.outcomes[i].status == action_status::failed)
        std::cout << "  manual queue: " << plan.actions[i].type << " "
                  << ids_text(plan.actions[i].targets) << ": " << res.outcomes[i].reason << "\n";
    check.expect(!res.applied.empty(), "some actions were applied");
    check.expect(res.deferred.empty(), "nothing was deferred");

    // ---- 5. verify
    section(5, "Verify");
    const report after = pipeline.run(store, dopt);
    std::set<std::string> kinds;
    for (const auto& [k, n] : before.counts_by_kind()) kinds.insert(k);
    for (const auto& [k, n] : after.counts_by_kind()) kinds.insert(k);
    std::cout << "detection again, same settings: findings " << before.findings.size() << " -> "
              << after.findings.size() << "\n";
    std::set<std::string>
        waiting;  // records of actions that wait for a person (or the manual queue)
    for (std::size_t i = 0; i < plan.actions.size(); ++i)
      if (res.outcomes[i].status == action_status::unapproved ||
          res.outcomes[i].status == action_status::failed)
        waiting.insert(plan.actions[i].targets.begin(), plan.actions[i].targets.end());
    for (const auto& k : kinds) {
      const std::size_t b = before.count(k), a = after.count(k);
      bool all_waiting = true;  // every finding left names a record whose action waits for a person
      for (const auto& f : after.findings)
        if (f.kind == k)
          all_waiting =
              all_waiting && std::any_of(f.record_ids.begin(), f.record_ids.end(),
                                         [&](const auto& id) { return waiting.count(id) > 0; });
      std::printf("  %-26s %2zu -> %zu%s\n", k.c_str(), b, a,
                  a == 0        ? ""
                  : all_waiting ? "  (tier 3: waits for a person)"
                                : "");
      check.expect(a <= b, k + " did not grow");
      check.expect(all_waiting, k + " is left only where an action waits for a person");
    }
    std::cout.flush();
    check.expect(after.findings.size() < before.findings.size(), "findings went down");
    // rollback into a copy: the repaired file, undone record by record from the log
    {
      const wal_contents log = read_wal_file(wal_path);
      auto rl = read_jsonl(repaired_path);
      memory_store<> copy = memory_store<>::from_records(std::move(rl.records));
      const rollback_result rb = rollback(copy, log);
      write_jsonl(restored_path, copy);
      const std::string restored = slurp(restored_path);
      const bool same = restored == original_bytes;
      std::cout << "rollback into a copy: " << rb.rolled_back.size() << " actions undone, "
                << rb.records_restored << " records restored, " << rb.conflicts.size()
                << " conflicts; " << restored_path.filename().string() << (same ? " == " : " != ")
                << store_path.filename().string() << " byte for byte (fnv1a-64 "
                << hex(fnv1a_64(restored)) << ")\n";
      check.expect(same, "rollback restored the original store byte for byte");
      check.expect(rb.conflicts.empty(), "rollback met no conflicts");
      check.expect(store_bytes(store) == slurp(repaired_path),
                   "the repaired store on disk is the one in memory");
      std::cout << "the same with the tool: memhealth rollback "
                << (out / "repaired.jsonl").string() << " --wal " << wal_path.string() << " --out "
                << restored_path.string() << "\n";
    }

    // ---- 6. report
    section(6, "Report");
    ao.title = "memhealth incident replay: " + store_path.filename().string();
    const audit_report audit = make_audit_report(before_store, store, before, after, plan, res, ao);
    const fs::path md = out / "report.md", html = out / "report.html", json = out / "report.json";
    {
      std::ofstream(md, std::ios::binary) << to_markdown(audit);
      std::ofstream(html, std::ios::binary) << to_html(audit);
      std::ofstream(json, std::ios::binary) << to_json(audit).dump(2) << "\n";
    }
    for (const auto& p : {md, html, json}) {
      std::error_code ec;
      const auto size = fs::file_size(p, ec);
      check.expect(!ec && size > 0, p.string() + " was written");
      std::cout << "  " << p.string() << "\n";
    }
    std::cout << "audit: " << audit.hints.size() << " root-cause hints, " << audit.pending.size()
              << " items pending review, " << audit.prevention.size()
              << " prevention notes; duplicate share "
              << fmt("%.1f%%", 100 * audit.before.duplicate_share) << " -> "
              << fmt("%.1f%%", 100 * audit.after.duplicate_share) << ", conflicts open "
              << audit.before.conflicts_open << " -> " << audit.after.conflicts_open << "\n";
  } catch (const std::exception& e) {
    std::cerr << "incident_replay: " << e.what() << "\n";
    return 2;
  }
  if (check.failed) {
    std::cout << "\n" << check.failed << " checks failed\n";
    return 1;
  }
  std::cout << "\nall checks passed\n";
  return 0;
}
