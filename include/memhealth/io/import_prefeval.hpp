#pragma once
/// @file import_prefeval.hpp
/// Importer for the explicit preferences of PrefEval (Zhao et al., "Do LLMs Recognize Your
/// Preferences? Evaluating Personalized Preference Following in LLMs", ICLR 2025;
/// github.com/amazon-science/PrefEval, `benchmark_dataset/explicit_preference/*.json`, licence
/// CC BY-NC 4.0): each stated preference becomes one `memory_record` of kind preference.
///
/// ## Input
/// One JSON file per topic (the file stem is the topic, e.g. `lifestyle_dietary.json`), holding
/// an array of objects `{"preference": ..., "question": ..., "explanation": ...}`: a first-person
/// preference ("I have a severe allergy to shellfish, ..."), a later request a generic answer
/// would violate, and why. `import_prefeval` takes one such file or a directory of them (every
/// regular `*.json` file, in file-name order; other files such as README.md are not read).
///
/// ## Mapping
/// The data set has no user and no time. Each topic file is taken as the preference memory of
/// one synthetic user in that domain, so a topic is one scope of a few dozen records (31..62 in
/// the release): the duplicate and conflict checks compare the preferences of one topic with
/// each other, and a text stored under two topics is a cross-scope finding.
/// | record field | value |
/// |---|---|
/// | id | `prefeval-<topic>-<k>`, k = 1-based position in the file's array |
/// | content | preference (verbatim) |
/// | scope | `user:prefeval/topic:<topic>` (one sub-scope per topic under one synthetic user) |
/// | created_at, updated_at | `prefeval_base_time` (2025-01-22T00:00:00Z, the day the release's
/// folder last changed) + k minutes: deterministic, in file order | | source, kind, status |
/// "user_declared" (the user stated it in the first person), "preference", "active" | | metadata
/// "dataset", "topic" | "prefeval", `<topic>` (strings) | | extra "question", "explanation" | the
/// entry's fields, verbatim (minified JSON), written back by the JSONL writer | | extra (any other
/// key of the entry) | verbatim under its own name; under `prefeval_<key>` when the name is one of
/// the record's own fields (e.g. "id") | No embedding and no claim: embed afterwards (`memhealth
/// import --embed lexical`, `embed_missing`). Because of the fixed dates, the staleness check
/// (preference half-life 180 days) reports these records for a clock after mid-2025: pass a
/// detection time (`--now`) near the base time.
///
/// ## Issues (never fatal)
/// An entry that is not an object, or whose "preference" is missing or not a string, is skipped
/// (`record_kept = false`). Kept with an issue: an empty preference (the structural check then
/// reports empty content); "question" or "explanation" missing or not a string (a non-string is
/// kept verbatim); a duplicate key (the first value is used, the later one is named in the
/// issue's reason and not stored). In a directory, a file that is not a JSON array is skipped
/// with one issue (field empty, `record_kept = false`) and the others are read; a directory with
/// no `*.json` file gives one issue and no records. `load_issue::line` is 0;
/// `load_issue::field` starts with the entry's index ("[3].question").

#include <simdjson.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/io/import_sniff.hpp"
#include "memhealth/io/jsonl.hpp"
#include "memhealth/io/load_issue.hpp"
#include "memhealth/io/read_file.hpp"
#include "memhealth/record/memory_record.hpp"
#include "memhealth/record/time.hpp"

