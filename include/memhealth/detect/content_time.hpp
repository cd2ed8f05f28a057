#pragma once
/// @file content_time.hpp
/// Detector "content_time": a date written in a memory's content that its own created_at
/// contradicts (SPEC section 6, "Hygiene"), e.g. a record created on 2025-01-10 that says
/// "we visited Kyoto on 2025-03-14" (a past event after the record existed: a wrong created_at,
/// a back-filled import, or a date the extractor invented).
///
/// ## Dates read
/// `find_content_dates` reads absolute calendar dates only: ISO "2025-03-14" (also "2025/03/14",
/// "2025.03.14"), "March 14, 2025" / "Mar 14th 2025", "14 March 2025" / "14th of March, 2025",
/// and "2025年3月14日" (日 or 号). Years 1900..2199; impossible dates (Feb 30) and dates inside
/// URLs or longer numbers are skipped. Relative words (yesterday, 昨天, last week) are not
/// checkable and are ignored.
///
/// ## When a date is a finding (conservative)
/// The record's day is created_at's calendar day in the offset it was written with.
/// - `today_mismatch`: the date directly follows "today is", "today's date is", "今天是", "今天",
///   "今日は", "hoy es" or "heute ist", and differs from the record's day by more than
///   `today_tolerance_days` (default 1: time zones).
/// - `past_event_after_creation`: the date is more than `future_tolerance_days` (default 1) after
///   the record's day, and its sentence has a completed-event marker (went, visited, was, did,
///   attended, ...; 已经, 去了, 参加了, verb + 了; ました) and no marker of a plan or schedule
///   (will, plan, scheduled, booked, due, deadline, until, next, moved to, ...; 要, 将, 计划,
///   打算, 预定, 截止, 明天, ...). "Has a flight on 2027-01-05" and "booked a table for
///   2027-01-05" are plans, not findings.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memhealth/detect/finding.hpp"
#include "memhealth/record/time.hpp"
#include "memhealth/record/traits.hpp"

