#pragma once
/// @file claim.hpp
/// What a memory statement says, read into claims (claims.hpp reads them): `text_claim` (one
/// clause: holder, predicate, terms, attribute and value, polarity, frequency, quantities, change,
/// scene, time), `claim_analysis` (a statement), the `claim_extractor_policy` concept, and the
/// small text helpers the English and Chinese readers share.

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace memhealth {

/// What kind of predicate a claim states.
enum class predicate_class : std::uint8_t {
  unknown,     ///< nothing recognised
  preference,  ///< an attitude: like, love, prefer, avoid, hate, 喜欢, 讨厌
  state,       ///< a lasting state or attribute: is, has, lives in, works at, 住在
  habit,       ///< something done repeatedly: drinks coffee daily, 每天跑步
  event,       ///< a one-off past event: ate a burger yesterday, 昨天吃了
};

/// Text of a predicate class: "unknown", "preference", "state", "habit", "event".
constexpr std::string_view to_string(predicate_class c) noexcept {
  constexpr std::string_view names[] = {"unknown", "preference", "state", "habit", "event"};
  return names[static_cast<std::size_t>(c)];
}

/// One clause of a memory statement, read into its parts (see the file comment).
struct text_claim {
  std::string holder;  ///< "self", "rel:sister", "name:priya", "3p:he"; "" = unknown
  predicate_class kind = predicate_class::unknown;  ///< what kind of predicate
  std::string predicate;  ///< "like" (attitudes), a verb lemma, or "" (copula, any_predicate)
  std::string attribute;  ///< single-valued attribute ("residence", "blood type"); "" = none
  std::vector<std::string> terms;    ///< content terms, sorted, unique (predicate included)
  std::vector<std::string> object;   ///< terms of the direct object, sorted, unique
  std::vector<std::string> subject;  ///< terms of a noun-phrase subject when no holder was
                                     ///< recognised ("A black dog is ..."), sorted, unique
  std::vector<std::string> value;    ///< terms of the attribute's value, sorted, unique
  std::vector<double> quantities;    ///< numbers that are not times, sorted
  int polarity = 1;                  ///< +1 asserted, -1 negated (or an aversion, a termination)
  bool any_predicate = false;        ///< an aversion or termination: negates any verb on object
  double frequency = -1;     ///< times per day (never 0, rarely 1/30, daily 1, "twice a week"
                             ///< 2/7; claim_words::frequency_of); -1 = not stated
  bool change = false;       ///< a change marker (now, no longer, moved, 不再, 搬到)
  bool additive = false;     ///< also, too, especially, 也, 还
  bool event = false;        ///< a one-off past event
  bool restrictive = false;  ///< a lasting restriction (vegetarian, allergic, 素食)
  /// Not asserted: a question ("Does the user like cats?", 用户喜欢猫吗？) or a clause hedged by
  /// an epistemic modal (might, may, could, maybe, perhaps, possibly, 可能, 也许, 或许, 好像,
  /// 似乎). The claim judge never calls an uncertain claim a conflict.
  bool uncertain = false;
  bool replaces = false;  ///< the object replaced what the holder had of its kind
                          ///< ("switched to tea", "换成了支付宝", "改喝茶")
  /// An order of preference this claim is one side of: +1 the preferred option, -1 the rejected
  /// one ("prefers tea over coffee": like tea +1, like coffee -1 and polarity -1; 比起米饭更喜欢
  /// 面条, 更X而不是Y, X多过Y, 把X放在Y前面); 0 = none. A rejected option says only that the other
  /// is preferred: it is no dislike ("likes coffee" agrees with it).
  int order = 0;
  /// `frequency` is an amount per day (a number of something over a period: "saves $500 a
  /// month" 16.7, "每个月存五千块" 166.7, "rent is 5000 yuan a month"), not a count of occasions.
  bool amount = false;
  std::string routine;  ///< the unit of a stated rate ("morning" of "every morning"); "" = none
  std::vector<std::string> scene;  ///< scene terms (sorted, unique); empty = none
  std::vector<std::string> time;   ///< time-qualifier words (sorted, unique); empty = none
};

/// A statement read into claims.
struct claim_analysis {
  std::string lang;                ///< "en", "zh", or "" (nothing readable)
  std::vector<text_claim> claims;  ///< one or more per clause; empty when nothing was read
  /// True when at least one claim has a term, a value or an attribute.
  [[nodiscard]] bool parsed() const noexcept {
    return std::any_of(claims.begin(), claims.end(), [](const text_claim& c) {
      return !c.terms.empty() || !c.value.empty() || !c.attribute.empty();
    });
  }
};

/// Concept for a claim extractor policy: reads one UTF-8 statement.
template <class E>
concept claim_extractor_policy = requires(const E& e, std::string_view text) {
  { e(text) } -> std::convertible_to<claim_analysis>;
};

namespace detail::claims {

using sv = std::string_view;

inline std::size_t utf8_len(unsigned char c) noexcept {
  return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}
inline bool is_cjk_at(sv s, std::size_t i) noexcept {
  // U+3400..U+9FFF (CJK ideographs): lead bytes E3 (partly) .. E9
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0xE3 || c > 0xE9 || i + 2 >= s.size() + 0) return false;
  if (c == 0xE3) return static_cast<unsigned char>(s[i + 1]) >= 0x90;
  return true;
}
inline bool has_cjk(sv s) noexcept {
  for (std::size_t i = 0; i + 2 < s.size(); ++i)
    if (is_cjk_at(s, i)) return true;
  return false;
}

/// `s.find(needle, from)` for a needle of Chinese text: in UTF-8 most Chinese characters share
/// their lead byte, so the library's first-byte scan stops at nearly every character; comparing
/// a character's last byte first skips them. @return the position, or sv::npos.
inline std::size_t find_text(sv s, sv needle, std::size_t from = 0) noexcept {
  if (needle.size() < 3 || static_cast<unsigned char>(needle[0]) < 0x80)
    return s.find(needle, from);
  const char a = needle[0], b = needle[1], c = needle[2];
  for (std::size_t i = from; i + needle.size() <= s.size(); ++i)
    if (s[i + 2] == c && s[i] == a && s[i + 1] == b &&
        s.compare(i + 3, needle.size() - 3, needle.substr(3)) == 0)
      return i;
  return sv::npos;
}

/// Which characters a text may hold, by the last byte of each multi-byte UTF-8 character: a
/// needle whose first character's last byte is absent cannot occur, and its search is skipped.
class text_filter {
 public:
  /// Notes the characters of `s`.
  explicit text_filter(sv s) noexcept {
    for (std::size_t i = 0; i < s.size();) {
      const std::size_t l = utf8_len(static_cast<unsigned char>(s[i]));
      if (l > 1 && i + l <= s.size()) set(static_cast<unsigned char>(s[i + l - 1]));
      i += l;
    }
  }
  /// False when `needle` (starting with a multi-byte character) cannot occur in the text.
  [[nodiscard]] bool may_contain(sv needle) const noexcept {
    const std::size_t l = needle.empty() ? 0 : utf8_len(static_cast<unsigned char>(needle[0]));
    if (l < 2 || l > needle.size()) return true;
    const auto b = static_cast<unsigned char>(needle[l - 1]);
    return (bits_[b >> 6] >> (b & 63)) & 1u;
  }

 private:
  void set(unsigned char b) noexcept { bits_[b >> 6] |= std::uint64_t{1} << (b & 63); }
  std::uint64_t bits_[4] = {0, 0, 0, 0};
};

inline void sort_unique(std::vector<std::string>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

inline double number_word(sv w) noexcept {
  if (w.size() < 3 || w.size() > 8) return -1;
  switch (w[0]) {  // the first letters of the words below
    case 'z':
    case 'o':
    case 't':
    case 'f':
    case 's':
    case 'e':
    case 'n':
    case 'h':
    case 'd':
    case 'c':
      break;
    default:
      return -1;
  }
  constexpr std::pair<sv, double> words[] = {
      {"zero", 0},        {"one", 1},     {"two", 2},     {"three", 3},     {"four", 4},
      {"five", 5},        {"six", 6},     {"seven", 7},   {"eight", 8},     {"nine", 9},
      {"ten", 10},        {"eleven", 11}, {"twelve", 12}, {"fifteen", 15},  {"twenty", 20},
      {"thirty", 30},     {"forty", 40},  {"fifty", 50},  {"hundred", 100}, {"dozen", 12},
      {"thousand", 1000}, {"couple", 2}};
  for (const auto& [n, v] : words)
    if (n == w) return v;
  return -1;
}

inline bool all_digits(sv w) noexcept {
  return !w.empty() &&
         std::all_of(w.begin(), w.end(),
                     [](char c) { return (c >= '0' && c <= '9') || c == '.' || c == ','; }) &&
         w[0] >= '0' && w[0] <= '9';
}

}  // namespace detail::claims

}  // namespace memhealth
