#pragma once
/// @file pg_table.hpp
/// The SQL side of `pg_store` (pg_store.hpp): a `pg_mapping` checked against the database
/// (columns, types, privileges), the SELECT that reads rows as records, the decoding of a row
/// into canonical record JSON, and the UPDATE statements that write a changed record back,
/// touching only the mapped columns and JSON paths whose value changed.
///
/// Values move as text: each mapped field is read as JSON (`to_jsonb(col)`, `col #> path`),
/// vectors as `real[]` text (pgvector's `vector` casts to it, so no pgvector client code is
/// needed), and written with a cast to the column's own type.

#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/record/time.hpp"
#include "memhealth/store/pg_conn.hpp"
#include "memhealth/store/pg_mapping.hpp"

#include <libpq-fe.h>

namespace memhealth::detail::pg {

// One column of a table as the catalog describes it.
struct column_info {
  std::string type;     // format_type(): "text", "jsonb", "real[]", "vector(3)", ...
  std::string typname;  // pg_type.typname: "text", "jsonb", "_float4", "vector", ...
};

// One statement with its text parameters (nullopt = NULL).
struct statement {
  std::string sql;
  std::vector<std::optional<std::string>> params;
};

// The shortest round-trip text of a float32 ("NaN", "Infinity" and "-Infinity" as PostgreSQL
// writes them).
inline void append_float(std::string& out, float f) {
  if (f != f) {
    out += "NaN";
    return;
  }
  if (f == std::numeric_limits<float>::infinity()) {
    out += "Infinity";
    return;
  }
  if (f == -std::numeric_limits<float>::infinity()) {
    out += "-Infinity";
    return;
  }
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, f);
  out.append(buf, r.ptr);
}

// A vector as an array literal: "{1,2.5}" (real[]) or "[1,2.5]" (pgvector).
inline std::string vector_text(std::span<const float> v, bool pgvector) {
  std::string s(1, pgvector ? '[' : '{');
  for (std::size_t k = 0; k < v.size(); ++k) {
    if (k) s += ',';
    append_float(s, v[k]);
  }
  s += pgvector ? ']' : '}';
  return s;
}

// Parses real[] text "{1,2.5,NaN}" (one dimension). @return false on anything else (NULL
// elements, nested arrays, words other than NaN/Infinity).
inline bool parse_vector_text(std::string_view s, std::vector<float>& out) {
  out.clear();
  if (s.size() < 2 || s.front() != '{' || s.back() != '}') return false;
  s = s.substr(1, s.size() - 2);
  while (!s.empty()) {
    const std::size_t comma = s.find(',');
    std::string_view e = s.substr(0, comma);
    float f = 0;
    if (e == "NaN") {
      f = std::numeric_limits<float>::quiet_NaN();
    } else if (e == "Infinity") {
      f = std::numeric_limits<float>::infinity();
    } else if (e == "-Infinity") {
      f = -std::numeric_limits<float>::infinity();
    } else {
      auto r = std::from_chars(e.data(), e.data() + e.size(), f);
      if (r.ec != std::errc() || r.ptr != e.data() + e.size()) return false;
    }
    out.push_back(f);
    if (comma == std::string_view::npos) break;
    s = s.substr(comma + 1);
  }
  return true;
}

// Parses a real[] in binary format (array_send: int32 ndim, int32 has-nulls flag, element type
// oid, per dimension int32 size and lower bound, then per element int32 length and 4 bytes,
// all in network byte order). Accepts exactly what parse_vector_text accepts of the same value:
// one dimension starting at 1 (an empty array is an empty vector), no NULLs; a NaN becomes
// quiet_NaN() as the text "NaN" does. @return false on anything else.
inline bool parse_vector_binary(const char* p, std::size_t n, std::vector<float>& out) {
  out.clear();
  auto u32 = [&](std::size_t at) {
    const auto* b = reinterpret_cast<const unsigned char*>(p + at);
    return (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) |
           std::uint32_t{b[3]};
  };
  if (n < 12) return false;
  const std::uint32_t ndim = u32(0);
  if (ndim == 0) return n == 12;
  if (ndim != 1 || u32(4) != 0 || u32(8) != 700 || n < 20 || u32(16) != 1) return false;
  const std::size_t count = u32(12);
  if (n != 20 + count * 8) return false;
  out.resize(count);
  for (std::size_t k = 0; k < count; ++k) {
    if (u32(20 + k * 8) != 4) return false;
    float f = std::bit_cast<float>(u32(24 + k * 8));
    if (f != f) f = std::numeric_limits<float>::quiet_NaN();
    out[k] = f;
  }
  return true;
}

// A mapping bound to a database: quoted names, column types, the read query and the writers.
class table_access {
 public:
  table_access() = default;

  // Checks the mapping against the catalog over `c`: the table exists, every mapped column
  // exists with a usable type (JSON paths in jsonb columns, the vector a real[], double
  // precision[] or pgvector column), and the role may SELECT (and UPDATE, unless read_only)
  // every column it needs. `where` names the store in messages.
  // @throws error(schema) for a missing table or column or a wrong type; error(precondition)
  //         for a missing privilege; error(io) when the catalog cannot be read.
  table_access(PGconn* c, pg_mapping m, bool read_only, std::string where)
      : m_(std::move(m)), where_(std::move(where)) {
    validate_pg_mapping(m_);
    main_ = table_ident(c, m_.table);
    main_cols_ = columns(c, m_.table, main_oid_);
    auto need = [&](const std::map<std::string, column_info>& cols, const std::string& table,
                    const std::string& oid, const std::string& col, bool write) {
      auto it = cols.find(col);
      if (it == cols.end())
        throw error(error_code::schema, where_ + ": mapping '" + m_.name + "': table '" + table +
                                            "' has no column '" + col + "'");
      check_privilege(c, table, oid, col, "SELECT");
      if (write && !read_only) check_privilege(c, table, oid, col, "UPDATE");
      return it->second;
    };
    for (const auto& k : m_.key) need(main_cols_, m_.table, main_oid_, k, false);
    for (const auto& s : m_.id) need(main_cols_, m_.table, main_oid_, s.column, false);
    auto json_col = [&](const pg_source& s, const std::string& what) {
      const auto info = need(main_cols_, m_.table, main_oid_, s.column, true);
      if (!s.path.empty() && info.typname != "jsonb")
        throw error(error_code::schema, where_ + ": mapping '" + m_.name + "': " + what + " '" +
                                            s.text() + "' is a path into column '" + s.column +
                                            "' of type " + info.type + "; paths need jsonb");
    };
    for (const auto& [f, s] : m_.fields) json_col(s, "field " + f);
    for (const auto& [label, src] : m_.scope_parts) {  // read only: SELECT suffices
      const auto info = need(main_cols_, m_.table, main_oid_, src.column, false);
      if (!src.path.empty() && info.typname != "jsonb")
        throw error(error_code::schema, where_ + ": mapping '" + m_.name + "': scope part '" +
                                            src.text() + "' is a path into column '" + src.column +
                                            "' of type " + info.type + "; paths need jsonb");
    }
    if (!m_.rest.empty()) {
      json_col(m_.rest, "rest");
      // a rest of its own column holds an object that repairs edit key by key: jsonb only
      const auto& info = main_cols_.at(m_.rest.column);
      if (m_.rest.path.empty() && info.typname != "jsonb")
        throw error(error_code::schema, where_ + ": mapping '" + m_.name + "': rest '" +
                                            m_.rest.text() + "' is a column of type " + info.type +
                                            "; the rest place must be jsonb (a column or a path "
                                            "into one)");
    }
    if (!m_.record_column.empty()) need(main_cols_, m_.table, main_oid_, m_.record_column, true);
    if (!m_.vector.empty()) {
      vector_type_ = need(main_cols_, m_.table, main_oid_, m_.vector.column, true);
      check_vector_type(m_.table, m_.vector.column, vector_type_);
    }
    if (m_.vector_table) {
      const auto& vt = *m_.vector_table;
      vt_ = table_ident(c, vt.table);
      vt_cols_ = columns(c, vt.table, vt_oid_);
      for (const auto& k : vt.key) need(vt_cols_, vt.table, vt_oid_, k, false);
      for (const auto& [col, v] : vt.where) need(vt_cols_, vt.table, vt_oid_, col, false);
      vector_type_ = need(vt_cols_, vt.table, vt_oid_, vt.column, true);
      check_vector_type(vt.table, vt.column, vector_type_);
    }
    build_select(c);
  }

