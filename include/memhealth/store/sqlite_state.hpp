#pragma once
/// @file sqlite_state.hpp
/// `memhealth::sqlite_state`: the state that continuous operation keeps between runs (issue 20),
/// in one SQLite database beside the store (`default_state_path`): the cursor of each check, a
/// content fingerprint per record (so a record changed by a writer that forgot `updated_at` is
/// still seen as changed), the embedding versions seen, the scheduler's last and next runs, a
/// runs-per-day ledger, and the repair history that spans runs (attempts per action, the
/// manual queue).
///
/// Several processes may share it: WAL journal mode, a busy timeout, and every read-modify-write
/// in a `BEGIN IMMEDIATE` transaction (so two processes never both take the last run of a day).
/// The schema is versioned (`sqlite_state_schema_version` in table `state_meta`); a database of
/// another version is refused with a message (version 1 is the first; later versions will
/// migrate older ones on open). Schema:
/// - `state_meta(key PRIMARY KEY, value)`: schema_version, created_at;
/// - `cursors(name PRIMARY KEY, at_ms)`: the clock of the last completed run of a check (UTC ms);
/// - `record_fingerprints(id PRIMARY KEY, fingerprint, seen_ms)`;
/// - `embedding_versions(version PRIMARY KEY, first_seen_ms, last_seen_ms, records)`;
/// - `schedule(name PRIMARY KEY, last_ms, next_ms)`;
/// - `runs(day PRIMARY KEY, count)`: runs counted per UTC day (days since 1970-01-01);
/// - `repair_attempts(action_key PRIMARY KEY, attempts, failures, last_ms, last_error, state)`:
///   `state` is "done", "retry" or "manual" (sent to a person after `max_failures`);
/// - `repair_images(record_id, checksum, action_key, at_ms, PRIMARY KEY(record_id, checksum))`:
///   the before-images (checksums) that applied repairs replaced, for the loop guard across runs
///   (repair_history.hpp). Added to schema version 1 with CREATE TABLE IF NOT EXISTS on every
///   writable open, so databases created before it get it; a read-only database without it has
///   no replaced images.
/// - `review_items(action_key PRIMARY KEY, type, tier, targets, action, reason, queued_ms,
///   status, fingerprint, decided_by, decided_ms, decision_note, defer_until_ms, apply_after_ms,
///   faults)`:
///   the review queue, repairs a person decides (`memhealth watch` queues tier-3 actions, tier-2
///   ones no rule applies and failed ones; `memhealth review` works it); added to version 1 the
///   same way (`apply_after_ms`, the veto window, and `faults`, by ALTER TABLE on a writable
///   open; index
///   `review_items_proposal(type, fingerprint)` the same way).
/// - `migrations(id INTEGER PRIMARY KEY, to_version, from_versions, embedder, started_ms,
///   retention_days, status, batches, gate_ms, gate_passed, gate_batches, gate_summary,
///   ended_ms)` and `migration_previous(migration, record_id, prev_version, prev_embedding,
///   after_checksum, batch, at_ms, PRIMARY KEY(migration, record_id))`: the embedding-model
///   migrations (issue 21) and, per re-embedded record, its previous vector (float32 bytes) and
///   version, kept for the retention window (store/sqlite_migrations.hpp reads them and
///   live/sqlite_migration.hpp writes them through `handle()`); added to version 1 the same way.
///
/// - `history_runs(scope, at_ms, full, open_errors)`: the findings history of each store (scope:
///   its name as the repair history scopes it), one row per full check run and per run that
///   changed whether an error or critical finding is open (`note_history_run`);
///   `repaired_faults(scope, finding_key, kind, action_key, repaired_ms, recurred_ms)`: the faults
///   repairs addressed and the first run that found them again (store/run_history.hpp judges
///   them); `repair_proposals(proposal_key PRIMARY KEY, action_key, proposals, first_ms,
///   last_ms)`: how often an action of one type was applied over the same before-images (the
///   third proposal is held, repair_history.hpp); `repair_releases(action_key, released_ms,
///   reviewer, note, attempts, failures, last_error, state)`: who released a held action, why,
///   and its history row as it was (`release_action`). Added to version 1 the same way.
///
/// Errors: `memhealth::error` with `io` (cannot open or write), `busy` (locked by another process
/// beyond the busy timeout),
/// `parse` (not an SQLite database, or corrupt) or `schema` (an SQLite database of another kind,
/// or a state database of another schema version), naming the path. Link SQLite (CMake:
/// `memhealth::sqlite`).

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/record/memory_record.hpp"
#include "memhealth/record/time.hpp"
#include "memhealth/store/run_history.hpp"
#include "memhealth/store/sqlite_schema.hpp"

namespace memhealth {

/// Schema version of the state database this build writes and reads.
inline constexpr int sqlite_state_schema_version = 1;

/// Knobs of `sqlite_state`.
struct sqlite_state_options {
  std::chrono::milliseconds busy_timeout{5000};  ///< wait for a lock held by another process
  bool read_only = false;  ///< open an existing database read-only (writes then throw `io`)
};

/// The state database's default path for a store: beside it, `<store file>.memhealth-state.db`
/// (an `sqlite:` prefix is dropped first).
inline std::filesystem::path default_state_path(std::string_view store) {
  if (store.starts_with("sqlite:")) store.remove_prefix(7);
  return std::filesystem::path(std::string(store) + ".memhealth-state.db");
}

/// A stable 64-bit fingerprint of a record's content: FNV-1a over its canonical JSON (without the
/// embedding) followed by the embedding's float32 bytes. Equal records give equal fingerprints on
/// every build and machine (little-endian floats); any change of any field, vector included,
/// changes it except with probability about 2^-64.
inline std::uint64_t record_fingerprint(const memory_record& r, std::span<const float> embedding) {
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a 64 offset basis
  const auto mix = [&](const unsigned char* p, std::size_t n) {
    for (std::size_t k = 0; k < n; ++k) h = (h ^ p[k]) * 1099511628211ULL;  // FNV prime
  };
  const std::string json = detail::sqlite::record_json(r);
  mix(reinterpret_cast<const unsigned char*>(json.data()), json.size());
  const std::string floats = detail::sqlite::encode_floats(embedding);
  mix(reinterpret_cast<const unsigned char*>(floats.data()), floats.size());
  return h;
}

/// What changed in a store since the fingerprints were last committed.
struct fingerprint_changes {
  std::vector<bool> changed;         ///< per record index: new, or its fingerprint differs
  std::size_t changed_count = 0;     ///< number of true entries of `changed`
  std::vector<std::string> removed;  ///< ids fingerprinted before and absent now
};

/// One entry of the repair history (`sqlite_state::attempt`).
struct repair_attempt_state {
  std::string action_key;     ///< the action's idempotency key
  std::int64_t attempts = 0;  ///< times it was tried
  std::int64_t failures = 0;  ///< times it failed
  std::string last_error;     ///< the last failure's message ("" when none)
  std::string state;          ///< "done", "retry" or "manual"
};

/// One item of the review queue (`sqlite_state::queue_review`): a repair a person decides.
struct review_item {
  std::string key;      ///< the action's idempotency key (scoped like the repair history's keys)
  std::string type;     ///< action type (e.g. "merge_duplicates", "send_to_review")
  int tier = 3;         ///< the action's tier (1 to 3; tier 1 only when it failed or was held)
  std::string targets;  ///< record ids, as a JSON array
  std::string action_json;  ///< the whole action (plan JSON form, plan_json.hpp)
  std::string reason;       ///< why it waits for a person (tier 3, tier 2 not applied by rule, ...)
  std::int64_t queued_ms = 0;  ///< when it was (last) queued (UTC ms since epoch)
  /// "pending", "approved" (applied), "rejected", "deferred" (until `defer_until_ms`) or
  /// "superseded" (a newer proposal for the same records replaced it: `queue_review`) or
  /// "obsolete" (its records changed or were retired since it was queued: `close_review`)
  std::string status = "pending";
  std::string fingerprint;      ///< checksum of its records' images when queued (see queue_review)
  std::string decided_by;       ///< reviewer of the last decision ("" = none)
  std::int64_t decided_ms = 0;  ///< when (UTC ms; 0 = never decided)
  std::string decision_note;    ///< the reviewer's reason
  std::int64_t defer_until_ms = 0;  ///< a deferred item is pending again from then (UTC ms)
  /// Tier 2 under a veto window (`watch_repair_options::tier2_veto_window`): applied by the
  /// watch from then (UTC ms) unless a person rejected it; 0 = only a person applies it.
  std::int64_t apply_after_ms = 0;
  /// The faults the action addresses, a JSON array of [finding_key, kind] pairs ("" = not
  /// known: an item queued before the column); noted as repaired faults (the findings history)
  /// when the item is applied, and a fault not listed here reopens an approved item
  /// (`queue_review`).
  std::string faults;
};

/// True when `who` (a review item's `decided_by`) names a person, not memhealth itself ("",
/// "memhealth", "veto-window").
inline bool review_decided_by_person(std::string_view who) noexcept {
  return !who.empty() && who != "memhealth" && who != "veto-window";
}

/// The state database (see the file comment). Move-only; one connection.
class sqlite_state {
 public:
  /// Opens the state database at `path`, creating it (and its schema) when missing unless
  /// `read_only`. @throws error(io) / error(parse) as in the file comment.
  static sqlite_state open(const std::filesystem::path& path, sqlite_state_options opt = {}) {
    sqlite_state s;
    s.path_ = path.string();
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
      throw error(error_code::io, s.path_ + ": is a directory, not a state database");
    const bool existed = std::filesystem::exists(path, ec);
    if (!existed && opt.read_only)
      throw error(error_code::io, s.path_ + ": no state database (nothing has run yet)");
    const int flags =
        opt.read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    s.db_ = detail::sqlite::open_db(s.path_, flags, opt.busy_timeout);
    if (!opt.read_only) s.exec("PRAGMA journal_mode=WAL", "cannot set WAL mode");
    s.exec("PRAGMA foreign_keys=OFF", "cannot configure");
    s.migrate(opt.read_only);
    return s;
  }

