# Honest CPU solution: i-k-j matrix product with fp32 accumulation; no tiling, so a tall A times a
# small square B need no special case.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
// C = A @ B for 2-D float32 A (M, K) and B (K, N): i-k-j loops, fp32 accumulation.
static void matmul_into(const float* A, const float* B, float* C, int64_t M, int64_t K, int64_t N) {
    for (int64_t i = 0; i < M * N; ++i) C[i] = 0.0f;
    for (int64_t m = 0; m < M; ++m) {
        float* c = C + m * N;
        for (int64_t k = 0; k < K; ++k) {
            const float a = A[m * K + k];
            const float* b = B + k * N;
            for (int64_t n = 0; n < N; ++n) c[n] += a * b[n];
        }
    }
}

torch::Tensor matmul_cpu(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.scalar_type() == torch::kFloat32 && b.scalar_type() == torch::kFloat32, "float32 only");
    TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && a.size(1) == b.size(0), "shapes");
    auto A = a.contiguous(), B = b.contiguous();
    auto C = torch::empty({A.size(0), B.size(1)}, A.options());
    matmul_into(A.data_ptr<float>(), B.data_ptr<float>(), C.data_ptr<float>(), A.size(0), A.size(1), B.size(1));
    return C;
}
"""

ext = load_inline(
    name="kbv_ex_l1_103_cpu_honest",
    cpp_sources=cpp_source,
    functions=["matmul_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, A, B):
        return ext.matmul_cpu(A, B)