  [[nodiscard]] const pg_mapping& mapping() const noexcept { return m_; }
  [[nodiscard]] std::size_t key_size() const noexcept { return m_.key.size(); }

  // SELECT key texts, id parts, record/rest/field JSON and the vector for every row, in key
  // order (the vector as real[]: read it with binary results, see parse_vector_binary, or as
  // text); select_one_for_update() adds WHERE key = $1.. and FOR UPDATE OF the main table
  // (the vector as text).
  [[nodiscard]] const std::string& select_all() const noexcept { return select_all_; }
  // select_all() with each row's vector replaced by its element count (int4, NULL when there is
  // no vector; read_vector gives it as the length): the rows without their vectors' contents.
  [[nodiscard]] std::string select_all_lengths() const {
    return "SELECT " + length_cols_ + " FROM " + from_ + " ORDER BY " + order_;
  }
  [[nodiscard]] const std::string& select_one_for_update() const noexcept { return select_one_; }
  // select_one_for_update() without the lock (a dry run's look at the row as it is now).
  [[nodiscard]] const std::string& select_one() const noexcept { return select_one_plain_; }

  // The SQL text expression of a row's record scope (`COALESCE(..., '')`: the scope a record read
  // from the row has, "" when absent), or "" when the mapping gives no place of its own to the
  // scope (it is then in `rest`, a default or nowhere, and rows cannot be selected by it).
  [[nodiscard]] const std::string& scope_expression() const noexcept { return scope_sql_; }

  // The scope's place as an index expression, for a `CREATE INDEX ON T (...)` hint: `scope`,
  // `user_id`, `(user_id::text)`, `(payload #>> '{user_id}')`; "" when the scope has none.
  [[nodiscard]] const std::string& scope_index_expression() const noexcept { return scope_hint_; }

  // The main table's OID as text (to_regclass of the mapped name quoted as the reads quote it:
  // exact, case-sensitive, one optional schema before a dot; search_path applied).
  [[nodiscard]] const std::string& table_oid() const noexcept { return main_oid_; }

  // select_all() restricted to the rows whose scope is one of `scopes` (texts quoted as SQL
  // literals over `c`). The condition names the scope's place without COALESCE (`place =
  // ANY(...)`, `OR place IS NULL` when "" is one of them: the same rows), so an index on the
  // scope column (memhealth's schema has one) selects them instead of a scan of the whole table
  // per job. @throws error(precondition) when scope_expression() is empty.
  [[nodiscard]] std::string select_scopes(PGconn* c, const std::vector<std::string>& scopes,
                                          bool vectors = true) const {
    if (scope_sql_.empty())
      throw error(error_code::precondition,
                  where_ + ": mapping '" + m_.name +
                      "' has no column or JSON path of its own for the scope; rows cannot be "
                      "selected by scope");
    std::string list = "ARRAY[";
    for (std::size_t k = 0; k < scopes.size(); ++k) list += (k ? ", " : "") + literal(c, scopes[k]);
    list += "]::text[]";
    const bool none = std::find(scopes.begin(), scopes.end(), std::string()) != scopes.end();
    return "SELECT " + (vectors ? read_cols_ : length_cols_) + " FROM " + from_ + " WHERE (" +
           scope_place_ + " = ANY(" + list + ")" +
           (none ? " OR " + scope_place_ + " IS NULL" : std::string()) + ") ORDER BY " + order_;
  }

  // select_all() restricted to the rows whose record id (the mapping's id sources as text,
  // joined by its separator, as a record read from the row has it) is one of `ids` (texts quoted
  // as SQL literals over `c`): the rows a write-ahead log or a plan names, without the rest of
  // the table, and every row that shares the mapping's key with one of them, so rows sharing a
  // key are load issues here as in a read of every row (rows sharing an id are all selected
  // too). The server evaluates the id of every row (no index serves the joined text); only those
  // rows leave it.
  [[nodiscard]] std::string select_ids(PGconn* c, const std::vector<std::string>& ids,
                                       bool vectors = true) const {
    std::string list = "ARRAY[";
    for (std::size_t k = 0; k < ids.size(); ++k) list += (k ? ", " : "") + literal(c, ids[k]);
    list += "]::text[]";
    std::string key;
    for (const auto& k : m_.key) key += (key.empty() ? "t." : ", t.") + q(k);
    const std::string named = "(" + id_sql_ + ") = ANY(" + list + ")";
    return "SELECT " + (vectors ? read_cols_ : length_cols_) + " FROM " + from_ + " WHERE " +
           named + " OR (" + key + ") IN (SELECT " + key + " FROM " + main_ + " AS t WHERE " +
           named + ") ORDER BY " + order_;
  }

  // One pass over the table's rows, grouped: (scope text, or NULL when scope_expression() is
  // empty; the vector's element count, NULL when there is no vector; rows). The vector is cast
  // as the selects cast it (`::real[]`), so a count is the length of the record's embedding.
  [[nodiscard]] std::string census_query() const {
    const std::string scope = scope_sql_.empty() ? std::string("NULL::text") : scope_sql_;
    if (m_.vector_table)  // per main-table row: several vector rows read as none (pg_store)
      return "SELECT s, CASE WHEN n > 1 THEN 0 ELSE l END, count(*) FROM (SELECT " + scope +
             " AS s, count(*) AS n, max(" + length_sql(vector_sql_) + ") AS l FROM " + from_ +
             " GROUP BY t.ctid, 1) AS x GROUP BY 1, 2";
    return "SELECT " + scope + ", " +
           (vector_sql_.empty() ? std::string("NULL::int") : length_sql(vector_sql_)) +
           ", count(*) FROM " + from_ + " GROUP BY 1, 2";
  }

