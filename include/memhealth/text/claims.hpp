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
/// "prefers X over Y" gives two claims: like X (+1) and like Y (-1); "switched from X to Y" gives
/// X negated and Y asserted.
///
/// The reading is a rule-based shallow parse, not a grammar: it is built for short memory
/// statements. `claim_analysis::parsed()` is false when nothing could be read (the judge then
/// falls back to its cue rules). Cue words: claim_words.hpp; lemmas, synonyms and antonyms:
/// lexicon.hpp (WordNet 3.0).

#include <string>
#include <string_view>

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
      for (const auto& clause : detail::claims::chinese_clauses(text))
        detail::claims::read_chinese_clause(lex, clause, holder, r.claims, holder);
    } else {
      r.lang = "en";
      for (const auto& clause : detail::claims::english_clauses(text))
        detail::claims::read_english_clause(lex, clause, holder, r.claims, holder);
    }
    if (!r.parsed()) r.lang.clear();
    return r;
  }
};

}  // namespace memhealth
