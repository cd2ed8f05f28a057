#pragma once
/// @file normalize.hpp
/// Text normalisation for exact-duplicate hashing and blocking keys: a policy.
///
/// `text_normalizer` (the default policy) applies, in order:
/// 1. Unicode NFKC with case folding (utf8proc: COMPAT | COMPOSE | CASEFOLD | IGNORE | STRIPCC),
///    so full-width "Ｃｉｌａｎｔｒｏ" and "cilantro" agree;
/// 2. punctuation folding: every code point of a Unicode punctuation category, and modifier
///    symbols (Sk), become a word break (so "cilantro!!!", "cilantro." and "cilantro" agree;
///    Chinese "，。" too), except the characters that change what a text says, which are kept
///    (`keep_meaning`, on by default): currency, math and other symbols (categories Sc, Sm, So:
///    "$5000" / "€5000", "C++" / "C", "20°C"), a '-' or '%' on a number ("-5", "5%", "5 %"),
///    punctuation between two digits ("5,000" / "5.000", "9:30", "4/5"), and '#' after a letter
///    or before a letter or digit ("C#", "#12");
/// 3. whitespace folding: runs of separators collapse to one ASCII space, none at either end;
/// 4. an optional synonym table applied per word (after steps 1-3; keys and values are given in
///    normalised form, e.g. {"nyc", "new york"}).
/// Invalid UTF-8 never throws: the bytes are kept as they are, only ASCII folding is applied.
/// A user policy is any type with `std::string operator()(std::string_view) const`.

#include <boost/container/flat_map.hpp>
#include <utf8proc.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace memhealth {

/// Maps a normalised word (or phrase without spaces) to its canonical form.
using synonym_table = boost::container::flat_map<std::string, std::string, std::less<>>;

/// Concept for a text normalisation policy.
template <class N>
concept text_normalization_policy = requires(const N& n, std::string_view s) {
  { n(s) } -> std::convertible_to<std::string>;
};

/// Default normaliser: NFKC + case folding + punctuation and whitespace folding + synonyms.
struct text_normalizer {
  synonym_table synonyms;        ///< per-word replacements (normalised keys), empty = none
  bool fold_punctuation = true;  ///< treat punctuation and symbols as word breaks
  /// With `fold_punctuation`: keep the symbols, signs, separators and '#' that change what a
  /// text says (step 2 of the file comment); false folds every punctuation and symbol code point
  /// (the lexical embedder's "lexical-v1" space).
  bool keep_meaning = true;

  /// Normalises UTF-8 text. @return the normalised UTF-8 text (may be empty).
  /// @complexity O(length); allocates the result.
  [[nodiscard]] std::string operator()(std::string_view text) const {
    std::string mapped;
    {
      utf8proc_uint8_t* out = nullptr;
      const auto n = utf8proc_map(
          reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
          static_cast<utf8proc_ssize_t>(text.size()), &out,
          static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPAT | UTF8PROC_COMPOSE |
                                         UTF8PROC_CASEFOLD | UTF8PROC_IGNORE | UTF8PROC_STRIPCC));
      std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> guard(out, &std::free);
      if (n >= 0) {
        mapped.assign(reinterpret_cast<const char*>(out), static_cast<std::size_t>(n));
      } else {  // invalid UTF-8: ASCII-only folding of the raw bytes
        mapped.assign(text);
        for (auto& c : mapped)
          if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      }
    }
    // the code points (-1: an invalid byte) and their bytes, so a character's neighbours count
    struct unit {
      utf8proc_int32_t cp;
      std::string_view bytes;
    };
    std::vector<unit> units;
    units.reserve(mapped.size());
    {
      const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(mapped.data());
      utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(mapped.size());
      while (left > 0) {
        utf8proc_int32_t cp = -1;
        auto len = utf8proc_iterate(p, left, &cp);
        if (len <= 0) {  // invalid byte: keep it as is
          len = 1;
          cp = -1;
        }
        units.push_back({cp, std::string_view(reinterpret_cast<const char*>(p),
                                              static_cast<std::size_t>(len))});
        p += len;
        left -= len;
      }
    }
    auto category = [&](std::size_t k) {
      return k < units.size() && units[k].cp >= 0 ? utf8proc_category(units[k].cp)
                                                  : UTF8PROC_CATEGORY_CN;
    };
    auto digit = [&](std::size_t k) { return category(k) == UTF8PROC_CATEGORY_ND; };
    auto letter_or_digit = [&](std::size_t k) {
      const auto c = category(k);
      return (c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO) ||
             (c >= UTF8PROC_CATEGORY_ND && c <= UTF8PROC_CATEGORY_NO);
    };
    // whether punctuation at k changes what the text says (step 2 of the file comment)
    auto meaningful = [&](std::size_t k) {
      const utf8proc_int32_t cp = units[k].cp;
      const bool before_digit = digit(k + 1), after_digit = k > 0 && digit(k - 1);
      if (before_digit && after_digit) return true;  // "5,000", "9:30", "4/5"
      if (category(k) == UTF8PROC_CATEGORY_PD)
        return before_digit && !(k > 0 && letter_or_digit(k - 1));
      if (cp == '%' || cp == 0x2030) {  // '%', per mille, on a number ("5%", "5 %")
        std::size_t b = k;
        while (b > 0 && units[b - 1].cp == ' ') --b;
        return b > 0 && digit(b - 1);
      }
      if (cp == '#')
        return (k > 0 && category(k - 1) >= UTF8PROC_CATEGORY_LU &&
                category(k - 1) <= UTF8PROC_CATEGORY_LO) ||
               letter_or_digit(k + 1);
      return false;
    };
    std::string folded;
    folded.reserve(mapped.size());
    bool pending_space = false;
    auto flush_break = [&] { pending_space = !folded.empty(); };
    for (std::size_t k = 0; k < units.size(); ++k) {
      const utf8proc_int32_t cp = units[k].cp;
      bool is_break = false;
      if (cp >= 0) {
        const auto cat = utf8proc_category(cp);
        is_break = cat == UTF8PROC_CATEGORY_ZS || cat == UTF8PROC_CATEGORY_ZL ||
                   cat == UTF8PROC_CATEGORY_ZP || cp == '\t' || cp == '\n' || cp == '\r' ||
                   cp == '\f' || cp == '\v';
        if (fold_punctuation && !is_break) {
          const bool punct = cat >= UTF8PROC_CATEGORY_PC && cat <= UTF8PROC_CATEGORY_PO;
          const bool symbol = cat >= UTF8PROC_CATEGORY_SM && cat <= UTF8PROC_CATEGORY_SO;
          if (!keep_meaning)
            is_break = punct || symbol;
          else
            is_break = cat == UTF8PROC_CATEGORY_SK || (punct && !meaningful(k));
        }
      }
      if (is_break) {
        flush_break();
      } else {
        if (fold_punctuation && keep_meaning && (cp == '%' || cp == 0x2030))
          pending_space = false;  // "5 %" = "5%"
        if (pending_space) folded.push_back(' ');
        pending_space = false;
        folded.append(units[k].bytes);
      }
    }
    if (synonyms.empty()) return folded;
    std::string result;
    result.reserve(folded.size());
    std::size_t start = 0;
    while (start <= folded.size()) {
      std::size_t end = folded.find(' ', start);
      if (end == std::string::npos) end = folded.size();
      const std::string_view word(folded.data() + start, end - start);
      if (!result.empty()) result.push_back(' ');
      auto it = synonyms.find(word);
      result.append(it != synonyms.end() ? std::string_view(it->second) : word);
      start = end + 1;
    }
    return result;
  }
};

}  // namespace memhealth
