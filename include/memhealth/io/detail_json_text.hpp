#pragma once
// Internals of io/jsonl.hpp: JSON text helpers (escaping, canonical numbers, minifying, strict
// number tokens). Not part of the public API.

#include <bit>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>

namespace memhealth::detail::json_text {

constexpr bool is_ws(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

inline std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && is_ws(s.back())) s.remove_suffix(1);
  while (!s.empty() && is_ws(s.front())) s.remove_prefix(1);
  return s;
}

// RFC 8259 section 7: escape '"', '\\' and U+0000..U+001F; everything else (UTF-8 included)
// is copied as is.
inline void append_escaped(std::string& out, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  out.push_back('"');
  std::size_t start = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.data() + start, i - start);
    start = i + 1;
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default: {
        const char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
        out.append(u, 6);
      }
    }
  }
  out.append(s.data() + start, s.size() - start);
  out.push_back('"');
}

// Non-finite values as the JSON strings memhealth writes ("NaN", "Infinity", "-Infinity").
template <class F>
const char* non_finite_text(F v) noexcept {
  if (std::isnan(v)) return "\"NaN\"";
  return v > 0 ? "\"Infinity\"" : "\"-Infinity\"";
}

// Shortest round-trip text (std::to_chars without precision). `mark_float` appends ".0" to an
// integral-looking double so it reads back as a floating-point number, not an integer.
template <class F>
char* write_number(char* p, F v, bool mark_float = false) noexcept {
  if (!std::isfinite(v)) {
    const char* t = non_finite_text(v);
    const std::size_t n = std::strlen(t);
    std::memcpy(p, t, n);
    return p + n;
  }
  char* e = std::to_chars(p, p + 32, v).ptr;
  if (mark_float && std::string_view(p, static_cast<std::size_t>(e - p)).find_first_of(".e") ==
                        std::string_view::npos) {
    *e++ = '.';
    *e++ = '0';
  }
  return e;
}

template <class F>
void append_number(std::string& out, F v, bool mark_float = false) {
  char buf[48];
  out.append(buf, write_number(buf, v, mark_float));
}

inline void append_int(std::string& out, std::int64_t v) {
  char buf[24];
  out.append(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
}

// Removes insignificant whitespace from valid JSON text; strings are copied byte for byte.
inline std::string minify(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  bool in_string = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      out.push_back(c);
      if (c == '\\' && i + 1 < s.size()) {
        out.push_back(s[++i]);
      } else if (c == '"') {
        in_string = false;
      }
    } else if (!is_ws(c)) {
      out.push_back(c);
      in_string = c == '"';
    }
  }
  return out;
}

// True when a JSON number token has a fraction or an exponent.
constexpr bool is_floating_token(std::string_view t) noexcept {
  return t.find_first_of(".eE") != std::string_view::npos;
}

// For a number token std::from_chars reported out of range: true when its magnitude is above
// the type's range (overflow -> infinity), false when below (underflow -> zero). Computes the
// decimal exponent of the first significant digit.
inline bool token_overflows(std::string_view t) noexcept {
  std::size_t i = 0;
  if (i < t.size() && t[i] == '-') ++i;
  long pos = 0;  // exponent of the next digit relative to the decimal point, integer part first
  long int_digits = 0;
  std::size_t j = i;
  while (j < t.size() && t[j] >= '0' && t[j] <= '9') ++j, ++int_digits;
  long first = 0;
  bool found = false;
  for (std::size_t k = i; k < j; ++k)
    if (t[k] != '0') {
      first = int_digits - 1 - static_cast<long>(k - i);
      found = true;
      break;
    }
  if (j < t.size() && t[j] == '.') {
    ++j;
    pos = -1;
    for (; j < t.size() && t[j] >= '0' && t[j] <= '9'; ++j, --pos)
      if (!found && t[j] != '0') {
        first = pos;
        found = true;
      }
  }
  long ex = 0;
  if (j < t.size() && (t[j] == 'e' || t[j] == 'E')) {
    ++j;
    bool neg = false;
    if (j < t.size() && (t[j] == '+' || t[j] == '-')) neg = t[j++] == '-';
    for (; j < t.size() && t[j] >= '0' && t[j] <= '9'; ++j)
      if (ex < 100000) ex = ex * 10 + (t[j] - '0');
    if (neg) ex = -ex;
  }
  return found && first + ex >= 0;
}

enum class number_status { ok, out_of_range, invalid };

