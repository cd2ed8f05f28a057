#pragma once
/// @file store_identity.hpp
/// Which store a write-ahead log belongs to: a fingerprint of the store's record ids.
///
/// A repair never adds, removes or renames a record, so the set of record ids is the part of a
/// store that a run leaves alone: the store before `apply`, the store it wrote and the store a
/// later run reads all share it, while another store (another user's, another dataset) has
/// another. `wal_writer` writes the identity into the log's header and refuses to append a run
/// for a store whose fingerprint differs; `rollback` and `recover` (rollback.hpp) refuse a log
/// whose records mostly are not in the store they are given (see `check_log_store`).
///
/// The fingerprint is the CRC-64/XZ (checksum.hpp) of the distinct ids in byte order, each
/// followed by '\n', as 16 hex digits. It is not a secret and not authentication: it tells
/// stores apart, it does not prove where a log came from.
///
/// A store that has an id of its own (a `database_id()` member returning text, such as the
/// SQLite store's random 128-bit id in `memhealth_meta`) has it recorded too; when the log and
/// the store both have one, it decides: the same id is the same store whatever records were
/// inserted or deleted since, another id is another store even with the same record ids (two
/// databases imported from one file). A file copy of a database keeps its id.

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "memhealth/record/traits.hpp"
#include "memhealth/repair/checksum.hpp"
#include "memhealth/store/store.hpp"

namespace memhealth {

/// The identity of a store as written in a log header (`"store":{...}`).
struct store_identity {
  std::string path;  ///< where the store was read when the log was made (for people; not compared)
  std::string fingerprint;  ///< CRC-64/XZ of the sorted distinct record ids, 16 hex digits
  std::size_t records = 0;  ///< records in the store at that time (duplicates included)
  std::string database_id;  ///< the store's own id (`S::database_id()`), empty when it has none
  friend bool operator==(const store_identity&, const store_identity&) = default;
};

/// Computes the identity of `store` (see the file comment); `path` is recorded as given.
/// @complexity O(n log n) in the number of records (the ids are sorted), O(total id bytes) memory.
template <record_store S>
[[nodiscard]] store_identity identify_store(const S& store, std::string path = {}) {
  std::vector<std::string> ids;  // copies: a store's record(i) may return a temporary
  ids.reserve(store.size());
  for (std::size_t i = 0; i < store.size(); ++i) ids.emplace_back(field::id(store.record(i)));
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  crc64_engine e;
  for (const std::string& id : ids) {
    e.process_bytes(id.data(), id.size());
    e.process_byte('\n');
  }
  store_identity out{std::move(path), hex16(e.checksum()), store.size(), {}};
  if constexpr (requires {
                  { store.database_id() } -> std::convertible_to<std::string_view>;
                })
    out.database_id = std::string(std::string_view(store.database_id()));
  return out;
}

}  // namespace memhealth
