#pragma once
/// @file pg_workers.hpp
/// One check of a PostgreSQL store (store/pg_store.hpp) spread across worker threads, processes
/// and machines, with the report of the single-process check. Link libpq (`memhealth::pg`).
///
/// **Coordinator** (`pg_parallel_check`):
/// 1. opens a REPEATABLE READ READ ONLY transaction and exports its snapshot
///    (`pg_export_snapshot()`, PostgreSQL docs 9.27.5 "Snapshot Synchronization Functions"); the
///    transaction stays open until every job is done, so every reader can import it;
/// 2. reads the whole table in that snapshot (`pg_store_options::snapshot`); the mapping is
///    checked against the catalog first, so a missing column, a vector of the wrong type or a
///    missing privilege fails here, before any table is created or any job runs;
/// 3. creates the run's three tables (below) in the first schema of the connection's
///    search_path and fills the job table: scopes in byte order, batched into jobs of at most
///    `pg_run_options::job_records` records; a scope larger than that is one job of its own (its
///    k-means blocks are not spread across workers);
/// 4. starts `pg_run_options::workers` worker threads (`pg_run_worker`) and, meanwhile, runs the
///    store-wide detectors itself (below); then waits until every job is done;
/// 5. merges the results in a fixed order (below), drops the run's tables and ends the snapshot.
///
/// **Workers** (`pg_run_worker`, a thread of the coordinator or `memhealth worker URI --run ID` on
/// any machine): claim a job with `UPDATE ... WHERE job = (SELECT job ... FOR UPDATE SKIP LOCKED
/// LIMIT 1)` (docs: SELECT, "The Locking Clause") and a lease (`expires_at`); a job whose lease
/// expired is claimable again. A claimed job is read in the exported snapshot (`SET TRANSACTION
/// SNAPSHOT`, docs "SET TRANSACTION"; `pg_store_options::scopes`: only the job's scopes), checked
/// to hold exactly the job's record count, and checked by the scope-local detectors of the same
/// pipeline (`make_default_pipeline(settings)`; `scope_local_detector`, incremental.hpp) with the
/// run's clock and store-wide embedding dimension. The findings go to the result table in the
/// same transaction that marks the job done, and only while the worker's lease (its claim token)
/// still holds: a worker whose lease expired and whose job another worker claimed gets its
/// result refused (`pg_finish_job` returns false); the result table's primary key accepts one
/// result per job. While a worker checks, a second connection renews its lease every third of
/// the lease time; a killed worker stops renewing and loses the job.
///
/// **Store-wide and scope-local detectors.** Of the default pipeline, duplicates (exact and near
/// clusters, within a scope), conflicts (pairs and claim groups within a scope), hygiene,
/// secrets, mojibake, content_size and content_time are scope-local: their findings about a
/// scope depend on that scope's records only (and the clock and dimension, which the run fixes).
/// They run in the workers. structural (duplicate ids across the store, dangling links, cycles,
/// the store-wide majority embedding version, the store-wide dimension), staleness and scope
/// (cross-scope links) are store-wide and run in the coordinator on the whole snapshot, as does
/// the one store-wide part of duplicates, cross_scope_duplicate: the workers run duplicates
/// without it, and the coordinator runs duplicates on the records whose normalised text appears
/// in two or more scopes (all of them, in store order) and keeps only its cross_scope_duplicate
/// findings (a cluster found there is also found by a worker).
///
/// **Merge order** (the single-process order, in pipeline order, detector by detector): a
/// store-wide detector's findings as the coordinator found them; a scope-local detector's
/// findings other than check_skipped sorted by the store indices of their records (sorted
/// ascending, compared lexicographically; ties in job order, then as the worker emitted them:
/// the order every detector emits in: record order, clusters by smallest member, pairs by
/// (i, j)), then its info check_skipped findings (duplicates' "no usable embedding") merged into
/// one (ids in store order, `count` summed), then its other check_skipped findings (pair budgets)
/// in job order, then, for duplicates, the coordinator's cross_scope_duplicate findings. The
/// report is byte for byte that of `make_default_pipeline(settings).run(store, d)` on the same
/// rows for any number of workers, with two known exceptions: records that share an id within
/// one scope (structural reports them as duplicate_id, critical) may have their per-record
/// findings ordered by the first of them, and pair-budget findings of several scopes (more than
/// `max_pairs_per_scope` similar pairs) come in job order, which may differ from the detector's.
///
/// **Tables**, claims, leases and the result format: detect/pg_jobs.hpp.
///
/// **Errors.** As pg_store for the connection and the mapping; error(precondition) for a worker
/// whose detection settings differ from the run's, a run id that is malformed or names no run,
/// a mapping without a place for the scope (then the whole table is one job instead: not an
/// error for the coordinator), or an incremental run (`detect_options::since`/`changed`);
/// error(io) when a job failed in a worker (its message), no worker is left, or
/// `pg_run_options::wait_limit` passed.

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/detect/default_pipeline.hpp"
#include "memhealth/detect/finding.hpp"
#include "memhealth/detect/incremental.hpp"
#include "memhealth/detect/pg_jobs.hpp"
#include "memhealth/detect/pipeline.hpp"
#include "memhealth/store/pg_conn.hpp"
#include "memhealth/store/pg_mapping.hpp"
#include "memhealth/store/pg_store.hpp"
#include "memhealth/store/subset_store.hpp"

