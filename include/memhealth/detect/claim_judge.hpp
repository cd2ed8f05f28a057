#pragma once
/// @file claim_judge.hpp
/// `claim_conflict_judge`: a conflict judge (conflict_judge.hpp) that reads both texts into claims
/// (claims.hpp) and compares them clause by clause. Rules, for two claims x and y of one pair:
/// 0. an uncertain claim (a question or a hedged clause: `text_claim::uncertain`) is never a
///    conflict ("uncertain");
/// 1. different holders (both known) -> no conflict ("different_holders"), unless the two
///    name each other in one comparison with the roles swapped ("Mia is taller than Leo" /
///    "Leo is taller than Mia" -> "role_swap");
/// 2. scenes that are both given and neither contains the other -> no conflict
///    ("different_scene"); times that are both given and differ -> no conflict
///    ("different_time"): two dated events or measurements, not a contradiction;
/// 3. two amounts over periods of one thing (`text_claim::amount`: "saves $500 a month",
///    "每个月存五千块", "rent is 5000 yuan a month") are compared per day: within
///    `rate_tolerance` (5 %) one rate ("same_rate": "$500 a month" / "$6,000 a year"), else
///    "degree" ("5000 yuan a month" / "5000 yuan a year");
///    the same single-valued attribute (residence, employer, name, age, "<noun> is <value>")
///    with values neither of which contains the other -> conflict ("single_value", or
///    "change_statement" when one side states a change: "moved to Madrid"); a value added with
///    "also" is none ("is also a part-time photographer"), nor are two denied values ("used to
///    live in Porto" / "previously lived in Lisbon": a past value is denied now, as "used to",
///    "previously", 以前, 原来 are read);
/// 4. opposite polarity, the negative side N and the positive side P: a conflict when what N
///    denies is contained in what P asserts: every term of N (synonyms count, WordNet) is among
///    P's terms ("doesn't eat pork" / "eats pork and beef"; "can't stand jazz" / "loves jazz";
///    "不吃香菜" / "喜欢吃香菜"); an aversion or termination (avoid, quit, sold, 戒) denies any
///    predicate, so only its object must be contained ("quit the choir" / "sings in the choir").
///    "doesn't enjoy opera" / "enjoys musicals" is no conflict: opera is not in the other.
///    Between two attitudes, what the denial says about taking the thing in (eat, watch,
///    listen, 吃, 看: claim_words::engagement_verbs) or about its taste or smell
///    (claim_words::aspect_nouns) is no part of what it denies ("can't bear watching horror
///    movies" / "adores horror films"); a "favourite <kind>" attribute is a liking of its value
///    ("detests beetroot" / "beetroot is the user's favourite vegetable").
///    What P asserts may be a kind of what N denies (WordNet hypernyms, `max_is_a_depth`
///    steps: "can't stand seafood" / "loves lobster", "is allergic to nuts" / "snacks on
///    almonds"), and two terms that spell a multiword noun of WordNet count as that noun on
///    either side ("doesn't play any musical instrument" / "plays the drums", "avoids dairy
///    products" / "eats ice cream").
///    A diet restriction's denials ("is vegetarian": no meat, no fish ...; claim_implications.hpp)
///    deny consuming only ("eats salmon", not "cooks chicken for the kids").
///    The rejected option of an order of preference (`text_claim::order`: "prefers tea over
///    coffee", 比起米饭更喜欢面条) denies only the preferred option of another order ("prefers
///    coffee over tea", "prefers coffee": "role_swap") or a claim that states an order the
///    reader did not split ("thinks iOS is better than Android"); "likes coffee" agrees with it.
///    An end of having a thing against getting a new one of its kind ("sold his car" / "bought
///    a new car") is two events, no conflict.
///    Reasons: "change_statement" (a change marker on either side), else "opposite_polarity".
///    When one side is a one-off event and the other a lasting state -> conflict needing a person
///    ("state_vs_event"); when only P has a scene, P is a specific exception to N: conflict
///    needing a person ("scene_specific"; SPEC 3: the more specific scene wins in its scene);
/// 5. the same polarity: a change that names what it replaced with "instead (of)" against that
///    state ("now walks to the office instead of driving" / "drives to the office":
///    "change_statement"); an amount named by a bill or budget against spending or paying on
///    the same thing is one amount (rule 3: "petrol bill is $600 a month" / "spends $50 a week
///    on petrol"); a replacement ("switched to tea", "换成了支付宝", "改喝茶") against
///    another thing of its kind (WordNet co-hyponyms within `max_kin_depth`: tea / coffee;
///    Chinese: a shared character, another object) -> "change_statement"; Chinese antonym
///    words (claim_words::chinese_antonyms: "性格外向" / "性格内向") -> "antonym"; WordNet
///    antonyms (and claim_words::english_antonyms; multiword words of WordNet too: "good luck" /
///    "bad luck") between the predicates, or between the
///    complements of two copulas or judgement verbs whose other terms agree ("is patient with
///    slow drivers" / "is impatient with slow drivers", "finds math easy" / "finds math
///    difficult") -> conflict ("antonym"); the same terms (or one object under a light verb:
///    "has a glass of wine" / "gets through a bottle of wine") with frequencies
///    `min_frequency_ratio` (3) or more
///    times apart ("runs every day" / "rarely runs", "twice a week" / "six days a week") ->
///    "degree"; the same terms with
///    different quantities and no time qualifier ("has three children" / "has one child",
///    "sleeps 9 hours a night" / "sleeps 5 hours a night") -> "quantity";
/// 6. otherwise no conflict ("no_claim_conflict").
/// Both statements are first compared by holder (the first clause's holder), unless one holds a
/// clause of the other's holder ("User's wife loves sushi and the user hates it"). When either text
/// cannot be read into claims, the `Fallback` judge decides (default: `default_conflict_judge`),
/// never silence. A conflict that needs no person wins over one that does.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "memhealth/detect/conflict_judge.hpp"
#include "memhealth/record/traits.hpp"
#include "memhealth/text/claims.hpp"

namespace memhealth {

/// Compares two statements read into claims (see the file comment for the rules).
/// @complexity O(c_a · c_b · t²) synonym lookups for c clauses of t terms; small in practice.
struct claim_rules {
  /// Cue tables and lexicon used for synonyms and antonyms; nullptr = `claim_lexicon::builtin()`.
  const claim_lexicon* lexicon = nullptr;
  /// Least ratio of two frequencies (times per day) that is a conflict: "rarely" (1/30) and
  /// "every day" (1) are 30x apart; "twice a week" and "six days a week" 3x.
  double min_frequency_ratio = 3.0;
  /// Most hypernym steps from an asserted term up to a denied one (0 = synonyms only).
  int max_is_a_depth = 2;
  /// Most hypernym steps from each of two objects up to a common kind, for "switched to X"
  /// against another X-like thing ("tea" / "coffee": beverage, 1 step).
  int max_kin_depth = 2;
  /// Most relative difference of two amounts per day that is one rate ("5,000 a month" and
  /// "60,000 a year" are 1.4 % apart: the same; "5,000 a month" and "5,000 a year" differ).
  double rate_tolerance = 0.05;
  /// The year in which an age and a year of birth are compared ("is 28" / "was born in 1985");
  /// 0 = the current year (system clock, UTC).
  int reference_year = 0;

