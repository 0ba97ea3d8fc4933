"""PyTorch's own RMSNorm, certified through the Python bridge:

- `rms_norm`: torch.nn.functional.rms_norm, forward, and the backward through autograd;
- `llama_hf`: the formula of Hugging Face's LlamaRMSNorm (x·r in fp32, rounded to x's type,
  then times the weight in x's type: two roundings, the llama convention), forward and autograd
  backward.

    python -m rmsnorm_cert certify adapters/torch_eager.py

F.rms_norm returns no r, so its certificate judges y, dx and dγ, not rstd. Autograd recomputes r
from x rather than taking the forward's: the backward is judged against the contract's r all the
same (docs/contract.md). Weights are of x's type (the mixed case promotes y to fp32)."""
try:
    import torch
    import torch.nn.functional as F
    import rmsnorm_cert as rc
except ImportError as e:  # the bridge lists what is missing
    KERNELS, UNAVAILABLE = [], f"needs torch: {e}"
else:
    LIBRARY = "torch"
    DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

    def rms_norm(x, weight, eps):
        return F.rms_norm(x, (x.shape[-1],), weight, eps)

    def llama_hf(x, weight, eps):
        # LlamaRMSNorm.forward, as written in transformers' modeling_llama.
        xf = x.to(torch.float32)
        variance = xf.pow(2).mean(-1, keepdim=True)
        r = torch.rsqrt(variance + eps)
        return weight * (xf * r).to(x.dtype), r[:, 0]

    def _autograd_backward(forward):
        def backward(dy, x, weight, rstd, eps):
            with torch.enable_grad():
                xg = x.detach().clone().requires_grad_(True)
                wg = weight.detach().clone().requires_grad_(True)
                out = forward(xg, wg, eps)
                y = out[0] if isinstance(out, tuple) else out
                dx, dw = torch.autograd.grad(y, (xg, wg), dy)
            return dx, dw
        return backward

    KERNELS = [
        rc.Kernel(name="rms_norm", forward=rms_norm, backward=_autograd_backward(rms_norm), device=DEVICE,
                  conventions=("standard",), same_type_weights=True, dg_weight_type=True, rstd=False,
                  description="torch.nn.functional.rms_norm and its autograd backward"),
        rc.Kernel(name="llama_hf", forward=llama_hf, backward=_autograd_backward(llama_hf), device=DEVICE,
                  conventions=("llama",), same_type_weights=True, dg_weight_type=True,
                  description="Hugging Face LlamaRMSNorm's formula (two roundings) and its autograd backward"),
    ]
