#!/usr/bin/env python3
"""Time the peers that docs/performance.md names (PyTorch eager, torch.compile) next to a
device-to-device copy of the same bytes measured in the same process, with the method of
rmsnorm-bench, and write a CSV with exactly the header of rmsnorm-bench's so that
scripts/bench_table.py reads both.

Peers (variant column):
  forward             torch.eager           F.rms_norm(x, (D,), w, eps=1e-6)
  add_forward         torch.eager           torch.add(h, o, out=h); F.rms_norm(h, ...)
  backward            torch.eager           aten._fused_rms_norm_backward(dy, x, [D], rstd, w,
                                            [True, True]) when this torch has it and it agrees
                                            with autograd on a small case; else
                                            torch.autograd.grad(y, (x, w), dy, retain_graph=True)
                                            on a graph built once per buffer set (see the note)
  forward_quant       torch.eager_composed  y = F.rms_norm(x); s = max(amax|y| / 448, 1/(448*512))
                                            per row; q = (y / s).to(float8_e4m3fn)
  add_forward_quant   torch.eager_composed  h += o, then the same
  every op            torch.compile         the same function under torch.compile (mode default,
                                            dynamic=False), compiled once per op and shape; for
                                            backward the forward is compiled and the timed call
                                            is autograd.grad through the compiled backward
Bytes model (bytes that must move; rstd, scales and the weight gradient are not counted), the
formulas of rmsnorm-bench with |x| the activation element size:
  forward R·D·2|x|, add_forward R·D·4|x|, forward_quant R·D·(|x|+1), add_forward_quant
  R·D·(3|x|+1), backward R·D·3|x| (ours adds its dg workspace bytes; a peer's dg traffic is
  unknown, so its bytes have none: scripts/bench_table.py compares speeds with that in mind).
  bf16: 4RD, 8RD, 3RD, 7RD, 6RD.

Method (as rmsnorm-bench): CUDA events, warm-up, median of --iters timed calls; the inputs rotate
over enough buffer sets to exceed 2× the L2 size (at most 64 sets); the copy is
Tensor.copy_ of bytes/2 (a cudaMemcpyAsync device to device) through its own rotation, timed
the same way in the same process, and ratio = copy time / peer time. For R <= 64 the calls are
captured in a CUDA graph (max(32, sets) calls per graph) and replayed, the copy likewise, next
to an "empty kernel" (torch.cuda._sleep(0), captured the same way) for empty_us and x_empty; a
shape whose capture fails is timed without a graph (graph=0, said in the note).
Python launches cost tens of µs, which would be counted if each timed call started on an idle
GPU; so before the timed calls the stream is held by a spin kernel (torch.cuda._sleep) long
enough for the host to queue them all, and each event pair measures GPU time only — as
rmsnorm-bench does with its hold_stream_kernel.

Output: a table on stdout, progress with elapsed time on stderr, and --csv PATH with the header
  device,op,dtype,rows,dim,variant,bytes,time_us,gbps,copy_us,copy_gbps,ratio,graph,empty_us,x_empty,note
(empty_us is -1 and x_empty 0 where no empty kernel was timed, as rmsnorm-bench writes them;
a row that could not be measured has note "failed: ..." or "skipped: ..." and zeros).
Exit status: 0 when at least one row was measured, 1 when none was, 2 without PyTorch,
77 without a CUDA device (as rmsnorm-bench).

GPU host:  python3 bench/peers.py --quick --csv peers.csv
           python3 bench/peers.py --csv peers.csv --peers eager  (the full sweep, eager only)
--quick: 6 shapes x 5 ops x 2 peers; about 30 s of measuring plus the compiling, which is capped
at 60 s (--compile-budget): about 1.5-2 min with a cold compile cache, under 1 min with a warm one
(Inductor's and Triton's on-disk caches, kept while the machine is).
The full sweep compiles ~300 graphs (5 ops x 60 shapes): split it across calls with --ops, or run
--peers eager (a few minutes) and --peers compile separately.
"""
import argparse
import math
import statistics
import sys
import time

EPS = 1e-6
E4M3_MAX = 448.0
# The per-token scale's floor: a zero row gets scale 1/(448*512) instead of 0 (no division by 0).
SCALE_MIN = 1.0 / (E4M3_MAX * 512.0)

