// memhealth import and memhealth stats.
#include <map>
#include <memory>
#include <sstream>

#include "cli.hpp"

namespace memhealth::cli {

namespace {

struct import_options {
  std::string format;
  std::vector<std::string> sources;
  std::string out;
  std::string embed = "none";
  std::size_t dim = 0;  // --dim: 384 for --embed lexical, the server's for --embedder
  bool extract_claims = false;
  std::string lexicon;
  detection_cli_options models;  // --embedder, --embedding-model, --model-cache
};

// One source of `import`: a dataset (locomo, mem0, prefeval) or a memhealth store (jsonl, sqlite).
load_result import_source(const std::string& format, const std::string& src) {
  // a PostgreSQL table (with --mapping): every row, as check reads it (no password is printed)
  if (format == "postgresql") {
    if (!is_pg_store(src))
      throw error(error_code::invalid_argument,
                  "import postgresql: the source is a postgresql:// URI, not '" + src + "'");
    return load_store_file(src);
  }
  if (is_pg_store(src))
    throw error(error_code::invalid_argument,
                "import " + format + ": " + store_label(src) +
                    " is a PostgreSQL store; read it with `memhealth import postgresql URI "
                    "--mapping M --out FILE`");
  if (format == "locomo") return import_locomo(src);
  if (format == "mem0") return import_mem0(src);
  if (format == "prefeval") return import_prefeval(src);  // a topic file or a directory of them
  if (format == "sqlite")
    return load_store_file(is_sqlite_store(src) ? src : std::string(sqlite_prefix) + src);
  if (looks_like_sqlite(src))
    throw error(
        error_code::parse,
        src +
            ": is an SQLite database, not a JSONL store; import it with `memhealth import sqlite " +
            src + "` (or pass sqlite:" + src + ")");
  auto lr = read_jsonl(src);
  // moving a store must not lose anything: a line that is not JSON at all cannot be carried over
  for (const auto& i : lr.issues)
    if (!i.record_kept)
      throw error(
          error_code::parse,
          src + ": line " + std::to_string(i.line) +
              " could not be parsed and would be lost by the import; fix or remove it first");
  return lr;
}

// Records that would be written with an empty id or empty content: counted, the first named.
struct empty_fields {
  std::size_t ids = 0, contents = 0;
  std::string first;
};

// `contents`: count empty contents too (a dataset's import; a moved store's empty content is a
// content_empty finding of check, carried as it is).
empty_fields count_empty_fields(const std::vector<memory_record>& records, bool contents) {
  empty_fields e;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto& r = records[i];
    const bool no_id = r.id.empty(), no_content = contents && r.content.empty();
    e.ids += no_id ? 1 : 0;
    e.contents += no_content ? 1 : 0;
    if ((no_id || no_content) && e.first.empty())
      e.first = "record " + std::to_string(i + 1) + (no_id ? " (no id)" : " (id " + r.id + ")");
  }
  return e;
}

// A postgresql:// --out of import: memhealth's own schema, created new in that database.
// Checked before any work: the URI (no password), the server, and that the database holds no
// memhealth_records table yet (pg_store::create refuses one again in its transaction).
// @throws error(invalid_argument) for a password in the URI or a build without libpq;
//         error(io) when the server cannot be reached; error(precondition) when the table exists.
void check_new_pg_store(const std::string& uri) {
#if MEMHEALTH_CLI_HAVE_PG
  const auto c = memhealth::detail::pg::connect(uri);
  const std::string where = describe_conninfo(uri);
  auto r =
      memhealth::detail::pg::exec(c.get(), "SELECT to_regclass('memhealth_records') IS NOT NULL",
                                  {}, where, "cannot look up a table");
  if (memhealth::detail::pg::cell(r.get(), 0, 0) == "t")
    throw error(error_code::precondition,
                where +
                    ": table memhealth_records already exists; import writes a new memhealth "
                    "store (its own schema) and never adds to or replaces one; nothing written");
#else
  (void)uri;
  no_pg_support();
#endif
}

int run_import(const import_options& o) {
  probe_store_output(
      o.out, "--out");  // before any work: writable, not a directory; an sqlite: output must be new
  if (is_pg_store(o.out)) check_new_pg_store(o.out);
  {
    std::vector<cli_file> inputs{{"--lexicon", o.lexicon}};
    for (const auto& src : o.sources) inputs.push_back({"source", src});
    refuse_outputs_over_inputs({{"--out", o.out}}, inputs);
  }
  const std::string out_label = store_label(o.out);
  load_result all;
  std::size_t directories = 0;  // prefeval sources given as a directory of topic files
  for (const auto& src : o.sources) {
    const bool table = is_pg_store(src);  // a postgresql:// source: no file to look at
    const bool dir_ok = o.format == "prefeval" && std::filesystem::is_directory(src);
    directories += dir_ok ? 1 : 0;
    if (!table && !dir_ok && std::filesystem::is_directory(store_file_path(src))) {
      std::cerr << "memhealth import: " << src << " is a directory, not a " << o.format << " file"
                << (o.format == "prefeval" ? "" : " (only prefeval takes a directory)")
                << "; nothing written\n";
      return exit_usage;
    }
    if (!table && !dir_ok && !std::filesystem::is_regular_file(store_file_path(src))) {
      std::cerr << "memhealth import: cannot read " << store_label(src) << "\n";
      return exit_usage;
    }
    auto part = import_source(o.format, src);
    const bool dataset = o.format != "jsonl" && o.format != "sqlite" && o.format != "postgresql";
    if (dataset && part.records.empty()) {
      // a file of another format, or not JSON at all: nothing to import is an error, not an
      // empty store
      print_issues(part.issues);
      std::cerr << "memhealth import: no " << o.format << " records in " << src << " (is it a "
                << o.format << " file?); nothing written\n";
      return exit_usage;
    }
    all.lines_read += part.lines_read;
    for (auto& r : part.records) all.records.push_back(std::move(r));
    for (auto& i : part.issues) all.issues.push_back(std::move(i));
  }
  const std::size_t embedded =
      fill_missing_embeddings(all.records, o.models, o.embed == "lexical",
                              o.embed == "lexical" && o.dim == 0 ? 384 : o.dim);
  std::size_t claimed = 0, unread = 0;
  if (o.extract_claims) {  // records that carry no claim get the one read from their content
    const auto lexicon = load_claim_lexicon(o.lexicon);
    const default_claim_extractor read{lexicon.get()};
    for (auto& r : all.records) {
      if (r.claim) continue;
      if (auto c = structured_claim(read(r.content)))
        r.claim = std::move(*c), ++claimed;
      else
        ++unread;
    }
  }
  if (is_pg_store(o.out)) {
#if MEMHEALTH_CLI_HAVE_PG
    // memhealth's own schema (memhealth_meta, memhealth_records), all rows in one transaction
    (void)pg_store<>::create(o.out, all.records);
#else
    no_pg_support();
#endif
  } else {
    write_store(o.out, all.records);
  }
  print_issues(all.issues);
  if (o.extract_claims)
    std::cerr << "memhealth import: claims extracted for " << claimed << " record(s), " << unread
              << " not read (memhealth claims --unread lists them)\n";
  const std::size_t files = o.sources.size() - directories;
  std::cerr << "memhealth import: " << all.records.size() << " records from ";
  if (files != 0) std::cerr << files << " file(s)" << (directories != 0 ? " and " : "");
  if (directories != 0)
    std::cerr << directories << (directories == 1 ? " directory" : " directories");
  std::cerr << " -> " << out_label << " (" << all.issues.size() << " issues, " << embedded
            << " embedded)\n";
  warn_if_empty("import", out_label, all.records.size());
  // never written silently: records without an id cannot be addressed by repairs, rollback or
  // diff, also when a store is moved (jsonl <-> sqlite: an events file or another JSON Lines file
  // read as a store gives records without ids); an empty content is counted for datasets (a
  // moved store's is a content_empty finding of check, carried as it is)
  const bool dataset = o.format != "jsonl" && o.format != "sqlite" && o.format != "postgresql";
  // a table's rows not read whole (pg_store load issues): the export lacks what was not read
  if (o.format == "postgresql" && !all.issues.empty()) {
    std::cerr << "memhealth import: warning: " << all.issues.size()
              << " load issue(s): those rows are written without what could not be read, so "
                 "the export does not stand in for them (exit 1)\n";
    return exit_findings;
  }
  const auto empty = count_empty_fields(all.records, dataset);
  if (empty.ids != 0 || empty.contents != 0) {
    std::cerr << "memhealth import: warning: written with " << empty.ids << " empty id(s) and "
              << empty.contents << " empty content(s), first " << empty.first
              << "; fix the source or the store (exit 1)\n";
    return exit_findings;
  }
  return exit_ok;
}

struct stats_options {
  std::string store;
  std::string format = "text";
  std::string out;
};

using counter = std::map<std::string, std::size_t>;

std::string stats_text(const std::string& file, const load_result& lr,
                       const std::map<std::string, counter>& groups) {
  std::ostringstream s;
  s << "store: " << file << "\n";
  s << "records: " << lr.records.size() << " (" << lr.lines_read << " lines read, "
    << lr.issues.size() << " load issues)\n";
  for (const auto& [name, c] : groups) {
    s << "\nby " << name << ":\n";
    for (const auto& [k, n] : c) s << "  " << (k.empty() ? "(missing)" : k) << ": " << n << "\n";
  }
  if (!lr.issues.empty()) {
    s << "\nload issues:\n";
    std::size_t shown = 0;
    for (const auto& i : lr.issues) {
      if (shown++ == 20) {
        s << "  ... " << (lr.issues.size() - 20) << " more\n";
        break;
      }
      s << "  " << (i.line != 0 ? "line " + std::to_string(i.line) : i.file)  // 0: not line-based
        << (i.field.empty() ? "" : " (" + i.field + ")") << ": " << i.reason << "\n";
    }
  }
  return s.str();
}

int run_stats(const stats_options& o) {
  probe_output(o.out, "--out");
  refuse_output_over_input(o.out, o.store, "--out");
  const auto lr = load_store_file(o.store);
  warn_if_empty("stats", o.store, lr.records.size());
  std::map<std::string, counter> groups;
  for (const auto& r : lr.records) {
    ++groups["scope"][r.scope];
    ++groups["status"][r.status];
    ++groups["kind"][r.kind];
    ++groups["source"][r.source];
    ++groups["embedding_version"][r.embedding_version];
    ++groups["dimension"][std::to_string(r.embedding.size())];
  }
  if (o.format == "json") {
    nlohmann::ordered_json j;
    j["schema_version"] = 1;
    j["store"] = store_label(o.store);
    j["records"] = lr.records.size();
    j["lines_read"] = lr.lines_read;
    for (const auto& [name, c] : groups) {
      auto& g = j["by_" + name];
      g = nlohmann::ordered_json::object();
      for (const auto& [k, n] : c) g[k] = n;
    }
    j["load_issues"] = load_issues_json(lr.issues);
    emit(j.dump(2), o.out);
  } else {
    emit(stats_text(store_label(o.store), lr, groups), o.out);
  }
  return exit_ok;
}

}  // namespace

