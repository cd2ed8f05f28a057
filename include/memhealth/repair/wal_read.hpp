#pragma once
/// @file wal_read.hpp
/// The repair write-ahead log's frames and their reader: types, frame encoding
/// (`append_wal_frame`) and `read_wal`. The format, durability and chain are documented in
/// wal.hpp (and docs/format.md); the writer is wal_writer.hpp.

#include <simdjson.h>

#include <algorithm>
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

#include "memhealth/config.hpp"
#include "memhealth/io/detail_json_text.hpp"
#include "memhealth/io/jsonl.hpp"
#include "memhealth/record/memory_record.hpp"
#include "memhealth/record/time.hpp"
#include "memhealth/repair/checksum.hpp"
#include "memhealth/repair/store_identity.hpp"

namespace memhealth {

/// Magic string of the header frame.
inline constexpr std::string_view wal_magic = "MHWAL1";
/// Format version written in the header frame of a new log: 2 (intents may give an after-image
/// as an edit of the before-image, `"after_edit"`). Readers accept 1 and 2; a writer continuing a
/// version-1 log keeps writing whole after-images, so older readers can still read it.
inline constexpr int wal_format_version = 2;
/// Oldest format version `read_wal` accepts.
inline constexpr int wal_min_format_version = 1;
/// Largest payload a frame may carry (1 GiB); a larger length field is corruption.
inline constexpr std::uint32_t wal_max_payload = 1u << 30;
/// Bytes of a frame before its payload (length + CRC).
inline constexpr std::size_t wal_frame_overhead = 8;

/// Frame types (the `"type"` of a payload).
enum class wal_frame_type : std::uint8_t { header, run_begin, intent, commit, abort, run_end };

/// Text of a frame type as written: "header", "run_begin", "intent", "commit", "abort", "run_end".
constexpr std::string_view to_string(wal_frame_type t) noexcept {
  constexpr std::string_view names[] = {"header", "run_begin", "intent",
                                        "commit", "abort",     "run_end"};
  return names[static_cast<int>(t)];
}

/// One record of an intent: where it is, and its images before and after the action.
/// The images are the JSON texts of record_image.hpp (`encode_image` of the store's record type),
/// exact bytes from the log; rollback and recovery decode them with `decode_image<R>`.
/// `before`/`after` are those images decoded as `memory_record` for logs of `memory_record`
/// stores; for another record type they stay default-constructed (use the JSON texts).
struct wal_record_image {
  std::size_t index = 0;  ///< store index when the action ran (a hint: records are found by `id`)
  std::string id;         ///< record id: the record's identity for rollback and recovery
  std::string key;  ///< the store's own key for the record (`keyed_record_store`), empty if none
  memory_record
      before;  ///< complete image before the action (embedding included), memory_record logs
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
  std::string
      prev;  ///< chained logs: the previous frame's link (CRC-32C, 8 hex; "crc64" logs: 16 hex)
  std::string payload;  ///< the frame's JSON payload, verbatim
};

/// Why reading stopped early.
enum class wal_problem_kind : std::uint8_t {
  truncated,     ///< a length field or payload runs past the end of the file (torn append)
  bad_checksum,  ///< the CRC-32C does not match the payload
  bad_length,    ///< length 0 or above `wal_max_payload`
  bad_payload,   ///< the CRC matches but the payload is not a frame object memhealth understands
  bad_header,    ///< the first frame is not a version-1 or -2 header with magic "MHWAL1"
  bad_chain,     ///< a chained log's frame does not carry the hash of the frame before it (a frame
                 ///< removed, reordered or edited)
};

/// Text of a problem kind ("truncated", "bad_checksum", ...).
constexpr std::string_view to_string(wal_problem_kind k) noexcept {
  constexpr std::string_view names[] = {"truncated",   "bad_checksum", "bad_length",
                                        "bad_payload", "bad_header",   "bad_chain"};
  return names[static_cast<int>(k)];
}

/// Where and why `read_wal` stopped before the end of the file.
struct wal_problem {
  std::uint64_t offset = 0;                             ///< byte offset of the first frame not used
  wal_problem_kind kind = wal_problem_kind::truncated;  ///< why
  std::string reason;                                   ///< human-readable detail
  bool valid_frames_follow = false;  ///< a frame with a matching CRC exists after `offset`
                                     ///< (corruption in the middle, not a torn tail)
  std::uint64_t next_valid_offset =
      0;  ///< offset of the first such frame, when `valid_frames_follow`
};

/// The decoded contents of a WAL: every frame wholly before the first problem, in file order.
struct wal_contents {
  std::string run;         ///< run id from the header (empty if no valid header)
  std::string created_at;  ///< creation time from the header
  std::optional<store_identity>
      store;             ///< the store the log was made for (header `"store"`), if recorded
  bool chained = false;  ///< the header declares the hash chain (every later frame was checked)
  std::string chain;     ///< the header's `"chain"`: "crc32c", "crc64" (older logs), or empty
  int version = 0;       ///< the header's format version (1 or 2); 0 without a valid header
  std::uint64_t chain_tail =
      0;  ///< link value of the last good frame (what the next frame's `prev` must name)
  std::vector<wal_entry> entries;        ///< frames after the header, in file order
  std::uint64_t valid_bytes = 0;         ///< bytes covered by good frames (header included)
  std::uint64_t preallocated_bytes = 0;  ///< zeros after the last frame: space the writer
                                         ///< allocated ahead (not a problem)
  std::uint64_t file_bytes = 0;          ///< total bytes read
  std::optional<wal_problem> problem;    ///< set when reading stopped before `file_bytes`
  /// True when every byte decoded into good frames or is preallocated space.
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
  per_batch,   ///< (default) once per `commit_batch()`; outside a batch, each intent/header/run
               ///< frame; lazy frames ride on the next sync
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
  return std::uint32_t(u[0]) | std::uint32_t(u[1]) << 8 | std::uint32_t(u[2]) << 16 |
         std::uint32_t(u[3]) << 24;
}

// Keys are the format's own names (ASCII letters and '_'): written without escaping.
inline void key(std::string& out, std::string_view k) {
  if (out.back() != '{') out.push_back(',');
  out.push_back('"');
  out.append(k);
  out.append("\":", 2);
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

/// An after-image written as one edit of the before-image (format 2): after = before[0, at) +
/// put + before[at + cut, end). `at` and `cut` are byte counts of the before-image text.
struct image_edit {
  std::size_t at = 0, cut = 0;
  std::string_view put;
};

// The edit turning `before` into `after`: their longest common prefix and suffix (not
// overlapping) are kept, the middle replaced. Both ends sit on UTF-8 character boundaries, so
// `put` is whole characters (a JSON string can carry it). Exact by construction: applying it to
// `before` gives `after` byte for byte. O(size) with memcmp-speed scans.
inline image_edit diff_image(std::string_view before, std::string_view after) noexcept {
  const std::size_t m = std::min(before.size(), after.size());
  std::size_t p = 0;
  constexpr std::size_t block = 64;  // compare blocks with memcmp first, then bytes
  while (p + block <= m && std::memcmp(before.data() + p, after.data() + p, block) == 0) p += block;
  while (p < m && before[p] == after[p]) ++p;
  const auto cont = [](char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; };
  // Back off to a character start: the first differing byte may be inside a character.
  while (p > 0 && ((p < before.size() && cont(before[p])) || (p < after.size() && cont(after[p]))))
    --p;
  std::size_t s = 0;
  while (s + block <= m - p && std::memcmp(before.data() + before.size() - s - block,
                                           after.data() + after.size() - s - block, block) == 0)
    s += block;
  while (s < m - p && before[before.size() - 1 - s] == after[after.size() - 1 - s]) ++s;
  // The kept suffix must start on a character start (it is the same bytes in both texts).
  while (s > 0 && cont(after[after.size() - s])) --s;
  return {p, before.size() - p - s, after.substr(p, after.size() - p - s)};
}

// Applies an edit (see image_edit); throws bad_frame when it does not fit `before`.
inline std::string apply_image_edit(std::string_view before, const image_edit& e) {
  if (e.at > before.size() || e.cut > before.size() - e.at)
    throw bad_frame{"after_edit does not fit the before-image"};
  std::string out;
  out.reserve(before.size() - e.cut + e.put.size());
  out.append(before.substr(0, e.at));
  out.append(e.put);
  out.append(before.substr(e.at + e.cut));
  return out;
}

// Decodes one payload into `e` (type, fields, images). Throws bad_frame.
inline store_identity as_store(od::value v) {
  od::object o;
  if (v.get_object().get(o)) throw bad_frame{"store is not an object"};
  store_identity id;
  for (auto f : o) {
    std::string_view k;
    if (f.unescaped_key().get(k)) throw bad_frame{"bad key"};
    if (k == "path")
      id.path = as_str(f.value());
    else if (k == "fingerprint")
      id.fingerprint = as_str(f.value());
    else if (k == "records")
      id.records = static_cast<std::size_t>(as_int(f.value()));
    else if (k == "database_id")
      id.database_id = as_str(f.value());
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
          if (t == to_string(static_cast<wal_frame_type>(i)))
            e.type = static_cast<wal_frame_type>(i), found = true;
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
          std::optional<std::pair<image_edit, std::string>> edit;  // "after_edit" (put owned)
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
              if (rv.get_object().get(io) || io.raw_json().get(raw))
                throw bad_frame{"image is not an object"};
              raw = json_text::trim(raw);
              (rk == "before" ? img.before_json : img.after_json) = std::string(raw);
              seen |= rk == "before" ? 4 : 8;
            } else if (rk == "after_edit") {
              od::object eo;
              if (rv.get_object().get(eo)) throw bad_frame{"after_edit is not an object"};
              std::pair<image_edit, std::string> ed;
              int have = 0;
              for (auto ef : eo) {
                std::string_view ek;
                if (ef.unescaped_key().get(ek)) throw bad_frame{"bad key"};
                if (ek == "at") {
                  const std::int64_t x = as_int(ef.value());
                  if (x < 0) throw bad_frame{"after_edit.at is negative"};
                  ed.first.at = static_cast<std::size_t>(x), have |= 1;
                } else if (ek == "cut") {
                  const std::int64_t x = as_int(ef.value());
                  if (x < 0) throw bad_frame{"after_edit.cut is negative"};
                  ed.first.cut = static_cast<std::size_t>(x), have |= 2;
                } else if (ek == "put") {
                  ed.second = as_str(ef.value()), have |= 4;
                }
              }
              if (have != 7) throw bad_frame{"after_edit lacks at, cut or put"};
              edit = std::move(ed);
              seen |= 8;
            }
          }
          if (seen != 15) throw bad_frame{"a records entry lacks index, id, before or after"};
          if (edit) {
            if (!img.after_json.empty())
              throw bad_frame{"a records entry has after and after_edit"};
            edit->first.put = edit->second;
            img.after_json = apply_image_edit(img.before_json, edit->first);
          }
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
inline std::uint64_t link_value(std::string_view chain, std::string_view payload,
                                std::uint32_t frame_crc) {
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
  // Where the file's final run of zero bytes starts (bytes.size() when it ends in a non-zero).
  std::size_t zeros_from = bytes.size();
  while (zeros_from > 0 && bytes[zeros_from - 1] == '\0') --zeros_from;
  auto stop = [&](wal_problem_kind kind, std::string reason) {
    // A frame that does not check out and reaches into the final zeros, or ends where they
    // begin, is an append cut short in preallocated space (a sector of it never written): a
    // torn tail, like one that runs past the end of the file.
    if (kind != wal_problem_kind::truncated && kind != wal_problem_kind::bad_header &&
        zeros_from < bytes.size() && bytes.size() - pos >= wal_frame_overhead) {
      const std::uint64_t len = dw::get_u32(bytes.data() + pos);
      if (pos + wal_frame_overhead + len >= zeros_from) {
        reason += "; the frame runs into the preallocated zeros (an append cut short)";
        kind = wal_problem_kind::truncated;
      }
    }
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
    if (pos >= zeros_from && header_seen) {  // only zeros are left: preallocated space
      out.preallocated_bytes = left;
      break;
    }
    if (left < wal_frame_overhead) {
      stop(wal_problem_kind::truncated,
           "frame header cut short: " + std::to_string(left) + " of 8 bytes");
      break;
    }
    const std::uint32_t len = dw::get_u32(bytes.data() + pos);
    if (len == 0 || len > wal_max_payload) {
      stop(wal_problem_kind::bad_length, "frame length " + std::to_string(len) + " out of range");
      break;
    }
    if (len > left - wal_frame_overhead) {
      stop(wal_problem_kind::truncated,
           "frame of " + std::to_string(len) + " payload bytes runs past the end (" +
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
      if (e.type != wal_frame_type::header || magic != wal_magic ||
          version < wal_min_format_version || version > wal_format_version) {
        stop(wal_problem_kind::bad_header,
             "first frame is not a version-1 or -2 \"MHWAL1\" header" +
                 (e.type == wal_frame_type::header && magic == wal_magic
                      ? " (version " + std::to_string(version) + ")"
                      : std::string()));
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
      out.version = version;
    } else if (e.type == wal_frame_type::header) {
      stop(wal_problem_kind::bad_payload, "second header frame");
      break;
    } else {
      if (out.chained && e.prev != dw::link_text(out.chain, out.chain_tail)) {
        stop(wal_problem_kind::bad_chain, e.prev.empty()
                                              ? std::string("frame lacks \"prev\" in a chained log")
                                              : "frame's \"prev\" " + e.prev +
                                                    " is not the hash of the frame before it (" +
                                                    dw::link_text(out.chain, out.chain_tail) +
                                                    "): a frame was removed, reordered or edited");
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

}  // namespace memhealth
