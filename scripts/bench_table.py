#!/usr/bin/env python3
"""Summarize rmsnorm-bench CSVs, and bench/peers.py CSVs beside them.

Our rows (variant not starting with a peer's prefix): per op, the min / median / max ratio to the
same-run copy over the target region of docs/performance.md (R*D >= 2^25, D in [1024, 65536],
bf16), the worst shapes, and the small-R rows (graph replay) against the empty kernel.

Beside the peers (rows whose variant starts with one of PEER_PREFIXES: torch., liger.,
flashinfer., quack.; bench/peers.py writes them): one table per op, a line per (dtype, R, D)
measured by us and at least one peer, with the time_us of ours, of each peer label (a column
each; '-' where that peer has no row), of our run's copy of the same bytes and of the best peer's
run's copy, the best peer (the highest ratio to its own copy), and ours/best peer speed two ways:
  copy  each side's time in units of its own run's copy of the same bytes, i.e.
        (our ratio / peer ratio) * (peer bytes / our bytes); the processes differ, so this
        cancels a difference in the state of the GPU between the runs, and the bytes factor
        cancels a difference in the bytes models (ours counts the backward's dg workspace)
  time  peer time_us / our time_us, as measured
then per op how many shapes we are at least as fast as the best peer (>= 1.0). Where a file has
several rows for one shape and side (several variants or runs), the best of them is taken.

Usage: scripts/bench_table.py bench.csv [peers.csv ...]"""
import csv
import statistics
import sys

TARGETS = {"forward": 0.95, "add_forward": 0.90, "add_forward_quant": 0.90, "backward": 0.85, "add_backward": 0.85}
# The labels bench/peers.py writes start with one of these; every other row is one of our variants.
PEER_PREFIXES = ("torch.", "liger.", "flashinfer.", "quack.")
OP_ORDER = ["forward", "add_forward", "forward_quant", "add_forward_quant", "backward", "add_backward"]


def measured(r):
    """A row with a time: not skipped or failed, and a positive time and ratio."""
    note = r.get("note", "")
    if note.startswith("skipped") or note.startswith("failed"):
        return False
    try:
        return float(r["time_us"]) > 0 and float(r["ratio"]) > 0
    except (KeyError, ValueError):
        return False


def summarize_ours(rows):
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
        # The empty kernel's replay time drifts within a process (H200: 0.56 us for a process's
        # first two shapes, 0.74 us from the third on, while the kernels' own times stay), so the
        # same ratios against the run's fastest empty kernel too.
        e0 = min(float(r["empty_us"]) for r in small)
        x0 = [float(r["time_us"]) / e0 for r in small]
        print(f"  against the run's fastest empty kernel ({e0:.3f} us): min {min(x0):.2f}, "
              f"median {statistics.median(x0):.2f}, max {max(x0):.2f}")


def is_peer(r):
    return r["variant"].startswith(PEER_PREFIXES)


def best_by_shape(rows):
    """(op, dtype, R, D) -> the row with the highest ratio (for peers of one run: the fastest)."""
    best = {}
    for r in rows:
        key = (r["op"], r["dtype"], int(r["rows"]), int(r["dim"]))
        if key not in best or float(r["ratio"]) > float(best[key]["ratio"]):
            best[key] = r
    return best


def peers_by_shape(rows):
    """(op, dtype, R, D) -> {peer label: its row with the highest ratio}."""
    out = {}
    for label in sorted({r["variant"] for r in rows}):
        for key, r in best_by_shape([r for r in rows if r["variant"] == label]).items():
            out.setdefault(key, {})[label] = r
    return out


def _op_rank(op):
    return (OP_ORDER.index(op), op) if op in OP_ORDER else (len(OP_ORDER), op)


def _label_rank(label):
    """Columns by peer prefix, PyTorch eager before torch.compile, then by name."""
    prefix = next(i for i, p in enumerate(PEER_PREFIXES) if label.startswith(p))
    return (prefix, label != "torch.eager" and not label.startswith("torch.eager_"), label)


