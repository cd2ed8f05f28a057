#pragma once
/// @file sqlite_migrations.hpp
/// The embedding-model migrations as the state database keeps them (tables `migrations` and
/// `migration_previous` of sqlite_state.hpp): reading them, the version new writes are tagged
/// with, and the compaction of kept previous vectors. The workflow that writes them (start, run,
/// gate, switch, rollback) is live/sqlite_migration.hpp.
///
/// Errors: `memhealth::error` io/busy/parse from the state database; nothing else throws.

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/record/time.hpp"
#include "memhealth/store/sqlite_schema.hpp"
#include "memhealth/store/sqlite_state.hpp"

namespace memhealth {

inline constexpr int min_retention_days = 7;   ///< shortest retention window of previous vectors
inline constexpr int max_retention_days = 15;  ///< longest retention window

/// One declared migration (a row of table `migrations`). Times are UTC ms since the epoch.
struct migration_info {
  std::int64_t id = 0;          ///< its number in the state database (1, 2, ...)
  std::string to_version;       ///< the target embedding_version
  std::string from_versions;    ///< the other versions the store held at start, sorted, ", "-joined
  std::string embedder;         ///< how the new vectors are made (a description; never a key)
  std::int64_t started_ms = 0;  ///< when it was declared
  int retention_days = min_retention_days;  ///< how long previous vectors stay after the switch
  std::string status;                       ///< "running", "switched" or "rolled_back"
  std::int64_t batches = 0;                 ///< batches committed by `run_migration`
  std::int64_t gate_ms = 0;                 ///< when the gate last ran (0 = never)
  bool gate_passed = false;                 ///< its verdict
  std::int64_t gate_batches = -1;           ///< `batches` when it ran (-1 = never)
  std::string gate_summary;   ///< "n=.. k=.. mean_overlap=.. mean_rank_correlation=.."
  std::int64_t ended_ms = 0;  ///< when it was switched or rolled back (0 = running)
  /// End of the retention window of a switched migration (`ended_ms` + days), else 0.
  [[nodiscard]] std::int64_t retention_end_ms() const noexcept {
    return status == "switched" ? ended_ms + std::int64_t{retention_days} * 86'400'000 : 0;
  }
};

namespace detail::migration {

inline std::int64_t ms_of(utc_time t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

inline void require_tables(const sqlite_state& s) {
  if (!s.has_migrations())
    throw error(error_code::precondition,
                s.path() + ": no migration was ever declared in this state database");
}

inline sqlite::stmt_ptr prepare(const sqlite_state& s, std::string_view sql) {
  return sqlite::prepare(s.handle(), sql, s.path());
}

inline constexpr const char* select_cols =
    "SELECT id, to_version, from_versions, embedder, started_ms, retention_days, status, batches, "
    "gate_ms, gate_passed, gate_batches, gate_summary, ended_ms FROM migrations ";

inline migration_info row(sqlite3_stmt* st) {
  using sqlite::column_text;
  migration_info m;
  m.id = sqlite3_column_int64(st, 0);
  m.to_version = column_text(st, 1);
  m.from_versions = column_text(st, 2);
  m.embedder = column_text(st, 3);
  m.started_ms = sqlite3_column_int64(st, 4);
  m.retention_days = sqlite3_column_int(st, 5);
  m.status = column_text(st, 6);
  m.batches = sqlite3_column_int64(st, 7);
  m.gate_ms = sqlite3_column_int64(st, 8);
  m.gate_passed = sqlite3_column_int(st, 9) != 0;
  m.gate_batches = sqlite3_column_int64(st, 10);
  m.gate_summary = column_text(st, 11);
  m.ended_ms = sqlite3_column_int64(st, 12);
  return m;
}

// One kept previous vector (a row of migration_previous).
struct previous {
  std::string record_id;
  std::string version;
  std::vector<float> embedding;
  std::uint64_t after_checksum = 0;
};

// Reads columns 0-3 of a migration_previous row (record_id, prev_version, prev_embedding,
// after_checksum) into `p`, reusing its buffers.
inline void read_previous(sqlite3_stmt* st, previous& p) {
  p.record_id = sqlite::column_text(st, 0);
  p.version = sqlite::column_text(st, 1);
  const auto bytes = static_cast<std::size_t>(sqlite3_column_bytes(st, 2));
  p.embedding.resize(bytes / 4);
  if (bytes) sqlite::decode_floats(sqlite3_column_blob(st, 2), bytes, p.embedding.data());
  p.after_checksum = static_cast<std::uint64_t>(sqlite3_column_int64(st, 3));
}

inline std::vector<previous> previous_of(const sqlite_state& s, std::int64_t id) {
  std::vector<previous> out;
  auto st = prepare(s,
                    "SELECT record_id, prev_version, prev_embedding, after_checksum FROM "
                    "migration_previous WHERE migration=?1 ORDER BY record_id");
  sqlite3_bind_int64(st.get(), 1, id);
  while (sqlite::step(s.handle(), st.get(), s.path()) == SQLITE_ROW) {
    previous p;
    read_previous(st.get(), p);
    out.push_back(std::move(p));
  }
  return out;
}

inline void set_status(sqlite_state& s, std::int64_t id, std::string_view status,
                       std::int64_t ended_ms) {
  auto st = prepare(s, "UPDATE migrations SET status=?2, ended_ms=?3 WHERE id=?1");
  sqlite3_bind_int64(st.get(), 1, id);
  sqlite::bind_text(st.get(), 2, status);
  sqlite3_bind_int64(st.get(), 3, ended_ms);
  sqlite::step_done(s.handle(), st.get(), s.path(), "cannot write the migration");
}

}  // namespace detail::migration

/// Every migration of the state database, oldest first (none when it has no migration tables).
inline std::vector<migration_info> list_migrations(const sqlite_state& state) {
  std::vector<migration_info> out;
  if (!state.has_migrations()) return out;
  auto st = detail::migration::prepare(state,
                                       std::string(detail::migration::select_cols) + "ORDER BY id");
  while (detail::sqlite::step(state.handle(), st.get(), state.path()) == SQLITE_ROW)
    out.push_back(detail::migration::row(st.get()));
  return out;
}

/// The latest migration (any status), or nullopt when none was declared.
inline std::optional<migration_info> latest_migration(const sqlite_state& state) {
  auto all = list_migrations(state);
  if (all.empty()) return std::nullopt;
  return std::move(all.back());
}

/// The running migration, or nullopt.
inline std::optional<migration_info> current_migration(const sqlite_state& state) {
  auto m = latest_migration(state);
  if (m && m->status == "running") return m;
  return std::nullopt;
}

/// The version new writes are tagged with: the target of the running migration, else that of
/// the last switched one, else "" (no migration declared: the host's own).
inline std::string current_embedding_version(const sqlite_state& state) {
  const auto all = list_migrations(state);
  for (auto it = all.rbegin(); it != all.rend(); ++it)
    if (it->status == "running" || it->status == "switched") return it->to_version;
  return {};
}

/// Number of previous vectors kept for migration `id`.
inline std::size_t migration_kept(const sqlite_state& state, std::int64_t id) {
  if (!state.has_migrations()) return 0;
  auto st = detail::migration::prepare(
      state, "SELECT count(*) FROM migration_previous WHERE migration=?1");
  sqlite3_bind_int64(st.get(), 1, id);
  detail::sqlite::step(state.handle(), st.get(), state.path());
  return static_cast<std::size_t>(sqlite3_column_int64(st.get(), 0));
}

/// One migration's part in `compact_migrations`.
struct migration_compaction {
  std::int64_t migration = 0;      ///< its id
  std::string status;              ///< its status
  std::size_t dropped = 0;         ///< previous vectors dropped now
  std::size_t kept = 0;            ///< previous vectors kept (running, or window not over)
  std::int64_t kept_until_ms = 0;  ///< end of the window of a switched one (0 = n/a)
};

/// Drops the kept previous vectors that are no longer needed at `now`: those of rolled-back
/// migrations (their vectors are back in the store) and of switched migrations whose retention
/// window ended. Running ones and switched ones within their window keep theirs.
/// @return one entry per migration that has kept vectors (before this call), oldest first.
/// @throws what the state database throws (one transaction: all or nothing).
inline std::vector<migration_compaction> compact_migrations(sqlite_state& state, utc_time now) {
  std::vector<migration_compaction> out;
  if (!state.has_migrations()) return out;
  const auto now_ms = detail::migration::ms_of(now);
  detail::sqlite::immediate_transaction t(state.handle(), state.path());
  for (const auto& m : list_migrations(state)) {
    const std::size_t n = migration_kept(state, m.id);
    if (n == 0) continue;
    migration_compaction c{m.id, m.status, 0, n, m.retention_end_ms()};
    const bool drop =
        m.status == "rolled_back" || (m.status == "switched" && now_ms >= c.kept_until_ms);
    if (drop) {
      auto st =
          detail::migration::prepare(state, "DELETE FROM migration_previous WHERE migration=?1");
      sqlite3_bind_int64(st.get(), 1, m.id);
      detail::sqlite::step_done(state.handle(), st.get(), state.path(),
                                "cannot drop previous vectors");
      c.dropped = n;
      c.kept = 0;
    }
    out.push_back(c);
  }
  t.commit();
  return out;
}

}  // namespace memhealth
