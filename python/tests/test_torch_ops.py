"""The PyTorch ops (rmsnorm_cert.torch) on a CUDA device: bitwise equal to a direct call of the
C entry points, within the contract of an fp64 evaluation, under torch.compile and CUDA graph
capture, deterministic in dγ, and training a small LLaMA-style stack whose loss falls and whose
run repeats bit for bit. Exits 77 (skipped) without torch or without a CUDA device.

    PYTHONPATH=python python3 python/tests/test_torch_ops.py
"""
import ctypes
import os
import sys

try:
    import torch
except ImportError:
    print("skipped: no torch")
    sys.exit(77)
if not torch.cuda.is_available():
    print("skipped: no CUDA device")
    sys.exit(77)
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import rmsnorm_cert.torch as rt  # noqa: E402
from rmsnorm_cert import bridge  # noqa: E402

failures = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what, flush=True)
    if not cond:
        failures.append(what)


def bits(t):
    return t.contiguous().view(torch.int16 if t.element_size() == 2 else torch.int32 if t.element_size() == 4 else torch.uint8)


def same(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and torch.equal(bits(a), bits(b))


def direct_forward(x, w, eps):
    """The C entry point called by hand on buffers of our own (no torch.library in between)."""
    x = x.contiguous()
    y = torch.empty_like(x)
    rstd = torch.empty(x.shape[0], dtype=torch.float32, device=x.device)
    rt._forward(x, None, y, w, eps, "standard", rstd=rstd)
    torch.cuda.synchronize()
    return y, rstd


def fp64_reference(x, w, eps):
    xd = x.double()
    return xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + eps) * w.double()


def over_bound(y, ref, dtype, D):
    """max |y - ref| / (half an ulp of the output type + the contract's loosest reduction bound
    (D/2 + 7)·2^-24·|ref|, docs/contract.md): <= 1 is within the contract."""
    mant, tiny = {torch.bfloat16: (7, -133), torch.float16: (10, -24), torch.float32: (23, -149)}[dtype]
    exp = torch.floor(torch.log2(ref.abs().clamp_min(2.0 ** -149)))
    spacing = torch.exp2(torch.clamp(exp - mant, min=tiny))
    bound = 0.5 * spacing + (D / 2 + 7) * 2.0 ** -24 * ref.abs()
    return ((y.double() - ref).abs() / bound).max().item()


torch.manual_seed(0)
dev = "cuda"
eps = 1e-6

# 1. Bitwise equal to the direct C call, for the shapes the dispatcher sends to different variants.
for dtype in (torch.bfloat16, torch.float16, torch.float32):
    for R, D in ((1, 7), (3, 1025), (64, 4096), (257, 8192), (8, 32768)):
        x = torch.randn(R, D, device=dev, dtype=dtype)
        w = (1 + 0.1 * torch.randn(D, device=dev)).to(dtype)
        y = rt.rms_norm(x, w, eps)
        yd, _ = direct_forward(x, w, eps)
        check(same(y, yd), f"rms_norm == direct C call, {dtype} R={R} D={D}")
        u = over_bound(y, fp64_reference(x, w, eps), dtype, D)
        check(u <= 1.0, f"rms_norm within the contract of fp64, {dtype} R={R} D={D} (max err/bound {u:.3f})")

# 2. Strided rows are taken as they are; a non-unit column stride is copied first.
x = torch.randn(32, 2048, device=dev, dtype=torch.bfloat16)
w = torch.randn(1024, device=dev, dtype=torch.bfloat16)
check(same(rt.rms_norm(x[:, :1024], w), rt.rms_norm(x[:, :1024].contiguous(), w)), "strided rows give the same bits")
check(same(rt.rms_norm(x[:, ::2], w), rt.rms_norm(x[:, ::2].contiguous(), w)), "a column stride of 2 gives the same bits")
x3 = torch.randn(4, 5, 1024, device=dev, dtype=torch.bfloat16)
check(same(rt.rms_norm(x3, w), rt.rms_norm(x3.reshape(20, 1024), w).reshape(4, 5, 1024)), "3-D input = its rows")
try:
    rt.rms_norm(torch.randn(4, 8, device=dev, dtype=torch.float64), torch.ones(8, device=dev, dtype=torch.float64))
    check(False, "float64 is refused with a clear error")
