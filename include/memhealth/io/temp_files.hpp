#pragma once
/// @file temp_files.hpp
/// Temporary files that become outputs: their names, a registry of the live ones (for a signal
/// handler), and the stale ones a killed run left behind.
///
/// Every file memhealth writes is built under a temporary name in the target's directory and
/// renamed into place when complete (`atomic_write`, `sqlite_store::create`). The name is
/// `.memhealth-tmp-<pid>-<n>-<target file name>`: hidden, recognisable, and naming the process
/// that made it.
/// - `live_temporaries` holds the paths of the temporaries this process has open, in
///   preallocated slots, so a signal handler can remove them with `unlink` only
///   (`live_temporaries::unlink_all` is async-signal-safe). The writers register a path before
///   they create the file and unregister it after the rename (or removal).
/// - `stale_temporaries(dir)` lists temporaries in a directory whose process is gone (or is this
///   process under a recycled pid without having registered them); `remove_stale_temporaries`
///   removes those and reports the ones of processes still running.

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#if !defined(_WIN32)
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>
#endif

namespace memhealth {

/// Prefix of every temporary file memhealth creates: `.memhealth-tmp-<pid>-<n>-<name>`.
inline constexpr std::string_view temp_file_prefix = ".memhealth-tmp-";

namespace detail {
inline long current_pid() noexcept {
#if defined(_WIN32)
  return 0;
#else
  return static_cast<long>(::getpid());
#endif
}
}  // namespace detail

/// A fresh temporary name for `target` in `target`'s directory:
/// `<dir>/.memhealth-tmp-<pid>-<n>-<file name>`, n counting up in this process.
inline std::filesystem::path temp_path_for(const std::filesystem::path& target) {
  static std::atomic<unsigned> counter{0};
  const std::filesystem::path dir =
      target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  return dir / (std::string(temp_file_prefix) + std::to_string(detail::current_pid()) + "-" +
                std::to_string(counter++) + "-" + target.filename().string());
}

/// The registry of this process's live temporary files: a fixed number of slots of preallocated
/// C strings, so a signal handler can walk it without allocating. Registration claims a free
/// slot with a compare-and-swap; a path too long for a slot, or a full registry, is simply not
/// registered (the writers still remove their temporaries on every error path; only a signal
/// would leave it, and the next run reports it as stale).
class live_temporaries {
 public:
  static constexpr std::size_t slots = 32;
  static constexpr std::size_t max_path = 4096;

  /// Registers `path`; returns its slot, or -1 when it could not be registered.
  static int add(const std::filesystem::path& path) noexcept {
    const std::string& s = path.native();
    if (s.size() + 1 > max_path) return -1;
    for (std::size_t i = 0; i < slots; ++i) {
      int expected = free_slot;
      if (state()[i].compare_exchange_strong(expected, filling, std::memory_order_acq_rel)) {
        std::memcpy(paths()[i], s.c_str(), s.size() + 1);
        state()[i].store(live, std::memory_order_release);
        return static_cast<int>(i);
      }
    }
    return -1;
  }

  /// Releases a slot from `add` (-1 is ignored).
  static void remove(int slot) noexcept {
    if (slot < 0 || static_cast<std::size_t>(slot) >= slots) return;
    state()[static_cast<std::size_t>(slot)].store(free_slot, std::memory_order_release);
  }

  /// True when `path` is registered by this process.
  static bool contains(const std::filesystem::path& path) noexcept {
    for (std::size_t i = 0; i < slots; ++i)
      if (state()[i].load(std::memory_order_acquire) == live && path.native() == paths()[i])
        return true;
    return false;
  }

  /// Number of registered paths.
  static std::size_t count() noexcept {
    std::size_t n = 0;
    for (std::size_t i = 0; i < slots; ++i)
      n += state()[i].load(std::memory_order_acquire) == live ? 1 : 0;
    return n;
  }

  /// Unlinks every registered path. Async-signal-safe: lock-free atomic loads and `unlink` only.
  static void unlink_all() noexcept {
#if !defined(_WIN32)
    for (std::size_t i = 0; i < slots; ++i)
      if (state()[i].load(std::memory_order_acquire) == live) (void)::unlink(paths()[i]);
#endif
  }

