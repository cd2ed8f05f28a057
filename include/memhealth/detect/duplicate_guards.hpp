#pragma once
/// @file duplicate_guards.hpp
/// Duplicate guards: text tests that keep a near-duplicate pair (similar vectors, similar words)
/// from being merged when the two texts say different things. A merge keeps one record and
/// archives the other, so a pair that only *looks* alike must never be one; such pairs are left
/// to the conflict detector or to nobody. Each guard looks at the two normalised texts
/// (normalize.hpp) and nothing else:
///
/// - **numbers differ** (`duplicate_guard::numbers_differ`): the multisets of quantity tokens
///   differ. Quantity tokens are words holding a digit ("3", "9am", "2024"; with the sign,
///   currency, '%' and separators the normaliser keeps, and the non-ASCII symbols written against
///   them: "$5000" / "€5000" / "£5000", "-5" / "5", "5%" / "5", "5,000" / "5.000"), English number,
///   month and weekday words (one ... twenty, thirty ... hundred, once, twice, half, dozen;
///   january ... december and their short forms, with "may" only next to a number; monday ...
///   sunday), and Chinese numerals and weekday forms (零一二三四五六七八九十两百千万半, 周X,
///   星期X). "dentist on 3 may" / "dentist on 5 may", "two spoons" / "three spoons", "每周二" /
///   "每周四" are not duplicates;
/// - **roles swapped** (`duplicate_guard::role_swap`): after the longest common prefix and
///   suffix of the token sequences (English words; Chinese one token per character) the two
///   middles are X S Y and Y S X with X, S, Y non-empty and X != Y: "prefers tea over coffee" /
///   "prefers coffee over tea", "anna gave ben a book" / "ben gave anna a book",
///   "我喜欢茶胜过咖啡" / "我喜欢咖啡胜过茶". A phrase moved to the front with nothing kept
///   between ("in the morning user drinks coffee") is not a swap;
/// - **opposite polarity** (`duplicate_guard::polarity`): one text states a liking (like, love,
///   enjoy, adore, prefer, fond, favourite; 喜欢, 爱, 热爱, 喜爱, 偏爱) and the other an aversion
///   (dislike, hate, detest, loathe, avoid, can't stand, despise; 讨厌, 厌恶, 受不了, 反感,
///   不喜欢, 不爱): "loves jazz" / "hates jazz". Negation and change cues ("not", "no longer",
///   不再) are the duplicate detector's `skip_negation_mismatch`; a pair the conflict judge calls
///   a conflict is its `skip_judged_conflicts`.
///
/// - **different holders** (`duplicate_guard::holder`, `holder_guard`): the claims read from the
///   two texts (claims.hpp) are held by different people: the user and a relative ("User's son
///   plays soccer every Saturday" / "User plays soccer every Saturday", 用户的儿子 / 用户), two
///   named people, a person and a pet. This guard needs the claim readings, so the duplicate
///   detector applies it with them; `near_duplicate_guard` (texts only) does not.
///
/// The guards are deliberately one-sided: they may keep a true duplicate apart ("drinks two
/// coffees a day" / "has 2 cups of coffee daily" differ in tokens), which costs a missed merge;
/// they must not let a pair through that differs in a number, a role or a polarity, which would
/// cost a record. Measured on tests/data/judge_pairs (tests/detect_semantic_test.cpp).

#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "memhealth/text/claim.hpp"

