"""Liger-Kernel's RMSNorm (PyPI `liger-kernel`, written against 0.8.5) as an adapter for rmsnorm_cert.

    python -m rmsnorm_cert certify adapters/liger.py      (kernels: plugin.liger.<name>)

Liger's low-level functions are called directly (liger_kernel/ops/rms_norm.py and
fused_add_rms_norm.py of 0.8.5; line numbers below are that version's):

    rms_norm_forward(X, W, eps, offset, casting_mode, row_mode)                       rms_norm.py:449
        -> (Y, X, RSTD, BLOCK_SIZE, num_warps, casting_mode as int)                    rms_norm.py:523
    rms_norm_backward(dY, X, W, RSTD, offset, casting_mode, BLOCK_SIZE, num_warps,
                      in_place, row_mode, needs_dw=None) -> (dX, dW)                   rms_norm.py:526
    fused_add_rms_norm_forward(X, R, W, eps, offset, casting_mode)          fused_add_rms_norm.py:231
        -> (Y, S = X + R, RSTD, BLOCK_SIZE, num_warps, num_stages, casting_mode)
    fused_add_rms_norm_backward(dY, dS_out, S, W, RSTD, offset, casting_mode, BLOCK_SIZE,
                                num_warps, num_stages, in_place, needs_dw=None)
        -> (dX, dX, dW), dX = rmsnorm_dx + dS_out in fp32, rounded once        fused_add_rms_norm.py:289

Casting modes (y = x·r·(offset + w), r = rsqrt(Σx²/D + eps) in fp32 except under "none"):
    "llama": x·r in fp32, cast to x's type, times (offset + w) in fp32, rounded to x's type
             (rms_norm.py:107-148): two roundings; the 16-bit product t·w is exact in fp32, so
             it is RN_in(RN_in(x·r)·w).                              -> kernel rms_norm_llama ("llama")
    "gemma": everything in fp32, one rounding at the end (rms_norm.py:111-148).
             offset 1.0 (Gemma's (1 + w)):                            -> kernel rms_norm_gemma ("gemma")
             offset 0.0 (y = RN(x·r·w)):                              -> kernel rms_norm ("standard")
    "none":  computed in x's type, eps and offset cast to x's type, RSTD stored in x's type
             (rms_norm.py:116-117, 465). Not registered: under none a 16-bit x has its squares
             and sum, its r and y computed in 16 bits and r written as bf16/f16, which no
             convention of ours defines (the contract wants the sum and r in fp32), so every
             16-bit case would fail on r and y for a reason Liger documents
             (LigerRMSNormFunction docstring: "has more error"); for f32 it is the gemma kernel
             again. Set RMSNORM_CERT_LIGER_NONE=1 to register it anyway as
             rms_norm_casting_none under "standard".

Layout: Liger's functions take strided rows. X.view(-1, D) of a 2-D [R, D] tensor is the tensor
itself, every kernel gets each tensor's own row stride (X.stride(0), dY.stride(0), ...) and reads
a row as base + arange(BLOCK_SIZE), so rows must be contiguous (stride(1) == 1) and the row stride
may exceed D. The adapter passes the harness's strided views unchanged; only a view with
stride(1) != 1 (never made by the bridge) would be copied. The contiguity the autograd Functions
demand (@ensure_contiguous, rms_norm.py:652) belongs to the Functions, not to these functions.
Y, S, dX and RSTD are Liger's own fresh tensors; the bridge copies them into the harness's buffers.
W is read as W_ptr + arange (rms_norm.py:104), its stride ignored: a non-unit-stride weight
(never made by the bridge) is copied.

Backward: in_place=False (Liger's Function default is in_place=True, rms_norm.py:653, which
writes dX over dY; the arithmetic is the same, the destination is a fresh tensor), needs_dw
left at None (dW computed), BLOCK_SIZE / num_warps from Liger's calculate_settings(D), the
forward's rstd passed as RSTD (not recomputed), row_mode None as in Liger's Function.
dweight is what Liger returns: _dW.sum(dim=0).to(W.dtype) (rms_norm.py:622,
fused_add_rms_norm.py:358), i.e. the fp32 column sum rounded to the weight's type: the kernels
claim dg in the weight's type only (dg_weight_type), so no case asks them for another.

Domain: D <= 65536 (calculate_settings raises above BLOCK_SIZE 65536, ops/utils.py:60-65);
x f32/f16/bf16 (torch_to_triton_dtype, ops/utils.py:101); the weight may be fp32 with a 16-bit x
(no dtype check; W is promoted to fp32 by `offset + W`, rms_norm.py:143, 194), so
same_type_weights is False.
"""
import math
import os