// Parses a whole number token into F (float or double), exactly as std::from_chars rounds it.
// Out of range: overflow gives +-infinity, underflow +-0, and the status says so.
template <class F>
number_status parse_float_token(std::string_view t, F& out) noexcept {
  const char* b = t.data();
  const char* e = b + t.size();
  auto [p, ec] = std::from_chars(b, e, out);
  if (ec == std::errc::result_out_of_range) {
    const bool neg = !t.empty() && t[0] == '-';
    const F big = std::numeric_limits<F>::infinity();
    out = token_overflows(t) ? (neg ? -big : big) : (neg ? -F(0) : F(0));
    return p == e ? number_status::out_of_range : number_status::invalid;
  }
  if (ec != std::errc{} || p != e) return number_status::invalid;
  return number_status::ok;
}

// "NaN", "Infinity", "-Infinity" (as memhealth writes them) and the spellings other tools use.
template <class F>
bool parse_non_finite_text(std::string_view s, F& out) noexcept {
  if (s == "NaN" || s == "nan" || s == "NAN") {
    out = std::numeric_limits<F>::quiet_NaN();
    return true;
  }
  if (s == "Infinity" || s == "inf" || s == "+Infinity" || s == "Inf" || s == "INF") {
    out = std::numeric_limits<F>::infinity();
    return true;
  }
  if (s == "-Infinity" || s == "-inf" || s == "-Inf" || s == "-INF") {
    out = -std::numeric_limits<F>::infinity();
    return true;
  }
  return false;
}

// Strict RFC 8259 grammar check of one JSON value (whitespace around allowed). UTF-8 validity is
// not checked here (simdjson validates the whole line). Numbers of any magnitude are accepted.
class validator {
 public:
  static bool check(std::string_view s) noexcept {
    validator v{s.data(), s.data() + s.size()};
    v.ws();
    if (!v.value(0)) return false;
    v.ws();
    return v.p_ == v.e_;
  }

