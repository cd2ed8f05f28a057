#pragma once
/// @file sqlite_schema.hpp
/// The on-disk side of `sqlite_store` (sqlite_store.hpp): its options, the schema and its version,
/// the checks a database passes before it is opened for writing (`detail::sqlite::validate`), the
/// row encodings (canonical record JSON, little-endian float32 BLOBs) and the connection helpers
/// (RAII handles, statements, errors mapped to `memhealth::error`). The schema is specified in
/// docs/format.md, "SQLite store". Link SQLite (CMake: `memhealth::sqlite`).

#include <sqlite3.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/io/record_encode.hpp"
#include "memhealth/record/memory_record.hpp"

#include <fcntl.h>
#include <unistd.h>

namespace memhealth {

/// Knobs of `sqlite_store`. Defaults suit stores of 10^3 to 10^6 records.
struct sqlite_store_options {
  std::size_t block_rows = 4096;            ///< rows per read block (records and embeddings), >= 1
  std::size_t cached_embedding_blocks = 4;  ///< LRU capacity in embedding blocks, >= 1
  std::chrono::milliseconds busy_timeout{5000};  ///< wait for a lock held by another connection
  bool read_only = false;                        ///< open read-only (mutations then throw `io`)
  bool verify = true;  ///< run `PRAGMA quick_check` on open (O(file size))
  /// `PRAGMA synchronous=FULL` (each commit survives power loss) when true, NORMAL when false
  /// (a process crash still loses nothing; power loss may lose the last commits, which the repair
  /// log's recovery then redoes or undoes).
  bool synchronous_full = true;
  /// `write_new`: the id to give the new database (`sqlite_store::database_id()`); empty = a new
  /// random one. Give the id of the store a new database is a repaired copy of, so that the
  /// repair's log belongs to both (`memhealth apply --out sqlite:` does).
  std::string database_id{};
};

/// Schema version written to `memhealth_meta` and the only one this build reads.
inline constexpr int sqlite_schema_version = 1;

namespace detail::sqlite {

struct db_closer {
  void operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }
};
struct stmt_finalizer {
  void operator()(sqlite3_stmt* s) const noexcept { sqlite3_finalize(s); }
};
using db_ptr = std::unique_ptr<sqlite3, db_closer>;
using stmt_ptr = std::unique_ptr<sqlite3_stmt, stmt_finalizer>;

inline const char* const schema_sql =
    "CREATE TABLE memhealth_meta(key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL);"
    "CREATE TABLE records("
    " seq INTEGER PRIMARY KEY,"
    " id TEXT NOT NULL,"
    " scope TEXT NOT NULL DEFAULT '',"
    " status TEXT NOT NULL DEFAULT '',"
    " kind TEXT NOT NULL DEFAULT '',"
    " updated_at INTEGER,"
    " metadata TEXT,"
    " claim TEXT,"
    " embedding BLOB,"
    " embedding_dim INTEGER NOT NULL DEFAULT 0,"
    " embedding_version TEXT NOT NULL DEFAULT '',"
    " record TEXT NOT NULL);"
    "CREATE INDEX records_id ON records(id);"
    "CREATE INDEX records_scope ON records(scope);"
    "CREATE INDEX records_status ON records(status);"
    "CREATE INDEX records_updated_at ON records(updated_at);";

inline constexpr std::string_view required_columns[] = {"seq",
                                                        "id",
                                                        "scope",
                                                        "status",
                                                        "kind",
                                                        "updated_at",
                                                        "metadata",
                                                        "claim",
                                                        "embedding",
                                                        "embedding_dim",
                                                        "embedding_version",
                                                        "record"};

// Maps an SQLite result code to the memhealth error code of a failed read or write: a database
// locked by another connection beyond the busy timeout (SQLITE_BUSY, SQLITE_LOCKED) is `busy`
// (the CLI's exit 5), not `io`.
inline error_code code_of(int rc) noexcept {
  const int primary = rc & 0xff;
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) return error_code::busy;
  return primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT ? error_code::parse : error_code::io;
}

