"""RMSNorm in Triton, written here, following the lecture's algorithm; an adapter for rmsnorm_cert.

Forward, one program per row:
    ss = sum(x*x)              fp32, one tl.sum over a BLOCK = next_power_of_2(D) (masked lanes are 0)
    r  = 1 / sqrt(ss/D + eps)  eps inside the root; the division and the root correctly rounded
                               (div_rn / sqrt_rn: Triton's plain `/` and tl.sqrt are approximate)
    y  = RN_out((x*r)*g)       fp32, rounded once to x's type; r is stored as fp32 per row
Backward (r as the forward wrote it, never recomputed), one program per row:
    x^ = x*r,  gdy = dy*g,  c = sum(gdy*x^)/D,  dx = RN_out(r*(gdy - x^*c))   all fp32
dg, two stages, deterministic (no atomics), reading dy, x and r again:
    stage 1: program (b, t) sums rows [b*RPP, (b+1)*RPP) of dy*x^ for a tile of columns, one row
             after another, into an fp32 partial row P[b, :]
    stage 2: dg[j] = P[0, j] + P[1, j] + ... + P[NB-1, j] in that order in fp32, cast once.
RPP and NB depend on R alone (NB <= 64), so dg repeats bit for bit for the same R.

Rows may have any stride (stride(0) >= D, stride(1) == 1) for x, y, dy and dx.
Launching needs CUDA tensors, except under TRITON_INTERPRET=1 (set before import), where
Triton's interpreter runs the same kernels on CPU tensors.
"""
import math

import torch
import triton
import triton.language as tl

try:
    import rmsnorm_cert as rc
except ImportError:
    rc = None

LIBRARY = "triton"
MAX_DIM = 65536
_DG_MAX_BLOCKS = 64      # stage-2 chain length; kept <= 64 so dg_shape's depth stays legal
_DG_BLOCK_N = 512        # columns per dg program (stage 1 and stage 2)


# --------------------------------------------------------------------------- kernels

