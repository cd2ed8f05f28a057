#pragma once
/// @file lexicon.hpp
/// An English lexicon for the rule-based conflict judge: lemmas (morphy), antonyms, synonyms and
/// hypernyms (is-a).
///
/// The built-in data (english_lexicon::builtin()) is derived from WordNet 3.0 (Princeton) by
/// scripts/gen_wordnet_lexicon.py into text/wordnet_data.hpp (licence notice there and in
/// scripts/WORDNET_LICENSE). It holds lemmas of lowercase ASCII letters and '-', multiword ones
/// (WordNet's collocations) with their words joined by single spaces ("musical instrument", "ice
/// cream", "look down on"; phrase() finds them in a run of words): every verb, adjective and
/// adverb of WordNet and every noun but names (Paris, Einstein), those never tagged in its
/// semantic concordances as minor nouns (is_noun(): known to the relations, not to is_lemma()
/// and lemma()); the morphy exception lists; direct antonyms of all parts of speech plus the
/// indirect antonyms of adjective satellites ("huge" is an antonym of "small" because "huge" is
/// similar to "large", whose antonym is "small"); and, per word, the synsets of its first three
/// tagged senses (or of its first sense), and for nouns of every sense that is a food or drink
/// ("crab": also crabmeat, a shellfish), so that two words are synonyms when they share one;
/// and, for nouns and verbs, the hypernym pointers ('@', '@i') of those synsets and of all their
/// ancestors, so that is_a() can walk up ("man" -> "male" -> "person").
/// Users add their own antonyms, synonyms and is-a pairs with add_antonym / add_synonym /
/// add_is_a / load_tsv on a copy:
///   auto lex = memhealth::english_lexicon::builtin();
///   lex.add_antonym("vegan", "carnivore");
/// Lookups are exact and case-sensitive (the built-in words are lowercase) and allocate nothing,
/// except lemma(), which may build the candidate base forms of a word (short words: no heap),
/// and phrase(), which joins words.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "memhealth/text/wordnet_data.hpp"

namespace memhealth {

/// Part of speech of a lemma, as WordNet distinguishes them (adjective satellites count as adj).
enum class word_pos : std::uint8_t { noun, verb, adj, adv };

/// English lexicon: WordNet-derived lemmas, antonyms, synonyms and hypernyms plus user additions.
/// A value type: copy builtin() to add to it. Not synchronised: const member functions may run
/// concurrently, a non-const one needs exclusive access.
class english_lexicon {
 public:
  /// An empty lexicon (no WordNet data): no lemmas, no antonyms, only user additions.
  english_lexicon() = default;

  /// The WordNet-derived lexicon, parsed from text/wordnet_data.hpp on the first call (about
  /// 0.1-0.3 s and 10 MB, once; thread-safe) and shared by every later call.
  /// Source: WordNet 3.0 (Princeton). @throws std::bad_alloc only.
  static const english_lexicon& builtin() {
    static const english_lexicon lex = parse_wordnet();
    return lex;
  }

  /// The WordNet-derived lexicon parsed anew: what builtin() holds, as a value of one's own, for
  /// a caller that adds to it and does not need builtin() itself (claim_lexicon::builtin()):
  /// no second copy stays in memory. @throws std::bad_alloc only.
  static english_lexicon parse_builtin() { return parse_wordnet(); }

  /// @return true when `w` (exact, lowercase) is a known lemma of part of speech `p`.
  /// Source: WordNet 3.0 (Princeton) index files (nouns: those tagged at least once).
  [[nodiscard]] bool is_lemma(std::string_view w, word_pos p) const {
    const auto* info = find(w);
    return info != nullptr && (info->pos_mask & bit(p)) != 0;
  }

  /// @return true when `w` (exact, lowercase) is a noun of WordNet, tagged in its semantic
  /// concordances (is_lemma(w, word_pos::noun)) or not (a minor noun: "shrimp", "jazz",
  /// "bike"; proper names left out). Minor nouns take part in synonyms(), is_a(),
  /// co_hyponyms(), antonyms() and phrase(), but not in is_lemma() or lemma(), as many of them
  /// are also names ("Raj", "Rose", "Bob") that the claim reader must not take for common
  /// words. Source: WordNet 3.0 (Princeton) index.noun and data.noun.
  [[nodiscard]] bool is_noun(std::string_view w) const {
    const auto* info = find(w);
    return info != nullptr && (info->pos_mask & (bit(word_pos::noun) | minor_noun_bit)) != 0;
  }

