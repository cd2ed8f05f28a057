#pragma once
/// @file secret_matchers.hpp
/// Matchers of the "secrets" detector for the rules that are neither a fixed prefix nor a keyword
/// assignment (secrets.hpp lists every rule with its source): Discord and Telegram bot tokens, FCM
/// server keys, Twilio auth tokens, HTTP Basic credentials, credentials in command lines, digit
/// codes, 2FA backup codes, TOTP seeds, wallet seed phrases, payment cards, the allowlist; and
/// their helpers (the byte-pair prefilter, Luhn, base64, digit runs).
/// Hand-written scanners over bytes: linear in the text, no backtracking.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memhealth/detect/secret_rules.hpp"

namespace memhealth::detail::secrets {

/// The byte pairs of a lower-cased text, hashed into 4096 bits: `may_hold(p)` is false when one of
/// the first 6 byte pairs of p (ASCII lower-cased) is absent, so p cannot occur in the text.
class pair_filter {
  std::array<std::uint64_t, 64> bits_{};
  static unsigned slot(unsigned char a, unsigned char b) noexcept {
    return (static_cast<unsigned>(a) * 61u + b) & 4095u;
  }

 public:
  explicit pair_filter(std::string_view low) noexcept {
    for (std::size_t i = 1; i < low.size(); ++i) {
      const unsigned k =
          slot(static_cast<unsigned char>(low[i - 1]), static_cast<unsigned char>(low[i]));
      bits_[k >> 6] |= std::uint64_t{1} << (k & 63);
    }
  }
  [[nodiscard]] bool may_hold(std::string_view p) const noexcept {
    for (std::size_t i = 1; i < p.size() && i <= 6; ++i) {
      const unsigned k = slot(lower(static_cast<unsigned char>(p[i - 1])),
                              lower(static_cast<unsigned char>(p[i])));
      if (!(bits_[k >> 6] >> (k & 63) & 1)) return false;
    }
    return true;
  }
};

/// Whether a count's unit follows a number ending at e: "12 characters", "4 digits", "6-stellig".
inline bool count_word_after(std::string_view s, std::size_t e) noexcept {
  const std::size_t w = skip_spaces(s, e);
  for (std::string_view unit :
       {"digit",    "character", "char",    "number", "letter", "time",    "day",
        "minute",   "second",    "year",    "%",      "-digit", "zeichen", "stellig",
        "-stellig", "caracter",  "chiffre", "位",     "桁",     "文字",    "자리"})
    if (starts_with_ci(s, w, unit)) return true;
  return false;
}

/// Luhn check of the digits of s (other bytes skipped).
inline bool luhn(std::string_view s) noexcept {
  int sum = 0;
  bool twice = false;
  for (auto it = s.rbegin(); it != s.rend(); ++it) {
    if (!is_digit(static_cast<unsigned char>(*it))) continue;
    int d = *it - '0';
    if (twice && (d *= 2) > 9) d -= 9;
    sum += d;
    twice = !twice;
  }
  return sum % 10 == 0;
}

/// Decodes standard base64 (padding optional); empty on a bad byte.
inline std::string base64_decode(std::string_view s) {
  std::string out;
  unsigned buf = 0;
  int bits = 0;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    int v;
    if (c >= 'A' && c <= 'Z')
      v = c - 'A';
    else if (c >= 'a' && c <= 'z')
      v = c - 'a' + 26;
    else if (is_digit(c))
      v = c - '0' + 52;
    else if (c == '+' || c == '-')
      v = 62;
    else if (c == '/' || c == '_')
      v = 63;
    else if (c == '=')
      break;
    else
      return {};
    buf = (buf << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buf >> bits) & 0xFF));
    }
  }
  return out;
}

