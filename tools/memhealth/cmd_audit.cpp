// memhealth drill (inject faults into a copy of a store, detect, plan, apply, measure) and
// memhealth tune (threshold sweep on labelled pairs; with --judge, the claim conflict judge's
// settings on labelled conflict pairs).
#include "cmd_audit.hpp"

#include <array>
#include <iomanip>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "memhealth/audit/drill.hpp"
#include "memhealth/audit/tune.hpp"
#include "memhealth/audit/tune_judge.hpp"

#include "cli.hpp"

namespace memhealth::cli {
namespace {

// "3 lines skipped as malformed (lines 4, 9, 12)": the numbers the reader kept (the first
// max_skipped_line_numbers), then how many more; with the reasons when the reader gives them
// ("(line 4: label 'CONFLICT' is not conflict, no_conflict or review; line 9: ...)").
template <class Set>
std::string skipped_text(const Set& set) {
  std::string t = std::to_string(set.skipped_lines) +
                  (set.skipped_lines == 1 ? " line" : " lines") + " skipped as malformed (line";
  if constexpr (requires { set.skipped_reasons; }) {
    if (set.skipped_reasons.size() == set.skipped_line_numbers.size()) {
      for (std::size_t k = 0; k < set.skipped_line_numbers.size(); ++k)
        t += (k ? "; line " : " ") + std::to_string(set.skipped_line_numbers[k]) + ": " +
             set.skipped_reasons[k];
      if (set.skipped_lines > set.skipped_line_numbers.size())
        t += "; and " + std::to_string(set.skipped_lines - set.skipped_line_numbers.size()) +
             " more";
      return t + ")";
    }
  }
  if (set.skipped_line_numbers.size() > 1) t += 's';
  for (std::size_t k = 0; k < set.skipped_line_numbers.size(); ++k)
    t += (k ? ", " : " ") + std::to_string(set.skipped_line_numbers[k]);
  if (set.skipped_lines > set.skipped_line_numbers.size())
    t += " and " + std::to_string(set.skipped_lines - set.skipped_line_numbers.size()) + " more";
  return t + ")";
}

// On stderr: the lines of a judge-pairs file that were skipped (with their reasons) and the
// languages the claim extractor does not read, so nothing in the file is left out silently.
void warn_about_pairs(std::string_view command, const std::string& what,
                      const judge_pair_set& set) {
  if (set.skipped_lines)
    std::cerr << "memhealth " << command << ": warning: " << what << ": " << skipped_text(set)
              << "\n";
  if (!set.unknown_languages.empty()) {
    std::cerr << "memhealth " << command << ": warning: " << what
              << ": languages other than en and zh (read as far as the extractor can):";
    for (const auto& l : set.unknown_languages) std::cerr << " '" << l << "'";
    std::cerr << "\n";
  }
}

struct drill_cli_options {
  std::string store;
  std::string format = "text";
  std::string out;
  std::uint64_t seed = 1;
  double rate = 0.02;
  std::vector<std::string> kinds;
  std::vector<std::string> defaults;
  std::vector<std::string> pairs;  // --pairs files ("" = the built-in pairs)
  double min_coverage = 0.0;
  double max_fpr = 1.0;
  detection_cli_options detect;
};

// [low, high] of a 95% interval
nlohmann::json ci_json(const proportion_interval& ci) {
  return nlohmann::json::array({ci.low, ci.high});
}

nlohmann::json to_json_report(const drill_result& r, const drill_cli_options& o) {
  nlohmann::json j;
  j["schema_version"] = 1;
  j["store"] = o.store;
  j["seed"] = o.seed;
  j["rate"] = o.rate;
  j["records"] = r.records;
  j["eligible"] = r.eligible;
  j["injected"] = r.injected;
  j["detected"] = r.detected;
  // rates over nothing are no rates: null (0 of 0 injected, 0 of 0 attempted)
  j["coverage"] = r.injected == 0 ? nlohmann::json() : nlohmann::json(r.coverage);
  j["coverage_ci95"] = r.injected == 0 ? nlohmann::json() : ci_json(r.coverage_ci);
  j["untouched_records"] = r.untouched;
  j["false_positive_records"] = r.false_positive_records;
  j["false_positive_rate"] = r.false_positive_rate;
  j["false_positive_rate_ci95"] = ci_json(r.false_positive_ci);
  j["baseline_flagged_records"] = r.baseline_flagged_records;
  j["baseline_flagged_rate"] = r.baseline_flag_rate;
  j["baseline_flagged_rate_ci95"] = ci_json(r.baseline_flag_ci);
  j["false_positive_records_net"] = r.false_positive_records_net;
  j["false_positive_rate_net"] = r.false_positive_rate_net;
  j["false_positive_rate_net_ci95"] = ci_json(r.false_positive_net_ci);
  j["false_positive_ids_net"] = r.false_positive_ids;
  j["pairs_source"] = r.pairs_source;
  if (!r.text_embedder.empty()) j["text_embedder"] = r.text_embedder;
  if (!r.text_embedder_note.empty()) j["text_embedder_note"] = r.text_embedder_note;
  j["repair_attempted"] = r.attempted;
  j["repaired"] = r.repaired;
  j["repair_success"] = r.attempted == 0 ? nlohmann::json() : nlohmann::json(r.repair_success);
  j["healthy_records_changed"] = r.healthy_records_changed;
  j["actions_planned"] = r.actions_planned;
  j["actions_applied"] = r.actions_applied;
  if (!r.schema_note.empty()) j["schema_note"] = r.schema_note;
  auto per = nlohmann::json::object();
  for (const auto& k : r.per_kind) {
    // a kind with nothing injected was not tested: no coverage (null), not 0
    nlohmann::json e{{"injected", k.injected},
                     {"detected", k.detected},
                     {"coverage", k.injected == 0 ? nlohmann::json() : nlohmann::json(k.coverage)},
                     {"coverage_ci95", k.injected == 0 ? nlohmann::json() : ci_json(k.coverage_ci)},
                     {"attempted", k.attempted},
                     {"repaired", k.repaired},
                     {"expected_finding", expected_finding(k.kind)}};
    if (!k.note.empty()) e["note"] = k.note;
    per[std::string(to_string(k.kind))] = std::move(e);
  }
  j["per_kind"] = std::move(per);
  auto used = nlohmann::json::object();  // fault kind -> the text pairs injected, in order
  for (const auto& f : r.faults)
    if (!f.pair_id.empty()) used[std::string(to_string(f.kind))].push_back(f.pair_id);
  if (!used.empty()) j["pairs_used"] = std::move(used);
  j["findings_baseline"] = r.findings_baseline;
  j["findings_injected"] = r.findings_injected;
  j["findings_after_repair"] = r.findings_repaired;
  return j;
}

// "0.812 [0.695, 0.890]": a rate and its 95% interval (3 decimals)
std::string with_ci(double v, const proportion_interval& ci) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(3) << v << " [" << ci.low << ", " << ci.high << "]";
  return s.str();
}

std::string to_text(const drill_result& r) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(3);
  s << "fault drill: " << r.records << " records, " << r.eligible << " eligible as targets, "
    << r.injected << (r.injected == 1 ? " fault" : " faults") << " injected\n";
  if (!r.schema_note.empty()) s << "  schema: " << r.schema_note << "\n";
  s << "  text pairs: " << r.pairs_source << "\n";
  if (!r.text_embedder.empty())
    s << "  text embedder: " << r.text_embedder
      << (r.text_embedder_note.empty()
              ? " (reproduces the store's vectors on " + std::to_string(r.text_embedder_checked) +
                    " of " + std::to_string(r.text_embedder_checked) + " records checked)"
              : std::string())
      << "\n";
  if (!r.text_embedder_note.empty()) s << "  limitation: " << r.text_embedder_note << "\n";
  s << "\n  " << std::left << std::setw(25) << "kind" << std::right << std::setw(9) << "injected"
    << std::setw(9) << "detected" << std::setw(10) << "coverage" << std::setw(17) << "95% CI"
    << std::setw(11) << "attempted" << std::setw(10) << "repaired"
    << "\n";
  for (const auto& k : r.per_kind) {
    std::ostringstream ci, cov;
    cov << std::fixed << std::setprecision(3);
    if (k.injected == 0) {  // not tested: no coverage to show
      ci << "-";
      cov << "-";
    } else {
      ci << std::fixed << std::setprecision(3) << "[" << k.coverage_ci.low << ", "
         << k.coverage_ci.high << "]";
      cov << k.coverage;
    }
    s << "  " << std::left << std::setw(25) << to_string(k.kind) << std::right << std::setw(9)
      << k.injected << std::setw(9) << k.detected << std::setw(10) << cov.str() << std::setw(17)
      << ci.str() << std::setw(11) << k.attempted << std::setw(10) << k.repaired;
    if (!k.note.empty()) s << "  (" << k.note << ")";
    s << "\n";
  }
  s << "\n  coverage                         "
    << (r.injected == 0 ? std::string("-") : with_ci(r.coverage, r.coverage_ci)) << " ("
    << r.detected << " of " << r.injected << ")\n";
  s << "  false-positive rate              " << with_ci(r.false_positive_rate, r.false_positive_ci)
    << " (" << r.false_positive_records << " of " << r.untouched
    << " untouched records flagged in the drilled copy)\n";
  s << "  baseline flagged rate            " << with_ci(r.baseline_flag_rate, r.baseline_flag_ci)
    << " (" << r.baseline_flagged_records << " of " << r.untouched
    << " untouched records already flagged on the original store)\n";
  s << "  false-positive rate, net         "
    << with_ci(r.false_positive_rate_net, r.false_positive_net_ci) << " ("
    << r.false_positive_records_net << " of " << r.untouched
    << " flagged in the drilled copy and not on the original)\n";
  s << "  repair success                   ";
  if (r.attempted == 0)
    s << "-";
  else
    s << r.repair_success;
  s << " (" << r.repaired << " of " << r.attempted
    << " attempted; tier-3 faults wait for a person)\n";
  s << "  healthy records changed          " << r.healthy_records_changed << "\n";
  s << "  actions                          " << r.actions_applied << " applied of "
    << r.actions_planned << " planned\n";
  return s.str();
}

