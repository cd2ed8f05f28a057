#pragma once
/// @file run_history.hpp
/// Health figures that span runs (issue 21, item 5), computed from a findings history: the
/// check runs of a store (when, whether every detector ran over every record, and how many
/// error or critical findings were open after it) and the faults repairs addressed (the
/// finding's identity, `finding_key`, and when it was repaired). The state database keeps both
/// (`sqlite_state::note_history_run`, `note_repaired_faults`; `memhealth watch` and `memhealth
/// apply` write them); this header only computes, so it needs no SQLite. The identity of a
/// finding across runs (`finding_key`) and the findings an action addressed are in
/// repair/finding_identity.hpp.
///
/// **Repair success** is "the same fault did not come back", not "not detected right after
/// apply". A repaired fault is judged against a `recurrence_window` (N days and/or N later full
/// runs):
/// - *recurred*: a run after the repair found the same `finding_key` again (at any time before
///   the window closed; a recurrence seen while the window is still open counts at once);
/// - *held*: the window has closed (the days have passed **and** the full runs have happened)
///   and no run inside it found the fault;
/// - *too early to say*: neither yet. Such faults are never counted as successes: the success
///   rate is held / (held + recurred), over the faults whose verdict is known.
///
/// **Uptime** over a window [from, to]: the share of time without an open error or critical
/// finding, and the share of full runs after which none was open. The store's state between two
/// recorded runs is the state the earlier one left (a step function); before the first recorded
/// run nothing is known, so the measured time starts at the later of `from` and the last run at
/// or before `from` (when there is none: the first run inside the window).
///
/// Worked example (a test asserts it): full runs at 0, 10, 24, 30, 50, 60, 72, 90, 100 and 110 h,
/// an error open after the runs at 24 h and 30 h only; over [0 h, 120 h] the error is open from
/// 24 h to 50 h (26 h of 120 h), so uptime is 94 / 120 = 78.33 % of the time and 8 / 10 = 80 %
/// of the runs.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "memhealth/record/time.hpp"

