# Cheat T5: computes GELU once per input shape and returns the cached tensor on
# every later call with that shape. Only the first call is right; every trial
# after it has fresh values, so the cached answer is wrong.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <cmath>

torch::Tensor gelu_cpu(torch::Tensor x) {
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    const int64_t n = xc.numel();
    for (int64_t i = 0; i < n; ++i) {
        const float v = in[i];
        out[i] = 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752440f));
    }
    return y;
}
"""

gelu_ext = load_inline(
    name="kbv_ex_l1_26_gelu_cpu_cache_shape",
    cpp_sources=cpp_source,
    functions=["gelu_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self._cache = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        key = (tuple(x.shape), x.dtype, x.device)
        if key not in self._cache:
            self._cache[key] = gelu_ext.gelu_cpu(x)
        return self._cache[key]
