"""PyTorch ops backed by this project's certified kernels (librmsnorm_c.so, through ctypes: no
compiler, no PyTorch headers).

    import rmsnorm_cert.torch as rt
    y = rt.rms_norm(x, weight, eps)                     # autograd: our backward kernel, dγ deterministic
    y, h = rt.add_rms_norm(x, residual, weight, eps)    # h = RN(residual + x), with autograd
    y = rt.fused_add_rms_norm(x, residual, weight, eps) # the same, residual updated in place (no autograd)
    q, scale = rt.rms_norm_fp8(x, weight, eps, "token") # "token", "block" or "static" (with scale=)
    q, scale = rt.fused_add_rms_norm_fp8(x, residual, weight, eps, "token")  # residual in place, then FP8

CUDA tensors run the CUDA variants the dispatcher picks, on the current stream; CPU tensors the
host reference. Rows are the last dimension: a 2-D tensor with unit column stride keeps its row
stride; any other layout is copied into contiguous rows first. The ops are torch.library custom
ops (namespace rmsnorm_certified) with fake implementations, so torch.compile and CUDA graphs
take them. docs/python.md describes them.
"""
import ctypes
import glob
import json
import os
from typing import List, Optional, Tuple

import torch

from .bridge import CONVENTIONS, DTYPES, QUANT_MODES, _BackwardArgs, _ForwardArgs, _Tensor

_DTYPE_CODES = {torch.float32: DTYPES["f32"], torch.float16: DTYPES["f16"], torch.bfloat16: DTYPES["bf16"],
                torch.float8_e4m3fn: DTYPES["e4m3"], torch.float8_e5m2: DTYPES["e5m2"]}
_MEMORY_HOST, _MEMORY_DEVICE = 0, 1
_lib = None


def library_path():
    """librmsnorm_c.so: $RMSNORM_C_LIB, beside this package, or the newest of a build tree."""
    env = os.environ.get("RMSNORM_C_LIB")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    if os.path.exists(os.path.join(here, "librmsnorm_c.so")):
        return os.path.join(here, "librmsnorm_c.so")
    found = glob.glob(os.path.join(os.path.dirname(os.path.dirname(here)), "build", "*", "kernels", "librmsnorm_c.so"))
    if not found:
        raise FileNotFoundError("librmsnorm_c.so not found: build the target rmsnorm_c, or name it in RMSNORM_C_LIB")
    return max(found, key=os.path.getmtime)


def _library():
    global _lib
    if _lib is None:
        lib = ctypes.CDLL(library_path())
        for fn, args in (("rmsnorm_c_forward", _ForwardArgs), ("rmsnorm_c_backward", _BackwardArgs)):
            f = getattr(lib, fn)
            f.argtypes = [ctypes.POINTER(args), ctypes.c_int32, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p,
                          ctypes.c_size_t]
            f.restype = ctypes.c_int32
        lib.rmsnorm_c_backward_workspace_bytes.argtypes = [ctypes.c_int64, ctypes.c_int64, ctypes.c_int32]
        lib.rmsnorm_c_backward_workspace_bytes.restype = ctypes.c_size_t
        _lib = lib
    return _lib


# --- arguments ---------------------------------------------------------------------------------
def _rows(t: torch.Tensor, what: str) -> torch.Tensor:
    """t as [R, D] with unit column stride: a view when it is one already, else a copy."""
    if t.dtype not in _DTYPE_CODES:
        raise TypeError(f"rmsnorm_certified: {what} has dtype {t.dtype}; float32, float16 or bfloat16 rows are taken")
    if t.dim() == 0:
        raise ValueError(f"rmsnorm_certified: {what} is a scalar; rows of D elements are taken")
    if t.dim() == 2 and t.stride(1) == 1 and t.stride(0) >= t.shape[1]:
        return t
    return t.reshape(-1, t.shape[-1]).contiguous()


def _tensor(t: Optional[torch.Tensor]) -> _Tensor:
    if t is None:
        return _Tensor(None, 0, 0)
    return _Tensor(t.data_ptr() if t.numel() else None, _DTYPE_CODES[t.dtype], t.stride(0) if t.dim() == 2 else t.numel())