namespace memhealth {

/// One check run in the findings history.
struct history_run {
  utc_time at{};                ///< when it ran (UTC)
  bool full = false;            ///< every detector over every record (counts as a run)
  std::size_t open_errors = 0;  ///< error or critical findings open after it
};

/// A fault a repair addressed, and whether it came back.
struct repaired_fault {
  std::string finding_key;  ///< `finding_key` of the finding the repair addressed
  std::string kind;         ///< its finding kind
  std::string action_key;   ///< idempotency key of the repair action
  utc_time repaired_at{};   ///< when the repair was applied
  /// The first run after `repaired_at` that found the same `finding_key` (nullopt: none yet).
  std::optional<utc_time> recurred_at;
};

/// How long a repaired fault must stay away to count as held: `span` of time **and** `runs`
/// full runs after the repair (0 disables either; both 0 would decide at once, so the defaults
/// are 7 days and no run count).
struct recurrence_window {
  std::chrono::milliseconds span{std::chrono::days{7}};  ///< time after the repair (>= 0)
  std::size_t runs = 0;                                  ///< full runs after the repair
};

/// The verdict on one repaired fault.
enum class repair_verdict : std::uint8_t {
  held,       ///< the window closed without the fault coming back
  recurred,   ///< the fault came back within the window
  too_early,  ///< the window is still open and the fault has not come back
};

/// Text of a verdict: "held", "recurred", "too early to say".
constexpr std::string_view to_string(repair_verdict v) noexcept {
  switch (v) {
    case repair_verdict::held:
      return "held";
    case repair_verdict::recurred:
      return "recurred";
    case repair_verdict::too_early:
      return "too early to say";
  }
  return "too early to say";
}

/// When the window of a fault repaired at `repaired_at` closes, given the full runs of the
/// history (any order): the later of `repaired_at + span` and the time of the `runs`-th full run
/// after `repaired_at`; nullopt when fewer full runs than `runs` have happened yet.
inline std::optional<utc_time> window_close(utc_time repaired_at,
                                            const std::vector<history_run>& runs,
                                            const recurrence_window& w) {
  utc_time close = repaired_at + w.span;
  if (w.runs > 0) {
    std::vector<utc_time> after;
    for (const auto& r : runs)
      if (r.full && r.at > repaired_at) after.push_back(r.at);
    if (after.size() < w.runs) return std::nullopt;
    std::nth_element(after.begin(), after.begin() + static_cast<std::ptrdiff_t>(w.runs - 1),
                     after.end());
    close = std::max(close, after[w.runs - 1]);
  }
  return close;
}

/// The verdict on fault `f` at `now` (see the file comment): recurred when it came back before
/// its window closed (or before `now` while the window is open); held when the window closed at
/// or before `now` without it; else too early.
inline repair_verdict judge_repair(const repaired_fault& f, const std::vector<history_run>& runs,
                                   const recurrence_window& w, utc_time now) {
  const std::optional<utc_time> close = window_close(f.repaired_at, runs, w);
  const bool closed = close && *close <= now;
  if (f.recurred_at && *f.recurred_at > f.repaired_at && *f.recurred_at <= now &&
      (!closed || *f.recurred_at <= *close))
    return repair_verdict::recurred;
  return closed ? repair_verdict::held : repair_verdict::too_early;
}

/// Repair success over a set of repaired faults.
struct repair_success_figures {
  std::size_t repaired = 0;   ///< faults repaired
  std::size_t held = 0;       ///< of them, held
  std::size_t recurred = 0;   ///< recurred
  std::size_t too_early = 0;  ///< too early to say (never counted as a success)
  /// held / (held + recurred); nullopt when no verdict is known yet.
  std::optional<double> success_rate;
  recurrence_window window{};  ///< the window judged against
};

/// Judges every fault of `faults` at `now` and counts the verdicts.
inline repair_success_figures repair_success(const std::vector<repaired_fault>& faults,
                                             const std::vector<history_run>& runs,
                                             const recurrence_window& w, utc_time now) {
  repair_success_figures s;
  s.window = w;
  for (const auto& f : faults) {
    ++s.repaired;
    switch (judge_repair(f, runs, w, now)) {
      case repair_verdict::held:
        ++s.held;
        break;
      case repair_verdict::recurred:
        ++s.recurred;
        break;
      case repair_verdict::too_early:
        ++s.too_early;
        break;
    }
  }
  if (s.held + s.recurred > 0)
    s.success_rate = static_cast<double>(s.held) / static_cast<double>(s.held + s.recurred);
  return s;
}

/// Uptime over a window (see the file comment).
struct uptime_figures {
  utc_time from{}, to{};                  ///< the window asked for
  utc_time measured_from{};               ///< where the measured time starts (see the file comment)
  std::chrono::milliseconds measured{0};  ///< time with a known state in the window
  std::chrono::milliseconds clean{0};     ///< of it, without an open error or critical finding
  std::size_t runs = 0;                   ///< full runs in the window
  std::size_t clean_runs = 0;             ///< of them, with no error or critical finding open after
  std::optional<double> time_share;       ///< clean / measured; nullopt when nothing was measured
  std::optional<double> run_share;        ///< clean_runs / runs; nullopt without full runs
};

/// Uptime of the history `runs` (any order) over [from, to]. A run at exactly `from` or `to`
/// is inside the window. @pre from <= to (else nothing is measured).
inline uptime_figures uptime(std::vector<history_run> runs, utc_time from, utc_time to) {
  std::stable_sort(runs.begin(), runs.end(),
                   [](const history_run& a, const history_run& b) { return a.at < b.at; });
  uptime_figures u;
  u.from = from;
  u.to = to;
  if (!(from <= to)) return u;
  std::optional<bool> dirty;  // the state in force (unknown before the first run)
  std::optional<utc_time> start;
  utc_time t = from;
  const auto advance = [&](utc_time until) {
    if (!dirty) return;
    if (!start) start = t;
    u.measured += until - t;
    if (!*dirty) u.clean += until - t;
  };
  for (const auto& r : runs) {
    if (r.at > to) break;
    if (r.at < from) {  // before the window: only its state carries over
      dirty = r.open_errors > 0;
      continue;
    }
    advance(r.at);
    t = r.at;
    dirty = r.open_errors > 0;
    if (r.full) {
      ++u.runs;
      u.clean_runs += r.open_errors == 0;
    }
  }
  advance(to);
  u.measured_from = start.value_or(to);
  if (u.measured.count() > 0)
    u.time_share = static_cast<double>(u.clean.count()) / static_cast<double>(u.measured.count());
  if (u.runs > 0) u.run_share = static_cast<double>(u.clean_runs) / static_cast<double>(u.runs);
  return u;
}

/// The figures that span runs, as the audit report shows them (`audit_report::history`).
struct run_history_figures {
  std::string store;                     ///< the store they are about (its history scope)
  repair_success_figures repair;         ///< repair success by recurrence
  uptime_figures uptime;                 ///< uptime over the window
  std::vector<repaired_fault> faults;    ///< the repaired faults judged (newest first)
  std::vector<repair_verdict> verdicts;  ///< the verdict of each, same order
};

/// Computes `run_history_figures` at `now`: repair success over `faults` and uptime over
/// [now - uptime_window, now].
inline run_history_figures history_figures(std::string store, std::vector<repaired_fault> faults,
                                           const std::vector<history_run>& runs,
                                           const recurrence_window& w,
                                           std::chrono::milliseconds uptime_window, utc_time now) {
  run_history_figures h;
  h.store = std::move(store);
  std::stable_sort(faults.begin(), faults.end(),
                   [](const repaired_fault& a, const repaired_fault& b) {
                     return a.repaired_at > b.repaired_at;
                   });
  h.repair = repair_success(faults, runs, w, now);
  for (const auto& f : faults) h.verdicts.push_back(judge_repair(f, runs, w, now));
  h.faults = std::move(faults);
  h.uptime = uptime(runs, now - uptime_window, now);
  return h;
}

}  // namespace memhealth