/// A run of digit groups at i: "4821", "1-9-6-4", "32 14 27", "#5502", "4821#". Returns the end
/// (npos if none) and the number of digits and groups.
struct digit_run {
  std::size_t begin, end, digits, groups;
};
inline digit_run digits_at(std::string_view s, std::size_t i) noexcept {
  digit_run r{i, std::string_view::npos, 0, 0};
  if (at(s, i) == '#' || at(s, i) == '*') ++i;
  std::size_t j = i;
  while (is_digit(at(s, j))) {
    const std::size_t g = j;
    while (is_digit(at(s, j))) ++j;
    r.digits += j - g;
    ++r.groups;
    const unsigned char sep = at(s, j);
    if ((sep == '-' || sep == ' ' || sep == '.') && is_digit(at(s, j + 1)))
      ++j;
    else
      break;
  }
  if (!r.digits) return r;
  if (at(s, j) == '#' || at(s, j) == '*') ++j;
  if (is_alpha(at(s, j)) || (at(s, j) == '.' && is_digit(at(s, j + 1)))) return r;
  r.end = j;
  return r;
}

using matches = std::vector<secret_match>;
inline void add(matches& out, std::string_view rule, std::size_t b, std::size_t e) {
  if (e > b) out.push_back({rule, b, e});
}
inline bool boundary_before(std::string_view s, std::size_t i) noexcept {
  return i == 0 || !is_word(at(s, i - 1));
}

// Discord bot token (gitleaks discord-api-token is keyword-based; this is the token's shape):
// [MNO] + 23..27 base64url "." 6 "." 27..38, the first part the base64 of a numeric user id.
inline void scan_discord_bot(std::string_view s, matches& out) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = at(s, i);
    if ((c != 'M' && c != 'N' && c != 'O') || !boundary_before(s, i)) continue;
    std::size_t a = i;
    while (is_token(at(s, a))) ++a;
    if (a - i < 24 || a - i > 28 || at(s, a) != '.') continue;
    std::size_t b = a + 1;
    while (is_token(at(s, b))) ++b;
    if (b - a - 1 != 6 || at(s, b) != '.') continue;
    std::size_t e = b + 1;
    while (is_token(at(s, e))) ++e;
    if (e - b - 1 < 27 || e - b - 1 > 38 || entropy(s.substr(i, e - i)) < 3.5) continue;
    add(out, "discord_bot_token", i, e);
    i = e;
  }
}

// Telegram bot token (gitleaks telegram-bot-api-token): 8..10 digits ":AA" + 33 base64url.
inline void scan_telegram(std::string_view s, matches& out) {
  for (std::size_t i = s.find(":AA"); i != std::string_view::npos; i = s.find(":AA", i + 1)) {
    std::size_t b = i;
    while (b > 0 && is_digit(at(s, b - 1))) --b;
    if (i - b < 8 || i - b > 10 || !boundary_before(s, b)) continue;
    std::size_t e = i + 3;
    while (is_token(at(s, e))) ++e;
    if (e - i - 3 != 33) continue;
    add(out, "telegram_bot_token", b, e);
  }
}

// Firebase Cloud Messaging server key (gitleaks gcp... / fcm): AAAA + 7 ":APA91b" + 100.. .
inline void scan_fcm(std::string_view s, matches& out) {
  for (std::size_t i = s.find(":APA91b"); i != std::string_view::npos;
       i = s.find(":APA91b", i + 1)) {
    if (i < 11 || s.substr(i - 11, 4) != "AAAA" || !boundary_before(s, i - 11)) continue;
    if (!all_of(s.substr(i - 7, 7), is_token)) continue;
    std::size_t e = i + 7;
    while (is_token(at(s, e))) ++e;
    if (e - i - 7 < 100) continue;
    add(out, "fcm_server_key", i - 11, e);
  }
}

// Twilio auth token (gitleaks twilio-api-key covers SK keys): 32 lower-case hex standing alone in
// a text that also holds an account SID, AC + 32 hex.
inline void scan_twilio_auth(std::string_view s, matches& out) {
  auto hex_run = [&](std::size_t i) {
    std::size_t e = i;
    while (is_hex(at(s, e))) ++e;
    return e;
  };
  bool sid = false;
  for (std::size_t i = s.find("AC"); i != std::string_view::npos && !sid; i = s.find("AC", i + 1))
    sid = boundary_before(s, i) && hex_run(i + 2) - i - 2 == 32 && !is_word(at(s, i + 34));
  if (!sid) return;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (!is_hex(at(s, i)) || !boundary_before(s, i)) continue;
    const std::size_t e = hex_run(i);
    const auto v = s.substr(i, e - i);
    if (v.size() == 32 && !is_word(at(s, e)) &&
        !any_of(v, [](unsigned char c) { return c >= 'A' && c <= 'F'; }) && has_digit(v) &&
        has_letter(v) && entropy(v) >= 3.0)
      add(out, "twilio_auth_token", i, e);
    i = e;
  }
}