int run_drill_command(const drill_cli_options& o) {
  probe_output(o.out, "--out");
  {
    std::vector<cli_file> inputs{{"store", o.store}};
    for (const auto& f : o.pairs) inputs.push_back({"--pairs", f});
    refuse_outputs_over_inputs({{"--out", o.out}}, inputs);
  }
  auto lr = load_store_file(o.store);
  print_issues(lr.issues);
  warn_if_empty("drill", o.store, lr.records.size());
  // --embedder: the store's own model. It embeds the injected real text (used when it reproduces
  // the store's vectors, see the drill's "Real text"; otherwise the drill says so) and the
  // records without a vector.
  std::shared_ptr<const cli_embedder> text_model;
  if (!o.detect.embedder.empty())
    text_model = make_cli_embedder(
        o.detect,
        o.detect.dim != 0 ? o.detect.dim : memory_store<>::most_common_dimension(lr.records));
  if (text_model && o.detect.embedder.starts_with("lexical:"))
    (void)embed_missing(lr.records, *text_model);
  else
    fill_missing_embeddings(lr.records, o.detect, false, o.detect.dim);
  auto [settings, d] = detection_settings(o.detect);
  drill_options opt;
  if (text_model) {
    opt.embed = [text_model](std::string_view text) {
      std::vector<float> v(text_model->dimension());
      text_model->embed(text, v);
      return v;
    };
    opt.embed_version = text_model->ver;
  }
  opt.seed = o.seed;
  opt.rate = o.rate;
  opt.check = settings;
  opt.now = d.now;
  if (!o.kinds.empty()) {
    opt.kinds.clear();
    for (const auto& name : o.kinds) {
      auto it = std::find_if(all_fault_kinds.begin(), all_fault_kinds.end(),
                             [&](fault_kind k) { return to_string(k) == name; });
      if (it == all_fault_kinds.end())
        throw error(error_code::invalid_argument, "--kinds: unknown fault kind: " + name);
      opt.kinds.push_back(*it);
    }
  }
  if (!o.pairs.empty()) {
    auto pairs = std::make_shared<drill_pairs>();
    for (const auto& file : o.pairs) {
      refuse_directory(file, "--pairs");
      judge_pair_set set;
      try {
        set = read_judge_pairs(file);
      } catch (const error& e) {
        if (e.code() != error_code::parse) throw;
        std::string why = e.what();  // "parse: ...": the prefix is written once, below
        if (why.starts_with("parse: ")) why.erase(0, 7);
        throw error(error_code::parse, "--pairs " + file + ": " + why);
      }
      warn_about_pairs("drill", "--pairs " + file, set);
      add_drill_pairs(*pairs, set, file);
    }
    opt.pairs = std::move(pairs);
  }
  for (const auto& kv : o.defaults) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      throw error(error_code::invalid_argument, "--default expects KEY=VALUE: " + kv);
    opt.plan.metadata_defaults[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  const drill_result r = run_drill(std::move(lr.records), opt);
  emit(o.format == "json" ? to_json_report(r, o).dump(2) : to_text(r), o.out);
  // the kinds not tested, grouped by why ("why: kind, kind; why: kind"); running out of targets
  // is the clock's or the store's doing, a cap or a missing field the kind's own
  std::vector<std::pair<std::string, std::string>> by_note;  // note -> kinds, in kind order
  for (const auto& k : r.per_kind) {
    if (k.injected != 0) continue;
    const std::string why = k.note.empty() ? std::string("none injected") : k.note;
    auto it =
        std::find_if(by_note.begin(), by_note.end(), [&](const auto& e) { return e.first == why; });
    if (it == by_note.end()) it = by_note.insert(by_note.end(), {why, std::string()});
    it->second += (it->second.empty() ? "" : ", ") + std::string(to_string(k.kind));
  }
  std::string untested;
  bool ran_out = false;
  for (const auto& [why, kinds] : by_note) {
    untested += (untested.empty() ? "" : "; ") + why + ": " + kinds;
    ran_out = ran_out || why == "ran out of eligible records";
  }
  if (r.injected == 0) {
    // a drill that injected nothing tested nothing: say why instead of reporting a clean pass
    std::string kinds;
    for (const auto& [kind, n] : r.findings_baseline) {
      kinds += (kinds.empty() ? "" : ", ") + kind + " " + std::to_string(n);
    }
    std::cerr << "memhealth drill: no fault injected: " << r.eligible << " of " << r.records
              << " records are eligible targets (records already named by a finding are not); "
                 "baseline findings: "
              << (kinds.empty() ? std::string("none") : kinds) << ". Not injected: " << untested
              << ".";
    if (ran_out && r.findings_baseline.count("stale") != 0)
      std::cerr << " Stale records under the clock " << format_timestamp(timestamp{d.now, 0})
                << ": pass --now near the store's own dates.";
    std::cerr << "\n";
    return exit_findings;
  }
  if (!untested.empty()) {
    // kinds named with --kinds must all be tested; of the default set, the ones a store cannot
    // take are reported (the exit code is the gates')
    std::cerr << "memhealth drill: not tested: " << untested << "\n";
    if (!o.kinds.empty()) {
      std::cerr << "memhealth drill: a kind named with --kinds was not injected: exit 1\n";
      return exit_findings;
    }
  }
  // the false-positive gate is on the net rate: what the injection made the detectors flag (the
  // baseline's flags are the store's own, reported beside it)
  const bool pass = r.healthy_records_changed == 0 && r.coverage >= o.min_coverage &&
                    r.false_positive_rate_net <= o.max_fpr;
  return pass ? exit_ok : exit_findings;
}

// --sweep START:END:STEP: three plain decimals (parse_plain_decimal) with START <= END, STEP > 0
// and at most 100000 thresholds. @return nullopt for anything else.
std::optional<std::array<double, 3>> parse_sweep_text(std::string_view s) {
  std::array<double, 3> v{};
  for (std::size_t k = 0; k < 3; ++k) {
    const auto colon = s.find(':');
    if ((k < 2) == (colon == std::string_view::npos)) return std::nullopt;
    const auto x = parse_plain_decimal(s.substr(0, colon), true);
    if (!x) return std::nullopt;
    v[k] = *x;
    s = k < 2 ? s.substr(colon + 1) : std::string_view{};
  }
  if (!(v[0] <= v[1] && v[2] > 0 && (v[1] - v[0]) / v[2] <= 100000)) return std::nullopt;
  return v;
}

// Validator of --sweep (parse_sweep_text), with the message shape of every numeric option.
CLI::Validator threshold_sweep_option() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        if (parse_sweep_text(s)) return {};
        return "'" + s +
               "' is not START:END:STEP with START <= END, STEP > 0 and at most 100000 steps "
               "(plain decimal notation, e.g. 0.80:0.99:0.01)";
      },
      "START:END:STEP", "sweep");
}