 private:
  validator(const char* p, const char* e) : p_(p), e_(e) {}
  void ws() noexcept {
    while (p_ < e_ && is_ws(*p_)) ++p_;
  }
  bool lit(std::string_view w) noexcept {
    if (static_cast<std::size_t>(e_ - p_) < w.size() || std::string_view(p_, w.size()) != w)
      return false;
    p_ += w.size();
    return true;
  }
  bool digits() noexcept {
    const char* b = p_;
    while (p_ < e_ && *p_ >= '0' && *p_ <= '9') ++p_;
    return p_ > b;
  }
  bool number() noexcept {
    if (p_ < e_ && *p_ == '-') ++p_;
    if (p_ < e_ && *p_ == '0')
      ++p_;
    else if (!digits())
      return false;
    if (p_ < e_ && *p_ == '.') {
      ++p_;
      if (!digits()) return false;
    }
    if (p_ < e_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      if (p_ < e_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (!digits()) return false;
    }
    return true;
  }
  bool string() noexcept {
    ++p_;  // opening quote
    while (p_ < e_) {
      const auto c = static_cast<unsigned char>(*p_++);
      if (c == '"') return true;
      if (c < 0x20) return false;
      if (c == '\\') {
        if (p_ >= e_) return false;
        const char x = *p_++;
        if (x == 'u') {
          for (int i = 0; i < 4; ++i, ++p_)
            if (p_ >= e_ || !std::isxdigit(static_cast<unsigned char>(*p_))) return false;
        } else if (std::string_view("\"\\/bfnrt").find(x) == std::string_view::npos) {
          return false;
        }
      }
    }
    return false;
  }
  bool value(int depth) noexcept {
    if (p_ >= e_ || depth > 512) return false;
    switch (*p_) {
      case '"':
        return string();
      case 't':
        return lit("true");
      case 'f':
        return lit("false");
      case 'n':
        return lit("null");
      case '[': {
        ++p_;
        ws();
        if (p_ < e_ && *p_ == ']') return ++p_, true;
        for (;;) {
          ws();
          if (!value(depth + 1)) return false;
          ws();
          if (p_ < e_ && *p_ == ',') {
            ++p_;
            continue;
          }
          if (p_ < e_ && *p_ == ']') return ++p_, true;
          return false;
        }
      }
      case '{': {
        ++p_;
        ws();
        if (p_ < e_ && *p_ == '}') return ++p_, true;
        for (;;) {
          ws();
          if (p_ >= e_ || *p_ != '"' || !string()) return false;
          ws();
          if (p_ >= e_ || *p_ != ':') return false;
          ++p_;
          ws();
          if (!value(depth + 1)) return false;
          ws();
          if (p_ < e_ && *p_ == ',') {
            ++p_;
            continue;
          }
          if (p_ < e_ && *p_ == '}') return ++p_, true;
          return false;
        }
      }
      default:
        return number();
    }
  }
  const char* p_;
  const char* e_;
};

// Exact fast path for a float number token, after Clinger's fast path (W. D. Clinger, "How to
// read floating point numbers accurately", PLDI 1990): with at most 19 digits w <= 2^53 and a power
// of ten |e| <= 22, w * 10^e is computed in double with a tiny, bounded error. Rounding that double
// to float equals rounding the exact value unless the double lies at or near a midpoint between
// two floats, which is checked (then std::from_chars decides). Parses the JSON number grammar at
// [p, end); returns the end of the token, or nullptr when std::from_chars must decide (long
// mantissa, large exponent, subnormal or overflowing result, a midpoint, or text that is not a
// plain JSON number). Eight ASCII digits at once (SWAR, as in simdjson and fast_float;
// little-endian load).
inline bool is_eight_digits(std::uint64_t v) noexcept {
  return (((v + 0x4646464646464646ULL) | (v - 0x3030303030303030ULL)) & 0x8080808080808080ULL) == 0;
}
inline std::uint64_t load8(const char* p) noexcept {
  std::uint64_t v = 0;
  std::memcpy(&v, p, 8);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}
#if defined(__GNUC__)
[[gnu::always_inline]]
#endif
inline std::uint32_t
parse_eight_digits(std::uint64_t v) noexcept {
  constexpr std::uint64_t mask = 0x000000FF000000FFULL;
  constexpr std::uint64_t mul1 = 0x000F424000000064ULL;  // 100 + (1000000ULL << 32)
  constexpr std::uint64_t mul2 = 0x0000271000000001ULL;  // 1 + (10000ULL << 32)
  v -= 0x3030303030303030ULL;
  v = (v * 10) + (v >> 8);
  v = (((v & mask) * mul1) + (((v >> 16) & mask) * mul2)) >> 32;
  return static_cast<std::uint32_t>(v);
}

// Number of leading ASCII digits in the 8 bytes v (little-endian order).
#if defined(__GNUC__)
[[gnu::always_inline]]
#endif
inline unsigned
count_digits8(std::uint64_t v) noexcept {
  const std::uint64_t t =
      ((v + 0x4646464646464646ULL) | (v - 0x3030303030303030ULL)) & 0x8080808080808080ULL;
  return t ? static_cast<unsigned>(std::countr_zero(t)) / 8 : 8;
}

// Value of the first n (1..8) digits of v: left-pad with '0' bytes, then convert all eight.
#if defined(__GNUC__)
[[gnu::always_inline]]
#endif
inline std::uint32_t
value_digits8(std::uint64_t v, unsigned n) noexcept {
  const unsigned sh = 8 * (8 - n);
  return parse_eight_digits(sh ? (v << sh) | (0x3030303030303030ULL >> (64 - sh)) : v);
}

// Requires 8 readable bytes at and after every position in [p, end) (the reader's buffers are
// padded); only bytes before `end` are interpreted.
#if defined(__GNUC__)
[[gnu::always_inline]]
#endif
inline const char*
parse_float_fast(const char* p, const char* end, float& out) noexcept {
  static constexpr double pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                     1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                     1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  static constexpr double inv_pow10[] = {1e-0,  1e-1,  1e-2,  1e-3,  1e-4,  1e-5,  1e-6,  1e-7,
                                         1e-8,  1e-9,  1e-10, 1e-11, 1e-12, 1e-13, 1e-14, 1e-15,
                                         1e-16, 1e-17, 1e-18, 1e-19, 1e-20, 1e-21, 1e-22};
  static constexpr std::uint64_t ipow10[] = {1,      10,      100,      1000,     10000,
                                             100000, 1000000, 10000000, 100000000};
  auto digits_at = [end](const char* q, std::uint64_t& v) {
    v = load8(q);
    const auto avail = static_cast<std::size_t>(end - q);
    const unsigned n = count_digits8(v);
    return avail < n ? static_cast<unsigned>(avail) : n;
  };
  const bool neg = p < end && *p == '-';
  p += neg;
  if (p >= end) return nullptr;
  std::uint64_t v = 0;
  const unsigned n_int = digits_at(p, v);
  if (n_int == 0 || n_int == 8 || (n_int > 1 && *p == '0')) return nullptr;
  std::uint64_t w = value_digits8(v, n_int);
  p += n_int;
  long digits = n_int;
  long e10 = 0;
  if (p < end && *p == '.') {
    ++p;
    unsigned n = digits_at(p, v);
    if (n == 0) return nullptr;
    w = w * ipow10[n] + value_digits8(v, n);
    p += n;
    e10 = -static_cast<long>(n);
    if (n == 8) {
      n = digits_at(p, v);
      if (n == 8) return nullptr;  // 17 or more fraction digits: the slow path
      if (n) {
        w = w * ipow10[n] + value_digits8(v, n);
        p += n;
        e10 -= static_cast<long>(n);
      }
    }
    digits -= e10;
  }
  if (digits > 19) return nullptr;
  if (p < end && (*p == 'e' || *p == 'E')) {
    ++p;
    bool eneg = false;
    if (p < end && (*p == '+' || *p == '-')) eneg = *p++ == '-';
    const char* es = p;
    long ex = 0;
    while (p < end && static_cast<unsigned>(*p - '0') < 10u && p - es < 6)
      ex = ex * 10 + (*p++ - '0');
    if (p == es || (p < end && static_cast<unsigned>(*p - '0') < 10u)) return nullptr;
    e10 += eneg ? -ex : ex;
  }
  if (w == 0) {
    out = neg ? -0.0f : 0.0f;
    return p;
  }
  if (w > (std::uint64_t{1} << 53) || e10 < -22 || e10 > 22) return nullptr;
  // Negative powers: one multiplication by the rounded 10^-k (relative error below 2^-52, i.e. at
  // most 2 units in the last place of d) instead of a slow division; the result is then trusted
  // only when d is more than 8 units away from a float midpoint.
  const double d =
      e10 < 0 ? static_cast<double>(w) * inv_pow10[-e10] : static_cast<double>(w) * pow10[e10];
  const std::uint64_t margin = e10 < 0 ? 8 : 0;
  if (d < static_cast<double>(std::numeric_limits<float>::min()) ||
      d > static_cast<double>(std::numeric_limits<float>::max()))
    return nullptr;
  std::uint64_t bits = 0;
  std::memcpy(&bits, &d, sizeof bits);
  const std::uint64_t low = bits & ((std::uint64_t{1} << 29) - 1);  // the 29 bits float drops
  constexpr std::uint64_t mid = std::uint64_t{1} << 28;
  if (low + margin >= mid && low <= mid + margin) return nullptr;  // at or near a float midpoint
  // apply the sign without a branch (signs of embedding values are random)
  const std::uint32_t fb =
      std::bit_cast<std::uint32_t>(static_cast<float>(d)) | (static_cast<std::uint32_t>(neg) << 31);
  out = std::bit_cast<float>(fb);
  return p;
}

// parse_float_fast for a token whose end is known (between two commas of an embedding array),
// specialised for the shape of unit-vector components, `-`? `0.` and 1..16 digits: the digit
// count comes from the token length, so the digits are checked and converted 8 at a time without
// a scan. The rounding argument and the midpoint check are parse_float_fast's. Other shapes go
// to parse_float_fast. Requires 16 readable bytes after `end`. Returns `end`, or nullptr when
// std::from_chars must decide.
#if defined(__GNUC__)
[[gnu::always_inline]]
#endif
inline const char*
parse_float_token_fast(const char* p, const char* end, float& out) noexcept {
  static constexpr double inv_pow10[] = {1e-0, 1e-1,  1e-2,  1e-3,  1e-4,  1e-5,  1e-6,  1e-7, 1e-8,
                                         1e-9, 1e-10, 1e-11, 1e-12, 1e-13, 1e-14, 1e-15, 1e-16};
  static constexpr std::uint64_t ipow10[] = {1,      10,      100,      1000,     10000,
                                             100000, 1000000, 10000000, 100000000};
  const bool neg = p < end && *p == '-';
  const char* q = p + neg;
  const auto len = static_cast<std::size_t>(end - q);
  if (len < 3 || len > 18 || q[0] != '0' || q[1] != '.') return parse_float_fast(p, end, out);
  const std::size_t nf = len - 2;  // fraction digits, 1..16
  q += 2;
  const std::uint64_t v1 = load8(q);
  std::uint64_t w = 0;
  if (nf <= 8) {
    if (count_digits8(v1) < nf) return nullptr;
    w = value_digits8(v1, static_cast<unsigned>(nf));
  } else {
    const std::uint64_t v2 = load8(q + 8);
    if (!is_eight_digits(v1) || count_digits8(v2) < nf - 8) return nullptr;
    w = std::uint64_t{parse_eight_digits(v1)} * ipow10[nf - 8] +
        value_digits8(v2, static_cast<unsigned>(nf - 8));
  }
  if (w == 0) return parse_float_fast(p, end, out);
  // w < 10^16 < 2^53 and 10^-nf with nf <= 16: as in parse_float_fast, d is within 2 units in
  // the last place of the exact value, trusted only more than 8 units away from a float midpoint
  const double d = static_cast<double>(w) * inv_pow10[nf];
  if (d < static_cast<double>(std::numeric_limits<float>::min())) return nullptr;
  const auto bits = std::bit_cast<std::uint64_t>(d);
  const std::uint64_t low = bits & ((std::uint64_t{1} << 29) - 1);
  constexpr std::uint64_t mid = std::uint64_t{1} << 28;
  if (low + 8 >= mid && low <= mid + 8) return nullptr;
  const std::uint32_t fb =
      std::bit_cast<std::uint32_t>(static_cast<float>(d)) | (static_cast<std::uint32_t>(neg) << 31);
  out = std::bit_cast<float>(fb);
  return end;
}

}  // namespace memhealth::detail::json_text
