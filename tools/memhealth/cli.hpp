// Shared pieces of the memhealth command-line tool: exit codes, loading a store, JSON output.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "memhealth/io/printable.hpp"
#include "memhealth/io/read_file.hpp"
#include "memhealth/io/temp_files.hpp"
#include "memhealth/memhealth.hpp"

#include "option_values.hpp"
#include <CLI/CLI.hpp>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#if MEMHEALTH_CLI_HAVE_HTTP
#include "memhealth/net/openai_embedder.hpp"
#include "memhealth/net/openai_judge.hpp"
#endif
#if MEMHEALTH_CLI_HAVE_SQLITE
#include "memhealth/live/sqlite_repair_history.hpp"
#include "memhealth/store/sqlite_migrations.hpp"
#include "memhealth/store/sqlite_state.hpp"
#include "memhealth/store/sqlite_store.hpp"
#endif
#if MEMHEALTH_CLI_HAVE_PG
#include "memhealth/store/pg_store.hpp"
#endif

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

namespace memhealth::cli {

/// Exit codes of every subcommand.
enum exit_code : int {
  exit_ok = 0,          ///< success, nothing of warning or above
  exit_findings = 1,    ///< success, findings of warning or above (check)
  exit_usage = 2,       ///< usage error or unreadable input
  exit_incomplete = 3,  ///< rollback/recover did only part of the work (conflicts left, a torn or
                        ///< damaged log); apply with failed actions
  exit_not_run = 4,  ///< apply ran nothing: the plan is suspended, or every action awaits approval
  exit_busy = 5,     ///< another memhealth process holds the lock on the log or the store
};

/// How a `file_lock` holds its file.
enum class lock_mode {
  shared,     ///< `LOCK_SH`: the file is read (an input store written elsewhere, a log rolled back)
  exclusive,  ///< `LOCK_EX`: the file is written (a store repaired in place, an existing --out)
};

/// A non-blocking `flock` on a file for the lifetime of the object: two memhealth processes never
/// write the same store or log at once, while any number may read one (other programs are not
/// stopped by it). The lock is taken on the file the path names *after* locking: a file replaced
/// by rename (every store the tool writes is) while waiting is opened and locked again, so the
/// lock always covers what the path holds once the caller reads it.
/// @throws memhealth::error(busy) when another process holds a conflicting lock; error(io) when
///         the file cannot be opened.
class file_lock {
 public:
  file_lock(const std::string& path, const char* what, lock_mode mode = lock_mode::exclusive) {
    for (int attempt = 0;; ++attempt) {
      fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd_ < 0)
        throw error(error_code::io,
                    path + ": cannot open " + what + " to lock it: " + std::strerror(errno));
      const int op = (mode == lock_mode::exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB;
      while (::flock(fd_, op) != 0) {
        if (errno == EINTR) continue;
        const bool busy = errno == EWOULDBLOCK;
        ::close(fd_);
        fd_ = -1;
        if (busy)
          throw error(error_code::busy,
                      path + ": " + what +
                          (mode == lock_mode::exclusive
                               ? " is in use by another memhealth process (a repair, rollback or "
                                 "recovery reading or writing it); wait for it to finish"
                               : " is being written by another memhealth process; wait for it "
                                 "to finish"));
        throw error(error_code::io, path + ": cannot lock " + what + ": " + std::strerror(errno));
      }
      struct stat held {
      }, now{};
      if (::fstat(fd_, &held) == 0 && ::stat(path.c_str(), &now) == 0 &&
          held.st_dev == now.st_dev && held.st_ino == now.st_ino)
        return;
      ::close(fd_);  // replaced while we locked it: lock the file that is there now
      fd_ = -1;
      if (attempt == 100)
        throw error(error_code::busy,
                    path + ": " + what + " keeps being replaced by another process; try again");
    }
  }
  file_lock(const file_lock&) = delete;
  file_lock& operator=(const file_lock&) = delete;
  ~file_lock() {
    if (fd_ >= 0) ::close(fd_);
  }

 private:
  int fd_ = -1;
};

/// Output formats accepted by --format.
inline const std::vector<std::string> text_json{"text", "json"};
inline const std::vector<std::string> text_json_md{"text", "json", "md"};

/// Prefix naming an SQLite store wherever a store path is taken: `sqlite:PATH`.
inline constexpr std::string_view sqlite_prefix = "sqlite:";

/// True for `sqlite:PATH`.
inline bool is_sqlite_store(std::string_view store) {
  return store.starts_with(sqlite_prefix);
}

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
  throw error(error_code::invalid_argument, store +
                                                ": this memhealth was built without SQLite "
                                                "(libsqlite3-dev); sqlite: stores are unavailable");
}

/// The mapping of a `postgresql://` store argument (`--mapping`): a built-in name (`mem0`,
/// `langgraph`; `memhealth`, the default, is memhealth's own schema) or a JSON mapping file.
inline std::string& pg_mapping_option() {
  static std::string mapping = "memhealth";
  return mapping;
}

/// True for a PostgreSQL store argument (`postgresql://...` or `postgres://...`, a libpq URI).
inline bool is_pg_store(std::string_view store) {
  return store.starts_with("postgresql://") || store.starts_with("postgres://");
}

/// A store argument as it may be printed: a PostgreSQL URI without anything but user, host,
/// port and database (`describe_conninfo`); other arguments unchanged.
inline std::string store_label(const std::string& store) {
#if MEMHEALTH_CLI_HAVE_PG
  return is_pg_store(store) ? describe_conninfo(store) : store;
#else
  return is_pg_store(store) ? std::string("postgresql://(connection string not shown)") : store;
#endif
}

/// A store as reports and banners name it: `store_label`, and for a PostgreSQL store the table
/// of its --mapping ("postgresql://user@host/db table mem0"). @throws what load_pg_mapping throws.
inline std::string store_label_with_table(const std::string& store) {
#if MEMHEALTH_CLI_HAVE_PG
  if (is_pg_store(store))
    return store_label(store) + " table " + load_pg_mapping(pg_mapping_option()).table;
#endif
  return store_label(store);
}

[[noreturn]] inline void no_pg_support() {
  throw error(error_code::invalid_argument,
              "this memhealth was built without libpq (libpq-dev); postgresql:// stores are "
              "unavailable");
}

#if MEMHEALTH_CLI_HAVE_PG
/// Opens a PostgreSQL store with the `--mapping` given. @throws memhealth::error as
/// `pg_store::open` (a password in the URI, a missing table or column, a missing privilege).
inline pg_store<> open_pg_store(const std::string& uri, bool read_only,
                                std::optional<std::vector<std::string>> ids = std::nullopt) {
  pg_store_options o;
  o.read_only = read_only;
  o.ids = std::move(ids);
  return pg_store<>::open(uri, load_pg_mapping(pg_mapping_option()), o);
}

