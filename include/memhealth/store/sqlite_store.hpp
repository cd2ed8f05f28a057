#pragma once
/// @file sqlite_store.hpp
/// `memhealth::sqlite_store<R>`: records in an SQLite database (schema in docs/format.md,
/// "SQLite store"). Link SQLite (CMake: `memhealth::sqlite`, which adds `SQLite::SQLite3`);
/// the umbrella header memhealth.hpp does not include this file.
///
/// **Schema.** Table `memhealth_meta(key, value)` (format, schema_version, dimension) and table
/// `records`, one row per record in store-index order (`seq INTEGER PRIMARY KEY`): indexed
/// columns `id`, `scope`, `status`, `updated_at` (ms since the Unix epoch, UTC), the columns
/// `kind`, `metadata` and `claim` (JSON text), the embedding as a little-endian float32 BLOB with
/// `embedding_dim` and `embedding_version`, and `record`: the canonical JSON (`append_json`) of
/// every field but the embedding, which is the lossless source of truth (unknown fields
/// included). The other columns are derived from it for SQL queries and indexes.
///
/// **Memory model.** Opening reads one compact index: the rowid of every store index i and an
/// id -> first-index map (about 50 bytes per record plus the ids). The rest is read lazily, by
/// blocks of `sqlite_store_options::block_rows` consecutive rows, with prepared statements:
/// - records (every field but the embedding) are decoded a block at a time on first use and then
///   stay resident, so `record(i)` returns a reference that stays valid until record i is mutated
///   or `release_records()` is called (detectors and the planner keep references to several
///   records at once; a bounded record cache could not honour that). `for_each` streams complete
///   records one row at a time without filling that cache.
/// - embeddings (at d = 384, ~85% of a store's bytes) are never all resident: `embedding(i)`
///   reads the block holding i into an LRU cache of `cached_embedding_blocks` blocks; the span it
///   returns stays valid until the next call of `embedding`, `extract` or any mutation.
///   Detection reads embeddings in one sequential pass, so each block is read once per pass.
/// Not thread-safe, not even for concurrent reads (reads fill the caches). Another process may
/// append records meanwhile (they are not in this store's index until it is opened again), and
/// may change records: every write here is a compare-and-swap under SQLite's write lock, so a
/// record changed by another writer after this store read it is never overwritten (`restore`
/// throws error(busy) and the rollback re-reads it; `apply_plan` retries the action on the new
/// content). Deleting rows under an open store is not supported (reads fail with error(io)).
///
/// **Transactions.** Every mutation is one SQLite transaction of its own, unless the caller
/// brackets several with `begin_action()` / `commit_action()` / `rollback_action()`: then they
/// commit or vanish together (this is the optional `transactional_record_store` capability that
/// `apply_plan`, `rollback` and `recover` use, one transaction per repair action). WAL journal
/// mode; `synchronous` FULL by default (see `sqlite_store_options::synchronous_full`).
///
/// **Errors.** Every failure throws `memhealth::error`: `schema` for a database that is not a
/// memhealth store (foreign tables, a missing table or column, an unknown schema version),
/// `parse` for a file that is not an SQLite database or is corrupt, `io` for a file that cannot
/// be opened, read or written, `busy` for a database locked by another process beyond the busy
/// timeout, `precondition` for `create` over an existing file or unbalanced
/// action calls. A database that fails validation is never written to: validation runs on a
/// read-only connection before the writable one is opened.

#include <sqlite3.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/io/jsonl.hpp"
#include "memhealth/io/temp_files.hpp"
#include "memhealth/record/memory_record.hpp"
#include "memhealth/record/time.hpp"
#include "memhealth/store/memory_store.hpp"
#include "memhealth/store/sqlite_schema.hpp"
#include "memhealth/store/store.hpp"
#include "memhealth/version.hpp"

namespace memhealth {

/// Store of records in an SQLite database (see the file comment for schema, memory model,
/// transactions and errors). Satisfies `record_store`, `mutable_record_store` and
/// `transactional_record_store`, so every detector, the planner and the executor run on it
/// unchanged.
///
/// @tparam R the record type; must be `memory_record` (rows hold its canonical JSON).
template <class R = memory_record>
class sqlite_store {
  static_assert(std::is_same_v<R, memory_record>,
                "memhealth: sqlite_store<R> stores canonical memory_record JSON; R must be "
                "memhealth::memory_record (convert your records to memory_record first).");

 public:
  using record_type = R;