  /// Multiword lemmas (WordNet collocations: "musical instrument", "ice cream", "look down on")
  /// are words of the lexicon like any other, spelt with single spaces, so every lookup takes
  /// them whole (user additions with spaces too). Text read word by word finds them with this
  /// n-gram lookup:
  /// @return the length n (2 <= n <= min(words.size(), max_words)) of the longest run
  /// words[0 .. n) that, joined by single spaces, is a word of the lexicon: a lemma of any part
  /// of speech, a minor noun (is_noun()) or a user addition; 0 when there is none
  /// ({"musical", "instrument"} -> 2; {"ice", "cream", "cake"} -> 2, WordNet spells the cake
  /// "ice-cream cake"; {"look", "down", "on"} -> 3; {"red", "car"} -> 0). Exact words
  /// (lemmatise each first: a multiword noun's plural inflects its last word, so {"ice",
  /// "creams"} is 0 and {"ice", "cream"} is 2). One hash lookup when words[0] begins no
  /// multiword word (most words); otherwise allocates at most the joined string.
  /// Source: WordNet 3.0 (Princeton) index files (collocations joined by '_').
  [[nodiscard]] std::size_t phrase(std::span<const std::string_view> words,
                                   std::size_t max_words = 4) const {
    if (words.size() < 2 || max_words < 2 || !begins_phrase(words[0])) return 0;
    std::string joined(words[0]);
    std::size_t longest = 0;
    for (std::size_t n = 1; n < words.size() && n < max_words; ++n) {
      if (words[n].empty()) break;
      joined += ' ';
      joined += words[n];
      if (find(joined) != nullptr) longest = n + 1;
    }
    return longest;
  }

  /// @return true when `w` (exact) is the first word of a multiword word of the lexicon
  /// ("musical" of "musical instrument", "look" of "look down on"; built-in or user-added):
  /// when false, phrase() of words beginning with `w` is 0. One hash lookup, no allocation.
  [[nodiscard]] bool begins_phrase(std::string_view w) const {
    const auto* info = find(w);
    return info != nullptr && (info->pos_mask & phrase_head_bit) != 0;
  }

  /// @return true when `w` (exact) is the first word of a multiword word that has an antonym
  /// ("good" of "good luck" / "bad luck", "eat" of "eat in" / "eat out"; built-in or
  /// user-added): a cheap test before a phrase() lookup meant for antonyms(). One hash lookup.
  [[nodiscard]] bool begins_antonym_phrase(std::string_view w) const {
    const auto* info = find(w);
    return info != nullptr && (info->pos_mask & antonym_head_bit) != 0;
  }

  /// Base form of `w` as part of speech `p`, by WordNet's morphy algorithm: the exception list
  /// of `p` (irregular forms: "ate" -> "eat", "went" -> "go", "bigger" -> "big"); else the first
  /// of morphy's detachment rules whose result is a lemma of `p` (noun: -s, -ses, -xes, -zes,
  /// -ches, -shes, -men, -ies; verb: -s, -ies, -es, -ed, -ing; adj: -er, -est; adv: none; nouns
  /// ending in "ss" or of two letters or fewer are left alone); else `w` itself. Like morphy, a
  /// rule wins over `w` being a lemma itself: "arms" -> "arm", "higher" -> "high", but also
  /// "seed" -> "see", "feed" -> "fee", "after" -> "aft" (call is_lemma() first to keep such words).
  /// @return that base form, or `w` unchanged when no rule applies or when `w` is not lowercase
  /// ASCII letters and '-', words joined by single spaces ("ice creams" -> "ice cream": the
  /// rules inflect the end; other input is returned as is). Source: WordNet 3.0 (Princeton),
  /// morphy algorithm (morphy(7WN)). Never throws except std::bad_alloc.
  [[nodiscard]] std::string lemma(std::string_view w, word_pos p) const {
    if (!plain(w)) return std::string(w);
    const auto& exc = exceptions_[index(p)];
    if (const auto it = exc.find(w); it != exc.end()) return it->second;
    if (p == word_pos::noun && (w.size() <= 2 || w.ends_with("ss"))) return std::string(w);
    std::string candidate;
    candidate.reserve(w.size() + 2);
    for (const auto& [suffix, ending] : rules(p)) {
      if (w.size() <= suffix.size() || !w.ends_with(suffix)) continue;
      candidate.assign(w.substr(0, w.size() - suffix.size()));
      candidate.append(ending);
      if (is_lemma(candidate, p)) return candidate;
    }
    return std::string(w);
  }

