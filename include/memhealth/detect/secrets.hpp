#pragma once
/// @file secrets.hpp
/// Detector "secrets": credentials stored as memories (SPEC section 6, "Hygiene": a secret is a
/// critical finding and is masked in every output).
///
/// ## Rules
/// The shapes follow gitleaks' rule set (github.com/gitleaks/gitleaks, config/gitleaks.toml, MIT;
/// its rule ids in brackets): fixed-prefix tokens, JWTs, PEM private keys, and keyword
/// assignments checked by Shannon entropy as gitleaks' `generic-api-key` does. The tables are in
/// secret_rules.hpp, the other matchers in secret_matchers.hpp; every rule is a hand-written
/// scanner over bytes (no regular-expression engine: linear time, no backtracking on hostile
/// content). | rule | shape |
/// |---|---|
/// | aws_access_key_id | AKIA / ASIA / ABIA / ACCA + 16 of [A-Z0-9] [aws-access-token] |
/// | github_token, github_fine_grained_pat | ghp_ / gho_ / ghu_ / ghs_ / ghr_ + 36; github_pat_ +
///   60..100 [github-pat, github-oauth, github-app-token, github-refresh-token,
///   github-fine-grained-pat] |
/// | gitlab_token | glpat- gldt- glrt- glptt- glft- glsoat- glcbt- glimt- glagent- gloas-
///   GR1348941 + 20.. [gitlab-pat, gitlab-deploy-token, gitlab-runner-authentication-token, ...] |
/// | anthropic_api_key, openai_api_key | sk-ant- + 32..; sk-proj- / sk-svcacct- / sk-admin- +
///   20.., sk- + 32.. [anthropic-api-key, openai-api-key] |
/// | slack_token, slack_webhook_url | xoxb- xoxp- xoxa- xoxs- xoxe- xoxr- xapp- + 20..;
///   hooks.slack.com/services|workflows|triggers/ + 40.. [slack-*-token, slack-webhook-url] |
/// | stripe_key | sk_/rk_ + live_/test_ + 20.. [stripe-access-token] |
/// | google_api_key, gcp_oauth_client_secret | AIza + 35; GOCSPX- + 28 [gcp-api-key] |
/// | discord_webhook_url, discord_bot_token | discord(app).com/api/webhooks/ID/TOKEN; [MNO] +
///   23..27 "." 6 "." 27..38 [discord-api-token, discord-client-secret] |
/// | twilio_api_key, twilio_auth_token | SK + 32 hex; 32 lower-case hex in a text with an AC +
///   32 hex account SID [twilio-api-key] |
/// | npm_token, pypi_token | npm_ + 36; pypi-AgEIcHlwaS5vcmc + 50.. [npm-access-token,
///   pypi-upload-token] |
/// | huggingface_token | hf_ / api_org_ + 34..40 letters and digits [huggingface-access-token,
///   huggingface-organization-api-token] |
/// | azure_connection_string | the value of AccountKey= / SharedAccessKey= (base64, 40..) |
/// | telegram_bot_token | 8..10 digits ":AA" + 33 [telegram-bot-api-token] |
/// | shopify_token | shpat_ shpca_ shppa_ shpss_ + 32 hex [shopify-*] |
/// | mapbox_secret_token, linear_api_key, sendgrid_api_key | sk.eyJ + 60..; lin_api_ + 40;
///   SG. + 60..80 [mapbox-api-token, linear-api-key, sendgrid-api-token] |
/// | fcm_server_key | AAAA + 7 ":APA91b" + 100.. [gcp / firebase cloud messaging] |
/// | digitalocean_token, postman_api_key, atlassian_api_token, heroku_api_key | dop_v1_ doo_v1_
///   dor_v1_ + 64 hex; PMAK- + 55..64; ATATT3 + 100..; HRKU- + 40.. [digitalocean-*,
///   postman-api-token, atlassian-api-token, heroku-api-key-v2] |
/// | mailgun_api_key, square_token, databricks_token | key- + 32 hex; sq0atp- / sq0csp- / EAAA;
///   dapi + 32 hex [mailgun-private-api-token, square-access-token, square-secret,
///   databricks-api-token] |
/// | grafana_token, doppler_token, newrelic_key, sentry_token, age_secret_key | glc_ / glsa_;
///   dp.pt. dp.st. dp.ct. dp.sa.; NRAK- / NRII-; sntrys_ / sntryu_; AGE-SECRET-KEY-1
///   [grafana-*, doppler-api-token, new-relic-*, sentry-*, age-secret-key] |
/// | google_oauth_token, dropbox_token, notion_token, docker_pat | ya29. + 30..; sl. + 130..;
///   ntn_ / secret_ + 43; dckr_pat_ + 27.. [gcp / dropbox-short-lived-api-token, notion-api-token]
///   |
/// | groq_api_key, replicate_api_token, perplexity_api_key, xai_api_key | gsk_ + 48..60; r8_ +
///   37..40; pplx- + 40..60; xai- + 70..90 [perplexity-api-key, xai / groq (gitleaks has some)] |
/// | jwt | ey + 17.. "." ey + 17.. [ "." signature ] (base64url) [jwt] |
/// | private_key | "-----BEGIN <words> PRIVATE KEY-----" with at least 32 body bytes
///   [private-key] |
/// | connection_string | scheme://user:password@host or scheme://:password@host (the password is
///   the secret; also a Sentry DSN with a secret) |
/// | basic_auth | "Basic " + base64 that decodes to printable "user:password" |
/// | cli_credential | mysql/mariadb -pPASS, --password X, "-p X" after docker/podman/helm login,
///   sshpass or mongo/mongosh, redis-cli -a X, curl/wget -u/--user user:PASS (the password only;
///   a value after a space must be password-like) |
/// | password | a password keyword (password, passwd, pwd, passcode, passphrase, PGPASSWORD, 密码,
///   口令, パスワード, Passwort, Kennwort, contraseña, clave, mot de passe, senha, пароль,
///   비밀번호, wachtwoord, şifre, hasło, lösenord, heslo, salasana, passord, ...), a separator (is,
///   ist, lautet, es, est, é, :, =, 是, 为, は, 는, ...; "for/de/du/für + 3 words" may come
///   between) and a password-like value (all digits: 4.., not "12 characters"; right after "=",
///   as in DB_PASSWORD=..., any value that is no placeholder); with no separator the value needs
///   8.. bytes, letters, digits and a capital or symbol past its first byte |
/// | generic_api_key | a token keyword (api key, access token, app key, admin key, access key,
///   subscription key, private key, secret, bearer, 密钥, ...), a separator (or none, then 20..
///   bytes) and a value of 16.. of [A-Za-z0-9_-+/=.] with letters, digits and entropy >= 3.5
///   (>= 3.0 for an all-hex value of 32..: random hex tops out at 4) [generic-api-key] |
/// | access_code | door/gate/garage/alarm/disarm/safe/lock/keypad/entry/access/unlock code,
///   combination, PIN, passcode, lockbox, padlock, 暗証番号, or "code" / "código" / "codice" /
///   "kod" with a door/gate/safe/... within 40 bytes, then 3..12 digits ("1-9-6-4", "#5502",
///   "32-14-27"), after a separator or first in the clause after "is"/":"; not a date, not "4
///   digits" |
/// | backup_codes | after "backup/recovery/scratch codes": two or more codes of 8..16 bytes with a
///   digit (not a word like "1Password", not a date), or "1234 5678" pairs |
/// | totp_secret | base32 of 16.. bytes after TOTP / 2FA secret / authenticator seed / setup key |
/// | seed_phrase | 12/15/18/21/24 lower-case words of 3..8 letters after seed phrase / recovery
///   phrase / mnemonic (no BIP-39 word list ships with Debian: the shape only) |
/// | payment_card | 13..19 digits with the Luhn check in a text naming a card (card, Visa, CVV,
///   exp, 信用卡, ...), and a CVV's digits; a bare number is personal data and not reported |
///
/// A prefixed token must stand alone (no letter, digit or '_' right before it; its body ends at
/// the first byte outside its alphabet) and its body must have Shannon entropy >= 3.0 bits per
/// byte, so "AKIAAAAAAAAAAAAAAAAA" or "sk-learn-..." are not secrets. A password value is ASCII,
/// 6..128 bytes, not a placeholder ("****", "<password>", "N/A", "${PASSWORD}") and
/// password-like: all digits, or letters with digits or symbols, or mixed case beyond a capital
/// initial. So "forgot her password", "the password policy requires 12 characters", "uses
/// 1Password", "密码忘了" and a commit hash or UUID without a keyword are not matched.
///
/// Allowlist (gitleaks' stopwords and AWS's documented keys): a value holding "example"
/// (`secret_rules::allow_in_value`), or a value with "example", "sample", "dummy", "placeholder",
/// "fake", "fictional", "redacted", "mock" or "bogus" standing as a word in the 32 bytes before it
/// in its clause (`secret_rules::allow_words`), is not reported. Measured on
/// tests/data/hygiene/secrets.tsv (see detect_structural_test.cpp).
///
/// Speed: a prefix or keyword is searched only when its first byte pairs occur in the text
/// (`pair_filter`): about 3.5 us per 59-byte record at -O2 on the labelled set (1.9 us with the
/// rules before the families from GitLab on were added; 12 us without the filter).
///
/// ## Masking
/// A secret is never printed in full: a finding's evidence holds the rule and `mask_secret` of the
/// value, and `mask_secrets` rewrites a text with every secret span masked (the audit report, the
/// review queue and merge notes use it). A value's span keeps a trailing '!', '?', '#' or '*'
/// (only '.', ',', ';', ':' and closing quotes or brackets are cut): when unsure, mask more. A
/// quoted password runs to its closing quote ("...", '...', “...”, 「...」), spaces included (a
/// passphrase; other keywords need a digit or symbol in a value with spaces).

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memhealth/detect/finding.hpp"
#include "memhealth/detect/secret_matchers.hpp"
#include "memhealth/record/traits.hpp"

