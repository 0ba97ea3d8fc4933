"""bench/peers.py and scripts/bench_table.py without a GPU: the --peers list, the labels the table
knows as peers, a missing peer said once with its reason (Liger, QuACK, the FlashInfer plugin),
the ops a peer has no entry for, the FlashInfer plugin's table read and its forward called through
ctypes against a fake table (arguments, declining and failing statuses), the newest plugin found,
the table of ours beside each peer on a synthetic CSV, the command line's exits without PyTorch or
a device; where PyTorch is importable, the Liger, QuACK and FlashInfer launches on CPU tensors
with fakes in place of the libraries."""
import ctypes
import importlib.util
import inspect
import os
import re
import subprocess
import sys
import tempfile
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, os.pardir, os.pardir))
PEERS_PY = os.path.join(ROOT, "bench", "peers.py")
TABLE_PY = os.path.join(ROOT, "scripts", "bench_table.py")
failures = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        failures.append(what)


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


peers = load("bench_peers", PEERS_PY)
check(peers.short_error(RuntimeError("\x1b[91m\x1b[1merror[INTERNAL]:\x1b[0m bad IR\n  more")) ==
      "RuntimeError: error[INTERNAL]: bad IR more", "a failure's note keeps no terminal colour codes")
table = load("bench_table", TABLE_PY)
bridge = peers.bridge_module()


def raises(fn, exc):
    try:
        fn()
    except exc as e:
        return e
    return None


# --- --peers and the labels ----------------------------------------------------------------------
check(peers.parse_peers("eager,torch.compile,liger.rms_norm,flashinfer,quack.rmsnorm,liger")
      == ["eager", "compile", "liger", "flashinfer", "quack"], "--peers takes kinds and labels, once each")
check(peers.parse_peers("torch.eager_composed") == ["eager"], "the composed FP8 label names the eager peer")
e = raises(lambda: peers.parse_peers("eager,cudnn"), ValueError)
check(e is not None and "cudnn" in str(e), "an unknown peer is refused by name")
labels = {peers.peer_label(op, kind) for op in peers.OPS for kind in peers.PEERS}
check(labels == {v for vs in peers.LABELS.values() for v in vs}, f"every label peers.py writes is in LABELS ({sorted(labels)})")
check(all(v.startswith(table.PEER_PREFIXES) for v in labels), "bench_table.py knows every label as a peer's")
check(not any(v.startswith(table.PEER_PREFIXES) for v in ("fwd.block_row", "bwd.staged_rows", "plugin.demo.k")),
      "our variants are not taken for peers")
check(peers.model_bytes("add_backward", 2, 8, 2) == 2 * 8 * 4 * 2, "add_backward moves R·D·4|x| bytes, as rmsnorm-bench")


# --- missing peers, said once --------------------------------------------------------------------
def no_modules(name):
    raise ImportError(f"No module named '{name.split('.')[0]}'")


def flashinfer_loader_never(path, kernel):
    raise AssertionError("not called without a path")


ps, unavailable = peers.make_peers(peers.PEERS, None, importer=no_modules, loader=flashinfer_loader_never)
check([p.kind for p in ps] == ["eager", "compile"], "without the packages only PyTorch's peers remain")
check("liger_kernel" in unavailable.get("liger", ""), f"Liger's reason names the import error ({unavailable.get('liger')})")
check("quack" in unavailable.get("quack", ""), f"QuACK's reason names the import error ({unavailable.get('quack')})")
check("no plugin" in unavailable.get("flashinfer", "") and "FLASHINFER_INCLUDE_DIR" in unavailable["flashinfer"],
      "FlashInfer without a plugin says how to build one")
lines = peers.not_timed(ps, unavailable, peers.OPS)
for kind in ("liger", "quack", "flashinfer"):
    check(sum(v.startswith(kind + ": skipped: ") for v in lines) == 1, f"{kind} is said once")
check(sum("add_backward: skipped" in v for v in lines) == 2, "PyTorch's peers say once they have no add_backward")

e = raises(lambda: peers.FlashInferPeer("/nonexistent/libflashinfer_norm_plugin.so"), peers.PeerUnavailable)
check(e is not None and "no such file" in str(e), "a plugin path that does not exist is said")
with tempfile.TemporaryDirectory() as tmp:
    bogus = os.path.join(tmp, "libflashinfer_norm_plugin.so")
    with open(bogus, "w") as f:
        f.write("not a library\n")
    e = raises(lambda: peers.FlashInferPeer(bogus), peers.PeerUnavailable)
    check(e is not None and "cannot load" in str(e), f"a file that is no library is said ({e})")
    check(peers.default_flashinfer_plugin(tmp) is None, "no build/*/adapters plugin: none by default")
    for i, preset in enumerate(("gpu", "dev")):
        d = os.path.join(tmp, "build", preset, "adapters")
        os.makedirs(d)
        p = os.path.join(d, "libflashinfer_norm_plugin.so")
        open(p, "w").close()
        os.utime(p, (time.time() - 100 + 50 * i,) * 2)
    check(peers.default_flashinfer_plugin(tmp) == os.path.join(tmp, "build", "dev", "adapters", "libflashinfer_norm_plugin.so"),
          "the newest build/*/adapters plugin is the default")


# --- Liger and QuACK against fakes -----------------------------------------------------------------
def importer_of(modules):
    def imp(name):
        if name in modules:
            return modules[name]
        raise ImportError(f"No module named '{name}'")
    return imp


# --- ours in the peers' process (rmsnorm_cert.torch) ----------------------------------------------
check("rmsnorm_cert" in unavailable.get("ours", ""), f"ours without rmsnorm_cert.torch is said ({unavailable.get('ours')})")
check(peers.parse_peers("ours,rmsnorm_certified.torch") == ["ours"], "--peers takes ours by kind and label")


def fail_library():
    raise FileNotFoundError("librmsnorm_c.so not found: build the target rmsnorm_c, or name it in RMSNORM_C_LIB")


