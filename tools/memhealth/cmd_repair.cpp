// memhealth plan | apply | rollback | recover | diff | wal compact: repairs through the write-ahead
// log.
#include <charconv>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <sstream>

#include "../../examples/flat_index.hpp"
#include "cli.hpp"
#include "interrupt.hpp"
#if MEMHEALTH_CLI_HAVE_PG
#include "pg_run.hpp"
#endif
#include <unistd.h>

namespace memhealth::cli {

namespace {

// A dry run's write-ahead log: a temporary beside `near` (the plan or the log a real run would
// write), registered so that a signal removes it, and removed when this goes out of scope.
class dry_run_log {
 public:
  explicit dry_run_log(const std::filesystem::path& near)
      : path_(temp_path_for(std::filesystem::path(near).replace_extension(".dryrun.wal"))),
        registered_(path_) {}
  dry_run_log(const dry_run_log&) = delete;
  dry_run_log& operator=(const dry_run_log&) = delete;
  ~dry_run_log() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
  temp_registration registered_;
};

// ------------------------------------------------------------------------- plan

struct plan_options {
  std::string store;
  std::string out;
  std::size_t max_records = 1000;
  std::size_t blast_radius = 500;
  std::vector<std::string> approve;
  std::vector<std::string> defaults;  // KEY=VALUE metadata defaults
  detection_cli_options detect;
  int workers = -1;                 // --workers N (postgresql:// only); -1 = one process
  std::size_t job_records = 20000;  // --job-records
  double lease = 120;               // --lease seconds
  // retrieval alarms (issue 21): the monitor's findings over these events are planned too
  std::string events;
  std::string monitor_window = "1h";
  std::string baseline;
};

#if MEMHEALTH_CLI_HAVE_PG
// plan of a postgresql:// store (without --embedder): the findings of the check as `check` makes
// them, job by job (detect/pg_workers.hpp): with --workers N through a job table that `memhealth
// worker` processes may join, else in this process without one; and the rows of the run's
// snapshot they were found in, from which the plan is made (so it is the single-process plan of
// those rows). The rows are held without their vectors (the planner needs only their presence)
// unless `vectors` (the retrieval monitor of --events and the dry run of --approve need them).
// @throws error(invalid_argument) for a bad --lease; what pg_parallel_check throws.
pg_store<> plan_rows_from_jobs(const plan_options& o, const default_check_settings& settings,
                               const detect_options& d, report& merged, bool vectors) {
  pg_run_options ro = cli_run_options("plan", o.workers, o.job_records, o.lease);
  ro.rows_with_vectors = vectors;
  detect_options dd = d;
  dd.dimension = o.detect.dim;
  std::optional<pg_store<>> rows;
  merged = check_by_jobs("plan", o.store, load_pg_mapping(pg_mapping_option()), settings, dd, ro,
                         rows, "no plan written");
  return std::move(*rows);
}
#endif

// ------------------------------------------------------------------------- retrieval alarms

// The retrieval monitor's options for planning and verifying repairs: `window` (a positive
// duration), every distinct id listed (a clean-up needs all of them).
monitor_options alarm_monitor_options(const std::string& window) {
  monitor_options mo;
  const auto w = parse_duration(window);
  if (!w || w->count() <= 0)
    throw error(error_code::invalid_argument,
                "--monitor-window: expected a positive duration such as 30m, 1h, 1d: " + window);
  mo.window = *w;
  mo.max_listed_ids = static_cast<std::size_t>(-1);
  return mo;
}

// Retrieval events of a file (load issues printed; skipped lines named in a warning, counted in
// `*skipped` when given). @throws error(io/parse) for a directory or an SQLite file, error(io)
// for an unreadable one, error(parse) for a file with lines none of which is an event (a store,
// a plan: another kind of file).
event_load_result read_alarm_events(const std::string& path, std::size_t* skipped = nullptr) {
  check_jsonl_input(path, "retrieval events");
  auto ev = read_events_jsonl(path);
  print_issues(ev.issues);
  const auto n = static_cast<std::size_t>(std::count_if(
      ev.issues.begin(), ev.issues.end(), [](const load_issue& i) { return !i.record_kept; }));
  if (ev.lines_read > 0 && ev.retrievals.empty() && ev.feedback.empty())
    throw error(error_code::parse,
                path + ": none of its " + std::to_string(ev.lines_read) +
                    " lines is a retrieval or feedback event (is it the events file? a store or "
                    "a plan is another kind of file); nothing was written");
  if (n)
    std::cerr << "memhealth: warning: " << path << ": " << n << " of " << ev.lines_read
              << " lines are not events and were skipped; the retrieval figures and alarms are "
                 "of the other "
              << (ev.lines_read - n) << "\n";
  if (skipped) *skipped += n;
  return ev;
}

// The monitor's findings over `events_path` served from `store` (a rolling baseline, or the
// pooled `baseline_path`).
// Event lines skipped (not events) are added to `skipped`; an events file without a single
// event (empty, or only blank lines) is a warning and counted in `empty_files` (no alarm could
// be evaluated: `plan` exits 1).
std::vector<finding> retrieval_alarms(const memory_store<>& store, const std::string& events_path,
                                      const std::string& window, const std::string& baseline_path,
                                      std::size_t& skipped, std::size_t& empty_files) {
  const monitor_options mo = alarm_monitor_options(window);
  const auto ev = read_alarm_events(events_path, &skipped);
  if (ev.retrievals.empty() && ev.feedback.empty()) {
    std::cerr << "memhealth plan: warning: " << events_path
              << " holds no retrieval or feedback event (" << ev.lines_read
              << " lines): no retrieval alarm could be evaluated; is it the right file?\n";
    ++empty_files;
  }
  std::optional<baseline_map> base;
  if (!baseline_path.empty()) {
    const auto b = read_alarm_events(baseline_path, &skipped);
    base = compute_baseline(store, std::span(b.retrievals), std::span(b.feedback), mo);
  }
  auto res = monitor_retrievals(store, std::span(ev.retrievals), std::span(ev.feedback), mo,
                                base ? &*base : nullptr);
  return std::move(res.findings.findings);
}

// The figures as the audit report holds them (audit/report.hpp, `audit_retrieval`).
audit_retrieval audit_figures(const retrieval_figures& f, std::string when, std::string events) {
  audit_retrieval a;
  a.when = std::move(when);
  a.events = std::move(events);
  a.retrievals = f.retrievals;
  a.p95_latency_ms = f.p95_latency_ms;
  a.duplicate_share = f.duplicate_share;
  a.duplicate_results = f.duplicate_results;
  a.topk_compared = f.topk_compared;
  a.ghost_results = f.ghost_results;
  a.scope_leaks = f.scope_leaks;
  a.version_mismatches = f.version_mismatches;
  return a;
}

// "P95 latency 340.0 ms, duplicate share of top-k 0.355 (11 of 31), ghost results 3, ..."
std::string figures_text(const retrieval_figures& f) {
  return retrieval_text(audit_figures(f, {}, {}));
}

nlohmann::ordered_json figures_json(const retrieval_figures& f, const std::string& events) {
  nlohmann::ordered_json j;
  j["events"] = events;
  j["retrievals"] = f.retrievals;
  j["p95_latency_ms"] = f.p95_latency_ms;
  j["duplicate_share"] = f.duplicate_share;
  j["duplicate_results"] = f.duplicate_results;
  j["topk_compared"] = f.topk_compared;
  j["ghost_results"] = f.ghost_results;
  j["scope_leaks"] = f.scope_leaks;
  j["query_model_mismatches"] = f.version_mismatches;
  return j;
}

// `--index KIND:PATH`: the index policy of the tool. Only `flat:PATH` (examples/flat_index.hpp).
// @throws error(invalid_argument) for another kind or an empty path.
std::filesystem::path flat_index_path(const std::string& spec) {
  if (!spec.starts_with("flat:") || spec.size() == 5)
    throw error(
        error_code::invalid_argument,
        "--index: expected flat:PATH (a file-backed flat index, examples/flat_index.hpp): " + spec);
  return spec.substr(5);
}

apply_options approvals(const std::vector<std::string>& approve) {
  apply_options a;
  for (const auto& x : approve) {
    if (x == "tier2") a.approve_tier2 = true;
    if (x == "tier3") a.approve_tier2 = a.approve_tier3 = true;
    if (x == "suspended") a.approve_suspended = true;
  }
  return a;
}

std::string plan_summary(const plan_file_summary& p) {
  std::ostringstream s;
  s << p.header.actions << " actions, blast radius " << p.blast_records << " records";
  if (p.blast_index_entries) s << " and " << p.blast_index_entries << " index entries";
  if (p.header.suspended) s << " (SUSPENDED: " << p.header.suspend_reason << ")";
  s << "\n";
  for (const auto& [k, n] : p.by_tier_and_type)
    s << "  tier " << k.first << "  " << k.second << ": " << n << "\n";
  if (!p.header.deferred.empty())
    s << "  " << p.header.deferred.size()
      << " notes on deferred work (see the plan's \"deferred\")\n";
  return s.str();
}

/// FNV-1a 64 of a file's bytes (the plan records the schema it was made with).
std::uint64_t file_fnv1a64(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw error(error_code::io, "cannot read " + path);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return fnv1a_64(bytes);
}

std::string float_text(float x) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, r.ptr);
}

/// The detection options a plan is made with, as recorded in PLAN.json ("detection"). `now` is
/// always recorded (the planning time when --now was not given) so apply can use the same clock.
// --hygiene-off names, sorted, unique, comma-separated (as a plan records them).
std::string hygiene_off_text(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  std::string t;
  for (const auto& n : names) t += (t.empty() ? "" : ",") + n;
  return t;
}

detection_provenance detection_record(const detection_cli_options& d, std::size_t dim_used) {
  detection_provenance r;
  r.threshold = d.settings.near_duplicate_threshold;
  if (!d.window.empty()) r.window = d.window;
  if (!d.schema.empty()) {
    r.schema = std::filesystem::absolute(d.schema).lexically_normal().string();
    r.schema_fnv1a64 = file_fnv1a64(d.schema);
  }
  if (!d.lexicon.empty())
    r.other["lexicon"] = std::filesystem::absolute(d.lexicon).lexically_normal().string();
  if (!d.judge.empty()) {  // the URL and model only: the key stays in the environment
    r.other["judge"] = d.judge;
    r.other["judge_model"] = d.judge_model;
    if (d.judge_all) r.other["judge_all"] = "on";
  }
  if (!d.embedder.empty()) {  // embeddings filled in memory for detection (plan --embedder)
    r.other["embedder"] = d.embedder;
    r.other["embedding_model"] = d.embedding_model;
  }
  if (!d.settings.duplicate_guards) r.other["duplicate_guards"] = "off";
  if (d.settings.block_scopes_above != default_check_settings{}.block_scopes_above)
    r.other["block_above"] = std::to_string(d.settings.block_scopes_above);
  if (d.settings.content_size.max_bytes != default_check_settings{}.content_size.max_bytes)
    r.other["max_content_bytes"] = std::to_string(d.settings.content_size.max_bytes);
  if (!d.hygiene_off.empty()) r.other["hygiene_off"] = hygiene_off_text(d.hygiene_off);
  if (auto t = parse_timestamp(d.now))
    r.now = t->instant;  // run_plan has checked and normalised it
  if (dim_used) r.dim = dim_used;
  return r;
}

