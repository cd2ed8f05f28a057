#pragma once
/// @file wal.hpp
/// The repair write-ahead log (WAL): a checksummed, append-only file of before/after images that
/// makes every repair undoable record by record and lets a crashed run be recovered.
///
/// ## File format (version 2; version 1 is read too)
///
/// A WAL file is a sequence of **frames**, nothing else:
///
/// | bytes | content |
/// |---|---|
/// | 4 | payload length L, unsigned 32-bit little-endian, 1 <= L <= 2^30 |
/// | 4 | CRC-32C (Castagnoli, RFC 3720) of the L payload bytes, unsigned 32-bit little-endian |
/// | L | payload: one JSON object (UTF-8, RFC 8259), no trailing newline |
///
/// Every payload has `"type"` and `"seq"` (a number unique and increasing within the file). Types:
/// - `"header"` — always the first frame: `{"type":"header","magic":"MHWAL1","version":2,`
///   `"seq":0,"run":<run id of the creator>,"created_at":<ISO-8601 UTC>,"chain":"crc32c",`
///   `"store":{"path","fingerprint","records"}}`. `"store"` (store_identity.hpp) names the store
///   the log was made for; `"chain"` says every later frame carries `"prev"` (below). Logs written
///   before either existed lack them and are read as before (no store check, no chain check).
/// - `"run_begin"` — `{"type","seq","run","started_at","actions":<actions in the plan>,"store"}`,
///   one per executor run appended to the file.
/// - `"intent"` — written and made durable **before** the store is touched:
///   `{"type","seq","run","action":<index in plan>,"idempotency_key","attempt":<1-based>,`
///   `"records":[{"index":<store index>,"id","key"?,"before":<record>,"after":<record>}, ...]}`:
///   `"id"` is the record's identity (rollback and recovery find records by it), `"index"` only a
///   hint, `"key"` the store's own key where it has one (`keyed_record_store`); where
///   each record is its image (record_image.hpp: for `memory_record` the canonical JSON object
///   of `append_json`, io/jsonl.hpp; a user's record type provides its own), so images are
///   byte-exact. Only records whose image changes are listed; they are applied in list order.
///   In a version-2 log an after-image may be given as `"after_edit":{"at","cut","put"}`: the
///   before-image's bytes [0, at), then `put`, then its bytes from at + cut on (the common prefix
///   and suffix of the two images, on UTF-8 boundaries; used when shorter than the image). A
///   version-1 log holds whole `"after"` images only; a writer continuing one keeps to that.
/// - `"commit"` — `{"type","seq","run","intent":<seq of the intent>,"action","idempotency_key"}`:
///   every record of that intent holds its after-image.
/// - `"abort"` — same fields plus `"reason"`: the intent's records were put back to their
///   before-images (a failed attempt; a later attempt has its own intent).
/// - `"run_end"` — `{"type","seq","run","applied","failed","deferred","skipped"}` (counts).
///
/// Unknown extra keys are ignored by readers (forward compatible); unknown `type` values stop
/// the reader like corruption does.
///
/// **Hash chain.** In a chained log every frame after the header carries `"prev"`: the CRC-32C
/// of the previous frame's payload (the checksum in that frame's header, so the chain costs no
/// hashing), 8 hex digits. Since that payload holds its own `"prev"`, each frame vouches for every
/// frame before it (a random edit escapes with probability 2^-32). Logs written with
/// `"chain":"crc64"` (16 hex digits, CRC-64/XZ of the payload) are read too: a frame removed,
/// reordered, inserted or edited in the middle (even with its CRC-32C recomputed) breaks the
/// chain at the next frame, which `read_wal` reports as `bad_chain` (`memhealth wal verify`).
/// Threat model: the chain and the CRCs detect accidents and careless edits; they are not
/// authentication. Whoever can write the file can rewrite the whole chain, and an edit of the
/// last frame, or a cut of whole frames at the end, leaves no broken link (the run frames
/// bracket each run, so a cut shows as a run without `run_end`). Keep logs where only the
/// repair tool can write them, and copy them elsewhere when they must be trusted later.
///
/// **Locking.** A `wal_writer` holds an exclusive `flock` on the file while it is open: a second
/// writer on the same log (another `apply`) waits up to `wal_writer_options::lock_timeout`, then
/// fails with error(busy). Readers do not lock.
///
/// **Torn or corrupt tail.** `read_wal` decodes frames from the start and stops at the first
/// frame whose length field or payload runs past the end of the file, whose CRC does not match,
/// or whose payload is not a valid frame object. It reports the byte offset and the reason and
/// never uses anything after that point; if a frame that checks out is found further on (a
/// corrupt frame in the middle, not a torn append) that is reported too (`valid_frames_follow`).
/// **Preallocated space**: zero bytes after the last frame, up to the end of the file, are space
/// the writer allocated ahead (below), not a problem (`wal_contents::preallocated_bytes`); a frame
/// that does not check out and runs into those final zeros (or ends where they begin) is an append
/// cut short, reported as `truncated` like one that runs past the end of the file.
///
/// **Durability.** `wal_writer` opens the file with `O_CREAT` (not `O_APPEND`) and writes whole
/// frames with one `pwrite` per frame or batch at the end of the last frame. When a write of at
/// most 32 KiB needs the file to grow, it writes zeros after the frames in the same call (64 KiB,
/// then a quarter of the log, up to 4 MiB at a time; `wal_writer_options::preallocate`), so most
/// `fdatasync`s overwrite blocks the file already has and need not make a new size durable (as
/// PostgreSQL's zero-filled WAL segments and SQLite's reused WAL file do); a clean close cuts the
/// zeros off. It `fdatasync`s according to `wal_sync` (default: nothing the writer reports as
/// appended-durable is acknowledged before `fdatasync` returns). Group commit: frames appended
/// between `begin_batch()` and `commit_batch()` are written with one `write` and synced with one
/// `fdatasync`. Commit/abort frames are "lazy": buffered in the writer and written ahead of the
/// next frame written (or by `flush`/`sync`/the destructor), so file order is always append order;
/// a commit lost in a crash makes recovery undo its action, which is consistent (only a suffix of
/// commits can be lost).
///
/// **Retention.** Logs are the only record of what a repair changed (re-embedded records' old
/// vectors included): keep them at least 30 days. `compact_wal` (wal_compact.hpp) rewrites an
/// older log without what no rollback or recovery uses (aborted intents, stray frames, a torn
/// tail).

///
/// This header is the umbrella of the two halves: wal_read.hpp (the format's types, frame
/// encoding and `read_wal`) and wal_writer.hpp (`wal_writer`, its options and locking).

#include "memhealth/repair/wal_read.hpp"
#include "memhealth/repair/wal_writer.hpp"
