"""The Python bridge on numpy kernels: a correct forward and backward pass the judge, the
lecture's bugs (eps outside the root, sum instead of mean) fail it with a repro line, and the
accepted intervals hold the correctly rounded values."""
import sys

import numpy as np

import rmsnorm_cert as rc

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def forward_fp64(x, g, eps, eps_outside=False):
    ms = np.mean(x.astype(np.float64) ** 2, axis=-1, keepdims=True)
    r = 1.0 / np.sqrt(ms) + eps if eps_outside else 1.0 / np.sqrt(ms + eps)
    return x * r * g, r[..., 0]


def backward_fp64(x, g, dy, rstd, sum_not_mean=False):
    r = rstd[:, None].astype(np.float64)
    u = dy * g
    a = np.sum(u * x, axis=-1, keepdims=True)
    if not sum_not_mean:
        a = a / x.shape[-1]
    return r * u - r ** 3 * x * a, np.sum(dy * x * r, axis=0)


rng = np.random.default_rng(7)
rows, dim, eps = 4, 1000, 1e-5
x = rng.standard_normal((rows, dim))
g = rng.uniform(0.5, 1.5, dim)

# A correct forward: exact in fp64, rounded once to bf16.
c = rc.case("forward", x, g, eps=eps, x_type="bf16")
xb, gb = rc.round_to(x, "bf16"), rc.round_to(g, "bf16")  # the values the case holds
y, r = forward_fp64(xb, gb, eps)
v = rc.judge(c, y=rc.round_to(y, "bf16"), rstd=rc.round_to(r, "f32"))
check(v["passed"], f"correct bf16 forward: {v['first_failure']}{v['error']}")
check(v["correctly_rounded"] == v["elements"] == rows * dim + rows, f"every element correctly rounded: {v['correctly_rounded']} of {v['elements']}")

# exact(): the rounded value lies in its interval, and the interval holds the exact value's rounding.
e = rc.exact(c)["y"]
check(np.all(e["lo"] <= e["rounded"]) and np.all(e["rounded"] <= e["hi"]), "rounded values inside [lo, hi]")
check(np.array_equal(e["rounded"], rc.round_to(e["exact"], "bf16")), "rounded = RN_bf16(exact)")

# A float32 kernel (numpy's own float32 arithmetic) on f32 rows: within the contract's bound.
c32 = rc.case("forward", x, g, eps=eps, x_type="f32")
x32, g32 = x.astype(np.float32), g.astype(np.float32)
ms32 = np.mean(x32 * x32, axis=-1, keepdims=True, dtype=np.float32)
y32 = x32 * (np.float32(1) / np.sqrt(ms32 + np.float32(eps))) * g32
v = rc.judge(c32, y=y32.astype(np.float64))
check(v["passed"], f"float32 forward on f32 rows: {v['first_failure']}")

# The lecture's bug: eps outside the root. Caught, with the worst elements and a repro line.
y_bad, _ = forward_fp64(xb, gb, 1.0, eps_outside=True)
cbad = rc.case("forward", x, g, eps=1.0, x_type="bf16")
v = rc.judge(cbad, y=rc.round_to(y_bad, "bf16"))
check(not v["passed"], "eps outside the root must fail")
check(v["worst"] and v["worst"][0]["err_over_bound"] > 1, "the worst element lies outside its interval")
check(v["repro"].startswith("op=forward;variant=python;"), f"repro line: {v['repro'][:60]}")
again = rc.parse_case(v["repro"])
check(again.rows == rows and again.dim == dim, "the repro line parses back to the case")

# Backward: correct passes; sum instead of mean fails.
dy = rng.standard_normal((rows, dim))
cb = rc.case("backward", x, g, eps=eps, x_type="f32", dy=dy)
x32d, g32d, dy32 = (rc.round_to(a, "f32") for a in (x, g, dy))
rstd = 1.0 / np.sqrt(np.mean(x32d ** 2, axis=-1) + np.float32(eps))
rstd = rc.round_to(rstd, "f32")  # the rstd the judge hands a backward: RN32 of the exact r
cb = rc.case("backward", x, g, eps=eps, x_type="f32", dy=dy, rstd=rstd)
dx, dg = backward_fp64(x32d, g32d, dy32, rstd)
v = rc.judge(cb, dx=rc.round_to(dx, "f32"), dg=rc.round_to(dg, "f32"))
check(v["passed"], f"correct backward: {v['first_failure']}{v['error']}")
dx_bad, _ = backward_fp64(x32d, g32d, dy32, rstd, sum_not_mean=True)
v = rc.judge(cb, dx=rc.round_to(dx_bad, "f32"), dg=rc.round_to(dg, "f32"))
check(not v["passed"] and "dx[" in v["first_failure"], "sum instead of mean must fail on dx")

# Outputs that are not values of their type are refused, with the reason.
try:
    rc.judge(c, y=y)  # fp64 values, not bf16
    check(False, "unrounded outputs must be refused")
except ValueError as err:
    check("not a bf16 value" in str(err), f"refusal names the type: {err}")

print(f"python bridge: {9 - len(failures)} of 9 groups of checks passed" if not failures else f"{len(failures)} failures")
sys.exit(1 if failures else 0)