// The plan of `store` (a memory_store, or a pg_store read without vectors: then `merged` is
// given and --events and --approve are not), from the findings of `merged` when given (the
// check's, job by job, on these rows), else from the default pipeline run here; written to
// o.out, with --approve's dry run.
template <class S>
int plan_from(const plan_options& o, S store, const std::optional<report>& merged) {
  constexpr bool in_memory = std::is_same_v<S, memory_store<>>;
  warn_if_empty("plan", o.store, store.size());
  planner_options po;
  po.max_records_per_run = o.max_records;
  po.blast_radius_threshold = o.blast_radius;
  for (const auto& kv : o.defaults) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      throw error(error_code::invalid_argument, "--default expects KEY=VALUE: " + kv);
    po.metadata_defaults[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  // Detection hands its findings to the planner part by part, and the planner keeps finished
  // actions in a temporary file (plan_stream.hpp): a million findings never sit in memory.
  auto settings = detection_settings(o.detect);
  // a declared migration re-embeds the records off its version (`migrate run`): not planned
  settings.first.migration_to = declared_migration_to(o.store);
  detect_options d = settings.second;  // not a structured binding: lambdas capture it
  if (d.dimension == 0) d.dimension = store.dimension();
  po.migration_to = settings.first.migration_to;
  const auto detectors = make_default_pipeline(settings.first);
  std::vector<finding> alarms;  // the retrieval monitor's, when --events is given
  std::size_t skipped_events = 0;
  std::size_t empty_events = 0;  // an events file without any event
  if constexpr (in_memory)
    if (!o.events.empty())
      alarms = retrieval_alarms(store, o.events, o.monitor_window, o.baseline, skipped_events,
                                empty_events);
  detection_provenance prov =
      detection_record(o.detect, o.detect.dim ? o.detect.dim : store.dimension());
  if (!o.events.empty())  // apply shows the retrieval figures of these events before repair
    prov.other["events"] = std::filesystem::absolute(o.events).lexically_normal().string();
  std::size_t findings = 0;
  const plan_file_summary p = make_plan_file(
      store,
      [&](const auto& add) {
        if (merged) {  // --workers: the merged findings, in the single-process order
          findings += merged->findings.size();
          for (const finding& f : merged->findings) add(f);
          for (const finding& f : alarms) add(f);
          return;
        }
        if constexpr (in_memory) {
          (void)detectors.run_each(
              store,
              [&](std::vector<finding>& part) {
                findings += part.size();
                for (const finding& f : part) add(f);
              },
              d);
          for (const finding& f : alarms) add(f);
        }
      },
      po, o.out, prov);
  std::cerr << "memhealth plan: " << findings << " findings";
  if (!o.events.empty()) std::cerr << " and " << alarms.size() << " retrieval alarms";
  std::cerr << " -> " << o.out << "\n" << plan_summary(p);
  // what apply would run with these approvals (a dry run, nothing written)
  if constexpr (in_memory) {
    if (!o.approve.empty()) {
      auto opt = approvals(o.approve);
      opt.dry_run = true;
      opt.skip_store_check = true;  // the plan was just made from this store
      // the dry run's log is a temporary next to the plan, removed on every path (and on a signal)
      const dry_run_log log(o.out);
      const std::filesystem::path& tmp = log.path();
      {
        wal_writer w(tmp.string(), wal_sync::none);
        plan_reader reader(o.out);  // the plan just written, in execution order
        const apply_counts res = apply_plan_stream(
            store, reader, w, opt, [](const action_outcome&, const repair_action&) {});
        std::cerr << "with approval " << o.approve.front() << ": " << res.applied << " would run, "
                  << res.unapproved << " need more approval, " << res.deferred << " deferred\n";
      }
    }
  }
  // done, with something to act on (README, exit codes): an empty store, or event lines that
  // were not events (as `check` exits 1 for store lines it could not read)
  if (skipped_events)
    std::cerr << "memhealth plan: " << skipped_events
              << " lines of the events were skipped (see above); exit 1\n";
  if (empty_events)
    std::cerr << "memhealth plan: the events file held no event: the plan has no retrieval "
                 "alarm (see above); exit 1\n";
  return store.size() == 0 || skipped_events || empty_events ? exit_findings : exit_ok;
}

int run_plan(const plan_options& po_cli) {
  probe_output(po_cli.out, "--out");  // before any work: writable, not a directory
  {
    auto inputs = detection_inputs(po_cli.store, po_cli.detect);
    inputs.push_back({"--events", po_cli.events});
    inputs.push_back({"--baseline", po_cli.baseline});
    refuse_outputs_over_inputs(
        {{"--out", po_cli.out}, {"--model-cache", po_cli.detect.model_cache}}, inputs);
  }
  plan_options o = po_cli;
  if (!o.detect.now_given &&
      o.detect.now.empty()) {  // fix the clock so apply can verify with the same one
    o.detect.now = format_timestamp(make_timestamp(std::chrono::system_clock::now()));
    o.detect.now_given = true;
  } else if (auto t = parse_timestamp(o.detect.now)) {
    o.detect.now = format_timestamp(timestamp{t->instant, 0});
  }
  if (o.workers >= 0 && !is_pg_store(o.store))
    throw error(error_code::invalid_argument,
                "--workers: a plan from workers' findings needs a postgresql:// store");
  if (o.workers >= 0 && !o.detect.embedder.empty())
    throw error(error_code::invalid_argument,
                "--workers: not with --embedder (workers check the rows as stored)");
#if MEMHEALTH_CLI_HAVE_PG
  // a table whose mapping places the scope is checked job by job as `check` does (--workers N,
  // or in this process); the retrieval monitor (--events) and the dry run (--approve) need the
  // vectors: the rows are then copied into memory with them. Otherwise (--embedder, a mapping
  // without a scope) the whole table is read, as for a file.
  if (is_pg_store(o.store) && o.detect.embedder.empty() &&
      (o.workers >= 0 || pg_mapping_scope_selectable(load_pg_mapping(pg_mapping_option())))) {
    auto settings = detection_settings(o.detect);
    settings.first.migration_to = declared_migration_to(o.store);
    std::optional<report> merged(std::in_place);
    const bool vectors = !o.events.empty() || !o.approve.empty();
    std::optional<pg_store<>> rows(
        plan_rows_from_jobs(o, settings.first, settings.second, *merged, vectors));
    if (!vectors) return plan_from(o, std::move(*rows), merged);
    std::vector<memory_record> all;
    all.reserve(rows->size());
    for (std::size_t i = 0; i < rows->size(); ++i) all.push_back(rows->record(i));
    rows.reset();  // the connection closed, the rows freed
    return plan_from(o, memory_store<>::from_records(std::move(all), o.detect.dim), merged);
  }
#endif
  kept_lines
      damaged;  // lines that cannot be parsed: apply carries them through, so planning goes ahead
  auto store = load_memory_store(o.store, o.detect.dim, &damaged);
  if (!o.detect.embedder.empty()) {
    // records without an embedding get one for detection only: the plan's edits apply to the
    // records as they are at apply time (action.hpp), and the store file is not changed
    std::vector<memory_record> all;
    all.reserve(store.size());
    for (std::size_t i = 0; i < store.size(); ++i) all.push_back(store.extract(i));
    fill_missing_embeddings(all, o.detect, false, o.detect.dim);
    store = memory_store<>::from_records(std::move(all), o.detect.dim);
  }
  return plan_from(o, std::move(store), std::nullopt);
}

// ------------------------------------------------------------------------- index build | check

struct index_cli_options {
  std::string store;
  std::string index;
  std::string format = "text";
};

// memhealth index build: the flat index the store expects (live records with a usable vector).
int run_index_build(const index_cli_options& o) {
  const auto path = flat_index_path(o.index);
  probe_output(path.string(), "--index");
  refuse_output_over_input(path.string(), o.store, "--index");
  if (is_pg_store(o.store))
    refuse_output_over_input(path.string(), pg_mapping_option(), "--index", "--mapping");
  // an existing file is replaced only when it is a flat index (not a store, a plan, a log)
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec) && std::filesystem::file_size(path, ec) > 0 &&
      !ec) {
    try {
      (void)examples::flat_index::load(path);
    } catch (const error& e) {
      throw error(error_code::invalid_argument,
                  "--index " + path.string() +
                      ": exists and is not a flat index; nothing was written (remove it or name "
                      "another file): " +
                      e.what());
    }
  }
  const auto store = load_memory_store(o.store, 0, nullptr,
                                       ": an index built without its record would not serve it; "
                                       "fix or remove such lines first (memhealth check lists "
                                       "them); nothing was written");
  const bool empty = warn_if_empty("index build", store_label(o.store), store.size());
  const auto e = expected_index(store);
  // an index is never emptied by a build from a store that has nothing for it
  if (e.ids.empty() && std::filesystem::is_regular_file(path, ec))
    if (const std::size_t held = examples::flat_index::load(path).size(); held > 0)
      throw error(error_code::precondition,
                  "--index " + path.string() + ": holds " + std::to_string(held) + " entries and " +
                      store_label(o.store) +
                      " has no live record with a usable vector: the build would empty the "
                      "index; nothing was written (is it the right store? remove the index file "
                      "first to build an empty one)");
  examples::flat_index::build(store).save(path);
  std::cerr << "memhealth index build: " << e.ids.size() << " entries, dimension " << e.dimension
            << ", model version '" << e.embedding_version << "' -> " << path.string() << "\n";
  if (e.left_out)
    std::cerr << "memhealth index build: " << e.left_out
              << " live records with a vector of another dimension or version (or a duplicate "
                 "id) left out; re-embed them (memhealth plan)\n";
  return empty ? exit_findings : exit_ok;  // an empty store: done, with something to act on
}

// memhealth index check: the flat index against the store; exit 1 when inconsistent.
int run_index_check(const index_cli_options& o) {
  const auto path = flat_index_path(o.index);
  const auto store = load_memory_store(o.store, 0, nullptr,
                                       ": the index cannot be checked against a record that "
                                       "cannot be read; fix or remove such lines first "
                                       "(memhealth check lists them)");
  const auto ix = examples::flat_index::load(path);
  const auto expected = expected_index(store);
  const auto c = ix.check(expected);
  const auto named = ix.ids_of_problems(expected, 20);  // the ids behind the counts (first 20)
  if (o.format == "json") {
    nlohmann::ordered_json j;
    j["schema_version"] = 1;
    j["command"] = "index check";
    j["store"] = store_label(o.store);
    j["index"] = path.string();
    j["consistent"] = c.consistent;
    j["entries"] = c.entries;
    j["expected"] = c.expected;
    j["missing"] = c.missing;
    j["extra"] = c.extra;
    j["stale"] = c.stale;
    j["dimension"] = c.dimension;
    j["embedding_version"] = c.embedding_version;
    j["problems"] = c.problems;
    j["missing_ids"] = named.missing;
    j["extra_ids"] = named.extra;
    j["stale_ids"] = named.stale;
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << "index " << path.string() << ": " << c.entries << " entries, the store expects "
              << c.expected << ": " << (c.consistent ? "consistent" : "INCONSISTENT") << "\n";
    for (const auto& p : c.problems) std::cout << "  " << p << "\n";
    const auto list = [](const char* what, const std::vector<std::string>& ids, std::size_t n) {
      if (ids.empty()) return;
      std::cout << "  " << what << ":";
      for (const auto& id : ids) std::cout << " " << id;
      if (n > ids.size()) std::cout << " (and " << n - ids.size() << " more)";
      std::cout << "\n";
    };
    list("not in the index", named.missing, c.missing);
    list("ghosts", named.extra, c.extra);
    list("vector differs", named.stale, c.stale);
  }
  return c.consistent ? exit_ok : exit_findings;
}

// ------------------------------------------------------------------------- apply

struct apply_cli_options {
  std::string store;
  std::string plan;
  std::string wal;
  std::string out;
  std::string report;
  std::string report_format;  // --report-format: markdown, json or html ("" = by extension)
  std::vector<std::string> approve;
  std::size_t batch = 16;
  detection_cli_options detect;
  std::set<std::string>
      given;  // detection options given on the command line (they override the plan's)
  // guardrails (guardrails.hpp, run_ledger.hpp)
  std::uint32_t max_runs_per_day = run_budget{}.max_runs_per_day;
  std::string ledger;  // a JSON run ledger (the format of earlier versions); "" = the state
  std::string state;   // the state database (default: memhealth-state.db next to the WAL)
  double rate = execution_limits{}.per_second;
  double burst = execution_limits{}.burst;
  std::string max_wait = "10m";
  std::size_t max_in_flight = execution_limits{}.max_in_flight;
  std::size_t max_records = apply_options{}.max_records;
  bool dry_run = false;               // postgresql:// stores: print the SQL each action would run
  history_window_cli history_window;  // --recur-for, --recur-runs, --uptime-window (--report)
  // retrieval alarms (issue 21)
  std::string index;         // flat:PATH, the index policy for index actions
  std::string events;        // retrieval events before the repair (default: the plan's)
  std::string events_after;  // retrieval events served after the repair
};

// The runs-per-day budget of `apply`: the store's state database, or a JSON ledger file.
// The refusal of a run over a spent --max-runs-per-day budget: `count` runs counted today (UTC),
// `where` the state database or ledger holding them, `tail` what the refusal leaves.
std::string run_budget_spent(std::uint32_t count, std::uint32_t max_per_day,
                             const std::string& where, const std::string& tail) {
  return "run budget: " + std::to_string(count) +
         " repair runs already today (UTC), the most allowed is " + std::to_string(max_per_day) +
         " (--max-runs-per-day; " + where + "); " + tail;
}

struct run_counter {
  std::filesystem::path ledger;  // the JSON ledger, when one is used
#if MEMHEALTH_CLI_HAVE_SQLITE
  std::optional<sqlite_state> state;
#endif
  std::string where() const {
#if MEMHEALTH_CLI_HAVE_SQLITE
    if (state) return "state database " + state->path();
#endif
    return "ledger " + ledger.string();
  }
  // Counts this run or throws error(precondition) ("run budget: ...") when the day's are used up.
  void take(std::uint32_t max_per_day, utc_time now) {
    std::uint32_t count = 0;
    bool allowed = false;
#if MEMHEALTH_CLI_HAVE_SQLITE
    if (state) {
      allowed = state->take_run(run_budget::day_of(now), max_per_day);
      count = state->runs_on(run_budget::day_of(now));
    }
#endif
    if (!ledger.empty()) {
      const auto d = take_run(ledger, max_per_day, now);
      allowed = d.allowed;
      count = d.state.count;
    }
    if (!allowed)
      throw error(
          error_code::precondition,
          run_budget_spent(count, max_per_day, where(), "nothing was applied, try again tomorrow"));
  }
  // Gives back the run counted at `started` (it changed nothing).
  void give_back(utc_time started) {
#if MEMHEALTH_CLI_HAVE_SQLITE
    if (state) state->give_back_run(run_budget::day_of(started));
#endif
    if (!ledger.empty()) give_back_run(ledger, started);
  }
};

#if MEMHEALTH_CLI_HAVE_SQLITE
// The repair history of `apply` in the state database (repair_history.hpp), scoped to the store
// read (attempts, failures, the manual queue) and the store written (done actions, replaced
// images: see sqlite_repair_history). Failures and holds are written as they happen; done
// actions and replaced images only once the repaired store is written (`flush`), so a run whose
// output is never written does not mark its repairs done.
class apply_history final : public repair_history {
 public:
  apply_history(sqlite_state& state, int retry_limit, std::string read, std::string write)
      : inner_(state, retry_limit + 1, std::move(read), std::move(write)) {}
  std::optional<repair_history_entry> attempts(std::string_view key) override {
    return inner_.attempts(key);
  }
  void note_attempt(std::string_view key, bool ok, std::string_view err) override {
    if (ok)
      done_.emplace_back(key);
    else
      inner_.note_attempt(key, false, err);
  }
  void hold_for_review(std::string_view key, std::string_view reason) override {
    inner_.hold_for_review(key, reason);
  }
  bool replaced_image(std::string_view id, std::uint64_t sum) override {
    return inner_.replaced_image(id, sum);
  }
  void note_images(std::string_view key, std::span<const repair_image_note> images) override {
    images_.emplace_back(std::string(key),
                         std::vector<repair_image_note>(images.begin(), images.end()));
  }
  std::int64_t proposals(std::string_view proposal_key) override {
    return inner_.proposals(proposal_key);
  }
  void note_proposal(std::string_view proposal_key, std::string_view key, bool applied) override {
    if (applied)
      proposals_.emplace_back(std::string(proposal_key), std::string(key));
    else
      inner_.note_proposal(proposal_key, key, false);
  }
  // The run's output is written: its done actions, replaced images and applications go to the
  // database.
  void flush() {
    for (const auto& k : done_) inner_.note_attempt(k, true, {});
    for (const auto& [k, v] : images_) inner_.note_images(k, v);
    for (const auto& [pk, k] : proposals_) inner_.note_proposal(pk, k, true);
    done_.clear();
    images_.clear();
    proposals_.clear();
  }

 private:
  sqlite_repair_history inner_;
  std::vector<std::pair<std::string, std::string>> proposals_;  // (proposal key, action key)
  std::vector<std::string> done_;
  std::vector<std::pair<std::string, std::vector<repair_image_note>>> images_;
};

