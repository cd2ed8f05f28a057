#pragma once
/// @file tune.hpp
/// Threshold tuning on labelled sentence pairs: precision, recall, false-positive rate and F1 of
/// the near-duplicate rule "cosine >= t" for every t of a sweep, and the thresholds that maximise
/// F1 or meet a target false-positive rate. Run it with the embedder the store uses: cosine
/// scales differ between models (the lexical embedder scores paraphrases lower than a sentence
/// model), so a threshold tuned for one model does not carry over to another.
///
/// ## Labelled pairs
/// - **STS Benchmark** (Cer et al., SemEval-2017 Task 1): tab-separated `genre, file, year, id,
///   score, sentence1, sentence2 [, ...]`, score 0-5. A pair is a duplicate when score >= 4.0
///   (`positive_at`): the STS guideline's 4 is "mostly equivalent, unimportant details differ".
/// - **SICK** (Marelli et al., LREC 2014): header `pair_ID sentence_A sentence_B
///   relatedness_score entailment_judgment`. A pair is a duplicate when it is ENTAILMENT with
///   relatedness >= `positive_at`; CONTRADICTION pairs (often one negation apart) are the
///   negatives a duplicate detector must not merge.
/// The format is recognised from the first line. Malformed lines are counted and skipped.
///
/// ## The rule being tuned
/// As in `duplicate_detector`: a pair is flagged when cosine >= t and, with `negation_guard` (the
/// detector's `skip_negation_mismatch`, on by default), its two texts do not differ by a negation
/// or change cue (conflict_judge.hpp), and, with `duplicate_guards` (the detector's
/// `skip_guarded` and `skip_judged_conflicts`, on by default), no duplicate guard keeps them apart
/// (numbers, dates or times differ, roles swapped, opposite polarity: duplicate_guards.hpp) and
/// `claim_conflict_judge<>` does not call them a conflict. Pairs whose normalised texts are equal
/// are exact duplicates and flagged at every threshold.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/detect/claim_judge.hpp"
#include "memhealth/detect/conflict_judge.hpp"
#include "memhealth/detect/duplicate_guards.hpp"
#include "memhealth/embed/embedder.hpp"
#include "memhealth/io/read_file.hpp"
#include "memhealth/record/memory_record.hpp"
#include "memhealth/text/normalize.hpp"

namespace memhealth {

/// One labelled sentence pair.
struct labelled_pair {
  std::string a;           ///< first text (UTF-8)
  std::string b;           ///< second text
  bool duplicate = false;  ///< the label: should a duplicate detector flag this pair?
  double score = 0;        ///< the dataset's graded score (STS 0-5, SICK relatedness 1-5)
  std::string label;       ///< SICK entailment judgment; empty for STS
};

/// Pairs read from one file.
struct labelled_pairs {
  std::string format;                ///< "sts" or "sick"
  std::vector<labelled_pair> pairs;  ///< in file order
  std::size_t skipped_lines = 0;     ///< malformed lines (wrong column count, bad score)
  /// Line numbers (1-based, in the file) of the first `max_skipped_line_numbers` skipped lines.
  std::vector<std::size_t> skipped_line_numbers;
};

/// How many skipped line numbers the pair readers keep (`skipped_line_numbers`).
inline constexpr std::size_t max_skipped_line_numbers = 10;

namespace detail::tune {
inline std::vector<std::string_view> split_tabs(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (;;) {
    const auto tab = line.find('\t', start);
    out.push_back(
        line.substr(start, tab == std::string_view::npos ? std::string_view::npos : tab - start));
    if (tab == std::string_view::npos) return out;
    start = tab + 1;
  }
}

// The next non-empty line of `text` at or after `pos` (a final '\r' dropped) in `line`; `pos`
// moves past it and `number` counts the lines read, so it is `line`'s number (1-based; start it
// at 0 with `pos` at 0). @return false at the end of the text.
inline bool next_line(std::string_view text, std::size_t& pos, std::string_view& line,
                      std::size_t& number) {
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.empty()) return true;
  }
  return false;
}
// Counts a skipped line, keeping the first numbers.
template <class Set>
void skip_line(Set& out, std::size_t number) {
  ++out.skipped_lines;
  if (out.skipped_line_numbers.size() < max_skipped_line_numbers)
    out.skipped_line_numbers.push_back(number);
}
inline std::optional<double> number(std::string_view s) {
  std::string t(s);
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (t.empty() || end != t.c_str() + t.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}
}  // namespace detail::tune