  /// lemma() as a verb, then as a noun, then as an adjective, then as an adverb: @return the first
  /// result that is a known lemma of that part of speech, else `w` unchanged ("loves" -> "love",
  /// "cats" -> "cat"). Source: WordNet 3.0 (Princeton), morphy algorithm.
  [[nodiscard]] std::string any_lemma(std::string_view w) const {
    for (const auto p : {word_pos::verb, word_pos::noun, word_pos::adj, word_pos::adv}) {
      auto l = lemma(w, p);
      if (is_lemma(l, p)) return l;
    }
    return std::string(w);
  }

  /// @return true when lemmas `a` and `b` (exact; any part of speech) are antonyms: a WordNet
  /// direct antonym pair ("love"/"hate", "early"/"late"), an indirect one of adjective satellites
  /// ("huge"/"small"), or a user addition. Symmetric; no lemmatisation (call lemma() first).
  /// Source: WordNet 3.0 (Princeton) antonym ('!') and similar-to ('&') pointers.
  [[nodiscard]] bool antonyms(std::string_view a, std::string_view b) const {
    const auto* x = find(a);
    const auto* y = find(b);
    return x != nullptr && y != nullptr && antonyms_.contains(pair_key(x->id, y->id));
  }

  /// @return true when `a` == `b`, or lemmas `a` and `b` share one of the WordNet synsets kept
  /// for them (the first three tagged senses, or the first sense: "movie"/"film",
  /// "car"/"automobile"), or the pair was added by add_synonym / load_tsv. Symmetric, not
  /// transitive; no lemmatisation. Source: WordNet 3.0 (Princeton) synsets.
  [[nodiscard]] bool synonyms(std::string_view a, std::string_view b) const {
    if (a == b) return true;
    const auto* x = find(a);
    const auto* y = find(b);
    return x != nullptr && y != nullptr && share_synset(*x, *y);
  }

  /// @return true when `specific` is a kind of `general` (is-a): when a synset kept for
  /// `specific` (its first three tagged senses, or its first sense, as for synonyms()) has a
  /// synset kept for `general` among its hypernym ancestors, at most `max_depth` steps up
  /// ("man" is a "person": man -> male -> person, 2 steps; "slice" is a "cut": verb, 1 step;
  /// "eggplant" is a "vegetable": 2 steps), or the pair is linked by add_is_a / load_tsv (one
  /// step per added pair, transitive); also true when the two are synonyms() (max_depth <= 0:
  /// only then). Nouns and verbs only; not symmetric ("person" is not a "man"); exact lemmas,
  /// no lemmatisation (call lemma() first). Allocates nothing unless the walk visits more than
  /// 64 synsets. Source: WordNet 3.0 (Princeton) hypernym and instance-hypernym ('@', '@i')
  /// pointers.
  [[nodiscard]] bool is_a(std::string_view specific, std::string_view general,
                          int max_depth = 4) const {
    if (specific == general) return true;
    const auto* x = find(specific);
    const auto* y = find(general);
    if (x == nullptr || y == nullptr) return false;
    if (share_synset(*x, *y)) return true;  // synonyms
    if (max_depth <= 0 || y->synsets.empty()) return false;
    synset_walk seen;  // synsets visited, breadth first: level k starts at seen[begin]
    for (const auto s : x->synsets) seen.insert(s);
    std::size_t begin = 0;
    for (int depth = 1; depth <= max_depth && begin < seen.size(); ++depth) {
      const auto end = seen.size();
      for (auto i = begin; i < end; ++i) {
        for (const auto h : hypernyms(seen[i])) {
          if (std::find(y->synsets.begin(), y->synsets.end(), h) != y->synsets.end()) return true;
          seen.insert(h);
        }
      }
      begin = end;
    }
    return false;
  }

