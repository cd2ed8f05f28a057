#pragma once
/// @file finding.hpp
/// Findings: what detectors report. Bad data is a finding, never an exception.
///
/// A finding has a `kind` from the fixed vocabulary in `finding_kinds` (user detectors may add
/// their own kinds), a `severity`, the `detector` that raised it, the `record_ids` involved,
/// `evidence` (named scores, field names and values) and a `suggested_repair`.

#include <boost/container/flat_map.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "memhealth/detect/vocabulary.hpp"

namespace memhealth {

/// How bad a finding is. Ordering: info < warning < error < critical.
enum class severity : std::uint8_t {
  info,      ///< worth knowing; no action needed
  warning,   ///< degrades quality (duplicates, staleness); repair recommended
  error,     ///< wrong data (conflicts, broken vectors, dangling links)
  critical,  ///< a leak or corruption that must stop the line (scope leaks, duplicate ids)
};

/// Text of a severity: "info", "warning", "error", "critical".
constexpr std::string_view to_string(severity s) noexcept {
  switch (s) {
    case severity::info:
      return "info";
    case severity::warning:
      return "warning";
    case severity::error:
      return "error";
    case severity::critical:
      return "critical";
  }
  return "";
}

/// Parses a severity name. @return nullopt for unknown text.
constexpr std::optional<severity> parse_severity(std::string_view s) noexcept {
  if (s == "info") return severity::info;
  if (s == "warning") return severity::warning;
  if (s == "error") return severity::error;
  if (s == "critical") return severity::critical;
  return std::nullopt;
}

/// One evidence value: a number, an integer, text or a flag.
using evidence_value = std::variant<double, std::int64_t, std::string, bool>;

/// Named evidence attached to a finding, in insertion order (e.g. {"cosine", 0.97},
/// {"field", "updated_at"}).
using evidence_list = std::vector<std::pair<std::string, evidence_value>>;

/// One anomaly found by a detector.
struct finding {
  std::string kind;  ///< from `finding_kinds` (or a user detector's own kind)
  memhealth::severity severity = memhealth::severity::warning;  ///< how bad
  std::string detector;                 ///< name of the detector that raised it
  std::vector<std::string> record_ids;  ///< records involved (a cluster lists its primary first)
  evidence_list evidence;               ///< scores, field names, values
  std::string suggested_repair;  ///< repair action name, e.g. "merge_duplicates"; may be empty

  /// Appends one evidence entry; returns *this for chaining.
  finding& with(std::string_view key, evidence_value v) {
    evidence.emplace_back(std::string(key), std::move(v));
    return *this;
  }
  /// The first evidence value with this key, or nullptr.
  [[nodiscard]] const evidence_value* evidence_of(std::string_view key) const noexcept {
    for (const auto& [k, v] : evidence)
      if (k == key) return &v;
    return nullptr;
  }
};

/// The result of a detection run: all findings in detector order, and counts by kind.
struct report {
  std::vector<finding> findings;    ///< every finding, in the order detectors emitted them
  std::size_t records_checked = 0;  ///< records in the store (full run) or changed (incremental)
  std::size_t records_total = 0;    ///< records in the store

  /// Number of findings per kind, sorted by kind.
  [[nodiscard]] boost::container::flat_map<std::string, std::size_t> counts_by_kind() const {
    boost::container::flat_map<std::string, std::size_t> m;
    for (const auto& f : findings) ++m[f.kind];
    return m;
  }
  /// Number of findings of a kind.
  [[nodiscard]] std::size_t count(std::string_view kind) const noexcept {
    std::size_t n = 0;
    for (const auto& f : findings) n += f.kind == kind;
    return n;
  }
  /// True when some finding has severity >= s.
  [[nodiscard]] bool has_at_least(memhealth::severity s) const noexcept {
    for (const auto& f : findings)
      if (f.severity >= s) return true;
    return false;
  }
};

}  // namespace memhealth
