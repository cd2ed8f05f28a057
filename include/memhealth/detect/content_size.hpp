#pragma once
/// @file content_size.hpp
/// Detector "content_size": records whose content is too long to be one memory (SPEC section 6,
/// "Hygiene": oversized records).
///
/// Two limits, each checked separately:
/// - the store-wide `max_bytes` (UTF-8 bytes of the content; default 8192 = 8 KiB). A memory is
///   a fact, preference or event of a few sentences; 8 KiB is 1,000-2,000 English words (about
///   2,700 CJK characters), past what most sentence-embedding models read (256-512 word pieces,
///   the rest is silently truncated, so the vector does not represent the text) and a quarter
///   of the 8,191-token input limit of OpenAI's embedding models. Content that long is usually a
///   pasted document, a whole conversation or a tool dump stored by mistake.
/// - a limit the record's own metadata states: the integer (or decimal-string) value of the
///   first key present of `metadata_bytes_keys` (default "max_bytes", "max_content_bytes"), in
///   UTF-8 bytes, and of `metadata_chars_keys` (default "max_chars", "max_length",
///   "max_content_length"), in Unicode code points. A value that is not a positive integer is
///   ignored (the schema check reports wrong types).

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "memhealth/detect/finding.hpp"
#include "memhealth/record/memory_record.hpp"
#include "memhealth/record/traits.hpp"

namespace memhealth {

/// Code points in UTF-8 text (bytes that do not start a character are not counted; an invalid
/// lead byte counts as one). @complexity O(|s|).
inline std::size_t utf8_code_points(std::string_view s) noexcept {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

namespace detail {
/// A positive integer limit from a metadata value: an integer, an integral double or a decimal
/// string. nullopt otherwise.
inline std::optional<std::size_t> metadata_limit(const metadata_value& v) noexcept {
  if (const auto* i = std::get_if<std::int64_t>(&v))
    return *i > 0 ? std::optional<std::size_t>(static_cast<std::size_t>(*i)) : std::nullopt;
  if (const auto* d = std::get_if<double>(&v))
    if (*d >= 1 && *d < 1e15 && *d == static_cast<double>(static_cast<std::int64_t>(*d)))
      return static_cast<std::size_t>(*d);
  if (const auto* s = std::get_if<std::string>(&v)) {
    std::size_t x = 0;
    const auto r = std::from_chars(s->data(), s->data() + s->size(), x);
    if (r.ec == std::errc{} && r.ptr == s->data() + s->size() && x > 0) return x;
  }
  return std::nullopt;
}
}  // namespace detail

/// Detector "content_size": emits `oversized_content` (severity warning, repair "manual_review")
/// with record_ids {id} and evidence `unit` ("bytes" or "chars"), `size` (the content's size in
/// that unit), `limit`, and `limit_source` ("max_bytes" for the store-wide limit, else
/// "metadata.<key>"). One finding per record: the store-wide byte limit is checked first, then
/// the metadata byte limit, then the metadata character limit.
///
/// Needs `basic_record`; the metadata limits need `memory_record`'s metadata map
/// (`metadata_map`) and are skipped for other metadata types. Changed records only.
/// @complexity O(total content length).
struct content_size_detector {
  static constexpr std::string_view name = "content_size";
  bool enabled = true;           ///< false: the detector reports nothing
  std::size_t max_bytes = 8192;  ///< UTF-8 bytes of content; 0 = no store-wide limit
  /// Metadata keys whose value is a per-record limit in UTF-8 bytes (first present wins).
  std::vector<std::string> metadata_bytes_keys{"max_bytes", "max_content_bytes"};
  /// Metadata keys whose value is a per-record limit in code points (first present wins).
  std::vector<std::string> metadata_chars_keys{"max_chars", "max_length", "max_content_length"};

  /// Appends oversized_content findings; never mutates the store.
  template <class Ctx>
  void run(Ctx& ctx, std::vector<finding>& out) const {
    using R = typename Ctx::record_type;
    MEMHEALTH_REQUIRE_CAPABILITY(basic_record, R, "content_size_detector", "id, content");
    if (!enabled) return;
    const auto& store = ctx.store();
    for (std::size_t i = 0; i < store.size(); ++i) {
      if (!ctx.is_changed(i)) continue;
      const R& r = store.record(i);
      const std::string_view content = field::content(r);
      std::string_view unit, source;
      std::string source_key;
      std::size_t size = 0, limit = 0;
      if (max_bytes && content.size() > max_bytes) {
        unit = "bytes", source = "max_bytes", size = content.size(), limit = max_bytes;
      }
      if constexpr (metadata_record<R>) {
        using M = std::decay_t<decltype(field::metadata(r))>;
        if constexpr (std::is_same_v<M, metadata_map>) {
          const metadata_map& m = field::metadata(r);
          auto first_limit = [&](const std::vector<std::string>& keys)
              -> std::pair<std::optional<std::size_t>, std::string> {
            for (const auto& k : keys)
              if (auto it = m.find(k); it != m.end())
                if (auto l = detail::metadata_limit(it->second)) return {l, k};
            return {std::nullopt, {}};
          };
          if (unit.empty()) {
            auto [l, k] = first_limit(metadata_bytes_keys);
            if (l && content.size() > *l) {
              unit = "bytes", size = content.size(), limit = *l, source_key = "metadata." + k;
            }
          }
          if (unit.empty()) {
            auto [l, k] = first_limit(metadata_chars_keys);
            if (l && content.size() > *l) {  // bytes >= code points: cheap pre-check
              const std::size_t cps = utf8_code_points(content);
              if (cps > *l) unit = "chars", size = cps, limit = *l, source_key = "metadata." + k;
            }
          }
        }
      }
      if (unit.empty()) continue;
      finding f;
      f.kind = std::string(finding_kinds::oversized_content);
      f.severity = severity::warning;
      f.detector = std::string(name);
      f.record_ids = {std::string(field::id(r))};
      f.with("unit", std::string(unit));
      f.with("size", static_cast<std::int64_t>(size));
      f.with("limit", static_cast<std::int64_t>(limit));
      f.with("limit_source", source_key.empty() ? std::string(source) : source_key);
      f.suggested_repair = "manual_review";
      out.push_back(std::move(f));
    }
  }
};

}  // namespace memhealth
