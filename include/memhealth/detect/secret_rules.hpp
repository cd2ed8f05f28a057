#pragma once
/// @file secret_rules.hpp
/// The settings and rule tables of the "secrets" detector: keyword, separator and prefix tables and
/// the byte helpers (secret_matchers.hpp holds the matchers of the rules that are not a prefix or
/// a keyword assignment; secrets.hpp holds `find_secrets`, the masking, the detector, and in its
/// file comment every rule with its source).
///
/// Every matcher is a hand-written scanner over bytes (no regular-expression engine: linear in
/// the text for each keyword or prefix, no backtracking on hostile content).

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace memhealth {

/// One secret found in a text: the rule that matched and the byte span of the secret value
/// (for a password or connection string, the value only, not the keyword).
struct secret_match {
  std::string_view rule;  ///< a rule name from the table in secrets.hpp
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
  /// Extra keywords of `access_code` (digit codes: "locker code", ...).
  std::vector<std::string> extra_code_keywords;
  /// Allowlist (gitleaks' stopwords): a match is dropped when one of these words stands (as a
  /// whole word, ASCII case-insensitive) in the 32 bytes before the value, in the same clause.
  std::vector<std::string> allow_words{"example",   "sample",   "dummy", "placeholder", "fake",
                                       "fictional", "redacted", "mock",  "bogus"};
  /// Allowlist: a match is dropped when its value holds one of these (ASCII case-insensitive),
  /// like AWS's documented AKIAIOSFODNN7EXAMPLE.
  std::vector<std::string> allow_in_value{"example"};
  double min_entropy = 3.0;             ///< bits per byte, prefixed token bodies
  double min_generic_entropy = 3.5;     ///< bits per byte, generic_api_key values (gitleaks: 3.5)
  double min_hex_entropy = 3.0;         ///< ... for an all-hex value of 32.. bytes (max 4 bits)
  std::size_t min_password_length = 6;  ///< bytes of a password value (a pin: 4)

  [[nodiscard]] bool enabled(std::string_view rule) const noexcept {
    return std::find(disabled.begin(), disabled.end(), rule) == disabled.end();
  }
};

namespace detail::secrets {

inline bool is_digit(unsigned char c) noexcept {
  return c >= '0' && c <= '9';
}
inline bool is_alpha(unsigned char c) noexcept {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}
inline bool is_alnum(unsigned char c) noexcept {
  return is_digit(c) || is_alpha(c);
}
inline bool is_upper_digit(unsigned char c) noexcept {
  return is_digit(c) || (c >= 'A' && c <= 'Z');
}
inline bool is_hex(unsigned char c) noexcept {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
inline bool is_word(unsigned char c) noexcept {
  return is_alnum(c) || c == '_';
}
inline bool is_token(unsigned char c) noexcept {
  return is_word(c) || c == '-';
}
inline bool is_dotted(unsigned char c) noexcept {
  return is_token(c) || c == '.';
}
inline bool is_path(unsigned char c) noexcept {
  return is_token(c) || c == '/';
}
inline bool is_base64(unsigned char c) noexcept {
  return is_alnum(c) || c == '+' || c == '/' || c == '=';
}
inline bool is_generic(unsigned char c) noexcept {
  return is_token(c) || c == '+' || c == '/' || c == '=' || c == '.';
}
inline bool is_space(unsigned char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}
inline bool printable_ascii(unsigned char c) noexcept {
  return c > ' ' && c < 0x7f;
}
inline unsigned char lower(unsigned char c) noexcept {
  return c >= 'A' && c <= 'Z' ? static_cast<unsigned char>(c - 'A' + 'a') : c;
}
inline unsigned char at(std::string_view s, std::size_t i) noexcept {
  return i < s.size() ? static_cast<unsigned char>(s[i]) : 0;
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

template <class P>
bool any_of(std::string_view s, P p) noexcept {
  return std::any_of(s.begin(), s.end(), [&](char c) { return p(static_cast<unsigned char>(c)); });
}
template <class P>
bool all_of(std::string_view s, P p) noexcept {
  return std::all_of(s.begin(), s.end(), [&](char c) { return p(static_cast<unsigned char>(c)); });
}
inline bool has_digit(std::string_view s) noexcept {
  return any_of(s, is_digit);
}
inline bool has_letter(std::string_view s) noexcept {
  return any_of(s, is_alpha);
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
  bool value_only = false;       // the span is the body only (a "Key=" prefix)
};

// Fixed prefixes (gitleaks rule ids in secrets.hpp). Longer prefixes of one family first.
// A vendor prefix is the evidence: bodies need no digit (a Hugging Face token may be letters).
inline constexpr std::array<prefix_row, 90> prefix_rows{{
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
    {"slack_token", "xoxr-", is_token, 20, 0, true},
    {"slack_token", "xapp-", is_token, 20, 0, true},
    {"slack_webhook_url", "hooks.slack.com/services/", is_path, 30, 0, false},
    {"slack_webhook_url", "hooks.slack.com/workflows/", is_path, 30, 0, false},
    {"slack_webhook_url", "hooks.slack.com/triggers/", is_path, 30, 0, false},
    {"stripe_key", "sk_live_", is_alnum, 20, 0, false},
    {"stripe_key", "rk_live_", is_alnum, 20, 0, false},
    {"stripe_key", "sk_test_", is_alnum, 20, 0, false},
    {"stripe_key", "rk_test_", is_alnum, 20, 0, false},
    {"google_api_key", "AIza", is_token, 35, 35, false},
    {"gcp_oauth_client_secret", "GOCSPX-", is_token, 24, 40, false},
    {"gitlab_token", "glpat-", is_token, 20, 0, false},
    {"gitlab_token", "gldt-", is_token, 20, 0, false},
    {"gitlab_token", "glrt-", is_token, 20, 0, false},
    {"gitlab_token", "glptt-", is_token, 20, 0, false},
    {"gitlab_token", "glft-", is_token, 20, 0, false},
    {"gitlab_token", "glsoat-", is_token, 20, 0, false},
    {"gitlab_token", "glcbt-", is_token, 20, 0, false},
    {"gitlab_token", "glimt-", is_token, 20, 0, false},
    {"gitlab_token", "glagent-", is_token, 20, 0, false},
    {"gitlab_token", "gloas-", is_token, 20, 0, false},
    {"gitlab_token", "GR1348941", is_token, 20, 0, false},
    {"discord_webhook_url", "discord.com/api/webhooks/", is_path, 40, 0, false},
    {"discord_webhook_url", "discordapp.com/api/webhooks/", is_path, 40, 0, false},
    {"twilio_api_key", "SK", is_hex, 32, 32, false},
    {"npm_token", "npm_", is_alnum, 36, 36, false},
    {"huggingface_token", "hf_", is_alnum, 30, 0, false},
    {"huggingface_token", "api_org_", is_alnum, 30, 0, false},
    {"azure_connection_string", "AccountKey=", is_base64, 40, 0, false, true},
    {"azure_connection_string", "SharedAccessKey=", is_base64, 40, 0, false, true},
    {"shopify_token", "shpat_", is_hex, 32, 32, false},
    {"shopify_token", "shpca_", is_hex, 32, 32, false},
    {"shopify_token", "shppa_", is_hex, 32, 32, false},
    {"shopify_token", "shpss_", is_hex, 32, 32, false},
    {"mapbox_secret_token", "sk.eyJ", is_dotted, 40, 0, false},
    {"linear_api_key", "lin_api_", is_alnum, 32, 0, false},
    {"sendgrid_api_key", "SG.", is_dotted, 50, 80, false},
    {"pypi_token", "pypi-AgEIcHlwaS5vcmc", is_token, 50, 0, false},
    {"digitalocean_token", "dop_v1_", is_hex, 40, 0, false},
    {"digitalocean_token", "doo_v1_", is_hex, 40, 0, false},
    {"digitalocean_token", "dor_v1_", is_hex, 40, 0, false},
    {"postman_api_key", "PMAK-", is_token, 40, 0, false},
    {"atlassian_api_token", "ATATT3", is_generic, 60, 0, false},
    {"heroku_api_key", "HRKU-", is_token, 40, 0, false},
    {"mailgun_api_key", "key-", is_hex, 32, 32, false},
    {"square_token", "sq0atp-", is_token, 22, 60, false},
    {"square_token", "sq0csp-", is_token, 40, 50, false},
    {"square_token", "EAAA", is_token, 40, 80, true},
    {"databricks_token", "dapi", is_hex, 30, 40, false},
    {"grafana_token", "glc_", is_base64, 32, 0, false},
    {"grafana_token", "glsa_", is_word, 32, 0, false},
    {"grafana_token", "eyJrIjoi", is_base64, 40, 0, false},
    {"doppler_token", "dp.pt.", is_alnum, 32, 0, false},
    {"doppler_token", "dp.st.", is_dotted, 32, 0, false},
    {"doppler_token", "dp.ct.", is_alnum, 32, 0, false},
    {"doppler_token", "dp.sa.", is_alnum, 32, 0, false},
    {"newrelic_key", "NRAK-", is_upper_digit, 24, 32, false},
    {"newrelic_key", "NRII-", is_token, 28, 36, false},
    {"sentry_token", "sntrys_", is_generic, 60, 0, false},
    {"sentry_token", "sntryu_", is_hex, 64, 64, false},
    {"age_secret_key", "AGE-SECRET-KEY-1", is_upper_digit, 58, 58, false},
    {"google_oauth_token", "ya29.", is_token, 30, 0, false},
    {"dropbox_token", "sl.", is_token, 130, 0, false},
    {"notion_token", "ntn_", is_alnum, 40, 60, false},
    {"notion_token", "secret_", is_alnum, 43, 43, false},
    {"docker_pat", "dckr_pat_", is_token, 27, 0, false},
    {"groq_api_key", "gsk_", is_alnum, 48, 60, false},
    {"replicate_api_token", "r8_", is_alnum, 37, 40, false},
    {"perplexity_api_key", "pplx-", is_alnum, 40, 60, false},
    {"xai_api_key", "xai-", is_alnum, 70, 90, false},
}};

// Password keywords: English, Chinese, and (issue 19) Japanese, German, Spanish, French,
// Portuguese, Russian, Korean, Dutch, Turkish (Italian uses "password"), Polish, Swedish, Czech,
// Finnish, Norwegian, Danish, Hungarian, Romanian, Indonesian, Vietnamese. Non-ASCII keywords are
// matched as bytes, so capitalised Cyrillic / Turkish forms are listed too.
inline constexpr std::string_view password_keywords[] = {
    "password",   "passwd",      "passcode",     "passphrase", "pwd",        "pgpassword",
    "密码",       "口令",        "密碼",         "パスワード", "passwort",   "kennwort",
    "contraseña", "clave",       "mot de passe", "senha",      "пароль",     "Пароль",
    "비밀번호",   "암호",        "wachtwoord",   "şifre",      "Şifre",      "şifresi",
    "Şifresi",    "şifrem",      "hasło",        "lösenord",   "heslo",      "salasana",
    "passord",    "adgangskode", "jelszó",       "parolă",     "kata sandi", "mật khẩu"};
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
                                                      "app key",
                                                      "app_key",
                                                      "application key",
                                                      "api secret",
                                                      "api_secret",
                                                      "secret token",
                                                      "auth key",
                                                      "license key",
                                                      "license_key",
                                                      "private token",
                                                      "private_token",
                                                      "deploy token",
                                                      "webhook secret",
                                                      "signing secret",
                                                      "admin key",
                                                      "admin_key",
                                                      "access key",
                                                      "access_key",
                                                      "account key",
                                                      "account_key",
                                                      "service key",
                                                      "service_key",
                                                      "subscription key",
                                                      "subscription-key",
                                                      "subscription_key",
                                                      "private key",
                                                      "private_key",
                                                      "privkey",
                                                      "encryption key",
                                                      "master key",
                                                      "consumer secret",
                                                      "token",
                                                      "secret",
                                                      "bearer",
                                                      "密钥",
                                                      "令牌",
                                                      "秘钥"};
// Digit codes that open something (rule access_code; "cvv"/"cvc" report payment_card).
inline constexpr std::string_view code_keywords[] = {
    "door code",    "gate code",     "garage code", "alarm code",
    "disarm code",  "arming code",   "safe code",   "lock code",
    "lockbox code", "keypad code",   "entry code",  "access code",
    "unlock code",  "security code", "combination", "kombination",
    "combo",        "pin code",      "pin number",  "pin",
    "passcode",     "cvv",           "cvc",         "暗証番号",
    "digicode",     "türcode",       "torcode",     "código de acceso",
    "code d'accès", "lockbox",       "keybox",      "key safe",
    "padlock",      "code",          "código",      "codigo",
    "codice",       "kod",           "код"};
// Things a bare "code" (`bare_code_keywords`) opens, within 40 bytes of it.
inline constexpr std::string_view bare_code_keywords[] = {"code",   "código", "codigo",
                                                          "codice", "kod",    "код"};
inline constexpr std::string_view code_objects[] = {
    "door",     "gate",     "garage", "alarm",     "safe",    "lock",  "keypad",
    "entry",    "building", "house",  "apartment", "storage", "shed",  "mailbox",
    "locker",   "vault",    "tür",    "puerta",    "portón",  "porte", "portail",
    "cancello", "drzwi",    "двер",   "домофон",   "門",      "门",    "ドア"};
inline constexpr std::string_view backup_keywords[] = {
    "backup codes",  "recovery codes",     "scratch codes", "2fa codes", "backup code",
    "recovery code", "バックアップコード", "备用码",        "恢复码"};
inline constexpr std::string_view totp_keywords[] = {"totp",
                                                     "2fa secret",
                                                     "2fa seed",
                                                     "2fa key",
                                                     "mfa secret",
                                                     "mfa seed",
                                                     "otp secret",
                                                     "otp seed",
                                                     "authenticator seed",
                                                     "authenticator secret",
                                                     "authenticator key",
                                                     "setup key",
                                                     "two-factor secret"};
inline constexpr std::string_view seed_keywords[] = {"seed phrase",
                                                     "seed words",
                                                     "seed",
                                                     "recovery phrase",
                                                     "mnemonic",
                                                     "recovery words",
                                                     "backup phrase",
                                                     "backup words",
                                                     "secret phrase",
                                                     "助记词",
                                                     "シードフレーズ",
                                                     "frase semilla",
                                                     "frase de recuperación"};
// Words that end a seed-phrase run: common English words that are not BIP-39 words ("have",
// "that", "this", "then", "they", "what", "when", "will", "you", "into" are BIP-39 words).
inline constexpr std::string_view seed_stopwords[] = {
    "the", "and", "her",  "his",   "she",  "them", "their", "its",  "with", "from",
    "are", "was", "were", "would", "your", "has",  "had",   "been", "than", "which",
    "who", "why", "how",  "onto",  "but",  "not",  "for",   "our"};
inline constexpr std::string_view card_words[] = {
    "card",     "visa",   "mastercard", "amex",    "american express",
    "discover", "cvv",    "cvc",        "expir",   "信用卡",
    "银行卡",   "卡号",   "カード",     "tarjeta", "carte",
    "karte",    "cartão", "карт",       "카드",    "carta di credito"};
// Separators after a keyword (ASCII words need a word boundary after them).
inline constexpr std::string_view separators[] = {
    ":",      "=",    "：",     "->",   "=>",     "—",    "–",      "is",     "was",
    "to",     "ist",  "lautet", "es",   "est",    "é",    "è",      "är",     "是",
    "为",     "為",   "は",     "が",   "는",     "은",   "改成了", "改为了", "换成了",
    "设成了", "改成", "改为",   "设为", "设置为", "換成", "换成",   "设成"};
// Words between a keyword and its separator: "password for the bank is", "contraseña del wifi es".
inline constexpr std::string_view prepositions[] = {"for", "of",  "on",  "at", "de",    "del",
                                                    "du",  "da",  "do",  "di", "della", "per",
                                                    "für", "von", "van", "от", "для"};
inline constexpr std::string_view placeholders[] = {
    "password",      "passwd",     "pass",      "pwd",     "secret", "n/a",
    "none",          "null",       "nil",       "tbd",     "todo",   "hidden",
    "redacted",      "unknown",    "changeme",  "example", "xxxxxx", "yourpassword",
    "your_password", "mypassword", "undefined", "empty",   "true",   "false"};

// Strips trailing punctuation that ends a sentence or closes a bracket. '!', '?', '#', '*' stay:
// they are often part of a password, and a wrongly kept byte is only masked.
inline std::string_view trim_value(std::string_view v) noexcept {
  while (!v.empty()) {
    const char c = v.back();
    if (c == '.' || c == ',' || c == ';' || c == ':' || c == ')' || c == '"' || c == '\'' ||
        c == '`' || c == ']' || c == '}' || c == '>')
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
  const std::string low = lower_copy(v);
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
    else if (is_digit(c))
      dig = true;
    else
      sym = true;
  }
  if (!has_letter(v)) return dig && !sym && digits_ok;
  return dig || sym || (lo && up_inner);
}

// Matches a separator at i (after spaces); returns the position after it, or npos.
inline std::size_t match_separator(std::string_view s, std::size_t i) noexcept {
  i = skip_spaces(s, i);
  for (auto sep : separators) {
    if (!starts_with_ci(s, i, sep)) continue;
    const std::size_t j = i + sep.size();
    const bool word = is_alnum(static_cast<unsigned char>(sep.front()));
    if (word && j < s.size() && is_alnum(at(s, j))) continue;
    std::size_t k = skip_spaces(s, j);
    if (k < s.size() && s[k] == ':' && word) k = skip_spaces(s, k + 1);  // "is:"
    return k;
  }
  return std::string_view::npos;
}

// After a keyword: an optional "for/of/de/... + up to 3 words" phrase, then a separator.
inline std::size_t after_keyword(std::string_view s, std::size_t i) noexcept {
  if (auto j = match_separator(s, i); j != std::string_view::npos) return j;
  std::size_t k = skip_spaces(s, i);
  bool prep = false;
  for (std::string_view p : prepositions)
    if (starts_with_ci(s, k, p) && k + p.size() < s.size() && s[k + p.size()] == ' ') {
      prep = true;
      k += p.size();
      break;
    }
  if (!prep) return std::string_view::npos;
  for (int w = 0; w < 3; ++w) {
    k = skip_spaces(s, k);
    const std::size_t start = k;
    while (k < s.size() && (is_alnum(at(s, k)) || s[k] == '-' || at(s, k) >= 0x80)) ++k;
    if (k == start || k - start > 30) return std::string_view::npos;
    if (auto j = match_separator(s, k); j != std::string_view::npos) return j;
  }
  return std::string_view::npos;
}

// The value at i: an optional opening quote, then a run of the alphabet, trailing punctuation
// stripped. A quoted value runs to its closing quote (“”, 「」 and ‘’ too) when that comes on
// the same line within 128 bytes, spaces included when `spaces` ("correct horse battery").
// Returns [begin, end).
inline std::pair<std::size_t, std::size_t> value_at(std::string_view s, std::size_t i,
                                                    bool (*alphabet)(unsigned char),
                                                    bool spaces = false) noexcept {
  constexpr std::pair<std::string_view, std::string_view> quotes[] = {
      {"\"", "\""}, {"'", "'"}, {"`", "`"}, {"“", "”"},
      {"「", "」"}, {"‘", "’"}, {"(", ")"}, {"[", "]"}};
  for (const auto& [open, close] : quotes) {
    if (s.substr(i, open.size()) != open) continue;
    i += open.size();
    std::size_t j = i;
    while (j < s.size() && j < i + 128 && s.substr(j, close.size()) != close &&
           (alphabet(at(s, j)) || (spaces && at(s, j) == ' ')))
      ++j;
    if (j > i && s.substr(j, close.size()) == close && s[j - 1] != ' ')
      return {i, j};  // the quoted value, as it is
    break;
  }
  std::size_t j = i;
  while (j < s.size() && alphabet(at(s, j))) ++j;
  const auto v = trim_value(s.substr(i, j - i));
  return {i, i + v.size()};
}

// Keyword positions: `kw` (lower case) found in `low` (s with ASCII lower-cased), with no ASCII
// letter or digit right before (an ASCII keyword also none right after); CJK keywords match
// anywhere. Calls f(end of keyword).
template <class F>
void for_each_keyword(std::string_view s, std::string_view low, std::string_view kw, F&& f) {
  const bool ascii = static_cast<unsigned char>(kw.front()) < 0x80;
  const bool ascii_end = static_cast<unsigned char>(kw.back()) < 0x80;
  for (std::size_t i = low.find(kw); i != std::string_view::npos; i = low.find(kw, i + 1)) {
    if (ascii && i > 0 && is_alnum(at(s, i - 1))) continue;
    const std::size_t j = i + kw.size();
    if (ascii && ascii_end && j < s.size() && is_alnum(at(s, j))) continue;
    f(j);
  }
}

}  // namespace detail::secrets
}  // namespace memhealth
