#pragma once
/// @file jsonl_read.hpp
/// The parallel JSONL loader: `parse_jsonl`, `read_jsonl` and `read_jsonl_each` parse the pieces
/// of the line reader (jsonl_lines.hpp) with the record decoder (record_decode.hpp) on several
/// threads, with the same result as one thread. Link with `-lsimdjson` and `-pthread`.

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
#include "memhealth/io/jsonl_lines.hpp"
#include "memhealth/io/load_issue.hpp"
#include "memhealth/io/record_decode.hpp"
#include "memhealth/record/memory_record.hpp"
#include "memhealth/worker_thread.hpp"

namespace memhealth {

namespace detail::jsonl {

// Parses the pieces of `src` on `threads` worker threads; the calling thread takes the parsed
// pieces in input order, shifts their issues' line numbers by the lines of earlier pieces, adds
// issues and lines_read to `out` and hands the records to `sink(std::vector<memory_record>&,
// std::size_t piece_bytes)`. Exceptions from a worker (I/O, bad_alloc) or the sink stop every
// worker and are rethrown here.
// At most `window` parsed pieces wait (workers pause beyond it): small when the records are
// dropped after the sink, large when they are kept anyway, so that workers do not wait for a
// descheduled calling thread.
template <class Source, class Sink>
void parse_parallel(Source& src, std::string_view file, unsigned threads, std::size_t window,
                    load_result& out, Sink&& sink) {
  struct parsed {
    std::unique_ptr<load_result> res;
    std::size_t lines = 0;
    std::size_t bytes = 0;
  };
  std::mutex m;
  std::condition_variable ready_cv, space_cv;
  std::vector<std::optional<parsed>> ready;  // slot = index - delivered, window-bounded
  std::vector<std::unique_ptr<load_result>> spare;
  std::size_t delivered = 0;
  ready.resize(window);
  unsigned running = threads;
  bool stop = false;
  std::exception_ptr failure;

  auto work = [&](std::size_t) {
    try {
      reader r(file);
      piece_buffer buf;
      for (;;) {
        std::unique_ptr<load_result> res;
        {
          std::lock_guard lock(m);
          if (stop) break;
          if (!spare.empty()) res = std::move(spare.back()), spare.pop_back();
        }
        if (!res) res = std::make_unique<load_result>();
        piece_view pv;
        if (!src.next(pv, buf)) break;
        {
          std::unique_lock lock(m);
          space_cv.wait(lock, [&] { return stop || pv.index < delivered + window; });
          if (stop) break;
        }
        r.restart(pv.index == 0);
        r.process(pv.begin, pv.size, pv.readable_end, true, *res);
        {
          std::lock_guard lock(m);
          ready[pv.index % window] = parsed{std::move(res), r.lines(), pv.size};
        }
        ready_cv.notify_one();
      }
    } catch (...) {
      std::lock_guard lock(m);
      if (!failure) failure = std::current_exception();
      stop = true;
    }
    {
      std::lock_guard lock(m);
      --running;
    }
    ready_cv.notify_one();
    space_cv.notify_all();
  };

  std::vector<std::jthread> workers;
  // Declared after `workers`, so it runs first on the way out: stops the workers before they are
  // joined (a sink exception must not leave them waiting for space).
  struct stopper {
    std::mutex& m;
    bool& stop;
    std::condition_variable& cv;
    ~stopper() {
      {
        std::lock_guard lock(m);
        stop = true;
      }
      cv.notify_all();
    }
  } stop_on_exit{m, stop, space_cv};
  workers.reserve(threads);
  for (unsigned t = 0; t < threads; ++t) workers.push_back(start_worker(work, t));

  std::size_t line_offset = 0;
  for (;;) {
    parsed p;
    {
      std::unique_lock lock(m);
      auto& slot = ready[delivered % window];
      ready_cv.wait(lock, [&] { return failure || slot.has_value() || running == 0; });
      if (failure) break;
      if (!slot) break;  // every worker is done and nothing is left
      p = std::move(*slot);
      slot.reset();
    }
    load_result& part = *p.res;
    for (load_issue& is : part.issues) {
      is.line += line_offset;
      out.issues.push_back(std::move(is));
    }
    out.lines_read += part.lines_read;
    line_offset += p.lines;
    sink(part.records, p.bytes);
    part.records.clear();
    part.issues.clear();
    part.lines_read = 0;
    {
      std::lock_guard lock(m);
      ++delivered;
      spare.push_back(std::move(p.res));
    }
    space_cv.notify_all();
  }
  {
    std::lock_guard lock(m);
    stop = true;
  }
  space_cv.notify_all();
  workers.clear();  // joins
  if (failure) std::rethrow_exception(failure);
}

// Pieces that may wait when the records are kept: their records are kept anyway, so only the
// calling thread's scheduling bounds it.
constexpr std::size_t keep_window(unsigned threads) noexcept {
  return 16 * std::size_t{threads} + 16;
}

// Appends each piece's records to out.records; the first piece's record density sizes the
// vector once (total_bytes = 0: unknown).
inline auto append_records(load_result& out, std::size_t total_bytes) {
  return [&out, total_bytes, first = true](std::vector<memory_record>& recs,
                                           std::size_t bytes) mutable {
    if (first && total_bytes > 0 && bytes > 0) {
      const double per_byte = static_cast<double>(recs.size()) / static_cast<double>(bytes);
      out.records.reserve(
          static_cast<std::size_t>(per_byte * static_cast<double>(total_bytes) * 1.05) + 16);
    }
    first = false;
    std::move(recs.begin(), recs.end(), std::back_inserter(out.records));
  };
}

}  // namespace detail::jsonl

/// Parses JSONL text: one JSON object per line, blank lines ignored, `\n` or `\r\n` line ends,
/// an optional UTF-8 byte order mark.
/// @param text the whole input; parsed in place (only a line within SIMDJSON_PADDING bytes of
///        the end is copied into a padded buffer).
/// @param file_name name reported in every `load_issue::file`.
/// @param opt threads and piece size (see `load_options`); the result does not depend on them.
/// @return every record that could be kept, in input order, and one `load_issue` per problem
///         (see the file comment and docs/format.md for what is kept, skipped and reported).
///         `lines_read` counts non-blank lines.
/// @errors never throws on bad data; only `std::bad_alloc`, or `std::system_error` when a thread
///         cannot be started.
/// @complexity O(bytes) work, spread over `opt.threads` threads when the text holds two pieces
///         or more.
template <class = void>  // deferred instantiation, see memhealth.hpp
load_result parse_jsonl(std::string_view text, std::string_view file_name,
                        const load_options& opt) {
  load_result res;
  const unsigned threads = detail::jsonl::resolve_threads(opt.threads);
  const std::size_t piece = std::max<std::size_t>(opt.piece_bytes, 1);
  const char* end = text.data() + text.size();
  if (threads == 1 || text.size() < 2 * piece) {
    detail::jsonl::reader r(file_name);
    r.process(text.data(), text.size(), end, true, res);
    return res;
  }
  detail::jsonl::text_source src(text.data(), text.size(), end, piece);
  detail::jsonl::parse_parallel(src, file_name, threads, detail::jsonl::keep_window(threads), res,
                                detail::jsonl::append_records(res, text.size()));
  return res;
}

/// `parse_jsonl(text, file_name, load_options{})`: all hardware threads (up to 8).
template <class = void>  // deferred instantiation, see memhealth.hpp
load_result parse_jsonl(std::string_view text, std::string_view file_name = "<memory>") {
  return parse_jsonl(text, file_name, load_options{});
}

namespace detail::jsonl {
// Streams a file through a 4 MiB buffer (grown only for a longer line) on the calling thread;
// calls after_chunk(res, bytes_consumed_so_far, file_size_or_0) after each chunk's lines are
// parsed.
template <class AfterChunk>
void stream_file(const std::filesystem::path& path, load_result& res, AfterChunk&& after_chunk) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) throw_io("read_jsonl: cannot open", path, errno);
  const std::string name = path.string();
  reader r(name);
  std::size_t capacity = std::size_t{4} << 20;
  std::unique_ptr<char[]> buf(new char[capacity + simdjson::SIMDJSON_PADDING]);
  std::size_t have = 0, consumed = 0;
  bool eof = false;
  std::error_code size_ec;
  const auto size = std::filesystem::file_size(path, size_ec);
  const std::size_t file_size = size_ec ? 0 : static_cast<std::size_t>(size);
  while (!eof || have > 0) {
    if (!eof) {
      errno = 0;
      const std::size_t n = std::fread(buf.get() + have, 1, capacity - have, f.get());
      if (n == 0) {
        if (std::ferror(f.get())) throw_io("read_jsonl: cannot read", path, errno ? errno : EIO);
        eof = true;
      }
      have += n;
    }
    const std::size_t used =
        r.process(buf.get(), have, buf.get() + capacity + simdjson::SIMDJSON_PADDING, eof, res);
    std::memmove(buf.get(), buf.get() + used, have - used);
    have -= used;
    consumed += used;
    after_chunk(res, consumed, file_size);
    if (have == capacity) {  // one line longer than the buffer: grow it
      std::unique_ptr<char[]> bigger(new char[2 * capacity + simdjson::SIMDJSON_PADDING]);
      std::memcpy(bigger.get(), buf.get(), have);
      buf = std::move(bigger);
      capacity *= 2;
    }
  }
}
}  // namespace detail::jsonl