// The repair history of an earlier run as a dry run sees it: every question answered from the
// state database (opened read-only), nothing written to it. So a dry run says what the real run
// would: an action held in the manual queue, done in an earlier run, or a loop across runs.
class read_only_history final : public repair_history {
 public:
  read_only_history(sqlite_state& state, int retry_limit, std::string scope)
      : inner_(state, retry_limit + 1, scope, scope) {}
  std::optional<repair_history_entry> attempts(std::string_view key) override {
    return inner_.attempts(key);
  }
  void note_attempt(std::string_view, bool, std::string_view) override {}
  void hold_for_review(std::string_view, std::string_view) override {}
  bool replaced_image(std::string_view id, std::uint64_t sum) override {
    return inner_.replaced_image(id, sum);
  }
  void note_images(std::string_view, std::span<const repair_image_note>) override {}
  std::int64_t proposals(std::string_view proposal_key) override {
    return inner_.proposals(proposal_key);
  }
  void note_proposal(std::string_view, std::string_view, bool) override {}

 private:
  sqlite_repair_history inner_;
};

// A store's name in the history: its absolute path ("sqlite:" kept, so a JSONL file and a
// database of one path differ).
std::string history_scope(const std::string& store) {
  const std::string file =
      std::filesystem::absolute(store_file_path(store)).lexically_normal().string();
  return is_sqlite_store(store) ? "sqlite:" + file : file;
}
#endif

// "k1, k2, k3 and 4 more": the first `shown` names.
std::string name_list(const std::vector<std::string>& names, std::size_t shown = 10) {
  std::string t;
  for (std::size_t k = 0; k < names.size() && k < shown; ++k)
    t += (k ? ", " : "") + printable(names[k]);
  if (names.size() > shown) t += " and " + std::to_string(names.size() - shown) + " more";
  return t;
}

#if MEMHEALTH_CLI_HAVE_SQLITE
// The state database of `apply`: --state, else memhealth-state.db in the log's directory.
std::filesystem::path state_path_of(const apply_cli_options& o) {
  return o.state.empty() ? std::filesystem::path(o.wal).parent_path() / "memhealth-state.db"
                         : std::filesystem::path(o.state);
}
#endif

run_counter open_run_counter(const apply_cli_options& o) {
  run_counter c;
  if (!o.ledger.empty()) {
    c.ledger = o.ledger;
    return c;
  }
#if MEMHEALTH_CLI_HAVE_SQLITE
  // by default in the log's directory, as the JSON ledger was: logs in other directories (other
  // deployments, other tests) have their own budget, and a store in a read-only place still runs
  c.state.emplace(sqlite_state::open(state_path_of(o)));
#else
  c.ledger = std::filesystem::path(o.wal).parent_path() / std::string(run_ledger_file_name);
#endif
  return c;
}

std::map<std::string, std::size_t> counts(const report& r) {
  std::map<std::string, std::size_t> m;
  for (const auto& [k, n] : r.counts_by_kind()) m[k] = n;
  return m;
}

// `store` and `out` as the report names them (a PostgreSQL URI: store_label).
nlohmann::ordered_json apply_report_json(const apply_cli_options& o, const repair_plan& p,
                                         const apply_result& res, const report& before,
                                         const report& after) {
  nlohmann::ordered_json j;
  j["schema_version"] = 1;
  j["store"] = store_label(o.store);
  j["out"] = store_label(o.out);
  j["wal"] = o.wal;
  j["plan_actions"] = p.actions.size();
  j["suspended"] = p.suspended;
  j["applied"] = res.applied.size();
  j["already_applied"] = res.skipped_already_applied.size();
  j["unapproved"] = res.skipped_unapproved.size();
  j["deferred"] = res.deferred.size();
  j["failed"] = res.failed.size();
  std::size_t stale = 0;
  for (const auto& out : res.outcomes) stale += out.stale() ? 1 : 0;
  j["stale"] = stale;  // of "deferred": records changed since the plan
  j["records_changed"] = res.records_changed;
  auto& outs = j["actions"];
  outs = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < p.actions.size(); ++i)
    outs.push_back({{"type", p.actions[i].type},
                    {"tier", p.actions[i].tier},
                    {"automation", std::string(to_string(p.actions[i].automation))},
                    {"targets", p.actions[i].targets},
                    {"idempotency_key", p.actions[i].idempotency_key},
                    {"status", std::string(to_string(res.outcomes[i].status))},
                    {"reason", res.outcomes[i].reason}});
  j["rate_limit_waits"] = res.rate_limit_waits;
  j["rate_limit_waited_ms"] = res.rate_limit_waited.count();
  j["detection"] = detection_to_json(p.detection);
  j["findings_before"] = counts(before);
  j["findings_after"] = counts(after);
  return j;
}

/// The detection options apply verifies with: the plan's (recorded by `plan`), unless the same
/// option is given on the command line (then a differing value is warned about).
detection_cli_options apply_detection(const apply_cli_options& o, const detection_provenance& pd) {
  detection_cli_options d = o.detect;
  // planned: the plan's value (unset: nothing recorded); text: it as the plan writes it.
  auto take = [&](const char* key, const char* flag, const auto& planned, auto&& text, auto&& set,
                  const std::string& cli_value) {
    if (!planned) return;
    if (o.given.count(flag)) {
      if (const std::string pv = text(*planned); cli_value != pv)
        std::cerr << "memhealth apply: warning: " << flag << " " << cli_value
                  << " differs from the plan's " << key << " " << pv
                  << "; before/after counts use the command line's\n";
      return;
    }
    set(*planned);
  };
  auto same = [](const std::string& v) { return v; };
  auto now_text = [](utc_time t) { return format_timestamp(timestamp{t, 0}); };
  take(
      "threshold", "--threshold", pd.threshold, float_text,
      [&](float v) { d.settings.near_duplicate_threshold = v; },
      float_text(o.detect.settings.near_duplicate_threshold));
  take(
      "window", "--window", pd.window, same, [&](const std::string& v) { d.window = v; },
      o.detect.window);
  take(
      "schema", "--schema", pd.schema, same, [&](const std::string& v) { d.schema = v; },
      o.detect.schema.empty()
          ? std::string()
          : std::filesystem::absolute(o.detect.schema).lexically_normal().string());
  const auto planned_lexicon =
      pd.other.count("lexicon") ? std::optional<std::string>(pd.other.at("lexicon")) : std::nullopt;
  take(
      "lexicon", "--lexicon", planned_lexicon, same, [&](const std::string& v) { d.lexicon = v; },
      o.detect.lexicon.empty()
          ? std::string()
          : std::filesystem::absolute(o.detect.lexicon).lexically_normal().string());
  const auto planned_other = [&](const char* k) {
    return pd.other.count(k) ? std::optional<std::string>(pd.other.at(k)) : std::nullopt;
  };
  take(
      "judge", "--judge", planned_other("judge"), same, [&](const std::string& v) { d.judge = v; },
      o.detect.judge);
  take(
      "judge_model", "--judge-model", planned_other("judge_model"), same,
      [&](const std::string& v) { d.judge_model = v; }, o.detect.judge_model);
  if (const auto e = planned_other("embedder"))
    std::cerr << "memhealth apply: note: the plan's findings were computed with the embeddings "
                 "that records lacked filled in memory by "
              << *e
              << " (plan --embedder); apply's before/after counts are on the store as it "
                 "is (import --embedder writes them into a store)\n";
  const auto planned_guards = pd.other.count("duplicate_guards")
                                  ? std::optional<std::string>(pd.other.at("duplicate_guards"))
                                  : std::nullopt;
  take(
      "duplicate_guards", "--no-duplicate-guards", planned_guards, same,
      [&](const std::string& v) { d.settings.duplicate_guards = v != "off"; },
      std::string(o.detect.settings.duplicate_guards ? "on" : "off"));
  const auto planned_block = pd.other.count("block_above")
                                 ? std::optional<std::string>(pd.other.at("block_above"))
                                 : std::nullopt;
  take(
      "block_above", "--block-above", planned_block, same,
      [&](const std::string& v) { d.settings.block_scopes_above = std::stoull(v); },
      std::to_string(o.detect.settings.block_scopes_above));
  const auto planned_max_bytes = pd.other.count("max_content_bytes")
                                     ? std::optional<std::string>(pd.other.at("max_content_bytes"))
                                     : std::nullopt;
  take(
      "max_content_bytes", "--max-content-bytes", planned_max_bytes, same,
      [&](const std::string& v) { d.settings.content_size.max_bytes = std::stoull(v); },
      std::to_string(o.detect.settings.content_size.max_bytes));
  const auto planned_off = pd.other.count("hygiene_off")
                               ? std::optional<std::string>(pd.other.at("hygiene_off"))
                               : std::nullopt;
  take(
      "hygiene_off", "--hygiene-off", planned_off, same,
      [&](const std::string& v) {
        d.hygiene_off.clear();
        for (std::size_t a = 0; a <= v.size();) {
          const std::size_t b = std::min(v.find(',', a), v.size());
          if (b > a) d.hygiene_off.push_back(v.substr(a, b - a));
          a = b + 1;
        }
      },
      hygiene_off_text(o.detect.hygiene_off));
  take(
      "dim", "--dim", pd.dim, [](std::size_t v) { return std::to_string(v); },
      [&](std::size_t v) { d.dim = v; }, std::to_string(o.detect.dim));
  std::string cli_now = o.detect.now;
  if (auto t = parse_timestamp(cli_now)) cli_now = now_text(t->instant);
  take(
      "now", "--now", pd.now, now_text,
      [&](utc_time v) { d.now = now_text(v), d.now_given = true; }, cli_now);
  if (!d.schema.empty() && pd.schema_fnv1a64 && pd.schema &&
      std::filesystem::absolute(d.schema).lexically_normal().string() == *pd.schema &&
      file_fnv1a64(d.schema) != *pd.schema_fnv1a64)
    std::cerr
        << "memhealth apply: warning: the schema " << d.schema
        << " changed since the plan was made; before/after counts may differ from the plan's\n";
  return d;
}

/// Fails (error io) unless a file can be created in the directory of `path`: checked before
/// anything is written to the log, so an unwritable --out or --report stops the run early.
void check_writable(const std::string& path, const char* what) {
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  const auto probe = dir / (".memhealth-probe-" + std::to_string(::getpid()));
  {
    std::ofstream f(probe, std::ios::binary | std::ios::trunc);
    if (!f)
      throw error(error_code::io, std::string(what) + " " + path + ": cannot create files in " +
                                      dir.string() + "; nothing was applied");
  }
  std::error_code ec;
  std::filesystem::remove(probe, ec);
  if (std::filesystem::is_directory(path, ec))
    throw error(error_code::io,
                std::string(what) + " " + path + " is a directory; nothing was applied");
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (std::filesystem::equivalent(a, b, ec)) return true;
  return std::filesystem::weakly_canonical(a, ec) == std::filesystem::weakly_canonical(b, ec);
}

/// The locks of a command that reads the store `store` and writes `out`, taken before the store is
/// read: the input store exclusively when the command writes it in place, shared otherwise (any
/// number of runs may read one store side by side, none while another writes it), and an existing
/// `out` that is another file exclusively.
/// @throws memhealth::error(busy) when another memhealth process holds a conflicting lock.
struct store_locks {
  std::optional<file_lock> input, output;
  store_locks(const std::string& store, const std::string& out) {
    const std::string in = store_file_path(store), to = store_file_path(out);
    const bool in_place = same_file(in, to);
    std::error_code ec;  // a missing or odd path is left to the loader, which names the problem
    if (std::filesystem::is_regular_file(in, ec))
      input.emplace(in, "the store", in_place ? lock_mode::exclusive : lock_mode::shared);
    if (!in_place && std::filesystem::is_regular_file(to, ec))
      output.emplace(to, "the --out store", lock_mode::exclusive);
  }
};

/// A shared lock on a log that is read (rollback, recover) while it exists as a regular file: an
/// apply appending to it (its writer holds it exclusively) makes the reader refuse as busy.
struct shared_log_lock {
  std::optional<file_lock> lock;
  explicit shared_log_lock(const std::string& wal) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(wal, ec)) lock.emplace(wal, "the log", lock_mode::shared);
  }
};

/// Findings per kind and in total of a detection run whose findings are counted, not kept; the
/// error or critical ones; and the `finding_key`s found among those watched (the repaired faults
/// of the findings history not seen again, so a recurrence is noticed in bounded memory).
struct finding_counts {
  std::map<std::string, std::size_t> by_kind;
  std::size_t total = 0;
  std::size_t errors = 0;               // severity error or critical
  std::vector<std::string> found_keys;  // watched keys found
};

/// Runs the default pipeline and counts its findings (pipeline::run_each: bounded memory).
/// `watched` (sorted) names the finding keys to collect in `found_keys`.
finding_counts count_findings(const memory_store<>& store, const detection_cli_options& o,
                              const std::vector<std::string>& watched = {}) {
  const auto settings = detection_settings(o);
  detect_options d = settings.second;
  if (d.dimension == 0) d.dimension = store.dimension();
  finding_counts c;
  (void)make_default_pipeline(settings.first)
      .run_each(
          store,
          [&](std::vector<finding>& part) {
            c.total += part.size();
            for (const auto& f : part) {
              ++c.by_kind[f.kind];
              c.errors += f.severity >= severity::error;
              if (!watched.empty())
                if (auto k = finding_key(f); std::binary_search(watched.begin(), watched.end(), k))
                  c.found_keys.push_back(std::move(k));
            }
          },
          d);
  return c;
}

finding_counts counts_of(const report& r) {
  finding_counts c;
  c.by_kind = counts(r);
  c.total = r.findings.size();
  for (const auto& f : r.findings) {
    c.errors += f.severity >= severity::error;
    c.found_keys.push_back(finding_key(f));
  }
  return c;
}

/// The counts of an in-memory apply result.
apply_counts counts_of(const apply_result& r) {
  apply_counts c;
  c.actions = r.outcomes.size();
  c.applied = r.applied.size();
  c.already_applied = r.skipped_already_applied.size();
  c.noop = r.skipped_noop.size();
  c.unapproved = r.skipped_unapproved.size();
  c.deferred = r.deferred.size();
  c.failed = r.failed.size();
  c.records_changed = r.records_changed;
  c.dry_run = r.dry_run;
  c.rate_limit_waited = r.rate_limit_waited;
  c.rate_limit_waits = r.rate_limit_waits;
  return c;
}

/// The actions that ran nothing, for the summary line: "" when there are none, else
/// " (N more ran nothing: X no-op, Y already applied)".
std::string ran_nothing_text(const apply_counts& c) {
  if (c.noop + c.already_applied == 0) return {};
  return " (" + std::to_string(c.noop + c.already_applied) +
         " more ran nothing: " + std::to_string(c.noop) + " no-op, such as review items, " +
         std::to_string(c.already_applied) + " already applied)";
}

