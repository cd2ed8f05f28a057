#pragma once
/// @file finding_identity.hpp
/// A finding's identity across runs (`finding_key`) and the findings a repair action addressed
/// (`findings_addressed`): the keys under which the watch reports findings and the findings
/// history (store/run_history.hpp) keeps repaired faults.

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "memhealth/detect/finding.hpp"
#include "memhealth/repair/action.hpp"

namespace memhealth {

/// The identity of a finding across runs: detector, kind, the sorted record ids and the string
/// evidence that tells two findings of the same records apart (field, scope, partition,
/// window_start, reference_version, current_version), joined with U+001F. The watch keys its
/// reported findings by it, and the findings history its repaired faults.
inline std::string finding_key(const finding& f) {
  std::vector<std::string> ids = f.record_ids;
  std::sort(ids.begin(), ids.end());
  std::string k = f.detector + '\x1f' + f.kind;
  for (const auto& id : ids) k += '\x1f' + id;
  static constexpr std::string_view keyed[] = {
      "field", "scope", "partition", "window_start", "reference_version", "current_version"};
  for (const auto& [name, v] : f.evidence)
    if (std::find(std::begin(keyed), std::end(keyed), name) != std::end(keyed))
      if (const auto* s = std::get_if<std::string>(&v)) k += '\x1f' + name + '=' + *s;
  return k;
}

/// The findings of `findings` that action `a` addresses: those whose planner reason ("kind: id id
/// (detector)", the text `make_plan` puts in `repair_action::reasons`) is one of the action's
/// reasons, or starts one followed by a space (" -> target", " problem=..."). A finding without
/// a detector name may match one of more records that starts with its ids (the planner's text
/// cannot tell them apart); every detector of memhealth names itself. @return indices into
/// `findings`, ascending.
inline std::vector<std::size_t> findings_addressed(const repair_action& a,
                                                   const std::vector<finding>& findings) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < findings.size(); ++i) {
    const finding& f = findings[i];
    // the planner's text of a finding (`detail::reason_of`, repair/plan_steps.hpp): its kind, at
    // most 16 ids separated by spaces, and its detector
    std::string reason = f.kind + ": ";
    for (std::size_t k = 0; k < f.record_ids.size() && k < 16; ++k) {
      if (k) reason += ' ';
      reason += f.record_ids[k];
    }
    if (f.record_ids.size() > 16)
      reason += " ... (" + std::to_string(f.record_ids.size()) + " ids)";
    if (!f.detector.empty()) reason += " (" + f.detector + ")";
    for (const auto& r : a.reasons)
      if (r.starts_with(reason) && (r.size() == reason.size() || r[reason.size()] == ' ')) {
        out.push_back(i);
        break;
      }
  }
  return out;
}

}  // namespace memhealth