  /// Creates a new store file at `path` with the schema and the given records (index order),
  /// and opens it. The database is built under a temporary name in the same directory
  /// (`.memhealth-tmp-<pid>-<n>-<name>`, see `write_new`) and appears at `path` only complete:
  /// a crash or a kill during the build never leaves a database at `path`.
  /// @param dimension d; 0 = the most common non-zero embedding length.
  /// @throws error(precondition) when `path` exists (nothing is overwritten: remove it first);
  ///         error(io) when it cannot be created or written (the temporary files are removed).
  /// @complexity O(total size of the records).
  static sqlite_store create(const std::filesystem::path& path, const std::vector<R>& records = {},
                             std::size_t dimension = 0, sqlite_store_options opt = {}) {
    write_new(path, records, dimension, opt);
    sqlite_store_options reopen = opt;
    reopen.verify = false;  // just built and synced by this process
    return open(path, reopen);
  }

  /// Writes a new store file at `path` holding `records` (index order), atomically: the
  /// database is built and committed under a temporary name in `path`'s directory
  /// (`temp_path_for`, registered in `live_temporaries` with its -wal, -shm and -journal
  /// companions while they exist), closed (which checkpoints the WAL into the file), fsync'ed,
  /// then linked to `path`, which must not exist (`link` refuses an existing name, so a
  /// database that appeared meanwhile is not replaced; file systems without hard links get
  /// `rename` after a second existence check), and the directory is fsync'ed.
  /// @throws error(precondition) when `path` exists; error(io) when the database cannot be
  ///         built, synced or moved into place; in every failure the temporaries are removed and
  ///         `path` is not created.
  /// @complexity O(total size of the records).
  static void write_new(const std::filesystem::path& path, const std::vector<R>& records = {},
                        std::size_t dimension = 0, sqlite_store_options opt = {}) {
    const std::string p = path.string();
    std::error_code ec;
    const bool exists = std::filesystem::exists(path, ec);
    if (ec) throw error(error_code::io, p + ": cannot inspect the path: " + ec.message());
    if (exists)
      throw error(error_code::precondition,
                  p + ": already exists; refusing to overwrite it (remove it first)");
    if (dimension == 0) dimension = memory_store<R>::most_common_dimension(records);
    const std::filesystem::path tmp_path = temp_path_for(path);
    const std::string tmp = tmp_path.string();
    temp_registration registered;
    static constexpr const char* companions[] = {"", "-wal", "-shm", "-journal"};
    for (const char* suffix : companions) registered.add(tmp + suffix);
    auto remove_temporaries = [&] {
      std::error_code rm;
      for (const char* suffix : companions) std::filesystem::remove(tmp + suffix, rm);
    };
    try {
      {
        auto db = detail::sqlite::open_db(tmp, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                                          opt.busy_timeout);
        detail::sqlite::exec(db.get(), "PRAGMA journal_mode=WAL", p, "cannot set WAL mode");
        detail::sqlite::exec(db.get(), "BEGIN IMMEDIATE", p, "cannot begin");
        detail::sqlite::exec(db.get(), detail::sqlite::schema_sql, p, "cannot create the schema");
        auto meta = detail::sqlite::prepare(
            db.get(), "INSERT INTO memhealth_meta(key, value) VALUES(?, ?)", p);
        const std::pair<std::string, std::string> rows[] = {
            {"format", "memhealth-store"},
            {"schema_version", std::to_string(sqlite_schema_version)},
            {"dimension", std::to_string(dimension)},
            {"created_by", std::string("memhealth ") + version_string},
            {"database_id",
             opt.database_id.empty() ? detail::sqlite::new_database_id() : opt.database_id}};
        for (const auto& [k, v] : rows) {
          detail::sqlite::bind_text(meta.get(), 1, k);
          detail::sqlite::bind_text(meta.get(), 2, v);
          if (int rc = sqlite3_step(meta.get()); rc != SQLITE_DONE)
            detail::sqlite::fail(db.get(), rc, p, "cannot write memhealth_meta");
          sqlite3_reset(meta.get());
        }
        detail::sqlite::exec(db.get(), "COMMIT", p, "cannot commit");
      }
      {
        sqlite_store_options build = opt;
        build.verify = false;  // an empty database this process just created
        sqlite_store s = open(tmp_path, build);
        s.append(records);
        detail::sqlite::exec(s.db_.get(), "PRAGMA wal_checkpoint(TRUNCATE)", p,
                             "cannot checkpoint");
      }  // the last connection closes: the WAL is checkpointed into the file and removed
      if (std::filesystem::file_size(tmp + "-wal", ec) > 0 && !ec)
        throw error(error_code::io,
                    p + ": the write-ahead log of the new database was not checkpointed");
      std::filesystem::remove(tmp + "-wal", ec);
      std::filesystem::remove(tmp + "-shm", ec);
      detail::sqlite::sync_file(tmp, p);
      detail::sqlite::move_into_place(tmp, p);
    } catch (...) {
      remove_temporaries();
      throw;
    }
    registered.release();
  }

