"""Pictures of benchmark CSVs (rmsnorm-bench --csv, bench/peers.py --csv; same header):

    python -m rmsnorm_cert plots bench.csv [peers.csv ...] --out DIR

For every op, dtype and row count R it draws bandwidth against D: ours (the best of our variants
at each shape), each peer, ours timed in the peers' process where it was, and the device-to-device
copy of the same bytes measured in the same run. For every op and dtype it draws a heat map over
(R, D) of our ratio to the copy, and, where peers ran, one of ours over the best peer as
scripts/bench_table.py scores it: ours timed in the peers' process where it was, else our run;
in units of each run's copy where both count the same bytes, else the peer's time over ours.
DIR/plots.html shows them all; DIR/series.json holds the numbers every plot shows.
"""
import csv
import html
import json
import math
import os

# Labels of the peers' rows (bench/peers.py); every other row is one of our variants.
PEER_PREFIXES = ("torch.", "liger", "flashinfer", "quack", "peer.", "rmsnorm_certified.")
# Ours timed by bench/peers.py in the peers' process: drawn as a side of its own, never a peer.
HERE = "rmsnorm_certified."


class PlotError(Exception):
    pass


def _measured(r):
    note = r.get("note", "")
    if note.startswith("skipped") or note.startswith("failed"):
        return False
    try:
        return float(r["time_us"]) > 0 and float(r["gbps"]) > 0 and float(r["copy_gbps"]) > 0
    except (KeyError, ValueError):
        return False


def load_rows(paths):
    rows = []
    for path in paths:
        try:
            with open(path, newline="", encoding="utf-8") as f:
                reader = csv.DictReader(f)
                need = {"op", "dtype", "rows", "dim", "variant", "gbps", "copy_gbps", "ratio", "time_us"}
                if not reader.fieldnames or not need <= set(reader.fieldnames):
                    raise PlotError(f"{path}: not a benchmark CSV (columns {', '.join(sorted(need))} wanted)")
                rows += [r for r in reader if _measured(r)]
        except OSError as e:
            raise PlotError(f"{path}: {e}")
    if not rows:
        raise PlotError("no measured row in " + ", ".join(paths))
    return rows


def _side(variant):
    """'ours', or the peer's label ('torch.compile', 'liger', ...)."""
    return variant if variant.startswith(PEER_PREFIXES) else "ours"


def series(rows):
    """{(op, dtype, R): {side: {D: (gbps, copy_gbps, ratio, time_us, bytes)}}}, the best row per shape
    and side."""
    out = {}
    for r in rows:
        key = (r["op"], r["dtype"], int(r["rows"]))
        side = _side(r["variant"])
        d = int(r["dim"])
        val = (float(r["gbps"]), float(r["copy_gbps"]), float(r["ratio"]), float(r["time_us"]), float(r.get("bytes") or 0))
        best = out.setdefault(key, {}).setdefault(side, {})
        if d not in best or val[2] > best[d][2]:
            best[d] = val
    return out


def vs_best_peer(mine, peer):
    """Ours over the best peer (series values; mine is ours timed in the peers' process where it
    was): the ratio of the two copy-normalized speeds where both count the same bytes; else the
    peer's time over ours (copies of different sizes below a few MB take about the same time, so
    no copy puts both in one unit)."""
    return mine[2] / peer[2] if mine[4] == peer[4] else peer[3] / mine[3]


# One colour per side in every plot (ours always the first), whichever sides a plot holds.
_PALETTE = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink", "tab:olive")
_COLORS = {"ours": _PALETTE[0]}


def _color(side):
    if side not in _COLORS:
        _COLORS[side] = _PALETTE[len(_COLORS) % len(_PALETTE)]
    return _COLORS[side]


