#pragma once
/// @file normalize.hpp
/// Text normalisation for exact-duplicate hashing and blocking keys: a policy.
///
/// `text_normalizer` (the default policy) applies, in order:
/// 1. Unicode NFKC with case folding (utf8proc: COMPAT | COMPOSE | CASEFOLD | IGNORE | STRIPCC),
///    so full-width "Ｃｉｌａｎｔｒｏ" and "cilantro" agree;
/// 2. punctuation folding: every code point of a Unicode punctuation or symbol category becomes a
///    word break (so "cilantro!!!", "cilantro." and "cilantro" agree; Chinese "，。" too);
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
    std::string folded;
    folded.reserve(mapped.size());
    bool pending_space = false;
    auto flush_break = [&] { pending_space = !folded.empty(); };
    const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(mapped.data());
    utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(mapped.size());
    while (left > 0) {
      utf8proc_int32_t cp = -1;
      auto len = utf8proc_iterate(p, left, &cp);
      if (len <= 0) {  // invalid byte: keep it as is
        len = 1;
        cp = -1;
      }
      bool is_break = false;
      if (cp >= 0) {
        const auto cat = utf8proc_category(cp);
        is_break = cat == UTF8PROC_CATEGORY_ZS || cat == UTF8PROC_CATEGORY_ZL ||
                   cat == UTF8PROC_CATEGORY_ZP || cp == '\t' || cp == '\n' || cp == '\r' ||
                   cp == '\f' || cp == '\v';
        if (fold_punctuation && !is_break)
          is_break = (cat >= UTF8PROC_CATEGORY_PC && cat <= UTF8PROC_CATEGORY_PO) ||
                     (cat >= UTF8PROC_CATEGORY_SM && cat <= UTF8PROC_CATEGORY_SO);
      }
      if (is_break) {
        flush_break();
      } else {
        if (pending_space) folded.push_back(' ');
        pending_space = false;
        folded.append(reinterpret_cast<const char*>(p), static_cast<std::size_t>(len));
      }
      p += len;
      left -= len;
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
