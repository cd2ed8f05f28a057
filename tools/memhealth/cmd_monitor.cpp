// memhealth monitor | drift | gate. Output: the JSON shape of `check` (schema_version,
// summary.by_kind / by_severity, findings[], load_issues[]) plus one command-specific section
// ("windows", "drift" or "gate"); exit codes as check (0 / 1 findings of warning or above / 2).
#include "cmd_monitor.hpp"

#include <map>
#include <memory>
#include <sstream>

#include "memhealth/drift/drift.hpp"
#include "memhealth/drift/drift_json.hpp"
#include "memhealth/drift/migration_gate.hpp"
#include "memhealth/monitor/monitor_json.hpp"
#include "memhealth/monitor/retrieval_monitor.hpp"

#include "cli.hpp"
#include "report_output.hpp"

namespace memhealth::cli {

namespace {

// Findings as text: the count by kind, then the grouped layout of `check`.
void findings_text(std::ostringstream& s, const report& r) {
  s << "findings: " << r.findings.size() << "\n";
  for (const auto& [k, n] : r.counts_by_kind()) s << "  " << k << ": " << n << "\n";
  grouped_findings_text(s, r, false);
}

std::vector<load_issue> with_issues(std::vector<load_issue> a, const std::vector<load_issue>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

int exit_for(const report& r, bool exit_zero) {
  return r.has_at_least(severity::warning) && !exit_zero ? exit_findings : exit_ok;
}

// Embeddings of a store's records whose length is the store's dimension, row per record, and their
// ids.
row_matrix store_rows(const memory_store<>& s, std::vector<std::string>* ids = nullptr) {
  std::vector<std::size_t> keep;
  for (std::size_t i = 0; i < s.size(); ++i)
    if (s.dimension() && s.embedding(i).size() == s.dimension()) keep.push_back(i);
  row_matrix m(static_cast<Eigen::Index>(keep.size()), static_cast<Eigen::Index>(s.dimension()));
  for (std::size_t r = 0; r < keep.size(); ++r) {
    const auto e = s.embedding(keep[r]);
    for (std::size_t c = 0; c < e.size(); ++c)
      m(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(c)) = e[c];
    if (ids) ids->emplace_back(s.record(keep[r]).id);
  }
  return m;
}

// ---------- monitor ----------

struct monitor_cli {
  std::string events, store, window = "1h", baseline, format = "text", out;
  std::size_t top_k = 10, min_retrievals = 10;
  float threshold = 0.92f;
  bool exit_zero = false;
};

int run_monitor(const monitor_cli& o) {
  monitor_options mo;
  const auto w = parse_duration(o.window);
  if (!w || w->count() <= 0)
    throw error(error_code::invalid_argument,
                "--window: expected a positive duration such as 30m, 1h, 1d: " + o.window);
  mo.window = *w;
  mo.top_k = o.top_k;
  mo.min_retrievals = o.min_retrievals;
  if (!(o.threshold >= -1.0f && o.threshold <= 1.0f))
    throw error(error_code::invalid_argument, "--threshold must be in [-1, 1]");
  mo.duplicate_threshold = o.threshold;
  probe_output(o.out, "--out");
  refuse_outputs_over_inputs(
      {{"--out", o.out}}, {{"events", o.events}, {"--store", o.store}, {"--baseline", o.baseline}});
  check_jsonl_input(o.events, "retrieval events");
  if (!o.baseline.empty()) check_jsonl_input(o.baseline, "retrieval events");
  auto lr = load_store_file(o.store);
  print_issues(lr.issues);
  warn_if_empty("monitor", o.store, lr.records.size());
  const auto store = memory_store<>::from_records(std::move(lr.records));
  const auto ev = read_events_jsonl(o.events);
  print_issues(ev.issues);
  // an events file without a single event (empty, blank lines only): nothing could be evaluated
  // (`plan --events` treats it the same way)
  const bool no_events = ev.retrievals.empty() && ev.feedback.empty();
  if (no_events)
    std::cerr << "memhealth monitor: warning: " << o.events
              << " holds no retrieval or feedback event (" << ev.lines_read
              << " lines): no window could be evaluated; is it the right file?\n";
  std::optional<baseline_map> base;
  std::vector<load_issue> base_issues;
  if (!o.baseline.empty()) {
    const auto b = read_events_jsonl(o.baseline);
    print_issues(b.issues);
    base_issues = b.issues;
    base = compute_baseline(store, std::span(b.retrievals), std::span(b.feedback), mo);
  }
  auto res = monitor_retrievals(store, std::span(ev.retrievals), std::span(ev.feedback), mo,
                                base ? &*base : nullptr);
  res.findings.records_checked = ev.retrievals.size() + ev.feedback.size();  // events checked
  const auto issues = with_issues(with_issues(lr.issues, ev.issues), base_issues);
  if (o.format == "json") {
    nlohmann::ordered_json j;
    j["schema_version"] = 1;
    j["command"] = "monitor";
    j["events"] = o.events;
    j["store"] = o.store;
    j["window_ms"] = mo.window.count();
    j["baseline"] =
        o.baseline.empty() ? nlohmann::ordered_json("rolling") : nlohmann::ordered_json(o.baseline);
    auto s = summary_json(res.findings, issues.size());
    s["retrievals"] = ev.retrievals.size();
    s["feedback"] = ev.feedback.size();
    s["windows"] = res.windows.size();
    j["summary"] = std::move(s);
    j["windows"] = windows_json(res.windows);
    j["findings"] = findings_json(res.findings);
    j["load_issues"] = load_issues_json(issues);
    emit(j.dump(2), o.out);
  } else {
    std::ostringstream s;
    s << "memhealth monitor " << o.events << " --store " << o.store << "\n";
    s << "retrievals: " << ev.retrievals.size() << ", feedback: " << ev.feedback.size()
      << ", windows: " << res.windows.size() << " of " << o.window
      << ", baseline: " << (o.baseline.empty() ? "rolling" : o.baseline)
      << ", load issues: " << issues.size() << "\n\n";
    s << "  partition            window start              n   empty  top1   topk   p50ms    p95ms "
         "   p99ms    dup    neg\n";
    for (const auto& m : res.windows) {
      char line[256];
      std::snprintf(line, sizeof line,
                    "  %-20s %-24s %4zu  %5.3f  %5.3f  %5.3f  %7.1f  %7.1f  %7.1f  %5.3f  %5.3f\n",
                    m.partition.c_str(), format_timestamp(m.start).c_str(), m.retrievals,
                    m.empty_rate, m.mean_top1_similarity, m.mean_topk_similarity, m.p50_latency_ms,
                    m.p95_latency_ms, m.p99_latency_ms, m.duplicate_share,
                    m.negative_feedback_rate);
      s << line;
    }
    s << "\n";
    findings_text(s, res.findings);
    emit(s.str(), o.out);
  }
  if (no_events && !o.exit_zero) return exit_findings;
  return exit_for(res.findings, o.exit_zero);
}

// ---------- drift ----------

struct drift_cli {
  std::string reference, current, format = "text", out;
  double alpha = 0.01, noise_cosine = 0.999;
  bool exit_zero = false;
};

// mixed_embedding_version of one store, from the structural detector (the same check as `check`).
void version_findings(const memory_store<>& s, const std::string& path, report& r) {
  const report st = pipeline{structural_detector{}}.run(s);
  for (auto f : st.findings)
    if (f.kind == finding_kinds::mixed_embedding_version) {
      f.with("store", path);
      r.findings.push_back(std::move(f));
    }
}

std::string majority_version_of(const memory_store<>& s) {
  std::map<std::string, std::size_t> c;
  for (std::size_t i = 0; i < s.size(); ++i)
    if (!s.embedding(i).empty()) ++c[s.record(i).embedding_version];
  std::string best;
  std::size_t n = 0;
  for (const auto& [v, k] : c)
    if (k > n) best = v, n = k;
  return best;
}

int run_drift(const drift_cli& o) {
  if (!(o.noise_cosine > -1.0 && o.noise_cosine <= 1.0))
    throw error(error_code::invalid_argument, "--noise-cosine must be in (-1, 1]");
  if (!(o.alpha > 0.0 && o.alpha < 1.0))
    throw error(error_code::invalid_argument, "--alpha must be in (0, 1)");
  probe_output(o.out, "--out");
  refuse_outputs_over_inputs({{"--out", o.out}},
                             {{"--reference", o.reference}, {"--current", o.current}});
  auto a = load_store_file(o.reference);
  auto b = load_store_file(o.current);
  warn_if_empty("drift", o.reference, a.records.size());
  warn_if_empty("drift", o.current, b.records.size());
  print_issues(a.issues);
  print_issues(b.issues);
  const auto sa = memory_store<>::from_records(std::move(a.records));
  const auto sb = memory_store<>::from_records(std::move(b.records));
  drift_options d;
  d.alpha = o.alpha;
  d.mmd.noise_cosine = o.noise_cosine;
  const row_matrix ra = store_rows(sa), rb = store_rows(sb);
  drift_result dr = detect_drift(ra, rb, d);
  report r;
  r.records_total = sa.size() + sb.size();
  r.records_checked = static_cast<std::size_t>(ra.rows() + rb.rows());
  version_findings(sa, o.reference, r);
  version_findings(sb, o.current, r);
  const std::string va = majority_version_of(sa), vb = majority_version_of(sb);
  for (auto& f : dr.findings) {
    f.with("reference_version", va).with("current_version", vb);
    r.findings.push_back(std::move(f));
  }
  const auto issues = with_issues(a.issues, b.issues);
  if (o.format == "json") {
    nlohmann::ordered_json j;
    j["schema_version"] = 1;
    j["command"] = "drift";
    j["reference"] = o.reference;
    j["current"] = o.current;
    j["summary"] = summary_json(r, issues.size());
    nlohmann::ordered_json x;
    x["reference"] = {{"rows", ra.rows()},
                      {"dimension", ra.cols()},
                      {"version", va},
                      {"norms", norm_summary_json(dr.reference)}};
    x["current"] = {{"rows", rb.rows()},
                    {"dimension", rb.cols()},
                    {"version", vb},
                    {"norms", norm_summary_json(dr.current)}};
    x["mmd"] = drift_mmd_json(dr);
    x["centroid_cosine"] = centroid_cosine_json(dr);
    j["drift"] = std::move(x);
    j["findings"] = findings_json(r);
    j["load_issues"] = load_issues_json(issues);
    emit(j.dump(2), o.out);
  } else {
    std::ostringstream s;
    s << "memhealth drift --reference " << o.reference << " --current " << o.current << "\n";
    s << "reference: " << ra.rows() << " vectors, dimension " << ra.cols() << ", version '" << va
      << "', mean norm " << dr.reference.mean << "\n";
    s << "current:   " << rb.rows() << " vectors, dimension " << rb.cols() << ", version '" << vb
      << "', mean norm " << dr.current.mean << "\n";
    if (dr.mmd)
      s << "MMD " << dr.mmd->mmd << " (noise floor " << dr.mmd->noise_floor
        << "), p = " << dr.mmd->p_value << " over " << dr.mmd->splits
        << (dr.mmd->exact ? " splits (exact)" : " random splits") << ", centroid cosine "
        << dr.centroid_cosine << "\n";
    s << "\n";
    findings_text(s, r);
    emit(s.str(), o.out);
  }
  return exit_for(r, o.exit_zero);
}

// ---------- gate ----------

struct gate_cli {
  std::string old_store, new_store, format = "text", out;
  std::size_t k = 10;
  double min_overlap = 0.8, min_rank_correlation = 0.5;
  bool exit_zero = false;
};

int run_gate(const gate_cli& o) {
  if (o.k == 0) throw error(error_code::invalid_argument, "--k must be positive");
  probe_output(o.out, "--out");
  refuse_outputs_over_inputs({{"--out", o.out}}, {{"--old", o.old_store}, {"--new", o.new_store}});
  auto a = load_store_file(o.old_store);
  auto b = load_store_file(o.new_store);
  warn_if_empty("gate", o.old_store, a.records.size());
  warn_if_empty("gate", o.new_store, b.records.size());
  print_issues(a.issues);
  print_issues(b.issues);
  const auto sa = memory_store<>::from_records(std::move(a.records));
  const auto sb = memory_store<>::from_records(std::move(b.records));
  // pair the texts by id: rows of both matrices in old-store order
  std::vector<std::string> ids;
  std::vector<std::pair<std::size_t, std::size_t>> pairs;
  std::size_t unpaired = 0;
  for (std::size_t i = 0; i < sa.size(); ++i) {
    if (!sa.dimension() || sa.embedding(i).size() != sa.dimension()) continue;
    const auto j = sb.find(sa.record(i).id);
    if (!j || !sb.dimension() || sb.embedding(*j).size() != sb.dimension()) {
      ++unpaired;
      continue;
    }
    ids.emplace_back(sa.record(i).id);
    pairs.emplace_back(i, *j);
  }
  row_matrix A(static_cast<Eigen::Index>(pairs.size()), static_cast<Eigen::Index>(sa.dimension()));
  row_matrix B(static_cast<Eigen::Index>(pairs.size()), static_cast<Eigen::Index>(sb.dimension()));
  for (std::size_t r = 0; r < pairs.size(); ++r) {
    const auto ea = sa.embedding(pairs[r].first), eb = sb.embedding(pairs[r].second);
    for (std::size_t c = 0; c < ea.size(); ++c)
      A(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(c)) = ea[c];
    for (std::size_t c = 0; c < eb.size(); ++c)
      B(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(c)) = eb[c];
  }
  gate_options g;
  g.k = o.k;
  g.min_overlap = o.min_overlap;
  g.min_rank_correlation = o.min_rank_correlation;
  const gate_result gr = migration_gate(A, B, g, ids);
  report r;
  r.records_total = sa.size() + sb.size();
  r.records_checked = pairs.size();
  r.findings = gr.findings;
  const auto issues = with_issues(a.issues, b.issues);
  if (o.format == "json") {
    nlohmann::ordered_json j;
    j["schema_version"] = 1;
    j["command"] = "gate";
    j["old"] = o.old_store;
    j["new"] = o.new_store;
    j["summary"] = summary_json(r, issues.size());
    j["gate"] = {{"passed", gr.passed},
                 {"texts", gr.n},
                 {"unpaired", unpaired},
                 {"k", gr.k},
                 {"old_dimension", A.cols()},
                 {"new_dimension", B.cols()},
                 {"mean_overlap", gr.mean_overlap},
                 {"min_query_overlap", gr.min_query_overlap},
                 {"mean_rank_correlation", gr.mean_rank_correlation},
                 {"min_overlap", o.min_overlap},
                 {"min_rank_correlation", o.min_rank_correlation}};
    j["findings"] = findings_json(r);
    j["load_issues"] = load_issues_json(issues);
    emit(j.dump(2), o.out);
  } else {
    std::ostringstream s;
    s << "memhealth gate --old " << o.old_store << " --new " << o.new_store << "\n";
    s << "texts: " << gr.n << " paired by id (" << unpaired
      << " without a usable pair), dimensions " << A.cols() << " -> " << B.cols()
      << ", k = " << gr.k << "\n";
    if (gr.k == 0) {  // migration_gate did not evaluate (its check_skipped finding says why)
      s << "gate: FAIL, not evaluated: it needs at least 3 texts paired by id and --k > 0\n\n";
    } else {
      s << "mean overlap@" << gr.k << " " << gr.mean_overlap << " (min " << o.min_overlap
        << ", worst text " << gr.min_query_overlap << "), mean rank correlation "
        << gr.mean_rank_correlation << " (min " << o.min_rank_correlation << ")\n";
      s << "gate: " << (gr.passed ? "PASS" : "FAIL") << "\n\n";
    }
    findings_text(s, r);
    emit(s.str(), o.out);
  }
  return exit_for(r, o.exit_zero);
}

}  // namespace

void add_monitor(CLI::App& app, int& rc) {
  auto o = std::make_shared<monitor_cli>();
  auto* cmd = app.add_subcommand(
      "monitor", "Retrieval-quality metrics and alerts per partition and window (level 3)");
  cmd->add_option("events", o->events, "Retrieval and feedback events (JSONL, docs/format.md)")
      ->required();
  cmd->add_option("--store", o->store, "The store the results were served from (JSONL)")
      ->required();
  cmd->add_option("--window", o->window, "Window length (30m, 1h, 1d)")->transform(duration(true));
  cmd->add_option("--baseline", o->baseline,
                  "Events of a reference period (JSONL); default: earlier clean windows");
  cmd->add_option("--top-k", o->top_k, "Results per retrieval used for top-k metrics (0 = all)")
      ->transform(whole_number());
  cmd->add_option("--threshold", o->threshold,
                  "Near-duplicate cosine threshold for the duplicate share")
      ->transform(real_number(-1, 1));
  cmd->add_option("--min-retrievals", o->min_retrievals,
                  "Fewest retrievals in a window for a metric alert")
      ->transform(whole_number());
  cmd->add_option("--format", o->format, "Output format")->check(CLI::IsMember(text_json));
  cmd->add_option("--out", o->out, "Write the report to this file instead of stdout");
  cmd->add_flag("--exit-zero", o->exit_zero,
                "Exit 0 even when findings of warning or above are found");
  cmd->callback([o, &rc] { rc = run_monitor(*o); });
}

void add_drift(CLI::App& app, int& rc) {
  auto o = std::make_shared<drift_cli>();
  auto* cmd = app.add_subcommand(
      "drift",
      "Embedding drift between a reference and a current store (norms, MMD test, versions)");
  cmd->add_option("--reference", o->reference, "Reference store (JSONL)")->required();
  cmd->add_option("--current", o->current, "Current store (JSONL)")->required();
  cmd->add_option("--alpha", o->alpha, "Significance level of the MMD permutation test")
      ->transform(real_number(0, 1, open_ends::both));
  cmd->add_option("--noise-cosine", o->noise_cosine, "Re-embedding noise to ignore (pair cosine)")
      ->transform(real_number(-1, 1, open_ends::low));
  cmd->add_option("--format", o->format, "Output format")->check(CLI::IsMember(text_json));
  cmd->add_option("--out", o->out, "Write the report to this file instead of stdout");
  cmd->add_flag("--exit-zero", o->exit_zero,
                "Exit 0 even when findings of warning or above are found");
  cmd->callback([o, &rc] { rc = run_drift(*o); });
}

void add_gate(CLI::App& app, int& rc) {
  auto o = std::make_shared<gate_cli>();
  auto* cmd = app.add_subcommand(
      "gate",
      "Migration gate: top-k neighbour agreement of the same texts in the old and new space");
  cmd->add_option("--old", o->old_store, "Sample embedded by the old model (JSONL store)")
      ->required();
  cmd->add_option("--new", o->new_store,
                  "The same texts (same ids) embedded by the new model (JSONL store)")
      ->required();
  cmd->add_option("--k", o->k, "Neighbours per text")->transform(whole_number(1));
  cmd->add_option("--min-overlap", o->min_overlap, "Least mean overlap@k to pass")
      ->transform(real_number(0, 1));
  cmd->add_option("--min-rank-correlation", o->min_rank_correlation,
                  "Least mean Spearman rho to pass")
      ->transform(real_number(-1, 1));
  cmd->add_option("--format", o->format, "Output format")->check(CLI::IsMember(text_json));
  cmd->add_option("--out", o->out, "Write the report to this file instead of stdout");
  cmd->add_flag("--exit-zero", o->exit_zero,
                "Exit 0 even when findings of warning or above are found");
  cmd->callback([o, &rc] { rc = run_gate(*o); });
}

}  // namespace memhealth::cli
