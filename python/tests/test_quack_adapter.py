"""adapters/quack.py without a GPU, PyTorch or QuACK: a stand-in torch module (always, so that the test
is the same on every machine; CI has no torch) and a stand-in `quack` package written to a temporary
directory, with 0.6.5's signatures for quack.rmsnorm.rmsnorm_fwd / rmsnorm_bwd, recording every call.

Checked: the adapter loads through the bridge under the name "quack" (its file's basename) and still
imports QuACK's package, not itself; it builds KERNELS with its claims and the bridge's C table takes
them; each op calls QuACK with exactly the arguments bench/peers.py ran on the H200 and maps the
results by 0.6.5's positions; 16-bit rows of odd width are declined without a call (fp32 rows and
R = 0 are not); results of another shape fail with the reason; older signatures leave out what they
lack or make the adapter unavailable; a missing QuACK or torch leaves KERNELS empty with the reason,
which the bridge reports; the accumulation shapes take the values derived by hand from QuACK's
launch heuristics, and valid ones everywhere."""
import ctypes
import importlib.util
import os
import shutil
import sys
import tempfile
import traceback
import types

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, os.pardir, os.pardir))
ADAPTER = os.path.join(ROOT, "adapters", "quack.py")
sys.path.insert(0, os.path.join(ROOT, "python"))

import rmsnorm_cert as rc  # noqa: E402  (ctypes only: no numpy, no torch)
from rmsnorm_cert import bridge  # noqa: E402

failures = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        failures.append(what)


def raises(fn, exc):
    try:
        fn()
    except exc as e:
        return e
    return None


# --- a stand-in torch ----------------------------------------------------------------------------
class DType:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "torch." + self.name


class FakeTensor:
    def __init__(self, shape, dtype, strides=None, tag=""):
        self.shape = tuple(shape)
        self.dtype = dtype
        self._strides = tuple(strides) if strides is not None else self._packed()
        self.tag = tag
        self.made_contiguous = None

    def _packed(self):
        out, step = [], 1
        for n in reversed(self.shape):
            out.append(step)
            step *= max(n, 1)
        return tuple(reversed(out))

    def dim(self):
        return len(self.shape)

    def stride(self, i=None):
        return self._strides if i is None else self._strides[i]

    def contiguous(self):
        if self._strides == self._packed():
            return self
        self.made_contiguous = FakeTensor(self.shape, self.dtype, tag=self.tag + ".contiguous")
        return self.made_contiguous

    def __repr__(self):
        return f"FakeTensor({self.tag or '?'}, {self.shape}, {self.dtype})"


def fake_torch(cuda_capability=None, sm_count=None):
    t = types.ModuleType("torch")
    t.float32, t.float16, t.bfloat16 = DType("float32"), DType("float16"), DType("bfloat16")
    t.Tensor = FakeTensor
    t.empty = lambda *shape, dtype=None, **kw: FakeTensor(shape[0] if len(shape) == 1 and isinstance(shape[0], tuple)
                                                          else shape, dtype or t.float32)
    available = cuda_capability is not None
    t.cuda = types.SimpleNamespace(
        is_available=lambda: available,
        get_device_capability=lambda *a: cuda_capability,
        current_device=lambda: 0,
        get_device_properties=lambda *a: types.SimpleNamespace(multi_processor_count=sm_count))
    return t


TORCH = fake_torch()
sys.modules["torch"] = TORCH
F32, F16, BF16 = TORCH.float32, TORCH.float16, TORCH.bfloat16

# --- a stand-in quack package --------------------------------------------------------------------
FWD_PARAMS = ("x, weight=None, bias=None, residual=None, out_dtype=None, residual_dtype=None, eps=1e-6, "
              "store_rstd=False, weight_offset=0.0")
BWD_PARAMS = "x, weight, dout, rstd, dresidual_out=None, has_bias=False, has_residual=False, weight_offset=0.0"

