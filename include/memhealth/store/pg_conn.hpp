#pragma once
/// @file pg_conn.hpp
/// The libpq layer of the PostgreSQL store (`pg_store`, pg_store.hpp): connecting from a libpq
/// URI without ever taking a password from it, describing a connection without secrets, running
/// statements with text parameters, and turning libpq failures into `memhealth::error`.
/// Link libpq (CMake: `memhealth::pg`).
///
/// **Passwords.** A connection string is refused when it carries a password (`password=` in a
/// key/value string, `user:secret@` or `?password=` in a URI): passwords come from libpq's own
/// sources, the `PGPASSWORD` environment variable or the password file (`~/.pgpass`,
/// `PGPASSFILE`), so they never appear on a command line, in a process list or in a log. No
/// message of this file quotes a connection string; `describe_conninfo` gives the parts that
/// are safe to print (user, host, port, database).

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memhealth/config.hpp"

#include <libpq-fe.h>

namespace memhealth {

/// True when `s` names a PostgreSQL store in the tool's store arguments: a libpq URI starting
/// with `postgresql://` or `postgres://`.
[[nodiscard]] inline bool is_pg_uri(std::string_view s) noexcept {
  return s.starts_with("postgresql://") || s.starts_with("postgres://");
}

namespace detail::pg {

struct conn_deleter {
  void operator()(PGconn* c) const noexcept { PQfinish(c); }
};
struct result_deleter {
  void operator()(PGresult* r) const noexcept { PQclear(r); }
};
struct options_deleter {
  void operator()(PQconninfoOption* o) const noexcept { PQconninfoFree(o); }
};
using conn_ptr = std::unique_ptr<PGconn, conn_deleter>;
using result_ptr = std::unique_ptr<PGresult, result_deleter>;

// The options of a connection string (keyword -> value, set ones only).
// @throws error(invalid_argument) when libpq cannot parse it (its message names no secret).
inline std::map<std::string, std::string> parse_conninfo(const std::string& conninfo) {
  char* err = nullptr;
  std::unique_ptr<PQconninfoOption, options_deleter> opts(PQconninfoParse(conninfo.c_str(), &err));
  if (!opts) {
    std::string why = err ? err : "out of memory";
    if (err) PQfreemem(err);
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    throw error(error_code::invalid_argument,
                "not a valid PostgreSQL connection string (libpq: " + why + ")");
  }
  std::map<std::string, std::string> out;
  for (const PQconninfoOption* o = opts.get(); o->keyword; ++o)
    if (o->val && *o->val) out.emplace(o->keyword, o->val);
  return out;
}

}  // namespace detail::pg

/// Refuses a connection string that carries a password (see the file comment).
/// @throws error(invalid_argument) naming PGPASSWORD and ~/.pgpass, without quoting the string;
///         error(invalid_argument) when libpq cannot parse it.
inline void check_conninfo(const std::string& conninfo) {
  const auto opts = detail::pg::parse_conninfo(conninfo);
  if (opts.count("password"))
    throw error(error_code::invalid_argument,
                "the PostgreSQL connection string contains a password; refusing it (a password "
                "on a command line shows in process lists and shell history): remove it and set "
                "PGPASSWORD or put it in ~/.pgpass (PGPASSFILE) instead");
}

/// A connection string without secrets, for messages and logs:
/// `postgresql://USER@HOST:PORT/DBNAME` with the parts it sets (a socket directory as host).
/// Never throws: an unparsable string gives "postgresql://(unparsable connection string)".
[[nodiscard]] inline std::string describe_conninfo(const std::string& conninfo) noexcept {
  try {
    const auto o = detail::pg::parse_conninfo(conninfo);
    auto get = [&](const char* k) {
      auto it = o.find(k);
      return it == o.end() ? std::string() : it->second;
    };
    std::string s = "postgresql://";
    if (!get("user").empty()) s += get("user") + "@";
    s += get("host").empty() ? std::string("localhost") : get("host");
    if (!get("port").empty()) s += ":" + get("port");
    s += "/" + get("dbname");
    return s;
  } catch (...) {
    return "postgresql://(unparsable connection string)";
  }
}

namespace detail::pg {

// libpq's message without its trailing line break.
inline std::string trimmed(const char* m) {
  std::string s = m ? m : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// Opens a connection. @throws as check_conninfo; error(io) when the server cannot be reached or
// refuses the login (libpq's reason, the described connection).
inline conn_ptr connect(const std::string& conninfo) {
  check_conninfo(conninfo);
  conn_ptr c(PQconnectdb(conninfo.c_str()));
  if (!c) throw error(error_code::io, "cannot allocate a PostgreSQL connection");
  if (PQstatus(c.get()) != CONNECTION_OK)
    throw error(error_code::io, describe_conninfo(conninfo) +
                                    ": cannot connect: " + trimmed(PQerrorMessage(c.get())));
  return c;
}

// A failed statement as memhealth::error: busy for lock and serialization failures (SQLSTATE
// 40001, 40P01, 55P03), precondition for a missing privilege (42501), io otherwise (a lost
// connection included).
[[noreturn]] inline void fail(PGconn* c, const PGresult* r, std::string_view where,
                              std::string_view what) {
  const char* state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  const std::string code = state ? state : "";
  std::string msg = trimmed(r ? PQresultErrorMessage(r) : nullptr);
  if (msg.empty()) msg = trimmed(PQerrorMessage(c));
  error_code ec = error_code::io;
  if (code == "40001" || code == "40P01" || code == "55P03") ec = error_code::busy;
  if (code == "42501") ec = error_code::precondition;
  std::string full = std::string(where) + ": " + std::string(what);
  if (PQstatus(c) == CONNECTION_BAD) full += " (the connection to the server was lost)";
  throw error(ec, full + ": " + msg + (code.empty() ? "" : " [SQLSTATE " + code + "]"));
}

// Runs one statement with text parameters (nullopt = SQL NULL). Succeeds on COMMAND_OK and
// TUPLES_OK. `binary`: the result's columns in binary format (PQfformat 1; one statement only):
// a text value is its bytes as in text format, an array is array_send's layout.
// @throws as `fail`.
inline result_ptr exec(PGconn* c, const std::string& sql,
                       const std::vector<std::optional<std::string>>& params,
                       std::string_view where, std::string_view what, bool binary = false) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
  result_ptr r(params.empty() && !binary
                   ? PQexec(c, sql.c_str())
                   : PQexecParams(c, sql.c_str(), static_cast<int>(values.size()), nullptr,
                                  values.data(), nullptr, nullptr, binary ? 1 : 0));
  const auto st = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) fail(c, r.get(), where, what);
  return r;
}

// The text of a cell, "" for NULL.
inline std::string cell(const PGresult* r, int row, int col) {
  return PQgetisnull(r, row, col) ? std::string() : std::string(PQgetvalue(r, row, col));
}

// An identifier quoted for SQL ("a""b"). @throws error(invalid_argument) on an encoding error.
inline std::string ident(PGconn* c, std::string_view name) {
  char* q = PQescapeIdentifier(c, name.data(), name.size());
  if (!q)
    throw error(error_code::invalid_argument,
                "not a valid SQL identifier: " + trimmed(PQerrorMessage(c)));
  std::string s = q;
  PQfreemem(q);
  return s;
}

// An identifier as a person would type it in a statement shown to them (an index hint): as is
// when it is lowercase letters, digits and _ (not a digit first), else in double quotes ("" for
// a quote inside). No connection needed; not for building SQL this process runs (use ident).
inline std::string display_ident(std::string_view name) {
  bool plain = !name.empty() && !(name[0] >= '0' && name[0] <= '9');
  for (char ch : name)
    plain = plain && ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_');
  if (plain) return std::string(name);
  std::string out = "\"";
  for (char ch : name) out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return out + "\"";
}

// A mapping's table name (`table` or `schema.table`) as display_ident shows each part.
inline std::string display_table(std::string_view name) {
  const auto dot = name.find('.');
  if (dot == std::string_view::npos) return display_ident(name);
  return display_ident(name.substr(0, dot)) + "." + display_ident(name.substr(dot + 1));
}

// A string literal quoted for SQL ('it''s', E'' forms as libpq chooses).
inline std::string literal(PGconn* c, std::string_view text) {
  char* q = PQescapeLiteral(c, text.data(), text.size());
  if (!q)
    throw error(error_code::invalid_argument, "not valid text: " + trimmed(PQerrorMessage(c)));
  std::string s = q;
  PQfreemem(q);
  return s;
}

// A possibly schema-qualified table name ("schema.table" or "table") quoted for SQL.
inline std::string table_ident(PGconn* c, std::string_view name) {
  const auto dot = name.find('.');
  if (dot == std::string_view::npos) return ident(c, name);
  return ident(c, name.substr(0, dot)) + "." + ident(c, name.substr(dot + 1));
}

}  // namespace detail::pg
}  // namespace memhealth
