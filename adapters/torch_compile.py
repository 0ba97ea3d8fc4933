"""torch.compile of the eager RMSNorm formula (fp32 inside, one rounding at the end), forward
and its compiled autograd backward, certified through the Python bridge:

    python -m rmsnorm_cert certify adapters/torch_compile.py

The compiled function is built for dynamic shapes and the adapter hands it contiguous rows
(.contiguous()): a strided layout would make Dynamo guard on strides and recompile per case, and
past its cache limit it would run eager code, which is not what is being certified. The cache
limit is raised and every recompilation past it is an error, so each case runs compiled code."""
try:
    import torch
    import rmsnorm_cert as rc
except ImportError as e:
    KERNELS, UNAVAILABLE = [], f"needs torch: {e}"
else:
    LIBRARY = "torch_compile"
    DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
    # Names differ across torch versions (cache_size_limit became recompile_limit).
    for _name, _value in (("recompile_limit", 64), ("cache_size_limit", 64), ("accumulated_recompile_limit", 512),
                          ("accumulated_cache_size_limit", 512), ("fail_on_recompile_limit_hit", True),
                          ("fail_on_cache_limit_hit", True)):  # never fall back to eager unseen
        if hasattr(torch._dynamo.config, _name):
            setattr(torch._dynamo.config, _name, _value)

    def _formula(x, weight, eps):
        xf = x.float()
        r = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
        return (xf * r * weight.float()).to(x.dtype), r.squeeze(-1)

    _compiled = torch.compile(_formula, dynamic=True)

    def forward(x, weight, eps):
        return _compiled(x.contiguous(), weight, eps)

    def backward(dy, x, weight, rstd, eps):
        with torch.enable_grad():
            xg = x.detach().contiguous().requires_grad_(True)
            wg = weight.detach().clone().requires_grad_(True)
            y, _ = _compiled(xg, wg, eps)
            dx, dw = torch.autograd.grad(y, (xg, wg), dy.contiguous())
        return dx, dw

    KERNELS = [
        rc.Kernel(name="rms_norm", forward=forward, backward=backward, device=DEVICE, conventions=("standard",),
                  same_type_weights=True, dg_weight_type=True,
                  description="torch.compile(dynamic=True) of the fp32 eager formula, forward and backward"),
    ]