lib_path = os.path.join(peers.ROOT, "build", "gpu", "kernels", "librmsnorm_c.so")
ours_rt = types.SimpleNamespace(library_path=lambda: lib_path, _library=lambda: None)
ou = peers.OursPeer(importer_of({"rmsnorm_cert.torch": ours_rt}))
check(ou.label("backward") == "rmsnorm_certified.torch" and "build/gpu/kernels" in ou.about,
      f"ours' rows are rmsnorm_certified.torch, the library named ({ou.about})")
check([op for op in peers.OPS if not ou.missing_op(op)] == peers.OPS, "ours times every op")
e = raises(lambda: peers.OursPeer(importer_of({"rmsnorm_cert.torch": types.SimpleNamespace(
    library_path=lambda: lib_path, _library=fail_library)})), peers.PeerUnavailable)
check(e is not None and "librmsnorm_c.so" in str(e), f"ours without a built library is said ({e})")

# Each op's launch calls an op rmsnorm_cert.torch registers, with that op's number of arguments
# (read from its source: the ops cannot be loaded without PyTorch).
with open(os.path.join(ROOT, "python", "rmsnorm_cert", "torch.py")) as f:
    torch_src = f.read()
arity = {m.group(1): len([a for a in re.split(r",(?![^\[]*\])", m.group(2)) if a.strip()])
         for m in re.finditer(r'custom_op\("rmsnorm_certified::(\w+)".*?\)\s*\ndef \w+\((.*?)\)\s*->', torch_src, re.S)}
calls = []


class _Ops:
    def __getattr__(self, name):
        def op(*args):
            calls.append((name, len(args)))
            return ("out", "rstd")
        return op


fake_runner = types.SimpleNamespace(torch=types.SimpleNamespace(ops=types.SimpleNamespace(rmsnorm_certified=_Ops())))
for op in peers.OPS:
    case = types.SimpleNamespace(op=op, sets=2, outs=[None, None], w="w", R=4, D=8,
                                 activations=lambda: ["t0", "t1"])
    calls.clear()
    launch, _note = ou.build(fake_runner, case)
    calls.clear()
    launch(1)
    check(len(calls) == 1 and calls[0][0] in arity and calls[0][1] == arity[calls[0][0]] and case.outs[1] is not None,
          f"ours' {op} calls a registered op with its arguments ({calls}, {sorted(arity.items())})")



liger_mods = {"liger_kernel.ops.rms_norm": types.SimpleNamespace(LigerRMSNormFunction=object()),
              "liger_kernel.ops.fused_add_rms_norm": types.SimpleNamespace(LigerFusedAddRMSNormFunction=object())}
lg = peers.LigerPeer(importer_of(liger_mods))
check(lg.label("add_backward") == "liger.rms_norm", "Liger's rows are liger.rms_norm")
check([op for op in peers.OPS if not lg.missing_op(op)] == ["forward", "add_forward", "backward", "add_backward"],
      "Liger times forward, fused add and both backwards")
check("FP8" in (lg.missing_op("forward_quant") or ""), "Liger's FP8 ops are said to be absent")
check(lg.declines("forward", "bf16", 8, 131072) and not lg.declines("forward", "bf16", 8, 65536),
      "Liger declines D above 65536 only")
lg_old = peers.LigerPeer(importer_of({"liger_kernel.ops.rms_norm": liger_mods["liger_kernel.ops.rms_norm"]}))
check(lg_old.missing_op("add_forward") and not lg_old.missing_op("forward"), "a Liger without the fused add times the rest")


def quack_mods(fwd, bwd):
    return {"quack": types.SimpleNamespace(), "quack.rmsnorm": types.SimpleNamespace(rmsnorm_fwd=fwd, rmsnorm_bwd=bwd)}


def q_fwd(x, weight=None, bias=None, residual=None, out_dtype=None, residual_dtype=None, eps=1e-6, store_rstd=False):
    return ("fwd", x, weight, residual, eps, store_rstd)


def q_bwd(x, weight, dout, rstd, dresidual_out=None, has_bias=False, has_residual=False):
    return ("bwd", x, weight, dout, rstd, dresidual_out, has_residual)


def q_fwd_old(x, weight, eps=1e-6, store_rstd=False):
    return x


def q_bwd_old(x, weight, dout, rstd):
    return x


e = raises(lambda: peers.QuackPeer(importer_of({})), peers.PeerUnavailable)
check(e is not None and "QuACK is not importable" in str(e) and "quack" in str(e), f"QuACK missing: the ImportError ({e})")


def no_cutlass(name):
    raise ImportError("No module named 'cutlass'")


e = raises(lambda: peers.QuackPeer(no_cutlass), peers.PeerUnavailable)
check(e is not None and "cutlass" in str(e), "QuACK without nvidia-cutlass-dsl: the ImportError's text")
q = peers.QuackPeer(importer_of(quack_mods(q_fwd, q_bwd)))
check([op for op in peers.OPS if not q.missing_op(op)] == ["forward", "add_forward", "backward", "add_backward"],
      "QuACK 0.6's signatures: forward, fused add, both backwards")
q_old = peers.QuackPeer(importer_of(quack_mods(q_fwd_old, q_bwd_old)))
check(q_old.missing_op("add_forward") and q_old.missing_op("add_backward") and not q_old.missing_op("backward"),
      "a QuACK without residual arguments times the plain ops")
e = raises(lambda: peers.QuackPeer(importer_of(quack_mods(lambda x, weight: x, q_bwd))), peers.PeerUnavailable)
check(e is not None and "store_rstd" in str(e), "a QuACK whose rmsnorm_fwd lacks store_rstd is said")


# --- the FlashInfer plugin's table through ctypes, against a fake --------------------------------
B = bridge
calls = []
answer = {"status": 0, "message": b""}


