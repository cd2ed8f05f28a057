#pragma once
/// @file claims_english_words.hpp
/// Words of the English reader of the claim extractor (claims_english.hpp): the tokenizer, rates
/// ("twice a week"), time numbers, attribute names, terms (WordNet lemmas) and the test for a
/// statement that opens with its verb. Internal (namespace detail::claims); use
/// `default_claim_extractor`.

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memhealth/text/claim.hpp"
#include "memhealth/text/claim_lexicon.hpp"

namespace memhealth::detail::claims {

namespace cw = claim_words;

struct token {
  std::string w;     // lowercase, apostrophes removed
  bool cap = false;  // first letter capitalised in the text
};

// Whether the comma at `i` of `s` separates thousands: a digit before it and exactly three
// digits after it ("1,200", "24,000"; not "3,4" nor "1, 2").
inline bool thousands_comma(sv s, std::size_t i) {
  auto digit = [&](std::size_t k) { return k < s.size() && s[k] >= '0' && s[k] <= '9'; };
  return s[i] == ',' && i > 0 && digit(i - 1) && digit(i + 1) && digit(i + 2) && digit(i + 3) &&
         !digit(i + 4);
}

// Splits a clause into tokens: ASCII letters and digits, with '-' inside a word, ':' and '.'
// between digits, ',' between thousands ("1,200" is 1200); "'s" "'m" "'re" "'ve" "'ll" "'d" split
// off; "n't" kept ("doesnt").
inline std::vector<token> tokenize(sv s) {
  std::vector<token> out;
  std::size_t i = 0;
  auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  while (i < s.size()) {
    if (!alnum(s[i])) {
      ++i;
      continue;
    }
    token t;
    t.cap = s[i] >= 'A' && s[i] <= 'Z';
    std::size_t apos = std::string::npos;
    while (i < s.size()) {
      const char c = s[i];
      if (alnum(c)) {
        t.w.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
        ++i;
      } else if ((c == '-' || c == ':' || c == '.') && i + 1 < s.size() && alnum(s[i + 1]) &&
                 !t.w.empty() &&
                 (c == '-' ||
                  (t.w.back() >= '0' && t.w.back() <= '9' && s[i + 1] >= '0' && s[i + 1] <= '9'))) {
        t.w.push_back(c);
        ++i;
      } else if (c == ',' && thousands_comma(s, i)) {
        ++i;  // "1,200": a thousands separator, one number
      } else if (c == '\'' && i + 1 < s.size() && alnum(s[i + 1]) && !t.w.empty()) {
        apos = t.w.size();
        ++i;
      } else if (static_cast<unsigned char>(c) == 0xE2 && i + 2 < s.size() &&
                 static_cast<unsigned char>(s[i + 1]) == 0x80 &&
                 static_cast<unsigned char>(s[i + 2]) == 0x99 && i + 3 < s.size() &&
                 alnum(s[i + 3]) && !t.w.empty()) {  // U+2019 as an apostrophe
        apos = t.w.size();
        i += 3;
      } else {
        break;
      }
    }
    if (apos != std::string::npos) {
      const std::string tail = t.w.substr(apos);
      if (tail == "t" && t.w.size() > 1) {
        // "doesn't" -> "doesnt" (already joined); "can't" -> "cant"; "won't" -> "wont"
      } else if (tail == "s" || tail == "m" || tail == "re" || tail == "ve" || tail == "ll" ||
                 tail == "d") {
        t.w.resize(apos);
        out.push_back(std::move(t));
        out.push_back(token{tail, false});
        continue;
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}

// The tokens as text again (lowercase, one space between).
inline std::string join(const std::vector<token>& t) {
  std::string s;
  for (const auto& x : t) {
    if (!s.empty()) s.push_back(' ');
    s += x.w;
  }
  return s;
}

// Days in a unit of a rate ("week" 7); -1 when `u` is no unit.
inline double unit_days(sv u) noexcept {
  if (u == "day" || u == "days" || u == "morning" || u == "mornings" || u == "evening" ||
      u == "evenings" || u == "night" || u == "nights" || u == "afternoon" || u == "afternoons")
    return 1;
  if (u == "week" || u == "weeks" || u == "weekend" || u == "weekends") return 7;
  // "every Sunday", "each Monday": once a week
  constexpr sv weekdays[] = {"monday", "tuesday",  "wednesday", "thursday",
                             "friday", "saturday", "sunday"};
  for (const sv d : weekdays)
    if (u == d) return 7;
  if (u == "month" || u == "months") return 30;
  if (u == "year" || u == "years") return 365;
  return -1;
}

// A frequency stated as a rate from token i: "every morning", "each week", "most evenings",
// "once a month", "twice a week", "3 times per day", "several times a day", "six days a week",
// "50 books a year". Returns {times per day, tokens used} or {-1, 0}.
inline std::pair<double, std::size_t> rate_at(const std::vector<token>& t, std::size_t i) {
  const std::size_t n = t.size();
  const sv w = t[i].w;
  if ((w == "every" || w == "each") && i + 1 < n) {
    if (const double d = unit_days(t[i + 1].w); d > 0) return {1.0 / d, 2};
    return {-1, 0};
  }
  if (w == "most" && i + 1 < n) {
    if (const double d = unit_days(t[i + 1].w); d > 0) return {0.7 / d, 2};
    return {-1, 0};
  }
  auto count_of = [&](sv x) -> double {
    if (x == "once") return 1;
    if (x == "twice") return 2;
    if (x == "several" || x == "few") return 3;
    if (all_digits(x)) return std::atof(std::string(x).c_str());
    return number_word(x);
  };
  double count = -1;
  if ((w == "a" || w == "an") && i + 2 < n && t[i + 1].w == "couple")
    count = 2;  // "a couple of times a month"
  else if ((w == "a" || w == "an") && i + 2 < n && t[i + 1].w == "few")
    count = 3;
  else if ((w == "a" || w == "an") && i + 2 < n && t[i + 1].w != "day" && t[i + 1].w != "week")
    count = 1;  // "a litre of water a day"
  else
    count = count_of(w);
  if (count < 0) return {-1, 0};
  // a range: "once or twice a year", "two to three times a week" (the mean of the two)
  if (i + 2 < n && (t[i + 1].w == "or" || t[i + 1].w == "to") && w != "a" && w != "an")
    if (const double high = count_of(t[i + 2].w); high > count) {
      count = (count + high) / 2;
      const auto [rate, used] = rate_at(t, i + 2);
      if (rate >= 0) return {rate * count / high, used + 2};
    }
  // up to three words (times, books, cups of coffee) before "a" / "per" / "each" / "every" + unit
  for (std::size_t k = i + 1; k < n && k <= i + 4; ++k) {
    const sv x = t[k].w;
    if ((x == "a" || x == "an" || x == "per" || x == "each" || x == "every") && k + 1 < n) {
      if (const double d = unit_days(t[k + 1].w); d > 0) return {count / d, k + 2 - i};
      return {-1, 0};
    }
    if (x == "in" || x == "on" || x == "at" || x == "to") return {-1, 0};
  }
  return {-1, 0};
}

inline bool is_time_number(const std::vector<token>& t, std::size_t i) {
  const sv w = t[i].w;
  if (w.find(':') != sv::npos) return true;
  if (w.size() == 4 && (w.starts_with("19") || w.starts_with("20")) && all_digits(w)) return true;
  if (w.ends_with("am") || w.ends_with("pm")) return w.size() > 2 && w[0] >= '0' && w[0] <= '9';
  if (w.ends_with("st") || w.ends_with("nd") || w.ends_with("rd") || w.ends_with("th"))
    return w.size() > 2 && w[0] >= '0' && w[0] <= '9';
  auto month = [](sv m) {
    constexpr sv months[] = {"january", "february", "march",     "april",   "may",      "june",
                             "july",    "august",   "september", "october", "november", "december",
                             "jan",     "feb",      "mar",       "apr",     "jun",      "jul",
                             "aug",     "sep",      "sept",      "oct",     "nov",      "dec"};
    return std::find(std::begin(months), std::end(months), m) != std::end(months);
  };
  if (i + 1 < t.size() && (t[i + 1].w == "am" || t[i + 1].w == "pm" || month(t[i + 1].w)))
    return true;
  if (i > 0 && month(t[i - 1].w)) return true;
  return false;
}

// The month (1-12) an English month name stands for ("march", "sept"); 0 for another word.
inline int english_month(sv m) {
  constexpr sv months[] = {"january", "february", "march",     "april",   "may",      "june",
                           "july",    "august",   "september", "october", "november", "december",
                           "jan",     "feb",      "mar",       "apr",     "",         "jun",
                           "jul",     "aug",      "sep",       "oct",     "nov",      "dec"};
  for (int k = 0; k < 24; ++k)
    if (!months[k].empty() && months[k] == m) return k % 12 + 1;
  return m == "sept" ? 9 : 0;
}

// An English birthday's date as "MM-DD" or "MM" ("born in March" -> "03", "on 12 July" or "on
// July 12th" -> "07-12"); nullopt when no month is named, two are, or a year is given (a year of
// birth is read on its own). The day is a number of 1-31 just before or after the month.
inline std::optional<std::string> english_month_day(const std::vector<token>& t) {
  int month = 0, day = 0;
  auto day_at = [&](std::size_t k) {
    sv w = t[k].w;
    if (w.size() > 2 &&
        (w.ends_with("st") || w.ends_with("nd") || w.ends_with("rd") || w.ends_with("th")))
      w.remove_suffix(2);
    if (w.empty() || w.size() > 2 || !all_digits(w)) return 0;
    const int d = std::atoi(std::string(w).c_str());
    return d >= 1 && d <= 31 ? d : 0;
  };
  for (std::size_t i = 0; i < t.size(); ++i) {
    const sv w = t[i].w;
    if (w.size() == 4 && all_digits(w)) return std::nullopt;
    const int m = english_month(w);
    if (m == 0 || (w == "may" && !(i > 0 && (t[i - 1].w == "in" || day_at(i - 1) > 0))))
      continue;  // ("may" only as "in May" or "12 May")
    if (month != 0) return std::nullopt;
    month = m;
    if (i > 0 && day_at(i - 1) > 0)
      day = day_at(i - 1);
    else if (i > 1 && t[i - 1].w == "of" && day_at(i - 2) > 0)
      day = day_at(i - 2);
    else if (i + 1 < t.size() && day_at(i + 1) > 0)
      day = day_at(i + 1);
  }
  if (month == 0) return std::nullopt;
  // "MM" or "MM-DD" (month 1..12, day 1..31), built by hand: g++ -O3 warns on snprintf's
  // possible truncation (-Wformat-truncation) whatever the bounds above
  auto two = [](int v) {
    return std::string{static_cast<char>('0' + v / 10), static_cast<char>('0' + v % 10)};
  };
  std::string out = two(month);
  if (day > 0) {
    out += '-';
    out += two(day);
  }
  return out;
}

// The canonical name of an attribute (claim_words::attribute_aliases; "favorite" spelled
// "favourite", "color" "colour").
inline std::string canonical_attribute(std::string attr) {
  // modifiers that name no other attribute: "all-time favourite movie", "current employer"
  for (const sv m : {sv("all-time "), sv("alltime "), sv("current "), sv("usual "), sv("present "),
                     sv("absolute ")})
    if (attr.starts_with(m)) attr.erase(0, m.size());
  for (const auto& [alias, name] : cw::attribute_aliases)
    if (attr == alias) return std::string(name);
  for (const auto& [from, to] : {std::pair<sv, sv>{"favorite", "favourite"}, {"color", "colour"}})
    for (std::size_t p = attr.find(from); p != std::string::npos; p = attr.find(from, p + 1))
      attr.replace(p, from.size(), to);
  return attr;
}

// The term for a word: its WordNet lemma (verb first, lemma.hpp's any_lemma); a word WordNet
// does not list (most proper and rare nouns: "peanuts", "podcasts") loses a plural ending by the
// plain English rules, so both sides of a pair agree on it.
inline std::string term_of(const english_lexicon& e, sv w) {
  std::string l = e.any_lemma(w);
  if (l != w) return l;
  for (const auto p : {word_pos::verb, word_pos::noun, word_pos::adj, word_pos::adv})
    if (e.is_lemma(w, p)) return l;
  if (w.size() > 4 && w.ends_with("ies")) return std::string(w.substr(0, w.size() - 3)) + "y";
  if (w.size() > 4 && (w.ends_with("ches") || w.ends_with("shes") || w.ends_with("xes") ||
                       w.ends_with("sses") || w.ends_with("zes")))
    return std::string(w.substr(0, w.size() - 2));
  if (w.size() > 3 && w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") &&
      !w.ends_with("is"))
    return std::string(w.substr(0, w.size() - 1));
  return l;
}

inline bool past_form(const claim_lexicon& lex, sv w, sv lemma) {
  if (lex.en(w) & cw::event) return true;
  return w != lemma && w.size() > 3 && w.ends_with("ed");
}

// A statement that opens with a verb form and no subject ("Eats chicken every day", "Quit
// smoking"): the first word is an inflected verb and the second is none ("Rose loves jazz" has
// the name Rose).
inline bool subjectless_verb(const english_lexicon& e, const std::vector<token>& t) {
  if (t.size() < 2) return false;
  auto inflected = [&](sv w) {
    const std::string v = e.lemma(w, word_pos::verb);
    return v != w && e.is_lemma(v, word_pos::verb);
  };
  return inflected(t[0].w) && !inflected(t[1].w);
}

}  // namespace memhealth::detail::claims
