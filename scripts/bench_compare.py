#!/usr/bin/env python3
"""Shape by shape, two rmsnorm-bench CSVs of the same timing method (a kernel change against the
run before it): for every (op, dtype, R, D) measured in both, the ratio to each run's own copy,
before and after, and the variant each run dispatched; rows that moved by more than --min-delta
(default 0.03) are printed, faster first, with a count per op. Large-R rows compare the ratio to
the copy; small-R graph-replay rows (R <= 64) the time over the same graph's empty kernel.

With --pair BEFORE2.csv AFTER2.csv (a second alternating pair of the same A/B) only the shapes
that moved past --min-delta the same way in both pairs are printed, with both changes and their
mean: what a change did, apart from one run's noise.

With --summary, one line per (op, dtype): over its shapes, the min / median / max of the score
after over the score before (each pair's own, with --pair), and how many shapes ran faster in
every pair: a by-name A/B of one variant in a few lines.

With --cards, the two CSVs are runs of the same kernels on two GPUs (A = the first, B = the
second): per (op, dtype, variant), over the shapes where both runs dispatched that variant (not the
graph-replay rows, and only where the copy's own time moved by at least --min-copy-gain, default
1.2x), the kernel's time on A over its time on B beside the copy's, and the share of the copy's
change the kernel follows, (t - 1) / (c - 1). A kernel that follows the copy (share near 1) is bound
by DRAM; one whose time stays put while the copy's moves (share near 0) is bound by what the two
cards share: with the same SMs and L2 (an H100 and an H200), on the chip. --shapes prints the same
per shape (each card's ratio to its copy, the two time ratios, the share); --variant keeps the
variants its globs match (comma-separated).

Usage: scripts/bench_compare.py BEFORE.csv AFTER.csv [--pair BEFORE2.csv AFTER2.csv] [--min-delta X] [--op OP] [--summary]
       scripts/bench_compare.py --cards A.csv B.csv [--op OP] [--variant GLOBS] [--shapes] [--min-copy-gain X]"""
import argparse
import csv
import fnmatch
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


def change(before_rows, after_rows):
    """The best row of each run for one shape (several variants named), their scores and the
    relative change of the score."""
    b = max(before_rows, key=lambda r: score(r)[0])
    n = max(after_rows, key=lambda r: score(r)[0])
    sb, unit = score(b)
    sn, _ = score(n)
    return b, n, sb, sn, unit, (sn - sb) / sb if sb > 0 else 0.0


def agreed(a):
    """Shapes that moved past min_delta the same way in both pairs."""
    runs = [load(p) for p in (a.before, a.after, a.pair[0], a.pair[1])]
    keys = set(runs[0]) & set(runs[1]) & set(runs[2]) & set(runs[3])
    rows, counts, unsure = [], {}, 0
    for key in sorted(keys):
        if a.op and key[0] != a.op:
            continue
        b1, n1, s_b1, s_n1, unit, r1 = change(runs[0][key], runs[1][key])
        _, _, s_b2, s_n2, _, r2 = change(runs[2][key], runs[3][key])
        if min(r1, r2) > a.min_delta or max(r1, r2) < -a.min_delta:
            rows.append(((r1 + r2) / 2, key, b1["variant"], n1["variant"], s_b1, s_n1, s_b2, s_n2, r1, r2, unit))
            c = counts.setdefault(key[0], [0, 0])
            c[0 if r1 > 0 else 1] += 1
        elif abs(r1) > a.min_delta or abs(r2) > a.min_delta:
            unsure += 1
    rows.sort(key=lambda m: -m[0])
    for mean, (op, dt, nrows, dim), vb, vn, b1, n1, b2, n2, r1, r2, unit in rows:
        variant = vb if vb == vn else f"{vb} -> {vn}"
        print(f"{op:18s} {dt:5s} {nrows:6d} {dim:6d}  {b1:6.3f} -> {n1:6.3f}  {b2:6.3f} -> {n2:6.3f} {unit:10s} "
              f"{r1:+6.1%} {r2:+6.1%} mean {mean:+6.1%}  {variant}")
    print(f"\n{len(rows)} of {len(keys)} shapes moved by more than {a.min_delta:.0%} the same way in both pairs "
          f"({unsure} past it in one pair only)")
    for op, (up, down) in sorted(counts.items()):
        print(f"  {op:18s} faster {up:3d}  slower {down:3d}")
    return 0