  /// The verdict for two analysed statements (both `parsed()`).
  [[nodiscard]] conflict_verdict operator()(const claim_analysis& a,
                                            const claim_analysis& b) const {
    const claim_lexicon& lex = lexicon ? *lexicon : claim_lexicon::builtin();
    const std::string& ha = a.claims.front().holder;
    const std::string& hb = b.claims.front().holder;
    // two statements about different holders never conflict; but a statement with a clause of
    // each ("User's wife loves sushi and the user hates it") is compared clause by clause
    auto holds = [](const claim_analysis& s, const std::string& h) {
      return std::any_of(s.claims.begin(), s.claims.end(),
                         [&](const text_claim& c) { return c.holder == h; });
    };
    if (!ha.empty() && !hb.empty() && ha != hb && !holds(a, hb) && !holds(b, ha)) {
      if (swapped_comparison(a.claims.front(), b.claims.front())) return {true, false, "role_swap"};
      return {false, false, "different_holders"};
    }
    rule_verdict review{false, false, ""};
    std::string_view last_reason = "no_claim_conflict";
    for (const auto& x : a.claims)
      for (const auto& y : b.claims) {
        const rule_verdict v = compare(lex, x, y);
        if (v.conflict && !v.needs_human) return v.made();
        if (v.conflict && !review.conflict)
          review = v;
        else if (!v.conflict && v.reason != "no_claim_conflict")
          last_reason = v.reason;
      }
    if (review.conflict) return review.made();
    // a denial against what several clauses of the other statement assert together ("no hiker
    // dancing on top of the mountain" / "a hiker is on top of the mountain and is dancing")
    for (const auto* side : {&a, &b}) {
      const claim_analysis& other = side == &a ? b : a;
      if (other.claims.size() < 2) continue;
      text_claim joined;
      joined.holder = other.claims.front().holder;
      for (const auto& c : other.claims) {
        if (c.polarity < 0 || !c.attribute.empty() || c.uncertain) continue;
        joined.terms.insert(joined.terms.end(), c.terms.begin(), c.terms.end());
        joined.scene.insert(joined.scene.end(), c.scene.begin(), c.scene.end());
        joined.time.insert(joined.time.end(), c.time.begin(), c.time.end());
        joined.event = joined.event || c.event;
        joined.change = joined.change || c.change;
      }
      detail::claims::sort_unique(joined.terms);
      detail::claims::sort_unique(joined.scene);
      detail::claims::sort_unique(joined.time);
      for (const auto& n : side->claims)
        if (n.polarity < 0 && n.attribute.empty() && !n.uncertain) {
          const rule_verdict v = compare(lex, n, joined);
          if (v.conflict) return v.made();
        }
    }
    return {false, false, std::string(last_reason)};
  }