  /// @return true when `a` and `b` are two kinds of one thing: different words, not synonyms(),
  /// whose kept synsets have a common hypernym ancestor at most `max_depth` steps up from each
  /// ("tea" and "coffee" are both a "beverage", one step; "cat" and "dog": two). Nouns and
  /// verbs only; exact lemmas; symmetric. Allocates nothing unless a walk visits more than 64
  /// synsets. Source: WordNet 3.0 (Princeton) hypernym pointers.
  [[nodiscard]] bool co_hyponyms(std::string_view a, std::string_view b, int max_depth = 1) const {
    if (a == b || max_depth <= 0) return false;
    const auto* x = find(a);
    const auto* y = find(b);
    if (x == nullptr || y == nullptr || share_synset(*x, *y)) return false;
    auto ancestors = [&](const word_info& w, synset_walk& out) {
      synset_walk seen;
      for (const auto s : w.synsets) seen.insert(s);
      std::size_t begin = 0;
      for (int depth = 1; depth <= max_depth && begin < seen.size(); ++depth) {
        const auto end = seen.size();
        for (auto i = begin; i < end; ++i)
          for (const auto h : hypernyms(seen[i])) {
            seen.insert(h);
            out.insert(h);
          }
        begin = end;
      }
    };
    synset_walk ux, uy;
    ancestors(*x, ux);
    ancestors(*y, uy);
    for (std::size_t i = 0; i < ux.size(); ++i)
      for (std::size_t j = 0; j < uy.size(); ++j)
        if (ux[i] == uy[j]) return true;
    return false;
  }

  /// Makes `specific` a kind of `general`: afterwards is_a(specific, general) is true (one
  /// step), and so is is_a(specific, g) for whatever `general` is a kind of (built-in or
  /// added). Words are kept as given; `specific` == `general` is ignored. Not symmetric.
  /// @throws std::bad_alloc only.
  void add_is_a(std::string_view specific, std::string_view general) {
    if (specific == general) return;
    auto& x = intern(specific);  // references into words_ survive rehashing
    auto& y = intern(general);
    const auto u = user_synset(x);
    user_synset(y);
    auto& up = user_hypernyms_[u];
    for (const auto s : y.synsets)
      if (std::find(up.begin(), up.end(), s) == up.end()) up.push_back(s);
  }

  /// Makes `a` and `b` antonyms (both directions). Words are kept as given (exact match later);
  /// a word is not made its own antonym (`a` == `b` is ignored). @throws std::bad_alloc only.
  void add_antonym(std::string_view a, std::string_view b) {
    if (a == b) return;
    const auto x = intern(a).id;
    const auto y = intern(b).id;
    antonyms_.insert(pair_key(x, y));
    mark_antonym_head(a);
    mark_antonym_head(b);
  }

  /// Makes `a` and `b` synonyms (both directions; not transitive: a new synset {a, b}).
  /// Words are kept as given. @throws std::bad_alloc only.
  void add_synonym(std::string_view a, std::string_view b) {
    if (a == b) return;
    const auto s = next_synset_++;
    intern(a).synsets.push_back(s);
    intern(b).synsets.push_back(s);
  }

  /// Adds the user pairs of a UTF-8 TSV file: lines `synonym<TAB>a<TAB>b`,
  /// `antonym<TAB>a<TAB>b` or `is_a<TAB>specific<TAB>general` (add_is_a; exactly three non-empty
  /// fields; a trailing '\r' is ignored); lines
  /// starting with '#', blank lines and a UTF-8 byte-order mark at the start are ignored. All or
  /// nothing: the file is read completely
  /// before anything is added.
  /// @throws std::runtime_error naming the file (and the 1-based line number for a malformed
  /// line) when the file cannot be read or a line is malformed; the lexicon is then unchanged.
  void load_tsv(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw std::runtime_error("english_lexicon::load_tsv: cannot read " + file.string());
    std::vector<std::tuple<char, std::string, std::string>> pairs;  // ('a'|'s'|'i', a, b)
    std::string line;
    std::size_t number = 0;
    while (std::getline(in, line)) {
      ++number;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (number == 1 && line.starts_with("\xEF\xBB\xBF")) line.erase(0, 3);  // byte-order mark
      const auto first = line.find_first_not_of(" \t");
      if (first == std::string::npos || line[first] == '#') continue;
      const auto t1 = line.find('\t');
      const auto t2 = t1 == std::string::npos ? t1 : line.find('\t', t1 + 1);
      const bool three = t2 != std::string::npos && line.find('\t', t2 + 1) == std::string::npos;
      const std::string_view view(line);
      const auto kind = three ? view.substr(0, t1) : std::string_view{};
      const auto a = three ? view.substr(t1 + 1, t2 - t1 - 1) : std::string_view{};
      const auto b = three ? view.substr(t2 + 1) : std::string_view{};
      if (!three || (kind != "synonym" && kind != "antonym" && kind != "is_a") || a.empty() ||
          b.empty())
        throw std::runtime_error("english_lexicon::load_tsv: " + file.string() + ":" +
                                 std::to_string(number) +
                                 ": expected 'synonym<TAB>a<TAB>b', 'antonym<TAB>a<TAB>b' or "
                                 "'is_a<TAB>specific<TAB>general'");
      pairs.emplace_back(kind[0], std::string(a), std::string(b));
    }
    if (in.bad())
      throw std::runtime_error("english_lexicon::load_tsv: read error in " + file.string());
    for (const auto& [kind, a, b] : pairs) {
      if (kind == 'a')
        add_antonym(a, b);
      else if (kind == 's')
        add_synonym(a, b);
      else
        add_is_a(a, b);
    }
  }