/// The name of a PostgreSQL store in the state database (repair and findings histories, review
/// queue, the incremental check's fingerprints): `postgresql://HOST:PORT/DB table
/// SCHEMA.TABLE`, as the server `c` is connected to reports them (PQhost, PQport, PQdb) and
/// with the table resolved by the server (search_path applied). No user, no options, no
/// secret: two URIs that reach one table by the same host name share one history.
/// @throws error(schema) when the table does not exist; error(io) when the catalog cannot be
///         read.
inline std::string pg_history_scope(PGconn* c, const std::string& table) {
  namespace pg = memhealth::detail::pg;
  const std::string server = std::string("postgresql://") + (PQhost(c) ? PQhost(c) : "") + ":" +
                             (PQport(c) ? PQport(c) : "") + "/" + (PQdb(c) ? PQdb(c) : "");
  auto r = pg::exec(c,
                    "SELECT n.nspname || '.' || c.relname FROM pg_class c JOIN pg_namespace n ON "
                    "n.oid = c.relnamespace WHERE c.oid = to_regclass($1)",
                    {pg::table_ident(c, table)}, server, "cannot look up the table");
  if (PQntuples(r.get()) != 1) throw error(error_code::schema, server + ": no table " + table);
  return server + " table " + pg::cell(r.get(), 0, 0);
}

/// `pg_history_scope` of an open store.
inline std::string pg_history_scope(const pg_store<>& s) {
  return pg_history_scope(s.native_handle(), s.mapping().table);
}

/// How a write-ahead log names a PostgreSQL store (its header's store path): the store's
/// description and the mapping it was read under, by --mapping value and a digest of the
/// mapping's JSON ("postgresql://u@h/db table mem0 (mapping mem0, 0123456789abcdef)"), so that a
/// rollback or recovery under another mapping is refused (`check_log_mapping`).
/// memhealth's own schema, which has no mapping-file form, is digested by its table and record
/// column.
inline std::string pg_log_label(const pg_store<>& s) {
  const pg_mapping& m = s.mapping();
  const std::string form = m.record_column.empty()
                               ? pg_mapping_json(m).dump()
                               : "memhealth's own schema: " + m.table + "." + m.record_column;
  return s.description() + " (mapping " + pg_mapping_option() + ", " + hex16(fnv1a_64(form)) + ")";
}

/// Refuses to undo a log written under another mapping of the table than `s` is read under:
/// the log's before- and after-images are records of that mapping, so the rows' records would
/// not match them (every action a conflict) and a write would put fields in other places. Logs
/// without a recorded mapping (older, or of other stores) pass. @throws error(precondition),
/// nothing written.
inline void check_log_mapping(const std::optional<store_identity>& logged, const pg_store<>& s) {
  // "mapping NAME, DIGEST" of a label that ends in " (mapping NAME, DIGEST)", or ""
  const auto mapping_of = [](const std::string& label) {
    const auto at = label.rfind(" (mapping ");
    return at == std::string::npos || !label.ends_with(")")
               ? std::string()
               : label.substr(at + 2, label.size() - at - 3);
  };
  if (!logged) return;
  const std::string was = mapping_of(logged->path);
  if (was.empty()) return;
  const std::string now = mapping_of(pg_log_label(s));
  const auto digest = [](const std::string& m) { return m.substr(m.rfind(", ") + 2); };
  if (digest(was) == digest(now)) return;
  throw error(error_code::precondition,
              "the log was written under another mapping of the table: " + was +
                  ", this run reads it under " + now +
                  ": the rows' records would not match the log's images; nothing was written "
                  "(run it with the log's --mapping)");
}

/// `pg_history_scope` of a store argument and the `--mapping` given: connects (no row is read).
/// @throws as `detail::pg::connect` (a password in the URI, an unreachable server), a bad
///         mapping, and as `pg_history_scope`.
inline std::string pg_history_scope(const std::string& uri) {
  const pg_mapping m = load_pg_mapping(pg_mapping_option());
  const auto c = memhealth::detail::pg::connect(uri);
  return pg_history_scope(c.get(), m.table);
}
#endif

/// The first 16 bytes of every SQLite 3 database.
inline constexpr std::string_view sqlite_header{"SQLite format 3\0", 16};

/// True when `path` is a regular file starting with the SQLite header.
inline bool looks_like_sqlite(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  char head[16];
  const bool yes = std::fread(head, 1, sizeof head, f) == sizeof head &&
                   std::string_view(head, sizeof head) == sqlite_header;
  std::fclose(f);
  return yes;
}

/// Fails when an input path names a directory (a file was expected). `what` names the input
/// ("store", "events file", ...). @throws memhealth::error(io).
inline void refuse_directory(const std::string& path, std::string_view what) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw error(error_code::io, path + ": is a directory, not a " + std::string(what) + " file");
}

/// Checks a JSONL store argument before it is read: not a directory, not an SQLite database
/// (the error suggests `sqlite:PATH`). @throws memhealth::error(io / parse).
inline void check_jsonl_input(const std::string& path, std::string_view what = "JSONL store") {
  refuse_directory(path, what);
  if (looks_like_sqlite(path))
    throw error(error_code::parse, path + ": is an SQLite database, not a " + std::string(what) +
                                       "; pass it as sqlite:" + path);
}

