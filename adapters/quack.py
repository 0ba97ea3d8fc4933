"""QuACK's RMSNorm (PyPI `quack-kernels`, CuTe DSL kernels by Dao-AILab, written against 0.6.5) as
an adapter for rmsnorm_cert.

    python -m rmsnorm_cert certify adapters/quack.py      (kernels: plugin.quack.<name>)

QuACK's functional entry points are called directly (quack/rmsnorm.py of 0.6.5; line numbers below
are that version's):

    rmsnorm_fwd(x, weight=None, bias=None, residual=None, out_dtype=None, residual_dtype=None,
                eps=1e-6, store_rstd=False, weight_offset=0.0)                        rmsnorm.py:473
        -> (out, residual_out, rstd)                                                  rmsnorm.py:506
           out: fresh, x's type; residual_out: fresh RN(x + residual) in residual's type when a
           residual is given, else x itself; rstd: fresh fp32 [R] when store_rstd, else None
    rmsnorm_bwd(x, weight, dout, rstd, dresidual_out=None, has_bias=False, has_residual=False,
                weight_offset=0.0)                                                    rmsnorm.py:1350
        -> (dx, dw, db, dresidual)                                          rmsnorm.py:1381, 1425
           dx: fresh, x's type, with dresidual_out added in fp32 before its one rounding when
           dresidual_out has x's type (the path through quack::rmsnorm_bwd_f, rmsnorm.py:1374);
           dw: dw_partial.sum(dim=0).to(weight.dtype) (rmsnorm.py:1378); db None; dresidual = dx
           when has_residual

The calls are those bench/peers.py (QuackPeer) ran on the H200 with 0.6.5:

    forward       rmsnorm_fwd(x, w, eps=eps, store_rstd=True)           -> (y, rstd)  = (out, rstd)
    add_forward   rmsnorm_fwd(o, w, residual=h, eps=eps, store_rstd=True)
                                                  -> (y, h', rstd) = (out, residual_out, rstd)
    backward      rmsnorm_bwd(x, w, dy, rstd)                           -> (dx, dw)   = results 0, 1
    add_backward  rmsnorm_bwd(x, w, dy, rstd, dresidual_out=dres, has_residual=True)
                                                                        -> (dx, dw)   = results 0, 1

(add_forward with store_rstd=True joins two calls that each ran there; the harness judges rstd.)
Results are taken by position, as 0.6.5 returns them; a forward whose third result is not an fp32
vector of R rows (another QuACK version) fails the case with that said, rather than guessing.
The harness's rstd (fp32 [R], the forward's r) is what rmsnorm_bwd gets; it reads it, never
recomputes it (RMSNormBackward.kernel, rmsnorm.py:1039).

What the kernels compute (RMSNorm.kernel and RMSNormBackward.kernel, rmsnorm.py:151-360, 724-1206):
rows widened to fp32 (with the residual added in fp32 under the fused add), Σx² in fp32
(row_reduce, rmsnorm.py:315), r = rsqrt(Σx²/D + eps) with fastmath=True (rmsnorm.py:324),
y = (x·r)·w in fp32 (rmsnorm.py:350-357) and one rounding to x's type at the store (rmsnorm.py:360).
That is the contract's `standard` convention: kernel `rmsnorm` (weight_offset left at 0.0, so the
offset add is compiled out). With weight_offset=1.0 the weight is widened and 1.0 added in fp32
(rmsnorm.py:353-356), RN32(1 + g), the contract's `gemma` convention: kernel `rmsnorm_gemma`,
registered only where both functions take weight_offset (0.6.5 does; this call has not run on a GPU
through bench/peers.py). The backward applies the same offset to w in wdy (rmsnorm.py:1059-1062) and
leaves dw = Σ dout·x̂ unchanged, the contract's gemma gradient. QuACK has no llama mode (no
rounding of x·r to the input type) and no FP8 output with a per-row scale: neither is claimed.

The fused add, as read from the source: residual_out is the fp32 sum rounded once to the
residual's type (rmsnorm.py:255-260), which is RN(h + o) (the fp32 sum of two f16/bf16 values
rounds to the same 16-bit value as the exact sum: 24 >= 2·11 + 2). But Σx² and y are computed from
the fp32 sum, not from the rounded residual it writes (rmsnorm.py:315, 349-357), whereas the
contract's y is the norm of the written h' (docs/contract.md, "Fused add"). For 16-bit rows the two
differ wherever h + o is not a 16-bit value, as in FlashInfer's fused add (docs/peers.md); for
fp32 rows they are the same number. This is what the source says; no result of it is claimed here.

Layout: x, residual, dy and dresidual are passed as the harness's [R, D] views, row stride
included: QuACK compiles against tensors with a dynamic row stride and a unit column stride
(_compile_rmsnorm_fwd, rmsnorm.py:426; compile_utils.make_fake_tensor), so strided rows are taken
as they are; a view with stride(1) != 1 (never made by the bridge) would be copied. Those compiled
tensors assume each row start aligned to div elements, div = gcd(D, 128 / width) over the tensors'
widths (16 bytes at most), and so does the weight: the kernels claim 16-byte aligned rows and weight
(alignment=16, as FlashInfer's plugin does), and the harness hands them nothing else. Outputs are
QuACK's own fresh tensors (torch.empty_like); the bridge copies them into the harness's buffers.

dweight is what rmsnorm_bwd returns: per-CTA fp32 partial rows summed by torch and cast to the
weight's type, so the kernels claim dg in the weight's type only (dg_weight_type=True).

Domain: x f32, f16 or bf16 (the asserts of _rmsnorm_fwd and _rmsnorm_bwd, rmsnorm.py:395, 1245);
the weight of any of the three with any x (no type tie; it is widened to fp32 in the kernel), so
same_type_weights is False. 1 <= D <= 65536, a bound chosen here (Liger's adapter has the same):
QuACK goes further (its backward itself refuses D > 131072 for fp32 rows, RMSNormBackward.__init__),
but the claim stops there. R = 0 is taken (both functions return before launching anything).
Odd D with f16 or bf16 rows: the row is moved in vectors of gcd(D, 128 / widest width) elements
(RMSNorm.__call__, RMSNormBackward.__call__), one element when D is odd, and QuACK copies rows to
shared memory with cp.async (copy_utils.copy(..., is_async=True)), which takes 4, 8 or 16 bytes: the
DSL refuses a 2-byte copy when it compiles ("cp_size only supports (32, 64, 128)", seen on the H200
at D = 1025, 5121 and 8191 in bf16). The claims cannot say "even D", so such a case (R > 0) is
declined here with that reason (rmsnorm_cert.Declined, counted as not checked): the certificate shows
those cases as declined, with the reason, and a property or op that declines more than the floor
allows fails on that count (docs/certificates.md, "The floor"); nothing is hidden. Set
RMSNORM_CERT_QUACK_ODD=1 to hand those cases to QuACK anyway and see its own error as a failure.
fp32 rows of odd D move in 4-byte vectors and are QuACK's to run.
Read from the source, not seen: the fused add keeps a row tile of x and of the residual in shared
memory (8·D/cluster_n bytes for fp32 rows), which for fp32 rows may exceed the 227 KB of a Hopper
SM at some widths below 65536 (cluster_n is 1 up to D = 32768 there); such a case reports QuACK's own
launch error as a failure.

Each (D, type, op) is compiled by the CuTe DSL on its first call (seconds), so a certification run
spends much of its time compiling.
Not verified here: this adapter has been run only against CPU stand-ins (python/tests/
test_quack_adapter.py), never on a GPU. QuACK's compiled functions launch on the stream TVM FFI takes
from torch, presumably the current one, which the bridge sets; work left on another stream would be
read unfinished and fail the case. Whether the DSL's rsqrt(fastmath=True) or its fp32 arithmetic
flushes subnormals is not visible in QuACK's source.
"""
import importlib
import inspect
import math
import os
import sys

