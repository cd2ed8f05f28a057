#pragma once
/// @file claims.hpp
/// Claims from free text: what a memory statement says, in a form a conflict judge can compare.
///
/// A memory statement as extractors write it ("User no longer eats pork", "Priya's sister lives
/// in Porto", "用户不吃香菜", "我现在搬到深圳了") is split into clauses (at ";", "but",
/// "however", "，", "但是" ...) and each clause is read into a `text_claim`:
/// - **holder**: "self" (the user: "User ...", "I ...", "用户…", "我…"), "rel:<relative>"
///   ("my sister", "the user's sister", "用户的妈妈"), "name:<name>" (a capitalised name, a
///   Chinese surname + given name, 小/老 + name), "3p:<pronoun>"; empty when unknown;
/// - **predicate**: "like" for every attitude word of either polarity (like, love, hate, can't
///   stand, finds X awful, 喜欢, 讨厌 ...), else the main verb's lemma (WordNet morphy); empty for
///   a copula state ("is vegetarian") and for an aversion or termination (avoid, quit, sold, 戒),
///   which negates *any* predicate on its object (`any_predicate`);
/// - **terms**: the content words (lemmas; Chinese per character), predicate included;
/// - **attribute / value**: a single-valued attribute and its value (residence, employer, name,
///   age, birthday, marital status, "<possessed noun> is <value>": "User's blood type is O");
/// - **polarity** (+1 / -1: negators, negative attitudes, aversions, terminations), **frequency**
///   (0 never .. 5 daily; "twice a week", "every morning", "从不", "每天"), **quantities**
///   (numbers and number words that are not times), **change** (now, no longer, moved to,
///   switched, quit, 现在, 不再, 搬到, 换成, 戒了), **additive** (also, too, 也, 还), **event** (a
///   one-off past event: yesterday, ate, 昨天, 吃了), **scene** (when/while/during ..., at home,
///   in the morning, 在家, 出差时) and **time** (dates, clock times, last week, 上周).
/// "prefers X over Y" gives two claims: like X (+1) and like Y (-1), the preferred and the
/// rejected option of an order (`text_claim::order`); "switched from X to Y" gives X negated
/// and Y asserted. A past state ("used to", "previously", "formerly", 以前, 原来, 过去, 曾经,
/// 之前 after the holder) is denied now and a change. An amount over a period ("$500 a month",
/// "每个月存五千块") is a rate per day (`text_claim::amount`).
///
/// A question (ending in "?", "？" or 吗) and a clause hedged by an epistemic modal (might, may,
/// could, maybe, perhaps, possibly, 可能, 也许, 或许, 好像, 似乎; not "probably", "likely", 大概)
/// give claims marked `uncertain`, which the judge never calls a conflict. "V neither X nor Y",
/// 不X也不Y and 既不X也不Y deny both; "V X(,) not Y" asserts X and denies Y; "It is not true
/// that S" denies S. "and" before a new subject with its own verb starts a clause with its own
/// holder, and "it" / "them" there is the object of the clause before. Full-width Latin letters
/// and digits are read as ASCII and zero-width characters are dropped (as NFKC reads them).
///
/// Before a clause is read, idioms become plain words (claim_idioms.hpp: "is a night owl",
/// "steers clear of", 滴酒不沾); a statement without a subject ("Loves jazz", "Name is John") is
/// about the user; a restriction adds the denials it implies and a termination drops its service
/// noun (claim_implications.hpp).
///
/// The reading is a rule-based shallow parse, not a grammar: it is built for short memory
/// statements. `claim_analysis::parsed()` is false when nothing could be read (the judge then
/// falls back to its cue rules). Cue words: claim_words.hpp; lemmas, synonyms and antonyms:
/// lexicon.hpp (WordNet 3.0).

#include <cctype>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memhealth/record/memory_record.hpp"
#include "memhealth/text/claim.hpp"
#include "memhealth/text/claim_lexicon.hpp"
#include "memhealth/text/claims_chinese.hpp"
#include "memhealth/text/claims_english.hpp"