  /// @return the number of antonym pairs (each unordered pair once), user additions included.
  [[nodiscard]] std::size_t antonym_pairs() const { return antonyms_.size(); }

  /// @return the number of distinct words that are a lemma of at least one part of speech
  /// (user-added words are not lemmas).
  [[nodiscard]] std::size_t lemmas() const { return lemma_count_; }

 private:
  // (not noexcept: libstdc++ then keeps each node's hash, so that a lookup compares hashes
  // before strings and never rehashes a neighbour's key to find its bucket's end: with the
  // 110,000 words of WordNet that halves the time of a find)
  struct string_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  static constexpr std::uint32_t no_synset = 0xffffffff;
  struct word_info {
    std::uint32_t id = 0;                   ///< dense number, for the antonym pair keys
    std::uint32_t user_synset = no_synset;  ///< the word's own synset for add_is_a, once made
    std::uint8_t pos_mask = 0;              ///< bit(p) set when a lemma of p; minor_noun_bit
    std::vector<std::uint32_t> synsets;     ///< kept synsets (built-in, then user-added)
  };
  /// The synsets an is_a() walk has visited: 64 inline, more on the heap.
  class synset_walk {
   public:
    [[nodiscard]] std::size_t size() const { return size_; }
    [[nodiscard]] std::uint32_t operator[](std::size_t i) const {
      return i < fixed_.size() ? fixed_[i] : more_[i - fixed_.size()];
    }
    void insert(std::uint32_t s) {  // unless already there
      for (std::size_t i = 0; i < size_; ++i)
        if ((*this)[i] == s) return;
      if (size_ < fixed_.size())
        fixed_[size_] = s;
      else
        more_.push_back(s);
      ++size_;
    }

   private:
    std::array<std::uint32_t, 64> fixed_;
    std::vector<std::uint32_t> more_;
    std::size_t size_ = 0;
  };
  template <class V>
  using string_map = std::unordered_map<std::string, V, string_hash, std::equal_to<>>;
  struct rule {
    std::string_view suffix, ending;
  };

  string_map<word_info> words_;
  std::array<string_map<std::string>, 4> exceptions_;
  std::unordered_set<std::uint64_t> antonyms_;
  // Built-in hypernyms: synset s < hyper_begin_.size() - 1 has the hypernym synsets
  // hyper_ids_[hyper_begin_[s] .. hyper_begin_[s + 1]); user synsets (add_is_a) have theirs in
  // user_hypernyms_.
  std::vector<std::uint32_t> hyper_begin_;
  std::vector<std::uint32_t> hyper_ids_;
  std::unordered_map<std::uint32_t, std::vector<std::uint32_t>> user_hypernyms_;
  std::uint32_t next_synset_ = 0;
  std::size_t lemma_count_ = 0;

