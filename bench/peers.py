#!/usr/bin/env python3
"""Time the peers a kernel engineer would pick (PyTorch eager, torch.compile, Liger-Kernel,
FlashInfer, QuACK) next to a device-to-device copy of the same bytes measured in the same process,
with the method of rmsnorm-bench, and write a CSV with exactly the header of rmsnorm-bench's so
that scripts/bench_table.py reads both.

Peers (--peers: eager, compile, liger, flashinfer, quack, ours; default all; variant column in
brackets):
  eager [torch.eager, torch.eager_composed for the FP8 ops]
    forward             F.rms_norm(x, (D,), w, eps=1e-6)
    add_forward         torch.add(h, o, out=h); F.rms_norm(h, ...)
    backward            aten._fused_rms_norm_backward(dy, x, [D], rstd, w, [True, True]) when this
                        torch has it and it agrees with autograd on a small case; else
                        torch.autograd.grad(y, (x, w), dy, retain_graph=True) on a graph built once
                        per buffer set (see the note)
    forward_quant       y = F.rms_norm(x); s = max(amax|y| / 448, 1/(448*512)) per row;
                        q = (y / s).to(float8_e4m3fn)
    add_forward_quant   h += o, then the same
  compile [torch.compile]
    every op above      the same function under torch.compile (mode default, dynamic=False),
                        compiled once per op and shape; for backward the forward is compiled and
                        the timed call is autograd.grad through the compiled backward
  liger [liger.rms_norm]  Liger-Kernel's autograd Functions (liger_kernel.ops.rms_norm and
                        fused_add_rms_norm), casting_mode "llama" (the Functions' and LigerRMSNorm's
                        default: x·r in fp32 rounded to x's type, then times w), offset 0, eps 1e-6
    forward             LigerRMSNormFunction.apply(x, w, eps, 0.0, "llama", True)
    add_forward         LigerFusedAddRMSNormFunction.apply(o, h, w, eps, 0.0, "llama", False)
                        -> (y, h + o), both fresh tensors
    backward            torch.autograd.grad through LigerRMSNormFunction, graph built once per
                        buffer set; in_place=True, Liger's default (LigerRMSNorm): dX is written
                        over dy, so later calls on a set see that dX as their dy (timing only);
                        the fused add's Functions and module default to in_place=False, kept
    add_backward        the same through LigerFusedAddRMSNormFunction, grad outputs (dy, dresidual)
  flashinfer [flashinfer.rmsnorm]  kernel "rmsnorm" of libflashinfer_norm_plugin.so
                        (adapters/flashinfer: FlashInfer's norm::RMSNorm and FusedAddRMSNorm behind
                        this project's plugin ABI, include/rmsnorm/plugin.h), called through ctypes
                        with the tensors' device pointers and the timing stream, rstd NULL (the
                        plugin keeps none), eps 1e-6. --flashinfer-plugin PATH, default the newest
                        build/*/adapters/libflashinfer_norm_plugin.so
    forward             x -> y, a tensor of its own
    add_forward         x = h (updated in place), o, y = o (FlashInfer's in-place form; no copy)
                        Rows outside the table's claims (f16/bf16 only; rows of a multiple of 16
                        bytes) are 'skipped' with the claim. Its declared D range (the fused add's
                        shared-memory bound, one entry for both ops) is left to the entry, which
                        declines what it cannot do: a declining status (UNSUPPORTED, MISALIGNED)
                        is 'skipped', any other non-zero status a failed row, each with the
                        plugin's message
  quack [quack.rmsnorm]  quack.rmsnorm.rmsnorm_fwd / rmsnorm_bwd (quack-kernels 0.6; needs
                        nvidia-cutlass-dsl, whose JIT compiles each (dtype, D) in the warm-up)
    forward             rmsnorm_fwd(x, w, eps=1e-6)
    add_forward         rmsnorm_fwd(o, w, residual=h, eps=1e-6) -> (y, h + o, None)
    backward            rmsnorm_bwd(x, w, dy, rstd), rstd from rmsnorm_fwd(..., store_rstd=True)
    add_backward        rmsnorm_bwd(x, w, dy, rstd, dresidual_out=dres, has_residual=True)
  ours [rmsnorm_certified.torch]  this project's kernels through its PyTorch ops
                        (python/rmsnorm_cert/torch.py; librmsnorm_c.so of a build, the newest
                        build/*/kernels/ or RMSNORM_C_LIB), the dispatcher's variant, the standard
                        convention: not a peer, but ours timed in this process, so that
                        scripts/bench_table.py compares ours with the best peer in one process,
                        one copy and one bytes model
    forward             ops.rms_norm_forward(x, w, eps, "standard") -> (y, rstd)
    add_forward         ops.fused_add_rms_norm(o, h, w, eps, "standard"): h = RN(h + o) in place
    forward_quant       ops.rms_norm_fp8(x, w, eps, "token", "standard", None) -> (q, scale)
    add_forward_quant   ops.fused_add_rms_norm_fp8(o, h, w, eps, "token", "standard", None): h = RN(h + o)
                        in place -> (q, scale)
    backward            ops.rms_norm_backward(dy, x, None, w, rstd, eps, "standard") -> (dx, dg),
                        rstd from rms_norm_forward once per buffer set
    add_backward        the same with dresidual
A peer that cannot run here (its package is not importable, the plugin is not built) and an op a
peer has no entry for (the FP8 ops beside Liger, FlashInfer and QuACK; the backward ops beside
FlashInfer; add_backward beside PyTorch) are said once, with the reason, above the table and
again in the last lines of the progress; they write no CSV rows.

Bytes model (bytes that must move; rstd, scales and the weight gradient are not counted), the
formulas of rmsnorm-bench with |x| the activation element size:
  forward R·D·2|x|, add_forward R·D·4|x|, forward_quant R·D·(|x|+1), add_forward_quant
  R·D·(3|x|+1), backward R·D·3|x|, add_backward R·D·4|x| (ours adds its dg workspace bytes; a
  peer's dg traffic is unknown, so its bytes have none: scripts/bench_table.py compares speeds
  with that in mind). bf16: 4RD, 8RD, 3RD, 7RD, 6RD, 8RD.

Method (as rmsnorm-bench), the same code for every peer: CUDA events, warm-up, median of --iters
timed calls; the inputs rotate over enough buffer sets to exceed 2× the L2 size (at most 64 sets);
the copy is Tensor.copy_ of bytes/2 (a cudaMemcpyAsync device to device) through its own rotation,
timed the same way in the same process, and ratio = copy time / peer time. For R <= 64 the calls
are captured in a CUDA graph (max(32, sets) calls per graph) and replayed, the copy likewise, next
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

GPU host:  PYTHONPATH=.deps/pylib python3 bench/peers.py --quick --csv peers.csv
           python3 bench/peers.py --csv peers.csv --peers eager  (the full sweep, eager only)
--quick: 6 shapes x 6 ops; PyTorch's two peers take about 30 s of measuring plus the compiling,
which is capped at 60 s (--compile-budget): about 1.5-2 min with a cold compile cache, under 1 min
with a warm one (Inductor's and Triton's on-disk caches, kept while the machine is); Liger's
Triton kernels and QuACK's CuTe kernels compile on their first call at each shape, in the warm-up.
The full sweep (rmsnorm-bench's: 96 bf16 shapes and 4 f16/f32 ones) compiles about 600 graphs
(6 ops x 100 shapes): split it over runs with --ops or --peers, or run it again with --resume, which
keeps the rows the CSV has and times only the missing ones. Its rows go in the order of
sweep_rows(): 8192 and 32768 first, then the rest of R >= 4096, then 512 and fewer, so that a sweep
stopped by a time limit holds the bandwidth region's shapes first.
"""
import argparse
import csv
import ctypes
import glob
import importlib
import inspect
import math
import os
import re
import statistics
import sys
import time