LIBRARY = "liger"
MAX_DIM = 65536          # liger_kernel/ops/utils.py:60 MAX_FUSED_SIZE
BLOCK_ROW_MIN_ROWS = 4096 * 8   # rms_norm.py:482/566: the 16-row block kernels for BLOCK <= 256 from here
KERNELS = []
UNAVAILABLE = None
VERSION = None

try:
    import torch
    import rmsnorm_cert as rc
    from liger_kernel.ops import rms_norm as _rn
    from liger_kernel.ops.utils import calculate_settings
    try:
        from liger_kernel.ops import fused_add_rms_norm as _fa
    except ImportError:          # older Liger: no fused add
        _fa = None
    try:
        from importlib.metadata import version as _version
        VERSION = _version("liger-kernel")
    except Exception:
        VERSION = "unknown"
except Exception as e:  # torch, triton, liger_kernel (or its undeclared `packaging`) missing
    UNAVAILABLE = f"liger adapter: cannot import Liger-Kernel's RMSNorm ({type(e).__name__}: {e})"


# --------------------------------------------------------------------------- accumulation shapes

def _settings(n):
    """(BLOCK_SIZE, num_warps) of Liger's calculate_settings (ops/utils.py:57-74), without raising."""
    block = 1 << max(0, int(n) - 1).bit_length()
    warps = 4
    if block >= 32768:
        warps = 32          # 16 on HIP; this adapter claims CUDA
    elif block >= 8192:
        warps = 16
    elif block >= 2048:
        warps = 8
    return block, warps