def fake_forward(pa, message, size):
    a = pa.contents
    calls.append({"rows": a.rows, "dim": a.dim, "x": (a.x.data, a.x.dtype, a.x.stride),
                  "o": (a.o.data, a.o.dtype, a.o.stride), "y": (a.y.data, a.y.dtype, a.y.stride),
                  "g": a.g, "g_dtype": a.g_dtype, "convention": a.convention, "quant": a.quant,
                  "eps": a.eps, "rstd": a.rstd, "scale": a.scale, "stream": a.stream})
    if answer["status"]:
        text = answer["message"][: size - 1] + b"\0"
        ctypes.memmove(message, text, len(text))
    return answer["status"]


forward_cb = B._FORWARD_FN(fake_forward)
entries = (B._KernelEntry * 2)()
for i, name in enumerate((b"gemma_rmsnorm", b"rmsnorm")):
    entries[i].name = name
    entries[i].ops = (1 << 0) | (1 << 1) | B.OPS_NO_RSTD | B.OPS_SAME_TYPE_WEIGHTS
    entries[i].memory = 1
    entries[i].dtypes = (1 << B.DTYPES["f16"]) | (1 << B.DTYPES["bf16"])
    entries[i].conventions = 1 << B.CONVENTIONS["gemma" if i == 0 else "standard"]
    entries[i].min_dim, entries[i].max_dim, entries[i].alignment = 1, 58080, 16
    entries[i].forward = forward_cb
plugin = B._Plugin(B.ABI_VERSION, b"flashinfer", 2, ctypes.cast(entries, ctypes.POINTER(B._KernelEntry)))
table_ptr = ctypes.pointer(plugin)

k = peers.PluginKernel(table_ptr, "rmsnorm", bridge=B)
check(k.name == "flashinfer.rmsnorm" and k.ops == ["forward", "add_forward"], f"the table's kernel and ops ({k.name}, {k.ops})")
e = raises(lambda: peers.PluginKernel(table_ptr, "fused_rmsnorm", bridge=B), peers.PeerUnavailable)
check(e is not None and "gemma_rmsnorm, rmsnorm" in str(e), "a kernel the table lacks is said, with the ones it has")
e = raises(lambda: peers.PluginKernel(table_ptr, "gemma_rmsnorm", bridge=B), peers.PeerUnavailable)
check(e is not None and "standard" in str(e), "a kernel without the standard convention is refused")
plugin.abi_version = 2
e = raises(lambda: peers.PluginKernel(table_ptr, "rmsnorm", bridge=B), peers.PeerUnavailable)
check(e is not None and "ABI version 2" in str(e), "another ABI version is refused")
plugin.abi_version = B.ABI_VERSION
e = raises(lambda: peers.PluginKernel(ctypes.POINTER(B._Plugin)(), "rmsnorm", bridge=B), peers.PeerUnavailable)
check(e is not None and "NULL" in str(e), "a NULL table is refused")

check("f16, bf16" in (k.declines("f32", 4096) or ""), "f32 rows: skipped with the table's types")
check("16 bytes" in (k.declines("bf16", 1025) or ""), "rows of 2050 bytes: skipped for the table's alignment")
check(k.declines("bf16", 65536) is None and k.declines("f16", 8) is None,
      "the declared D range is left to the entry (the plain forward takes D = 65536)")

a = k.forward_args(4, 4096, "bf16", 0x10000, 0x20000, 0x30000, 0x40)
k.forward(a)
c = calls[-1]
code = B.DTYPES["bf16"]
check((c["rows"], c["dim"]) == (4, 4096), "rows and dim")
check(c["x"] == (0x10000, code, 4096) and c["y"] == (0x20000, code, 4096), "x and y: pointer, type, packed stride")
check(c["o"][0] is None, "a plain forward passes o.data NULL")
check(c["g"] == 0x30000 and c["g_dtype"] == code, "the weight in x's type")
check(c["convention"] == B.CONVENTIONS["standard"] and c["quant"] == 0, "standard convention, no FP8")
check(abs(c["eps"] - 1e-6) < 1e-12, "eps 1e-6")
check(c["rstd"] is None and c["scale"] is None, "rstd and scale NULL")
check(c["stream"] == 0x40, "the runner's stream")
k.forward(k.forward_args(2, 8, "f16", 0x100, 0x200, 0x300, 0x40, o=0x200))
c = calls[-1]
check(c["x"][0] == 0x100 and c["o"] == (0x200, B.DTYPES["f16"], 8) and c["y"][0] == 0x200,
      "the fused add: x = h, o, y = o")
answer.update(status=B.STATUS_UNSUPPORTED, message=b"the fused add takes D <= 58080")
e = raises(lambda: k.forward(a), peers.Skip)
check(e is not None and "status 2" in str(e) and "D <= 58080" in str(e), f"a declining status skips, with the message ({e})")
answer.update(status=B.STATUS_LAUNCH_FAILED, message=b"flashinfer::norm::RMSNorm: invalid argument")
e = raises(lambda: k.forward(a), RuntimeError)
check(e is not None and "status 7" in str(e) and "invalid argument" in str(e), "a failing status fails, with the message")
answer.update(status=0, message=b"")

fi = peers.FlashInferPeer("/x/libflashinfer_norm_plugin.so", loader=lambda path, name: k)
check(fi.label("forward") == "flashinfer.rmsnorm", "FlashInfer's rows are flashinfer.rmsnorm")
check("FP8" in (fi.missing_op("forward_quant") or "") and "FP8" in (fi.missing_op("add_forward_quant") or ""),
      "FlashInfer's FP8 ops: no entry in the plugin")
check("backward" in (fi.missing_op("backward") or "") and not fi.missing_op("add_forward"), "FlashInfer has no backward")