EPS = 1e-6
E4M3_MAX = 448.0
# The per-token scale's floor: a zero row gets scale 1/(448*512) instead of 0 (no division by 0).
SCALE_MIN = 1.0 / (E4M3_MAX * 512.0)

OPS = ["forward", "add_forward", "forward_quant", "add_forward_quant", "backward", "add_backward"]
PEERS = ["eager", "compile", "liger", "flashinfer", "quack", "ours"]
# Every variant label this script writes, by peer; scripts/bench_table.py knows a peer's row by
# these prefixes (torch., liger., flashinfer., quack.), and ours timed here by rmsnorm_certified.
LABELS = {"eager": ("torch.eager", "torch.eager_composed"), "compile": ("torch.compile",),
          "liger": ("liger.rms_norm",), "flashinfer": ("flashinfer.rmsnorm",), "quack": ("quack.rmsnorm",),
          "ours": ("rmsnorm_certified.torch",)}
DTYPE_SIZE = {"bf16": 2, "f16": 2, "f32": 4}
# rmsnorm-bench's default sweep (bench/rmsnorm_bench.cu; python/tests/test_bench_peers.py checks it).
DEFAULT_ROWS = [1, 16, 64, 512, 4096, 8192, 32768, 65536]
DEFAULT_DIMS = [128, 1024, 1025, 2048, 4096, 5120, 5121, 8191, 8192, 16384, 32768, 65536]
# The full sweep's row order (sweep_rows): the rows the targets' headline figures are drawn at,
# then the rest of the bandwidth region, then fewer rows, widest first.
HEADLINE_ROWS = (8192, 32768)
QUICK_SHAPES = [(8192, 4096), (32768, 4096), (32768, 8192), (8192, 16384), (8192, 65536), (32768, 1025)]
# rmsnorm-bench's default sweep adds these fp16/fp32 shapes (8192 rows) to the bf16 sweep.
EXTRA_DTYPES, EXTRA_DIMS, EXTRA_ROWS = ["f16", "f32"], [4096, 8192], 8192
GRAPH_MAX_ROWS = 64
CSV_HEADER = ("device,op,dtype,rows,dim,variant,bytes,time_us,gbps,copy_us,copy_gbps,ratio,graph,"
              "empty_us,x_empty,note")
ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
FLASHINFER_PLUGIN_GLOB = "build/*/adapters/libflashinfer_norm_plugin.so"
PLUGIN_ENTRY = "rmsnorm_plugin_v1"   # include/rmsnorm/plugin.h RMSNORM_PLUGIN_ENTRY
LIGER_MAX_DIM = 65536                # liger_kernel/ops/utils.py calculate_settings: BLOCK_SIZE <= 65536

