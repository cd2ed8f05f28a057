#!/usr/bin/env python3
"""Reference throughput for bench/bench_jsonl.cpp: load a JSONL file line by line with orjson.

Usage: orjson_load.py FILE [--repeat N] [--keep]

Reads the file in binary, parses every non-blank line with orjson.loads and reports the best of
N runs (default 3) as one JSON line on stdout:
  {"cpu_seconds": c, "wall_seconds": w, "bytes": b, "records": n, "MBps": b / c / 1e6,
   "wall_MBps": b / w / 1e6, "orjson": "3.8.3"}
CPU time (time.process_time) is the headline figure: on a shared machine it is far less noisy
than wall time, and the C++ side reports CPU time too.
By default each parsed object is dropped after parsing (the cheapest use of orjson, so the figure
is an upper bound for a loader that keeps its records); --keep appends them to a list instead.
"""
import argparse
import json
import os
import sys
import time

try:
    import orjson
except ImportError:  # pragma: no cover - reported to the C++ benchmark as a skip
    print(json.dumps({"error": "orjson is not installed"}))
    sys.exit(2)


def load(path, keep):
    kept = []
    n = 0
    c0 = time.process_time()
    t0 = time.perf_counter()
    with open(path, "rb") as f:
        for line in f:
            if line.strip():
                obj = orjson.loads(line)
                n += 1
                if keep:
                    kept.append(obj)
    t1 = time.perf_counter()
    c1 = time.process_time()
    return c1 - c0, t1 - t0, n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    size = os.path.getsize(a.file)
    best_cpu = best_wall = None
    n = 0
    for _ in range(max(1, a.repeat)):
        c, w, n = load(a.file, a.keep)
        best_cpu = c if best_cpu is None else min(best_cpu, c)
        best_wall = w if best_wall is None else min(best_wall, w)
    print(json.dumps({"cpu_seconds": best_cpu, "wall_seconds": best_wall, "bytes": size,
                      "records": n, "MBps": size / best_cpu / 1e6,
                      "wall_MBps": size / best_wall / 1e6, "keep": a.keep,
                      "orjson": orjson.__version__}))


if __name__ == "__main__":
    main()
