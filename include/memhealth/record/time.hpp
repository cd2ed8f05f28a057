#pragma once
/// @file time.hpp
/// UTC instants for record timestamps: parsing ISO-8601 text with any UTC offset (or integer
/// epoch milliseconds) into one instant, and canonical formatting back.
///
/// Every comparison in memhealth is on the UTC instant, never on the text: "2024-01-01T09:00+08:00"
/// is earlier than "2024-01-01T02:00Z" although it sorts later as a string (a fault SPEC section 5
/// names). The offset the text was written with is kept next to the instant so a record can be
/// written back as it came and so the repair planner can normalise it to UTC explicitly.

#include <charconv>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace memhealth {

/// A UTC instant with millisecond precision (milliseconds since 1970-01-01T00:00:00Z).
using utc_time = std::chrono::sys_time<std::chrono::milliseconds>;

/// A record timestamp: the UTC instant plus the UTC offset it was written with.
///
/// Equality and ordering use the instant only. `utc_offset` is in minutes east of UTC
/// (+08:00 -> 480, -07:00 -> -420, Z or epoch milliseconds -> 0).
struct timestamp {
  utc_time instant{};                   ///< the UTC instant (ms precision)
  std::int16_t utc_offset_minutes = 0;  ///< offset of the original text, minutes east of UTC

  friend constexpr bool operator==(const timestamp& a, const timestamp& b) noexcept {
    return a.instant == b.instant;
  }
  friend constexpr auto operator<=>(const timestamp& a, const timestamp& b) noexcept {
    return a.instant <=> b.instant;
  }
  /// True when the original text carried a non-zero UTC offset (a local time).
  [[nodiscard]] constexpr bool is_local() const noexcept { return utc_offset_minutes != 0; }
};

/// Builds a UTC timestamp (offset 0) from any `std::chrono::sys_time`; sub-millisecond parts
/// are truncated toward negative infinity.
template <class Duration>
constexpr timestamp make_timestamp(std::chrono::sys_time<Duration> t) noexcept {
  return timestamp{std::chrono::floor<std::chrono::milliseconds>(t), 0};
}

/// Builds a UTC timestamp from integer epoch milliseconds.
constexpr timestamp timestamp_from_epoch_ms(std::int64_t ms) noexcept {
  return timestamp{utc_time{std::chrono::milliseconds{ms}}, 0};
}

/// Epoch milliseconds of a timestamp's instant.
constexpr std::int64_t epoch_ms(const timestamp& t) noexcept {
  return t.instant.time_since_epoch().count();
}