/// Parses STS Benchmark or SICK text (see the file comment).
/// @param positive_at score at or above which a pair is a duplicate (STS score; SICK relatedness
///        of an ENTAILMENT pair).
/// @throws memhealth::error(parse) when the text is in neither format (first line checked).
inline labelled_pairs parse_labelled_pairs(std::string_view text, double positive_at = 4.0) {
  labelled_pairs out;
  bool first = true;
  std::size_t pos = 0, line_no = 0;
  std::string_view line;
  while (detail::tune::next_line(text, pos, line, line_no)) {
    const auto cols = detail::tune::split_tabs(line);
    if (first) {
      first = false;
      if (cols.size() >= 5 && cols[0] == "pair_ID" && cols[1] == "sentence_A") {
        out.format = "sick";
        continue;
      }
      if (cols.size() >= 7 && detail::tune::number(cols[4])) {
        out.format = "sts";
      } else {
        throw error(error_code::parse,
                    "labelled pairs: neither STS Benchmark (7 tab-separated columns, score in "
                    "column 5) nor SICK "
                    "(header pair_ID, sentence_A, ...)");
      }
    }
    labelled_pair p;
    if (out.format == "sts") {
      const auto s = cols.size() >= 7 ? detail::tune::number(cols[4]) : std::nullopt;
      if (!s) {
        detail::tune::skip_line(out, line_no);
        continue;
      }
      p = {std::string(cols[5]), std::string(cols[6]), *s >= positive_at, *s, {}};
    } else {
      const auto s = cols.size() >= 5 ? detail::tune::number(cols[3]) : std::nullopt;
      if (!s) {
        detail::tune::skip_line(out, line_no);
        continue;
      }
      p = {std::string(cols[1]), std::string(cols[2]), cols[4] == "ENTAILMENT" && *s >= positive_at,
           *s, std::string(cols[4])};
    }
    out.pairs.push_back(std::move(p));
  }
  return out;
}

/// Reads a labelled-pairs file. @throws memhealth::error(io) when unreadable; see
/// `parse_labelled_pairs` for the rest.
inline labelled_pairs read_labelled_pairs(const std::filesystem::path& file,
                                          double positive_at = 4.0) {
  return parse_labelled_pairs(detail::read_whole_file(file), positive_at);
}

/// Confusion counts and rates at one threshold.
struct threshold_row {
  double threshold = 0;                        ///< cosine threshold t
  std::size_t tp = 0, fp = 0, fn = 0, tn = 0;  ///< confusion counts
  double precision = 0;  ///< tp / (tp + fp); 1 when nothing is flagged (no false claim made)
  double recall = 0;     ///< tp / (tp + fn); 0 without positives
  double false_positive_rate = 0;  ///< fp / (fp + tn); 0 without negatives
  double f1 = 0;                   ///< harmonic mean of precision and recall; 0 when both are 0
};

/// Result of a sweep.
struct tune_result {
  std::size_t pairs = 0, positives = 0;  ///< pairs scored, of which labelled duplicates
  std::vector<threshold_row> rows;       ///< one per threshold, ascending
  std::optional<threshold_row>
      best_f1;  ///< the row with the highest F1 (ties: the higher threshold)
  /// The lowest threshold whose false-positive rate is <= the target (the most recall under it).
  std::optional<threshold_row> at_target_fpr;
  double target_fpr = 0.02;  ///< the target used
};

/// Thresholds start, start + step, ..., end (inclusive; computed as start + k step, no drift).
/// @throws memhealth::error(invalid_argument) unless step > 0, start <= end, and all are finite.
inline std::vector<double> threshold_sweep(double start, double end, double step) {
  if (!(std::isfinite(start) && std::isfinite(end) && std::isfinite(step) && step > 0 &&
        start <= end))
    throw error(error_code::invalid_argument, "sweep: need finite start <= end and step > 0");
  const auto n = static_cast<std::size_t>(std::floor((end - start) / step + 1e-9)) + 1;
  std::vector<double> t(n);
  for (std::size_t k = 0; k < n; ++k)
    t[k] = std::round((start + static_cast<double>(k) * step) * 1e9) / 1e9;
  return t;
}

