#!/usr/bin/env python3
"""Edits a store or a log the way a live agent or a crash would, for tests/cli_roundtrip.cmake.

  cli_mutate.py shift IN OUT TEMPLATE OUT = IN's lines reversed, with a new record at the top: the
                                      last line of TEMPLATE with its id (the first key) replaced
                                      by "added-by-the-agent", bytes otherwise unchanged
  cli_mutate.py drop-changed ORIG NEW OUT
                                      OUT = NEW without the first line that differs from ORIG
                                      (a record the run changed); prints that record's id
  cli_mutate.py cut LOG OUT N         OUT = LOG without its last N bytes (a torn tail)
  cli_mutate.py drop-frames LOG OUT N OUT = LOG without its last N whole frames (a run killed
                                      between two frames: no torn bytes, no run_end)
  cli_mutate.py damage IN OUT         OUT = IN with a line that is not JSON inserted before line 3
                                      and a blank line before line 10
"""
import json
import sys


def lines(path):
    with open(path, "rb") as f:
        return f.read().split(b"\n")[:-1]


def main(argv):
    cmd = argv[1]
    if cmd == "shift":
        src, tpl = lines(argv[2]), lines(argv[4])[-1]
        old_id = json.loads(tpl)["id"]
        prefix = b'{"id":' + json.dumps(old_id).encode()
        assert tpl.startswith(prefix), "the template's first key is not its id"
        out = [b'{"id":"added-by-the-agent"' + tpl[len(prefix):]] + src[::-1]
        open(argv[3], "wb").write(b"\n".join(out) + b"\n")
    elif cmd == "drop-changed":
        orig, new = lines(argv[2]), lines(argv[3])
        k = next(i for i, (a, b) in enumerate(zip(orig, new)) if a != b)
        print(json.loads(new[k])["id"])
        open(argv[4], "wb").write(b"\n".join(new[:k] + new[k + 1:]) + b"\n")
    elif cmd == "cut":
        data = open(argv[2], "rb").read()
        open(argv[3], "wb").write(data[: len(data) - int(argv[4])])
    elif cmd == "drop-frames":
        data = open(argv[2], "rb").read()
        ends, pos = [], 0  # frames: u32 length, u32 CRC-32C, payload; zeros after the last one
        while pos + 8 <= len(data):
            n = int.from_bytes(data[pos:pos + 4], "little")
            if n == 0:
                break
            pos += 8 + n
            ends.append(pos)
        keep = ends[-1 - int(argv[4])]
        open(argv[3], "wb").write(data[:keep])
    elif cmd == "damage":
        src = lines(argv[2])
        out = src[:2] + [b'{"id":"broken-by-a-crash","content":"half a rec'] + src[2:8] + [b""] + src[8:]
        open(argv[3], "wb").write(b"\n".join(out) + b"\n")
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main(sys.argv)
