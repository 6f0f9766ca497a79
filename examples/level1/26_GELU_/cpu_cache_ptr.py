# Cheat T5: an output cache keyed on the input's address. When a call gets an
# input at the address of an earlier one (a timing loop that reuses its input,
# an allocator that hands back the same block), it returns the earlier output
# without computing. Whether kbv's fresh inputs land at an old address is up to
# the allocator, so the values alone cannot be relied on to expose it.
# Expected verdict: rejected (static rule output_cache).
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
    name="kbv_ex_l1_26_gelu_cpu_cache_ptr",
    cpp_sources=cpp_source,
    functions=["gelu_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self._last_ptr = None
        self._last_out = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.data_ptr() == self._last_ptr:
            return self._last_out
        self._last_ptr = x.data_ptr()
        self._last_out = gelu_ext.gelu_cpu(x)
        return self._last_out