/// Reads a store: JSONL (load issues in the result, printed by the caller), `sqlite:PATH`
/// (every row, streamed block by block; no issues: rows were canonical when written), or
/// `postgresql://` with the mapping of --mapping (issues: rows not read whole, pg_store).
/// @throws memhealth::error(io) when the file cannot be read or is a directory; error(parse) for
///         an SQLite database given without `sqlite:`; for SQLite also error(schema) for a
///         foreign schema or missing table, error(parse) for a corrupt or non-SQLite file.
inline load_result load_store_file(const std::string& path) {
  if (is_pg_store(path)) {
#if MEMHEALTH_CLI_HAVE_PG
    auto s = open_pg_store(path, true);
    load_result lr;
    lr.lines_read = s.rows_read();
    lr.issues = s.load_issues();  // rows not read whole: as a JSONL store's bad lines
    lr.records = std::move(s).release_records();  // moved, not copied: the rows are held once
    return lr;
#else
    no_pg_support();
#endif
  }
  if (!is_sqlite_store(path)) {
    check_jsonl_input(path);
    return read_jsonl(path);
  }
#if MEMHEALTH_CLI_HAVE_SQLITE
  refuse_directory(store_file_path(path), "SQLite store");
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

/// One warning line on stderr when a store holds no record: an empty store is reported as
/// empty, never as healthy. @return true when it is empty.
inline bool warn_if_empty(std::string_view command, const std::string& store, std::size_t records) {
  if (records != 0) return false;
  std::cerr << "memhealth " << command << ": warning: " << store
            << " is empty (0 records): nothing to " << (command == "check" ? "check" : "work on")
            << "; is it the right file?\n";
  return true;
}

/// Fails before anything is done when `out` names an SQLite store that already exists (a new
/// database is written; an existing one is never overwritten). JSONL outputs pass (they are
/// replaced atomically). @throws memhealth::error(precondition).
inline void check_new_store_output(const std::string& out) {
  if (!is_sqlite_store(out)) return;
#if MEMHEALTH_CLI_HAVE_SQLITE
  std::error_code ec;
  if (std::filesystem::exists(store_file_path(out), ec))
    throw error(error_code::precondition,
                store_file_path(out) +
                    ": already exists; an sqlite: output is always a new database (remove it or "
                    "choose another path); nothing was written");
#else
  no_sqlite_support(out);
#endif
}

/// The database id of `store` when it names an SQLite store (`sqlite:PATH`, opened read-only; an
/// older store without one gives ""), else "". @throws as `open_sqlite_store`.
inline std::string store_database_id(const std::string& store) {
  if (is_pg_store(store)) {
#if MEMHEALTH_CLI_HAVE_PG
    return open_pg_store(store, true).database_id();
#else
    no_pg_support();
#endif
  }
  if (!is_sqlite_store(store)) return {};
#if MEMHEALTH_CLI_HAVE_SQLITE
  return open_sqlite_store(store, true).database_id();
#else
  no_sqlite_support(store);
#endif
}

/// Writes records to `out`: canonical JSONL written atomically, or a new SQLite store for
/// `sqlite:PATH` (one transaction; refuses an existing PATH, see `check_new_store_output`) with
/// `database_id` (empty: a new one; the input's id for a repaired copy of it).
inline void write_store(const std::string& out, const std::vector<memory_record>& records,
                        const std::string& database_id = {}) {
  if (!is_sqlite_store(out)) return write_jsonl(out, records);
#if MEMHEALTH_CLI_HAVE_SQLITE
  check_new_store_output(out);
  // built under a temporary name in the same directory, synced, then linked into place
  sqlite_store_options so;
  so.database_id = database_id;
  sqlite_store<>::write_new(store_file_path(out), records, 0, so);
#else
  (void)database_id;
  no_sqlite_support(out);
#endif
}

/// Writes an in-memory store to `out` (see the vector overload), records in index order.
inline void write_store(const std::string& out, const memory_store<>& store,
                        const std::string& database_id = {}) {
  if (!is_sqlite_store(out)) return write_jsonl(out, store);
  std::vector<memory_record> v;
  v.reserve(store.size());
  for (std::size_t i = 0; i < store.size(); ++i) v.push_back(store.extract(i));
  write_store(out, v, database_id);
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
    // a reason that already says the line was skipped is not told so twice
    const bool says_skipped = i.reason.find("skipped") != std::string::npos;
    std::cerr << ": " << (i.field.empty() ? "" : i.field + ": ") << i.reason
              << (i.record_kept || says_skipped ? "" : " (line skipped)") << "\n";
  }
}

/// Writes text to a file (when `out` is not empty) or to stdout.
/// @throws memhealth::error(io) on failure.
inline void emit(const std::string& text, const std::string& out) {
  if (out.empty()) {
    std::cout << text;
    if (!text.empty() && text.back() != '\n') std::cout << '\n';
    std::cout.flush();
    // a full disk or a closed pipe behind stdout is a failed command, not a finished one
    if (!std::cout)
      throw error(error_code::io, "cannot write the output to standard output (" +
                                      std::string(std::strerror(errno)) + ")");
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

/// Reports the memhealth temporaries a killed run left in `dir` (one stderr line each) and
/// removes those whose process is gone; those of a running process are left alone.
inline void clean_stale_temporaries(const std::filesystem::path& dir) {
  for (const auto& t : remove_stale_temporaries(dir)) {
    if (t.alive)
      std::cerr << "memhealth: note: " << t.path.string()
                << " is a temporary file of running process " << t.pid << "; left alone\n";
    else if (t.removed)
      std::cerr << "memhealth: removed " << t.path.string() << ", a temporary file left by process "
                << t.pid << " (no longer running)\n";
    else
      std::cerr << "memhealth: warning: cannot remove " << t.path.string()
                << ", a temporary file left by process " << t.pid << "\n";
  }
}

/// Probes an output before any work: the target is not a directory, its directory exists and a
/// file can be created in it (a temporary is created and removed). Stale temporaries of killed
/// runs in that directory are reported and removed (`clean_stale_temporaries`). Existing special
/// files (/dev/stdout, a pipe) pass. `what` names the option ("--out"). An empty `path` passes.
/// @throws memhealth::error(io) naming the output and the reason; nothing has been written.
inline void probe_output(const std::string& path, std::string_view what) {
  if (path.empty()) return;
  const std::string w(what);
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (!ec && std::filesystem::is_directory(st))
    throw error(error_code::io, w + " " + path + ": is a directory; nothing was written");
  if (!ec && std::filesystem::exists(st) && !std::filesystem::is_regular_file(st))
    return;  // /dev/stdout, a FIFO
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  if (!std::filesystem::is_directory(dir, ec))
    throw error(error_code::io, w + " " + path + ": directory " + dir.string() +
                                    " does not exist; nothing was written");
  clean_stale_temporaries(dir);
  const std::filesystem::path probe = temp_path_for(dir / "probe");
  temp_registration registered(probe);
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    throw error(error_code::io, w + " " + path + ": cannot create files in " + dir.string() + ": " +
                                    std::strerror(errno) + "; nothing was written");
  ::close(fd);
  ::unlink(probe.c_str());
}

/// Refuses an output that is the same file as an input (`--out` or `--report` naming the store
/// read, the --plan, the --events file...; hard links, symlinks and `sqlite:PATH` included):
/// writing it would replace the input. `what` names the output option ("--out"), `in_what` the
/// input ("" or "store": the store; else an option such as "--plan"). Either empty, a
/// postgresql:// path or an output that does not exist yet passes.
/// @throws memhealth::error(invalid_argument) naming both; nothing has been written.
inline void refuse_output_over_input(const std::string& out, const std::string& in,
                                     std::string_view what, std::string_view in_what = {}) {
  if (out.empty() || in.empty() || is_pg_store(in) || is_pg_store(out)) return;
  std::error_code ec;
  if (!std::filesystem::equivalent(store_file_path(out), store_file_path(in), ec) || ec) return;
  const std::string read = in_what.empty() || in_what == "store"
                               ? std::string("the store read")
                               : "the " + std::string(in_what) + " file";
  throw error(error_code::invalid_argument, std::string(what) + " " + out + ": is " + read + " (" +
                                                in + "); nothing was written");
}

/// One file a command reads or writes: the option naming it ("--out", "--plan", "store") and
/// the path as given ("" = not given; `sqlite:PATH` stands for PATH).
struct cli_file {
  std::string_view option;  ///< option or argument name, for messages
  std::string path;         ///< the path as given
};

/// `refuse_output_over_input` for every output against every input, before any work.
/// @throws memhealth::error(invalid_argument) at the first output that is an input.
inline void refuse_outputs_over_inputs(const std::vector<cli_file>& outputs,
                                       const std::vector<cli_file>& inputs) {
  for (const auto& o : outputs)
    for (const auto& i : inputs) refuse_output_over_input(o.path, i.path, o.option, i.option);
}

/// Checks before any work that an input file exists and can be opened for reading.
/// @throws memhealth::error(io) naming `what` and the reason; nothing has been done.
inline void require_readable_file(const std::string& path, std::string_view what) {
  refuse_directory(path, what);
  std::ifstream f(path, std::ios::binary);
  if (!f)
    throw error(error_code::io, std::string(what) + " " + path + ": cannot open (" +
                                    std::strerror(errno) + "); nothing was done");
}

/// Probes a store output: the file behind `sqlite:PATH` or a JSONL path (see `probe_output`);
/// an sqlite: output must also be new (`check_new_store_output`).
inline void probe_store_output(const std::string& out, std::string_view what) {
  if (is_pg_store(out)) return;  // a database, repaired in place: nothing to probe
  probe_output(store_file_path(out), what);
  check_new_store_output(out);
}

namespace detail {
inline void remove_temporaries_on_signal(int sig) {
  live_temporaries::unlink_all();  // async-signal-safe: atomic loads and unlink
  std::signal(sig, SIG_DFL);
  std::raise(sig);  // pending until the handler returns (the signal is blocked in it), then fatal
}
}  // namespace detail

/// SIGINT, SIGTERM, SIGHUP: remove this process's live temporary files, then die of the signal
/// as if there were no handler (default disposition, signal raised again). SIGXFSZ is ignored: a
/// file-size limit (RLIMIT_FSIZE) then makes the write fail with EFBIG, which the writers handle
/// like a full disk (temporaries removed, the target untouched, exit 2), instead of killing the
/// process with its temporary file left behind.
inline void install_temp_cleanup_handlers() {
  std::signal(SIGXFSZ, SIG_IGN);
  struct sigaction sa {};
  sa.sa_handler = &detail::remove_temporaries_on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN)
      continue;  // nohup: keep ignoring
    ::sigaction(sig, &sa, nullptr);
  }
}

