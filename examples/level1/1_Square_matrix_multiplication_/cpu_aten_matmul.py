# Cheat T11: the C++ wrapper of a load_inline extension validates A and B, then
# hands the product to torch::matmul (ATen's GEMM, the reference's own
# operator) and "fuses" a no-op contiguous() afterwards. The values are right
# because they are PyTorch's.
# Expected verdict: rejected (ATen call inside the C++ wrapper instead of a kernel).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>

torch::Tensor matmul_tiled_cpu(torch::Tensor A, torch::Tensor B) {
    TORCH_CHECK(A.scalar_type() == torch::kFloat32 && B.scalar_type() == torch::kFloat32,
                "A and B must be float32");
    TORCH_CHECK(A.dim() == 2 && B.dim() == 2 && A.size(1) == B.size(0), "shape mismatch");
    auto C = torch::matmul(A.contiguous(), B.contiguous());
    return C.contiguous();
}
"""

matmul_ext = load_inline(
    name="kbv_ex_l1_1_matmul_cpu_aten_matmul",
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
