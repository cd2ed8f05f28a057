#pragma once
/// @file secrets.hpp
/// Detector "secrets": credentials stored as memories (SPEC section 6, "Hygiene": a secret is a
/// critical finding and is masked in every output).
///
/// ## Rules
/// The shapes follow gitleaks' rule set (github.com/gitleaks/gitleaks, config/gitleaks.toml, MIT):
/// fixed-prefix tokens, JWTs, PEM private keys, and keyword assignments checked by Shannon entropy
/// as gitleaks' `generic-api-key` rule does. Every rule is matched by hand-written scanners over
/// bytes (no regular-expression engine: linear time, no backtracking on hostile content):
/// | rule | shape |
/// |---|---|
/// | aws_access_key_id | AKIA / ASIA / ABIA / ACCA + 16 of [A-Z0-9] |
/// | github_token | ghp_ / gho_ / ghu_ / ghs_ / ghr_ + 36 of [A-Za-z0-9] |
/// | github_fine_grained_pat | github_pat_ + 60..100 of [A-Za-z0-9_] |
/// | anthropic_api_key | sk-ant- + 32.. of [A-Za-z0-9_-] |
/// | openai_api_key | sk-proj- / sk-svcacct- / sk-admin- + 20.., or sk- + 32.. of [A-Za-z0-9_-] |
/// | slack_token | xoxb- / xoxp- / xoxa- / xoxs- / xoxe- + 20.. of [A-Za-z0-9-] |
/// | stripe_key | sk_live_ / rk_live_ / sk_test_ / rk_test_ + 20.. of [A-Za-z0-9] |
/// | google_api_key | AIza + 35 of [A-Za-z0-9_-] |
/// | jwt | ey + 17.. "." ey + 17.. [ "." signature ] (base64url) |
/// | private_key | "-----BEGIN <words> PRIVATE KEY-----" with at least 32 body bytes |
/// | connection_string | scheme://user:password@host (the password is the secret) |
/// | password | a password keyword (password, passwd, pwd, passcode, passphrase, pin, 密码, 口令),
///   a separator (is, was, to, ":", "=", 是, 为, 改成, ...) and a password-like value |
/// | generic_api_key | a token keyword (api key, access token, secret, bearer, 密钥, ...), a
///   separator and a value of 16.. of [A-Za-z0-9_-+/=.] with letters, digits and entropy >= 3.5 |
///
/// A prefixed token must stand alone (no letter, digit or '_' right before it; its body ends at
/// the first byte outside its alphabet) and its body must have Shannon entropy >= 3.0 bits per
/// byte, so "AKIAAAAAAAAAAAAAAAAA" or "sk-learn-..." are not secrets. A password value is ASCII,
/// 6..128 bytes (4.. for "pin", digits only), not a placeholder ("****", "<password>", "N/A",
/// "${PASSWORD}") and password-like: all digits, or letters with digits or symbols, or mixed case
/// beyond a capital initial. So "forgot her password", "the password policy requires 12
/// characters", "uses 1Password", "密码忘了" and a commit hash or UUID without a keyword are not
/// matched. Measured on tests/data/hygiene_secrets.tsv (see detect_structural_test.cpp).
///
/// ## Masking
/// A secret is never printed in full: a finding's evidence holds the rule and `mask_secret` of the
/// value, and `mask_secrets` rewrites a text with every secret span masked (the audit report, the
/// review queue and merge notes use it).

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memhealth/detect/finding.hpp"
#include "memhealth/record/traits.hpp"