struct tune_cli_options {
  std::vector<std::string> files;
  std::string sweep = "0.80:0.99:0.01";
  double target_fpr = 0.02;
  double positive_at = 4.0;
  std::size_t dim = 384;
  bool no_guard = false;
  bool no_duplicate_guards = false;
  std::string format = "text";
  std::string out;
  // --judge: the claim conflict judge instead of the near-duplicate threshold
  bool judge = false;
  std::vector<int> is_a_depths{0, 1, 2, 3, 4};
  std::vector<double> frequency_ratios{1.5, 2, 3, 4, 6, 10};
  double target_precision = 0.95;
  std::string lexicon;
};

nlohmann::json row_json(const threshold_row& r) {
  return {{"threshold", r.threshold},
          {"tp", r.tp},
          {"fp", r.fp},
          {"fn", r.fn},
          {"tn", r.tn},
          {"precision", r.precision},
          {"recall", r.recall},
          {"false_positive_rate", r.false_positive_rate},
          {"f1", r.f1}};
}

nlohmann::json counts_json(const judge_counts& c) {
  return {{"tp", c.tp},
          {"fp", c.fp},
          {"fn", c.fn},
          {"tn", c.tn},
          {"reviews", c.reviews},
          {"reviews_flagged", c.reviews_flagged},
          {"precision", c.precision},
          {"recall", c.recall},
          {"false_positive_rate", c.false_positive_rate},
          {"f1", c.f1}};
}