/// What an apply run left for a person, gathered action by action and printed at the end of the
/// summary: the same closing lines and exit code for files and tables.
struct apply_leftovers {
  std::vector<std::string> held;        ///< actions held in the manual queue by an earlier run
  std::vector<std::string> held_index;  ///< index actions held by their blast radius (reasons)
  std::vector<std::string> failed_now;  ///< actions that failed in this run: "KEY (reason)"
  std::size_t stale = 0;                ///< actions skipped: their records changed since the plan
  std::size_t unchecked = 0;  ///< record actions of an older plan, without per-record digests

  void note(const action_outcome& out, const repair_action& act) {
    stale += out.stale() ? 1 : 0;
    unchecked += act.seen.empty() && !act.edits.empty() && !is_index_action(act.type) ? 1 : 0;
    if (out.status == action_status::failed &&
        out.reason.starts_with("manual queue since an earlier run"))
      held.push_back(out.idempotency_key);
    else if (out.status == action_status::failed)
      failed_now.push_back(out.idempotency_key.substr(0, 12) + " (" + out.reason + ")");
    if (out.status == action_status::unapproved && out.reason.starts_with("held for review"))
      held_index.push_back(out.idempotency_key + ": " + out.reason);
  }

  /// The plan's suspension, held index actions and what --approve would run the waiting ones.
  void print_approval_hints(const apply_counts& c, const plan_header& header,
                            const apply_options& opt) const {
    const bool suspended_now = header.suspended && !opt.approve_suspended;
    if (suspended_now)
      std::cerr << "memhealth apply: the plan is suspended (" << header.suspend_reason
                << "), so nothing ran; review it (memhealth plan prints it) and pass --approve "
                   "suspended to run it\n";
    for (const auto& h : held_index)
      std::cerr << "memhealth apply: index action " << h << " (--approve suspended)\n";
    const bool others_wait = c.unapproved > held_index.size();  // not only held index actions
    if (!suspended_now && others_wait && opt.approve_tier2)  // only tier-3 actions can be waiting
      std::cerr << "memhealth apply: the actions awaiting approval run with --approve tier3; "
                   "memhealth plan lists "
                   "each action's tier\n";
    else if (!suspended_now && others_wait)
      std::cerr << "memhealth apply: the actions awaiting approval run with --approve tier2 "
                   "(tier-2 actions) or "
                   "--approve tier3 (tier 2 and 3); memhealth plan lists each action's tier\n";
  }

  /// The manual queue's lines (held by an earlier run, failed now) and the exit line.
  /// `release` is how `memhealth review release` names the store ("STORE" or "URI --mapping M"),
  /// `where` where the history is, `state` the state database (empty: none).
  /// @return exit_incomplete (failed or stale), exit_not_run (nothing approved ran), or nullopt
  ///         (the caller decides between its own success codes).
  [[nodiscard]] std::optional<int> finish(const apply_counts& c, const plan_header& header,
                                          const apply_options& opt, const std::string& release,
                                          const std::string& where,
                                          const std::string& state) const {
    const std::string state_opt = state.empty() ? std::string() : " --state " + state;
    if (!held.empty())
      std::cerr << "memhealth apply: " << held.size()
                << " actions held in the manual queue by an earlier run, not tried again: "
                << name_list(held) << " (" << where
                << "; a person decides: fix the cause, then let it run again with memhealth "
                   "review release "
                << release << " ID" << state_opt << " --reviewer NAME --reason TEXT)\n";
    if (c.failed > 0) {
      // name them (a prefix of the idempotency key is what `review release` takes): each failed
      // after its retries, or at once for a loop or a third proposal, and waits in the manual
      // queue
      if (!failed_now.empty()) {
        std::cerr << "memhealth apply: " << failed_now.size()
                  << " actions failed in this run and wait in the manual queue: "
                  << name_list(failed_now, 5) << " (the report and the log list them all)";
        if (!state.empty())
          std::cerr << "; a person decides: fix the cause, then memhealth review release "
                    << release << " ID" << state_opt << " --reviewer NAME --reason TEXT";
        std::cerr << "\n";
      }
      std::cerr << "memhealth apply: " << c.failed << " actions failed; exit 3\n";
      return exit_incomplete;
    }
    if (stale > 0) {
      std::cerr << "memhealth apply: exit 3 (stale actions not run)\n";
      return exit_incomplete;
    }
    if (c.applied == 0 && (header.suspended ? !opt.approve_suspended : c.unapproved > 0)) {
      std::cerr << "memhealth apply: nothing ran ("
                << (header.suspended && !opt.approve_suspended ? "the plan is suspended"
                                                               : "every action awaits approval")
                << "); exit 4\n";
      return exit_not_run;
    }
    return std::nullopt;
  }
};

/// What one pass over a plan file found (`scan_plan`).
struct plan_scan {
  plan_header header;
  bool in_order = true;           // the actions are in execution order
  std::size_t index_actions = 0;  // rebuild_index, clean_index, check_rebuild_index
};

/// One pass over a plan file before anything runs: every line parsed (a damaged line stops the
/// command here, not in the middle of a run), whether the actions are in execution order, and
/// how many act on the index. @throws what plan_reader throws.
plan_scan scan_plan(const std::string& path) {
  plan_reader r(path);
  repair_action a;
  plan_scan out;
  bool first = true;
  int last = 0;
  while (r.next(a)) {
    out.in_order = out.in_order && (first || a.priority <= last);
    out.index_actions += is_index_action(a.type) ? 1 : 0;
    last = a.priority;
    first = false;
  }
  out.header = r.header();
  return out;
}

/// Checks that the plan at `plan_path` (its header `h`) was made for `store` (its fingerprint,
/// `check_plan_store`), before anything is written. Another store: error(precondition), exit 2.
/// A store with no live record, or that lost most of the plan's records (or live records): the
/// reason index actions are refused (returned; `apply_options::index_refused`), with a warning
/// when the plan has `index_actions`. A plan without a fingerprint (an older memhealth): a
/// warning. @return "" or that reason.
template <record_store S>
std::string check_plan_made_for(const std::string& plan_path, const plan_header& h, const S& store,
                                std::size_t index_actions) {
  if (!h.store) {
    std::cerr << "memhealth apply: warning: " << plan_path
              << " records no store fingerprint (made by an older memhealth): it cannot be "
                 "checked against this store; make a new plan to have it checked\n";
    return {};
  }
  const plan_store_check c = check_plan_store(*h.store, store);
  switch (c.verdict) {
    case plan_store_verdict::other:
      throw error(error_code::precondition,
                  "--plan " + plan_path + " was made for another store: " + c.reason +
                      "; nothing was written (make a plan from this store: memhealth plan)");
    case plan_store_verdict::shrunk:
      if (index_actions)
        std::cerr << "memhealth apply: warning: " << c.reason << ": the plan's " << index_actions
                  << " index actions are refused (a clean-up or rebuild from what is left would "
                     "empty the index); record actions are checked one by one\n";
      return c.reason;
    case plan_store_verdict::changed:
      std::cerr << "memhealth apply: note: " << c.reason
                << "; each action is checked against the records as they are now\n";
      return {};
    case plan_store_verdict::same:
      return {};
  }
  return {};
}

/// Writes the audit report of `apply` to `o.report`: FILE.json (the run's JSON with `audit`,
/// plus `retrieval_before` / `retrieval_after` when given), FILE.html/.htm (self-contained), else
/// Markdown. The Markdown and HTML reports show the retrieval figures of `audit.retrieval`.
// The apply summary's lines on plan actions whose records changed since the plan (`stale`,
// skipped) and on record actions of an older plan that carry no per-record digests
// (`unchecked`, applied as before: nothing could be checked).
void note_stale_actions(std::size_t stale, std::size_t unchecked) {
  if (stale > 0)
    std::cerr << "memhealth apply: stale: " << stale
              << " actions skipped because their records changed since the plan (make a new "
                 "plan)\n";
  if (unchecked > 0)
    std::cerr << "memhealth apply: warning: " << unchecked
              << " actions of the plan carry no record checksums (a plan made by an older "
                 "memhealth): records changed since the plan cannot be detected; make a new "
                 "plan to have them checked\n";
}

/// What `apply` verifies after a run, for a file and a postgresql:// store alike.
struct apply_verification {
  std::optional<report> after;  ///< the findings after (with --report, else unset)
  finding_counts after_counts;  ///< their counts
  utc_time checked_after;       ///< the clock of the check after (findings history)
};

/// After a run: the findings history in the state database when the run keeps one (`history`
/// set: the check before under `scope_before`, the faults each applied action of `plan`
/// addressed (known with `before`, the whole findings) and the check after under `scope_after`),
/// then detection again over `repaired` with the same options (whole with `before`, else counts
/// with the watched fault keys), or, when `check_after` is set (a postgresql:// table checked job
/// by job), the whole report it returns. `repaired_at` is when the run's repairs count as made
/// (with a history); `history_now` the history's clock.
apply_verification verify_apply_run(
#if MEMHEALTH_CLI_HAVE_SQLITE
    apply_history* history, sqlite_state* state,
#endif
    const std::string& scope_before, const std::string& scope_after, const repair_plan* plan,
    const apply_result& res, const std::optional<report>& before,
    const finding_counts& before_counts, const memory_store<>* repaired,
    const detection_cli_options& detect, utc_time checked_before, utc_time repaired_at,
    const std::function<utc_time()>& history_now, const std::function<report()>& check_after = {}) {
  std::vector<std::string> watched_after;
  utc_time made = checked_before;  // when the run's repairs count as made
#if MEMHEALTH_CLI_HAVE_SQLITE
  if (history) {
    history->flush();  // each applied action is in the store now: done
    made = repaired_at;
    (void)state->note_history_run(scope_before, checked_before, true, before_counts.errors,
                                  before_counts.found_keys);
    if (before && plan)
      for (std::size_t i = 0; i < plan->actions.size() && i < res.outcomes.size(); ++i) {
        if (res.outcomes[i].status != action_status::applied) continue;
        std::vector<std::pair<std::string, std::string>> faults;
        for (const std::size_t k : findings_addressed(plan->actions[i], before->findings))
          faults.emplace_back(finding_key(before->findings[k]), before->findings[k].kind);
        state->note_repaired_faults(
            scope_after,
            sqlite_repair_history::scoped(scope_after, plan->actions[i].idempotency_key), faults,
            made);
      }
    watched_after = state->pending_fault_keys(scope_after);
  }
#else
  (void)scope_before, (void)plan, (void)res, (void)before_counts, (void)repaired_at;
#endif
  apply_verification v;
  if (check_after)
    v.after = check_after();
  else if (before)
    v.after = run_detection(*repaired, detect);
  v.after_counts = v.after ? counts_of(*v.after) : count_findings(*repaired, detect, watched_after);
  // a full check run of the store written, after the repairs (a fault they did not remove has
  // recurred at once)
  v.checked_after = std::max(made + std::chrono::milliseconds{1}, history_now());
#if MEMHEALTH_CLI_HAVE_SQLITE
  if (history)
    (void)state->note_history_run(scope_after, v.checked_after, true, v.after_counts.errors,
                                  v.after_counts.found_keys);
#endif
  return v;
}

/// The format of the apply report: --report-format when given, else the extension of --report
/// (.md / .markdown: "markdown", .json: "json", .html / .htm: "html", case as written).
/// @throws error(invalid_argument) for another extension without --report-format (checked
/// before any work, so nothing is written in a format the name does not say).
std::string apply_report_format(const apply_cli_options& o) {
  if (!o.report_format.empty()) return o.report_format;
  const std::string ext = std::filesystem::path(o.report).extension().string();
  if (ext == ".md" || ext == ".markdown") return "markdown";
  if (ext == ".json") return "json";
  if (ext == ".html" || ext == ".htm") return "html";
  throw error(error_code::invalid_argument,
              "--report " + o.report + ": cannot tell the report format from " +
                  (ext.empty() ? std::string("a name without an extension")
                               : "the extension '" + ext + "'") +
                  " (.md, .json, .html or .htm); name one with --report-format markdown|json|html");
}

void emit_apply_report(const apply_cli_options& o, const audit_report& audit,
                       const repair_plan& plan, const apply_result& res, const report& before,
                       const report& after, const std::optional<retrieval_figures>& figures_before,
                       const std::string& events_before,
                       const std::optional<retrieval_figures>& figures_after) {
  const std::string format = apply_report_format(o);
  if (format == "json") {
    auto j = apply_report_json(o, plan, res, before, after);
    if (figures_before) j["retrieval_before"] = figures_json(*figures_before, events_before);
    if (figures_after) j["retrieval_after"] = figures_json(*figures_after, o.events_after);
    j["audit"] = to_json(audit);
    emit(j.dump(2), o.report);
  } else if (format == "html") {
    emit(to_html(audit), o.report);
  } else {
    emit(to_markdown(audit), o.report);
  }
}

// ------------------------------------------------------------------------- PostgreSQL stores

// A postgresql:// store is repaired in place: --out must name the same URI (nothing else is
// written). @throws error(invalid_argument) otherwise.
void check_pg_in_place(const std::string& store, const std::string& out) {
  if (!is_pg_store(out) && !is_pg_store(store)) return;
  if (out != store)
    throw error(error_code::invalid_argument,
                "--out: a PostgreSQL store is repaired in place (one transaction per action); "
                "pass the store's URI again as --out (a copy to another store is not supported)");
}

#if MEMHEALTH_CLI_HAVE_PG
// The dry run of a PostgreSQL apply: the executor runs on an in-memory copy of the rows and
// every record write is turned into the SQL pg_store would run (`preview_restore`), printed on
// stdout; the database is not written.
struct pg_preview_store {
  using record_type = memory_record;
  const pg_store<>& pg;
  memory_store<> mem;
  std::string sql;
  [[nodiscard]] std::size_t size() const { return mem.size(); }
  [[nodiscard]] const memory_record& record(std::size_t i) const { return mem.record(i); }
  [[nodiscard]] std::span<const float> embedding(std::size_t i) const { return mem.embedding(i); }
  [[nodiscard]] std::optional<std::size_t> find(std::string_view id) const { return mem.find(id); }
  [[nodiscard]] std::size_t dimension() const { return mem.dimension(); }
  [[nodiscard]] memory_record extract(std::size_t i) const { return mem.extract(i); }
  // One action at a time (the transactional capability): its SQL is printed once it commits;
  // an action that fails, or is retried, prints nothing for its failed attempts.
  std::string pending;
  std::vector<std::pair<std::size_t, memory_record>> undo;
  bool open = false;
  void begin_action() {
    pending.clear();
    undo.clear();
    open = true;
  }
  void commit_action() {
    sql += pending;
    pending.clear();
    undo.clear();
    open = false;
  }
  void rollback_action() {
    if (!open) return;
    for (auto it = undo.rbegin(); it != undo.rend(); ++it) (void)mem.restore(it->first, it->second);
    pending.clear();
    undo.clear();
    open = false;
  }
  [[nodiscard]] bool in_action() const { return open; }
  memory_record restore(std::size_t i, const memory_record& image) {
    const std::string q = pg.preview_restore(i, image);
    std::string& out = open ? pending : sql;
    if (!q.empty()) out += "-- record " + image.id + "\n" + q;
    if (open) undo.emplace_back(i, mem.record(i));
    return mem.restore(i, image);
  }
};

