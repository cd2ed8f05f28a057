#pragma once
/// @file jsonl_lines.hpp
/// The line reader of the JSONL format: `load_options`, and the sources that cut an input (text in
/// memory or a file read piece by piece into reused buffers) into pieces ending at line ends. The
/// parallel loader (jsonl_read.hpp) parses those pieces with the record codec.

#include <simdjson.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <concepts>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <ranges>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/io/atomic_write.hpp"

namespace memhealth {

// ---------------------------------------------------------------------- reading

/// How JSONL is read. The result never depends on these options: any thread count and piece size
/// give the same records, issues (same line numbers) and `lines_read`, in input order.
struct load_options {
  /// Parsing threads. 0 = `std::thread::hardware_concurrency()` capped at 8; 1 = parse
  /// sequentially on the calling thread. With more than one, that many worker threads parse
  /// pieces of the input while the calling thread puts the pieces back in input order (and calls
  /// `read_jsonl_each`'s callback).
  unsigned threads = 0;
  /// Size of the pieces the input is cut into (at line ends; a longer line makes a longer piece).
  /// Each worker holds one piece of a file in a reused buffer; at most `2 * threads + 2` parsed
  /// pieces wait to be handed to `read_jsonl_each`'s callback (`16 * threads + 16` when the
  /// records are kept). An input (text or regular file) shorter than two pieces is
  /// parsed on the calling thread alone. Values below 1 count as 1.
  std::size_t piece_bytes = std::size_t{4} << 20;
};

namespace detail::jsonl {

inline unsigned resolve_threads(unsigned threads) noexcept {
  if (threads != 0) return threads;
  return std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
}

// True when a file is read on the calling thread alone: one thread asked for, or a regular file
// shorter than two pieces (threads would cost more than they save).
inline bool read_sequentially(const std::filesystem::path& path, unsigned threads,
                              std::size_t piece) {
  if (threads == 1) return true;
  std::error_code ec;
  const auto n = std::filesystem::file_size(path, ec);
  return !ec && n / 2 < piece;
}

// One piece of the input, handed to a worker: bytes up to `readable_end` may be read.
struct piece_view {
  std::size_t index = 0;
  const char* begin = nullptr;
  std::size_t size = 0;
  const char* readable_end = nullptr;
};

// A worker's reused input buffer with SIMDJSON_PADDING spare bytes.
struct piece_buffer {
  std::unique_ptr<char[]> data;
  std::size_t capacity = 0;
  void reserve(std::size_t n, std::size_t keep) {  // keeps the first `keep` bytes
    if (n <= capacity) return;
    std::unique_ptr<char[]> bigger(new char[n + simdjson::SIMDJSON_PADDING]);
    if (keep) std::memcpy(bigger.get(), data.get(), keep);
    data = std::move(bigger);
    capacity = n;
  }
};

// Cuts text already in memory into pieces (no copy). Thread-safe.
class text_source {
 public:
  text_source(const char* data, std::size_t len, const char* readable_end, std::size_t piece)
      : pos_(data), end_(data + len), readable_end_(readable_end), piece_(piece) {}
  bool next(piece_view& out, piece_buffer&) {
    std::lock_guard lock(m_);
    if (pos_ == end_) return false;
    const char* cut = end_;
    if (static_cast<std::size_t>(end_ - pos_) > piece_) {
      const char* q = pos_ + piece_;
      if (const void* nl = std::memchr(q, '\n', static_cast<std::size_t>(end_ - q)))
        cut = static_cast<const char*>(nl) + 1;
    }
    out = piece_view{index_++, pos_, static_cast<std::size_t>(cut - pos_), readable_end_};
    pos_ = cut;
    return true;
  }

 private:
  std::mutex m_;
  const char* pos_;
  const char* end_;
  const char* readable_end_;
  std::size_t piece_;
  std::size_t index_ = 0;
};

// Reads a file piece by piece into the caller's buffer: the bytes after the last line end of a
// piece are carried over to the next one. Thread-safe (reads are serialised; parsing is not).
class file_source {
 public:
  file_source(const std::filesystem::path& path, std::size_t piece)
      : f_(std::fopen(path.c_str(), "rb"), &std::fclose), path_(path), piece_(piece) {
    if (!f_) throw_io("read_jsonl: cannot open", path, errno);
  }
  bool next(piece_view& out, piece_buffer& buf) {
    std::lock_guard lock(m_);
    std::size_t have = carry_.size();
    buf.reserve(std::max(piece_, 2 * have), 0);
    if (have) std::memcpy(buf.data.get(), carry_.data(), have);
    std::size_t cut = 0;
    for (;;) {
      if (!eof_) {
        errno = 0;
        const std::size_t n = std::fread(buf.data.get() + have, 1, buf.capacity - have, f_.get());
        if (n == 0) {
          if (std::ferror(f_.get()))
            throw_io("read_jsonl: cannot read", path_, errno ? errno : EIO);
          eof_ = true;
        }
        have += n;
      }
      if (eof_) {
        cut = have;
        break;
      }
      const std::string_view got(buf.data.get(), have);
      if (const std::size_t nl = got.rfind('\n'); nl != std::string_view::npos) {
        cut = nl + 1;
        break;
      }
      if (have == buf.capacity)
        buf.reserve(2 * buf.capacity, have);  // one line longer than a piece
    }
    carry_.assign(buf.data.get() + cut, have - cut);
    if (cut == 0) return false;
    out = piece_view{index_++, buf.data.get(), cut,
                     buf.data.get() + buf.capacity + simdjson::SIMDJSON_PADDING};
    return true;
  }
  std::size_t size_hint() const {  // 0 when unknown
    std::error_code ec;
    const auto n = std::filesystem::file_size(path_, ec);
    return ec ? 0 : static_cast<std::size_t>(n);
  }

 private:
  std::mutex m_;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f_;
  std::filesystem::path path_;
  std::size_t piece_;
  std::string carry_;
  std::size_t index_ = 0;
  bool eof_ = false;
};

}  // namespace detail::jsonl

}  // namespace memhealth
