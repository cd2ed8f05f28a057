#pragma once
/// @file wal_writer.hpp
/// `wal_writer`: appends frames to a repair write-ahead log (format, durability, chain and
/// locking in wal.hpp), through the file-I/O seam of io/file_io.hpp.

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "memhealth/config.hpp"
#include "memhealth/io/file_io.hpp"
#include "memhealth/record/time.hpp"
#include "memhealth/repair/checksum.hpp"
#include "memhealth/repair/store_identity.hpp"
#include "memhealth/repair/wal_read.hpp"

#include <unistd.h>

namespace memhealth {

/// How a `wal_writer` opens its log.
struct wal_writer_options {
  wal_sync policy = wal_sync::per_batch;  ///< when to fdatasync
  std::string run_id;                     ///< id of this run; empty = "run-<epoch ms>-<pid>"
  /// The store this log is for (store_identity.hpp). A new log records it in its header; an
  /// existing log whose header names a store with another fingerprint is refused (error
  /// precondition). Empty: nothing recorded or checked (library use without a store check).
  std::optional<store_identity> store;
  /// How long to wait for another writer's lock on the file before failing with error(busy).
  std::chrono::milliseconds lock_timeout{0};
  /// The file system (io/file_io.hpp); null = `posix_file_io::instance()`. Tests pass a
  /// simulated one to cut power or fail a write or sync at a chosen point. Must outlive the writer.
  file_io* io = nullptr;
  /// Grow the file ahead of the frames by writing zeros (64 KiB, then a quarter of the log up to
  /// 4 MiB at a time) when a write of at most 32 KiB needs room, so that most `fdatasync`s of
  /// small commits overwrite allocated blocks and need not make a new file size durable (on
  /// ext4 about 1.3x as many one-action commits per second); larger group commits just extend.
  /// Readers take an all-zero tail as preallocated space (wal.hpp); a clean close cuts it off.
  bool preallocate = true;
};

/// Appends frames to a WAL file (see the file comment for format, durability and locking).
///
/// Opening a new or empty file writes the header frame (and syncs the file and its directory).
/// Opening an existing WAL continues it: sequence numbers and the hash chain go on from the last
/// good frame. A torn tail (a problem with no valid frame after it: an append that was never
/// acknowledged) is cut off with `ftruncate`; corruption followed by valid frames throws, since
/// appending after it would hide the later frames from every reader.
/// Holds an exclusive `flock` on the file until closed. After a failed write or fdatasync the
/// writer refuses every further append (error io): what reached the disk is unknown, so the run
/// must stop and `recover` decide from what the log holds.
/// Move-only; the destructor syncs (unless `wal_sync::none`) and closes. Not thread-safe.
class wal_writer {
 public:
  /// Opens (creating if needed) the WAL at `path` with the default options and `policy`/`run_id`.
  /// @throws as the options constructor.
  explicit wal_writer(const std::filesystem::path& path, wal_sync policy = wal_sync::per_batch,
                      std::string run_id = {})
      : wal_writer(path, wal_writer_options{policy, std::move(run_id), std::nullopt,
                                            std::chrono::milliseconds{0}, nullptr, true}) {}