  /// Opens an existing store. Validation (tables, columns, format, schema version, and with
  /// `opt.verify` `PRAGMA quick_check`) runs read-only first; then WAL mode is set.
  /// @throws error(io) when the file is missing or unreadable; error(schema) for a foreign
  ///         schema or a missing table/column; error(parse) for a corrupt or non-SQLite file.
  /// @complexity O(n) to build the index (+ O(file size) for `verify`).
  static sqlite_store open(const std::filesystem::path& path, sqlite_store_options opt = {}) {
    const std::string p = path.string();
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
      throw error(error_code::io, p + ": no such SQLite store (not a regular file)");
    if (opt.block_rows == 0) opt.block_rows = 1;
    if (opt.cached_embedding_blocks == 0) opt.cached_embedding_blocks = 1;
    const std::size_t dim = detail::sqlite::validate(p, opt);
    sqlite_store s;
    s.path_ = p;
    s.opt_ = opt;
    s.dim_ = dim;
    // read_only: a read-write connection with query_only set when the file is writable, so the
    // last connection to close can remove the -wal and -shm files; read-only otherwise.
    const bool writable = ::access(p.c_str(), W_OK) == 0;
    s.db_ = detail::sqlite::open_db(p, writable ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY,
                                    opt.busy_timeout);
    if (opt.read_only) {
      detail::sqlite::exec(s.db_.get(), "PRAGMA query_only=ON", p, "cannot set query_only");
    } else {
      detail::sqlite::exec(s.db_.get(), "PRAGMA journal_mode=WAL", p, "cannot set WAL mode");
      detail::sqlite::exec(
          s.db_.get(),
          opt.synchronous_full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL", p,
          "cannot set synchronous");
    }
    s.database_id_ = detail::sqlite::query_text(
        s.db_.get(), "SELECT value FROM memhealth_meta WHERE key='database_id'", p,
        "cannot read memhealth_meta");
    if (s.database_id_.empty() && !opt.read_only && writable) {  // a store made before ids
      const std::string id = detail::sqlite::new_database_id();
      const std::string sql =
          "INSERT OR IGNORE INTO memhealth_meta(key, value) VALUES('database_id', '" + id + "')";
      detail::sqlite::exec(s.db_.get(), sql.c_str(), p, "cannot write memhealth_meta");
      s.database_id_ = id;
    }
    s.prepare_statements();
    s.load_index();
    return s;
  }

  sqlite_store(sqlite_store&&) noexcept = default;
  sqlite_store& operator=(sqlite_store&&) noexcept = default;
  sqlite_store(const sqlite_store&) = delete;
  sqlite_store& operator=(const sqlite_store&) = delete;
  /// Closes the database; an action still open is rolled back (nothing half-written stays).
  ~sqlite_store() {
    if (db_ && in_action_) sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
  }

  // ------------------------------------------------------------------ reading

  /// Number of records. @complexity O(1)
  [[nodiscard]] std::size_t size() const noexcept { return seq_.size(); }
  /// The database's own id: 32 hex digits (128 random bits) written in `memhealth_meta` when the
  /// store is created, or the first time a store made before ids is opened for writing; empty
  /// for such a store opened read-only. Logs record it (repair/store_identity.hpp), so a log
  /// made for one database is refused for another even when both hold the same record ids.
  [[nodiscard]] const std::string& database_id() const noexcept { return database_id_; }
  /// Embedding dimension d recorded at creation (0 = unknown).
  [[nodiscard]] std::size_t dimension() const noexcept { return dim_; }
  /// The row's `seq` (its rowid) as decimal text: the store's own key for record i
  /// (`keyed_record_store`, store.hpp; logged beside the id). @throws error(not_found) out of
  /// range.
  [[nodiscard]] std::string store_key(std::size_t i) const {
    if (i >= seq_.size())
      throw error(error_code::not_found, "sqlite_store::store_key: index out of range");
    return std::to_string(seq_[i]);
  }
  /// Path of the database file.
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  /// The underlying connection (for read-only SQL by the caller; do not write through it).
  [[nodiscard]] sqlite3* native_handle() const noexcept { return db_.get(); }

