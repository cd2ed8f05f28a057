// memhealth: the command-line tool. Subcommands: import, stats, check, worker, claims, plan, apply,
// rollback, recover, diff, wal, index, monitor, drift, gate, drill, tune, watch, review, history,
// migrate. Exit codes (cli.hpp): 0 success; 1 done with something to act on (check: findings of
// warning or above, an empty store; diff: unexplained changes; import: records with an empty id or
// content); 2 usage, unusable input or output; 3 incomplete (rollback/recover left work undone,
// apply with failed actions); 4 apply ran nothing (suspended plan, approval needed); 5 the log or
// store is locked by another memhealth process.
#include <exception>
#include <iostream>

#include "cli.hpp"
#include "cmd_audit.hpp"
#include "cmd_monitor.hpp"

int main(int argc, char** argv) {
  // an interrupted run removes its temporary files (outputs appear complete or not at all)
  memhealth::cli::install_temp_cleanup_handlers();
  CLI::App app{"memhealth " + std::string(memhealth::version_string) +
               ": check-ups, repairs and audits for an AI agent's long-term memory store"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(memhealth::version_string));
  int rc = memhealth::cli::exit_ok;
  memhealth::cli::add_import(app, rc);
  memhealth::cli::add_stats(app, rc);
  memhealth::cli::add_check(app, rc);
  memhealth::cli::add_worker(app, rc);
  memhealth::cli::add_claims(app, rc);
  memhealth::cli::add_plan(app, rc);
  memhealth::cli::add_apply(app, rc);
  memhealth::cli::add_rollback(app, rc);
  memhealth::cli::add_recover(app, rc);
  memhealth::cli::add_diff(app, rc);
  memhealth::cli::add_wal(app, rc);
  memhealth::cli::add_index(app, rc);
  memhealth::cli::add_monitor(app, rc);
  memhealth::cli::add_drift(app, rc);
  memhealth::cli::add_gate(app, rc);
  memhealth::cli::add_drill(app, rc);
  memhealth::cli::add_tune(app, rc);
#if MEMHEALTH_CLI_HAVE_WATCH
  memhealth::cli::add_watch(app, rc);
#endif
#if MEMHEALTH_CLI_HAVE_SQLITE
  memhealth::cli::add_review(app, rc);
  memhealth::cli::add_history(app, rc);
  memhealth::cli::add_migrate(app, rc);
#endif
  // postgresql:// stores: which table and columns (memhealth's own schema unless given)
  for (const char* name : {"check", "claims", "plan", "apply", "rollback", "recover", "diff"})
    app.get_subcommand(name)->add_option(
        "--mapping", memhealth::cli::pg_mapping_option(),
        "postgresql:// stores: the column mapping, a JSON file or a built-in name "
        "(mem0, langgraph; default: memhealth's own schema)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return memhealth::cli::exit_usage;
  } catch (const memhealth::error& e) {
    std::cerr << "memhealth: " << e.what() << "\n";
    return e.code() == memhealth::error_code::busy ? memhealth::cli::exit_busy
                                                   : memhealth::cli::exit_usage;
  } catch (const std::exception& e) {
    std::cerr << "memhealth: unexpected error: " << e.what() << "\n";
    return memhealth::cli::exit_usage;
  }
  return rc;
}