// Every record id `plan`'s actions name (targets, edits, and the links an edit drops: apply
// checks that their targets are still missing), sorted, once each: the rows an apply of it may
// read and write.
std::vector<std::string> plan_record_ids(const repair_plan& plan) {
  std::set<std::string> ids;
  for (const auto& a : plan.actions) {
    ids.insert(a.targets.begin(), a.targets.end());
    for (const auto& e : a.edits) {
      ids.insert(e.record_id);
      if (const auto* d = std::get_if<edit_drop_links>(&e.op))
        ids.insert(d->ids.begin(), d->ids.end());
    }
    for (const auto& [id, digest] : a.seen) ids.insert(id);
  }
  return {ids.begin(), ids.end()};
}

int run_apply_pg(const apply_cli_options& o) {
  check_pg_in_place(o.store, o.out);
  if (!o.index.empty() || !o.events.empty() || !o.events_after.empty())
    throw error(error_code::invalid_argument,
                "--index, --events and --events-after are not available for postgresql:// stores "
                "yet");
  if (o.dry_run && !o.report.empty())
    throw error(error_code::invalid_argument,
                "--report: not with --dry-run (a dry run writes nothing and only prints the SQL "
                "it would run; report a real run)");
  const recurrence_window recur = o.history_window.recurrence();  // bad values: before any work
  const std::chrono::milliseconds uptime_span = o.history_window.uptime();
  const repair_plan plan = read_plan(o.plan);
  auto opt = approvals(o.approve);
  opt.batch_size = o.batch;
  opt.max_records = o.max_records;
  opt.limits.per_second = o.rate;
  opt.limits.burst = o.burst;
  opt.limits.max_in_flight = o.max_in_flight;
  const auto wait = parse_duration(o.max_wait);
  if (!wait)
    throw error(error_code::invalid_argument,
                "--max-wait: expected a duration such as 90s, 10m: " + o.max_wait);
  opt.limits.max_wait = *wait;
  if (!(o.burst >= 1) || !(o.rate >= 0))
    throw error(error_code::invalid_argument, "--burst must be >= 1 and --rate >= 0");
  // Which rows apply holds. The rows the plan names are read with their vectors: the rows it
  // may write (`pg_store_options::ids`). The rest of the table only as far as the plan's
  // fingerprint and the checks before and after need it: a mapping that places the scope is
  // checked job by job as `check` does (the rows held without their vectors, one scope's vectors
  // at a time), and a dry run reads the rows without their vectors for the fingerprint. With
  // --report (the audit compares every record before and after) or a mapping without a scope
  // place, the whole table is read with its vectors, as for a file.
  const pg_mapping mapping = load_pg_mapping(pg_mapping_option());
  const bool by_jobs = !o.dry_run && o.report.empty() && pg_mapping_scope_selectable(mapping);
  const bool by_ids = o.dry_run || by_jobs;
  std::optional<detection_cli_options> detect_opt;  // a real run's detection options
  if (!o.dry_run) detect_opt = apply_detection(o, plan.detection);
  // a dry run too needs the UPDATE privileges a real run needs: it never prints SQL the real run
  // would refuse (nothing is written either way); checked first, before any long read
  std::optional<pg_store<>> opened;
  if (by_ids) {
    pg_store_options so;
    so.ids = plan_record_ids(plan);
    opened.emplace(pg_store<>::open(o.store, mapping, so));
  } else {
    opened.emplace(open_pg_store(o.store, false));
    print_issues(opened->load_issues());  // rows read with an issue: their actions fail, unwritten
  }
  pg_store<>& store = *opened;
  // the table checked job by job in this process (`check`'s default job size and lease); `rows`
  // gets its rows without their vectors
  const auto check_table = [&](std::optional<pg_store<>>& rows, const char* left, bool note_index) {
    auto [settings, d] = detection_settings(*detect_opt);
    d.dimension = detect_opt->dim;
    const plan_options defaults;
    return check_by_jobs("apply", o.store, mapping, settings, d,
                         cli_run_options("apply", -1, defaults.job_records, defaults.lease), rows,
                         left, note_index);
  };
  std::optional<report> before_by_jobs;  // the check before, job by job (by_jobs)
  std::optional<pg_store<>> table;       // every row without its vector (by_ids)
  if (by_jobs) {
    before_by_jobs = check_table(table, "nothing was repaired", true);
  } else if (by_ids) {
    pg_store_options lo;
    lo.read_only = true;
    lo.vectors = false;
    table.emplace(pg_store<>::open(o.store, mapping, lo));
    print_issues(table->load_issues());
  }
  const auto& whole = [&]() -> const pg_store<>& { return table ? *table : store; }();
  // checked here (with the tool's messages), so not again by apply_plan
  opt.index_refused = check_plan_made_for(o.plan, header_of(plan), whole, 0);
  opt.skip_store_check = true;
  wal_writer_options wo;
  wo.store = identify_store(whole, pg_log_label(whole));  // names the mapping (rollback checks it)
  wo.store->database_id = whole.database_id();
  const std::size_t table_dim = whole.dimension();
  table.reset();  // the table's rows freed: the plan's rows are what apply holds from here
  if (!o.detect.embedder.empty())  // reembed actions embed through it
    set_apply_embedder(opt, make_cli_embedder(o.detect, table_dim));
  const std::string label = store.description();
  apply_counts c;
  if (o.dry_run) {
    std::vector<memory_record> rows;
    rows.reserve(store.size());
    for (std::size_t i = 0; i < store.size(); ++i) rows.push_back(store.record(i));
    pg_preview_store preview{store, memory_store<>::from_records(std::move(rows)), {}, {}, {},
                             false};
    // the repair history of earlier runs, read only (as the real run would see it)
    std::string history_note = "no repair history yet";
#if MEMHEALTH_CLI_HAVE_SQLITE
    std::optional<sqlite_state> state;
    std::optional<read_only_history> history;
    std::error_code ec_state;
    if (!o.ledger.empty()) {
      history_note = "a --ledger run keeps no repair history";
    } else if (const auto sp = state_path_of(o); std::filesystem::is_regular_file(sp, ec_state)) {
      state.emplace(sqlite_state::open(sp, {.read_only = true}));
      // a spent run budget refuses the dry run as it refuses the real run (nothing is taken)
      const auto day = run_budget::day_of(
          std::chrono::floor<std::chrono::milliseconds>(std::chrono::system_clock::now()));
      if (const std::uint32_t n = state->runs_on(day); n >= o.max_runs_per_day)
        throw error(error_code::precondition,
                    run_budget_spent(n, o.max_runs_per_day, "state database " + sp.string(),
                                     "the real run would apply nothing; try again tomorrow"));
      history.emplace(*state, opt.retry_limit, pg_history_scope(store));
      opt.history = &*history;
      history_note = "the repair history of " + sp.string() + " consulted, not written";
    }
#endif
    const dry_run_log log(o.wal);
    const std::filesystem::path& tmp = log.path();
    apply_result dry;
    {
      wal_writer w(tmp.string(), wal_sync::none);
      dry = apply_plan(preview, plan, w, opt);
      c = counts_of(dry);
    }
    std::cout << preview.sql;
    std::cerr << "memhealth apply: dry run on " << label << ": " << c.applied << " would run, "
              << c.unapproved << " awaiting approval, " << c.deferred << " deferred, " << c.failed
              << " failed" << ran_nothing_text(c) << "; nothing written (the SQL is on stdout; "
              << history_note << ")\n";
    apply_leftovers left;
    for (const auto& out : dry.outcomes) left.note(out, plan.actions.at(out.action));
    note_stale_actions(left.stale, left.unchecked);
    for (const auto& out : dry.outcomes)  // a dry run lists each: it is read to decide
      if (out.status == action_status::failed)
        std::cerr << "  would fail: " << printable(out.idempotency_key) << ": "
                  << printable(out.reason) << "\n";
    left.print_approval_hints(c, header_of(plan), opt);
    // the real run's exit code
    if (c.failed > 0 || left.stale > 0) {
      std::cerr << "memhealth apply: dry run: " << c.failed << " would fail, " << left.stale
                << " stale; exit 3 (as the run would)\n";
      return exit_incomplete;
    }
    if (c.applied == 0 && c.unapproved > 0) {
      std::cerr << "memhealth apply: dry run: nothing would run (every action awaits approval); "
                   "exit 4\n";
      return exit_not_run;
    }
    return exit_ok;
  }
  // As for files: a check before and after (the findings history, the report), the run budget
  // and the repair history across runs in the state database (memhealth-state.db next to the
  // log, or --state), under the table's name (pg_history_scope): the store is read and written
  // in place, so every run sees every earlier one.
  const detection_cli_options& detect = *detect_opt;
  if (!o.report.empty()) check_writable(o.report, "--report");
  const std::string scope = pg_history_scope(store);
  std::optional<utc_time> history_clock;
  if (o.given.count("--now"))
    if (const auto t = parse_timestamp(o.detect.now)) history_clock = t->instant;
  const auto history_now = [&history_clock] {
    return history_clock
               ? *history_clock
               : std::chrono::floor<std::chrono::milliseconds>(std::chrono::system_clock::now());
  };
  // the rows as this store holds them now, for detection (pg_store keeps them in memory)
  const auto rows_now = [&store, &detect] {
    std::vector<memory_record> rows;
    rows.reserve(store.size());
    for (std::size_t i = 0; i < store.size(); ++i) rows.push_back(store.record(i));
    return memory_store<>::from_records(std::move(rows), detect.dim);
  };
  const utc_time checked_before = history_now();
  std::vector<std::string> watched_before;
#if MEMHEALTH_CLI_HAVE_SQLITE
  std::error_code ec_state;
  if (o.ledger.empty())
    if (const auto sp = state_path_of(o); std::filesystem::is_regular_file(sp, ec_state))
      watched_before = sqlite_state::open(sp, {.read_only = true}).pending_fault_keys(scope);
#endif
  std::optional<report> before;
  std::optional<memory_store<>> before_store;
  finding_counts before_counts;
  if (before_by_jobs) {  // the findings are whole: the history knows what each repair addressed
    before = std::move(before_by_jobs);
    before_counts = counts_of(*before);
  } else {
    memory_store<> snap = rows_now();
    if (!o.report.empty()) {
      before = run_detection(snap, detect);
      before_counts = counts_of(*before);
      before_store.emplace(std::move(snap));
    } else {
      before_counts = count_findings(snap, detect, watched_before);
    }
  }
  wal_writer w(o.wal, wo);
  const utc_time started =
      std::chrono::floor<std::chrono::milliseconds>(std::chrono::system_clock::now());
  run_counter budget = open_run_counter(o);
  budget.take(o.max_runs_per_day, started);
#if MEMHEALTH_CLI_HAVE_SQLITE
  std::optional<apply_history> history;
  if (budget.state) {
    history.emplace(*budget.state, opt.retry_limit, scope, scope);
    opt.history = &*history;
  }
#endif
  apply_result res;
  try {
    res = apply_plan(store, plan, w, opt);
    w.sync();
  } catch (...) {
    // every action that committed before the failure is in the database (one transaction per
    // action): the history notes it as done, and the run counts against the budget
#if MEMHEALTH_CLI_HAVE_SQLITE
    try {
      if (history) history->flush();
    } catch (...) {
    }
#endif
    throw;
  }
  c = counts_of(res);
  if (c.records_changed == 0) budget.give_back(started);
  apply_leftovers left;
  for (const auto& out : res.outcomes) left.note(out, plan.actions.at(out.action));
  // the findings history and the check after (shared with files: verify_apply_run); each
  // applied action committed in its own transaction. Job by job: the table as it is now.
  std::optional<memory_store<>> after_store;
  std::function<report()> check_after;
  if (by_jobs) {
    check_after = [&] {
      std::optional<pg_store<>> rows;
      return check_table(rows, "the repairs are made (see the log); the check after stopped",
                         false);
    };
  } else {
    after_store.emplace(rows_now());
  }
  const apply_verification verified = verify_apply_run(
#if MEMHEALTH_CLI_HAVE_SQLITE
      history ? &*history : nullptr, budget.state ? &*budget.state : nullptr,
#endif
      scope, scope, &plan, res, before, before_counts, after_store ? &*after_store : nullptr,
      detect, checked_before, std::max(checked_before, history_clock ? *history_clock : started),
      history_now, check_after);
  const std::optional<report>& after = verified.after;
  const finding_counts& after_counts = verified.after_counts;
  const utc_time checked_after = verified.checked_after;
#if !MEMHEALTH_CLI_HAVE_SQLITE
  (void)checked_after, (void)recur, (void)uptime_span;
#endif
  std::cerr << "memhealth apply: " << c.applied << " applied, " << c.unapproved
            << " awaiting approval, " << c.deferred << " deferred, " << c.failed << " failed"
            << ran_nothing_text(c) << "; " << c.records_changed << " record writes committed in "
            << label << "; findings " << before_counts.total << " -> " << after_counts.total
            << "\n";
  note_stale_actions(left.stale, left.unchecked);
  left.print_approval_hints(c, header_of(plan), opt);
  if (!o.report.empty()) {
    audit_options ao;
    ao.title = "memhealth repair run: " + label + " (in place)";
    ao.threshold = detect.settings.near_duplicate_threshold;
    audit_report audit =
        make_audit_report(*before_store, *after_store, *before, *after, plan, res, ao);
#if MEMHEALTH_CLI_HAVE_SQLITE
    if (history)
      audit.history = budget.state->history_figures_of(scope, recur, uptime_span, checked_after);
#endif
    emit_apply_report(o, audit, plan, res, *before, *after, std::nullopt, {}, std::nullopt);
  }
  std::string state;
#if MEMHEALTH_CLI_HAVE_SQLITE
  if (history) state = state_path_of(o).string();
#endif
  if (const auto code = left.finish(c, header_of(plan), opt, "URI --mapping " + pg_mapping_option(),
                                    budget.where(), state))
    return *code;
  return exit_ok;
}
#endif

