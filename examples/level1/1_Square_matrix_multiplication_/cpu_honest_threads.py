# Honest CPU solution that a naive checker would flag for its threads: the C++
# splits the rows of C over std::thread workers and joins every one of them
# before returning, so all the work is done when the call returns.
# Expected verdict: correct (static warning threads: threads that are joined).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <algorithm>
#include <thread>
#include <vector>

static void rows(const float* pa, const float* pb, float* pc, int64_t K, int64_t N, int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i) {
        float* ci = pc + i * N;
        for (int64_t j = 0; j < N; ++j) ci[j] = 0.0f;
        for (int64_t k = 0; k < K; ++k) {
            const float aik = pa[i * K + k];
            const float* bk = pb + k * N;
            for (int64_t j = 0; j < N; ++j) ci[j] += aik * bk[j];
        }
    }
}

torch::Tensor matmul_threads_cpu(torch::Tensor A, torch::Tensor B) {
    TORCH_CHECK(A.scalar_type() == torch::kFloat32 && B.scalar_type() == torch::kFloat32, "float32 only");
    TORCH_CHECK(A.dim() == 2 && B.dim() == 2 && A.size(1) == B.size(0), "shape mismatch");
    auto a = A.contiguous();
    auto b = B.contiguous();
    const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
    auto C = torch::empty({M, N}, a.options());
    const int64_t workers = std::max<int64_t>(1, std::min<int64_t>(4, M));
    std::vector<std::thread> pool;
    for (int64_t w = 0; w < workers; ++w)
        pool.emplace_back(rows, a.data_ptr<float>(), b.data_ptr<float>(), C.data_ptr<float>(), K, N,
                          M * w / workers, M * (w + 1) / workers);
    for (auto& t : pool) t.join();  // every row is written before we return
    return C;
}
"""

matmul_ext = load_inline(
    name="kbv_ex_l1_1_matmul_cpu_honest_threads",
    cpp_sources=cpp_source,
    functions=["matmul_threads_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return matmul_ext.matmul_threads_cpu(A, B)