  /// Opens (creating if needed) the WAL at `path`.
  /// @throws memhealth::error(io) when the file cannot be opened, read, truncated or written;
  ///         error(busy) when another process holds its lock past `opt.lock_timeout`;
  ///         error(schema) when the existing file is not a WAL or is corrupt before its last valid
  ///         frame; error(precondition) when it was made for another store (`opt.store`).
  wal_writer(const std::filesystem::path& path, wal_writer_options opt)
      : path_(path),
        policy_(opt.policy),
        run_(std::move(opt.run_id)),
        store_(std::move(opt.store)),
        io_(opt.io ? opt.io : &posix_file_io::instance()),
        preallocate_(opt.preallocate) {
    if (run_.empty())
      run_ = "run-" + std::to_string(epoch_ms(make_timestamp(std::chrono::system_clock::now()))) +
             "-" + std::to_string(::getpid());
    fd_ = io_->open_write(path);
    if (fd_ < 0)
      throw error(error_code::io,
                  "wal_writer: cannot open '" + path.string() + "': " + std::strerror(errno));
    try {
      lock(opt.lock_timeout);
      const std::optional<std::string> bytes = io_->read_file(path);
      if (!bytes && errno != ENOENT)
        throw error(error_code::io,
                    "wal_writer: cannot read '" + path.string() + "': " + std::strerror(errno));
      // A file of zeros only is a log whose header never reached the disk: started afresh.
      const bool existed = bytes && bytes->find_first_not_of('\0') != std::string::npos;
      if (existed) {
        const wal_contents c = read_wal(*bytes);
        if (c.problem && (c.problem->valid_frames_follow || c.valid_bytes == 0))
          throw error(error_code::schema,
                      "wal_writer: '" + path.string() + "' is not a clean WAL (" +
                          std::string(to_string(c.problem->kind)) + " at offset " +
                          std::to_string(c.problem->offset) + ": " + c.problem->reason +
                          "); recover and move it aside before appending");
        const bool by_database_id =
            store_ && c.store && !store_->database_id.empty() && !c.store->database_id.empty();
        if (by_database_id && c.store->database_id != store_->database_id)
          throw error(error_code::precondition,
                      "wal_writer: '" + path.string() + "' was made for another database (" +
                          (c.store->path.empty() ? std::string() : c.store->path + ", ") +
                          "database id " + c.store->database_id + "); this run's store " +
                          (store_->path.empty() ? std::string() : store_->path + " ") +
                          "has database id " + store_->database_id +
                          ": use a new log for each store");
        if (!by_database_id && store_ && c.store && c.store->fingerprint != store_->fingerprint)
          throw error(error_code::precondition,
                      "wal_writer: '" + path.string() + "' was made for another store (" +
                          (c.store->path.empty() ? std::string("fingerprint ")
                                                 : c.store->path + ", fingerprint ") +
                          c.store->fingerprint + ", " + std::to_string(c.store->records) +
                          " records); this run's store " +
                          (store_->path.empty() ? std::string() : store_->path + " ") +
                          "has fingerprint " + store_->fingerprint + " (" +
                          std::to_string(store_->records) +
                          " records): use a new log for each store");
        if (!c.entries.empty()) next_seq_ = c.entries.back().seq + 1;
        chained_ = c.chained;
        chain_ = c.chain;
        edits_ = c.version >= 2;
        prev_ = c.chain_tail;
        end_ = c.valid_bytes;
        allocated_ = c.valid_bytes + c.preallocated_bytes;
        if (c.problem) {
          if (io_->truncate(fd_, c.valid_bytes) != 0)
            throw error(error_code::io,
                        "wal_writer: cannot cut the torn tail of '" + path.string() + "'");
          allocated_ = c.valid_bytes;
        }
      } else {
        chained_ = true;
        chain_ = "crc32c";
        edits_ = true;
        allocated_ = bytes ? bytes->size() : 0;
        std::string p = "{";
        detail::wal::kv(p, "type", "header");
        detail::wal::kv(p, "magic", wal_magic);
        detail::wal::kv(p, "version", wal_format_version);
        detail::wal::kv(p, "seq", 0);
        detail::wal::kv(p, "run", run_);
        detail::wal::kv(p, "created_at", detail::wal::now_text());
        detail::wal::kv(p, "chain", chain_);
        put_store(p);
        p.push_back('}');
        header_ = true;
        append(p, true);
        if (policy_ != wal_sync::none) sync_directory();
      }
    } catch (...) {
      io_->close(fd_);
      fd_ = -1;
      throw;
    }
  }
  wal_writer(const wal_writer&) = delete;
  wal_writer& operator=(const wal_writer&) = delete;
  /// Move: the moved-from writer is closed.
  wal_writer(wal_writer&& o) noexcept
      : path_(std::move(o.path_)),
        policy_(o.policy_),
        run_(std::move(o.run_)),
        store_(std::move(o.store_)),
        io_(o.io_),
        preallocate_(o.preallocate_),
        fd_(std::exchange(o.fd_, -1)),
        next_seq_(o.next_seq_),
        end_(o.end_),
        allocated_(o.allocated_),
        in_batch_(o.in_batch_),
        batch_(std::move(o.batch_)),
        lazy_(std::move(o.lazy_)),
        dirty_(o.dirty_),
        bytes_(o.bytes_),
        syncs_(o.syncs_),
        chained_(o.chained_),
        chain_(std::move(o.chain_)),
        prev_(o.prev_),
        failed_(o.failed_),
        linked_(o.linked_),
        edits_(o.edits_) {}
  wal_writer& operator=(wal_writer&&) = delete;
  /// Syncs pending frames (unless `wal_sync::none`; errors are swallowed here: call `sync()`
  /// first to see them), cuts off the preallocated zeros (not synced: zeros found after a crash
  /// are read as preallocated space) and closes the file.
  ~wal_writer() {
    if (fd_ < 0) return;
    try {
      if (!failed_) {
        if (in_batch_) commit_batch();
        flush();
        if (dirty_ && policy_ != wal_sync::none) sync();
        if (allocated_ > end_) (void)io_->truncate(fd_, end_);
      }
    } catch (...) {
    }
    io_->close(fd_);  // releases the flock
  }