nlohmann::json judge_row_json(const judge_row& r) {
  nlohmann::json j = counts_json(r.all);
  j["max_is_a_depth"] = r.setting.max_is_a_depth;
  j["min_frequency_ratio"] = r.setting.min_frequency_ratio;
  j["needs_human"] = r.needs_human;
  j["asymmetric"] = r.asymmetric;
  if (!r.per_category.empty()) {
    auto per = nlohmann::json::object();
    for (const auto& [name, c] : r.per_category) per[name] = counts_json(c);
    j["per_category"] = std::move(per);
  }
  return j;
}

// "depth 2, ratio 3" (the text form of a setting)
std::string setting_text(const judge_setting& s) {
  std::ostringstream t;
  t << "max_is_a_depth " << s.max_is_a_depth << ", min_frequency_ratio " << s.min_frequency_ratio;
  return t.str();
}

int run_tune_judge_command(const tune_cli_options& o) {
  tune_judge_options opt;
  opt.max_is_a_depths = o.is_a_depths;
  opt.min_frequency_ratios = o.frequency_ratios;
  opt.target_precision = o.target_precision;
  opt.lexicon = load_claim_lexicon(o.lexicon);
  const judge_setting defaults{claim_rules{}.max_is_a_depth, claim_rules{}.min_frequency_ratio};
  nlohmann::json all = nlohmann::json::array();
  std::ostringstream text;
  text << std::fixed << std::setprecision(3);
  for (const auto& file : o.files) {
    judge_pair_set set;
    try {
      set = read_judge_pairs(file);
    } catch (const error& e) {
      if (e.code() != error_code::parse) throw;
      throw error(error_code::parse,
                  file +
                      ": not a judge-pairs file: neither the judge-pair TSV (header id, lang, "
                      "category, label, a, b, note) nor SICK (header pair_ID, sentence_A, "
                      "sentence_B, relatedness_score, entailment_judgment)");
    }
    if (set.pairs.empty())
      throw error(error_code::parse,
                  file + ": a judge-pairs header but no pair to measure (" +
                      (set.skipped_lines ? skipped_text(set) : std::string("no pair line")) + ")");
    warn_about_pairs("tune", file, set);
    const auto r = tune_judge(set.pairs, opt);
    nlohmann::json j{{"file", file},
                     {"format", set.format},
                     {"pairs", r.pairs},
                     {"conflicts", r.conflicts},
                     {"no_conflicts", r.no_conflicts},
                     {"reviews", r.reviews},
                     {"fallback_pairs", r.fallback_pairs},
                     {"skipped_lines", set.skipped_lines},
                     {"skipped_line_numbers", set.skipped_line_numbers},
                     {"skipped_reasons", set.skipped_reasons},
                     {"unknown_languages", set.unknown_languages},
                     {"either_order", opt.either_order},
                     {"target_precision", r.target_precision}};
    if (!o.lexicon.empty()) j["lexicon"] = o.lexicon;
    j["defaults"] = {{"max_is_a_depth", defaults.max_is_a_depth},
                     {"min_frequency_ratio", defaults.min_frequency_ratio}};
    j["rows"] = nlohmann::json::array();
    for (const auto& row : r.rows) j["rows"].push_back(judge_row_json(row));
    j["best_f1"] = r.best_f1 ? judge_row_json(*r.best_f1) : nlohmann::json();
    j["at_target_precision"] =
        r.at_target_precision ? judge_row_json(*r.at_target_precision) : nlohmann::json();
    all.push_back(std::move(j));

    text << file << " (" << set.format << "): " << r.pairs << " pairs, " << r.conflicts
         << " conflict, " << r.no_conflicts << " no_conflict, " << r.reviews << " review; "
         << r.fallback_pairs << " read by the cue judge (claims not read)";
    if (set.skipped_lines) text << "; " << skipped_text(set);
    text << "\n  depth  ratio   precision  recall  fpr     f1      tp     fp     fn     tn"
            "  review\n";
    for (const auto& row : r.rows) {
      const auto& c = row.all;
      text << "  " << std::setw(5) << row.setting.max_is_a_depth << "  " << std::setw(6)
           << row.setting.min_frequency_ratio << "  " << std::setw(9) << c.precision << "  "
           << std::setw(6) << c.recall << "  " << std::setw(6) << c.false_positive_rate << "  "
           << std::setw(6) << c.f1 << "  " << std::setw(5) << c.tp << "  " << std::setw(5) << c.fp
           << "  " << std::setw(5) << c.fn << "  " << std::setw(5) << c.tn << "  " << std::setw(3)
           << c.reviews_flagged << "/" << c.reviews
           << (row.setting == defaults ? "  (default)" : "") << "\n";
    }
    if (r.best_f1) {
      text << "  best F1 " << r.best_f1->all.f1 << " at " << setting_text(r.best_f1->setting)
           << " (precision " << r.best_f1->all.precision << ", recall " << r.best_f1->all.recall
           << ")\n";
    }
    if (r.at_target_precision)
      text << "  most recall at precision >= " << r.target_precision << ": "
           << r.at_target_precision->all.recall << " at "
           << setting_text(r.at_target_precision->setting) << "\n";
    else
      text << "  no setting of the sweep reaches precision " << r.target_precision << "\n";
    if (r.best_f1 && !r.best_f1->per_category.empty()) {
      text << "  per category at the best F1 setting:\n"
           << "    " << std::left << std::setw(22) << "category" << std::right
           << "  precision  recall  fpr       tp    fp    fn    tn  review\n";
      // a rate without its denominator (a category of conflict pairs only has no fpr) is "-"
      auto rate = [](double v, std::size_t denominator) {
        std::ostringstream t;
        t << std::fixed << std::setprecision(3);
        if (denominator)
          t << v;
        else
          t << "-";
        return t.str();
      };
      for (const auto& [name, c] : r.best_f1->per_category)
        text << "    " << std::left << std::setw(22) << name << std::right << "  " << std::setw(9)
             << rate(c.precision, c.tp + c.fp) << "  " << std::setw(6)
             << rate(c.recall, c.tp + c.fn) << "  " << std::setw(6)
             << rate(c.false_positive_rate, c.fp + c.tn) << "  " << std::setw(4) << c.tp << "  "
             << std::setw(4) << c.fp << "  " << std::setw(4) << c.fn << "  " << std::setw(4) << c.tn
             << "  " << std::setw(3) << c.reviews_flagged << "/" << c.reviews << "\n";
    }
    if (r.best_f1 && r.best_f1->asymmetric)
      text << "  " << r.best_f1->asymmetric
           << " pair(s) judged differently in the two orders (counted as flagged)\n";
  }
  emit(o.format == "json" ? nlohmann::json{{"schema_version", 1}, {"results", all}}.dump(2)
                          : text.str(),
       o.out);
  return exit_ok;
}