  /// The path it was opened from.
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

  /// The SQLite connection, for the state tables other headers keep (live/sqlite_migration.hpp: the
  /// `migrations` and `migration_previous` tables). Owned by this object: never close it.
  [[nodiscard]] sqlite3* handle() const noexcept { return db_.get(); }
  /// True when the database has the migration tables (always after a writable open; a read-only
  /// database written by an older build may lack them: then no migration was ever declared).
  [[nodiscard]] bool has_migrations() const noexcept { return has_migrations_; }

  /// Ties the database to the store it keeps the state of (its path, as the caller names it) on
  /// first use. @throws error(schema) when it was tied to another store (its cursors and
  /// fingerprints would make that store's changes look like nothing, or everything).
  void bind_store(std::string_view store) {
    auto t = begin_immediate();
    {
      auto st = prepare("SELECT value FROM state_meta WHERE key='store'");
      if (step(st.get()) == SQLITE_ROW) {
        const std::string bound = detail::sqlite::column_text(st.get(), 0);
        if (bound != store)
          throw error(error_code::schema, path_ + ": the state database of store '" + bound +
                                              "', not of '" + std::string(store) +
                                              "'; give this store its own --state");
        return;
      }
    }
    auto ins = prepare("INSERT INTO state_meta(key, value) VALUES('store', ?1)");
    bind(ins.get(), 1, store);
    done(ins.get(), "cannot write the store");
    t.commit();
  }

  // ------------------------------------------------------------------ cursors

  /// The clock of the last completed run of check `name`, or nullopt when it never ran.
  [[nodiscard]] std::optional<utc_time> cursor(std::string_view name) const {
    auto st = prepare("SELECT at_ms FROM cursors WHERE name=?1");
    bind(st.get(), 1, name);
    if (step(st.get()) != SQLITE_ROW) return std::nullopt;
    return utc_time{std::chrono::milliseconds{sqlite3_column_int64(st.get(), 0)}};
  }
  /// Moves the cursor of check `name` to `at`; never backwards (a later cursor stays: a run with
  /// an earlier clock, or one that finished after a newer one, does not rewind it).
  void set_cursor(std::string_view name, utc_time at) {
    auto st = prepare(
        "INSERT INTO cursors(name, at_ms) VALUES(?1, ?2) "
        "ON CONFLICT(name) DO UPDATE SET at_ms=max(at_ms, excluded.at_ms)");
    bind(st.get(), 1, name);
    sqlite3_bind_int64(st.get(), 2, ms(at));
    done(st.get(), "cannot write a cursor");
  }

  // ------------------------------------------------------------------ fingerprints

  /// Compares the fingerprints of the records now (`ids[i]`, `fingerprints[i]`, one per record
  /// index) with those last committed. @pre ids.size() == fingerprints.size().
  [[nodiscard]] fingerprint_changes changes(std::span<const std::string> ids,
                                            std::span<const std::uint64_t> fingerprints) const {
    MEMHEALTH_ASSERT(ids.size() == fingerprints.size(), "sqlite_state::changes: sizes differ");
    std::map<std::string, std::uint64_t, std::less<>> old;
    auto st = prepare("SELECT id, fingerprint FROM record_fingerprints");
    while (step(st.get()) == SQLITE_ROW)
      old.emplace(detail::sqlite::column_text(st.get(), 0),
                  static_cast<std::uint64_t>(sqlite3_column_int64(st.get(), 1)));
    fingerprint_changes c;
    c.changed.assign(ids.size(), true);
    std::map<std::string_view, bool> present;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      present[ids[i]] = true;
      const auto it = old.find(ids[i]);
      c.changed[i] = it == old.end() || it->second != fingerprints[i];
      c.changed_count += c.changed[i];
    }
    for (const auto& [id, fp] : old)
      if (!present.count(id)) c.removed.push_back(id);
    return c;
  }
  /// Replaces the committed fingerprints by these (one transaction). A duplicate id keeps the
  /// fingerprint of its last record. @pre ids.size() == fingerprints.size().
  void commit_fingerprints(std::span<const std::string> ids,
                           std::span<const std::uint64_t> fingerprints, utc_time now) {
    MEMHEALTH_ASSERT(ids.size() == fingerprints.size(), "commit_fingerprints: sizes differ");
    auto t = begin_immediate();
    exec("DELETE FROM record_fingerprints", "cannot clear fingerprints");
    auto st = prepare(
        "INSERT OR REPLACE INTO record_fingerprints(id, fingerprint, seen_ms) "
        "VALUES(?1, ?2, ?3)");
    for (std::size_t i = 0; i < ids.size(); ++i) {
      sqlite3_reset(st.get());
      bind(st.get(), 1, ids[i]);
      sqlite3_bind_int64(st.get(), 2, static_cast<std::int64_t>(fingerprints[i]));
      sqlite3_bind_int64(st.get(), 3, ms(now));
      done(st.get(), "cannot write a fingerprint");
    }
    t.commit();
  }

  // ------------------------------------------------------------------ embedding versions

  /// Records the embedding versions a store holds now (version -> records) and returns those
  /// never seen before (a model switch: drift and the migration gate are due).
  std::vector<std::string> note_embedding_versions(
      const std::map<std::string, std::size_t>& versions, utc_time now) {
    auto t = begin_immediate();
    std::vector<std::string> fresh;
    auto seen = prepare("SELECT 1 FROM embedding_versions WHERE version=?1");
    auto up = prepare(
        "INSERT INTO embedding_versions(version, first_seen_ms, last_seen_ms, records) "
        "VALUES(?1, ?2, ?2, ?3) ON CONFLICT(version) DO UPDATE SET "
        "last_seen_ms=excluded.last_seen_ms, records=excluded.records");
    for (const auto& [v, n] : versions) {
      sqlite3_reset(seen.get());
      bind(seen.get(), 1, v);
      if (step(seen.get()) != SQLITE_ROW) fresh.push_back(v);
      sqlite3_reset(up.get());
      bind(up.get(), 1, v);
      sqlite3_bind_int64(up.get(), 2, ms(now));
      sqlite3_bind_int64(up.get(), 3, static_cast<std::int64_t>(n));
      done(up.get(), "cannot write an embedding version");
    }
    t.commit();
    return fresh;
  }
  /// Every embedding version seen, with its first-seen time.
  [[nodiscard]] std::vector<std::pair<std::string, utc_time>> embedding_versions() const {
    std::vector<std::pair<std::string, utc_time>> out;
    auto st = prepare("SELECT version, first_seen_ms FROM embedding_versions ORDER BY version");
    while (step(st.get()) == SQLITE_ROW)
      out.emplace_back(detail::sqlite::column_text(st.get(), 0),
                       utc_time{std::chrono::milliseconds{sqlite3_column_int64(st.get(), 1)}});
    return out;
  }