  static constexpr std::size_t index(word_pos p) { return static_cast<std::size_t>(p); }
  static constexpr std::uint8_t minor_noun_bit = 16;    // pos_mask: a noun never tagged
  static constexpr std::uint8_t phrase_head_bit = 32;   // pos_mask: begins a multiword word
  static constexpr std::uint8_t pos_bits = 15;          // pos_mask: the bit(p) of the lemmas
  static constexpr std::uint8_t antonym_head_bit = 64;  // begins a multiword word with antonyms
  static constexpr std::uint8_t bit(word_pos p) {
    return static_cast<std::uint8_t>(1U << static_cast<unsigned>(p));
  }
  static constexpr std::uint64_t pair_key(std::uint32_t a, std::uint32_t b) {
    return a < b ? (std::uint64_t{a} << 32) | b : (std::uint64_t{b} << 32) | a;
  }
  // lowercase ASCII letters and '-', words joined by single spaces ("ice cream")
  static constexpr bool plain(std::string_view w) {
    if (w.empty() || w.front() == ' ' || w.back() == ' ') return false;
    char last = 0;
    for (const char c : w) {
      if (!((c >= 'a' && c <= 'z') || c == '-' || (c == ' ' && last != ' '))) return false;
      last = c;
    }
    return true;
  }
  // morphy's detachment rules, in its order (morphy(7WN)); scripts/gen_wordnet_lexicon.py keeps
  // the same list (RULES) to drop the exceptions these already handle.
  static std::span<const rule> rules(word_pos p);

  const word_info* find(std::string_view w) const {
    const auto it = words_.find(w);
    return it == words_.end() ? nullptr : &it->second;
  }
  static bool share_synset(const word_info& x, const word_info& y) {
    for (const auto s : x.synsets)
      if (std::find(y.synsets.begin(), y.synsets.end(), s) != y.synsets.end()) return true;
    return false;
  }
  std::span<const std::uint32_t> hypernyms(std::uint32_t s) const {
    if (s + std::size_t{1} < hyper_begin_.size())
      return std::span(hyper_ids_).subspan(hyper_begin_[s], hyper_begin_[s + 1] - hyper_begin_[s]);
    if (user_hypernyms_.empty()) return {};
    const auto it = user_hypernyms_.find(s);
    return it == user_hypernyms_.end() ? std::span<const std::uint32_t>{} : it->second;
  }
  std::uint32_t user_synset(word_info& w) {
    if (w.user_synset == no_synset) {
      w.user_synset = next_synset_++;
      w.synsets.push_back(w.user_synset);
    }
    return w.user_synset;
  }
  // a multiword word with an antonym: its first word gets antonym_head_bit
  void mark_antonym_head(std::string_view w) {
    if (const auto space = w.find(' '); space != std::string_view::npos && space > 0)
      intern(w.substr(0, space)).pos_mask |= antonym_head_bit;
  }
  word_info& intern(std::string_view w) {
    const auto it = words_.find(w);
    return it != words_.end() ? it->second
                              : added(words_.emplace(std::string(w), word_info{}).first);
  }
  // intern() of a word held in a string: one hash lookup (the key is copied only when new)
  word_info& intern(const std::string& w) {
    const auto [it, is_new] = words_.try_emplace(w);
    return is_new ? added(it) : it->second;
  }
  word_info& added(string_map<word_info>::iterator it) {
    it->second.id = static_cast<std::uint32_t>(words_.size() - 1);
    // (a multiword word: phrase() starts from its first word; references into words_ survive
    // rehashing)
    const std::string_view w = it->first;
    if (const auto space = w.find(' '); space != std::string_view::npos && space > 0)
      intern(w.substr(0, space)).pos_mask |= phrase_head_bit;
    return it->second;
  }

