#pragma once
/// @file plan_json.hpp
/// Repair plans as one JSON document (nlohmann/json): `plan_to_json` / `plan_from_json`. The round
/// trip is exact: `plan_from_json(plan_to_json(p)) == p`. This is the form to embed a plan in other
/// JSON, and the plan file format of memhealth 0.1; plan files are now JSON Lines, written and read
/// in bounded memory by plan_file.hpp (`write_plan`, `plan_reader`, `read_plan`), which also reads
/// this form.
///
/// ## Format (schema_version 1)
/// @code{.json}
/// {"schema_version": 1, "suspended": false, "suspend_reason": "", "deferred": ["..."],
///  "detection": {"now": "2024-07-15T00:00:00.000Z", "schema": "data/s.json", "threshold": "0.92"},
///  "actions": [{"type": "merge_duplicates", "tier": 2, "automation": "confirm",
///               "targets": ["m1", "m2"], "priority": 200,
///               "edits": [{"record_id": "m2", "op": "set_duplicate_of", "primary_id": "m1"},
///                         {"record_id": "m2", "op": "set_status", "status": "archived"}],
///               "blast_radius": {"records": 1, "scopes": ["user:7"]},
///               "rollback_method": "restore_before_images", "idempotency_key": "…16 hex…",
///               "reasons": ["exact_duplicate: m1 m2 (duplicates)"]}]}
/// @endcode
/// Edit ops and their fields: `set_status` {status}, `set_duplicate_of` {primary_id},
/// `add_supersedes` {ids}, `append_notes` {notes}, `drop_links` {ids}, `set_weight` {weight},
/// `fill_metadata` {key, value}, `normalize_timestamps` {}, `replace_embedding` {embedding,
/// version}, `set_content` {content} (a person's new text for a conflict's kept record,
/// `resolve_review_item`; the planner never writes it). A metadata value is written with its type:
/// `{"type": "null"}`,
/// `{"type": "bool"|"integer"|"number"|"string", "value": ...}`, `{"type": "json", "value":
/// "<minified JSON text>"}`. Numbers are written in the shortest form that reads back to the same
/// double (float32 embedding values read back to the same float); non-finite numbers, which JSON
/// cannot hold, are written as the strings "nan", "inf", "-inf". `detection` (an object of
/// strings: the detection options the plan was made from, `detection_provenance`; see
/// `detection_to_json`) is written only when not empty and is optional when read; so are
/// `blast_radius_threshold` (the planner's threshold, an integer) and `store` (the fingerprint of
/// the store the plan was made from, `store_fingerprint_to_json`), an action's
/// `blast_radius.index_entries` (written when not 0), and an action's `seen` (an object of record
/// id -> `record_decision_digest` as 16 lower-case hex digits: the records it decided on, as the
/// plan saw them; `apply_plan` skips the action as stale when one differs; written when not
/// empty, absent in plans made before it).
///
/// ## Errors
/// `plan_from_json` throws `memhealth::error(error_code::parse)` naming the JSON
/// pointer of the bad field (e.g. "/actions/3/edits/0/op: unknown edit op 'delete'"); a
/// schema_version other than 1 is `error_code::schema`.

#include <nlohmann/json.hpp>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/record/memory_record.hpp"
#include "memhealth/repair/action.hpp"

namespace memhealth {

/// Version of the plan JSON format written by `plan_to_json`.
inline constexpr int plan_schema_version = 1;

namespace detail {

template <class = void>  // deferred instantiation, see memhealth.hpp
nlohmann::json plan_number(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  return x;
}

template <class = void>  // deferred instantiation, see memhealth.hpp
nlohmann::json plan_metadata_value(const metadata_value& v) {
  nlohmann::json j = nlohmann::json::object();
  j["type"] = std::string(metadata_type_name(v));
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
        } else if constexpr (std::is_same_v<T, double>) {
          j["value"] = plan_number(x);
        } else if constexpr (std::is_same_v<T, raw_json>) {
          j["value"] = x.text;
        } else {
          j["value"] = x;
        }
      },
      v);
  return j;
}

