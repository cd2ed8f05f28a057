// Tests of text/normalize.hpp, text/lexicon.hpp, embed/embedder.hpp and
// embed/lexical_embedder.hpp.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "memhealth/embed/embedder.hpp"
#include "memhealth/embed/lexical_embedder.hpp"
#include "memhealth/text/lexicon.hpp"
#include "memhealth/text/normalize.hpp"

namespace text_embed_test {
using namespace memhealth;

namespace {

std::vector<float> embed_of(const lexical_embedder& e, std::string_view text) {
  std::vector<float> v(e.dimension());
  e.embed(text, v);
  return v;
}

double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

double cosine(const lexical_embedder& e, std::string_view a, std::string_view b) {
  return dot(embed_of(e, a), embed_of(e, b));  // both unit norm
}

// An embedder that counts calls and offers the member batch form.
struct counting_embedder {
  mutable int single_calls = 0;
  mutable int batch_calls = 0;
  std::size_t dimension() const { return 2; }
  std::string_view version() const { return "count-v1"; }
  void embed(std::string_view text, std::span<float> out) const {
    ++single_calls;
    if (out.size() != 2) throw error(error_code::invalid_argument, "size");
    out[0] = static_cast<float>(text.size());
    out[1] = 1.0f;
  }
  void embed_batch(std::span<const std::string_view> texts, std::span<float> out) const {
    ++batch_calls;
    for (std::size_t i = 0; i < texts.size(); ++i) {
      out[2 * i] = static_cast<float>(texts[i].size());
      out[2 * i + 1] = 2.0f;
    }
  }
};

struct no_version {
  std::size_t dimension() const { return 1; }
  void embed(std::string_view, std::span<float>) const {}
};

}  // namespace

// ------------------------------------------------------------------ concept (static)

static_assert(embedder<lexical_embedder>);
static_assert(embedder<embedder_archetype>);
static_assert(embedder<counting_embedder>);
static_assert(!embedder<no_version>);
static_assert(!embedder<int>);
static_assert(detail::lexical_fnv1a64("") == 0xcbf29ce484222325ull);
static_assert(detail::lexical_fnv1a64("a") ==
              0xaf63dc4c8601ec8cull);  // published FNV-1a 64 test vector

// ------------------------------------------------------------------ text_normalizer

TEST_CASE("text_normalizer: NFKC maps full-width and compatibility forms to ASCII") {
  const text_normalizer n;
  CHECK(n("\xEF\xBC\xA3\xEF\xBD\x89\xEF\xBD\x8C\xEF\xBD\x81\xEF\xBD\x8E\xEF\xBD\x94\xEF\xBD\x92\xEF"
          "\xBD\x8F") == "cilantro");                         // "Ｃｉｌａｎｔｒｏ"
  CHECK(n("\xEF\xAC\x81ne") == "fine");                       // U+FB01 LATIN SMALL LIGATURE FI
  CHECK(n("\xE2\x85\xAB") == "xii");                          // U+216B ROMAN NUMERAL TWELVE
  CHECK(n("\xE2\x91\xA0") == "1");                            // U+2460 CIRCLED DIGIT ONE
  CHECK(n("\xEF\xBC\x91\xEF\xBC\x92\xEF\xBC\x93") == "123");  // full-width digits
}

TEST_CASE("text_normalizer: case folding, including full folding of non-ASCII") {
  const text_normalizer n;
  CHECK(n("Never Eats CILANTRO") == "never eats cilantro");
  // full case folding: U+00DF sharp s folds to "ss", so both spellings meet
  CHECK(n("STRASSE") == "strasse");
  CHECK(n("stra\xC3\x9F"
          "e") == "strasse");
  CHECK(n("\xCE\xA3\xCE\x9F\xCE\xA6\xCE\x99\xCE\x91") ==
        "\xCF\x83\xCE\xBF\xCF\x86\xCE\xB9\xCE\xB1");  // ΣΟΦΙΑ -> σοφια
  CHECK(n("\xC3\x89"
          "COLE") ==
        "\xC3\xA9"
        "cole");  // ÉCOLE -> école (composed)
  CHECK(n("E\xCC\x81"
          "cole") ==
        "\xC3\xA9"
        "cole");  // decomposed E + U+0301 composes
}

TEST_CASE("text_normalizer: punctuation and whitespace folding") {
  const text_normalizer n;
  CHECK(n("Never eats cilantro!") == "never eats cilantro");
  CHECK(n("  never\teats,\n\ncilantro...  ") == "never eats cilantro");
  CHECK(n("cilantro!!!") == n("cilantro."));
  CHECK(n("a\xC2\xA0"
          "b") == "a b");  // NO-BREAK SPACE
  CHECK(n("a\xE3\x80\x80"
          "b") == "a b");          // IDEOGRAPHIC SPACE
  CHECK(n("e-mail") == "e mail");  // hyphen is punctuation: a word break
  CHECK(n("!!! ... ???") == "");
  CHECK(n("") == "");
  text_normalizer keep;
  keep.fold_punctuation = false;
  CHECK(keep("Hi,  THERE!") == "hi, there!");
}

TEST_CASE("text_normalizer: symbols, signs, separators and '#' that change meaning are kept") {
  const text_normalizer n;
  // currency (Sc), math (Sm) and other symbols (So) stay; full-width forms meet their NFKC form
  CHECK(n("Budget is $5000") == "budget is $5000");
  CHECK(n("Budget is $5000") != n("Budget is \xE2\x82\xAC"
                                  "5000"));  // €5000
  CHECK(n("\xEF\xBF\xA5"
          "5000") ==
        "\xC2\xA5"
        "5000");  // full-width yen sign -> U+00A5
  CHECK(n("\xEF\xBF\xA5"
          "5000") != n("$5000"));
  CHECK(n("User likes C++") == "user likes c++");
  CHECK(n("User likes C#") == "user likes c#");
  CHECK(n("User likes C.") == "user likes c");
  CHECK(n("20\xC2\xB0"
          "C") ==
        "20\xC2\xB0"
        "c");  // 20°C: '°' is So
  // a sign, or '%', on a number
  CHECK(n("score is -5!") == "score is -5");
  CHECK(n("score is +5") == "score is +5");
  CHECK(n("rate is 5%.") == "rate is 5%");
  CHECK(n("rate is 5 %") == "rate is 5%");
  // punctuation between two digits; '#' after a letter or before a letter or digit
  CHECK(n("5,000") == "5,000");
  CHECK(n("5.000") == "5.000");
  CHECK(n("at 9:30.") == "at 9:30");
  CHECK(n("rated 4/5") == "rated 4/5");
  CHECK(n("PIN ends in #12") == "pin ends in #12");
  // sentence punctuation and word-internal dashes still fold
  CHECK(n("e-mail, COVID-19; 5-10 cats...") == "e mail covid 19 5-10 cats");
  CHECK(n("\"Hello\" (world) \xE2\x80\x94 it's fine!") == "hello world it s fine");
  CHECK(n("# heading") == "heading");
  // the lexical embedder's space folds them all
  text_normalizer all;
  all.keep_meaning = false;
  CHECK(all("Budget is $5,000 (-5%) in C++ #12") == "budget is 5 000 5 in c 12");
}

TEST_CASE("text_normalizer: Chinese text and punctuation") {
  const text_normalizer n;
  // "我不吃香菜，谢谢。" -> "我不吃香菜 谢谢"
  CHECK(n("\xE6\x88\x91\xE4\xB8\x8D\xE5\x90\x83\xE9\xA6\x99\xE8\x8F\x9C\xEF\xBC\x8C\xE8\xB0\xA2\xE8"
          "\xB0\xA2\xE3\x80\x82") ==
        "\xE6\x88\x91\xE4\xB8\x8D\xE5\x90\x83\xE9\xA6\x99\xE8\x8F\x9C \xE8\xB0\xA2\xE8\xB0\xA2");
  // "「香菜」！" -> "香菜" (corner brackets and full-width exclamation mark are punctuation)
  CHECK(n("\xE3\x80\x8C\xE9\xA6\x99\xE8\x8F\x9C\xE3\x80\x8D\xEF\xBC\x81") ==
        "\xE9\xA6\x99\xE8\x8F\x9C");
}

TEST_CASE("text_normalizer: synonym table applies per word after folding") {
  text_normalizer n;
  n.synonyms.emplace("nyc", "new york");
  n.synonyms.emplace("coriander", "cilantro");
  CHECK(n("Moving to NYC!") == "moving to new york");
  CHECK(n("hates CORIANDER.") == "hates cilantro");
  CHECK(n("nycity") == "nycity");  // whole words only
}

TEST_CASE("text_normalizer: invalid UTF-8 does not crash and keeps the bytes") {
  const text_normalizer n;
  CHECK(n("\xFF\xFE"
          "ABC") ==
        "\xFF\xFE"
        "abc");                      // ASCII folding only
  CHECK(n("caf\xC3") == "caf\xC3");  // truncated sequence
  CHECK_NOTHROW((void)n(std::string_view("\x80\x80\x00x", 4)));
}

// ------------------------------------------------------------------ lexical_embedder

TEST_CASE("lexical_embedder: version, dimension and argument errors") {
  const lexical_embedder def;
  CHECK(def.dimension() == 384);
  CHECK(def.version() == "lexical-v1-d384-s0");
  const lexical_embedder small(64, 7);
  CHECK(small.dimension() == 64);
  CHECK(small.version() == "lexical-v1-d64-s7");
  lexical_embedder_options o;
  o.synonyms.emplace("nyc", "new york");
  const lexical_embedder with_syn(o);
  CHECK(with_syn.version().substr(0, 22) == "lexical-v1-d384-s0-syn");
  CHECK(with_syn.version().size() == 22 + 8);
  CHECK_THROWS_AS(lexical_embedder(0, 1), error);
  std::vector<float> wrong(10);
  try {
    def.embed("text", wrong);
    FAIL("expected an exception");
  } catch (const error& e) {
    CHECK(e.code() == error_code::invalid_argument);
  }
}

TEST_CASE("lexical_embedder: exact vector against an independent reference implementation") {
  // Values from a separate python3 implementation of the documented algorithm
  // (FNV-1a 64 + splitmix64, words g=1, <word> 3/4-grams over code points g=0.5, 1+ln tf, L2).
  const float expected16[] = {0.300873f,  0.150436f, 0.555583f,  0.000000f,  -0.254711f, -0.150436f,
                              -0.150436f, 0.150436f, -0.358985f, -0.405147f, 0.000000f,  0.254711f,
                              0.000000f,  0.150436f, 0.254711f,  0.000000f};
  const lexical_embedder e16(16, 0);
  const auto v = embed_of(e16, "Eats eats CILANTRO!");  // normalises to "eats eats cilantro"
  for (std::size_t i = 0; i < 16; ++i) CHECK(v[i] == doctest::Approx(expected16[i]).epsilon(1e-5));

  const float expected8[] = {0.603023f, 0.301511f, 0.000000f,  0.301511f,
                             0.000000f, 0.301511f, -0.603023f, 0.000000f};
  const lexical_embedder e8(8, 42);
  const auto c =
      embed_of(e8, "\xE6\x88\x91\xE4\xB8\x8D\xE5\x90\x83\xE9\xA6\x99\xE8\x8F\x9C");  // 我不吃香菜
  for (std::size_t i = 0; i < 8; ++i) CHECK(c[i] == doctest::Approx(expected8[i]).epsilon(1e-5));
}

TEST_CASE("lexical_embedder: deterministic, unit norm, seed changes the space") {
  const lexical_embedder a, b;
  const auto x = embed_of(a, "Caroline is researching adoption agencies.");
  CHECK(x == embed_of(a, "Caroline is researching adoption agencies."));
  CHECK(x == embed_of(b, "Caroline is researching adoption agencies."));
  CHECK(dot(x, x) == doctest::Approx(1.0).epsilon(1e-6));
  const lexical_embedder other_seed(384, 99);
  CHECK(x != embed_of(other_seed, "Caroline is researching adoption agencies."));
  CHECK(dot(embed_of(other_seed, "x y z"), embed_of(other_seed, "x y z")) ==
        doctest::Approx(1.0).epsilon(1e-6));
}

TEST_CASE("lexical_embedder: texts equal after normalisation have cosine 1") {
  const lexical_embedder e;
  CHECK(cosine(e, "Never eats cilantro!", "never eats cilantro") ==
        doctest::Approx(1.0).epsilon(1e-6));
  CHECK(cosine(e, "  NEVER  eats\tcilantro...", "never eats cilantro") ==
        doctest::Approx(1.0).epsilon(1e-6));
  // 我不吃香菜。 vs 我不吃香菜
  CHECK(cosine(e, "\xE6\x88\x91\xE4\xB8\x8D\xE5\x90\x83\xE9\xA6\x99\xE8\x8F\x9C\xE3\x80\x82",
               "\xE6\x88\x91\xE4\xB8\x8D\xE5\x90\x83\xE9\xA6\x99\xE8\x8F\x9C") ==
        doctest::Approx(1.0).epsilon(1e-6));
}

TEST_CASE("lexical_embedder: overlapping paraphrases score above unrelated sentences") {
  const lexical_embedder e;
  const double para = cosine(e, "Caroline is researching adoption agencies.",
                             "Caroline has been researching adoption agencies recently.");
  const double unrelated = cosine(e, "Caroline is researching adoption agencies.",
                                  "Melanie painted a sunset with her kids last weekend.");
  CHECK(para > 0.7);                 // measured 0.797
  CHECK(std::abs(unrelated) < 0.2);  // measured 0.051
  const double para2 =
      cosine(e, "The user never eats cilantro.", "The user does not eat cilantro at all.");
  const double unrelated2 =
      cosine(e, "The user never eats cilantro.", "My flight to Berlin leaves at noon tomorrow.");
  CHECK(para2 > 0.5);                 // measured 0.598
  CHECK(std::abs(unrelated2) < 0.2);  // measured -0.051
}

TEST_CASE("lexical_embedder: Chinese is covered by code-point n-grams") {
  const lexical_embedder e;
  const std::string_view a =
      "\xE6\x88\x91\xE4\xB8\x8D\xE5\x90\x83\xE9\xA6\x99\xE8\x8F\x9C";  // 我不吃香菜
  const std::string_view b =
      "\xE6\x88\x91\xE4\xBB\x8E\xE6\x9D\xA5\xE4\xB8\x8D\xE5\x90\x83\xE9\xA6\x99\xE8\x8F"
      "\x9C";  // 我从来不吃香菜
  const std::string_view c =
      "\xE6\x98\x8E\xE5\xA4\xA9\xE4\xB8\x8B\xE5\x8D\x88\xE5\x8E\xBB\xE5\x8C\x97\xE4\xBA\xAC\xE5\xBC"
      "\x80\xE4\xBC\x9A";  // 明天下午去北京开会
  const auto va = embed_of(e, a);
  CHECK(dot(va, va) == doctest::Approx(1.0).epsilon(1e-6));
  // a and b share 5 of a's 9 n-grams (不吃香, 吃香菜, 香菜>, 不吃香菜, 吃香菜>) and no word
  CHECK(cosine(e, a, b) > 0.25);            // measured 0.336
  CHECK(std::abs(cosine(e, a, c)) < 0.15);  // measured -0.061
}

TEST_CASE("lexical_embedder: text without features gives the zero vector") {
  const lexical_embedder e;
  for (std::string_view t :
       {std::string_view(""), std::string_view("!!! ... ???"), std::string_view(" \t\n")}) {
    const auto v = embed_of(e, t);
    CHECK(dot(v, v) == 0.0);
  }
  const auto bad = embed_of(e,
                            "\xFF\xFE"
                            "abc");  // invalid UTF-8 still has features
  CHECK(dot(bad, bad) == doctest::Approx(1.0).epsilon(1e-6));
}

// ------------------------------------------------------------------ embed_missing, embed_batch

TEST_CASE("embed_missing fills only empty embeddings and tags their version") {
  const lexical_embedder e(32, 1);
  std::vector<memory_record> rs(3);
  rs[0].id = "a";
  rs[0].content = "likes tea";
  rs[1].id = "b";
  rs[1].content = "likes coffee";
  rs[1].embedding = {1.0f, 0.0f, 0.0f};  // wrong dimension, old model: must stay untouched
  rs[1].embedding_version = "old-model";
  rs[2].id = "c";
  rs[2].content = "";
  CHECK(embed_missing(rs, e) == 2);
  CHECK(rs[0].embedding == embed_of(e, "likes tea"));
  CHECK(rs[0].embedding_version == "lexical-v1-d32-s1");
  CHECK(rs[1].embedding == std::vector<float>{1.0f, 0.0f, 0.0f});
  CHECK(rs[1].embedding_version == "old-model");
  CHECK(rs[2].embedding == std::vector<float>(32, 0.0f));
  CHECK(rs[2].embedding_version == "lexical-v1-d32-s1");
  CHECK(embed_missing(rs, e) == 0);  // second run: nothing missing
}

TEST_CASE("embed_batch: row-major n x d, size check, member batch form preferred") {
  const lexical_embedder e(16, 3);
  const std::vector<std::string> texts{"one fact", "another fact", ""};
  std::vector<float> out(3 * 16, -7.0f);
  embed_batch(e, texts, out);
  for (std::size_t i = 0; i < texts.size(); ++i) {
    const auto row = embed_of(e, texts[i]);
    CHECK(std::vector<float>(out.begin() + static_cast<long>(i * 16),
                             out.begin() + static_cast<long>((i + 1) * 16)) == row);
  }
  std::vector<float> wrong(3 * 16 - 1);
  CHECK_THROWS_AS(embed_batch(e, texts, wrong), error);

  const counting_embedder ce;
  std::vector<float> o2(4);
  embed_batch(ce, std::vector<std::string_view>{"abc", "hello"}, o2);
  CHECK(ce.batch_calls == 1);
  CHECK(ce.single_calls == 0);
  CHECK(o2 == std::vector<float>{3.0f, 2.0f, 5.0f, 2.0f});

  const embedder_archetype arch;
  std::vector<float> o3(8, 1.0f);
  embed_batch(arch, std::vector<std::string>{"x", "y"}, o3);
  CHECK(o3 == std::vector<float>(8, 0.0f));
  std::vector<float> o4(3);
  CHECK_THROWS_AS(arch.embed("x", o4), error);
}

// ---- text/lexicon.hpp: english_lexicon (WordNet 3.0 data; every value below was looked up in
// the WordNet 3.0 files: index.*, data.*, *.exc).

namespace {

// A TSV file in the temporary directory, removed at the end of the scope.
struct temp_tsv {
  std::filesystem::path path;
  explicit temp_tsv(std::string_view name, std::string_view text)
      : path(std::filesystem::temp_directory_path() /
             ("memhealth-lexicon-" + std::string(name) + ".tsv")) {
    std::ofstream(path, std::ios::binary) << text;
  }
  ~temp_tsv() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
};

std::string thrown_message(english_lexicon& lex, const std::filesystem::path& p) {
  try {
    lex.load_tsv(p);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

}  // namespace

TEST_CASE("lexicon: morphy lemmas of the built-in WordNet data") {
  const auto& lex = english_lexicon::builtin();
  CHECK(&lex == &english_lexicon::builtin());              // parsed once
  CHECK(lex.lemma("ate", word_pos::verb) == "eat");        // verb.exc
  CHECK(lex.lemma("went", word_pos::verb) == "go");        // verb.exc
  CHECK(lex.lemma("has", word_pos::verb) == "have");       // verb.exc
  CHECK(lex.lemma("loves", word_pos::verb) == "love");     // -s
  CHECK(lex.lemma("studies", word_pos::verb) == "study");  // -ies -> -y
  CHECK(lex.lemma("hated", word_pos::verb) == "hate");     // -ed -> -e
  CHECK(lex.lemma("cats", word_pos::noun) == "cat");       // -s
  CHECK(lex.lemma("boxes", word_pos::noun) == "box");      // -xes -> -x
  CHECK(lex.lemma("churches", word_pos::noun) == "church");
  CHECK(lex.lemma("women", word_pos::noun) == "woman");  // -men -> -man
  CHECK(lex.lemma("mice", word_pos::noun) == "mouse");   // noun.exc
  CHECK(lex.lemma("bigger", word_pos::adj) == "big");    // adj.exc
  CHECK(lex.lemma("happier", word_pos::adj) == "happy");
  CHECK(lex.lemma("higher", word_pos::adj) == "high");  // a rule wins over "higher" itself
  CHECK(lex.lemma("arms", word_pos::noun) == "arm");
  CHECK(lex.lemma("class", word_pos::noun) == "class");      // nouns in -ss keep their s
  CHECK(lex.lemma("love", word_pos::verb) == "love");        // a lemma is its own lemma
  CHECK(lex.lemma("xyzzies", word_pos::noun) == "xyzzies");  // no rule gives a lemma
  CHECK(lex.lemma("Loves", word_pos::verb) == "Loves");      // not lowercase: as is
  CHECK(lex.lemma("can't", word_pos::verb) == "can't");
  CHECK(lex.lemma("", word_pos::verb).empty());
  CHECK(lex.any_lemma("loves") == "love");
  CHECK(lex.any_lemma("children") == "child");  // not a verb: the noun
  CHECK(lex.any_lemma("bigger") == "big");
  CHECK(lex.any_lemma("xyzzy") == "xyzzy");
  CHECK(lex.is_lemma("run", word_pos::verb));
  CHECK(lex.is_lemma("music", word_pos::noun));
  CHECK_FALSE(lex.is_lemma("jazz", word_pos::noun));  // never tagged in SemCor: left out
  CHECK(lex.is_lemma("huge", word_pos::adj));
  CHECK(lex.is_lemma("quickly", word_pos::adv));
  CHECK_FALSE(lex.is_lemma("runs", word_pos::verb));
  CHECK_FALSE(lex.is_lemma("huge", word_pos::verb));
  CHECK(lex.lemmas() > 35000);
}

TEST_CASE("lexicon: WordNet antonyms (direct and indirect) and synonyms") {
  const auto& lex = english_lexicon::builtin();
  CHECK(lex.antonyms("love", "hate"));  // verb and noun direct antonyms
  CHECK(lex.antonyms("hate", "love"));  // symmetric
  CHECK(lex.antonyms("early", "late"));
  CHECK(lex.antonyms("large", "small"));
  CHECK(lex.antonyms("like", "dislike"));
  CHECK(lex.antonyms("agree", "disagree"));
  // Indirect: "huge" is a satellite of the head {large, big}; "large" has the antonym "small".
  CHECK(lex.antonyms("huge", "small"));
  CHECK(lex.antonyms("small", "huge"));
  CHECK_FALSE(lex.antonyms("love", "like"));
  CHECK_FALSE(lex.antonyms("love", "love"));
  CHECK_FALSE(lex.antonyms("huge", "tiny"));  // two satellites: not propagated
  CHECK_FALSE(lex.antonyms("xyzzy", "small"));
  CHECK(lex.antonym_pairs() > 20000);

  CHECK(lex.synonyms("movie", "film"));  // synset 06613686
  CHECK(lex.synonyms("film", "movie"));
  CHECK(lex.synonyms("car", "automobile"));  // synset 02958343
  CHECK(lex.synonyms("big", "large"));
  CHECK(lex.synonyms("cat", "cat"));
  CHECK(lex.synonyms("xyzzy", "xyzzy"));  // a word is its own synonym, known or not
  CHECK_FALSE(lex.synonyms("cat", "car"));
  CHECK_FALSE(lex.synonyms("love", "hate"));
}

TEST_CASE("lexicon: minor nouns, food senses, multiword words and phrase()") {
  // Values looked up in WordNet 3.0's index.noun / data.noun (tagsense_cnt, senses, pointers).
  const auto& lex = english_lexicon::builtin();
  // "jazz": never tagged, so a minor noun: known to the relations, not a lemma
  CHECK_FALSE(lex.is_lemma("jazz", word_pos::noun));
  CHECK(lex.is_noun("jazz"));
  CHECK(lex.is_noun("music"));  // tagged
  // "einstein": never tagged, both senses written "Einstein": a name, left out
  CHECK_FALSE(lex.is_noun("einstein"));
  // piano -> keyboard instrument -> musical instrument (a multiword noun): 2 steps
  CHECK(lex.is_a("piano", "musical instrument", 2));
  CHECK_FALSE(lex.is_a("piano", "musical instrument", 1));
  // lobster (food sense) -> shellfish -> seafood
  CHECK(lex.is_a("lobster", "seafood", 2));
  CHECK_FALSE(lex.is_a("lobster", "seafood", 1));
  // "crab" keeps its 5th sense, crabmeat (noun.food), whose hypernym is shellfish
  CHECK(lex.is_a("crab", "shellfish", 1));
  // "almond": two senses, never tagged: only the food one is kept (almond -> edible nut -> nut)
  CHECK(lex.is_a("almond", "nut", 2));
  // "bike": two senses (motorcycle, bicycle), never tagged, none food: none kept
  CHECK_FALSE(lex.synonyms("bike", "motorcycle"));
  // multiword words: lemmas, antonyms, the n-gram lookup
  CHECK(lex.lemma("ice creams", word_pos::noun) == "ice cream");
  CHECK(lex.lemma("musical instruments", word_pos::noun) == "musical instrument");
  CHECK(lex.antonyms("good luck", "bad luck"));   // '!' between two multiword nouns
  CHECK(lex.antonyms("admire", "look down on"));  // a verb and a multiword verb
  using words = std::vector<std::string_view>;
  CHECK(lex.phrase(words{"musical", "instrument"}) == 2);
  CHECK(lex.phrase(words{"instrument", "musical"}) == 0);  // in order only
  CHECK(lex.phrase(words{"ice", "cream", "cake"}) == 2);   // WordNet: "ice-cream cake"
  CHECK(lex.phrase(words{"look", "down", "on"}) == 3);
  CHECK(lex.phrase(words{"look", "down", "on"}, 2) == 0);  // "look down" is no word
  CHECK(lex.phrase(words{"red", "car"}) == 0);
  CHECK(lex.phrase(words{"musical"}) == 0);
  CHECK(lex.begins_phrase("musical"));
  CHECK_FALSE(lex.begins_phrase("xyzzy"));
  CHECK(lex.begins_antonym_phrase("good"));
  CHECK_FALSE(lex.begins_antonym_phrase("musical"));
  // a user's multiword word is found too, on the copy only
  auto copy = lex;
  CHECK(copy.phrase(words{"oat", "milk"}) == 0);
  copy.add_is_a("oat milk", "plant milk");
  CHECK(copy.phrase(words{"oat", "milk"}) == 2);
  CHECK(copy.is_a("oat milk", "plant milk"));
  CHECK(lex.phrase(words{"oat", "milk"}) == 0);
}

TEST_CASE("lexicon: an empty lexicon and user additions on a copy of the built-in one") {
  english_lexicon empty;
  CHECK(empty.lemmas() == 0);
  CHECK(empty.antonym_pairs() == 0);
  CHECK(empty.lemma("cats", word_pos::noun) == "cats");
  CHECK(empty.any_lemma("went") == "went");
  CHECK_FALSE(empty.antonyms("love", "hate"));
  CHECK_FALSE(empty.synonyms("movie", "film"));
  empty.add_antonym("vegan", "carnivore");
  CHECK(empty.antonyms("carnivore", "vegan"));
  CHECK(empty.antonym_pairs() == 1);
  CHECK(empty.lemmas() == 0);  // user words are not lemmas

  auto lex = english_lexicon::builtin();
  const auto pairs = lex.antonym_pairs();
  lex.add_antonym("vegan", "carnivore");
  lex.add_antonym("vegan", "carnivore");  // once
  lex.add_antonym("same", "same");        // ignored
  lex.add_synonym("nyc", "new-york");
  lex.add_synonym("film", "flick-pic");
  CHECK(lex.antonyms("vegan", "carnivore"));
  CHECK(lex.antonym_pairs() == pairs + 1);
  CHECK(lex.synonyms("new-york", "nyc"));
  CHECK(lex.synonyms("flick-pic", "film"));
  CHECK(lex.synonyms("movie", "film"));             // WordNet's still there
  CHECK_FALSE(lex.synonyms("flick-pic", "movie"));  // not transitive
  CHECK(lex.antonyms("love", "hate"));
  // The built-in lexicon is unchanged.
  const auto& builtin = english_lexicon::builtin();
  CHECK_FALSE(builtin.antonyms("vegan", "carnivore"));
  CHECK_FALSE(builtin.synonyms("nyc", "new-york"));
  CHECK(builtin.antonym_pairs() == pairs);
}

TEST_CASE("lexicon: load_tsv adds pairs, a malformed line or an unreadable file throws") {
  english_lexicon lex;
  const temp_tsv good("good",
                      "# user pairs\n"
                      "\n"
                      "antonym\tvegan\tcarnivore\r\n"
                      "synonym\tnyc\tnew-york\n"
                      "   \n"
                      "synonym\tsofa\tcouch");  // no final newline
  lex.load_tsv(good.path);
  CHECK(lex.antonyms("vegan", "carnivore"));
  CHECK(lex.synonyms("nyc", "new-york"));
  CHECK(lex.synonyms("couch", "sofa"));
  CHECK(lex.antonym_pairs() == 1);

  const temp_tsv bad_kind("bad-kind", "antonym\tup\tdown\n# fine\nopposite\thot\tcold\n");
  const auto msg = thrown_message(lex, bad_kind.path);
  CHECK(msg.find(bad_kind.path.string() + ":3:") != std::string::npos);
  CHECK_FALSE(lex.antonyms("up", "down"));  // all or nothing
  CHECK_THROWS_AS(lex.load_tsv(bad_kind.path), std::runtime_error);

  const temp_tsv two_fields("two-fields", "synonym\tlonely\n");
  CHECK(thrown_message(lex, two_fields.path).find(":1:") != std::string::npos);
  const temp_tsv four_fields("four-fields", "synonym\ta\tb\tc\n");
  CHECK(thrown_message(lex, four_fields.path).find(":1:") != std::string::npos);
  const temp_tsv empty_word("empty-word", "\nantonym\t\tb\n");
  CHECK(thrown_message(lex, empty_word.path).find(":2:") != std::string::npos);

  const auto missing = std::filesystem::temp_directory_path() / "memhealth-lexicon-missing.tsv";
  std::filesystem::remove(missing);
  const auto m = thrown_message(lex, missing);
  CHECK(m.find("cannot read") != std::string::npos);
  CHECK(m.find(missing.string()) != std::string::npos);
  CHECK(lex.antonym_pairs() == 1);
}

TEST_CASE("lexicon: WordNet hypernyms (is_a)") {
  // Steps counted in data.noun / data.verb ('@' pointers) from the kept senses.
  const auto& lex = english_lexicon::builtin();
  CHECK(lex.is_a("man", "person"));  // man sense 3 (10289039, "any human being") -> 00007846
  CHECK(lex.is_a("man", "person", 1));
  CHECK(lex.is_a("woman", "person"));  // woman -> female -> person: 2 steps
  CHECK_FALSE(lex.is_a("woman", "person", 1));
  CHECK(lex.is_a("lady", "woman", 1));       // lady -> woman
  CHECK(lex.is_a("slice", "cut", 1));        // verb {slit, slice} 01559073 -> cut 01552537
  CHECK(lex.is_a("eggplant", "vegetable"));  // 07713074 -> solanaceous_vegetable -> 07707451
  CHECK_FALSE(lex.is_a("eggplant", "vegetable", 1));
  // WordNet has kitten -> young_mammal -> young -> animal, not kitten -> cat.
  CHECK_FALSE(lex.is_a("kitten", "cat"));
  CHECK(lex.is_a("kitten", "young", 2));
  CHECK(lex.is_a("kitten", "animal", 3));
  CHECK_FALSE(lex.is_a("kitten", "animal", 2));
  CHECK(lex.is_a("dog", "animal"));  // dog -> domestic_animal -> animal
  // man -> person -> causal_agent -> physical_entity -> entity: 4 steps, the default depth.
  CHECK(lex.is_a("man", "entity"));
  CHECK_FALSE(lex.is_a("man", "entity", 3));
  CHECK_FALSE(lex.is_a("person", "man"));  // not symmetric
  CHECK_FALSE(lex.is_a("car", "person"));
  CHECK_FALSE(lex.is_a("car", "person", 30));
  CHECK(lex.is_a("car", "automobile", 0));  // synonyms: depth 0
  CHECK(lex.is_a("cat", "cat", 0));
  CHECK_FALSE(lex.is_a("man", "person", 0));
  CHECK_FALSE(lex.is_a("man", "person", -1));
  CHECK(lex.is_a("xyzzy", "xyzzy"));  // like synonyms(): a word is itself
  CHECK_FALSE(lex.is_a("xyzzy", "person"));
  CHECK_FALSE(lex.is_a("man", "xyzzy"));
}

TEST_CASE("lexicon: add_is_a and load_tsv is_a lines") {
  english_lexicon empty;
  CHECK_FALSE(empty.is_a("man", "person"));
  empty.add_is_a("poodle", "dog");
  empty.add_is_a("dog", "animal");
  empty.add_is_a("same", "same");  // ignored
  CHECK(empty.is_a("poodle", "dog", 1));
  CHECK(empty.is_a("poodle", "animal", 2));  // transitive, one step per pair
  CHECK_FALSE(empty.is_a("poodle", "animal", 1));
  CHECK_FALSE(empty.is_a("dog", "poodle"));
  CHECK_FALSE(empty.synonyms("poodle", "dog"));
  empty.add_is_a("animal", "poodle");  // a cycle: walks still end
  CHECK(empty.is_a("dog", "poodle", 2));
  CHECK_FALSE(empty.is_a("dog", "cat", 100));

  auto lex = english_lexicon::builtin();
  lex.add_is_a("labradoodle", "dog");
  CHECK(lex.is_a("labradoodle", "dog", 1));
  CHECK(lex.is_a("labradoodle", "animal", 3));  // + dog -> domestic_animal -> animal
  CHECK_FALSE(lex.is_a("labradoodle", "animal", 2));
  CHECK_FALSE(lex.is_a("dog", "labradoodle"));
  lex.add_is_a("zorb", "labradoodle");
  CHECK(lex.is_a("zorb", "dog", 2));
  CHECK(lex.is_a("zorb", "animal"));
  lex.add_is_a("dog", "pet-thing");  // a built-in word gets a user hypernym
  CHECK(lex.is_a("dog", "pet-thing", 1));
  CHECK(lex.is_a("zorb", "pet-thing", 3));
  CHECK(lex.is_a("man", "person"));  // WordNet's still there
  CHECK_FALSE(lex.synonyms("dog", "pet-thing"));
  const auto& builtin = english_lexicon::builtin();
  CHECK_FALSE(builtin.is_a("labradoodle", "dog"));
  CHECK_FALSE(builtin.is_a("dog", "pet-thing"));

  english_lexicon loaded;
  const temp_tsv good("is-a", "is_a\tpoodle\tdog\r\nsynonym\tpup\tpuppy\nis_a\tpuppy\tdog\n");
  loaded.load_tsv(good.path);
  CHECK(loaded.is_a("poodle", "dog"));
  CHECK(loaded.synonyms("pup", "puppy"));
  CHECK(loaded.is_a("puppy", "dog", 1));
  CHECK_FALSE(loaded.is_a("dog", "poodle"));
  const temp_tsv bad("is-a-bad", "is_a\tpoodle\tdog\nis-a\tcat\tanimal\n");
  const auto msg = thrown_message(loaded, bad.path);
  CHECK(msg.find(":2:") != std::string::npos);
  CHECK(msg.find("is_a<TAB>specific<TAB>general") != std::string::npos);
  const temp_tsv two("is-a-two", "is_a\tcat\n");
  CHECK(thrown_message(loaded, two.path).find(":1:") != std::string::npos);
  CHECK_FALSE(loaded.is_a("cat", "animal"));
}
}  // namespace text_embed_test