 private:
  // A verdict of one comparison; its reason is one of the string literals of these rules, so a
  // comparison allocates no reason (`made()` makes the conflict_verdict of the pair).
  struct rule_verdict {
    bool conflict = false;
    bool needs_human = false;
    std::string_view reason;
    [[nodiscard]] conflict_verdict made() const {
      return {conflict, needs_human, std::string(reason)};
    }
  };
  // A claim that states an order the reader did not split into its options ("thinks iOS is
  // better than Android", "goes for Thai food over Indian", "Python a distant second"): a
  // word of comparison among its terms (or value).
  static bool unread_order(const text_claim& p) {
    auto has = [](const std::vector<std::string>& v) {
      for (const std::string_view w : {"than", "over", "ahead", "before", "preferable", "better",
                                       "worse", "second", "rather", "instead", "其", "胜", "比"})
        if (std::find(v.begin(), v.end(), w) != v.end()) return true;
      return false;
    };
    return p.order == 0 && (has(p.terms) || has(p.value));
  }
  // A one-off getting of a new or another thing ("bought a new car", "adopted another dog",
  // "买了一辆新车"): a verb of acquiring and a word of newness.
  static bool acquires_anew(const text_claim& p) {
    auto has = [&](std::string_view w) {
      return std::find(p.terms.begin(), p.terms.end(), w) != p.terms.end();
    };
    const bool acquiring = p.predicate == "buy" || p.predicate == "purchase" ||
                           p.predicate == "get" || p.predicate == "adopt" ||
                           p.predicate == "acquire" || p.predicate == "lease" || has("买") ||
                           has("购") || has("领");
    return acquiring && (has("new") || has("another") || has("新") || has("又"));
  }
  // General rule: a change that names what it replaced with "instead (of)" ends that state: when
  // every term of the unchanged claim `o` (its predicate among them) is in the change `c`, and
  // the change has a predicate of its own, `o` is what was replaced ("now cycles to work instead
  // of taking the bus" / "takes the bus to work").
  bool instead(const claim_lexicon& lex, const text_claim& c, const text_claim& o) const {
    return c.change && !o.change && c.polarity > 0 && o.polarity > 0 && !c.additive &&
           !o.additive && !c.predicate.empty() && !o.predicate.empty() &&
           c.predicate != o.predicate && o.terms.size() >= 2 &&
           std::binary_search(c.terms.begin(), c.terms.end(), std::string_view("instead"),
                              std::less<>()) &&
           subset_or_empty(lex, o.terms, c.terms);
  }
  // General rule: an amount named by a noun of money paid out ("grocery bill", "food budget",
  // "phone costs": WordNet 3.0 bill.n.02, budget.n.01, cost.n.01, expense.n.01, spending.n.01,
  // all under outgo.n.01 "money paid out") is the same amount as spending or paying (spend.v.01,
  // pay.v.01) on what the rest of the name says: "grocery bill is $900 a month" / "spends $100 a
  // week on groceries". `a` has the attribute, `v` the verb.
  static bool spending(const claim_lexicon& lex, const text_claim& a, const text_claim& v) {
    if (a.attribute.empty() || !v.attribute.empty() ||
        (v.predicate != "spend" && v.predicate != "pay"))
      return false;
    const std::string_view name = a.attribute;
    const auto sp = name.rfind(' ');
    if (sp == std::string_view::npos) return false;
    const std::string_view head = name.substr(sp + 1);
    if (head != "bill" && head != "bills" && head != "budget" && head != "cost" &&
        head != "costs" && head != "expense" && head != "expenses" && head != "spending")
      return false;
    // every word before the head (lemmatised as the reader does) among the verb's terms
    for (std::size_t b = 0; b < sp;) {
      const std::size_t e = std::min(name.find(' ', b), sp);
      const std::string w(lex.english().lemma(name.substr(b, e - b), word_pos::noun));
      if (std::none_of(v.terms.begin(), v.terms.end(),
                       [&](const std::string& u) { return match(lex, w, u); }))
        return false;
      b = e + 1;
    }
    return true;
  }
  // A single-valued "favourite <kind>" attribute ("favourite fruit = durian", 最喜欢的水果是榴莲).
  static bool favourite(const text_claim& c) {
    return c.attribute.starts_with("favourite ") && !c.value.empty() && !c.additive;
  }
  // The terms of an attitude claim `n` that name what the attitude is toward, against the terms
  // `other` of the claim it is compared with. General rule: an attitude toward taking a thing in
  // (eating, watching, hearing it: claim_words::engagement_verbs) or toward its taste, smell or
  // look (claim_words::aspect_nouns) is an attitude toward the thing, so those terms of `n` that
  // `other` does not have are dropped ("can't bear watching horror movies" / "adores horror
  // films", "hates the taste of durian" / "loves durian", "讨厌吃榴莲" / "对榴莲情有独钟").
  static std::vector<std::string> attitude_object(const text_claim& n,
                                                  const std::vector<std::string>& other) {
    auto listed = [](const auto& list, const std::string& t) {
      return std::find(list.begin(), list.end(), t) != list.end();
    };
    std::vector<std::string> out;
    out.reserve(n.terms.size());
    for (const auto& t : n.terms)
      if (std::binary_search(other.begin(), other.end(), t) ||
          (!listed(claim_words::engagement_verbs, t) && !listed(claim_words::aspect_nouns, t)))
        out.push_back(t);
    // (nothing but the attitude left: no object to compare)
    if (out.size() == 1 && out.front() == "like") out.clear();
    return out;
  }
  static bool ascii(const std::string& s) noexcept {
    return !s.empty() && static_cast<unsigned char>(s[0]) < 0x80;
  }
  // "smoker" / "smoke", "runner" / "run", "driver" / "drive": an agent noun and its verb
  static bool agent_of(const std::string& noun, const std::string& verb) {
    if (noun.size() < verb.size() + 1 || !noun.ends_with("er")) return false;
    const std::string_view stem(noun.data(), noun.size() - 2);
    if (stem == verb || std::string(stem) + "e" == verb) return true;
    return stem.size() == verb.size() + 1 && stem.back() == stem[stem.size() - 2] &&
           stem.substr(0, verb.size()) == verb;
  }
  // "vaping" / "vape", "running" / "run": a gerund the lemmatizer left (a verb WordNet does not
  // list) and its verb
  static bool gerund_of(const std::string& g, const std::string& verb) {
    if (g.size() < verb.size() + 2 || !g.ends_with("ing") || verb.size() < 3) return false;
    const std::string_view stem(g.data(), g.size() - 3);
    if (stem == verb ||
        (verb.back() == 'e' && stem == std::string_view(verb).substr(0, verb.size() - 1)))
      return true;
    return stem.size() == verb.size() + 1 && stem.back() == stem[stem.size() - 2] &&
           stem.substr(0, verb.size()) == verb;
  }
  static bool match(const claim_lexicon& lex, const std::string& p, const std::string& q) {
    if (p == q) return true;
    if (!ascii(p) || !ascii(q)) return false;
    return lex.english().synonyms(p, q) || agent_of(p, q) || agent_of(q, p) || gerund_of(p, q) ||
           gerund_of(q, p);
  }
  // `r` replaced what the holder had of its kind ("switched to tea", "换成了支付宝", "改喝茶")
  // and `p` asserts another thing of that kind ("drinks coffee every morning": tea and coffee
  // are two beverages, WordNet, `max_kin_depth` steps; "用微信支付": the same verb or noun
  // characters, another object).
  bool replaced(const claim_lexicon& lex, const text_claim& r, const text_claim& p) const {
    if (!r.replaces || p.replaces || p.polarity < 0 || r.polarity < 0 || p.event ||
        !p.attribute.empty() || p.additive || r.additive || p.terms.empty() || r.terms.empty())
      return false;
    const auto& new_one = r.object.empty() ? r.terms : r.object;
    if (contained(lex, new_one, p.terms)) return false;  // the same thing again
    if (!ascii(new_one.front())) {
      std::vector<std::string> shared;
      std::set_intersection(r.terms.begin(), r.terms.end(), p.terms.begin(), p.terms.end(),
                            std::back_inserter(shared));
      return !shared.empty() && shared.size() < r.terms.size() && !contained(lex, p.terms, r.terms);
    }
    // every word of the new thing names the same as one of the old or a kind beside it, and one
    // of them a kind beside it ("switched to oat milk" / "drinks black coffee": oat is neither)
    const auto& what = p.object.empty() ? p.terms : p.object;
    bool kin = false;
    for (const auto& a : new_one) {
      bool placed = false;
      for (const auto& b : what) {
        if (!ascii(b)) continue;
        if (match(lex, a, b)) {
          placed = true;
        } else if (lex.english().co_hyponyms(a, b, max_kin_depth)) {
          placed = kin = true;
        }
      }
      if (!placed) return false;
    }
    return kin;
  }
  // One object, measured or not, under one predicate or a light verb: "has a glass of wine" /
  // "gets through a bottle of wine", "takes the stairs" / "takes the stairs".
  static bool same_object(const claim_lexicon& lex, const text_claim& x, const text_claim& y) {
    auto what = [](const text_claim& c) {
      std::vector<std::string> v;
      for (const auto& o : c.object)
        if (std::find(claim_words::measure_nouns.begin(), claim_words::measure_nouns.end(), o) ==
            claim_words::measure_nouns.end())
          v.push_back(o);
      return v;
    };
    auto light = [](const std::string& p) {
      return std::find(claim_words::light_verbs.begin(), claim_words::light_verbs.end(), p) !=
             claim_words::light_verbs.end();
    };
    if (x.predicate.empty() || y.predicate.empty() || x.predicate == "like" ||
        y.predicate == "like")
      return false;
    // (seeing someone, visiting and meeting them are one thing: "visits their parents every
    // weekend" / "sees their parents once a year")
    auto meeting = [](const std::string& p) { return p == "see" || p == "visit" || p == "meet"; };
    if (!match(lex, x.predicate, y.predicate) && !light(x.predicate) && !light(y.predicate) &&
        !(meeting(x.predicate) && meeting(y.predicate)))
      return false;
    const auto ox = what(x), oy = what(y);
    // General rule: a light verb's object that is a kind of what another verb takes in (WordNet
    // 3.0 hypernyms: a beverage for "drink", food for "eat", tobacco for "smoke") names that
    // verb's act: "has the occasional cigarette" / "smokes a pack a day", "has a couple of
    // beers" / "drinks every night"
    auto taken_in = [&](const text_claim& v, const std::vector<std::string>& ov,
                        const text_claim& l, const std::vector<std::string>& ol) {
      const std::string_view kind = v.predicate == "drink"   ? "beverage"
                                    : v.predicate == "eat"   ? "food"
                                    : v.predicate == "smoke" ? "tobacco"
                                                             : "";
      return !kind.empty() && light(l.predicate) && !light(v.predicate) && !ol.empty() &&
             std::all_of(ol.begin(), ol.end(),
                         [&](const std::string& o) {
                           return ascii(o) && lex.english().is_a(o, kind, 6);
                         }) &&
             (ov.empty() || contained(lex, ov, ol));
    };
    if (taken_in(x, ox, y, oy) || taken_in(y, oy, x, ox)) return true;
    // a measure alone under one verb that is not light ("smokes a pack a day" / "smokes one
    // cigarette a month"): the measure is of what the verb takes
    if ((ox.empty() && !x.object.empty()) != (oy.empty() && !y.object.empty()))
      return (ox.empty() || oy.empty()) && match(lex, x.predicate, y.predicate) &&
             !light(x.predicate) && !light(y.predicate);
    return !ox.empty() && !oy.empty() && contained(lex, ox, oy) && contained(lex, oy, ox);
  }
  // "Mia is taller than Leo" / "Leo is taller than Mia": one comparison with the two named
  // holders swapped (an order that cannot hold both ways)
  static bool swapped_comparison(const text_claim& x, const text_claim& y) {
    auto name = [](const std::string& h) {
      return h.starts_with("name:") && h.find('/') == std::string::npos ? h.substr(5)
                                                                        : std::string();
    };
    const std::string nx = name(x.holder), ny = name(y.holder);
    if (nx.empty() || ny.empty() || x.predicate.empty() || x.predicate != y.predicate ||
        x.polarity != y.polarity)
      return false;
    auto has = [](const std::vector<std::string>& v, const std::string& w) {
      return std::binary_search(v.begin(), v.end(), w);
    };
    if (!has(x.terms, "than") || !has(y.terms, "than") || !has(x.terms, ny) || !has(y.terms, nx))
      return false;
    std::vector<std::string> rx, ry;
    for (const auto& t : x.terms)
      if (t != ny) rx.push_back(t);
    for (const auto& t : y.terms)
      if (t != nx) ry.push_back(t);
    return rx == ry;
  }
  // What a diet restriction can deny: eating, drinking or liking it ("eats salmon", "has a
  // steak", "loves bacon", "吃红烧肉"), not cooking or buying it for others.
  static bool consumes(const text_claim& p) {
    if (!p.predicate.empty())
      return std::find(claim_words::consumption_verbs.begin(), claim_words::consumption_verbs.end(),
                       p.predicate) != claim_words::consumption_verbs.end();
    return p.terms.empty() || !ascii(p.terms.front()) ||
           std::any_of(p.terms.begin(), p.terms.end(),
                       [](const std::string& t) { return t == "吃" || t == "喝" || t == "like"; });
  }
  // The characters of a Chinese word, as the reader keeps them (one term per character).
  static std::vector<std::string> characters(std::string_view w) {
    std::vector<std::string> out;
    for (std::size_t q = 0; q < w.size();) {
      const std::size_t l = detail::claims::utf8_len(static_cast<unsigned char>(w[q]));
      out.emplace_back(w.substr(q, l));
      q += l;
    }
    detail::claims::sort_unique(out);
    return out;
  }
  // characters() of each Chinese word of claim_words::chinese_antonyms and
  // claim_words::degree_scales, made once (the rules ask for them on every comparison).
  static const std::vector<std::string>& table_characters(std::string_view w) {
    static const auto table = [] {
      std::unordered_map<std::string_view, std::vector<std::string>> t;
      auto add = [&t](std::string_view x) {
        if (!x.empty() && static_cast<unsigned char>(x[0]) >= 0x80 && !t.contains(x))
          t.emplace(x, characters(x));
      };
      for (const auto& [a, b] : claim_words::chinese_antonyms) {
        add(a);
        add(b);
      }
      for (const auto& scale : claim_words::degree_scales) {
        for (const auto x : scale.high) add(x);
        for (const auto x : scale.low) add(x);
      }
      return t;
    }();
    return table.at(w);
  }
  // Two Chinese claims that differ by one pair of claim_words::chinese_antonyms and agree on
  // every other character ("性格外向" / "性格内向", "习惯早起" / "习惯晚起").
  static bool chinese_antonyms(const std::vector<std::string>& x,
                               const std::vector<std::string>& y) {
    if (x.empty() || y.empty() || ascii(x.back()) || ascii(y.back())) return false;
    // an attitude toward the quality itself ("喜欢热闹" / "喜欢清静"), not toward two things
    // of opposite qualities ("喜欢外向的人" / "喜欢内向的人")
    const bool attitude = ascii(x.front()) || ascii(y.front());
    auto has_all = [](const std::vector<std::string>& v, const std::vector<std::string>& w) {
      return std::includes(v.begin(), v.end(), w.begin(), w.end());
    };
    auto without = [](const std::vector<std::string>& v, const std::vector<std::string>& w) {
      std::vector<std::string> r;
      std::set_difference(v.begin(), v.end(), w.begin(), w.end(), std::back_inserter(r));
      return r;
    };
    for (const auto& [a, b] : claim_words::chinese_antonyms) {
      const auto& ca = table_characters(a);
      const auto& cb = table_characters(b);
      for (const auto* p : {&x, &y}) {
        const auto& q = p == &x ? y : x;
        // (one side may say a little more: "很节俭" / "花钱很奢侈")
        const auto rp = without(*p, ca), rq = without(q, cb);
        if (has_all(*p, ca) && has_all(q, cb) && !has_all(*p, cb) && !has_all(q, ca) &&
            (attitude ? rp == rq && std::all_of(rp.begin(), rp.end(), ascii)
                      : (has_all(rp, rq) || has_all(rq, rp))))
          return true;
      }
    }
    return false;
  }
  // How many of the denied terms `n` the asserted terms `p` state, or state a kind of
  // (WordNet hypernyms, `max_is_a_depth` steps: "no person" / "a man", "no meat" / "beef").
  // Two-word nouns of WordNet (english_lexicon::phrase) count as one term on either side: "any
  // musical instrument" / "the piano", "dairy products" / "ice cream".
  std::size_t denied_in(const claim_lexicon& lex, const std::vector<std::string>& n,
                        const std::vector<std::string>& p) const {
    // what the asserted side says it is free of ("lactose-free milk", "gluten-free bread"), and
    // a plant milk ("oat milk", "soy milk"): no dairy, no lactose
    const bool plant_milk =
        std::binary_search(p.begin(), p.end(), std::string_view("milk"), std::less<>()) &&
        std::any_of(p.begin(), p.end(), [](const std::string& u) {
          return std::find(claim_words::plant_milks.begin(), claim_words::plant_milks.end(), u) !=
                 claim_words::plant_milks.end();
        });
    auto free_of = [&](const std::string& t) {
      if (plant_milk && (t == "lactose" || t == "dairy")) return true;
      return std::any_of(p.begin(), p.end(), [&](const std::string& u) {
        return u.size() == t.size() + 5 && u.starts_with(t) && u.ends_with("-free");
      });
    };
    auto states = [&](const std::string& t, const std::string& u) {
      // ("never drinks alcohol" / "has a beer now and then": having food or drink is
      // consuming it; "不信任何宗教" / "信基督教": a Chinese "any X", one of X's characters,
      // claims_chinese.hpp)
      // (nor having a thing / owning it: "has no car" / "owns a car", own.v.01 "have, possess")
      return match(lex, t, u) || (u == "have" && (t == "eat" || t == "drink")) ||
             (t == "have" && (u == "own" || u == "possess")) ||
             (t.starts_with("任何") && u.size() == 3 && !ascii(u) &&
              t.find(u, 6) != std::string::npos) ||
             compound_of(u, t) ||
             (ascii(t) && ascii(u) && lex.english().is_a(u, t, max_is_a_depth) && !free_of(t));
    };
    std::vector<char> done(n.size(), 0);
    std::size_t k = 0;
    for (std::size_t i = 0; i < n.size(); ++i)
      if (std::any_of(p.begin(), p.end(), [&](const std::string& u) { return states(n[i], u); }))
        done[i] = 1, ++k;
    if (k == n.size()) return k;
    auto own = [](const phrase_term& t, const std::string& u) {
      return std::find(t.words.begin(), t.words.end(), u) != t.words.end();
    };
    const auto p_phrases = phrases(lex, p);
    for (std::size_t i = 0; i < n.size(); ++i)
      if (!done[i] && std::any_of(p_phrases.begin(), p_phrases.end(), [&](const phrase_term& u) {
            return !own(u, n[i]) && states(n[i], u.text);
          }))
        done[i] = 1, ++k;
    if (k == n.size()) return k;
    // (stated by another word than its own: "not eating a banana by a tree" does not deny the
    // "banana" of "eating a banana" though "banana" and "banana tree" share a WordNet synset)
    for (const auto& t : phrases(lex, n)) {
      bool open = false;
      for (const auto& w : t.words) open = open || !done[index_of(n, w)];
      if (!open) continue;
      const bool stated =
          std::any_of(p.begin(), p.end(),
                      [&](const std::string& u) { return !own(t, u) && states(t.text, u); }) ||
          std::any_of(p_phrases.begin(), p_phrases.end(), [&](const phrase_term& u) {
            return std::none_of(u.words.begin(), u.words.end(),
                                [&](const std::string& w) { return own(t, w); }) &&
                   states(t.text, u.text);
          });
      if (!stated) continue;
      for (const auto& w : t.words) {
        auto& d = done[index_of(n, w)];
        k += !d;
        d = 1;
      }
    }
    return k;
  }
  // The index of `w`, one of the terms `v`.
  static std::size_t index_of(const std::vector<std::string>& v, const std::string& w) {
    return static_cast<std::size_t>(std::find(v.begin(), v.end(), w) - v.begin());
  }
  // A multiword word of WordNet (english_lexicon::phrase) that terms of a claim spell: two
  // terms in either order, as the reader keeps its terms sorted ({"instrument", "musical"} ->
  // "musical instrument"), or three beginning with the predicate ("look down on").
  struct phrase_term {
    std::string text;
    std::vector<std::string> words;  // in the phrase's order
  };
  // (`antonyms_only`: only those that can have an antonym, english_lexicon::begins_antonym_phrase)
  static std::vector<phrase_term> phrases(const claim_lexicon& lex,
                                          const std::vector<std::string>& terms,
                                          const std::string& predicate = {},
                                          bool antonyms_only = false) {
    std::vector<phrase_term> out;
    const auto& e = lex.english();
    for (std::size_t i = 0; i < terms.size(); ++i) {
      if (!ascii(terms[i]) ||
          !(antonyms_only ? e.begins_antonym_phrase(terms[i]) : e.begins_phrase(terms[i])))
        continue;
      for (std::size_t j = 0; j < terms.size(); ++j) {
        if (i == j || !ascii(terms[j])) continue;
        const std::string_view two[] = {terms[i], terms[j]};
        if (e.phrase(two, 2) == 2) out.push_back({terms[i] + " " + terms[j], {terms[i], terms[j]}});
        if (terms[i] != predicate) continue;
        for (std::size_t k = 0; k < terms.size(); ++k) {
          if (k == i || k == j || !ascii(terms[k])) continue;
          const std::string_view three[] = {terms[i], terms[j], terms[k]};
          if (e.phrase(three, 3) == 3)
            out.push_back(
                {terms[i] + " " + terms[j] + " " + terms[k], {terms[i], terms[j], terms[k]}});
        }
      }
    }
    return out;
  }
  // A closed compound names a kind of its last word ("sailboat" / "boat", "smartphone" /
  // "phone"); the head must be 4 letters or more and the modifier 3 or more.
  static bool compound_of(const std::string& u, const std::string& t) {
    return ascii(u) && ascii(t) && t.size() >= 4 && u.size() >= t.size() + 3 && u.ends_with(t) &&
           std::all_of(u.begin(), u.end(), [](char ch) { return ch >= 'a' && ch <= 'z'; });
  }
  static std::size_t matched(const claim_lexicon& lex, const std::vector<std::string>& n,
                             const std::vector<std::string>& p) {
    std::size_t k = 0;
    for (const auto& t : n)
      if (std::any_of(p.begin(), p.end(), [&](const std::string& u) { return match(lex, t, u); }))
        ++k;
    return k;
  }
  // Which end of `scale` a claim's terms name: +1 high, -1 low (also when both are named), 0
  // neither; `used`
  // collects the terms (Chinese: characters) of the words found.
  static int scale_end(const claim_words::degree_scale& scale,
                       const std::vector<std::string>& terms, std::vector<std::string>& used) {
    // (terms are sorted: Chinese characters, of bytes >= 0x80, come last)
    const bool chinese = !terms.empty() && !ascii(terms.back());
    auto has = [&](std::string_view w) {
      if (w.empty()) return false;
      if (static_cast<unsigned char>(w[0]) < 0x80)
        return std::binary_search(terms.begin(), terms.end(), w, std::less<>());
      if (!chinese) return false;  // (a Chinese word has characters, none among the terms)
      const auto& cs = table_characters(w);
      return std::includes(terms.begin(), terms.end(), cs.begin(), cs.end());
    };
    auto add = [&](std::string_view w) {
      if (static_cast<unsigned char>(w[0]) < 0x80) {
        used.emplace_back(w);
      } else {
        const auto& cs = table_characters(w);
        used.insert(used.end(), cs.begin(), cs.end());
      }
    };
    int end = 0;
    for (const auto w : scale.high)
      if (has(w)) end |= 1, add(w);
    for (const auto w : scale.low)
      if (has(w)) end |= 2, add(w);
    return end == 1 ? 1 : end != 0 ? -1 : 0;  // "mildly spicy": the low end qualifies the high
  }
  // Two claims about one thing at opposite ends of a claim_words::degree_scale: they share a
  // content term besides the scale's words (the language, the dish, the meetings), and their
  // predicates agree or one is a copula ("arrives early to meetings" / "is late to
  // meetings"; not "arrives at work early" / "leaves work late").
  static bool opposite_degree(const claim_lexicon& lex, const text_claim& x, const text_claim& y) {
    if (x.polarity != y.polarity || !x.attribute.empty() || !y.attribute.empty()) return false;
    const bool predicates_agree = x.predicate.empty() || y.predicate.empty() ||
                                  match(lex, x.predicate, y.predicate) || x.predicate == "like" ||
                                  y.predicate == "like";
    for (const auto& scale : claim_words::degree_scales) {
      // (a time of day needs one act: "arrives early" / "leaves late" are two)
      if (scale.name == "punctuality" && !predicates_agree) continue;
      std::vector<std::string> used;
      const int ex = scale_end(scale, x.terms, used);
      if (ex == 0) continue;  // (then ey is not needed)
      const int ey = scale_end(scale, y.terms, used);
      if (ey == 0 || ex == ey) continue;
      detail::claims::sort_unique(used);
      auto content = [&](const text_claim& c) {
        std::vector<std::string> v;
        for (const auto& t : c.terms)
          if (!std::binary_search(used.begin(), used.end(), t) && t != "like" && t != c.predicate &&
              t != "吃" && t != "说" && t != "会")
            v.push_back(t);
        return v;
      };
      const auto cx = content(x), cy = content(y);
      if (matched(lex, cx, cy) > 0) return true;
    }
    return false;
  }
  // "1985" -> {1985, 1985}; "1985..1989" -> {1985, 1989}; {0, -1} when not a year.
  static std::pair<int, int> year_range(const std::string& v) {
    const std::size_t dots = v.find("..");
    // (strtol: an out-of-range number is LONG_MAX, not undefined behaviour)
    const long lo = std::strtol(v.c_str(), nullptr, 10);
    const long hi = dots == std::string::npos ? lo : std::strtol(v.c_str() + dots + 2, nullptr, 10);
    if (lo < 1850 || lo > 2200 || hi < lo || hi > 2200) return {0, -1};
    return {static_cast<int>(lo), static_cast<int>(hi)};
  }
  int current_year() const {
    if (reference_year > 0) return reference_year;
    const std::chrono::year_month_day today{
        std::chrono::floor<std::chrono::days>(std::chrono::system_clock::now())};
    return static_cast<int>(today.year());
  }
  std::optional<rule_verdict> numeric_attribute(const text_claim& x, const text_claim& y) const {
    if (x.value.size() != 1 || y.value.size() != 1) return std::nullopt;
    const std::string& a = x.attribute;
    const std::string& b = y.attribute;
    const std::string_view reason = x.change || y.change ? "change_statement" : "single_value";
    auto verdict = [&](bool conflict) {
      return conflict ? rule_verdict{true, false, reason}
                      : rule_verdict{false, false, "same_value"};
    };
    const double vx = std::atof(x.value.front().c_str()), vy = std::atof(y.value.front().c_str());
    if ((a == "age" && b == "birth year") || (a == "birth year" && b == "age")) {
      const double age = a == "age" ? vx : vy;
      const auto [lo, hi] = year_range(a == "age" ? y.value.front() : x.value.front());
      if (hi < lo || age <= 0) return std::nullopt;
      // born in [lo, hi]: aged (now - hi - 1) to (now - lo); a year more either way, as the
      // statements may be a year apart
      const int now = current_year();
      return verdict(age < now - hi - 2 || age > now - lo + 1);
    }
    if ((a == "zodiac" && b == "birth year") || (a == "birth year" && b == "zodiac")) {
      // General rule: a Chinese zodiac sign (属龙) names a birth year modulo 12 (2020 a rat
      // year, 鼠牛虎兔龙蛇马羊猴鸡狗猪). The lunar new year falls in January or February, so
      // a year of birth allows its own sign and the year before's; any other sign is a conflict
      static constexpr std::string_view signs[] = {"鼠", "牛", "虎", "兔", "龙", "蛇",
                                                   "马", "羊", "猴", "鸡", "狗", "猪"};
      const std::string& sign = a == "zodiac" ? x.value.front() : y.value.front();
      const auto [lo, hi] = year_range(a == "zodiac" ? y.value.front() : x.value.front());
      const auto at = std::find(std::begin(signs), std::end(signs), sign);
      if (hi != lo || at == std::end(signs)) return std::nullopt;
      const int k = static_cast<int>(at - std::begin(signs));
      auto sign_of = [](int year) { return ((year - 2020) % 12 + 12) % 12; };
      return verdict(sign_of(lo) != k && sign_of(lo - 1) != k);
    }
    if (a != b) return std::nullopt;
    if (a == "birth year") {
      const auto rx = year_range(x.value.front()), ry = year_range(y.value.front());
      if (rx.second < rx.first || ry.second < ry.first) return std::nullopt;
      return verdict(rx.second < ry.first || ry.second < rx.first);
    }
    // two lengths of time of one attribute (English durations, claim_measures.hpp): stated
    // loosely ("over an hour", "about 40 minutes"), so one is twice the other or more
    if (x.value.front().ends_with(" min") && y.value.front().ends_with(" min")) {
      if (vx <= 0 || vy <= 0) return std::nullopt;
      return verdict(std::max(vx, vy) >= 2 * std::min(vx, vy));
    }
    if (a == "height" || a == "weight") {
      if (vx <= 0 || vy <= 0) return std::nullopt;
      // a body measure changes: one dated ("weighed 82 kg last year", "in November") is a past
      // value, no second value of now
      if (x.time != y.time) return rule_verdict{false, false, "different_time"};
      const double tolerance = a == "height" ? 0.03 : 0.05;
      return verdict(std::abs(vx - vy) > tolerance * std::max(vx, vy));
    }
    if (a == "birthday") {
      const std::string& dx = x.value.front();
      const std::string& dy = y.value.front();
      auto md = [](const std::string& d) {  // "05-20" or "05"
        return d.size() >= 2 && d[0] >= '0' && d[0] <= '1' && d[1] >= '0' && d[1] <= '9' &&
               (d.size() == 2 || (d.size() == 5 && d[2] == '-'));
      };
      if (!md(dx) || !md(dy)) return std::nullopt;
      if (dx.substr(0, 2) != dy.substr(0, 2)) return verdict(true);
      return verdict(dx.size() == 5 && dy.size() == 5 && dx != dy);
    }
    return std::nullopt;
  }
  // One attribute named in two ways: word for word the same or synonyms ("favourite film" /
  // "favourite movie", WordNet).
  static bool same_attribute(const claim_lexicon& lex, std::string_view a, std::string_view b) {
    if (a.empty() || b.empty()) return false;
    if (a == b) return true;
    while (!a.empty() && !b.empty()) {
      const std::size_t pa = a.find(' '), pb = b.find(' ');
      if (!match(lex, std::string(a.substr(0, pa)), std::string(b.substr(0, pb)))) return false;
      a = pa == std::string_view::npos ? std::string_view() : a.substr(pa + 1);
      b = pb == std::string_view::npos ? std::string_view() : b.substr(pb + 1);
      if (a.empty() != b.empty()) return false;
    }
    return true;
  }
  // A value that names a colour (see the single-value rule of `compare`).
  static bool names_colour(const claim_lexicon& lex, const std::vector<std::string>& value) {
    return std::any_of(value.begin(), value.end(), [&](const std::string& v) {
      return v == "色" || (ascii(v) && lex.english().is_a(v, "color", 3));
    });
  }
  static bool contained(const claim_lexicon& lex, const std::vector<std::string>& n,
                        const std::vector<std::string>& p) {
    return !n.empty() && matched(lex, n, p) == n.size();
  }
  static bool subset_or_empty(const claim_lexicon& lex, const std::vector<std::string>& n,
                              const std::vector<std::string>& p) {
    return n.empty() || matched(lex, n, p) == n.size();
  }