namespace memhealth {

/// One secret found in a text: the rule that matched and the byte span of the secret value
/// (for a password or connection string, the value only, not the keyword).
struct secret_match {
  std::string_view rule;  ///< a rule name from the table in the file comment
  std::size_t begin = 0;  ///< first byte of the value
  std::size_t end = 0;    ///< one past its last byte
};

/// A user-added fixed-prefix rule (e.g. an internal token format "acme_" + 32 alphanumerics).
struct secret_prefix_rule {
  std::string name;            ///< rule name reported in evidence
  std::string prefix;          ///< literal prefix, matched case-sensitively
  std::size_t min_length = 0;  ///< body length (bytes after the prefix), at least
  std::size_t max_length = 0;  ///< ... at most; 0 = no limit
};

/// Settings of `find_secrets`: which rules run and the user's additions.
struct secret_rules {
  /// Rule names (from the table) that are switched off, e.g. {"jwt", "password"}.
  std::vector<std::string> disabled;
  /// Extra fixed-prefix rules; bodies are [A-Za-z0-9_-] and must pass `min_entropy`.
  std::vector<secret_prefix_rule> extra_prefixes;
  /// Extra password keywords (ASCII matched case-insensitively, others as bytes).
  std::vector<std::string> extra_password_keywords;
  /// Extra token keywords for `generic_api_key`.
  std::vector<std::string> extra_token_keywords;
  double min_entropy = 3.0;             ///< bits per byte, prefixed token bodies
  double min_generic_entropy = 3.5;     ///< bits per byte, generic_api_key values (gitleaks: 3.5)
  std::size_t min_password_length = 6;  ///< bytes of a password value (a pin: 4)