  /// The record at index i without its embedding (read it with `embedding(i)`, or the complete
  /// record with `extract(i)`). Reads the block holding i on first use; the reference stays valid
  /// until record i is mutated or `release_records()` is called.
  /// @throws error(parse/io) when the block cannot be read or a row's JSON does not parse.
  [[nodiscard]] const R& record(std::size_t i) const {
    MEMHEALTH_ASSERT(i < size(), "sqlite_store::record: index out of range");
    const std::size_t b = i / opt_.block_rows;
    if (!record_blocks_[b]) load_record_block(b);
    return record_blocks_[b][i % opt_.block_rows];
  }

  /// The embedding of record i (empty span = missing), float32, length `embedding_dim` of its
  /// row. Valid until the next `embedding`/`extract` call or mutation.
  /// @complexity O(1) when its block is cached, else one block read (block_rows rows).
  [[nodiscard]] std::span<const float> embedding(std::size_t i) const {
    MEMHEALTH_ASSERT(i < size(), "sqlite_store::embedding: index out of range");
    const std::size_t b = i / opt_.block_rows;
    auto it = std::find_if(emb_cache_.begin(), emb_cache_.end(),
                           [&](const emb_block& e) { return e.block == b; });
    if (it == emb_cache_.end()) {
      if (emb_cache_.size() >= opt_.cached_embedding_blocks) emb_cache_.pop_back();
      emb_cache_.push_front(load_embedding_block(b));
      it = emb_cache_.begin();
    } else if (it != emb_cache_.begin()) {
      emb_cache_.splice(emb_cache_.begin(), emb_cache_, it);
      it = emb_cache_.begin();
    }
    const std::size_t k = i % opt_.block_rows;
    return {it->data.data() + it->offset[k], it->offset[k + 1] - it->offset[k]};
  }

  /// Index of the first record with this id, or nullopt. @complexity O(1) average.
  [[nodiscard]] std::optional<std::size_t> find(std::string_view id) const {
    auto it = index_.find(std::string(id));
    if (it == index_.end()) return std::nullopt;
    return it->second;
  }

  /// The complete record at index i, embedding included (a before-image). The embedding comes
  /// from the cached block when there is one, else from its row alone (random access, as in
  /// repairs, does not read whole blocks). @throws error(not_found) for a bad index.
  [[nodiscard]] R extract(std::size_t i) const {
    if (i >= size()) throw error(error_code::not_found, "sqlite_store: record index out of range");
    R copy = record(i);
    const std::size_t b = i / opt_.block_rows, k = i % opt_.block_rows;
    auto it = std::find_if(emb_cache_.begin(), emb_cache_.end(),
                           [&](const emb_block& e) { return e.block == b; });
    if (it != emb_cache_.end()) {
      copy.embedding.assign(it->data.begin() + static_cast<std::ptrdiff_t>(it->offset[k]),
                            it->data.begin() + static_cast<std::ptrdiff_t>(it->offset[k + 1]));
      return copy;
    }
    sqlite3_stmt* s = read_one_embedding_.get();
    sqlite3_bind_int64(s, 1, seq_[i]);
    const int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) copy.embedding = blob_floats(s, 0);
    sqlite3_reset(s);
    if (rc == SQLITE_DONE)
      throw error(error_code::io, path_ +
                                      ": the records table changed under an open store (row seq " +
                                      std::to_string(seq_[i]) + " missing); reopen the store");
    if (rc != SQLITE_ROW) detail::sqlite::fail(db_.get(), rc, path_, "cannot read an embedding");
    return copy;
  }

  /// Streams every complete record (embedding included) to `f(i, const R&)` in index order,
  /// decoding one block at a time without filling the record cache: memory O(block_rows).
  /// @throws what `f` throws; error(parse/io) on a read failure.
  template <class F>
  void for_each(F&& f) const {
    for (std::size_t b = 0; b * opt_.block_rows < size(); ++b) {
      auto recs = read_records(b, /*with_embeddings=*/true);
      const std::size_t first = b * opt_.block_rows;
      for (std::size_t k = 0; k < recs.size(); ++k) f(first + k, std::as_const(recs[k]));
    }
  }

  /// Drops the decoded records and embedding blocks (frees memory). Invalidates every reference
  /// and span obtained from this store.
  void release_records() {
    for (auto& b : record_blocks_) b.reset();
    emb_cache_.clear();
  }

  /// `PRAGMA integrity_check`: "ok", or SQLite's list of problems.
  [[nodiscard]] std::string integrity_check() const {
    return detail::sqlite::query_text(db_.get(), "PRAGMA integrity_check", path_,
                                      "integrity check failed");
  }

