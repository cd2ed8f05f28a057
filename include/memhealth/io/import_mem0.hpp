#pragma once
/// @file import_mem0.hpp
/// Importer for memory exports of mem0 (github.com/mem0ai/mem0): the output of
/// `Memory.get_all()` / `search()` saved as JSON, or one memory per line.
///
/// ## Accepted layouts
/// 1. a JSON array of memories: `[{...}, {...}]`;
/// 2. an object `{"results": [...]}` (other top-level keys, e.g. "relations", are ignored and
///    reported once);
/// 3. JSONL: one memory object per line (blank lines skipped). A lone object is layout 3 with
///    one line.
/// Input starting with `[` that is not valid JSON throws (an array cannot be read in parts);
/// anything else that is not one JSON value is read as JSONL, line by line.
///
/// ## Mapping of one memory
/// | mem0 field | record field |
/// |---|---|
/// | id | id (a number is kept as its text, with an issue) |
/// | memory | content |
/// | hash | metadata "mem0_hash" |
/// | metadata (object) | metadata: string, bool, integer (int64), number (double), null; arrays and
/// objects as `raw_json` (minified) | | created_at, updated_at | ISO-8601 with offset, e.g.
/// "2024-07-20T08:21:31.123456-07:00" (instant in UTC, offset kept, fraction truncated to ms); null
/// = absent | | user_id, agent_id, run_id | scope "user:<u>/agent:<a>/run:<r>", only the parts
/// present, in that order | | anything else (score, actor_id, role, categories, ...) | `extra`, in
/// input order, minified | | a memhealth record field name other than the above (content, scope,
/// status, confidence, supersedes, ...) | `extra` as `mem0_<key>`, with an issue (under its own
/// name it would be dropped on writing or read back with memhealth's meaning) | source
/// "model_extracted", kind "fact", status "active" for every record.
///
/// ## Issues (never fatal, the import keeps going)
/// An entry that is not an object, or a JSONL line that is not JSON, is skipped
/// (`record_kept = false`). Kept with an issue: missing or non-string `id` / `memory`; a timestamp
/// that does not parse (its text is kept as an extra field; a value that is not a string as
/// `mem0_created_at` / `mem0_updated_at`); no user_id, agent_id or run_id (empty
/// scope, which the structural check reports as missing_scope); `metadata` that is not an object
/// (kept as an extra field); an integer beyond int64 (stored as a double); duplicate keys, in the
/// entry or in its metadata (the first wins; a later one is named in the issue with its value and
/// not stored: a JSON object holds one value per name, so it could not be written back); a
/// metadata key "mem0_hash" clashing with
/// `hash` (the hash is then kept as an extra field "hash").
/// `load_issue::line` is the 1-based line for JSONL and 0 for the array layouts, where
/// `load_issue::field` starts with the entry's index ("[3].created_at").

#include <simdjson.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
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
#include "memhealth/io/record_codec.hpp"
#include "memhealth/record/memory_record.hpp"
#include "memhealth/record/time.hpp"

namespace memhealth {

namespace detail {

/// A JSON value as a metadata value; sets `lossy` for an unsigned integer beyond int64.
inline metadata_value mem0_metadata_value(simdjson::dom::element v, bool& lossy) {
  using simdjson::dom::element_type;
  lossy = false;
  switch (v.type()) {
    case element_type::NULL_VALUE:
      return std::monostate{};
    case element_type::BOOL:
      return v.get_bool().value_unsafe();
    case element_type::INT64:
      return v.get_int64().value_unsafe();
    case element_type::UINT64:
      lossy = true;
      return static_cast<double>(v.get_uint64().value_unsafe());
    case element_type::DOUBLE:
      return v.get_double().value_unsafe();
    case element_type::STRING:
      return std::string(v.get_string().value_unsafe());
    case element_type::ARRAY:
    case element_type::OBJECT:
      return raw_json{simdjson::minify(v)};
  }
  return raw_json{simdjson::minify(v)};
}

struct mem0_importer {
  basic_load_result<memory_record>& result;
  std::string file;
  std::size_t with_memory = 0;  // entries that have a "memory" key: the field that makes it mem0

