# Cheat T12: computes GELU in float32 but stores the result in a float16 tensor
# (half the bytes to write) and returns it as is. The reference returns
# float32; a checker that casts both sides before comparing would pass it.
# Expected verdict: wrong_output (dtype float16 where the reference gives float32).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <cmath>

torch::Tensor gelu_half_cpu(torch::Tensor x) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    auto xc = x.contiguous();
    auto y = torch::empty(xc.sizes(), xc.options().dtype(torch::kHalf));
    const float* in = xc.data_ptr<float>();
    at::Half* out = y.data_ptr<at::Half>();
    const int64_t n = xc.numel();
    for (int64_t i = 0; i < n; ++i) {
        const float v = in[i];
        out[i] = at::Half(0.5f * v * (1.0f + std::erf(v * 0.70710678118654752440f)));
    }
    return y;
}
"""

gelu_ext = load_inline(
    name="kbv_ex_l1_26_gelu_cpu_half_output",
    cpp_sources=cpp_source,
    functions=["gelu_half_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return gelu_ext.gelu_half_cpu(x)