  // ------------------------------------------------------------------ writing

  /// Appends records (kept even when an id repeats or an embedding is malformed) in one
  /// transaction (or inside the open action). @return the index of the first one.
  /// @throws error(io) when the write fails (nothing of this call is kept).
  std::size_t append(const std::vector<R>& records) {
    const std::size_t first = size();
    if (records.empty()) return first;
    const bool own = !in_action_;
    if (own) begin_action();
    try {
      for (const auto& r : records) {
        bind_row(insert_.get(), r, r.embedding);
        step_done(insert_.get(), "cannot insert a record");
        const auto seq = sqlite3_last_insert_rowid(db_.get());
        const std::size_t i = seq_.size();
        index_.emplace(r.id, i);
        seq_.push_back(seq);
        const std::size_t b = i / opt_.block_rows;
        record_blocks_.resize(b + 1);
        if (record_blocks_[b]) {
          R& slot = record_blocks_[b][i % opt_.block_rows];
          slot = r;
          slot.embedding.clear();
          slot.embedding.shrink_to_fit();
        }
        emb_cache_.remove_if([&](const emb_block& e) { return e.block == b; });
        if (!r.embedding.empty() && dim_ == 0) {
          dim_ = r.embedding.size();
          const std::string sql = "UPDATE memhealth_meta SET value='" + std::to_string(dim_) +
                                  "' WHERE key='dimension'";
          detail::sqlite::exec(db_.get(), sql.c_str(), path_, "cannot write memhealth_meta");
        }
      }
      if (own) commit_action();
    } catch (...) {
      if (own) rollback_action();
      throw;
    }
    return first;
  }
  /// Appends one record. @return its index. @see append
  std::size_t insert(R r) { return append(std::vector<R>{std::move(r)}); }

  /// Writes a complete record image at index i (rollback, repairs), in the open action or a
  /// transaction of its own. @return the image replaced.
  /// @throws error(busy) when another process changed the record after this store read it
  ///         (nothing written; the cached record is read again when the action rolls back);
  ///         error(not_found) for a bad index; error(io) on a write failure.
  R restore(std::size_t i, const R& image) {
    return mutate(i, [&](R& r) { r = image; });
  }

  // ------------------------------------------------------------------ actions (transactions)

  /// Checks, inside the open action (under the write lock, so it stays so until the commit),
  /// that record i is still what this store read, without writing it: `apply_plan` calls it for
  /// each record an action names but does not write (a merge's primary), so an action never
  /// commits over a record another writer changed meanwhile.
  /// @throws error(precondition) without an open action; error(busy) when another writer
  ///         changed the record (the action's rollback reads it again); error(not_found) for a
  ///         bad index.
  void verify_unchanged(std::size_t i) {
    if (i >= size()) throw error(error_code::not_found, "sqlite_store: record index out of range");
    if (!in_action_)
      throw error(error_code::precondition, "sqlite_store::verify_unchanged: no action is open");
    check_unchanged(i, extract(i));
  }

  /// Opens a transaction (`BEGIN IMMEDIATE`) grouping the following mutations into one action.
  /// @throws error(precondition) when an action is already open; error(busy) when the write lock
  ///         cannot be taken within the busy timeout.
  void begin_action() {
    if (in_action_)
      throw error(error_code::precondition,
                  "sqlite_store::begin_action: an action is already open");
    step_done(begin_.get(), "cannot begin a transaction");
    in_action_ = true;
    touched_.clear();
    dim_at_begin_ = dim_;
  }
  /// Commits the open action: its mutations become durable together.
  /// @throws error(precondition) without an open action; error(io) when the commit fails (the
  ///         action is then rolled back and its cached records re-read).
  void commit_action() {
    if (!in_action_)
      throw error(error_code::precondition, "sqlite_store::commit_action: no action is open");
    try {
      step_done(commit_.get(), "cannot commit a transaction");
    } catch (...) {
      rollback_action();
      throw;
    }
    in_action_ = false;
    touched_.clear();
  }
  /// Rolls the open action back: none of its mutations stays, in the database or the caches.
  /// A no-op without an open action.
  void rollback_action() noexcept {
    if (!in_action_) return;
    sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
    in_action_ = false;
    dim_ = dim_at_begin_;
    emb_cache_.clear();
    // The database is authoritative again: rebuild the index (drops records appended in the
    // action, restores ids) and re-read the cached records the action wrote, in place, so
    // references to them stay valid and show the rolled-back values.
    try {
      seq_.clear();
      index_.clear();
      load_index();
      std::sort(touched_.begin(), touched_.end());
      touched_.erase(std::unique(touched_.begin(), touched_.end()), touched_.end());
      for (std::size_t i : touched_) {
        const std::size_t b = i / opt_.block_rows;
        if (i >= size() || !record_blocks_[b]) continue;
        auto fresh = read_range(i, i + 1, false);
        record_blocks_[b][i % opt_.block_rows] = std::move(fresh.front());
      }
    } catch (...) {
      release_records();  // cannot re-read: drop every cache rather than keep stale records
    }
    touched_.clear();
  }
  /// True between `begin_action` and `commit_action`/`rollback_action`.
  [[nodiscard]] bool in_action() const noexcept { return in_action_; }

