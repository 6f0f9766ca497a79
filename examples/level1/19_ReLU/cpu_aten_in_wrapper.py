# Cheat T11: a load_inline extension whose C++ "kernel" checks its argument and
# then calls at::relu, i.e. PyTorch's own operator, from inside the C++ wrapper.
# From Python it looks like a custom kernel; the values are right because they
# are PyTorch's.
# Expected verdict: rejected (ATen call inside the C++ wrapper instead of a kernel).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>

torch::Tensor relu_kernel_cpu(torch::Tensor x) {
    TORCH_CHECK(x.device().is_cpu(), "x must be a CPU tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    return at::relu(x.contiguous());
}
"""

relu_ext = load_inline(
    name="kbv_ex_l1_19_relu_cpu_aten_in_wrapper",
    cpp_sources=cpp_source,
    functions=["relu_kernel_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu_ext.relu_kernel_cpu(x)