START = time.perf_counter()


def progress(msg):
    print(f"[{time.perf_counter() - START:7.1f}s] {msg}", file=sys.stderr, flush=True)


def model_bytes(op, R, D, xs):
    rd = R * D
    return {"forward": rd * 2 * xs, "add_forward": rd * 4 * xs, "forward_quant": rd * (xs + 1),
            "add_forward_quant": rd * (3 * xs + 1), "backward": rd * 3 * xs, "add_backward": rd * 4 * xs}[op]


def peer_label(op, peer):
    if peer == "eager":
        return "torch.eager_composed" if op.endswith("quant") else "torch.eager"
    return LABELS[peer][0]


def sweep_rows(rows):
    """rows in the order a sweep measures them: HEADLINE_ROWS, then R >= 4096 ascending, then fewer
    rows descending (a stopped sweep has then measured the shapes the targets weigh most)."""
    def key(R):
        if R in HEADLINE_ROWS:
            return (0, HEADLINE_ROWS.index(R))
        return (1, R) if R >= 4096 else (2, -R)
    return sorted(rows, key=key)


def parse_peers(text):
    """The peer kinds of a --peers list, each named by kind (liger) or by a label it writes
    (liger.rms_norm, torch.eager_composed); duplicates dropped, order kept. Raises ValueError."""
    by_name = {kind: kind for kind in PEERS}
    by_name.update({label: kind for kind, labels in LABELS.items() for label in labels})
    kinds, bad = [], []
    for v in (s.strip() for s in text.split(",")):
        if not v:
            continue
        if v not in by_name:
            bad.append(v)
        elif by_name[v] not in kinds:
            kinds.append(by_name[v])
    if bad:
        raise ValueError(f"unknown peer {','.join(bad)} (known: {','.join(PEERS)})")
    return kinds


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


ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def short_error(e):
    """The exception's type and message on one line (dynamo's messages start with a bare
    'backend raised:' line, so the first few non-empty lines are kept)."""
    text = ANSI_ESCAPE.sub("", str(e))  # the CuTe DSL colours its compiler errors
    lines = [v.strip() for v in text.splitlines() if v.strip()]
    return f"{type(e).__name__}: {' '.join(lines[:4])}"[:300]


# ---- peers that may be absent ----------------------------------------------------------------

class PeerUnavailable(Exception):
    """The peer cannot run in this process at all (its package is missing, its plugin unbuilt)."""


class Skip(Exception):
    """This row is not timed, for the reason given (a shape or type outside the peer's claims)."""


def bridge_module():
    """rmsnorm_cert.bridge (the plugin ABI's ctypes structures), from python/ of this tree when it
    is not importable already."""
    try:
        from rmsnorm_cert import bridge
    except ImportError:
        sys.path.insert(0, os.path.join(ROOT, "python"))
        from rmsnorm_cert import bridge
    return bridge


def default_flashinfer_plugin(root=ROOT):
    """The most recently built build/*/adapters/libflashinfer_norm_plugin.so under root, or None."""
    found = glob.glob(os.path.join(root, FLASHINFER_PLUGIN_GLOB))
    return max(found, key=os.path.getmtime) if found else None


def _version(dist):
    try:
        from importlib.metadata import version
        return version(dist)
    except Exception:  # noqa: BLE001 - a missing dist-info only loses the version string
        return "unknown"


class TorchPeer:
    """PyTorch eager or torch.compile; the launches are PeerRunner's (_torch_launch)."""

    def __init__(self, kind):
        self.kind = kind
        self.about = ""

    def label(self, op):
        return peer_label(op, self.kind)

    def missing_op(self, op):
        return "no fused-add backward form is timed for PyTorch" if op == "add_backward" else None

    def declines(self, op, dt, R, D):
        return None

    def build(self, runner, case):
        return runner._torch_launch(case, self.kind)


