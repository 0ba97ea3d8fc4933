"""rmsnorm-certified from Python.

- Certify kernels written in Python (PyTorch, Triton, NumPy): `Kernel`, `certify`, and
  `python -m rmsnorm_cert certify TARGET` (bridge.py, through librmsnorm_cert.so; no compiler).
- The judge API: the oracle and the judge on numpy arrays (the compiled module rmsnorm_cert_core,
  built by this project's CMake when pybind11 is found, into <build>/python; not by pip install).
- The HTML report of a certificate directory (`python -m rmsnorm_cert report DIR`).

docs/python.md and docs/certifying-your-kernel.md describe them.

    import numpy as np, rmsnorm_cert as rc
    c = rc.case("forward", x, g, eps=1e-5, x_type="bf16")    # inputs rounded once to bf16
    e = rc.exact(c)                                          # e["y"]["exact"|"rounded"|"lo"|"hi"]
    v = rc.judge(c, y=my_y)                                  # v["passed"], v["worst"], v["repro"]
"""
from .bridge import CannotRun, Declined, Kernel, certify  # noqa: F401  (ctypes only: always importable)

try:
    import rmsnorm_cert_core as _core
except ImportError as _e:  # the report needs no compiled module
    _core = None
    _core_error = str(_e)


def _need_core():
    if _core is None:
        raise ImportError("the judge API needs rmsnorm_cert_core, which is not built or not on sys.path: build the "
                          "project with CMake with pybind11 and Python's headers installed and put <build>/python "
                          "on PYTHONPATH (pip install ./python does not build it; docs/python.md): "
                          f"{_core_error}")
    return _core


def _values(v):
    """Host values of an array: numpy as it is; a torch tensor (CUDA or CPU, any float dtype,
    bf16 and FP8 included) widened exactly to float64 on the host; any other DLPack producer
    through numpy.from_dlpack."""
    if v is None or isinstance(v, (list, tuple, float, int)):
        return v
    if type(v).__module__.startswith("torch"):
        return v.detach().to("cpu").double().numpy()
    if hasattr(v, "__dlpack__") and type(v).__module__ != "numpy":
        import numpy as np
        return np.from_dlpack(v)
    return v


def case(op, x, g=None, *, eps=1e-6, x_type="f32", g_type="", y_type="", convention="standard", quant="none",
         static_scale=1.0, o=None, dy=None, dresidual=None, rstd=None, dg_type="f32"):
    """A case of `op` ("forward", "add_forward", "forward_quant", "add_forward_quant", "backward",
    "add_backward") on rows x ([rows, dim] or one row); every input is rounded once to its type.
    Inputs are numpy arrays, torch tensors (CUDA or CPU) or other DLPack producers."""
    x, g, o, dy, dresidual, rstd = map(_values, (x, g, o, dy, dresidual, rstd))
    return _need_core().make_case(op, x, g, eps, x_type, g_type, y_type, convention, quant, static_scale, o, dy,
                                  dresidual, rstd, dg_type)


def parse_case(text):
    """A case from a case file's text or a failure's one-line form."""
    return _need_core().parse_case(text)


def exact(c, row_shape=None, dg_shape=None):
    """Per output tensor: the exact values, their correct rounding and the accepted interval
    [lo, hi] of every element. row_shape / dg_shape: the kernel's (terms per thread, tree depth);
    none: every term in one chain, the loosest bound the contract allows."""
    return _need_core().exact(c, row_shape, dg_shape)


def judge(c, *, y=None, rstd=None, h=None, scale=None, dx=None, dg=None, row_shape=None, dg_shape=None, worst=5):
    """The verdict on a kernel's outputs (values of their types): passed, first_failure, the worst
    elements by err/bound, and repro, the case's one-line form."""
    y, rstd, h, scale, dx, dg = map(_values, (y, rstd, h, scale, dx, dg))
    return _need_core().judge(c, y, rstd, h, scale, dx, dg, row_shape, dg_shape, worst)


def round_to(values, dtype):
    """values rounded once (to nearest, ties to even) to "f32", "f16", "bf16", "e4m3" or "e5m2"."""
    return _need_core().round_to(_values(values), dtype)
