// memhealth migrate start|run|status|gate|switch|rollback|compact: the embedding-model switch of
// a store, carried through (live/sqlite_migration.hpp; the state in the store's state database,
// every batch through a write-ahead log): an sqlite: store in place (one transaction per batch),
// a JSONL store read whole and written back atomically after the step (damaged lines kept in
// their places; refused when another writer changed the file meanwhile), a postgresql:// store
// in place (--mapping; --state names its state database). Built with SQLite only.
#include "cli.hpp"
#include "interrupt.hpp"

#if MEMHEALTH_CLI_HAVE_SQLITE

#include <atomic>
#include <charconv>
#include <csignal>
#include <cstdlib>
#include <memory>
#include <sstream>

#include "memhealth/live/sqlite_migration.hpp"
#include "memhealth/repair/rollback.hpp"
#include "memhealth/repair/store_identity.hpp"
#include "memhealth/repair/wal_read.hpp"

#include <signal.h>
#include <unistd.h>

namespace memhealth::cli {

namespace {

struct migrate_cli_options {
  std::string store;
  std::string state;
  std::string wal;
  std::string to;
  int retention_days = min_retention_days;
  std::size_t batch = 100;
  std::size_t max_batches = 0;
  double rate = 0;   // embeddings per second (0 = no limit)
  double burst = 0;  // 0 = the batch size
  std::string max_wait = "10m";
  std::size_t sample = 500;
  gate_options gate;
  std::string format = "text";
  std::string now;               // "" = the system clock
  detection_cli_options models;  // --embedder, --embedding-model, model access
};

utc_time clock_of(const migrate_cli_options& o) {
  if (o.now.empty())
    return std::chrono::floor<std::chrono::milliseconds>(std::chrono::system_clock::now());
  const auto t = parse_timestamp(o.now);
  if (!t) throw error(error_code::invalid_argument, "--now: not an ISO-8601 time: " + o.now);
  return t->instant;
}

// SIGINT/SIGTERM during `migrate run`: the first one asks the run to stop after the batch in
// hand (migration_run_options::stop_requested), so what it committed reaches the store (a JSONL
// file is written back) and the tool says what was done and what is left; a second one acts as
// if the handler were not there (interrupt.hpp).
constexpr const char* migrate_interrupted =
    "memhealth migrate: interrupted: stopping after the batch in hand (interrupt again to stop at "
    "once)\n";

// A test hook (tests/cli_migrate.cmake): MEMHEALTH_TEST_MIGRATE_SIGNAL_AFTER="N" raises SIGINT
// in `migrate run` once N batches of the run are committed, "N:KILL" raises SIGKILL (a hard
// kill: a JSONL file is then not written back). Unset in normal use. Returns the batch count
// (0 = no hook) and whether to kill.
std::pair<std::size_t, bool> migrate_signal_hook() {
  const char* v = std::getenv("MEMHEALTH_TEST_MIGRATE_SIGNAL_AFTER");
  if (!v || !*v) return {0, false};
  const std::string_view t(v);
  std::size_t n = 0;
  const auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), n);
  if (ec != std::errc{}) return {0, false};
  return {n, std::string_view(p, static_cast<std::size_t>(t.data() + t.size() - p)) == ":KILL"};
}

// The store's name in its state database and log: the absolute path of a file store; for a
// postgresql:// store the server and database (never the connection string's password or
// options) and the mapping.
std::string store_key(const std::string& store) {
  if (is_pg_store(store)) return store_label(store) + " (mapping " + pg_mapping_option() + ")";
  return std::filesystem::absolute(store_file_path(store)).lexically_normal().string();
}

// The state database's path: --state, else beside the store (a postgresql:// store has no file
// beside it: require_store asks for --state).
std::filesystem::path migrate_state_path(const migrate_cli_options& o) {
  return o.state.empty() ? default_state_path(o.store) : std::filesystem::path(o.state);
}

void require_store(const migrate_cli_options& o) {
  if (is_pg_store(o.store)) {
#if !MEMHEALTH_CLI_HAVE_PG
    no_pg_support();
#endif
    if (o.state.empty())
      throw error(error_code::invalid_argument,
                  "--state: a postgresql:// store has no file beside it for the migration's state "
                  "database (its previous vectors are kept there): name one, e.g. --state "
                  "mem.memhealth-state.db");
    return;
  }
  if (!std::filesystem::exists(store_file_path(o.store)))
    throw error(error_code::io, "store " + o.store + ": no such file");
  if (!is_sqlite_store(o.store))
    check_jsonl_input(o.store);  // a directory, or a database given without sqlite:, is refused
}

// The state database (created for start; must exist otherwise), tied to the store.
sqlite_state open_state(const migrate_cli_options& o, bool create) {
  const auto path = migrate_state_path(o);
  if (!create && !std::filesystem::exists(path))
    throw error(error_code::precondition, "state database " + path.string() +
                                              ": no such file (no migration was declared for "
                                              "this store: memhealth migrate start)");
  auto s = sqlite_state::open(path);
  s.bind_store(store_key(o.store));
  return s;
}