# --- the table beside the peers ------------------------------------------------------------------
HEADER = peers.CSV_HEADER
OURS = [
    'H200,forward,bf16,8192,4096,fwd.block_row,134217728,32.0,4194,30.4,4415,0.95,0,-1,0,""',
    'H200,backward,bf16,8192,4096,bwd.staged_rows,201326592,50.0,4026,43.0,4682,0.86,0,-1,0,""',
]
PEER_ROWS = [
    'H200,forward,bf16,8192,4096,torch.eager,134217728,60.0,2237,30.0,4474,0.50,0,-1,0,""',
    'H200,forward,bf16,8192,4096,torch.compile,134217728,33.0,4067,30.0,4474,0.909,0,-1,0,"compile 3 s"',
    'H200,forward,bf16,8192,4096,liger.rms_norm,134217728,34.0,3948,30.0,4474,0.882,0,-1,0,""',
    'H200,forward,bf16,8192,4096,flashinfer.rmsnorm,134217728,31.0,4330,30.0,4474,0.968,0,-1,0,""',
    'H200,forward,bf16,8192,4096,quack.rmsnorm,134217728,0,0,0,0,0,0,-1,0,"failed: x"',
    'H200,backward,bf16,8192,4096,liger.rms_norm,201326592,70.0,2876,42.0,4794,0.60,0,-1,0,""',
]


def csv_pair(tmp, ours, theirs):
    """bench.csv and peers.csv under tmp with these rows (CSV lines) below the header."""
    paths = os.path.join(tmp, "bench.csv"), os.path.join(tmp, "peers.csv")
    for path, lines in zip(paths, (ours, theirs)):
        with open(path, "w") as f:
            f.write("\n".join([HEADER] + lines) + "\n")
    return paths


with tempfile.TemporaryDirectory() as tmp:
    ours_csv, peers_csv = csv_pair(tmp, OURS, PEER_ROWS)
    r = subprocess.run([sys.executable, TABLE_PY, ours_csv, peers_csv], capture_output=True, text=True)
    out = r.stdout
    check(r.returncode == 0, f"bench_table.py runs ({r.stderr.strip()[-300:]})")
    lines = out.splitlines()
    head = next((i for i, v in enumerate(lines) if v.startswith("dtype") and "flashinfer.rmsnorm" in v), None)
    check(head is not None, "the forward block has a column per peer label")
    if head is not None:
        cols = lines[head].split()
        check(cols[:8] == ["dtype", "R", "D", "ours", "torch.eager", "torch.compile", "liger.rms_norm", "flashinfer.rmsnorm"],
              f"columns: ours, then each peer ({cols[:8]})")
        check("copy" in cols and "quack.rmsnorm" not in cols, "the copy's column; a peer with no measured row has none")
        row = lines[head + 1].split()
        check(row[3:8] == ["32.00", "60.00", "33.00", "34.00", "31.00"] and row[8] == "30.40",
              f"ours, each peer's and the copy's time_us ({row})")
        want = (0.95 / 0.968) * (134217728 / 134217728)
        check("flashinfer.rmsnorm" in row and f"{want:.2f}" in row and f"{31.0 / 32.0:.2f}" in row,
              "the best peer and ours/best peer by copy units and by time")
    check(any(v.startswith("backward") for v in lines) and "liger.rms_norm" in out.split("\nbackward\n")[-1],
          "the backward block beside Liger")
    check("at least as fast as the best peer: 1/2" in out, "the summary of ours / best peer")
    summary = out.split("beside the peers")[0]
    check("liger" not in summary and "torch" not in summary, "peer rows are not summarized as ours")

# --- the sweep, the targets and the generated part of docs/performance.md ------------------------
import re
with open(os.path.join(ROOT, "bench", "rmsnorm_bench.cu")) as f:
    bench_src = f.read()


def cxx_list(name):
    m = re.search(r"o\.%s = o\.quick \? std::vector<std::int64_t>\{[^}]*\}\s*: std::vector<std::int64_t>\{([^}]*)\}" % name,
                  bench_src)
    return [int(v) for v in m.group(1).split(",")] if m else None


check(cxx_list("rows") == peers.DEFAULT_ROWS and cxx_list("dims") == peers.DEFAULT_DIMS,
      f"peers.py's default sweep is rmsnorm-bench's ({cxx_list('rows')} x {cxx_list('dims')})")
check({1025, 5121, 8191} <= set(peers.DEFAULT_DIMS) and 65536 in peers.DEFAULT_ROWS and 512 in peers.DEFAULT_ROWS,
      "the default sweep holds the odd widths and R = 512-65536")
check(peers.sweep_rows(peers.DEFAULT_ROWS) == [8192, 32768, 4096, 65536, 512, 64, 16, 1]
      and sorted(peers.sweep_rows(peers.DEFAULT_ROWS)) == sorted(peers.DEFAULT_ROWS),
      "the full sweep measures 8192 and 32768 rows first, the rest of R >= 4096, then fewer rows")


def row(op, R, D, ratio, variant="fwd.block_row", graph=0, bytes_=1.0e8, t=10.0, note=""):
    return (f'H200,{op},bf16,{R},{D},{variant},{bytes_:.0f},{t},1,{t * ratio},1,{ratio},{graph},'
            f'{"0.8" if graph else "-1"},{"3.0" if graph else "0"},"{note}"')


