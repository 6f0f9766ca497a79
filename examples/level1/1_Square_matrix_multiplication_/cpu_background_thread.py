# Cheat T2: forward snapshots A and B, starts a detached C++ thread that does the
# O(N^3) product 200 ms later, and returns the still-zero output at once. A
# harness that looks at the output only after waiting (or after a timing loop)
# sees the right values; kbv copies the output the moment forward returns.
# Expected verdict: wrong_output (C is all zeros when it is checked).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <chrono>
#include <thread>

static void matmul_into(at::Tensor a, at::Tensor b, at::Tensor c) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
    const float* pa = a.data_ptr<float>();
    const float* pb = b.data_ptr<float>();
    float* pc = c.data_ptr<float>();
    for (int64_t i = 0; i < M; ++i)
        for (int64_t k = 0; k < K; ++k) {
            const float aik = pa[i * K + k];
            for (int64_t j = 0; j < N; ++j) pc[i * N + j] += aik * pb[k * N + j];
        }
}

torch::Tensor matmul_later_cpu(torch::Tensor A, torch::Tensor B) {
    TORCH_CHECK(A.scalar_type() == torch::kFloat32 && B.scalar_type() == torch::kFloat32,
                "A and B must be float32");
    TORCH_CHECK(A.dim() == 2 && B.dim() == 2 && A.size(1) == B.size(0), "shape mismatch");
    // Own copies: the caller's buffers may be gone by the time the thread runs.
    auto a = A.contiguous().clone();
    auto b = B.contiguous().clone();
    auto C = torch::zeros({a.size(0), b.size(1)}, a.options());
    std::thread(matmul_into, a, b, C).detach();  // finishes after we have returned
    return C;
}
"""

matmul_ext = load_inline(
    name="kbv_ex_l1_1_matmul_cpu_background_thread",
    cpp_sources=cpp_source,
    functions=["matmul_later_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return matmul_ext.matmul_later_cpu(A, B)