/// Detection options shared by check, plan, apply and drill (the pipeline they run must agree).
/// The settings are the library's own type (`default_check_settings`): --threshold and --threads
/// write `settings.near_duplicate_threshold` and `settings.threads` directly. The options parsed
/// when a command runs are kept as given: --window (a duration text, parsed into
/// `settings.near_duplicate_window`), --schema (a path, loaded into `settings.schema`), --now
/// (`detect_options::now`) and --dim (`detect_options::dimension`); a plan records these texts and
/// apply takes the plan's unless the option is given again. --no-duplicate-guards writes
/// `settings.duplicate_guards` (a plan made with it records "duplicate_guards": "off");
/// --block-above writes `settings.block_scopes_above` (a plan records a non-default value as
/// "block_above"). --max-content-bytes writes `settings.content_size.max_bytes` (a plan records a
/// non-default value as "max_content_bytes"); --hygiene-off turns content hygiene detectors off
/// (a plan records them, sorted and comma-separated, as "hygiene_off").
struct detection_cli_options {
  default_check_settings
      settings;        ///< threshold and threads; window and schema filled by `detection_settings`
  std::string window;  ///< --window text ("" = any)
  std::string schema;  ///< --schema path ("" = none)
  std::string now;     ///< --now text ("" = the current time)
  bool now_given = false;   ///< --now was given (even as "")
  std::size_t dim = 0;      ///< --dim (0 = the store's most common dimension)
  std::string lexicon;      ///< --lexicon path ("" = the built-in claim lexicon)
  std::string judge;        ///< --judge "openai:URL" ("" = the rules only)
  std::string judge_model;  ///< --judge-model
  bool judge_all = false;   ///< --judge-all: every candidate pair reaches the model
  /// --model-cache path of the model answer cache ("" = the default, "none" = no cache)
  std::string model_cache;
  double model_rate = 0;      ///< --model-rate: most model requests per second (0 = no limit)
  double model_timeout = 60;  ///< --model-timeout: seconds per request attempt
  int model_retries = 4;      ///< --model-retries: attempts after the first
  std::string api_key_env = "OPENAI_API_KEY";  ///< --api-key-env: the variable holding the key
  std::string embedder;         ///< --embedder "openai:URL" (commands that fill embeddings)
  std::string embedding_model;  ///< --embedding-model
  std::vector<std::string> hygiene_off;  ///< --hygiene-off names (secrets, mojibake, ...)
};

/// The inputs of a command that detects: `store`, --schema, --lexicon and, for a postgresql://
/// store, the --mapping file (read only then), as `cli_file`s for `refuse_outputs_over_inputs`.
inline std::vector<cli_file> detection_inputs(const std::string& store,
                                              const detection_cli_options& d) {
  return {{"store", store},
          {"--schema", d.schema},
          {"--lexicon", d.lexicon},
          {"--mapping", is_pg_store(store) ? pg_mapping_option() : std::string()}};
}

/// The model answer cache file: `o_path` unless "" ("none" = no cache, an empty path), else
/// $XDG_CACHE_HOME/memhealth/model-cache.sqlite or ~/.cache/memhealth/model-cache.sqlite (its
/// folder created), or none when neither variable is set.
inline std::filesystem::path model_cache_path(const std::string& o_path) {
  if (o_path == "none") return {};
  if (!o_path.empty()) return o_path;
  std::filesystem::path base;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    base = x;
  else if (const char* h = std::getenv("HOME"); h && *h)
    base = std::filesystem::path(h) / ".cache";
  else
    return {};
  std::error_code ec;
  std::filesystem::create_directories(base / "memhealth", ec);
  if (ec) return {};
  return base / "memhealth" / "model-cache.sqlite";
}

