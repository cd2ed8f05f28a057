// The values of the tool's numeric and duration options: one strict grammar and one message shape
// for every option of every subcommand.
//
// CLI11 alone converts an integer with strtoll(base 0) ("0x10" is 16, "010" is 8, "-5" wraps in an
// unsigned option) and a floating-point value with strtold ("0x1p3", "inf", "nan", " 0.9" pass),
// and its Range prints bounds with std::to_string (300 digits for a double's maximum). The
// validators here run before that conversion (as CLI11 transforms), refuse anything but the plain
// form, and hand CLI11 a canonical text it converts exactly. A refused value is a
// CLI::ValidationError (exit 2) whose message has one shape everywhere:
//
//   <option>: '<value>' is not <what> <allowed range> (<form>)
//   --batch: '0x10' is not a whole number from 1 to 100000 (decimal digits only)
//   --rate: '-1' is not a number from 0 to 1000000000 (plain decimal notation, e.g. 0.5)
//   --max-wait: '-5s' is not a duration (a whole number and a unit: 90s, 10m, 12h, 7d, 2w)
#pragma once

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>

#include <CLI/CLI.hpp>

namespace memhealth::cli {

/// Parses "90s", "30m", "12h", "7d", "2w" (decimal digits, then one unit letter) into
/// milliseconds. @return nullopt for anything else: a sign, a space, another unit, no digits, or
/// a count whose milliseconds would not fit in half the range of int64 (no wrap).
inline std::optional<std::chrono::milliseconds> parse_duration(std::string_view s) {
  if (s.size() < 2 || s.size() > 21) return std::nullopt;
  const std::string_view digits = s.substr(0, s.size() - 1);
  if (digits.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
  std::int64_t ms_per = 0;
  switch (s.back()) {
    case 's':
      ms_per = 1000;
      break;
    case 'm':
      ms_per = 60'000;
      break;
    case 'h':
      ms_per = 3'600'000;
      break;
    case 'd':
      ms_per = 86'400'000;
      break;
    case 'w':
      ms_per = 604'800'000;
      break;
    default:
      return std::nullopt;
  }
  std::int64_t n = 0;
  const auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc{} || p != digits.data() + digits.size()) return std::nullopt;
  // a count whose milliseconds do not fit (e.g. 999999999999d) is no duration, not a wrap
  if (n > std::numeric_limits<std::int64_t>::max() / ms_per / 2) return std::nullopt;
  return std::chrono::milliseconds{n * ms_per};
}

/// Parses a whole number written in decimal digits only (no sign, space, "0x" or other prefix,
/// no separator; leading zeros allowed and ignored). @return nullopt for anything else, and for a
/// value beyond `std::uint64_t`.
inline std::optional<std::uint64_t> parse_whole_number(std::string_view s) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
  std::uint64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size()) return std::nullopt;
  return v;
}

