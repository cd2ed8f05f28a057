#!/usr/bin/env python3
"""The tool with the user's own models (issue 19): --embedder and --judge against a local
OpenAI-compatible test server (memhealth-test-openai-server; nothing reaches the network).

usage: cli_models.py MEMHEALTH SERVER WORKDIR

Checked here:
- `import --embedder openai:URL --embedding-model M` fills every missing embedding with the
  server's vectors (the lexical stand-in's, so their values are known), tags them
  "openai:M:16", and a rerun with the warm cache sends no request;
- `check --judge openai:URL --judge-model M` reports the contradiction the rules miss (the
  server calls that pair a conflict), not without --judge, and a rerun asks nothing;
- `plan --judge` records the judge's URL and model in the plan, never the API key;
- bad options and an unreachable server are clear errors (exit 2), never a crash, and the API key
  is in no output.
"""
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

MEMHEALTH, SERVER, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
KEY = "sk-test-secret-0123456789abcdef"
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)


def run(*args, expect=None):
    env = dict(os.environ, OPENAI_API_KEY=KEY, HOME=WORK)
    p = subprocess.run([MEMHEALTH, *args], capture_output=True, text=True, env=env, timeout=120)
    out = p.stdout + p.stderr
    check(KEY not in out, "the API key is printed by: " + " ".join(args))
    if expect is not None and p.returncode != expect:
        print(out)
        check(False, f"exit {p.returncode}, expected {expect}: " + " ".join(args))
    return p


os.makedirs(WORK, exist_ok=True)


def start_server(name, answers):
    """Starts the test server with the chat answers `answers` ((A, B, content) triples, each
    pair both ways); returns (process, port)."""
    port_file = os.path.join(WORK, name + ".port")
    if os.path.exists(port_file):
        os.remove(port_file)
    tsv = os.path.join(WORK, name + ".tsv")
    with open(tsv, "w") as f:
        for a, b, content_ab, content_ba in answers:
            f.write(f"{a}\t{b}\t{content_ab}\n{b}\t{a}\t{content_ba}\n")
    proc = subprocess.Popen([SERVER, "16", port_file, tsv])
    for _ in range(200):
        if os.path.exists(port_file):
            break
        time.sleep(0.05)
    return proc, int(open(port_file).read())


# a pair the rules leave open (no antonym, no negation, no single-valued attribute they know) and
# close enough (cosine >= 0.6) to reach the judge
night, bed = "User prefers the window seat", "User prefers the aisle seat"
server, port = start_server("verdicts", [(
    night, bed, '{"verdict": "conflict", "newer": "B", "reason": "seat"}',
    '{"verdict": "conflict", "newer": "A", "reason": "seat"}')])
