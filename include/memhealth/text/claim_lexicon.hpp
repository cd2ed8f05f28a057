#pragma once
/// @file claim_lexicon.hpp
/// `claim_lexicon`: the cue words the claim extractor reads (claim_words.hpp) plus the user's own
/// additions (`add`, `load_tsv`), over the WordNet-derived English lexicon (lexicon.hpp).

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "memhealth/text/claim_words.hpp"
#include "memhealth/text/lexicon.hpp"

namespace memhealth {

/// The cue tables the extractor reads (claim_words.hpp) plus the user's additions, and the English
/// lexicon (lexicon.hpp) for lemmas and synonyms.
class claim_lexicon {
 public:
  /// The built-in tables over the WordNet-derived lexicon (`english_lexicon::builtin()`'s
  /// contents, parsed for this table alone: `english_lexicon::parse_builtin()`). Parsed once;
  /// thread-safe.
  static const claim_lexicon& builtin() {
    static const claim_lexicon lex{english_lexicon::parse_builtin()};
    return lex;
  }

  /// Tables from claim_words.hpp over the given English lexicon (copied).
  explicit claim_lexicon(english_lexicon english) : english_(std::move(english)) {
    for (const auto& [a, b] : claim_words::english_antonyms) english_.add_antonym(a, b);
    for (const auto& [a, b] : claim_words::kinship_is_a) english_.add_is_a(a, b);
    for (const auto& [a, b] : claim_words::service_is_a) english_.add_is_a(a, b);
    for (const auto& [a, b] : claim_words::food_is_a) english_.add_is_a(a, b);
    for (const auto& [a, b] : claim_words::english_synonyms) english_.add_synonym(a, b);
    for (const auto& [w, c] : claim_words::english) en_[std::string(w)] |= c;
    for (const auto& [w, c] : claim_words::chinese) {
      zh_[std::string(w)] |= c;
      max_zh_ = std::max(max_zh_, w.size());
    }
  }

  /// Adds a cue word. `lang` "en" (lowercase word, apostrophes removed) or "zh"; `cue` one or
  /// more claim_words::cue bits. @throws std::invalid_argument for another lang or an empty word.
  void add(std::string_view lang, std::string_view word, std::uint32_t cue) {
    if (word.empty()) throw std::invalid_argument("claim_lexicon::add: empty word");
    if (lang == "en")
      en_[std::string(word)] |= cue;
    else if (lang == "zh") {
      zh_[std::string(word)] |= cue;
      max_zh_ = std::max(max_zh_, word.size());
    } else
      throw std::invalid_argument("claim_lexicon::add: lang must be en or zh, not '" +
                                  std::string(lang) + "'");
  }

  /// Cue bits of a cue name ("negator", "att_positive", "att_negative", "aversion", "terminate",
  /// "change", "additive", "time", "scene", "stop", "restrictive", "evaluation_pos",
  /// "evaluation_neg", "relative", "tolerate"); 0 for an unknown name.
  static std::uint32_t cue_named(std::string_view name) noexcept {
    using namespace claim_words;
    constexpr std::pair<std::string_view, std::uint32_t> names[] = {
        {"negator", negator},
        {"change", change},
        {"att_positive", att_positive},
        {"att_negative", att_negative},
        {"tolerate", tolerate},
        {"aversion", aversion},
        {"terminate", terminate},
        {"additive", additive},
        {"time", time},
        {"scene", scene},
        {"stop", stop},
        {"restrictive", restrictive},
        {"evaluation_pos", evaluation_pos},
        {"evaluation_neg", evaluation_neg},
        {"relative", relative}};
    for (const auto& [n, c] : names)
      if (n == name) return c;
    return 0;
  }

  /// Reads additions from a TSV file: `cue<TAB>en|zh<TAB>word<TAB>cue-name` lines add a cue word,
  /// `synonym<TAB>a<TAB>b`, `antonym<TAB>a<TAB>b` and `is_a<TAB>specific<TAB>general` lines go to
  /// the English lexicon (`english_lexicon::add_is_a`: "labradoodle" becomes a kind of "dog",
  /// and so of what a dog is a kind of); '#' comments, blank lines and a UTF-8 byte-order mark
  /// at the start are skipped. @throws std::runtime_error naming the file and line on an
  /// unreadable file, an unknown line type or cue name, or a wrong number of fields.
  void load_tsv(const std::filesystem::path& file) {
    std::ifstream in(file);
    if (!in) throw std::runtime_error("cannot read lexicon file " + file.string());
    std::string line;
    for (std::size_t no = 1; std::getline(in, line); ++no) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (no == 1 && line.starts_with("\xEF\xBB\xBF")) line.erase(0, 3);  // byte-order mark
      if (line.empty() || line[0] == '#') continue;
      std::vector<std::string> f;
      for (std::size_t p = 0;;) {
        const std::size_t t = line.find('\t', p);
        f.push_back(line.substr(p, t == std::string::npos ? std::string::npos : t - p));
        if (t == std::string::npos) break;
        p = t + 1;
      }
      auto fail = [&](const std::string& why) {
        throw std::runtime_error(file.string() + ":" + std::to_string(no) + ": " + why);
      };
      if (f[0] == "cue") {
        if (f.size() != 4) fail("expected cue<TAB>en|zh<TAB>word<TAB>cue-name");
        const std::uint32_t c = cue_named(f[3]);
        if (c == 0) fail("unknown cue name '" + f[3] + "'");
        if (f[1] != "en" && f[1] != "zh") fail("lang must be en or zh");
        if (f[2].empty()) fail("empty word");
        add(f[1], f[2], c);
      } else if (f[0] == "synonym" || f[0] == "antonym" || f[0] == "is_a") {
        if (f.size() != 3 || f[1].empty() || f[2].empty())
          fail(f[0] == "is_a" ? "expected is_a<TAB>specific<TAB>general"
                              : "expected " + f[0] + "<TAB>word<TAB>word");
        if (f[0] == "synonym")
          english_.add_synonym(f[1], f[2]);
        else if (f[0] == "antonym")
          english_.add_antonym(f[1], f[2]);
        else
          english_.add_is_a(f[1], f[2]);
      } else {
        fail("unknown line type '" + f[0] + "' (cue, synonym, antonym or is_a)");
      }
    }
  }

  /// Cue bits of an English word (0 = none).
  [[nodiscard]] std::uint32_t en(std::string_view w) const {
    const auto it = en_.find(w);
    return it == en_.end() ? 0u : it->second;
  }
  /// Cue bits of a Chinese word (0 = none).
  [[nodiscard]] std::uint32_t zh(std::string_view w) const {
    const auto it = zh_.find(w);
    return it == zh_.end() ? 0u : it->second;
  }
  /// Longest Chinese cue, in bytes.
  [[nodiscard]] std::size_t max_zh_bytes() const noexcept { return max_zh_; }
  /// The English lexicon (lemmas, synonyms, antonyms).
  [[nodiscard]] const english_lexicon& english() const noexcept { return english_; }

 private:
  // Deliberately not noexcept: libstdc++ then keeps each node's hash code (as for std::string
  // keys), so a lookup compares codes before strings and never rehashes a node's key to find
  // where its bucket ends (a noexcept custom hash counts as "fast" and is recomputed instead;
  // claims/extract about 5 % faster without it, 2026-12-07).
  struct hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const {  // NOLINT(performance-noexcept-*)
      return std::hash<std::string_view>{}(s);
    }
  };
  english_lexicon english_;
  std::unordered_map<std::string, std::uint32_t, hash, std::equal_to<>> en_, zh_;
  std::size_t max_zh_ = 0;
};

}  // namespace memhealth