namespace memhealth {

/// Why a near-duplicate pair was kept apart (`none`: no guard applies).
enum class duplicate_guard : std::uint8_t { none, numbers_differ, role_swap, polarity, holder };

/// Text of a guard: "none", "numbers_differ", "role_swap", "polarity", "holder".
constexpr std::string_view to_string(duplicate_guard g) noexcept {
  constexpr std::string_view names[] = {"none", "numbers_differ", "role_swap", "polarity",
                                        "holder"};
  return names[static_cast<int>(g)];
}

namespace detail::guard {

using sv = std::string_view;

// Tokens of a normalised text: space-separated words, and each non-ASCII code point of a word
// (Chinese has no spaces) as a token of its own. Views into `text`.
inline std::vector<sv> tokens(sv text) {
  std::vector<sv> out;
  std::size_t i = 0;
  while (i < text.size()) {
    if (text[i] == ' ') {
      ++i;
      continue;
    }
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      std::size_t j = i;
      while (j < text.size() && text[j] != ' ' && static_cast<unsigned char>(text[j]) < 0x80) ++j;
      out.push_back(text.substr(i, j - i));
      i = j;
    } else {
      std::size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
      len = std::min(len, text.size() - i);
      out.push_back(text.substr(i, len));
      i += len;
    }
  }
  return out;
}

template <std::size_t N>
bool in(const std::array<sv, N>& set, sv w) noexcept {
  return std::find(set.begin(), set.end(), w) != set.end();
}

inline constexpr auto number_words = std::to_array<sv>(
    {"zero",    "one",       "two",      "three",    "four",    "five",     "six",      "seven",
     "eight",   "nine",      "ten",      "eleven",   "twelve",  "thirteen", "fourteen", "fifteen",
     "sixteen", "seventeen", "eighteen", "nineteen", "twenty",  "thirty",   "forty",    "fifty",
     "sixty",   "seventy",   "eighty",   "ninety",   "hundred", "thousand", "million",  "once",
     "twice",   "thrice",    "half",     "dozen",    "first",   "second",   "third",    "fourth",
     "fifth",   "noon",      "midnight"});
inline constexpr auto month_words = std::to_array<sv>(
    {"january", "february", "march",    "april", "june", "july", "august", "september",
     "october", "november", "december", "jan",   "feb",  "mar",  "apr",    "jun",
     "jul",     "aug",      "sep",      "sept",  "oct",  "nov",  "dec"});
inline constexpr auto weekday_words =
    std::to_array<sv>({"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
                       "weekday", "weekdays", "weekend", "weekends"});
inline constexpr auto zh_numerals =
    std::to_array<sv>({"零", "一", "二", "三", "四", "五", "六", "七", "八", "九", "十", "两", "百",
                       "千", "万", "半"});

inline bool has_digit(sv w) noexcept {
  return std::any_of(w.begin(), w.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Whether a token is one non-ASCII symbol (Unicode Sc, Sm, Sk, So: "€", "¥", "°", "±").
inline bool symbol_token(sv w) noexcept {
  if (w.empty() || static_cast<unsigned char>(w[0]) < 0x80) return false;
  utf8proc_int32_t cp = -1;
  const auto len = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(w.data()),
                                    static_cast<utf8proc_ssize_t>(w.size()), &cp);
  if (len <= 0 || static_cast<std::size_t>(len) != w.size()) return false;
  const auto c = utf8proc_category(cp);
  return c >= UTF8PROC_CATEGORY_SM && c <= UTF8PROC_CATEGORY_SO;
}

// A number token with the non-ASCII symbols written against it ("€" "5000" -> "€5000",
// "20" "°" -> "20°"): a currency or unit is part of the quantity. Tokens are views into one
// text, so touching ones are adjacent in memory.
inline std::string with_symbols(const std::vector<sv>& t, std::size_t i) {
  std::string out(t[i]);
  for (std::size_t k = i;
       k > 0 && symbol_token(t[k - 1]) && t[k - 1].data() + t[k - 1].size() == t[k].data(); --k)
    out.insert(0, t[k - 1]);
  for (std::size_t k = i;
       k + 1 < t.size() && symbol_token(t[k + 1]) && t[k].data() + t[k].size() == t[k + 1].data();
       ++k)
    out += t[k + 1];
  return out;
}

// The quantity tokens of a token sequence (see the file comment), sorted.
inline std::vector<std::string> quantities(const std::vector<sv>& t) {
  std::vector<std::string> q;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const sv w = t[i];
    const bool near_number =
        (i > 0 && has_digit(t[i - 1])) || (i + 1 < t.size() && has_digit(t[i + 1]));
    if (has_digit(w)) {
      q.push_back(with_symbols(t, i));
    } else if (in(number_words, w) || in(month_words, w) || in(weekday_words, w) ||
               (w == "may" && near_number)) {
      q.emplace_back(w);
    } else if (in(zh_numerals, w)) {
      q.emplace_back(w);
    } else if ((w == "周" || w == "期") && i + 1 < t.size() &&
               (in(zh_numerals, t[i + 1]) || t[i + 1] == "日" || t[i + 1] == "天" ||
                t[i + 1] == "末")) {
      q.emplace_back(std::string(w) + std::string(t[i + 1]));  // 周二, 星期四, 周末
      ++i;
    }
  }
  std::sort(q.begin(), q.end());
  return q;
}

// True when, after the common prefix and suffix, the middles are X S Y and Y S X (X, S, Y
// non-empty, X != Y). O(m^2) in the middle's length m; texts over 128 tokens are not examined.
inline bool swapped_roles(const std::vector<sv>& a, const std::vector<sv>& b) {
  if (a.size() != b.size() || a.size() > 128) return false;
  std::size_t p = 0;
  while (p < a.size() && a[p] == b[p]) ++p;
  if (p == a.size()) return false;
  std::size_t s = 0;
  while (s < a.size() - p && a[a.size() - 1 - s] == b[b.size() - 1 - s]) ++s;
  const std::size_t m = a.size() - p - s;  // middle length, >= 2 when they differ
  auto eq = [&](std::size_t ia, std::size_t ib, std::size_t n) {
    for (std::size_t k = 0; k < n; ++k)
      if (a[p + ia + k] != b[p + ib + k]) return false;
    return true;
  };
  for (std::size_t x = 1; x < m; ++x)          // |X|
    for (std::size_t y = 1; x + y < m; ++y) {  // |Y|, |S| = m - x - y >= 1
      const std::size_t sl = m - x - y;
      // a = X S Y, b = Y S X
      if (eq(0, y + sl, x) && eq(x, y, sl) && eq(x + sl, 0, y) && !(x == y && eq(0, 0, x)))
        return true;
    }
  return false;
}

inline constexpr auto like_words = std::to_array<sv>(
    {"like", "likes", "liked", "love", "loves", "loved", "enjoy", "enjoys", "enjoyed", "adore",
     "adores", "prefer", "prefers", "fond", "favourite", "favorite", "fan"});
inline constexpr auto aversion_words = std::to_array<sv>(
    {"dislike", "dislikes", "disliked", "hate", "hates", "hated", "detest", "detests", "loathe",
     "loathes", "avoid", "avoids", "despise", "despises", "abhor", "abhors"});
inline constexpr auto zh_like = std::to_array<sv>({"喜欢", "热爱", "喜爱", "偏爱", "爱"});
inline constexpr auto zh_aversion =
    std::to_array<sv>({"不喜欢", "不爱", "讨厌", "厌恶", "受不了", "反感", "嫌弃"});

// +1: a liking without an aversion; -1: an aversion; 0: neither.
inline int polarity(sv text, const std::vector<sv>& t) {
  bool like = false, averse = false;
  for (std::size_t i = 0; i < t.size(); ++i) {
    like = like || in(like_words, t[i]);
    averse = averse || in(aversion_words, t[i]) ||
             // "can't stand" / "cannot stand" / "cant stand"
             (t[i] == "stand" && i > 0 &&
              (t[i - 1] == "cannot" || t[i - 1] == "cant" ||
               (t[i - 1] == "t" && i > 1 && t[i - 2] == "can")));
  }
  for (sv w : zh_aversion) averse = averse || text.find(w) != sv::npos;
  if (!averse)
    for (sv w : zh_like) like = like || text.find(w) != sv::npos;
  return averse ? -1 : like ? 1 : 0;
}

}  // namespace detail::guard

