#pragma once
/// @file pg_mapping.hpp
/// `memhealth::pg_mapping`: how the rows of a PostgreSQL table become memhealth records, so
/// `pg_store` (pg_store.hpp) can check and repair a host application's own table in place.
///
/// **Mapping file** (JSON object; `load_pg_mapping`):
/// ```json
/// {
///   "table": "public.memories",          // table, optionally schema-qualified
///   "key": ["id"],                       // its primary key columns (rows are written by them)
///   "id": "id",                          // record id: a source, or a list joined by id_separator
///   "id_separator": ":",                 // optional, default ":"
///   "fields": {                          // record fields (canonical JSON names) -> sources
///     "content": "payload->data",
///     "scope": "payload->user_id",
///     "created_at": "payload->created_at"
///   },
///   "vector": "vector",                  // embedding column (real[], float8[] or pgvector)
///   "rest": "payload->memhealth",        // optional: a JSONB place for every other field
///   "defaults": {"status": "active"}     // optional: text of fields a row does not hold
/// }
/// ```
/// Instead of `fields.scope`, the scope may be built of several places: `"scope_parts":
/// [["user:", "payload->user_id"], ["agent:", "payload->agent_id"]]` (label, source) with
/// `"scope_separator": "/"` (default "/"): the labelled texts of the parts a row holds, in order
/// (`user:ana/agent:bot`; none held: no scope). Such a scope is read, never written: a repair
/// that changes it fails before anything is written.
/// A *source* is a column (`"col"`) or a path into a JSON/JSONB column (`"col->a->b"`). Field
/// names are the keys of the canonical record JSON (docs/format.md): content, embedding_version,
/// metadata, created_at, updated_at, last_accessed_at, source, scope, status, kind, claim,
/// duplicate_of, related_ids, related_notes, supersedes, confidence, effective_weight. The
/// vector may instead live in another table, one row per record:
/// `"vector": {"table": "store_vectors", "column": "embedding", "key": ["prefix", "key"],
/// "where": {"field_name": "text"}}` (the key columns match the main table's key, in order).
/// Fields neither mapped nor covered by `rest` are not stored: a repair that would change one
/// fails with a clear error (nothing is written) instead of losing it.
///
/// Built-in mappings: `mem0` (mem0's pgvector table), `langgraph` (LangGraph's PostgresStore
/// `store` + `store_vectors`) and memhealth's own schema (`pg_own_mapping`, used by
/// `pg_store::create`).

#include <nlohmann/json.hpp>

#include <cstddef>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memhealth/config.hpp"

