#pragma once
/// @file tune_judge.hpp
/// Tuning the claim conflict judge (`claim_conflict_judge<>`, claim_judge.hpp) on labelled pairs:
/// precision, recall, false-positive rate and F1 of the judge for every combination of the
/// numeric settings of `claim_rules` (`max_is_a_depth` x `min_frequency_ratio`), per category
/// when the file has categories, and the settings that maximise F1 or reach a target precision.
/// `claim_rules` has no other numeric or boolean setting (its `lexicon` is given once, not swept).
///
/// ## Labelled pairs
/// - **judge-pair TSV** (tests/data/judge_pairs/pairs.tsv): header `id lang category label a b
///   note` (tab-separated; `note` optional), label `conflict`, `no_conflict` or `review`. Review
///   rows (a real ambiguity: a lasting state against a one-off event, one appointment at two
///   times) are counted apart: neither a positive nor a negative.
/// - **SICK** (Marelli et al., LREC 2014): header `pair_ID sentence_A sentence_B
///   relatedness_score entailment_judgment`; CONTRADICTION is a conflict, ENTAILMENT and NEUTRAL
///   are not. SICK has no categories.
/// The format is recognised from the header (the first non-empty line; a UTF-8 byte-order mark
/// before it is skipped). Lines with too few
/// columns, an empty statement or an unknown label (labels are case-sensitive: `CONFLICT` is
/// none) are counted in `skipped_lines` and left out, the first ones with their reasons
/// (`skipped_reasons`); languages other than en and zh are listed (`unknown_languages`). The
/// category is free text (each is measured on its own).
///
/// ## The rule being measured
/// A pair is flagged when the judge's verdict is a conflict (`conflict_verdict::conflict`,
/// whether or not it `needs_human`). With `either_order` (the default) a pair is flagged when the
/// judge calls it a conflict in either order (a, b) or (b, a): candidate pairs reach the judge
/// in store order, which says nothing about the pair; `judge_row::asymmetric` counts the pairs on
/// which the two orders disagree (0 for a symmetric judge). Exactly as `claim_conflict_judge`:
/// texts whose normalised forms are equal are no conflict; a pair either of whose texts the
/// extractor cannot read is decided by the fallback cue judge (`default_conflict_judge`), whose
/// verdict does not depend on the swept settings (`judge_tune_result::fallback_pairs` counts
/// them). Each text is read into claims once; only the rules run once per setting.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memhealth/audit/tune.hpp"
#include "memhealth/config.hpp"
#include "memhealth/detect/claim_judge.hpp"
#include "memhealth/io/read_file.hpp"
#include "memhealth/record/memory_record.hpp"
#include "memhealth/text/normalize.hpp"

