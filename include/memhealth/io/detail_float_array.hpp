#pragma once
// Internals of the record decoder (record_decode.hpp): a JSON array of numbers into float32
// values, from its raw text. Not part of the public API.

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <bit>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string_view>
#include <system_error>
#include <vector>

#include "memhealth/io/detail_json_text.hpp"

namespace memhealth::detail::json_text {

// The common case of an embedding: `[n,n,...,n]` with plain numbers, no whitespace, no strings.
// The commas are found first (16 bytes at a time with SSE2, else 8 with SWAR), then every number is
// parsed between two commas, so consecutive numbers do not wait for each other. Returns false (out
// unspecified) for anything else, and for a number out of float range: the general loop decides.
// `raw` is the array's text with at least 16 readable bytes after it (simdjson padding);
// `commas` is a scratch buffer the caller keeps between calls.
inline bool parse_plain_float_array(std::string_view raw, std::vector<float>& out,
                                    std::vector<std::uint32_t>& commas) {
  if (raw.size() < 3 || raw.front() != '[' || raw.back() != ']') return false;
  const char* b = raw.data() + 1;
  const char* e = raw.data() + raw.size() - 1;
  const auto n = static_cast<std::size_t>(e - b);
  if (n > std::numeric_limits<std::uint32_t>::max()) return false;
  if (commas.size() < n + 16) commas.resize(n + 16);  // at most n commas; reused buffer
  std::uint32_t* c = commas.data();
#if defined(__SSE2__)
  const __m128i comma = _mm_set1_epi8(',');
  for (std::size_t i = 0; i < n; i += 16) {  // bytes up to e + 15 are readable (padding)
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i));
    auto m = static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(x, comma)));
    if (n - i < 16) m &= (1u << (n - i)) - 1;
    for (; m; m &= m - 1)
      *c++ = static_cast<std::uint32_t>(i) + static_cast<std::uint32_t>(std::countr_zero(m));
  }
#else
  constexpr std::uint64_t ones7 = 0x7F7F7F7F7F7F7F7FULL;
  for (std::size_t i = 0; i < n; i += 8) {  // bytes up to e + 7 are readable (padding)
    const std::uint64_t t = json_text::load8(b + i) ^ 0x2C2C2C2C2C2C2C2CULL;  // ',' bytes become 0
    std::uint64_t m = ~(((t & ones7) + ones7) | t | ones7);  // 0x80 exactly where t has a 0 byte
    if (n - i < 8) m &= (std::uint64_t{1} << (8 * (n - i))) - 1;
    for (; m; m &= m - 1)
      *c++ = static_cast<std::uint32_t>(i + static_cast<std::size_t>(std::countr_zero(m)) / 8);
  }
#endif
  const auto n_commas = static_cast<std::size_t>(c - commas.data());
  out.resize(n_commas + 1);
  const char* tb = b;
  for (std::size_t k = 0; k < out.size(); ++k) {  // 16 bytes after te are readable (padding)
    const char* te = k < n_commas ? b + commas[k] : e;
    if (json_text::parse_float_token_fast(tb, te, out[k]) != te) {
      auto [q2, ec] = std::from_chars(tb, te, out[k]);
      if (ec != std::errc{} || q2 != te) return false;
    }
    tb = te + 1;
  }
  return true;
}

// What the general parse of an embedding array met (see parse_float_array).
struct float_array_scan {
  bool ok = true;                // false: not an array of numbers (out unspecified)
  std::size_t out_of_range = 0;  // values outside the float32 range, stored as +-inf or 0
  std::size_t first_bad = 0;     // index of the first of them
  std::string_view first_token;  // its text (a view into raw)
};

// The general case: `[` numbers or "NaN"/"Infinity"/"-Infinity" strings, with whitespace, `]`.
// Appends to `out` (which the caller clears); a number out of float range is stored as
// from_chars left it and counted.
inline float_array_scan parse_float_array(std::string_view raw, std::vector<float>& out) {
  float_array_scan s;
  const char* p = raw.data() + 1;                 // after '['
  const char* end = raw.data() + raw.size() - 1;  // at ']'
  bool& ok = s.ok;
  ok = raw.size() >= 2 && raw.back() == ']';
  while (ok && p < end && json_text::is_ws(*p)) ++p;
  while (ok && p < end) {
    float f = 0;
    if (*p == '"') {
      const char* q =
          static_cast<const char*>(std::memchr(p + 1, '"', static_cast<std::size_t>(end - p - 1)));
      if (!q || !json_text::parse_non_finite_text(
                    std::string_view(p + 1, static_cast<std::size_t>(q - p - 1)), f)) {
        ok = false;
        break;
      }
      p = q + 1;
    } else if (const char* fast_end = json_text::parse_float_fast(p, end, f)) {
      p = fast_end;
    } else {
      auto [q, ec] = std::from_chars(p, end, f);
      if (ec == std::errc::result_out_of_range) {
        const std::string_view tok(p, static_cast<std::size_t>(q - p));
        if (json_text::parse_float_token(tok, f) != json_text::number_status::out_of_range) {
          ok = false;
          break;
        }
        if (s.out_of_range++ == 0) s.first_bad = out.size(), s.first_token = tok;
      } else if (ec != std::errc{}) {
        ok = false;
        break;
      }
      p = q;
    }
    out.push_back(f);
    while (p < end && json_text::is_ws(*p)) ++p;
    if (p == end) break;
    if (*p != ',') {
      ok = false;
      break;
    }
    ++p;
    while (p < end && json_text::is_ws(*p)) ++p;
    if (p == end) ok = false;  // trailing comma
  }
  return s;
}

}  // namespace memhealth::detail::json_text
