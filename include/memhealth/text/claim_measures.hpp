#pragma once
/// @file claim_measures.hpp
/// Numeric attribute values read from memory statements, in one unit each, so that two ways of
/// stating one fact compare: a height in centimetres ("5 ft 6 in", "185 cm", "一米六",
/// "175厘米"), a weight in kilograms ("70 kg", "154 lb", "120斤"), a birth year or a range of
/// them ("born in 1985", "1985年出生", "85后" = 1985-1989, "90后" = 1990-1999), and a
/// Chinese birthday as month and day ("五月二十号" -> "05-20"). Values are written as text
/// ("185", "1985..1989", "05-20") into `text_claim::value`; `claim_rules` compares them
/// numerically (claim_judge.hpp).
/// Internal (namespace detail::claims); use `default_claim_extractor`.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "memhealth/text/claim.hpp"
#include "memhealth/text/claims_english_words.hpp"

namespace memhealth::detail::claims {

/// A measured attribute and its value in the attribute's unit ("height", cm; "weight", kg).
struct measure {
  std::string attribute;
  double value = 0;
};

/// The number a token states (digits, "5'6" not included), or -1.
inline double token_number(sv w) noexcept {
  if (!all_digits(w)) return number_word(w);
  std::string s(w);
  s.erase(std::remove(s.begin(), s.end(), ','), s.end());
  return std::atof(s.c_str());
}

/// A height or weight stated in one English clause: "is 5 ft 6 in tall", "is 185 cm", "is
/// 1.85 m tall", "stands 6 ft 2 in", "weighs 70 kg", "weighs 154 pounds". Needs a cue for the
/// attribute ("tall", "height", "stands", "weigh", "weight") so that "ran 5 km" is no height.
/// @return nullopt when none.
inline std::optional<measure> english_measure(const std::vector<token>& t) {
  bool tall = false, heavy = false;
  for (const auto& x : t) {
    // ("stands 6 ft 2 in": a person standing a length high)
    tall = tall || x.w == "tall" || x.w == "height" || x.w == "stands" || x.w == "stood";
    heavy = heavy || x.w == "weigh" || x.w == "weighs" || x.w == "weight" || x.w == "weighed";
  }
  if (!tall && !heavy) return std::nullopt;
  double cm = 0, kg = 0;
  bool length = false, mass = false;
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    const double v = token_number(t[i].w);
    if (v < 0) continue;
    const sv u = t[i + 1].w;
    if (u == "cm" || u == "centimetres" || u == "centimeters") {
      cm += v, length = true;
    } else if (u == "m" || u == "metres" || u == "meters" || u == "metre" || u == "meter") {
      cm += v * 100, length = true;
    } else if (u == "ft" || u == "feet" || u == "foot") {
      cm += v * 30.48, length = true;
    } else if ((u == "in" || u == "inches" || u == "inch") && length) {
      cm += v * 2.54;  // ("5 ft 6 in": inches after feet; "in" alone is a preposition)
    } else if (u == "kg" || u == "kilos" || u == "kilograms" || u == "kilo") {
      kg += v, mass = true;
    } else if (u == "lb" || u == "lbs" || u == "pounds") {
      kg += v * 0.45359237, mass = true;
    } else if (u == "stone" && !mass) {
      kg += v * 6.35029318, mass = true;
    }
  }
  if (tall && length && cm > 30 && cm < 260) return measure{"height", cm};
  if (heavy && mass && kg > 2 && kg < 400) return measure{"weight", kg};
  return std::nullopt;
}

/// Minutes in an English unit of a length of time ("minutes" 1, "hours" 60), or -1. Days and
/// longer are left out: "a day" is mostly a rate ("a pack a day").
inline double minutes_in(sv u) noexcept {
  if (u == "minute" || u == "minutes" || u == "min" || u == "mins") return 1;
  if (u == "hour" || u == "hours" || u == "hr" || u == "hrs") return 60;
  return -1;
}

