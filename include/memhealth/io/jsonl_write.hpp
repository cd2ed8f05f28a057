#pragma once
/// @file jsonl_write.hpp
/// The JSONL writers: canonical JSONL of a range of records or of a store's block (`to_jsonl`),
/// and atomic, durable files of it (`write_jsonl`, through `atomic_write`).

#include <concepts>
#include <cstddef>
#include <filesystem>
#include <ranges>
#include <span>
#include <string>
#include <type_traits>

#include "memhealth/io/atomic_write.hpp"
#include "memhealth/io/record_encode.hpp"
#include "memhealth/record/memory_record.hpp"

namespace memhealth {

namespace detail::jsonl {
inline constexpr std::size_t write_chunk = std::size_t{1} << 20;
}  // namespace detail::jsonl

/// A range whose elements are `memory_record`s.
template <class Range>
concept memory_record_range = std::ranges::input_range<Range> &&
    std::is_same_v<std::remove_cvref_t<std::ranges::range_reference_t<Range>>, memory_record>;

/// Canonical JSONL of a range of records: one `append_json` object per record, each followed by
/// `\n`. @complexity O(total size).
template <memory_record_range Range>
[[nodiscard]] std::string to_jsonl(const Range& records) {
  std::string s;
  for (const memory_record& r : records) {
    append_json(r, s);
    s.push_back('\n');
  }
  return s;
}

/// A store of `memory_record`s that keeps embeddings in its own block (`memory_store<>` is one):
/// `size()`, `record(i)` as `const memory_record&` and `embedding(i)` as `std::span<const float>`.
/// Satisfied without including the store's header, so io/ does not depend on store/.
template <class Store>
concept memory_record_block_store =
    !memory_record_range<Store> && requires(const Store& s, std::size_t i) {
  { s.size() } -> std::convertible_to<std::size_t>;
  { s.record(i) } -> std::same_as<const memory_record&>;
  { s.embedding(i) } -> std::convertible_to<std::span<const float>>;
};

/// Canonical JSONL of every record of an in-memory store, in index order, embeddings taken from
/// the store's block (no record is copied).
template <memory_record_block_store Store>
[[nodiscard]] std::string to_jsonl(const Store& store) {
  std::string s;
  for (std::size_t i = 0; i < store.size(); ++i) {
    detail::jsonl::append_record(store.record(i), store.embedding(i), s);
    s.push_back('\n');
  }
  return s;
}

/// Writes records as canonical JSONL (see `append_json`) to `path`, atomically: the data goes to
/// a temporary file in the same directory, which is fsync'ed and renamed over `path`; readers see
/// the old file or the complete new one, never a partial file.
/// @throws memhealth::error with `error_code::io` when the temporary file cannot be created,
///         written, synced or renamed (the temporary file is removed; `path` is untouched).
/// @complexity O(total size); memory O(1 MiB) buffer.
template <memory_record_range Range>
void write_jsonl(const std::filesystem::path& path, const Range& records) {
  atomic_write(path, [&](std::string& buf, auto& flush) {
    for (const memory_record& r : records) {
      append_json(r, buf);
      buf.push_back('\n');
      if (buf.size() >= detail::jsonl::write_chunk) flush();
    }
  });
}

/// Writes every record of an in-memory store (index order) as canonical JSONL, atomically (see
/// the range overload). Embeddings come from the store's block via `store.embedding(i)`; records
/// are not copied. @throws memhealth::error(error_code::io) as the range overload.
template <memory_record_block_store Store>
void write_jsonl(const std::filesystem::path& path, const Store& store) {
  atomic_write(path, [&](std::string& buf, auto& flush) {
    for (std::size_t i = 0; i < store.size(); ++i) {
      detail::jsonl::append_record(store.record(i), store.embedding(i), buf);
      buf.push_back('\n');
      if (buf.size() >= detail::jsonl::write_chunk) flush();
    }
  });
}

}  // namespace memhealth
