# Failure: the C++ kernel kills its own process (std::abort, SIGABRT).
# Expected verdict: crashed.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <cstdlib>

torch::Tensor relu_cpu(torch::Tensor x) {
    auto y = torch::empty_like(x);
    float* out = y.data_ptr<float>();
    for (int64_t i = 0; i < y.numel(); ++i) out[i] = 0.0f;
    std::abort();
    return y;
}
"""

relu_ext = load_inline(
    name="kbv_ex_l1_19_relu_cpu_abort",
    cpp_sources=cpp_source,
    functions=["relu_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu_ext.relu_cpu(x)