class LigerPeer:
    """Liger-Kernel's RMSNorm through its autograd Functions, as adapters/liger.py calls them."""

    kind = "liger"
    CASTING = "llama"   # LigerRMSNormFunction's and LigerFusedAddRMSNormFunction's default
    OFFSET = 0.0

    def __init__(self, importer=importlib.import_module):
        try:
            rn = importer("liger_kernel.ops.rms_norm")
            self.rms = rn.LigerRMSNormFunction
        except Exception as e:  # noqa: BLE001 - torch, triton or liger_kernel missing or broken
            raise PeerUnavailable(f"Liger-Kernel is not importable ({short_error(e)})") from None
        try:
            self.add = importer("liger_kernel.ops.fused_add_rms_norm").LigerFusedAddRMSNormFunction
            self.add_why = None
        except Exception as e:  # noqa: BLE001 - an older Liger has no fused add
            self.add, self.add_why = None, short_error(e)
        self.version = _version("liger-kernel")
        self.about = f"liger {self.version}"

    def label(self, op):
        return LABELS["liger"][0]

    def missing_op(self, op):
        if op.endswith("quant"):
            return "Liger-Kernel has no FP8-quantizing RMSNorm"
        if op.startswith("add_") and self.add is None:
            return f"this Liger-Kernel has no LigerFusedAddRMSNormFunction ({self.add_why})"
        return None

    def declines(self, op, dt, R, D):
        if D > LIGER_MAX_DIM:
            return f"Liger's RMSNorm takes D <= {LIGER_MAX_DIM} (calculate_settings)"
        return None

    def build(self, runner, c):
        torch, outs, w = runner.torch, c.outs, c.w
        rms, add, cm, off = self.rms, self.add, self.CASTING, self.OFFSET
        note = f"Liger-Kernel {self.version}, casting_mode {cm} (its default)"
        if c.op == "forward":
            x = c.activations()

            def launch(k):
                outs[k] = rms.apply(x[k], w, EPS, off, cm, True)
        elif c.op == "add_forward":
            # Liger's X is the sub-layer output, R the residual stream: (Y, S = X + R).
            h, o = c.activations(), c.activations()

            def launch(k):
                outs[k] = add.apply(o[k], h[k], w, EPS, off, cm, False)
        elif c.op == "backward":
            x, dy = c.activations(), c.activations()
            wg = w.detach().requires_grad_()
            for v in x:
                v.requires_grad_()
            y = [rms.apply(x[k], wg, EPS, off, cm, True) for k in range(c.sets)]  # built once, kept

            def launch(k):
                outs[k] = torch.autograd.grad(y[k], (x[k], wg), dy[k], retain_graph=True)
            note += "; autograd.grad, in_place=True (dX over dy)"
        else:  # add_backward
            h, o, dy, dres = (c.activations() for _ in range(4))
            wg = w.detach().requires_grad_()
            for v in h + o:
                v.requires_grad_()
            ys = [add.apply(o[k], h[k], wg, EPS, off, cm, False) for k in range(c.sets)]

            def launch(k):
                outs[k] = torch.autograd.grad(ys[k], (o[k], h[k], wg), (dy[k], dres[k]), retain_graph=True)
            note += "; autograd.grad with (dy, dresidual), in_place=False (its default)"
        return launch, note


class QuackPeer:
    """QuACK's RMSNorm (quack.rmsnorm.rmsnorm_fwd / rmsnorm_bwd, quack-kernels 0.6's signatures)."""

    kind = "quack"
    FWD_ARGS = {"eps", "store_rstd"}
    ADD_FWD_ARGS = {"residual"}
    ADD_BWD_ARGS = {"dresidual_out", "has_residual"}

    def __init__(self, importer=importlib.import_module):
        try:
            importer("quack")
            m = importer("quack.rmsnorm")
            self.fwd, self.bwd = m.rmsnorm_fwd, m.rmsnorm_bwd
        except Exception as e:  # noqa: BLE001 - quack or nvidia-cutlass-dsl missing or broken
            raise PeerUnavailable(f"QuACK is not importable ({short_error(e)})") from None
        fp, bp = self._params(self.fwd), self._params(self.bwd)
        if fp is not None and not self.FWD_ARGS <= fp:
            raise PeerUnavailable("quack.rmsnorm.rmsnorm_fwd has no " + ", ".join(sorted(self.FWD_ARGS - fp))
                                  + " parameter (written against quack-kernels 0.6)")
        self.add_fwd = fp is None or self.ADD_FWD_ARGS <= fp
        self.add_bwd = self.add_fwd and (bp is None or self.ADD_BWD_ARGS <= bp)
        self.version = _version("quack-kernels")
        self.about = f"quack {self.version}"

    @staticmethod
    def _params(fn):
        try:
            return set(inspect.signature(fn).parameters)
        except (TypeError, ValueError):  # a wrapped callable without a signature: call as documented
            return None

    def label(self, op):
        return LABELS["quack"][0]

    def missing_op(self, op):
        if op.endswith("quant"):
            return "quack.rmsnorm has no FP8-quantizing RMSNorm with a per-row scale"
        if op == "add_forward" and not self.add_fwd:
            return "this quack.rmsnorm.rmsnorm_fwd takes no residual"
        if op == "add_backward" and not self.add_bwd:
            return "this quack.rmsnorm.rmsnorm_bwd takes no dresidual_out"
        return None

    def declines(self, op, dt, R, D):
        return None

    @staticmethod
    def rstd_of(result, R):
        """The fp32 [R] tensor among rmsnorm_fwd's results (its position has moved between
        QuACK versions)."""
        for t in result if isinstance(result, (tuple, list)) else (result,):
            if t is not None and getattr(t, "dim", None) and t.dim() == 1 and t.shape[0] == R \
                    and str(t.dtype) == "torch.float32":
                return t
        raise RuntimeError("quack.rmsnorm.rmsnorm_fwd(..., store_rstd=True) returned no fp32 rstd of R rows")

    def build(self, runner, c):
        fwd, bwd, outs, w = self.fwd, self.bwd, c.outs, c.w
        note = f"quack-kernels {self.version}"
        if c.op == "forward":
            x = c.activations()

            def launch(k):
                outs[k] = fwd(x[k], w, eps=EPS)
        elif c.op == "add_forward":
            h, o = c.activations(), c.activations()

            def launch(k):
                outs[k] = fwd(o[k], w, residual=h[k], eps=EPS)
        else:
            # x stands for the forward's input (h + o under the fused add): its rstd, once per set.
            x, dy = c.activations(), c.activations()
            rstd = [self.rstd_of(fwd(x[k], w, eps=EPS, store_rstd=True), c.R) for k in range(c.sets)]
            if c.op == "backward":
                def launch(k):
                    outs[k] = bwd(x[k], w, dy[k], rstd[k])
            else:
                dres = c.activations()

                def launch(k):
                    outs[k] = bwd(x[k], w, dy[k], rstd[k], dresidual_out=dres[k], has_residual=True)
        return launch, note