  // memhealth's own schema: the derived `scope` column of row `row` (nullopt for NULL), which
  // the census and the jobs select by; a record whose own scope differs is not read (pg_store).
  [[nodiscard]] std::optional<std::string> own_scope(const PGresult* r, int row) const {
    if (m_.record_column.empty() || PQgetisnull(r, row, own_scope_col_)) return std::nullopt;
    return std::string(PQgetvalue(r, row, own_scope_col_));
  }

  // What could not be read of a row: (field, reason). The record is kept without it.
  using row_problems = std::vector<std::pair<std::string, std::string>>;

  // The canonical record JSON (one line, no embedding) of row `row` of a result of one of the
  // selects, and its vector (empty when NULL). `problems` null: @throws error(parse) for a vector
  // that is not a one-dimensional numeric array without NULLs, a rest or record value that is not
  // a JSON object. `problems` given: nothing throws; each such part is left out of the record
  // (the vector empty, the rest's keys unread) and named in `problems`, and a record column that
  // is not one JSON object gives "" (no record: the row is skipped).
  // `check_record` false (memhealth's schema only): the record column is only checked to be on
  // one line and to begin as an object, not parsed; the caller parses it anyway (parse_jsonl),
  // which reports a line that is not a record.
  // `length`, when given, gets the vector's element count: vec.size(), or the count a
  // select_all_lengths() row holds (vec then stays empty; 0 for a malformed vector, a problem).
  std::string row_json(const PGresult* r, int row, std::vector<float>& vec,
                       bool check_record = true, std::size_t* length = nullptr,
                       row_problems* problems = nullptr) const {
    int col = static_cast<int>(m_.key.size());
    nlohmann::json j = nlohmann::json::object();
    auto bad = [&](std::string field, std::string what) {
      if (!problems)
        throw error(error_code::parse, where_ + ": row " + row_label(r, row) + ": " + what);
      problems->emplace_back(std::move(field), std::move(what));
    };
    std::string id;
    for (std::size_t k = 0; k < m_.id.size(); ++k, ++col) {
      if (k) id += m_.id_separator;
      id += cell(r, row, col);
    }
    if (!m_.record_column.empty()) {  // own schema: the canonical JSON itself (lossless)
      std::string text = cell(r, row, col++);
      const std::size_t first = text.find_first_not_of(" \t\r");
      const bool object = check_record ? nlohmann::json::parse(text, nullptr, false).is_object()
                                       : first != std::string::npos && text[first] == '{';
      if (!object || text.find('\n') != std::string::npos) {
        bad(m_.record_column, "column '" + m_.record_column +
                                  "' is not one JSON object on one line; the row is not read");
        return {};
      }
      ++col;  // the derived scope column (own_scope)
      read_vector(r, row, col, vec, length, problems);
      return text;
    }
    if (!m_.rest.empty()) {
      const std::string place = m_.rest.text();
      if (!PQgetisnull(r, row, col)) {
        auto v = nlohmann::json::parse(PQgetvalue(r, row, col), nullptr, false);
        if (v.is_object()) {
          for (auto& [k, x] : v.items()) {
            // a key the mapping places elsewhere: read from its place, never from here (a
            // write goes to the mapped place, which a rollback could not take away again)
            if (m_.fields.count(k) || k == "id" || (k == "embedding" && has_vector())) {
              bad(place, "'" + place + "' holds the key '" + k +
                             "', which the mapping reads from " +
                             (k == "id"          ? std::string("its id columns")
                              : k == "embedding" ? std::string("its vector")
                                                 : "'" + m_.fields.at(k).text() + "'") +
                             "; the key was not read (rename or remove it)");
              continue;
            }
            j[k] = x;
          }
        } else if (!v.is_null()) {
          bad(place, "'" + place + "' is not a JSON object (" + std::string(v.type_name()) +
                         "); its fields were not read");
        }
      }
      ++col;
    }
    for (const auto& [f, s] : m_.fields) {
      (void)s;
      if (!PQgetisnull(r, row, col)) {
        auto v = nlohmann::json::parse(PQgetvalue(r, row, col), nullptr, false);
        if (v.is_discarded())
          bad(f, "field " + f + " is not JSON; it was not read");
        else if (v.is_null())
          j.erase(f);
        else
          j[f] = std::move(v);
      }
      ++col;
    }
    if (!m_.scope_parts.empty()) {  // the scope built of several places (NULL: none)
      if (!PQgetisnull(r, row, col)) {
        auto v = nlohmann::json::parse(PQgetvalue(r, row, col), nullptr, false);
        if (v.is_string()) j["scope"] = std::move(v);
      } else {
        j.erase("scope");
      }
      ++col;
    }
    for (const auto& name : shape_columns_) {
      if (!PQgetisnull(r, row, col)) {
        const std::string type = cell(r, row, col);
        if (type != "object" && type != "null") {
          std::string places;  // the record fields mapped into the column
          for (const auto& [f, s] : m_.fields)
            if (s.column == name && !s.path.empty()) places += (places.empty() ? "" : ", ") + f;
          if (!m_.rest.empty() && m_.rest.column == name && !m_.rest.path.empty())
            places += (places.empty() ? "" : ", ") + std::string("the other fields");
          bad(name, "column '" + name + "' holds a JSON " + type + ", not an object; " +
                        (places.empty() ? std::string("the id") : places) +
                        " could not be read from it");
        }
      }
      ++col;
    }
    j["id"] = id;
    for (const auto& [f, v] : m_.defaults)
      if (!j.contains(f)) j[f] = v;
    read_vector(r, row, col, vec, length, problems);
    try {
      return j.dump();
    } catch (const nlohmann::json::exception& ex) {
      // invalid UTF-8 in a key or value: the record cannot be written as one JSON line
      bad("", std::string(ex.what()) + "; the row is not read");
      return {};
    }
  }