MD_OURS = [
    row("forward", 8192, 4096, 0.99), row("forward", 8192, 8192, 0.96), row("forward", 32768, 1025, 0.80, "fwd.shifted_row"),
    row("forward", 512, 1024, 0.40),  # outside the region (R*D < 2^25): no target
    row("forward_quant", 8192, 4096, 0.60), row("forward_quant.block", 8192, 4096, 0.90),
    row("add_forward", 8192, 4096, 0.97), row("backward", 32768, 1025, 0.86, "bwd.packed_rows"),
    row("forward", 1, 4096, 0.70, graph=1), row("backward", 1, 4096, 0.55, "bwd.staged_rows", graph=1),
]
MD_PEERS = [row("add_forward", 8192, 4096, 0.99, "torch.compile"), row("forward", 8192, 4096, 0.90, "liger.rms_norm")]
# Ours over the best peer: copy units where both sides count the same bytes; where they do not (our
# backward counts its dg partials) the time ratio, since copies of different sizes are not in
# proportion at small sizes (here 2.0 us against 1.6 us for 5/3 of the bytes).
with tempfile.TemporaryDirectory() as tmp:
    b, p = csv_pair(tmp, [row("backward", 16, 4096, 0.5, "bwd.staged_rows", 1, 655360, 4.0),
                          row("forward", 16, 4096, 0.6, "fwd.block_row", 1, 262144, 2.0)],
                     [row("backward", 16, 4096, 0.533, "torch.compile", 1, 393216, 3.0),
                      row("forward", 16, 4096, 0.5, "torch.compile", 1, 262144, 2.2)])
    by = {c.key[0]: c for c in table.compare(*table.read_rows([b, p]))}
    bwd, fwd = by.get("backward"), by.get("forward")
    check(bwd is not None and not bwd.same_bytes and abs(bwd.score - 0.75) < 1e-9,
          f"different bytes: judged by the time ratio ({bwd and bwd.score})")
    check(fwd is not None and fwd.same_bytes and abs(fwd.score - 1.2) < 1e-9,
          f"the same bytes: judged in copy units ({fwd and fwd.score})")
    # Ours timed in the peers' process as well: that row decides, and it is never the best peer.
    with open(p, "a") as f:
        f.write(row("backward", 16, 4096, 0.64, "rmsnorm_certified.torch", 1, 393216, 2.5) + "\n")
        f.write(row("forward", 16, 4096, 0.45, "rmsnorm_certified.torch", 1, 262144, 2.4) + "\n")
    by = {c.key[0]: c for c in table.compare(*table.read_rows([b, p]))}
    bwd, fwd = by.get("backward"), by.get("forward")
    check(bwd is not None and bwd.basis == "process" and bwd.best["variant"] == "torch.compile"
          and abs(bwd.score - 0.64 / 0.533) < 1e-9, f"ours in the peers' process decides, never the best peer ({bwd and bwd.score})")
    check(fwd is not None and fwd.basis == "process" and abs(fwd.score - 0.9) < 1e-9,
          f"... also where our own run measured faster ({fwd and fwd.score})")
