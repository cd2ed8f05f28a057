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
/// Before a clause is read, idioms become plain words (claim_idioms.hpp: "is a night owl",
/// "steers clear of", 滴酒不沾); a statement without a subject ("Loves jazz", "Name is John") is
/// about the user; a restriction adds the denials it implies and a termination drops its service
/// noun (claim_implications.hpp).
///
/// The reading is a rule-based shallow parse, not a grammar: it is built for short memory
/// statements. `claim_analysis::parsed()` is false when nothing could be read (the judge then
/// falls back to its cue rules). Cue words: claim_words.hpp; lemmas, synonyms and antonyms:
/// lexicon.hpp (WordNet 3.0).

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

/// The default claim extractor (see the file comment): English and Chinese memory statements.
/// Never throws on any bytes (text that is not UTF-8 is read as far as it goes).
/// @complexity O(length) with a few hash lookups per word; allocates the claims.
struct default_claim_extractor {
  /// The cue tables and lexicon; nullptr = `claim_lexicon::builtin()`.
  const claim_lexicon* lexicon = nullptr;

  /// Reads one statement.
  [[nodiscard]] claim_analysis operator()(std::string_view text) const {
    const claim_lexicon& lex = lexicon ? *lexicon : claim_lexicon::builtin();
    claim_analysis r;
    std::string holder;
    if (detail::claims::has_cjk(text)) {
      r.lang = "zh";
      const std::string plain = detail::claims::rewrite_chinese_idioms(text);
      for (const auto& clause : detail::claims::chinese_clauses(plain)) {
        const std::size_t before = r.claims.size();
        detail::claims::read_chinese_clause(lex, clause, holder, r.claims, holder);
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
      for (const auto& clause : detail::claims::english_clauses(lex, text))
        detail::claims::read_english_clause(lex, clause, holder, r.claims, holder);
    }
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