// Closes the runs of `log` (at `path`) that have no run_end frame: a run killed mid-way (SIGINT,
// a crash). An intent that no commit or abort closes gets a commit when the store holds all its
// after-images (the batch reached the store before the kill) and an abort otherwise (it did not:
// the next run re-embeds those records); then the run gets its run_end frame (applied: the
// intents committed, skipped: those aborted), so `wal verify` passes. Committed batches a JSONL
// file never got stay committed in the log (`reconcile_migration` re-embeds their records).
// Returns one sentence per run closed.
template <class S>
std::vector<std::string> close_unfinished_runs(const std::string& path, const wal_contents& log,
                                               const S& live,
                                               const std::optional<store_identity>& ident,
                                               bool for_rollback) {
  using R = typename S::record_type;
  std::vector<std::string> open_runs;
  for (const auto& e : log.entries) {
    if (e.type == wal_frame_type::run_begin) open_runs.push_back(e.run);
    if (e.type == wal_frame_type::run_end) std::erase(open_runs, e.run);
  }
  std::vector<std::string> out;
  if (open_runs.empty()) return out;
  const auto acts = logged_actions(log);
  for (const auto& run : open_runs) {
    std::size_t committed = 0, closed_commit = 0, closed_abort = 0;
    wal_writer_options wo;
    wo.run_id = run;
    wo.store = ident;
    wal_writer w(path, wo);
    for (const auto& a : acts) {
      if (a.intent->run != run) continue;
      if (a.state == logged_state::committed) ++committed;
      if (a.state != logged_state::open) continue;
      bool reached = !a.intent->records.empty();
      for (const auto& img : a.intent->records) {
        const auto i = live.find(img.id);
        reached =
            reached && i &&
            memhealth::detail::undo::same_image<R>(encode_image(live.extract(*i)), img.after_json);
      }
      if (reached) {
        w.append_commit(a.intent->seq, a.intent->action, a.intent->idempotency_key);
        ++closed_commit;
      } else {
        w.append_abort(a.intent->seq, a.intent->action, a.intent->idempotency_key,
                       for_rollback ? "the run was interrupted before this batch reached the "
                                      "store; its records kept their previous vectors"
                                    : "the run was interrupted before this batch reached the "
                                      "store; the next migrate run re-embeds its records");
        ++closed_abort;
      }
    }
    w.append_run_end(committed + closed_commit, 0, 0, closed_abort);
    w.sync();
    out.push_back("run " + run + " of " + path +
                  " was interrupted; closed it: " + std::to_string(committed) +
                  " batches committed in the log, " + std::to_string(closed_commit) +
                  " open ones found in the store (committed now), " + std::to_string(closed_abort) +
                  " open ones not in the store (aborted: " +
                  (for_rollback ? std::string("their records kept their previous vectors, "
                                              "nothing to restore")
                                : std::string("this run re-embeds their records")) +
                  ")");
  }
  return out;
}

// The migration's log: --wal, else beside the store (STORE.memhealth-migrate.wal; for a
// postgresql:// store beside its state database, STATE.migrate.wal), tied to the store (its
// record ids, and its own id when it has one). An existing log is read first: runs left
// unfinished by a killed run are closed (close_unfinished_runs), and a log made for this store
// before records were added or removed (its id fingerprint differs; `check_log_store` finds
// most of the records it changed) is continued under the identity in its header. A log of
// another store is refused, naming --wal.
template <class S>
wal_writer open_wal(const migrate_cli_options& o, S& live, std::string& path,
                    std::vector<std::string>* notes = nullptr, bool for_rollback = false) {
  if (!o.wal.empty())
    path = o.wal;
  else if (is_pg_store(o.store))
    path = migrate_state_path(o).string() + ".migrate.wal";
  else
    path = store_file_path(o.store) + ".memhealth-migrate.wal";
  wal_writer_options wo;
  wo.store = identify_store(live, store_key(o.store));  // with the store's database_id, if any
  const std::string hint =
      ": name a new log for this store with --wal NEW.wal (the migration's state is in its "
      "state database, not in the log; the old log still rolls back what it holds)";
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && std::filesystem::file_size(path, ec) > 0) {
    const auto log = read_wal_file(path);
    if (log.store) {
      const auto c = check_log_store(log, live);
      if (!c.same_store) throw error(error_code::precondition, path + ": " + c.reason + hint);
      const bool by_id = !log.store->database_id.empty() && !wo.store->database_id.empty();
      if (!by_id && log.store->fingerprint != wo.store->fingerprint)
        wo.store = *log.store;  // the same store with records added or removed since
    }
    auto closed = close_unfinished_runs(path, log, live, wo.store, for_rollback);
    if (notes) notes->insert(notes->end(), closed.begin(), closed.end());
  }
  try {
    return wal_writer(path, wo);
  } catch (const error& e) {
    if (e.code() != error_code::precondition) throw;
    throw error(error_code::precondition, std::string(e.what()) + hint);
  }
}

// A JSONL store held for one migration step: locked against other memhealth processes
// (exclusively when the step writes it), read whole into memory (lines that cannot be parsed
// are kept in their places), and written back in place atomically, after checking that no other
// writer changed the file meanwhile (an agent appending to it would otherwise lose its lines).
// The write-back keeps the line of every record the step did not change byte for byte (its key
// order, its timestamps as written); only the records it changed are written in canonical form.
class migrate_jsonl_store {
 public:
  migrate_jsonl_store(const std::string& path, bool write)
      : path_(path),
        lock_(path, "the store", write ? lock_mode::exclusive : lock_mode::shared),
        text_(memhealth::detail::read_whole_file(path)),
        store_(load_memory_store(path, 0, &keep_)) {
    if (memhealth::detail::read_whole_file(path) != text_)
      throw error(error_code::busy,
                  path + ": changed by another writer while it was read; run the step again");
    loaded_ = split_lines(to_jsonl(store_));
    // the record lines of the file (load_memory_store fills `keep_` only for damaged lines)
    if (keep_.damaged.empty()) {
      keep_ = kept_lines{};
      for (std::size_t start = 0; start < text_.size();) {
        std::size_t end = std::min(text_.find('\n', start), text_.size());
        keep_.lines.emplace_back(text_, start, end - start);
        start = end + 1;
      }
      for (const auto& l : keep_.lines)
        keep_.is_record.push_back(l.find_first_not_of(" \t\r") != std::string::npos);
      keep_.records = static_cast<std::size_t>(
          std::count(keep_.is_record.begin(), keep_.is_record.end(), char{1}));
    }
    raw_ = keep_.records == store_.size() && loaded_.size() == store_.size();
  }

