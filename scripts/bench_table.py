#!/usr/bin/env python3
"""Summarize an rmsnorm-bench CSV: per op, the min / median / max ratio to the same-run copy over
the SPEC §8 target region (R*D >= 2^25, D in [1024, 65536], bf16), the worst shapes, and the
small-R rows (graph replay) against the empty kernel. Usage: scripts/bench_table.py bench.csv"""
import csv
import statistics
import sys

TARGETS = {"forward": 0.95, "add_forward": 0.90, "add_forward_quant": 0.90, "backward": 0.85, "add_backward": 0.85}


def main(path):
    rows = [r for r in csv.DictReader(open(path)) if not r.get("note", "").startswith("skipped")]
    ops = {}
    for r in rows:
        R, D = int(r["rows"]), int(r["dim"])
        if r["dtype"] == "bf16" and R * D >= 2 ** 25 and 1024 <= D <= 65536:
            ops.setdefault(r["op"], []).append((float(r["ratio"]), R, D, r["variant"]))
    print(f"{'op':18s} {'n':>3s} {'min':>6s} {'median':>7s} {'max':>6s} {'target':>7s} {'met':>4s}  worst shapes (ratio, variant)")
    for op, v in ops.items():
        rs = [x[0] for x in v]
        target = TARGETS.get(op)
        met = "-" if target is None else f"{sum(x >= target for x in rs)}/{len(rs)}"
        worst = ", ".join(f"{R}x{D} {x:.2f} {var}" for x, R, D, var in sorted(v)[:3])
        print(f"{op:18s} {len(v):3d} {min(rs):6.3f} {statistics.median(rs):7.3f} {max(rs):6.3f} "
              f"{(f'{target:.2f}' if target else '-'):>7s} {met:>4s}  {worst}")
    small = [r for r in rows if r["graph"] == "1" and float(r["x_empty"]) > 0]
    if small:
        xs = [float(r["x_empty"]) for r in small]
        print(f"small R (graph replay, {len(small)} shapes): time / empty kernel min {min(xs):.2f}, "
              f"median {statistics.median(xs):.2f}, max {max(xs):.2f} (target 1.2)")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
