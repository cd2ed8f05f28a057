#pragma once
/// @file lexical_embedder.hpp
/// `lexical_embedder`: a deterministic, dependency-free stand-in for a sentence-embedding model.
///
/// It is **not** a semantic model: two texts score high only when they share words or character
/// n-grams ("never eats cilantro" vs "she never eats any cilantro"), not when they mean the same
/// thing in different words ("hates coriander"). It exists so that the tests, the examples, the
/// fault drills and the benchmarks have real, reproducible vectors without a model download, and
/// as a cheap first-pass embedder for lexical near-duplicate detection. Plug a real model in
/// through the `embedder` concept (embed/embedder.hpp) for paraphrase-level similarity.
///
/// ## Algorithm (version "lexical-v1")
/// 1. Normalise the text with `memhealth::text_normalizer` (NFKC, case folding, punctuation and
///    whitespace folding, optional synonyms): "Never eats cilantro!" -> "never eats cilantro".
/// 2. Features: every word (split on the single spaces the normaliser leaves), and the character
///    3-grams and 4-grams of every word wrapped in boundary markers, "<eats>" -> "<ea", "eat",
///    "ats", "ts>", "<eat", "eats", "ats>" (subword n-grams as in fastText: Bojanowski, Grave,
///    Joulin, Mikolov, "Enriching Word Vectors with Subword Information", TACL 2017). N-grams
///    are over UTF-8 **code points**, not bytes, so Chinese text, which has no spaces and is one
///    "word" per clause, is covered by its character n-grams ("我不吃香菜" -> "<我不", "我不吃",
///    ...). Bytes of invalid UTF-8 count as one code point each.
/// 3. Each distinct feature f with count c gets weight w = g * (1 + ln c) (sub-linear tf), with
///    g = 1 for words and g = 0.5 for n-grams.
/// 4. Hashing trick (Weinberger, Dasgupta, Langford, Smola, Attenberg, "Feature Hashing for Large
///    Scale Multitask Learning", ICML 2009): a fixed 64-bit hash of the feature (FNV-1a over the
///    bytes, then a splitmix64 finaliser mixed with the seed and the feature family) picks the
///    output index (h mod d) and, from an independent bit of a second mix, the sign +-1;
///    `out[index] += sign * w`. The signed projection keeps inner products unbiased under
///    collisions.
/// 5. L2-normalise. A text with no features (empty, or only punctuation and spaces) gives the
///    **zero vector** (norm 0), which the structural check reports as a zero-norm embedding.
///
/// The hash is fixed and platform independent (no `std::hash`), so vectors are bit-identical for
/// equal inputs, dimension and seed across compilers and machines (up to float summation, which is
/// done in a fixed order).

#include <utf8proc.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/embed/embedder.hpp"
#include "memhealth/text/normalize.hpp"

