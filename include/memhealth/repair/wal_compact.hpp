#pragma once
/// @file wal_compact.hpp
/// Retention and compaction of repair write-ahead logs (wal.hpp). Traces are kept at least 30
/// days (SPEC section 3 / issue 4): `compact_wal` refuses a log younger than the retention, and
/// never shortens the retention below 30 days unless the caller says so explicitly.
///
/// ## What compaction keeps
/// Exactly what `rollback` and `recover` need from a finished log, byte for byte:
/// - every **committed** intent and the first commit frame that closes it;
/// - every **open** intent (logged, never closed: rollback undoes those too);
/// - every `run_begin` / `run_end` frame (the audit trail of runs; a few bytes each);
/// - the header, rewritten with the same `run` and `created_at` plus `compacted_at` and
///   `compacted_from_bytes` (extra keys, ignored by readers).
///
/// It drops: **aborted** intents with their abort frames (their records were put back, so no
/// rollback or recovery step uses them), commit/abort frames that close no intent or close one
/// already closed (duplicates, superseded), and a **torn tail** (bytes after the last whole
/// frame). Kept frames keep their payloads and sequence numbers verbatim (a chained log's `"prev"`
/// links are recomputed over the kept frames, so the compacted log verifies) (commits refer to
/// their intent's seq), so `rollback` from the compacted log gives the same store as from the
/// original.
///
/// **Old vectors.** A re-embedding's before-image is the retained old vector (action.hpp,
/// `edit_replace_embedding`). Compaction keeps every committed before-image, so old vectors live
/// as long as the log file; a log holding re-embeddings is also refused while younger than
/// `old_vector_retention` (default 14 days), which matters only when the 30-day retention was
/// lowered with `allow_short_retention`. Deleting a log file is the user's decision, never
/// memhealth's: keep logs at least max(retention, old_vector_retention).
/// Compaction works on the logged bytes, so it serves logs of any record type (record_image.hpp);
/// re-embeddings are recognised in `memory_record` images only (a user type's log is held to
/// `retention` alone).
///
/// **Age** of a log = `now` minus its newest time: the header's `created_at` and every
/// `run_begin`'s `started_at` (a log a new run was appended to yesterday is one day old).
///
/// The file is rewritten with `atomic_write`: a temporary file in the same directory, `fsync`,
/// `rename` over the log, `fsync` of the directory. Do not compact a log a writer has open.

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/io/atomic_write.hpp"
#include "memhealth/record/time.hpp"
#include "memhealth/repair/wal.hpp"

#include <fcntl.h>
#include <unistd.h>