// "Authorization: Basic <base64>" (gitleaks has no rule; curl and HTTP logs): the base64 decodes
// to printable "user:password".
inline void scan_basic_auth(std::string_view s, std::string_view low, matches& out) {
  for (std::size_t i = low.find("basic "); i != std::string_view::npos;
       i = low.find("basic ", i + 1)) {
    if (i > 0 && is_alnum(at(s, i - 1))) continue;
    const std::size_t b = i + 6;
    std::size_t e = b;
    while (is_base64(at(s, e))) ++e;
    if (e - b < 8 || is_word(at(s, e))) continue;
    const std::string d = base64_decode(s.substr(b, e - b));
    const auto colon = d.find(':');
    if (colon == std::string::npos || colon + 3 > d.size() || !all_of(d, printable_ascii)) continue;
    add(out, "basic_auth", b, e);
  }
}

// Credentials given to a command (gitleaks has no rule): mysql/mariadb "-pPASS", "--password X",
// "-p X" after docker/podman/helm/oras login or sshpass, "curl -u user:pass" / "--user user:pass".
inline void scan_cli(std::string_view s, matches& out) {
  struct tok {
    std::size_t b, e;
  };
  std::vector<tok> toks;
  for (std::size_t i = 0; i < s.size();) {
    while (i < s.size() && is_space(at(s, i))) ++i;
    const std::size_t b = i;
    char q = 0;
    while (i < s.size() && (q || !is_space(at(s, i)))) {
      if (!q && (s[i] == '\'' || s[i] == '"'))
        q = s[i];
      else if (q && s[i] == q)
        q = 0;
      ++i;
    }
    if (i > b) toks.push_back({b, i});
  }
  bool mysql = false, login = false, curl = false, redis = false;
  auto word = [&](std::size_t k) { return s.substr(toks[k].b, toks[k].e - toks[k].b); };
  auto value = [&](std::size_t b, std::size_t e) {
    if (e > b + 1 && (s[b] == '\'' || s[b] == '"') && s[e - 1] == s[b])
      return std::pair{b + 1, e - 1};
    const auto v = trim_value(s.substr(b, e - b));
    return std::pair{b, b + v.size()};
  };
  auto emit = [&](std::pair<std::size_t, std::size_t> v, bool loose = false) {
    const auto t = s.substr(v.first, v.second - v.first);
    if (t.size() >= 4 && !is_placeholder(t) && t.front() != '-' &&
        (!loose || password_like(t, true) ||  // "-a reads the password from ..." is no value
         (v.first > 0 && (s[v.first - 1] == '\'' || s[v.first - 1] == '"'))))
      add(out, "cli_credential", v.first, v.second);
  };
  for (std::size_t k = 0; k < toks.size(); ++k) {
    const auto w = word(k);
    const std::string lw = lower_copy(w);
    if (w == "&&" || w == "|" || w == ";" ||
        (k &&
         s.substr(toks[k - 1].e, toks[k].b - toks[k - 1].e).find('\n') != std::string_view::npos))
      mysql = login = curl = redis = false;
    if (lw == "mysql" || lw == "mysqldump" || lw == "mariadb" || lw == "mysqladmin") mysql = true;
    if (lw == "login" || lw == "sshpass" || lw == "mongo" || lw == "mongosh" || lw == "mongodump" ||
        lw == "mongorestore")
      login = true;
    if (lw == "redis-cli") redis = true;
    if (lw == "curl" || lw == "wget") curl = true;
    const bool next = k + 1 < toks.size();
    if (mysql && w.size() > 2 && w.substr(0, 2) == "-p") emit(value(toks[k].b + 2, toks[k].e));
    if ((lw == "--password" || lw == "--pass" || (login && w == "-p") || (redis && w == "-a")) &&
        next)
      emit(value(toks[k + 1].b, toks[k + 1].e), true);
    if (curl && (w == "-u" || lw == "--user") && next) {
      const auto u = word(k + 1);
      const auto colon = u.find(':');
      if (colon != std::string_view::npos && colon > 0)
        emit(value(toks[k + 1].b + colon + 1, toks[k + 1].e));
    }
  }
}

