# Honest CPU solution: one i-k-j matrix product per batch entry, fp32 accumulation.
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

torch::Tensor bmm_cpu(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.scalar_type() == torch::kFloat32 && b.scalar_type() == torch::kFloat32, "float32 only");
    TORCH_CHECK(a.dim() == 3 && b.dim() == 3 && a.size(0) == b.size(0) && a.size(2) == b.size(1), "shapes");
    auto A = a.contiguous(), B = b.contiguous();
    const int64_t batch = A.size(0), M = A.size(1), K = A.size(2), N = B.size(2);
    auto C = torch::empty({batch, M, N}, A.options());
    for (int64_t i = 0; i < batch; ++i)
        matmul_into(A.data_ptr<float>() + i * M * K, B.data_ptr<float>() + i * K * N,
                    C.data_ptr<float>() + i * M * N, M, K, N);
    return C;
}
"""

ext = load_inline(
    name="kbv_ex_l1_101_cpu_honest",
    cpp_sources=cpp_source,
    functions=["bmm_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, A, B):
        return ext.bmm_cpu(A, B)
