// memhealth: the command-line tool. Subcommands: import, stats, check, worker, claims, plan, apply,
// rollback, recover, diff, wal, index, monitor, drift, gate, drill, tune, watch, review, history,
// migrate. Exit codes (cli.hpp): 0 success; 1 done with something to act on (check: findings of
// warning or above, an empty store; diff: unexplained changes; import: records with an empty id or
// content); 2 usage, unusable input or output; 3 incomplete (rollback/recover left work undone,
// apply with failed actions); 4 apply ran nothing (suspended plan, approval needed); 5 the log or
// store is locked by another memhealth process.
#include <exception>
#include <iostream>
#include <string>
#include <string_view>

#include "cli.hpp"
#include "cmd_audit.hpp"
#include "cmd_monitor.hpp"
#include "interrupt.hpp"

namespace {

// `memhealth index frob`: CLI11 answers "A subcommand is required" for a command whose
// subcommands are required and whose next word is none of them; this names the word and the
// subcommands there are. @return the message, or "" when there is nothing to say here.
std::string unknown_subcommand(const CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return {};
  const CLI::App* cmd = nullptr;
  try {
    cmd = app.get_subcommand(argv[1]);
  } catch (const CLI::OptionNotFound&) {
    return {};  // an unknown command: CLI11's own message names it
  }
  if (cmd->get_require_subcommand_min() == 0) return {};
  const auto subs = cmd->get_subcommands([](const CLI::App*) { return true; });
  std::string names;
  for (const CLI::App* sub : subs) names += (names.empty() ? "" : ", ") + sub->get_name();
  const std::string who = "memhealth " + cmd->get_name();
  if (argc < 3) return who + ": a subcommand is required: " + names;
  if (argv[2][0] == '-') return {};  // --help and the like
  for (const CLI::App* sub : subs)
    if (sub->check_name(argv[2])) return {};
  return who + ": unknown subcommand '" + argv[2] + "'; expected one of: " + names;
}

// `--mapping` names the table and columns of a postgresql:// store; given to a command without
// one (a JSONL or sqlite: store) it would be ignored. @return the message, or "".
std::string mapping_without_pg_store(int argc, char** argv) {
  bool mapping = false, pg = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "-h" || a == "--help") return {};
    if (a == "--mapping" || a.starts_with("--mapping=")) mapping = true;
    if (a.find("postgresql://") != std::string_view::npos ||
        a.find("postgres://") != std::string_view::npos)
      pg = true;
  }
  if (!mapping || pg) return {};
  return "memhealth: --mapping: names the table and columns of a postgresql:// store, and no "
         "store here is one (a JSONL or sqlite: store has no mapping); nothing was done";
}

}  // namespace

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
  for (const char* name :
       {"check", "claims", "plan", "apply", "rollback", "recover", "diff", "import", "stats"})
    app.get_subcommand(name)->add_option(
        "--mapping", memhealth::cli::pg_mapping_option(),
        "postgresql:// stores: the column mapping, a JSON file or a built-in name "
        "(mem0, langgraph; default: memhealth's own schema)");
  if (const std::string m = mapping_without_pg_store(argc, argv); !m.empty()) {
    std::cerr << m << "\n";
    return memhealth::cli::exit_usage;
  }
  if (const std::string m = unknown_subcommand(app, argc, argv); !m.empty()) {
    std::cerr << m << "\n";
    return memhealth::cli::exit_usage;
  }
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
  } catch (const memhealth::cli::interrupted& e) {
    std::cerr << "memhealth " << memhealth::printable(e.what(), true) << "\n";
    return 128 + e.signal;
  } catch (const memhealth::error& e) {
    std::cerr << "memhealth: " << memhealth::printable(e.what(), true) << "\n";
    return e.code() == memhealth::error_code::busy ? memhealth::cli::exit_busy
                                                   : memhealth::cli::exit_usage;
  } catch (const std::exception& e) {
    std::cerr << "memhealth: unexpected error: " << memhealth::printable(e.what(), true) << "\n";
    return memhealth::cli::exit_usage;
  }
  return rc;
}