namespace memhealth {

namespace detail {

/// FNV-1a, 64-bit (Fowler, Noll, Vo).
constexpr std::uint64_t lexical_fnv1a64(std::string_view s,
                                        std::uint64_t h = 0xcbf29ce484222325ull) noexcept {
  for (const char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

/// splitmix64 finaliser (Steele, Lea, Flood 2014).
constexpr std::uint64_t lexical_splitmix64(std::uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

inline constexpr std::uint64_t lexical_word_family = 0x776f7264ull;     // "word"
inline constexpr std::uint64_t lexical_ngram_family = 0x6e6772616dull;  // "ngram"

}  // namespace detail

/// Options of a `lexical_embedder`.
struct lexical_embedder_options {
  std::size_t dimension = 384;  ///< output dimension d (> 0)
  std::uint64_t seed = 0;  ///< hash seed; different seeds give different (equally valid) spaces
  synonym_table synonyms;  ///< passed to the text normaliser (normalised keys and values)
};

/// Deterministic hashed bag-of-words-and-character-n-grams embedder; satisfies `embedder`.
/// See the file comment for the algorithm and its sources. Thread-safe for concurrent `embed`
/// calls (all members are read-only after construction).
class lexical_embedder {
 public:
  /// Default: d = 384, seed 0, no synonyms.
  lexical_embedder() : lexical_embedder(lexical_embedder_options{}) {}

  /// @throws memhealth::error(invalid_argument) when `options.dimension == 0`.
  explicit lexical_embedder(lexical_embedder_options options)
      : dimension_(options.dimension), seed_(options.seed) {
    if (dimension_ == 0)
      throw error(error_code::invalid_argument, "lexical_embedder: dimension must be > 0");
    normalizer_.synonyms = std::move(options.synonyms);
    normalizer_.keep_meaning = false;  // "lexical-v1": every punctuation and symbol folded
    version_ = "lexical-v1-d" + std::to_string(dimension_) + "-s" + std::to_string(seed_);
    if (!normalizer_.synonyms.empty()) {  // the synonym table changes the space: name it
      std::uint64_t h = detail::lexical_fnv1a64("");
      for (const auto& [k, v] : normalizer_.synonyms) {
        h = detail::lexical_fnv1a64(k, h);
        h = detail::lexical_fnv1a64(std::string_view("\x1f", 1), h);
        h = detail::lexical_fnv1a64(v, h);
        h = detail::lexical_fnv1a64(std::string_view("\x1e", 1), h);
      }
      static constexpr char hex[] = "0123456789abcdef";
      version_ += "-syn";
      for (int i = 60; i >= 32; i -= 4) version_ += hex[(h >> i) & 0xf];
    }
  }

  /// Shorthand for `lexical_embedder({dimension, seed})`.
  lexical_embedder(std::size_t dimension, std::uint64_t seed)
      : lexical_embedder(lexical_embedder_options{dimension, seed, {}}) {}

  /// Output dimension d.
  [[nodiscard]] std::size_t dimension() const noexcept { return dimension_; }

  /// "lexical-v1-d<d>-s<seed>", plus "-syn<8 hex digits>" (a hash of the table) with synonyms.
  [[nodiscard]] std::string_view version() const noexcept { return version_; }

  /// The normaliser applied before feature extraction.
  [[nodiscard]] const text_normalizer& normalizer() const noexcept { return normalizer_; }

  /// Embeds UTF-8 text (invalid UTF-8 is accepted) into `out`: d floats, unit L2 norm, or all
  /// zeros when the normalised text is empty.
  /// @throws memhealth::error(invalid_argument) when `out.size() != dimension()`.
  /// @complexity O(length of text * log) (features are sorted to merge counts); allocates.
  void embed(std::string_view text, std::span<float> out) const {
    if (out.size() != dimension_)
      throw error(error_code::invalid_argument,
                  "lexical_embedder::embed: output span has " + std::to_string(out.size()) +
                      " floats, expected " + std::to_string(dimension_));
    std::fill(out.begin(), out.end(), 0.0f);
    const std::string norm = normalizer_(text);
    std::vector<std::uint64_t> words, grams;
    collect_features(norm, words, grams);
    double acc_norm = 0.0;
    std::vector<double> acc(dimension_, 0.0);
    add_features(words, 1.0, acc);
    add_features(grams, 0.5, acc);
    for (const double x : acc) acc_norm += x * x;
    if (acc_norm <= 0.0) return;
    const double inv = 1.0 / std::sqrt(acc_norm);
    for (std::size_t i = 0; i < dimension_; ++i) out[i] = static_cast<float>(acc[i] * inv);
  }

 private:
  [[nodiscard]] std::uint64_t feature_hash(std::string_view bytes,
                                           std::uint64_t family) const noexcept {
    return detail::lexical_splitmix64(detail::lexical_fnv1a64(bytes) ^
                                      detail::lexical_splitmix64(seed_ ^ family));
  }

  void collect_features(const std::string& norm, std::vector<std::uint64_t>& words,
                        std::vector<std::uint64_t>& grams) const {
    std::string marked;
    std::vector<std::size_t> bounds;  // byte offset of each code point start, plus the end
    std::size_t start = 0;
    while (start < norm.size()) {
      std::size_t end = norm.find(' ', start);
      if (end == std::string::npos) end = norm.size();
      if (end > start) {
        const std::string_view word(norm.data() + start, end - start);
        words.push_back(feature_hash(word, detail::lexical_word_family));
        marked.assign("<");
        marked.append(word);
        marked.push_back('>');
        bounds.clear();
        const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(marked.data());
        std::size_t off = 0;
        while (off < marked.size()) {
          bounds.push_back(off);
          utf8proc_int32_t cp = 0;
          auto len =
              utf8proc_iterate(p + off, static_cast<utf8proc_ssize_t>(marked.size() - off), &cp);
          off += len > 0 ? static_cast<std::size_t>(len) : 1u;  // invalid byte: one unit
        }
        bounds.push_back(marked.size());
        const std::size_t cps = bounds.size() - 1;
        for (std::size_t n = 3; n <= 4; ++n)
          for (std::size_t i = 0; i + n <= cps; ++i)
            grams.push_back(
                feature_hash(std::string_view(marked.data() + bounds[i], bounds[i + n] - bounds[i]),
                             detail::lexical_ngram_family + n));
      }
      start = end + 1;
    }
  }

  void add_features(std::vector<std::uint64_t>& hashes, double group_weight,
                    std::vector<double>& acc) const {
    std::sort(hashes.begin(), hashes.end());
    for (std::size_t i = 0; i < hashes.size();) {
      std::size_t j = i;
      while (j < hashes.size() && hashes[j] == hashes[i]) ++j;
      const std::uint64_t h = hashes[i];
      const double w = group_weight * (1.0 + std::log(static_cast<double>(j - i)));
      const std::size_t index = static_cast<std::size_t>(h % dimension_);
      const double sign = (detail::lexical_splitmix64(h) >> 63) != 0 ? -1.0 : 1.0;
      acc[index] += sign * w;
      i = j;
    }
  }

  std::size_t dimension_;
  std::uint64_t seed_;
  text_normalizer normalizer_;
  std::string version_;
};

static_assert(embedder<lexical_embedder>);
static_assert(embedder<embedder_archetype>);

}  // namespace memhealth