  /// The run id written in this writer's run frames.
  [[nodiscard]] const std::string& run_id() const noexcept { return run_; }
  /// The file path.
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
  /// The durability policy.
  [[nodiscard]] wal_sync policy() const noexcept { return policy_; }
  /// Bytes written to the file by this writer so far (frames, header included; lazy frames
  /// still buffered are not counted).
  [[nodiscard]] std::uint64_t bytes_written() const noexcept { return bytes_; }
  /// Number of fdatasync calls made so far.
  [[nodiscard]] std::uint64_t syncs() const noexcept { return syncs_; }
  /// True between `begin_batch()` and `commit_batch()`.
  [[nodiscard]] bool in_batch() const noexcept { return in_batch_; }
  /// True once a write or fdatasync failed: every later append throws error(io).
  [[nodiscard]] bool failed() const noexcept { return failed_; }
  /// The store identity given when opening (written in run_begin frames), if any.
  [[nodiscard]] const std::optional<store_identity>& store() const noexcept { return store_; }

  /// Starts a group commit: frames are buffered until `commit_batch()`.
  /// @throws memhealth::error(precondition) when a batch is already open.
  void begin_batch() {
    MEMHEALTH_ASSERT(!in_batch_, "wal_writer::begin_batch: a batch is already open");
    in_batch_ = true;
  }
  /// Writes the buffered frames with one `write` and makes them (and every earlier lazy frame)
  /// durable with one `fdatasync` (unless `wal_sync::none`).
  /// @throws memhealth::error(io) on a write or sync failure (the batch is then not durable);
  ///         memhealth::error(precondition) without an open batch.
  void commit_batch() {
    MEMHEALTH_ASSERT(in_batch_, "wal_writer::commit_batch: no open batch");
    in_batch_ = false;
    std::string buf = std::move(lazy_);  // earlier lazy frames first: file order = append order
    lazy_.clear();
    buf += batch_;
    batch_.clear();
    write_all(buf);
    if (policy_ != wal_sync::none) sync();
  }
  /// Writes buffered lazy frames and makes every written frame durable (`fdatasync`).
  /// @throws memhealth::error(io).
  void sync() {
    flush();
    check_usable();
    if (io_->sync(fd_) != 0) {
      // After a failed fsync the kernel may have dropped the dirty pages and cleared the error
      // (the "fsyncgate" behaviour of Linux, PostgreSQL 2018): nothing written since the last
      // good sync can be trusted, so this writer stops here.
      failed_ = true;
      throw error(error_code::io,
                  "wal_writer: fdatasync failed on '" + path_.string() +
                      "': " + std::strerror(errno) +
                      "; the log is not trusted after this point: stop and run recover");
    }
    dirty_ = false;
    ++syncs_;
  }