LIBRARY = "quack"
MAX_DIM = 65536          # the claim's bound (see the docstring)
ALIGNMENT = 16           # bytes: the compiled tensors' assumed alignment is at most 16
DEFAULT_SM_COUNT = 132   # H100/H200 SXM: the dg shape's CTA count where no CUDA device answers
PASS_ODD_WIDTHS = os.environ.get("RMSNORM_CERT_QUACK_ODD") == "1"
KERNELS = []
UNAVAILABLE = None
VERSION = None

# Parameters the calls above use (quack-kernels 0.6.5).
FWD_ARGS = {"eps", "store_rstd"}
ADD_FWD_ARGS = {"residual"}
ADD_BWD_ARGS = {"dresidual_out", "has_residual"}
GEMMA_ARGS = {"weight_offset"}


def _import_quack():
    """(quack, quack.rmsnorm). `python -m rmsnorm_cert certify adapters/quack.py` loads this file as
    a module named after its basename, "quack", entered in sys.modules before it runs
    (bridge.load_target): `import quack` would find this file. Its entry is dropped first (the
    bridge holds the module itself), so that QuACK's package takes the name for good: QuACK imports
    its own submodules by it, some of them lazily."""
    entry = sys.modules.get("quack")
    if entry is not None and getattr(entry, "__dict__", None) is globals():
        del sys.modules["quack"]
    package = importlib.import_module("quack")
    # quack/__init__.py binds the attribute `rmsnorm` to the function quack.rmsnorm.rmsnorm, so
    # `from quack import rmsnorm` is not the module: take it by its full name.
    return package, importlib.import_module("quack.rmsnorm")


