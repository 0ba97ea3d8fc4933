"""Certify RMSNorm kernels written in Python (PyTorch, Triton, NumPy, ...) with the same
properties, corpus, generated cases, certificates and repro lines as `rmsnorm-cert certify`.

The kernels are described by `Kernel` records. The bridge builds the C table of the plugin ABI
(include/rmsnorm/plugin.h) with ctypes, its entry points calling back into Python, registers it
with librmsnorm_cert.so (include/rmsnorm/cert.h) and runs the tool's commands in this process.
No compiler and no Python headers are needed: only the shared library of a build of this project.
docs/certifying-your-kernel.md describes the signatures; adapters/ holds worked examples.
"""
import ctypes
import dataclasses
import glob
import importlib
import importlib.util
import inspect
import json
import os
import sys
import traceback
from typing import Callable, Optional, Sequence

# --- the ABI's numbers (include/rmsnorm/plugin.h) -----------------------------------------------
DTYPES = {"f32": 0, "f16": 1, "bf16": 2, "e4m3": 3, "e5m2": 4}
DTYPE_NAMES = {v: k for k, v in DTYPES.items()}
CONVENTIONS = {"standard": 0, "llama": 1, "gemma": 2, "no_weight": 3}
CONVENTION_NAMES = {v: k for k, v in CONVENTIONS.items()}
QUANT_MODES = {"static": 1, "token": 2, "block": 3}
QUANT_NAMES = {v: k for k, v in QUANT_MODES.items()}
OPS = ("forward", "add_forward", "forward_quant", "add_forward_quant", "backward", "add_backward")
OPS_NO_RSTD = 1 << 31
OPS_SAME_TYPE_WEIGHTS = 1 << 30
OPS_DG_WEIGHT_TYPE = 1 << 29
ABI_VERSION = 1
STATUS_OK, STATUS_INVALID, STATUS_UNSUPPORTED, STATUS_MISALIGNED = 0, 1, 2, 3
STATUS_LAUNCH_FAILED = 7


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32), ("stride", ctypes.c_int64)]


class _ForwardArgs(ctypes.Structure):
    _fields_ = [("rows", ctypes.c_int64), ("dim", ctypes.c_int64), ("x", _Tensor), ("o", _Tensor), ("y", _Tensor),
                ("g", ctypes.c_void_p), ("g_dtype", ctypes.c_int32), ("convention", ctypes.c_int32),
                ("quant", ctypes.c_int32), ("eps", ctypes.c_float), ("rstd", ctypes.c_void_p),
                ("scale", ctypes.c_void_p), ("stream", ctypes.c_void_p)]


class _BackwardArgs(ctypes.Structure):
    _fields_ = [("rows", ctypes.c_int64), ("dim", ctypes.c_int64), ("x", _Tensor), ("dy", _Tensor), ("dx", _Tensor),
                ("dresidual", _Tensor), ("g", ctypes.c_void_p), ("g_dtype", ctypes.c_int32),
                ("convention", ctypes.c_int32), ("rstd", ctypes.c_void_p), ("dg", ctypes.c_void_p),
                ("dg_dtype", ctypes.c_int32), ("eps", ctypes.c_float), ("workspace", ctypes.c_void_p),
                ("workspace_bytes", ctypes.c_size_t), ("stream", ctypes.c_void_p)]


_FORWARD_FN = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.POINTER(_ForwardArgs), ctypes.c_void_p, ctypes.c_size_t)
_BACKWARD_FN = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.POINTER(_BackwardArgs), ctypes.c_void_p, ctypes.c_size_t)
_SHAPE_FN = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int64, ctypes.POINTER(ctypes.c_int64),
                             ctypes.POINTER(ctypes.c_int32))
_WORKSPACE_FN = ctypes.CFUNCTYPE(ctypes.c_size_t, ctypes.c_int64, ctypes.c_int64)


class _KernelEntry(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("description", ctypes.c_char_p), ("ops", ctypes.c_uint32),
                ("memory", ctypes.c_int32), ("dtypes", ctypes.c_uint32), ("conventions", ctypes.c_uint32),
                ("quant_modes", ctypes.c_uint32), ("min_dim", ctypes.c_int64), ("max_dim", ctypes.c_int64),
                ("alignment", ctypes.c_uint32), ("packed_rows", ctypes.c_int32), ("row_shape", _SHAPE_FN),
                ("dg_shape", _SHAPE_FN), ("forward", _FORWARD_FN), ("backward", _BACKWARD_FN),
                ("workspace_bytes", _WORKSPACE_FN)]


