#pragma once
/// @file metadata_schema.hpp
/// A small user schema for record metadata (required keys and value types), its JSON file format,
/// and the check the structural detector runs with it.
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

#include <simdjson.h>

#include <boost/container/flat_map.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/record/memory_record.hpp"

namespace memhealth {

/// A set of allowed metadata value types, as a bit mask (a union of `metadata_types` bits).
using metadata_type_set = std::uint8_t;

/// The bits of `metadata_type_set`, one per alternative of `metadata_value`.
namespace metadata_types {
inline constexpr metadata_type_set null = 1u << 0;      ///< JSON null
inline constexpr metadata_type_set boolean = 1u << 1;   ///< true / false
inline constexpr metadata_type_set integer = 1u << 2;   ///< a JSON integer
inline constexpr metadata_type_set number = 1u << 3;    ///< a JSON number with fraction/exponent
inline constexpr metadata_type_set string = 1u << 4;    ///< a JSON string
inline constexpr metadata_type_set json = 1u << 5;      ///< a nested array or object
inline constexpr metadata_type_set any = 0x3f;          ///< every type
}  // namespace metadata_types

/// Parses one schema type name ("string", "integer", "number" (= integer or number), "bool",
/// "boolean", "json", "null", "any"). @return the type set, or 0 for an unknown name.
constexpr metadata_type_set parse_metadata_type(std::string_view s) noexcept {
  using namespace metadata_types;
  if (s == "string") return string;
  if (s == "integer") return integer;
  if (s == "number") return static_cast<metadata_type_set>(integer | number);
  if (s == "bool" || s == "boolean") return boolean;
  if (s == "json") return json;
  if (s == "null") return null;
  if (s == "any") return any;
  return 0;
}

/// The type set bit of a metadata value's own type (see `metadata_type_name`).
constexpr metadata_type_set metadata_type_of(const metadata_value& v) noexcept {
  return static_cast<metadata_type_set>(1u << v.index());
}

/// Text of a type set for evidence: names joined by '|' ("string", "integer|number", "any").
inline std::string to_string_types(metadata_type_set t) {
  if (t == metadata_types::any) return "any";
  constexpr std::string_view names[] = {"null", "bool", "integer", "number", "string", "json"};
  std::string s;
  for (int b = 0; b < 6; ++b)
    if (t & (1u << b)) {
      if (!s.empty()) s += '|';
      s += names[b];
    }
  return s;
}

/// A metadata schema: required keys and optional typed keys (key -> allowed type set).
/// Empty schema (the default) = no metadata constraints.
struct metadata_schema {
  /// Keys that must be present, with their allowed types.
  boost::container::flat_map<std::string, metadata_type_set, std::less<>> required;
  /// Keys that may be absent but must have one of these types when present.
  boost::container::flat_map<std::string, metadata_type_set, std::less<>> types;

  /// True when the schema constrains nothing.
  [[nodiscard]] bool empty() const noexcept { return required.empty() && types.empty(); }
};

/// One metadata value of the wrong type.
struct metadata_type_error {
  std::string key;        ///< the metadata key
  std::string expected;   ///< allowed types, e.g. "string" or "integer|number"
  std::string actual;     ///< the value's type name, e.g. "integer"
};

/// What a record's metadata violates: missing required keys and wrongly typed values.
struct metadata_violations {
  std::vector<std::string> missing;            ///< required keys not present, in key order
  std::vector<metadata_type_error> wrong_type; ///< present keys with a disallowed type, in key order
  /// True when nothing is violated.
  [[nodiscard]] bool empty() const noexcept { return missing.empty() && wrong_type.empty(); }
};

namespace detail {
template <class Map>
auto find_metadata_key(const Map& m, const std::string& key) {
  if constexpr (requires { m.find(std::string_view(key)); })
    return m.find(std::string_view(key));
  else
    return m.find(key);  // a map without heterogeneous lookup
}
}  // namespace detail

/// Checks a metadata map against a schema.
/// @tparam Map a map of string -> `metadata_value` (such as `metadata_map`); `find` with a
///         `std::string_view` is used when the map supports heterogeneous lookup, else with the
///         key's `std::string`.
/// @complexity O(k log m) for k schema keys and m metadata keys; allocates only for violations.
template <class Map>
metadata_violations check_metadata(const metadata_schema& schema, const Map& metadata) {
  metadata_violations v;
  auto check = [&](const auto& table, bool must_exist) {
    for (const auto& [key, allowed] : table) {
      auto it = detail::find_metadata_key(metadata, key);
      if (it == metadata.end()) {
        if (must_exist) v.missing.push_back(key);
        continue;
      }
      const metadata_value& value = it->second;
      if ((metadata_type_of(value) & allowed) == 0)
        v.wrong_type.push_back({key, to_string_types(allowed), std::string(metadata_type_name(value))});
    }
  };
  check(schema.required, true);
  check(schema.types, false);
  return v;
}

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
      if (item.get_string().get(name) != simdjson::SUCCESS) fail("type list entries must be strings");
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

inline void parse_schema_table(simdjson::dom::element root, const char* member,
                               boost::container::flat_map<std::string, metadata_type_set, std::less<>>& out) {
  simdjson::dom::element table;
  if (root.at_key(member).get(table) != simdjson::SUCCESS) return;  // optional member
  simdjson::dom::object obj;
  if (table.get_object().get(obj) != simdjson::SUCCESS)
    throw error(error_code::schema, std::string("metadata schema: '") + member + "' must be an object");
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