template <class = void>  // deferred instantiation, see memhealth.hpp
nlohmann::json plan_edit(const record_edit& e) {
  nlohmann::json j = nlohmann::json::object();
  j["record_id"] = e.record_id;
  std::visit(
      [&](const auto& op) {
        using T = std::decay_t<decltype(op)>;
        if constexpr (std::is_same_v<T, edit_set_status>) {
          j["op"] = "set_status";
          j["status"] = op.status;
        } else if constexpr (std::is_same_v<T, edit_set_duplicate_of>) {
          j["op"] = "set_duplicate_of";
          j["primary_id"] = op.primary_id;
        } else if constexpr (std::is_same_v<T, edit_add_supersedes>) {
          j["op"] = "add_supersedes";
          j["ids"] = op.ids;
        } else if constexpr (std::is_same_v<T, edit_append_notes>) {
          j["op"] = "append_notes";
          j["notes"] = op.notes;
        } else if constexpr (std::is_same_v<T, edit_drop_links>) {
          j["op"] = "drop_links";
          j["ids"] = op.ids;
        } else if constexpr (std::is_same_v<T, edit_set_weight>) {
          j["op"] = "set_weight";
          j["weight"] = plan_number(op.weight);
        } else if constexpr (std::is_same_v<T, edit_fill_metadata>) {
          j["op"] = "fill_metadata";
          j["key"] = op.key;
          j["value"] = plan_metadata_value(op.value);
        } else if constexpr (std::is_same_v<T, edit_normalize_timestamps>) {
          j["op"] = "normalize_timestamps";
        } else if constexpr (std::is_same_v<T, edit_set_content>) {
          j["op"] = "set_content";
          j["content"] = op.content;
        } else {
          j["op"] = "replace_embedding";
          nlohmann::json v = nlohmann::json::array();
          for (float f : op.embedding) v.push_back(plan_number(static_cast<double>(f)));
          j["embedding"] = std::move(v);
          j["version"] = op.version;
        }
      },
      e.op);
  return j;
}

// ---- reading: every accessor names the JSON pointer of what it reads.

[[noreturn]] inline void plan_fail(const std::string& path, const std::string& what) {
  throw error(error_code::parse,
              "plan JSON: " + (path.empty() ? std::string("/") : path) + ": " + what);
}

template <class = void>  // deferred instantiation, see memhealth.hpp
const nlohmann::json& plan_member(const nlohmann::json& j, const std::string& path,
                                  const char* key) {
  if (!j.is_object()) plan_fail(path, "expected an object");
  auto it = j.find(key);
  if (it == j.end()) plan_fail(path + "/" + key, "missing");
  return *it;
}

template <class = void>  // deferred instantiation, see memhealth.hpp
std::string plan_string(const nlohmann::json& j, const std::string& path) {
  if (!j.is_string()) plan_fail(path, "expected a string");
  return j.get<std::string>();
}

template <class = void>  // deferred instantiation, see memhealth.hpp
std::string plan_string_member(const nlohmann::json& j, const std::string& path, const char* key) {
  return plan_string(plan_member(j, path, key), path + "/" + key);
}

template <class = void>  // deferred instantiation, see memhealth.hpp
std::vector<std::string> plan_strings(const nlohmann::json& j, const std::string& path) {
  if (!j.is_array()) plan_fail(path, "expected an array of strings");
  std::vector<std::string> out;
  out.reserve(j.size());
  for (std::size_t i = 0; i < j.size(); ++i)
    out.push_back(plan_string(j[i], path + "/" + std::to_string(i)));
  return out;
}

template <class = void>  // deferred instantiation, see memhealth.hpp
double plan_read_number(const nlohmann::json& j, const std::string& path) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) {
    const auto& s = j.get_ref<const std::string&>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
  }
  plan_fail(path, "expected a number (or \"nan\", \"inf\", \"-inf\")");
}