class PluginKernel:
    """One kernel of a plugin table (include/rmsnorm/plugin.h), its forward entry called through
    ctypes with the structures of rmsnorm_cert.bridge. owner keeps the library (and with it the
    table) loaded as long as this object lives."""

    def __init__(self, table, kernel_name, owner=None, bridge=None):
        self.b = b = bridge or bridge_module()
        self.owner = owner
        if not table:
            raise PeerUnavailable(f"{PLUGIN_ENTRY}() returned NULL")
        t = table.contents
        if t.abi_version != b.ABI_VERSION:
            raise PeerUnavailable(f"plugin ABI version {t.abi_version}, this script speaks {b.ABI_VERSION}")
        self.library = (t.name or b"?").decode(errors="replace")
        names = []
        for i in range(t.kernel_count):
            e = t.kernels[i]
            names.append((e.name or b"").decode(errors="replace"))
            if names[-1] == kernel_name:
                self.entry = e
                break
        else:
            raise PeerUnavailable(f"plugin table {self.library!r} has no kernel {kernel_name!r} "
                                  f"(it has {', '.join(names) or 'none'})")
        self.name = f"{self.library}.{kernel_name}"
        e = self.entry
        self.ops = [op for i, op in enumerate(b.OPS) if (e.ops >> i) & 1]
        if e.memory != 1:  # RMSNORM_MEMORY_DEVICE
            raise PeerUnavailable(f"{self.name} is not a device kernel (memory {e.memory})")
        if e.conventions and not (e.conventions >> b.CONVENTIONS["standard"]) & 1:
            raise PeerUnavailable(f"{self.name} claims no standard convention (y = x·r·w)")
        if any(op in self.ops for op in ("forward", "add_forward")) and not e.forward:
            raise PeerUnavailable(f"{self.name} claims a forward op but has no forward entry")
        self.message = ctypes.create_string_buffer(1024)

    def declines(self, dt, D):
        """Why the table's claims leave out rows of dt with D columns packed (stride D), or None.
        The declared D range is not applied: one table entry carries both forward ops, so it
        declares the narrower op's range (FlashInfer's fused add keeps its row in shared memory;
        its plain forward takes wider rows); the entry itself declines what it cannot do."""
        e, b = self.entry, self.b
        if e.dtypes and not (e.dtypes >> b.DTYPES[dt]) & 1:
            takes = ", ".join(n for c, n in sorted(b.DTYPE_NAMES.items()) if (e.dtypes >> c) & 1)
            return f"{self.name} takes {takes} rows only (its table)"
        row = D * DTYPE_SIZE[dt]
        if e.alignment and row % e.alignment:
            return f"{self.name} wants rows of a multiple of {e.alignment} bytes; D·{DTYPE_SIZE[dt]} = {row} (its table)"
        return None

    def forward_args(self, R, D, dt, x, y, g, stream, o=None):
        """The forward's arguments over packed [R, D] rows of dt at device addresses x, y, o
        (o: the fused add's sub-layer output; None for a plain forward), g of x's type, the
        standard convention, no FP8, rstd NULL, eps EPS, on stream (a cudaStream_t as an int)."""
        b = self.b
        code = b.DTYPES[dt]
        a = b._ForwardArgs()
        a.rows, a.dim = R, D
        a.x = b._Tensor(x, code, D)
        a.o = b._Tensor(o or None, code, D)
        a.y = b._Tensor(y, code, D)
        a.g, a.g_dtype = g, code
        a.convention, a.quant = b.CONVENTIONS["standard"], 0  # RMSNORM_QUANT_NONE
        a.eps = EPS
        a.rstd, a.scale = None, None
        a.stream = stream or None
        return a

    def forward(self, args):
        """Calls the forward entry; a declining status raises Skip, any other non-zero one
        RuntimeError, each with the plugin's message."""
        self.message[0] = b"\0"
        status = self.entry.forward(ctypes.byref(args), self.message, len(self.message))
        if status != 0:
            b = self.b
            what = (f"{self.name}: status {status}: "
                    f"{self.message.value.decode(errors='replace') or '(no message)'}")
            if status in (b.STATUS_UNSUPPORTED, b.STATUS_MISALIGNED):
                raise Skip(what)
            raise RuntimeError(what)


