// A simulated file system for the write-ahead log writer (io/file_io.hpp): it records every
// write and sync barrier, can "lose power" after any operation (unsynced writes dropped, torn at
// 512-byte sector boundaries, or partly reordered), and can fail a chosen write or sync with an
// errno. In the style of SQLite's crash tests (sqlite.org/testing.html, "Crash testing"), which
// replace the VFS and cut power at a chosen point.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "memhealth/io/file_io.hpp"

namespace memhealth::test {

class sim_file_io final : public file_io {
 public:
  /// One recorded operation.
  struct op {
    enum kind_t { write, sync, truncate } kind;
    int file;                  // file number (per path)
    std::uint64_t offset = 0;  // write: where the bytes went; truncate: the new size
    std::string data;          // write: the bytes
  };
  /// How power is lost.
  enum class loss { keep_all, drop_unsynced, torn, reorder };

  std::vector<op> ops;                          // every write / sync / truncate, in order
  std::optional<std::size_t> fail_write_at;     // the n-th write call (0-based) fails with fail_errno
  std::optional<std::size_t> fail_sync_at;      // the n-th sync call fails with fail_errno
  int fail_errno = EIO;
  std::size_t writes = 0, syncs = 0;

  int open_append(const std::filesystem::path& path) override {
    const std::string key = path.string();
    auto it = files_.find(key);
    if (it == files_.end()) it = files_.emplace(key, static_cast<int>(content_.size())).first, content_.emplace_back();
    handles_[next_] = it->second;
    return next_++;
  }
  ssize_t write(int h, const char* data, std::size_t n) override {
    if (fail_write_at && writes++ == *fail_write_at) return errno = fail_errno, -1;
    if (!fail_write_at) ++writes;
    const int f = handles_.at(h);
    ops.push_back({op::write, f, content_[f].size(), std::string(data, n)});
    content_[f].append(data, n);
    return static_cast<ssize_t>(n);
  }
  int sync(int h) override {
    if (fail_sync_at && syncs++ == *fail_sync_at) return errno = fail_errno, -1;
    if (!fail_sync_at) ++syncs;
    ops.push_back({op::sync, handles_.at(h), 0, {}});
    return 0;
  }
  int truncate(int h, std::uint64_t size) override {
    const int f = handles_.at(h);
    ops.push_back({op::truncate, f, size, {}});
    content_[f].resize(size);
    return 0;
  }
  int try_lock(int h) override {
    const int f = handles_.at(h);
    auto it = locks_.find(f);
    if (it != locks_.end() && it->second != h) return errno = EWOULDBLOCK, -1;
    locks_[f] = h;
    return 0;
  }
  int close(int h) override {
    const int f = handles_.at(h);
    if (auto it = locks_.find(f); it != locks_.end() && it->second == h) locks_.erase(it);
    handles_.erase(h);
    return 0;
  }
  void sync_directory(const std::filesystem::path&) override {}
  std::optional<std::string> read_file(const std::filesystem::path& path) override {
    auto it = files_.find(path.string());
    if (it == files_.end()) return errno = ENOENT, std::nullopt;
    return content_[it->second];
  }

  /// The bytes of `path` as a disk would hold them had power been lost after the first `n` ops:
  /// everything before the file's last sync among them survives; what was written after it
  /// survives wholly (keep_all), not at all (drop_unsynced), up to a sector boundary (torn), or
  /// sector by sector at random, the rest reading as zeros (reorder).
  std::string after_power_loss(const std::filesystem::path& path, std::size_t n, loss how, std::mt19937& rng) const {
    const int f = files_.at(path.string());
    std::string durable, all;
    for (std::size_t i = 0; i < n && i < ops.size(); ++i) {
      const op& o = ops[i];
      if (o.file != f) continue;
      if (o.kind == op::write) all.replace(o.offset, o.data.size(), o.data);
      if (o.kind == op::truncate) all.resize(o.offset);
      if (o.kind == op::sync) durable = all;
    }
    constexpr std::size_t sector = 512;
    switch (how) {
      case loss::keep_all: return all;
      case loss::drop_unsynced: return durable;
      case loss::torn: {
        if (all.size() <= durable.size()) return durable;
        std::size_t cut = durable.size() + rng() % (all.size() - durable.size() + 1);
        cut = std::max(durable.size(), cut / sector * sector);
        return all.substr(0, cut);
      }
      case loss::reorder: {
        if (all.size() <= durable.size()) return durable;
        std::string disk = all;
        std::size_t end = durable.size();
        for (std::size_t s = durable.size() / sector * sector; s < all.size(); s += sector) {
          const std::size_t lo = std::max(s, durable.size()), hi = std::min(s + sector, all.size());
          if (rng() % 2) {
            end = hi;
          } else {
            for (std::size_t i = lo; i < hi; ++i) disk[i] = '\0';
          }
        }
        disk.resize(end);
        return disk;
      }
    }
    return all;
  }

 private:
  std::map<std::string, int> files_;
  std::vector<std::string> content_;
  std::map<int, int> handles_;
  std::map<int, int> locks_;
  int next_ = 3;
};

}  // namespace memhealth::test