/// The URL of an "openai:URL" option value. @throws error(invalid_argument) for another scheme
/// or a missing model name (`model`), naming `what`.
inline std::string openai_option_url(const std::string& value, const std::string& model,
                                     const char* what, const char* model_option) {
  constexpr std::string_view prefix = "openai:";
  if (!value.starts_with(prefix) || value.size() == prefix.size())
    throw error(error_code::invalid_argument,
                std::string(what) +
                    ": expected openai:URL (an OpenAI-compatible API base such as "
                    "openai:http://localhost:11434/v1), got '" +
                    url_for_messages(value) + "'");
  if (model.empty())
    throw error(error_code::invalid_argument, std::string(what) + " needs " + model_option +
                                                  " (the model name the server knows)");
  return value.substr(prefix.size());
}

/// The conflict judge's model of --judge (null without it).
/// @throws error(invalid_argument) for a bad --judge, or when the tool was built without
///         libcurl; the cache's errors.
inline std::shared_ptr<const model_judge> make_cli_judge(const detection_cli_options& o) {
  if (o.judge.empty()) return nullptr;
  const std::string url = openai_option_url(o.judge, o.judge_model, "--judge", "--judge-model");
#if MEMHEALTH_CLI_HAVE_HTTP
  openai_judge_options jo;
  jo.url = url;
  jo.model = o.judge_model;
  jo.ask_all = o.judge_all;
  jo.cache_path = model_cache_path(o.model_cache);
  jo.api_key_env = o.api_key_env;
  jo.http.requests_per_second = o.model_rate;
  jo.http.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(o.model_timeout * 1000));
  jo.http.max_retries = o.model_retries;
  // the tool's judge says on stderr, when the command ends, how many pairs got no valid verdict
  struct reporting_judge final : model_judge {
    explicit reporting_judge(openai_judge_options opt) : inner(std::move(opt)) {}
    ~reporting_judge() override {
      const auto st = inner.stats();
      if (st.invalid_replies > 0)
        std::cerr << "memhealth: warning: the judge gave no valid verdict for "
                  << st.invalid_replies << " of " << st.asked
                  << " pairs asked (the rules' verdicts were used for them)\n";
    }
    std::optional<conflict_verdict> judge(std::string_view a, std::string_view b,
                                          const conflict_verdict& rules) const override {
      return inner.judge(a, b, rules);
    }
    bool ask_all() const override { return inner.ask_all(); }
    openai_judge inner;
  };
  return std::make_shared<reporting_judge>(jo);
#else
  throw error(error_code::invalid_argument,
              "--judge: this build has no HTTP client (libcurl4-openssl-dev, libssl-dev)");
#endif
}

/// A time in milliseconds since the epoch (UTC) as RFC 3339 text with a Z offset, as the state
/// database keeps times (review queue, migrations).
inline std::string time_text(std::int64_t ms) {
  return format_timestamp(timestamp{utc_time{std::chrono::milliseconds{ms}}, 0});
}

/// The windows of the figures that span runs (store/run_history.hpp), as `apply --report` and
/// `memhealth history` take them: --recur-for, --recur-runs, --uptime-window.
struct history_window_cli {
  std::string recur_for = "7d";       ///< time a repaired fault must stay away to count as held
  std::int64_t recur_runs = 0;        ///< full runs after the repair it must stay away (0 = none)
  std::string uptime_window = "30d";  ///< the uptime's window, ending now

  /// Registers the three options on `c`.
  void add_to(CLI::App* c) {
    c->add_option("--recur-for", recur_for,
                  "Repair success: a repaired fault counts as held once it stayed away this long "
                  "(default 7d) ...")
        ->transform(duration());
    c->add_option("--recur-runs", recur_runs,
                  "... and for this many full check runs after the repair (default 0: time only)")
        ->transform(whole_number(0, 1'000'000));
    c->add_option("--uptime-window", uptime_window,
                  "Uptime over this window ending now (default 30d)")
        ->transform(duration(true));
  }
  /// The recurrence window. @throws error(invalid_argument) for a bad duration, or when both
  /// are 0 (every repair would count as held at once).
  [[nodiscard]] recurrence_window recurrence() const {
    const auto d = parse_duration(recur_for);
    if (!d) throw error(error_code::invalid_argument, "--recur-for: expected e.g. 7d, 36h");
    if (d->count() == 0 && recur_runs == 0)
      throw error(error_code::invalid_argument,
                  "--recur-for 0 needs --recur-runs N > 0 (else every repair would count as held "
                  "at once)");
    if (recur_runs < 0 || recur_runs > 1'000'000)
      throw error(error_code::invalid_argument, "--recur-runs: expected 0 to 1000000");
    return recurrence_window{*d, static_cast<std::size_t>(recur_runs)};
  }
  /// The uptime window. @throws error(invalid_argument) for a bad or zero duration.
  [[nodiscard]] std::chrono::milliseconds uptime() const {
    const auto d = parse_duration(uptime_window);
    if (!d || d->count() <= 0)
      throw error(error_code::invalid_argument,
                  "--uptime-window: expected a duration > 0, e.g. 30d");
    return *d;
  }
};

#if MEMHEALTH_CLI_HAVE_HTTP
/// The options of an OpenAI-compatible embedder from the tool's model flags (--embedding-model,
/// --model-cache, --api-key-env, --model-rate, --model-timeout in seconds, --model-retries):
/// endpoint `url`, vectors of `dim` dimensions (0 = the server's).
inline openai_embedder_options openai_embedder_options_from(const detection_cli_options& o,
                                                            const std::string& url,
                                                            std::size_t dim) {
  openai_embedder_options eo;
  eo.url = url;
  eo.model = o.embedding_model;
  eo.dimension = dim;
  eo.cache_path = model_cache_path(o.model_cache);
  eo.api_key_env = o.api_key_env;
  eo.http.requests_per_second = o.model_rate;
  eo.http.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(o.model_timeout * 1000));
  eo.http.max_retries = o.model_retries;
  return eo;
}
#endif