def load_plugin_kernel(path, kernel_name, cdll=ctypes.CDLL):
    """The kernel kernel_name of the plugin library at path, or PeerUnavailable saying why not."""
    if not os.path.isfile(path):
        raise PeerUnavailable(f"{path}: no such file")
    try:
        bridge = bridge_module()
    except Exception as e:  # noqa: BLE001
        raise PeerUnavailable(f"rmsnorm_cert.bridge is not importable ({short_error(e)})") from None
    try:
        lib = cdll(os.path.abspath(path))
        entry = getattr(lib, PLUGIN_ENTRY)
    except (OSError, AttributeError) as e:
        raise PeerUnavailable(f"cannot load {path} ({short_error(e)})") from None
    entry.restype, entry.argtypes = ctypes.POINTER(bridge._Plugin), []
    return PluginKernel(entry(), kernel_name, owner=lib, bridge=bridge)


class FlashInferPeer:
    """FlashInfer's norm kernels through this project's plugin (adapters/flashinfer)."""

    kind = "flashinfer"
    KERNEL = "rmsnorm"

    def __init__(self, path, loader=load_plugin_kernel):
        if not path:
            raise PeerUnavailable(f"no plugin: no {FLASHINFER_PLUGIN_GLOB} (configure with "
                                  "-DFLASHINFER_INCLUDE_DIR=<folder holding flashinfer/norm.cuh>, build "
                                  "flashinfer_norm_plugin) and no --flashinfer-plugin")
        self.path = path
        self.kernel = loader(path, self.KERNEL)
        self.about = f"flashinfer plugin {path}"

    def label(self, op):
        return LABELS["flashinfer"][0]

    def missing_op(self, op):
        if op in self.kernel.ops:
            return None
        claims = ", ".join(self.kernel.ops)
        if op.endswith("quant"):
            return f"no FP8-quantizing entry in the plugin ({self.kernel.name} claims {claims})"
        return f"FlashInfer has no RMSNorm backward ({self.kernel.name} claims {claims})"

    def declines(self, op, dt, R, D):
        return self.kernel.declines(dt, D)

    def build(self, runner, c):
        torch, k, stream = runner.torch, self.kernel, runner.stream.cuda_stream
        g = c.w.data_ptr()
        if c.op == "forward":
            x = c.activations()
            y = [torch.empty_like(v) for v in x]
            args = [k.forward_args(c.R, c.D, c.dt, x[i].data_ptr(), y[i].data_ptr(), g, stream)
                    for i in range(c.sets)]
            keep = (x, y)
            note = "x -> y"
        else:  # add_forward: h <- h + o, o <- y
            h, o = c.activations(), c.activations()
            args = [k.forward_args(c.R, c.D, c.dt, h[i].data_ptr(), o[i].data_ptr(), g, stream, o=o[i].data_ptr())
                    for i in range(c.sets)]
            keep = (h, o)
            note = "x = h, y = o (in place)"

        def launch(i, _keep=keep):  # the tensors behind the pointers live as long as launch
            k.forward(args[i])
        return launch, f"plugin {os.path.basename(self.path)}, {note}"


class OursPeer:
    """This project's kernels, timed in this process beside the peers (the same copy, the same
    bytes model): through its PyTorch ops (python/rmsnorm_cert/torch.py, librmsnorm_c.so of a
    build), the dispatcher's choice at each shape, the standard convention."""

    kind = "ours"

    def __init__(self, importer=importlib.import_module):
        try:
            try:
                rt = importer("rmsnorm_cert.torch")
            except ImportError:
                if os.path.join(ROOT, "python") not in sys.path:
                    sys.path.insert(0, os.path.join(ROOT, "python"))
                rt = importer("rmsnorm_cert.torch")
            self.lib = rt.library_path()
            rt._library()
        except Exception as e:  # noqa: BLE001 - no build of librmsnorm_c.so, or no torch
            raise PeerUnavailable(f"rmsnorm_cert.torch cannot run ({short_error(e)})") from None
        self.about = f"ours {os.path.relpath(self.lib, ROOT) if self.lib.startswith(ROOT) else self.lib}"

    def label(self, op):
        return LABELS["ours"][0]

    def missing_op(self, op):
        return None

    def declines(self, op, dt, R, D):
        return None

    def build(self, runner, c):
        ops, outs, w = runner.torch.ops.rmsnorm_certified, c.outs, c.w
        note = "rmsnorm_cert.torch, the dispatcher's variant"
        if c.op == "forward":
            x = c.activations()

            def launch(k):
                outs[k] = ops.rms_norm_forward(x[k], w, EPS, "standard")
        elif c.op == "add_forward":
            h, o = c.activations(), c.activations()

            def launch(k):
                outs[k] = ops.fused_add_rms_norm(o[k], h[k], w, EPS, "standard")  # h = RN(h + o) in place
        elif c.op == "forward_quant":
            x = c.activations()

            def launch(k):
                outs[k] = ops.rms_norm_fp8(x[k], w, EPS, "token", "standard", None)
        elif c.op == "add_forward_quant":
            h, o = c.activations(), c.activations()

            def launch(k):
                outs[k] = ops.fused_add_rms_norm_fp8(o[k], h[k], w, EPS, "token", "standard", None)  # h in place
        else:
            # x stands for the forward's input (h + o under the fused add): its rstd, once per set.
            x, dy = c.activations(), c.activations()
            rstd = [ops.rms_norm_forward(x[k], w, EPS, "standard")[1] for k in range(c.sets)]
            dres = c.activations() if c.op == "add_backward" else [None] * c.sets

            def launch(k):
                outs[k] = ops.rms_norm_backward(dy[k], x[k], dres[k], w, rstd[k], EPS, "standard")
        return launch, note