  /// Appends a frame with this JSON payload (one object). Inside a batch the frame is buffered
  /// until `commit_batch()`. Outside: `durable` frames are written (after any buffered lazy
  /// frames) and synced before returning (unless `wal_sync::none`); lazy frames (`durable ==
  /// false`) are buffered and written ahead of the next write (under `each_frame`: written and
  /// synced at once). @throws memhealth::error(io) on write/sync failure.
  void append(std::string_view payload, bool durable) {
    check_usable();
    if (in_batch_) {
      encode(batch_, payload);
      return;
    }
    if (!durable && policy_ != wal_sync::each_frame) {
      encode(lazy_, payload);  // written with the next write, flush() or sync()
      if (lazy_.size() >= lazy_limit) flush();
      return;
    }
    std::string frame = std::move(lazy_);
    lazy_.clear();
    encode(frame, payload);
    write_all(frame);
    if (policy_ != wal_sync::none) sync();
  }

  /// Writes buffered lazy frames (commit/abort) to the file without syncing.
  /// @throws memhealth::error(io).
  void flush() {
    if (lazy_.empty()) return;
    std::string buf = std::move(lazy_);
    lazy_.clear();
    write_all(buf);
  }

  /// Takes the next frame sequence number.
  std::uint64_t next_seq() noexcept { return next_seq_++; }

  /// Appends a `run_begin` frame (durable). @return its seq.
  std::uint64_t append_run_begin(std::size_t actions) {
    std::string p = start("run_begin");
    detail::wal::kv(p, "started_at", detail::wal::now_text());
    detail::wal::kv(p, "actions", static_cast<std::int64_t>(actions));
    put_store(p);
    return finish(p, true);
  }
  /// Appends an intent for action `action` (plan index) with its images: each element of
  /// `records` gives index, id, and the canonical JSON of the before- and after-image. Durable
  /// (outside a batch). In a format-2 log the after-image is written as an edit of the
  /// before-image (`"after_edit"`, wal.hpp) when that is shorter, which it is for every action
  /// but a rewrite of most of the record (a status or link change costs tens of bytes instead
  /// of a second image). @return the intent's seq (commit/abort refer to it).
  template <class Images>
  std::uint64_t append_intent(std::int64_t action, std::string_view key, int attempt,
                              const Images& records) {
    std::string p;
    std::size_t want = 256;
    for (const auto& r : records) want += r.id.size() + r.before_json.size() + 160;
    p.reserve(want);
    start(p, "intent");
    detail::wal::kv(p, "action", action);
    detail::wal::kv(p, "idempotency_key", key);
    detail::wal::kv(p, "attempt", attempt);
    detail::wal::key(p, "records");
    p.push_back('[');
    bool first = true;
    for (const auto& r : records) {
      if (!first) p.push_back(',');
      first = false;
      p.push_back('{');
      detail::wal::kv(p, "index", static_cast<std::int64_t>(r.index));
      detail::wal::kv(p, "id", r.id);
      if constexpr (requires { r.key; })
        if (!r.key.empty()) detail::wal::kv(p, "key", r.key);
      const std::string_view before = detail::json_text::trim(r.before_json);
      const std::string_view after = detail::json_text::trim(r.after_json);
      detail::wal::key(p, "before");
      p += before;
      const detail::wal::image_edit ed =
          edits_ ? detail::wal::diff_image(before, after) : detail::wal::image_edit{};
      if (edits_ && ed.put.size() + 48 < after.size()) {
        detail::wal::key(p, "after_edit");
        p.push_back('{');
        detail::wal::kv(p, "at", static_cast<std::int64_t>(ed.at));
        detail::wal::kv(p, "cut", static_cast<std::int64_t>(ed.cut));
        detail::wal::kv(p, "put", ed.put);
        p.push_back('}');
      } else {
        detail::wal::key(p, "after");
        p += after;
      }
      p.push_back('}');
    }
    p.push_back(']');
    return finish(p, true);
  }
  /// Appends a lazy commit frame closing intent `intent_seq` (see `append`). @return its seq.
  std::uint64_t append_commit(std::uint64_t intent_seq, std::int64_t action, std::string_view key) {
    std::string p = start("commit");
    detail::wal::kv(p, "intent", static_cast<std::int64_t>(intent_seq));
    detail::wal::kv(p, "action", action);
    detail::wal::kv(p, "idempotency_key", key);
    return finish(p, false);
  }
  /// Appends a lazy abort frame closing intent `intent_seq` (see `append`). @return its seq.
  std::uint64_t append_abort(std::uint64_t intent_seq, std::int64_t action, std::string_view key,
                             std::string_view reason) {
    std::string p = start("abort");
    detail::wal::kv(p, "intent", static_cast<std::int64_t>(intent_seq));
    detail::wal::kv(p, "action", action);
    detail::wal::kv(p, "idempotency_key", key);
    detail::wal::kv(p, "reason", reason);
    return finish(p, false);
  }
  /// Appends a `run_end` frame with the run's counts (durable: it syncs everything before it).
  std::uint64_t append_run_end(std::size_t applied, std::size_t failed, std::size_t deferred,
                               std::size_t skipped) {
    std::string p = start("run_end");
    detail::wal::kv(p, "applied", static_cast<std::int64_t>(applied));
    detail::wal::kv(p, "failed", static_cast<std::int64_t>(failed));
    detail::wal::kv(p, "deferred", static_cast<std::int64_t>(deferred));
    detail::wal::kv(p, "skipped", static_cast<std::int64_t>(skipped));
    return finish(p, true);
  }