  // The time fields (created_at, updated_at, last_accessed_at) of row `row` of a select that a
  // write could not give back exactly, nor a rollback after it, with the reason: memhealth keeps
  // a time as milliseconds and an offset and writes it in one form (format_timestamp,
  // "2024-03-01T10:00:31.123-07:00", "...Z" for UTC). So (1) a time held finer than milliseconds
  // ("...:31.123456-07:00", a timestamptz with microseconds), in any place; (2) in a JSON value or
  // a text column, a time whose text is not that form (mem0's Python isoformat
  // "...:31.123000-07:00" or "...:31-07:00", "+00:00", a space for the T) or a number (epoch
  // milliseconds): the write would put the form's text there. A timestamptz or timestamp column
  // holds the instant, not the text: (1) only. memhealth's own schema: none.
  [[nodiscard]] std::vector<std::pair<std::string, std::string>> inexact_times(const PGresult* r,
                                                                               int row) const {
    std::vector<std::pair<std::string, std::string>> out;
    if (!m_.record_column.empty()) return out;
    const auto is_time = [](const std::string& f) {
      return f == "created_at" || f == "updated_at" || f == "last_accessed_at";
    };
    const auto check = [&](const std::string& f, const nlohmann::json& v, bool typed) {
      if (v.is_string()) {
        const std::string& t = v.get_ref<const std::string&>();
        // the fraction after the seconds: digits after the first '.' following a 'T' or ' '
        const auto dot = t.find('.', std::min(t.find_first_of("T t"), t.size()));
        bool beyond = false;  // a digit after the third that is not 0
        if (dot != std::string::npos) {
          std::size_t n = 0;
          while (dot + 1 + n < t.size() && t[dot + 1 + n] >= '0' && t[dot + 1 + n] <= '9') ++n;
          for (std::size_t k = 3; k < n; ++k) beyond = beyond || t[dot + 1 + k] != '0';
        }
        if (beyond) {
          out.emplace_back(f, "holds a time finer than milliseconds (\"" + t +
                                  "\"), which memhealth keeps to the millisecond");
        } else if (!typed) {
          if (const auto ts = parse_timestamp(t))
            if (std::string form = format_timestamp(*ts); form != t)
              out.emplace_back(f, "holds its time as \"" + t +
                                      "\", which memhealth would write as \"" + form + "\"");
        }
      } else if (v.is_number() && !typed) {
        out.emplace_back(f, "holds its time as the number " + v.dump() +
                                ", which memhealth would write as a date-time text");
      }
    };
    int col = fields_col_;
    for (const auto& [f, s] : m_.fields) {
      if (is_time(f) && !PQgetisnull(r, row, col)) {
        const std::string& type = main_cols_.at(s.column).typname;
        check(f, nlohmann::json::parse(PQgetvalue(r, row, col), nullptr, false),
              s.path.empty() && (type == "timestamptz" || type == "timestamp"));
      }
      ++col;
    }
    // the time fields the rest place holds (JSON values: their text counts)
    if (!m_.rest.empty() && !PQgetisnull(r, row, rest_col_)) {
      const auto rest = nlohmann::json::parse(PQgetvalue(r, row, rest_col_), nullptr, false);
      if (rest.is_object())
        for (const auto& [k, v] : rest.items())
          if (is_time(k) && !m_.fields.count(k)) check(k, v, false);
    }
    return out;
  }

  // The places of row `row` (a select_one_for_update() row) whose NULL a path edit would turn
  // into an object that no rollback can turn back: every jsonb column read through paths that
  // holds SQL NULL or JSON null, and "rest" when the rest place itself holds JSON null.
  [[nodiscard]] std::set<std::string> frozen_places(const PGresult* r, int row) const {
    std::set<std::string> out;
    if (!m_.record_column.empty()) return out;
    if (!m_.rest.empty()) {
      const int col = rest_col_;
      const bool sql_null = PQgetisnull(r, row, col);
      const std::string_view v = sql_null ? std::string_view() : PQgetvalue(r, row, col);
      if (!m_.rest.path.empty()) {
        // a rest place that is null, or an empty object (which memhealth never leaves: after
        // a repair added keys, a rollback would remove the whole place, not give back the {})
        if (!sql_null && (v == "null" || v == "{}")) out.insert("rest");
      } else if (sql_null || v == "null") {
        out.insert(m_.rest.column);  // a rest column of its own that holds NULL
      }
    }
    int col = shape_col_;
    for (const auto& name : shape_columns_) {
      if (PQgetisnull(r, row, col) || std::string_view(PQgetvalue(r, row, col)) == "null")
        out.insert(name);
      ++col;
    }
    return out;
  }

  static constexpr Oid int4_oid = 23;  // pg_type.oid of int4 (src/include/catalog/pg_type.dat)
  // The vector in column `col` of row `row` (empty when there is none or it is NULL), in text or
  // binary format; a select_all_lengths() row's int4 count goes to `length` instead (-1, the
  // length expression's mark of a malformed vector: a problem, length 0). Problems as row_json.
  void read_vector(const PGresult* r, int row, int col, std::vector<float>& vec,
                   std::size_t* length = nullptr, row_problems* problems = nullptr) const {
    static const std::string malformed =
        "the vector is not a one-dimensional array of numbers without NULLs";
    auto bad = [&] {
      if (!problems)
        throw error(error_code::parse, where_ + ": row " + row_label(r, row) + ": " + malformed);
      problems->emplace_back("embedding", malformed + "; it was not read");
    };
    vec.clear();
    if (has_vector() && PQftype(r, col) == int4_oid) {  // select_all_lengths(): the count only
      std::size_t n = 0;
      if (!PQgetisnull(r, row, col)) {
        const char* p = PQgetvalue(r, row, col);
        std::int64_t v = 0;
        if (PQfformat(r, col) == 1 && PQgetlength(r, row, col) == 4) {
          std::uint32_t u = 0;
          for (int k = 0; k < 4; ++k) u = (u << 8) | static_cast<unsigned char>(p[k]);
          v = static_cast<std::int32_t>(u);
        } else {
          v = std::strtoll(p, nullptr, 10);
        }
        if (v < 0)
          bad();
        else
          n = static_cast<std::size_t>(v);
      }
      if (length) *length = n;
      return;
    }
    if (has_vector() && !PQgetisnull(r, row, col) &&
        !(PQfformat(r, col) == 1
              ? parse_vector_binary(PQgetvalue(r, row, col),
                                    static_cast<std::size_t>(PQgetlength(r, row, col)), vec)
              : parse_vector_text(PQgetvalue(r, row, col), vec))) {
      vec.clear();
      bad();
    }
    if (length) *length = vec.size();
  }

  // A vector's element count as the census and the lean reads select it: -1 for a vector that
  // is not a one-dimensional array from index 1 without NULLs (what row_json reports as a
  // problem: the parsers refuse other bounds, which a write could not keep), so every
  // read counts a row's vector alike. `v` is the vector column as the selects name it.
  static std::string length_sql(const std::string& v) {
    const std::string a = v + "::real[]";
    return "CASE WHEN array_ndims(" + a + ") > 1 OR array_lower(" + a +
           ", 1) <> 1 THEN -1 WHEN array_position(" + a +
           ", NULL) IS NOT NULL THEN -1 ELSE cardinality(" + a + ") END";
  }

  // The key texts of row `row` (the first key_size() columns of a select).
  std::vector<std::string> row_key(const PGresult* r, int row) const {
    std::vector<std::string> k;
    for (std::size_t i = 0; i < m_.key.size(); ++i) k.push_back(cell(r, row, static_cast<int>(i)));
    return k;
  }

