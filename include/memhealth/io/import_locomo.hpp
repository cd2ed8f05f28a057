#pragma once
/// @file import_locomo.hpp
/// Importer for the LoCoMo conversations (Maharana et al., "Evaluating Very Long-Term
/// Conversational Memory of LLM Agents", ACL 2024; github.com/snap-research/locomo): each
/// LLM-extracted session observation becomes one `memory_record`.
///
/// ## Mapping
/// Input: one JSON object per conversation (`<sample>.json`, e.g. `26.json`). For every key
/// `session_<n>_observation` (an object speaker -> list of `[fact_text, evidence_dia_id]`), every
/// entry becomes one record:
/// | record field | value |
/// |---|---|
/// | id | `locomo-<sample>-s<n>-<speaker>-<k>`, k = 1-based position in that speaker's list |
/// | content | fact_text |
/// | scope | `conv:<sample>/speaker:<speaker>` (one scope per person, under the conversation) |
/// | created_at, updated_at | `session_<n>_date_time` ("1:56 pm on 8 May, 2023"), **taken as UTC**
/// (the data set gives no zone) | | source, kind, status | "model_extracted", "fact", "active" | |
/// metadata "evidence" | the dia id as a string ("D3:1"), or a `raw_json` array when several
/// (`["D15:3","D15:5"]`) | | metadata "session", "conversation", "speaker" | n (integer), sample
/// (string), speaker (string) |
/// `<sample>` is the file stem; the speaker name is used verbatim. Records come in session order
/// (numeric n), then speaker order of the JSON object, then list order.
///
/// ## Quirks of the real files, reported as `load_issue`s (never fatal)
/// - evidence given as a list (kept as a list), as one string joining several ids with `,`/`;`
///   or spaces (split into a list), empty, null or missing (no "evidence" key);
/// - an entry that is not a `[text, evidence]` pair: a bare string is kept as the content, an
///   entry whose text is not a string is skipped (`record_kept = false`);
/// - a session with a date but no observations (26.json has 16, with no turns either): one issue
///   per session, field `session_<n>_observation` (no record is involved, `record_kept = true`);
/// - a date that does not parse, or an observation session without a date: the records are
///   kept with no `created_at`/`updated_at` (the structural check then reports them).
/// Input that is not a JSON object, or an object with none of the keys above (speaker_a,
/// speaker_b, session_<n>...), throws: it is another format (the message says which it looks like).

#include <simdjson.h>

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/io/import_sniff.hpp"
#include "memhealth/io/load_issue.hpp"
#include "memhealth/io/read_file.hpp"
#include "memhealth/record/memory_record.hpp"
#include "memhealth/record/time.hpp"