OPS = ["forward", "add_forward", "forward_quant", "add_forward_quant", "backward"]
PEERS = ["eager", "compile"]
DTYPE_SIZE = {"bf16": 2, "f16": 2, "f32": 4}
DEFAULT_ROWS = [1, 16, 64, 512, 4096, 8192, 32768]
DEFAULT_DIMS = [128, 1025, 2048, 4096, 5120, 8192, 16384, 65536]
QUICK_SHAPES = [(8192, 4096), (32768, 4096), (32768, 8192), (8192, 16384), (8192, 65536), (32768, 1025)]
# rmsnorm-bench's default sweep adds these fp16/fp32 shapes (8192 rows) to the bf16 sweep.
EXTRA_DTYPES, EXTRA_DIMS, EXTRA_ROWS = ["f16", "f32"], [4096, 8192], 8192
GRAPH_MAX_ROWS = 64
CSV_HEADER = ("device,op,dtype,rows,dim,variant,bytes,time_us,gbps,copy_us,copy_gbps,ratio,graph,"
              "empty_us,x_empty,note")

START = time.perf_counter()


def progress(msg):
    print(f"[{time.perf_counter() - START:7.1f}s] {msg}", file=sys.stderr, flush=True)


def model_bytes(op, R, D, xs):
    rd = R * D
    return {"forward": rd * 2 * xs, "add_forward": rd * 4 * xs, "forward_quant": rd * (xs + 1),
            "add_forward_quant": rd * (3 * xs + 1), "backward": rd * 3 * xs}[op]


def peer_label(op, peer):
    if peer == "compile":
        return "torch.compile"
    return "torch.eager_composed" if op.endswith("quant") else "torch.eager"


