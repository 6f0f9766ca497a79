# Honest CPU solution: C = A^T B read straight from A's (k, m) storage: for each k, C[m, :] +=
# A[k, m] * B[k, :].
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
torch::Tensor matmul_at_b_cpu(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.scalar_type() == torch::kFloat32 && b.scalar_type() == torch::kFloat32, "float32 only");
    TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && a.size(0) == b.size(0), "shapes");
    auto A = a.contiguous(), B = b.contiguous();
    const int64_t K = A.size(0), M = A.size(1), N = B.size(1);
    auto C = torch::zeros({M, N}, A.options());
    const float* pa = A.data_ptr<float>();
    const float* pb = B.data_ptr<float>();
    float* pc = C.data_ptr<float>();
    for (int64_t k = 0; k < K; ++k)
        for (int64_t m = 0; m < M; ++m) {
            const float av = pa[k * M + m];
            float* c = pc + m * N;
            const float* brow = pb + k * N;
            for (int64_t n = 0; n < N; ++n) c[n] += av * brow[n];
        }
    return C;
}
"""

ext = load_inline(
    name="kbv_ex_l1_104_cpu_honest",
    cpp_sources=cpp_source,
    functions=["matmul_at_b_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, A, B):
        return ext.matmul_at_b_cpu(A, B)