/// Reads a JSONL file (see `parse_jsonl`); issues name the file as `path.string()`.
/// The file is read piece by piece (`opt.piece_bytes`, 4 MiB by default) into buffers that are
/// reused, never whole: memory beyond the records is O(threads x (piece + longest line)).
/// With more than one thread and a file of two pieces or more, workers parse pieces in parallel
/// (see `load_options`); the result does not depend on `opt`.
/// @throws memhealth::error with `error_code::io` when the file cannot be opened or read
///         (missing, a directory, no permission); everything inside the file is a `load_issue`.
/// @complexity O(bytes) work, spread over `opt.threads` threads.
template <class = void>  // deferred instantiation, see memhealth.hpp
load_result read_jsonl(const std::filesystem::path& path, const load_options& opt) {
  load_result res;
  const unsigned threads = detail::jsonl::resolve_threads(opt.threads);
  const std::size_t piece = std::max<std::size_t>(opt.piece_bytes, 1);
  if (detail::jsonl::read_sequentially(path, threads, piece)) {
    bool reserved = false;
    detail::jsonl::stream_file(
        path, res, [&](load_result& r, std::size_t consumed, std::size_t file_size) {
          if (reserved || file_size == 0 || consumed == 0 || r.records.empty()) return;
          // one reservation from the first chunk's record density saves re-growing the vector
          reserved = true;
          const double per_byte =
              static_cast<double>(r.records.size()) / static_cast<double>(consumed);
          r.records.reserve(
              static_cast<std::size_t>(per_byte * static_cast<double>(file_size) * 1.05) + 16);
        });
    return res;
  }
  detail::jsonl::file_source src(path, piece);
  const std::string name = path.string();
  detail::jsonl::parse_parallel(src, name, threads, detail::jsonl::keep_window(threads), res,
                                detail::jsonl::append_records(res, src.size_hint()));
  return res;
}