  memory_store<>& store() noexcept { return store_; }

  // Writes the store back (see the class comment): nothing when no record changed. `work` says
  // what the step did and what to do now, for the refusal ("" = nothing said).
  // @throws error(precondition) when the file changed since it was read: nothing is written.
  void write_back(const std::string& work) {
    const auto now = split_lines(to_jsonl(store_));
    if (now == loaded_) return;  // nothing changed: the file stays as it is, byte for byte
    if (memhealth::detail::read_whole_file(path_) != text_)
      throw error(error_code::precondition,
                  path_ +
                      ": changed by another writer while this step ran: nothing was written "
                      "back (the other writer's lines are as it wrote them)" +
                      work);
    if (!raw_) return write_store(path_, store_, keep_);
    std::string text;
    text.reserve(text_.size() + text_.size() / 2);
    std::size_t k = 0;  // record index
    for (std::size_t n = 0; n < keep_.lines.size(); ++n) {
      if (keep_.is_record[n]) {
        text += now[k] == loaded_[k] ? keep_.lines[n] : now[k];
        ++k;
      } else {
        text += keep_.lines[n];
      }
      if (n + 1 < keep_.lines.size() || text_.ends_with('\n')) text.push_back('\n');
    }
    atomic_write(path_, text);
  }

 private:
  static std::vector<std::string> split_lines(const std::string& t) {
    std::vector<std::string> out;
    for (std::size_t start = 0; start < t.size();) {
      const std::size_t end = std::min(t.find('\n', start), t.size());
      out.emplace_back(t, start, end - start);
      start = end + 1;
    }
    return out;
  }
  std::string path_;
  file_lock lock_;
  std::string text_;  // the file as read
  kept_lines keep_;
  memory_store<> store_;
  std::vector<std::string> loaded_;  // each record's canonical line as read
  bool raw_ = false;  // the file's record lines map one to one onto the store's records
};

// Runs `step(live)` on the store `o.store` opened for reading, or for writing when `write`: an
// sqlite: or postgresql:// store is written in place by the step itself (a transaction per
// action); a JSONL store is written back after the step, and also when the step throws (what
// it applied is in the log: the file must hold it too), then the error propagates. The step
// may say what it did in `work` (for the refusal when the file changed meanwhile).
template <class F>
int with_migrate_store(const migrate_cli_options& o, bool write, F&& step,
                       const std::string* work = nullptr) {
  const std::string none;
  if (!work) work = &none;
  if (is_pg_store(o.store)) {
#if MEMHEALTH_CLI_HAVE_PG
    auto live = open_pg_store(o.store, !write);
    return step(live);
#else
    no_pg_support();
#endif
  }
  if (is_sqlite_store(o.store)) {
    auto live = open_sqlite_store(o.store, !write);
    return step(live);
  }
  migrate_jsonl_store file(o.store, write);
  int rc = 0;
  try {
    rc = step(file.store());
  } catch (...) {
    if (write) {
      try {
        file.write_back(*work);
      } catch (const std::exception& e) {
        std::cerr << "memhealth migrate: " << e.what() << "\n";
      }
    }
    throw;
  }
  if (write) file.write_back(*work);
  return rc;
}

std::shared_ptr<const cli_embedder> embedder_of(const migrate_cli_options& o) {
  if (o.models.embedder.empty())
    throw error(error_code::invalid_argument,
                "--embedder: name the new model (lexical:DIM[:SEED], or openai:URL with "
                "--embedding-model)");
  return make_cli_embedder(o.models, 0);
}

int run_start(const migrate_cli_options& o) {
  require_store(o);
  const auto e = embedder_of(o);
  if (!o.to.empty() && o.to != e->ver)
    throw error(error_code::invalid_argument, "--to " + o.to + ": the embedder writes '" + e->ver +
                                                  "' (the version is the embedder's)");
  return with_migrate_store(o, false, [&](auto& live) {
    auto state = open_state(o, true);
    const auto m =
        start_migration(state, live, e->ver, e->description, o.retention_days, clock_of(o));
    const std::size_t left = records_left(live, m.to_version);
    std::cerr << "memhealth migrate: migration " << m.id << " declared: " << left
              << " records from " << (m.from_versions.empty() ? "(none)" : m.from_versions)
              << " to " << m.to_version << " (" << m.embedder << "); previous vectors kept "
              << m.retention_days << " days after the switch\n";
    if (left == 0) {
      const auto c = count_versions(live);
      const auto on = c.per_version.find(m.to_version);
      std::cerr << "memhealth migrate: nothing to re-embed: "
                << (live.size() == 0 ? std::string("the store has no records")
                    : on == c.per_version.end()
                        ? "none of its " + std::to_string(live.size()) + " records has a vector"
                        : "its " + std::to_string(on->second) + " records with a vector are on " +
                              m.to_version + " already")
                << ". The migration is declared all the same: new writes are tagged with "
                << m.to_version << " from now on; `migrate run` will re-embed records written "
                << "on another version meanwhile, and `migrate switch` needs no gate while "
                   "nothing was re-embedded\n";
    }
    return int{exit_ok};
  });
}

