#!/usr/bin/env python3
"""Prints the folder-level include graph of include/memhealth/ and fails on an arrow that points
up the layering (a folder including a folder above it, or two folders of the same rank).

Layering, lowest first ("a|b": same rank, neither may include the other):
  (root) < record < text < embed < io < store < similarity < detect < monitor|drift|net < repair
  < audit|live

memhealth.hpp, the umbrella header, includes everything and is left out of the graph.

Usage: scripts/include_graph.py [source-dir]   (default: the repository holding this script)
Exit status: 0 when every arrow points down, 1 otherwise (each offending include is listed).
"""
import pathlib
import re
import sys

LAYERS = ["(root)", "record", "text", "embed", "io", "store", "similarity", "detect",
          "monitor|drift|net", "repair", "audit|live"]
RANK = {f: i for i, layer in enumerate(LAYERS) for f in layer.split("|")}
UMBRELLA = "memhealth.hpp"
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]memhealth/([^">]+)[">]', re.M)


def folder(rel: str) -> str:
    parts = rel.split("/")
    return parts[0] if len(parts) > 1 else "(root)"


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    base = root / "include" / "memhealth"
    if not base.is_dir():
        print(f"include_graph: no {base}", file=sys.stderr)
        return 2
    edges: dict[tuple[str, str], int] = {}
    bad: list[str] = []
    for path in sorted(base.rglob("*.hpp")):
        rel = path.relative_to(base).as_posix()
        if rel == UMBRELLA:
            continue
        src = folder(rel)
        if src not in RANK:
            bad.append(f"{rel}: folder '{src}' is not in the layering")
            continue
        for target in INCLUDE.findall(path.read_text(encoding="utf-8")):
            dst = folder(target)
            if dst == src:
                continue
            edges[(src, dst)] = edges.get((src, dst), 0) + 1
            if dst not in RANK:
                bad.append(f"{rel} -> {target}: folder '{dst}' is not in the layering")
            elif RANK[dst] >= RANK[src]:
                bad.append(f"{rel} -> {target}: {src} may not include {dst}")
    print("layering: " + " < ".join(LAYERS))
    print("folder include graph (includes counted per #include line):")
    for src in sorted({s for s, _ in edges}, key=lambda f: (RANK.get(f, 99), f)):
        outs = sorted(((d, n) for (s, d), n in edges.items() if s == src), key=lambda x: (RANK.get(x[0], 99), x[0]))
        print(f"  {src:<11} -> " + ", ".join(f"{d} ({n})" for d, n in outs))
    if bad:
        print(f"\n{len(bad)} include(s) against the layering:")
        for b in bad:
            print("  " + b)
        return 1
    print("\nno include points up the layering")
    return 0


if __name__ == "__main__":
    sys.exit(main())
