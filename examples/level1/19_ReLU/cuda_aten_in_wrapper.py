# Cheat T11 at run time (docs/MEMORY.md, "Kernels"): the CUDA extension's C++ wrapper returns
# at::relu(x), so every kernel of the call is ATen's. Under --policy lenient the static rule
# (aten_compute) only warns; the kernel audit sees that no kernel was launched from the
# candidate's own extension and rejects it (no_custom_compute).
# Expected verdict: rejected.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>

torch::Tensor relu_fast(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "x must be a float32 CUDA tensor");
    return at::relu(x.contiguous());
}
"""

relu_ext = load_inline(
    name="kbv_ex_l1_19_relu_cuda_aten_in_wrapper",
    cpp_sources="torch::Tensor relu_fast(torch::Tensor x);",
    cuda_sources=cuda_source,
    functions=["relu_fast"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu_ext.relu_fast(x)