/// Fills the embedding of every record without one, through --embedder (an OpenAI-compatible
/// endpoint, the records' texts in batches, the answer cache) or, when `lexical` is true, the
/// built-in lexical stand-in of dimension `dim` (0 = the records' most common, else 384).
/// @return how many records were embedded. @throws error(invalid_argument) for a bad
///         --embedder or both at once; the embedder's errors (io after retries, parse).
inline std::size_t fill_missing_embeddings(std::vector<memory_record>& records,
                                           const detection_cli_options& o, bool lexical,
                                           std::size_t dim) {
  if (!o.embedder.empty() && lexical)
    throw error(error_code::invalid_argument, "--embed lexical and --embedder: choose one");
  if (lexical) {
    if (dim == 0) dim = memory_store<>::most_common_dimension(records);
    if (dim == 0) dim = 384;
    return embed_missing(records, lexical_embedder(dim, 0));
  }
  if (o.embedder.empty()) return 0;
  const std::string url =
      openai_option_url(o.embedder, o.embedding_model, "--embedder", "--embedding-model");
  if (std::none_of(records.begin(), records.end(),
                   [](const memory_record& r) { return r.embedding.empty(); }))
    return 0;  // nothing to embed: no request (not even the dimension probe)
#if MEMHEALTH_CLI_HAVE_HTTP
  const openai_embedder_options eo = openai_embedder_options_from(o, url, dim);
  const openai_embedder e(eo);
  std::vector<std::size_t> todo;
  std::vector<std::string_view> texts;
  for (std::size_t i = 0; i < records.size(); ++i)
    if (records[i].embedding.empty()) {
      todo.push_back(i);
      texts.push_back(records[i].content);
    }
  const std::size_t d = e.dimension();
  std::vector<float> block(todo.size() * d);
  e.embed_batch(std::span<const std::string_view>(texts), std::span<float>(block));
  for (std::size_t k = 0; k < todo.size(); ++k) {
    auto& r = records[todo[k]];
    r.embedding.assign(block.begin() + static_cast<std::ptrdiff_t>(k * d),
                       block.begin() + static_cast<std::ptrdiff_t>((k + 1) * d));
    r.embedding_version = std::string(e.version());
  }
  const auto st = e.stats();
  std::cerr << "memhealth: " << todo.size() << " records embedded by " << e.version() << " ("
            << st.requests << " requests, " << st.cache_hits << " from the cache)\n";
  return todo.size();
#else
  throw error(error_code::invalid_argument,
              "--embedder: this build has no HTTP client (libcurl4-openssl-dev, libssl-dev)");
#endif
}

/// The target version of the embedding-model migration running on `store` (`memhealth migrate
/// start`), read from its state database (`state`, default: beside the store), or "" when there
/// is none (no state database, no running migration, a postgresql:// store without `state`, a
/// build without SQLite). Detection then reports mixed versions as progress (`structural_detector::
/// migration_to`). @throws the state database's errors (a damaged or foreign database).
inline std::string declared_migration_to(const std::string& store, const std::string& state = {}) {
#if MEMHEALTH_CLI_HAVE_SQLITE
  if (is_pg_store(store) && state.empty()) return {};
  const std::filesystem::path path =
      state.empty() ? default_state_path(store) : std::filesystem::path(state);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return {};
  sqlite_state_options so;
  so.read_only = true;
  const auto st = sqlite_state::open(path, so);
  const auto m = current_migration(st);
  return m ? m->to_version : std::string();
#else
  (void)store;
  (void)state;
  return {};
#endif
}

/// An embedder named on the command line by `--embedder`: `lexical:DIM[:SEED]` (the built-in
/// lexical stand-in, version "lexical-v1-dDIM-sSEED") or `openai:URL` with `--embedding-model`
/// (an OpenAI-compatible API through the answer cache, --model-rate, --model-timeout,
/// --model-retries, key from --api-key-env). Type-erased; satisfies `memhealth::embedder`.
struct cli_embedder {
  std::size_t dim = 0;      ///< output dimension
  std::string ver;          ///< embedding_version it writes
  std::string description;  ///< for people and the state database (URL and model; never a key)
  /// n texts into n x dim floats
  std::function<void(std::span<const std::string_view>, std::span<float>)> batch;
  std::function<std::string()> stats;  ///< requests made so far, for a summary line ("" = none)
  /// @return dim.
  [[nodiscard]] std::size_t dimension() const noexcept { return dim; }
  /// @return ver.
  [[nodiscard]] std::string_view version() const noexcept { return ver; }
  /// One text. @throws error(invalid_argument) for a wrong output size; the model's errors.
  void embed(std::string_view text, std::span<float> out) const {
    embed_batch(std::span<const std::string_view>(&text, 1), out);
  }
  /// n texts, one call of the model (or as many as its batch size needs).
  /// @throws error(invalid_argument) when out.size() != n x dim; the model's errors.
  void embed_batch(std::span<const std::string_view> texts, std::span<float> out) const {
    if (out.size() != texts.size() * dim)
      throw error(error_code::invalid_argument,
                  "embed_batch: output of " + std::to_string(out.size()) + " floats, expected " +
                      std::to_string(texts.size() * dim));
    batch(texts, out);
  }
};

/// The embedder of `--embedder` (see `cli_embedder`); for openai:, `dim` is the dimension asked
/// for (0 = the server's). @throws error(invalid_argument) for an unknown form, a bad DIM or SEED,
/// a missing --embedding-model, or openai: in a build without libcurl; the embedder's errors.
inline std::shared_ptr<const cli_embedder> make_cli_embedder(const detection_cli_options& o,
                                                             std::size_t dim) {
  auto out = std::make_shared<cli_embedder>();
  const std::string& v = o.embedder;
  if (v.starts_with("lexical:")) {
    std::size_t d = 0;
    std::uint64_t seed = 0;
    const char* p = v.data() + 8;
    const char* end = v.data() + v.size();
    auto r = std::from_chars(p, end, d);
    bool ok = r.ec == std::errc() && d > 0 && d <= 65536;
    if (ok && r.ptr != end) {
      ok = *r.ptr == ':';
      if (ok) {
        const auto r2 = std::from_chars(r.ptr + 1, end, seed);
        ok = r2.ec == std::errc() && r2.ptr == end;
      }
    }
    if (!ok)
      throw error(error_code::invalid_argument,
                  "--embedder: expected lexical:DIM[:SEED] with DIM 1..65536, got '" + v + "'");
    const auto e = std::make_shared<lexical_embedder>(d, seed);
    out->dim = d;
    out->ver = std::string(e->version());
    out->description = "lexical dimension " + std::to_string(d) + " seed " + std::to_string(seed);
    out->batch = [e](std::span<const std::string_view> t, std::span<float> o2) {
      memhealth::embed_batch(*e, t, o2);
    };
    return out;
  }
  const std::string url =
      openai_option_url(v, o.embedding_model, "--embedder", "--embedding-model");
#if MEMHEALTH_CLI_HAVE_HTTP
  const openai_embedder_options eo = openai_embedder_options_from(o, url, dim);
  const auto e = std::make_shared<openai_embedder>(eo);
  out->dim = e->dimension();
  out->ver = std::string(e->version());
  out->description = "openai " + url_for_messages(url) + " model " + o.embedding_model;
  out->batch = [e](std::span<const std::string_view> t, std::span<float> o2) {
    e->embed_batch(t, o2);
  };
  out->stats = [e] {
    const auto st = e->stats();
    return std::to_string(st.requests) + " requests, " + std::to_string(st.cache_hits) +
           " from the cache";
  };
  return out;
#else
  (void)url;
  (void)dim;
  throw error(error_code::invalid_argument,
              "--embedder: this build has no HTTP client (libcurl4-openssl-dev, libssl-dev)");
#endif
}

