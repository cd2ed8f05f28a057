// Findings as text, shared by every command that reports findings (check, monitor, drift, gate):
// one grouped text layout. Their JSON shape is the library's (memhealth/detect/report_json.hpp).
#pragma once

#include <cstddef>
#include <sstream>
#include <string>
#include <type_traits>
#include <variant>

#include "memhealth/detect/finding.hpp"
#include "memhealth/io/printable.hpp"

namespace memhealth::cli {

/// One evidence value as text (doubles with 4 significant digits).
inline std::string evidence_text(const evidence_value& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>)
          return x;
        else if constexpr (std::is_same_v<T, bool>)
          return x ? "true" : "false";
        else if constexpr (std::is_same_v<T, double>) {
          std::ostringstream s;
          s.precision(4);
          s << x;
          return s.str();
        } else
          return std::to_string(x);
      },
      v);
}

/// Findings grouped by kind ("== kind (n)" sections, or "## kind (n)" in Markdown), at most
/// `per_kind` per kind (then a "... n more" line), at most 6 ids per finding. Ids and evidence
/// with control characters as `\xNN` (`printable`).
inline void grouped_findings_text(std::ostringstream& s, const report& r, bool markdown,
                                  std::size_t per_kind = static_cast<std::size_t>(-1)) {
  for (const auto& [kind, total] : r.counts_by_kind()) {
    s << (markdown ? "\n## " : "\n== ") << kind << " (" << total << ")\n";
    if (markdown) s << "\n";
    std::size_t k = 0;
    for (const auto& f : r.findings) {
      if (f.kind != kind) continue;
      if (k++ == per_kind) {
        s << (markdown ? "- ..." : "  ...") << " " << (total - per_kind)
          << " more (use --format json for all)\n";
        break;
      }
      s << (markdown ? "- **" : "  [") << to_string(f.severity) << (markdown ? "** " : "] ");
      for (std::size_t i = 0; i < f.record_ids.size(); ++i) {
        if (i == 6) {
          s << " +" << (f.record_ids.size() - 6);
          break;
        }
        s << (i ? ", " : "") << (markdown ? "`" : "") << printable(f.record_ids[i])
          << (markdown ? "`" : "");
      }
      if (!f.evidence.empty()) {
        s << " --";
        for (const auto& [ek, ev] : f.evidence)
          s << " " << ek << "=" << printable(evidence_text(ev));
      }
      if (!f.suggested_repair.empty()) s << " -> " << f.suggested_repair;
      s << "\n";
    }
  }
}

}  // namespace memhealth::cli
