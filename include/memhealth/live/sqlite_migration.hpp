#pragma once
/// @file sqlite_migration.hpp
/// The embedding-model switch, end to end (SPEC section 3, "model switch = dual space"; issue
/// 21 item 4; reference section 3.4): a migration is declared in the state database, the
/// records on the old version(s) are re-embedded from their text in batches through the new
/// embedder, each keeping its previous vector and version, the migration gate compares the two
/// spaces on a sample, and the new version is switched to, or the old space restored.
///
/// Lifecycle (table `migrations` of the state database, sqlite_state.hpp):
/// 1. `start_migration`: status "running", target version `to_version`, the versions the
///    store held besides it (`from_versions`), a description of the embedder (never a key), the
///    retention window in days (`min_retention_days` to `max_retention_days`). One migration
///    runs at a time. While it runs `current_embedding_version` is the target: new writes are
///    tagged with the new version (the host's writer asks for it). The store is recorded with it
///    (`migration_store_record`: its id fingerprint, and its database id if it has one); every
///    later step refuses another store (`require_migration_store`). A store with nothing to
///    re-embed can be declared too (new writes are then tagged; the switch needs no gate).
/// 2. `run_migration`: every record with a vector whose `embedding_version` is neither the target
///    nor empty is "left"; they are taken in store order, `batch_size` at a time. Per batch:
///    one token of the rate limiter (`action_rate_gate`, guardrails.hpp) per text embedded,
///    then one embedding call for the batch (`embed_batch`), then the previous vector and
///    version of each record go to table `migration_previous` (keyed by migration and record
///    id, with the checksum of the record image the migration writes), then one `reembed`
///    action (tier 3, one `edit_replace_embedding{vector, to_version}` per record) goes through
///    the write-ahead log; the batches of one call are one executor run (`apply_plan_stream`,
///    each batch made when the one before it committed), so `memhealth rollback` and `recover`
///    work on it as on any repair. A second run continues with what is left (the records still
///    off the target). Before its first batch a run reconciles the state with the store
///    (`reconcile_migration`): the records of batches an earlier run logged but the store never
///    got (a killed run, a JSONL file not written back) are re-embedded. The run stops early at
///    `max_batches`, when the rate limiter's wait budget is spent, when an action fails, or when
///    `stop_requested` says so (e.g. after SIGINT: the batch in hand is finished); `left` says
///    how many records remain.
/// 3. `gate_migration`: the migration gate (drift/migration_gate.hpp), once per previous
///    version (each old space apart), on a sample of the records that hold their new vector as
///    the migration wrote it; it passes when every group was gated (at least 3 records) and
///    passed. The verdict and each group's figures are recorded with the batch count it saw.
/// 4. `switch_migration`: refused unless no record is left and the gate passed after the last
///    batch (or nothing was re-embedded at all: then there is nothing to compare); status
///    "switched", `ended_ms` = now. The previous vectors stay for the retention window from then.
/// 5. `rollback_migration` (status "running", or "switched" within the window): every record
///    that still holds the image the migration wrote gets its previous vector and version back,
///    in batches through the write-ahead log; records changed since by another writer are left
///    as they are and counted (`changed_since`). A running migration is reconciled with the
///    store first (batches the store never got restore nothing: `never_written`). Status
///    "rolled_back".
/// 6. `compact_migrations`: drops the kept previous vectors of rolled-back migrations and of
///    switched ones whose window ended; nothing else. Nothing is dropped automatically.
///
/// During a running migration the structural detector reports mixed versions as progress
/// (`structural_detector::migration_to`, set by the caller from `current_migration`; the
/// `memhealth` tool reads it from the store's state database).
///
/// Records with a vector and no `embedding_version` cannot be restored exactly (a re-embedding is
/// never written untagged): `start_migration` refuses a store holding any, and `run_migration`
/// leaves any written later alone (counted in `untagged`, and as left).
///
/// Errors: `memhealth::error` — precondition for a step the migration's state does not allow
/// (a second start, run/gate/switch without a running migration, a switch before the gate, a
/// rollback after the window), invalid_argument for bad options or an embedder whose version is
/// not the target; io/busy/parse from the state database, the log and the store propagate (what
/// was committed stays committed and logged; a batch whose previous vectors were saved but whose
/// action did not commit is simply re-embedded by the next run).

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/drift/migration_gate.hpp"
#include "memhealth/embed/embedder.hpp"
#include "memhealth/record/time.hpp"
#include "memhealth/repair/action.hpp"
#include "memhealth/repair/executor.hpp"
#include "memhealth/repair/guardrails.hpp"
#include "memhealth/repair/idempotency.hpp"
#include "memhealth/repair/plan_table.hpp"
#include "memhealth/repair/record_image.hpp"
#include "memhealth/repair/repair_history.hpp"
#include "memhealth/repair/store_identity.hpp"
#include "memhealth/repair/wal_writer.hpp"
#include "memhealth/similarity/kernels.hpp"
#include "memhealth/store/sqlite_migrations.hpp"
#include "memhealth/store/sqlite_state.hpp"
#include "memhealth/store/store.hpp"