class _Plugin(ctypes.Structure):
    _fields_ = [("abi_version", ctypes.c_uint32), ("name", ctypes.c_char_p), ("kernel_count", ctypes.c_uint32),
                ("kernels", ctypes.POINTER(_KernelEntry))]


# --- what a kernel is --------------------------------------------------------------------------
@dataclasses.dataclass
class Kernel:
    """One RMSNorm kernel written in Python and what it claims. Every op function is optional;
    the kernel claims the ops it has. Signatures (x is [R, D], rows possibly strided):

    forward(x, weight, eps) -> y, or (y, rstd) when rstd=True
    add_forward(x, residual, weight, eps) -> (y, new_residual[, rstd])   new_residual = RN(residual + x)
    forward_quant(x, weight, eps, mode, scale) -> (q, scale[, rstd])      mode "static" | "token" | "block"
    add_forward_quant(x, residual, weight, eps, mode, scale) -> (q, scale, new_residual[, rstd])
    backward(dy, x, weight, rstd, eps) -> (dx, dweight)
    add_backward(dy, x, weight, rstd, eps, dresidual) -> (dx, dweight)    dx includes dresidual

    A backward taking a `dg_dtype` keyword is told the type dweight is wanted in (fp32 or the
    weight's: a torch dtype, or a name for NumPy kernels).

    weight is None under the no_weight convention. A kernel claiming several conventions (or all:
    conventions=()) gets convention="standard" | "llama" | "gemma" | "no_weight" as a keyword.
    docs/python.md has a table of every field. Outputs are returned
    (or written into the inputs, and returned); the bridge copies them into the harness's buffers,
    converting only where that is exact (a bf16 dweight into an fp32 buffer, never the reverse).
    """
    name: str
    forward: Optional[Callable] = None
    add_forward: Optional[Callable] = None
    forward_quant: Optional[Callable] = None
    add_forward_quant: Optional[Callable] = None
    backward: Optional[Callable] = None
    add_backward: Optional[Callable] = None
    array: str = "torch"          # "torch" (tensors) or "numpy" (arrays of the values, host memory): say "numpy"
                                  # for a NumPy kernel (a torch one needs torch, and a CUDA device on "cuda")
    device: str = "cuda"          # torch only: "cuda" or "cpu"
    dtypes: Sequence[str] = ("f32", "f16", "bf16")  # empty: all three
    conventions: Sequence[str] = ("standard",)       # empty: all four
    quant_modes: Sequence[str] = ()                  # FP8 modes; empty: none
    min_dim: int = 1
    max_dim: int = 0              # 0: no bound
    alignment: int = 0            # bytes every row start and pitch must be a multiple of
    packed_rows: bool = False
    same_type_weights: bool = False  # weights of x's type only
    dg_weight_type: bool = False  # dweight in the weight's type only (what autograd returns)
    rstd: bool = True             # its forward ops return rstd; False: rstd is not judged
    row_shape: Optional[Callable] = None  # n -> (terms per thread, tree depth) of its Σx² (docs/contract.md)
    dg_shape: Optional[Callable] = None   # rows -> (terms per thread, tree depth) of its dγ column sums
    description: str = ""

    def ops(self):
        return [op for op in OPS if getattr(self, op) is not None]


class Declined(Exception):
    """Raise from a kernel to decline a case it does not take (counted as not checked)."""


class CannotRun(RuntimeError):
    """The target's kernels cannot run here: its file or module is missing, an import it needs
    fails (torch for an array="torch" kernel), or librmsnorm_cert.so cannot be found or loaded.
    `python -m rmsnorm_cert` exits 3 ("could not run") with the message."""


# --- memory views ------------------------------------------------------------------------------
_ITEM = {0: 4, 1: 2, 2: 2, 3: 1, 4: 1}


def _fp8_table(code):
    import numpy as np
    e_bits, m_bits, bias = (4, 3, 7) if code == 3 else (5, 2, 15)
    out = np.zeros(256, dtype=np.float64)
    for b in range(256):
        s = -1.0 if b & 0x80 else 1.0
        e = (b >> m_bits) & ((1 << e_bits) - 1)
        m = b & ((1 << m_bits) - 1)
        if code == 3 and e == 15 and m == 7:
            out[b] = np.nan
        elif code == 4 and e == 31:
            out[b] = s * np.inf if m == 0 else np.nan
        elif e == 0:
            out[b] = s * m * 2.0 ** (1 - bias - m_bits)
        else:
            out[b] = s * (1 + m / (1 << m_bits)) * 2.0 ** (e - bias)
    return out


