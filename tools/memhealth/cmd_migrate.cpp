// memhealth migrate start|run|status|gate|switch|rollback|compact: the embedding-model switch of
// an sqlite: store, carried through (live/sqlite_migration.hpp; the state in the store's state
// database, every batch through a write-ahead log). Built with SQLite only.
#include "cli.hpp"

#if MEMHEALTH_CLI_HAVE_SQLITE

#include <memory>

#include "memhealth/live/sqlite_migration.hpp"
#include "memhealth/repair/store_identity.hpp"

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

std::string store_key(const std::string& store) {
  return std::filesystem::absolute(store_file_path(store)).lexically_normal().string();
}

void require_store(const migrate_cli_options& o) {
  if (is_pg_store(o.store))
    throw error(error_code::invalid_argument,
                "migrate: postgresql:// stores are not supported yet (" + store_label(o.store) +
                    "); migrate runs on an sqlite: store");
  if (!is_sqlite_store(o.store))
    throw error(error_code::invalid_argument,
                "migrate: an sqlite: store is migrated in place (convert a JSONL store with "
                "`memhealth import FILE --out sqlite:PATH` first); got " +
                    o.store);
  if (!std::filesystem::exists(store_file_path(o.store)))
    throw error(error_code::io, "store " + o.store + ": no such file");
}

// The state database (created for start; must exist otherwise), tied to the store.
sqlite_state open_state(const migrate_cli_options& o, bool create) {
  const auto path = o.state.empty() ? default_state_path(o.store) : std::filesystem::path(o.state);
  if (!create && !std::filesystem::exists(path))
    throw error(error_code::precondition, "state database " + path.string() +
                                              ": no such file (no migration was declared for "
                                              "this store: memhealth migrate start)");
  auto s = sqlite_state::open(path);
  s.bind_store(store_key(o.store));
  return s;
}

wal_writer open_wal(const migrate_cli_options& o, sqlite_store<>& live, std::string& path) {
  path = o.wal.empty() ? store_file_path(o.store) + ".memhealth-migrate.wal" : o.wal;
  wal_writer_options wo;
  wo.store = identify_store(live, store_key(o.store));
  wo.store->database_id = live.database_id();
  return wal_writer(path, wo);
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
  auto live = open_sqlite_store(o.store, true);
  auto state = open_state(o, true);
  const auto m =
      start_migration(state, live, e->ver, e->description, o.retention_days, clock_of(o));
  std::cerr << "memhealth migrate: migration " << m.id
            << " declared: " << records_left(live, m.to_version) << " records from "
            << (m.from_versions.empty() ? "(none)" : m.from_versions) << " to " << m.to_version
            << " (" << m.embedder << "); previous vectors kept " << m.retention_days
            << " days after the switch\n";
  return exit_ok;
}

int run_run(const migrate_cli_options& o) {
  require_store(o);
  const auto e = embedder_of(o);
  auto state = open_state(o, false);
  auto live = open_sqlite_store(o.store, false);
  // refusals before the log is opened (nothing is written on a refusal)
  const auto m = current_migration(state);
  if (!m)
    throw error(error_code::precondition,
                "no migration is running on " + o.store + " (memhealth migrate start)");
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
  std::string wal_path;
  auto w = open_wal(o, live, wal_path);
  const auto r = run_migration(live, state, *e, w, ro, clock_of(o));
  w.sync();
  std::cerr << "memhealth migrate: migration " << r.migration << ": " << r.batches << " batches, "
            << r.reembedded << " records re-embedded through " << wal_path << " (" << r.embed_calls
            << " embedding calls" << (e->stats ? ", " + e->stats() : std::string())
            << (r.rate_waited.count()
                    ? ", waited " + std::to_string(r.rate_waited.count()) + " ms for the rate limit"
                    : std::string())
            << ")\n";
  if (r.left > 0) {
    std::cerr << "memhealth migrate: " << r.left << " records left"
              << (r.stopped.empty() ? std::string() : " (" + r.stopped + ")")
              << "; run again to continue\n";
    return exit_incomplete;
  }
  std::cerr << "memhealth migrate: 0 records left; next: memhealth migrate gate " << o.store
            << "\n";
  return exit_ok;
}