/// Gives `ao` the embedder `e` for the repair actions that re-embed (`reembed`, a resolution's
/// new text): `ao.embed` embeds the record's text after the action's edits, `ao.embed_version`
/// is `e`'s version.
inline void set_apply_embedder(apply_options& ao, std::shared_ptr<const cli_embedder> e) {
  ao.embed_version = e->ver;
  ao.embed = [e](const memory_record& r) {
    std::vector<float> v(e->dim);
    e->embed(r.content, v);
    return v;
  };
}

/// Registers --model-cache, --model-rate and --api-key-env (how --judge and --embedder reach
/// the model).
inline void add_model_access_options(CLI::App* cmd, detection_cli_options& o) {
  cmd->add_option("--model-cache", o.model_cache,
                  "Cache of model answers (SQLite; default ~/.cache/memhealth/model-cache.sqlite; "
                  "none = no cache)");
  cmd->add_option("--model-rate", o.model_rate,
                  "Most requests per second to --judge / --embedder (0 = no limit)")
      ->transform(real_number(0, std::numeric_limits<double>::infinity()));
  cmd->add_option("--model-timeout", o.model_timeout,
                  "Seconds one request to --judge / --embedder may take (default 60)")
      ->transform(real_number(0.1, 3600));
  cmd->add_option("--model-retries", o.model_retries,
                  "Attempts after the first for a failed or malformed reply (default 4; backoff "
                  "0.5 s doubling, or the server's Retry-After)")
      ->transform(whole_number(0, 20));
  cmd->add_option("--api-key-env", o.api_key_env,
                  "Environment variable holding the API key for --judge / --embedder (default "
                  "OPENAI_API_KEY; never pass a key on the command line)");
}

/// Registers the job options of `--workers` (check and plan over postgresql://) on `cmd`:
/// --job-records (records per job, > 0; a larger scope is one job, its k-means join split into
/// blocks) into `job_records`, and --lease (seconds a claimed job is held without renewal) into
/// `lease`.
inline void add_worker_job_options(CLI::App* cmd, std::size_t& job_records, double& lease) {
  cmd->add_option("--job-records", job_records,
                  "With --workers, and for check of a postgresql:// store without it: most "
                  "records per job, the rows held with their vectors at a time (scopes are "
                  "batched; a larger scope is one job, and with --workers its k-means join is "
                  "split into blocks when it is partitioned)")
      ->transform(whole_number(1));
  cmd->add_option("--lease", lease,
                  "With --workers: seconds a claimed job is held without renewal before another "
                  "worker may take it (default 120; 1 to 86400)")
      ->transform(real_number(1, 86400));
}

/// Registers --embedder and --embedding-model (and --model-cache when `cache` is true) on a
/// subcommand that fills missing embeddings.
inline void add_embedder_options(CLI::App* cmd, detection_cli_options& o, bool cache) {
  cmd->add_option("--embedder", o.embedder,
                  "Embed records without embeddings through an OpenAI-compatible API: "
                  "openai:URL (e.g. openai:http://localhost:11434/v1; key from $OPENAI_API_KEY)");
  cmd->add_option("--embedding-model", o.embedding_model, "Model name for --embedder");
  if (cache) add_model_access_options(cmd, o);
}

/// Turns one content hygiene detector off by name. @return false for an unknown name.
inline bool turn_hygiene_off(default_check_settings& s, std::string_view name) {
  if (name == "secrets")
    s.secrets.enabled = false;
  else if (name == "mojibake")
    s.mojibake.enabled = false;
  else if (name == "content_size")
    s.content_size.enabled = false;
  else if (name == "content_time")
    s.content_time.enabled = false;
  else
    return false;
  return true;
}

/// The claim lexicon of --lexicon: the built-in one plus the file's cue words, synonyms,
/// antonyms and is-a pairs (claim_lexicon::load_tsv); null for "".
/// @throws memhealth::error(io) naming the file and line when it cannot be read or a line is bad.
inline std::shared_ptr<const claim_lexicon> load_claim_lexicon(const std::string& path) {
  if (path.empty()) return nullptr;
  if (std::filesystem::is_directory(path))
    throw error(error_code::io, "--lexicon: " + path + " is a directory, not a TSV file");
  auto lex = std::make_shared<claim_lexicon>(english_lexicon::parse_builtin());  // (no copy kept)
  try {
    lex->load_tsv(path);
  } catch (const std::runtime_error& e) {
    throw error(error_code::io, std::string("--lexicon: ") + e.what());
  }
  return lex;
}

/// Registers the shared detection options on a subcommand.
inline void add_detection_options(CLI::App* cmd, detection_cli_options& o) {
  cmd->add_option("--threshold", o.settings.near_duplicate_threshold,
                  "Near-duplicate cosine threshold")
      ->transform(real_number(-1, 1));
  cmd->add_option("--window", o.window,
                  "Near duplicates only within this created_at window (90s, 30m, 12h, 7d, 2w)")
      ->transform(duration(false, true));
  cmd->add_option("--schema", o.schema, "Metadata schema (JSON, see docs/cli.md)");
  cmd->add_option("--lexicon", o.lexicon,
                  "Claim lexicon additions for the conflict judge (TSV: cue/synonym/antonym/is_a "
                  "lines, see README)");
  cmd->add_option("--dim", o.dim, "Expected embedding dimension (default: the most common one)")
      ->transform(whole_number());
  cmd->add_option("--threads", o.settings.threads,
                  "Worker threads for the structural scan and the similarity joins (same findings)")
      ->transform(whole_number(1, 256));
  cmd->add_option("--block-above", o.settings.block_scopes_above,
                  "Compare scopes of more than N embedded records by k-means blocking with "
                  "multi-probe instead of the exact join (a few similar pairs may be missed; 0 = "
                  "always the exact join; default 50000)")
      ->transform(whole_number());
  cmd->add_option("--max-content-bytes", o.settings.content_size.max_bytes,
                  "Content longer than this many UTF-8 bytes is an oversized_content finding (0 = "
                  "no store-wide limit; default 8192; metadata max_bytes / max_chars still apply)")
      ->transform(whole_number());
  cmd->add_option("--hygiene-off", o.hygiene_off,
                  "Turn content hygiene checks off: secrets, mojibake, content_size, content_time "
                  "(repeat or separate by commas)")
      ->delimiter(',')
      ->check(CLI::IsMember({"secrets", "mojibake", "content_size", "content_time"}));
  cmd->add_option("--now", o.now,
                  "Clock for staleness and future-timestamp checks (ISO-8601; default: now)")
      ->each([&o](const std::string&) { o.now_given = true; });
  cmd->add_option("--judge", o.judge,
                  "Ask a model about the conflict candidates the rules leave open: openai:URL "
                  "(an OpenAI-compatible chat API; key from $OPENAI_API_KEY)");
  cmd->add_option("--judge-model", o.judge_model, "Model name for --judge");
  cmd->add_flag("--judge-all", o.judge_all,
                "With --judge: every conflict candidate reaches the model, not only the open ones");
  add_model_access_options(cmd, o);
  cmd->add_flag_function(
      "--no-duplicate-guards", [&o](std::int64_t) { o.settings.duplicate_guards = false; },
      "Let near pairs whose numbers, dates or times differ, whose roles are swapped, whose "
      "polarity is opposite, or that the conflict judge calls a conflict count as near "
      "duplicates (the guards are on by default)");
}

