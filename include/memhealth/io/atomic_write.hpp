#pragma once
/// @file atomic_write.hpp
/// `atomic_write`: the one way memhealth writes a file (JSONL stores, plans, run ledgers, log
/// compaction, the tool's outputs). The bytes go to a temporary file in the target's directory,
/// which is fsync'ed, renamed over the target, and then the directory is fsync'ed so the rename
/// itself survives a crash. Readers see the old file or the complete new one, never a partial
/// file; after a failure the target is untouched and no temporary file is left behind.

#include <atomic>
#include <cerrno>
#include <concepts>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>

#if defined(_WIN32)
#include <fstream>
#endif

#include "memhealth/config.hpp"
#if !defined(_WIN32)
#include "memhealth/io/file_io.hpp"
#endif
#include "memhealth/io/temp_files.hpp"

namespace memhealth {

#if defined(_WIN32)
class file_io;  // io/file_io.hpp is POSIX only; atomic_write ignores `io` on Windows
#endif

namespace detail {

// memhealth::error(error_code::io) naming the path and the system's reason.
[[noreturn]] inline void throw_io(const std::string& what, const std::filesystem::path& p,
                                  int err) {
  throw error(error_code::io, what + " '" + p.string() + "': " + std::strerror(err));
}

}  // namespace detail

/// Writes a file atomically and durably from chunks: `fill(std::string& buffer, auto& flush)`
/// appends bytes to `buffer` and may call `flush()` (which writes and clears the buffer) whenever
/// it holds enough; what is left in the buffer when `fill` returns is written too.
/// Steps: create `.memhealth-tmp-<pid>-<n>-<name>` in the target's directory (exclusive, mode
/// 0644; registered in `live_temporaries` while it exists, so a signal handler can remove it),
/// write, sync the file (`fdatasync`: its data and size), close, rename over `target`, fsync the
/// directory (best effort: some file systems refuse fsync on a directory; the file's own data
/// is synced either way).
/// Every step goes through `io` (io/file_io.hpp; null = `posix_file_io::instance()`), so a test
/// can cut power between any two of them or fail one; on Windows `io` is ignored.
/// @throws memhealth::error with `error_code::io`, naming the path and the system's reason, when
///         the temporary file cannot be created (missing or read-only directory), written, synced,
///         closed or renamed; exceptions from `fill` propagate. In every failure the temporary
///         file is removed and `target` is left as it was.
/// @complexity O(bytes written); memory: whatever `fill` keeps in the buffer.
template <class Fill>
requires(!std::convertible_to<Fill, std::string_view>) void atomic_write(
    const std::filesystem::path& target, Fill&& fill, [[maybe_unused]] file_io* io = nullptr) {
  const std::filesystem::path dir =
      target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  const std::filesystem::path tmp = temp_path_for(target);
#if defined(_WIN32)
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f)
      throw error(error_code::io,
                  "atomic_write: cannot create temporary file '" + tmp.string() + "'");
    std::string buf;
    auto flush = [&] {
      f.write(buf.data(), static_cast<std::streamsize>(buf.size()));
      buf.clear();
      if (!f) throw error(error_code::io, "atomic_write: cannot write '" + tmp.string() + "'");
    };
    try {
      fill(buf, flush);
      flush();
      f.close();
      if (!f) throw error(error_code::io, "atomic_write: cannot write '" + tmp.string() + "'");
    } catch (...) {
      f.close();
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      throw;
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, target, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw error(error_code::io, "atomic_write: cannot rename over '" + target.string() + "'");
  }
#else
  file_io& fs = io ? *io : posix_file_io::instance();
  temp_registration registered(
      tmp);  // before the file exists: a signal can only find it registered
  const int fd = fs.open_new(tmp);
  if (fd < 0) detail::throw_io("atomic_write: cannot create temporary file", tmp, errno);
  bool failed = false;  // set once fail() has closed and removed the temporary file
  auto fail = [&](const char* what, const std::filesystem::path& p, int err) {
    failed = true;
    fs.close(fd);
    fs.unlink(tmp);
    detail::throw_io(what, p, err);
  };
  std::string buf;
  auto flush = [&] {
    const char* p = buf.data();
    std::size_t n = buf.size();
    while (n > 0) {
      const ssize_t w = fs.write(fd, p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        fail("atomic_write: cannot write", tmp, errno);
      }
      p += w;
      n -= static_cast<std::size_t>(w);
    }
    buf.clear();
  };
  try {
    fill(buf, flush);
    flush();
  } catch (...) {
    if (!failed) {
      fs.close(fd);
      fs.unlink(tmp);
    }
    throw;
  }
  if (fs.sync(fd) != 0) fail("atomic_write: cannot sync", tmp, errno);
  if (fs.close(fd) != 0) {
    const int err = errno;
    fs.unlink(tmp);
    detail::throw_io("atomic_write: cannot close", tmp, err);
  }
  if (fs.rename(tmp, target) != 0) {
    const int err = errno;
    fs.unlink(tmp);
    detail::throw_io("atomic_write: cannot rename over", target, err);
  }
  fs.sync_directory(dir);
#endif
}

/// Replaces `target` with exactly `content`, atomically and durably (see the chunked overload).
/// @throws memhealth::error(error_code::io) as the chunked overload; `target` is then untouched.
inline void atomic_write(const std::filesystem::path& target, std::string_view content,
                         file_io* io = nullptr) {
  atomic_write(
      target, [content](std::string& buf, auto&) { buf.assign(content); }, io);
}

}  // namespace memhealth
