// memhealth watch: a long-running process beside a live agent (live/watch.hpp). It re-reads the
// store every poll period, tails the retrieval-events file, runs the checks the reference cadence
// (or a TOML configuration) makes due, appends every new and resolved finding to a findings log
// (JSONL), and exposes Prometheus metrics as a textfile and, opt-in, on a localhost port.
// SIGTERM or SIGINT: the current step finishes, the log and metrics are flushed, exit 0.
#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "memhealth/live/watch.hpp"
#include "memhealth/live/watch_repair.hpp"

#include "cli.hpp"
#include <fcntl.h>
#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <toml++/toml.h>
#include <unistd.h>

namespace memhealth::cli {

namespace {

std::atomic<bool> g_stop{false};
extern "C" void watch_on_signal(int) {
  g_stop.store(true);
}

struct watch_cli_options {
  std::string store;
  std::string events;
  std::string config;
  std::string state;
  std::string findings_log;
  std::string metrics_file;
  int metrics_port = -1;  ///< -1 = not given (the configuration's, else none)
  std::string poll;
  bool once = false;
  bool repair = false;
  std::string wal;  ///< --wal: the repair log (overrides [repair] wal)
  detection_cli_options detect;
};

// ------------------------------------------------------------------ configuration (TOML)

struct watch_config {
  watch_options opt;
  std::string findings_log;
  std::string metrics_file;
  int metrics_port = 0;
  bool repair = false;     ///< [repair] enabled / --repair
  std::string repair_log;  ///< [repair] wal (default STORE.memhealth-watch.wal)
  watch_repair_options repair_opt;
};

[[noreturn]] void config_error(const std::string& file, const std::string& what) {
  throw error(error_code::invalid_argument, "--config " + file + ": " + what);
}

std::chrono::milliseconds config_duration(const toml::node& n, const std::string& file,
                                          const std::string& key) {
  const auto s = n.value<std::string>();
  std::optional<std::chrono::milliseconds> d;
  if (s) d = *s == "0" ? std::optional{std::chrono::milliseconds{0}} : parse_duration(*s);
  if (!d)
    config_error(file,
                 key + ": expected a duration such as \"90s\", \"5m\", \"1h\", \"1d\"" +
                     (key == "cadence.poll" ? std::string()
                                            : std::string(" (or \"0\": only when triggered)")));
  return *d;
}

template <class T>
T config_number(const toml::node& n, const std::string& file, const std::string& key, T lo, T hi) {
  std::optional<double> v;
  if (auto i = n.value<std::int64_t>()) v = static_cast<double>(*i);
  if (!v || !(*v >= static_cast<double>(lo) && *v <= static_cast<double>(hi)))
    config_error(file, key + ": expected a number in [" + std::to_string(lo) + ", " +
                           std::to_string(hi) + "]");
  return static_cast<T>(*v);
}

float config_float(const toml::node& n, const std::string& file, const std::string& key, double lo,
                   double hi) {
  const auto v = n.value<double>();  // integers convert too
  if (!v || !(*v >= lo && *v <= hi))
    config_error(file, key + ": expected a number in [" + std::to_string(lo) + ", " +
                           std::to_string(hi) + "]");
  return static_cast<float>(*v);
}

// Reads the TOML configuration over the defaults. Every key is checked: an unknown section or
// key is an error (a typo must not silently fall back to a default).
void read_config(const std::string& file, watch_config& c) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec))
    config_error(file, "no such file (or not a regular file)");
  toml::table t;
  try {
    t = toml::parse_file(file);
  } catch (const toml::parse_error& e) {
    std::ostringstream s;
    s << e.description() << " (line " << e.source().begin.line << ", column "
      << e.source().begin.column << ")";
    config_error(file, s.str());
  }
  const auto section = [&](std::string_view name, auto&& each) {
    const auto* n = t.get(name);
    if (!n) return;
    const auto* tab = n->as_table();
    if (!tab) config_error(file, "[" + std::string(name) + "] must be a table");
    for (const auto& [k, v] : *tab)
      each(std::string(k.str()), v, std::string(name) + "." + std::string(k.str()));
  };
  for (const auto& [k, v] : t) {
    (void)v;
    const std::string key(k.str());
    if (key != "cadence" && key != "risk" && key != "output" && key != "check" && key != "repair")
      config_error(file, "unknown section or key '" + key +
                             "' (known: [cadence], [risk], [output], [check], [repair])");
  }
  auto& cad = c.opt.cadence;
  section("cadence", [&](const std::string& k, const toml::node& v, const std::string& full) {
    const auto d = config_duration(v, file, full);
    if (k == "poll") {
      if (d.count() <= 0) config_error(file, full + ": must be > 0");
      cad.poll = d;
    } else if (k == "write_checks") {
      cad.write_checks = d;
    } else if (k == "structural") {
      cad.structural = d;
    } else if (k == "structural_full") {
      cad.structural_full = d;
    } else if (k == "full") {
      cad.full = d;
    } else if (k == "monitor") {
      cad.monitor = d;
    } else {
      config_error(file, "unknown key " + full +
                             " (known: poll, write_checks, structural, structural_full, full, "
                             "monitor)");
    }
  });
  section("risk", [&](const std::string& k, const toml::node& v, const std::string& full) {
    if (k == "burst_writes") {
      c.opt.risk.burst_writes = config_number<std::size_t>(v, file, full, 0, 1'000'000'000);
    } else if (k == "burst_window") {
      c.opt.risk.burst_window = config_duration(v, file, full);
      if (c.opt.risk.burst_window.count() <= 0) config_error(file, full + ": must be > 0");
    } else if (k == "batch_keys") {
      const auto* a = v.as_array();
      if (!a) config_error(file, full + ": expected an array of strings");
      c.opt.risk.batch_keys.clear();
      for (const auto& e : *a) {
        const auto s = e.value<std::string>();
        if (!s) config_error(file, full + ": expected an array of strings");
        c.opt.risk.batch_keys.push_back(*s);
      }
    } else {
      config_error(file,
                   "unknown key " + full + " (known: burst_writes, burst_window, batch_keys)");
    }
  });
  section("output", [&](const std::string& k, const toml::node& v, const std::string& full) {
    if (k == "findings_log" || k == "metrics_file") {
      const auto s = v.value<std::string>();
      if (!s) config_error(file, full + ": expected a path (string)");
      (k == "findings_log" ? c.findings_log : c.metrics_file) = *s;
    } else if (k == "metrics_port") {
      c.metrics_port = config_number<int>(v, file, full, 0, 65535);
    } else {
      config_error(file,
                   "unknown key " + full + " (known: findings_log, metrics_file, metrics_port)");
    }
  });
  section("repair", [&](const std::string& k, const toml::node& v, const std::string& full) {
    auto& r = c.repair_opt;
    if (k == "enabled") {
      const auto b = v.value<bool>();
      if (!b) config_error(file, full + ": expected true or false");
      c.repair = *b;
    } else if (k == "tier2_apply") {
      const auto* a = v.as_array();
      if (!a) config_error(file, full + ": expected an array of action types");
      r.tier2_apply.clear();
      for (const auto& e : *a) {
        const auto t = e.value<std::string>();
        if (!t || (*t != action_types::merge_duplicates && *t != action_types::resolve_conflict &&
                   *t != action_types::downweight))
          config_error(file, full + ": " + (t ? "'" + *t + "' is not" : std::string("expected")) +
                                 " a tier-2 action type (merge_duplicates, resolve_conflict, "
                                 "downweight)");
        r.tier2_apply.insert(*t);
      }
    } else if (k == "tier2_veto_window") {
      const auto t = v.value<std::string>();
      const auto d = t ? parse_duration(*t) : std::nullopt;
      if (!d) config_error(file, full + ": expected a duration such as \"24h\" or \"0s\" (off)");
      r.tier2_veto_window = *d;
    } else if (k == "max_records") {
      r.max_records = config_number<std::size_t>(v, file, full, 1, 1'000'000'000);
    } else if (k == "blast_radius_threshold") {
      r.planner.blast_radius_threshold =
          config_number<std::size_t>(v, file, full, 1, 1'000'000'000);
    } else if (k == "retry_limit") {
      r.retry_limit = config_number<int>(v, file, full, 0, 100);
    } else if (k == "wal") {
      const auto s = v.value<std::string>();
      if (!s || s->empty()) config_error(file, full + ": expected a path (string)");
      c.repair_log = *s;
    } else {
      config_error(file, "unknown key " + full +
                             " (known: enabled, tier2_apply, tier2_veto_window, max_records, "
                             "blast_radius_threshold, retry_limit, wal)");
    }
  });
  section("check", [&](const std::string& k, const toml::node& v, const std::string& full) {
    auto& s = c.opt.check;
    if (k == "near_duplicate_threshold")
      s.near_duplicate_threshold = config_float(v, file, full, -1, 1);
    else if (k == "conflict_candidate_threshold")
      s.conflict_candidate_threshold = config_float(v, file, full, -1, 1);
    else if (k == "stale_threshold")
      s.stale_threshold = config_float(v, file, full, 0, 1);
    else if (k == "threads")
      s.threads = config_number<unsigned>(v, file, full, 1, 256);
    else if (k == "duplicate_guards") {
      const auto b = v.value<bool>();
      if (!b) config_error(file, full + ": expected true or false");
      s.duplicate_guards = *b;
    } else if (k == "max_content_bytes") {
      s.content_size.max_bytes = config_number<std::size_t>(v, file, full, 0, 1'000'000'000);
    } else if (k == "secrets" || k == "mojibake" || k == "content_size" || k == "content_time") {
      const auto b = v.value<bool>();
      if (!b) config_error(file, full + ": expected true or false");
      if (!*b) turn_hygiene_off(s, k);
    } else
      config_error(file, "unknown key " + full +
                             " (known: near_duplicate_threshold, conflict_candidate_threshold, "
                             "stale_threshold, threads, duplicate_guards, max_content_bytes, "
                             "secrets, mojibake, content_size, content_time)");
  });
}

// ------------------------------------------------------------------ snapshots of the store

// The files whose size and modification time tell whether the store changed: the store itself,
// and for SQLite its -wal file (a committed write may sit there until a checkpoint).
std::string store_signature(const std::string& store) {
  std::string sig;
  const std::string file = store_file_path(store);
  for (const std::string& f : {file, file + "-wal"}) {
    struct stat st {};
    if (::stat(f.c_str(), &st) != 0) {
      sig += "-|";
      continue;
    }
    sig += std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" +
           std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
           std::to_string(st.st_mtim.tv_nsec) + "|";
  }
  return sig;
}

struct snapshot {
  std::optional<memory_store<>> store;
  std::string signature;
  std::size_t issues = 0;
#if MEMHEALTH_CLI_HAVE_PG
  /// A postgresql:// store as this poll read it (its connection open until the poll ends): the
  /// live store the poll's repairs write through, so the table is read once per poll.
  std::optional<pg_store<>> pg;  // the live store, for repairs (kept only by a repairing watch)
  std::string pg_scope;          // its pg_history_scope
#endif
};

// Re-reads the store when its files changed. A JSONL line still being written (no newline yet)
// is not a record yet: the snapshot ends at the last complete line. @throws memhealth::error.
void refresh(snapshot& s, const std::string& store, std::size_t dim) {
  const std::string sig = store_signature(store);
  if (s.store && sig == s.signature) return;
  load_result lr;
  if (is_sqlite_store(store)) {
    lr = load_store_file(store);
  } else {
    check_jsonl_input(store, "store");
    std::string text = memhealth::detail::read_whole_file(store);
    const auto end = text.rfind('\n');
    text.resize(end == std::string::npos ? 0 : end + 1);
    lr = parse_jsonl(text, store);
  }
  s.issues = lr.issues.size();
  s.store.emplace(memory_store<>::from_records(
      std::move(lr.records), dim ? dim : memory_store<>::most_common_dimension(lr.records)));
  s.signature = sig;
}

#if MEMHEALTH_CLI_HAVE_PG
// A postgresql:// store: every poll reads every row of the mapped table (one REPEATABLE READ
// transaction, pg_store::open), as `check` does: there is no file whose size and time tell
// whether it changed, and an incremental read by the mapped updated_at column would miss
// deleted rows. The signature (row count and the ids' fingerprint) is what the store-shrank guard
// compares between two polls. Writable (UPDATE privilege checked) only when the watch repairs.
// @throws memhealth::error as pg_store::open (io: server unreachable or connection lost).
void refresh_pg(snapshot& s, const std::string& uri, std::size_t dim, bool writable) {
  s.pg.reset();
  s.store.reset();
  auto live = open_pg_store(uri, !writable);
  // the ids' fingerprint a write-ahead log records (store_identity.hpp), with the row count
  s.signature = "pg:" + std::to_string(live.size()) + ":" + identify_store(live).fingerprint;
  s.issues = 0;
  if (s.pg_scope.empty()) s.pg_scope = pg_history_scope(live);  // (a catalog query: once)
  std::vector<memory_record> rows;
  if (writable) {  // repairs write through the live store: the watcher checks a copy
    rows.reserve(live.size());
    for (std::size_t i = 0; i < live.size(); ++i) rows.push_back(live.record(i));
  } else {  // no repair: the rows are moved out, held once, and the connection closed
    rows = std::move(live).release_records();
  }
  const std::size_t d = dim ? dim : memory_store<>::most_common_dimension(rows);
  if (writable) s.pg.emplace(std::move(live));
  s.store.emplace(memory_store<>::from_records(std::move(rows), d));
}
#endif

// Drops what a poll read (the store is read again at the next poll).
void forget(snapshot& s) {
  s.store.reset();
#if MEMHEALTH_CLI_HAVE_PG
  s.pg.reset();
#endif
}

// ------------------------------------------------------------------ the events file

// Reads the complete lines added to the events file since the last poll; a file replaced
// (rotated: another inode) or shorter than the position read is read from its start.
void tail_events(watch_state& ws, watcher& w, const std::string& path, std::size_t& bad_lines) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;  // not there (yet, or mid-rotation): next poll
  tail_position pos = ws.tail(path).value_or(tail_position{});
  const auto dev = static_cast<std::uint64_t>(st.st_dev),
             ino = static_cast<std::uint64_t>(st.st_ino);
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (pos.device != dev || pos.inode != ino || size < pos.offset) pos = {dev, ino, 0};
  if (size == pos.offset) return;
  std::ifstream in(path, std::ios::binary);
  if (!in) return;
  in.seekg(static_cast<std::streamoff>(pos.offset));
  std::string chunk(size - pos.offset, '\0');
  in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
  chunk.resize(static_cast<std::size_t>(in.gcount()));
  const auto end = chunk.rfind('\n');
  if (end == std::string::npos) return;  // no complete line yet
  chunk.resize(end + 1);
  auto ev = parse_events_jsonl(chunk, path);
  bad_lines += ev.issues.size();
  w.add_events(std::move(ev.retrievals), std::move(ev.feedback));
  pos.offset += chunk.size();
  ws.set_tail(path, pos);
}

// ------------------------------------------------------------------ metrics

struct metrics {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  prometheus::Family<prometheus::Counter>& reported =
      prometheus::BuildCounter()
          .Name("memhealth_findings_reported_total")
          .Help("Findings reported (first seen) by the watch, by kind and severity")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& resolved =
      prometheus::BuildCounter()
          .Name("memhealth_findings_resolved_total")
          .Help("Open findings a full run no longer found, or whose records were removed")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& open =
      prometheus::BuildGauge()
          .Name("memhealth_findings_open")
          .Help("Findings reported and not resolved, by kind and severity")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& duration =
      prometheus::BuildGauge()
          .Name("memhealth_check_duration_seconds")
          .Help("Wall time of the last run of each check task")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& runs = prometheus::BuildCounter()
                                                      .Name("memhealth_check_runs_total")
                                                      .Help("Runs of each check task")
                                                      .Register(*registry);
  prometheus::Family<prometheus::Gauge>& gauges = prometheus::BuildGauge()
                                                      .Name("memhealth_watch")
                                                      .Help("State of the watch")
                                                      .Register(*registry);
  prometheus::Family<prometheus::Counter>& counters =
      prometheus::BuildCounter()
          .Name("memhealth_watch_events_total")
          .Help("Polls, store changes, risk windows and errors seen by the watch")
          .Register(*registry);
  std::set<std::pair<std::string, std::string>> open_labels;

  void set_open(const std::map<std::pair<std::string, std::string>, std::size_t>& now) {
    for (const auto& l : open_labels)
      if (!now.count(l)) open.Add({{"kind", l.first}, {"severity", l.second}}).Set(0);
    for (const auto& [l, n] : now) {
      open.Add({{"kind", l.first}, {"severity", l.second}}).Set(static_cast<double>(n));
      open_labels.insert(l);
    }
  }
  void count(const std::string& what, double n = 1) {
    counters.Add({{"event", what}}).Increment(n);
  }
  void gauge(const std::string& what, double v) { gauges.Add({{"value", what}}).Set(v); }
  [[nodiscard]] std::string text() const {
    return prometheus::TextSerializer().Serialize(registry->Collect());
  }
};

// ------------------------------------------------------------------ the findings log

class findings_log {
 public:
  explicit findings_log(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw error(error_code::io,
                  "findings log " + path + ": cannot open for appending: " + std::strerror(errno));
  }
  ~findings_log() {
    if (fd_ >= 0) ::close(fd_);
  }
  findings_log(const findings_log&) = delete;
  findings_log& operator=(const findings_log&) = delete;

  // One JSON line per event, written at once (O_APPEND: whole lines even beside other writers).
  void write(const watch_event& e, utc_time now) {
    report one;
    one.findings.push_back(e.what);
    nlohmann::ordered_json j;
    j["time"] = format_timestamp(timestamp{now, 0});
    j["event"] = e.resolved ? "resolved" : "finding";
    j["task"] = e.task;
    j["key"] = e.key;
    j["finding"] = findings_json(one)[0];
    const std::string line = j.dump() + "\n";
    std::size_t done = 0;
    while (done < line.size()) {
      const auto n = ::write(fd_, line.data() + done, line.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        throw error(error_code::io,
                    "findings log " + path_ + ": write failed: " + std::strerror(errno));
      done += static_cast<std::size_t>(n);
    }
  }
  void sync() {
    if (::fsync(fd_) != 0)
      throw error(error_code::io,
                  "findings log " + path_ + ": fsync failed: " + std::strerror(errno));
  }

 private:
  std::string path_;
  int fd_ = -1;
};

// One watch per state database: a second one would report every finding again. An flock on the
// database file (SQLite's own locks are fcntl locks, which flock does not touch on Linux).
class watch_lock {
 public:
  explicit watch_lock(const std::string& path, bool create = false,
                      const char* held =
                          "another memhealth watch is running with this state "
                          "database (the same store); stop it first, or give "
                          "this one its own --state") {
    fd_ = ::open(path.c_str(), create ? O_RDWR | O_CREAT | O_CLOEXEC : O_RDONLY | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw error(error_code::io,
                  path + ": cannot open the state database to lock it: " + std::strerror(errno));
    while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd_);
      fd_ = -1;
      if (err == EWOULDBLOCK) throw error(error_code::busy, path + ": " + held);
      throw error(error_code::io, path + ": cannot lock the state database: " + std::strerror(err));
    }
  }
  ~watch_lock() {
    if (fd_ >= 0) ::close(fd_);
  }
  watch_lock(const watch_lock&) = delete;
  watch_lock& operator=(const watch_lock&) = delete;

 private:
  int fd_ = -1;
};

// ------------------------------------------------------------------ repairs

// The watch's repairs (live/watch_repair.hpp) on an sqlite: store or a postgresql:// store,
// through a log of its own. An sqlite: store is opened afresh for each repair run (its index
// then holds the agent's latest records); a postgresql:// store is the one the poll read (no
// second read of the table), each action one transaction under the scope's advisory lock, as
// `apply` runs it. An action runs only on the records the plan saw (compare-and-swap), so the
// agent's concurrent edits are never lost or repaired blindly. Nothing is recovered at start:
// each action was one store transaction, whole or absent after a crash.
class watch_repairer {
 public:
  /// `scope`: the store's name in the repair history and review queue (as apply and review
  /// name it).
  watch_repairer(std::string store, std::string log, watch_repair_options opt, std::string scope)
      : store_(std::move(store)), log_(std::move(log)), opt_(std::move(opt)) {
    opt_.history_scope = std::move(scope);
  }

  /// Repairs `findings` of `snapshot` in an sqlite: store (opened here).
  watch_repair_result run(const memory_store<>& snapshot, std::vector<finding> findings,
                          sqlite_state& state, utc_time now) {
    auto live = open_sqlite_store(store_, false);
    wal_writer_options wo;
    wo.store = identify_store(
        snapshot, std::filesystem::absolute(store_file_path(store_)).lexically_normal().string());
    wo.store->database_id = live.database_id();
    return run_on(snapshot, std::move(findings), live, wo, state, now);
  }
#if MEMHEALTH_CLI_HAVE_PG
  /// Repairs `findings` of `snapshot` in `live`, the postgresql:// store `snapshot` was read
  /// from (the log names it as apply's does: its description, mapping and database id).
  watch_repair_result run(const memory_store<>& snapshot, std::vector<finding> findings,
                          pg_store<>& live, sqlite_state& state, utc_time now) {
    wal_writer_options wo;
    wo.store = identify_store(live, pg_log_label(live));
    wo.store->database_id = live.database_id();
    return run_on(snapshot, std::move(findings), live, wo, state, now);
  }
#endif
  [[nodiscard]] const std::string& log() const noexcept {
    return log_;
  }

 private:
  template <class S>
  watch_repair_result run_on(const memory_store<>& snapshot, std::vector<finding> findings, S& live,
                             const wal_writer_options& wo, sqlite_state& state, utc_time now) {
    wal_writer w(log_, wo);
    auto r = repair_watch_findings(snapshot, std::move(findings), live, w, state, opt_, now,
                                   [] { return g_stop.load(); });
    w.sync();
    return r;
  }

  std::string store_;
  std::string log_;
  watch_repair_options opt_;
};

// ------------------------------------------------------------------ the loop

std::string seconds_text(double s) {
  std::ostringstream o;
  o.setf(std::ios::fixed);
  o.precision(s < 10 ? 2 : 0);
  o << s << " s";
  return o.str();
}

// Sleeps for one poll period, waking early for SIGTERM or SIGINT.
void sleep_until_next_poll(std::chrono::milliseconds period) {
  const auto until = std::chrono::steady_clock::now() + period;
  while (!g_stop.load() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds{50});
}

utc_time clock_now() {
  return std::chrono::time_point_cast<std::chrono::milliseconds>(std::chrono::system_clock::now());
}

// Files a watch run created before its first complete poll: a run that ends with an error before
// then (a configuration error the server answers at the first poll, a metrics port in use)
// leaves none of them behind (a tester found an empty state database and findings log after each
// refused start). Files that existed before the run are never touched.
struct watch_litter {
  std::vector<std::filesystem::path> created;
  bool kept = false;  // a poll completed: the files hold the run's state
  void note(const std::filesystem::path& p) {
    std::error_code ec;
    if (!std::filesystem::exists(p, ec) && !ec) created.push_back(p);
  }
  void clean() const noexcept {
    if (kept) return;
    for (const auto& p : created) {
      std::error_code ec;
      for (const char* sidecar : {"", "-wal", "-shm", "-journal"})
        std::filesystem::remove(p.string() + sidecar, ec);
    }
  }
};

int run_watch_steps(const watch_cli_options& o, watch_litter& litter) {
  if (o.detect.now_given)
    throw error(error_code::invalid_argument, "watch runs on the real clock: --now is not taken");
  const bool pg = is_pg_store(o.store);
  if (pg) {
#if MEMHEALTH_CLI_HAVE_PG
    if (o.state.empty())
      throw error(error_code::invalid_argument,
                  "--state: a postgresql:// store has no file beside which the watch's state "
                  "(cursors, findings history, review queue) could live; name the state database "
                  "with --state FILE (the one `check --since last` and `review` take for it)");
    (void)load_pg_mapping(pg_mapping_option());  // a bad mapping: exit 2 before anything runs
#else
    no_pg_support();
#endif
  } else {
    refuse_directory(store_file_path(o.store), "store");
    if (!std::filesystem::exists(store_file_path(o.store)))
      throw error(error_code::io, "store " + o.store + ": no such file");
  }
  watch_config c;
  if (!o.config.empty()) {
    refuse_directory(o.config, "--config");
    read_config(o.config, c);
  }
  {
    auto [settings, d] = detection_settings(o.detect);
    // command-line detection options given explicitly win over the file's [check]
    if (o.detect.settings.near_duplicate_threshold !=
        default_check_settings{}.near_duplicate_threshold)
      c.opt.check.near_duplicate_threshold = settings.near_duplicate_threshold;
    if (o.detect.settings.threads != default_check_settings{}.threads)
      c.opt.check.threads = settings.threads;
    if (!o.detect.settings.duplicate_guards) c.opt.check.duplicate_guards = false;
    if (o.detect.settings.content_size.max_bytes != default_check_settings{}.content_size.max_bytes)
      c.opt.check.content_size.max_bytes = settings.content_size.max_bytes;
    for (const auto& name : o.detect.hygiene_off) turn_hygiene_off(c.opt.check, name);
    c.opt.check.near_duplicate_window = settings.near_duplicate_window;
    c.opt.check.schema = settings.schema;
    c.opt.check.lexicon = settings.lexicon;
    c.opt.dimension = d.dimension;
  }
  if (!o.poll.empty()) {
    const auto p = parse_duration(o.poll);
    if (!p || p->count() <= 0)
      throw error(error_code::invalid_argument, "--poll: expected a duration > 0 such as 10s");
    c.opt.cadence.poll = *p;
  }
  if (!o.findings_log.empty()) c.findings_log = o.findings_log;
  if (!o.metrics_file.empty()) c.metrics_file = o.metrics_file;
  if (o.metrics_port >= 0) c.metrics_port = o.metrics_port;
  const auto state_path =
      o.state.empty() ? default_state_path(o.store) : std::filesystem::path(o.state);
  if (c.findings_log.empty())  // a postgresql:// store: beside the state database
    c.findings_log = pg ? state_path.string() + ".findings.jsonl"
                        : store_file_path(o.store) + ".memhealth-findings.jsonl";
  if (o.repair) c.repair = true;
  if (!o.wal.empty()) c.repair_log = o.wal;
  if (c.repair && !is_sqlite_store(o.store) && !pg)
    throw error(error_code::invalid_argument,
                "repairs in watch need an sqlite: store (or a postgresql:// one): a JSONL file "
                "another process appends to cannot be rewritten without losing its writes (check "
                "it here, and repair a copy with memhealth plan and apply)");
  if (c.repair && pg && c.repair_log.empty())
    throw error(error_code::invalid_argument,
                "--wal: a postgresql:// store has no file beside which the repair log could "
                "live; name the write-ahead log with --wal FILE (or [repair] wal in --config)");
  if (c.repair_log.empty() && !pg) c.repair_log = store_file_path(o.store) + ".memhealth-watch.wal";
  refuse_outputs_over_inputs({{"findings log", c.findings_log},
                              {"metrics file", c.metrics_file},
                              {"repair log", c.repair_log},
                              {"state database", pg ? state_path.string() : std::string()}},
                             {{"store", o.store},
                              {"--events", o.events},
                              {"--config", o.config},
                              {"--mapping", pg ? pg_mapping_option() : std::string()}});
  if (!c.repair && !c.repair_opt.tier2_apply.empty())
    std::cerr << "memhealth watch: [repair] tier2_apply is set but repairs are off (no --repair, "
                 "no [repair] enabled = true): nothing is repaired\n";
  c.opt.collect_findings = c.repair;

  litter.note(state_path);
  auto state = sqlite_state::open(state_path);
  const watch_lock one_watch(state_path.string());
  auto wstate = watch_state::open(state_path);
  // a migration declared (memhealth migrate start) when the watch starts: mixed versions are its
  // progress (info), and its records are re-embedded by `migrate run`, not planned here
  if (const auto mig = current_migration(state)) c.opt.check.migration_to = mig->to_version;
  litter.note(c.findings_log);
  findings_log log(c.findings_log);
  metrics m;
  std::unique_ptr<prometheus::Exposer> exposer;
  if (c.metrics_port) {
    try {
      exposer =
          std::make_unique<prometheus::Exposer>("127.0.0.1:" + std::to_string(c.metrics_port));
    } catch (const std::exception& e) {
      throw error(error_code::io, "--metrics-port " + std::to_string(c.metrics_port) +
                                      ": cannot listen on 127.0.0.1: " + e.what());
    }
    exposer->RegisterCollectable(m.registry);
  }
  if (!c.metrics_file.empty()) probe_output(c.metrics_file, "metrics file");
  std::optional<watcher> w;
  std::optional<watch_repairer> repairer;
  std::optional<watch_lock> one_repairer;  // one repairing watch per log (and so per store)
  if (c.repair)
    one_repairer.emplace(c.repair_log + ".lock", true,
                         "another memhealth watch repairs this store through this log; stop it "
                         "first (two repairing watches would fight over the same records)");
  // The watcher and the repairer, once the store's name is known: `scope` names it in the
  // findings and repair histories and the review queue (as apply and review name it), `bound`
  // is what the state database is tied to (as `check --since` ties it). A file's are known
  // now; a postgresql:// store's come from its server (pg_history_scope), at the first poll
  // that reaches it. @throws error(schema) when the state belongs to another store.
  const auto start_watching = [&](const std::string& scope, const std::string& bound) {
    state.bind_store(bound);
    c.opt.history_scope = scope;
    w.emplace(c.opt, state, wstate);
    if (!c.repair) return;
    repairer.emplace(o.store, c.repair_log, c.repair_opt, scope);
    // findings open before repairs were turned on, and repairs an earlier run left (the record
    // budget, a stop), are planned by a full run now: the incremental checks would not find
    // them again (their records did not change)
    const auto left = state.cursor("watch:repair_left"), done = state.cursor("watch:repair_done");
    if (!state.cursor("watch:repair"))
      w->request(watch_tasks::full, "repairs turned on");
    else if (left && (!done || *left > *done))
      w->request(watch_tasks::full, "repairs left by the last run");
  };
  if (!pg) {
    const std::string file =
        std::filesystem::absolute(store_file_path(o.store)).lexically_normal().string();
    start_watching(is_sqlite_store(o.store) ? "sqlite:" + file : file, file);
  }

  struct sigaction sa {};
  sa.sa_handler = watch_on_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);

  std::cerr << "memhealth watch: " << store_label_with_table(o.store) << " (state "
            << state_path.string() << ", findings log " << c.findings_log << ", poll every "
            << c.opt.cadence.poll.count() / 1000.0 << " s"
            << (c.metrics_port ? ", metrics on 127.0.0.1:" + std::to_string(c.metrics_port) : "")
            << (c.repair ? ", repairs through " + c.repair_log : std::string(", no repairs"))
            << ")\n";
  snapshot snap;
  std::size_t last_records = 0;
  std::string shrink_signature;
  std::size_t failures_in_a_row = 0;
  int rc = exit_ok;
  while (!g_stop.load()) {
    const utc_time now = clock_now();
    std::ostringstream line;
    line << "memhealth watch: " << format_timestamp(timestamp{now, 0}) << " ";
    const auto line_start = line.tellp();  // more than this: the poll's own report is in `line`
    try {
#if MEMHEALTH_CLI_HAVE_PG
      if (pg) {
        refresh_pg(snap, o.store, c.opt.dimension, c.repair);
        if (!w) {
          const std::string scope = snap.pg_scope;
          start_watching(scope, scope);
        }
      } else {
        refresh(snap, o.store, c.opt.dimension);
      }
#else
      refresh(snap, o.store, c.opt.dimension);
#endif
      // A store that lost more than half its records since the last poll may be caught mid-
      // rewrite (truncated, or replaced by a writer that has not finished): wait one poll, and
      // take it only when the next poll sees the same files.
      const std::size_t n = snap.store->size();
      if (last_records >= 10 && n * 2 < last_records && snap.signature != shrink_signature &&
          !o.once) {
        shrink_signature = snap.signature;
        m.count("store_shrank");
        std::cerr << line.str() << "the store shrank from " << last_records << " to " << n
                  << " records; waiting one poll before taking it\n";
        forget(snap);  // read it again next poll
        sleep_until_next_poll(c.opt.cadence.poll);
        continue;
      }
      if (n == 0) {
        // an empty store is reported, never taken as healthy (nor as a reason to resolve
        // every finding): nothing is checked until it holds records again
        m.count("store_empty");
        std::cerr << line.str() << "the store is EMPTY: nothing checked ("
                  << (pg ? "a wrong database, table or --mapping?"
                         : "a wrong path, or a file truncated by its writer?")
                  << ")\n";
        if (o.once) return exit_findings;
        forget(snap);
        sleep_until_next_poll(c.opt.cadence.poll);
        continue;
      }
      last_records = n;
      std::size_t bad_events = 0;
      if (!o.events.empty()) tail_events(wstate, *w, o.events, bad_events);
      auto res = w->poll(*snap.store, now, [&](const watch_event& e) {
        log.write(e, now);
        (e.resolved ? m.resolved : m.reported)
            .Add({{"kind", e.what.kind}, {"severity", std::string(to_string(e.what.severity))}})
            .Increment();
      });
      log.sync();
      litter.kept = true;
      m.count("poll");
      m.count("records_changed", static_cast<double>(res.changed));
      m.count("records_removed", static_cast<double>(res.removed));
      m.count("risk_window", static_cast<double>(res.risk_windows.size()));
      m.count("bad_event_line", static_cast<double>(bad_events));
      m.gauge("records", static_cast<double>(res.records));
      m.gauge("manual_queue_depth", static_cast<double>(state.manual_queue().size()));
      m.gauge("last_poll_timestamp_seconds",
              static_cast<double>(now.time_since_epoch().count()) / 1000);
      m.set_open(w->open_by_kind());
      for (const auto& r : res.runs) {
        m.duration.Add({{"task", r.task}}).Set(r.seconds);
        m.runs.Add({{"task", r.task}}).Increment();
      }
      line << res.records << " records, " << res.changed << " new or changed, " << res.removed
           << " removed";
      if (snap.issues) line << ", " << snap.issues << " unreadable lines";
      if (bad_events) line << ", " << bad_events << " bad event lines";
      for (const auto& rw : res.risk_windows) line << "; risk window: " << rw;
      for (const auto& v : res.new_versions) line << "; new embedding version " << v;
      for (const auto& r : res.runs)
        line << "; " << r.task << ": " << r.records_checked << " checked, " << r.findings
             << " findings (" << r.reported << " new, " << r.resolved << " resolved), "
             << seconds_text(r.seconds);
      line << "; " << res.open_findings << " open";
      if (repairer) {
#if MEMHEALTH_CLI_HAVE_PG
        const auto rr =
            snap.pg ? repairer->run(*snap.store, std::move(res.findings), *snap.pg, state, now)
                    : repairer->run(*snap.store, std::move(res.findings), state, now);
#else
        const auto rr = repairer->run(*snap.store, std::move(res.findings), state, now);
#endif
        state.set_cursor("watch:repair", now);
        // repairs left (the record budget, a stop, or records this poll's own earlier repairs
        // changed): a full run at the next poll (or the next start) finds their findings again,
        // as the checks of changed records would not (memhealth's own writes are no agent
        // change; a tester's "1 left to the next poll" was planned only by the daily full run)
        const std::size_t left =
            rr.deferred + rr.not_run + rr.plan_deferred + rr.changed_by_repairs;
        if (left > 0) {
          state.set_cursor("watch:repair_left", now);
          w->request(watch_tasks::full, "repairs left by the last run");
        } else if (rr.actions > 0) {
          state.set_cursor("watch:repair_done", now);
        }
        m.count("repair_applied", static_cast<double>(rr.applied));
        m.count("repair_queued", static_cast<double>(rr.queued));
        m.count("repair_failed", static_cast<double>(rr.failed));
        m.count("repair_deferred", static_cast<double>(rr.deferred));
        m.count("repair_skipped_changed", static_cast<double>(rr.changed_meanwhile));
        m.gauge("review_queue_depth", static_cast<double>(state.review_count()));
        if (rr.actions > 0) {
          line << "; repairs: " << rr.actions << " planned, " << rr.applied + rr.veto_applied
               << " applied (" << rr.records_changed << " records"
               << (rr.veto_applied ? ", " + std::to_string(rr.veto_applied) + " by the veto window"
                                   : std::string())
               << "), " << rr.already_applied << " already applied, " << rr.queued
               << " queued for review (new or updated)";
          if (rr.deferred + rr.plan_deferred)
            line << ", " << rr.deferred + rr.plan_deferred
                 << " more deferred to the next poll (record budget)";
          if (rr.changed_meanwhile)
            line << ", " << rr.changed_meanwhile
                 << " skipped (the agent changed their records since the snapshot)";
          if (rr.changed_by_repairs)
            line << ", " << rr.changed_by_repairs
                 << " left to the next poll (this poll's earlier repairs changed their records)";
          if (rr.not_run) line << ", " << rr.not_run << " not run (stopping)";
          if (rr.suspended) line << ", plan suspended: " << rr.suspend_reason;
          for (const auto& f : rr.failures) line << "; repair failed, queued for review: " << f;
          for (const auto& f : rr.failures_waiting)
            line << "; repair failed, its review item still waits for a person: " << f;
        }
        if (rr.veto_applied + rr.veto_failed > 0) {
          line << "; veto window: " << rr.veto_applied << " tier-2 review items applied (no veto)";
          if (rr.veto_failed)
            line << ", " << rr.veto_failed << " not applied (" << rr.veto_held
                 << " failed and wait for a person; the others' records changed since: closed)";
        }
        if (rr.closed)
          line << "; " << rr.closed
               << " review items closed as obsolete (their records changed or were retired since "
                  "they were queued)";
        m.count("repair_veto_applied", static_cast<double>(rr.veto_applied));
        m.count("review_closed", static_cast<double>(rr.closed));
        if (rr.failed > 0 && o.once) rc = exit_incomplete;
        if (rr.applied + rr.veto_applied > 0)
          snap.store.reset();  // the store changed: read it again next poll
      }
      failures_in_a_row = 0;  // the whole step ran (a failure at the repairs counts too)
    } catch (const error& e) {
      // a postgresql:// store whose server first answers with a configuration error (a
      // password in the URI, a mapping naming a missing table or column, a missing privilege,
      // a state database of another store): exit 2, as for a file before the loop
      if (pg && !w &&
          (e.code() == error_code::invalid_argument || e.code() == error_code::schema ||
           e.code() == error_code::precondition))
        throw;
      ++failures_in_a_row;
      m.count("poll_error");
      // after the poll's own report (the repairs failed): on the same line, set apart
      if (line.tellp() > line_start) line << "; ";
      line << "poll failed (" << failures_in_a_row << " in a row), "
           << (o.once ? std::string("not retried (--once)")
                      : "retrying in " + seconds_text(c.opt.cadence.poll.count() / 1000.0))
           << ": " << e.what();
      if (o.once) rc = exit_usage;  // --once did not do what it said
    }
    if (!c.metrics_file.empty()) {
      try {
        atomic_write(c.metrics_file, m.text());
      } catch (const error& e) {
        line << "; metrics file not written: " << e.what();
      }
    }
#if MEMHEALTH_CLI_HAVE_PG
    snap.pg.reset();  // a postgresql:// store's connection is not held between polls
#endif
    std::cerr << line.str() << "\n";
    if (o.once) break;
    sleep_until_next_poll(c.opt.cadence.poll);
  }
  if (g_stop.load()) std::cerr << "memhealth watch: stopped by a signal after a complete step\n";
  return rc;
}

int run_watch(const watch_cli_options& o) {
  watch_litter litter;
  try {
    return run_watch_steps(o, litter);
  } catch (...) {
    litter.clean();  // after run_watch_steps closed the state database and the findings log
    throw;
  }
}

}  // namespace

