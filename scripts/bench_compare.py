#!/usr/bin/env python3
"""Shape by shape, two rmsnorm-bench CSVs of the same timing method (a kernel change against the
run before it): for every (op, dtype, R, D) measured in both, the ratio to each run's own copy,
before and after, and the variant each run dispatched; rows that moved by more than --min-delta
(default 0.03) are printed, faster first, with a count per op. Large-R rows compare the ratio to
the copy; small-R graph-replay rows (R <= 64) the time over the same graph's empty kernel.

Usage: scripts/bench_compare.py BEFORE.csv AFTER.csv [--min-delta X] [--op OP]"""
import argparse
import csv
import sys


def load(path):
    rows = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            note = r.get("note", "")
            if note.startswith("skipped") or note.startswith("failed"):
                continue
            try:
                if float(r["time_us"]) <= 0:
                    continue
            except (KeyError, ValueError):
                continue
            key = (r["op"], r["dtype"], int(r["rows"]), int(r["dim"]))
            rows.setdefault(key, []).append(r)
    return rows


def score(r):
    """Higher is better: the ratio to the copy, or for graph-replay rows empty / time."""
    if r.get("graph") == "1" and float(r.get("x_empty") or 0) > 0:
        return 1.0 / float(r["x_empty"]), "empty/time"
    return float(r["ratio"]), "ratio"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--min-delta", type=float, default=0.03)
    ap.add_argument("--op", default=None)
    a = ap.parse_args()
    before, after = load(a.before), load(a.after)
    moved, same, counts = [], 0, {}
    for key in sorted(set(before) & set(after)):
        if a.op and key[0] != a.op:
            continue
        # Several rows for one shape (several variants named): the best of each run.
        b = max(before[key], key=lambda r: score(r)[0])
        n = max(after[key], key=lambda r: score(r)[0])
        sb, unit = score(b)
        sn, _ = score(n)
        rel = (sn - sb) / sb if sb > 0 else 0.0
        if abs(rel) <= a.min_delta:
            same += 1
            continue
        moved.append((rel, key, b["variant"], n["variant"], sb, sn, unit))
        c = counts.setdefault(key[0], [0, 0])
        c[0 if rel > 0 else 1] += 1
    moved.sort(key=lambda m: -m[0])
    for rel, (op, dt, rows, dim), vb, vn, sb, sn, unit in moved:
        variant = vb if vb == vn else f"{vb} -> {vn}"
        print(f"{op:18s} {dt:5s} {rows:6d} {dim:6d}  {sb:6.3f} -> {sn:6.3f} {unit:10s} {rel:+7.1%}  {variant}")
    print(f"\n{len(moved)} shapes moved by more than {a.min_delta:.0%} ({same} within it)")
    for op, (up, down) in sorted(counts.items()):
        print(f"  {op:18s} faster {up:3d}  slower {down:3d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
