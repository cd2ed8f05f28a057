#pragma once
/// @file claim_idioms.hpp
/// Idioms of memory statements rewritten into the plain words the claim readers understand,
/// before a clause is read: "is a night owl" -> "does not get up early", "has a sweet tooth" ->
/// "loves sweets", "steers clear of" -> "avoids", 滴酒不沾 -> 从不喝酒, 夜猫子 -> 经常熬夜. The
/// readers then compare them like any other statement ("is a night owl" / "is an early riser"
/// become a negation pair).
///
/// Provenance: the idioms and their plain forms were written by hand for memhealth (2026-12), not
/// copied from any list. English phrases are lowercase, apostrophes removed, as the tokenizer
/// leaves them. Internal (namespace detail::claims) apart from the tables.

#include <array>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "memhealth/text/claim.hpp"

namespace memhealth::claim_words {

/// An idiom and the plain words it is read as.
struct idiom {
  std::string_view phrase;  ///< as the tokenizer leaves it ("is a night owl")
  std::string_view plain;   ///< what is read instead ("does not get up early")
};

/// English idioms of habits, traits and attitudes.
inline constexpr auto english_idioms = std::to_array<idiom>({
    {"is a night owl", "stays up late and does not get up early"},
    {"is an early bird", "gets up early"},
    {"is an early riser", "gets up early"},
    {"is a morning person", "likes getting up early"},
    {"is not a morning person", "dislikes getting up early"},
    {"isnt a morning person", "dislikes getting up early"},
    {"has a sweet tooth", "loves sweets"},
    {"is a couch potato", "rarely exercises"},
    {"is a bookworm", "loves reading"},
    {"is a foodie", "loves food"},
    {"is a homebody", "likes staying at home"},
    {"is a teetotaller", "is teetotal"},
    {"is a teetotaler", "is teetotal"},
    {"is a chain smoker", "smokes every day"},
    {"is a heavy smoker", "smokes every day"},
    {"is a heavy drinker", "drinks alcohol every day"},
    // how a holder spends and eats, as the adjectives WordNet opposes (frugal / extravagant,
    // indirect antonyms) or a negation pair
    {"is a big spender", "is extravagant"},
    {"is a penny-pincher", "is frugal"},
    {"is a picky eater", "is picky about food"},
    {"is a fussy eater", "is picky about food"},
    {"will eat anything", "is not picky about food and eats whatever"},
    {"eats anything", "is not picky about food and eats whatever"},
    {"is a dog person", "loves dogs"},
    {"is a cat person", "loves cats"},
    {"is a gym rat", "goes to the gym every day"},
    {"is a social butterfly", "is outgoing and loves socialising"},
    {"is an introvert", "is introverted"},
    {"is an extrovert", "is extroverted"},
    {"is an extravert", "is extroverted"},
    {"cant get enough of", "loves"},
    {"is an only child", "has no siblings"},
    {"is childless", "has no children"},
    {"is car-free", "has no car"},
    {"is in a relationship", "is partnered"},
    {"is seeing someone", "is partnered"},
    {"is crazy about", "loves"},
    {"is mad about", "loves"},
    {"is big on", "likes"},
    {"is into", "likes"},
    {"swears by", "likes"},
    {"is sick of", "dislikes"},
    {"is tired of", "dislikes"},
    {"is fed up with", "dislikes"},
    {"is not into", "dislikes"},
    {"isnt into", "dislikes"},
    {"has gone off", "no longer likes"},
    {"went off", "no longer likes"},
    {"steers clear of", "avoids"},
    {"stays away from", "avoids"},
    {"keeps away from", "avoids"},
    // phrasal verbs of ending a plan or a bond: "called off the engagement", "broke off her
    // engagement" (cancel.v.01)
    {"called off", "cancelled"},
    {"calls off", "cancels"},
    {"call off", "cancel"},
    {"broke off", "cancelled"},
    {"breaks off", "cancels"},
    {"break off", "cancel"},
    // giving a thing in part payment for another ends having it ("traded in the Civic for an
    // e-bike", trade_in.v.01)
    {"traded in", "sold"},
    {"trades in", "sells"},
    {"trade in", "sell"},
    {"is done with", "quit"},
    {"gave up on", "quit"},
    {"the odd", "an occasional"},
    {"cold turkey", ""},
    // intensifiers of an attitude or habit: how strongly, never what ("avoids X at all costs",
    // "avoids X like the plague", "hates X with a passion")
    {"at all costs", ""},
    {"at any cost", ""},
    {"like the plague", ""},
    {"with a passion", ""},
    // ("will happily eat absolutely anything": how gladly, how wholly)
    {"happily", ""},
    {"absolutely", ""},
    {"no matter what", ""},
    {"for good", ""},  // ("quit for good": for ever)
    // ("would choose X over Y any day (of the week)": whenever the choice comes)
    {"any day of the week", ""},
    {"any day", ""},
    {"set foot in", "been to"},
    {"once in a blue moon", "rarely"},
    {"every now and again", "sometimes"},
    {"day in day out", "every day"},
    {"has no idea", "does not know"},
    {"have no idea", "do not know"},
    {"keeps track of", "tracks"},
    {"keep track of", "track"},
    {"kept track of", "tracked"},
    {"looks forward to", "likes"},
    {"look forward to", "like"},
    {"thrives in", "loves"},
    {"thrives on", "loves"},
    {"thrives at", "loves"},
    // "work out" of physical exercise (WordNet 3.0 work_out.v.03, exercise.v.04)
    {"works out", "exercises"},
    {"work out", "exercise"},
    {"worked out", "exercised"},
    {"working out", "exercising"},
    // judgements of a thing as worthless or of being bored by it
    {"a waste of time", "pointless"},
    {"a waste of money", "pointless"},
    {"bored stiff", "bored"},
    {"refuses to touch", "refuses"},
    {"wont touch", "avoids"},
    {"will not touch", "avoids"},
    {"never touches", "avoids"},
    {"reports directly to", "reports to"},
    {"report directly to", "report to"},
    {"reports straight to", "reports to"},
    // abilities: "knows how to swim" / "never learned to swim" read as "can" / "cannot"
    {"knows how to", "can"},
    {"know how to", "can"},
    {"is able to", "can"},
    {"are able to", "can"},
    {"is unable to", "cannot"},
    {"are unable to", "cannot"},
    {"isnt able to", "cannot"},
    {"is not able to", "cannot"},
    {"doesnt know how to", "cannot"},
    {"does not know how to", "cannot"},
    {"never learned to", "cannot"},
    {"never learned how to", "cannot"},
    {"never learnt to", "cannot"},
    {"never learnt how to", "cannot"},
    {"is a non-smoker", "does not smoke"},
    {"is a nonsmoker", "does not smoke"},
    {"is a non smoker", "does not smoke"},
    // degree and rate phrasings the scales and rates read
    {"is fluent in", "speaks fluent"},
    {"every single", "every"},
    {"at most", "only"},
});

/// Chinese idioms (成语 and colloquial phrases) of habits, traits and attitudes.
inline constexpr auto chinese_idioms = std::to_array<idiom>({
    {"夜猫子", "经常熬夜"},
    {"早睡早起", "很少熬夜"},
    {"滴酒不沾", "从不喝酒"},
    {"烟酒不沾", "从不抽烟，从不喝酒"},
    {"无辣不欢", "特别喜欢吃辣"},
    {"情有独钟", "特别喜欢"},
    {"烟瘾很大", "每天抽很多烟"},
    {"烟瘾大", "每天抽很多烟"},
    {"酒量很好", "经常喝酒"},
    {"路痴", "方向感很差"},
    {"不感冒", "不喜欢"},
    {"宅在家", "待在家"},
    {"吃货", "喜欢吃的人"},
    {"能躲就躲", "避免"},
    {"敬而远之", "避免"},
    {"乐此不疲", "特别喜欢"},
    {"爱不释手", "特别喜欢"},
    {"深恶痛绝", "讨厌"},
    {"一窍不通", "不会"},
    {"三天打鱼两天晒网", "很少坚持"},
    {"会讲", "会说"},
    {"雷打不动", ""},
    {"不在话下", ""},
    {"现居", "住在"},
    {"目前居住在", "住在"},
    {"一句", ""},
    {"不了几", "几"},
    {"好几", "几"},
    {"一闻到", ""},
    {"一闻", ""},
    {"一提起", ""},
    {"一提到", ""},
    {"一提", ""},
    {"一看到", ""},
    {"一听到", ""},
    {"一想到", ""},
    {"的味道就", "就"},
    {"味道就", "就"},
    {"味就", "就"},
    {"就想吐", "就反胃"},
    {"那股味儿", ""},
    {"那股味", ""},
    {"的味道", ""},
    {"一年到头", "一年"},
    {"没装", "没有"},
    {"人多的场合", "热闹"},
    {"人多的地方", "热闹"},
});

}  // namespace memhealth::claim_words

