// memhealth check: runs the default detection pipeline over a store; never changes it.
#include <map>
#include <memory>
#include <sstream>

#include "cli.hpp"

namespace memhealth::cli {

namespace {

struct check_options {
  std::string store;
  std::string format = "text";
  std::string out;
  std::string embed = "none";
  bool exit_zero = false;
  detection_cli_options detect;
};

nlohmann::ordered_json evidence_json(const evidence_value& v) {
  return std::visit([](const auto& x) { return nlohmann::ordered_json(x); }, v);
}

std::string evidence_text(const evidence_value& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) return x;
        else if constexpr (std::is_same_v<T, bool>) return x ? "true" : "false";
        else if constexpr (std::is_same_v<T, double>) {
          std::ostringstream s;
          s.precision(4);
          s << x;
          return s.str();
        } else return std::to_string(x);
      },
      v);
}

nlohmann::ordered_json report_json(const report& r, const check_options& o, const detect_options& d,
                                   const std::vector<load_issue>& issues) {
  nlohmann::ordered_json j;
  j["schema_version"] = 1;
  j["store"] = o.store;
  j["now"] = format_timestamp(timestamp{d.now, 0});
  j["dimension"] = d.dimension;
  auto& s = j["summary"];
  s["records_total"] = r.records_total;
  s["records_checked"] = r.records_checked;
  s["findings"] = r.findings.size();
  s["load_issues"] = issues.size();
  s["by_kind"] = nlohmann::ordered_json::object();
  for (const auto& [k, n] : r.counts_by_kind()) s["by_kind"][k] = n;
  std::map<severity, std::size_t> sev;
  for (const auto& f : r.findings) ++sev[f.severity];
  s["by_severity"] = nlohmann::ordered_json::object();
  for (const auto& [k, n] : sev) s["by_severity"][std::string(to_string(k))] = n;
  auto& fs = j["findings"];
  fs = nlohmann::ordered_json::array();
  for (const auto& f : r.findings) {
    nlohmann::ordered_json e;
    e["kind"] = f.kind;
    e["severity"] = std::string(to_string(f.severity));
    e["detector"] = f.detector;
    e["record_ids"] = f.record_ids;
    e["evidence"] = nlohmann::ordered_json::object();
    for (const auto& [k, v] : f.evidence) {  // a key given more than once becomes an array
      auto& slot = e["evidence"][k];
      if (slot.is_null()) {
        slot = evidence_json(v);
      } else {
        if (!slot.is_array()) slot = nlohmann::ordered_json::array({slot});
        slot.push_back(evidence_json(v));
      }
    }
    e["suggested_repair"] = f.suggested_repair;
    fs.push_back(std::move(e));
  }
  j["load_issues"] = issues_json(issues);
  return j;
}

std::string report_text(const report& r, const check_options& o, const detect_options& d, std::size_t n_issues,
                        bool markdown) {
  std::ostringstream s;
  const auto counts = r.counts_by_kind();
  if (markdown) {
    s << "# memhealth check: " << o.store << "\n\n";
    s << "- records: " << r.records_total << " (" << r.records_checked << " checked)\n";
    s << "- clock: " << format_timestamp(timestamp{d.now, 0}) << ", embedding dimension " << d.dimension << "\n";
    s << "- findings: " << r.findings.size() << ", load issues: " << n_issues << "\n\n";
    s << "| kind | count |\n|---|---:|\n";
    for (const auto& [k, n] : counts) s << "| " << k << " | " << n << " |\n";
  } else {
    s << "memhealth check " << o.store << "\n";
    s << "records: " << r.records_total << " (" << r.records_checked << " checked), clock "
      << format_timestamp(timestamp{d.now, 0}) << ", dimension " << d.dimension << "\n";
    s << "findings: " << r.findings.size() << ", load issues: " << n_issues << "\n\n";
    for (const auto& [k, n] : counts) s << "  " << k << ": " << n << "\n";
  }
  constexpr std::size_t per_kind = 20;
  std::map<std::string, std::size_t> shown;
  std::string current;
  for (const auto& [kind, total] : counts) {
    s << (markdown ? "\n## " : "\n== ") << kind << " (" << total << ")\n";
    if (markdown) s << "\n";
    std::size_t k = 0;
    for (const auto& f : r.findings) {
      if (f.kind != kind) continue;
      if (k++ == per_kind) {
        s << (markdown ? "- ..." : "  ...") << " " << (total - per_kind) << " more (use --format json for all)\n";
        break;
      }
      s << (markdown ? "- **" : "  [") << to_string(f.severity) << (markdown ? "** " : "] ");
      for (std::size_t i = 0; i < f.record_ids.size(); ++i) {
        if (i == 6) {
          s << " +" << (f.record_ids.size() - 6);
          break;
        }
        s << (i ? ", " : "") << (markdown ? "`" : "") << f.record_ids[i] << (markdown ? "`" : "");
      }
      if (!f.evidence.empty()) {
        s << " --";
        for (const auto& [ek, ev] : f.evidence) s << " " << ek << "=" << evidence_text(ev);
      }
      if (!f.suggested_repair.empty()) s << " -> " << f.suggested_repair;
      s << "\n";
    }
  }
  return s.str();
}

int run_check(const check_options& o) {
  auto [settings, d] = detection_settings(o.detect);
  auto lr = load_store_file(o.store);
  if (o.embed == "lexical") {
    std::size_t dim = o.detect.dim ? o.detect.dim : memory_store<>::most_common_dimension(lr.records);
    if (dim == 0) dim = 384;
    embed_missing(lr.records, lexical_embedder(dim, 0));
  }
  auto store = memory_store<>::from_records(std::move(lr.records), o.detect.dim);
  d.dimension = store.dimension();
  const report r = make_default_pipeline(settings).run(store, d);
  print_issues(lr.issues);
  if (o.format == "json") emit(report_json(r, o, d, lr.issues).dump(2), o.out);
  else emit(report_text(r, o, d, lr.issues.size(), o.format == "md"), o.out);
  // lines that could not be parsed at all count as findings of warning level for the exit code
  const bool skipped = std::any_of(lr.issues.begin(), lr.issues.end(), [](const load_issue& i) { return !i.record_kept; });
  return (r.has_at_least(severity::warning) || skipped) && !o.exit_zero ? exit_findings : exit_ok;
}

}  // namespace

void add_check(CLI::App& app, int& rc) {
  auto o = std::make_shared<check_options>();
  auto* cmd = app.add_subcommand("check", "Run the detection pipeline over a store (never changes it)");
  cmd->add_option("store", o->store, "Store (JSONL)")->required();
  cmd->add_option("--format", o->format, "Output format")->check(CLI::IsMember(text_json_md));
  cmd->add_option("--out", o->out, "Write the report to this file instead of stdout");
  add_detection_options(cmd, o->detect);
  cmd->add_option("--embed", o->embed, "Embed records without embeddings first: lexical or none")
      ->check(CLI::IsMember({"lexical", "none"}));
  cmd->add_flag("--exit-zero", o->exit_zero, "Exit 0 even when findings of warning or above are found");
  cmd->callback([o, &rc] { rc = run_check(*o); });
}

}  // namespace memhealth::cli