// One `migrate run` step on `live`: what it did goes to `report` (printed once the store holds
// it: a JSONL file is written back after the step) and `work` (for a refused write-back).
template <class S>
int run_batches(const migrate_cli_options& o, const cli_embedder& e,
                const migration_run_options& ro, sqlite_state& state, S& live,
                std::ostringstream& report, std::string& work) {
  // refusals before the log is opened or closed (nothing is written on a refusal)
  if (const auto m = current_migration(state)) require_migration_store(state, *m, live);
  std::string wal_path;
  std::vector<std::string> notes;
  auto w = open_wal(o, live, wal_path, &notes);
  for (const auto& n : notes) std::cerr << "memhealth migrate: " << n << "\n";
  const auto r = run_migration(live, state, e, w, ro, clock_of(o));
  w.sync();
  work = "; this step re-embedded " + std::to_string(r.reembedded) + " records in " +
         std::to_string(r.batches) +
         " batches in memory only. The log and the state database hold those batches: run "
         "`memhealth migrate run` again; it finds the records the file still has on the old "
         "version and re-embeds them";
  auto& out = report;
  if (r.reconciled)
    out << "memhealth migrate: " << r.reconciled
        << " records of batches logged earlier were not in the store (an interrupted run, or a "
           "file not written back): re-embedded again\n";
  out << "memhealth migrate: migration " << r.migration << ": " << r.batches << " batches, "
      << r.reembedded << " records re-embedded through " << wal_path << " (" << r.embed_calls
      << " embedding calls" << (e.stats ? ", " + e.stats() : std::string())
      << (r.rate_waited.count()
              ? ", waited " + std::to_string(r.rate_waited.count()) + " ms for the rate limit"
              : std::string())
      << ")\n";
  if (r.interrupted) {
    // the command lines to go on with (the store as shown: no password of a connection string)
    std::string where = store_label(o.store);
    if (!o.state.empty()) where += " --state " + o.state;
    if (!o.wal.empty()) where += " --wal " + o.wal;
    std::string model = " --embedder " + o.models.embedder;
    if (!o.models.embedding_model.empty())
      model += " --embedding-model " + o.models.embedding_model;
    const int sig = interrupt_guard::signal();
    out << "memhealth migrate: interrupted (" << (sig == SIGTERM ? "SIGTERM" : "SIGINT")
        << "): migration " << r.migration << " stopped after " << r.batches
        << " batches of this run, each committed and in the store; " << r.left
        << " records left. Run `memhealth migrate run " << where << model
        << "` again to continue, or `memhealth migrate rollback " << where
        << "` to give the re-embedded records their previous vectors back\n";
    return 128 + (sig ? sig : SIGINT);
  }
  if (r.left > 0) {
    out << "memhealth migrate: " << r.left << " records left"
        << (r.stopped.empty() ? std::string() : " (" + r.stopped + ")")
        << "; run again to continue\n";
    return exit_incomplete;
  }
  out << "memhealth migrate: 0 records left; next: memhealth migrate "
      << (r.reembedded == 0 && migration_kept(state, r.migration) == 0 ? "switch " : "gate ")
      << store_label(o.store) << "\n";
  return exit_ok;
}

int run_run(const migrate_cli_options& o) {
  require_store(o);
  const auto e = embedder_of(o);
  auto state = open_state(o, false);
  // refusals before the store and the log are opened (nothing is written on a refusal)
  const auto m = current_migration(state);
  if (!m)
    throw error(error_code::precondition, "no migration is running on " + store_label(o.store) +
                                              " (memhealth migrate start)");
  if (m->to_version != e->ver)
    throw error(
        error_code::invalid_argument,
        "--embedder writes '" + e->ver + "', the migration's target is '" + m->to_version + "'");
  migration_run_options ro;
  ro.batch_size = o.batch;
  ro.max_batches = o.max_batches;
  if (o.rate > 0) {
    ro.limits.per_second = o.rate;
    ro.limits.burst = o.burst > 0 ? o.burst : static_cast<double>(o.batch);
    const auto wait = parse_duration(o.max_wait);
    if (!wait)
      throw error(error_code::invalid_argument,
                  "--max-wait: expected e.g. 90s, 10m: " + o.max_wait);
    ro.limits.max_wait = *wait;
  } else {
    ro.limits.rate_limited = false;
  }
  // the first SIGINT or SIGTERM stops the run after the batch in hand (see
  // migrate_run_on_signal); the test hook raises one after a given batch
  const interrupt_guard signals(migrate_interrupted);
  ro.stop_requested = [] { return interrupt_guard::requested(); };
  if (const auto [after, kill] = migrate_signal_hook(); after > 0) {
    const bool hard = kill;  // clang 14: no structured binding in a lambda's capture
    const std::size_t at = after;
    ro.on_batch = [at, hard](std::size_t done) {
      if (done == at) ::raise(hard ? SIGKILL : SIGINT);
    };
  }
  std::ostringstream report;
  std::string work;
  const int rc = with_migrate_store(
      o, true, [&](auto& live) { return run_batches(o, *e, ro, state, live, report, work); },
      &work);
  std::cerr << report.str();  // only now: the store holds what it says
  return rc;
}