namespace memhealth {

/// Creation time of the first PrefEval entry of every topic minus one minute:
/// 2025-01-22T00:00:00Z (epoch ms 1'737'504'000'000). Entry k (1-based) is created at this plus k
/// minutes.
inline constexpr std::int64_t prefeval_base_epoch_ms = 1'737'504'000'000;

namespace detail {

inline void prefeval_entry(simdjson::dom::element e, std::size_t index, const std::string& topic,
                           const std::string& file, basic_load_result<memory_record>& result) {
  namespace dom = simdjson::dom;
  const std::string where = "[" + std::to_string(index) + "]";
  auto issue = [&](std::string field, std::string reason, bool kept) {
    result.issues.push_back(load_issue{file, 0, std::move(field), std::move(reason), kept});
  };
  ++result.lines_read;
  dom::object obj;
  if (e.get_object().get(obj) != simdjson::SUCCESS) {
    issue(where, "entry is not a JSON object: " + simdjson::minify(e).substr(0, 80) + "; skipped",
          false);
    return;
  }
  memory_record r;
  r.id = "prefeval-" + topic + "-" + std::to_string(index + 1);
  bool have_preference = false, have_question = false, have_explanation = false;
  std::vector<std::string_view> seen;
  for (auto f : obj) {
    const std::string_view key = f.key;
    const std::string field = where + "." + std::string(key);
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      issue(field,
            "duplicate key; the first value is used, this one is not stored: " +
                simdjson::minify(f.value).substr(0, 80),
            true);
      continue;
    }
    seen.push_back(key);
    if (key == "preference") {
      std::string_view s;
      if (f.value.get_string().get(s) != simdjson::SUCCESS) {
        issue(field,
              "preference is not a string: " + simdjson::minify(f.value).substr(0, 80) +
                  "; entry skipped",
              false);
        return;
      }
      r.content = std::string(s);
      have_preference = true;
    } else if (key == "question" || key == "explanation") {
      (key == "question" ? have_question : have_explanation) = true;
      if (!f.value.is_string()) issue(field, "is not a string; kept verbatim", true);
      r.extra.push_back(extra_field{std::string(key), simdjson::minify(f.value)});
    } else {
      const bool clash = jsonl::key_of(key) != jsonl::key_id::unknown;
      if (clash)
        issue(field,
              "names a record field; kept as extra field \"prefeval_" + std::string(key) + "\"",
              true);
      r.extra.push_back(
          extra_field{(clash ? "prefeval_" : "") + std::string(key), simdjson::minify(f.value)});
    }
  }
  if (!have_preference) {
    issue(where + ".preference", "preference missing; entry skipped", false);
    return;
  }
  if (r.content.empty()) issue(where + ".preference", "empty preference; kept", true);
  if (!have_question) issue(where + ".question", "question missing; kept without it", true);
  if (!have_explanation)
    issue(where + ".explanation", "explanation missing; kept without it", true);
  r.scope = "user:prefeval/topic:" + topic;
  r.created_at = timestamp_from_epoch_ms(prefeval_base_epoch_ms +
                                         static_cast<std::int64_t>(index + 1) * 60'000);
  r.updated_at = r.created_at;
  r.source = std::string(to_string(record_source::user_declared));
  r.kind = std::string(kinds::preference);
  r.status = std::string(to_string(record_status::active));
  r.metadata.emplace("dataset", std::string("prefeval"));
  r.metadata.emplace("topic", topic);
  result.records.push_back(std::move(r));
}

// Appends the records of one topic file; false (nothing appended) when it is not a JSON array.
inline bool prefeval_append(std::string_view json, const std::string& topic,
                            const std::string& file, basic_load_result<memory_record>& result,
                            std::string& why) {
  namespace dom = simdjson::dom;
  dom::parser parser;
  const simdjson::padded_string padded(json);
  dom::element doc;
  if (auto err = parser.parse(padded).get(doc); err) {
    why = std::string("is not JSON: ") + simdjson::error_message(err) +
          looks_like_note(json, file_format::prefeval);
    return false;
  }
  dom::array arr;
  if (doc.get_array().get(arr) != simdjson::SUCCESS) {
    why = "is not a JSON array of preferences" + looks_like_note(json, file_format::prefeval);
    return false;
  }
  {  // the identifying field: an array none of whose entries has "preference" is another format
    bool identified = arr.size() == 0;
    for (dom::element e : arr) {
      dom::object o;
      if (e.get_object().get(o) != simdjson::SUCCESS) continue;
      for (auto f : o) identified = identified || f.key == "preference";
    }
    if (!identified) {
      why = "is not a PrefEval topic file: no entry has a \"preference\" field" +
            looks_like_note(json, file_format::prefeval);
      return false;
    }
  }
  std::size_t i = 0;
  for (dom::element e : arr) prefeval_entry(e, i++, topic, file, result);
  return true;
}

}  // namespace detail

/// Imports one PrefEval topic given as JSON text.
/// @param json the whole file's text (UTF-8): an array of preference objects.
/// @param topic the topic used in ids, scope and metadata (the file stem, e.g.
/// "lifestyle_dietary").
/// @param file_name name put into each `load_issue::file` (may be empty).
/// @return the records in array order (see the file comment for the mapping) and the issues;
///         `lines_read` = array entries seen.
/// @throws memhealth::error(parse) when the text is not JSON, its top level is not an array, or
///         no entry of a non-empty array has a "preference" field (a mem0 array, for one): the
///         message names the format it looks like (`sniff_format`).
/// @complexity O(size of the input).
inline basic_load_result<memory_record> import_prefeval_text(std::string_view json,
                                                             std::string_view topic,
                                                             std::string_view file_name = {}) {
  basic_load_result<memory_record> result;
  std::string why;
  if (!detail::prefeval_append(json, std::string(topic), std::string(file_name), result, why))
    throw error(error_code::parse, "PrefEval input " + std::string(file_name) + " " + why);
  return result;
}

/// Imports a PrefEval topic file (`.../lifestyle_dietary.json`, topic = file stem) or a directory
/// of them (every regular `*.json` file in file-name order; in a directory, a file that is not a
/// JSON array is one issue, not an error). See the file comment for the mapping and the issues.
/// @throws memhealth::error(io) when the file or directory cannot be read;
///         memhealth::error(parse) when a single file given directly is not a JSON array.
/// @complexity O(total size of the files read).
inline basic_load_result<memory_record> import_prefeval(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) {
    const std::string text = detail::read_whole_file(path);
    return import_prefeval_text(text, path.stem().string(), path.string());
  }
  std::vector<std::filesystem::path> files;
  for (std::filesystem::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".json" && it->is_regular_file()) files.push_back(it->path());
  if (ec) throw error(error_code::io, "cannot list " + path.string() + ": " + ec.message());
  std::sort(files.begin(), files.end());
  basic_load_result<memory_record> result;
  if (files.empty())
    result.issues.push_back(
        load_issue{path.string(), 0, "", "directory holds no .json file; nothing imported", true});
  for (const auto& f : files) {
    const std::string text = detail::read_whole_file(f);
    std::string why;
    if (!detail::prefeval_append(text, f.stem().string(), f.string(), result, why))
      result.issues.push_back(load_issue{f.string(), 0, "", "file " + why + "; skipped", false});
  }
  return result;
}

}  // namespace memhealth
