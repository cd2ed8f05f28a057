// memhealth drill and tune: the fault drill (audit/drill.hpp), threshold tuning
// (audit/tune.hpp) and the conflict judge's settings (audit/tune_judge.hpp).
#pragma once

#include <CLI/CLI.hpp>

namespace memhealth::cli {

/// Registers `memhealth drill STORE [--seed N] [--rate R] [--kinds K,...] [--format text|json]
/// [--out FILE] [--default KEY=VALUE] [--min-coverage X] [--max-fpr X]` plus the detection
/// options. Exit code 0 when the drill meets its gates (no healthy record changed, coverage >=
/// --min-coverage, false-positive rate <= --max-fpr), 1 when it does not, 2 on usage errors.
void add_drill(CLI::App& app, int& rc);

/// Registers `memhealth tune PAIRS... [--sweep START:END:STEP] [--target-fpr X] [--positive-at S]
/// [--dim N] [--no-negation-guard] [--no-duplicate-guards] [--format text|json] [--out FILE]`:
/// precision, recall, false-positive rate and F1 per threshold on labelled pairs (STS Benchmark,
/// SICK) with the lexical embedder; and `memhealth tune --judge PAIRS... [--is-a-depths 0,1,...]
/// [--frequency-ratios 1.5,2,...] [--target-precision X] [--lexicon FILE] [--format text|json]
/// [--out FILE]`: the same figures for the claim conflict judge at each setting of the sweep,
/// per category (judge-pair TSV, SICK). Exit code 0, or 2 on usage errors (an option of the other
/// sweep included), unreadable files and files in neither format.
void add_tune(CLI::App& app, int& rc);

}  // namespace memhealth::cli
