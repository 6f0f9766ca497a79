# Failure: the C++ kernel raises on every call (a failed TORCH_CHECK).
# Expected verdict: runtime_error.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>

torch::Tensor relu_cpu(torch::Tensor x) {
    TORCH_CHECK(x.numel() < 0, "kbv example: this kernel always fails");
    auto y = torch::empty_like(x);
    float* out = y.data_ptr<float>();
    for (int64_t i = 0; i < y.numel(); ++i) out[i] = 0.0f;
    return y;
}
"""

relu_ext = load_inline(
    name="kbv_ex_l1_19_relu_cpu_raises",
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
