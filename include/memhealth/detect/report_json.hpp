#pragma once
/// @file report_json.hpp
/// A detection `report` as JSON: the one shape every command that reports findings writes
/// (`memhealth check`, `monitor`, `drift`, `gate`; docs/cli.md, "JSON output").
///
/// The `memhealth check --format json` document (`check_report_json`):
/// @code{.json}
/// {"schema_version": 1, "store": "store.jsonl", "now": "2024-07-15T00:00:00.000Z", "dimension":
/// 384,
///  "summary": {"records_total": 51, "records_checked": 51, "findings": 21, "load_issues": 0,
///              "by_kind": {"conflict": 2, ...}, "by_severity": {"warning": 9, ...}},
///  "findings": [{"kind": "exact_duplicate", "severity": "warning", "detector": "duplicates",
///                "record_ids": ["mem-1004", "mem-1002"], "evidence": {"scope": "user:alice", ...},
///                "suggested_repair": "merge_duplicates"}, ...],
///  "load_issues": [{"field": "", "file": "store.jsonl", "line": 7, "reason": "...", "record_kept":
///  false}]}
/// @endcode
/// Objects keep the key order shown (nlohmann::ordered_json), except each load issue, whose keys
/// are sorted. `by_kind` is sorted by kind, `by_severity` ordered info, warning, error, critical
/// (only severities present). An evidence key given more than once becomes an array of its values.

#include <nlohmann/json.hpp>

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "memhealth/detect/finding.hpp"
#include "memhealth/detect/pipeline.hpp"
#include "memhealth/io/load_issue.hpp"
#include "memhealth/record/time.hpp"

namespace memhealth {

/// One evidence value as JSON: a number, an integer, a string or a boolean.
inline nlohmann::ordered_json evidence_json(const evidence_value& v) {
  return std::visit([](const auto& x) { return nlohmann::ordered_json(x); }, v);
}

/// The `findings` array of a report: per finding, in report order, `kind`, `severity`,
/// `detector`, `record_ids`, `evidence` (an object; a key given more than once becomes an array of
/// its values, in order) and `suggested_repair` ("" when none).
template <class = void>  // deferred instantiation, see memhealth.hpp
nlohmann::ordered_json findings_json(const report& r) {
  auto out = nlohmann::ordered_json::array();
  for (const auto& f : r.findings) {
    nlohmann::ordered_json e;
    e["kind"] = f.kind;
    e["severity"] = std::string(to_string(f.severity));
    e["detector"] = f.detector;
    e["record_ids"] = f.record_ids;
    e["evidence"] = nlohmann::ordered_json::object();
    for (const auto& [k, v] : f.evidence) {
      auto& slot = e["evidence"][k];
      if (slot.is_null()) {
        slot = evidence_json(v);
      } else {
        if (!slot.is_array()) slot = nlohmann::ordered_json::array({slot});
        slot.push_back(evidence_json(v));
      }
    }
    e["suggested_repair"] = f.suggested_repair;
    out.push_back(std::move(e));
  }
  return out;
}

/// The `summary` object of a report: `records_total`, `records_checked`, `findings` (count),
/// `load_issues` (= `n_issues`, the caller's count of load issues), `by_kind` (count per kind,
/// sorted by kind) and `by_severity` (count per severity present, info to critical).
template <class = void>  // deferred instantiation, see memhealth.hpp
nlohmann::ordered_json summary_json(const report& r, std::size_t n_issues) {
  nlohmann::ordered_json s;
  s["records_total"] = r.records_total;
  s["records_checked"] = r.records_checked;
  s["findings"] = r.findings.size();
  s["load_issues"] = n_issues;
  s["by_kind"] = nlohmann::ordered_json::object();
  for (const auto& [k, n] : r.counts_by_kind()) s["by_kind"][k] = n;
  std::map<severity, std::size_t> sev;
  for (const auto& f : r.findings) ++sev[f.severity];
  s["by_severity"] = nlohmann::ordered_json::object();
  for (const auto& [k, n] : sev) s["by_severity"][std::string(to_string(k))] = n;
  return s;
}

/// Load issues as a JSON array: per issue `field`, `file`, `line` (0 when not line-based),
/// `reason`, `record_kept` (keys sorted, as they have always been written).
template <class = void>  // deferred instantiation, see memhealth.hpp
nlohmann::json load_issues_json(const std::vector<load_issue>& issues) {
  auto a = nlohmann::json::array();
  for (const auto& i : issues)
    a.push_back({{"file", i.file},
                 {"line", i.line},
                 {"field", i.field},
                 {"reason", i.reason},
                 {"record_kept", i.record_kept}});
  return a;
}

/// The document of `memhealth check --format json` (see the file comment): `schema_version` 1,
/// `store` (the name given), `now` (`d.now`, ISO-8601 UTC with milliseconds), `dimension`
/// (`d.dimension` as the run used it), `summary` (with `incremental_since` when `d.since` is
/// set: the findings are about the records changed since then only), `findings`, `load_issues`.
template <class = void>  // deferred instantiation, see memhealth.hpp
nlohmann::ordered_json check_report_json(const report& r, std::string_view store,
                                         const detect_options& d,
                                         const std::vector<load_issue>& issues) {
  nlohmann::ordered_json j;
  j["schema_version"] = 1;
  j["store"] = store;
  j["now"] = format_timestamp(timestamp{d.now, 0});
  j["dimension"] = d.dimension;
  j["summary"] = summary_json(r, issues.size());
  // an incremental run says so: its findings are about the records it checked only
  if (d.since) j["summary"]["incremental_since"] = format_timestamp(timestamp{*d.since, 0});
  j["findings"] = findings_json(r);
  j["load_issues"] = load_issues_json(issues);
  return j;
}

}  // namespace memhealth
