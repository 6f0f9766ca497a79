# Failure: the C++ source does not compile (missing semicolon and an
# undeclared identifier). Expected verdict: compile_error.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>

torch::Tensor relu_cpu(torch::Tensor x) {
    auto y = torch::empty_like(x)
    const float* in = x.data_ptr<float>();
    float* out = y.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) {
        out[i] = in[i] > 0.0f ? in[i] : 0.0f;
    }
    return yy;
}
"""

relu_ext = load_inline(
    name="kbv_ex_l1_19_relu_cpu_compile_error",
    cpp_sources=cpp_source,
    functions=["relu_cpu"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu_ext.relu_cpu(x)
