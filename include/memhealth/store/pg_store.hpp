#pragma once
/// @file pg_store.hpp
/// `memhealth::pg_store<R>`: records in a PostgreSQL table, over libpq. Link libpq (CMake:
/// `memhealth::pg`); the umbrella header memhealth.hpp does not include this file.
///
/// **Tables.** Either memhealth's own schema (`create`; table `memhealth_records`, one row per
/// record: `seq` identity key, `id`, `scope`, `status`, `kind`, `updated_at` timestamptz,
/// `metadata` and `claim` jsonb, `embedding` real[], `embedding_version`, and `record`: the
/// canonical JSON of every field but the embedding, the lossless source of truth, the other
/// columns derived from it as in the SQLite store; `memhealth_meta(key, value)` holds format,
/// schema_version and database_id), or a host application's own table read and written in
/// place through a `pg_mapping` (pg_mapping.hpp: mem0's pgvector table, LangGraph's
/// PostgresStore, or a mapping file).
///
/// **Reading.** `open` checks the mapping against the catalog (every column exists, vectors
/// are real[], double precision[] or pgvector, the role may SELECT them and, unless read-only,
/// UPDATE the written ones) before anything is read, then reads the table in key order through
/// a server-side cursor (`DECLARE ... NO SCROLL CURSOR`, `FETCH fetch_rows`) in one
/// REPEATABLE READ transaction, so libpq never holds more than one batch of rows; the rows come
/// in binary format (the vector as floats, not as text the server formats and the client parses
/// again; every other column is text). memhealth's own `record` column is parsed once (by the
/// JSONL reader). A read of some scopes (`pg_store_options::scopes`) is planned for all of its
/// rows (`cursor_tuple_fraction` 1), so it uses an index on the scope where there is one instead
/// of walking the whole table in key order; so is a read of some records by id
/// (`pg_store_options::ids`, for rollback, recover and apply). The decoded
/// records (embeddings included) stay in memory, in key order: what detection reads anyway.
///
/// **Writing.** A repair writes through `restore` only: inside the action's transaction the
/// scope of the record is locked (`pg_advisory_xact_lock`, see `pg_scope_lock_class`: repairs of
/// one scope by several processes or machines run one after another), the row is read again
/// `FOR UPDATE` and compared with what this store read (a row another writer
/// changed since is never overwritten: error(busy), and the action's rollback reads that row
/// again, so `apply_plan`'s retry works from the row as it is: stale when what the plan decided
/// on changed, else written over the new image; a row gone since is no longer found by its id);
/// then one UPDATE sets only the mapped
/// columns and JSON paths (`jsonb_set`, `#-`) whose value changed (a vector in another table is
/// one more UPDATE there). Columns the mapping does not name are never written; a change to a
/// field the mapping has no place for fails before anything is written. `begin_action` /
/// `commit_action` / `rollback_action` make one transaction per repair action (the
/// `transactional_record_store` capability): `apply_plan` makes the action's intent durable in
/// the write-ahead log before BEGIN and writes its commit frame after COMMIT, so a crash or a
/// lost connection leaves every action whole (a COMMIT whose acknowledgement is lost is resolved
/// by asking the server, `txid_status`). `preview_restore` gives the SQL a restore would
/// run, for dry runs. Timestamps are written at millisecond precision (memhealth's resolution);
/// a time field the row holds at a finer one ("...:31.123456-07:00") is never changed by a
/// write (error(precondition)), since neither it nor a rollback could give its text back.
///
/// **Errors.** `memhealth::error`: invalid_argument for a connection string holding a password
/// (pg_conn.hpp) or a malformed mapping, io when the server cannot be reached or a statement
/// fails (a lost connection included), schema for a missing table or column or a vector of the
/// wrong type, precondition for a missing privilege, a change the mapping cannot store or a
/// write of a row read with a load issue, busy for a row changed by another writer or a lock
/// conflict. A row that cannot be read whole (a field of the wrong type, a malformed vector,
/// keys shared by several rows) is no error: it is a load issue (`load_issues()`), as a bad
/// line of a JSONL store is. No message contains the connection string or a password.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/io/jsonl.hpp"
#include "memhealth/io/load_issue.hpp"
#include "memhealth/record/memory_record.hpp"
#include "memhealth/record/time.hpp"
#include "memhealth/store/memory_store.hpp"
#include "memhealth/store/pg_conn.hpp"
#include "memhealth/store/pg_mapping.hpp"
#include "memhealth/store/pg_table.hpp"
#include "memhealth/store/store.hpp"

#include <libpq-fe.h>