int run_tune_command(const tune_cli_options& o) {
  probe_output(o.out, "--out");
  {
    std::vector<cli_file> inputs{{"--lexicon", o.lexicon}};
    for (const auto& f : o.files) inputs.push_back({"pairs", f});
    refuse_outputs_over_inputs({{"--out", o.out}}, inputs);
  }
  for (const auto& f : o.files) refuse_directory(f, "labelled pairs");
  if (o.judge) return run_tune_judge_command(o);
  const auto parts = parse_sweep_text(o.sweep);  // the option's validator refused a bad one
  if (!parts) throw error(error_code::invalid_argument, "--sweep: not START:END:STEP: " + o.sweep);
  tune_options opt;
  opt.thresholds = threshold_sweep((*parts)[0], (*parts)[1], (*parts)[2]);
  opt.target_fpr = o.target_fpr;
  opt.negation_guard = !o.no_guard;
  opt.duplicate_guards = !o.no_duplicate_guards;
  const lexical_embedder e(o.dim, 1);
  nlohmann::json all = nlohmann::json::array();
  std::ostringstream text;
  text << std::fixed << std::setprecision(3);
  for (const auto& file : o.files) {
    const auto pairs = read_labelled_pairs(file, o.positive_at);
    const auto r = tune_pairs(pairs.pairs, e, opt);
    nlohmann::json j{{"file", file},
                     {"format", pairs.format},
                     {"pairs", r.pairs},
                     {"positives", r.positives},
                     {"skipped_lines", pairs.skipped_lines},
                     {"skipped_line_numbers", pairs.skipped_line_numbers},
                     {"embedder", e.version()},
                     {"negation_guard", opt.negation_guard},
                     {"duplicate_guards", opt.duplicate_guards},
                     {"target_fpr", r.target_fpr}};
    j["rows"] = nlohmann::json::array();
    for (const auto& row : r.rows) j["rows"].push_back(row_json(row));
    j["best_f1"] = r.best_f1 ? row_json(*r.best_f1) : nlohmann::json();
    j["at_target_fpr"] = r.at_target_fpr ? row_json(*r.at_target_fpr) : nlohmann::json();
    all.push_back(std::move(j));
    text << file << " (" << pairs.format << "): " << r.pairs << " pairs, " << r.positives
         << " labelled duplicates, embedder " << e.version()
         << (opt.negation_guard ? ", negation guard on" : "")
         << (opt.duplicate_guards ? ", duplicate guards on" : "")
         << (pairs.skipped_lines ? "; " + skipped_text(pairs) : std::string())
         << "\n  threshold  precision  recall  fpr     f1      tp     fp\n";
    for (const auto& row : r.rows)
      text << "  " << std::setw(9) << row.threshold << "  " << std::setw(9) << row.precision << "  "
           << std::setw(6) << row.recall << "  " << std::setw(6) << row.false_positive_rate << "  "
           << std::setw(6) << row.f1 << "  " << std::setw(5) << row.tp << "  " << std::setw(5)
           << row.fp << "\n";
    if (r.best_f1) {
      text << "  best F1 " << r.best_f1->f1 << " at " << r.best_f1->threshold << "\n";
      // the best row at either end of the sweep: the optimum may lie outside it
      if (!r.rows.empty() && r.rows.size() > 1 &&
          (r.best_f1->threshold == r.rows.front().threshold ||
           r.best_f1->threshold == r.rows.back().threshold))
        text << "  (at the " << (r.best_f1->threshold == r.rows.front().threshold ? "low" : "high")
             << " end of the sweep: widen --sweep, the best threshold may lie beyond it)\n";
    }
    if (r.at_target_fpr)
      text << "  lowest threshold with fpr <= " << r.target_fpr << ": "
           << r.at_target_fpr->threshold << " (recall " << r.at_target_fpr->recall << ")\n";
    else
      text << "  no threshold of the sweep keeps fpr <= " << r.target_fpr << "\n";
  }
  emit(o.format == "json" ? nlohmann::json{{"schema_version", 1}, {"results", all}}.dump(2)
                          : text.str(),
       o.out);
  return exit_ok;
}

}  // namespace