namespace detail {
inline bool parse_fixed_digits(std::string_view s, std::size_t pos, std::size_t n,
                               int& out) noexcept {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (std::size_t i = pos; i < pos + n; ++i) {
    const char c = s[i];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  out = v;
  return true;
}
}  // namespace detail

/// Parses an ISO-8601 / RFC 3339 date-time into a timestamp.
///
/// Accepted: `YYYY-MM-DD`, `YYYY-MM-DDTHH:MM`, `YYYY-MM-DDTHH:MM:SS`, optional fraction
/// `.f` to `.fffffffff` (truncated to milliseconds), the separator `T`, `t` or a space, and an
/// optional zone `Z`, `z`, `+HH:MM`, `-HH:MM`, `+HHMM` or `+HH`. Without a zone the time is taken
/// as UTC. Leap second 60 is accepted and folded to 59.999.
/// @return the timestamp, or `std::nullopt` when the text is not such a date-time or a field is
///         out of range (month 13, day 31 in April, hour 25, offset beyond +-18:00).
/// @complexity O(length of text); never throws, never allocates.
inline std::optional<timestamp> parse_timestamp(std::string_view s) noexcept {
  using namespace std::chrono;
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0, ms = 0;
  if (!detail::parse_fixed_digits(s, 0, 4, y) || s.size() < 10 || s[4] != '-' || s[7] != '-' ||
      !detail::parse_fixed_digits(s, 5, 2, mo) || !detail::parse_fixed_digits(s, 8, 2, d))
    return std::nullopt;
  const year_month_day ymd{year{y}, month{static_cast<unsigned>(mo)},
                           day{static_cast<unsigned>(d)}};
  if (!ymd.ok()) return std::nullopt;
  std::size_t p = 10;
  int offset = 0;
  if (p < s.size()) {
    if (s[p] != 'T' && s[p] != 't' && s[p] != ' ') return std::nullopt;
    ++p;
    if (!detail::parse_fixed_digits(s, p, 2, h) || p + 2 >= s.size() || s[p + 2] != ':' ||
        !detail::parse_fixed_digits(s, p + 3, 2, mi))
      return std::nullopt;
    p += 5;
    if (p < s.size() && s[p] == ':') {
      if (!detail::parse_fixed_digits(s, p + 1, 2, sec)) return std::nullopt;
      p += 3;
      if (p < s.size() && (s[p] == '.' || s[p] == ',')) {
        ++p;
        int digits = 0;
        while (p < s.size() && s[p] >= '0' && s[p] <= '9') {
          if (digits < 3) ms = ms * 10 + (s[p] - '0');
          ++digits;
          ++p;
        }
        if (digits == 0 || digits > 9) return std::nullopt;
        for (int k = digits; k < 3; ++k) ms *= 10;
      }
    }
    if (h > 23 || mi > 59 || sec > 60) return std::nullopt;
    if (sec == 60) {
      sec = 59;
      ms = 999;
    }
    if (p < s.size()) {
      const char z = s[p];
      if ((z == 'Z' || z == 'z') && p + 1 == s.size()) {
        p += 1;
      } else if (z == '+' || z == '-') {
        int oh = 0, om = 0;
        if (!detail::parse_fixed_digits(s, p + 1, 2, oh)) return std::nullopt;
        std::size_t q = p + 3;
        if (q < s.size()) {
          if (s[q] == ':') ++q;
          if (!detail::parse_fixed_digits(s, q, 2, om)) return std::nullopt;
          q += 2;
        }
        if (q != s.size() || oh > 18 || om > 59 || oh * 60 + om > 18 * 60) return std::nullopt;
        offset = (z == '-' ? -1 : 1) * (oh * 60 + om);
        p = q;
      } else {
        return std::nullopt;
      }
    }
  }
  if (p != s.size()) return std::nullopt;
  const auto local = sys_days{ymd} + hours{h} + minutes{mi} + seconds{sec} + milliseconds{ms};
  return timestamp{local - minutes{offset}, static_cast<std::int16_t>(offset)};
}

/// Formats a timestamp canonically as ISO-8601 with milliseconds in the offset it was written
/// with: `2024-03-01T09:30:00.000Z` for offset 0, `2024-03-01T17:30:00.000+08:00` otherwise.
/// `parse_timestamp(format_timestamp(t))` gives back the same instant and offset.
inline std::string format_timestamp(const timestamp& t) {
  using namespace std::chrono;
  const auto local = t.instant + minutes{t.utc_offset_minutes};
  const auto day_point = floor<days>(local);
  const year_month_day ymd{day_point};
  auto rest = local - day_point;
  const auto h = duration_cast<hours>(rest);
  rest -= h;
  const auto m = duration_cast<minutes>(rest);
  rest -= m;
  const auto s = duration_cast<seconds>(rest);
  rest -= s;
  char buf[40] = {};
  char* e = buf;
  auto put = [&e](long v, int width) {
    char tmp[16] = {};
    auto r = std::to_chars(tmp, tmp + sizeof tmp, v < 0 ? -v : v);
    const int len = static_cast<int>(r.ptr - tmp);
    if (v < 0) *e++ = '-';
    for (int i = len; i < width; ++i) *e++ = '0';
    for (int i = 0; i < len; ++i) *e++ = tmp[i];
  };
  put(static_cast<int>(ymd.year()), 4);
  *e++ = '-';
  put(static_cast<long>(static_cast<unsigned>(ymd.month())), 2);
  *e++ = '-';
  put(static_cast<long>(static_cast<unsigned>(ymd.day())), 2);
  *e++ = 'T';
  put(h.count(), 2);
  *e++ = ':';
  put(m.count(), 2);
  *e++ = ':';
  put(static_cast<long>(s.count()), 2);
  *e++ = '.';
  put(static_cast<long>(rest.count()), 3);
  if (t.utc_offset_minutes == 0) {
    *e++ = 'Z';
  } else {
    const int off = t.utc_offset_minutes;
    *e++ = off < 0 ? '-' : '+';
    const int a = off < 0 ? -off : off;
    put(a / 60, 2);
    *e++ = ':';
    put(a % 60, 2);
  }
  return std::string(buf, e);
}

}  // namespace memhealth