/// Checks the guards of the file comment on two normalised texts, in the order numbers, roles,
/// polarity. Never throws on any text (invalid UTF-8 included).
/// @return the first guard that applies, or `duplicate_guard::none`.
/// @complexity O(length) plus O(m^2) for the role test, m the length of the differing middle.
[[nodiscard]] inline duplicate_guard near_duplicate_guard(std::string_view norm_a,
                                                          std::string_view norm_b) {
  if (norm_a == norm_b) return duplicate_guard::none;
  const auto ta = detail::guard::tokens(norm_a), tb = detail::guard::tokens(norm_b);
  if (detail::guard::quantities(ta) != detail::guard::quantities(tb))
    return duplicate_guard::numbers_differ;
  if (detail::guard::swapped_roles(ta, tb)) return duplicate_guard::role_swap;
  if (detail::guard::polarity(norm_a, ta) * detail::guard::polarity(norm_b, tb) < 0)
    return duplicate_guard::polarity;
  return duplicate_guard::none;
}

namespace detail::guard {

// Whether reading `x` speaks of the holder `h` though another holds its claims: a relative the
// other statement names ("rel:daughter" and "User has a daughter called Emma": its terms hold
// "daughter"; Chinese terms hold 女儿, or each of its characters), or the owner a
// relative holder implies ("self" and "User's daughter is named Emma", holder "rel:daughter").
inline bool speaks_of(const claim_analysis& x, std::string_view h) {
  for (const auto& c : x.claims) {
    if (h == "self" && c.holder.starts_with("rel:")) return true;
    if (const auto slash = c.holder.find("/rel:");
        slash != std::string::npos && h == std::string_view(c.holder).substr(0, slash))
      return true;
  }
  const auto rel = h.rfind("rel:");
  if (rel == std::string_view::npos) return false;
  const sv who = h.substr(rel + 4);
  auto has_term = [&](sv w) {
    return std::any_of(x.claims.begin(), x.claims.end(), [&](const text_claim& c) {
      return std::find(c.terms.begin(), c.terms.end(), w) != c.terms.end();
    });
  };
  if (who.empty()) return false;
  if (has_term(who)) return true;
  if (static_cast<unsigned char>(who[0]) < 0x80) return false;
  for (const sv ch : tokens(who))
    if (!has_term(ch)) return false;
  return true;
}

}  // namespace detail::guard