int run_apply(const apply_cli_options& o) {
  {  // no output may replace an input (--out over the store is an in-place repair: allowed)
    const std::string index_file = o.index.starts_with("flat:") ? o.index.substr(5) : o.index;
    auto inputs = detection_inputs(o.store, o.detect);
    inputs.insert(inputs.end(),
                  {{"--plan", o.plan}, {"--events", o.events}, {"--events-after", o.events_after}});
    // --out against every input but the store (inputs[0]): an in-place repair names the store
    refuse_outputs_over_inputs({{"--out", o.out}}, {inputs.begin() + 1, inputs.end()});
    refuse_outputs_over_inputs({{"--wal", o.wal},
                                {"--report", o.report},
                                {"--index", index_file},
                                {"--ledger", o.ledger},
                                {"--model-cache", o.detect.model_cache}},
                               inputs);
    refuse_outputs_over_inputs({{"--report", o.report}, {"--ledger", o.ledger}},
                               {{"--out", o.out}, {"--wal", o.wal}, {"--index", index_file}});
  }
  if (!o.report.empty())
    (void)apply_report_format(o);  // an unknown format: before any work
  else if (!o.report_format.empty())
    throw error(error_code::invalid_argument, "--report-format needs --report FILE");
  if (!o.events_after.empty()) require_readable_file(o.events_after, "--events-after");
  if (!o.events.empty()) require_readable_file(o.events, "--events");
  if (is_pg_store(o.store) || is_pg_store(o.out)) {
#if MEMHEALTH_CLI_HAVE_PG
    return run_apply_pg(o);
#else
    no_pg_support();
#endif
  }
  if (o.dry_run)
    throw error(error_code::invalid_argument,
                "--dry-run is for postgresql:// stores (for files, `memhealth plan --approve` "
                "shows what apply would run, and --out is a new file anyway)");
  if (same_file(o.wal, store_file_path(o.out)) || same_file(o.wal, store_file_path(o.store)) ||
      same_file(o.wal, o.plan))
    throw error(error_code::invalid_argument,
                "--wal must be a file of its own (not the store, the plan or --out)");
  // The plan is read twice: once whole here (checked line by line, in bounded memory), then
  // action by action while it runs. Only an audit report (which lists every action) or a plan
  // not in execution order is held in memory whole.
  const recurrence_window recur = o.history_window.recurrence();  // bad values: before any work
  const std::chrono::milliseconds uptime_span = o.history_window.uptime();
  const plan_scan scanned = scan_plan(o.plan);
  const plan_header& header = scanned.header;
  std::optional<repair_plan> whole;
  if (!o.report.empty() || !scanned.in_order) whole = read_plan(o.plan);
  const detection_cli_options detect = apply_detection(o, header.detection);
  // One writer per store and per log: the store is locked before it is read and for the whole
  // run (exclusively when repaired in place), and the log is locked by its writer and tied to
  // this store (its header names the store's fingerprint).
  const store_locks locks(o.store, o.out);
  kept_lines damaged;  // lines that cannot be parsed, written back in place
  auto store = load_memory_store(o.store, detect.dim, &damaged);
  check_keepable(o.out, damaged);
  warn_if_empty("apply", o.store, store.size());
  const std::string index_refusal =
      check_plan_made_for(o.plan, header, store, scanned.index_actions);
  auto opt = approvals(o.approve);
  opt.index_refused = index_refusal;
  opt.skip_store_check = true;  // checked above, with the tool's messages
  opt.index_blast_limit =
      header.blast_radius_threshold.value_or(planner_options{}.blast_radius_threshold);
  opt.batch_size = o.batch;
  opt.max_records = o.max_records;
  opt.limits.per_second = o.rate;
  opt.limits.burst = o.burst;
  opt.limits.max_in_flight = o.max_in_flight;
  const auto wait = parse_duration(o.max_wait);
  if (!wait)
    throw error(error_code::invalid_argument,
                "--max-wait: expected a duration such as 90s, 10m: " + o.max_wait);
  opt.limits.max_wait = *wait;
  if (!(o.burst >= 1) || !(o.rate >= 0))
    throw error(error_code::invalid_argument, "--burst must be >= 1 and --rate >= 0");
  if (!o.detect.embedder.empty()) {  // reembed actions (and new texts) embed through it
    const auto e = make_cli_embedder(o.detect, store.dimension());
    set_apply_embedder(opt, e);
    std::map<std::string, std::size_t> per_version;
    for (std::size_t i = 0; i < store.size(); ++i)
      if (!store.embedding(i).empty()) ++per_version[store.record(i).embedding_version];
    std::size_t most = 0;
    std::string top;
    for (const auto& [v, n] : per_version)
      if (n > most) most = n, top = v;
    if (!top.empty() && top != e->ver)
      std::cerr << "memhealth apply: warning: --embedder writes " << e->ver
                << ", the store's most common version is " << top
                << ": re-embedded records join neither (a model switch is `memhealth migrate`)\n";
  }
  // The index policy (--index flat:PATH) for rebuild_index, clean_index, check_rebuild_index.
  // It reads `store` as the run changes it; a missing file is an error now, not mid-run (the
  // tool can build one: memhealth index build).
  std::optional<examples::flat_index_policy<memory_store<>>> flat_policy;
  if (!o.index.empty()) {
    flat_policy.emplace(flat_index_path(o.index), store);
    (void)examples::flat_index::load(flat_policy->path());
    opt.rebuild_index = make_index_rebuilder(*flat_policy);
    opt.index = make_index_hooks(*flat_policy);
  }
  // Retrieval figures before the repair, of --events or of the events the plan was made from.
  std::string events_before = o.events;
  if (events_before.empty() && header.detection.other.count("events")) {
    events_before = header.detection.other.at("events");
    std::error_code ec;
    if (!std::filesystem::is_regular_file(events_before, ec)) {
      std::cerr << "memhealth apply: warning: the plan's events file " << events_before
                << " is gone: no retrieval figures before the repair (--events names one)\n";
      events_before.clear();
    }
  }
  std::optional<retrieval_figures> figures_before, figures_after;
  if (!events_before.empty()) {
    const auto ev = read_alarm_events(events_before);
    figures_before = summarize_retrievals(store, std::span(ev.retrievals));
  }
  // the events after the repair are read now: a file that is not events stops the run before
  // anything is written
  std::optional<event_load_result> ev_after;
  if (!o.events_after.empty()) ev_after = read_alarm_events(o.events_after);
  // Detection before: the whole report only for an audit report (it attributes root causes on
  // the findings and a copy of the store as it was); otherwise counts, in bounded memory.
  // The findings history (state database, not with --ledger): this detection is a full check run
  // of the store read, and a repaired fault an earlier run noted that it finds again recurred.
  // Its clock is --now when given on this command line (a run replayed at a fixed time, as the
  // tests do: its history is then reproducible), else the wall clock.
  std::optional<utc_time> history_clock;
  if (o.given.count("--now"))
    if (const auto t = parse_timestamp(o.detect.now)) history_clock = t->instant;
  const auto history_now = [&history_clock] {
    return history_clock
               ? *history_clock
               : std::chrono::floor<std::chrono::milliseconds>(std::chrono::system_clock::now());
  };
  const utc_time checked_before = history_now();
  std::vector<std::string> watched_before;
#if MEMHEALTH_CLI_HAVE_SQLITE
  std::error_code ec_state;
  if (o.ledger.empty())
    if (const auto sp = state_path_of(o); std::filesystem::is_regular_file(sp, ec_state))
      watched_before =
          sqlite_state::open(sp, {.read_only = true}).pending_fault_keys(history_scope(o.store));
#endif
  std::optional<report> before;
  std::optional<memory_store<>> before_store;
  if (!o.report.empty()) before = run_detection(store, detect), before_store = store;
  const finding_counts before_counts =
      before ? counts_of(*before) : count_findings(store, detect, watched_before);
  // Nothing touches the log before these checks: --out (and --report) must be writable, and the
  // run must fit the runs-per-day budget (the ledger counts it).
  check_writable(store_file_path(o.out), "--out");
  check_new_store_output(o.out);  // an sqlite: --out must be a new database
  if (!o.report.empty()) check_writable(o.report, "--report");
  wal_writer_options wo;
  wo.store = identify_store(
      store, std::filesystem::absolute(store_file_path(o.out)).lexically_normal().string());
  // An SQLite input's own id goes into the log, and an sqlite: --out (a repaired copy) keeps it,
  // so the log belongs to both and to no other database.
  const std::string database_id = store_database_id(o.store);
  wo.store->database_id = database_id;
  wal_writer w(o.wal, wo);
  // The run is counted once its log is open, and given back when it changed nothing (a run that
  // failed, or found nothing approved to do, does not use up the budget). The count is kept in
  // the store's state database (`runs` table; atomic across processes), or in a JSON ledger when
  // --ledger names one (and in builds without SQLite, next to the log).
  const utc_time started =
      std::chrono::floor<std::chrono::milliseconds>(std::chrono::system_clock::now());
  run_counter budget = open_run_counter(o);
  budget.take(o.max_runs_per_day, started);
  // The repair history that spans runs lives in the same state database (not with --ledger).
#if MEMHEALTH_CLI_HAVE_SQLITE
  std::optional<apply_history> history;
  if (budget.state) {
    history.emplace(*budget.state, opt.retry_limit, history_scope(o.store), history_scope(o.out));
    opt.history = &*history;
  }
#endif
  apply_leftovers left;
  apply_result res;  // per action, for the audit report (whole plans only)
  apply_counts c;
  try {
    if (whole) {
      res = apply_plan(store, *whole, w, opt);
      c = counts_of(res);
      for (const auto& out : res.outcomes) left.note(out, whole->actions.at(out.action));
    } else {
      plan_reader reader(o.plan);
      c = apply_plan_stream(
          store, reader, w, opt,
          [&](const action_outcome& out, const repair_action& act) { left.note(out, act); });
    }
    w.sync();
  } catch (...) {
    try {
      if (c.records_changed == 0) budget.give_back(started);
    } catch (...) {
    }
    throw;
  }
  if (c.records_changed == 0) budget.give_back(started);
  write_store(o.out, store, damaged,
              database_id);  // JSONL: atomic (temporary file + rename); sqlite: a new database
  // the findings history (the repairs are in --out now) and the check after, with the same
  // detection options as before (shared with postgresql:// stores: verify_apply_run)
  const apply_verification verified = verify_apply_run(
#if MEMHEALTH_CLI_HAVE_SQLITE
      history ? &*history : nullptr, budget.state ? &*budget.state : nullptr,
#endif
      history_scope(o.store), history_scope(o.out), whole ? &*whole : nullptr, res, before,
      before_counts, &store, detect, checked_before,
      std::max(checked_before, history_clock ? *history_clock : started), history_now);
  const std::optional<report>& after = verified.after;
  const finding_counts& after_counts = verified.after_counts;
  const utc_time checked_after = verified.checked_after;
#if !MEMHEALTH_CLI_HAVE_SQLITE
  (void)checked_after, (void)recur, (void)uptime_span;
#endif
  std::cerr << "memhealth apply: " << c.applied << " applied, " << c.unapproved
            << " awaiting approval, " << c.deferred << " deferred, " << c.failed << " failed"
            << ran_nothing_text(c)
            << (c.rate_limit_waits ? " (waited " + std::to_string(c.rate_limit_waited.count()) +
                                         " ms for the rate limit)"
                                   : std::string())
            << "; findings " << before_counts.total << " -> " << after_counts.total << "; wrote "
            << o.out << "\n";
  note_stale_actions(left.stale, left.unchecked);
  if (figures_before)
    std::cerr << "memhealth apply: retrieval before (" << events_before
              << "): " << figures_text(*figures_before) << "\n";
  if (ev_after) {  // events served after the repair, against the repaired store
    figures_after = summarize_retrievals(store, std::span(ev_after->retrievals));
    std::cerr << "memhealth apply: retrieval after (" << o.events_after
              << "): " << figures_text(*figures_after) << "\n";
  }
  left.print_approval_hints(c, header, opt);
  if (!o.report.empty()) {  // audit report (audit/report.hpp): apply_report_format
    audit_options ao;
    ao.title = "memhealth repair run: " + o.store + " -> " + o.out;
    ao.threshold = detect.settings.near_duplicate_threshold;
    audit_report audit = make_audit_report(*before_store, store, *before, *after, *whole, res, ao);
#if MEMHEALTH_CLI_HAVE_SQLITE
    if (history)  // repair success by recurrence and uptime, from the findings history
      audit.history =
          budget.state->history_figures_of(history_scope(o.out), recur, uptime_span, checked_after);
#endif
    if (figures_before)
      audit.retrieval.push_back(audit_figures(*figures_before, "before", events_before));
    if (figures_after)
      audit.retrieval.push_back(audit_figures(*figures_after, "after", o.events_after));
    emit_apply_report(o, audit, *whole, res, *before, *after, figures_before, events_before,
                      figures_after);
  }
  std::string state;
#if MEMHEALTH_CLI_HAVE_SQLITE
  if (history) state = state_path_of(o).string();
#endif
  if (const auto code = left.finish(c, header, opt, o.store, budget.where(), state)) return *code;
  // an empty store: done, with something to act on (README, exit codes)
  return store.size() == 0 ? exit_findings : exit_ok;
}

// ------------------------------------------------------------------------- rollback, recover

struct wal_io_options {
  std::string store;
  std::string wal;
  std::string out;
  bool force = false;
  std::string policy = "undo";
};

/// Reads a run's log. A file that is not a memhealth log, or an empty one, is an input error (a
/// log holding only its header is a valid log with zero runs); a corrupt frame followed by valid
/// frames (damage in the middle, or a broken hash chain) is refused unless `force`, since acting
/// on a prefix would undo only part of the run.
wal_contents load_wal(const std::string& path, bool force = false) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw error(error_code::io, path + ": is a directory, not a write-ahead log");
  auto log = read_wal_file(path);
  if (log.file_bytes == 0)
    throw error(error_code::parse, path + ": empty file, not a memhealth write-ahead log");
  if (!log.has_header() || (log.problem && log.problem->kind == wal_problem_kind::bad_header))
    throw error(error_code::parse,
                path + ": not a memhealth write-ahead log (no MHWAL1 header frame)");
  if (log.problem) {
    std::cerr << "memhealth: " << path << ": log stops at byte " << log.problem->offset << ": "
              << log.problem->reason << " (nothing after it is used)\n";
    if (log.problem->valid_frames_follow && !force)
      throw error(error_code::parse, path + ": corrupt frame at byte " +
                                         std::to_string(log.problem->offset) +
                                         " with valid frames after it (damage, not a torn tail); "
                                         "pass --force to use the part before it");
  }
  return log;
}