void add_watch(CLI::App& app, int& rc) {
  auto o = std::make_shared<watch_cli_options>();
  auto* cmd = app.add_subcommand(
      "watch",
      "Check a live store continuously: re-read it every poll, run the due checks (reference "
      "cadence or --config), log new and resolved findings, expose Prometheus metrics");
  cmd->add_option("store", o->store,
                  "Store (JSONL, sqlite:PATH, or postgresql://URI with --mapping and --state), "
                  "written by another process")
      ->required();
  cmd->add_option("--mapping", pg_mapping_option(),
                  "postgresql:// stores: the column mapping, a JSON file or a built-in name "
                  "(mem0, langgraph; default: memhealth's own schema)");
  cmd->add_option("--events", o->events,
                  "Retrieval-events file (JSONL) to tail for the retrieval monitor");
  cmd->add_option("--config", o->config,
                  "TOML configuration: [cadence], [risk], [output], [check] (see README)");
  cmd->add_option("--state", o->state,
                  "State database (default: STORE.memhealth-state.db beside the store; a "
                  "postgresql:// store needs it)");
  cmd->add_option("--findings-log", o->findings_log,
                  "Append-only findings log, JSONL (default: STORE.memhealth-findings.jsonl; "
                  "postgresql://: STATE.findings.jsonl beside --state)");
  cmd->add_option("--metrics-file", o->metrics_file,
                  "Prometheus textfile (text format), rewritten atomically after each poll");
  cmd->add_option("--metrics-port", o->metrics_port,
                  "Serve Prometheus metrics on 127.0.0.1:PORT (/metrics); 0 or absent: no port")
      ->transform(whole_number(0, 65535));
  cmd->add_option("--poll", o->poll, "Poll period (default 10s; overrides the configuration)")
      ->transform(duration(true));
  cmd->add_option("--wal", o->wal,
                  "Repair log (default: [repair] wal, else STORE.memhealth-watch.wal; a "
                  "postgresql:// store needs one)");
  cmd->add_flag(
      "--repair", o->repair,
      "Plan and apply repairs (sqlite: and postgresql:// stores): tier 1 at once, tier 2 by the "
      "configuration's [repair] tier2_apply, the rest to the review queue");
  cmd->add_flag("--once", o->once,
                "Poll once, run whatever is due, and exit (for cron or a systemd timer)");
  add_detection_options(cmd, o->detect);
  cmd->callback([o, &rc] { rc = run_watch(*o); });
}

}  // namespace memhealth::cli
