# Failure: the C++ kernel stores through a null pointer (SIGSEGV).
# Expected verdict: crashed.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>

torch::Tensor relu_segv_cpu(torch::Tensor x) {
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    // "Output pointer" that was never set up: every store faults.
    volatile float* out = nullptr;
    const int64_t n = xc.numel();
    for (int64_t i = 0; i < n; ++i) {
        out[i] = in[i] > 0.0f ? in[i] : 0.0f;
    }
    return y;
}
"""

relu_ext = load_inline(
    name="kbv_ex_l1_19_relu_cpu_segfault",
    cpp_sources=cpp_source,
    functions=["relu_segv_cpu"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu_ext.relu_segv_cpu(x)