namespace memhealth {

/// Where a value lives in a row: a column, or a path of object keys into a JSON/JSONB column.
struct pg_source {
  std::string column;             ///< column name; empty = unmapped
  std::vector<std::string> path;  ///< keys into the column's JSON; empty = the column itself
  /// True when no column is named.
  [[nodiscard]] bool empty() const noexcept { return column.empty(); }
  /// `col` or `col->a->b`, as written in a mapping file.
  [[nodiscard]] std::string text() const {
    std::string s = column;
    for (const auto& k : path) s += "->" + k;
    return s;
  }
  friend bool operator==(const pg_source&, const pg_source&) = default;
};

/// Parses `col` or `col->a->b`. @throws error(invalid_argument) for an empty column or key.
[[nodiscard]] inline pg_source parse_pg_source(std::string_view s) {
  pg_source out;
  std::size_t at = 0;
  bool first = true;
  while (true) {
    const std::size_t arrow = s.find("->", at);
    const std::string part(s.substr(at, arrow == std::string_view::npos ? arrow : arrow - at));
    if (part.empty())
      throw error(error_code::invalid_argument,
                  "mapping: '" + std::string(s) + "' is not a column or a column->key path");
    if (first)
      out.column = part;
    else
      out.path.push_back(part);
    first = false;
    if (arrow == std::string_view::npos) break;
    at = arrow + 2;
  }
  return out;
}

/// A vector kept in another table, one row per record (LangGraph's `store_vectors`).
struct pg_vector_table {
  std::string table;             ///< the table, optionally schema-qualified
  std::string column;            ///< its vector column
  std::vector<std::string> key;  ///< its columns matching the main table's key, in order
  std::map<std::string, std::string> where;  ///< fixed column = text conditions
  friend bool operator==(const pg_vector_table&, const pg_vector_table&) = default;
};

/// How rows of one table become records (see the file comment).
struct pg_mapping {
  std::string name;                         ///< "mem0", "langgraph", "memhealth" or the file name
  std::string table;                        ///< the table, optionally schema-qualified
  std::vector<std::string> key;             ///< primary key columns (one or more)
  std::vector<pg_source> id;                ///< id sources, joined by `id_separator`
  std::string id_separator = ":";           ///< between the parts of a composite id
  std::map<std::string, pg_source> fields;  ///< canonical field name -> source
  /// The scope built of several places (label, source), instead of `fields["scope"]`; read only.
  std::vector<std::pair<std::string, pg_source>> scope_parts;
  std::string scope_separator = "/";            ///< between the labelled parts of `scope_parts`
  pg_source vector;                             ///< embedding column of the main table (or empty)
  std::optional<pg_vector_table> vector_table;  ///< or: the embedding in another table
  pg_source rest;  ///< JSON place for the fields not in `fields` (empty = not stored)
  /// Text values of fields a row does not hold (mem0 and LangGraph have no status: "active").
  /// A field at its default is not written to `rest` (so a rollback removes it again).
  std::map<std::string, std::string> defaults;
  /// memhealth's own schema only: the column holding the canonical JSON of the whole record
  /// (lossless); every other own column is derived from it.
  std::string record_column;
  friend bool operator==(const pg_mapping&, const pg_mapping&) = default;
};

/// Whether rows can be read by scope under this mapping (the scope has a column or JSON path of
/// its own: memhealth's schema, or `fields` names "scope"), as `pg_store::scope_selectable()`
/// says of an open store; a check can then be cut into jobs by scope (detect/pg_workers.hpp).
[[nodiscard]] inline bool pg_mapping_scope_selectable(const pg_mapping& m) {
  return !m.record_column.empty() || m.fields.count("scope") > 0 || !m.scope_parts.empty();
}

/// The canonical field names a mapping may name in `fields` (every key of the record JSON but
/// id and embedding, which have places of their own).
inline constexpr std::string_view pg_mappable_fields[] = {"content",         "embedding_version",
                                                          "metadata",        "created_at",
                                                          "updated_at",      "last_accessed_at",
                                                          "source",          "scope",
                                                          "status",          "kind",
                                                          "claim",           "duplicate_of",
                                                          "related_ids",     "related_notes",
                                                          "supersedes",      "confidence",
                                                          "effective_weight"};

/// Checks a mapping's shape (not the database: `pg_store::open` checks columns, types and
/// privileges). @throws error(invalid_argument) naming the problem.
inline void validate_pg_mapping(const pg_mapping& m) {
  auto bad = [&](const std::string& why) {
    throw error(error_code::invalid_argument, "mapping '" + m.name + "': " + why);
  };
  if (m.table.empty()) bad("no \"table\"");
  if (m.key.empty()) bad("no \"key\" (the table's primary key columns)");
  if (m.id.empty()) bad("no \"id\"");
  for (const auto& [f, src] : m.fields) {
    bool known = false;
    for (auto k : pg_mappable_fields) known = known || k == f;
    if (!known) bad("unknown record field \"" + f + "\" in \"fields\"");
    if (src.empty()) bad("field \"" + f + "\" has no source");
  }
  for (const auto& [f, v] : m.defaults) {
    (void)v;
    bool known = false;
    for (auto k : pg_mappable_fields) known = known || k == f;
    if (!known) bad("unknown record field \"" + f + "\" in \"defaults\"");
  }
  if (!m.vector.empty() && m.vector_table) bad("\"vector\" names both a column and a table");
  if (m.vector_table && m.vector_table->key.size() != m.key.size())
    bad("the vector table's \"key\" must have as many columns as the table's \"key\"");
  if (!m.vector.path.empty()) bad("the vector must be a column, not a JSON path");
  if (!m.scope_parts.empty() && m.fields.count("scope"))
    bad("the scope is named twice (\"fields\".scope and \"scope_parts\")");
  for (const auto& [label, src] : m.scope_parts)
    if (src.empty()) bad("scope part '" + label + "' has no source");
}

/// Parses a mapping from JSON text (see the file comment). `name` names it in messages.
/// @throws error(parse) for text that is not a JSON object; error(invalid_argument) for a wrong
///         shape (a missing table, key or id, an unknown field, a bad source).
[[nodiscard]] inline pg_mapping parse_pg_mapping(std::string_view text, std::string name) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& ex) {
    throw error(error_code::parse, "mapping '" + name + "': not JSON: " + ex.what());
  }
  if (!j.is_object()) throw error(error_code::parse, "mapping '" + name + "': not a JSON object");
  pg_mapping m;
  m.name = std::move(name);
  auto bad = [&](const std::string& why) {
    throw error(error_code::invalid_argument, "mapping '" + m.name + "': " + why);
  };
  auto str = [&](const nlohmann::json& v, const std::string& what) {
    if (!v.is_string()) bad(what + " must be a string");
    return v.get<std::string>();
  };
  auto strings = [&](const nlohmann::json& v, const std::string& what) {
    std::vector<std::string> out;
    if (v.is_string()) {
      out.push_back(v.get<std::string>());
    } else if (v.is_array()) {
      for (const auto& e : v) out.push_back(str(e, what + " entries"));
    } else {
      bad(what + " must be a string or an array of strings");
    }
    return out;
  };
  for (const auto& [k, v] : j.items()) {
    if (k == "table") {
      m.table = str(v, "\"table\"");
    } else if (k == "key") {
      m.key = strings(v, "\"key\"");
    } else if (k == "id") {
      for (const auto& s : strings(v, "\"id\"")) m.id.push_back(parse_pg_source(s));
    } else if (k == "id_separator") {
      m.id_separator = str(v, "\"id_separator\"");
    } else if (k == "fields") {
      if (!v.is_object()) bad("\"fields\" must be an object");
      for (const auto& [f, s] : v.items())
        m.fields[f] = parse_pg_source(str(s, "field \"" + f + "\""));
    } else if (k == "vector") {
      if (v.is_string()) {
        m.vector = parse_pg_source(v.get<std::string>());
      } else if (v.is_object()) {
        pg_vector_table t;
        for (const auto& [vk, vv] : v.items()) {
          if (vk == "table")
            t.table = str(vv, "\"vector.table\"");
          else if (vk == "column")
            t.column = str(vv, "\"vector.column\"");
          else if (vk == "key")
            t.key = strings(vv, "\"vector.key\"");
          else if (vk == "where" && vv.is_object())
            for (const auto& [c, x] : vv.items()) t.where[c] = str(x, "\"vector.where\" values");
          else
            bad("unknown key \"vector." + vk + "\"");
        }
        if (t.table.empty() || t.column.empty() || t.key.empty())
          bad("\"vector\" as an object needs \"table\", \"column\" and \"key\"");
        m.vector_table = std::move(t);
      } else {
        bad("\"vector\" must be a column name or an object");
      }
    } else if (k == "defaults") {
      if (!v.is_object()) bad("\"defaults\" must be an object");
      for (const auto& [f, x] : v.items()) m.defaults[f] = str(x, "default of \"" + f + "\"");
    } else if (k == "scope_parts") {
      if (!v.is_array()) bad("\"scope_parts\" must be an array of [label, source] pairs");
      for (const auto& e : v) {
        if (!e.is_array() || e.size() != 2)
          bad("\"scope_parts\" entries must be [label, source] pairs");
        m.scope_parts.emplace_back(str(e[0], "a scope part's label"),
                                   parse_pg_source(str(e[1], "a scope part's source")));
      }
    } else if (k == "scope_separator") {
      m.scope_separator = str(v, "\"scope_separator\"");
    } else if (k == "rest") {
      m.rest = parse_pg_source(str(v, "\"rest\""));
    } else {
      bad("unknown key \"" + k + "\"");
    }
  }
  validate_pg_mapping(m);
  return m;
}