namespace memhealth {

/// How a store's vectors are spread over embedding versions.
struct version_counts {
  std::map<std::string, std::size_t> per_version;  ///< version -> records with a vector
  std::size_t without_vector = 0;                  ///< records with an empty embedding
};

/// Counts the records of `store` per embedding version. @complexity one pass over the store.
template <record_store S>
version_counts count_versions(const S& store) {
  version_counts c;
  for (std::size_t i = 0; i < store.size(); ++i) {
    if (store.embedding(i).empty()) {
      ++c.without_vector;
      continue;
    }
    ++c.per_version[std::string(field::embedding_version(store.record(i)))];
  }
  return c;
}

namespace detail::migration {

// A record is "left" when it has a vector off the target version.
template <class S>
bool left_at(const S& store, std::size_t i, std::string_view to) {
  return !store.embedding(i).empty() && field::embedding_version(store.record(i)) != to;
}

// The apply options of a migration's actions: tier 3 approved (the person declared the
// migration), one action per group commit, no record budget, no rate limit (the tokens were
// taken per embedding), no history (a rollback restores images the migration replaced, which
// the loop guard across runs would refuse), `batch` records in flight.
inline apply_options apply_opts(std::size_t batch) {
  apply_options o;
  o.approve_tier2 = o.approve_tier3 = true;
  o.batch_size = 1;
  o.max_records = std::numeric_limits<std::size_t>::max();
  o.limits.rate_limited = false;
  o.limits.max_records_in_flight = std::max<std::size_t>(1, batch);
  return o;
}

// The plan source of `run_migration` for `apply_plan_stream`: actions made on demand.
struct lazy_header {
  bool suspended = false;
  std::string suspend_reason;
  std::size_t actions = 0;  // batches expected (the log's run_begin frame)
};
struct lazy_reader {
  lazy_header head;
  std::function<bool(repair_action&)> produce;
  [[nodiscard]] const lazy_header& header() const noexcept { return head; }
  bool next(repair_action& out) { return produce(out); }
};

// A tier-3 `reembed` action with one reason.
inline repair_action reembed_action(std::string reason) {
  repair_action a;
  a.type = std::string(action_types::reembed);
  a.tier = 3;
  a.automation = automation::manual;
  a.priority = action_priority::reembed;
  a.rollback_method = "restore_before_images";
  a.reasons.push_back(std::move(reason));
  return a;
}

inline bool took_effect(const action_outcome& o) {
  return o.status == action_status::applied || o.status == action_status::already_applied;
}

}  // namespace detail::migration

/// The store a migration was declared on, as recorded by `start_migration` (table
/// `migration_stores` of the state database, created by the first start that records one):
/// the store's `plan_store_fingerprint` (store_identity.hpp: record count, distinct ids, the
/// CRC-64 of the ids and a sample of 128 id hashes) and its own database id, if it has one.
struct migration_store_record {
  plan_store_fingerprint fingerprint;  ///< the store's ids when the migration was declared
  std::string database_id;             ///< `S::database_id()` then, "" when the store has none
};

namespace detail::migration {

// True when the state database has table `name` (one of memhealth's own table names: a
// constant, never user input). @throws error(io) when the schema cannot be read.
inline bool has_table(const sqlite_state& s, std::string_view name) {
  const std::string sql =
      "SELECT name FROM sqlite_master WHERE type='table' AND name='" + std::string(name) + "'";
  return !sqlite::query_text(s.handle(), sql.c_str(), s.path(), "cannot read the schema").empty();
}

inline bool has_store_table(const sqlite_state& s) {
  return has_table(s, "migration_stores");
}

// "records ids live crc64 h1 h2 ..." (decimal hashes): the text form of a fingerprint.
inline std::string encode_fingerprint(const plan_store_fingerprint& f) {
  std::string t = std::to_string(f.records) + " " + std::to_string(f.ids) + " " +
                  std::to_string(f.live) + " " + f.ids_crc64;
  for (const std::uint64_t h : f.sample) t += " " + std::to_string(h);
  return t;
}

inline std::optional<plan_store_fingerprint> decode_fingerprint(const std::string& t) {
  std::vector<std::string> w;
  for (std::size_t at = 0; at < t.size();) {
    const std::size_t end = std::min(t.find(' ', at), t.size());
    w.emplace_back(t, at, end - at);
    at = end + 1;
  }
  if (w.size() < 4) return std::nullopt;
  try {
    plan_store_fingerprint f;
    f.records = std::stoull(w[0]);
    f.ids = std::stoull(w[1]);
    f.live = std::stoull(w[2]);
    f.ids_crc64 = w[3];
    for (std::size_t k = 4; k < w.size(); ++k) f.sample.push_back(std::stoull(w[k]));
    return f;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

template <class S>
std::string database_id_of(const S& store) {
  if constexpr (requires {
                  { store.database_id() } -> std::convertible_to<std::string_view>;
                })
    return std::string(std::string_view(store.database_id()));
  else
    return {};
}

template <class S>
void record_store_of(sqlite_state& s, std::int64_t id, const S& store) {
  sqlite::exec(s.handle(),
               "CREATE TABLE IF NOT EXISTS migration_stores(migration INTEGER PRIMARY KEY NOT "
               "NULL, fingerprint TEXT NOT NULL, database_id TEXT NOT NULL)",
               s.path(), "cannot create the migration_stores table");
  auto st = prepare(s,
                    "INSERT OR REPLACE INTO migration_stores(migration, fingerprint, database_id) "
                    "VALUES(?1, ?2, ?3)");
  sqlite3_bind_int64(st.get(), 1, id);
  sqlite::bind_text(st.get(), 2, encode_fingerprint(plan_store_of(store)));
  sqlite::bind_text(st.get(), 3, database_id_of(store));
  sqlite::step_done(s.handle(), st.get(), s.path(), "cannot record the migration's store");
}

}  // namespace detail::migration

/// The store recorded for migration `id`, or nullopt (a migration declared by an older build, or
/// a state database without the table). @throws error(io/busy) from the state database.
inline std::optional<migration_store_record> migration_store_of(const sqlite_state& state,
                                                                std::int64_t id) {
  if (!detail::migration::has_store_table(state)) return std::nullopt;
  auto st = detail::migration::prepare(
      state, "SELECT fingerprint, database_id FROM migration_stores WHERE migration=?1");
  sqlite3_bind_int64(st.get(), 1, id);
  if (detail::sqlite::step(state.handle(), st.get(), state.path()) != SQLITE_ROW)
    return std::nullopt;
  auto f = detail::migration::decode_fingerprint(detail::sqlite::column_text(st.get(), 0));
  if (!f) return std::nullopt;
  return migration_store_record{std::move(*f), detail::sqlite::column_text(st.get(), 1)};
}

/// Refuses a store that is not the one migration `m` was declared on: when both have a database
/// id, another id is another store; else `check_plan_store` of the recorded fingerprint says
/// `other` (most of the recorded ids gone and most of the store's ids new). Records added or
/// removed since (an agent writing) are the same store. A migration without a recorded store is
/// accepted. @throws error(precondition) naming both stores (nothing is changed); what the state
/// database throws. @complexity O(n log n) in the store's records.
template <record_store S>
void require_migration_store(const sqlite_state& state, const migration_info& m, const S& store) {
  const auto rec = migration_store_of(state, m.id);
  if (!rec) return;
  const std::string id = detail::migration::database_id_of(store);
  const std::string head = "migration " + std::to_string(m.id) + " to " + m.to_version +
                           " was declared on another store: ";
  const std::string tail =
      "; nothing was done (a store at this path now is not the one migrated: restore it, or "
      "name another --state for this store and start a migration there)";
  if (!id.empty() && !rec->database_id.empty()) {
    if (id != rec->database_id)
      throw error(error_code::precondition,
                  head + "database id " + rec->database_id + ", this store's is " + id + tail);
    return;
  }
  const auto c = check_plan_store(rec->fingerprint, store);
  if (c.verdict == plan_store_verdict::other) {
    const auto pct = [](double x) { return std::to_string(static_cast<int>(x * 100 + 0.5)) + "%"; };
    throw error(error_code::precondition,
                head + pct(c.kept) + " of the record ids sampled then are in this store and " +
                    pct(c.foreign) + " of this store's ids (of " + std::to_string(c.in_range) +
                    " in the sample's range) were not in it; it had " +
                    std::to_string(rec->fingerprint.records) + " records, this store has " +
                    std::to_string(c.now.records) + tail);
  }
}

/// How the previous vectors a migration kept compare with the store now (one pass over the kept
/// rows): `written` records hold the image the migration wrote (their batch is in the store),
/// `holding_previous` hold their previous vector and version again (a batch the log holds but
/// the store never got: an interrupted run, a JSONL file not written back; or, after a rollback,
/// the restored records), `changed` hold neither (changed since by another writer), `missing` are
/// gone. `batches_written` counts the distinct batches of the rows not holding their previous
/// vector (written, changed or missing: the batches the store got), as `reconcile_migration`
/// counts them.
struct migration_progress {
  std::size_t kept = 0;              ///< previous vectors kept (rows)
  std::size_t written = 0;           ///< records holding the image the migration wrote
  std::size_t holding_previous = 0;  ///< records holding their kept previous vector and version
  std::size_t changed = 0;           ///< records holding neither
  std::size_t missing = 0;           ///< records no longer in the store
  std::size_t batches_written = 0;   ///< distinct batches the store got (see above)
};

namespace detail::migration {

// Calls `fn(row, batch)` for every kept row of migration `id`, one at a time (a store's worth of
// previous vectors is never held in memory at once).
template <class F>
void for_each_previous(const sqlite_state& s, std::int64_t id, F&& fn) {
  auto st = prepare(s,
                    "SELECT record_id, prev_version, prev_embedding, after_checksum, batch FROM "
                    "migration_previous WHERE migration=?1 ORDER BY record_id");
  sqlite3_bind_int64(st.get(), 1, id);
  previous p;
  while (sqlite::step(s.handle(), st.get(), s.path()) == SQLITE_ROW) {
    read_previous(st.get(), p);
    fn(static_cast<const previous&>(p), sqlite3_column_int64(st.get(), 4));
  }
}

// True when record `i` holds the kept previous vector and version `p` again.
template <class S>
bool holds_previous(const S& live, std::size_t i, const previous& p) {
  const auto r = live.extract(i);
  if (field::embedding_version(r) != p.version) return false;
  const auto v = field::embedding(r);
  return std::equal(v.begin(), v.end(), p.embedding.begin(), p.embedding.end());
}

}  // namespace detail::migration

/// Compares the kept rows of migration `id` with `live` (see `migration_progress`).
/// @throws what the state database throws. @complexity O(kept x record size + n).
template <record_store S>
migration_progress migration_progress_of(const S& live, const sqlite_state& state,
                                         std::int64_t id) {
  migration_progress g;
  if (!state.has_migrations()) return g;
  std::set<std::int64_t> written_batches;
  detail::migration::for_each_previous(
      state, id, [&](const detail::migration::previous& p, std::int64_t batch) {
        ++g.kept;
        const auto i = live.find(p.record_id);
        if (i && detail::migration::holds_previous(live, *i, p)) {
          ++g.holding_previous;
          return;
        }
        written_batches.insert(batch);  // as `reconcile_migration` counts them
        if (!i)
          ++g.missing;
        else if (repair_image_checksum(encode_image(live.extract(*i))) == p.after_checksum)
          ++g.written;
        else
          ++g.changed;
      });
  g.batches_written = written_batches.size();
  return g;
}

/// Brings the running migration's state in line with the store after a run that did not reach
/// it (killed mid-run, or a JSONL file not written back because another writer changed it): the
/// kept rows of records that hold their previous vector and version again are dropped (the next
/// `run_migration` re-embeds those records and keeps them anew) and the batch count becomes the
/// number of batches the store holds (`migration_progress::batches_written`; batches whose
/// records were all changed since by another writer are counted too).
/// @return the rows dropped (0: the state matched the store; nothing written then).
/// @throws error(precondition) without a running migration; what the state database throws.
template <record_store S>
std::size_t reconcile_migration(const S& live, sqlite_state& state) {
  detail::migration::require_tables(state);
  const auto m = current_migration(state);
  if (!m) throw error(error_code::precondition, "no migration is running");
  std::vector<std::string> drop;
  std::set<std::int64_t> counted;
  detail::migration::for_each_previous(
      state, m->id, [&](const detail::migration::previous& p, std::int64_t batch) {
        const auto i = live.find(p.record_id);
        if (i && detail::migration::holds_previous(live, *i, p))
          drop.push_back(p.record_id);
        else
          counted.insert(batch);
      });
  if (drop.empty() && static_cast<std::int64_t>(counted.size()) == m->batches) return 0;
  detail::sqlite::immediate_transaction t(state.handle(), state.path());
  auto del = detail::migration::prepare(
      state, "DELETE FROM migration_previous WHERE migration=?1 AND record_id=?2");
  for (const auto& id : drop) {
    sqlite3_reset(del.get());
    sqlite3_bind_int64(del.get(), 1, m->id);
    detail::sqlite::bind_text(del.get(), 2, id);
    detail::sqlite::step_done(state.handle(), del.get(), state.path(),
                              "cannot drop a previous vector");
  }
  auto up = detail::migration::prepare(state, "UPDATE migrations SET batches=?2 WHERE id=?1");
  sqlite3_bind_int64(up.get(), 1, m->id);
  sqlite3_bind_int64(up.get(), 2, static_cast<std::int64_t>(counted.size()));
  detail::sqlite::step_done(state.handle(), up.get(), state.path(), "cannot count the batches");
  t.commit();
  return drop.size();
}

/// Records of `store` with a vector off version `to` (what a migration to `to` has left).
template <record_store S>
std::size_t records_left(const S& store, std::string_view to) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < store.size(); ++i) n += detail::migration::left_at(store, i, to);
  return n;
}

/// Declares a migration of `store` to `to_version`, made by `embedder_description` (a text for
/// people, e.g. "openai:http://host/v1 model m" or "lexical d=256 seed 0"; never put a key in
/// it), keeping previous vectors `retention_days` days after the switch, at `now`.
/// @return the migration (status "running", `from_versions` the store's other versions).
/// @throws error(invalid_argument) for an empty target or description, or a retention outside
///         [`min_retention_days`, `max_retention_days`], or a store holding vectors without an
///         embedding_version (see the file comment); error(precondition) when a migration is
///         running already; error(io/busy) from the state database.
template <record_store S>
migration_info start_migration(sqlite_state& state, const S& store, std::string_view to_version,
                               std::string_view embedder_description, int retention_days,
                               utc_time now) {
  if (to_version.empty())
    throw error(error_code::invalid_argument, "start_migration: the target version is empty");
  if (embedder_description.empty())
    throw error(error_code::invalid_argument, "start_migration: describe the embedder");
  if (retention_days < min_retention_days || retention_days > max_retention_days)
    throw error(error_code::invalid_argument,
                "start_migration: the retention window is " + std::to_string(min_retention_days) +
                    " to " + std::to_string(max_retention_days) + " days (got " +
                    std::to_string(retention_days) + ")");
  if (!state.has_migrations())
    throw error(error_code::precondition,
                state.path() + ": opened read-only (no migration tables)");
  if (const auto m = current_migration(state))
    throw error(error_code::precondition,
                "migration " + std::to_string(m->id) + " to " + m->to_version +
                    " is running: switch or roll it back before declaring another");
  const auto counts = count_versions(store);
  if (const auto it = counts.per_version.find(""); it != counts.per_version.end())
    throw error(error_code::invalid_argument,
                std::to_string(it->second) +
                    " records have a vector and no embedding_version: their space cannot be "
                    "named, so a rollback could not restore it exactly; tag them first");
  std::string from;
  for (const auto& [v, n] : counts.per_version)
    if (v != to_version) from += (from.empty() ? "" : ", ") + v;
  auto st = detail::migration::prepare(
      state,
      "INSERT INTO migrations(to_version, from_versions, embedder, started_ms, retention_days, "
      "status, batches, gate_ms, gate_passed, gate_batches, gate_summary, ended_ms) "
      "VALUES(?1, ?2, ?3, ?4, ?5, 'running', 0, 0, 0, -1, '', 0)");
  detail::sqlite::bind_text(st.get(), 1, to_version);
  detail::sqlite::bind_text(st.get(), 2, from);
  detail::sqlite::bind_text(st.get(), 3, embedder_description);
  sqlite3_bind_int64(st.get(), 4, detail::migration::ms_of(now));
  sqlite3_bind_int(st.get(), 5, retention_days);
  {
    detail::sqlite::immediate_transaction t(state.handle(), state.path());
    detail::sqlite::step_done(state.handle(), st.get(), state.path(),
                              "cannot declare the migration");
    detail::migration::record_store_of(state, sqlite3_last_insert_rowid(state.handle()), store);
    t.commit();
  }
  return *latest_migration(state);
}

/// Knobs of `run_migration`.
struct migration_run_options {
  std::size_t batch_size = 100;  ///< records per batch (one embedding call, one logged action)
  std::size_t max_batches = 0;   ///< stop after this many batches (0 = until none is left)
  /// The rate limiter: one token per text embedded (not per action). `rate_limited` false or
  /// `per_second` 0 with a full bucket: see guardrails.hpp; `max_wait` bounds the run's waiting.
  execution_limits limits{};
  /// Asked before each batch and between the rate limiter's tokens (empty = never): true stops
  /// the run there, after the batches committed so far (`stopped` = "interrupted",
  /// `interrupted` set); e.g. a flag a SIGINT handler sets. Tokens taken for a batch that is not
  /// made are not given back.
  std::function<bool()> stop_requested;
  /// Called after each batch is committed and counted, with the batches this run committed so
  /// far (empty = nothing called); e.g. progress, or a test's interruption.
  std::function<void(std::size_t)> on_batch;
};

/// What `run_migration` did.
struct migration_run_result {
  std::int64_t migration = 0;   ///< the migration's id
  std::size_t batches = 0;      ///< batches committed by this run
  std::size_t reembedded = 0;   ///< records re-embedded by this run
  std::size_t left = 0;         ///< records still off the target after it (untagged included)
  std::size_t untagged = 0;     ///< records with a vector and no version (never migrated)
  std::size_t embed_calls = 0;  ///< embedding calls (one per batch)
  std::string stopped;          ///< why it stopped before `left` reached 0 ("" = it did not)
  bool interrupted = false;     ///< `stop_requested` said so (see migration_run_options)
  /// Kept rows dropped first by `reconcile_migration`: records of batches an earlier run logged
  /// that the store never got (re-embedded by this run).
  std::size_t reconciled = 0;
  std::chrono::milliseconds rate_waited{0};  ///< time waited for tokens
};

/// Runs the running migration of `state` on `live` with embedder `e` through `wal` (see the
/// file comment, step 2), at `now`.
/// @throws error(precondition) without a running migration or for another store
///         (`require_migration_store`: nothing written); error(invalid_argument) when
///         `e.version()` is not the target or `batch_size` is 0; what the embedder, the store,
///         the log and the state database throw (batches committed before stay committed).
template <mutable_record_store S, embedder E>
migration_run_result run_migration(S& live, sqlite_state& state, const E& e, wal_writer& wal,
                                   const migration_run_options& opt, utc_time now) {
  using R = typename S::record_type;
  static_assert(versioned_embedding_record<R>, "run_migration: records need embedding fields");
  detail::migration::require_tables(state);
  auto m = current_migration(state);
  if (!m) throw error(error_code::precondition, "no migration is running (migrate start first)");
  if (std::string_view(e.version()) != m->to_version)
    throw error(error_code::invalid_argument,
                "the embedder writes '" + std::string(std::string_view(e.version())) +
                    "', the migration's target is '" + m->to_version + "'");
  if (opt.batch_size == 0)
    throw error(error_code::invalid_argument, "run_migration: batch_size must be >= 1");
  require_migration_store(state, *m, live);
  const std::size_t dropped = reconcile_migration(live, state);
  if (dropped) m = current_migration(state);
  migration_run_result res;
  res.reconciled = dropped;
  res.migration = m->id;
  std::vector<std::size_t> todo;
  for (std::size_t i = 0; i < live.size(); ++i) {
    if (!detail::migration::left_at(live, i, m->to_version)) continue;
    if (field::embedding_version(live.record(i)).empty())
      ++res.untagged;
    else
      todo.push_back(i);
  }
  action_rate_gate gate(opt.limits);
  const std::size_t d = e.dimension();
  std::int64_t batch_no = m->batches;
  std::size_t at = 0;
  bool stop = false;  // a batch did not take effect, or the rate limiter's wait budget is spent
  // One executor run for the whole call (one run in the log, the store's ids checked once): the
  // batches are made as the executor asks for them, one at a time (batch_size 1), so a batch is
  // embedded only once the one before it is committed.
  detail::migration::lazy_reader reader;
  const std::size_t batches_wanted = (todo.size() + opt.batch_size - 1) / opt.batch_size;
  reader.head.actions =
      opt.max_batches ? std::min(opt.max_batches, batches_wanted) : batches_wanted;
  std::size_t made = 0;
  reader.produce = [&](repair_action& a) {
    if (stop || at >= todo.size()) return false;
    const auto interrupt = [&] {
      if (!opt.stop_requested || !opt.stop_requested()) return false;
      res.stopped = "interrupted";
      res.interrupted = stop = true;
      return true;
    };
    if (interrupt()) return false;
    if (opt.max_batches && made == opt.max_batches) {
      res.stopped = "--max-batches " + std::to_string(opt.max_batches) + " reached";
      return false;
    }
    const std::size_t want = std::min(opt.batch_size, todo.size() - at);
    std::size_t got = 0;  // tokens taken: one per text
    while (got < want && gate.admit()) {
      ++got;
      if (got < want && interrupt()) return false;
    }
    if (got < want) {
      res.stopped = "rate limit: waiting for the next token would exceed the run's max_wait of " +
                    std::to_string(opt.limits.max_wait.count()) + " ms";
      stop = true;
    }
    if (got == 0) return false;
    std::vector<R> before;
    std::vector<std::string_view> texts;
    before.reserve(got);
    for (std::size_t k = 0; k < got; ++k) before.push_back(live.extract(todo[at + k]));
    for (const auto& r : before) texts.push_back(field::content(r));
    std::vector<float> block(got * d);
    embed_batch(e, texts, std::span<float>(block));
    ++res.embed_calls;
    ++made;
    a = detail::migration::reembed_action("migration " + std::to_string(m->id) + " to " +
                                          m->to_version + ", batch " +
                                          std::to_string(batch_no + 1));
    // previous vectors first: a crash after this and before the commit re-embeds them again
    detail::sqlite::immediate_transaction t(state.handle(), state.path());
    auto ins = detail::migration::prepare(
        state,
        "INSERT OR REPLACE INTO migration_previous(migration, record_id, prev_version, "
        "prev_embedding, after_checksum, batch, at_ms) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    for (std::size_t k = 0; k < got; ++k) {
      const R& r = before[k];
      edit_replace_embedding op{
          std::vector<float>(block.begin() + static_cast<std::ptrdiff_t>(k * d),
                             block.begin() + static_cast<std::ptrdiff_t>((k + 1) * d)),
          m->to_version};
      R after = r;
      apply_edit(after, record_edit_op(op));
      const std::string id(field::id(r));
      a.targets.push_back(id);
      a.edits.push_back({id, record_edit_op(std::move(op))});
      sqlite3_reset(ins.get());
      sqlite3_bind_int64(ins.get(), 1, m->id);
      detail::sqlite::bind_text(ins.get(), 2, id);
      detail::sqlite::bind_text(ins.get(), 3, field::embedding_version(r));
      const std::string bytes = detail::sqlite::encode_floats(field::embedding(r));
      sqlite3_bind_blob(ins.get(), 4, bytes.data(), static_cast<int>(bytes.size()),
                        SQLITE_TRANSIENT);
      sqlite3_bind_int64(ins.get(), 5,
                         static_cast<std::int64_t>(repair_image_checksum(encode_image(after))));
      sqlite3_bind_int64(ins.get(), 6, batch_no + 1);
      sqlite3_bind_int64(ins.get(), 7, detail::migration::ms_of(now));
      detail::sqlite::step_done(state.handle(), ins.get(), state.path(),
                                "cannot keep a previous vector");
    }
    t.commit();
    a.blast.records = got;
    a.idempotency_key = compute_idempotency_key(a);
    at += got;
    return true;
  };
  auto counted = [&](const action_outcome& out, const repair_action& a) {
    if (!detail::migration::took_effect(out)) {
      res.stopped = "batch " + std::to_string(batch_no + 1) + " not applied (" +
                    std::string(to_string(out.status)) + "): " + out.reason;
      stop = true;
      return;
    }
    ++batch_no;
    auto up = detail::migration::prepare(state, "UPDATE migrations SET batches=?2 WHERE id=?1");
    sqlite3_bind_int64(up.get(), 1, m->id);
    sqlite3_bind_int64(up.get(), 2, batch_no);
    detail::sqlite::step_done(state.handle(), up.get(), state.path(), "cannot count a batch");
    ++res.batches;
    res.reembedded += a.edits.size();
    if (opt.on_batch) opt.on_batch(res.batches);
  };
  if (!todo.empty())
    (void)apply_plan_stream(live, reader, wal, detail::migration::apply_opts(opt.batch_size),
                            counted);
  res.rate_waited = gate.waited();
  res.left = records_left(live, m->to_version);
  if (res.left > 0 && res.stopped.empty() && res.untagged > 0)
    res.stopped = std::to_string(res.untagged) + " records have a vector and no version";
  return res;
}

/// The gate's figures for one previous version (one old space) of a migration.
struct migration_gate_group {
  std::string old_version;   ///< the previous version the records were re-embedded from
  std::size_t eligible = 0;  ///< its records holding both vectors (the sample pool)
  /// False when the group could not be gated (fewer than 3 eligible records: neighbours within
  /// one space need at least 3 texts); `note` says why, and the group counts as not passed.
  bool gated = false;
  gate_result gate;  ///< the gate's result on the group's sample (`gate.n` texts; when `gated`)
  std::string note;  ///< why the group was not gated ("" when it was)
};

/// Outcome of `gate_migration`: one group per previous version of the records the migration
/// re-embedded that are still in the store, in version order.
struct migration_gate_outcome {
  std::int64_t migration = 0;                ///< the migration's id
  std::vector<migration_gate_group> groups;  ///< per previous version
  bool passed = false;                       ///< every group gated and passed
};

/// A group's figures as `gate_migration` recorded them (table `migration_gate_groups` of the
/// state database): the last gate of the migration, one row per previous version.
struct migration_gate_group_record {
  std::string old_version;           ///< the previous version
  std::size_t eligible = 0;          ///< records holding both vectors then
  std::size_t n = 0;                 ///< records compared (0: not gated)
  std::size_t k = 0;                 ///< effective k
  double mean_overlap = 0;           ///< mean overlap@k
  double mean_rank_correlation = 0;  ///< mean Spearman rho
  bool passed = false;               ///< this group's verdict
  std::string note;                  ///< why it was not gated ("" when it was)
};

namespace detail::migration {

inline bool has_gate_groups_table(const sqlite_state& s) {
  return has_table(s, "migration_gate_groups");
}

// "from V: PASS n=.. k=.. mean_overlap=.. mean_rank_correlation=.." or "from V: not gated (why)"
inline std::string group_summary(const migration_gate_group& g) {
  if (!g.gated) return "from " + g.old_version + ": not gated (" + g.note + ")";
  return "from " + g.old_version + ": " + (g.gate.passed ? "PASS" : "FAIL") +
         " n=" + std::to_string(g.gate.n) + " k=" + std::to_string(g.gate.k) +
         " mean_overlap=" + std::to_string(g.gate.mean_overlap) +
         " mean_rank_correlation=" + std::to_string(g.gate.mean_rank_correlation);
}

}  // namespace detail::migration

/// The per-version figures of the last gate of migration `id` (empty: never gated, gated by an
/// older build, or a state database without the table). @throws what the state database throws.
inline std::vector<migration_gate_group_record> migration_gate_groups_of(const sqlite_state& state,
                                                                         std::int64_t id) {
  std::vector<migration_gate_group_record> out;
  if (!detail::migration::has_gate_groups_table(state)) return out;
  auto st = detail::migration::prepare(
      state,
      "SELECT version, eligible, n, k, mean_overlap, mean_rank_correlation, passed, note FROM "
      "migration_gate_groups WHERE migration=?1 ORDER BY version");
  sqlite3_bind_int64(st.get(), 1, id);
  while (detail::sqlite::step(state.handle(), st.get(), state.path()) == SQLITE_ROW) {
    migration_gate_group_record r;
    r.old_version = detail::sqlite::column_text(st.get(), 0);
    r.eligible = static_cast<std::size_t>(sqlite3_column_int64(st.get(), 1));
    r.n = static_cast<std::size_t>(sqlite3_column_int64(st.get(), 2));
    r.k = static_cast<std::size_t>(sqlite3_column_int64(st.get(), 3));
    r.mean_overlap = sqlite3_column_double(st.get(), 4);
    r.mean_rank_correlation = sqlite3_column_double(st.get(), 5);
    r.passed = sqlite3_column_int(st.get(), 6) != 0;
    r.note = detail::sqlite::column_text(st.get(), 7);
    out.push_back(std::move(r));
  }
  return out;
}

/// Runs the migration gate of the running migration once per previous version (each old space
/// apart: vectors of two versions are not comparable). The groups: the previous versions of
/// the kept rows whose record is still in the store. Per group, up to `sample` records (evenly
/// spaced over its eligible ones in record-id order; eligible: the record holds the image the
/// migration wrote), old space = the kept previous vectors, new space = the store's. A group
/// with fewer than 3 eligible records is not gated (`note` says why) and does not pass. The
/// verdict (every group gated and passed), the per-group figures (`migration_gate_groups_of`)
/// and the current batch count are recorded at `now`.
/// @throws error(precondition) without a running migration, for another store
/// (`require_migration_store`), or when no record is eligible at all (nothing re-embedded yet,
/// nothing to compare, or every re-embedded record changed since: the message says which;
/// nothing is recorded); error(invalid_argument) for `sample` < 3, or a record whose vector has
/// another dimension than its group's; what the state database throws.
template <record_store S>
migration_gate_outcome gate_migration(const S& live, sqlite_state& state, std::size_t sample,
                                      const gate_options& go, utc_time now) {
  detail::migration::require_tables(state);
  const auto m = current_migration(state);
  if (!m) throw error(error_code::precondition, "no migration is running");
  if (sample < 3) throw error(error_code::invalid_argument, "gate_migration: sample must be >= 3");
  require_migration_store(state, *m, live);
  auto prev = detail::migration::previous_of(state, m->id);
  using pool = std::vector<std::pair<const detail::migration::previous*, std::size_t>>;
  std::map<std::string, pool> by_version;       // eligible (row, index) per previous version
  std::map<std::string, std::size_t> in_store;  // rows whose record is in the store
  std::size_t eligible_all = 0;
  for (const auto& p : prev) {
    const auto i = live.find(p.record_id);
    if (!i) continue;
    ++in_store[p.version];
    auto& group = by_version[p.version];
    if (p.embedding.empty()) continue;
    // extract: a whole record (a store may hand out records without their vector)
    if (repair_image_checksum(encode_image(live.extract(*i))) != p.after_checksum) continue;
    group.emplace_back(&p, *i);
    ++eligible_all;
  }
  if (eligible_all == 0) {
    const std::size_t left = records_left(live, m->to_version);
    std::string why;
    if (prev.empty() && left > 0)
      why = "nothing re-embedded yet: " + std::to_string(left) + " records are left off " +
            m->to_version + "; run the migration first (memhealth migrate run), then the gate";
    else if (prev.empty())
      why =
          "nothing to compare: the migration re-embedded no record (none was on another "
          "version); the switch needs no gate then (memhealth migrate switch)";
    else
      why = "none of the " + std::to_string(prev.size()) +
            " records the migration re-embedded holds the vector it wrote now (changed since, "
            "removed, or never written to the store): nothing to compare; run the migration "
            "(memhealth migrate run) to re-embed what is left";
    throw error(error_code::precondition, "migration " + std::to_string(m->id) + " gate: " + why);
  }
  migration_gate_outcome out;
  out.migration = m->id;
  out.passed = true;
  for (auto& [version, ok] : by_version) {
    migration_gate_group g;
    g.old_version = version;
    g.eligible = ok.size();
    if (ok.size() < 3) {
      const std::size_t changed = in_store[version] - ok.size();
      g.note = std::to_string(ok.size()) + " of its " + std::to_string(in_store[version]) +
               " re-embedded records hold both vectors" +
               (changed ? " (" + std::to_string(changed) +
                              " changed since, or not yet written to the store)"
                        : std::string()) +
               "; comparing neighbours within one space needs at least 3";
      out.passed = false;
      out.groups.push_back(std::move(g));
      continue;
    }
    std::vector<std::size_t> pick;
    const std::size_t n = std::min(sample, ok.size());
    for (std::size_t k = 0; k < n; ++k) pick.push_back(k * ok.size() / n);
    const std::size_t d_old = ok[0].first->embedding.size();
    const std::size_t d_new = live.embedding(ok[0].second).size();
    row_matrix X(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(d_old));
    row_matrix Y(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(d_new));
    std::vector<std::string> ids;
    for (std::size_t r = 0; r < n; ++r) {
      const auto& [p, i] = ok[pick[r]];
      const auto nv = live.embedding(i);
      if (p->embedding.size() != d_old || nv.size() != d_new)
        throw error(error_code::invalid_argument,
                    "gate_migration: record " + p->record_id + " has another dimension in a space");
      for (std::size_t c = 0; c < d_old; ++c)
        X(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(c)) = p->embedding[c];
      for (std::size_t c = 0; c < d_new; ++c)
        Y(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(c)) = nv[c];
      ids.push_back(p->record_id);
    }
    g.gate = migration_gate(X, Y, go, ids);
    g.gated = true;
    out.passed = out.passed && g.gate.passed;
    out.groups.push_back(std::move(g));
  }
  std::string summary;
  for (const auto& g : out.groups)
    summary += (summary.empty() ? "" : "; ") + detail::migration::group_summary(g);
  detail::sqlite::immediate_transaction t(state.handle(), state.path());
  detail::sqlite::exec(state.handle(),
                       "CREATE TABLE IF NOT EXISTS migration_gate_groups(migration INTEGER NOT "
                       "NULL, version TEXT NOT NULL, eligible INTEGER NOT NULL, n INTEGER NOT "
                       "NULL, k INTEGER NOT NULL, mean_overlap REAL NOT NULL, "
                       "mean_rank_correlation REAL NOT NULL, passed INTEGER NOT NULL, note TEXT "
                       "NOT NULL, PRIMARY KEY(migration, version))",
                       state.path(), "cannot create the migration_gate_groups table");
  {
    auto del =
        detail::migration::prepare(state, "DELETE FROM migration_gate_groups WHERE migration=?1");
    sqlite3_bind_int64(del.get(), 1, m->id);
    detail::sqlite::step_done(state.handle(), del.get(), state.path(),
                              "cannot replace the gate's figures");
  }
  auto ins = detail::migration::prepare(
      state,
      "INSERT INTO migration_gate_groups(migration, version, eligible, n, k, mean_overlap, "
      "mean_rank_correlation, passed, note) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
  for (const auto& g : out.groups) {
    sqlite3_reset(ins.get());
    sqlite3_bind_int64(ins.get(), 1, m->id);
    detail::sqlite::bind_text(ins.get(), 2, g.old_version);
    sqlite3_bind_int64(ins.get(), 3, static_cast<std::int64_t>(g.eligible));
    sqlite3_bind_int64(ins.get(), 4, static_cast<std::int64_t>(g.gated ? g.gate.n : 0));
    sqlite3_bind_int64(ins.get(), 5, static_cast<std::int64_t>(g.gated ? g.gate.k : 0));
    sqlite3_bind_double(ins.get(), 6, g.gate.mean_overlap);
    sqlite3_bind_double(ins.get(), 7, g.gate.mean_rank_correlation);
    sqlite3_bind_int(ins.get(), 8, g.gated && g.gate.passed ? 1 : 0);
    detail::sqlite::bind_text(ins.get(), 9, g.note);
    detail::sqlite::step_done(state.handle(), ins.get(), state.path(),
                              "cannot record the gate's figures");
  }
  auto st = detail::migration::prepare(
      state,
      "UPDATE migrations SET gate_ms=?2, gate_passed=?3, gate_batches=batches, "
      "gate_summary=?4 WHERE id=?1");
  sqlite3_bind_int64(st.get(), 1, m->id);
  sqlite3_bind_int64(st.get(), 2, detail::migration::ms_of(now));
  sqlite3_bind_int(st.get(), 3, out.passed ? 1 : 0);
  detail::sqlite::bind_text(st.get(), 4, summary);
  detail::sqlite::step_done(state.handle(), st.get(), state.path(), "cannot record the gate");
  t.commit();
  return out;
}

/// Switches the running migration: its target becomes the current version, at `now`.
/// @return the migration as switched. @throws error(precondition) without a running migration,
///         for another store, when records are left on other versions, or when the gate has not
///         passed after the last batch (run `gate_migration` again) though records were
///         re-embedded: it passes only when every previous version's group was gated and
///         passed (the message lists each group's figures); what the state database throws.
template <record_store S>
migration_info switch_migration(const S& live, sqlite_state& state, utc_time now) {
  detail::migration::require_tables(state);
  const auto m = current_migration(state);
  if (!m) throw error(error_code::precondition, "no migration is running");
  require_migration_store(state, *m, live);
  if (const auto left = records_left(live, m->to_version))
    throw error(error_code::precondition, std::to_string(left) + " records are not on " +
                                              m->to_version + " yet (migrate run): not switched");
  // nothing was re-embedded (the store held no record on another version): nothing to gate
  const bool nothing_to_compare = m->batches == 0 && migration_kept(state, m->id) == 0;
  if (!nothing_to_compare && (!m->gate_passed || m->gate_batches != m->batches))
    throw error(error_code::precondition,
                m->gate_ms == 0 ? std::string("the migration gate has not run: not switched")
                : !m->gate_passed
                    ? "the migration gate did not pass (" + m->gate_summary +
                          "): not switched; every previous version must pass the gate"
                    : std::string("batches ran after the gate passed: run the gate again"));
  detail::migration::set_status(state, m->id, "switched", detail::migration::ms_of(now));
  return *latest_migration(state);
}

/// What `rollback_migration` did.
struct migration_rollback_result {
  std::int64_t migration = 0;     ///< the migration's id
  std::size_t restored = 0;       ///< records given their previous vector and version back
  std::size_t already = 0;        ///< records holding their previous vector already
  std::size_t changed_since = 0;  ///< records changed by another writer since: left as they are
  std::size_t missing = 0;        ///< records no longer in the store
  std::size_t batches = 0;        ///< actions logged
  /// Kept rows of a running migration dropped first by `reconcile_migration`: records of
  /// batches the log and the state hold but the store never got (a killed run, a JSONL file not
  /// written back). They hold their previous vector already: nothing to restore, not counted
  /// in `already`.
  std::size_t never_written = 0;
  /// True when every record the migration re-embedded holds its previous vector and version
  /// again (nothing changed since, nothing missing).
  [[nodiscard]] bool complete() const noexcept { return changed_since == 0 && missing == 0; }
};

/// Rolls the latest migration back (status "running", or "switched" with `now` before the end of
/// its retention window): see the file comment, step 5; `batch_size` records per logged action.
/// A running migration is reconciled with the store first (`reconcile_migration`: rows of
/// batches the store never got are dropped, counted in `never_written`). The kept previous
/// vectors stay (until `compact_migrations`).
/// @throws error(precondition) when there is no such migration or its window ended;
///         error(invalid_argument) for `batch_size` 0; error(io) when an action does not take
///         effect, naming it (the migration stays as it was; what was restored before stays
///         restored and logged: running it again continues); what the log, store and state throw.
template <mutable_record_store S>
migration_rollback_result rollback_migration(S& live, sqlite_state& state, wal_writer& wal,
                                             std::size_t batch_size, utc_time now) {
  detail::migration::require_tables(state);
  const auto m = latest_migration(state);
  const auto now_ms = detail::migration::ms_of(now);
  if (!m || (m->status != "running" && m->status != "switched"))
    throw error(error_code::precondition, "no running or switched migration to roll back");
  if (m->status == "switched" && now_ms >= m->retention_end_ms())
    throw error(error_code::precondition,
                "migration " + std::to_string(m->id) + " was switched more than " +
                    std::to_string(m->retention_days) +
                    " days ago: its retention window is over, the old space cannot be restored");
  if (batch_size == 0)
    throw error(error_code::invalid_argument, "rollback_migration: batch_size must be >= 1");
  require_migration_store(state, *m, live);
  migration_rollback_result res;
  res.migration = m->id;
  // batches the store never got are not the migration's work: their rows go first, so the
  // counts here and in `migration_progress_of` afterwards are of what the store held
  if (m->status == "running") res.never_written = reconcile_migration(live, state);
  repair_plan plan;
  repair_action a;
  const auto flush = [&] {
    if (a.edits.empty()) return;
    a.blast.records = a.edits.size();
    a.idempotency_key = compute_idempotency_key(a);
    plan.actions.push_back(std::move(a));
    a = repair_action{};
  };
  for (const auto& p : detail::migration::previous_of(state, m->id)) {
    const auto i = live.find(p.record_id);
    if (!i) {
      ++res.missing;
      continue;
    }
    const auto r = live.extract(*i);  // a copy: a store's record and vector caches may move
    const auto v = field::embedding(r);
    if (field::embedding_version(r) == p.version &&
        std::equal(v.begin(), v.end(), p.embedding.begin(), p.embedding.end())) {
      ++res.already;
      continue;
    }
    if (repair_image_checksum(encode_image(r)) != p.after_checksum) {
      ++res.changed_since;
      continue;
    }
    if (a.edits.empty())
      a = detail::migration::reembed_action("rollback of migration " + std::to_string(m->id) +
                                            " to " + m->to_version + ": previous vectors restored");
    a.targets.push_back(p.record_id);
    a.edits.push_back(
        {p.record_id, record_edit_op(edit_replace_embedding{p.embedding, p.version})});
    if (a.edits.size() == batch_size) flush();
  }
  flush();
  if (!plan.actions.empty()) {
    const auto out = apply_plan(live, plan, wal, detail::migration::apply_opts(batch_size));
    for (std::size_t k = 0; k < out.outcomes.size(); ++k) {
      if (!detail::migration::took_effect(out.outcomes[k]))
        throw error(error_code::io, "migration rollback: action " + std::to_string(k + 1) + " of " +
                                        std::to_string(plan.actions.size()) + " was not applied (" +
                                        std::string(to_string(out.outcomes[k].status)) + "): " +
                                        out.outcomes[k].reason + "; run the rollback again");
      res.restored += plan.actions[k].edits.size();
      ++res.batches;
    }
  }
  detail::migration::set_status(state, m->id, "rolled_back", now_ms);
  return res;
}

}  // namespace memhealth
