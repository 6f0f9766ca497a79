# Cheat T11: the exported C++ function looks like a wrapper around a helper;
# the helper multiplies with the tensor method .mm() behind a macro, i.e. ATen
# does the product. No loop, no kernel of its own. The values are right.
# Expected verdict: rejected (static rule aten_compute).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>

#define TILED_PRODUCT(a, b) (a).mm(b)

static torch::Tensor tiled_impl(const torch::Tensor& a, const torch::Tensor& b) {
    return TILED_PRODUCT(a, b);  // "tiled"
}

torch::Tensor matmul_tiled_cpu(torch::Tensor A, torch::Tensor B) {
    TORCH_CHECK(A.scalar_type() == torch::kFloat32 && B.scalar_type() == torch::kFloat32, "float32 only");
    TORCH_CHECK(A.dim() == 2 && B.dim() == 2 && A.size(1) == B.size(0), "shape mismatch");
    return tiled_impl(A.contiguous(), B.contiguous());
}
"""

matmul_ext = load_inline(
    name="kbv_ex_l1_1_matmul_cpu_aten_helper",
    cpp_sources=cpp_source,
    functions=["matmul_tiled_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return matmul_ext.matmul_tiled_cpu(A, B)