namespace memhealth {

/// Every secret in `text`, sorted by position, overlapping matches merged into the first, the
/// allowlisted ones dropped. Never throws except std::bad_alloc.
/// @complexity O(|text| x number of keywords and prefixes).
inline std::vector<secret_match> find_secrets(std::string_view text,
                                              const secret_rules& rules = {}) {
  namespace ds = detail::secrets;
  std::vector<secret_match> out;
  const std::string_view s = text;
  auto add = [&](std::string_view rule, std::size_t b, std::size_t e) { ds::add(out, rule, b, e); };
  // fixed prefixes
  // an ASCII-lower-cased copy for the keywords, and its byte pairs: a prefix or keyword whose
  // first byte pairs are absent is not searched (most are absent from a short record)
  const std::string low = ds::lower_copy(s);
  const ds::pair_filter pairs(low);
  auto scan_prefix = [&](std::string_view rule, std::string_view prefix,
                         bool (*alphabet)(unsigned char), std::size_t min_len, std::size_t max_len,
                         bool needs_digit, bool value_only) {
    if (!pairs.may_hold(prefix)) return;
    for (std::size_t i = s.find(prefix); i != std::string_view::npos; i = s.find(prefix, i + 1)) {
      if (!ds::boundary_before(s, i)) continue;
      std::size_t j = i + prefix.size();
      while (j < s.size() && alphabet(static_cast<unsigned char>(s[j]))) ++j;
      const auto body = s.substr(i + prefix.size(), j - i - prefix.size());
      if (body.size() < min_len || (max_len && body.size() > max_len)) continue;
      if (needs_digit && !(ds::has_digit(body) && ds::has_letter(body))) continue;
      if (ds::entropy(body) < rules.min_entropy) continue;
      add(rule, value_only ? i + prefix.size() : i, j);
    }
  };
  for (const auto& row : ds::prefix_rows)
    if (rules.enabled(row.rule))
      scan_prefix(row.rule, row.prefix, row.alphabet, row.min_len, row.max_len, row.needs_digit,
                  row.value_only);
  for (const auto& x : rules.extra_prefixes)
    if (!x.prefix.empty() && rules.enabled(x.name))
      scan_prefix(x.name, x.prefix, ds::is_token, x.min_length, x.max_length, false, false);
  if (rules.enabled("discord_bot_token")) ds::scan_discord_bot(s, out);
  if (rules.enabled("telegram_bot_token")) ds::scan_telegram(s, out);
  if (rules.enabled("fcm_server_key")) ds::scan_fcm(s, out);
  if (rules.enabled("twilio_auth_token")) ds::scan_twilio_auth(s, out);

  // JWT: ey<17..>.ey<17..>[.<signature>]
  if (rules.enabled("jwt"))
    for (std::size_t i = s.find("ey"); i != std::string_view::npos; i = s.find("ey", i + 1)) {
      if (!ds::boundary_before(s, i)) continue;
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

  // scheme://user:password@host, scheme://:password@host
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
      if (at == std::string_view::npos || colon == std::string_view::npos) continue;
      if (at + 1 >= s.size() || !ds::is_alnum(static_cast<unsigned char>(s[at + 1]))) continue;
      const auto pw = s.substr(colon + 1, at - colon - 1);
      if (pw.size() < (colon == i + 3 ? 6u : 3u) || ds::is_placeholder(pw)) continue;
      add("connection_string", colon + 1, at);
    }

  // keyword assignments, found in an ASCII-lower-cased copy (one pass of memchr per keyword)
  if (rules.enabled("basic_auth")) ds::scan_basic_auth(s, low, out);
  if (rules.enabled("cli_credential"))
    for (std::string_view tool :
         {"mysql", "mariadb", "login", "sshpass", "curl", "wget", "--pass", "mongo", "redis-cli"})
      if (pairs.may_hold(tool) && low.find(tool) != std::string::npos) {
        ds::scan_cli(s, out);
        break;
      }
  auto scan_keyword = [&](std::string_view rule, std::string_view kw, bool password) {
    if (!pairs.may_hold(kw)) return;
    ds::for_each_keyword(s, low, kw, [&](std::size_t after) {
      const std::size_t v = ds::after_keyword(s, after);
      std::size_t vb = v;
      bool loose = false;  // no separator: the value must look like a secret on its own
      if (v == std::string_view::npos) {
        // "Bearer <token>", a quoted value, or "password Zk8pLm2q" / "api key 9f3c..."
        vb = ds::skip_spaces(s, after);
        const bool quoted = vb < s.size() && (s[vb] == '"' || s[vb] == '\'' || s[vb] == '`');
        if (vb == after && !quoted) return;
        loose = !quoted && kw != "bearer";
      }
      if (password) {
        const auto [b, e] = ds::value_at(s, vb, ds::printable_ascii, true);
        const auto val = s.substr(b, e - b);
        // a quoted value with spaces: a passphrase, or words with a digit or symbol
        if (val.find(' ') != std::string_view::npos && kw != "passphrase" &&
            !ds::any_of(val, [](unsigned char c) {
              return ds::is_digit(c) || (c != ' ' && !ds::is_alnum(c));
            }))
          return;
        const bool digits = ds::all_of(val, ds::is_digit);
        if (val.size() < (digits ? 4 : rules.min_password_length) || val.size() > 128) return;
        // "DB_PASSWORD=postgres", "--password=letmein": an assignment needs no password shape
        const bool assigned = ds::at(s, after) == '=';
        if (ds::is_placeholder(val) || (!assigned && !ds::password_like(val, true))) return;
        if (loose && (val.size() < 8 || !ds::has_digit(val) || !ds::has_letter(val) ||
                      !ds::any_of(val.substr(1), [](unsigned char c) {
                        return !ds::is_alnum(c) || (c >= 'A' && c <= 'Z');
                      })))
          return;  // "password Zk8#pLm2q", not "password reset2024"
        if (e < s.size() && static_cast<unsigned char>(s[e]) >= 0x80 && !ds::has_digit(val)) return;
        if (digits && ds::count_word_after(s, e)) return;  // "is 12 characters"
        add(rule, b, e);
      } else {
        const auto [b, e] = ds::value_at(s, vb, ds::is_generic);
        const auto val = s.substr(b, e - b);
        if (val.size() < (loose ? 20u : 16u) || val.size() > 512 || ds::is_placeholder(val)) return;
        if (!ds::has_digit(val) || !ds::has_letter(val)) return;
        const bool hex = val.size() >= 32 && ds::all_of(val, ds::is_hex);
        if (ds::entropy(val) < (hex ? rules.min_hex_entropy : rules.min_generic_entropy)) return;
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
  auto scan_words = [&](std::string_view rule, const auto& words, auto&& f) {
    if (!rules.enabled(rule)) return;
    for (std::string_view kw : words)
      if (pairs.may_hold(kw))
        ds::for_each_keyword(s, low, kw, [&](std::size_t after) { f(after, kw); });
  };
  auto code = [&](std::size_t after, std::string_view kw) {
    ds::scan_code(s, low, after, kw, out);
  };
  scan_words("access_code", ds::code_keywords, code);
  scan_words("access_code", rules.extra_code_keywords, code);
  scan_words("backup_codes", ds::backup_keywords,
             [&](std::size_t after, std::string_view kw) { ds::scan_backup(s, after, kw, out); });
  scan_words("totp_secret", ds::totp_keywords,
             [&](std::size_t after, std::string_view) { ds::scan_totp(s, after, out); });
  if (rules.enabled("totp_secret"))
    for (std::size_t i = low.find("otpauth://"); i != std::string_view::npos;
         i = low.find("otpauth://", i + 1))
      if (const auto q = low.find("secret=", i); q != std::string_view::npos && q < i + 200)
        ds::scan_totp(s, q + 7, out);
  scan_words("seed_phrase", ds::seed_keywords,
             [&](std::size_t after, std::string_view) { ds::scan_seed(low, after, out); });
  if (rules.enabled("payment_card")) ds::scan_card(s, low, pairs, out);

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
  std::erase_if(merged, [&](const secret_match& m) { return ds::allowed(s, low, m, rules); });
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

/// `url` as it may be shown in a message, a log or a state database: the user information
/// ("user:password@") becomes "***@" and a query string or fragment becomes "?***" (both may
/// hold credentials: `?api_key=...`). "http://bob:pw@h:9/v1?key=x" -> "http://***@h:9/v1?***".
/// Never throws (a string that is not a URL is returned with the same rules applied).
inline std::string url_for_messages(std::string_view url) {
  std::string out;
  const std::size_t scheme = url.find("://");
  const std::size_t authority = scheme == std::string_view::npos ? 0 : scheme + 3;
  const std::size_t rest = url.find_first_of("/?#", authority);
  const std::string_view host_part = url.substr(
      authority, rest == std::string_view::npos ? std::string_view::npos : rest - authority);
  out.append(url.substr(0, authority));
  if (const std::size_t at = host_part.rfind('@'); at != std::string_view::npos) {
    out += "***@";
    out.append(host_part.substr(at + 1));
  } else {
    out.append(host_part);
  }
  if (rest == std::string_view::npos) return out;
  const std::string_view tail = url.substr(rest);
  const std::size_t q = tail.find_first_of("?#");
  out.append(tail.substr(0, q));
  if (q != std::string_view::npos) out += "?***";
  return out;
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