template <class = void>  // deferred instantiation, see memhealth.hpp
std::int64_t plan_integer(const nlohmann::json& j, const std::string& path) {
  if (!j.is_number_integer()) plan_fail(path, "expected an integer");
  if (j.is_number_unsigned() &&
      j.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    plan_fail(path, "integer out of range");
  return j.get<std::int64_t>();
}

template <class = void>  // deferred instantiation, see memhealth.hpp
bool plan_bool(const nlohmann::json& j, const std::string& path) {
  if (!j.is_boolean()) plan_fail(path, "expected true or false");
  return j.get<bool>();
}

template <class = void>  // deferred instantiation, see memhealth.hpp
metadata_value plan_read_metadata(const nlohmann::json& j, const std::string& path) {
  const std::string type = plan_string_member(j, path, "type");
  if (type == "null") return std::monostate{};
  const std::string vp = path + "/value";
  const auto& v = plan_member(j, path, "value");
  if (type == "bool") return plan_bool(v, vp);
  if (type == "integer") return plan_integer(v, vp);
  if (type == "number") return plan_read_number(v, vp);
  if (type == "string") return plan_string(v, vp);
  if (type == "json") return raw_json{plan_string(v, vp)};
  plan_fail(path + "/type", "unknown metadata type '" + type + "'");
}

template <class = void>  // deferred instantiation, see memhealth.hpp
record_edit plan_read_edit(const nlohmann::json& j, const std::string& path) {
  record_edit e;
  e.record_id = plan_string_member(j, path, "record_id");
  const std::string op = plan_string_member(j, path, "op");
  auto sub = [&](const char* key) { return path + "/" + key; };
  if (op == "set_status") {
    e.op = edit_set_status{plan_string_member(j, path, "status")};
  } else if (op == "set_duplicate_of") {
    e.op = edit_set_duplicate_of{plan_string_member(j, path, "primary_id")};
  } else if (op == "add_supersedes") {
    e.op = edit_add_supersedes{plan_strings(plan_member(j, path, "ids"), sub("ids"))};
  } else if (op == "append_notes") {
    e.op = edit_append_notes{plan_strings(plan_member(j, path, "notes"), sub("notes"))};
  } else if (op == "drop_links") {
    e.op = edit_drop_links{plan_strings(plan_member(j, path, "ids"), sub("ids"))};
  } else if (op == "set_weight") {
    e.op = edit_set_weight{plan_read_number(plan_member(j, path, "weight"), sub("weight"))};
  } else if (op == "fill_metadata") {
    e.op = edit_fill_metadata{plan_string_member(j, path, "key"),
                              plan_read_metadata(plan_member(j, path, "value"), sub("value"))};
  } else if (op == "normalize_timestamps") {
    e.op = edit_normalize_timestamps{};
  } else if (op == "set_content") {
    e.op = edit_set_content{plan_string_member(j, path, "content")};
  } else if (op == "replace_embedding") {
    const auto& v = plan_member(j, path, "embedding");
    if (!v.is_array()) plan_fail(sub("embedding"), "expected an array of numbers");
    edit_replace_embedding r;
    r.embedding.reserve(v.size());
    for (std::size_t i = 0; i < v.size(); ++i)
      r.embedding.push_back(
          static_cast<float>(plan_read_number(v[i], sub("embedding") + "/" + std::to_string(i))));
    r.version = plan_string_member(j, path, "version");
    e.op = std::move(r);
  } else {
    plan_fail(sub("op"), "unknown edit op '" + op + "'");
  }
  return e;
}

template <class = void>  // deferred instantiation, see memhealth.hpp
repair_action plan_read_action(const nlohmann::json& j, const std::string& path) {
  repair_action a;
  a.type = plan_string_member(j, path, "type");
  const std::int64_t tier = plan_integer(plan_member(j, path, "tier"), path + "/tier");
  if (tier < 1 || tier > 3) plan_fail(path + "/tier", "expected 1, 2 or 3");
  a.tier = static_cast<int>(tier);
  const std::string who = plan_string_member(j, path, "automation");
  if (who == "auto")
    a.automation = automation::automatic;
  else if (who == "confirm")
    a.automation = automation::confirm;
  else if (who == "manual")
    a.automation = automation::manual;
  else
    plan_fail(path + "/automation", "expected \"auto\", \"confirm\" or \"manual\"");
  a.targets = plan_strings(plan_member(j, path, "targets"), path + "/targets");
  const auto& edits = plan_member(j, path, "edits");
  if (!edits.is_array()) plan_fail(path + "/edits", "expected an array");
  for (std::size_t i = 0; i < edits.size(); ++i)
    a.edits.push_back(plan_read_edit(edits[i], path + "/edits/" + std::to_string(i)));
  const std::string bp = path + "/blast_radius";
  const auto& blast = plan_member(j, path, "blast_radius");
  const std::int64_t n = plan_integer(plan_member(blast, bp, "records"), bp + "/records");
  if (n < 0) plan_fail(bp + "/records", "expected a count >= 0");
  a.blast.records = static_cast<std::size_t>(n);
  if (const auto ie = blast.find("index_entries"); ie != blast.end()) {
    const std::int64_t m = plan_integer(*ie, bp + "/index_entries");
    if (m < 0) plan_fail(bp + "/index_entries", "expected a count >= 0");
    a.blast.index_entries = static_cast<std::size_t>(m);
  }
  a.blast.scopes = plan_strings(plan_member(blast, bp, "scopes"), bp + "/scopes");
  a.rollback_method = plan_string_member(j, path, "rollback_method");
  a.idempotency_key = plan_string_member(j, path, "idempotency_key");
  a.reasons = plan_strings(plan_member(j, path, "reasons"), path + "/reasons");
  const std::int64_t pri = plan_integer(plan_member(j, path, "priority"), path + "/priority");
  if (pri < std::numeric_limits<int>::min() || pri > std::numeric_limits<int>::max())
    plan_fail(path + "/priority", "out of range");
  a.priority = static_cast<int>(pri);
  if (const auto seen = j.find("seen"); seen != j.end()) {  // optional (plans before it: none)
    const std::string sp = path + "/seen";
    if (!seen->is_object()) plan_fail(sp, "expected an object of id -> 16 hex digits");
    for (const auto& [id, v] : seen->items()) {
      const std::string at = sp + "/" + id;
      const std::string text = plan_string(v, at);
      std::uint64_t h = 0;
      const char* b = text.data();
      const char* e = text.data() + text.size();
      const auto r = std::from_chars(b, e, h, 16);
      if (text.size() != 16 || r.ec != std::errc{} || r.ptr != e)
        plan_fail(at, "expected 16 hex digits: '" + text + "'");
      a.seen[id] = h;
    }
  }
  return a;
}

}  // namespace detail