  // The statements that turn a row holding `before` (canonical JSON `cb` without embedding,
  // vector `vb`) into `after` (`ca`, `va`): only the mapped places whose value differs are
  // written (own schema: `record` and the derived columns whose value differs). A `rest` place
  // inside a jsonb column is written key by key (jsonb_set / #- of rest->key), so keys the change
  // does not touch (unknown ones, ones at their default) keep their exact JSON; a key changed back
  // to its default, or removed, is removed (and the whole place when only defaults would be left in
  // it): a row that held the default explicitly in a key the repair itself changed gets it back as
  // absent, which reads the same.
  // @throws error(precondition) when the id would change or a changed field has no
  // place in the mapping (nothing is written).
  // `frozen` (frozen_places of the row as it is now): jsonb columns, and "rest" for the rest
  // place, that hold SQL NULL or JSON null; an edit inside one is refused (see frozen_places).
  std::vector<statement> updates(const std::vector<std::string>& key, const std::string& cb,
                                 std::span<const float> vb, const std::string& ca,
                                 std::span<const float> va,
                                 const std::set<std::string>& frozen = {}) const {
    const nlohmann::json jb = nlohmann::json::parse(cb), ja = nlohmann::json::parse(ca);
    if (jb.value("id", std::string()) != ja.value("id", std::string()))
      throw error(error_code::precondition,
                  where_ + ": a record id cannot be changed in a PostgreSQL store");
    std::vector<statement> out;
    statement up;
    std::string sets;
    auto param = [&](std::optional<std::string> v) {
      up.params.push_back(std::move(v));
      // (appended, not "$" + to_string(...): g++ 12 at -O3 warns -Wrestrict on that form)
      std::string ref = "$";
      ref += std::to_string(up.params.size());
      return ref;
    };
    // the JSON value of a field (null when absent)
    auto val = [](const nlohmann::json& j, const std::string& f) {
      auto it = j.find(f);
      return it == j.end() ? nlohmann::json() : *it;
    };
    // assignments: column -> (whole value | list of path edits)
    std::map<std::string, std::optional<nlohmann::json>> whole;
    std::map<std::string, std::vector<std::pair<std::vector<std::string>, nlohmann::json>>> paths;
    bool ensure_rest = false;  // a key is set inside the rest place
    // the rest place: one edit per key whose value changes (keys the repair does not change,
    // unknown ones and ones at their default included, are never written); a key going to its
    // default is removed (a field at its default is not written); when no key but defaults is
    // left, the whole place is removed (as a row without it reads)
    auto rest_edits = [&](const nlohmann::json& fa, const nlohmann::json& fb,
                          const nlohmann::json& ra, const nlohmann::json& rb, auto& out,
                          bool whole_column = false) {
      auto& edits = out[m_.rest.column];
      if (!whole_column && ra.empty() && !rb.empty()) {
        edits.emplace_back(m_.rest.path, nlohmann::json());
        return;
      }
      std::set<std::string> names;
      for (auto& [k, v] : fa.items()) names.insert(k);
      for (auto& [k, v] : fb.items()) names.insert(k);
      for (const auto& k : names) {
        if (k == "id" || k == "embedding" || m_.fields.count(k)) continue;
        if (k == "scope" && !m_.scope_parts.empty()) continue;  // read only (refused above)
        const nlohmann::json a = val(fa, k), b = val(fb, k);
        if (a == b) continue;
        auto path = m_.rest.path;
        path.push_back(k);
        auto d = m_.defaults.find(k);
        if (a.is_null() || (d != m_.defaults.end() && a == nlohmann::json(d->second))) {
          edits.emplace_back(std::move(path), nlohmann::json());
        } else {
          edits.emplace_back(std::move(path), a);
          ensure_rest = true;
        }
      }
    };
    auto assign = [&](const pg_source& s, nlohmann::json v) {
      if (s.path.empty())
        whole[s.column] = std::move(v);
      else
        paths[s.column].emplace_back(s.path, std::move(v));
    };
    if (!m_.record_column.empty()) {
      // own schema: the record column and those of the columns derived from it whose value
      // changes (a status change writes `record` and `status`, not every derived column)
      if (ca != cb) {
        std::map<std::string, std::optional<nlohmann::json>> now, was;
        own_columns(ca, ja, now);
        own_columns(cb, jb, was);
        for (auto& [col, v] : now)
          if (col == "record" || was.at(col) != v) whole[col] = std::move(v);
      }
    } else {
      if (!m_.scope_parts.empty() && val(ja, "scope") != val(jb, "scope"))
        throw error(error_code::precondition,
                    where_ + ": mapping '" + m_.name +
                        "' builds the scope of several places (scope_parts), which memhealth "
                        "reads but does not write; a repair cannot change it; nothing written");
      for (const auto& [f, s] : m_.fields)
        if (val(ja, f) != val(jb, f)) assign(s, val(ja, f));
      nlohmann::json ra = rest_of(ja), rb = rest_of(jb);
      if (ra != rb) {
        if (m_.rest.empty()) {
          std::string names;
          for (auto& [k, v] : ra.items())
            if (val(rb, k) != v) names += (names.empty() ? "" : ", ") + k;
          for (auto& [k, v] : rb.items())
            if (!ra.contains(k)) names += (names.empty() ? "" : ", ") + k;
          throw error(error_code::precondition,
                      where_ + ": mapping '" + m_.name + "' has no place for the field(s) " +
                          names +
                          " this repair changes (map them, or name a \"rest\" JSONB "
                          "place); nothing written");
        }
        if (m_.rest.path.empty()) {  // a column of its own: the whole object
          if (frozen.count(m_.rest.column))
            throw error(error_code::precondition,
                        where_ + ": row " + key_label(key) + ": column '" + m_.rest.column +
                            "' holds NULL (SQL NULL or JSON null); a repair that writes into it "
                            "could not be rolled back to that NULL; nothing written");
          // key by key, as in a rest place of a path: keys the repair does not change stay as
          // they are (the whole object written back would drop keys at their default, such as
          // "related_ids": [], and rewrite numbers such as 1.0)
          rest_edits(ja, jb, ra, rb, paths, true);
        } else {
          rest_edits(ja, jb, ra, rb, paths);
        }
      }
    }
    const bool vec_changed = !same_bits(va, vb);
    if (vec_changed && !m_.vector.empty())
      whole[m_.vector.column] = nlohmann::json(vector_text(va, pgvector()));
    for (auto& [col, v] : whole) {
      const column_info& ci = main_cols_.at(col);
      std::optional<std::string> text;
      if (v && !v->is_null())
        text = v->is_string() && ci.typname != "jsonb" && ci.typname != "json"
                   ? v->get<std::string>()
                   : v->dump();
      if (col == m_.vector.column && vec_changed && va.empty()) text.reset();
      sets +=
          (sets.empty() ? "" : ", ") + q(col) + " = CAST(" + param(text) + " AS " + ci.type + ")";
    }
    for (auto& [col, edits] : paths) {
      bool rest_null = false;  // an edit inside a rest place that holds JSON null
      if (col == m_.rest.column && !m_.rest.path.empty() && frozen.count("rest"))
        for (const auto& [path, v] : edits)
          rest_null =
              rest_null || (path.size() >= m_.rest.path.size() &&
                            std::equal(m_.rest.path.begin(), m_.rest.path.end(), path.begin()));
      if (!edits.empty() && (frozen.count(col) || rest_null))
        throw error(error_code::precondition,
                    where_ + ": row " + key_label(key) + ": " +
                        (frozen.count(col)
                             ? "column '" + col +
                                   "' holds NULL (SQL NULL or JSON null); a repair that writes "
                                   "into it could not be rolled back to that NULL"
                             : "the rest place '" + m_.rest.text() +
                                   "' holds null or an empty object; a repair that writes into "
                                   "it could not be rolled back to exactly that") +
                        "; nothing written");
      std::string e = "COALESCE(t." + q(col) + ", '{}'::jsonb)";
      if (col == m_.rest.column && !m_.rest.path.empty() && ensure_rest) {
        // jsonb_set creates only the last key of a path: make the rest place an object first
        // (an object there is kept as it is)
        std::string arr = "ARRAY[";
        for (std::size_t k = 0; k < m_.rest.path.size(); ++k)
          arr += (k ? ", " : "") + param(m_.rest.path[k]);
        arr += "]::text[]";
        e = "jsonb_set(" + e + ", " + arr + ", CASE WHEN jsonb_typeof(t." + q(col) + " #> " + arr +
            ") = 'object' THEN t." + q(col) + " #> " + arr + " ELSE '{}'::jsonb END, true)";
      }
      for (auto& [path, v] : edits) {
        std::string arr = "ARRAY[";
        for (std::size_t k = 0; k < path.size(); ++k) arr += (k ? ", " : "") + param(path[k]);
        arr += "]::text[]";
        if (v.is_null())
          e = "(" + e + " #- " + arr + ")";
        else
          e = "jsonb_set(" + e + ", " + arr + ", CAST(" + param(v.dump()) + " AS jsonb), true)";
      }
      sets += (sets.empty() ? "" : ", ") + q(col) + " = " + e;
    }
    if (!sets.empty()) {
      up.sql = "UPDATE " + main_ + " AS t SET " + sets + " WHERE ";
      for (std::size_t k = 0; k < m_.key.size(); ++k)
        up.sql += (k ? " AND t." : "t.") + q(m_.key[k]) + " = CAST(" + param(key[k]) + " AS " +
                  main_cols_.at(m_.key[k]).type + ")";
      out.push_back(std::move(up));
    }
    if (vec_changed && m_.vector_table) {
      const auto& vt = *m_.vector_table;
      statement s;
      auto p = [&](std::optional<std::string> v) {
        s.params.push_back(std::move(v));
        std::string ref = "$";  // (not "$" + to_string(...): see updates())
        ref += std::to_string(s.params.size());
        return ref;
      };
      std::optional<std::string> text;
      if (!va.empty()) text = vector_text(va, pgvector());
      s.sql = "UPDATE " + vt_ + " SET " + q(vt.column) + " = CAST(" + p(text) + " AS " +
              vector_type_.type + ") WHERE ";
      for (std::size_t k = 0; k < vt.key.size(); ++k)
        s.sql += (k ? " AND " : "") + q(vt.key[k]) + " = CAST(" + p(key[k]) + " AS " +
                 vt_cols_.at(vt.key[k]).type + ")";
      for (const auto& [col, v] : vt.where)
        s.sql += " AND " + q(col) + " = CAST(" + p(v) + " AS " + vt_cols_.at(col).type + ")";
      out.push_back(std::move(s));
    }
    return out;
  }