def summary(a):
    """Per (op, dtype): min / median / max of after / before over the shapes of each pair."""
    pairs = [(load(a.before), load(a.after))]
    if a.pair:
        pairs.append((load(a.pair[0]), load(a.pair[1])))
    keys = set.intersection(*[set(b) & set(n) for b, n in pairs])
    groups = {}
    for key in sorted(keys):
        if a.op and key[0] != a.op:
            continue
        ratios = []
        for b, n in pairs:
            _, _, sb, sn, _, _ = change(b[key], n[key])
            ratios.append(sn / sb if sb > 0 else 0.0)
        groups.setdefault(key[:2], []).append(ratios)
    print(f"{'op':18s} {'dtype':5s} shapes  after/before per pair: min / median / max   faster in every pair")
    for (op, dt), rs in sorted(groups.items()):
        cols = []
        for k in range(len(pairs)):
            v = sorted(r[k] for r in rs)
            cols.append(f"{v[0]:.3f} / {v[len(v) // 2]:.3f} / {v[-1]:.3f}")
        faster = sum(all(x > 1.0 for x in r) for r in rs)
        print(f"{op:18s} {dt:5s} {len(rs):6d}  {'   '.join(cols)}   {faster}/{len(rs)}")
    return 0


def card_shapes(a, runs):
    """The shapes both card runs dispatched to one variant (not graph-replay rows), whose copy
    moved by --min-copy-gain: (op, dtype, R, D, variant, row on A, row on B, t, c, share)."""
    out = []
    for key in sorted(set(runs[0]) & set(runs[1])):
        if a.op and key[0] != a.op:
            continue
        ra, rb = runs[0][key], runs[1][key]
        if len(ra) != 1 or len(rb) != 1 or ra[0]["variant"] != rb[0]["variant"] or "1" in (ra[0].get("graph"), rb[0].get("graph")):
            continue  # several variants named, a different dispatch, or a graph-replay row
        if a.variant and not any(fnmatch.fnmatchcase(ra[0]["variant"], g.strip()) for g in a.variant.split(",")):
            continue
        try:
            t = float(ra[0]["time_us"]) / float(rb[0]["time_us"])
            c = float(ra[0]["copy_us"]) / float(rb[0]["copy_us"])
        except (KeyError, ValueError, ZeroDivisionError):
            continue
        if max(c, 1 / c) < a.min_copy_gain:
            continue
        out.append((*key, ra[0]["variant"], ra[0], rb[0], t, c, (t - 1) / (c - 1)))
    return out


def bound_of(share):
    return "on the chip" if share <= 0.3 else "DRAM" if share >= 0.7 else "both"


def cards(a):
    """Per (op, dtype, variant), or per shape with --shapes: the kernel's time on card A over card B
    beside the copy's."""
    runs = [load(a.before), load(a.after)]
    devices = [sorted({r.get("device", "?") for rows in run.values() for r in rows}) for run in runs]
    print(f"A: {', '.join(devices[0])}\nB: {', '.join(devices[1])}")
    if devices[0] == devices[1]:
        print("(both CSVs come from one kind of card: --cards compares two)")
    shapes = card_shapes(a, runs)
    if not shapes:
        print(f"no shape ran one variant in both runs with the copy {a.min_copy_gain}x apart")
        return 1
    if a.shapes:
        print(f"{'op':20s} {'dtype':5s} {'R':>6s} {'D':>6s} {'variant':28s} ratio A  ratio B  kernel A/B  copy A/B  share  bound")
        for op, dt, rows, dim, variant, ra, rb, t, c, share in shapes:
            print(f"{op:20s} {dt:5s} {rows:6d} {dim:6d} {variant:28s} {float(ra['ratio']):7.3f}  {float(rb['ratio']):7.3f}  "
                  f"{t:10.2f}  {c:8.2f}  {share:5.2f}  {bound_of(share)}")
        return 0
    groups = {}
    for op, dt, _, _, variant, _, _, t, c, share in shapes:
        groups.setdefault((op, dt, variant), []).append((t, c, share))
    print(f"{'op':20s} {'dtype':5s} {'variant':28s} shapes  kernel A/B   copy A/B     share  bound")
    for (op, dt, variant), v in sorted(groups.items()):
        ts, cs, shares = sorted(x[0] for x in v), sorted(x[1] for x in v), sorted(x[2] for x in v)
        share = shares[len(shares) // 2]
        print(f"{op:20s} {dt:5s} {variant:28s} {len(v):6d}  {ts[0]:.2f}-{ts[-1]:.2f}    {cs[0]:.2f}-{cs[-1]:.2f}    "
              f"{share:5.2f}  {bound_of(share)}")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--min-delta", type=float, default=0.03)
    ap.add_argument("--op", default=None)
    ap.add_argument("--pair", nargs=2, metavar=("BEFORE2", "AFTER2"), default=None)
    ap.add_argument("--summary", action="store_true")
    ap.add_argument("--cards", action="store_true")
    ap.add_argument("--min-copy-gain", type=float, default=1.2)
    ap.add_argument("--shapes", action="store_true", help="--cards: one line per shape")
    ap.add_argument("--variant", default=None, help="--cards: only these variants (globs, comma-separated)")
    a = ap.parse_args()
    if a.cards:
        return cards(a)
    if a.summary:
        return summary(a)
    if a.pair:
        return agreed(a)
    before, after = load(a.before), load(a.after)
    moved, same, counts = [], 0, {}
    for key in sorted(set(before) & set(after)):
        if a.op and key[0] != a.op:
            continue
        b, n, sb, sn, unit, rel = change(before[key], after[key])
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
