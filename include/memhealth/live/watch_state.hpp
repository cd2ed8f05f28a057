#pragma once
/// @file watch_state.hpp
/// `memhealth::watch_state`: what `memhealth watch` (live/watch.hpp) keeps between polls and
/// across restarts, in its own tables of the state database (store/sqlite_state.hpp; open that
/// first, it creates the database). Tables (created when missing; version key
/// `watch_schema_version` in `state_meta`, 1 = this build):
/// - `watch_records(id PRIMARY KEY, fingerprint, changed_ms, scope, batch)`: per record, its
///   content fingerprint (`record_fingerprint`), when the watch first saw that content (UTC ms),
///   its scope and its ingest batch ("" = none). A task checks the records whose `changed_ms` is
///   after its own cursor.
/// - `watch_findings(key PRIMARY KEY, detector, kind, severity, first_ms, last_ms, open)`: every
///   finding reported (by `finding_key`), so a finding is logged once while it stays open, and
///   once more as resolved when a full run no longer finds it.
/// - `watch_tails(path PRIMARY KEY, device, inode, offset)`: how far a tailed file (the
///   retrieval-events file) was read, and which file that was (a rotated file starts again at 0).
/// - `watch_batches(batch PRIMARY KEY, first_ms)`: ingest batch ids seen.
///
/// Errors: `memhealth::error` as `sqlite_state` (io, parse, schema), naming the path. Link SQLite
/// (CMake: `memhealth::sqlite`). One connection, one thread.

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/record/time.hpp"
#include "memhealth/store/sqlite_schema.hpp"

namespace memhealth {

/// Version of the watch tables this build writes and reads.
inline constexpr int watch_state_schema_version = 1;

/// What the watch remembers of one record.
struct watched_record {
  std::uint64_t fingerprint = 0;  ///< `record_fingerprint` of its content
  std::int64_t changed_ms = 0;    ///< when this content was first seen (UTC ms since epoch)
  std::string scope;              ///< its scope then
  std::string batch;              ///< its ingest batch id ("" = none)
};

/// A finding the watch has reported (`watch_state::open_findings`).
struct reported_finding {
  std::string key;       ///< `finding_key`
  std::string detector;  ///< detector that raised it
  std::string kind;      ///< finding kind
  std::string severity;  ///< severity name
};

/// Read position of a tailed file.
struct tail_position {
  std::uint64_t device = 0;  ///< st_dev of the file read
  std::uint64_t inode = 0;   ///< st_ino of the file read
  std::uint64_t offset = 0;  ///< bytes consumed (always at a line end)
};

/// The watch's tables (see the file comment). Move-only.
class watch_state {
 public:
  /// Opens the watch tables in the state database at `path` (which `sqlite_state::open` created),
  /// creating them when missing. @throws error(io/parse/schema) naming the path.
  static watch_state open(const std::filesystem::path& path,
                          std::chrono::milliseconds busy_timeout = std::chrono::seconds{5}) {
    watch_state s;
    s.path_ = path.string();
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
      throw error(error_code::io,
                  s.path_ + ": no state database (open it with sqlite_state first)");
    s.db_ = detail::sqlite::open_db(s.path_, SQLITE_OPEN_READWRITE, busy_timeout);
    {
      auto t = s.begin_immediate();
      const std::string v = s.text(
          "SELECT coalesce((SELECT value FROM state_meta WHERE key='watch_schema_version'), '')");
      if (v.empty()) {
        s.exec(
            "CREATE TABLE IF NOT EXISTS watch_records(id TEXT PRIMARY KEY NOT NULL,"
            " fingerprint INTEGER NOT NULL, changed_ms INTEGER NOT NULL, scope TEXT NOT NULL,"
            " batch TEXT NOT NULL);"
            "CREATE TABLE IF NOT EXISTS watch_findings(key TEXT PRIMARY KEY NOT NULL,"
            " detector TEXT NOT NULL, kind TEXT NOT NULL, severity TEXT NOT NULL,"
            " first_ms INTEGER NOT NULL, last_ms INTEGER NOT NULL, open INTEGER NOT NULL);"
            "CREATE TABLE IF NOT EXISTS watch_tails(path TEXT PRIMARY KEY NOT NULL,"
            " device INTEGER NOT NULL, inode INTEGER NOT NULL, offset INTEGER NOT NULL);"
            "CREATE TABLE IF NOT EXISTS watch_batches(batch TEXT PRIMARY KEY NOT NULL,"
            " first_ms INTEGER NOT NULL);"
            "INSERT INTO state_meta(key, value) VALUES('watch_schema_version', '1');",
            "cannot create the watch tables");
      } else if (v != std::to_string(watch_state_schema_version)) {
        throw error(error_code::schema, s.path_ + ": watch tables of schema version '" + v +
                                            "'; this build reads only " +
                                            std::to_string(watch_state_schema_version));
      }
      t.commit();
    }
    return s;
  }