 private:
  struct emb_block {
    std::size_t block = 0;
    std::vector<float> data;
    std::vector<std::size_t> offset;  // rows + 1 offsets into data
  };

  sqlite_store() = default;

  void prepare_statements() {
    using detail::sqlite::prepare;
    constexpr const char* cols =
        "(id, scope, status, kind, updated_at, metadata, claim, embedding, embedding_dim, "
        "embedding_version, record)";
    insert_ = prepare(db_.get(),
                      std::string("INSERT INTO records") + cols + " VALUES(?,?,?,?,?,?,?,?,?,?,?)",
                      path_);
    update_ =
        prepare(db_.get(),
                "UPDATE records SET id=?1, scope=?2, status=?3, kind=?4, updated_at=?5, "
                "metadata=?6, claim=?7,"
                " embedding=?8, embedding_dim=?9, embedding_version=?10, record=?11 WHERE seq=?12",
                path_);
    read_records_ =
        prepare(db_.get(),
                "SELECT seq, record FROM records WHERE seq BETWEEN ?1 AND ?2 ORDER BY seq", path_);
    read_full_ = prepare(
        db_.get(),
        "SELECT seq, record, embedding FROM records WHERE seq BETWEEN ?1 AND ?2 ORDER BY seq",
        path_);
    read_embeddings_ = prepare(
        db_.get(), "SELECT seq, embedding FROM records WHERE seq BETWEEN ?1 AND ?2 ORDER BY seq",
        path_);
    read_one_embedding_ = prepare(db_.get(), "SELECT embedding FROM records WHERE seq = ?1", path_);
    begin_ = prepare(db_.get(), "BEGIN IMMEDIATE", path_);
    commit_ = prepare(db_.get(), "COMMIT", path_);
  }