#include <libpq-fe.h>
#include <unistd.h>

namespace memhealth {

/// Knobs of `pg_parallel_check`.
struct pg_run_options {
  unsigned workers = 1;  ///< worker threads in this process (0 = none: only external workers)
  std::size_t job_records = 20'000;  ///< most records per job (a larger scope is one job)
  std::chrono::milliseconds lease{std::chrono::minutes{2}};  ///< a claim's lease (renewed)
  std::chrono::milliseconds poll{100};      ///< how often the coordinator and idle workers look
  std::chrono::milliseconds wait_limit{0};  ///< give up waiting after this (0 = never)
  std::string run_id;                       ///< "" = 16 random hex digits; else 1-32 of [a-z0-9]
  bool keep_tables = false;  ///< keep the run's tables (for inspection) instead of dropping them
  std::size_t fetch_rows = 1000;  ///< rows per FETCH (pg_store_options::fetch_rows)
  /// Called with the run id once the job table is filled, before the coordinator waits (e.g. to
  /// print it for `memhealth worker --run ID`).
  std::function<void(const std::string&)> on_ready;
};

/// Knobs of `pg_run_worker`.
struct pg_worker_options {
  std::string name;                     ///< shown in the job table; "" = host:pid
  std::chrono::milliseconds poll{100};  ///< how often an idle worker looks for a job
  std::size_t fetch_rows = 1000;        ///< rows per FETCH
  /// Test hook: called after a job is claimed, before it is read; an exception thrown here
  /// ends the worker as a kill would (the job stays claimed until its lease expires).
  std::function<void(int job)> after_claim;
};

/// What one worker did.
struct pg_worker_result {
  std::size_t jobs_done = 0;        ///< results accepted
  std::size_t results_refused = 0;  ///< results refused (the lease was lost)
};

/// What `pg_parallel_check` gives back.
struct pg_run_result {
  report findings;             ///< the merged report (see the file comment, "Merge order")
  std::size_t dimension = 0;   ///< the store-wide embedding dimension the run used
  std::string run_id;          ///< the run's id
  std::size_t jobs = 0;        ///< jobs in the run
  std::size_t job_claims = 0;  ///< claims made (> jobs when leases expired)
  std::map<std::string, std::size_t> jobs_by_worker;  ///< accepted results per worker name
};

/// Checks the records of one claimed job (see the file comment, "Workers") and gives the
/// findings as the result table holds them. `kv` is the run's table (`snapshot`, `now_ms`,
/// `dimension`, mapping). @throws as pg_store::open; error(io) when the rows read are not the
/// job's (another record count or scope: the snapshot or the scope expression disagrees).
inline std::string pg_check_job(const std::string& conninfo,
                                const std::map<std::string, std::string>& kv,
                                const pg_job_claim& cl, const default_check_settings& settings,
                                std::size_t fetch_rows = 1000) {
  pg_store_options so;
  so.read_only = true;
  so.snapshot = kv.at("snapshot");
  so.scopes = cl.scopes;
  so.fetch_rows = fetch_rows;
  auto store = pg_store<>::open(conninfo, detail::pgw::run_mapping(kv), so);
  if (store.size() != cl.records)
    throw error(error_code::io, store.description() + ": job " + std::to_string(cl.job) + " read " +
                                    std::to_string(store.size()) +
                                    " rows, the coordinator counted " + std::to_string(cl.records));
  if (cl.scopes) {
    const std::unordered_set<std::string> want(cl.scopes->begin(), cl.scopes->end());
    for (std::size_t i = 0; i < store.size(); ++i)
      if (!want.count(store.record(i).scope))
        throw error(error_code::io, store.description() + ": job " + std::to_string(cl.job) +
                                        " read a row of scope '" + store.record(i).scope +
                                        "', not one of the job's");
  }
  detect_options d;
  d.now = utc_time(std::chrono::milliseconds(std::stoll(kv.at("now_ms"))));
  d.dimension = std::stoul(kv.at("dimension"));
  const auto p = make_default_pipeline(settings);
  detection_context<pg_store<>> ctx(store, d);
  nlohmann::json out = nlohmann::json::array();
  std::size_t position = 0;
  std::vector<finding> found;
  auto one = [&](const auto& det) {
    using D = std::remove_cvref_t<decltype(det)>;
    if constexpr (scope_local_detector<D>::value) {
      found.clear();
      if constexpr (requires { det.cross_scope_check; }) {
        D local = det;
        local.cross_scope_check = false;  // store-wide: the coordinator's
        local.run(ctx, found);
      } else {
        det.run(ctx, found);
      }
      for (const auto& f : found) {
        std::vector<std::string> rows;
        for (const auto& id : f.record_ids)
          if (auto i = store.find(id)) rows.push_back(store.store_key(*i));
        out.push_back(detail::pgw::encode_finding(f, position, rows));
      }
    }
    ++position;
  };
  std::apply([&](const auto&... det) { (one(det), ...); }, p.detectors());
  return out.dump();
}

/// Runs a worker of run `run` until every job of the run is done or failed: claims jobs, checks
/// them (`pg_check_job`), hands in results (`pg_finish_job`), renewing each lease meanwhile;
/// while other workers hold the remaining jobs it waits, and takes a job whose lease expired.
/// A job whose check throws is marked failed (its error text in the job table) and the
/// exception propagates. @throws error(precondition) when `settings` differ from the run's
/// (`pg_settings_fingerprint`) or there is no such run; as pg_check_job.
inline pg_worker_result pg_run_worker(const std::string& conninfo, const std::string& run,
                                      const default_check_settings& settings,
                                      const pg_worker_options& opt = {}) {
  detail::pgw::check_run_id(run);
  const std::string where = describe_conninfo(conninfo) + " run " + run;
  auto conn = detail::pg::connect(conninfo);
  PGconn* c = conn.get();
  const auto kv = detail::pgw::read_run(c, run, where);
  if (kv.count("settings") == 0 || kv.at("settings") != pg_settings_fingerprint(settings))
    throw error(error_code::precondition,
                where +
                    ": this worker's detection settings differ from the run's (give the "
                    "worker the options the check was given); run: " +
                    (kv.count("settings") ? kv.at("settings") : std::string("none")) +
                    ", worker: " + pg_settings_fingerprint(settings));
  const std::chrono::milliseconds lease(std::stoll(kv.at("lease_ms")));
  const std::string name = opt.name.empty() ? detail::pgw::host_pid() : opt.name;
  const std::string jobs = detail::pg::ident(c, detail::pgw::jobs_table(run));
  pg_worker_result res;
  while (true) {
    auto cl = pg_claim_job(c, run, name, lease, where);
    if (!cl) {
      auto st = detail::pg::exec(c,
                                 "SELECT count(*) FILTER (WHERE state NOT IN ('done', 'failed')) "
                                 "FROM " +
                                     jobs,
                                 {}, where, "cannot read the job table");
      if (detail::pg::cell(st.get(), 0, 0) == "0") return res;
      std::this_thread::sleep_for(opt.poll);
      continue;
    }
    if (opt.after_claim) opt.after_claim(cl->job);
    std::string findings;
    try {
      detail::pgw::lease_keeper keep(
          conninfo,
          "UPDATE " + jobs +
              " SET expires_at = clock_timestamp() + $3::bigint * interval '1 millisecond' "
              "WHERE job = $1 AND token = $2 AND state = 'claimed' AND expires_at >= "
              "clock_timestamp()",
          {std::to_string(cl->job), cl->token, std::to_string(lease.count())}, lease);
      findings = pg_check_job(conninfo, kv, *cl, settings, opt.fetch_rows);
    } catch (const std::exception& ex) {
      try {
        detail::pg::exec(
            c, "UPDATE " + jobs + " SET state = 'failed', error = $3 WHERE job = $1 AND token = $2",
            {std::to_string(cl->job), cl->token, name + ": " + ex.what()}, where,
            "cannot mark a job failed");
      } catch (...) {
      }
      throw;
    }
    if (pg_finish_job(c, run, *cl, name, findings, where))
      ++res.jobs_done;
    else
      ++res.results_refused;
  }
}

namespace detail::pgw {

// One worker result decoded: (position, finding, store indices sorted) in emission order.
struct decoded {
  std::size_t position;
  finding f;
  std::vector<std::size_t> at;  // store indices of the rows it names, ascending
};

// The findings of the scope-local detector at `position`, merged (see "Merge order").
inline void merge_local(std::vector<std::vector<decoded>>& by_job, std::size_t position,
                        std::vector<finding>& out) {
  std::vector<decoded*> main, info, other;
  for (auto& job : by_job)
    for (auto& x : job) {
      if (x.position != position) continue;
      if (x.f.kind != finding_kinds::check_skipped)
        main.push_back(&x);
      else if (x.f.severity == severity::info)
        info.push_back(&x);
      else
        other.push_back(&x);
    }
  std::stable_sort(main.begin(), main.end(),
                   [](const decoded* a, const decoded* b) { return a->at < b->at; });
  for (auto* x : main) out.push_back(std::move(x->f));
  // info check_skipped: one per (detector, check), ids in store order, counts summed
  std::vector<std::string> done;
  for (std::size_t k = 0; k < info.size(); ++k) {
    const auto* check = info[k]->f.evidence_of("check");
    const std::string key =
        check && std::holds_alternative<std::string>(*check) ? std::get<std::string>(*check) : "";
    if (std::find(done.begin(), done.end(), key) != done.end()) continue;
    done.push_back(key);
    std::vector<std::pair<std::size_t, std::string>> ids;
    std::int64_t count = 0;
    finding merged = info[k]->f;
    for (std::size_t m = k; m < info.size(); ++m) {
      const auto* c2 = info[m]->f.evidence_of("check");
      const std::string k2 =
          c2 && std::holds_alternative<std::string>(*c2) ? std::get<std::string>(*c2) : "";
      if (k2 != key) continue;
      for (std::size_t r = 0; r < info[m]->f.record_ids.size(); ++r)
        ids.emplace_back(r < info[m]->at.size() ? info[m]->at[r] : 0, info[m]->f.record_ids[r]);
      if (const auto* n = info[m]->f.evidence_of("count"))
        if (const auto* v = std::get_if<std::int64_t>(n)) count += *v;
    }
    std::stable_sort(ids.begin(), ids.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    merged.record_ids.clear();
    for (auto& [i, id] : ids) merged.record_ids.push_back(std::move(id));
    for (auto& [ek, ev] : merged.evidence)
      if (ek == "count") ev = count;
    out.push_back(std::move(merged));
  }
  for (auto* x : other) out.push_back(std::move(x->f));
}

}  // namespace detail::pgw

/// Checks the table `mapping` describes with the default pipeline spread across workers (see
/// the file comment) and gives the report `make_default_pipeline(settings).run(store, d)` gives
/// for the same rows. `d.now` is the run's clock; `d.dimension` 0 = the store's most common.
/// @throws see the file comment ("Errors"); the run's tables are dropped unless
///         `opt.keep_tables`, failure or not.
inline pg_run_result pg_parallel_check(const std::string& conninfo, const pg_mapping& mapping,
                                       const default_check_settings& settings, detect_options d,
                                       const pg_run_options& opt = {}) {
  if (d.since || d.changed)
    throw error(error_code::precondition,
                "a check spread across workers is a full check: incremental runs (since, "
                "changed) are not supported");
  pg_run_result res;
  res.run_id = opt.run_id.empty() ? detail::pgw::random_hex(16) : opt.run_id;
  detail::pgw::check_run_id(res.run_id);
  const std::string where = describe_conninfo(conninfo) + " run " + res.run_id;
  using detail::pg::cell;
  using detail::pg::exec;
  // 1. the snapshot, held until the end
  auto snap_conn = detail::pg::connect(conninfo);
  exec(snap_conn.get(), "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", {}, where,
       "cannot begin");
  auto sr =
      exec(snap_conn.get(), "SELECT pg_export_snapshot()", {}, where, "cannot export a snapshot");
  const std::string snapshot = cell(sr.get(), 0, 0);
  // 2. the whole table in it (the mapping checked first)
  pg_store_options so;
  so.read_only = true;
  so.snapshot = snapshot;
  so.fetch_rows = opt.fetch_rows;
  auto store = pg_store<>::open(conninfo, mapping, so);
  if (d.dimension == 0) d.dimension = store.dimension();
  res.dimension = d.dimension;
  // 3. jobs: scopes in byte order, batched
  std::vector<std::pair<std::optional<std::vector<std::string>>, std::size_t>> jobs;
  if (store.scope_selectable()) {
    std::map<std::string, std::size_t> count;
    for (std::size_t i = 0; i < store.size(); ++i) ++count[store.record(i).scope];
    std::vector<std::string> batch;
    std::size_t n = 0;
    for (const auto& [scope, k] : count) {
      if (!batch.empty() && n + k > std::max<std::size_t>(opt.job_records, 1)) {
        jobs.emplace_back(std::move(batch), n);
        batch.clear();
        n = 0;
      }
      batch.push_back(scope);
      n += k;
    }
    if (!batch.empty()) jobs.emplace_back(std::move(batch), n);
  } else {
    jobs.emplace_back(std::nullopt, store.size());
  }
  res.jobs = jobs.size();
  auto conn = detail::pg::connect(conninfo);
  PGconn* c = conn.get();
  const std::string run_t = detail::pg::ident(c, detail::pgw::run_table(res.run_id));
  const std::string jobs_t = detail::pg::ident(c, detail::pgw::jobs_table(res.run_id));
  const std::string results_t = detail::pg::ident(c, detail::pgw::results_table(res.run_id));
  std::vector<std::thread> threads;
  std::mutex err_m;
  std::exception_ptr worker_error;
  std::atomic<unsigned> running{0};
  auto drop = [&] {
    if (opt.keep_tables) return;
    PQclear(
        PQexec(c, ("DROP TABLE IF EXISTS " + results_t + ", " + jobs_t + ", " + run_t).c_str()));
  };
  auto join_all = [&] {
    for (auto& t : threads)
      if (t.joinable()) t.join();
  };
  try {
    exec(c, "BEGIN", {}, where, "cannot begin");
    exec(c,
         "CREATE TABLE " + run_t + " (key text PRIMARY KEY, value text NOT NULL); CREATE TABLE " +
             jobs_t +
             " (job int PRIMARY KEY, scopes jsonb, records int NOT NULL, state text NOT NULL "
             "DEFAULT 'pending', worker text, token text, attempts int NOT NULL DEFAULT 0, "
             "claimed_at timestamptz, expires_at timestamptz, finished_at timestamptz, error "
             "text); CREATE TABLE " +
             results_t + " (job int PRIMARY KEY REFERENCES " + jobs_t +
             ", worker text NOT NULL, token text NOT NULL, records int NOT NULL, findings text "
             "NOT NULL, accepted_at timestamptz NOT NULL)",
         {}, where, "cannot create the run's tables");
    const bool own = !mapping.record_column.empty();
    const std::vector<std::pair<std::string, std::string>> kv = {
        {"snapshot", snapshot},
        {"now_ms", std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                      d.now.time_since_epoch())
                                      .count())},
        {"dimension", std::to_string(d.dimension)},
        {"settings", pg_settings_fingerprint(settings)},
        {"mapping_kind", own ? "memhealth" : "json"},
        {"mapping", own ? mapping.table : pg_mapping_json(mapping).dump()},
        {"mapping_name", mapping.name},
        {"lease_ms", std::to_string(opt.lease.count())},
        {"jobs", std::to_string(jobs.size())}};
    for (const auto& [k, v] : kv)
      exec(c, "INSERT INTO " + run_t + " VALUES ($1, $2)", {k, v}, where, "cannot write the run");
    for (std::size_t j = 0; j < jobs.size(); ++j) {
      std::optional<std::string> scopes;
      if (jobs[j].first) scopes = nlohmann::json(*jobs[j].first).dump();
      exec(c, "INSERT INTO " + jobs_t + " (job, scopes, records) VALUES ($1, $2::jsonb, $3)",
           {std::to_string(j), scopes, std::to_string(jobs[j].second)}, where,
           "cannot write a job");
    }
    exec(c, "COMMIT", {}, where, "cannot commit the job table");
    if (opt.on_ready) opt.on_ready(res.run_id);
    // 4. workers, and the store-wide detectors meanwhile
    for (unsigned w = 0; w < opt.workers; ++w) {
      ++running;
      threads.emplace_back([&, w] {
        try {
          pg_worker_options wo;
          wo.name = detail::pgw::host_pid() + ":" + std::to_string(w);
          wo.poll = opt.poll;
          wo.fetch_rows = opt.fetch_rows;
          (void)pg_run_worker(conninfo, res.run_id, settings, wo);
        } catch (...) {
          std::lock_guard lock(err_m);
          if (!worker_error) worker_error = std::current_exception();
        }
        --running;
      });
    }
    const auto p = make_default_pipeline(settings);
    detection_context<pg_store<>> whole(store, d);
    std::vector<std::vector<finding>> wide(
        std::tuple_size_v<std::remove_cvref_t<decltype(p.detectors())>>);
    std::vector<finding> cross;
    {
      std::size_t position = 0;
      auto one = [&](const auto& det) {
        using D = std::remove_cvref_t<decltype(det)>;
        if constexpr (!scope_local_detector<D>::value) {
          det.run(whole, wide[position]);
        } else if constexpr (requires { det.cross_scope_check; }) {
          if (det.cross_scope_check) {
            // the records whose normalised text is in two or more scopes
            const auto& texts = whole.normalized_texts();
            std::unordered_map<std::string_view, std::pair<std::string_view, bool>> seen;
            for (std::size_t i = 0; i < store.size(); ++i) {
              if (texts[i].empty()) continue;
              auto [it, fresh] = seen.try_emplace(texts[i], store.record(i).scope, false);
              if (!fresh && it->second.first != store.record(i).scope) it->second.second = true;
            }
            std::vector<std::size_t> idx;
            for (std::size_t i = 0; i < store.size(); ++i)
              if (!texts[i].empty() && seen.at(texts[i]).second) idx.push_back(i);
            if (!idx.empty()) {
              subset_store<pg_store<>> sub(store, std::move(idx));
              detection_context<subset_store<pg_store<>>> part(sub, whole.options());
              std::vector<finding> all;
              det.run(part, all);
              for (auto& f : all)
                if (f.kind == finding_kinds::cross_scope_duplicate) cross.push_back(std::move(f));
            }
          }
        }
        ++position;
      };
      std::apply([&](const auto&... det) { (one(det), ...); }, p.detectors());
    }
    // wait for every job
    const auto start = std::chrono::steady_clock::now();
    while (true) {
      auto st = exec(c,
                     "SELECT count(*) FILTER (WHERE state = 'done'), count(*) FILTER (WHERE "
                     "state = 'failed'), (SELECT 'job ' || job || ': ' || coalesce(error, '') "
                     "FROM " +
                         jobs_t + " WHERE state = 'failed' ORDER BY job LIMIT 1) FROM " + jobs_t,
                     {}, where, "cannot read the job table");
      if (cell(st.get(), 0, 1) != "0")
        throw error(error_code::io, where + ": a job failed: " + cell(st.get(), 0, 2));
      if (cell(st.get(), 0, 0) == std::to_string(jobs.size())) break;
      if (opt.workers > 0 && running == 0) {
        std::lock_guard lock(err_m);
        if (worker_error) std::rethrow_exception(worker_error);
      }
      if (opt.wait_limit.count() > 0 && std::chrono::steady_clock::now() - start > opt.wait_limit)
        throw error(error_code::io, where + ": not every job was done within the wait limit (" +
                                        std::to_string(opt.wait_limit.count()) + " ms)");
      std::this_thread::sleep_for(opt.poll);
    }
    join_all();
    // 5. merge
    auto rr = exec(c,
                   "SELECT r.job, r.worker, r.findings, j.attempts FROM " + results_t + " r JOIN " +
                       jobs_t + " j USING (job) ORDER BY r.job",
                   {}, where, "cannot read the results");
    if (PQntuples(rr.get()) != static_cast<int>(jobs.size()))
      throw error(error_code::io, where + ": " + std::to_string(PQntuples(rr.get())) +
                                      " results for " + std::to_string(jobs.size()) + " jobs");
    std::unordered_map<std::string, std::size_t> at;
    at.reserve(store.size());
    for (std::size_t i = 0; i < store.size(); ++i) at.emplace(store.store_key(i), i);
    std::vector<std::vector<detail::pgw::decoded>> by_job(jobs.size());
    for (int k = 0; k < PQntuples(rr.get()); ++k) {
      ++res.jobs_by_worker[cell(rr.get(), k, 1)];
      res.job_claims += std::stoul(cell(rr.get(), k, 3));
      const auto arr = nlohmann::json::parse(cell(rr.get(), k, 2), nullptr, false);
      if (!arr.is_array())
        throw error(error_code::parse,
                    where + ": the result of job " + cell(rr.get(), k, 0) + " is not a JSON array");
      auto& dst = by_job[static_cast<std::size_t>(k)];
      for (const auto& e : arr) {
        detail::pgw::decoded x;
        std::vector<std::string> rows;
        x.f = detail::pgw::decode_finding(e, x.position, rows);
        for (const auto& key : rows) {
          auto it = at.find(key);
          if (it == at.end())
            throw error(error_code::parse,
                        where + ": a result names row " + key + ", which is not in the snapshot");
          x.at.push_back(it->second);
        }
        dst.push_back(std::move(x));
      }
    }
    for (auto& job : by_job)
      for (auto& x : job) std::sort(x.at.begin(), x.at.end());
    // (info check_skipped keeps its ids' order for the merge: re-derive it per id)
    for (auto& job : by_job)
      for (auto& x : job)
        if (x.f.kind == finding_kinds::check_skipped && x.f.severity == severity::info) {
          x.at.clear();
          for (const auto& id : x.f.record_ids) {
            auto i = store.find(id);
            x.at.push_back(i ? *i : 0);
          }
        }
    report& r = res.findings;
    r.records_total = store.size();
    r.records_checked = store.size();
    std::size_t position = 0;
    auto put = [&](const auto& det) {
      using D = std::remove_cvref_t<decltype(det)>;
      if constexpr (scope_local_detector<D>::value) {
        detail::pgw::merge_local(by_job, position, r.findings);
        if constexpr (requires { det.cross_scope_check; })
          for (auto& f : cross) r.findings.push_back(std::move(f));
      } else {
        for (auto& f : wide[position]) r.findings.push_back(std::move(f));
      }
      ++position;
    };
    std::apply([&](const auto&... det) { (put(det), ...); }, p.detectors());
  } catch (...) {
    // stop the workers: without the run's tables they end with an error
    drop();
    join_all();
    throw;
  }
  drop();
  PQclear(PQexec(snap_conn.get(), "COMMIT"));
  return res;
}

}  // namespace memhealth
