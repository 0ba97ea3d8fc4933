"""scripts/bench_compare.py --cards on two made-up runs of the same kernels on two cards: a kernel
whose time stays put while the copy's moves is called bound on the chip, one that follows the copy
bound by DRAM; a shape dispatched to another variant on one card, a graph-replay row and a shape
whose copy barely moved are left out; --shapes gives the shapes one by one, --variant filters them; two CSVs
of one kind of card are said; no shape left: exit 1."""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "bench_compare.py")
HEADER = "device,op,dtype,rows,dim,variant,bytes,time_us,gbps,copy_us,copy_gbps,ratio,graph,empty_us,x_empty,note"
failures = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        failures.append(what)


def row(device, op, rows, dim, variant, time_us, copy_us, graph=0):
    return (f'"{device}",{op},bf16,{rows},{dim},{variant},{3 * rows * dim},{time_us},0,{copy_us},0,'
            f'{copy_us / time_us:.4f},{graph},0.6,0,""')


def write(path, rows):
    with open(path, "w") as f:
        f.write(HEADER + "\n" + "\n".join(rows) + "\n")


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, "--cards", *args], capture_output=True, text=True)


with tempfile.TemporaryDirectory() as d:
    a, b, b_same = (os.path.join(d, n) for n in ("a.csv", "b.csv", "b_same.csv"))
    # Card A's copy is 1.4x slower. The FP8 kernel keeps its time (on the chip); the forward
    # follows the copy (DRAM); one backward shape ran another variant on B, one is a graph
    # replay, one shape's copy moved 1.05x only: none of those three counts.
    write(a, [row("Card A", "forward_quant", 8192, 8192, "fwd.block_row", 90.0, 71.0),
              row("Card A", "forward_quant", 32768, 8192, "fwd.block_row", 340.0, 270.0),
              row("Card A", "forward", 8192, 8192, "fwd.block_row", 94.0, 93.0),
              row("Card A", "forward", 32768, 8192, "fwd.block_row", 360.0, 362.0),
              row("Card A", "backward", 8192, 8192, "bwd.staged_rows", 150.0, 140.0),
              row("Card A", "backward", 1, 8192, "bwd.staged_rows", 3.0, 1.4, graph=1),
              row("Card A", "add_forward", 512, 128, "fwd.warp_row", 5.3, 4.2)])
    write(b, [row("Card B", "forward_quant", 8192, 8192, "fwd.block_row", 89.0, 50.7),
              row("Card B", "forward_quant", 32768, 8192, "fwd.block_row", 333.0, 191.0),
              row("Card B", "forward", 8192, 8192, "fwd.block_row", 70.0, 67.0),
              row("Card B", "forward", 32768, 8192, "fwd.block_row", 262.0, 258.0),
              row("Card B", "backward", 8192, 8192, "bwd.staged_streams", 110.0, 99.0),
              row("Card B", "backward", 1, 8192, "bwd.staged_rows", 2.0, 1.0, graph=1),
              row("Card B", "add_forward", 512, 128, "fwd.warp_row", 3.0, 4.0)])
    r = run(a, b)
    lines = {l.split()[0]: l for l in r.stdout.splitlines() if l.startswith(("forward", "backward", "add_"))}
    check(r.returncode == 0 and "A: Card A" in r.stdout and "B: Card B" in r.stdout, f"the two cards named (rc {r.returncode})")
    check("forward_quant" in lines and lines["forward_quant"].endswith("on the chip") and " 2 " in lines["forward_quant"],
          f"the FP8 kernel, its time unmoved, is on the chip ({lines.get('forward_quant')})")
    check("forward" in lines and lines["forward"].endswith("DRAM"), f"the forward, following the copy, is DRAM ({lines.get('forward')})")
    check("backward" not in lines, "a shape of another variant on one card, or a graph replay, is left out")
    check("add_forward" not in lines, "a shape whose copy moved less than --min-copy-gain is left out")
    r = run("--op", "forward", a, b)
    check("forward_quant" not in r.stdout and "DRAM" in r.stdout, "--op keeps one op")
    # --shapes: one line per shape, each card's ratio and the share; --variant keeps its globs.
    r = run("--shapes", a, b)
    shape_lines = [l.split() for l in r.stdout.splitlines() if l.startswith(("forward", "backward", "add_"))]
    check(r.returncode == 0 and len(shape_lines) == 4, f"--shapes: the 4 counted shapes, a line each ({len(shape_lines)})")
    fp8 = [l for l in shape_lines if l[0] == "forward_quant" and l[3] == "8192" and l[2] == "32768"]
    # 32768 x 8192 FP8: ratio A 270/340, B 191/333, kernel A/B 340/333, copy 270/191.
    check(len(fp8) == 1 and fp8[0][5:10] == ["0.794", "0.574", "1.02", "1.41", "0.05"] and fp8[0][-1] == "chip",
          f"--shapes: a shape's ratios, time ratios and share ({fp8})")
    r = run("--shapes", "--variant", "fwd.block*,bwd.x", "--op", "forward", a, b)
    kept = [l.split()[0] for l in r.stdout.splitlines() if l.startswith(("forward", "backward", "add_"))]
    check(kept == ["forward", "forward"], f"--variant and --op filter the shapes ({kept})")
    r = run("--variant", "bwd.*", a, b)
    check(r.returncode == 1 and "no shape" in r.stdout, f"--variant matching none of the counted shapes: exit 1 (rc {r.returncode})")
    write(b_same, [x.replace("Card B", "Card A") for x in open(b).read().splitlines()[1:]])
    r = run(a, b_same)
    check("one kind of card" in r.stdout, "two CSVs of one card are said")
    r = run("--op", "add_backward", a, b)
    check(r.returncode == 1 and "no shape" in r.stdout, f"nothing to compare: exit 1 (rc {r.returncode})")

print("bench compare: " + ("FAIL" if failures else "ok"))
sys.exit(1 if failures else 0)
