#pragma once
/// @file drill_pairs.hpp
/// The real text a fault drill injects (drill.hpp): labelled pairs of memory statements, one set
/// of paraphrases (the two statements say the same thing: a duplicate detector should merge them)
/// and one of contradictions (they cannot both hold: the conflict detector should flag them), and
/// the Wilson score interval the drill reports its rates with.
///
/// ## Where the pairs come from
/// - **Built in** (`builtin_drill_pairs`, the default): the `paraphrase` rows (42) and the
///   `conflict` rows (505) of the four hand-written judge-pair sets in tests/data/judge_pairs/
///   (pairs.tsv, dev_pairs.tsv, dev_pairs_c.tsv, heldout_c.tsv; CC0-1.0), compiled into the
///   header drill_pairs_data.hpp by scripts/gen_drill_pairs.py. Compiled in because the library is
///   header-only and the installed tool has no data directory: a drill in any program, and the
///   tool run from any folder, injects the same text, so `--seed` stays reproducible and the
///   golden test does not depend on where it runs. The claim judge's rules were developed
///   against these sets (issue 18), so the coverage they give for contradictions is optimistic
///   for text the rules have not seen; give an unseen set with `drill_pairs_from` (the tool's
///   `--pairs FILE`).
/// - **From a file** (`read_drill_pairs`): judge-pair TSV (paraphrases = rows of category
///   `paraphrase`; contradictions = rows labelled `conflict`) or SICK (contradictions =
///   CONTRADICTION rows; SICK has no paraphrase label, entailment being one-way, so it gives no
///   paraphrases).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "memhealth/audit/drill_pairs_data.hpp"
#include "memhealth/audit/tune_judge.hpp"

namespace memhealth {

/// One labelled pair of memory statements.
struct drill_text_pair {
  std::string id;        ///< the source's id ("en-par-001", a SICK pair_ID)
  std::string category;  ///< the source's category ("paraphrase", "antonym", ...; "" for SICK)
  std::string a;         ///< first statement (UTF-8); the drill writes it into the host record
  std::string b;         ///< second statement; the drill writes it into the injected copy
};

/// The pairs a drill draws its paraphrased duplicates and free-text contradictions from.
struct drill_pairs {
  std::vector<drill_text_pair> paraphrases;     ///< pairs that say the same thing
  std::vector<drill_text_pair> contradictions;  ///< pairs that cannot both hold
  std::string source;  ///< where they came from, for the report ("built-in: ...", file names)
};

/// Appends the paraphrases and contradictions of a judge-pair set (see the file comment: which
/// rows count as which) to `out`, and `name` to its source. Other rows are left out.
inline void add_drill_pairs(drill_pairs& out, const judge_pair_set& set, const std::string& name) {
  for (const auto& p : set.pairs) {
    drill_text_pair t{p.id, p.category, p.a, p.b};
    if (set.format == "judge_pairs" && p.category == "paraphrase")
      out.paraphrases.push_back(std::move(t));
    else if (p.label == judge_label::conflict)
      out.contradictions.push_back(std::move(t));
  }
  out.source += (out.source.empty() ? "" : ", ") + name;
}

/// Reads one judge-pair TSV or SICK file into drill pairs (see the file comment).
/// @throws memhealth::error(io) when unreadable; error(parse) when it is neither format.
inline drill_pairs read_drill_pairs(const std::filesystem::path& file) {
  drill_pairs out;
  add_drill_pairs(out, read_judge_pairs(file), file.string());
  return out;
}

/// The built-in pairs (see the file comment): 42 paraphrases and 505 contradictions, in the
/// order of drill_pairs_data.hpp. Built once; the reference stays valid for the program's life.
inline const drill_pairs& builtin_drill_pairs() {
  static const drill_pairs pairs = [] {
    drill_pairs p;
    for (const auto& r : detail::drill::builtin_pair_rows) {
      drill_text_pair t{std::string(r.id), std::string(r.category), std::string(r.a),
                        std::string(r.b)};
      if (r.category == "paraphrase")
        p.paraphrases.push_back(std::move(t));
      else if (r.label == "conflict")
        p.contradictions.push_back(std::move(t));
    }
    p.source = "built-in: tests/data/judge_pairs/{pairs,dev_pairs,dev_pairs_c,heldout_c}.tsv (" +
               std::to_string(p.paraphrases.size()) + " paraphrases, " +
               std::to_string(p.contradictions.size()) + " contradictions)";
    return p;
  }();
  return pairs;
}

/// A two-sided confidence interval of a proportion, both ends in [0, 1].
struct proportion_interval {
  double low = 0.0;   ///< lower end
  double high = 1.0;  ///< upper end
};

/// Wilson score interval of a binomial proportion k / n (E. B. Wilson, "Probable inference, the
/// law of succession, and statistical inference", Journal of the American Statistical
/// Association 22 (158), 209-212, 1927): with p = k / n,
/// (p + z^2 / 2n +- z sqrt(p (1 - p) / n + z^2 / 4n^2)) / (1 + z^2 / n).
/// Unlike the normal (Wald) interval it stays inside [0, 1] and is not empty at k = 0 or k = n
/// (Brown, Cai, DasGupta, "Interval Estimation for a Binomial Proportion", Statistical Science
/// 16 (2), 2001, recommend it for small n). z = 1.959963984540054 gives 95%.
/// @param k successes, @param n trials (k > n is clamped to n). n = 0: [0, 1] (no information).
inline proportion_interval wilson_interval(std::size_t k, std::size_t n,
                                           double z = 1.959963984540054) {
  if (n == 0) return {};
  if (k > n) k = n;
  const double nn = static_cast<double>(n), p = static_cast<double>(k) / nn, z2 = z * z;
  const double centre = (p + z2 / (2 * nn)) / (1 + z2 / nn);
  const double half = z / (1 + z2 / nn) * std::sqrt(p * (1 - p) / nn + z2 / (4 * nn * nn));
  proportion_interval out{std::max(0.0, centre - half), std::min(1.0, centre + half)};
  if (k == 0) out.low = 0.0;  // exact ends (the formula gives them up to rounding)
  if (k == n) out.high = 1.0;
  return out;
}

}  // namespace memhealth