def beside_the_peers(ours, peers):
    mine, theirs = best_by_shape(ours), peers_by_shape(peers)
    shared = sorted(set(mine) & set(theirs), key=lambda k: (_op_rank(k[0]), k[1], k[2], k[3]))
    if not shared:
        print("beside the peers: no (op, dtype, R, D) measured by both")
        return
    print()
    print("beside the peers: time_us of ours, of each peer and of the copy of the same bytes (ours' run, "
          "the best peer's run); ours/best peer speed: 'x copy' = times in units of each run's own copy, "
          "'x time' = time_us as measured; >= 1.00: ours at least as fast")
    per_op = {}
    for op in sorted({k[0] for k in shared}, key=_op_rank):
        keys = [k for k in shared if k[0] == op]
        labels = sorted({label for k in keys for label in theirs[k]}, key=_label_rank)
        widths = [max(9, len(label)) for label in labels]
        best_w = max(9, max(len(label) for label in labels))
        print()
        print(f"{op}")
        print(f"{'dtype':5s} {'R':>6s} {'D':>6s} {'ours':>9s} "
              + " ".join(f"{label:>{w}s}" for label, w in zip(labels, widths))
              + f" {'copy':>9s} {'peer copy':>9s}  {'best peer':{best_w}s} {'x copy':>7s} {'x time':>7s}  ours variant")
        for key in keys:
            a = mine[key]
            cand = theirs[key]
            b = max(cand.values(), key=lambda r: float(r["ratio"]))
            ra, rb = float(a["ratio"]), float(b["ratio"])
            ta, tb = float(a["time_us"]), float(b["time_us"])
            ba, bb = float(a["bytes"]), float(b["bytes"])
            by_copy = (ra / rb) * (bb / ba) if ba > 0 and bb > 0 else ra / rb
            by_time = tb / ta
            _op, dtype, R, D = key
            cells = " ".join(f"{float(cand[label]['time_us']):{w}.2f}" if label in cand else f"{'-':>{w}s}"
                             for label, w in zip(labels, widths))
            print(f"{dtype:5s} {R:6d} {D:6d} {ta:9.2f} {cells} {float(a['copy_us']):9.2f} "
                  f"{float(b['copy_us']):9.2f}  {b['variant']:{best_w}s} {by_copy:7.2f} {by_time:7.2f}  {a['variant']}")
            per_op.setdefault(op, []).append((by_copy, by_time, R, D))
    print()
    print(f"{'op':18s} {'shapes':>6s} {'>= peer (copy)':>14s} {'>= peer (time)':>14s} "
          f"{'min x copy':>10s} {'median':>7s}  slowest beside the peer (x copy)")
    total = [0, 0, 0]
    for op, v in per_op.items():
        n_copy = sum(x[0] >= 1.0 for x in v)
        n_time = sum(x[1] >= 1.0 for x in v)
        total[0] += len(v)
        total[1] += n_copy
        total[2] += n_time
        slowest = ", ".join(f"{R}x{D} {c:.2f}" for c, _t, R, D in sorted(v)[:3])
        print(f"{op:18s} {len(v):6d} {f'{n_copy}/{len(v)}':>14s} {f'{n_time}/{len(v)}':>14s} "
              f"{min(x[0] for x in v):10.2f} {statistics.median(x[0] for x in v):7.2f}  {slowest}")
    print(f"at least as fast as the best peer: {total[1]}/{total[0]} shapes by copy-normalized speed, "
          f"{total[2]}/{total[0]} by time_us")


def main(paths):
    rows = []
    for path in paths:
        with open(path, newline="") as f:
            rows += [r for r in csv.DictReader(f) if measured(r)]
    ours = [r for r in rows if not is_peer(r)]
    peers = [r for r in rows if is_peer(r)]
    summarize_ours(ours)
    if peers:
        beside_the_peers(ours, peers)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