// Digit codes after a code keyword: "the garage code is 4821", "alarm disarm code 1-9-6-4",
// "safe combination 32-14-27", "gate code #5502", "PIN 4821", "CVV: 123". 3..12 digits (a pin or
// passcode 4..12, a CVV 3..4); a date (2024-03-05) or a count ("4 digits") is not a code.
inline void scan_code(std::string_view s, std::string_view low, std::size_t after,
                      std::string_view kw, matches& out) {
  // a bare "code" needs a thing it opens nearby: "the code for the garage is 4821"
  if (std::find(std::begin(bare_code_keywords), std::end(bare_code_keywords), kw) !=
      std::end(bare_code_keywords)) {
    const std::size_t from = after > 40 + 4 ? after - 44 : 0;
    const auto near = low.substr(from, std::min<std::size_t>(s.size(), after + 40) - from);
    if (std::none_of(std::begin(code_objects), std::end(code_objects),
                     [&](std::string_view o) { return near.find(o) != std::string_view::npos; }))
      return;
  }
  auto accept = [&](std::size_t v) {
    if (at(s, v) == '"' || at(s, v) == '\'') ++v;
    const auto r = digits_at(s, v);
    if (r.end == std::string_view::npos) return false;
    const bool cvv = kw == "cvv" || kw == "cvc";
    const bool pin = kw.find("pin") != std::string_view::npos || kw == "passcode";
    if (r.digits < (pin ? 4u : 3u) || r.digits > (cvv ? 4u : 12u)) return false;
    const auto first = s.substr(r.begin, r.end - r.begin);
    if (r.groups == 3 && r.digits == 8 &&
        (first.substr(0, 2) == "19" || first.substr(0, 2) == "20"))
      return false;  // a date
    if (count_word_after(s, r.end)) return false;
    add(out, cvv ? "payment_card" : "access_code", r.begin, r.end);
    return true;
  };
  std::size_t v = after_keyword(s, after);
  if (v == std::string_view::npos) v = skip_spaces(s, after);
  if (v == after && v < s.size() && at(s, v) != ':') return;  // "pin2", "combo-box"
  if (accept(v)) return;
  // "combination to the safe is 12-34-56": the first number in the clause after a separator
  for (std::size_t p = after; p < s.size() && p < after + 48; ++p) {
    const unsigned char c = at(s, p);
    if (c == '\n' || c == ';' || ((c == '.' || c == '?' || c == '!') && !is_digit(at(s, p + 1))))
      return;
    if (!(is_digit(c) || c == '#') || is_alnum(at(s, p - 1))) continue;
    std::size_t q = p;
    while (q > after && (s[q - 1] == ' ' || s[q - 1] == '\t')) --q;
    for (auto sep : separators) {
      if (q - after < sep.size() || !starts_with_ci(s, q - sep.size(), sep)) continue;
      const bool word = is_alnum(static_cast<unsigned char>(sep.front()));
      if (word && is_alnum(at(s, q - sep.size() - 1))) continue;
      if (word && sep.size() == 2 && sep != "is" && sep != "es") continue;  // "to", "é"...
      accept(p);
      return;
    }
    return;
  }
}