namespace memhealth {

/// Knobs of `pg_store::open` and `pg_store::create`.
struct pg_store_options {
  std::size_t fetch_rows = 1000;  ///< rows per FETCH from the read cursor (>= 1)
  bool read_only = false;  ///< no UPDATE privilege needed; every write throws error(precondition)
  /// Test hook: called right after a COMMIT the server acknowledged; an exception thrown here
  /// is handled as a COMMIT whose acknowledgement was lost (the outcome is asked of the server).
  std::function<void()> after_commit_hook;
  /// A snapshot exported by another session (`SELECT pg_export_snapshot()`, PostgreSQL docs
  /// 9.27.5 "Snapshot Synchronization Functions"): when set, the rows are read in a
  /// REPEATABLE READ transaction that imports it (`SET TRANSACTION SNAPSHOT`, docs "SET
  /// TRANSACTION"), so every reader of it sees one state of the database. The exporting
  /// transaction must still be open: otherwise `open` fails with error(io) ("invalid snapshot
  /// identifier"). "" = a snapshot of this read's own.
  std::string snapshot;
  /// When set, only the rows whose record scope is one of these texts are read (a worker's job,
  /// detect/pg_workers.hpp). Needs a mapping that gives the scope a column or JSON path of its
  /// own (memhealth's schema, mem0, langgraph): error(precondition) otherwise.
  std::optional<std::vector<std::string>> scopes;
  /// When set, only the rows whose record id is one of these texts are read (every row holding
  /// one), and every row sharing the mapping's key with such a row, so ids or keys shared by
  /// several rows stay load issues as in a read of every row: what `rollback` and `recover` need
  /// of a table (the records their log names) and `apply` (the records its plan names), without
  /// the rest of it. An id no row holds is no error. Not with `scopes` (error(invalid_argument)).
  /// The server still evaluates every row's id (no index serves the id text); only those rows
  /// are sent and held.
  std::optional<std::vector<std::string>> ids;
  /// false: each row's vector is not read, only its element count (`cardinality(...)` on the
  /// server; `vector_length(i)`), so the store holds every record without its embedding:
  /// `embedding(i)` and `record(i).embedding` are empty, `dimension()` is the most common count.
  /// For a pass that needs every row's id, links and text but not the vectors (the store-wide
  /// detectors of detect/pg_workers.hpp). Needs `read_only` (a write compares and writes the
  /// vectors): error(precondition) otherwise. A malformed vector is a load issue here too (the
  /// server marks its length), as in a read with vectors.
  bool vectors = true;
};

/// What `pg_store::census` counts in a table without reading its records: one grouped pass on
/// the server (detect/pg_workers.hpp sizes its jobs and fixes the run's dimension with it before
/// the records are read).
struct pg_table_census {
  std::size_t rows = 0;  ///< rows (records) in the table
  /// The most common non-zero vector length, ties to the smaller (what `pg_store::dimension()`
  /// gives after reading the same rows); 0 = no vectors.
  std::size_t dimension = 0;
  /// Rows per record scope text, in byte order of the scopes; nullopt when the mapping gives
  /// the scope no place of its own (`pg_store::scope_selectable()` false).
  std::optional<std::map<std::string, std::size_t>> scopes;
};

/// The first key of the advisory locks that serialise repairs of one scope (`restore` takes
/// `pg_advisory_xact_lock(pg_scope_lock_class, hashtext(scope))` in the action's transaction):
/// 0x6d68 ("mh"). Another application using two-key advisory locks should avoid this class.
inline constexpr int pg_scope_lock_class = 0x6d68;

/// Version of memhealth's own PostgreSQL schema (`memhealth_meta.schema_version`).
inline constexpr int pg_schema_version = 1;

/// Store of records in a PostgreSQL table (see the file comment). Satisfies `record_store`,
/// `mutable_record_store`, `transactional_record_store` and `keyed_record_store`.
/// @tparam R the record type; must be `memory_record`.
template <class R = memory_record>
class pg_store {
  static_assert(std::is_same_v<R, memory_record>,
                "memhealth: pg_store<R> reads and writes memory_record; R must be "
                "memhealth::memory_record");

 public:
  using record_type = R;

  /// Connects with `conninfo` (a libpq URI or key/value string without a password) and reads the
  /// table `mapping` describes. @throws see the file comment ("Errors"); nothing is written.
  static pg_store open(const std::string& conninfo, pg_mapping mapping, pg_store_options opt = {}) {
    pg_store s;
    s.where_ = describe_conninfo(conninfo) + " table " + mapping.table;
    s.opt_ = opt;
    if (opt.scopes && opt.ids)
      throw error(error_code::invalid_argument,
                  s.where_ + ": a read by scopes and by ids at once (give one of them)");
    if (!opt.vectors && !opt.read_only)
      throw error(error_code::precondition,
                  s.where_ + ": a store read without its vectors must be opened read-only");
    s.conn_ = detail::pg::connect(conninfo);
    s.conninfo_ = conninfo;
    if (!mapping.record_column.empty()) s.read_meta();
    s.table_ = detail::pg::table_access(s.conn_.get(), std::move(mapping), opt.read_only, s.where_);
    if (s.database_id_.empty()) s.database_id_ = s.host_table_id();
    s.load();
    return s;
  }

