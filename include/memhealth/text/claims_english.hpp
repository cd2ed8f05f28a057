#pragma once
/// @file claims_english.hpp
/// The English reader of the claim extractor (claims.hpp): the holder, a possessed attribute,
/// then one pass over the words (claims_english_words.hpp) for cues, terms, value, rates, scene
/// and time; clauses split at punctuation, conjunctions and a second "and" clause.
/// Internal (namespace detail::claims); use `default_claim_extractor`.

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memhealth/text/claim.hpp"
#include "memhealth/text/claim_idioms.hpp"
#include "memhealth/text/claim_implications.hpp"
#include "memhealth/text/claim_lexicon.hpp"
#include "memhealth/text/claim_measures.hpp"
#include "memhealth/text/claims_english_words.hpp"

namespace memhealth::detail::claims {

namespace cw = claim_words;

// ------------------------------------------------------------------ English

// Whether the first token of `t` is a lowercase name holding the statement ("alice lives in
// berlin", "bob likes tea"): a word the lexicon does not know (no cue, not a noun, verb or
// adjective of WordNet, not the attribute head of "favourite colour is ..."), followed by a
// third-person verb of state or attitude: a residence, employer or similar attribute cue that
// is not a change ("lives", "works", "reports"), or an attitude ("likes", "hates", "prefers").
// Only then: a lowercase word elsewhere, or before another verb, is no holder ("the cat lives
// in berlin", "cats live in berlin", "jazz moved me").
inline bool lowercase_name_holder(const claim_lexicon& lex, const std::vector<token>& t) {
  const auto& english = lex.english();
  if (t.size() < 3) return false;
  const sv w = t[0].w, v = t[1].w;
  if (w.size() < 2 || lex.en(w) != 0 || all_digits(w) ||
      std::any_of(w.begin(), w.end(), [](char ch) { return ch < 'a' || ch > 'z'; }) ||
      std::find(cw::attribute_heads.begin(), cw::attribute_heads.end(), w) !=
          cw::attribute_heads.end())
    return false;
  if (english.lemma(w, word_pos::noun) != w || english.is_lemma(w, word_pos::noun) ||
      english.is_lemma(w, word_pos::verb) || english.is_lemma(w, word_pos::adj) ||
      english.lemma(w, word_pos::verb) != w)
    return false;
  if (!v.ends_with('s') || v.ends_with("ss")) return false;  // third person singular
  const std::string lemma = english.lemma(v, word_pos::verb);
  if (lemma == v || !english.is_lemma(lemma, word_pos::verb)) return false;
  if (lex.en(lemma) & (cw::att_positive | cw::att_negative)) return true;
  return std::any_of(cw::english_attributes.begin(), cw::english_attributes.end(),
                     [&](const cw::attribute_cue& a) { return !a.change && a.verb == lemma; });
}

// A noun phrase without a determiner from `t[from]` to a plural form of "be" ("women are",
// "young people are", "rugby players were"): one to three words, none a cue word (a relative
// noun may be one: "children"), a number or a verb form only, then "are" or "were" and a word
// after it.
inline bool bare_plural_subject(const claim_lexicon& lex, const std::vector<token>& t,
                                std::size_t from) {
  const auto& english = lex.english();
  for (std::size_t j = from; j < t.size() && j <= from + 3; ++j) {
    const sv x = t[j].w;
    if (j > from && (x == "are" || x == "were")) return j + 1 < t.size();
    const std::string noun = english.lemma(x, word_pos::noun);
    if ((lex.en(x) & ~cw::relative) != 0 || all_digits(x) ||
        (english.is_lemma(english.lemma(x, word_pos::verb), word_pos::verb) &&
         !english.is_lemma(noun, word_pos::noun) && !english.is_lemma(x, word_pos::adj)))
      return false;
  }
  return false;
}

// Whether a capitalised first word is the verb of a statement without a subject, as memory
// extractors write them ("Likes dogs", "Enjoys hiking", "Collects stamps", "Moved to Berlin"),
// rather than a name holding what follows ("Rogers likes tea", "Rogers is tall"): the first word
// is an inflected form of a WordNet verb, and the second is no finite verb of its own: not an
// auxiliary or negator, and not an inflected verb that is an attitude or an attribute cue
// ("likes", "lives", "moved"). A second word that is a noun or a gerund ("dogs", "hiking",
// "stamps": WordNet also knows them as verbs) leaves the first one a verb.
inline bool subjectless_first_verb(const claim_lexicon& lex, const std::vector<token>& t) {
  if (t.size() < 2) return false;
  const auto& e = lex.english();
  auto lemma_of = [&](sv w) {
    std::string v = e.lemma(w, word_pos::verb);
    return v != w && e.is_lemma(v, word_pos::verb) ? v : std::string();
  };
  if (lemma_of(t[0].w).empty()) return false;
  const sv w1 = t[1].w;
  if (lex.en(w1) & (cw::aux | cw::negator | cw::att_positive | cw::att_negative)) return false;
  const std::string v1 = lemma_of(w1);
  if (v1.empty()) return true;
  if (lex.en(v1) & (cw::att_positive | cw::att_negative | cw::aversion | cw::terminate))
    return false;
  return std::none_of(cw::english_attributes.begin(), cw::english_attributes.end(),
                      [&](const cw::attribute_cue& a) { return a.verb == v1; });
}

// A time of day as one value "HH:MM" (24 hours) from the words of a value ("10:30", "pm" ->
// "22:30"; "1", "am" -> "01:00"); the words unchanged when they hold no clock time.
inline std::vector<std::string> clock_value(const std::vector<std::string>& v) {
  int h = -1, m = 0;
  bool pm = false, am = false;
  for (const auto& w : v) {
    if (w == "pm" || w.ends_with("pm") || w == "night" || w == "evening") pm = true;
    if (w == "am" || w.ends_with("am")) am = true;
    if (h < 0 && !w.empty() && w[0] >= '0' && w[0] <= '9') {
      // (at most two digits each: "10:30", "1"; longer numbers are no clock time)
      auto two_digits = [](std::string_view x) {
        int v = 0, k = 0;
        for (; k < static_cast<int>(x.size()) && x[k] >= '0' && x[k] <= '9'; ++k) {
          if (k == 2) return -1;
          v = v * 10 + (x[k] - '0');
        }
        return k == 0 ? -1 : v;
      };
      h = two_digits(w);
      if (const auto colon = w.find(':'); colon != std::string::npos)
        m = two_digits(std::string_view(w).substr(colon + 1));
      if (h < 0) h = 99;  // no clock time: the words stay as they are
    }
    if (w == "midnight") h = 0;
    if (w == "noon") h = 12;
  }
  if (h < 0 || h > 24 || m < 0 || m > 59) return v;
  if (pm && h < 12 && !(h < 5 && !am && (std::find(v.begin(), v.end(), "night") != v.end())))
    h += 12;  // ("2 at night" is 02:00)
  if (am && h == 12) h = 0;
  char buf[8];
  std::snprintf(buf, sizeof buf, "%02d:%02d", h % 24, m);
  return {std::string(buf)};
}

// One name for a relative called in several ways (mom / mum / mother, dad / father).
constexpr sv relative_name(sv r) noexcept {
  if (r == "mom" || r == "mum" || r == "mommy" || r == "mummy" || r == "mama") return "mother";
  if (r == "dad" || r == "daddy" || r == "papa") return "father";
  if (r == "hubby") return "husband";
  if (r == "grandma" || r == "granny") return "grandmother";
  if (r == "grandpa") return "grandfather";
  return r;
}

// Reads the tokens of one English clause. `inherited` is the holder of the statement's first
// clause.
inline void read_english_tokens(const claim_lexicon& lex, const std::vector<token>& t,
                                const std::string& inherited, std::vector<text_claim>& out,
                                std::string& first_holder) {
  const auto& english = lex.english();
  const std::size_t n = t.size();
  text_claim c;
  std::size_t i = 0;
  std::string partner;                   // "Sam" of "User and Sam ..."
  std::vector<std::size_t> conjunct_at;  // where "and" / "or" starts another object
  bool verb_conjunct = false;            // one of them begins with a verb's -ing form
  // ---- holder
  bool possessive = false;
  std::string base;
  if (i < n && t[i].w == "the" && i + 1 < n &&
      (t[i + 1].w == "user" || (lex.en(t[i + 1].w) & cw::relative)))
    ++i;
  if (i < n) {
    const sv w = t[i].w;
    if (w == "user" && i + 1 < n && all_digits(t[i + 1].w)) {
      base = "user:" + t[i + 1].w;  // "User 12 ...": one of many users, named by a number
      i += 2;
    } else if (w == "user" || w == "i" || w == "we") {
      base = "self";
      ++i;
    } else if (w == "my" || w == "our") {
      base = "self";
      possessive = true;
      ++i;
    } else if (w == "he" || w == "she" || w == "they") {
      base = "3p:" + std::string(w);
      ++i;
    } else if (w == "his" || w == "her" || w == "their") {
      base = "3p";
      possessive = true;
      ++i;
    } else if (t[i].cap && i == 0 && lex.en(w) == 0 && !all_digits(w) && i + 1 < n &&
               std::find(cw::attribute_heads.begin(), cw::attribute_heads.end(), w) ==
                   cw::attribute_heads.end() &&
               !subjectless_first_verb(lex, t) && t[i + 1].w != "are" && t[i + 1].w != "were" &&
               t[i + 1].w != "have" && english.lemma(w, word_pos::noun) == w &&
               !english.is_lemma(w, word_pos::noun) &&
               // (nor the first word of a plural subject: "Several women are", "Rugby players
               // are")
               !bare_plural_subject(lex, t, i)) {
      // a name: capitalised, no cue word, not a noun WordNet knows ("Paper is ...", "Men are")
      std::string name(w);
      ++i;
      while (i < n && t[i].cap && lex.en(t[i].w) == 0) name += " " + t[i++].w;
      base = "name:" + name;
    } else if (i == 0 && !t[i].cap && lowercase_name_holder(lex, t)) {
      // "alice lives in berlin": a lowercase name, read only where a person reading is clear
      base = "name:" + std::string(w);
      ++i;
    } else if (i == 0 && inherited.empty() && out.empty() && n > 1) {
      // a statement without a subject, as memory extractors write them ("Loves jazz", "Is
      // vegetarian", "Quit smoking", "Name is John"): about the user
      const std::uint32_t c0 = lex.en(w);
      const std::string verb = english.lemma(w, word_pos::verb);
      const bool verb_form = verb != w && english.is_lemma(verb, word_pos::verb) &&
                             !(lex.en(t[1].w) & cw::aux) && !(c0 & cw::stop);
      // (not "No man is ...", "Nobody is ...": a negated subject)
      const bool lead = (c0 & (cw::aux | cw::negator | cw::frequency)) && !(c0 & cw::stop) &&
                        w != "there" && w != "are" && w != "were" &&
                        (w != "no" || t[1].w == "longer") && w != "nobody" && w != "none" &&
                        w != "nothing" && w != "noone" && w != "neither" && w != "nowhere";
      const bool attribute_head = std::find(cw::attribute_heads.begin(), cw::attribute_heads.end(),
                                            w) != cw::attribute_heads.end();
      if (attribute_head) {
        base = "self";
        possessive = true;  // "Favourite colour is blue": the user's
      } else if (lead || verb_form) {
        base = "self";
      }
    }
  }
  if (!base.empty()) {
    if (!possessive && i < n && t[i].w == "s" && i + 1 < n) {
      possessive = true;
      ++i;
    }
    // "<holder>'s <relative> is <Name>" names the relative (an attribute of the holder: "User's
    // manager is Karen Liu"); "<holder>'s <relative> <noun> is ..." is a compound attribute
    // ("mother tongue"); otherwise the relative holds what follows ("User's sister lives ...")
    bool relative_attribute = false;
    if (possessive && i < n && (lex.en(t[i].w) & cw::relative)) {
      std::size_t k = i + 1;
      while (k < n && !(lex.en(t[k].w) & (cw::aux | cw::negator)) && !t[k].w.ends_with('s') &&
             !t[k].w.ends_with("ed") && k < i + 3)
        ++k;
      const bool copula_at = k < n && (t[k].w == "is" || t[k].w == "was");
      if (copula_at && k > i + 1) relative_attribute = true;
      if (copula_at && k == i + 1 && k + 1 < n && t[k + 1].cap) relative_attribute = true;
    }
    // "The user's partner Dana ...": the relative is named; the name holds what follows, as it
    // does where the statement names Dana alone
    if (possessive && i + 2 < n && (lex.en(t[i].w) & cw::relative) && t[i + 1].cap &&
        lex.en(t[i + 1].w) == 0 && !all_digits(t[i + 1].w) &&
        !english.is_lemma(t[i + 1].w, word_pos::noun) && t[i + 2].w != "s") {
      std::string name(t[i + 1].w);
      i += 2;
      while (i < n && t[i].cap && lex.en(t[i].w) == 0) name += " " + t[i++].w;
      base = "name:" + name;
      possessive = false;
      relative_attribute = true;  // (the holder is set below)
    }
    if (possessive && i < n && (lex.en(t[i].w) & cw::relative) && !relative_attribute) {
      c.holder = (base == "self" ? "" : base + "/") + "rel:" + std::string(relative_name(t[i].w));
      ++i;
      possessive = false;
      if (i < n && t[i].w == "s" && i + 1 < n && !(lex.en(t[i + 1].w) & cw::aux)) {
        possessive = true;
        ++i;
      }
    } else {
      c.holder = base;
    }
    // "User and Sam ...": the joint holder is the first one; the other is what a break-up
    // ends ("Kenji and Mei broke up" / "Kenji is dating Mei")
    if (!possessive && i + 1 < n && t[i].w == "and" && t[i + 1].cap) {
      partner = t[i + 1].w;
      i += 2;
    }
  }
  if (c.holder.empty()) c.holder = inherited;
  if (first_holder.empty()) first_holder = c.holder;

  std::vector<std::string> terms, object, value, scene, time, subject;
  std::vector<double> quantities;
  bool predicate_set = false, copula = false, object_open = false, in_value = false;
  // (General rule: a statement without a holder that opens with a plural noun phrase without
  // a determiner, "Women are not dancing", "Several dogs are running", opens with its subject,
  // as one after a determiner does)
  bool subject_zone =
      base.empty() && i < n &&
      ((lex.en(t[i].w) & cw::stop) || all_digits(t[i].w) || number_word(t[i].w) >= 0 ||
       (c.holder.empty() && bare_plural_subject(lex, t, i)));
  // "there is/are" read, its noun phrase not yet begun ("There is no man playing a guitar": the
  // man is the subject, playing the predicate)
  bool existential = false;
  bool prefer_seen = false;
  bool handed_over = false;
  bool rehoming = false;     // "rehomed the parrot with a friend": the friend was not given away
  bool selling = false;      // "sold the Civic for an e-bike": the e-bike was not sold
  bool perfect = false;      // "has played": a present perfect, no one-off event  // a termination
                             // ("sold", "gave"): its object ends at "to <whom>"
  bool past_copula = false;  // the copula was "was" / "were": "was married to Dan" is over
  std::string marital;       // "married" of "is married to Dan": the status, besides the spouse
  bool relative = false;     // inside a relative clause (after "that", "which", "who")
  bool relative_negated = false;   // ... and negated there: its terms are written "not:<term>"
  std::size_t comparative_at = n;  // where "over"/"than"/"instead of" starts the rejected option
  std::size_t qualifier_at = n;    // where "for ..." / "as ..." after the rejected option starts
  bool instead = false;            // ... and it was "instead of": an exclusion, no mere order
  bool preferring = false;         // an attitude of preference ("prefers", "favours")
  bool choosing = false;  // a verb of taking one option ("grabs", "goes for", "would take")

  // ---- a possessed attribute: "<holder>'s <attribute words> is <value>"
  if (possessive) {
    std::size_t k = i;
    while (k < n && t[k].w != "is" && t[k].w != "was" && t[k].w != "are" && t[k].w != "were" &&
           t[k].w != "s")
      ++k;
    if (k < n && k > i && (t[k].w == "is" || t[k].w == "was" || t[k].w == "s")) {
      std::string attr;
      for (std::size_t a = i; a < k; ++a) {
        const sv w = t[a].w;
        if ((lex.en(w) & cw::stop) || w == "one" || w == "and" || w == "only") continue;
        if (!attr.empty()) attr += ' ';
        const std::string noun = english.lemma(w, word_pos::noun);
        attr += english.is_lemma(noun, word_pos::noun) ? noun : term_of(english, w);
      }
      if (!attr.empty()) {
        c.attribute = canonical_attribute(attr);
        c.kind = predicate_class::state;
        i = k + 1;
        in_value = true;
      }
    } else if (english_duration(t)) {
      // "<holder>'s <noun(s)> takes / lasts <a length of time>": the length is the value of
      // the noun ("commute takes over an hour", "lunch break lasts an hour"; one to three words)
      std::size_t v = i;
      while (v < n && v < i + 3 && t[v].w != "takes" && t[v].w != "took" && t[v].w != "lasts" &&
             t[v].w != "lasted" && !(lex.en(t[v].w) & (cw::stop | cw::aux | cw::negator)) &&
             english.is_noun(english.lemma(t[v].w, word_pos::noun)))
        ++v;
      if (v > i && v + 1 < n &&
          (t[v].w == "takes" || t[v].w == "took" || t[v].w == "lasts" || t[v].w == "lasted")) {
        std::string attr;
        for (std::size_t a = i; a < v; ++a) {
          if (!attr.empty()) attr += ' ';
          const std::string noun = english.lemma(t[a].w, word_pos::noun);
          attr += english.is_noun(noun) ? noun : std::string(t[a].w);
        }
        c.attribute = canonical_attribute(attr);
        c.kind = predicate_class::state;
        i = v + 1;
        in_value = true;
      }
    }
  }

  for (; i < n; ++i) {
    const sv w = t[i].w;
    const std::uint32_t cue = lex.en(w);
    const sv next = i + 1 < n ? sv(t[i + 1].w) : sv();
    const bool relative_before = relative;  // in a relative clause before this word
    // a purpose or role after both options of an order qualifies the whole order, not the
    // rejected option ("prefers sneakers over boots for daily wear", "would choose a hamster
    // before a rabbit as a pet")
    if ((w == "for" || w == "as") && comparative_at < terms.size() && qualifier_at == n) {
      qualifier_at = terms.size();
      continue;
    }
    // multi-word cues
    if (w == "no" && next == "longer") {
      c.polarity = -c.polarity;
      c.change = true;
      ++i;
      continue;
    }
    // a past state, "used to", "previously", "formerly": it held and holds no longer (denied
    // now, a change: "used to live in Shanghai" agrees with "lives in Beijing")
    // (not a past report: "previously mentioned liking jazz"; not the passive or "accustomed"
    // after a form of "be" or "get": "a ball is being used to teach a dog", "is used to
    // early mornings")
    const bool be_before =
        i > 0 && (t[i - 1].w == "is" || t[i - 1].w == "are" || t[i - 1].w == "was" ||
                  t[i - 1].w == "were" || t[i - 1].w == "be" || t[i - 1].w == "being" ||
                  t[i - 1].w == "been" || t[i - 1].w == "am" || t[i - 1].w == "get" ||
                  t[i - 1].w == "gets" || t[i - 1].w == "got" || t[i - 1].w == "getting");
    if (((w == "used" && next == "to" && !be_before) ||
         ((w == "previously" || w == "formerly") && next != "mentioned" && next != "said" &&
          next != "stated" && next != "noted" && next != "told" && next != "shared" &&
          next != "reported" && next != "indicated" && next != "expressed")) &&
        !predicate_set) {
      c.polarity = -c.polarity;
      c.change = true;
      i += w == "used" ? 1 : 0;
      continue;
    }
    if ((w == "now" && next == "and" && i + 2 < n && t[i + 2].w == "then") ||
        (w == "from" && next == "time" && i + 2 < n && t[i + 2].w == "to")) {
      c.frequency = 0.15;
      i += (w == "now") ? 2 : 3;
      continue;
    }
    if ((w == "hardly" || w == "almost") && next == "ever") {
      c.frequency = 1.0 / 30;
      ++i;
      continue;
    }
    if (w == "almost" && next == "never") {
      c.frequency = 1.0 / 30;
      ++i;
      continue;
    }
    if (w == "once" && next == "in" && i + 3 < n && t[i + 3].w == "while") {
      c.frequency = 0.15;
      i += 3;
      continue;
    }
    if (w == "for" && next == "now") {  // "has given up training for now"
      ++i;
      continue;
    }
    // hedges name no content ("maybe twice a year", "probably vegetarian")
    if (w == "maybe" || w == "perhaps" || w == "probably" || w == "possibly") continue;
    // "every time", "each time": whenever the occasion comes, no rate of its own
    if ((w == "every" || w == "each") && next == "time") {
      ++i;
      continue;
    }
    // "eats out a lot", "travels all the time": often (not "a lot of coffee", an amount)
    if (w == "a" && next == "lot" && !(i + 2 < n && t[i + 2].w == "of")) {
      c.frequency = 0.5;
      ++i;
      continue;
    }
    if (w == "all" && next == "the" && i + 2 < n && t[i + 2].w == "time") {
      c.frequency = 1.5;
      i += 2;
      continue;
    }
    // a reason ends what the statement says ("quit the choir because rehearsals clashed with
    // work"): its words are no part of the claim
    if (w == "because" || (w == "due" && next == "to")) break;
    if (auto [rate, used] = rate_at(t, i); rate >= 0) {
      c.frequency = rate;
      // what is counted stays a term: "50 books a year" -> book; and its count is an amount
      // ("sleeps 9 hours a night" / "sleeps 5 hours a night")
      bool counted = false;
      for (std::size_t q = i + 1; q + 2 < i + used; ++q) {
        const sv x = t[q].w;
        // (nor the words of a count: "once or twice", "two to three", "a couple of")
        if (x == "times" || x == "time" || (lex.en(x) & (cw::stop | cw::aux)) || x == "or" ||
            x == "to" || x == "couple" || x == "few" || x == "twice" || x == "once" ||
            (q <= i + 2 && (all_digits(x) || number_word(x) >= 0)))
          continue;
        terms.push_back(term_of(english, x));
        if (object_open) object.push_back(terms.back());
        counted = true;
      }
      if (counted && w != "every" && w != "each" && w != "most")
        quantities.push_back(rate * unit_days(t[i + used - 1].w));
      // an amount over a period ("$500 a month", "5000 yuan a month", "50 books a year"), not
      // a count of occasions ("twice a week", "six days a week"): its rate is compared as one
      // amount per day; inside a value ("rent is 5000 yuan a month") it is the value
      bool amount = all_digits(w) || (number_word(w) >= 0 && w != "couple");
      for (std::size_t q = i + 1; q + 2 < i + used && amount; ++q)
        amount = t[q].w != "times" && t[q].w != "time" && unit_days(t[q].w) < 0;
      if (amount) {
        c.amount = true;
        if (in_value) {
          value.push_back(all_digits(w) ? std::string(w)
                                        : std::to_string(static_cast<long long>(number_word(w))));
          for (std::size_t q = i + 1; q + 2 < i + used; ++q)
            if (!(lex.en(t[q].w) & (cw::stop | cw::aux))) value.push_back(term_of(english, t[q].w));
          value.push_back("per " + term_of(english, t[i + used - 1].w));
        }
      }
      if (w == "every" || w == "each" || w == "most") c.routine = term_of(english, next);
      i += used - 1;
      continue;
    }
    // the rejected option of a preference: "X over Y", "X to Y" (after prefer), "X rather than
    // Y", "X instead of Y", "X more than Y", "X above Y", "X ahead of Y", "X before Y"
    const bool comparing = prefer_seen || c.predicate == "like";
    // the preferred option must be named first: a term besides an attitude or ordering verb
    const std::size_t named =
        (c.predicate == "like" || (lex.en(c.predicate) & cw::prefer) || choosing) ? 1 : 0;
    // General rule: a judgement that one option is better than another ("thinks iOS is much
    // better than Android", "finds Java preferable to Python", "finds phone calls nicer than
    // texting") is an order of preference, the first option preferred
    const bool beats = w == "beats" || w == "beat" || w == "trumps";  // ("thinks X beats Y")
    if ((beats || ((w == "better" || w == "preferable" || w == "nicer" || w == "superior") &&
                   (next == "than" || next == "to"))) &&
        comparative_at == n && !c.holder.empty() &&
        (c.predicate == "think" || c.predicate == "find" || c.predicate == "consider" ||
         c.predicate == "believe" || c.predicate == "feel") &&
        terms.size() > 1) {
      comparative_at = terms.size();
      choosing = true;  // (the judgement verb is no part of either option)
      if (!beats) ++i;
      continue;
    }
    if (((w == "rather" && next == "than") || (w == "instead" && next == "of") ||
         (w == "more" && next == "than") || (w == "ahead" && next == "of")) &&
        (comparing || (choosing && w == "rather")) && comparative_at == n && terms.size() > named) {
      comparative_at = terms.size();
      instead = w == "instead";
      ++i;
      continue;
    }
    // ("prefers winter over summer": a bare time word after "over" in an order is its
    // rejected option)
    if ((w == "over" || w == "during" || w == "throughout") &&
        !(w == "over" && prefer_seen && comparative_at == n && i + 1 < n &&
          (lex.en(next) & cw::time) && !(lex.en(next) & cw::event) && terms.size() > 1 && i > 0 &&
          (lex.en(t[i - 1].w) & cw::time))) {
      // "over the summer", "during March": a time, not a rejected option
      std::size_t k = i + 1;
      if (k < n && (t[k].w == "the" || t[k].w == "this" || t[k].w == "last")) ++k;
      if (k < n && (lex.en(t[k].w) & cw::time) && t[k].w != "am") continue;
    }
    if ((comparing || (choosing && w == "over")) && comparative_at == n && terms.size() > named &&
        ((cue & cw::comparative) || w == "above" || (w == "before" && prefer_seen) ||
         (w == "to" && prefer_seen &&
          // "prefers trains to planes", "prefers cycling to driving"; not "prefers to avoid"
          // (a word that is also a noun names the other option: "favours email to phone calls")
          !(english.lemma(next, word_pos::verb) == next && english.is_lemma(next, word_pos::verb) &&
            !english.is_lemma(next, word_pos::noun))))) {
      comparative_at = terms.size();
      continue;
    }
    if (w == "rather" && !predicate_set) {  // "would rather X than Y"
      prefer_seen = true;
      continue;
    }
    if ((w == "at" || w == "on" || w == "in" || w == "for" || w == "after" || w == "before") &&
        i + 1 < n && !in_value) {
      // scene phrases: at home/work/night, on weekends/holiday/business trips, in the morning,
      // for breakfast, after 3 pm
      std::size_t k = i + 1;
      if (k < n && (t[k].w == "the" || t[k].w == "a")) ++k;
      if (k < n) {
        const sv s = t[k].w;
        const bool is_scene =
            s == "home" || s == "work" || s == "night" || s == "weekends" || s == "weekend" ||
            s == "weekdays" || s == "holiday" || s == "holidays" || s == "vacation" ||
            s == "business" || s == "morning" || s == "mornings" || s == "evening" ||
            s == "evenings" || s == "afternoon" || s == "afternoons" || s == "breakfast" ||
            s == "lunch" || s == "dinner" || s == "office" || s == "parties" || s == "party" ||
            s == "trips" || s == "trip" || s == "flights" || s == "restaurants" ||
            s == "weeknights" || s == "client" || (w == "after" && all_digits(s));
        if (is_scene && !(predicate_set && object.empty() && c.any_predicate)) {
          // the scene runs to the end of the clause, or to a frequency ("travels for work
          // constantly", "for work once or twice a year"), which is read as one
          std::size_t q = k;
          for (; q < n; ++q) {
            const sv x = t[q].w;
            if ((lex.en(x) & cw::frequency) || rate_at(t, q).first >= 0) break;
            // ... or to the rejected option of a preference ("would rather cook at home than
            // eat out", "eats at home instead of eating out")
            if (comparing && comparative_at == n &&
                (x == "than" || (x == "instead" && q + 1 < n && t[q + 1].w == "of")))
              break;
            if (lex.en(x) & (cw::stop | cw::aux)) continue;
            scene.push_back(term_of(english, x));
          }
          if (q == n) break;
          i = q - 1;
          continue;
        }
      }
    }
    if (cue & cw::scene) {  // when, while, during ...: the rest of the clause is the scene
      for (std::size_t q = i + 1; q < n; ++q) {
        const sv x = t[q].w;
        if (lex.en(x) & (cw::stop | cw::aux)) continue;
        scene.push_back(term_of(english, x));
      }
      break;
    }
    if ((w == "last" || w == "next" || w == "this") && i + 1 < n &&
        (lex.en(next) & cw::time || next == "week" || next == "month" || next == "year" ||
         next == "fall" || next == "autumn" || next == "spring" || next == "summer" ||
         next == "winter" || next == "semester" || next == "term" || next == "season" ||
         next == "night" || next == "weekend" || next == "morning" || next == "evening" ||
         next == "afternoon")) {
      time.push_back(std::string(w) + " " + std::string(next));
      if (w == "last" || (w == "this" && (next == "morning" || next == "afternoon")))
        c.event = c.event || !c.change;
      ++i;
      continue;
    }
    if (w == "ago") {
      c.event = true;
      time.push_back("ago");
      // "three months ago": the span is part of the time, no term and no count
      if (i >= 1 && unit_days(t[i - 1].w) > 0) {
        const std::string unit = term_of(english, t[i - 1].w);
        if (const auto u = std::find(terms.rbegin(), terms.rend(), unit); u != terms.rend())
          terms.erase(std::next(u).base());
        if (const auto u = std::find(object.rbegin(), object.rend(), unit); u != object.rend())
          object.erase(std::next(u).base());
        if (i >= 2 && !quantities.empty() &&
            (all_digits(t[i - 2].w) || number_word(t[i - 2].w) >= 0))
          quantities.pop_back();
      }
      continue;
    }
    if (copula && !predicate_set && c.attribute.empty() && i + 1 == n && all_digits(w) &&
        std::atof(t[i].w.c_str()) < 130) {
      // "User is 25": an age
      c.attribute = "age";
      c.kind = predicate_class::state;
      value.push_back(std::string(w));
      continue;
    }
    if (all_digits(w) || w.find(':') != sv::npos || (w.size() > 2 && w[0] >= '0' && w[0] <= '9')) {
      // (inside a value, a year after "in" once a value or a rate was read is its date: "rent
      // was $1,200 a month in 2022"; "wedding was in 2019" keeps the year as the value)
      const bool dated = in_value && w.size() == 4 && all_digits(w) && i > 0 &&
                         t[i - 1].w == "in" && (!value.empty() || c.frequency >= 0);
      if (is_time_number(t, i) && (!in_value || dated)) {
        time.push_back(std::string(w));
        continue;
      }
      if (in_value) value.push_back(std::string(w));
      // a count comes before what it counts ("3 kids", "2 cups of tea"); a number after a noun
      // ("item 45", "room 12", "number 7") or at the end names something: a term, not a count
      const bool counts =
          i + 1 < n && !(lex.en(next) & (cw::stop | cw::aux | cw::negator)) && !all_digits(next);
      if (all_digits(w) && counts)
        quantities.push_back(std::atof(t[i].w.c_str()));
      else if (!in_value)
        terms.push_back(std::string(w));
      continue;
    }
    // "in March", "since May", "last March": the month (not the verb or the modal)
    const bool month_after =
        (w == "may" || w == "march") && i > 0 &&
        (t[i - 1].w == "in" || t[i - 1].w == "since" || t[i - 1].w == "until" ||
         t[i - 1].w == "early" || t[i - 1].w == "late" || t[i - 1].w == "mid" ||
         t[i - 1].w == "of" || t[i - 1].w == "the" || t[i - 1].w == "last" || t[i - 1].w == "next");
    // (inside a value a month is a time only as "the March checkup": "blood pressure was 140/90
    // at the March checkup"; "birthday is in March" keeps it)
    if ((month_after && !in_value) ||
        (in_value && i > 0 && t[i - 1].w == "the" && english_month(w) > 0)) {
      time.push_back(std::string(w));
      continue;
    }
    if ((w == "may" || w == "march") && !(i > 0 && all_digits(t[i - 1].w)) &&
        !(i + 1 < n && all_digits(next))) {
      if (w == "may") continue;  // the modal
    } else if ((cue & cw::time) && w != "am" && w != "this" && !in_value &&
               !(w == "next" && next == "to") &&  // "next to a tree" is a place
               // General rule: a time word right after an attitude or ordering verb, or right
               // after the word that opens an order's rejected option, is what the attitude is
               // toward, not when it holds ("prefers summer to winter", "likes mornings better
               // than evenings"; not "swims in summer")
               !(!(cue & cw::event) && i > 0 &&
                 ((lex.en(english.lemma(t[i - 1].w, word_pos::verb)) &
                   (cw::att_positive | cw::att_negative | cw::prefer)) ||
                  (comparative_at != n && comparative_at == terms.size())))) {
      // General rule: "only on Saturdays" (a weekday in the plural after "only") is a weekly
      // routine and all of it: once a week, a frequency, not the date of one occasion ("only
      // plays video games on Saturdays" / "plays video games every day" differ in degree)
      if (c.frequency < 0 && w.size() > 6 && w.ends_with("days") && !in_value &&
          (w == "mondays" || w == "tuesdays" || w == "wednesdays" || w == "thursdays" ||
           w == "fridays" || w == "saturdays" || w == "sundays") &&
          std::any_of(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(i),
                      [](const token& y) { return y.w == "only"; })) {
        c.frequency = 1.0 / 7;
        continue;
      }
      time.push_back(std::string(w));
      if (cue & cw::event) c.event = true;
      continue;
    }
    if (const double v = number_word(w);
        v >= 0 && i + 1 < n && !(lex.en(next) & (cw::aux | cw::negator))) {
      quantities.push_back(v);
      if (in_value) value.push_back(std::to_string(static_cast<long long>(v)));
      continue;
    }
    if (w.ends_with("-free") && w.size() > 5 &&
        !(i + 1 < n && !(lex.en(next) & (cw::stop | cw::aux | cw::scene)))) {
      // "is gluten-free", "eats gluten-free": an aversion; "cruelty-free products" is a modifier
      c.polarity = -c.polarity;
      const std::string base_word = term_of(english, w.substr(0, w.size() - 5));
      terms.push_back(base_word);
      object.push_back(base_word);
      if (!predicate_set) c.any_predicate = true, predicate_set = true;
      if (c.predicate == "go" || c.predicate == "become" || c.predicate == "turn") {
        // "went gluten-free", "became dairy-free": a change to an aversion
        std::erase(terms, c.predicate);
        c.predicate.clear();
        c.any_predicate = true;
        c.change = true;
        c.event = false;
      }
      continue;
    }
    // (a relative clause restricts the object, or a noun-phrase subject: "there is no dog which
    // is furry" denies only furry dogs)
    if ((w == "that" || w == "which" || w == "who") &&
        (predicate_set || (subject_zone && !subject.empty())))
      relative = true;
    // General rule: "without (any) trouble", "with no reaction" after the predicate says how the
    // thing went, not that it did not happen: no negation of the clause, and no part of what
    // the holder does ("eats shrimp every Friday without any reaction" eats shrimp). Only
    // before a noun of a bad outcome (claim_words::trouble_nouns): "coffee without sugar"
    // keeps its denial of sugar.
    if ((w == "without" || (w == "with" && next == "no")) && predicate_set && !relative) {
      std::size_t k = i + 1;
      while (k < n && (t[k].w == "no" || t[k].w == "any" || t[k].w == "a" || t[k].w == "ill" ||
                       t[k].w == "bad" || t[k].w == "side"))
        ++k;
      if (k < n && std::find(cw::trouble_nouns.begin(), cw::trouble_nouns.end(), t[k].w) !=
                       cw::trouble_nouns.end())
        break;
    }
    if (cue & cw::negator) {
      // a negation inside a relative clause ("products that are not tested on animals") is
      // about the relative clause, not the statement's polarity
      if (relative) {
        relative_negated = !relative_negated;
        continue;
      }
      // a negated copula is a copula ("isn't a fan of sushi")
      if (w == "isnt" || w == "arent" || w == "wasnt" || w == "werent" || w == "aint")
        copula = true;
      if (w == "wasnt" || w == "werent") past_copula = true;
      // "doesn't eat meat anymore": "anymore" marks the change of a negation already read, it
      // does not undo it
      if (w == "anymore" && c.polarity < 0) {
        c.change = true;
        continue;
      }
      c.polarity = -c.polarity;
      if (cue & cw::frequency) c.frequency = 0;
      if (cue & cw::change) c.change = true;
      continue;
    }
    if (cue & cw::frequency) {
      c.frequency = cw::frequency_of(w);
      continue;
    }
    if (cue & cw::additive) {
      c.additive = true;
      continue;
    }
    if (cue & cw::aux) {
      // an auxiliary ends a noun-phrase subject, also one of stop words only ("Someone is
      // cleaning a dog": "cleaning" is the verb, not part of the subject); after "there" it
      // opens the noun phrase the existential is about
      subject_zone = existential && !predicate_set && terms.empty();
      existential = false;
      if (w == "is" || w == "are" || w == "was" || w == "were" || w == "am" || w == "be" ||
          w == "s" || w == "m" || w == "re" || w == "being" || w == "been")
        copula = true;
      if (w == "was" || w == "were") past_copula = true;
      if (w == "been" && next == "to" && !predicate_set && i + 2 < n) {
        // "has been to Brazil": has visited it
        copula = false;
        terms.push_back("visit");
        c.predicate = "visit";
        c.kind = predicate_class::state;
        predicate_set = true;
        object_open = true;
        ++i;
        continue;
      }
      if ((w == "has" || w == "have" || w == "had") && !predicate_set && i + 1 < n) {
        // a main verb unless a participle follows ("has dropped", "had been")
        // (past an adverb: "has since moved", "has recently started", "have just sold")
        const bool adverb = (next == "since" || next == "recently" || next == "just" ||
                             next == "already" || next == "finally" || next == "lately" ||
                             next == "now" || next == "actually" || next == "long") &&
                            i + 2 < n;
        const sv x = adverb ? sv(t[i + 2].w) : next;
        const std::string lemma = english.lemma(x, word_pos::verb);
        const bool participle =
            ((lex.en(x) & (cw::aux | cw::negator | cw::frequency | cw::additive)) && x != "no") ||
            (lemma != x && (x.ends_with("ed") || x.ends_with("en") || x == "got" || x == "quit" ||
                            x == "left" || x == "sold" || x == "become"));
        perfect = participle;
        if (!participle) {
          terms.push_back("have");
          c.predicate = "have";
          predicate_set = true;
          object_open = true;
          if (w == "had" && c.frequency < 0) c.event = true;
        }
      }
      if (w == "had" && predicate_set) c.event = c.event || c.frequency < 0;
      continue;
    }
    if (w == "from" && copula && !predicate_set && c.attribute.empty() && i + 1 < n) {
      // "is from Brazil": where the holder comes from
      c.attribute = "origin";
      c.kind = predicate_class::state;
      predicate_set = true;
      in_value = true;
      continue;
    }
    if (in_value && (w == "in" || w == "on" || w == "since" || w == "as") && i + 1 < n &&
        (!value.empty() || !quantities.empty()) &&
        (is_time_number(t, i + 1) || ((lex.en(next) & cw::time) && next != "am"))) {
      in_value = false;  // the value's date: a time qualifier, not a part of the value
      continue;
    }
    if (in_value && t[i].cap && w.size() <= 2 && i + 1 == n) {
      value.push_back(std::string(w));  // "blood type is A": a letter, not the article
      continue;
    }
    if ((w == "in" || w == "for") && c.polarity < 0 &&
        (next == "years" || next == "ages" || next == "decades" || next == "months")) {
      c.change = true;  // "hasn't played the piano in years": no longer
      c.event = false;
      ++i;
      continue;
    }
    if ((w == "former" || w == "ex") && !predicate_set) {
      c.polarity = -c.polarity;  // "is a former smoker": no longer smokes
      c.change = true;
      continue;
    }
    if (copula && !predicate_set && c.attribute.empty() &&
        (w == "unemployed" || w == "jobless" || w == "retired")) {
      // "is unemployed", "is retired": works for no employer
      c.attribute = "employer";
      c.kind = predicate_class::state;
      c.polarity = -c.polarity;
      if (w == "retired") c.change = true;
      predicate_set = true;
      continue;
    }
    if ((w == "to" || (w == "with" && rehoming) || (w == "for" && selling)) && handed_over &&
        !object.empty() && c.attribute.empty()) {
      object_open = false;  // "sold the car to a cousin": the cousin is not what was sold
      break;
    }
    // General rule: a temporal conjunction before a verb's -ing form ("before moving house",
    // "after having kids", "since starting university") opens a clause that dates the claim;
    // once the claim has its predicate and object, that clause is no part of either ("sold
    // their piano before moving house" sold the piano)
    if ((w == "before" || w == "after" || w == "since" || w == "until" || w == "when" ||
         w == "while") &&
        predicate_set && !object.empty() && c.attribute.empty() && !in_value && i + 1 < n &&
        next.size() > 4 && next.ends_with("ing") &&
        english.is_lemma(english.lemma(next, word_pos::verb), word_pos::verb))
      break;
    if ((w == "and" || w == "or") && object_open && !object.empty() && !in_value) {
      conjunct_at.push_back(object.size());  // "hates crowds and festivals": two objects
      // (a second verb phrase, "holding a sign and seeking money", is no second object)
      if (i + 1 < n && next.size() > 4 && next.ends_with("ing") &&
          english.is_lemma(english.lemma(next, word_pos::verb), word_pos::verb))
        verb_conjunct = true;
    }
    if ((w == "who" || w == "which") && !(w == "who" ? relative_before : relative) &&
        c.attribute.empty() &&
        ((predicate_set && !object.empty()) || (copula && !predicate_set && !terms.empty()))) {
      // "is a night owl who does their best work after midnight", "is an introvert who
      // recharges alone": the relative clause describes the object; it is no part of the claim
      // (only "who", which opened that clause itself: "there is no dog which is furry" keeps
      // its restriction)
      break;
    }
    if ((cue & cw::stop) && !(cue & cw::relative)) {
      // the object runs on through its restrictions ("games with horror elements", "music
      // involving screaming") and ends at a reason, a time or a purpose ("tennis after a knee
      // injury", "Deloitte to start a company", "pop music as I find it vapid")
      if (object_open && !object.empty() &&
          (w == "after" || w == "because" || w == "since" || w == "as" || w == "due" || w == "so" ||
           w == "until" || w == "though" || w == "if" ||
           (w == "to" && i + 1 < n && !(lex.en(next) & (cw::stop | cw::aux)) &&
            english.is_lemma(english.lemma(next, word_pos::verb), word_pos::verb) &&
            !english.is_lemma(next, word_pos::adj) && !english.is_lemma(next, word_pos::noun))))
        object_open = false;
      if (w == "there") {
        subject_zone = false;
        existential =
            i + 1 < n && (next == "is" || next == "are" || next == "was" || next == "were");
      }
      continue;
    }
    // ---- a content word
    // a manner adverb ("strongly dislikes", "is happily playing", "is playing happily")
    // modifies the verb: no term of its own, so "isn't playing happily" and "is happily
    // playing" deny and assert the same terms (adjectives such as "early", "daily" stay)
    if (w == "mildly" || w == "slightly") {  // "mildly spicy": a degree, kept as "mild"
      terms.push_back("mild");
      if (object_open) object.push_back("mild");
      continue;
    }
    if (!subject_zone && w.size() > 4 && w.ends_with("ly") && english.is_lemma(w, word_pos::adv) &&
        !english.is_lemma(w, word_pos::verb) && !english.is_lemma(w, word_pos::adj))
      continue;
    const bool verb_slot = !predicate_set && !subject_zone;
    std::string lemma =
        verb_slot && english.is_lemma(english.lemma(w, word_pos::verb), word_pos::verb)
            ? english.lemma(w, word_pos::verb)
            : term_of(english, w);
    const std::uint32_t lc = cue | lex.en(lemma);
    if (subject_zone) {
      // a noun phrase subject ("A man is playing ..."): its words are terms
      if (i + 1 < n && (lex.en(next) & (cw::aux | cw::negator))) subject_zone = false;
      // (an existential's noun phrase ends at a participle, past manner adverbs: "no man
      // playing a guitar", "no cat hungrily drinking milk")
      std::size_t k = i + 1;
      while (k + 1 < n && t[k].w.size() > 4 && t[k].w.ends_with("ly") &&
             english.is_lemma(t[k].w, word_pos::adv))
        ++k;
      if (k < n && t[k].w.size() > 4 && t[k].w.ends_with("ing") && !(lex.en(t[k].w) & cw::stop) &&
          english.is_lemma(english.lemma(t[k].w, word_pos::verb), word_pos::verb))
        subject_zone = false;
      terms.push_back(term_of(english, w));
      subject.push_back(terms.back());
      continue;
    }
    if (in_value) {
      value.push_back(lemma);
      continue;
    }
    if ((w == "years" || w == "year") && next == "old" && !quantities.empty() &&
        quantities.back() >= 0 && quantities.back() < 200) {  // (a number, not an overflow)
      c.attribute = "age";
      c.kind = predicate_class::state;
      value.push_back(std::to_string(static_cast<long long>(quantities.back())));
      ++i;
      continue;
    }
    if (verb_slot && i + 3 < n &&
        (((lemma == "go" || lemma == "get") && next == "to" &&
          (t[i + 2].w == "bed" || t[i + 2].w == "sleep")) ||
         ((lemma == "wake" || lemma == "get") && next == "up")) &&
        (t[i + 2].w == "at" || t[i + 3].w == "at" || t[i + 3].w == "around" ||
         t[i + 2].w == "around")) {
      // "goes to bed at 10:30 pm", "wakes up at 6": a time of day the holder keeps (one at a
      // time, like "bedtime is around 1 am")
      c.attribute = lemma == "wake" || next == "up" ? "wake time" : "bedtime";
      c.kind = predicate_class::state;
      predicate_set = true;
      in_value = true;
      i += next == "up" ? 1 : 2;
      continue;
    }
    if (verb_slot && lemma == "turn" && all_digits(next) && std::atof(t[i + 1].w.c_str()) < 130) {
      // "turned 40 last month": now 40
      c.attribute = "age";
      c.kind = predicate_class::state;
      c.change = true;
      predicate_set = true;
      value.push_back(std::string(next));
      ++i;
      continue;
    }
    if (lc & cw::restrictive) c.restrictive = true;
    if (verb_slot && lemma == "get" && i + 1 < n &&
        std::find(cw::english_marital.begin(), cw::english_marital.end(), next) !=
            cw::english_marital.end())
      continue;  // "got married": the status is the predicate
    if (verb_slot) {
      predicate_set = true;
      object_open = true;
      // (an adjective of a memory statement's holder is a state: "is outgoing", "is retired")
      const bool participle_after_copula =
          copula && (w.ends_with("ing") || w.ends_with("ed") || w.ends_with("en") || w != lemma) &&
          !(!c.holder.empty() && english.is_lemma(w, word_pos::adj));
      if (copula && (cue & (cw::evaluation_pos | cw::evaluation_neg))) {
        // "is hooked on X", "is obsessed with X", "is fond of X": an attitude, even when the
        // word has the form of a participle
        c.predicate = "like";
        c.kind = predicate_class::preference;
        if (cue & cw::evaluation_neg) c.polarity = -c.polarity;
        terms.push_back("like");
        continue;
      }
      const bool got = i > 0 && (t[i - 1].w == "got" || t[i - 1].w == "get" ||
                                 t[i - 1].w == "gets" || t[i - 1].w == "getting");
      if ((copula || got) && std::find(cw::english_marital.begin(), cw::english_marital.end(), w) !=
                                 cw::english_marital.end()) {
        if (got) c.change = true;  // "got married", "got divorced"
        // "is married", "is single", "is engaged to Sam" (the spouse, and the status too)
        c.attribute = "marital status";
        c.kind = predicate_class::state;
        value.push_back(w == "widow" || w == "widower" ? std::string("widowed") : std::string(w));
        if (i + 1 < n && next == "to") {
          c.attribute = "spouse";
          if (!past_copula) marital = std::string(w);
          value.clear();
          ++i;
        }
        in_value = true;
        continue;
      }
      if (lc & cw::att_positive) {
        c.predicate = "like";
        c.kind = predicate_class::preference;
        terms.push_back("like");
        if (lc & cw::prefer) prefer_seen = preferring = true;
        continue;
      }
      if (lc & cw::prefer) prefer_seen = true;  // an ordering verb: "values X above Y"
      // General rule: a verb of taking or asking for one thing ("grabs", "goes for", "reaches
      // for", "opts for", "asks for", "selects", "would take") orders two options when "over"
      // or "rather than" names the other: "goes for Thai food over Indian" likes Thai food
      // and rejects Indian as "picks Thai food over Indian" does (a holder's statement only:
      // "a dog is taking a ball over the fence" is a scene)
      if (!c.holder.empty() && !(lc & cw::prefer) &&
          (lemma == "grab" || lemma == "take" || lemma == "select" ||
           ((lemma == "go" || lemma == "reach" || lemma == "opt" || lemma == "ask") &&
            next == "for")))
        choosing = true;
      if (lc & cw::att_negative) {
        c.predicate = "like";
        c.kind = predicate_class::preference;
        c.polarity = -c.polarity;
        terms.push_back("like");
        continue;
      }
      if ((lc & cw::tolerate) && c.polarity < 0 && !w.ends_with("ing")) {
        // "can't stand X" is an attitude; "is not standing" is a posture
        c.predicate = "like";
        c.kind = predicate_class::preference;
        terms.push_back("like");
        continue;
      }
      if (lc & cw::aversion) {
        c.any_predicate = true;
        c.kind = predicate_class::preference;
        c.polarity = -c.polarity;
        continue;
      }
      if ((lc & cw::terminate) && !copula) {
        handed_over = true;
        rehoming = w.starts_with("rehom");
        selling = lemma == "sell";
        c.any_predicate = true;
        c.change = true;
        c.polarity = -c.polarity;
        c.kind = predicate_class::state;
        continue;
      }
      // "gave up X", "gave away X", "called off X", "split up", "broke up", "kicked the habit",
      // "moved out of X"
      if (((lemma == "give" || lemma == "call" || lemma == "split" || lemma == "break" ||
            lemma == "pack") &&
           (next == "up" || next == "away" || next == "off")) ||
          (lemma == "move" && next == "out") ||
          (lemma == "kick" && next == "the" && i + 2 < n && t[i + 2].w == "habit") ||
          (lemma == "get" && next == "rid") || (lemma == "cut" && next == "out") ||
          (lemma == "shave" && next == "off") || (lemma == "drop" && next == "out") ||
          (lemma == "step" && next == "down")) {
        c.any_predicate = true;
        c.change = true;
        c.polarity = -c.polarity;
        c.kind = predicate_class::state;
        ++i;
        if ((lemma == "move" || lemma == "get" || lemma == "drop") && i + 1 < n &&
            t[i + 1].w == "of")
          ++i;
        handed_over = true;
        continue;
      }
      // "gave Miso to a neighbour", "donated the piano to a school", "closed the account":
      // the object left the holder (the recipient after "to" is no part of it)
      if ((lemma == "give" || lemma == "donate" || lemma == "close" || lemma == "hand") &&
          w != lemma && !copula) {
        std::size_t k = i + 1;
        while (k < n && t[k].w != "to") ++k;
        if (lemma == "close" || k < n) {
          c.any_predicate = true;
          c.change = true;
          c.polarity = -c.polarity;
          c.kind = predicate_class::state;
          handed_over = true;
          continue;
        }
      }
      if ((lc & cw::change) && !(lc & cw::att_positive)) {
        c.change = true;
        predicate_set = false;  // "started eating meat": the predicate is the next verb
        object_open = false;
        // "moved to X", "relocated to X", "switched to X", "switched from X to Y"
        if ((lemma == "move" || lemma == "relocate") && next == "back" && i + 2 < n &&
            t[i + 2].w == "to")
          ++i;  // "moved back to Chicago"
        const sv to_from = i + 1 < n ? sv(t[i + 1].w) : sv();
        // "replaced the Samsung with a Pixel": the Samsung negated, the Pixel asserted
        const bool replace_with =
            lemma == "replace" &&
            std::any_of(t.begin() + static_cast<std::ptrdiff_t>(i) + 1, t.end(),
                        [](const token& x) { return x.w == "with"; });
        if (((lemma == "switch" || lemma == "move" || lemma == "convert" || lemma == "change" ||
              lemma == "relocate") &&
             i + 1 < n && (to_from == "from" || to_from == "to")) ||
            replace_with) {
          // "switched from X to Y": X negated, Y asserted; "moved to Y": residence Y
          std::size_t k = replace_with ? i : i + 1;
          std::vector<std::string> from, to;
          std::vector<std::string> rest_scene;
          bool in_to = !replace_with && to_from == "to";
          for (++k; k < n; ++k) {
            const sv x = t[k].w;
            if ((x == "to" || (replace_with && x == "with")) && !in_to) {
              in_to = true;
              continue;
            }
            if (x == "in" || x == "at" || x == "for" || x == "on" || x == "when" || x == "after" ||
                x == "during") {
              for (std::size_t q = k + 1; q < n; ++q)
                if (!(lex.en(t[q].w) & (cw::stop | cw::aux)))
                  rest_scene.push_back(term_of(english, t[q].w));
              break;
            }
            // ("switched to an iPhone last autumn": the time is no part of the new thing)
            if (x == "last" || x == "this" || x == "since" || x == "ago" ||
                ((lex.en(x) & cw::time) && x != "am"))
              break;
            if (lex.en(x) & (cw::stop | cw::aux)) continue;
            (in_to ? to : from).push_back(term_of(english, x));
          }
          // a residence is a name ("moved to Leeds") or a dwelling ("moved to a bigger flat")
          bool place = false;
          for (std::size_t q = i + 1; q < n; ++q) {
            const sv x = t[q].w;
            if (x == "in" || x == "at" || x == "for" || x == "on" || x == "when") break;
            if ((t[q].cap && !(lex.en(x) & (cw::stop | cw::aux))) ||
                std::find(cw::dwelling_nouns.begin(), cw::dwelling_nouns.end(),
                          term_of(english, x)) != cw::dwelling_nouns.end())
              place = true;
          }
          if ((lemma == "move" || lemma == "relocate") && from.empty() && place) {
            c.attribute = "residence";
            c.kind = predicate_class::state;
            c.value = to;
            c.terms = to;
            sort_unique(c.value);
            sort_unique(c.terms);
            out.push_back(std::move(c));
            return;
          }
          sort_unique(rest_scene);
          if (!from.empty()) {
            text_claim x;
            x.holder = c.holder;
            x.kind = predicate_class::habit;
            x.polarity = -1;
            x.any_predicate = true;
            x.change = true;
            x.terms = from;
            x.object = from;
            x.scene = rest_scene;
            sort_unique(x.terms);
            sort_unique(x.object);
            out.push_back(std::move(x));
          }
          if (!to.empty()) {
            text_claim y;
            y.holder = c.holder;
            y.kind = predicate_class::habit;
            y.change = true;
            y.replaces = from.empty();  // "switched to tea": whatever it replaced
            y.terms = to;
            y.object = to;
            y.scene = rest_scene;
            sort_unique(y.terms);
            sort_unique(y.object);
            out.push_back(std::move(y));
          }
          return;
        }
        continue;
      }
      // single-valued attributes from a verb and its preposition ("lives in", "works at")
      for (const auto& a : cw::english_attributes)
        if (a.verb == lemma && (a.prep.empty() || a.prep == next)) {
          // "is called Maya", "is named Ella", "goes by Sam": a name is given in the passive
          // ("calls their mother daily" names no one)
          if (a.attribute == "name" && a.verb != "go" && !copula) continue;
          c.attribute = std::string(a.attribute);
          c.change = c.change || a.change;
          c.kind = predicate_class::state;
          c.predicate = lemma;
          in_value = true;
          if (!a.prep.empty()) ++i;
          break;
        }
      if (in_value) continue;
      if (copula && !participle_after_copula) {
        // "is vegetarian", "is married", "is a Leo", "is 34 years old"
        if (lc & (cw::evaluation_pos | cw::evaluation_neg)) {
          // "is fond of X", "is a big fan of X", "is keen on X"
          c.predicate = "like";
          c.kind = predicate_class::preference;
          if (lc & cw::evaluation_neg) c.polarity = -c.polarity;
          terms.push_back("like");
          continue;
        }
        c.kind = predicate_class::state;
        predicate_set = true;
        // an adjective stays itself ("outgoing", not the verb "outgo")
        terms.push_back(english.is_lemma(w, word_pos::adj) ? std::string(w) : term_of(english, w));
        object.push_back(terms.back());
        continue;
      }
      c.predicate = lemma;
      c.kind = c.frequency >= 0 ? predicate_class::habit : predicate_class::state;
      if (past_form(lex, w, lemma) && !c.change && !copula && !perfect) c.event = true;
      terms.push_back(lemma);
      continue;
    }
    // later content words
    if (lc & (cw::evaluation_pos | cw::evaluation_neg)) {
      // "finds spicy food unbearable", "thinks opera is boring", "a big fan of"
      if (c.predicate != "like") {
        if (!c.predicate.empty())
          terms.erase(std::remove(terms.begin(), terms.end(), c.predicate), terms.end());
        c.predicate = "like";
        c.kind = predicate_class::preference;
        terms.push_back("like");
        if (lc & cw::evaluation_neg) c.polarity = -c.polarity;
        object.clear();
      }
      continue;
    }
    if ((lc & (cw::att_positive | cw::att_negative)) && c.predicate == "have") {
      // "has a strong dislike for X", "has a love of X": the attitude, as a noun; the words
      // before it ("strong") modify the noun
      terms.clear();
      c.predicate = "like";
      c.kind = predicate_class::preference;
      if (lc & cw::att_negative) c.polarity = -c.polarity;
      terms.push_back("like");
      object = terms;
      object_open = true;
      continue;
    }
    if ((lc & cw::aversion) && !c.any_predicate &&
        (copula || c.predicate.empty() || c.predicate == "have" ||
         (terms.size() == 1 && t[i - 1].w == "to" &&
          (c.predicate == "like" || c.predicate == "need" || c.predicate == "want" ||
           c.predicate == "try" || c.predicate == "plan" || c.predicate == "decide" ||
           c.predicate == "choose" || c.predicate == "tend" || c.predicate == "intend" ||
           c.predicate == "aim" || c.predicate == "wish" || c.predicate == "hope")))) {
      // "is allergic to X", "has a shellfish allergy", "prefers to avoid X", "needs to avoid
      // X": an aversion towards the other terms ("has a strong aversion to X": the adjectives
      // before the noun modify it)
      if (!c.predicate.empty())
        terms.erase(std::remove(terms.begin(), terms.end(), c.predicate), terms.end());
      // (an intensity, not what the aversion is to: "a peanut allergy" keeps "peanut")
      constexpr sv intensity[] = {"strong",  "severe",   "mild",    "slight",   "deep",
                                  "serious", "bad",      "real",    "huge",     "big",
                                  "intense", "lifelong", "growing", "terrible", "major"};
      if (c.predicate == "have" && i > 0 &&
          std::find(std::begin(intensity), std::end(intensity), t[i - 1].w) !=
              std::end(intensity)) {
        const auto q = std::find(terms.begin(), terms.end(), term_of(english, t[i - 1].w));
        if (q != terms.end()) terms.erase(q);
      }
      c.predicate.clear();
      c.any_predicate = true;
      c.polarity = -c.polarity;
      c.kind = predicate_class::preference;
      object = terms;
      object_open = true;
      continue;
    }
    if (w == "year") continue;
    // a negated relative clause restricts the object the other way: "products that are not
    // tested on animals" is no product "tested on animals"
    if (relative_negated) lemma = "not:" + lemma;
    terms.push_back(lemma);
    if (object_open) object.push_back(lemma);
  }
  if (c.kind == predicate_class::unknown && !terms.empty())
    c.kind = c.frequency >= 0 ? predicate_class::habit : predicate_class::state;
  if (c.event && !c.change && c.kind != predicate_class::preference)
    c.kind = predicate_class::event;
  // "prefers X" with no other option named: X is the preferred option of an order whose
  // rejected option is unsaid ("prefers coffee" denies "prefers tea over coffee")
  if (preferring && comparative_at == n && c.polarity > 0) c.order = 1;
  // "prefers X over Y": like X, and Y rejected
  if (comparative_at < terms.size()) {
    if (c.predicate != "like") {  // an ordering verb or "would rather": both sides are likes
      if (!c.predicate.empty() && ((lex.en(c.predicate) & cw::prefer) || choosing)) {
        const auto at = std::find(terms.begin(), terms.end(), c.predicate);
        if (at != terms.end() && static_cast<std::size_t>(at - terms.begin()) < comparative_at) {
          terms.erase(at);
          --comparative_at;
          if (qualifier_at != n) --qualifier_at;
        }
      }
      c.predicate = "like";
      c.kind = predicate_class::preference;
      terms.insert(terms.begin(), "like");
      ++comparative_at;
      if (qualifier_at != n) ++qualifier_at;
    }
    text_claim rejected;
    rejected.holder = c.holder;
    rejected.kind = predicate_class::preference;
    rejected.predicate = "like";
    rejected.polarity = -c.polarity;
    // (an order of preference; "X instead of Y" excludes Y)
    if (!instead) {
      rejected.order = -1;
      c.order = 1;
    }
    const std::size_t rejected_end = std::min(qualifier_at, terms.size());
    rejected.terms.assign(terms.begin() + static_cast<std::ptrdiff_t>(comparative_at),
                          terms.begin() + static_cast<std::ptrdiff_t>(rejected_end));
    rejected.terms.push_back("like");
    rejected.object = rejected.terms;
    rejected.scene = scene;
    // (the preferred option keeps the qualifier of the order)
    terms.erase(terms.begin() + static_cast<std::ptrdiff_t>(comparative_at),
                terms.begin() + static_cast<std::ptrdiff_t>(rejected_end));
    sort_unique(rejected.terms);
    sort_unique(rejected.object);
    sort_unique(rejected.scene);
    out.push_back(std::move(rejected));
    object.erase(std::remove_if(object.begin(), object.end(),
                                [&](const std::string& o) {
                                  return std::find(terms.begin(), terms.end(), o) == terms.end();
                                }),
                 object.end());
  }
  // an aversion to several objects is one to each ("dislikes desserts and sugary snacks":
  // dislikes desserts, dislikes sugary snacks): one more claim per object, besides the whole;
  // so is a negated verb's ("doesn't wear glasses or contacts", "is not wearing bunny ears and
  // race numbers": neither), but not a negated one-off event, nor two verb phrases ("no man
  // holding a sign and seeking money" may deny only the two together)
  if (c.polarity < 0 &&
      (c.kind == predicate_class::preference ||
       (!c.predicate.empty() && !c.event && !verb_conjunct)) &&
      !conjunct_at.empty() && comparative_at == n && c.attribute.empty() &&
      conjunct_at.back() < object.size()) {
    std::vector<std::string> rest;  // the terms outside the object (the predicate)
    for (const auto& x : terms)
      if (std::find(object.begin(), object.end(), x) == object.end()) rest.push_back(x);
    conjunct_at.insert(conjunct_at.begin(), 0);
    conjunct_at.push_back(object.size());
    for (std::size_t k = 0; k + 1 < conjunct_at.size(); ++k) {
      if (conjunct_at[k] >= conjunct_at[k + 1]) continue;
      text_claim part = c;
      part.object.assign(object.begin() + static_cast<std::ptrdiff_t>(conjunct_at[k]),
                         object.begin() + static_cast<std::ptrdiff_t>(conjunct_at[k + 1]));
      part.terms = rest;
      part.terms.insert(part.terms.end(), part.object.begin(), part.object.end());
      part.scene = scene;
      part.time = time;
      sort_unique(part.terms);
      sort_unique(part.object);
      sort_unique(part.scene);
      sort_unique(part.time);
      out.push_back(std::move(part));
    }
  }
  if (c.any_predicate && c.change) drop_service_nouns(terms, object);
  if (c.any_predicate && c.change && terms.empty() && !partner.empty()) {
    terms.push_back(partner);  // "Kenji and Mei broke up": no longer with Mei
    object.push_back(partner);
  }
  // General rule: the end of an engagement or a marriage ("broke off her engagement to Tom",
  // "called off the engagement", "divorced Daniel") denies the marital status it was
  // ("engaged", "married"), as "is no longer engaged" does; a divorce is a change, not a one-off
  // event to weigh against a lasting state
  if (c.attribute.empty() && c.polarity > 0 && c.predicate == "divorce") {
    c.attribute = "marital status";
    value = {"married"};
    c.polarity = -1;
    c.change = true;
    c.event = false;
    c.kind = predicate_class::state;
  } else if (c.attribute.empty() && c.polarity < 0 && c.any_predicate && c.change) {
    for (const auto& o : object)
      if (o == "engagement" || o == "marriage") {
        c.attribute = "marital status";
        value = {o == "engagement" ? "engaged" : "married"};
        c.event = false;
        break;
      }
  }
  c.terms = std::move(terms);
  c.object = std::move(object);
  c.subject = std::move(subject);
  sort_unique(c.subject);
  c.value = std::move(value);
  c.scene = std::move(scene);
  c.time = std::move(time);
  c.quantities = std::move(quantities);
  sort_unique(c.terms);
  sort_unique(c.object);
  sort_unique(c.value);
  sort_unique(c.scene);
  sort_unique(c.time);
  std::sort(c.quantities.begin(), c.quantities.end());
  // an attribute whose value is only a date or time ("the yoga class is on Monday at 7 pm") is
  // an appointment: its value is a time qualifier; a birthday or an age stays a value
  // a height or weight in one unit ("5 ft 6 in tall" / "is 168 cm": 168); a year of birth
  if (c.polarity > 0 && (c.attribute.empty() || c.attribute == "height" || c.attribute == "weight"))
    if (const auto m = english_measure(t)) {
      c.attribute = m->attribute;
      c.kind = predicate_class::state;
      c.value = {measure_text(m->value)};
      c.terms = c.value;
      c.predicate.clear();
    }
  // a birthday by its month, and day when one is given ("was born in March", "birthday is
  // on 12 July": "03", "07-12"), compared as numbers by the judge; a place of birth stays one
  if (c.polarity > 0 && (c.attribute == "birthday" || c.attribute == "birthplace") &&
      std::all_of(c.value.begin(), c.value.end(), [&](const std::string& v) {
        return (lex.en(v) & cw::time) || all_digits(v) || english_month(v) > 0 ||
               (v.size() > 2 && v[0] >= '0' && v[0] <= '9');
      }))
    if (const auto md = english_month_day(t)) {
      c.attribute = "birthday";
      c.kind = predicate_class::state;
      c.value = {*md};
      c.terms = c.value;
      c.time.clear();
      c.predicate.clear();
    }
  if ((c.attribute == "birthplace" || c.attribute == "birth year") && c.value.size() == 1 &&
      c.value.front().size() == 4 && all_digits(c.value.front()))
    c.attribute = "birth year";  // "was born in 1985"
  if (c.attribute == "bedtime" || c.attribute == "wake time" || c.attribute == "wake-up time")
    c.value = clock_value(c.value);
  // (a value that only names a time is when, not what: "appointment is on Tuesday"; but not an
  // amount, "salary is 80k", nor the value of a favourite, "favourite season is summer")
  auto amount = [](const std::string& v) {
    return v.size() > 1 && v[0] >= '0' && v[0] <= '9' &&
           (v.back() == 'k' || v.back() == 'm' || v.ends_with("bn")) &&
           all_digits(sv(v).substr(0, v.size() - (v.ends_with("bn") ? 2 : 1)));
  };
  if (!c.attribute.empty() && !c.value.empty() && c.attribute != "birthday" &&
      c.attribute != "age" && c.attribute != "bedtime" && c.attribute != "wake time" &&
      !c.attribute.starts_with("favourite") && !c.attribute.starts_with("favorite") &&
      std::all_of(c.value.begin(), c.value.end(),
                  [&](const std::string& v) {
                    return (lex.en(v) & cw::time) || all_digits(v) ||
                           v.find(':') != std::string::npos || v == "noon" || v == "midnight" ||
                           (v.size() > 2 && v[0] >= '0' && v[0] <= '9' && !amount(v));
                  }) &&
      !std::all_of(c.value.begin(), c.value.end(),
                   [](const std::string& v) { return all_digits(v); })) {  // "42" is a size
    for (auto& v : c.value) c.time.push_back(std::move(v));
    c.value.clear();
    sort_unique(c.time);
  }
  // General rule: a length of time is the value of the attribute it is stated for, in minutes
  // ("commute is 10 minutes" / "commute takes over an hour": "10 min" / "60 min"; the judge
  // compares them as amounts)
  if (c.polarity > 0 && !c.attribute.empty() && c.attribute != "height" &&
      c.attribute != "weight" && c.attribute != "age" && c.attribute != "birthday" &&
      c.attribute != "birth year")
    if (const auto d = english_duration(t)) {
      c.value = {measure_text(*d) + " min"};
      c.kind = predicate_class::state;
      // (the appointment rule above took its number and unit for a time)
      std::erase_if(c.time, [](const std::string& v) {
        return all_digits(v) || minutes_in(v) > 0 || (v.size() > 1 && v[0] >= '0' && v[0] <= '9');
      });
    }
  if (!c.attribute.empty())  // the value is what differs; the terms keep it for containment
    for (const auto& v : c.value) c.terms.push_back(v);
  sort_unique(c.terms);
  // "is a nurse": the occupation (one at a time); the copula's one noun, or an adjective and it
  if (c.attribute.empty() && c.predicate.empty() && !c.any_predicate && copula &&
      !c.object.empty() && c.object.size() <= 2 && c.object == c.terms &&
      std::any_of(c.object.begin(), c.object.end(), [](const std::string& o) {
        return std::find(cw::english_occupations.begin(), cw::english_occupations.end(), o) !=
               cw::english_occupations.end();
      })) {
    c.attribute = "occupation";
    c.value = c.object;
  }
  // "is a practising Catholic", "is Jewish": the religion (one at a time)
  if (c.attribute.empty() && !c.any_predicate && copula && !c.object.empty() &&
      c.object.size() <= 2 &&
      (c.predicate.empty() || c.predicate == "practise" || c.predicate == "practice")) {
    const auto r = std::find_if(c.object.begin(), c.object.end(), [](const std::string& o) {
      return std::find(cw::english_religions.begin(), cw::english_religions.end(), o) !=
             cw::english_religions.end();
    });
    if (r != c.object.end()) {
      c.attribute = "religion";
      c.value = {*r};
    }
  }
  add_restrictions(c, out);
  if (!marital.empty() && c.attribute == "spouse") {
    // "is married to Dan" states the marital status too ("is divorced" conflicts with it)
    text_claim m;
    m.holder = c.holder;
    m.kind = predicate_class::state;
    m.attribute = "marital status";
    m.value = {marital};
    m.terms = {marital};
    m.polarity = c.polarity;
    m.change = c.change;
    out.push_back(std::move(m));
  }
  out.push_back(std::move(c));
}

// Where "and" joins two clauses rather than two objects: before a pronoun, an auxiliary, a
// negator or change marker, or a past-tense verb ("bought a house and moved out", "likes tea and
// never drinks coffee"); n when there is none.
inline std::size_t conjoined_clause(const claim_lexicon& lex, const std::vector<token>& t) {
  for (std::size_t i = 1; i + 1 < t.size(); ++i) {
    if (t[i].w != "and") continue;
    // "and only reads ...", "and also avoids ...", "and strongly prefers ...": past the adverbs
    std::size_t k = i + 1;
    while (k + 1 < t.size() &&
           (t[k].w == "only" || t[k].w == "also" || t[k].w == "then" || t[k].w == "still" ||
            (t[k].w.size() > 4 && t[k].w.ends_with("ly") &&
             lex.english().is_lemma(t[k].w, word_pos::adv))))
      ++k;
    const sv x = t[k].w;
    const std::uint32_t c = lex.en(x);
    if (x == "he" || x == "she" || x == "they" || x == "i" || x == "we" || x == "it") return i;
    auto be = [](sv w) { return w == "is" || w == "are" || w == "was" || w == "were"; };
    // General rule: an existential ("... and there is no other girl watching") begins a clause
    if (x == "there" && k + 1 < t.size() && be(t[k + 1].w)) return i;
    // General rule: after a clause with its own "is"/"are", "and" before a noun phrase of at
    // most four words and a form of "be" begins a clause with a subject of its own ("a man is
    // cooking and a woman is watching"); "wife and daughter are vegetarian" has no verb before
    // its "and", so its two nouns stay one subject
    if (std::any_of(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(i),
                    [&](const token& y) { return be(y.w); }))
      for (std::size_t j = k + 1; j < t.size() && j <= k + 4; ++j) {
        if (be(t[j].w)) {
          if (j + 1 < t.size()) return i;
          break;
        }
        if ((lex.en(t[j].w) & (cw::aux | cw::negator)) || t[j].w == "and" || t[j].w == "or") break;
      }
    if ((c & (cw::aux | cw::negator | cw::change | cw::terminate | cw::frequency |
              cw::att_positive | cw::att_negative | cw::aversion | cw::prefer)) &&
        x != "s")
      return i;
    const std::uint32_t lc = lex.en(lex.english().lemma(x, word_pos::verb));
    if ((lc & (cw::att_positive | cw::att_negative | cw::aversion | cw::prefer | cw::terminate)) &&
        !(lc & cw::stop))  // "and prefers ...", "and avoids ..."
      return i;
    const std::string lemma = lex.english().lemma(x, word_pos::verb);
    // a past form (-ed or irregular: "bought", "sold"), not a plural ("cats and dogs"), used as
    // a verb: followed by a determiner, pronoun or particle ("and bought an e-bike", "and moved
    // out"), not by a noun it describes ("and enclosed spaces") or a passive's agent ("sourced
    // and produced by")
    const bool verb_use =
        k + 1 >= t.size() || ((lex.en(t[k + 1].w) & (cw::stop | cw::aux)) && t[k + 1].w != "by");
    if (lemma != x && !x.ends_with('s') && verb_use &&
        lex.english().is_lemma(lemma, word_pos::verb))
      return i;
    // after an ending or a denial ("quit", "does not"), a verb begins what holds now ("resigned
    // from Shopify and joined Stripe", "is no longer vegetarian and eats chicken again"); not a
    // noun's plural
    // ("doesn't eat cats and dogs")
    if (lemma != x && lex.english().is_lemma(lemma, word_pos::verb) &&
        !(x.ends_with('s') &&
          lex.english().is_lemma(lex.english().lemma(x, word_pos::noun), word_pos::noun)) &&
        std::any_of(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(i), [&](const token& y) {
          // (a verb's negation, not a noun's: "there is no man holding a sign and ...")
          const bool verb_negator = (lex.en(y.w) & cw::negator) && y.w != "no" && y.w != "none" &&
                                    y.w != "nobody" && y.w != "nothing" && y.w != "without";
          return (lex.en(y.w) & cw::terminate) || verb_negator || y.w == "longer" ||
                 y.w == "anymore" ||
                 (lex.en(lex.english().lemma(y.w, word_pos::verb)) & cw::terminate);
        }))
      return i;
  }
  return t.size();
}

// Where an introductory phrase ends: "For exercise, User enjoys ...", "When job hunting, User
// puts ...", "In 2022, the rent was ...": a comma after at most five words that begin with a
// preposition or "when"/"while"/"given", before a holder; 0 when there is none.
inline std::size_t introduction_end(sv clause) {
  const std::size_t comma = clause.find(',');
  if (comma == sv::npos || comma == 0) return 0;
  const auto intro = tokenize(clause.substr(0, comma));
  const auto rest = tokenize(clause.substr(comma + 1));
  if (intro.empty() || intro.size() > 5 || rest.size() < 2) return 0;
  constexpr sv openers[] = {"for",    "when",  "while",  "given", "at", "on",    "in",
                            "during", "after", "before", "with",  "as", "since", "outside"};
  if (std::find(std::begin(openers), std::end(openers), intro[0].w) == std::end(openers)) return 0;
  const sv h = rest[0].w;
  const bool holder = h == "user" || h == "i" || h == "we" || h == "he" || h == "she" ||
                      h == "they" || h == "my" || h == "our" || h == "his" || h == "her" ||
                      h == "their" || (h == "the" && rest[1].w == "user") || rest[0].cap;
  return holder ? comma + 1 : 0;
}

// Where a statement of a job names both the employer and the occupation, the index of the
// second of "as" / "at" (or "for"), or 0: "works at Deloitte as an auditor" (at "as"), "works as
// a nurse at St Mary's" (at "at"), "is employed by KPMG as an analyst", "is an auditor at KPMG"
// (an occupation of claim_words::english_occupations right after "is a").
inline std::size_t job_split(const claim_lexicon& lex, const std::vector<token>& t) {
  const std::size_t n = t.size();
  auto occupation = [&](const std::string& w) {
    const std::string o = lex.english().lemma(w, word_pos::noun);
    return std::find(cw::english_occupations.begin(), cw::english_occupations.end(), o) !=
           cw::english_occupations.end();
  };
  // (a place of work after "at": not a time or a scene, "at night", "at home", "at heart")
  auto place = [&](std::size_t k) {
    if (k + 1 >= n) return false;
    const sv w = t[k + 1].w == "the" && k + 2 < n ? t[k + 2].w : t[k + 1].w;
    return w != "heart" && w != "night" && w != "weekend" && w != "weekends" &&
           !(lex.en(w) & (cw::time | cw::scene | cw::frequency));
  };
  for (std::size_t v = 0; v + 3 < n && v < 6; ++v) {
    if ((t[v].w == "is" || t[v].w == "am" || t[v].w == "are") &&
        (t[v + 1].w == "a" || t[v + 1].w == "an") && v + 4 < n &&
        (t[v + 3].w == "at" || t[v + 3].w == "for") && n - v - 4 <= 5 && place(v + 3) &&
        occupation(t[v + 2].w))
      return v + 3;
    // (the cheap test first: a verb of work is followed by one of these)
    if (t[v + 1].w != "as" && t[v + 1].w != "at" && t[v + 1].w != "for" && t[v + 1].w != "by")
      continue;
    const std::string lemma = lex.english().lemma(t[v].w, word_pos::verb);
    if (lemma != "work" && lemma != "employ") continue;
    const bool as_first = t[v + 1].w == "as";
    for (std::size_t k = v + 3; k + 1 < n && k <= v + 6; ++k) {
      const bool second = as_first ? (t[k].w == "at" || t[k].w == "for") : t[k].w == "as";
      if (second) return n - k - 1 <= 5 && (t[k].w == "as" || place(k)) ? k : 0;
      if (lex.en(t[k].w) & (cw::negator | cw::change | cw::terminate)) return 0;
    }
    return 0;
  }
  return 0;
}

// Reads one English clause, split once more where "and" joins two clauses.
inline void read_english_clause(const claim_lexicon& lex, sv clause, const std::string& inherited,
                                std::vector<text_claim>& out, std::string& first_holder) {
  if (const std::size_t at = introduction_end(clause); at > 0) {
    // the introduction qualifies every claim of the rest: a time ("In 2022"), a scene ("For
    // exercise", "When job hunting"), or nothing ("Given the choice")
    const auto intro = tokenize(clause.substr(0, at - 1));
    std::vector<std::string> scene, time;
    for (const auto& x : intro) {
      if (lex.en(x.w) & cw::time || (x.w.size() == 4 && all_digits(x.w)))
        time.push_back(x.w);
      else if (!(lex.en(x.w) & (cw::stop | cw::aux)) && x.w != "given" && x.w != "choice")
        scene.push_back(term_of(lex.english(), x.w));
    }
    const std::size_t from = out.size();
    read_english_clause(lex, clause.substr(at), inherited, out, first_holder);
    for (std::size_t k = from; k < out.size(); ++k) {
      out[k].scene.insert(out[k].scene.end(), scene.begin(), scene.end());
      out[k].time.insert(out[k].time.end(), time.begin(), time.end());
      sort_unique(out[k].scene);
      sort_unique(out[k].time);
    }
    return;
  }
  auto t = tokenize(clause);
  rewrite_english_idioms(t, [](const std::string& w) { return token{w, false}; });
  // General rule: "Between A and B, <holder> likes B more / goes for B" is an order of the two
  // options: "<holder> likes B over A" (A and B of one to three words; the holder "the user",
  // "user", "i", "we"; the option named in the rest is the preferred one)
  if (t.size() > 6 && t[0].w == "between") {
    std::size_t a = 2;
    while (a < t.size() && a <= 4 && t[a].w != "and") ++a;
    std::size_t h = a + 2;
    while (h < t.size() && h <= a + 4 && t[h].w != "user" && t[h].w != "the" && t[h].w != "i" &&
           t[h].w != "we")
      ++h;
    if (a <= 4 && a < t.size() && h + 2 < t.size() && h <= a + 4) {
      const std::vector<token> opt_a(t.begin() + 1, t.begin() + static_cast<std::ptrdiff_t>(a));
      const std::vector<token> opt_b(t.begin() + static_cast<std::ptrdiff_t>(a) + 1,
                                     t.begin() + static_cast<std::ptrdiff_t>(h));
      std::vector<token> rest(t.begin() + static_cast<std::ptrdiff_t>(h), t.end());
      auto named = [&](const std::vector<token>& o) {
        return std::any_of(o.begin(), o.end(), [&](const token& x) {
          return std::any_of(rest.begin() + 1, rest.end(),
                             [&](const token& y) { return y.w == x.w; });
        });
      };
      const bool b = named(opt_b), a_named = named(opt_a);
      if (b != a_named) {
        while (!rest.empty() && (rest.back().w == "more" || rest.back().w == "better" ||
                                 rest.back().w == "most" || rest.back().w == "best"))
          rest.pop_back();
        rest.push_back(token{"over", false});
        const auto& other = b ? opt_a : opt_b;
        rest.insert(rest.end(), other.begin(), other.end());
        t = std::move(rest);
      }
    }
  }
  // General rule: letting a thing lapse or expire ends it ("let the rowing club membership
  // lapse" is "cancelled the rowing club membership"; two to six words between)
  for (std::size_t k = 0; k + 2 < t.size(); ++k) {
    if (t[k].w != "let" && t[k].w != "lets") continue;
    std::size_t e = k + 2;
    while (e < t.size() && e <= k + 6 && t[e].w != "lapse" && t[e].w != "expire") ++e;
    if (e >= t.size() || e > k + 6) continue;
    t.erase(t.begin() + static_cast<std::ptrdiff_t>(e));
    t[k].w = "cancelled";
    break;
  }
  // General rule: someone of the holder's taking the holder off a thing ("the user's doctor
  // took her off metformin", "my doctor took me off statins") ends the holder's taking it: the
  // statement is the holder's, "the user quit metformin" (the holder's word and a possessive,
  // one or two words, then took / takes / has taken, a pronoun of the holder and "off")
  for (std::size_t j = 2; j + 3 < t.size(); ++j) {
    if (!(t[j].w == "took" || t[j].w == "takes" || t[j].w == "taken" || t[j].w == "take") ||
        !(t[j + 1].w == "him" || t[j + 1].w == "her" || t[j + 1].w == "them" ||
          t[j + 1].w == "me" || t[j + 1].w == "us") ||
        t[j + 2].w != "off")
      continue;
    std::size_t p = j;
    while (p > 0 && p + 4 > j && t[p - 1].w != "s" && t[p - 1].w != "my") --p;
    if (p == 0 || p + 4 <= j) break;
    std::vector<token> r(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(p - 1));
    if (t[p - 1].w == "my") r.push_back(token{"i", false});
    r.push_back(token{"quit", false});
    r.insert(r.end(), t.begin() + static_cast<std::ptrdiff_t>(j) + 3, t.end());
    t = std::move(r);
    break;
  }
  // General rule: "<X> is <holder>'s preferred / go-to <kind> [over <Y>]" says the holder
  // prefers X (to Y): "winter is the user's preferred season over summer" is read as "the user
  // prefers winter over summer" (X of one to three words; the holder "the user's", "user's",
  // "my", "his", "her", "their", "our" or a name's)
  for (std::size_t k = 1; k <= 3 && k + 3 < t.size(); ++k) {
    if (t[k].w != "is") continue;
    std::size_t h = k + 1;
    if (t[h].w == "the") ++h;
    std::vector<token> holder;
    if (t[h].w == "my" || t[h].w == "our") {
      holder = {token{t[h].w == "my" ? "i" : "we", false}};
      ++h;
    } else if (h + 1 < t.size() && t[h + 1].w == "s" && t[h].w != "one") {
      holder = {t[h]};
      h += 2;
    } else {
      break;
    }
    if (h + 1 >= t.size() || (t[h].w != "preferred" && t[h].w != "go-to")) break;
    std::vector<token> r = holder;
    r.push_back(token{"prefers", false});
    r.insert(r.end(), t.begin(), t.begin() + static_cast<std::ptrdiff_t>(k));
    r.insert(r.end(), t.begin() + static_cast<std::ptrdiff_t>(h) + 2, t.end());
    t = std::move(r);
    break;
  }
  // "Ethiopian is the user's favourite cuisine": the value first, read as "the user's favourite
  // cuisine is Ethiopian" (a value of one to three words)
  for (std::size_t k = 1; k <= 3 && k + 3 < t.size(); ++k) {
    if (t[k].w != "is") continue;
    std::size_t h = k + 1;
    if (t[h].w == "the") ++h;
    if (h + 1 < t.size() && (t[h].w == "my" || t[h].w == "his" || t[h].w == "her" ||
                             t[h].w == "their" || t[h].w == "our"))
      ++h;
    else if (h + 2 < t.size() && t[h + 1].w == "s")
      h += 2;
    else
      break;
    if (t[h].w != "favourite" && t[h].w != "favorite") break;
    std::vector<token> r(t.begin() + static_cast<std::ptrdiff_t>(k) + 1, t.end());
    r.push_back(t[k]);
    r.insert(r.end(), t.begin(), t.begin() + static_cast<std::ptrdiff_t>(k));
    t = std::move(r);
    break;
  }
  // General rule (a pseudo-cleft): "<thing> is something / what / one thing / a thing / the
  // <kind> [that] <holder> <verb> ..." says the holder verbs the thing: "spicy food is something
  // the user avoids at all costs" is read as "the user avoids spicy food at all costs", "jazz is
  // what I never listen to" as "I never listen to jazz" (a thing of one to three words; a holder of
  // "the user", "user", "I" or a capitalised name; the thing goes after the verb and a
  // preposition that ends the clause)
  for (std::size_t k = 1; k <= 3 && k + 3 < t.size(); ++k) {
    if (t[k].w != "is") continue;
    std::size_t h = k + 1;
    if (t[h].w == "something" || t[h].w == "what")
      ++h;
    else if ((t[h].w == "one" || t[h].w == "a") && t[h + 1].w == "thing")
      h += 2;
    else if (t[h].w == "the" && h + 3 < t.size() &&
             (t[h + 2].w == "the" || t[h + 2].w == "that" || t[h + 2].w == "user" ||
              t[h + 2].w == "i"))
      h += 2;  // "winter is the season the user prefers over summer" (a kind noun: dropped)
    else
      break;
    if (h < t.size() && t[h].w == "that") ++h;
    std::size_t v = h;
    if (v < t.size() && t[v].w == "the") ++v;
    if (v >= t.size() || !(t[v].w == "user" || t[v].w == "i" || (t[v].cap && v == h))) break;
    ++v;
    while (v < t.size() && (lex.en(t[v].w) & (cw::negator | cw::aux | cw::frequency | cw::stop)))
      ++v;
    if (v >= t.size()) break;
    ++v;                                                        // past the verb
    if (v + 1 == t.size() && (lex.en(t[v].w) & cw::stop)) ++v;  // "listen to", "care about"
    std::vector<token> r(t.begin() + static_cast<std::ptrdiff_t>(h),
                         t.begin() + static_cast<std::ptrdiff_t>(v));
    r.insert(r.end(), t.begin(), t.begin() + static_cast<std::ptrdiff_t>(k));
    r.insert(r.end(), t.begin() + static_cast<std::ptrdiff_t>(v), t.end());
    t = std::move(r);
    break;
  }
  // General rule (experiencer-object verbs): "<thing> annoys / bores / delights the user" says
  // the user dislikes or likes the thing, and is read as "the user dislikes / loves <thing>"
  // ("podcasts get on the user's nerves" too). The verbs are the members of the WordNet 3.0
  // synsets annoy.v.01 {annoy, bother, irritate, vex, nettle, rile ...}, bore.v.01,
  // disgust.v.01 {disgust, revolt, repel}, frustrate.v.01 (negative) and delight.v.01 {delight,
  // enchant, enthral ...}, fascinate.v.02 {fascinate, intrigue}, thrill.v.01, excite.v.01
  // (positive), in their third-person and past forms. A thing of one to three words; the
  // holder "the user", "user", "me" or a capitalised name, ending the clause.
  for (std::size_t k = 1; k <= 3 && k + 1 < t.size(); ++k) {
    static constexpr sv negative[] = {
        "annoys",   "annoyed",   "bothers", "bothered", "irritates",  "irritated",
        "vexes",    "vexed",     "nettles", "riles",    "bores",      "bored",
        "disgusts", "disgusted", "repels",  "revolts",  "frustrates", "frustrated"};
    static constexpr sv positive[] = {"delights",  "delighted",  "enchants",   "enthrals",
                                      "enthralls", "fascinates", "fascinated", "intrigues",
                                      "thrills",   "thrilled",   "excites",    "excited"};
    const sv v = t[k].w;
    std::size_t h = k + 1;
    const bool nerves = (v == "gets" || v == "get" || v == "got") && t[h].w == "on";
    if (nerves) ++h;
    const bool neg =
        nerves || std::find(std::begin(negative), std::end(negative), v) != std::end(negative);
    const bool pos =
        !neg && std::find(std::begin(positive), std::end(positive), v) != std::end(positive);
    if (!neg && !pos) continue;
    std::size_t e = h;
    if (e < t.size() && t[e].w == "the") ++e;
    if (e >= t.size() || !(t[e].w == "user" || t[e].w == "me" || (t[e].cap && e == h))) break;
    std::vector<token> holder(t.begin() + static_cast<std::ptrdiff_t>(h),
                              t.begin() + static_cast<std::ptrdiff_t>(e) + 1);
    ++e;
    if (nerves) {  // "gets on the user's nerves"
      if (e + 1 < t.size() && t[e].w == "s") ++e;
      if (e >= t.size() || t[e].w != "nerves") break;
      ++e;
    }
    if (e != t.size()) break;
    if (holder.back().w == "me") holder.back().w = "i";
    std::vector<token> r = std::move(holder);
    r.push_back(token{neg ? "dislikes" : "loves", false});
    r.insert(r.end(), t.begin(), t.begin() + static_cast<std::ptrdiff_t>(k));
    t = std::move(r);
    break;
  }
  // "is more of a cat person than a dog person": prefers cats over dogs
  for (std::size_t k = 1; k + 10 <= t.size(); ++k) {
    if (t[k].w != "is" || t[k + 1].w != "more" || t[k + 2].w != "of" || t[k + 3].w != "a" ||
        t[k + 5].w != "person" || t[k + 6].w != "than" || t[k + 7].w != "a" ||
        t[k + 9].w != "person")
      continue;
    const std::string x = t[k + 4].w, y = t[k + 8].w;
    t.erase(t.begin() + static_cast<std::ptrdiff_t>(k),
            t.begin() + static_cast<std::ptrdiff_t>(k) + 10);
    const token r[] = {{"prefers", false}, {x, false}, {"over", false}, {y, false}};
    t.insert(t.begin() + static_cast<std::ptrdiff_t>(k), std::begin(r), std::end(r));
    break;
  }
  // "wears UK size 9 shoes", "wears a size 44": the shoe size ("<holder>'s shoe size is UK 9")
  for (std::size_t v = 1; v + 2 < t.size() && v < 5; ++v) {
    if (t[v].w != "wears" && t[v].w != "wear" && t[v].w != "wore") continue;
    std::size_t k = v + 1;
    if (t[k].w == "a") ++k;
    std::string region;
    if (k < t.size() && (t[k].w == "uk" || t[k].w == "eu" || t[k].w == "us")) region = t[k++].w;
    if (k + 1 >= t.size() || t[k].w != "size" || !all_digits(t[k + 1].w)) break;
    const std::string number = t[k + 1].w;
    k += 2;
    if (k < t.size() && (t[k].w == "shoes" || t[k].w == "shoe")) ++k;
    if (k != t.size()) break;
    std::vector<token> r(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(v));
    if (r.size() == 1 && r[0].w == "i")
      r[0].w = "my";
    else
      r.push_back(token{"s", false});
    for (const char* w : {"shoe", "size", "is"}) r.push_back(token{w, false});
    if (!region.empty()) r.push_back(token{region, false});
    r.push_back(token{number, false});
    t = std::move(r);
    break;
  }
  // "swapped green tea for coffee", "traded the car for a bike": switched from X to Y
  for (std::size_t i = 0; i + 3 < t.size(); ++i) {
    const std::string lemma = lex.english().lemma(t[i].w, word_pos::verb);
    if (lemma != "swap" && lemma != "trade" && lemma != "exchange") continue;
    const auto f = std::find_if(t.begin() + static_cast<std::ptrdiff_t>(i) + 2, t.end(),
                                [](const token& x) { return x.w == "for"; });
    if (f == t.end() || f + 1 == t.end()) break;
    f->w = "to";
    t[i].w = "switched";
    t.insert(t.begin() + static_cast<std::ptrdiff_t>(i) + 1, token{"from", false});
    break;
  }
  // "works at Deloitte as an auditor", "works as a nurse at St Mary's", "is employed by KPMG as
  // an analyst", "is an auditor at KPMG": two claims, the employer and the occupation
  if (const std::size_t cut = job_split(lex, t); cut > 0) {
    const std::vector<token> head(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(cut));
    read_english_tokens(lex, head, inherited, out, first_holder);
    const std::string holder = out.empty() ? inherited : out.back().holder;
    std::vector<token> tail{token{"works", false}, token{t[cut].w == "as" ? "as" : "at", false}};
    tail.insert(tail.end(), t.begin() + static_cast<std::ptrdiff_t>(cut) + 1, t.end());
    read_english_tokens(lex, tail, holder, out, first_holder);
    return;
  }
  // "now uses a Pixel after switching from iPhone": two claims, the second a switch
  for (std::size_t i = 1; i + 2 < t.size(); ++i)
    if ((t[i].w == "after" || t[i].w == "since") &&
        (t[i + 1].w == "switching" || t[i + 1].w == "moving" || t[i + 1].w == "changing") &&
        (t[i + 2].w == "from" || t[i + 2].w == "to")) {
      const std::vector<token> head(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(i));
      read_english_clause(lex, std::string(detail::claims::join(head)), inherited, out,
                          first_holder);
      const std::string holder = out.empty() ? inherited : out.back().holder;
      std::vector<token> tail(t.begin() + static_cast<std::ptrdiff_t>(i) + 1, t.end());
      tail[0].w = t[i + 1].w == "switching" ? "switched"
                  : t[i + 1].w == "moving"  ? "moved"
                                            : "changed";
      read_english_tokens(lex, tail, holder, out, first_holder);
      return;
    }
  const std::size_t cut = conjoined_clause(lex, t);
  if (cut == t.size()) return read_english_tokens(lex, t, inherited, out, first_holder);
  const std::vector<token> head(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(cut));
  std::vector<token> tail(t.begin() + static_cast<std::ptrdiff_t>(cut) + 1, t.end());
  read_english_tokens(lex, head, inherited, out, first_holder);
  const std::string holder = out.empty() ? inherited : out.back().holder;
  if (!tail.empty() && (tail[0].w == "they" || tail[0].w == "he" || tail[0].w == "she"))
    tail.erase(tail.begin());  // "... and they now work on a Dell": the same holder
  read_english_clause(lex, std::string(detail::claims::join(tail)), holder, out, first_holder);
}

// A label of a key-value statement: one to three words, the first of them an attribute head
// (claim_words::attribute_heads: "Hometown", "Favorite band", "Blood type").
inline bool attribute_label(sv s) {
  const std::size_t b = s.find_first_not_of(' ');
  if (b == sv::npos) return false;
  s.remove_prefix(b);
  std::size_t words = 1;
  for (const char ch : s) {
    if (ch == ' ')
      ++words;
    else if (!std::isalpha(static_cast<unsigned char>(ch)))
      return false;
  }
  if (words > 3) return false;
  const std::size_t e = std::min(s.find(' '), s.size());
  std::string first(s.substr(0, e));
  for (auto& x : first) x = static_cast<char>(std::tolower(static_cast<unsigned char>(x)));
  return std::find(cw::attribute_heads.begin(), cw::attribute_heads.end(), first) !=
         cw::attribute_heads.end();
}

// Splits English text into clauses at ; . ! ? and the words but/however/whereas/although/though.
/// Rule: "and" before a new subject with its own singular verb starts a clause with its own
/// holder ("User's wife loves sushi and the user hates it", "User hates sushi and his wife
/// loves it"): true when the words from `k` are "[the] user", "he", "she", or "his / her / my /
/// [the] user's <noun>", then a verb in -s or is, was, has, does (with n't). A plural verb is a
/// shared subject ("User's wife and the user like sushi"), no new clause.
inline bool new_subject_at(sv text, std::size_t k) {
  std::vector<std::string> w;
  while (w.size() < 5 && k < text.size()) {
    while (k < text.size() && text[k] == ' ') ++k;
    std::size_t e = k;
    while (e < text.size() &&
           (std::isalpha(static_cast<unsigned char>(text[e])) || text[e] == '\''))
      ++e;
    if (e == k) break;
    std::string x(text.substr(k, e - k));
    for (auto& ch : x) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    w.push_back(std::move(x));
    k = e;
  }
  std::size_t i = 0;
  if (i < w.size() && w[i] == "the") ++i;
  if (i < w.size() && (w[i] == "user" || w[i] == "he" || w[i] == "she")) {
    ++i;
  } else if (i < w.size() && (w[i] == "his" || w[i] == "her" || w[i] == "my" || w[i] == "user's")) {
    i += 2;
    // "and his wife's recipes": a possessive noun names no subject
    if (i - 1 >= w.size() || w[i - 1].ends_with("'s")) return false;
  } else {
    return false;
  }
  if (i >= w.size()) return false;
  const std::string& v = w[i];
  for (const sv a : {"is", "was", "has", "does", "isn't", "wasn't", "hasn't", "doesn't"})
    if (v == a) return true;
  return v.size() > 3 && v.back() == 's' && !v.ends_with("ss") && !v.ends_with("'s");
}

inline std::vector<std::string> english_clauses(const claim_lexicon& lex, sv text) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&] {
    if (cur.find_first_not_of(' ') != std::string::npos) out.push_back(cur);
    cur.clear();
  };
  std::size_t i = 0;
  while (i < text.size()) {
    const char ch = text[i];
    // a title's full stop ends no sentence ("Dr. Patel", "Mr. Lee")
    auto title_before = [&] {
      std::size_t b = i;
      while (b > 0 && std::isalpha(static_cast<unsigned char>(text[b - 1]))) --b;
      const sv w = text.substr(b, i - b);
      return w == "Dr" || w == "Mr" || w == "Mrs" || w == "Ms" || w == "Prof" || w == "St" ||
             w == "dr" || w == "mr" || w == "mrs" || w == "ms";
    };
    // "Hometown: Glasgow", "Favorite band: Radiohead": an attribute head of up to three words
    // and its value, read as "Hometown is Glasgow"
    if (ch == ':' && i + 1 < text.size() && text[i + 1] == ' ' && attribute_label(cur)) {
      cur += " is";
      ++i;
      continue;
    }
    if (ch == ';' || ch == '!' || ch == '?' ||
        (ch == '.' && !title_before() &&
         !(i > 0 && i + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[i - 1])) &&
           std::isdigit(static_cast<unsigned char>(text[i + 1])))) ||
        ((ch == ':') &&
         !(i > 0 && i + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[i - 1])) &&
           std::isdigit(static_cast<unsigned char>(text[i + 1]))))) {
      flush();
      ++i;
      continue;
    }
    if (ch == ',' && thousands_comma(text, i)) {  // "$1,200": one number, no clause break
      cur += ch;
      ++i;
      continue;
    }
    if (ch == ' ' || ch == ',') {
      std::size_t j = i;
      while (j < text.size() && (text[j] == ' ' || text[j] == ',')) ++j;
      std::size_t k = j;
      while (k < text.size() && std::isalpha(static_cast<unsigned char>(text[k]))) ++k;
      std::string word(text.substr(j, k - j));
      for (auto& x : word) x = static_cast<char>(std::tolower(static_cast<unsigned char>(x)));
      if (word == "but" || word == "however" || word == "whereas" || word == "although" ||
          word == "though") {
        flush();
        i = k;
        continue;
      }
      if (word == "and" && new_subject_at(text, k)) {
        flush();
        i = k;
        continue;
      }
      // a comma before a new clause: ", so ...", ", and I ...", ", avoiding ...", ", he ..."
      if (ch == ',') {
        const std::uint32_t c = lex.en(word) | lex.en(lex.english().lemma(word, word_pos::verb));
        // (and a change verb: "No longer drinks coffee, switched to tea")
        const bool change_verb =
            (c & cw::change) && word != "now" &&
            lex.english().is_lemma(lex.english().lemma(word, word_pos::verb), word_pos::verb);
        if (word == "so" || word == "i" || word == "he" || word == "she" || word == "they" ||
            word == "we" || change_verb ||
            (!(c & cw::stop) && (c & (cw::aversion | cw::att_positive | cw::att_negative |
                                      cw::terminate | cw::negator)))) {
          flush();
          i = word == "so" ? k : j;
          continue;
        }
      }
    }
    cur.push_back(ch);
    ++i;
  }
  flush();
  return out;
}

}  // namespace memhealth::detail::claims