def rotation_sets(per_set_bytes, l2_bytes):
    """Buffer sets so that one pass over them exceeds 2× L2 (each call then reads HBM), 1..64."""
    return max(1, min(64, (2 * l2_bytes) // max(per_set_bytes, 1) + 1))


class Result:
    def __init__(self, op, dtype, R, D, variant):
        self.op, self.dtype, self.rows, self.dim, self.variant = op, dtype, R, D, variant
        self.bytes = 0.0
        self.us = 0.0
        self.copy_us = 0.0
        self.empty_us = -1.0
        self.graph = False
        self.note = ""
        self.measured = False

    def csv_line(self, device):
        ok = self.measured
        gbps = self.bytes / (self.us * 1e3) if ok else 0.0
        cgbps = self.bytes / (self.copy_us * 1e3) if ok else 0.0
        ratio = self.copy_us / self.us if ok else 0.0
        x_empty = self.us / self.empty_us if ok and self.empty_us > 0 else 0.0
        note = self.note.replace('"', "'").replace("\n", " ")
        return (f'"{device}",{self.op},{self.dtype},{self.rows},{self.dim},{self.variant},{self.bytes:.0f},'
                f'{self.us:.3f},{gbps:.1f},{self.copy_us:.3f},{cgbps:.1f},{ratio:.4f},{int(self.graph)},'
                f'{self.empty_us:.3f},{x_empty:.3f},"{note}"')

    def table_line(self):
        head = f"{self.op:18s} {self.dtype:5s} {self.rows:6d} {self.dim:6d} {self.variant:22s}"
        if not self.measured:
            return f"{head} {self.note}"
        line = (f"{head} {self.us:10.2f} {self.bytes / (self.us * 1e3):9.1f} "
                f"{self.bytes / (self.copy_us * 1e3):9.1f} {self.copy_us / self.us:7.3f}")
        if self.empty_us > 0:
            line += f" {self.empty_us:9.2f} {self.us / self.empty_us:7.2f}"
        else:
            line += f" {'':9s} {'':7s}"
        return line + (f"  {self.note}" if self.note else "")


TABLE_HEADER = (f"{'op':18s} {'dtype':5s} {'R':>6s} {'D':>6s} {'variant':22s} {'time_us':>10s} {'GB/s':>9s} "
                f"{'copyGB/s':>9s} {'ratio':>7s} {'empty_us':>9s} {'x_empty':>7s}")


def short_error(e):
    """The exception's type and message on one line (dynamo's messages start with a bare
    'backend raised:' line, so the first few non-empty lines are kept)."""
    lines = [v.strip() for v in str(e).splitlines() if v.strip()]
    return f"{type(e).__name__}: {' '.join(lines[:4])}"[:300]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", help="comma list (default: rmsnorm-bench's sweep)")
    ap.add_argument("--dims", help="comma list (default: rmsnorm-bench's sweep)")
    ap.add_argument("--ops", help="comma list of " + ",".join(OPS) + " (default: all)")
    ap.add_argument("--dtypes", help="comma list of bf16,f16,f32 (default bf16, plus rmsnorm-bench's "
                                     "f16/f32 extras in the default sweep)")
    ap.add_argument("--peers", help="comma list of eager,compile (default: both)")
    ap.add_argument("--csv", help="write the rows as CSV to this path")
    ap.add_argument("--iters", type=int, default=50, help="timed calls per measurement (median; default 50)")
    ap.add_argument("--quick", action="store_true",
                    help="shapes " + ", ".join(f"{r}x{d}" for r, d in QUICK_SHAPES))
    ap.add_argument("--no-extra", action="store_true", help="no f16/f32 extra shapes in the default sweep")
    ap.add_argument("--compile-budget", type=float, default=None,
                    help="seconds of compilation, summed; once spent, later torch.compile rows are "
                         "'skipped' (default: 60 with --quick, unlimited otherwise)")
    args = ap.parse_args()

    def int_list(s):
        return [int(v) for v in s.split(",") if v.strip()]

    ops = args.ops.split(",") if args.ops else list(OPS)
    # A peer by kind (eager, compile) or by its label (torch.eager, torch.eager_composed, ...).
    peers = [v.replace("torch.", "").replace("eager_composed", "eager")
             for v in args.peers.split(",")] if args.peers else list(PEERS)
    dtypes = args.dtypes.split(",") if args.dtypes else ["bf16"]
    for name, got, allowed in (("op", ops, OPS), ("peer", peers, PEERS), ("dtype", dtypes, list(DTYPE_SIZE))):
        bad = [v for v in got if v not in allowed]
        if bad:
            ap.error(f"unknown {name} {','.join(bad)} (known: {','.join(allowed)})")
    iters = max(5, args.iters)
    if args.quick and not (args.rows or args.dims):
        shapes = list(QUICK_SHAPES)
    else:
        rows = int_list(args.rows) if args.rows else ([8192, 32768] if args.quick else DEFAULT_ROWS)
        dims = int_list(args.dims) if args.dims else ([4096, 8192] if args.quick else DEFAULT_DIMS)
        shapes = [(R, D) for R in rows for D in dims]
    # The extra dtypes as in rmsnorm-bench: only in the untouched default sweep.
    extras = not (args.quick or args.rows or args.dims or args.dtypes or args.no_extra)
    compile_budget = args.compile_budget if args.compile_budget is not None else (60.0 if args.quick else math.inf)

    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        print(f"peers.py: PyTorch is not importable ({e}); install torch with CUDA support "
              "(pip install torch) and run on a machine with an NVIDIA GPU", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print(f"peers.py: no benchmark: torch {torch.__version__} sees no CUDA device "
              f"(torch.version.cuda = {torch.version.cuda}); run it on the GPU host", file=sys.stderr)
        return 77

    runner = PeerRunner(torch, F, iters, compile_budget)
    print(f"device: {runner.device}, L2 {runner.l2 >> 20} MiB, torch {torch.__version__}, "
          f"triton {runner.triton_version}, iters {iters}")
    print(TABLE_HEADER, flush=True)
    # Shape by shape, every op at each: if the compile budget runs out, the shapes left without
    # a torch.compile row are the last ones (the --quick list is in order of interest), not an op.
    shape_list = [(dt, R, D) for dt in dtypes for R, D in shapes]
    if extras:
        shape_list += [(dt, EXTRA_ROWS, D) for dt in EXTRA_DTYPES for D in EXTRA_DIMS]
    cases = [(op, dt, R, D) for dt, R, D in shape_list for op in ops]
    # The CSV is written row by row, so that a run stopped by a time limit keeps what it measured.
    csv_file = open(args.csv, "w") if args.csv else None
    if csv_file:
        csv_file.write(CSV_HEADER + "\n")
    results = []
    for n, (op, dt, R, D) in enumerate(cases):
        for peer in peers:
            r = runner.run(op, dt, R, D, peer)
            results.append(r)
            print(r.table_line(), flush=True)
            if csv_file:
                csv_file.write(r.csv_line(runner.device) + "\n")
                csv_file.flush()
            what = (f"{r.us:.2f} us, ratio {r.copy_us / r.us:.3f}" if r.measured else r.note)
            progress(f"{n + 1}/{len(cases)} {op} {dt} {R}x{D} {r.variant}: {what}")
    if csv_file:
        csv_file.close()
        progress(f"wrote {args.csv}")
    measured = sum(r.measured for r in results)
    progress(f"{measured} of {len(results)} rows measured; compile time {runner.compile_spent:.1f}s")
    if measured == 0:
        print("peers.py: nothing could be measured (see the notes above)", file=sys.stderr)
        return 1
    return 0


class PeerRunner:
    """Builds each (op, peer, shape) case on a dedicated stream and times it beside the copy."""

    def __init__(self, torch, F, iters, compile_budget):
        self.torch, self.F, self.iters = torch, F, iters
        self.compile_budget = compile_budget
        self.compile_spent = 0.0
        dev = torch.cuda.current_device()
        props = torch.cuda.get_device_properties(dev)
        self.device = torch.cuda.get_device_name(dev)
        self.l2 = int(getattr(props, "L2_cache_size", 0)) or (60 << 20)
        try:
            import triton
            self.triton_version = triton.__version__
        except ImportError:
            self.triton_version = "absent"
        self.fp8 = getattr(torch, "float8_e4m3fn", None)
        self.dtypes = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
        # Every timed call, capture and event lives on this stream: the backward of a graph built
        # on it runs on it too, so autograd.grad can be captured.
        self.stream = torch.cuda.Stream()
        # Each compiled case is compiled afresh after torch._dynamo.reset(); the recompile limit is
        # raised anyway so that no case can silently fall back to eager.
        try:
            import torch._dynamo
            for knob in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit",
                         "accumulated_cache_size_limit"):
                if hasattr(torch._dynamo.config, knob):
                    setattr(torch._dynamo.config, knob, 4096)
        except Exception:  # torch.compile rows will report their own failure
            pass
        with torch.cuda.stream(self.stream):
            self.cycles_per_ms = self._calibrate_sleep()
            self.aten_backward, self.aten_backward_why = self._check_aten_backward()
        progress(f"eager backward: {self.aten_backward_why}; spin kernel {self.cycles_per_ms / 1e6:.2f} Gcycles/s")

    # ---- timing ------------------------------------------------------------------------------

    def _calibrate_sleep(self):
        torch = self.torch
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(1000)
        a.record(self.stream)
        torch.cuda._sleep(2_000_000)
        b.record(self.stream)
        b.synchronize()
        ms = a.elapsed_time(b)
        return 2_000_000 / ms if ms > 0.01 else 2.0e6

    def time_us(self, launch, sets, graph):
        """Median µs per call of launch(k) (k: the buffer set). graph: replay a CUDA graph of
        max(32, sets) calls and divide; else one event pair per call, the calls queued behind a
        spin kernel so that host launch cost stays outside every pair."""
        torch, s, iters = self.torch, self.stream, self.iters
        for w in range(max(3, sets)):
            launch(w % sets)
        s.synchronize()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
        if graph:
            per_graph = max(32, sets)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, stream=s):
                for i in range(per_graph):
                    launch(i % sets)
            for _ in range(3):
                g.replay()
            ms = []
            for it in range(iters):
                starts[it].record(s)
                g.replay()
                ends[it].record(s)
                ends[it].synchronize()
                ms.append(starts[it].elapsed_time(ends[it]) / per_graph)
            del g
            return 1000.0 * statistics.median(ms)
        # Host cost of one call, to size the spin that keeps the GPU behind the host.
        t0 = time.perf_counter()
        for w in range(3):
            launch(w % sets)
        host_ms = (time.perf_counter() - t0) * 1e3 / 3
        s.synchronize()
        pad_ms = host_ms * iters * 1.5 + 0.5
        for _attempt in range(3):
            torch.cuda._sleep(int(min(pad_ms, 5000.0) * self.cycles_per_ms))
            spin_done = torch.cuda.Event()
            spin_done.record(s)
            for it in range(iters):
                starts[it].record(s)
                launch(it % sets)
                ends[it].record(s)
            # The spin must outlast the host's queueing: if it ended first, some pairs may
            # contain idle time waiting for the host. Retry with a longer spin.
            caught_up = spin_done.query()
            ends[-1].synchronize()
            if not caught_up:
                break
            pad_ms *= 4
        ms = [starts[it].elapsed_time(ends[it]) for it in range(iters)]
        return 1000.0 * statistics.median(ms)

    def measure(self, r, launch, sets, graph):
        """Times launch and the copy of the same bytes (and the empty kernel under a graph)."""
        torch = self.torch
        r.graph = graph
        if graph:
            try:
                r.us = self.time_us(launch, sets, True)
            except Exception as e:  # noqa: BLE001 - capture is best effort, fall back below
                torch.cuda.synchronize()
                r.graph = False
                r.note = f"graph capture failed ({short_error(e)}); timed without a graph"
        if not r.graph:
            r.us = self.time_us(launch, sets, False)
        copy_bytes = int(r.bytes / 2) // 16 * 16
        csets = rotation_sets(2 * copy_bytes, self.l2)
        src = [torch.randint(0, 255, (copy_bytes,), dtype=torch.uint8, device="cuda") for _ in range(csets)]
        dst = [torch.empty(copy_bytes, dtype=torch.uint8, device="cuda") for _ in range(csets)]
        r.copy_us = self.time_us(lambda k: dst[k].copy_(src[k]), csets, r.graph)
        del src, dst
        if r.graph:
            r.empty_us = self.time_us(lambda k: torch.cuda._sleep(0), 1, True)
        torch.cuda.synchronize()
        if not (r.us > 0 and r.copy_us > 0):
            raise RuntimeError(f"non-positive time (peer {r.us} us, copy {r.copy_us} us)")
        r.measured = True

    # ---- the peers ---------------------------------------------------------------------------

    def _rms(self, x, w):
        return self.F.rms_norm(x, (x.shape[-1],), w, EPS)

    def _quant(self, y):
        torch = self.torch
        s = (y.abs().amax(dim=-1, keepdim=True).float() / E4M3_MAX).clamp(min=SCALE_MIN)
        return (y.float() / s).to(self.fp8), s

    def _fns(self, op):
        """The peer's function for op (its eager form; torch.compile wraps the same function)."""
        torch, rms, quant = self.torch, self._rms, self._quant

        def forward(x, w):
            return rms(x, w)

        def add_forward(h, o, w):
            torch.add(h, o, out=h)
            return rms(h, w)

        def forward_quant(x, w):
            return quant(rms(x, w))

        def add_forward_quant(h, o, w):
            torch.add(h, o, out=h)
            return quant(rms(h, w))

        return {"forward": forward, "add_forward": add_forward, "forward_quant": forward_quant,
                "add_forward_quant": add_forward_quant, "backward": forward}[op]

    def _check_aten_backward(self):
        """Whether aten._fused_rms_norm_backward exists here with the assumed signature
        (grad_out, input, normalized_shape, rstd, weight, output_mask) -> (dx, dw) and agrees
        with autograd on a small case; the rstd comes from aten._fused_rms_norm."""
        torch = self.torch
        if not (hasattr(torch.ops.aten, "_fused_rms_norm_backward") and hasattr(torch.ops.aten, "_fused_rms_norm")):
            return False, "autograd.grad (this torch has no aten._fused_rms_norm_backward)"
        try:
            gen = torch.Generator(device="cuda").manual_seed(1)
            x = torch.randn(64, 1024, device="cuda", dtype=torch.bfloat16, generator=gen)
            w = torch.randn(1024, device="cuda", dtype=torch.bfloat16, generator=gen)
            dy = torch.randn(64, 1024, device="cuda", dtype=torch.bfloat16, generator=gen)
            rstd = torch.ops.aten._fused_rms_norm(x, [1024], w, EPS)[1]
            dx, dw = torch.ops.aten._fused_rms_norm_backward(dy, x, [1024], rstd, w, [True, True])
            xa, wa = x.clone().requires_grad_(), w.clone().requires_grad_()
            rx, rw = torch.autograd.grad(self._rms(xa, wa), (xa, wa), dy)

            def rel(a, b):
                return ((a.float() - b.float()).norm() / b.float().norm().clamp(min=1e-30)).item()
            ex, ew = rel(dx, rx), rel(dw, rw)
            if ex < 2e-2 and ew < 2e-2:
                return True, "aten._fused_rms_norm_backward"
            return False, f"autograd.grad (aten._fused_rms_norm_backward disagrees: rel err dx {ex:.2g}, dw {ew:.2g})"
        except Exception as e:  # noqa: BLE001 - any failure means: use autograd
            torch.cuda.synchronize()
            return False, f"autograd.grad (aten._fused_rms_norm_backward failed: {short_error(e)})"

    def run(self, op, dt, R, D, peer):
        torch = self.torch
        r = Result(op, dt, R, D, peer_label(op, peer))
        xs = DTYPE_SIZE[dt]
        r.bytes = float(model_bytes(op, R, D, xs))
        if op.endswith("quant") and self.fp8 is None:
            r.note = "skipped: this torch has no float8_e4m3fn"
            return r
        if peer == "compile" and self.compile_spent >= self.compile_budget:
            r.note = f"skipped: compile budget ({self.compile_budget:.0f} s) spent"
            return r
        free, _total = torch.cuda.mem_get_info()
        need = R * D * 4 * 4 * 2  # fp32-sized x, o, y and a temporary, twice (peers' temporaries)
        if need > 0.8 * free:
            r.note = f"skipped: needs ~{need / 2**30:.1f} GiB, {free / 2**30:.1f} GiB free"
            return r
        try:
            with torch.cuda.stream(self.stream), torch.set_grad_enabled(op == "backward"):
                self._run_case(r, op, dt, R, D, peer)
        except Exception as e:  # noqa: BLE001 - a failed peer is a row, not a crash
            try:
                torch.cuda.synchronize()
            except Exception:  # noqa: BLE001 - a sticky CUDA error; later rows will say so
                pass
            r.measured = False
            r.note = "failed: " + short_error(e)
        finally:
            torch.cuda.empty_cache()
        return r

    def _run_case(self, r, op, dt, R, D, peer):
        torch = self.torch
        dtype = self.dtypes[dt]
        xs = DTYPE_SIZE[dt]
        act = R * D * xs
        add = op.startswith("add_")
        out = R * D * (1 if op.endswith("quant") else xs)
        per_set = act * 3 if op == "backward" else act * (2 if add else 1) + out
        sets = rotation_sets(per_set, self.l2)
        gen = torch.Generator(device="cuda").manual_seed(R * 131 + D)
        w = (1.0 + 0.1 * torch.randn(D, device="cuda", generator=gen)).to(dtype)

        def activations(n):
            return [torch.randn(R, D, device="cuda", dtype=dtype, generator=gen) for _ in range(n)]

        fn = self._fns(op)
        compile_s = 0.0
        if peer == "compile":
            torch._dynamo.reset()
            fn = torch.compile(fn, mode="default", dynamic=False)
        outs = [None] * sets  # outputs kept per set, so that the writes also rotate
        t_compile = time.perf_counter()
        if op == "backward":
            x, dy = activations(sets), activations(sets)
            if peer == "eager" and self.aten_backward:
                rstd = [torch.ops.aten._fused_rms_norm(x[k], [D], w, EPS)[1] for k in range(sets)]

                def launch(k):
                    outs[k] = torch.ops.aten._fused_rms_norm_backward(dy[k], x[k], [D], rstd[k], w, [True, True])
                r.note = "aten._fused_rms_norm_backward"
            else:
                wg = w.detach().requires_grad_()
                for k in range(sets):
                    x[k].requires_grad_()
                y = [fn(x[k], wg) for k in range(sets)]  # the graphs, built once, kept

                def launch(k):
                    outs[k] = torch.autograd.grad(y[k], (x[k], wg), dy[k], retain_graph=True)
                if peer == "eager":
                    r.note = self.aten_backward_why
        elif add:
            h, o = activations(sets), activations(sets)

            def launch(k):
                outs[k] = fn(h[k], o[k], w)
        else:
            x = activations(sets)

            def launch(k):
                outs[k] = fn(x[k], w)
        if peer == "compile":
            launch(0)  # compiles (the backward too) and runs Triton's first-call autotuning
            torch.cuda.synchronize()
            compile_s = time.perf_counter() - t_compile
            self.compile_spent += compile_s
            r.note = f"compile {compile_s:.1f} s"
        graph = R <= GRAPH_MAX_ROWS
        note = r.note
        self.measure(r, launch, sets, graph)
        if r.note != note:  # the graph fallback said something; keep both
            r.note = "; ".join(v for v in (note, r.note) if v)


if __name__ == "__main__":
    sys.exit(main())