[[noreturn]] inline void fail(sqlite3* db, int rc, const std::string& path, std::string_view what) {
  std::string msg = path + ": " + std::string(what) + ": ";
  const int primary = rc & 0xff;
  if (primary == SQLITE_NOTADB)
    msg += "not an SQLite database (the file is corrupt or of another format)";
  else if (primary == SQLITE_CORRUPT)
    msg += "corrupt SQLite database (" + std::string(db ? sqlite3_errmsg(db) : sqlite3_errstr(rc)) +
           ")";
  else
    msg += db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED)
    msg += " (another process holds a lock on it beyond the busy timeout; try again later)";
  throw error(code_of(rc), msg);
}

inline void exec(sqlite3* db, const char* sql, const std::string& path, std::string_view what) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    sqlite3_free(err);
    fail(db, rc, path, what);
  }
}

inline stmt_ptr prepare(sqlite3* db, std::string_view sql, const std::string& path,
                        std::string_view what = "cannot prepare a statement") {
  sqlite3_stmt* s = nullptr;
  const int rc = sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()),
                                    SQLITE_PREPARE_PERSISTENT, &s, nullptr);
  if (rc != SQLITE_OK) fail(db, rc, path, what);
  return stmt_ptr(s);
}

// Steps `st`; a result other than SQLITE_ROW or SQLITE_DONE throws (`fail`, "read").
inline int step(sqlite3* db, sqlite3_stmt* st, const std::string& path) {
  const int rc = sqlite3_step(st);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) fail(db, rc, path, "read");
  return rc;
}

// Steps a statement that returns no rows; a result other than SQLITE_DONE throws naming `what`.
inline void step_done(sqlite3* db, sqlite3_stmt* st, const std::string& path,
                      std::string_view what) {
  const int rc = sqlite3_step(st);
  if (rc != SQLITE_DONE) fail(db, rc, path, what);
}

// BEGIN IMMEDIATE ... COMMIT on `db`; rolled back when not committed (an exception on the way).
// `db` and `path` must outlive it. Neither copied nor moved.
class immediate_transaction {
 public:
  immediate_transaction(sqlite3* db, const std::string& path) : db_(db), path_(path) {
    exec(db_, "BEGIN IMMEDIATE", path_, "cannot start a transaction (locked by another process?)");
  }
  void commit() {
    exec(db_, "COMMIT", path_, "cannot commit");
    open_ = false;
  }
  ~immediate_transaction() {
    if (open_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  immediate_transaction(const immediate_transaction&) = delete;
  immediate_transaction& operator=(const immediate_transaction&) = delete;

 private:
  sqlite3* db_;
  const std::string& path_;
  bool open_ = true;
};

// A new database id: 128 random bits as 32 lowercase hex digits (std::random_device; where it
// cannot be used, the clock and the process id stand in: ids only tell stores
// apart, they are not secrets).
inline std::string new_database_id() {
  std::uint64_t w[2] = {0, 0};
  try {
    std::random_device rd;
    w[0] = (std::uint64_t(rd()) << 32) ^ rd();
    w[1] = (std::uint64_t(rd()) << 32) ^ rd();
  } catch (...) {
    const auto t = std::chrono::high_resolution_clock::now().time_since_epoch().count();
    w[0] = static_cast<std::uint64_t>(t);
    w[1] = static_cast<std::uint64_t>(::getpid()) * 0x9E3779B97F4A7C15ull ^ w[0];
  }
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (std::uint64_t x : w)
    for (int k = 60; k >= 0; k -= 4) out.push_back(hex[(x >> k) & 0xF]);
  return out;
}

// Runs a query returning one text column; all rows joined with '\n'.
inline std::string query_text(sqlite3* db, const char* sql, const std::string& path,
                              std::string_view what) {
  auto s = prepare(db, sql, path, what);
  std::string out;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    if (!out.empty()) out.push_back('\n');
    if (auto* t = sqlite3_column_text(s.get(), 0)) out += reinterpret_cast<const char*>(t);
  }
  if (rc != SQLITE_DONE) fail(db, rc, path, what);
  return out;
}

// fsync of a file by name. @throws error(io) naming `what` (the target path).
inline void sync_file(const std::string& file, const std::string& what) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw error(error_code::io,
                what + ": cannot open the new database to sync it: " + std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0)
    throw error(error_code::io, what + ": cannot sync the new database: " + std::strerror(err));
}