// The last gate of migration `m` in a line (its per-version figures in `groups`, when recorded).
std::string migrate_gate_line(const migration_info& m,
                              const std::vector<migration_gate_group_record>& groups) {
  if (m.gate_ms == 0) return "not run";
  std::string t = std::string(m.gate_passed ? "passed" : "did not pass") + " at " +
                  time_text(m.gate_ms) + " after batch " + std::to_string(m.gate_batches);
  if (groups.empty()) return t + " (" + m.gate_summary + ")";
  for (const auto& x : groups) {
    t += "\n    from " + x.old_version + ": ";
    if (x.n == 0) {
      t += "NOT GATED: " + x.note;
      continue;
    }
    std::ostringstream f;
    f << (x.passed ? "PASS" : "FAIL") << " on " << x.n << " of " << x.eligible << ", k " << x.k
      << ", mean overlap@k " << x.mean_overlap << ", mean rank correlation "
      << x.mean_rank_correlation;
    t += f.str();
  }
  return t;
}

// `migrate status`: exit 0; 2 when the migration was declared on another store (what the state
// database holds is shown, labelled); 3 after a rollback that left records as they were (changed
// by another writer, or gone), as the rollback itself exited.
template <class S>
int print_status(const migrate_cli_options& o, const S& live) {
  const auto path = migrate_state_path(o);
  std::optional<migration_info> m;
  migration_progress g;  // the kept previous vectors against the store as it is
  std::size_t kept = 0;
  std::string other_store;  // why the migration is not this store's ("" = it is)
  std::vector<migration_gate_group_record> groups;
  if (std::filesystem::exists(path)) {
    sqlite_state_options so;
    so.read_only = true;
    const auto state = sqlite_state::open(path, so);
    m = latest_migration(state);
    if (m) {
      try {
        require_migration_store(state, *m, live);
      } catch (const error& e) {
        if (e.code() != error_code::precondition) throw;
        other_store = e.what();
        const std::string code = std::string(to_string(e.code())) + ": ";
        if (other_store.starts_with(code)) other_store.erase(0, code.size());
      }
      groups = migration_gate_groups_of(state, m->id);
      if (other_store.empty()) {
        g = migration_progress_of(live, state, m->id);
        kept = g.kept;
      } else {
        kept = migration_kept(state, m->id);
      }
    }
  }
  const auto counts = count_versions(live);
  const bool ours = m && other_store.empty();
  const bool running = ours && m->status == "running";
  const bool rolled_back = m && m->status == "rolled_back";
  const std::size_t left = running ? records_left(live, m->to_version) : 0;
  // after a rollback: the records it did not restore (still on the migration's vector, or
  // changed since by another writer) and those gone from the store
  const std::size_t not_restored = g.written + g.changed;
  const bool partial = ours && rolled_back && (not_restored || g.missing);
  const int rc = !other_store.empty() ? int{exit_usage} : partial ? int{exit_incomplete} : exit_ok;
  // batches as the store holds them: a killed run, or a JSONL file not written back, leaves
  // batches in the log and the state database that the store never got
  const auto batches = running ? static_cast<std::int64_t>(g.batches_written) : m ? m->batches : 0;
  if (o.format == "json") {
    nlohmann::ordered_json j;
    j["store"] = store_label(o.store);
    j["records"] = live.size();
    j["versions"] = nlohmann::ordered_json::object();
    for (const auto& [v, n] : counts.per_version) j["versions"][v] = n;
    j["without_vector"] = counts.without_vector;
    if (m) {
      nlohmann::ordered_json mj;
      mj["id"] = m->id;
      mj["status"] = m->status;
      mj["to"] = m->to_version;
      mj["from"] = m->from_versions;
      mj["embedder"] = m->embedder;
      mj["started_at"] = time_text(m->started_ms);
      // null: this store is not the one migrated; the figures below are the state database's
      mj["another_store"] = other_store.empty() ? nlohmann::ordered_json(nullptr)
                                                : nlohmann::ordered_json(other_store);
      mj["batches"] = batches;
      mj["previous_vectors_kept"] = kept;
      // records on another version: what a running migration has left (none once switched;
      // null after a rollback, which put the records back on their previous versions, and for
      // another store)
      mj["left"] =
          !ours || rolled_back ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(left);
      if (running) mj["not_in_store"] = g.holding_previous;
      if (ours && rolled_back) {
        mj["restored"] = g.holding_previous;
        mj["not_restored"] = not_restored;
        mj["missing"] = g.missing;
        mj["rollback_complete"] = !partial;
      }
      if (m->gate_ms) {
        nlohmann::ordered_json gj{{"passed", m->gate_passed},
                                  {"at", time_text(m->gate_ms)},
                                  {"after_batches", m->gate_batches},
                                  {"summary", m->gate_summary}};
        gj["groups"] = nlohmann::ordered_json::array();
        for (const auto& x : groups) {
          nlohmann::ordered_json xj{{"from", x.old_version},
                                    {"eligible", x.eligible},
                                    {"gated", x.n > 0},
                                    {"passed", x.passed}};
          if (x.n) {
            xj["n"] = x.n;
            xj["k"] = x.k;
            xj["mean_overlap"] = x.mean_overlap;
            xj["mean_rank_correlation"] = x.mean_rank_correlation;
          } else {
            xj["reason"] = x.note;
          }
          gj["groups"].push_back(xj);
        }
        mj["gate"] = gj;
      } else {
        mj["gate"] = nullptr;
      }
      mj["retention_days"] = m->retention_days;
      if (m->ended_ms) mj["ended_at"] = time_text(m->ended_ms);
      if (m->status == "switched") mj["kept_until"] = time_text(m->retention_end_ms());
      j["migration"] = mj;
    } else {
      j["migration"] = nullptr;
    }
    std::cout << j.dump(2) << "\n";
    if (!other_store.empty()) std::cerr << "memhealth migrate: " << other_store << "\n";
    return rc;
  }
  std::cout << "store " << store_label(o.store) << ": " << live.size() << " records\n";
  for (const auto& [v, n] : counts.per_version)
    std::cout << "  " << (v.empty() ? "(no version)" : v) << ": " << n << "\n";
  if (counts.without_vector) std::cout << "  (no vector): " << counts.without_vector << "\n";
  if (!m) {
    std::cout << "no migration declared\n";
    return exit_ok;
  }
  std::cout << "migration " << m->id << ": " << m->status << ", to " << m->to_version << " from "
            << (m->from_versions.empty() ? "(none)" : m->from_versions) << " (" << m->embedder
            << "), started " << time_text(m->started_ms) << "\n";
  if (!other_store.empty()) {
    std::cout << "  NOT THIS STORE: " << other_store << "\n"
              << "  as the state database records it (not compared with this store): batches "
              << "done " << m->batches << ", previous vectors kept " << kept
              << "\n  gate: " << migrate_gate_line(*m, groups) << "\n";
    std::cerr << "memhealth migrate: " << other_store << "\n";
    return rc;
  }
  if (rolled_back) {
    std::cout << "  rolled back at " << time_text(m->ended_ms);
    if (kept == 0) {
      std::cout << ": no previous vector is kept (dropped by memhealth migrate compact, or "
                   "nothing the migration re-embedded reached the store)\n";
      return rc;
    }
    std::cout << (partial ? ", PARTLY: " : ": ") << g.holding_previous << " of the " << kept
              << " records it re-embedded hold their previous vector and version again";
    if (!partial) {
      std::cout << "; the store is on its previous versions (listed above)\n  previous vectors "
                   "kept "
                << kept << " (memhealth migrate compact drops them)\n";
      return rc;
    }
    std::cout << "; not restored:";
    if (g.changed)
      std::cout << " " << g.changed
                << " changed by another writer after the migration wrote them (the rollback "
                   "leaves such a record as that writer left it: its vector is not its "
                   "previous one)";
    if (g.written)
      std::cout << (g.changed ? "," : "") << " " << g.written
                << " still hold the vector the migration wrote";
    if (g.missing)
      std::cout << (not_restored ? "," : "") << " " << g.missing << " are no longer in the store";
    std::cout << "\n  previous vectors kept " << kept
              << " (memhealth migrate compact drops them)\n";
    return rc;
  }
  std::cout << "  batches done " << batches << ", previous vectors kept " << kept << ", left "
            << left << "\n";
  if (running && g.holding_previous)
    std::cout << "  " << g.holding_previous
              << " records of batches in the log are not in the store (a run was interrupted, "
                 "or a JSONL file was not written back): the next `memhealth migrate run` "
                 "re-embeds them\n";
  std::cout << "  gate: " << migrate_gate_line(*m, groups) << "\n  retention: " << m->retention_days
            << " days after the switch"
            << (m->status == "switched" ? " (until " + time_text(m->retention_end_ms()) + ")"
                                        : std::string())
            << "\n";
  return rc;
}