 private:
  static constexpr int free_slot = 0, filling = 1, live = 2;
  static std::atomic<int>* state() noexcept {
    static std::atomic<int> s[slots] = {};
    return s;
  }
  static char (*paths() noexcept)[max_path] {
    static char p[slots][max_path] = {};
    return p;
  }
  static_assert(std::atomic<int>::is_always_lock_free,
                "the signal handler needs lock-free atomics");
};

/// RAII registration of one or more temporary paths in `live_temporaries`.
class temp_registration {
 public:
  temp_registration() = default;
  explicit temp_registration(const std::filesystem::path& p) { add(p); }
  temp_registration(const temp_registration&) = delete;
  temp_registration& operator=(const temp_registration&) = delete;
  ~temp_registration() { release(); }
  void add(const std::filesystem::path& p) {
    if (n_ < max) slot_[n_++] = live_temporaries::add(p);
  }
  /// Unregisters every path (after the rename, or after the files were removed).
  void release() noexcept {
    for (std::size_t i = 0; i < n_; ++i) live_temporaries::remove(slot_[i]);
    n_ = 0;
  }

 private:
  static constexpr std::size_t max = 4;
  int slot_[max] = {-1, -1, -1, -1};
  std::size_t n_ = 0;
};

/// A temporary file found in a directory (see `stale_temporaries`).
struct stale_temporary {
  std::filesystem::path path;
  long pid = 0;          ///< the process named in the file name
  bool alive = false;    ///< that process is still running (the file is then left alone)
  bool removed = false;  ///< set by `remove_stale_temporaries`
};

/// True when a process with this pid exists (on Windows: always true, nothing is removed).
inline bool process_alive(long pid) noexcept {
#if defined(_WIN32)
  (void)pid;
  return true;
#else
  if (pid <= 0) return false;
  if (::kill(static_cast<pid_t>(pid), 0) == 0) return true;
  return errno == EPERM;  // exists, owned by someone else
#endif
}

/// The pid in a temporary's file name `.memhealth-tmp-<pid>-<n>-...`, or -1 when the name is
/// not one of memhealth's temporaries.
inline long temp_file_pid(std::string_view name) noexcept {
  if (!name.starts_with(temp_file_prefix)) return -1;
  name.remove_prefix(temp_file_prefix.size());
  long pid = 0;
  std::size_t i = 0;
  for (; i < name.size() && name[i] >= '0' && name[i] <= '9' && i < 12; ++i)
    pid = pid * 10 + (name[i] - '0');
  if (i == 0 || i >= name.size() || name[i] != '-') return -1;
  return pid;
}

/// memhealth temporaries in `dir` that no live writer owns: those of a process that is gone, and
/// this process's own that are not registered (a previous process with the same pid). Those of
/// another running process are listed with `alive = true`. A directory that cannot be listed
/// gives an empty list. @complexity O(entries of dir).
inline std::vector<stale_temporary> stale_temporaries(const std::filesystem::path& dir) {
  std::vector<stale_temporary> out;
  std::error_code ec;
  const std::filesystem::path d = dir.empty() ? std::filesystem::path(".") : dir;
  for (std::filesystem::directory_iterator it(d, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const long pid = temp_file_pid(name);
    if (pid < 0) continue;
    stale_temporary t;
    t.path = it->path();
    t.pid = pid;
    if (pid == detail::current_pid()) {
      if (live_temporaries::contains(t.path)) continue;
      t.alive = false;
    } else {
      t.alive = process_alive(pid);
    }
    out.push_back(std::move(t));
  }
  std::sort(out.begin(), out.end(),
            [](const stale_temporary& a, const stale_temporary& b) { return a.path < b.path; });
  return out;
}

/// `stale_temporaries(dir)`, removing those whose process is gone (`removed` set when the
/// removal worked). @return every temporary found, removed or not.
inline std::vector<stale_temporary> remove_stale_temporaries(const std::filesystem::path& dir) {
  auto found = stale_temporaries(dir);
  for (auto& t : found) {
    if (t.alive) continue;
    std::error_code ec;
    t.removed = std::filesystem::remove(t.path, ec) && !ec;
  }
  return found;
}

}  // namespace memhealth