except TypeError as e:
    check("float64" in str(e), f"float64 is refused with a clear error ({e})")

# 3. Autograd through our backward; dγ deterministic; agreement with fp64 autograd.
x = torch.randn(512, 4096, device=dev, dtype=torch.bfloat16, requires_grad=True)
w = (1 + 0.1 * torch.randn(4096, device=dev)).to(torch.bfloat16).requires_grad_(True)
dy = torch.randn(512, 4096, device=dev, dtype=torch.bfloat16)
grads = []
for _ in range(2):
    x.grad = w.grad = None
    rt.rms_norm(x, w, eps).backward(dy)
    grads.append((x.grad.clone(), w.grad.clone()))
check(same(grads[0][0], grads[1][0]) and same(grads[0][1], grads[1][1]), "dx and dγ bitwise equal run to run")
xd = x.detach().double().requires_grad_(True)
wd = w.detach().double().requires_grad_(True)
fp64_reference(xd, wd, eps).backward(dy.double())
rel_dx = ((grads[0][0].double() - xd.grad).norm() / xd.grad.norm()).item()
rel_dg = ((grads[0][1].double() - wd.grad).norm() / wd.grad.norm()).item()
check(rel_dx < 1e-2 and rel_dg < 1e-2, f"backward agrees with fp64 autograd (rel dx {rel_dx:.2e}, dγ {rel_dg:.2e})")

# 4. The fused add: in place and functional forms agree, the residual is RN(residual + x).
x = torch.randn(64, 4096, device=dev, dtype=torch.bfloat16)
res = torch.randn(64, 4096, device=dev, dtype=torch.bfloat16)
w = torch.randn(4096, device=dev, dtype=torch.bfloat16)
y_f, h_f = rt.add_rms_norm(x, res, w, eps)
res2 = res.clone()
y_i = rt.fused_add_rms_norm(x, res2, w, eps)
check(same(y_f, y_i) and same(h_f, res2), "fused_add_rms_norm (in place) == add_rms_norm")
check(same(h_f, (res.float() + x.float()).to(torch.bfloat16)), "the new residual is RN(residual + x)")
check(same(y_f, rt.rms_norm(h_f, w, eps)), "fused add == add, then rms_norm")

# 5. FP8.
q, s = rt.rms_norm_fp8(x, w, eps, "token")
check(q.dtype == torch.float8_e4m3fn and s.shape == (64,), "rms_norm_fp8 per token: e4m3 and one scale per row")
yq = rt.rms_norm(x, w, eps).float()
# e4m3: half an ulp is 2^-4 relative for normals, 2^-10·s absolute in the subnormal range; y itself
# was rounded to bf16 (2^-8 relative) where q was taken from fp32.
err = ((q.float() * s[:, None] - yq).abs() / ((2.0 ** -4 + 2.0 ** -8) * yq.abs() + 2.0 ** -10 * s[:, None])).max().item()
check(err <= 1.0, f"dequantized FP8 within half an e4m3 ulp of y (max err/bound {err:.3g})")
qb, sb = rt.rms_norm_fp8(x, w, eps, "block")
check(sb.shape == (64, 32), "rms_norm_fp8 per block: [R, D/128] scales")
# A static scale of the largest per-token scale: the rows that set it quantize as per token.
given = s.max().reshape(1).clone()
qs, ss = rt.rms_norm_fp8(x, w, eps, "static", scale=given)
top = int(s.argmax())
check(same(ss, given) and ss.data_ptr() != given.data_ptr() and same(qs[top], q[top]),
      "rms_norm_fp8 static: the given scale returned as a tensor of its own, the max row as per token")