@triton.jit
def _rms_fwd_kernel(X, Y, W, RSTD, stride_x, stride_y, stride_w, D, n_f, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < D
    x = tl.load(X + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    ss = tl.sum(x * x, axis=0)
    ms = tl.div_rn(ss, n_f)
    one = tl.full((), 1.0, tl.float32)
    r = tl.div_rn(one, tl.sqrt_rn(ms + eps))
    tl.store(RSTD + row, r)
    w = tl.load(W + cols * stride_w, mask=mask, other=0.0).to(tl.float32)
    y = (x * r) * w
    tl.store(Y + row * stride_y + cols, y.to(Y.dtype.element_ty), mask=mask)


@triton.jit
def _rms_bwd_dx_kernel(DY, X, W, RSTD, DX, stride_dy, stride_x, stride_w, stride_r, stride_dx, D, n_f,
                       BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < D
    x = tl.load(X + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(DY + row * stride_dy + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(W + cols * stride_w, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(RSTD + row * stride_r)
    xhat = x * r
    gdy = dy * w
    c = tl.div_rn(tl.sum(gdy * xhat, axis=0), n_f)
    dx = r * (gdy - xhat * c)
    tl.store(DX + row * stride_dx + cols, dx.to(DX.dtype.element_ty), mask=mask)


@triton.jit
def _rms_dg_partial_kernel(DY, X, RSTD, P, stride_dy, stride_x, stride_r, R, D, rows_per_prog,
                           BLOCK_N: tl.constexpr):
    b = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    cmask = cols < D
    acc = tl.zeros((BLOCK_N,), tl.float32)
    row0 = b.to(tl.int64) * rows_per_prog
    for i in range(0, rows_per_prog):            # rows in order: a sequential chain per column
        row = row0 + i
        ok = row < R
        m = cmask & ((row + tl.zeros((BLOCK_N,), tl.int64)) < R)
        dy = tl.load(DY + row * stride_dy + cols, mask=m, other=0.0).to(tl.float32)
        x = tl.load(X + row * stride_x + cols, mask=m, other=0.0).to(tl.float32)
        r = tl.load(RSTD + tl.minimum(row, R - 1) * stride_r)   # a real row's r ...
        r = tl.where(ok, r, 0.0)                                # ... unused past the last row
        acc += dy * (x * r)
    tl.store(P + b * D + cols, acc, mask=cmask)


@triton.jit
def _rms_dg_reduce_kernel(P, DG, num_blocks, D, BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = cols < D
    acc = tl.zeros((BLOCK_N,), tl.float32)
    for b in range(0, num_blocks):               # partials in order: a sequential chain per column
        acc += tl.load(P + b * D + cols, mask=mask, other=0.0)
    tl.store(DG + cols, acc.to(DG.dtype.element_ty), mask=mask)


# Triton picks the interpreter when a kernel is decorated (TRITON_INTERPRET=1 at import).
_INTERPRET = type(_rms_fwd_kernel).__name__ == "InterpretedFunction"


# --------------------------------------------------------------------------- launch geometry

def _block(d):
    return triton.next_power_of_2(max(int(d), 1))


def _num_warps(block):
    """Warps for a row program: about 8 elements per thread, 1 to 32 warps."""
    return min(32, max(1, block // 256))


def _dg_blocks(rows):
    """(rows per stage-1 program, number of stage-1 programs) for R rows: a function of R alone."""
    rows = max(int(rows), 1)
    rpp = -(-rows // _DG_MAX_BLOCKS)
    return rpp, -(-rows // rpp)


# --------------------------------------------------------------------------- accumulation shapes

def row_shape(n):
    """(per_thread, tree_depth) of the fp32 sum of n terms (forward sum(x^2), backward sum(g dy x^)).

    The row is one tl.sum over BLOCK = next_power_of_2(n) elements held by T = 32*num_warps threads.
    Triton's coalescing gives each thread at most max(BLOCK/T, 1) elements (masked lanes included,
    they are exact zeros), which the thread adds in sequence; the thread partials then meet in
    butterfly shuffles inside a warp (depth 5) and across warps (depth log2(num_warps)); lanes
    holding duplicated data (BLOCK < T) take no part, so the real depth is <= log2(T).
    Declared: per_thread = max(1, min(n, ceil(BLOCK/T))), tree_depth = log2(T): conservative on
    the depth, exact on the per-thread count for BLOCK >= T.
    """
    n = int(n)
    if n < 1:
        return (1, 0)
    block = _block(n)
    threads = 32 * _num_warps(block)
    per_thread = max(1, min(n, -(-block // threads)))
    depth = int(math.ceil(math.log2(threads)))
    return (per_thread, depth)


def dg_shape(rows):
    """(per_thread, tree_depth) of dg's column sum over R rows.

    Stage 1 adds RPP rows in sequence (k = RPP); stage 2 adds the NB <= 64 partials in sequence,
    a chain whose length is counted in the depth (d = NB: one more than the NB-1 roundings it
    has). The two stages together are also a chain of at most R terms, so (R, 0) is valid too;
    the declaration is whichever of the two has the smaller k + d.
    """
    rows = int(rows)
    if rows < 1:
        return (1, 0)
    rpp, nb = _dg_blocks(rows)
    if rpp + nb < rows:
        return (rpp, nb)
    return (rows, 0)


# --------------------------------------------------------------------------- launches

def _check_device(*tensors):
    dev = tensors[0].device
    for t in tensors:
        if t.device != dev:
            raise ValueError(f"triton rmsnorm: tensors on different devices ({t.device} and {dev})")
    if not _INTERPRET and dev.type != "cuda":
        raise ValueError(f"triton rmsnorm: needs CUDA tensors (got {dev}); set TRITON_INTERPRET=1 "
                         "before import to run the kernels on CPU tensors in Triton's interpreter")


def _rows(t, name, shape=None):
    if t.dim() != 2:
        raise ValueError(f"triton rmsnorm: {name} must be 2-D [R, D], got shape {tuple(t.shape)}")
    if shape is not None and tuple(t.shape) != tuple(shape):
        raise ValueError(f"triton rmsnorm: {name} has shape {tuple(t.shape)}, expected {tuple(shape)}")
    if t.shape[1] > 1 and t.stride(1) != 1:
        t = t.contiguous()   # rows must be contiguous; any row stride is fine
    return t


def _row_stride(t):
    return t.stride(0) if t.shape[0] > 1 else max(t.shape[1], 1)


def _check_dim(d):
    if not 1 <= d <= MAX_DIM:
        raise ValueError(f"triton rmsnorm: D = {d} outside [1, {MAX_DIM}]")


def forward(x, weight, eps, *, y=None, rstd=None):
    """(y, rstd) for x [R, D] and weight [D]: y of x's dtype, rstd fp32 [R].
    y / rstd may be given preallocated (y with any row stride)."""
    x = _rows(x, "x")
    R, D = x.shape
    _check_dim(D)
    if weight.dim() != 1 or weight.shape[0] != D:
        raise ValueError(f"triton rmsnorm: weight must be [{D}], got {tuple(weight.shape)}")
    if y is None:
        y = torch.empty((R, D), dtype=x.dtype, device=x.device)
    elif tuple(y.shape) != (R, D) or y.dtype != x.dtype or (D > 1 and y.stride(1) != 1):
        raise ValueError("triton rmsnorm: y must be [R, D] of x's dtype with contiguous rows")
    if rstd is None:
        rstd = torch.empty((R,), dtype=torch.float32, device=x.device)
    elif tuple(rstd.shape) != (R,) or rstd.dtype != torch.float32 or (R > 1 and rstd.stride(0) != 1):
        raise ValueError("triton rmsnorm: rstd must be contiguous fp32 [R]")
    _check_device(x, weight, y, rstd)
    if R == 0:
        return y, rstd
    block = _block(D)
    _rms_fwd_kernel[(R,)](x, y, weight, rstd, _row_stride(x), _row_stride(y), weight.stride(0), D,
                          float(D), float(eps), BLOCK=block, num_warps=_num_warps(block))
    return y, rstd


def backward(dy, x, weight, rstd, eps=None, *, dx=None, dg_dtype=torch.float32):
    """(dx, dweight) for dy, x [R, D] (row strides may differ), weight [D] and the forward's
    rstd fp32 [R] (used as given; eps is not needed). dx of x's dtype, dweight of dg_dtype (fp32)."""
    x = _rows(x, "x")
    R, D = x.shape
    _check_dim(D)
    dy = _rows(dy, "dy", (R, D))
    if weight.dim() != 1 or weight.shape[0] != D:
        raise ValueError(f"triton rmsnorm: weight must be [{D}], got {tuple(weight.shape)}")
    if rstd.dim() != 1 or rstd.shape[0] != R or rstd.dtype != torch.float32:
        raise ValueError(f"triton rmsnorm: rstd must be fp32 [{R}], got {rstd.dtype} {tuple(rstd.shape)}")
    if dx is None:
        dx = torch.empty((R, D), dtype=x.dtype, device=x.device)
    elif tuple(dx.shape) != (R, D) or dx.dtype != x.dtype or (D > 1 and dx.stride(1) != 1):
        raise ValueError("triton rmsnorm: dx must be [R, D] of x's dtype with contiguous rows")
    dg = torch.empty((D,), dtype=dg_dtype, device=x.device)
    _check_device(dy, x, weight, rstd, dx, dg)
    if R == 0:
        dg.zero_()
        return dx, dg
    block = _block(D)
    _rms_bwd_dx_kernel[(R,)](dy, x, weight, rstd, dx, _row_stride(dy), _row_stride(x), weight.stride(0),
                             rstd.stride(0), _row_stride(dx), D, float(D), BLOCK=block,
                             num_warps=_num_warps(block))
    rpp, nb = _dg_blocks(R)
    block_n = min(_block(D), _DG_BLOCK_N)
    partial = torch.empty((nb, D), dtype=torch.float32, device=x.device)
    col_tiles = triton.cdiv(D, block_n)
    _rms_dg_partial_kernel[(nb, col_tiles)](dy, x, rstd, partial, _row_stride(dy), _row_stride(x),
                                            rstd.stride(0), R, D, rpp, BLOCK_N=block_n, num_warps=4)
    _rms_dg_reduce_kernel[(col_tiles,)](partial, dg, nb, D, BLOCK_N=block_n, num_warps=4)
    return dx, dg


# --------------------------------------------------------------------------- registration

KERNELS = []
if rc is not None and hasattr(rc, "Kernel"):
    KERNELS = [rc.Kernel(name="rmsnorm", array="torch", device="cuda",
                         forward=forward, backward=backward,
                         dtypes=("f32", "f16", "bf16"), conventions=("standard",),
                         min_dim=1, max_dim=MAX_DIM,
                         row_shape=row_shape, dg_shape=dg_shape,
                         description="Triton RMSNorm written here after the lecture's algorithm: one "
                                     "program per row, fp32 tl.sum, r = 1/sqrt(mean + eps) correctly "
                                     "rounded, y and dx rounded once; dg in two deterministic stages "
                                     "(fp32 partials over <= 64 row blocks, then an ordered sum)")]