def make_peers(kinds, flashinfer_plugin=None, importer=importlib.import_module, loader=load_plugin_kernel):
    """(available peers in the order of kinds, {kind: why it is not available})."""
    peers, unavailable = [], {}
    for kind in kinds:
        try:
            if kind in ("eager", "compile"):
                peers.append(TorchPeer(kind))
            elif kind == "liger":
                peers.append(LigerPeer(importer))
            elif kind == "quack":
                peers.append(QuackPeer(importer))
            elif kind == "flashinfer":
                peers.append(FlashInferPeer(flashinfer_plugin, loader))
            elif kind == "ours":
                peers.append(OursPeer(importer))
        except PeerUnavailable as e:
            unavailable[kind] = str(e)
    return peers, unavailable


def not_timed(peers, unavailable, ops):
    """The once-only lines: each unavailable peer, then each (peer, op) without an entry."""
    lines = [f"{kind}: skipped: {why}" for kind, why in unavailable.items()]
    for p in peers:
        for op in ops:
            why = p.missing_op(op)
            if why:
                lines.append(f"{p.label(op)} {op}: skipped: {why}")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", help="comma list (default: rmsnorm-bench's sweep)")
    ap.add_argument("--dims", help="comma list (default: rmsnorm-bench's sweep)")
    ap.add_argument("--ops", help="comma list of " + ",".join(OPS) + " (default: all)")
    ap.add_argument("--dtypes", help="comma list of bf16,f16,f32 (default bf16, plus rmsnorm-bench's "
                                     "f16/f32 extras in the default sweep)")
    ap.add_argument("--peers", help="comma list of " + ",".join(PEERS) + " (default: all; one that cannot "
                                    "run here is skipped with the reason)")
    ap.add_argument("--flashinfer-plugin", metavar="PATH",
                    help="libflashinfer_norm_plugin.so (default: the newest " + FLASHINFER_PLUGIN_GLOB + ")")
    ap.add_argument("--csv", help="write the rows as CSV to this path (row by row)")
    ap.add_argument("--resume", action="store_true",
                    help="with --csv: keep the rows the file already has and time only the (op, dtype, R, D, "
                         "label) it has no measured row for, appending (a sweep split over several runs)")
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
    try:
        kinds = parse_peers(args.peers) if args.peers else list(PEERS)
    except ValueError as e:
        ap.error(str(e))
    dtypes = args.dtypes.split(",") if args.dtypes else ["bf16"]
    for name, got, allowed in (("op", ops, OPS), ("dtype", dtypes, list(DTYPE_SIZE))):
        bad = [v for v in got if v not in allowed]
        if bad:
            ap.error(f"unknown {name} {','.join(bad)} (known: {','.join(allowed)})")
    iters = max(5, args.iters)
    if args.quick and not (args.rows or args.dims):
        shapes = list(QUICK_SHAPES)
    else:
        rows = int_list(args.rows) if args.rows else ([8192, 32768] if args.quick else sweep_rows(DEFAULT_ROWS))
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

    plugin = args.flashinfer_plugin or default_flashinfer_plugin()
    peers, unavailable = make_peers(kinds, plugin)
    skipped = not_timed(peers, unavailable, ops)
    runner = PeerRunner(torch, F, iters, compile_budget)
    about = "".join(f", {p.about}" for p in peers if p.about)
    print(f"device: {runner.device}, L2 {runner.l2 >> 20} MiB, torch {torch.__version__}, "
          f"triton {runner.triton_version}{about}, iters {iters}")
    for line in skipped:
        print(line)
    print(TABLE_HEADER, flush=True)
    # Shape by shape, every op at each: if the compile budget runs out, the shapes left without
    # a torch.compile row are the last ones (the --quick list is in order of interest), not an op.
    shape_list = [(dt, R, D) for dt in dtypes for R, D in shapes]
    if extras:
        shape_list += [(dt, EXTRA_ROWS, D) for dt in EXTRA_DTYPES for D in EXTRA_DIMS]
    cases = [(op, dt, R, D) for dt, R, D in shape_list for op in ops]
    # The CSV is written row by row, so that a run stopped by a time limit keeps what it measured.
    done = measured_keys(args.csv) if args.resume else set()
    if done:
        progress(f"--resume: {len(done)} measured rows in {args.csv} kept")
    csv_file = None
    if args.csv:
        csv_file = open(args.csv, "a" if done else "w")
        if not done:
            csv_file.write(CSV_HEADER + "\n")
    results = []
    for n, (op, dt, R, D) in enumerate(cases):
        for peer in peers:
            if peer.missing_op(op) or (op, dt, R, D, peer.label(op)) in done:
                continue
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
    for line in skipped:
        progress("not timed: " + line)
    measured = sum(r.measured for r in results)
    progress(f"{measured} of {len(results)} rows measured; compile time {runner.compile_spent:.1f}s")
    if measured == 0:
        print("peers.py: nothing could be measured (see the notes above)", file=sys.stderr)
        return 1
    return 0


def measured_keys(path):
    """(op, dtype, R, D, label) of every measured row of a CSV this script wrote; empty when the
    file is absent or has another header (it is then written anew)."""
    if not path or not os.path.exists(path):
        return set()
    with open(path, newline="") as f:
        if f.readline().strip() != CSV_HEADER:
            return set()
        f.seek(0)
        rows = list(csv.DictReader(f))
    return {(r["op"], r["dtype"], int(r["rows"]), int(r["dim"]), r["variant"]) for r in rows
            if not r["note"].startswith(("skipped", "failed")) and float(r["time_us"] or 0) > 0}


class Case:
    """One (op, dtype, R, D) case: the weight, the number of buffer sets the rotation needs, a
    maker of activation sets, and a slot per set for the outputs (kept, so the writes rotate too)."""

    def __init__(self, torch, op, dt, dtype, R, D, sets, device="cuda"):
        self.torch, self.op, self.dt, self.dtype, self.R, self.D, self.sets = torch, op, dt, dtype, R, D, sets
        self.device = device
        self.gen = torch.Generator(device=device).manual_seed(R * 131 + D)
        self.w = (1.0 + 0.1 * torch.randn(D, device=device, generator=self.gen)).to(dtype)
        self.outs = [None] * sets

    def activations(self):
        """One [R, D] tensor per buffer set, N(0, 1) values of the case's dtype."""
        torch = self.torch
        return [torch.randn(self.R, self.D, device=self.device, dtype=self.dtype, generator=self.gen)
                for _ in range(self.sets)]


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
        r = Result(op, dt, R, D, peer.label(op))
        xs = DTYPE_SIZE[dt]
        r.bytes = float(model_bytes(op, R, D, xs))
        if op.endswith("quant") and self.fp8 is None:
            r.note = "skipped: this torch has no float8_e4m3fn"
            return r
        if peer.kind == "compile" and self.compile_spent >= self.compile_budget:
            r.note = f"skipped: compile budget ({self.compile_budget:.0f} s) spent"
            return r
        why = peer.declines(op, dt, R, D)
        if why:
            r.note = "skipped: " + why
            return r
        free, _total = torch.cuda.mem_get_info()
        need = R * D * 4 * 4 * 2  # fp32-sized x, o, y and a temporary, twice (peers' temporaries)
        if need > 0.8 * free:
            r.note = f"skipped: needs ~{need / 2**30:.1f} GiB, {free / 2**30:.1f} GiB free"
            return r
        try:
            with torch.cuda.stream(self.stream), torch.set_grad_enabled(op.endswith("backward")):
                self._run_case(r, op, dt, R, D, peer)
        except Skip as e:
            r.measured = False
            r.note = f"skipped: {e}"
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
        xs = DTYPE_SIZE[dt]
        act = R * D * xs
        out = R * D * (1 if op.endswith("quant") else xs)
        per_set = {"backward": act * 3, "add_backward": act * 4}.get(
            op, act * (2 if op.startswith("add_") else 1) + out)
        sets = rotation_sets(per_set, self.l2)
        case = Case(self.torch, op, dt, self.dtypes[dt], R, D, sets)
        launch, r.note = peer.build(self, case)
        graph = R <= GRAPH_MAX_ROWS
        note = r.note
        self.measure(r, launch, sets, graph)
        if r.note != note:  # the graph fallback said something; keep both
            r.note = "; ".join(v for v in (note, r.note) if v)

    def _torch_launch(self, c, peer):
        """launch(k) and its note for PyTorch eager (peer "eager") or torch.compile ("compile");
        a compiled case is compiled and run once here, its time added to compile_spent."""
        torch, op, outs, w = self.torch, c.op, c.outs, c.w
        fn = self._fns(op)
        note = ""
        if peer == "compile":
            torch._dynamo.reset()
            fn = torch.compile(fn, mode="default", dynamic=False)
        t_compile = time.perf_counter()
        if op == "backward":
            x, dy = c.activations(), c.activations()
            if peer == "eager" and self.aten_backward:
                rstd = [torch.ops.aten._fused_rms_norm(x[k], [c.D], w, EPS)[1] for k in range(c.sets)]

                def launch(k):
                    outs[k] = torch.ops.aten._fused_rms_norm_backward(dy[k], x[k], [c.D], rstd[k], w, [True, True])
                note = "aten._fused_rms_norm_backward"
            else:
                wg = w.detach().requires_grad_()
                for k in range(c.sets):
                    x[k].requires_grad_()
                y = [fn(x[k], wg) for k in range(c.sets)]  # the graphs, built once, kept

                def launch(k):
                    outs[k] = torch.autograd.grad(y[k], (x[k], wg), dy[k], retain_graph=True)
                if peer == "eager":
                    note = self.aten_backward_why
        elif op.startswith("add_"):
            h, o = c.activations(), c.activations()

            def launch(k):
                outs[k] = fn(h[k], o[k], w)
        else:
            x = c.activations()

            def launch(k):
                outs[k] = fn(x[k], w)
        if peer == "compile":
            launch(0)  # compiles (the backward too) and runs Triton's first-call autotuning
            torch.cuda.synchronize()
            compile_s = time.perf_counter() - t_compile
            self.compile_spent += compile_s
            note = f"compile {compile_s:.1f} s"
        return launch, note


if __name__ == "__main__":
    sys.exit(main())