class _NumpyIO:
    """Host memory as numpy arrays: f32 and f16 as views, bf16 and FP8 as float32 copies of the
    values; outputs must be values of their type (checked, never rounded here)."""

    def __init__(self):
        import numpy as np
        self.np = np
        self.tables = {3: _fp8_table(3), 4: _fp8_table(4)}

    def raw(self, ptr, dtype, rows, cols, stride):
        np = self.np
        storage = {0: np.float32, 1: np.float16, 2: np.uint16, 3: np.uint8, 4: np.uint8}[dtype]
        if rows == 0 or not ptr:
            return np.zeros((rows, cols), dtype=storage)
        n = (rows - 1) * stride + cols
        base = np.ctypeslib.as_array((ctypes.c_uint8 * (n * _ITEM[dtype])).from_address(ptr)).view(storage)
        return np.lib.stride_tricks.as_strided(base, shape=(rows, cols), strides=(stride * _ITEM[dtype], _ITEM[dtype]))

    def view(self, ptr, dtype, rows, cols, stride):
        np = self.np
        a = self.raw(ptr, dtype, rows, cols, stride)
        if dtype == 2:
            return (a.astype(np.uint32) << 16).view(np.float32)
        if dtype in (3, 4):
            return self.tables[dtype][a].astype(np.float32)
        return a

    def vector(self, ptr, dtype, n):
        return self.view(ptr, dtype, 1, n, n)[0]

    def store(self, value, ptr, dtype, rows, cols, stride, what):
        np = self.np
        v = np.asarray(value, dtype=np.float64)
        if v.size != rows * cols:
            raise _Failure(f"{what} has {v.size} values, expected {rows}x{cols}")
        v = v.reshape(rows, cols)
        dst = self.raw(ptr, dtype, rows, cols, stride)
        nan = np.isnan(v)
        if dtype == 0:
            enc = v.astype(np.float32)
            back = enc.astype(np.float64)
        elif dtype == 1:
            enc = v.astype(np.float16)
            back = enc.astype(np.float64)
        elif dtype == 2:
            f = v.astype(np.float32)
            bits = f.view(np.uint32)
            enc = (bits >> 16).astype(np.uint16)
            back = np.where(bits & 0xFFFF, np.nan, f.astype(np.float64))
            back = np.where(nan, np.nan, back)
            enc = np.where(nan, np.uint16(0x7FC0), enc)
        else:
            table = self.tables[dtype]
            finite = ~np.isnan(table)
            codes = np.nonzero(finite)[0]
            order = np.argsort(table[codes], kind="stable")
            vals, codes = table[codes][order], codes[order]
            idx = np.clip(np.searchsorted(vals, v), 0, len(vals) - 1)
            enc = codes[idx].astype(np.uint8)
            back = vals[idx]
            enc = np.where(nan, np.uint8(0x7F), enc)
        bad = ~(nan | (back == v))
        if bad.any():
            r, c = np.argwhere(bad)[0]
            raise _Failure(f"{what}[{r},{c}] = {v[r, c]!r} is not a value of {DTYPE_NAMES[dtype]} "
                           "(the kernel must round its outputs itself)")
        dst[...] = enc

    def store_vector(self, value, ptr, dtype, n, what):
        self.store(value, ptr, dtype, 1, n, n, what)

    def run(self, stream, fn):
        return fn()

    def finish(self):
        pass