# The fused add + FP8: the residual updated in place as by fused_add_rms_norm, q and scales those of
# rms_norm_fp8 over it, in every mode.
for mode, sc in (("token", None), ("block", None), ("static", given)):
    res3 = res.clone()
    qa, sa = rt.fused_add_rms_norm_fp8(x, res3, w, eps, mode, scale=sc)
    qr, sr = rt.rms_norm_fp8(h_f, w, eps, mode, scale=sc)
    check(same(res3, h_f) and same(qa, qr) and same(sa, sr),
          f"fused_add_rms_norm_fp8 {mode} == fused add, then rms_norm_fp8")

# 6. torch.compile of a model using the ops (no graph break), equal to eager.
model = torch.nn.Sequential(torch.nn.Linear(1024, 1024), rt.RMSNorm(1024), torch.nn.Linear(1024, 256)).to(dev)
xin = torch.randn(16, 1024, device=dev)
compiled = torch.compile(model, fullgraph=True)
check(same(compiled(xin), model(xin)), "torch.compile(fullgraph=True) of a model with RMSNorm == eager")

# 7. CUDA graph capture and replay.
static_x = torch.randn(128, 4096, device=dev, dtype=torch.bfloat16)
gw = torch.randn(4096, device=dev, dtype=torch.bfloat16)
rt.rms_norm(static_x, gw)  # warm up outside the capture
graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):
    static_y = rt.rms_norm(static_x, gw, eps)
new_x = torch.randn(128, 4096, device=dev, dtype=torch.bfloat16)
static_x.copy_(new_x)
graph.replay()
torch.cuda.synchronize()
check(same(static_y, rt.rms_norm(new_x, gw, eps)), "CUDA graph replay == eager on new inputs")

# 8. CPU tensors run the host reference, the same contract.
xc = torch.randn(5, 300, dtype=torch.bfloat16)
wc = torch.randn(300, dtype=torch.bfloat16)
uc = over_bound(rt.rms_norm(xc, wc, eps), fp64_reference(xc, wc, eps), torch.bfloat16, 300)
check(uc <= 1.0, f"CPU rms_norm (host reference) within the contract of fp64 (max err/bound {uc:.3f})")


# 9. A small LLaMA-style stack: embedding, N layers of (rms_norm, linear, fused add), a head.
class Stack(torch.nn.Module):
    def __init__(self, vocab=512, dim=256, layers=4):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        self.norms = torch.nn.ModuleList(rt.RMSNorm(dim) for _ in range(layers))
        self.mlps = torch.nn.ModuleList(torch.nn.Linear(dim, dim) for _ in range(layers))
        self.add_w = torch.nn.ParameterList(torch.nn.Parameter(torch.ones(dim)) for _ in range(layers))
        self.final = rt.RMSNorm(dim)
        self.head = torch.nn.Linear(dim, vocab)

    def forward(self, tokens):
        h = self.embed(tokens)
        for norm, mlp, w in zip(self.norms, self.mlps, self.add_w):
            out = mlp(norm(h))
            _, h = rt.add_rms_norm(out, h, w)
        return self.head(self.final(h))


def train(steps=8):
    torch.manual_seed(1)
    torch.use_deterministic_algorithms(True)
    net = Stack().to(dev).to(torch.bfloat16)
    opt = torch.optim.SGD(net.parameters(), lr=0.5)
    tokens = torch.randint(0, 512, (32, 64), device=dev)
    losses = []
    for _ in range(steps):
        logits = net(tokens[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 512).float(), tokens[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    torch.use_deterministic_algorithms(False)
    return losses


a, b = train(), train()
print("losses:", " ".join(f"{v:.4f}" for v in a))
check(a[-1] < a[0], f"the loss falls ({a[0]:.4f} -> {a[-1]:.4f})")
check(a == b, "two training runs give bitwise equal losses")

check(isinstance(rt.certificate(), (dict, type(None))), "certificate() returns the summary or None")
print(f"torch ops: {'PASS' if not failures else 'FAIL'} ({len(failures)} failed)")
sys.exit(1 if failures else 0)