  // ------------------------------------------------------------------ schedule

  /// Sets the last and next run of scheduled check `name`.
  void set_schedule(std::string_view name, utc_time last, utc_time next) {
    auto st = prepare(
        "INSERT INTO schedule(name, last_ms, next_ms) VALUES(?1, ?2, ?3) "
        "ON CONFLICT(name) DO UPDATE SET last_ms=excluded.last_ms, "
        "next_ms=excluded.next_ms");
    bind(st.get(), 1, name);
    sqlite3_bind_int64(st.get(), 2, ms(last));
    sqlite3_bind_int64(st.get(), 3, ms(next));
    done(st.get(), "cannot write the schedule");
  }
  /// (last, next) of scheduled check `name`, or nullopt when it never ran.
  [[nodiscard]] std::optional<std::pair<utc_time, utc_time>> schedule(std::string_view name) const {
    auto st = prepare("SELECT last_ms, next_ms FROM schedule WHERE name=?1");
    bind(st.get(), 1, name);
    if (step(st.get()) != SQLITE_ROW) return std::nullopt;
    return std::pair{utc_time{std::chrono::milliseconds{sqlite3_column_int64(st.get(), 0)}},
                     utc_time{std::chrono::milliseconds{sqlite3_column_int64(st.get(), 1)}}};
  }

  // ------------------------------------------------------------------ runs ledger

  /// Counts one run on UTC day `day` (days since 1970-01-01) unless `max_per_day` are counted
  /// already. @return true when counted. Atomic across processes.
  bool take_run(std::int64_t day, std::uint32_t max_per_day) {
    auto t = begin_immediate();
    if (runs_on(day) >= max_per_day) return false;
    auto st = prepare(
        "INSERT INTO runs(day, count) VALUES(?1, 1) "
        "ON CONFLICT(day) DO UPDATE SET count=count+1");
    sqlite3_bind_int64(st.get(), 1, day);
    done(st.get(), "cannot count a run");
    t.commit();
    return true;
  }
  /// Gives back a run counted on `day` (a run that changed nothing). Never below zero.
  void give_back_run(std::int64_t day) {
    auto st = prepare("UPDATE runs SET count=count-1 WHERE day=?1 AND count>0");
    sqlite3_bind_int64(st.get(), 1, day);
    done(st.get(), "cannot give back a run");
  }
  /// Runs counted on `day`.
  [[nodiscard]] std::uint32_t runs_on(std::int64_t day) const {
    auto st = prepare("SELECT count FROM runs WHERE day=?1");
    sqlite3_bind_int64(st.get(), 1, day);
    return step(st.get()) == SQLITE_ROW
               ? static_cast<std::uint32_t>(sqlite3_column_int64(st.get(), 0))
               : 0;
  }

  // ------------------------------------------------------------------ repair history

  /// Notes that applied action `key` replaced these images: (record id, image checksum) pairs
  /// (one transaction; a pair noted before keeps its first action).
  void note_replaced_images(std::string_view key,
                            std::span<const std::pair<std::string, std::uint64_t>> images,
                            utc_time now) {
    if (images.empty()) return;
    auto t = begin_immediate();
    auto st = prepare(
        "INSERT OR IGNORE INTO repair_images(record_id, checksum, action_key, at_ms) "
        "VALUES(?1, ?2, ?3, ?4)");
    for (const auto& [id, sum] : images) {
      sqlite3_reset(st.get());
      bind(st.get(), 1, id);
      sqlite3_bind_int64(st.get(), 2, static_cast<std::int64_t>(sum));
      bind(st.get(), 3, key);
      sqlite3_bind_int64(st.get(), 4, ms(now));
      done(st.get(), "cannot write the repair history");
    }
    t.commit();
  }
  /// Whether an applied repair replaced image `checksum` of record `record_id`.
  [[nodiscard]] bool replaced_image(std::string_view record_id, std::uint64_t checksum) const {
    if (!has_images_) return false;
    auto st = prepare("SELECT 1 FROM repair_images WHERE record_id=?1 AND checksum=?2");
    bind(st.get(), 1, record_id);
    sqlite3_bind_int64(st.get(), 2, static_cast<std::int64_t>(checksum));
    return step(st.get()) == SQLITE_ROW;
  }

  /// Records one attempt of the action with idempotency key `key`: success marks it "done"; a
  /// failure counts, and the `max_failures`-th failure sends it to the manual queue ("manual").
  /// @return the action's history after this attempt.
  repair_attempt_state note_attempt(std::string_view key, bool ok, std::string_view error_text,
                                    utc_time now, std::int64_t max_failures = 3) {
    auto t = begin_immediate();
    repair_attempt_state a;
    if (auto prev = attempt(key))
      a = std::move(*prev);
    else
      a.action_key = std::string(key);
    ++a.attempts;
    if (ok) {
      a.state = "done";
      a.last_error.clear();
    } else {
      ++a.failures;
      a.last_error = std::string(error_text);
      a.state = a.failures >= max_failures ? "manual" : "retry";
    }
    auto st = prepare(
        "INSERT INTO repair_attempts(action_key, attempts, failures, last_ms, last_error, state) "
        "VALUES(?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(action_key) DO UPDATE SET "
        "attempts=excluded.attempts, failures=excluded.failures, last_ms=excluded.last_ms, "
        "last_error=excluded.last_error, state=excluded.state");
    bind(st.get(), 1, key);
    sqlite3_bind_int64(st.get(), 2, a.attempts);
    sqlite3_bind_int64(st.get(), 3, a.failures);
    sqlite3_bind_int64(st.get(), 4, ms(now));
    bind(st.get(), 5, a.last_error);
    bind(st.get(), 6, a.state);
    done(st.get(), "cannot write the repair history");
    t.commit();
    return a;
  }
  /// The history of the action with key `key`, or nullopt when never attempted.
  [[nodiscard]] std::optional<repair_attempt_state> attempt(std::string_view key) const {
    auto st = prepare(
        "SELECT attempts, failures, last_error, state FROM repair_attempts "
        "WHERE action_key=?1");
    bind(st.get(), 1, key);
    if (step(st.get()) != SQLITE_ROW) return std::nullopt;
    return repair_attempt_state{
        std::string(key), sqlite3_column_int64(st.get(), 0), sqlite3_column_int64(st.get(), 1),
        detail::sqlite::column_text(st.get(), 2), detail::sqlite::column_text(st.get(), 3)};
  }
  /// The manual queue: actions that failed `max_failures` times, by key.
  [[nodiscard]] std::vector<repair_attempt_state> manual_queue() const {
    std::vector<repair_attempt_state> out;
    auto st = prepare(
        "SELECT action_key, attempts, failures, last_error, state FROM "
        "repair_attempts WHERE state='manual' ORDER BY action_key");
    while (step(st.get()) == SQLITE_ROW)
      out.push_back({detail::sqlite::column_text(st.get(), 0), sqlite3_column_int64(st.get(), 1),
                     sqlite3_column_int64(st.get(), 2), detail::sqlite::column_text(st.get(), 3),
                     detail::sqlite::column_text(st.get(), 4)});
    return out;
  }

  /// The repair history rows whose key starts with `prefix` (a store's scope and U+001F, or ""
  /// for all), by key.
  [[nodiscard]] std::vector<repair_attempt_state> repair_attempts_with_prefix(
      std::string_view prefix) const {
    std::vector<repair_attempt_state> out;
    auto st = prepare(
        "SELECT action_key, attempts, failures, last_error, state FROM repair_attempts "
        "WHERE substr(action_key, 1, length(?1)) = ?1 ORDER BY action_key");
    bind(st.get(), 1, prefix);
    while (step(st.get()) == SQLITE_ROW)
      out.push_back({detail::sqlite::column_text(st.get(), 0), sqlite3_column_int64(st.get(), 1),
                     sqlite3_column_int64(st.get(), 2), detail::sqlite::column_text(st.get(), 3),
                     detail::sqlite::column_text(st.get(), 4)});
    return out;
  }

