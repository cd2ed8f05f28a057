#!/usr/bin/env bash
# Builds memhealth-bench (bench preset, Release) and runs every benchmark once at a tiny size
# (MEMHEALTH_BENCH_TINY=1), the way CI does: it checks that the benchmarks compile and that their
# own correctness checks (recall, pair counts) pass. It times nothing worth reading.
#
# usage: scripts/bench_tiny.sh [extra memhealth-bench flags]
# Exit status: non-zero when the build fails, the executable fails, or any benchmark reports an
# error other than a "skipped: ..." one (a peer or tool that is not installed).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

cmake --workflow --preset bench
out=build/bench/bench-tiny.json
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
MEMHEALTH_BENCH_TINY=1 MEMHEALTH_BENCH_TMP="$scratch" build/bench/bench/memhealth-bench \
  --benchmark_min_time=0.01 --benchmark_out="$out" --benchmark_out_format=json "$@"
python3 - "$out" <<'PY'
import json, sys
runs = json.load(open(sys.argv[1]))["benchmarks"]
bad = [b for b in runs if b.get("error_occurred") and not b.get("error_message", "").startswith("skipped:")]
skipped = [b for b in runs if b.get("error_occurred") and b not in bad]
for b in skipped:
    print(f"bench_tiny: {b['name']}: {b['error_message']}")
for b in bad:
    print(f"bench_tiny: FAILED {b['name']}: {b.get('error_message')}", file=sys.stderr)
print(f"bench_tiny: {len(runs)} runs, {len(skipped)} skipped, {len(bad)} failed")
sys.exit(1 if bad or not runs else 0)
PY