namespace memhealth {

/// Shortest retention of repair logs (SPEC: traces kept at least 30 days).
inline constexpr std::chrono::days wal_min_retention{30};
/// Default retention of re-embedded records' old vectors (SPEC: 7-15 days).
inline constexpr std::chrono::days default_old_vector_retention{14};

/// Options of `compact_wal` (named option pack).
struct wal_compact_options {
  /// Logs younger than this are refused. Below `wal_min_retention` only with
  /// `allow_short_retention`.
  std::chrono::milliseconds retention = wal_min_retention;
  /// Explicit override: permit a retention below 30 days (the CLI prints a warning).
  bool allow_short_retention = false;
  /// Logs holding re-embeddings are also refused while younger than this.
  std::chrono::milliseconds old_vector_retention = default_old_vector_retention;
  /// Compute the result only; write nothing.
  bool dry_run = false;
};

/// Outcome of `compact_wal`.
struct wal_compact_result {
  bool compacted = false;  ///< the file was rewritten (false: refused, nothing to drop, or dry run)
  std::string refused;     ///< why the log was left alone (empty when it could be compacted)
  std::uint64_t bytes_before = 0;  ///< file size before
  std::uint64_t bytes_after =
      0;  ///< size of the compacted log (computed also in a dry run or when nothing changes)
  std::size_t frames_before = 0;         ///< whole frames before, header included
  std::size_t frames_after = 0;          ///< frames after, header included
  std::size_t intents_kept = 0;          ///< committed and open intents kept
  std::size_t aborted_dropped = 0;       ///< aborted intents dropped (their abort frames too)
  std::size_t stray_dropped = 0;         ///< commit/abort frames closing no open intent, dropped
  std::uint64_t torn_bytes_dropped = 0;  ///< bytes after the last whole frame, dropped
  std::size_t old_vectors_kept =
      0;  ///< kept record images whose embedding or embedding_version changed (re-embeddings)
  std::optional<utc_time> newest;    ///< newest time found in the log
  std::chrono::milliseconds age{0};  ///< `now - newest`
};

namespace detail::wal_compact {

template <class = void>  // deferred instantiation, see memhealth.hpp
std::optional<utc_time> started_at(const wal_entry& e) {
  try {
    const auto j = nlohmann::json::parse(e.payload);
    if (auto it = j.find("started_at"); it != j.end() && it->is_string())
      if (auto t = parse_timestamp(it->get<std::string>())) return t->instant;
  } catch (const nlohmann::json::exception&) {
  }
  return std::nullopt;
}

}  // namespace detail::wal_compact

/// Compacts the log at `path` as of `now` (see the file comment for what is kept and dropped).
/// A refusal is not an error: `result.refused` says why and the file is untouched (a log younger
/// than the retention; a log damaged in the middle, with valid frames after the damage; a file
/// that is not a log; a log whose age cannot be told).
/// @throws memhealth::error(invalid_argument) for a retention below 30 days without
///         `allow_short_retention`, or a negative one; error(io) when the file cannot be read or
///         rewritten (the original is then untouched).
/// @complexity O(file size); reads the whole log into memory.
template <class = void>  // deferred instantiation, see memhealth.hpp
wal_compact_result compact_wal(const std::filesystem::path& path, utc_time now,
                               const wal_compact_options& opt = {}) {
  namespace dw = detail::wal;
  if (opt.retention.count() < 0 || opt.old_vector_retention.count() < 0)
    throw error(error_code::invalid_argument, "compact_wal: negative retention");
  if (opt.retention < wal_min_retention && !opt.allow_short_retention)
    throw error(error_code::invalid_argument,
                "compact_wal: a retention below 30 days needs the explicit override "
                "(allow_short_retention, CLI --allow-short-retention)");
  wal_compact_result res;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw error(error_code::io, "compact_wal: cannot open '" + path.string() + "'");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw error(error_code::io, "compact_wal: cannot read '" + path.string() + "'");
  in.close();
  res.bytes_before = bytes.size();
  res.bytes_after = bytes.size();
  const wal_contents log = read_wal(bytes);
  res.frames_before = (log.valid_bytes > 0 ? 1 : 0) + log.entries.size();
  res.frames_after = res.frames_before;
  if (log.valid_bytes == 0 || (log.problem && log.problem->kind == wal_problem_kind::bad_header)) {
    res.refused = "not a memhealth write-ahead log (no MHWAL1 header frame)";
    return res;
  }
  if (log.problem && log.problem->valid_frames_follow) {
    res.refused = "damaged at byte " + std::to_string(log.problem->offset) +
                  " with valid frames after it; recover and inspect it by hand";
    return res;
  }

  // Age: the newest of created_at and every run_begin's started_at.
  if (auto t = parse_timestamp(log.created_at)) res.newest = t->instant;
  for (const auto& e : log.entries)
    if (e.type == wal_frame_type::run_begin)
      if (auto t = detail::wal_compact::started_at(e); t && (!res.newest || *t > *res.newest))
        res.newest = *t;
  if (!res.newest) {
    res.refused = "the log's age cannot be told (no readable created_at or started_at)";
    return res;
  }
  res.age = std::chrono::duration_cast<std::chrono::milliseconds>(now - *res.newest);

  // Which intents are closed how: the first commit/abort of an open intent closes it.
  enum class st : std::uint8_t { open, committed, aborted };
  std::map<std::uint64_t, st> state;
  std::vector<bool> keep(log.entries.size(), true);
  for (std::size_t k = 0; k < log.entries.size(); ++k) {
    const auto& e = log.entries[k];
    if (e.type == wal_frame_type::intent) {
      state[e.seq] = st::open;
    } else if (e.type == wal_frame_type::commit || e.type == wal_frame_type::abort) {
      auto it = state.find(e.intent);
      if (it == state.end() || it->second != st::open) {
        keep[k] = false;
        ++res.stray_dropped;
      } else {
        it->second = e.type == wal_frame_type::commit ? st::committed : st::aborted;
      }
    }
  }
  bool has_reembed = false;
  for (std::size_t k = 0; k < log.entries.size(); ++k) {
    const auto& e = log.entries[k];
    if (e.type == wal_frame_type::intent && state[e.seq] == st::aborted) {
      keep[k] = false;
      ++res.aborted_dropped;
    } else if (e.type == wal_frame_type::abort && keep[k]) {
      keep[k] = false;  // closes an aborted intent, dropped with it
    } else if (e.type == wal_frame_type::intent) {
      ++res.intents_kept;
      for (const auto& r : e.records)
        if (r.before.embedding != r.after.embedding ||
            r.before.embedding_version != r.after.embedding_version) {
          ++res.old_vectors_kept;
          has_reembed = true;
        }
    }
  }
  auto retention = opt.retention;
  if (has_reembed && opt.old_vector_retention > retention) retention = opt.old_vector_retention;
  if (res.age < retention) {
    const auto days = [](std::chrono::milliseconds ms) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.1f",
                    std::chrono::duration<double, std::ratio<86400>>(ms).count());
      return std::string(buf);
    };
    res.refused = "the log is " + days(res.age) + " days old; traces are kept at least " +
                  days(retention) + " days" +
                  (has_reembed && retention == opt.old_vector_retention
                       ? " (it holds re-embedded records' old vectors)"
                       : "");
    return res;
  }

  // The compacted file: a fresh header, then the kept frames verbatim (in a chained log, with
  // their "prev" links recomputed over the frames kept).
  std::string out;
  std::uint64_t prev = 0;
  {
    std::string p = "{";
    dw::kv(p, "type", "header");
    dw::kv(p, "magic", wal_magic);
    dw::kv(p, "version", wal_format_version);
    dw::kv(p, "seq", 0);
    dw::kv(p, "run", log.run);
    dw::kv(p, "created_at", log.created_at);
    dw::kv(p, "compacted_at", format_timestamp(timestamp{now, 0}));
    dw::kv(p, "compacted_from_bytes", static_cast<std::int64_t>(bytes.size()));
    if (log.chained) dw::kv(p, "chain", log.chain);
    if (log.store) {
      dw::key(p, "store");
      p += "{";
      dw::kv(p, "path", log.store->path);
      dw::kv(p, "fingerprint", log.store->fingerprint);
      dw::kv(p, "records", static_cast<std::int64_t>(log.store->records));
      p += "}";
    }
    p.push_back('}');
    prev = dw::link_value(log.chain, p, append_wal_frame(out, p));
  }
  res.frames_after = 1;
  for (std::size_t k = 0; k < log.entries.size(); ++k)
    if (keep[k]) {
      if (log.chained) {  // the chain is rebuilt over the kept frames
        const std::string linked =
            dw::relink(log.entries[k].payload, dw::link_text(log.chain, prev));
        prev = dw::link_value(log.chain, linked, append_wal_frame(out, linked));
      } else {
        append_wal_frame(out, log.entries[k].payload);
      }
      ++res.frames_after;
    }
  res.torn_bytes_dropped = log.file_bytes - log.valid_bytes - log.preallocated_bytes;
  res.bytes_after = out.size();
  const bool drops = res.frames_after < res.frames_before || res.torn_bytes_dropped > 0;
  if (!drops || opt.dry_run) {
    if (!drops) res.bytes_after = bytes.size();  // nothing to drop: the file stays as it is
    return res;
  }
  atomic_write(path, out);
  res.compacted = true;
  return res;
}

}  // namespace memhealth
