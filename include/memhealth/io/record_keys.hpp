#pragma once
/// @file record_keys.hpp
/// The typed field names of the JSONL record format (docs/format.md) in their canonical order,
/// shared by the decoder (record_decode.hpp) and the encoder (record_encode.hpp). Internal.

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string_view>

namespace memhealth::detail::jsonl {

enum class key_id : std::uint8_t {
  id,
  content,
  embedding,
  embedding_version,
  metadata,
  created_at,
  updated_at,
  last_accessed_at,
  source,
  scope,
  status,
  kind,
  claim,
  duplicate_of,
  related_ids,
  related_notes,
  supersedes,
  confidence,
  effective_weight,
  unknown
};

inline constexpr std::string_view key_names[] = {
    "id",         "content",      "embedding",       "embedding_version",
    "metadata",   "created_at",   "updated_at",      "last_accessed_at",
    "source",     "scope",        "status",          "kind",
    "claim",      "duplicate_of", "related_ids",     "related_notes",
    "supersedes", "confidence",   "effective_weight"};

inline key_id key_of(std::string_view k) noexcept {
  for (std::size_t i = 0; i < std::size(key_names); ++i)
    if (key_names[i] == k) return static_cast<key_id>(i);
  return key_id::unknown;
}

}  // namespace memhealth::detail::jsonl
