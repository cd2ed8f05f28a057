#pragma once
/// @file metadata_schema.hpp
/// A small user schema for record metadata (required keys and value types) and the check the
/// structural detector runs with it.
///
/// The JSON file format of a schema and its reader are in io/metadata_schema_json.hpp, so the
/// detection headers do not need a JSON parser.

#include <boost/container/flat_map.hpp>

#include <cstdint>
#include <functional>
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
inline constexpr metadata_type_set null = 1u << 0;     ///< JSON null
inline constexpr metadata_type_set boolean = 1u << 1;  ///< true / false
inline constexpr metadata_type_set integer = 1u << 2;  ///< a JSON integer
inline constexpr metadata_type_set number = 1u << 3;   ///< a JSON number with fraction/exponent
inline constexpr metadata_type_set string = 1u << 4;   ///< a JSON string
inline constexpr metadata_type_set json = 1u << 5;     ///< a nested array or object
inline constexpr metadata_type_set any = 0x3f;         ///< every type
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
  std::string key;       ///< the metadata key
  std::string expected;  ///< allowed types, e.g. "string" or "integer|number"
  std::string actual;    ///< the value's type name, e.g. "integer"
};

/// What a record's metadata violates: missing required keys and wrongly typed values.
struct metadata_violations {
  std::vector<std::string> missing;  ///< required keys not present, in key order
  std::vector<metadata_type_error>
      wrong_type;  ///< present keys with a disallowed type, in key order
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
        v.wrong_type.push_back(
            {key, to_string_types(allowed), std::string(metadata_type_name(value))});
    }
  };
  check(schema.required, true);
  check(schema.types, false);
  return v;
}

}  // namespace memhealth