/// Prints what a rollback or recovery left undone: conflicts by kind (each with its id, at most
/// 50 lines), the log's torn or damaged tail, and the store comparison (not for a store that
/// read only the log's records, `by_id`: its ids and positions say nothing of the table's).
/// @return exit code.
template <class Result>
int report_undo(const char* what, const Result& res, const wal_contents& log, bool by_id = false) {
  if (res.store_check.store_changed && !by_id)
    std::cerr << "  note: " << res.store_check.reason << "\n";
  if (res.records_relocated && !by_id)
    std::cerr << "  " << res.records_relocated
              << " records were found by id at another position than when the run changed them\n";
  std::map<std::string_view, std::size_t> by_kind;
  for (const auto& c : res.conflicts) ++by_kind[to_string(c.kind)];
  std::size_t shown = 0;
  for (const auto& c : res.conflicts) {
    if (shown++ == 50) {
      std::cerr << "  ... and " << (res.conflicts.size() - 50) << " more conflicts\n";
      break;
    }
    std::cerr << "  conflict (" << to_string(c.kind) << "): " << printable(c.id) << " ["
              << printable(c.idempotency_key) << "]: " << printable(c.reason) << "\n";
  }
  // done: complete (as the result judges the log's tail: a torn one is normal for recover) once
  // the conflicts --force overwrote are set aside (none was left alone)
  if (std::all_of(res.conflicts.begin(), res.conflicts.end(),
                  [](const auto& c) { return c.overwritten; })) {
    Result rest = res;
    rest.conflicts.clear();
    if (rest.complete()) return exit_ok;
  }
  std::cerr << "memhealth " << what << ": INCOMPLETE:";
  for (const auto& [k, n] : by_kind) std::cerr << " " << n << " " << k << ",";
  std::size_t left_alone = 0;
  for (const auto& c : res.conflicts) left_alone += !c.overwritten;
  std::cerr << " " << left_alone << " records left as they were";
  // rollback works record by record: an action of several records (a merge, a conflict's
  // winner and loser) with one record in conflict has its other records restored
  if constexpr (requires { res.rolled_back; }) {
    const std::set<std::string> undone(res.rolled_back.begin(), res.rolled_back.end());
    std::set<std::string> partial;
    for (const auto& c : res.conflicts)
      if (undone.count(c.idempotency_key)) partial.insert(c.idempotency_key);
    if (!partial.empty()) {
      std::cerr << "; " << partial.size()
                << " actions only partly undone (their other records were restored, so a merge "
                   "or supersession may now be half in place; check these records by hand):";
      for (const auto& k : partial) std::cerr << " " << k;
    }
  }
  if (res.log_problem)
    std::cerr << "; the log stops at byte " << res.log_problem->offset << " of " << log.file_bytes
              << " (" << to_string(res.log_problem->kind)
              << "): whatever came after it was not considered";
  std::cerr << "; exit 3\n";
  return exit_incomplete;
}

#if MEMHEALTH_CLI_HAVE_PG
// Every record id the log's actions hold an image of, sorted, once each: the rows a rollback or
// recover of it may read and write.
std::vector<std::string> log_record_ids(const wal_contents& log) {
  std::set<std::string> ids;
  for (const auto& e : log.entries)
    for (const auto& img : e.records) ids.insert(img.id);
  return {ids.begin(), ids.end()};
}
#endif

int run_rollback(const wal_io_options& o) {
  if (is_pg_store(o.store) || is_pg_store(o.out)) {
    check_pg_in_place(o.store, o.out);
#if MEMHEALTH_CLI_HAVE_PG
    const auto log = load_wal(o.wal, o.force);
    // only the rows the log names are read (each action's records by id)
    auto store = open_pg_store(o.store, false, log_record_ids(log));
    check_log_mapping(log.store, store);
    rollback_options ro;
    ro.force = o.force;
    ro.database_id = store.database_id();
    const auto res = rollback(store, log, ro);
    std::cerr << "memhealth rollback: runs in the log: " << log.runs() << "; "
              << res.rolled_back.size() << " actions undone, " << res.records_restored
              << " records restored, " << res.already_restored << " already restored, "
              << res.conflicts.size() << " conflicts in " << store.description() << "\n";
    return report_undo("rollback", res, log, true);
#else
    no_pg_support();
#endif
  }
  const store_locks locks(o.store, o.out);
  const shared_log_lock wal_lock(o.wal);  // no apply appends to the log meanwhile
  const auto log = load_wal(o.wal, o.force);
  kept_lines damaged;
  auto store = load_memory_store(o.store, 0, &damaged);
  check_keepable(o.out, damaged);
  rollback_options ro;
  ro.force = o.force;
  ro.database_id = store_database_id(o.store);
  const auto res = rollback(store, log, ro);
  write_store(o.out, store, damaged, ro.database_id);
  std::cerr << "memhealth rollback: runs in the log: " << log.runs() << "; "
            << res.rolled_back.size() << " actions undone, " << res.records_restored
            << " records restored, " << res.already_restored << " already restored, "
            << res.conflicts.size() << " conflicts -> " << o.out << "\n";
  return report_undo("rollback", res, log);
}

int run_recover(const wal_io_options& o) {
  if (is_pg_store(o.store) || is_pg_store(o.out)) {
    check_pg_in_place(o.store, o.out);
#if MEMHEALTH_CLI_HAVE_PG
    const auto log = load_wal(o.wal, o.force);
    // only the rows the log names are read (each action's records by id)
    auto store = open_pg_store(o.store, false, log_record_ids(log));
    check_log_mapping(log.store, store);
    recover_options ro;
    ro.force = o.force;
    ro.open_actions = o.policy == "redo" ? open_action_policy::redo : open_action_policy::undo;
    ro.database_id = store.database_id();
    // each action committed in the table before its commit frame: only open ones need work (a
    // rolled-back action is not re-applied)
    ro.committed_in_store = true;
    const auto res = recover(store, log, ro);
    std::cerr << "memhealth recover: " << res.actions.size() << " logged actions, "
              << res.records_restored << " records restored, " << res.conflicts.size()
              << " conflicts in " << store.description() << "\n";
    return report_undo("recover", res, log, true);
#else
    no_pg_support();
#endif
  }
  const store_locks locks(o.store, o.out);
  const shared_log_lock wal_lock(o.wal);  // no apply appends to the log meanwhile
  const auto log = load_wal(o.wal, o.force);
  kept_lines damaged;
  auto store = load_memory_store(o.store, 0, &damaged);
  check_keepable(o.out, damaged);
  recover_options ro;
  ro.force = o.force;
  ro.open_actions = o.policy == "redo" ? open_action_policy::redo : open_action_policy::undo;
  ro.database_id = store_database_id(o.store);
  const auto res = recover(store, log, ro);
  write_store(o.out, store, damaged, ro.database_id);
  std::map<std::string_view, std::size_t> by;
  for (const auto& a : res.actions) ++by[to_string(a.status)];
  std::cerr << "memhealth recover: " << res.actions.size() << " logged actions (";
  bool first = true;
  for (const auto& [k, n] : by) std::cerr << (first ? "" : ", ") << k << " " << n, first = false;
  std::cerr << "), " << res.records_restored << " records restored, " << res.conflicts.size()
            << " conflicts -> " << o.out << "\n";
  return report_undo("recover", res, log);
}

// ------------------------------------------------------------------------- diff

struct diff_options {
  std::string before;
  std::string after;
  std::string wal;
  std::string format = "text";
};

int run_diff(const diff_options& o) {
  if (!o.wal.empty()) refuse_directory(o.wal, "write-ahead log");
  auto b = load_store_file(o.before);
  auto a = load_store_file(o.after);
  print_issues(b.issues);
  print_issues(a.issues);
  std::optional<wal_contents> log;
  if (!o.wal.empty()) log = load_wal(o.wal);
  const snapshot_diff_result d = diff_snapshots(b.records, a.records, log ? &*log : nullptr);
  if (o.format == "json") {
    emit(snapshot_diff_json(d, o.before, o.after, o.wal).dump(2), "");
  } else {
    std::ostringstream s;
    s << "memhealth diff " << o.before << " " << o.after << (o.wal.empty() ? "" : " --wal " + o.wal)
      << "\n";
    s << d.changes.size() << " changes the log does not explain\n";
    for (const auto& f : to_findings(d)) {
      s << "  [" << to_string(f.severity) << "] " << f.kind;
      for (const auto& id : f.record_ids) s << " " << id;
      for (const auto& [k, v] : f.evidence)
        s << " " << k << "="
          << std::visit(
                 [](const auto& x) {
                   std::ostringstream t;
                   t << x;
                   return t.str();
                 },
                 v);
      s << "\n";
    }
    emit(s.str(), "");
  }
  return d.clean() ? exit_ok : exit_findings;
}

// ------------------------------------------------------------------------- wal compact

struct wal_compact_cli_options {
  std::string wal;
  std::string now;
  std::string retention = "30d";
  std::string old_vector_retention = "14d";
  bool allow_short_retention = false;
  bool dry_run = false;
};

int run_wal_compact(const wal_compact_cli_options& o) {
  wal_compact_options co;
  const auto ret = parse_duration(o.retention);
  const auto vret = parse_duration(o.old_vector_retention);
  if (!ret || !vret)
    throw error(error_code::invalid_argument,
                "--retention / --old-vector-retention: expected a duration such as 30d, 6w");
  co.retention = *ret;
  co.old_vector_retention = *vret;
  co.allow_short_retention = o.allow_short_retention;
  co.dry_run = o.dry_run;
  if (co.retention < wal_min_retention && co.allow_short_retention)
    std::cerr << "memhealth wal compact: warning: retention " << o.retention
              << " is below the 30 days traces must be kept; compacting anyway "
                 "(--allow-short-retention)\n";
  utc_time now = std::chrono::floor<std::chrono::milliseconds>(std::chrono::system_clock::now());
  if (!o.now.empty()) {
    auto t = parse_timestamp(o.now);
    if (!t) throw error(error_code::invalid_argument, "--now: not an ISO-8601 time: " + o.now);
    now = t->instant;
  }
  const auto r = compact_wal(o.wal, now, co);
  if (!r.refused.empty()) {
    std::cerr << "memhealth wal compact: " << o.wal << " left alone: " << r.refused << "\n";
    return exit_findings;
  }
  std::cerr << "memhealth wal compact: " << o.wal
            << (r.compacted ? ""
                : o.dry_run ? " (dry run)"
                            : " (nothing to drop)")
            << ": " << r.bytes_before << " -> " << r.bytes_after << " bytes, " << r.frames_before
            << " -> " << r.frames_after << " frames; kept " << r.intents_kept << " intents ("
            << r.old_vectors_kept << " re-embedded records' old vectors); dropped "
            << r.aborted_dropped << " aborted intents, " << r.stray_dropped << " stray frames, "
            << r.torn_bytes_dropped << " torn-tail bytes\n";
  return exit_ok;
}

}  // namespace

/// `memhealth wal verify RUN.wal [--format text|json]`: checks every frame (length, CRC-32C,
/// payload, hash chain) and reports the first bad one. Exit 0 when every byte is a good frame, 1
/// when the log has a torn or damaged tail or a broken chain, 2 when it is not a log.
int run_wal_verify(const std::string& path, const std::string& format) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw error(error_code::io, path + ": is a directory, not a write-ahead log");
  const auto log = read_wal_file(path);
  if (!log.has_header())
    throw error(error_code::parse,
                path + ": not a memhealth write-ahead log (no MHWAL1 header frame)");
  std::size_t intents = 0, commits = 0, aborts = 0;
  // runs without a run_end frame (a crash, a kill, or a run still going) and the intents in them
  // that no commit or abort closes: what `memhealth recover` would finish or undo
  struct unfinished {
    std::string run;
    std::vector<const wal_entry*> open;
  };
  std::vector<unfinished> runs_open;
  std::map<std::uint64_t, const wal_entry*> open_intents;
  for (const auto& e : log.entries) {
    intents += e.type == wal_frame_type::intent;
    commits += e.type == wal_frame_type::commit;
    aborts += e.type == wal_frame_type::abort;
    if (e.type == wal_frame_type::run_begin) runs_open.push_back({e.run, {}});
    if (e.type == wal_frame_type::intent) open_intents[e.seq] = &e;
    if (e.type == wal_frame_type::commit || e.type == wal_frame_type::abort)
      open_intents.erase(e.intent);
    if (e.type == wal_frame_type::run_end)
      std::erase_if(runs_open, [&](const unfinished& u) { return u.run == e.run; });
  }
  for (const auto& [seq, e] : open_intents)
    for (auto& u : runs_open)
      if (u.run == e->run) u.open.push_back(e);
  if (format == "json") {
    nlohmann::ordered_json j;
    j["schema_version"] = 1;
    j["wal"] = path;
    j["ok"] = log.clean();
    j["chained"] = log.chained;
    j["bytes"] = log.file_bytes;
    j["valid_bytes"] = log.valid_bytes;
    j["frames"] = log.entries.size() + 1;
    j["runs"] = log.runs();
    j["intents"] = intents;
    j["commits"] = commits;
    j["aborts"] = aborts;
    if (log.store)
      j["store"] = {{"path", log.store->path},
                    {"fingerprint", log.store->fingerprint},
                    {"records", log.store->records}};
    j["unfinished_runs"] = nlohmann::ordered_json::array();
    for (const auto& u : runs_open) {
      nlohmann::ordered_json r;
      r["run"] = u.run;
      r["open_intents"] = nlohmann::ordered_json::array();
      for (const auto* e : u.open)
        r["open_intents"].push_back(
            {{"seq", e->seq}, {"action", e->action}, {"idempotency_key", e->idempotency_key}});
      j["unfinished_runs"].push_back(std::move(r));
    }
    if (log.problem)
      j["problem"] = {{"offset", log.problem->offset},
                      {"kind", std::string(to_string(log.problem->kind))},
                      {"reason", log.problem->reason},
                      {"valid_frames_follow", log.problem->valid_frames_follow}};
    emit(j.dump(2), "");
  } else {
    std::cout << path << ": " << log.entries.size() + 1 << " good frames (runs " << log.runs()
              << ", intents " << intents << ", commits " << commits << ", aborts " << aborts
              << "), " << log.valid_bytes << " of " << log.file_bytes << " bytes; hash chain "
              << (log.chained ? "checked" : "absent (a log written before the chain existed)")
              << "\n";
    if (log.store)
      std::cout << "  store: " << log.store->path << " (fingerprint " << log.store->fingerprint
                << ", " << log.store->records << " records)\n";
    for (const auto& u : runs_open) {
      std::cout << "  UNFINISHED RUN " << u.run << ": no run_end frame (a crash, a kill, or a run "
                << "still going), " << u.open.size() << " intent(s) neither committed nor aborted";
      for (std::size_t k = 0; k < u.open.size() && k < 10; ++k)
        std::cout << (k ? ", " : ": ") << "action " << u.open[k]->action << " (seq "
                  << u.open[k]->seq << ")";
      if (u.open.size() > 10) std::cout << ", ...";
      std::cout << "; `memhealth recover` finishes or undoes them in the store (it does not write "
                   "the log, so this line stays after a recover; a recover run again reports "
                   "them already restored)\n";
    }
    if (log.problem)
      std::cout << "  FIRST BAD FRAME at byte " << log.problem->offset << ": "
                << to_string(log.problem->kind) << ": " << log.problem->reason
                << (log.problem->valid_frames_follow
                        ? " (frames that check out follow it: damage, not a torn append)"
                        : " (a torn tail)")
                << "\n";
    else if (runs_open.empty())
      std::cout << "  ok\n";
  }
  return log.clean() && runs_open.empty() ? exit_ok : exit_findings;
}