  rule_verdict compare(const claim_lexicon& lex, const text_claim& x, const text_claim& y) const {
    if (!x.holder.empty() && !y.holder.empty() && x.holder != y.holder)
      return {false, false, "different_holders"};
    // a question or a hedged clause (text_claim::uncertain) asserts nothing to contradict
    if (x.uncertain || y.uncertain) return {false, false, "uncertain"};
    if (!x.scene.empty() && !y.scene.empty() && !subset_or_empty(lex, x.scene, y.scene) &&
        !subset_or_empty(lex, y.scene, x.scene))
      return {false, false, "different_scene"};
    if (!x.time.empty() && !y.time.empty() && x.time != y.time)
      return {false, false, "different_time"};
    const bool change = x.change || y.change;
    // two amounts over periods of one thing (text_claim::amount): compared per day, so that
    // "每个月存五千块" / "一年存六万块" is one rate and "rent is 5000 yuan a month" / "... a
    // year" two ("degree")
    if (x.amount && y.amount && x.polarity == y.polarity && x.frequency > 0 && y.frequency > 0 &&
        !x.additive && !y.additive &&
        (x.attribute.empty() && y.attribute.empty()
             ? contained(lex, x.terms, y.terms) || contained(lex, y.terms, x.terms) ||
                   same_object(lex, x, y)
             : same_attribute(lex, x.attribute, y.attribute) || spending(lex, x, y) ||
                   spending(lex, y, x))) {
      const double hi = std::max(x.frequency, y.frequency), lo = std::min(x.frequency, y.frequency);
      if (hi - lo <= rate_tolerance * hi) return {false, false, "same_rate"};
      return {true, false, change ? "change_statement" : "degree"};
    }
    // numbers of one measure: an age against a year of birth, two heights (3 % apart), two
    // weights (5 %), two birthdays (month, and day when both give one)
    if (x.polarity > 0 && y.polarity > 0 && !x.additive && !y.additive)
      if (auto v = numeric_attribute(x, y)) return *v;
    // 3. one single-valued attribute, two values
    if (same_attribute(lex, x.attribute, y.attribute)) {
      // "is also a part-time photographer": a second value, added
      if (x.polarity == y.polarity && (x.additive || y.additive)) return {false, false, "additive"};
      // two denials (or two past values: "used to live in Porto" / "previously lived in
      // Lisbon") of one attribute deny two values, which may both be false now
      if (x.polarity < 0 && y.polarity < 0) return {false, false, "two_denials"};
      if (x.polarity == y.polarity) {
        // General rule: a colour is one aspect of a thing, its make or kind another ("the car is
        // white" / "the car is a Tesla", "车是黑色的" / "车是一辆比亚迪"): a value that names a
        // colour (WordNet 3.0: a noun under color.n.01 within 3 hypernym steps; Chinese: a value
        // with 色 "colour") against one that does not is no second value
        // (not a favourite, whose values are things of its kind: "favourite fruit = orange")
        if (!favourite(x) && !favourite(y) &&
            names_colour(lex, x.value) != names_colour(lex, y.value))
          return {false, false, "different_aspect"};
        if (!x.value.empty() && !y.value.empty() && !subset_or_empty(lex, x.value, y.value) &&
            !subset_or_empty(lex, y.value, x.value))
          return {true, false, change ? "change_statement" : "single_value"};
        return {false, false, "same_value"};
      }
    }
    // 4. opposite polarity: what the negative side denies is asserted by the positive side
    if (x.polarity != y.polarity) {
      const text_claim& n = x.polarity < 0 ? x : y;
      const text_claim& p = x.polarity < 0 ? y : x;
      // the rejected option of an order of preference is no dislike: "prefers tea over coffee"
      // agrees with "likes coffee" (one may like both); it is denied only by the preferred
      // option of another order ("prefers coffee over tea": "role_swap")
      if (n.order < 0 && p.order <= 0 && !unread_order(p))
        return {false, false, "preference_order"};
      bool holds;
      // General rule: a resignation that names no employer (辞职, "quit her job") ends the
      // holder's job, so it denies the occupation too ("是一名中学老师" / "辞去了教职")
      const bool resigned =
          n.attribute == "employer" && n.value.empty() && n.change && p.attribute == "occupation";
      if (resigned || same_attribute(lex, n.attribute, p.attribute)) {
        // "no longer lives in Porto" / "lives in Porto"; "辞职了" / "在银行上班"
        holds = subset_or_empty(lex, n.value, p.value);
      } else if (n.any_predicate) {
        const auto& obj = n.object.empty() ? n.terms : n.object;
        // (the unit of a rate names its occasion: "quit the morning tea" / "drinks tea every
        // morning")
        std::size_t m = denied_in(lex, obj, p.terms);
        if (m + 1 == obj.size() && !p.routine.empty()) {
          std::vector<std::string> with_routine = p.terms;
          with_routine.push_back(p.routine);
          detail::claims::sort_unique(with_routine);
          m = denied_in(lex, obj, with_routine);
        }
        // (a diet restriction's denial, predicate "eat" (claim_implications.hpp), denies
        // consuming only)
        holds = !obj.empty() && m == obj.size() && (n.predicate != "eat" || consumes(p));
      } else if (n.predicate == "like" && n.attribute.empty() && favourite(p)) {
        // a favourite is a liking of its value: "detests durian" / "durian is my favourite
        // fruit" (what the denial names besides the attitude must be the value, or a kind of it)
        const auto denied = attitude_object(n, p.value);
        std::vector<std::string> liked = p.value;
        liked.emplace_back("like");
        detail::claims::sort_unique(liked);
        holds = !denied.empty() && denied_in(lex, denied, liked) == denied.size();
      } else if (n.predicate == "like" && p.predicate == "like") {
        // two attitudes: what the denial says about taking the thing in is no part of it
        // (attitude_object)
        const auto denied = attitude_object(n, p.terms);
        holds = !denied.empty() && denied_in(lex, denied, p.terms) == denied.size();
      } else {
        // General rule: a noun of a measure (claim_words::measure_nouns: "a bowl of cereal", "a
        // glass of milk") is no part of what is denied when the other side does not name it:
        // "no man eating a bowl of cereal" denies eating cereal ("the man is eating cereal"),
        // as long as something besides the measure is left to deny
        std::vector<std::string> denied = n.terms;
        std::erase_if(denied, [&](const std::string& t) {
          return std::find(claim_words::measure_nouns.begin(), claim_words::measure_nouns.end(),
                           t) != claim_words::measure_nouns.end() &&
                 !std::binary_search(p.terms.begin(), p.terms.end(), t);
        });
        if (denied.size() < 2) denied = n.terms;
        // General rule: not eating or drinking a thing is denied by any taking of it in
        // (claim_words::consumption_verbs: "never eats fast food" / "grabs fast food a couple of
        // times a month"), as a diet restriction's denial is; a holder's statement only
        if ((n.predicate == "eat" || n.predicate == "drink") && !n.holder.empty() &&
            !p.predicate.empty() && !match(lex, n.predicate, p.predicate) && consumes(p) &&
            denied.size() >= 2)
          std::erase(denied, n.predicate);
        holds = !denied.empty() && denied_in(lex, denied, p.terms) == denied.size();
      }
      if (!holds) return {false, false, "not_contained"};
      // the scene of what is denied must be among the other's scenes or its routine ("in the
      // mornings" / "every morning")
      std::vector<std::string> p_scene = p.scene;
      if (!p.routine.empty()) p_scene.push_back(p.routine);
      if (!subset_or_empty(lex, n.scene, p_scene)) return {false, false, "different_scene"};
      // an end of having a thing against getting a new one of its kind ("sold his car" /
      // "bought a new car", "把车卖了" / "买了一辆新车"): two events, no contradiction
      if (n.any_predicate && n.change && p.event && acquires_anew(p))
        return {false, false, "two_events"};
      if (n.event != p.event) return {true, true, "state_vs_event"};
      // a rule against an exception in one scene (not a change: "quit tennis" ends "plays
      // tennis on weekends" too)
      if (n.scene.empty() && !p.scene.empty() && !n.change && !p.change)
        return {true, true, "scene_specific"};
      return {true, false,
              change        ? "change_statement"
              : n.order < 0 ? "role_swap"
                            : "opposite_polarity"};
    }
    // a lasting restriction against a one-off event ("is vegetarian" / "ate a burger")
    if (x.event != y.event && (x.restrictive || y.restrictive))
      return {true, true, "state_vs_event"};
    // 5. same polarity
    if (x.event && y.event) return {false, false, "two_events"};
    // antonyms in one frame, between statements with holders (memory statements): in scene
    // descriptions ("a man is standing" / "a man is sitting") they are two moments, not a
    // contradiction (SICK labels most such pairs neutral)
    if (x.holder.empty() || y.holder.empty()) return {false, false, "no_claim_conflict"};
    if (replaced(lex, x, y) || replaced(lex, y, x) || instead(lex, x, y) || instead(lex, y, x))
      return {true, false, "change_statement"};
    if (x.attribute.empty() && y.attribute.empty() && chinese_antonyms(x.terms, y.terms))
      return {true, false, "antonym"};
    // (not in a noun-phrase subject: "a black dog" / "a white dog" are two dogs)
    auto in = [](const std::vector<std::string>& v, const std::string& w) {
      return std::binary_search(v.begin(), v.end(), w);
    };
    // s (x's word, or multiword word: "look down on" / "admire") and t (y's) are antonyms
    using words_t = std::span<const std::string>;
    // (not a word of a noun-phrase subject, and not all of its words on the other side)
    auto usable = [&](words_t words, const text_claim& c, const text_claim& other) {
      return ascii(words.front()) &&
             std::none_of(words.begin(), words.end(),
                          [&](const std::string& u) { return in(c.subject, u); }) &&
             !std::all_of(words.begin(), words.end(), [&](const std::string& u) {
               return std::any_of(other.terms.begin(), other.terms.end(),
                                  [&](const std::string& v) { return match(lex, u, v); });
             });
    };
    auto antonym = [&](const std::string& s, words_t s_words, const std::string& t,
                       words_t t_words) {
      if (!lex.english().antonyms(s, t)) return false;
      // only the predicates ("accepted" / "rejected") or the one complement of two copula
      // states ("is early" / "is late"): antonyms among objects ("classical music" / "pop
      // music") are two objects, not a contradiction
      // a copula complement may carry its modifiers ("is patient with slow drivers" /
      // "is impatient with slow drivers", "is a heavy sleeper" / "is a light sleeper"): then
      // the rest of the two states must be the same
      // (a judgement verb's complement counts as one: "finds math easy" / "finds math
      // difficult")
      auto judgement = [](const std::string& p) {
        return p.empty() || p == "find" || p == "consider" || p == "think" || p == "feel" ||
               p == "seem" || p == "look" || p == "sound" || p == "become" || p == "stay" ||
               p == "remain" || p == "keep";
      };
      auto all_in = [&](const std::vector<std::string>& v, words_t w) {
        return std::all_of(w.begin(), w.end(), [&](const std::string& u) { return in(v, u); });
      };
      const bool copulas = judgement(x.predicate) && x.predicate == y.predicate &&
                           !x.any_predicate && !y.any_predicate && x.attribute.empty() &&
                           y.attribute.empty();
      // (a multiword predicate begins with the verb: "looks down on")
      const bool verbs = s_words.front() == x.predicate && t_words.front() == y.predicate;
      if (!verbs && !(copulas && all_in(x.object, s_words) && all_in(y.object, t_words)))
        return false;
      auto rest = [](const std::vector<std::string>& terms, words_t w) {
        std::vector<std::string> r;
        for (const auto& u : terms)
          if (std::find(w.begin(), w.end(), u) == w.end()) r.push_back(u);
        return r;
      };
      const auto xr = rest(x.terms, s_words), yr = rest(y.terms, t_words);
      return verbs ? ((!xr.empty() && subset_or_empty(lex, xr, y.terms)) ||
                      (!yr.empty() && subset_or_empty(lex, yr, x.terms)))
                   : (subset_or_empty(lex, xr, y.terms) && subset_or_empty(lex, yr, x.terms));
    };
    std::vector<char> x_ok(x.terms.size()), y_ok(y.terms.size());
    for (std::size_t i = 0; i < x.terms.size(); ++i) x_ok[i] = usable({&x.terms[i], 1}, x, y);
    for (std::size_t j = 0; j < y.terms.size(); ++j) y_ok[j] = usable({&y.terms[j], 1}, y, x);
    for (std::size_t i = 0; i < x.terms.size(); ++i)
      for (std::size_t j = 0; j < y.terms.size() && x_ok[i]; ++j)
        if (y_ok[j] && antonym(x.terms[i], {&x.terms[i], 1}, y.terms[j], {&y.terms[j], 1}))
          return {true, false, "antonym"};
    // multiword words of WordNet against words or multiword words ("is a good person" / "is a
    // bad person", "admires the boss" / "looks down on the boss")
    auto xp = phrases(lex, x.terms, x.predicate, true),
         yp = phrases(lex, y.terms, y.predicate, true);
    std::erase_if(xp, [&](const phrase_term& s) { return !usable(s.words, x, y); });
    std::erase_if(yp, [&](const phrase_term& t) { return !usable(t.words, y, x); });
    for (const auto& s : xp) {
      for (std::size_t j = 0; j < y.terms.size(); ++j)
        if (y_ok[j] && antonym(s.text, s.words, y.terms[j], {&y.terms[j], 1}))
          return {true, false, "antonym"};
      for (const auto& t : yp)
        if (antonym(s.text, s.words, t.text, t.words)) return {true, false, "antonym"};
    }
    for (const auto& t : yp)
      for (std::size_t i = 0; i < x.terms.size(); ++i)
        if (x_ok[i] && antonym(x.terms[i], {&x.terms[i], 1}, t.text, t.words))
          return {true, false, "antonym"};
    if (opposite_degree(lex, x, y)) return {true, false, "degree"};
    const bool same_terms =
        !x.terms.empty() && contained(lex, x.terms, y.terms) && contained(lex, y.terms, x.terms);
    // a frequency needs only one side's terms within the other's ("健身" / "去健身房")
    const bool related = (!x.terms.empty() && !y.terms.empty() &&
                          (contained(lex, x.terms, y.terms) || contained(lex, y.terms, x.terms))) ||
                         same_object(lex, x, y);
    // General rule: a measure noun under a rate is an amount of the thing, not another thing
    // ("smokes a pack a day" / "smokes the occasional cigar": smoking, claim_words::measure_nouns),
    // so it is left out when the other side does not name it. What the measure holds is not
    // known: "drinks a bottle a night" / "drinks the occasional coffee" is wrongly a conflict
    auto measured = [&](const text_claim& c, const text_claim& other) {
      std::vector<std::string> v = c.terms;
      std::erase_if(v, [&](const std::string& t) {
        return std::find(claim_words::measure_nouns.begin(), claim_words::measure_nouns.end(), t) !=
                   claim_words::measure_nouns.end() &&
               !in(other.terms, t);
      });
      return v;
    };
    const bool rated =
        x.frequency > 0 && y.frequency > 0 && !related &&
        ((x.quantities.size() == 1 && !x.amount) || (y.quantities.size() == 1 && !y.amount));
    const bool measured_related = rated && [&] {
      const auto xm = measured(x, y), ym = measured(y, x);
      return !xm.empty() && !ym.empty() &&
             (xm.size() < x.terms.size() || ym.size() < y.terms.size()) &&
             (contained(lex, xm, ym) || contained(lex, ym, xm));
    }();
    if ((related || measured_related) && x.frequency > 0 && y.frequency > 0 &&
        std::max(x.frequency, y.frequency) >=
            min_frequency_ratio * std::min(x.frequency, y.frequency) * (1 - 1e-9))
      return {true, false, "degree"};
    // two amounts of one thing: the same terms, or one side's terms within the other's when no
    // amount of one is among the other's ("睡够八小时" / "只睡四五个小时")
    auto disjoint = [](const std::vector<double>& u, const std::vector<double>& v) {
      return std::none_of(u.begin(), u.end(),
                          [&](double q) { return std::find(v.begin(), v.end(), q) != v.end(); });
    };
    if ((same_terms ||
         (related && !x.additive && !y.additive && disjoint(x.quantities, y.quantities))) &&
        !x.quantities.empty() && !y.quantities.empty() && x.quantities != y.quantities &&
        x.time.empty() && y.time.empty())
      return {true, false, "quantity"};
    return {false, false, "no_claim_conflict"};
  }
};

/// A conflict judge over claims (see the file comment), for `conflict_detector<Candidates,
/// claim_conflict_judge<>>`. `Extractor` reads each text (claims.hpp); `Fallback` judges a pair
/// whose texts cannot both be read.
template <claim_extractor_policy Extractor = default_claim_extractor,
          class Fallback = default_conflict_judge>
struct claim_conflict_judge {
  Extractor extractor{};  ///< reads a record's content into claims
  Fallback fallback{};    ///< judges pairs the extractor cannot read
  claim_rules rules{};    ///< the comparison rules
  /// The user's lexicon (claim_lexicon::load_tsv) for the rules and, when `Extractor` is
  /// `default_claim_extractor`, for reading; null = `claim_lexicon::builtin()` (or the pointers
  /// already set in `extractor` and `rules`). Shared, so copies of the judge stay valid.
  std::shared_ptr<const claim_lexicon> lexicon{};
  /// A model asked about the pairs the rules leave open (`model_judge::left_open`), or about
  /// every pair with `model->ask_all()`; its verdict replaces the rules' when it answers.
  /// Null = rules only. Identical texts never reach it.
  std::shared_ptr<const model_judge> model{};