def _plot_lines(path, title, sides):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    copy = {}
    for side, points in sorted(sides.items(), key=lambda kv: (kv[0] != "ours", kv[0])):
        ds = sorted(points)
        ax.plot(ds, [points[d][0] for d in ds], marker="o", label=side, linewidth=2 if side == "ours" else 1,
                color=_color(side))
        for d in ds:
            copy.setdefault(d, points[d][1])
    ds = sorted(copy)
    ax.plot(ds, [copy[d] for d in ds], linestyle="--", color="gray", label="copy (same bytes)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("D")
    ax.set_ylabel("GB/s")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return {"copy": {str(d): copy[d] for d in ds},
            **{side: {str(d): points[d][0] for d in sorted(points)} for side, points in sides.items()}}


def _plot_heat(path, title, grid, rs, ds, center):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(4.5, 1.5 + 0.55 * len(ds)), max(3.0, 1.2 + 0.4 * len(rs))))
    data = [[grid.get((r, d), math.nan) for d in ds] for r in rs]
    im = ax.imshow(data, cmap="RdYlGn", vmin=center - 0.5, vmax=center + 0.5, aspect="auto")
    ax.set_xticks(range(len(ds)), [str(d) for d in ds], rotation=60, fontsize=7)
    ax.set_yticks(range(len(rs)), [str(r) for r in rs], fontsize=7)
    ax.set_xlabel("D")
    ax.set_ylabel("R")
    for i, r in enumerate(rs):
        for j, d in enumerate(ds):
            if (r, d) in grid:
                ax.text(j, i, f"{grid[(r, d)]:.2f}", ha="center", va="center", fontsize=6)
    ax.set_title(title, fontsize=9)
    fig.colorbar(im, ax=ax)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return {f"{r}x{d}": v for (r, d), v in grid.items()}


def write_plots(paths, out_dir):
    rows = load_rows(paths)
    s = series(rows)
    os.makedirs(out_dir, exist_ok=True)
    shown = {"lines": {}, "heat": {}}
    items = []
    for (op, dtype, r), sides in sorted(s.items()):
        name = f"bw_{op}_{dtype}_R{r}.png"
        shown["lines"][name] = _plot_lines(os.path.join(out_dir, name), f"{op}, {dtype}, R = {r}", sides)
        items.append((f"{op} {dtype}", name))
    by_op = {}
    for (op, dtype, r), sides in s.items():
        by_op.setdefault((op, dtype), {})[r] = sides
    for (op, dtype), per_r in sorted(by_op.items()):
        rs = sorted(per_r)
        ds = sorted({d for sides in per_r.values() for pts in sides.values() for d in pts})
        ours = {(r, d): per_r[r]["ours"][d][2] for r in rs if "ours" in per_r[r] for d in per_r[r]["ours"]}
        if ours:
            name = f"heat_{op}_{dtype}_copy.png"
            shown["heat"][name] = _plot_heat(os.path.join(out_dir, name), f"{op} {dtype}: ours / copy", ours, rs, ds, 1.0)
            items.append((f"{op} {dtype}", name))
        vs_peer = {}
        for r in rs:
            sides = per_r[r]
            for d, mine in sides.get("ours", {}).items():
                peers = [p[d] for side, p in sides.items() if side != "ours" and not side.startswith(HERE) and d in p]
                here = [p[d] for side, p in sides.items() if side.startswith(HERE) and d in p]
                if peers:
                    vs_peer[(r, d)] = vs_best_peer(max(here, key=lambda v: v[2]) if here else mine,
                                                   max(peers, key=lambda v: v[2]))
        if vs_peer:
            name = f"heat_{op}_{dtype}_peer.png"
            shown["heat"][name] = _plot_heat(os.path.join(out_dir, name), f"{op} {dtype}: ours / best peer",
                                             vs_peer, rs, ds, 1.0)
            items.append((f"{op} {dtype}", name))
    with open(os.path.join(out_dir, "series.json"), "w", encoding="utf-8") as f:
        json.dump(shown, f, indent=1, sort_keys=True)
    body = "\n".join(f"<h3>{html.escape(t)}</h3><img src='{html.escape(n)}' alt='{html.escape(n)}'>" for t, n in items)
    page = os.path.join(out_dir, "plots.html")
    with open(page, "w", encoding="utf-8") as f:
        f.write("<!doctype html><meta charset='utf-8'><title>RMSNorm bandwidth</title>"
                f"<h1>Bandwidth: {html.escape(', '.join(os.path.basename(p) for p in paths))}</h1>\n{body}\n")
    return page