namespace memhealth {

/// The label of a judge pair: should the conflict judge call it a conflict?
enum class judge_label : std::uint8_t {
  no_conflict,  ///< both statements can hold at once (a negative)
  conflict,     ///< they cannot both hold for one holder now (a positive)
  review,       ///< a real ambiguity: reported apart, neither positive nor negative
};

/// Text of a label: "no_conflict", "conflict", "review" (the judge-pair TSV's words).
constexpr std::string_view to_string(judge_label l) noexcept {
  constexpr std::string_view names[] = {"no_conflict", "conflict", "review"};
  return names[static_cast<std::size_t>(l)];
}

/// One labelled pair for the conflict judge.
struct judge_pair {
  std::string id;        ///< the file's id (judge-pair TSV `id`, SICK `pair_ID`)
  std::string category;  ///< judge-pair TSV `category` ("antonym", "paraphrase"); "" for SICK
  judge_label label = judge_label::no_conflict;  ///< the label
  std::string a;                                 ///< first statement (UTF-8)
  std::string b;                                 ///< second statement
};

/// Pairs read from one file.
struct judge_pair_set {
  std::string format;             ///< "judge_pairs" or "sick"
  std::vector<judge_pair> pairs;  ///< in file order
  std::size_t skipped_lines = 0;  ///< lines with too few columns or an unknown label
  /// Line numbers (1-based, in the file) of the first `max_skipped_line_numbers` skipped lines.
  std::vector<std::size_t> skipped_line_numbers;
  /// Why each line of `skipped_line_numbers` was skipped ("label 'CONFLICT' is not conflict,
  /// no_conflict or review", "3 columns, 6 needed"), in the same order.
  std::vector<std::string> skipped_reasons;
  /// Languages of the judge-pair TSV's `lang` column other than "en" and "zh" (the languages the
  /// claim extractor reads), sorted, each once: their pairs are kept and measured, but the judge
  /// reads them as it can. Empty for SICK.
  std::vector<std::string> unknown_languages;
};

/// Parses judge-pair TSV or SICK text (see the file comment).
/// @throws memhealth::error(parse) when the first non-empty line is neither header (an empty
///         text included).
inline judge_pair_set parse_judge_pairs(std::string_view text) {
  judge_pair_set out;
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // a UTF-8 byte-order mark
  std::size_t pos = 0, line_no = 0;
  std::string_view line;
  while (detail::tune::next_line(text, pos, line, line_no)) {
    const auto cols = detail::tune::split_tabs(line);
    if (out.format.empty()) {
      if (cols.size() >= 6 && cols[0] == "id" && cols[2] == "category" && cols[3] == "label" &&
          cols[4] == "a" && cols[5] == "b") {
        out.format = "judge_pairs";
      } else if (cols.size() >= 5 && cols[0] == "pair_ID" && cols[1] == "sentence_A" &&
                 cols[4] == "entailment_judgment") {
        out.format = "sick";
      } else {
        break;
      }
      continue;
    }
    judge_pair p;
    auto skip = [&](std::string why) {
      if (out.skipped_line_numbers.size() < max_skipped_line_numbers)
        out.skipped_reasons.push_back(std::move(why));
      detail::tune::skip_line(out, line_no);
    };
    auto quoted = [](std::string_view v) {
      return "'" + std::string(v.substr(0, 40)) + (v.size() > 40 ? "...'" : "'");
    };
    if (out.format == "judge_pairs") {
      if (cols.size() < 6) {
        skip(std::to_string(cols.size()) + (cols.size() == 1 ? " column" : " columns") +
             ", 6 needed (id, lang, category, label, a, b)");
        continue;
      }
      if (cols[4].empty() || cols[5].empty()) {
        skip(std::string("empty statement ") + (cols[4].empty() ? "a" : "b"));
        continue;
      }
      if (cols[3] == "conflict")
        p.label = judge_label::conflict;
      else if (cols[3] == "no_conflict")
        p.label = judge_label::no_conflict;
      else if (cols[3] == "review")
        p.label = judge_label::review;
      else {
        skip("label " + quoted(cols[3]) + " is not conflict, no_conflict or review");
        continue;
      }
      if (cols[1] != "en" && cols[1] != "zh") {
        const std::string lang(cols[1]);
        const auto at =
            std::lower_bound(out.unknown_languages.begin(), out.unknown_languages.end(), lang);
        if (at == out.unknown_languages.end() || *at != lang)
          out.unknown_languages.insert(at, lang);
      }
      p.id = std::string(cols[0]);
      p.category = std::string(cols[2]);
      p.a = std::string(cols[4]);
      p.b = std::string(cols[5]);
    } else {
      if (cols.size() < 5) {
        skip(std::to_string(cols.size()) + (cols.size() == 1 ? " column" : " columns") +
             ", 5 needed (pair_ID, sentence_A, sentence_B, relatedness_score, "
             "entailment_judgment)");
        continue;
      }
      if (cols[1].empty() || cols[2].empty()) {
        skip(std::string("empty sentence ") + (cols[1].empty() ? "A" : "B"));
        continue;
      }
      if (cols[4] != "CONTRADICTION" && cols[4] != "ENTAILMENT" && cols[4] != "NEUTRAL") {
        skip("entailment_judgment " + quoted(cols[4]) +
             " is not CONTRADICTION, ENTAILMENT or NEUTRAL");
        continue;
      }
      p.id = std::string(cols[0]);
      p.label = cols[4] == "CONTRADICTION" ? judge_label::conflict : judge_label::no_conflict;
      p.a = std::string(cols[1]);
      p.b = std::string(cols[2]);
    }
    out.pairs.push_back(std::move(p));
  }
  if (out.format.empty())
    throw error(error_code::parse,
                "judge pairs: neither the judge-pair TSV (header id, lang, category, label, a, b, "
                "note) nor SICK (header pair_ID, sentence_A, sentence_B, relatedness_score, "
                "entailment_judgment)");
  return out;
}

/// Reads a judge-pairs file. @throws memhealth::error(io) when unreadable; see
/// `parse_judge_pairs` for the rest.
inline judge_pair_set read_judge_pairs(const std::filesystem::path& file) {
  return parse_judge_pairs(detail::read_whole_file(file));
}

/// One combination of the swept `claim_rules` settings.
struct judge_setting {
  int max_is_a_depth = 2;            ///< `claim_rules::max_is_a_depth` (hypernym steps, >= 0)
  double min_frequency_ratio = 3.0;  ///< `claim_rules::min_frequency_ratio` (>= 1)
  /// Equality of both settings.
  friend bool operator==(const judge_setting&, const judge_setting&) = default;
};

/// Confusion counts and rates of the judge on a set of pairs.
struct judge_counts {
  std::size_t tp = 0;               ///< conflict pairs flagged
  std::size_t fp = 0;               ///< no_conflict pairs flagged
  std::size_t fn = 0;               ///< conflict pairs not flagged
  std::size_t tn = 0;               ///< no_conflict pairs not flagged
  std::size_t reviews = 0;          ///< review pairs (not in the four counts above)
  std::size_t reviews_flagged = 0;  ///< review pairs flagged
  double precision = 1;  ///< tp / (tp + fp); 1 when nothing is flagged (no false claim made)
  double recall = 0;     ///< tp / (tp + fn); 0 without conflict pairs
  double false_positive_rate = 0;  ///< fp / (fp + tn); 0 without no_conflict pairs
  double f1 = 0;                   ///< harmonic mean of precision and recall; 0 when tp = 0
};

/// The judge's figures at one setting.
struct judge_row {
  judge_setting setting;  ///< the settings of this row
  judge_counts all;       ///< over every pair
  /// Per category (judge-pair TSV), keyed by category; empty when no pair has a category.
  std::map<std::string, judge_counts> per_category;
  std::size_t needs_human = 0;  ///< flagged pairs (any label) whose verdict needs a person
  std::size_t asymmetric = 0;   ///< pairs whose two orders disagree (`either_order` only)
};

/// Result of a judge sweep.
struct judge_tune_result {
  std::size_t pairs = 0;           ///< pairs judged (all labels)
  std::size_t conflicts = 0;       ///< of which labelled conflict (positives)
  std::size_t no_conflicts = 0;    ///< labelled no_conflict (negatives)
  std::size_t reviews = 0;         ///< labelled review (counted apart)
  std::size_t fallback_pairs = 0;  ///< pairs the extractor cannot read (the cue judge decides)
  std::vector<judge_row> rows;     ///< one per setting: depths outer, ratios inner, as given
  /// The row with the highest F1 (ties: the first in sweep order); nullopt without rows.
  std::optional<judge_row> best_f1;
  /// The row with the most recall among those with precision >= `target_precision` and at least
  /// one pair flagged (ties: the higher F1, then the first); nullopt when none reaches it.
  std::optional<judge_row> at_target_precision;
  double target_precision = 0.95;  ///< the target used
};

/// Options of `tune_judge`.
struct tune_judge_options {
  std::vector<int> max_is_a_depths{0, 1, 2, 3, 4};  ///< values of `max_is_a_depth` (>= 0)
  std::vector<double> min_frequency_ratios{1.5, 2, 3,
                                           4,   6, 10};  ///< values of `min_frequency_ratio` (>= 1)
  double target_precision = 0.95;  ///< target for `at_target_precision`, in [0, 1]
  bool either_order = true;        ///< flag a pair judged a conflict in either order
  /// The user's claim lexicon (as `claim_conflict_judge::lexicon`); null = the built-in one.
  std::shared_ptr<const claim_lexicon> lexicon{};
  text_normalizer normalizer{};  ///< the detector's normaliser (identical-text test, cue judge)
};

namespace detail::tune {
inline void finish(judge_counts& c) {
  auto ratio = [](std::size_t a, std::size_t b, double none) {
    return b ? static_cast<double>(a) / static_cast<double>(b) : none;
  };
  c.precision = ratio(c.tp, c.tp + c.fp, 1.0);
  c.recall = ratio(c.tp, c.tp + c.fn, 0.0);
  c.false_positive_rate = ratio(c.fp, c.fp + c.tn, 0.0);
  c.f1 = c.tp > 0 ? 2 * c.precision * c.recall / (c.precision + c.recall) : 0.0;
}
inline void count(judge_counts& c, judge_label l, bool flagged) {
  switch (l) {
    case judge_label::conflict:
      ++(flagged ? c.tp : c.fn);
      break;
    case judge_label::no_conflict:
      ++(flagged ? c.fp : c.tn);
      break;
    case judge_label::review:
      ++c.reviews;
      c.reviews_flagged += flagged ? 1 : 0;
      break;
  }
}
}  // namespace detail::tune

/// Judges every pair at every setting of the sweep (see the file comment for the rule).
/// @throws memhealth::error(invalid_argument) when a sweep list is empty, a depth is negative, a
///         ratio is not finite or below 1, or `target_precision` is outside [0, 1]. Never throws
///         on any text.
/// @complexity O(pairs x extraction) once, then O(pairs x settings x rule cost).
inline judge_tune_result tune_judge(std::span<const judge_pair> pairs,
                                    const tune_judge_options& opt = {}) {
  if (opt.max_is_a_depths.empty() || opt.min_frequency_ratios.empty())
    throw error(error_code::invalid_argument, "judge sweep: empty list of settings");
  for (int d : opt.max_is_a_depths)
    if (d < 0) throw error(error_code::invalid_argument, "judge sweep: max_is_a_depth < 0");
  for (double r : opt.min_frequency_ratios)
    if (!(std::isfinite(r) && r >= 1))
      throw error(error_code::invalid_argument,
                  "judge sweep: min_frequency_ratio must be finite and >= 1");
  if (!(opt.target_precision >= 0 && opt.target_precision <= 1))
    throw error(error_code::invalid_argument, "judge sweep: target precision outside [0, 1]");

  judge_tune_result r;
  r.pairs = pairs.size();
  r.target_precision = opt.target_precision;
  claim_conflict_judge<> judge;
  judge.lexicon = opt.lexicon;
  // per pair: a verdict fixed for every setting (identical text, the fallback) or both analyses
  struct prepared {
    std::optional<std::pair<conflict_verdict, conflict_verdict>> fixed;
    claim_analysis a, b;
  };
  std::vector<prepared> prep(pairs.size());
  bool categories = false;
  for (std::size_t k = 0; k < pairs.size(); ++k) {
    const auto& p = pairs[k];
    categories = categories || !p.category.empty();
    (p.label == judge_label::conflict      ? r.conflicts
     : p.label == judge_label::no_conflict ? r.no_conflicts
                                           : r.reviews) += 1;
    const std::string na = opt.normalizer(p.a), nb = opt.normalizer(p.b);
    if (na == nb) {
      const conflict_verdict v{false, false, "identical_text"};
      prep[k].fixed.emplace(v, v);
      continue;
    }
    prep[k].a = judge.read(p.a);
    prep[k].b = judge.read(p.b);
    if (!prep[k].a.parsed() || !prep[k].b.parsed()) {
      memory_record ra, rb;
      ra.content = p.a;
      rb.content = p.b;
      prep[k].fixed.emplace(judge.fallback(ra, na, rb, nb, 1.0f),
                            judge.fallback(rb, nb, ra, na, 1.0f));
      ++r.fallback_pairs;
    }
  }
  for (int depth : opt.max_is_a_depths)
    for (double ratio : opt.min_frequency_ratios) {
      judge_row row;
      row.setting = {depth, ratio};
      claim_rules rules = judge.rules;
      rules.lexicon = opt.lexicon ? opt.lexicon.get() : judge.rules.lexicon;
      rules.max_is_a_depth = depth;
      rules.min_frequency_ratio = ratio;
      for (std::size_t k = 0; k < pairs.size(); ++k) {
        const auto& p = pairs[k];
        const auto& q = prep[k];
        conflict_verdict ab, ba;
        if (q.fixed) {
          ab = q.fixed->first;
          ba = q.fixed->second;
        } else {
          ab = rules(q.a, q.b);
          if (opt.either_order) ba = rules(q.b, q.a);
        }
        bool flagged = ab.conflict;
        bool human = ab.conflict && ab.needs_human;
        if (opt.either_order) {
          row.asymmetric += ab.conflict != ba.conflict ? 1 : 0;
          if (!ab.conflict && ba.conflict) human = ba.needs_human;
          flagged = flagged || ba.conflict;
        }
        row.needs_human += human ? 1 : 0;
        detail::tune::count(row.all, p.label, flagged);
        if (categories) detail::tune::count(row.per_category[p.category], p.label, flagged);
      }
      detail::tune::finish(row.all);
      for (auto& [name, c] : row.per_category) detail::tune::finish(c);
      r.rows.push_back(std::move(row));
    }
  for (const auto& row : r.rows) {
    if (!r.best_f1 || row.all.f1 > r.best_f1->all.f1) r.best_f1 = row;
    const std::size_t flagged = row.all.tp + row.all.fp;
    if (flagged > 0 && row.all.precision >= opt.target_precision &&
        (!r.at_target_precision || row.all.recall > r.at_target_precision->all.recall ||
         (row.all.recall == r.at_target_precision->all.recall &&
          row.all.f1 > r.at_target_precision->all.f1)))
      r.at_target_precision = row;
  }
  return r;
}

}  // namespace memhealth