class _TorchIO:
    """Memory as torch tensors, without a copy: device memory through __cuda_array_interface__,
    host memory through numpy."""

    def __init__(self, device):
        import torch
        self.torch = torch
        self.device = device
        self.dtypes = {0: torch.float32, 1: torch.float16, 2: torch.bfloat16, 3: torch.float8_e4m3fn,
                       4: torch.float8_e5m2}
        self.storage = {0: torch.float32, 1: torch.float16, 2: torch.int16, 3: torch.uint8, 4: torch.uint8}
        self.numpy = _NumpyIO() if device == "cpu" else None

    def view(self, ptr, dtype, rows, cols, stride):
        torch = self.torch
        if rows == 0 or not ptr:
            return torch.empty((rows, cols), dtype=self.dtypes[dtype], device=self.device)
        if self.device == "cpu":
            t = torch.from_numpy(self.numpy.raw(ptr, dtype, rows, cols, stride))
        else:
            item = _ITEM[dtype]
            typestr = {0: "<f4", 1: "<f2", 2: "<i2", 3: "|u1", 4: "|u1"}[dtype]

            class _Interface:
                __cuda_array_interface__ = {"shape": (rows, cols), "typestr": typestr, "data": (ptr, False),
                                            "strides": (stride * item, item), "version": 2}
            t = torch.as_tensor(_Interface(), device="cuda")
        return t.view(self.dtypes[dtype])

    def vector(self, ptr, dtype, n):
        return self.view(ptr, dtype, 1, n, n)[0]

    def store(self, value, ptr, dtype, rows, cols, stride, what):
        torch = self.torch
        if not isinstance(value, torch.Tensor):
            raise _Failure(f"{what} is a {type(value).__name__}, not a torch tensor")
        want = self.dtypes[dtype]
        if value.numel() != rows * cols:
            raise _Failure(f"{what} has shape {tuple(value.shape)}, expected {rows}x{cols}")
        exact = value.dtype == want or (want == torch.float32 and value.dtype in (torch.float16, torch.bfloat16))
        if not exact:
            raise _Failure(f"{what} is {value.dtype}, expected {want} (the bridge converts only where exact)")
        if value.device.type != self.device:
            raise _Failure(f"{what} is on {value.device}, expected {self.device}")
        if rows == 0:
            return
        dst = self.view(ptr, dtype, rows, cols, stride)
        src = value.reshape(rows, cols)
        if src.data_ptr() == dst.data_ptr() and src.stride() == dst.stride() and src.dtype == dst.dtype:
            return
        dst.copy_(src)

    def store_vector(self, value, ptr, dtype, n, what):
        self.store(value, ptr, dtype, 1, n, n, what)

    def run(self, stream, fn):
        torch = self.torch
        if self.device != "cuda":
            return fn()
        s = torch.cuda.ExternalStream(stream) if stream else torch.cuda.default_stream()
        with torch.cuda.stream(s):
            return fn()

    def finish(self):
        # Outputs were copied on the kernel's stream, in its order: results that a kernel leaves
        # to work on another stream are read unfinished (a consumer on its stream would read the
        # same). Then the whole device is waited for, so that an error of this case surfaces here.
        if self.device == "cuda":
            self.torch.cuda.synchronize()


class _Failure(Exception):
    pass


# --- the table ---------------------------------------------------------------------------------
def _message(buf, size, text):
    data = text.encode("utf-8", "replace")[: max(0, size - 1)]
    ctypes.memmove(buf, data + b"\0", len(data) + 1)


def _tuple(out, n, what):
    if not isinstance(out, (tuple, list)) or len(out) != n:
        raise _Failure(f"{what} must return {n} values, got {type(out).__name__}"
                       + (f" of {len(out)}" if isinstance(out, (tuple, list)) else ""))
    return out