  /// Every record the watch knows, by id.
  [[nodiscard]] std::unordered_map<std::string, watched_record> records() const {
    std::unordered_map<std::string, watched_record> out;
    auto st = prepare("SELECT id, fingerprint, changed_ms, scope, batch FROM watch_records");
    while (step(st.get()) == SQLITE_ROW)
      out.emplace(detail::sqlite::column_text(st.get(), 0),
                  watched_record{static_cast<std::uint64_t>(sqlite3_column_int64(st.get(), 1)),
                                 sqlite3_column_int64(st.get(), 2),
                                 detail::sqlite::column_text(st.get(), 3),
                                 detail::sqlite::column_text(st.get(), 4)});
    return out;
  }

  /// Writes the records that changed (insert or replace) and removes those gone, in one
  /// transaction with the new batch ids (first seen at `now_ms`).
  void update_records(const std::vector<std::pair<std::string, watched_record>>& changed,
                      const std::vector<std::string>& removed,
                      const std::vector<std::string>& new_batches, std::int64_t now_ms) {
    auto t = begin_immediate();
    auto up = prepare(
        "INSERT INTO watch_records(id, fingerprint, changed_ms, scope, batch) "
        "VALUES(?1, ?2, ?3, ?4, ?5) ON CONFLICT(id) DO UPDATE SET "
        "fingerprint=excluded.fingerprint, "
        "changed_ms=excluded.changed_ms, scope=excluded.scope, batch=excluded.batch");
    for (const auto& [id, r] : changed) {
      sqlite3_reset(up.get());
      detail::sqlite::bind_text(up.get(), 1, id);
      sqlite3_bind_int64(up.get(), 2, static_cast<std::int64_t>(r.fingerprint));
      sqlite3_bind_int64(up.get(), 3, r.changed_ms);
      detail::sqlite::bind_text(up.get(), 4, r.scope);
      detail::sqlite::bind_text(up.get(), 5, r.batch);
      done(up.get(), "cannot write a record's state");
    }
    auto del = prepare("DELETE FROM watch_records WHERE id=?1");
    for (const auto& id : removed) {
      sqlite3_reset(del.get());
      detail::sqlite::bind_text(del.get(), 1, id);
      done(del.get(), "cannot remove a record's state");
    }
    auto bat = prepare("INSERT OR IGNORE INTO watch_batches(batch, first_ms) VALUES(?1, ?2)");
    for (const auto& b : new_batches) {
      sqlite3_reset(bat.get());
      detail::sqlite::bind_text(bat.get(), 1, b);
      sqlite3_bind_int64(bat.get(), 2, now_ms);
      done(bat.get(), "cannot write a batch id");
    }
    t.commit();
  }

  /// The ingest batch ids seen so far.
  [[nodiscard]] std::unordered_set<std::string> batches() const {
    std::unordered_set<std::string> out;
    auto st = prepare("SELECT batch FROM watch_batches");
    while (step(st.get()) == SQLITE_ROW) out.insert(detail::sqlite::column_text(st.get(), 0));
    return out;
  }

  /// The findings reported and not resolved.
  [[nodiscard]] std::vector<reported_finding> open_findings() const {
    std::vector<reported_finding> out;
    auto st = prepare(
        "SELECT key, detector, kind, severity FROM watch_findings WHERE open=1 ORDER BY key");
    while (step(st.get()) == SQLITE_ROW)
      out.push_back(
          {detail::sqlite::column_text(st.get(), 0), detail::sqlite::column_text(st.get(), 1),
           detail::sqlite::column_text(st.get(), 2), detail::sqlite::column_text(st.get(), 3)});
    return out;
  }