/// A length of time stated in an English clause, in minutes: "10 minutes", "an hour", "over an
/// hour", "an hour and a half", "half an hour", "1.5 hours", "a ten-minute walk". A unit after
/// a number or a frequency word is a rate, not a length ("$20 an hour", "twice an hour").
/// @return nullopt when the clause states none, or more than one.
inline std::optional<double> english_duration(const std::vector<token>& t) {
  double total = -1;
  int found = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const sv w = t[i].w;
    if (const std::size_t dash = w.find('-'); dash != sv::npos && dash > 0) {
      // "ten-minute", "10-minute", "two-hour"
      const double n = token_number(w.substr(0, dash)), u = minutes_in(w.substr(dash + 1));
      if (n > 0 && u > 0) total = n * u, ++found;
      continue;
    }
    if (w == "half" && i + 2 < t.size() && (t[i + 1].w == "an" || t[i + 1].w == "a") &&
        minutes_in(t[i + 2].w) > 0) {
      total = 0.5 * minutes_in(t[i + 2].w), ++found;  // "half an hour"
      i += 2;
      continue;
    }
    double n = token_number(w);
    if ((w == "a" || w == "an") &&
        !(i > 0 && (token_number(t[i - 1].w) >= 0 || t[i - 1].w == "once" ||
                    t[i - 1].w == "twice" || t[i - 1].w == "times" || t[i - 1].w == "per")))
      n = 1;
    if (n <= 0 || i + 1 >= t.size()) continue;
    const double u = minutes_in(t[i + 1].w);
    if (u < 0) continue;
    total = n * u, ++found;
    i += 1;
    if (i + 3 < t.size() && t[i + 1].w == "and" && t[i + 2].w == "a" && t[i + 3].w == "half") {
      total += 0.5 * u;  // "an hour and a half"
      i += 3;
    }
  }
  if (found != 1) return std::nullopt;
  return total;
}

/// A Chinese number at byte `i` of `s`: digits ("175", "1.85", "4万") or numerals with 十, 百,
/// 千 and 万 ("六", "十二", "二十", "两", "一百六十", "一百零五", "八千", "四万"; a last numeral
/// right after 百, 千 or 万 is the next place down: "两千五" 2500, "一万二" 12000). Two numerals in
/// a row end the number ("七五" reads 七: the caller reads decimals one numeral at a time).
/// @return {value, bytes read}; {-1, 0} when there is none.
inline std::pair<double, std::size_t> chinese_number_at(sv s, std::size_t i) {
  auto unit = [&](std::size_t at) -> double {
    if (at + 3 > s.size()) return 0;
    const sv ch = s.substr(at, 3);
    return ch == "十" ? 10 : ch == "百" ? 100 : ch == "千" ? 1000 : ch == "万" ? 10000 : 0;
  };
  if (i < s.size() && s[i] >= '0' && s[i] <= '9') {
    std::size_t k = i;
    while (k < s.size() && ((s[k] >= '0' && s[k] <= '9') || s[k] == '.')) ++k;
    double v = std::atof(std::string(s.substr(i, k - i)).c_str());
    if (const double u = unit(k); u >= 1000) v *= u, k += 3;  // "4万", "8千"
    return {v, k - i};
  }
  constexpr sv digits[] = {"零", "一", "二", "三", "四", "五", "六", "七", "八", "九"};
  auto digit = [&](std::size_t at) -> int {
    if (at + 3 > s.size()) return -1;
    const sv ch = s.substr(at, 3);
    if (ch == "两") return 2;
    for (int d = 0; d < 10; ++d)
      if (ch == digits[d]) return d;
    return -1;
  };
  std::size_t k = i;
  double total = 0, section = 0, last_unit = 0;
  int pending = -1;  // a numeral not yet multiplied by a unit
  bool any = false, zero = false;
  while (k + 3 <= s.size()) {
    if (const int d = digit(k); d >= 0) {
      if (pending >= 0) break;  // two numerals in a row: the number ends at the first
      if (d == 0) {             // "一百零五": a place left empty
        if (!any) break;
        zero = true;
        k += 3;
        continue;
      }
      pending = d;
      any = true;
      k += 3;
      continue;
    }
    const double u = unit(k);
    if (u == 0) break;
    if (u == 10000) {
      if (!any) break;
      total = (total + section + std::max(pending, 0)) * 10000;
      section = 0;
    } else {
      if (pending < 0 && !(u == 10 && (!any || zero))) break;  // 十 alone is 10, 百 alone none
      section += (pending < 0 ? 1 : pending) * u;
    }
    pending = -1;
    zero = false;
    any = true;
    last_unit = u;
    k += 3;
  }
  if (!any) return {-1, 0};
  if (zero && pending < 0) k -= 3;  // a trailing 零 is not part of the number
  // a last numeral right after 百, 千 or 万 is the next place down ("两千五" 2500, "一万二"
  // 12000, "三百五" 350); after 零 it is units ("一千零五" 1005)
  if (pending > 0 && !zero && last_unit >= 100)
    return {total + section + pending * last_unit / 10, k - i};
  return {total + section + std::max(pending, 0), k - i};
}