/// The JSON form of a plan's detection provenance: an object of strings with the keys
/// "threshold" (shortest decimal text of the float), "window", "schema", "schema_fnv1a64" (16
/// lowercase hex digits), "now" (`format_timestamp`, UTC, milliseconds), "dim" (decimal) for the
/// fields that are set, plus `other` verbatim; keys sorted. `{}` when nothing is recorded.
template <class = void>  // deferred instantiation, see memhealth.hpp
nlohmann::json detection_to_json(const detection_provenance& d) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : d.other) j[k] = v;
  if (d.threshold) {
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, *d.threshold);
    j["threshold"] = std::string(buf, r.ptr);
  }
  if (d.window) j["window"] = *d.window;
  if (d.schema) j["schema"] = *d.schema;
  if (d.schema_fnv1a64) {
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(*d.schema_fnv1a64));
    j["schema_fnv1a64"] = std::string(hex);
  }
  if (d.now) j["now"] = format_timestamp(timestamp{*d.now, 0});
  if (d.dim) j["dim"] = std::to_string(*d.dim);
  return j;
}

/// Reads a detection provenance from its JSON form (`detection_to_json`; `path` is the JSON
/// pointer used in errors). Keys other than the six known ones go to `other`.
/// @throws error(parse) naming `path`/key when `j` is not an object, a value is not a string, or
///         a known key's text does not parse: "threshold" a float, "schema_fnv1a64" 1 to 16 hex
///         digits, "now" an ISO-8601 time (`parse_timestamp`), "dim" a decimal integer.
template <class = void>  // deferred instantiation, see memhealth.hpp
detection_provenance detection_from_json(const nlohmann::json& j,
                                         const std::string& path = "/detection") {
  if (!j.is_object()) detail::plan_fail(path, "expected an object of strings");
  detection_provenance d;
  for (const auto& [k, v] : j.items()) {
    const std::string at = path + "/" + k;
    std::string text = detail::plan_string(v, at);
    const char* b = text.data();
    const char* e = text.data() + text.size();
    auto whole = [&](std::from_chars_result r) {
      return r.ec == std::errc{} && r.ptr == e && b != e;
    };
    if (k == "threshold") {
      float x = 0;
      if (!whole(std::from_chars(b, e, x)))
        detail::plan_fail(at, "expected a number as text: '" + text + "'");
      d.threshold = x;
    } else if (k == "schema_fnv1a64") {
      std::uint64_t h = 0;
      if (text.size() > 16 || !whole(std::from_chars(b, e, h, 16)))
        detail::plan_fail(at, "expected 16 hex digits: '" + text + "'");
      d.schema_fnv1a64 = h;
    } else if (k == "now") {
      const auto t = parse_timestamp(text);
      if (!t) detail::plan_fail(at, "expected an ISO-8601 time: '" + text + "'");
      d.now = t->instant;
    } else if (k == "dim") {
      std::size_t n = 0;
      if (!whole(std::from_chars(b, e, n)))
        detail::plan_fail(at, "expected a decimal integer: '" + text + "'");
      d.dim = n;
    } else if (k == "window") {
      d.window = std::move(text);
    } else if (k == "schema") {
      d.schema = std::move(text);
    } else {
      d.other[k] = std::move(text);
    }
  }
  return d;
}