// Gives the complete file `tmp` the name `target`, which must not exist: link (refuses an
// existing name) then unlink; rename where the file system has no hard links. Then fsyncs the
// directory. @throws error(precondition) when `target` exists, error(io) otherwise.
inline void move_into_place(const std::string& tmp, const std::string& target) {
  if (::link(tmp.c_str(), target.c_str()) == 0) {
    ::unlink(tmp.c_str());
  } else {
    const int err = errno;
    if (err == EEXIST)
      throw error(error_code::precondition,
                  target + ": already exists; refusing to overwrite it (remove it first)");
    if (err != EPERM && err != EOPNOTSUPP && err != ENOSYS && err != EMLINK)
      throw error(error_code::io,
                  target + ": cannot move the new database into place: " + std::strerror(err));
    std::error_code ec;
    if (std::filesystem::exists(target, ec))
      throw error(error_code::precondition,
                  target + ": already exists; refusing to overwrite it (remove it first)");
    if (::rename(tmp.c_str(), target.c_str()) != 0)
      throw error(error_code::io,
                  target + ": cannot move the new database into place: " + std::strerror(errno));
  }
  const std::filesystem::path t(target);
  const std::string dir = t.has_parent_path() ? t.parent_path().string() : std::string(".");
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

inline db_ptr open_db(const std::string& path, int flags, std::chrono::milliseconds busy) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  db_ptr db(raw);
  if (rc != SQLITE_OK) fail(db.get(), rc, path, "cannot open");
  sqlite3_extended_result_codes(db.get(), 1);
  sqlite3_busy_timeout(db.get(), static_cast<int>(busy.count()));
  return db;
}

// Validates that `path` holds a memhealth store, on a read-only connection (nothing is written).
// Returns the stored dimension.
inline std::size_t validate(const std::string& path, const sqlite_store_options& opt) {
  auto db = open_db(path, SQLITE_OPEN_READONLY, opt.busy_timeout);
  const std::string tables =
      query_text(db.get(), "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name", path,
                 "cannot read the schema");
  std::vector<std::string> names;
  for (std::size_t p = 0; p < tables.size();) {
    const auto q = std::min(tables.find('\n', p), tables.size());
    names.push_back(tables.substr(p, q - p));
    p = q + 1;
  }
  const bool meta = std::find(names.begin(), names.end(), "memhealth_meta") != names.end();
  const bool recs = std::find(names.begin(), names.end(), "records") != names.end();
  if (!meta && !recs) {
    if (names.empty())
      throw error(error_code::schema, path +
                                          ": an empty SQLite database, not a memhealth store "
                                          "(tables memhealth_meta and records missing)");
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    throw error(error_code::schema,
                path + ": foreign schema, not a memhealth store: tables found: " + list +
                    "; a memhealth store has tables memhealth_meta and records");
  }
  if (!meta)
    throw error(error_code::schema,
                path + ": missing table 'memhealth_meta' (not a memhealth store, or damaged)");
  if (!recs)
    throw error(error_code::schema,
                path + ": missing table 'records' (not a memhealth store, or damaged)");
  const std::string cols = "\n" +
                           query_text(db.get(), "SELECT name FROM pragma_table_info('records')",
                                      path, "cannot read the columns of table records") +
                           "\n";
  for (auto c : required_columns)
    if (cols.find("\n" + std::string(c) + "\n") == std::string::npos)
      throw error(error_code::schema, path + ": table 'records' lacks column '" + std::string(c) +
                                          "' (foreign or damaged schema)");
  const std::string format =
      query_text(db.get(), "SELECT value FROM memhealth_meta WHERE key='format'", path,
                 "cannot read memhealth_meta");
  if (format != "memhealth-store")
    throw error(error_code::schema,
                path + ": memhealth_meta.format is '" + format + "', expected 'memhealth-store'");
  const std::string version =
      query_text(db.get(), "SELECT value FROM memhealth_meta WHERE key='schema_version'", path,
                 "cannot read memhealth_meta");
  if (version != std::to_string(sqlite_schema_version))
    throw error(error_code::schema, path + ": schema_version '" + version +
                                        "' is not supported (this build reads " +
                                        std::to_string(sqlite_schema_version) + ")");
  if (opt.verify) {
    const std::string check =
        query_text(db.get(), "PRAGMA quick_check", path, "integrity check failed");
    if (check != "ok")
      throw error(error_code::parse, path + ": corrupt SQLite database: " + check.substr(0, 400));
  }
  const std::string dim =
      query_text(db.get(), "SELECT value FROM memhealth_meta WHERE key='dimension'", path,
                 "cannot read memhealth_meta");
  std::size_t d = 0;
  for (char ch : dim) {
    if (ch < '0' || ch > '9')
      throw error(error_code::schema,
                  path + ": memhealth_meta.dimension is not a number: '" + dim + "'");
    d = d * 10 + static_cast<std::size_t>(ch - '0');
  }
  return d;
}

