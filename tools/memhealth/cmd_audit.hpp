// memhealth drill and tune: the fault drill (audit/drill.hpp) and threshold tuning
// (audit/tune.hpp).
#pragma once

#include <CLI/CLI.hpp>

namespace memhealth::cli {

/// Registers `memhealth drill STORE [--seed N] [--rate R] [--kinds K,...] [--format text|json]
/// [--out FILE] [--default KEY=VALUE] [--min-coverage X] [--max-fpr X]` plus the detection
/// options. Exit code 0 when the drill meets its gates (no healthy record changed, coverage >=
/// --min-coverage, false-positive rate <= --max-fpr), 1 when it does not, 2 on usage errors.
void add_drill(CLI::App& app, int& rc);

/// Registers `memhealth tune PAIRS... [--sweep START:END:STEP] [--target-fpr X] [--positive-at S]
/// [--dim N] [--no-negation-guard] [--format text|json] [--out FILE]`: precision, recall,
/// false-positive rate and F1 per threshold on labelled pairs (STS Benchmark, SICK) with the
/// lexical embedder. Exit code 0, or 2 on usage errors and unreadable files.
void add_tune(CLI::App& app, int& rc);

}  // namespace memhealth::cli