 private:
  std::string start(std::string_view type) {
    std::string p;
    start(p, type);
    return p;
  }
  void start(std::string& p, std::string_view type) {
    p.push_back('{');
    detail::wal::kv(p, "type", type);
    seq_of_pending_ = next_seq();
    detail::wal::kv(p, "seq", static_cast<std::int64_t>(seq_of_pending_));
    detail::wal::kv(p, "run", run_);
  }
  void put_store(std::string& p) const {
    if (!store_) return;
    detail::wal::key(p, "store");
    p.push_back('{');
    detail::wal::kv(p, "path", store_->path);
    detail::wal::kv(p, "fingerprint", store_->fingerprint);
    detail::wal::kv(p, "records", static_cast<std::int64_t>(store_->records));
    if (!store_->database_id.empty()) detail::wal::kv(p, "database_id", store_->database_id);
    p.push_back('}');
  }
  // Encodes a frame into `out`, linking it into the hash chain (frames are encoded in append
  // order, which is file order: lazy and batched frames keep their order).
  void encode(std::string& out, std::string_view payload) {
    if (linked_) {  // built by finish(): "prev" is in place already
      linked_ = false;
      prev_ = detail::wal::link_value(chain_, payload, append_wal_frame(out, payload));
    } else if (chained_ && !header_) {
      const std::string linked =
          detail::wal::relink(payload, detail::wal::link_text(chain_, prev_));
      prev_ = detail::wal::link_value(chain_, linked, append_wal_frame(out, linked));
    } else {
      prev_ = detail::wal::link_value(chain_, payload, append_wal_frame(out, payload));
      header_ = false;
    }
  }
  void check_usable() const {
    if (failed_)
      throw error(error_code::io,
                  "wal_writer: an earlier write or fdatasync on '" + path_.string() +
                      "' failed; the log is not trusted after it: stop and run recover");
  }
  void lock(std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (io_->try_lock(fd_) == 0) return;
      if (errno == EINTR) continue;
      if (errno != EWOULDBLOCK)
        throw error(error_code::io,
                    "wal_writer: cannot lock '" + path_.string() + "': " + std::strerror(errno));
      if (std::chrono::steady_clock::now() >= until)
        throw error(error_code::busy,
                    "wal_writer: '" + path_.string() +
                        "' is locked by another process (another apply, rollback or recover is "
                        "writing this log); wait for it to finish, or use another log");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  // Closes a payload built by `start`, linking it into the chain in place (no copy: frames are
  // encoded in append order, so `prev_` is the frame before this one), and appends it.
  std::uint64_t finish(std::string& p, bool durable) {
    if (chained_) {
      detail::wal::kv(p, "prev", detail::wal::link_text(chain_, prev_));
      linked_ = true;
    }
    p.push_back('}');
    append(p, durable);
    return seq_of_pending_;
  }
  // Writes `frames` at the end of the log (offset end_), with zeros after them when the file
  // must grow (preallocation, see wal_writer_options::preallocate).
  void write_all(std::string_view frames) {
    std::string grown;
    std::string_view buf = frames;
    const std::uint64_t need = end_ + frames.size();
    // Small writes (a few actions per commit) gain most: their fdatasync would otherwise make a
    // new file size durable every time. A large group commit pays that once for many frames, and
    // zeros there would double the bytes the disk writes, so it just extends the file.
    if (preallocate_ && need > allocated_ && frames.size() <= prealloc_max_write) {
      const std::uint64_t extra = std::clamp<std::uint64_t>(need / 4, 64u << 10, 4u << 20);
      const std::uint64_t target = (need + extra + 4095) / 4096 * 4096;
      grown.reserve(static_cast<std::size_t>(target - end_));
      grown.append(frames);
      grown.append(static_cast<std::size_t>(target - need), '\0');
      buf = grown;
    }
    std::uint64_t at = end_;
    while (!buf.empty()) {
      const ssize_t n = io_->pwrite(fd_, buf.data(), buf.size(), at);
      if (n < 0) {
        if (errno == EINTR) continue;
        failed_ = true;
        throw error(error_code::io,
                    "wal_writer: write failed on '" + path_.string() +
                        "': " + std::strerror(errno) +
                        "; the log is not trusted after this point: stop and run recover");
      }
      buf.remove_prefix(static_cast<std::size_t>(n));
      at += static_cast<std::uint64_t>(n);
    }
    end_ = need;
    allocated_ = std::max(allocated_, at);
    bytes_ += frames.size();
    dirty_ = true;
  }
  void sync_directory() {
    io_->sync_directory(path_.has_parent_path() ? path_.parent_path() : std::filesystem::path("."));
  }

  std::filesystem::path path_;
  wal_sync policy_;
  std::string run_;
  std::optional<store_identity> store_;
  file_io* io_ = nullptr;
  bool preallocate_ = true;
  int fd_ = -1;
  std::uint64_t next_seq_ = 1;
  std::uint64_t end_ = 0;        // byte offset of the end of the last frame written
  std::uint64_t allocated_ = 0;  // file size: end_ plus preallocated zeros
  bool in_batch_ = false;
  static constexpr std::size_t lazy_limit = 1 << 20;
  static constexpr std::size_t prealloc_max_write = 32u << 10;  // larger writes just extend
  std::string batch_;
  std::string lazy_;
  bool dirty_ = false;
  std::uint64_t bytes_ = 0;
  std::uint64_t syncs_ = 0;
  std::uint64_t seq_of_pending_ = 0;
  bool chained_ =
      false;  // frames carry "prev" (every log this writer creates; older logs stay unchained)
  std::string chain_;    // the chain's kind: "crc32c" (new logs) or "crc64" (older logs continued)
  bool header_ = false;  // the next frame encoded is the header (it has no "prev")
  std::uint64_t prev_ = 0;  // link value of the last frame encoded
  bool failed_ = false;     // a write or fdatasync failed: no further appends
  bool linked_ = false;     // the next frame encoded already carries its "prev" (set by finish)
  bool edits_ = false;      // a format-2 log: after-images may be written as "after_edit"
};

}  // namespace memhealth
