#pragma once
/// @file response_cache.hpp
/// A persistent cache of model answers (embeddings, judge verdicts) in one SQLite file, keyed by
/// (namespace, model, SHA-256 of the input text), so a rerun over the same texts makes no
/// request. The input text itself is never stored (it may hold a user's private memory): only its
/// SHA-256 digest (OpenSSL's EVP interface) and the answer. Part of `memhealth::http`.
///
/// Table `model_cache(ns TEXT, model TEXT, digest BLOB(32), value BLOB, created_ms INTEGER,
/// PRIMARY KEY(ns, model, digest))`, journal WAL, busy timeout 10 s, so several processes can
/// share one cache file. Thread-safe (one connection under a mutex).
///
/// Errors: error(io/parse/busy) from SQLite naming the file (`sqlite_schema.hpp`'s mapping);
/// error(io) when OpenSSL cannot hash.

#include <sqlite3.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "memhealth/store/sqlite_schema.hpp"

#include <openssl/evp.h>

namespace memhealth {

/// SHA-256 of `text` (32 bytes). @throws error(io) when OpenSSL fails.
inline std::array<unsigned char, 32> sha256(std::string_view text) {
  std::array<unsigned char, 32> out{};
  unsigned int n = 0;
  if (EVP_Digest(text.data(), text.size(), out.data(), &n, EVP_sha256(), nullptr) != 1 || n != 32)
    throw error(error_code::io, "sha256: OpenSSL EVP_Digest failed");
  return out;
}

/// The persistent answer cache (see the file comment).
class response_cache {
 public:
  /// Opens (creating when absent) the cache file at `path`.
  /// @throws error(io) when it cannot be created or opened; error(parse) when it is not SQLite;
  ///         error(schema) when it holds a `model_cache` table of another shape.
  explicit response_cache(const std::filesystem::path& path) : path_(path.string()) {
    namespace sq = detail::sqlite;
    db_ = sq::open_db(path_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      std::chrono::seconds(10));
    sq::exec(db_.get(), "PRAGMA journal_mode=WAL", path_, "cannot set the journal mode");
    sq::exec(db_.get(),
             "CREATE TABLE IF NOT EXISTS model_cache(ns TEXT NOT NULL, model TEXT NOT NULL, "
             "digest BLOB NOT NULL, value BLOB NOT NULL, created_ms INTEGER NOT NULL, "
             "PRIMARY KEY(ns, model, digest)) WITHOUT ROWID",
             path_, "cannot create the model cache table");
    try {
      get_ = sq::prepare(
          db_.get(), "SELECT value FROM model_cache WHERE ns=?1 AND model=?2 AND digest=?3", path_);
      put_ = sq::prepare(db_.get(),
                         "INSERT OR REPLACE INTO model_cache(ns, model, digest, value, created_ms) "
                         "VALUES(?1, ?2, ?3, ?4, ?5)",
                         path_);
    } catch (const error& e) {
      throw error(error_code::schema,
                  path_ + ": model_cache is not a memhealth cache (" + std::string(e.what()) + ")");
    }
  }

  /// The cached answer for `text` under (`ns`, `model`), if any.
  [[nodiscard]] std::optional<std::string> get(std::string_view ns, std::string_view model,
                                               std::string_view text) const {
    const auto d = sha256(text);
    std::lock_guard lock(mu_);
    auto* st = get_.get();
    sqlite3_reset(st);
    detail::sqlite::bind_text(st, 1, ns);
    detail::sqlite::bind_text(st, 2, model);
    sqlite3_bind_blob(st, 3, d.data(), static_cast<int>(d.size()), SQLITE_TRANSIENT);
    std::optional<std::string> out;
    if (detail::sqlite::step(db_.get(), st, path_) == SQLITE_ROW) {
      const void* p = sqlite3_column_blob(st, 0);
      const auto n = static_cast<std::size_t>(sqlite3_column_bytes(st, 0));
      out.emplace(n ? static_cast<const char*>(p) : "", n);
    }
    sqlite3_reset(st);
    return out;
  }

  /// Stores `value` as the answer for `text` under (`ns`, `model`) (replacing an older one).
  void put(std::string_view ns, std::string_view model, std::string_view text,
           std::string_view value) {
    const auto d = sha256(text);
    const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    std::lock_guard lock(mu_);
    auto* st = put_.get();
    sqlite3_reset(st);
    detail::sqlite::bind_text(st, 1, ns);
    detail::sqlite::bind_text(st, 2, model);
    sqlite3_bind_blob(st, 3, d.data(), static_cast<int>(d.size()), SQLITE_TRANSIENT);
    sqlite3_bind_blob(st, 4, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 5, now);
    detail::sqlite::step_done(db_.get(), st, path_, "cannot write the model cache");
    sqlite3_reset(st);
  }

  /// The cache file.
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
  detail::sqlite::db_ptr db_;
  detail::sqlite::stmt_ptr get_, put_;
  mutable std::mutex mu_;
};

}  // namespace memhealth