RMSNORM_PY = '''
import inspect
import torch

CALLS = []          # (name, args, kwargs, result) of every call, as the adapter made it
OVERRIDE = {}       # name -> function(result) -> what to return instead


def _recorded(name, impl):
    def call(*args, **kwargs):
        result = impl(*args, **kwargs)
        if name in OVERRIDE:
            result = OVERRIDE[name](result)
        CALLS.append((name, args, kwargs, result))
        return result
    call.__signature__ = inspect.signature(impl)
    call.__name__ = impl.__name__
    return call


def rmsnorm_fwd(%(fwd)s):
    out = torch.empty(x.shape, dtype=x.dtype)
    out.tag = "out"
    residual = locals().get("residual")
    residual_out = x
    if residual is not None:
        residual_out = torch.empty(x.shape, dtype=residual.dtype)
        residual_out.tag = "residual_out"
    rstd = torch.empty((x.shape[0],), dtype=torch.float32) if locals().get("store_rstd") else None
    if rstd is not None:
        rstd.tag = "rstd"
    return out, residual_out, rstd


def rmsnorm_bwd(%(bwd)s):
    dx = torch.empty(x.shape, dtype=x.dtype)
    dx.tag = "dx"
    dw = torch.empty((weight.shape[0],), dtype=weight.dtype)
    dw.tag = "dw"
    return dx, dw, None, (dx if locals().get("has_residual") else None)


def rmsnorm(x, weight=None, **kwargs):
    raise AssertionError("the autograd function rmsnorm is not what the adapter calls")


rmsnorm_fwd = _recorded("fwd", rmsnorm_fwd)
rmsnorm_bwd = _recorded("bwd", rmsnorm_bwd)
'''

# As quack/__init__.py of 0.6.5 does, the package binds the attribute `rmsnorm` to the function.
INIT_PY = '__version__ = "0.6.5+fake"\nfrom quack.rmsnorm import rmsnorm  # noqa: F401\n'

TMP = tempfile.mkdtemp(prefix="quack-fake-")


def make_package(tag, fwd=FWD_PARAMS, bwd=BWD_PARAMS):
    root = os.path.join(TMP, tag)
    os.makedirs(os.path.join(root, "quack"))
    with open(os.path.join(root, "quack", "__init__.py"), "w") as f:
        f.write(INIT_PY)
    with open(os.path.join(root, "quack", "rmsnorm.py"), "w") as f:
        f.write(RMSNORM_PY % {"fwd": fwd, "bwd": bwd})
    return root


class BlockQuack:
    """A finder that says no quack exists, whatever is installed here."""

    def find_spec(self, name, path=None, target=None):
        if name == "quack" or name.startswith("quack."):
            raise ModuleNotFoundError(f"No module named '{name}'", name=name)
        return None


def clear():
    for name in list(sys.modules):
        if name == "quack" or name.startswith("quack.") or name.startswith("quack_adapter"):
            del sys.modules[name]


def load(package_root=None, name="quack_adapter", via_bridge=False, block=False, env=None):
    """The adapter module, loaded fresh with the stand-in package at package_root (None: no quack)."""
    clear()
    old_path, old_meta, old_env = list(sys.path), list(sys.meta_path), dict(os.environ)
    if package_root:
        sys.path.insert(0, package_root)
    if block:
        sys.meta_path.insert(0, BlockQuack())
    os.environ.update(env or {})
    try:
        if via_bridge:
            library, kernels = bridge.load_target(ADAPTER)
            return library, kernels, sys.modules
        spec = importlib.util.spec_from_file_location(name, ADAPTER)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path[:], sys.meta_path[:] = old_path, old_meta
        os.environ.clear()
        os.environ.update(old_env)


def expected_version():
    try:
        from importlib.metadata import version
        return version("quack-kernels")   # a real quack-kernels installed here: the adapter reports it
    except Exception:
        return "0.6.5+fake"


