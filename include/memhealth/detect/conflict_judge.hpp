#pragma once
/// @file conflict_judge.hpp
/// Conflict judges: given two records of one scope that are about the same thing (a candidate
/// pair), decide whether they contradict each other. A judge is any callable
///
///     conflict_verdict operator()(const R& a, std::string_view norm_a,
///                                 const R& b, std::string_view norm_b, float cosine) const;
///
/// where norm_* are the normalised texts (normalize.hpp) and `cosine` the similarity of their
/// unit embeddings in [-1, 1] (NaN when one has no usable embedding). Plug an NLI model or an LLM
/// call in through a lambda or a functor (`conflict_detector<my_judge>`).
///
/// `default_conflict_judge` is a cue-based heuristic (English and Chinese), applied in order:
/// 1. identical normalised text -> no conflict ("identical_text");
/// 2. different holders -> no conflict ("different_holders"): the subject at the start of each
///    text is classified as the user ("I ...", "我..."), a relative or acquaintance ("my brother
///    ...", "我哥哥..."), a third-person pronoun ("he ...") or a named subject (a capitalised
///    word, not a function word, followed by a verb such as is/likes/doesn't: "Alice is ...");
///    texts whose holders are both known and differ are about different people;
/// 3. one text contains the other (whole words) and both carry the same negation -> no conflict,
///    a compatible refinement ("refinement");
/// 4. a lasting state versus a one-off event (kind fact/preference vs episodic/temporary, or,
///    for records without a known kind, past-event cues: yesterday, last night, today, had, ate,
///    drank, 昨天, 昨晚, 今天, 吃了 ...) where either side carries a restriction or negation cue
///    (vegetarian, vegan, allergic, avoid, dislike, hate, ...-free, not, 素食, 过敏, 不 ...) ->
///    conflict with `needs_human` ("state_vs_event"): only a person knows whether "had steak"
///    ends "is vegetarian";
/// 5. negation or change cues (not, never, no, nobody, no longer, don't, doesn't, stopped, quit,
///    switched, sold, gave up, anymore; 不, 不再, 拒绝, 戒, 没有) present in one text and absent
///    from the other, on texts whose content words overlap: overlap coefficient
///    |A ∩ B| / min(|A|, |B|) >= `min_token_overlap` over words without stop words and cue words,
///    and the word a pure negation applies to (the first content word after "not"/"no"/"never",
///    the character after 不/没有) occurs on the other side, so "no sugar" against "coffee:
///    black" or "not give up" against "keep pushing" is no conflict,
///    English words crudely stemmed (-ing, -ed, -es, -s dropped from words of 5+ letters), Chinese
///    per character -> conflict ("negation_cue" / "change_cue"); except when the side without
///    the cue states an aversion instead (avoid, refuse, dislike, hate, without, ...-free, skip;
///    讨厌, 避免) and neither aversion is itself negated: "do not eat meat" vs "avoid meat" is
///    no conflict ("same_polarity"), "no longer avoid meat" vs "avoid meat" still is;
/// 6. otherwise no conflict ("no_cue").

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memhealth/record/memory_record.hpp"
#include "memhealth/record/traits.hpp"

namespace memhealth {

/// A judge's decision on one candidate pair.
struct conflict_verdict {
  bool conflict = false;     ///< the two records contradict each other
  bool needs_human = false;  ///< only a person can resolve it (repair: manual_review)
  std::string reason;        ///< short machine-readable reason, e.g. "negation_cue"
};

/// True when a verdict keeps a near-duplicate pair from being merged (the duplicate detector's
/// and the write gate's `skip_judged_conflicts`): a conflict, or a pair that says two different
/// things without contradicting ("preference_order": "prefers tea over coffee" / "likes coffee",
/// an order against a liking of its rejected option; merging would lose one of them).
inline bool keeps_apart(const conflict_verdict& v) noexcept {
  return v.conflict || v.reason == "preference_order";
}

/// A second opinion for the pairs a rule judge leaves open: a model (an LLM behind an API, an
/// NLI classifier) asked about two statements. `claim_conflict_judge::model` and
/// `default_check_settings::conflict_model` take one; net/openai_judge.hpp implements it over an
/// OpenAI-compatible chat endpoint.
///
/// Implementations must be thread-safe (the conflict check may judge from several threads).
struct model_judge {
  virtual ~model_judge() = default;
  /// The verdict for statements `a` and `b` (record contents, as stored) that the rules judged
  /// `rules`; nullopt = no usable answer (the rule verdict stands). May throw memhealth::error
  /// (the check then fails: a model that cannot be reached is not silently skipped).
  [[nodiscard]] virtual std::optional<conflict_verdict> judge(
      std::string_view a, std::string_view b, const conflict_verdict& rules) const = 0;
  /// True: every pair reaches the model, not only the open ones (`left_open`).
  [[nodiscard]] virtual bool ask_all() const { return false; }

