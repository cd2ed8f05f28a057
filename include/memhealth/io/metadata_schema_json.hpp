#pragma once
/// @file metadata_schema_json.hpp
/// The JSON file format of a metadata schema (detect/metadata_schema.hpp) and its reader, on
/// simdjson's DOM parser. Kept out of detect/ so that a program composing the detectors itself
/// does not compile a JSON parser it does not use; memhealth.hpp includes it.
///
/// ## Schema file format
/// A JSON object with two optional members, each an object mapping a metadata key to a type:
/// @code{.json}
/// {
///   "required": {"topic": "string", "ingest_batch": "string"},
///   "types":    {"priority": "integer", "score": ["number", "null"]}
/// }
/// @endcode
/// - `required`: the key must be present and its value must have one of the given types.
/// - `types`: the key is optional, but when present its value must have one of the given types.
/// - A type is one of `"string"`, `"integer"`, `"number"`, `"bool"` (or `"boolean"`), `"json"`
///   (a nested array or object), `"null"`, `"any"`; or an array of these (a union).
/// - `"number"` accepts integers too (as in JSON Schema); `"integer"` accepts only integers.
/// Unknown top-level members are ignored (room for later additions).

#include <boost/container/flat_map.hpp>
#include <simdjson.h>

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include "memhealth/config.hpp"
#include "memhealth/record/metadata_schema.hpp"

namespace memhealth {

namespace detail {
inline metadata_type_set parse_schema_type(simdjson::dom::element e, std::string_view key) {
  auto fail = [&](const std::string& why) {
    throw error(error_code::schema, "metadata schema: key '" + std::string(key) + "': " + why);
  };
  std::string_view name;
  if (e.get_string().get(name) == simdjson::SUCCESS) {
    const auto t = parse_metadata_type(name);
    if (t == 0) fail("unknown type '" + std::string(name) + "'");
    return t;
  }
  simdjson::dom::array arr;
  if (e.get_array().get(arr) == simdjson::SUCCESS) {
    metadata_type_set t = 0;
    for (auto item : arr) {
      if (item.get_string().get(name) != simdjson::SUCCESS)
        fail("type list entries must be strings");
      const auto one = parse_metadata_type(name);
      if (one == 0) fail("unknown type '" + std::string(name) + "'");
      t = static_cast<metadata_type_set>(t | one);
    }
    if (t == 0) fail("empty type list");
    return t;
  }
  fail("a type must be a string or an array of strings");
  return 0;
}

inline void parse_schema_table(
    simdjson::dom::element root, const char* member,
    boost::container::flat_map<std::string, metadata_type_set, std::less<>>& out) {
  simdjson::dom::element table;
  if (root.at_key(member).get(table) != simdjson::SUCCESS) return;  // optional member
  simdjson::dom::object obj;
  if (table.get_object().get(obj) != simdjson::SUCCESS)
    throw error(error_code::schema,
                std::string("metadata schema: '") + member + "' must be an object");
  for (auto field : obj) out[std::string(field.key)] = parse_schema_type(field.value, field.key);
}
}  // namespace detail

/// Parses a schema from JSON text (format above).
/// @throws error(error_code::parse) when the text is not JSON or not an object;
///         error(error_code::schema) when a member has the wrong shape or an unknown type name.
inline metadata_schema parse_schema_json(std::string_view json) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  const simdjson::padded_string padded(json);
  if (parser.parse(padded).get(root) != simdjson::SUCCESS || !root.is_object())
    throw error(error_code::parse, "metadata schema: not a JSON object");
  metadata_schema s;
  detail::parse_schema_table(root, "required", s.required);
  detail::parse_schema_table(root, "types", s.types);
  return s;
}

/// Reads a schema file (format above) with simdjson's DOM parser.
/// @throws error(error_code::io) when the file cannot be read; otherwise as `parse_schema_json`.
inline metadata_schema load_schema_json(const std::filesystem::path& path) {
  simdjson::padded_string text;
  if (simdjson::padded_string::load(path.string()).get(text) != simdjson::SUCCESS)
    throw error(error_code::io, "metadata schema: cannot read '" + path.string() + "'");
  return parse_schema_json(std::string_view(text));
}

}  // namespace memhealth