namespace memhealth {

namespace detail::claims {

/// Rule: a statement that asks ("Does the user like cats?", "用户喜欢猫吗？") asserts nothing:
/// true when `text` ends (before spaces) with "?", "？" or "吗".
inline bool is_question(sv text) {
  while (!text.empty() && (text.back() == ' ' || text.back() == '\n' || text.back() == '\t'))
    text.remove_suffix(1);
  return text.ends_with("?") || text.ends_with("\xEF\xBC\x9F") || text.ends_with("\xE5\x90\x97");
}

/// Rule: an English clause whose main clause carries an epistemic modal ("User might like cats",
/// "may be allergic", "could be in Lyon", "Maybe the user likes jazz", "possibly lives in Lyon",
/// "perhaps") states a possibility, not a fact: true when it does; a leading hedge word ("Maybe,
/// the user ...") is removed from `clause` so that it is not read as a name. "could not" /
/// "couldn't" (a past inability) and "may" as a month ("in May", "12 May", "May 3") are no
/// hedges. "probably" and "likely" are deliberately no hedges: they state what the writer
/// believes, so a memory that says the opposite still disagrees with it (the reader skips the
/// word).
inline bool english_hedge(std::string& clause) {
  // (every hedge word holds a "y" or one of these: most clauses are passed over at once)
  if (clause.find_first_of("yY") == std::string::npos && clause.find("ight") == std::string::npos &&
      clause.find("erhaps") == std::string::npos && clause.find("ould") == std::string::npos &&
      clause.find("ERHAPS") == std::string::npos && clause.find("IGHT") == std::string::npos &&
      clause.find("OULD") == std::string::npos)
    return false;
  std::vector<std::string> words;
  std::vector<bool> capital;  // the word was written with a capital
  std::string w;
  for (const char ch : clause + " ") {
    const auto u = static_cast<unsigned char>(ch);
    if (std::isalpha(u) || std::isdigit(u) || ch == '\'') {
      if (w.empty()) capital.push_back(std::isupper(u) != 0);
      w.push_back(static_cast<char>(std::tolower(u)));
    } else if (!w.empty()) {
      words.push_back(w);
      w.clear();
    }
  }
  // a number or a rate after "maybe" makes it an approximation of that amount ("reads maybe
  // one book a year", "maybe twice a month"), no hedge of the clause
  auto amount_at = [&](std::size_t i) {
    if (i >= words.size()) return false;
    const std::string& x = words[i];
    for (const sv a : {"a",      "an",    "one",   "two",    "three",   "four",  "five",   "six",
                       "seven",  "eight", "nine",  "ten",    "once",    "twice", "thrice", "about",
                       "around", "half",  "dozen", "dozens", "several", "some",  "every",  "each"})
      if (x == a) return true;
    return std::isdigit(static_cast<unsigned char>(x.front())) != 0;
  };
  bool hedged = false;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& x = words[i];
    const std::string next = i + 1 < words.size() ? words[i + 1] : std::string();
    if ((x == "maybe" || x == "perhaps" || x == "possibly") && !amount_at(i + 1)) hedged = true;
    if (x == "might" || (x == "could" && next != "not" && next != "never")) hedged = true;
    // "may" the modal, not the month: the month is capitalised within the clause ("last May"),
    // stands by a day number ("12 May", "May 3") or after a word of time ("in may")
    if (x == "may" && i > 0 && !capital[i] && !all_digits(words[i - 1]) && !all_digits(next)) {
      bool month = false;
      for (const sv b : {"in", "of", "last", "next", "this", "since", "until", "by", "from",
                         "during", "early", "late", "mid", "before", "after"})
        month = month || words[i - 1] == b;
      hedged = hedged || !month;
    }
  }
  if (!words.empty() && (words[0] == "maybe" || words[0] == "perhaps" || words[0] == "possibly")) {
    const std::size_t start = clause.find_first_not_of(" ,");
    std::size_t end = start == std::string::npos ? clause.size() : start + words[0].size();
    while (end < clause.size() && (clause[end] == ',' || clause[end] == ' ')) ++end;
    clause.erase(0, end);
  }
  return hedged;
}

/// Rule: a Chinese clause hedged by an epistemic word (可能, 也许, 或许, 好像, 似乎) states a
/// possibility, not a fact: true when it is; the hedge words are removed from `clause` so that
/// their characters are not read as terms (也 as "also"). "不可能" (cannot be) is a denial, no
/// hedge. 大概 is deliberately no hedge: it mostly means "about" before a number (大概三十岁).
inline bool chinese_hedge(std::string& clause) {
  bool hedged = false;
  for (const sv h : {sv("可能"), sv("也许"), sv("或许"), sv("好像"), sv("似乎")}) {
    std::size_t p = 0;
    while ((p = clause.find(h, p)) != std::string::npos) {
      if (h == "可能" && p >= 3 && sv(clause).substr(p - 3, 3) == "不") {
        p += h.size();
        continue;
      }
      clause.erase(p, h.size());
      hedged = true;
    }
  }
  return hedged;
}

/// Rule: the reader reads text as NFKC folds its width: full-width Latin letters and digits
/// (U+FF10-FF19, U+FF21-FF3A, U+FF41-FF5A: "Ｕｓｅｒ ｌｉｋｅｓ ｔｅａ") become ASCII, and
/// zero-width characters (U+200B-200D, U+2060, U+FEFF), which split no word, are dropped.
/// Full-width punctuation (，？：) stays: the Chinese reader splits clauses at it.
/// @return true when `text` holds a character to fold (then `out` is the folded text).
inline bool fold_width(sv text, std::string& out) {
  bool any = false;
  for (std::size_t i = 0; i + 2 < text.size(); ++i) {
    const auto b0 = static_cast<unsigned char>(text[i]);
    if (b0 != 0xEF && b0 != 0xE2) continue;
    const auto b1 = static_cast<unsigned char>(text[i + 1]);
    const auto b2 = static_cast<unsigned char>(text[i + 2]);
    if ((b0 == 0xEF && (b1 == 0xBC || b1 == 0xBD || (b1 == 0xBB && b2 == 0xBF))) ||
        (b0 == 0xE2 && b1 == 0x80 && b2 >= 0x8B && b2 <= 0x8D) ||
        (b0 == 0xE2 && b1 == 0x81 && b2 == 0xA0)) {
      any = true;
      break;
    }
  }
  if (!any) return false;
  out.clear();
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto b0 = static_cast<unsigned char>(text[i]);
    if (i + 2 < text.size() && (b0 == 0xEF || b0 == 0xE2)) {
      const auto b1 = static_cast<unsigned char>(text[i + 1]);
      const auto b2 = static_cast<unsigned char>(text[i + 2]);
      const char32_t cp = (char32_t(b0 & 0x0F) << 12) | (char32_t(b1 & 0x3F) << 6) | (b2 & 0x3F);
      if ((cp >= 0x200B && cp <= 0x200D) || cp == 0x2060 || cp == 0xFEFF) {
        i += 3;
        continue;
      }
      if ((cp >= 0xFF10 && cp <= 0xFF19) || (cp >= 0xFF21 && cp <= 0xFF3A) ||
          (cp >= 0xFF41 && cp <= 0xFF5A)) {
        out.push_back(static_cast<char>(cp - 0xFF00 + 0x20));
        i += 3;
        continue;
      }
    }
    out.push_back(text[i]);
    ++i;
  }
  return true;
}