  /// Counts the rows of the table `mapping` describes, per scope and per vector length, in one
  /// grouped query (`pg_table_census`), after the same checks as `open` (memhealth_meta, the
  /// mapping against the catalog), in a REPEATABLE READ READ ONLY transaction that imports
  /// `opt.snapshot` when set. Reads no record: a row that `open` skips (memhealth's schema: a
  /// `record` value that is no record) is counted here; a malformed vector counts as none.
  /// @throws as `open` (`opt.scopes` is ignored); nothing is written.
  static pg_table_census census(const std::string& conninfo, pg_mapping mapping,
                                pg_store_options opt = {}) {
    pg_store s = catalog(conninfo, std::move(mapping));
    using detail::pg::exec;
    PGconn* c = s.conn_.get();
    exec(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", {}, s.where_, "cannot begin");
    pg_table_census out;
    try {
      if (!opt.snapshot.empty())
        exec(c, "SET TRANSACTION SNAPSHOT " + detail::pg::literal(c, opt.snapshot), {}, s.where_,
             "cannot import the exported snapshot (has its transaction ended?)");
      auto r = exec(c, s.table_.census_query(), {}, s.where_, "cannot count the table's rows");
      const bool by_scope = !s.table_.scope_expression().empty();
      if (by_scope) out.scopes.emplace();
      std::map<std::size_t, std::size_t> by_dim;
      for (int k = 0; k < PQntuples(r.get()); ++k) {
        const std::size_t n = std::stoull(detail::pg::cell(r.get(), k, 2));
        out.rows += n;
        if (by_scope) (*out.scopes)[detail::pg::cell(r.get(), k, 0)] += n;
        if (!PQgetisnull(r.get(), k, 1)) {
          const long long d = std::stoll(detail::pg::cell(r.get(), k, 1));
          if (d > 0) by_dim[static_cast<std::size_t>(d)] += n;
        }
      }
      std::size_t best_count = 0;  // as memory_store::most_common_dimension: ties to the smaller
      for (const auto& [d, n] : by_dim)
        if (n > best_count) out.dimension = d, best_count = n;
      exec(c, "COMMIT", {}, s.where_, "cannot end the count");
    } catch (...) {
      PQclear(PQexec(c, "ROLLBACK"));
      throw;
    }
    return out;
  }

  /// Whether the server can read the rows of one scope through an index on the scope's place (a
  /// column, or a JSON path such as mem0's `payload #>> '{user_id}'`): the plan (`EXPLAIN`, with
  /// sequential scans disabled for the question) of reading one scope's rows has the scope in an
  /// index condition, not in a filter over every row. Without one, every job of a check cut by
  /// scope (detect/pg_workers.hpp) scans the whole table. nullopt when the mapping gives the scope
  /// no place of its own. `place`, when given, gets the place as an index expression
  /// (`scope`, `(payload #>> '{user_id}')`), for a `CREATE INDEX ON T (...)` hint.
  /// @throws as `census`; nothing is written.
  static std::optional<bool> scope_index(const std::string& conninfo, pg_mapping mapping,
                                         std::string* place = nullptr) {
    pg_store s = catalog(conninfo, std::move(mapping));
    if (s.table_.scope_expression().empty()) return std::nullopt;
    if (place) *place = s.table_.scope_index_expression();
    using detail::pg::exec;
    PGconn* c = s.conn_.get();
    exec(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", {}, s.where_, "cannot begin");
    bool indexed = false;
    try {
      exec(c, "SET LOCAL enable_seqscan = off", {}, s.where_, "cannot plan a read");
      auto r = exec(c,
                    "EXPLAIN (FORMAT JSON) " +
                        s.table_.select_scopes(c, {std::string("memhealth-plan-probe")}),
                    {}, s.where_, "cannot plan a read");
      const auto plan = nlohmann::json::parse(detail::pg::cell(r.get(), 0, 0), nullptr, false);
      // an index condition on the probe's scope anywhere in the plan (not a filter applied to
      // every row of a scan, sequential or in key order)
      std::vector<const nlohmann::json*> todo{&plan};
      while (!todo.empty()) {
        const nlohmann::json* n = todo.back();
        todo.pop_back();
        if (n->is_object())
          if (auto it = n->find("Index Cond");
              it != n->end() && it->is_string() &&
              it->get<std::string>().find("memhealth-plan-probe") != std::string::npos)
            indexed = true;
        if (n->is_structured())
          for (const auto& x : *n) todo.push_back(&x);  // an object's values, an array's items
      }
      exec(c, "ROLLBACK", {}, s.where_, "cannot end the plan");
    } catch (...) {
      PQclear(PQexec(c, "ROLLBACK"));
      throw;
    }
    return indexed;
  }

  /// Creates memhealth's own schema (`memhealth_meta`, `memhealth_records`) in the database
  /// `conninfo` names, fills it with `records` (index order) in one transaction, and opens it.
  /// @throws error(precondition) when `memhealth_records` exists (nothing is replaced); as
  ///         `open`.
  static pg_store create(const std::string& conninfo, const std::vector<R>& records,
                         pg_store_options opt = {}) {
    {
      auto c = detail::pg::connect(conninfo);
      const std::string where = describe_conninfo(conninfo);
      using detail::pg::exec;
      exec(c.get(), "BEGIN", {}, where, "cannot begin");
      auto r = exec(c.get(), "SELECT to_regclass('memhealth_records') IS NOT NULL", {}, where,
                    "cannot look up a table");
      if (detail::pg::cell(r.get(), 0, 0) == "t")
        throw error(error_code::precondition,
                    where + ": table memhealth_records already exists; refusing to replace it");
      exec(c.get(), std::string(schema_sql), {}, where, "cannot create the schema");
      std::mt19937_64 rng(std::random_device{}());
      char id[33];
      std::snprintf(id, sizeof id, "%016llx%016llx", static_cast<unsigned long long>(rng()),
                    static_cast<unsigned long long>(rng()));
      exec(c.get(),
           "INSERT INTO memhealth_meta(key, value) VALUES ('format', 'memhealth-store'), "
           "('schema_version', $1), ('database_id', $2)",
           {std::to_string(pg_schema_version), std::string(id)}, where,
           "cannot write memhealth_meta");
      for (const auto& rec : records) {
        std::string canon;
        detail::jsonl::append_record(rec, {}, canon);
        const auto j = nlohmann::json::parse(canon);
        auto text = [&](const char* f) -> std::optional<std::string> {
          auto it = j.find(f);
          if (it == j.end()) return std::nullopt;
          return it->is_string() ? it->get<std::string>() : it->dump();
        };
        // jsonb columns: an object as JSON text; anything else (such as a metadata string an
        // import kept as an extra field) NULL, the original staying in `record`
        auto object = [&](const char* f) -> std::optional<std::string> {
          auto it = j.find(f);
          if (it == j.end() || !it->is_object()) return std::nullopt;
          return it->dump();
        };
        std::optional<std::string> emb, updated;
        if (!rec.embedding.empty()) emb = detail::pg::vector_text(rec.embedding, false);
        if (rec.updated_at) updated = format_timestamp(*rec.updated_at);
        // the derived columns from the canonical JSON (a field kept only as an unparsable
        // original, such as updated_at "yesterday", stays NULL in its typed column)
        exec(c.get(),
             "INSERT INTO memhealth_records(id, scope, status, kind, updated_at, metadata, claim, "
             "embedding, embedding_version, record) VALUES ($1, $2, $3, $4, CAST($5 AS "
             "timestamptz), CAST($6 AS jsonb), CAST($7 AS jsonb), CAST($8 AS real[]), $9, $10)",
             {rec.id, text("scope"), text("status"), text("kind"), updated, object("metadata"),
              object("claim"), emb, text("embedding_version"), canon},
             where, "cannot insert a record");
      }
      exec(c.get(), "COMMIT", {}, where, "cannot commit");
    }
    return open(conninfo, pg_own_mapping(), opt);
  }

  /// Number of rows read (records, duplicates included).
  [[nodiscard]] std::size_t size() const noexcept { return records_.size(); }
  /// The record at index i (key order), embedding included. Valid until it is mutated.
  [[nodiscard]] const R& record(std::size_t i) const {
    MEMHEALTH_ASSERT(i < size(), "pg_store::record: index out of range");
    return records_[i];
  }
  /// The embedding of record i (empty = missing). Valid until record i is mutated.
  [[nodiscard]] std::span<const float> embedding(std::size_t i) const {
    MEMHEALTH_ASSERT(i < size(), "pg_store::embedding: index out of range");
    return records_[i].embedding;
  }
  /// The element count of record i's vector (0 = none): embedding(i).size(), or, for a store
  /// opened with `pg_store_options::vectors` false, the count the server gave.
  [[nodiscard]] std::size_t vector_length(std::size_t i) const {
    MEMHEALTH_ASSERT(i < size(), "pg_store::vector_length: index out of range");
    return opt_.vectors ? records_[i].embedding.size() : lengths_[i];
  }
  /// Whether the vectors were read (`pg_store_options::vectors`).
  [[nodiscard]] bool has_vectors() const noexcept { return opt_.vectors; }
  /// Index of the first record with this id, or nullopt.
  [[nodiscard]] std::optional<std::size_t> find(std::string_view id) const {
    auto it = index_.find(std::string(id));
    if (it == index_.end()) return std::nullopt;
    return it->second;
  }
  /// The most common non-zero embedding length (0 = none).
  [[nodiscard]] std::size_t dimension() const noexcept { return dim_; }
  /// The row's key as text: the key column's value, or a JSON array of the values of a
  /// composite key.
  [[nodiscard]] std::string store_key(std::size_t i) const { return key_text(keys_.at(i)); }
  /// Which table this is, whatever rows were inserted or deleted since (as the SQLite store's id):
  /// memhealth's own schema: the random id in `memhealth_meta`; a mapped table:
  /// `pg-table:SYSTEM_ID.DATABASE_OID.TABLE_OID` (the cluster's `system_identifier` from
  /// `pg_control_system()`, "unknown" where the role may not call it; the database's and the
  /// table's OIDs). A table dropped and created again, or restored from a dump, is another table.
  /// Write-ahead logs, rollback and migrations compare it before the record fingerprint, so a
  /// watch's log stays usable while the agent inserts and deletes rows.
  [[nodiscard]] const std::string& database_id() const noexcept { return database_id_; }
  /// The mapping the store was opened with.
  [[nodiscard]] const pg_mapping& mapping() const noexcept { return table_.mapping(); }
  /// Whether the mapping gives the scope a place of its own, so rows can be read by scope
  /// (`pg_store_options::scopes`).
  [[nodiscard]] bool scope_selectable() const noexcept {
    return !table_.scope_expression().empty();
  }
  /// The connection (for read-only SQL by the caller).
  [[nodiscard]] PGconn* native_handle() const noexcept { return conn_.get(); }
  /// Where the store is, for messages: `postgresql://user@host:port/db table T` (no secret).
  [[nodiscard]] const std::string& description() const noexcept { return where_; }
  /// What the read could not take whole, one `load_issue` per problem in read order (file =
  /// description(), line 0, the field, reason "row KEY: ..."), as a JSONL store reports bad
  /// lines: a field of the wrong type (`status: 5`, `created_at: "yesterday"`), a rest place
  /// that is not a JSON object, a vector that is not a one-dimensional array without NULLs (the
  /// record is kept without that part), rows the mapping's key names more than once (kept), and,
  /// in memhealth's schema, a `record` value that is not one JSON object (the row is skipped:
  /// record_kept false). A record read with an issue is never written: `restore` and
  /// `preview_restore` throw error(precondition) for it, so no repair or rollback can lose the
  /// part that was not read.
  [[nodiscard]] const std::vector<load_issue>& load_issues() const noexcept { return issues_; }
  /// Rows of the table the read returned: size() plus the rows skipped (load issues with
  /// record_kept false); a row joined to several vector-table rows counts once.
  [[nodiscard]] std::size_t rows_read() const noexcept { return rows_read_; }
  /// Whether record i was read with a load issue (see load_issues(); it is never written).
  [[nodiscard]] bool read_with_issue(std::size_t i) const { return flagged_.count(i) != 0; }

  /// Moves the records out (index order, embeddings included) and closes the connection: for a
  /// caller that needs the rows, not the store (no copy). The store is empty afterwards.
  [[nodiscard]] std::vector<R> release_records() && {
    index_.clear();
    flagged_.clear();
    keys_.clear();
    lengths_.clear();
    undo_.clear();
    conn_.reset();
    return std::move(records_);
  }

  /// A complete copy of record i. @throws error(not_found) for a bad index.
  [[nodiscard]] R extract(std::size_t i) const {
    if (i >= size()) throw error(error_code::not_found, "pg_store: record index out of range");
    return records_[i];
  }

  /// Writes the record image at index i (see "Writing"), in the open action or a transaction
  /// of its own. @return the image replaced.
  /// @throws error(busy) when the row changed since it was read (the rollback of the action, or
  ///         of the write's own transaction, then reads the row again); error(precondition) for a
  ///         read-only store, an id change or a field the mapping cannot store; error(io) when a
  ///         statement fails or the connection is lost (nothing of the action stays).
  R restore(std::size_t i, const R& image) {
    if (i >= size()) throw error(error_code::not_found, "pg_store: record index out of range");
    if (opt_.read_only)
      throw error(error_code::precondition, where_ + ": the store is open read-only");
    refuse_flagged(i);
    const bool own = !in_action_;
    if (own) begin_action();
    try {
      lock_scope(records_[i].scope);
      if (image.scope != records_[i].scope) lock_scope(image.scope);
      const auto now = check_unchanged(i);
      refuse_inexact_times(i, image, now.inexact_times);
      for (const auto& st : statements(i, image, now.frozen)) {
        auto r = detail::pg::exec(conn_.get(), st.sql, st.params, where_, "cannot update a row");
        if (std::string(PQcmdTuples(r.get())) != "1")
          throw error(error_code::io, where_ + ": row " + store_key(i) + ": an UPDATE changed " +
                                          PQcmdTuples(r.get()) +
                                          " rows instead of 1 (a vector row missing?)");
      }
      undo_.emplace_back(i, records_[i]);
      R before = std::move(records_[i]);
      records_[i] = image;
      if (own) commit_action();
      return before;
    } catch (...) {
      if (own) rollback_action();
      throw;
    }
  }

  /// Locks row i in the open action (the scope's advisory lock, then the row `FOR UPDATE`, as
  /// `restore` does) and checks that it still holds the record this store read, without writing
  /// it: `apply_plan` calls it for each record an action names but does not write (a merge's
  /// primary), so an action never commits over such a row another writer changed or deleted
  /// meanwhile (the lock holds it until the commit).
  /// @throws error(precondition) without an open action, or when the key now names several
  ///         rows; error(busy) when the row changed or is gone (the action's rollback reads it
  ///         again); error(not_found) for a bad index; error(io) when a statement fails.
  void verify_unchanged(std::size_t i) {
    if (i >= size()) throw error(error_code::not_found, "pg_store: record index out of range");
    if (!in_action_)
      throw error(error_code::precondition, "pg_store::verify_unchanged: no action is open");
    lock_scope(records_[i].scope);
    (void)check_unchanged(i);
  }

  /// The SQL `restore(i, image)` would run now, parameters written in as literals, one
  /// statement per line (empty when nothing would change). @throws as `restore` for an id
  /// change or a field the mapping cannot store.
  [[nodiscard]] std::string preview_restore(std::size_t i, const R& image) const {
    if (i >= size()) throw error(error_code::not_found, "pg_store: record index out of range");
    refuse_flagged(i);
    // the row as it is now, for the refusals restore would make (times it could not give
    // back, NULL json places), so the preview never shows SQL a real run refuses
    auto r = detail::pg::exec(conn_.get(), table_.select_one(), {keys_[i].begin(), keys_[i].end()},
                              where_, "cannot read a row");
    if (PQntuples(r.get()) != 1)
      throw error(error_code::busy, where_ + ": row " + store_key(i) +
                                        " is gone or not alone under its key since it was read; "
                                        "nothing would be written");
    refuse_inexact_times(i, image, table_.inexact_times(r.get(), 0));
    std::string out;
    for (const auto& st : statements(i, image, table_.frozen_places(r.get(), 0)))
      out += detail::pg::table_access::inline_params(conn_.get(), st) + ";\n";
    return out;
  }

  /// Opens a transaction for one repair action. Reconnects first when the connection was lost.
  /// @throws error(precondition) when one is open; error(io) when BEGIN fails.
  void begin_action() {
    if (in_action_)
      throw error(error_code::precondition, "pg_store::begin_action: an action is already open");
    if (PQstatus(conn_.get()) != CONNECTION_OK) {
      PQreset(conn_.get());
      if (PQstatus(conn_.get()) != CONNECTION_OK)
        throw error(error_code::io, where_ + ": cannot reconnect: " +
                                        detail::pg::trimmed(PQerrorMessage(conn_.get())));
    }
    detail::pg::exec(conn_.get(), "BEGIN", {}, where_, "cannot begin a transaction");
    in_action_ = true;
    undo_.clear();
    try {
      auto r = detail::pg::exec(conn_.get(), "SELECT txid_current()::text", {}, where_,
                                "cannot begin a transaction");
      txid_ = detail::pg::cell(r.get(), 0, 0);
    } catch (...) {
      rollback_action();
      throw;
    }
  }
  /// Commits the open action. When COMMIT fails because the connection was lost, the outcome
  /// is asked of the server after reconnecting (`txid_status`): a transaction the server
  /// committed counts as committed (its acknowledgement alone was lost).
  /// @throws error(precondition) without an open action; error(io) when the action did not
  ///         commit (it is then rolled back, in the database and in this store) or its outcome
  ///         cannot be learned (then this store drops its view of the action's rows: reopen it).
  void commit_action() {
    if (!in_action_)
      throw error(error_code::precondition, "pg_store::commit_action: no action is open");
    try {
      detail::pg::exec(conn_.get(), "COMMIT", {}, where_, "cannot commit a transaction");
      if (opt_.after_commit_hook) opt_.after_commit_hook();
    } catch (...) {
      if (committed_after_all()) {
        in_action_ = false;
        undo_.clear();
        return;
      }
      rollback_action();
      throw;
    }
    in_action_ = false;
    undo_.clear();
  }
  /// Rolls the open action back (a no-op without one); never throws.
  void rollback_action() noexcept {
    if (!in_action_) return;
    if (PQstatus(conn_.get()) == CONNECTION_OK) {
      PGresult* r = PQexec(conn_.get(), "ROLLBACK");
      PQclear(r);
    }
    for (auto it = undo_.rbegin(); it != undo_.rend(); ++it)
      records_[it->first] = std::move(it->second);
    undo_.clear();
    in_action_ = false;
    // rows another writer changed since the read (a write refused as busy): read again, so a
    // retry works from the row as it is (stale, or applied over the new image) instead of
    // failing against the old read every time
    for (const std::size_t i : changed_) {
      try {
        read_again(i);
      } catch (...) {  // connection gone: the record stays as read (a retry fails as busy)
      }
    }
    changed_.clear();
  }
  /// True between `begin_action` and `commit_action`/`rollback_action`.
  [[nodiscard]] bool in_action() const noexcept { return in_action_; }

  /// The SQL of memhealth's own schema (what `create` runs).
  static constexpr std::string_view schema_sql =
      "CREATE TABLE memhealth_meta (key text PRIMARY KEY, value text NOT NULL);"
      "CREATE TABLE memhealth_records ("
      " seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
      " id text NOT NULL, scope text, status text, kind text, updated_at timestamptz,"
      " metadata jsonb, claim jsonb, embedding real[], embedding_version text,"
      " record text NOT NULL);"
      "CREATE INDEX memhealth_records_id ON memhealth_records (id);"
      "CREATE INDEX memhealth_records_scope ON memhealth_records (scope);"
      "CREATE INDEX memhealth_records_status ON memhealth_records (status);"
      "CREATE INDEX memhealth_records_updated_at ON memhealth_records (updated_at);";

 private:
  pg_store() = default;

  // A store with its connection and the mapping checked against the catalog (read-only), no row
  // read: what census and scope_index ask the server about.
  static pg_store catalog(const std::string& conninfo, pg_mapping mapping) {
    pg_store s;
    s.where_ = describe_conninfo(conninfo) + " table " + mapping.table;
    s.conn_ = detail::pg::connect(conninfo);
    if (!mapping.record_column.empty()) s.read_meta();
    s.table_ = detail::pg::table_access(s.conn_.get(), std::move(mapping), true, s.where_);
    return s;
  }

  // After a failed COMMIT: reconnects when needed and asks the server whether transaction
  // txid_ committed. False when it did not, or when the answer cannot be had.
  bool committed_after_all() noexcept {
    try {
      if (txid_.empty()) return false;
      // ends an aborted transaction block if there is one; on a lost connection it fails and
      // libpq learns that the connection is gone
      if (PQstatus(conn_.get()) == CONNECTION_OK) PQclear(PQexec(conn_.get(), "ROLLBACK"));
      if (PQstatus(conn_.get()) != CONNECTION_OK) PQreset(conn_.get());
      if (PQstatus(conn_.get()) != CONNECTION_OK) return false;
      auto r = detail::pg::exec(conn_.get(), "SELECT txid_status($1::bigint)", {txid_}, where_,
                                "cannot learn a transaction's outcome");
      return detail::pg::cell(r.get(), 0, 0) == "committed";
    } catch (...) {
      return false;
    }
  }

  // database_id() of a mapped table (see there). @throws error(io) when the catalog cannot be
  // read; a role that may not call pg_control_system() gets "unknown" in its place.
  std::string host_table_id() {
    using detail::pg::cell;
    std::string system = "unknown";
    try {
      auto r =
          detail::pg::exec(conn_.get(), "SELECT system_identifier::text FROM pg_control_system()",
                           {}, where_, "cannot read the cluster's system identifier");
      if (PQntuples(r.get()) == 1 && !PQgetisnull(r.get(), 0, 0)) system = cell(r.get(), 0, 0);
    } catch (
        const error&) {  // not granted (some hosted services): the OIDs still tell tables apart
    }
    auto d = detail::pg::exec(
        conn_.get(), "SELECT oid::text FROM pg_database WHERE datname = current_database()", {},
        where_, "cannot read the database's OID");
    return "pg-table:" + system + "." + cell(d.get(), 0, 0) + "." + table_.table_oid();
  }

  void read_meta() {
    using detail::pg::cell;
    auto r = detail::pg::exec(conn_.get(), "SELECT to_regclass('memhealth_meta') IS NOT NULL", {},
                              where_, "cannot look up a table");
    if (cell(r.get(), 0, 0) != "t")
      throw error(error_code::schema, where_ + ": not a memhealth store (no memhealth_meta table)");
    auto m = detail::pg::exec(conn_.get(), "SELECT key, value FROM memhealth_meta", {}, where_,
                              "cannot read memhealth_meta");
    std::string format, version;
    for (int k = 0; k < PQntuples(m.get()); ++k) {
      const std::string key = cell(m.get(), k, 0), value = cell(m.get(), k, 1);
      if (key == "format") format = value;
      if (key == "schema_version") version = value;
      if (key == "database_id") database_id_ = value;
    }
    if (format != "memhealth-store")
      throw error(error_code::schema, where_ + ": memhealth_meta does not name a memhealth store");
    if (version != std::to_string(pg_schema_version))
      throw error(error_code::schema, where_ + ": unknown schema_version '" + version +
                                          "' (this memhealth reads " +
                                          std::to_string(pg_schema_version) + ")");
  }

  void load() {
    using detail::pg::exec;
    PGconn* c = conn_.get();
    exec(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", {}, where_, "cannot begin");
    try {
      if (!opt_.snapshot.empty())
        exec(c, "SET TRANSACTION SNAPSHOT " + detail::pg::literal(c, opt_.snapshot), {}, where_,
             "cannot import the exported snapshot (has its transaction ended?)");
      // A cursor is planned for its first rows (cursor_tuple_fraction 0.1): for a job's scopes
      // that is a walk of the whole table in key order, filtering, for every job. Planned for
      // all of its rows, the scopes' rows are found first (an index on the scope when there is
      // one) and then sorted by key: the same rows in the same order.
      if (opt_.scopes || opt_.ids)
        exec(c, "SET LOCAL cursor_tuple_fraction = 1.0", {}, where_, "cannot plan the read");
      const std::string query = opt_.scopes    ? table_.select_scopes(c, *opt_.scopes, opt_.vectors)
                                : opt_.ids     ? table_.select_ids(c, *opt_.ids, opt_.vectors)
                                : opt_.vectors ? table_.select_all()
                                               : table_.select_all_lengths();
      exec(c, "DECLARE memhealth_read NO SCROLL CURSOR FOR " + query, {}, where_,
           "cannot read the table");
      const std::string fetch = "FETCH FORWARD " +
                                std::to_string(std::max<std::size_t>(opt_.fetch_rows, 1)) +
                                " FROM memhealth_read";
      while (true) {
        // binary results: the vector comes as floats, not as text the server formats and this
        // process parses again (every other column is text: the same bytes either way)
        auto r = exec(c, fetch, {}, where_, "cannot read the table", true);
        const int n = PQntuples(r.get());
        if (n == 0) break;
        std::string text;
        std::vector<std::vector<float>> vecs;
        std::vector<std::size_t> lengths;
        std::vector<std::vector<std::string>> keys;
        std::vector<std::vector<load_issue>> row_issues;     // per kept line, in read order
        std::vector<std::optional<std::string>> own_scopes;  // memhealth's schema: scope column
        // the record column is parsed once, by parse_jsonl: row_json only looks at its shape
        const bool own = !table_.mapping().record_column.empty();
        detail::pg::table_access::row_problems problems;
        for (int row = 0; row < n; ++row) {
          ++rows_read_;
          problems.clear();
          std::vector<float> vec;
          std::size_t length = 0;
          std::string line = table_.row_json(r.get(), row, vec, !own, &length, &problems);
          auto key = table_.row_key(r.get(), row);
          std::vector<load_issue> these;
          for (auto& [field, why] : problems)
            these.push_back({where_, 0, field, "row " + key_text(key) + ": " + why, !line.empty()});
          if (line.empty()) {  // no record: the issue says so
            issues_.insert(issues_.end(), these.begin(), these.end());
            continue;
          }
          row_issues.push_back(std::move(these));
          if (own) own_scopes.push_back(table_.own_scope(r.get(), row));
          text += line;
          text += '\n';
          vecs.push_back(std::move(vec));
          lengths.push_back(length);
          keys.push_back(std::move(key));
        }
        append_rows(text, vecs, lengths, keys, row_issues, own_scopes);
      }
      exec(c, "CLOSE memhealth_read", {}, where_, "cannot close the cursor");
      exec(c, "COMMIT", {}, where_, "cannot end the read");
    } catch (...) {
      PQclear(PQexec(c, "ROLLBACK"));
      throw;
    }
    for (std::size_t i = 0; i < records_.size(); ++i) index_.emplace(records_[i].id, i);
    std::map<std::size_t, std::size_t> by_length;  // as most_common_dimension: ties to the smaller
    for (std::size_t n : lengths_)
      if (n > 0) ++by_length[n];
    std::size_t best = 0;
    for (const auto& [n, count] : by_length)
      if (count > best) dim_ = n, best = count;
  }

  // Appends the records of `text` (one line per row, as row_json wrote them) with their vectors,
  // lengths, keys and issues (`row_issues[k]`, row_json's problems). A field the record reader
  // refuses (a wrong type: `status: 5`) becomes a load issue naming the row; a row with any
  // issue is kept without the part it names and flagged (never written); a line that is no
  // record (memhealth's schema: a `record` value that is not one) is skipped with its issue.
  void append_rows(const std::string& text, std::vector<std::vector<float>>& vecs,
                   const std::vector<std::size_t>& lengths,
                   std::vector<std::vector<std::string>>& keys,
                   std::vector<std::vector<load_issue>>& row_issues,
                   const std::vector<std::optional<std::string>>& own_scopes = {}) {
    load_options lo;
    lo.threads = 1;
    auto lr = parse_jsonl(text, where_, lo);
    std::vector<bool> skipped(vecs.size(), false);
    for (auto& is : lr.issues) {
      if (is.line == 0 || is.line > vecs.size()) continue;  // not a row's line (none expected)
      const std::size_t k = is.line - 1;
      row_issues[k].push_back(
          {where_, 0, is.field, "row " + key_text(keys[k]) + ": " + is.reason, is.record_kept});
      if (!is.record_kept) skipped[k] = true;
    }
    std::size_t next = 0;  // lr.records holds the kept lines' records, in line order
    for (std::size_t k = 0; k < vecs.size(); ++k) {
      issues_.insert(issues_.end(), row_issues[k].begin(), row_issues[k].end());
      if (skipped[k]) continue;
      if (next >= lr.records.size())
        throw error(error_code::parse, where_ + ": the rows read and the records made differ");
      R rec = std::move(lr.records[next++]);
      if (k < own_scopes.size() && rec.scope != own_scopes[k].value_or(std::string())) {
        // memhealth's schema: the derived scope column disagrees with the record (an edit by
        // hand): the census and the jobs select by the column, so the record is not read
        issues_.push_back({where_, 0, "scope",
                           "row " + key_text(keys[k]) + ": column 'scope' ('" +
                               own_scopes[k].value_or(std::string()) +
                               "') differs from the record's scope ('" + rec.scope +
                               "'); the row is not read (write the record again to fix it)",
                           false});
        continue;
      }
      rec.embedding = std::move(vecs[k]);
      // the read is in key order, so rows sharing a key are neighbours: none of them is written
      // (a write by key would change them all)
      if (!keys_.empty() && keys_.back() == keys[k]) {
        if (table_.mapping().vector_table && canonical(records_.back()) == canonical(rec)) {
          // one row of the main table joined to several rows of the vector table: one record,
          // with no vector (which of them would be a guess), never written
          if (!vector_rows_shared_)
            issues_.push_back({where_, 0, "embedding",
                               "row " + key_text(keys[k]) + ": the vector table '" +
                                   table_.mapping().vector_table->table +
                                   "' holds more than one vector row for this key; none was "
                                   "read, and the record is never written",
                               true});
          records_.back().embedding.clear();
          lengths_.back() = 0;
          --rows_read_;  // rows of the main table are counted (as the census counts them)
          flagged_.insert(records_.size() - 1);
          vector_rows_shared_ = true;
          continue;
        }
        if (!shared_key_) {  // once per group of rows sharing a key
          issues_.push_back({where_, 0, "",
                             "row " + key_text(keys[k]) + ": the mapping's key (" + key_names() +
                                 ") names more than one row; they "
                                 "are read, never written (give the mapping a "
                                 "unique key)",
                             true});
        }
        flagged_.insert(records_.size() - 1);
        flagged_.insert(records_.size());
        shared_key_ = true;
      } else {
        shared_key_ = false;
        vector_rows_shared_ = false;
      }
      if (!row_issues[k].empty()) flagged_.insert(records_.size());
      records_.push_back(std::move(rec));
      keys_.push_back(std::move(keys[k]));
      lengths_.push_back(lengths[k]);
    }
  }

  std::string key_names() const {
    std::string s;
    for (const auto& k : table_.mapping().key) s += (s.empty() ? "" : ", ") + k;
    return s;
  }

  static std::string key_text(const std::vector<std::string>& k) {
    if (k.size() == 1) return k[0];
    nlohmann::json a = k;
    return a.dump();
  }

  // A row read with a load issue is never written: its record lacks what could not be read,
  // so an image of it written back (or a rollback to it) would lose that part of the row.
  void refuse_flagged(std::size_t i) const {
    if (flagged_.count(i))
      throw error(error_code::precondition,
                  where_ + ": record '" + records_[i].id + "' (row " + store_key(i) +
                      ") was read with a load issue (see load_issues()); memhealth does not "
                      "write a row it could not read whole or whose key is not unique; nothing "
                      "written");
  }

  static std::string canonical(const R& r) {
    std::string s;
    detail::jsonl::append_record(r, {}, s);
    return s;
  }

  std::vector<detail::pg::statement> statements(std::size_t i, const R& image,
                                                const std::set<std::string>& frozen = {}) const {
    const R& cur = records_[i];
    return table_.updates(keys_[i], canonical(cur), cur.embedding, canonical(image),
                          image.embedding, frozen);
  }

  // Serialises the repairs of one scope across sessions and machines: a transaction-level
  // advisory lock (PostgreSQL docs 9.27.10 "Advisory Lock Functions", pg_advisory_xact_lock) on
  // (pg_scope_lock_class, hashtext(scope)), held until the action commits or rolls back. Taken
  // once per scope and action (a session may hold it again; it is released at the end anyway).
  void lock_scope(const std::string& scope) {
    detail::pg::exec(conn_.get(), "SELECT pg_advisory_xact_lock($1::int, hashtext($2))",
                     {std::to_string(pg_scope_lock_class), scope}, where_,
                     "cannot lock the scope for a repair");
  }

  // What check_unchanged learns of the row as it is: its time fields a write could not give
  // back (table_access::inexact_times) and its NULL json places (frozen_places).
  struct row_now {
    std::vector<std::pair<std::string, std::string>> inexact_times;
    std::set<std::string> frozen;
  };

  // Reads row i again FOR UPDATE (inside the open transaction) and compares it with the record
  // this store holds. @throws error(busy) when it differs or is gone (both "changed by another
  // writer": a watch counts either as the agent's change, not as a failed repair),
  // error(precondition) when its key now names several rows.
  row_now check_unchanged(std::size_t i) {
    auto r = detail::pg::exec(conn_.get(), table_.select_one_for_update(),
                              {keys_[i].begin(), keys_[i].end()}, where_, "cannot lock a row");
    if (PQntuples(r.get()) > 1)
      throw error(error_code::precondition,
                  where_ + ": row " + store_key(i) + ": the mapping's key (" + key_names() +
                      ") now names " + std::to_string(PQntuples(r.get())) +
                      " rows; memhealth writes only a row its key names alone; nothing written");
    if (PQntuples(r.get()) != 1) {
      changed_.push_back(i);
      throw error(
          error_code::busy,
          where_ + ": row " + store_key(i) +
              " was changed by another writer (deleted since it was read); nothing written");
    }
    std::vector<float> vec;
    auto lr = parse_row(r.get(), vec);
    const R& cur = records_[i];
    bool same = lr.records.size() == 1 && canonical(lr.records[0]) == canonical(cur) &&
                vec.size() == cur.embedding.size();
    for (std::size_t k = 0; same && k < vec.size(); ++k)
      same = std::bit_cast<std::uint32_t>(vec[k]) == std::bit_cast<std::uint32_t>(cur.embedding[k]);
    if (!same) {
      changed_.push_back(i);
      throw error(error_code::busy, where_ + ": record '" + cur.id + "' (row " + store_key(i) +
                                        ") was changed by another writer after this store read "
                                        "it; nothing written (the action's rollback reads it "
                                        "again: a retry sees the new content)");
    }
    return {table_.inexact_times(r.get(), 0), table_.frozen_places(r.get(), 0)};
  }

  // The first row of a select_one(_for_update) result as records (the JSONL reader's result:
  // one record, or a load issue); its vector into `vec`.
  auto parse_row(PGresult* r, std::vector<float>& vec) {
    load_options lo;
    lo.threads = 1;
    return parse_jsonl(table_.row_json(r, 0, vec) + "\n", where_, lo);
  }

  // Record i read again from its row, outside any transaction (after an action's rollback).
  // A row that is gone, no longer alone under its key, no longer read whole or now holds another
  // record id is no longer found by its id (`find`) and never written: an action naming it is
  // stale, never a write over a row this store cannot vouch for. @throws error(io).
  void read_again(std::size_t i) {
    auto r = detail::pg::exec(conn_.get(), table_.select_one(), {keys_[i].begin(), keys_[i].end()},
                              where_, "cannot read a row");
    std::optional<R> now;
    std::vector<float> vec;
    if (PQntuples(r.get()) == 1) {
      auto lr = parse_row(r.get(), vec);
      if (lr.issues.empty() && lr.records.size() == 1 && lr.records[0].id == records_[i].id)
        now = std::move(lr.records[0]);
    }
    if (!now) {
      flagged_.insert(i);
      if (auto it = index_.find(records_[i].id); it != index_.end() && it->second == i)
        index_.erase(it);
      return;
    }
    lengths_[i] = vec.size();
    if (opt_.vectors) now->embedding = std::move(vec);
    records_[i] = std::move(*now);
  }

  // A repair that changes a time field whose text the row holds in a way memhealth would not
  // write back (table_access::inexact_times) is refused: neither the write nor a rollback of it
  // could give the row's text back. @throws error(precondition).
  void refuse_inexact_times(std::size_t i, const R& image,
                            const std::vector<std::pair<std::string, std::string>>& times) const {
    if (times.empty()) return;
    const auto cur = nlohmann::json::parse(canonical(records_[i]));
    const auto img = nlohmann::json::parse(canonical(image));
    for (const auto& [f, why] : times) {
      const auto a = cur.find(f), b = img.find(f);
      const bool same = (a == cur.end()) == (b == img.end()) && (a == cur.end() || *a == *b);
      if (!same)
        throw error(error_code::precondition,
                    where_ + ": record '" + records_[i].id + "' (row " + store_key(i) +
                        "): field " + f + " " + why +
                        ": changing it could not be rolled back to the row's text; nothing "
                        "written");
    }
  }

  std::string where_;
  std::string conninfo_;
  std::string database_id_;
  pg_store_options opt_;
  detail::pg::conn_ptr conn_;
  detail::pg::table_access table_;
  std::vector<R> records_;
  std::vector<std::vector<std::string>> keys_;
  std::vector<std::size_t> lengths_;         // the vectors' element counts as read
  std::vector<load_issue> issues_;           // what could not be read, row by row
  std::unordered_set<std::size_t> flagged_;  // records read with an issue: never written
  std::size_t rows_read_ = 0;                // rows the read returned (skipped ones included)
  bool shared_key_ = false;                  // the last record's key is its predecessor's
  bool vector_rows_shared_ = false;          // the last record's key had several vector-table rows
  std::unordered_map<std::string, std::size_t> index_;
  std::size_t dim_ = 0;
  bool in_action_ = false;
  std::string txid_;                             // the open action's transaction id (txid_current)
  std::vector<std::pair<std::size_t, R>> undo_;  // records written in the open action
  std::vector<std::size_t> changed_;             // rows found changed by another writer: read again
};

}  // namespace memhealth
