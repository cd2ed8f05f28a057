#!/usr/bin/env bash
# Builds the libFuzzer targets (preset `fuzz`: clang++, ASan+UBSan, fuzz/), makes their seed
# corpora (scripts/fuzz_seeds.sh) and runs each target for SECONDS (default 20), as many at once
# as there are cores ($MEMHEALTH_FUZZ_JOBS overrides; each target is one process). Fails (non-zero) when any target reports a crash, a sanitizer error, a leak, a timeout
# (-timeout=10 per input) or an out-of-memory (-rss_limit_mb=2048); the input that did it is
# kept as build/fuzz/artifacts/<target>-crash-* (or leak-, timeout-, oom-) and the log as
# build/fuzz/logs/<target>.log. Prints per target: executions, exec/s, corpus size, coverage.
#
# usage: scripts/fuzz_run.sh [SECONDS] [TARGET...]    (targets: jsonl wal plan events import schema claims
#                                                      sqlite)
# Reproduce a finding: build/fuzz/fuzz/fuzz_<target> build/fuzz/artifacts/<target>-crash-<sha1>
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seconds="${1:-20}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(jsonl wal plan events import schema claims sqlite)
case "$seconds" in ''|*[!0-9]*) echo "fuzz_run.sh: SECONDS must be a whole number, not '$seconds'" >&2; exit 2 ;; esac

cmake --workflow --preset fuzz
scripts/fuzz_seeds.sh build/fuzz/corpus

bin=build/fuzz/fuzz
mkdir -p build/fuzz/artifacts build/fuzz/logs
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
jobs="${MEMHEALTH_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}"
case "$jobs" in ''|*[!0-9]*|0) jobs=1 ;; esac
rowdir=$(mktemp -d)
trap 'rm -rf "$rowdir"' EXIT

# fuzz_one TARGET: runs one target; writes its table row to $rowdir/TARGET.row and, when it
# failed, its diagnostics to $rowdir/TARGET.err (printed in target order at the end)
fuzz_one() {
  local t="$1" log="build/fuzz/logs/$1.log" rc=0 execs rate final cov ft corp status
  "$bin/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="build/fuzz/artifacts/$t-" "build/fuzz/corpus/$t" >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  final=$(grep -E '^#[0-9]+[[:space:]]+(DONE|pulse|NEW|REDUCE|INITED)' "$log" | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$final")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$final")
  corp=$(sed -n 's/.* corp: \([0-9]*\/[0-9A-Za-z]*\).*/\1/p' <<<"$final")
  status=ok
  if [ "$rc" -ne 0 ]; then
    status="FAILED (exit $rc)"
    {
      echo "fuzz_run.sh: fuzz_$t failed; the end of $log:"
      grep -E 'ERROR|SUMMARY|invariant failed|what\(\)|Test unit written|artifact|Slowest|rss|==[0-9]+==' "$log" | grep -v -E '^#[0-9]+' | head -30 || true
      for a in build/fuzz/artifacts/"$t"-*; do
        [ -f "$a" ] || continue
        echo "fuzz_run.sh: $a ($(wc -c <"$a") bytes), hex:"
        head -c 2048 "$a" | od -A x -t x1z -v || true
      done
    } >"$rowdir/$t.err"
  fi
  printf '  %-8s %10s %8s %12s %7s %7s  %s\n' "$t" "${execs:-?}" "${rate:-?}" "${corp:-?}" "${cov:-?}" "${ft:-?}" "$status" >"$rowdir/$t.row"
}

running=0
for t in "${targets[@]}"; do
  if [ "$t" = sqlite ] && [ ! -x "$bin/fuzz_$t" ]; then  # fuzz/CMakeLists.txt: only with SQLite
    echo "fuzz_run.sh: fuzz_sqlite was not built (SQLite not found: libsqlite3-dev); skipped" >&2
    printf '  %-8s %10s %8s %12s %7s %7s  %s\n' "$t" - - - - - "skipped (no SQLite)" >"$rowdir/$t.row"
    continue
  fi
  if [ ! -x "$bin/fuzz_$t" ]; then
    printf '  %-8s %10s %8s %12s %7s %7s  %s\n' "$t" - - - - - "FAILED (not built)" >"$rowdir/$t.row"
    echo "fuzz_run.sh: $bin/fuzz_$t was not built" >"$rowdir/$t.err"
    continue
  fi
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  echo "fuzz_run.sh: fuzz_$t for ${seconds}s"
  fuzz_one "$t" &
  running=$((running + 1))
done
wait || true

failed=0
rows=()
for t in "${targets[@]}"; do
  if [ -f "$rowdir/$t.err" ]; then
    failed=1
    cat "$rowdir/$t.err" >&2
  fi
  if [ -f "$rowdir/$t.row" ]; then
    rows+=("$(cat "$rowdir/$t.row")")
  else
    failed=1
    rows+=("$(printf '  %-8s %10s %8s %12s %7s %7s  %s' "$t" - - - - - "FAILED (no result)")")
  fi
done
echo
echo "fuzz_run.sh: ${seconds}s per target"
printf '  %-8s %10s %8s %12s %7s %7s  %s\n' target executions exec/s corpus cov ft status
printf '%s\n' "${rows[@]}"
exit "$failed"