int run_status(const migrate_cli_options& o) {
  require_store(o);
  return with_migrate_store(o, false, [&](const auto& live) { return print_status(o, live); });
}

int run_gate(const migrate_cli_options& o) {
  require_store(o);
  auto state = open_state(o, false);
  return with_migrate_store(o, false, [&](const auto& live) {
    const auto g = gate_migration(live, state, o.sample, o.gate, clock_of(o));
    std::size_t failed = 0, not_gated = 0;
    for (const auto& x : g.groups) {
      not_gated += !x.gated;
      failed += x.gated && !x.gate.passed;
    }
    if (o.format == "json") {
      nlohmann::ordered_json j;
      j["migration"] = g.migration;
      j["passed"] = g.passed;
      j["min_overlap"] = o.gate.min_overlap;
      j["min_rank_correlation"] = o.gate.min_rank_correlation;
      j["groups"] = nlohmann::ordered_json::array();
      for (const auto& x : g.groups) {
        nlohmann::ordered_json gj;
        gj["from"] = x.old_version;
        gj["eligible"] = x.eligible;
        gj["gated"] = x.gated;
        gj["passed"] = x.gated && x.gate.passed;
        if (x.gated) {
          gj["n"] = x.gate.n;
          gj["k"] = x.gate.k;
          gj["mean_overlap"] = x.gate.mean_overlap;
          gj["mean_rank_correlation"] = x.gate.mean_rank_correlation;
        } else {
          gj["reason"] = x.note;
        }
        j["groups"].push_back(gj);
      }
      std::cout << j.dump(2) << "\n";
    } else {
      std::cout << "migration " << g.migration << " gate: " << (g.passed ? "PASS" : "FAIL") << " ("
                << g.groups.size() << " previous version" << (g.groups.size() == 1 ? "" : "s")
                << ", each gated apart";
      if (failed) std::cout << "; " << failed << " failed";
      if (not_gated) std::cout << "; " << not_gated << " could not be gated";
      std::cout << ")\n";
      for (const auto& x : g.groups) {
        if (!x.gated) {
          std::cout << "  from " << x.old_version << ": NOT GATED: " << x.note << "\n";
          continue;
        }
        std::cout << "  from " << x.old_version << ": " << (x.gate.passed ? "PASS" : "FAIL")
                  << " on " << x.gate.n << " of " << x.eligible << " records re-embedded: k "
                  << x.gate.k << ", mean overlap@k " << x.gate.mean_overlap << " (min "
                  << o.gate.min_overlap << "), mean rank correlation "
                  << x.gate.mean_rank_correlation << " (min " << o.gate.min_rank_correlation
                  << ")\n";
      }
    }
    if (!g.passed)
      std::cerr << "memhealth migrate: the gate did not pass"
                << (not_gated ? ": a previous version with fewer than 3 re-embedded records "
                                "holding both vectors cannot be compared"
                              : std::string())
                << "; `memhealth migrate switch` refuses until every previous version passes "
                   "(or `memhealth migrate rollback` restores the previous vectors)\n";
    return int{g.passed ? exit_ok : exit_findings};
  });
}