def _where(x: torch.Tensor):
    if x.is_cuda:
        return _MEMORY_DEVICE, torch.cuda.current_stream(x.device).cuda_stream
    if x.device.type != "cpu":
        raise ValueError(f"rmsnorm_certified: tensors on {x.device} are not taken (CUDA or CPU)")
    return _MEMORY_HOST, None


def _check(status: int, message, what: str):
    if status != 0:
        text = message.value.decode(errors="replace")
        raise (ValueError if status in (1, 4) else RuntimeError)(f"rmsnorm_certified {what}: {text}")


def _weight(weight: Optional[torch.Tensor], x: torch.Tensor, convention: str) -> Optional[torch.Tensor]:
    if convention not in CONVENTIONS:
        raise ValueError(f"rmsnorm_certified: convention is one of {', '.join(CONVENTIONS)}, not {convention!r}")
    if convention == "no_weight":
        return None
    if weight is None:
        raise ValueError(f"rmsnorm_certified: the {convention} convention needs a weight")
    if weight.dim() != 1 or weight.shape[0] != x.shape[-1]:
        raise ValueError(f"rmsnorm_certified: weight has shape {tuple(weight.shape)}, expected ({x.shape[-1]},)")
    if weight.device != x.device:
        raise ValueError(f"rmsnorm_certified: weight is on {weight.device}, x on {x.device}")
    return weight.contiguous()


def _forward(x2, o2, y2, w, eps, convention, quant=0, rstd=None, scale=None):
    memory, stream = _where(x2)
    a = _ForwardArgs()
    a.rows, a.dim = x2.shape[0], x2.shape[1]
    a.x, a.o, a.y = _tensor(x2), _tensor(o2), _tensor(y2)
    a.g = w.data_ptr() if w is not None else None
    a.g_dtype = _DTYPE_CODES[w.dtype] if w is not None else 0
    a.convention, a.quant, a.eps = CONVENTIONS[convention], quant, eps
    a.rstd = rstd.data_ptr() if rstd is not None and rstd.numel() else None
    a.scale = scale.data_ptr() if scale is not None and scale.numel() else None
    a.stream = stream
    msg, variant = ctypes.create_string_buffer(1024), ctypes.create_string_buffer(128)
    _check(_library().rmsnorm_c_forward(ctypes.byref(a), memory, variant, len(variant), msg, len(msg)), msg, "forward")


def _backward(dy2, x2, dres2, w, rstd, eps, convention, dx2, dg):
    memory, stream = _where(x2)
    R, D = x2.shape
    ws_bytes = _library().rmsnorm_c_backward_workspace_bytes(R, D, memory)
    ws = torch.empty(ws_bytes, dtype=torch.uint8, device=x2.device) if ws_bytes else None
    a = _BackwardArgs()
    a.rows, a.dim = R, D
    a.x, a.dy, a.dx, a.dresidual = _tensor(x2), _tensor(dy2), _tensor(dx2), _tensor(dres2)
    a.g = w.data_ptr() if w is not None else None
    a.g_dtype = _DTYPE_CODES[w.dtype] if w is not None else 0
    a.convention, a.eps = CONVENTIONS[convention], eps
    a.rstd = rstd.data_ptr() if R else None
    a.dg = dg.data_ptr() if dg is not None else None
    a.dg_dtype = _DTYPE_CODES[dg.dtype] if dg is not None else 0
    a.workspace = ws.data_ptr() if ws is not None else None
    a.workspace_bytes = ws_bytes
    a.stream = stream
    msg, variant = ctypes.create_string_buffer(1024), ctypes.create_string_buffer(128)
    _check(_library().rmsnorm_c_backward(ctypes.byref(a), memory, variant, len(variant), msg, len(msg)), msg, "backward")


def _empty_dg(w, x2):
    return torch.empty(w.shape if w is not None else (0,), dtype=w.dtype if w is not None else torch.float32,
                       device=x2.device)


