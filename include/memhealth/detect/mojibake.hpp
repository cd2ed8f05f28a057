#pragma once
/// @file mojibake.hpp
/// Detector "mojibake": text that was decoded with the wrong character encoding (SPEC section 6,
/// "Hygiene").
///
/// ## What it matches
/// - `double_encoded_utf8`: UTF-8 bytes read as Windows-1252 / Latin-1 and encoded again, the
///   commonest mojibake ("cafÃ©" for "café", "donâ€™t" for "don’t", "å¤©æ°”" for "天气"). The
///   content's code points are mapped back to the single bytes Windows-1252 (or, for U+0080..
///   U+00FF, Latin-1) gives them; a run that forms one well-formed UTF-8 sequence of 2..4 bytes
///   (a lead byte C2..F4 followed by the right number of continuation bytes 80..BF, with the
///   overlong and surrogate ranges excluded as RFC 3629 does) is one double-encoded character.
///   Legitimate accented text does not form such runs: an accented letter (C0..FF) is followed
///   by a letter, space or punctuation of ASCII, never by two symbols of A0..BF or the 1252
///   specials, so "café", "Ärger", "São Paulo", "naïve", "Ñandú" and Chinese or Japanese text
///   (code points outside the 1252 range) are not matched.
/// - `replacement_character`: U+FFFD (what a decoder writes for bytes it could not read).
/// - `invalid_utf8`: bytes that are not well-formed UTF-8 (RFC 3629), e.g. Latin-1 text stored as
///   if it were UTF-8.
/// - `c1_control`: C1 control characters U+0080..U+009F, which only appear in text when bytes
///   of Windows-1252 were decoded as Latin-1.
/// Each rule has a minimum count (`min_*`, in occurrences) before it is reported.
///
/// Not detected: UTF-8 read as GBK/Shift-JIS and similar multi-byte mis-decodings (their output
/// is ordinary CJK text and needs a language model to tell apart).

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "memhealth/detect/finding.hpp"
#include "memhealth/record/traits.hpp"

namespace memhealth {

/// What `scan_mojibake` counted in one text.
struct mojibake_counts {
  std::size_t double_encoded = 0;  ///< double-encoded UTF-8 characters
  std::size_t replacement = 0;     ///< U+FFFD code points
  std::size_t invalid_bytes = 0;   ///< bytes that are not well-formed UTF-8
  std::size_t c1_controls = 0;     ///< code points U+0080..U+009F
  std::string sample;              ///< the first double-encoded run as it appears, e.g. "Ã©"
  std::string repaired;            ///< ... and what it should have been, e.g. "é"
};

namespace detail::mojibake {

/// Decodes one well-formed UTF-8 code point at s[i]; returns its length, or 0 when the bytes
/// there are not well-formed (RFC 3629, table 3-7 of the Unicode standard).
inline std::size_t decode(std::string_view s, std::size_t i, char32_t& cp) noexcept {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  if (c < 0x80) {
    cp = c;
    return 1;
  }
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF)
    n = 1;
  else if (c >= 0xE0 && c <= 0xEF) {
    n = 2;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 3;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n >= s.size()) return 0;
  char32_t v = c & (n == 1 ? 0x1F : n == 2 ? 0x0F : 0x07);
  for (std::size_t k = 1; k <= n; ++k) {
    const unsigned char t = b(k);
    if (k == 1 ? (t < lo || t > hi) : (t < 0x80 || t > 0xBF)) return 0;
    v = (v << 6) | (t & 0x3F);
  }
  cp = v;
  return n + 1;
}

/// The byte Windows-1252 encodes cp as (Latin-1 for U+0080..U+00FF), or -1.
inline int cp1252_byte(char32_t cp) noexcept {
  if (cp < 0x100) return static_cast<int>(cp);
  struct pair {
    char32_t cp;
    unsigned char byte;
  };
  static constexpr std::array<pair, 27> specials{{
      {0x20AC, 0x80}, {0x201A, 0x82}, {0x0192, 0x83}, {0x201E, 0x84}, {0x2026, 0x85},
      {0x2020, 0x86}, {0x2021, 0x87}, {0x02C6, 0x88}, {0x2030, 0x89}, {0x0160, 0x8A},
      {0x2039, 0x8B}, {0x0152, 0x8C}, {0x017D, 0x8E}, {0x2018, 0x91}, {0x2019, 0x92},
      {0x201C, 0x93}, {0x201D, 0x94}, {0x2022, 0x95}, {0x2013, 0x96}, {0x2014, 0x97},
      {0x02DC, 0x98}, {0x2122, 0x99}, {0x0161, 0x9A}, {0x203A, 0x9B}, {0x0153, 0x9C},
      {0x017E, 0x9E}, {0x0178, 0x9F},
  }};
  for (const auto& p : specials)
    if (p.cp == cp) return p.byte;
  return -1;
}

}  // namespace detail::mojibake