/// A mapping as the JSON of a mapping file (see the file comment), so that
/// `parse_pg_mapping(pg_mapping_json(m).dump(), m.name) == m`. memhealth's own schema
/// (`record_column` set) has no mapping-file form: error(invalid_argument) for it (use
/// `pg_own_mapping(table)`).
[[nodiscard]] inline nlohmann::json pg_mapping_json(const pg_mapping& m) {
  if (!m.record_column.empty())
    throw error(error_code::invalid_argument,
                "mapping '" + m.name + "': memhealth's own schema has no mapping-file form");
  nlohmann::json j;
  j["table"] = m.table;
  j["key"] = m.key;
  auto ids = nlohmann::json::array();
  for (const auto& s : m.id) ids.push_back(s.text());
  j["id"] = ids;
  j["id_separator"] = m.id_separator;
  j["fields"] = nlohmann::json::object();
  for (const auto& [f, s] : m.fields) j["fields"][f] = s.text();
  if (!m.vector.empty()) j["vector"] = m.vector.text();
  if (m.vector_table)
    j["vector"] = {{"table", m.vector_table->table},
                   {"column", m.vector_table->column},
                   {"key", m.vector_table->key},
                   {"where", m.vector_table->where}};
  if (!m.scope_parts.empty()) {
    j["scope_parts"] = nlohmann::json::array();
    for (const auto& [label, src] : m.scope_parts) j["scope_parts"].push_back({label, src.text()});
    j["scope_separator"] = m.scope_separator;
  }
  if (!m.rest.empty()) j["rest"] = m.rest.text();
  if (!m.defaults.empty()) j["defaults"] = m.defaults;
  return j;
}