namespace memhealth {

namespace detail {

inline std::string locomo_json_string(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      static constexpr char hex[] = "0123456789abcdef";
      out += "\\u00";
      out += hex[u >> 4];
      out += hex[u & 0xf];
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

/// Parses "h:mm am on D Month, YYYY" (LoCoMo's session dates) as UTC.
inline std::optional<timestamp> parse_locomo_date(std::string_view s) noexcept {
  using namespace std::chrono;
  std::size_t p = 0;
  auto skip_ws = [&] {
    while (p < s.size() && (s[p] == ' ' || s[p] == '\t')) ++p;
  };
  auto read_int = [&](int max_digits, int& v) {
    const std::size_t b = p;
    v = 0;
    while (p < s.size() && p - b < static_cast<std::size_t>(max_digits) && s[p] >= '0' &&
           s[p] <= '9')
      v = v * 10 + (s[p++] - '0');
    return p > b;
  };
  auto read_word = [&] {
    const std::size_t b = p;
    while (p < s.size() && std::isalpha(static_cast<unsigned char>(s[p]))) ++p;
    std::string w(s.substr(b, p - b));
    for (auto& c : w) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return w;
  };
  int h = 0, mi = 0, d = 0, y = 0;
  skip_ws();
  if (!read_int(2, h) || p >= s.size() || s[p] != ':') return std::nullopt;
  ++p;
  if (!read_int(2, mi)) return std::nullopt;
  skip_ws();
  const std::string ampm = read_word();
  if (ampm != "am" && ampm != "pm") return std::nullopt;
  if (h < 1 || h > 12 || mi > 59) return std::nullopt;
  h = (h % 12) + (ampm == "pm" ? 12 : 0);
  skip_ws();
  if (read_word() != "on") return std::nullopt;
  skip_ws();
  if (!read_int(2, d)) return std::nullopt;
  skip_ws();
  const std::string mon = read_word();
  static constexpr std::string_view months[] = {"january",   "february", "march",    "april",
                                                "may",       "june",     "july",     "august",
                                                "september", "october",  "november", "december"};
  unsigned m = 0;
  for (unsigned i = 0; i < 12; ++i)
    if (mon == months[i] || (mon.size() == 3 && months[i].substr(0, 3) == mon)) m = i + 1;
  if (m == 0) return std::nullopt;
  if (p < s.size() && s[p] == ',') ++p;
  skip_ws();
  const std::size_t yb = p;
  if (!read_int(4, y) || p - yb != 4) return std::nullopt;
  skip_ws();
  if (p != s.size()) return std::nullopt;
  const year_month_day ymd{year{y}, month{m}, day{static_cast<unsigned>(d)}};
  if (!ymd.ok()) return std::nullopt;
  return timestamp{sys_days{ymd} + hours{h} + minutes{mi}, 0};
}

/// Matches "session_<n>" + suffix exactly; returns n or -1.
inline long locomo_session_number(std::string_view key, std::string_view suffix) noexcept {
  constexpr std::string_view prefix = "session_";
  if (key.size() <= prefix.size() + suffix.size() || key.substr(0, prefix.size()) != prefix ||
      key.substr(key.size() - suffix.size()) != suffix)
    return -1;
  const auto digits = key.substr(prefix.size(), key.size() - prefix.size() - suffix.size());
  if (digits.empty() || digits.size() > 6) return -1;
  long n = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') return -1;
    n = n * 10 + (c - '0');
  }
  return n;
}

struct locomo_session {
  std::optional<std::string> date_text;
  bool has_turns = false;
  std::optional<simdjson::dom::element> observation;
};

}  // namespace detail

/// Imports one LoCoMo conversation given as JSON text.
/// @param json the whole file's text (UTF-8).
/// @param sample the conversation id used in ids, scopes and metadata (the file stem, e.g. "26").
/// @param file_name name put into each `load_issue::file` (may be empty).
/// @return the records (see the file comment for the mapping) and the issues met;
///         `lines_read` = observation entries seen.
/// @throws memhealth::error(parse) when the text is not JSON, its top level is not an object, or
///         the object has none of LoCoMo's keys (speaker_a, speaker_b, session_<n>...): the
///         message names the format it looks like (`sniff_format`).
/// @complexity O(size of the input).
inline basic_load_result<memory_record> import_locomo_text(std::string_view json,
                                                           std::string_view sample,
                                                           std::string_view file_name = {}) {
  namespace dom = simdjson::dom;
  basic_load_result<memory_record> result;
  const std::string file(file_name);
  auto issue = [&](std::string field, std::string reason, bool kept) {
    result.issues.push_back(load_issue{file, 0, std::move(field), std::move(reason), kept});
  };

  dom::parser parser;
  const simdjson::padded_string padded(json);
  dom::element doc;
  if (auto err = parser.parse(padded).get(doc); err)
    throw error(error_code::parse,
                "LoCoMo input " + file + " is not JSON: " + simdjson::error_message(err) +
                    looks_like_note(json, file_format::locomo) + "; nothing imported");
  dom::object top;
  if (doc.get_object().get(top) != simdjson::SUCCESS)
    throw error(error_code::parse, "LoCoMo input " + file + " is not a JSON object" +
                                       looks_like_note(json, file_format::locomo) +
                                       "; nothing imported");
  {  // the identifying keys: without any of them it is another format, not an empty conversation
    bool identified = false;
    for (auto field : top) identified = identified || detail::locomo_key(field.key);
    if (!identified)
      throw error(error_code::parse,
                  "LoCoMo input " + file +
                      " is not a LoCoMo conversation: no speaker_a, speaker_b or session_<n> key" +
                      looks_like_note(json, file_format::locomo) + "; nothing imported");
  }

  std::map<long, detail::locomo_session> sessions;
  std::string speaker_a, speaker_b;
  for (auto field : top) {
    const std::string_view key = field.key;
    if (key == "speaker_a" || key == "speaker_b") {
      std::string_view v;
      if (field.value.get_string().get(v) == simdjson::SUCCESS)
        (key == "speaker_a" ? speaker_a : speaker_b) = v;
    } else if (long n = detail::locomo_session_number(key, "_date_time"); n >= 0) {
      std::string_view v;
      if (field.value.get_string().get(v) == simdjson::SUCCESS)
        sessions[n].date_text = std::string(v);
      else
        issue(std::string(key), "session date is not a string: " + simdjson::minify(field.value),
              true);
    } else if (long m = detail::locomo_session_number(key, "_observation"); m >= 0) {
      sessions[m].observation = field.value;
    } else if (long t = detail::locomo_session_number(key, ""); t >= 0) {
      dom::array turns;
      sessions[t].has_turns =
          field.value.get_array().get(turns) == simdjson::SUCCESS && turns.size() > 0;
    }
  }

  const std::string sample_s(sample);
  for (auto& [n, s] : sessions) {
    const std::string obs_key = "session_" + std::to_string(n) + "_observation";
    if (!s.observation) {
      if (s.date_text)
        issue(obs_key,
              "session " + std::to_string(n) + " has a date (\"" + *s.date_text +
                  "\") but no observations" + (s.has_turns ? "" : " and no turns"),
              true);
      else if (s.has_turns)
        issue(obs_key, "session " + std::to_string(n) + " has turns but no observations", true);
      continue;
    }
    std::optional<timestamp> when;
    const std::string date_key = "session_" + std::to_string(n) + "_date_time";
    if (!s.date_text) {
      issue(date_key,
            "session " + std::to_string(n) +
                " has observations but no date; records kept without timestamps",
            true);
    } else if (when = detail::parse_locomo_date(*s.date_text); !when) {
      issue(
          date_key,
          "date \"" + *s.date_text +
              "\" does not parse as \"h:mm am on D Month, YYYY\"; records kept without timestamps",
          true);
    }
    dom::object per_speaker;
    if (s.observation->get_object().get(per_speaker) != simdjson::SUCCESS) {
      issue(obs_key, "observations are not an object speaker -> list; session skipped", false);
      continue;
    }
    for (auto sp : per_speaker) {
      const std::string speaker(sp.key);
      const std::string field_name = obs_key + "." + speaker;
      if (!speaker_a.empty() && speaker != speaker_a && speaker != speaker_b)
        issue(field_name, "speaker \"" + speaker + "\" is neither speaker_a nor speaker_b", true);
      dom::array entries;
      if (sp.value.get_array().get(entries) != simdjson::SUCCESS) {
        issue(field_name, "observations of a speaker are not a list; skipped", false);
        continue;
      }
      std::size_t k = 0;
      for (dom::element entry : entries) {
        ++k;
        ++result.lines_read;
        const std::string where = field_name + "[" + std::to_string(k - 1) + "]";
        std::string_view text;
        std::optional<dom::element> evidence;
        std::size_t pair_size = 0;  // 0 also for a bare string
        if (dom::array pair; entry.get_array().get(pair) == simdjson::SUCCESS) {
          pair_size = pair.size();
          if (pair.size() == 0 || pair.at(0).get_string().get(text) != simdjson::SUCCESS) {
            issue(where,
                  "entry is not a [text, evidence] pair (text missing or not a string): " +
                      simdjson::minify(entry) + "; skipped",
                  false);
            continue;
          }
          if (pair.size() >= 2) evidence = pair.at(1).value_unsafe();
          if (pair.size() > 2)
            issue(where,
                  "entry has " + std::to_string(pair.size()) + " elements, extra ones ignored",
                  true);
        } else if (entry.get_string().get(text) == simdjson::SUCCESS) {
          issue(where, "entry is a bare string, not a [text, evidence] pair; kept without evidence",
                true);
        } else {
          issue(where,
                "entry is not a [text, evidence] pair: " + simdjson::minify(entry) + "; skipped",
                false);
          continue;
        }

        memory_record r;
        r.id = "locomo-" + sample_s + "-s" + std::to_string(n) + "-" + speaker + "-" +
               std::to_string(k);
        r.content = std::string(text);
        r.scope = "conv:" + sample_s + "/speaker:" + speaker;
        r.created_at = when;
        r.updated_at = when;
        r.source = std::string(to_string(record_source::model_extracted));
        r.kind = std::string(kinds::fact);
        r.status = std::string(to_string(record_status::active));
        if (text.empty()) issue(where, "empty fact text; kept", true);

        // evidence: string, list of strings, or a string joining several ids
        if (!evidence) {
          if (pair_size == 1) issue(where, "evidence missing; kept without \"evidence\"", true);
        } else if (std::string_view ev; evidence->get_string().get(ev) == simdjson::SUCCESS) {
          std::vector<std::string> ids;
          std::string cur;
          for (const char c : ev) {
            if (c == ',' || c == ';' || c == ' ' || c == '\t') {
              if (!cur.empty()) ids.push_back(std::move(cur));
              cur.clear();
            } else {
              cur += c;
            }
          }
          if (!cur.empty()) ids.push_back(std::move(cur));
          if (ids.empty()) {
            issue(where, "evidence is an empty string; kept without \"evidence\"", true);
          } else if (ids.size() == 1) {
            r.metadata.emplace("evidence", ids.front());
          } else {
            std::string arr = "[";
            for (std::size_t i = 0; i < ids.size(); ++i)
              arr += (i ? "," : "") + detail::locomo_json_string(ids[i]);
            arr += "]";
            issue(where,
                  "evidence \"" + std::string(ev) +
                      "\" joins several ids in one string; split into a list",
                  true);
            r.metadata.emplace("evidence", raw_json{std::move(arr)});
          }
        } else if (dom::array list; evidence->get_array().get(list) == simdjson::SUCCESS) {
          bool all_strings = true;
          for (dom::element x : list) all_strings = all_strings && x.is_string();
          if (list.size() == 0) {
            issue(where, "evidence is an empty list; kept without \"evidence\"", true);
          } else if (list.size() == 1 && all_strings) {
            r.metadata.emplace("evidence", std::string(list.at(0).get_string().value_unsafe()));
            issue(where, "evidence given as a one-element list; stored as a string", true);
          } else {
            issue(where,
                  all_strings
                      ? "evidence given as a list of " + std::to_string(list.size()) + " ids"
                      : "evidence list holds non-string elements; kept verbatim",
                  true);
            r.metadata.emplace("evidence", raw_json{simdjson::minify(*evidence)});
          }
        } else if (evidence->is_null()) {
          issue(where, "evidence is null; kept without \"evidence\"", true);
        } else {
          issue(where,
                "evidence is neither a string nor a list: " + simdjson::minify(*evidence) +
                    "; kept verbatim",
                true);
          r.metadata.emplace("evidence", raw_json{simdjson::minify(*evidence)});
        }
        r.metadata.emplace("session", static_cast<std::int64_t>(n));
        r.metadata.emplace("conversation", sample_s);
        r.metadata.emplace("speaker", speaker);
        result.records.push_back(std::move(r));
      }
    }
  }
  return result;
}

/// Imports one LoCoMo conversation file (`/path/26.json`); the sample id is the file stem ("26").
/// See `import_locomo_text` for the mapping and the issues.
/// @throws memhealth::error(io) when the file cannot be read; memhealth::error(parse) when it is
///         not a JSON object.
inline basic_load_result<memory_record> import_locomo(const std::filesystem::path& file) {
  const std::string text = detail::read_whole_file(file);
  return import_locomo_text(text, file.stem().string(), file.string());
}

}  // namespace memhealth
