// What `check` and `plan` of a postgresql:// store share when they run the check job by job
// (detect/pg_workers.hpp): the run's options from the command line, the note on a missing
// index on the scope's place, and the check itself (apply's checks before and after use it too).
#pragma once

#if MEMHEALTH_CLI_HAVE_PG
#include <chrono>
#include <cstdint>
#include <iostream>
#include <optional>
#include <string>

#include "memhealth/detect/pg_workers.hpp"

#include "cli.hpp"
#include "interrupt.hpp"

namespace memhealth::cli {

/// The run options of `COMMAND postgresql://... [--workers N]`: `workers` >= 0, N threads and a
/// job table that `memhealth worker` processes may join (0: only they check); < 0, one thread of
/// this process and no job table. `lease_s` in seconds; `on_ready` prints the run id for
/// `memhealth worker URI --run ID`. @throws error(invalid_argument) for a lease under 1 second.
inline pg_run_options cli_run_options(const char* command, int workers, std::size_t job_records,
                                      double lease_s) {
  if (!(lease_s >= 1)) throw error(error_code::invalid_argument, "--lease: at least 1 second");
  pg_run_options ro;
  ro.job_table = workers >= 0;
  ro.workers = ro.job_table ? static_cast<unsigned>(workers) : 1u;
  ro.job_records = job_records;
  ro.lease = std::chrono::milliseconds(static_cast<std::int64_t>(lease_s * 1000));
  ro.on_ready = [command](const std::string& id) {
    std::cerr << "memhealth " << command << ": run " << id
              << " (more workers: memhealth worker URI --run " << id
              << ", with the same detection options)\n";
  };
  return ro;
}

/// Every job reads its scopes by the scope's place: says on stderr, with the statement to run,
/// when the server has no index for it (each job would scan the whole table).
/// @throws what `pg_store::scope_index` throws (the server cannot be reached, a bad mapping).
inline void note_scope_index(const char* command, const std::string& store,
                             const pg_mapping& mapping) {
  std::string place;
  if (pg_store<>::scope_index(store, mapping, &place) == false)
    std::cerr << "memhealth " << command << ": note: no index on the scope's place " << place
              << ": each job scans the whole table; CREATE INDEX ON "
              << memhealth::detail::pg::display_table(mapping.table) << " (" << place
              << ") makes the " << command << " faster\n";
}

/// Checks the table `store` names job by job (detect/pg_workers.hpp; `ro` from
/// `cli_run_options`) and returns the merged report, the single-process report of the run's
/// snapshot. `rows` receives the coordinator's rows (without their vectors unless
/// `ro.rows_with_vectors`); load issues are printed. SIGINT/SIGTERM stop after the jobs in hand
/// (the run's tables dropped) and throw `interrupted` naming `command` and `left` (what the
/// interruption leaves: "no plan written"). `note_index` false: no note on a missing index on
/// the scope's place (a second check of the same run, which gave it already).
/// @throws error(io) when the run ends without its rows; what `pg_parallel_check` throws.
inline report check_by_jobs(const char* command, const std::string& store,
                            const pg_mapping& mapping, const default_check_settings& settings,
                            const detect_options& d, pg_run_options ro,
                            std::optional<pg_store<>>& rows, const std::string& left,
                            bool note_index = true) {
  const bool table = ro.job_table;
  ro.on_rows = [&rows](pg_store<>& s) { rows.emplace(std::move(s)); };
  if (note_index) note_scope_index(command, store, mapping);
  // SIGINT/SIGTERM: the jobs in hand end, the run's tables are dropped
  static std::string message;  // static storage: the handler writes it
  message = std::string("memhealth ") + command +
            ": interrupted: stopping after the jobs in hand; the run's tables are dropped "
            "(interrupt again to stop at once)\n";
  const interrupt_guard signals(message.c_str());
  ro.stop_requested = [] { return interrupt_guard::requested(); };
  pg_run_result res;
  try {
    res = pg_parallel_check(store, mapping, settings, d, ro);
  } catch (const error&) {
    if (!interrupt_guard::requested()) throw;
    const int sig = interrupt_guard::signal();
    throw interrupted(
        sig,
        std::string(command) + ": interrupted (" + (sig == SIGTERM ? "SIGTERM" : "SIGINT") +
            (table ? "): the workers' run stopped, its tables dropped" : "): the check stopped") +
            "; " + left);
  }
  if (table)
    std::cerr << "memhealth " << command << ": " << res.jobs << " jobs, " << res.job_claims
              << " claims, by " << res.jobs_by_worker.size() << " worker(s)\n";
  print_issues(res.load_issues);  // those records are taken as read, never written
  if (!rows)
    throw error(error_code::io, std::string(command) + ": the check of " + store_label(store) +
                                    " ended without its rows");
  return std::move(res.findings);
}

}  // namespace memhealth::cli
#endif