def _params(fn):
    try:
        return set(inspect.signature(fn).parameters)
    except (TypeError, ValueError):  # a wrapped callable without a signature: called as documented
        return None


try:
    import torch
    import rmsnorm_cert as rc
    _quack, _qr = _import_quack()
    _fwd, _bwd = _qr.rmsnorm_fwd, _qr.rmsnorm_bwd
    try:
        from importlib.metadata import version as _version
        VERSION = _version("quack-kernels")
    except Exception:
        VERSION = getattr(_quack, "__version__", None) or "unknown"
except Exception as e:  # torch, the CuTe DSL (nvidia-cutlass-dsl), tvm-ffi or quack missing or broken
    UNAVAILABLE = f"quack adapter: cannot import QuACK's RMSNorm ({type(e).__name__}: {e})"

HAS_ADD_FORWARD = HAS_ADD_BACKWARD = HAS_GEMMA = False
if UNAVAILABLE is None:
    _fp, _bp = _params(_fwd), _params(_bwd)
    _missing = sorted(FWD_ARGS - _fp) if _fp is not None else []
    if _missing:
        UNAVAILABLE = (f"quack adapter: quack.rmsnorm.rmsnorm_fwd of quack-kernels {VERSION} has no "
                       f"{', '.join(_missing)} parameter (written against quack-kernels 0.6.5)")
    HAS_ADD_FORWARD = _fp is None or ADD_FWD_ARGS <= _fp
    HAS_ADD_BACKWARD = HAS_ADD_FORWARD and (_bp is None or ADD_BWD_ARGS <= _bp)
    HAS_GEMMA = _fp is not None and _bp is not None and GEMMA_ARGS <= _fp and GEMMA_ARGS <= _bp


# --------------------------------------------------------------------------- accumulation shapes
#
# QuACK picks its launch from the device's compute capability (rmsnorm_config.py): the shapes are
# worked out for the capability QuACK itself sees (QUACK_ARCH, else the current CUDA device), and
# for all of them at once where neither answers.

ARCHES = (8, 9, 10, 12)   # majors with different launches: no clusters, Hopper, Blackwell, SM12x
# (width of x, 128 / widest width) of the tensors of one call: 16-bit rows with a weight of their
# type, 16-bit rows with an fp32 weight, fp32 rows. The vector is gcd(D, 128 / widest width).
_TYPES = ((16, 8), (16, 4), (32, 4))