fwd_median = next(t for t in table.TARGETS if t.name.startswith("forward, median"))
with tempfile.TemporaryDirectory() as tmp:
    b, p = csv_pair(tmp, MD_OURS, MD_PEERS)
    ours, prs = table.read_rows([b, p])
    n, met, med, _ = table.evaluate(fwd_median, ours)
    check(n == 3 and met == 0 and abs(med - 0.96) < 1e-9, f"forward median over the region's 3 shapes ({n}, {med})")
    odd = next(t for t in table.TARGETS if t.name == "odd widths, forward")
    n, met, _m, misses = table.evaluate(odd, ours)
    check(n == 1 and met == 0 and misses[0][1:3] == (32768, 1025), "odd widths: 32768 x 1025 misses 0.85")
    blk = next(t for t in table.TARGETS if t.name == "FP8 forward per block")
    check(table.evaluate(blk, ours)[:2] == (1, 1), "the per-block FP8 forward is its own op and meets 0.85")
    small_b = next(t for t in table.TARGETS if t.name.endswith("backward") and t.where == "small")
    check(table.evaluate(small_b, ours)[:2] == (1, 1), "R <= 64 backward: 0.55 of the copy meets 0.50")
    doc = os.path.join(tmp, "perf.md")
    with open(doc, "w") as f:
        f.write("# P\n\nprose kept\n\n" + table.BEGIN + "\nold table\n" + table.END + "\n\n" + table.WHY_HEADING
                + "\n\n| against | op | R | D | why |\n| --- | --- | --- | --- | --- |\n"
                + "| copy | * | 32768+ | 1025 | issue-bound (measured) |\n"
                + "| copy | forward_quant | * | * | fwd.nothing_*, bwd.* | another kernel's reason |\n"
                + "| peer | add_forward | 4096-8192 | * | compile's fused kernel (measured) |\n")
    r = subprocess.run([sys.executable, TABLE_PY, "--doc", doc, "--about", "test run", b, p], capture_output=True, text=True)
    text = open(doc).read()
    check(r.returncode == 0 and "old table" not in text and "prose kept" in text and "issue-bound (measured) |" in text,
          f"--doc rewrites between the markers only ({r.stderr.strip()[-200:]})")
    gen = text.split(table.BEGIN)[1].split(table.END)[0]
    check("Run: test run." in gen and "| 32768 x 1025 |" in gen and "512 x 1024" not in gen.split("### Small R")[0],
          "the region table: region shapes only, with the run's line")
    misses_part = gen.split("### Misses")[1]
    miss_lines = [v for v in misses_part.splitlines() if v.startswith("| ") and not v.startswith("| target")]
    check(any("32768 x 1025" in v and "issue-bound" in v for v in miss_lines), "a miss gets the why row that covers it")
    check(any("add_forward" in v and "compile's fused kernel" in v for v in miss_lines), "a peer miss gets its peer row")
    check(any("| forward_quant | 8192 x 4096 |" in v and "**unexplained**" in v for v in miss_lines),
          "a miss no row covers is unexplained (a row for other variants does not cover it)")
    count_line = [v for v in misses_part.splitlines() if re.fullmatch(r"\d+ misses: .*", v)]
    check(len(count_line) == 1 and count_line[0].endswith(" 3 unexplained.")
          and int(count_line[0].split()[0]) == sum(1 for v in miss_lines if not v.startswith("| ---")),
          f"a line counts the misses by why row ({count_line})")
    rows6 = table.why_rows(table.WHY_HEADING + "\n\n| against | op | R | D | ours | why |\n| --- | --- | --- | --- | --- | --- |\n"
                           + "| copy | forward | * | 4096 | fwd.block_row, fwd.warp_* | registers |\n")
    check(rows6 == [table.Why("", "copy", "forward", "*", "4096", "fwd.block_row, fwd.warp_*", "registers")]
          and table.why_of(rows6, "copy", "forward", 8192, 4096, "fwd.warp_row").text == "registers"
          and table.why_of(rows6, "copy", "forward", 8192, 4096, "fwd.large_d") is None,
          "a why row's ours column names the variants it covers (globs)")
    # With an id column the misses cite the id, and the count line names it.
    with open(doc, "w") as f:
        f.write(table.BEGIN + "\n" + table.END + "\n\n" + table.WHY_HEADING
                + "\n\n| id | against | op | R | D | ours | why |\n| --- | --- | --- | --- | --- | --- | --- |\n"
                + "| `packed-issue` | copy | * | 32768+ | 1025 | * | issue-bound (measured) |\n")
    r2 = subprocess.run([sys.executable, TABLE_PY, "--doc", doc, b, p], capture_output=True, text=True)
    gen = open(doc).read().split(table.BEGIN)[1].split(table.END)[0]
    cited = [v for v in gen.split("### Misses")[1].splitlines() if "32768 x 1025" in v]
    check(r2.returncode == 0 and cited and all(v.endswith("| `packed-issue` |") for v in cited)
          and "issue-bound" not in gen
          and any(re.fullmatch(r"\d+ misses: `packed-issue` \d+, \d+ unexplained\.", v) for v in gen.splitlines()),
          f"a why row with an id is cited by it ({cited[:1]})")
    # --rewhy: a why row added to the doc is attached to the misses it lists, without the CSVs; the
    # rest of the generated part stays as it was.
    with open(doc) as f:
        before = f.read()
    with open(doc, "w") as f:
        f.write(before.rstrip("\n") + "\n| `fp8-test` | copy | forward_quant | 8192 | 4096 | * | measured (test) |\n")
    r3 = subprocess.run([sys.executable, TABLE_PY, "--rewhy", doc], capture_output=True, text=True)
    after = open(doc).read()
    gen3 = after.split(table.BEGIN)[1].split(table.END)[0]
    fp8 = [v for v in gen3.split("### Misses")[1].splitlines() if "| forward_quant | 8192 x 4096 |" in v]
    check(r3.returncode == 0 and fp8 and fp8[0].endswith("| `fp8-test` |") and "`fp8-test` 1," in gen3
          and "miss(es) without a why row" in r3.stdout,
          f"--rewhy attaches a new why row to the doc's misses ({fp8[:1]}, {r3.stderr.strip()[-200:]})")
    keep = lambda t: [v for v in t.split(table.BEGIN)[1].split(table.END)[0].splitlines() if "misses" not in v
                      and "8192 x 4096 | 0.600" not in v]
    check(keep(before) == keep(after), "--rewhy changes only the misses' why cells and the count line")
    r4 = subprocess.run([sys.executable, TABLE_PY, "--rewhy", doc, b], capture_output=True, text=True)
    check(r4.returncode == 2 and "no CSV" in r4.stderr, "--rewhy with CSV files: a usage error")
    # Unexplained: the forward median, the FP8 forward per token, R = 1 forward at 0.70 (the odd-width
    # and peer misses have rows).
    check("3 miss(es) without a why row" in r.stdout, f"the count of unexplained misses ({r.stdout.strip()})")
    check(not any("liger" in v for v in miss_lines), "ours ahead of a peer is no miss")
    r = subprocess.run([sys.executable, TABLE_PY, "--doc", os.path.join(tmp, "bench.csv"), b], capture_output=True, text=True)
    check(r.returncode != 0 and "markers" in (r.stderr + r.stdout), "--doc on a file without the markers is refused")
    # --resume: the measured rows of a CSV peers.py wrote; a failed or skipped row is timed again.
    with open(p, "a") as f:
        f.write(row("backward", 8192, 4096, 0, "quack.rmsnorm", note="failed: x") + "\n")
    keys = peers.measured_keys(p)
    check(("add_forward", "bf16", 8192, 4096, "torch.compile") in keys and not any(k[4] == "quack.rmsnorm" for k in keys),
          "--resume keeps the measured rows only")
    check(peers.measured_keys(b + ".absent") == set(), "--resume on no file starts afresh")