// 2FA backup / recovery codes: after the keyword, a list of codes (8..16 bytes of letters, digits
// and up to two '-', with a digit, not a word like "1Password", not a date; or "1234 5678"); two
// or more for a plural keyword ("backup codes"), one for a singular one.
inline void scan_backup(std::string_view s, std::size_t after, std::string_view kw, matches& out) {
  const bool plural = kw.back() == 's' || static_cast<unsigned char>(kw.back()) >= 0x80;
  std::size_t i = after, first = 0, last = 0, n = 0;
  int skipped = 0;
  auto code_at = [&](std::size_t b) -> std::size_t {
    std::size_t e = b, dashes = 0;
    bool digit = false, wordlike = false;
    while (is_alnum(at(s, e)) || (at(s, e) == '-' && is_alnum(at(s, e + 1)) && e > b)) {
      const unsigned char c = at(s, e);
      dashes += c == '-';
      digit = digit || is_digit(c);
      // a capital and 3 lower-case letters: "1Password", "iPhone12" are words, not codes
      if (c >= 'A' && c <= 'Z' && e + 4 <= s.size() &&
          all_of(s.substr(e + 1, 3), [](unsigned char x) { return x >= 'a' && x <= 'z'; }))
        wordlike = true;
      ++e;
    }
    if (is_word(at(s, e))) return 0;
    if (e - b == 4 && all_of(s.substr(b, 4), is_digit) && at(s, e) == ' ' &&
        all_of(s.substr(e + 1, 4), is_digit) && e + 5 <= s.size() && !is_alnum(at(s, e + 5)))
      return e + 5;  // "1234 5678"
    if (e - b < 8 || e - b > 16 || !digit || wordlike || dashes > 2) return 0;
    if (dashes == 2 && all_of(s.substr(b, 4), is_digit)) return 0;  // a date, 2024-05-01
    return e;
  };
  while (i < s.size() && i < after + 400) {
    while (i < s.size() && !is_alnum(at(s, i))) {
      if (s[i] == '\n' && at(s, i + 1) == '\n') return;
      ++i;
    }
    if (i >= s.size()) break;
    if (const std::size_t e = code_at(i); e) {
      if (!n) first = i;
      last = e;
      ++n;
      i = e;
      continue;
    }
    if (n || ++skipped > 6) break;
    while (i < s.size() && !is_space(at(s, i))) ++i;
  }
  if (n >= (plural ? 2u : 1u)) add(out, "backup_codes", first, last);
}

// TOTP seeds: base32 ([A-Z2-7], one case, groups of 4 may be spaced) of 16.. bytes with a digit,
// within 60 bytes after a TOTP keyword, or as "secret=" of an otpauth:// URL.
inline void scan_totp(std::string_view s, std::size_t after, matches& out) {
  auto b32 = [](unsigned char c, bool up) {
    return (c >= '2' && c <= '7') || (up ? (c >= 'A' && c <= 'Z') : (c >= 'a' && c <= 'z'));
  };
  for (std::size_t i = after; i < s.size() && i < after + 60; ++i) {
    if (!is_alnum(at(s, i)) || (i > 0 && is_alnum(at(s, i - 1)))) continue;
    const bool up = !(at(s, i) >= 'a' && at(s, i) <= 'z');
    std::size_t e = i, n = 0, g = i;
    while (true) {
      while (b32(at(s, e), up)) ++e;
      n += e - g;
      if (at(s, e) == ' ' && e - g == 4 && b32(at(s, e + 1), up)) {
        g = ++e;
        continue;
      }
      break;
    }
    if (is_alnum(at(s, e)) || n < 16) continue;
    const auto v = s.substr(i, e - i);
    if (!any_of(v, is_digit) || entropy(v) < 3.0) continue;
    add(out, "totp_secret", i, e);
    return;
  }
}