/// memhealth's own schema (`pg_store::create`): table `memhealth_records`, key `seq`, the
/// canonical JSON in `record`, the embedding in `embedding` (real[]).
[[nodiscard]] inline pg_mapping pg_own_mapping(std::string table = "memhealth_records") {
  pg_mapping m;
  m.name = "memhealth";
  m.table = std::move(table);
  m.key = {"seq"};
  m.id = {pg_source{"id", {}}};
  m.vector = pg_source{"embedding", {}};
  m.record_column = "record";
  return m;
}

/// mem0's pgvector table (default name `mem0`; mem0 names it after its collection): columns
/// `id` (uuid), `vector` (pgvector), `payload` (jsonb holding `data`, `user_id`, `agent_id`,
/// `run_id`, `created_at`, `updated_at`, `hash`, `metadata`). content = payload->data, scope =
/// `user:U/agent:A/run:R` of the ids a memory holds (as `import mem0`; read only), timestamps and
/// metadata from the payload; status "active", source "model_extracted" and kind "fact" (as `import
/// mem0` gives them) unless payload->memhealth (where every other field goes) says otherwise.
[[nodiscard]] inline pg_mapping pg_mem0_mapping(std::string table = "mem0") {
  pg_mapping m;
  m.name = "mem0";
  m.table = std::move(table);
  m.key = {"id"};
  m.id = {pg_source{"id", {}}};
  m.fields["content"] = pg_source{"payload", {"data"}};
  // the scope as `import mem0` builds it: user:U/agent:A/run:R, the parts a memory holds
  m.scope_parts = {{"user:", pg_source{"payload", {"user_id"}}},
                   {"agent:", pg_source{"payload", {"agent_id"}}},
                   {"run:", pg_source{"payload", {"run_id"}}}};
  m.fields["created_at"] = pg_source{"payload", {"created_at"}};
  m.fields["updated_at"] = pg_source{"payload", {"updated_at"}};
  m.fields["metadata"] = pg_source{"payload", {"metadata"}};
  m.vector = pg_source{"vector", {}};
  m.rest = pg_source{"payload", {"memhealth"}};
  m.defaults["status"] = "active";
  // as `import mem0` (io/import_mem0.hpp): mem0's memories are what its model extracted
  m.defaults["source"] = "model_extracted";
  m.defaults["kind"] = "fact";
  return m;
}

/// LangGraph's PostgresStore: table `store` (prefix, key, value jsonb, created_at, updated_at)
/// and `store_vectors` (prefix, key, field_name, embedding). id = prefix:key, scope = prefix,
/// content = value->text, the vector of field `text`; every other field in value->memhealth
/// (status "active" unless it says otherwise).
[[nodiscard]] inline pg_mapping pg_langgraph_mapping() {
  pg_mapping m;
  m.name = "langgraph";
  m.table = "store";
  m.key = {"prefix", "key"};
  m.id = {pg_source{"prefix", {}}, pg_source{"key", {}}};
  m.fields["content"] = pg_source{"value", {"text"}};
  m.fields["scope"] = pg_source{"prefix", {}};
  m.fields["created_at"] = pg_source{"created_at", {}};
  m.fields["updated_at"] = pg_source{"updated_at", {}};
  m.vector_table =
      pg_vector_table{"store_vectors", "embedding", {"prefix", "key"}, {{"field_name", "text"}}};
  m.rest = pg_source{"value", {"memhealth"}};
  m.defaults["status"] = "active";
  return m;
}

/// A mapping by name (`mem0`, `langgraph`, `memhealth`) or from a JSON file.
/// @throws error(io) when the file cannot be read; as `parse_pg_mapping`.
[[nodiscard]] inline pg_mapping load_pg_mapping(const std::string& name_or_file) {
  if (name_or_file == "mem0") return pg_mem0_mapping();
  if (name_or_file == "langgraph") return pg_langgraph_mapping();
  if (name_or_file == "memhealth") return pg_own_mapping();
  std::ifstream in(name_or_file, std::ios::binary);
  if (!in)
    throw error(error_code::io, name_or_file +
                                    ": cannot read the mapping file (or use a built-in mapping: "
                                    "mem0, langgraph)");
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_pg_mapping(ss.str(), name_or_file);
}

}  // namespace memhealth
