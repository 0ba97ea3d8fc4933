#!/usr/bin/env python3
"""Variants side by side from one rmsnorm-bench CSV (a by-name run: --variant <glob>).

Per shape (op, dtype, R, D): each variant's ratio to the same-run copy, or for graph-replay rows
(small R) the empty kernel's time over the variant's (higher is better either way), the best
variant first-marked with '*', and how much faster it is than the runner-up. A dispatch hint is
read off these tables. Usage: scripts/bench_variants.py bench.csv [--op OP]"""
import collections
import csv
import sys


def score(r):
    """Higher is faster: the copy ratio, or empty/time under graph replay."""
    if r.get("graph") == "1":
        x = float(r["x_empty"])
        return 1.0 / x if x > 0 else 0.0
    return float(r["ratio"])


def main(argv):
    if not argv:
        sys.exit(__doc__)
    path, op = argv[0], None
    if "--op" in argv:
        op = argv[argv.index("--op") + 1]
    shapes = collections.OrderedDict()
    with open(path) as f:
        for r in csv.DictReader(f):
            if r.get("note") or (op and r["op"] != op):
                continue
            try:
                s = score(r)
            except (KeyError, ValueError):
                continue
            shapes.setdefault((r["op"], r["dtype"], int(r["rows"]), int(r["dim"])), {})[r["variant"]] = s
    for (o, t, rows, dim), v in shapes.items():
        ranked = sorted(v.items(), key=lambda kv: -kv[1])
        lead = f"{ranked[0][1] / ranked[1][1]:.2f}x" if len(ranked) > 1 and ranked[1][1] > 0 else "-"
        cells = " ".join(f"{'*' if i == 0 else ' '}{n}={s:.3f}" for i, (n, s) in enumerate(ranked))
        print(f"{o:18s} {t:5s} {rows:6d} {dim:6d}  lead {lead:6s} {cells}")


if __name__ == "__main__":
    main(sys.argv[1:])