  /// True when the rules did not settle the pair: no conflict found, and no rule established
  /// that the two are compatible. Settled are every conflict and the compatible reasons of the
  /// claim and cue rules: "identical_text", "different_holders", "different_scene",
  /// "different_time", "two_events", "refinement", "same_polarity", "same_value", "additive",
  /// "preference_order", "same_rate", "two_denials".
  /// Open are "no_claim_conflict" and "no_cue" (no rule applied), "not_contained" (opposite
  /// polarity about terms the rules could not match: "doesn't enjoy opera" / "enjoys
  /// musicals") and any reason of a user's judge not listed here.
  [[nodiscard]] static bool left_open(const conflict_verdict& v) noexcept {
    if (v.conflict) return false;
    constexpr std::string_view settled[] = {
        "identical_text", "different_holders", "different_scene", "different_time",
        "two_events",     "refinement",        "same_polarity",   "same_value",
        "additive",       "preference_order",  "same_rate",       "two_denials"};
    for (auto s : settled)
      if (v.reason == s) return false;
    return true;
  }
};

/// Concept for a conflict judge over record type R.
template <class J, class R>
concept conflict_judge_for = requires(const J& j, const R& r, std::string_view s, float c) {
  { j(r, s, r, s, c) } -> std::convertible_to<conflict_verdict>;
};

/// Concept for a conflict judge that also runs in two phases: `j.analyse(r)` reads one record
/// (any copyable result, e.g. claim_judge.hpp's `claim_analysis`) and `j.judge_analysed(a, na,
/// analysis_a, b, nb, analysis_b, cosine)` judges a pair from two such analyses with the verdict
/// `j(a, na, b, nb, cosine)` would give. `conflict_detector` then analyses each record once per
/// run instead of once per candidate pair.
template <class J, class R>
concept analysing_conflict_judge = conflict_judge_for<J, R> &&
    requires(const J& j, const R& r, std::string_view s, float c) {
  j.analyse(r);
  {
    j.judge_analysed(r, s, j.analyse(r), r, s, j.analyse(r), c)
    } -> std::convertible_to<conflict_verdict>;
};

/// Concept for a two-phase judge (`analysing_conflict_judge`) whose analysis of a record depends
/// on one text of it alone: `j.analysis_key(r)` (a string view into the record, e.g. its
/// content) is equal for two records only when `j.analyse` gives them equal analyses.
/// `conflict_detector` and `duplicate_detector` then read each distinct text once per run,
/// however many records hold it.
template <class J, class R>
concept keyed_analysing_conflict_judge = analysing_conflict_judge<J, R> &&
    requires(const J& j, const R& r) {
  { j.analysis_key(r) } -> std::convertible_to<std::string_view>;
};

namespace detail::cue {

using sv = std::string_view;

inline constexpr auto negation_words =
    std::to_array<sv>({"not",   "never",  "no",     "none", "nobody", "nothing", "neither",
                       "nor",   "cannot", "noone",  "dont", "doesnt", "didnt",   "isnt",
                       "arent", "wasnt",  "werent", "wont", "cant",   "anymore"});
// "<stem> t" is how the normaliser leaves "don't", "doesn't", ... (the apostrophe is a break)
inline constexpr auto nt_stems =
    std::to_array<sv>({"don", "doesn", "didn", "isn", "aren", "wasn", "weren", "won", "can",
                       "couldn", "wouldn", "shouldn", "haven", "hasn", "hadn", "ain"});
inline constexpr auto change_words =
    std::to_array<sv>({"stopped", "quit", "quitted", "switched", "sold", "stop", "quits"});
inline constexpr auto change_bigrams =
    std::to_array<sv>({"no longer", "gave up", "given up", "used to"});
inline constexpr auto zh_negation = std::to_array<sv>({"不再", "拒绝", "没有", "不", "戒"});
inline constexpr auto event_words =
    std::to_array<sv>({"yesterday", "today", "tonight", "had", "ate", "drank", "went", "bought",
                       "ordered", "tried", "visited", "earlier", "ago"});
inline constexpr auto event_bigrams = std::to_array<sv>(
    {"last night", "this morning", "last week", "this evening", "last weekend", "this afternoon"});
inline constexpr auto zh_event =
    std::to_array<sv>({"昨天", "昨晚", "今天", "刚才", "上周", "吃了", "喝了", "买了"});
inline constexpr auto restrict_words = std::to_array<sv>(
    {"vegetarian", "vegan", "allergic", "allergy", "avoid", "avoids", "dislike", "dislikes", "hate",
     "hates", "free", "sober", "kosher", "halal", "intolerant", "diet"});
inline constexpr auto zh_restrict = std::to_array<sv>({"素食", "吃素", "过敏", "忌", "戒"});
// verbs and words that state an aversion without a negation word: "avoid X" says what "do not X"
// says
inline constexpr auto aversion_words = std::to_array<sv>(
    {"avoid",    "avoids",  "avoided",  "avoiding", "refuse", "refuses", "refused",
     "refusing", "dislike", "dislikes", "hate",     "hates",  "detest",  "detests",
     "loathe",   "loathes", "without",  "free",     "skip",   "skips",   "against"});
inline constexpr auto zh_aversion = std::to_array<sv>({"讨厌", "避免", "反感", "避开"});
inline constexpr auto relatives =
    std::to_array<sv>({"brother",   "sister", "wife",     "husband",   "friend",     "mom",
                       "mother",    "dad",    "father",   "son",       "daughter",   "colleague",
                       "coworker",  "boss",   "partner",  "boyfriend", "girlfriend", "kid",
                       "kids",      "child",  "children", "parents",   "roommate",   "neighbor",
                       "neighbour", "cousin", "uncle",    "aunt",      "grandma"});
inline constexpr auto zh_relatives =
    std::to_array<sv>({"哥哥", "姐姐", "弟弟", "妹妹", "妈妈", "爸爸", "妻子", "老婆", "丈夫",
                       "老公", "朋友", "同事", "儿子", "女儿", "父母", "室友"});
inline constexpr auto stop_words =
    std::to_array<sv>({"a",     "an", "the",  "is",  "are", "am",  "was",  "were",  "be", "been",
                       "being", "i",  "me",   "my",  "we",  "our", "you",  "your",  "to", "of",
                       "in",    "on", "at",   "and", "or",  "for", "with", "there", "it", "this",
                       "that",  "do", "does", "did", "s",   "m",   "re",   "ve",    "ll", "t"});
// capitalised words that start a sentence without naming anyone
inline constexpr auto function_words = std::to_array<sv>(
    {"a",       "an",  "the",   "there", "this",   "that",     "these",   "those",    "i",
     "we",      "you", "he",    "she",   "they",   "it",       "my",      "our",      "your",
     "his",     "her", "their", "its",   "nobody", "somebody", "someone", "everyone", "everybody",
     "anyone",  "no",  "not",   "never", "one",    "two",      "three",   "some",     "many",
     "several", "all", "each",  "every", "user",   "people",   "here",    "what"});
inline constexpr auto subject_verbs =
    std::to_array<sv>({"is",   "was",    "has",  "had",   "likes",  "loves",  "hates", "prefers",
                       "eats", "drinks", "does", "doesn", "doesnt", "never",  "lives", "works",
                       "owns", "isn",    "wasn", "s",     "avoids", "enjoys", "wants", "can"});

template <std::size_t N>
bool in(const std::array<sv, N>& set, sv w) noexcept {
  return std::find(set.begin(), set.end(), w) != set.end();
}

inline std::vector<sv> words(sv s) {
  std::vector<sv> out;
  std::size_t i = 0;
  while (i < s.size()) {
    const std::size_t j = std::min(s.find(' ', i), s.size());
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

inline bool has_bigram(const std::vector<sv>& w, sv bigram) noexcept {
  const std::size_t sp = bigram.find(' ');
  const sv a = bigram.substr(0, sp), b = bigram.substr(sp + 1);
  for (std::size_t i = 0; i + 1 < w.size(); ++i)
    if (w[i] == a && w[i + 1] == b) return true;
  return false;
}

template <std::size_t N>
bool has_substring(sv text, const std::array<sv, N>& set) noexcept {
  return std::any_of(set.begin(), set.end(), [&](sv c) { return text.find(c) != sv::npos; });
}

template <std::size_t N>
bool has_word(const std::vector<sv>& w, const std::array<sv, N>& set) noexcept {
  return std::any_of(w.begin(), w.end(), [&](sv x) { return in(set, x); });
}

struct analysis {
  std::vector<sv> words;
  bool negation = false;  // a pure negation cue
  bool change = false;    // a change cue (stopped, switched, no longer, ...)
  bool event = false;     // past-event cues
  bool restrictive = false;
  bool aversion = false;  // an aversion cue (avoid, refuse, hate, without, ...-free, 讨厌 ...)
  bool negated_aversion = false;  // the aversion itself negated: "don't avoid", "no longer avoid"
  std::string holder;             // "" = unknown
};

inline bool nt_negation(const std::vector<sv>& w) noexcept {
  for (std::size_t i = 0; i + 1 < w.size(); ++i)
    if (w[i + 1] == "t" && in(nt_stems, w[i])) return true;
  return false;
}

inline std::string holder_of(const std::vector<sv>& w, sv norm, sv original) {
  if (!w.empty()) {
    if ((w[0] == "my" || w[0] == "our") && w.size() > 1 && in(relatives, w[1]))
      return "rel:" + std::string(w[1]);
    if (w[0] == "i" || w[0] == "we" || w[0] == "user") return "self";
    if (w[0] == "he" || w[0] == "she" || w[0] == "they") return "3p:" + std::string(w[0]);
    // "<name>'s <relative> ..." (the normaliser leaves "alice s brother"): the relative holds it
    if (w.size() > 2 && w[1] == "s" && in(relatives, w[2])) return "rel:" + std::string(w[2]);
  }
  if (norm.starts_with("我")) {
    const sv rest = norm.substr(sv("我").size());
    for (sv r : zh_relatives)
      if (rest.starts_with(r) || rest.starts_with(std::string("的") + std::string(r)))
        return "rel:" + std::string(r);
    return "self";
  }
  if (norm.starts_with("他") || norm.starts_with("她"))
    return "3p:" + std::string(norm.substr(0, 3));
  // named subject: capitalised first word of the original text, not a function word, then a verb
  if (!original.empty() && original[0] >= 'A' && original[0] <= 'Z' && w.size() > 1 &&
      !in(function_words, w[0]) && in(subject_verbs, w[1]))
    return "name:" + std::string(w[0]);
  return {};
}

inline analysis analyse(sv norm, sv original, sv kind) {
  analysis a;
  a.words = words(norm);
  const auto& w = a.words;
  a.negation = has_word(w, negation_words) || nt_negation(w) || has_substring(norm, zh_negation);
  a.change = has_word(w, change_words) || std::any_of(change_bigrams.begin(), change_bigrams.end(),
                                                      [&](sv b) { return has_bigram(w, b); });
  if (kind == kinds::episodic || kind == kinds::temporary)
    a.event = true;
  else if (kind == kinds::fact || kind == kinds::preference)
    a.event = false;
  else
    a.event = has_word(w, event_words) ||
              std::any_of(event_bigrams.begin(), event_bigrams.end(),
                          [&](sv b) { return has_bigram(w, b); }) ||
              has_substring(norm, zh_event);
  a.restrictive =
      a.negation || a.change || has_word(w, restrict_words) || has_substring(norm, zh_restrict);
  a.aversion = has_word(w, aversion_words) || has_substring(norm, zh_aversion);
  for (std::size_t i = 1; i < w.size() && a.aversion; ++i) {
    if (!in(aversion_words, w[i])) continue;
    std::size_t p = i;  // the nearest earlier word that is not a stop word ("t" of "don t" is one)
    while (p > 0 && in(stop_words, w[p - 1]) && w[p - 1] != "t") --p;
    if (p == 0) continue;
    const sv q = w[p - 1];
    if (in(negation_words, q) || in(change_words, q) || q == "used" ||
        (q == "longer" && p >= 2 && w[p - 2] == "no") ||
        (q == "t" && p >= 2 && in(nt_stems, w[p - 2])))
      a.negated_aversion = true;
  }
  if (a.aversion &&
      !a.negated_aversion)  // 不避免, 不再讨厌 ...: a Chinese cue right before the aversion
    for (sv av : zh_aversion)
      for (std::size_t p = norm.find(av); p != sv::npos && !a.negated_aversion;
           p = norm.find(av, p + 1))
        for (sv cue : zh_negation)
          if (p >= cue.size() && norm.substr(p - cue.size(), cue.size()) == cue)
            a.negated_aversion = true;
  a.holder = holder_of(w, norm, original);
  return a;
}

inline bool is_cjk_lead(unsigned char c) noexcept {
  return c >= 0xE2;
}  // 3/4-byte sequences (CJK and beyond)

// Strips one English inflection (-ing, -ed, -es, -s) from words of 5+ letters: peeling/peeled ->
// peel.
inline sv crude_stem(sv w) noexcept {
  for (sv suffix : {sv("ing"), sv("ed"), sv("es"), sv("s")})
    if (w.size() >= suffix.size() + 3 && w.size() >= 5 && w.ends_with(suffix))
      return w.substr(0, w.size() - suffix.size());
  return w;
}

// Content tokens: words minus stop and cue words; CJK runs split per character (cue characters
// dropped).
inline std::vector<std::string> content_tokens(const analysis& a) {
  std::vector<std::string> out;
  const auto& w = a.words;
  for (std::size_t i = 0; i < w.size(); ++i) {
    const sv x = w[i];
    if (in(stop_words, x) || in(negation_words, x) || in(nt_stems, x) || in(change_words, x))
      continue;
    if ((x == "longer" || x == "up") && i > 0 &&
        (w[i - 1] == "no" || w[i - 1] == "gave" || w[i - 1] == "given"))
      continue;
    if (x == "gave" || x == "given") continue;
    if (!std::any_of(x.begin(), x.end(),
                     [](char c) { return is_cjk_lead(static_cast<unsigned char>(c)); })) {
      out.emplace_back(crude_stem(x));
      continue;
    }
    std::size_t p = 0;
    while (p < x.size()) {
      const auto c = static_cast<unsigned char>(x[p]);
      const std::size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
      const sv ch = x.substr(p, len);
      if (ch != "不" && ch != "再" && ch != "没" && ch != "戒" && ch != "拒" && ch != "绝")
        out.emplace_back(ch);
      p += len;
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// The content word a negation cue applies to: the first word after the cue that is not a stop
// word or another cue ("is not playing" -> "play", "there is no man" -> "man"); for Chinese, the
// character after 不 / 不再 / 没有 / 拒绝 / 戒. Empty for cues without a following word
// ("anymore") and for sides whose negation is a change cue ("no longer", "stopped"), which
// name the predicate themselves.
inline std::vector<std::string> negated_targets(const analysis& a, sv norm) {
  std::vector<std::string> out;
  if (a.change) return out;
  const auto& w = a.words;
  for (std::size_t i = 0; i < w.size(); ++i) {
    const bool cue = (in(negation_words, w[i]) && w[i] != "anymore") ||
                     (in(nt_stems, w[i]) && i + 1 < w.size() && w[i + 1] == "t");
    if (!cue) continue;
    for (std::size_t j = i + 1; j < w.size(); ++j) {
      const sv x = w[j];
      if (x == "t" || in(stop_words, x) || in(negation_words, x) || in(nt_stems, x)) continue;
      if (std::any_of(x.begin(), x.end(),
                      [](char c) { return is_cjk_lead(static_cast<unsigned char>(c)); }))
        break;
      out.emplace_back(crude_stem(x));
      break;
    }
  }
  for (sv cue : zh_negation)
    for (std::size_t p = norm.find(cue); p != sv::npos; p = norm.find(cue, p + 1)) {
      const std::size_t q = p + cue.size();
      if (q >= norm.size()) continue;
      const auto c = static_cast<unsigned char>(norm[q]);
      const std::size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
      out.emplace_back(norm.substr(q, len));
    }
  return out;
}

// True when the negated side's cue applies to something the other side says (or when the
// target cannot be told): "not vegetarian" vs "is vegetarian" yes; "no sugar" vs "coffee
// black" no; "not give up" vs "keep pushing" no.
inline bool negation_in_scope(const std::vector<std::string>& targets,
                              const std::vector<std::string>& other_tokens) {
  if (targets.empty()) return true;
  // equal, or one a prefix of the other (>= 3 bytes): the crude stemmer leaves "likes" as "lik"
  return std::any_of(targets.begin(), targets.end(), [&](const std::string& t) {
    return std::any_of(other_tokens.begin(), other_tokens.end(), [&](const std::string& o) {
      const std::size_t n = std::min(t.size(), o.size());
      return t == o || (n >= 3 && t.compare(0, n, o, 0, n) == 0);
    });
  });
}

inline double overlap_coefficient(const std::vector<std::string>& a,
                                  const std::vector<std::string>& b) {
  if (a.empty() || b.empty()) return 0.0;
  std::size_t common = 0;
  for (std::size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    if (a[i] == b[j])
      ++common, ++i, ++j;
    else if (a[i] < b[j])
      ++i;
    else
      ++j;
  }
  return static_cast<double>(common) / static_cast<double>(std::min(a.size(), b.size()));
}

inline bool contains_words(sv longer, sv shorter) noexcept {
  if (shorter.empty()) return false;
  for (std::size_t p = longer.find(shorter); p != sv::npos; p = longer.find(shorter, p + 1)) {
    const bool left = p == 0 || longer[p - 1] == ' ';
    const bool right = p + shorter.size() == longer.size() || longer[p + shorter.size()] == ' ';
    if (left && right) return true;
  }
  return false;
}

}  // namespace detail::cue

/// The default cue-based judge (see the file comment for the rules and their order).
/// @complexity O(length of both texts · cue-list size); allocates small token vectors.
struct default_conflict_judge {
  /// Minimum overlap coefficient of the content words for the negation rule, in [0, 1].
  double min_token_overlap = 0.6;

  /// Judges one candidate pair (see the file comment). Never throws on any text.
  template <class R>
  [[nodiscard]] conflict_verdict operator()(const R& a, std::string_view norm_a, const R& b,
                                            std::string_view norm_b, float cosine) const {
    (void)cosine;  // candidates arrive already filtered by similarity; the text rules decide
    if (norm_a == norm_b) return {false, false, "identical_text"};
    const auto x = detail::cue::analyse(norm_a, field::content(a), kind_of(a));
    const auto y = detail::cue::analyse(norm_b, field::content(b), kind_of(b));
    if (!x.holder.empty() && !y.holder.empty() && x.holder != y.holder)
      return {false, false, "different_holders"};
    const bool neg_x = x.negation || x.change, neg_y = y.negation || y.change;
    if (neg_x == neg_y && (detail::cue::contains_words(norm_a, norm_b) ||
                           detail::cue::contains_words(norm_b, norm_a)))
      return {false, false, "refinement"};
    if (x.event != y.event && (x.restrictive || y.restrictive))
      return {true, true, "state_vs_event"};
    if (neg_x != neg_y) {
      // "do not eat meat" and "avoid meat" say the same thing; "no longer avoid meat" and "avoid
      // meat" do not: a side is negative when it has any cue and its aversion is not negated
      const bool negative_x = (neg_x || x.aversion) && !x.negated_aversion;
      const bool negative_y = (neg_y || y.aversion) && !y.negated_aversion;
      if (negative_x == negative_y) return {false, false, "same_polarity"};
      const auto tx = detail::cue::content_tokens(x), ty = detail::cue::content_tokens(y);
      const double overlap = detail::cue::overlap_coefficient(tx, ty);
      const bool in_scope =
          neg_x ? detail::cue::negation_in_scope(detail::cue::negated_targets(x, norm_a), ty)
                : detail::cue::negation_in_scope(detail::cue::negated_targets(y, norm_b), tx);
      if (overlap >= min_token_overlap && in_scope) {
        const bool pure_negation = neg_x ? x.negation : y.negation;
        return {true, false, pure_negation ? "negation_cue" : "change_cue"};
      }
    }
    return {false, false, "no_cue"};
  }

 private:
  template <class R>
  static std::string_view kind_of(const R& r) {
    if constexpr (kinded_record<R>)
      return field::kind(r);
    else
      return {};
  }
};

}  // namespace memhealth