  // A statement with its parameters written in as SQL literals (for a dry run's listing).
  static std::string inline_params(PGconn* c, const statement& s) {
    std::string out;
    for (std::size_t i = 0; i < s.sql.size(); ++i) {
      if (s.sql[i] == '$' && i + 1 < s.sql.size() && s.sql[i + 1] >= '0' && s.sql[i + 1] <= '9') {
        std::size_t n = 0, j = i + 1;
        while (j < s.sql.size() && s.sql[j] >= '0' && s.sql[j] <= '9')
          n = n * 10 + static_cast<std::size_t>(s.sql[j++] - '0');
        const auto& p = s.params.at(n - 1);
        out += p ? literal(c, *p) : std::string("NULL");
        i = j - 1;
      } else {
        out += s.sql[i];
      }
    }
    return out;
  }

  [[nodiscard]] bool has_vector() const noexcept { return !m_.vector.empty() || m_.vector_table; }

 private:
  static bool same_bits(std::span<const float> a, std::span<const float> b) {
    if (a.size() != b.size()) return false;
    for (std::size_t k = 0; k < a.size(); ++k)
      if (std::bit_cast<std::uint32_t>(a[k]) != std::bit_cast<std::uint32_t>(b[k])) return false;
    return true;
  }
  bool pgvector() const { return vector_type_.typname == "vector"; }
  std::string q(const std::string& name) const { return quoted_.at(name); }

  // every field of a canonical record JSON that has no place of its own in the mapping
  nlohmann::json rest_of(const nlohmann::json& j) const {
    nlohmann::json r = nlohmann::json::object();
    for (auto& [k, v] : j.items())
      if (k != "id" && k != "embedding" && !m_.fields.count(k) &&
          !(k == "scope" && !m_.scope_parts.empty())) {
        auto d = m_.defaults.find(k);
        if (d == m_.defaults.end() || v != nlohmann::json(d->second)) r[k] = v;
      }
    return r;
  }

  // own schema: every column from the canonical JSON (see pg_store.hpp, "Own schema")
  static void own_columns(const std::string& canonical, const nlohmann::json& j,
                          std::map<std::string, std::optional<nlohmann::json>>& whole) {
    auto str = [&](const char* f) -> nlohmann::json {
      auto it = j.find(f);
      return it == j.end() ? nlohmann::json() : *it;
    };
    whole["record"] = nlohmann::json(canonical);
    whole["scope"] = str("scope");
    whole["status"] = str("status");
    whole["kind"] = str("kind");
    whole["embedding_version"] = str("embedding_version");
    // jsonb columns hold objects only (a metadata string kept as an extra field: NULL)
    auto object = [&](const char* f) -> nlohmann::json {
      auto v = str(f);
      return v.is_object() ? v : nlohmann::json();
    };
    whole["metadata"] = object("metadata");
    whole["claim"] = object("claim");
    // only a timestamp memhealth reads (an unparsable original stays in `record` alone)
    auto updated = str("updated_at");
    if (!updated.is_string() || !parse_timestamp(updated.get<std::string>())) updated = nullptr;
    whole["updated_at"] = updated;
  }