int run_switch(const migrate_cli_options& o) {
  require_store(o);
  auto state = open_state(o, false);
  return with_migrate_store(o, false, [&](const auto& live) {
    const auto m = switch_migration(live, state, clock_of(o));
    std::cerr << "memhealth migrate: migration " << m.id << " switched: " << m.to_version
              << " is the current version; previous vectors kept until "
              << time_text(m.retention_end_ms()) << " (migrate rollback until then)\n";
    return int{exit_ok};
  });
}

int run_rollback(const migrate_cli_options& o) {
  require_store(o);
  auto state = open_state(o, false);
  // refusals before the log is opened (rollback_migration makes the same checks)
  const auto m = latest_migration(state);
  if (!m || (m->status != "running" && m->status != "switched"))
    throw error(error_code::precondition, "no running or switched migration to roll back");
  const auto now = clock_of(o);
  if (m->status == "switched" &&
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() >=
          m->retention_end_ms())
    throw error(error_code::precondition,
                "migration " + std::to_string(m->id) + " was switched more than " +
                    std::to_string(m->retention_days) +
                    " days ago: its retention window is over, the old space cannot be restored");
  std::string work;
  std::ostringstream report;
  bool rolled = false;  // rollback_migration returned: the state says "rolled_back"
  int rc = 0;
  try {
    rc = with_migrate_store(
        o, true,
        [&](auto& live) {
          // another store: refused before the log is touched
          require_migration_store(state, *m, live);
          std::string wal_path;
          std::vector<std::string> notes;
          auto w = open_wal(o, live, wal_path, &notes, true);
          for (const auto& n : notes) std::cerr << "memhealth migrate: " << n << "\n";
          const auto r = rollback_migration(live, state, w, o.batch, now);
          rolled = true;
          work = "; this rollback restored " + std::to_string(r.restored) +
                 " records in memory only, and migration " + std::to_string(r.migration) +
                 " stays " + m->status + ": run `memhealth migrate rollback` again";
          w.sync();
          report << "memhealth migrate: migration " << r.migration << " rolled back: " << r.restored
                 << " records given their previous vector and version back through " << wal_path
                 << " (" << r.batches << " actions), " << r.already << " held it already, "
                 << r.changed_since << " changed since by another writer (left as they are), "
                 << r.missing << " no longer in the store\n";
          if (r.never_written)
            report << "memhealth migrate: " << r.never_written
                   << " records of batches the log holds never reached the store (an "
                      "interrupted run, or a JSONL file not written back): they kept their "
                      "previous vector and version, nothing to restore\n";
          return int{r.changed_since || r.missing ? exit_incomplete : exit_ok};
        },
        &work);
  } catch (const error&) {
    // a JSONL file not written back (another writer changed it): the store was not rolled back,
    // so neither is the migration's state
    if (rolled && !is_sqlite_store(o.store) && !is_pg_store(o.store))
      memhealth::detail::migration::set_status(state, m->id, m->status, m->ended_ms);
    throw;
  }
  std::cerr << report.str();  // only now: the store holds what it says
  return rc;
}

int run_compact(const migrate_cli_options& o) {
  require_store(o);
  auto state = open_state(o, false);
  const auto all = compact_migrations(state, clock_of(o));
  std::size_t dropped = 0;
  for (const auto& c : all) {
    dropped += c.dropped;
    std::cerr << "memhealth migrate: migration " << c.migration << " (" << c.status << "): ";
    if (c.dropped)
      std::cerr << "dropped " << c.dropped << " previous vectors\n";
    else
      std::cerr << "kept " << c.kept << " previous vectors"
                << (c.kept_until_ms ? " until " + time_text(c.kept_until_ms)
                                    : std::string(" (running)"))
                << "\n";
  }
  std::cerr << "memhealth migrate: " << dropped << " previous vectors dropped\n";
  return exit_ok;
}

}  // namespace

