#!/usr/bin/env bash
# Builds the seed corpora of the libFuzzer targets (fuzz/) under build/fuzz/corpus/<target>/
# from small real files: tests/data, data/ (the sample store, events, schema), ../shared/data
# when present, the committed hand-made seeds in fuzz/seeds/<target>/, and a real write-ahead
# log and plan made by the memhealth tool on data/sample_store.jsonl (and on a 12-record cut of
# it) when a tool binary is found ($MEMHEALTH, else build/{test,test-clang,demo}/tools/memhealth/).
# The sqlite target gets small memhealth SQLite stores the tool imports (`import jsonl --out
# sqlite:`) from cuts of the sample store and tests/data/io (fuzz/seeds/sqlite/ holds one made
# that way, for runs without a tool).
# Every seed is at most 64 KiB: JSONL is cut at line ends, JSON documents are shrunk by
# dropping array elements / object members until they fit, WAL bytes are cut (a torn tail).
#
# usage: scripts/fuzz_seeds.sh [CORPUS_ROOT]   (default build/fuzz/corpus)
# The corpus directories are recreated from scratch on every run except for what the fuzzer
# added (files named by their SHA-1, as libFuzzer writes them), which is kept.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="${1:-build/fuzz/corpus}"
shared="../shared/data"

tool="${MEMHEALTH:-}"
if [ -z "$tool" ]; then
  for b in build/test build/test-clang build/demo; do
    if [ -x "$b/tools/memhealth/memhealth" ]; then tool="$b/tools/memhealth/memhealth"; break; fi
  done
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
if [ -n "$tool" ]; then
  run_tool() {  # run_tool STORE NAME: plan + apply (tier 2 approved) -> $work/NAME.plan.json, NAME.wal
    local store="$1" name="$2" common=(--schema data/sample_schema.json --now 2024-07-15T00:00:00Z)
    "$tool" plan "$store" --out "$work/$name.plan.json" "${common[@]}" --default topic=unknown >/dev/null 2>&1 || echo "fuzz_seeds.sh: memhealth plan failed on $store" >&2
    "$tool" apply "$store" --plan "$work/$name.plan.json" --wal "$work/$name.wal" --out "$work/$name.out.jsonl" \
      --approve tier2 "${common[@]}" >/dev/null 2>&1 || true  # awaiting approval exits non-zero
  }
  head -n 12 data/sample_store.jsonl >"$work/small.jsonl"
  run_tool data/sample_store.jsonl sample
  run_tool "$work/small.jsonl" small
  # SQLite stores: 1, 3 and 12 records of the sample store (with embeddings), tests/data/io
  mkdir -p "$work/sqlite"
  head -n 1 data/sample_store.jsonl >"$work/one.jsonl"
  head -n 3 data/sample_store.jsonl >"$work/three.jsonl"
  for j in "$work/one.jsonl" "$work/three.jsonl" "$work/small.jsonl" tests/data/io/canonical.jsonl tests/data/io/offsets.jsonl; do
    db="$work/sqlite/$(basename "$j" .jsonl).db"
    "$tool" import jsonl "$j" --out "sqlite:$db" >/dev/null 2>&1 || echo "fuzz_seeds.sh: memhealth import failed on $j" >&2
  done
  echo "fuzz_seeds.sh: WAL, plan and SQLite seeds made with $tool"
else
  echo "fuzz_seeds.sh: no memhealth tool found (set MEMHEALTH or build the test preset): WAL, plan and SQLite seeds from fuzz/seeds only"
fi

python3 - "$root" "$shared" "$work" <<'PY'
import hashlib, json, os, re, struct, sys, glob
root, shared, work = sys.argv[1:4]
LIMIT = 64 * 1024
targets = ["jsonl", "wal", "plan", "events", "import", "schema", "claims", "sqlite"]
sha1 = re.compile(r"^[0-9a-f]{40}$")
for t in targets:
    d = os.path.join(root, t)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):  # keep what the fuzzer found, renew the seeds
        if not sha1.match(f):
            os.remove(os.path.join(d, f))
count = {t: 0 for t in targets}

def put(target, name, data):
    data = data[:LIMIT]
    if not data:
        return
    with open(os.path.join(root, target, "seed-" + re.sub(r"[^A-Za-z0-9_.+-]", "_", name)), "wb") as f:
        f.write(data)
    count[target] += 1

def read(path):
    with open(path, "rb") as f:
        return f.read()

def files(*patterns):
    out = []
    for p in patterns:
        out += sorted(glob.glob(p))
    return [p for p in out if os.path.isfile(p)]

def lines_cut(data, limit):  # whole lines up to limit bytes
    if len(data) <= limit:
        return data
    cut = data.rfind(b"\n", 0, limit)
    return data[: cut + 1] if cut > 0 else data[:limit]

def line_chunks(data, size, n):  # up to n pieces of whole lines of about size bytes
    out, cur = [], b""
    for ln in data.splitlines(keepends=True):
        if len(cur) + len(ln) > size and cur:
            out.append(cur); cur = b""
            if len(out) == n:
                return out
        cur += ln
    if cur:
        out.append(cur)
    return out[:n]