namespace memhealth {

/// A calendar date found in text and its byte span.
struct content_date {
  std::chrono::sys_days day{};  ///< the date
  std::size_t begin = 0;        ///< first byte of the date text
  std::size_t end = 0;          ///< one past its last byte
};

namespace detail::content_time {

inline bool digit(char c) noexcept {
  return c >= '0' && c <= '9';
}
inline bool alpha(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
inline char lower(char c) noexcept {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c;
}

// Reads 1..max digits at i; returns the count read.
inline std::size_t number(std::string_view s, std::size_t i, std::size_t max, int& v) noexcept {
  std::size_t n = 0;
  v = 0;
  while (i + n < s.size() && n < max && digit(s[i + n])) v = v * 10 + (s[i + n++] - '0');
  if (i + n < s.size() && digit(s[i + n])) return 0;  // longer number
  return n;
}

inline std::optional<std::chrono::sys_days> make_day(int y, int m, int d) noexcept {
  if (y < 1900 || y > 2199) return std::nullopt;
  const std::chrono::year_month_day ymd{std::chrono::year{y},
                                        std::chrono::month{static_cast<unsigned>(m)},
                                        std::chrono::day{static_cast<unsigned>(d)}};
  if (!ymd.ok()) return std::nullopt;
  return std::chrono::sys_days{ymd};
}

// Month at i (full or 3-4 letter abbreviation, case-insensitive, a whole word); its length.
inline std::size_t month_at(std::string_view s, std::size_t i, int& month) noexcept {
  static constexpr std::array<std::string_view, 12> names{
      "january", "february", "march",     "april",   "may",      "june",
      "july",    "august",   "september", "october", "november", "december"};
  if (i > 0 && alpha(s[i - 1])) return 0;
  std::size_t n = 0;
  while (i + n < s.size() && alpha(s[i + n])) ++n;
  if (n < 3) return 0;
  std::string w(s.substr(i, n));
  for (auto& c : w) c = lower(c);
  if (w == "sept") w = "sep";
  for (std::size_t k = 0; k < names.size(); ++k)
    if (w == names[k] || (w.size() == 3 && names[k].substr(0, 3) == w)) {
      month = static_cast<int>(k) + 1;
      std::size_t len = n;
      if (i + len < s.size() && s[i + len] == '.') ++len;  // "Mar."
      return len;
    }
  return 0;
}

inline std::size_t spaces(std::string_view s, std::size_t i) noexcept {
  while (i < s.size() && s[i] == ' ') ++i;
  return i;
}

// Day number with an optional ordinal suffix (14th, 1st, 2nd, 3rd); returns the end or npos.
inline std::size_t day_at(std::string_view s, std::size_t i, int& d) noexcept {
  const std::size_t n = number(s, i, 2, d);
  if (n == 0 || (i > 0 && (digit(s[i - 1]) || alpha(s[i - 1])))) return std::string_view::npos;
  std::size_t j = i + n;
  for (std::string_view suf : {"st", "nd", "rd", "th"})
    if (s.substr(j, 2) == suf && (j + 2 >= s.size() || !alpha(s[j + 2]))) {
      j += 2;
      break;
    }
  if (j < s.size() && alpha(s[j])) return std::string_view::npos;
  return j;
}

}  // namespace detail::content_time

/// Every absolute date in `text` (formats in the file comment), in text order.
/// @complexity O(|text|).
inline std::vector<content_date> find_content_dates(std::string_view s) {
  namespace dc = detail::content_time;
  std::vector<content_date> out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (dc::digit(s[i]) && (i == 0 || (!dc::digit(s[i - 1]) && !dc::alpha(s[i - 1]) &&
                                       s[i - 1] != '/' && s[i - 1] != '-' && s[i - 1] != '.'))) {
      int y = 0, m = 0, d = 0;
      // ISO and y/m/d
      if (dc::number(s, i, 4, y) == 4 && i + 4 < s.size() &&
          (s[i + 4] == '-' || s[i + 4] == '/' || s[i + 4] == '.')) {
        const char sep = s[i + 4];
        const std::size_t mn = dc::number(s, i + 5, 2, m);
        if (mn && i + 5 + mn < s.size() && s[i + 5 + mn] == sep) {
          const std::size_t dn = dc::number(s, i + 6 + mn, 2, d);
          const std::size_t e = i + 6 + mn + dn;
          const bool time_follows = e + 1 < s.size() && s[e] == 'T' && dc::digit(s[e + 1]);
          if (dn && (e >= s.size() || time_follows || (!dc::alpha(s[e]) && s[e] != sep)))
            if (auto day = dc::make_day(y, m, d)) {
              out.push_back({*day, i, e});
              i = e - 1;
              continue;
            }
        }
      }
      // 2025年3月14日
      if (dc::number(s, i, 4, y) == 4 && s.substr(i + 4, 3) == "年") {
        std::size_t j = i + 7;
        const std::size_t mn = dc::number(s, j, 2, m);
        if (mn && s.substr(j + mn, 3) == "月") {
          j += mn + 3;
          const std::size_t dn = dc::number(s, j, 2, d);
          if (dn && (s.substr(j + dn, 3) == "日" || s.substr(j + dn, 3) == "号"))
            if (auto day = dc::make_day(y, m, d)) {
              out.push_back({*day, i, j + dn + 3});
              i = j + dn + 2;
              continue;
            }
        }
      }
      // 14 March 2025, 14th of March, 2025
      if (std::size_t j = dc::day_at(s, i, d); j != std::string_view::npos) {
        j = dc::spaces(s, j);
        if (s.substr(j, 3) == "of ") j = dc::spaces(s, j + 3);
        if (std::size_t ml = dc::month_at(s, j, m)) {
          std::size_t k = j + ml;
          if (k < s.size() && s[k] == ',') ++k;
          k = dc::spaces(s, k);
          if (dc::number(s, k, 4, y) == 4)
            if (auto day = dc::make_day(y, m, d)) {
              out.push_back({*day, i, k + 4});
              i = k + 3;
              continue;
            }
        }
      }
    }
    // March 14, 2025
    if (dc::alpha(s[i])) {
      int m = 0, d = 0, y = 0;
      if (std::size_t ml = dc::month_at(s, i, m)) {
        std::size_t j = dc::spaces(s, i + ml);
        if (j > i + ml || (j < s.size() && dc::digit(s[j])))
          if (std::size_t k = dc::day_at(s, j, d); k != std::string_view::npos) {
            if (k < s.size() && s[k] == ',') ++k;
            k = dc::spaces(s, k);
            if (dc::number(s, k, 4, y) == 4)
              if (auto day = dc::make_day(y, m, d)) {
                out.push_back({*day, i, k + 4});
                i = k + 3;
                continue;
              }
          }
        while (i + 1 < s.size() && dc::alpha(s[i + 1])) ++i;
      }
    }
  }
  return out;
}

namespace detail::content_time {

inline constexpr std::string_view today_cues[] = {
    "today is", "today's date is", "today’s date is", "today's date", "date today is", "今天是",
    "今天",     "今日は",          "hoy es",          "heute ist"};

inline constexpr std::string_view past_words[] = {
    "went",      "visited", "was",      "were",      "did",       "had",        "attended",
    "met",       "moved",   "bought",   "finished",  "completed", "returned",   "arrived",
    "flew",      "ate",     "saw",      "graduated", "married",   "celebrated", "traveled",
    "travelled", "got",     "left",     "started",   "began",     "joined",     "quit",
    "adopted",   "hosted",  "won",      "lost",      "spent",     "took",       "gave",
    "paid",      "sold",    "happened", "ended",     "passed",    "received",   "signed",
    "watched",   "ran",     "hiked",    "stayed"};
inline constexpr std::string_view past_cjk[] = {"已经",   "去了",   "去过",  "参加了", "完成了",
                                                "买了",   "见了",   "到了",  "回了",   "结束了",
                                                "毕业了", "ました", "でした"};
inline constexpr std::string_view plan_words[] = {
    "will",     "'ll",       "going to",    "gonna",     "plan",     "plans",    "planned",
    "planning", "scheduled", "rescheduled", "postponed", "moved to", "pushed",   "delayed",
    "upcoming", "next",      "booked",      "reserved",  "due",      "deadline", "until",
    "till",     "by",        "expires",     "expire",    "expiry",   "valid",    "starting",
    "starts",   "begins",    "intend",      "intends",   "hope",     "hopes",    "want",
    "wants",    "would",     "should",      "must",      "need",     "remind",   "before"};
inline constexpr std::string_view plan_cjk[] = {
    "要去", "要在", "将要", "将会", "会去", "会在",   "需要", "计划", "打算", "准备",
    "预定", "预订", "预计", "安排", "下周", "下个月", "明天", "明年", "截止", "到期",
    "之前", "推迟", "改到", "改期", "订了", "约了",   "想去", "想要", "提醒"};

// Whole-word, case-insensitive search for an ASCII word or phrase.
inline bool has_word(std::string_view s, std::string_view w) noexcept {
  for (std::size_t i = 0; i + w.size() <= s.size(); ++i) {
    bool eq = true;
    for (std::size_t k = 0; k < w.size() && eq; ++k) eq = lower(s[i + k]) == w[k];
    if (!eq) continue;
    const bool before = i == 0 || !alpha(s[i - 1]) || !alpha(w.front());
    const bool after = i + w.size() == s.size() || !alpha(s[i + w.size()]);
    if (before && after) return true;
  }
  return false;
}

// "了" after a verb, except in 为了 / 除了 / 了解 / 了不起 / 受不了.
inline bool has_le(std::string_view s) noexcept {
  for (std::size_t i = s.find("了"); i != std::string_view::npos; i = s.find("了", i + 1)) {
    if (i < 3) continue;
    const auto prev = s.substr(i - 3, 3);
    if (prev == "为" || prev == "除" || prev == "不") continue;
    if (s.substr(i + 3, 3) == "解" || s.substr(i + 3, 3) == "不") continue;
    return true;
  }
  return false;
}

// The sentence around [b, e): from the previous terminator to the next one.
inline std::string_view sentence(std::string_view s, std::size_t b, std::size_t e) noexcept {
  auto term = [&](std::size_t i) {
    const char c = s[i];
    if (c == '!' || c == '?' || c == '\n' || c == ';') return true;
    if (c == '.') return i + 1 == s.size() || s[i + 1] == ' ';
    return false;
  };
  std::size_t lo = b;
  while (lo > 0 && !term(lo - 1)) {
    if (lo >= 3 && (s.substr(lo - 3, 3) == "。" || s.substr(lo - 3, 3) == "！" ||
                    s.substr(lo - 3, 3) == "？" || s.substr(lo - 3, 3) == "；"))
      break;
    --lo;
  }
  std::size_t hi = e;
  while (hi < s.size() && !term(hi)) {
    if (s.substr(hi, 3) == "。" || s.substr(hi, 3) == "！" || s.substr(hi, 3) == "？" ||
        s.substr(hi, 3) == "；")
      break;
    ++hi;
  }
  return s.substr(lo, hi - lo);
}

inline std::string iso_day(std::chrono::sys_days d) {
  return format_timestamp(timestamp{std::chrono::time_point_cast<std::chrono::milliseconds>(
                                        std::chrono::sys_time<std::chrono::milliseconds>(d)),
                                    0})
      .substr(0, 10);
}

}  // namespace detail::content_time

/// One contradiction between a content date and the record's day.
struct content_time_issue {
  std::string_view rule;        ///< "today_mismatch" or "past_event_after_creation"
  content_date date;            ///< the date in the content
  std::int64_t days_after = 0;  ///< content date minus the record's day, in days
};

/// Settings of `check_content_time`.
struct content_time_options {
  int today_tolerance_days = 1;   ///< "today is DATE" may differ from the record's day by this
  int future_tolerance_days = 1;  ///< a past event may be dated this many days after it
  bool today_rule = true;         ///< check "today is DATE"
  bool past_event_rule = true;    ///< check past events dated after the record's day
};

/// The contradictions between `text`'s dates and `record_day` (see the file comment).
/// @complexity O(|text| x cue words).
inline std::vector<content_time_issue> check_content_time(std::string_view text,
                                                          std::chrono::sys_days record_day,
                                                          const content_time_options& o = {}) {
  namespace dc = detail::content_time;
  std::vector<content_time_issue> out;
  for (const auto& d : find_content_dates(text)) {
    const std::int64_t diff = (d.day - record_day).count();
    if (o.today_rule) {
      std::size_t b = d.begin;
      while (b > 0 && (text[b - 1] == ' ' || text[b - 1] == ':' || text[b - 1] == ',')) --b;
      if (b >= 3 && text.substr(b - 3, 3) == "：") b -= 3;
      bool today = false;
      for (auto cue : dc::today_cues) {
        if (b < cue.size()) continue;
        bool eq = true;
        for (std::size_t k = 0; k < cue.size() && eq; ++k)
          eq = dc::lower(text[b - cue.size() + k]) == cue[k];
        today = today || eq;
      }
      if (today) {
        if (diff > o.today_tolerance_days || diff < -o.today_tolerance_days)
          out.push_back({"today_mismatch", d, diff});
        continue;
      }
    }
    if (!o.past_event_rule || diff <= o.future_tolerance_days) continue;
    const auto sent = dc::sentence(text, d.begin, d.end);
    bool plan = false;
    for (auto w : dc::plan_words) plan = plan || dc::has_word(sent, w);
    for (auto w : dc::plan_cjk) plan = plan || sent.find(w) != std::string_view::npos;
    if (plan) continue;
    bool past = dc::has_le(sent);
    for (auto w : dc::past_words) past = past || dc::has_word(sent, w);
    for (auto w : dc::past_cjk) past = past || sent.find(w) != std::string_view::npos;
    if (past) out.push_back({"past_event_after_creation", d, diff});
  }
  return out;
}

/// Detector "content_time": emits `content_time_mismatch` (severity warning, repair
/// "manual_review") with record_ids {id} and evidence `rule`, `date` (the content's date,
/// YYYY-MM-DD), `record_day` (created_at's day in its own offset) and `days_after` (integer) of
/// the first contradiction, then `count`. One finding per record.
///
/// Needs created_at on the record type; without it (or for a record without created_at) the
/// detector reports nothing. Changed records only. @complexity O(total content length).
struct content_time_detector {
  static constexpr std::string_view name = "content_time";
  bool enabled = true;             ///< false: the detector reports nothing
  content_time_options options{};  ///< tolerances and rules