  void issue(std::size_t line, std::string field, std::string reason, bool kept) {
    result.issues.push_back(load_issue{file, line, std::move(field), std::move(reason), kept});
  }

  // where = "[3]." for array entries, "" for JSONL lines
  void entry(simdjson::dom::element e, std::size_t line, const std::string& where) {
    namespace dom = simdjson::dom;
    ++result.lines_read;
    dom::object obj;
    if (e.get_object().get(obj) != simdjson::SUCCESS) {
      const std::string text = simdjson::minify(e);
      issue(line, where.empty() ? std::string() : where.substr(0, where.size() - 1),
            "memory is not a JSON object: " + text.substr(0, 80) + "; skipped", false);
      return;
    }
    memory_record r;
    r.source = std::string(to_string(record_source::model_extracted));
    r.kind = std::string(kinds::fact);
    r.status = std::string(to_string(record_status::active));
    bool seen_id = false, seen_memory = false;
    std::optional<std::string> hash;
    std::optional<dom::element> hash_element;
    std::optional<std::string> user, agent, run;
    std::vector<std::string> seen_keys;

    // One extra field per name (a JSON object holds one value per name): a second is named in an
    // issue and not stored.
    auto keep_extra = [&](std::string_view key, dom::element v) {
      for (const auto& e : r.extra)
        if (e.name == key) {
          issue(line, where + std::string(key),
                "an extra field of this name is already kept; not stored: " +
                    simdjson::minify(v).substr(0, 80),
                true);
          return;
        }
      r.extra.push_back(extra_field{std::string(key), simdjson::minify(v)});
    };
    auto text_of = [&](std::string_view key, dom::element v, std::optional<std::string>& out) {
      if (v.is_null()) return;
      if (std::string_view s; v.get_string().get(s) == simdjson::SUCCESS) {
        if (!s.empty()) out = std::string(s);
        return;
      }
      if (v.is_number()) {
        out = simdjson::minify(v);
        issue(line, where + std::string(key), "is a number, used as text \"" + *out + "\"", true);
        return;
      }
      issue(line, where + std::string(key), "is neither a string nor null; kept as an extra field",
            true);
      keep_extra(key, v);
    };
    auto time_of = [&](std::string_view key, dom::element v, std::optional<timestamp>& out) {
      if (v.is_null()) return;
      std::string_view s;
      if (v.get_string().get(s) == simdjson::SUCCESS) {
        if (auto t = parse_timestamp(s)) {
          out = t;
          return;
        }
        issue(line, where + std::string(key),
              "\"" + std::string(s) + "\" is not an ISO-8601 date-time; kept as an extra field",
              true);
        keep_extra(key, v);  // memhealth's reader keeps the same text in extra, too
      } else {
        // Not under its own name: memhealth's reader would take a number as epoch milliseconds.
        issue(line, where + std::string(key),
              "is not a string; kept as the extra field \"mem0_" + std::string(key) + "\"", true);
        keep_extra("mem0_" + std::string(key), v);
      }
    };

    for (auto f : obj) {
      const std::string_view key = f.key;
      bool duplicate = false;
      for (const auto& k : seen_keys) duplicate = duplicate || k == key;
      seen_keys.emplace_back(key);
      if (duplicate) {
        issue(line, where + std::string(key),
              "duplicate key; the first value is used, this one is not stored: " +
                  simdjson::minify(f.value).substr(0, 80),
              true);
        continue;
      }
      if (key == "id") {
        std::optional<std::string> id;
        text_of(key, f.value, id);
        seen_id = id.has_value();
        if (id) r.id = std::move(*id);
      } else if (key == "memory") {
        ++with_memory;
        if (std::string_view s; f.value.get_string().get(s) == simdjson::SUCCESS) {
          r.content = std::string(s);
          seen_memory = true;
        } else if (!f.value.is_null()) {
          issue(line, where + "memory", "is not a string; kept as an extra field", true);
          keep_extra(key, f.value);
          seen_memory = true;
        }
      } else if (key == "hash") {
        if (std::string_view s; f.value.get_string().get(s) == simdjson::SUCCESS) {
          hash = std::string(s);
          hash_element = f.value;
        } else if (!f.value.is_null()) {
          issue(line, where + "hash", "is not a string; kept as an extra field", true);
          keep_extra(key, f.value);
        }
      } else if (key == "metadata") {
        if (dom::object md; f.value.get_object().get(md) == simdjson::SUCCESS) {
          for (auto m : md) {
            if (r.metadata.count(std::string(m.key))) {
              issue(line, where + "metadata." + std::string(m.key),
                    "duplicate metadata key; the first value is used, this one is not stored: " +
                        simdjson::minify(m.value).substr(0, 80),
                    true);
              continue;
            }
            bool lossy = false;
            auto v = mem0_metadata_value(m.value, lossy);
            if (lossy)
              issue(line, where + "metadata." + std::string(m.key),
                    "integer beyond int64 stored as a number (double)", true);
            r.metadata.emplace(std::string(m.key), std::move(v));
          }
        } else if (!f.value.is_null()) {
          issue(line, where + "metadata", "is not an object; kept as an extra field", true);
          keep_extra(key, f.value);
        }
      } else if (key == "created_at") {
        time_of(key, f.value, r.created_at);
      } else if (key == "updated_at") {
        time_of(key, f.value, r.updated_at);
      } else if (key == "user_id") {
        text_of(key, f.value, user);
      } else if (key == "agent_id") {
        text_of(key, f.value, agent);
      } else if (key == "run_id") {
        text_of(key, f.value, run);
      } else if (std::find(std::begin(detail::jsonl::key_names), std::end(detail::jsonl::key_names),
                           key) != std::end(detail::jsonl::key_names)) {
        // A memhealth record field (scope, status, confidence, supersedes, ...): as an extra field
        // of that name it would be dropped on writing (where the importer sets the typed field) or
        // read back as that field with memhealth's meaning, so it is kept under another name.
        const std::string renamed = "mem0_" + std::string(key);
        issue(line, where + std::string(key),
              "is a memhealth record field name; kept as the extra field \"" + renamed + "\"",
              true);
        keep_extra(renamed, f.value);
      } else {
        keep_extra(key, f.value);
      }
    }
    if (!seen_id)
      issue(line, where + "id", "missing or empty id; record kept with an empty id", true);
    if (!seen_memory)
      issue(line, where + "memory", "missing memory text; record kept with empty content", true);
    if (hash) {
      if (!r.metadata.emplace("mem0_hash", *hash).second) {
        issue(line, where + "hash",
              "metadata already has a key \"mem0_hash\"; the hash is kept as an extra field", true);
        keep_extra("hash", *hash_element);
      }
    }
    if (user) r.scope = "user:" + *user;
    if (agent) r.scope += (r.scope.empty() ? "" : "/") + ("agent:" + *agent);
    if (run) r.scope += (r.scope.empty() ? "" : "/") + ("run:" + *run);
    if (r.scope.empty())
      issue(line, where + "user_id",
            "no user_id, agent_id or run_id; record kept with an empty scope", true);
    result.records.push_back(std::move(r));
  }
  // Refuses input none of whose entries is a mem0 memory (no "memory" field): another format.
  void require_mem0(std::string_view text) const {
    if (with_memory != 0 || result.lines_read == 0) return;
    throw error(error_code::parse,
                "mem0 input " + file + " is not a mem0 export: no entry has a \"memory\" field" +
                    looks_like_note(text, file_format::mem0) + "; nothing imported");
  }
};

}  // namespace detail

/// Imports a mem0 export given as text (any of the three layouts in the file comment).
/// @param text the whole input (UTF-8).
/// @param file_name name put into each `load_issue::file` (may be empty).
/// @return the records in input order and the issues; `lines_read` = entries seen (array
///         elements, or non-blank JSONL lines).
/// @throws memhealth::error(parse) when the input starts with `[` but is not valid JSON, or is a
///         JSON value that is neither an array, nor an object (e.g. a bare number); and when it
///         has entries but none with a "memory" field (a LoCoMo file, a memhealth JSONL store, a
///         text file): the message names the format it looks like (`sniff_format`).
/// @complexity O(size of the input).
inline basic_load_result<memory_record> import_mem0_text(std::string_view text,
                                                         std::string_view file_name = {}) {
  namespace dom = simdjson::dom;
  basic_load_result<memory_record> result;
  detail::mem0_importer imp{result, std::string(file_name)};
  dom::parser parser;
  std::size_t first = text.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;  // UTF-8 byte order mark
  while (first < text.size() &&
         (text[first] == ' ' || text[first] == '\t' || text[first] == '\n' || text[first] == '\r'))
    ++first;
  if (first == text.size()) return result;

  const simdjson::padded_string padded(text.substr(first));
  dom::element doc;
  const auto whole = parser.parse(padded).get(doc);
  if (whole == simdjson::SUCCESS) {
    if (dom::array arr; doc.get_array().get(arr) == simdjson::SUCCESS) {
      std::size_t i = 0;
      for (dom::element e : arr) imp.entry(e, 0, "[" + std::to_string(i++) + "].");
      imp.require_mem0(text);
      return result;
    }
    dom::object obj;
    if (doc.get_object().get(obj) != simdjson::SUCCESS)
      throw error(error_code::parse, "mem0 input " + imp.file +
                                         " is neither a JSON array, an object, nor JSONL" +
                                         looks_like_note(text, file_format::mem0));
    dom::element results;
    if (obj["results"].get(results) == simdjson::SUCCESS) {
      dom::array arr;
      if (results.get_array().get(arr) != simdjson::SUCCESS)
        throw error(error_code::parse, "mem0 input " + imp.file + ": \"results\" is not an array");
      for (auto f : obj)
        if (f.key != "results")
          imp.issue(0, std::string(f.key), "top-level key other than \"results\" ignored", true);
      std::size_t i = 0;
      for (dom::element e : arr) imp.entry(e, 0, "results[" + std::to_string(i++) + "].");
      imp.require_mem0(text);
      return result;
    }
    imp.entry(doc, 1, "");  // a lone memory object: JSONL with one line
    imp.require_mem0(text);
    return result;
  }
  if (text[first] == '[')
    throw error(error_code::parse,
                "mem0 input " + imp.file +
                    " starts with '[' but is not valid JSON: " + simdjson::error_message(whole));

  // JSONL
  std::size_t line_no = 0, pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    ++line_no;
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
      line.remove_suffix(1);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    if (line_no == 1 && line.substr(0, 3) == "\xEF\xBB\xBF") line.remove_prefix(3);
    if (line.empty()) {
      if (end == text.size()) break;
      continue;
    }
    dom::element e;
    if (auto err = parser.parse(line.data(), line.size(), true).get(e); err) {
      ++result.lines_read;
      imp.issue(line_no, "",
                std::string("line is not JSON (") + simdjson::error_message(err) + "); skipped",
                false);
    } else {
      imp.entry(e, line_no, "");
    }
    if (end == text.size()) break;
  }
  imp.require_mem0(text);
  return result;
}

/// Imports a mem0 export file. See `import_mem0_text` for layouts, mapping and issues.
/// @throws memhealth::error(io) when the file cannot be read; memhealth::error(parse) as
///         `import_mem0_text`.
inline basic_load_result<memory_record> import_mem0(const std::filesystem::path& file) {
  const std::string text = detail::read_whole_file(file);
  return import_mem0_text(text, file.string());
}

}  // namespace memhealth