def shrink_json(data, limit=LIMIT):
    try:
        doc = json.loads(data)
    except ValueError:
        return data[:limit]
    def size(o):
        return len(json.dumps(o, ensure_ascii=False).encode())
    while size(doc) > limit:
        best = None  # the largest container that can lose something
        stack = [doc]
        while stack:
            o = stack.pop()
            if isinstance(o, list):
                if len(o) > 1 and (best is None or size(o) > best[0]):
                    best = (size(o), o)
                stack += o
            elif isinstance(o, dict):
                if len(o) > 1 and (best is None or size(o) > best[0]):
                    best = (size(o), o)
                stack += list(o.values())
        if best is None:
            break
        o = best[1]
        if isinstance(o, list):
            del o[(len(o) + 1) // 2:]
        else:
            k = max(o, key=lambda k: size(o[k]))
            del o[k]
    return json.dumps(doc, ensure_ascii=False).encode()  # the form size() measured

def wal_payloads(data):  # the frames' payloads, one per line (the wal target's second reading)
    out, pos = [], 0
    while pos + 8 <= len(data):
        n = struct.unpack_from("<I", data, pos)[0]
        if n == 0 or pos + 8 + n > len(data):
            break
        out.append(data[pos + 8: pos + 8 + n])
        pos += 8 + n
    return b"\n".join(out) + b"\n" if out else b""

def wal_cut(data, limit):  # whole frames up to limit bytes
    pos = 0
    while pos + 8 <= len(data):
        n = struct.unpack_from("<I", data, pos)[0]
        if pos + 8 + n > limit:
            break
        pos += 8 + n
    return data[:pos]

# committed hand-made seeds
for t in targets:
    for p in files(os.path.join("fuzz", "seeds", t, "*")):
        put(t, "committed-" + os.path.basename(p), read(p))

# jsonl: record stores
for p in files("tests/data/io/*.jsonl", "tests/data/mem0/*.jsonl", os.path.join(work, "*.jsonl")):
    put("jsonl", os.path.basename(p), lines_cut(read(p), LIMIT))
store = read("data/sample_store.jsonl")
put("jsonl", "sample_store.jsonl", lines_cut(store, LIMIT))
for i, c in enumerate(line_chunks(store, 4096, 6)):
    put("jsonl", "sample_store.%d.jsonl" % i, c)
for p in files(os.path.join(shared, "memorybank-siliconfriend", "*.jsonl")):
    put("jsonl", os.path.basename(p), lines_cut(read(p), LIMIT))

# events
ev = read("data/sample_events.jsonl")
put("events", "sample_events.jsonl", lines_cut(ev, LIMIT))
for i, c in enumerate(line_chunks(ev, 2048, 8)):
    put("events", "sample_events.%d.jsonl" % i, c)

# schema
put("schema", "sample_schema.json", read("data/sample_schema.json"))

# claims: the labelled statement pairs, one pair per seed ("a\nb")
pairs_tsv = read("tests/data/judge_pairs/pairs.tsv").decode("utf-8").split("\n")[1:]
for k, row in enumerate(r for r in pairs_tsv if r):
    f = row.split("\t")
    if len(f) >= 6 and k % 3 == 0:
        put("claims", "pair-%s" % f[0], (f[4] + "\n" + f[5]).encode("utf-8"))

# plan
for p in files(os.path.join(work, "*.plan.json")):
    put("plan", os.path.basename(p), shrink_json(read(p)))

# wal: bytes (cut at a frame end, and one torn tail) and payload lines
for p in files(os.path.join(work, "*.wal")):
    b, name = read(p), os.path.basename(p)
    put("wal", name, wal_cut(b, LIMIT))
    put("wal", name + ".torn", b[: min(len(b), LIMIT) - 5] if len(b) > 16 else b)
    put("wal", name + ".lines", lines_cut(wal_payloads(b), LIMIT))

# sqlite: whole databases (a cut one is only a corrupt file; the fuzzer makes those itself), as
# the tool wrote them (4 KiB pages, WAL mode) and rewritten with 512-byte pages in rollback mode
# (a quarter of the bytes for the fuzzer to mutate; still the same memhealth store)
def small_pages(path):
    try:
        import shutil, sqlite3
    except ImportError:
        return None
    out = path + ".p512"
    shutil.copyfile(path, out)
    con = sqlite3.connect(out, isolation_level=None)
    try:
        con.execute("PRAGMA journal_mode=DELETE")
        con.execute("PRAGMA page_size=512")
        con.execute("VACUUM")
    finally:
        con.close()
    return out
for p in files(os.path.join(work, "sqlite", "*.db")):
    for q in (p, small_pages(p)):
        if q and os.path.getsize(q) <= LIMIT:
            put("sqlite", os.path.basename(q), read(q))

# import: first byte picks the importer (0 mem0, 1 LoCoMo, 2 PrefEval), the rest is the file
def seeds_import(sel, paths):
    for p in paths:
        put("import", "%d-%s" % (sel, os.path.basename(p)), bytes([sel]) + shrink_json(read(p), LIMIT - 1)
            if p.endswith(".json") else bytes([sel]) + lines_cut(read(p), LIMIT - 1))
seeds_import(0, files("tests/data/mem0/export*", os.path.join(shared, "memorybank-siliconfriend", "memory_bank_en.json"),
                      os.path.join(shared, "weaviate-jeopardy-embeddings", "jeopardy_tiny.json")))
seeds_import(1, files("tests/data/locomo/*.json"))
seeds_import(2, files("tests/data/prefeval-explicit/*.json"))

for t in targets:
    n = len(os.listdir(os.path.join(root, t)))
    print("fuzz_seeds.sh: %-7s %3d seeds, %3d files in %s" % (t, count[t], n, os.path.join(root, t)))
PY
