#pragma once
/// @file wal.hpp
/// The repair write-ahead log (WAL): a checksummed, append-only file of before/after images that
/// makes every repair undoable record by record and lets a crashed run be recovered.
///
/// ## File format (version 1)
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
/// - `"header"` — always the first frame: `{"type":"header","magic":"MHWAL1","version":1,`
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
///
/// **Durability.** `wal_writer` opens the file with `O_APPEND|O_CREAT`, writes whole frames with
/// one `write` per frame or batch, and `fdatasync`s according to `wal_sync` (default: nothing
/// the writer reports as appended-durable is acknowledged before `fdatasync` returns). Group
/// commit: frames appended between `begin_batch()` and `commit_batch()` are written with one
/// `write` and synced with one `fdatasync`. Commit/abort frames are "lazy": buffered in the
/// writer and written ahead of the next frame written (or by `flush`/`sync`/the destructor), so
/// file order is always append order; a commit lost in a crash makes recovery undo its action,
/// which is consistent (only a suffix of commits can be lost).
///
/// **Retention.** Logs are the only record of what a repair changed (re-embedded records' old
/// vectors included): keep them at least 30 days. `compact_wal` (wal_compact.hpp) rewrites an
/// older log without what no rollback or recovery uses (aborted intents, stray frames, a torn tail).

#include <simdjson.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <thread>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memhealth/config.hpp"
#include "memhealth/io/detail_json_text.hpp"
#include "memhealth/io/file_io.hpp"
#include "memhealth/io/jsonl.hpp"
#include "memhealth/record/memory_record.hpp"
#include "memhealth/record/time.hpp"
#include "memhealth/repair/checksum.hpp"
#include "memhealth/repair/store_identity.hpp"

