"""The benchmark pictures (python -m rmsnorm_cert plots) on a small synthetic CSV in the bench's
format: every plot file exists, the bandwidth plots hold ours, each peer and the copy with the
CSV's numbers (the best of our variants per shape), and the heat maps hold ours/copy and
ours/best peer. Exits 77 (skipped) without matplotlib."""
import json
import os
import subprocess
import sys
import tempfile

try:
    import matplotlib  # noqa: F401
except ImportError:
    print("skipped: no matplotlib")
    sys.exit(77)

HEADER = "device,op,dtype,rows,dim,variant,bytes,time_us,gbps,copy_us,copy_gbps,ratio,graph,empty_us,x_empty,note"
ROWS = [
    # ours: two variants at one shape (the better ratio counts), a skipped row (ignored)
    "H200,forward,bf16,4096,1024,fwd.warp_row,0,10,3000,9,3300,0.90,0,0,0,",
    "H200,forward,bf16,4096,1024,fwd.block_row,0,9.5,3100,9,3300,0.94,0,0,0,",
    "H200,forward,bf16,4096,4096,fwd.block_row,0,30,3500,29,3600,0.97,0,0,0,",
    "H200,forward,bf16,8192,4096,fwd.block_row,0,60,3550,58,3650,0.97,0,0,0,",
    "H200,forward,bf16,8192,1024,fwd.block_row,0,0,0,0,0,0,0,0,0,skipped: out of range",
    # the backward counts its dg partials: more bytes than the peer's model
    "H200,backward,bf16,16,4096,bwd.staged_rows,655360,4,160,2,330,0.50,1,0.8,5,",
]
PEERS = [
    "H200,forward,bf16,4096,1024,torch.compile,0,12,2800,11,3300,0.85,0,0,0,",
    "H200,forward,bf16,4096,4096,torch.compile,0,33,3300,30,3500,0.91,0,0,0,",
    "H200,forward,bf16,4096,4096,torch.eager,0,70,1500,30,3500,0.43,0,0,0,",
    "H200,backward,bf16,16,4096,torch.compile,393216,3,130,1.6,245,0.533,1,0.8,4,",
    # ours timed in the peers' process: its own side, never a peer; it decides ours / best peer
    "H200,forward,bf16,4096,1024,rmsnorm_certified.torch,0,11,3000,11,3300,0.90,0,0,0,",
]
failures = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        failures.append(what)


with tempfile.TemporaryDirectory() as tmp:
    bench, peers, out = os.path.join(tmp, "bench.csv"), os.path.join(tmp, "peers.csv"), os.path.join(tmp, "plots")
    with open(bench, "w") as f:
        f.write(HEADER + "\n" + "\n".join(ROWS) + "\n")
    with open(peers, "w") as f:
        f.write(HEADER + "\n" + "\n".join(PEERS) + "\n")
    r = subprocess.run([sys.executable, "-m", "rmsnorm_cert", "plots", bench, peers, "--out", out],
                       capture_output=True, text=True)
    print(r.stdout + r.stderr)
    check(r.returncode == 0, f"plots exits 0 ({r.returncode})")
    with open(os.path.join(out, "series.json")) as f:
        s = json.load(f)
    lines = s["lines"]
    check(set(lines) == {"bw_forward_bf16_R4096.png", "bw_forward_bf16_R8192.png", "bw_backward_bf16_R16.png"},
          f"one bandwidth plot per op and R ({sorted(lines)})")
    r4096 = lines.get("bw_forward_bf16_R4096.png", {})
    check(set(r4096) == {"ours", "torch.compile", "torch.eager", "rmsnorm_certified.torch", "copy"},
          f"ours, each peer, ours in the peers' process and the copy ({sorted(r4096)})")
    check(r4096.get("ours", {}).get("1024") == 3100, "ours at a shape is our best variant there")
    check(r4096.get("copy", {}).get("4096") == 3600, "the copy's bandwidth is the same run's")
    heat = s["heat"]
    check(abs(heat.get("heat_forward_bf16_copy.png", {}).get("4096x1024", 0) - 0.94) < 1e-9, "heat map of ours / copy")
    check(abs(heat.get("heat_forward_bf16_peer.png", {}).get("4096x4096", 0) - 0.97 / 0.91) < 1e-9,
          "heat map of ours / best peer")
    check(abs(heat.get("heat_forward_bf16_peer.png", {}).get("4096x1024", 0) - 0.90 / 0.85) < 1e-9,
          "ours / best peer from ours timed in the peers' process, where it was")
    check(abs(heat.get("heat_backward_bf16_peer.png", {}).get("16x4096", 0) - 3 / 4) < 1e-9,
          "ours / best peer where the bytes models differ: the time ratio")
    check("8192x1024" not in heat.get("heat_forward_bf16_copy.png", {}), "skipped rows are not drawn")
    for name in list(lines) + list(heat) + ["plots.html"]:
        check(os.path.getsize(os.path.join(out, name)) > 0, f"{name} written")
    r = subprocess.run([sys.executable, "-m", "rmsnorm_cert", "plots", os.path.join(tmp, "none.csv"), "--out", out],
                       capture_output=True, text=True)
    check(r.returncode == 3 and "none.csv" in r.stderr, "a missing CSV is refused with a message")

print(f"plots: {'PASS' if not failures else 'FAIL'}")
sys.exit(1 if failures else 0)
