// Findings as JSON and text, shared by every command that reports findings (check, monitor,
// drift, gate): one JSON shape (docs/cli.md, "JSON output") and one grouped text layout.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <map>
#include <sstream>
#include <string>
#include <type_traits>
#include <variant>

#include "memhealth/detect/finding.hpp"

namespace memhealth::cli {

/// One evidence value as JSON (string, number, integer or boolean).
inline nlohmann::ordered_json evidence_json(const evidence_value& v) {
  return std::visit([](const auto& x) { return nlohmann::ordered_json(x); }, v);
}

/// One evidence value as text (doubles with 4 significant digits).
inline std::string evidence_text(const evidence_value& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) return x;
        else if constexpr (std::is_same_v<T, bool>) return x ? "true" : "false";
        else if constexpr (std::is_same_v<T, double>) {
          std::ostringstream s;
          s.precision(4);
          s << x;
          return s.str();
        } else return std::to_string(x);
      },
      v);
}

/// The `findings` array: kind, severity, detector, record_ids, evidence (a key given more than
/// once becomes an array), suggested_repair.
inline nlohmann::ordered_json findings_json(const report& r) {
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

/// The `summary` object: records_total, records_checked, findings, load_issues, by_kind,
/// by_severity.
inline nlohmann::ordered_json summary_json(const report& r, std::size_t n_issues) {
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

/// Findings grouped by kind ("== kind (n)" sections, or "## kind (n)" in Markdown), at most
/// `per_kind` per kind (then a "... n more" line), at most 6 ids per finding.
inline void grouped_findings_text(std::ostringstream& s, const report& r, bool markdown,
                                  std::size_t per_kind = static_cast<std::size_t>(-1)) {
  for (const auto& [kind, total] : r.counts_by_kind()) {
    s << (markdown ? "\n## " : "\n== ") << kind << " (" << total << ")\n";
    if (markdown) s << "\n";
    std::size_t k = 0;
    for (const auto& f : r.findings) {
      if (f.kind != kind) continue;
      if (k++ == per_kind) {
        s << (markdown ? "- ..." : "  ...") << " " << (total - per_kind) << " more (use --format json for all)\n";
        break;
      }
      s << (markdown ? "- **" : "  [") << to_string(f.severity) << (markdown ? "** " : "] ");
      for (std::size_t i = 0; i < f.record_ids.size(); ++i) {
        if (i == 6) {
          s << " +" << (f.record_ids.size() - 6);
          break;
        }
        s << (i ? ", " : "") << (markdown ? "`" : "") << f.record_ids[i] << (markdown ? "`" : "");
      }
      if (!f.evidence.empty()) {
        s << " --";
        for (const auto& [ek, ev] : f.evidence) s << " " << ek << "=" << evidence_text(ev);
      }
      if (!f.suggested_repair.empty()) s << " -> " << f.suggested_repair;
      s << "\n";
    }
  }
}

}  // namespace memhealth::cli
