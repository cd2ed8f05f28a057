#!/usr/bin/env python3
"""Writes a JSONL store of N small records for the plan/apply scale runs (README, Measured):
32-d random unit embeddings (no near duplicates: cosine >= 0.92 between two random 32-d unit
vectors has a probability far below 1e-12), scopes of N/5000 records, every record missing the
metadata key "topic" that data/sample_schema.json requires: exactly one fault (and one tier-1
action with `--default topic=unknown`) per record.

usage: scripts/make_scale_store.py N OUT.jsonl      (seeded: the same N gives the same bytes)
  memhealth plan OUT.jsonl --out plan.json --schema data/sample_schema.json \\
      --now 2024-07-15T00:00:00Z --default topic=unknown --max-records 2000000 --blast-radius 2000000
"""
import math
import random
import sys

def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    n, out = int(sys.argv[1]), sys.argv[2]
    rnd, d = random.Random(1), 32
    kinds = ["food", "travel", "work", "family", "music"]
    with open(out, "w") as f:
        for i in range(n):
            v = [rnd.gauss(0, 1) for _ in range(d)]
            s = math.sqrt(sum(x * x for x in v))
            emb = ",".join("%.6f" % (x / s) for x in v)
            f.write('{"id":"m%07d","content":"User %d likes item %d in %s context number %d.",'
                    '"embedding":[%s],"embedding_version":"e5-small-v1","metadata":{"ingest_batch":"b1"},'
                    '"created_at":"2024-03-01T10:00:00.000Z","updated_at":"2024-03-01T10:00:00.000Z",'
                    '"last_accessed_at":"2024-07-01T10:00:00.000Z","source":"user_declared",'
                    '"scope":"user:%d","status":"active"}\n'
                    % (i, i % 5000, i, kinds[i % 5], i * 7 % 100003, emb, i % 5000))

if __name__ == "__main__":
    main()
