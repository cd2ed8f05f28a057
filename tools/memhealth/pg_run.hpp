// What `check` and `plan` of a postgresql:// store share when they run the check job by job
// (detect/pg_workers.hpp): the run's options from the command line, and the note on a missing
// index on the scope's place.
#pragma once

#if MEMHEALTH_CLI_HAVE_PG
#include <chrono>
#include <cstdint>
#include <iostream>
#include <string>

#include "memhealth/detect/pg_workers.hpp"

#include "cli.hpp"

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

}  // namespace memhealth::cli
#endif