void add_tune(CLI::App& app, int& rc) {
  auto o = std::make_shared<tune_cli_options>();
  auto* cmd = app.add_subcommand(
      "tune",
      "Precision, recall, false-positive rate and F1 of the near-duplicate threshold on "
      "labelled pairs (STS Benchmark, SICK), or with --judge of the claim conflict judge's "
      "settings (judge-pair TSV, SICK)");
  cmd->add_option("pairs", o->files,
                  "Labelled pair files (STS Benchmark .csv/.tsv or SICK .txt; with --judge: "
                  "judge-pair TSV or SICK)")
      ->required();
  auto* judge = cmd->add_flag("--judge", o->judge,
                              "Sweep the claim conflict judge's settings (max_is_a_depth x "
                              "min_frequency_ratio) instead of the duplicate threshold");
  // options of the duplicate-threshold sweep; not with --judge
  for (auto* opt :
       {cmd->add_option("--sweep", o->sweep, "Thresholds START:END:STEP (inclusive)")
            ->transform(threshold_sweep_option()),
        cmd->add_option("--target-fpr", o->target_fpr,
                        "Report the lowest threshold at or under this false-positive rate")
            ->transform(real_number(0, 1)),
        cmd->add_option("--positive-at", o->positive_at,
                        "Score at or above which a pair is a duplicate (STS score; "
                        "SICK relatedness of ENTAILMENT pairs)")
            ->transform(real_number(-std::numeric_limits<double>::infinity(),
                                    std::numeric_limits<double>::infinity())),
        cmd->add_option("--dim", o->dim, "Lexical embedder dimension")
            ->transform(whole_number(1, 65536)),
        cmd->add_flag("--no-negation-guard", o->no_guard,
                      "Do not drop pairs that differ by a negation or change cue"),
        cmd->add_flag("--no-duplicate-guards", o->no_duplicate_guards,
                      "Do not drop pairs the duplicate guards keep apart (numbers, roles, "
                      "polarity) or the claim judge calls a conflict")})
    opt->excludes(judge);
  // options of the judge sweep; only with --judge
  for (auto* opt :
       {cmd->add_option("--is-a-depths", o->is_a_depths,
                        "Values of max_is_a_depth to sweep (comma-separated, >= 0)")
            ->delimiter(',')
            ->transform(whole_number(0, 64)),
        cmd->add_option("--frequency-ratios", o->frequency_ratios,
                        "Values of min_frequency_ratio to sweep (comma-separated, >= 1)")
            ->delimiter(',')
            ->transform(real_number(1, 1e9)),
        cmd->add_option("--target-precision", o->target_precision,
                        "Report the setting with the most recall at or above this precision")
            ->transform(real_number(0, 1)),
        cmd->add_option("--lexicon", o->lexicon,
                        "Claim lexicon additions for the judge (TSV: cue/synonym/antonym/is_a "
                        "lines, see README)")})
    opt->needs(judge);
  cmd->add_option("--format", o->format, "Output format")->check(CLI::IsMember(text_json));
  cmd->add_option("--out", o->out, "Write the result to this file instead of stdout");
  cmd->callback([o, &rc] { rc = run_tune_command(*o); });
}