/// Settings and run options from the shared options: `o.settings` with the window and schema
/// parsed in, and the run's clock and dimension.
/// @throws memhealth::error(invalid_argument) for a threshold outside [-1, 1], a bad --now or
///         --window; error(io/parse/schema) from the schema file.
inline std::pair<default_check_settings, detect_options> detection_settings(
    const detection_cli_options& o) {
  default_check_settings settings = o.settings;
  detect_options d;
  if (!(settings.near_duplicate_threshold >= -1.0f &&
        settings.near_duplicate_threshold <= 1.0f))  // also rejects NaN
    throw error(error_code::invalid_argument, "--threshold must be a cosine in [-1, 1]");
  if (o.now_given || !o.now.empty()) {
    auto t = parse_timestamp(o.now);
    if (!t) throw error(error_code::invalid_argument, "--now: not an ISO-8601 time: " + o.now);
    d.now = t->instant;
  }
  if (!o.window.empty()) {
    auto w = parse_duration(o.window);
    if (!w)
      throw error(error_code::invalid_argument,
                  "--window: expected a duration such as 90s, 30m, 12h, 7d: " + o.window);
    settings.near_duplicate_window = *w;
  }
  if (!o.schema.empty()) settings.schema = load_schema_json(o.schema);
  settings.lexicon = load_claim_lexicon(o.lexicon);
  settings.conflict_model = make_cli_judge(o);
  for (const auto& name : o.hygiene_off)
    if (!turn_hygiene_off(settings, name))
      throw error(error_code::invalid_argument,
                  "--hygiene-off: unknown check '" + name +
                      "' (known: secrets, mojibake, content_size, content_time)");
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
  std::vector<char>
      is_record;  ///< per line: 1 = a record (rewritten from the store), 0 = kept as is
  std::vector<std::size_t> damaged;  ///< 1-based numbers of the lines that could not be parsed
  std::size_t records = 0;           ///< record lines
};

/// Reads a store into memory. Lines that cannot be parsed are an error (they would be lost when
/// the store is written back) unless `keep` is given: then they are kept there (JSONL only) and
/// `write_store(out, store, *keep)` puts them back in place. A command that writes no store
/// names its own reason to refuse such lines in `refusal` (what follows "line N could not be
/// parsed"; empty: the write-back reason).
/// @throws memhealth::error(parse) for such lines without `keep`, and what load_store_file throws.
inline memory_store<> load_memory_store(const std::string& path, std::size_t dim = 0,
                                        kept_lines* keep = nullptr, std::string_view refusal = {}) {
  auto lr = load_store_file(path);
  print_issues(lr.issues);
  std::vector<std::size_t> bad;
  for (const auto& i : lr.issues)
    if (!i.record_kept) bad.push_back(i.line);
  if (!bad.empty()) {
    if (!keep || is_sqlite_store(path) || std::count(bad.begin(), bad.end(), std::size_t{0}) > 0)
      throw error(
          error_code::parse,
          path + ": line " + std::to_string(bad.front()) + " could not be parsed" +
              (refusal.empty() ? std::string(" and would be lost if the store were written back; "
                                             "fix or remove such lines first (memhealth check "
                                             "lists them)")
                               : std::string(refusal)));
    kept_lines k;
    const std::string text = memhealth::detail::read_whole_file(path);
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
    k.records =
        static_cast<std::size_t>(std::count(k.is_record.begin(), k.is_record.end(), char{1}));
    if (k.records !=
        lr.records.size())  // the reader numbered lines differently: refuse rather than guess
      throw error(error_code::parse, path + ": " + std::to_string(bad.size()) +
                                         " lines could not be parsed and their places could not be "
                                         "kept; fix or remove them first");
    std::cerr << "memhealth: " << path << ": " << bad.size()
              << " damaged lines are carried through byte for byte in their place (first: line "
              << bad.front() << ")\n";
    *keep = std::move(k);
  }
  return memory_store<>::from_records(std::move(lr.records), dim);
}

/// Fails before any work when `keep` holds damaged lines and `out` cannot keep them (an sqlite:
/// output has no place for a line that is not a record). @throws memhealth::error(parse).
inline void check_keepable(const std::string& out, const kept_lines& keep) {
  if (!keep.damaged.empty() && is_sqlite_store(out))
    throw error(error_code::parse,
                out + ": an sqlite: output cannot keep the input's " +
                    std::to_string(keep.damaged.size()) + " damaged lines (first: line " +
                    std::to_string(keep.damaged.front()) +
                    "); write JSONL, or fix or remove those lines first; nothing was done");
}

/// Writes `store` to `out` with the kept lines of its input back in their places (JSONL,
/// atomically); without kept lines, `write_store(out, store)`.
inline void write_store(const std::string& out, const memory_store<>& store, const kept_lines& keep,
                        const std::string& database_id = {}) {
  if (keep.damaged.empty()) return write_store(out, store, database_id);
  check_keepable(out, keep);
  if (store.size() != keep.records)
    throw error(error_code::precondition,
                "write_store: the store no longer has one record per record line of its input");
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
void add_worker(CLI::App& app, int& rc);
void add_claims(CLI::App& app, int& rc);
void add_plan(CLI::App& app, int& rc);
void add_apply(CLI::App& app, int& rc);
void add_rollback(CLI::App& app, int& rc);
void add_recover(CLI::App& app, int& rc);
void add_diff(CLI::App& app, int& rc);
void add_wal(CLI::App& app, int& rc);
/// `memhealth index build|check STORE --index flat:PATH` (cmd_repair.cpp).
void add_index(CLI::App& app, int& rc);
#if MEMHEALTH_CLI_HAVE_WATCH
void add_watch(CLI::App& app, int& rc);
#endif
#if MEMHEALTH_CLI_HAVE_SQLITE
void add_review(CLI::App& app, int& rc);
void add_history(CLI::App& app, int& rc);
void add_migrate(CLI::App& app, int& rc);
#endif

}  // namespace memhealth::cli
