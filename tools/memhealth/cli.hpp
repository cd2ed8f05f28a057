// Shared pieces of the memhealth command-line tool: exit codes, loading a store, JSON output.
#pragma once

#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <optional>
#include <utility>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <string_view>

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "memhealth/io/read_file.hpp"
#include "memhealth/memhealth.hpp"
#if MEMHEALTH_CLI_HAVE_SQLITE
#include "memhealth/store/sqlite_store.hpp"
#endif

namespace memhealth::cli {

/// Exit codes of every subcommand.
enum exit_code : int {
  exit_ok = 0,        ///< success, nothing of warning or above
  exit_findings = 1,  ///< success, findings of warning or above (check)
  exit_usage = 2,     ///< usage error or unreadable input
  exit_incomplete = 3,  ///< rollback/recover did only part of the work (conflicts left, a torn or damaged log); apply with failed actions
  exit_not_run = 4,   ///< apply ran nothing: the plan is suspended, or every action awaits approval
  exit_busy = 5,      ///< another memhealth process holds the lock on the log or the store
};

/// An exclusive, non-blocking `flock` on a file for the lifetime of the object: two memhealth
/// processes never repair the same store at once (other programs are not stopped by it).
/// @throws memhealth::error(busy) when another process holds it; error(io) when the file cannot
///         be opened.
class file_lock {
 public:
  file_lock(const std::string& path, const char* what) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw error(error_code::io, path + ": cannot open " + what + " to lock it: " + std::strerror(errno));
    while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      if (errno == EINTR) continue;
      const bool busy = errno == EWOULDBLOCK;
      ::close(fd_);
      if (busy)
        throw error(error_code::busy, path + ": " + what + " is being repaired by another memhealth process; wait for it to finish");
      throw error(error_code::io, path + ": cannot lock " + what);
    }
  }
  file_lock(const file_lock&) = delete;
  file_lock& operator=(const file_lock&) = delete;
  ~file_lock() { ::close(fd_); }

 private:
  int fd_ = -1;
};

/// Output formats accepted by --format.
inline const std::vector<std::string> text_json{"text", "json"};
inline const std::vector<std::string> text_json_md{"text", "json", "md"};

/// Prefix naming an SQLite store wherever a store path is taken: `sqlite:PATH`.
inline constexpr std::string_view sqlite_prefix = "sqlite:";

/// True for `sqlite:PATH`.
inline bool is_sqlite_store(std::string_view store) { return store.starts_with(sqlite_prefix); }

/// The file behind a store argument: PATH for `sqlite:PATH`, the argument itself otherwise.
inline std::string store_file_path(const std::string& store) {
  return is_sqlite_store(store) ? store.substr(sqlite_prefix.size()) : store;
}

#if MEMHEALTH_CLI_HAVE_SQLITE
/// Opens an existing SQLite store named `sqlite:PATH` (or PATH). @throws memhealth::error as
/// `sqlite_store::open` (io, schema, parse), naming the problem.
inline sqlite_store<> open_sqlite_store(const std::string& store, bool read_only) {
  sqlite_store_options o;
  o.read_only = read_only;
  return sqlite_store<>::open(store_file_path(store), o);
}
#endif

[[noreturn]] inline void no_sqlite_support(const std::string& store) {
  throw error(error_code::invalid_argument,
              store + ": this memhealth was built without SQLite (libsqlite3-dev); sqlite: stores are unavailable");
}

/// Reads a store: JSONL (load issues in the result, printed by the caller), or `sqlite:PATH`
/// (every row, streamed block by block; no issues: rows were canonical when written).
/// @throws memhealth::error(io) when the file cannot be read; for SQLite also error(schema) for
///         a foreign schema or missing table, error(parse) for a corrupt or non-SQLite file.
inline load_result load_store_file(const std::string& path) {
  if (!is_sqlite_store(path)) return read_jsonl(path);
#if MEMHEALTH_CLI_HAVE_SQLITE
  auto s = open_sqlite_store(path, true);
  load_result lr;
  lr.records.reserve(s.size());
  s.for_each([&](std::size_t, const memory_record& r) { lr.records.push_back(r); });
  lr.lines_read = s.size();
  return lr;
#else
  no_sqlite_support(path);
#endif
}