void add_drill(CLI::App& app, int& rc) {
  auto o = std::make_shared<drill_cli_options>();
  auto* cmd = app.add_subcommand(
      "drill",
      "Inject known faults into a copy of a store, then detect, plan and apply; report coverage, "
      "false-positive rate, repair success and harm (the store itself is never changed)");
  cmd->add_option("store", o->store, "Store (JSONL or sqlite:PATH)")->required();
  cmd->add_option("--seed", o->seed, "Random seed (same seed, same drill)")
      ->transform(whole_number());
  cmd->add_option("--rate", o->rate, "Share of eligible records given each fault kind, in (0, 1]")
      ->transform(real_number(0, 1, open_ends::low));
  cmd->add_option("--kinds", o->kinds, "Fault kinds to inject (comma-separated; default: all)")
      ->delimiter(',');
  cmd->add_option("--format", o->format, "Output format")->check(CLI::IsMember(text_json));
  cmd->add_option("--out", o->out, "Write the result to this file instead of stdout");
  cmd->add_option("--default", o->defaults,
                  "Metadata default for fill_metadata_defaults, KEY=VALUE (repeatable)");
  cmd->add_option("--min-coverage", o->min_coverage, "Exit 1 when coverage is below this")
      ->transform(real_number(0, 1));
  cmd->add_option("--max-fpr", o->max_fpr,
                  "Exit 1 when the false-positive rate net of the baseline (untouched records "
                  "flagged in the drilled copy and not on the original) is above this")
      ->transform(real_number(0, 1));
  cmd->add_option("--pairs", o->pairs,
                  "Labelled text pairs to inject as paraphrased duplicates and free-text "
                  "contradictions (judge-pair TSV: category paraphrase / label conflict; SICK: "
                  "CONTRADICTION rows only; repeatable; default: the built-in "
                  "tests/data/judge_pairs rows)");
  add_detection_options(cmd, o->detect);
  add_embedder_options(cmd, o->detect, false);  // model access: add_detection_options
  cmd->get_option("--embedder")
      ->description(
          "The store's embedding model, lexical:DIM[:SEED] or openai:URL (with "
          "--embedding-model): it embeds the injected paraphrases and contradictions (when it "
          "reproduces the store's vectors; else the drill says so) and records without a vector");
  cmd->callback([o, &rc] { rc = run_drill_command(*o); });
}

}  // namespace memhealth::cli
