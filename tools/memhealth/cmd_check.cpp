// memhealth check: runs the default detection pipeline over a store; never changes it.
// memhealth claims: shows what the conflict judge reads from each record (text/claims.hpp).
#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "cli.hpp"
#include "interrupt.hpp"
#if MEMHEALTH_CLI_HAVE_PG
#include "pg_run.hpp"
#endif
#include "report_output.hpp"

namespace memhealth::cli {

namespace {

struct check_options {
  std::string store;
  std::string format = "text";
  std::string out;
  std::string embed = "none";
  bool exit_zero = false;
  std::string since;  ///< "" = a full run; "last" = since the state's cursor; else a time
  std::string state;  ///< the state database ("" = default_state_path(store))
  detection_cli_options detect;
  int workers = -1;                 ///< --workers N (postgresql:// only); -1 = one process
  std::size_t job_records = 20000;  ///< --job-records
  double lease = 120;               ///< --lease seconds
};

#if MEMHEALTH_CLI_HAVE_SQLITE
// The time of `--since TIME`: an RFC 3339 date-time, which carries its UTC offset ("Z" or
// +hh:mm / -hh:mm after the time). A time without one (a date, or a local clock reading) would
// be taken as UTC silently: refused. @throws error(invalid_argument) with the reason.
utc_time since_time(const std::string& text) {
  const auto t = parse_timestamp(text);
  if (!t)
    throw error(error_code::invalid_argument,
                "--since: '" + text + "' is neither 'last' nor an RFC 3339 time");
  const std::string_view v = text;
  const bool zulu = v.ends_with('Z') || v.ends_with('z');
  const auto sign = v.find_last_of("+-");
  const bool has_time = v.find_first_of("Tt ") != std::string_view::npos;
  // +hh:mm / -hh:mm after the time (the date's own '-' come before the 'T')
  const bool numeric = has_time && sign != std::string_view::npos &&
                       sign > v.find_first_of("Tt ") && v.size() - sign == 6 && v[sign + 3] == ':';
  if (!has_time || !(zulu || numeric))
    throw error(error_code::invalid_argument,
                "--since: '" + text +
                    "' has no UTC offset; an RFC 3339 time needs one, e.g. "
                    "2024-07-15T10:00:00Z or 2024-07-15T12:00:00+02:00");
  return t->instant;
}

// An incremental check (--since): the state database, the records' fingerprints now, and what
// the run selects. Records are checked when changed after the cursor (updated_at, else
// created_at) or when their fingerprint differs from the last run's (new records included).
struct incremental_check {
  std::optional<sqlite_state> state;
  std::vector<std::string> ids;
  std::vector<std::uint64_t> fingerprints;
  fingerprint_changes changes;
};

template <class Store>
incremental_check start_incremental(const check_options& o, const Store& store, detect_options& d) {
  incremental_check ic;
  const auto path = o.state.empty() ? default_state_path(o.store) : std::filesystem::path(o.state);
  ic.state.emplace(sqlite_state::open(path));
  // the store the state belongs to: a file by its absolute path, a postgresql:// store by its
  // table on its server (pg_history_scope)
#if MEMHEALTH_CLI_HAVE_PG
  if (is_pg_store(o.store))
    ic.state->bind_store(pg_history_scope(o.store));
  else
#endif
    ic.state->bind_store(
        std::filesystem::absolute(store_file_path(o.store)).lexically_normal().string());
  ic.ids.reserve(store.size());
  ic.fingerprints.reserve(store.size());
  for (std::size_t i = 0; i < store.size(); ++i) {
    const memory_record& r = store.record(i);
    ic.ids.push_back(r.id);
    ic.fingerprints.push_back(record_fingerprint(r, store.embedding(i)));
  }
  ic.changes = ic.state->changes(ic.ids, ic.fingerprints);
  if (o.since == "last") {
    d.since = ic.state->cursor("check");
  } else {
    d.since = since_time(o.since);
  }
  if (d.since) {  // a first run (no cursor) is a full run
    // a record that links to a removed one is checked again (its link now dangles)
    if (!ic.changes.removed.empty()) {
      const std::set<std::string, std::less<>> removed(ic.changes.removed.begin(),
                                                       ic.changes.removed.end());
      for (std::size_t i = 0; i < store.size(); ++i) {
        const memory_record& r = store.record(i);
        bool links = removed.count(r.links.duplicate_of) > 0;
        for (const auto& t : r.links.related_ids) links = links || removed.count(t) > 0;
        for (const auto& t : r.links.supersedes) links = links || removed.count(t) > 0;
        if (links && !ic.changes.changed[i]) {
          ic.changes.changed[i] = true;
          ++ic.changes.changed_count;
        }
      }
    }
    d.changed = std::make_shared<const std::vector<bool>>(ic.changes.changed);
  }
  std::size_t selected = store.size();
  if (d.since) {
    const auto sel = changed_records(store, d);
    selected = static_cast<std::size_t>(std::count(sel.begin(), sel.end(), true));
  }
  std::cerr << "memhealth check: incremental (state " << path.string() << "): "
            << (d.since ? "since " + format_timestamp(timestamp{*d.since, 0})
                        : std::string("no cursor yet, a full run"))
            << "; " << selected << " of " << store.size()
            << " records to check (updated after the cursor; or new, changed by content or "
               "linked to a removed one: "
            << ic.changes.changed_count << "), " << ic.changes.removed.size() << " removed\n";
  return ic;
}

// After the report is written: the fingerprints and the cursor move to this run.
void finish_incremental(incremental_check& ic, const detect_options& d) {
  ic.state->commit_fingerprints(ic.ids, ic.fingerprints, d.now);
  ic.state->set_cursor("check", d.now);
}
#endif

std::string report_text(const report& r, const check_options& o, const detect_options& d,
                        std::size_t n_issues, bool markdown) {
  std::ostringstream s;
  const auto counts = r.counts_by_kind();
  if (markdown) {
    s << "# memhealth check: " << store_label_with_table(o.store) << "\n\n";
    s << "- records: " << r.records_total << " (" << r.records_checked << " checked"
      << (d.since ? ", incremental since " + format_timestamp(timestamp{*d.since, 0}) : "")
      << (r.records_total == 0 ? ", EMPTY STORE" : "") << ")\n";
    s << "- clock: " << format_timestamp(timestamp{d.now, 0}) << ", embedding dimension "
      << d.dimension << "\n";
    s << "- findings: " << r.findings.size() << ", load issues: " << n_issues << "\n\n";
    s << "| kind | count |\n|---|---:|\n";
    for (const auto& [k, n] : counts) s << "| " << k << " | " << n << " |\n";
  } else {
    s << "memhealth check " << store_label_with_table(o.store) << "\n";
    s << "records: " << r.records_total << " (" << r.records_checked << " checked"
      << (d.since ? ", incremental since " + format_timestamp(timestamp{*d.since, 0}) : "")
      << (r.records_total == 0 ? ", EMPTY STORE" : "") << "), clock "
      << format_timestamp(timestamp{d.now, 0}) << ", dimension " << d.dimension << "\n";
    s << "findings: " << r.findings.size() << ", load issues: " << n_issues << "\n\n";
    for (const auto& [k, n] : counts) s << "  " << k << ": " << n << "\n";
  }
  grouped_findings_text(s, r, markdown, 20);
  return s.str();
}

// An empty store is reported as empty, never as healthy: a finding of warning level (exit 1
// unless --exit-zero) and a line on stderr.
void note_empty_store(report& r, const std::string& store) {
  if (!warn_if_empty("check", store, r.records_total)) return;
  finding f;
  f.kind = "store_empty";
  f.severity = severity::warning;
  f.detector = "check";
  f.with("store", store).with("records", std::int64_t{0});
  f.suggested_repair =
      "check the path: nothing was checked (a wrong file, or an import that did not finish)";
  r.findings.push_back(std::move(f));
}

// check --workers N: a postgresql:// store checked by N worker threads (and any number of
// `memhealth worker` processes) through a job table in the database (detect/pg_workers.hpp).
// `table` false (a full check of a postgresql:// store without --workers): one thread checks the
// jobs, scope by scope, without a job table, so that only one job's rows are held with their
// vectors; the report is the single-process check's.
int run_parallel_check(const check_options& o, const default_check_settings& settings,
                       detect_options d, bool table = true) {
  if (!is_pg_store(o.store))
    throw error(error_code::invalid_argument,
                "--workers: a check spread across workers needs a postgresql:// store");
  if (!o.since.empty())
    throw error(error_code::invalid_argument, "--workers: not with --since (a full check only)");
  if (o.embed == "lexical" || !o.detect.embedder.empty())
    throw error(error_code::invalid_argument,
                "--workers: not with --embed or --embedder (workers check the rows as stored)");
#if MEMHEALTH_CLI_HAVE_PG
  pg_run_options ro = cli_run_options("check", table ? o.workers : -1, o.job_records, o.lease);
  d.dimension = o.detect.dim;
  const pg_mapping mapping = load_pg_mapping(pg_mapping_option());
  note_scope_index("check", o.store, mapping);
  // SIGINT/SIGTERM: the jobs in hand end, the run's tables are dropped (a kill -9 leaves them)
  std::optional<interrupt_guard> signals;
  if (table) {
    signals.emplace(
        "memhealth check: interrupted: stopping after the jobs in hand; the run's tables are "
        "dropped (interrupt again to stop at once)\n");
    ro.stop_requested = [] { return interrupt_guard::requested(); };
  }
  std::string run_id;
  if (table)
    ro.on_ready = [&run_id, ready = ro.on_ready](const std::string& id) {
      run_id = id;
      ready(id);
    };
  pg_run_result res;
  try {
    res = pg_parallel_check(o.store, mapping, settings, d, ro);
  } catch (const error&) {
    if (!interrupt_guard::requested()) throw;
    const int sig = interrupt_guard::signal();
    std::cerr << "memhealth check: interrupted (" << (sig == SIGTERM ? "SIGTERM" : "SIGINT")
              << "): run " << (run_id.empty() ? std::string("(not started)") : run_id)
              << " stopped, its tables dropped; no report written\n";
    return 128 + sig;
  }
  d.dimension = res.dimension;
  if (table)
    std::cerr << "memhealth check: " << res.jobs << " jobs, " << res.job_claims << " claims, by "
              << res.jobs_by_worker.size() << " worker(s)\n";
  report& r = res.findings;
  print_issues(res.load_issues);
  note_empty_store(r, store_label_with_table(o.store));
  if (o.format == "json")
    emit(check_report_json(r, store_label_with_table(o.store), d, res.load_issues).dump(2), o.out);
  else
    emit(report_text(r, o, d, res.load_issues.size(), o.format == "md"), o.out);
  // rows that could not be read at all count as findings of warning level for the exit code
  const bool skipped = std::any_of(res.load_issues.begin(), res.load_issues.end(),
                                   [](const load_issue& i) { return !i.record_kept; });
  return (r.has_at_least(severity::warning) || skipped) && !o.exit_zero ? exit_findings : exit_ok;
#else
  (void)settings;
  (void)d;
  no_pg_support();
#endif
}

struct worker_options {
  std::string store;
  std::string run;
  std::string name;
  detection_cli_options detect;
};

// memhealth worker URI --run ID: works on a run's jobs until all are done.
int run_worker(const worker_options& o) {
  if (!is_pg_store(o.store))
    throw error(error_code::invalid_argument, "worker: needs a postgresql:// store");
#if MEMHEALTH_CLI_HAVE_PG
  auto [settings, d] = detection_settings(o.detect);
  (void)d;
  pg_worker_options wo;
  wo.name = o.name;
  // SIGINT/SIGTERM: the job in hand is finished and its result written, then the worker ends
  const interrupt_guard signals(
      "memhealth worker: interrupted: stopping after the job in hand (interrupt again to stop "
      "at once)\n");
  wo.stop_requested = [] { return interrupt_guard::requested(); };
  const auto res = pg_run_worker(o.store, o.run, settings, wo);
  if (res.stopped) {
    const int sig = interrupt_guard::signal();
    std::cerr << "memhealth worker: run " << o.run << ": interrupted ("
              << (sig == SIGTERM ? "SIGTERM" : "SIGINT") << ") after " << res.jobs_done
              << " job(s); the run's other jobs are left to its other workers\n";
    return 128 + sig;
  }
  std::cerr << "memhealth worker: run " << o.run << ": " << res.jobs_done << " job(s) done"
            << (res.results_refused
                    ? ", " + std::to_string(res.results_refused) + " result(s) refused (lease lost)"
                    : std::string())
            << (res.run_ended ? "; the run's tables are gone: the check ended (finished, or "
                                "stopped: its own exit code says which)"
                              : "")
            << "\n";
  return exit_ok;
#else
  no_pg_support();
#endif
}

int run_check(const check_options& o) {
  probe_output(o.out, "--out");  // before any work: writable, not a directory
  refuse_outputs_over_inputs({{"--out", o.out}, {"--model-cache", o.detect.model_cache}},
                             detection_inputs(o.store, o.detect));
#if MEMHEALTH_CLI_HAVE_SQLITE
  if (!o.since.empty() && o.since != "last") (void)since_time(o.since);  // before the state opens
#endif
  if (!o.since.empty() && is_pg_store(o.store) && o.state.empty())
    throw error(error_code::invalid_argument,
                "--since: a postgresql:// store keeps the incremental check's cursor and the "
                "records' fingerprints in a state database file; name it with --state FILE");
  auto [settings, d] = detection_settings(o.detect);
  settings.migration_to = declared_migration_to(o.store, o.state);  // mixed versions: progress
#if MEMHEALTH_CLI_HAVE_SQLITE
  // An SQLite store is checked in place (read-only, embeddings read block by block), unless
  // missing embeddings are to be filled first (that needs the records in memory).
  if (is_sqlite_store(o.store) && o.embed != "lexical" && o.detect.embedder.empty()) {
    auto store = open_sqlite_store(o.store, true);
    if (o.detect.dim)
      d.dimension = o.detect.dim;
    else
      d.dimension = store.dimension();
    std::optional<incremental_check> ic;
    if (!o.since.empty()) ic = start_incremental(o, store, d);
    report r = run_incremental(make_default_pipeline(settings), store, d);
    note_empty_store(r, o.store);
    if (o.format == "json")
      emit(check_report_json(r, o.store, d, {}).dump(2), o.out);
    else
      emit(report_text(r, o, d, 0, o.format == "md"), o.out);
    if (ic) finish_incremental(*ic, d);
    return r.has_at_least(severity::warning) && !o.exit_zero ? exit_findings : exit_ok;
  }
#else
  if (!o.since.empty())
    throw error(error_code::invalid_argument,
                "--since needs the state database, and this build has no SQLite");
#endif
  if (o.workers >= 0) return run_parallel_check(o, settings, d);
#if MEMHEALTH_CLI_HAVE_PG
  // A full check of a PostgreSQL table whose mapping places the scope: scope by scope, the
  // vectors of one job's rows in memory at a time (detect/pg_workers.hpp, without a job table).
  if (is_pg_store(o.store) && o.since.empty() && o.embed != "lexical" &&
      o.detect.embedder.empty() &&
      pg_mapping_scope_selectable(load_pg_mapping(pg_mapping_option())))
    return run_parallel_check(o, settings, d, false);
#endif
  auto lr = load_store_file(o.store);
  fill_missing_embeddings(lr.records, o.detect, o.embed == "lexical", o.detect.dim);
  auto store = memory_store<>::from_records(std::move(lr.records), o.detect.dim);
  d.dimension = store.dimension();
#if MEMHEALTH_CLI_HAVE_SQLITE
  std::optional<incremental_check> ic;
  if (!o.since.empty()) ic = start_incremental(o, store, d);
#endif
  report r = run_incremental(make_default_pipeline(settings), store, d);
  print_issues(lr.issues);
  note_empty_store(r, store_label_with_table(o.store));
  if (o.format == "json")
    emit(check_report_json(r, store_label_with_table(o.store), d, lr.issues).dump(2), o.out);
  else
    emit(report_text(r, o, d, lr.issues.size(), o.format == "md"), o.out);
#if MEMHEALTH_CLI_HAVE_SQLITE
  if (ic) finish_incremental(*ic, d);
#endif
  // lines that could not be parsed at all count as findings of warning level for the exit code
  const bool skipped = std::any_of(lr.issues.begin(), lr.issues.end(),
                                   [](const load_issue& i) { return !i.record_kept; });
  return (r.has_at_least(severity::warning) || skipped) && !o.exit_zero ? exit_findings : exit_ok;
}

struct claims_options {
  std::string store;
  std::string format = "text";
  std::string out;
  std::string lexicon;
  bool unread_only = false;
};

nlohmann::json claim_json(const text_claim& c) {
  nlohmann::json j = {{"holder", c.holder},
                      {"kind", std::string(to_string(c.kind))},
                      {"predicate", c.predicate},
                      {"polarity", c.polarity},
                      {"terms", c.terms}};
  if (!c.attribute.empty()) j["attribute"] = c.attribute, j["value"] = c.value;
  if (c.any_predicate) j["any_predicate"] = true, j["object"] = c.object;
  if (c.frequency >= 0) j["per_day"] = c.frequency;
  if (c.amount) j["amount"] = true;
  if (c.order != 0) j["order"] = c.order > 0 ? "preferred" : "rejected";
  if (!c.routine.empty()) j["routine"] = c.routine;
  if (!c.quantities.empty()) j["quantities"] = c.quantities;
  if (c.change) j["change"] = true;
  if (c.additive) j["additive"] = true;
  if (c.event) j["event"] = true;
  if (c.restrictive) j["restrictive"] = true;
  if (!c.scene.empty()) j["scene"] = c.scene;
  if (!c.time.empty()) j["time"] = c.time;
  return j;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

// A claim's value words in the order the statement has them (the claim keeps them sorted, for
// comparing), Chinese characters that stand together in it written together: 北京, not "京 北".
std::string value_as_written(const std::vector<std::string>& value, std::string_view content) {
  std::string lower(content);  // (English values are lowercase)
  for (auto& ch : lower)
    if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
  std::vector<std::pair<std::size_t, std::string>> at;
  for (const auto& v : value) at.emplace_back(lower.find(v), v);
  std::stable_sort(at.begin(), at.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string out;
  for (std::size_t k = 0; k < at.size(); ++k) {
    const bool joined_on = k > 0 && at[k - 1].first != std::string_view::npos &&
                           at[k - 1].first + at[k - 1].second.size() == at[k].first &&
                           static_cast<unsigned char>(at[k].second[0]) >= 0x80 &&
                           static_cast<unsigned char>(at[k - 1].second[0]) >= 0x80;
    out += (k == 0 || joined_on ? "" : " ") + at[k].second;
  }
  return out;
}

void claim_text(std::ostringstream& s, const text_claim& c, std::string_view content) {
  s << "    " << (c.polarity < 0 ? "NOT " : "") << (c.holder.empty() ? "?" : c.holder) << " "
    << to_string(c.kind);
  if (!c.attribute.empty())
    s << " " << c.attribute << " = " << value_as_written(c.value, content);
  else
    s << " "
      << (c.any_predicate       ? "(any verb)"
          : c.predicate.empty() ? "(is)"
                                : c.predicate)
      << ": " << joined(c.terms);
  if (c.frequency >= 0) s << " | " << (c.amount ? "amount per day " : "per day ") << c.frequency;
  if (c.order != 0) s << (c.order > 0 ? " | preferred option" : " | rejected option");
  if (!c.quantities.empty()) {
    s << " | quantities";
    for (double q : c.quantities) s << " " << q;
  }
  if (c.change) s << " | change";
  if (c.additive) s << " | additive";
  if (c.event) s << " | event";
  if (!c.scene.empty()) s << " | scene " << joined(c.scene);
  if (!c.time.empty()) s << " | time " << joined(c.time);
  s << "\n";
}

int run_claims(const claims_options& o) {
  probe_output(o.out, "--out");
  refuse_outputs_over_inputs(
      {{"--out", o.out}},
      {{"store", o.store},
       {"--lexicon", o.lexicon},
       {"--mapping", is_pg_store(o.store) ? pg_mapping_option() : std::string()}});
  const auto lexicon = load_claim_lexicon(o.lexicon);
  const default_claim_extractor read{lexicon.get()};
  const auto lr = load_store_file(o.store);
  print_issues(lr.issues);
  // (as check: lines that could not be read, or an empty store, are something to act on)
  const bool empty = warn_if_empty("claims", o.store, lr.records.size());
  std::size_t unread = 0;
  std::ostringstream text;
  std::string lines;
  for (const auto& r : lr.records) {
    // a record holding a secret is read from its masked text: the claims print their values
    const std::string masked = mask_secrets(r.content);
    const auto a = read(masked);
    const bool parsed = a.parsed();
    unread += parsed ? 0 : 1;
    if (o.unread_only && parsed) continue;
    if (o.format == "jsonl") {
      nlohmann::json j = {{"id", r.id}, {"lang", a.lang}, {"parsed", parsed}};
      j["claims"] = nlohmann::json::array();
      for (const auto& c : a.claims) j["claims"].push_back(claim_json(c));
      lines += j.dump() + "\n";
    } else {
      text << r.id << " [" << (a.lang.empty() ? "-" : a.lang) << "] " << masked << "\n";
      if (!parsed) text << "    (not read: the cue judge decides this record's pairs)\n";
      for (const auto& c : a.claims) claim_text(text, c, masked);
    }
  }
  const std::string summary = "claims: " + std::to_string(lr.records.size()) + " records, " +
                              std::to_string(lr.records.size() - unread) + " read, " +
                              std::to_string(unread) + " not read\n";
  if (o.format == "jsonl") {
    emit(lines, o.out);
    std::cerr << summary;
  } else {
    emit(text.str() + summary, o.out);
  }
  return empty || !lr.issues.empty() ? exit_findings : exit_ok;
}

}  // namespace

void add_claims(CLI::App& app, int& rc) {
  auto o = std::make_shared<claims_options>();
  auto* cmd = app.add_subcommand(
      "claims", "Show the claims the conflict judge reads from each record (changes nothing)");
  cmd->add_option("store", o->store,
                  "Store (JSONL, sqlite:PATH or postgresql://URI with --mapping)")
      ->required();
  cmd->add_option("--format", o->format, "Output format: text, or jsonl (one record per line)")
      ->check(CLI::IsMember({"text", "jsonl"}));
  cmd->add_option("--out", o->out, "Write to this file instead of stdout");
  cmd->add_option("--lexicon", o->lexicon,
                  "Claim lexicon additions (TSV: cue/synonym/antonym/is_a lines, see README)");
  cmd->add_flag("--unread", o->unread_only,
                "Only the records the extractor cannot read (their pairs go to the cue judge)");
  cmd->callback([o, &rc] { rc = run_claims(*o); });
}

void add_check(CLI::App& app, int& rc) {
  auto o = std::make_shared<check_options>();
  auto* cmd =
      app.add_subcommand("check", "Run the detection pipeline over a store (never changes it)");
  cmd->add_option("store", o->store,
                  "Store (JSONL, sqlite:PATH or postgresql://URI with --mapping)")
      ->required();
  cmd->add_option("--format", o->format, "Output format")->check(CLI::IsMember(text_json_md));
  cmd->add_option("--out", o->out, "Write the report to this file instead of stdout");
  add_detection_options(cmd, o->detect);
  cmd->add_option("--embed", o->embed, "Embed records without embeddings first: lexical or none")
      ->check(CLI::IsMember({"lexical", "none"}));
  add_embedder_options(cmd, o->detect, false);
  cmd->add_flag("--exit-zero", o->exit_zero,
                "Exit 0 even when findings of warning or above are found");
  auto* since =
      cmd->add_option(
             "--since", o->since,
             "Incremental: check only records changed since 'last' (the state's cursor) or "
             "since an RFC 3339 time, or whose content changed since the last run; then "
             "advance the cursor")
          ->check(CLI::Validator(
              [](std::string& v) {
                return v.empty() ? std::string("--since needs 'last' or a time") : std::string();
              },
              "last|TIME"));
  cmd->add_option("--state", o->state,
                  "State database for --since (default: STORE.memhealth-state.db beside the "
                  "store; a postgresql:// store needs it)")
      ->needs(since);
  cmd->add_option("--workers", o->workers,
                  "postgresql:// stores: check with N worker threads through a job table in the "
                  "database (0 = only `memhealth worker` processes); the report is the same")
      ->transform(whole_number(0, 256));
  add_worker_job_options(cmd, o->job_records, o->lease);
  cmd->callback([o, &rc] { rc = run_check(*o); });
}

void add_worker(CLI::App& app, int& rc) {
  auto o = std::make_shared<worker_options>();
  auto* cmd = app.add_subcommand(
      "worker",
      "Work on the jobs of a check started with --workers (any machine; same detection options)");
  cmd->add_option("store", o->store, "The postgresql://URI the check was given")->required();
  cmd->add_option("--run", o->run, "The run id the check printed")->required();
  cmd->add_option("--name", o->name, "This worker's name in the job table (default host:pid)");
  add_detection_options(cmd, o->detect);
  cmd->callback([o, &rc] { rc = run_worker(*o); });
}

}  // namespace memhealth::cli