try:
    url = f"openai:http://127.0.0.1:{port}/v1"

    def stats():
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=10) as r:
            return json.load(r)

    # a store without embeddings: one scope, the two seat statements and three others
    texts = [night, bed, "User keeps a cat named Miso", "User works at a bakery in Porto",
             "User likes green tea"]
    src = os.path.join(WORK, "plain.jsonl")
    with open(src, "w") as f:
        for i, t in enumerate(texts):
            f.write(json.dumps({"id": f"m{i}", "content": t, "scope": "user:u1",
                                "status": "active", "source": "user_declared", "kind": "fact",
                                "created_at": "2026-01-01T00:00:00Z",
                                "updated_at": "2026-01-01T00:00:00Z"}) + "\n")
    cache = os.path.join(WORK, "cache.sqlite")
    if os.path.exists(cache):
        os.remove(cache)
    out = os.path.join(WORK, "embedded.jsonl")
    run("import", "jsonl", src, "--out", out, "--embedder", url,
        "--embedding-model", "fake-embed", "--model-cache", cache, expect=0)
    recs = [json.loads(l) for l in open(out)]
    check(len(recs) == 5, "5 records imported")
    check(all(len(r.get("embedding", [])) == 16 for r in recs), "every record has 16 floats")
    check(all(r.get("embedding_version") == "openai:fake-embed:16" for r in recs),
          "embedding_version openai:fake-embed:16")
    # the lexical stand-in's vector of "User likes green tea" is a unit vector (its norm is 1)
    v = recs[4]["embedding"]
    check(abs(sum(x * x for x in v) - 1.0) < 1e-5, "the server's vector arrived unchanged")
    s1 = stats()
    check(s1["embedding_requests"] == 2, f"probe + one batch, got {s1}")
    run("import", "jsonl", src, "--out", out + ".2", "--embedder", url,
        "--embedding-model", "fake-embed", "--model-cache", cache, expect=0)
    check(stats()["embedding_requests"] == 2, "a rerun with a warm cache sends nothing")
    check(open(out).read() == open(out + ".2").read(), "the cached vectors are the same bytes")

    # the judge: the rules leave the seat pair open, the model calls it a conflict
    now = ["--now", "2026-02-01T00:00:00Z"]
    p = run("check", out, "--format", "json", "--exit-zero", *now, expect=0)
    conflicts = [f for f in json.loads(p.stdout)["findings"] if f["kind"] == "conflict"]
    check(conflicts == [], "no conflict without --judge")
    judge = ["--judge", url, "--judge-model", "fake-chat", "--model-cache", cache]
    p = run("check", out, "--format", "json", "--exit-zero", *now, *judge, expect=0)
    conflicts = [f for f in json.loads(p.stdout)["findings"] if f["kind"] == "conflict"]
    check(len(conflicts) == 1, f"one conflict with --judge, got {conflicts}")
    if conflicts:
        check(sorted(conflicts[0]["record_ids"]) == ["m0", "m1"], "the seat pair")
        check(conflicts[0]["evidence"].get("reason", "").startswith("model_conflict"),
              "reason model_conflict")
    asked = stats()["chat_requests"]
    check(asked >= 1, "the judge was asked")
    run("check", out, "--format", "json", "--exit-zero", *now, *judge, expect=0)
    check(stats()["chat_requests"] == asked, "a rerun asks the judge nothing (cache)")

    # the key: $OPENAI_API_KEY by default, another variable with --api-key-env
    check(stats()["authorization"] == "Bearer " + KEY, "the key from $OPENAI_API_KEY is sent")
    env2 = dict(os.environ, HOME=WORK, MEMHEALTH_ALT_KEY="alt-key-42")
    subprocess.run([MEMHEALTH, "check", out, "--exit-zero", *now, "--judge", url, "--judge-model",
                    "fake-chat", "--model-cache", "none", "--api-key-env", "MEMHEALTH_ALT_KEY"],
                   capture_output=True, env=env2, timeout=120)
    check(stats()["authorization"] == "Bearer alt-key-42", "--api-key-env names the variable")

    # plan records the judge (URL, model), never the key
    plan = os.path.join(WORK, "plan.json")
    run("plan", out, "--out", plan, *now, *judge, expect=0)
    ptext = open(plan).read()
    check(KEY not in ptext, "no API key in the plan")
    det = json.loads(ptext.split("\n", 1)[0])["detection"]  # JSONL: the header line first
    check(det.get("judge") == url and det.get("judge_model") == "fake-chat",
          f"the plan records the judge, got {det}")
    check('"send_to_review"' in ptext and '["m0","m1"]' in ptext,
          "the model's conflict goes to a person (send_to_review of m0, m1)")

    # plan --embedder on the store without vectors: the model's vectors for detection only, the
    # store untouched; the plan records the embedder; apply runs it and says so
    plan2 = os.path.join(WORK, "plan2.json")
    before = open(src, "rb").read()
    run("plan", src, "--out", plan2, *now, "--embedder", url, "--embedding-model", "fake-embed",
        "--model-cache", cache, expect=0)
    check(open(src, "rb").read() == before, "plan --embedder leaves the store as it was")
    det2 = json.loads(open(plan2).read().split("\n", 1)[0])["detection"]
    check(det2.get("embedder") == url and det2.get("embedding_model") == "fake-embed",
          f"the plan records the embedder, got {det2}")
    p = run("apply", src, "--plan", plan2, "--wal", os.path.join(WORK, "run2.wal"), "--out",
            os.path.join(WORK, "applied2.jsonl"), *now, expect=0)
    check("plan --embedder" in p.stderr, "apply notes the plan's in-memory embeddings")

    # a judge whose replies are never the verdict object: the rules stand, and stderr says so
    prose = "Yes, these two memories conflict."
    server2, port2 = start_server("prose", [(night, bed, prose, prose)])
    try:
        url2 = f"openai:http://127.0.0.1:{port2}/v1"
        p = run("check", out, "--format", "json", "--exit-zero", *now, "--judge", url2,
                "--judge-model", "prose", "--model-cache", "none", "--model-retries", "1", expect=0)
        conflicts = [f for f in json.loads(p.stdout)["findings"] if f["kind"] == "conflict"]
        check(conflicts == [], "an invalid verdict is not a conflict")
        check("no valid verdict for 1 of 1" in p.stderr, f"the invalid replies are reported: {p.stderr}")
    finally:
        server2.send_signal(signal.SIGTERM)
        server2.wait(timeout=20)

    # errors
    p = run("check", out, "--judge", "http://127.0.0.1:1/v1", "--judge-model", "m", expect=2)
    check("openai:URL" in p.stderr, "a --judge without openai: is explained")
    p = run("check", out, "--judge", url, expect=2)
    check("--judge-model" in p.stderr, "a --judge without --judge-model is explained")
    p = run("import", "jsonl", src, "--out", out + ".3", "--embedder",
            "openai:http://127.0.0.1:9/v1", "--embedding-model", "m", "--model-cache", "none")
    check(p.returncode != 0 and "127.0.0.1:9" in p.stderr,
          f"an unreachable server is an error naming it (exit {p.returncode})")
    check(not os.path.exists(out + ".3"), "nothing written when embedding failed")
finally:
    server.send_signal(signal.SIGTERM)
    server.wait(timeout=20)

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("cli_models: all checks passed")