// Wallet seed phrases (called with the lower-cased text): after a keyword, 12/15/18/21/24 words
// of 3..8 letters (the BIP-39 English words' lengths), separated by spaces, commas or "1." numbers,
// ending at anything else or at a common English word that is not a BIP-39 word ("the", "and",
// ...).
inline void scan_seed(std::string_view s, std::size_t after, matches& out) {
  auto lword = [&](std::size_t b) {
    std::size_t e = b;
    while (at(s, e) >= 'a' && at(s, e) <= 'z') ++e;
    if (e - b < 3 || e - b > 8 || is_word(at(s, e)) || at(s, e) >= 0x80) return b;
    for (auto w : seed_stopwords)
      if (s.substr(b, e - b) == w) return b;
    return e;
  };
  auto gap = [&](std::size_t e) {
    while (e < s.size()) {
      const unsigned char c = at(s, e);
      if (c == ' ' || c == ',' || c == '\n' || c == '\t' || c == '-' || c == '|')
        ++e;
      else if (is_digit(c) && (at(s, e + 1) == '.' || at(s, e + 1) == ')'))
        e += 2;
      else if (is_digit(c) && is_digit(at(s, e + 1)) &&
               (at(s, e + 2) == '.' || at(s, e + 2) == ')'))
        e += 3;
      else
        break;
    }
    return e;
  };
  for (std::size_t i = after; i < s.size() && i < after + 120; ++i) {
    if (i > 0 && is_alnum(at(s, i - 1))) continue;
    std::size_t n = 0, last = i;
    for (std::size_t b = i;;) {
      const std::size_t we = lword(b);
      if (we == b) break;
      ++n;
      last = we;
      const std::size_t g = gap(we);
      if (g == we) break;
      b = g;
    }
    if (n == 12 || n == 15 || n == 18 || n == 21 || n == 24) {
      add(out, "seed_phrase", i, last);
      return;
    }
    if (n) i = last;
  }
}

// Payment card numbers: 13..19 digits (groups split by one space or '-'), first digit 2..6, that
// pass the Luhn check, in a text that names a card ("card", "Visa", "CVV", "exp", 信用卡, ...).
// A bare number is personal data, not a credential: without such a word it is not reported.
inline void scan_card(std::string_view s, std::string_view low, const pair_filter& pairs,
                      matches& out) {
  if (!any_of(s, is_digit)) return;
  bool named = false;
  for (auto w : card_words)
    named = named || (pairs.may_hold(w) && low.find(w) != std::string_view::npos);
  if (!named) return;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (!is_digit(at(s, i)) || (i > 0 && (is_alnum(at(s, i - 1)) || at(s, i - 1) == '-'))) continue;
    if (i >= 5 && s[i - 1] == ' ' && is_alpha(at(s, i - 5)) && is_alpha(at(s, i - 4)) &&
        is_digit(at(s, i - 3)) && is_digit(at(s, i - 2)))
      continue;  // the account number of an IBAN, "DE89 3704 0044 ..."
    std::size_t e = i, n = 0;
    while (true) {
      while (is_digit(at(s, e))) ++e, ++n;
      if ((at(s, e) == ' ' || at(s, e) == '-') && is_digit(at(s, e + 1)))
        ++e;
      else
        break;
    }
    const auto v = s.substr(i, e - i);
    if (n >= 13 && n <= 19 && !is_alnum(at(s, e)) && v[0] >= '2' && v[0] <= '6' && luhn(v))
      add(out, "payment_card", i, e);
    i = e;
  }
}

// gitleaks-style allowlist: a value holding "example", or an allow word standing before it.
inline bool allowed(std::string_view s, std::string_view low, const secret_match& m,
                    const secret_rules& rules) {
  const auto v = low.substr(m.begin, m.end - m.begin);
  for (const auto& w : rules.allow_in_value)
    if (!w.empty() && v.find(lower_copy(w)) != std::string_view::npos) return true;
  std::size_t b = m.begin > 48 ? m.begin - 48 : 0;
  for (std::size_t k = m.begin; k > b; --k)  // the same clause: after a line end, ';' or ". "
    if (s[k - 1] == '\n' || s[k - 1] == ';' || (s[k - 1] == '.' && at(s, k) == ' ')) {
      b = k;
      break;
    }
  const auto before = low.substr(b, m.begin - b);
  auto sep = [](unsigned char c) {
    return !is_alnum(c) && c != '.' && c != '@' && c != '/' && c != '_' && c != '-';
  };
  for (const auto& w0 : rules.allow_words) {
    if (w0.empty()) continue;
    const std::string w = lower_copy(w0);
    for (std::size_t k = before.find(w); k != std::string_view::npos; k = before.find(w, k + 1)) {
      const bool l = k == 0 ? b == 0 || sep(at(s, b - 1)) : sep(at(before, k - 1));
      const std::size_t r = k + w.size();
      if (l && (r >= before.size() ? true : sep(at(before, r)) || before[r] == 's')) return true;
    }
  }
  return false;
}

}  // namespace memhealth::detail::secrets
