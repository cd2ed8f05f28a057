#pragma once
/// @file record_image.hpp
/// The record image policy: a lossless encoding of one whole record to bytes, which the
/// write-ahead log (wal.hpp) stores as before- and after-images and which rollback and recovery
/// decode to put a record back exactly.
///
/// ## Shape
/// An image is the text of **one JSON object** (UTF-8, RFC 8259, no surrounding whitespace): the
/// log embeds it verbatim in its intent frames. Two images are compared byte for byte, so the
/// encoding must be canonical (the same record always gives the same bytes) and lossless
/// (`decode(encode(r))` encodes to the same bytes again).
///
/// ## Lookup order (like the read side, record/traits.hpp)
/// For a record type `R`, `encode_image(r)` / `decode_image<R>(text)` use the first of:
/// 1. `record_traits<R>::encode_image(const R&) -> std::string` and
///    `record_traits<R>::decode_image(std::string_view) -> R` (static member functions or
///    callable constants);
/// 2. an ADL pair in `R`'s namespace: `std::string memhealth_encode_image(const R&)` and
///    `R memhealth_decode_image(std::string_view, std::type_identity<R>)`;
/// 3. for `memory_record`: its canonical JSON (`to_json`, io/jsonl.hpp), decoded with the JSONL
///    reader — the bytes every WAL written so far holds.
/// Both functions of a pair must come from the same rung.
///
/// @code
/// namespace crm {
/// struct note { std::string key, body, status; };
/// std::string memhealth_encode_image(const note& n);                        // {"key":..,...}
/// note memhealth_decode_image(std::string_view json, std::type_identity<note>);
/// }
/// @endcode

#include <concepts>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "memhealth/config.hpp"
#include "memhealth/io/jsonl.hpp"
#include "memhealth/record/memory_record.hpp"
#include "memhealth/record/traits.hpp"

namespace memhealth {

namespace detail::image {

void memhealth_encode_image() = delete;  // poison pills: ADL only
void memhealth_decode_image() = delete;

template <class R>
concept by_traits = requires(const R& r, std::string_view s) {
  { record_traits<R>::encode_image(r) } -> std::convertible_to<std::string>;
  { record_traits<R>::decode_image(s) } -> std::same_as<R>;
};

template <class R>
concept by_adl = requires(const R& r, std::string_view s) {
  { memhealth_encode_image(r) } -> std::convertible_to<std::string>;
  { memhealth_decode_image(s, std::type_identity<R>{}) } -> std::same_as<R>;
};

template <class R>
concept by_default = std::same_as<R, memory_record>;

}  // namespace detail::image

/// A record type with an image (see the lookup order above). Needed by `apply_plan`,
/// `rollback` and `recover` (executor.hpp), which log and restore whole records.
template <class R>
concept imaged_record =
    detail::image::by_traits<R> || detail::image::by_adl<R> || detail::image::by_default<R>;

/// Encodes `r` as its image (one JSON object's text, canonical; see the file comment).
/// @throws whatever the user's encoder throws; the default does not throw.
template <imaged_record R>
[[nodiscard]] std::string encode_image(const R& r) {
  if constexpr (detail::image::by_traits<R>) {
    return std::string(record_traits<R>::encode_image(r));
  } else if constexpr (detail::image::by_adl<R>) {
    return std::string(memhealth_encode_image(r));
  } else {
    return to_json(r);
  }
}

/// Decodes an image made by `encode_image` back into a record.
/// @throws memhealth::error(parse) when the default decoder does not find exactly one record in
///         `image`; a user's decoder should throw the same for bytes it cannot decode.
template <imaged_record R>
[[nodiscard]] R decode_image(std::string_view image) {
  if constexpr (detail::image::by_traits<R>) {
    return record_traits<R>::decode_image(image);
  } else if constexpr (detail::image::by_adl<R>) {
    return memhealth_decode_image(image, std::type_identity<R>{});
  } else {
    auto res = parse_jsonl(image, "<wal image>");
    if (res.records.size() != 1 || res.lines_read != 1)
      throw error(error_code::parse,
                  "decode_image: the image is not one memory_record JSON object");
    return std::move(res.records.front());
  }
}

}  // namespace memhealth

/// Gate for an entry point that logs or restores whole records: fails with one readable message
/// naming the component when R has no image. Use inside a function template.
#define MEMHEALTH_REQUIRE_IMAGE(R, COMPONENT)                                                 \
  static_assert(                                                                              \
      ::memhealth::imaged_record<R>,                                                          \
      "memhealth: " COMPONENT                                                                 \
      " needs the record capability 'imaged_record' (a lossless "                             \
      "image of the whole record for the write-ahead log), which this record type does "      \
      "not provide. Provide it by specialising memhealth::record_traits<R> with static "      \
      "encode_image(const R&) -> std::string and decode_image(std::string_view) -> R, or by " \
      "the ADL pair memhealth_encode_image(const R&) and "                                    \
      "memhealth_decode_image(std::string_view, std::type_identity<R>) (record_image.hpp).")