/// Fails before anything is done when `out` names an SQLite store that already exists (a new
/// database is written; an existing one is never overwritten). JSONL outputs pass (they are
/// replaced atomically). @throws memhealth::error(precondition).
inline void check_new_store_output(const std::string& out) {
  if (!is_sqlite_store(out)) return;
#if MEMHEALTH_CLI_HAVE_SQLITE
  std::error_code ec;
  if (std::filesystem::exists(store_file_path(out), ec))
    throw error(error_code::precondition, store_file_path(out) +
                                              ": already exists; an sqlite: output is always a new database (remove it or "
                                              "choose another path); nothing was written");
#else
  no_sqlite_support(out);
#endif
}

/// Writes records to `out`: canonical JSONL written atomically, or a new SQLite store for
/// `sqlite:PATH` (one transaction; refuses an existing PATH, see `check_new_store_output`).
inline void write_store(const std::string& out, const std::vector<memory_record>& records) {
  if (!is_sqlite_store(out)) return write_jsonl(out, records);
#if MEMHEALTH_CLI_HAVE_SQLITE
  check_new_store_output(out);
  (void)sqlite_store<>::create(store_file_path(out), records);
#else
  no_sqlite_support(out);
#endif
}

/// Writes an in-memory store to `out` (see the vector overload), records in index order.
inline void write_store(const std::string& out, const memory_store<>& store) {
  if (!is_sqlite_store(out)) return write_jsonl(out, store);
  std::vector<memory_record> v;
  v.reserve(store.size());
  for (std::size_t i = 0; i < store.size(); ++i) v.push_back(store.extract(i));
  write_store(out, v);
}

/// Prints load issues to stderr, at most `limit` of them, then a count of the rest.
inline void print_issues(const std::vector<load_issue>& issues, std::size_t limit = 20) {
  std::size_t n = 0;
  for (const auto& i : issues) {
    if (n++ == limit) {
      std::cerr << "memhealth: ... and " << (issues.size() - limit) << " more load issues\n";
      break;
    }
    std::cerr << i.file;
    if (i.line != 0) std::cerr << ":" << i.line;  // 0: not line-based (a JSON dataset file)
    std::cerr << ": " << (i.field.empty() ? "" : i.field + ": ") << i.reason
              << (i.record_kept ? "" : " (line skipped)") << "\n";
  }
}

/// Load issues as a JSON array.
inline nlohmann::json issues_json(const std::vector<load_issue>& issues) {
  auto a = nlohmann::json::array();
  for (const auto& i : issues)
    a.push_back({{"file", i.file}, {"line", i.line}, {"field", i.field}, {"reason", i.reason},
                 {"record_kept", i.record_kept}});
  return a;
}

/// Writes text to a file (when `out` is not empty) or to stdout.
/// @throws memhealth::error(io) on failure.
inline void emit(const std::string& text, const std::string& out) {
  if (out.empty()) {
    std::cout << text;
    if (!text.empty() && text.back() != '\n') std::cout << '\n';
    return;
  }
  // A regular file (or a new one) is replaced atomically and durably; an existing special file
  // (/dev/stdout, a pipe) cannot be renamed over, so it is written in place.
  std::error_code ec;
  const auto st = std::filesystem::status(out, ec);
  if (ec || !std::filesystem::exists(st) || std::filesystem::is_regular_file(st)) {
    atomic_write(out, text);
    return;
  }
  std::FILE* f = std::fopen(out.c_str(), "wb");
  if (!f) throw error(error_code::io, "cannot open " + out + " for writing");
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !ok) throw error(error_code::io, "cannot write " + out);
}

/// Parses "90s", "30m", "12h", "7d", "2w" (a non-negative integer and a unit) into milliseconds.
inline std::optional<std::chrono::milliseconds> parse_duration(std::string_view s) {
  if (s.size() < 2) return std::nullopt;
  std::int64_t n = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size() - 1, n);
  if (ec != std::errc{} || p != s.data() + s.size() - 1 || n < 0) return std::nullopt;
  switch (s.back()) {
    case 's': return std::chrono::seconds{n};
    case 'm': return std::chrono::minutes{n};
    case 'h': return std::chrono::hours{n};
    case 'd': return std::chrono::days{n};
    case 'w': return std::chrono::weeks{n};
    default: return std::nullopt;
  }
}

