#!/usr/bin/env python3
"""memhealth.check from Python against the same check from C++, on the same data, in one run.

Generates N records (default 100,000) in one scope with 384-d random Gaussian unit embeddings and
P = min(1000, N / 20) planted near-duplicate pairs (cosine 0.93-0.99), as bench/bench_check.cpp
does; writes them once (records as JSONL without vectors, vectors as raw float32) for the C++
side, then times, alternately, REPEAT times each:

- C++: memhealth-py-check-timer (python/tools/check_timer.cpp) loads the files into a
  memory_store (not timed) and times `make_default_pipeline(s).run(store, d)`;
- Python: `memhealth.Records(dicts, embeddings)` (the dicts are serialised and parsed, the
  array read in place: the conversion) plus `memhealth.check(records, threads=T)`.

Prints the best (minimum) of each and the ratio Python / C++. Goal: at most 1.2.

  cmake -S . -B build/pyrel -G Ninja -DCMAKE_BUILD_TYPE=Release -DMEMHEALTH_BUILD_PYTHON=ON \\
        -DMEMHEALTH_BUILD_TESTS=OFF -DMEMHEALTH_BUILD_TOOLS=OFF -DMEMHEALTH_BUILD_EXAMPLES=OFF
  cmake --build build/pyrel --target memhealth-python memhealth-py-check-timer -j2
  PYTHONPATH=build/pyrel/python /usr/bin/python3 bench/python_check.py \\
      --timer build/pyrel/python/memhealth-py-check-timer [--n 100000] [--threads 2]

Measured (2026-12-06, 2 shared cores at load average 6, 100,000 x 384, threads 2, best of 3):
C++ check 5.96 s; Python 0.72 s conversion + 5.87 s check = 6.58 s; ratio 1.10.
"""

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np


def word(i):
    """A word of letters for i (texts without digits: the duplicate guards compare numbers)."""
    w = ""
    while True:
        w += "abcdefghijklmnopqrstuvwxyz"[i % 26]
        i //= 26
        if i == 0:
            return w


def make_data(n, d, seed=20240715):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d), dtype=np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    planted = min(1000, n // 20)
    for p in range(planted):
        a, b = 2 * p, 2 * p + 1
        target = rng.uniform(0.93, 0.99)
        g = rng.standard_normal(d).astype(np.float32)
        g -= (g @ x[a]) * x[a]
        g /= np.linalg.norm(g)
        x[b] = target * x[a] + np.sqrt(1 - target * target) * g
        x[b] /= np.linalg.norm(x[b])
    x = np.ascontiguousarray(x, dtype=np.float32)
    # written yesterday: nothing is stale or inconsistent, the findings are the planted pairs
    day = (dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    dicts = [{
        "id": f"rec-{i:07d}",
        "content": f"The user noted {word(i)} while talking about {word(i * 7919 % 100003)}.",
        "embedding_version": "bench-v1",
        "created_at": day,
        "updated_at": day,
        "source": "model_extracted",
        "scope": "user:bench",
        "status": "active",
        "kind": "fact",
    } for i in range(n)]
    return dicts, x, planted


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--timer", required=True, help="path of memhealth-py-check-timer")
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--d", type=int, default=384)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()

    import memhealth

    dicts, x, planted = make_data(a.n, a.d)
    with tempfile.TemporaryDirectory(prefix="memhealth-pybench-") as tmp:
        rec_path = os.path.join(tmp, "records.jsonl")
        emb_path = os.path.join(tmp, "embeddings.f32")
        with open(rec_path, "w", encoding="utf-8") as f:
            for r in dicts:
                f.write(json.dumps(r) + "\n")
        x.tofile(emb_path)

        cpp, py_total, py_conv, py_check = [], [], [], []
        findings_cpp = findings_py = None
        for _ in range(a.repeat):
            out = subprocess.run([a.timer, rec_path, emb_path, str(a.d), str(a.threads)],
                                 check=True, capture_output=True, text=True).stdout
            res = json.loads(out)
            cpp.append(res["check_s"])
            findings_cpp = res["findings"]

            t0 = time.perf_counter()
            recs = memhealth.Records(dicts, x)
            t1 = time.perf_counter()
            rep = memhealth.check(recs, threads=a.threads)
            t2 = time.perf_counter()
            assert recs.borrows_embeddings and recs._block_address() == x.ctypes.data
            py_conv.append(t1 - t0)
            py_check.append(t2 - t1)
            py_total.append(t2 - t0)
            findings_py = len(rep.findings)
            del recs, rep

    best_cpp, best_py = min(cpp), min(py_total)
    print(f"records {a.n}, dimension {a.d}, threads {a.threads}, planted pairs {planted}, "
          f"repeat {a.repeat} (best of each)")
    print(f"C++    check                         {best_cpp:8.3f} s   findings {findings_cpp}")
    print(f"Python conversion (dicts + array)    {min(py_conv):8.3f} s")
    print(f"Python check                         {min(py_check):8.3f} s   findings {findings_py}")
    print(f"Python conversion + check            {best_py:8.3f} s")
    print(f"ratio Python / C++                   {best_py / best_cpp:8.3f}   (goal <= 1.2)")
    print("all runs: C++ " + " ".join(f"{t:.3f}" for t in cpp) + " | Python " +
          " ".join(f"{t:.3f}" for t in py_total))
    return 0 if findings_cpp == findings_py else 1


if __name__ == "__main__":
    sys.exit(main())
