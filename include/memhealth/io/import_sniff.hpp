#pragma once
/// @file import_sniff.hpp
/// What a file looks like, for the importers' errors: an importer given a file of another format
/// refuses it and names the format it saw ("looks like LoCoMo", "looks like a memhealth JSONL
/// store") instead of importing records with empty ids and content.
///
/// `sniff_format(text)` decides from the identifying fields only:
/// | format | recognised by |
/// |---|---|
/// | sqlite | the 16-byte header "SQLite format 3\0" |
/// | locomo | a JSON object with `speaker_a`, `speaker_b` or a `session_<n>...` key; or an array of
/// objects with `conversation` / `sample_id` (locomo10.json) | | mem0 | an object `{"results":
/// [...]}`, an array of objects with `memory`, or JSONL whose first object has `memory` | |
/// prefeval | an array of objects with `preference` | | memhealth_jsonl | JSONL (or one object)
/// whose first object has `id` and `content` | | empty | nothing but white space (and a byte order
/// mark) | | json | other JSON | | text | not JSON at all |

#include <simdjson.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace memhealth {

/// Formats `sniff_format` tells apart.
enum class file_format { empty, sqlite, memhealth_jsonl, mem0, locomo, prefeval, json, text };

/// How an error names a format: "LoCoMo", "a mem0 export", "a memhealth JSONL store", ...
constexpr std::string_view describe(file_format f) noexcept {
  switch (f) {
    case file_format::empty:
      return "an empty file";
    case file_format::sqlite:
      return "an SQLite database";
    case file_format::memhealth_jsonl:
      return "a memhealth JSONL store";
    case file_format::mem0:
      return "a mem0 export";
    case file_format::locomo:
      return "LoCoMo";
    case file_format::prefeval:
      return "PrefEval";
    case file_format::json:
      return "JSON of another format";
    case file_format::text:
      return "text that is not JSON";
  }
  return "an unknown format";
}

namespace detail {

inline bool locomo_key(std::string_view k) noexcept {
  if (k == "speaker_a" || k == "speaker_b") return true;
  if (!k.starts_with("session_") || k.size() == 8) return false;
  return k[8] >= '0' && k[8] <= '9';
}

// The format of one JSON object (a JSONL line or an array element).
inline file_format sniff_object(simdjson::dom::object obj, bool in_array) {
  bool id = false, content = false, memory = false, preference = false, locomo = false,
       conversation = false;
  for (auto f : obj) {
    const std::string_view k = f.key;
    id = id || k == "id";
    content = content || k == "content";
    memory = memory || k == "memory";
    preference = preference || k == "preference";
    locomo = locomo || locomo_key(k);
    conversation = conversation || k == "conversation" || k == "sample_id";
  }
  if (memory) return file_format::mem0;
  if (preference && in_array) return file_format::prefeval;
  if (locomo || conversation) return file_format::locomo;
  if (id && content) return file_format::memhealth_jsonl;
  return file_format::json;
}

}  // namespace detail

/// The format `text` looks like (see the file comment). Never throws for any input.
/// @complexity O(size of the text) (one JSON parse, then at most the first 100 lines for JSONL).
inline file_format sniff_format(std::string_view text) {
  namespace dom = simdjson::dom;
  if (text.size() >= 16 && text.substr(0, 16) == std::string_view("SQLite format 3\0", 16))
    return file_format::sqlite;
  std::size_t first = text.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;
  while (first < text.size() &&
         (text[first] == ' ' || text[first] == '\t' || text[first] == '\n' || text[first] == '\r'))
    ++first;
  if (first == text.size()) return file_format::empty;
  text.remove_prefix(first);
  dom::parser parser;
  dom::element doc;
  const simdjson::padded_string whole(text);
  if (parser.parse(whole).get(doc) == simdjson::SUCCESS) {
    if (dom::array arr; doc.get_array().get(arr) == simdjson::SUCCESS) {
      for (dom::element e : arr) {
        dom::object o;
        if (e.get_object().get(o) != simdjson::SUCCESS) continue;
        return detail::sniff_object(o, true);
      }
      return file_format::json;
    }
    dom::object obj;
    if (doc.get_object().get(obj) != simdjson::SUCCESS) return file_format::json;
    if (dom::array results; obj["results"].get_array().get(results) == simdjson::SUCCESS)
      return file_format::mem0;
    return detail::sniff_object(obj, false);
  }
  // JSONL: the first line that is a JSON object decides
  std::size_t pos = 0, lines = 0;
  while (pos < text.size() && lines++ < 100) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
      line.remove_suffix(1);
    if (line.empty()) continue;
    const simdjson::padded_string padded(line);
    dom::object o;
    if (parser.parse(padded).get_object().get(o) == simdjson::SUCCESS)
      return detail::sniff_object(o, false);
  }
  return file_format::text;
}

/// " (it looks like LoCoMo)" for the format `text` looks like, when that is not `expected`; ""
/// when it looks like nothing in particular or like `expected`.
inline std::string looks_like_note(std::string_view text, file_format expected) {
  const file_format f = sniff_format(text);
  if (f == expected || f == file_format::json) return {};
  return std::string(" (it looks like ") + std::string(describe(f)) + ")";
}

}  // namespace memhealth