/// A height or weight stated in a Chinese clause: "身高175厘米", "身高一米六" (1.6 m), "一米七五"
/// (1.75 m), "身高1.8米", "体重60公斤", "体重120斤" (60 kg). @return nullopt when none.
inline std::optional<measure> chinese_measure(sv s) {
  for (const auto& [cue, attribute] :
       {std::pair<sv, sv>{"身高", "height"}, {"个子", "height"}, {"体重", "weight"}}) {
    const std::size_t at = find_text(s, cue);
    if (at == sv::npos) continue;
    std::size_t i = at + cue.size();
    for (sv skip : {sv("是"), sv("有"), sv("大概"), sv("大约"), sv("约")})
      if (s.substr(i).starts_with(skip)) i += skip.size();
    const auto [v, used] = chinese_number_at(s, i);
    if (v < 0) continue;
    i += used;
    const sv rest = s.substr(i);
    double value = -1;
    if (attribute == "height") {
      if (rest.starts_with("厘米") || rest.starts_with("cm") || rest.starts_with("公分")) {
        value = v;
      } else if (rest.starts_with("米") || rest.starts_with("m")) {
        value = v * 100;
        // "一米六" = 1.6 m, "一米七五" = 1.75 m: the digits after 米 are decimals
        std::size_t k = i + (rest.starts_with("米") ? 3 : 1);
        double scale = 10;
        for (auto [d, l] = chinese_number_at(s, k); d >= 0 && d < 10 && l == 3;
             std::tie(d, l) = chinese_number_at(s, k)) {
          value += d * scale;
          scale /= 10;
          k += l;
        }
      }
      if (value > 30 && value < 260) return measure{std::string(attribute), value};
    } else {
      if (rest.starts_with("公斤") || rest.starts_with("kg") || rest.starts_with("千克"))
        value = v;
      else if (rest.starts_with("斤"))
        value = v / 2;
      if (value > 2 && value < 400) return measure{std::string(attribute), value};
    }
  }
  return std::nullopt;
}

/// A measure's value as text: a whole number ("185", "70").
inline std::string measure_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

/// A birth year range from "85后" / "90后" / "00后" (a cohort: 1985-1989, 1990-1999, 2000-2009)
/// or "1985年出生" / "出生于1985年" / "生于1985年" / "一九八五年出生" in a Chinese clause, as
/// "1985..1989" or "1985"; nullopt when none.
inline std::optional<std::string> chinese_birth_year(sv s) {
  for (std::size_t p = find_text(s, "后"); p != sv::npos; p = find_text(s, "后", p + 3)) {
    if (p < 2 || !(s[p - 1] >= '0' && s[p - 1] <= '9' && s[p - 2] >= '0' && s[p - 2] <= '9'))
      continue;
    if (p >= 3 && s[p - 3] >= '0' && s[p - 3] <= '9') continue;  // "1985后" is no cohort
    const int yy = (s[p - 2] - '0') * 10 + (s[p - 1] - '0');
    const int from = yy >= 30 ? 1900 + yy : 2000 + yy;
    const int to = from + (yy % 10 == 0 ? 9 : 4);
    return std::to_string(from) + ".." + std::to_string(to);
  }
  if (find_text(s, "出生") == sv::npos && find_text(s, "生于") == sv::npos) return std::nullopt;
  for (std::size_t p = find_text(s, "年"); p != sv::npos; p = find_text(s, "年", p + 3)) {
    if (p >= 4 && all_digits(s.substr(p - 4, 4)) && (s[p - 4] == '1' || s[p - 4] == '2'))
      return std::string(s.substr(p - 4, 4));
    // General rule: four Chinese digits read one by one are a year too ("一九八五年出生" is
    // 1985, "二〇〇一年出生" 2001)
    if (p >= 12) {
      constexpr sv digits[] = {"〇", "一", "二", "三", "四", "五", "六", "七", "八", "九"};
      std::string year;
      for (std::size_t q = p - 12; q < p; q += 3) {
        const sv d = s.substr(q, 3);
        for (std::size_t k = 0; k < std::size(digits); ++k)
          if (d == digits[k] || (k == 0 && d == "零")) year += static_cast<char>('0' + k);
      }
      if (year.size() == 4 && (year[0] == '1' || year[0] == '2')) return year;
    }
  }
  return std::nullopt;
}

/// A Chinese date of a birthday as "MM-DD" or "MM" ("五月二十号", "5月20日", "十月"); nullopt when
/// no month is given.
inline std::optional<std::string> chinese_month_day(sv v) {
  const std::size_t m = find_text(v, "月");
  if (m == sv::npos) return std::nullopt;
  // the month: the number just before 月 (one or two numerals, or digits)
  double month = -1;
  for (std::size_t back = 1; back <= 6 && back <= m; ++back) {
    const auto [n, used] = chinese_number_at(v, m - back);
    if (n >= 1 && n <= 12 && used == back) month = n;
  }
  if (month < 0) return std::nullopt;
  char buf[16];
  const auto [day, used] = chinese_number_at(v, m + 3);
  if (day >= 1 && day <= 31 && used > 0)
    std::snprintf(buf, sizeof buf, "%02d-%02d", static_cast<int>(month), static_cast<int>(day));
  else
    std::snprintf(buf, sizeof buf, "%02d", static_cast<int>(month));
  return std::string(buf);
}

}  // namespace memhealth::detail::claims