/// Counts the signs of mojibake in `text` (see the file comment). Never throws except
/// std::bad_alloc. @complexity O(|text|).
inline mojibake_counts scan_mojibake(std::string_view text) {
  namespace dm = detail::mojibake;
  mojibake_counts out;
  struct unit {
    std::size_t begin, end;  // bytes of the code point in text
    int byte;                // its Windows-1252 byte, or -1
  };
  std::vector<unit> units;
  for (std::size_t i = 0; i < text.size();) {
    char32_t cp = 0;
    const std::size_t n = dm::decode(text, i, cp);
    if (n == 0) {
      ++out.invalid_bytes;
      units.push_back({i, i + 1, -1});
      ++i;
      continue;
    }
    if (cp == 0xFFFD) ++out.replacement;
    if (cp >= 0x80 && cp <= 0x9F) ++out.c1_controls;
    units.push_back({i, i + n, dm::cp1252_byte(cp)});
    i += n;
  }
  for (std::size_t k = 0; k < units.size(); ++k) {
    const int lead = units[k].byte;
    if (lead < 0xC2 || lead > 0xF4) continue;
    const std::size_t n = lead <= 0xDF ? 1 : lead <= 0xEF ? 2 : 3;
    if (k + n >= units.size()) continue;
    std::string bytes(1, static_cast<char>(lead));
    for (std::size_t m = 1; m <= n; ++m) {
      const int b = units[k + m].byte;
      if (b < 0x80 || b > 0xBF) break;
      bytes.push_back(static_cast<char>(b));
    }
    char32_t cp = 0;
    if (bytes.size() != n + 1 || dm::decode(bytes, 0, cp) != n + 1) continue;
    if (out.double_encoded++ == 0) {
      out.sample = std::string(text.substr(units[k].begin, units[k + n].end - units[k].begin));
      out.repaired = bytes;
    }
    k += n;
  }
  return out;
}

/// Detector "mojibake": emits `mojibake` (severity warning, repair "manual_review") with
/// record_ids {id} and evidence `rule` per rule that reached its minimum (double_encoded_utf8,
/// replacement_character, invalid_utf8, c1_control, in that order), `count` (occurrences of the
/// first rule) and, for double_encoded_utf8, `sample` (the first run as stored) and `repaired`
/// (what it decodes to). One finding per record.
///
/// Needs only `basic_record` (id, content). Incremental runs check changed records only.
/// @complexity O(total content length).
struct mojibake_detector {
  static constexpr std::string_view name = "mojibake";
  bool enabled = true;                 ///< false: the detector reports nothing
  std::size_t min_double_encoded = 1;  ///< double-encoded characters before a finding (0 = off)
  std::size_t min_replacement = 1;     ///< U+FFFD before a finding (0 = off)
  std::size_t min_invalid_bytes = 1;   ///< invalid UTF-8 bytes before a finding (0 = off)
  std::size_t min_c1_controls = 1;     ///< C1 controls before a finding (0 = off)

  /// Appends mojibake findings; never mutates the store.
  template <class Ctx>
  void run(Ctx& ctx, std::vector<finding>& out) const {
    using R = typename Ctx::record_type;
    MEMHEALTH_REQUIRE_CAPABILITY(basic_record, R, "mojibake_detector", "id, content");
    if (!enabled) return;
    const auto& store = ctx.store();
    for (std::size_t i = 0; i < store.size(); ++i) {
      if (!ctx.is_changed(i)) continue;
      const R& r = store.record(i);
      const mojibake_counts c = scan_mojibake(field::content(r));
      finding f;
      std::int64_t first = -1;
      auto rule = [&](std::size_t n, std::size_t min, std::string_view what) {
        if (min == 0 || n < min) return;
        f.with("rule", std::string(what));
        if (first < 0) first = static_cast<std::int64_t>(n);
      };
      rule(c.double_encoded, min_double_encoded, "double_encoded_utf8");
      rule(c.replacement, min_replacement, "replacement_character");
      rule(c.invalid_bytes, min_invalid_bytes, "invalid_utf8");
      rule(c.c1_controls, min_c1_controls, "c1_control");
      if (first < 0) continue;
      f.with(evidence_keys::count, first);
      if (min_double_encoded && c.double_encoded >= min_double_encoded) {
        f.with("sample", c.sample);
        f.with("repaired", c.repaired);
      }
      f.kind = std::string(finding_kinds::mojibake);
      f.severity = severity::warning;
      f.detector = std::string(name);
      f.record_ids = {std::string(field::id(r))};
      f.suggested_repair = "manual_review";
      out.push_back(std::move(f));
    }
  }
};

}  // namespace memhealth
