// memhealth monitor | drift | gate: level-3 detection (retrieval quality, embedding drift, the
// migration gate). Registered by main.cpp.
#pragma once

#include <CLI/CLI.hpp>

namespace memhealth::cli {

/// `memhealth monitor EVENTS.jsonl --store STORE.jsonl [--window 1h] [--baseline FILE] [--format
/// text|json]`
void add_monitor(CLI::App& app, int& rc);
/// `memhealth drift --reference A.jsonl --current B.jsonl [--format text|json]`
void add_drift(CLI::App& app, int& rc);
/// `memhealth gate --old OLD.jsonl --new NEW.jsonl [--k 10] [--min-overlap X] [--format text|json]`
void add_gate(CLI::App& app, int& rc);

}  // namespace memhealth::cli