// Canonical JSON of a record without its embedding (the `record` column).
inline std::string record_json(const memory_record& r) {
  std::string s;
  detail::jsonl::append_record(r, {}, s);
  return s;
}

// The JSON value of one field, cut out of the canonical JSON of a record holding only that field
// (canonical key order puts it right after "id" and "content").
inline std::string field_json(const memory_record& only, std::string_view key) {
  const std::string s = to_json(only);
  const std::string prefix = "{\"id\":\"\",\"content\":\"\",\"" + std::string(key) + "\":";
  MEMHEALTH_ASSERT(s.starts_with(prefix) && s.back() == '}',
                   "sqlite_store: unexpected canonical JSON");
  return s.substr(prefix.size(), s.size() - prefix.size() - 1);
}

inline void bind_text(sqlite3_stmt* s, int col, std::string_view t) {
  sqlite3_bind_text(s, col, t.data(), static_cast<int>(t.size()), SQLITE_TRANSIENT);
}

inline std::string column_text(sqlite3_stmt* s, int col) {
  const auto* p = sqlite3_column_text(s, col);
  return p ? std::string(reinterpret_cast<const char*>(p),
                         static_cast<std::size_t>(sqlite3_column_bytes(s, col)))
           : std::string();
}

// Little-endian float32 bytes <-> floats.
inline void decode_floats(const void* blob, std::size_t bytes, float* out) {
  std::memcpy(out, blob, bytes);
  if constexpr (std::endian::native == std::endian::big)
    for (std::size_t k = 0; k < bytes / 4; ++k) {
      std::uint32_t u;
      std::memcpy(&u, out + k, 4);
      u = __builtin_bswap32(u);
      std::memcpy(out + k, &u, 4);
    }
}
inline std::string encode_floats(std::span<const float> v) {
  std::string b(v.size() * 4, '\0');
  if (v.empty()) return b;  // an empty span may have a null data(), which memcpy must not get
  std::memcpy(b.data(), v.data(), b.size());
  if constexpr (std::endian::native == std::endian::big)
    for (std::size_t k = 0; k < v.size(); ++k)
      std::swap(b[4 * k], b[4 * k + 3]), std::swap(b[4 * k + 1], b[4 * k + 2]);
  return b;
}

}  // namespace detail::sqlite

}  // namespace memhealth
