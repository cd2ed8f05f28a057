#!/usr/bin/env bash
# Line coverage of the readers under the fuzz corpora: builds the fuzz targets once more with
# clang's source-based coverage (build/fuzz-cov), runs each over its corpus in
# build/fuzz/corpus/<target>/ (-runs=0: every input once, no fuzzing) and prints
# `llvm-cov report` for the reader headers. Run scripts/fuzz_run.sh first (it makes the corpora).
# Needs llvm-profdata and llvm-cov (Debian: llvm-14; LLVM_SUFFIX=-14 by default).
#
# usage: scripts/fuzz_coverage.sh [TARGET...]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
sfx="${LLVM_SUFFIX--14}"
for t in "llvm-profdata$sfx" "llvm-cov$sfx"; do
  command -v "$t" >/dev/null || { echo "fuzz_coverage.sh: $t not found (apt-get install llvm-14)" >&2; exit 1; }
done
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(jsonl wal plan events import schema claims sqlite)
b=build/fuzz-cov
cmake --preset fuzz -B "$b" -DMEMHEALTH_FUZZ_EXTRA_FLAGS="-fprofile-instr-generate -fcoverage-mapping" >/dev/null
cmake --build "$b" -j "${JOBS:-2}" --target $(printf 'memhealth-fuzz-%s ' "${targets[@]}")
rm -rf "$b/profiles" && mkdir -p "$b/profiles"
objects=()
for t in "${targets[@]}"; do
  LLVM_PROFILE_FILE="$b/profiles/$t.profraw" "$b/fuzz/fuzz_$t" -runs=0 -timeout=10 -rss_limit_mb=2048 \
    "build/fuzz/corpus/$t" >"$b/profiles/$t.log" 2>&1
  objects+=(-object "$b/fuzz/fuzz_$t")
done
"llvm-profdata$sfx" merge -sparse "$b"/profiles/*.profraw -o "$b/profiles/all.profdata"
readers='include/memhealth/(io/(jsonl_lines|jsonl_read|record_codec|detail_json_text|import_mem0|import_locomo|import_prefeval|import_sniff|metadata_schema_json)|repair/(wal|wal_read|rollback|plan_json)|store/(sqlite_store|sqlite_schema)|monitor/events)\.hpp'
# One row per header the targets compile; the readers' rows, then the total of those rows.
"llvm-cov$sfx" report "${objects[1]}" "${objects[@]:2}" -instr-profile="$b/profiles/all.profdata" >"$b/profiles/report.txt"
head -n 2 "$b/profiles/report.txt"
grep -E "$readers" "$b/profiles/report.txt" | sed 's|^.*include/memhealth/|include/memhealth/|'
grep -E "$readers" "$b/profiles/report.txt" | awk '{l+=$8; m+=$9} END {printf "readers: lines %d, missed %d, line coverage %.2f%%\n", l, m, 100*(l-m)/l}'