  [[nodiscard]] bool enabled(std::string_view rule) const noexcept {
    return std::find(disabled.begin(), disabled.end(), rule) == disabled.end();
  }
};

namespace detail::secrets {

inline bool is_alnum(unsigned char c) noexcept {
  return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}
inline bool is_upper_digit(unsigned char c) noexcept {
  return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z');
}
inline bool is_word(unsigned char c) noexcept {
  return is_alnum(c) || c == '_';
}
inline bool is_token(unsigned char c) noexcept {
  return is_word(c) || c == '-';
}
inline bool is_generic(unsigned char c) noexcept {
  return is_token(c) || c == '+' || c == '/' || c == '=' || c == '.';
}
inline bool is_space(unsigned char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}
inline unsigned char lower(unsigned char c) noexcept {
  return c >= 'A' && c <= 'Z' ? static_cast<unsigned char>(c - 'A' + 'a') : c;
}

/// s with ASCII letters lower-cased.
inline std::string lower_copy(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(lower(static_cast<unsigned char>(c)));
  return out;
}

/// Shannon entropy in bits per byte.
inline double entropy(std::string_view s) noexcept {
  if (s.empty()) return 0;
  std::array<std::size_t, 256> n{};
  for (unsigned char c : s) ++n[c];
  double h = 0;
  const double len = static_cast<double>(s.size());
  for (std::size_t k : n)
    if (k) {
      const double p = static_cast<double>(k) / len;
      h -= p * std::log2(p);
    }
  return h;
}

inline bool has_digit(std::string_view s) noexcept {
  return std::any_of(s.begin(), s.end(), [](unsigned char c) { return c >= '0' && c <= '9'; });
}
inline bool has_letter(std::string_view s) noexcept {
  return std::any_of(s.begin(), s.end(), [](unsigned char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
  });
}

/// Case-insensitive (ASCII) comparison of s at pos with word.
inline bool starts_with_ci(std::string_view s, std::size_t pos, std::string_view word) noexcept {
  if (pos + word.size() > s.size()) return false;
  for (std::size_t k = 0; k < word.size(); ++k)
    if (lower(static_cast<unsigned char>(s[pos + k])) != lower(static_cast<unsigned char>(word[k])))
      return false;
  return true;
}

inline std::size_t skip_spaces(std::string_view s, std::size_t i) noexcept {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return i;
}

struct prefix_row {
  std::string_view rule, prefix;
  bool (*alphabet)(unsigned char);
  std::size_t min_len, max_len;  // body bytes; max 0 = none
  bool needs_digit;              // body needs a digit (and a letter)
};

// Longer prefixes of one family first (sk-ant- before sk-).
inline constexpr std::array<prefix_row, 23> prefix_rows{{
    {"aws_access_key_id", "AKIA", is_upper_digit, 16, 16, false},
    {"aws_access_key_id", "ASIA", is_upper_digit, 16, 16, false},
    {"aws_access_key_id", "ABIA", is_upper_digit, 16, 16, false},
    {"aws_access_key_id", "ACCA", is_upper_digit, 16, 16, false},
    {"github_token", "ghp_", is_alnum, 36, 36, false},
    {"github_token", "gho_", is_alnum, 36, 36, false},
    {"github_token", "ghu_", is_alnum, 36, 36, false},
    {"github_token", "ghs_", is_alnum, 36, 36, false},
    {"github_token", "ghr_", is_alnum, 36, 36, false},
    {"github_fine_grained_pat", "github_pat_", is_word, 60, 100, false},
    {"anthropic_api_key", "sk-ant-", is_token, 32, 0, true},
    {"openai_api_key", "sk-proj-", is_token, 20, 0, true},
    {"openai_api_key", "sk-svcacct-", is_token, 20, 0, true},
    {"openai_api_key", "sk-admin-", is_token, 20, 0, true},
    {"openai_api_key", "sk-", is_token, 32, 0, true},
    {"slack_token", "xoxb-", is_token, 20, 0, true},
    {"slack_token", "xoxp-", is_token, 20, 0, true},
    {"slack_token", "xoxa-", is_token, 20, 0, true},
    {"slack_token", "xoxs-", is_token, 20, 0, true},
    {"slack_token", "xoxe-", is_token, 20, 0, true},
    {"stripe_key", "sk_live_", is_alnum, 20, 0, false},
    {"stripe_key", "rk_live_", is_alnum, 20, 0, false},
    {"google_api_key", "AIza", is_token, 35, 35, false},
}};
inline constexpr std::string_view stripe_test_prefixes[] = {"sk_test_", "rk_test_"};

inline constexpr std::string_view password_keywords[] = {
    "password", "passwd", "passcode", "passphrase", "pwd", "pin", "密码", "口令"};
inline constexpr std::string_view token_keywords[] = {"api key",
                                                      "api_key",
                                                      "api-key",
                                                      "apikey",
                                                      "api token",
                                                      "api_token",
                                                      "access token",
                                                      "access_token",
                                                      "auth token",
                                                      "auth_token",
                                                      "secret key",
                                                      "secret_key",
                                                      "client secret",
                                                      "client_secret",
                                                      "secret_access_key",
                                                      "secret access key",
                                                      "token",
                                                      "secret",
                                                      "bearer",
                                                      "密钥",
                                                      "令牌",
                                                      "秘钥"};
// Separators after a keyword (ASCII words need a word boundary after them).
inline constexpr std::string_view separators[] = {
    ":",      "=",      "：",     "->",   "is",   "was",  "to",     "是",   "为",   "為",  "改成了",
    "改为了", "换成了", "设成了", "改成", "改为", "设为", "设置为", "換成", "换成", "设成"};
inline constexpr std::string_view placeholders[] = {
    "password",      "passwd",     "pass",      "pwd",     "secret", "n/a",
    "none",          "null",       "nil",       "tbd",     "todo",   "hidden",
    "redacted",      "unknown",    "changeme",  "example", "xxxxxx", "yourpassword",
    "your_password", "mypassword", "undefined", "empty"};

// Strips trailing punctuation that ends a sentence or closes a quote.
inline std::string_view trim_value(std::string_view v) noexcept {
  while (!v.empty()) {
    const char c = v.back();
    if (c == '.' || c == ',' || c == ';' || c == ':' || c == '!' || c == '?' || c == ')' ||
        c == '"' || c == '\'' || c == '`' || c == ']' || c == '}' || c == '>')
      v.remove_suffix(1);
    else
      break;
  }
  return v;
}

inline bool is_placeholder(std::string_view v) noexcept {
  if (v.empty()) return true;
  const unsigned char first = static_cast<unsigned char>(v.front());
  if (first == '<' || first == '$' || first == '{' || first == '[' || first == '%' || first == '*')
    return true;
  if (std::all_of(v.begin(), v.end(), [&](char c) { return c == v.front(); })) return true;
  std::string low(v);
  for (auto& c : low) c = static_cast<char>(lower(static_cast<unsigned char>(c)));
  for (auto p : placeholders)
    if (low == p) return true;
  return low.find("xxxx") != std::string::npos || low.find("****") != std::string::npos ||
         low.find("://") != std::string::npos;
}

// A value that looks like a password: all digits, letters with digits or symbols, or mixed case
// beyond a capital initial.
inline bool password_like(std::string_view v, bool digits_ok) noexcept {
  bool lo = false, up_inner = false, dig = false, sym = false;
  for (std::size_t k = 0; k < v.size(); ++k) {
    const auto c = static_cast<unsigned char>(v[k]);
    if (c >= 'a' && c <= 'z')
      lo = true;
    else if (c >= 'A' && c <= 'Z')
      up_inner = up_inner || k > 0;
    else if (c >= '0' && c <= '9')
      dig = true;
    else
      sym = true;
  }
  const bool letters = lo || up_inner || has_letter(v);
  if (!letters) return dig && !sym && digits_ok;
  return dig || sym || (lo && up_inner);
}

// Matches a separator at i (after spaces); returns the position after it, or npos.
inline std::size_t match_separator(std::string_view s, std::size_t i) noexcept {
  i = skip_spaces(s, i);
  for (auto sep : separators) {
    if (!starts_with_ci(s, i, sep)) continue;
    const std::size_t j = i + sep.size();
    const bool word = is_alnum(static_cast<unsigned char>(sep.front()));
    if (word && j < s.size() && is_alnum(static_cast<unsigned char>(s[j]))) continue;
    std::size_t k = skip_spaces(s, j);
    if (k < s.size() && s[k] == ':' && word) k = skip_spaces(s, k + 1);  // "is:"
    return k;
  }
  return std::string_view::npos;
}

// After a keyword: an optional "for/of/on/at + up to 3 words" phrase, then a separator.
inline std::size_t after_keyword(std::string_view s, std::size_t i) noexcept {
  if (auto j = match_separator(s, i); j != std::string_view::npos) return j;
  std::size_t k = skip_spaces(s, i);
  bool prep = false;
  for (std::string_view p : {"for", "of", "on", "at"})
    if (starts_with_ci(s, k, p) && k + p.size() < s.size() && s[k + p.size()] == ' ') {
      prep = true;
      k += p.size();
      break;
    }
  if (!prep) return std::string_view::npos;
  for (int w = 0; w < 3; ++w) {
    k = skip_spaces(s, k);
    const std::size_t start = k;
    while (k < s.size() && (is_alnum(static_cast<unsigned char>(s[k])) || s[k] == '-')) ++k;
    if (k == start || k - start > 20) return std::string_view::npos;
    if (auto j = match_separator(s, k); j != std::string_view::npos) return j;
  }
  return std::string_view::npos;
}

// The value at i: optional opening quote, then a run of printable ASCII, trailing punctuation
// stripped. Returns [begin, end).
inline std::pair<std::size_t, std::size_t> value_at(std::string_view s, std::size_t i,
                                                    bool (*alphabet)(unsigned char)) noexcept {
  for (std::string_view q : {"\"", "'", "`", "“", "「", "‘", "(", "["})
    if (s.substr(i, q.size()) == q) {
      i += q.size();
      break;
    }
  std::size_t j = i;
  while (j < s.size() && alphabet(static_cast<unsigned char>(s[j]))) ++j;
  const auto v = trim_value(s.substr(i, j - i));
  return {i, i + v.size()};
}

inline bool printable_ascii(unsigned char c) noexcept {
  return c > ' ' && c < 0x7f;
}

// Keyword positions: `kw` (lower case) found in `low` (s with ASCII lower-cased), with no ASCII
// letter or digit right before (an ASCII keyword also none right after); CJK keywords match
// anywhere.
template <class F>
void for_each_keyword(std::string_view s, std::string_view low, std::string_view kw, F&& f) {
  const bool ascii = static_cast<unsigned char>(kw.front()) < 0x80;
  for (std::size_t i = low.find(kw); i != std::string_view::npos; i = low.find(kw, i + 1)) {
    if (ascii && i > 0 && is_alnum(static_cast<unsigned char>(s[i - 1]))) continue;
    const std::size_t j = i + kw.size();
    if (ascii && j < s.size() && is_alnum(static_cast<unsigned char>(s[j]))) continue;
    f(j);
  }
}

}  // namespace detail::secrets

/// Every secret in `text`, sorted by position, overlapping matches merged into the first.
/// Never throws except std::bad_alloc. @complexity O(|text| x number of keywords and prefixes).
inline std::vector<secret_match> find_secrets(std::string_view text,
                                              const secret_rules& rules = {}) {
  namespace ds = detail::secrets;
  std::vector<secret_match> out;
  const std::string_view s = text;
  auto add = [&](std::string_view rule, std::size_t b, std::size_t e) {
    if (e > b) out.push_back({rule, b, e});
  };
  auto boundary_before = [&](std::size_t i) {
    return i == 0 || !ds::is_word(static_cast<unsigned char>(s[i - 1]));
  };
  // fixed prefixes
  auto scan_prefix = [&](std::string_view rule, std::string_view prefix,
                         bool (*alphabet)(unsigned char), std::size_t min_len, std::size_t max_len,
                         bool needs_digit) {
    for (std::size_t i = s.find(prefix); i != std::string_view::npos; i = s.find(prefix, i + 1)) {
      if (!boundary_before(i)) continue;
      std::size_t j = i + prefix.size();
      while (j < s.size() && alphabet(static_cast<unsigned char>(s[j]))) ++j;
      const auto body = s.substr(i + prefix.size(), j - i - prefix.size());
      if (body.size() < min_len || (max_len && body.size() > max_len)) continue;
      if (needs_digit && !(ds::has_digit(body) && ds::has_letter(body))) continue;
      if (ds::entropy(body) < rules.min_entropy) continue;
      add(rule, i, j);
    }
  };
  for (const auto& row : ds::prefix_rows)
    if (rules.enabled(row.rule))
      scan_prefix(row.rule, row.prefix, row.alphabet, row.min_len, row.max_len, row.needs_digit);
  if (rules.enabled("stripe_key"))
    for (auto p : ds::stripe_test_prefixes)
      scan_prefix("stripe_key", p, ds::is_alnum, 20, 0, false);
  for (const auto& x : rules.extra_prefixes)
    if (!x.prefix.empty() && rules.enabled(x.name))
      scan_prefix(x.name, x.prefix, ds::is_token, x.min_length, x.max_length, false);

  // JWT: ey<17..>.ey<17..>[.<signature>]
  if (rules.enabled("jwt"))
    for (std::size_t i = s.find("ey"); i != std::string_view::npos; i = s.find("ey", i + 1)) {
      if (!boundary_before(i)) continue;
      auto seg = [&](std::size_t k) {
        while (k < s.size() && ds::is_token(static_cast<unsigned char>(s[k]))) ++k;
        return k;
      };
      const std::size_t a = seg(i);
      if (a - i < 19 || a >= s.size() || s[a] != '.' || s.substr(a + 1, 2) != "ey") continue;
      const std::size_t b = seg(a + 1);
      if (b - a - 1 < 19) continue;
      std::size_t e = b;
      if (b < s.size() && s[b] == '.') {
        const std::size_t c = seg(b + 1);
        if (c - b - 1 >= 10) e = c;
      }
      add("jwt", i, e);
      i = e;
    }

  // PEM private keys: the whole block
  if (rules.enabled("private_key"))
    for (std::size_t i = s.find("-----BEGIN "); i != std::string_view::npos;
         i = s.find("-----BEGIN ", i + 1)) {
      const std::size_t close = s.find("-----", i + 11);
      if (close == std::string_view::npos || close - i > 60) continue;
      const auto label = s.substr(i + 11, close - i - 11);
      if (label.find("PRIVATE KEY") == std::string_view::npos) continue;
      std::size_t body = close + 5;
      std::size_t end = s.find("-----END", body);
      std::size_t stop = end == std::string_view::npos ? s.size() : end;
      std::size_t n = 0;
      for (std::size_t k = body; k < stop; ++k)
        n += ds::is_alnum(static_cast<unsigned char>(s[k])) || s[k] == '+' || s[k] == '/';
      if (n < 32) continue;
      if (end != std::string_view::npos) {
        const std::size_t tail = s.find("-----", end + 8);
        stop = tail == std::string_view::npos ? s.size() : tail + 5;
      }
      add("private_key", i, stop);
      i = stop - 1;
    }

  // scheme://user:password@host
  if (rules.enabled("connection_string"))
    for (std::size_t i = s.find("://"); i != std::string_view::npos; i = s.find("://", i + 1)) {
      if (i == 0 || !ds::is_alnum(static_cast<unsigned char>(s[i - 1]))) continue;
      std::size_t j = i + 3, colon = std::string_view::npos, at = std::string_view::npos;
      for (; j < s.size(); ++j) {
        const char c = s[j];
        if (c == '@') {
          at = j;
          break;
        }
        if (c == '/' || c == '?' || c == '#' || ds::is_space(static_cast<unsigned char>(c)) ||
            static_cast<unsigned char>(c) >= 0x80)
          break;
        if (c == ':' && colon == std::string_view::npos) colon = j;
      }
      if (at == std::string_view::npos || colon == std::string_view::npos || colon == i + 3)
        continue;
      if (at + 1 >= s.size() || !ds::is_alnum(static_cast<unsigned char>(s[at + 1]))) continue;
      const auto pw = s.substr(colon + 1, at - colon - 1);
      if (pw.size() < 3 || ds::is_placeholder(pw)) continue;
      add("connection_string", colon + 1, at);
    }

  // keyword assignments, found in an ASCII-lower-cased copy (one pass of memchr per keyword)
  const std::string low = ds::lower_copy(s);
  auto scan_keyword = [&](std::string_view rule, std::string_view kw, bool password) {
    ds::for_each_keyword(s, low, kw, [&](std::size_t after) {
      const std::size_t v = ds::after_keyword(s, after);
      std::size_t vb = v;
      if (v == std::string_view::npos) {
        // no separator: "Bearer <token>", or a quoted value right after the keyword
        vb = ds::skip_spaces(s, after);
        const bool quoted = vb < s.size() && (s[vb] == '"' || s[vb] == '\'' || s[vb] == '`');
        if (!quoted && (kw != "bearer" || vb == after)) return;
      }
      if (password) {
        const auto [b, e] = ds::value_at(s, vb, ds::printable_ascii);
        const auto val = s.substr(b, e - b);
        const bool pin = kw == "pin";
        if (val.size() < (pin ? 4 : rules.min_password_length) || val.size() > 128) return;
        if (pin && !std::all_of(val.begin(), val.end(),
                                [](unsigned char c) { return c >= '0' && c <= '9'; }))
          return;
        if (ds::is_placeholder(val) || !ds::password_like(val, true)) return;
        if (e < s.size() && static_cast<unsigned char>(s[e]) >= 0x80 && !pin && !ds::has_digit(val))
          return;
        add(rule, b, e);
      } else {
        const auto [b, e] = ds::value_at(s, vb, ds::is_generic);
        const auto val = s.substr(b, e - b);
        if (val.size() < 16 || val.size() > 512 || ds::is_placeholder(val)) return;
        if (!ds::has_digit(val) || !ds::has_letter(val)) return;
        if (ds::entropy(val) < rules.min_generic_entropy) return;
        add(rule, b, e);
      }
    });
  };
  if (rules.enabled("password")) {
    for (auto kw : ds::password_keywords) scan_keyword("password", kw, true);
    for (const auto& kw : rules.extra_password_keywords)
      if (!kw.empty()) scan_keyword("password", ds::lower_copy(kw), true);
  }
  if (rules.enabled("generic_api_key")) {
    for (auto kw : ds::token_keywords) scan_keyword("generic_api_key", kw, false);
    for (const auto& kw : rules.extra_token_keywords)
      if (!kw.empty()) scan_keyword("generic_api_key", ds::lower_copy(kw), false);
  }

  std::sort(out.begin(), out.end(), [](const secret_match& a, const secret_match& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end > b.end;
  });
  std::vector<secret_match> merged;
  for (const auto& m : out) {
    if (!merged.empty() && m.begin < merged.back().end) {
      merged.back().end = std::max(merged.back().end, m.end);
      continue;
    }
    merged.push_back(m);
  }
  return merged;
}

/// The masked form of a secret value: its first min(4, length / 4) bytes, "…", and its length in
/// bytes in parentheses, e.g. "AKIA…(20)" or "hu…(8)"; never more than a quarter of the value.
/// The shown prefix is cut back to a UTF-8 character boundary.
inline std::string mask_secret(std::string_view value) {
  std::size_t shown = std::min<std::size_t>(4, value.size() / 4);
  while (shown > 0 && (static_cast<unsigned char>(value[shown]) & 0xC0) == 0x80) --shown;
  return std::string(value.substr(0, shown)) + "…(" + std::to_string(value.size()) + ")";
}

/// `text` with every secret of `find_secrets(text, rules)` replaced by "[secret <rule>
/// <mask_secret(value)>]". Text without secrets is returned unchanged.
inline std::string mask_secrets(std::string_view text, const secret_rules& rules = {}) {
  const auto found = find_secrets(text, rules);
  if (found.empty()) return std::string(text);
  std::string out;
  out.reserve(text.size());
  std::size_t at = 0;
  for (const auto& m : found) {
    out.append(text.substr(at, m.begin - at));
    out += "[secret ";
    out += m.rule;
    out += ' ';
    out += mask_secret(text.substr(m.begin, m.end - m.begin));
    out += ']';
    at = m.end;
  }
  out.append(text.substr(at));
  return out;
}

/// Detector "secrets": emits `secret_in_content` (severity critical, repair "quarantine") with
/// record_ids {id}, evidence `rule` and `masked` (`mask_secret`) per secret found (in text order),
/// then `count` (integer). One finding per record. The content itself is never copied into the
/// finding.
///
/// Needs only `basic_record` (id, content). Incremental runs check changed records only.
/// @complexity O(total content length x rules); allocates only for records with secrets.
struct secret_detector {
  static constexpr std::string_view name = "secrets";
  secret_rules rules{};  ///< which rules run, the user's additions, entropy limits
  bool enabled = true;   ///< false: the detector reports nothing

  /// Appends secret_in_content findings; never mutates the store.
  template <class Ctx>
  void run(Ctx& ctx, std::vector<finding>& out) const {
    using R = typename Ctx::record_type;
    MEMHEALTH_REQUIRE_CAPABILITY(basic_record, R, "secret_detector", "id, content");
    if (!enabled) return;
    const auto& store = ctx.store();
    for (std::size_t i = 0; i < store.size(); ++i) {
      if (!ctx.is_changed(i)) continue;
      const R& r = store.record(i);
      const std::string_view content = field::content(r);
      const auto found = find_secrets(content, rules);
      if (found.empty()) continue;
      finding f;
      f.kind = std::string(finding_kinds::secret_in_content);
      f.severity = severity::critical;
      f.detector = std::string(name);
      f.record_ids = {std::string(field::id(r))};
      for (const auto& m : found) {
        f.with("rule", std::string(m.rule));
        f.with("masked", mask_secret(content.substr(m.begin, m.end - m.begin)));
      }
      f.with(evidence_keys::count, static_cast<std::int64_t>(found.size()));
      f.suggested_repair = "quarantine";
      out.push_back(std::move(f));
    }
  }
};

}  // namespace memhealth
