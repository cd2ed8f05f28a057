// A simulated file system for the write-ahead log writer (io/file_io.hpp): it records every
// write and sync barrier, can "lose power" after any operation (unsynced writes dropped, torn at
// 512-byte sector boundaries, or partly reordered), and can fail a chosen write or sync with an
// errno. In the style of SQLite's crash tests (sqlite.org/testing.html, "Crash testing"), which
// replace the VFS and cut power at a chosen point.
#pragma once

#include <algorithm>
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

  std::vector<op> ops;                       // every write / sync / truncate, in order
  std::optional<std::size_t> fail_write_at;  // the n-th write call (0-based) fails with fail_errno
  std::optional<std::size_t> fail_sync_at;   // the n-th sync call fails with fail_errno
  int fail_errno = EIO;
  std::size_t writes = 0, syncs = 0;

  int open_append(const std::filesystem::path& path) override {
    const std::string key = path.string();
    auto it = files_.find(key);
    if (it == files_.end())
      it = files_.emplace(key, static_cast<int>(content_.size())).first, content_.emplace_back();
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
  int open_write(const std::filesystem::path& path) override { return open_append(path); }
  ssize_t pwrite(int h, const char* data, std::size_t n, std::uint64_t offset) override {
    if (fail_write_at && writes++ == *fail_write_at) return errno = fail_errno, -1;
    if (!fail_write_at) ++writes;
    const int f = handles_.at(h);
    ops.push_back({op::write, f, offset, std::string(data, n)});
    std::string& c = content_[f];
    if (c.size() < offset + n) c.resize(offset + n, '\0');
    c.replace(offset, n, data, n);
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

  /// Records an operation that another layer performed on `path` (an SQLite VFS shim records
  /// SQLite's writes, syncs and truncations here), so every file shares one timeline.
  void record(const std::string& path, typename op::kind_t kind, std::uint64_t offset,
              std::string data = {}) {
    auto it = files_.find(path);
    if (it == files_.end())
      it = files_.emplace(path, static_cast<int>(content_.size())).first, content_.emplace_back();
    std::string& c = content_[it->second];
    if (kind == op::write) {
      if (c.size() < offset + data.size()) c.resize(offset + data.size(), '\0');
      c.replace(offset, data.size(), data);
    } else if (kind == op::truncate) {
      c.resize(offset, '\0');
    }
    ops.push_back({kind, it->second, offset, std::move(data)});
  }
  /// True when `path` has a recorded operation.
  bool knows(const std::string& path) const { return files_.count(path) > 0; }

  /// The bytes of `path` as a disk would hold them had power been lost after the first `n` ops
  /// (of every file): what the file held at its last sync among them survives; the writes and
  /// truncations after that sync survive wholly (keep_all), not at all (drop_unsynced), in order
  /// up to a point inside one write cut at a 512-byte sector boundary (torn), or sector by
  /// sector at random (reorder). A sector that did not survive keeps its old bytes (zeros past
  /// the old end of the file), as disks with power-safe overwrite do.
  std::string after_power_loss(const std::string& path, std::size_t n, loss how,
                               std::mt19937& rng) const {
    auto fit = files_.find(path);
    if (fit == files_.end()) return {};
    const int f = fit->second;
    std::string durable, all;
    std::vector<const op*> pending;
    auto apply = [](std::string& img, const op& o, std::uint64_t from,
                    std::uint64_t to) {  // bytes [from, to) of the op
      if (o.kind == op::truncate) return img.resize(o.offset, '\0');
      if (img.size() < o.offset + to) img.resize(o.offset + to, '\0');
      img.replace(o.offset + from, to - from, o.data, from, to - from);
    };
    for (std::size_t i = 0; i < n && i < ops.size(); ++i) {
      const op& o = ops[i];
      if (o.file != f) continue;
      if (o.kind == op::sync) {
        durable = all;
        pending.clear();
        continue;
      }
      apply(all, o, 0, o.data.size());
      pending.push_back(&o);
    }
    constexpr std::uint64_t sector = 512;
    switch (how) {
      case loss::keep_all:
        return all;
      case loss::drop_unsynced:
        return durable;
      case loss::torn: {
        std::string img = durable;
        if (pending.empty()) return img;
        const std::size_t j = rng() % pending.size();
        for (std::size_t k = 0; k < j; ++k) apply(img, *pending[k], 0, pending[k]->data.size());
        const op& o = *pending[j];
        if (o.kind == op::truncate) return img;
        // the first sectors of write j reach the disk (a cut at a sector boundary of the file)
        const std::uint64_t end = o.offset + o.data.size();
        const std::uint64_t first = (o.offset / sector + 1) * sector;
        const std::uint64_t cuts = end > first ? (end - first) / sector + 1 : 1;
        const std::uint64_t cut = std::min<std::uint64_t>(end, first + (rng() % cuts) * sector);
        if (cut > o.offset && rng() % 4 != 0) apply(img, o, 0, cut - o.offset);
        return img;
      }
      case loss::reorder: {
        std::string img = durable;
        for (const op* o : pending) {
          if (o->kind == op::truncate) {
            if (rng() % 2) apply(img, *o, 0, 0);
            continue;
          }
          for (std::uint64_t lo = 0; lo < o->data.size();) {
            const std::uint64_t hi = std::min<std::uint64_t>(
                o->data.size(), ((o->offset + lo) / sector + 1) * sector - o->offset);
            if (rng() % 2) apply(img, *o, lo, hi);
            lo = hi;
          }
        }
        return img;
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