/// Detection options shared by check, plan and apply (the pipeline they run must agree).
struct detection_cli_options {
  float threshold = 0.92f;
  std::string window;
  std::string schema;
  std::string now;
  bool now_given = false;
  std::size_t dim = 0;
  unsigned threads = 1;
};

/// Registers the shared detection options on a subcommand.
inline void add_detection_options(CLI::App* cmd, detection_cli_options& o) {
  cmd->add_option("--threshold", o.threshold, "Near-duplicate cosine threshold")->check(CLI::Range(-1.0, 1.0));
  cmd->add_option("--window", o.window, "Near duplicates only within this created_at window (90s, 30m, 12h, 7d, 2w)");
  cmd->add_option("--schema", o.schema, "Metadata schema (JSON, see docs/cli.md)");
  cmd->add_option("--dim", o.dim, "Expected embedding dimension (default: the most common one)");
  cmd->add_option("--threads", o.threads, "Worker threads for the structural scan and the similarity joins (same findings)")
      ->check(CLI::Range(1, 256));
  cmd->add_option("--now", o.now, "Clock for staleness and future-timestamp checks (ISO-8601; default: now)")
      ->each([&o](const std::string&) { o.now_given = true; });
}

/// Settings and run options from the shared options.
/// @throws memhealth::error(invalid_argument) for a bad --now or --window; error(io/parse/schema)
///         from the schema file.
inline std::pair<default_check_settings, detect_options> detection_settings(const detection_cli_options& o) {
  default_check_settings settings;
  detect_options d;
  if (!(o.threshold >= -1.0f && o.threshold <= 1.0f))  // also rejects NaN
    throw error(error_code::invalid_argument, "--threshold must be a cosine in [-1, 1]");
  settings.near_duplicate_threshold = o.threshold;
  settings.threads = o.threads;  // --threads is checked to be in [1, 256]
  if (o.now_given || !o.now.empty()) {
    auto t = parse_timestamp(o.now);
    if (!t) throw error(error_code::invalid_argument, "--now: not an ISO-8601 time: " + o.now);
    d.now = t->instant;
  }
  if (!o.window.empty()) {
    auto w = parse_duration(o.window);
    if (!w) throw error(error_code::invalid_argument, "--window: expected a duration such as 90s, 30m, 12h, 7d: " + o.window);
    settings.near_duplicate_window = *w;
  }
  if (!o.schema.empty()) settings.schema = load_schema_json(o.schema);
  d.dimension = o.dim;
  return {std::move(settings), d};
}

/// Runs the default pipeline with the shared options over a store.
inline report run_detection(const memory_store<>& store, const detection_cli_options& o) {
  auto [settings, d] = detection_settings(o);
  if (d.dimension == 0) d.dimension = store.dimension();
  return make_default_pipeline(settings).run(store, d);
}

/// Loads a JSONL or `sqlite:PATH` store into a memory_store (dimension: `dim`, else the most
/// common); load issues are printed to stderr. @throws memhealth::error(io) when unreadable (and
/// the errors of `load_store_file` for SQLite).
/// Commands that write a store back refuse an input with lines that could not be parsed at all:
/// writing it back would drop those lines (nothing is ever dropped silently).
/// @throws memhealth::error(parse) naming the first such line.
/// The lines of a JSONL store that hold no record (lines that could not be parsed, blank lines),
/// kept byte for byte so that a store written back has them where they were: a damaged line
/// never blocks a repair and is never lost.
struct kept_lines {
  std::vector<std::string> lines;  ///< every line of the input, without its '\n'
  std::vector<char> is_record;     ///< per line: 1 = a record (rewritten from the store), 0 = kept as is
  std::vector<std::size_t> damaged;  ///< 1-based numbers of the lines that could not be parsed
  std::size_t records = 0;         ///< record lines
};

