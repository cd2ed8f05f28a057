#pragma once
/// @file claim_words.hpp
/// The cue words the claim extractor (claims.hpp) reads, English and Chinese: negators, attitude
/// words of either polarity, aversions, change and termination markers, frequency degrees,
/// additive markers, time and scene qualifiers, single-valued attributes and holders.
///
/// Provenance: written by hand for memhealth (2026-12), not copied from any list; general English
/// lemmas, synonyms and antonyms come from WordNet instead (lexicon.hpp). Each entry is one word
/// or a short phrase in the form the extractor sees it: English lowercase, apostrophes removed
/// ("doesn't" -> "doesnt"); Chinese as written. A user extends the tables through
/// `claim_lexicon::add` (claims.hpp) or `claim_lexicon::load_tsv`.

#include <array>
#include <cstdint>
#include <string_view>
#include <utility>

namespace memhealth::claim_words {

/// What a cue word does to the clause it is in. Bits; a word may carry several.
enum cue : std::uint32_t {
  none = 0,
  negator = 1u << 0,       ///< not, never, no, 不, 没 ...: flips the clause's polarity
  change = 1u << 1,        ///< now, no longer, moved, switched, 现在, 不再, 换成 ...
  att_positive = 1u << 2,  ///< like, love, enjoy, 喜欢 ...: the attitude predicate, positive
  att_negative = 1u << 3,  ///< hate, dislike, 讨厌 ...: the attitude predicate, negative
  tolerate = 1u << 4,      ///< stand, bear, tolerate: negative attitude when negated
  aversion = 1u << 5,   ///< avoid, refuse, allergic, 避免, 拒绝: negative towards any predicate
  terminate = 1u << 6,  ///< quit, sold, gave up, 戒, 辞职: ends a state (negative + change)
  additive = 1u << 7,   ///< also, too, especially, 也, 还, 尤其
  time = 1u << 8,       ///< yesterday, last, ago, monday, 昨天, 上周 ...
  scene = 1u << 9,      ///< when, while, during, home, 时, 在家, 出差 ...
  stop = 1u << 10,      ///< function words left out of the terms
  event = 1u << 11,     ///< a past one-off event cue (yesterday, last night, ate, 吃了)
  restrictive = 1u << 12,  ///< a lasting restriction (vegetarian, allergic, sober, 素食, 过敏)
  evaluation_pos = 1u << 13,  ///< delicious, great, fun: "finds X great" = likes X
  evaluation_neg = 1u << 14,  ///< unbearable, awful: "finds X awful" = dislikes X
  relative = 1u << 15,        ///< brother, sister, friend, 妈妈 ...: a holder of its own
  prefer = 1u << 16,          ///< prefer: "prefers X over Y" = likes X, not Y
  comparative = 1u << 17,     ///< over, than, instead: splits the preferred from the rejected
  aux = 1u << 18,             ///< is, has, does, will ...: an auxiliary or the copula
  frequency = 1u << 19,       ///< a frequency degree (see `frequency_of`)
};

/// One cue word and its `cue` bits (a bitwise or of `cue` values).
using entry = std::pair<std::string_view, std::uint32_t>;

// ---------------------------------------------------------------- English

/// English cue words (lowercase, apostrophes removed).
inline constexpr auto english = std::to_array<entry>({
    // negators (contracted forms as the tokenizer leaves them)
    {"not", negator},
    {"no", negator},
    {"never", negator | frequency},
    {"nobody", negator},
    {"nothing", negator},
    {"none", negator},
    {"neither", negator},
    {"nor", negator},
    {"cannot", negator},
    {"noone", negator},
    {"without", negator},
    {"dont", negator},
    {"doesnt", negator},
    {"didnt", negator},
    {"isnt", negator},
    {"arent", negator},
    {"wasnt", negator},
    {"werent", negator},
    {"wont", negator},
    {"cant", negator},
    {"couldnt", negator},
    {"wouldnt", negator},
    {"shouldnt", negator},
    {"havent", negator},
    {"hasnt", negator},
    {"hadnt", negator},
    {"aint", negator},
    {"nowhere", negator},
    // change markers
    {"now", change},
    {"currently", change},
    {"nowadays", change},
    {"anymore", change | negator},
    {"lately", change},
    {"recently", change},
    {"switch", change},
    {"switched", change},
    {"move", change},
    {"moved", change},
    {"become", change},
    {"became", change},
    {"start", change},
    {"started", change},
    {"began", change},
    {"begin", change},
    {"convert", change},
    {"converted", change},
    {"replace", change},
    {"replaced", change},
    {"relocate", change},
    {"relocated", change},
    // attitudes
    {"like", att_positive},
    {"love", att_positive},
    {"enjoy", att_positive},
    {"adore", att_positive},
    {"fancy", att_positive},
    {"relish", att_positive},
    {"appreciate", att_positive},
    {"cherish", att_positive},
    {"crave", att_positive},
    {"savor", att_positive},
    {"savour", att_positive},
    {"prefer", att_positive | prefer},
    {"favor", att_positive | prefer},
    {"favour", att_positive | prefer},
    {"dislike", att_negative},
    {"hate", att_negative},
    {"detest", att_negative},
    {"loathe", att_negative},
    {"despise", att_negative},
    {"abhor", att_negative},
    {"resent", att_negative},
    {"dread", att_negative},
    {"fear", att_negative},
    {"welcome", att_positive},
    {"want", att_positive},
    {"interest", att_positive},
    {"trust", att_positive},
    {"distrust", att_negative},
    {"mistrust", att_negative},
    {"admire", att_positive},
    // (from WordNet 3.0: the troponyms of love.v.01 and dislike.v.01 / hate.v.01 that name an
    // attitude toward a thing, not a relation to a person: dote (on), revere, idolize, worship;
    // scorn, disdain, contemn, abominate, execrate)
    {"dote", att_positive},
    {"revere", att_positive},
    {"idolize", att_positive},
    {"idolise", att_positive},
    {"worship", att_positive},
    {"scorn", att_negative},
    {"disdain", att_negative},
    {"contemn", att_negative},
    {"abominate", att_negative},
    {"execrate", att_negative},
    {"treasure", att_positive},
    {"embrace", att_positive},
    // verbs that order two options ("values X above Y", "ranks X ahead of Y")
    {"value", prefer},
    {"rank", prefer},
    {"put", prefer},
    {"place", prefer},
    {"choose", prefer},
    {"pick", prefer},
    {"rate", prefer},
    {"stand", tolerate},
    {"bear", tolerate},
    {"tolerate", tolerate},
    {"abide", tolerate},
    {"stomach", tolerate},
    {"fan", evaluation_pos},
    {"fond", evaluation_pos},
    {"keen", evaluation_pos},
    {"passionate", evaluation_pos},
    {"crazy", evaluation_pos},
    {"obsessed", evaluation_pos},
    {"delicious", evaluation_pos},
    {"tasty", evaluation_pos},
    {"wonderful", evaluation_pos},
    {"amazing", evaluation_pos},
    {"enjoyable", evaluation_pos},
    {"fantastic", evaluation_pos},
    {"lover", evaluation_pos},
    {"fondness", evaluation_pos},
    {"preference", att_positive},
    {"passion", evaluation_pos},
    {"hooked", evaluation_pos},
    {"comfortable", evaluation_pos},
    {"enthusiast", evaluation_pos},
    {"devotee", evaluation_pos},
    {"interested", evaluation_pos},
    {"anxious", evaluation_neg},
    {"nervous", evaluation_neg},
    {"uneasy", evaluation_neg},
    {"uncomfortable", evaluation_neg},
    {"worried", evaluation_neg},
    {"relaxing", evaluation_pos},
    {"delightful", evaluation_pos},
    {"fun", evaluation_pos},
    {"calming", evaluation_pos},
    {"soothing", evaluation_pos},
    {"exciting", evaluation_pos},
    {"thrilling", evaluation_pos},
    {"rewarding", evaluation_pos},
    {"satisfying", evaluation_pos},
    {"refreshing", evaluation_pos},
    {"pleasant", evaluation_pos},
    {"addicted", evaluation_pos},
    {"enthusiastic", evaluation_pos},
    {"stressful", evaluation_neg},
    {"miserable", evaluation_neg},
    {"oppressive", evaluation_neg},
    {"stifling", evaluation_neg},
    {"chore", evaluation_neg},
    {"hassle", evaluation_neg},
    {"nightmare", evaluation_neg},
    {"tedious", evaluation_neg},
    {"dull", evaluation_neg},
    {"tiresome", evaluation_neg},
    {"exhausting", evaluation_neg},
    {"draining", evaluation_neg},
    {"overrated", evaluation_neg},
    {"pointless", evaluation_neg},
    {"frustrating", evaluation_neg},
    {"nauseating", evaluation_neg},
    {"sickly", evaluation_neg},
    {"unreliable", evaluation_neg},
    {"untrustworthy", evaluation_neg},
    {"reliable", evaluation_pos},
    {"trustworthy", evaluation_pos},
    {"unappealing", evaluation_neg},
    {"off-putting", evaluation_neg},
    {"unbearable", evaluation_neg},
    {"awful", evaluation_neg},
    {"disgusting", evaluation_neg},
    {"terrible", evaluation_neg},
    {"horrible", evaluation_neg},
    {"boring", evaluation_neg},
    {"gross", evaluation_neg},
    {"annoying", evaluation_neg},
    {"dreadful", evaluation_neg},
    {"unpleasant", evaluation_neg},
    {"intolerable", evaluation_neg},
    {"repulsive", evaluation_neg},
    {"revolting", evaluation_neg},
    {"grating", evaluation_neg},
    {"irritating", evaluation_neg},
    {"jarring", evaluation_neg},
    {"tiring", evaluation_neg},
    {"depressing", evaluation_neg},
    {"dreary", evaluation_neg},
    {"wearisome", evaluation_neg},
    {"energizing", evaluation_pos},
    {"energising", evaluation_pos},
    {"inspiring", evaluation_pos},
    // (more judgements of liking or disliking a thing: "finds X insufferable", "thinks X is
    // great", "finds the app clunky")
    {"insufferable", evaluation_neg},
    {"great", evaluation_pos},
    {"bored", evaluation_neg},
    {"clunky", evaluation_neg},
    {"confusing", evaluation_neg},
    {"intuitive", evaluation_pos},
    {"user-friendly", evaluation_pos},
    // aversions: negative towards the object whatever the verb
    {"avoid", aversion},
    {"refuse", aversion},
    {"shun", aversion},
    {"eschew", aversion},
    {"abstain", aversion},
    {"allergy", aversion | restrictive},
    {"allergic", aversion | restrictive},
    {"intolerant", aversion | restrictive},
    {"averse", aversion},
    {"aversion", aversion},
    {"distaste", aversion},
    {"phobia", aversion | restrictive},
    {"wary", aversion},
    {"reluctant", aversion},
    {"afraid", aversion},
    {"scared", aversion},
    {"terrified", aversion},
    // terminations: the state named by the object ended
    // (from WordNet 3.0, the members of discontinue.v.01 {discontinue, stop, cease, give_up,
    // quit, lay_off} "put an end to a state or an activity", resign.v.01 {vacate, resign,
    // renounce, give_up}, the synset {release, relinquish, resign, free, give_up} "part with
    // a possession or right", forfeit.v.01 {forgo, forego}, foreswear.v.01 {foreswear, renounce,
    // quit, relinquish}; multiword ones are read in claims_english.hpp)
    {"discontinue", terminate},
    {"cease", terminate},
    {"relinquish", terminate},
    {"renounce", terminate},
    {"forgo", terminate},
    {"forego", terminate},
    {"foreswear", terminate},
    {"forswear", terminate},
    {"vacate", terminate},
    {"quit", terminate},
    {"sell", terminate},
    {"sold", terminate},
    {"stop", terminate},
    {"stopped", terminate},
    {"drop", terminate},
    {"dropped", terminate},
    {"cancel", terminate},
    {"cancelled", terminate},
    {"canceled", terminate},
    {"abandon", terminate},
    {"abandoned", terminate},
    {"ditch", terminate},
    {"ditched", terminate},
    // removing software or a subscription ends its use (words WordNet 3.0 does not list)
    {"uninstall", terminate},
    {"uninstalled", terminate},
    {"unsubscribe", terminate},
    {"unsubscribed", terminate},
    {"resign", terminate},
    {"resigned", terminate},
    {"retire", terminate},
    {"graduate", terminate},
    {"graduated", terminate},
    {"retired", terminate},
    {"rehome", terminate},
    {"rehomed", terminate},
    {"rehomes", terminate},
    {"leave", terminate},
    {"left", terminate},
    // additive
    {"also", additive},
    {"too", additive},
    {"especially", additive},
    {"particularly", additive},
    {"additionally", additive},
    {"even", additive},
    // time qualifiers
    {"yesterday", time | event},
    {"today", time | event},
    {"tonight", time | event},
    {"tomorrow", time},
    {"ago", time | event},
    {"last", time},
    {"next", time},
    {"monday", time},
    {"tuesday", time},
    {"wednesday", time},
    {"thursday", time},
    {"friday", time},
    {"saturday", time},
    {"sunday", time},
    {"january", time},
    {"february", time},
    {"march", time},
    {"april", time},
    {"may", time},
    {"june", time},
    {"july", time},
    {"august", time},
    {"september", time},
    {"october", time},
    {"november", time},
    {"december", time},
    {"am", time},
    {"pm", time},
    {"earlier", time},
    {"spring", time},
    {"jan", time},
    {"feb", time},
    {"apr", time},
    {"jun", time},
    {"jul", time},
    {"aug", time},
    {"sept", time},
    {"oct", time},
    {"nov", time},
    {"summer", time},
    {"autumn", time},
    {"winter", time},
    // scene qualifiers (start a scene phrase)
    {"when", scene},
    {"while", scene},
    {"whenever", scene},
    {"during", scene},
    // restrictive states
    {"vegetarian", restrictive},
    {"vegan", restrictive},
    {"sober", restrictive},
    {"kosher", restrictive},
    {"halal", restrictive},
    {"diet", restrictive},
    {"teetotal", restrictive},
    {"teetotaler", restrictive},
    // past-event verbs
    {"ate", event},
    {"drank", event},
    {"had", event},
    {"went", event},
    {"bought", event},
    {"ordered", event},
    {"tried", event},
    {"visited", event},
    // auxiliaries and the copula
    {"is", aux},
    {"am", aux | time},
    {"are", aux},
    {"was", aux},
    {"were", aux},
    {"be", aux},
    {"been", aux},
    {"being", aux},
    {"do", aux},
    {"does", aux},
    {"did", aux},
    {"has", aux},
    {"have", aux},
    {"will", aux},
    {"would", aux},
    {"can", aux},
    {"could", aux},
    {"should", aux},
    {"shall", aux},
    {"might", aux},
    {"must", aux},
    {"s", aux},
    {"m", aux},
    {"re", aux},
    {"ve", aux},
    {"ll", aux},
    {"d", aux},
    {"get", aux},
    {"gets", aux},
    // comparatives of a preference
    {"over", comparative},
    {"than", comparative},
    {"instead", comparative},
    // relatives and acquaintances
    {"brother", relative},
    {"sister", relative},
    {"wife", relative},
    {"husband", relative},
    {"friend", relative},
    {"mom", relative},
    {"mum", relative},
    {"mother", relative},
    {"dad", relative},
    {"father", relative},
    {"son", relative},
    {"daughter", relative},
    {"colleague", relative},
    {"coworker", relative},
    {"boss", relative},
    {"partner", relative},
    {"boyfriend", relative},
    {"girlfriend", relative},
    {"kid", relative},
    {"kids", relative},
    {"child", relative},
    {"children", relative},
    {"parents", relative},
    {"roommate", relative},
    {"neighbor", relative},
    {"neighbour", relative},
    {"cousin", relative},
    {"uncle", relative},
    {"aunt", relative},
    {"grandma", relative},
    {"grandpa", relative},
    {"grandmother", relative},
    {"grandfather", relative},
    {"fiance", relative},
    {"fiancee", relative},
    {"spouse", relative},
    {"nephew", relative},
    {"niece", relative},
    {"manager", relative},
    {"team", relative},
    // stop words
    {"a", stop},
    {"an", stop},
    {"the", stop},
    {"to", stop},
    {"of", stop},
    {"in", stop},
    {"on", stop},
    {"at", stop},
    {"and", stop},
    {"or", stop},
    {"for", stop},
    {"with", stop},
    {"there", stop},
    {"it", stop},
    {"its", stop},
    {"this", stop | time},
    {"that", stop},
    {"these", stop},
    {"those", stop},
    {"very", stop},
    {"really", stop},
    {"quite", stop},
    {"yet", stop},  // ("can't swim yet": not now)
    // (more adverbs of degree that say how much, not what: "is extremely frugal")
    {"extremely", stop},
    {"incredibly", stop},
    {"super", stop},
    {"just", stop},
    {"so", stop},
    {"about", stop},
    {"around", stop},
    // prepositions of a path are function words, not what a statement is about ("is not
    // running towards a ball" denies running and the ball)
    {"toward", stop},
    {"towards", stop},
    {"through", stop},
    {"across", stop},
    {"along", stop},
    {"some", stop},
    // determiners of an unstated number name no content ("Several children are ...")
    {"several", stop},
    {"various", stop},
    {"numerous", stop},
    {"multiple", stop},
    {"any", stop},
    {"much", stop},
    {"by", stop},
    {"from", stop},
    {"into", stop},
    {"onto", stop},
    {"up", stop},
    {"down", stop},
    {"out", stop},
    {"off", stop},
    {"as", stop},
    {"their", stop},
    {"his", stop},
    {"her", stop},
    {"them", stop},
    {"they", stop},
    {"he", stop},
    {"she", stop},
    {"we", stop},
    {"i", stop},
    {"me", stop},
    {"my", stop},
    {"our", stop},
    {"your", stop},
    {"you", stop},
    {"own", stop},
    {"still", stop},
    {"only", stop},
    {"all", stop},
    {"user", stop},
    {"users", stop},
    {"which", stop},
    {"who", stop},
    {"whose", stop},
    {"one", stop},
    {"someone", stop},
    {"somebody", stop},
    {"something", stop},
    {"being", stop},
    {"after", stop},
    {"because", stop},
    {"since", stop},
    {"until", stop},
    {"though", stop},
    {"if", stop},
    {"mondays", time},
    {"tuesdays", time},
    {"wednesdays", time},
    {"thursdays", time},
    {"fridays", time},
    {"saturdays", time},
    {"sundays", time},
    {"lot", stop},
    {"lots", stop},
    {"bit", stop},
    {"usually", frequency},
    {"always", frequency},
    {"often", frequency},
    {"sometimes", frequency},
    {"rarely", frequency},
    {"seldom", frequency},
    {"hardly", frequency},
    {"barely", frequency},
    {"occasionally", frequency},
    // (the adjectives of these adverbs before a noun: "has the occasional cigarette", "a
    // frequent flyer"; WordNet 3.0 occasional.a.01, frequent.a.01)
    {"occasional", frequency},
    {"frequent", frequency},
    {"frequently", frequency},
    {"regularly", frequency},
    {"daily", frequency},
    {"constantly", frequency},
    {"mostly", frequency},
    {"generally", frequency},
    {"normally", frequency},
    {"typically", frequency},
    {"nightly", frequency},
    {"weekly", frequency},
    {"monthly", frequency},
    {"once", frequency},
    {"twice", frequency},
});

/// How often an English frequency word says something happens, in times per day: never 0,
/// rarely 1/30, sometimes 0.15, often 0.4, usually 0.7, daily 1, always 1.5, constantly 10;
/// -1 = not a frequency word. The values are a scale for comparing two statements, not
/// measurements: the judge calls frequencies 3x apart or more incompatible.
constexpr double frequency_of(std::string_view w) noexcept {
  if (w == "never") return 0;
  if (w == "rarely" || w == "seldom" || w == "hardly" || w == "barely") return 1.0 / 30;
  if (w == "monthly") return 1.0 / 30;
  if (w == "sometimes" || w == "occasionally" || w == "occasional") return 0.15;
  if (w == "once" || w == "twice") return 0.15;
  if (w == "weekly") return 1.0 / 7;
  if (w == "often" || w == "frequently" || w == "regularly" || w == "frequent") return 0.4;
  if (w == "usually" || w == "mostly" || w == "generally" || w == "normally" || w == "typically")
    return 0.7;
  if (w == "daily" || w == "nightly") return 1;
  if (w == "always") return 1.5;
  if (w == "constantly") return 10;
  return -1;
}

/// English words that, right after the holder's possessive and before "is", name a
/// single-valued attribute even without the possessive pattern ("User is 34 years old").
/// Phrase cues: a verb (lemma) and the preposition after it, mapped to the attribute.
struct attribute_cue {
  std::string_view verb;       ///< lemma ("live")
  std::string_view prep;       ///< the next word ("in"), or "" for none
  std::string_view attribute;  ///< the single-valued attribute it names ("residence")
  bool change;                 ///< the cue states a change ("moved to")
};
/// English attribute cues: the phrases that name a single-valued attribute ("lives in", "works
/// at").
inline constexpr auto english_attributes = std::to_array<attribute_cue>({
    {"live", "in", "residence", false},   {"live", "at", "residence", false},
    {"reside", "in", "residence", false}, {"base", "in", "residence", false},
    {"move", "to", "residence", true},    {"relocate", "to", "residence", true},
    {"grow", "up", "hometown", false},    {"raise", "in", "hometown", false},
    {"work", "at", "employer", false},    {"work", "for", "employer", false},
    {"employ", "by", "employer", false},  {"employ", "at", "employer", false},
    {"join", "", "employer", true},       {"work", "as", "occupation", false},
    {"report", "to", "manager", false},   {"bear", "on", "birthday", false},
    {"bear", "in", "birthplace", false},  {"call", "", "name", false},
    {"go", "by", "name", false},          {"name", "", "name", false},
    {"marry", "to", "spouse", false},     {"engage", "to", "spouse", false},
});
/// Attribute names that mean one attribute, mapped to its canonical name.
inline constexpr auto attribute_aliases =
    std::to_array<std::pair<std::string_view, std::string_view>>({
        {"mother tongue", "native language"},
        {"first language", "native language"},
        {"home town", "hometown"},
        {"birth date", "birthday"},
        {"date of birth", "birthday"},
        {"dob", "birthday"},
        {"favorite", "favourite"},
        {"surname", "last name"},
        {"family name", "last name"},
        {"given name", "first name"},
        {"boss", "manager"},
        {"line manager", "manager"},
        {"employer", "employer"},
        {"company", "employer"},
        {"workplace", "employer"},
        {"job", "occupation"},
        {"profession", "occupation"},
        {"partner", "spouse"},
        {"husband", "spouse"},
        {"wife", "spouse"},
        {"city", "residence"},
        {"address", "residence"},
        {"home", "residence"},
    });

/// Nouns for the contract, card or pass through which a holder uses a thing (English lemmas and
/// Chinese characters). A termination of one ends the use of the thing: "cancelled the gym
/// membership" / "goes to the gym", "退了健身卡" / "在健身房锻炼".
inline constexpr auto service_nouns = std::to_array<std::string_view>(
    {"subscription", "membership", "account", "contract", "plan",    "pass",    "card",
     "lesson",       "class",      "course",  "policy",   "licence", "license", "job",
     "position",     "post",       "卡",      "课",       "会员",    "工作"});

/// What a lasting restriction excludes: "is vegetarian" denies eating meat, fish and poultry
/// (and, through WordNet is-a, beef, salmon ...). English lemmas; Chinese characters.
struct restriction {
  std::string_view word;                     ///< the restriction as read ("vegetarian", "素食")
  std::array<std::string_view, 8> excludes;  ///< what it denies ("" fills the rest)
};
/// Diet and lifestyle restrictions and the kinds of object each denies ("vegetarian": meat ...).
inline constexpr auto restrictions = std::to_array<restriction>({
    {"vegetarian", {"meat", "fish", "poultry", "seafood", "steak", "bacon", "ham", "sausage"}},
    {"vegan", {"meat", "fish", "poultry", "seafood", "dairy", "cheese", "egg", "milk"}},
    {"pescatarian", {"meat", "poultry", "steak", "bacon", "ham", "sausage", "", ""}},
    {"teetotal", {"alcohol", "beer", "wine", "liquor", "whisky", "vodka", "cocktail", ""}},
    {"teetotaler", {"alcohol", "beer", "wine", "liquor", "whisky", "vodka", "cocktail", ""}},
    {"sober", {"alcohol", "beer", "wine", "liquor", "whisky", "vodka", "cocktail", ""}},
    {"halal", {"pork", "bacon", "ham", "alcohol", "", "", "", ""}},
    {"kosher", {"pork", "bacon", "ham", "shellfish", "", "", "", ""}},
    {"素食", {"肉", "鱼", "虾", "", "", "", "", ""}},
    {"清真", {"猪", "酒", "", "", "", "", "", ""}},
});

/// Common occupations (English lemmas): "is a nurse" states the occupation, one value at a time
/// ("is a nurse" / "is an accountant").
/// A scale of degree: words for its high end and its low end, English lemmas as the reader
/// keeps them or Chinese words (matched by their characters). Two statements about one thing,
/// one at each end, conflict ("speaks fluent French" / "knows a few words of French", "only
/// tolerates mild curry" / "orders the hottest curry", "英语很流利" / "英语只会几句").
struct degree_scale {
  std::string_view name;
  std::array<std::string_view, 10> high;  ///< "" fills the rest
  std::array<std::string_view, 10> low;
};
/// Ordered degree scales (proficiency, spiciness, punctuality): a high word against a low word
/// of one scale is a degree conflict.
inline constexpr auto degree_scales = std::to_array<degree_scale>({
    {"proficiency",
     {"fluent", "native", "bilingual", "proficient", "advanced", "flawless", "fluently", "流利",
      "精通", "地道"},
     {"basic", "beginner", "rudimentary", "few", "broken", "elementary", "几句", "基础", "入门",
      "皮毛"}},
    {"spiciness",
     {"hot", "spicy", "fiery", "extra-hot", "scorching", "特辣", "重辣", "变态辣", "", ""},
     {"mild", "bland", "微辣", "不辣", "清淡", "", "", "", "", ""}},
    {"punctuality",
     {"early", "punctual", "prompt", "", "", "", "", "", "", ""},
     {"late", "tardy", "迟到", "", "", "", "", "", "", ""}},
});

/// English nouns and adjectives of a religion or its absence, one at a time ("is a practising
/// Catholic" / "is a practising Muslim"): the attribute "religion".
inline constexpr auto english_religions = std::to_array<std::string_view>({
    "catholic", "protestant", "christian", "muslim",    "jewish", "jew",      "hindu",
    "buddhist", "sikh",       "atheist",   "agnostic",  "mormon", "orthodox", "jain",
    "anglican", "baptist",    "lutheran",  "methodist", "quaker", "taoist",   "shinto",
});

/// English occupation nouns ("is a nurse" reads as the single-valued attribute occupation).
inline constexpr auto english_occupations = std::to_array<std::string_view>({
    "accountant", "actor",      "architect",     "artist",      "baker",        "banker",
    "barista",    "bartender",  "carpenter",     "cashier",     "chef",         "cleaner",
    "consultant", "cook",       "dentist",       "designer",    "developer",    "doctor",
    "driver",     "economist",  "electrician",   "engineer",    "farmer",       "firefighter",
    "journalist", "judge",      "lawyer",        "librarian",   "mechanic",     "musician",
    "nurse",      "pharmacist", "photographer",  "physician",   "physicist",    "pilot",
    "plumber",    "policeman",  "professor",     "programmer",  "psychologist", "receptionist",
    "researcher", "salesman",   "scientist",     "secretary",   "soldier",      "surgeon",
    "tailor",     "teacher",    "therapist",     "translator",  "vet",          "veterinarian",
    "waiter",     "waitress",   "writer",        "student",     "retiree",      "freelancer",
    "paramedic",  "midwife",    "optician",      "analyst",     "officer",      "clerk",
    "auditor",    "manager",    "administrator", "coordinator", "technician",   "intern",
});

/// Common occupations in Chinese: "是医生" states the occupation.
inline constexpr auto chinese_occupations = std::to_array<std::string_view>({
    "医生",   "护士",   "老师",   "教师",   "律师",       "会计",   "程序员", "工程师",
    "设计师", "厨师",   "司机",   "警察",   "记者",       "作家",   "演员",   "歌手",
    "教授",   "学生",   "研究生", "博士生", "农民",       "公务员", "销售",   "翻译",
    "摄影师", "建筑师", "飞行员", "军人",   "牙医",       "兽医",   "药剂师", "快递员",
    "服务员", "会计师", "编辑",   "画家",   "自由职业者", "退休",
});

/// Verbs of eating, drinking or liking (lemmas, "like" for every attitude): what a diet
/// restriction ("is vegetarian") can deny.
inline constexpr auto consumption_verbs = std::to_array<std::string_view>(
    {"eat", "drink", "have", "consume", "order", "try", "taste", "snack", "like", "crave", "munch",
     "devour", "sip", "grab", "get", "take", "live"});

/// Verbs by which one takes in a thing one likes or dislikes (lemmas; Chinese verbs as the
/// reader keeps them, one term per character): eating, drinking, watching, hearing, reading,
/// smelling. General rule (claim_judge.hpp, opposite attitudes): an attitude toward taking in a
/// thing is an attitude toward the thing, so "can't bear watching horror movies" denies
/// "adores horror films" and "讨厌吃榴莲" denies "对榴莲情有独钟". The English verbs are the
/// WordNet 3.0 verb synsets eat.v.01, drink.v.01, watch.v.01 (and its troponym view), listen.v.01,
/// hear.v.01, read.v.01, taste.v.01, smell.v.01; the Chinese ones were written for the project.
inline constexpr auto engagement_verbs =
    std::to_array<std::string_view>({"eat", "drink", "watch", "view", "listen", "hear", "read",
                                     "taste", "smell", "吃", "喝", "看", "听", "读", "闻"});

/// Nouns of a sensory aspect of a thing ("the taste of durian", "the smell of coffee", 味道):
/// under an attitude they stand for the thing itself. The English nouns are members of the
/// WordNet 3.0 synsets under perceptual experience / sensation and property that name how a
/// thing tastes, smells, sounds, looks or feels (taste.n.01, flavor.n.01, smell.n.01,
/// odor.n.01, scent.n.01, texture.n.01, sound.n.04, look.n.02). (Chinese 味道 is two terms of
/// the reader, 道 also in 知道: not listed.)
inline constexpr auto aspect_nouns =
    std::to_array<std::string_view>({"taste", "flavour", "flavor", "smell", "odour", "odor",
                                     "scent", "texture", "sound", "look", "aftertaste"});

/// Nouns of a bad outcome ("without any reaction", "with no trouble"): a phrase of one of these
/// after the predicate says how it went, it neither negates nor adds to the claim. Written for
/// the project from the WordNet 3.0 synsets trouble.n.01 ("a source of difficulty"),
/// problem.n.01, difficulty.n.02, reaction.n.02, side_effect.n.01, discomfort.n.01, symptom.n.01
/// (the singular and plural forms the tokenizer leaves).
inline constexpr auto trouble_nouns = std::to_array<std::string_view>(
    {"reaction", "reactions", "trouble", "troubles", "problem", "problems", "issue", "issues",
     "difficulty", "difficulties", "effects", "effect", "discomfort", "symptom", "symptoms",
     "complaint", "complaints"});

/// Places one lives in: "moved to the countryside" is a new residence, "moved to a new desk" is
/// not (a name, capitalised, is one too: "moved to Leeds").
inline constexpr auto dwelling_nouns = std::to_array<std::string_view>(
    {"house",        "flat",        "apartment", "home",   "place",   "city",  "town",
     "village",      "countryside", "suburb",    "abroad", "coast",   "area",  "neighbourhood",
     "neighborhood", "country",     "state",     "island", "capital", "condo", "studio",
     "bungalow",     "cottage",     "farm",      "centre", "center"});

/// Nouns of a measure ("a glass of wine", "a bottle of wine"): no part of what is measured.
inline constexpr auto measure_nouns = std::to_array<std::string_view>(
    {"glass",   "bottle",  "cup", "mug",      "pint",   "can",  "piece", "slice", "bowl", "plate",
     "portion", "serving", "bit", "spoonful", "packet", "pack", "box",   "bar",   "shot", "round"});

/// Verbs that say little by themselves ("has a glass of wine", "takes the stairs", "gets
/// through a bottle"): two statements about one object with one of these compare by the object.
inline constexpr auto light_verbs =
    std::to_array<std::string_view>({"have", "get", "take", "do", "make", "go", "consume", "grab",
                                     // "manages one book a year" (WordNet manage.v.02
                                     // "be successful; achieve a goal")
                                     "manage"});

/// English antonyms of traits and habits that WordNet does not pair (added to the lexicon's
/// antonyms): "is shy" / "is outgoing".
inline constexpr auto english_antonyms =
    std::to_array<std::pair<std::string_view, std::string_view>>({
        {"shy", "outgoing"},
        {"introverted", "extroverted"},
        {"introverted", "outgoing"},
        {"reserved", "outgoing"},
        {"lazy", "hardworking"},
        {"lazy", "diligent"},
        {"frugal", "extravagant"},
        {"stingy", "generous"},
        {"calm", "anxious"},
        {"calm", "nervous"},
        {"relaxed", "stressed"},
        {"talkative", "quiet"},
        {"chatty", "quiet"},
        {"cautious", "reckless"},
        {"confident", "insecure"},
        {"easygoing", "uptight"},
        {"fit", "unfit"},
        {"organised", "disorganised"},
        {"tidy", "untidy"},
        {"neat", "messy"},
        {"sporty", "unathletic"},
        {"punctual", "unpunctual"},
        {"sociable", "antisocial"},
        {"optimist", "pessimist"},
        {"early", "late"},
        {"spontaneous", "cautious"},
    });

/// Nouns that open a subjectless attribute statement ("Name is John", "Favourite colour is
/// blue", "Hometown is Lyon"): the user's attribute.
inline constexpr auto attribute_heads = std::to_array<std::string_view>(
    {"name",    "favourite", "favorite",   "age",    "birthday", "hometown", "nationality",
     "height",  "weight",    "occupation", "job",    "employer", "email",    "nickname",
     "surname", "native",    "first",      "last",   "blood",    "partner",  "spouse",
     "wife",    "husband",   "religion",   "address"});

/// Kinship kinds WordNet does not reach in two steps (added as is-a pairs): "has a twin
/// brother" asserts a sibling, so "has no siblings" denies it.
inline constexpr auto kinship_is_a = std::to_array<std::pair<std::string_view, std::string_view>>({
    {"brother", "sibling"},
    {"sister", "sibling"},
    {"twin", "sibling"},
    {"son", "child"},
    {"daughter", "child"},
    {"kid", "child"},
    {"mother", "parent"},
    {"father", "parent"},
    {"mom", "parent"},
    {"mum", "parent"},
    {"dad", "parent"},
    {"husband", "spouse"},
    {"wife", "spouse"},
    {"grandson", "grandchild"},
    {"granddaughter", "grandchild"},
    {"dog", "pet"},
    {"cat", "pet"},
    {"hamster", "pet"},
    {"rabbit", "pet"},
    {"parrot", "pet"},
    {"goldfish", "pet"},
});

/// Online services of a kind WordNet does not list (added as is-a pairs, written for memhealth
/// 2026-12): "is on Instagram" asserts a social media account, so "isn't on any social media"
/// denies it. Lowercase service names; the kind is a multiword noun spelt in the lemmas the
/// claim reader keeps ("social media" -> "social medium", "streaming service" -> "stream
/// service").
inline constexpr auto service_is_a = std::to_array<std::pair<std::string_view, std::string_view>>({
    {"instagram", "social medium"},
    {"facebook", "social medium"},
    {"tiktok", "social medium"},
    {"twitter", "social medium"},
    {"snapchat", "social medium"},
    {"linkedin", "social medium"},
    {"reddit", "social medium"},
    {"pinterest", "social medium"},
    {"mastodon", "social medium"},
    {"threads", "social medium"},
    {"weibo", "social medium"},
    {"netflix", "stream service"},
    {"spotify", "stream service"},
    {"hulu", "stream service"},
});

/// Foods and drinks by a kind or an ingredient a restriction names, and devices by brand, where
/// WordNet does not reach them (added as is-a pairs, written for memhealth 2026-12): "is lactose
/// intolerant" denies milk and cheese, "is allergic to shellfish" denies shrimp, "is a
/// teetotaler" denies an IPA, "switched to an iPhone" replaces an Android phone.
/// English lemmas as the claim reader keeps them.
inline constexpr auto food_is_a = std::to_array<std::pair<std::string_view, std::string_view>>({
    {"milk", "lactose"},
    {"cheese", "lactose"},
    {"yogurt", "lactose"},
    {"yoghurt", "lactose"},
    {"cream", "lactose"},
    {"butter", "lactose"},
    {"milk", "dairy"},
    {"cheese", "dairy"},
    {"yogurt", "dairy"},
    {"yoghurt", "dairy"},
    {"butter", "dairy"},
    {"cream", "dairy"},
    {"latte", "milk"},
    {"cappuccino", "milk"},
    {"milkshake", "milk"},
    {"bread", "gluten"},
    {"pasta", "gluten"},
    {"wheat", "gluten"},
    {"bagel", "gluten"},
    {"noodle", "gluten"},
    {"pizza", "gluten"},
    {"shrimp", "shellfish"},
    {"prawn", "shellfish"},
    {"crab", "shellfish"},
    {"oyster", "shellfish"},
    {"mussel", "shellfish"},
    {"clam", "shellfish"},
    {"scallop", "shellfish"},
    {"ipa", "beer"},
    {"prosecco", "wine"},
    {"champagne", "wine"},
    {"cashew", "tree nut"},
    {"almond", "tree nut"},
    {"walnut", "tree nut"},
    {"pecan", "tree nut"},
    {"pistachio", "tree nut"},
    {"hazelnut", "tree nut"},
    // devices by brand or system: "switched to an iPhone" / "uses an Android phone"
    {"iphone", "smartphone"},
    {"android", "smartphone"},
    {"pixel", "smartphone"},
    {"galaxy", "smartphone"},
    {"macbook", "laptop"},
    {"thinkpad", "laptop"},
    {"chromebook", "laptop"},
});

/// Plants a milk is made of ("oat milk", "soy milk"): such a milk holds no dairy and no lactose.
inline constexpr auto plant_milks = std::to_array<std::string_view>(
    {"oat", "soy", "soya", "almond", "rice", "coconut", "cashew", "hemp", "pea", "plant"});

/// Words that name one thing in memory statements though WordNet keeps them apart (added as
/// synonyms, written for memhealth 2026-12): "loves Sichuan food" / "loathes Sichuan cuisine".
inline constexpr auto english_synonyms =
    std::to_array<std::pair<std::string_view, std::string_view>>({
        {"food", "cuisine"},
        {"cooking", "cuisine"},
        {"dish", "cuisine"},
        {"show", "series"},
    });

/// Values of marital status (a copula followed by one of them states it).
inline constexpr auto english_marital =
    std::to_array<std::string_view>({"married", "single", "divorced", "widowed", "engaged",
                                     "separated", "widow", "widower", "partnered"});

// ---------------------------------------------------------------- Chinese

/// Chinese cue words, longest match first at each position (up to 4 characters).
inline constexpr auto chinese = std::to_array<entry>({
    {"不", negator},
    {"没", negator},
    {"没有", negator},
    {"别", negator},
    {"未", negator},
    {"无", negator},
    {"非", negator},
    // (并 "actually" before a negator only stresses it: "并非素食者", "并不喜欢")
    {"并非", negator},
    {"并不", negator},
    {"并没有", negator},
    {"并没", negator},
    {"从不", negator | frequency},
    {"从来不", negator | frequency},
    {"从没", negator | frequency},
    {"从来没", negator | frequency},
    {"几乎不", frequency},
    {"几乎从不", frequency},
    {"几乎从来不", frequency},
    // a hedge before a negator is "almost never", as 几乎不 (基本 "basically", 基本上)
    {"基本不", frequency},
    {"基本上不", frequency},
    {"基本没", frequency},
    {"基本上没", frequency},
    {"不再", negator | change},
    {"不太", negator},
    {"能", aux},
    {"可以", aux},
    {"失业", terminate},
    {"待业", terminate},
    {"退休", terminate},
    {"再也不", negator | change},
    {"已经不", negator | change},
    {"早就不", negator | change},
    {"现在", change},
    {"如今", change},
    {"目前", change},
    {"最近", change},
    {"已经", change},
    {"开始", change},
    {"换成", change},
    {"改成", change},
    {"改为", change},
    {"换了", change},
    {"搬到", change},
    {"搬去", change},
    {"转到", change},
    {"喜欢", att_positive},
    {"喜爱", att_positive},
    {"热爱", att_positive},
    {"爱", att_positive},
    {"偏爱", att_positive | prefer},
    {"钟爱", att_positive},
    {"享受", att_positive},
    {"迷恋", att_positive},
    {"着迷", att_positive},
    {"迷上", att_positive | change},
    {"爱上", att_positive | change},
    {"喜欢上", att_positive | change},
    {"离不开", att_positive},
    {"烦透", att_negative},
    {"烦死", att_negative},
    {"头疼", att_negative},
    {"头痛", att_negative},
    {"几乎", stop},
    {"差不多", stop},
    {"大概", stop},
    {"可能", stop},
    {"连", stop},
    {"痴迷", att_positive},
    {"更喜欢", att_positive | prefer},
    {"宁愿", att_positive | prefer},
    {"宁可", att_positive | prefer},
    {"更愿意", att_positive | prefer},
    // the first choice among options ("首选红茶", "优先考虑工作"): the preferred option of an
    // order whose other options follow ("其次才是绿茶")
    {"首选", att_positive | prefer},
    {"优先考虑", att_positive | prefer},
    // ordering verbs, as English "value" ("看重拍照多于续航": values the camera above the battery)
    {"看重", prefer},
    {"重视", prefer},
    {"最爱", att_positive},
    {"爱好", att_positive},
    {"讨厌", att_negative},
    {"厌恶", att_negative},
    {"反感", att_negative},
    {"憎恨", att_negative},
    {"受不了", att_negative},
    // (appreciating a person or thing, and its opposite: "很欣赏现在的领导" / "很看不惯现在的领导")
    {"欣赏", att_positive},
    {"看不惯", att_negative},
    // (finding a thing dull or interesting: "觉得跑步很无聊" dislikes running, "觉得跑步很有意思"
    // likes it; 无聊 is no denial of 聊)
    {"无聊", att_negative},
    {"有意思", att_positive},
    {"有趣", att_positive},
    {"恨", att_negative},
    {"烦", att_negative},
    {"嫌弃", att_negative},
    {"嫌", att_negative},  // "嫌京剧太吵": finds it too noisy, a dislike
    {"反胃", att_negative},
    {"热衷", att_positive},
    {"避免", aversion},
    {"拒绝", aversion},
    {"忌口", aversion},
    {"忌", aversion},
    {"远离", aversion},
    {"避开", aversion},
    {"过敏", aversion | restrictive},
    {"怕", aversion},
    {"害怕", aversion},
    {"最怕", aversion},
    {"恐惧", aversion},
    {"最讨厌", att_negative},
    {"早就", change},
    {"小时", stop},
    {"任何", stop},
    {"名下", stop},
    {"左右", stop},
    {"直属", stop},
    {"顶头", stop},
    {"够", stop},
    {"不碰", aversion},
    {"戒了", terminate},
    {"戒掉", terminate},
    {"戒", terminate},
    {"辞职", terminate},
    {"辞去", terminate},
    {"辞掉", terminate},
    {"辞了", terminate},  // (把工作辞了)
    {"离职", terminate},
    {"退出", terminate},
    {"退了", terminate},
    {"卖了", terminate},
    {"卖掉", terminate},
    {"送人", terminate},
    {"送给", terminate},
    {"卖给", terminate},
    {"转给", terminate},
    // handing a thing on to someone else ends having it, as 卖掉 and 送人 do: 转让 "transfer",
    // 转手 "pass on", 出让 "sell off", 出售 "sell", 捐了 / 捐掉 "donated", 扔了 / 扔掉 "threw
    // away" (the Chinese counterparts of the English sell / give away / get rid of)
    {"转让", terminate},
    {"转手", terminate},
    {"出让", terminate},
    {"出售", terminate},
    {"捐了", terminate},
    {"捐掉", terminate},
    {"扔了", terminate},
    {"扔掉", terminate},
    {"完全", stop},
    {"根本", stop},
    {"压根", stop},
    {"一点也", stop},
    {"分手", terminate},
    {"停了", terminate},
    {"放弃", terminate},
    {"取消", terminate},
    {"离开", terminate},
    {"退掉", terminate},
    {"也", additive},
    {"还", additive},
    {"尤其", additive},
    {"特别是", additive},
    {"另外", additive},
    {"昨天", time | event},
    {"昨晚", time | event},
    {"今天", time | event},
    {"刚才", time | event},
    {"上周", time},
    {"上个月", time},
    {"去年", time},
    {"前年", time},
    {"明年", time},
    {"今年", time},
    {"明天", time},
    {"下周", time},
    {"前天", time | event},
    {"周一", time},
    {"周二", time},
    {"周三", time},
    {"周四", time},
    {"周五", time},
    {"周六", time},
    {"周日", time},
    {"星期", time},
    {"时", scene},
    {"的时候", scene},
    {"时候", scene},
    {"在家", scene},
    {"出差", scene},
    {"周末", scene},
    {"工作日", scene},
    {"节假日", scene},
    {"假期", scene},
    {"过年", scene},
    {"早上", scene},
    {"晚上", scene},
    {"白天", scene},
    {"夜里", scene},
    {"平时", scene},
    {"上班时", scene},
    {"应酬", scene},
    {"聚会", scene},
    {"素食", restrictive},
    {"吃素", restrictive},
    {"清真", restrictive},
    {"吃了", event},
    {"喝了", event},
    {"买了", event},
    {"去了", event},
    {"每天", frequency},
    {"天天", frequency},
    {"每晚", frequency},
    {"每周", frequency},
    {"总是", frequency},
    {"一直", frequency},
    {"经常", frequency},
    {"常常", frequency},
    {"通常", frequency},
    {"一般", frequency},
    {"偶尔", frequency},
    {"有时", frequency},
    {"有时候", frequency},
    {"很少", frequency},
    {"的", stop},
    {"了", stop},
    {"是", aux},
    {"在", stop},
    {"很", stop},
    {"都", stop},
    {"就", stop},
    {"吗", stop},
    {"呢", stop},
    {"吧", stop},
    {"啊", stop},
    {"着", stop},
    {"过", stop},
    {"会", aux},
    {"要", aux},
    {"把", stop},
    {"被", stop},
    {"和", stop},
    {"与", stop},
    {"跟", stop},
    {"对", stop},
    {"给", stop},
    {"非常", stop},
    {"比较", stop},
    {"特别", stop},
    {"东西", stop},
    {"更", stop},
    {"这", stop},
    {"那", stop},
    {"他", stop},
    {"她", stop},
    {"它", stop},
    {"我", stop},
    {"用户", stop},
    {"自己", stop},
    {"只", stop},
    {"才", stop},
    {"又", stop},
    {"得", stop},
    {"地", stop},
    {"哥哥", relative},
    {"姐姐", relative},
    {"弟弟", relative},
    {"妹妹", relative},
    {"妈妈", relative},
    {"爸爸", relative},
    {"母亲", relative},
    {"父亲", relative},
    {"妻子", relative},
    {"老婆", relative},
    {"丈夫", relative},
    {"老公", relative},
    {"朋友", relative},
    {"同事", relative},
    {"儿子", relative},
    {"女儿", relative},
    {"父母", relative},
    {"爸妈", relative},
    {"室友", relative},
    {"孩子", relative},
    {"老板", relative},
    {"领导", relative},
    {"男朋友", relative},
    {"女朋友", relative},
    {"奶奶", relative},
    {"爷爷", relative},
});

/// Times per day of a Chinese frequency word (the scale of `frequency_of`); -1 = none.
constexpr double chinese_frequency_of(std::string_view w) noexcept {
  if (w == "从不" || w == "从来不" || w == "从没" || w == "从来没") return 0;
  if (w == "很少" || w == "几乎不" || w == "几乎从不" || w == "几乎从来不" || w == "基本不" ||
      w == "基本上不" || w == "基本没" || w == "基本上没")
    return 1.0 / 30;
  if (w == "偶尔" || w == "有时" || w == "有时候") return 0.15;
  if (w == "每周") return 1.0 / 7;
  if (w == "经常" || w == "常常") return 0.4;
  if (w == "通常" || w == "一般") return 0.7;
  if (w == "每天" || w == "天天" || w == "每晚") return 1;
  if (w == "总是" || w == "一直") return 1.5;
  return -1;
}

/// Chinese single-valued attribute cues: the cue, the attribute, and whether it is a change.
struct chinese_attribute_cue {
  std::string_view cue;        ///< the cue as written ("住在")
  std::string_view attribute;  ///< the single-valued attribute it names ("residence")
  bool change;                 ///< the cue states a change ("搬到")
};
/// Chinese attribute cues: the phrases that name a single-valued attribute (住在, 在...工作);
/// 调到 is a transfer to another office or city of the employer ("调到成都工作",
/// "调到了深圳分公司"; not after 把, claims_chinese.hpp), 转行做 / 转行当 a change of trade to the
/// occupation that follows ("转行做了设计").
inline constexpr auto chinese_attributes = std::to_array<chinese_attribute_cue>({
    {"住在", "residence", false},      {"居住在", "residence", false},
    {"搬到", "residence", true},       {"搬去", "residence", true},
    {"老家", "hometown", false},       {"家乡", "hometown", false},
    {"名字", "name", false},           {"名叫", "name", false},
    {"叫做", "name", false},           {"生日", "birthday", false},
    {"工作单位是", "employer", false}, {"就职于", "employer", false},
    {"在职于", "employer", false},     {"血型", "blood_type", false},
    {"型血", "blood_type", false},     {"属", "zodiac", false},
    {"已婚", "marital_status", false}, {"单身", "marital_status", false},
    {"离婚", "marital_status", false}, {"离异", "marital_status", false},
    {"结婚", "marital_status", true},  {"跳槽到", "employer", true},
    {"入职", "employer", true},        {"搬回", "residence", true},
    {"定居", "residence", false},      {"出生在", "birthplace", false},
    {"出生于", "birthplace", false},   {"领导是", "manager", false},
    {"上司是", "manager", false},      {"主管是", "manager", false},
    {"上级是", "manager", false},      {"土生土长的", "hometown", false},
    {"调到", "employer", true},        {"转行做", "occupation", true},
    {"转行当", "occupation", true},
});

/// Canonical Chinese marital status values: 结婚 (married) is 已婚, 离异 is 离婚.
constexpr std::string_view chinese_marital_value(std::string_view cue) noexcept {
  if (cue == "结婚") return "已婚";
  if (cue == "离异") return "离婚";
  return cue;
}

/// Verbs of "在 X <verb>" that name a single-valued place: the employer (在银行工作) or the
/// school (在北京大学读书).
inline constexpr auto chinese_place_verbs =
    std::to_array<std::pair<std::string_view, std::string_view>>({
        {"工作", "employer"},
        {"上班", "employer"},
        {"任职", "employer"},
        {"做", "employer"},  // (only 在一家X做: "在一家外企做销售", claims_chinese.hpp)
        {"当", "employer"},
        {"读书", "school"},
        {"上学", "school"},
        {"念书", "school"},
        {"读研", "school"},
        {"读博", "school"},
    });

/// Chinese antonym words (traits, habits, evaluations and judgements: "很满意" / "很失望",
/// "很舒服" / "很难熬", "做事麻利" / "做事拖拉"), written for memhealth: two statements of the same
/// polarity that differ by one such pair ("性格外向" / "性格内向") conflict.
inline constexpr auto chinese_antonyms =
    std::to_array<std::pair<std::string_view, std::string_view>>({
        {"外向", "内向"},   {"乐观", "悲观"},   {"积极", "消极"},     {"勤快", "懒惰"},
        {"勤快", "懒"},     {"节俭", "奢侈"},   {"热闹", "安静"},     {"热闹", "冷清"},
        {"早睡", "晚睡"},   {"早起", "晚起"},   {"早起", "睡懒觉"},   {"自信", "自卑"},
        {"大方", "小气"},   {"细心", "粗心"},   {"耐心", "急躁"},     {"胖", "瘦"},
        {"高", "矮"},       {"守时", "拖延"},   {"健谈", "寡言"},     {"干净", "邋遢"},
        {"整洁", "邋遢"},   {"清淡", "重口味"}, {"好", "差"},         {"强", "弱"},
        {"富", "穷"},       {"忙", "闲"},       {"急性子", "慢性子"}, {"热闹", "清静"},
        {"热闹", "清净"},   {"外向", "腼腆"},   {"开朗", "内向"},     {"健谈", "话少"},
        {"勤快", "懒散"},   {"早起", "赖床"},   {"节俭", "大手大脚"}, {"细心", "马虎"},
        {"耐心", "没耐心"}, {"准时", "迟到"},   {"满意", "失望"},     {"舒服", "难熬"},
        {"舒服", "难受"},   {"麻利", "拖拉"},
    });

/// Chinese single-character surnames, for a holder named at the start ("王芳喜欢…").
inline constexpr std::string_view chinese_surnames =
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘蒋蔡余杜叶程苏魏吕"
    "丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦方白邹孟熊秦邱江尹薛段雷侯龙史陶黎贺顾毛郝龚邵万钱严武"
    "戴莫孔向汤";

}  // namespace memhealth::claim_words