namespace memhealth::detail::claims {

/// English idioms indexed by their first word; each entry holds the phrase's words and the
/// plain words.
struct english_idiom_index {
  struct entry {
    std::vector<std::string> phrase, plain;
  };
  std::unordered_map<std::string, std::vector<entry>> by_first;

  static const english_idiom_index& get() {
    static const english_idiom_index index = [] {
      english_idiom_index x;
      auto words = [](sv s) {
        std::vector<std::string> out;
        for (std::size_t p = 0; p < s.size();) {
          const std::size_t q = std::min(s.find(' ', p), s.size());
          if (q > p) out.emplace_back(s.substr(p, q - p));
          p = q + 1;
        }
        return out;
      };
      for (const auto& [phrase, plain] : claim_words::english_idioms) {
        entry e{words(phrase), words(plain)};
        x.by_first[e.phrase.front()].push_back(std::move(e));
      }
      return x;
    }();
    return index;
  }
};

/// Replaces the English idioms among `words` (lowercase tokens) by their plain words, in place;
/// `make` builds a token from a word. Returns true when something was replaced.
template <class Token, class Make>
bool rewrite_english_idioms(std::vector<Token>& words, Make make) {
  const auto& index = english_idiom_index::get();
  bool changed = false;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const auto it = index.by_first.find(words[i].w);
    if (it == index.by_first.end()) continue;
    for (const auto& e : it->second) {
      if (i + e.phrase.size() > words.size()) continue;
      bool same = true;
      for (std::size_t k = 1; k < e.phrase.size() && same; ++k)
        same = words[i + k].w == e.phrase[k];
      if (!same) continue;
      std::vector<Token> plain;
      for (const auto& p : e.plain) plain.push_back(make(p));
      words.erase(words.begin() + static_cast<std::ptrdiff_t>(i),
                  words.begin() + static_cast<std::ptrdiff_t>(i + e.phrase.size()));
      words.insert(words.begin() + static_cast<std::ptrdiff_t>(i), plain.begin(), plain.end());
      changed = true;
      // General rule: a relative clause after an idiom that names what the holder is, read as
      // a verb phrase ("is a night owl who sleeps until noon": "stays up late ..."), says more
      // of the holder, not of the verb's object: it is read as another clause of the holder
      // ("... and sleeps until noon"); after a copula ("is introverted") the reader keeps it a
      // relative clause
      if (const std::size_t after = i + plain.size();
          !plain.empty() && e.phrase.front() == "is" && e.plain.front() != "is" &&
          after < words.size() && (words[after].w == "who" || words[after].w == "that"))
        words[after] = make("and");
      if (plain.empty()) {  // a phrase that says nothing ("cold turkey"): read the words again
        // (from the start: an idiom before it may be whole now, "will happily eat absolutely
        // anything")
        i = static_cast<std::size_t>(-1);
        break;
      }
      i += plain.size() - 1;
      break;
    }
  }
  return changed;
}

/// `text` with its Chinese idioms replaced by their plain words (a copy only when one occurs).
inline std::string rewrite_chinese_idioms(sv text) {
  std::string out(text);
  const text_filter present(text);
  for (const auto& [phrase, plain] : claim_words::chinese_idioms)
    for (std::size_t p = present.may_contain(phrase) ? 0 : sv::npos; p != sv::npos;) {
      p = find_text(out, phrase, p);
      if (p == sv::npos) break;
      out.replace(p, phrase.size(), plain);
      p += plain.size();
    }
  return out;
}
}  // namespace memhealth::detail::claims
