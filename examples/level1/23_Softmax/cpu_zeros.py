# Cheat T10: the C++ kernel writes zeros. Every softmax value of a 65536-wide
# (or wider) row is below 1e-3, so zeros pass an elementwise
# allclose(atol=rtol=1e-3); only the relative-L2 error floor (here 100%)
# rejects it, on every distribution.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>

torch::Tensor softmax_zeros_cpu(torch::Tensor x) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    auto y = torch::empty(x.sizes(), x.options());
    float* out = y.data_ptr<float>();
    const int64_t n = y.numel();
    for (int64_t i = 0; i < n; ++i) out[i] = 0.0f;  // "every value is below the tolerance anyway"
    return y;
}
"""

softmax_ext = load_inline(
    name="kbv_ex_l1_23_softmax_cpu_zeros",
    cpp_sources=cpp_source,
    functions=["softmax_zeros_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return softmax_ext.softmax_zeros_cpu(x)