  /// Records findings as reported (open) and others as resolved, in one transaction, at `now_ms`.
  void note_findings(const std::vector<reported_finding>& opened,
                     const std::vector<std::string>& resolved, std::int64_t now_ms) {
    auto t = begin_immediate();
    auto up = prepare(
        "INSERT INTO watch_findings(key, detector, kind, severity, first_ms, last_ms, open) "
        "VALUES(?1, ?2, ?3, ?4, ?5, ?5, 1) ON CONFLICT(key) DO UPDATE SET "
        "last_ms=excluded.last_ms, "
        "open=1, first_ms=CASE WHEN open=1 THEN first_ms ELSE excluded.first_ms END");
    for (const auto& f : opened) {
      sqlite3_reset(up.get());
      detail::sqlite::bind_text(up.get(), 1, f.key);
      detail::sqlite::bind_text(up.get(), 2, f.detector);
      detail::sqlite::bind_text(up.get(), 3, f.kind);
      detail::sqlite::bind_text(up.get(), 4, f.severity);
      sqlite3_bind_int64(up.get(), 5, now_ms);
      done(up.get(), "cannot write a finding");
    }
    auto res = prepare("UPDATE watch_findings SET open=0, last_ms=?2 WHERE key=?1");
    for (const auto& k : resolved) {
      sqlite3_reset(res.get());
      detail::sqlite::bind_text(res.get(), 1, k);
      sqlite3_bind_int64(res.get(), 2, now_ms);
      done(res.get(), "cannot resolve a finding");
    }
    t.commit();
  }

  /// Where the tail of `path` stopped, or nullopt when it was never read.
  [[nodiscard]] std::optional<tail_position> tail(std::string_view path) const {
    auto st = prepare("SELECT device, inode, offset FROM watch_tails WHERE path=?1");
    detail::sqlite::bind_text(st.get(), 1, path);
    if (step(st.get()) != SQLITE_ROW) return std::nullopt;
    return tail_position{static_cast<std::uint64_t>(sqlite3_column_int64(st.get(), 0)),
                         static_cast<std::uint64_t>(sqlite3_column_int64(st.get(), 1)),
                         static_cast<std::uint64_t>(sqlite3_column_int64(st.get(), 2))};
  }
  /// Stores where the tail of `path` stopped.
  void set_tail(std::string_view path, const tail_position& p) {
    auto st = prepare(
        "INSERT INTO watch_tails(path, device, inode, offset) VALUES(?1, ?2, ?3, ?4) "
        "ON CONFLICT(path) DO UPDATE SET device=excluded.device, inode=excluded.inode, "
        "offset=excluded.offset");
    detail::sqlite::bind_text(st.get(), 1, path);
    sqlite3_bind_int64(st.get(), 2, static_cast<std::int64_t>(p.device));
    sqlite3_bind_int64(st.get(), 3, static_cast<std::int64_t>(p.inode));
    sqlite3_bind_int64(st.get(), 4, static_cast<std::int64_t>(p.offset));
    done(st.get(), "cannot write a tail position");
  }

  /// The path it was opened from.
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

 private:
  watch_state() = default;

  // BEGIN IMMEDIATE ... COMMIT; rolled back when not committed (an exception on the way).
  [[nodiscard]] detail::sqlite::immediate_transaction begin_immediate() {
    return detail::sqlite::immediate_transaction(db_.get(), path_);
  }

  void exec(const char* sql, std::string_view what) const {
    detail::sqlite::exec(db_.get(), sql, path_, what);
  }
  [[nodiscard]] std::string text(const char* sql) const {
    return detail::sqlite::query_text(db_.get(), sql, path_, "cannot read the watch tables");
  }
  detail::sqlite::stmt_ptr prepare(std::string_view sql) const {
    return detail::sqlite::prepare(db_.get(), sql, path_);
  }
  int step(sqlite3_stmt* st) const { return detail::sqlite::step(db_.get(), st, path_); }
  void done(sqlite3_stmt* st, std::string_view what) const {
    detail::sqlite::step_done(db_.get(), st, path_, what);
  }

  std::string path_;
  detail::sqlite::db_ptr db_;
};

}  // namespace memhealth
