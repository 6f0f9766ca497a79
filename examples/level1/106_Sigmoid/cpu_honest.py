# Honest CPU solution: 1 / (1 + exp(-x)) elementwise in C++.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <cmath>

torch::Tensor sigmoid_cpu(torch::Tensor x) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "float32 only");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    const int64_t n = xc.numel();
    for (int64_t i = 0; i < n; ++i) {
        const float v = in[i];
        out[i] = 1.0f / (1.0f + std::exp(-v));
    }
    return y;
}
"""

ext = load_inline(
    name="kbv_ex_l1_106_cpu_honest",
    cpp_sources=cpp_source,
    functions=["sigmoid_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x):
        return ext.sigmoid_cpu(x)