  /// Releases action `key` from the repair history (a person fixed the cause): its row of
  /// `repair_attempts` as it was is copied to `repair_releases` with `reviewer`, `note` and
  /// `now_ms`, then its failures are set to 0 and its state to "retry" (so the next run tries it
  /// again with every attempt; nothing is deleted), and the proposals counted for it
  /// (`repair_proposals` rows tagged with it) start again at 0. One transaction.
  /// @return the row before the release. @throws error(invalid_argument) for an empty reviewer
  /// or note; error(not_found) when the history has no row `key`; error(io/busy) on a write
  /// failure.
  repair_attempt_state release_action(std::string_view key, std::string_view reviewer,
                                      std::string_view note, std::int64_t now_ms) {
    if (reviewer.empty() || note.empty())
      throw error(error_code::invalid_argument,
                  "release_action: a reviewer name and a reason are required");
    auto t = begin_immediate();
    const auto prev = attempt(key);
    if (!prev)
      throw error(error_code::not_found,
                  path_ + ": the repair history has no action '" + std::string(key) + "'");
    auto ins = prepare(
        "INSERT INTO repair_releases(action_key, released_ms, reviewer, note, attempts, "
        "failures, last_error, state) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
    bind(ins.get(), 1, key);
    sqlite3_bind_int64(ins.get(), 2, now_ms);
    bind(ins.get(), 3, reviewer);
    bind(ins.get(), 4, note);
    sqlite3_bind_int64(ins.get(), 5, prev->attempts);
    sqlite3_bind_int64(ins.get(), 6, prev->failures);
    bind(ins.get(), 7, prev->last_error);
    bind(ins.get(), 8, prev->state);
    done(ins.get(), "cannot record the release");
    auto up = prepare(
        "UPDATE repair_attempts SET failures=0, state='retry', last_ms=?2, "
        "last_error='released by ' || ?3 || ': ' || ?4 WHERE action_key=?1");
    bind(up.get(), 1, key);
    sqlite3_bind_int64(up.get(), 2, now_ms);
    bind(up.get(), 3, reviewer);
    bind(up.get(), 4, note);
    done(up.get(), "cannot release the action");
    auto pr = prepare("UPDATE repair_proposals SET proposals=0 WHERE action_key=?1");
    bind(pr.get(), 1, key);
    done(pr.get(), "cannot release the action's proposals");
    t.commit();
    return *prev;
  }

  /// One release (`release_action`) as recorded.
  struct release_record {
    std::string action_key;        ///< the released action's key
    std::int64_t released_ms = 0;  ///< when (UTC ms)
    std::string reviewer;          ///< who released it
    std::string note;              ///< why
    repair_attempt_state before;   ///< its history row before the release
  };
  /// The releases of actions whose key starts with `prefix` ("" = all), oldest first.
  [[nodiscard]] std::vector<release_record> releases(std::string_view prefix = {}) const {
    std::vector<release_record> out;
    if (!has_history_) return out;
    auto st = prepare(
        "SELECT action_key, released_ms, reviewer, note, attempts, failures, last_error, state "
        "FROM repair_releases WHERE substr(action_key, 1, length(?1)) = ?1 "
        "ORDER BY released_ms, rowid");
    bind(st.get(), 1, prefix);
    using detail::sqlite::column_text;
    while (step(st.get()) == SQLITE_ROW) {
      release_record r;
      r.action_key = column_text(st.get(), 0);
      r.released_ms = sqlite3_column_int64(st.get(), 1);
      r.reviewer = column_text(st.get(), 2);
      r.note = column_text(st.get(), 3);
      r.before = {r.action_key, sqlite3_column_int64(st.get(), 4),
                  sqlite3_column_int64(st.get(), 5), column_text(st.get(), 6),
                  column_text(st.get(), 7)};
      out.push_back(std::move(r));
    }
    return out;
  }

  /// Times an action was applied over the before-images named by `proposal_key` (0 = never).
  [[nodiscard]] std::int64_t proposals(std::string_view proposal_key) const {
    if (!has_history_) return 0;
    auto st = prepare("SELECT proposals FROM repair_proposals WHERE proposal_key=?1");
    bind(st.get(), 1, proposal_key);
    return step(st.get()) == SQLITE_ROW ? sqlite3_column_int64(st.get(), 0) : 0;
  }
  /// Notes action `action_key` over the before-images `proposal_key`: `applied` counts one
  /// application; false only tags the row with the action (a held third proposal, so that
  /// releasing that action resets the count).
  void note_proposal(std::string_view proposal_key, std::string_view action_key, bool applied,
                     utc_time now) {
    auto st = prepare(
        "INSERT INTO repair_proposals(proposal_key, action_key, proposals, first_ms, last_ms) "
        "VALUES(?1, ?2, ?3, ?4, ?4) ON CONFLICT(proposal_key) DO UPDATE SET "
        "action_key=excluded.action_key, proposals=proposals+excluded.proposals, "
        "last_ms=excluded.last_ms");
    bind(st.get(), 1, proposal_key);
    bind(st.get(), 2, action_key);
    sqlite3_bind_int64(st.get(), 3, applied ? 1 : 0);
    sqlite3_bind_int64(st.get(), 4, ms(now));
    done(st.get(), "cannot write the repair proposals");
  }

  // ------------------------------------------------------------------ findings history

  /// Notes a check run of store `scope` (its history scope) at `at`: `full` when every detector
  /// ran over every record, `open_errors` the error or critical findings open after it, and
  /// `found` the `finding_key`s it found (every one, or at least those of `pending_fault_keys`).
  /// The run is kept when it is full, is the scope's first, or changes whether an error is open
  /// (the uptime's step function needs no more); each repaired fault of the scope repaired
  /// before `at`, not yet recurred, whose key is in `found` is marked recurred at `at`. One
  /// transaction. @return true when the run was kept. @throws error(io/busy) on a write failure.
  bool note_history_run(std::string_view scope, utc_time at, bool full, std::size_t open_errors,
                        std::span<const std::string> found) {
    auto t = begin_immediate();
    bool keep = full;
    {
      auto last = prepare(
          "SELECT open_errors FROM history_runs WHERE scope=?1 ORDER BY at_ms DESC, rowid DESC "
          "LIMIT 1");
      bind(last.get(), 1, scope);
      if (step(last.get()) != SQLITE_ROW)
        keep = true;
      else
        keep = keep || (sqlite3_column_int64(last.get(), 0) > 0) != (open_errors > 0);
    }
    if (keep) {
      auto ins = prepare(
          "INSERT INTO history_runs(scope, at_ms, full, open_errors) VALUES(?1, ?2, ?3, ?4)");
      bind(ins.get(), 1, scope);
      sqlite3_bind_int64(ins.get(), 2, ms(at));
      sqlite3_bind_int(ins.get(), 3, full ? 1 : 0);
      sqlite3_bind_int64(ins.get(), 4, static_cast<std::int64_t>(open_errors));
      done(ins.get(), "cannot write the findings history");
    }
    if (!found.empty()) {
      std::vector<std::string> pending;
      {
        auto st = prepare(
            "SELECT DISTINCT finding_key FROM repaired_faults WHERE scope=?1 AND recurred_ms=0 "
            "AND repaired_ms < ?2");
        bind(st.get(), 1, scope);
        sqlite3_bind_int64(st.get(), 2, ms(at));
        while (step(st.get()) == SQLITE_ROW)
          pending.push_back(detail::sqlite::column_text(st.get(), 0));
      }
      std::sort(pending.begin(), pending.end());
      auto up = prepare(
          "UPDATE repaired_faults SET recurred_ms=?3 WHERE scope=?1 AND finding_key=?2 AND "
          "recurred_ms=0 AND repaired_ms < ?3");
      for (const auto& k : found) {
        if (!std::binary_search(pending.begin(), pending.end(), k)) continue;
        sqlite3_reset(up.get());
        bind(up.get(), 1, scope);
        bind(up.get(), 2, k);
        sqlite3_bind_int64(up.get(), 3, ms(at));
        done(up.get(), "cannot write a recurrence");
      }
    }
    t.commit();
    return keep;
  }
  /// The keys of the repaired faults of `scope` not yet seen again, sorted (what a run must look
  /// for; `note_history_run`).
  [[nodiscard]] std::vector<std::string> pending_fault_keys(std::string_view scope) const {
    std::vector<std::string> out;
    if (!has_history_) return out;
    auto st = prepare(
        "SELECT DISTINCT finding_key FROM repaired_faults WHERE scope=?1 AND recurred_ms=0 "
        "ORDER BY finding_key");
    bind(st.get(), 1, scope);
    while (step(st.get()) == SQLITE_ROW) out.push_back(detail::sqlite::column_text(st.get(), 0));
    return out;
  }
  /// Notes that action `action_key`, applied at `at`, repaired the faults `faults` ((finding_key,
  /// kind) pairs) of store `scope`. A fault noted before at the same time is kept as it was.
  void note_repaired_faults(std::string_view scope, std::string_view action_key,
                            std::span<const std::pair<std::string, std::string>> faults,
                            utc_time at) {
    if (faults.empty()) return;
    auto t = begin_immediate();
    auto st = prepare(
        "INSERT OR IGNORE INTO repaired_faults(scope, finding_key, kind, action_key, repaired_ms, "
        "recurred_ms) VALUES(?1, ?2, ?3, ?4, ?5, 0)");
    for (const auto& [key, kind] : faults) {
      sqlite3_reset(st.get());
      bind(st.get(), 1, scope);
      bind(st.get(), 2, key);
      bind(st.get(), 3, kind);
      bind(st.get(), 4, action_key);
      sqlite3_bind_int64(st.get(), 5, ms(at));
      done(st.get(), "cannot write a repaired fault");
    }
    t.commit();
  }
  /// The repaired faults of store `scope`, newest first.
  [[nodiscard]] std::vector<repaired_fault> repaired_faults(std::string_view scope) const {
    std::vector<repaired_fault> out;
    if (!has_history_) return out;
    auto st = prepare(
        "SELECT finding_key, kind, action_key, repaired_ms, recurred_ms FROM repaired_faults "
        "WHERE scope=?1 ORDER BY repaired_ms DESC, finding_key");
    bind(st.get(), 1, scope);
    while (step(st.get()) == SQLITE_ROW) {
      repaired_fault f;
      f.finding_key = detail::sqlite::column_text(st.get(), 0);
      f.kind = detail::sqlite::column_text(st.get(), 1);
      f.action_key = detail::sqlite::column_text(st.get(), 2);
      f.repaired_at = utc_time{std::chrono::milliseconds{sqlite3_column_int64(st.get(), 3)}};
      if (const auto r = sqlite3_column_int64(st.get(), 4); r != 0)
        f.recurred_at = utc_time{std::chrono::milliseconds{r}};
      out.push_back(std::move(f));
    }
    return out;
  }
  /// The check runs of store `scope` from the last one before `from` (the state in force at
  /// `from`) up to `to`, oldest first.
  [[nodiscard]] std::vector<history_run> history_runs(std::string_view scope, utc_time from,
                                                      utc_time to) const {
    std::vector<history_run> out;
    if (!has_history_) return out;
    auto st = prepare(
        "SELECT at_ms, full, open_errors FROM history_runs WHERE scope=?1 AND at_ms <= ?3 AND "
        "at_ms >= coalesce((SELECT max(at_ms) FROM history_runs WHERE scope=?1 AND at_ms < ?2), "
        "?2) ORDER BY at_ms, rowid");
    bind(st.get(), 1, scope);
    sqlite3_bind_int64(st.get(), 2, ms(from));
    sqlite3_bind_int64(st.get(), 3, ms(to));
    while (step(st.get()) == SQLITE_ROW)
      out.push_back({utc_time{std::chrono::milliseconds{sqlite3_column_int64(st.get(), 0)}},
                     sqlite3_column_int(st.get(), 1) != 0,
                     static_cast<std::size_t>(sqlite3_column_int64(st.get(), 2))});
    return out;
  }
  /// The figures that span runs of store `scope` at `now` (store/run_history.hpp): repair
  /// success of every repaired fault against `window`, and uptime over [now - uptime_window,
  /// now]. The runs read reach back to the oldest repair (for the run-count window).
  [[nodiscard]] run_history_figures history_figures_of(std::string_view scope,
                                                       const recurrence_window& window,
                                                       std::chrono::milliseconds uptime_window,
                                                       utc_time now) const {
    auto faults = repaired_faults(scope);
    utc_time from = now - uptime_window;
    for (const auto& f : faults) from = std::min(from, f.repaired_at);
    const auto runs = history_runs(scope, from, now);
    return history_figures(std::string(scope), std::move(faults), runs, window, uptime_window, now);
  }

  // ------------------------------------------------------------------ review queue

  /// Queues `item` for a person. An item with the same key is not queued twice; when one exists:
  /// - pending or "obsolete" (closed by `close_review`): left as it is while its records are the
  ///   same (`fingerprint`); when they changed it takes the new fingerprint, action, reason and
  ///   faults (an obsolete one is pending again, its old note kept: "obsolete by WHO (NOTE),
  ///   proposed again: its records changed");
  /// - rejected: proposed again (pending) only when its records changed, the old decision kept
  ///   in `decision_note` ("rejected by WHO (NOTE), proposed again: its records changed");
  /// - approved: reopened (pending, "approved by WHO (NOTE), proposed again: REASON") when
  ///   `fault_came_back` (the watch's action failed as done in an earlier run: the agent wrote
  ///   the fault back) or `item.faults` lists a fault the approved item's did not (a new fault
  ///   over the same action, e.g. a new scope-leak window);
  /// - deferred or superseded: left alone.
  /// An item a person decided before (`review_decided_by_person(decided_by)`: rejected,
  /// approved, or a deferral) that is proposed again waits for a person: its `apply_after_ms`
  /// is 0 (no veto window), and `decided_by` stays who decided. So does a new item of the same
  /// store scope, type and targets (in any order) as one a person rejected or deferred under
  /// another key (the latest such; `decided_by` that person, note "STATUS by WHO (NOTE) as ID,
  /// proposed again: its records changed"). The same proposal under another key is not queued
  /// either: while an item of the same store scope (the key's part before its last '\x1f'), type
  /// and targets over the same records (a non-empty, equal `fingerprint`) is pending, rejected or
  /// deferred, `item` is not added (an action whose key depends on the clock, such as a
  /// down-weight's weight, would otherwise come back under a new key at every run: a rejection or a
  /// deferral would not hold, and the queue would grow by one item per run). When `item` is added
  /// or updated, every other *pending* item of the same store scope, type and targets whose
  /// `fingerprint` differs (both non-empty: its records changed since it was queued) is marked
  /// "superseded" (`supersede_reviews`): kept with its decision note "superseded by KEY: its
  /// records changed since it was queued", `decided_by` "memhealth", `decided_ms` the new item's
  /// `queued_ms`; a person's decision (rejected, deferred, approved) is left alone. @return true
  /// when the item was added, updated or reopened.
  /// @throws error(io/busy) on a write failure.
  bool queue_review(const review_item& item, bool fault_came_back = false) {
    const auto old = review(item.key);
    if (!old) {
      if (!item.fingerprint.empty() && same_proposal_waiting(item)) return false;
      // a person rejected or deferred this proposal under another key (a down-weight's key
      // follows the clock): the new one waits for a person too, that decision noted
      std::string who, note;
      std::int64_t apply_after = item.apply_after_ms;
      if (const auto earlier = person_decided_proposal(item)) {
        who = earlier->decided_by;
        const auto p = earlier->key.rfind('\x1f');
        note = earlier->status + " by " + who + " (" + earlier->decision_note + ") as " +
               (p == std::string::npos ? earlier->key : earlier->key.substr(p + 1)) +
               ", proposed again: its records changed";
        apply_after = 0;
      }
      auto st = prepare(
          "INSERT INTO review_items(action_key, type, tier, targets, action, reason, queued_ms, "
          "status, fingerprint, decided_by, decided_ms, decision_note, defer_until_ms, "
          "apply_after_ms, faults) "
          "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, 'pending', ?8, ?11, 0, ?12, 0, ?9, ?10)");
      bind(st.get(), 1, item.key);
      bind(st.get(), 2, item.type);
      sqlite3_bind_int(st.get(), 3, item.tier);
      bind(st.get(), 4, item.targets);
      bind(st.get(), 5, item.action_json);
      bind(st.get(), 6, item.reason);
      sqlite3_bind_int64(st.get(), 7, item.queued_ms);
      bind(st.get(), 8, item.fingerprint);
      sqlite3_bind_int64(st.get(), 9, apply_after);
      bind(st.get(), 10, item.faults);
      bind(st.get(), 11, who);
      bind(st.get(), 12, note);
      done(st.get(), "cannot write the review queue");
      (void)supersede_reviews(item);
      return true;
    }
    const bool changed = old->fingerprint != item.fingerprint;
    std::string note = old->decision_note;
    const auto trail = [&](std::string_view why) {
      note = old->status + " by " + (old->decided_by.empty() ? "memhealth" : old->decided_by) +
             " (" + old->decision_note + "), proposed again: " + std::string(why);
    };
    if (old->status == "pending") {
      if (!changed) return false;
    } else if (old->status == "rejected" || old->status == "obsolete") {
      if (!changed) return false;
      trail("its records changed");
    } else if (old->status == "approved") {
      std::string fresh;  // a fault the approved item did not address
      if (!fault_came_back) fresh = new_fault(old->faults, item.faults);
      if (!fault_came_back && fresh.empty()) return false;
      trail(fault_came_back ? "the fault came back after it was applied"
                            : "a new fault (" + fresh + ")");
    } else {
      return false;  // deferred (a person's time), superseded
    }
    auto st = prepare(
        "UPDATE review_items SET reason=?2, queued_ms=?3, fingerprint=?4, action=?5, "
        "apply_after_ms=?6, decision_note=?7, status='pending', faults=?8 WHERE action_key=?1");
    bind(st.get(), 1, item.key);
    bind(st.get(), 2, item.reason);
    sqlite3_bind_int64(st.get(), 3, item.queued_ms);
    bind(st.get(), 4, item.fingerprint);
    bind(st.get(), 5, item.action_json);
    sqlite3_bind_int64(st.get(), 6,
                       review_decided_by_person(old->decided_by) ? 0 : item.apply_after_ms);
    bind(st.get(), 7, note);
    bind(st.get(), 8, item.faults.empty() ? old->faults : item.faults);
    done(st.get(), "cannot write the review queue");
    (void)supersede_reviews(item);
    return true;
  }
  /// Closes pending item `key` that can no longer be applied as queued (its records changed or
  /// were retired since): status `status` ("obsolete" or "superseded"), `note` ahead of the old
  /// decision note (kept: "NOTE; earlier: OLD"), at `now_ms`; `decided_by` stays a person's
  /// name when one decided it before, else "memhealth". Nothing is deleted; the watch proposes
  /// it again (`queue_review`) while its fault holds. @return false when `key` is not pending.
  /// @throws error(invalid_argument) for another status; error(io/busy) on a write failure.
  bool close_review(std::string_view key, std::string_view status, std::string_view note,
                    std::int64_t now_ms) {
    if (status != "obsolete" && status != "superseded")
      throw error(error_code::invalid_argument,
                  "close_review: status must be obsolete or superseded");
    auto st = prepare(
        "UPDATE review_items SET status=?2, decided_ms=?4, "
        "decided_by=CASE WHEN decided_by IN ('', 'memhealth', 'veto-window') THEN 'memhealth' "
        "ELSE decided_by END, "
        "decision_note=CASE WHEN decision_note='' THEN ?3 ELSE ?3 || '; earlier: ' || "
        "decision_note END WHERE action_key=?1 AND status='pending'");
    bind(st.get(), 1, key);
    bind(st.get(), 2, status);
    bind(st.get(), 3, note);
    sqlite3_bind_int64(st.get(), 4, now_ms);
    done(st.get(), "cannot write the review queue");
    return sqlite3_changes(db_.get()) > 0;
  }
  /// Takes pending item `key` out of its veto window: `apply_after_ms` 0 (only a person applies
  /// it now), `note` ahead of the old decision note ("NOTE; earlier: OLD"), `decided_by`
  /// "veto-window" unless a person decided it before, at `now_ms`; its status stays pending.
  /// @return false when `key` is not a pending item under a veto window.
  /// @throws error(io/busy) on a write failure.
  bool hold_review(std::string_view key, std::string_view note, std::int64_t now_ms) {
    auto st = prepare(
        "UPDATE review_items SET apply_after_ms=0, decided_ms=?3, "
        "decided_by=CASE WHEN decided_by IN ('', 'memhealth', 'veto-window') THEN 'veto-window' "
        "ELSE decided_by END, "
        "decision_note=CASE WHEN decision_note='' THEN ?2 ELSE ?2 || '; earlier: ' || "
        "decision_note END WHERE action_key=?1 AND status='pending' AND apply_after_ms > 0");
    bind(st.get(), 1, key);
    bind(st.get(), 2, note);
    sqlite3_bind_int64(st.get(), 3, now_ms);
    done(st.get(), "cannot write the review queue");
    return sqlite3_changes(db_.get()) > 0;
  }
  /// Marks "superseded" the pending items of `item`'s store scope (the key's part before its
  /// last '\x1f'), type and targets, under another key, whose non-empty `fingerprint` differs
  /// from `item`'s (non-empty): the proposal `item` replaces, made over records as they were.
  /// Decision note "superseded by KEY: its records changed since it was queued" (KEY without its
  /// scope), `decided_by` "memhealth", `decided_ms` = `item.queued_ms`. Nothing is deleted.
  /// @return the items marked. @throws error(io/busy) on a write failure.
  std::size_t supersede_reviews(const review_item& item) {
    if (!has_reviews_ || item.fingerprint.empty()) return 0;
    std::vector<std::string> keys;
    {
      auto st = prepare(
          "SELECT action_key FROM review_items WHERE type = ?1 AND targets = ?2 AND "
          "status = 'pending' AND fingerprint <> ?3 AND fingerprint <> '' AND action_key <> ?4");
      bind(st.get(), 1, item.type);
      bind(st.get(), 2, item.targets);
      bind(st.get(), 3, item.fingerprint);
      bind(st.get(), 4, item.key);
      const auto scope = review_key_scope(item.key);
      while (step(st.get()) == SQLITE_ROW) {
        std::string key = detail::sqlite::column_text(st.get(), 0);
        if (review_key_scope(key) == scope) keys.push_back(std::move(key));
      }
    }
    const auto p = item.key.rfind('\x1f');
    const std::string note = "superseded by " +
                             (p == std::string::npos ? item.key : item.key.substr(p + 1)) +
                             ": its records changed since it was queued";
    for (const auto& key : keys) {
      auto up = prepare(
          "UPDATE review_items SET status='superseded', decided_by='memhealth', decided_ms=?2, "
          "decision_note=?3 WHERE action_key=?1 AND status='pending'");
      bind(up.get(), 1, key);
      sqlite3_bind_int64(up.get(), 2, item.queued_ms);
      bind(up.get(), 3, note);
      done(up.get(), "cannot write the review queue");
    }
    return keys.size();
  }
  /// Items of the review queue with status `status` ("" = every item), oldest first. "pending"
  /// includes deferred items whose time came (at `now_ms`; 0 = deferred items stay deferred).
  [[nodiscard]] std::vector<review_item> review_items(std::string_view status = "pending",
                                                      std::int64_t now_ms = 0) const {
    std::vector<review_item> out;
    if (!has_reviews_) return out;
    auto st = prepare(std::string(review_select) +
                      "WHERE ?1 = '' "
                      "OR status = ?1 OR (?1 = 'pending' AND status = 'deferred' AND ?2 > 0 AND "
                      "defer_until_ms <= ?2) ORDER BY queued_ms, action_key");
    bind(st.get(), 1, status);
    sqlite3_bind_int64(st.get(), 2, now_ms);
    while (step(st.get()) == SQLITE_ROW) out.push_back(review_row(st.get()));
    return out;
  }
  /// The item with key `key`, or nullopt.
  [[nodiscard]] std::optional<review_item> review(std::string_view key) const {
    if (!has_reviews_) return std::nullopt;
    auto st = prepare(std::string(review_select) + "WHERE action_key = ?1");
    bind(st.get(), 1, key);
    if (step(st.get()) != SQLITE_ROW) return std::nullopt;
    return review_row(st.get());
  }
  /// Records a person's decision on item `key`: `status` "approved", "rejected", "deferred" (then
  /// pending again from `defer_until_ms`, for a person: the veto window never applies it) or
  /// "pending" (a decision undone), by `reviewer`, for `note`, at `now_ms`. An earlier decision
  /// is kept in the note: "NOTE; earlier: STATUS by WHO (OLD NOTE)". @throws error(not_found) for
  /// an unknown key; error(invalid_argument) for another status or an empty reviewer;
  /// error(io/busy) on a write failure.
  void decide_review(std::string_view key, std::string_view status, std::string_view reviewer,
                     std::string_view note, std::int64_t now_ms, std::int64_t defer_until_ms = 0) {
    if (status != "approved" && status != "rejected" && status != "deferred" && status != "pending")
      throw error(error_code::invalid_argument,
                  "decide_review: status must be approved, rejected, deferred or pending");
    if (reviewer.empty())
      throw error(error_code::invalid_argument, "decide_review: a reviewer name is required");
    // the earlier decision stays in the note (an audit trail: who rejected or deferred, and why)
    auto st = prepare(
        "UPDATE review_items SET status=?2, decided_by=?3, "
        "decision_note=CASE WHEN decided_by='' OR decision_note='' THEN ?4 ELSE ?4 || "
        "'; earlier: ' || status || ' by ' || decided_by || ' (' || decision_note || ')' END, "
        "decided_ms=?5, defer_until_ms=?6 WHERE action_key=?1");
    bind(st.get(), 1, key);
    bind(st.get(), 2, status);
    bind(st.get(), 3, reviewer);
    bind(st.get(), 4, note);
    sqlite3_bind_int64(st.get(), 5, now_ms);
    sqlite3_bind_int64(st.get(), 6, defer_until_ms);
    done(st.get(), "cannot write a review decision");
    if (sqlite3_changes(db_.get()) == 0)
      throw error(error_code::not_found,
                  path_ + ": no review item with key '" + std::string(key) + "'");
  }
  /// Number of review items with status `status` ("" = all).
  [[nodiscard]] std::size_t review_count(std::string_view status = "pending") const {
    if (!has_reviews_) return 0;
    auto st = prepare("SELECT count(*) FROM review_items WHERE ?1 = '' OR status = ?1");
    bind(st.get(), 1, status);
    step(st.get());
    return static_cast<std::size_t>(sqlite3_column_int64(st.get(), 0));
  }

 private:
  sqlite_state() = default;

  // Scope of a review item's key: the part before its last '\x1f' ("" when it has none).
  static std::string_view review_key_scope(std::string_view key) noexcept {
    const auto p = key.rfind('\x1f');
    return p == std::string_view::npos ? std::string_view{} : key.substr(0, p);
  }

  // The first fault of `now` (a JSON array of [finding_key, kind]) not in `before` (""
  // when none, or when either does not parse: an item queued before the column knows none).
  static std::string new_fault(const std::string& before, const std::string& now) {
    const auto b = nlohmann::json::parse(before, nullptr, false);
    const auto n = nlohmann::json::parse(now, nullptr, false);
    if (!b.is_array() || !n.is_array()) return {};
    for (const auto& f : n)
      if (std::find(b.begin(), b.end(), f) == b.end())
        return f.is_array() && !f.empty() && f[0].is_string() ? f[0].get<std::string>() : f.dump();
    return {};
  }

  // The latest item of `item`'s key scope, type and targets (in any order) under another key
  // that a person rejected or deferred (nullopt: none).
  std::optional<review_item> person_decided_proposal(const review_item& item) const {
    if (!has_reviews_) return std::nullopt;
    // the targets as a set: a merge's primary (its first target) may change with the records
    const auto target_set = [](const std::string& json) {
      std::vector<std::string> ids;
      const auto j = nlohmann::json::parse(json, nullptr, false);
      if (j.is_array())
        for (const auto& x : j)
          if (x.is_string()) ids.push_back(x.get<std::string>());
      std::sort(ids.begin(), ids.end());
      return ids;
    };
    const auto mine = target_set(item.targets);
    auto st = prepare(std::string(review_select) +
                      "WHERE type = ?1 AND action_key <> ?2 AND status IN "
                      "('rejected', 'deferred') ORDER BY decided_ms DESC");
    bind(st.get(), 1, item.type);
    bind(st.get(), 2, item.key);
    const auto scope = review_key_scope(item.key);
    while (step(st.get()) == SQLITE_ROW) {
      auto r = review_row(st.get());
      if (review_key_scope(r.key) == scope && review_decided_by_person(r.decided_by) &&
          target_set(r.targets) == mine)
        return r;
    }
    return std::nullopt;
  }

  // True when an item of `item`'s key scope, type, targets and fingerprint is pending, rejected
  // or deferred under another key (see queue_review).
  bool same_proposal_waiting(const review_item& item) const {
    if (!has_reviews_) return false;
    auto st = prepare(
        "SELECT action_key FROM review_items WHERE type = ?1 AND fingerprint = ?2 AND "
        "targets = ?3 AND status IN ('pending', 'rejected', 'deferred') AND action_key <> ?4");
    bind(st.get(), 1, item.type);
    bind(st.get(), 2, item.fingerprint);
    bind(st.get(), 3, item.targets);
    bind(st.get(), 4, item.key);
    const auto scope = review_key_scope(item.key);
    while (step(st.get()) == SQLITE_ROW) {
      const std::string key = detail::sqlite::column_text(st.get(), 0);
      if (review_key_scope(key) == scope) return true;
    }
    return false;
  }

  // The columns `review_row` reads, in its order.
  static constexpr const char* review_select =
      "SELECT action_key, type, tier, targets, action, reason, queued_ms, status, fingerprint, "
      "decided_by, decided_ms, decision_note, defer_until_ms, apply_after_ms, faults "
      "FROM review_items ";

  static review_item review_row(sqlite3_stmt* st) {
    using detail::sqlite::column_text;
    review_item r;
    r.key = column_text(st, 0);
    r.type = column_text(st, 1);
    r.tier = sqlite3_column_int(st, 2);
    r.targets = column_text(st, 3);
    r.action_json = column_text(st, 4);
    r.reason = column_text(st, 5);
    r.queued_ms = sqlite3_column_int64(st, 6);
    r.status = column_text(st, 7);
    r.fingerprint = column_text(st, 8);
    r.decided_by = column_text(st, 9);
    r.decided_ms = sqlite3_column_int64(st, 10);
    r.decision_note = column_text(st, 11);
    r.defer_until_ms = sqlite3_column_int64(st, 12);
    r.apply_after_ms = sqlite3_column_int64(st, 13);
    r.faults = column_text(st, 14);
    return r;
  }

  // BEGIN IMMEDIATE ... COMMIT; rolled back when not committed (an exception on the way).
  [[nodiscard]] detail::sqlite::immediate_transaction begin_immediate() {
    return detail::sqlite::immediate_transaction(db_.get(), path_);
  }

  static std::int64_t ms(utc_time t) noexcept {
    return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  }
  void exec(const char* sql, std::string_view what) const {
    detail::sqlite::exec(db_.get(), sql, path_, what);
  }
  detail::sqlite::stmt_ptr prepare(std::string_view sql) const {
    return detail::sqlite::prepare(db_.get(), sql, path_);
  }
  static void bind(sqlite3_stmt* st, int col, std::string_view v) {
    detail::sqlite::bind_text(st, col, v);
  }
  int step(sqlite3_stmt* st) const { return detail::sqlite::step(db_.get(), st, path_); }
  void done(sqlite3_stmt* st, std::string_view what) const {
    detail::sqlite::step_done(db_.get(), st, path_, what);
  }

  // Creates the schema in a new database, checks the version of an existing one. Creation runs
  // in a BEGIN IMMEDIATE transaction that reads the tables again, so processes that open a new
  // database at the same moment create it once.
  void migrate(bool read_only) {
    const auto tables_now = [&] {
      return detail::sqlite::query_text(
          db_.get(), "SELECT group_concat(name, ',') FROM sqlite_master WHERE type='table'", path_,
          "cannot read the schema");
    };
    std::string tables = tables_now();
    if (tables.empty()) {
      if (read_only) throw error(error_code::parse, path_ + ": empty, not a state database");
      auto t = begin_immediate();
      if (tables_now().empty()) {  // not created by another process meanwhile
        exec(
            "CREATE TABLE state_meta(key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL);"
            "CREATE TABLE cursors(name TEXT PRIMARY KEY NOT NULL, at_ms INTEGER NOT NULL);"
            "CREATE TABLE record_fingerprints(id TEXT PRIMARY KEY NOT NULL,"
            " fingerprint INTEGER NOT NULL, seen_ms INTEGER NOT NULL);"
            "CREATE TABLE embedding_versions(version TEXT PRIMARY KEY NOT NULL,"
            " first_seen_ms INTEGER NOT NULL, last_seen_ms INTEGER NOT NULL,"
            " records INTEGER NOT NULL);"
            "CREATE TABLE schedule(name TEXT PRIMARY KEY NOT NULL, last_ms INTEGER NOT NULL,"
            " next_ms INTEGER NOT NULL);"
            "CREATE TABLE runs(day INTEGER PRIMARY KEY NOT NULL, count INTEGER NOT NULL);"
            "CREATE TABLE repair_attempts(action_key TEXT PRIMARY KEY NOT NULL,"
            " attempts INTEGER NOT NULL, failures INTEGER NOT NULL, last_ms INTEGER NOT NULL,"
            " last_error TEXT NOT NULL, state TEXT NOT NULL);",
            "cannot create the schema");
        exec(("INSERT INTO state_meta VALUES('schema_version','" +
              std::to_string(sqlite_state_schema_version) + "')")
                 .c_str(),
             "cannot write the schema version");
      }
      t.commit();
      tables = tables_now();
    }
    if (("," + tables + ",").find(",state_meta,") == std::string::npos)
      throw error(error_code::schema,
                  path_ +
                      ": an SQLite database, but not a memhealth state database (no "
                      "state_meta table); give another --state path");
    const std::string v = detail::sqlite::query_text(
        db_.get(), "SELECT value FROM state_meta WHERE key='schema_version'", path_,
        "cannot read the schema version");
    if (v != std::to_string(sqlite_state_schema_version))
      throw error(error_code::schema, path_ + ": state database schema version '" + v +
                                          "'; this build reads only " +
                                          std::to_string(sqlite_state_schema_version) +
                                          " (a newer memhealth wrote it, or it is damaged)");
    // Added within version 1 (databases created before it get it here): replaced images.
    if (!read_only)
      exec(
          "CREATE TABLE IF NOT EXISTS repair_images(record_id TEXT NOT NULL,"
          " checksum INTEGER NOT NULL, action_key TEXT NOT NULL, at_ms INTEGER NOT NULL,"
          " PRIMARY KEY(record_id, checksum))",
          "cannot create the repair image table");
    if (!read_only)
      exec(
          "CREATE TABLE IF NOT EXISTS review_items(action_key TEXT PRIMARY KEY NOT NULL,"
          " type TEXT NOT NULL, tier INTEGER NOT NULL, targets TEXT NOT NULL,"
          " action TEXT NOT NULL, reason TEXT NOT NULL, queued_ms INTEGER NOT NULL,"
          " status TEXT NOT NULL, fingerprint TEXT NOT NULL, decided_by TEXT NOT NULL,"
          " decided_ms INTEGER NOT NULL, decision_note TEXT NOT NULL,"
          " defer_until_ms INTEGER NOT NULL, apply_after_ms INTEGER NOT NULL DEFAULT 0,"
          " faults TEXT NOT NULL DEFAULT '')",
          "cannot create the review queue table");
    // the same proposal under another key (queue_review) is looked up by type and fingerprint
    if (!read_only)
      exec("CREATE INDEX IF NOT EXISTS review_items_proposal ON review_items(type, fingerprint)",
           "cannot index the review queue");
    // Added within version 1 (queues created before it get it here): the veto window's time.
    if (!read_only &&
        detail::sqlite::query_text(db_.get(),
                                   "SELECT name FROM pragma_table_info('review_items') WHERE "
                                   "name='apply_after_ms'",
                                   path_, "cannot read the schema")
            .empty())
      exec("ALTER TABLE review_items ADD COLUMN apply_after_ms INTEGER NOT NULL DEFAULT 0",
           "cannot add the veto window column to the review queue");
    // Added within version 1: the faults a review item's action addresses.
    if (!read_only &&
        detail::sqlite::query_text(db_.get(),
                                   "SELECT name FROM pragma_table_info('review_items') WHERE "
                                   "name='faults'",
                                   path_, "cannot read the schema")
            .empty())
      exec("ALTER TABLE review_items ADD COLUMN faults TEXT NOT NULL DEFAULT ''",
           "cannot add the faults column to the review queue");
    // Added within version 1 (databases created before them get them here): migrations.
    if (!read_only)
      exec(
          "CREATE TABLE IF NOT EXISTS migrations(id INTEGER PRIMARY KEY NOT NULL,"
          " to_version TEXT NOT NULL, from_versions TEXT NOT NULL, embedder TEXT NOT NULL,"
          " started_ms INTEGER NOT NULL, retention_days INTEGER NOT NULL, status TEXT NOT NULL,"
          " batches INTEGER NOT NULL, gate_ms INTEGER NOT NULL, gate_passed INTEGER NOT NULL,"
          " gate_batches INTEGER NOT NULL, gate_summary TEXT NOT NULL,"
          " ended_ms INTEGER NOT NULL);"
          "CREATE TABLE IF NOT EXISTS migration_previous(migration INTEGER NOT NULL,"
          " record_id TEXT NOT NULL, prev_version TEXT NOT NULL, prev_embedding BLOB NOT NULL,"
          " after_checksum INTEGER NOT NULL, batch INTEGER NOT NULL, at_ms INTEGER NOT NULL,"
          " PRIMARY KEY(migration, record_id))",
          "cannot create the migration tables");
    // Added within version 1: the findings history, repaired faults, proposals and releases.
    if (!read_only)
      exec(
          "CREATE TABLE IF NOT EXISTS history_runs(scope TEXT NOT NULL, at_ms INTEGER NOT NULL,"
          " full INTEGER NOT NULL, open_errors INTEGER NOT NULL);"
          "CREATE INDEX IF NOT EXISTS history_runs_at ON history_runs(scope, at_ms);"
          "CREATE TABLE IF NOT EXISTS repaired_faults(scope TEXT NOT NULL,"
          " finding_key TEXT NOT NULL, kind TEXT NOT NULL, action_key TEXT NOT NULL,"
          " repaired_ms INTEGER NOT NULL, recurred_ms INTEGER NOT NULL,"
          " PRIMARY KEY(scope, finding_key, repaired_ms));"
          "CREATE TABLE IF NOT EXISTS repair_proposals(proposal_key TEXT PRIMARY KEY NOT NULL,"
          " action_key TEXT NOT NULL, proposals INTEGER NOT NULL, first_ms INTEGER NOT NULL,"
          " last_ms INTEGER NOT NULL);"
          "CREATE TABLE IF NOT EXISTS repair_releases(action_key TEXT NOT NULL,"
          " released_ms INTEGER NOT NULL, reviewer TEXT NOT NULL, note TEXT NOT NULL,"
          " attempts INTEGER NOT NULL, failures INTEGER NOT NULL, last_error TEXT NOT NULL,"
          " state TEXT NOT NULL)",
          "cannot create the findings history tables");
    has_history_ =
        !detail::sqlite::query_text(db_.get(),
                                    "SELECT name FROM sqlite_master WHERE type='table' AND "
                                    "name='repair_releases'",
                                    path_, "cannot read the schema")
             .empty();
    has_migrations_ =
        !detail::sqlite::query_text(db_.get(),
                                    "SELECT name FROM sqlite_master WHERE type='table' AND "
                                    "name='migration_previous'",
                                    path_, "cannot read the schema")
             .empty();
    has_reviews_ =
        !detail::sqlite::query_text(db_.get(),
                                    "SELECT name FROM sqlite_master WHERE type='table' AND "
                                    "name='review_items'",
                                    path_, "cannot read the schema")
             .empty();
    has_images_ =
        !detail::sqlite::query_text(db_.get(),
                                    "SELECT name FROM sqlite_master WHERE type='table' AND "
                                    "name='repair_images'",
                                    path_, "cannot read the schema")
             .empty();
  }

  std::string path_;
  detail::sqlite::db_ptr db_;
  bool has_images_ = false;      // the repair_images table exists
  bool has_reviews_ = false;     // the review_items table exists
  bool has_migrations_ = false;  // the migrations and migration_previous tables exist
  bool has_history_ = false;     // history_runs, repaired_faults, repair_proposals, repair_releases
};

}  // namespace memhealth