def main():
    global QR
    # --- QuACK missing, torch missing: KERNELS empty, with the reason --------------------------------
    mod = load(block=True)
    check(mod.KERNELS == [] and mod.UNAVAILABLE is not None
          and mod.UNAVAILABLE.startswith("quack adapter: cannot import QuACK's RMSNorm (ModuleNotFoundError")
          and "quack" in mod.UNAVAILABLE.split("(", 1)[1],
          f"no quack: KERNELS empty, UNAVAILABLE says why ({mod.UNAVAILABLE})")
    e = raises(lambda: load(block=True, via_bridge=True), bridge.CannotRun)
    check(e is not None and "KERNELS is empty" in str(e) and "cannot import QuACK's RMSNorm" in str(e),
          f"no quack: the bridge cannot run the adapter and says why ({e})")

    PKG = make_package("full")
    sys.modules["torch"] = None   # `import torch` raises ImportError
    try:
        mod = load(PKG)
    finally:
        sys.modules["torch"] = TORCH
    check(mod.KERNELS == [] and mod.UNAVAILABLE is not None and "torch" in mod.UNAVAILABLE,
          f"no torch: KERNELS empty, UNAVAILABLE names torch ({mod.UNAVAILABLE})")

    # --- quack-kernels 0.6.5, loaded as `python -m rmsnorm_cert certify adapters/quack.py` does ------
    try:
        library, kernels, modules = load(PKG, via_bridge=True)
    except Exception as e:  # noqa: BLE001 - reported as a failure, the other checks go on
        library, kernels = f"raised {type(e).__name__}: {e}", []
    pkg = sys.modules.get("quack")
    check(library == "quack" and [k.name for k in kernels] == ["rmsnorm", "rmsnorm_gemma"],
          f"through the bridge: plugin.quack.rmsnorm and plugin.quack.rmsnorm_gemma "
          f"({library}, {[k.name for k in kernels]})")
    check(pkg is not None and getattr(pkg, "__version__", None) == "0.6.5+fake" and not hasattr(pkg, "KERNELS"),
          "loaded under the name 'quack' (its basename), the adapter leaves that name to QuACK's package")

    mod = load(PKG)
    QR = sys.modules["quack.rmsnorm"]
    check(mod.UNAVAILABLE is None and [k.name for k in mod.KERNELS] == ["rmsnorm", "rmsnorm_gemma"]
          and mod.LIBRARY == "quack",
          f"with QuACK: two kernels, no UNAVAILABLE ({mod.UNAVAILABLE})")
    check(mod.VERSION == expected_version(), f"the version is quack-kernels' ({mod.VERSION})")
    std, gem = mod.KERNELS
    for k, conv in ((std, "standard"), (gem, "gemma")):
        check(tuple(k.conventions) == (conv,) and tuple(k.dtypes) == ("f32", "f16", "bf16") and k.array == "torch"
              and k.device == "cuda" and k.min_dim == 1 and k.max_dim == 65536 and k.alignment == 16
              and k.same_type_weights is False and k.dg_weight_type is True and k.rstd is True
              and not k.packed_rows and k.quant_modes == () and k.forward_quant is None and k.add_forward_quant is None,
              f"{k.name}: claims {conv}, f32/f16/bf16, 1 <= D <= 65536, 16-byte rows, any weight type, dg in the "
              "weight's type, rstd, no FP8")
        check(k.ops() == ["forward", "add_forward", "backward", "add_backward"], f"{k.name}: its four ops ({k.ops()})")
        check(k.row_shape is mod.row_shape and k.dg_shape is mod.dg_shape and mod.VERSION in k.description
              and "odd" in k.description, f"{k.name}: its shapes and a description with the version")

    table = bridge._Table("quack", mod.KERNELS)
    e0 = table.arr[0]
    want_ops = sum(1 << bridge.OPS.index(op) for op in ("forward", "add_forward", "backward", "add_backward"))
    check(e0.ops == want_ops | bridge.OPS_DG_WEIGHT_TYPE and e0.alignment == 16 and e0.min_dim == 1
          and e0.max_dim == 65536
          and e0.conventions == 1 << bridge.CONVENTIONS["standard"] and e0.dtypes == 0x7 and e0.memory == 1
          and table.arr[1].conventions == 1 << bridge.CONVENTIONS["gemma"],
          "the bridge's C table takes them: ops, dg in the weight's type, alignment, range, conventions, device memory")
    kk, dd = ctypes.c_int64(0), ctypes.c_int32(0)
    rc_ = e0.row_shape(4096, ctypes.pointer(kk), ctypes.pointer(dd))
    check(rc_ == 0 and (kk.value, dd.value) == mod.row_shape(4096),
          f"row_shape through the table ({kk.value}, {dd.value})")
    rc_ = e0.dg_shape(4096, ctypes.pointer(kk), ctypes.pointer(dd))
    check(rc_ == 0 and (kk.value, dd.value) == mod.dg_shape(4096),
          f"dg_shape through the table ({kk.value}, {dd.value})")


    def last_call():
        return QR.CALLS[-1] if QR.CALLS else None


    # forward: rmsnorm_fwd(x, w, eps=eps, store_rstd=True) -> (out, rstd); padded rows go as they are.
    x = FakeTensor((3, 10), BF16, strides=(24, 1), tag="x")
    w = FakeTensor((10,), F32, tag="w")
    QR.CALLS.clear()
    y, r = std.forward(x, w, 1e-5)
    name, args, kwargs, res = last_call()
    check(len(QR.CALLS) == 1 and name == "fwd" and args[0] is x and args[1] is w and len(args) == 2
          and kwargs == {"eps": 1e-5, "store_rstd": True},
          f"forward: rmsnorm_fwd(x, w, eps=eps, store_rstd=True), strided rows unchanged ({args}, {kwargs})")
    check(y is res[0] and r is res[2], "forward: (y, rstd) are rmsnorm_fwd's results 0 and 2")
    std.forward(x, w, 0)
    check(type(last_call()[2]["eps"]) is float, "forward: eps goes as a Python float")
    gem.forward(x, w, 1e-5)
    check(last_call()[2] == {"eps": 1e-5, "store_rstd": True, "weight_offset": 1.0}, "gemma forward: weight_offset=1.0")

    # add_forward(o, h, w, eps): rmsnorm_fwd(o, w, residual=h, eps=eps, store_rstd=True) -> (y, h', rstd)
    o = FakeTensor((3, 10), BF16, tag="o")
    h = FakeTensor((3, 10), BF16, strides=(16, 1), tag="h")
    y, hn, r = std.add_forward(o, h, w, 2e-6)
    name, args, kwargs, res = last_call()
    check(name == "fwd" and args[0] is o and args[1] is w and len(args) == 2
          and kwargs == {"residual": h, "eps": 2e-6, "store_rstd": True},
          f"add_forward: rmsnorm_fwd(o, w, residual=h, eps=eps, store_rstd=True) ({kwargs})")
    check(y is res[0] and hn is res[1] and r is res[2] and hn.tag == "residual_out",
          "add_forward: (y, new residual, rstd) are rmsnorm_fwd's (out, residual_out, rstd)")
    gem.add_forward(o, h, w, 2e-6)
    check(last_call()[2] == {"residual": h, "eps": 2e-6, "store_rstd": True, "weight_offset": 1.0},
          "gemma add_forward: weight_offset=1.0")

    # backward(dy, x, w, rstd, eps): rmsnorm_bwd(x, w, dy, rstd) -> (dx, dw)
    dy = FakeTensor((3, 10), BF16, strides=(32, 1), tag="dy")
    rstd = FakeTensor((3,), F32, tag="rstd_in")
    dx, dw = std.backward(dy, x, w, rstd, 1e-5)
    name, args, kwargs, res = last_call()
    check(name == "bwd" and len(args) == 4 and args[0] is x and args[1] is w and args[2] is dy and args[3] is rstd
          and kwargs == {}, f"backward: rmsnorm_bwd(x, w, dy, rstd), the given rstd ({args}, {kwargs})")
    check(dx is res[0] and dw is res[1] and dw.dtype is F32, "backward: (dx, dw) are rmsnorm_bwd's results 0 and 1")
    gem.backward(dy, x, w, rstd, 1e-5)
    check(last_call()[2] == {"weight_offset": 1.0}, "gemma backward: weight_offset=1.0")

    # add_backward(dy, x, w, rstd, eps, dres): rmsnorm_bwd(x, w, dy, rstd, dresidual_out=dres, has_residual=True)
    dres = FakeTensor((3, 10), BF16, tag="dres")
    dx, dw = std.add_backward(dy, x, w, rstd, 1e-5, dres)
    name, args, kwargs, res = last_call()
    check(name == "bwd" and len(args) == 4 and args[0] is x and args[2] is dy and args[3] is rstd
          and kwargs == {"dresidual_out": dres, "has_residual": True},
          f"add_backward: rmsnorm_bwd(x, w, dy, rstd, dresidual_out=dres, has_residual=True) ({kwargs})")
    check(dx is res[0] and dw is res[1], "add_backward: (dx, dw) are rmsnorm_bwd's results 0 and 1 (dx holds dres)")
    gem.add_backward(dy, x, w, rstd, 1e-5, dres)
    check(last_call()[2] == {"dresidual_out": dres, "has_residual": True, "weight_offset": 1.0},
          "gemma add_backward: weight_offset=1.0")

    # Layout: a view with stride(1) != 1 or a strided weight is copied; other ranks are refused.
    xc = FakeTensor((3, 10), F32, strides=(20, 2), tag="xc")
    wc = FakeTensor((10,), F32, strides=(2,), tag="wc")
    std.forward(xc, wc, 1e-5)
    args = last_call()[1]
    check(args[0] is xc.made_contiguous and args[1] is wc.made_contiguous, "a column-strided row or weight is copied")
    n_calls = len(QR.CALLS)
    e = raises(lambda: std.forward(FakeTensor((2, 3, 4), F32), FakeTensor((4,), F32), 1e-5), ValueError)
    check(e is not None and "2-D" in str(e) and len(QR.CALLS) == n_calls, "a 3-D x is refused before QuACK is called")

    # Odd widths: 16-bit rows declined without a call; fp32 rows, R = 0 and even widths go to QuACK.
    for dt in (BF16, F16):
        xo = FakeTensor((2, 9), dt, strides=(16, 1), tag="xo")
        wo = FakeTensor((9,), F32)
        for op, call in (("forward", lambda: std.forward(xo, wo, 1e-5)),
                         ("add_forward", lambda: std.add_forward(xo, FakeTensor((2, 9), dt), wo, 1e-5)),
                         ("backward", lambda: std.backward(FakeTensor((2, 9), dt), xo, wo, FakeTensor((2,), F32),
                                                           1e-5)),
                         ("add_backward", lambda: gem.add_backward(FakeTensor((2, 9), dt), xo, wo,
                                                                   FakeTensor((2,), F32), 1e-5,
                                                                   FakeTensor((2, 9), dt)))):
            n_calls = len(QR.CALLS)
            e = raises(call, rc.Declined)
            check(e is not None and "D = 9" in str(e) and "odd" in str(e) and len(QR.CALLS) == n_calls,
                  f"{dt!r} rows of odd D, {op}: declined, QuACK not called ({e})")
    n_calls = len(QR.CALLS)
    std.forward(FakeTensor((2, 9), F32), FakeTensor((9,), F32), 1e-5)
    std.backward(FakeTensor((2, 9), F32), FakeTensor((2, 9), F32), FakeTensor((9,), F32), FakeTensor((2,), F32), 1e-5)
    std.forward(FakeTensor((0, 9), BF16), FakeTensor((9,), BF16), 1e-5)
    std.forward(FakeTensor((2, 10), F16), FakeTensor((10,), F16), 1e-5)
    check(len(QR.CALLS) == n_calls + 4, "fp32 rows of odd D, 16-bit rows with R = 0 and even D: all go to QuACK")

    # Results of another shape fail the case with the reason.
    QR.OVERRIDE["fwd"] = lambda res: (res[0], res[1], None)
    e = raises(lambda: std.forward(x, w, 1e-5), RuntimeError)
    check(e is not None and "rstd" in str(e), f"a forward without rstd fails with the reason ({e})")
    QR.OVERRIDE["fwd"] = lambda res: (res[0], res[1], FakeTensor((4,), F32))
    e = raises(lambda: std.forward(x, w, 1e-5), RuntimeError)
    check(e is not None and "rstd of the 3 rows" in str(e), f"an rstd of another length fails ({e})")
    QR.OVERRIDE["fwd"] = lambda res: (res[0], res[2])
    e = raises(lambda: std.add_forward(o, h, w, 1e-5), RuntimeError)
    check(e is not None and "(out, residual_out, rstd)" in str(e), f"a forward of two results fails ({e})")
    del QR.OVERRIDE["fwd"]
    QR.OVERRIDE["bwd"] = lambda res: res[:2]
    e = raises(lambda: std.backward(dy, x, w, rstd, 1e-5), RuntimeError)
    check(e is not None and "(dx, dw, db, dresidual)" in str(e), f"a backward of two results fails ({e})")
    del QR.OVERRIDE["bwd"]

    # --- accumulation shapes ----------------------------------------------------------------------
    # Hopper (capability 9), derived by hand from rmsnorm_config.py's ladders:
    # D = 1: 8 threads a row, one element each: k 1, a warp_reduce over 8 lanes: depth 3.
    # D = 1000: forward 32 threads a row (D <= 3072), vectors of 8 (or 4): 32 elements a thread, one warp:
    #   depth 5; backward 128 threads a row (D <= 4096): 8 a thread, depth 5 + 5 (block_reduce of 4 warps).
    # D = 4096: forward 64 threads a row: 512 vectors of 8 over 64 threads, k 64, depth 5 + 5; backward
    #   128 threads: k 32, depth 10.
    # D = 65536: forward fp32 rows on a cluster of 2, 256 threads a row: 16384 vectors of 4 over 512
    #   threads, k 128, depth 5 + (ceil(8·2/32) + 5) = 11; backward on a cluster of 8: k 32, depth
    #   5 + (ceil(8·8/32) + 5) = 12.
    for n, want in ((1, (1, 3)), (1000, (32, 10)), (4096, (64, 10)), (65536, (128, 12))):
        got = mod._row_shape(n, (9,))
        check(got == want, f"row shape on Hopper, D = {n}: {want} ({got})")
    check(mod._row_shape(65536, (8,))[0] == 256, "row shape below Hopper, D = 65536: no clusters, k 256")
    widths = list(range(1, 4200)) + list(range(4200, 70000, 37))
    bad = [(n, a, mod._row_shape(n, (a,))) for a in mod.ARCHES for n in widths
           if not (1 <= mod._row_shape(n, (a,))[0] <= n and 0 <= mod._row_shape(n, (a,))[1] <= 64)]
    check(not bad, f"row shapes valid (1 <= k <= D, 0 <= d <= 64) on every capability ({bad[:3]})")
    # dg on Hopper with 132 SMs. R = 4096: at D <= 1024 the backward runs 1056 CTAs of one row each:
    # 4 rows a CTA one after another, then 1056 partial rows summed by torch: 4 + 1056 = 1060, the
    # longest over all widths (D <= 512: 2 + (1 + 1056) = 1059; D <= 16384: 63 + 66 = 129), past the depth
    # limit of 64: one chain of 1060. R = 100000: D <= 64 runs 2112 CTAs of 16-row tiles:
    # 3 + (15 + 2112) = 2130.
    for R, want in ((0, (1, 0)), (1, (1, 0)), (100, (100, 0)), (4096, (1060, 0)), (100000, (2130, 0))):
        got = mod._dg_shape(R, 132, (9,))
        check(got == want, f"dg shape on Hopper with 132 SMs, R = {R}: {want} ({got})")
    bad = [(R, a) for a in mod.ARCHES for R in list(range(1, 3000)) + [10**5, 10**6, 2**31]
           if not (1 <= mod._dg_shape(R, 132, (a,))[0] <= R and 0 <= mod._dg_shape(R, 132, (a,))[1] <= 64)]
    check(not bad, f"dg shapes valid (1 <= k <= R, 0 <= d <= 64) on every capability ({bad[:3]})")
    check(mod.row_shape(4096) == mod._row_shape(4096, mod.ARCHES)
          and mod.dg_shape(4096) == mod._dg_shape(4096, 132, mod.ARCHES),
          "no CUDA device, no QUACK_ARCH: the shapes cover every capability, 132 SMs")
    os.environ["QUACK_ARCH"] = "sm_90"
    try:
        check(mod.row_shape(65536) == (128, 12) and mod.dg_shape(4096) == (1060, 0),
              "QUACK_ARCH=sm_90: Hopper's shapes")
    finally:
        del os.environ["QUACK_ARCH"]
    sys.modules["torch"] = fake_torch(cuda_capability=(9, 0), sm_count=66)
    mod_dev = load(PKG)
    try:
        check(mod_dev.row_shape(65536) == (128, 12) and mod_dev.dg_shape(5000) == mod_dev._dg_shape(5000, 66, (9,)),
              "a CUDA device: its capability and its SM count")
    finally:
        sys.modules["torch"] = TORCH

    # --- other signatures ---------------------------------------------------------------------------
    mod = load(make_package("old", fwd="x, weight=None, bias=None, residual=None, eps=1e-6"))
    check(mod.KERNELS == [] and mod.UNAVAILABLE is not None and "store_rstd" in mod.UNAVAILABLE
          and "0.6.5" in mod.UNAVAILABLE,
          f"a rmsnorm_fwd without store_rstd: unavailable, saying so ({mod.UNAVAILABLE})")
    mod = load(make_package("no_offset", fwd=FWD_PARAMS.replace(", weight_offset=0.0", ""),
                            bwd=BWD_PARAMS.replace(", weight_offset=0.0", "")))
    check([k.name for k in mod.KERNELS] == ["rmsnorm"], "no weight_offset: no gemma kernel")
    mod = load(make_package("no_residual", fwd=FWD_PARAMS.replace("residual=None, ", ""),
                            bwd=BWD_PARAMS.replace("has_residual=False, ", "")))
    check([k.ops() for k in mod.KERNELS] == [["forward", "backward"]] * 2, "no residual parameters: no fused add")
    mod = load(make_package("no_add_bwd", bwd=BWD_PARAMS.replace("has_residual=False, ", "")))
    check(mod.KERNELS[0].ops() == ["forward", "add_forward", "backward"], "no has_residual: no fused-add backward")

    # RMSNORM_CERT_QUACK_ODD=1: odd 16-bit widths go to QuACK, whose own error would fail the case.
    mod = load(PKG, env={"RMSNORM_CERT_QUACK_ODD": "1"})
    QR = sys.modules["quack.rmsnorm"]
    mod.KERNELS[0].forward(FakeTensor((2, 9), BF16), FakeTensor((9,), BF16), 1e-5)
    check(len(QR.CALLS) == 1 and QR.CALLS[0][0] == "fwd", "RMSNORM_CERT_QUACK_ODD=1: an odd bf16 width reaches QuACK")


try:
    main()
except Exception:  # noqa: BLE001
    traceback.print_exc()
    check(False, "the test ended on an unexpected exception (above)")
shutil.rmtree(TMP, ignore_errors=True)
print(f"quack adapter: {'PASS' if not failures else 'FAIL'}")
sys.exit(1 if failures else 0)