/// Parses a plain decimal number: an optional leading '-' (only when `negative` is true), decimal
/// digits with at most one point ("2", "0.5", ".5", "5."), and an optional exponent ("1e-3",
/// "2E+2"). @return nullopt for anything else (a leading '+' or space, hexadecimal "0x1p3",
/// "inf", "nan", a comma, trailing text) and for a value beyond `double` (e.g. "1e999").
inline std::optional<double> parse_plain_decimal(std::string_view s, bool negative) {
  if (s.empty() || s.find_first_not_of("0123456789.eE+-") != std::string_view::npos)
    return std::nullopt;
  if (s.front() == '-' && !negative) return std::nullopt;
  double v = 0;
  const auto [p, ec] =
      std::from_chars(s.data(), s.data() + s.size(), v, std::chars_format::general);
  if (ec != std::errc{} || p != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

namespace detail {

/// A bound as it is printed: a whole value without a point or exponent ("1000000000", "-1"),
/// any other in the shortest form that reads back exactly ("0.1").
inline std::string bound_text(double v) {
  if (std::abs(v) < 1e15 && v == std::floor(v)) {
    std::ostringstream s;
    s << static_cast<std::int64_t>(v);
    return s.str();
  }
  char buf[64];
  const auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc{} ? std::string(buf, p) : std::string("?");
}

/// "'<value>' is not <what> (<form>)": the message of every refused option value (CLI11 puts the
/// option's name and ": " before it).
inline std::string refusal(const std::string& value, const std::string& what, const char* form) {
  return "'" + value + "' is not " + what + " (" + form + ")";
}

inline constexpr const char* whole_form = "decimal digits only";
inline constexpr const char* decimal_form = "plain decimal notation, e.g. 0.5";
inline constexpr const char* duration_form = "a whole number and a unit: 90s, 10m, 12h, 7d, 2w";

}  // namespace detail

/// Validator (use with `->transform(...)`) of an integer option: decimal digits only, from `min`
/// to `max` inclusive (`max` = the largest uint64: no upper bound). The value is rewritten
/// without leading zeros, so CLI11's base-0 conversion never reads "010" as octal. Refused, as
/// CLI::ValidationError (exit 2): "-5" (CLI11 would wrap it to a huge unsigned value), "5x",
/// "abc", "0x10", "+5", " 5", "", and a value outside the range, all with one message:
/// "<option>: '<value>' is not a whole number from 1 to 100000 (decimal digits only)" (or
/// ">= 0" without an upper bound). `max` must not exceed the option's type.
inline CLI::Validator whole_number(std::uint64_t min = 0,
                                   std::uint64_t max = std::numeric_limits<std::uint64_t>::max()) {
  const std::string what =
      max == std::numeric_limits<std::uint64_t>::max()
          ? "a whole number >= " + std::to_string(min)
          : "a whole number from " + std::to_string(min) + " to " + std::to_string(max);
  CLI::Validator v(
      [min, max, what](std::string& s) -> std::string {
        const auto n = parse_whole_number(s);
        if (!n || *n < min || *n > max) return detail::refusal(s, what, detail::whole_form);
        s = std::to_string(*n);
        return {};
      },
      max == std::numeric_limits<std::uint64_t>::max()
          ? ">= " + std::to_string(min)
          : std::to_string(min) + ".." + std::to_string(max),
      "whole_number");
  return v;
}

/// Which ends of a `real_number` range are excluded.
enum class open_ends {
  none,  ///< [lo, hi]
  low,   ///< (lo, hi]
  high,  ///< [lo, hi)
  both,  ///< (lo, hi)
};

/// Validator (use with `->transform(...)`) of a floating-point option: a plain decimal number
/// (`parse_plain_decimal`; a leading '-' only when `lo` < 0) within `lo` .. `hi`, ends excluded as
/// `ends` says; an infinite `lo` or `hi` is no bound on that side (the value is always finite).
/// Refused, as CLI::ValidationError (exit 2), with one message: "<option>: 'nan' is not a number
/// from -1 to 1 (plain decimal notation, e.g. 0.5)" (">= 0", "> 0 and <= 1" and the like).
inline CLI::Validator real_number(double lo, double hi, open_ends ends = open_ends::none) {
  const bool lo_open = ends == open_ends::low || ends == open_ends::both;
  const bool hi_open = ends == open_ends::high || ends == open_ends::both;
  const bool has_lo = std::isfinite(lo), has_hi = std::isfinite(hi);
  std::string range;
  if (has_lo && has_hi && !lo_open && !hi_open)
    range = "from " + detail::bound_text(lo) + " to " + detail::bound_text(hi);
  else {
    if (has_lo) range = (lo_open ? "> " : ">= ") + detail::bound_text(lo);
    if (has_hi)
      range += (range.empty() ? "" : " and ") + std::string(hi_open ? "< " : "<= ") +
               detail::bound_text(hi);
  }
  const std::string what = range.empty() ? "a number" : "a number " + range;
  // the help's hint: an interval ("[0, 1]", "(0, 1]") or a one-sided bound (">= 0")
  std::string hint = range.empty() ? std::string("number") : range;
  if (has_lo && has_hi)
    hint = std::string(lo_open ? "(" : "[") + detail::bound_text(lo) + ", " +
           detail::bound_text(hi) + (hi_open ? ")" : "]");
  CLI::Validator v(
      [=](std::string& s) -> std::string {
        const auto x = parse_plain_decimal(s, !has_lo || lo < 0);
        const bool in = x && (!has_lo || (lo_open ? *x > lo : *x >= lo)) &&
                        (!has_hi || (hi_open ? *x < hi : *x <= hi));
        if (!in) return detail::refusal(s, what, detail::decimal_form);
        return {};
      },
      hint, "real_number");
  return v;
}

/// Validator (use with `->transform(...)`) of a duration option: `parse_duration`'s form
/// (decimal digits and one unit letter s, m, h, d, w), and > 0 when `positive`. `allow_empty`
/// lets "" through for options where it means "none" (--window, --older-than). Refused, as
/// CLI::ValidationError (exit 2), with one message: "<option>: '-5s' is not a duration (a whole
/// number and a unit: 90s, 10m, 12h, 7d, 2w)" ("a duration > 0" when `positive`).
inline CLI::Validator duration(bool positive = false, bool allow_empty = false) {
  const std::string what = positive ? "a duration > 0" : "a duration";
  CLI::Validator v(
      [=](std::string& s) -> std::string {
        if (s.empty() && allow_empty) return {};
        const auto d = parse_duration(s);
        if (!d || (positive && d->count() <= 0))
          return detail::refusal(s, what, detail::duration_form);
        return {};
      },
      positive ? "DURATION > 0" : "DURATION", "duration");
  return v;
}

}  // namespace memhealth::cli