# The run's spread: our kernel timed twice (rmsnorm-bench, and the peers' process) at R >= 4096; a
# peer miss smaller than its op's spread there cites the run-spread row, and only where no other row
# covers it; a larger miss, or one below 4096 rows, does not.
with tempfile.TemporaryDirectory() as tmp:
    sp_ours = [row("forward", R, 4096, 0.95, t=10.0) for R in (4096, 8192, 32768)] + [row("forward", 512, 4096, 0.9, t=4.0)]
    sp_here = [row("forward", 4096, 4096, 0.95, "rmsnorm_certified.torch", t=10.2),   # 2 % apart
               row("forward", 8192, 4096, 0.95, "rmsnorm_certified.torch", t=10.1),   # 1 %
               row("forward", 32768, 4096, 0.95, "rmsnorm_certified.torch", t=10.0),  # 0 %
               row("forward", 512, 4096, 0.9, "rmsnorm_certified.torch", t=5.0)]      # 25 %: below 4096 rows, not counted
    sp_peers = [row("forward", 4096, 4096, 0.96, "torch.compile"),    # ours 0.95 / 0.96: 1 % behind
                row("forward", 8192, 4096, 1.00, "torch.compile"),    # 5 % behind
                row("forward", 512, 4096, 0.905, "torch.compile")]    # 0.6 % behind, but at 512 rows
    b, p = csv_pair(tmp, sp_ours, sp_here + sp_peers)
    ours_sp, peers_sp = table.read_rows([b, p])
    spread = table.run_spread(ours_sp, peers_sp)
    check(set(spread) == {"forward"} and abs(spread["forward"] - (1 - 10.0 / 10.2)) < 1e-9,
          f"the spread: the 90th percentile of |t1/t2 - 1| over R >= 4096 (one of three shapes 2 % apart: {spread})")
    ten = [4096 * (k + 1) for k in range(10)]
    os.mkdir(os.path.join(tmp, "ten"))
    b10, p10 = csv_pair(os.path.join(tmp, "ten"), [row("backward", R, 1024, 0.9, t=10.0) for R in ten],
                        [row("backward", R, 1024, 0.9, "rmsnorm_certified.torch", t=12.0 if R == ten[0] else 10.1) for R in ten])
    s10 = table.run_spread(*table.read_rows([b10, p10]))
    check(abs(s10["backward"] - (1 - 10.0 / 10.1)) < 1e-9,
          f"one shape of ten 17 % apart does not set the spread; the other nine, 1 % apart, do ({s10})")
    doc = os.path.join(tmp, "perf.md")
    why_head = ("\n\n" + table.WHY_HEADING + "\n\n| id | against | op | R | D | ours | why |\n| --- | --- | --- | --- | --- | --- | --- |\n"
                + "| `run-spread` | peer | * | 4096+ | * | * | within the run's spread (test) |\n")
    with open(doc, "w") as f:
        f.write(table.BEGIN + "\n" + table.END + why_head)
    r = subprocess.run([sys.executable, TABLE_PY, "--doc", doc, b, p], capture_output=True, text=True)
    gen = open(doc).read().split(table.BEGIN)[1].split(table.END)[0]
    peer_lines = {R: v for R in (512, 4096, 8192) for v in gen.split("### Misses")[1].splitlines()
                  if v.startswith("| at least as fast") and f"| {R} x 4096 |" in v}
    check(r.returncode == 0 and "; spread 2.0 %" in peer_lines.get(4096, "") and peer_lines[4096].endswith("| `run-spread` |"),
          f"a peer miss within the spread is marked and cites run-spread ({peer_lines.get(4096)}, {r.stderr[-200:]})")
    check("spread" not in peer_lines.get(8192, "spread") and peer_lines[8192].endswith("| **unexplained** |"),
          f"a miss larger than the spread is not ({peer_lines.get(8192)})")
    check("spread" not in peer_lines.get(512, "spread") and peer_lines[512].endswith("| **unexplained** |"),
          f"nor one below 4096 rows ({peer_lines.get(512)})")
    check("This run's spread, per op:" in gen and "forward 2.0 %" in gen, "the doc states the run's spread per op")
    # --rewhy keeps the mark, and a measured row that covers the miss comes before run-spread.
    with open(doc, "a") as f:
        f.write("| `compile-fused` | peer | forward | 4096 | 4096 | * | measured (test) |\n")
    r = subprocess.run([sys.executable, TABLE_PY, "--rewhy", doc], capture_output=True, text=True)
    line = [v for v in open(doc).read().splitlines() if v.startswith("| at least as fast") and "| 4096 x 4096 |" in v]
    check(r.returncode == 0 and line and "; spread 2.0 %" in line[0] and line[0].endswith("| `compile-fused` |"),
          f"--rewhy: another row that covers the miss is cited before run-spread ({line[:1]})")
    rows_sp = table.why_rows(open(doc).read())
    check(table.why_of(rows_sp, "peer", "backward", 8192, 8192) is None
          and table.why_of(rows_sp, "peer", "backward", 8192, 8192, within_spread=True).id == "run-spread",
          "run-spread covers no miss unless the miss is within the spread")

with open(os.path.join(ROOT, "docs", "performance.md")) as f:
    perf_doc = f.read()
check(perf_doc.count(table.BEGIN) == 1 and perf_doc.count(table.END) == 1 and perf_doc.index(table.BEGIN) < perf_doc.index(table.END),
      "docs/performance.md has one generated part between the markers")
whys = table.why_rows(perf_doc)
why_section = perf_doc.split(table.WHY_HEADING, 1)[1].split("\n## ", 1)[0]
check(len(whys) >= 1 and len(whys) == sum(1 for v in why_section.splitlines() if v.startswith("| ")
                                          and not v.startswith(("| id ", "| against", "| ---"))),
      f"every row of the doc's why table parses ({len(whys)})")
check(all(w.against in ("copy", "peer", "*") for w in whys), "each why row is against copy, peer or *")
ids = [w.id for w in whys]
check(all(ids) and len(set(ids)) == len(ids), f"each why row has an id of its own ({ids})")

# --- the command line without PyTorch or a device ------------------------------------------------
r = subprocess.run([sys.executable, PEERS_PY, "--help"], capture_output=True, text=True)
check(r.returncode == 0 and "--flashinfer-plugin" in r.stdout and "liger" in r.stdout, "--help")
r = subprocess.run([sys.executable, PEERS_PY, "--peers", "eager,cudnn"], capture_output=True, text=True)
check(r.returncode == 2 and "unknown peer cudnn" in r.stderr, "--peers with an unknown peer: a usage error")
env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
r = subprocess.run([sys.executable, PEERS_PY, "--quick"], capture_output=True, text=True, env=env, timeout=120)
check((r.returncode == 2 and "PyTorch is not importable" in r.stderr) or
      (r.returncode == 77 and "sees no CUDA device" in r.stderr), f"no PyTorch: 2, no device: 77 (rc {r.returncode})")

# --- the launches on CPU tensors, fakes in place of the libraries (with PyTorch only) -------------
try:
    import torch
except ImportError:
    torch = None
    print("(the launches on CPU tensors: skipped, no PyTorch)")