/// Metrics of "flag when score >= t" for each threshold.
/// @param scores per pair: the similarity (use +infinity for always flagged, -infinity for never).
/// @param labels per pair: nonzero = duplicate. Same length as `scores`.
/// @param thresholds ascending or not; rows come back in the given order.
/// @throws memhealth::error(invalid_argument) when the spans differ in length.
inline tune_result sweep_thresholds(std::span<const double> scores,
                                    std::span<const std::uint8_t> labels,
                                    std::span<const double> thresholds, double target_fpr = 0.02) {
  if (scores.size() != labels.size())
    throw error(error_code::invalid_argument, "sweep: scores and labels differ in length");
  tune_result r;
  r.pairs = scores.size();
  r.target_fpr = target_fpr;
  for (auto l : labels) r.positives += l != 0;
  for (double t : thresholds) {
    threshold_row row;
    row.threshold = t;
    for (std::size_t i = 0; i < scores.size(); ++i) {
      const bool flagged = scores[i] >= t;
      const bool pos = labels[i] != 0;
      (flagged ? (pos ? row.tp : row.fp) : (pos ? row.fn : row.tn)) += 1;
    }
    auto ratio = [](std::size_t a, std::size_t b, double none) {
      return b ? static_cast<double>(a) / static_cast<double>(b) : none;
    };
    row.precision = ratio(row.tp, row.tp + row.fp, 1.0);
    row.recall = ratio(row.tp, row.tp + row.fn, 0.0);
    row.false_positive_rate = ratio(row.fp, row.fp + row.tn, 0.0);
    row.f1 = row.precision + row.recall > 0 && row.tp > 0
                 ? 2 * row.precision * row.recall / (row.precision + row.recall)
                 : 0.0;
    r.rows.push_back(row);
  }
  for (const auto& row : r.rows) {
    if (!r.best_f1 || row.f1 > r.best_f1->f1 ||
        (row.f1 == r.best_f1->f1 && row.threshold > r.best_f1->threshold))
      r.best_f1 = row;
    if (row.false_positive_rate <= target_fpr &&
        (!r.at_target_fpr || row.threshold < r.at_target_fpr->threshold))
      r.at_target_fpr = row;
  }
  return r;
}

/// Options of `tune_pairs`.
struct tune_options {
  std::vector<double> thresholds = threshold_sweep(0.80, 0.99, 0.01);  ///< the sweep
  double target_fpr = 0.02;    ///< target false-positive rate for `at_target_fpr`
  bool negation_guard = true;  ///< as `duplicate_detector::skip_negation_mismatch`
  /// As `duplicate_detector::skip_guarded` and `skip_judged_conflicts` together (the default
  /// judge, built-in lexicon).
  bool duplicate_guards = true;
  text_normalizer normalizer{};  ///< the detector's normaliser (exact-duplicate test, cues)
};

/// Embeds both texts of every pair with `e`, scores them by cosine with the detector's rule (see
/// the file comment) and sweeps the thresholds.
/// @throws what `e.embed` throws; memhealth::error(invalid_argument) for a bad option.
/// @complexity O(pairs x embedding cost x 2 + pairs x thresholds).
template <embedder E>
tune_result tune_pairs(std::span<const labelled_pair> pairs, const E& e,
                       const tune_options& opt = {}) {
  const std::size_t d = e.dimension();
  std::vector<float> va(d), vb(d);
  std::vector<double> scores;
  std::vector<std::uint8_t> labels;
  scores.reserve(pairs.size());
  for (const auto& p : pairs) {
    const std::string na = opt.normalizer(p.a), nb = opt.normalizer(p.b);
    double s;
    if (na == nb) {
      s = std::numeric_limits<double>::infinity();
    } else {
      e.embed(p.a, std::span<float>(va));
      e.embed(p.b, std::span<float>(vb));
      double dot = 0, aa = 0, bb = 0;
      for (std::size_t k = 0; k < d; ++k) {
        dot += static_cast<double>(va[k]) * vb[k];
        aa += static_cast<double>(va[k]) * va[k];
        bb += static_cast<double>(vb[k]) * vb[k];
      }
      s = aa > 0 && bb > 0 ? dot / std::sqrt(aa * bb) : 0.0;
      if (opt.negation_guard) {
        const auto ca = detail::cue::analyse(na, p.a, {});
        const auto cb = detail::cue::analyse(nb, p.b, {});
        if ((ca.negation || ca.change) != (cb.negation || cb.change))
          s = -std::numeric_limits<double>::infinity();
      }
      if (opt.duplicate_guards && s > -std::numeric_limits<double>::infinity()) {
        memory_record ra, rb;
        ra.content = p.a;
        rb.content = p.b;
        if (near_duplicate_guard(na, nb) != duplicate_guard::none ||
            keeps_apart(claim_conflict_judge<>{}(ra, na, rb, nb, static_cast<float>(s))))
          s = -std::numeric_limits<double>::infinity();
      }
    }
    scores.push_back(s);
    labels.push_back(p.duplicate ? 1 : 0);
  }
  return sweep_thresholds(scores, labels, opt.thresholds, opt.target_fpr);
}

}  // namespace memhealth
