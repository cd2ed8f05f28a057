#pragma once
/// @file embedder.hpp
/// The `embedder` concept: how memhealth turns text into vectors (re-embedding after a repair,
/// filling missing embeddings, the migration gate of a model switch), and the two algorithms
/// built on it, `embed_missing` and `embed_batch`.
///
/// memhealth ships no neural model. A user plugs in a real one by writing a small type that
/// satisfies `embedder`, for example a wrapper around an ONNX Runtime session running a
/// sentence-embedding model:
/// @code
/// struct onnx_embedder {
///   Ort::Session* session;                       // owned elsewhere
///   std::string model_version = "minilm-l6-v2-onnx-fp32-l2";
///   std::size_t dimension() const { return 384; }
///   std::string_view version() const { return model_version; }
///   void embed(std::string_view text, std::span<float> out) const {
///     if (out.size() != dimension())
///       throw memhealth::error(memhealth::error_code::invalid_argument, "embed: wrong output
///       size");
///     // tokenize, run the session, mean-pool, L2-normalise into out ...
///   }
///   // optional, used by embed_batch when present (one session run for many texts):
///   void embed_batch(std::span<const std::string_view> texts, std::span<float> out) const;
/// };
/// static_assert(memhealth::embedder<onnx_embedder>);
/// @endcode
/// `lexical_embedder` (embed/lexical_embedder.hpp) is a deterministic stand-in used by the tests,
/// the examples and the fault drills; `embedder_archetype` below is the do-nothing model of the
/// concept.
///
/// Vectors are never edited in place (SPEC section 3): re-embedding writes a whole new vector and
/// tags it with the embedder's `version()`.

#include <concepts>
#include <cstddef>
#include <iterator>
#include <ranges>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/record/memory_record.hpp"

namespace memhealth {

/// An embedding model. A type `E` is an embedder when, for `const E& e`:
/// - `e.dimension()` -> `std::size_t`: the output dimension d (> 0, fixed for the object's life);
/// - `e.version()` -> convertible to `std::string_view`: the model and normalisation identity
///   that goes into `embedding_version` (two embedders with equal versions must produce the same
///   vector space; a version that changes marks a model switch);
/// - `e.embed(text, out)` with `std::string_view text` (UTF-8) and `std::span<float> out`: writes
///   exactly d floats (float32) into `out`. **Errors:** when `out.size() != e.dimension()` it must
///   throw `memhealth::error(error_code::invalid_argument)`; it must not write a partial or
///   padded vector. Any other failure of the model also throws `memhealth::error`.
/// Optionally `e.embed_batch(std::span<const std::string_view>, std::span<float>)` (n texts into
/// an n x d row-major block), which `embed_batch` then uses instead of n single calls.
template <class E>
concept embedder = requires(const E& e, std::string_view text, std::span<float> out) {
  { e.dimension() } -> std::convertible_to<std::size_t>;
  { e.version() } -> std::convertible_to<std::string_view>;
  e.embed(text, out);
};

/// The do-nothing archetype of `embedder`: dimension d (default 4), version "archetype", and
/// `embed` writes d zeros (after checking the output size). Useful in static tests and as the
/// minimal example of the concept; its zero vectors are flagged by the structural check.
struct embedder_archetype {
  std::size_t d = 4;  ///< output dimension

  /// @return d.
  [[nodiscard]] std::size_t dimension() const noexcept { return d; }
  /// @return "archetype".
  [[nodiscard]] std::string_view version() const noexcept { return "archetype"; }
  /// Writes d zeros. @throws memhealth::error(invalid_argument) when `out.size() != d`.
  void embed(std::string_view /*text*/, std::span<float> out) const {
    if (out.size() != d)
      throw error(error_code::invalid_argument, "embedder_archetype::embed: output span has " +
                                                    std::to_string(out.size()) +
                                                    " floats, expected " + std::to_string(d));
    for (auto& x : out) x = 0.0f;
  }
};

namespace detail {
template <class E>
concept has_member_embed_batch = requires(const E& e, std::span<const std::string_view> texts,
                                          std::span<float> out) {
  e.embed_batch(texts, out);
};
}  // namespace detail

/// Embeds n texts into a caller-provided n x d block (row-major, float32): row i is the vector of
/// the i-th text, d = `e.dimension()`.
///
/// Uses `e.embed_batch(texts, out)` when the embedder provides it (a model that batches on a GPU
/// or in one ONNX session run), otherwise calls `e.embed` per text.
/// @param texts any sized forward range whose elements convert to `std::string_view`.
/// @param out n x d floats; `out.size()` must equal `n * d`.
/// @throws memhealth::error(invalid_argument) when `out.size() != n * d`; whatever `e.embed`
///         throws (rows before the failing one are then written, the rest are unspecified).
/// @complexity n calls of `e.embed` (or one of `e.embed_batch`); allocates only an n-element
///             array of views when the member batch form is used.
template <embedder E, std::ranges::forward_range Texts>
requires std::convertible_to<std::ranges::range_reference_t<Texts>, std::string_view>
void embed_batch(const E& e, const Texts& texts, std::span<float> out) {
  const std::size_t d = static_cast<std::size_t>(e.dimension());
  const auto n = static_cast<std::size_t>(std::ranges::distance(texts));
  if (out.size() != n * d)
    throw error(error_code::invalid_argument, "embed_batch: output span has " +
                                                  std::to_string(out.size()) +
                                                  " floats, expected " + std::to_string(n) +
                                                  " texts x " + std::to_string(d) + " dimensions");
  if constexpr (detail::has_member_embed_batch<E>) {
    std::vector<std::string_view> views;
    views.reserve(n);
    for (auto&& t : texts) views.emplace_back(std::string_view(t));
    e.embed_batch(std::span<const std::string_view>(views), out);
  } else {
    std::size_t i = 0;
    for (auto&& t : texts) {
      e.embed(std::string_view(t), out.subspan(i * d, d));
      ++i;
    }
  }
}

/// Fills the embedding of every record whose `embedding` is empty (missing) from its `content`,
/// and sets that record's `embedding_version` to `e.version()`.
///
/// Records that already have a vector are never touched, whatever its length or version: vectors
/// are never edited in place, and re-embedding stale or wrong vectors is a repair action (tier 3)
/// that goes through the planner and the write-ahead log, not this helper.
/// @return how many records were embedded.
/// @throws whatever `e.embed` throws; the record being embedded is then left unchanged (the vector
///         is built in a scratch buffer and moved in only when complete); records before it keep
///         their new vectors.
/// @complexity one `e.embed` call per record with a missing embedding; one d-float allocation each.
template <embedder E>
std::size_t embed_missing(std::vector<memory_record>& records, const E& e) {
  const std::size_t d = static_cast<std::size_t>(e.dimension());
  std::size_t count = 0;
  for (auto& r : records) {
    if (!r.embedding.empty()) continue;
    std::vector<float> v(d);
    e.embed(r.content, std::span<float>(v));
    r.embedding = std::move(v);
    r.embedding_version = std::string(std::string_view(e.version()));
    ++count;
  }
  return count;
}

}  // namespace memhealth