  static english_lexicon parse_wordnet();
};

namespace detail::lexicon {

/// Calls f(line) for each non-empty line of the pieces (split at line ends; lines end in '\n').
template <class F>
void for_each_line(std::span<const std::string_view> pieces, F&& f) {
  for (auto text : pieces) {
    while (!text.empty()) {
      const auto end = text.find('\n');
      const auto line = text.substr(0, end);
      if (!line.empty()) f(line);
      if (end == std::string_view::npos) break;
      text.remove_prefix(end + 1);
    }
  }
}

/// Splits `line` at tabs into up to N fields (missing ones empty).
template <std::size_t N>
std::array<std::string_view, N> fields(std::string_view line) {
  std::array<std::string_view, N> out{};
  for (std::size_t i = 0; i < N; ++i) {
    const auto tab = line.find('\t');
    out[i] = line.substr(0, tab);
    if (tab == std::string_view::npos) break;
    line.remove_prefix(tab + 1);
  }
  return out;
}

/// Calls f(item) for each item of a comma-separated list (none when empty).
template <class F>
void for_each_item(std::string_view list, F&& f) {
  while (!list.empty()) {
    const auto comma = list.find(',');
    f(list.substr(0, comma));
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
}

constexpr std::uint32_t base36(std::string_view s) {
  std::uint32_t n = 0;
  for (const char c : s) n = n * 36 + static_cast<std::uint32_t>(c <= '9' ? c - '0' : c - 'a' + 10);
  return n;
}

}  // namespace detail::lexicon

inline std::span<const english_lexicon::rule> english_lexicon::rules(word_pos p) {
  static constexpr rule noun[] = {{"s", ""},      {"ses", "s"},   {"xes", "x"},   {"zes", "z"},
                                  {"ches", "ch"}, {"shes", "sh"}, {"men", "man"}, {"ies", "y"}};
  static constexpr rule verb[] = {{"s", ""},   {"ies", "y"}, {"es", "e"},  {"es", ""},
                                  {"ed", "e"}, {"ed", ""},   {"ing", "e"}, {"ing", ""}};
  static constexpr rule adj[] = {{"er", ""}, {"est", ""}, {"er", "e"}, {"est", "e"}};
  switch (p) {
    case word_pos::noun:
      return noun;
    case word_pos::verb:
      return verb;
    case word_pos::adj:
      return adj;
    case word_pos::adv:
      break;
  }
  return {};
}

inline english_lexicon english_lexicon::parse_wordnet() {
  namespace d = detail::lexicon;
  english_lexicon lex;
  lex.words_.reserve(110000);
  std::string word;  // front-coded: the previous word's first P characters + this line's suffix
  d::for_each_line(detail::wordnet::words, [&](std::string_view line) {
    const auto [coded, letters, synsets] = d::fields<3>(line);
    word.resize(std::min<std::size_t>(d::base36(coded.substr(0, 1)), word.size()));
    word.append(coded.substr(1));
    auto& info = lex.intern(word);
    for (const char c : letters) {
      if (c == 'm') {  // a minor noun (never tagged): for the relations only
        info.pos_mask |= minor_noun_bit;
        continue;
      }
      const auto p = c == 'n'   ? word_pos::noun
                     : c == 'v' ? word_pos::verb
                     : c == 'a' ? word_pos::adj
                                : word_pos::adv;
      if ((info.pos_mask & pos_bits) == 0) ++lex.lemma_count_;
      info.pos_mask |= bit(p);
    }
    if (!synsets.empty())
      info.synsets.reserve(
          1 + static_cast<std::size_t>(std::count(synsets.begin(), synsets.end(), ',')));
    d::for_each_item(synsets, [&](std::string_view id) {
      const auto s = d::base36(id);
      info.synsets.push_back(s);
      lex.next_synset_ = std::max(lex.next_synset_, s + 1);
    });
  });
  d::for_each_line(detail::wordnet::exceptions, [&](std::string_view line) {
    const auto [inflected, pos, base] = d::fields<3>(line);
    const auto p = pos == "n"   ? word_pos::noun
                   : pos == "v" ? word_pos::verb
                   : pos == "a" ? word_pos::adj
                                : word_pos::adv;
    lex.exceptions_[index(p)].emplace(std::string(inflected), std::string(base));
  });
  lex.antonyms_.reserve(24000);
  d::for_each_line(detail::wordnet::antonyms, [&](std::string_view line) {
    const auto [key, direct, indirect] = d::fields<3>(line);
    const auto k = lex.intern(key).id;
    lex.mark_antonym_head(key);
    const auto add = [&](std::string_view other) {
      lex.antonyms_.insert(pair_key(k, lex.intern(other).id));
      lex.mark_antonym_head(other);
    };
    d::for_each_item(direct, add);
    d::for_each_item(indirect, add);
  });
  lex.hyper_begin_.reserve(67000);
  lex.hyper_ids_.reserve(70000);
  d::for_each_line(detail::wordnet::hypernyms, [&](std::string_view line) {
    lex.hyper_begin_.push_back(static_cast<std::uint32_t>(lex.hyper_ids_.size()));
    d::for_each_item(line, [&](std::string_view id) {
      const auto s = d::base36(id);
      lex.hyper_ids_.push_back(s);
      lex.next_synset_ = std::max(lex.next_synset_, s + 1);
    });
  });
  lex.hyper_begin_.push_back(static_cast<std::uint32_t>(lex.hyper_ids_.size()));
  return lex;
}

}  // namespace memhealth
