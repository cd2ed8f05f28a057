// A simulated file system for the write-ahead log writer and atomic_write (io/file_io.hpp): it
// records every write, sync barrier, create, rename, unlink and directory sync, can "lose power"
// after any operation (unsynced writes dropped, torn at 512-byte sector boundaries, or partly
// reordered; directory entries not yet made durable by a directory sync dropped, or kept up to
// a point), and can fail a chosen write or sync, every rename, or every create in a read-only
// directory, with an errno. In the style of SQLite's crash tests (sqlite.org/testing.html,
// "Crash testing"), which replace the VFS and cut power at a chosen point.
//
// Two kinds of names: a file made by open_append or record() is named durably at once (the
// write-ahead log writer syncs its directory itself; its tests predate the directory model); a
// file made by open_new, and every rename and unlink, changes the directory only in memory until
// sync_directory of that directory, as POSIX file systems do (a rename is atomic, though: after
// power loss the name holds the old file or the new one).
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "memhealth/io/file_io.hpp"

namespace memhealth::test {

class sim_file_io final : public file_io {
 public:
  /// One recorded operation.
  struct op {
    enum kind_t { write, sync, truncate, create, rename, unlink, sync_dir } kind;
    int file;                  // file number (an inode: per created file; -1 for sync_dir)
    std::uint64_t offset = 0;  // write: where the bytes went; truncate: the new size
    std::string data;          // write: the bytes
    std::string path;          // create / unlink: the name; rename: the old name; sync_dir: dir
    std::string to;            // rename: the new name
  };
  /// How power is lost.
  enum class loss { keep_all, drop_unsynced, torn, reorder };

  std::vector<op> ops;                       // every operation recorded, in order
  std::optional<std::size_t> fail_write_at;  // the n-th write call (0-based) fails with fail_errno
  std::optional<std::size_t> fail_sync_at;   // the n-th sync call fails with fail_errno
  int fail_errno = EIO;
  std::optional<int> fail_rename_errno;  // every rename fails with this errno
  std::set<std::string> read_only_dirs;  // create / rename / unlink in these fail with EACCES
  std::size_t writes = 0, syncs = 0;

  int open_append(const std::filesystem::path& path) override {
    const std::string key = path.string();
    auto it = files_.find(key);
    if (it == files_.end()) {
      it = files_.emplace(key, static_cast<int>(content_.size())).first, content_.emplace_back();
      born_[key] = it->second;
    }
    handles_[next_] = it->second;
    return next_++;
  }
  int open_new(const std::filesystem::path& path) override {
    const std::string key = path.string();
    if (read_only_dirs.count(dir_of(key))) return errno = EACCES, -1;
    if (files_.count(key)) return errno = EEXIST, -1;
    const int f = static_cast<int>(content_.size());
    content_.emplace_back();
    files_[key] = f;
    renamed_dirs_.insert(dir_of(key));
    ops.push_back({op::create, f, 0, {}, key, {}});
    handles_[next_] = f;
    return next_++;
  }
  ssize_t write(int h, const char* data, std::size_t n) override {
    if (fail_write_at && writes++ == *fail_write_at) return errno = fail_errno, -1;
    if (!fail_write_at) ++writes;
    const int f = handles_.at(h);
    ops.push_back({op::write, f, content_[f].size(), std::string(data, n), {}, {}});
    content_[f].append(data, n);
    return static_cast<ssize_t>(n);
  }
  int open_write(const std::filesystem::path& path) override { return open_append(path); }
  ssize_t pwrite(int h, const char* data, std::size_t n, std::uint64_t offset) override {
    if (fail_write_at && writes++ == *fail_write_at) return errno = fail_errno, -1;
    if (!fail_write_at) ++writes;
    const int f = handles_.at(h);
    ops.push_back({op::write, f, offset, std::string(data, n), {}, {}});
    std::string& c = content_[f];
    if (c.size() < offset + n) c.resize(offset + n, '\0');
    c.replace(offset, n, data, n);
    return static_cast<ssize_t>(n);
  }
  int sync(int h) override {
    if (fail_sync_at && syncs++ == *fail_sync_at) return errno = fail_errno, -1;
    if (!fail_sync_at) ++syncs;
    ops.push_back({op::sync, handles_.at(h), 0, {}, {}, {}});
    return 0;
  }
  int truncate(int h, std::uint64_t size) override {
    const int f = handles_.at(h);
    ops.push_back({op::truncate, f, size, {}, {}, {}});
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
  void sync_directory(const std::filesystem::path& dir) override {
    // recorded only where names changed, so a log writer's timeline is as it always was
    const std::string key = dir.string().empty() ? std::string(".") : dir.string();
    if (renamed_dirs_.count(key)) ops.push_back({op::sync_dir, -1, 0, {}, key, {}});
  }
  int rename(const std::filesystem::path& from, const std::filesystem::path& to) override {
    if (fail_rename_errno) return errno = *fail_rename_errno, -1;
    const std::string a = from.string(), b = to.string();
    if (read_only_dirs.count(dir_of(a)) || read_only_dirs.count(dir_of(b)))
      return errno = EACCES, -1;
    auto it = files_.find(a);
    if (it == files_.end()) return errno = ENOENT, -1;
    const int f = it->second;
    files_.erase(it);
    files_[b] = f;
    renamed_dirs_.insert(dir_of(a));
    renamed_dirs_.insert(dir_of(b));
    ops.push_back({op::rename, f, 0, {}, a, b});
    return 0;
  }
  int unlink(const std::filesystem::path& path) override {
    const std::string key = path.string();
    if (read_only_dirs.count(dir_of(key))) return errno = EACCES, -1;
    auto it = files_.find(key);
    if (it == files_.end()) return errno = ENOENT, -1;
    renamed_dirs_.insert(dir_of(key));
    ops.push_back({op::unlink, it->second, 0, {}, key, {}});
    files_.erase(it);
    return 0;
  }
  std::optional<std::string> read_file(const std::filesystem::path& path) override {
    auto it = files_.find(path.string());
    if (it == files_.end()) return errno = ENOENT, std::nullopt;
    return content_[it->second];
  }
  /// The names that exist now (before any power loss), in order.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& [name, f] : files_) out.push_back(name);
    return out;
  }