  void load_index() {
    auto s = detail::sqlite::prepare(db_.get(), "SELECT seq, id FROM records ORDER BY seq", path_);
    int rc;
    while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
      const auto seq = sqlite3_column_int64(s.get(), 0);
      index_.emplace(detail::sqlite::column_text(s.get(), 1), seq_.size());
      seq_.push_back(seq);
    }
    if (rc != SQLITE_DONE)
      detail::sqlite::fail(db_.get(), rc, path_, "cannot read the record index");
    record_blocks_.resize((seq_.size() + opt_.block_rows - 1) / opt_.block_rows);
  }

  void step_done(sqlite3_stmt* s, std::string_view what) {
    const int rc = sqlite3_step(s);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    if (rc != SQLITE_DONE) detail::sqlite::fail(db_.get(), rc, path_, what);
  }

  void bind_row(sqlite3_stmt* s, const R& r, std::span<const float> emb) const {
    using detail::sqlite::bind_text;
    bind_text(s, 1, r.id);
    bind_text(s, 2, r.scope);
    bind_text(s, 3, r.status);
    bind_text(s, 4, r.kind);
    if (r.updated_at)
      sqlite3_bind_int64(s, 5, r.updated_at->instant.time_since_epoch().count());
    else
      sqlite3_bind_null(s, 5);
    if (!r.metadata.empty()) {
      R only;
      only.metadata = r.metadata;
      bind_text(s, 6, detail::sqlite::field_json(only, "metadata"));
    } else {
      sqlite3_bind_null(s, 6);
    }
    if (r.claim) {
      R only;
      only.claim = r.claim;
      bind_text(s, 7, detail::sqlite::field_json(only, "claim"));
    } else {
      sqlite3_bind_null(s, 7);
    }
    if (!emb.empty()) {
      const std::string bytes = detail::sqlite::encode_floats(emb);
      sqlite3_bind_blob(s, 8, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
    } else {
      sqlite3_bind_null(s, 8);
    }
    sqlite3_bind_int64(s, 9, static_cast<std::int64_t>(emb.size()));
    bind_text(s, 10, r.embedding_version);
    bind_text(s, 11, detail::sqlite::record_json(r));
  }

  // Rows [first, last] of block b; reads (seq, record[, embedding]) and parses the JSON of the
  // whole block in one pass.
  std::vector<R> read_records(std::size_t b, bool with_embeddings) const {
    const std::size_t first = b * opt_.block_rows;
    return read_range(first, std::min(size(), first + opt_.block_rows), with_embeddings);
  }
  // Records of indices [first, last).
  std::vector<R> read_range(std::size_t first, std::size_t last, bool with_embeddings) const {
    sqlite3_stmt* s = with_embeddings ? read_full_.get() : read_records_.get();
    sqlite3_bind_int64(s, 1, seq_[first]);
    sqlite3_bind_int64(s, 2, seq_[last - 1]);
    std::string text;
    std::vector<std::vector<float>> embs;
    std::size_t k = first;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
      if (k >= last || sqlite3_column_int64(s, 0) != seq_[k]) break;
      const auto* t = sqlite3_column_text(s, 1);
      const std::string_view row(t ? reinterpret_cast<const char*>(t) : "",
                                 static_cast<std::size_t>(sqlite3_column_bytes(s, 1)));
      // one row, one line: a line break (never in canonical JSON, which escapes it) would shift
      // every later row onto the wrong record and its embedding
      if (row.find('\n') != std::string_view::npos ||
          row.find_first_not_of(" \t\r") == std::string_view::npos) {  // a blank line: no record
        const auto seq = seq_[k];
        sqlite3_reset(s);
        throw error(error_code::parse, path_ + ": row seq " + std::to_string(seq) +
                                           ": column 'record' is not one JSON object on one line");
      }
      text.append(row);
      text.push_back('\n');
      if (with_embeddings) embs.push_back(blob_floats(s, 2));
      ++k;
    }
    sqlite3_reset(s);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
      detail::sqlite::fail(db_.get(), rc, path_, "cannot read records");
    if (k != last)
      throw error(error_code::io, path_ +
                                      ": the records table changed under an open store (row seq " +
                                      std::to_string(seq_[k]) + " missing); reopen the store");
    load_options lo;
    lo.threads = 1;
    auto lr = parse_jsonl(text, path_, lo);
    if (lr.records.size() != last - first) {
      std::size_t line = 1;  // one line per row (no line breaks above); blank rows raise no issue
      for (const auto& is : lr.issues)
        if (!is.record_kept) {
          line = std::clamp<std::size_t>(is.line, 1, last - first);
          break;
        }
      throw error(error_code::parse, path_ + ": row seq " + std::to_string(seq_[first + line - 1]) +
                                         ": column 'record' is not a JSON object");
    }
    if (with_embeddings)
      for (std::size_t j = 0; j < embs.size(); ++j) lr.records[j].embedding = std::move(embs[j]);
    else
      for (auto& r : lr.records) r.embedding.clear();
    return std::move(lr.records);
  }

  static std::vector<float> blob_floats(sqlite3_stmt* s, int col) {
    const auto bytes = static_cast<std::size_t>(sqlite3_column_bytes(s, col));
    std::vector<float> v(bytes / 4);
    if (bytes >= 4)
      detail::sqlite::decode_floats(sqlite3_column_blob(s, col), v.size() * 4, v.data());
    return v;
  }

  void load_record_block(std::size_t b) const {
    auto recs = read_records(b, false);
    auto block = std::make_unique<R[]>(opt_.block_rows);  // full capacity: appends fill it in place
    std::move(recs.begin(), recs.end(), block.get());
    record_blocks_[b] = std::move(block);
  }

  emb_block load_embedding_block(std::size_t b) const {
    const std::size_t first = b * opt_.block_rows, last = std::min(size(), first + opt_.block_rows);
    sqlite3_stmt* s = read_embeddings_.get();
    sqlite3_bind_int64(s, 1, seq_[first]);
    sqlite3_bind_int64(s, 2, seq_[last - 1]);
    emb_block e;
    e.block = b;
    e.offset.reserve(last - first + 1);
    e.offset.push_back(0);
    if (dim_) e.data.reserve((last - first) * dim_);
    std::size_t k = first;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
      if (k >= last || sqlite3_column_int64(s, 0) != seq_[k]) break;
      const auto n = static_cast<std::size_t>(sqlite3_column_bytes(s, 1)) / 4;
      const std::size_t at = e.data.size();
      e.data.resize(at + n);
      if (n) detail::sqlite::decode_floats(sqlite3_column_blob(s, 1), n * 4, e.data.data() + at);
      e.offset.push_back(e.data.size());
      ++k;
    }
    sqlite3_reset(s);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
      detail::sqlite::fail(db_.get(), rc, path_, "cannot read embeddings");
    if (k != last)
      throw error(error_code::io, path_ +
                                      ": the records table changed under an open store (row seq " +
                                      std::to_string(seq_[k]) + " missing); reopen the store");
    return e;
  }

  // Compare-and-swap: the row is written only while the database still holds the record this
  // store read (its JSON, embedding version and embedding bytes), checked under the write lock
  // (inside the action's transaction, or a transaction of its own), so a record another process
  // changed since is never overwritten with an image computed from the old one.
  template <class F>
  R mutate(std::size_t i, F&& f) {
    if (i >= size()) throw error(error_code::not_found, "sqlite_store: record index out of range");
    const bool own = !in_action_;
    if (own) begin_action();
    try {
      R before = mutate_locked(i, std::forward<F>(f));
      if (own) commit_action();
      return before;
    } catch (...) {
      if (own) rollback_action();
      throw;
    }
  }

  // Compare: the row of record i as the database holds it now (read under the write lock)
  // against `held`, what this store read. @throws error(busy) when they differ (the action's
  // rollback re-reads the record, so a retry sees the new content).
  void check_unchanged(std::size_t i, const R& held) {
    R current = read_range(i, i + 1, /*with_embeddings=*/true).front();
    if (detail::sqlite::record_json(current) != detail::sqlite::record_json(held) ||
        current.embedding_version != held.embedding_version ||
        detail::sqlite::encode_floats(current.embedding) !=
            detail::sqlite::encode_floats(held.embedding)) {
      touched_.push_back(i);  // the rollback re-reads it: a retry sees the new content
      throw error(error_code::busy,
                  path_ + ": record '" + held.id + "' (row seq " + std::to_string(seq_[i]) +
                      ") was changed by another writer after this store read it; nothing "
                      "written (read it again and retry)");
    }
  }

  template <class F>
  R mutate_locked(std::size_t i, F&& f) {
    R before = extract(i);
    check_unchanged(i, before);
    R after = before;
    f(after);
    bind_row(update_.get(), after, after.embedding);
    sqlite3_bind_int64(update_.get(), 12, seq_[i]);
    step_done(update_.get(), "cannot update a record");
    const std::size_t b = i / opt_.block_rows;
    if (in_action_) touched_.push_back(i);
    // a cached embedding block is patched in place when the length is unchanged, else dropped
    const std::size_t k = i % opt_.block_rows;
    emb_cache_.remove_if([&](emb_block& e) {
      if (e.block != b) return false;
      if (e.offset[k + 1] - e.offset[k] != after.embedding.size()) return true;
      std::copy(after.embedding.begin(), after.embedding.end(),
                e.data.begin() + static_cast<std::ptrdiff_t>(e.offset[k]));
      return false;
    });
    if (after.id != before.id) {
      if (auto it = index_.find(before.id); it != index_.end() && it->second == i) {
        index_.erase(it);
        // another record with the old id (a duplicate) becomes the first one
        for (std::size_t k = 0; k < size(); ++k)
          if (k != i && record(k).id == before.id) {
            index_.emplace(before.id, k);
            break;
          }
      }
      if (auto it = index_.find(after.id); it == index_.end() || it->second > i)
        index_[after.id] = i;
    }
    if (record_blocks_[b]) {
      R& slot = record_blocks_[b][i % opt_.block_rows];
      slot = std::move(after);
      slot.embedding.clear();
      slot.embedding.shrink_to_fit();
    }
    return before;
  }

  std::string path_;
  std::string database_id_;
  sqlite_store_options opt_;
  std::size_t dim_ = 0;
  detail::sqlite::db_ptr db_;
  detail::sqlite::stmt_ptr insert_, update_, read_records_, read_full_, read_embeddings_,
      read_one_embedding_, begin_, commit_;
  std::vector<std::int64_t> seq_;                            // index i -> rowid (seq)
  std::unordered_map<std::string, std::size_t> index_;       // id -> first index
  mutable std::vector<std::unique_ptr<R[]>> record_blocks_;  // decoded records (no embeddings)
  mutable std::list<emb_block> emb_cache_;                   // LRU, most recent first
  bool in_action_ = false;
  std::vector<std::size_t> touched_;  // indices written in the open action
  std::size_t dim_at_begin_ = 0;
};

}  // namespace memhealth