int run_status(const migrate_cli_options& o) {
  require_store(o);
  auto live = open_sqlite_store(o.store, true);
  const auto path = o.state.empty() ? default_state_path(o.store) : std::filesystem::path(o.state);
  std::optional<migration_info> m;
  std::size_t kept = 0;
  if (std::filesystem::exists(path)) {
    sqlite_state_options so;
    so.read_only = true;
    const auto state = sqlite_state::open(path, so);
    m = latest_migration(state);
    if (m) kept = migration_kept(state, m->id);
  }
  const auto counts = count_versions(live);
  const std::size_t left = m ? records_left(live, m->to_version) : 0;
  if (o.format == "json") {
    nlohmann::ordered_json j;
    j["store"] = o.store;
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
      mj["batches"] = m->batches;
      mj["previous_vectors_kept"] = kept;
      mj["left"] = left;
      mj["gate"] = m->gate_ms ? nlohmann::ordered_json{{"passed", m->gate_passed},
                                                       {"at", time_text(m->gate_ms)},
                                                       {"after_batches", m->gate_batches},
                                                       {"summary", m->gate_summary}}
                              : nlohmann::ordered_json(nullptr);
      mj["retention_days"] = m->retention_days;
      if (m->ended_ms) mj["ended_at"] = time_text(m->ended_ms);
      if (m->status == "switched") mj["kept_until"] = time_text(m->retention_end_ms());
      j["migration"] = mj;
    } else {
      j["migration"] = nullptr;
    }
    std::cout << j.dump(2) << "\n";
    return exit_ok;
  }
  std::cout << "store " << o.store << ": " << live.size() << " records\n";
  for (const auto& [v, n] : counts.per_version)
    std::cout << "  " << (v.empty() ? "(no version)" : v) << ": " << n << "\n";
  if (counts.without_vector) std::cout << "  (no vector): " << counts.without_vector << "\n";
  if (!m) {
    std::cout << "no migration declared\n";
    return exit_ok;
  }
  std::cout << "migration " << m->id << ": " << m->status << ", to " << m->to_version << " from "
            << (m->from_versions.empty() ? "(none)" : m->from_versions) << " (" << m->embedder
            << "), started " << time_text(m->started_ms) << "\n"
            << "  batches done " << m->batches << ", previous vectors kept " << kept << ", left "
            << left << "\n"
            << "  gate: "
            << (m->gate_ms == 0
                    ? std::string("not run")
                    : std::string(m->gate_passed ? "passed" : "FAILED") + " at " +
                          time_text(m->gate_ms) + " after batch " +
                          std::to_string(m->gate_batches) + " (" + m->gate_summary + ")")
            << "\n  retention: " << m->retention_days << " days after the switch"
            << (m->status == "switched" ? " (until " + time_text(m->retention_end_ms()) + ")"
                                        : std::string())
            << "\n";
  return exit_ok;
}

int run_gate(const migrate_cli_options& o) {
  require_store(o);
  auto state = open_state(o, false);
  auto live = open_sqlite_store(o.store, true);
  const auto g = gate_migration(live, state, o.sample, o.gate, clock_of(o));
  std::cout << "migration " << g.migration << " gate: " << (g.gate.passed ? "PASS" : "FAIL")
            << " on " << g.gate.n << " of " << g.eligible << " records re-embedded from "
            << g.old_version << ": k " << g.gate.k << ", mean overlap@k " << g.gate.mean_overlap
            << " (min " << o.gate.min_overlap << "), mean rank correlation "
            << g.gate.mean_rank_correlation << " (min " << o.gate.min_rank_correlation << ")\n";
  return g.gate.passed ? exit_ok : exit_findings;
}