/// The JSON form of a plan's store fingerprint (`plan_store_fingerprint`): `{"records": N,
/// "ids": N, "live": N, "ids_crc64": "16 hex digits", "id_sample": ["16 hex digits", ...]}`
/// (the sample's hashes as hex text: JSON numbers above 2^53 lose digits in many readers).
template <class = void>  // deferred instantiation, see memhealth.hpp
nlohmann::json store_fingerprint_to_json(const plan_store_fingerprint& f) {
  nlohmann::json j = nlohmann::json::object();
  j["records"] = f.records;
  j["ids"] = f.ids;
  j["live"] = f.live;
  j["ids_crc64"] = f.ids_crc64;
  nlohmann::json sample = nlohmann::json::array();
  for (const std::uint64_t h : f.sample) {
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    sample.push_back(std::string(hex));
  }
  j["id_sample"] = std::move(sample);
  return j;
}

/// Reads a store fingerprint from its JSON form (`store_fingerprint_to_json`; `path` is the JSON
/// pointer used in errors). @throws error(parse) naming the field when `j` is not an object, a
/// count is not an integer >= 0, `ids_crc64` is not a string, or a sample entry is not 1 to 16
/// hex digits.
template <class = void>  // deferred instantiation, see memhealth.hpp
plan_store_fingerprint store_fingerprint_from_json(const nlohmann::json& j,
                                                   const std::string& path = "/store") {
  if (!j.is_object()) detail::plan_fail(path, "expected an object");
  plan_store_fingerprint f;
  auto count = [&](const char* key) {
    const std::int64_t n =
        detail::plan_integer(detail::plan_member(j, path, key), path + "/" + key);
    if (n < 0) detail::plan_fail(path + "/" + key, "expected a count >= 0");
    return static_cast<std::size_t>(n);
  };
  f.records = count("records");
  f.ids = count("ids");
  f.live = count("live");
  f.ids_crc64 = detail::plan_string_member(j, path, "ids_crc64");
  const std::vector<std::string> sample =
      detail::plan_strings(detail::plan_member(j, path, "id_sample"), path + "/id_sample");
  f.sample.reserve(sample.size());
  for (std::size_t i = 0; i < sample.size(); ++i) {
    const std::string& t = sample[i];
    std::uint64_t h = 0;
    const auto r = std::from_chars(t.data(), t.data() + t.size(), h, 16);
    if (t.empty() || t.size() > 16 || r.ec != std::errc{} || r.ptr != t.data() + t.size())
      detail::plan_fail(path + "/id_sample/" + std::to_string(i),
                        "expected 16 hex digits: '" + t + "'");
    f.sample.push_back(h);
  }
  return f;
}