void add_migrate(CLI::App& app, int& rc) {
  auto* cmd = app.add_subcommand(
      "migrate",
      "Switch a store (sqlite:PATH, a JSONL file, or postgresql://URI with --mapping and "
      "--state) to a new embedding model: start, run (batches through the write-ahead log), "
      "status, gate, switch, rollback, compact");
  cmd->require_subcommand(1);
  const auto common = [](CLI::App* c, migrate_cli_options& o) {
    c->add_option("store", o.store,
                  "The store: sqlite:PATH (in place), a JSONL file (written back atomically after "
                  "each step) or postgresql://URI (in place; --mapping, and --state required)")
        ->required();
    c->add_option("--state", o.state,
                  "State database (default: STORE.memhealth-state.db beside the store)");
    c->add_option("--now", o.now,
                  "Clock (ISO-8601; default: now), for drills of the retention window");
    c->add_option("--mapping", pg_mapping_option(),
                  "postgresql:// stores: the column mapping, a JSON file or a built-in name "
                  "(mem0, langgraph; default: memhealth's own schema)");
  };
  const auto embedder = [](CLI::App* c, migrate_cli_options& o) {
    c->add_option("--embedder", o.models.embedder,
                  "The new model: lexical:DIM[:SEED] (built-in stand-in) or openai:URL "
                  "(OpenAI-compatible API; key from --api-key-env)")
        ->required();
    c->add_option("--embedding-model", o.models.embedding_model, "Model name for openai:");
    add_model_access_options(c, o.models);
  };
  const auto wal = [](CLI::App* c, migrate_cli_options& o) {
    c->add_option("--wal", o.wal,
                  "Write-ahead log (default: STORE.memhealth-migrate.wal; postgresql://: "
                  "STATE.migrate.wal)");
  };
  {
    auto o = std::make_shared<migrate_cli_options>();
    auto* c = cmd->add_subcommand("start", "Declare a migration to the embedder's version");
    common(c, *o);
    embedder(c, *o);
    c->add_option("--to", o->to, "The target version (must be the embedder's; default: it)");
    c->add_option("--retention-days", o->retention_days,
                  "Days the previous vectors are kept after the switch (7 to 15; default 7)")
        ->transform(whole_number(min_retention_days, max_retention_days));
    c->callback([o, &rc] { rc = run_start(*o); });
  }
  {
    auto o = std::make_shared<migrate_cli_options>();
    auto* c = cmd->add_subcommand(
        "run",
        "Re-embed the records left, in batches through the log (resumable; exit 3 while "
        "records are left; SIGINT or SIGTERM stops it after the batch in hand, exit 130 or 143)");
    common(c, *o);
    embedder(c, *o);
    wal(c, *o);
    c->add_option("--batch", o->batch, "Records per batch (one embedding call, one logged action)")
        ->transform(whole_number(1, 100000));
    c->add_option("--max-batches", o->max_batches,
                  "Stop after this many batches, at least 1 (default: no limit, every batch "
                  "left)")
        ->transform(whole_number(1));
    c->add_option("--rate", o->rate,
                  "Most embeddings per second (token bucket, one token per text; 0 = no limit)")
        ->transform(real_number(0, 1e9));
    c->add_option("--burst", o->burst,
                  "Embeddings that may start at once (0 = the default: --batch)")
        ->transform(real_number(0, 1e9));
    c->add_option("--max-wait", o->max_wait,
                  "Most time to wait for the rate limit in this run (default 10m); then it stops")
        ->transform(duration());
    c->callback([o, &rc] { rc = run_run(*o); });
  }
  {
    auto o = std::make_shared<migrate_cli_options>();
    auto* c = cmd->add_subcommand(
        "status",
        "Records per version, batches done, records left (exit 2 when the migration was declared "
        "on another store, 3 after a rollback that left records as they were)");
    common(c, *o);
    c->add_option("--format", o->format, "text or json")->check(CLI::IsMember(text_json));
    c->callback([o, &rc] { rc = run_status(*o); });
  }
  {
    auto o = std::make_shared<migrate_cli_options>();
    auto* c = cmd->add_subcommand(
        "gate",
        "Run the migration gate per previous version on a sample holding both vectors (exit 1 "
        "unless every previous version passes)");
    common(c, *o);
    c->add_option("--format", o->format, "text or json")->check(CLI::IsMember(text_json));
    c->add_option("--sample", o->sample, "Most records compared per previous version (default 500)")
        ->transform(whole_number(3, 100000));
    c->add_option("--k", o->gate.k, "Neighbours per text (default 10)")
        ->transform(whole_number(1, 1000));
    c->add_option("--min-overlap", o->gate.min_overlap, "Least mean overlap@k (default 0.8)")
        ->transform(real_number(0, 1));
    c->add_option("--min-rank-correlation", o->gate.min_rank_correlation,
                  "Least mean Spearman rho (default 0.5)")
        ->transform(real_number(-1, 1));
    c->callback([o, &rc] { rc = run_gate(*o); });
  }
  {
    auto o = std::make_shared<migrate_cli_options>();
    auto* c = cmd->add_subcommand(
        "switch",
        "Make the new version current (refused while records are left or before the "
        "gate passed on the current state)");
    common(c, *o);
    c->callback([o, &rc] { rc = run_switch(*o); });
  }
  {
    auto o = std::make_shared<migrate_cli_options>();
    auto* c = cmd->add_subcommand(
        "rollback",
        "Restore every record's previous vector and version through the log and end "
        "the migration (before the switch, or within the retention window)");
    common(c, *o);
    wal(c, *o);
    c->add_option("--batch", o->batch, "Records per logged action")
        ->transform(whole_number(1, 100000));
    c->callback([o, &rc] { rc = run_rollback(*o); });
  }
  {
    auto o = std::make_shared<migrate_cli_options>();
    auto* c = cmd->add_subcommand(
        "compact",
        "Drop previous vectors no longer needed (rolled back, or switched and past the "
        "retention window); reports what it dropped");
    common(c, *o);
    c->callback([o, &rc] { rc = run_compact(*o); });
  }
}

}  // namespace memhealth::cli

#endif  // MEMHEALTH_CLI_HAVE_SQLITE