def _arch_majors():
    env = os.environ.get("QUACK_ARCH")   # QuACK's override (cute_dsl_utils.get_device_capacity)
    if env:
        digits = "".join(c for c in env if c.isdigit())
        if len(digits) >= 2:
            return (int(digits) // 10,)
    if torch.cuda.is_available():
        return (int(torch.cuda.get_device_capability()[0]),)
    return ARCHES


def _sm_count():
    if torch.cuda.is_available():
        return int(torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count)
    return DEFAULT_SM_COUNT


def _first(n, ladder, default):
    for limit, value in ladder:
        if n <= limit:
            return value
    return default


def _max_cluster(arch):
    """The cluster cap of RMSNorm._set_cluster_n / RMSNormBackward._set_cluster_n."""
    return 1 if arch < 9 else (8 if arch == 12 else 16)


def _forward_launches(n, width, arch):
    """[(threads per CTA, threads per row, cluster_n)] of RmsNormFwdConfig.from_analytical_heuristic
    (_for_hopper_fwd, rmsnorm_config.py:47-91, used on every arch)."""
    threads = 128 if n <= 16384 else 256
    tpr = _first(n, ((64, 8), (128, 16), (3072, 32), (6144, 64), (16384, 128)), 256)
    if arch < 9:
        cluster = 1
    else:
        if arch == 12 and width >= 32:
            ladder = ((8192, 1), (16384, 2), (32768, 4), (65536, 8))
        elif width == 16:
            ladder = ((16384, 1), (32768, 2), (65536, 4), (131072, 8))
        else:
            ladder = ((32768, 1), (65536, 2), (131072, 4), (262144, 8))
        cluster = _first(n, ladder, _max_cluster(arch))
    return [(threads, tpr, cluster)]


def _backward_launches(n, width, arch):
    """[(threads per CTA, threads per row, cluster_n)] of RmsNormBwdConfig.from_analytical_heuristic:
    _for_hopper_bwd below capability 10 (rmsnorm_config.py:135-165), _for_blackwell_bwd from 10 on
    (rmsnorm_config.py:168-262), whose cluster for rows of 48 KiB or more is 4 or 8 by the row count
    and may be raised to 16 for shared memory: all three are listed."""
    if arch < 10:
        threads = 128 if n <= 4096 else 256
        tpr = _first(n, ((64, 8), (128, 16), (256, 32), (512, 64), (4096, 128)), 256)
        cluster = 1 if arch < 9 else _first(n, ((8192, 1), (16384, 2), (32768, 4), (65536, 8)), 16)
        return [(threads, tpr, cluster)]
    tpr = _first(n, ((64, 8), (128, 16), (256, 32), (512, 64)), None)
    if tpr is not None:
        return [(128, tpr, 1)]
    row_bytes = n * width // 8
    if row_bytes >= 48 * 1024:
        return [(128, 128, c) for c in (4, 8, 16)]
    if row_bytes > 16 * 1024:
        return [(256, 256, 1)]
    return [(128, 128, 1)]


def _row_sum(n, vec, tpr, cluster, arch):
    """(terms per thread, tree depth) of one row_reduce (reduce.py:202) over a row of n elements held
    by tpr threads of each of cluster CTAs, vec elements a vector (ReductionBase._get_tiled_copy)."""
    cluster = min(cluster, _max_cluster(arch))                 # _set_cluster_n
    cluster = min(cluster, max(1, (n // vec) // tpr))          # ReductionBase._cap_cluster_n
    k = vec * -(-(n // vec) // (tpr * cluster))
    d = int(math.log2(min(tpr, 32)))                           # warp_reduce over min(tpr, 32) lanes
    warps = max(tpr // 32, 1)
    if cluster > 1:      # cluster_reduce: a chain of ceil(warps·cluster/32) per lane, then 32 lanes
        d += -(-(warps * cluster) // 32) + 5
    elif warps > 1:      # block_reduce: one value per warp, then a reduction over 32 lanes
        d += 5
    return max(1, min(k, n)), d


def _row_shape(n, arches):
    n = int(n)
    if n < 1:
        return (1, 0)
    k = d = 0
    for arch in arches:
        for width, per in _TYPES:
            vec = math.gcd(n, per)
            for _threads, tpr, cluster in _forward_launches(n, width, arch) + _backward_launches(n, width, arch):
                kk, dd = _row_sum(n, vec, tpr, cluster, arch)
                k, d = max(k, kk), max(d, dd)
    return (k, d)


def row_shape(n):
    """(per_thread, tree_depth) of QuACK's fp32 row sums: the forward's Σx² (RMSNorm.kernel,
    rmsnorm.py:315) and the backward's Σ x̂·wdy (RMSNormBackward.kernel, rmsnorm.py:1094), both
    reduce.row_reduce (reduce.py:202-257):

    - each thread holds its part of the row, k = vec·ceil((D/vec) / (tpr·cluster_n)) elements
      (vec = gcd(D, 128 / widest width), tpr threads of a row in each of cluster_n CTAs,
      ReductionBase._get_tiled_copy, reduction_base.py:42), reduced in the thread by
      TensorSSA.reduce (reduce.py:223), whose order is the DSL's: any order of k terms is covered
      by a chain of k, which is what is declared;
    - warp_reduce over min(tpr, 32) lanes (reduce.py:22, 238: shuffles for fp32 sums): log2 levels;
    - when the row spans several warps of a CTA, block_reduce (reduce.py:93): one value per warp
      through shared memory, lanes past the warp count holding exact zeros, then warp_reduce over
      32 lanes: 5 levels counted;
    - when it spans a cluster, cluster_reduce (reduce.py:114): the warps' values of every CTA, a
      chain of ceil(warps·cluster_n / 32) per lane, then 32 lanes: that chain + 5 counted.

    (threads, tpr, cluster_n) are QuACK's analytical heuristic (rmsnorm_config.py) for the forward
    and for the backward, cluster_n capped as its kernels cap it; the declared shape is the largest
    k and the largest depth over both ops, the three type combinations and the capability QuACK
    sees (all capabilities where no device answers). A function of D alone, so loose where another
    op or type would sum shorter: sound, not tight.
    """
    return _row_shape(n, _arch_majors())


def _hopper_ctas(n, sm):
    """rmsnorm_config._get_sm_count_hopper (rmsnorm_config.py:265)."""
    if n <= 8192:
        return sm * _first(n, ((256, 16), (1024, 8), (2048, 4), (4096, 2)), 1)
    return max(1, sm // 2) if n <= 16384 else sm * 2


def _blackwell_ctas(n, sm):
    """rmsnorm_config._get_sm_count_blackwell (rmsnorm_config.py:279)."""
    return sm * _first(n, ((256, 16), (1024, 8), (2048, 4)), 2)


# Widths where the backward's rows per CTA tile or its CTA count change (each stands for the
# interval up to it), through MAX_DIM.
_DG_WIDTHS = {False: (64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, MAX_DIM),
              True: (64, 128, 256, 512, 1024, 2048, MAX_DIM)}


def _dg_shape(rows, sm, arches):
    R = int(rows)
    if R < 1:
        return (1, 0)
    K = Dm = S = 0
    for arch in arches:
        blackwell = arch >= 10
        for n in _DG_WIDTHS[blackwell]:
            ctas = max(1, (_blackwell_ctas if blackwell else _hopper_ctas)(n, sm))
            for threads, tpr, _cluster in _backward_launches(n, 16, arch):
                m = max(1, threads // tpr)             # rows of a CTA tile (tiler_mn[0])
                tiles = -(-R // m)
                per = -(-tiles // ctas)                # tiles of the busiest CTA, one after another
                nb = min(ctas, tiles)                  # partial rows that are not exact zeros
                k, d = per, (m - 1) + nb
                K, Dm, S = max(K, k), max(Dm, d), max(S, k + d)
    if S >= R:
        return (R, 0)
    if Dm <= 64 and K + Dm == S:
        return (K, Dm)
    return (S, 0)


def dg_shape(rows):
    """(per_thread, tree_depth) of QuACK's dW column sum over R rows.

    rmsnorm_bwd launches P persistent CTAs (get_sm_count, rmsnorm_config.py:289: the SM count
    times 16, 8, 4, 2 or 1 by D, or half of it, on Hopper; times 16 down to 2 on Blackwell). CTA b
    takes the row tiles b, b + P, ... of m = threads/tpr rows each, and each of its threads adds
    dout·x̂ of its row of every tile into an fp32 accumulator, one tile after another
    (rmsnorm.py:985, 1142): a chain of ceil(ceil(R/m)/P). With m > 1 the first row's threads then
    add the other m - 1 rows' accumulators one by one through shared memory (rmsnorm.py:1168-1174):
    m - 1 more. The P partial rows are summed by torch, dw_partial.sum(dim=0) (rmsnorm.py:1378),
    in an order of its own; only nb = min(P, ceil(R/m)) of them are not exact zeros, so a term
    meets at most nb - 1 roundings there, counted as nb. Per width interval (k, d) = (chain,
    m - 1 + nb); dg_shape is a function of R alone, so the declaration covers every width: the
    largest k and depth when the depth stays within 64 and one width reaches both, else one chain
    of the largest k + d (the same bound, k + d being all the judge uses), and (R, 0), a chain of
    all rows, when that is no longer. The CTA count is the current device's (DEFAULT_SM_COUNT where
    no CUDA device answers).
    """
    return _dg_shape(rows, _sm_count(), _arch_majors())


# --------------------------------------------------------------------------- the calls

def _rows(t, name):
    if t.dim() != 2:
        raise ValueError(f"quack adapter: {name} must be 2-D [R, D], got {tuple(t.shape)}")
    if t.shape[1] > 1 and t.stride(1) != 1:
        t = t.contiguous()   # QuACK's compiled tensors have a unit column stride
    return t


def _weight(w):
    if w.dim() != 1:
        raise ValueError(f"quack adapter: weight must be 1-D, got {tuple(w.shape)}")
    return w if w.shape[0] <= 1 or w.stride(0) == 1 else w.contiguous()


def _check_width(x):
    """Declines 16-bit rows of odd D (R > 0): QuACK compiles no kernel for them (module docstring)."""
    R, D = x.shape[0], x.shape[1]
    if PASS_ODD_WIDTHS or R == 0 or D % 2 == 0 or x.dtype not in (torch.float16, torch.bfloat16):
        return
    raise rc.Declined(f"QuACK {VERSION} compiles no kernel for {str(x.dtype).replace('torch.', '')} rows of odd "
                      f"width (D = {D}): its rows move in vectors of gcd(D, 8) = 1 element, and the CuTe DSL's "
                      "cp.async takes 4, 8 or 16 bytes, not 2 (RMSNORM_CERT_QUACK_ODD=1 hands the case to it)")


def _forward_result(res, R):
    """(out, residual_out, rstd) of rmsnorm_fwd, rstd checked to be the fp32 [R] vector."""
    if not isinstance(res, (tuple, list)) or len(res) != 3:
        raise RuntimeError(f"quack.rmsnorm.rmsnorm_fwd returned {type(res).__name__}"
                           + (f" of {len(res)}" if isinstance(res, (tuple, list)) else "")
                           + f", not (out, residual_out, rstd) as quack-kernels 0.6.5 does (this is {VERSION})")
    out, residual_out, rstd = res
    if rstd is None or rstd.dim() != 1 or rstd.shape[0] != R or rstd.dtype != torch.float32:
        raise RuntimeError(f"quack.rmsnorm.rmsnorm_fwd(..., store_rstd=True) of quack-kernels {VERSION}: its third "
                           f"result is not the fp32 rstd of the {R} rows, as in 0.6.5")
    return out, residual_out, rstd


def _backward_result(res):
    """(dx, dw) of rmsnorm_bwd's (dx, dw, db, dresidual)."""
    if not isinstance(res, (tuple, list)) or len(res) != 4:
        raise RuntimeError(f"quack.rmsnorm.rmsnorm_bwd returned {type(res).__name__}"
                           + (f" of {len(res)}" if isinstance(res, (tuple, list)) else "")
                           + f", not (dx, dw, db, dresidual) as quack-kernels 0.6.5 does (this is {VERSION})")
    return res[0], res[1]


def _make(offset):
    """The op functions for weight_offset `offset` (0.0: the argument is not passed at all)."""
    extra = {"weight_offset": offset} if offset else {}

    def forward(x, weight, eps):
        x = _rows(x, "x")
        _check_width(x)
        out, _residual_out, rstd = _forward_result(
            _fwd(x, _weight(weight), eps=float(eps), store_rstd=True, **extra), x.shape[0])
        return out, rstd

    def backward(dy, x, weight, rstd, eps=None):
        x = _rows(x, "x")
        _check_width(x)
        return _backward_result(_bwd(x, _weight(weight), _rows(dy, "dy"), rstd, **extra))

    ops = {"forward": forward, "backward": backward}
    if HAS_ADD_FORWARD:
        def add_forward(x, residual, weight, eps):
            # The bridge's x is the sub-layer output o, residual the stream h: QuACK's x and
            # residual alike. residual_out = RN(o + h) is the new residual.
            x = _rows(x, "x")
            _check_width(x)
            return _forward_result(_fwd(x, _weight(weight), residual=_rows(residual, "residual"), eps=float(eps),
                                        store_rstd=True, **extra), x.shape[0])

        ops["add_forward"] = add_forward
    if HAS_ADD_BACKWARD:
        def add_backward(dy, x, weight, rstd, eps, dresidual):
            # x is the forward's h'; dresidual (x's type) is QuACK's dresidual_out, added to dx in
            # fp32 before dx's one rounding.
            x = _rows(x, "x")
            _check_width(x)
            return _backward_result(_bwd(x, _weight(weight), _rows(dy, "dy"), rstd,
                                         dresidual_out=_rows(dresidual, "dresidual"), has_residual=True, **extra))

        ops["add_backward"] = add_backward
    return ops


def _kernel(name, offset, convention, what):
    ops = _make(offset)
    fused = ", fused add and its backward" if "add_backward" in ops else (", fused add" if "add_forward" in ops else "")
    return rc.Kernel(name=name, array="torch", device="cuda", **ops,
                     dtypes=("f32", "f16", "bf16"), conventions=(convention,),
                     min_dim=1, max_dim=MAX_DIM, alignment=ALIGNMENT, same_type_weights=False,
                     dg_weight_type=True, rstd=True, row_shape=row_shape, dg_shape=dg_shape,
                     description=f"QuACK (quack-kernels {VERSION}) rmsnorm_fwd/rmsnorm_bwd, weight_offset={offset}: "
                                 f"{what}; forward, backward{fused}; CuTe DSL, rows over tpr threads and a CTA "
                                 "cluster for wide rows, fp32 row_reduce (shuffles, shared memory), rsqrt "
                                 "fastmath, dW as per-CTA fp32 partial rows summed by torch and cast to the "
                                 "weight's type; 16-bit rows of odd D declined (QuACK compiles none)")


if UNAVAILABLE is None:
    KERNELS = [_kernel("rmsnorm", 0.0, "standard", "all in fp32, one rounding: RN(x·r·w)")]
    if HAS_GEMMA:
        KERNELS.append(_kernel("rmsnorm_gemma", 1.0, "gemma", "all in fp32, RN(x·r·(1 + w)), 1 + w in fp32"))