  std::map<std::string, column_info> columns(PGconn* c, const std::string& table,
                                             std::string& oid) {
    auto r = exec(c, "SELECT to_regclass($1)::oid::text", {table_ident(c, table)}, where_,
                  "cannot look up a table");
    if (PQgetisnull(r.get(), 0, 0))
      throw error(error_code::schema, where_ + ": mapping '" + m_.name + "': there is no table '" +
                                          table + "' (or this role cannot see its schema)");
    oid = cell(r.get(), 0, 0);
    auto cols = exec(c,
                     "SELECT a.attname, format_type(a.atttypid, a.atttypmod), t.typname "
                     "FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
                     "WHERE a.attrelid = $1::oid AND a.attnum > 0 AND NOT a.attisdropped",
                     {oid}, where_, "cannot read the columns of a table");
    std::map<std::string, column_info> out;
    for (int i = 0; i < PQntuples(cols.get()); ++i) {
      out[cell(cols.get(), i, 0)] = column_info{cell(cols.get(), i, 1), cell(cols.get(), i, 2)};
      quoted_[cell(cols.get(), i, 0)] = ident(c, cell(cols.get(), i, 0));
    }
    return out;
  }

  void check_privilege(PGconn* c, const std::string& table, const std::string& oid,
                       const std::string& col, const char* what) {
    auto r = exec(c, std::string("SELECT has_column_privilege($1::oid, $2, '") + what + "')",
                  {oid, col}, where_, "cannot check privileges");
    if (cell(r.get(), 0, 0) != "t")
      throw error(error_code::precondition,
                  where_ + ": this role may not " + what + " column '" + col + "' of table '" +
                      table + "' (GRANT " + what + " ON " + table + " TO the role" +
                      (std::string(what) == "UPDATE" ? ", or open the store read-only" : "") + ")");
  }

  void check_vector_type(const std::string& table, const std::string& col, const column_info& ci) {
    if (ci.typname != "vector" && ci.typname != "_float4" && ci.typname != "_float8")
      throw error(error_code::schema,
                  where_ + ": mapping '" + m_.name + "': vector column '" + col + "' of table '" +
                      table + "' is of type " + ci.type +
                      "; expected real[], double precision[] or pgvector's vector");
  }

  std::string source_json(PGconn* c, const pg_source& s) const {
    if (s.path.empty()) return "to_jsonb(t." + q(s.column) + ")::text";
    std::string arr = "ARRAY[";
    for (std::size_t k = 0; k < s.path.size(); ++k) arr += (k ? ", " : "") + literal(c, s.path[k]);
    return "(t." + q(s.column) + " #> " + arr + "]::text[])::text";
  }

