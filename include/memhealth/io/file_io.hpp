#pragma once
/// @file file_io.hpp
/// The file operations of the repair write-ahead log writer (`wal_writer`, repair/wal.hpp) and of
/// `atomic_write` (io/atomic_write.hpp, the way every output file is written), behind one small
/// interface so that a test can replace the file system: record every write, sync barrier,
/// rename and directory sync and then "lose power" at a chosen point, or fail a chosen write,
/// fsync, create or rename.
/// The same idea as LevelDB's `Env` and SQLite's VFS (which its crash tests replace; see
/// sqlite.org/testing.html, "Crash testing"). `posix_file_io` is the real thing and the default.
///
/// Handles are small integers owned by the implementation. Every function reports failure the
/// POSIX way (-1 with `errno` set; `read_file` returns nullopt with errno), so the writer's
/// error handling is the same for real and simulated failures.

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/types.h>
#include <unistd.h>

namespace memhealth {

/// File operations used by the write-ahead log writer and `atomic_write` (see the file comment).
class file_io {
 public:
  virtual ~file_io() = default;
  /// Opens `path` for appending, creating it (mode 0644). @return a handle, or -1 (errno).
  virtual int open_append(const std::filesystem::path& path) = 0;
  /// Creates `path` as a new empty file open for writing (mode 0644, `O_CREAT|O_EXCL`): never
  /// opens an existing file. Its directory entry is durable only after `sync_directory`.
  /// @return a handle, or -1 with errno (EEXIST when `path` exists, EACCES or EROFS when the
  ///         directory is read-only, ENOENT when it does not exist, ...).
  virtual int open_new(const std::filesystem::path& path) = 0;
  /// Writes up to `n` bytes at the end of the file. @return bytes written, or -1 (errno).
  virtual ssize_t write(int handle, const char* data, std::size_t n) = 0;
  /// Opens `path` for writing at chosen offsets (not appending), creating it (mode 0644).
  /// @return a handle, or -1 (errno).
  virtual int open_write(const std::filesystem::path& path) = 0;
  /// Writes up to `n` bytes at byte `offset` (`pwrite`), growing the file as needed.
  /// @return bytes written, or -1 (errno).
  virtual ssize_t pwrite(int handle, const char* data, std::size_t n, std::uint64_t offset) = 0;
  /// Makes everything written to the file durable (`fdatasync`). @return 0, or -1 (errno).
  virtual int sync(int handle) = 0;
  /// Cuts the file to `size` bytes. @return 0, or -1 (errno).
  virtual int truncate(int handle, std::uint64_t size) = 0;
  /// Takes an exclusive advisory lock without waiting (`flock(LOCK_EX|LOCK_NB)`).
  /// @return 0, or -1 with errno EWOULDBLOCK when another handle holds it.
  virtual int try_lock(int handle) = 0;
  /// Closes the handle (releasing its lock). @return 0, or -1 (errno).
  virtual int close(int handle) = 0;
  /// Makes the directory entries of `dir` durable (`fsync` of the directory): new files, renames
  /// and removals in it survive a power loss only after this. Best effort: some file systems
  /// refuse `fsync` on a directory, and the failure is not reported.
  virtual void sync_directory(const std::filesystem::path& dir) = 0;
  /// Renames `from` to `to`, atomically replacing `to` when it exists (`rename(2)`); durable only
  /// after `sync_directory` of `to`'s directory. @return 0, or -1 (errno).
  virtual int rename(const std::filesystem::path& from, const std::filesystem::path& to) = 0;
  /// Removes the directory entry `path` (`unlink(2)`). @return 0, or -1 (errno; ENOENT when
  /// there is no such file).
  virtual int unlink(const std::filesystem::path& path) = 0;
  /// The file's bytes, or nullopt when it does not exist (errno ENOENT), is not a regular file
  /// (EISDIR, EINVAL) or cannot be read.
  virtual std::optional<std::string> read_file(const std::filesystem::path& path) = 0;
};

/// The real file system through POSIX calls. Stateless; `instance()` is shared.
class posix_file_io final : public file_io {
 public:
  /// The process-wide instance (the default of every writer).
  static posix_file_io& instance() noexcept {
    static posix_file_io io;
    return io;
  }
  int open_append(const std::filesystem::path& path) override {
    return ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  }
  int open_new(const std::filesystem::path& path) override {
    return ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  }
  ssize_t write(int handle, const char* data, std::size_t n) override {
    return ::write(handle, data, n);
  }
  int open_write(const std::filesystem::path& path) override {
    return ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  }
  ssize_t pwrite(int handle, const char* data, std::size_t n, std::uint64_t offset) override {
    return ::pwrite(handle, data, n, static_cast<off_t>(offset));
  }
  int sync(int handle) override { return ::fdatasync(handle); }
  int truncate(int handle, std::uint64_t size) override {
    return ::ftruncate(handle, static_cast<off_t>(size));
  }
  int try_lock(int handle) override { return ::flock(handle, LOCK_EX | LOCK_NB); }
  int close(int handle) override { return ::close(handle); }
  void sync_directory(const std::filesystem::path& dir) override {
    const int d = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d < 0) return;
    (void)::fsync(d);
    ::close(d);
  }
  int rename(const std::filesystem::path& from, const std::filesystem::path& to) override {
    return ::rename(from.c_str(), to.c_str());
  }
  int unlink(const std::filesystem::path& path) override { return ::unlink(path.c_str()); }
  std::optional<std::string> read_file(const std::filesystem::path& path) override {
    std::error_code ec;
    const auto st = std::filesystem::status(path, ec);
    if (std::filesystem::is_directory(st)) {
      errno = EISDIR;
      return std::nullopt;
    }
    if (std::filesystem::exists(st) &&
        !std::filesystem::is_regular_file(st)) {  // a device or a pipe: never read it to the end
      errno = EINVAL;
      return std::nullopt;
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      errno = std::filesystem::exists(path, ec) ? EACCES : ENOENT;
      return std::nullopt;
    }
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) {
      errno = EIO;
      return std::nullopt;
    }
    return bytes;
  }
};

}  // namespace memhealth