# --- the ops -----------------------------------------------------------------------------------
def _check_residual(x, residual):
    if residual.shape != x.shape or residual.dtype != x.dtype:
        raise ValueError("rmsnorm_certified: residual must have x's shape and dtype")


def _in_place_rows(x, residual):
    """The fused add's rows, updated in place: h (residual's own memory unless its layout needed a
    copy, which _write_back returns to it) and o (x)."""
    _check_residual(x, residual)
    return _rows(residual, "residual"), _rows(x, "x")


def _write_back(h, residual):
    if h.data_ptr() != residual.data_ptr():
        residual.copy_(h.view(residual.shape))


@torch.library.custom_op("rmsnorm_certified::rms_norm_forward", mutates_args=())
def _rms_norm_forward(x: torch.Tensor, weight: Optional[torch.Tensor], eps: float,
                      convention: str) -> Tuple[torch.Tensor, torch.Tensor]:
    x2 = _rows(x, "x")
    w = _weight(weight, x, convention)
    y = torch.empty(x2.shape, dtype=x.dtype, device=x.device)
    rstd = torch.empty(x2.shape[0], dtype=torch.float32, device=x.device)
    _forward(x2, None, y, w, eps, convention, rstd=rstd)
    return y.view(x.shape), rstd


@_rms_norm_forward.register_fake
def _(x, weight, eps, convention):
    return torch.empty_like(x, memory_format=torch.contiguous_format), x.new_empty(
        (x.numel() // x.shape[-1],), dtype=torch.float32)


@torch.library.custom_op("rmsnorm_certified::rms_norm_backward", mutates_args=())
def _rms_norm_backward(dy: torch.Tensor, x: torch.Tensor, dresidual: Optional[torch.Tensor],
                       weight: Optional[torch.Tensor], rstd: torch.Tensor, eps: float,
                       convention: str) -> Tuple[torch.Tensor, torch.Tensor]:
    x2, dy2 = _rows(x, "x"), _rows(dy, "dy")
    dres2 = _rows(dresidual, "dresidual") if dresidual is not None else None
    w = _weight(weight, x, convention)
    dx = torch.empty(x2.shape, dtype=x.dtype, device=x.device)
    dg = _empty_dg(w, x2)
    _backward(dy2, x2, dres2, w, rstd, eps, convention, dx, dg if w is not None else None)
    return dx.view(x.shape), dg


@_rms_norm_backward.register_fake
def _(dy, x, dresidual, weight, rstd, eps, convention):
    return torch.empty_like(x, memory_format=torch.contiguous_format), (
        torch.empty_like(weight) if weight is not None else x.new_empty((0,), dtype=torch.float32))


def _fwd_setup(ctx, inputs, output):
    x, weight, eps, convention = inputs
    _, rstd = output
    ctx.save_for_backward(x, weight, rstd)
    ctx.eps, ctx.convention = eps, convention


def _fwd_backward(ctx, dy, _drstd):
    x, weight, rstd = ctx.saved_tensors
    dx, dg = torch.ops.rmsnorm_certified.rms_norm_backward(dy.contiguous(), x, None, weight, rstd, ctx.eps,
                                                           ctx.convention)
    return dx, (dg if weight is not None else None), None, None


_rms_norm_forward.register_autograd(_fwd_backward, setup_context=_fwd_setup)


@torch.library.custom_op("rmsnorm_certified::add_rms_norm_forward", mutates_args=())
def _add_rms_norm_forward(x: torch.Tensor, residual: torch.Tensor, weight: Optional[torch.Tensor], eps: float,
                          convention: str) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    _check_residual(x, residual)
    h = residual.reshape(-1, x.shape[-1]).clone()  # the new residual, written in place by the kernel
    o2 = _rows(x, "x")
    w = _weight(weight, x, convention)
    y = torch.empty(h.shape, dtype=x.dtype, device=x.device)
    rstd = torch.empty(h.shape[0], dtype=torch.float32, device=x.device)
    _forward(h, o2, y, w, eps, convention, rstd=rstd)
    return y.view(x.shape), h.view(x.shape), rstd


@_add_rms_norm_forward.register_fake
def _(x, residual, weight, eps, convention):
    return (torch.empty_like(x, memory_format=torch.contiguous_format),
            torch.empty_like(x, memory_format=torch.contiguous_format),
            x.new_empty((x.numel() // x.shape[-1],), dtype=torch.float32))


def _add_setup(ctx, inputs, output):
    _, _, weight, eps, convention = inputs
    _, h, rstd = output
    ctx.save_for_backward(h, weight, rstd)
    ctx.eps, ctx.convention = eps, convention


def _add_backward(ctx, dy, dh, _drstd):
    h, weight, rstd = ctx.saved_tensors
    if dh is None:
        dh = torch.zeros_like(h)
    dx, dg = torch.ops.rmsnorm_certified.rms_norm_backward(dy.contiguous(), h, dh.contiguous(), weight, rstd,
                                                           ctx.eps, ctx.convention)
    # h = residual + x: both receive the same gradient.
    return dx, dx, (dg if weight is not None else None), None, None


_add_rms_norm_forward.register_autograd(_add_backward, setup_context=_add_setup)


@torch.library.custom_op("rmsnorm_certified::fused_add_rms_norm", mutates_args=("residual",))
def _fused_add_rms_norm(x: torch.Tensor, residual: torch.Tensor, weight: Optional[torch.Tensor], eps: float,
                        convention: str) -> torch.Tensor:
    h, o2 = _in_place_rows(x, residual)
    w = _weight(weight, x, convention)
    y = torch.empty(h.shape, dtype=x.dtype, device=x.device)
    _forward(h, o2, y, w, eps, convention)
    _write_back(h, residual)
    return y.view(x.shape)


@_fused_add_rms_norm.register_fake
def _(x, residual, weight, eps, convention):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def _fp8_scales(mode, scale, R, D, device):
    """The scale buffer of an FP8 op: the given one (static), else one per row (token) or per block
    of 128 of each row (block), which the kernel fills."""
    if mode not in QUANT_MODES:
        raise ValueError(f"rmsnorm_certified: mode is one of {', '.join(QUANT_MODES)}, not {mode!r}")
    if mode == "static":
        if scale is None or scale.numel() != 1:
            raise ValueError("rmsnorm_certified: the static mode needs scale, one fp32 value")
        # On x's device, and never the input itself: an op's output may not alias an input.
        return scale.to(device=device, dtype=torch.float32).reshape(1).clone()
    return torch.empty((R,) if mode == "token" else (R, (D + 127) // 128), dtype=torch.float32, device=device)


def _fp8_fake(x, mode):
    R, D = x.numel() // x.shape[-1], x.shape[-1]
    shape = (1,) if mode == "static" else (R,) if mode == "token" else (R, (D + 127) // 128)
    return (torch.empty_like(x, dtype=torch.float8_e4m3fn, memory_format=torch.contiguous_format),
            x.new_empty(shape, dtype=torch.float32))


@torch.library.custom_op("rmsnorm_certified::rms_norm_fp8", mutates_args=())
def _rms_norm_fp8(x: torch.Tensor, weight: Optional[torch.Tensor], eps: float, mode: str, convention: str,
                  scale: Optional[torch.Tensor]) -> Tuple[torch.Tensor, torch.Tensor]:
    x2 = _rows(x, "x")
    w = _weight(weight, x, convention)
    R, D = x2.shape
    s = _fp8_scales(mode, scale, R, D, x.device)
    q = torch.empty((R, D), dtype=torch.float8_e4m3fn, device=x.device)
    _forward(x2, None, q, w, eps, convention, quant=QUANT_MODES[mode], scale=s)
    return q.view(x.shape), s


@_rms_norm_fp8.register_fake
def _(x, weight, eps, mode, convention, scale):
    return _fp8_fake(x, mode)


@torch.library.custom_op("rmsnorm_certified::fused_add_rms_norm_fp8", mutates_args=("residual",))
def _fused_add_rms_norm_fp8(x: torch.Tensor, residual: torch.Tensor, weight: Optional[torch.Tensor], eps: float,
                            mode: str, convention: str,
                            scale: Optional[torch.Tensor]) -> Tuple[torch.Tensor, torch.Tensor]:
    h, o2 = _in_place_rows(x, residual)
    w = _weight(weight, x, convention)
    R, D = h.shape
    s = _fp8_scales(mode, scale, R, D, x.device)
    q = torch.empty((R, D), dtype=torch.float8_e4m3fn, device=x.device)
    _forward(h, o2, q, w, eps, convention, quant=QUANT_MODES[mode], scale=s)
    _write_back(h, residual)
    return q.view(x.shape), s


@_fused_add_rms_norm_fp8.register_fake
def _(x, residual, weight, eps, mode, convention, scale):
    return _fp8_fake(x, mode)


# --- the functions users call ------------------------------------------------------------------
def rms_norm(x: torch.Tensor, weight: Optional[torch.Tensor], eps: float = 1e-6,
             convention: str = "standard") -> torch.Tensor:
    """y = x·r·g over the last dimension, r = 1/sqrt(mean(x²) + eps) (docs/contract.md)."""
    return torch.ops.rmsnorm_certified.rms_norm_forward(x, weight, float(eps), convention)[0]


def add_rms_norm(x: torch.Tensor, residual: torch.Tensor, weight: Optional[torch.Tensor], eps: float = 1e-6,
                 convention: str = "standard") -> Tuple[torch.Tensor, torch.Tensor]:
    """(rms_norm(h), h) with h = RN(residual + x), differentiable."""
    y, h, _ = torch.ops.rmsnorm_certified.add_rms_norm_forward(x, residual, weight, float(eps), convention)
    return y, h


def fused_add_rms_norm(x: torch.Tensor, residual: torch.Tensor, weight: Optional[torch.Tensor], eps: float = 1e-6,
                       convention: str = "standard") -> torch.Tensor:
    """residual ← RN(residual + x) in place; returns rms_norm(residual). No autograd (inference)."""
    return torch.ops.rmsnorm_certified.fused_add_rms_norm(x, residual, weight, float(eps), convention)


def rms_norm_fp8(x: torch.Tensor, weight: Optional[torch.Tensor], eps: float = 1e-6, mode: str = "token",
                 convention: str = "standard", scale: Optional[torch.Tensor] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """(q, scale): y quantized to e4m3 per token, per block of 128, or with a static scale."""
    return torch.ops.rmsnorm_certified.rms_norm_fp8(x, weight, float(eps), mode, convention, scale)


def fused_add_rms_norm_fp8(x: torch.Tensor, residual: torch.Tensor, weight: Optional[torch.Tensor], eps: float = 1e-6,
                           mode: str = "token", convention: str = "standard",
                           scale: Optional[torch.Tensor] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """residual ← RN(residual + x) in place; returns rms_norm_fp8(residual): (q, scale). No autograd."""
    return torch.ops.rmsnorm_certified.fused_add_rms_norm_fp8(x, residual, weight, float(eps), mode, convention, scale)


class RMSNorm(torch.nn.Module):
    """A drop-in RMSNorm layer over the last dimension, backed by rms_norm."""

    def __init__(self, dim: int, eps: float = 1e-6, dtype=None, device=None):
        super().__init__()
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.ones(dim, dtype=dtype, device=device))

    def forward(self, x):
        return rms_norm(x, self.weight, self.eps)


def certificate(directory: Optional[str] = None) -> Optional[dict]:
    """The certificate summary (SUMMARY.json of `rmsnorm-cert certify`) for the build these ops
    run: in `directory`, $RMSNORM_CERTIFICATES, or certificates/ of the source tree; None when
    there is none."""
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for d in (directory, os.environ.get("RMSNORM_CERTIFICATES"), os.path.join(here, "certificates")):
        if d and os.path.exists(os.path.join(d, "SUMMARY.json")):
            with open(os.path.join(d, "SUMMARY.json")) as f:
                return json.load(f)
    return None


__all__: List[str] = ["rms_norm", "add_rms_norm", "fused_add_rms_norm", "rms_norm_fp8", "fused_add_rms_norm_fp8", "RMSNorm",
                      "certificate"]