  /// Judges one candidate pair (conflict_judge.hpp's signature). Never throws on any text
  /// (a `model` may throw memhealth::error).
  template <class R>
  [[nodiscard]] conflict_verdict operator()(const R& a, std::string_view norm_a, const R& b,
                                            std::string_view norm_b, float cosine) const {
    if (norm_a == norm_b) return {false, false, "identical_text"};
    return judge_analysed(a, norm_a, analyse(a), b, norm_b, analyse(b), cosine);
  }

  /// The judge in two phases, for `conflict_detector` (the `analysing_conflict_judge` concept of
  /// conflicts.hpp): `analyse(r)` reads a record's content once per run, and `judge_analysed`
  /// judges a pair from the two analyses, with the same verdict as `operator()` (which is
  /// `judge_analysed(a, na, analyse(a), b, nb, analyse(b), cos)`). A record is in several
  /// candidate pairs, so reading each text once saves the extractor's work on every other pair.
  template <class R>
  [[nodiscard]] claim_analysis analyse(const R& r) const {
    return read(field::content(r));
  }

  /// What `analyse` reads of a record: its content (records with one content have one
  /// analysis; the `keyed_analysing_conflict_judge` concept of conflict_judge.hpp).
  template <class R>
  [[nodiscard]] std::string_view analysis_key(const R& r) const {
    return field::content(r);
  }