int run_switch(const migrate_cli_options& o) {
  require_store(o);
  auto state = open_state(o, false);
  auto live = open_sqlite_store(o.store, true);
  const auto m = switch_migration(live, state, clock_of(o));
  std::cerr << "memhealth migrate: migration " << m.id << " switched: " << m.to_version
            << " is the current version; previous vectors kept until "
            << time_text(m.retention_end_ms()) << " (migrate rollback until then)\n";
  return exit_ok;
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
  auto live = open_sqlite_store(o.store, false);
  std::string wal_path;
  auto w = open_wal(o, live, wal_path);
  const auto r = rollback_migration(live, state, w, o.batch, now);
  w.sync();
  std::cerr << "memhealth migrate: migration " << r.migration << " rolled back: " << r.restored
            << " records given their previous vector and version back through " << wal_path << " ("
            << r.batches << " actions), " << r.already << " held it already, " << r.changed_since
            << " changed since by another writer (left as they are), " << r.missing
            << " no longer in the store\n";
  return r.changed_since || r.missing ? exit_incomplete : exit_ok;
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
      "Switch an sqlite: store to a new embedding model: start, run (batches through the "
      "write-ahead log), status, gate, switch, rollback, compact");
  cmd->require_subcommand(1);
  const auto common = [](CLI::App* c, migrate_cli_options& o) {
    c->add_option("store", o.store, "The sqlite: store")->required();
    c->add_option("--state", o.state,
                  "State database (default: STORE.memhealth-state.db beside the store)");
    c->add_option("--now", o.now,
                  "Clock (ISO-8601; default: now), for drills of the retention window");
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
    c->add_option("--wal", o.wal, "Write-ahead log (default: STORE.memhealth-migrate.wal)");
  };
  {
    auto o = std::make_shared<migrate_cli_options>();
    auto* c = cmd->add_subcommand("start", "Declare a migration to the embedder's version");
    common(c, *o);
    embedder(c, *o);
    c->add_option("--to", o->to, "The target version (must be the embedder's; default: it)");
    c->add_option("--retention-days", o->retention_days,
                  "Days the previous vectors are kept after the switch (7 to 15; default 7)")
        ->check(CLI::Range(min_retention_days, max_retention_days));
    c->callback([o, &rc] { rc = run_start(*o); });
  }
  {
    auto o = std::make_shared<migrate_cli_options>();
    auto* c = cmd->add_subcommand(
        "run",
        "Re-embed the records left, in batches through the log (resumable; exit 3 while "
        "records are left)");
    common(c, *o);
    embedder(c, *o);
    wal(c, *o);
    c->add_option("--batch", o->batch, "Records per batch (one embedding call, one logged action)")
        ->check(CLI::Range(std::size_t{1}, std::size_t{100000}));
    c->add_option("--max-batches", o->max_batches, "Stop after this many batches (0 = no limit)");
    c->add_option("--rate", o->rate,
                  "Most embeddings per second (token bucket, one token per text; 0 = no limit)")
        ->check(CLI::NonNegativeNumber);
    c->add_option("--burst", o->burst, "Embeddings that may start at once (default: --batch)")
        ->check(CLI::NonNegativeNumber);
    c->add_option("--max-wait", o->max_wait,
                  "Most time to wait for the rate limit in this run (default 10m); then it stops");
    c->callback([o, &rc] { rc = run_run(*o); });
  }
  {
    auto o = std::make_shared<migrate_cli_options>();
    auto* c = cmd->add_subcommand("status", "Records per version, batches done, records left");
    common(c, *o);
    c->add_option("--format", o->format, "text or json")->check(CLI::IsMember(text_json));
    c->callback([o, &rc] { rc = run_status(*o); });
  }
  {
    auto o = std::make_shared<migrate_cli_options>();
    auto* c = cmd->add_subcommand(
        "gate", "Run the migration gate on a sample holding both vectors (exit 1 when it fails)");
    common(c, *o);
    c->add_option("--sample", o->sample, "Most records compared (default 500)")
        ->check(CLI::Range(std::size_t{3}, std::size_t{100000}));
    c->add_option("--k", o->gate.k, "Neighbours per text (default 10)")
        ->check(CLI::Range(std::size_t{1}, std::size_t{1000}));
    c->add_option("--min-overlap", o->gate.min_overlap, "Least mean overlap@k (default 0.8)")
        ->check(CLI::Range(0.0, 1.0));
    c->add_option("--min-rank-correlation", o->gate.min_rank_correlation,
                  "Least mean Spearman rho (default 0.5)")
        ->check(CLI::Range(-1.0, 1.0));
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
        ->check(CLI::Range(std::size_t{1}, std::size_t{100000}));
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