namespace memhealth {

/// Magic string of the header frame.
inline constexpr std::string_view wal_magic = "MHWAL1";
/// Format version written in the header frame.
inline constexpr int wal_format_version = 1;
/// Largest payload a frame may carry (1 GiB); a larger length field is corruption.
inline constexpr std::uint32_t wal_max_payload = 1u << 30;
/// Bytes of a frame before its payload (length + CRC).
inline constexpr std::size_t wal_frame_overhead = 8;

/// Frame types (the `"type"` of a payload).
enum class wal_frame_type : std::uint8_t { header, run_begin, intent, commit, abort, run_end };

/// Text of a frame type as written: "header", "run_begin", "intent", "commit", "abort", "run_end".
constexpr std::string_view to_string(wal_frame_type t) noexcept {
  constexpr std::string_view names[] = {"header", "run_begin", "intent", "commit", "abort", "run_end"};
  return names[static_cast<int>(t)];
}

/// One record of an intent: where it is, and its images before and after the action.
/// The images are the JSON texts of record_image.hpp (`encode_image` of the store's record type),
/// exact bytes from the log; rollback and recovery decode them with `decode_image<R>`.
/// `before`/`after` are those images decoded as `memory_record` for logs of `memory_record`
/// stores; for another record type they stay default-constructed (use the JSON texts).
struct wal_record_image {
  std::size_t index = 0;    ///< store index when the action ran (a hint: records are found by `id`)
  std::string id;           ///< record id: the record's identity for rollback and recovery
  std::string key;          ///< the store's own key for the record (`keyed_record_store`), empty if none
  memory_record before;     ///< complete image before the action (embedding included), memory_record logs
  memory_record after;      ///< complete image after the action, memory_record logs
  std::string before_json;  ///< the before-image (exact bytes from the log)
  std::string after_json;   ///< the after-image (exact bytes from the log)
};

/// One decoded frame.
struct wal_entry {
  wal_frame_type type = wal_frame_type::header;  ///< frame type
  std::uint64_t seq = 0;                         ///< frame sequence number
  std::uint64_t offset = 0;                      ///< byte offset of the frame in the file
  std::string run;                               ///< run id
  std::int64_t action = -1;                      ///< plan index (intent/commit/abort), else -1
  std::string idempotency_key;                   ///< the action's key (intent/commit/abort)
  std::uint64_t intent = 0;                      ///< commit/abort: seq of the intent they close
  int attempt = 0;                               ///< intent: 1-based attempt number
  std::string reason;                            ///< abort: why
  std::vector<wal_record_image> records;         ///< intent: the records it changes, in order
  std::optional<store_identity> store;           ///< run_begin: the store of the run (chained logs)
  std::string prev;                              ///< chained logs: the previous frame's link (CRC-32C, 8 hex; "crc64" logs: 16 hex)
  std::string payload;                           ///< the frame's JSON payload, verbatim
};

/// Why reading stopped early.
enum class wal_problem_kind : std::uint8_t {
  truncated,     ///< a length field or payload runs past the end of the file (torn append)
  bad_checksum,  ///< the CRC-32C does not match the payload
  bad_length,    ///< length 0 or above `wal_max_payload`
  bad_payload,   ///< the CRC matches but the payload is not a frame object memhealth understands
  bad_header,    ///< the first frame is not a version-1 header with magic "MHWAL1"
  bad_chain,     ///< a chained log's frame does not carry the hash of the frame before it (a frame removed, reordered or edited)
};

/// Text of a problem kind ("truncated", "bad_checksum", ...).
constexpr std::string_view to_string(wal_problem_kind k) noexcept {
  constexpr std::string_view names[] = {"truncated", "bad_checksum", "bad_length", "bad_payload", "bad_header", "bad_chain"};
  return names[static_cast<int>(k)];
}

/// Where and why `read_wal` stopped before the end of the file.
struct wal_problem {
  std::uint64_t offset = 0;          ///< byte offset of the first frame not used
  wal_problem_kind kind = wal_problem_kind::truncated;  ///< why
  std::string reason;                ///< human-readable detail
  bool valid_frames_follow = false;  ///< a frame with a matching CRC exists after `offset` (corruption in the middle, not a torn tail)
  std::uint64_t next_valid_offset = 0;  ///< offset of the first such frame, when `valid_frames_follow`
};

/// The decoded contents of a WAL: every frame wholly before the first problem, in file order.
struct wal_contents {
  std::string run;                     ///< run id from the header (empty if no valid header)
  std::string created_at;              ///< creation time from the header
  std::optional<store_identity> store; ///< the store the log was made for (header `"store"`), if recorded
  bool chained = false;                ///< the header declares the hash chain (every later frame was checked)
  std::string chain;                   ///< the header's `"chain"`: "crc32c", "crc64" (older logs), or empty
  std::uint64_t chain_tail = 0;        ///< link value of the last good frame (what the next frame's `prev` must name)
  std::vector<wal_entry> entries;      ///< frames after the header, in file order
  std::uint64_t valid_bytes = 0;       ///< bytes covered by good frames (header included)
  std::uint64_t file_bytes = 0;        ///< total bytes read
  std::optional<wal_problem> problem;  ///< set when reading stopped before `file_bytes`
  /// True when every byte decoded into good frames.
  [[nodiscard]] bool clean() const noexcept { return !problem.has_value(); }
  /// True when the bytes begin with a valid header frame (a header-only log is a valid log with
  /// zero runs; false for an empty file or one that is not a memhealth log).
  [[nodiscard]] bool has_header() const noexcept { return valid_bytes > 0; }
  /// Number of `run_begin` frames.
  [[nodiscard]] std::size_t runs() const noexcept {
    std::size_t n = 0;
    for (const auto& e : entries) n += e.type == wal_frame_type::run_begin;
    return n;
  }
};

/// When the writer calls `fdatasync`.
enum class wal_sync : std::uint8_t {
  each_frame,  ///< every frame, lazy commit/abort frames and frames inside a batch included
  per_batch,   ///< (default) once per `commit_batch()`; outside a batch, each intent/header/run frame; lazy frames ride on the next sync
  none,        ///< never (tests and CPU benchmarks only: a power loss may lose acknowledged frames)
};

namespace detail::wal {

inline void put_u32(std::string& out, std::uint32_t v) {
  const char b[4] = {static_cast<char>(v & 0xFF), static_cast<char>((v >> 8) & 0xFF),
                     static_cast<char>((v >> 16) & 0xFF), static_cast<char>((v >> 24) & 0xFF)};
  out.append(b, 4);
}

inline std::uint32_t get_u32(const char* p) noexcept {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return std::uint32_t(u[0]) | std::uint32_t(u[1]) << 8 | std::uint32_t(u[2]) << 16 | std::uint32_t(u[3]) << 24;
}

inline void key(std::string& out, std::string_view k) {
  if (out.back() != '{') out.push_back(',');
  json_text::append_escaped(out, k);
  out.push_back(':');
}
inline void kv(std::string& out, std::string_view k, std::string_view v) {
  key(out, k);
  json_text::append_escaped(out, v);
}
inline void kv(std::string& out, std::string_view k, std::int64_t v) {
  key(out, k);
  json_text::append_int(out, v);
}

inline std::string now_text() {
  return format_timestamp(make_timestamp(std::chrono::system_clock::now()));
}

namespace od = simdjson::ondemand;

struct bad_frame {
  std::string reason;
};

// Fills `out` when `json` is a memory_record image; otherwise (the image of a user's record
// type, record_image.hpp) leaves it default-constructed: the executor decodes the JSON text.
inline void decode_default_image(std::string_view json, memory_record& out) {
  auto res = parse_jsonl(json, "<wal>");
  if (res.records.size() == 1 && res.lines_read == 1) out = std::move(res.records.front());
}

inline std::int64_t as_int(od::value v) {
  std::int64_t x = 0;
  if (v.get_int64().get(x)) throw bad_frame{"expected an integer"};
  return x;
}
inline std::string as_str(od::value v) {
  std::string_view s;
  if (v.get_string().get(s)) throw bad_frame{"expected a string"};
  return std::string(s);
}

// Decodes one payload into `e` (type, fields, images). Throws bad_frame.
inline store_identity as_store(od::value v) {
  od::object o;
  if (v.get_object().get(o)) throw bad_frame{"store is not an object"};
  store_identity id;
  for (auto f : o) {
    std::string_view k;
    if (f.unescaped_key().get(k)) throw bad_frame{"bad key"};
    if (k == "path") id.path = as_str(f.value());
    else if (k == "fingerprint") id.fingerprint = as_str(f.value());
    else if (k == "records") id.records = static_cast<std::size_t>(as_int(f.value()));
  }
  if (id.fingerprint.empty()) throw bad_frame{"store lacks a fingerprint"};
  return id;
}

inline void decode_payload(std::string_view payload, wal_entry& e, std::string* magic, int* version,
                           std::string* created, std::string* chain = nullptr) {
  simdjson::padded_string buf(payload);
  od::parser parser;
  od::document doc;
  if (parser.iterate(buf).get(doc)) throw bad_frame{"payload is not JSON"};
  od::object obj;
  if (doc.get_object().get(obj)) throw bad_frame{"payload is not a JSON object"};
  bool have_type = false;
  try {
    for (auto f : obj) {
      std::string_view k;
      if (f.unescaped_key().get(k)) throw bad_frame{"bad key"};
      od::value v = f.value();
      if (k == "type") {
        const std::string t = as_str(v);
        have_type = true;
        bool found = false;
        for (int i = 0; i <= static_cast<int>(wal_frame_type::run_end); ++i)
          if (t == to_string(static_cast<wal_frame_type>(i))) e.type = static_cast<wal_frame_type>(i), found = true;
        if (!found) throw bad_frame{"unknown frame type \"" + t + "\""};
      } else if (k == "seq") {
        e.seq = static_cast<std::uint64_t>(as_int(v));
      } else if (k == "run") {
        e.run = as_str(v);
      } else if (k == "action") {
        e.action = as_int(v);
      } else if (k == "idempotency_key") {
        e.idempotency_key = as_str(v);
      } else if (k == "intent") {
        e.intent = static_cast<std::uint64_t>(as_int(v));
      } else if (k == "attempt") {
        e.attempt = static_cast<int>(as_int(v));
      } else if (k == "reason") {
        e.reason = as_str(v);
      } else if (k == "magic" && magic) {
        *magic = as_str(v);
      } else if (k == "version" && version) {
        *version = static_cast<int>(as_int(v));
      } else if (k == "created_at" && created) {
        *created = as_str(v);
      } else if (k == "chain" && chain) {
        *chain = as_str(v);
      } else if (k == "prev") {
        e.prev = as_str(v);
      } else if (k == "store") {
        e.store = as_store(v);
      } else if (k == "records") {
        od::array arr;
        if (v.get_array().get(arr)) throw bad_frame{"records is not an array"};
        for (auto item : arr) {
          od::object ro;
          if (item.get_object().get(ro)) throw bad_frame{"a records entry is not an object"};
          wal_record_image img;
          int seen = 0;
          for (auto rf : ro) {
            std::string_view rk;
            if (rf.unescaped_key().get(rk)) throw bad_frame{"bad key"};
            od::value rv = rf.value();
            if (rk == "index") {
              img.index = static_cast<std::size_t>(as_int(rv)), seen |= 1;
            } else if (rk == "id") {
              img.id = as_str(rv), seen |= 2;
            } else if (rk == "key") {
              img.key = as_str(rv);
            } else if (rk == "before" || rk == "after") {
              od::object io;
              std::string_view raw;
              if (rv.get_object().get(io) || io.raw_json().get(raw)) throw bad_frame{"image is not an object"};
              raw = json_text::trim(raw);
              (rk == "before" ? img.before_json : img.after_json) = std::string(raw);
              seen |= rk == "before" ? 4 : 8;
            }
          }
          if (seen != 15) throw bad_frame{"a records entry lacks index, id, before or after"};
          decode_default_image(img.before_json, img.before);
          decode_default_image(img.after_json, img.after);
          e.records.push_back(std::move(img));
        }
      }
    }
  } catch (const simdjson::simdjson_error& ex) {
    throw bad_frame{std::string("malformed payload: ") + ex.what()};
  }
  if (!have_type) throw bad_frame{"payload has no \"type\""};
}

// The link value of a frame in a chain of kind `chain` ("crc32c": the frame's CRC-32C, which
// its header holds; "crc64": CRC-64/XZ of the payload), and its text in "prev".
inline std::uint64_t link_value(std::string_view chain, std::string_view payload, std::uint32_t frame_crc) {
  return chain == "crc64" ? crc64(payload) : frame_crc;
}
inline std::string link_text(std::string_view chain, std::uint64_t v) {
  return chain == "crc64" ? hex16(v) : hex16(v).substr(8);
}

// The payload of a chained frame with its "prev" link set to `prev` (writers put "prev" last).
inline std::string relink(std::string_view payload, const std::string& prev) {
  constexpr std::string_view tag = ",\"prev\":\"";
  const std::size_t at = payload.rfind(tag);
  std::string out;
  if (at != std::string_view::npos && payload.size() >= at + tag.size() + 2 &&
      payload.find('"', at + tag.size()) == payload.size() - 2) {
    out = std::string(payload.substr(0, at));
  } else {
    out = std::string(payload.substr(0, payload.size() - 1));
  }
  kv(out, "prev", prev);
  out.push_back('}');
  return out;
}

// Checks whether a frame at `p` (with `n` bytes available) is whole and its CRC matches.
inline bool frame_checks_out(const char* p, std::size_t n) noexcept {
  if (n < wal_frame_overhead) return false;
  const std::uint32_t len = get_u32(p);
  if (len == 0 || len > wal_max_payload || len > n - wal_frame_overhead) return false;
  if (p[wal_frame_overhead] != '{' || p[wal_frame_overhead + len - 1] != '}') return false;
  return crc32c(p + wal_frame_overhead, len) == get_u32(p + 4);
}

}  // namespace detail::wal

/// Encodes one frame: length, CRC-32C, payload. @pre 1 <= payload.size() <= wal_max_payload
/// (else throws memhealth::error(invalid_argument)). @complexity O(payload size).
/// @return the payload's CRC-32C (as written in the frame).
inline std::uint32_t append_wal_frame(std::string& out, std::string_view payload) {
  if (payload.empty() || payload.size() > wal_max_payload)
    throw error(error_code::invalid_argument, "WAL frame payload must hold 1 byte to 1 GiB");
  const std::uint32_t crc = crc32c(payload);
  detail::wal::put_u32(out, static_cast<std::uint32_t>(payload.size()));
  detail::wal::put_u32(out, crc);
  out.append(payload);
  return crc;
}

/// Decodes WAL bytes (see the file comment). Never throws on bad data: a problem stops decoding
/// and is described in `wal_contents::problem`; only `std::bad_alloc` escapes.
/// @complexity O(bytes) for a good log; after a corrupt frame, the search for later valid frames
/// is O(remaining bytes x frame size) in the worst case.
inline wal_contents read_wal(std::string_view bytes) {
  namespace dw = detail::wal;
  wal_contents out;
  out.file_bytes = bytes.size();
  std::size_t pos = 0;
  bool header_seen = false;
  auto stop = [&](wal_problem_kind kind, std::string reason) {
    wal_problem p{pos, kind, std::move(reason), false, 0};
    // Look for a later frame that checks out (corruption in the middle rather than a torn tail).
    for (std::size_t q = pos + 1; q + wal_frame_overhead < bytes.size(); ++q)
      if (dw::frame_checks_out(bytes.data() + q, bytes.size() - q)) {
        p.valid_frames_follow = true;
        p.next_valid_offset = q;
        break;
      }
    out.problem = std::move(p);
  };
  while (pos < bytes.size()) {
    const std::size_t left = bytes.size() - pos;
    if (left < wal_frame_overhead) {
      stop(wal_problem_kind::truncated, "frame header cut short: " + std::to_string(left) + " of 8 bytes");
      break;
    }
    const std::uint32_t len = dw::get_u32(bytes.data() + pos);
    if (len == 0 || len > wal_max_payload) {
      stop(wal_problem_kind::bad_length, "frame length " + std::to_string(len) + " out of range");
      break;
    }
    if (len > left - wal_frame_overhead) {
      stop(wal_problem_kind::truncated, "frame of " + std::to_string(len) + " payload bytes runs past the end (" +
                                            std::to_string(left - wal_frame_overhead) + " available)");
      break;
    }
    const std::string_view payload = bytes.substr(pos + wal_frame_overhead, len);
    const std::uint32_t want = dw::get_u32(bytes.data() + pos + 4);
    if (crc32c(payload) != want) {
      stop(wal_problem_kind::bad_checksum, "CRC-32C mismatch");
      break;
    }
    wal_entry e;
    e.offset = pos;
    std::string magic, created, chain;
    int version = 0;
    try {
      dw::decode_payload(payload, e, &magic, &version, &created, &chain);
    } catch (const dw::bad_frame& b) {
      stop(wal_problem_kind::bad_payload, b.reason);
      break;
    }
    if (!header_seen) {
      if (e.type != wal_frame_type::header || magic != wal_magic || version != wal_format_version) {
        stop(wal_problem_kind::bad_header, "first frame is not a version-1 \"MHWAL1\" header");
        break;
      }
      if (!chain.empty() && chain != "crc32c" && chain != "crc64") {
        stop(wal_problem_kind::bad_header, "unknown hash chain \"" + chain + "\"");
        break;
      }
      header_seen = true;
      out.run = e.run;
      out.created_at = created;
      out.store = e.store;
      out.chained = !chain.empty();
      out.chain = chain;
    } else if (e.type == wal_frame_type::header) {
      stop(wal_problem_kind::bad_payload, "second header frame");
      break;
    } else {
      if (out.chained && e.prev != dw::link_text(out.chain, out.chain_tail)) {
        stop(wal_problem_kind::bad_chain, e.prev.empty() ? std::string("frame lacks \"prev\" in a chained log")
                                                         : "frame's \"prev\" " + e.prev + " is not the hash of the frame before it (" +
                                                               dw::link_text(out.chain, out.chain_tail) + "): a frame was removed, reordered or edited");
        out.problem->valid_frames_follow = true;  // this frame itself checks out
        out.problem->next_valid_offset = pos;
        break;
      }
      e.payload = std::string(payload);
      out.entries.push_back(std::move(e));
    }
    if (out.chained) out.chain_tail = dw::link_value(out.chain, payload, want);
    pos += wal_frame_overhead + len;
    out.valid_bytes = pos;
  }
  return out;
}

/// Reads and decodes a WAL file (see `read_wal(std::string_view)`).
/// @throws memhealth::error(io) when the file cannot be opened or read.
inline wal_contents read_wal_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw error(error_code::io, "read_wal_file: cannot open '" + path.string() + "'");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw error(error_code::io, "read_wal_file: cannot read '" + path.string() + "'");
  return read_wal(bytes);
}

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
      : wal_writer(path, wal_writer_options{policy, std::move(run_id), std::nullopt, std::chrono::milliseconds{0}, nullptr}) {}

  /// Opens (creating if needed) the WAL at `path`.
  /// @throws memhealth::error(io) when the file cannot be opened, read, truncated or written;
  ///         error(busy) when another process holds its lock past `opt.lock_timeout`;
  ///         error(schema) when the existing file is not a WAL or is corrupt before its last valid
  ///         frame; error(precondition) when it was made for another store (`opt.store`).
  wal_writer(const std::filesystem::path& path, wal_writer_options opt)
      : path_(path), policy_(opt.policy), run_(std::move(opt.run_id)), store_(std::move(opt.store)),
        io_(opt.io ? opt.io : &posix_file_io::instance()) {
    if (run_.empty())
      run_ = "run-" + std::to_string(epoch_ms(make_timestamp(std::chrono::system_clock::now()))) + "-" +
             std::to_string(::getpid());
    fd_ = io_->open_append(path);
    if (fd_ < 0) throw error(error_code::io, "wal_writer: cannot open '" + path.string() + "': " + std::strerror(errno));
    try {
      lock(opt.lock_timeout);
      const std::optional<std::string> bytes = io_->read_file(path);
      if (!bytes && errno != ENOENT)
        throw error(error_code::io, "wal_writer: cannot read '" + path.string() + "': " + std::strerror(errno));
      const bool existed = bytes && !bytes->empty();
      if (existed) {
        const wal_contents c = read_wal(*bytes);
        if (c.problem && (c.problem->valid_frames_follow || c.valid_bytes == 0))
          throw error(error_code::schema, "wal_writer: '" + path.string() + "' is not a clean WAL (" +
                                              std::string(to_string(c.problem->kind)) + " at offset " +
                                              std::to_string(c.problem->offset) + ": " + c.problem->reason +
                                              "); recover and move it aside before appending");
        if (store_ && c.store && c.store->fingerprint != store_->fingerprint)
          throw error(error_code::precondition,
                      "wal_writer: '" + path.string() + "' was made for another store (" +
                          (c.store->path.empty() ? std::string("fingerprint ") : c.store->path + ", fingerprint ") +
                          c.store->fingerprint + ", " + std::to_string(c.store->records) + " records); this run's store " +
                          (store_->path.empty() ? std::string() : store_->path + " ") + "has fingerprint " +
                          store_->fingerprint + " (" + std::to_string(store_->records) +
                          " records): use a new log for each store");
        if (!c.entries.empty()) next_seq_ = c.entries.back().seq + 1;
        chained_ = c.chained;
        chain_ = c.chain;
        prev_ = c.chain_tail;
        if (c.problem && io_->truncate(fd_, c.valid_bytes) != 0)
          throw error(error_code::io, "wal_writer: cannot cut the torn tail of '" + path.string() + "'");
      } else {
        chained_ = true;
        chain_ = "crc32c";
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
      : path_(std::move(o.path_)), policy_(o.policy_), run_(std::move(o.run_)), store_(std::move(o.store_)),
        io_(o.io_), fd_(std::exchange(o.fd_, -1)), next_seq_(o.next_seq_), in_batch_(o.in_batch_), batch_(std::move(o.batch_)),
        lazy_(std::move(o.lazy_)), dirty_(o.dirty_), bytes_(o.bytes_), syncs_(o.syncs_), chained_(o.chained_),
        chain_(std::move(o.chain_)), prev_(o.prev_), failed_(o.failed_), linked_(o.linked_) {}
  wal_writer& operator=(wal_writer&&) = delete;
  /// Syncs pending frames (unless `wal_sync::none`; errors are swallowed here: call `sync()`
  /// first to see them) and closes the file.
  ~wal_writer() {
    if (fd_ < 0) return;
    try {
      if (!failed_) {
        if (in_batch_) commit_batch();
        flush();
        if (dirty_ && policy_ != wal_sync::none) sync();
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
      throw error(error_code::io, "wal_writer: fdatasync failed on '" + path_.string() + "': " + std::strerror(errno) +
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
  /// (outside a batch). @return the intent's seq (commit/abort refer to it).
  template <class Images>
  std::uint64_t append_intent(std::int64_t action, std::string_view key, int attempt, const Images& records) {
    std::string p = start("intent");
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
      detail::wal::key(p, "before");
      p += r.before_json;
      detail::wal::key(p, "after");
      p += r.after_json;
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
  std::uint64_t append_run_end(std::size_t applied, std::size_t failed, std::size_t deferred, std::size_t skipped) {
    std::string p = start("run_end");
    detail::wal::kv(p, "applied", static_cast<std::int64_t>(applied));
    detail::wal::kv(p, "failed", static_cast<std::int64_t>(failed));
    detail::wal::kv(p, "deferred", static_cast<std::int64_t>(deferred));
    detail::wal::kv(p, "skipped", static_cast<std::int64_t>(skipped));
    return finish(p, true);
  }

 private:
  std::string start(std::string_view type) {
    std::string p = "{";
    detail::wal::kv(p, "type", type);
    seq_of_pending_ = next_seq();
    detail::wal::kv(p, "seq", static_cast<std::int64_t>(seq_of_pending_));
    detail::wal::kv(p, "run", run_);
    return p;
  }
  void put_store(std::string& p) const {
    if (!store_) return;
    detail::wal::key(p, "store");
    p.push_back('{');
    detail::wal::kv(p, "path", store_->path);
    detail::wal::kv(p, "fingerprint", store_->fingerprint);
    detail::wal::kv(p, "records", static_cast<std::int64_t>(store_->records));
    p.push_back('}');
  }
  // Encodes a frame into `out`, linking it into the hash chain (frames are encoded in append
  // order, which is file order: lazy and batched frames keep their order).
  void encode(std::string& out, std::string_view payload) {
    if (linked_) {  // built by finish(): "prev" is in place already
      linked_ = false;
      prev_ = detail::wal::link_value(chain_, payload, append_wal_frame(out, payload));
    } else if (chained_ && !header_) {
      const std::string linked = detail::wal::relink(payload, detail::wal::link_text(chain_, prev_));
      prev_ = detail::wal::link_value(chain_, linked, append_wal_frame(out, linked));
    } else {
      prev_ = detail::wal::link_value(chain_, payload, append_wal_frame(out, payload));
      header_ = false;
    }
  }
  void check_usable() const {
    if (failed_)
      throw error(error_code::io, "wal_writer: an earlier write or fdatasync on '" + path_.string() +
                                      "' failed; the log is not trusted after it: stop and run recover");
  }
  void lock(std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (io_->try_lock(fd_) == 0) return;
      if (errno == EINTR) continue;
      if (errno != EWOULDBLOCK)
        throw error(error_code::io, "wal_writer: cannot lock '" + path_.string() + "': " + std::strerror(errno));
      if (std::chrono::steady_clock::now() >= until)
        throw error(error_code::busy, "wal_writer: '" + path_.string() +
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
  void write_all(std::string_view buf) {
    while (!buf.empty()) {
      const ssize_t n = io_->write(fd_, buf.data(), buf.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        failed_ = true;
        throw error(error_code::io, "wal_writer: write failed on '" + path_.string() + "': " + std::strerror(errno) +
                                        "; the log is not trusted after this point: stop and run recover");
      }
      buf.remove_prefix(static_cast<std::size_t>(n));
      bytes_ += static_cast<std::uint64_t>(n);
    }
    dirty_ = true;
  }
  void sync_directory() { io_->sync_directory(path_.has_parent_path() ? path_.parent_path() : std::filesystem::path(".")); }

  std::filesystem::path path_;
  wal_sync policy_;
  std::string run_;
  std::optional<store_identity> store_;
  file_io* io_ = nullptr;
  int fd_ = -1;
  std::uint64_t next_seq_ = 1;
  bool in_batch_ = false;
  static constexpr std::size_t lazy_limit = 1 << 20;
  std::string batch_;
  std::string lazy_;
  bool dirty_ = false;
  std::uint64_t bytes_ = 0;
  std::uint64_t syncs_ = 0;
  std::uint64_t seq_of_pending_ = 0;
  bool chained_ = false;    // frames carry "prev" (every log this writer creates; older logs stay unchained)
  std::string chain_;       // the chain's kind: "crc32c" (new logs) or "crc64" (older logs continued)
  bool header_ = false;     // the next frame encoded is the header (it has no "prev")
  std::uint64_t prev_ = 0;  // link value of the last frame encoded
  bool failed_ = false;     // a write or fdatasync failed: no further appends
  bool linked_ = false;     // the next frame encoded already carries its "prev" (set by finish)
};

}  // namespace memhealth
