# Honest CPU solution for every precision mode: an i-k-j matmul templated on the element type
# (float32, bfloat16, float16 through AT_DISPATCH), accumulating in float32 and rounding once to
# the output type, as cuBLAS and ATen do. Correct under --precision fp32, bf16 and fp16.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <ATen/Dispatch.h>
#include <vector>

template <typename scalar_t>
void matmul_kernel(const scalar_t* a, const scalar_t* b, scalar_t* c, int64_t M, int64_t K, int64_t N) {
    std::vector<float> row(N);
    for (int64_t i = 0; i < M; ++i) {
        std::fill(row.begin(), row.end(), 0.0f);
        for (int64_t k = 0; k < K; ++k) {
            const float aik = static_cast<float>(a[i * K + k]);
            const scalar_t* bk = b + k * N;
            for (int64_t j = 0; j < N; ++j) row[j] += aik * static_cast<float>(bk[j]);
        }
        for (int64_t j = 0; j < N; ++j) c[i * N + j] = static_cast<scalar_t>(row[j]);
    }
}

torch::Tensor matmul_any(torch::Tensor A, torch::Tensor B) {
    TORCH_CHECK(A.device().is_cpu() && B.device().is_cpu(), "A and B must be CPU tensors");
    TORCH_CHECK(A.scalar_type() == B.scalar_type(), "A and B must have the same dtype");
    TORCH_CHECK(A.dim() == 2 && B.dim() == 2 && A.size(1) == B.size(0), "shape mismatch");
    auto a = A.contiguous();
    auto b = B.contiguous();
    const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
    auto C = torch::empty({M, N}, a.options());
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, a.scalar_type(), "matmul_any", [&] {
        matmul_kernel<scalar_t>(a.data_ptr<scalar_t>(), b.data_ptr<scalar_t>(), C.data_ptr<scalar_t>(), M, K, N);
    });
    return C;
}
"""

matmul_ext = load_inline(
    name="kbv_ex_l1_1_matmul_cpu_any_dtype",
    cpp_sources=cpp_source,
    functions=["matmul_any"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return matmul_ext.matmul_any(A, B)