if torch is not None:
    def rms(x, w, eps):
        xf = x.float()
        return (xf * torch.rsqrt(xf.square().mean(-1, keepdim=True) + eps)).to(x.dtype) * w

    seen = {}

    class FakeRms(torch.autograd.Function):
        @staticmethod
        def forward(ctx, X, W, eps, offset=0.0, casting_mode="llama", in_place=True, row_mode=None):
            seen["rms"] = (eps, offset, casting_mode, in_place)
            ctx.save_for_backward(X, W)
            ctx.eps = eps
            return rms(X, W, eps)

        @staticmethod
        def backward(ctx, dY):
            X, W = ctx.saved_tensors
            with torch.enable_grad():
                x, w = X.detach().requires_grad_(), W.detach().requires_grad_()
                dx, dw = torch.autograd.grad(rms(x, w, ctx.eps), (x, w), dY)
            return dx, dw, None, None, None, None, None

    class FakeAdd(torch.autograd.Function):
        @staticmethod
        def forward(ctx, X, R, W, eps, offset=0.0, casting_mode="llama", in_place=False):
            seen["add"] = (eps, offset, casting_mode, in_place)
            S = X + R
            ctx.save_for_backward(S, W)
            ctx.eps = eps
            return rms(S, W, eps), S

        @staticmethod
        def backward(ctx, dY, dS):
            S, W = ctx.saved_tensors
            with torch.enable_grad():
                s, w = S.detach().requires_grad_(), W.detach().requires_grad_()
                dx, dw = torch.autograd.grad(rms(s, w, ctx.eps), (s, w), dY)
            return dx + dS, dx + dS, dw, None, None, None, None

    runner = types.SimpleNamespace(torch=torch, stream=types.SimpleNamespace(cuda_stream=0x77))
    liger = peers.LigerPeer(importer_of({
        "liger_kernel.ops.rms_norm": types.SimpleNamespace(LigerRMSNormFunction=FakeRms),
        "liger_kernel.ops.fused_add_rms_norm": types.SimpleNamespace(LigerFusedAddRMSNormFunction=FakeAdd)}))
    for op in ("forward", "add_forward", "backward", "add_backward"):
        case = peers.Case(torch, op, "f32", torch.float32, 4, 16, 2, device="cpu")
        with torch.set_grad_enabled(op.endswith("backward")):
            launch, note = liger.build(runner, case)
            launch(0)
            launch(1)
            launch(1)
        out = case.outs[1]
        if op == "forward":
            ok = out.shape == (4, 16)
        elif op == "add_forward":
            ok = len(out) == 2 and out[1].shape == (4, 16)
        elif op == "backward":
            ok = len(out) == 2 and out[0].shape == (4, 16) and out[1].shape == (16,)
        else:
            ok = len(out) == 3 and out[0].shape == (4, 16) and out[2].shape == (16,)
        check(ok and all(v is not None for v in case.outs), f"Liger {op}: launch(k) runs on set k, repeatably ({note})")
    check(seen.get("rms") == (1e-6, 0.0, "llama", True) and seen.get("add") == (1e-6, 0.0, "llama", False),
          "Liger's Functions get eps 1e-6, offset 0, casting llama, in_place as each defaults (True, False)")

    qcalls = []

    def qf(x, weight=None, bias=None, residual=None, out_dtype=None, residual_dtype=None, eps=1e-6, store_rstd=False):
        qcalls.append(("fwd", residual is not None, eps, store_rstd))
        s = x if residual is None else x + residual
        rstd = torch.rsqrt(s.float().square().mean(-1) + eps) if store_rstd else None
        return rms(s, weight, eps), s, rstd

    def qb(x, weight, dout, rstd, dresidual_out=None, has_bias=False, has_residual=False):
        qcalls.append(("bwd", dresidual_out is not None, has_residual, tuple(rstd.shape)))
        return torch.zeros_like(x), torch.zeros_like(weight), None, None

    quack = peers.QuackPeer(importer_of(quack_mods(qf, qb)))
    check(inspect.signature(qf).parameters.keys() >= peers.QuackPeer.FWD_ARGS, "the fake QuACK has 0.6's signature")
    for op in ("forward", "add_forward", "backward", "add_backward"):
        qcalls.clear()
        case = peers.Case(torch, op, "bf16", torch.bfloat16, 4, 16, 2, device="cpu")
        launch, note = quack.build(runner, case)
        launch(1)
        want = {"forward": [("fwd", False, 1e-6, False)],
                "add_forward": [("fwd", True, 1e-6, False)],
                "backward": [("fwd", False, 1e-6, True)] * 2 + [("bwd", False, False, (4,))],
                "add_backward": [("fwd", False, 1e-6, True)] * 2 + [("bwd", True, True, (4,))]}[op]
        check(qcalls == want, f"QuACK {op}: the calls ({qcalls})")

    fcalls = []
    fake_kernel = types.SimpleNamespace(ops=["forward", "add_forward"], name="flashinfer.rmsnorm",
                                        forward_args=lambda R, D, dt, x, y, g, stream, o=None: (R, D, dt, x, y, g, stream, o),
                                        forward=fcalls.append, declines=lambda dt, D: None)
    fi = peers.FlashInferPeer("/x/libflashinfer_norm_plugin.so", loader=lambda path, name: fake_kernel)
    for op in ("forward", "add_forward"):
        fcalls.clear()
        case = peers.Case(torch, op, "bf16", torch.bfloat16, 4, 16, 2, device="cpu")
        launch, note = fi.build(runner, case)
        launch(0)
        launch(1)
        R, D, dt, x, y, g, stream, o = fcalls[1]
        shape_ok = (R, D, dt, g, stream) == (4, 16, "bf16", case.w.data_ptr(), 0x77)
        alias_ok = (o is None and x != y) if op == "forward" else (o == y and x != o)
        check(shape_ok and alias_ok and fcalls[0][3] != fcalls[1][3], f"FlashInfer {op}: pointers per set ({note})")

print(f"bench peers: {'PASS' if not failures else 'FAIL'}")
sys.exit(1 if failures else 0)
