// Claims read from free text (text/claims.hpp) and the claim conflict judge
// (detect/claim_judge.hpp): single statements read into their parts, verdicts on pairs, and the
// judge measured on the labelled pairs of tests/data/judge_pairs and on SICK.
#include "memhealth/text/claims.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "memhealth/detect/claim_judge.hpp"
#include "memhealth/record/memory_record.hpp"
#include "memhealth/text/normalize.hpp"

#include "test_data.hpp"

namespace claims_test {
namespace mh = memhealth;

namespace {

using strings = std::vector<std::string>;

mh::claim_analysis read(const std::string& text) {
  return mh::default_claim_extractor{}(text);
}

mh::conflict_verdict judge(const std::string& a, const std::string& b) {
  // (ages against years of birth are compared in a fixed year, so the figures do not move)
  static const mh::claim_conflict_judge<> j = [] {
    mh::claim_conflict_judge<> x;
    x.rules.reference_year = 2026;
    return x;
  }();
  static const mh::text_normalizer norm;
  mh::memory_record ra, rb;
  ra.id = "a";
  ra.content = a;
  rb.id = "b";
  rb.content = b;
  return j(ra, norm(a), rb, norm(b), 1.0f);
}

// The verdict on (a, b), checked to agree with (b, a).
mh::conflict_verdict both(const std::string& a, const std::string& b) {
  const auto v = judge(a, b), w = judge(b, a);
  CHECK(v.conflict == w.conflict);
  return v;
}

using pairs = std::vector<std::pair<std::string, std::string>>;

// Every pair is a conflict (both orders).
void conflicts(const pairs& ps) {
  for (const auto& ab : ps) {
    const std::string& a = ab.first;  // (clang 14 captures no structured binding)
    const std::string& b = ab.second;
    CAPTURE(a);
    CAPTURE(b);
    CHECK(both(a, b).conflict);
  }
}

// No pair is a conflict (both orders).
void no_conflicts(const pairs& ps) {
  for (const auto& ab : ps) {
    const std::string& a = ab.first;
    const std::string& b = ab.second;
    CAPTURE(a);
    CAPTURE(b);
    CHECK_FALSE(both(a, b).conflict);
  }
}

}  // namespace

TEST_CASE("claims: English statements read into holder, predicate, terms and qualifiers") {
  SUBCASE("a change statement with a negation") {
    const auto r = read("User no longer eats pork");
    CHECK(r.lang == "en");
    REQUIRE(r.claims.size() == 1);
    const auto& c = r.claims[0];
    CHECK(c.holder == "self");
    CHECK(c.polarity == -1);
    CHECK(c.change);
    CHECK(c.predicate == "eat");
    CHECK(c.terms == strings{"eat", "pork"});
  }
  SUBCASE("a relative of a named person, a single-valued attribute") {
    const auto r = read("Priya's sister lives in Porto");
    REQUIRE(r.claims.size() == 1);
    CHECK(r.claims[0].holder == "name:priya/rel:sister");
    CHECK(r.claims[0].attribute == "residence");
    CHECK(r.claims[0].value == strings{"porto"});
  }
  SUBCASE("a lowercase name at the start, before a verb of state or attitude, is the holder") {
    const auto cap = read("Alice lives in Berlin");
    REQUIRE(cap.claims.size() == 1);
    CHECK(cap.claims[0].holder == "name:alice");
    const auto r = read("alice lives in berlin");
    REQUIRE(r.claims.size() == 1);
    CHECK(r.claims[0].holder == "name:alice");  // as capitalised
    CHECK(r.claims[0].attribute == "residence");
    CHECK(r.claims[0].value == strings{"berlin"});
    const auto likes = read("alice likes green tea");
    REQUIRE(likes.claims.size() == 1);
    CHECK(likes.claims[0].holder == "name:alice");
    CHECK(likes.claims[0].polarity == 1);
    // not a name: a determiner first, a plural noun, a noun WordNet knows, a change verb
    for (const char* text : {"the cat lives in berlin", "cats live in berlin",
                             "paper lives in berlin", "alice moved to berlin"}) {
      const auto x = read(text);
      for (const auto& c : x.claims) {
        INFO(text);
        CHECK_FALSE(c.holder.starts_with("name:"));
      }
    }
  }
  SUBCASE("a possessed attribute and its value") {
    const auto r = read("The user's blood type is O negative");
    REQUIRE(r.claims.size() == 1);
    CHECK(r.claims[0].holder == "self");
    CHECK(r.claims[0].attribute == "blood type");
    CHECK(r.claims[0].value == strings{"negative", "o"});
  }
  SUBCASE("a relative named by the possessive is an attribute, not a holder") {
    const auto r = read("User's manager is Karen Liu");
    REQUIRE(r.claims.size() == 1);
    CHECK(r.claims[0].holder == "self");
    CHECK(r.claims[0].attribute == "manager");
  }
  SUBCASE("attitudes of either polarity are one predicate") {
    const auto love = read("I love jazz"), stand = read("I can't stand jazz");
    REQUIRE(love.claims.size() == 1);
    REQUIRE(stand.claims.size() == 1);
    CHECK(love.claims[0].predicate == "like");
    CHECK(love.claims[0].polarity == 1);
    CHECK(stand.claims[0].predicate == "like");
    CHECK(stand.claims[0].polarity == -1);
    CHECK(love.claims[0].terms == stand.claims[0].terms);  // {jazz, like}
  }
  SUBCASE("an aversion denies any predicate on its object") {
    const auto r = read("User avoids gluten");
    REQUIRE(r.claims.size() == 1);
    CHECK(r.claims[0].any_predicate);
    CHECK(r.claims[0].polarity == -1);
    CHECK(r.claims[0].object == strings{"gluten"});
  }
  SUBCASE("a preference between two options is two claims") {
    const auto r = read("User prefers trains over planes");
    REQUIRE(r.claims.size() == 2);
    // the rejected option comes first
    CHECK(r.claims[0].polarity == -1);
    CHECK(r.claims[0].terms == strings{"like", "plane"});
    CHECK(r.claims[1].polarity == 1);
    CHECK(r.claims[1].terms == strings{"like", "train"});
  }
  SUBCASE("switched from A to B") {
    const auto r = read("User switched from oat milk to soy milk");
    REQUIRE(r.claims.size() == 2);
    CHECK(r.claims[0].polarity == -1);
    CHECK(r.claims[0].change);
    CHECK(r.claims[0].terms == strings{"milk", "oat"});
    CHECK(r.claims[1].polarity == 1);
    CHECK(r.claims[1].terms == strings{"milk", "soy"});
  }
  SUBCASE("rates in times per day") {
    CHECK(read("User swims twice a week").claims.at(0).frequency == doctest::Approx(2.0 / 7));
    CHECK(read("User swims every morning").claims.at(0).frequency == doctest::Approx(1.0));
    CHECK(read("User reads 24 books a year").claims.at(0).frequency == doctest::Approx(24.0 / 365));
    CHECK(read("User rarely swims").claims.at(0).frequency == doctest::Approx(1.0 / 30));
    CHECK(read("User swims").claims.at(0).frequency == -1);
  }
  SUBCASE("quantities, times and scenes are kept apart") {
    const auto q = read("User has two dogs");
    CHECK(q.claims.at(0).quantities == std::vector<double>{2});
    CHECK(q.claims.at(0).terms == strings{"dog", "have"});
    const auto t = read("User's dentist appointment is on 3 May at 4 pm");
    CHECK(t.claims.at(0).value.empty());  // an appointment's date is a time, not a value
    CHECK_FALSE(t.claims.at(0).time.empty());
    const auto s = read("User drinks wine at business dinners");
    CHECK(s.claims.at(0).scene == strings{"business", "dinner"});
    CHECK(s.claims.at(0).terms == strings{"drink", "wine"});
  }
  SUBCASE("clauses: but, and before a new verb") {
    const auto r = read("User sold the car and bought an e-bike");
    REQUIRE(r.claims.size() == 2);
    CHECK(r.claims[0].polarity == -1);  // sold: a termination
    CHECK(r.claims[0].object == strings{"car"});
    CHECK(r.claims[1].holder == "self");
  }
  SUBCASE("nothing to read") {
    CHECK_FALSE(read("").parsed());
    CHECK_FALSE(read("!!! ...").parsed());
    CHECK(read("").lang.empty());
    // bytes that are not UTF-8 are read as far as they go, never thrown on
    CHECK_NOTHROW(read("\xff\xfe User \xc3 likes \xe4\xb8"));
    CHECK_NOTHROW(read("\xe7\x94\xa8\xe6\x88\xb7\xff\xe4"));
  }
}

TEST_CASE("claims: numbers too large for a count are no age or clock time (fuzzing found one)") {
  // "34erea7" then twenty 7s and "e" read as a number far beyond any integer type: converting it
  // for an age was undefined behaviour (UBSan, fuzz_claims)
  const strings texts = {"User is 3477777777777777777777777777e300 years old",
                         "User is 1e300 years old", "User goes to bed at 123456789012 pm",
                         "User was born in 99999999999999999999", "用户是99999999999后"};
  for (const auto& text : texts) {
    CAPTURE(text);
    const auto a = read(text);
    for (const auto& c : a.claims) CHECK(c.attribute != "age");
  }
  CHECK(judge("User was born in 99999999999999999999", "User is 30").conflict == false);
}

TEST_CASE("claims: Chinese statements") {
  SUBCASE("a negated habit") {
    const auto r = read("用户不吃香菜");
    CHECK(r.lang == "zh");
    REQUIRE(r.claims.size() == 1);
    CHECK(r.claims[0].holder == "self");
    CHECK(r.claims[0].polarity == -1);
    CHECK(r.claims[0].terms == strings{"吃", "菜", "香"});  // sorted by UTF-8 bytes
  }
  SUBCASE("a move is a change of residence") {
    const auto r = read("我现在搬到深圳了");
    REQUIRE(r.claims.size() == 1);
    CHECK(r.claims[0].holder == "self");
    CHECK(r.claims[0].attribute == "residence");
    CHECK(r.claims[0].change);
    CHECK(r.claims[0].value == strings{"圳", "深"});
  }
  SUBCASE("a relative of the user holds the claim") {
    CHECK(read("用户的妈妈喜欢喝茶").claims.at(0).holder == "rel:妈妈");
  }
  SUBCASE("a rate: a span and a count") {
    CHECK(read("用户每周游泳三次").claims.at(0).frequency == doctest::Approx(3.0 / 7));
    CHECK(read("用户每天喝咖啡").claims.at(0).frequency == doctest::Approx(1.0));
  }
  SUBCASE("a preference between two options") {
    const auto r = read("用户喜欢猫胜过狗");
    REQUIRE(r.claims.size() == 2);
    CHECK(r.claims[0].polarity == 1);
    CHECK(r.claims[1].polarity == -1);
    CHECK(std::count(r.claims[1].terms.begin(), r.claims[1].terms.end(), "狗") == 1);
  }
}

TEST_CASE("claims: the user's lexicon additions") {
  auto lex = mh::claim_lexicon{mh::english_lexicon::builtin()};
  mh::default_claim_extractor ex{&lex};
  // "grok" is no cue word: a plain verb
  CHECK(ex("User groks jazz").claims.at(0).predicate != "like");
  lex.add("en", "grok", mh::claim_words::att_positive);
  CHECK(ex("User groks jazz").claims.at(0).predicate == "like");
  CHECK_THROWS_AS(lex.add("fr", "aimer", mh::claim_words::att_positive), std::invalid_argument);
  CHECK_THROWS_AS(lex.add("en", "", mh::claim_words::att_positive), std::invalid_argument);
  const auto dir = std::filesystem::temp_directory_path() / "memhealth-claims-test";
  std::filesystem::create_directories(dir);
  {
    std::ofstream(dir / "good.tsv") << "# cue words\ncue\tzh\t嫌\tatt_negative\n"
                                       "synonym\tflick\tmovie\n";
    lex.load_tsv(dir / "good.tsv");
    CHECK(lex.zh("嫌") == mh::claim_words::att_negative);
    CHECK(lex.english().synonyms("flick", "movie"));
  }
  std::ofstream(dir / "bad1.tsv") << "cue\ten\tgrok\n";
  std::ofstream(dir / "bad2.tsv") << "\ncue\ten\tgrok\tadores\n";
  std::ofstream(dir / "bad3.tsv") << "meaning\ta\tb\n";
  auto message = [&](const char* file) {
    try {
      lex.load_tsv(dir / file);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(message("bad1.tsv").find("bad1.tsv:1:") != std::string::npos);
  CHECK(message("bad2.tsv").find("bad2.tsv:2: unknown cue name 'adores'") != std::string::npos);
  CHECK(message("bad3.tsv").find("unknown line type 'meaning'") != std::string::npos);
  CHECK(message("missing.tsv").find("cannot read") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("claims: a tester's round of issue 18 (subject-less verbs, holders, is_a lines)") {
  SUBCASE("a capitalised verb form with no holder before it: the user") {
    // every claim of these statements is the user's (a restriction adds denials, all the user's)
    for (const char* text :
         {"Likes dogs", "Enjoys hiking", "Adores cats", "Collects stamps", "Is vegetarian",
          "Has two cats", "Works at Google", "Doesn't eat pork", "Does not eat pork",
          "No longer drinks coffee", "Used to live in Paris", "Owns a Tesla"}) {
      const auto r = read(text);
      INFO(text);
      REQUIRE(!r.claims.empty());
      for (const auto& c : r.claims) CHECK(c.holder == "self");
    }
    // a verb after a name that is itself a verb form: the name holds the statement
    CHECK(read("Rogers likes tea").claims.at(0).holder == "name:rogers");
    CHECK(read("Rogers lives in Berlin").claims.at(0).holder == "name:rogers");
    CHECK(read("Raj lives in Berlin").claims.at(0).holder == "name:raj");
  }
  SUBCASE("Chinese without a subject: the user, unless a relative opens the statement") {
    for (const char* text : {"喜欢狗", "不吃猪肉", "每天喝咖啡", "住在北京"}) {
      const auto r = read(text);
      INFO(text);
      REQUIRE(!r.claims.empty());
      CHECK(r.claims.at(0).holder == "self");
    }
    CHECK(read("妈妈喜欢狗").claims.at(0).holder != "self");
  }
  SUBCASE("structured claims carry the holder; a change is the new state and what it replaced") {
    auto pref = [](const std::string& text) {
      const auto c = mh::structured_claim(read(text));
      REQUIRE(c.has_value());
      REQUIRE(std::holds_alternative<mh::preference_claim>(*c));
      return std::get<mh::preference_claim>(*c);
    };
    CHECK(pref("User loves sushi") ==
          mh::preference_claim{"", "sushi", "", mh::polarity::positive, "user"});
    CHECK(pref("User's wife hates sushi") ==
          mh::preference_claim{"", "sushi", "", mh::polarity::negative, "wife"});
    CHECK(pref("Likes dogs").holder == "user");
    CHECK(pref("用户的妈妈不喝咖啡").holder == "妈妈");
    CHECK(pref("用户每天喝咖啡").holder == "user");
    CHECK(pref("No longer drinks coffee, switched to tea") ==
          mh::preference_claim{"", "tea", "instead of coffee", mh::polarity::positive, "user"});
    // an older claim without a holder is the user's
    CHECK(mh::preference_claim{"", "tea", "", mh::polarity::positive}.holder_or_user() == "user");
  }
  SUBCASE("a value after 'is' is the value: an amount, a favourite season; numerals as digits") {
    const auto salary = read("User's salary is 80k").claims.at(0);
    CHECK(salary.attribute == "salary");
    CHECK(salary.value == strings{"80k"});
    CHECK(salary.time.empty());
    const auto season = read("User's favorite season is summer").claims.at(0);
    CHECK(season.value == strings{"summer"});
    CHECK(season.time.empty());
    // a day alone is still when, not what ("appointment is on Tuesday")
    CHECK(read("User's dentist appointment is on Tuesday").claims.at(0).value.empty());
    // 五千 is 5000, 两万 20000, 两千五 2500: one value with the digits
    CHECK(read("用户的预算是五千元").claims.at(0).value == strings{"5000", "元"});
    CHECK(read("用户的月薪是两万元").claims.at(0).value == strings{"20000", "元"});
    CHECK(read("用户的房租是两千五").claims.at(0).value == strings{"2500"});
    CHECK(judge("用户的预算是五千元", "用户的预算是5000元").conflict == false);
    CHECK(judge("用户的月薪是两万元", "用户的月薪是20000元").conflict == false);
    CHECK(judge("用户的月薪是两万元", "用户的月薪是30000元").conflict == true);
  }
  SUBCASE("is_a lines of a lexicon file (after a byte-order mark) add to the hierarchy") {
    auto lex = mh::claim_lexicon{mh::english_lexicon::builtin()};
    CHECK(!lex.english().is_a("labradoodle", "dog"));
    const auto dir = std::filesystem::temp_directory_path() / "memhealth-claims-is-a-test";
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "lex.tsv") << "\xEF\xBB\xBFsynonym\tflick\tmovie\nis_a\tlabradoodle\tdog\n";
    lex.load_tsv(dir / "lex.tsv");
    CHECK(lex.english().synonyms("flick", "movie"));
    CHECK(lex.english().is_a("labradoodle", "dog"));
    CHECK(lex.english().is_a("labradoodle", "canid"));  // through WordNet's dog
    std::ofstream(dir / "bad.tsv") << "is_a\tlabradoodle\n";
    try {
      lex.load_tsv(dir / "bad.tsv");
      FAIL("no error");
    } catch (const std::runtime_error& e) {
      CHECK(std::string(e.what()).find("bad.tsv:1: expected is_a<TAB>specific<TAB>general") !=
            std::string::npos);
    }
    std::filesystem::remove_all(dir);
  }
}

TEST_CASE("claim judge: verdicts and reasons") {
  struct row {
    const char *a, *b;
    bool conflict;
    const char* reason;
  };
  const row rows[] = {
      // a negation whose denied terms the other side asserts
      {"User does not drink coffee", "User drinks coffee every morning", true, "opposite_polarity"},
      {"User doesn't eat shrimp", "User eats shrimp and crab", true, "opposite_polarity"},
      // the denied object is not what the other side asserts
      {"User doesn't enjoy opera", "User enjoys musicals", false, "not_contained"},
      // agreeing negations
      {"User does not eat pork", "User avoids pork", false, "no_claim_conflict"},
      // attitudes of opposite polarity, no negation word
      {"User loves hiking", "User hates hiking", true, "opposite_polarity"},
      // different holders
      {"User loves hiking", "User's brother hates hiking", false, "different_holders"},
      // one single-valued attribute, two values
      {"User lives in Lyon", "User lives in Graz", true, "single_value"},
      {"User lives in Lyon", "User moved to Graz", true, "change_statement"},
      {"User's shoe size is 42", "User's shoe size is 44", true, "single_value"},
      // issue 18, third round: readings of wider phrasing
      {"User lives in Boston", "User has since moved to Denver", true, "change_statement"},
      {"User owns a small sailboat", "User sold the boat over the summer", true,
       "change_statement"},
      {"Kenji is dating Mei", "Kenji and Mei broke up in the spring", true, "change_statement"},
      {"The user's partner Dana is keen on camping", "Dana finds camping miserable", true,
       "opposite_polarity"},
      {"The user's partner Dana is keen on camping", "User finds camping miserable", false,
       "different_holders"},
      {"User dislikes desserts and sugary snacks", "User loves desserts", true,
       "opposite_polarity"},
      {"User quit the choir last fall because rehearsals clashed with work",
       "User sings in the church choir", true, "change_statement"},
      {"User travels for work constantly", "User travels for work once or twice a year", true,
       "degree"},
      {"User speaks fluent French", "User only knows a few words of French", true, "degree"},
      {"User speaks fluent French", "User only knows a few words of Italian", false,
       "no_claim_conflict"},
      {"用户英语说得很流利", "用户的英语只会几句简单问候", true, "degree"},
      {"User usually goes to bed at 10:30 pm", "User's usual bedtime is around 1 am", true,
       "single_value"},
      {"User goes to bed around 11 pm", "User's usual bedtime is about eleven at night", false,
       "same_value"},
      {"User is a practising Catholic", "User is a practising Muslim", true, "single_value"},
      {"User's favourite film is Spirited Away", "User's all-time favourite movie is Heat", true,
       "single_value"},
      {"User's rent was $1,200 a month in 2022", "User's rent was $1,450 a month in 2024", false,
       "different_time"},
      // heights and weights in one unit: 5 ft 6 in = 167.6 cm; 一米六 = 160 cm; 120斤 = 60 kg
      {"User is 5 ft 6 in tall", "User is 185 cm tall", true, "single_value"},
      {"User is 5 ft 6 in tall", "User is 168 cm tall", false, "same_value"},
      {"用户身高一米六", "用户身高175厘米", true, "single_value"},
      {"用户体重120斤", "用户体重60公斤", false, "same_value"},
      {"用户去年体重75公斤", "用户今年体重68公斤", false, "different_time"},
      // a Chinese birthday by month and day
      {"用户的生日是五月二十号", "用户生日在十月", true, "single_value"},
      {"用户的生日是五月二十号", "用户生日在五月", false, "same_value"},
      // Chinese: a relative by another name, a titled name, a purpose, a comparison
      {"小陈的老婆叫李娜", "小陈的妻子名叫王芳", true, "single_value"},
      {"王阿姨在小学当语文老师", "王阿姨前年退休了", true, "change_statement"},
      {"用户爱喝奶茶", "用户为了减肥已经不喝奶茶了", true, "change_statement"},
      {"用户觉得猫比狗可爱", "用户觉得狗比猫可爱", true, "role_swap"},
      {"出差时用户更愿意坐飞机", "出差时用户宁可坐高铁也不坐飞机", true, "role_swap"},
      // a termination against the state it ends
      {"User plays in a jazz band", "User quit the jazz band", true, "change_statement"},
      // frequencies far apart
      {"User cycles to work every day", "User rarely cycles to work", true, "degree"},
      {"User cycles to work every day", "User cycles to work most days", false,
       "no_claim_conflict"},
      // quantities
      {"User has two cats", "User has four cats", true, "quantity"},
      // two dated events
      {"User ran 5 km on Monday", "User ran 10 km on Friday", false, "different_time"},
      // different scenes
      {"User drinks beer at parties", "User doesn't drink beer at home", false, "different_scene"},
      // a specific scene against a general rule: a person decides
      {"User doesn't drink beer", "User drinks beer at parties", true, "scene_specific"},
      // role swap
      {"User prefers tea over coffee", "User prefers coffee over tea", true, "role_swap"},
      // Chinese
      {"用户不吃香菜", "用户喜欢吃香菜", true, "opposite_polarity"},
      {"用户不吃香菜", "用户讨厌香菜", false, "no_claim_conflict"},
      {"用户住在杭州", "用户住在成都", true, "single_value"},
      {"用户喜欢咖啡", "用户的妈妈讨厌咖啡", false, "different_holders"},
      {"用户每天跑步", "用户很少跑步", true, "degree"},
      // statements of several clauses, adverbs, "prefer to avoid", negated relative clauses
      {"I avoid caffeine", "I strongly prefer to avoid caffeine", false, "no_claim_conflict"},
      {"I prefer jazz and avoid pop", "I avoid pop and prefer jazz", false, "not_contained"},
      {"I refuse to buy products that are tested on animals",
       "I only buy products that are not tested on animals", false, "not_contained"},
      {"I follow a keto diet, avoiding bread", "I eat bread every day", true, "opposite_polarity"},
      // a number after a noun names something; "User 12" is one of many users
      {"User likes item 45 in context 6", "User likes item 46 in context 7", false,
       "no_claim_conflict"},
      {"User doesn't like room 12", "User likes room 12", true, "opposite_polarity"},
      {"User 12 likes jazz", "User 13 hates jazz", false, "different_holders"},
      // issue 18 (recall): antonym complements with modifiers, trait antonyms, judgement verbs
      {"User is patient with slow drivers", "User is impatient with slow drivers", true, "antonym"},
      {"User is shy", "User is outgoing", true, "antonym"},
      {"User finds chess easy", "User finds chess difficult", true, "antonym"},
      {"用户性格外向", "用户性格内向", true, "antonym"},
      // change verbs against the state they end; a service noun stands for the thing used
      {"User uses Dropbox", "User cancelled their Dropbox subscription", true, "change_statement"},
      {"User owns a kayak", "User gave the kayak to a friend", true, "change_statement"},
      {"User drinks coffee every morning", "User switched to tea", true, "change_statement"},
      {"User switched to oat milk", "User drinks black coffee", false, "no_claim_conflict"},
      {"用户每天喝咖啡", "用户现在改喝茶了", true, "change_statement"},
      {"User works at a bakery", "User is retired", true, "change_statement"},
      // restrictions deny what they exclude; idioms read as plain words
      {"User is vegetarian", "User eats salmon every week", true, "opposite_polarity"},
      {"User is vegetarian", "User eats eggs", false, "not_contained"},
      {"User is a night owl", "User is an early riser", true, "opposite_polarity"},
      {"用户喝酒", "用户滴酒不沾", true, "opposite_polarity"},
      // single-valued attributes from the noun or the verb
      {"User is a nurse", "User is an accountant", true, "single_value"},
      {"User is divorced", "User is married to Dan", true, "single_value"},
      {"User's dentist is Dr. Patel", "User's dentist is Dr. Ruiz", true, "single_value"},
      {"用户的车是特斯拉", "用户的车是比亚迪", true, "single_value"},
      {"用户在腾讯工作", "用户跳槽到了字节跳动", true, "change_statement"},
      // amounts per period; a name is given in the passive
      {"User sleeps 9 hours a night", "User sleeps 5 hours a night", true, "degree"},
      {"User calls their mother daily", "User calls their mother daily too", false,
       "no_claim_conflict"},
      // negation scope: "not ... anymore" negates once; a negated copula is a copula
      {"User doesn't eat red meat anymore", "User eats red meat", true, "change_statement"},
      {"User isn't a fan of sushi", "User is a fan of sushi", true, "opposite_polarity"},
      // statements without a subject, as memory extractors write them, are about the user
      {"Name is John", "Name is Alex", true, "single_value"},
      {"Is vegetarian", "Eats chicken every day", true, "opposite_polarity"},
      {"Loves jazz", "User's sister hates jazz", false, "different_holders"},
      // ... and the look-alikes they must leave alone
      {"User is a nurse", "User is also a part-time photographer", false, "additive"},
      {"User is vegetarian", "User cooks chicken for their kids", false, "not_contained"},
      {"User moved to a new desk at work", "User lives in Leeds", false, "no_claim_conflict"},
      {"Anna gave Ben a book", "Ben gave Anna a book", false, "different_holders"},
  };
  for (const auto& r : rows) {
    const std::string a = r.a, b = r.b;
    CAPTURE(a);
    CAPTURE(b);
    const auto v = judge(r.a, r.b);
    CHECK(v.conflict == r.conflict);
    CHECK(v.reason == r.reason);
    CHECK(judge(r.b, r.a).conflict == r.conflict);  // pairs are unordered
  }
  // a lasting restriction against a one-off event: a person decides
  const auto v = judge("User is vegan", "User ate a cheeseburger yesterday");
  CHECK(v.conflict);
  CHECK(v.needs_human);
  // text the extractor cannot read goes to the cue judge
  CHECK(judge("привет мир", "пока мир").reason == "no_cue");  // neither English nor Chinese
  CHECK(judge("same text", "same text").reason == "identical_text");
}

TEST_CASE("claim judge: an age against a year of birth, at a reference year") {
  // in 2026 someone born in 1985 is 40 or 41; "85后" is born 1985-1989 (36 to 41); "90后"
  // 1990-1999 (26 to 36); a year more either way is allowed
  mh::claim_conflict_judge<> j;
  j.rules.reference_year = 2026;
  const mh::text_normalizer norm;
  auto judge_at = [&](const std::string& a, const std::string& b) {
    mh::memory_record ra, rb;
    ra.id = "a";
    ra.content = a;
    rb.id = "b";
    rb.content = b;
    return j(ra, norm(a), rb, norm(b), 1.0f).conflict;
  };
  CHECK(judge_at("User is 28", "User was born in 1985"));
  CHECK_FALSE(judge_at("User is 40", "User was born in 1985"));
  CHECK_FALSE(judge_at("User is 41 years old", "Born in 1985"));
  CHECK(judge_at("User is 34 years old", "User was born in 1978"));
  CHECK(judge_at("用户今年28岁", "用户是1985年出生的"));
  CHECK_FALSE(judge_at("用户今年40岁", "用户是1985年出生的"));
  CHECK(judge_at("用户是85后", "用户今年28岁"));
  CHECK_FALSE(judge_at("用户是90后", "用户今年30岁"));
  CHECK(judge_at("用户是90后", "用户是1985年出生的"));
  CHECK_FALSE(judge_at("用户是85后", "用户是1987年出生的"));
  // "turned 40 last month" is an age (and a change)
  CHECK(judge_at("User is 34 years old", "User turned 40 last month"));
}

namespace {
struct confusion {
  int tp = 0, fp = 0, fn = 0, tn = 0;
  void add(bool truth, bool said) { (truth ? (said ? tp : fn) : (said ? fp : tn))++; }
  double precision() const { return tp + fp ? static_cast<double>(tp) / (tp + fp) : 1.0; }
  double recall() const { return tp + fn ? static_cast<double>(tp) / (tp + fn) : 1.0; }
};

// The judge over one labelled pair file (tests/data/judge_pairs/README.md): confusion counts
// for "all", "en", "zh" and "<category>/<label>" (review rows apart), both orders of each pair.
struct pair_results {
  std::map<std::string, confusion> by;
  int asymmetric = 0, reviews = 0, review_flagged = 0;
};
pair_results judge_pair_file(const std::vector<std::vector<std::string>>& rows) {
  pair_results r;
  for (const auto& f : rows) {
    REQUIRE(f.size() >= 6);
    const bool ab = judge(f[4], f[5]).conflict, ba = judge(f[5], f[4]).conflict;
    r.asymmetric += ab != ba;
    if (f[3] == "review") {
      ++r.reviews;
      r.review_flagged += ab;
      continue;
    }
    const bool truth = f[3] == "conflict";
    for (const auto& key : {std::string("all"), f[1], f[2] + "/" + f[3]}) r.by[key].add(truth, ab);
  }
  for (const auto& [k, c] : r.by)
    MESSAGE(k << ": tp " << c.tp << " fp " << c.fp << " fn " << c.fn << " tn " << c.tn
              << " precision " << c.precision() << " recall " << c.recall());
  MESSAGE("review rows flagged as conflicts: " << r.review_flagged << " of " << r.reviews);
  return r;
}
}  // namespace

TEST_CASE(
    "claim judge: a denial of a kind against a member of it (WordNet hypernyms, "
    "multiword nouns)") {
  // Each kind-of link below was read in the WordNet 3.0 files (data.noun hypernym pointers);
  // the pairs were written for this test. Both directions must agree.
  auto both = [](const std::string& a, const std::string& b) {
    const auto v = judge(a, b), w = judge(b, a);
    CHECK(v.conflict == w.conflict);
    return v;
  };
  SUBCASE("conflicts") {
    // lobster (its food sense, a minor noun) -> shellfish -> seafood: two steps
    auto v = both("User can't stand seafood", "User loves lobster");
    CHECK(v.conflict);
    CHECK_FALSE(v.needs_human);
    CHECK(v.reason == "opposite_polarity");
    // "musical instrument" is one WordNet noun; drum -> percussion instrument -> musical
    // instrument, piano -> keyboard instrument -> musical instrument
    v = both("User doesn't play any musical instrument", "User plays the drums in a band");
    CHECK(v.conflict);
    CHECK(v.reason == "opposite_polarity");
    CHECK(both("User dislikes musical instruments", "User loves the piano").conflict);
    // an allergy: almond (its food sense) -> edible nut -> nut
    CHECK(both("Nina is allergic to nuts", "Nina snacks on almonds").conflict);
    // a multiword noun on each side: "ice cream" is a kind of "dairy product"
    CHECK(both("User avoids dairy products", "User eats ice cream every day").conflict);
  }
  SUBCASE("no conflicts") {
    // another kind of food, another activity of the verb
    CHECK_FALSE(both("User is allergic to shellfish", "User loves chicken").conflict);
    CHECK_FALSE(
        both("User doesn't play any musical instrument", "User plays tennis on Sundays").conflict);
    // "cream cheese" is no "ice cream": the words of a multiword noun are not the noun
    CHECK_FALSE(both("User never eats ice cream", "User eats cream cheese on bagels").conflict);
    // two aversions agree
    CHECK_FALSE(both("User hates seafood", "User hates lobster").conflict);
    // "bike" is ambiguous in WordNet (motorcycle, bicycle) and never tagged: no sense is kept,
    // so it is no synonym of "motorcycle"
    CHECK_FALSE(both("Leo rides a motorcycle to work", "Leo never rides a bike").conflict);
  }
}

TEST_CASE("claim judge: trait idioms with a relative clause, online services of a kind") {
  // Pairs written for this test. Both directions must agree.
  auto both = [](const std::string& a, const std::string& b) {
    const auto v = judge(a, b), w = judge(b, a);
    CHECK(v.conflict == w.conflict);
    return v;
  };
  SUBCASE("conflicts") {
    // "is an introvert" reads as "is introverted", "is a social butterfly" as "is outgoing
    // and loves socialising": introverted / outgoing are antonyms (claim_words)
    auto v = both("Priya is an introvert", "Priya is a social butterfly");
    CHECK(v.conflict);
    CHECK(v.reason == "antonym");
    // a relative clause after "who" describes the trait and is no part of the claim
    v = both("Priya is an introvert who reads at home on Fridays",
             "Priya is a social butterfly who never misses a party");
    CHECK(v.conflict);
    CHECK(v.reason == "antonym");
    CHECK(both("Ben is an extrovert who talks to everyone", "Ben is introverted").conflict);
    // Instagram is a kind of social media (claim_words::service_is_a)
    v = both("Ana is on Instagram", "Ana isn't on any social media");
    CHECK(v.conflict);
    CHECK(v.reason == "opposite_polarity");
    CHECK(both("Ana is not on social media", "Ana is on TikTok").conflict);
  }
  SUBCASE("no conflicts") {
    // two traits that are no antonyms; another holder
    CHECK_FALSE(both("Priya is an introvert who loves books", "Priya is curious").conflict);
    CHECK_FALSE(both("Priya is an introvert", "Priya's sister is a social butterfly").conflict);
    // one service denied, another asserted: two members of the kind, no denial of the kind
    CHECK_FALSE(both("Ana is on Instagram", "Ana isn't on Facebook").conflict);
    // a denial in one scene only
    CHECK_FALSE(both("Ana is on Instagram", "Ana isn't on any social media at work").conflict);
    // "which" keeps its restriction: no dog that is furry is still possibly a dog
    CHECK_FALSE(
        both("A dog is biting a bucket", "There is no dog which is furry and black").conflict);
  }
}

TEST_CASE("claim judge: English birthdays by month, and day when both give one") {
  // Pairs written for this test. Both directions must agree.
  auto both = [](const std::string& a, const std::string& b) {
    const auto v = judge(a, b), w = judge(b, a);
    CHECK(v.conflict == w.conflict);
    return v;
  };
  // March (03) against July (07); 3 March against 12 March
  CHECK(both("Omar was born in March", "Omar's birthday is in July").conflict);
  CHECK(both("Omar was born on 3 March", "Omar's birthday is on 12 March").conflict);
  CHECK(both("Omar's birthday is on the 4th of May", "Omar was born in October").conflict);
  // the same month, a day on one side only, the same day spelt another way
  CHECK_FALSE(both("Omar was born in March", "Omar's birthday is on 12 March").conflict);
  CHECK_FALSE(both("Omar was born on 3 March", "Omar's birthday is March 3rd").conflict);
  // a place of birth, another holder, a birthday party: no birthday to compare
  CHECK_FALSE(both("Omar was born in Paris", "Omar's birthday is in July").conflict);
  CHECK_FALSE(both("Omar was born in March", "Omar's sister's birthday is in July").conflict);
  CHECK_FALSE(both("Omar's birthday party is in May", "Omar was born in June").conflict);
}

TEST_CASE("claim judge: fifth round of issue 18 (abilities, ingredients, numerals, jobs ...)") {
  // Pairs written for this test, a few conflicts and look-alikes per rule. Both directions must
  // agree.
  auto both = [](const std::string& a, const std::string& b) {
    const auto v = judge(a, b), w = judge(b, a);
    CHECK(v.conflict == w.conflict);
    return v;
  };
  SUBCASE("abilities: knows how to / never learned to / is (un)able to") {
    CHECK(both("Omar knows how to drive", "Omar never learned to drive").conflict);
    CHECK(both("Omar is able to ski", "Omar is unable to ski").conflict);
    CHECK(both("Omar is a non-smoker", "Omar smokes after dinner").conflict);
    CHECK_FALSE(both("Omar knows how to drive", "Omar never learned to swim").conflict);
    CHECK_FALSE(both("Omar's brother can ski", "Omar is unable to ski").conflict);
  }
  SUBCASE("a food by its kind or ingredient (lactose, shellfish, beer); none in X-free or oat") {
    CHECK(both("User is lactose intolerant", "User has a bowl of yogurt every morning").conflict);
    CHECK(both("Omar is allergic to shellfish", "Omar orders prawn curry every Friday").conflict);
    CHECK(both("Nina is a teetotaller", "Nina has a glass of prosecco most evenings").conflict);
    CHECK_FALSE(
        both("User is lactose intolerant", "User drinks lactose-free milk every morning").conflict);
    CHECK_FALSE(both("User is lactose intolerant", "User drinks soy milk with breakfast").conflict);
    CHECK_FALSE(both("Omar is allergic to shellfish", "Omar orders salmon every Friday").conflict);
    CHECK_FALSE(
        both("Nina is a teetotaller", "Nina drinks sparkling water most evenings").conflict);
  }
  SUBCASE("degree and rate phrasings") {
    CHECK(both("Nina is fluent in Italian", "Nina knows only a few words of Italian").conflict);
    CHECK(both("Nina walks the dog every single day", "Nina walks the dog about once a month")
              .conflict);
    CHECK(both("Nina drinks four cups of tea a day", "Nina has one tea a day at most").conflict);
    CHECK(both("Omar smokes a pack a day", "Omar smokes about one cigarette a month").conflict);
    CHECK_FALSE(both("Nina is fluent in Italian", "Nina knows only a few words of Greek").conflict);
    CHECK_FALSE(
        both("Omar smokes a pack a day", "Omar's father smokes one cigarette a month").conflict);
    CHECK_FALSE(both("Omar drinks a glass a day", "Omar drinks tea every morning").conflict);
  }
  SUBCASE("single values: key-value labels, the value first, employer and occupation") {
    CHECK(both("Hometown: Glasgow", "User grew up in Leeds").conflict);
    CHECK(both("Favorite band: Radiohead", "User's favorite band is Coldplay").conflict);
    CHECK(both("Ethiopian is the user's favourite cuisine", "User's favourite cuisine is Thai")
              .conflict);
    CHECK(both("The user works at Deloitte as an auditor", "The user is an auditor at KPMG")
              .conflict);
    CHECK(both("Nadia is a pharmacist at Boots", "Nadia works as a librarian").conflict);
    CHECK_FALSE(both("Favorite band: Radiohead", "User's favorite band is Radiohead").conflict);
    CHECK_FALSE(both("Note: user likes jazz", "User likes jazz").conflict);
    CHECK_FALSE(both("Ethiopian is the user's favourite cuisine",
                     "User's sister's favourite cuisine is Thai")
                    .conflict);
    CHECK_FALSE(
        both("User works as a nurse at St Mary's Hospital", "User is a nurse at St Mary's Hospital")
            .conflict);
    CHECK_FALSE(
        both("User works at Deloitte as an auditor", "User's wife is an auditor at KPMG").conflict);
    CHECK_FALSE(both("Nadia is a pharmacist at Boots", "Nadia works at Boots").conflict);
  }
  SUBCASE("endings: rehomed, cold turkey, months and spans as times, a new clause after them") {
    CHECK(
        both("User sings in a community choir", "User quit the community choir in March").conflict);
    CHECK(both("User smokes about half a pack a day", "User quit smoking cold turkey in January")
              .conflict);
    CHECK(both("User has a parrot named Kiwi", "User rehomed Kiwi the parrot with a friend")
              .conflict);
    CHECK(both("User works at Shopify", "User resigned from Shopify and joined Stripe").conflict);
    CHECK(
        both("User is vegetarian", "User is no longer vegetarian and eats chicken again").conflict);
    CHECK(both("User has visited Japan twice", "User has never set foot in Japan").conflict);
    CHECK_FALSE(
        both("User has a parrot named Kiwi", "User's sister rehomed her parrot with a friend")
            .conflict);
    CHECK_FALSE(both("Omar may join the orchestra", "Omar plays the cello").conflict);
    CHECK_FALSE(both("User quit smoking and started running", "User runs every morning").conflict);
    CHECK_FALSE(both("User doesn't eat cats and dogs", "User eats chicken").conflict);
    // two dated measurements ("at the March checkup" is a time, not a value)
    CHECK_FALSE(both("User's blood pressure was 140/90 at the March checkup",
                     "User's blood pressure was 120/80 at the July checkup")
                    .conflict);
  }
  SUBCASE("shoe sizes, gerunds, a rate's occasion, devices by brand, a switch's time") {
    CHECK(both("User wears UK size 9 shoes", "User's shoe size is UK 11").conflict);
    CHECK(both("I wear a size 44", "My shoe size is 41").conflict);
    CHECK(both("User vapes", "User gave up vaping in January").conflict);
    CHECK(both("User drinks black tea every morning",
               "User swapped the morning black tea for green tea")
              .conflict);
    CHECK(both("User uses an Android phone", "User switched to an iPhone last autumn").conflict);
    CHECK_FALSE(both("User wears UK size 9 shoes", "User's shoe size is UK 9").conflict);
    CHECK_FALSE(both("User wears UK size 9 shoes", "User's son's shoe size is UK 4").conflict);
    CHECK_FALSE(both("User vapes", "User gave up smoking in January").conflict);
    CHECK_FALSE(
        both("User drinks black tea every evening", "User quit the morning coffee").conflict);
    CHECK_FALSE(both("User uses an Android phone", "User's wife switched to an iPhone").conflict);
    CHECK_FALSE(both("User uses an Android phone", "User switched to a new bank").conflict);
  }
  SUBCASE("preference and manager phrasings") {
    CHECK(both("Maya prefers dogs to cats", "Maya is more of a cat person than a dog person")
              .conflict);
    CHECK(both("Kenji's manager is Ms. Alvarez", "Kenji reports directly to Tom Becker").conflict);
    CHECK(both("用户的直属领导是刘经理", "用户直接向赵总汇报工作").conflict);
    CHECK_FALSE(both("Maya prefers cats to dogs", "Maya is more of a cat person than a dog person")
                    .conflict);
    CHECK_FALSE(
        both("Kenji's manager is Tom Becker", "Kenji reports directly to Tom Becker").conflict);
    CHECK_FALSE(both("用户的直属领导是刘经理", "用户直接向刘经理汇报工作").conflict);
    CHECK_FALSE(both("用户的直属领导是刘经理", "用户每周向父母汇报学习情况").conflict);
    CHECK_FALSE(both("用户的直属领导是刘经理", "用户的同事直接向赵总汇报").conflict);
  }
  SUBCASE("Chinese rates over a year (一年到头)") {
    CHECK(both("我每个周末都回爸妈家吃饭", "我一年到头只回爸妈家两三次").conflict);
    CHECK(both("用户的老公一周要出差好几次", "用户的老公一年到头几乎不出差").conflict);
    CHECK_FALSE(both("我每个周末都回爸妈家吃饭", "我一年到头只去两三次电影院").conflict);
    CHECK_FALSE(both("用户的老公一周要出差好几次", "用户一年到头几乎不出差").conflict);
  }
  SUBCASE("attitudes: looks forward to, thrives in, won't touch; food and cuisine") {
    CHECK(both("Leo hates his piano lessons", "Leo looks forward to his piano lessons").conflict);
    CHECK(both("Leo loves broccoli", "Leo won't touch broccoli").conflict);
    CHECK(both("User is fond of Greek food", "User loathes Greek cuisine").conflict);
    CHECK_FALSE(
        both("Leo hates his piano lessons", "Leo looks forward to his chess club").conflict);
    CHECK_FALSE(both("User is fond of Greek food", "User loathes Greek wine").conflict);
  }
  SUBCASE("Chinese: numerals, classifiers, ages, birthdays, managers") {
    CHECK(both("用户今年28岁", "用户今年三十五了").conflict);
    CHECK(both("小王的爸爸一天抽一包烟", "小王的爸爸一年也抽不了几根烟").conflict);
    CHECK(both("我每天只睡五个小时左右", "我每天睡够九个小时").conflict);
    CHECK(both("小王的生日是11月8号", "小王是3月2日出生的").conflict);
    CHECK(both("用户的领导是王经理", "用户的直属上司是刘总").conflict);
    CHECK_FALSE(both("小王的生日是11月8号", "小王是11月8日出生的").conflict);
    CHECK_FALSE(both("小王的生日是11月8号", "小王的女儿是3月2日出生的").conflict);
    CHECK_FALSE(both("小林的领导是张姐", "小林的顶头上司是张姐").conflict);
    CHECK_FALSE(both("小林的领导很严格", "小林的领导是张姐").conflict);
    CHECK_FALSE(both("用户今年28岁", "用户的儿子今年三岁了").conflict);
    // an ending of a job names the job ("辞去了老师的工作": 工作 is the service noun)
    CHECK(both("用户是一名中学老师", "用户辞去了老师的工作").conflict);
    CHECK_FALSE(both("用户是一名中学老师", "用户辞去了银行的工作").conflict);
    // a run of numerals is one number
    const auto r = read("用户每天走一万多步");
    REQUIRE(r.claims.size() == 1);
    CHECK(r.claims[0].quantities == std::vector<double>{10000});
  }
  SUBCASE("Chinese: preferences with 比起, reactions, abilities, antonyms of a quality") {
    CHECK(both("小王比起米饭更爱吃面条", "小王比起面条更爱吃米饭").conflict);
    CHECK(both("小王特别爱吃臭豆腐", "小王一闻到臭豆腐的味道就想吐").conflict);
    CHECK(both("小王很喜欢化学", "小王一提化学就头疼").conflict);
    CHECK(both("我爱喝咖啡", "我受不了咖啡那股味儿").conflict);
    CHECK(both("我会说粤语", "我一句粤语都不会讲").conflict);
    CHECK(both("用户喜欢热闹", "用户喜欢清静").conflict);
    CHECK(both("老陈是个急性子", "老陈是个慢性子").conflict);
    CHECK(both("我喜欢热闹的聚会", "我最怕人多的场合").conflict);
    CHECK_FALSE(both("我喜欢热闹的聚会", "我最怕蛇").conflict);
    CHECK_FALSE(both("小王比起米饭更爱吃面条", "小王喜欢吃面条").conflict);
    CHECK_FALSE(both("小王比起米饭更爱吃面条", "小王的妈妈比起面条更爱吃米饭").conflict);
    CHECK_FALSE(both("小王特别爱吃臭豆腐", "小王一闻到香菜就想吐").conflict);
    CHECK_FALSE(both("我爱喝咖啡", "我受不了香烟的味道").conflict);
    CHECK_FALSE(both("我会说粤语", "我不会说日语").conflict);
    CHECK_FALSE(both("用户喜欢外向的人", "用户喜欢内向的人").conflict);
  }
}

TEST_CASE("claim judge: sixth round of issue 18 (preference orders, numerals, rates, dislikes)") {
  // Pairs written for this test, conflicts and look-alikes per rule; both directions must agree.
  auto both = [](const std::string& a, const std::string& b) {
    const auto v = judge(a, b), w = judge(b, a);
    CHECK(v.conflict == w.conflict);
    return v;
  };
  SUBCASE("Chinese preference orders: 更<verb>X而不是Y, 宁可X也不愿Y, X多过Y") {
    CHECK(both("小周选电脑更看重性能而不是外观", "小周选电脑更看重外观而不是性能").conflict);
    CHECK(
        both("用户假期宁可在家看书也不愿出去旅游", "用户假期宁可出去旅游也不愿在家看书").conflict);
    CHECK(both("用户更喜欢喝茶，不喜欢喝咖啡", "用户喝咖啡多过喝茶").conflict);
    CHECK_FALSE(both("小周选电脑更看重性能而不是外观", "小周选电脑看重性能").conflict);
    CHECK_FALSE(both("用户假期宁可在家看书也不愿出去旅游", "用户假期喜欢在家看书").conflict);
    CHECK_FALSE(both("用户喝咖啡多过喝茶", "用户每天早上喝咖啡").conflict);
    // 更换 is a change, no preference
    CHECK_FALSE(both("用户最近更换了手机而不是电脑", "用户更喜欢电脑").conflict);
  }
  SUBCASE("English: a scene phrase ends at the rejected option of 'would rather X than Y'") {
    CHECK(both("User would rather cook at home than order takeaway",
               "User prefers ordering takeaway to cooking at home")
              .conflict);
    CHECK(both("User would rather cook at home than order takeaway",
               "User would rather order takeaway than cook at home")
              .conflict);
    CHECK_FALSE(
        both("User would rather cook at home than order takeaway", "User likes cooking at home")
            .conflict);
    CHECK_FALSE(both("User would rather cook at home than order takeaway",
                     "User would rather cook at home than eat at a restaurant")
                    .conflict);
  }
  SUBCASE("Chinese numerals with 百, 千 and 万; weights in 斤 against 公斤") {
    using memhealth::detail::claims::chinese_number_at;
    CHECK(chinese_number_at("一百六十斤", 0) == std::pair<double, std::size_t>{160, 12});
    CHECK(chinese_number_at("一百零五", 0) == std::pair<double, std::size_t>{105, 12});
    CHECK(chinese_number_at("八千", 0) == std::pair<double, std::size_t>{8000, 6});
    CHECK(chinese_number_at("四万左右", 0) == std::pair<double, std::size_t>{40000, 6});
    CHECK(chinese_number_at("4万", 0) == std::pair<double, std::size_t>{40000, 4});
    CHECK(chinese_number_at("十二", 0) == std::pair<double, std::size_t>{12, 6});
    CHECK(chinese_number_at("七五", 0) == std::pair<double, std::size_t>{7, 3});  // decimals
    CHECK(chinese_number_at("万一", 0).first < 0);
    CHECK(both("用户体重五十公斤", "用户体重一百四十斤").conflict);  // 50 kg / 70 kg
    CHECK_FALSE(both("用户体重五十公斤", "用户体重一百斤").conflict);
    CHECK_FALSE(both("用户体重一百零六斤", "用户体重五十三公斤").conflict);
  }
  SUBCASE("English thousands separators; a rated value's year is its date") {
    CHECK_FALSE(
        both("User's rent was $1,500 a month in 2021", "User's rent was $1,900 a month in 2024")
            .conflict);
    CHECK_FALSE(both("User's salary is $85,000 a year", "User earns $85,000 a year").conflict);
    CHECK_FALSE(both("User's wedding was in 2019", "User got married in 2019").conflict);
    const auto c = read("User's rent is $1,200 a month").claims;
    REQUIRE(c.size() == 1);
    CHECK(c[0].attribute == "rent");
    CHECK(c[0].frequency == doctest::Approx(40));  // $1200 over 30 days
  }
  SUBCASE("Chinese: 土生土长的X人 a hometown; 为了... ends at 把") {
    CHECK(both("用户的老家在四川", "用户是土生土长的湖南人").conflict);
    CHECK_FALSE(both("用户的老家在四川", "用户是土生土长的四川人").conflict);
    CHECK(both("用户每天抽烟", "用户为了身体把烟戒了").conflict);
    CHECK_FALSE(both("用户每天喝咖啡", "用户为了身体把烟戒了").conflict);
  }
  SUBCASE("Chinese: 把X放在Y前面 an order of preference (后面 the other way)") {
    CHECK(both("用户把健康放在工作前面", "用户把工作放在健康前面").conflict);
    CHECK(both("用户把健康放在工作前面", "用户把健康放在工作后面").conflict);
    CHECK_FALSE(both("用户把健康放在工作前面", "用户很重视健康").conflict);
    CHECK_FALSE(both("用户把健康放在工作前面", "用户的同事把工作放在健康前面").conflict);
    CHECK_FALSE(both("用户把书放在桌子上", "用户把书放在床上").conflict);  // a place
  }
  SUBCASE("Chinese: 用户的<relative>是个... is the relative's; 嫌X太Y a dislike of X") {
    CHECK(both("用户的妻子是个素食主义者", "用户的妻子最爱吃红烧肉").conflict);
    CHECK_FALSE(both("用户的妻子是个素食主义者", "用户最爱吃红烧肉").conflict);
    CHECK(both("用户的老板是王总", "用户的老板是李总").conflict);  // still an attribute
    CHECK(both("用户的妈妈爱吃榴莲", "用户的妈妈嫌榴莲太臭").conflict);
    CHECK_FALSE(both("用户的妈妈爱吃榴莲", "用户的爸爸嫌榴莲太臭").conflict);
    CHECK_FALSE(both("用户的妈妈爱吃榴莲", "用户的妈妈嫌弃榴莲太贵").conflict);
  }
  SUBCASE("English: evaluative adjectives, rate ranges, seeing and visiting") {
    CHECK(both("User finds techno music energizing", "User finds techno music grating").conflict);
    CHECK_FALSE(both("User finds techno music grating", "User finds jazz relaxing").conflict);
    const auto r = read("User sees their parents once or twice a year").claims;
    REQUIRE(r.size() == 1);
    CHECK(r[0].terms == strings{"parent", "see"});  // no "twice"
    CHECK(r[0].frequency == doctest::Approx(1.5 / 365));
    CHECK(read("User goes running two to three times a week").claims.at(0).frequency ==
          doctest::Approx(2.5 / 7));
    CHECK(read("User grabs fast food a couple of times a month").claims.at(0).frequency ==
          doctest::Approx(2.0 / 30));
    CHECK(both("User visits their grandmother every weekend",
               "User sees their grandmother once or twice a year")
              .conflict);
    CHECK(both("User goes running two to three times a week",
               "User goes running once or twice a month")
              .conflict);
    CHECK(both("User grabs a coffee every morning", "User has coffee about once a month").conflict);
    CHECK_FALSE(both("User visits their grandmother every weekend",
                     "User sees their grandmother every Sunday")
                    .conflict);
    CHECK_FALSE(both("User sees their friends every day", "User calls their friends once a month")
                    .conflict);
    CHECK_FALSE(
        both("User sees a therapist every week", "User's sister sees a therapist once a year")
            .conflict);
    CHECK_FALSE(
        both("User goes running two to three times a week", "User goes running three times a week")
            .conflict);
    CHECK_FALSE(
        both("User sees a dentist once or twice a year", "User visits the dentist twice a year")
            .conflict);
  }
}

TEST_CASE("claim judge: seventh round of issue 18 (orders, past states, rates per period)") {
  // Pairs written for this test, conflicts and look-alikes per rule; both directions must agree.
  auto both = [](const std::string& a, const std::string& b) {
    const auto v = judge(a, b), w = judge(b, a);
    CHECK(v.conflict == w.conflict);
    CHECK(v.reason == w.reason);
    return v;
  };
  SUBCASE("the rejected option of an order is no dislike; the reversed order conflicts") {
    // one may like both options: an order says only which comes first
    for (const auto& [x, y] : std::vector<std::pair<std::string, std::string>>{
             {"User prefers tea over coffee", "User likes coffee"},
             {"User would rather read than watch TV", "User enjoys watching TV"},
             {"User prefers trains to planes", "User likes planes"},
             {"比起米饭，用户更喜欢面条", "用户喜欢米饭"},
             {"用户更喜欢喝茶而不是咖啡", "用户喜欢喝咖啡"},
             {"用户喝咖啡多过喝茶", "用户爱喝茶"},
             {"用户看球更喜欢篮球，足球其次", "用户喜欢足球"}}) {
      const std::string a = x, b = y;  // (clang 14 captures no structured binding)
      CAPTURE(a);
      CAPTURE(b);
      const auto v = both(a, b);
      CHECK_FALSE(v.conflict);
      CHECK(v.reason == "preference_order");
      CHECK(mh::keeps_apart(v));  // two different things: never a near-duplicate merge
      CHECK_FALSE(mh::model_judge::left_open(v));  // a rule settled it
    }
    // the reversed order, and a denial of the preferred option
    for (const auto& [x, y] : std::vector<std::pair<std::string, std::string>>{
             {"User prefers tea over coffee", "User prefers coffee over tea"},
             {"User prefers tea over coffee", "User prefers coffee"},
             {"比起米饭，用户更喜欢面条", "比起面条，用户更喜欢米饭"},
             {"用户更喜欢喝茶而不是咖啡", "用户更喜欢喝咖啡而不是茶"},
             {"用户看球更喜欢篮球，足球其次", "比起篮球，用户更喜欢看足球"}}) {
      const std::string a = x, b = y;  // (clang 14 captures no structured binding)
      CAPTURE(a);
      CAPTURE(b);
      const auto v = both(a, b);
      CHECK(v.conflict);
      CHECK_FALSE(v.needs_human);
      CHECK(v.reason == "role_swap");
    }
    CHECK(both("User prefers tea over coffee", "User can't stand tea").reason ==
          "opposite_polarity");
    CHECK(both("比起米饭，用户更喜欢面条", "用户不喜欢面条").reason == "opposite_polarity");
    // a clause of 比起 alone: the user's rejected option, and the preferred one of the next
    const auto r = read("比起米饭，用户更喜欢面条。").claims;
    REQUIRE(r.size() == 2);
    CHECK(r[0].holder == "self");
    CHECK(r[0].polarity == -1);
    CHECK(r[0].order == -1);
    CHECK(r[0].terms == strings{"like", "米", "饭"});
    CHECK(r[1].holder == "self");
    CHECK(r[1].polarity == 1);
    CHECK(r[1].order == 1);
  }
  SUBCASE("a past value (以前, 原来, used to, previously, formerly) agrees with the current one") {
    for (const auto& [x, y] : std::vector<std::pair<std::string, std::string>>{
             {"用户以前住在上海，现在住在北京", "用户住在北京"},
             {"用户原来在银行上班，现在在学校上班", "用户在学校上班"},
             {"User used to live in Shanghai but now lives in Beijing", "User lives in Beijing"},
             {"User previously worked at Google and now works at Meta", "User works at Meta"},
             {"用户以前住在上海", "用户以前住在广州"},  // two past values
             {"用户曾经去过日本", "用户去年去了日本"},  // an experience, no past state
             {"用户过去三年住在上海", "用户住在上海"},  // a span, no past state
             {"User previously mentioned liking jazz", "User likes jazz"},  // a past report
             {"用户之前说喜欢爵士乐", "用户喜欢爵士乐"}}) {
      const std::string a = x, b = y;  // (clang 14 captures no structured binding)
      CAPTURE(a);
      CAPTURE(b);
      CHECK_FALSE(both(a, b).conflict);
    }
    // the old value stated as the current one
    for (const auto& [x, y] : std::vector<std::pair<std::string, std::string>>{
             {"用户以前住在上海，现在住在北京", "用户住在上海"},
             {"用户以前住在上海", "用户住在上海"},
             {"用户原来在银行上班", "用户在银行上班"},
             {"User formerly lived in Shanghai", "User lives in Shanghai"},
             {"User previously worked at Google and now works at Meta", "User works at Google"}}) {
      const std::string a = x, b = y;  // (clang 14 captures no structured binding)
      CAPTURE(a);
      CAPTURE(b);
      const auto v = both(a, b);
      CHECK(v.conflict);
      CHECK(v.reason == "change_statement");
    }
    const auto r = read("用户以前住在上海").claims;
    REQUIRE(r.size() == 1);
    CHECK(r[0].attribute == "residence");
    CHECK(r[0].polarity == -1);
    CHECK(r[0].change);
  }
  SUBCASE("amounts over periods are compared per day: one rate within 5 %, else a conflict") {
    // 5,000 a month = 166.7 a day, 60,000 a year = 164.4 (1.4 % apart); 5 km a day = 35 a week;
    // 300 a week = 42.9 a day, 1,290 a month = 43.0
    for (const auto& [x, y] : std::vector<std::pair<std::string, std::string>>{
             {"用户每个月存五千块", "用户一年存六万块"},
             {"User saves $500 a month", "User saves $6,000 a year"},
             {"The user's rent is 5000 yuan a month", "The user's rent is 60000 yuan a year"},
             {"用户每天跑五公里", "用户每周跑三十五公里"},
             {"用户每周花三百块买菜", "用户每个月花一千二百九十块买菜"}}) {
      const std::string a = x, b = y;  // (clang 14 captures no structured binding)
      CAPTURE(a);
      CAPTURE(b);
      const auto v = both(a, b);
      CHECK_FALSE(v.conflict);
      CHECK(v.reason == "same_rate");
    }
    // the same amount over another period, or another amount over the same period
    for (const auto& [x, y] : std::vector<std::pair<std::string, std::string>>{
             {"用户每月房租五千元", "用户每年房租五千元"},
             {"用户每月花三千元买衣服", "用户每年花三千元买衣服"},
             {"The user's rent is 5000 yuan a month", "The user's rent is 5000 yuan a year"},
             {"User saves $500 a month", "User saves $500 a year"},
             {"User spends $200 a week on groceries", "User spends $200 a month on groceries"},
             {"用户每个月存五千块", "用户每个月存八千块"}}) {
      const std::string a = x, b = y;  // (clang 14 captures no structured binding)
      CAPTURE(a);
      CAPTURE(b);
      const auto v = both(a, b);
      CHECK(v.conflict);
      CHECK_FALSE(v.needs_human);
      CHECK(v.reason == "degree");
      CHECK(mh::keeps_apart(v));
    }
    // a possessed attribute with an amount and a period carries both
    const auto rent = read("The user's rent is 5000 yuan a month").claims;
    REQUIRE(rent.size() == 1);
    CHECK(rent[0].attribute == "rent");
    CHECK(rent[0].value == strings{"5000", "per month", "yuan"});
    CHECK(rent[0].amount);
    CHECK(rent[0].frequency == doctest::Approx(5000.0 / 30));
    const auto zh = read("用户每月房租五千元").claims;
    REQUIRE(zh.size() == 1);
    CHECK(zh[0].amount);
    CHECK(zh[0].frequency == doctest::Approx(5000.0 / 30));
    CHECK(zh[0].terms == strings{"元", "房", "租"});  // no 每, no 月
    // a count of occasions is no amount
    CHECK_FALSE(read("User runs twice a week").claims.at(0).amount);
    CHECK_FALSE(read("User works six days a week").claims.at(0).amount);
  }
  SUBCASE("an end of having a thing against getting a new one of its kind") {
    CHECK_FALSE(both("User sold his car", "User bought a new car").conflict);
    CHECK_FALSE(both("用户把车卖了", "用户买了一辆新车").conflict);
    CHECK(both("User sold his car", "User drives his car to work every day").conflict);
    const auto v = both("User sold his car", "User bought a car last week");  // no "new": open
    CHECK(v.conflict);
    CHECK(v.needs_human);
  }
}

TEST_CASE("claim judge: eighth round of issue 18 (general rules, not phrases of the sets)") {
  // Pairs written for this test, one or more per rule, with look-alikes the rule must leave
  // alone; both directions must agree. None is a sentence of tests/data/judge_pairs.
  SUBCASE("an attitude toward taking a thing in, or toward its taste, is one toward the thing") {
    conflicts({{"User loves listening to heavy metal", "User can't stand heavy metal"},
               {"Nina hates eating olives", "Nina adores olives"},
               {"User dislikes the smell of coffee", "User loves coffee"},
               {"阿明讨厌喝啤酒", "阿明特别爱啤酒"}});
    // cooking is no way of taking fish in; the smell of coffee is not tea
    no_conflicts({{"User hates cooking fish", "User loves fish"},
                  {"User hates the smell of coffee", "User loves tea"}});
  }
  SUBCASE("a favourite is a liking of its value") {
    conflicts({{"User detests beetroot", "Beetroot is the user's favourite vegetable"}});
    no_conflicts({{"User hates mushrooms", "My favourite food is pasta"}});
  }
  SUBCASE("a Chinese degree adverb before an attitude is no term") {
    conflicts({{"用户喜欢爬山", "用户最讨厌爬山"}});
    no_conflicts({{"用户最近喜欢爬山", "用户喜欢游泳"}});  // 最近 "recently" keeps its characters
  }
  SUBCASE("a change naming what it replaced with \"instead of\"") {
    const auto v =
        both("User drives to the office", "User now walks to the office instead of driving");
    CHECK(v.conflict);
    CHECK(v.reason == "change_statement");
    no_conflicts({{"User drives to the office", "User now also walks to the office"}});
  }
  SUBCASE("a temporal clause before an -ing verb is no part of the object") {
    conflicts({{"User owns a sailing boat", "User sold the sailing boat after retiring"}});
    const auto c = read("User sold the sailing boat after retiring").claims.at(0);
    CHECK(c.object == strings{"boat", "sail"});
  }
  SUBCASE("a pseudo-cleft and an experiencer-object verb are the holder's attitude") {
    conflicts({{"Tea is something the user avoids", "User drinks tea every morning"},
               {"Cats are what Priya loves", "Priya hates cats"},
               {"Loud music irritates the user", "User loves loud music"}});
    // the experiencer is someone else
    no_conflicts({{"Loud music irritates the user's sister", "User loves loud music"}});
  }
  SUBCASE("a bad-outcome adjunct neither negates nor adds") {
    conflicts(
        {{"User is allergic to peanuts", "User eats peanut butter every day without any problem"},
         // "without sugar" is still a denial of sugar
         {"User drinks coffee without sugar", "User takes two spoons of sugar in coffee"}});
    no_conflicts({{"User drinks coffee without sugar", "User drinks tea"}});
  }
  SUBCASE("spending under a bill or budget name; rates per day") {
    // $50 a week is $7.14 a day, $600 a month $19.7: apart; $215 a month is $7.07 (within 5 %)
    conflicts(
        {{"User spends about $50 a week on petrol", "User's petrol bill is around $600 a month"}});
    no_conflicts(
        {{"User spends about $50 a week on petrol", "User's petrol bill is around $215 a month"},
         {"User spends about $50 a week on petrol", "User's phone bill is around $600 a month"}});
  }
  SUBCASE("hedged negation, bounds and weekly routines are degrees") {
    conflicts({{"用户每周健身五次", "用户基本不健身"},            // 5/7 a day against almost never
               {"用户每天睡八个小时", "用户一天睡不到五个小时"},  // 8 hours against under 5
               {"User swims every day", "User only swims on Sundays"}});
    // without "only", Sundays is one occasion among others
    no_conflicts({{"User swims every day", "User swims on Sundays with friends"}});
  }
  SUBCASE("attributes: a year written digit by digit, 是X的员工, WordNet ending verbs") {
    // thirty in 2026 is born 1995 or 1996, not 1980
    conflicts({{"小王今年三十岁", "小王是一九八零年出生的"},
               {"小张在阿里巴巴工作", "小张是字节跳动的员工"},
               {"User discontinued the yoga classes", "User goes to yoga classes every week"}});
  }
}

TEST_CASE("claim judge: a tester's ninth round (hedges, questions, neither/nor, two holders)") {
  // each pair is judged in both orders; a conflict must be found (or not) either way
  auto both = [](const std::string& a, const std::string& b) {
    const bool ab = judge(a, b).conflict, ba = judge(b, a).conflict;
    CHECK_MESSAGE(ab == ba, a << " / " << b);
    return ab && ba;
  };
  SUBCASE("questions and hedged statements assert nothing") {
    for (const char* hedged :
         {"Does the user like cats?", "User might like cats", "Maybe the user likes cats",
          "Perhaps the user likes cats", "User could like cats", "用户喜欢猫吗？", "用户喜欢猫吗",
          "用户可能喜欢猫", "用户也许喜欢猫", "用户或许喜欢猫", "用户好像喜欢猫",
          "用户似乎喜欢猫"}) {
      const auto r = read(hedged);
      REQUIRE_MESSAGE(!r.claims.empty(), hedged);
      CHECK_MESSAGE(r.claims[0].uncertain, hedged);
      CHECK_MESSAGE(r.claims[0].holder == "self", hedged);  // "Maybe" is no name
      CHECK_MESSAGE(!both(hedged, "User doesn't like cats"), hedged);
      CHECK_MESSAGE(!both(hedged, "用户不喜欢猫"), hedged);
    }
    CHECK(!both("User may be allergic to nuts", "User is not allergic to nuts"));
    CHECK(!both("The user possibly lives in Lyon", "User lives in Paris"));
    // a hedge is the clause's own: the clause before it is still asserted
    const auto mixed = read("User likes tea but might like coffee");
    REQUIRE(mixed.claims.size() == 2);
    CHECK(!mixed.claims[0].uncertain);
    CHECK(mixed.claims[1].uncertain);
    CHECK(both("User likes tea but might like coffee", "User doesn't like tea"));
    CHECK(!both("User likes tea but might like coffee", "User doesn't like coffee"));
    // 也 of 也许 is no "also", 像 of 好像 no term
    CHECK(!read("用户也许喜欢猫").claims[0].additive);
    CHECK(read("用户好像喜欢猫").claims[0].terms == strings{"like", "猫"});
    // "probably" is deliberately no hedge: the writer's belief still disagrees with a denial
    CHECK(both("User probably likes jazz", "User doesn't like jazz"));
    // look-alikes that stay as they were
    CHECK(both("User likes cats", "User doesn't like cats"));
    CHECK(both("用户不可能喜欢猫", "用户喜欢猫"));  // 不可能: cannot, a denial
    CHECK(both("User could not eat spicy food", "User eats spicy food"));  // past inability
    CHECK(both("User graduated from UCLA last May", "User never graduated from UCLA"));
    CHECK(both("Kenji calls his mother every Sunday",  // "maybe twice a year": an amount
               "Kenji rarely calls his mother, maybe twice a year"));
    const auto guest = read("User may bring a guest");  // no liking, only hedged
    REQUIRE(guest.claims.size() == 1);
    CHECK(guest.claims[0].predicate == "bring");
    CHECK(guest.claims[0].kind != mh::predicate_class::preference);
    CHECK(guest.claims[0].uncertain);
    CHECK(!read("User's birthday is in May").claims[0].uncertain);
    CHECK(!read("User flew to Tokyo on May 2").claims[0].uncertain);
  }
  SUBCASE("neither/nor, 不X也不Y, X not Y, it is not true that") {
    CHECK(both("User likes neither tea nor coffee", "User likes tea"));
    CHECK(both("User likes neither tea nor coffee", "User likes coffee"));
    CHECK(!both("User likes neither tea nor coffee", "User doesn't like tea"));
    CHECK(both("User is neither rich nor famous", "User is famous"));
    CHECK(both("用户既不喜欢茶也不喜欢咖啡", "用户喜欢咖啡"));
    CHECK(both("用户不喜欢茶也不喜欢咖啡", "用户喜欢咖啡"));
    CHECK(both("用户不喜欢茶也不喜欢咖啡", "用户喜欢茶"));
    const auto order = read("用户宁可喝茶也不喝咖啡");  // still an order of preference
    REQUIRE(order.claims.size() == 2);
    CHECK(order.claims[0].order == 1);
    CHECK(order.claims[1].order == -1);
    for (const char* contrast : {"User likes tea, not coffee", "User likes tea not coffee",
                                 "User likes tea but not coffee"}) {
      CHECK_MESSAGE(both(contrast, "User likes coffee"), contrast);
      CHECK_MESSAGE(!both(contrast, "User likes tea"), contrast);
      CHECK_MESSAGE(both(contrast, "User hates tea"), contrast);
    }
    CHECK(both("It is not true that the user likes tea", "User likes tea"));
    CHECK(both("It's not the case that the user likes tea", "User likes tea"));
    CHECK(read("It is not true that the user likes tea").claims[0].holder == "self");
    // a denied denial is not the opposite: "not true that the user hates tea" is no liking
    CHECK(!both("It is not true that the user hates tea", "User hates tea"));
    // look-alikes that stay as they were
    CHECK(both("User doesn't like tea or coffee", "User likes coffee"));
    CHECK(both("User doesn't like tea or coffee", "User likes tea"));
    CHECK(!both("User prefers not to drive", "User prefers to walk"));
  }
  SUBCASE("two holders in one statement") {
    const auto r = read("User's wife loves sushi and the user hates it");
    REQUIRE(r.claims.size() == 2);
    CHECK(r.claims[0].holder == "rel:wife");
    CHECK(r.claims[1].holder == "self");
    CHECK(r.claims[1].polarity == -1);
    CHECK(r.claims[1].terms == strings{"like", "sushi"});  // "it" is the sushi
    CHECK(both("User's wife loves sushi and the user hates it", "User loves sushi"));
    CHECK(!both("User's wife loves sushi and the user hates it", "User hates sushi"));
    CHECK(!both("User's wife loves sushi and the user hates it", "User's wife loves sushi"));
    CHECK(both("User's wife loves sushi and the user hates it", "User's wife hates sushi"));
    CHECK(both("用户的老婆喜欢寿司，用户讨厌寿司", "用户喜欢寿司"));
    CHECK(!both("用户的老婆喜欢寿司，用户讨厌寿司", "用户讨厌寿司"));
    // a shared subject stays one clause; a statement about another holder alone still differs
    const auto shared = read("User's wife and the user like sushi");
    CHECK(shared.claims.size() == 1);
    CHECK(!both("User's wife loves sushi", "User hates sushi"));
    CHECK(read("User likes tea and the user's wife likes coffee").claims.size() == 2);
    CHECK(read("User enjoys cooking and his wife's recipes").claims.size() == 1);
  }
  SUBCASE("full-width letters and zero-width characters are read as NFKC folds them") {
    // "Ｕｓｅｒ ｌｉｋｅｓ ｔｅａ" (U+FF35 ...) and "li<U+200B>kes"
    const std::string wide =
        "\xEF\xBC\xB5\xEF\xBD\x93\xEF\xBD\x85\xEF\xBD\x92 "
        "\xEF\xBD\x8C\xEF\xBD\x89\xEF\xBD\x8B\xEF\xBD\x85\xEF\xBD\x93 "
        "\xEF\xBD\x94\xEF\xBD\x85\xEF\xBD\x81";
    const std::string zero_width = "User li\xE2\x80\x8Bkes tea";
    for (const std::string& text : {wide, zero_width}) {
      const auto r = read(text);
      CHECK(r.lang == "en");
      REQUIRE(r.claims.size() == 1);
      CHECK(r.claims[0].holder == "self");
      CHECK(r.claims[0].terms == strings{"like", "tea"});
      CHECK(both(text, "User doesn't like tea"));
    }
    // full-width punctuation still splits Chinese clauses; a zero-width space after it is dropped
    const auto zh = read("用户喜欢猫，\xE2\x80\x8B不喜欢狗");
    REQUIRE(zh.claims.size() == 2);
    CHECK(zh.claims[1].polarity == -1);
    CHECK(zh.claims[1].terms == strings{"like", "狗"});
  }
}

TEST_CASE("claim judge: scene sentences and the scope of a negation (issue 18, SICK round)") {
  // Sentences written for this test (none is a SICK sentence), one or more per rule, with
  // look-alikes the rule must leave alone; both directions must agree.
  auto both = [](const std::string& a, const std::string& b) {
    const auto v = judge(a, b), w = judge(b, a);
    CHECK(v.conflict == w.conflict);
    return v;
  };
  SUBCASE("\"and there is ...\" and \"and <noun phrase> is ...\" begin a clause") {
    const auto r = read("There is no cook frying eggs and there is no other cook boiling rice");
    REQUIRE(r.claims.size() == 2);
    CHECK(r.claims[0].polarity == -1);
    CHECK(r.claims[1].polarity == -1);  // (the second "no" no longer undoes the first)
    CHECK(r.claims[1].predicate == "boil");
    const auto s = read("A girl is painting and two boys are watching her");
    REQUIRE(s.claims.size() == 2);
    CHECK(s.claims[0].subject == strings{"girl"});
    CHECK(s.claims[1].subject == strings{"boy"});
    CHECK(s.claims[1].predicate == "watch");
    CHECK(both("A chef is slicing bread and a waiter is pouring wine",
               "There is no chef slicing bread and there is no waiter pouring wine")
              .conflict);
  }
  SUBCASE("the noun phrase of \"there is no\" is the subject, the participle the predicate") {
    const auto r = read("There is no woman riding a horse");
    REQUIRE(r.claims.size() == 1);
    CHECK(r.claims[0].polarity == -1);
    CHECK(r.claims[0].subject == strings{"woman"});
    CHECK(r.claims[0].predicate == "ride");
    CHECK(r.claims[0].object == strings{"horse"});
    // (past a manner adverb)
    const auto s = read("There is no cat quietly sleeping on the sofa");
    REQUIRE(s.claims.size() == 1);
    CHECK(s.claims[0].subject == strings{"cat"});
    CHECK(s.claims[0].predicate == "sleep");
    CHECK(both("There is no cat quietly sleeping on the sofa", "A cat is sleeping on the sofa")
              .conflict);
  }
  SUBCASE("a plural subject without a determiner; \"several\" is no name and no term") {
    const auto r = read("Students are not reading books");
    REQUIRE(r.claims.size() == 1);
    CHECK(r.claims[0].holder.empty());
    CHECK(r.claims[0].subject == strings{"student"});
    CHECK(r.claims[0].predicate == "read");
    const auto s = read("Several children are flying kites");
    REQUIRE(s.claims.size() == 1);
    CHECK(s.claims[0].holder.empty());  // (was "name:several")
    CHECK(s.claims[0].subject == strings{"child"});
    CHECK(s.claims[0].terms == strings{"child", "fly", "kite"});
    CHECK(both("Several children are not flying kites", "Some children are flying kites").conflict);
    CHECK_FALSE(both("Students are not reading books", "Two teachers are reading books").conflict);
  }
  SUBCASE("an auxiliary ends a subject of stop words only") {
    const auto r = read("Someone is washing a car");
    REQUIRE(r.claims.size() == 1);
    CHECK(r.claims[0].subject.empty());
    CHECK(r.claims[0].predicate == "wash");
  }
  SUBCASE("\"kick the\" ends something only in \"kick the habit\"") {
    const auto r = read("A boy is kicking the ball");
    REQUIRE(r.claims.size() == 1);
    CHECK(r.claims[0].polarity == 1);
    CHECK_FALSE(r.claims[0].any_predicate);
    CHECK(r.claims[0].predicate == "kick");
    const auto v = both("A boy is kicking the ball", "A boy is not kicking the ball");
    CHECK(v.conflict);
    CHECK(v.reason == "opposite_polarity");  // (was change_statement)
    const auto s = read("User kicked the habit");
    REQUIRE(s.claims.size() == 1);
    CHECK(s.claims[0].any_predicate);
    CHECK(s.claims[0].change);
  }
  SUBCASE("a path preposition is no content term") {
    CHECK(both("A horse is not running towards the barn",
               "A horse is running in a field and is approaching the barn")
              .conflict);
  }
  SUBCASE("a measure the other side does not name is no part of a denial") {
    CHECK(both("There is no girl drinking a glass of milk", "A girl is drinking milk").conflict);
    CHECK_FALSE(
        both("There is no girl drinking a glass of milk", "A girl is drinking juice").conflict);
  }
  SUBCASE("\"used to\" after be or get is the passive or \"accustomed\", not a past state") {
    const auto r = read("A rope is being used to tie a boat");
    REQUIRE(r.claims.size() == 1);
    CHECK(r.claims[0].polarity == 1);
    CHECK_FALSE(r.claims[0].change);
    CHECK(
        both("A rope is being used to tie a boat", "No rope is being used to tie a boat").conflict);
    CHECK_FALSE(
        both("The user's sister is used to cold showers", "The user's sister takes cold showers")
            .conflict);
    const auto s = read("User used to live in Oslo");  // (still a past state)
    REQUIRE(s.claims.size() == 1);
    CHECK(s.claims[0].polarity == -1);
    CHECK(s.claims[0].change);
  }
  SUBCASE("a negated verb with coordinated objects denies each, not two verb phrases") {
    CHECK(both("Priya doesn't eat mushrooms or olives", "Priya eats olives").conflict);
    CHECK_FALSE(both("Priya doesn't eat mushrooms or olives", "Priya eats tomatoes").conflict);
    CHECK_FALSE(
        both("There is no boy painting a fence and eating cake", "A boy is painting a fence")
            .conflict);
  }
}

TEST_CASE("claim judge: tenth round of issue 18 (colours, orders, any-kind denials, durations)") {
  // Pairs written for this test, one or more per rule, with look-alikes the rule must leave
  // alone; both directions must agree. None is a sentence of tests/data/judge_pairs.
  SUBCASE("a colour and a make or kind are two aspects of one thing") {
    no_conflicts({{"The user's van is green", "The user's van is a Ford Transit"},
                  {"User's bike is red", "User's bike is a road bike"},
                  {"小赵的自行车是红色的", "小赵的自行车是一辆捷安特"}});
    CHECK(both("The user's van is green", "The user's van is a Ford Transit").reason ==
          "different_aspect");
    // two colours, two makes, and a favourite whose value is also a colour's name still differ
    conflicts({{"User's bike is red", "User's bike is green"},
               {"用户的包是红色的", "用户的包是蓝色的"},
               {"User's favourite fruit is orange", "User's favourite fruit is mango"}});
  }
  SUBCASE("a Chinese relative before 是 + a blood group holds it") {
    no_conflicts({{"我是AB型血", "我爸爸是O型血"}, {"小赵是A型血", "小赵的哥哥是B型血"}});
    CHECK(read("我爸爸是O型血").claims.front().holder == "rel:爸爸");
    conflicts({{"我爸爸是O型血", "我爸爸是A型血"}, {"用户是A型血", "用户是O型血"}});
  }
  SUBCASE("a purpose or role after both options qualifies the whole order") {
    conflicts({{"User prefers loafers over sandals for the office",
                "User prefers sandals over loafers for the office"},
               {"User would pick a kayak over a canoe as a first boat",
                "User would pick a canoe over a kayak as a first boat"}});
    // the rejected option is no dislike; another purpose is another order
    no_conflicts({{"User prefers loafers over sandals for the office", "User likes sandals"},
                  {"User prefers loafers over sandals for the office",
                   "User prefers loafers over sandals for hiking"}});
  }
  SUBCASE("a Chinese denial of 任何X denies the kind X") {
    conflicts({{"老周不喝任何酒", "老周每天喝啤酒"}, {"小赵没有任何保险", "小赵有车险"}});
    no_conflicts({{"老周不喝任何酒", "老周每天喝茶"}, {"小赵没有任何宠物", "小赵养了一只猫"}});
  }
  SUBCASE("occasional and frequent are frequencies; a measure under a rate is an amount") {
    conflicts({{"Omar drinks a bottle a night", "Omar drinks the occasional beer"},
               {"User is a frequent flyer", "User rarely flies"}});
    no_conflicts(
        {{"User has the occasional glass of wine", "User occasionally has a glass of wine"}});
  }
  SUBCASE("a length of time is the value of the attribute it is stated for") {
    CHECK(read("User's lunch break lasts an hour and a half").claims.front().value ==
          strings{"90 min"});
    CHECK(read("User's commute takes over an hour").claims.front().value == strings{"60 min"});
    conflicts({{"User's lunch break is 20 minutes", "User's lunch break lasts an hour and a half"},
               {"User's commute is half an hour", "User's commute takes two hours"}});
    // less than twice as long, and a wage per hour, are no conflict
    no_conflicts({{"User's lunch break is 45 minutes", "User's lunch break takes about an hour"},
                  {"User's commute is 20 minutes", "User's commute is 25 minutes"},
                  {"User earns $20 an hour", "User's commute is an hour"}});
  }
  SUBCASE("'X is the holder's preferred / go-to kind over Y' is an order") {
    conflicts(
        {{"Autumn is the user's preferred season over spring", "The user prefers spring to autumn"},
         {"Kotlin is the user's go-to language", "User prefers Swift over Kotlin"}});
    no_conflicts({{"Autumn is the user's preferred season over spring", "User likes spring"},
                  {"Kotlin is the user's go-to language", "User also likes Swift"},
                  {"User swims over the summer", "User prefers running over swimming"}});
  }
  SUBCASE("Chinese X多于Y after a verb of liking or valuing is an order") {
    conflicts({{"小赵买车看重油耗多于外观", "小赵买车看重外观多于油耗"},
               {"老周偏爱白茶多于普洱", "老周偏爱普洱多于白茶"}});
    no_conflicts({{"老周偏爱白茶多于普洱", "老周也喜欢普洱"}});
    // two amounts compared are no liking
    CHECK(read("小赵的存款多于负债").claims.front().predicate != "like");
  }
  SUBCASE("a dated body measure is a past value") {
    no_conflicts({{"Lena weighed 70 kg in March", "Lena weighs 64 kg"},
                  {"User weighed 95 kg two years ago", "User weighs 80 kg"}});
    conflicts({{"Lena weighs 70 kg", "Lena weighs 64 kg"},
               {"User is 1.90 m tall", "User is 5 ft 3 in tall"}});
  }
  SUBCASE("a time word that is what an attitude or order is toward is no time") {
    conflicts({{"User prefers autumn to spring", "User prefers spring to autumn"},
               {"Dana likes mornings better than evenings", "Dana prefers evenings to mornings"},
               {"User loves winter", "User hates winter"}});
    // after a preposition it is a time; a rejected option is no dislike
    no_conflicts({{"User swims in summer", "User hates swimming in winter"},
                  {"User prefers tea in winter", "User prefers coffee in summer"},
                  {"User prefers autumn to spring", "User likes spring"}});
  }
}

TEST_CASE("claim judge: a recall round of issue 18 on set K's weakest categories") {
  // Pairs written for this test, one or more per rule, with look-alikes the rule must leave
  // alone; both directions must agree. None is a sentence of tests/data/judge_pairs. Every
  // conflict below was missed by the rules before this round.
  SUBCASE("a verb of taking one option orders it over the other ('over', 'rather than')") {
    conflicts(
        {{"User goes for window seats over aisle seats",
          "User prefers aisle seats to window seats"},
         {"Ben grabs green tea rather than black tea", "Ben picks black tea over green tea"}});
    // the rejected option is no dislike; a verb of taking without a second option is no order
    no_conflicts({{"User goes for window seats over aisle seats", "User likes aisle seats"},
                  {"User goes for walks in the park", "User prefers the beach to the park"}});
  }
  SUBCASE("'any day (of the week)' after a choice says nothing more") {
    conflicts({{"User would take the ferry over flying any day of the week",
                "User prefers flying to the ferry"}});
    no_conflicts(
        {{"User would take the ferry over flying any day of the week", "User flies on weekends"}});
  }
  SUBCASE("being raised in a place names the hometown") {
    conflicts({{"User was raised in Leeds", "User's hometown is York"}});
    no_conflicts({{"User was raised in Leeds", "User's hometown is Leeds"}});
  }
  SUBCASE("a judgement that one option is better than another is an order") {
    conflicts({{"User thinks trains are better than planes", "User prefers planes to trains"},
               {"User finds tea preferable to coffee", "User prefers coffee over tea"},
               {"Ana thinks Lisbon beats Porto", "Ana prefers Porto to Lisbon"}});
    no_conflicts({{"User thinks trains are better than planes", "User likes planes"}});
  }
  SUBCASE("'Between A and B, the holder likes B more' orders B over A") {
    conflicts({{"Between cats and dogs, the user likes dogs more", "User prefers cats to dogs"}});
    no_conflicts({{"Between cats and dogs, the user likes dogs more", "User likes cats"}});
  }
  SUBCASE("Chinese 首选X，其次才是Y and Y排在后面 are orders") {
    conflicts({{"用户喝咖啡首选拿铁，其次才是美式", "用户更喜欢美式，拿铁其次"}});
    no_conflicts({{"用户喝咖啡首选拿铁，其次才是美式", "用户也喜欢美式"}});
  }
  SUBCASE("a relative clause after a trait idiom read as a verb phrase is another clause") {
    conflicts({{"Sam is a night owl who writes until 3 am", "Sam is a morning person"}});
    no_conflicts({{"Sam is a night owl who writes until 3 am", "Sam writes every night"}});
  }
  SUBCASE("idioms of spending and eating") {
    conflicts({{"Kim is a fussy eater", "Kim will eat anything"},
               {"Kim is a penny-pincher", "Kim is a big spender"}});
    no_conflicts({{"Kim is a fussy eater", "Kim eats sushi"},
                  {"Kim is a big spender", "Kim spends a lot on books"}});
  }
  SUBCASE("the end of an engagement or a marriage denies the marital status") {
    conflicts({{"Leah is engaged to Omar", "Leah called off her engagement to Omar"},
               {"User is married to Paul", "User divorced Paul in 2019"}});
    no_conflicts({{"Leah is engaged to Omar", "Leah called off the meeting with Omar"}});
  }
  SUBCASE("Chinese 是X人 is the hometown 老家 names") {
    conflicts({{"小赵的老家在江西", "小赵是福建人"}, {"用户是河北保定人", "用户老家在广西"}});
    // the same place, and a kind of person after a classifier, are no second hometown
    no_conflicts({{"小赵的老家在江西", "小赵是江西人"}, {"用户是个好人", "用户老家在广西"}});
  }
  SUBCASE("并不 and 并非 are negators") {
    conflicts({{"用户喜欢猫", "用户并不喜欢猫"}});
    no_conflicts({{"用户喜欢猫", "用户并不喜欢狗"}});
  }
  SUBCASE("'stands 5 ft 4 in' is a height") {
    conflicts({{"Omar stands 5 ft 4 in", "Omar is 1.90 m tall"}});
    no_conflicts({{"Omar stands 6 ft 2 in", "Omar is 188 cm tall"}});
  }
  SUBCASE("a Chinese zodiac sign against a year of birth") {
    // 1995 is a pig year, 1994 a dog year: no tiger; 1998 is a tiger year, and a birth in
    // January 1998 may be of the ox year 1997
    conflicts({{"用户属虎", "用户是1995年出生的"}});
    no_conflicts({{"用户属虎", "用户是1998年出生的"}, {"用户属牛", "用户是1998年出生的"}});
  }
  SUBCASE("Chinese jobs: occupations by their head, 在一家X做Y, 调到, 转行, resignations") {
    conflicts({{"小赵是一名小学数学老师", "小赵辞去了教职，现在做翻译"},
               {"用户在广州上班", "用户今年调到了杭州分公司"},
               {"老周是厨师", "老周转行做了快递员"},
               {"小赵在一家律所做助理", "小赵已经辞职了"}});
    no_conflicts({{"用户在广州上班", "用户把空调调到了二十六度"},
                  {"用户在家做饭", "用户在广州上班"},
                  {"小赵是一名小学数学老师", "小赵的妻子辞职了"}});
  }
  SUBCASE("more judgements of liking and disliking") {
    conflicts({{"User finds opera insufferable", "User is a big fan of opera"},
               {"User thinks golf is a waste of time", "User loves golf"},
               {"User finds the banking app intuitive", "User finds the banking app clunky"}});
    no_conflicts({{"User finds opera insufferable", "User loves jazz"}});
  }
  SUBCASE("a light verb's object that is what another verb takes in names that act") {
    conflicts({{"Tom smokes every day", "Tom has the odd cigar at parties"},
               {"Tom drinks every night", "Tom has a glass of wine once a month"}});
    // a cookie is no tobacco; coffee is not the wine
    no_conflicts({{"Tom smokes every day", "Tom has the odd cookie at parties"},
                  {"Tom drinks coffee every morning", "Tom has a glass of wine once a month"}});
  }
  SUBCASE("not eating a thing is denied by any taking of it in, and work out is exercise") {
    conflicts({{"Mia never eats candy", "Mia grabs candy a few times a week"},
               {"User rarely exercises", "User works out five days a week"}});
    no_conflicts({{"Mia never eats candy", "Mia buys candy for her nephew every week"},
                  {"User rarely exercises", "User works at home five days a week"}});
  }
  SUBCASE("endings: a lapse, being taken off a thing, a trade-in, an uninstall") {
    conflicts({{"User is a member of the chess club", "User let the chess club membership lapse"},
               {"User takes ibuprofen daily", "User's doctor took her off ibuprofen"},
               {"User drives a Toyota Prius", "User traded in the Prius for a scooter"},
               {"User plays Minecraft", "User uninstalled Minecraft"}});
    no_conflicts({{"User takes ibuprofen daily", "User's doctor took her off the waiting list"},
                  {"User drives a Toyota Prius", "User traded in the Civic for a scooter"}});
  }
  SUBCASE("having no thing against owning it, and 'yet'") {
    conflicts(
        {{"User owns a bicycle", "User has no bicycle"},
         {"The user's daughter can ride a bike", "The user's daughter can't ride a bike yet"}});
    no_conflicts({{"User owns a bicycle", "User has no car"}});
  }
  SUBCASE("Chinese attitudes 欣赏/看不惯, 无聊/有意思 and antonyms 满意/失望") {
    conflicts({{"小赵很欣赏他的新同事", "小赵很看不惯他的新同事"},
               {"用户觉得下棋很无聊", "用户觉得下棋很有意思"},
               {"用户对新租的房子很满意", "用户对新租的房子很失望"}});
    no_conflicts({{"用户觉得下棋很无聊", "用户觉得画画很有意思"},
                  {"用户对新租的房子很满意", "用户对新买的车很失望"}});
  }
}

TEST_CASE("claim judge: labelled memory-statement pairs (tests/data/judge_pairs)") {
  MEMHEALTH_TEST_DATA(path, "judge_pairs/pairs.tsv");
  const auto rows = memhealth::test::read_tsv_rows(path);
  REQUIRE(rows.size() == 275);
  auto results = judge_pair_file(rows);
  auto& by = results.by;
  CHECK(results.asymmetric == 0);
  // measured 2026-12-06 (issue 18, third round; this set was not tuned on in that round): tp
  // 104 fp 0 fn 27 tn 128 (precision 1.0, recall 0.79; en 0.78, zh 0.81); 2026-12-05: tp 102
  // (recall 0.78); before issue 18's recall work: tp 88 (0.67); the cue judge before the claim
  // judge: tp 24 fp 8 (precision 0.75, recall 0.18); after the fifth round (2026-12-06): tp 108
  // fp 0 fn 23 (recall 0.82; en 68/83, zh 40/48); after the sixth (2026-12-07): tp 110 fp 0 fn 21
  // (recall 0.840; en 69/83, zh 41/48; single_value 20/24 -> 21/24, degree_quantity 17/25 -> 18/25)
  // after the tenth (2026-12-07): tp 111 fp 0 fn 20 (recall 0.847; en 69/83, zh 42/48;
  // negation 23/25: 有房贷 / 没有任何贷款); after the recall round on set K's weakest categories
  // (2026-12-07, branch judge12): tp 114 fp 0 fn 17 (recall 0.870; en 71/83, zh 43/48)
  CHECK(by["all"].precision() >= 0.97);
  CHECK(by["all"].recall() >= 0.87);
  CHECK(by["en"].recall() >= 0.83);
  CHECK(by["zh"].recall() >= 0.87);
  // per category (recall of the conflict categories, measured 2026-12-06 after the fifth
  // round): antonym 19/23, change_statement 21/25, degree_quantity 17/25, negation 22/25,
  // single_value 20/24, role_swap 9/9
  CHECK(by["antonym/conflict"].recall() >= 0.78);
  CHECK(by["change_statement/conflict"].recall() >= 0.83);
  CHECK(by["degree_quantity/conflict"].recall() >= 0.68);
  CHECK(by["negation/conflict"].recall() >= 0.92);
  CHECK(by["single_value/conflict"].recall() >= 0.83);
  CHECK(by["role_swap/conflict"].recall() >= 1.0);
  // look-alikes that are no conflict are never called one
  for (const char* k :
       {"different_holder/no_conflict", "additive/no_conflict", "agreeing_negation/no_conflict",
        "scene/no_conflict", "role_swap/no_conflict", "different_object/no_conflict"}) {
    CAPTURE(k);
    CHECK(by[k].fp == 0);
  }
}

TEST_CASE("claim judge: development pairs (tests/data/judge_pairs/dev_pairs.tsv)") {
  MEMHEALTH_TEST_DATA(path, "judge_pairs/dev_pairs.tsv");
  const auto rows = memhealth::test::read_tsv_rows(path);
  REQUIRE(rows.size() == 159);
  auto results = judge_pair_file(rows);
  auto& by = results.by;
  CHECK(results.asymmetric == 0);
  // measured 2026-12-05: tp 84 fp 0 fn 0 tn 67 (precision 1.0, recall 1.0); before issue 18's
  // recall work: tp 68 fp 0 fn 16 (recall 0.81). A development set written beside the rules:
  // its figures are optimistic.
  CHECK(by["all"].precision() >= 0.97);
  CHECK(by["all"].recall() >= 0.95);
  CHECK(by["zh"].recall() >= 0.95);
  for (const char* k :
       {"different_holder/no_conflict", "additive/no_conflict", "agreeing_negation/no_conflict",
        "scene/no_conflict", "role_swap/no_conflict", "different_object/no_conflict",
        "different_attribute/no_conflict", "paraphrase/no_conflict"}) {
    CAPTURE(k);
    CHECK(by[k].fp == 0);
  }
}

TEST_CASE("claim judge: development set C (tests/data/judge_pairs/dev_pairs_c.tsv)") {
  MEMHEALTH_TEST_DATA(path, "judge_pairs/dev_pairs_c.tsv");
  const auto rows = memhealth::test::read_tsv_rows(path);
  REQUIRE(rows.size() == 260);
  auto results = judge_pair_file(rows);
  auto& by = results.by;
  CHECK(results.asymmetric == 0);
  // measured 2026-12-06 before the third round of recall work: tp 81 fp 2 fn 79 tn 88
  // (precision 0.976, recall 0.506); after it (tuned on this set, so optimistic): tp 119 fp 0
  // fn 41 tn 90 (precision 1.0, recall 0.744; en 0.73, zh 0.77); with the larger WordNet
  // lexicon (minor nouns, multiword nouns: shellfish / lobster, musical instrument / piano,
  // sweet tooth / desserts): tp 122 fp 0 fn 38 (recall 0.762; en 0.76); with trait idioms
  // before a "who" clause and online services of a kind: tp 124 fp 0 fn 36 (recall 0.775); after
  // the fifth round (2026-12-06): tp 133 fp 0 fn 27 (recall 0.831; en 78/96, zh 55/64); after
  // the seventh (2026-12-07): tp 132 (recall 0.825; zh 54/64): c-zh-rsw-004 "小陈爱吃米饭，面食吃
  // 得少" / "比起米饭，小陈更偏爱面条" was found as liking rice against rice the rejected option,
  // which is no conflict now (its conflict is 面食吃得少, which the reader does not take)
  // after the tenth (2026-12-07): tp 133 fp 0 fn 27 (recall 0.831; en 78/96, zh 55/64); after
  // the recall round on set K's weakest categories (2026-12-07, branch judge12): tp 134 fp 0 fn 26
  // (recall 0.838; en 79/96)
  CHECK(by["all"].precision() >= 0.97);
  CHECK(by["all"].recall() >= 0.83);
  CHECK(by["en"].recall() >= 0.81);
  CHECK(by["zh"].recall() >= 0.85);
  for (const char* k :
       {"different_holder/no_conflict", "additive/no_conflict", "agreeing_negation/no_conflict",
        "scene/no_conflict", "role_swap/no_conflict", "different_object/no_conflict",
        "different_attribute/no_conflict", "paraphrase/no_conflict",
        "date_time_differs/no_conflict"}) {
    CAPTURE(k);
    CHECK(by[k].fp == 0);
  }
}

// The held-out sets C-L (judge_pairs/heldout_*.tsv), each written by someone who had seen
// neither the judge nor the other sets, kept as regression sets once measured. Each row: the file,
// its pair count, and the least precision and recall (all, English, Chinese; 0 = not checked) and
// the most false positives the judge has shown on it since its last round. The measurements
// before and after each round (tp fp fn per set and category) are in judge_pairs/README.md.
struct held_out_set {
  const char* file;
  std::size_t rows;
  double precision, recall, en_recall, zh_recall;
  std::size_t max_fp;
};
constexpr held_out_set held_out_sets[] = {
    // "round K" below: the recall round worked out on the misses of all these sets, set K's weakest
    // categories first (2026-12-07, branch judge12); no set is held out after it.
    // C: 2026-12-06, 66 tp before the third round's successor rounds; after the tenth tp 92 fp 0
    // fn 38 (precision 1.0, recall 0.708); after round K tp 96 fp 0 fn 34 (1.0, 0.738; en 55/71,
    // zh 41/59)
    {"judge_pairs/heldout_c.tsv", 220, 0.98, 0.73, 0.77, 0.69, 0},
    // D: after the tenth tp 114 fp 1 fn 36 (0.991, 0.760; en 66/84, zh 48/66); after round K tp
    // 124 fp 1 fn 26 (0.992, 0.827; en 73/84, zh 51/66)
    {"judge_pairs/heldout_d.tsv", 260, 0.98, 0.81, 0.85, 0.77, 1},
    // E: unseen tp 98 fp 2 (0.980, 0.658); after the eighth tp 127 fp 1 fn 22 (0.992, 0.852);
    // after round K tp 129 fp 1 fn 20 (0.992, 0.866; en 79/89, zh 50/60)
    {"judge_pairs/heldout_e.tsv", 270, 0.99, 0.86, 0.88, 0.83, 1},
    // F: unseen tp 102 fp 4 (0.962, 0.680); after the tenth tp 126 fp 1 fn 24 (0.992, 0.840);
    // after round K tp 132 fp 1 fn 18 (0.992, 0.880; en 81/90, zh 51/60)
    {"judge_pairs/heldout_f.tsv", 270, 0.99, 0.87, 0.89, 0.84, 1},
    // G: unseen tp 101 fp 3 (0.971, 0.673); after the tenth tp 111 fp 1 fn 39 (0.991, 0.740);
    // after round K (the first to read its misses) tp 124 fp 1 fn 26 (0.992, 0.827; en 74/90, zh
    // 50/60)
    {"judge_pairs/heldout_g.tsv", 270, 0.99, 0.82, 0.82, 0.83, 1},
    // H: unseen tp 100 fp 2 (0.980, 0.667); the eighth round was worked out on it; after the
    // tenth tp 122 fp 1 fn 28 (0.992, 0.813); after round K tp 129 fp 1 fn 21 (0.992, 0.860; en
    // 79/90, zh 50/60)
    {"judge_pairs/heldout_h.tsv", 270, 0.99, 0.85, 0.87, 0.83, 1},
    // I: unseen tp 99 fp 4 (0.961, 0.660); after the tenth tp 104 fp 1 fn 46 (0.990, 0.693);
    // after round K tp 116 fp 1 fn 34 (0.991, 0.773; en 69/90, zh 47/60)
    {"judge_pairs/heldout_i.tsv", 270, 0.99, 0.76, 0.75, 0.78, 1},
    // J: unseen (before the tenth round) tp 109 fp 3 fn 41 (0.973, 0.727); after it tp 111 fp 1
    // fn 39 (0.991, 0.740); after round K tp 120 fp 1 fn 30 (0.992, 0.800; en 77/90, zh 43/60)
    {"judge_pairs/heldout_j.tsv", 270, 0.99, 0.79, 0.85, 0.71, 1},
    // K: written 2026-12-07 (twelfth session) from the set format only; measured once with
    // `memhealth tune --judge` at the default settings on the rules of the tenth round: tp 104 fp
    // 1 fn 46 tn 99 (precision 0.990, recall 0.693; antonym 16/25, change statement 13/25, degree
    // and quantity 18/25, negation 20/25, role swap 16/25, single value 21/25; the false positive
    // date_time_differs); after round K, worked out on its misses among the others': tp 118 fp 1
    // fn 32 (0.992, 0.787; en 72/90, zh 46/60; antonym 21, change 14, degree 19, negation 23,
    // role swap 19, single value 22)
    {"judge_pairs/heldout_k.tsv", 270, 0.99, 0.78, 0.79, 0.76, 1},
    // L: written 2026-12-07 (fourteenth session) from the set format only, never opened by round
    // K's writer; measured blind before round K: tp 106 fp 1 fn 44 (0.991, 0.707), after it: tp
    // 113 fp 1 fn 37 tn 99 (0.991, 0.753; antonym 19/25, change 17, degree 18, negation 21, role
    // swap 17, single value 21; the false positive different_holder)
    {"judge_pairs/heldout_l.tsv", 270, 0.99, 0.75, 0, 0, 1},
};

TEST_CASE("claim judge: the held-out sets C-L, kept as regression sets") {
  for (const held_out_set& set : held_out_sets) {
    CAPTURE(set.file);
    MEMHEALTH_TEST_DATA(path, set.file);
    const auto rows = memhealth::test::read_tsv_rows(path);
    REQUIRE(rows.size() == set.rows);
    auto results = judge_pair_file(rows);
    auto& by = results.by;
    CHECK(results.asymmetric == 0);
    CHECK(by["all"].precision() >= set.precision);
    CHECK(by["all"].recall() >= set.recall);
    if (set.en_recall > 0) CHECK(by["en"].recall() >= set.en_recall);
    if (set.zh_recall > 0) CHECK(by["zh"].recall() >= set.zh_recall);
    CHECK(by["all"].fp <= set.max_fp);
  }
}

TEST_CASE("claim judge: SICK contradictions against entailment and neutral pairs" *
          doctest::test_suite("real_data")) {
  MEMHEALTH_TEST_DATA(sick, "sick/SICK_train.txt");
  const auto rows = memhealth::test::read_tsv_rows(sick);
  REQUIRE(rows.size() == 4500);
  confusion c;
  for (const auto& f : rows) {
    REQUIRE(f.size() >= 5);
    c.add(f[4] == "CONTRADICTION", judge(f[1], f[2]).conflict || judge(f[2], f[1]).conflict);
  }
  MESSAGE("SICK train: tp " << c.tp << " fp " << c.fp << " fn " << c.fn << " tn " << c.tn
                            << " precision " << c.precision() << " recall " << c.recall());
  // measured 2026-12-05: tp 543 fp 26 fn 122 (precision 0.954, recall 0.817; before issue 18's
  // recall work: tp 529 fp 25, recall 0.795); the cue judge: precision 0.843, recall 0.839;
  // 2026-12-06 with the larger WordNet lexicon and trait idioms before "who": tp 545 fp 26
  // (0.954, 0.820); 2026-12-07 after the SICK round of issue 18 (scene sentences read into
  // subject and predicate, "and there is no ...", measures, coordinated objects; rules written
  // on the odd pair_IDs only): tp 554 fp 26 fn 111 (0.955, 0.833); odd ids tp 297 fp 13 (0.958,
  // 0.846), even ids tp 257 fp 13 (0.952, 0.818)
  CHECK(c.precision() >= 0.95);
  CHECK(c.recall() >= 0.83);
}
}  // namespace claims_test