  /// Records an operation that another layer performed on `path` (an SQLite VFS shim records
  /// SQLite's writes, syncs and truncations here), so every file shares one timeline.
  void record(const std::string& path, typename op::kind_t kind, std::uint64_t offset,
              std::string data = {}) {
    auto it = files_.find(path);
    if (it == files_.end()) {
      it = files_.emplace(path, static_cast<int>(content_.size())).first, content_.emplace_back();
      born_[path] = it->second;
    }
    std::string& c = content_[it->second];
    if (kind == op::write) {
      if (c.size() < offset + data.size()) c.resize(offset + data.size(), '\0');
      c.replace(offset, data.size(), data);
    } else if (kind == op::truncate) {
      c.resize(offset, '\0');
    }
    ops.push_back({kind, it->second, offset, std::move(data), {}, {}});
  }
  /// True when `path` has a recorded operation.
  bool knows(const std::string& path) const { return files_.count(path) > 0; }

  /// The names of the disk had power been lost after the first `n` ops: a name made by
  /// open_append or record() is always there; creates, renames and unlinks in a directory
  /// survive once a later sync_directory of it is among the `n` ops, and those after it
  /// survive all (keep_all), none (drop_unsynced), or the first few in order (torn, reorder:
  /// a journaling file system commits them in order, and each rename whole).
  std::map<std::string, int> names_after_power_loss(std::size_t n, loss how,
                                                    std::mt19937& rng) const {
    std::map<std::string, int> live = born_, durable = born_;
    std::vector<const op*> pending;  // name changes no directory sync has made durable yet
    auto apply = [](std::map<std::string, int>& names, const op& o) {
      if (o.kind == op::create) names[o.path] = o.file;
      if (o.kind == op::unlink || o.kind == op::rename) names.erase(o.path);
      if (o.kind == op::rename) names[o.to] = o.file;
    };
    for (std::size_t i = 0; i < n && i < ops.size(); ++i) {
      const op& o = ops[i];
      if (o.kind == op::create || o.kind == op::rename || o.kind == op::unlink) {
        apply(live, o);
        pending.push_back(&o);
      } else if (o.kind == op::sync_dir) {
        std::vector<const op*> rest;
        for (const op* p : pending) {
          if (dir_of(p->kind == op::rename ? p->to : p->path) == o.path)
            apply(durable, *p);
          else
            rest.push_back(p);
        }
        pending = std::move(rest);
      }
    }
    if (how == loss::keep_all) return live;
    if (how == loss::drop_unsynced || pending.empty()) return durable;
    const std::size_t k = rng() % (pending.size() + 1);
    for (std::size_t j = 0; j < k; ++j) apply(durable, *pending[j]);
    return durable;
  }

  /// The bytes of `path` as a disk would hold them had power been lost after the first `n` ops
  /// (of every file; empty when the name does not survive, see names_after_power_loss): what
  /// the file held at its last sync among them survives; the writes and truncations after that
  /// sync survive wholly (keep_all), not at all (drop_unsynced), in order up to a point inside
  /// one write cut at a 512-byte sector boundary (torn), or sector by sector at random
  /// (reorder). A sector that did not survive keeps its old bytes (zeros past the old end of
  /// the file), as disks with power-safe overwrite do.
  std::string after_power_loss(const std::string& path, std::size_t n, loss how,
                               std::mt19937& rng) const {
    const std::map<std::string, int> names = names_after_power_loss(n, how, rng);
    auto it = names.find(path);
    if (it == names.end()) return {};
    return image(it->second, n, how, rng);
  }

  /// Every file of the disk had power been lost after the first `n` ops: name -> bytes (one
  /// draw of names_after_power_loss, then after_power_loss's rule per file).
  std::map<std::string, std::string> disk_after_power_loss(std::size_t n, loss how,
                                                           std::mt19937& rng) const {
    std::map<std::string, std::string> disk;
    for (const auto& [name, f] : names_after_power_loss(n, how, rng))
      disk[name] = image(f, n, how, rng);
    return disk;
  }

 private:
  static std::string dir_of(const std::string& path) {
    const std::string d = std::filesystem::path(path).parent_path().string();
    return d.empty() ? std::string(".") : d;
  }

  // The bytes of file number f after power loss following the first n ops (after_power_loss).
  std::string image(int f, std::size_t n, loss how, std::mt19937& rng) const {
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
      if (o.file != f || (o.kind != op::write && o.kind != op::sync && o.kind != op::truncate))
        continue;
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

  std::map<std::string, int> files_;  // the names now: name -> file number
  std::map<std::string, int> born_;   // names made by open_append / record(): durable at once
  std::vector<std::string> content_;
  std::map<int, int> handles_;
  std::map<int, int> locks_;
  std::set<std::string> renamed_dirs_;  // directories where open_new / rename / unlink ran
  int next_ = 3;
};

}  // namespace memhealth::test