/// Reads a store into memory. Lines that cannot be parsed are an error (they would be lost when
/// the store is written back) unless `keep` is given: then they are kept there (JSONL only) and
/// `write_store(out, store, *keep)` puts them back in place.
/// @throws memhealth::error(parse) for such lines without `keep`, and what load_store_file throws.
inline memory_store<> load_memory_store(const std::string& path, std::size_t dim = 0, kept_lines* keep = nullptr) {
  auto lr = load_store_file(path);
  print_issues(lr.issues);
  std::vector<std::size_t> bad;
  for (const auto& i : lr.issues)
    if (!i.record_kept) bad.push_back(i.line);
  if (!bad.empty()) {
    if (!keep || is_sqlite_store(path) || std::count(bad.begin(), bad.end(), std::size_t{0}) > 0)
      throw error(error_code::parse,
                  path + ": line " + std::to_string(bad.front()) +
                      " could not be parsed and would be lost if the store were written back; fix or remove "
                      "such lines first (memhealth check lists them)");
    kept_lines k;
    const std::string text = detail::read_whole_file(path);
    std::size_t start = 0;
    while (start < text.size()) {
      std::size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      k.lines.emplace_back(text, start, end - start);
      start = end + 1;
    }
    std::sort(bad.begin(), bad.end());
    k.is_record.assign(k.lines.size(), 1);
    for (std::size_t n = 0; n < k.lines.size(); ++n)
      if (k.lines[n].find_first_not_of(" \t\r") == std::string::npos) k.is_record[n] = 0;
    for (std::size_t b : bad)
      if (b >= 1 && b <= k.lines.size()) k.is_record[b - 1] = 0;
    k.damaged = bad;
    k.records = static_cast<std::size_t>(std::count(k.is_record.begin(), k.is_record.end(), char{1}));
    if (k.records != lr.records.size())  // the reader numbered lines differently: refuse rather than guess
      throw error(error_code::parse, path + ": " + std::to_string(bad.size()) +
                                         " lines could not be parsed and their places could not be kept; fix or remove them first");
    std::cerr << "memhealth: " << path << ": " << bad.size()
              << " damaged lines are carried through byte for byte in their place (first: line " << bad.front() << ")\n";
    *keep = std::move(k);
  }
  return memory_store<>::from_records(std::move(lr.records), dim);
}

/// Fails before any work when `keep` holds damaged lines and `out` cannot keep them (an sqlite:
/// output has no place for a line that is not a record). @throws memhealth::error(parse).
inline void check_keepable(const std::string& out, const kept_lines& keep) {
  if (!keep.damaged.empty() && is_sqlite_store(out))
    throw error(error_code::parse, out + ": an sqlite: output cannot keep the input's " + std::to_string(keep.damaged.size()) +
                                       " damaged lines (first: line " + std::to_string(keep.damaged.front()) +
                                       "); write JSONL, or fix or remove those lines first; nothing was done");
}

/// Writes `store` to `out` with the kept lines of its input back in their places (JSONL,
/// atomically); without kept lines, `write_store(out, store)`.
inline void write_store(const std::string& out, const memory_store<>& store, const kept_lines& keep) {
  if (keep.damaged.empty()) return write_store(out, store);
  check_keepable(out, keep);
  if (store.size() != keep.records)
    throw error(error_code::precondition, "write_store: the store no longer has one record per record line of its input");
  const std::string canonical = to_jsonl(store);
  std::string text;
  text.reserve(canonical.size() + 64 * keep.damaged.size());
  std::size_t at = 0;
  for (std::size_t n = 0; n < keep.lines.size(); ++n) {
    if (keep.is_record[n]) {
      const std::size_t end = canonical.find('\n', at);
      text.append(canonical, at, end - at);
      at = end + 1;
    } else {
      text += keep.lines[n];
    }
    text.push_back('\n');
  }
  atomic_write(out, text);
}

// Subcommand registration; each returns the subcommand so main can dispatch.
void add_import(CLI::App& app, int& rc);
void add_stats(CLI::App& app, int& rc);
void add_check(CLI::App& app, int& rc);
void add_plan(CLI::App& app, int& rc);
void add_apply(CLI::App& app, int& rc);
void add_rollback(CLI::App& app, int& rc);
void add_recover(CLI::App& app, int& rc);
void add_diff(CLI::App& app, int& rc);
void add_wal(CLI::App& app, int& rc);

}  // namespace memhealth::cli