  /// Appends content_time_mismatch findings; never mutates the store.
  template <class Ctx>
  void run(Ctx& ctx, std::vector<finding>& out) const {
    using R = typename Ctx::record_type;
    MEMHEALTH_REQUIRE_CAPABILITY(basic_record, R, "content_time_detector", "id, content");
    if constexpr (detail::field_created_at::available<const R>) {
      if (!enabled) return;
      const auto& store = ctx.store();
      for (std::size_t i = 0; i < store.size(); ++i) {
        if (!ctx.is_changed(i)) continue;
        const R& r = store.record(i);
        const std::optional<timestamp> created = field::created_at(r);
        if (!created) continue;
        const auto local = created->instant + std::chrono::minutes{created->utc_offset_minutes};
        const auto day = std::chrono::floor<std::chrono::days>(local);
        const auto issues = check_content_time(field::content(r), day, options);
        if (issues.empty()) continue;
        finding f;
        f.kind = std::string(finding_kinds::content_time_mismatch);
        f.severity = severity::warning;
        f.detector = std::string(name);
        f.record_ids = {std::string(field::id(r))};
        f.with("rule", std::string(issues.front().rule));
        f.with("date", detail::content_time::iso_day(issues.front().date.day));
        f.with("record_day", detail::content_time::iso_day(day));
        f.with("days_after", issues.front().days_after);
        f.with(evidence_keys::count, static_cast<std::int64_t>(issues.size()));
        f.suggested_repair = "manual_review";
        out.push_back(std::move(f));
      }
    }
  }
};

}  // namespace memhealth