/// `memhealth wal compact RUN.wal [--now T] [--retention 30d] [--allow-short-retention]
/// [--dry-run]`. Registered by add_diff until main.cpp calls it directly.
void add_wal(CLI::App& app, int& rc) {
  auto* wal = app.add_subcommand("wal", "Write-ahead log maintenance (verify, compact)");
  wal->require_subcommand(1);
  auto o = std::make_shared<wal_compact_cli_options>();
  auto* cmd = wal->add_subcommand(
      "compact", "Compact a log older than the retention (keeps what rollback needs)");
  cmd->add_option("wal", o->wal, "The log (RUN.wal)")->required();
  cmd->add_option("--now", o->now, "Clock for the log's age (ISO-8601; default: now)");
  cmd->add_option("--retention", o->retention,
                  "Refuse logs younger than this (default 30d, never below 30d without "
                  "--allow-short-retention)")
      ->transform(duration());
  cmd->add_option("--old-vector-retention", o->old_vector_retention,
                  "Logs holding re-embeddings are refused while younger than this (default 14d)")
      ->transform(duration());
  cmd->add_flag("--allow-short-retention", o->allow_short_retention,
                "Permit a retention below 30 days (prints a warning)");
  cmd->add_flag("--dry-run", o->dry_run, "Report what would be dropped; write nothing");
  cmd->callback([o, &rc] { rc = run_wal_compact(*o); });
  auto v = std::make_shared<std::pair<std::string, std::string>>(std::string(), "text");
  auto* ver = wal->add_subcommand(
      "verify", "Check every frame of a log (checksums, hash chain); report the first bad one");
  ver->add_option("wal", v->first, "The log (RUN.wal)")->required();
  ver->add_option("--format", v->second, "Output format")->check(CLI::IsMember(text_json));
  ver->callback([v, &rc] { rc = run_wal_verify(v->first, v->second); });
}

void add_index(CLI::App& app, int& rc) {
  auto* ix = app.add_subcommand(
      "index", "The reference vector index (a file-backed flat index): build, check");
  ix->require_subcommand(1);
  auto o = std::make_shared<index_cli_options>();
  auto* b = ix->add_subcommand(
      "build", "Write the flat index the store expects (live records with a usable vector)");
  const auto store_and_mapping = [&o](CLI::App* sub) {
    sub->add_option("store", o->store,
                    "Store (JSONL, sqlite:PATH or postgresql://URI with --mapping)")
        ->required();
    sub->add_option("--mapping", pg_mapping_option(),
                    "postgresql:// stores: the column mapping, a JSON file or a built-in name "
                    "(mem0, langgraph; default: memhealth's own schema)");
  };
  store_and_mapping(b);
  b->add_option("--index", o->index, "The index: flat:PATH")->required();
  b->callback([o, &rc] { rc = run_index_build(*o); });
  auto* c = ix->add_subcommand(
      "check",
      "Compare a flat index with the store (ids, vectors, dimension, model version); "
      "exit 1 when inconsistent");
  store_and_mapping(c);
  c->add_option("--index", o->index, "The index: flat:PATH")->required();
  c->add_option("--format", o->format, "Output format")->check(CLI::IsMember(text_json));
  c->callback([o, &rc] { rc = run_index_check(*o); });
}

void add_plan(CLI::App& app, int& rc) {
  auto o = std::make_shared<plan_options>();
  auto* cmd =
      app.add_subcommand("plan", "Detect, then write a tiered repair plan (changes nothing)");
  cmd->add_option("store", o->store,
                  "Store (JSONL, sqlite:PATH or postgresql://URI with --mapping)")
      ->required();
  cmd->add_option("--out", o->out, "Plan file (JSON)")->required();
  cmd->add_option("--max-records", o->max_records, "Most records the plan may change in one run")
      ->transform(whole_number());
  cmd->add_option("--blast-radius", o->blast_radius,
                  "Suspend the whole plan when it changes more records than this")
      ->transform(whole_number());
  cmd->add_option("--approve", o->approve,
                  "Also report what apply would run with this approval: tier2, tier3")
      ->check(CLI::IsMember({"tier2", "tier3", "suspended"}));
  cmd->add_option("--default", o->defaults,
                  "Metadata default for fill_metadata_defaults, KEY=VALUE (repeatable)");
  add_detection_options(cmd, o->detect);
  add_embedder_options(cmd, o->detect, false);
  cmd->add_option("--workers", o->workers,
                  "postgresql:// stores: detect with N worker threads through a job table in the "
                  "database, as check --workers (0 = only `memhealth worker` processes); the plan "
                  "is the same")
      ->transform(whole_number(0, 256));
  add_worker_job_options(cmd, o->job_records, o->lease);
  cmd->add_option("--events", o->events,
                  "Retrieval events (JSONL): the retrieval monitor's alarms are planned too (ghost "
                  "results: an index clean-up; latency or similarity: an index check and rebuild; "
                  "scope leaks: a critical review; a query-model mismatch: a migration proposal)");
  cmd->add_option("--monitor-window", o->monitor_window,
                  "Window of the retrieval monitor for --events (30m, 1h, 1d)")
      ->transform(duration(true));
  cmd->add_option("--baseline", o->baseline,
                  "Reference retrieval events for the monitor's baseline (default: rolling)");
  cmd->callback([o, &rc] { rc = run_plan(*o); });
}

void add_apply(CLI::App& app, int& rc) {
  auto o = std::make_shared<apply_cli_options>();
  auto* cmd = app.add_subcommand(
      "apply", "Apply a plan through the write-ahead log; write the repaired store atomically");
  cmd->add_option("store", o->store,
                  "Store (JSONL, sqlite:PATH or postgresql://URI with --mapping)")
      ->required();
  cmd->add_option("--plan", o->plan, "Plan file from memhealth plan")->required();
  cmd->add_option("--wal", o->wal,
                  "Write-ahead log of this run (appended; durable before the store changes)")
      ->required();
  cmd->add_option("--out", o->out,
                  "Repaired store: JSONL (written atomically), sqlite:PATH (a new database) or the "
                  "same postgresql:// URI (in place)")
      ->required();
  cmd->add_option(
      "--report", o->report,
      "Audit report: FILE.md (Markdown), FILE.json or FILE.html (self-contained, with charts); "
      "another name needs --report-format");
  cmd->add_option("--report-format", o->report_format,
                  "Format of --report when its extension does not say: markdown, json or html")
      ->check(CLI::IsMember({"markdown", "json", "html"}));
  cmd->add_option("--approve", o->approve,
                  "Run tier-2 (tier2) or tier-2 and tier-3 (tier3) actions; 'suspended' runs a "
                  "suspended plan")
      ->check(CLI::IsMember({"tier2", "tier3", "suspended"}));
  cmd->add_option("--batch", o->batch, "Actions per group commit (one fdatasync each)")
      ->transform(whole_number(1, 100000));
  cmd->add_option("--max-records", o->max_records,
                  "Most records this run may change; actions beyond are deferred")
      ->transform(whole_number());
  cmd->add_option("--max-runs-per-day", o->max_runs_per_day,
                  "Refuse a run beyond this many per UTC day (counted in the state database)")
      ->transform(whole_number(1, 1'000'000));
  cmd->add_option("--ledger", o->ledger,
                  "Count runs in this JSON ledger file instead of the state database (then no "
                  "repair history is kept across runs)");
  cmd->add_option("--state", o->state,
                  "State database that counts the runs per day and keeps the repair history "
                  "across runs: attempts, the manual queue, done actions (default: "
                  "memhealth-state.db next to the WAL)");
  o->history_window.add_to(cmd);  // the --report's figures across runs
  cmd->add_option("--rate", o->rate,
                  "Rate limit: actions started per second (token refill; 0 = no refill: only "
                  "--burst actions start)")
      ->transform(real_number(0, 1e9));
  cmd->add_option("--burst", o->burst, "Rate limit: actions that may start at once (bucket size)")
      ->transform(real_number(1, 1e9));
  cmd->add_option("--max-wait", o->max_wait,
                  "Most time to wait for the rate limit in this run; later actions are deferred "
                  "(90s, 10m, 1h)")
      ->transform(duration());
  cmd->add_option("--max-in-flight", o->max_in_flight,
                  "Concurrency cap: actions with open intents at once (caps --batch)")
      ->transform(whole_number(1, 1'000'000));
  cmd->add_flag("--dry-run", o->dry_run,
                "postgresql:// stores: print the SQL each action would run (stdout); write "
                "nothing");
  add_detection_options(cmd, o->detect);
  cmd->add_option("--embedder", o->detect.embedder,
                  "Embedder for reembed actions: lexical:DIM[:SEED] (the built-in stand-in) or "
                  "openai:URL with --embedding-model (an OpenAI-compatible API; key from "
                  "--api-key-env); without it reembed actions fail (manual queue)");
  cmd->add_option("--embedding-model", o->detect.embedding_model, "Model name for --embedder");
  cmd->add_option("--index", o->index,
                  "Index policy for the index actions (rebuild_index, clean_index, "
                  "check_rebuild_index): flat:PATH, a file-backed flat index (memhealth index "
                  "build makes one); without it they fail (manual queue)");
  cmd->add_option("--events", o->events,
                  "Retrieval events before the repair: their P95 latency and duplicate share are "
                  "reported (default: the events the plan was made from)");
  cmd->add_option("--events-after", o->events_after,
                  "Retrieval events served after the repair: the same figures against the "
                  "repaired store");
  cmd->callback([o, cmd, &rc] {
    // outputs probed before any work (writable, not a directory; stale temporaries reported)
    probe_store_output(o->out, "--out");
    probe_output(o->report, "--report");
    for (const char* f :
         {"--threshold", "--window", "--schema", "--lexicon", "--dim", "--now",
          "--no-duplicate-guards", "--block-above", "--max-content-bytes", "--hygiene-off"})
      if (cmd->count(f) > 0) o->given.insert(f);
    rc = run_apply(*o);
  });
}

void add_rollback(CLI::App& app, int& rc) {
  auto o = std::make_shared<wal_io_options>();
  auto* cmd = app.add_subcommand("rollback", "Undo a run record by record from its log");
  cmd->add_option("store", o->store,
                  "The store as the run left it (JSONL, sqlite:PATH or postgresql://URI)")
      ->required();
  cmd->add_option("--wal", o->wal, "The run's log")->required();
  cmd->add_option("--out", o->out,
                  "Restored store (JSONL, or sqlite:PATH: a new database; postgresql://: the same "
                  "URI, in place)")
      ->required();
  cmd->add_flag("--force", o->force,
                "Restore even records changed since the run; use a log damaged in the middle up to "
                "the damage");
  cmd->callback([o, &rc] {
    refuse_directory(o->wal, "write-ahead log");
    probe_store_output(o->out, "--out");  // before any work
    refuse_output_over_input(o->out, o->wal, "--out", "--wal");
    rc = run_rollback(*o);
  });
}

void add_recover(CLI::App& app, int& rc) {
  auto o = std::make_shared<wal_io_options>();
  auto* cmd =
      app.add_subcommand("recover", "After a crash: finish or undo every half-applied action");
  cmd->add_option("store", o->store,
                  "The store as found after the crash (JSONL, sqlite:PATH or postgresql://URI)")
      ->required();
  cmd->add_option("--wal", o->wal, "The run's log")->required();
  cmd->add_option("--out", o->out,
                  "Recovered store (JSONL, or sqlite:PATH: a new database; postgresql://: the same "
                  "URI, in place)")
      ->required();
  cmd->add_option("--open", o->policy, "What to do with actions that were logged but not committed")
      ->check(CLI::IsMember({"undo", "redo"}));
  cmd->add_flag("--force", o->force,
                "Overwrite records whose image the log does not know; use a log damaged in the "
                "middle up to the damage");
  cmd->callback([o, &rc] {
    refuse_directory(o->wal, "write-ahead log");
    probe_store_output(o->out, "--out");  // before any work
    refuse_output_over_input(o->out, o->wal, "--out", "--wal");
    rc = run_recover(*o);
  });
}

void add_diff(CLI::App& app, int& rc) {
  auto o = std::make_shared<diff_options>();
  auto* cmd =
      app.add_subcommand("diff", "Changes between two snapshots that the log does not explain");
  cmd->add_option("before", o->before, "Earlier snapshot (JSONL or sqlite:PATH)")->required();
  cmd->add_option("after", o->after, "Later snapshot (JSONL or sqlite:PATH)")->required();
  cmd->add_option("--wal", o->wal, "Log of the operations between them");
  cmd->add_option("--format", o->format, "Output format")->check(CLI::IsMember(text_json));
  cmd->callback([o, &rc] { rc = run_diff(*o); });
}

}  // namespace memhealth::cli