/// The holder guard of the file comment on two claim readings: the sets of holders the readings
/// name ("self", "rel:son", "name:priya"; claims without a holder are left out) differ, both
/// non-empty, and a holder of one side is not spoken of by the other (a relative it names: "User's
/// daughter is named Emma" / "User has a daughter called Emma" are one person). Readings without
/// any holder (text nobody could read) are no evidence either way.
/// @return `duplicate_guard::holder` or `duplicate_guard::none`. Never throws but for
/// allocation.
[[nodiscard]] inline duplicate_guard holder_guard(const claim_analysis& a,
                                                  const claim_analysis& b) {
  auto holders = [](const claim_analysis& x) {
    std::vector<std::string> h;
    for (const auto& c : x.claims)
      if (!c.holder.empty()) h.push_back(c.holder);
    std::sort(h.begin(), h.end());
    h.erase(std::unique(h.begin(), h.end()), h.end());
    return h;
  };
  const auto ha = holders(a), hb = holders(b);
  if (ha.empty() || hb.empty() || ha == hb) return duplicate_guard::none;
  for (const auto& h : ha)
    if (!std::binary_search(hb.begin(), hb.end(), h) && !detail::guard::speaks_of(b, h))
      return duplicate_guard::holder;
  for (const auto& h : hb)
    if (!std::binary_search(ha.begin(), ha.end(), h) && !detail::guard::speaks_of(a, h))
      return duplicate_guard::holder;
  return duplicate_guard::none;
}

}  // namespace memhealth