  /// Judges one pair from analyses made by `analyse` of the same records (see there).
  template <class R>
  [[nodiscard]] conflict_verdict judge_analysed(const R& a, std::string_view norm_a,
                                                const claim_analysis& ca, const R& b,
                                                std::string_view norm_b, const claim_analysis& cb,
                                                float cosine) const {
    if (norm_a == norm_b) return {false, false, "identical_text"};
    conflict_verdict v = by_rules_analysed(a, norm_a, ca, b, norm_b, cb, cosine);
    if (model && (model->ask_all() || model_judge::left_open(v)))
      if (auto m = model->judge(field::content(a), field::content(b), v)) return std::move(*m);
    return v;
  }

  /// The rules' verdict alone (no model).
  template <class R>
  [[nodiscard]] conflict_verdict by_rules(const R& a, std::string_view norm_a, const R& b,
                                          std::string_view norm_b, float cosine) const {
    if (norm_a == norm_b) return {false, false, "identical_text"};
    return by_rules_analysed(a, norm_a, analyse(a), b, norm_b, analyse(b), cosine);
  }

  /// The rules' verdict alone (no model), from analyses made by `analyse`.
  template <class R>
  [[nodiscard]] conflict_verdict by_rules_analysed(const R& a, std::string_view norm_a,
                                                   const claim_analysis& ca, const R& b,
                                                   std::string_view norm_b,
                                                   const claim_analysis& cb, float cosine) const {
    if (norm_a == norm_b) return {false, false, "identical_text"};
    if (!ca.parsed() || !cb.parsed()) return fallback(a, norm_a, b, norm_b, cosine);
    if (!lexicon) return rules(ca, cb);
    claim_rules r = rules;
    r.lexicon = lexicon.get();
    return r(ca, cb);
  }

  /// What the judge reads from one text (the extractor, with `lexicon` when set).
  [[nodiscard]] claim_analysis read(std::string_view text) const {
    if constexpr (std::is_same_v<Extractor, default_claim_extractor>)
      if (lexicon) return default_claim_extractor{lexicon.get()}(text);
    return extractor(text);
  }
};

}  // namespace memhealth