  void build_select(PGconn* c) {
    std::string cols;
    int n_cols = 0;  // columns added so far (the next one's index)
    auto add = [&](const std::string& e) {
      cols += (cols.empty() ? "" : ", ") + e;
      ++n_cols;
    };
    for (const auto& k : m_.key) add("t." + q(k) + "::text");
    id_sql_.clear();  // the id as read (NULL parts are "", pg::cell), for select_ids
    for (const auto& s : m_.id) {
      std::string e;
      if (s.path.empty()) {
        e = "t." + q(s.column) + "::text";
      } else {
        std::string arr = "ARRAY[";
        for (std::size_t k = 0; k < s.path.size(); ++k)
          arr += (k ? ", " : "") + literal(c, s.path[k]);
        e = "t." + q(s.column) + " #>> " + arr + "]::text[]";
      }
      add(e);
      if (!id_sql_.empty()) id_sql_ += " || " + literal(c, m_.id_separator) + " || ";
      id_sql_ += "COALESCE(" + e + ", '')";
    }
    if (!m_.record_column.empty()) {
      add("t." + q(m_.record_column) + "::text");
      own_scope_col_ = n_cols;
      add("t." + q("scope"));  // derived from the record; must agree (own_scope)
    }
    rest_col_ = n_cols;
    if (!m_.rest.empty()) add(source_json(c, m_.rest));
    // the scope's place as text (NULL when absent): a JSON path's text (`#>>`: a number's digits,
    // a string unquoted), a text or varchar column itself, any other column cast to text. The
    // jobs select rows by it, the census counts by it, and the record's scope is read from it
    // (as a JSON string), so the three always agree, whatever the JSON or column type holds.
    // for the hint: an array element of a JSON path as is when display_ident would leave it,
    // else in double quotes (\" and \\ inside, ' doubled for the literal around it)
    auto hint_element = [](const std::string& n) {
      if (display_ident(n) == n) return n;
      std::string out = "\"";
      for (char ch : n) {
        if (ch == '"' || ch == '\\') out += '\\';
        out += ch == '\'' ? std::string("''") : std::string(1, ch);
      }
      return out + "\"";
    };
    if (!m_.record_column.empty()) {
      scope_place_ = "t." + q("scope");
      scope_hint_ = "scope";
    } else {
      // a source as text (SQL; NULL when absent) and as an index expression for the hint
      auto place_of = [&](const pg_source& s) -> std::pair<std::string, std::string> {
        if (s.path.empty()) {
          const auto& ty = main_cols_.at(s.column).typname;
          const bool text = ty == "text" || ty == "varchar";
          return {"t." + q(s.column) + (text ? "" : "::text"),
                  text ? display_ident(s.column) : "(" + display_ident(s.column) + "::text)"};
        }
        std::string arr = "ARRAY[", path;
        for (std::size_t k = 0; k < s.path.size(); ++k) {
          arr += (k ? ", " : "") + literal(c, s.path[k]);
          path += (k ? "," : "") + hint_element(s.path[k]);
        }
        arr += "]::text[]";
        return {"(t." + q(s.column) + " #>> " + arr + ")",
                "(" + display_ident(s.column) + " #>> '{" + path + "}')"};
      };
      if (auto it = m_.fields.find("scope"); it != m_.fields.end()) {
        std::tie(scope_place_, scope_hint_) = place_of(it->second);
      } else if (!m_.scope_parts.empty()) {
        // label0 || text0, then separator || label || text of each later part present, with
        // the separator before the first part present cut off; "" (no part) is NULL. Only
        // immutable operators, so an index on the same expression serves the jobs' reads.
        auto lit = [&](const std::string& x) { return literal(c, x); };
        auto show = [](const std::string& x) {
          std::string out = "'";
          for (char ch : x) out += ch == '\'' ? std::string("''") : std::string(1, ch);
          return out + "'";
        };
        std::size_t sep_chars = 0;  // characters of the separator (substr counts characters)
        for (unsigned char ch : m_.scope_separator) sep_chars += (ch & 0xC0) != 0x80;
        // a part is present when it holds a non-empty string or a number (as `import mem0`
        // reads ids: "" and true are no id); #> is the JSON value, #>> its text
        auto part_of = [&](const pg_source& src) -> std::pair<std::string, std::string> {
          const auto [text, text_shown] = place_of(src);
          if (src.path.empty())
            return {"NULLIF(" + text + ", '')", "NULLIF(" + text_shown + ", '')"};
          auto value = [&](std::string t) {  // `(col #>> path)` as `(col #> path)`
            const auto at = t.find(" #>> ");
            return t.replace(at, 5, " #> ");
          };
          return {"(CASE WHEN jsonb_typeof(" + value(text) +
                      ") IN ('string', 'number') THEN NULLIF(" + text + ", '') END)",
                  "(CASE WHEN jsonb_typeof(" + value(text_shown) +
                      ") IN ('string', 'number') THEN NULLIF(" + text_shown + ", '') END)"};
        };
        std::string joined, hint;
        for (std::size_t k = 0; k < m_.scope_parts.size(); ++k) {
          const auto& [label, src] = m_.scope_parts[k];
          const auto [sql, shown] = part_of(src);
          const std::string head = k ? lit(m_.scope_separator) + " || " : std::string();
          const std::string head_shown = k ? show(m_.scope_separator) + " || " : std::string();
          joined += std::string(k ? " || " : "") + "COALESCE(" + head + lit(label) + " || " + sql +
                    ", '')";
          hint += std::string(k ? " || " : "") + "COALESCE(" + head_shown + show(label) + " || " +
                  shown + ", '')";
        }
        const auto [first, first_shown] = part_of(m_.scope_parts[0].second);
        const std::string from = std::to_string(sep_chars + 1);
        scope_place_ = "NULLIF(substr(" + joined + ", CASE WHEN " + first + " IS NULL THEN " +
                       from + " ELSE 1 END), '')";
        scope_hint_ = "(NULLIF(substr(" + hint + ", CASE WHEN " + first_shown + " IS NULL THEN " +
                      from + " ELSE 1 END), ''))";
      }
    }
    fields_col_ = n_cols;
    for (const auto& [f, s] : m_.fields)
      add(f == "scope" ? "to_jsonb(" + scope_place_ + ")::text" : source_json(c, s));
    if (!m_.scope_parts.empty()) add("to_jsonb(" + scope_place_ + ")::text");  // read only
    // the JSON type of every column a path reads into (NULL for SQL NULL): a path into an array
    // or a scalar gives NULL, which must not read as "the row holds none of these fields"
    shape_columns_.clear();
    auto shape = [&](const pg_source& s) {
      if (!s.path.empty() &&
          std::find(shape_columns_.begin(), shape_columns_.end(), s.column) == shape_columns_.end())
        shape_columns_.push_back(s.column);
    };
    for (const auto& s : m_.id) shape(s);
    if (!m_.rest.empty()) shape(m_.rest);
    for (const auto& [f, s] : m_.fields) shape(s);
    for (const auto& [label, src] : m_.scope_parts) shape(src);
    shape_col_ = n_cols;
    for (const auto& col : shape_columns_) add("jsonb_typeof(t." + q(col) + "::jsonb)");
    std::string from = main_ + " AS t";
    std::string read_cols = cols;  // the vector as real[] (binary results) instead of text
    if (!m_.vector.empty()) {
      vector_sql_ = "t." + q(m_.vector.column);
      read_cols += (cols.empty() ? "" : ", ") + vector_sql_ + "::real[]";
      length_cols_ = cols + (cols.empty() ? "" : ", ") + length_sql(vector_sql_);
      add(vector_sql_ + "::real[]::text");
    }
    if (m_.vector_table) {
      const auto& vt = *m_.vector_table;
      vector_sql_ = "v." + ident(c, vt.column);
      read_cols += (cols.empty() ? "" : ", ") + vector_sql_ + "::real[]";
      length_cols_ = cols + (cols.empty() ? "" : ", ") + length_sql(vector_sql_);
      add(vector_sql_ + "::real[]::text");
      from += " LEFT JOIN " + vt_ + " AS v ON ";
      for (std::size_t k = 0; k < vt.key.size(); ++k)
        from += std::string(k ? " AND " : "") + "v." + ident(c, vt.key[k]) + " = t." + q(m_.key[k]);
      for (const auto& [col, v] : vt.where)
        from += " AND v." + ident(c, col) + "::text = " + literal(c, v);
    }
    std::string order;
    for (const auto& k : m_.key) order += (order.empty() ? "" : ", ") + std::string("t.") + q(k);
    select_all_ = "SELECT " + read_cols + " FROM " + from + " ORDER BY " + order;
    if (length_cols_.empty()) length_cols_ = read_cols;  // no vector: the same columns
    cols_ = cols;
    read_cols_ = read_cols;
    from_ = from;
    order_ = order;
    // the scope as a record read from the row holds it (above), "" for NULL or a missing key
    if (!scope_place_.empty()) scope_sql_ = "COALESCE(" + scope_place_ + ", '')";
    std::string where;
    for (std::size_t k = 0; k < m_.key.size(); ++k)
      where += (k ? " AND t." : "t.") + q(m_.key[k]) + " = CAST($" + std::to_string(k + 1) +
               " AS " + main_cols_.at(m_.key[k]).type + ")";
    select_one_plain_ = "SELECT " + cols + " FROM " + from + " WHERE " + where;
    select_one_ = select_one_plain_ + " FOR UPDATE OF t";
  }

  std::string key_label(const std::vector<std::string>& key) const {
    std::string s;
    for (std::size_t k = 0; k < m_.key.size() && k < key.size(); ++k)
      s += (k ? ", " : "") + m_.key[k] + "=" + key[k];
    return s;
  }

  std::string row_label(const PGresult* r, int row) const { return key_label(row_key(r, row)); }

  pg_mapping m_;
  std::string where_;
  std::string main_, vt_, main_oid_, vt_oid_;
  std::map<std::string, column_info> main_cols_, vt_cols_;
  std::map<std::string, std::string> quoted_;  // column name -> quoted identifier
  column_info vector_type_;
  std::string select_all_, select_one_, select_one_plain_;
  // positions of the selects' columns (the vector last): memhealth's derived scope, the rest
  // place, the first mapped field, the first JSON type of shape_columns_
  int own_scope_col_ = 0, rest_col_ = 0, fields_col_ = 0, shape_col_ = 0;
  std::string id_sql_;                           // the record id as SQL text (select_ids)
  std::string cols_, from_, order_, scope_sql_;  // parts of the selects; the scope expression
  std::string read_cols_;    // cols_ with the vector as real[] (select_all_, select_scopes)
  std::string length_cols_;  // cols_ with the vector's element count (int4) instead of it
  std::string scope_place_;  // the scope's text without COALESCE (NULL when absent); "" = none
  std::string scope_hint_;   // the place as an index expression for a message; "" = none
  std::string vector_sql_;   // the vector column as the selects name it ("" = none)
  std::vector<std::string> shape_columns_;  // columns read through paths, their JSON type selected
};

}  // namespace memhealth::detail::pg