class _Entry:
    """The entry points of one Kernel, as the C table calls them."""

    def __init__(self, kernel: Kernel):
        self.k = kernel
        self.io = None

    def _io(self):
        if self.io is None:
            self.io = _NumpyIO() if self.k.array == "numpy" else _TorchIO(self.k.device)
        return self.io

    def _guard(self, body, buf, size):
        try:
            try:
                body()
            finally:
                if self.io is not None:
                    self.io.finish()
            return STATUS_OK
        except Declined as e:
            _message(buf, size, f"{self.k.name} declined: {e}")
            return STATUS_UNSUPPORTED
        except _Failure as e:
            _message(buf, size, f"{self.k.name}: {e}")
            return STATUS_LAUNCH_FAILED
        except BaseException as e:  # the kernel's own exception: this case fails, the run goes on
            frames = traceback.extract_tb(e.__traceback__)
            where = f" ({os.path.basename(frames[-1].filename)}:{frames[-1].lineno})" if frames else ""
            _message(buf, size, f"{self.k.name} raised {type(e).__name__}: {e}{where}".replace("\n", " "))
            return STATUS_LAUNCH_FAILED

    def _op_fn(self, op):
        fn = getattr(self.k, op)
        if fn is None:
            raise Declined(f"no {op}")
        return fn

    def _kwargs(self, convention):
        # One convention claimed: the kernel knows it. Several, or none (every one): it is told.
        return {"convention": CONVENTION_NAMES[convention]} if len(self.k.conventions) != 1 else {}

    def forward(self, args_p, buf, size):
        a = args_p.contents

        def body():
            io = self._io()
            R, D = a.rows, a.dim
            add = bool(a.o.data)
            quant = a.quant != 0
            op = ("add_" if add else "") + ("forward_quant" if quant else "forward")
            fn = self._op_fn(op)
            x = io.view(a.x.data, a.x.dtype, R, D, a.x.stride)
            o = io.view(a.o.data, a.o.dtype, R, D, a.o.stride) if add else None
            w = io.vector(a.g, a.g_dtype, D) if a.g else None
            eps = float(a.eps)
            kw = self._kwargs(a.convention)
            if quant:
                mode = QUANT_NAMES[a.quant]
                scale_in = io.vector(a.scale, 0, 1) if a.quant == 1 else None
                n_out = 2 + add + self.k.rstd
                out = _tuple(io.run(a.stream, lambda: fn(o, x, w, eps, mode, scale_in, **kw) if add
                                    else fn(x, w, eps, mode, scale_in, **kw)), n_out, op)
                io.run(a.stream, lambda: self._store_forward(io, a, out[0], out[2] if add else None,
                                                            out[-1] if self.k.rstd else None, out[1]))
            else:
                n_out = 1 + add + self.k.rstd
                res = io.run(a.stream, lambda: fn(o, x, w, eps, **kw) if add else fn(x, w, eps, **kw))
                out = (res,) if n_out == 1 and not isinstance(res, (tuple, list)) else _tuple(res, n_out, op)
                io.run(a.stream, lambda: self._store_forward(io, a, out[0], out[1] if add else None,
                                                            out[-1] if self.k.rstd else None, None))
        return self._guard(body, buf, size)

    def _store_forward(self, io, a, y, h, rstd, scale):
        R, D = a.rows, a.dim
        # The residual first: y may be the sub-layer output's buffer, never x's under the fused add.
        if h is not None:
            io.store(h, a.x.data, a.x.dtype, R, D, a.x.stride, "new_residual")
        io.store(y, a.y.data, a.y.dtype, R, D, a.y.stride, "y")
        if rstd is not None and a.rstd:
            io.store_vector(rstd, a.rstd, 0, R, "rstd")
        if scale is not None and a.quant in (2, 3):
            n = R if a.quant == 2 else R * ((D + 127) // 128)
            io.store_vector(scale, a.scale, 0, n, "scale")

    def backward(self, args_p, buf, size):
        a = args_p.contents

        def body():
            io = self._io()
            R, D = a.rows, a.dim
            add = bool(a.dresidual.data)
            op = "add_backward" if add else "backward"
            fn = self._op_fn(op)
            x = io.view(a.x.data, a.x.dtype, R, D, a.x.stride)
            dy = io.view(a.dy.data, a.dy.dtype, R, D, a.dy.stride)
            w = io.vector(a.g, a.g_dtype, D) if a.g else None
            rstd = io.vector(a.rstd, 0, R) if R else io.view(0, 0, 0, 1, 1)[:, 0]
            eps = float(a.eps)
            kw = self._kwargs(a.convention)
            if a.dg and _takes(fn, "dg_dtype"):
                kw["dg_dtype"] = io.dtypes[a.dg_dtype] if hasattr(io, "dtypes") else DTYPE_NAMES[a.dg_dtype]
            if add:
                dres = io.view(a.dresidual.data, a.dresidual.dtype, R, D, a.dresidual.stride)
                out = _tuple(io.run(a.stream, lambda: fn(dy, x, w, rstd, eps, dres, **kw)), 2, op)
            else:
                out = _tuple(io.run(a.stream, lambda: fn(dy, x, w, rstd, eps, **kw)), 2, op)

            def store():
                io.store(out[0], a.dx.data, a.dx.dtype, R, D, a.dx.stride, "dx")
                if a.dg:
                    if out[1] is None:
                        raise _Failure("dweight is None but the case wants it")
                    io.store_vector(out[1], a.dg, a.dg_dtype, D, "dweight")
            io.run(a.stream, store)
        return self._guard(body, buf, size)


def _takes(fn, keyword):
    try:
        return keyword in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _shape_fn(fn):
    if fn is None:
        return _SHAPE_FN()

    def shape(n, per_thread, depth):
        try:
            k, d = fn(int(n))
            per_thread[0], depth[0] = int(k), int(d)
            return 0
        except Exception:
            return 1
    return _SHAPE_FN(shape)


def _bits(names, table, what):
    bits = 0
    for n in names:
        if n not in table:
            raise ValueError(f"unknown {what} '{n}' (one of {', '.join(table)})")
        bits |= 1 << table[n]
    return bits


class _Table:
    """The C table of some Kernels; holds every ctypes object the C side points into."""

    def __init__(self, library: str, kernels: Sequence[Kernel]):
        self.entries = [_Entry(k) for k in kernels]
        self.keep = []
        arr = (_KernelEntry * len(kernels))()
        for slot, e in zip(arr, self.entries):
            k = e.k
            if k.array not in ("torch", "numpy") or k.device not in ("cuda", "cpu"):
                raise ValueError(f"{k.name}: array is 'torch' or 'numpy', device 'cuda' or 'cpu'")
            ops = sum(1 << OPS.index(op) for op in k.ops())
            if not ops:
                raise ValueError(f"{k.name}: no op function is set")
            if not k.rstd:
                ops |= OPS_NO_RSTD
            if k.same_type_weights:
                ops |= OPS_SAME_TYPE_WEIGHTS
            if k.dg_weight_type:
                ops |= OPS_DG_WEIGHT_TYPE
            fwd, bwd = _FORWARD_FN(e.forward), _BACKWARD_FN(e.backward)
            rs, ds = _shape_fn(k.row_shape), _shape_fn(k.dg_shape)
            name, desc = k.name.encode(), (k.description or f"Python kernel {k.name}").encode()
            self.keep += [fwd, bwd, rs, ds, name, desc]
            slot.name, slot.description, slot.ops = name, desc, ops
            slot.memory = 1 if (k.array == "torch" and k.device == "cuda") else 0
            slot.dtypes = _bits(k.dtypes, {n: DTYPES[n] for n in ("f32", "f16", "bf16")}, "dtype")
            slot.conventions = _bits(k.conventions, CONVENTIONS, "convention")
            slot.quant_modes = _bits(k.quant_modes, QUANT_MODES, "FP8 mode") if k.quant_modes else (1 << 0)
            slot.min_dim, slot.max_dim = k.min_dim, k.max_dim
            slot.alignment, slot.packed_rows = k.alignment, int(k.packed_rows)
            slot.row_shape, slot.dg_shape = rs, ds
            slot.forward, slot.backward = fwd, bwd
        self.arr = arr
        self.lib_name = library.encode()
        self.plugin = _Plugin(ABI_VERSION, self.lib_name, len(kernels), arr)


# --- the library -------------------------------------------------------------------------------
_lib = None
_state = {"registered": None, "ran": False, "tables": []}


def _build_glob():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return os.path.join(root, "build", "*", "cli", "librmsnorm_cert.so")


def library_path():
    """librmsnorm_cert.so: $RMSNORM_CERT_LIB, beside this package (installed), or the newest in a
    build tree of this source tree (build/*/cli/). Raises CannotRun, saying where it looked."""
    env = os.environ.get("RMSNORM_CERT_LIB")
    if env:
        if not os.path.isfile(env):
            raise CannotRun(f"RMSNORM_CERT_LIB={env}: no such file (point it at the librmsnorm_cert.so of a build, "
                            "e.g. build/ci/cli/librmsnorm_cert.so, or unset it to search beside the package and in "
                            "build/*/cli/)")
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    beside = os.path.join(here, "librmsnorm_cert.so")
    if os.path.exists(beside):
        return beside
    found = glob.glob(_build_glob())
    if not found:
        raise CannotRun(f"librmsnorm_cert.so not found: RMSNORM_CERT_LIB is not set, none is beside the package "
                        f"({beside}: pip install ./python puts it there) and none in {_build_glob()}. Build the "
                        "target rmsnorm_cert (cmake --build BUILD --target rmsnorm_cert), or name the library: "
                        "RMSNORM_CERT_LIB=/path/to/librmsnorm_cert.so")
    return max(found, key=os.path.getmtime)


def _library():
    global _lib
    if _lib is None:
        path = library_path()
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            via = " (RMSNORM_CERT_LIB)" if os.environ.get("RMSNORM_CERT_LIB") else ""
            raise CannotRun(f"cannot load {path}{via}: {e}") from e
        lib.rmsnorm_cert_register.argtypes = [ctypes.POINTER(_Plugin), ctypes.c_char_p, ctypes.c_char_p,
                                              ctypes.c_size_t]
        lib.rmsnorm_cert_main.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        _lib = lib
    return _lib


def register(library: str, kernels: Sequence[Kernel], origin: str):
    """Registers the kernels as plugin.<library>.<name>; once per process, before any command."""
    if _state["registered"] is not None:
        if _state["registered"] == (library, tuple(id(k) for k in kernels)):
            return
        raise RuntimeError("one kernel table per process: this process already registered "
                           f"plugin.{_state['registered'][0]}.* (run `python -m rmsnorm_cert certify` once per table)")
    table = _Table(library, kernels)
    err = ctypes.create_string_buffer(2048)
    if _library().rmsnorm_cert_register(ctypes.byref(table.plugin), origin.encode(), err, len(err)) != 0:
        raise ValueError(err.value.decode())
    _state["registered"] = (library, tuple(id(k) for k in kernels))
    _state["tables"].append(table)


def set_launcher(cli_args: Sequence[str]):
    """Names the command that starts a process hosting these kernels again (python -m
    rmsnorm_cert plus `cli_args`, to which the tool appends a step's arguments): certification
    then runs each property, the corpus and each op's generated cases in a child process, so that
    a kernel that crashes fails that step instead of ending the run (cli/isolated_step.h)."""
    os.environ["RMSNORM_CERT_LAUNCHER"] = "\t".join([sys.executable, "-m", "rmsnorm_cert"] + list(cli_args))


def run_command(argv: Sequence[str]) -> int:
    """rmsnorm-cert's command line in this process (argv without the program name)."""
    args = ["rmsnorm-cert"] + [str(a) for a in argv]
    arr = (ctypes.c_char_p * len(args))(*[a.encode() for a in args])
    sys.stdout.flush()
    sys.stderr.flush()
    _state["ran"] = True
    return _library().rmsnorm_cert_main(len(args), arr)


# --- targets -----------------------------------------------------------------------------------
def load_target(spec: str, **options):
    """(library, kernels) from "path/file.py[:attr]" or "module[:attr]": the attribute (default:
    the module) is an adapter module (KERNELS, optional LIBRARY), a Kernel, a list of Kernels, or a
    plain function, certified as a forward with `options` (Kernel fields). Raises CannotRun when
    the file or module is missing or importing it fails for want of a module."""
    path, _, attr = spec.partition(":") if not os.path.exists(spec) else (spec, "", "")
    if path.endswith(".py") or os.sep in path or os.path.exists(path):
        if not os.path.exists(path):
            raise CannotRun(f"{path}: no such file (a target is path/to/adapter.py[:attr] or module[:attr])")
        if not os.path.isfile(path):
            raise ValueError(f"{path} is not a Python file")
        name = os.path.splitext(os.path.basename(path))[0]
        mod_spec = importlib.util.spec_from_file_location(name, path)
        if mod_spec is None:
            raise ImportError(f"cannot load {path}")
        module = importlib.util.module_from_spec(mod_spec)
        sys.modules[name] = module
        try:
            mod_spec.loader.exec_module(module)
        except ImportError as e:
            sys.modules.pop(name, None)
            raise CannotRun(f"{path}: importing it failed: {type(e).__name__}: {e}") from e
    else:
        try:
            module = importlib.import_module(path)
        except ImportError as e:
            missing = getattr(e, "name", None)
            if isinstance(e, ModuleNotFoundError) and missing and (path == missing or path.startswith(missing + ".")):
                raise CannotRun(f"no module named '{path}' on sys.path (name a file as path/to/adapter.py, or "
                                "add its directory to PYTHONPATH)") from e
            raise CannotRun(f"{path}: importing it failed: {type(e).__name__}: {e}") from e
    obj = module
    for part in filter(None, attr.split(".")):
        obj = getattr(obj, part)
    return resolve(obj, **options)


def resolve(obj, **options):
    """(library, kernels) of an adapter module, a Kernel, a list of Kernels or a function."""
    if isinstance(obj, Kernel):
        return "python", [obj]
    if isinstance(obj, (list, tuple)) and obj and all(isinstance(k, Kernel) for k in obj):
        return "python", list(obj)
    kernels = getattr(obj, "KERNELS", None)
    if kernels is not None:
        kernels = list(kernels)
        if not kernels:  # an adapter whose library is missing here (UNAVAILABLE says which)
            raise CannotRun(f"{getattr(obj, '__name__', obj)}.KERNELS is empty: "
                            f"{getattr(obj, 'UNAVAILABLE', None) or 'nothing to certify'}")
        return getattr(obj, "LIBRARY", "python"), kernels
    if callable(obj):
        return "python", [Kernel(name=getattr(obj, "__name__", "kernel"), forward=obj, **options)]
    raise TypeError(f"{obj!r} is no adapter module, Kernel, list of Kernels or function")


def _glob_one(p, s):
    # '*' any run, '?' any one character: the tool's glob (kernels/common/registry.cpp).
    i = j = 0
    star, mark = -1, 0
    while j < len(s):
        if i < len(p) and (p[i] == "?" or p[i] == s[j]):
            i, j = i + 1, j + 1
        elif i < len(p) and p[i] == "*":
            star, mark, i = i, j, i + 1
        elif star >= 0:
            i, mark = star + 1, mark + 1
            j = mark
        else:
            return False
    while i < len(p) and p[i] == "*":
        i += 1
    return i == len(p)


def select(library: str, kernels: Sequence[Kernel], pattern: str):
    """The kernels whose variant names (plugin.<library>.<name>) the tool's PATTERN matches: one
    glob or several separated by commas, as `rmsnorm-cert certify PATTERN` reads it."""
    return [k for k in kernels if any(_glob_one(p, f"plugin.{library}.{k.name}") for p in pattern.split(","))]


def check_imports(kernels: Sequence[Kernel]):
    """Raises CannotRun when the array library of some kernel cannot be imported in this
    interpreter: without torch an array="torch" kernel (the default) would be listed as skipped
    for want of a CUDA device, or fail every case, when the fix is array="numpy" or torch."""
    for array in ("torch", "numpy"):
        ks = [k for k in kernels if k.array == array]
        if not ks:
            continue
        try:
            importlib.import_module(array)
        except ImportError as e:
            names = ", ".join(k.name for k in ks)
            if array == "torch":
                raise CannotRun(f"{names}: array='torch' (the Kernel default) but torch cannot be imported in "
                                f"{sys.executable} ({type(e).__name__}: {e}): pass array='numpy' to Kernel for a "
                                "NumPy kernel (--array numpy for a plain function), or install torch for this "
                                "interpreter") from e
            raise CannotRun(f"{names}: array='numpy' but numpy cannot be imported in {sys.executable} "
                            f"({type(e).__name__}: {e})") from e


def _option_flags(options):
    """A plain function's Kernel options as `python -m rmsnorm_cert` flags; None when some option
    has no flag (then the steps cannot be started again elsewhere)."""
    flags = []
    for key, value in options.items():
        if key in ("array", "device"):
            flags += [f"--{key}", str(value)]
        elif key == "dtypes":
            flags += ["--dtypes", ",".join(value)]
        elif key == "rstd":
            flags += [] if value else ["--no-rstd"]
        elif key == "same_type_weights":
            flags += ["--same-type-weights"] if value else []
        else:
            return None
    return flags


def certify(target, *, cases=100, property_cases=None, seed=None, out="certificates", kernels="*", junit=None,
            html=False, corpus=None, origin=None, args=(), **options):
    """Certifies a Python kernel in this process; returns {"exit_code", "certificates"} where
    certificates maps each variant to its certificate (JSON, as rmsnorm-cert writes it).

    target: a function (a forward; `options` are Kernel fields: array, device, dtypes, rstd, ...),
    a Kernel, a list of Kernels, an adapter module, or a "path.py[:attr]" / "module[:attr]" string.
    Raises CannotRun when the target, an import it needs (torch for array="torch" kernels) or
    librmsnorm_cert.so is missing.
    """
    if isinstance(target, str):
        library, ks = load_target(target, **options)
        origin = origin or f"python -m rmsnorm_cert repro {target}"
        if not options:
            set_launcher(["_cli", target, "--"])
    else:
        library, ks = resolve(target, **options)
        # An object another process can import again (a module-level function, Kernel or list):
        # its steps run in child processes too; anything else runs here, one case after another.
        mod = getattr(target, "__module__", None) if callable(target) else None
        qual = getattr(target, "__qualname__", None) if callable(target) else None
        spec = f"{mod}:{qual}" if mod and qual and mod != "__main__" and "<" not in qual else None
        if origin is None:
            origin = f"python -m rmsnorm_cert repro {spec or 'MODULE:FUNCTION'}"
        flags = _option_flags(options)
        if spec and flags is not None:
            set_launcher(["_cli", spec] + flags + ["--"])
    check_imports(select(library, ks, f"plugin.{library}.{kernels}"))
    register(library, ks, origin)
    argv = ["certify", f"plugin.{library}.{kernels}", "--cases", cases, "--out", out]
    if property_cases is not None:
        argv += ["--property-cases", property_cases]
    if seed is not None:
        argv += ["--seed", seed]
    if junit:
        argv += ["--junit", junit]
    if html:
        argv += ["--html"]
    if corpus:
        argv += ["--corpus", corpus]
    rc = run_command(argv + list(args))
    certs = {}
    for k in ks:
        name = f"plugin.{library}.{k.name}"
        path = os.path.join(out, name + ".json")
        if os.path.exists(path):
            with open(path) as f:
                certs[name] = json.load(f)
    return {"exit_code": rc, "certificates": certs}