def row_shape(n):
    """(per_thread, tree_depth) of Liger's fp32 row sums (forward Σx², backward Σ m·x).

    Row kernels (_rms_norm_forward_kernel, _rms_norm_backward_kernel, both fused-add kernels):
    one tl.sum over BLOCK = next_power_of_2(n) lanes held by T = 32·num_warps threads. Compiled
    for sm_90 (Triton 3.9, on CPU) with aligned and unaligned specializations, the reduce operand
    has sizePerThread <= BLOCK/T (Triton's coalescing clamps the vector to the elements per
    thread), so each thread holds max(1, BLOCK/T) elements, added in sequence, then the partials
    meet in shuffles across the warp and across warps: depth <= log2(T). Declared
    k = max(1, min(n, ceil(BLOCK/T))), d = log2(T).

    For BLOCK <= 256 Liger switches to its 16-row block kernels once R >= 32768 (rms_norm.py:482,
    566; row_mode None). Their row sum holds up to min(8, BLOCK/8) elements per thread
    (sizePerThread [1, 8] for aligned 16-bit rows; seen over all BLOCK <= 256, f32/f16/bf16,
    aligned and unaligned) in a tree of depth <= 7; k is raised to cover them, for every R (the
    shape is a function of n alone). The harness's rows stay far below 32768, so these kernels
    are declared for but not exercised.
    """
    n = int(n)
    if n < 1:
        return (1, 0)
    if n > MAX_DIM:
        return (n, 0)
    block, warps = _settings(n)
    threads = 32 * warps
    k = max(1, -(-block // threads))
    if block <= 256:
        k = max(k, min(8, block // 8))
    return (max(1, min(n, k)), int(math.log2(threads)))


def _sm_count():
    if torch.cuda.is_available():
        return torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
    return 1   # Liger's own choice off CUDA (rms_norm.py:532)


def dg_shape(rows):
    """(per_thread, tree_depth) of Liger's dW column sum over R rows.

    The backward runs sm_count programs (rms_norm.py:532-553); program p adds the terms of rows
    [p·rpp, (p+1)·rpp), rpp = ceil(R/sm), one after another into an fp32 row (rms_norm.py:196,
    240), then torch sums the sm_count partial rows: _dW.sum(dim=0) (rms_norm.py:622). Only
    nb = ceil(R/rpp) partials are non-zero (the others are exact zeros), and whatever tree torch
    uses, a term meets at most nb - 1 roundings there: a chain of nb, counted in the depth.
    Declared (rpp, nb) when nb <= 64 (the contract's depth limit), else the two stages as one
    chain (min(R, rpp + nb), 0), which has the same k + d; (R, 0) when that is no larger.
    The block backward (R >= 32768 with D <= 256, rms_norm.py:338) adds 16-row tile sums (a tree
    of at most 16 terms, <= 15 roundings) in a chain of ceil(R/(16·sm)) tiles per program; k and
    nb are raised to cover it from R = 32768 on (it is shorter than rpp there in practice).
    """
    R = int(rows)
    if R < 1:
        return (1, 0)
    sm = max(1, _sm_count())
    rpp = -(-R // sm)
    nb = -(-R // rpp)
    k = rpp
    if R >= BLOCK_ROW_MIN_ROWS:      # block backward: a 16-term tile tree (<= 15 roundings), then tiles
        k = max(k, -(-R // (16 * sm)) + 15)
        nb = max(nb, min(sm, -(-R // 16)))
    if k + nb >= R:
        return (R, 0)
    if nb <= 64:
        return (k, nb)
    return (k + nb, 0)


# --------------------------------------------------------------------------- the calls

def _rows(t, name):
    if t.dim() != 2:
        raise ValueError(f"liger adapter: {name} must be 2-D [R, D], got {tuple(t.shape)}")
    if t.shape[1] > 1 and t.stride(1) != 1:
        t = t.contiguous()   # Liger reads a row as base + arange: elements must be contiguous
    return t


def _weight(w):
    if w.dim() != 1:
        raise ValueError(f"liger adapter: weight must be 1-D, got {tuple(w.shape)}")
    return w if w.shape[0] <= 1 or w.stride(0) == 1 else w.contiguous()


def _make(casting, offset):
    """The op functions of one (casting mode, offset) pair."""
    mode = _rn._str_to_casting_mode[casting]   # the backward's constexpr compare needs the int

    def forward(x, weight, eps):
        x = _rows(x, "x")
        y, _x, rstd, _block, _warps, _mode = _rn.rms_norm_forward(x, _weight(weight), float(eps), offset,
                                                                  casting, None)
        return y, rstd

    def backward(dy, x, weight, rstd, eps=None):
        x = _rows(x, "x")
        dy = _rows(dy, "dy")
        block, warps = calculate_settings(x.shape[1])
        dx, dw = _rn.rms_norm_backward(dy, x, _weight(weight), rstd, offset, mode, block, warps,
                                       False, None)
        return dx, dw

    ops = {"forward": forward, "backward": backward}
    if _fa is not None:
        fmode = _fa._str_to_casting_mode[casting]

        def add_forward(x, residual, weight, eps):
            # Liger's X is the sub-layer output (hidden_states), R the residual stream; S = X + R
            # is added in x's type (fused_add_rms_norm.py:77-80) and is the new residual.
            y, s, rstd, _block, _warps, _stages, _mode = _fa.fused_add_rms_norm_forward(
                _rows(x, "x"), _rows(residual, "residual"), _weight(weight), float(eps), offset, casting)
            return y, s, rstd

        def add_backward(dy, x, weight, rstd, eps, dresidual):
            # x is the forward's h' = S; dresidual is Liger's dS_out, added to dX in fp32.
            x = _rows(x, "x")
            block, warps = calculate_settings(x.shape[1])
            dx, _dr, dw = _fa.fused_add_rms_norm_backward(_rows(dy, "dy"), _rows(dresidual, "dresidual"), x,
                                                          _weight(weight), rstd, offset, fmode, block, warps,
                                                          2, False)   # num_stages 2: fused_add_rms_norm.py:245
            return dx, dw

        ops.update(add_forward=add_forward, add_backward=add_backward)
    return ops


def _kernel(name, casting, offset, convention, what):
    ops = _make(casting, offset)
    fused = ", fused add" if "add_forward" in ops else ""
    return rc.Kernel(name=name, array="torch", device="cuda", **ops,
                     dtypes=("f32", "f16", "bf16"), conventions=(convention,),
                     min_dim=1, max_dim=MAX_DIM, same_type_weights=False, dg_weight_type=True, rstd=True,
                     row_shape=row_shape, dg_shape=dg_shape,
                     description=f"Liger-Kernel {VERSION} RMSNorm, casting_mode={casting!r}, offset={offset}: "
                                 f"{what}; forward, backward{fused}; one program per row (the plain ops switch to "
                                 "16-row block kernels for D <= 256 and R >= 32768), fp32 tl.sum, libdevice rsqrt, "
                                 "dW as per-SM fp32 partial rows summed by torch and cast to the weight's type")


if UNAVAILABLE is None:
    KERNELS = [
        _kernel("rms_norm", "gemma", 0.0, "standard", "all in fp32, one rounding: RN(x·r·w)"),
        _kernel("rms_norm_llama", "llama", 0.0, "llama", "RN_in(RN_in(x·r)·w), Hugging Face Llama"),
        _kernel("rms_norm_gemma", "gemma", 1.0, "gemma", "all in fp32, RN(x·r·(1 + w)), Gemma"),
    ]
    if os.environ.get("RMSNORM_CERT_LIGER_NONE") == "1":
        KERNELS.append(_kernel("rms_norm_casting_none", "none", 0.0, "standard",
                               "computed in x's type (squares, sum, r and y in 16 bits for 16-bit x)"))
