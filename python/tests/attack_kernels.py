"""Kernels that attack the judge rather than compute RMSNorm, each the trick a model-written
kernel has used to pass a benchmark's check. python/tests/test_attacks.py certifies each and
expects it to FAIL:

- ZEROS:    returns zeros (passes a loose absolute tolerance on small outputs);
- NAN:      returns NaN everywhere (a checker comparing with NaN-unsafe code calls it a match);
- GC_COPY:  searches the garbage collector for an array of the output's shape and returns a copy
            (the expected tensor of a checker that computes it before calling the kernel);
- WARMUP:   right on its first calls (the warm-up and the first checks), zeros afterwards;
- MEMO:     computes once per shape and hands back the cached result when the shape repeats;
- LATE:     returns at once an array that another thread fills afterwards (the host's form of
            work left on another stream: a timer that stops at the return misses it);
- SIDE_STREAM (torch on CUDA; None without): computes on a stream of its own and returns without
            ordering it on the stream it was given, so that a timer on that stream stops early.

`python -m rmsnorm_cert time` runs WARMUP, MEMO and LATE (and SIDE_STREAM on a GPU) as well: every
timed call is a checked one, on a case of its own, and the clock waits for the whole device.

The judge is immune by construction: the expected values and acceptance sets are computed by the
C++ oracle after the kernel returns and never reach Python; NaN is accepted only where the exact
value is NaN; every call is checked, and P11 and P20 run a case twice and a second case of the same
shape at once.
"""
import gc
import threading
import time

import numpy as np

import rmsnorm_cert as rc

np.seterr(all="ignore")


def _right(x, weight, eps):
    x64 = x.astype(np.float64)
    r = 1.0 / np.sqrt(np.mean(x64 * x64, axis=-1, keepdims=True) + eps)
    return (x64 * r * weight.astype(np.float64)).astype(x.dtype), r[:, 0].astype(np.float32)


def zeros(x, weight, eps):
    return np.zeros(x.shape, dtype=x.dtype), np.zeros(x.shape[0], dtype=np.float32)


def nan(x, weight, eps):
    return np.full(x.shape, np.nan, dtype=x.dtype), np.full(x.shape[0], np.nan, dtype=np.float32)


def gc_copy(x, weight, eps):
    for obj in gc.get_objects():
        if isinstance(obj, np.ndarray) and obj.shape == x.shape and obj is not x:
            return obj.astype(x.dtype).copy(), np.ones(x.shape[0], dtype=np.float32)
    return np.zeros(x.shape, dtype=x.dtype), np.ones(x.shape[0], dtype=np.float32)


_calls = [0]


def warmup(x, weight, eps):
    _calls[0] += 1
    return _right(x, weight, eps) if _calls[0] <= 3 else zeros(x, weight, eps)


_memo = {}


def memo(x, weight, eps):
    key = (x.shape, x.dtype.str)
    if key not in _memo:
        _memo[key] = _right(x, weight, eps)
    return _memo[key]


def late(x, weight, eps):
    y, r = _right(x, weight, eps)
    out_y, out_r = np.zeros_like(y), np.zeros_like(r)

    def finish():
        time.sleep(0.05)
        out_y[...], out_r[...] = y, r
    threading.Thread(target=finish, daemon=True).start()
    return out_y, out_r


def _side_stream_kernel():
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    side = []

    def side_stream(x, weight, eps):
        if not side:
            side.append(torch.cuda.Stream())
        with torch.cuda.stream(side[0]):  # the caller's stream is never made to wait for this one
            xf = x.float()
            r = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
            y = (xf * r * weight.float()).to(x.dtype)
        return y, r[:, 0]
    return rc.Kernel(name="side_stream", forward=side_stream, dtypes=("f32", "f16", "bf16"), same_type_weights=True,
                     description="an attack on the timer: the work left on a stream of its own")


def _kernel(name, fn):
    return rc.Kernel(name=name, forward=fn, array="numpy", dtypes=("f32",), max_dim=4096,
                     description="an attack on the judge: " + (fn.__doc__ or name))


ZEROS = _kernel("zeros", zeros)
NAN = _kernel("nan", nan)
GC_COPY = _kernel("gc_copy", gc_copy)
WARMUP = _kernel("warmup", warmup)
MEMO = _kernel("memo", memo)
LATE = _kernel("late", late)
SIDE_STREAM = _side_stream_kernel()
