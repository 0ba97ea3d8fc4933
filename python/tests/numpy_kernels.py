"""Two NumPy RMSNorm kernels for the bridge's test (python/tests/test_certify.py): one right, one
with the lecture's bug of eps outside the root. Each computes in float64 and rounds once to the
output's type, which is what the judge asks of a kernel."""
import numpy as np

import rmsnorm_cert as rc

np.seterr(all="ignore")  # zero rows with eps = 0 and overflowing fp16 rows are cases the judge knows


def _forward(x, weight, eps, eps_outside):
    x64 = x.astype(np.float64)
    ms = np.mean(x64 * x64, axis=-1, keepdims=True)
    r = 1.0 / np.sqrt(ms) + eps if eps_outside else 1.0 / np.sqrt(ms + eps)
    y = x64 * r * weight.astype(np.float64)
    return y.astype(x.dtype), r[:, 0].astype(np.float32)


def forward(x, weight, eps):
    return _forward(x, weight, eps, eps_outside=False)


def forward_eps_outside(x, weight, eps):
    return _forward(x, weight, eps, eps_outside=True)


def backward(dy, x, weight, rstd, eps, dg_dtype="f32"):
    # dx = r (dy·g − x̂ · mean(dy·g·x̂)), x̂ = x r; dγ = Σ_rows dy · x̂, in the type the case asks.
    r = rstd.astype(np.float64)[:, None]
    xh = x.astype(np.float64) * r
    u = dy.astype(np.float64) * weight.astype(np.float64)
    dx = r * (u - xh * np.mean(u * xh, axis=-1, keepdims=True))
    dg = np.sum(dy.astype(np.float64) * xh, axis=0)
    return dx.astype(x.dtype), dg.astype(np.float32 if dg_dtype == "f32" else np.float16)


GOOD = rc.Kernel(name="numpy_fp64", forward=forward, backward=backward, array="numpy", dtypes=("f32", "f16"),
                 same_type_weights=True, max_dim=4096, description="float64 NumPy, rounded once")
EPS_OUTSIDE = rc.Kernel(name="eps_outside", forward=forward_eps_outside, array="numpy", dtypes=("f32",),
                        max_dim=4096, description="eps added outside the square root")


def forward_raises(x, weight, eps):
    if x.shape[1] % 2:
        raise RuntimeError("odd widths are not written yet")
    return forward(x, weight, eps)


RAISES = rc.Kernel(name="raises", forward=forward_raises, array="numpy", dtypes=("f32",), max_dim=4096,
                   description="raises on odd widths")


def forward_segfaults(x, weight, eps):
    if x.shape[1] % 2:
        import ctypes
        ctypes.string_at(0)  # reads address 0: the process dies of SIGSEGV
    return forward(x, weight, eps)


SEGFAULTS = rc.Kernel(name="segfaults", forward=forward_segfaults, array="numpy", dtypes=("f32",), max_dim=4096,
                      description="dies of a segmentation fault on odd widths")