void add_import(CLI::App& app, int& rc) {
  auto o = std::make_shared<import_options>();
  auto* cmd = app.add_subcommand(
      "import", "Import a dataset, or move a store between JSONL, SQLite and PostgreSQL");
  cmd->add_option("format", o->format, "Input format")
      ->required()
      ->check(CLI::IsMember({"locomo", "mem0", "prefeval", "jsonl", "sqlite", "postgresql"}));
  cmd->add_option("sources", o->sources,
                  "Input files (LoCoMo conversation JSON, mem0 export JSON/JSONL, PrefEval topic "
                  "JSON or a directory of "
                  "them, a memhealth JSONL store, an SQLite store as PATH or sqlite:PATH, a "
                  "postgresql:// URI with --mapping)")
      ->required();
  cmd->add_option("--out", o->out,
                  "Output store: JSONL (written atomically), sqlite:PATH (a new database) or "
                  "postgresql://... (memhealth's own schema, created in that database)")
      ->required();
  cmd->add_option("--embed", o->embed,
                  "Embed records without embeddings: lexical (built-in stand-in model) or none")
      ->check(CLI::IsMember({"lexical", "none"}));
  cmd->add_option(
         "--dim", o->dim,
         "Embedding dimension for --embed lexical (default 384) or --embedder (default: the "
         "model's)")
      ->transform(whole_number(1, 65536));
  add_embedder_options(cmd, o->models, true);
  cmd->add_flag("--extract-claims", o->extract_claims,
                "Write the claim read from each record's text into its claim field (records "
                "that already carry one keep it; see memhealth claims)");
  cmd->add_option("--lexicon", o->lexicon,
                  "Claim lexicon additions for --extract-claims (TSV, see README)");
  cmd->callback([o, &rc] { rc = run_import(*o); });
}

void add_stats(CLI::App& app, int& rc) {
  auto o = std::make_shared<stats_options>();
  auto* cmd = app.add_subcommand(
      "stats", "Counts by scope, status, kind, source, embedding version and dimension");
  cmd->add_option("store", o->store,
                  "Store (JSONL, sqlite:PATH or postgresql://... with --mapping)")
      ->required();
  cmd->add_option("--format", o->format, "Output format")->check(CLI::IsMember(text_json));
  cmd->add_option("--out", o->out, "Write to this file instead of stdout");
  cmd->callback([o, &rc] { rc = run_stats(*o); });
}

}  // namespace memhealth::cli