/// `read_jsonl(path, load_options{})`: all hardware threads (up to 8).
template <class = void>  // deferred instantiation, see memhealth.hpp
load_result read_jsonl(const std::filesystem::path& path) {
  return read_jsonl(path, load_options{});
}

/// Streams a JSONL file record by record without keeping the records: calls
/// `on_record(memory_record&&)` for every record `read_jsonl` would keep, in file order, on the
/// calling thread, a few MiB at a time. For files larger than memory, or to feed a store or a
/// database directly. With more than one thread (see `load_options`), workers parse the next
/// pieces while `on_record` runs.
/// @return the issues and `lines_read`; `records` is empty.
/// @throws memhealth::error(error_code::io) as `read_jsonl`; exceptions from `on_record`
///         propagate (the workers are stopped and joined first; records not yet handed over are
///         dropped).
/// @complexity O(bytes); memory O(threads x (piece + longest line)).
template <class F>
requires std::invocable<F&, memory_record&&> load_result
read_jsonl_each(const std::filesystem::path& path, const load_options& opt, F&& on_record) {
  load_result res;
  const unsigned threads = detail::jsonl::resolve_threads(opt.threads);
  const std::size_t piece = std::max<std::size_t>(opt.piece_bytes, 1);
  if (detail::jsonl::read_sequentially(path, threads, piece)) {
    detail::jsonl::stream_file(path, res, [&](load_result& r, std::size_t, std::size_t) {
      for (auto& rec : r.records) on_record(std::move(rec));
      r.records.clear();
    });
    return res;
  }
  detail::jsonl::file_source src(path, piece);
  const std::string name = path.string();
  detail::jsonl::parse_parallel(src, name, threads, 2 * std::size_t{threads} + 2, res,
                                [&](std::vector<memory_record>& recs, std::size_t) {
                                  for (auto& rec : recs) on_record(std::move(rec));
                                });
  return res;
}

/// `read_jsonl_each(path, load_options{}, on_record)`: all hardware threads (up to 8).
template <class F>
requires std::invocable<F&, memory_record&&> load_result
read_jsonl_each(const std::filesystem::path& path, F&& on_record) {
  return read_jsonl_each(path, load_options{}, std::forward<F>(on_record));
}

}  // namespace memhealth
