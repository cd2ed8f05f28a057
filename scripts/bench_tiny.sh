#!/usr/bin/env bash
# Builds memhealth-bench (preset bench-tiny: Release at -O1 in build/bench-tiny, about 30 % less
# compile time than the bench preset's -O3) and runs every benchmark once at a tiny size
# (MEMHEALTH_BENCH_TINY=1), the way CI does: it checks that the benchmarks compile and that their
# own correctness checks (recall, pair counts) pass. It times nothing worth reading; measure with
# the bench preset (-O3, build/bench).
#
# usage: scripts/bench_tiny.sh [extra memhealth-bench flags]
# Exit status: non-zero when the build fails, the executable fails, or any benchmark reports an
# error other than a "skipped: ..." one (a peer or tool that is not installed).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

cmake --workflow --preset bench-tiny
out=build/bench-tiny/bench-tiny.json
scratch=$(mktemp -d)
# bench_pg.cpp measures against a PostgreSQL server: a throwaway one (scripts/pg_test_cluster.sh)
# unless MEMHEALTH_BENCH_PG_URI names one; without any, its benchmarks report "skipped: ..."
pg_started=0
if [ -z "${MEMHEALTH_BENCH_PG_URI:-}" ]; then
  if MEMHEALTH_REQUIRE_PG=0 bash scripts/pg_test_cluster.sh start "$scratch/pg" 5433 >/dev/null 2>&1 &&
    [ -s "$scratch/pg/conninfo" ]; then
    MEMHEALTH_BENCH_PG_URI="$(cat "$scratch/pg/conninfo")"
    export MEMHEALTH_BENCH_PG_URI
    pg_started=1
  fi
fi
cleanup() {
  if [ "$pg_started" = 1 ]; then bash scripts/pg_test_cluster.sh stop "$scratch/pg" >/dev/null 2>&1 || true; fi
  rm -rf "$scratch"
}
trap cleanup EXIT
MEMHEALTH_BENCH_TINY=1 MEMHEALTH_BENCH_TMP="$scratch" build/bench-tiny/bench/memhealth-bench \
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
