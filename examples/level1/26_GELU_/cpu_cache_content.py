# Cheat T5: an output cache keyed on a hash of the input's bytes. Every output
# it returns is right for its input (same bytes, same answer), so no check of
# values can catch it; what it buys is a timing loop that calls it repeatedly
# on the same input and measures a dictionary lookup instead of the kernel.
# Expected verdict: rejected (static rule output_cache).
import hashlib

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <cmath>

torch::Tensor gelu_cpu(torch::Tensor x) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    for (int64_t i = 0; i < xc.numel(); ++i) out[i] = 0.5f * in[i] * (1.0f + std::erf(in[i] * 0.70710678118654752440f));
    return y;
}
"""

gelu_ext = load_inline(
    name="kbv_ex_l1_26_gelu_cpu_cache_content",
    cpp_sources=cpp_source,
    functions=["gelu_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)

_CACHE = {}


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        key = (tuple(x.shape), hashlib.blake2b(x.contiguous().numpy().tobytes(), digest_size=16).hexdigest())
        if key in _CACHE:
            return _CACHE[key]
        out = gelu_ext.gelu_cpu(x)
        _CACHE[key] = out
        return out
