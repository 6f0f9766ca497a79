# Cheat T9: identity "ReLU". The C++ kernel copies its input: correct on
# non-negative inputs (torch.rand draws [0, 1)), wrong on the negated
# distribution D4.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>

torch::Tensor relu_identity_cpu(torch::Tensor x) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    const int64_t n = xc.numel();
    for (int64_t i = 0; i < n; ++i) out[i] = in[i];  // "inputs are never negative"
    return y;
}
"""

relu_ext = load_inline(
    name="kbv_ex_l1_19_relu_cpu_identity",
    cpp_sources=cpp_source,
    functions=["relu_identity_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu_ext.relu_identity_cpu(x)
