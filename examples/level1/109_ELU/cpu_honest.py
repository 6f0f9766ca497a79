# Honest CPU solution: x for x > 0, expm1(x) otherwise (alpha 1).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <cmath>

torch::Tensor elu_cpu(torch::Tensor x) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "float32 only");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    const int64_t n = xc.numel();
    for (int64_t i = 0; i < n; ++i) {
        const float v = in[i];
        out[i] = v > 0.0f ? v : std::expm1(v);
    }
    return y;
}
"""

ext = load_inline(
    name="kbv_ex_l1_109_cpu_honest",
    cpp_sources=cpp_source,
    functions=["elu_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x):
        return ext.elu_cpu(x)