/// Lower-case ASCII copy of `s`.
inline std::string ascii_lower(sv s) {
  std::string out(s);
  for (auto& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

/// Rewrites English coordinated denials into forms the clause reader reads (general rules):
/// - "V neither X nor Y" denies both: "likes neither tea nor coffee" -> "does not likes tea or
///   coffee" (the reader lemmatises the verb; "doesn't like tea or coffee" denies both), "is
///   neither X nor Y" -> "is not X; is not Y" after a copula or auxiliary;
/// - "V X not Y" (no auxiliary before "not") contrasts two objects: "likes tea not coffee" ->
///   "likes tea, not coffee", read as likes tea and a denial of coffee (see `contrast_denial`).
///   "not" after an auxiliary, copula or modal ("does not", "is not") or before "to", "only",
///   "just", "even", "at", "yet", "all", "much", "very", "too", "so", "quite", "really",
///   "always", "sure" is no contrast.
inline std::string rewrite_english_denials(sv text) {
  std::string s(text);
  // (most statements hold neither word: passed over at once)
  if (s.find("ot ") == std::string::npos && s.find("OT ") == std::string::npos &&
      s.find("either") == std::string::npos && s.find("EITHER") == std::string::npos)
    return s;
  const std::string low = ascii_lower(s);
  auto word_before = [&](std::size_t at) {  // the word that ends before position `at`
    std::size_t e = at;
    while (e > 0 && low[e - 1] == ' ') --e;
    std::size_t b = e;
    while (b > 0 && (std::isalpha(static_cast<unsigned char>(low[b - 1])) || low[b - 1] == '\''))
      --b;
    return std::pair{b, low.substr(b, e - b)};
  };
  auto word_after = [&](std::size_t at) {
    std::size_t b = at;
    while (b < low.size() && low[b] == ' ') ++b;
    std::size_t e = b;
    while (e < low.size() && (std::isalpha(static_cast<unsigned char>(low[e])) || low[e] == '\''))
      ++e;
    return low.substr(b, e - b);
  };
  auto auxiliary = [](const std::string& w) {
    for (const sv a :
         {"do",     "does",      "did",        "is",     "are",    "was",   "were",
          "am",     "be",        "been",       "can",    "could",  "will",  "would",
          "shall",  "should",    "may",        "might",  "must",   "has",   "have",
          "had",    "to",        "or",         "and",    "but",    "if",    "whether",
          "why",    "certainly", "definitely", "really", "just",   "still", "absolutely",
          "simply", "probably",  "also",       "yet",    "it",     "that",  "user's",
          "i'm",    "he's",      "she's",      "it's",   "that's", "user",  "i",
          "he",     "she",       "we",         "they",   "you",    "the",   "a",
          "an",     "of",        "in",         "on",     "at",     "for",   "with",
          "not"})
      if (w == a) return true;
    return w.empty() || w.ends_with("n't");
  };
  const std::size_t neither = low.find(" neither ");
  if (neither != std::string::npos) {
    const std::size_t nor = low.find(" nor ", neither + 9);
    const auto [vb, verb] = word_before(neither);
    if (nor != std::string::npos && !verb.empty() && verb != "user" && verb != "i") {
      std::string out = s.substr(0, vb);
      if (auxiliary(verb)) {  // "is neither rich nor famous": "is not rich; is not famous"
        const std::string v = s.substr(vb, verb.size()) + " not";
        return out + v + s.substr(neither + 8, nor - neither - 8) + "; " + v + s.substr(nor + 4);
      }
      out += "does not " + s.substr(vb, verb.size());
      out += s.substr(neither + 8, nor - neither - 8) + " or" + s.substr(nor + 4);
      return out;
    }
  }
  for (std::size_t at = low.find(" not "); at != std::string::npos;
       at = low.find(" not ", at + 1)) {
    const auto [b, before] = word_before(at);
    if (b == 0 || auxiliary(before) || (at > 0 && low[at - 1] == ',')) continue;
    const std::string after = word_after(at + 5);
    bool keep = false;
    for (const sv a :
         {"to",  "only", "just",  "even",   "at",      "yet",  "all",     "much", "very",
          "too", "so",   "quite", "really", "always",  "sure", "because", "that", "for",
          "in",  "on",   "since", "until",  "anymore", "any",  "anything"})
      keep = keep || after == a;
    if (keep || after.empty()) continue;
    return s.substr(0, at) + "," + s.substr(at);
  }
  return s;
}

/// Rule: a clause "not Y" after a positive claim ("User likes tea, not coffee", "... but not
/// coffee") denies of Y what that claim asserts of its object: the claims read from `clause`
/// (index `from` on) become the claim before with its object replaced by Y's terms, denied.
/// Nothing changes when the clause does not start with "not" or the claim before is denied or
/// has no predicate.
inline void contrast_denial(const std::string& clause, std::vector<text_claim>& claims,
                            std::size_t from) {
  const std::string low = ascii_lower(clause);
  const std::size_t b = low.find_first_not_of(" ,");
  if (b == std::string::npos || low.compare(b, 4, "not ") != 0) return;
  if (from == 0 || from >= claims.size()) return;
  const text_claim& prev = claims[from - 1];
  if (prev.polarity < 0 || prev.predicate.empty() || !prev.attribute.empty()) return;
  std::vector<std::string> what;
  for (std::size_t k = from; k < claims.size(); ++k)
    for (const auto& t : claims[k].terms)
      if (t != claims[k].predicate || claims[k].kind == predicate_class::state) what.push_back(t);
  sort_unique(what);
  if (what.empty()) return;
  text_claim c = prev;
  std::vector<std::string> old = prev.object;
  if (old.empty()) {
    old = prev.terms;
    std::erase(old, prev.predicate);
  }
  std::erase_if(c.terms, [&](const std::string& t) {
    return std::find(old.begin(), old.end(), t) != old.end();
  });
  c.terms.insert(c.terms.end(), what.begin(), what.end());
  sort_unique(c.terms);
  c.object = what;
  c.polarity = -1;
  c.order = 0;
  claims.resize(from);
  claims.push_back(std::move(c));
}

/// Rule: "It is not true that S", "It's not the case that S", "It isn't true that S" negate S:
/// true when `clause` starts with such a frame, which is then removed. The claims of S are
/// denied; a denial of a denial ("It is not true that the user hates tea") says only that the
/// denial is false, not the opposite, so it becomes uncertain.
inline bool negated_frame(std::string& clause) {
  const std::string low = ascii_lower(clause);
  const std::size_t b = low.find_first_not_of(' ');
  if (b == std::string::npos) return false;
  for (const sv f : {"it is not true that ", "it's not true that ", "it isn't true that ",
                     "it is not the case that ", "it's not the case that ",
                     "it isn't the case that ", "it is false that ", "it is untrue that "})
    if (low.compare(b, f.size(), f) == 0) {
      clause.erase(0, b + f.size());
      return true;
    }
  return false;
}

/// Rule: "it" / "them" as the object of a clause is what the clause before it named ("User's
/// wife loves sushi and the user hates it": the user hates sushi). A claim read from `clause`
/// (those from index `from` on) whose terms are only its predicate takes the object terms (else
/// the terms other than the predicate) of the claim before `from`.
inline void resolve_pronoun_object(const std::string& clause, std::vector<text_claim>& claims,
                                   std::size_t from) {
  bool pronoun = false;
  std::string w;
  for (const char ch : clause + " ") {
    if (std::isalpha(static_cast<unsigned char>(ch))) {
      w.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
    } else {
      pronoun = pronoun || w == "it" || w == "them";
      w.clear();
    }
  }
  if (!pronoun || from == 0 || from > claims.size()) return;
  const text_claim before = claims[from - 1];
  std::vector<std::string> what = before.object;
  if (what.empty()) {
    what = before.terms;
    std::erase(what, before.predicate);
  }
  if (what.empty()) return;
  for (std::size_t k = from; k < claims.size(); ++k) {
    text_claim& c = claims[k];
    if (!c.attribute.empty() ||
        !(c.terms.empty() || (c.terms.size() == 1 && c.terms[0] == c.predicate)))
      continue;
    c.terms.insert(c.terms.end(), what.begin(), what.end());
    sort_unique(c.terms);
    if (c.object.empty()) c.object = what;
  }
}

}  // namespace detail::claims

/// The default claim extractor (see the file comment): English and Chinese memory statements.
/// Never throws on any bytes (text that is not UTF-8 is read as far as it goes).
/// @complexity O(length) with a few hash lookups per word; allocates the claims.
struct default_claim_extractor {
  /// The cue tables and lexicon; nullptr = `claim_lexicon::builtin()`.
  const claim_lexicon* lexicon = nullptr;

  /// Reads one statement.
  [[nodiscard]] claim_analysis operator()(std::string_view text) const {
    const claim_lexicon& lex = lexicon ? *lexicon : claim_lexicon::builtin();
    std::string folded;  // full-width letters and zero-width characters (detail::fold_width)
    if (detail::claims::fold_width(text, folded)) text = folded;
    claim_analysis r;
    std::string holder;
    if (detail::claims::has_cjk(text)) {
      r.lang = "zh";
      const std::string plain = detail::claims::rewrite_chinese_idioms(text);
      for (auto clause : detail::claims::chinese_clauses(plain)) {
        const std::size_t before = r.claims.size();
        const bool hedged = detail::claims::chinese_hedge(clause);
        detail::claims::read_chinese_clause(lex, clause, holder, r.claims, holder);
        if (hedged)
          for (std::size_t k = before; k < r.claims.size(); ++k) r.claims[k].uncertain = true;
        // "比起米饭，用户更喜欢面条": a clause of 比起 alone is the rejected option (order -2,
        // waiting) of the next one, whose holder it takes
        if (before > 0 && r.claims[before - 1].order == -2 && r.claims.size() > before) {
          auto& rejected = r.claims[before - 1];
          rejected.order = -1;
          if (rejected.holder.empty()) rejected.holder = r.claims[before].holder;
          if (r.claims[before].order == 0 && r.claims[before].polarity > 0)
            r.claims[before].order = 1;
        }
      }
      for (auto& c : r.claims)
        if (c.order == -2) c.order = -1;
    } else {
      r.lang = "en";
      const std::string plain = detail::claims::rewrite_english_denials(text);
      for (auto clause : detail::claims::english_clauses(lex, plain)) {
        const std::size_t before = r.claims.size();
        const bool negated = detail::claims::negated_frame(clause);
        const bool hedged = detail::claims::english_hedge(clause);
        detail::claims::read_english_clause(lex, clause, holder, r.claims, holder);
        if (before > 0) {
          detail::claims::resolve_pronoun_object(clause, r.claims, before);
          detail::claims::contrast_denial(clause, r.claims, before);
        }
        for (std::size_t k = before; k < r.claims.size(); ++k) {
          auto& c = r.claims[k];
          if (negated && c.polarity > 0)
            c.polarity = -1;
          else if (negated)
            c.uncertain = true;
          if (hedged) c.uncertain = true;
        }
      }
    }
    if (detail::claims::is_question(text))
      for (auto& c : r.claims) c.uncertain = true;
    if (!r.parsed()) r.lang.clear();
    return r;
  }
};

/// The entity a holder names, as a structured claim writes it: "self" -> "user",
/// "rel:sister" -> "sister", "name:priya/rel:sister" -> "priya's sister", "name:priya" -> "priya",
/// "3p:he" -> "he"; "" stays "".
inline std::string holder_entity(std::string_view holder) {
  std::string out;
  while (!holder.empty()) {
    const std::size_t slash = holder.find('/');
    std::string_view part = holder.substr(0, slash);
    if (const std::size_t colon = part.find(':'); colon != std::string_view::npos)
      part = part.substr(colon + 1);
    if (part == "self") part = "user";
    if (!out.empty()) out += "'s ";
    out += part;
    holder = slash == std::string_view::npos ? std::string_view{} : holder.substr(slash + 1);
  }
  return out;
}

/// The structured claim (memory_record.hpp) for a read statement, as `import --extract-claims`
/// writes it: the first claim with a single-valued attribute becomes a fact (holder entity,
/// attribute, value; "not <value>" when denied: "no longer lives in Porto"); otherwise the first
/// positive claim (else the first) becomes a preference: the object (or the terms without the
/// predicate) as the preference, the scene, the predicate and a stated frequency as the
/// constraint ("eat", "eat, 0.29/day"), the polarity and the holder entity ("user", "wife"; ""
/// when no holder was read). A change from one thing to another is the new state with what it
/// replaced in the constraint ("No longer drinks coffee, switched to tea": tea, "instead of
/// coffee", positive). Preferences, unlike facts, hold many values at once ("eats pork" and
/// "eats beef" do not conflict), and those of different holders never conflict.
/// @return nullopt when nothing was read (`!a.parsed()`).
inline std::optional<claim> structured_claim(const claim_analysis& a) {
  if (!a.parsed()) return std::nullopt;
  auto joined = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
    return s;
  };
  for (const auto& c : a.claims)
    if (!c.attribute.empty() && !c.value.empty())
      return fact_claim{holder_entity(c.holder), c.attribute,
                        (c.polarity < 0 ? "not " : "") + joined(c.value)};
  const text_claim* pick = nullptr;
  for (const auto& c : a.claims)
    if (!c.terms.empty() && (pick == nullptr || (pick->polarity < 0 && c.polarity > 0))) pick = &c;
  if (pick == nullptr) return std::nullopt;
  std::vector<std::string> what =
      pick->any_predicate && !pick->object.empty() ? pick->object : pick->terms;
  std::erase(what, pick->predicate);
  std::string constraint = pick->predicate == "like" ? std::string() : pick->predicate;
  if (pick->frequency >= 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2g/day", pick->frequency);
    constraint += (constraint.empty() ? "" : ", ") + std::string(buf);
  }
  // a change from one thing to another ("No longer drinks coffee, switched to tea") is written
  // as the new state, with what it replaced: (tea, "drink, instead of coffee", positive)
  if (pick->change && pick->polarity > 0)
    for (const auto& c : a.claims)
      if (&c != pick && c.change && c.polarity < 0 && c.holder == pick->holder) {
        std::vector<std::string> old = c.any_predicate && !c.object.empty() ? c.object : c.terms;
        std::erase(old, c.predicate);
        if (old.empty() || old == what) continue;
        constraint += (constraint.empty() ? "instead of " : ", instead of ") + joined(old);
        break;
      }
  return preference_claim{joined(pick->scene), joined(what), constraint,
                          pick->polarity < 0 ? polarity::negative : polarity::positive,
                          holder_entity(pick->holder)};
}

}  // namespace memhealth