/// The JSON form of a plan (see the file comment). Keys of each object are written in sorted
/// order (nlohmann's default object), so `plan_to_json(p).dump()` is byte-for-byte stable.
/// @complexity O(size of the plan).
template <class = void>  // deferred instantiation, see memhealth.hpp
nlohmann::json plan_to_json(const repair_plan& p) {
  nlohmann::json j = nlohmann::json::object();
  j["schema_version"] = plan_schema_version;
  j["suspended"] = p.suspended;
  j["suspend_reason"] = p.suspend_reason;
  j["deferred"] = p.deferred;
  if (!p.detection.empty()) j["detection"] = detection_to_json(p.detection);
  if (p.blast_radius_threshold) j["blast_radius_threshold"] = *p.blast_radius_threshold;
  if (p.store) j["store"] = store_fingerprint_to_json(*p.store);
  nlohmann::json actions = nlohmann::json::array();
  for (const auto& a : p.actions) {
    nlohmann::json x = nlohmann::json::object();
    x["type"] = a.type;
    x["tier"] = a.tier;
    x["automation"] = std::string(to_string(a.automation));
    x["targets"] = a.targets;
    nlohmann::json edits = nlohmann::json::array();
    for (const auto& e : a.edits) edits.push_back(detail::plan_edit(e));
    x["edits"] = std::move(edits);
    x["blast_radius"] = {{"records", a.blast.records}, {"scopes", a.blast.scopes}};
    if (a.blast.index_entries) x["blast_radius"]["index_entries"] = a.blast.index_entries;
    x["rollback_method"] = a.rollback_method;
    x["idempotency_key"] = a.idempotency_key;
    x["reasons"] = a.reasons;
    x["priority"] = a.priority;
    if (!a.seen.empty()) {
      nlohmann::json seen = nlohmann::json::object();
      for (const auto& [id, h] : a.seen) {
        char hex[17];
        std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
        seen[id] = std::string(hex);
      }
      x["seen"] = std::move(seen);
    }
    actions.push_back(std::move(x));
  }
  j["actions"] = std::move(actions);
  return j;
}

/// Reads a plan from its JSON form. @throws error(parse) naming the JSON pointer of the first bad
/// field; error(schema) when schema_version is not 1. @complexity O(size of the JSON).
template <class = void>  // deferred instantiation, see memhealth.hpp
repair_plan plan_from_json(const nlohmann::json& j) {
  const auto& version = detail::plan_member(j, "", "schema_version");
  if (!version.is_number_integer()) detail::plan_fail("/schema_version", "expected an integer");
  if (version.get<std::int64_t>() != plan_schema_version)
    throw error(error_code::schema, "plan JSON: /schema_version: version " + version.dump() +
                                        " is not supported (expected " +
                                        std::to_string(plan_schema_version) + ")");
  repair_plan p;
  p.suspended = detail::plan_bool(detail::plan_member(j, "", "suspended"), "/suspended");
  p.suspend_reason = detail::plan_string_member(j, "", "suspend_reason");
  p.deferred = detail::plan_strings(detail::plan_member(j, "", "deferred"), "/deferred");
  if (auto it = j.find("detection"); it != j.end()) p.detection = detection_from_json(*it);
  if (auto it = j.find("blast_radius_threshold"); it != j.end()) {
    const std::int64_t t = detail::plan_integer(*it, "/blast_radius_threshold");
    if (t < 0) detail::plan_fail("/blast_radius_threshold", "expected a count >= 0");
    p.blast_radius_threshold = static_cast<std::size_t>(t);
  }
  if (auto it = j.find("store"); it != j.end()) p.store = store_fingerprint_from_json(*it);
  const auto& actions = detail::plan_member(j, "", "actions");
  if (!actions.is_array()) detail::plan_fail("/actions", "expected an array");
  p.actions.reserve(actions.size());
  for (std::size_t i = 0; i < actions.size(); ++i)
    p.actions.push_back(detail::plan_read_action(actions[i], "/actions/" + std::to_string(i)));
  return p;
}

}  // namespace memhealth
